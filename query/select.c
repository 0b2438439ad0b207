/*
 * select.c - the first stage of the pipeline: the selection of a query's
 * parameters (its selector, checked) and the series it matches, found
 * through the postings of its most selective equality matcher.
 */
#include "query_int.h"

#include "base/err.h"
#include "storage/storage.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int query__select(const struct query_params *p, struct query_selector *sel,
		  struct err_msg *msg)
{
	int rc;

	assert(p && sel);
	rc = query_selector_parse2(p->profile_type, p->query, sel, msg);
	if (rc)
		return rc;
	if (!sel->profile_type) {
		query_selector_release(sel);
		return err_set(msg, ERR_INVALID,
			       "query: a profile type is required, e.g. "
			       "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"api\"}");
	}
	if (p->max_nodes < 0 || p->max_nodes > QUERY_MAX_MAX_NODES) {
		query_selector_release(sel);
		return err_set(msg, ERR_INVALID, "maxNodes: %lld is outside 0..%d",
			       (long long)p->max_nodes, QUERY_MAX_MAX_NODES);
	}
	return 0;
}

size_t query__max_nodes(const struct query_params *p)
{
	return p->max_nodes > 0 ? (size_t)p->max_nodes : QUERY_DEFAULT_MAX_NODES;
}

struct select_ctx {
	struct qctx *q;
	struct query_selector *sel;
	qseries_cb cb;
	void *ctx;
	int rc;
	int has_re; /* sel has a regex matcher */
};

static int select_one(void *ctx, uint64_t id, uint32_t part, const struct store_label *labels,
		      size_t n)
{
	struct select_ctx *c = ctx;
	int rc;

	/*
	 * The regexes are compiled for the first candidate series, never for
	 * a tenant without one.  A regex match may take milliseconds (its
	 * bounds, regex.c), so with regexes the deadline is checked before
	 * every series, otherwise every 256.
	 */
	if (!c->sel->compiled && (rc = query_selector_compile(c->sel, c->q->msg)))
		goto stop;
	if (((++c->q->tick & 255) == 0 || c->has_re) && (rc = query__ctx_check(c->q)))
		goto stop;
	rc = query_selector_matches(c->sel, labels, n, c->q->msg);
	if (rc <= 0)
		goto stop;
	rc = c->cb(c->ctx, id, part, labels, n);
stop:
	if (rc) {
		c->rc = rc;
		return 1;
	}
	return 0;
}

int query__select_series(struct qctx *q, struct query_selector *sel, qseries_cb cb,
			 void *ctx)
{
	return query__select_series_in(q, NULL, sel, cb, ctx);
}

int query__select_series_in(struct qctx *q, struct store_reader *rd,
			    struct query_selector *sel, qseries_cb cb, void *ctx)
{
	struct select_ctx c = { q, sel, cb, ctx, 0, 0 };
	const struct query_matcher *eq = NULL;
	int rc;

	for (size_t i = 0; i < sel->n; i++)
		c.has_re |= sel->m[i].op == QUERY_RE || sel->m[i].op == QUERY_NRE;
	/* The most selective equality we know of: service_name, then any. */
	for (size_t i = 0; i < sel->n; i++) {
		if (sel->m[i].op != QUERY_EQ || !sel->m[i].value[0])
			continue;
		if (!eq || !strcmp(sel->m[i].name, STORE_LABEL_SERVICE))
			eq = &sel->m[i];
	}
	if (rd && eq)
		rc = store_reader_series_with(rd, eq->name, eq->value, select_one, &c);
	else if (rd && sel->profile_type)
		rc = store_reader_series_with(rd, STORE_LABEL_PROFILE_TYPE, sel->profile_type,
					      select_one, &c);
	else if (rd)
		rc = store_reader_series_each(rd, select_one, &c);
	else if (eq)
		rc = store_series_with(q->st, q->tenant, eq->name, eq->value, select_one, &c);
	else if (sel->profile_type)
		rc = store_series_with(q->st, q->tenant, STORE_LABEL_PROFILE_TYPE, sel->profile_type,
				       select_one, &c);
	else
		rc = store_series_each(q->st, q->tenant, select_one, &c);
	if (c.rc)
		return c.rc;
	if (rc < 0)
		return err_set(q->msg, rc, "reading series: %s", err_str(rc));
	return 0;
}

/* The labels every series of sel carries, appended to eq[*n]: its
 * profile type and its non-empty = matchers (an empty value also matches
 * a series without the label). */
static void required(const struct query_selector *sel, struct store_label *eq, size_t *n)
{
	if (sel->profile_type)
		eq[(*n)++] = (struct store_label){ STORE_LABEL_PROFILE_TYPE, sel->profile_type };
	for (size_t i = 0; i < sel->n; i++)
		if (sel->m[i].op == QUERY_EQ && sel->m[i].value[0])
			eq[(*n)++] = (struct store_label){ sel->m[i].name, sel->m[i].value };
}

/* 1 when every series of sel carries label l. */
static int requires(const struct query_selector *sel, const struct store_label *l)
{
	if (sel->profile_type && !strcmp(l->name, STORE_LABEL_PROFILE_TYPE) &&
	    !strcmp(l->value, sel->profile_type))
		return 1;
	for (size_t i = 0; i < sel->n; i++)
		if (sel->m[i].op == QUERY_EQ && !strcmp(sel->m[i].name, l->name) &&
		    !strcmp(sel->m[i].value, l->value))
			return 1;
	return 0;
}

int query__reader_open(struct qctx *q, const struct query_selector *sels, size_t n_sels,
		       int64_t from_ns, int64_t until_ns, struct store_reader **out)
{
	struct store_label *eq = malloc(((n_sels ? sels[0].n : 0) + 1) * sizeof(*eq));
	size_t n = 0, k = 0;
	int rc;

	if (!eq)
		return err_set(q->msg, ERR_NOMEM, "out of memory (selector)");
	if (n_sels)
		required(&sels[0], eq, &n);
	/* Of several selectors (a union), the labels all of them require. */
	for (size_t i = 0; i < n; i++) {
		size_t j = 1;

		while (j < n_sels && requires(&sels[j], &eq[i]))
			j++;
		if (j == n_sels)
			eq[k++] = eq[i];
	}
	rc = store_reader_open_eq(q->st, q->tenant, from_ns, until_ns, eq, k, out, q->msg);
	free(eq);
	return rc;
}
