/*
 * grow.h - overflow-checked growth of heap arrays, through an allocator
 * hook that may charge a caller's memory budget.
 *
 * Every growable array of unhex has a maximum item count (STYLE.md,
 * "Memory").  grow_array() makes room for `need` items of `elem` bytes:
 *
 *   - need > max, or need * elem past SIZE_MAX     -> ERR_TOO_LARGE
 *   - the allocator's budget refuses the bytes     -> ERR_TOO_LARGE
 *   - the allocator has no memory                  -> ERR_NOMEM
 *
 * and on every failure leaves the array pointer and its capacity exactly as
 * they were, so the caller's object stays valid.  Growth policy: the new
 * capacity is twice the old one (GROW_MIN_ITEMS for an empty array), raised
 * to `need` when that is larger and lowered to `max` when that is smaller;
 * appending n items one at a time therefore costs O(n) copies.
 *
 * Allocator hook: struct grow_alloc is one function that allocates,
 * resizes and frees, told the old size each time, so it can account bytes
 * exactly.  A NULL hook means the C heap with no budget.  A struct
 * grow_budget is a ready-made hook: a byte counter with a cap, for a query
 * or a cache that must not hold more than N bytes across all its tables.
 * Arrays grown through a hook must be freed through the same hook
 * (grow_free) so the budget is refunded.
 *
 * Threading: nothing here locks.  A budget is used by one thread at a time
 * (or under its owner's lock).
 */
#ifndef UNHEX_BASE_GROW_H
#define UNHEX_BASE_GROW_H

#include <stddef.h>

/* Capacity given to an empty array by its first growth (unless need is larger). */
#define GROW_MIN_ITEMS 16

struct grow_alloc {
	/*
	 * Resizes the block `p` of `old_size` bytes to `new_size` bytes, keeping
	 * the first min(old_size, new_size) bytes.  p is NULL exactly when
	 * old_size is 0; new_size 0 frees p and returns NULL (and cannot fail).
	 * Returns the block (owned by the caller until freed through this hook),
	 * or NULL with *rc set to ERR_NOMEM or ERR_TOO_LARGE, p then unchanged.
	 */
	void *(*resize)(void *ctx, void *p, size_t old_size, size_t new_size, int *rc);
	void *ctx; /* borrowed by the hook */
};

/*
 * Calls a->resize, or the C heap when a is NULL (realloc/free, ERR_NOMEM).
 * The one entry point for every container of base/ that takes a hook.
 */
void *grow_resize(const struct grow_alloc *a, void *p, size_t old_size, size_t new_size,
		  int *rc);

/*
 * Grows the array whose pointer is at `pp` (a `T **`, e.g. &v; *pp NULL
 * when *cap is 0) of `elem`-byte items to hold at least `need` items and
 * at most `max` (max > 0; a programmer error otherwise).  Returns 0 (also
 * when *cap >= need already), ERR_TOO_LARGE or ERR_NOMEM; on failure *pp
 * and *cap are untouched.  New items are uninitialized.
 */
int grow_array(void *pp, size_t *cap, size_t elem, size_t need, size_t max,
	       const struct grow_alloc *a);

/* Frees an array of *cap items grown by grow_array through `a`. */
void grow_free(const struct grow_alloc *a, void *p, size_t cap, size_t elem);

/*
 * grow_array() with elem taken from the array's type: GROW(v, cap, n + 1,
 * MAX, NULL).  A need that fits answers 0 inline: most calls are one per
 * append, and the out-of-line call cost an index build 1.7 % more
 * instructions than the hand-written helpers it replaced.
 */
static inline int grow__array(void *pp, size_t *cap, size_t elem, size_t need, size_t max,
			      const struct grow_alloc *a)
{
	return need <= *cap ? 0 : grow_array(pp, cap, elem, need, max, a);
}

#define GROW(v, cap, need, max, a) grow__array(&(v), &(cap), sizeof(*(v)), (need), (max), (a))

/*
 * A byte budget: every allocation made through `alloc` is counted in
 * `used`, and growth that would take `used` past `cap` fails with
 * ERR_TOO_LARGE.  Shrinking and freeing refund.  Initialize with
 * grow_budget_init() and pass &b->alloc; the struct must not be copied or
 * moved while anything allocated through it is alive (alloc.ctx points to
 * it).
 */
struct grow_budget {
	size_t used;
	size_t cap;
	struct grow_alloc alloc;
	/* Where the counted bytes come from: NULL (what grow_budget_init sets)
	 * is the C heap; the owner may set a pool (base/blockpool.h) after init. */
	const struct grow_alloc *inner;
};

/* cap > 0 (a programmer error otherwise). */
void grow_budget_init(struct grow_budget *b, size_t cap);

#endif
