/* intern.c - the string interner (see intern.h). */
#include "base/intern.h"

#include <assert.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"

#define SEED 0x696e7465726eULL

void intern_init(struct intern *t, uint32_t max_strings, size_t max_bytes,
		 const struct grow_alloc *alloc)
{
	hmap_init(&t->index, max_strings, alloc);
	t->v = NULL;
	t->n = 0;
	t->cap = 0;
	t->max = max_strings;
	t->alloc = alloc;
	arena_init_alloc(&t->strs, max_bytes, alloc);
}

void intern_release(struct intern *t)
{
	hmap_release(&t->index);
	grow_free(t->alloc, t->v, t->cap, sizeof(*t->v));
	t->v = NULL;
	t->n = 0;
	t->cap = 0;
	arena_release(&t->strs);
}

void intern_clear(struct intern *t)
{
	hmap_clear(&t->index);
	t->n = 0;
	arena_release(&t->strs);
	t->strs.failed = 0;
}

static uint32_t lookup(const struct intern *t, const void *s, size_t len, uint64_t h,
		       struct hmap_probe *pr)
{
	uint32_t i;

	for (i = hmap_first(&t->index, h, pr); i != HMAP_NONE; i = hmap_next(&t->index, pr))
		if (t->v[i].len == len && memcmp(t->v[i].s, s, len) == 0)
			return i;
	return HMAP_NONE;
}

int intern_find(const struct intern *t, const void *s, size_t len, uint32_t *id)
{
	struct hmap_probe pr;
	uint32_t i = lookup(t, s, len, hash_bytes(s, len, SEED), &pr);

	if (i == HMAP_NONE)
		return ERR_NOT_FOUND;
	*id = i;
	return 0;
}

int intern_reserve(struct intern *t, uint32_t n)
{
	int rc;

	if (n > t->max)
		return ERR_TOO_LARGE;
	rc = hmap_reserve(&t->index, n);
	return rc ? rc : GROW(t->v, t->cap, n, t->max, t->alloc);
}

int intern_put(struct intern *t, const void *s, size_t len, uint32_t *id)
{
	struct hmap_probe pr;
	uint32_t i = lookup(t, s, len, hash_bytes(s, len, SEED), &pr);
	char *copy;
	int rc;

	if (i != HMAP_NONE) {
		*id = i;
		return 0;
	}
	if (t->n >= t->max)
		return ERR_TOO_LARGE;
	/* Everything that can fail comes before the string is copied, and the
	 * copy before the entry is published, so a failure changes nothing. */
	rc = hmap_reserve(&t->index, (uint32_t)t->n + 1);
	if (!rc)
		rc = GROW(t->v, t->cap, t->n + 1, t->max, t->alloc);
	if (rc)
		return rc;
	t->strs.failed = 0; /* the interner owns its arena: read this call's error */
	copy = arena_strndup(&t->strs, s, len);
	if (!copy)
		return arena_failed(&t->strs);
	t->v[t->n].s = copy;
	t->v[t->n].len = len;
	rc = hmap_put_probed(&t->index, &pr, (uint32_t)t->n);
	assert(rc == 0); /* reserved above */
	(void)rc;
	*id = (uint32_t)t->n++;
	return 0;
}

size_t intern_bytes(const struct intern *t)
{
	return t->strs.used + t->cap * sizeof(*t->v) + hmap_bytes(&t->index);
}
