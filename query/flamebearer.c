/*
 * flamebearer.c - Pyroscope flamebearer JSON: the "single" form of
 * /pyroscope/render and the "double" (diff) form of /pyroscope/render-diff.
 *
 * Levels hold the tree in DFS pre-order, one array per depth; each node is
 * [x, total, self, name] (or [lx, ltotal, lself, rx, rtotal, rself, name]),
 * where x is the node's left offset minus the right end of the previous node
 * of the same level (delta encoding).  Children of a node are ordered by name
 * and start at the node's own left offset.
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

struct ent {
	uint32_t depth;
	uint32_t node;
	int64_t x[2];
};

struct dfs_item {
	uint32_t node;
	uint32_t depth;
	int64_t x[2];
};

static int64_t sides_total(const struct qnode *n)
{
	return n->total[0] + n->total[1];
}

/* Flattens the tree in DFS pre-order with absolute offsets. */
static int flatten(const struct qtree *t, struct ent **out, size_t *n_out, uint32_t *max_depth)
{
	struct dfs_item *st = NULL;
	struct ent *e = NULL;
	size_t sn = 0, scap = 0, en = 0;
	int rc = 0;

	*max_depth = 0;
	e = malloc(t->n * sizeof(*e));
	scap = 64;
	st = malloc(scap * sizeof(*st));
	if (!e || !st) {
		rc = ERR_NOMEM;
		goto out;
	}
	st[sn++] = (struct dfs_item){ 0, 0, { 0, 0 } };
	while (sn) {
		struct dfs_item it = st[--sn];
		uint32_t *kids;
		size_t nk;
		int64_t x[2];

		e[en++] = (struct ent){ it.depth, it.node, { it.x[0], it.x[1] } };
		if (it.depth > *max_depth)
			*max_depth = it.depth;
		rc = qtree_sorted_children(t, it.node, &kids, &nk);
		if (rc)
			goto out;
		if (sn + nk > scap) {
			struct dfs_item *ns;

			while (sn + nk > scap)
				scap *= 2;
			ns = realloc(st, scap * sizeof(*st));
			if (!ns) {
				free(kids);
				rc = ERR_NOMEM;
				goto out;
			}
			st = ns;
		}
		/* Offsets left to right; pushed right to left so the first pops first. */
		x[0] = it.x[0];
		x[1] = it.x[1];
		for (size_t i = 0; i < nk; i++) {
			const struct qnode *c = &t->nodes[kids[i]];
			st[sn + nk - 1 - i] = (struct dfs_item){ kids[i], it.depth + 1, { x[0], x[1] } };
			x[0] += c->total[0];
			x[1] += c->total[1];
		}
		/* Nodes without a value on either side are not drawn. */
		for (size_t i = 0; i < nk; i++) {
			if (!sides_total(&t->nodes[kids[i]]))
				st[sn + nk - 1 - i].node = QNONE;
		}
		{
			size_t w = sn;
			for (size_t i = sn; i < sn + nk; i++)
				if (st[i].node != QNONE)
					st[w++] = st[i];
			sn = w;
		}
		free(kids);
	}
	*out = e;
	*n_out = en;
	e = NULL;
out:
	free(e);
	free(st);
	return rc;
}

static int put_int(struct buf *b, int64_t v, int connect, int first)
{
	return buf_printf(b, connect ? "%s\"%lld\"" : "%s%lld", first ? "" : ",", (long long)v);
}

int qfb_encode(const struct qtree *t, int dbl, int connect, struct buf *out, int64_t *max_self)
{
	struct ent *e = NULL, *sorted = NULL;
	size_t n = 0, *start = NULL;
	uint32_t max_depth, *remap = NULL, nnames = 0;
	int rc;

	rc = flatten(t, &e, &n, &max_depth);
	if (rc)
		return rc;
	sorted = malloc(n * sizeof(*sorted));
	start = calloc((size_t)max_depth + 2, sizeof(*start));
	remap = malloc(t->names.n * sizeof(*remap));
	if (!sorted || !start || !remap) {
		rc = ERR_NOMEM;
		goto out;
	}
	memset(remap, 0xff, t->names.n * sizeof(*remap));
	/* Names in order of first use in DFS order; the root makes "total" 0. */
	rc = buf_puts(out, "\"names\":[");
	*max_self = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct qnode *nd = &t->nodes[e[i].node];

		if (nd->self[0] > *max_self)
			*max_self = nd->self[0];
		if (dbl && nd->self[1] > *max_self)
			*max_self = nd->self[1];
		if (remap[nd->name] != UINT32_MAX)
			continue;
		remap[nd->name] = nnames;
		if (nnames++)
			rc = buf_putc(out, ',');
		if (!rc)
			rc = buf_put_json_str(out, t->names.s[nd->name], t->names.len[nd->name]);
	}
	if (!rc)
		rc = buf_puts(out, "],\"levels\":[");
	/* Stable counting sort by depth keeps DFS order within each level. */
	for (size_t i = 0; i < n; i++)
		start[e[i].depth + 1]++;
	for (uint32_t d = 0; d <= max_depth; d++)
		start[d + 1] += start[d];
	for (size_t i = 0; i < n; i++)
		sorted[start[e[i].depth]++] = e[i];
	for (size_t i = 0, d = 0; i < n && !rc; d++) {
		int64_t end[2] = { 0, 0 };
		int first = 1;

		rc = buf_puts(out, d ? (connect ? ",{\"values\":[" : ",[") :
				       (connect ? "{\"values\":[" : "["));
		for (; i < n && sorted[i].depth == d && !rc; i++) {
			const struct qnode *nd = &t->nodes[sorted[i].node];

			for (int s = 0; s < (dbl ? 2 : 1) && !rc; s++) {
				rc = put_int(out, sorted[i].x[s] - end[s], connect, first);
				if (!rc)
					rc = put_int(out, nd->total[s], connect, 0);
				if (!rc)
					rc = put_int(out, nd->self[s], connect, 0);
				end[s] = sorted[i].x[s] + nd->total[s];
				first = 0;
			}
			if (!rc)
				rc = put_int(out, remap[nd->name], connect, 0);
		}
		if (!rc)
			rc = buf_puts(out, connect ? "]}" : "]");
	}
	if (!rc)
		rc = buf_putc(out, ']');
out:
	free(e);
	free(sorted);
	free(start);
	free(remap);
	return rc;
}

const char *qfb_units(const char *sample_type, const char *sample_unit)
{
	if (!strcmp(sample_unit, "bytes"))
		return "bytes";
	if (!strcmp(sample_unit, "nanoseconds"))
		return "nanoseconds";
	if (!strcmp(sample_unit, "count")) {
		if (strstr(sample_type, "goroutine"))
			return "goroutines";
		if (strstr(sample_type, "alloc") || strstr(sample_type, "inuse"))
			return "objects";
		return "samples";
	}
	return sample_unit[0] ? sample_unit : "samples";
}

int qprofile_type_split(const char *id, char *tmp, size_t tmpsz, const char *parts[5])
{
	size_t n = strlen(id);
	int k = 0;

	if (n + 1 > tmpsz)
		return ERR_INVALID;
	memcpy(tmp, id, n + 1);
	parts[k++] = tmp;
	for (char *c = tmp; *c; c++) {
		if (*c != ':')
			continue;
		if (k == 5)
			return ERR_INVALID;
		*c = '\0';
		parts[k++] = c + 1;
	}
	return k == 5 ? 0 : ERR_INVALID;
}

int qfb_query(struct qctx *q, const struct query_params *p, struct qmerge *m,
	      struct qtree *tr, char **profile_type)
{
	struct qtree full;
	size_t max_nodes = p->max_nodes > 0 ? (size_t)p->max_nodes : QUERY_DEFAULT_MAX_NODES;
	int rc;

	rc = qtree_init(q, &full);
	if (rc)
		return rc;
	rc = qquery_tree(q, p, m, &full, profile_type);
	if (!rc)
		rc = qtree_init(q, tr);
	if (!rc) {
		rc = qtree_truncate(q, &full, max_nodes, tr);
		if (rc)
			qtree_release(q, tr);
	}
	qtree_release(q, &full);
	if (rc && profile_type) {
		free(*profile_type);
		*profile_type = NULL;
	}
	return rc;
}

/* ---- /pyroscope/render ------------------------------------------------------- */

/* Timeline buckets: at most ~1024 points, never under 10 s. */
static int timeline_setup(struct qmerge *m, int64_t from_ns, int64_t until_ns)
{
	const int64_t s = 1000000000LL;
	int64_t range = until_ns > from_ns ? until_ns - from_ns : s;
	int64_t step = range / 1024 / s + 1;

	if (until_ns <= from_ns)
		return 0;
	step = (step + 9) / 10 * 10 * s;
	m->tl_step_ns = step;
	m->tl_start_ns = from_ns / step * step;
	m->tl_n = (size_t)((until_ns - m->tl_start_ns + step - 1) / step);
	m->tl = calloc(m->tl_n ? m->tl_n : 1, sizeof(*m->tl));
	return m->tl ? 0 : ERR_NOMEM;
}

static int put_timeline(struct buf *out, const struct qmerge *m)
{
	int rc = buf_printf(out, "{\"startTime\":%lld,\"samples\":[",
			    (long long)(m->tl_start_ns / 1000000000LL));

	for (size_t i = 0; i < m->tl_n && !rc; i++)
		rc = buf_printf(out, i ? ",%lld" : "%lld", (long long)m->tl[i]);
	if (!rc)
		rc = buf_printf(out, "],\"durationDelta\":%lld,\"watermarks\":{}}",
				(long long)(m->tl_step_ns / 1000000000LL));
	return rc;
}

static int put_metadata(struct buf *out, const char *format, const char *profile_type)
{
	char tmp[QUERY_MAX_SELECTOR_BYTES + 1];
	const char *parts[5];
	const char *units = "samples";
	int rc;

	if (!qprofile_type_split(profile_type, tmp, sizeof(tmp), parts))
		units = qfb_units(parts[1], parts[2]);
	rc = buf_printf(out, "\"metadata\":{\"format\":\"%s\",\"spyName\":\"\",\"sampleRate\":100,"
			     "\"units\":", format);
	if (!rc)
		rc = buf_put_json_str(out, units, strlen(units));
	if (!rc)
		rc = buf_puts(out, ",\"name\":");
	if (!rc)
		rc = buf_put_json_str(out, profile_type, strlen(profile_type));
	if (!rc)
		rc = buf_putc(out, '}');
	return rc;
}

static int out_err(struct err_msg *msg, int rc)
{
	if (rc == ERR_TOO_LARGE)
		return err_set(msg, rc, "response is larger than the output limit");
	if (rc == ERR_NOMEM)
		return err_set(msg, rc, "out of memory while encoding the response");
	return rc;
}

int query_render(struct store *st, const char *tenant, const struct query_params *p,
		 struct buf *out, struct err_msg *msg)
{
	struct qctx q;
	struct qmerge m;
	struct qtree tr;
	char *ptype = NULL;
	int64_t max_self;
	int rc;

	qctx_init(&q, st, tenant, &p->limits, msg);
	qmerge_init(&m);
	rc = timeline_setup(&m, p->from_ns, p->until_ns);
	if (rc)
		goto out_m;
	rc = qfb_query(&q, p, &m, &tr, &ptype);
	if (rc)
		goto out_m;
	rc = buf_puts(out, "{\"version\":1,\"flamebearer\":{");
	if (!rc)
		rc = qfb_encode(&tr, 0, 0, out, &max_self);
	if (!rc)
		rc = buf_printf(out, ",\"numTicks\":%lld,\"maxSelf\":%lld},",
				(long long)tr.nodes[0].total[0], (long long)max_self);
	if (!rc)
		rc = put_metadata(out, "single", ptype);
	if (!rc)
		rc = buf_puts(out, ",\"timeline\":");
	if (!rc)
		rc = put_timeline(out, &m);
	if (!rc) {
		const struct qmerge *ms[1] = { &m };

		rc = qsym_json(ms, 1, out);
	}
	if (!rc)
		rc = buf_putc(out, '}');
	rc = out_err(msg, rc);
	qtree_release(&q, &tr);
	free(ptype);
out_m:
	qmerge_release(&q, &m);
	return rc;
}

/* ---- /pyroscope/render-diff -------------------------------------------------- */

int qdiff_tree(struct qctx *q, const struct query_params *left,
	       const struct query_params *right, struct qmerge *ml, struct qmerge *mr,
	       struct qtree *dt, char **profile_type)
{
	struct qtree tl, tr, comb;
	char *pl = NULL, *pr = NULL;
	size_t max_nodes = left->max_nodes > 0 ? (size_t)left->max_nodes : QUERY_DEFAULT_MAX_NODES;
	int rc, have_l = 0, have_r = 0, have_c = 0;

	rc = qtree_init(q, &tl);
	if (rc)
		return rc;
	have_l = 1;
	rc = qquery_tree(q, left, ml, &tl, &pl);
	if (!rc && !(rc = qtree_init(q, &tr)))
		have_r = 1;
	if (!rc)
		rc = qquery_tree(q, right, mr, &tr, &pr);
	if (!rc && strcmp(pl, pr))
		rc = err_set(q->msg, ERR_INVALID,
			     "diff: left profile type \"%s\" differs from right \"%s\"", pl, pr);
	if (!rc && !(rc = qtree_init(q, &comb)))
		have_c = 1;
	if (!rc)
		rc = qtree_add(q, &comb, &tl, 0);
	if (!rc)
		rc = qtree_add(q, &comb, &tr, 1);
	if (!rc)
		rc = qtree_init(q, dt);
	if (!rc) {
		rc = qtree_truncate(q, &comb, max_nodes, dt);
		if (rc)
			qtree_release(q, dt);
	}
	if (have_l)
		qtree_release(q, &tl);
	if (have_r)
		qtree_release(q, &tr);
	if (have_c)
		qtree_release(q, &comb);
	free(pr);
	if (!rc)
		*profile_type = pl;
	else
		free(pl);
	return rc;
}

int query_render_diff(struct store *st, const char *tenant, const struct query_params *left,
		      const struct query_params *right, struct buf *out, struct err_msg *msg)
{
	struct qctx q;
	struct qmerge ml, mr;
	struct qtree dt;
	char *ptype = NULL;
	int64_t max_self;
	int rc;

	qctx_init(&q, st, tenant, &left->limits, msg);
	qmerge_init(&ml);
	qmerge_init(&mr);
	rc = timeline_setup(&ml, left->from_ns, left->until_ns);
	if (!rc)
		rc = timeline_setup(&mr, right->from_ns, right->until_ns);
	if (!rc)
		rc = qdiff_tree(&q, left, right, &ml, &mr, &dt, &ptype);
	if (rc)
		goto out_m;
	rc = buf_puts(out, "{\"version\":1,\"flamebearer\":{");
	if (!rc)
		rc = qfb_encode(&dt, 1, 0, out, &max_self);
	if (!rc)
		rc = buf_printf(out, ",\"numTicks\":%lld,\"maxSelf\":%lld,\"leftTicks\":%lld,"
				     "\"rightTicks\":%lld},",
				(long long)(dt.nodes[0].total[0] + dt.nodes[0].total[1]),
				(long long)max_self, (long long)dt.nodes[0].total[0],
				(long long)dt.nodes[0].total[1]);
	if (!rc)
		rc = put_metadata(out, "double", ptype);
	if (!rc)
		rc = buf_puts(out, ",\"leftTimeline\":");
	if (!rc)
		rc = put_timeline(out, &ml);
	if (!rc)
		rc = buf_puts(out, ",\"rightTimeline\":");
	if (!rc)
		rc = put_timeline(out, &mr);
	if (!rc) {
		const struct qmerge *ms[2] = { &ml, &mr };

		rc = qsym_json(ms, 2, out);
	}
	if (!rc)
		rc = buf_putc(out, '}');
	rc = out_err(msg, rc);
	qtree_release(&q, &dt);
	free(ptype);
out_m:
	qmerge_release(&q, &ml);
	qmerge_release(&q, &mr);
	return rc;
}
