/* core.c - a query's deadline and byte budget, its hash map and name table. */
#include "query/query_int.h"

#include "base/clock.h"
#include "base/err.h"
#include "base/hash.h"
#include "storage/storage.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void query__ctx_init(struct qctx *q, struct store *st, const char *tenant,
		     const struct query_limits *lim, struct err_msg *msg)
{
	int64_t timeout = lim && lim->timeout_ns > 0 ? lim->timeout_ns : QUERY_DEFAULT_TIMEOUT_NS;

	q->st = st;
	q->tenant = tenant;
	q->deadline_ns = clock_mono_ns() + timeout;
	q->mem.used = 0;
	q->mem.cap = lim && lim->max_bytes ? lim->max_bytes : QUERY_DEFAULT_MAX_BYTES;
	q->msg = msg;
	q->tick = 0;
	q->symbolizer = lim ? lim->symbolizer : NULL;
	q->symmemo = lim && lim->symbolizer ? lim->symmemo : NULL;
}

int query__ctx_check(struct qctx *q)
{
	if (clock_mono_ns() > q->deadline_ns)
		return err_set(q->msg, ERR_TIMEOUT, "query deadline exceeded");
	return 0;
}

int query__mem_grow(struct qctx *q, void **p, size_t *cap, size_t elem, size_t need,
		    const char *what)
{
	size_t n = *cap ? *cap : 16, old = *cap * elem, bytes;
	void *np;

	assert(elem > 0 && (*p != NULL || *cap == 0));
	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 4)
			return err_set(q->msg, ERR_TOO_LARGE, "%s: too many entries", what);
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return err_set(q->msg, ERR_TOO_LARGE, "%s: too many entries", what);
	bytes = n * elem;
	if (q->mem.used - old + bytes > q->mem.cap)
		return err_set(q->msg, ERR_TOO_LARGE,
			       "query memory budget of %zu bytes exceeded (%s)", q->mem.cap, what);
	np = realloc(*p, bytes);
	if (!np)
		return err_set(q->msg, ERR_NOMEM, "out of memory (%s)", what);
	q->mem.used = q->mem.used - old + bytes;
	*p = np;
	*cap = n;
	return 0;
}

void query__mem_free(struct qctx *q, void *p, size_t cap, size_t elem)
{
	free(p);
	if (q->mem.used >= cap * elem)
		q->mem.used -= cap * elem;
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
		if (m->d[i].part == part)
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

/* ---- qnames ------------------------------------------------------------- */

int query__names_init(struct qctx *q, struct qnames *nm)
{
	uint32_t id;
	int rc;

	memset(nm, 0, sizeof(*nm));
	arena_init(&nm->strs, q->mem.cap);
	rc = query__names_intern(q, nm, "total", 5, &id);
	if (!rc)
		rc = query__names_intern(q, nm, "other", 5, &id);
	if (rc)
		query__names_release(q, nm);
	return rc;
}

void query__names_release(struct qctx *q, struct qnames *nm)
{
	if (q->mem.used >= nm->strs.used)
		q->mem.used -= nm->strs.used;
	arena_release(&nm->strs);
	query__mem_free(q, nm->s, nm->cap, sizeof(*nm->s));
	free(nm->len);
	query__mem_free(q, nm->slots, nm->nslots, sizeof(*nm->slots));
	memset(nm, 0, sizeof(*nm));
}

static int names_reindex(struct qctx *q, struct qnames *nm)
{
	size_t want = nm->nslots ? nm->nslots * 2 : 1024, got = 0, i, j, mask;
	uint32_t *slots = NULL;
	int rc = query__mem_grow(q, (void **)&slots, &got, sizeof(*slots), want, "name table");

	if (rc)
		return rc;
	memset(slots, 0, got * sizeof(*slots));
	mask = got - 1;
	for (i = 0; i < nm->n; i++) {
		for (j = hash_bytes(nm->s[i], nm->len[i], 0) & mask; slots[j]; j = (j + 1) & mask)
			;
		slots[j] = (uint32_t)i + 1;
	}
	query__mem_free(q, nm->slots, nm->nslots, sizeof(*nm->slots));
	nm->slots = slots;
	nm->nslots = got;
	return 0;
}

int query__names_intern(struct qctx *q, struct qnames *nm, const char *s, size_t len, uint32_t *id)
{
	size_t mask, j, before, lcap;
	char *copy;
	uint32_t *nl;
	int rc;

	if ((nm->n + 1) * 2 > nm->nslots) {
		rc = names_reindex(q, nm);
		if (rc)
			return rc;
	}
	mask = nm->nslots - 1;
	for (j = hash_bytes(s, len, 0) & mask; nm->slots[j]; j = (j + 1) & mask) {
		uint32_t k = nm->slots[j] - 1;
		if (nm->len[k] == len && !memcmp(nm->s[k], s, len)) {
			*id = k;
			return 0;
		}
	}
	if (nm->n >= UINT32_MAX - 2)
		return err_set(q->msg, ERR_TOO_LARGE, "too many distinct names");
	lcap = nm->cap;
	rc = query__mem_grow(q, (void **)&nm->s, &nm->cap, sizeof(*nm->s), nm->n + 1, "name table");
	if (rc)
		return rc;
	if (nm->cap != lcap) {
		nl = realloc(nm->len, nm->cap * sizeof(*nm->len));
		if (!nl)
			return err_set(q->msg, ERR_NOMEM, "out of memory (name table)");
		nm->len = nl;
	}
	before = nm->strs.used;
	if (q->mem.used + len + 64 > q->mem.cap)
		return err_set(q->msg, ERR_TOO_LARGE,
			       "query memory budget of %zu bytes exceeded (names)", q->mem.cap);
	copy = arena_strndup(&nm->strs, s, len);
	if (!copy)
		return err_set(q->msg, ERR_NOMEM, "out of memory (names)");
	q->mem.used += nm->strs.used - before;
	nm->s[nm->n] = copy;
	nm->len[nm->n] = (uint32_t)len;
	nm->slots[j] = (uint32_t)nm->n + 1;
	*id = (uint32_t)nm->n++;
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
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 8;
		uint32_t *np = realloc(v->part, nc * sizeof(*np));
		struct store_symbols **ns;

		if (!np)
			return err_set(q->msg, ERR_NOMEM, "out of memory (symbol views)");
		v->part = np;
		ns = realloc(v->sym, nc * sizeof(*ns));
		if (!ns)
			return err_set(q->msg, ERR_NOMEM, "out of memory (symbol views)");
		v->sym = ns;
		v->cap = nc;
	}
	rc = store_symbols_get(q->st, q->tenant, part, &s, q->msg);
	if (rc)
		return err_set(q->msg, rc, "reading symbols of partition %u: %s", part, err_str(rc));
	v->part[v->n] = part;
	v->sym[v->n++] = s;
	*out = s;
	return 0;
}
