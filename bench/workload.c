/*
 * workload.c - unhex-workload: a deterministic generator of realistic
 * raw-address CPU profiles, as a fleet of Go-like agents would push them.
 *
 *   unhex-workload --out DIR --services N --instances M --minutes T
 *                  [--interval 10] [--end now|UNIX] [--seed S]
 *                  [--functions F] [--hz 100] [--debug-dir DIR] [--quiet]
 *
 * Model, per service:
 *   - a main binary and four shared libraries (libc, libssl, libstdc++ and a
 *     service library), each with a stable build ID (hex of a hash of
 *     name + version) and its executable segment at a fixed file offset;
 *   - F functions laid out in those text segments, arranged in levels so
 *     that every call goes one to three levels down; a call path is a walk
 *     from `main` of depth 10..60;
 *   - a pool of call paths ranked by a Zipf law: a few hot stacks dominate,
 *     then a long tail.  The leaf PC moves among a few instructions.
 * Every instance is a process with its own load addresses (ASLR).  The first
 * half of the time range runs version 1.4; instances roll to 1.5 around the
 * middle: new build IDs for the main binary and the service library, some
 * functions grown (addresses shift) and a few hot paths swapped.
 *
 * Each profile covers `interval` seconds at `hz` samples per second
 * (period 10 ms at 100 Hz), sample types samples/count and cpu/nanoseconds,
 * no function names (the stripped-production case), gzipped like Go's
 * Profile.Write.  Files: DIR/<service>/<instance>/<unix>.pb.gz, listed in
 * DIR/manifest.tsv as `<relative path>\t<pyroscope name>\t<unix seconds>`.
 *
 * With --debug-dir, every build ID also gets a symbol file
 * DIR/<build-id>.debug (bench/elfsym.h): a real ELF whose PT_LOAD maps the
 * profiles' file offsets to FUNC symbols with realistic names (C++ for the
 * service's code and libstdc++, C for libc and libssl).  A function keeps
 * its name in both releases, so a 1.4/1.5 diff lines up by name.  The shared
 * libraries have one build ID for every service, hence one file, laid out
 * as in the first service (other services' code in them falls under those
 * names) and extended with more functions up to the largest text segment.
 * DIR/manifest.tsv lists `<file>\t<build-id>\t<binary path>\t<release>`
 * (release "1.4,1.5" for the shared libraries).  Profiles are the same bytes
 * with or without the flag.
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
#include "base/hash.h"
#include "bench/elfsym.h"
#include "tests/tools/pprof_writer.h"

#define N_BINS 5
#define MAX_CALLEES 6
#define LEVELS 120
#define PATHS 2500
#define MAX_DEPTH 64
#define ZIPF_S 1.75
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

struct binary {
	char path[256];
	char version[16];
	uint64_t text_off;  /* file offset of the executable segment */
	uint64_t text_size; /* grows with the functions laid out */
	int per_release;    /* build ID changes with the service version */
};

struct func {
	uint8_t bin;
	uint16_t level;
	uint8_t n_callees;
	uint32_t callees[MAX_CALLEES];
	uint32_t size[2]; /* bytes, per release */
	uint64_t off[2];  /* file offset, per release */
};

struct path {
	uint32_t first; /* index into model.pool of the root-first functions */
	uint16_t depth;
	uint8_t leaf_variants;
};

struct model {
	char service[64];
	struct binary bins[N_BINS];
	char build_id[2][N_BINS][41];
	struct func *funcs;
	size_t n_funcs;
	uint32_t *pool; /* function indexes of every path, root first */
	size_t n_pool;
	struct path paths[PATHS];
	uint32_t rank_path[2][PATHS]; /* Zipf rank -> path, per release */
	double cdf[PATHS];
};

static const char *const release_names[2] = { "1.4", "1.5" };

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
	int b, r;

	for (b = 0; b < N_BINS; b++) {
		struct binary *bin = &m->bins[b];
		snprintf(bin->path, sizeof(bin->path), spec[b].fmt, m->service);
		bin->text_off = spec[b].text_off;
		bin->per_release = spec[b].per_release;
		for (r = 0; r < 2; r++)
			build_id(bin->path, spec[b].per_release ? release_names[r] : spec[b].version,
				 m->build_id[r][b]);
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

/* Lays the functions of each binary out in its text, per release. */
static void layout(struct model *m, uint64_t *rs)
{
	uint64_t next[2][N_BINS];
	size_t i;
	int b, r;

	for (r = 0; r < 2; r++)
		for (b = 0; b < N_BINS; b++)
			next[r][b] = m->bins[b].text_off + 0x40;
	for (i = 0; i < m->n_funcs; i++) {
		struct func *f = &m->funcs[i];
		/* Sizes follow a rough log-uniform law between 48 bytes and 6 KiB. */
		uint32_t size = (uint32_t)(48.0 * exp(rnd_unit(rs) * log(128.0)));
		size = (size + 15) & ~15u;
		f->size[0] = size;
		/* Release 1.5 changed about one function in eight of its own code. */
		f->size[1] = size;
		if (m->bins[f->bin].per_release && rnd_below(rs, 8) == 0)
			f->size[1] = size + 16 * (uint32_t)(1 + rnd_below(rs, 12));
		for (r = 0; r < 2; r++) {
			f->off[r] = next[r][f->bin];
			next[r][f->bin] += f->size[r];
		}
	}
	for (b = 0; b < N_BINS; b++) {
		uint64_t end = next[1][b] > next[0][b] ? next[1][b] : next[0][b];
		m->bins[b].text_size = ((end - m->bins[b].text_off) + 0xfff) & ~0xfffULL;
	}
}

/* Levels, binaries and callees: every call goes one to three levels down. */
static int build_graph(struct model *m, uint64_t *rs)
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
	layout(m, rs);
	return 0;
}

/* Draws the call paths, their Zipf ranks and the 1.5 rank changes. */
static int build_paths(struct model *m, uint64_t *rs)
{
	double total = 0;
	size_t p, k;

	m->pool = calloc((size_t)PATHS * MAX_DEPTH, sizeof(*m->pool));
	if (!m->pool)
		return ERR_NOMEM;
	for (p = 0; p < PATHS; p++) {
		struct path *pa = &m->paths[p];
		/* Depth: triangular between 10 and 60, mean 35. */
		unsigned want = 10 + (unsigned)rnd_below(rs, 26) + (unsigned)rnd_below(rs, 26);
		uint32_t f = 0;
		pa->first = (uint32_t)m->n_pool;
		for (;;) {
			m->pool[m->n_pool++] = f;
			pa->depth++;
			if (pa->depth >= want || m->funcs[f].n_callees == 0)
				break;
			f = m->funcs[f].callees[rnd_below(rs, m->funcs[f].n_callees)];
		}
		pa->leaf_variants = (uint8_t)(1 + rnd_below(rs, 4));
	}
	for (k = 0; k < PATHS; k++) {
		total += 1.0 / pow((double)(k + 1), ZIPF_S);
		m->cdf[k] = total;
		m->rank_path[0][k] = (uint32_t)k;
		m->rank_path[1][k] = (uint32_t)k;
	}
	for (k = 0; k < PATHS; k++)
		m->cdf[k] /= total;
	/* 1.5 shifts the hot spots: a few hot ranks trade places with warm ones. */
	for (k = 0; k < 6; k++) {
		size_t a = rnd_below(rs, 10), b = 10 + rnd_below(rs, 200);
		uint32_t t = m->rank_path[1][a];
		m->rank_path[1][a] = m->rank_path[1][b];
		m->rank_path[1][b] = t;
	}
	return 0;
}

static int model_init(struct model *m, const char *service, size_t n_funcs, uint64_t seed)
{
	uint64_t rs = seed_of(seed, service, 0, 0);
	int rc;

	memset(m, 0, sizeof(*m));
	snprintf(m->service, sizeof(m->service), "%s", service);
	m->n_funcs = n_funcs;
	init_binaries(m);
	if ((rc = build_graph(m, &rs)) || (rc = build_paths(m, &rs)))
		return rc;
	return 0;
}

static void model_release(struct model *m)
{
	free(m->funcs);
	free(m->pool);
}

/* ---- one profile ---------------------------------------------------------- */

struct instance {
	const struct model *m;
	int index;
	int64_t phase;   /* seconds after the interval start the agent uploads */
	int64_t rollout; /* unix time this instance restarts as 1.5 */
};

/* Load address of binary b for this process (ASLR): page-aligned, random. */
static uint64_t load_base(const struct instance *in, int release, int b, uint64_t seed)
{
	uint64_t h = seed_of(seed, in->m->service, (uint64_t)in->index * 4 + (uint64_t)release, (uint64_t)b + 99);

	if (b == 0)
		return 0x550000000000ULL + ((h & 0xfffffffULL) << 12);
	return 0x7f0000000000ULL + ((h & 0xfffffffULL) << 12);
}

static uint32_t draw_rank(const struct model *m, uint64_t *rs)
{
	double u = rnd_unit(rs);
	size_t lo = 0, hi = PATHS - 1;

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
};

static int write_profile(const struct instance *in, int release, int64_t t, const struct gen_opts *o,
			 struct buf *out)
{
	static const char *const types[] = { "samples", "count", "cpu", "nanoseconds" };
	const struct model *m = in->m;
	uint64_t rs = seed_of(o->seed, m->service, (uint64_t)in->index, (uint64_t)t);
	int64_t period = 1000000000 / o->hz;
	uint64_t map_ids[N_BINS], locs[MAX_DEPTH], base[N_BINS];
	struct pw_meta meta;
	size_t n_draws, d;
	struct pw w;
	int rc, b;

	if ((rc = pw_init(&w, 2)))
		goto out;
	for (b = 0; b < N_BINS; b++) {
		const struct binary *bin = &m->bins[b];
		base[b] = load_base(in, release, b, o->seed);
		if ((rc = pw_mapping(&w, base[b] + bin->text_off, base[b] + bin->text_off + bin->text_size,
				     bin->text_off, bin->path, m->build_id[release][b], &map_ids[b])))
			goto out;
	}
	/* CPU use varies between 70 % and 130 % of one core. */
	n_draws = (size_t)((double)o->hz * (double)o->interval * (0.7 + 0.6 * rnd_unit(&rs)));
	for (d = 0; d < n_draws; d++) {
		const struct path *pa = &m->paths[m->rank_path[release][draw_rank(m, &rs)]];
		const uint32_t *fs = m->pool + pa->first;
		int64_t values[2] = { 1, period };
		size_t k, n = pa->depth;

		for (k = 0; k < n; k++) {
			/* leaf first: k = 0 is the sampled PC, the rest return addresses */
			const struct func *f = &m->funcs[fs[n - 1 - k]];
			uint64_t pos;
			if (k == 0)
				pos = 4 * (1 + hash_combine(pa->first, rnd_below(&rs, pa->leaf_variants)) % (f->size[release] / 4 - 1));
			else
				pos = 5 + hash_combine(fs[n - 1 - k], fs[n - k]) % (f->size[release] - 8);
			/* runtime = memory_start + (file offset - mapping file_offset) */
			if ((rc = pw_location(&w, map_ids[f->bin], base[f->bin] + f->off[release] + pos,
					      &locs[k])))
				goto out;
		}
		if ((rc = pw_sample(&w, locs, n, NULL, values)))
			goto out;
	}
	meta = (struct pw_meta){ .type_unit = types, .period_type = "cpu", .period_unit = "nanoseconds",
				 .period = period, .time_nanos = t * 1000000000,
				 .duration_nanos = o->interval * 1000000000 };
	rc = pw_write(&w, &meta, 1, out);
out:
	pw_release(&w);
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
	int services, instances, minutes, quiet;
	int64_t end;
	size_t functions;
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
	uint64_t k = 0, end = bin->text_off + 0x40, limit = bin->text_off + text_size;
	uint8_t raw[20];
	struct err_msg msg = { { 0 } };
	struct elfsym w;
	char path[4096];
	size_t i;
	int rc;

	if ((rc = hex_to_bytes(id, raw, sizeof(raw))))
		return rc;
	/* elfsym_init leaves w releasable even when it fails. */
	if ((rc = elfsym_init(&w, raw, sizeof(raw), bin->text_off, text_size)))
		goto out;
	for (i = 0; i < m->n_funcs; i++) {
		const struct func *f = &m->funcs[i];
		if (f->bin != b)
			continue;
		if ((rc = add_symbol(&w, m, b, k++, f->off[r], f->size[r])))
			goto out;
		if (f->off[r] + f->size[r] > end)
			end = f->off[r] + f->size[r];
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
	fprintf(manifest, "%s.debug\t%s\t%s\t%s\n", id, id, bin->path,
		bin->per_release ? release_names[r] : "1.4,1.5");
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
			for (r = 0; r < (per_release ? 2 : 1) && !rc; r++, n++)
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

static int generate(const struct opts *o)
{
	int64_t start = o->end - (int64_t)o->minutes * 60, steps = (int64_t)o->minutes * 60 / o->gen.interval;
	struct model *models = calloc((size_t)o->services, sizeof(*models));
	struct instance *ins = calloc((size_t)o->services * (size_t)o->instances, sizeof(*ins));
	uint64_t files = 0, bytes = 0;
	char path[4096], name[64];
	FILE *manifest = NULL;
	struct buf b;
	int64_t k;
	int s, i, rc = 0;

	buf_init(&b, 256u * 1024 * 1024);
	if (!models || !ins) {
		rc = ERR_NOMEM;
		goto out;
	}
	for (s = 0; s < o->services; s++) {
		service_name(s, name, sizeof(name));
		if ((rc = model_init(&models[s], name, o->functions, o->gen.seed)))
			goto out;
		for (i = 0; i < o->instances; i++) {
			struct instance *in = &ins[s * o->instances + i];
			uint64_t h = seed_of(o->gen.seed, name, (uint64_t)i, 7);
			in->m = &models[s];
			in->index = i + 1;
			in->phase = (int64_t)(h % (uint64_t)o->gen.interval);
			/* a rolling deploy: instances restart one after another */
			in->rollout = start + (int64_t)o->minutes * 30 + (int64_t)i * 20;
			snprintf(path, sizeof(path), "%s/%s/i-%02d", o->out, name, in->index);
			if ((rc = mkdirs(path)))
				goto out;
		}
	}
	if (o->debug_dir && (rc = write_debug_files(models, o->services, o->debug_dir, o->quiet)))
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
				int64_t t = start + k * o->gen.interval + in->phase;
				int release = t >= in->rollout;
				char rel[256];
				buf_reset(&b);
				if ((rc = write_profile(in, release, t, &o->gen, &b)))
					goto out;
				snprintf(rel, sizeof(rel), "%s/i-%02d/%" PRId64 ".pb.gz", in->m->service,
					 in->index, t);
				snprintf(path, sizeof(path), "%s/%s", o->out, rel);
				if ((rc = write_file(path, &b)))
					goto out;
				fprintf(manifest, "%s\t%s.cpu{instance=i-%02d,env=prod,version=%s}\t%" PRId64 "\n",
					rel, in->m->service, in->index, release_names[release], t);
				files++;
				bytes += b.len;
			}
		}
	}
	if (fclose(manifest) != 0)
		rc = ERR_IO;
	manifest = NULL;
	if (!o->quiet && rc == 0)
		fprintf(stderr, "unhex-workload: %" PRIu64 " profiles, %.1f MB gzipped, in %s\n", files,
			(double)bytes / 1e6, o->out);
out:
	if (manifest)
		fclose(manifest);
	if (models)
		for (s = 0; s < o->services; s++)
			model_release(&models[s]);
	free(models);
	free(ins);
	buf_release(&b);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: unhex-workload --out DIR --services N --instances M --minutes T\n"
		"                      [--interval 10] [--end now|UNIX] [--seed S] [--functions F]\n"
		"                      [--hz 100] [--debug-dir DIR] [--quiet]\n");
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

int main(int argc, char **argv)
{
	struct opts o = { .services = 0, .end = DEFAULT_END, .functions = 4000,
			  .gen = { .interval = 10, .hz = 100, .seed = 1 } };
	long long v;
	int i, rc;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;
		if (strcmp(a, "--quiet") == 0) {
			o.quiet = 1;
			continue;
		}
		if (!val) {
			usage();
			return 2;
		}
		i++;
		if (strcmp(a, "--out") == 0)
			o.out = val;
		else if (strcmp(a, "--debug-dir") == 0)
			o.debug_dir = val;
		else if (strcmp(a, "--services") == 0)
			bad = parse_int(val, 1, 1000, &v), o.services = (int)v;
		else if (strcmp(a, "--instances") == 0)
			bad = parse_int(val, 1, 99, &v), o.instances = (int)v;
		else if (strcmp(a, "--minutes") == 0)
			bad = parse_int(val, 1, 60 * 24 * 31, &v), o.minutes = (int)v;
		else if (strcmp(a, "--interval") == 0)
			bad = parse_int(val, 1, 3600, &v), o.gen.interval = v;
		else if (strcmp(a, "--hz") == 0)
			bad = parse_int(val, 1, 10000, &v), o.gen.hz = (int)v;
		else if (strcmp(a, "--seed") == 0)
			bad = parse_int(val, 0, INT64_MAX, &v), o.gen.seed = (uint64_t)v;
		else if (strcmp(a, "--functions") == 0)
			bad = parse_int(val, 200, 1000000, &v), o.functions = (size_t)v;
		else if (strcmp(a, "--end") == 0) {
			if (strcmp(val, "now") == 0)
				o.end = (int64_t)time(NULL);
			else
				bad = parse_int(val, 0, INT32_MAX * 4LL, &v), o.end = v;
		} else
			bad = 1;
		if (bad) {
			fprintf(stderr, "unhex-workload: bad %s %s\n", a, val);
			usage();
			return 2;
		}
	}
	if (!o.out || !o.services || !o.instances || !o.minutes ||
	    (int64_t)o.minutes * 60 < o.gen.interval) {
		usage();
		return 2;
	}
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
