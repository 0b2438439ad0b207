/*
 * workload.c - unhex-workload: a deterministic generator of realistic
 * raw-address CPU profiles, as a fleet of Go-like agents would push them.
 *
 *   unhex-workload --out DIR --services N --instances M --minutes T
 *                  [--interval 10] [--end now|UNIX] [--seed S]
 *                  [--functions F] [--hz 100] [--debug-dir DIR] [--quiet]
 *                  [--shape diverse|month] [--days D] [--cadence S]
 *                  [--releases R] [--stacks P] [--zipf Z] [--branch B]
 *                  [--churn C] [--spans N]
 *
 * Model, per service:
 *   - a main binary and four shared libraries (libc, libssl, libstdc++ and a
 *     service library), each with a stable build ID (hex of a hash of
 *     name + version) and its executable segment at a fixed file offset;
 *   - F functions laid out in those text segments, arranged in levels so
 *     that every call goes one to three levels down; a call path is a walk
 *     from `main` of depth 10..60;
 *   - a pool of P call paths ranked by a Zipf law of exponent Z: a few hot
 *     stacks dominate, then a long tail.  The leaf PC moves among a few
 *     instructions.  With --branch B every path after the first forks from
 *     an earlier one instead: it keeps that path's frames but its last 1..2B
 *     and adds 1..2B of its own, as the callees of a big service's dispatch
 *     code share their callers (deep stacks with long common prefixes).
 * Every instance is a process with its own load addresses (ASLR).  The time
 * range is cut into R releases (default 2: 1.4, then 1.5 from the middle;
 * release r is version 1.<4 + r>); instances roll to the next release one
 * after another, 20 s apart, restarting with new load addresses.  A release
 * gives the main binary and the service library new build IDs, grows or
 * shrinks about one function in eight of their code (addresses shift) and
 * lets a few hot paths trade places with warm ones.  With --churn C it also
 * drops C % of the call paths and draws as many new ones, moves C/2 % of the
 * service's own functions elsewhere in its text and renames C/4 % of them.
 *
 * Each profile covers `interval` seconds at `hz` samples per second
 * (period 10 ms at 100 Hz), sample types samples/count and cpu/nanoseconds,
 * no function names (the stripped-production case), gzipped like Go's
 * Profile.Write.  An instance sends one every `cadence` seconds (default:
 * the interval; a coarser cadence scales a long range down by cadence /
 * interval).  Files: DIR/<service>/<instance>/<unix>.pb.gz, listed in
 * DIR/manifest.tsv as `<relative path>\t<pyroscope name>\t<unix seconds>`.
 *
 * With --debug-dir, every build ID also gets a symbol file
 * DIR/<build-id>.debug (tools/elfsym.h): a real ELF whose PT_LOAD maps the
 * profiles' file offsets to FUNC symbols with realistic names (C++ for the
 * service's code and libstdc++, C for libc and libssl).  A function keeps
 * its name from release to release unless --churn renames it, so a diff
 * between releases lines up by name.  The shared libraries have one build ID
 * for every service and release, hence one file, laid out as in the first
 * service (other services' code in them falls under those names) and
 * extended with more functions up to the largest text segment.
 * DIR/manifest.tsv lists `<file>\t<build-id>\t<binary path>\t<release>`
 * (every release, comma-separated, for the shared libraries).  Profiles are
 * the same bytes with or without the flag.
 *
 * Compatibility: with the defaults of the new options (one profile per
 * interval, 2 releases, 2,500 paths, Z = 1.75, no branching, no churn) the
 * files are byte for byte those of the generator before them; the benches
 * and the golden comparisons of bench/ rely on it.  New randomness (later
 * releases, churn) comes from streams of its own, never from the model's.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "tools/elfsym.h"
#include "tools/pprof_writer.h"

#define N_BINS 5
#define MAX_CALLEES 6
#define LEVELS 120
#define MAX_DEPTH 64
#define MIN_WALK 10 /* walks from main are 10..60 frames deep */
#define MAX_WALK 60
#define DEFAULT_PATHS 2500
#define DEFAULT_ZIPF 1.75
#define MIN_PATHS 256            /* the hot/warm swaps of a release need 210 ranks */
#define MAX_PATHS (16u * 1024 * 1024) /* every path drawn, churn included */
#define MAX_TABLE (64u * 1024 * 1024) /* releases x functions, releases x paths */
#define MAX_RELEASES 1000
#define ROLL_STEP 20 /* seconds between two instances' restarts */
#define DEFAULT_END 1767225600 /* 2026-01-01T00:00:00Z */

/* ---- randomness ---------------------------------------------------------- */

static uint64_t rnd_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t *s, uint64_t n)
{
	return n ? rnd_next(s) % n : 0;
}

static double rnd_unit(uint64_t *s)
{
	return (double)(rnd_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t seed_of(uint64_t seed, const char *a, uint64_t b, uint64_t c)
{
	return hash_combine(hash_combine(hash_bytes(a, strlen(a), seed), b), c);
}

/* ---- the model of one service ------------------------------------------- */

/* What a service looks like and how it changes; see the file comment. */
struct shape {
	size_t functions;
	size_t paths;    /* call paths live in each release */
	double zipf;     /* exponent of the rank law */
	unsigned branch; /* 0: every path walks from main */
	unsigned churn;  /* percent of paths replaced per release */
	int releases;
};

struct binary {
	char path[256];
	uint64_t text_off;   /* file offset of the executable segment */
	uint64_t text_size;  /* covers every release's layout */
	int per_release;     /* build ID changes with the service version */
};

struct func {
	uint8_t bin;
	uint16_t level;
	uint8_t n_callees;
	uint32_t callees[MAX_CALLEES];
};

struct path {
	uint32_t first; /* index into model.pool of the root-first functions */
	uint16_t depth;
	uint8_t leaf_variants;
};

struct model {
	char service[64];
	uint64_t seed;
	int n_rel;
	struct binary bins[N_BINS];
	char (*build_id)[N_BINS][41]; /* [release][binary], owned */
	struct func *funcs;           /* owned */
	size_t n_funcs;
	size_t n_named[N_BINS]; /* functions of each binary: its first free name ordinal */
	/* Per release r and function i, at [r * n_funcs + i]; owned. */
	uint32_t *size;  /* bytes */
	uint64_t *off;   /* file offset */
	uint32_t *name;  /* name ordinal within its binary (elfsym_name) */
	uint32_t *pool;  /* function indexes of every path, root first; owned */
	size_t n_pool, cap_pool;
	struct path *paths; /* every path any release uses; owned */
	size_t n_paths, cap_paths;
	size_t n_ranks;      /* paths live in one release */
	uint32_t *rank_path; /* [r * n_ranks + rank] -> path, owned */
	double *cdf;         /* [rank], owned */
};

static size_t at(const struct model *m, int r, size_t i)
{
	return (size_t)r * m->n_funcs + i;
}

/* Release r is version 1.<4 + r>: 1.4 and 1.5 for the historical two. */
static void release_name(int r, char out[16])
{
	snprintf(out, 16, "1.%d", 4 + r);
}

/* A stream of its own for one purpose of release r, apart from the model's. */
static uint64_t release_stream(const struct model *m, int r, uint64_t purpose)
{
	return seed_of(m->seed, m->service, ((uint64_t)1 << 40) | (uint64_t)r, purpose);
}

static void build_id(const char *path, const char *version, char out[41])
{
	uint64_t h[3];
	int i;

	h[0] = hash_bytes(path, strlen(path), hash_bytes(version, strlen(version), 1));
	h[1] = hash_u64(h[0] ^ 0x5bd1e995);
	h[2] = hash_u64(h[1] ^ 0x27d4eb2f);
	for (i = 0; i < 20; i++)
		snprintf(out + 2 * i, 3, "%02x", (unsigned)((h[i / 8] >> (8 * (i % 8))) & 0xff));
}

static void init_binaries(struct model *m)
{
	static const struct {
		const char *fmt, *version;
		uint64_t text_off;
		int per_release;
	} spec[N_BINS] = {
		{ "/usr/local/bin/%s", NULL, 0x1000, 1 },
		{ "/usr/lib/x86_64-linux-gnu/libc.so.6", "2.36-9", 0x26000, 0 },
		{ "/usr/lib/x86_64-linux-gnu/libssl.so.3", "3.0.11", 0x1f000, 0 },
		{ "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "12.2.0", 0x9b000, 0 },
		{ "/opt/%s/lib/libservice.so", NULL, 0x4000, 1 },
	};
	char rel[16];
	int b, r;

	for (b = 0; b < N_BINS; b++) {
		struct binary *bin = &m->bins[b];
		snprintf(bin->path, sizeof(bin->path), spec[b].fmt, m->service);
		bin->text_off = spec[b].text_off;
		bin->per_release = spec[b].per_release;
		for (r = 0; r < m->n_rel; r++) {
			release_name(r, rel);
			build_id(bin->path, spec[b].per_release ? rel : spec[b].version, m->build_id[r][b]);
		}
	}
}

/* Which binary a function at `level` lives in: main high up, libraries low. */
static uint8_t bin_for_level(unsigned level, uint64_t *rs)
{
	unsigned r = (unsigned)rnd_below(rs, 100);

	if (level < 50)
		return r < 80 ? 0 : 4;
	if (level < 90)
		return r < 40 ? 0 : r < 65 ? 4 : r < 85 ? 3 : 2;
	return r < 45 ? 1 : r < 70 ? 3 : r < 85 ? 2 : 4;
}

static int own(const struct model *m, size_t i)
{
	return m->bins[m->funcs[i].bin].per_release;
}

/* A random function of the service's own binaries (main, service library). */
static size_t pick_own(const struct model *m, uint64_t *rs)
{
	size_t i;

	do
		i = (size_t)rnd_below(rs, m->n_funcs);
	while (!own(m, i));
	return i;
}

/* Sizes of release r >= 2 from r - 1: about one own function in eight changes. */
static void resize_release(struct model *m, int r)
{
	uint64_t rs = release_stream(m, r, 1);
	size_t i;

	for (i = 0; i < m->n_funcs; i++) {
		uint32_t s = m->size[at(m, r - 1, i)];
		if (own(m, i) && rnd_below(&rs, 8) == 0) {
			uint32_t d = 16 * (uint32_t)(1 + rnd_below(&rs, 12));
			s = rnd_below(&rs, 2) && s >= 48 + d ? s - d : s + d;
		}
		m->size[at(m, r, i)] = s;
	}
}

/*
 * Churn of release r >= 1 in the layout: `order` (every function, in text
 * order, carried from release to release) has churn/2 % of the own
 * functions moved elsewhere, and churn/4 % of them get a new name.
 */
static void churn_layout(struct model *m, int r, unsigned churn, uint32_t *order)
{
	uint64_t rs = release_stream(m, r, 2);
	size_t n_own = 0, i, k, moves, renames;

	for (i = 0; i < m->n_funcs; i++)
		n_own += (size_t)own(m, i);
	moves = n_own * churn / 200;
	renames = n_own * churn / 400;
	for (k = 0; k < moves && n_own; k++) {
		uint32_t f = (uint32_t)pick_own(m, &rs);
		size_t from = 0, to = (size_t)rnd_below(&rs, m->n_funcs);
		while (order[from] != f)
			from++;
		if (from < to)
			memmove(order + from, order + from + 1, (to - from) * sizeof(*order));
		else
			memmove(order + to + 1, order + to, (from - to) * sizeof(*order));
		order[to] = f;
	}
	for (k = 0; k < renames && n_own; k++) {
		size_t f = pick_own(m, &rs);
		m->name[at(m, r, f)] = (uint32_t)m->n_named[m->funcs[f].bin]++;
	}
}

/* File offsets of release r: the functions of each binary in `order`. */
static void place_release(struct model *m, int r, const uint32_t *order, uint64_t end[N_BINS])
{
	uint64_t next[N_BINS];
	size_t k;
	int b;

	for (b = 0; b < N_BINS; b++)
		next[b] = m->bins[b].text_off + 0x40;
	for (k = 0; k < m->n_funcs; k++) {
		size_t i = order ? order[k] : k;
		uint8_t fb = m->funcs[i].bin;
		m->off[at(m, r, i)] = next[fb];
		next[fb] += m->size[at(m, r, i)];
	}
	for (b = 0; b < N_BINS; b++)
		if (next[b] > end[b])
			end[b] = next[b];
}

/* Lays the functions of each binary out in its text, per release. */
static int layout(struct model *m, uint64_t *rs, const struct shape *sh)
{
	uint64_t end[N_BINS];
	uint32_t *order = NULL;
	size_t i;
	int b, r;

	for (i = 0; i < m->n_funcs; i++) {
		uint8_t fb = m->funcs[i].bin;
		/* Sizes follow a rough log-uniform law between 48 bytes and 6 KiB. */
		uint32_t size = (uint32_t)(48.0 * exp(rnd_unit(rs) * log(128.0))), next;
		size = (size + 15) & ~15u;
		/* Release 1.5 changed about one function in eight of its own code. */
		next = size;
		if (m->bins[fb].per_release && rnd_below(rs, 8) == 0)
			next = size + 16 * (uint32_t)(1 + rnd_below(rs, 12));
		m->size[at(m, 0, i)] = size;
		if (m->n_rel > 1)
			m->size[at(m, 1, i)] = next;
		m->name[at(m, 0, i)] = (uint32_t)m->n_named[fb]++;
	}
	for (r = 2; r < m->n_rel; r++)
		resize_release(m, r);
	if (sh->churn) {
		order = malloc(m->n_funcs * sizeof(*order));
		if (!order)
			return ERR_NOMEM;
		for (i = 0; i < m->n_funcs; i++)
			order[i] = (uint32_t)i;
	}
	for (b = 0; b < N_BINS; b++)
		end[b] = m->bins[b].text_off;
	for (r = 0; r < m->n_rel; r++) {
		if (r > 0)
			memcpy(m->name + at(m, r, 0), m->name + at(m, r - 1, 0),
			       m->n_funcs * sizeof(*m->name));
		if (r > 0 && order)
			churn_layout(m, r, sh->churn, order);
		place_release(m, r, order, end);
	}
	for (b = 0; b < N_BINS; b++)
		m->bins[b].text_size = ((end[b] - m->bins[b].text_off) + 0xfff) & ~0xfffULL;
	free(order);
	return 0;
}

/* Levels, binaries and callees: every call goes one to three levels down. */
static int build_graph(struct model *m, uint64_t *rs, const struct shape *sh)
{
	size_t per_level, i, level_start[LEVELS + 1];
	unsigned l;

	m->funcs = calloc(m->n_funcs, sizeof(*m->funcs));
	if (!m->funcs)
		return ERR_NOMEM;
	per_level = (m->n_funcs - 1) / (LEVELS - 1);
	m->funcs[0].level = 0; /* main */
	for (i = 1; i < m->n_funcs; i++) {
		size_t lv = 1 + (i - 1) / per_level;
		m->funcs[i].level = (uint16_t)(lv < LEVELS ? lv : LEVELS - 1);
	}
	for (i = 0; i < m->n_funcs; i++)
		m->funcs[i].bin = i == 0 ? 0 : bin_for_level(m->funcs[i].level, rs);
	for (l = 0; l <= LEVELS; l++)
		level_start[l] = m->n_funcs;
	for (i = m->n_funcs; i-- > 0;)
		level_start[m->funcs[i].level] = i;
	for (l = LEVELS; l-- > 0;)
		if (level_start[l] > level_start[l + 1])
			level_start[l] = level_start[l + 1];
	for (i = 0; i < m->n_funcs; i++) {
		struct func *f = &m->funcs[i];
		unsigned lo = f->level + 1u, hi = f->level + 3u;
		size_t a, z;
		if (lo >= LEVELS)
			continue;
		if (hi >= LEVELS)
			hi = LEVELS - 1;
		a = level_start[lo];
		z = level_start[hi + 1];
		if (z <= a)
			continue;
		f->n_callees = (uint8_t)(i == 0 ? MAX_CALLEES : 2 + rnd_below(rs, MAX_CALLEES - 1));
		for (l = 0; l < f->n_callees; l++)
			f->callees[l] = (uint32_t)(a + rnd_below(rs, z - a));
	}
	return layout(m, rs, sh);
}

/*
 * Appends one call path: a walk from main of 10..60 frames, or, with
 * `branch`, a fork of a random earlier path (see the file comment).  The
 * draws of a walk from main are those of the historical generator.
 */
static int add_path(struct model *m, uint64_t *rs, unsigned branch)
{
	struct path *pa;
	uint32_t f = 0, *fs;
	unsigned want;
	int rc;

	if ((rc = GROW(m->paths, m->cap_paths, m->n_paths + 1, MAX_PATHS, NULL)) ||
	    (rc = GROW(m->pool, m->cap_pool, m->n_pool + MAX_DEPTH, (size_t)MAX_PATHS * MAX_DEPTH, NULL)))
		return rc;
	pa = &m->paths[m->n_paths];
	memset(pa, 0, sizeof(*pa));
	pa->first = (uint32_t)m->n_pool;
	fs = m->pool + m->n_pool;
	if (branch && m->n_paths > 0) {
		const struct path *q = &m->paths[rnd_below(rs, m->n_paths)];
		unsigned cut = 1 + (unsigned)rnd_below(rs, 2 * branch);
		unsigned add = 1 + (unsigned)rnd_below(rs, 2 * branch);
		unsigned keep = q->depth > cut ? q->depth - cut : 1;
		want = keep + add < MIN_WALK ? MIN_WALK : keep + add > MAX_WALK ? MAX_WALK : keep + add;
		memcpy(fs, m->pool + q->first, keep * sizeof(*fs));
		pa->depth = (uint16_t)keep;
		f = fs[keep - 1];
		while (pa->depth < want && m->funcs[f].n_callees) {
			f = m->funcs[f].callees[rnd_below(rs, m->funcs[f].n_callees)];
			fs[pa->depth++] = f;
		}
	} else {
		/* Depth: triangular between 10 and 60, mean 35. */
		want = MIN_WALK + (unsigned)rnd_below(rs, 26) + (unsigned)rnd_below(rs, 26);
		for (;;) {
			fs[pa->depth++] = f;
			if (pa->depth >= want || m->funcs[f].n_callees == 0)
				break;
			f = m->funcs[f].callees[rnd_below(rs, m->funcs[f].n_callees)];
		}
	}
	m->n_pool += pa->depth;
	pa->leaf_variants = (uint8_t)(1 + rnd_below(rs, 4));
	m->n_paths++;
	return 0;
}

/* A few hot ranks of release r trade places with warm ones. */
static void swap_hot(struct model *m, int r, uint64_t *rs)
{
	uint32_t *rank = m->rank_path + (size_t)r * m->n_ranks;
	int k;

	for (k = 0; k < 6; k++) {
		size_t a = rnd_below(rs, 10), b = 10 + rnd_below(rs, 200);
		uint32_t t = rank[a];
		rank[a] = rank[b];
		rank[b] = t;
	}
}

/* Release r >= 1 replaces churn % of its ranks' paths with new ones. */
static int churn_paths(struct model *m, int r, const struct shape *sh)
{
	uint64_t rs = release_stream(m, r, 3);
	uint32_t *rank = m->rank_path + (size_t)r * m->n_ranks;
	size_t k, n = m->n_ranks * sh->churn / 100;
	int rc;

	for (k = 0; k < n; k++) {
		size_t slot = (size_t)rnd_below(&rs, m->n_ranks);
		if ((rc = add_path(m, &rs, sh->branch)))
			return rc;
		rank[slot] = (uint32_t)(m->n_paths - 1);
	}
	return 0;
}

/* Draws the call paths, their Zipf ranks and each release's rank changes. */
static int build_paths(struct model *m, uint64_t *rs, const struct shape *sh)
{
	double total = 0;
	size_t p, k;
	int r, rc;

	for (p = 0; p < m->n_ranks; p++)
		if ((rc = add_path(m, rs, sh->branch)))
			return rc;
	for (k = 0; k < m->n_ranks; k++) {
		total += 1.0 / pow((double)(k + 1), sh->zipf);
		m->cdf[k] = total;
		m->rank_path[k] = (uint32_t)k;
	}
	for (k = 0; k < m->n_ranks; k++)
		m->cdf[k] /= total;
	for (r = 1; r < m->n_rel; r++) {
		uint64_t rr = release_stream(m, r, 4);
		memcpy(m->rank_path + (size_t)r * m->n_ranks, m->rank_path + (size_t)(r - 1) * m->n_ranks,
		       m->n_ranks * sizeof(*m->rank_path));
		/* 1.5 shifts the hot spots with the model's own draws, as it always did. */
		swap_hot(m, r, r == 1 ? rs : &rr);
		if (sh->churn && (rc = churn_paths(m, r, sh)))
			return rc;
	}
	return 0;
}


static int model_init(struct model *m, const char *service, const struct shape *sh, uint64_t seed)
{
	uint64_t rs = seed_of(seed, service, 0, 0);
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(m->service, sizeof(m->service), "%s", service);
	m->seed = seed;
	m->n_rel = sh->releases;
	m->n_funcs = sh->functions;
	m->n_ranks = sh->paths;
	if (m->n_funcs > MAX_TABLE / (size_t)m->n_rel || m->n_ranks > MAX_TABLE / (size_t)m->n_rel)
		return ERR_TOO_LARGE;
	m->build_id = calloc((size_t)m->n_rel, sizeof(*m->build_id));
	m->size = calloc((size_t)m->n_rel * m->n_funcs, sizeof(*m->size));
	m->off = calloc((size_t)m->n_rel * m->n_funcs, sizeof(*m->off));
	m->name = calloc((size_t)m->n_rel * m->n_funcs, sizeof(*m->name));
	m->rank_path = calloc((size_t)m->n_rel * m->n_ranks, sizeof(*m->rank_path));
	m->cdf = calloc(m->n_ranks, sizeof(*m->cdf));
	if (!m->build_id || !m->size || !m->off || !m->name || !m->rank_path || !m->cdf)
		return ERR_NOMEM;
	init_binaries(m);
	if ((rc = build_graph(m, &rs, sh)) || (rc = build_paths(m, &rs, sh)))
		return rc;
	return 0;
}

static void model_release(struct model *m)
{
	free(m->build_id);
	free(m->funcs);
	free(m->size);
	free(m->off);
	free(m->name);
	free(m->pool);
	free(m->paths);
	free(m->rank_path);
	free(m->cdf);
}

/* ---- one profile ---------------------------------------------------------- */

struct instance {
	const struct model *m;
	int index;
	int64_t phase; /* seconds after the cadence step the agent uploads */
	uint8_t *seen; /* [release * n_paths + path]: leaf variants drawn, borrowed */
};

/* Load address of binary b for this process (ASLR): page-aligned, random. */
static uint64_t load_base(const struct instance *in, int release, int b, uint64_t seed)
{
	uint64_t later = release >= 2 ? (uint64_t)release << 32 : 0;
	uint64_t h = seed_of(seed, in->m->service, (uint64_t)in->index * 4 + (uint64_t)release,
			     (uint64_t)b + 99 + later);

	if (b == 0)
		return 0x550000000000ULL + ((h & 0xfffffffULL) << 12);
	return 0x7f0000000000ULL + ((h & 0xfffffffULL) << 12);
}

static uint32_t draw_rank(const struct model *m, uint64_t *rs)
{
	double u = rnd_unit(rs);
	size_t lo = 0, hi = m->n_ranks - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)lo;
}

struct gen_opts {
	int64_t interval;
	int hz;
	uint64_t seed;
	int spans; /* --spans N: samples labelled with one of N span ids of the profile */
};

/*
 * The span_id label of a sample with --spans N: one of N ids of the
 * profile, or none for one draw in N + 1 (as an SDK labels the samples taken
 * inside a traced span); 16 lowercase hex digits, as Pyroscope's SDKs write.
 */
static const char *span_label(const struct instance *in, int64_t t, const struct gen_opts *o,
			      uint64_t *rs, char buf[17])
{
	uint64_t j = rnd_below(rs, (uint64_t)o->spans + 1), id;

	if (j == (uint64_t)o->spans)
		return NULL;
	id = seed_of(o->seed ^ 0x5a5a, in->m->service, (uint64_t)in->index * 1000003 + j,
		     (uint64_t)t) | 1;
	snprintf(buf, 17, "%016llx", (unsigned long long)id);
	return buf;
}

/*
 * The location ids of the stacks one profile has drawn, by (path, leaf
 * variant): a profile draws ~1,000 samples over a few hundred stacks 10..60
 * frames deep, and finding each frame's location again was a fifth of the
 * generator's time.  The ids are those the first draw got from the writer,
 * so the bytes do not change.
 */
struct drawn {
	struct hmap ix;  /* hash_u64(key) -> index into key/off */
	uint64_t *key;   /* path << 32 | variant */
	size_t *off;     /* into locs */
	uint64_t *locs;
	size_t n, n_locs, cap_locs;
};

static void drawn_release(struct drawn *d)
{
	hmap_release(&d->ix);
	free(d->key);
	free(d->off);
	free(d->locs);
}

/* Room for `n` distinct stacks. */
static int drawn_init(struct drawn *d, size_t n)
{
	memset(d, 0, sizeof(*d));
	hmap_init(&d->ix, HMAP_MAX, NULL);
	d->key = malloc((n + 1) * sizeof(*d->key));
	d->off = malloc((n + 1) * sizeof(*d->off));
	if (!d->key || !d->off) {
		drawn_release(d);
		return ERR_NOMEM;
	}
	return 0;
}

/* Writes one gzipped pprof to `out`; adds its Sample messages to *n_samples. */
static int write_profile(const struct instance *in, int release, int64_t t, const struct gen_opts *o,
			 struct buf *out, uint64_t *n_samples)
{
	static const char *const types[] = { "samples", "count", "cpu", "nanoseconds" };
	const struct model *m = in->m;
	const uint32_t *rank = m->rank_path + (size_t)release * m->n_ranks;
	uint64_t rs = seed_of(o->seed, m->service, (uint64_t)in->index, (uint64_t)t);
	int64_t period = 1000000000 / o->hz;
	uint64_t map_ids[N_BINS], base[N_BINS];
	struct pw_meta meta;
	struct drawn dr;
	size_t n_draws, d;
	struct pw w;
	int rc, b;

	/* CPU use varies between 70 % and 130 % of one core. */
	n_draws = (size_t)((double)o->hz * (double)o->interval * (0.7 + 0.6 * rnd_unit(&rs)));
	if ((rc = drawn_init(&dr, n_draws)))
		return rc;
	if ((rc = pw_init(&w, 2)))
		goto out;
	if (o->spans && (rc = pw_label_key(&w, "span_id")))
		goto out;
	for (b = 0; b < N_BINS; b++) {
		const struct binary *bin = &m->bins[b];
		base[b] = load_base(in, release, b, o->seed);
		if ((rc = pw_mapping(&w, base[b] + bin->text_off, base[b] + bin->text_off + bin->text_size,
				     bin->text_off, bin->path, m->build_id[release][b], &map_ids[b])))
			goto out;
	}
	for (d = 0; d < n_draws; d++) {
		uint32_t id = rank[draw_rank(m, &rs)];
		const struct path *pa = &m->paths[id];
		const uint32_t *fs = m->pool + pa->first;
		uint64_t variant = rnd_below(&rs, pa->leaf_variants);
		int64_t values[2] = { 1, period };
		size_t k, n = pa->depth;
		uint64_t key = (uint64_t)id << 32 | variant, *locs;
		struct hmap_probe pr;
		uint32_t j;
		char sbuf[17];
		const char *span;

		for (j = hmap_first(&dr.ix, hash_u64(key), &pr); j != HMAP_NONE; j = hmap_next(&dr.ix, &pr))
			if (dr.key[j] == key)
				break;
		if (j != HMAP_NONE) {
			locs = dr.locs + dr.off[j];
			goto drawn;
		}
		if (dr.n_locs + n > dr.cap_locs) {
			size_t cap = dr.cap_locs ? 2 * dr.cap_locs : 4096;
			uint64_t *nl;
			while (cap < dr.n_locs + n)
				cap *= 2;
			if (!(nl = realloc(dr.locs, cap * sizeof(*nl)))) {
				rc = ERR_NOMEM;
				goto out;
			}
			dr.locs = nl;
			dr.cap_locs = cap;
		}
		locs = dr.locs + dr.n_locs;
		for (k = 0; k < n; k++) {
			/* leaf first: k = 0 is the sampled PC, the rest return addresses */
			size_t fi = at(m, release, fs[n - 1 - k]);
			uint64_t pos;
			if (k == 0)
				pos = 4 * (1 + hash_combine(pa->first, variant) % (m->size[fi] / 4 - 1));
			else
				pos = 5 + hash_combine(fs[n - 1 - k], fs[n - k]) % (m->size[fi] - 8);
			/* runtime = memory_start + (file offset - mapping file_offset) */
			if ((rc = pw_location(&w, map_ids[m->funcs[fs[n - 1 - k]].bin],
					      base[m->funcs[fs[n - 1 - k]].bin] + m->off[fi] + pos, &locs[k])))
				goto out;
		}
		if ((rc = hmap_put_probed(&dr.ix, &pr, (uint32_t)dr.n)))
			goto out;
		dr.key[dr.n] = key;
		dr.off[dr.n++] = dr.n_locs;
		dr.n_locs += n;
drawn:
		span = o->spans ? span_label(in, t, o, &rs, sbuf) : NULL;
		if ((rc = pw_sample(&w, locs, n, span, values)))
			goto out;
		in->seen[(size_t)release * m->n_paths + id] |= (uint8_t)(1u << variant);
	}
	meta = (struct pw_meta){ .type_unit = types, .period_type = "cpu", .period_unit = "nanoseconds",
				 .period = period, .time_nanos = t * 1000000000,
				 .duration_nanos = o->interval * 1000000000 };
	*n_samples += w.n_samples;
	rc = pw_write(&w, &meta, 1, out);
out:
	pw_release(&w);
	drawn_release(&dr);
	return rc;
}

/* ---- the fleet ------------------------------------------------------------ */

static const char *const service_names[] = {
	"shop-api", "checkout", "search", "auth", "payments", "inventory", "recommender",
	"gateway", "notifications", "billing", "catalog", "shipping",
};

struct opts {
	const char *out;
	const char *debug_dir;
	const char *truth;
	int services, instances, minutes, quiet;
	int64_t end;
	int64_t cadence; /* 0: the interval */
	int daily;       /* a release a day unless --releases says otherwise */
	int releases_given;
	struct shape shape;
	struct gen_opts gen;
};

static int mkdirs(const char *path)
{
	char tmp[4096];
	size_t i, n = strlen(path);

	if (n >= sizeof(tmp))
		return ERR_INVALID;
	memcpy(tmp, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (tmp[i] == '/' || tmp[i] == '\0') {
			char c = tmp[i];
			tmp[i] = '\0';
			if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
				return ERR_IO;
			tmp[i] = c;
		}
	}
	return 0;
}

static int write_file(const char *path, const struct buf *b)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return ERR_IO;
	ok = fwrite(b->data, 1, b->len, f) == b->len;
	ok = fclose(f) == 0 && ok;
	return ok ? 0 : ERR_IO;
}

static void service_name(int s, char *out, size_t size)
{
	int n = (int)(sizeof(service_names) / sizeof(service_names[0]));

	if (s < n)
		snprintf(out, size, "%s", service_names[s]);
	else
		snprintf(out, size, "%s-%d", service_names[s % n], s / n);
}

/*
 * The release instance `in` runs at time t: the range [start, start +
 * range) is cut into n_rel equal parts and each instance restarts into the
 * next release ROLL_STEP seconds after the one before it.
 */
static int release_at(int n_rel, int64_t start, int64_t range, const struct instance *in, int64_t t)
{
	int64_t x = t - start - (int64_t)(in->index - 1) * ROLL_STEP, r;

	if (x <= 0 || n_rel == 1)
		return 0;
	r = x * n_rel / range;
	return r < n_rel ? (int)r : n_rel - 1;
}

/* ---- symbol files -------------------------------------------------------- */

/* The name flavour of each entry of init_binaries()' table. */
static const enum elfsym_flavor bin_flavor[N_BINS] = {
	ELFSYM_MAIN, ELFSYM_LIBC, ELFSYM_LIBSSL, ELFSYM_LIBSTDCXX, ELFSYM_SERVICE_LIB,
};

static int hex_to_bytes(const char *hex, uint8_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return ERR_INVALID;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static int add_symbol(struct elfsym *w, const struct model *m, int b, uint64_t k, uint64_t off,
		      uint64_t size)
{
	char name[ELFSYM_NAME_MAX];
	int rc = elfsym_name(bin_flavor[b], m->service, k, name, sizeof(name));

	return rc ? rc : elfsym_add(w, name, off, size);
}

/* The release column of a symbol file's manifest line, every release for a shared one. */
static void release_list(const struct model *m, int b, int r, char *out, size_t size)
{
	size_t len = 0;
	char rel[16];
	int k;

	out[0] = '\0';
	for (k = m->bins[b].per_release ? r : 0; k < (m->bins[b].per_release ? r + 1 : m->n_rel); k++) {
		release_name(k, rel);
		len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%s%s", k > r ? "," : "",
					rel);
		if (len >= size)
			return;
	}
}

/*
 * The symbol file of binary b of model m in release r, its text segment
 * `text_size` bytes (at least the model's own).  For a shared library,
 * functions beyond the model's own fill the rest with the same size law,
 * named in sequence: other services' code lies there.
 */
static int write_debug_file(const struct model *m, int b, int r, uint64_t text_size,
			    const char *dir, FILE *manifest)
{
	const struct binary *bin = &m->bins[b];
	const char *id = m->build_id[r][b];
	uint64_t k = m->n_named[b], end = bin->text_off + 0x40, limit = bin->text_off + text_size;
	uint8_t raw[20];
	struct err_msg msg = { { 0 } };
	struct elfsym w;
	char path[4096], rels[MAX_RELEASES * 8];
	size_t i;
	int rc;

	if ((rc = hex_to_bytes(id, raw, sizeof(raw))))
		return rc;
	/* elfsym_init leaves w releasable even when it fails. */
	if ((rc = elfsym_init(&w, raw, sizeof(raw), bin->text_off, text_size)))
		goto out;
	for (i = 0; i < m->n_funcs; i++) {
		size_t fi = at(m, r, i);
		if (m->funcs[i].bin != b)
			continue;
		if ((rc = add_symbol(&w, m, b, m->name[fi], m->off[fi], m->size[fi])))
			goto out;
		if (m->off[fi] + m->size[fi] > end)
			end = m->off[fi] + m->size[fi];
	}
	while (!bin->per_release && end + 48 <= limit) {
		uint64_t h = hash_u64(hash_combine(k, (uint64_t)b));
		uint64_t size = (uint64_t)(48.0 * exp((double)(h >> 11) * (1.0 / 9007199254740992.0) * log(128.0)));
		size = (size + 15) & ~15ULL;
		if (size > limit - end)
			size = limit - end;
		if ((rc = add_symbol(&w, m, b, k++, end, size)))
			goto out;
		end += size;
	}
	snprintf(path, sizeof(path), "%s/%s.debug", dir, id);
	if ((rc = elfsym_write_file(&w, path, &msg))) {
		fprintf(stderr, "unhex-workload: %s\n", msg.text);
		goto out;
	}
	release_list(m, b, r, rels, sizeof(rels));
	fprintf(manifest, "%s.debug\t%s\t%s\t%s\n", id, id, bin->path, rels);
out:
	elfsym_release(&w);
	return rc;
}

/*
 * One symbol file per build ID: per service and release for the service's
 * own binaries, once (from the first service) for the shared libraries.
 */
static int write_debug_files(const struct model *models, int n_models, const char *dir,
			     int quiet)
{
	uint64_t shared_size[N_BINS] = { 0 };
	char path[4096];
	FILE *manifest;
	int s, b, r, n = 0, rc = 0;

	if ((rc = mkdirs(dir)))
		return rc;
	for (s = 0; s < n_models; s++)
		for (b = 0; b < N_BINS; b++)
			if (models[s].bins[b].text_size > shared_size[b])
				shared_size[b] = models[s].bins[b].text_size;
	snprintf(path, sizeof(path), "%s/manifest.tsv", dir);
	manifest = fopen(path, "w");
	if (!manifest)
		return ERR_IO;
	for (s = 0; s < n_models && !rc; s++) {
		const struct model *m = &models[s];
		for (b = 0; b < N_BINS && !rc; b++) {
			int per_release = m->bins[b].per_release;
			if (!per_release && s > 0)
				continue;
			for (r = 0; r < (per_release ? m->n_rel : 1) && !rc; r++, n++)
				rc = write_debug_file(m, b, r, per_release ? m->bins[b].text_size : shared_size[b],
						      dir, manifest);
		}
	}
	if (fclose(manifest) != 0 && !rc)
		rc = ERR_IO;
	if (!quiet && !rc)
		fprintf(stderr, "unhex-workload: %d symbol files in %s\n", n, dir);
	return rc;
}

/*
 * --truth: per service, release and function, the share of the samples
 * whose leaf it is (self) and whose path holds it (total, once per path),
 * in expectation: the rank law's probabilities over the release's paths.
 * Lines `service \t version \t function name \t self \t total`, for the
 * functions with a share of at least 0.01 %; names as the symbol files of
 * --debug-dir give them (mangled C++ where the binary is C++).
 */
static int write_truth(const struct model *models, int n_services, const char *path)
{
	FILE *f = fopen(path, "w");
	double *self = NULL, *total = NULL;
	uint32_t *stamp = NULL;
	int rc = f ? 0 : ERR_IO;

	for (int s = 0; s < n_services && !rc; s++) {
		const struct model *m = &models[s];

		free(self), free(total), free(stamp);
		self = calloc(m->n_funcs, sizeof(*self));
		total = calloc(m->n_funcs, sizeof(*total));
		stamp = calloc(m->n_funcs, sizeof(*stamp));
		if (!self || !total || !stamp) {
			rc = ERR_NOMEM;
			break;
		}
		for (int r = 0; r < m->n_rel && !rc; r++) {
			char version[16], name[ELFSYM_NAME_MAX];

			memset(self, 0, m->n_funcs * sizeof(*self));
			memset(total, 0, m->n_funcs * sizeof(*total));
			for (size_t k = 0; k < m->n_ranks; k++) {
				const struct path *pa = &m->paths[m->rank_path[(size_t)r * m->n_ranks + k]];
				const uint32_t *fs = m->pool + pa->first;
				double p = m->cdf[k] - (k ? m->cdf[k - 1] : 0);
				uint32_t mark = (uint32_t)(r * m->n_ranks + k + 1);

				self[fs[pa->depth - 1]] += p;
				for (size_t d = 0; d < pa->depth; d++)
					if (stamp[fs[d]] != mark) {
						stamp[fs[d]] = mark;
						total[fs[d]] += p;
					}
			}
			release_name(r, version);
			for (size_t i = 0; i < m->n_funcs && !rc; i++) {
				if (total[i] < 1e-4)
					continue;
				rc = elfsym_name(bin_flavor[m->funcs[i].bin], m->service, m->name[at(m, r, i)],
						 name, sizeof(name));
				if (!rc && fprintf(f, "%s\t%s\t%s\t%.6f\t%.6f\n", m->service, version, name,
						   self[i], total[i]) < 0)
					rc = ERR_IO;
			}
		}
	}
	free(self);
	free(total);
	free(stamp);
	if (f && fclose(f) != 0 && !rc)
		rc = ERR_IO;
	return rc;
}

/* Distinct stacks drawn: (release, path, leaf variant) triples seen. */
static uint64_t count_stacks(const struct model *m, const uint8_t *seen)
{
	size_t i, n = (size_t)m->n_rel * m->n_paths;
	uint64_t total = 0;

	for (i = 0; i < n; i++)
		total += (uint64_t)__builtin_popcount(seen[i]);
	return total;
}

static int generate(const struct opts *o)
{
	int64_t range = (int64_t)o->minutes * 60, start = o->end - range;
	int64_t cadence = o->cadence ? o->cadence : o->gen.interval, steps = range / cadence;
	int64_t total = steps * o->services * o->instances; /* profiles to write */
	struct model *models = calloc((size_t)o->services, sizeof(*models));
	struct instance *ins = calloc((size_t)o->services * (size_t)o->instances, sizeof(*ins));
	uint8_t **seen = calloc((size_t)o->services, sizeof(*seen));
	uint64_t files = 0, bytes = 0, samples = 0, stacks = 0;
	size_t funcs = 0;
	char path[4096], name[64];
	FILE *manifest = NULL;
	struct buf b;
	int64_t k;
	int s, i, rc = 0;

	buf_init(&b, 256u * 1024 * 1024);
	if (!models || !ins || !seen) {
		rc = ERR_NOMEM;
		goto out;
	}
	for (s = 0; s < o->services; s++) {
		service_name(s, name, sizeof(name));
		if ((rc = model_init(&models[s], name, &o->shape, o->gen.seed)))
			goto out;
		seen[s] = calloc((size_t)models[s].n_rel * models[s].n_paths, 1);
		if (!seen[s]) {
			rc = ERR_NOMEM;
			goto out;
		}
		funcs += models[s].n_funcs;
		for (i = 0; i < o->instances; i++) {
			struct instance *in = &ins[s * o->instances + i];
			uint64_t h = seed_of(o->gen.seed, name, (uint64_t)i, 7);
			in->m = &models[s];
			in->index = i + 1;
			in->phase = (int64_t)(h % (uint64_t)cadence);
			in->seen = seen[s];
			snprintf(path, sizeof(path), "%s/%s/i-%02d", o->out, name, in->index);
			if ((rc = mkdirs(path)))
				goto out;
		}
	}
	if (o->debug_dir && (rc = write_debug_files(models, o->services, o->debug_dir, o->quiet)))
		goto out;
	if (o->truth && (rc = write_truth(models, o->services, o->truth)))
		goto out;
	snprintf(path, sizeof(path), "%s/manifest.tsv", o->out);
	manifest = fopen(path, "w");
	if (!manifest) {
		rc = ERR_IO;
		goto out;
	}
	for (k = 0; k < steps; k++) {
		for (s = 0; s < o->services; s++) {
			for (i = 0; i < o->instances; i++) {
				const struct instance *in = &ins[s * o->instances + i];
				int64_t t = start + k * cadence + in->phase;
				int release = release_at(o->shape.releases, start, range, in, t);
				char rel[256], version[16];
				buf_reset(&b);
				if ((rc = write_profile(in, release, t, &o->gen, &b, &samples)))
					goto out;
				snprintf(rel, sizeof(rel), "%s/i-%02d/%" PRId64 ".pb.gz", in->m->service,
					 in->index, t);
				snprintf(path, sizeof(path), "%s/%s", o->out, rel);
				if ((rc = write_file(path, &b)))
					goto out;
				release_name(release, version);
				fprintf(manifest, "%s\t%s.cpu{instance=i-%02d,env=prod,version=%s}\t%" PRId64 "\n",
					rel, in->m->service, in->index, version, t);
				files++;
				bytes += b.len;
			}
		}
		if (!o->quiet && total >= 50000 && steps >= 10 && (k + 1) % (steps / 10) == 0 && k + 1 < steps)
			fprintf(stderr, "unhex-workload: %" PRId64 " %%, %" PRIu64 " profiles\n",
				(k + 1) * 100 / steps, files);
	}
	if (fclose(manifest) != 0)
		rc = ERR_IO;
	manifest = NULL;
	for (s = 0; s < o->services; s++)
		stacks += count_stacks(&models[s], seen[s]);
	if (!o->quiet && rc == 0) {
		fprintf(stderr, "unhex-workload: %" PRIu64 " profiles, %.1f MB gzipped, in %s\n", files,
			(double)bytes / 1e6, o->out);
		fprintf(stderr, "unhex-workload: %" PRIu64 " pprof samples over %" PRIu64
			" distinct stacks; %zu functions, %d releases\n", samples, stacks, funcs,
			o->shape.releases);
	}
out:
	if (manifest)
		fclose(manifest);
	if (models)
		for (s = 0; s < o->services; s++)
			model_release(&models[s]);
	if (seen)
		for (s = 0; s < o->services; s++)
			free(seen[s]);
	free(seen);
	free(models);
	free(ins);
	buf_release(&b);
	return rc;
}

/* ---- options -------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: unhex-workload --out DIR --services N --instances M --minutes T\n"
		"                      [--interval 10] [--end now|UNIX] [--seed S] [--functions F]\n"
		"                      [--hz 100] [--debug-dir DIR] [--truth FILE] [--quiet]\n"
		"                      [--shape diverse|month] [--days D] [--cadence S] [--releases R]\n"
		"                      [--stacks P] [--zipf Z] [--branch B] [--churn C] [--spans N]\n"
		"\n"
		"  --days D       the range is D days (instead of --minutes)\n"
		"  --cadence S    an instance sends a profile every S seconds (default: the\n"
		"                 interval); each still covers --interval seconds, so a range\n"
		"                 is scaled down by S / interval\n"
		"  --releases R   releases over the range, one after the other (default 2)\n"
		"  --stacks P     call paths live in each release (default 2500)\n"
		"  --zipf Z       exponent of the Zipf law over them (default 1.75)\n"
		"  --branch B     paths fork from earlier ones, B frames apart on average\n"
		"                 (default 0: independent walks from main)\n"
		"  --churn C      per release: C %% of the paths replaced, C/2 %% of the\n"
		"                 service's functions moved, C/4 %% renamed (default 0)\n"
		"  --spans N      label samples with span_id: one of N span ids per profile,\n"
		"                 or none for one sample in N + 1 (default 0: no labels)\n"
		"  --truth FILE   the expected self and total share of every function per\n"
		"                 service and release, from the model (what a regression\n"
		"                 report between two releases should find)\n"
		"\n"
		"Shapes of issue 11 (options given with --shape override its values):\n"
		"  --shape diverse   high diversity, one build of a large C++ service:\n"
		"                    --services 1 --instances 20 --minutes 6 --releases 1\n"
		"                    --functions 30000 --stacks 190000 --zipf 0.9 --branch 4\n"
		"                    (about 590,000 pprof samples over 187,000 distinct stacks)\n"
		"  --shape month     a month of a fleet with a release a day: --services 1\n"
		"                    --instances 20 --days 30 --cadence 300 --churn 10, and\n"
		"                    --releases equal to the days (profiles every 5 min\n"
		"                    instead of every 10 s: the month scaled by 1/30)\n");
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

/* Applies a --shape preset; ERR_INVALID for an unknown name. */
static int apply_shape(struct opts *o, const char *name)
{
	o->services = 1;
	o->instances = 20;
	if (strcmp(name, "diverse") == 0) {
		o->minutes = 6;
		o->shape.functions = 30000;
		o->shape.paths = 190000;
		o->shape.zipf = 0.9;
		o->shape.branch = 4;
		o->shape.releases = 1;
	} else if (strcmp(name, "month") == 0) {
		o->minutes = 30 * 24 * 60;
		o->daily = 1;
		o->shape.churn = 10;
		o->cadence = 300;
	} else {
		return ERR_INVALID;
	}
	return 0;
}

/* Parses one option with its value; -1 for a bad or unknown one. */
static int parse_opt(struct opts *o, const char *a, const char *val)
{
	long long v = 0;
	int bad = 0;

	if (strcmp(a, "--out") == 0)
		o->out = val;
	else if (strcmp(a, "--debug-dir") == 0)
		o->debug_dir = val;
	else if (strcmp(a, "--truth") == 0)
		o->truth = val;
	else if (strcmp(a, "--shape") == 0)
		bad = 0; /* applied before the other options */
	else if (strcmp(a, "--services") == 0)
		bad = parse_int(val, 1, 1000, &v), o->services = (int)v;
	else if (strcmp(a, "--instances") == 0)
		bad = parse_int(val, 1, 99, &v), o->instances = (int)v;
	else if (strcmp(a, "--minutes") == 0)
		bad = parse_int(val, 1, 60 * 24 * 31, &v), o->minutes = (int)v;
	else if (strcmp(a, "--days") == 0)
		bad = parse_int(val, 1, 366, &v), o->minutes = (int)v * 24 * 60;
	else if (strcmp(a, "--interval") == 0)
		bad = parse_int(val, 1, 3600, &v), o->gen.interval = v;
	else if (strcmp(a, "--cadence") == 0)
		bad = parse_int(val, 1, 86400, &v), o->cadence = v;
	else if (strcmp(a, "--hz") == 0)
		bad = parse_int(val, 1, 10000, &v), o->gen.hz = (int)v;
	else if (strcmp(a, "--spans") == 0)
		bad = parse_int(val, 0, 1000, &v), o->gen.spans = (int)v;
	else if (strcmp(a, "--seed") == 0)
		bad = parse_int(val, 0, INT64_MAX, &v), o->gen.seed = (uint64_t)v;
	else if (strcmp(a, "--functions") == 0)
		bad = parse_int(val, 200, 1000000, &v), o->shape.functions = (size_t)v;
	else if (strcmp(a, "--stacks") == 0)
		bad = parse_int(val, MIN_PATHS, MAX_PATHS / 2, &v), o->shape.paths = (size_t)v;
	else if (strcmp(a, "--releases") == 0)
		bad = parse_int(val, 1, MAX_RELEASES, &v), o->shape.releases = (int)v, o->releases_given = 1;
	else if (strcmp(a, "--branch") == 0)
		bad = parse_int(val, 0, 25, &v), o->shape.branch = (unsigned)v;
	else if (strcmp(a, "--churn") == 0)
		bad = parse_int(val, 0, 100, &v), o->shape.churn = (unsigned)v;
	else if (strcmp(a, "--zipf") == 0)
		bad = parse_double(val, 0.1, 4.0, &o->shape.zipf);
	else if (strcmp(a, "--end") == 0) {
		if (strcmp(val, "now") == 0)
			o->end = (int64_t)time(NULL);
		else
			bad = parse_int(val, 0, INT32_MAX * 4LL, &v), o->end = v;
	} else
		bad = -1;
	return bad;
}

int main(int argc, char **argv)
{
	struct opts o = { .services = 0, .end = DEFAULT_END,
			  .shape = { .functions = 4000, .paths = DEFAULT_PATHS, .zipf = DEFAULT_ZIPF,
				     .releases = 2 },
			  .gen = { .interval = 10, .hz = 100, .seed = 1 } };
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && apply_shape(&o, argv[i + 1])) {
			fprintf(stderr, "unhex-workload: bad --shape %s\n", argv[i + 1]);
			usage(stderr);
			return 2;
		}
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--quiet") == 0) {
			o.quiet = 1;
			continue;
		}
		if (!val) {
			usage(stderr);
			return 2;
		}
		i++;
		if (parse_opt(&o, a, val)) {
			fprintf(stderr, "unhex-workload: bad %s %s\n", a, val);
			usage(stderr);
			return 2;
		}
	}
	if (!o.out || !o.services || !o.instances || !o.minutes ||
	    (int64_t)o.minutes * 60 < o.gen.interval || (int64_t)o.minutes * 60 < o.cadence) {
		usage(stderr);
		return 2;
	}
	if (o.daily && !o.releases_given)
		o.shape.releases = o.minutes / (24 * 60) > 0 ? o.minutes / (24 * 60) : 1;
	if (o.debug_dir && strcmp(o.debug_dir, o.out) == 0) {
		fprintf(stderr, "unhex-workload: --debug-dir must differ from --out (both get a manifest.tsv)\n");
		return 2;
	}
	rc = generate(&o);
	if (rc) {
		fprintf(stderr, "unhex-workload: %s (%s)\n", err_str(rc), errno ? strerror(errno) : "");
		return 1;
	}
	return 0;
}
