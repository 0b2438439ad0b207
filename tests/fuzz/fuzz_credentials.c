/*
 * fuzz_credentials.c - libFuzzer target: authentication input as the
 * server reads it (web/credentials.c).  The input's first byte picks the
 * parser, the rest is the bytes, copied into a buffer of exactly their
 * size (and NUL-terminated where the parser expects a string): an
 * Authorization header value, with the tenant it then names beside
 * X-Scope-OrgID values; or a token-file line.  A success must hold what
 * the contracts promise (a secret of 1..WEB_SECRET_MAX bytes without
 * control bytes, a valid tenant, known scopes); a failure a message.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "web/web_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void header(const char *s)
{
	static const struct web__principal bound = { "team-a", WEB_SCOPE_QUERY, "a" };
	static const struct web__principal all = { WEB_ALL_TENANTS, WEB_SCOPE_ALL, "all" };
	char tenant[WEB_TENANT_MAX + 1];
	struct web__cred c;
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	rc = web__cred_parse(s, &c, &msg);
	if (rc) {
		assert(rc == ERR_UNAUTHENTICATED && msg.text[0]);
		return;
	}
	assert(c.secret_len >= 1 && c.secret_len <= WEB_SECRET_MAX);
	assert(strlen(c.secret) == c.secret_len && strlen(c.user) <= WEB_TENANT_MAX);
	for (size_t i = 0; i < c.secret_len; i++)
		assert((unsigned char)c.secret[i] >= 0x20 && c.secret[i] != 0x7f);
	for (int k = 0; k < 2; k++) {
		const struct web__principal *p = k ? &all : &bound;

		err_clear(&msg);
		rc = web__tenant_for(p, c.user, NULL, tenant, &msg);
		assert(rc == 0 || rc == ERR_INVALID || rc == ERR_PERMISSION);
		if (rc == 0)
			assert(web__tenant_check(tenant, NULL) == 0 &&
			       (k || strcmp(tenant, "team-a") == 0));
		else
			assert(msg.text[0]);
		/* The header's value as an X-Scope-OrgID too. */
		err_clear(&msg);
		rc = web__tenant_for(p, c.user, s, tenant, &msg);
		assert(rc == 0 || rc == ERR_INVALID || rc == ERR_PERMISSION);
		assert(rc || strcmp(tenant, s) == 0);
	}
}

static void token_line(const char *p, size_t n)
{
	struct web__token_line t;
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	rc = web__token_line_parse(p, n, &t, &msg);
	assert(rc == 0 || rc == 1 || (rc == ERR_INVALID && msg.text[0]));
	if (rc == 1) {
		assert(t.scopes && !(t.scopes & ~WEB_SCOPE_ALL));
		assert(strcmp(t.tenant, WEB_ALL_TENANTS) == 0 || web__tenant_check(t.tenant, NULL) == 0);
		assert(strlen(t.name) <= WEB_TOKEN_NAME_MAX);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1 || size > 4096)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	if (data[0] & 1) {
		token_line(s, size - 1);
	} else {
		s[size - 1] = '\0';
		header(s);
	}
	free(s);
	return 0;
}
