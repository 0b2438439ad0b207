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

/* The top table of the tree of `n` pairs, sorted by `sort`, is `want`. */
static void expect_top(const char *const *p, const int64_t *v, size_t n,
		       enum query_top_sort sort, size_t limit, const char *want)
{
	struct tfx_out x;

	tfx_open(&x, p, v, n);
	assert_int_equal(query__top_write(&x.q, &x.t, sort, limit, &x.b), 0);
	assert_string_equal(x.b.data, want);
	tfx_close(&x);
}

static void test_top_by_self(void **state)
{
	(void)state;
	/* Equal keys keep the order in which the names were first seen. */
	expect_top(paths, values, 3, QUERY_TOP_BY_SELF, 0,
		   TOP_HEADER
		   "             6  50.00%              6  50.00%  a\n"
		   "             6  50.00%              6  50.00%  c\n"
		   "             0   0.00%             12 100.00%  main\n"
		   "             0   0.00%              4  33.33%  b\n");
}

static void test_top_by_total_limit(void **state)
{
	(void)state;
	expect_top(paths, values, 3, QUERY_TOP_BY_TOTAL, 2,
		   TOP_HEADER
		   "             0   0.00%             12 100.00%  main\n"
		   "             6  50.00%              6  50.00%  a\n");
	/* An empty tree: the header only. */
	expect_top(NULL, NULL, 0, QUERY_TOP_BY_SELF, 0, TOP_HEADER);
}

static void test_folded(void **state)
{
	static const char *const p[] = { "main;c", "main;a;b;a", "main;a", "main", "x y;z" };
	static const int64_t v[] = { 6, 4, 2, 1, 3 };
	struct tfx_out x;

	(void)state;
	tfx_open(&x, p, v, 5);
	assert_int_equal(query__folded_write(&x.q, &x.t, &x.b), 0);
	/* Pre-order, children by name; a node without self prints nothing. */
	assert_string_equal(x.b.data, "main 1\nmain;a 2\nmain;a;b;a 4\nmain;c 6\nx y;z 3\n");
	buf_release(&x.b);
	/* The output cap is honoured. */
	buf_init(&x.b, 10);
	assert_int_equal(query__folded_write(&x.q, &x.t, &x.b), ERR_TOO_LARGE);
	tfx_close(&x);
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

/* The absolute diff-top table down to its first two rows. */
#define ABSOLUTE_TOP2                                                                              \
	"# mode absolute; baseline total 20, comparison total 20\n"                                \
	"     base_self      comp_self     delta_self     base_total     comp_total    "           \
	"delta_total  name\n"                                                                      \
	"             0             15            +15              0             15        "       \
	"    +15  c [new]\n"                                                                       \
	"            10              0            -10             10              0        "       \
	"    -10  b [removed]\n"

static void test_diff_top_absolute(void **state)
{
	(void)state;
	diff_top(QUERY_DIFF_ABSOLUTE, 0,
		 ABSOLUTE_TOP2
		 "            10              5             -5             10              5        "
		 "     -5  a\n"
		 "             0              0             +0             20             20        "
		 "     +0  main\n");
	/* A limit of 2 keeps the first two rows. */
	diff_top(QUERY_DIFF_ABSOLUTE, 2, ABSOLUTE_TOP2);
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
