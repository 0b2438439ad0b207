/*
 * builder.c - struct ingest_pprof from named frames, for the formats that
 * are not pprof: JFR and Pyroscope's legacy text formats.
 *
 * Those formats name every frame by a string (and JFR a line); the builder
 * interns each distinct name as one function, each (function, line) as
 * one location without a mapping (frames are named, nothing to symbolize),
 * each distinct label set as one group, and sums samples with the same
 * stack and group, so a recording of a million events on a thousand
 * stacks holds a thousand samples.  The result is exactly what
 * ingest__convert() makes of a pprof, and goes through the same write.
 *
 * Memory: the hash tables and growing arrays live in the builder's own
 * arena, capped by the caller; ingest__b_finish() copies the result, at
 * its final size, into the request arena.  Every count is bounded by
 * struct ingest_limits (samples, stack depth) or by INGEST_MAX_GROUPS.
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/hash.h"

#include <assert.h>
#include <string.h>

#define SEED_FN 0x66756e63ULL
#define SEED_STACK 0x737461636bULL

/* A table of uint32 indices (+1, 0 = empty) with their hashes, rebuilt at half load. */
static int tab_grow(struct ingest_btab *tb, struct arena *t, size_t used)
{
	size_t cap = tb->mask ? tb->mask + 1 : 64;
	uint32_t *slot;
	uint64_t *hash;

	if (tb->mask && 2 * (used + 1) <= cap)
		return 0;
	while (2 * (used + 1) > cap)
		cap *= 2;
	slot = arena_calloc(t, cap, sizeof(*slot));
	hash = arena_alloc(t, cap * sizeof(*hash));
	if (!slot || !hash)
		return arena_failed(t);
	for (size_t i = 0; tb->mask && i <= tb->mask; i++) {
		size_t j;

		if (!tb->slot[i])
			continue;
		for (j = tb->hash[i] & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
			;
		slot[j] = tb->slot[i];
		hash[j] = tb->hash[i];
	}
	tb->slot = slot;
	tb->hash = hash;
	tb->mask = cap - 1;
	return 0;
}

void ingest__b_init(struct ingest_builder *b, struct arena *a, size_t tmp_cap,
		    const struct ingest_limits *lim, size_t n_types)
{
	assert(n_types > 0 && n_types <= INGEST_BUILDER_MAX_TYPES);
	memset(b, 0, sizeof(*b));
	b->a = a;
	b->lim = lim;
	b->n_types = n_types;
	arena_init(&b->t, tmp_cap);
}

void ingest__b_release(struct ingest_builder *b)
{
	arena_release(&b->t);
	memset(b, 0, sizeof(*b));
}

int ingest__b_function(struct ingest_builder *b, const char *name, size_t len, uint32_t *out)
{
	uint64_t h = hash_bytes(name, len, SEED_FN);
	size_t i;
	char *copy;
	int rc;

	if (len > INGEST_MAX_FRAME_BYTES)
		return ERR_TOO_LARGE;
	rc = tab_grow(&b->fn_tab, &b->t, b->n_fns);
	if (rc)
		return rc;
	for (i = h & b->fn_tab.mask; b->fn_tab.slot[i]; i = (i + 1) & b->fn_tab.mask) {
		const struct store_function *f = &b->fns[b->fn_tab.slot[i] - 1];

		if (b->fn_tab.hash[i] == h && b->fn_len[b->fn_tab.slot[i] - 1] == len &&
		    memcmp(f->name, name, len) == 0) {
			*out = b->fn_tab.slot[i] - 1;
			return 0;
		}
	}
	if (b->n_fns >= UINT32_MAX - 1)
		return ERR_TOO_LARGE;
	rc = arena_grow(&b->t, (void **)&b->fns, &b->cap_fns, b->n_fns + 1, sizeof(*b->fns));
	if (!rc)
		rc = arena_grow(&b->t, (void **)&b->fn_len, &b->cap_fn_len, b->n_fns + 1,
			  sizeof(*b->fn_len));
	if (rc)
		return rc;
	copy = arena_strndup(b->a, name, len);
	if (!copy)
		return arena_failed(b->a);
	b->fns[b->n_fns].name = copy;
	b->fns[b->n_fns].system_name = copy;
	b->fns[b->n_fns].filename = "";
	b->fns[b->n_fns].start_line = 0;
	b->fn_len[b->n_fns] = len;
	b->fn_tab.slot[i] = (uint32_t)(b->n_fns + 1);
	b->fn_tab.hash[i] = h;
	*out = (uint32_t)b->n_fns++;
	return 0;
}

int ingest__b_location(struct ingest_builder *b, uint32_t fn, int64_t line, uint32_t *out)
{
	uint64_t h = hash_combine(hash_u64(fn), (uint64_t)line);
	size_t i;
	int rc;

	rc = tab_grow(&b->loc_tab, &b->t, b->n_locs);
	if (rc)
		return rc;
	for (i = h & b->loc_tab.mask; b->loc_tab.slot[i]; i = (i + 1) & b->loc_tab.mask) {
		const struct ingest_line *l = &b->lines[b->loc_tab.slot[i] - 1];

		if (l->function == fn + 1 && l->line == line) {
			*out = b->loc_tab.slot[i] - 1;
			return 0;
		}
	}
	if (b->n_locs >= UINT32_MAX - 1)
		return ERR_TOO_LARGE;
	rc = arena_grow(&b->t, (void **)&b->lines, &b->cap_lines, b->n_locs + 1, sizeof(*b->lines));
	if (rc)
		return rc;
	b->lines[b->n_locs].function = fn + 1;
	b->lines[b->n_locs].line = line;
	b->lines[b->n_locs].column = 0;
	b->loc_tab.slot[i] = (uint32_t)(b->n_locs + 1);
	b->loc_tab.hash[i] = h;
	*out = (uint32_t)b->n_locs++;
	return 0;
}

static int labels_equal(const struct ingest_group *g, const struct store_label *l, size_t n)
{
	if (g->n_labels != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(g->labels[i].name, l[i].name) || strcmp(g->labels[i].value, l[i].value))
			return 0;
	return 1;
}

int ingest__b_group(struct ingest_builder *b, const struct store_label *sorted, size_t n,
		    uint32_t *out)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	struct store_label *copy;
	size_t i;
	int rc;

	if (n == 0) {
		*out = 0;
		return 0;
	}
	for (size_t k = 0; k < n; k++) {
		h = hash_combine(h, hash_bytes(sorted[k].name, strlen(sorted[k].name), 1));
		h = hash_combine(h, hash_bytes(sorted[k].value, strlen(sorted[k].value), 2));
	}
	rc = tab_grow(&b->grp_tab, &b->t, b->n_groups);
	if (rc)
		return rc;
	for (i = h & b->grp_tab.mask; b->grp_tab.slot[i]; i = (i + 1) & b->grp_tab.mask)
		if (b->grp_tab.hash[i] == h &&
		    labels_equal(&b->groups[b->grp_tab.slot[i]], sorted, n)) {
			*out = b->grp_tab.slot[i];
			return 0;
		}
	/* Group 0 is the empty set, so indices start at 1 here. */
	if (b->n_groups + 1 >= INGEST_MAX_GROUPS)
		return ERR_TOO_LARGE;
	rc = arena_grow(&b->t, (void **)&b->groups, &b->cap_groups, b->n_groups + 2,
		  sizeof(*b->groups));
	if (rc)
		return rc;
	copy = arena_alloc(b->a, n * sizeof(*copy));
	if (!copy)
		return arena_failed(b->a);
	for (size_t k = 0; k < n; k++) {
		copy[k].name = arena_strndup(b->a, sorted[k].name, strlen(sorted[k].name));
		copy[k].value = arena_strndup(b->a, sorted[k].value, strlen(sorted[k].value));
		if (!copy[k].name || !copy[k].value)
			return arena_failed(b->a);
	}
	b->n_groups++;
	b->groups[b->n_groups].labels = copy;
	b->groups[b->n_groups].n_labels = n;
	b->grp_tab.slot[i] = (uint32_t)b->n_groups;
	b->grp_tab.hash[i] = h;
	*out = (uint32_t)b->n_groups;
	return 0;
}

static uint64_t stack_hash(const uint32_t *locs, size_t n, uint32_t group)
{
	return hash_combine(hash_bytes(locs, n * sizeof(*locs), SEED_STACK), group);
}

int ingest__b_sample(struct ingest_builder *b, const uint32_t *leaf_first, size_t depth,
		     uint32_t group, const int64_t *values, size_t *sample)
{
	uint64_t h;
	size_t i, nt = b->n_types;
	int rc;

	if (depth > b->lim->max_stack_depth)
		return ERR_TOO_LARGE;
	h = stack_hash(leaf_first, depth, group);
	rc = tab_grow(&b->smp_tab, &b->t, b->n_samples);
	if (rc)
		return rc;
	for (i = h & b->smp_tab.mask; b->smp_tab.slot[i]; i = (i + 1) & b->smp_tab.mask) {
		size_t s = b->smp_tab.slot[i] - 1, o = b->off[s], d = b->off[s + 1] - o;

		if (b->smp_tab.hash[i] != h || b->grp[s] != group || d != depth ||
		    memcmp(b->stack + o, leaf_first, depth * sizeof(*leaf_first)) != 0)
			continue;
		for (size_t t = 0; t < nt; t++)
			if (__builtin_add_overflow(b->vals[s * nt + t], values[t], &b->vals[s * nt + t]))
				return ERR_INVALID;
		if (sample)
			*sample = s;
		return 0;
	}
	if (b->n_samples >= b->lim->max_samples)
		return ERR_TOO_LARGE;
	rc = arena_grow(&b->t, (void **)&b->off, &b->cap_off, b->n_samples + 2, sizeof(*b->off));
	if (!rc)
		rc = arena_grow(&b->t, (void **)&b->grp, &b->cap_grp, b->n_samples + 1, sizeof(*b->grp));
	if (!rc)
		rc = arena_grow(&b->t, (void **)&b->vals, &b->cap_vals, (b->n_samples + 1) * nt,
			  sizeof(*b->vals));
	if (!rc)
		rc = arena_grow(&b->t, (void **)&b->stack, &b->cap_stack, b->n_stack + depth + 1,
			  sizeof(*b->stack));
	if (rc)
		return rc;
	if (b->n_samples == 0)
		b->off[0] = 0;
	memcpy(b->stack + b->n_stack, leaf_first, depth * sizeof(*leaf_first));
	b->n_stack += depth;
	b->off[b->n_samples + 1] = b->n_stack;
	b->grp[b->n_samples] = group;
	memcpy(b->vals + b->n_samples * nt, values, nt * sizeof(*values));
	b->smp_tab.slot[i] = (uint32_t)(b->n_samples + 1);
	b->smp_tab.hash[i] = h;
	if (sample)
		*sample = b->n_samples;
	b->n_samples++;
	return 0;
}

int ingest__b_add(struct ingest_builder *b, size_t sample, const int64_t *values)
{
	int64_t *v = &b->vals[sample * b->n_types];

	assert(sample < b->n_samples);
	for (size_t t = 0; t < b->n_types; t++)
		if (__builtin_add_overflow(v[t], values[t], &v[t]))
			return ERR_INVALID;
	return 0;
}

int ingest__b_scale(struct ingest_builder *b, int64_t num, int64_t den)
{
	assert(num >= 0 && den > 0);
	for (size_t i = 0; i < b->n_samples * b->n_types; i++) {
		__int128 v = (__int128)b->vals[i] * num / den;

		if (v > INT64_MAX || v < INT64_MIN)
			return ERR_INVALID;
		b->vals[i] = (int64_t)v;
	}
	return 0;
}

/* Copies n elements of `elem` bytes into the result arena (at least one element). */
static void *dup_array(struct arena *a, const void *p, size_t n, size_t elem)
{
	void *r = arena_alloc(a, (n ? n : 1) * elem);

	if (r && n)
		memcpy(r, p, n * elem);
	return r;
}

int ingest__b_finish(struct ingest_builder *b, struct ingest_pprof *out)
{
	struct ingest_location *locs;
	struct ingest_line *lines;
	struct ingest_group *groups;
	size_t *off;

	locs = arena_calloc(b->a, b->n_locs ? b->n_locs : 1, sizeof(*locs));
	lines = dup_array(b->a, b->lines, b->n_locs, sizeof(*lines));
	groups = arena_calloc(b->a, b->n_groups + 1, sizeof(*groups));
	off = arena_alloc(b->a, (b->n_samples + 1) * sizeof(*off));
	out->functions = dup_array(b->a, b->fns, b->n_fns, sizeof(*b->fns));
	out->stack_locs = dup_array(b->a, b->stack, b->n_stack, sizeof(*b->stack));
	out->sample_group = dup_array(b->a, b->grp, b->n_samples, sizeof(*b->grp));
	out->values = dup_array(b->a, b->vals, b->n_samples * b->n_types, sizeof(*b->vals));
	if (!locs || !lines || !groups || !off || !out->functions || !out->stack_locs ||
	    !out->sample_group || !out->values)
		return arena_failed(b->a);
	for (size_t i = 0; i < b->n_locs; i++) {
		locs[i].n_lines = 1;
		locs[i].lines = &lines[i];
	}
	for (size_t g = 1; g <= b->n_groups; g++)
		groups[g] = b->groups[g];
	off[0] = 0;
	if (b->n_samples)
		memcpy(off + 1, b->off + 1, b->n_samples * sizeof(*off));
	out->mappings = NULL;
	out->n_mappings = 0;
	out->n_functions = b->n_fns;
	out->locations = locs;
	out->n_locations = b->n_locs;
	out->groups = groups;
	out->n_groups = b->n_groups + 1;
	out->n_samples = b->n_samples;
	out->sample_off = off;
	out->n_types = b->n_types;
	return 0;
}
