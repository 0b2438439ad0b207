/*
 * test_tree.c - the call tree (query/tree.c): children found by name,
 * totals, the union of two trees for a diff, children in name order, and
 * the query budget charged for nodes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "treefx.h"

static void test_child_by_name(void **state)
{
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	uint32_t a, b, a2, c, na, nb;

	(void)state;
	tfx_ctx(&q, &msg, 0);
	assert_int_equal(query__tree_init(&q, &t), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.nodes[0].name, QNAME_TOTAL);
	assert_int_equal(t.nodes[0].parent, QNONE);
	assert_int_equal(query__names_intern(&q, &t.names, "a", 1, &na), 0);
	assert_int_equal(query__names_intern(&q, &t.names, "b", 1, &nb), 0);
	assert_int_equal(na, 2); /* after "total" and "other" */
	assert_int_equal(query__tree_child(&q, &t, 0, na, &a), 0);
	assert_int_equal(query__tree_child(&q, &t, 0, nb, &b), 0);
	assert_int_equal(query__tree_child(&q, &t, 0, na, &a2), 0);
	assert_int_equal(a, a2);
	assert_int_equal(t.n, 3);
	/* The same name under another parent is another node. */
	assert_int_equal(query__tree_child(&q, &t, b, na, &c), 0);
	assert_int_not_equal(c, a);
	assert_int_equal(t.nodes[c].parent, b);
	/* Children are linked newest first. */
	assert_int_equal(t.nodes[0].first_child, b);
	assert_int_equal(t.nodes[b].next_sibling, a);
	assert_int_equal(t.nodes[a].next_sibling, QNONE);
	assert_int_equal(t.nodes[a].first_child, QNONE);
	/* A name that is not UTF-8 (from debug info, or stored before ingest
	 * cleaned names) is interned with U+FFFD: every answer stays UTF-8. */
	{
		uint32_t bad, bad2;

		assert_int_equal(query__names_intern(&q, &t.names, "f\xff\xfeg", 4, &bad), 0);
		assert_string_equal(intern_str(&t.names, bad), "f\xef\xbf\xbd\xef\xbf\xbdg");
		assert_int_equal(query__names_intern(&q, &t.names, "f\xef\xbf\xbd\xef\xbf\xbdg", 8,
						     &bad2), 0);
		assert_int_equal(bad, bad2);
	}
	tfx_end(&q, &t);
}

static void test_totals(void **state)
{
	static const char *const paths[] = { "main;a;x", "main;a", "main;b", "main;a;y", "" };
	static const int64_t v[] = { 5, 2, 7, 1, 3 };
	struct err_msg msg;
	struct qctx q;
	struct qtree t;

	(void)state;
	tfx_start(&q, &msg, &t, paths, v, 5);
	assert_int_equal(t.n, 6);
	assert_int_equal(t.nodes[0].self[0], 3);     /* the empty stack */
	assert_int_equal(t.nodes[0].total[0], 18);
	assert_int_equal(t.nodes[tfx_node(&t, "main")].total[0], 15);
	assert_int_equal(t.nodes[tfx_node(&t, "main")].self[0], 0);
	assert_int_equal(t.nodes[tfx_node(&t, "main;a")].total[0], 8);
	assert_int_equal(t.nodes[tfx_node(&t, "main;a")].self[0], 2);
	assert_int_equal(t.nodes[tfx_node(&t, "main;a;x")].total[0], 5);
	assert_int_equal(t.nodes[tfx_node(&t, "main;b")].total[0], 7);
	for (size_t i = 0; i < t.n; i++)
		assert_int_equal(t.nodes[i].total[1], 0);
	/* Totals are recomputed from the selves, not added to. */
	query__tree_totals(&t);
	assert_int_equal(t.nodes[0].total[0], 18);
	query__tree_release(&q, &t);
}

static void test_diff_union(void **state)
{
	static const char *const lp[] = { "main;a", "main;b", "main;b;c" };
	static const int64_t lv[] = { 10, 4, 1 };
	static const char *const rp[] = { "main;b", "main;d", "other" };
	static const int64_t rv[] = { 6, 3, 2 };
	struct err_msg msg;
	struct qctx q;
	struct qtree l, r, d;
	uint32_t n, bid;

	(void)state;
	tfx_ctx(&q, &msg, 0);
	tfx_tree(&q, &l, lp, lv, 3);
	tfx_tree(&q, &r, rp, rv, 3);
	/* A raw frame's build ID travels with it. */
	assert_int_equal(query__names_intern(&q, &l.names, "abcd", 4, &bid), 0);
	l.nodes[tfx_node(&l, "main;a")].build_id = bid;
	assert_int_equal(query__tree_diff(&q, &l, &r, &d), 0);
	assert_int_equal(d.nodes[0].total[0], 15);
	assert_int_equal(d.nodes[0].total[1], 11);
	n = tfx_node(&d, "main;b");
	assert_int_equal(d.nodes[n].self[0], 4);
	assert_int_equal(d.nodes[n].self[1], 6);
	assert_int_equal(d.nodes[n].total[0], 5);
	assert_int_equal(d.nodes[n].total[1], 6);
	n = tfx_node(&d, "main;a");
	assert_int_equal(d.nodes[n].total[0], 10);
	assert_int_equal(d.nodes[n].total[1], 0);
	assert_string_equal(intern_str(&d.names, d.nodes[n].build_id), "abcd");
	n = tfx_node(&d, "main;d");
	assert_int_equal(d.nodes[n].total[0], 0);
	assert_int_equal(d.nodes[n].total[1], 3);
	assert_int_equal(d.nodes[tfx_node(&d, "main;b;c")].total[0], 1);
	/* A frame named "other" keeps the reserved name id. */
	assert_int_equal(d.nodes[tfx_node(&d, "other")].name, QNAME_OTHER);
	assert_int_equal(d.n, 7);
	tfx_diff_end(&q, &l, &r, &d);
}

static void test_sorted_children(void **state)
{
	static const char *const paths[] = { "b", "ab", "a", "B", "a;z", "\xc3\xa9" };
	static const int64_t v[] = { 1, 1, 1, 1, 1, 1 };
	static const char *const want[] = { "B", "a", "ab", "b", "\xc3\xa9" };
	struct query__kids k = { 0 };
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	const uint32_t *ids;
	size_t n;

	(void)state;
	tfx_start(&q, &msg, &t, paths, v, 6);
	assert_int_equal(query__tree_sorted_children(&q, &t, 0, &k, &ids, &n), 0);
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(intern_str(&t.names, t.nodes[ids[i]].name), want[i]);
	/* The scratch is reused: a leaf has no children. */
	assert_int_equal(query__tree_sorted_children(&q, &t, ids[3], &k, &ids, &n), 0);
	assert_int_equal(n, 0);
	assert_null(ids);
	assert_int_equal(query__tree_sorted_children(&q, &t, tfx_node(&t, "a"), &k, &ids, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], tfx_node(&t, "a;z"));
	query__kids_release(&q, &k);
	tfx_end(&q, &t);
}

static void test_budget(void **state)
{
	struct err_msg msg;
	struct qctx q;
	struct qtree t;

	(void)state;
	tfx_ctx(&q, &msg, 1 << 20);
	assert_int_equal(query__tree_init(&q, &t), 0);
	assert_int_equal(tfx_flat(&q, &t, 100000), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "budget"));
	assert_true(q.mem.used <= q.mem.cap);
	tfx_end(&q, &t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_by_name),
		cmocka_unit_test(test_totals),
		cmocka_unit_test(test_diff_union),
		cmocka_unit_test(test_sorted_children),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
