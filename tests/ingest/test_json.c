/* test_json.c - the strict JSON parser and base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "ingest/ingest_int.h"

static int parse(const char *s, struct json_value **v, struct arena *a, struct err_msg *msg)
{
	err_clear(msg);
	return json_parse(a, s, strlen(s), v, msg);
}

static void test_valid(void **state)
{
	struct arena a;
	struct err_msg msg;
	struct json_value *v;
	const struct json_value *x;
	(void)state;

	arena_init(&a, 1 << 30);
	assert_int_equal(parse(" {\"a\": [1, -2.5e+3, true, false, null, \"s\"], \"b\": {}, "
			       "\"c\": [], \"d\": \"\\u00e9\\ud83d\\ude00\\n\\\"\\/\"} ",
			       &v, &a, &msg), 0);
	assert_int_equal(v->type, JSON_OBJECT);
	assert_int_equal(v->n, 4);
	x = json_get(v, "a");
	assert_non_null(x);
	assert_int_equal(x->type, JSON_ARRAY);
	assert_int_equal(x->n, 6);
	assert_string_equal(x->items[1].str, "-2.5e+3");
	assert_int_equal(x->items[2].boolean, 1);
	assert_int_equal(x->items[4].type, JSON_NULL);
	assert_string_equal(x->items[5].str, "s");
	assert_int_equal(json_get(v, "b")->type, JSON_OBJECT);
	assert_int_equal(json_get(v, "c")->n, 0);
	assert_string_equal(json_get(v, "d")->str, "\xc3\xa9\xf0\x9f\x98\x80\n\"/");
	assert_null(json_get(v, "zz"));
	assert_int_equal(parse("0", &v, &a, &msg), 0);
	assert_int_equal(parse("\"caf\xc3\xa9\"", &v, &a, &msg), 0);
	arena_release(&a);
}

static void test_invalid(void **state)
{
	static const char *bad[] = {
		"", " ", "{", "}", "[1,]", "[1 2]", "{\"a\"}", "{\"a\":}", "{a:1}", "{\"a\":1,}",
		"01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"",
		"\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\u0000\"", "\"a\tb\"",
		"\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "[1] x", "{\"a\":1}}", "[\"a\\",
		"\"\\",
	};
	struct arena a;
	struct err_msg msg;
	struct json_value *v;
	(void)state;

	arena_init(&a, 1 << 30);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &v, &a, &msg) != ERR_INVALID)
			fail_msg("accepted '%s'", bad[i]);
		assert_non_null(strstr(msg.text, "json: "));
	}
	arena_release(&a);
}

static void test_depth_and_memory(void **state)
{
	char deep[200];
	struct arena a;
	struct err_msg msg;
	struct json_value *v;
	size_t n = 1 << 20;
	char *big = malloc(n + 3);
	(void)state;

	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = '\0';
	arena_init(&a, 1 << 30);
	assert_int_equal(parse(deep, &v, &a, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "nesting too deep"));
	arena_release(&a);
	/* JSON_MAX_DEPTH levels are fine. */
	memset(deep, 0, sizeof(deep));
	memset(deep, '[', JSON_MAX_DEPTH);
	memset(deep + JSON_MAX_DEPTH, ']', JSON_MAX_DEPTH);
	arena_init(&a, 1 << 30);
	assert_int_equal(parse(deep, &v, &a, &msg), 0);
	arena_release(&a);
	/* A capped arena turns a huge array into ERR_TOO_LARGE. */
	big[0] = '[';
	for (size_t i = 1; i < n; i += 2) {
		big[i] = '0';
		big[i + 1] = ',';
	}
	big[n - 1] = '0';
	big[n] = ']';
	big[n + 1] = '\0';
	arena_init(&a, 4 << 20);
	assert_int_equal(parse(big, &v, &a, &msg), ERR_TOO_LARGE);
	arena_release(&a);
	free(big);
}

static void test_base64(void **state)
{
	struct arena a;
	uint8_t *out;
	size_t n;
	(void)state;

	arena_init(&a, 1 << 30);
	assert_int_equal(base64_decode(&a, "aGVsbG8=", 8, &out, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(out, "hello", 5);
	assert_int_equal(base64_decode(&a, "aGVsbG8", 7, &out, &n), 0);
	assert_int_equal(n, 5);
	assert_int_equal(base64_decode(&a, "-_8=", 4, &out, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[0], 0xfb);
	assert_int_equal(out[1], 0xff);
	assert_int_equal(base64_decode(&a, "+/8=", 4, &out, &n), 0);
	assert_int_equal(out[0], 0xfb);
	assert_int_equal(base64_decode(&a, "", 0, &out, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(base64_decode(&a, "a", 1, &out, &n), ERR_INVALID);
	assert_int_equal(base64_decode(&a, "aG!s", 4, &out, &n), ERR_INVALID);
	assert_int_equal(base64_decode(&a, "aGVsbG8===", 10, &out, &n), ERR_INVALID);
	assert_int_equal(base64_decode(&a, "aGV=", 4, &out, &n), 0);
	assert_int_equal(base64_decode(&a, "aG==x", 5, &out, &n), ERR_INVALID);
	arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_depth_and_memory),
		cmocka_unit_test(test_base64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
