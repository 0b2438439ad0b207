/* arena.c - bump allocator with a byte cap. */
#include "base/arena.h"

#include "base/err.h"

#include <stdlib.h>
#include <string.h>

struct arena_block {
	struct arena_block *next;
	size_t size; /* usable bytes in data[] */
	size_t off;  /* next free byte in data[] */
	_Alignas(16) unsigned char data[];
};

enum { BLOCK_MIN = 64 * 1024 };

void arena_init(struct arena *a, size_t cap)
{
	a->head = NULL;
	a->used = 0;
	a->cap = cap ? cap : SIZE_MAX;
	a->failed = 0;
}

void arena_release(struct arena *a)
{
	struct arena_block *b = a->head;

	while (b) {
		struct arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
	a->used = 0;
}

void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_block *b = a->head;
	size_t need = (n + 15) & ~(size_t)15;
	size_t size;

	if (need < n)
		goto too_large;
	if (b && b->size - b->off >= need) {
		void *p = b->data + b->off;
		b->off += need;
		return p;
	}
	size = need > BLOCK_MIN ? need : BLOCK_MIN;
	if (b && b->size * 2 > size && b->size < 16 * 1024 * 1024)
		size = b->size * 2;
	if (size > a->cap - a->used || a->used + size > a->cap) {
		size = need; /* the smallest block that could still fit */
		if (size > a->cap - a->used)
			goto too_large;
	}
	b = malloc(sizeof(*b) + size);
	if (!b) {
		if (!a->failed)
			a->failed = ERR_NOMEM;
		return NULL;
	}
	b->size = size;
	b->off = need;
	b->next = a->head;
	a->head = b;
	a->used += size;
	return b->data;
too_large:
	if (!a->failed)
		a->failed = ERR_TOO_LARGE;
	return NULL;
}

void *arena_calloc(struct arena *a, size_t count, size_t size)
{
	void *p;

	if (size && count > SIZE_MAX / size) {
		if (!a->failed)
			a->failed = ERR_TOO_LARGE;
		return NULL;
	}
	p = arena_alloc(a, count * size);
	if (p)
		memset(p, 0, count * size);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t len)
{
	char *p = len < SIZE_MAX ? arena_alloc(a, len + 1) : NULL;

	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}
