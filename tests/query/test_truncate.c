/*
 * test_truncate.c - maxNodes folding (query/truncate.c): exactly which nodes
 * are kept (the maxNodes largest totals, ties kept, the larger side of a
 * diff), what the "other" children hold, and that every total survives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "treefx.h"

/* The tree as folded text ("a;b self\n" per node with a self, name order). */
static void folded(struct qctx *q, const struct qtree *t, char *out, size_t cap)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	assert_int_equal(query__folded_write(q, t, &b), 0);
	snprintf(out, cap, "%s", b.data ? b.data : "");
	buf_release(&b);
}

/* Truncates t to `n` nodes and checks its folded stacks are `want`. */
static void truncated_to(struct qctx *q, struct qtree *t, size_t n, const char *want)
{
	char got[512];

	assert_int_equal(query__truncate(q, t, n), 0);
	folded(q, t, got, sizeof(got));
	assert_string_equal(got, want);
}

static const char *const paths[] = { "main;a;x", "main;a", "main;b", "main;a;y", "" };
static const int64_t values[] = { 5, 2, 7, 1, 3 };

static void test_keeps_largest(void **state)
{
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	uint32_t o;

	(void)state;
	tfx_start(&q, &msg, &t, paths, values, 5);
	/* Keys: root 18, main 15, a 8, b 7, x 5, y 1: the 4th largest is 7. */
	truncated_to(&q, &t, 4, "main;a 2\nmain;a;other 6\nmain;b 7\n");
	assert_int_equal(t.n, 5);
	o = tfx_node(&t, "main;a;other");
	assert_int_equal(t.nodes[o].name, QNAME_OTHER);
	assert_int_equal(t.nodes[o].total[0], 6);
	assert_int_equal(t.nodes[0].self[0], 3);
	assert_int_equal(t.nodes[0].total[0], 18);
	assert_int_equal(t.nodes[tfx_node(&t, "main;a")].total[0], 8);
	tfx_end(&q, &t);
}

static void test_small_tree_unchanged(void **state)
{
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	char before[512], after[512];

	(void)state;
	tfx_start(&q, &msg, &t, paths, values, 5);
	folded(&q, &t, before, sizeof(before));
	assert_int_equal(query__truncate(&q, &t, 6), 0);
	folded(&q, &t, after, sizeof(after));
	assert_string_equal(before, after);
	assert_int_equal(t.n, 6);
	assert_int_equal(query__truncate(&q, &t, 1000000), 0);
	assert_int_equal(t.n, 6);
	query__tree_release(&q, &t);
}

static void test_ties_kept_and_root_only(void **state)
{
	static const char *const p[] = { "main;a", "main;b", "main;c" };
	static const char *const two[] = { "a", "b" };
	static const int64_t v[] = { 5, 5, 5 };
	struct err_msg msg;
	struct qctx q;
	struct qtree t;

	(void)state;
	tfx_start(&q, &msg, &t, p, v, 3);
	/* The 3rd largest key is 5, which a, b and c all have. */
	truncated_to(&q, &t, 3, "main;a 5\nmain;b 5\nmain;c 5\n");
	/* One node: the root, and main, whose total ties with it; the rest is
	 * main's "other". */
	truncated_to(&q, &t, 1, "main;other 15\n");
	assert_int_equal(t.n, 3);
	assert_int_equal(t.nodes[0].total[0], 15);
	query__tree_release(&q, &t);
	/* Two children of the root, each below its total: only the root is kept. */
	tfx_tree(&q, &t, two, v, 2);
	truncated_to(&q, &t, 1, "other 10\n");
	assert_int_equal(t.n, 2);
	query__tree_release(&q, &t);
}

static void test_diff_sides(void **state)
{
	static const char *const lp[] = { "main;a", "main;b" };
	static const int64_t lv[] = { 9, 1 };
	static const char *const rp[] = { "main;a", "main;b", "main;c" };
	static const int64_t rv[] = { 1, 8, 2 };
	struct err_msg msg;
	struct qctx q;
	struct qtree l, r, d;
	uint32_t o;

	(void)state;
	tfx_ctx(&q, &msg, 0);
	tfx_tree(&q, &l, lp, lv, 2);
	tfx_tree(&q, &r, rp, rv, 3);
	assert_int_equal(query__tree_diff(&q, &l, &r, &d), 0);
	/* Keys (the larger side): root 11, main 11, a 9, b 8, c 2. */
	assert_int_equal(query__truncate(&q, &d, 4), 0);
	assert_int_not_equal(tfx_node(&d, "main;a"), QNONE);
	assert_int_not_equal(tfx_node(&d, "main;b"), QNONE);
	assert_int_equal(tfx_node(&d, "main;c"), QNONE);
	o = tfx_node(&d, "main;other");
	assert_int_equal(d.nodes[o].self[0], 0);
	assert_int_equal(d.nodes[o].self[1], 2);
	assert_int_equal(d.nodes[0].total[0], 10);
	assert_int_equal(d.nodes[0].total[1], 11);
	tfx_diff_end(&q, &l, &r, &d);
}

/* A frame that is itself named "other" is never kept under its name. */
static void test_other_folds(void **state)
{
	static const char *const p[] = { "main;other", "main;a" };
	static const int64_t v[] = { 4, 6 };
	struct err_msg msg;
	struct qctx q;
	struct qtree t;

	(void)state;
	tfx_start(&q, &msg, &t, p, v, 2);
	truncated_to(&q, &t, 100, "main;a 6\nmain;other 4\n");
	query__tree_release(&q, &t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keeps_largest),
		cmocka_unit_test(test_small_tree_unchanged),
		cmocka_unit_test(test_ties_kept_and_root_only),
		cmocka_unit_test(test_diff_sides),
		cmocka_unit_test(test_other_folds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
