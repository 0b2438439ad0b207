/*
 * top.c - the text outputs of the CLI's query routes: the top table (self
 * and total per function name), folded stacks ("a;b;c value"), and the
 * diff-top table of two selections.
 *
 * The rows of a top table are computed from the whole tree as typed values
 * (struct row) and then written; diff-top joins the rows of its two trees
 * by name.  A function's total counts each stack once even when the
 * function recurses: a node adds its total only when its name is not
 * already on the path above.
 */
#include "query/query_int.h"

#include "base/buf.h"
#include "base/err.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---- DFS over a tree, children in name order ------------------------------ */

struct frame {
	uint32_t node;
	uint32_t depth;
	int exit;
};

struct dfs {
	struct qctx *q;
	const struct qtree *t;
	struct frame *v;
	size_t n, cap;
	struct query__kids kids;
};

static int dfs_push(struct dfs *d, uint32_t node, uint32_t depth, int exit)
{
	int rc = query__mem_grow(d->q, (void **)&d->v, &d->cap, sizeof(*d->v), d->n + 1,
				 "tree walk");

	if (!rc)
		d->v[d->n++] = (struct frame){ node, depth, exit };
	return rc;
}

/* Pushes the children of `node` so that they pop in name order. */
static int push_children(struct dfs *d, uint32_t node, uint32_t depth)
{
	const uint32_t *kids;
	size_t nk;
	int rc = query__tree_sorted_children(d->q, d->t, node, &d->kids, &kids, &nk);

	for (size_t i = nk; i-- > 0 && !rc;)
		rc = dfs_push(d, kids[i], depth, 0);
	return rc;
}

static void dfs_release(struct dfs *d)
{
	query__mem_free(d->q, d->v, d->cap, sizeof(*d->v));
	query__kids_release(d->q, &d->kids);
}

/* ---- rows ------------------------------------------------------------------- */

struct row {
	const char *name;   /* borrowed from the tree */
	uint32_t len;
	uint32_t id;        /* name id in its tree: the order of equal keys */
	int64_t self[2];    /* side 1: diff-top's comparison */
	int64_t total[2];
	double dself, dtotal; /* diff-top: comparison minus baseline */
};

struct rows {
	struct qctx *q;
	struct row *v;
	size_t n, cap;
};

static void rows_release(struct rows *r)
{
	query__mem_free(r->q, r->v, r->cap, sizeof(*r->v));
}

/*
 * Appends to `r` one row per function name of `t` with a self or total
 * (on `side`), in name id order; *sum is the sum of their selves.
 */
static int top_rows(struct qctx *q, const struct qtree *t, int side, struct rows *r,
		    int64_t *sum)
{
	struct dfs d = { q, t, NULL, 0, 0, { 0 } };
	struct row *by = NULL;
	uint32_t *onpath = NULL;
	size_t bcap = 0, ocap = 0, first = r->n;
	int rc;

	*sum = 0;
	if ((rc = query__mem_grow(q, (void **)&by, &bcap, sizeof(*by), t->names.n, "top table")) ||
	    (rc = query__mem_grow(q, (void **)&onpath, &ocap, sizeof(*onpath), t->names.n,
				  "top table")))
		goto out;
	memset(by, 0, t->names.n * sizeof(*by));
	memset(onpath, 0, t->names.n * sizeof(*onpath));
	rc = push_children(&d, 0, 1);
	while (!rc && d.n) {
		struct frame f = d.v[--d.n];
		const struct qnode *nd = &t->nodes[f.node];

		if (f.exit) {
			onpath[nd->name]--;
			continue;
		}
		by[nd->name].self[0] += nd->self[0];
		if (!onpath[nd->name])
			by[nd->name].total[0] += nd->total[0];
		onpath[nd->name]++;
		rc = dfs_push(&d, f.node, f.depth, 1);
		if (!rc)
			rc = push_children(&d, f.node, f.depth + 1);
	}
	for (size_t i = 0; i < t->names.n && !rc; i++) {
		struct row *w;

		if (!by[i].total[0] && !by[i].self[0])
			continue;
		rc = query__mem_grow(q, (void **)&r->v, &r->cap, sizeof(*r->v), r->n + 1,
				     "top table");
		if (rc)
			break;
		w = &r->v[r->n++];
		memset(w, 0, sizeof(*w));
		w->name = t->names.s[i];
		w->len = t->names.len[i];
		w->id = (uint32_t)i;
		w->self[side] = by[i].self[0];
		w->total[side] = by[i].total[0];
		*sum += w->self[side];
	}
	if (rc)
		r->n = first;
out:
	dfs_release(&d);
	query__mem_free(q, by, bcap, sizeof(*by));
	query__mem_free(q, onpath, ocap, sizeof(*onpath));
	return rc;
}

/* ---- top ---------------------------------------------------------------------- */

static int cmp_keys(int64_t kx, int64_t ky, uint32_t nx, uint32_t ny)
{
	if (kx != ky)
		return kx < ky ? 1 : -1;
	return nx < ny ? -1 : nx > ny;
}

static int cmp_self(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return cmp_keys(x->self[0], y->self[0], x->id, y->id);
}

static int cmp_total(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return cmp_keys(x->total[0], y->total[0], x->id, y->id);
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

int query__top_write(struct qctx *q, const struct qtree *t, enum query_top_sort sort,
		     size_t limit, struct buf *out)
{
	struct rows r = { q, NULL, 0, 0 };
	int64_t all = t->nodes[0].total[0], sum;
	size_t n;
	int rc = top_rows(q, t, 0, &r, &sum);

	if (rc)
		goto out;
	if (r.n)
		qsort(r.v, r.n, sizeof(*r.v), sort == QUERY_TOP_BY_TOTAL ? cmp_total : cmp_self);
	n = limit && r.n > limit ? limit : r.n;
	rc = buf_printf(out, "%14s %7s %14s %7s  %s\n", "self", "self%", "total", "total%", "name");
	for (size_t i = 0; i < n && !rc; i++)
		rc = buf_printf(out, "%14lld %6.2f%% %14lld %6.2f%%  %.*s\n",
				(long long)r.v[i].self[0], pct(r.v[i].self[0], all),
				(long long)r.v[i].total[0], pct(r.v[i].total[0], all),
				(int)r.v[i].len, r.v[i].name);
out:
	rows_release(&r);
	return rc;
}

/* ---- folded ---------------------------------------------------------------------- */

int query__folded_write(struct qctx *q, const struct qtree *t, struct buf *out)
{
	struct dfs d = { q, t, NULL, 0, 0, { 0 } };
	uint32_t *path = NULL;
	size_t pcap = 0;
	int rc = push_children(&d, 0, 0);

	while (!rc && d.n) {
		struct frame f = d.v[--d.n];
		const struct qnode *nd = &t->nodes[f.node];

		rc = query__mem_grow(q, (void **)&path, &pcap, sizeof(*path), (size_t)f.depth + 1,
				     "tree walk");
		if (rc)
			break;
		path[f.depth] = nd->name;
		if (nd->self[0]) {
			for (uint32_t i = 0; i <= f.depth && !rc; i++) {
				if (i)
					rc = buf_putc(out, ';');
				if (!rc)
					rc = buf_append(out, t->names.s[path[i]], t->names.len[path[i]]);
			}
			if (!rc)
				rc = buf_printf(out, " %lld\n", (long long)nd->self[0]);
		}
		if (!rc)
			rc = push_children(&d, f.node, f.depth + 1);
	}
	query__mem_free(q, path, pcap, sizeof(*path));
	dfs_release(&d);
	return rc;
}

/* ---- diff-top -------------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static double mag(double v)
{
	return v < 0 ? -v : v;
}

/* Largest change of self first, then of total, then by name. */
static int cmp_change(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (mag(x->dself) != mag(y->dself))
		return mag(x->dself) < mag(y->dself) ? 1 : -1;
	if (mag(x->dtotal) != mag(y->dtotal))
		return mag(x->dtotal) < mag(y->dtotal) ? 1 : -1;
	return cmp_name(a, b);
}

/* Merges the rows of the same name (one per side at most) and computes the changes. */
static size_t join_rows(struct rows *r, int64_t lsum, int64_t rsum, int relative)
{
	double ls = 1, rs = 1;
	size_t n = 0;

	if (r->n)
		qsort(r->v, r->n, sizeof(*r->v), cmp_name);
	for (size_t i = 0; i < r->n; i++) {
		if (n && !cmp_name(&r->v[n - 1], &r->v[i])) {
			for (int s = 0; s < 2; s++) {
				r->v[n - 1].self[s] += r->v[i].self[s];
				r->v[n - 1].total[s] += r->v[i].total[s];
			}
			continue;
		}
		r->v[n++] = r->v[i];
	}
	if (relative) {
		ls = lsum ? 100.0 / (double)lsum : 0;
		rs = rsum ? 100.0 / (double)rsum : 0;
	}
	for (size_t i = 0; i < n; i++) {
		r->v[i].dself = (double)r->v[i].self[1] * rs - (double)r->v[i].self[0] * ls;
		r->v[i].dtotal = (double)r->v[i].total[1] * rs - (double)r->v[i].total[0] * ls;
	}
	if (n)
		qsort(r->v, n, sizeof(*r->v), cmp_change);
	return n;
}

static int put_diff_rows(struct buf *out, const struct rows *r, size_t n, int64_t lsum,
			 int64_t rsum, int relative)
{
	double l = lsum ? 100.0 / (double)lsum : 0, c = rsum ? 100.0 / (double)rsum : 0;
	int rc = buf_printf(out, "# mode %s; baseline total %lld, comparison total %lld\n",
			    relative ? "relative" : "absolute", (long long)lsum, (long long)rsum);

	if (!rc)
		rc = buf_printf(out, "%14s %14s %14s %14s %14s %14s  %s\n", "base_self",
				"comp_self", "delta_self", "base_total", "comp_total",
				"delta_total", relative ? "name (values in % of each side's total)"
							: "name");
	for (size_t i = 0; i < n && !rc; i++) {
		const struct row *w = &r->v[i];
		const char *tag = !w->total[0] ? " [new]" : !w->total[1] ? " [removed]" : "";

		if (relative)
			rc = buf_printf(out, "%13.4f%% %13.4f%% %+13.4f%% %13.4f%% %13.4f%% "
					     "%+13.4f%%  %.*s%s\n",
					(double)w->self[0] * l, (double)w->self[1] * c, w->dself,
					(double)w->total[0] * l, (double)w->total[1] * c, w->dtotal,
					(int)w->len, w->name, tag);
		else
			rc = buf_printf(out, "%14lld %14lld %+14lld %14lld %14lld %+14lld  %.*s%s\n",
					(long long)w->self[0], (long long)w->self[1],
					(long long)(w->self[1] - w->self[0]), (long long)w->total[0],
					(long long)w->total[1], (long long)(w->total[1] - w->total[0]),
					(int)w->len, w->name, tag);
	}
	return rc;
}

int query__diff_top_write(struct qctx *q, const struct qtree *l, const struct qtree *r,
			  enum query_diff_mode mode, size_t limit, struct buf *out)
{
	struct rows rows = { q, NULL, 0, 0 };
	int64_t lsum, rsum;
	int relative = mode == QUERY_DIFF_RELATIVE, rc;
	size_t n;

	assert(mode == QUERY_DIFF_RELATIVE || mode == QUERY_DIFF_ABSOLUTE);
	rc = top_rows(q, l, 0, &rows, &lsum);
	if (!rc)
		rc = top_rows(q, r, 1, &rows, &rsum);
	if (!rc) {
		n = join_rows(&rows, lsum, rsum, relative);
		if (limit && limit < n)
			n = limit;
		rc = put_diff_rows(out, &rows, n, lsum, rsum, relative);
	}
	rows_release(&rows);
	return rc;
}
