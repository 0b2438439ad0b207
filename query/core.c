/* core.c - a query's deadline and byte budget, its hash map and name tables. */
#include "query_int.h"

#include "base/json.h"

#include "base/clock.h"
#include "base/err.h"
#include "base/hash.h"
#include "storage/storage.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/*
 * The query's allocator: the byte budget, after taking more of the shared
 * reservation when the budget's use would pass what the query holds.
 */
static void *reserve_resize(void *ctx, void *p, size_t old_size, size_t new_size, int *rc)
{
	struct qctx *q = ctx;

	if (q->reserve && new_size > old_size && new_size - old_size <= q->mem.cap - q->mem.used) {
		size_t after = q->mem.used + (new_size - old_size), want;

		if (after > q->held) {
			want = after - q->held;
			if (want < QUERY_RESERVE_STEP)
				want = QUERY_RESERVE_STEP;
			if (q->held < q->mem.cap && want > q->mem.cap - q->held)
				want = q->mem.cap - q->held;
			if (q->reserve->grow(q->reserve->ctx, want)) {
				*rc = err_set(q->msg, ERR_UNAVAILABLE,
					      "server busy: the query needs %zu more bytes of memory "
					      "than the server has free (it holds %zu); retry shortly",
					      want, q->held);
				return NULL;
			}
			q->held += want;
		}
	}
	return grow_resize(&q->mem.alloc, p, old_size, new_size, rc);
}

void query__ctx_init(struct qctx *q, struct store *st, const char *tenant,
		     const struct query_limits *lim, struct err_msg *msg)
{
	int64_t timeout = lim && lim->timeout_ns > 0 ? lim->timeout_ns : QUERY_DEFAULT_TIMEOUT_NS;

	q->st = st;
	q->tenant = tenant;
	q->deadline_ns = clock_mono_ns() + timeout;
	grow_budget_init(&q->mem, lim && lim->max_bytes ? lim->max_bytes : QUERY_DEFAULT_MAX_BYTES);
	q->mem.inner = lim ? lim->heap : NULL;
	q->msg = msg;
	q->tick = 0;
	q->symbolizer = lim ? lim->symbolizer : NULL;
	q->symmemo = lim && lim->symbolizer ? lim->symmemo : NULL;
	q->reserve = lim ? lim->reserve : NULL;
	q->held = q->reserve ? q->reserve->held : 0;
	q->alloc.resize = reserve_resize;
	q->alloc.ctx = q;
	q->scanned = 0;
	q->max_scan = lim && lim->max_scan_bytes ? lim->max_scan_bytes : QUERY_DEFAULT_MAX_SCAN_BYTES;
	q->scan_refused = lim ? lim->scan_refused : NULL;
}

int query__ctx_check(struct qctx *q)
{
	if (clock_mono_ns() > q->deadline_ns)
		return err_set(q->msg, ERR_TIMEOUT, "query deadline exceeded");
	return 0;
}

struct scan {
	struct qctx *q;
	int (*cb)(void *ctx, const struct store_profile_view *p);
	void *ctx;
	int rc;
};

static int scan_profile(void *ctx, const struct store_profile_view *p)
{
	struct scan *s = ctx;
	struct qctx *q = s->q;
	uint64_t pair = sizeof(uint32_t) + sizeof(int64_t) + (p->span_ids ? sizeof(uint64_t) : 0);

	/* p->n is at most a chunk's samples: no overflow against 2^64. */
	q->scanned += 64 + (uint64_t)p->n * pair;
	if (q->scanned > q->max_scan) {
		if (q->scan_refused)
			*q->scan_refused = 1;
		s->rc = err_set(q->msg, ERR_TOO_LARGE,
				"the query reads more than its %llu bytes of samples (max_query_bytes, "
				"docs/limits.md); narrow its time range or its selector",
				(unsigned long long)q->max_scan);
		return 1;
	}
	return s->cb(s->ctx, p);
}

int query__profiles_each(struct qctx *q, struct store_reader *rd, uint64_t series_id,
			 int64_t from_ns, int64_t until_ns,
			 int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx)
{
	struct scan s = { q, cb, ctx, 0 };
	int rc;

	if (rd)
		rc = store_reader_profiles_each(rd, series_id, from_ns, until_ns, scan_profile, &s,
						q->msg);
	else
		rc = store_profiles_each(q->st, q->tenant, series_id, from_ns, until_ns,
					 scan_profile, &s, q->msg);
	return s.rc ? s.rc : rc;
}

int query__mem_grow(struct qctx *q, void **p, size_t *cap, size_t elem, size_t need,
		    const char *what)
{
	int rc;

	assert(elem > 0 && (*p != NULL || *cap == 0));
	if (need <= *cap)
		return 0;
	if (need > SIZE_MAX / elem)
		return err_set(q->msg, ERR_TOO_LARGE, "%s: too many entries", what);
	rc = grow_array(p, cap, elem, need, SIZE_MAX / elem, &q->alloc);
	if (rc == ERR_TOO_LARGE)
		return err_set(q->msg, ERR_TOO_LARGE,
			       "query memory budget of %zu bytes exceeded (%s)", q->mem.cap, what);
	if (rc)
		return err_set(q->msg, rc, "out of memory (%s)", what);
	return 0;
}

void query__mem_free(struct qctx *q, void *p, size_t cap, size_t elem)
{
	grow_free(&q->alloc, p, cap, elem);
}

int query__ids_add(void *ctx, uint64_t id, uint32_t part, const struct store_label *labels,
		   size_t n)
{
	struct query__ids *l = ctx;
	int rc;

	(void)part;
	(void)labels;
	(void)n;
	rc = query__mem_grow(l->q, (void **)&l->v, &l->cap, sizeof(*l->v), l->n + 1, "series list");
	if (!rc)
		l->v[l->n++] = id;
	return rc;
}

void query__ids_free(struct query__ids *l)
{
	query__mem_free(l->q, l->v, l->cap, sizeof(*l->v));
	l->v = NULL;
	l->n = l->cap = 0;
}

/* ---- qmap ----------------------------------------------------------------- */

void query__map_init(struct qmap *m)
{
	memset(m, 0, sizeof(*m));
}

void query__map_init_dense(struct qmap *m)
{
	query__map_init(m);
	m->dense = 1;
}

void query__map_release(struct qctx *q, struct qmap *m)
{
	query__mem_free(q, m->keys, m->cap, sizeof(*m->keys));
	query__mem_free(q, m->vals, m->cap, sizeof(*m->vals));
	for (unsigned i = 0; i < m->n_dense; i++)
		query__mem_free(q, m->d[i].v, m->d[i].cap, sizeof(*m->d[i].v));
	query__map_init(m);
}

static struct qmap_dense *dense_of(const struct qmap *m, uint32_t part)
{
	for (unsigned i = 0; i < m->n_dense; i++)
		if (m->dpart[i] == part)
			return (struct qmap_dense *)&m->d[i];
	return NULL;
}

int query__map_get(const struct qmap *m, uint64_t key, uint32_t *val)
{
	size_t mask, i;

	if (m->n_dense) {
		const struct qmap_dense *d = dense_of(m, (uint32_t)(key >> 32));
		uint32_t id = (uint32_t)key;

		if (d && id < d->size && d->v[id] != UINT32_MAX) {
			*val = d->v[id];
			return 1;
		}
	}
	if (!m->n)
		return 0;
	mask = m->cap - 1;
	for (i = hash_u64(key) & mask;; i = (i + 1) & mask) {
		if (m->vals[i] == UINT32_MAX)
			return 0;
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return 1;
		}
	}
}

void query__map_prefetch(const struct qmap *m, uint64_t key)
{
	if (m->n_dense) {
		const struct qmap_dense *d = dense_of(m, (uint32_t)(key >> 32));
		uint32_t id = (uint32_t)key;

		if (d && id < d->size) {
			__builtin_prefetch(&d->v[id]);
			return;
		}
	}
	if (m->n) {
		size_t i = hash_u64(key) & (m->cap - 1);

		__builtin_prefetch(&m->vals[i]);
		__builtin_prefetch(&m->keys[i]);
	}
}

/*
 * Stores into the flat array of the key's partition when that is cheap:
 * returns 1 when stored, 0 when the key belongs in the hash table.
 */
static int dense_put(struct qctx *q, struct qmap *m, uint64_t key, uint32_t val, int *rc)
{
	uint32_t part = (uint32_t)(key >> 32), id = (uint32_t)key;
	struct qmap_dense *d = dense_of(m, part);

	if (!d) {
		if (m->n_dense == QMAP_DENSE_PARTS)
			return 0;
		m->dpart[m->n_dense] = part;
		d = &m->d[m->n_dense++];
		memset(d, 0, sizeof(*d));
		d->part = part;
	}
	if (id >= d->size) {
		/* Grow to cover `id` only while the array stays within a small
		 * multiple of what the map holds, so a stray large id cannot make
		 * a small query allocate for the whole store. */
		size_t want = (size_t)id + 1, old = d->cap;

		if (want > 16 * (m->dense_entries + m->n) + 262144)
			return 0;
		if (want < 2 * d->size)
			want = 2 * d->size;
		*rc = query__mem_grow(q, (void **)&d->v, &d->cap, sizeof(*d->v), want, "id table");
		if (*rc)
			return 1;
		memset(d->v + old, 0xff, (d->cap - old) * sizeof(*d->v));
		d->size = d->cap;
	}
	if (d->v[id] == UINT32_MAX)
		m->dense_entries++;
	d->v[id] = val;
	*rc = 0;
	return 1;
}

static int qmap_rehash(struct qctx *q, struct qmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64, kc = 0, vc = 0, i, j, mask = ncap - 1;
	uint64_t *keys = NULL;
	uint32_t *vals = NULL;
	int rc;

	rc = query__mem_grow(q, (void **)&keys, &kc, sizeof(*keys), ncap, "hash table");
	if (!rc)
		rc = query__mem_grow(q, (void **)&vals, &vc, sizeof(*vals), ncap, "hash table");
	if (rc) {
		query__mem_free(q, keys, kc, sizeof(*keys));
		return rc;
	}
	/* query__mem_grow rounds to powers of two starting at 16, so kc == ncap. */
	memset(vals, 0xff, vc * sizeof(*vals));
	mask = kc - 1;
	for (i = 0; i < m->cap; i++) {
		if (m->vals[i] == UINT32_MAX)
			continue;
		for (j = hash_u64(m->keys[i]) & mask; vals[j] != UINT32_MAX; j = (j + 1) & mask)
			;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	query__mem_free(q, m->keys, m->cap, sizeof(*m->keys));
	query__mem_free(q, m->vals, m->cap, sizeof(*m->vals));
	m->keys = keys;
	m->vals = vals;
	m->cap = kc;
	return 0;
}

int query__map_reserve(struct qctx *q, struct qmap *m, size_t n)
{
	int rc = 0;

	while (!rc && (m->n + n) * 4 > m->cap * 3)
		rc = qmap_rehash(q, m);
	return rc;
}

int query__map_put(struct qctx *q, struct qmap *m, uint64_t key, uint32_t val)
{
	size_t mask, i;
	int rc;

	assert(val != UINT32_MAX); /* the mark of an empty slot */
	if (m->dense && dense_put(q, m, key, val, &rc))
		return rc;
	if ((m->n + 1) * 4 > m->cap * 3) {
		rc = qmap_rehash(q, m);
		if (rc)
			return rc;
	}
	mask = m->cap - 1;
	for (i = hash_u64(key) & mask; m->vals[i] != UINT32_MAX; i = (i + 1) & mask) {
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
	}
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

/* ---- name tables ----------------------------------------------------------- */

int query__names_init(struct qctx *q, struct intern *nm)
{
	uint32_t id;
	int rc;

	/* Ids are u32 and hmap-indexed; the budget bounds the bytes. */
	intern_init(nm, HMAP_MAX, q->mem.cap, &q->alloc);
	rc = query__names_intern(q, nm, "total", 5, &id);
	if (!rc)
		rc = query__names_intern(q, nm, "other", 5, &id);
	if (rc)
		query__names_release(nm);
	assert(rc || intern_count(nm) == 2);
	return rc;
}

void query__names_release(struct intern *nm)
{
	intern_release(nm);
}

/* Whether the bytes are all ASCII: eight at a time, as nearly every name is. */
static int all_ascii(const char *s, size_t len)
{
	uint64_t w, acc = 0;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);
		acc |= w;
	}
	for (; i < len; i++)
		acc |= (unsigned char)s[i];
	return !(acc & 0x8080808080808080ULL);
}

int query__names_intern(struct qctx *q, struct intern *nm, const char *s, size_t len, uint32_t *id)
{
	char *clean = NULL;
	int rc;

	/* Names from debug info or stored before ingest cleaned them may not be
	 * UTF-8; every answer (JSON, protobuf, pprof) must be. */
	if (!all_ascii(s, len) && !json_utf8_valid(s, len)) {
		if (len > SIZE_MAX / 3 || !(clean = malloc(3 * len + 1)))
			return err_set(q->msg, ERR_NOMEM, "out of memory (names)");
		len = json_utf8_clean(s, len, clean);
		s = clean;
	}
	rc = intern_put(nm, s, len, id);
	free(clean);

	if (rc == ERR_TOO_LARGE)
		return err_set(q->msg, rc, "query memory budget of %zu bytes exceeded (names)",
			       q->mem.cap);
	if (rc)
		return err_set(q->msg, rc, "out of memory (names)");
	return 0;
}

/* ---- symbol views ---------------------------------------------------------- */

void query__views_release(struct qviews *v)
{
	for (size_t i = 0; i < v->n; i++)
		store_symbols_put(v->sym[i]);
	free(v->part);
	free(v->sym);
	memset(v, 0, sizeof(*v));
}

int query__views_get(struct qctx *q, struct qviews *v, uint32_t part, struct store_symbols **out)
{
	struct store_symbols *s;
	int rc;

	for (size_t i = 0; i < v->n; i++) {
		if (v->part[i] == part) {
			*out = v->sym[i];
			return 0;
		}
	}
	if ((rc = GROW(v->part, v->part_cap, v->n + 1, QVIEWS_MAX, NULL)) ||
	    (rc = GROW(v->sym, v->sym_cap, v->n + 1, QVIEWS_MAX, NULL)))
		return err_set(q->msg, rc, "%s (symbol views)",
			       rc == ERR_NOMEM ? "out of memory" : "too many partitions");
	rc = store_symbols_get(q->st, q->tenant, part, &s, q->msg);
	if (rc)
		return err_set(q->msg, rc, "reading symbols of partition %u: %s", part, err_str(rc));
	v->part[v->n] = part;
	v->sym[v->n++] = s;
	*out = s;
	return 0;
}
