/*
 * intern.h - a string interner: byte strings -> dense u32 ids 0, 1, 2...
 * in order of first appearance, each string stored once.
 *
 * Strings are copied into an arena, NUL-terminated (they may also hold
 * NULs: lengths are kept), and never move, so intern_str() pointers stay
 * valid until intern_clear() or intern_release().  The id -> string table
 * is an array grown by grow_array(); the lookup is an hmap keyed by
 * hash_bytes(), the interner comparing lengths and bytes.
 *
 * Caps: at most `max_strings` strings, and at most `max_bytes` of string
 * storage (the arena's cap: string bytes, one NUL each and the arena's
 * block slack).  Past either, intern_put() fails with ERR_TOO_LARGE and
 * the interner is unchanged.  The table, the index and the arena's blocks
 * all come through the grow_alloc hook given at init, so one budget can
 * bound the whole interner.
 *
 * Threading: none; concurrent readers are fine while no one writes.
 */
#ifndef UNHEX_BASE_INTERN_H
#define UNHEX_BASE_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/hmap.h"

struct intern_entry {
	const char *s; /* in the arena, NUL-terminated */
	size_t len;
};

struct intern {
	struct hmap index;          /* hash of the bytes -> id */
	struct intern_entry *v;     /* by id; owned (through alloc) */
	size_t n, cap;
	uint32_t max;               /* largest n */
	struct arena strs;
	const struct grow_alloc *alloc; /* borrowed; NULL = C heap */
};

/*
 * Initializes an empty interner (caller allocates the struct).
 * 0 < max_strings <= HMAP_MAX, max_bytes > 0; `alloc` is borrowed and may
 * be NULL.
 */
void intern_init(struct intern *t, uint32_t max_strings, size_t max_bytes,
		 const struct grow_alloc *alloc);
/* Frees everything; the interner is then empty and usable again with the same caps. */
void intern_release(struct intern *t);

/* Forgets every string (ids restart at 0); keeps the table and index memory. */
void intern_clear(struct intern *t);

/*
 * Sets *id to the id of the `len` bytes at `s` (borrowed), adding them if
 * new.  Returns 0, ERR_TOO_LARGE (a cap) or ERR_NOMEM; on failure nothing
 * changed and *id is untouched.  A new string gets id intern_count() - 1.
 */
int intern_put(struct intern *t, const void *s, size_t len, uint32_t *id);

/*
 * Makes room in the table and the index for `n` strings in all, so that
 * interning up to n grows neither (each growth copies, and rehashes every
 * string).  Returns 0, ERR_TOO_LARGE (n past max_strings, or the alloc
 * hook's budget) or ERR_NOMEM; on failure the interner is as it was, minus
 * any part of the room made.  Ids do not depend on it.
 */
int intern_reserve(struct intern *t, uint32_t n);

/* Sets *id and returns 0 when the bytes are interned; ERR_NOT_FOUND otherwise. */
int intern_find(const struct intern *t, const void *s, size_t len, uint32_t *id);

static inline uint32_t intern_count(const struct intern *t)
{
	return (uint32_t)t->n;
}

/* The string of `id` (< intern_count), NUL-terminated; owned by the interner. */
static inline const char *intern_str(const struct intern *t, uint32_t id)
{
	return t->v[id].s;
}

static inline size_t intern_len(const struct intern *t, uint32_t id)
{
	return t->v[id].len;
}

/* Bytes the interner holds: strings (arena blocks), table and index. */
size_t intern_bytes(const struct intern *t);

#endif
