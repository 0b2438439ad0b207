/*
 * test_flame.c - the flame graph layout of query/flame.c with exact values:
 * DFS pre-order with children by name, delta-encoded offsets per level,
 * names in order of first use, nodes without a value on either side left
 * out, the 7-value layout of a diff, and the budget charged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "treefx.h"

static void same_level(const struct query__flame *f, size_t d, const int64_t *want, size_t n)
{
	assert_true(d < f->n_levels);
	assert_int_equal(f->n_values[d], n);
	for (size_t i = 0; i < n; i++)
		if (f->levels[d][i] != want[i])
			fail_msg("level %zu value %zu: %lld, want %lld", d, i,
				 (long long)f->levels[d][i], (long long)want[i]);
}

static void same_names(const struct query__flame *f, const char *const *want, size_t n)
{
	assert_int_equal(f->n_names, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(f->name_len[i], strlen(want[i]));
		assert_memory_equal(f->names[i], want[i], f->name_len[i]);
	}
}

static void test_single(void **state)
{
	static const char *const p[] = { "z", "main;b", "main;a", "main;b;c", "z;q", "main;zero" };
	static const int64_t v[] = { 4, 3, 2, 1, 1, 0 };
	static const char *const names[] = { "total", "main", "a", "b", "c", "z", "q" };
	static const int64_t l0[] = { 0, 11, 0, 0 };
	static const int64_t l1[] = { 0, 6, 0, 1, 0, 5, 4, 5 };
	static const int64_t l2[] = { 0, 2, 2, 2, 0, 4, 3, 3, 0, 1, 1, 6 };
	static const int64_t l3[] = { 2, 1, 1, 4 };
	struct query__flame f;
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	size_t before;

	(void)state;
	tfx_start(&q, &msg, &t, p, v, 6);
	before = q.mem.used;
	assert_int_equal(query__flame_build(&q, &t, 0, &f), 0);
	assert_true(q.mem.used > before);
	assert_int_equal(f.width, 4);
	assert_int_equal(f.n_levels, 4);
	same_names(&f, names, 7);
	same_level(&f, 0, l0, 4);
	same_level(&f, 1, l1, 8);
	same_level(&f, 2, l2, 12);
	same_level(&f, 3, l3, 4);
	assert_int_equal(f.total[0], 11);
	assert_int_equal(f.max_self, 4);
	query__flame_release(&q, &f);
	assert_int_equal(q.mem.used, before);
	query__tree_release(&q, &t);
}

static void test_diff(void **state)
{
	static const char *const names[] = { "total", "c", "main", "a", "b" };
	static const int64_t l0[] = { 0, 5, 0, 0, 5, 0, 0 };
	static const int64_t l1[] = { 0, 0, 0, 0, 4, 4, 1, 0, 5, 0, 0, 1, 0, 2 };
	static const int64_t l2[] = { 0, 2, 2, 4, 0, 0, 3, 0, 3, 3, 0, 1, 1, 4 };
	struct query__flame f;
	struct err_msg msg;
	struct qctx q;
	struct qtree l, r, d;

	(void)state;
	tfx_diff(&q, &msg, &l, &r, &d);
	assert_int_equal(query__flame_build(&q, &d, 1, &f), 0);
	assert_int_equal(f.width, 7);
	same_names(&f, names, 5);
	assert_int_equal(f.n_levels, 3);
	same_level(&f, 0, l0, 7);
	same_level(&f, 1, l1, 14);
	same_level(&f, 2, l2, 14);
	assert_int_equal(f.total[0], 5);
	assert_int_equal(f.total[1], 5);
	assert_int_equal(f.max_self, 4);
	query__flame_release(&q, &f);
	tfx_diff_end(&q, &l, &r, &d);
}

static void test_empty_and_budget(void **state)
{
	struct query__flame f;
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	(void)state;
	tfx_ctx(&q, &msg, 0);
	assert_int_equal(query__tree_init(&q, &t), 0);
	assert_int_equal(query__flame_build(&q, &t, 0, &f), 0);
	assert_int_equal(f.n_levels, 1);
	assert_int_equal(f.n_names, 1);
	assert_int_equal(f.n_values[0], 4);
	assert_int_equal(f.levels[0][1], 0);
	query__flame_release(&q, &f);
	query__tree_release(&q, &t);

	/* A budget the tree fits in but its flame graph does not. */
	tfx_ctx(&q, &msg, 4 << 20);
	assert_int_equal(query__tree_init(&q, &t), 0);
	assert_int_equal(tfx_flat(&q, &t, 20000), 0);
	query__tree_totals(&t);
	q.mem.cap = q.mem.used + 4096;
	assert_int_equal(query__flame_build(&q, &t, 0, &f), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "budget"));
	tfx_end(&q, &t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_empty_and_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
