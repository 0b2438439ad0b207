/*
 * blockpool.h - a bounded, thread-safe cache of freed memory blocks, handed
 * back to the next allocation of exactly the same size: a grow_alloc hook
 * (base/grow.h) for the arenas that request after request fills and
 * releases.
 *
 * Why: an ingest request decodes its pprofs into arenas whose blocks are
 * 64 KiB doubling to several MiB, and frees them when it answers.  Freed to
 * glibc, a block of 128 KiB or more is either unmapped (and the next
 * request pays a page fault and a zeroed page per 4 KiB to map it again)
 * or, once glibc has raised its dynamic mmap threshold past it, left in a
 * heap arena between long-lived objects, where the next large block does
 * not fit and the heap grows (bench/RESULTS.md, issue 11).  Arena blocks
 * come in a few sizes, so a pool of exact sizes serves almost every one.
 *
 * Bounds: a freed block is kept only when it is at most `max_block` bytes,
 * the pool then holds at most `max_bytes`, and its size is one of the
 * BLOCKPOOL_SIZES sizes the pool currently holds (a size whose last block
 * was taken frees its slot for another); any other block goes back to the
 * C heap.  What the pool holds stays resident: max_bytes is memory the
 * owner accepts to keep.
 *
 * Size classes (blockpool_init_classes): for tables that grow by doubling
 * from sizes no two of which need be equal (a query's hash tables, id
 * arrays and tree nodes), a block is made with its size rounded up to the
 * next class, 2^k or 3 * 2^(k-1) bytes, so a block of 40 KiB answers any
 * request in (32, 48] KiB and at most a third of a block is slack.  A
 * table that grows within its block keeps it (no copy).  Requests below
 * `min_block`, or above `max_block`, go to the C heap as they are (realloc).
 *
 * Threading: every call takes the pool's mutex; the hook may be used from
 * any number of threads at once.  Ownership: a block taken from the pool
 * belongs to the caller until freed through the same hook.
 */
#ifndef UNHEX_BASE_BLOCKPOOL_H
#define UNHEX_BASE_BLOCKPOOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/grow.h"

#define BLOCKPOOL_SIZES 32

/*
 * Huge pages: outside AddressSanitizer builds, a block of BLOCKPOOL_HUGE
 * bytes or more is a mapping of its own, aligned to BLOCKPOOL_HUGE, and
 * its whole BLOCKPOOL_HUGE extents are advised as transparent huge pages
 * (a no-op where THP is "never"); freeing it unmaps it.  Smaller blocks
 * come from malloc.
 */
#define BLOCKPOOL_HUGE ((size_t)2 << 20)

struct blockpool {
	pthread_mutex_t mu;
	size_t max_bytes;  /* bytes the pool may hold; > 0 */
	size_t max_block;  /* largest block kept */
	size_t held;       /* bytes of the blocks held */
	size_t min_block;  /* size classes: smallest block; 0 in exact mode */
	int64_t idle_ns;   /* blockpool_set_idle; 0: blocks kept however long unused */
	struct {
		size_t size;  /* the blocks' size; any when n == 0 */
		void *head;   /* singly linked through each block's first pointer */
		size_t n;
		int64_t used_ns; /* monotonic: a block of it last taken or given back */
	} cls[BLOCKPOOL_SIZES];
	uint64_t reused;   /* allocations served from the pool */
	uint64_t fresh;    /* allocations served by the C heap */
	struct grow_alloc alloc; /* the hook: pass &pool->alloc */
};

/*
 * Initializes an empty pool (caller allocates the struct, which must not
 * move while blocks taken from it are alive).  max_bytes > 0 (a programmer
 * error otherwise).  Returns 0 or ERR_NOMEM (the mutex).
 */
int blockpool_init(struct blockpool *p, size_t max_bytes, size_t max_block);

/*
 * A pool of size classes (above): blocks from min_block (a power of two,
 * at least 64 bytes) to max_block bytes (larger than min_block).  Returns 0
 * or ERR_NOMEM.
 */
int blockpool_init_classes(struct blockpool *p, size_t max_bytes, size_t min_block,
			   size_t max_block);

/*
 * Decay (idle_ns > 0): from now on, each time a block is given back, the
 * blocks of every size none of whose blocks was taken or given back in
 * the last idle_ns are freed.  What one large request left (a query over
 * a month of stacks) then leaves the process once requests of its kind
 * stop needing it, instead of staying resident up to max_bytes.  Call
 * before the pool is shared.
 */
void blockpool_set_idle(struct blockpool *p, int64_t idle_ns);

/*
 * Frees now, without waiting for a give-back, the blocks the decay above
 * would free (nothing when blockpool_set_idle was never called): what an
 * owner calls from a timer, so that a pool left full by the last request
 * before a quiet spell leaves too.  Returns the bytes freed.
 */
size_t blockpool_decay(struct blockpool *p);

/* Frees every block held.  Blocks still taken must be freed before. */
void blockpool_release(struct blockpool *p);

/* Reads the counters under the lock (any may be NULL). */
void blockpool_stats(struct blockpool *p, size_t *held, uint64_t *reused, uint64_t *fresh);

#endif
