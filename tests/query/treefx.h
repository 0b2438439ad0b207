/*
 * treefx.h - call trees built by hand for the unit tests of the tree, its
 * truncation and its encoders: a query context without a store, and
 * "root;caller;callee" paths added with a value on one side.
 */
#ifndef UNHEX_TESTS_QUERY_TREEFX_H
#define UNHEX_TESTS_QUERY_TREEFX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "query/query_int.h"

/* A query context with no store: enough for trees and encoders. */
static inline void tfx_ctx(struct qctx *q, struct err_msg *msg, size_t max_bytes)
{
	struct query_limits lim = { 0 };

	lim.max_bytes = max_bytes;
	err_clear(msg);
	query__ctx_init(q, NULL, "t", &lim, msg);
}

/* Adds `v` to the self of the node of `path` ("a;b;c") on `side`; 0 or an error. */
static inline int tfx_add(struct qctx *q, struct qtree *t, const char *path, int64_t v, int side)
{
	uint32_t node = 0, name;
	const char *p = path;
	int rc = 0;

	while (*p && !rc) {
		size_t n = strcspn(p, ";");

		rc = query__names_intern(q, &t->names, p, n, &name);
		if (!rc)
			rc = query__tree_child(q, t, node, name, &node);
		p += n;
		if (*p == ';')
			p++;
	}
	if (!rc)
		t->nodes[node].self[side] += v;
	return rc;
}

/*
 * Adds up to `n` one-frame paths "f0", "f1", ... of self 1 on side 0 to
 * t until one fails (a tight budget): 0, or that code.
 */
static inline int tfx_flat(struct qctx *q, struct qtree *t, int n)
{
	char path[32];
	int rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		snprintf(path, sizeof(path), "f%d", i);
		rc = tfx_add(q, t, path, 1, 0);
	}
	return rc;
}

/* A tree of `n` (path, value) pairs on side 0, totals set; aborts the test on failure. */
static inline void tfx_tree(struct qctx *q, struct qtree *t, const char *const *paths,
			    const int64_t *values, size_t n)
{
	if (query__tree_init(q, t))
		abort();
	for (size_t i = 0; i < n; i++)
		if (tfx_add(q, t, paths[i], values[i], 0))
			abort();
	query__tree_totals(t);
}

/* tfx_ctx() without a budget and tfx_tree() of the pairs in *t. */
static inline void tfx_start(struct qctx *q, struct err_msg *msg, struct qtree *t,
			     const char *const *paths, const int64_t *values, size_t n)
{
	tfx_ctx(q, msg, 0);
	tfx_tree(q, t, paths, values, n);
}

/* Releases t, the last tree of q: every byte charged to q is returned. */
#define tfx_end(q, t)                                      \
	do {                                               \
		query__tree_release((q), (t));             \
		assert_int_equal((q)->mem.used, 0);        \
	} while (0)

/* What a test of a text writer holds: a context without a budget, one
 * hand-built tree and an output buffer (capped at 1 MiB). */
struct tfx_out {
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	struct buf b;
};

/* tfx_start() of the pairs into x->t, and x->b empty. */
static inline void tfx_open(struct tfx_out *x, const char *const *paths, const int64_t *values,
			    size_t n)
{
	tfx_start(&x->q, &x->msg, &x->t, paths, values, n);
	buf_init(&x->b, 1 << 20);
}

/* Releases x->b and, as tfx_end(), the tree. */
#define tfx_close(x)                                       \
	do {                                               \
		buf_release(&(x)->b);                      \
		tfx_end(&(x)->q, &(x)->t);                 \
	} while (0)

/* The two sides of the diff tests, {main;a 2, main;b 3} and {main;b 1, c 4}. */
static const char *const tfx_lp[] = { "main;a", "main;b" };
static const int64_t tfx_lv[] = { 2, 3 };
static const char *const tfx_rp[] = { "main;b", "c" };
static const int64_t tfx_rv[] = { 1, 4 };

/* A context without a budget, the diff tests' two sides in l and r, their diff in d. */
static inline void tfx_diff(struct qctx *q, struct err_msg *msg, struct qtree *l, struct qtree *r,
			    struct qtree *d)
{
	tfx_ctx(q, msg, 0);
	tfx_tree(q, l, tfx_lp, tfx_lv, 2);
	tfx_tree(q, r, tfx_rp, tfx_rv, 2);
	if (query__tree_diff(q, l, r, d))
		abort();
}

/* Releases the trees of tfx_diff(): every byte charged to q is returned. */
#define tfx_diff_end(q, l, r, d)                           \
	do {                                               \
		query__tree_release((q), (d));             \
		query__tree_release((q), (l));             \
		query__tree_release((q), (r));             \
		assert_int_equal((q)->mem.used, 0);        \
	} while (0)

/* The id of the child of `parent` named `name`, or QNONE. */
static inline uint32_t tfx_child(const struct qtree *t, uint32_t parent, const char *name)
{
	for (uint32_t c = t->nodes[parent].first_child; c != QNONE; c = t->nodes[c].next_sibling)
		if (intern_len(&t->names, t->nodes[c].name) == strlen(name) &&
		    !memcmp(intern_str(&t->names, t->nodes[c].name), name, strlen(name)))
			return c;
	return QNONE;
}

/* The node of `path` ("a;b"), or QNONE. */
static inline uint32_t tfx_node(const struct qtree *t, const char *path)
{
	char name[256];
	uint32_t node = 0;
	const char *p = path;

	while (*p && node != QNONE) {
		size_t n = strcspn(p, ";");

		memcpy(name, p, n);
		name[n] = '\0';
		node = tfx_child(t, node, name);
		p += n;
		if (*p == ';')
			p++;
	}
	return node;
}

#endif
