/*
 * params.c - parsing of untrusted request parameters: query strings, tenant
 * ids and media types (times: base/timeparse.h).
 */
#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "base/hex.h"
#include "web/web_int.h"


/* Decodes the form-urlencoded value [p, end) into out. */
static int url_decode(const char *p, const char *end, char *out, size_t out_len)
{
	size_t n = 0;

	while (p < end) {
		int c = (unsigned char)*p;

		if (c == '+') {
			c = ' ';
			p++;
		} else if (c == '%') {
			int hi, lo;

			if (end - p < 3)
				return ERR_INVALID;
			hi = hex_digit((unsigned char)p[1]);
			lo = hex_digit((unsigned char)p[2]);
			if (hi < 0 || lo < 0)
				return ERR_INVALID;
			c = hi * 16 + lo;
			if (c == 0)
				return ERR_INVALID;
			p += 3;
		} else {
			p++;
		}
		if (n + 1 >= out_len)
			return ERR_TOO_LARGE;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

int web__query_param(const char *qs, const char *key, char *out, size_t out_len)
{
	size_t klen = strlen(key);
	const char *p = qs;

	if (!qs || out_len == 0)
		return ERR_NOT_FOUND;
	while (*p) {
		const char *amp = strchr(p, '&');
		const char *end = amp ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		const char *kend = eq ? eq : end;

		if ((size_t)(kend - p) == klen && memcmp(p, key, klen) == 0) {
			if (!eq) {
				out[0] = '\0';
				return 0;
			}
			return url_decode(eq + 1, end, out, out_len);
		}
		if (!amp)
			break;
		p = amp + 1;
	}
	return ERR_NOT_FOUND;
}

int web__tenant_check(const char *s, struct err_msg *msg)
{
	static const char extra[] = "!_.*'()-";
	size_t n = strlen(s);

	if (n == 0)
		return err_set(msg, ERR_INVALID, "X-Scope-OrgID: empty tenant id");
	if (n > WEB_TENANT_MAX)
		return err_set(msg, ERR_INVALID, "X-Scope-OrgID: tenant id longer than %d bytes",
			       WEB_TENANT_MAX);
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return err_set(msg, ERR_INVALID, "X-Scope-OrgID: tenant id \"%s\" is not allowed", s);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && !strchr(extra, c))
			return err_set(msg, ERR_INVALID,
				       "X-Scope-OrgID: invalid character 0x%02x at %zu "
				       "(allowed: A-Z a-z 0-9 and %s)", c, i, extra);
	}
	return 0;
}

int web__media_type_is(const char *ct, const char *type)
{
	size_t n = strlen(type);

	if (!ct)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, type, n) != 0)
		return 0;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}
