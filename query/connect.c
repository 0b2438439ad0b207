/*
 * connect.c - Connect of querier.v1.QuerierService: request parsing and
 * responses with Pyroscope's proto3 JSON field names (int64 as strings), and
 * the binary protobuf codec (`application/proto`) on top of the same methods.
 *
 * Both codecs run one implementation per method.  A protobuf request is
 * unpacked with the message descriptors of proto/querier.proto and turned
 * into the JSON request tree (struct qjson, keys by the proto3 JSON names),
 * so it reaches the exact parsing and checks of a JSON request.  The method
 * writes its JSON response, which is parsed back and packed into the
 * response message by the same descriptors; SelectMergeProfile, whose
 * result is a pprof message already, packs that message directly.
 *
 * Times in requests are Unix milliseconds (`start`, `end`); a missing end is
 * now, a missing start is one hour before the end.  Metadata calls
 * (LabelNames, LabelValues, Series) keep only series with a profile in
 * [start, end) when either bound is given.
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "storage/storage.h"

#include "profile.pb-c.h"
#include "querier.pb-c.h"
#include "types.pb-c.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_STRINGS = 1 << 20, MAX_SERIES_POINTS = 11000 };

static int pack_message(const ProtobufCMessage *m, struct buf *out);

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

/* Writes the merged pprof as proto3 JSON or, with `proto`, packed. */
static int merge_profile(struct qctx *q, const struct qjson *r, const struct query_limits *lim,
			 int proto, struct buf *out)
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
	arena_init(&a, (q->mem.cap + 1) / 2);
	rc = qmerge_collect(q, &sel, p.from_ns, p.until_ns, &m);
	if (!rc)
		rc = qpprof_build(q, &m, sel.profile_type, p.from_ns, p.until_ns, &a, &prof);
	if (!rc && proto)
		rc = pack_message(&prof->base, out);
	else if (!rc)
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
	int64_t limit;          /* top N groups by total; 0: all, in key order */
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

struct ss_rank {
	const struct ss *s;
	size_t g;
	int64_t total;
};

/* Larger total first; equal totals by their label values. */
static int cmp_rank(const void *a, const void *b)
{
	const struct ss_rank *x = a, *y = b;
	const char *kx = x->s->keys.s[x->g], *ky = y->s->keys.s[y->g];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	for (size_t i = 0; i < x->s->ngroup; i++) {
		int c = strcmp(kx, ky);

		if (c)
			return c;
		kx += strlen(kx) + 1;
		ky += strlen(ky) + 1;
	}
	return 0;
}

/*
 * The groups to emit, in order: with a limit, the `limit` largest by total
 * (as Pyroscope's SelectSeries limit); without, all in key order.
 */
static int ss_order(struct ss *s, size_t **order, size_t *n)
{
	size_t ng = s->keys.n > 2 ? s->keys.n - 2 : 0;
	struct ss_rank *r;
	size_t *o;

	*n = 0;
	o = calloc(ng ? ng : 1, sizeof(*o));
	if (!o)
		return err_set(s->q->msg, ERR_NOMEM, "SelectSeries: out of memory");
	*order = o;
	if (!s->limit) {
		for (size_t i = 0; i < ng; i++)
			o[i] = 2 + i;
		*n = ng;
		return 0;
	}
	r = calloc(ng ? ng : 1, sizeof(*r));
	if (!r)
		return err_set(s->q->msg, ERR_NOMEM, "SelectSeries: out of memory");
	for (size_t i = 0; i < ng; i++) {
		r[i].s = s;
		r[i].g = 2 + i;
		for (size_t b = 0; b < s->nb; b++)
			r[i].total += s->cells[r[i].g * s->nb + b];
	}
	qsort(r, ng, sizeof(*r), cmp_rank);
	*n = (uint64_t)s->limit < ng ? (size_t)s->limit : ng;
	for (size_t i = 0; i < *n; i++)
		o[i] = r[i].g;
	free(r);
	return 0;
}

static int ss_emit(struct ss *s, struct buf *out)
{
	int rc = buf_puts(out, "{\"series\":[");
	int firsts = 1;
	size_t *order = NULL, n = 0;

	if (!rc)
		rc = ss_order(s, &order, &n);
	for (size_t oi = 0; oi < n && !rc; oi++) {
		size_t g = order[oi];
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
	free(order);
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
	    (rc = qjson_int(r, "limit", 0, &s.limit, q->msg)) ||
	    (rc = req_strings(&a, r, "groupBy", &s.group_by, &s.ngroup, q->msg))) {
		arena_release(&a);
		return rc;
	}
	if (s.limit < 0) {
		arena_release(&a);
		return err_set(q->msg, ERR_INVALID, "field limit: %lld is negative",
			       (long long)s.limit);
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

static int dispatch(struct qctx *q, const char *method, const struct qjson *r,
		    const struct query_limits *lim, int proto, struct buf *out)
{
	if (!strcmp(method, "ProfileTypes"))
		return profile_types(q, r, out);
	if (!strcmp(method, "LabelNames"))
		return label_names_values(q, r, 0, out);
	if (!strcmp(method, "LabelValues"))
		return label_names_values(q, r, 1, out);
	if (!strcmp(method, "Series"))
		return series(q, r, out);
	if (!strcmp(method, "SelectMergeStacktraces"))
		return merge_stacktraces(q, r, lim, out);
	if (!strcmp(method, "SelectMergeProfile"))
		return merge_profile(q, r, lim, proto, out);
	if (!strcmp(method, "SelectSeries"))
		return select_series(q, r, lim, out);
	if (!strcmp(method, "Diff"))
		return diff(q, r, lim, out);
	return err_set(q->msg, ERR_NOT_FOUND, "unknown method %.64s", method);
}

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
	rc = dispatch(&q, method, r, lim, 0, out);
	if (rc == ERR_TOO_LARGE || rc == ERR_NOMEM)
		err_set(msg, rc, "encoding the response: %s", err_str(rc));
out:
	arena_release(&a);
	return rc;
}

/* ---- protobuf codec --------------------------------------------------------- */

/*
 * Messages of each method.  A response descriptor of NULL means the method
 * packs its own result (SelectMergeProfile's pprof).
 */
struct pb_method {
	const char *name;
	const ProtobufCMessageDescriptor *req;
	const ProtobufCMessageDescriptor *resp;
};

static const struct pb_method pb_methods[] = {
	{ "ProfileTypes", &querier__v1__profile_types_request__descriptor,
	  &querier__v1__profile_types_response__descriptor },
	{ "LabelNames", &types__v1__label_names_request__descriptor,
	  &types__v1__label_names_response__descriptor },
	{ "LabelValues", &types__v1__label_values_request__descriptor,
	  &types__v1__label_values_response__descriptor },
	{ "Series", &querier__v1__series_request__descriptor,
	  &querier__v1__series_response__descriptor },
	{ "SelectMergeStacktraces", &querier__v1__select_merge_stacktraces_request__descriptor,
	  &querier__v1__select_merge_stacktraces_response__descriptor },
	{ "SelectMergeProfile", &querier__v1__select_merge_profile_request__descriptor, NULL },
	{ "SelectSeries", &querier__v1__select_series_request__descriptor,
	  &querier__v1__select_series_response__descriptor },
	{ "Diff", &querier__v1__diff_request__descriptor, &querier__v1__diff_response__descriptor },
};

/* Nesting of our messages is at most 3 (DiffResponse > FlameGraphDiff > Level). */
enum { PB_MAX_DEPTH = 4 };

static void *pb_alloc(void *data, size_t size)
{
	return arena_alloc(data, size ? size : 1);
}

static void pb_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

static int pack_message(const ProtobufCMessage *m, struct buf *out)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	int rc = buf_reserve(out, n);

	if (rc)
		return rc;
	out->len += protobuf_c_message_pack(m, (uint8_t *)out->data + out->len);
	return 0;
}

/*
 * The proto3 JSON name of a field (lowerCamelCase: "profile_typeID" ->
 * "profileTypeID"), into `dst` of `cap` bytes.
 */
static void json_name(const char *field, char *dst, size_t cap)
{
	size_t w = 0;
	int up = 0;

	for (const char *c = field; *c && w + 1 < cap; c++) {
		if (*c == '_') {
			up = 1;
			continue;
		}
		dst[w++] = up && *c >= 'a' && *c <= 'z' ? (char)(*c - 'a' + 'A') : *c;
		up = 0;
	}
	dst[w] = 0;
}

/* Bytes of one item of a repeated field of the types our messages use. */
static size_t pb_item_size(const ProtobufCFieldDescriptor *f)
{
	return f->type == PROTOBUF_C_TYPE_INT64 || f->type == PROTOBUF_C_TYPE_DOUBLE
		       ? 8 : sizeof(void *);
}

static int pb_to_json(struct arena *a, const ProtobufCMessage *m, int depth, struct qjson *out);

/* One value of field f at `p` as JSON; 1 when absent (a NULL message). */
static int pb_value_to_json(struct arena *a, const ProtobufCFieldDescriptor *f, const void *p,
			    int depth, struct qjson *v)
{
	char num[40];

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64:
		snprintf(num, sizeof(num), "%lld", (long long)*(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		snprintf(num, sizeof(num), "%.17g", *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_STRING:
		v->type = QJ_STR;
		v->s = *(char *const *)p;
		v->len = strlen(v->s);
		return 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		if (!*(ProtobufCMessage *const *)p)
			return 1;
		return pb_to_json(a, *(ProtobufCMessage *const *)p, depth + 1, v);
	default:
		return 1;
	}
	v->type = QJ_NUM;
	v->len = strlen(num);
	v->s = arena_strndup(a, num, v->len);
	return v->s ? 0 : ERR_TOO_LARGE;
}

/*
 * The JSON request tree of an unpacked request: scalar fields always (a
 * proto3 zero is the JSON default too), repeated fields when non-empty,
 * messages when set.
 */
static int pb_to_json(struct arena *a, const ProtobufCMessage *m, int depth, struct qjson *out)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	int rc = 0;

	if (depth > PB_MAX_DEPTH)
		return ERR_INVALID;
	memset(out, 0, sizeof(*out));
	out->type = QJ_OBJ;
	out->kids = arena_calloc(a, d->n_fields + 1, sizeof(*out->kids));
	out->keys = arena_calloc(a, d->n_fields + 1, sizeof(*out->keys));
	if (!out->kids || !out->keys)
		return ERR_TOO_LARGE;
	for (unsigned i = 0; i < d->n_fields && !rc; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *at = (const char *)m + f->offset;
		struct qjson *v = &out->kids[out->n];
		char key[64];

		memset(v, 0, sizeof(*v));  /* the slot of a skipped field is reused */
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
			const char *items = *(const char *const *)at;

			if (!n)
				continue;
			v->type = QJ_ARR;
			v->kids = arena_calloc(a, n, sizeof(*v->kids));
			if (!v->kids)
				return ERR_TOO_LARGE;
			for (size_t k = 0; k < n && !rc; k++, v->n++)
				rc = pb_value_to_json(a, f, items + k * pb_item_size(f), depth,
						      &v->kids[k]);
		} else {
			rc = pb_value_to_json(a, f, at, depth, v);
		}
		if (rc > 0) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		json_name(f->name, key, sizeof(key));
		out->keys[out->n] = arena_strndup(a, key, strlen(key));
		if (!out->keys[out->n])
			return ERR_TOO_LARGE;
		out->n++;
	}
	return rc;
}

static int json_to_pb(struct arena *a, const struct qjson *j, const ProtobufCMessageDescriptor *d,
		      int depth, ProtobufCMessage **out, struct err_msg *msg);

/* Stores JSON value v into the field f item at `p`. */
static int json_value_to_pb(struct arena *a, const ProtobufCFieldDescriptor *f,
			    const struct qjson *v, int depth, void *p, struct err_msg *msg)
{
	char *end = NULL;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64:
		if (v->type != QJ_NUM && v->type != QJ_STR)
			break;
		errno = 0;
		*(int64_t *)p = strtoll(v->s, &end, 10);
		if (errno || *end)
			break;
		return 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		if (v->type != QJ_NUM && v->type != QJ_STR)
			break;
		errno = 0;
		*(double *)p = strtod(v->s, &end);
		if (errno || *end)
			break;
		return 0;
	case PROTOBUF_C_TYPE_STRING:
		if (v->type != QJ_STR)
			break;
		*(const char **)p = v->s;
		return 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		if (v->type != QJ_OBJ)
			break;
		return json_to_pb(a, v, f->descriptor, depth + 1, (ProtobufCMessage **)p, msg);
	default:
		break;
	}
	return err_set(msg, ERR_INVALID, "encoding the response: field %s has an unexpected value",
		       f->name);
}

/* The response message of the JSON response tree `j`, allocated in `a`. */
static int json_to_pb(struct arena *a, const struct qjson *j, const ProtobufCMessageDescriptor *d,
		      int depth, ProtobufCMessage **out, struct err_msg *msg)
{
	ProtobufCMessage *m;
	int rc = 0;

	if (depth > PB_MAX_DEPTH)
		return err_set(msg, ERR_INVALID, "encoding the response: nested too deeply");
	m = arena_alloc(a, d->sizeof_message);
	if (!m)
		return err_set(msg, ERR_TOO_LARGE, "encoding the response: over the memory budget");
	d->message_init(m);
	for (unsigned i = 0; i < d->n_fields && !rc; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char *at = (char *)m + f->offset;
		const struct qjson *v;
		char key[64];

		json_name(f->name, key, sizeof(key));
		v = qjson_get(j, key);
		if (!v || v->type == QJ_NULL)
			continue;
		if (f->label != PROTOBUF_C_LABEL_REPEATED) {
			rc = json_value_to_pb(a, f, v, depth, at, msg);
			continue;
		}
		if (v->type != QJ_ARR)
			return err_set(msg, ERR_INVALID, "encoding the response: field %s is not a list",
				       f->name);
		*(void **)at = arena_calloc(a, v->n + 1, pb_item_size(f));
		if (!*(void **)at)
			return err_set(msg, ERR_TOO_LARGE, "encoding the response: over the memory budget");
		for (size_t k = 0; k < v->n && !rc; k++)
			rc = json_value_to_pb(a, f, &v->kids[k], depth,
					      (char *)*(void **)at + k * pb_item_size(f), msg);
		*(size_t *)((char *)m + f->quantifier_offset) = v->n;
	}
	if (!rc)
		*out = m;
	return rc;
}

static const struct pb_method *pb_method_find(const char *method)
{
	for (size_t i = 0; i < sizeof(pb_methods) / sizeof(pb_methods[0]); i++)
		if (!strcmp(pb_methods[i].name, method))
			return &pb_methods[i];
	return NULL;
}

/* Unpacks a request of `pm` into the JSON request tree of the same call. */
static int pb_request(const struct pb_method *pm, const void *body, size_t len, struct arena *a,
		      struct qjson **out, struct err_msg *msg)
{
	ProtobufCAllocator al = { pb_alloc, pb_free, a };
	ProtobufCMessage *req;
	struct qjson *r;
	int rc;

	req = protobuf_c_message_unpack(pm->req, &al, len, len ? body : (const void *)"");
	if (!req) {
		if (arena_failed(a))
			return err_set(msg, ERR_TOO_LARGE, "%s: request needs more memory than allowed",
				       pm->req->name);
		return err_set(msg, ERR_INVALID, "%s: not a valid protobuf message", pm->req->name);
	}
	r = arena_alloc(a, sizeof(*r));
	if (!r)
		return err_set(msg, ERR_TOO_LARGE, "%s: request needs more memory than allowed",
			       pm->req->name);
	rc = pb_to_json(a, req, 0, r);
	if (rc == ERR_TOO_LARGE)
		return err_set(msg, rc, "%s: request needs more memory than allowed", pm->req->name);
	if (rc)
		return err_set(msg, rc, "%s: messages nested too deeply", pm->req->name);
	*out = r;
	return 0;
}

int qconnect_pb_request(const char *method, const void *body, size_t len,
			      struct arena *a, struct qjson **out, struct err_msg *msg)
{
	const struct pb_method *pm = pb_method_find(method);

	if (!pm)
		return err_set(msg, ERR_NOT_FOUND, "unknown method %.64s", method);
	return pb_request(pm, body, len, a, out, msg);
}

/* Packs the JSON response `json` as the response message of `pm`. */
static int pb_response(const struct pb_method *pm, const struct buf *json, size_t cap,
		       struct buf *out, struct err_msg *msg)
{
	ProtobufCMessage *resp;
	struct qjson *j;
	struct arena a;
	int rc;

	arena_init(&a, cap);
	rc = qjson_parse(json->data, json->len, &a, &j, msg);
	if (rc == ERR_TOO_LARGE)
		err_set(msg, rc, "encoding the response: over the memory budget");
	if (!rc)
		rc = json_to_pb(&a, j, pm->resp, 0, &resp, msg);
	if (!rc)
		rc = pack_message(resp, out);
	arena_release(&a);
	return rc;
}

int query_connect_proto(struct store *st, const char *tenant, const char *method,
			const void *body, size_t len, const struct query_limits *lim,
			struct buf *out, struct err_msg *msg)
{
	const struct pb_method *pm = pb_method_find(method);
	size_t cap = lim && lim->max_bytes ? lim->max_bytes : QUERY_DEFAULT_MAX_BYTES;
	struct qctx q;
	struct arena a;
	struct buf json;
	struct qjson *r;
	int rc;

	if (!pm)
		return err_set(msg, ERR_NOT_FOUND, "unknown method %.64s", method);
	if (len > SIZE_MAX / 128)
		return err_set(msg, ERR_TOO_LARGE, "%s: request too large", pm->req->name);
	qctx_init(&q, st, tenant, lim, msg);
	/*
	 * Each repeated item costs at least 2 wire bytes and becomes a pointer,
	 * a struct qjson and a copy of its bytes: 64 per byte is a bound.
	 */
	arena_init(&a, len * 64 + (1 << 16));
	buf_init(&json, out->max);
	rc = pb_request(pm, body, len, &a, &r, msg);
	if (rc)
		goto out;
	rc = dispatch(&q, method, r, lim, !pm->resp, pm->resp ? &json : out);
	if (!rc && pm->resp)
		rc = pb_response(pm, &json, cap, out, msg);
	if (rc == ERR_TOO_LARGE || rc == ERR_NOMEM)
		err_set(msg, rc, "encoding the response: %s", err_str(rc));
out:
	buf_release(&json);
	arena_release(&a);
	return rc;
}
