/* test_arena.c - arena allocation, alignment and the byte cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/grow.h"
#include "zero_cap.h"

static void test_alloc_aligned_and_distinct(void **state)
{
	struct arena a;
	(void)state;
	arena_init(&a, 64 << 20);
	char *p = arena_alloc(&a, 3), *q = arena_alloc(&a, 5);
	assert_non_null(p);
	assert_non_null(q);
	assert_true(((uintptr_t)p & 15) == 0);
	assert_true(((uintptr_t)q & 15) == 0);
	assert_ptr_not_equal(p, q);
	memset(p, 1, 3);
	memset(q, 2, 5);
	assert_int_equal(p[2], 1);
	char *s = arena_strndup(&a, "hello world", 5);
	assert_string_equal(s, "hello");
	arena_release(&a);
}

static void test_many_blocks(void **state)
{
	struct arena a;
	(void)state;
	arena_init(&a, 64 << 20);
	for (int i = 0; i < 10000; i++) {
		int *p = arena_calloc(&a, 100, sizeof(int));
		assert_non_null(p);
		assert_int_equal(p[99], 0);
		p[99] = i;
	}
	assert_int_equal(arena_failed(&a), 0);
	arena_release(&a);
}

static void test_cap(void **state)
{
	struct arena a;
	(void)state;
	arena_init(&a, 100000);
	assert_non_null(arena_alloc(&a, 1000));
	assert_null(arena_alloc(&a, 200000));
	assert_int_equal(arena_failed(&a), ERR_TOO_LARGE);
	assert_null(arena_calloc(&a, SIZE_MAX / 2, 4));
	arena_release(&a);
}

static void test_strings_packed(void **state)
{
	struct arena a;
	(void)state;
	arena_init(&a, 1 << 20);
	char *x = arena_strndup(&a, "abc", 3), *y = arena_strndup(&a, "de", 2);
	assert_string_equal(x, "abc");
	assert_string_equal(y, "de");
	assert_ptr_equal(y, x + 4); /* no padding between strings */
	/* Aligned allocations still are, after an odd-sized string. */
	char *z = arena_alloc(&a, 8);
	assert_true(((uintptr_t)z & 15) == 0);
	assert_true(z >= y + 3);
	arena_release(&a);
}

static void test_budget_hook(void **state)
{
	struct grow_budget b;
	struct arena a;
	(void)state;
	grow_budget_init(&b, 150000);
	arena_init_alloc(&a, 1 << 30, &b.alloc);
	assert_non_null(arena_alloc(&a, 100));
	assert_true(b.used >= 64 * 1024 && b.used < 64 * 1024 + 64);
	/* The next block (128 KiB) is over budget. */
	assert_null(arena_alloc(&a, 100000));
	assert_int_equal(arena_failed(&a), ERR_TOO_LARGE);
	arena_release(&a);
	assert_int_equal(b.used, 0);
}

static void arena_init0(void *a)
{
	arena_init(a, 0);
}

/* As for buffers (test_buf.c): a cap of 0 asserts, or refuses every byte. */
static void test_zero_cap(void **state)
{
	struct arena a;
	(void)state;

	zero_cap_init(arena_init0, &a, sizeof(a));
	assert_null(arena_alloc(&a, 1));
	assert_int_equal(arena_failed(&a), ERR_TOO_LARGE);
	arena_release(&a);
}

/* arena_grow: doubling from 16, contents kept, and the cap and size_t refuse. */
static void test_grow(void **state)
{
	struct arena a;
	uint32_t *v = NULL;
	size_t cap = 0;
	(void)state;

	arena_init(&a, 1 << 20);
	assert_int_equal(arena_grow(&a, (void **)&v, &cap, 1, sizeof(*v)), 0);
	assert_int_equal(cap, 16);
	for (uint32_t i = 0; i < 16; i++)
		v[i] = i;
	assert_int_equal(arena_grow(&a, (void **)&v, &cap, 16, sizeof(*v)), 0);
	assert_int_equal(cap, 16);
	assert_int_equal(arena_grow(&a, (void **)&v, &cap, 100, sizeof(*v)), 0);
	assert_int_equal(cap, 128);
	for (uint32_t i = 0; i < 16; i++)
		assert_int_equal(v[i], i);
	/* Past the arena's cap: refused, the array as it was. */
	assert_int_not_equal(arena_grow(&a, (void **)&v, &cap, 1 << 20, sizeof(*v)), 0);
	assert_int_equal(cap, 128);
	assert_int_equal(v[15], 15);
	arena_release(&a);
	/* Past size_t. */
	arena_init(&a, 1 << 20);
	cap = 16;
	assert_int_equal(arena_grow(&a, (void **)&v, &cap, SIZE_MAX / 4, 8), ERR_TOO_LARGE);
	arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_aligned_and_distinct),
		cmocka_unit_test(test_many_blocks),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_strings_packed),
		cmocka_unit_test(test_budget_hook),
		cmocka_unit_test(test_zero_cap),
		cmocka_unit_test(test_grow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
