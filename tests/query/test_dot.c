/*
 * test_dot.c - the Graphviz call graph of query/dot.c on trees built by
 * hand: flat and cum per function with recursion counted once per stack,
 * edges counted once per stack, trimming to maxNodes with residual edges,
 * hostile names escaped, unit-aware values, deterministic output, the
 * memory budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "base/json.h"
#include "treefx.h"

#define COUNT_TYPE "process_cpu:samples:count:cpu:nanoseconds"
#define CPU_TYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

/* The DOT of a tree of n (path, value) pairs; returns the rc, text in *b. */
static int dot_of(const char *const *paths, const int64_t *values, size_t n, const char *type,
		  size_t max_nodes, size_t max_bytes, struct buf *b)
{
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	int rc;

	tfx_ctx(&q, &msg, max_bytes);
	tfx_tree(&q, &t, paths, values, n);
	buf_init(b, 1 << 20);
	rc = query__dot_write(&q, &t, type, max_nodes, b);
	if (!rc)
		rc = buf_putc(b, '\0') ? -1 : 0;
	tfx_end(&q, &t);
	return rc;
}

static int has(const struct buf *b, const char *s)
{
	return b->data && strstr(b->data, s) != NULL;
}

static int count(const struct buf *b, const char *s)
{
	int n = 0;

	for (const char *p = b->data; p && (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

#define HAS(b, s)                                                              \
	do {                                                                   \
		if (!has(b, s))                                                \
			fail_msg("missing %s in:\n%s", s, (b)->data);          \
	} while (0)

/* main -> a -> b -> a recurses; total 12. */
static const char *const rec_paths[] = { "main;a;b;a", "main;a", "main;c" };
static const int64_t rec_values[] = { 4, 2, 6 };

static void test_small_graph_exact(void **state)
{
	struct buf b;

	(void)state;
	assert_int_equal(dot_of(rec_paths, rec_values, 3, COUNT_TYPE, 100, 0, &b), 0);
	/* a: flat 2 + 4, cum 6 (the recursive a inside main;a counts once);
	 * main first by cum, then a and c (equal) by name, then b. */
	assert_string_equal(
		b.data,
		"digraph \"unhex\" {\n"
		"node [style=filled fillcolor=\"#f8f8f8\"]\n"
		"subgraph cluster_L { \"legend\" [shape=box fontsize=16 label=\"Type: samples\\l"
		"Profile: process_cpu:samples:count:cpu:nanoseconds\\l"
		"Showing nodes accounting for 12, 100.00% of 12 total\\l\" tooltip=\"total 12 count\"] }\n"
		"N1 [label=\"main\\n0 (0.00%)\\nof 12 (100.00%)\" id=\"node1\" fontsize=8 shape=box "
		"color=\"#b20000\" fillcolor=\"#edd5d5\" tooltip=\"main (flat 0, cum 12 count)\"]\n"
		"N2 [label=\"a\\n6 (50.00%)\" id=\"node2\" fontsize=40 shape=box color=\"#b25959\" "
		"fillcolor=\"#ede1e1\" tooltip=\"a (flat 6, cum 6 count)\"]\n"
		"N3 [label=\"c\\n6 (50.00%)\" id=\"node3\" fontsize=40 shape=box color=\"#b25959\" "
		"fillcolor=\"#ede1e1\" tooltip=\"c (flat 6, cum 6 count)\"]\n"
		"N4 [label=\"b\\n0 (0.00%)\\nof 4 (33.33%)\" id=\"node4\" fontsize=8 shape=box "
		"color=\"#b27777\" fillcolor=\"#ede5e5\" tooltip=\"b (flat 0, cum 4 count)\"]\n"
		"N1 -> N2 [label=\" 6\" weight=51 penwidth=3.00 color=\"#b25959\" "
		"tooltip=\"main -> a (6 count)\"]\n"
		"N1 -> N3 [label=\" 6\" weight=51 penwidth=3.00 color=\"#b25959\" "
		"tooltip=\"main -> c (6 count)\"]\n"
		"N2 -> N4 [label=\" 4\" weight=34 penwidth=2.33 color=\"#b27777\" "
		"tooltip=\"a -> b (4 count)\"]\n"
		"N4 -> N2 [label=\" 4\" weight=34 penwidth=2.33 color=\"#b27777\" "
		"tooltip=\"b -> a (4 count)\"]\n"
		"}\n");
	buf_release(&b);
}

static void test_recursion_counted_once(void **state)
{
	static const char *const paths[] = { "main;f;f;f", "main;a;b;a;b", "main;f" };
	static const int64_t values[] = { 5, 3, 1 };
	struct buf b;

	(void)state;
	assert_int_equal(dot_of(paths, values, 3, COUNT_TYPE, 100, 0, &b), 0);
	/* f's cum is its stacks once each, not 5 per level; no f -> f edge. */
	HAS(&b, "tooltip=\"f (flat 6, cum 6 count)\"");
	HAS(&b, "tooltip=\"main -> f (6 count)\"");
	assert_false(has(&b, "f -> f"));
	/* a -> b repeats on its path: the stack counts once per edge. */
	HAS(&b, "tooltip=\"a (flat 0, cum 3 count)\"");
	HAS(&b, "tooltip=\"b (flat 3, cum 3 count)\"");
	HAS(&b, "tooltip=\"a -> b (3 count)\"");
	HAS(&b, "tooltip=\"b -> a (3 count)\"");
	HAS(&b, "tooltip=\"main -> a (3 count)\"");
	assert_int_equal(count(&b, " -> N"), 4);
	buf_release(&b);
}

static void test_trim_to_max_nodes(void **state)
{
	static const char *const paths[] = { "main;x;y;z", "main;w" };
	static const int64_t values[] = { 10, 1 };
	struct buf b;

	(void)state;
	assert_int_equal(dot_of(paths, values, 2, COUNT_TYPE, 3, 0, &b), 0);
	/* By cum: main 11, then x, y, z at 10 of which z has flat; then x, y by name. */
	HAS(&b, "N1 [label=\"main\\n");
	HAS(&b, "N2 [label=\"z\\n");
	HAS(&b, "N3 [label=\"x\\n");
	assert_int_equal(count(&b, "shape=box color"), 3);
	/* y dropped between x and z: a dashed edge; w's edge goes with it. */
	HAS(&b, "N1 -> N3 [label=\" 10\"");
	HAS(&b, "style=\"dashed\" tooltip=\"x -> z (10 count)\"");
	assert_int_equal(count(&b, " -> N"), 2);
	assert_int_equal(count(&b, "dashed"), 1);
	HAS(&b, "Showing nodes accounting for 10, 90.91% of 11 total\\l"
		"Dropped 2 nodes (cum <= 10)\\lShowing top 3 nodes out of 5\\l");
	/* Kept functions keep the values of the whole graph. */
	HAS(&b, "tooltip=\"x (flat 0, cum 10 count)\"");
	buf_release(&b);

	/* One node: a recursion through a dropped function draws no self edge. */
	{
		static const char *const rp[] = { "main;f;g;f" };
		static const int64_t rv[] = { 5 };

		assert_int_equal(dot_of(rp, rv, 1, COUNT_TYPE, 1, 0, &b), 0);
		HAS(&b, "N1 [label=\"f\\n5 (100.00%)\"");
		assert_int_equal(count(&b, " -> N"), 0);
		buf_release(&b);
	}
}

static void test_inline_edges(void **state)
{
	static const char *const paths[] = { "main;handle;helper", "main;serve;handle;helper",
					     "main;x;y" };
	static const int64_t values[] = { 30, 20, 5 };
	struct tfx_out x;

	(void)state;
	tfx_open(&x, paths, values, 3);
	/* helper inlined into handle on both paths; y only on its own. */
	x.t.nodes[tfx_node(&x.t, "main;handle;helper")].inlined = 1;
	x.t.nodes[tfx_node(&x.t, "main;serve;handle;helper")].inlined = 1;
	x.t.nodes[tfx_node(&x.t, "main;x;y")].inlined = 1;
	assert_int_equal(query__dot_write(&x.q, &x.t, COUNT_TYPE, 100, &x.b), 0);
	assert_int_equal(buf_putc(&x.b, '\0'), 0);
	HAS(&x.b, "[label=\" 50\\n (inline)\" weight=");
	HAS(&x.b, "[label=\" 5\\n (inline)\" weight=");
	assert_int_equal(count(&x.b, "(inline)"), 2);
	buf_reset(&x.b);
	/* One contribution not inlined: the edge is a call. */
	x.t.nodes[tfx_node(&x.t, "main;serve;handle;helper")].inlined = 0;
	assert_int_equal(query__dot_write(&x.q, &x.t, COUNT_TYPE, 100, &x.b), 0);
	assert_int_equal(buf_putc(&x.b, '\0'), 0);
	HAS(&x.b, "[label=\" 50\" weight=");
	assert_int_equal(count(&x.b, "(inline)"), 1);
	tfx_close(&x);
}

static void test_redundant_residual_edges(void **state)
{
	/* x is dropped: main -> b across it is redundant (main -> a -> b). */
	static const char *const paths[] = { "main;a;b", "main;x;b", "main;y;c" };
	static const int64_t values[] = { 10, 1, 2 };
	struct buf b;

	(void)state;
	/* Kept: main 13, b 11, a 10, c 2; x 1 and y 2 (less flat than c) dropped. */
	assert_int_equal(dot_of(paths, values, 3, COUNT_TYPE, 4, 0, &b), 0);
	HAS(&b, "tooltip=\"main -> a (10 count)\"");
	HAS(&b, "tooltip=\"a -> b (10 count)\"");
	assert_false(has(&b, "main -> b"));
	/* main -> c across y: nothing else reaches c, the dashed edge stays. */
	HAS(&b, "style=\"dashed\" tooltip=\"main -> c (2 count)\"");
	assert_int_equal(count(&b, " -> N"), 3);
	buf_release(&b);
}

/* Line by line: quotes balanced once escapes are skipped, no control bytes. */
static void assert_well_quoted(const struct buf *b)
{
	const char *p = b->data;
	int open = 0;

	assert_true(json_utf8_valid(b->data, strlen(b->data)));
	for (; *p; p++) {
		if (*p == '\n') {
			assert_false(open);
			continue;
		}
		assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
		if (open && *p == '\\') {
			assert_true(p[1] != '\0' && p[1] != '\n');
			p++;
		} else if (*p == '"') {
			open = !open;
		}
	}
	assert_false(open);
}

static void test_hostile_names(void **state)
{
	static const char *const paths[] = {
		"main;q\"uote;back\\slash", "main;new\nline\r", "main;\xff\xfe!",
		"main;\\N\\G\\l\\\"];evil\" -> x [", "main;del\x7f&#38",
	};
	static const int64_t values[] = { 1, 2, 3, 4, 5 };
	struct buf b;

	(void)state;
	assert_int_equal(dot_of(paths, values, 5, "t:s\"x:u\\y:p:u", 100, 0, &b), 0);
	assert_well_quoted(&b);
	/* Labels: a quote and a backslash escaped once, control bytes shown. */
	HAS(&b, "label=\"q\\\"uote\\n");
	HAS(&b, "label=\"back\\\\slash\\n");
	HAS(&b, "label=\"new\\\\x0aline\\\\x0d\\n");
	HAS(&b, "label=\"\xef\xbf\xbd\xef\xbf\xbd!\\n");
	HAS(&b, "label=\"\\\\N\\\\G\\\\l\\\\\\\"]\\n");
	HAS(&b, "label=\"evil\\\" -> x [\\n");
	HAS(&b, "label=\"del\\\\x7f&amp;#38\\n");
	HAS(&b, "Profile: t:s\\\"x:u\\\\y:p:u\\l");
	/* Tooltips: Graphviz unescapes them twice, a backslash is four. */
	HAS(&b, "tooltip=\"back\\\\\\\\slash (flat 1, cum 1 u\\\\\\\\y)\"");
	HAS(&b, "tooltip=\"\\\\\\\\N\\\\\\\\G");
	HAS(&b, "digraph \"unhex\" {");
	buf_release(&b);
}

static void test_units(void **state)
{
	static const char *const paths[] = { "main;s", "main;ms", "main;us", "main;h",
					     "main;min" };
	static const int64_t cpu[] = { 1500000000, 2000000, 1500, 7200000000000LL, 90000000000LL };
	static const char *const mpaths[] = { "main;mb", "main;kb", "main;b" };
	static const int64_t mem[] = { 3 * 1048576, 1536, 7 };
	struct buf b;

	(void)state;
	assert_int_equal(dot_of(paths, cpu, 5, CPU_TYPE, 100, 0, &b), 0);
	HAS(&b, "label=\"s\\n1.50s (");
	HAS(&b, "label=\"ms\\n2ms (");
	HAS(&b, "label=\"us\\n1.50us (");
	HAS(&b, "label=\"h\\n2h (");
	HAS(&b, "label=\"min\\n1.50min (");
	HAS(&b, "Type: cpu\\l");
	HAS(&b, "tooltip=\"s (flat 1500000000, cum 1500000000 nanoseconds)\"");
	buf_release(&b);
	assert_int_equal(dot_of(mpaths, mem, 3, "memory:inuse_space:bytes:space:bytes", 100, 0, &b),
			 0);
	HAS(&b, "label=\"mb\\n3MB (");
	HAS(&b, "label=\"kb\\n1.50kB (");
	HAS(&b, "label=\"b\\n7B (");
	HAS(&b, "label=\"main\\n0 (0.00%)\\nof 3MB (100.00%)\"");
	buf_release(&b);
}

static void test_deterministic(void **state)
{
	static const char *const fwd[] = { "main;a;b", "main;c;b", "main;a;d", "main;c" };
	static const char *const rev[] = { "main;c", "main;a;d", "main;c;b", "main;a;b" };
	static const int64_t vf[] = { 3, 3, 2, 2 };
	static const int64_t vr[] = { 2, 2, 3, 3 };
	struct buf x, y;

	(void)state;
	assert_int_equal(dot_of(fwd, vf, 4, COUNT_TYPE, 100, 0, &x), 0);
	assert_int_equal(dot_of(rev, vr, 4, COUNT_TYPE, 100, 0, &y), 0);
	assert_string_equal(x.data, y.data);
	buf_release(&x);
	buf_release(&y);
}

static void test_empty_and_budget(void **state)
{
	static const char *const paths[] = { "main;a" };
	static const int64_t zero[] = { 0 }, one[] = { 1 };
	struct tfx_out x;
	size_t used;

	(void)state;
	/* No samples: nothing at all, as Pyroscope's empty answer. */
	tfx_open(&x, paths, zero, 1);
	assert_int_equal(query__dot_write(&x.q, &x.t, COUNT_TYPE, 100, &x.b), 0);
	assert_int_equal(x.b.len, 0);
	query__tree_release(&x.q, &x.t);

	/* The graph's tables are charged to the query's budget. */
	tfx_tree(&x.q, &x.t, paths, one, 1);
	used = x.q.mem.used;
	x.q.mem.cap = used + 16;
	assert_int_equal(query__dot_write(&x.q, &x.t, COUNT_TYPE, 100, &x.b), ERR_TOO_LARGE);
	assert_int_equal(x.q.mem.used, used);
	x.q.mem.cap = QUERY_DEFAULT_MAX_BYTES;
	tfx_close(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_graph_exact),
		cmocka_unit_test(test_recursion_counted_once),
		cmocka_unit_test(test_trim_to_max_nodes),
		cmocka_unit_test(test_redundant_residual_edges),
		cmocka_unit_test(test_inline_edges),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_empty_and_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
