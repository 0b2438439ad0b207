/* test_params.c - query strings, time parameters, tenant ids, media types. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/timeparse.h"
#include "web/web_int.h"

#define NOW 1700000000123456789LL

static void test_query_param(void **state)
{
	char v[32];
	(void)state;

	assert_int_equal(web__query_param("name=app.cpu%7Benv%3Dprod%7D&from=1", "name", v, sizeof(v)), 0);
	assert_string_equal(v, "app.cpu{env=prod}");
	assert_int_equal(web__query_param("name=a&from=17", "from", v, sizeof(v)), 0);
	assert_string_equal(v, "17");
	assert_int_equal(web__query_param("a+b=1&x=a+b", "x", v, sizeof(v)), 0);
	assert_string_equal(v, "a b");
	assert_int_equal(web__query_param("flag&x=1", "flag", v, sizeof(v)), 0);
	assert_string_equal(v, "");
	/* A key is matched whole, not as a prefix. */
	assert_int_equal(web__query_param("names=x", "name", v, sizeof(v)), ERR_NOT_FOUND);
	assert_int_equal(web__query_param("", "name", v, sizeof(v)), ERR_NOT_FOUND);
	assert_int_equal(web__query_param(NULL, "name", v, sizeof(v)), ERR_NOT_FOUND);
	/* First value wins. */
	assert_int_equal(web__query_param("x=1&x=2", "x", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
}

static void test_query_param_hostile(void **state)
{
	char v[8];
	(void)state;

	assert_int_equal(web__query_param("x=%zz", "x", v, sizeof(v)), ERR_INVALID);
	assert_int_equal(web__query_param("x=%4", "x", v, sizeof(v)), ERR_INVALID);
	assert_int_equal(web__query_param("x=%", "x", v, sizeof(v)), ERR_INVALID);
	assert_int_equal(web__query_param("x=a%00b", "x", v, sizeof(v)), ERR_INVALID);
	assert_int_equal(web__query_param("x=12345678", "x", v, sizeof(v)), ERR_TOO_LARGE);
	assert_int_equal(web__query_param("x=1234567", "x", v, sizeof(v)), 0);
	assert_string_equal(v, "1234567");
	assert_int_equal(web__query_param("&&&x=1&&", "x", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
}

/*
 * Time parameters: the routes URL-decode a value with web__query_param and
 * hand it to time_parse (base/timeparse.h, tested in tests/base).  What the
 * decoding can turn a value into must still be judged by the parser.
 */
static void test_time_param(void **state)
{
	struct err_msg msg;
	char v[64];
	int64_t t = 0;
	(void)state;

	assert_int_equal(web__query_param("from=now%2D1h&until=now", "from", v, sizeof(v)), 0);
	assert_int_equal(time_parse(v, NOW, &t, &msg), 0);
	assert_int_equal(t, NOW - 3600LL * 1000000000LL);
	/* Ingest and query read a number alike: 2e10 is milliseconds. */
	assert_int_equal(web__query_param("until=20000000000", "until", v, sizeof(v)), 0);
	assert_int_equal(time_parse(v, NOW, &t, &msg), 0);
	assert_int_equal(t, 20000000000LL * 1000000LL);
	/* '+' decodes to a space, which no time has. */
	assert_int_equal(web__query_param("from=+1700000000", "from", v, sizeof(v)), 0);
	t = 42;
	assert_int_equal(time_parse(v, NOW, &t, &msg), ERR_INVALID);
	assert_int_equal(t, 42);
}

static void test_tenant(void **state)
{
	static const char *good[] = { "anonymous", "a", "team-1", "A.b_c", "x!*'()", "..." };
	static const char *bad[] = { "", ".", "..", "a b", "a/b", "ü", "a\tb", "a:b" };
	char long_ok[WEB_TENANT_MAX + 1], too_long[WEB_TENANT_MAX + 2];
	struct err_msg msg;
	(void)state;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(web__tenant_check(good[i], NULL), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&msg);
		assert_int_equal(web__tenant_check(bad[i], &msg), ERR_INVALID);
		assert_non_null(strstr(msg.text, "X-Scope-OrgID"));
	}
	memset(long_ok, 'a', WEB_TENANT_MAX);
	long_ok[WEB_TENANT_MAX] = '\0';
	assert_int_equal(web__tenant_check(long_ok, NULL), 0);
	memset(too_long, 'a', WEB_TENANT_MAX + 1);
	too_long[WEB_TENANT_MAX + 1] = '\0';
	assert_int_equal(web__tenant_check(too_long, NULL), ERR_INVALID);
}

static void test_media_type(void **state)
{
	(void)state;
	assert_true(web__media_type_is("application/json", "application/json"));
	assert_true(web__media_type_is("Application/JSON; charset=utf-8", "application/json"));
	assert_true(web__media_type_is(" application/json ;x=y", "application/json"));
	assert_false(web__media_type_is("application/jsonx", "application/json"));
	assert_false(web__media_type_is("application/proto", "application/protobuf"));
	assert_false(web__media_type_is(NULL, "application/json"));
	assert_false(web__media_type_is("", "application/json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_param),
		cmocka_unit_test(test_query_param_hostile),
		cmocka_unit_test(test_time_param),
		cmocka_unit_test(test_tenant),
		cmocka_unit_test(test_media_type),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
