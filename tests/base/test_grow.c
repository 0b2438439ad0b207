/* test_grow.c - array growth: policy, maximum, overflow, allocator hook, budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"

/* A hook that counts calls and fails on demand. */
struct fake {
	int calls;
	int fail_with;          /* 0: succeed */
	size_t last_old, last_new;
	size_t live;            /* bytes allocated and not freed */
};

static void *fake_resize(void *ctx, void *p, size_t old_size, size_t new_size, int *rc)
{
	struct fake *f = ctx;
	void *np;

	f->calls++;
	f->last_old = old_size;
	f->last_new = new_size;
	if (new_size == 0) {
		free(p);
		f->live -= old_size;
		return NULL;
	}
	if (f->fail_with) {
		*rc = f->fail_with;
		return NULL;
	}
	np = realloc(p, new_size);
	if (!np) {
		*rc = ERR_NOMEM;
		return NULL;
	}
	f->live = f->live - old_size + new_size;
	return np;
}

static void test_policy(void **state)
{
	uint32_t *v = NULL;
	size_t cap = 0;
	(void)state;

	assert_int_equal(GROW(v, cap, 1, 1000, NULL), 0);
	assert_int_equal(cap, GROW_MIN_ITEMS);
	assert_non_null(v);
	/* Enough room: nothing happens. */
	assert_int_equal(GROW(v, cap, GROW_MIN_ITEMS, 1000, NULL), 0);
	assert_int_equal(cap, GROW_MIN_ITEMS);
	/* Doubling. */
	assert_int_equal(GROW(v, cap, GROW_MIN_ITEMS + 1, 1000, NULL), 0);
	assert_int_equal(cap, 2 * GROW_MIN_ITEMS);
	/* A need past the double is taken as is. */
	assert_int_equal(GROW(v, cap, 300, 1000, NULL), 0);
	assert_int_equal(cap, 300);
	/* The double past max is lowered to max. */
	assert_int_equal(GROW(v, cap, 301, 1000, NULL), 0);
	assert_int_equal(cap, 600);
	assert_int_equal(GROW(v, cap, 601, 1000, NULL), 0);
	assert_int_equal(cap, 1000);
	for (size_t i = 0; i < cap; i++)
		v[i] = (uint32_t)i;
	assert_int_equal(v[999], 999);
	grow_free(NULL, v, cap, sizeof(*v));
}

static void test_max_and_overflow_leave_array(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	(void)state;

	assert_int_equal(GROW(v, cap, 10, 100, NULL), 0);
	assert_int_equal(cap, 16);
	v[3] = 42;
	uint64_t *before = v;
	/* Past max. */
	assert_int_equal(GROW(v, cap, 101, 100, NULL), ERR_TOO_LARGE);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 16);
	/* need * elem overflows size_t, whatever max says. */
	assert_int_equal(GROW(v, cap, SIZE_MAX / 8 + 1, SIZE_MAX, NULL), ERR_TOO_LARGE);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 16);
	assert_int_equal(grow_array(&v, &cap, 3, SIZE_MAX / 2, SIZE_MAX, NULL), ERR_TOO_LARGE);
	assert_int_equal(cap, 16);
	assert_int_equal(v[3], 42);
	grow_free(NULL, v, cap, sizeof(*v));
}

static void test_doubling_near_size_max(void **state)
{
	struct fake f = { 0 };
	struct grow_alloc a = { fake_resize, &f };
	char *v = NULL;
	size_t cap = 0;
	(void)state;

	/* A cap whose double overflows is clamped, not wrapped: the hook is
	 * asked for exactly max bytes and refuses, leaving everything as it was. */
	assert_int_equal(GROW(v, cap, 8, SIZE_MAX, &a), 0);
	assert_int_equal(cap, 16);
	cap = SIZE_MAX / 2 + 1; /* pretend; the hook fails before touching v */
	f.fail_with = ERR_NOMEM;
	assert_int_equal(grow_array(&v, &cap, 1, SIZE_MAX / 2 + 2, SIZE_MAX, &a), ERR_NOMEM);
	assert_true(f.last_new == SIZE_MAX);
	assert_true(cap == SIZE_MAX / 2 + 1);
	cap = 16;
	f.fail_with = 0;
	grow_free(&a, v, cap, 1);
	assert_int_equal(f.live, 0);
}

static void test_hook_failure_leaves_array(void **state)
{
	struct fake f = { 0 };
	struct grow_alloc a = { fake_resize, &f };
	int *v = NULL;
	size_t cap = 0;
	(void)state;

	assert_int_equal(GROW(v, cap, 5, 1000, &a), 0);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.last_old, 0);
	assert_int_equal(f.last_new, 16 * sizeof(int));
	v[15] = 7;
	int *before = v;
	f.fail_with = ERR_NOMEM;
	assert_int_equal(GROW(v, cap, 17, 1000, &a), ERR_NOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 16);
	f.fail_with = ERR_TOO_LARGE;
	assert_int_equal(GROW(v, cap, 17, 1000, &a), ERR_TOO_LARGE);
	assert_int_equal(cap, 16);
	assert_int_equal(v[15], 7);
	f.fail_with = 0;
	assert_int_equal(GROW(v, cap, 17, 1000, &a), 0);
	assert_int_equal(f.last_old, 16 * sizeof(int));
	assert_int_equal(f.last_new, 32 * sizeof(int));
	assert_int_equal(v[15], 7);
	grow_free(&a, v, cap, sizeof(*v));
	assert_int_equal(f.last_new, 0);
	assert_int_equal(f.live, 0);
}

static void test_budget(void **state)
{
	struct grow_budget b;
	uint64_t *x = NULL, *y = NULL;
	size_t cx = 0, cy = 0;
	(void)state;

	grow_budget_init(&b, 1024);
	assert_int_equal(GROW(x, cx, 16, 1000, &b.alloc), 0);
	assert_int_equal(b.used, 128);
	assert_int_equal(GROW(y, cy, 64, 1000, &b.alloc), 0);
	assert_int_equal(b.used, 128 + 512);
	/* x would double to 256 bytes: 640 - 128 + 256 = 768 fits. */
	assert_int_equal(GROW(x, cx, 17, 1000, &b.alloc), 0);
	assert_int_equal(b.used, 768);
	/* y to 1024 bytes would make 1280: refused, nothing changes. */
	uint64_t *before = y;
	assert_int_equal(GROW(y, cy, 65, 1000, &b.alloc), ERR_TOO_LARGE);
	assert_ptr_equal(y, before);
	assert_int_equal(cy, 64);
	assert_int_equal(b.used, 768);
	/* Freeing refunds. */
	grow_free(&b.alloc, x, cx, sizeof(*x));
	assert_int_equal(b.used, 512);
	assert_int_equal(GROW(y, cy, 65, 1000, &b.alloc), 0);
	assert_int_equal(cy, 128);
	assert_int_equal(b.used, 1024);
	grow_free(&b.alloc, y, cy, sizeof(*y));
	assert_int_equal(b.used, 0);
}

static void test_resize_heap(void **state)
{
	int rc = 0;
	char *p;
	(void)state;

	p = grow_resize(NULL, NULL, 0, 10, &rc);
	assert_non_null(p);
	memcpy(p, "123456789", 10);
	p = grow_resize(NULL, p, 10, 20, &rc);
	assert_non_null(p);
	assert_string_equal(p, "123456789");
	assert_null(grow_resize(NULL, p, 20, 0, &rc));
	assert_int_equal(rc, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_max_and_overflow_leave_array),
		cmocka_unit_test(test_doubling_near_size_max),
		cmocka_unit_test(test_hook_failure_leaves_array),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_resize_heap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
