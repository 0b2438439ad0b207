/*
 * regress_query.c - the regression report over the store: both sides go
 * through the pipeline's select, collect (with per-profile records),
 * symbolize and build stages as ONE merge, so a frame has one tree name
 * on both sides; each profile's stacks are then read back as paths of
 * function ids for regress.c.
 */
#include "query/query_int.h"
#include "query/regress.h"

#include "base/buf.h"
#include "base/err.h"
#include "debuginfo/debuginfo.h"
#include "storage/storage.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* Keeps the profiles whose main executable has one build ID. */
struct keep_build {
	struct release_main main;
	const char *build_id;
	struct err_msg *msg;
};

static int keep_build(void *ctx, const struct store_profile_view *p)
{
	struct keep_build *k = ctx;
	const char *bid = "", *file = "";
	int rc = release_main_of(&k->main, p->part, p->stack_ids, p->values, p->n, &bid, &file,
				 k->msg);

	if (rc)
		return rc;
	return strcmp(bid, k->build_id) == 0;
}

/* Tree node -> regress function id, computed once per node. */
struct fnmap {
	struct qctx *q;
	const struct qtree *t;
	struct regress *r;
	uint32_t *fn;          /* by node; UINT32_MAX unknown */
	size_t fn_cap;
	struct qmap unnamed;   /* build ID name id -> function id */
	uint32_t *path;
	size_t path_cap;
};

/* The unnamed function of a raw frame's build ID, with its status. */
static int unnamed_fn(struct fnmap *f, const struct qnode *nd, uint32_t *out)
{
	const char *bid = f->t->names.s[nd->build_id], *name = f->t->names.s[nd->name];
	const char *plus = strstr(name, "+0x");
	char file[256], status[300];
	int rc;

	if (query__map_get(&f->unnamed, nd->build_id, out))
		return 0;
	snprintf(file, sizeof(file), "%.*s", plus ? (int)(plus - name) : (int)strlen(name), name);
	if (!bid[0]) {
		snprintf(status, sizeof(status), "%s", debuginfo_status_str(DEBUGINFO_STATUS_NO_BUILD_ID));
	} else if (f->q->symbolizer) {
		struct debuginfo_record rec;

		if (debuginfo_get(f->q->symbolizer, bid, &rec, NULL))
			snprintf(status, sizeof(status), "unknown");
		else if (rec.status == DEBUGINFO_STATUS_OK)
			snprintf(status, sizeof(status), "ok, but no function covers these addresses");
		else
			snprintf(status, sizeof(status), "%s%s%s", debuginfo_status_str(rec.status),
				 rec.reason[0] ? ": " : "", rec.reason);
	} else {
		snprintf(status, sizeof(status), "not symbolized (the server has no symbolizer)");
	}
	rc = regress_fn_unnamed(f->r, bid, file, status, out);
	if (!rc)
		rc = query__map_put(f->q, &f->unnamed, nd->build_id, *out);
	return rc;
}

static int fn_of(struct fnmap *f, uint32_t node, uint32_t *out)
{
	const struct qnode *nd = &f->t->nodes[node];
	int rc;

	if (f->fn[node] != UINT32_MAX) {
		*out = f->fn[node];
		return 0;
	}
	if (nd->build_id)
		rc = unnamed_fn(f, nd, out);
	else
		rc = regress_fn(f->r, f->t->names.s[nd->name], f->t->names.len[nd->name], out);
	if (rc)
		return err_set(f->q->msg, rc, "regression report: %s (functions)", err_str(rc));
	f->fn[node] = *out;
	return 0;
}

/* The function ids of the path root -> node (the root "total" left out). */
static int path_of(struct fnmap *f, uint32_t node, size_t *depth)
{
	size_t d = 0;
	int rc;

	for (uint32_t n = node; n && n != QNONE; n = f->t->nodes[n].parent) {
		uint32_t id;

		if ((rc = fn_of(f, n, &id)))
			return rc;
		if ((rc = query__mem_grow(f->q, (void **)&f->path, &f->path_cap, sizeof(*f->path),
					  d + 1, "stack path")))
			return rc;
		f->path[d++] = id;
	}
	for (size_t a = 0, b = d ? d - 1 : 0; a < b; a++, b--) {
		uint32_t x = f->path[a];
		f->path[a] = f->path[b];
		f->path[b] = x;
	}
	*depth = d;
	return 0;
}

/* Feeds every collected profile to the statistics. */
static int feed(struct fnmap *f, const struct qprofiles *pp, const uint32_t *node_of)
{
	struct regress *r = f->r;
	int rc = 0;

	for (size_t i = 0; i < pp->n && !rc; i++) {
		if ((rc = query__ctx_check(f->q)) || (rc = regress_profile_begin(r, pp->side[i])))
			break;
		for (uint32_t e = pp->start[i]; e < pp->start[i + 1] && !rc; e++) {
			uint32_t node = node_of[pp->idx[e]];
			size_t depth;

			if (!node || pp->val[e] <= 0)
				continue;
			rc = path_of(f, node, &depth);
			if (!rc && depth)
				rc = regress_stack(r, f->path, depth, pp->val[e]);
		}
		if (!rc)
			rc = regress_profile_end(r);
	}
	if (rc && !f->q->msg->text[0])
		err_set(f->q->msg, rc, "regression report: %s", err_str(rc));
	return rc;
}

static int encode(const struct query_regress_params *rp, const struct regress_result *res,
		  struct buf *out)
{
	const char *title[2] = { rp->side[0].title ? rp->side[0].title : "baseline",
				 rp->side[1].title ? rp->side[1].title : "candidate" };
	struct buf rep;
	int rc;

	switch (rp->format) {
	case QUERY_REGRESS_TEXT:
		return regress_write_text(res, title, rp->extra, out);
	case QUERY_REGRESS_MARKDOWN:
		return regress_write_markdown(res, title, rp->extra, out);
	case QUERY_REGRESS_JSON:
		break;
	}
	if ((rc = regress_write_json(res, title, rp->extra, out)) || rp->report == QUERY_REGRESS_JSON)
		return rc;
	/* `unhex regress`: the rendered report as one more member. */
	assert(out->len >= 2 && !memcmp(out->data + out->len - 2, "}\n", 2));
	out->len -= 2;
	buf_init(&rep, out->max);
	rc = rp->report == QUERY_REGRESS_TEXT ? regress_write_text(res, title, rp->extra, &rep)
					      : regress_write_markdown(res, title, rp->extra, &rep);
	rc = rc ? rc : buf_puts(out, ",\"report\":");
	rc = rc ? rc : buf_put_json_str(out, rep.data ? rep.data : "", rep.len);
	rc = rc ? rc : buf_puts(out, "}\n");
	buf_release(&rep);
	return rc;
}

int query_regress(struct store *st, const char *tenant, const struct query_regress_params *rp,
		  struct buf *out, int *failed, struct err_msg *msg)
{
	struct qctx q;
	struct query_selector sel[2];
	struct qmerge m;
	struct qprofiles pp;
	struct qtree t;
	struct keep_build kb[2];
	struct fnmap f;
	struct regress *r = NULL;
	struct regress_result res;
	struct regress_params stats = rp->stats;
	uint32_t *node_of = NULL;
	size_t node_cap = 0;
	int have_tree = 0, nsel = 0, rc = 0;

	query__ctx_init(&q, st, tenant, &rp->side[0].p.limits, msg);
	memset(sel, 0, sizeof(sel));
	memset(&pp, 0, sizeof(pp));
	memset(&f, 0, sizeof(f));
	query__merge_init(&m);
	m.per_profile = &pp;
	for (int s = 0; s < 2; s++)
		release_main_init(&kb[s].main, st, tenant, q.mem.cap);
	for (int s = 0; s < 2 && !rc; s++)
		if (!(rc = query__select(&rp->side[s].p, &sel[s], msg)))
			nsel++;
	if (!rc && strcmp(sel[0].profile_type, sel[1].profile_type))
		rc = err_set(msg, ERR_INVALID,
			     "regressions: baseline profile type \"%s\" differs from candidate \"%s\"",
			     sel[0].profile_type, sel[1].profile_type);
	for (int s = 0; s < 2 && !rc; s++) {
		const struct query_regress_side *sd = &rp->side[s];

		m.side = s;
		m.keep = sd->build_id && sd->build_id[0] ? keep_build : NULL;
		kb[s].build_id = sd->build_id;
		kb[s].msg = msg;
		m.keep_ctx = &kb[s];
		rc = query__collect(&q, &sel[s], sd->p.from_ns, sd->p.until_ns, &m);
	}
	if (!rc)
		rc = query__symbolize(&q, &m);
	if (!rc)
		rc = query__mem_grow(&q, (void **)&node_of, &node_cap, sizeof(*node_of),
				     m.n ? m.n : 1, "stack nodes");
	if (!rc && !(rc = query__build_tree_nodes(&q, &m, &t, node_of)))
		have_tree = 1;
	if (!rc) {
		if (!stats.max_bytes || stats.max_bytes > q.mem.cap)
			stats.max_bytes = q.mem.cap;
		rc = regress_new(&stats, &r, msg);
	}
	if (!rc) {
		f.q = &q;
		f.t = &t;
		f.r = r;
		query__map_init(&f.unnamed);
		rc = query__mem_grow(&q, (void **)&f.fn, &f.fn_cap, sizeof(*f.fn), t.n ? t.n : 1,
				     "function map");
		if (!rc) {
			memset(f.fn, 0xff, t.n * sizeof(*f.fn));
			rc = feed(&f, &pp, node_of);
		}
	}
	if (!rc && (rc = regress_compute(r, &res)))
		rc = err_set(msg, rc, "regression report: %s", err_str(rc));
	if (!rc) {
		rc = encode(rp, &res, out);
		if (rc)
			rc = err_set(msg, rc, "regression report: writing it: %s", err_str(rc));
		else if (failed)
			*failed = res.failed;
	}
	regress_free(r);
	query__mem_free(&q, f.fn, f.fn_cap, sizeof(*f.fn));
	query__mem_free(&q, f.path, f.path_cap, sizeof(*f.path));
	if (f.q)
		query__map_release(&q, &f.unnamed);
	query__mem_free(&q, node_of, node_cap, sizeof(*node_of));
	if (have_tree)
		query__tree_release(&q, &t);
	query__profiles_release(&q, &pp);
	query__merge_release(&q, &m);
	for (int s = 0; s < 2; s++) {
		release_main_release(&kb[s].main);
		if (s < nsel)
			query_selector_release(&sel[s]);
	}
	return rc;
}
