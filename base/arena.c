/* arena.c - bump allocator with a byte cap. */
#include "base/arena.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"

struct arena_block {
	struct arena_block *next;
	size_t size; /* usable bytes in data[] */
	size_t off;  /* next free byte in data[] */
	_Alignas(16) unsigned char data[];
};

enum { BLOCK_MIN = 64 * 1024, BLOCK_DOUBLE_MAX = 16 * 1024 * 1024 };

void arena_init_alloc(struct arena *a, size_t cap, const struct grow_alloc *alloc)
{
	assert(cap > 0);
	a->head = NULL;
	a->used = 0;
	a->cap = cap;
	a->failed = 0;
	a->alloc = alloc;
}

void arena_init(struct arena *a, size_t cap)
{
	arena_init_alloc(a, cap, NULL);
}

void arena_release(struct arena *a)
{
	struct arena_block *b = a->head;

	while (b) {
		struct arena_block *next = b->next;
		int rc;

		grow_resize(a->alloc, b, sizeof(*b) + b->size, 0, &rc);
		b = next;
	}
	a->head = NULL;
	a->used = 0;
}

static void *fail(struct arena *a, int rc)
{
	if (!a->failed)
		a->failed = rc;
	return NULL;
}

/* Returns n bytes at an `align`-byte boundary (a power of two <= 16). */
static void *alloc_aligned(struct arena *a, size_t n, size_t align)
{
	struct arena_block *b = a->head;
	size_t size, at;
	int rc = 0;

	if (b) {
		at = (b->off + align - 1) & ~(align - 1);
		if (at <= b->size && b->size - at >= n) {
			b->off = at + n;
			return b->data + at;
		}
	}
	if (n > SIZE_MAX - sizeof(*b) - 16)
		return fail(a, ERR_TOO_LARGE);
	size = n > BLOCK_MIN ? n : BLOCK_MIN;
	if (b && b->size * 2 > size && b->size < BLOCK_DOUBLE_MAX)
		size = b->size * 2;
	/* used <= cap always holds: blocks are only added below that test. */
	if (size > a->cap - a->used) {
		size = n; /* the smallest block that could still fit */
		if (size > a->cap - a->used)
			return fail(a, ERR_TOO_LARGE);
	}
	b = grow_resize(a->alloc, NULL, 0, sizeof(*b) + size, &rc);
	if (!b)
		return fail(a, rc);
	b->size = size;
	b->off = n;
	b->next = a->head;
	a->head = b;
	a->used += size;
	return b->data;
}

void *arena_alloc(struct arena *a, size_t n)
{
	return alloc_aligned(a, n, 16);
}

void *arena_calloc(struct arena *a, size_t count, size_t size)
{
	void *p;

	if (size && count > SIZE_MAX / size)
		return fail(a, ERR_TOO_LARGE);
	p = arena_alloc(a, count * size);
	if (p)
		memset(p, 0, count * size);
	return p;
}

int arena_grow(struct arena *a, void **p, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : 16;
	void *np;

	assert(elem > 0);
	if (need <= *cap)
		return 0;
	while (nc < need) {
		if (nc > SIZE_MAX / 2 / elem)
			return ERR_TOO_LARGE;
		nc *= 2;
	}
	np = arena_alloc(a, nc * elem);
	if (!np)
		return arena_failed(a);
	if (*cap)
		memcpy(np, *p, *cap * elem);
	*p = np;
	*cap = nc;
	return 0;
}

char *arena_strndup(struct arena *a, const char *s, size_t len)
{
	char *p = len < SIZE_MAX ? alloc_aligned(a, len + 1, 1) : fail(a, ERR_TOO_LARGE);

	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}
