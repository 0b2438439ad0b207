/*
 * hot.c - the hot cache: the symbol cache's (key -> encoded frames) pairs
 * of recent queries, in memory, so a repeated query does not read
 * thousands of addresses back from RocksDB.  Open addressing over entries
 * whose bytes live in one pool; when the pool would pass HOT_MAX_BYTES
 * everything is dropped (the store still holds it all).
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hash.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"

enum {
	HOT_MAX_BYTES = 64u << 20,
	/* Keys hashed ahead of the probe: each probe prefetches the slot of
	 * the key this far ahead, and the entry of the key half as far. */
	HOT_PREFETCH = 8,
};

void debuginfo__hot_init(struct debuginfo__hot *c)
{
	memset(c, 0, sizeof(*c));
	pthread_rwlock_init(&c->lock, NULL);
	buf_init(&c->pool, HOT_MAX_BYTES);
}

void debuginfo__hot_release(struct debuginfo__hot *c)
{
	free(c->tab);
	buf_release(&c->pool);
	pthread_rwlock_destroy(&c->lock);
}

/* Looks `key` (hash h) up; the caller holds the read (or write) lock. */
static int get_h(const struct debuginfo__hot *c, const uint8_t *key, size_t klen, uint64_t h,
		 const void **val, size_t *vlen)
{
	if (!c->n)
		return 0;
	/* A power of two, never full: every probe ends at an empty slot. */
	assert((c->cap & (c->cap - 1)) == 0 && c->n < c->cap);
	for (size_t i = h & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		const struct debuginfo__hot_entry *e = &c->tab[i];

		if (!e->klen)
			return 0;
		if (e->hash == h && e->klen == klen &&
		    !memcmp(c->pool.data + e->koff, key, klen)) {
			*val = c->pool.data + e->voff;
			*vlen = e->vlen;
			return 1;
		}
	}
}

static int get(const struct debuginfo__hot *c, const uint8_t *key, size_t klen,
	       const void **val, size_t *vlen)
{
	return c->n ? get_h(c, key, klen, hash_bytes(key, klen, 0), val, vlen) : 0;
}

/* Hints the CPU to load the slot of hash h (the caller holds a lock). */
static void prefetch(const struct debuginfo__hot *c, uint64_t h)
{
	if (c->n)
		__builtin_prefetch(&c->tab[h & (c->cap - 1)]);
}

/* Then the pooled key and value of that slot's entry, if it has one. */
static void prefetch_pair(const struct debuginfo__hot *c, uint64_t h)
{
	const struct debuginfo__hot_entry *e;

	if (!c->n)
		return;
	e = &c->tab[h & (c->cap - 1)];
	if (e->klen && e->hash == h) {
		__builtin_prefetch(c->pool.data + e->koff);
		__builtin_prefetch(c->pool.data + e->voff + e->vlen - 1);
	}
}

/* The caller holds the write lock. */
static void clear(struct debuginfo__hot *c)
{
	if (c->tab)
		memset(c->tab, 0, c->cap * sizeof(*c->tab));
	c->n = 0;
	buf_reset(&c->pool);
}

/* Adds a pair (the caller holds the write lock); failures only skip it. */
static void put(struct debuginfo__hot *c, const uint8_t *key, size_t klen, const void *val,
		size_t vlen)
{
	const void *old;
	size_t oldlen, i;
	uint64_t h;

	if (get(c, key, klen, &old, &oldlen))
		return;
	if (klen + vlen > HOT_MAX_BYTES / 4)
		return;
	if (c->pool.len + klen + vlen > HOT_MAX_BYTES)
		clear(c);
	if ((c->n + 1) * 2 > c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 1024;
		struct debuginfo__hot_entry *nt = calloc(ncap, sizeof(*nt));

		if (!nt)
			return;
		for (size_t j = 0; j < c->cap; j++) {
			if (!c->tab[j].klen)
				continue;
			for (i = c->tab[j].hash & (ncap - 1); nt[i].klen; i = (i + 1) & (ncap - 1))
				;
			nt[i] = c->tab[j];
		}
		free(c->tab);
		c->tab = nt;
		c->cap = ncap;
	}
	h = hash_bytes(key, klen, 0);
	for (i = h & (c->cap - 1); c->tab[i].klen; i = (i + 1) & (c->cap - 1))
		;
	c->tab[i].hash = h;
	c->tab[i].koff = (uint32_t)c->pool.len;
	c->tab[i].klen = (uint32_t)klen;
	if (buf_append(&c->pool, key, klen))
		return;
	c->tab[i].voff = (uint32_t)c->pool.len;
	c->tab[i].vlen = (uint32_t)vlen;
	if (buf_append(&c->pool, val, vlen)) {
		c->pool.len = c->tab[i].koff;
		c->tab[i].klen = 0;
		return;
	}
	c->n++;
	assert(c->n * 2 <= c->cap);
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
	for (size_t i = 0; i < n && i < HOT_PREFETCH; i++)
		prefetch(c, hashes[i]);
	for (size_t i = 0; i < n && !rc; i++) {
		const void *v;
		size_t vl;

		if (i + HOT_PREFETCH < n)
			prefetch(c, hashes[i + HOT_PREFETCH]);
		if (i + HOT_PREFETCH / 2 < n)
			prefetch_pair(c, hashes[i + HOT_PREFETCH / 2]);
		if (get_h(c, keys + i * klen, klen, hashes[i], &v, &vl))
			rc = hit(ctx, i, v, vl);
		else
			cold[(*n_cold)++] = i;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}
