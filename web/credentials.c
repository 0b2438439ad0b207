/*
 * credentials.c - the parsers of authentication input, pure functions over
 * untrusted bytes (unit tested and fuzzed without a socket): the
 * Authorization header (Bearer, and Basic with the tenant as user), one
 * line of the token file, scope lists, and the rule that picks the tenant
 * a request acts for.  docs/security.md describes the formats.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/sha256.h"
#include "web_int.h"

static const char *const scope_names[] = { "ingest", "query", "upload", "admin" };
#define N_SCOPES (sizeof(scope_names) / sizeof(scope_names[0]))

int web__scopes_parse(const char *s, size_t len, unsigned *out, struct err_msg *msg)
{
	const char *p = s, *end = s + len;
	unsigned bits = 0;

	if (len == 0)
		return err_set(msg, ERR_INVALID, "empty scope list (use ingest, query, upload, admin)");
	while (p <= end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t n = (size_t)((comma ? comma : end) - p);
		size_t i;

		for (i = 0; i < N_SCOPES; i++)
			if (strlen(scope_names[i]) == n && memcmp(scope_names[i], p, n) == 0)
				break;
		if (i == N_SCOPES)
			return err_set(msg, ERR_INVALID,
				       "unknown scope \"%.*s\" (use ingest, query, upload, admin)",
				       (int)(n > 32 ? 32 : n), p);
		bits |= 1u << i;
		if (!comma)
			break;
		p = comma + 1;
	}
	*out = bits;
	return 0;
}

void web__scopes_str(unsigned scopes, char *out, size_t len)
{
	size_t at = 0;

	assert(len > 0);
	out[0] = '\0';
	for (size_t i = 0; i < N_SCOPES; i++) {
		int n;

		if (!(scopes & (1u << i)))
			continue;
		n = snprintf(out + at, len - at, "%s%s", at ? "," : "", scope_names[i]);
		if (n < 0 || (size_t)n >= len - at)
			return;
		at += (size_t)n;
	}
}

/* ---- the Authorization header ---------------------------------------------- */

/* RFC 9110 §11.2 token68: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/", then "=" padding. */
static int token68_ok(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && (isalnum((unsigned char)s[i]) || strchr("-._~+/", s[i])))
		i++;
	if (i == 0)
		return 0;
	while (i < n && s[i] == '=')
		i++;
	return i == n;
}

/* Control characters never belong to a user name or a secret. */
static int printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

static int parse_basic(const char *p, size_t n, struct web__cred *c, struct err_msg *msg)
{
	unsigned char raw[WEB_TENANT_MAX + 1 + WEB_SECRET_MAX];
	const unsigned char *colon;
	size_t k, ulen, slen;

	if (base64_decode(p, n, BASE64_CANON, raw, sizeof(raw), &k))
		return err_set(msg, ERR_UNAUTHENTICATED,
			       "Authorization: Basic credentials are not base64 of at most %zu bytes",
			       sizeof(raw));
	colon = memchr(raw, ':', k);
	if (!colon)
		return err_set(msg, ERR_UNAUTHENTICATED,
			       "Authorization: Basic credentials need user:password "
			       "(the tenant and the token)");
	ulen = (size_t)(colon - raw);
	slen = k - ulen - 1;
	if (ulen > WEB_TENANT_MAX || !printable((const char *)raw, ulen))
		return err_set(msg, ERR_UNAUTHENTICATED,
			       "Authorization: the Basic user must be a tenant id of at most %d bytes",
			       WEB_TENANT_MAX);
	if (slen == 0 || slen > WEB_SECRET_MAX || !printable((const char *)colon + 1, slen))
		return err_set(msg, ERR_UNAUTHENTICATED,
			       "Authorization: the Basic password must be a token of 1 to %d printable bytes",
			       WEB_SECRET_MAX);
	c->basic = 1;
	memcpy(c->user, raw, ulen);
	c->user[ulen] = '\0';
	memcpy(c->secret, colon + 1, slen);
	c->secret[slen] = '\0';
	c->secret_len = slen;
	return 0;
}

int web__cred_parse(const char *value, struct web__cred *out, struct err_msg *msg)
{
	struct web__cred c;
	const char *p = value, *cred;
	size_t n, slen;

	memset(&c, 0, sizeof(c));
	while (*p == ' ' || *p == '\t')
		p++;
	n = strcspn(p, " \t");
	cred = p + n;
	while (*cred == ' ' || *cred == '\t')
		cred++;
	slen = strlen(cred);
	while (slen > 0 && (cred[slen - 1] == ' ' || cred[slen - 1] == '\t'))
		slen--;
	if (slen == 0)
		return err_set(msg, ERR_UNAUTHENTICATED,
			       "Authorization: expected \"Bearer <token>\" or \"Basic <base64 of "
			       "tenant:token>\"");
	if (n == 6 && strncasecmp(p, "Bearer", 6) == 0) {
		if (slen > WEB_SECRET_MAX || !token68_ok(cred, slen))
			return err_set(msg, ERR_UNAUTHENTICATED,
				       "Authorization: a Bearer token is 1 to %d characters of "
				       "A-Z a-z 0-9 - . _ ~ + / (then = padding)", WEB_SECRET_MAX);
		memcpy(c.secret, cred, slen);
		c.secret[slen] = '\0';
		c.secret_len = slen;
	} else if (n == 5 && strncasecmp(p, "Basic", 5) == 0) {
		int rc = parse_basic(cred, slen, &c, msg);

		if (rc)
			return rc;
	} else {
		return err_set(msg, ERR_UNAUTHENTICATED,
			       "Authorization: scheme \"%.*s\" is not supported (use Bearer or Basic)",
			       (int)(n > 32 ? 32 : n), p);
	}
	*out = c;
	return 0;
}

/* ---- the token file -------------------------------------------------------- */

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n > WEB_TOKEN_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._@-", s[i]))
			return 0;
	return 1;
}

enum { F_SHA256 = 1, F_TENANT = 2, F_SCOPES = 4, F_NAME = 8 };

/* One key=value field of a token line into t; `seen` has a bit per key. */
static int token_field(const char *k, size_t kn, const char *v, size_t vn, unsigned *seen,
		       struct web__token_line *t, struct err_msg *msg)
{
	static const struct {
		const char *key;
		unsigned bit;
	} keys[] = { { "sha256", F_SHA256 }, { "tenant", F_TENANT }, { "scopes", F_SCOPES },
		     { "name", F_NAME } };
	unsigned bit = 0;
	char tenant[WEB_TENANT_MAX + 1];
	struct err_msg why;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i].key) == kn && memcmp(keys[i].key, k, kn) == 0)
			bit = keys[i].bit;
	if (!bit)
		return err_set(msg, ERR_INVALID,
			       "unknown field \"%.*s\" (fields: sha256, tenant, scopes, name)",
			       (int)(kn > 32 ? 32 : kn), k);
	if (*seen & bit)
		return err_set(msg, ERR_INVALID, "field %.*s given twice", (int)kn, k);
	*seen |= bit;
	switch (bit) {
	case F_SHA256:
		if (sha256_parse_hex(v, vn, t->sha256))
			return err_set(msg, ERR_INVALID,
				       "sha256= must be the 64 hex digits of the token's SHA-256 "
				       "(unhex token hash prints them)");
		return 0;
	case F_TENANT:
		if (vn == 1 && v[0] == '*') {
			snprintf(t->tenant, sizeof(t->tenant), "%s", WEB_ALL_TENANTS);
			return 0;
		}
		if (vn > WEB_TENANT_MAX)
			return err_set(msg, ERR_INVALID, "tenant= longer than %d bytes", WEB_TENANT_MAX);
		memcpy(tenant, v, vn);
		tenant[vn] = '\0';
		err_clear(&why);
		if (web__tenant_check(tenant, &why))
			return err_set(msg, ERR_INVALID, "tenant=%s: %s", tenant, why.text);
		memcpy(t->tenant, tenant, vn + 1);
		return 0;
	case F_SCOPES:
		return web__scopes_parse(v, vn, &t->scopes, msg);
	default:
		if (!name_ok(v, vn))
			return err_set(msg, ERR_INVALID,
				       "name= must be 1 to %d characters of A-Z a-z 0-9 . _ @ -",
				       WEB_TOKEN_NAME_MAX);
		memcpy(t->name, v, vn);
		t->name[vn] = '\0';
		return 0;
	}
}

int web__token_line_parse(const char *line, size_t len, struct web__token_line *out,
			  struct err_msg *msg)
{
	struct web__token_line t;
	const char *p = line, *end = line + len;
	unsigned seen = 0;

	memset(&t, 0, sizeof(t));
	if (len > WEB_TOKEN_LINE_MAX)
		return err_set(msg, ERR_INVALID, "line longer than %d bytes", WEB_TOKEN_LINE_MAX);
	if (memchr(line, '\0', len))
		return err_set(msg, ERR_INVALID, "NUL byte in the line");
	while (p < end && is_blank(*p))
		p++;
	if (p == end || *p == '#')
		return 0;
	while (p < end) {
		const char *f = p, *eq;
		size_t n;
		int rc;

		while (p < end && !is_blank(*p))
			p++;
		n = (size_t)(p - f);
		eq = memchr(f, '=', n);
		if (!eq || eq == f || eq == f + n - 1)
			return err_set(msg, ERR_INVALID,
				       "expected key=value fields (sha256=<hex> tenant=<id|*> "
				       "scopes=<list> [name=<label>]); tokens are stored hashed: "
				       "`unhex token hash` prints a line");
		rc = token_field(f, (size_t)(eq - f), eq + 1, n - (size_t)(eq - f) - 1, &seen, &t,
				 msg);
		if (rc)
			return rc;
		while (p < end && is_blank(*p))
			p++;
	}
	if ((seen & (F_SHA256 | F_TENANT | F_SCOPES)) != (F_SHA256 | F_TENANT | F_SCOPES))
		return err_set(msg, ERR_INVALID, "missing field %s",
			       !(seen & F_SHA256) ? "sha256" : !(seen & F_TENANT) ? "tenant"
											: "scopes");
	*out = t;
	return 1;
}

/* ---- which tenant a request acts for --------------------------------------- */

int web__tenant_for(const struct web__principal *p, const char *basic_user, const char *header,
		    char out[WEB_TENANT_MAX + 1], struct err_msg *msg)
{
	int all = strcmp(p->tenant, WEB_ALL_TENANTS) == 0;
	const char *want = header;

	if (!want && basic_user && basic_user[0])
		want = basic_user;
	if (!want) {
		snprintf(out, WEB_TENANT_MAX + 1, "%s", all ? WEB_DEFAULT_TENANT : p->tenant);
		return 0;
	}
	if (web__tenant_check(want, msg)) {
		if (want != header)
			err_reset(msg, ERR_INVALID,
				  "the Basic auth user names the tenant, and \"%.64s\" is not a valid "
				  "tenant id", want);
		return ERR_INVALID;
	}
	if (!all && strcmp(want, p->tenant) != 0)
		return err_set(msg, ERR_PERMISSION,
			       "token \"%s\" is bound to tenant \"%s\"; %s \"%s\" is not allowed",
			       p->name, p->tenant, want == header ? "X-Scope-OrgID" : "Basic user",
			       want);
	snprintf(out, WEB_TENANT_MAX + 1, "%s", want);
	return 0;
}

/* ---- the listen address of an open server ---------------------------------- */

int web__listen_is_loopback(const char *listen)
{
	const char *colon = strrchr(listen, ':');
	size_t n = colon ? (size_t)(colon - listen) : 0;
	char host[64];
	struct in_addr a4;
	struct in6_addr a6;

	if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') {
		listen++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(host))
		return 0;
	memcpy(host, listen, n);
	host[n] = '\0';
	if (strcasecmp(host, "localhost") == 0)
		return 1;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return 0;
}

/* ---- a line of the token file, for `unhex token` ----------------------------- */

int web_token_line(const char *token, size_t len, const char *tenant, const char *scopes,
		   const char *name, struct buf *out, struct err_msg *msg)
{
	char line[WEB_TOKEN_LINE_MAX + 1], hex[SHA256_HEX_LEN + 1];
	struct web__token_line t;
	uint8_t d[SHA256_LEN];
	int n, rc;

	if (len == 0 || len > WEB_SECRET_MAX || !printable(token, len) || strchr(token, ':') ||
	    memchr(token, ' ', len))
		return err_set(msg, ERR_INVALID,
			       "a token is 1 to %d printable bytes without blanks or ':'",
			       WEB_SECRET_MAX);
	rc = sha256_buf(token, len, d);
	if (rc)
		return err_set(msg, rc, "out of memory");
	sha256_hex(d, hex);
	n = snprintf(line, sizeof(line), "sha256=%s tenant=%s scopes=%s%s%s", hex, tenant, scopes,
		     name ? " name=" : "", name ? name : "");
	if (n < 0 || (size_t)n >= sizeof(line))
		return err_set(msg, ERR_INVALID, "tenant, scopes or name too long");
	/* The line must read back as what was asked for: one parser decides. */
	rc = web__token_line_parse(line, (size_t)n, &t, msg);
	if (rc <= 0)
		return rc < 0 ? rc : err_set(msg, ERR_INVALID, "tenant or scopes missing");
	rc = buf_append(out, line, (size_t)n);
	return rc ? rc : buf_putc(out, '\n');
}
