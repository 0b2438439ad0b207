/*
 * arena.h - a bump allocator for per-request and per-query work.
 *
 * Everything allocated from an arena is released at once by arena_release().
 * An arena has a cap on the bytes it may hold; past it, allocations return
 * NULL and arena_failed() reports ERR_TOO_LARGE, so a client cannot make the
 * server allocate without bound.  The cap is mandatory: name it after what
 * the arena holds (a request's profiles, a query's names...); a cap of 0 is
 * a programmer error (asserted; in a build without asserts every
 * non-empty allocation then fails).  Blocks come from the C heap, or from a
 * grow_alloc hook (base/grow.h) that may charge a caller's budget.
 * Not thread-safe: one arena per request.
 */
#ifndef UNHEX_BASE_ARENA_H
#define UNHEX_BASE_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct arena_block;
struct grow_alloc;

struct arena {
	struct arena_block *head;
	size_t used;      /* bytes of all blocks (their usable sizes) */
	size_t cap;       /* maximum of used; > 0 */
	int failed;       /* ERR_NOMEM or ERR_TOO_LARGE after a failed alloc */
	const struct grow_alloc *alloc; /* borrowed; NULL = C heap */
};

/* Initializes an empty arena of at most `cap` bytes (caller allocates the struct). */
void arena_init(struct arena *a, size_t cap);

/* Like arena_init, taking its blocks through `alloc` (borrowed, may be NULL). */
void arena_init_alloc(struct arena *a, size_t cap, const struct grow_alloc *alloc);

/* Frees every block.  The arena may be reused after arena_init(). */
void arena_release(struct arena *a);

/* Returns 16-byte aligned memory owned by the arena, or NULL. */
void *arena_alloc(struct arena *a, size_t n);

/* Like arena_alloc, zero-filled. */
void *arena_calloc(struct arena *a, size_t count, size_t size);

/*
 * Copies `len` bytes and appends a NUL; returns owned-by-arena memory with
 * no alignment (strings are packed back to back).
 */
char *arena_strndup(struct arena *a, const char *s, size_t len);

/*
 * Grows the array *p (*cap elements of `elem` bytes, arena-owned or NULL)
 * to hold at least `need`, doubling from 16 and copying; the old block
 * stays in the arena until it is released.  0, ERR_TOO_LARGE (past the
 * cap or size_t) or the arena's failure; *p and *cap untouched on error.
 */
int arena_grow(struct arena *a, void **p, size_t *cap, size_t need, size_t elem);

/* Returns 0, or the error of the first failed allocation. */
static inline int arena_failed(const struct arena *a)
{
	return a->failed;
}

#endif
