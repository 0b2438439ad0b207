/* test_normalize.c - build ids and address normalization. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "ingest/ingest_int.h"

static void test_build_id(void **state)
{
	struct arena a;
	const char *out;
	char long_id[INGEST_MAX_BUILD_ID + 2];
	(void)state;

	arena_init(&a, 1 << 30);
	assert_int_equal(ingest__build_id(&a, "DEADbeef01", &out), 0);
	assert_string_equal(out, "deadbeef01");
	/* Go build ids and other non-hex forms are kept as given. */
	assert_int_equal(ingest__build_id(&a, "Go-Build/AbC", &out), 0);
	assert_string_equal(out, "Go-Build/AbC");
	assert_int_equal(ingest__build_id(&a, "", &out), 0);
	assert_string_equal(out, "");
	memset(long_id, 'A', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	assert_int_equal(ingest__build_id(&a, long_id, &out), ERR_INVALID);
	long_id[INGEST_MAX_BUILD_ID] = '\0';
	assert_int_equal(ingest__build_id(&a, long_id, &out), 0);
	assert_int_equal(out[0], 'a');
	arena_release(&a);
}

static void test_address(void **state)
{
	uint64_t out = 7;
	(void)state;

	/* PIE loaded at two addresses: one file offset. */
	assert_int_equal(ingest__normalize_address(0x555500001234, 0x555500000000,
						   0x555500100000, 0x1000, &out), 0);
	assert_int_equal(out, 0x2234);
	assert_int_equal(ingest__normalize_address(0x7f0000001234, 0x7f0000000000,
						   0x7f0000100000, 0x1000, &out), 0);
	assert_int_equal(out, 0x2234);
	/* Fake whole-address-space mappings keep addresses. */
	assert_true(ingest__mapping_is_fake(0, 0, 0));
	assert_true(ingest__mapping_is_fake(0, UINT64_MAX, 0));
	assert_false(ingest__mapping_is_fake(0, 0x1000, 0));
	assert_false(ingest__mapping_is_fake(0x1000, 0, 0));
	assert_int_equal(ingest__normalize_address(0xffffffff81000010, 0, 0, 0, &out), 0);
	assert_int_equal(out, 0xffffffff81000010);
	/* Address 0 means none. */
	assert_int_equal(ingest__normalize_address(0, 0x1000, 0x2000, 0, &out), 0);
	assert_int_equal(out, 0);
	/* Below the start, and offset overflow: rejected, output untouched. */
	out = 7;
	assert_int_equal(ingest__normalize_address(0x10, 0x1000, 0x2000, 0, &out), ERR_INVALID);
	assert_int_equal(ingest__normalize_address(0x1010, 0x1000, 0x2000, UINT64_MAX - 4, &out),
			 ERR_INVALID);
	assert_int_equal(out, 7);
	/* A mapping at 0 with a size is real: offset applies. */
	assert_int_equal(ingest__normalize_address(0x10, 0, 0x1000, 0x2000, &out), 0);
	assert_int_equal(out, 0x2010);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_id),
		cmocka_unit_test(test_address),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
