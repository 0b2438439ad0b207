/*
 * ingest.c - the public entry points and the write of converted profiles.
 *
 * A request is converted whole first (pprof.c), so a bad profile anywhere
 * in it is found before the store sees anything; then everything goes into
 * one store transaction, aborted on the first error.
 *
 * Counting rule (shared with storage/ and web/): within one stored profile
 * (one label set x one sample type of one pprof) samples with the same
 * stack id are summed before store_txn_profile() and zero sums are
 * dropped; a stored profile with no pair left is not written.
 * ingest_stats.samples counts the (stack id, value) pairs handed to the
 * store, ingest_stats.profiles the store_txn_profile() calls and
 * ingest_stats.pprof_samples the pprof Sample messages of the pprofs
 * written (what Pyroscope and most benchmarks call samples).
 */
#include "ingest/ingest.h"

#include "base/arena.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "base/json.h"
#include "base/uuid.h"
#include "ingest_int.h"
#include "storage/storage.h"

#include <stdlib.h>
#include <string.h>

/* The request arena holds every converted profile of a request at once. */
static size_t request_arena_cap(const struct ingest_limits *lim)
{
	const size_t fixed = (size_t)1 << 20;

	if (lim->max_decompressed_bytes > (SIZE_MAX - fixed) / 8)
		return SIZE_MAX;
	return 8 * lim->max_decompressed_bytes + fixed;
}

/* ---- writing one converted pprof ---------------------------------------- */

struct writer {
	struct store_txn *tx;
	struct arena *s;                /* scratch of this pprof */
	const struct ingest_pprof *p;
	uint32_t part;
	uint32_t *map_ids;              /* pprof index -> store id, 0 = not yet */
	uint32_t *fn_ids;
	struct store_location *frames;  /* per location, once built (frame_of) */
	const struct store_location **frame_ptr; /* per location: &frames[i] once built, else NULL */
	struct hmap uniq;               /* stack id -> index in ustack, per group */
	struct ingest_stats stats;
	struct err_msg *msg;
	const uint8_t *id;              /* the pprof's profile id (UUID_BYTES) */
	uint64_t *raw_loc;              /* owned; NULL unless noting for the hooks: per
					 * location, the bit of its binary when it has
					 * no lines (binaries < RAW_BITS), else 0 */
	struct raw_note *note;          /* NULL unless noting for the hooks */
};

/*
 * What writing one pprof noted for struct ingest_hooks, reported once the
 * transaction committed (report_raw): frames without lines in the first
 * RAW_BITS binaries are noted as a bit set per sample while the stacks are
 * written, so the report needs no pass over the frames of its own.
 */
#define RAW_BITS 64

struct raw_note {
	uint64_t *sample_bits;  /* owned; per sample; NULL: nothing to report */
	int wide;               /* such a frame is in binary RAW_BITS or later */
	uint64_t stored;        /* profiles written */
};

static int store_err(struct writer *w, int rc, const char *what)
{
	return err_set(w->msg, rc, "store: %s: %s", what, err_str(rc));
}

/*
 * `s` (borrowed) when it is UTF-8, else a copy in `a` whose every byte that
 * starts no valid sequence is U+FFFD: frame and file names are kept, as
 * agents do send binary junk in symbol names, and every answer then holds
 * valid UTF-8 (docs/ingest.md, "Clean inputs").  NULL when `a` is full.
 */
static const char *utf8_clean(struct arena *a, const char *s)
{
	size_t n = strlen(s);
	char *o;

	if (json_utf8_valid(s, n))
		return s;
	o = arena_alloc(a, 3 * n + 1);
	if (!o)
		return NULL;
	o[json_utf8_clean(s, n, o)] = '\0';
	return o;
}

static int mapping_id(struct writer *w, uint32_t mi, uint32_t *out)
{
	int rc;

	if (!w->map_ids[mi - 1]) {
		struct store_mapping m = w->p->mappings[mi - 1];

		if (!(m.filename = utf8_clean(w->s, m.filename)) ||
		    !(m.build_id = utf8_clean(w->s, m.build_id)))
			return arena_failed(w->s);
		rc = store_txn_mapping(w->tx, w->part, &m, &w->map_ids[mi - 1]);
		if (rc)
			return store_err(w, rc, "mapping");
	}
	*out = w->map_ids[mi - 1];
	return 0;
}

static int function_id(struct writer *w, uint32_t fi, uint32_t *out)
{
	int rc;

	if (!w->fn_ids[fi - 1]) {
		struct store_function f = w->p->functions[fi - 1];

		if (!(f.name = utf8_clean(w->s, f.name)) ||
		    !(f.system_name = utf8_clean(w->s, f.system_name)) ||
		    !(f.filename = utf8_clean(w->s, f.filename)))
			return arena_failed(w->s);
		rc = store_txn_function(w->tx, w->part, &f, &w->fn_ids[fi - 1]);
		if (rc)
			return store_err(w, rc, "function");
	}
	*out = w->fn_ids[fi - 1];
	return 0;
}

/*
 * The store form of location `li` (mapping and function ids resolved),
 * built in w->frames on first use; its own store id is left to
 * store_txn_stack_of(), which needs it only for frames it has not seen.
 */
static int frame_of(struct writer *w, uint32_t li, const struct store_location **out)
{
	const struct ingest_location *l = &w->p->locations[li];
	struct store_location *sl = &w->frames[li];
	struct store_line *lines = NULL;
	uint32_t map = 0;
	int rc;

	if (l->mapping) {
		rc = mapping_id(w, l->mapping, &map);
		if (rc)
			return rc;
	}
	if (w->raw_loc) {
		uint32_t mi = l->n_lines ? 0 : l->mapping;

		w->raw_loc[li] = mi && mi <= RAW_BITS ? UINT64_C(1) << (mi - 1) : 0;
		if (mi > RAW_BITS)
			w->note->wide = 1;
	}
	if (l->n_lines) {
		lines = arena_alloc(w->s, l->n_lines * sizeof(*lines));
		if (!lines)
			return arena_failed(w->s);
	}
	for (uint32_t j = 0; j < l->n_lines; j++) {
		lines[j].function_id = 0;
		lines[j].line = l->lines[j].line;
		lines[j].column = l->lines[j].column;
		if (l->lines[j].function) {
			rc = function_id(w, l->lines[j].function, &lines[j].function_id);
			if (rc)
				return rc;
		}
	}
	sl->mapping_id = map;
	sl->address = l->address;
	sl->lines = lines;
	sl->n_lines = l->n_lines;
	w->frame_ptr[li] = sl;
	*out = sl;
	return 0;
}

/* Turns every sample's stack into a store stack id. */
static int write_stacks(struct writer *w, uint32_t *stack_ids)
{
	const struct ingest_pprof *p = w->p;
	size_t max_depth = 0;
	const struct store_location **frames;
	int rc;

	for (size_t i = 0; i < p->n_samples; i++)
		if (p->sample_off[i + 1] - p->sample_off[i] > max_depth)
			max_depth = p->sample_off[i + 1] - p->sample_off[i];
	frames = arena_alloc(w->s, (max_depth ? max_depth : 1) * sizeof(*frames));
	if (!frames)
		return arena_failed(w->s);
	for (size_t i = 0; i < p->n_samples; i++) {
		size_t o = p->sample_off[i], d = p->sample_off[i + 1] - o;

		for (size_t j = 0; j < d; j++) {
			uint32_t li = p->stack_locs[o + j];

			frames[j] = w->frame_ptr[li];
			if (!frames[j] && (rc = frame_of(w, li, &frames[j])))
				return rc;
		}
		rc = store_txn_stack_of(w->tx, w->part, frames, d, &stack_ids[i]);
		if (rc)
			return store_err(w, rc, "stack");
	}
	return 0;
}

/* For the hooks: the binaries without lines of each sample's frames, from
 * raw_loc, which frame_of filled for every location of a stack. */
static void note_samples(struct writer *w)
{
	const struct ingest_pprof *p = w->p;

	for (size_t i = 0; i < p->n_samples; i++) {
		uint64_t raw = 0;

		for (size_t k = p->sample_off[i]; k < p->sample_off[i + 1]; k++)
			raw |= w->raw_loc[p->stack_locs[k]];
		w->note->sample_bits[i] = raw;
	}
}

/* The labels of the series of group `g`, sample type `t`. */
static int series_labels(struct writer *w, const struct ingest_group *g, size_t t,
			 struct store_label *out, size_t *n)
{
	const struct ingest_pprof *p = w->p;
	size_t k = 0;

	for (size_t i = 0; i < p->n_labels; i++)
		if (!ingest__label_get(g->labels, g->n_labels, p->labels[i].name))
			out[k++] = p->labels[i];
	for (size_t i = 0; i < g->n_labels; i++)
		out[k++] = g->labels[i];
	out[k].name = STORE_LABEL_PROFILE_TYPE;
	out[k++].value = p->profile_types[t];
	*n = k;
	return 0;
}

/*
 * Sums the samples of one group (listed in `members`) per distinct stack id
 * and writes one profile per sample type.
 */
static int write_group(struct writer *w, size_t gi, const uint32_t *members, size_t m,
		       const uint32_t *stack_ids)
{
	const struct ingest_pprof *p = w->p;
	const struct ingest_group *g = &p->groups[gi];
	size_t nu = 0, nl;
	uint32_t *ustack, *uof, *out_ids;
	int64_t *sums, *out_vals;
	uint64_t *uspan = NULL, *out_spans = NULL;
	struct store_label *labels;
	struct store_profile_meta meta = { p->time_ns, p->duration_ns, p->period, { 0 } };
	int rc;

	memcpy(meta.id, w->id, sizeof(meta.id));

	/* With span ids a sample is told apart by (stack, span), as Pyroscope does. */
	if (p->sample_span) {
		uspan = arena_alloc(w->s, m * sizeof(*uspan));
		out_spans = arena_alloc(w->s, m * sizeof(*out_spans));
		if (!uspan || !out_spans)
			return arena_failed(w->s);
	}
	ustack = arena_alloc(w->s, m * sizeof(*ustack));
	uof = arena_alloc(w->s, m * sizeof(*uof));
	out_ids = arena_alloc(w->s, m * sizeof(*out_ids));
	sums = arena_alloc(w->s, m * sizeof(*sums));
	out_vals = arena_alloc(w->s, m * sizeof(*out_vals));
	labels = arena_alloc(w->s, (p->n_labels + g->n_labels + 1) * sizeof(*labels));
	if (!ustack || !uof || !out_ids || !sums || !out_vals || !labels)
		return arena_failed(w->s);
	hmap_clear(&w->uniq);
	rc = m > w->uniq.max ? ERR_TOO_LARGE : hmap_reserve(&w->uniq, (uint32_t)m);
	if (rc)
		return rc;
	for (size_t k = 0; k < m; k++) {
		uint32_t sid = stack_ids[members[k]], u;
		uint64_t span = uspan ? p->sample_span[members[k]] : 0;
		struct hmap_probe pr;

		for (u = hmap_first(&w->uniq, hash_combine(hash_u64(sid), span), &pr);
		     u != HMAP_NONE; u = hmap_next(&w->uniq, &pr))
			if (ustack[u] == sid && (!uspan || uspan[u] == span))
				break;
		if (u == HMAP_NONE) {
			u = (uint32_t)nu;
			if (uspan)
				uspan[nu] = span;
			ustack[nu++] = sid;
			hmap_put_probed(&w->uniq, &pr, u); /* cannot fail: reserved */
		}
		uof[k] = u;
	}
	for (size_t t = 0; t < p->n_types; t++) {
		uint64_t series;
		size_t n = 0;

		memset(sums, 0, nu * sizeof(*sums));
		for (size_t k = 0; k < m; k++) {
			int64_t v = p->values[(size_t)members[k] * p->n_types + t];
			if (__builtin_add_overflow(sums[uof[k]], v, &sums[uof[k]]))
				return err_set(w->msg, ERR_INVALID,
					       "sample %u: sum of %s values overflows", members[k],
					       p->profile_types[t]);
		}
		for (size_t u = 0; u < nu; u++) {
			if (!sums[u])
				continue;
			if (out_spans)
				out_spans[n] = uspan[u];
			out_ids[n] = ustack[u];
			out_vals[n++] = sums[u];
		}
		if (!n)
			continue;
		series_labels(w, g, t, labels, &nl);
		rc = store_txn_series(w->tx, labels, nl, &series, w->msg);
		if (rc)
			return err_set(w->msg, rc, "store: series: %s", err_str(rc));
		rc = store_txn_profile_spans(w->tx, series, w->part, &meta, out_ids, out_vals,
					     out_spans, n);
		if (rc)
			return store_err(w, rc, "profile");
		w->stats.profiles++;
		w->stats.samples += n;
	}
	return 0;
}

static int write_samples(struct writer *w, const uint32_t *stack_ids)
{
	const struct ingest_pprof *p = w->p;
	size_t *start = arena_calloc(w->s, p->n_groups + 1, sizeof(*start));
	uint32_t *order = arena_alloc(w->s, p->n_samples * sizeof(*order));
	int rc;

	if (!start || !order)
		return arena_failed(w->s);
	/* Counting sort of the samples by group, keeping their order. */
	for (size_t i = 0; i < p->n_samples; i++)
		start[p->sample_group[i] + 1]++;
	for (size_t gi = 0; gi < p->n_groups; gi++)
		start[gi + 1] += start[gi];
	for (size_t i = 0; i < p->n_samples; i++)
		order[start[p->sample_group[i]]++] = (uint32_t)i;
	for (size_t gi = p->n_groups; gi > 0; gi--)
		start[gi] = start[gi - 1];
	start[0] = 0;
	for (size_t gi = 0; gi < p->n_groups; gi++) {
		size_t m = start[gi + 1] - start[gi];

		if (!m)
			continue;
		rc = write_group(w, gi, order + start[gi], m, stack_ids);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The writer's scratch arena holds, for one pprof: an id per mapping and
 * function, a store_location and a pointer to it per location, a
 * store_line per line of every location, per sample a stack id, its place
 * in the group order and its share of the group tables (write_group: three
 * u32 and two i64 arrays, two u64 more with span ids; the hash index is on
 * the heap), a pointer per frame of the deepest stack (at most every
 * frame), and per group its labels; every allocation may be padded to 16
 * bytes.  Twice that, for the unused tails of the arena's blocks, plus
 * its first 64 KiB block, so a small pprof still gets one block.
 */
static size_t write_scratch_cap(const struct ingest_pprof *p)
{
	size_t lines = 0, max_group_labels = 0, allocs, need;

	for (size_t i = 0; i < p->n_locations; i++)
		lines += p->locations[i].n_lines;
	for (size_t g = 0; g < p->n_groups; g++)
		if (p->groups[g].n_labels > max_group_labels)
			max_group_labels = p->groups[g].n_labels;
	allocs = 8 + p->n_locations + 8 * p->n_groups;
	need = 4 * (p->n_mappings + p->n_functions + 3) +
	       (sizeof(struct store_location) + sizeof(void *)) * (p->n_locations + 1) +
	       sizeof(struct store_line) * lines +
	       (4 + 4 + 28 + (p->sample_span ? 16 : 0)) * p->n_samples +
	       sizeof(void *) * p->sample_off[p->n_samples] +
	       8 * (p->n_groups + 1) +
	       sizeof(struct store_label) * (p->n_labels + max_group_labels + 1) * p->n_groups +
	       16 * allocs;
	return 2 * need + ((size_t)64 << 10);
}

/* Writes `p`; with `note`, notes its frames without lines for the hooks. */
static int write_pprof(struct store_txn *tx, const struct ingest_limits *lim,
		       const struct ingest_pprof *p, const uint8_t *id,
		       struct ingest_stats *stats, struct raw_note *note, struct err_msg *msg)
{
	struct arena s;
	struct writer w;
	uint32_t *stack_ids;
	int rc;

	if (p->n_samples == 0)
		return 0;
	ingest__arena_init(&s, write_scratch_cap(p), lim);
	memset(&w, 0, sizeof(w));
	w.tx = tx;
	w.s = &s;
	w.p = p;
	w.msg = msg;
	w.id = id;
	/* A group has at most every sample of the pprof. */
	hmap_init(&w.uniq, p->n_samples < HMAP_MAX ? (uint32_t)p->n_samples : HMAP_MAX, NULL);
	w.map_ids = arena_calloc(&s, p->n_mappings + 1, sizeof(uint32_t));
	w.fn_ids = arena_calloc(&s, p->n_functions + 1, sizeof(uint32_t));
	w.frames = arena_alloc(&s, (p->n_locations + 1) * sizeof(*w.frames));
	w.frame_ptr = arena_calloc(&s, p->n_locations + 1, sizeof(*w.frame_ptr));
	stack_ids = arena_alloc(&s, p->n_samples * sizeof(*stack_ids));
	if (!w.map_ids || !w.fn_ids || !w.frames || !w.frame_ptr || !stack_ids) {
		rc = err_set(msg, ERR_NOMEM, "out of memory writing the profile");
		goto out;
	}
	rc = store_txn_partition(tx, p->service, &w.part);
	if (rc) {
		rc = store_err(&w, rc, "partition");
		goto out;
	}
	if (note) {
		/* Advice: without the memory, the pprof is written unreported. */
		note->sample_bits = calloc(p->n_samples, sizeof(uint64_t));
		/* Each entry is set when its location is first written, before it is read. */
		w.raw_loc = note->sample_bits ? malloc((p->n_locations + 1) * sizeof(uint64_t)) : NULL;
		w.note = w.raw_loc ? note : NULL;
	}
	rc = write_stacks(&w, stack_ids);
	if (!rc && w.raw_loc)
		note_samples(&w);
	if (!rc)
		rc = write_samples(&w, stack_ids);
	if (rc == ERR_NOMEM)
		rc = err_set(msg, rc, "out of memory writing the profile");
	if (!rc) {
		stats->profiles += w.stats.profiles;
		stats->samples += w.stats.samples;
		stats->pprof_samples += p->n_samples;
		if (note)
			note->stored = w.stats.profiles;
	}
out:
	if (note && !w.raw_loc) {
		free(note->sample_bits);
		note->sample_bits = NULL;
	}
	free(w.raw_loc);
	hmap_release(&w.uniq);
	arena_release(&s);
	return rc;
}

/* ---- clean inputs ------------------------------------------------------- */

/*
 * 1 when values of the profile type `id` (name:sample_type:sample_unit:...)
 * count or measure something and so cannot be negative: every unit agents
 * send for time, space and counts.  Values of other units (a custom gauge)
 * are stored as they are.
 */
static int unit_nonnegative(const char *id)
{
	static const char *const units[] = {
		"nanoseconds", "microseconds", "milliseconds", "seconds", "bytes", "count",
		"samples", "objects", "goroutines", "goroutine", "lock_samples", "",
	};
	const char *u = strchr(id, ':'), *e;
	size_t n;

	if (!u || !(u = strchr(u + 1, ':')))
		return 1;
	u++;
	e = strchr(u, ':');
	n = e ? (size_t)(e - u) : strlen(u);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i]) == n && !strncmp(u, units[i], n))
			return 1;
	return 0;
}

static int labels_utf8(const struct store_label *l, size_t n, struct err_msg *msg)
{
	for (size_t i = 0; i < n; i++) {
		if (!json_utf8_valid(l[i].name, strlen(l[i].name)))
			return err_set(msg, ERR_INVALID, "label %zu: its name is not UTF-8", i);
		if (!json_utf8_valid(l[i].value, strlen(l[i].value)))
			return err_set(msg, ERR_INVALID, "label '%.64s': its value is not UTF-8",
				       l[i].name);
	}
	return 0;
}

/*
 * What every format shares before the store sees a profile: labels and
 * profile types (series identity) must be UTF-8, and values of a type that
 * cannot be negative must not be.  Refused, never repaired: a repaired
 * label would merge series and a negative cpu sample has no meaning.
 */
static int check_clean(const struct ingest_pprof *p, struct err_msg *msg)
{
	int rc = labels_utf8(p->labels, p->n_labels, msg);

	for (size_t g = 0; g < p->n_groups && !rc; g++)
		rc = labels_utf8(p->groups[g].labels, p->groups[g].n_labels, msg);
	if (rc)
		return rc;
	for (size_t t = 0; t < p->n_types; t++) {
		if (!json_utf8_valid(p->profile_types[t], strlen(p->profile_types[t])))
			return err_set(msg, ERR_INVALID, "sample type %zu: not UTF-8", t);
		if (!unit_nonnegative(p->profile_types[t]))
			continue;
		for (size_t i = 0; i < p->n_samples; i++) {
			int64_t v = p->values[i * p->n_types + t];

			if (v < 0)
				return err_set(msg, ERR_INVALID,
					       "sample %zu: negative value %lld of %s, whose unit "
					       "cannot be negative",
					       i, (long long)v, p->profile_types[t]);
		}
	}
	return 0;
}

/* ---- what was stored without names (struct ingest_hooks) --------------- */

/* The first sample type counted in "count" or "samples" (the third field of
 * its id), or -1. */
static long count_type(const struct ingest_pprof *p)
{
	for (size_t t = 0; t < p->n_types; t++) {
		const char *u = strchr(p->profile_types[t], ':');
		size_t n;

		if (!u || !(u = strchr(u + 1, ':')))
			continue;
		u++;
		n = strcspn(u, ":");
		if ((n == 5 && !strncmp(u, "count", 5)) || (n == 7 && !strncmp(u, "samples", 7)))
			return (long)t;
	}
	return -1;
}

/* The hooks of `lim` when every one is set, else NULL. */
static const struct ingest_hooks *hooks_of(const struct ingest_limits *lim)
{
	const struct ingest_hooks *h = lim->hooks;

	return h && h->raw_class && h->raw_class_total && h->raw_binary ? h : NULL;
}

/* A binary of report_raw not classified yet. */
#define UNCLASSIFIED (-1000)

/* What report_raw gathers, per binary and per class, for the hooks. */
struct raw_tally {
	int *cls;           /* per binary: what raw_class said; UNCLASSIFIED */
	uint32_t *cbit;     /* per binary: the bit of its class, or 0 */
	size_t *last;       /* per binary: 1 + the last sample with its frames; 0 none */
	uint64_t *weight;   /* per binary */
	uint64_t class_w[INGEST_RAW_CLASSES];
	uint32_t hit;       /* classes met */
};

/* 1 when binary `m` counts (classifying it first), 0 when left out. */
static int tally_class(const struct ingest_hooks *h, const char *tenant,
		       const struct ingest_pprof *p, struct raw_tally *t, size_t m)
{
	if (t->cls[m] == UNCLASSIFIED) {
		t->cls[m] = h->raw_class(h->ctx, tenant, p->service, p->mappings[m].build_id,
					 p->mappings[m].filename);
		if (t->cls[m] >= INGEST_RAW_CLASSES)
			t->cls[m] = -1;
		t->cbit[m] = t->cls[m] >= 0 ? 1u << t->cls[m] : 0;
	}
	return t->cls[m] >= -1;
}

/* Sample `i` of weight `w` touched the classes `seen`. */
static void tally_classes(struct raw_tally *t, uint32_t seen, uint64_t w)
{
	t->hit |= seen;
	for (; seen; seen &= seen - 1)
		t->class_w[__builtin_ctz(seen)] += w;
}

/* The weight of sample `i`: its value of the count type `ct`, else 1. */
static uint64_t sample_weight(const struct ingest_pprof *p, long ct, size_t i)
{
	int64_t v = ct >= 0 ? p->values[i * p->n_types + (size_t)ct] : 1;

	return v > 0 ? (uint64_t)v : 0;
}

/* From the bit sets noted while writing (every binary below RAW_BITS). */
static void tally_bits(const struct ingest_hooks *h, const char *tenant,
		       const struct ingest_pprof *p, const uint64_t *bits, struct raw_tally *t)
{
	uint64_t all = 0, counted = 0;
	long ct = count_type(p);

	for (size_t i = 0; i < p->n_samples; i++)
		all |= bits[i];
	for (uint64_t b = all; b; b &= b - 1)
		if (tally_class(h, tenant, p, t, (size_t)__builtin_ctzll(b)))
			counted |= b & -b;
	for (size_t i = 0; i < p->n_samples; i++) {
		uint64_t w = sample_weight(p, ct, i);
		uint32_t seen = 0;

		for (uint64_t b = bits[i] & counted; b; b &= b - 1) {
			size_t m = (size_t)__builtin_ctzll(b);

			t->last[m] = i + 1;
			t->weight[m] += w;
			seen |= t->cbit[m];
		}
		tally_classes(t, seen, w);
	}
}

/* From the frames themselves: a pprof with binaries past RAW_BITS. */
static void tally_frames(const struct ingest_hooks *h, const char *tenant,
			 const struct ingest_pprof *p, struct raw_tally *t)
{
	long ct = count_type(p);

	for (size_t i = 0; i < p->n_samples; i++) {
		uint64_t w = sample_weight(p, ct, i);
		uint32_t seen = 0;

		for (size_t k = p->sample_off[i]; k < p->sample_off[i + 1]; k++) {
			const struct ingest_location *l = &p->locations[p->stack_locs[k]];
			size_t m = l->mapping - 1;

			if (l->n_lines || !l->mapping || !tally_class(h, tenant, p, t, m))
				continue;
			seen |= t->cbit[m];
			if (t->last[m] != i + 1) {
				t->last[m] = i + 1;
				t->weight[m] += w;
			}
		}
		tally_classes(t, seen, w);
	}
}

/*
 * Tells the hooks which binaries of written pprof `p` have frames without
 * names, and the weight of the samples that touch each binary and each
 * class (struct ingest_hooks), from what writing it noted.  A failed
 * allocation skips the report: it is advice, the profile is stored.
 */
static void report_raw(const struct ingest_hooks *h, const char *tenant,
		       const struct ingest_pprof *p, const struct raw_note *note)
{
	struct raw_tally t;

	if (!note->stored || !note->sample_bits)
		return;
	memset(&t, 0, sizeof(t));
	t.cls = malloc(p->n_mappings * sizeof(*t.cls));
	t.cbit = calloc(p->n_mappings, sizeof(*t.cbit));
	t.last = calloc(p->n_mappings, sizeof(*t.last));
	t.weight = calloc(p->n_mappings, sizeof(*t.weight));
	if (!t.cls || !t.cbit || !t.last || !t.weight)
		goto out;
	for (size_t m = 0; m < p->n_mappings; m++)
		t.cls[m] = UNCLASSIFIED;
	if (note->wide)
		tally_frames(h, tenant, p, &t);
	else
		tally_bits(h, tenant, p, note->sample_bits, &t);
	for (int c = 0; c < INGEST_RAW_CLASSES; c++)
		if (t.hit & (1u << c))
			h->raw_class_total(h->ctx, tenant, p->service, c, note->stored,
					   t.class_w[c]);
	for (size_t m = 0; m < p->n_mappings; m++)
		if (t.last[m])
			h->raw_binary(h->ctx, tenant, p->service, p->mappings[m].build_id,
				      p->mappings[m].filename, t.cls[m], note->stored, t.weight[m]);
out:
	free(t.cls);
	free(t.cbit);
	free(t.last);
	free(t.weight);
}

/* ---- requests ----------------------------------------------------------- */

/* Copies a per-profile message into `msg` with a "profile N: " prefix. */
static int prefixed(struct err_msg *msg, size_t i, int rc, const struct err_msg *inner)
{
	if (inner->text[0])
		return err_set(msg, rc, "profile %zu: %s", i, inner->text);
	return err_set(msg, rc, "profile %zu: %s", i, err_str(rc));
}

/*
 * The id of every profile stored from pprof p (docs/ingest.md, "Profile
 * ids"): its push ID when that is a UUID, else a new random one, as
 * Pyroscope gives each ingested profile.
 */
static int profile_id(const struct ingest_pprof *p, uint8_t id[UUID_BYTES])
{
	if (p->push_id && !uuid_parse(p->push_id, strlen(p->push_id), id) && !uuid_is_nil(id))
		return 0;
	return uuid_new_v4(id);
}

int ingest__write(struct store *st, const struct ingest_limits *lim, const char *tenant,
		  const struct ingest_pprof *pp, size_t n, struct ingest_stats *out,
		  struct err_msg *msg)
{
	struct ingest_stats stats = { 0, 0, 0, 0 };
	const struct ingest_hooks *hooks = hooks_of(lim);
	struct raw_note *notes = NULL; /* per pprof, for the hooks */
	struct store_txn *tx = NULL;
	struct err_msg inner;
	uint8_t id[UUID_BYTES];
	int rc = 0;

	if (n == 0)
		goto done;
	if (hooks && !(notes = calloc(n, sizeof(*notes))))
		hooks = NULL; /* the report is advice: store without it */
	for (size_t i = 0; i < n; i++) {
		err_clear(&inner);
		rc = check_clean(&pp[i], &inner);
		if (rc) {
			rc = prefixed(msg, i, rc, &inner);
			goto out;
		}
	}
	rc = store_txn_begin(st, tenant, &tx, msg);
	if (rc)
		goto out;
	store_txn_set_max_series(tx, lim->max_series);
	store_txn_set_max_labels(tx, lim->max_label_names, lim->max_label_values);
	for (size_t i = 0; i < n; i++) {
		if (pp[i].push_id && pp[i].push_id[0]) {
			int seen = 0;
			rc = store_txn_claim_id(tx, pp[i].push_id, strlen(pp[i].push_id), &seen);
			if (rc) {
				rc = err_set(msg, rc, "profile %zu: push ID: %s", i, err_str(rc));
				goto out;
			}
			if (seen) { /* a retry of a push stored already */
				stats.duplicates++;
				continue;
			}
		}
		rc = profile_id(&pp[i], id);
		if (rc) {
			rc = err_set(msg, rc, "profile %zu: no randomness for its profile id", i);
			goto out;
		}
		err_clear(&inner);
		rc = write_pprof(tx, lim, &pp[i], id, &stats, notes ? &notes[i] : NULL, &inner);
		if (rc) {
			rc = prefixed(msg, i, rc, &inner);
			goto out;
		}
	}
	rc = store_txn_commit(tx, msg);
	tx = NULL;
	if (rc)
		goto out;
	for (size_t i = 0; hooks && i < n; i++)
		report_raw(hooks, tenant, &pp[i], &notes[i]);
done:
	if (out)
		*out = stats;
out:
	for (size_t i = 0; notes && i < n; i++)
		free(notes[i].sample_bits);
	free(notes);
	store_txn_abort(tx);
	return rc;
}

static int run(struct store *st, const struct ingest_limits *lim, const char *tenant,
	       const struct ingest_series *in, size_t n, const struct ingest_defaults *def,
	       struct ingest_stats *out, struct err_msg *msg);

int ingest__run(struct store *st, const struct ingest_limits *lim, const char *tenant,
		const struct ingest_series *in, size_t n, int64_t time_ns, int64_t duration_ns,
		struct ingest_stats *out, struct err_msg *msg)
{
	struct ingest_defaults def = { time_ns, duration_ns, NULL };

	return run(st, lim, tenant, in, n, &def, out, msg);
}

static int run(struct store *st, const struct ingest_limits *lim, const char *tenant,
	       const struct ingest_series *in, size_t n, const struct ingest_defaults *def,
	       struct ingest_stats *out, struct err_msg *msg)
{
	struct ingest_pprof *pp = NULL;
	struct ingest_defaults d = *def;
	struct err_msg inner;
	struct arena a;
	size_t i, left = lim->max_request_decoded_bytes;
	int rc = 0;

	/* Each pprof inflates to at most max_decompressed_bytes, and all of
	 * them together to max_request_decoded_bytes: a push of a thousand
	 * small gzip bombs stops there, not after inflating each. */
	d.decoded_left = &left;
	if (n > lim->max_profiles)
		return err_set(msg, ERR_TOO_LARGE, "%zu profiles in one request, more than the limit of %zu",
			       n, lim->max_profiles);
	ingest__arena_init(&a, request_arena_cap(lim), lim);
	pp = arena_calloc(&a, n ? n : 1, sizeof(*pp));
	if (!pp) {
		rc = err_set(msg, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		err_clear(&inner);
		rc = ingest__convert(&a, lim, &in[i], &d, &pp[i], &inner);
		if (!rc)
			pp[i].push_id = in[i].id;
		if (rc) {
			if (rc == ERR_TOO_LARGE && !inner.text[0])
				err_set(&inner, rc, "the request's profiles need more than %zu bytes of memory",
					a.cap);
			rc = prefixed(msg, i, rc, &inner);
			goto out;
		}
	}
	rc = ingest__write(st, lim, tenant, pp, n, out, msg);
out:
	arena_release(&a);
	return rc;
}

int ingest_profiles(struct store *st, const struct ingest_limits *lim, const char *tenant,
		    const struct ingest_series *in, size_t n, int64_t default_time_ns,
		    struct ingest_stats *out, struct err_msg *msg)
{
	struct ingest_defaults def = { default_time_ns, 0, NULL };

	return run(st, lim, tenant, in, n, &def, out, msg);
}

int ingest_legacy(struct store *st, const struct ingest_limits *lim, const char *tenant,
		  const char *name, int64_t from_ns, int64_t until_ns, const void *pprof,
		  size_t len, struct ingest_stats *out, struct err_msg *msg)
{
	struct ingest_request req;

	memset(&req, 0, sizeof(req));
	req.name = name;
	req.format = INGEST_FORMAT_PPROF;
	req.sample_rate = 100;
	req.from_ns = from_ns;
	req.until_ns = until_ns;
	req.data = pprof;
	req.len = len;
	return ingest_pyroscope(st, lim, tenant, &req, out, msg);
}

int ingest_push(struct store *st, const struct ingest_limits *lim, const char *tenant,
		const void *body, size_t len, int json, struct ingest_stats *out,
		struct err_msg *msg)
{
	struct ingest_defaults def;
	struct ingest_series *series = NULL;
	struct arena a;
	size_t n = 0, cap;
	int rc;

	if (len > lim->max_request_bytes)
		return err_set(msg, ERR_TOO_LARGE, "request of %zu bytes exceeds the limit of %zu",
			       len, lim->max_request_bytes);
	/* Decoded push bodies are at most a few times their size (JSON trees,
	 * base64 output, protobuf-c structs). */
	cap = len > (SIZE_MAX >> 6) ? SIZE_MAX : 32 * len + ((size_t)1 << 20);
	ingest__arena_init(&a, cap, lim);
	rc = ingest__decode_push(&a, lim, body, len, json, &series, &n, msg);
	if (!rc) {
		/* Push carries no request time: a pprof without time_nanos is "now". */
		def.time_ns = clock_wall_ns();
		def.duration_ns = 0;
		def.decoded_left = NULL;
		rc = run(st, lim, tenant, series, n, &def, out, msg);
	}
	arena_release(&a);
	return rc;
}
