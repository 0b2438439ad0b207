/*
 * test_top.c - the text writers of query/top.c on trees built by hand, with
 * exact expected text: the top table (self and total per function, a
 * recursive function's total counted once per stack, both sorts, the
 * limit), folded stacks, and the diff-top table in both modes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "treefx.h"

/* main -> a -> b -> a recurses; total 12. */
static const char *const paths[] = { "main;a;b;a", "main;a", "main;c" };
static const int64_t values[] = { 4, 2, 6 };

#define TOP_HEADER "          self   self%          total  total%  name\n"

static void test_top_by_self(void **state)
{
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	struct buf b;

	(void)state;
	tfx_start(&q, &msg, &t, paths, values, 3);
	buf_init(&b, 1 << 20);
	assert_int_equal(query__top_write(&q, &t, QUERY_TOP_BY_SELF, 0, &b), 0);
	/* Equal keys keep the order in which the names were first seen. */
	assert_string_equal(b.data,
			    TOP_HEADER
			    "             6  50.00%              6  50.00%  a\n"
			    "             6  50.00%              6  50.00%  c\n"
			    "             0   0.00%             12 100.00%  main\n"
			    "             0   0.00%              4  33.33%  b\n");
	buf_release(&b);
	tfx_end(&q, &t);
}

static void test_top_by_total_limit(void **state)
{
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	struct buf b;

	(void)state;
	tfx_start(&q, &msg, &t, paths, values, 3);
	buf_init(&b, 1 << 20);
	assert_int_equal(query__top_write(&q, &t, QUERY_TOP_BY_TOTAL, 2, &b), 0);
	assert_string_equal(b.data,
			    TOP_HEADER
			    "             0   0.00%             12 100.00%  main\n"
			    "             6  50.00%              6  50.00%  a\n");
	/* An empty tree: the header only. */
	query__tree_release(&q, &t);
	assert_int_equal(query__tree_init(&q, &t), 0);
	buf_reset(&b);
	assert_int_equal(query__top_write(&q, &t, QUERY_TOP_BY_SELF, 0, &b), 0);
	assert_string_equal(b.data, TOP_HEADER);
	buf_release(&b);
	query__tree_release(&q, &t);
}

static void test_folded(void **state)
{
	static const char *const p[] = { "main;c", "main;a;b;a", "main;a", "main", "x y;z" };
	static const int64_t v[] = { 6, 4, 2, 1, 3 };
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	struct buf b;

	(void)state;
	tfx_start(&q, &msg, &t, p, v, 5);
	buf_init(&b, 1 << 20);
	assert_int_equal(query__folded_write(&q, &t, &b), 0);
	/* Pre-order, children by name; a node without self prints nothing. */
	assert_string_equal(b.data, "main 1\nmain;a 2\nmain;a;b;a 4\nmain;c 6\nx y;z 3\n");
	buf_release(&b);
	/* The output cap is honoured. */
	buf_init(&b, 10);
	assert_int_equal(query__folded_write(&q, &t, &b), ERR_TOO_LARGE);
	buf_release(&b);
	tfx_end(&q, &t);
}

static const char *const lp[] = { "main;a", "main;b" };
static const int64_t lv[] = { 10, 10 };
static const char *const rp[] = { "main;a", "main;c" };
static const int64_t rv[] = { 5, 15 };

static void diff_top(enum query_diff_mode mode, size_t limit, const char *want)
{
	struct err_msg msg;
	struct qctx q;
	struct qtree l, r;
	struct buf b;

	tfx_ctx(&q, &msg, 0);
	tfx_tree(&q, &l, lp, lv, 2);
	tfx_tree(&q, &r, rp, rv, 2);
	buf_init(&b, 1 << 20);
	assert_int_equal(query__diff_top_write(&q, &l, &r, mode, limit, &b), 0);
	assert_string_equal(b.data, want);
	buf_release(&b);
	query__tree_release(&q, &l);
	query__tree_release(&q, &r);
	assert_int_equal(q.mem.used, 0);
}

static void test_diff_top_relative(void **state)
{
	(void)state;
	diff_top(QUERY_DIFF_RELATIVE, 0,
		 "# mode relative; baseline total 20, comparison total 20\n"
		 "     base_self      comp_self     delta_self     base_total     comp_total    "
		 "delta_total  name (values in % of each side's total)\n"
		 "       0.0000%       75.0000%      +75.0000%        0.0000%       75.0000%      "
		 "+75.0000%  c [new]\n"
		 "      50.0000%        0.0000%      -50.0000%       50.0000%        0.0000%      "
		 "-50.0000%  b [removed]\n"
		 "      50.0000%       25.0000%      -25.0000%       50.0000%       25.0000%      "
		 "-25.0000%  a\n"
		 "       0.0000%        0.0000%       +0.0000%      100.0000%      100.0000%       "
		 "+0.0000%  main\n");
}

static void test_diff_top_absolute(void **state)
{
	(void)state;
	diff_top(QUERY_DIFF_ABSOLUTE, 0,
		 "# mode absolute; baseline total 20, comparison total 20\n"
		 "     base_self      comp_self     delta_self     base_total     comp_total    "
		 "delta_total  name\n"
		 "             0             15            +15              0             15        "
		 "    +15  c [new]\n"
		 "            10              0            -10             10              0        "
		 "    -10  b [removed]\n"
		 "            10              5             -5             10              5        "
		 "     -5  a\n"
		 "             0              0             +0             20             20        "
		 "     +0  main\n");
	diff_top(QUERY_DIFF_ABSOLUTE, 2,
		 "# mode absolute; baseline total 20, comparison total 20\n"
		 "     base_self      comp_self     delta_self     base_total     comp_total    "
		 "delta_total  name\n"
		 "             0             15            +15              0             15        "
		 "    +15  c [new]\n"
		 "            10              0            -10             10              0        "
		 "    -10  b [removed]\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_by_self),
		cmocka_unit_test(test_top_by_total_limit),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_diff_top_relative),
		cmocka_unit_test(test_diff_top_absolute),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
