/*
 * util.c - the small containers of the symbolize module: sorted span
 * tables, a pointer map, string interning and the demangling wrapper.
 */
#include <assert.h>
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "symbolize/symbolize_int.h"

/* Bound on the backward scan over overlapping spans (see the header). */
#define MAX_OVERLAP_SCAN 64

static int span_cmp(const void *a, const void *b)
{
	const struct sym__span *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

void sym__spans_sort(struct sym__span *s, size_t n)
{
	uint64_t m = 0;

	assert(s || n == 0);
	if (n > 1)
		qsort(s, n, sizeof(*s), span_cmp);
	for (size_t i = 0; i < n; i++) {
		if (s[i].hi > m)
			m = s[i].hi;
		s[i].maxhi = m;
	}
}

const struct sym__span *sym__span_find(const struct sym__span *s, size_t n,
				       uint64_t pc)
{
	size_t lo = 0, hi = n;

	assert(s || n == 0);
	/* Count the spans with lo <= pc. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo, steps = 0; j > 0 && steps < MAX_OVERLAP_SCAN; j--, steps++) {
		const struct sym__span *c = &s[j - 1];
		if (c->hi > pc)
			return c;
		if (c->maxhi <= pc)
			return NULL;
	}
	return NULL;
}

/* ---- pointer map ---- */

static size_t ptr_slot(const void *key, size_t cap)
{
	assert(cap && (cap & (cap - 1)) == 0);
	return hash_u64((uint64_t)(uintptr_t)key) & (cap - 1);
}

void *sym__ptrmap_get(const struct sym__ptrmap *m, const void *key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = ptr_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return NULL;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

static int ptrmap_grow(struct sym__ptrmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 256;
	const void **keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return ERR_NOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = ptr_slot(m->keys[i], cap);
		while (keys[j])
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int sym__ptrmap_put(struct sym__ptrmap *m, const void *key, void *val)
{
	assert(key); /* NULL marks an empty slot */
	if ((m->count + 1) * 4 > m->cap * 3) {
		int rc = ptrmap_grow(m);
		if (rc)
			return rc;
	}
	size_t i = ptr_slot(key, m->cap);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->count++;
	assert(m->count < m->cap);
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

void sym__ptrmap_release(struct sym__ptrmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ---- interning ---- */

void sym__intern_init(struct sym__intern *t, size_t cap_bytes)
{
	memset(t, 0, sizeof(*t));
	arena_init(&t->arena, cap_bytes);
}

void sym__intern_release(struct sym__intern *t)
{
	free(t->slots);
	arena_release(&t->arena);
	memset(t, 0, sizeof(*t));
}

static int intern_grow(struct sym__intern *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	const char **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return ERR_NOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		const char *s = t->slots[i];
		if (!s)
			continue;
		size_t j = hash_bytes(s, strlen(s), 0) & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = s;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

const char *sym__intern(struct sym__intern *t, const char *s, size_t len)
{
	assert(s || len == 0);
	if ((t->count + 1) * 4 > t->cap * 3 && intern_grow(t))
		return NULL;
	/* Interned strings are C strings: content stops at an embedded NUL. */
	const char *nul = memchr(s, '\0', len);
	if (nul)
		len = (size_t)(nul - s);
	size_t i = hash_bytes(s, len, 0) & (t->cap - 1);
	for (;; i = (i + 1) & (t->cap - 1)) {
		const char *c = t->slots[i];
		if (!c)
			break;
		if (strncmp(c, s, len) == 0 && c[len] == '\0')
			return c;
	}
	char *copy = arena_strndup(&t->arena, s, len);
	if (!copy)
		return NULL;
	t->slots[i] = copy;
	t->count++;
	assert(t->count < t->cap);
	return copy;
}

const char *sym__demangle(struct sym__intern *t, const char *name)
{
	size_t len = strlen(name);
	char *dm = NULL;

	/* Only names that look mangled go to the demangler (C++ _Z, Rust _R/_ZN, D _D). */
	if (len < SYM__MAX_NAME && len > 2 && name[0] == '_' &&
	    (name[1] == 'Z' || name[1] == 'R' || name[1] == 'D'))
		dm = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!dm)
		return sym__intern(t, name, len);
	const char *r = sym__intern(t, dm, strlen(dm));
	free(dm);
	return r;
}
