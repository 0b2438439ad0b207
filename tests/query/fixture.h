/*
 * fixture.h - a real store in a temp dir for the query tests, filled through
 * store_txn_*, and a reference merge of folded stacks to compare against.
 */
#ifndef UNHEX_TESTS_QUERY_FIXTURE_H
#define UNHEX_TESTS_QUERY_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "storage/storage.h"

#define FX_CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
#define FX_SEC 1000000000LL
#define FX_T0 (1700000000LL * FX_SEC)

struct fx {
	char dir[64];
	struct store *st;
};

static inline int fx_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void fx_open(struct fx *f)
{
	struct store_options o = { 0 };
	struct err_msg msg = { { 0 } };

	strcpy(f->dir, "/tmp/unhex-query-XXXXXX");
	if (!mkdtemp(f->dir))
		abort();
	o.dir = f->dir;
	if (store_open(&o, &f->st, &msg)) {
		fprintf(stderr, "store_open: %s\n", msg.text);
		abort();
	}
}

static inline void fx_close(struct fx *f)
{
	store_close(f->st);
	nftw(f->dir, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Adds one profile of `service` (plus label pairs `kv`, NULL-terminated) at
 * time t: stacks are "root;child;leaf" strings.  Named frames get one
 * function each in mapping `binary` with `build_id`, at an address that
 * depends on the build (addr_base + a per-name offset); with raw != 0 the
 * locations have no lines, so the engine must name them binary+0xaddr.
 */
static inline void fx_add_id(struct fx *f, const char *tenant, const char *service,
			     const char *ptype, const char *const *kv, int64_t t,
			     const char *const *stacks, const int64_t *values, size_t n,
			     const char *binary, const char *build_id, uint64_t addr_base, int raw,
			     const uint8_t *id)
{
	struct store_txn *tx;
	struct err_msg msg = { { 0 } };
	struct store_label labels[16];
	size_t nl = 0;
	uint32_t part, map, *stack_ids = calloc(n, sizeof(uint32_t));
	uint64_t series;
	struct store_mapping m = { 0x400000, 0x800000, 0, binary, build_id,
				   raw ? 0 : STORE_MAP_HAS_FUNCTIONS };
	struct store_profile_meta meta = { t, 10 * FX_SEC, 10000000, { 0 } };

	if (id)
		memcpy(meta.id, id, sizeof(meta.id));
	if (store_txn_begin(f->st, tenant, &tx, &msg) || store_txn_partition(tx, service, &part) ||
	    store_txn_mapping(tx, part, &m, &map))
		abort();
	labels[nl++] = (struct store_label){ STORE_LABEL_SERVICE, service };
	labels[nl++] = (struct store_label){ STORE_LABEL_PROFILE_TYPE, ptype };
	for (size_t i = 0; kv && kv[i]; i += 2)
		labels[nl++] = (struct store_label){ kv[i], kv[i + 1] };
	if (store_txn_series(tx, labels, nl, &series, &msg))
		abort();
	for (size_t i = 0; i < n; i++) {
		char buf[4096], *save = NULL, *tok;
		uint32_t locs[256];
		size_t nlocs = 0;

		snprintf(buf, sizeof(buf), "%s", stacks[i]);
		for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			struct store_function fn = { tok, "", "src.c", 1 };
			struct store_line ln = { 0, 10, 0 };
			struct store_location loc = { map, 0, &ln, 1 };
			uint64_t h = 0;

			for (const char *c = tok; *c; c++)
				h = h * 31 + (unsigned char)*c;
			loc.address = addr_base + (h % 65536) * 16;
			if (raw)
				loc.n_lines = 0;
			else if (store_txn_function(tx, part, &fn, &ln.function_id))
				abort();
			if (store_txn_location(tx, part, &loc, &locs[nlocs++]))
				abort();
		}
		/* leaf first */
		for (size_t a = 0, b = nlocs ? nlocs - 1 : 0; a < b; a++, b--) {
			uint32_t x = locs[a];
			locs[a] = locs[b];
			locs[b] = x;
		}
		if (store_txn_stack(tx, part, locs, nlocs, &stack_ids[i]))
			abort();
	}
	if (store_txn_profile(tx, series, part, &meta, stack_ids, values, n) ||
	    store_txn_commit(tx, &msg)) {
		fprintf(stderr, "commit: %s\n", msg.text);
		abort();
	}
	free(stack_ids);
}

/* fx_add_id of a profile without an id (as stored before ids were kept). */
static inline void fx_add(struct fx *f, const char *tenant, const char *service, const char *ptype,
			  const char *const *kv, int64_t t, const char *const *stacks,
			  const int64_t *values, size_t n, const char *binary,
			  const char *build_id, uint64_t addr_base, int raw)
{
	fx_add_id(f, tenant, service, ptype, kv, t, stacks, values, n, binary, build_id,
		  addr_base, raw, NULL);
}

/*
 * The small store of the export and Connect tests: service api of tenant
 * t1 (two named builds, pods p1 and p2, and a raw libc), and service db
 * with a memory profile.  Returns the api CPU total.
 */
static const char *const fx_small_stacks[] = { "main;serve;handle", "main;serve;parse", "main;gc",
					       "main" };
static const int64_t fx_small_values[] = { 100, 50, 25, 5 };

static inline long long fx_fill_small(struct fx *f, int with_db)
{
	const char *kv[] = { "pod", "p1", NULL }, *kv2[] = { "pod", "p2", NULL };
	const char *const *st = fx_small_stacks;
	const int64_t *v = fx_small_values;

	fx_add(f, "t1", "api", FX_CPU, kv, FX_T0, st, v, 4, "/bin/api", "abcd01", 0x1000, 0);
	fx_add(f, "t1", "api", FX_CPU, kv2, FX_T0 + 20 * FX_SEC, st, v, 4, "/bin/api2", "abcd02",
	       0x8000, 0);
	fx_add(f, "t1", "api", FX_CPU, kv2, FX_T0 + 30 * FX_SEC, st, v, 2, "/lib/libc.so.6", "ffee",
	       0x2000, 1);
	if (with_db)
		fx_add(f, "t1", "db", "memory:alloc_space:bytes:space:bytes", NULL, FX_T0 + 5 * FX_SEC,
		       st, v, 3, "/bin/db", "dd01", 0x1000, 0);
	return 2 * (100 + 50 + 25 + 5) + 150;
}

/* ---- reference merge: folded stack -> value, a plain sorted list ---------- */

struct ref {
	char **k;
	long long *v;
	size_t n;
};

static inline void ref_add(struct ref *r, const char *k, long long v)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->k[i], k)) {
			r->v[i] += v;
			return;
		}
	r->k = realloc(r->k, (r->n + 1) * sizeof(*r->k));
	r->v = realloc(r->v, (r->n + 1) * sizeof(*r->v));
	r->k[r->n] = strdup(k);
	r->v[r->n++] = v;
}

static inline void ref_free(struct ref *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->k[i]);
	free(r->k);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

/* Parses "a;b;c 123\n" lines into a ref. */
static inline void ref_parse_folded(struct ref *r, const char *s)
{
	while (*s) {
		const char *nl = strchr(s, '\n'), *sp;
		char key[4096];

		if (!nl)
			nl = s + strlen(s);
		sp = nl;
		while (sp > s && sp[-1] != ' ')
			sp--;
		snprintf(key, sizeof(key), "%.*s", (int)(sp - s - 1), s);
		ref_add(r, key, atoll(sp));
		s = *nl ? nl + 1 : nl;
	}
}

/* Equal as multisets (values of 0 ignored). */
static inline int ref_equal(const struct ref *a, const struct ref *b)
{
	size_t na = 0, nb = 0;

	for (size_t i = 0; i < a->n; i++) {
		int found = 0;

		if (!a->v[i])
			continue;
		na++;
		for (size_t j = 0; j < b->n; j++)
			if (!strcmp(a->k[i], b->k[j])) {
				if (a->v[i] != b->v[j]) {
					fprintf(stderr, "ref: %s: %lld != %lld\n", a->k[i], a->v[i], b->v[j]);
					return 0;
				}
				found = 1;
			}
		if (!found) {
			fprintf(stderr, "ref: %s missing\n", a->k[i]);
			return 0;
		}
	}
	for (size_t j = 0; j < b->n; j++)
		nb += b->v[j] != 0;
	return na == nb;
}

#endif
