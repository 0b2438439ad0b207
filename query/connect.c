/*
 * connect.c - querier.v1.QuerierService over Connect: one implementation
 * per method, from its request message to its response message, and the
 * two codecs as the edges.
 *
 * A call decodes its body into the method's request message (JSON through
 * the proto3 JSON mapping, proto/pbjson.h; `application/proto` with
 * protobuf_c_message_unpack), runs the method, which fills the response
 * message, and writes that message (pbjson_encode, or packed).  No answer
 * is ever written as text and read back.  Flame graph responses point into
 * the query's tree and flame graph (struct call keeps them alive until the
 * response is written), so a large answer is held once; everything else
 * of a response is allocated in the call's arena, capped by the query's
 * byte budget.
 *
 * JSON, as Pyroscope's clients see it: member names are the lowerCamel
 * proto3 JSON names, int64 are strings, and every field is written even at
 * its default (PBJSON_EMIT_DEFAULTS), as the hand-written encoder this
 * replaced did, except for SelectMergeProfile's pprof, which omits defaults
 * and empty lists (google.v1.Profile in proto3 JSON).  Request members that
 * name no field are ignored, as clients send fields unhex does not read.
 * SelectMergeStacktraces adds a "symbolization" member after the message's
 * own when frames stayed hex (docs/symbolization.md).
 *
 * Times in requests are Unix milliseconds (`start`, `end`); a missing end is
 * now, a missing start is one hour before the end.  Metadata calls
 * (LabelNames, LabelValues, Series) keep only series with a profile in
 * [start, end) when either bound is given.
 */
#include "query_int.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/json.h"
#include "base/uuid.h"
#include "proto/pbjson.h"
#include "storage/storage.h"

#include "profile.pb-c.h"
#include "querier.pb-c.h"
#include "types.pb-c.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_STRINGS = 1 << 20, MAX_SERIES_POINTS = 11000 };

/*
 * One call: the query, the arena of its response, and what a flame graph
 * response borrows until it is written.
 */
struct call {
	struct qctx *q;
	const struct query_limits *lim;   /* borrowed; may be NULL */
	struct arena *a;                  /* response messages (borrowed) */
	struct query__side side[2];
	struct qtree tree;                /* a diff's union */
	int have_tree;
	struct query__flame flame;
	int have_flame;
	/* A view of the query to read through when it covers [rd_from,
	 * rd_until) (borrowed; NULL: each read opens its own). */
	struct store_reader *rd;
	int64_t rd_from, rd_until;
};

static void call_init(struct call *c, struct qctx *q, const struct query_limits *lim,
		      struct arena *a)
{
	memset(c, 0, sizeof(*c));
	c->q = q;
	c->lim = lim;
	c->a = a;
	query__side_init(&c->side[0]);
	query__side_init(&c->side[1]);
}

static void call_release(struct call *c)
{
	if (c->have_flame)
		query__flame_release(c->q, &c->flame);
	if (c->have_tree)
		query__tree_release(c->q, &c->tree);
	query__side_release(c->q, &c->side[0]);
	query__side_release(c->q, &c->side[1]);
}

/* The call's arena: requests, then responses, within the query's budget. */
static void call_arena(struct arena *a, size_t request_bound, const struct query_limits *lim)
{
	size_t budget = lim && lim->max_bytes ? lim->max_bytes : QUERY_DEFAULT_MAX_BYTES;

	arena_init(a, request_bound > SIZE_MAX - budget ? SIZE_MAX : request_bound + budget);
}

/* Memory of a response, from the call's arena: NULL (message set) past its cap. */
static void *rmem(struct call *c, size_t n)
{
	void *p = arena_calloc(c->a, 1, n);

	if (!p)
		err_set(c->q->msg, arena_failed(c->a) ? arena_failed(c->a) : ERR_NOMEM,
			"the response needs more than the query memory budget");
	return p;
}

static char *rstr(struct call *c, const char *s)
{
	char *d = arena_strndup(c->a, s, strlen(s));

	if (!d)
		err_set(c->q->msg, arena_failed(c->a) ? arena_failed(c->a) : ERR_NOMEM,
			"the response needs more than the query memory budget");
	return d;
}

static int rfail(struct call *c)
{
	return arena_failed(c->a) ? arena_failed(c->a) : ERR_NOMEM;
}

/* ---- request helpers ------------------------------------------------------ */

static int ms_to_ns(int64_t ms, int64_t *ns, const char *what, struct err_msg *msg)
{
	if (ms < 0 || ms > INT64_MAX / 1000000)
		return err_set(msg, ERR_INVALID, "field %s: %lld ms is out of range", what,
			       (long long)ms);
	*ns = ms * 1000000;
	return 0;
}

/* start/end (ms, 0: not given) of a request in ns; *given: whether either was set. */
static int req_range(int64_t start, int64_t end, int64_t *from, int64_t *until, int *given,
		     struct err_msg *msg)
{
	int rc;

	if (given)
		*given = start || end;
	if (!end)
		*until = clock_wall_ns();
	else if ((rc = ms_to_ns(end, until, "end", msg)))
		return rc;
	if (!start)
		*from = *until > 3600000000000LL ? *until - 3600000000000LL : 0;
	else if ((rc = ms_to_ns(start, from, "start", msg)))
		return rc;
	if (*until <= *from)
		return err_set(msg, ERR_INVALID, "end must be after start");
	return 0;
}

/* The query parameters of a flame graph or profile selection. */
static int req_params(const char *profile_type, const char *label_selector, int64_t start,
		      int64_t end, int64_t max_nodes, const struct query_limits *lim,
		      struct query_params *p, struct err_msg *msg)
{
	memset(p, 0, sizeof(*p));
	p->profile_type = profile_type;
	p->query = label_selector;
	p->max_nodes = max_nodes;
	if (lim)
		p->limits = *lim;
	return req_range(start, end, &p->from_ns, &p->until_ns, NULL, msg);
}

/* The call site names of a stack trace selector, into p (memory of the call's arena). */
static int req_call_site(struct call *c, const Types__V1__StackTraceSelector *sts,
			 struct query_params *p)
{
	const char **v;

	if (!sts || !sts->n_call_site)
		return 0;
	if (sts->n_call_site > 65536)
		return err_set(c->q->msg, ERR_TOO_LARGE,
			       "field stackTraceSelector.callSite: more than 65536 frames");
	v = rmem(c, sts->n_call_site * sizeof(*v));
	if (!v)
		return rfail(c);
	for (size_t i = 0; i < sts->n_call_site; i++)
		v[i] = sts->call_site[i]->name;
	p->call_site = v;
	p->n_call_site = sts->n_call_site;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A span selector into p (memory of the call's arena): each id 16 hex
 * digits, read as Pyroscope reads them (the 8 bytes as a little-endian
 * u64, as ingest stores them); sorted and unique for collect's search.
 */
static int req_spans(struct call *c, char *const *ids, size_t n, struct query_params *p)
{
	uint64_t *v;
	size_t k = 0;

	if (!n)
		return 0;
	if (n > 65536)
		return err_set(c->q->msg, ERR_TOO_LARGE, "field spanSelector: more than 65536 ids");
	if (!(v = rmem(c, n * sizeof(*v))))
		return rfail(c);
	for (size_t i = 0; i < n; i++) {
		const char *id = ids[i];
		uint64_t x = 0;

		if (strlen(id) != 16)
			return err_set(c->q->msg, ERR_INVALID,
				       "field spanSelector: invalid span id length: \"%.64s\"", id);
		for (int b = 0; b < 8; b++) {
			int hi = hex_digit((unsigned char)id[2 * b]);
			int lo = hex_digit((unsigned char)id[2 * b + 1]);

			if (hi < 0 || lo < 0)
				return err_set(c->q->msg, ERR_INVALID,
					       "field spanSelector: span id \"%s\" is not hex", id);
			x |= (uint64_t)(hi << 4 | lo) << (8 * b);
		}
		v[i] = x;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (v[i] && (!k || v[k - 1] != v[i]))
			v[k++] = v[i];
	if (!k) /* only the zero span: no sample can match */
		v[k++] = 0;
	p->span_ids = v;
	p->n_span_ids = k;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	return memcmp(a, b, UUID_BYTES);
}

/*
 * A profile id selector into p (memory of the call's arena): UUIDs, with
 * dashes or without (as Go's uuid.Parse reads them); sorted and unique for
 * collect's search.
 */
static int req_profile_ids(struct call *c, char *const *ids, size_t n, struct query_params *p)
{
	uint8_t (*v)[UUID_BYTES];
	size_t k = 0;

	if (!n)
		return 0;
	if (n > 65536)
		return err_set(c->q->msg, ERR_TOO_LARGE,
			       "field profileIdSelector: more than 65536 ids");
	if (!(v = rmem(c, n * sizeof(*v))))
		return rfail(c);
	for (size_t i = 0; i < n; i++)
		if (uuid_parse(ids[i], strlen(ids[i]), v[i]))
			return err_set(c->q->msg, ERR_INVALID,
				       "field profileIdSelector: \"%.64s\" is not a UUID", ids[i]);
	qsort(v, n, sizeof(*v), cmp_id);
	for (size_t i = 0; i < n; i++)
		if (!k || memcmp(v[k - 1], v[i], UUID_BYTES))
			memmove(v[k++], v[i], UUID_BYTES);
	p->profile_ids = (const uint8_t (*)[16])v;
	p->n_profile_ids = k;
	return 0;
}

static int req_strings_max(size_t n, const char *what, struct err_msg *msg)
{
	if (n > QUERY_MAX_MATCHERS)
		return err_set(msg, ERR_TOO_LARGE, "field %s: more than %d items", what,
			       QUERY_MAX_MATCHERS);
	return 0;
}

/* ---- string sets ---------------------------------------------------------- */

struct strset {
	struct qctx *q;
	char **v;
	size_t n, cap;
	size_t bytes;  /* of the strings, charged to the budget */
};

static int strset_add(struct strset *s, const char *str)
{
	size_t len = strlen(str);
	int rc;

	if (s->n >= MAX_STRINGS)
		return err_set(s->q->msg, ERR_TOO_LARGE, "more than %d distinct strings", MAX_STRINGS);
	rc = query__mem_grow(s->q, (void **)&s->v, &s->cap, sizeof(*s->v), s->n + 1, "string set");
	if (rc)
		return rc;
	if (s->q->mem.used + len + 1 > s->q->mem.cap)
		return err_set(s->q->msg, ERR_TOO_LARGE, "query memory budget exceeded (strings)");
	s->v[s->n] = strdup(str);
	if (!s->v[s->n])
		return err_set(s->q->msg, ERR_NOMEM, "out of memory (strings)");
	s->q->mem.used += len + 1;
	s->bytes += len + 1;
	s->n++;
	return 0;
}

static int add_str_cb(void *ctx, const char *s)
{
	return strset_add(ctx, s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strset_release(struct strset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	query__mem_free(s->q, s->v, s->cap, sizeof(*s->v));
	s->q->mem.used -= s->bytes <= s->q->mem.used ? s->bytes : s->q->mem.used;
	memset(s, 0, sizeof(*s));
}

/* The set sorted, without duplicates, copied into the response: *out, *n. */
static int strset_names(struct call *c, struct strset *s, char ***out, size_t *n)
{
	size_t w = 0;
	char **v;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_str);
	for (size_t i = 0; i < s->n; i++)
		if (!w || strcmp(s->v[w - 1], s->v[i]))
			s->v[w++] = s->v[i];
		else
			free(s->v[i]);
	s->n = w;
	v = rmem(c, (w ? w : 1) * sizeof(*v));
	if (!v)
		return rfail(c);
	for (size_t i = 0; i < w; i++)
		if (!(v[i] = rstr(c, s->v[i])))
			return rfail(c);
	*out = v;
	*n = w;
	return 0;
}

/* ---- series sets for metadata calls --------------------------------------- */

struct meta {
	struct qctx *q;
	struct query_selector *sels;
	size_t nsel;
	int ranged;
	int64_t from, until;
	struct qmap ok;      /* series ids that qualify */
	struct query__ids ids;
	struct store_reader *rd; /* with a range: its series ids; NULL: the store's */
};

static int stop_cb(void *ctx, const struct store_profile_view *p)
{
	(void)ctx;
	(void)p;
	return 1;
}

/*
 * The series of any of the `nm` selectors `ms` (every series without one),
 * and with a range given, only those with a profile in it.
 */
/* Fills m->ok with the collected series that have a profile in the range
 * (every one when the call gave no range). */
static int meta_keep(struct meta *m)
{
	struct qctx *q = m->q;
	int rc = 0;

	for (size_t i = 0; i < m->ids.n && !rc; i++) {
		int hit = 1;

		if (m->rd) {
			hit = store_reader_profiles_each(m->rd, m->ids.v[i], m->from, m->until, stop_cb,
							 NULL, q->msg);
			if (hit < 0)
				return err_set(q->msg, hit, "reading profiles: %s", err_str(hit));
		} else if (m->ranged) {
			hit = store_profiles_each(q->st, q->tenant, m->ids.v[i], m->from, m->until,
						  stop_cb, NULL, q->msg);
			if (hit < 0)
				return err_set(q->msg, hit, "reading profiles: %s", err_str(hit));
		}
		if (hit)
			rc = query__map_put(q, &m->ok, m->ids.v[i], 1);
	}
	return rc;
}

static int meta_init(struct meta *m, struct qctx *q, char *const *ms, size_t nm, int64_t start,
		     int64_t end)
{
	int rc;

	memset(m, 0, sizeof(*m));
	m->q = q;
	m->ids.q = q;
	query__map_init(&m->ok);
	if ((rc = req_range(start, end, &m->from, &m->until, &m->ranged, q->msg)) ||
	    (rc = req_strings_max(nm, "matchers", q->msg)))
		return rc;
	m->sels = calloc(nm ? nm : 1, sizeof(*m->sels));
	if (!m->sels)
		return err_set(q->msg, ERR_NOMEM, "out of memory (selectors)");
	if (!nm)
		m->nsel = 1; /* the empty selector: every series, filtered below */
	for (size_t i = 0; i < nm; i++) {
		rc = query_selector_parse(ms[i], strlen(ms[i]), &m->sels[i], q->msg);
		if (rc)
			return rc;
		m->nsel++;
	}
	/* With a range, through a reader over it, as every read (a querier's
	 * also asks its ingesters); without, the store's whole index. */
	if (m->ranged)
		rc = query__reader_open(q, m->sels, m->nsel, m->from, m->until, &m->rd);
	/* Collect the series of every selector, then keep those in range. */
	for (size_t i = 0; i < m->nsel && !rc; i++)
		rc = query__select_series_in(q, m->rd, &m->sels[i], query__ids_add, &m->ids);
	return rc ? rc : meta_keep(m);
}

static void meta_release(struct meta *m)
{
	for (size_t i = 0; i < m->nsel; i++)
		query_selector_release(&m->sels[i]);
	free(m->sels);
	query__map_release(m->q, &m->ok);
	query__ids_free(&m->ids);
	store_reader_close(m->rd);
}

/* Calls cb once for every qualifying series of any selector. */
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

	if (!query__map_get(&e->m->ok, id, &v) || query__map_get(&e->seen, id, &v))
		return 0;
	rc = query__map_put(e->m->q, &e->seen, id, 1);
	return rc ? rc : e->cb(e->ctx, id, part, l, n);
}

static int meta_each(struct meta *m, qseries_cb cb, void *ctx)
{
	struct meta_each e = { m, { 0 }, cb, ctx };
	int rc = 0;

	query__map_init(&e.seen);
	for (size_t i = 0; i < m->nsel && !rc; i++)
		rc = query__select_series_in(m->q, m->rd, &m->sels[i], meta_each_cb, &e);
	query__map_release(m->q, &e.seen);
	return rc;
}

/* ---- ProfileTypes --------------------------------------------------------------- */

/* LabelValues of __profile_type__ over the qualifying series. */
static int type_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct strset *s = ctx;

	(void)id;
	(void)part;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].name, STORE_LABEL_PROFILE_TYPE))
			return strset_add(s, l[i].value);
	return 0;
}

/*
 * The types with a profile in [start, end), as Pyroscope's ProfileTypes:
 * without start and end, the last hour.
 */
static int profile_types(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Querier__V1__ProfileTypesRequest *req = (const void *)msg;
	Querier__V1__ProfileTypesResponse *r;
	struct strset s = { c->q, NULL, 0, 0, 0 };
	char **ids = NULL;
	size_t nids = 0, n = 0;
	struct meta m;
	int rc;

	rc = meta_init(&m, c->q, NULL, 0, req->start, req->end);
	if (!rc && !m.ranged) {
		m.ranged = 1;
		/* meta_init kept every series when no range was given: the last hour. */
		query__map_release(c->q, &m.ok);
		query__map_init(&m.ok);
		rc = meta_keep(&m);
	}
	if (!rc)
		rc = meta_each(&m, type_cb, &s);
	if (!rc)
		rc = strset_names(c, &s, &ids, &nids);
	meta_release(&m);
	if (rc < 0)
		goto out;
	rc = 0;
	r = rmem(c, sizeof(*r));
	if (r)
		querier__v1__profile_types_response__init(r);
	if (!r || !(r->profile_types = rmem(c, (nids ? nids : 1) * sizeof(*r->profile_types)))) {
		rc = rfail(c);
		goto out;
	}
	for (size_t i = 0; i < nids && !rc; i++) {
		char tmp[QUERY_MAX_SELECTOR_BYTES + 1];
		const char *pt[5];
		Types__V1__ProfileType *t;

		if (query__profile_type_split(ids[i], tmp, sizeof(tmp), pt))
			continue;
		t = rmem(c, sizeof(*t));
		if (!t) {
			rc = rfail(c);
			break;
		}
		types__v1__profile_type__init(t);
		t->id = ids[i];
		if (!(t->name = rstr(c, pt[0])) || !(t->sample_type = rstr(c, pt[1])) ||
		    !(t->sample_unit = rstr(c, pt[2])) || !(t->period_type = rstr(c, pt[3])) ||
		    !(t->period_unit = rstr(c, pt[4])))
			rc = rfail(c);
		r->profile_types[n++] = t;
	}
	r->n_profile_types = n;
	if (!rc)
		*out = &r->base;
out:
	strset_release(&s);
	return rc;
}

/* ---- LabelNames, LabelValues ---------------------------------------------------- */

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

/*
 * The sorted distinct label names (name NULL) or values of label `name` of
 * the series of `ms` in range.  Without matchers and range, from the
 * store's index directly.
 */
static int label_names_values(struct call *c, const char *name, char *const *ms, size_t nm,
			      int64_t start, int64_t end, char ***out, size_t *n)
{
	struct strset s = { c->q, NULL, 0, 0, 0 };
	struct names_ctx nc = { &s, name };
	struct meta m;
	int rc;

	if (name && !name[0])
		return err_set(c->q->msg, ERR_INVALID, "field name: a label name is required");
	rc = meta_init(&m, c->q, ms, nm, start, end);
	if (!rc && !nm && !m.ranged)
		rc = name ? store_label_values(c->q->st, c->q->tenant, name, add_str_cb, &s)
			  : store_label_names(c->q->st, c->q->tenant, add_str_cb, &s);
	else if (!rc)
		rc = meta_each(&m, names_cb, &nc);
	if (!rc)
		rc = strset_names(c, &s, out, n);
	meta_release(&m);
	strset_release(&s);
	return rc < 0 ? rc : 0;
}

static int label_names(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Types__V1__LabelNamesRequest *req = (const void *)msg;
	Types__V1__LabelNamesResponse *r = rmem(c, sizeof(*r));
	int rc;

	if (!r)
		return rfail(c);
	types__v1__label_names_response__init(r);
	rc = label_names_values(c, NULL, req->matchers, req->n_matchers, req->start, req->end,
				&r->names, &r->n_names);
	if (!rc)
		*out = &r->base;
	return rc;
}

static int label_values(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Types__V1__LabelValuesRequest *req = (const void *)msg;
	Types__V1__LabelValuesResponse *r = rmem(c, sizeof(*r));
	int rc;

	if (!r)
		return rfail(c);
	types__v1__label_values_response__init(r);
	rc = label_names_values(c, req->name, req->matchers, req->n_matchers, req->start,
				req->end, &r->names, &r->n_names);
	if (!rc)
		*out = &r->base;
	return rc;
}

/* ---- Series ---------------------------------------------------------------------- */

struct series_ctx {
	struct call *c;
	char *const *names;
	size_t nnames;
	Types__V1__Labels **v;
	size_t n, cap;
	struct intern seen;  /* with labelNames: the label sets already answered */
	struct buf key;
};

/*
 * With labelNames, a label set restricted to them is answered once, as
 * Pyroscope's Series does: 1 when this one (the `k` pairs of ls) is new.
 */
static int series_new(struct series_ctx *s, const Types__V1__Labels *ls, int *fresh)
{
	size_t before = intern_count(&s->seen);
	uint32_t id;
	int rc = 0;

	s->key.len = 0;
	for (size_t i = 0; i < ls->n_labels && !rc; i++) {
		rc = buf_append(&s->key, ls->labels[i]->name, strlen(ls->labels[i]->name) + 1);
		if (!rc)
			rc = buf_append(&s->key, ls->labels[i]->value,
					strlen(ls->labels[i]->value) + 1);
	}
	if (!rc)
		rc = query__names_intern(s->c->q, &s->seen, s->key.data ? s->key.data : "",
					 s->key.len, &id);
	if (rc)
		return err_set(s->c->q->msg, rc, "Series: label set too large");
	*fresh = intern_count(&s->seen) > before;
	return 0;
}

static int series_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct series_ctx *s = ctx;
	struct call *c = s->c;
	Types__V1__Labels *ls;
	size_t k = 0;

	(void)id;
	(void)part;
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 64;
		Types__V1__Labels **nv = rmem(c, nc * sizeof(*nv));

		if (!nv)
			return rfail(c);
		if (s->n)
			memcpy(nv, s->v, s->n * sizeof(*nv));
		s->v = nv;
		s->cap = nc;
	}
	ls = rmem(c, sizeof(*ls));
	if (ls)
		types__v1__labels__init(ls);
	if (!ls || !(ls->labels = rmem(c, (n ? n : 1) * sizeof(*ls->labels))))
		return rfail(c);
	for (size_t i = 0; i < n; i++) {
		int want = !s->nnames;
		Types__V1__LabelPair *p;

		for (size_t j = 0; j < s->nnames && !want; j++)
			want = !strcmp(s->names[j], l[i].name);
		if (!want)
			continue;
		p = rmem(c, sizeof(*p));
		if (!p)
			return rfail(c);
		types__v1__label_pair__init(p);
		if (!(p->name = rstr(c, l[i].name)) || !(p->value = rstr(c, l[i].value)))
			return rfail(c);
		ls->labels[k++] = p;
	}
	ls->n_labels = k;
	if (s->nnames) {
		int fresh = 0, rc = series_new(s, ls, &fresh);

		if (rc || !fresh)
			return rc;
	}
	s->v[s->n++] = ls;
	return 0;
}

static int series(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Querier__V1__SeriesRequest *req = (const void *)msg;
	Querier__V1__SeriesResponse *r = rmem(c, sizeof(*r));
	struct series_ctx s;
	struct meta m;
	int rc;

	if (!r)
		return rfail(c);
	querier__v1__series_response__init(r);
	memset(&s, 0, sizeof(s));
	s.c = c;
	s.names = req->label_names;
	s.nnames = req->n_label_names;
	buf_init(&s.key, 1 << 20);
	rc = query__names_init(c->q, &s.seen);
	if (rc) {
		buf_release(&s.key);
		return rc;
	}
	rc = meta_init(&m, c->q, req->matchers, req->n_matchers, req->start, req->end);
	if (!rc)
		rc = req_strings_max(req->n_label_names, "labelNames", c->q->msg);
	if (!rc)
		rc = meta_each(&m, series_cb, &s);
	meta_release(&m);
	query__names_release(&s.seen);
	buf_release(&s.key);
	if (rc)
		return rc;
	r->labels_set = s.v;
	r->n_labels_set = s.n;
	*out = &r->base;
	return 0;
}

/* ---- flame graphs ------------------------------------------------------------ */

/* Levels of the call's flame graph as Level messages pointing into it. */
static int flame_levels(struct call *c, Querier__V1__Level ***out, size_t *n)
{
	const struct query__flame *f = &c->flame;
	Querier__V1__Level **v = rmem(c, f->n_levels * sizeof(*v));
	Querier__V1__Level *lv = rmem(c, f->n_levels * sizeof(*lv));

	if (!v || !lv)
		return rfail(c);
	for (size_t d = 0; d < f->n_levels; d++) {
		querier__v1__level__init(&lv[d]);
		lv[d].values = f->levels[d];
		lv[d].n_values = f->n_values[d];
		v[d] = &lv[d];
	}
	*out = v;
	*n = f->n_levels;
	return 0;
}

/*
 * The truncated tree in Pyroscope's tree bytes (format TREE, what profilecli
 * reads): depth first from a virtual root named "", each node as uvarint
 * name length, the name, uvarint self, uvarint child count; the children
 * are pushed on a stack, so they are read back last first.  Nodes of total
 * 0 are left out; an empty tree is no bytes.
 */
static int tree_bytes(struct call *c, const struct qtree *t, ProtobufCBinaryData *out)
{
	struct qctx *q = c->q;
	uint32_t *stack = NULL;
	size_t n = 0, cap = 0;
	struct buf b;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!t->n || !t->nodes[0].total[0])
		return 0;
	buf_init(&b, q->mem.cap);
	rc = query__mem_grow(q, (void **)&stack, &cap, sizeof(*stack), 1, "tree bytes");
	if (!rc)
		stack[n++] = 0;
	while (n && !rc) {
		uint32_t id = stack[--n], k;
		const struct qnode *nd = &t->nodes[id];
		const char *name = id ? intern_str(&t->names, nd->name) : "";
		size_t len = id ? intern_len(&t->names, nd->name) : 0;
		uint64_t kids = 0;

		rc = buf_put_uvarint(&b, len);
		if (!rc && len)
			rc = buf_append(&b, name, len);
		if (!rc)
			rc = buf_put_uvarint(&b, (uint64_t)nd->self[0]);
		for (k = nd->first_child; k != QNONE && !rc; k = t->nodes[k].next_sibling) {
			if (!t->nodes[k].total[0])
				continue;
			rc = query__mem_grow(q, (void **)&stack, &cap, sizeof(*stack), n + 1,
					     "tree bytes");
			if (!rc)
				stack[n++] = k;
			kids++;
		}
		if (!rc)
			rc = buf_put_uvarint(&b, kids);
		if (!rc && (rc = query__ctx_check(q)))
			break;
	}
	query__mem_free(q, stack, cap, sizeof(*stack));
	if (!rc && !(out->data = rmem(c, b.len ? b.len : 1)))
		rc = rfail(c);
	if (!rc) {
		memcpy(out->data, b.data, b.len);
		out->len = b.len;
	} else if (rc == ERR_TOO_LARGE) {
		err_set(q->msg, rc, "the tree needs more than the query memory budget");
	}
	buf_release(&b);
	return rc;
}

/*
 * The merged tree of p, truncated, as tree bytes (`tree`) or as a flame
 * graph (`*g`): what SelectMergeStacktraces and SelectMergeSpanProfile answer.
 */
static int stacktraces(struct call *c, const struct query_params *p, int tree,
		       Querier__V1__FlameGraph **g, ProtobufCBinaryData *tree_out)
{
	Querier__V1__FlameGraph *f;
	int rc = query__run(c->q, p, QUERY__TRUNCATED, 0, &c->side[0]);

	if (!rc && tree)
		return tree_bytes(c, &c->side[0].t, tree_out);
	if (!rc && !(rc = query__flame_build(c->q, &c->side[0].t, 0, &c->flame)))
		c->have_flame = 1;
	if (rc)
		return rc;
	if (!(f = rmem(c, sizeof(*f))))
		return rfail(c);
	querier__v1__flame_graph__init(f);
	/* The names are the tree's, which packing and encoding only read. */
	f->names = (char **)c->flame.names;
	f->n_names = c->flame.n_names;
	f->total = c->flame.total[0];
	f->max_self = c->flame.max_self;
	rc = flame_levels(c, &f->levels, &f->n_levels);
	if (!rc)
		*g = f;
	return rc;
}

/*
 * Format DOT: the whole tree of p as Graphviz's call graph, at most
 * maxNodes functions (unset or 0: Pyroscope's 100), into *out (the arena's).
 */
static int dot_string(struct call *c, const struct query_params *p, char **out)
{
	struct buf b;
	int rc;

	rc = query__run(c->q, p, QUERY__TREE, 0, &c->side[0]);
	if (rc)
		return rc;
	buf_init(&b, c->q->mem.cap);
	rc = query__dot_write(c->q, &c->side[0].t, c->side[0].sel.profile_type,
			      p->max_nodes > 0 ? (size_t)p->max_nodes : QUERY_DOT_DEFAULT_MAX_NODES,
			      &b);
	if (!rc && !(*out = rmem(c, b.len + 1)))
		rc = rfail(c);
	if (!rc) {
		memcpy(*out, b.data ? b.data : "", b.len);
		(*out)[b.len] = '\0';
	} else if (rc == ERR_TOO_LARGE) {
		err_set(c->q->msg, rc, "the call graph needs more than the query memory budget");
	}
	buf_release(&b);
	return rc;
}

static int merge_stacktraces(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Querier__V1__SelectMergeStacktracesRequest *req = (const void *)msg;
	Querier__V1__SelectMergeStacktracesResponse *r;
	struct query_params p;
	int rc;

	rc = req_params(req->profile_typeid, req->label_selector, req->start, req->end,
			req->max_nodes, c->lim, &p, c->q->msg);
	if (!rc)
		rc = req_call_site(c, req->stack_trace_selector, &p);
	if (!rc)
		rc = req_spans(c, req->span_selector, req->n_span_selector, &p);
	if (!rc)
		rc = req_profile_ids(c, req->profile_id_selector, req->n_profile_id_selector, &p);
	if (!rc && req->format > QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_DOT)
		rc = err_set(c->q->msg, ERR_INVALID,
			     "field format: only PROFILE_FORMAT_FLAMEGRAPH, _TREE and _DOT "
			     "are answered (for pprof, call SelectMergeProfile)");
	if (rc)
		return rc;
	if (!(r = rmem(c, sizeof(*r))))
		return rfail(c);
	querier__v1__select_merge_stacktraces_response__init(r);
	if (req->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_DOT)
		rc = dot_string(c, &p, &r->dot);
	else
		rc = stacktraces(c, &p, req->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE,
			 &r->flamegraph, &r->tree);
	if (!rc)
		*out = &r->base;
	return rc;
}

/*
 * Traces to profiles: SelectMergeStacktraces of the samples of the spans
 * named (Pyroscope's deprecated RPC: format TREE gives tree bytes, any other
 * format a flame graph; an empty selector selects every sample).
 */
static int merge_span_profile(struct call *c, const ProtobufCMessage *msg,
			      ProtobufCMessage **out)
{
	const Querier__V1__SelectMergeSpanProfileRequest *req = (const void *)msg;
	Querier__V1__SelectMergeSpanProfileResponse *r;
	struct query_params p;
	int rc;

	rc = req_params(req->profile_typeid, req->label_selector, req->start, req->end,
			req->max_nodes, c->lim, &p, c->q->msg);
	if (!rc)
		rc = req_spans(c, req->span_selector, req->n_span_selector, &p);
	if (rc)
		return rc;
	if (!(r = rmem(c, sizeof(*r))))
		return rfail(c);
	querier__v1__select_merge_span_profile_response__init(r);
	rc = stacktraces(c, &p, req->format == QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE,
			 &r->flamegraph, &r->tree);
	if (!rc)
		*out = &r->base;
	return rc;
}

/* The members JSON adds after SelectMergeStacktraces' message: symbolization. */
static int merge_stacktraces_json(struct call *c, struct buf *out)
{
	const struct qmerge *ms[1] = { &c->side[0].m };

	return query__sym_json(ms, 1, out);
}

static int diff(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Querier__V1__DiffRequest *req = (const void *)msg;
	const Querier__V1__SelectMergeStacktracesRequest *lr = req->left, *rr = req->right;
	Querier__V1__DiffResponse *r;
	Querier__V1__FlameGraphDiff *g;
	struct query_params l, rp;
	int rc;

	if (!lr || !rr)
		return err_set(c->q->msg, ERR_INVALID, "Diff: field %s is required",
			       !lr ? "left" : "right");
	if ((rc = req_params(lr->profile_typeid, lr->label_selector, lr->start, lr->end,
			     lr->max_nodes, c->lim, &l, c->q->msg)) ||
	    (rc = req_params(rr->profile_typeid, rr->label_selector, rr->start, rr->end,
			     rr->max_nodes, c->lim, &rp, c->q->msg)) ||
	    (rc = req_call_site(c, lr->stack_trace_selector, &l)) ||
	    (rc = req_call_site(c, rr->stack_trace_selector, &rp)) ||
	    (rc = req_profile_ids(c, lr->profile_id_selector, lr->n_profile_id_selector, &l)) ||
	    (rc = req_profile_ids(c, rr->profile_id_selector, rr->n_profile_id_selector, &rp)))
		return rc;
	rc = query__run_diff(c->q, &l, &rp, 0, &c->side[0], &c->side[1], &c->tree);
	if (rc)
		return rc;
	c->have_tree = 1;
	rc = query__flame_build(c->q, &c->tree, 1, &c->flame);
	if (rc)
		return rc;
	c->have_flame = 1;
	r = rmem(c, sizeof(*r));
	g = rmem(c, sizeof(*g));
	if (!r || !g)
		return rfail(c);
	querier__v1__diff_response__init(r);
	querier__v1__flame_graph_diff__init(g);
	g->names = (char **)c->flame.names;
	g->n_names = c->flame.n_names;
	g->total = c->flame.total[0] + c->flame.total[1];
	g->max_self = c->flame.max_self;
	g->leftticks = c->flame.total[0];
	g->rightticks = c->flame.total[1];
	rc = flame_levels(c, &g->levels, &g->n_levels);
	if (rc)
		return rc;
	r->flamegraph = g;
	*out = &r->base;
	return 0;
}

/* ---- SelectMergeProfile ------------------------------------------------------- */

static int merge_profile(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Querier__V1__SelectMergeProfileRequest *req = (const void *)msg;
	Perftools__Profiles__Profile *prof;
	struct query_params p;
	int rc;

	rc = req_params(req->profile_typeid, req->label_selector, req->start, req->end,
			req->max_nodes, c->lim, &p, c->q->msg);
	if (!rc)
		rc = req_profile_ids(c, req->profile_id_selector, req->n_profile_id_selector, &p);
	if (!rc)
		rc = query__run(c->q, &p, QUERY__COLLECTED, 0, &c->side[0]);
	if (!rc)
		rc = query__pprof_build(c->q, &c->side[0].m, c->side[0].sel.profile_type, p.from_ns,
					p.until_ns, c->a, &prof);
	if (!rc)
		*out = &prof->base;
	return rc;
}

/* ---- SelectSeries ----------------------------------------------------------- */

/*
 * Pyroscope's grid: point k is labelled start + k*step (ms) and holds the
 * profiles with start + (k-1)*step < t <= start + k*step, so profiles of
 * [start - step, start] make point 0 and no point lies after end.  A
 * series' labels are the groupBy labels it has, sorted by name; series are
 * ordered by their points' sum, largest first, then by labels.
 */
struct ss {
	struct qctx *q;
	const char **by;        /* groupBy names, sorted, distinct */
	size_t nby, bycap;
	struct intern keys;     /* group key -> group id (ids from 2) */
	uint64_t *sid;          /* selected series */
	uint32_t *sgroup;       /* their group */
	size_t n, cap, gcap;
	int64_t start, step;    /* ms */
	size_t nb;
	int64_t *cells;         /* group-major buckets: sums */
	uint32_t *cnt;          /* and profile counts */
	size_t ccap, ncap;
	int64_t cur_group;
	int64_t limit;          /* top N groups by total; 0: all */
	int average;
	int rc;
	/* Exemplars (asked for: ex.q set): per selected series the id of its
	 * labels without the groupBy ones, and the candidates. */
	struct qexemplars ex;
	uint32_t *slset;
	size_t lcap;
	uint32_t cur_lset;
};

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The group key: per groupBy name, 0 (absent) or 1 and the value with its NUL. */
static int ss_series(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct ss *s = ctx;
	struct buf key;
	uint32_t g;
	int rc = 0;

	(void)part;
	buf_init(&key, 1 << 16);
	for (size_t k = 0; k < s->nby && !rc; k++) {
		const char *v = NULL;

		for (size_t i = 0; i < n && !v; i++)
			if (!strcmp(l[i].name, s->by[k]))
				v = l[i].value;
		rc = buf_putc(&key, v ? 1 : 0);
		if (!rc && v)
			rc = buf_append(&key, v, strlen(v) + 1);
	}
	if (!rc)
		rc = query__names_intern(s->q, &s->keys, key.data ? key.data : "", key.len, &g);
	buf_release(&key);
	if (rc)
		return err_set(s->q->msg, rc, "SelectSeries: group key too large");
	if ((rc = query__mem_grow(s->q, (void **)&s->sid, &s->cap, sizeof(*s->sid), s->n + 1,
				  "series")) ||
	    (rc = query__mem_grow(s->q, (void **)&s->sgroup, &s->gcap, sizeof(*s->sgroup),
				  s->n + 1, "series")))
		return rc;
	if (s->ex.q &&
	    ((rc = query__mem_grow(s->q, (void **)&s->slset, &s->lcap, sizeof(*s->slset), s->n + 1,
				   "series")) ||
	     (rc = query__ex_lset(&s->ex, l, n, s->by, s->nby, &s->slset[s->n]))))
		return rc;
	s->sid[s->n] = id;
	s->sgroup[s->n++] = g;
	return 0;
}

/* Profile p of the current series, the sum of its values `sum`, into its point. */
static int ss_add(struct ss *s, const struct store_profile_view *p, int64_t sum)
{
	int64_t t = p->meta.time_ns / 1000000, b = 0;
	size_t at;

	if (t > s->start)
		b = (t - s->start + s->step - 1) / s->step;
	if ((size_t)b >= s->nb)
		return 0;
	at = (size_t)s->cur_group * s->nb + (size_t)b;
	s->cells[at] += sum;
	s->cnt[at]++;
	if (s->ex.q && !uuid_is_nil(p->meta.id))
		return query__ex_add(&s->ex, at, p->meta.id, t, sum, s->cur_lset);
	return 0;
}

static int ss_profile(void *ctx, const struct store_profile_view *p)
{
	struct ss *s = ctx;
	int64_t sum = 0;

	if ((s->rc = query__ctx_check(s->q)))
		return 1;
	for (size_t i = 0; i < p->n; i++)
		sum += p->values[i];
	return (s->rc = ss_add(s, p, sum)) != 0;
}

/* The zeroed points of every group, once the series are selected. */
static int ss_cells(struct ss *s)
{
	size_t ncells;
	int rc;

	if (intern_count(&s->keys) > SIZE_MAX / s->nb)
		return err_set(s->q->msg, ERR_TOO_LARGE, "SelectSeries: too many groups");
	ncells = intern_count(&s->keys) * s->nb;
	rc = query__mem_grow(s->q, (void **)&s->cells, &s->ccap, sizeof(*s->cells), ncells,
			     "series points");
	if (!rc)
		rc = query__mem_grow(s->q, (void **)&s->cnt, &s->ncap, sizeof(*s->cnt), ncells,
				     "series points");
	if (!rc) {
		memset(s->cells, 0, ncells * sizeof(*s->cells));
		memset(s->cnt, 0, ncells * sizeof(*s->cnt));
	}
	return rc;
}

/* Exemplar e as a message, its strings copied into the response. */
static int ex_msg(struct call *c, const struct qexemplars *x, const struct qex *e,
		  Types__V1__Exemplar **out)
{
	Types__V1__Exemplar *m = rmem(c, sizeof(*m));
	const char *l = intern_str(&x->lsets, e->lset), *end = l + intern_len(&x->lsets, e->lset);
	size_t n = 0;

	if (!m)
		return rfail(c);
	types__v1__exemplar__init(m);
	m->timestamp = e->time_ms;
	m->value = e->value;
	if (!uuid_is_nil(e->id)) {
		if (!(m->profile_id = rmem(c, UUID_TEXT + 1)))
			return rfail(c);
		uuid_format(e->id, m->profile_id);
	}
	if (e->span) {
		static const char digits[] = "0123456789abcdef";

		/* The 8 bytes little-endian, as Pyroscope's SpanIDToHex writes them. */
		if (!(m->span_id = rmem(c, 17)))
			return rfail(c);
		for (int b = 0; b < 8; b++) {
			m->span_id[2 * b] = digits[(e->span >> (8 * b + 4)) & 15];
			m->span_id[2 * b + 1] = digits[(e->span >> (8 * b)) & 15];
		}
		m->span_id[16] = '\0';
	}
	for (const char *p = l; p < end; p += strlen(p) + 1)
		n++;
	if (!(m->labels = rmem(c, (n ? n / 2 : 1) * sizeof(*m->labels))))
		return rfail(c);
	for (const char *p = l; p < end;) {
		Types__V1__LabelPair *lp = rmem(c, sizeof(*lp));

		if (!lp)
			return rfail(c);
		types__v1__label_pair__init(lp);
		if (!(lp->name = rstr(c, p)))
			return rfail(c);
		p += strlen(p) + 1;
		if (!(lp->value = rstr(c, p)))
			return rfail(c);
		p += strlen(p) + 1;
		m->labels[m->n_labels++] = lp;
	}
	*out = m;
	return 0;
}

static double ss_value(const struct ss *s, size_t at)
{
	return s->average ? (double)s->cells[at] / s->cnt[at] : (double)s->cells[at];
}

struct ss_rank {
	const struct ss *s;
	size_t g;
	double total;
};

/* Pyroscope's CompareLabelPairs over two group keys: by name, then value, then count. */
static int cmp_keys(const struct ss *s, const char *x, const char *y)
{
	size_t i = 0, j = 0;

	for (;;) {
		int c;

		while (i < s->nby && !*x)
			i++, x++;
		while (j < s->nby && !*y)
			j++, y++;
		if (i == s->nby || j == s->nby)
			return (i < s->nby) - (j < s->nby);
		if (i != j)
			return strcmp(s->by[i], s->by[j]);
		x++, y++;
		if ((c = strcmp(x, y)))
			return c;
		x += strlen(x) + 1, y += strlen(y) + 1;
		i++, j++;
	}
}

/* Larger total first; equal totals by their labels. */
static int cmp_rank(const void *a, const void *b)
{
	const struct ss_rank *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return cmp_keys(x->s, intern_str(&x->s->keys, (uint32_t)x->g),
			intern_str(&y->s->keys, (uint32_t)y->g));
}

/*
 * The groups to emit, in order (Pyroscope's TopSeries): by total, then
 * labels; with a limit, only the first `limit`.  *order is charged scratch
 * of *ocap entries.
 */
static int ss_order(struct ss *s, size_t **order, size_t *ocap, size_t *n)
{
	size_t ng = intern_count(&s->keys) > 2 ? intern_count(&s->keys) - 2 : 0, rcap = 0;
	struct ss_rank *r = NULL;
	int rc;

	*n = 0;
	rc = query__mem_grow(s->q, (void **)order, ocap, sizeof(**order), ng ? ng : 1,
			     "SelectSeries");
	if (!rc)
		rc = query__mem_grow(s->q, (void **)&r, &rcap, sizeof(*r), ng ? ng : 1,
				     "SelectSeries");
	if (rc)
		return rc;
	for (size_t i = 0; i < ng; i++) {
		r[i].s = s;
		r[i].g = 2 + i;
		r[i].total = 0;
		for (size_t b = 0; b < s->nb; b++)
			if (s->cnt[r[i].g * s->nb + b])
				r[i].total += ss_value(s, r[i].g * s->nb + b);
	}
	if (ng)
		qsort(r, ng, sizeof(*r), cmp_rank);
	*n = s->limit && (uint64_t)s->limit < ng ? (size_t)s->limit : ng;
	for (size_t i = 0; i < *n; i++)
		(*order)[i] = r[i].g;
	query__mem_free(s->q, r, rcap, sizeof(*r));
	return 0;
}

/* One series of the response: group g's labels and its points. */
static int ss_series_msg(struct call *c, const struct ss *s, size_t g, Types__V1__Series **out)
{
	Types__V1__Series *se = rmem(c, sizeof(*se));
	const char *k = intern_str(&s->keys, g);
	size_t np = 0;

	if (!se)
		return rfail(c);
	types__v1__series__init(se);
	for (size_t b = 0; b < s->nb; b++)
		np += s->cnt[g * s->nb + b] != 0;
	se->labels = rmem(c, (s->nby ? s->nby : 1) * sizeof(*se->labels));
	se->points = rmem(c, (np ? np : 1) * sizeof(*se->points));
	if (!se->labels || !se->points)
		return rfail(c);
	for (size_t i = 0; i < s->nby; i++) {
		Types__V1__LabelPair *p;

		if (!*k++)
			continue;
		p = rmem(c, sizeof(*p));
		if (!p)
			return rfail(c);
		types__v1__label_pair__init(p);
		if (!(p->name = rstr(c, s->by[i])) || !(p->value = rstr(c, k)))
			return rfail(c);
		se->labels[se->n_labels++] = p;
		k += strlen(k) + 1;
	}
	for (size_t b = 0; b < s->nb; b++) {
		size_t at = g * s->nb + b;
		Types__V1__Point *pt;

		if (!s->cnt[at])
			continue;
		pt = rmem(c, sizeof(*pt));
		if (!pt)
			return rfail(c);
		types__v1__point__init(pt);
		pt->value = ss_value(s, at);
		pt->timestamp = s->start + (int64_t)b * s->step;
		if (s->ex.q) {
			const struct qex *e = query__ex_find(&s->ex, at);
			int rc;

			if (e) {
				if (!(pt->exemplars = rmem(c, sizeof(*pt->exemplars))))
					return rfail(c);
				if ((rc = ex_msg(c, &s->ex, e, &pt->exemplars[0])))
					return rc;
				pt->n_exemplars = 1;
			}
		}
		se->points[se->n_points++] = pt;
	}
	*out = se;
	return 0;
}

static int ss_response(struct call *c, struct ss *s, Querier__V1__SelectSeriesResponse **out)
{
	Querier__V1__SelectSeriesResponse *r = rmem(c, sizeof(*r));
	size_t *order = NULL, ocap = 0, n = 0;
	int rc;

	if (!r)
		return rfail(c);
	querier__v1__select_series_response__init(r);
	rc = ss_order(s, &order, &ocap, &n);
	if (!rc && !(r->series = rmem(c, (n ? n : 1) * sizeof(*r->series))))
		rc = rfail(c);
	for (size_t i = 0; i < n && !rc; i++)
		rc = ss_series_msg(c, s, order[i], &r->series[r->n_series++]);
	query__mem_free(s->q, order, ocap, sizeof(*order));
	if (!rc)
		*out = r;
	return rc;
}

static void ss_release(struct ss *s)
{
	query__names_release(&s->keys);
	query__mem_free(s->q, s->by, s->bycap, sizeof(*s->by));
	query__mem_free(s->q, s->sid, s->cap, sizeof(*s->sid));
	query__mem_free(s->q, s->sgroup, s->gcap, sizeof(*s->sgroup));
	query__mem_free(s->q, s->cells, s->ccap, sizeof(*s->cells));
	query__mem_free(s->q, s->cnt, s->ncap, sizeof(*s->cnt));
	query__mem_free(s->q, s->slset, s->lcap, sizeof(*s->slset));
	query__ex_release(&s->ex);
}

/* Checks the request's step, limit and aggregation and sets up s's grid. */
/* The grid and grouping of a SelectSeries or SelectHeatmap request. */
struct ss_req {
	double step;
	int64_t limit;
	int aggregation;
	char *const *group_by;
	size_t n_group_by;
};

static int ss_setup(struct ss *s, const struct ss_req *req, const struct query_params *p,
		    struct err_msg *msg)
{
	int64_t end = p->until_ns / 1000000;
	int rc;

	if (req->limit < 0)
		return err_set(msg, ERR_INVALID, "field limit: %lld is negative",
			       (long long)req->limit);
	if (req->step != req->step || req->step < 0 || req->step > 1e9 ||
	    (req->step > 0 && req->step < 0.001))
		return err_set(msg, ERR_INVALID, "field step: must be at least 1ms (0.001)");
	if (req->aggregation != TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_SUM &&
	    req->aggregation != TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE)
		return err_set(msg, ERR_INVALID, "field aggregation: unknown value %d",
			       (int)req->aggregation);
	s->average = req->aggregation ==
		     TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE;
	s->limit = req->limit;
	/* Seconds to whole milliseconds, truncated as Pyroscope does. */
	s->step = req->step > 0 ? (int64_t)(req->step * 1000) : 15000;
	if (s->step < 1)
		s->step = 1;
	s->start = p->from_ns / 1000000;
	if ((end - s->start) / s->step >= MAX_SERIES_POINTS)
		return err_set(msg, ERR_INVALID,
			       "SelectSeries: more than %d points per series; raise step",
			       MAX_SERIES_POINTS);
	s->nb = (size_t)((end - s->start) / s->step) + 1;
	rc = query__mem_grow(s->q, (void **)&s->by, &s->bycap, sizeof(*s->by),
			     req->n_group_by ? req->n_group_by : 1, "groupBy");
	if (rc)
		return rc;
	for (size_t i = 0; i < req->n_group_by; i++)
		s->by[i] = req->group_by[i];
	if (req->n_group_by)
		qsort(s->by, req->n_group_by, sizeof(*s->by), cmp_cstr);
	for (size_t i = 0; i < req->n_group_by; i++)
		if (!s->nby || strcmp(s->by[s->nby - 1], s->by[i]))
			s->by[s->nby++] = s->by[i];
	return 0;
}

/* The profiles SelectSeries reads for a grid of nb points of step ms from
 * start ms: [start - step, end], in whole milliseconds, as Pyroscope reads them. */
static void ss_range(int64_t start, int64_t step, size_t nb, int64_t *from, int64_t *until)
{
	int64_t last;

	*from = (start - step) * 1000000;
	if (*from < 0)
		*from = 0;
	/* Saturated where the nanoseconds of the last point would overflow. */
	last = start + (int64_t)(nb - 1) * step;
	*until = last < INT64_MAX / 1000000 ? last * 1000000 + 1000000 : INT64_MAX;
}

static int select_series(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Querier__V1__SelectSeriesRequest *req = (const void *)msg;
	struct qctx *q = c->q;
	Querier__V1__SelectSeriesResponse *r = NULL;
	struct query_params p;
	struct query_selector sel;
	int64_t from, until;
	struct store_reader *rd = NULL;
	struct ss s;
	int rc;

	rc = req_params(req->profile_typeid, req->label_selector, req->start, req->end, 0, c->lim,
			&p, q->msg);
	if (!rc)
		rc = req_strings_max(req->n_group_by, "groupBy", q->msg);
	if (!rc && req->exemplar_type == TYPES__V1__EXEMPLAR_TYPE__EXEMPLAR_TYPE_SPAN)
		rc = err_set(q->msg, ERR_INVALID,
			     "field exemplarType: EXEMPLAR_TYPE_SPAN is not answered by SelectSeries "
			     "(as Pyroscope; SelectHeatmap answers it)");
	else if (!rc && (unsigned)req->exemplar_type > TYPES__V1__EXEMPLAR_TYPE__EXEMPLAR_TYPE_SPAN)
		rc = err_set(q->msg, ERR_INVALID, "field exemplarType: unknown value %d",
			     (int)req->exemplar_type);
	if (rc)
		return rc;
	memset(&s, 0, sizeof(s));
	s.q = q;
	{
		const struct ss_req sr = { req->step, req->limit, (int)req->aggregation, req->group_by,
					   req->n_group_by };

		rc = ss_setup(&s, &sr, &p, q->msg);
	}
	if (!rc && req->exemplar_type == TYPES__V1__EXEMPLAR_TYPE__EXEMPLAR_TYPE_INDIVIDUAL)
		rc = query__ex_init(q, &s.ex);
	if (!rc)
		rc = query__select(&p, &sel, q->msg);
	if (rc) {
		ss_release(&s);
		return rc;
	}
	ss_range(s.start, s.step, s.nb, &from, &until);
	rc = query__names_init(q, &s.keys);
	/* Through a reader, as every read: a querier's also asks its
	 * ingesters, so the query's view is shared when it covers the range. */
	if (!rc && c->rd && c->rd_from <= from && until <= c->rd_until)
		rd = c->rd;
	else if (!rc)
		rc = query__reader_open(q, &sel, 1, from, until, &rd);
	if (!rc)
		rc = query__select_series_in(q, rd, &sel, ss_series, &s);
	if (!rc)
		rc = ss_cells(&s);
	for (size_t i = 0; i < s.n && !rc; i++) {
		s.cur_group = s.sgroup[i];
		s.cur_lset = s.slset ? s.slset[i] : 0;
		rc = query__profiles_each(q, rd, s.sid[i], from, until, ss_profile, &s);
		if (s.rc)
			rc = s.rc;
		else if (rc > 0)
			rc = 0;
	}
	if (!rc && s.ex.q)
		rc = query__ex_pick(&s.ex);
	if (!rc)
		rc = ss_response(c, &s, &r);
	if (!rc)
		*out = &r->base;
	ss_release(&s);
	if (rd != c->rd)
		store_reader_close(rd);
	query_selector_release(&sel);
	return rc;
}

/* ---- /pyroscope/render's timeline -------------------------------------------- */

/*
 * Pyroscope's point interval for a render of [from, until) ms: the range
 * over 1500 points, at least 15 s, rounded up to a round interval.
 * Returns seconds (every value at or above 15 s is whole).
 */
static int64_t render_step_s(int64_t from_ms, int64_t until_ms)
{
	static const int64_t lim_ms[] = { 17500, 25000, 45000, 90000, 210000, 450000, 750000,
					  1050000, 1500000, 2700000, 5400000, 9000000, 16200000,
					  32400000, 86400000, 172800000, 604800000, 1814400000,
					  3628800000LL };
	static const int64_t step_s[] = { 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800,
					  3600, 7200, 10800, 21600, 43200, 86400, 86400, 604800,
					  2592000 };
	int64_t iv = (until_ms - from_ms) / 1500;

	if (iv < 15000)
		return 15;
	for (size_t i = 0; i < sizeof(lim_ms) / sizeof(lim_ms[0]); i++)
		if (iv <= lim_ms[i] && (i + 1 < sizeof(lim_ms) / sizeof(lim_ms[0]) || iv < lim_ms[i]))
			return step_s[i];
	return 31536000;
}

/*
 * One timeline as Pyroscope's timeline.New writes it from a series' points:
 * the range aligned down to the step, one sample per step from there, each
 * point's value (truncated to an integer) at its step, zeros elsewhere.
 */
static int put_render_timeline(const Types__V1__Series *se, int64_t start_ms, int64_t end_ms,
			       int64_t step_s, struct buf *out)
{
	int64_t d = step_s * 1000, s0 = start_ms / d * d, e0 = end_ms / d * d;
	int64_t n = s0 < e0 ? (e0 / 1000 - s0 / 1000) / step_s : 0, at = 0, prev = 0;
	int rc = buf_printf(out, "{\"startTime\":%lld,\"samples\":[", (long long)(s0 / 1000));
	int first = 1;

	for (size_t i = 0; se && i < se->n_points && !rc; i++) {
		const Types__V1__Point *pt = se->points[i];
		int64_t k;

		if (pt->timestamp < s0 || pt->timestamp >= e0)
			continue;
		k = first ? (pt->timestamp / 1000 - s0 / 1000) / step_s
			  : at + (pt->timestamp / 1000 - prev / 1000) / step_s - 1;
		for (; at < k && !rc; at++)
			rc = buf_puts(out, at ? ",0" : "0");
		if (!rc)
			rc = buf_printf(out, "%s%llu", at ? "," : "",
					(unsigned long long)(uint64_t)pt->value);
		at++;
		prev = pt->timestamp;
		first = 0;
	}
	for (; at < n && !rc; at++)
		rc = buf_puts(out, at ? ",0" : "0");
	if (!rc)
		rc = buf_printf(out, "],\"durationDelta\":%lld,\"watermarks\":{}}", (long long)step_s);
	return rc;
}

struct rgroup {
	const char *key;
	size_t i;
};

static int cmp_rgroup(const void *a, const void *b)
{
	const struct rgroup *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Pyroscope's `groups`: a map from each series' value of the first groupBy
 * label ("*" when it has none) to its timeline, written as Go writes a map:
 * keys sorted, the last series of a key winning.
 */
static int put_render_groups(struct call *c, const Querier__V1__SelectSeriesResponse *r,
			     const char *by, int64_t start, int64_t end, int64_t step,
			     struct buf *out)
{
	struct rgroup *g = rmem(c, (r->n_series ? r->n_series : 1) * sizeof(*g));
	int rc = 0, n = 0;

	if (!g)
		return rfail(c);
	for (size_t i = 0; i < r->n_series; i++) {
		g[i].key = "*";
		g[i].i = i;
		for (size_t j = 0; j < r->series[i]->n_labels; j++)
			if (!strcmp(r->series[i]->labels[j]->name, by))
				g[i].key = r->series[i]->labels[j]->value;
	}
	qsort(g, r->n_series, sizeof(*g), cmp_rgroup);
	rc = buf_putc(out, '{');
	for (size_t i = 0; i < r->n_series && !rc; i++) {
		if (i + 1 < r->n_series && !strcmp(g[i].key, g[i + 1].key))
			continue;
		rc = n++ ? buf_putc(out, ',') : 0;
		if (!rc)
			rc = buf_put_json_str(out, g[i].key, strlen(g[i].key));
		if (!rc)
			rc = buf_putc(out, ':');
		if (!rc)
			rc = put_render_timeline(r->series[g[i].i], start, end, step, out);
	}
	return rc ? rc : buf_putc(out, '}');
}

void query__render_read_range(const struct query_params *p, int64_t *from_ns,
			      int64_t *until_ns)
{
	int64_t start = p->from_ns / 1000000, end = p->until_ns / 1000000;
	int64_t step = render_step_s(start, end) * 1000;

	/* As select_series sees the timeline's request; an empty range is
	 * refused before any read. */
	ss_range(start, step, end > start ? (size_t)((end - start) / step) + 1 : 1, from_ns,
		 until_ns);
	if (*from_ns > p->from_ns)
		*from_ns = p->from_ns;
	if (*until_ns < p->until_ns)
		*until_ns = p->until_ns;
}

/* The SelectSeries request of render's timeline for p, its step in seconds. */
static void render_req(const struct query_params *p, Querier__V1__SelectSeriesRequest *req,
		       int64_t *step)
{
	int64_t start = p->from_ns / 1000000, end = p->until_ns / 1000000;

	*step = render_step_s(start, end);
	req->profile_typeid = (char *)p->profile_type;
	req->label_selector = (char *)(p->query ? p->query : "");
	req->start = start;
	req->end = end;
	req->step = (double)*step;
	req->group_by = (char **)p->group_by;
	req->n_group_by = p->n_group_by;
	req->aggregation = p->average ? TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE
				      : TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_SUM;
}

/* The timeline and groups of render p from SelectSeries' answer r. */
static int render_write(struct call *c, const struct query_params *p,
			const Querier__V1__SelectSeriesResponse *r, int64_t step,
			struct buf *timeline, struct buf *groups)
{
	int64_t start = p->from_ns / 1000000, end = p->until_ns / 1000000;
	/* The main timeline is the one series' (none, or several: zeros), as Pyroscope's. */
	int rc = put_render_timeline(r->n_series == 1 ? r->series[0] : NULL, start, end, step,
				     timeline);

	if (!rc && p->n_group_by)
		rc = put_render_groups(c, r, p->group_by[0], start, end, step, groups);
	return rc;
}

int query__render_timeline(struct qctx *q, const struct query_params *p,
			   const struct qmerge *m, struct buf *timeline, struct buf *groups)
{
	Querier__V1__SelectSeriesRequest req = QUERIER__V1__SELECT_SERIES_REQUEST__INIT;
	ProtobufCMessage *resp = NULL;
	int64_t step;
	struct arena a;
	struct call c;
	int rc;

	render_req(p, &req, &step);
	call_arena(&a, 0, &p->limits);
	call_init(&c, q, &p->limits, &a);
	if (m && m->rd) {
		c.rd = m->rd;
		c.rd_from = m->rd_from;
		c.rd_until = m->rd_until;
	}
	rc = select_series(&c, &req.base, &resp);
	if (!rc)
		rc = render_write(&c, p, (Querier__V1__SelectSeriesResponse *)resp, step, timeline,
				  groups);
	call_release(&c);
	arena_release(&a);
	return rc;
}

struct rtap {
	struct query__rtap t; /* first: what the caller holds */
	struct ss s;
	int64_t step;         /* seconds */
};

static int rtap_profile(void *ctx, size_t i, const struct store_profile_view *p, int64_t sum)
{
	struct ss *s = ctx;
	int rc;

	if (!s->cells && (rc = ss_cells(s)))
		return rc;
	s->cur_group = s->sgroup[i];
	return ss_add(s, p, sum);
}

/*
 * As select_series sets up render_req's request, up to its read: the same
 * checks (any failing leaves the timeline to query__render_timeline, which
 * reports it where it did), grid and series grouping, without exemplars.
 */
int query__render_tap(struct qctx *q, const struct query_params *p, struct query__rtap **out)
{
	Querier__V1__SelectSeriesRequest req = QUERIER__V1__SELECT_SERIES_REQUEST__INIT;
	struct query_params sp;
	struct err_msg em;
	struct rtap *t;
	int64_t from, until, rd_from, rd_until;
	int rc;

	*out = NULL;
	if (!(t = calloc(1, sizeof(*t))))
		return 0;
	t->s.q = q;
	render_req(p, &req, &t->step);
	{
		const struct ss_req sr = { req.step, req.limit, (int)req.aggregation, req.group_by,
					   req.n_group_by };

		/* A start or end of 0 is "now" to SelectSeries: read when it is. */
		rc = !req.start || !req.end;
		if (!rc)
			rc = req_params(req.profile_typeid, req.label_selector, req.start, req.end, 0,
					&p->limits, &sp, &em);
		if (!rc)
			rc = req_strings_max(req.n_group_by, "groupBy", &em);
		if (!rc)
			rc = ss_setup(&t->s, &sr, &sp, &em);
	}
	if (!rc) {
		ss_range(t->s.start, t->s.step, t->s.nb, &from, &until);
		query__render_read_range(p, &rd_from, &rd_until);
		rc = from < rd_from || until > rd_until;
	}
	if (rc) {
		query__render_tap_free(&t->t);
		return 0;
	}
	rc = query__names_init(q, &t->s.keys);
	if (rc) {
		query__render_tap_free(&t->t);
		return rc;
	}
	t->t.tap.series = ss_series;
	t->t.tap.profile = rtap_profile;
	t->t.tap.ctx = &t->s;
	t->t.tap.from_ns = from;
	t->t.tap.until_ns = until;
	*out = &t->t;
	return 0;
}

int query__render_tap_timeline(struct qctx *q, const struct query_params *p,
			       struct query__rtap *rt, struct buf *timeline, struct buf *groups)
{
	struct rtap *t = (struct rtap *)rt;
	Querier__V1__SelectSeriesResponse *r = NULL;
	struct arena a;
	struct call c;
	int rc = 0;

	if (!t->s.cells)
		rc = ss_cells(&t->s);
	if (rc)
		return rc;
	call_arena(&a, 0, &p->limits);
	call_init(&c, q, &p->limits, &a);
	rc = ss_response(&c, &t->s, &r);
	if (!rc)
		rc = render_write(&c, p, r, t->step, timeline, groups);
	call_release(&c);
	arena_release(&a);
	return rc;
}

void query__render_tap_free(struct query__rtap *rt)
{
	struct rtap *t = (struct rtap *)rt;

	if (!t)
		return;
	ss_release(&t->s);
	free(t);
}

/* ---- SelectHeatmap ------------------------------------------------------------- */

/*
 * Pyroscope's heatmap of individual profiles: each profile's total is a
 * point at its time; a point falls in the slot whose right edge is the
 * first start + k*step at or after it (clamped to [start, end rounded up]),
 * and in one of 20 value buckets spread evenly from the smallest total to
 * the largest (at least 0; one more than the smallest when all are equal).  Series group by
 * the groupBy labels as SelectSeries does, are ordered by labels, and with
 * a limit the N with the most profiles are kept.
 */
enum { HM_BUCKETS = 20 };

struct hm_pt {
	uint32_t group;
	int64_t ts;     /* slot's right edge, ms */
	int64_t v;
	int y;
	int64_t time;   /* the profile's time, ns */
	uint64_t span;  /* span heatmaps: the span id */
	uint8_t id[UUID_BYTES]; /* individual heatmaps: the profile's id (nil: none) */
	uint32_t lset;  /* with exemplars: its labels (struct ss.ex) */
};

struct hm {
	struct ss s;
	struct hm_pt *pt;
	size_t n, cap;
	int64_t end_r;  /* end rounded up to the grid */
	int spans;      /* HEATMAP_QUERY_TYPE_SPAN: a point per (profile time, span) */
};

static int64_t hm_round_up(int64_t ts, int64_t start, int64_t step)
{
	int64_t mod = start % step;

	ts -= mod;
	if (ts % step)
		ts = (ts / step + 1) * step;
	return ts + mod;
}

/* A point of the current group at profile time `time_ns` (ms slot computed here). */
static int hm_add(struct hm *h, int64_t time_ns, uint64_t span, const uint8_t *id, int64_t v)
{
	int64_t ts = hm_round_up(time_ns / 1000000, h->s.start, h->s.step);

	if ((h->s.rc = query__mem_grow(h->s.q, (void **)&h->pt, &h->cap, sizeof(*h->pt), h->n + 1,
				       "heatmap points")))
		return 1;
	h->pt[h->n].group = (uint32_t)h->s.cur_group;
	h->pt[h->n].ts = ts < h->s.start ? h->s.start : ts > h->end_r ? h->end_r : ts;
	h->pt[h->n].v = v;
	h->pt[h->n].y = 0;
	h->pt[h->n].time = time_ns;
	h->pt[h->n].span = span;
	if (id)
		memcpy(h->pt[h->n].id, id, UUID_BYTES);
	else
		memset(h->pt[h->n].id, 0, UUID_BYTES);
	h->pt[h->n].lset = h->s.cur_lset;
	h->n++;
	return 0;
}

/*
 * A profile's points: its total, or (span heatmaps) one per pair with a
 * span id, merged per (group, profile time, span) by hm_merge_spans.
 */
static int hm_profile(void *ctx, const struct store_profile_view *p)
{
	struct hm *h = ctx;
	int64_t sum = 0;

	if ((h->s.rc = query__ctx_check(h->s.q)))
		return 1;
	if (h->spans) {
		for (size_t i = 0; p->span_ids && i < p->n; i++)
			if (p->span_ids[i] &&
			    hm_add(h, p->meta.time_ns, p->span_ids[i], NULL, p->values[i]))
				return 1;
		return 0;
	}
	for (size_t i = 0; i < p->n; i++)
		sum += p->values[i];
	return hm_add(h, p->meta.time_ns, 0, p->meta.id, sum);
}

/* Pyroscope's point order: time (ms), span id, profile id. */
static int cmp_hm_key(const struct hm_pt *x, const struct hm_pt *y)
{
	int64_t tx = x->time / 1000000, ty = y->time / 1000000;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	if (x->span != y->span)
		return x->span < y->span ? -1 : 1;
	return memcmp(x->id, y->id, UUID_BYTES);
}

static int cmp_hm_merge(const void *a, const void *b)
{
	const struct hm_pt *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return cmp_hm_key(x, y);
}

/*
 * Pyroscope's points builder keys a group's points by (time, span id,
 * profile id): the samples of one span in one profile are one point, and
 * so is one profile stored in several series of the group (a pprof split
 * by its sample labels); values are summed and, for exemplars, labels
 * intersected.  Profiles without an id (stored before ids were kept) stay
 * one point each.
 */
static int hm_merge(struct hm *h)
{
	size_t k = 0;
	int rc = 0;

	if (!h->n)
		return 0;
	qsort(h->pt, h->n, sizeof(*h->pt), cmp_hm_merge);
	for (size_t i = 1; i < h->n && !rc; i++) {
		if ((h->pt[i].span || !uuid_is_nil(h->pt[i].id)) &&
		    !cmp_hm_merge(&h->pt[k], &h->pt[i])) {
			h->pt[k].v += h->pt[i].v;
			if (h->s.ex.q)
				rc = query__ex_intersect(&h->s.ex, h->pt[k].lset, h->pt[i].lset,
							 &h->pt[k].lset);
			continue;
		}
		h->pt[++k] = h->pt[i];
	}
	h->n = k + 1;
	return rc;
}

static int cmp_hm_pt(const void *a, const void *b)
{
	const struct hm_pt *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->y != y->y)
		return x->y - y->y;
	return cmp_hm_key(x, y);
}

/* Groups by labels (Pyroscope's CompareLabelPairs); with a limit, by count first. */
static int cmp_hm_rank(const void *a, const void *b)
{
	const struct ss_rank *x = a, *y = b;

	if (x->total != y->total && x->s->limit)
		return x->total > y->total ? -1 : 1;
	return cmp_keys(x->s, intern_str(&x->s->keys, (uint32_t)x->g),
			intern_str(&y->s->keys, (uint32_t)y->g));
}

/*
 * The exemplar of the cell (slot, value bucket) whose points end at
 * pt[last]: Pyroscope's, the point with the largest value, the first in
 * its point order on ties; only points of a profile with an id (or of a
 * span) can be one.
 */
static int hm_exemplar(struct call *c, const struct hm *h, const struct hm_pt *pt, size_t last,
		       Types__V1__HeatmapSlot *sl)
{
	const struct hm_pt *best = NULL;
	struct qex e;
	size_t i = last + 1;

	while (i > 0 && pt[i - 1].ts == pt[last].ts && pt[i - 1].y == pt[last].y)
		i--;
	for (; i <= last; i++)
		if ((pt[i].span || !uuid_is_nil(pt[i].id)) && (!best || pt[i].v > best->v))
			best = &pt[i];
	if (!best)
		return 0;
	memset(&e, 0, sizeof(e));
	memcpy(e.id, best->id, UUID_BYTES);
	e.span = best->span;
	e.time_ms = best->time / 1000000;
	e.value = best->v;
	e.lset = best->lset;
	return ex_msg(c, &h->s.ex, &e, &sl->exemplars[sl->n_exemplars++]);
}

/* The series of group g from its sorted points pt[0..n). */
static int hm_series(struct call *c, const struct hm *h, size_t g, const struct hm_pt *pt,
		     size_t n, const double *ymin, Types__V1__HeatmapSeries **out)
{
	Types__V1__HeatmapSeries *se = rmem(c, sizeof(*se));
	const char *k = intern_str(&h->s.keys, (uint32_t)g);
	size_t nslots = 0;

	if (!se)
		return rfail(c);
	types__v1__heatmap_series__init(se);
	for (size_t i = 0; i < n; i++)
		nslots += !i || pt[i].ts != pt[i - 1].ts;
	se->labels = rmem(c, (h->s.nby ? h->s.nby : 1) * sizeof(*se->labels));
	se->slots = rmem(c, (nslots ? nslots : 1) * sizeof(*se->slots));
	if (!se->labels || !se->slots)
		return rfail(c);
	for (size_t i = 0; i < h->s.nby; i++) {
		Types__V1__LabelPair *p;

		if (!*k++)
			continue;
		if (!(p = rmem(c, sizeof(*p))))
			return rfail(c);
		types__v1__label_pair__init(p);
		if (!(p->name = rstr(c, h->s.by[i])) || !(p->value = rstr(c, k)))
			return rfail(c);
		se->labels[se->n_labels++] = p;
		k += strlen(k) + 1;
	}
	for (size_t i = 0; i < n; i++) {
		Types__V1__HeatmapSlot *sl;

		if (!i || pt[i].ts != pt[i - 1].ts) {
			if (!(sl = rmem(c, sizeof(*sl))))
				return rfail(c);
			types__v1__heatmap_slot__init(sl);
			sl->timestamp = pt[i].ts;
			sl->y_min = (double *)ymin;
			sl->n_y_min = HM_BUCKETS;
			sl->counts = rmem(c, HM_BUCKETS * sizeof(*sl->counts));
			if (!sl->counts)
				return rfail(c);
			sl->n_counts = HM_BUCKETS;
			if (h->s.ex.q && !(sl->exemplars = rmem(c, HM_BUCKETS * sizeof(*sl->exemplars))))
				return rfail(c);
			se->slots[se->n_slots++] = sl;
		}
		se->slots[se->n_slots - 1]->counts[pt[i].y]++;
		if (h->s.ex.q && (i + 1 == n || pt[i + 1].ts != pt[i].ts || pt[i + 1].y != pt[i].y)) {
			int rc = hm_exemplar(c, h, pt, i, se->slots[se->n_slots - 1]);

			if (rc)
				return rc;
		}
	}
	*out = se;
	return 0;
}

static int hm_response(struct call *c, struct hm *h, Querier__V1__SelectHeatmapResponse *r)
{
	struct ss *s = &h->s;
	size_t ng = intern_count(&s->keys) > 2 ? intern_count(&s->keys) - 2 : 0, rcap = 0, *first = NULL, fcap = 0, keep;
	int64_t lo = INT64_MAX, hi = 0;
	struct ss_rank *rank = NULL;
	double *ymin;
	int64_t bmin[HM_BUCKETS], bmax[HM_BUCKETS];
	int rc;

	if (!h->n)
		return 0;
	for (size_t i = 0; i < h->n; i++) {
		lo = h->pt[i].v < lo ? h->pt[i].v : lo;
		hi = h->pt[i].v > hi ? h->pt[i].v : hi;
	}
	if (lo == hi)
		hi = lo + 1;
	if (!(ymin = rmem(c, HM_BUCKETS * sizeof(*ymin))))
		return rfail(c);
	for (int b = 0; b < HM_BUCKETS; b++) {
		double size = (double)(hi - lo) / HM_BUCKETS;

		bmin[b] = lo + (int64_t)(b * size);
		bmax[b] = lo + (int64_t)((b + 1) * size);
		ymin[b] = (double)bmin[b];
	}
	bmax[HM_BUCKETS - 1] = hi;
	for (size_t i = 0; i < h->n; i++) {
		int y = -1;

		for (int b = 0; b < HM_BUCKETS && y < 0; b++)
			if (h->pt[i].v >= bmin[b] && h->pt[i].v < bmax[b])
				y = b;
		if (y < 0)
			y = HM_BUCKETS - 1; /* at or past the last bucket's max */
		h->pt[i].y = y;
	}
	qsort(h->pt, h->n, sizeof(*h->pt), cmp_hm_pt);
	if ((rc = query__mem_grow(s->q, (void **)&rank, &rcap, sizeof(*rank), ng ? ng : 1,
				  "SelectHeatmap")) ||
	    (rc = query__mem_grow(s->q, (void **)&first, &fcap, sizeof(*first), ng + 3,
				  "SelectHeatmap")))
		goto out;
	/* first[g]..first[g+1]: the points of group g (groups from 2). */
	for (size_t g = 0, i = 0; g < ng + 3; g++) {
		while (i < h->n && h->pt[i].group < g)
			i++;
		first[g] = i;
	}
	for (size_t i = 0; i < ng; i++) {
		rank[i].s = s;
		rank[i].g = 2 + i;
		rank[i].total = (double)(first[3 + i] - first[2 + i]);
	}
	if (ng)
		qsort(rank, ng, sizeof(*rank), cmp_hm_rank);
	keep = s->limit && (uint64_t)s->limit < ng ? (size_t)s->limit : ng;
	if (!(r->series = rmem(c, (keep ? keep : 1) * sizeof(*r->series)))) {
		rc = rfail(c);
		goto out;
	}
	for (size_t i = 0; i < keep && !rc; i++) {
		size_t g = rank[i].g;

		if (first[g + 1] == first[g])
			continue;
		rc = hm_series(c, h, g, h->pt + first[g], first[g + 1] - first[g], ymin,
			       &r->series[r->n_series++]);
	}
out:
	query__mem_free(s->q, rank, rcap, sizeof(*rank));
	query__mem_free(s->q, first, fcap, sizeof(*first));
	return rc;
}

/* Pyroscope's rule: exemplars of the heatmap's own kind, or none. */
static int hm_exemplar_type(const Querier__V1__SelectHeatmapRequest *req, struct err_msg *msg)
{
	switch (req->exemplar_type) {
	case TYPES__V1__EXEMPLAR_TYPE__EXEMPLAR_TYPE_UNSPECIFIED:
	case TYPES__V1__EXEMPLAR_TYPE__EXEMPLAR_TYPE_NONE:
		return 0;
	case TYPES__V1__EXEMPLAR_TYPE__EXEMPLAR_TYPE_INDIVIDUAL:
		if (req->query_type != QUERIER__V1__HEATMAP_QUERY_TYPE__HEATMAP_QUERY_TYPE_INDIVIDUAL)
			return err_set(msg, ERR_INVALID, "SelectHeatmap: individual exemplars only "
							 "available for individual query type");
		return 0;
	case TYPES__V1__EXEMPLAR_TYPE__EXEMPLAR_TYPE_SPAN:
		if (req->query_type != QUERIER__V1__HEATMAP_QUERY_TYPE__HEATMAP_QUERY_TYPE_SPAN)
			return err_set(msg, ERR_INVALID, "SelectHeatmap: span exemplars only available "
							 "for span query type");
		return 0;
	default:
		return err_set(msg, ERR_INVALID, "field exemplarType: unknown value %d",
			       (int)req->exemplar_type);
	}
}

static int select_heatmap(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Querier__V1__SelectHeatmapRequest *req = (const void *)msg;
	struct qctx *q = c->q;
	Querier__V1__SelectHeatmapResponse *r;
	struct query_params p;
	struct query_selector sel;
	int64_t from, until;
	struct store_reader *rd = NULL;
	struct hm h;
	int rc;

	if (req->step < 0.001)
		return err_set(q->msg, ERR_INVALID, "field step: must be at least 1ms (0.001), got %g",
			       req->step);
	if (req->query_type != QUERIER__V1__HEATMAP_QUERY_TYPE__HEATMAP_QUERY_TYPE_INDIVIDUAL &&
	    req->query_type != QUERIER__V1__HEATMAP_QUERY_TYPE__HEATMAP_QUERY_TYPE_SPAN)
		return err_set(q->msg, ERR_INVALID,
			       "SelectHeatmap: valid heatmap query type must be specified");
	rc = req_params(req->profile_typeid, req->label_selector, req->start, req->end, 0, c->lim,
			&p, q->msg);
	if (!rc)
		rc = req_strings_max(req->n_group_by, "groupBy", q->msg);
	if (!rc)
		rc = hm_exemplar_type(req, q->msg);
	if (rc)
		return rc;
	memset(&h, 0, sizeof(h));
	h.s.q = q;
	h.spans = req->query_type == QUERIER__V1__HEATMAP_QUERY_TYPE__HEATMAP_QUERY_TYPE_SPAN;
	{
		const struct ss_req sr = { req->step, req->limit, 0, req->group_by, req->n_group_by };

		rc = ss_setup(&h.s, &sr, &p, q->msg);
	}
	if (!rc && req->exemplar_type >= TYPES__V1__EXEMPLAR_TYPE__EXEMPLAR_TYPE_INDIVIDUAL)
		rc = query__ex_init(q, &h.s.ex);
	if (!rc)
		rc = query__select(&p, &sel, q->msg);
	if (rc) {
		ss_release(&h.s);
		return rc;
	}
	h.end_r = hm_round_up(p.until_ns / 1000000, h.s.start, h.s.step);
	from = (h.s.start - h.s.step) * 1000000;
	if (from < 0)
		from = 0;
	until = p.until_ns + 1000000;
	rc = query__names_init(q, &h.s.keys);
	if (!rc)
		rc = query__reader_open(q, &sel, 1, from, until, &rd);
	if (!rc)
		rc = query__select_series_in(q, rd, &sel, ss_series, &h.s);
	for (size_t i = 0; i < h.s.n && !rc; i++) {
		h.s.cur_group = h.s.sgroup[i];
		h.s.cur_lset = h.s.slset ? h.s.slset[i] : 0;
		rc = query__profiles_each(q, rd, h.s.sid[i], from, until, hm_profile, &h);
		if (h.s.rc)
			rc = h.s.rc;
		else if (rc > 0)
			rc = 0;
	}
	r = rc ? NULL : rmem(c, sizeof(*r));
	if (!rc && !r)
		rc = rfail(c);
	if (!rc) {
		querier__v1__select_heatmap_response__init(r);
		rc = hm_merge(&h);
	}
	if (!rc)
		rc = hm_response(c, &h, r);
	if (!rc)
		*out = &r->base;
	query__mem_free(q, h.pt, h.cap, sizeof(*h.pt));
	ss_release(&h.s);
	store_reader_close(rd);
	query_selector_release(&sel);
	return rc;
}

/* ---- AnalyzeQuery ------------------------------------------------------------ */

/*
 * What the query would read, as Pyroscope's AnalyzeQuery answers it: one
 * scope for the head ("Short term storage") and one for the blocks of the
 * range ("Long term storage").  Counts are of the matching series with a
 * profile in [start, end) (a profile of a block partition is the blocks'),
 * read through one store reader as a query would read them; bytes are of
 * whole places, as Pyroscope's block statistics are: the head's series,
 * symbol and sample families, and the files of the blocks that overlap the
 * range (one file each: their index and symbols are inside profile_bytes).
 */
struct aq {
	struct qctx *q;
	struct query_selector *sel;
	uint64_t *ids;
	size_t n, cap;
	int in[2];                    /* the current series has profiles in head/blocks */
	uint64_t series[2], profiles[2], samples[2], queried;
	uint64_t blocks, block_bytes;
	int64_t from, until;
	const char *tenant;
	uint64_t head_bytes[STORE_CF_COUNT];
	int rc;
};

static int aq_series(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
		     size_t n)
{
	struct aq *a = ctx;

	(void)part;
	if (!a->sel->profile_type) {
		/* Compiled at the first series, as select.c does: no regex is built
		 * for a tenant without data. */
		int m = a->sel->compiled ? 0 : query_selector_compile(a->sel, a->q->msg);

		if (!m)
			m = query_selector_matches(a->sel, l, n, a->q->msg);
		if (m < 0) {
			a->rc = m;
			return 1;
		}
		if (!m)
			return 0;
	}
	if ((a->rc = query__mem_grow(a->q, (void **)&a->ids, &a->cap, sizeof(*a->ids), a->n + 1,
				     "AnalyzeQuery")))
		return 1;
	a->ids[a->n++] = id;
	return 0;
}

static int aq_profile(void *ctx, const struct store_profile_view *p)
{
	struct aq *a = ctx;
	int b = p->part >= STORE_BLOCK_PART_MIN;

	if ((a->rc = query__ctx_check(a->q)))
		return 1;
	a->in[b] = 1;
	a->profiles[b]++;
	a->samples[b] += p->n;
	return 0;
}

static int aq_block(void *ctx, const struct store_block_info *b)
{
	struct aq *a = ctx;

	if (b->error || b->range_end <= a->from || b->range_start >= a->until)
		return 0;
	a->blocks++;
	a->block_bytes += b->bytes;
	return 0;
}

static int aq_stats(void *ctx, const struct store_tenant_stats *s)
{
	struct aq *a = ctx;

	if (!strcmp(s->tenant, a->tenant))
		memcpy(a->head_bytes, s->bytes, sizeof(a->head_bytes));
	return 0;
}

static int aq_scope(struct call *c, const char *type, int b, const struct aq *a,
		    Querier__V1__QueryScope **out)
{
	Querier__V1__QueryScope *sc = rmem(c, sizeof(*sc));

	if (!sc)
		return rfail(c);
	querier__v1__query_scope__init(sc);
	if (!(sc->component_type = rstr(c, type)))
		return rfail(c);
	sc->component_count = 1;
	sc->series_count = a->series[b];
	sc->profile_count = a->profiles[b];
	sc->sample_count = a->samples[b];
	if (b) {
		sc->block_count = a->blocks;
		sc->profile_bytes = a->block_bytes;
	} else {
		sc->index_bytes = a->head_bytes[STORE_CF_SERIES];
		sc->profile_bytes = a->head_bytes[STORE_CF_SAMPLES];
		sc->symbol_bytes = a->head_bytes[STORE_CF_SYMBOLS];
	}
	*out = sc;
	return 0;
}

static int analyze_query(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	const Querier__V1__AnalyzeQueryRequest *req = (const void *)msg;
	struct qctx *q = c->q;
	Querier__V1__AnalyzeQueryResponse *r;
	Querier__V1__QueryImpact *imp;
	struct query_selector sel;
	struct store_reader *rd = NULL;
	struct aq a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.q = q;
	a.sel = &sel;
	a.tenant = q->tenant;
	rc = req_range(req->start, req->end, &a.from, &a.until, NULL, q->msg);
	if (rc)
		return rc;
	rc = query_selector_parse2(NULL, req->query && *req->query ? req->query : "{}", &sel, q->msg);
	if (rc)
		return rc;
	rc = store_reader_open(q->st, q->tenant, a.from, a.until, &rd, q->msg);
	if (!rc)
		rc = sel.profile_type ? query__select_series_in(q, rd, &sel, aq_series, &a)
				      : store_reader_series_each(rd, aq_series, &a);
	if (a.rc)
		rc = a.rc;
	for (size_t i = 0; i < a.n && !rc; i++) {
		a.in[0] = a.in[1] = 0;
		rc = query__profiles_each(q, rd, a.ids[i], a.from, a.until, aq_profile, &a);
		if (a.rc)
			rc = a.rc;
		a.series[0] += (uint64_t)a.in[0];
		a.series[1] += (uint64_t)a.in[1];
		a.queried += (uint64_t)(a.in[0] || a.in[1]);
	}
	store_reader_close(rd);
	query__mem_free(q, a.ids, a.cap, sizeof(*a.ids));
	query_selector_release(&sel);
	if (!rc)
		rc = store_blocks_each(q->st, q->tenant, aq_block, &a, q->msg);
	if (!rc)
		rc = store_stats(q->st, aq_stats, &a, q->msg);
	if (rc)
		return rc;
	r = rmem(c, sizeof(*r));
	imp = rmem(c, sizeof(*imp));
	if (!r || !imp)
		return rfail(c);
	querier__v1__analyze_query_response__init(r);
	querier__v1__query_impact__init(imp);
	if (!(r->query_scopes = rmem(c, 2 * sizeof(*r->query_scopes))) ||
	    (rc = aq_scope(c, "Short term storage", 0, &a, &r->query_scopes[0])) ||
	    (rc = aq_scope(c, "Long term storage", 1, &a, &r->query_scopes[1])))
		return rc ? rc : rfail(c);
	r->n_query_scopes = 2;
	imp->total_bytes_in_time_range = a.head_bytes[STORE_CF_SERIES] +
					 a.head_bytes[STORE_CF_SYMBOLS] +
					 a.head_bytes[STORE_CF_SAMPLES] + a.block_bytes;
	imp->total_queried_series = a.queried;
	r->query_impact = imp;
	*out = &r->base;
	return 0;
}

/* ---- GetProfileStats ------------------------------------------------------- */

/*
 * Whether the tenant has any profile, and the times of its oldest and
 * newest (Drilldown shows its onboarding screen when there is none).  The
 * oldest is each series' first profile; the newest is searched in windows
 * growing back from now + 1 day, so a live tenant reads only its last hour.
 */
struct stats {
	struct qctx *q;
	struct query__ids ids;
	int64_t oldest, newest;  /* ns; -1 none */
};

static int stats_first(void *ctx, const struct store_profile_view *p)
{
	struct stats *s = ctx;

	if (s->oldest < 0 || p->meta.time_ns < s->oldest)
		s->oldest = p->meta.time_ns;
	return 1;
}

static int stats_last(void *ctx, const struct store_profile_view *p)
{
	struct stats *s = ctx;

	if (p->meta.time_ns > s->newest)
		s->newest = p->meta.time_ns;
	return query__ctx_check(s->q) ? 1 : 0;
}

static int profile_stats(struct call *c, const ProtobufCMessage *msg, ProtobufCMessage **out)
{
	Types__V1__GetProfileStatsResponse *r;
	struct stats s = { .q = c->q, .ids = { .q = c->q }, .oldest = -1, .newest = -1 };
	const int64_t hour = 3600000000000LL;
	int64_t end = clock_wall_ns() + 24 * hour, win = hour;
	int rc;

	(void)msg;
	rc = store_series_each(c->q->st, c->q->tenant, query__ids_add, &s.ids);
	for (size_t i = 0; i < s.ids.n && rc >= 0; i++)
		rc = store_profiles_each(c->q->st, c->q->tenant, s.ids.v[i], 0, INT64_MAX, stats_first,
					 &s, c->q->msg);
	/* Every series' newest profile is at or before the oldest's end, so this ends. */
	while (rc >= 0 && s.oldest >= 0 && s.newest < 0) {
		int64_t from = end - win > s.oldest ? end - win : s.oldest;

		for (size_t i = 0; i < s.ids.n && rc >= 0; i++)
			rc = store_profiles_each(c->q->st, c->q->tenant, s.ids.v[i], from, INT64_MAX,
						 stats_last, &s, c->q->msg);
		if (from == s.oldest && s.newest < 0)
			rc = err_set(c->q->msg, ERR_CORRUPT, "GetProfileStats: profiles vanished");
		win = win > INT64_MAX / 4 ? INT64_MAX / 2 : win * 4;
	}
	query__ids_free(&s.ids);
	if (rc < 0)
		return c->q->msg->text[0] ? rc : err_set(c->q->msg, rc, "reading profiles: %s",
							 err_str(rc));
	if ((rc = query__ctx_check(c->q)))
		return rc;
	r = rmem(c, sizeof(*r));
	if (!r)
		return rfail(c);
	types__v1__get_profile_stats_response__init(r);
	r->data_ingested = s.oldest >= 0;
	/* Pyroscope's values when nothing was ingested: 0 and 0. */
	r->oldest_profile_time = s.oldest >= 0 ? s.oldest / 1000000 : 0;
	r->newest_profile_time = s.newest >= 0 ? s.newest / 1000000 : 0;
	*out = &r->base;
	return 0;
}

/* ---- methods and codecs ------------------------------------------------------ */

struct method {
	const char *name;
	const ProtobufCMessageDescriptor *req, *resp;
	int (*run)(struct call *c, const ProtobufCMessage *req, ProtobufCMessage **resp);
	unsigned json_flags;                              /* of pbjson_encode */
	int (*json_more)(struct call *c, struct buf *out); /* members after the message's */
};

static const struct method methods[] = {
	{ "ProfileTypes", &querier__v1__profile_types_request__descriptor,
	  &querier__v1__profile_types_response__descriptor, profile_types, PBJSON_EMIT_DEFAULTS,
	  NULL },
	{ "LabelNames", &types__v1__label_names_request__descriptor,
	  &types__v1__label_names_response__descriptor, label_names, PBJSON_EMIT_DEFAULTS, NULL },
	{ "LabelValues", &types__v1__label_values_request__descriptor,
	  &types__v1__label_values_response__descriptor, label_values, PBJSON_EMIT_DEFAULTS,
	  NULL },
	{ "Series", &querier__v1__series_request__descriptor,
	  &querier__v1__series_response__descriptor, series, PBJSON_EMIT_DEFAULTS, NULL },
	{ "SelectMergeStacktraces", &querier__v1__select_merge_stacktraces_request__descriptor,
	  &querier__v1__select_merge_stacktraces_response__descriptor, merge_stacktraces,
	  PBJSON_EMIT_DEFAULTS, merge_stacktraces_json },
	{ "SelectMergeSpanProfile", &querier__v1__select_merge_span_profile_request__descriptor,
	  &querier__v1__select_merge_span_profile_response__descriptor, merge_span_profile,
	  PBJSON_EMIT_DEFAULTS, merge_stacktraces_json },
	{ "SelectMergeProfile", &querier__v1__select_merge_profile_request__descriptor,
	  &perftools__profiles__profile__descriptor, merge_profile, 0, NULL },
	{ "SelectSeries", &querier__v1__select_series_request__descriptor,
	  &querier__v1__select_series_response__descriptor, select_series, PBJSON_EMIT_DEFAULTS,
	  NULL },
	{ "Diff", &querier__v1__diff_request__descriptor, &querier__v1__diff_response__descriptor,
	  diff, PBJSON_EMIT_DEFAULTS, NULL },
	{ "SelectHeatmap", &querier__v1__select_heatmap_request__descriptor,
	  &querier__v1__select_heatmap_response__descriptor, select_heatmap, PBJSON_EMIT_DEFAULTS,
	  NULL },
	{ "AnalyzeQuery", &querier__v1__analyze_query_request__descriptor,
	  &querier__v1__analyze_query_response__descriptor, analyze_query, PBJSON_EMIT_DEFAULTS,
	  NULL },
	{ "GetProfileStats", &types__v1__get_profile_stats_request__descriptor,
	  &types__v1__get_profile_stats_response__descriptor, profile_stats, PBJSON_EMIT_DEFAULTS,
	  NULL },
};

static const struct method *method_find(const char *name)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(methods[i].name, name))
			return &methods[i];
	return NULL;
}

/* Runs method `m` on its decoded request and writes the response with `write`. */
static int run(struct store *st, const char *tenant, const struct method *m,
	       const ProtobufCMessage *req, struct arena *a, const struct query_limits *lim,
	       int proto, struct buf *out, struct err_msg *msg)
{
	ProtobufCMessage *resp = NULL;
	struct call c;
	struct qctx q;
	size_t max = out->max;
	int rc;

	query__ctx_init(&q, st, tenant, lim, msg);
	call_init(&c, &q, lim, a);
	/* The response is part of the query's budget. */
	if (!out->max || out->max > q.mem.cap)
		out->max = q.mem.cap;
	rc = m->run(&c, req, &resp);
	if (!rc && proto) {
		size_t n = protobuf_c_message_get_packed_size(resp);

		rc = buf_reserve(out, n);
		if (!rc)
			out->len += protobuf_c_message_pack(resp, (uint8_t *)out->data + out->len);
	} else if (!rc) {
		rc = pbjson_encode(resp, NULL, m->json_flags, out);
		if (!rc && m->json_more) {
			/* Reopen the message's object for members of our own. */
			assert(out->len && out->data[out->len - 1] == '}');
			out->data[--out->len] = '\0';
			rc = m->json_more(&c, out);
			if (!rc)
				rc = buf_putc(out, '}');
		}
	}
	if (rc == ERR_TOO_LARGE || rc == ERR_NOMEM)
		err_set(msg, rc, "encoding the response: %s", err_str(rc));
	out->max = max;
	call_release(&c);
	return rc;
}

int query_connect(struct store *st, const char *tenant, const char *method,
		  const void *body, size_t len, const struct query_limits *lim,
		  struct buf *out, struct err_msg *msg)
{
	const struct method *m = method_find(method);
	ProtobufCMessage *req;
	struct arena a;
	int rc;

	if (!m)
		return err_set(msg, ERR_NOT_FOUND, "unknown method %.64s", method);
	/* The mapper's parse tree takes at most json_mem_bound(len) of the arena. */
	call_arena(&a, 2 * json_mem_bound(len ? len : 2), lim);
	rc = pbjson_decode(m->req, len ? body : "{}", len ? len : 2, NULL, PBJSON_IGNORE_UNKNOWN,
			   &a, &req, msg);
	if (!rc)
		rc = run(st, tenant, m, req, &a, lim, 0, out, msg);
	arena_release(&a);
	return rc;
}

int query_connect_proto(struct store *st, const char *tenant, const char *method,
			const void *body, size_t len, const struct query_limits *lim,
			struct buf *out, struct err_msg *msg)
{
	const struct method *m = method_find(method);
	ProtobufCAllocator al;
	ProtobufCMessage *req;
	struct arena a;
	int rc;

	if (!m)
		return err_set(msg, ERR_NOT_FOUND, "unknown method %.64s", method);
	if (len > SIZE_MAX / 64)
		return err_set(msg, ERR_TOO_LARGE, "%s: request too large", m->req->name);
	/*
	 * Each repeated item costs at least 2 wire bytes and becomes a pointer
	 * and a copy of its bytes: 64 per byte is a bound.
	 */
	call_arena(&a, len * 64 + (1 << 16), lim);
	pbjson_arena_allocator(&a, &al);
	req = protobuf_c_message_unpack(m->req, &al, len, len ? body : (const void *)"");
	if (!req) {
		rc = arena_failed(&a)
			? err_set(msg, ERR_TOO_LARGE, "%s: request needs more memory than allowed",
				  m->req->name)
			: err_set(msg, ERR_INVALID, "%s: not a valid protobuf message", m->req->name);
	} else {
		rc = run(st, tenant, m, req, &a, lim, 1, out, msg);
	}
	arena_release(&a);
	return rc;
}

/* ---- the label methods, for the legacy label routes --------------------------- */

static int typed(struct store *st, const char *tenant, const ProtobufCMessage *req,
		 const struct query_limits *lim, struct arena *a, ProtobufCMessage **out,
		 struct err_msg *msg,
		 int (*fn)(struct call *, const ProtobufCMessage *, ProtobufCMessage **))
{
	struct call c;
	struct qctx q;
	int rc;

	query__ctx_init(&q, st, tenant, lim, msg);
	call_init(&c, &q, lim, a);
	rc = fn(&c, req, out);
	if (rc == ERR_TOO_LARGE || rc == ERR_NOMEM)
		err_set(msg, rc, "encoding the response: %s", err_str(rc));
	call_release(&c);
	return rc;
}

int query_label_names(struct store *st, const char *tenant,
		      const struct Types__V1__LabelNamesRequest *req,
		      const struct query_limits *lim, struct arena *a,
		      struct Types__V1__LabelNamesResponse **out, struct err_msg *msg)
{
	ProtobufCMessage *m;
	int rc = typed(st, tenant, &req->base, lim, a, &m, msg, label_names);

	if (!rc)
		*out = (Types__V1__LabelNamesResponse *)m;
	return rc;
}

int query_label_values(struct store *st, const char *tenant,
		       const struct Types__V1__LabelValuesRequest *req,
		       const struct query_limits *lim, struct arena *a,
		       struct Types__V1__LabelValuesResponse **out, struct err_msg *msg)
{
	ProtobufCMessage *m;
	int rc = typed(st, tenant, &req->base, lim, a, &m, msg, label_values);

	if (!rc)
		*out = (Types__V1__LabelValuesResponse *)m;
	return rc;
}
