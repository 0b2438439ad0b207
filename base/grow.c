/* grow.c - overflow-checked array growth and the byte-budget allocator. */
#include "base/grow.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

void *grow_resize(const struct grow_alloc *a, void *p, size_t old_size, size_t new_size,
		  int *rc)
{
	void *np;

	assert((p == NULL) == (old_size == 0));
	if (a)
		return a->resize(a->ctx, p, old_size, new_size, rc);
	if (new_size == 0) {
		free(p);
		return NULL;
	}
	np = realloc(p, new_size);
	if (!np)
		*rc = ERR_NOMEM;
	return np;
}

int grow_array(void *pp, size_t *cap, size_t elem, size_t need, size_t max,
	       const struct grow_alloc *a)
{
	void *old, *np;
	size_t n;
	int rc = 0;

	assert(max > 0 && elem > 0);
	if (need <= *cap)
		return 0;
	if (need > max || need > SIZE_MAX / elem)
		return ERR_TOO_LARGE;
	n = *cap ? (*cap > SIZE_MAX / 2 ? SIZE_MAX : *cap * 2) : GROW_MIN_ITEMS;
	if (n < need)
		n = need;
	if (n > max)
		n = max;
	if (n > SIZE_MAX / elem)
		n = SIZE_MAX / elem; /* still >= need, checked above */
	/* *pp is some `T *`; copy it as bytes rather than read it as a void *. */
	memcpy(&old, pp, sizeof(old));
	np = grow_resize(a, old, *cap * elem, n * elem, &rc);
	if (!np)
		return rc;
	memcpy(pp, &np, sizeof(np));
	*cap = n;
	return 0;
}

void grow_free(const struct grow_alloc *a, void *p, size_t cap, size_t elem)
{
	int rc;

	if (p)
		grow_resize(a, p, cap * elem, 0, &rc);
}

/* ---- byte budget ------------------------------------------------------------ */

static void *budget_resize(void *ctx, void *p, size_t old_size, size_t new_size, int *rc)
{
	struct grow_budget *b = ctx;
	void *np;

	assert(b->used >= old_size);
	if (new_size == 0) {
		grow_resize(b->inner, p, old_size, 0, rc);
		b->used -= old_size;
		return NULL;
	}
	if (new_size > old_size && new_size - old_size > b->cap - b->used) {
		*rc = ERR_TOO_LARGE;
		return NULL;
	}
	np = grow_resize(b->inner, p, old_size, new_size, rc);
	if (!np)
		return NULL;
	b->used = b->used - old_size + new_size;
	return np;
}

void grow_budget_init(struct grow_budget *b, size_t cap)
{
	assert(cap > 0);
	b->used = 0;
	b->cap = cap;
	b->alloc.resize = budget_resize;
	b->alloc.ctx = b;
	b->inner = NULL;
}
