/* hmap.c - the hash index: growth, insertion and truncation (see hmap.h). */
#include "base/hmap.h"

#include <assert.h>
#include <string.h>

#include "base/err.h"

#define MIN_SLOTS 16

/*
 * Lookups on a map that never held anything probe this one empty slot, so
 * hmap_first needs no NULL check.  Nothing ever writes it: the first put
 * grows the table, and clear and truncate skip it.
 */
static struct hmap_slot empty_slot[1];

static int is_allocated(const struct hmap *m)
{
	return m->slots != empty_slot;
}

void hmap_init(struct hmap *m, uint32_t max, const struct grow_alloc *alloc)
{
	assert(max > 0 && max <= HMAP_MAX);
	m->slots = empty_slot;
	m->mask = 0;
	m->n = 0;
	m->max = max;
	m->alloc = alloc;
}

void hmap_release(struct hmap *m)
{
	if (is_allocated(m))
		grow_free(m->alloc, m->slots, (size_t)m->mask + 1, sizeof(*m->slots));
	m->slots = empty_slot;
	m->mask = 0;
	m->n = 0;
}

void hmap_clear(struct hmap *m)
{
	if (is_allocated(m))
		memset(m->slots, 0, ((size_t)m->mask + 1) * sizeof(*m->slots));
	m->n = 0;
}

static void place(struct hmap_slot *slots, uint32_t mask, struct hmap_slot s)
{
	uint32_t i;

	for (i = s.digest & mask; slots[i].ref; i = (i + 1) & mask)
		;
	slots[i] = s;
}

/* Slots needed to hold n entries at most 3/4 full. */
static size_t slots_for(uint32_t n)
{
	size_t size = MIN_SLOTS;

	while ((uint64_t)n * 4 > (uint64_t)size * 3)
		size *= 2;
	return size;
}

static int resize(struct hmap *m, size_t size)
{
	struct hmap_slot *ns;
	int rc = 0;

	ns = grow_resize(m->alloc, NULL, 0, size * sizeof(*ns), &rc);
	if (!ns)
		return rc;
	memset(ns, 0, size * sizeof(*ns));
	if (is_allocated(m)) {
		for (size_t i = 0; i <= m->mask; i++)
			if (m->slots[i].ref)
				place(ns, (uint32_t)(size - 1), m->slots[i]);
		grow_free(m->alloc, m->slots, (size_t)m->mask + 1, sizeof(*m->slots));
	}
	m->slots = ns;
	m->mask = (uint32_t)(size - 1);
	return 0;
}

int hmap_reserve(struct hmap *m, uint32_t n)
{
	if (n > m->max)
		return ERR_TOO_LARGE;
	/* The common call (intern_put's, once per new string) fits: answer it
	 * without sizing a table from MIN_SLOTS up.  An allocated table has a
	 * power of two >= MIN_SLOTS slots, so this is slots_for(n) <= slots. */
	if (is_allocated(m) && (uint64_t)n * 4 <= ((uint64_t)m->mask + 1) * 3)
		return 0;
	return resize(m, slots_for(n));
}

/* Makes room for one more entry. */
static int room_for_one(struct hmap *m)
{
	if (m->n >= m->max)
		return ERR_TOO_LARGE;
	if (!is_allocated(m) || ((uint64_t)m->n + 1) * 4 > ((uint64_t)m->mask + 1) * 3)
		return hmap_reserve(m, m->n + 1);
	return 0;
}

int hmap_put(struct hmap *m, uint64_t hash, uint32_t index)
{
	struct hmap_slot s = { hmap__digest(hash), index + 1 };
	int rc;

	assert(index != HMAP_NONE);
	rc = room_for_one(m);
	if (rc)
		return rc;
	place(m->slots, m->mask, s);
	m->n++;
	return 0;
}

int hmap__put_probed_slow(struct hmap *m, const struct hmap_probe *p, uint32_t index)
{
	struct hmap_slot s = { p->digest, index + 1 };
	int rc;

	assert(index != HMAP_NONE);
	rc = room_for_one(m);
	if (rc)
		return rc;
	/* Without deletions, slots only fill: if the slot that ended the probe
	 * is still empty in the same table, it is still the first free slot
	 * of the digest's path. */
	if (p->mask == m->mask && is_allocated(m) && !m->slots[p->i].ref)
		m->slots[p->i] = s;
	else
		place(m->slots, m->mask, s);
	m->n++;
	return 0;
}

/*
 * Removes the doomed entries, then re-places every survivor in probe
 * order, starting just after an empty slot: a survivor can only move back
 * towards its home slot, into a hole that removals (or earlier moves)
 * opened, so each ends up reachable from its home with no allocation.
 */
void hmap_truncate(struct hmap *m, uint32_t keep)
{
	size_t size = (size_t)m->mask + 1, start = 0, removed = 0;

	if (!is_allocated(m))
		return;
	for (size_t i = 0; i < size; i++) {
		if (m->slots[i].ref > keep) {
			m->slots[i].ref = 0;
			removed++;
		}
	}
	if (!removed)
		return;
	m->n -= (uint32_t)removed;
	while (m->slots[start].ref)
		start++; /* the table is at most 3/4 full: an empty slot exists */
	for (size_t k = 1; k <= size; k++) {
		size_t i = (start + k) & m->mask;
		struct hmap_slot s = m->slots[i];

		if (!s.ref)
			continue;
		m->slots[i].ref = 0;
		place(m->slots, m->mask, s);
	}
}
