/*
 * test_credentials.c - the parsers of authentication input
 * (web/credentials.c): Authorization headers (Bearer, Basic with the
 * tenant as user; schemes in any case; bad base64, padding, lengths,
 * control bytes, missing parts, other schemes), token-file lines (fields
 * in any order, comments, every way a line is wrong, a plain token), scope
 * lists, the rule that picks a request's tenant, loopback listen
 * addresses, and the lines `unhex token` prints reading back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/sha256.h"
#include "web/web_int.h"

#define HASH "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" /* "test" */

static void test_bearer(void **state)
{
	struct web__cred c;
	struct err_msg msg;
	char big[WEB_SECRET_MAX + 16];

	(void)state;
	err_clear(&msg);
	assert_int_equal(web__cred_parse("Bearer uhx_abc-DEF.ghi~+/==", &c, &msg), 0);
	assert_false(c.basic);
	assert_string_equal(c.secret, "uhx_abc-DEF.ghi~+/==");
	assert_int_equal(c.secret_len, strlen("uhx_abc-DEF.ghi~+/=="));
	assert_string_equal(c.user, "");
	assert_int_equal(web__cred_parse("  bEaReR \t tok  ", &c, &msg), 0);
	assert_string_equal(c.secret, "tok");
	/* Not a token68: a blank, '=' inside, a quote, a control byte, nothing. */
	static const char *const bad[] = {
		"Bearer a b", "Bearer a=b", "Bearer \"tok\"", "Bearer to\x01k", "Bearer", "Bearer ",
		"Bearer =", "Bearer tok\xc3\xa9",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&c, 0x5a, sizeof(c));
		err_clear(&msg);
		assert_int_equal(web__cred_parse(bad[i], &c, &msg), ERR_UNAUTHENTICATED);
		assert_non_null(strstr(msg.text, "Authorization"));
		assert_int_equal((unsigned char)c.secret[0], 0x5a); /* untouched */
	}
	memcpy(big, "Bearer ", 7);
	memset(big + 7, 'a', WEB_SECRET_MAX);
	big[7 + WEB_SECRET_MAX] = '\0';
	assert_int_equal(web__cred_parse(big, &c, &msg), 0);
	big[7 + WEB_SECRET_MAX] = 'a';
	big[8 + WEB_SECRET_MAX] = '\0';
	assert_int_equal(web__cred_parse(big, &c, &msg), ERR_UNAUTHENTICATED);
}

static void test_basic(void **state)
{
	struct web__cred c;
	struct err_msg msg;

	(void)state;
	err_clear(&msg);
	/* team-a:s3cret */
	assert_int_equal(web__cred_parse("Basic dGVhbS1hOnMzY3JldA==", &c, &msg), 0);
	assert_true(c.basic);
	assert_string_equal(c.user, "team-a");
	assert_string_equal(c.secret, "s3cret");
	assert_int_equal(c.secret_len, 6);
	/* Without padding, as some clients send it; the scheme in any case. */
	assert_int_equal(web__cred_parse("basic dGVhbS1hOnMzY3JldA", &c, &msg), 0);
	assert_string_equal(c.secret, "s3cret");
	/* An empty user (token only), and a password with ':' in it. */
	assert_int_equal(web__cred_parse("Basic OnRvazp0b2s=", &c, &msg), 0); /* ":tok:tok" */
	assert_string_equal(c.user, "");
	assert_string_equal(c.secret, "tok:tok");
	static const char *const bad[] = {
		"Basic dGVhbS1hOnMzY3JldA=",   /* wrong padding */
		"Basic dGVhbS1hOnMzY3JldA===", /* too much padding */
		"Basic dGVhbS1h!nMzY3JldA==",  /* not base64 */
		"Basic dGVhbS1h",              /* "team-a": no ':' */
		"Basic dGVhbS1hOg==",          /* "team-a:": no password */
		"Basic dGVhbS1hOnMzY3JldB==",  /* non-zero bits left over */
		"Basic YQ",                    /* "a": no ':' */
		"Basic Y",                     /* one character is no byte */
		"Basic dDoBcw==",              /* "t:\x01s": a control byte */
		"Basic AAA6cw==",              /* "\0\0:s": NUL in the user */
		"Digest username=x",
		"Negotiate abc",
		"",
		"   ",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&msg);
		assert_int_equal(web__cred_parse(bad[i], &c, &msg), ERR_UNAUTHENTICATED);
		assert_true(msg.text[0] != '\0');
	}
}

static void test_token_lines(void **state)
{
	struct web__token_line t;
	struct err_msg msg;
	uint8_t want[SHA256_LEN];
	char line[2 * WEB_TOKEN_LINE_MAX];

	(void)state;
	assert_int_equal(sha256_buf("test", 4, want), 0);
	err_clear(&msg);
	assert_int_equal(web__token_line_parse("sha256=" HASH " tenant=team-a scopes=ingest,query name=ci",
					       strlen("sha256=" HASH " tenant=team-a scopes=ingest,query name=ci"),
					       &t, &msg), 1);
	assert_memory_equal(t.sha256, want, SHA256_LEN);
	assert_string_equal(t.tenant, "team-a");
	assert_int_equal(t.scopes, WEB_SCOPE_INGEST | WEB_SCOPE_QUERY);
	assert_string_equal(t.name, "ci");
	/* Any order, tabs, a CR at the end, no name, every tenant. */
	snprintf(line, sizeof(line), "\tscopes=admin\ttenant=*  sha256=%s\r", HASH);
	assert_int_equal(web__token_line_parse(line, strlen(line), &t, &msg), 1);
	assert_string_equal(t.tenant, WEB_ALL_TENANTS);
	assert_int_equal(t.scopes, WEB_SCOPE_ADMIN);
	assert_string_equal(t.name, "");
	/* Blank and comment lines. */
	assert_int_equal(web__token_line_parse("", 0, &t, &msg), 0);
	assert_int_equal(web__token_line_parse("   \t\r", 5, &t, &msg), 0);
	assert_int_equal(web__token_line_parse("  # sha256=x", 12, &t, &msg), 0);

	static const struct {
		const char *line, *why;
	} bad[] = {
		{ "uhx_plaintexttoken tenant=a scopes=query", "stored hashed" },
		{ "sha256=" HASH " tenant=a", "missing field scopes" },
		{ "sha256=" HASH " scopes=query", "missing field tenant" },
		{ "tenant=a scopes=query", "missing field sha256" },
		{ "sha256=abc tenant=a scopes=query", "64 hex digits" },
		{ "sha256=" HASH " tenant=a scopes=query,delete", "unknown scope \"delete\"" },
		{ "sha256=" HASH " tenant=a scopes=", "key=value" },
		{ "sha256=" HASH " tenant=a scopes=query,", "unknown scope \"\"" },
		{ "sha256=" HASH " tenant=a/b scopes=query", "tenant=a/b" },
		{ "sha256=" HASH " tenant=.. scopes=query", "not allowed" },
		{ "sha256=" HASH " tenant=a scopes=query tenant=b", "given twice" },
		{ "sha256=" HASH " tenant=a scopes=query role=x", "unknown field \"role\"" },
		{ "sha256=" HASH " tenant=a scopes=query name=a#b", "name=" },
		{ "sha256=" HASH " tenant=a scopes=query =x", "key=value" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&msg);
		assert_int_equal(web__token_line_parse(bad[i].line, strlen(bad[i].line), &t, &msg),
				 ERR_INVALID);
		if (!strstr(msg.text, bad[i].why))
			fail_msg("line %zu: \"%s\" lacks \"%s\"", i, msg.text, bad[i].why);
	}
	/* A NUL inside, and a line past the limit. */
	assert_int_equal(web__token_line_parse("sha256=\0x", 9, &t, &msg), ERR_INVALID);
	memset(line, ' ', sizeof(line));
	assert_int_equal(web__token_line_parse(line, WEB_TOKEN_LINE_MAX + 1, &t, &msg), ERR_INVALID);
}

static void test_scopes(void **state)
{
	unsigned s = 0;
	char out[64];
	struct err_msg msg;

	(void)state;
	err_clear(&msg);
	assert_int_equal(web__scopes_parse("admin,ingest,upload,query", 25, &s, &msg), 0);
	assert_int_equal(s, WEB_SCOPE_ALL);
	web__scopes_str(s, out, sizeof(out));
	assert_string_equal(out, "ingest,query,upload,admin");
	web__scopes_str(WEB_SCOPE_UPLOAD, out, sizeof(out));
	assert_string_equal(out, "upload");
	web__scopes_str(0, out, sizeof(out));
	assert_string_equal(out, "");
	assert_int_equal(web__scopes_parse("", 0, &s, &msg), ERR_INVALID);
	assert_int_equal(web__scopes_parse("Query", 5, &s, &msg), ERR_INVALID);
	web__scopes_str(WEB_SCOPE_ALL, out, 8);
	assert_true(strlen(out) < 8);
}

static void test_tenant_for(void **state)
{
	const struct web__principal bound = { "team-a", WEB_SCOPE_QUERY, "a" };
	const struct web__principal all = { WEB_ALL_TENANTS, WEB_SCOPE_ALL, "ops" };
	char t[WEB_TENANT_MAX + 1];
	struct err_msg msg;

	(void)state;
	err_clear(&msg);
	/* A bound token: its tenant, whatever is asked, or a refusal. */
	assert_int_equal(web__tenant_for(&bound, NULL, NULL, t, &msg), 0);
	assert_string_equal(t, "team-a");
	assert_int_equal(web__tenant_for(&bound, "", "team-a", t, &msg), 0);
	assert_int_equal(web__tenant_for(&bound, "team-a", NULL, t, &msg), 0);
	assert_int_equal(web__tenant_for(&bound, NULL, "team-b", t, &msg), ERR_PERMISSION);
	assert_non_null(strstr(msg.text, "bound to tenant \"team-a\""));
	err_clear(&msg);
	assert_int_equal(web__tenant_for(&bound, "team-b", NULL, t, &msg), ERR_PERMISSION);
	/* The header names the tenant; the Basic user then is only a name. */
	assert_int_equal(web__tenant_for(&bound, "admin", "team-a", t, &msg), 0);
	assert_string_equal(t, "team-a");
	err_clear(&msg);
	assert_int_equal(web__tenant_for(&bound, NULL, "bad/tenant", t, &msg), ERR_INVALID);
	/* Every tenant: header, else Basic user, else anonymous. */
	assert_int_equal(web__tenant_for(&all, NULL, NULL, t, &msg), 0);
	assert_string_equal(t, WEB_DEFAULT_TENANT);
	assert_int_equal(web__tenant_for(&all, "team-c", NULL, t, &msg), 0);
	assert_string_equal(t, "team-c");
	assert_int_equal(web__tenant_for(&all, "team-c", "team-d", t, &msg), 0);
	assert_string_equal(t, "team-d");
	err_clear(&msg);
	assert_int_equal(web__tenant_for(&all, "a b", NULL, t, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "Basic auth user"));
}

static void test_loopback(void **state)
{
	static const char *const yes[] = { "127.0.0.1:4040", "127.1.2.3:0", "[::1]:4040",
					   "localhost:4040", "LOCALHOST:1" };
	static const char *const no[] = { "0.0.0.0:4040", "4040", ":4040", "[::]:4040",
					  "192.168.1.2:4040", "10.0.0.1:80", "myhost:4040",
					  "128.0.0.1:1", "[::2]:1", "", "::1" };

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(web__listen_is_loopback(yes[i]));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (web__listen_is_loopback(no[i]))
			fail_msg("%s is not loopback only", no[i]);
}

static void test_token_line_out(void **state)
{
	struct web__token_line t;
	struct err_msg msg;
	struct buf b;

	(void)state;
	buf_init(&b, 4096);
	err_clear(&msg);
	assert_int_equal(web_token_line("test", 4, "*", "upload", "ci", &b, &msg), 0);
	assert_string_equal(b.data, "sha256=" HASH " tenant=* scopes=upload name=ci\n");
	assert_int_equal(web__token_line_parse(b.data, b.len - 1, &t, &msg), 1);
	buf_reset(&b);
	assert_int_equal(web_token_line("test", 4, "team-a", "ingest", NULL, &b, &msg), 0);
	assert_string_equal(b.data, "sha256=" HASH " tenant=team-a scopes=ingest\n");
	buf_reset(&b);
	assert_int_equal(web_token_line("test", 4, "team a", "ingest", NULL, &b, &msg), ERR_INVALID);
	assert_int_equal(web_token_line("test", 4, "a", "write", NULL, &b, &msg), ERR_INVALID);
	assert_int_equal(web_token_line("te st", 5, "a", "query", NULL, &b, &msg), ERR_INVALID);
	assert_int_equal(web_token_line("a:b", 3, "a", "query", NULL, &b, &msg), ERR_INVALID);
	assert_int_equal(web_token_line("", 0, "a", "query", NULL, &b, &msg), ERR_INVALID);
	assert_int_equal(web_token_line("x", 1, "a", "query", "two words", &b, &msg), ERR_INVALID);
	assert_int_equal(b.len, 0);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bearer),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_token_lines),
		cmocka_unit_test(test_scopes),
		cmocka_unit_test(test_tenant_for),
		cmocka_unit_test(test_loopback),
		cmocka_unit_test(test_token_line_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
