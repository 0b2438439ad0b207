/*
 * pcache.c - the cache of decoded block pages: a query of sealed data
 * reads the same immutable pages on every render, and reading one costs a
 * pread (or a bucket piece), its CRC and zstd; a page found here costs a
 * hash lookup.
 *
 * An entry is one allocation: the header, then the page's profiles, values,
 * span ids (when it has any) and stack ids, copied out of the reader's
 * decoded chunk once the page passed its CRC and its index's checks.
 * Readers get views into the entry, pinned while they use them: a pinned
 * entry is never evicted, and one dropped while pinned (its block deleted or
 * marked bad) leaves the table at once and is freed at its last unpin.
 * Pages larger than PCACHE_FRACTION of the cap are not cached, so that one
 * page never empties the cache.  Pinned pages may take the cache past its
 * cap for as long as they are pinned: one page per reader at most.
 *
 * Head chunks.  The head's sample chunks (one RocksDB value per series,
 * window and epoch) are decoded on every read too, and a warm query of
 * recent data read them all again.  They share the cache and its cap:
 * an entry with no block, keyed by the chunk's RocksDB key, which also
 * keeps the value bytes it decoded.  A head value changes (ingest appends
 * to it, compaction re-encodes it, sealing deletes it), so a lookup gives
 * the entry only when its bytes are the ones the reader holds: a hit costs
 * a compare of the stored (compressed) bytes instead of zstd and the
 * column decode, and can never show a chunk as it was.  An entry whose
 * value changed is replaced at the next add; sealing drops the entries of
 * the chunks it deletes.
 */
#include "storage_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

#define PCACHE_FRACTION 8
#define PCACHE_MIN_CHAINS 256u

struct pcache_ent {
	struct dlist_node lru;      /* on pcache.lru while cached */
	struct dlist_node on_block; /* on block.page_ents while cached */
	struct pcache_ent *next;    /* hash chain */
	struct block *b;            /* NULL: a head chunk */
	uint64_t off;               /* the page's offset in its samples section; head: key hash */
	const uint8_t *hkey;        /* head: its key (hklen bytes), then its value (hvlen) */
	size_t hklen, hvlen;
	size_t bytes;               /* of the allocation */
	int pins;
	int cached;                 /* in the table; 0: freed at the last unpin */
	struct page_view v;
	struct chunk_profile profs[]; /* then values, span ids, stack ids */
};

/* The chain of (b, off) among mask + 1. */
static size_t chain_of(const struct block *b, uint64_t off, size_t mask)
{
	return (size_t)hash_combine(hash_u64((uint64_t)(uintptr_t)b), off) & mask;
}

void store__pcache_init(struct pcache *c, size_t cap)
{
	assert(cap > 0);
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	c->cap = cap;
}

/* The entry of page off of b, or (b NULL) of the head chunk whose key hashes to off. */
static struct pcache_ent **find(struct pcache *c, const struct block *b, uint64_t off,
				const uint8_t *key, size_t klen)
{
	struct pcache_ent **at;

	if (!c->tab)
		return NULL;
	for (at = &c->tab[chain_of(b, off, c->mask)]; *at; at = &(*at)->next)
		if ((*at)->b == b && (*at)->off == off &&
		    (b || ((*at)->hklen == klen && !memcmp((*at)->hkey, key, klen))))
			return at;
	return NULL;
}

/* Takes e out of the table, the LRU list and its block's list (c->mu held). */
static void unlink_entry(struct pcache *c, struct pcache_ent *e)
{
	struct pcache_ent **at = find(c, e->b, e->off, e->hkey, e->hklen);

	assert(at && *at == e);
	*at = e->next;
	dlist_unlink(&c->lru, &e->lru);
	if (e->b)
		dlist_unlink(&e->b->page_ents, &e->on_block);
	c->n--;
	c->bytes -= e->bytes;
	e->cached = 0;
}

/* Drops e from the cache (c->mu held); frees it unless a reader holds it. */
static void drop(struct pcache *c, struct pcache_ent *e)
{
	unlink_entry(c, e);
	if (!e->pins)
		free(e);
}

void store__pcache_release(struct pcache *c)
{
	while (c->lru.tail) {
		struct pcache_ent *e = dlist_entry(c->lru.tail, struct pcache_ent, lru);
		assert(!e->pins);
		drop(c, e);
	}
	free(c->tab);
	pthread_mutex_destroy(&c->mu);
	memset(c, 0, sizeof(*c));
}

/* Doubles the chains when entries outnumber them; on no memory, keeps them. */
static void grow_table(struct pcache *c)
{
	size_t n = c->tab ? 2 * (c->mask + 1) : PCACHE_MIN_CHAINS;
	struct pcache_ent **tab;

	if (c->tab && c->n <= c->mask + 1)
		return;
	tab = calloc(n, sizeof(*tab));
	if (!tab)
		return;
	for (size_t i = 0; c->tab && i <= c->mask; i++) {
		struct pcache_ent *e = c->tab[i], *next;
		for (; e; e = next) {
			size_t k = chain_of(e->b, e->off, n - 1);
			next = e->next;
			e->next = tab[k];
			tab[k] = e;
		}
	}
	free(c->tab);
	c->tab = tab;
	c->mask = n - 1;
}

/* Evicts the least recently used unpinned entries until under the cap (c->mu held). */
static void evict(struct pcache *c)
{
	struct dlist_node *n = c->lru.tail;

	while (c->bytes > c->cap && n) {
		struct pcache_ent *e = dlist_entry(n, struct pcache_ent, lru);
		n = n->prev;
		if (e->pins)
			continue;
		drop(c, e);
		c->evictions++;
	}
}

/* Pins e and puts it first (c->mu held). */
static void pin(struct pcache *c, struct pcache_ent *e, struct page_view *out)
{
	e->pins++;
	dlist_move_front(&c->lru, &e->lru);
	*out = e->v;
}

struct pcache_ent *store__pcache_get(struct pcache *c, const struct block *b,
				     const struct bpage *pg, struct page_view *out)
{
	struct pcache_ent **at, *e = NULL;

	pthread_mutex_lock(&c->mu);
	at = find(c, b, pg->off, NULL, 0);
	if (at) {
		e = *at;
		pin(c, e, out);
		c->hits++;
	} else {
		c->misses++;
	}
	pthread_mutex_unlock(&c->mu);
	return e;
}

int store__pcache_holds(struct pcache *c, const struct block *b, const struct bpage *pg)
{
	int held;

	pthread_mutex_lock(&c->mu);
	held = find(c, b, pg->off, NULL, 0) != NULL;
	pthread_mutex_unlock(&c->mu);
	return held;
}

/*
 * A copy of ch in one allocation, its profiles pointing into it, and room
 * for `extra` more bytes at its end (e->hkey); NULL past max bytes.
 */
static struct pcache_ent *copy_chunk(const struct chunk *ch, size_t extra, size_t max)
{
	size_t ns = ch->n_samples, bytes;
	struct pcache_ent *e;
	int64_t *vals;
	uint64_t *spans;
	uint32_t *ids;

	if (ch->n > max / sizeof(struct chunk_profile) ||
	    ns > max / (sizeof(*vals) + sizeof(*ids)))
		return NULL;
	bytes = sizeof(*e) + ch->n * sizeof(struct chunk_profile) + ns * sizeof(*vals) +
		(ch->spans ? ns * sizeof(*spans) : 0) + ns * sizeof(*ids);
	if (bytes > max || extra > max - bytes || !(e = malloc(bytes + extra)))
		return NULL;
	memset(e, 0, sizeof(*e));
	vals = (int64_t *)(void *)(e->profs + ch->n);
	spans = ch->spans ? (uint64_t *)(void *)(vals + ns) : NULL;
	ids = (uint32_t *)(void *)(spans ? spans + ns : (uint64_t *)(void *)(vals + ns));
	memcpy(vals, ch->vals, ns * sizeof(*vals));
	if (spans)
		memcpy(spans, ch->spans, ns * sizeof(*spans));
	memcpy(ids, ch->ids, ns * sizeof(*ids));
	for (size_t i = 0; i < ch->n; i++) {
		size_t at = (size_t)(ch->profs[i].ids - ch->ids);

		assert(at + ch->profs[i].n <= ns);
		e->profs[i] = ch->profs[i];
		e->profs[i].ids = ids + at;
		e->profs[i].vals = vals + at;
		e->profs[i].spans = spans ? spans + at : NULL;
	}
	e->hkey = (const uint8_t *)(ids + ns);
	e->bytes = bytes + extra;
	e->v.part = ch->part;
	e->v.n = ch->n;
	e->v.profs = e->profs;
	return e;
}

/*
 * Puts e (not yet in the table) in the cache, pinned, with *out viewing it
 * (c->mu held; released here).  With no memory for the table, frees e and
 * returns NULL.
 */
static struct pcache_ent *insert(struct pcache *c, struct pcache_ent *e, struct page_view *out)
{
	size_t k;

	grow_table(c);
	if (!c->tab) {
		pthread_mutex_unlock(&c->mu);
		free(e);
		return NULL;
	}
	k = chain_of(e->b, e->off, c->mask);
	e->next = c->tab[k];
	c->tab[k] = e;
	dlist_push_front(&c->lru, &e->lru);
	if (e->b)
		dlist_push_front(&e->b->page_ents, &e->on_block);
	e->cached = 1;
	c->n++;
	c->bytes += e->bytes;
	e->pins = 1;
	evict(c);
	*out = e->v;
	pthread_mutex_unlock(&c->mu);
	return e;
}

struct pcache_ent *store__pcache_add(struct pcache *c, struct block *b, const struct bpage *pg,
				     const struct chunk *ch, struct page_view *out)
{
	struct pcache_ent *e = copy_chunk(ch, 0, c->cap / PCACHE_FRACTION), **at;

	if (!e)
		return NULL;
	e->b = b;
	e->off = pg->off;
	e->hkey = NULL;
	pthread_mutex_lock(&c->mu);
	if ((at = find(c, b, pg->off, NULL, 0))) { /* another reader was faster */
		struct pcache_ent *won = *at;
		pin(c, won, out);
		pthread_mutex_unlock(&c->mu);
		free(e);
		return won;
	}
	/* Under mu: store__block_bad marks the block before it forgets. */
	if (atomic_load_explicit(&b->bad, memory_order_acquire)) {
		pthread_mutex_unlock(&c->mu);
		free(e);
		return NULL;
	}
	return insert(c, e, out);
}

/* Head entries: their key's hash stands for the page offset. */
static uint64_t head_hash(const uint8_t *key, size_t klen)
{
	return hash_bytes(key, klen, 0x68656164u);
}

/* Whether e holds the value v of vlen bytes. */
static int same_value(const struct pcache_ent *e, const void *v, size_t vlen)
{
	return e->hvlen == vlen && !memcmp(e->hkey + e->hklen, v, vlen);
}

/* Unpins e (c->mu held). */
static void unpin_locked(struct pcache *c, struct pcache_ent *e)
{
	assert(e->pins > 0);
	if (--e->pins == 0) {
		if (!e->cached)
			free(e);
		else
			evict(c); /* it may have been kept past the cap while pinned */
	}
}

/*
 * The value bytes are compared outside c->mu: an entry's key and value never
 * change once it is in the table, and the pin keeps it alive, so the one lock
 * is never held for a compare of up to an eighth of the cap.  A lookup is
 * counted a hit while it compares and moved to the misses if the bytes differ.
 */
struct pcache_ent *store__pcache_head_get(struct pcache *c, const uint8_t *key, size_t klen,
					  const void *v, size_t vlen, struct page_view *out)
{
	uint64_t h = head_hash(key, klen);
	struct pcache_ent **at, *e = NULL;

	pthread_mutex_lock(&c->mu);
	at = find(c, NULL, h, key, klen);
	if (at && (*at)->hvlen == vlen) {
		e = *at;
		pin(c, e, out);
		c->head_hits++;
	} else {
		c->head_misses++;
	}
	pthread_mutex_unlock(&c->mu);
	if (e && !same_value(e, v, vlen)) {
		pthread_mutex_lock(&c->mu);
		c->head_hits--;
		c->head_misses++;
		unpin_locked(c, e);
		pthread_mutex_unlock(&c->mu);
		e = NULL;
	}
	return e;
}

struct pcache_ent *store__pcache_head_add(struct pcache *c, const uint8_t *key, size_t klen,
					  const void *v, size_t vlen, const struct chunk *ch,
					  struct page_view *out)
{
	size_t max = c->cap / PCACHE_FRACTION;
	struct pcache_ent *e, **at;

	if (klen > max || vlen > max - klen || !(e = copy_chunk(ch, klen + vlen, max)))
		return NULL;
	e->b = NULL;
	e->off = head_hash(key, klen);
	e->hklen = klen;
	e->hvlen = vlen;
	memcpy((uint8_t *)(uintptr_t)e->hkey, key, klen);
	memcpy((uint8_t *)(uintptr_t)e->hkey + klen, v, vlen);
	pthread_mutex_lock(&c->mu);
	if ((at = find(c, NULL, e->off, key, klen))) {
		struct pcache_ent *old = *at;

		if (same_value(old, v, vlen)) { /* another reader was faster */
			pin(c, old, out);
			pthread_mutex_unlock(&c->mu);
			free(e);
			return old;
		}
		drop(c, old); /* the chunk changed since: its readers keep their pins */
	}
	return insert(c, e, out);
}

void store__pcache_head_forget(struct pcache *c, const uint8_t *key, size_t klen)
{
	struct pcache_ent **at;

	pthread_mutex_lock(&c->mu);
	if ((at = find(c, NULL, head_hash(key, klen), key, klen)))
		drop(c, *at);
	pthread_mutex_unlock(&c->mu);
}

const void *store__pcache_head_value(const struct pcache_ent *e, size_t *vlen)
{
	assert(!e->b);
	*vlen = e->hvlen;
	return e->hkey + e->hklen;
}

void store__pcache_unpin(struct pcache *c, struct pcache_ent *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&c->mu);
	unpin_locked(c, e);
	pthread_mutex_unlock(&c->mu);
}

void store__pcache_forget(struct pcache *c, struct block *b)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	while (b->page_ents.head)
		drop(c, dlist_entry(b->page_ents.head, struct pcache_ent, on_block));
	pthread_mutex_unlock(&c->mu);
}

void store__pcache_stats(struct pcache *c, struct store_page_cache_stats *out)
{
	pthread_mutex_lock(&c->mu);
	out->bytes = c->bytes;
	out->cap_bytes = c->cap;
	out->entries = c->n;
	out->hits = c->hits;
	out->misses = c->misses;
	out->head_hits = c->head_hits;
	out->head_misses = c->head_misses;
	out->evictions = c->evictions;
	pthread_mutex_unlock(&c->mu);
}
