/* blockgen.h - for the block tests: a deterministic writer of realistic
 * profiles (mappings with and without build IDs, functions, inline lines,
 * raw addresses, stacks of depth 1..12) and a canonical dump of everything a
 * reader returns, independent of ids and partitions, so that the same
 * profiles in the head, in blocks or in compacted blocks compare equal. */
#ifndef UNHEX_TESTS_STORAGE_BLOCKGEN_H
#define UNHEX_TESTS_STORAGE_BLOCKGEN_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "helpers.h"
#include "objstore/objstore.h"
#include "storage/storage.h"

#define GEN_SEC 1000000000LL

/* The timeline of the block tests: one-minute head windows, ten-minute
 * blocks, from T0, a multiple of 24 h, so of every compaction level's range. */
#define SEC GEN_SEC
#define WINDOW (60 * SEC)
#define RANGE (600 * SEC)
#define T0 (1700006400LL * SEC)

/*
 * Options of a block-test store in `dir` (borrowed): that timeline, blocks
 * sealed a minute after their end, the clock reading *now (borrowed), and
 * what maintenance replaced freed at the end of its pass.
 */
static inline struct store_options gen_options(const char *dir, int64_t *now)
{
	struct store_options o;

	memset(&o, 0, sizeof(o));
	o.dir = dir;
	o.window_ns = WINDOW;
	o.block_range_ns = RANGE;
	o.seal_delay_ns = 60 * SEC;
	o.clock_ns = clock_at;
	o.clock_ctx = now;
	o.reader_grace_ns = 1;
	return o;
}

static inline uint64_t gen_rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * One txn: one profile of service `svc`, pod `pod` at time t; the symbols
 * depend on `release` (two releases share some functions), the samples on
 * `seed`.  Returns the commit's result.
 */
static inline int gen_profile(struct store *st, const char *tenant, const char *svc,
			      const char *pod, int64_t t, int release, uint64_t seed)
{
	struct err_msg msg = { { 0 } };
	struct store_txn *tx = NULL;
	char bid[64], fname[64];
	uint32_t part, maps[2], fns[24], locs[40], stacks[16], path[12];
	int64_t vals[16];
	uint64_t series;
	int rc;

	rc = store_txn_begin(st, tenant, &tx, &msg);
	if (rc)
		return rc;
	{
		struct store_label l[3] = {
			{ "__profile_type__", "process_cpu:cpu:nanoseconds:cpu:nanoseconds" },
			{ "service_name", svc },
			{ "pod", pod },
		};
		rc = store_txn_series(tx, l, 3, &series, &msg);
	}
	if (!rc)
		rc = store_txn_partition(tx, svc, &part);
	snprintf(bid, sizeof(bid), "%08x%s", 0xab00 + release, svc);
	{
		struct store_mapping m0 = { 0x400000 + (uint64_t)release * 0x1000, 0x500000, 0x1000,
					    "/usr/bin/app", bid, 0 };
		struct store_mapping m1 = { 0x7f0000000000, 0x7f0000100000, 0, "/lib/libc.so.6", "",
					    STORE_MAP_HAS_FUNCTIONS };
		if (!rc)
			rc = store_txn_mapping(tx, part, &m0, &maps[0]);
		if (!rc)
			rc = store_txn_mapping(tx, part, &m1, &maps[1]);
	}
	for (int i = 0; i < 24 && !rc; i++) {
		struct store_function f = { NULL, "", "src/app.cc", i };
		snprintf(fname, sizeof(fname), "ns::fn_%d_r%d", i, i < 16 ? 0 : release);
		f.name = fname;
		f.system_name = i & 1 ? "" : "_ZN2ns2fnE";
		rc = store_txn_function(tx, part, &f, &fns[i]);
	}
	for (int i = 0; i < 40 && !rc; i++) {
		struct store_line ln[2] = { { fns[i % 24], 10 + i, i & 3 }, { fns[(i + 5) % 24], 99, 0 } };
		struct store_location l = { maps[i & 1], 0x1000 + (uint64_t)i * 24 + (uint64_t)release,
					    i % 3 ? ln : NULL, (size_t)(i % 3) };
		rc = store_txn_location(tx, part, &l, &locs[i]);
	}
	for (int i = 0; i < 16 && !rc; i++) {
		uint64_t s = seed * 131 + (uint64_t)i;
		size_t d = 1 + (size_t)(gen_rnd(&s) % 12);
		for (size_t j = 0; j < d; j++)
			path[j] = locs[gen_rnd(&s) % 40];
		rc = store_txn_stack(tx, part, path, d, &stacks[i]);
		vals[i] = (int64_t)(gen_rnd(&s) % 1000) - 100; /* negatives and zeros too */
	}
	if (!rc) {
		struct store_profile_meta m = { t, 10 * GEN_SEC, 10000000, { 0 } };
		rc = store_txn_profile(tx, series, part, &m, stacks, vals, 16);
	}
	if (rc) {
		store_txn_abort(tx);
		return rc;
	}
	return store_txn_commit(tx, &msg);
}

/*
 * One profile of tenant `tenant`, service "app", at time t, whose one frame
 * is in a mapping of build ID `build_id` (borrowed): a block holding it
 * lists that build ID in its footer.  Returns the commit's result.
 */
static inline int gen_ref_profile(struct store *st, const char *tenant, const char *build_id,
				  int64_t t)
{
	struct err_msg msg = { { 0 } };
	struct store_txn *tx = NULL;
	struct store_label l[2] = {
		{ "__profile_type__", "process_cpu:cpu:nanoseconds:cpu:nanoseconds" },
		{ "service_name", "app" },
	};
	struct store_mapping m = { 0x400000, 0x500000, 0, "/usr/bin/app", build_id, 0 };
	struct store_location loc = { 0, 0x1234, NULL, 0 };
	struct store_profile_meta meta = { t, 10 * GEN_SEC, 10000000, { 0 } };
	uint64_t series;
	uint32_t part, lid, stack;
	int64_t v = 7;
	int rc = store_txn_begin(st, tenant, &tx, &msg);

	if (rc)
		return rc;
	rc = store_txn_series(tx, l, 2, &series, &msg);
	if (!rc)
		rc = store_txn_partition(tx, "app", &part);
	if (!rc)
		rc = store_txn_mapping(tx, part, &m, &loc.mapping_id);
	if (!rc)
		rc = store_txn_location(tx, part, &loc, &lid);
	if (!rc)
		rc = store_txn_stack(tx, part, &lid, 1, &stack);
	if (!rc)
		rc = store_txn_profile(tx, series, part, &meta, &stack, &v, 1);
	if (rc) {
		store_txn_abort(tx);
		return rc;
	}
	return store_txn_commit(tx, &msg);
}

/* ---- a scale-out deployment over a directory bucket ------------------------------- */

#define GEN_MAX_STORES 8

/*
 * A bucket in a fresh directory and the stores of gen_options around it,
 * each in a fresh directory of its own: stores in a role of a scale-out
 * deployment (a bucket_mode; marked blocks deleted 30 s after their mark),
 * and reference stores outside the bucket.  Every store reads the clock
 * *now and gets the retention overrides set before it opens.
 * gen_deploy_close() closes every store still open, then the bucket, and
 * removes every directory.
 */
struct gen_deploy {
	char *root;          /* the bucket's directory */
	struct objstore *os; /* the bucket */
	int64_t *now;        /* borrowed */
	const struct store_retention *retention; /* borrowed; NULL: none */
	size_t n_retention;
	size_t n;
	struct {
		char *dir;
		struct store *st; /* NULL once dropped */
		unsigned mode;
		int outside; /* a reference store, without the bucket */
	} s[GEN_MAX_STORES];
};

/* 0, or why the bucket did not open (then nothing is left to close). */
static inline int gen_deploy_open(struct gen_deploy *d, int64_t *now)
{
	struct err_msg msg = { { 0 } };
	int rc;

	memset(d, 0, sizeof(*d));
	d->now = now;
	d->root = tmpdir_new();
	rc = objstore_open_dir(d->root, &d->os, &msg);
	if (rc) {
		fprintf(stderr, "bucket: %s\n", msg.text);
		tmpdir_free(d->root);
	}
	return rc;
}

static inline struct store *gen_deploy_start(struct gen_deploy *d, size_t i)
{
	struct store_options o = gen_options(d->s[i].dir, d->now);

	if (!d->s[i].outside) {
		o.objstore = d->os;
		o.bucket_mode = d->s[i].mode;
		o.bucket_delete_delay_ns = 30 * SEC;
	}
	o.retention_overrides = d->retention;
	o.n_retention_overrides = d->n_retention;
	d->s[i].st = open_options(&o);
	return d->s[i].st;
}

static inline struct store *gen_deploy_add(struct gen_deploy *d, unsigned mode, int outside)
{
	if (d->n == GEN_MAX_STORES)
		return NULL;
	d->s[d->n].dir = tmpdir_new();
	d->s[d->n].mode = mode;
	d->s[d->n].outside = outside;
	return gen_deploy_start(d, d->n++);
}

/* A new store in role `mode` (borrowed; NULL when it does not open). */
static inline struct store *gen_deploy_role(struct gen_deploy *d, unsigned mode)
{
	return gen_deploy_add(d, mode, 0);
}

/* A new store outside the bucket, to compare with (borrowed). */
static inline struct store *gen_deploy_ref(struct gen_deploy *d)
{
	return gen_deploy_add(d, 0, 1);
}

static inline size_t gen_deploy_find(const struct gen_deploy *d, const struct store *st)
{
	size_t i = 0;

	while (i < d->n && d->s[i].st != st)
		i++;
	return i;
}

/* The directory of store st (borrowed). */
static inline const char *gen_deploy_dir(const struct gen_deploy *d, const struct store *st)
{
	size_t i = gen_deploy_find(d, st);

	return i < d->n ? d->s[i].dir : NULL;
}

/* Closes st and opens it again on its directory (a restart); NULL when it does not open. */
static inline struct store *gen_deploy_restart(struct gen_deploy *d, struct store *st)
{
	size_t i = gen_deploy_find(d, st);

	if (i == d->n)
		return NULL;
	store_close(st);
	return gen_deploy_start(d, i);
}

/* Closes st and removes its directory. */
static inline void gen_deploy_drop(struct gen_deploy *d, struct store *st)
{
	size_t i = gen_deploy_find(d, st);

	if (i == d->n)
		return;
	store_close(st);
	d->s[i].st = NULL;
	tmpdir_free(d->s[i].dir);
	d->s[i].dir = NULL;
}

static inline void gen_deploy_close(struct gen_deploy *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->s[i].st)
			store_close(d->s[i].st);
	objstore_close(d->os);
	for (size_t i = 0; i < d->n; i++)
		if (d->s[i].dir)
			tmpdir_free(d->s[i].dir);
	tmpdir_free(d->root);
	memset(d, 0, sizeof(*d));
}

/* ---- canonical dump ---------------------------------------------------------------- */

/*
 * Profiles of tenant "t", service `svc`, two pods, every 30 s over [t0,
 * t0 + span), each written into every store of sts[0..n_sts) (the same
 * profile in each); *n gets how many.  0, or the first failure.
 */
static inline int gen_fill(struct store **sts, size_t n_sts, const char *svc, int64_t t0,
			   int64_t span, size_t *n)
{
	static const char *pods[2] = { "p0", "p1" };
	int rc = 0;

	*n = 0;
	for (int64_t t = t0; t < t0 + span && !rc; t += 30 * SEC)
		for (int p = 0; p < 2 && !rc; p++) {
			for (size_t i = 0; i < n_sts && !rc; i++)
				rc = gen_profile(sts[i], "t", svc, pods[p], t + p * SEC, 1,
						 (uint64_t)(t / SEC) + (uint64_t)p);
			++*n;
		}
	return rc;
}

struct gen_views {
	uint32_t part[4096];
	struct store_symbols *v[4096];
	size_t n;
};

static inline struct store_symbols *gen_view(struct store *st, const char *tenant,
					     struct gen_views *gv, uint32_t part)
{
	struct store_symbols *v = NULL;

	for (size_t i = 0; i < gv->n; i++)
		if (gv->part[i] == part)
			return gv->v[i];
	if (store_symbols_get(st, tenant, part, &v, NULL) || gv->n >= 4096)
		return NULL;
	gv->part[gv->n] = part;
	gv->v[gv->n++] = v;
	return v;
}

static inline void gen_views_release(struct gen_views *gv)
{
	for (size_t i = 0; i < gv->n; i++)
		store_symbols_put(gv->v[i]);
	gv->n = 0;
}

/* Appends the content of stack `s` of view v, leaf first. */
static inline int gen_stack_text(const struct store_symbols *v, uint32_t s, struct buf *out)
{
	while (s) {
		uint32_t parent, loc;
		struct store_location_view lv;
		struct store_mapping mp;

		if (store_symbols_stack_node(v, s, &parent, &loc) || store_symbols_location(v, loc, &lv))
			return ERR_CORRUPT;
		buf_printf(out, "[%" PRIx64, lv.address);
		if (lv.mapping_id) {
			if (store_symbols_mapping(v, lv.mapping_id, &mp))
				return ERR_CORRUPT;
			buf_printf(out, " %s %s %x", mp.filename, mp.build_id, mp.flags);
		}
		for (size_t i = 0; i < lv.n_lines; i++) {
			struct store_function f = { "", "", "", 0 };
			if (lv.lines[i].function_id && store_symbols_function(v, lv.lines[i].function_id, &f))
				return ERR_CORRUPT;
			buf_printf(out, " (%s|%s|%s|%lld:%lld:%lld)", f.name, f.system_name, f.filename,
				   (long long)f.start_line, (long long)lv.lines[i].line,
				   (long long)lv.lines[i].column);
		}
		buf_puts(out, "]");
		s = parent;
	}
	return 0;
}

struct gen_dump {
	struct store *st;
	const char *tenant;
	struct gen_views gv;
	char **lines;
	size_t n, cap;
	const char *labels;
	int rc;
};

static inline int gen_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline int gen_profile_cb(void *ctx, const struct store_profile_view *p)
{
	struct gen_dump *d = ctx;
	struct store_symbols *v = gen_view(d->st, d->tenant, &d->gv, p->part);
	char **pairs = calloc(p->n + 1, sizeof(*pairs));
	struct buf line;

	if (!v || !pairs) {
		free(pairs);
		d->rc = ERR_CORRUPT;
		return 1;
	}
	for (size_t i = 0; i < p->n; i++) {
		struct buf b;
		buf_init(&b, 1 << 20);
		buf_printf(&b, "%lld=", (long long)p->values[i]);
		if (gen_stack_text(v, p->stack_ids[i], &b))
			d->rc = ERR_CORRUPT;
		pairs[i] = b.data ? b.data : strdup("");
	}
	qsort(pairs, p->n, sizeof(*pairs), gen_cmp_str);
	buf_init(&line, 1 << 24);
	buf_printf(&line, "%s @%lld d%lld p%lld:", d->labels, (long long)p->meta.time_ns,
		   (long long)p->meta.duration_ns, (long long)p->meta.period);
	for (size_t i = 0; i < p->n; i++) {
		buf_puts(&line, " ");
		buf_puts(&line, pairs[i]);
		free(pairs[i]);
	}
	free(pairs);
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 256;
		d->lines = realloc(d->lines, d->cap * sizeof(*d->lines));
	}
	d->lines[d->n++] = line.data ? line.data : strdup("");
	return 0;
}

struct gen_series {
	uint64_t id[4096];
	char *labels[4096];
	size_t n;
};

static inline int gen_series_cb(void *ctx, uint64_t id, uint32_t part,
				const struct store_label *l, size_t n)
{
	struct gen_series *s = ctx;
	struct buf b;

	(void)part;
	if (s->n >= 4096)
		return 1;
	buf_init(&b, 1 << 16);
	buf_puts(&b, "{");
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "%s=%s,", l[i].name, l[i].value);
	buf_puts(&b, "}");
	s->id[s->n] = id;
	s->labels[s->n++] = b.data;
	return 0;
}

/*
 * The lines d gathered, sorted and joined one per line; frees them.
 * Returns an owned string ("" for none).
 */
static inline char *gen_dump_join(struct gen_dump *d)
{
	struct buf all;

	if (d->n)
		qsort(d->lines, d->n, sizeof(*d->lines), gen_cmp_str);
	buf_init(&all, (size_t)1 << 30);
	for (size_t i = 0; i < d->n; i++) {
		buf_puts(&all, d->lines[i]);
		buf_puts(&all, "\n");
		free(d->lines[i]);
	}
	free(d->lines);
	d->lines = NULL;
	d->n = d->cap = 0;
	return all.data ? all.data : strdup("");
}

/*
 * Every profile of `tenant` in [from, until) through a reader, one line
 * each, sorted; *warnings gets the reader's warning count.  Returns an
 * owned string, NULL on failure.
 */
static inline char *gen_dump_reader(struct store *st, const char *tenant, struct store_reader *r,
				    int64_t from, int64_t until, size_t *series, size_t *warnings);

static inline char *gen_dump(struct store *st, const char *tenant, int64_t from, int64_t until,
			     size_t *series, size_t *warnings)
{
	struct store_reader *r = NULL;
	struct err_msg msg = { { 0 } };

	if (store_reader_open(st, tenant, from, until, &r, &msg))
		return NULL;
	return gen_dump_reader(st, tenant, r, from, until, series, warnings);
}

/* The same through reader r, which it closes. */
static inline char *gen_dump_reader(struct store *st, const char *tenant, struct store_reader *r,
				    int64_t from, int64_t until, size_t *series, size_t *warnings)
{
	struct gen_dump d;
	struct gen_series s;
	char *all;
	struct err_msg msg = { { 0 } };

	memset(&d, 0, sizeof(d));
	memset(&s, 0, sizeof(s));
	d.st = st;
	d.tenant = tenant;
	if (store_reader_series_each(r, gen_series_cb, &s)) {
		store_reader_close(r);
		return NULL;
	}
	for (size_t i = 0; i < s.n && !d.rc; i++) {
		d.labels = s.labels[i];
		if (store_reader_profiles_each(r, s.id[i], from, until, gen_profile_cb, &d, &msg))
			d.rc = ERR_CORRUPT;
	}
	if (warnings)
		*warnings = store_reader_warning_count(r);
	if (series)
		*series = s.n;
	gen_views_release(&d.gv);
	store_reader_close(r);
	for (size_t i = 0; i < s.n; i++)
		free(s.labels[i]);
	all = gen_dump_join(&d);
	if (d.rc) {
		free(all);
		return NULL;
	}
	return all;
}

#endif
