/* blockpool.c - a bounded cache of freed blocks of exact sizes, as a grow_alloc hook. */
#include "base/blockpool.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"

/* Under AddressSanitizer a held block is poisoned past its link, so a use
 * after its arena was released is still reported. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif
#ifdef POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/*
 * Blocks of BLOCKPOOL_HUGE bytes or more are mappings of their own,
 * aligned to it, whose whole 2 MiB extents are advised as transparent huge
 * pages (madvise MADV_HUGEPAGE; a no-op where the system set THP to
 * "never").  A fresh block is then faulted in one 2 MiB page at a time
 * instead of 512 small ones: a cold render of 300,000 high-diversity
 * samples faulted 9,250 pages instead of 25,700 (bench/RESULTS.md, "Huge
 * pages for the pools' large blocks").  Its tail past the last whole
 * extent keeps small pages, so a block never holds more resident than its
 * size rounded up to a page.  Under AddressSanitizer every block stays a
 * malloc'd one, so overflows out of it are still reported.
 */
#ifdef POOL_ASAN
#define MAPPED(size) ((void)(size), 0)
#else
#define MAPPED(size) ((size) >= BLOCKPOOL_HUGE)
#endif

/* `size` rounded up to the system's page size, as munmap needs the end of
 * a block's mapping (4 KiB on x86-64, up to 64 KiB on some arm64 kernels). */
static size_t page_round(size_t size)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t page = ps > 0 ? (size_t)ps : 4096;

	assert((page & (page - 1)) == 0 && page <= BLOCKPOOL_HUGE);
	return (size + page - 1) & ~(page - 1);
}

/* A new block of `size` bytes (any content), or NULL. */
static void *block_new(size_t size)
{
	size_t len, head;
	uintptr_t raw, at;
	void *m;

	if (!MAPPED(size))
		return malloc(size);
	len = page_round(size);
	if (len > SIZE_MAX - BLOCKPOOL_HUGE)
		return NULL;
	m = mmap(NULL, len + BLOCKPOOL_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	raw = (uintptr_t)m;
	at = (raw + BLOCKPOOL_HUGE - 1) & ~(uintptr_t)(BLOCKPOOL_HUGE - 1);
	head = at - raw;
	if (head)
		munmap(m, head);
	munmap((void *)(at + len), BLOCKPOOL_HUGE - head);
#ifdef MADV_HUGEPAGE
	/* Advice: without it the block works with small pages. */
	(void)madvise((void *)at, size & ~(size_t)(BLOCKPOOL_HUGE - 1), MADV_HUGEPAGE);
#endif
	return (void *)at;
}

/* Frees block b of `size` bytes, made by block_new(size). */
static void block_free(void *b, size_t size)
{
	if (!b)
		return;
	if (MAPPED(size))
		munmap(b, page_round(size));
	else
		free(b);
}

/* A held block of `size` bytes, or NULL. */
static void *take(struct blockpool *p, size_t size)
{
	void *b = NULL;

	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < BLOCKPOOL_SIZES; i++) {
		if (p->cls[i].n == 0 || p->cls[i].size != size)
			continue;
		b = p->cls[i].head;
		memcpy(&p->cls[i].head, b, sizeof(void *));
		p->cls[i].n--;
		p->held -= size;
		if (p->idle_ns)
			p->cls[i].used_ns = clock_mono_ns();
		break;
	}
	if (b)
		p->reused++;
	else
		p->fresh++;
	pthread_mutex_unlock(&p->mu);
	if (b)
		UNPOISON((char *)b + sizeof(void *), size - sizeof(void *));
	return b;
}

/* Frees the blocks of a list taken off the pool, `size` bytes each. */
static void free_list(void *b, size_t size)
{
	while (b) {
		void *next;

		memcpy(&next, b, sizeof(void *));
		UNPOISON(b, size);
		block_free(b, size);
		b = next;
	}
}

/*
 * Under the lock: takes off the pool the blocks of every size unused since
 * before now - idle_ns, into gone[] (heads) and sizes[]; returns how many
 * lists.
 */
static int decay(struct blockpool *p, int64_t now, void **gone, size_t *sizes)
{
	int n = 0;

	for (int i = 0; i < BLOCKPOOL_SIZES; i++) {
		if (!p->cls[i].n || now - p->cls[i].used_ns <= p->idle_ns)
			continue;
		gone[n] = p->cls[i].head;
		sizes[n++] = p->cls[i].size;
		p->held -= p->cls[i].n * p->cls[i].size;
		p->cls[i].head = NULL;
		p->cls[i].n = 0;
	}
	return n;
}

/* Keeps block b of `size` bytes when the bounds allow; frees it otherwise. */
static void put(struct blockpool *p, void *b, size_t size)
{
	void *gone[BLOCKPOOL_SIZES];
	size_t sizes[BLOCKPOOL_SIZES];
	int slot = -1, n_gone = 0;
	int64_t now = 0;

	if (size < sizeof(void *) || size > p->max_block) {
		block_free(b, size);
		return;
	}
	if (p->idle_ns) /* set before the pool is shared: read without the lock */
		now = clock_mono_ns();
	pthread_mutex_lock(&p->mu);
	if (p->idle_ns)
		n_gone = decay(p, now, gone, sizes);
	if (size <= p->max_bytes - p->held) {
		for (int i = 0; i < BLOCKPOOL_SIZES; i++) {
			if (p->cls[i].n && p->cls[i].size == size) {
				slot = i;
				break;
			}
			if (!p->cls[i].n && slot < 0)
				slot = i;
		}
	}
	if (slot >= 0) {
		memcpy(b, &p->cls[slot].head, sizeof(void *));
		POISON((char *)b + sizeof(void *), size - sizeof(void *));
		p->cls[slot].head = b;
		p->cls[slot].size = size;
		p->cls[slot].n++;
		p->cls[slot].used_ns = now;
		p->held += size;
	}
	pthread_mutex_unlock(&p->mu);
	if (slot < 0)
		block_free(b, size);
	for (int i = 0; i < n_gone; i++)
		free_list(gone[i], sizes[i]);
}

/*
 * The size of the block that holds `size` bytes: the size itself in exact
 * mode; with size classes the class above it, or 0 for a C heap block
 * (below min_block or above max_block), or size 0.
 */
static size_t block_of(const struct blockpool *p, size_t size)
{
	size_t c;

	if (!p->min_block)
		return size;
	if (size < p->min_block || size > p->max_block)
		return 0;
	for (c = p->min_block; c < size; c *= 2)
		if (c + c / 2 >= size)
			return c + c / 2;
	return c;
}

static void *pool_resize(void *ctx, void *b, size_t old_size, size_t new_size, int *rc)
{
	struct blockpool *p = ctx;
	size_t ob = block_of(p, old_size), nb_size = block_of(p, new_size);
	void *nb;

	if (b && !ob && new_size && !nb_size) { /* the C heap's, both */
		if (!(nb = realloc(b, new_size)))
			*rc = ERR_NOMEM;
		return nb;
	}
	if (new_size == 0) {
		if (ob)
			put(p, b, ob);
		else
			free(b);
		return NULL;
	}
	if (b && ob == nb_size && (ob || new_size == old_size))
		return b; /* the block it has holds it */
	nb = nb_size ? take(p, nb_size) : NULL;
	if (!nb && !(nb = nb_size ? block_new(nb_size) : malloc(new_size))) {
		*rc = ERR_NOMEM;
		return NULL;
	}
	if (b) {
		memcpy(nb, b, old_size < new_size ? old_size : new_size);
		if (ob)
			put(p, b, ob);
		else
			free(b);
	}
	return nb;
}

int blockpool_init(struct blockpool *p, size_t max_bytes, size_t max_block)
{
	assert(max_bytes > 0);
	memset(p, 0, sizeof(*p));
	if (pthread_mutex_init(&p->mu, NULL))
		return ERR_NOMEM;
	p->max_bytes = max_bytes;
	p->max_block = max_block;
	p->alloc.resize = pool_resize;
	p->alloc.ctx = p;
	return 0;
}

int blockpool_init_classes(struct blockpool *p, size_t max_bytes, size_t min_block,
			   size_t max_block)
{
	int rc;

	assert(min_block >= 64 && !(min_block & (min_block - 1)) && max_block > min_block);
	rc = blockpool_init(p, max_bytes, max_block);
	if (!rc)
		p->min_block = min_block;
	return rc;
}

void blockpool_set_idle(struct blockpool *p, int64_t idle_ns)
{
	assert(idle_ns > 0);
	p->idle_ns = idle_ns;
}

size_t blockpool_decay(struct blockpool *p)
{
	void *gone[BLOCKPOOL_SIZES];
	size_t sizes[BLOCKPOOL_SIZES], before, freed;
	int n_gone;

	if (!p->idle_ns)
		return 0;
	pthread_mutex_lock(&p->mu);
	before = p->held;
	n_gone = decay(p, clock_mono_ns(), gone, sizes);
	freed = before - p->held;
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < n_gone; i++)
		free_list(gone[i], sizes[i]);
	return freed;
}

void blockpool_release(struct blockpool *p)
{
	for (int i = 0; i < BLOCKPOOL_SIZES; i++) {
		free_list(p->cls[i].head, p->cls[i].size);
		p->cls[i].head = NULL;
		p->cls[i].n = 0;
	}
	p->held = 0;
	pthread_mutex_destroy(&p->mu);
}

void blockpool_stats(struct blockpool *p, size_t *held, uint64_t *reused, uint64_t *fresh)
{
	pthread_mutex_lock(&p->mu);
	if (held)
		*held = p->held;
	if (reused)
		*reused = p->reused;
	if (fresh)
		*fresh = p->fresh;
	pthread_mutex_unlock(&p->mu);
}
