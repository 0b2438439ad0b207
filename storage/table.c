/*
 * table.c - the in-memory containers of the store: a byte-key map, the
 * symbol dedup tables, segmented arrays and the chunked pool (see
 * storage_int.h, section 7, for why entries must never move).
 */
#include "storage/storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"

/* ---- bmap --------------------------------------------------------------- */

void store__bmap_init(struct bmap *m)
{
	memset(m, 0, sizeof(*m));
}

void store__bmap_release(struct bmap *m)
{
	if (m->slots) {
		for (size_t i = 0; i <= m->mask; i++)
			free(m->slots[i].key);
		free(m->slots);
	}
	memset(m, 0, sizeof(*m));
}

static uint64_t bmap_hash(const void *key, size_t len)
{
	return hash_bytes(key, len, 0x5eed);
}

int store__bmap_get(const struct bmap *m, const void *key, size_t len, uint64_t *val)
{
	uint64_t h;
	size_t i;

	if (!m->slots)
		return ERR_NOT_FOUND;
	h = bmap_hash(key, len);
	for (i = h & m->mask;; i = (i + 1) & m->mask) {
		const struct bmap_slot *s = &m->slots[i];
		if (!s->key)
			return ERR_NOT_FOUND;
		if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0) {
			*val = s->val;
			return 0;
		}
	}
}

static void bmap_insert(struct bmap_slot *slots, size_t mask, struct bmap_slot s)
{
	size_t i;

	for (i = s.hash & mask; slots[i].key; i = (i + 1) & mask)
		;
	slots[i] = s;
}

int store__bmap_put(struct bmap *m, const void *key, size_t len, uint64_t val)
{
	struct bmap_slot s;

	if (len > UINT32_MAX)
		return ERR_TOO_LARGE;
	if (!m->slots || (m->used + 1) * 10 > (m->mask + 1) * 7) {
		size_t n = m->slots ? (m->mask + 1) * 2 : 16;
		struct bmap_slot *ns = calloc(n, sizeof(*ns));
		if (!ns)
			return ERR_NOMEM;
		if (m->slots) {
			for (size_t i = 0; i <= m->mask; i++)
				if (m->slots[i].key)
					bmap_insert(ns, n - 1, m->slots[i]);
			free(m->slots);
		}
		m->slots = ns;
		m->mask = n - 1;
	}
	s.key = malloc(len ? len : 1);
	if (!s.key)
		return ERR_NOMEM;
	memcpy(s.key, key, len);
	s.len = (uint32_t)len;
	s.hash = bmap_hash(key, len);
	s.val = val;
	bmap_insert(m->slots, m->mask, s);
	m->used++;
	return 0;
}

/* ---- idtab -------------------------------------------------------------- */

uint32_t store__idtab_find(const struct idtab *t, uint32_t hash, idtab_eq eq, const void *ctx)
{
	uint32_t i;

	if (!t->slots)
		return 0;
	for (i = hash & t->mask;; i = (i + 1) & t->mask) {
		const struct idtab_slot *s = &t->slots[i];
		if (!s->id)
			return 0;
		if (s->hash == hash && eq(ctx, s->id))
			return s->id;
	}
}

static void idtab_insert(struct idtab_slot *slots, uint32_t mask, struct idtab_slot s)
{
	uint32_t i;

	for (i = s.hash & mask; slots[i].id; i = (i + 1) & mask)
		;
	slots[i] = s;
}

static int idtab_resize(struct idtab *t, uint32_t n)
{
	struct idtab_slot *ns = calloc(n, sizeof(*ns));
	uint32_t used = 0;

	if (!ns)
		return ERR_NOMEM;
	if (t->slots) {
		for (uint32_t i = 0; i <= t->mask; i++) {
			if (t->slots[i].id) {
				idtab_insert(ns, n - 1, t->slots[i]);
				used++;
			}
		}
		free(t->slots);
	}
	t->slots = ns;
	t->mask = n - 1;
	t->used = used;
	return 0;
}

int store__idtab_add(struct idtab *t, uint32_t hash, uint32_t id)
{
	struct idtab_slot s = { hash, id };

	if (!t->slots || ((uint64_t)t->used + 1) * 4 > ((uint64_t)t->mask + 1) * 3) {
		uint32_t n = t->slots ? (t->mask + 1) * 2 : 64;
		int rc;
		if (n == 0)
			return ERR_TOO_LARGE;
		rc = idtab_resize(t, n);
		if (rc)
			return rc;
	}
	idtab_insert(t->slots, t->mask, s);
	t->used++;
	return 0;
}

/*
 * Deletes slot i of a linear-probing table by shifting back the entries of
 * its cluster that would otherwise become unreachable (Knuth 6.4, Algorithm
 * R), so that truncating after an abort needs no allocation.
 */
static void idtab_delete(struct idtab *t, uint32_t i)
{
	uint32_t j = i;

	for (;;) {
		uint32_t k;

		j = (j + 1) & t->mask;
		if (!t->slots[j].id)
			break;
		k = t->slots[j].hash & t->mask;
		/* Entry j may fill hole i unless its home k lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	t->slots[i].id = 0;
	t->slots[i].hash = 0;
	t->used--;
}

int store__idtab_truncate(struct idtab *t, uint32_t keep)
{
	if (!t->slots)
		return 0;
	for (uint32_t i = 0; i <= t->mask; i++)
		while (t->slots[i].id > keep)
			idtab_delete(t, i);
	/* A backward shift can carry a later entry over the end to the
	 * front, into slots already visited; one more pass catches those. */
	for (uint32_t i = 0; i <= t->mask; i++)
		while (t->slots[i].id > keep)
			idtab_delete(t, i);
	return 0;
}

void store__idtab_release(struct idtab *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* ---- segarr ------------------------------------------------------------- */

void store__segarr_init(struct segarr *a, size_t elem)
{
	memset(a, 0, sizeof(*a));
	a->elem = elem;
}

void store__segarr_release(struct segarr *a)
{
	for (int k = 0; k < SEGARR_LEVELS; k++)
		free(a->seg[k]);
	memset(a->seg, 0, sizeof(a->seg));
}

void *store__segarr_at(struct segarr *a, uint32_t i, int grow)
{
	uint32_t q = (i >> 10) + 1;
	unsigned k = 31u - (unsigned)__builtin_clz(q);
	uint32_t off = i - ((((uint32_t)1 << k) - 1) << 10);

	if (k >= SEGARR_LEVELS)
		return NULL;
	if (!a->seg[k]) {
		if (!grow)
			return NULL;
		a->seg[k] = calloc((size_t)1024 << k, a->elem);
		if (!a->seg[k])
			return NULL;
	}
	return (char *)a->seg[k] + (size_t)off * a->elem;
}

/* ---- pool --------------------------------------------------------------- */

#define POOL_CHUNK (64 * 1024)

void store__pool_init(struct pool *p)
{
	memset(p, 0, sizeof(*p));
}

void store__pool_release(struct pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->chunks[i]);
	free(p->chunks);
	free(p->sizes);
	memset(p, 0, sizeof(*p));
}

void *store__pool_alloc(struct pool *p, size_t len, size_t align)
{
	size_t at;

	if (p->n) {
		at = (p->used + align - 1) & ~(align - 1);
		if (at <= p->sizes[p->n - 1] && len <= p->sizes[p->n - 1] - at) {
			p->used = at + len;
			return p->chunks[p->n - 1] + at;
		}
	}
	{
		size_t sz = len > POOL_CHUNK / 4 ? len : POOL_CHUNK;
		char *c;

		if (sz > STORE_MAX_POOL_BYTES - p->total)
			return NULL;
		if (p->n == p->alloc) {
			size_t na = p->alloc ? p->alloc * 2 : 16;
			char **nc = realloc(p->chunks, na * sizeof(*nc));
			size_t *nz;
			if (!nc)
				return NULL;
			p->chunks = nc;
			nz = realloc(p->sizes, na * sizeof(*nz));
			if (!nz)
				return NULL;
			p->sizes = nz;
			p->alloc = na;
		}
		c = malloc(sz);
		if (!c)
			return NULL;
		/* A big allocation gets a chunk of its own, left full; small ones
		 * then start a fresh chunk.  Chunks stay in allocation order, so
		 * a rollback is a truncation. */
		p->chunks[p->n] = c;
		p->sizes[p->n] = sz;
		p->n++;
		p->total += sz;
		p->used = len;
		return c;
	}
}

struct pool_mark store__pool_mark(const struct pool *p)
{
	struct pool_mark m = { p->n, p->used };
	return m;
}

void store__pool_rollback(struct pool *p, struct pool_mark m)
{
	while (p->n > m.n) {
		p->n--;
		p->total -= p->sizes[p->n];
		free(p->chunks[p->n]);
	}
	p->used = m.used;
}
