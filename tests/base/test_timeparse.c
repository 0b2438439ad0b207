/*
 * test_timeparse.c - time_parse: every form, the exact bounds between the
 * units of a Unix time, overflow, and hostile strings (rejected with a
 * message, the output untouched).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/err.h"
#include "base/timeparse.h"

#define S 1000000000LL
#define NOW (1700000000LL * S + 123456789)

static int64_t ok(const char *s)
{
	struct err_msg msg;
	int64_t t = -1;

	err_clear(&msg);
	if (time_parse(s, NOW, &t, &msg))
		fail_msg("\"%s\": %s", s, msg.text);
	return t;
}

static void test_now(void **state)
{
	(void)state;
	assert_int_equal(ok("now"), NOW);
	assert_int_equal(ok("now-0s"), NOW);
	assert_int_equal(ok("now-10s"), NOW - 10 * S);
	assert_int_equal(ok("now-5m"), NOW - 300 * S);
	assert_int_equal(ok("now-1h"), NOW - 3600 * S);
	assert_int_equal(ok("now-2d"), NOW - 2 * 86400 * S);
	assert_int_equal(ok("now-1w"), NOW - 7 * 86400 * S);
	assert_int_equal(ok("now-007m"), NOW - 420 * S);
}

static void test_units_by_magnitude(void **state)
{
	(void)state;
	assert_int_equal(ok("0"), 0);
	assert_int_equal(ok("1700000000"), 1700000000LL * S);
	assert_int_equal(ok("1700000000123"), 1700000000123LL * 1000000);
	assert_int_equal(ok("1700000000123456"), 1700000000123456LL * 1000);
	assert_int_equal(ok("1700000000123456789"), 1700000000123456789LL);
	/* The bounds: the largest value of a unit, then the smallest of the next. */
	assert_int_equal(ok("9223372036"), 9223372036LL * S);
	assert_int_equal(ok("10000000000"), 10000000000LL * 1000000);
	assert_int_equal(ok("20000000000"), 20000000000LL * 1000000);
	assert_int_equal(ok("9223372036854"), 9223372036854LL * 1000000);
	assert_int_equal(ok("10000000000000"), 10000000000000LL * 1000);
	assert_int_equal(ok("9223372036854775"), 9223372036854775LL * 1000);
	assert_int_equal(ok("10000000000000000"), 10000000000000000LL);
	assert_int_equal(ok("9223372036854775807"), INT64_MAX);
	/* Leading zeros do not change the unit's choice: the value does. */
	assert_int_equal(ok("0001700000000"), 1700000000LL * S);
}

static void test_same_time_every_unit(void **state)
{
	(void)state;
	/* 1970-04-27, just past the first time that reads right in every unit. */
	assert_int_equal(ok("10000001"), 10000001LL * S);
	assert_int_equal(ok("10000001000"), 10000001LL * S);
	assert_int_equal(ok("10000001000000"), 10000001LL * S);
	assert_int_equal(ok("10000001000000000"), 10000001LL * S);
}

static void test_hostile(void **state)
{
	static const char *bad[] = {
		"", "-1", "+1", "1.5", "abc", "17e9", "0x10", " 1", "1 ", "now ", "nowx",
		"now-", "now-s", "now-10", "now-10x", "now-10sec", "now+10s", "now--1s",
		"now-1y", "now- 1s", "9223372037", "9223372036855", "9999999999999",
		"9223372036854776", "9999999999999999", "9223372036854775808",
		"99999999999999999999", "now-99999999999999999w", "now-99999999999d",
		"123456789012345678901234567890123", "1\n",
	};
	struct err_msg msg;
	int64_t t = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&msg);
		if (time_parse(bad[i], NOW, &t, &msg) != ERR_INVALID)
			fail_msg("\"%s\" was accepted", bad[i]);
		assert_int_equal(strncmp(msg.text, "time: ", 6), 0);
		assert_int_equal(t, 42);
	}
	err_clear(&msg);
	assert_int_equal(time_parse(NULL, NOW, &t, &msg), ERR_INVALID);
	/* A relative time before the epoch. */
	assert_int_equal(time_parse("now-1s", 0, &t, &msg), ERR_INVALID);
	assert_int_equal(t, 42);
	/* The offending string is quoted. */
	err_clear(&msg);
	assert_int_equal(time_parse("yesterday", NOW, &t, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "\"yesterday\""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_now),
		cmocka_unit_test(test_units_by_magnitude),
		cmocka_unit_test(test_same_time_every_unit),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
