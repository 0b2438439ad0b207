/* test_json.c - base64 of ingest/json.c (the reader is tested in tests/base). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "ingest/ingest_int.h"

static void test_base64(void **state)
{
	struct arena a;
	uint8_t *out;
	size_t n;
	(void)state;

	arena_init(&a, 0);
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
		cmocka_unit_test(test_base64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
