/*
 * hmap.h - the hash index of unhex: 64-bit hash -> u32 index into an array
 * the caller owns, open addressing with linear probing.
 *
 * The map stores no keys.  The caller keeps its entries in its own array
 * (symbols, stacks, strings, tree nodes...) and the map finds, for a hash,
 * the indexes of the entries that may match; the caller compares keys
 * itself, inline, with no callback per probe:
 *
 *     struct hmap_probe pr;
 *     for (uint32_t i = hmap_first(m, h, &pr); i != HMAP_NONE;
 *          i = hmap_next(m, &pr))
 *             if (v[i].a == key.a && v[i].b == key.b)
 *                     return i;                          (found)
 *     ... append key to v at index n ...
 *     rc = hmap_put_probed(m, &pr, n);    (index it where the lookup ended)
 *
 * (hmap_put(m, h, n) indexes without a preceding lookup.)
 *
 * So one map type serves u64 keys (compare v[i].key), byte-string keys
 * (compare length and bytes, as intern.h does), composite keys, and any
 * value type (the value lives next to the key in v[i]).
 *
 * A slot is 8 bytes: a 32-bit digest of the hash ((h >> 32) ^ h, so give
 * a well-mixed hash: hash_u64, hash_bytes) and index + 1 (0 empty).  The
 * digest picks the home slot and filters most mismatches before the caller
 * touches its array; different keys may share a digest, which is why the
 * caller compares.  The table doubles past 3/4 full.
 *
 * Limits: at most `max` entries (ERR_TOO_LARGE past it, max <= HMAP_MAX);
 * memory through the grow_alloc hook given at init, so a budget can bound
 * it.  A failed hmap_put or hmap_reserve leaves the map as it was.
 *
 * Deletion: hmap_truncate() drops every index >= keep (undo of appends
 * after an aborted transaction); hmap_clear() drops everything.
 *
 * Threading: none.  Readers may share a map that no one modifies.
 */
#ifndef UNHEX_BASE_HMAP_H
#define UNHEX_BASE_HMAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/grow.h"

#define HMAP_NONE UINT32_MAX
#define HMAP_MAX (UINT32_MAX / 2) /* largest `max`: the table stays within 2^32 slots */

struct hmap_slot {
	uint32_t digest;
	uint32_t ref; /* index + 1; 0 = empty */
};

struct hmap {
	struct hmap_slot *slots; /* owned (through alloc); a shared empty slot until the first put */
	uint32_t mask;           /* slots - 1 */
	uint32_t n;              /* entries */
	uint32_t max;            /* largest n */
	const struct grow_alloc *alloc; /* borrowed; NULL = C heap */
};

/*
 * Where a lookup is; filled by hmap_first, advanced by hmap_next.  After
 * hmap_next returned HMAP_NONE it rests on the empty slot that ended the
 * lookup, where hmap_put_probed can insert without probing again.
 */
struct hmap_probe {
	uint32_t digest;
	uint32_t i;
	uint32_t mask; /* of the table probed */
};

/* Initializes an empty map (caller allocates); 0 < max <= HMAP_MAX. */
void hmap_init(struct hmap *m, uint32_t max, const struct grow_alloc *alloc);
/* Frees the table; the map is then empty and usable again with the same caps. */
void hmap_release(struct hmap *m);

/* Drops every entry, keeping the table's memory. */
void hmap_clear(struct hmap *m);

/*
 * Indexes entry `index` (< HMAP_NONE) under `hash`.  The map does not look
 * for an existing entry: the caller looked first.  Returns 0, ERR_TOO_LARGE
 * (n == max, or the hook's budget refused) or ERR_NOMEM.
 */
int hmap_put(struct hmap *m, uint64_t hash, uint32_t index);

/*
 * Like hmap_put for the hash of a lookup that just ended with HMAP_NONE:
 * inserts at the slot where it ended when that slot is still free in the
 * same table (only puts may have happened since: no clear or truncate),
 * else probes again.  Saves the second probe of "find, else add".
 */
static inline int hmap_put_probed(struct hmap *m, const struct hmap_probe *p, uint32_t index);

/* Makes room for `n` entries in all without a resize; errors as hmap_put. */
int hmap_reserve(struct hmap *m, uint32_t n);

/* Removes every entry whose index is >= keep.  Never allocates. */
void hmap_truncate(struct hmap *m, uint32_t keep);

/* Bytes of the slot table (for caches that account their memory). */
static inline size_t hmap_bytes(const struct hmap *m)
{
	return m->n || m->mask ? ((size_t)m->mask + 1) * sizeof(struct hmap_slot) : 0;
}

static inline uint32_t hmap__digest(uint64_t hash)
{
	return (uint32_t)(hash >> 32) ^ (uint32_t)hash;
}

/* Returns the next candidate index of the probe, or HMAP_NONE at its end. */
static inline uint32_t hmap_next(const struct hmap *m, struct hmap_probe *p)
{
	for (;;) {
		const struct hmap_slot *s = &m->slots[p->i];

		if (!s->ref)
			return HMAP_NONE;
		p->i = (p->i + 1) & m->mask;
		if (s->digest == p->digest)
			return s->ref - 1;
	}
}

/* Starts a lookup of `hash`; returns its first candidate index or HMAP_NONE. */
static inline uint32_t hmap_first(const struct hmap *m, uint64_t hash, struct hmap_probe *p)
{
	p->digest = hmap__digest(hash);
	p->mask = m->mask;
	p->i = p->digest & m->mask;
	return hmap_next(m, p);
}

int hmap__put_probed_slow(struct hmap *m, const struct hmap_probe *p, uint32_t index);

static inline int hmap_put_probed(struct hmap *m, const struct hmap_probe *p, uint32_t index)
{
	/* Inline when the slot is there to take without a resize; the
	 * shared empty slot (mask 0) never passes the load test. */
	if (p->mask == m->mask && m->n < m->max &&
	    ((uint64_t)m->n + 1) * 4 <= ((uint64_t)m->mask + 1) * 3 && !m->slots[p->i].ref &&
	    index != HMAP_NONE) {
		m->slots[p->i].digest = p->digest;
		m->slots[p->i].ref = index + 1;
		m->n++;
		return 0;
	}
	return hmap__put_probed_slow(m, p, index);
}

#endif
