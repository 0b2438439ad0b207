/* test_hash.c - hash stability and spread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"

static void test_deterministic_and_length_sensitive(void **state)
{
	(void)state;
	const char *s = "service_name=api";
	assert_true(hash_bytes(s, strlen(s), 0) == hash_bytes(s, strlen(s), 0));
	assert_true(hash_bytes(s, strlen(s), 0) != hash_bytes(s, strlen(s), 1));
	assert_true(hash_bytes(s, 3, 0) != hash_bytes(s, 4, 0));
	char zeros[32] = { 0 };
	for (size_t n = 0; n < 31; n++)
		assert_true(hash_bytes(zeros, n, 0) != hash_bytes(zeros, n + 1, 0));
}

static void test_spread(void **state)
{
	/* 64k sequential keys into 1024 buckets: none should be badly loaded. */
	static unsigned counts[1024];
	(void)state;
	for (unsigned i = 0; i < 65536; i++) {
		char k[32];
		int n = snprintf(k, sizeof(k), "key-%u", i);
		counts[hash_bytes(k, (size_t)n, 7) & 1023]++;
	}
	for (int i = 0; i < 1024; i++)
		assert_true(counts[i] > 20 && counts[i] < 120);
	assert_true(hash_u64(1) != hash_u64(2));
	assert_true(hash_combine(1, 2) != hash_combine(2, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deterministic_and_length_sensitive),
		cmocka_unit_test(test_spread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
