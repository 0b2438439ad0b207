/*
 * hot.c - the hot cache: the symbol cache's (key -> encoded frames) pairs
 * of recent queries, in memory, so a repeated query does not read
 * thousands of addresses back from RocksDB.  A base/hmap.h index over
 * entries whose bytes live in one pool; when the pool would pass
 * HOT_MAX_BYTES everything is dropped (the store still holds it all).
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/grow.h"
#include "base/hash.h"
#include "debuginfo_int.h"
#include "storage/storage.h"

enum {
	HOT_MAX_BYTES = 64u << 20,
	/* A pair holds at least a 10-byte key (a build ID byte, the address,
	 * the leaf flag), so the pool cap bounds the entries. */
	HOT_MAX_PAIRS = HOT_MAX_BYTES / 10,
	/* Keys hashed ahead of the probe: each probe prefetches the index
	 * slot of the key this far ahead. */
	HOT_PREFETCH = 8,
};

void debuginfo__hot_init(struct debuginfo__hot *c)
{
	memset(c, 0, sizeof(*c));
	pthread_rwlock_init(&c->lock, NULL);
	hmap_init(&c->index, HOT_MAX_PAIRS, NULL);
	buf_init(&c->pool, HOT_MAX_BYTES);
}

void debuginfo__hot_release(struct debuginfo__hot *c)
{
	hmap_release(&c->index);
	grow_free(NULL, c->v, c->cap, sizeof(*c->v));
	buf_release(&c->pool);
	pthread_rwlock_destroy(&c->lock);
}

/*
 * Looks `key` (hash h) up; the caller holds the read (or write) lock.
 * Returns the entry's index or HMAP_NONE, *pr where the lookup ended.
 */
static inline uint32_t find(const struct debuginfo__hot *c, const uint8_t *key, size_t klen,
			    uint64_t h, struct hmap_probe *pr)
{
	uint32_t i;

	for (i = hmap_first(&c->index, h, pr); i != HMAP_NONE; i = hmap_next(&c->index, pr)) {
		const struct debuginfo__hot_entry *e = &c->v[i];

		if (e->klen == klen && !memcmp(c->pool.data + e->koff, key, klen))
			return i;
	}
	return HMAP_NONE;
}

/* The caller holds the write lock. */
static void clear(struct debuginfo__hot *c)
{
	hmap_clear(&c->index);
	c->n = 0;
	buf_reset(&c->pool);
}

/* Adds a pair (the caller holds the write lock); failures only skip it. */
static void put(struct debuginfo__hot *c, const uint8_t *key, size_t klen, const void *val,
		size_t vlen)
{
	struct debuginfo__hot_entry *e;
	struct hmap_probe pr;
	uint64_t h = hash_bytes(key, klen, 0);

	if (find(c, key, klen, h, &pr) != HMAP_NONE)
		return;
	if (klen + vlen > HOT_MAX_BYTES / 4)
		return;
	if (c->pool.len + klen + vlen > HOT_MAX_BYTES || c->n == HOT_MAX_PAIRS) {
		clear(c);
		find(c, key, klen, h, &pr); /* the probe of the emptied index */
	}
	if (GROW(c->v, c->cap, c->n + 1, HOT_MAX_PAIRS, NULL))
		return;
	e = &c->v[c->n];
	e->koff = (uint32_t)c->pool.len;
	e->klen = (uint32_t)klen;
	e->voff = e->koff + e->klen;
	e->vlen = (uint32_t)vlen;
	/* The pool has room (tested above); a failed index insert takes the
	 * pair back out of the pool. */
	if (buf_append(&c->pool, key, klen) || buf_append(&c->pool, val, vlen)) {
		c->pool.len = e->koff;
		return;
	}
	if (hmap_put_probed(&c->index, &pr, (uint32_t)c->n)) {
		c->pool.len = e->koff;
		return;
	}
	c->n++;
}

void debuginfo__hot_put(struct debuginfo__hot *c, const struct store_kv *kv, size_t n)
{
	pthread_rwlock_wrlock(&c->lock);
	for (size_t i = 0; i < n; i++)
		put(c, kv[i].key, kv[i].klen, kv[i].val, kv[i].vlen);
	pthread_rwlock_unlock(&c->lock);
}

void debuginfo__hot_clear(struct debuginfo__hot *c)
{
	pthread_rwlock_wrlock(&c->lock);
	clear(c);
	pthread_rwlock_unlock(&c->lock);
}

int debuginfo__hot_probe(struct debuginfo__hot *c, const uint8_t *keys, size_t klen, size_t n,
			 uint64_t *hashes, debuginfo__hot_hit_fn hit, void *ctx, size_t *cold,
			 size_t *n_cold)
{
	int rc = 0;

	assert(hit && ((keys && hashes && cold) || n == 0) && klen > 0);
	*n_cold = 0;
	/* Hashes first, so each probe can prefetch the slot a few keys ahead:
	 * over a large cache most probes are a cache miss otherwise. */
	for (size_t i = 0; i < n; i++)
		hashes[i] = hash_bytes(keys + i * klen, klen, 0);
	pthread_rwlock_rdlock(&c->lock);
	{
		/* Nothing changes under the read lock: locals the calls of
		 * `hit` cannot invalidate, so they stay in registers. */
		const struct hmap ix = c->index;
		const struct debuginfo__hot_entry *v = c->v;
		const char *pool = c->pool.data;
		size_t nc = 0;

		for (size_t i = 0; i < n && i < HOT_PREFETCH; i++)
			__builtin_prefetch(&ix.slots[hmap__digest(hashes[i]) & ix.mask]);
		for (size_t i = 0; i < n && !rc; i++) {
			const uint8_t *key = keys + i * klen;
			struct hmap_probe pr;
			uint32_t k;

			if (i + HOT_PREFETCH < n)
				__builtin_prefetch(&ix.slots[hmap__digest(hashes[i + HOT_PREFETCH]) & ix.mask]);
			for (k = hmap_first(&ix, hashes[i], &pr); k != HMAP_NONE; k = hmap_next(&ix, &pr))
				if (v[k].klen == klen && !memcmp(pool + v[k].koff, key, klen))
					break;
			if (k == HMAP_NONE)
				cold[nc++] = i;
			else
				rc = hit(ctx, i, pool + v[k].voff, v[k].vlen);
		}
		*n_cold = nc;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}
