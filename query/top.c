/*
 * top.c - text outputs for the CLI: the top table (self and total per
 * function name) and folded stacks ("a;b;c value").
 *
 * A function's total counts each stack once even when the function recurses:
 * a node adds its total only when its name is not already on the path above.
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

struct frame {
	uint32_t node;
	uint32_t depth;
	int exit;
};

struct dfs {
	struct frame *v;
	size_t n, cap;
};

static int dfs_push(struct dfs *d, uint32_t node, uint32_t depth, int exit)
{
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 256;
		struct frame *nv = realloc(d->v, nc * sizeof(*nv));

		if (!nv)
			return ERR_NOMEM;
		d->v = nv;
		d->cap = nc;
	}
	d->v[d->n++] = (struct frame){ node, depth, exit };
	return 0;
}

/* Pushes the children of `node` so that they pop in name order. */
static int push_children(const struct qtree *t, struct dfs *d, uint32_t node, uint32_t depth)
{
	uint32_t *kids;
	size_t nk;
	int rc = qtree_sorted_children(t, node, &kids, &nk);

	for (size_t i = nk; i-- > 0 && !rc;)
		rc = dfs_push(d, kids[i], depth, 0);
	free(kids);
	return rc;
}

struct row {
	uint32_t name;
	int64_t self, total;
};

static int cmp_keys(int64_t kx, int64_t ky, uint32_t nx, uint32_t ny)
{
	if (kx != ky)
		return kx < ky ? 1 : -1;
	return nx < ny ? -1 : nx > ny;
}

static int cmp_self(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return cmp_keys(x->self, y->self, x->name, y->name);
}

static int cmp_total(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return cmp_keys(x->total, y->total, x->name, y->name);
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static int top_encode(const struct qtree *t, enum query_top_sort sort, size_t limit,
		      struct buf *out)
{
	struct row *rows = calloc(t->names.n, sizeof(*rows));
	uint32_t *onpath = calloc(t->names.n, sizeof(*onpath));
	struct dfs d = { 0 };
	int64_t all = t->nodes[0].total[0];
	size_t nrows = 0;
	int rc = 0;

	if (!rows || !onpath) {
		rc = ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < t->names.n; i++)
		rows[i].name = (uint32_t)i;
	rc = push_children(t, &d, 0, 1);
	while (!rc && d.n) {
		struct frame f = d.v[--d.n];
		const struct qnode *nd = &t->nodes[f.node];

		if (f.exit) {
			onpath[nd->name]--;
			continue;
		}
		rows[nd->name].self += nd->self[0];
		if (!onpath[nd->name])
			rows[nd->name].total += nd->total[0];
		onpath[nd->name]++;
		rc = dfs_push(&d, f.node, f.depth, 1);
		if (!rc)
			rc = push_children(t, &d, f.node, f.depth + 1);
	}
	if (rc)
		goto out;
	for (size_t i = 0; i < t->names.n; i++)
		if (rows[i].total || rows[i].self)
			rows[nrows++] = rows[i];
	qsort(rows, nrows, sizeof(*rows), sort == QUERY_TOP_BY_TOTAL ? cmp_total : cmp_self);
	if (limit && nrows > limit)
		nrows = limit;
	rc = buf_printf(out, "%14s %7s %14s %7s  %s\n", "self", "self%", "total", "total%", "name");
	for (size_t i = 0; i < nrows && !rc; i++)
		rc = buf_printf(out, "%14lld %6.2f%% %14lld %6.2f%%  %.*s\n",
				(long long)rows[i].self, pct(rows[i].self, all),
				(long long)rows[i].total, pct(rows[i].total, all),
				(int)t->names.len[rows[i].name], t->names.s[rows[i].name]);
out:
	free(rows);
	free(onpath);
	free(d.v);
	return rc;
}

static int folded_encode(const struct qtree *t, struct buf *out)
{
	struct dfs d = { 0 };
	uint32_t *path = NULL;
	size_t pcap = 0;
	int rc = push_children(t, &d, 0, 0);

	while (!rc && d.n) {
		struct frame f = d.v[--d.n];
		const struct qnode *nd = &t->nodes[f.node];

		if (f.depth >= pcap) {
			size_t nc = pcap ? pcap * 2 : 64;
			uint32_t *np = realloc(path, nc * sizeof(*np));

			if (!np) {
				rc = ERR_NOMEM;
				break;
			}
			path = np;
			pcap = nc;
		}
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
			rc = push_children(t, &d, f.node, f.depth + 1);
	}
	free(path);
	free(d.v);
	return rc;
}

static int run_full(struct store *st, const char *tenant, const struct query_params *p,
		    int which, enum query_top_sort sort, size_t limit, struct buf *out,
		    struct err_msg *msg)
{
	struct qctx q;
	struct qmerge m;
	struct qtree t;
	int rc;

	qctx_init(&q, st, tenant, &p->limits, msg);
	qmerge_init(&m);
	rc = qtree_init(&q, &t);
	if (rc)
		goto out_m;
	rc = qquery_tree(&q, p, &m, &t, NULL);
	if (!rc)
		rc = which ? folded_encode(&t, out) : top_encode(&t, sort, limit, out);
	if (rc == ERR_TOO_LARGE || rc == ERR_NOMEM)
		err_set(msg, rc, "encoding the response: %s", err_str(rc));
	qtree_release(&q, &t);
out_m:
	qmerge_release(&q, &m);
	return rc;
}

int query_top(struct store *st, const char *tenant, const struct query_params *p,
	      enum query_top_sort sort, size_t limit, struct buf *out, struct err_msg *msg)
{
	return run_full(st, tenant, p, 0, sort, limit, out, msg);
}

int query_folded(struct store *st, const char *tenant, const struct query_params *p,
		 struct buf *out, struct err_msg *msg)
{
	return run_full(st, tenant, p, 1, QUERY_TOP_BY_SELF, 0, out, msg);
}
