/*
 * connect.c - Connect JSON of querier.v1.QuerierService: request parsing and
 * responses with Pyroscope's proto3 JSON field names (int64 as strings).
 *
 * Times in requests are Unix milliseconds (`start`, `end`); a missing end is
 * now, a missing start is one hour before the end.  Metadata calls
 * (LabelNames, LabelValues, Series) keep only series with a profile in
 * [start, end) when either bound is given.
 */
#include "query/query_int.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "storage/storage.h"

#include "profile.pb-c.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_STRINGS = 1 << 20, MAX_SERIES_POINTS = 11000 };

/* ---- request helpers ------------------------------------------------------ */

static int ms_to_ns(int64_t ms, int64_t *ns, const char *what, struct err_msg *msg)
{
	if (ms < 0 || ms > INT64_MAX / 1000000)
		return err_set(msg, ERR_INVALID, "field %s: %lld ms is out of range", what,
			       (long long)ms);
	*ns = ms * 1000000;
	return 0;
}

/* start/end of a request in ns; *given says whether either was set. */
static int req_range(const struct qjson *r, int64_t *from, int64_t *until, int *given,
		     struct err_msg *msg)
{
	int64_t s, e;
	int rc;

	if ((rc = qjson_int(r, "start", 0, &s, msg)) || (rc = qjson_int(r, "end", 0, &e, msg)))
		return rc;
	if (given)
		*given = s || e;
	if (!e)
		*until = clock_wall_ns();
	else if ((rc = ms_to_ns(e, until, "end", msg)))
		return rc;
	if (!s)
		*from = *until > 3600000000000LL ? *until - 3600000000000LL : 0;
	else if ((rc = ms_to_ns(s, from, "start", msg)))
		return rc;
	if (*until <= *from)
		return err_set(msg, ERR_INVALID, "end must be after start");
	return 0;
}

static int req_params(const struct qjson *r, const struct query_limits *lim,
		      struct query_params *p, struct err_msg *msg)
{
	int rc;

	memset(p, 0, sizeof(*p));
	if (!r || r->type != QJ_OBJ)
		return err_set(msg, ERR_INVALID, "request: want a JSON object");
	if ((rc = qjson_str(r, "profileTypeID", &p->profile_type, msg)) ||
	    (rc = qjson_str(r, "labelSelector", &p->query, msg)) ||
	    (rc = qjson_int(r, "maxNodes", 0, &p->max_nodes, msg)) ||
	    (rc = req_range(r, &p->from_ns, &p->until_ns, NULL, msg)))
		return rc;
	if (lim)
		p->limits = *lim;
	return 0;
}

/* Reads an array of strings; absent -> 0 items. Returns arena memory. */
static int req_strings(struct arena *a, const struct qjson *r, const char *key,
		       const char ***out, size_t *n, struct err_msg *msg)
{
	const struct qjson *v = qjson_get(r, key);
	const char **s;

	*out = NULL;
	*n = 0;
	if (!v || v->type == QJ_NULL)
		return 0;
	if (v->type != QJ_ARR)
		return err_set(msg, ERR_INVALID, "field %s: want an array of strings", key);
	if (v->n > QUERY_MAX_MATCHERS)
		return err_set(msg, ERR_TOO_LARGE, "field %s: more than %d items", key,
			       QUERY_MAX_MATCHERS);
	s = arena_alloc(a, (v->n + 1) * sizeof(*s));
	if (!s)
		return err_set(msg, ERR_TOO_LARGE, "field %s: too large", key);
	for (size_t i = 0; i < v->n; i++) {
		if (v->kids[i].type != QJ_STR)
			return err_set(msg, ERR_INVALID, "field %s[%zu]: want a string", key, i);
		s[i] = v->kids[i].s;
	}
	*out = s;
	*n = v->n;
	return 0;
}

/* ---- string sets ---------------------------------------------------------- */

struct strset {
	struct qctx *q;
	char **v;
	size_t n, cap;
};

static int strset_add(struct strset *s, const char *str)
{
	size_t len = strlen(str);
	int rc;

	if (s->n >= MAX_STRINGS)
		return err_set(s->q->msg, ERR_TOO_LARGE, "more than %d distinct strings", MAX_STRINGS);
	rc = qmem_grow(s->q, (void **)&s->v, &s->cap, sizeof(*s->v), s->n + 1, "string set");
	if (rc)
		return rc;
	if (s->q->mem.used + len + 1 > s->q->mem.cap)
		return err_set(s->q->msg, ERR_TOO_LARGE, "query memory budget exceeded (strings)");
	s->v[s->n] = strdup(str);
	if (!s->v[s->n])
		return ERR_NOMEM;
	s->q->mem.used += len + 1;
	s->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strset_release(struct strset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	qmem_free(s->q, s->v, s->cap, sizeof(*s->v));
}

/* Sorts, drops duplicates, and writes `"key":[...]`. */
static int strset_emit(struct strset *s, const char *key, struct buf *out)
{
	size_t w = 0;
	int rc;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_str);
	for (size_t i = 0; i < s->n; i++) {
		if (w && !strcmp(s->v[w - 1], s->v[i])) {
			free(s->v[i]);
			continue;
		}
		s->v[w++] = s->v[i];
	}
	s->n = w;
	rc = buf_printf(out, "\"%s\":[", key);
	for (size_t i = 0; i < s->n && !rc; i++) {
		if (i)
			rc = buf_putc(out, ',');
		if (!rc)
			rc = buf_put_json_str(out, s->v[i], strlen(s->v[i]));
	}
	if (!rc)
		rc = buf_putc(out, ']');
	return rc;
}

static int add_str_cb(void *ctx, const char *s)
{
	return strset_add(ctx, s);
}

/* ---- series sets for metadata calls --------------------------------------- */

struct meta {
	struct qctx *q;
	struct arena a;
	struct query_selector *sels;
	size_t nsel;
	int ranged;
	int64_t from, until;
	struct qmap ok;      /* series ids that qualify */
	uint64_t *ids;
	size_t nids, idcap;
};

static int meta_collect_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
			   size_t n)
{
	struct meta *m = ctx;
	int rc;

	(void)part;
	(void)l;
	(void)n;
	rc = qmem_grow(m->q, (void **)&m->ids, &m->idcap, sizeof(*m->ids), m->nids + 1, "series");
	if (!rc)
		m->ids[m->nids++] = id;
	return rc;
}

static int stop_cb(void *ctx, const struct store_profile_view *p)
{
	(void)ctx;
	(void)p;
	return 1;
}

static int meta_init(struct meta *m, struct qctx *q, const struct qjson *r, struct err_msg *msg)
{
	const char **ms;
	size_t nm;
	int rc;

	memset(m, 0, sizeof(*m));
	m->q = q;
	arena_init(&m->a, 1 << 20);
	qmap_init(&m->ok);
	if ((rc = req_range(r, &m->from, &m->until, &m->ranged, msg)) ||
	    (rc = req_strings(&m->a, r, "matchers", &ms, &nm, msg)))
		return rc;
	m->sels = calloc(nm ? nm : 1, sizeof(*m->sels));
	if (!m->sels)
		return ERR_NOMEM;
	if (!nm)
		m->nsel = 1; /* the empty selector: every series, filtered below */
	for (size_t i = 0; i < nm; i++) {
		rc = query_selector_parse(ms[i], strlen(ms[i]), &m->sels[i], msg);
		if (rc)
			return rc;
		m->nsel++;
	}
	/* Collect the series of every selector, then keep those in range. */
	for (size_t i = 0; i < m->nsel && !rc; i++)
		rc = qselect_series(q, &m->sels[i], meta_collect_cb, m);
	for (size_t i = 0; i < m->nids && !rc; i++) {
		int hit = 1;

		if (m->ranged) {
			hit = store_profiles_each(q->st, q->tenant, m->ids[i], m->from, m->until,
						  stop_cb, NULL, msg);
			if (hit < 0)
				return err_set(msg, hit, "reading profiles: %s", err_str(hit));
		}
		if (hit)
			rc = qmap_put(q, &m->ok, m->ids[i], 1);
	}
	return rc;
}

static void meta_release(struct meta *m)
{
	for (size_t i = 0; i < m->nsel; i++)
		query_selector_release(&m->sels[i]);
	free(m->sels);
	qmap_release(m->q, &m->ok);
	qmem_free(m->q, m->ids, m->idcap, sizeof(*m->ids));
	arena_release(&m->a);
}

/* Emits, once each, every qualifying series of any selector through cb. */
struct meta_each {
	struct meta *m;
	struct qmap seen;
	qseries_cb cb;
	void *ctx;
};

static int meta_each_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
			size_t n)
{
	struct meta_each *e = ctx;
	uint32_t v;
	int rc;

	if (!qmap_get(&e->m->ok, id, &v) || qmap_get(&e->seen, id, &v))
		return 0;
	rc = qmap_put(e->m->q, &e->seen, id, 1);
	return rc ? rc : e->cb(e->ctx, id, part, l, n);
}

static int meta_each(struct meta *m, qseries_cb cb, void *ctx)
{
	struct meta_each e = { m, { 0 }, cb, ctx };
	int rc = 0;

	qmap_init(&e.seen);
	for (size_t i = 0; i < m->nsel && !rc; i++)
		rc = qselect_series(m->q, &m->sels[i], meta_each_cb, &e);
	qmap_release(m->q, &e.seen);
	return rc;
}

/* ---- metadata methods ------------------------------------------------------- */

static int profile_types(struct qctx *q, const struct qjson *r, struct buf *out)
{
	struct strset s = { q, NULL, 0, 0 };
	int64_t from, until;
	int rc, ranged;

	rc = req_range(r, &from, &until, &ranged, q->msg);
	if (!rc)
		rc = store_label_values(q->st, q->tenant, STORE_LABEL_PROFILE_TYPE, add_str_cb, &s);
	if (rc < 0)
		goto out;
	rc = buf_puts(out, "{\"profileTypes\":[");
	if (s.n)
		qsort(s.v, s.n, sizeof(*s.v), cmp_str);
	for (size_t i = 0; i < s.n && !rc; i++) {
		char tmp[QUERY_MAX_SELECTOR_BYTES + 1];
		const char *pt[5];

		if (qprofile_type_split(s.v[i], tmp, sizeof(tmp), pt))
			continue;
		rc = buf_puts(out, i ? ",{\"ID\":" : "{\"ID\":");
		if (!rc) rc = buf_put_json_str(out, s.v[i], strlen(s.v[i]));
		if (!rc) rc = buf_puts(out, ",\"name\":");
		if (!rc) rc = buf_put_json_str(out, pt[0], strlen(pt[0]));
		if (!rc) rc = buf_puts(out, ",\"sampleType\":");
		if (!rc) rc = buf_put_json_str(out, pt[1], strlen(pt[1]));
		if (!rc) rc = buf_puts(out, ",\"sampleUnit\":");
		if (!rc) rc = buf_put_json_str(out, pt[2], strlen(pt[2]));
		if (!rc) rc = buf_puts(out, ",\"periodType\":");
		if (!rc) rc = buf_put_json_str(out, pt[3], strlen(pt[3]));
		if (!rc) rc = buf_puts(out, ",\"periodUnit\":");
		if (!rc) rc = buf_put_json_str(out, pt[4], strlen(pt[4]));
		if (!rc) rc = buf_putc(out, '}');
	}
	if (!rc)
		rc = buf_puts(out, "]}");
out:
	strset_release(&s);
	return rc;
}

struct names_ctx {
	struct strset *s;
	const char *name;  /* LabelValues: the label; NULL for LabelNames */
};

static int names_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct names_ctx *c = ctx;
	int rc = 0;

	(void)id;
	(void)part;
	for (size_t i = 0; i < n && !rc; i++) {
		if (!c->name)
			rc = strset_add(c->s, l[i].name);
		else if (!strcmp(l[i].name, c->name))
			rc = strset_add(c->s, l[i].value);
	}
	return rc;
}

static int label_names_values(struct qctx *q, const struct qjson *r, int values, struct buf *out)
{
	struct strset s = { q, NULL, 0, 0 };
	struct names_ctx c = { &s, NULL };
	struct meta m;
	int rc;

	if (values) {
		rc = qjson_str(r, "name", &c.name, q->msg);
		if (!rc && !c.name[0])
			rc = err_set(q->msg, ERR_INVALID, "field name: a label name is required");
		if (rc)
			return rc;
	}
	rc = meta_init(&m, q, r, q->msg);
	if (!rc && !qjson_get(r, "matchers") && !m.ranged)
		rc = values ? store_label_values(q->st, q->tenant, c.name, add_str_cb, &s)
			    : store_label_names(q->st, q->tenant, add_str_cb, &s);
	else if (!rc)
		rc = meta_each(&m, names_cb, &c);
	if (!rc) {
		rc = buf_putc(out, '{');
		if (!rc)
			rc = strset_emit(&s, "names", out);
		if (!rc)
			rc = buf_putc(out, '}');
	}
	meta_release(&m);
	strset_release(&s);
	return rc;
}

struct series_ctx {
	struct buf *out;
	const char **names;
	size_t nnames;
	int first;
};

static int series_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct series_ctx *c = ctx;
	int rc, first = 1;

	(void)id;
	(void)part;
	rc = buf_puts(c->out, c->first ? "{\"labels\":[" : ",{\"labels\":[");
	c->first = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		int want = !c->nnames;

		for (size_t k = 0; k < c->nnames && !want; k++)
			want = !strcmp(c->names[k], l[i].name);
		if (!want)
			continue;
		rc = buf_puts(c->out, first ? "{\"name\":" : ",{\"name\":");
		first = 0;
		if (!rc) rc = buf_put_json_str(c->out, l[i].name, strlen(l[i].name));
		if (!rc) rc = buf_puts(c->out, ",\"value\":");
		if (!rc) rc = buf_put_json_str(c->out, l[i].value, strlen(l[i].value));
		if (!rc) rc = buf_putc(c->out, '}');
	}
	if (!rc)
		rc = buf_puts(c->out, "]}");
	return rc;
}

static int series(struct qctx *q, const struct qjson *r, struct buf *out)
{
	struct series_ctx c = { out, NULL, 0, 1 };
	struct meta m;
	int rc = meta_init(&m, q, r, q->msg);

	if (!rc)
		rc = req_strings(&m.a, r, "labelNames", &c.names, &c.nnames, q->msg);
	if (!rc)
		rc = buf_puts(out, "{\"labelsSet\":[");
	if (!rc)
		rc = meta_each(&m, series_cb, &c);
	if (!rc)
		rc = buf_puts(out, "]}");
	meta_release(&m);
	return rc;
}

/* ---- flame graphs ----------------------------------------------------------- */

static int merge_stacktraces(struct qctx *q, const struct qjson *r,
			     const struct query_limits *lim, struct buf *out)
{
	struct query_params p;
	struct qmerge m;
	struct qtree t;
	int64_t max_self;
	int rc = req_params(r, lim, &p, q->msg);

	if (rc)
		return rc;
	qmerge_init(&m);
	rc = qfb_query(q, &p, &m, &t, NULL);
	if (rc)
		goto out_m;
	rc = buf_puts(out, "{\"flamegraph\":{");
	if (!rc)
		rc = qfb_encode(&t, 0, 1, out, &max_self);
	if (!rc)
		rc = buf_printf(out, ",\"total\":\"%lld\",\"maxSelf\":\"%lld\"}",
				(long long)t.nodes[0].total[0], (long long)max_self);
	if (!rc) {
		const struct qmerge *ms[1] = { &m };

		rc = qsym_json(ms, 1, out);
	}
	if (!rc)
		rc = buf_putc(out, '}');
	qtree_release(q, &t);
out_m:
	qmerge_release(q, &m);
	return rc;
}

static int diff(struct qctx *q, const struct qjson *r, const struct query_limits *lim,
		struct buf *out)
{
	struct query_params l, rp;
	struct qmerge ml, mr;
	struct qtree t;
	char *ptype = NULL;
	int64_t max_self;
	int rc;

	if ((rc = req_params(qjson_get(r, "left"), lim, &l, q->msg)) ||
	    (rc = req_params(qjson_get(r, "right"), lim, &rp, q->msg)))
		return rc;
	qmerge_init(&ml);
	qmerge_init(&mr);
	rc = qdiff_tree(q, &l, &rp, &ml, &mr, &t, &ptype);
	if (rc)
		goto out_m;
	rc = buf_puts(out, "{\"flamegraph\":{");
	if (!rc)
		rc = qfb_encode(&t, 1, 1, out, &max_self);
	if (!rc)
		rc = buf_printf(out, ",\"total\":\"%lld\",\"maxSelf\":\"%lld\",\"leftTicks\":\"%lld\","
				     "\"rightTicks\":\"%lld\"}}",
				(long long)(t.nodes[0].total[0] + t.nodes[0].total[1]),
				(long long)max_self, (long long)t.nodes[0].total[0],
				(long long)t.nodes[0].total[1]);
	qtree_release(q, &t);
	free(ptype);
out_m:
	qmerge_release(q, &ml);
	qmerge_release(q, &mr);
	return rc;
}

static int merge_profile(struct qctx *q, const struct qjson *r, const struct query_limits *lim,
			 struct buf *out)
{
	struct query_params p;
	struct query_selector sel;
	struct qmerge m;
	struct arena a;
	Perftools__Profiles__Profile *prof;
	int rc = req_params(r, lim, &p, q->msg);

	if (rc)
		return rc;
	rc = qparams_selector(&p, &sel, q->msg);
	if (rc)
		return rc;
	qmerge_init(&m);
	arena_init(&a, q->mem.cap / 2);
	rc = qmerge_collect(q, &sel, p.from_ns, p.until_ns, &m);
	if (!rc)
		rc = qpprof_build(q, &m, sel.profile_type, p.from_ns, p.until_ns, &a, &prof);
	if (!rc)
		rc = qpprof_json(prof, out);
	arena_release(&a);
	qmerge_release(q, &m);
	query_selector_release(&sel);
	return rc;
}

/* ---- SelectSeries ----------------------------------------------------------- */

struct ss {
	struct qctx *q;
	const char **group_by;
	size_t ngroup;
	struct qnames keys;     /* group key -> group id (ids from 2) */
	uint64_t *sid;          /* selected series */
	uint32_t *sgroup;       /* their group */
	size_t n, cap, gcap;
	int64_t start, step;
	size_t nb;
	int64_t *cells;         /* group-major buckets */
	uint8_t *has;
	size_t ccap, hcap;
	int64_t cur_group;
	int rc;
};

static int ss_series(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct ss *s = ctx;
	struct buf key;
	uint32_t g;
	int rc = 0;

	(void)part;
	buf_init(&key, 1 << 16);
	for (size_t k = 0; k < s->ngroup && !rc; k++) {
		const char *v = "";

		for (size_t i = 0; i < n; i++)
			if (!strcmp(l[i].name, s->group_by[k]))
				v = l[i].value;
		rc = buf_append(&key, v, strlen(v) + 1);
	}
	if (!rc)
		rc = qnames_intern(s->q, &s->keys, key.data ? key.data : "", key.len, &g);
	buf_release(&key);
	if (rc)
		return err_set(s->q->msg, rc, "SelectSeries: group key too large");
	if ((rc = qmem_grow(s->q, (void **)&s->sid, &s->cap, sizeof(*s->sid), s->n + 1, "series")) ||
	    (rc = qmem_grow(s->q, (void **)&s->sgroup, &s->gcap, sizeof(*s->sgroup), s->n + 1,
			    "series")))
		return rc;
	s->sid[s->n] = id;
	s->sgroup[s->n++] = g;
	return 0;
}

static int ss_profile(void *ctx, const struct store_profile_view *p)
{
	struct ss *s = ctx;
	int64_t b, sum = 0;
	size_t at;

	if ((s->rc = qctx_check(s->q)))
		return 1;
	b = (p->meta.time_ns - s->start) / s->step;
	if (b < 0 || (size_t)b >= s->nb)
		return 0;
	for (size_t i = 0; i < p->n; i++)
		sum += p->values[i];
	at = (size_t)s->cur_group * s->nb + (size_t)b;
	s->cells[at] += sum;
	s->has[at] = 1;
	return 0;
}

static int ss_emit(struct ss *s, struct buf *out)
{
	int rc = buf_puts(out, "{\"series\":[");
	int firsts = 1;

	for (size_t g = 2; g < s->keys.n && !rc; g++) {
		const char *k = s->keys.s[g];
		int firstp = 1;

		rc = buf_puts(out, firsts ? "{\"labels\":[" : ",{\"labels\":[");
		firsts = 0;
		for (size_t i = 0; i < s->ngroup && !rc; i++) {
			rc = buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
			if (!rc) rc = buf_put_json_str(out, s->group_by[i], strlen(s->group_by[i]));
			if (!rc) rc = buf_puts(out, ",\"value\":");
			if (!rc) rc = buf_put_json_str(out, k, strlen(k));
			if (!rc) rc = buf_putc(out, '}');
			k += strlen(k) + 1;
		}
		if (!rc)
			rc = buf_puts(out, "],\"points\":[");
		for (size_t b = 0; b < s->nb && !rc; b++) {
			size_t at = g * s->nb + b;

			if (!s->has[at])
				continue;
			rc = buf_printf(out, "%s{\"value\":%lld,\"timestamp\":\"%lld\"}",
					firstp ? "" : ",", (long long)s->cells[at],
					(long long)((s->start + (int64_t)b * s->step) / 1000000));
			firstp = 0;
		}
		if (!rc)
			rc = buf_puts(out, "]}");
	}
	if (!rc)
		rc = buf_puts(out, "]}");
	return rc;
}

static int select_series(struct qctx *q, const struct qjson *r, const struct query_limits *lim,
			 struct buf *out)
{
	struct query_params p;
	struct query_selector sel;
	struct ss s;
	struct arena a;
	double step;
	size_t ncells;
	int rc = req_params(r, lim, &p, q->msg);

	if (rc)
		return rc;
	memset(&s, 0, sizeof(s));
	s.q = q;
	arena_init(&a, 1 << 20);
	if ((rc = qjson_double(r, "step", &step, q->msg)) ||
	    (rc = req_strings(&a, r, "groupBy", &s.group_by, &s.ngroup, q->msg))) {
		arena_release(&a);
		return rc;
	}
	if (step != step || step < 0 || step > 1e9) {
		arena_release(&a);
		return err_set(q->msg, ERR_INVALID, "field step: bad value");
	}
	s.step = step >= 0.001 ? (int64_t)(step * 1e9) : 15000000000LL;
	s.start = p.from_ns / s.step * s.step;
	if ((p.until_ns - s.start) / s.step >= MAX_SERIES_POINTS) {
		arena_release(&a);
		return err_set(q->msg, ERR_INVALID,
			       "SelectSeries: more than %d points per series; raise step",
			       MAX_SERIES_POINTS);
	}
	s.nb = (size_t)((p.until_ns - s.start + s.step - 1) / s.step);
	rc = qparams_selector(&p, &sel, q->msg);
	if (rc) {
		arena_release(&a);
		return rc;
	}
	rc = qnames_init(q, &s.keys);
	if (!rc)
		rc = qselect_series(q, &sel, ss_series, &s);
	if (!rc) {
		if (s.keys.n > SIZE_MAX / s.nb)
			rc = err_set(q->msg, ERR_TOO_LARGE, "SelectSeries: too many groups");
		ncells = s.keys.n * s.nb;
	}
	if (!rc)
		rc = qmem_grow(q, (void **)&s.cells, &s.ccap, sizeof(*s.cells), ncells, "series points");
	if (!rc)
		rc = qmem_grow(q, (void **)&s.has, &s.hcap, 1, ncells, "series points");
	if (!rc) {
		memset(s.cells, 0, ncells * sizeof(*s.cells));
		memset(s.has, 0, ncells);
	}
	for (size_t i = 0; i < s.n && !rc; i++) {
		s.cur_group = s.sgroup[i];
		rc = store_profiles_each(q->st, q->tenant, s.sid[i], p.from_ns, p.until_ns,
					 ss_profile, &s, q->msg);
		if (s.rc)
			rc = s.rc;
		else if (rc > 0)
			rc = 0;
	}
	if (!rc)
		rc = ss_emit(&s, out);
	qnames_release(q, &s.keys);
	qmem_free(q, s.sid, s.cap, sizeof(*s.sid));
	qmem_free(q, s.sgroup, s.gcap, sizeof(*s.sgroup));
	qmem_free(q, s.cells, s.ccap, sizeof(*s.cells));
	qmem_free(q, s.has, s.hcap, 1);
	query_selector_release(&sel);
	arena_release(&a);
	return rc;
}

/* ---- dispatch --------------------------------------------------------------- */

int query_connect(struct store *st, const char *tenant, const char *method,
		  const void *body, size_t len, const struct query_limits *lim,
		  struct buf *out, struct err_msg *msg)
{
	struct qctx q;
	struct arena a;
	struct qjson *r;
	int rc;

	qctx_init(&q, st, tenant, lim, msg);
	arena_init(&a, len * 8 + 4096);
	rc = qjson_parse(len ? body : "{}", len ? len : 2, &a, &r, msg);
	if (!rc && r->type != QJ_OBJ)
		rc = err_set(msg, ERR_INVALID, "request: want a JSON object");
	if (rc)
		goto out;
	if (!strcmp(method, "ProfileTypes"))
		rc = profile_types(&q, r, out);
	else if (!strcmp(method, "LabelNames"))
		rc = label_names_values(&q, r, 0, out);
	else if (!strcmp(method, "LabelValues"))
		rc = label_names_values(&q, r, 1, out);
	else if (!strcmp(method, "Series"))
		rc = series(&q, r, out);
	else if (!strcmp(method, "SelectMergeStacktraces"))
		rc = merge_stacktraces(&q, r, lim, out);
	else if (!strcmp(method, "SelectMergeProfile"))
		rc = merge_profile(&q, r, lim, out);
	else if (!strcmp(method, "SelectSeries"))
		rc = select_series(&q, r, lim, out);
	else if (!strcmp(method, "Diff"))
		rc = diff(&q, r, lim, out);
	else
		rc = err_set(msg, ERR_NOT_FOUND, "unknown method %.64s", method);
	if (rc == ERR_TOO_LARGE || rc == ERR_NOMEM)
		err_set(msg, rc, "encoding the response: %s", err_str(rc));
out:
	arena_release(&a);
	return rc;
}
