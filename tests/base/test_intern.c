/* test_intern.c - the interner: dense ids, stable strings, both caps, budget, clear. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"
#include "base/intern.h"

static void test_dense_ids(void **state)
{
	struct intern t;
	uint32_t id = 99;
	(void)state;

	intern_init(&t, 100, 1 << 20, NULL);
	assert_int_equal(intern_find(&t, "a", 1, &id), ERR_NOT_FOUND);
	assert_int_equal(id, 99);
	assert_int_equal(intern_put(&t, "main", 4, &id), 0);
	assert_int_equal(id, 0);
	assert_int_equal(intern_put(&t, "", 0, &id), 0);
	assert_int_equal(id, 1);
	assert_int_equal(intern_put(&t, "mainly", 4, &id), 0); /* the first 4 bytes */
	assert_int_equal(id, 0);
	assert_int_equal(intern_put(&t, "mai", 3, &id), 0);
	assert_int_equal(id, 2);
	assert_int_equal(intern_put(&t, "a\0b", 3, &id), 0); /* bytes, not C strings */
	assert_int_equal(id, 3);
	assert_int_equal(intern_put(&t, "a\0c", 3, &id), 0);
	assert_int_equal(id, 4);
	assert_int_equal(intern_count(&t), 5);
	assert_string_equal(intern_str(&t, 0), "main");
	assert_int_equal(intern_len(&t, 0), 4);
	assert_string_equal(intern_str(&t, 1), "");
	assert_int_equal(intern_len(&t, 1), 0);
	assert_int_equal(intern_len(&t, 4), 3);
	assert_memory_equal(intern_str(&t, 4), "a\0c", 4);
	assert_int_equal(intern_find(&t, "mai", 3, &id), 0);
	assert_int_equal(id, 2);
	intern_release(&t);
}

static void test_many_and_stable(void **state)
{
	struct intern t;
	const char *first;
	char s[32];
	uint32_t id;
	(void)state;

	intern_init(&t, 1u << 20, 64u << 20, NULL);
	assert_int_equal(intern_put(&t, "zero", 4, &id), 0);
	first = intern_str(&t, 0);
	for (int i = 0; i < 50000; i++) {
		int n = snprintf(s, sizeof(s), "fn_%d", i);
		assert_int_equal(intern_put(&t, s, (size_t)n, &id), 0);
		assert_int_equal(id, (uint32_t)i + 1);
	}
	/* Pointers survive table growth and new arena blocks. */
	assert_ptr_equal(intern_str(&t, 0), first);
	assert_string_equal(first, "zero");
	for (int i = 0; i < 50000; i += 997) {
		int n = snprintf(s, sizeof(s), "fn_%d", i);
		assert_int_equal(intern_put(&t, s, (size_t)n, &id), 0);
		assert_int_equal(id, (uint32_t)i + 1);
		assert_string_equal(intern_str(&t, id), s);
	}
	assert_int_equal(intern_count(&t), 50001);
	intern_release(&t);
}

static void test_count_cap(void **state)
{
	struct intern t;
	uint32_t id = 7;
	(void)state;

	intern_init(&t, 2, 1 << 20, NULL);
	assert_int_equal(intern_put(&t, "x", 1, &id), 0);
	assert_int_equal(intern_put(&t, "y", 1, &id), 0);
	id = 7;
	assert_int_equal(intern_put(&t, "z", 1, &id), ERR_TOO_LARGE);
	assert_int_equal(id, 7);
	assert_int_equal(intern_count(&t), 2);
	/* Existing strings are still found at the cap. */
	assert_int_equal(intern_put(&t, "x", 1, &id), 0);
	assert_int_equal(id, 0);
	assert_int_equal(intern_find(&t, "z", 1, &id), ERR_NOT_FOUND);
	intern_release(&t);
}

static void test_byte_cap(void **state)
{
	static char big[40000];
	struct intern t;
	uint32_t id = 7;
	(void)state;

	memset(big, 'b', sizeof(big));
	/* One 64 KiB arena block (the minimum) fits; a second does not. */
	intern_init(&t, 100, 70000, NULL);
	assert_int_equal(intern_put(&t, big, 30000, &id), 0);
	assert_int_equal(intern_put(&t, big, 30001, &id), 0);
	assert_int_equal(id, 1);
	id = 7;
	assert_int_equal(intern_put(&t, big, 40000, &id), ERR_TOO_LARGE);
	assert_int_equal(id, 7);
	assert_int_equal(intern_count(&t), 2);
	assert_int_equal(intern_find(&t, big, 40000, &id), ERR_NOT_FOUND);
	/* A small string still fits in the block's rest. */
	assert_int_equal(intern_put(&t, "ok", 2, &id), 0);
	assert_int_equal(id, 2);
	assert_string_equal(intern_str(&t, 2), "ok");
	intern_release(&t);
}

static void test_budget(void **state)
{
	struct grow_budget b;
	struct intern t;
	uint32_t id;
	(void)state;

	grow_budget_init(&b, 1 << 20);
	intern_init(&t, 1000, 1 << 20, &b.alloc);
	assert_int_equal(intern_put(&t, "hello", 5, &id), 0);
	/* Table, index and the arena block are all charged. */
	assert_true(b.used > 64 * 1024);
	assert_true(b.used <= intern_bytes(&t) + 64);
	intern_release(&t);
	assert_int_equal(b.used, 0);

	/* A budget too small for the first arena block refuses the string. */
	grow_budget_init(&b, 4096);
	intern_init(&t, 1000, 1 << 20, &b.alloc);
	id = 5;
	assert_int_equal(intern_put(&t, "hello", 5, &id), ERR_TOO_LARGE);
	assert_int_equal(id, 5);
	assert_int_equal(intern_count(&t), 0);
	assert_int_equal(intern_find(&t, "hello", 5, &id), ERR_NOT_FOUND);
	intern_release(&t);
	assert_int_equal(b.used, 0);
}

static void test_reserve(void **state)
{
	struct grow_budget b;
	struct intern t;
	uint32_t id;
	size_t before;
	(void)state;

	grow_budget_init(&b, 1 << 20);
	intern_init(&t, 1000, 1 << 20, &b.alloc);
	assert_int_equal(intern_reserve(&t, 1001), ERR_TOO_LARGE);
	assert_int_equal(intern_reserve(&t, 500), 0);
	assert_true(t.cap >= 500);
	before = t.cap * sizeof(*t.v) + hmap_bytes(&t.index);
	/* Up to the reservation, neither the table nor the index grows. */
	for (uint32_t i = 0; i < 500; i++) {
		char s[16];
		int n = snprintf(s, sizeof(s), "s%u", i);

		assert_int_equal(intern_put(&t, s, (size_t)n, &id), 0);
		assert_int_equal(id, i);
	}
	assert_int_equal(t.cap * sizeof(*t.v) + hmap_bytes(&t.index), before);
	assert_int_equal(intern_put(&t, "s7", 2, &id), 0);
	assert_int_equal(id, 7);
	intern_release(&t);
	assert_int_equal(b.used, 0);

	/* Past the budget: refused, the interner still works. */
	grow_budget_init(&b, 4096);
	intern_init(&t, 100000, 1 << 20, &b.alloc);
	assert_int_equal(intern_reserve(&t, 50000), ERR_TOO_LARGE);
	intern_release(&t);
	assert_int_equal(b.used, 0);
}

static void test_clear(void **state)
{
	struct intern t;
	uint32_t id;
	(void)state;

	intern_init(&t, 100, 1 << 20, NULL);
	assert_int_equal(intern_put(&t, "a", 1, &id), 0);
	assert_int_equal(intern_put(&t, "b", 1, &id), 0);
	intern_clear(&t);
	assert_int_equal(intern_count(&t), 0);
	assert_int_equal(intern_find(&t, "a", 1, &id), ERR_NOT_FOUND);
	assert_int_equal(intern_put(&t, "b", 1, &id), 0);
	assert_int_equal(id, 0);
	assert_string_equal(intern_str(&t, 0), "b");
	intern_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dense_ids),
		cmocka_unit_test(test_many_and_stable),
		cmocka_unit_test(test_count_cap),
		cmocka_unit_test(test_byte_cap),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_clear),
		cmocka_unit_test(test_reserve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
