/*
 * dot.c - the encoder of Pyroscope's `format=dot`: the merged profile as a
 * Graphviz call graph of functions, the report `go tool pprof -dot` draws.
 *
 * The graph is computed from the whole (untruncated) name tree, which holds
 * every distinct stack of function names root first, inline frames
 * included as frames of their own:
 *
 *   flat(f)    the selves of the tree nodes named f;
 *   cum(f)     the totals of the nodes named f that have no ancestor named
 *              f, so a stack through a recursive f counts once;
 *   a -> b     the totals of the nodes named b whose nearest kept ancestor
 *              is named a (a != b), each stack counted once per edge even
 *              where the pair repeats on its path.
 *
 * That is, per sample, what pprof's graph counts: a tree node stands for all
 * the samples whose stack begins with its path, and both rules only look at
 * that path.  At most `max_nodes` functions are kept, by cum (then flat,
 * then name bytes, so the output is deterministic); their flat and cum are
 * those of the whole graph.  Where dropped functions sat between two kept
 * ones the edge joins the kept ones and is drawn dashed (pprof's "residual"
 * edge), and, as pprof does, such an edge is left out when the callee is
 * reached from the caller through other edges; the flat of a dropped leaf
 * is shown by no node.  An edge every
 * contribution of which is a call inlined by the compiler (the callee's
 * node is marked by build.c) is labelled "(inline)", as pprof does.
 *
 * Names come from clients: they are written inside DOT quoted strings with
 * `"` and `\` escaped (a `\` would otherwise start one of Graphviz's `\N`,
 * `\G`, `\l` escapes), `&` as `&amp;` (Graphviz reads HTML entities in
 * strings), control bytes shown as `\x..`, and bytes that are not
 * UTF-8 replaced by U+FFFD (Graphviz reads the file as UTF-8).  Values are
 * written in the profile's unit scaled (nanoseconds to ns/us/ms/s/min/h,
 * bytes to B/kB/MB/GB/TB by 1024, other units as plain integers) with
 * shares of the total, and exactly, unscaled, in every tooltip.
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- per-function values and edges ----------------------------------------- */

struct dfunc {
	int64_t flat, cum;
	uint32_t onpath;   /* nodes of this name on the current DFS path */
	uint32_t rank;     /* 1-based position among kept functions; 0 dropped */
};

struct dedge {
	uint32_t src, dst; /* name ids */
	int64_t w;
	uint32_t onpath;   /* times the pair is counted on the current path */
	uint8_t residual;  /* a contribution skipped dropped functions */
	uint8_t inlined;   /* every contribution was an inlined call */
	uint8_t counted;   /* it has a contribution */
	uint8_t removed;   /* a redundant residual edge, not drawn */
};

/* A DFS step: entering `node` (exit 0), or leaving it (exit 1). */
struct dstep {
	uint32_t node;
	uint32_t anc;      /* name of the nearest kept ancestor, QNONE at the top */
	uint32_t edge;     /* on exit: the edge its entry counted, or QNONE */
	uint8_t exit, res; /* res: a dropped function since anc */
};

struct dot {
	struct qctx *q;
	const struct qtree *t;
	struct dfunc *fn;
	size_t fn_cap;
	uint32_t *order;   /* name ids with a value, kept ones first */
	size_t order_cap, n_order, n_kept;
	struct dedge *e;
	size_t e_cap, n_e;
	uint32_t *eorder;  /* edges of nonzero weight, heaviest first */
	size_t eorder_cap, n_eorder;
	/* Pruning: in-edges per kept function (CSR by rank), a BFS queue and
	 * the BFS stamp of each rank. */
	uint32_t *in_start, *in, *queue, *seen;
	size_t in_start_cap, in_cap, queue_cap, seen_cap;
	struct qmap eidx;  /* src << 32 | dst -> index in e */
	struct dstep *st;
	size_t st_cap, n_st;
	unsigned steps;    /* DFS steps taken; the deadline is checked every 4096 */
	char *scratch;     /* a name made UTF-8 */
	size_t scratch_cap;
};

static void dot_release(struct dot *d)
{
	query__mem_free(d->q, d->fn, d->fn_cap, sizeof(*d->fn));
	query__mem_free(d->q, d->order, d->order_cap, sizeof(*d->order));
	query__mem_free(d->q, d->e, d->e_cap, sizeof(*d->e));
	query__mem_free(d->q, d->eorder, d->eorder_cap, sizeof(*d->eorder));
	query__mem_free(d->q, d->st, d->st_cap, sizeof(*d->st));
	query__mem_free(d->q, d->scratch, d->scratch_cap, 1);
	query__mem_free(d->q, d->in_start, d->in_start_cap, sizeof(*d->in_start));
	query__mem_free(d->q, d->in, d->in_cap, sizeof(*d->in));
	query__mem_free(d->q, d->queue, d->queue_cap, sizeof(*d->queue));
	query__mem_free(d->q, d->seen, d->seen_cap, sizeof(*d->seen));
	query__map_release(d->q, &d->eidx);
}

static int push(struct dot *d, struct dstep s)
{
	int rc = query__mem_grow(d->q, (void **)&d->st, &d->st_cap, sizeof(*d->st), d->n_st + 1,
				 "call graph walk");

	if (!rc)
		d->st[d->n_st++] = s;
	return rc;
}

/* Pushes the exit step of `s`, then the children of its node. */
static int descend(struct dot *d, struct dstep s, uint32_t anc, uint8_t res)
{
	int rc;

	s.exit = 1;
	rc = push(d, s);
	for (uint32_t k = d->t->nodes[s.node].first_child; k != QNONE && !rc;
	     k = d->t->nodes[k].next_sibling)
		rc = push(d, (struct dstep){ k, anc, QNONE, 0, res });
	return rc;
}

/* Pass 1, entering a node: flat and cum of its function. */
static int enter_function(struct dot *d, struct dstep s)
{
	const struct qnode *nd = &d->t->nodes[s.node];
	struct dfunc *f = &d->fn[nd->name];

	f->flat += nd->self[0];
	if (!f->onpath)
		f->cum += nd->total[0];
	f->onpath++;
	return descend(d, s, QNONE, 0);
}

static int64_t abs64(int64_t v)
{
	return v >= 0 ? v : v == INT64_MIN ? INT64_MAX : -v;
}

/* Byte order of two interned names, shorter first on a common prefix. */
static int cmp_names(const struct qtree *t, uint32_t x, uint32_t y)
{
	size_t lx = intern_len(&t->names, x), ly = intern_len(&t->names, y);
	int c = memcmp(intern_str(&t->names, x), intern_str(&t->names, y), lx < ly ? lx : ly);

	if (c)
		return c;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_i64_desc(int64_t x, int64_t y)
{
	return x > y ? -1 : x < y;
}

/* qsort has no context argument; a query sorts on one thread. */
static _Thread_local const struct dot *sorting;

static int cmp_func(const void *a, const void *b)
{
	const struct dot *d = sorting;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = cmp_i64_desc(abs64(d->fn[x].cum), abs64(d->fn[y].cum));

	if (!c)
		c = cmp_i64_desc(abs64(d->fn[x].flat), abs64(d->fn[y].flat));
	return c ? c : cmp_names(d->t, x, y);
}

static int cmp_edge(const void *a, const void *b)
{
	const struct dot *d = sorting;
	const struct dedge *x = &d->e[*(const uint32_t *)a], *y = &d->e[*(const uint32_t *)b];
	int c = cmp_i64_desc(abs64(x->w), abs64(y->w));

	if (!c)
		c = d->fn[x->src].rank < d->fn[y->src].rank ? -1 : d->fn[x->src].rank > d->fn[y->src].rank;
	if (!c)
		c = d->fn[x->dst].rank < d->fn[y->dst].rank ? -1 : d->fn[x->dst].rank > d->fn[y->dst].rank;
	return c;
}

/* The functions with a value, ranked; the first max_nodes are kept. */
static int select_functions(struct dot *d, size_t n_names, size_t max_nodes)
{
	int rc;

	for (size_t i = 0; i < n_names; i++) {
		if (!d->fn[i].flat && !d->fn[i].cum)
			continue;
		rc = query__mem_grow(d->q, (void **)&d->order, &d->order_cap, sizeof(*d->order),
				     d->n_order + 1, "call graph");
		if (rc)
			return rc;
		d->order[d->n_order++] = (uint32_t)i;
	}
	sorting = d;
	if (d->n_order)
		qsort(d->order, d->n_order, sizeof(*d->order), cmp_func);
	d->n_kept = d->n_order < max_nodes ? d->n_order : max_nodes;
	for (size_t i = 0; i < d->n_kept; i++)
		d->fn[d->order[i]].rank = (uint32_t)(i + 1);
	return 0;
}

/* Finds or adds the edge src -> dst; its index in *out. */
static int edge_get(struct dot *d, uint32_t src, uint32_t dst, uint32_t *out)
{
	uint64_t key = (uint64_t)src << 32 | dst;
	int rc;

	if (query__map_get(&d->eidx, key, out))
		return 0;
	rc = query__mem_grow(d->q, (void **)&d->e, &d->e_cap, sizeof(*d->e), d->n_e + 1,
			     "call graph edges");
	if (rc)
		return rc;
	d->e[d->n_e] = (struct dedge){ src, dst, 0, 0, 0, 0, 0, 0 };
	*out = (uint32_t)d->n_e++;
	return query__map_put(d->q, &d->eidx, key, *out);
}

/* Pass 2, entering a node: the edge from the nearest kept function above. */
static int enter_edge(struct dot *d, struct dstep s)
{
	const struct qnode *nd = &d->t->nodes[s.node];
	uint32_t name = nd->name;
	struct dedge *e;
	int rc;

	if (!d->fn[name].rank)
		return descend(d, s, s.anc, 1);
	if (s.anc != QNONE && s.anc != name) {
		rc = edge_get(d, s.anc, name, &s.edge);
		if (rc)
			return rc;
		e = &d->e[s.edge];
		if (!e->onpath) {
			e->w += nd->total[0];
			e->residual |= s.res;
			e->inlined = (uint8_t)(nd->inlined && (e->inlined || !e->counted));
			e->counted = 1;
		}
		e->onpath++;
	}
	return descend(d, s, name, 0);
}

/*
 * A depth-first walk of the whole tree: pass 1 (edges 0) sums the
 * functions, pass 2 the edges between the kept ones.  A step's exit undoes
 * what its entry put on the path.
 */
static int walk(struct dot *d, int edges)
{
	const struct qtree *t = d->t;
	int rc = 0;

	for (uint32_t k = t->nodes[0].first_child; k != QNONE && !rc; k = t->nodes[k].next_sibling)
		rc = push(d, (struct dstep){ k, QNONE, QNONE, 0, 0 });
	while (!rc && d->n_st) {
		struct dstep s = d->st[--d->n_st];

		if (s.exit && edges) {
			if (s.edge != QNONE)
				d->e[s.edge].onpath--;
		} else if (s.exit) {
			d->fn[t->nodes[s.node].name].onpath--;
		} else if (++d->steps % 4096 == 0 && (rc = query__ctx_check(d->q))) {
			break;
		} else {
			rc = edges ? enter_edge(d, s) : enter_function(d, s);
		}
	}
	return rc;
}

/* The edges of nonzero weight into d->eorder, heaviest first. */
static int order_edges(struct dot *d)
{
	int rc = 0;

	for (size_t i = 0; i < d->n_e && !rc; i++) {
		if (!d->e[i].w)
			continue;
		rc = query__mem_grow(d->q, (void **)&d->eorder, &d->eorder_cap, sizeof(*d->eorder),
				     d->n_eorder + 1, "call graph edges");
		if (!rc)
			d->eorder[d->n_eorder++] = (uint32_t)i;
	}
	sorting = d;
	if (!rc && d->n_eorder)
		qsort(d->eorder, d->n_eorder, sizeof(*d->eorder), cmp_edge);
	return rc;
}

/*
 * Whether `dst` (a rank) is reached from function `src` through kept edges
 * other than `skip`: a breadth-first walk up the in-edges from dst.  *work
 * counts the edges looked at.
 */
static int reached_otherwise(struct dot *d, uint32_t src, uint32_t dst, uint32_t skip,
			     uint32_t stamp, uint64_t *work)
{
	size_t head = 0, tail = 0;

	d->queue[tail++] = dst;
	d->seen[dst] = stamp;
	while (head < tail) {
		uint32_t n = d->queue[head++];

		for (uint32_t i = d->in_start[n]; i < d->in_start[n + 1]; i++) {
			const struct dedge *ie = &d->e[d->in[i]];
			uint32_t from = d->fn[ie->src].rank;

			++*work;
			if (d->in[i] == skip || ie->removed || d->seen[from] == stamp)
				continue;
			if (ie->src == src)
				return 1;
			d->seen[from] = stamp;
			d->queue[tail++] = from;
		}
	}
	return 0;
}

/* Edges looked at by the pruning of one graph; past it, the rest stay. */
enum { PRUNE_WORK = 50 * 1000 * 1000 };

/*
 * pprof's clean-up of a trimmed graph: a residual (dashed) edge is removed
 * when its callee can be reached from its caller through other edges.
 * From the least function up, each one's in-edges are tried lightest
 * first, stopping at the first that is a real call, so no edge heavier than
 * a kept call goes.
 */
static int prune_residual(struct dot *d)
{
	size_t k = d->n_kept;
	uint64_t work = 0;
	uint32_t stamp = 0;
	int rc;

	if ((rc = query__mem_grow(d->q, (void **)&d->in_start, &d->in_start_cap,
				  sizeof(*d->in_start), k + 2, "call graph pruning")) ||
	    (rc = query__mem_grow(d->q, (void **)&d->in, &d->in_cap, sizeof(*d->in),
				  d->n_eorder ? d->n_eorder : 1, "call graph pruning")) ||
	    (rc = query__mem_grow(d->q, (void **)&d->queue, &d->queue_cap, sizeof(*d->queue),
				  k + 1, "call graph pruning")) ||
	    (rc = query__mem_grow(d->q, (void **)&d->seen, &d->seen_cap, sizeof(*d->seen), k + 1,
				  "call graph pruning")))
		return rc;
	/* in[in_start[r] .. in_start[r + 1]): the in-edges of rank r, heaviest first. */
	memset(d->in_start, 0, (k + 2) * sizeof(*d->in_start));
	memset(d->seen, 0, (k + 1) * sizeof(*d->seen));
	for (size_t i = 0; i < d->n_eorder; i++)
		d->in_start[d->fn[d->e[d->eorder[i]].dst].rank]++;
	for (size_t r = 1; r <= k; r++)
		d->in_start[r] += d->in_start[r - 1];
	for (size_t i = d->n_eorder; i-- > 0;)
		d->in[--d->in_start[d->fn[d->e[d->eorder[i]].dst].rank]] = d->eorder[i];
	d->in_start[k + 1] = (uint32_t)d->n_eorder;
	for (uint32_t r = (uint32_t)k; r >= 1 && work < PRUNE_WORK; r--) {
		for (uint32_t i = d->in_start[r + 1]; i-- > d->in_start[r] && work < PRUNE_WORK;) {
			struct dedge *e = &d->e[d->in[i]];

			if (!e->residual)
				break;
			if (reached_otherwise(d, e->src, r, d->in[i], ++stamp, &work))
				e->removed = 1;
		}
		if ((rc = query__ctx_check(d->q)))
			return rc;
	}
	return 0;
}

/* ---- writing ------------------------------------------------------------------ */

enum vkind { V_COUNT, V_TIME, V_BYTES };

struct vunit {
	enum vkind kind;
	double to_base;    /* into nanoseconds or bytes */
	const char *name;  /* the profile's unit, for the exact values */
};

static struct vunit unit_of(const char *u)
{
	static const struct {
		const char *name;
		enum vkind kind;
		double to_base;
	} known[] = {
		{ "nanoseconds", V_TIME, 1 },	  { "ns", V_TIME, 1 },
		{ "microseconds", V_TIME, 1e3 },  { "us", V_TIME, 1e3 },
		{ "milliseconds", V_TIME, 1e6 },  { "ms", V_TIME, 1e6 },
		{ "seconds", V_TIME, 1e9 },	  { "s", V_TIME, 1e9 },
		{ "bytes", V_BYTES, 1 },	  { "b", V_BYTES, 1 },
		{ "kilobytes", V_BYTES, 1024 },	  { "megabytes", V_BYTES, 1048576 },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(u, known[i].name))
			return (struct vunit){ known[i].kind, known[i].to_base, u };
	return (struct vunit){ V_COUNT, 1, u };
}

/* Writes `v` scaled to its unit ("1.50s", "12MB", "42") into out[40]. */
static void fmt_value(const struct vunit *u, int64_t v, char *out)
{
	static const struct {
		double at;
		const char *suffix;
	} times[] = { { 3600e9, "h" }, { 60e9, "min" }, { 1e9, "s" },
		      { 1e6, "ms" },   { 1e3, "us" },   { 1, "ns" } },
	  sizes[] = { { 1125899906842624.0, "PB" }, { 1099511627776.0, "TB" },
		      { 1073741824.0, "GB" },	    { 1048576.0, "MB" },
		      { 1024.0, "kB" },		    { 1, "B" } };
	double x = (double)v * u->to_base, ax = fabs(x);
	const char *suffix = "";
	double div = 1;
	size_t n;

	if (u->kind == V_COUNT || !v) {
		snprintf(out, 40, "%lld", (long long)v);
		return;
	}
	for (size_t i = 0; i < 6; i++) {
		double at = u->kind == V_TIME ? times[i].at : sizes[i].at;

		if (ax >= at || i == 5) {
			div = at;
			suffix = u->kind == V_TIME ? times[i].suffix : sizes[i].suffix;
			break;
		}
	}
	n = (size_t)snprintf(out, 40, "%.2f", x / div);
	if (n > 3 && !strcmp(out + n - 3, ".00"))
		n -= 3;
	snprintf(out + n, 40 - n, "%s", suffix);
}

static double share(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)abs64(v) / (double)abs64(total) : 0.0;
}

/*
 * Appends the bytes of `s` (`len`) escaped for a DOT quoted string: a
 * label's (`tip` 0) or a tooltip's.  Graphviz reads a label's `\\` as one
 * backslash, but unescapes a tooltip twice (`\\N` there becomes `\N`, the
 * node's name), so a tooltip's backslash is written as four.
 */
static int put_escaped(struct dot *d, struct buf *out, const char *s, size_t len, int tip)
{
	const char *bs = tip ? "\\\\\\\\" : "\\\\";
	int rc = 0;

	if (!json_utf8_valid(s, len)) {
		rc = query__mem_grow(d->q, (void **)&d->scratch, &d->scratch_cap, 1, 3 * len + 1,
				     "call graph labels");
		if (rc)
			return rc;
		len = json_utf8_clean(s, len, d->scratch);
		s = d->scratch;
	}
	for (size_t i = 0; i < len && !rc; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"')
			rc = buf_puts(out, "\\\"");
		else if (c == '&')
			rc = buf_puts(out, "&amp;");
		else if (c == '\\')
			rc = buf_puts(out, bs);
		else if (c < 0x20 || c == 0x7f)
			rc = buf_printf(out, "%sx%02x", bs, c);
		else
			rc = buf_putc(out, (char)c);
	}
	return rc;
}

static int put_name(struct dot *d, struct buf *out, uint32_t name, int tip)
{
	return put_escaped(d, out, intern_str(&d->t->names, name), intern_len(&d->t->names, name),
			   tip);
}

/* Red in proportion to the share `s` (0..1) of the total, grey at 0. */
static void color(double s, int fill, char *out)
{
	int base = fill ? 0xed : 0xb2, low = fill ? 0xd5 : 0x00;
	int gb = base - (int)lround((base - low) * (s > 1 ? 1 : s));

	snprintf(out, 8, "#%02x%02x%02x", base, gb, gb);
}

static int write_legend(struct dot *d, const char *profile_type, const char *type,
			const struct vunit *u, int64_t total, struct buf *out)
{
	char v[40], tv[40], c[40];
	int64_t shown = 0, dropped_cum = 0;
	int rc;

	for (size_t i = 0; i < d->n_kept; i++)
		shown += d->fn[d->order[i]].flat;
	for (size_t i = d->n_kept; i < d->n_order; i++)
		if (abs64(d->fn[d->order[i]].cum) > dropped_cum)
			dropped_cum = abs64(d->fn[d->order[i]].cum);
	fmt_value(u, shown, v);
	fmt_value(u, total, tv);
	rc = buf_puts(out, "subgraph cluster_L { \"legend\" [shape=box fontsize=16 label=\"Type: ");
	if (!rc)
		rc = put_escaped(d, out, type, strlen(type), 0);
	if (!rc)
		rc = buf_puts(out, "\\lProfile: ");
	if (!rc)
		rc = put_escaped(d, out, profile_type, strlen(profile_type), 0);
	if (!rc)
		rc = buf_printf(out, "\\lShowing nodes accounting for %s, %.2f%% of %s total\\l", v,
				share(shown, total), tv);
	if (!rc && d->n_kept < d->n_order) {
		fmt_value(u, dropped_cum, c);
		rc = buf_printf(out, "Dropped %zu nodes (cum <= %s)\\lShowing top %zu nodes out of %zu\\l",
				d->n_order - d->n_kept, c, d->n_kept, d->n_order);
	}
	if (!rc)
		rc = buf_printf(out, "\" tooltip=\"total %lld ", (long long)total);
	if (!rc)
		rc = put_escaped(d, out, u->name, strlen(u->name), 1);
	if (!rc)
		rc = buf_puts(out, "\"] }\n");
	return rc;
}

static int write_node(struct dot *d, uint32_t name, const struct vunit *u, int64_t total,
		      int64_t max_flat, struct buf *out)
{
	const struct dfunc *f = &d->fn[name];
	char fv[40], cv[40], col[8], fill[8];
	double s = total ? (double)abs64(f->cum) / (double)abs64(total) : 0;
	int size = 8 + (int)lround(32 * sqrt(max_flat ? (double)abs64(f->flat) / (double)max_flat : 0));
	int rc;

	fmt_value(u, f->flat, fv);
	fmt_value(u, f->cum, cv);
	color(s, 0, col);
	color(s, 1, fill);
	rc = buf_printf(out, "N%u [label=\"", f->rank);
	if (!rc)
		rc = put_name(d, out, name, 0);
	if (!rc)
		rc = buf_printf(out, "\\n%s (%.2f%%)", fv, share(f->flat, total));
	if (!rc && f->cum != f->flat)
		rc = buf_printf(out, "\\nof %s (%.2f%%)", cv, share(f->cum, total));
	if (!rc)
		rc = buf_printf(out, "\" id=\"node%u\" fontsize=%d shape=box color=\"%s\" "
				     "fillcolor=\"%s\" tooltip=\"",
				f->rank, size, col, fill);
	if (!rc)
		rc = put_name(d, out, name, 1);
	if (!rc)
		rc = buf_printf(out, " (flat %lld, cum %lld ", (long long)f->flat, (long long)f->cum);
	if (!rc)
		rc = put_escaped(d, out, u->name, strlen(u->name), 1);
	if (!rc)
		rc = buf_puts(out, ")\"]\n");
	return rc;
}

static int write_edge(struct dot *d, const struct dedge *e, const struct vunit *u, int64_t total,
		      struct buf *out)
{
	char wv[40], col[8];
	double s = total ? (double)abs64(e->w) / (double)abs64(total) : 0;
	int rc;

	fmt_value(u, e->w, wv);
	color(s, 0, col);
	rc = buf_printf(out, "N%u -> N%u [label=\" %s%s\" weight=%d penwidth=%.2f color=\"%s\"%s tooltip=\"",
			d->fn[e->src].rank, d->fn[e->dst].rank, wv, e->inlined ? "\\n (inline)" : "",
			1 + (int)lround(99 * s), 1 + 4 * s, col,
			e->residual ? " style=\"dashed\"" : "");
	if (!rc)
		rc = put_name(d, out, e->src, 1);
	if (!rc)
		rc = buf_puts(out, " -> ");
	if (!rc)
		rc = put_name(d, out, e->dst, 1);
	if (!rc)
		rc = buf_printf(out, " (%lld ", (long long)e->w);
	if (!rc)
		rc = put_escaped(d, out, u->name, strlen(u->name), 1);
	if (!rc)
		rc = buf_puts(out, ")\"]\n");
	return rc;
}

static int write_graph(struct dot *d, const char *profile_type, struct buf *out)
{
	int64_t total = d->t->nodes[0].total[0], max_flat = 0;
	const char *parts[5], *type = profile_type;
	char tmp[1024];
	struct vunit u = unit_of("");
	int rc;

	if (!query__profile_type_split(profile_type, tmp, sizeof(tmp), parts)) {
		type = parts[1];
		u = unit_of(parts[2]);
	}
	for (size_t i = 0; i < d->n_kept; i++)
		if (abs64(d->fn[d->order[i]].flat) > max_flat)
			max_flat = abs64(d->fn[d->order[i]].flat);
	/* The graph's ID is no escString: a fixed one, the type is in the legend. */
	rc = buf_puts(out, "digraph \"unhex\" {\nnode [style=filled fillcolor=\"#f8f8f8\"]\n");
	if (!rc)
		rc = write_legend(d, profile_type, type, &u, total, out);
	for (size_t i = 0; i < d->n_kept && !rc; i++)
		rc = write_node(d, d->order[i], &u, total, max_flat, out);
	for (size_t i = 0; i < d->n_eorder && !rc; i++)
		if (!d->e[d->eorder[i]].removed)
			rc = write_edge(d, &d->e[d->eorder[i]], &u, total, out);
	if (!rc)
		rc = buf_puts(out, "}\n");
	return rc;
}

int query__dot_write(struct qctx *q, const struct qtree *t, const char *profile_type,
		     size_t max_nodes, struct buf *out)
{
	size_t n_names = intern_count(&t->names);
	struct dot d;
	int rc;

	if (!t->n || !t->nodes[0].total[0])
		return 0;
	memset(&d, 0, sizeof(d));
	d.q = q;
	d.t = t;
	query__map_init(&d.eidx);
	rc = query__mem_grow(q, (void **)&d.fn, &d.fn_cap, sizeof(*d.fn), n_names, "call graph");
	if (!rc) {
		memset(d.fn, 0, n_names * sizeof(*d.fn));
		rc = walk(&d, 0);
	}
	if (!rc)
		rc = select_functions(&d, n_names, max_nodes ? max_nodes : 1);
	if (!rc)
		rc = walk(&d, 1);
	if (!rc)
		rc = order_edges(&d);
	if (!rc && d.n_kept)
		rc = prune_residual(&d);
	if (!rc)
		rc = write_graph(&d, profile_type, out);
	dot_release(&d);
	return rc;
}
