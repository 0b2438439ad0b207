/*
 * table.c - the in-memory containers of the store: a byte-key map (on
 * base/intern.h), segmented arrays and the chunked pool.  The last two are
 * kept here, not in base/, for a property no base container has: their
 * entries never move, so readers read them without a lock while the writer
 * appends (storage_int.h, section 8).
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"

/* ---- bmap --------------------------------------------------------------- */

void store__bmap_init(struct bmap *m, uint32_t max_keys, size_t max_bytes)
{
	intern_init(&m->keys, max_keys, max_bytes, NULL);
	m->vals = NULL;
	m->cap = 0;
}

void store__bmap_release(struct bmap *m)
{
	intern_release(&m->keys);
	free(m->vals);
	m->vals = NULL;
	m->cap = 0;
}

void store__bmap_clear(struct bmap *m)
{
	intern_clear(&m->keys);
}

int store__bmap_get(const struct bmap *m, const void *key, size_t len, uint64_t *val)
{
	uint32_t id;

	if (intern_find(&m->keys, key, len, &id))
		return ERR_NOT_FOUND;
	*val = m->vals[id];
	return 0;
}

int store__bmap_put(struct bmap *m, const void *key, size_t len, uint64_t val)
{
	uint32_t n = intern_count(&m->keys), id;
	/* Room for the value first: a key interned without one would be found. */
	int rc = GROW(m->vals, m->cap, (size_t)n + 1, m->keys.max, NULL);

	if (!rc)
		rc = intern_put(&m->keys, key, len, &id);
	if (rc)
		return rc;
	m->vals[id] = val;
	return 0;
}

size_t store__bmap_bytes(const struct bmap *m)
{
	return intern_bytes(&m->keys) + m->cap * sizeof(*m->vals);
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
/* Every chunk is a full POOL_CHUNK or one allocation of more than a quarter of it. */
#define POOL_MAX_CHUNKS (STORE_MAX_POOL_BYTES / (POOL_CHUNK / 4))

void store__pool_init(struct pool *p)
{
	memset(p, 0, sizeof(*p));
}

void store__pool_release(struct pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->chunks[i].data);
	free(p->chunks);
	memset(p, 0, sizeof(*p));
}

void *store__pool_alloc(struct pool *p, size_t len, size_t align)
{
	size_t at;

	if (p->n) {
		const struct pool_chunk *last = &p->chunks[p->n - 1];

		at = (p->used + align - 1) & ~(align - 1);
		if (at <= last->size && len <= last->size - at) {
			p->used = at + len;
			return last->data + at;
		}
	}
	{
		size_t sz = len > POOL_CHUNK / 4 ? len : POOL_CHUNK;
		char *c;

		if (sz > STORE_MAX_POOL_BYTES - p->total ||
		    GROW(p->chunks, p->alloc, p->n + 1, POOL_MAX_CHUNKS, NULL))
			return NULL;
		c = malloc(sz);
		if (!c)
			return NULL;
		/* A big allocation gets a chunk of its own, left full; small ones
		 * then start a fresh chunk.  Chunks stay in allocation order, so
		 * a rollback is a truncation. */
		p->chunks[p->n].data = c;
		p->chunks[p->n].size = sz;
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
		p->total -= p->chunks[p->n].size;
		free(p->chunks[p->n].data);
	}
	p->used = m.used;
}
