/* test_params.c - query strings, time parameters, tenant ids, media types. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

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

static void test_parse_time(void **state)
{
	struct err_msg msg;
	int64_t t = 0;
	(void)state;

	assert_int_equal(web__parse_time("from", "1700000000", NOW, &t, &msg), 0);
	assert_int_equal(t, 1700000000LL * 1000000000LL);
	assert_int_equal(web__parse_time("from", "1700000000123", NOW, &t, &msg), 0);
	assert_int_equal(t, 1700000000123LL * 1000000LL);
	assert_int_equal(web__parse_time("from", "1700000000123456", NOW, &t, &msg), 0);
	assert_int_equal(t, 1700000000123456LL * 1000LL);
	assert_int_equal(web__parse_time("from", "1700000000123456789", NOW, &t, &msg), 0);
	assert_int_equal(t, 1700000000123456789LL);
	assert_int_equal(web__parse_time("from", "0", NOW, &t, &msg), 0);
	assert_int_equal(t, 0);
	assert_int_equal(web__parse_time("from", "now", NOW, &t, &msg), 0);
	assert_int_equal(t, NOW);
	assert_int_equal(web__parse_time("from", "now-10s", NOW, &t, &msg), 0);
	assert_int_equal(t, NOW - 10LL * 1000000000LL);
	assert_int_equal(web__parse_time("from", "now-5m", NOW, &t, &msg), 0);
	assert_int_equal(t, NOW - 300LL * 1000000000LL);
	assert_int_equal(web__parse_time("from", "now-1h", NOW, &t, &msg), 0);
	assert_int_equal(t, NOW - 3600LL * 1000000000LL);
	assert_int_equal(web__parse_time("from", "now-2d", NOW, &t, &msg), 0);
	assert_int_equal(t, NOW - 2 * 86400LL * 1000000000LL);
	assert_int_equal(web__parse_time("from", "now-1w", NOW, &t, &msg), 0);
	assert_int_equal(t, NOW - 7 * 86400LL * 1000000000LL);
}

static void test_parse_time_hostile(void **state)
{
	static const char *bad[] = {
		"", "-1", "1.5", "abc", "17e9", "now-", "now-s", "now-10", "now-10x",
		"now-10sec", "now+10s", "99999999999999999999", "now-99999999999999999w",
		"9223372036854775808", " 1", "1 ",
	};
	struct err_msg msg;
	int64_t t = 42;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&msg);
		assert_int_equal(web__parse_time("until", bad[i], NOW, &t, &msg), ERR_INVALID);
		assert_non_null(strstr(msg.text, "until"));
		assert_int_equal(t, 42);
	}
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
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_parse_time_hostile),
		cmocka_unit_test(test_tenant),
		cmocka_unit_test(test_media_type),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
