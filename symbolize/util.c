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
#include "symbolize_int.h"

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

void sym__ptrmap_init(struct sym__ptrmap *m, const struct grow_alloc *alloc)
{
	hmap_init(&m->index, SYM__MAX_PTRMAP, alloc);
	m->v = NULL;
	m->n = 0;
	m->cap = 0;
	m->alloc = alloc;
}

static uint32_t ptr_find(const struct sym__ptrmap *m, const void *key, struct hmap_probe *pr)
{
	uint32_t i;

	for (i = hmap_first(&m->index, hash_u64((uint64_t)(uintptr_t)key), pr); i != HMAP_NONE;
	     i = hmap_next(&m->index, pr))
		if (m->v[i].key == key)
			return i;
	return HMAP_NONE;
}

void *sym__ptrmap_get(const struct sym__ptrmap *m, const void *key)
{
	struct hmap_probe pr;
	uint32_t i = ptr_find(m, key, &pr);

	return i == HMAP_NONE ? NULL : m->v[i].val;
}

int sym__ptrmap_put(struct sym__ptrmap *m, const void *key, void *val)
{
	struct hmap_probe pr;
	uint32_t i;
	int rc;

	assert(key);
	i = ptr_find(m, key, &pr);
	if (i != HMAP_NONE) {
		m->v[i].val = val;
		return 0;
	}
	rc = GROW(m->v, m->cap, m->n + 1, SYM__MAX_PTRMAP, m->alloc);
	if (!rc)
		rc = hmap_put_probed(&m->index, &pr, (uint32_t)m->n);
	if (rc)
		return rc;
	m->v[m->n].key = key;
	m->v[m->n++].val = val;
	return 0;
}

void sym__ptrmap_release(struct sym__ptrmap *m)
{
	hmap_release(&m->index);
	grow_free(m->alloc, m->v, m->cap, sizeof(*m->v));
	m->v = NULL;
	m->n = 0;
	m->cap = 0;
}

/* ---- interning ---- */

const char *sym__intern(struct intern *t, const char *s, size_t len)
{
	const char *nul;
	uint32_t id;

	assert(s || len == 0);
	nul = memchr(s, '\0', len);
	if (nul)
		len = (size_t)(nul - s);
	if (intern_put(t, s, len, &id))
		return NULL;
	return intern_str(t, id);
}

const char *sym__demangle(struct intern *t, const char *name)
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

/* ---- the caller rule (symbolize.h, sym_dwarf_lookup_caller) ---- */

/*
 * Functions whose first byte is planted as a return address: Go's
 * goroutine entry (newproc stores goexit + 1, pprof producers move it back
 * to goexit), and the signal restorers the kernel stores as a handler's
 * return address (sa_restorer: Go's own, glibc's).  Go's assembly
 * functions carry ".abi0" in the symbol table.
 */
static const char *const planted[] = {
	"runtime.goexit", "runtime.sigreturn", "runtime.sigreturn__sigaction", "__restore_rt",
};

int sym_planted_entry(const char *function)
{
	if (!function)
		return 0;
	for (size_t i = 0; i < sizeof(planted) / sizeof(planted[0]); i++) {
		size_t n = strlen(planted[i]);

		if (!strncmp(function, planted[i], n) &&
		    (function[n] == '\0' || !strcmp(function + n, ".abi0")))
			return 1;
	}
	return 0;
}

/* The out-of-line function of a lookup's frames, or NULL. */
static const char *outermost(const struct sym_frame *f, size_t n)
{
	return n ? f[n - 1].function : NULL;
}

int sym__lookup_caller(sym__lookup_fn fn, void *ctx, uint64_t ret, struct sym_frame *frames,
		       size_t max, size_t *n)
{
	struct sym_frame at[SYM_MAX_FRAMES];
	const char *before, *here;
	size_t k = 0, ka = 0;
	int rc;

	assert(fn && n && (frames || max == 0));
	*n = 0;
	if (ret == 0)
		return 0;
	if ((rc = fn(ctx, ret - 1, frames, max, &k)))
		return rc;
	*n = k;
	if ((rc = fn(ctx, ret, at, SYM_MAX_FRAMES, &ka)))
		return rc;
	before = outermost(frames, k);
	here = outermost(at, ka);
	/* ret must begin `here`'s code: the function differs at ret - 1. */
	if (!here || (before && !strcmp(before, here)))
		return 0;
	if (before && !sym_planted_entry(here))
		return 0;
	if (ka > max)
		ka = max;
	memcpy(frames, at, ka * sizeof(*at));
	*n = ka;
	return 0;
}
