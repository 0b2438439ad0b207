/*
 * pipeline.c - the query pipeline, and the read APIs of query.h built on it.
 *
 * query__run() is the whole engine in one function: select, collect,
 * symbolize, build the tree, truncate (see query_int.h for what each stage
 * is and where it lives).  Each API below runs it as far as its output
 * needs and hands the typed result to one writer: that is the encode stage,
 * the only place bytes are written.
 */
#include "query_int.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"

#include <assert.h>
#include <string.h>

void query__side_init(struct query__side *s)
{
	memset(s, 0, sizeof(*s));
	query__merge_init(&s->m);
}

void query__side_release(struct qctx *q, struct query__side *s)
{
	query_selector_release(&s->sel);
	query__merge_release(q, &s->m);
	if (s->have_tree)
		query__tree_release(q, &s->t);
	query__side_init(s);
}

int query__run(struct qctx *q, const struct query_params *p, enum query__stage last,
	       unsigned flags, struct query__side *s)
{
	int rc;

	assert(!s->have_tree && !s->sel.profile_type);
	rc = query__select(p, &s->sel, q->msg);
	if (!rc && (flags & QUERY__TIMELINE))
		rc = query__timeline_init(q, &s->m, p->from_ns, p->until_ns);
	s->m.span_sel = p->span_ids;
	s->m.n_span_sel = p->n_span_ids;
	s->m.id_sel = p->profile_ids;
	s->m.n_id_sel = p->n_profile_ids;
	if (!rc)
		rc = query__collect(q, &s->sel, p->from_ns, p->until_ns, &s->m);
	if (!rc)
		rc = query__symbolize(q, &s->m);
	if (rc || last == QUERY__COLLECTED)
		return rc;
	/* A tree truncated next defers its raw frames' names to truncation;
	 * the call-site filter and the whole-tree answers read every name. */
	if (last == QUERY__TRUNCATED && !p->n_call_site)
		rc = query__build_tree_deferred(q, &s->m, &s->t);
	else
		rc = query__build_tree(q, &s->m, &s->t);
	if (rc)
		return rc;
	s->have_tree = 1;
	query__merge_drop_stacks(q, &s->m);
	if (p->n_call_site && (rc = query__tree_call_site(q, &s->t, p->call_site, p->n_call_site)))
		return rc;
	if (last == QUERY__TREE)
		return 0;
	return query__truncate(q, &s->t, query__max_nodes(p));
}

int query__run_diff(struct qctx *q, const struct query_params *left,
		    const struct query_params *right, unsigned flags, struct query__side *l,
		    struct query__side *r, struct qtree *t)
{
	int rc;

	rc = query__run(q, left, QUERY__TREE, flags, l);
	if (!rc)
		rc = query__run(q, right, QUERY__TREE, flags, r);
	if (!rc && strcmp(l->sel.profile_type, r->sel.profile_type))
		rc = err_set(q->msg, ERR_INVALID,
			     "diff: left profile type \"%s\" differs from right \"%s\"",
			     l->sel.profile_type, r->sel.profile_type);
	if (!rc)
		rc = query__tree_diff(q, &l->t, &r->t, t);
	/* The sides' trees are in the union now. */
	if (l->have_tree)
		query__tree_release(q, &l->t);
	if (r->have_tree)
		query__tree_release(q, &r->t);
	l->have_tree = r->have_tree = 0;
	if (rc)
		return rc;
	rc = query__truncate(q, t, query__max_nodes(left));
	if (rc)
		query__tree_release(q, t);
	return rc;
}

/* ---- the read APIs ------------------------------------------------------------- */

/*
 * A query's output counts against its byte budget: the caller's cap on
 * `out`, when it has a larger one or none, is lowered to the budget for the
 * call (so a response can never be the unbounded part of a query).
 */
struct out_cap {
	struct buf *out;
	size_t max;
};

/* A read API's start: its context, and `out` capped to its budget. */
static void api_begin(struct qctx *q, struct store *st, const char *tenant,
		      const struct query_params *p, struct buf *out, struct out_cap *c,
		      struct err_msg *msg)
{
	query__ctx_init(q, st, tenant, &p->limits, msg);
	c->out = out;
	c->max = out->max;
	if (!out->max || out->max > q->mem.cap)
		out->max = q->mem.cap;
}

/*
 * Restores the cap.  A failure without a message yet is one of writing the
 * response: it gets `too_large` or `nomem` as its message when given.
 */
static int out_end(struct qctx *q, struct out_cap *c, int rc, const char *too_large,
		   const char *nomem)
{
	c->out->max = c->max;
	if (rc == ERR_TOO_LARGE && too_large)
		return err_set(q->msg, rc, "%s", too_large);
	if (rc == ERR_NOMEM && nomem)
		return err_set(q->msg, rc, "%s", nomem);
	return rc;
}

#define FB_TOO_LARGE "response is larger than the output limit"
#define FB_NOMEM "out of memory while encoding the response"

int query_render(struct store *st, const char *tenant, const struct query_params *p,
		 struct buf *out, struct err_msg *msg)
{
	const struct qmerge *ms[1];
	struct query__side s;
	struct query__flame f;
	struct out_cap oc;
	struct qctx q;
	int rc;

	struct buf tl, groups;
	struct query__rtap *tap = NULL;

	api_begin(&q, st, tenant, p, out, &oc, msg);
	query__side_init(&s);
	buf_init(&tl, q.mem.cap);
	buf_init(&groups, q.mem.cap);
	/* One view for the flame graph and the timeline, which reads a step
	 * more: on a querier, one head-block request per ingester.  The
	 * timeline's points are summed as collect decodes each profile, not
	 * by a second read of the range. */
	query__render_read_range(p, &s.m.rd_from, &s.m.rd_until);
	rc = query__render_tap(&q, p, &tap);
	s.m.tap = tap ? &tap->tap : NULL;
	if (!rc)
		rc = query__run(&q, p, QUERY__TRUNCATED, 0, &s);
	if (!rc)
		rc = query__flame_build(&q, &s.t, 0, &f);
	if (!rc) {
		rc = tap ? query__render_tap_timeline(&q, p, tap, &tl, &groups)
			 : query__render_timeline(&q, p, &s.m, &tl, &groups);
		s.m.tl_json = &tl;
		s.m.groups_json = &groups;
		ms[0] = &s.m;
		if (!rc)
			rc = query__fb_write(&f, s.sel.profile_type, ms, 1, out);
		query__flame_release(&q, &f);
	}
	rc = out_end(&q, &oc, rc, FB_TOO_LARGE, FB_NOMEM);
	query__side_release(&q, &s);
	query__render_tap_free(tap);
	buf_release(&tl);
	buf_release(&groups);
	return rc;
}

int query_render_diff(struct store *st, const char *tenant, const struct query_params *left,
		      const struct query_params *right, struct buf *out, struct err_msg *msg)
{
	const struct qmerge *ms[2];
	struct query__side l, r;
	struct query__flame f;
	struct out_cap oc;
	struct qtree t;
	struct qctx q;
	int rc;

	api_begin(&q, st, tenant, left, out, &oc, msg);
	query__side_init(&l);
	query__side_init(&r);
	rc = query__run_diff(&q, left, right, QUERY__TIMELINE, &l, &r, &t);
	if (!rc) {
		rc = query__flame_build(&q, &t, 1, &f);
		if (!rc) {
			ms[0] = &l.m;
			ms[1] = &r.m;
			rc = query__fb_write(&f, l.sel.profile_type, ms, 2, out);
			query__flame_release(&q, &f);
		}
		query__tree_release(&q, &t);
	}
	rc = out_end(&q, &oc, rc, FB_TOO_LARGE, FB_NOMEM);
	query__side_release(&q, &l);
	query__side_release(&q, &r);
	return rc;
}

int query_pprof(struct store *st, const char *tenant, const struct query_params *p,
		struct buf *out, struct err_msg *msg)
{
	struct Perftools__Profiles__Profile *prof;
	struct query__side s;
	struct out_cap oc;
	struct arena a;
	struct qctx q;
	int rc;

	api_begin(&q, st, tenant, p, out, &oc, msg);
	query__side_init(&s);
	arena_init(&a, (q.mem.cap + 1) / 2);
	rc = query__run(&q, p, QUERY__COLLECTED, 0, &s);
	if (!rc)
		rc = query__pprof_build(&q, &s.m, s.sel.profile_type, p->from_ns, p->until_ns, &a,
					&prof);
	if (!rc)
		rc = query__pprof_write_gz(&q, prof, out);
	rc = out_end(&q, &oc, rc, NULL, NULL);
	arena_release(&a);
	query__side_release(&q, &s);
	return rc;
}

enum text_kind { TEXT_TOP, TEXT_FOLDED, TEXT_DOT };

/*
 * top, folded and dot: the whole tree, untruncated, as text; `limit` is the
 * top table's rows or the call graph's functions.
 */
static int text(struct store *st, const char *tenant, const struct query_params *p,
		enum text_kind kind, enum query_top_sort sort, size_t limit, struct buf *out,
		struct err_msg *msg)
{
	struct query__side s;
	struct out_cap oc;
	struct qctx q;
	int rc;

	api_begin(&q, st, tenant, p, out, &oc, msg);
	query__side_init(&s);
	rc = query__run(&q, p, QUERY__TREE, 0, &s);
	if (!rc && kind == TEXT_DOT)
		rc = query__dot_write(&q, &s.t, s.sel.profile_type, limit, out);
	else if (!rc)
		rc = kind == TEXT_FOLDED ? query__folded_write(&q, &s.t, out)
					 : query__top_write(&q, &s.t, sort, limit, out);
	rc = out_end(&q, &oc, rc, "encoding the response: too large",
		     "encoding the response: out of memory");
	query__side_release(&q, &s);
	return rc;
}

int query_top(struct store *st, const char *tenant, const struct query_params *p,
	      enum query_top_sort sort, size_t limit, struct buf *out, struct err_msg *msg)
{
	return text(st, tenant, p, TEXT_TOP, sort, limit, out, msg);
}

int query_folded(struct store *st, const char *tenant, const struct query_params *p,
		 struct buf *out, struct err_msg *msg)
{
	return text(st, tenant, p, TEXT_FOLDED, QUERY_TOP_BY_SELF, 0, out, msg);
}

/* format=dot: the call graph keeps its own maxNodes (Pyroscope's default 100). */
int query_dot(struct store *st, const char *tenant, const struct query_params *p,
	      struct buf *out, struct err_msg *msg)
{
	size_t max_nodes = p->max_nodes > 0 ? (size_t)p->max_nodes : QUERY_DOT_DEFAULT_MAX_NODES;

	return text(st, tenant, p, TEXT_DOT, QUERY_TOP_BY_SELF, max_nodes, out, msg);
}

int query_diff_top(struct store *st, const char *tenant, const struct query_params *left,
		   const struct query_params *right, enum query_diff_mode mode, size_t limit,
		   struct buf *out, struct err_msg *msg)
{
	struct query__side l, r;
	struct out_cap oc;
	struct qctx q;
	int rc;

	api_begin(&q, st, tenant, left, out, &oc, msg);
	query__side_init(&l);
	query__side_init(&r);
	rc = query__run(&q, left, QUERY__TREE, 0, &l);
	if (!rc)
		rc = query__run(&q, right, QUERY__TREE, 0, &r);
	if (!rc)
		rc = query__diff_top_write(&q, &l.t, &r.t, mode, limit, out);
	rc = out_end(&q, &oc, rc, "diff-top: response too large", "diff-top: out of memory");
	query__side_release(&q, &l);
	query__side_release(&q, &r);
	return rc;
}

int query_symbolization(struct store *st, const char *tenant, const struct query_params *p,
			struct buf *out, struct err_msg *msg)
{
	struct query__side s;
	struct out_cap oc;
	struct qctx q;
	int rc;

	if (!p->limits.symbolizer)
		return err_set(msg, ERR_UNAVAILABLE, "symbolization is not enabled on this server");
	api_begin(&q, st, tenant, p, out, &oc, msg);
	query__side_init(&s);
	rc = query__run(&q, p, QUERY__COLLECTED, 0, &s);
	if (!rc && !s.m.sym)
		rc = err_set(msg, ERR_UNAVAILABLE, "symbolization did not run");
	if (!rc)
		rc = query__sym_status_json(&s.m, out);
	rc = out_end(&q, &oc, rc, NULL, NULL);
	query__side_release(&q, &s);
	return rc;
}
