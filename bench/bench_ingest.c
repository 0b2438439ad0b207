/*
 * bench_ingest.c - bench-ingest: single-thread ingest throughput and bytes
 * on disk for a workload directory written by unhex-workload.
 *
 *   bench-ingest --manifest DIR [--data DIR] [--tenant T]
 *
 * Loads every file of DIR/manifest.tsv into memory first, opens a fresh
 * store (a temp dir under /tmp unless --data is given, which must be empty
 * or absent), then times ingest_legacy() over all files on this one thread.
 * Then flushes the store and sums the sizes of every file in its directory
 * (SSTs, WAL, MANIFEST, OPTIONS...), once after store_flush() and once after
 * store_close(), against the gzipped pprof bytes.  Two sample counts are
 * reported: pprof samples (Sample messages decoded, what Pyroscope counts)
 * and stored pairs ((stack, value) per sample type after aggregation).  Prints a human summary
 * and, last, one `key=value` line per result for scripts (bench/run.sh).
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/grow.h"
#include "ingest/ingest.h"
#include "storage/storage.h"

#define MAX_FILE (256u * 1024 * 1024)
#define MAX_ENTRIES (10u * 1000 * 1000)

struct entry {
	char *name;
	int64_t unix_s;
	char *data; /* owned */
	size_t len;
};

struct workload {
	struct entry *e;
	size_t n, cap;
	uint64_t bytes;
};

static void workload_release(struct workload *w)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		free(w->e[i].name);
		free(w->e[i].data);
	}
	free(w->e);
}

static int read_all(const char *path, char **out, size_t *len, struct err_msg *msg)
{
	struct buf b;
	int rc;

	buf_init(&b, MAX_FILE);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		return err_set(msg, rc, "%s: cannot read", path);
	}
	*out = buf_detach(&b, len);
	return 0;
}

/* Parses `<relative path>\t<name>\t<unix seconds>` lines and loads the files. */
static int load_manifest(const char *dir, struct workload *w, struct err_msg *msg)
{
	char path[4096], *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/manifest.tsv", dir);
	f = fopen(path, "r");
	if (!f)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	while (rc == 0 && (n = getline(&line, &cap, f)) > 0) {
		char *tab1, *tab2, *end;
		struct entry e = { 0 };
		lineno++;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		tab1 = strchr(line, '\t');
		tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
		if (!tab2) {
			rc = err_set(msg, ERR_INVALID, "manifest line %zu: want 3 tab-separated fields", lineno);
			break;
		}
		*tab1 = *tab2 = '\0';
		e.unix_s = strtoll(tab2 + 1, &end, 10);
		if (*end || end == tab2 + 1) {
			rc = err_set(msg, ERR_INVALID, "manifest line %zu: bad time", lineno);
			break;
		}
		rc = GROW(w->e, w->cap, w->n + 1, MAX_ENTRIES, NULL);
		if (rc) {
			err_set(msg, rc, "manifest: %s", rc == ERR_TOO_LARGE ? "too many entries"
									 : "out of memory");
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, line);
		if ((rc = read_all(path, &e.data, &e.len, msg)))
			break;
		e.name = strdup(tab1 + 1);
		if (!e.name) {
			free(e.data);
			rc = ERR_NOMEM;
			break;
		}
		w->e[w->n++] = e;
		w->bytes += e.len;
	}
	free(line);
	fclose(f);
	if (rc == 0 && w->n == 0)
		rc = err_set(msg, ERR_INVALID, "%s/manifest.tsv: empty", dir);
	return rc;
}

/* ---- directory sizes -------------------------------------------------------- */

static uint64_t du_total;

static int du_cb(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)path, (void)ftw;
	if (type == FTW_F)
		du_total += (uint64_t)sb->st_size;
	return 0;
}

static uint64_t dir_bytes(const char *dir)
{
	du_total = 0;
	nftw(dir, du_cb, 16, FTW_PHYS);
	return du_total;
}

static int rm_cb(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
}

static long rss_kib(const char *field)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			v = strtol(line + strlen(field) + 1, NULL, 10);
	fclose(f);
	return v;
}

static int64_t cpu_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the benchmark ------------------------------------------------------------ */

struct results {
	uint64_t profiles, samples, pprof_samples;
	double wall_s, thread_cpu_s;
	uint64_t disk_flush, disk_close;
	uint64_t cf_bytes[STORE_CF_COUNT];
	uint64_t stacks, locations, series;
};

static int stats_cb(void *ctx, const struct store_tenant_stats *s)
{
	struct results *r = ctx;
	int i;

	for (i = 0; i < STORE_CF_COUNT; i++)
		r->cf_bytes[i] += s->bytes[i];
	r->stacks += s->stacks;
	r->locations += s->locations;
	r->series += s->series;
	return 0;
}

static int run(const struct workload *w, const char *data, const char *tenant, struct results *r,
	       struct err_msg *msg)
{
	struct store_options so = { .dir = data };
	struct ingest_limits lim;
	struct store *st = NULL;
	int64_t t0, c0;
	size_t i;
	int rc;

	ingest_limits_default(&lim);
	if ((rc = store_open(&so, &st, msg)))
		return rc;
	t0 = clock_mono_ns();
	c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	for (i = 0; i < w->n; i++) {
		const struct entry *e = &w->e[i];
		struct ingest_stats is = { 0 };
		int64_t from = e->unix_s * 1000000000;
		rc = ingest_legacy(st, &lim, tenant, e->name, from, from + 10 * (int64_t)1000000000,
				   e->data, e->len, &is, msg);
		if (rc) {
			char text[sizeof(msg->text)];
			snprintf(text, sizeof(text), "%s", msg->text);
			err_reset(msg, rc, "file %zu (%s): %s", i, e->name, text);
			goto out;
		}
		r->profiles += is.profiles;
		r->samples += is.samples;
		r->pprof_samples += is.pprof_samples;
	}
	r->wall_s = (double)(clock_mono_ns() - t0) / 1e9;
	r->thread_cpu_s = (double)(cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e9;
	if ((rc = store_flush(st, msg)))
		goto out;
	r->disk_flush = dir_bytes(data);
	if ((rc = store_stats(st, stats_cb, r, msg)))
		goto out;
out:
	store_close(st);
	if (rc == 0)
		r->disk_close = dir_bytes(data);
	return rc;
}

int main(int argc, char **argv)
{
	const char *manifest = NULL, *data = NULL, *tenant = "anonymous";
	char tmpl[] = "/tmp/unhex-bench.XXXXXX";
	struct workload w = { 0 };
	struct results r = { 0 };
	struct err_msg msg = { "" };
	struct rusage ru;
	long rss_loaded;
	int i, rc, made_tmp = 0;
	double mb;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--manifest") == 0 && i + 1 < argc)
			manifest = argv[++i];
		else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			data = argv[++i];
		else if (strcmp(argv[i], "--tenant") == 0 && i + 1 < argc)
			tenant = argv[++i];
		else
			manifest = NULL, i = argc;
	}
	if (!manifest) {
		fprintf(stderr, "usage: bench-ingest --manifest DIR [--data DIR] [--tenant T]\n");
		return 2;
	}
	if ((rc = load_manifest(manifest, &w, &msg)))
		goto out;
	rss_loaded = rss_kib("VmRSS:");
	if (!data) {
		data = mkdtemp(tmpl);
		if (!data) {
			rc = err_set(&msg, ERR_IO, "mkdtemp: %s", strerror(errno));
			goto out;
		}
		made_tmp = 1;
	}
	fprintf(stderr, "bench-ingest: %zu files, %.1f MB gzipped, loaded; ingesting into %s\n", w.n,
		(double)w.bytes / 1e6, data);
	if ((rc = run(&w, data, tenant, &r, &msg)))
		goto out;
	getrusage(RUSAGE_SELF, &ru);
	mb = (double)w.bytes / 1e6;
	printf("files               %zu (%.1f MB gzipped pprof)\n", w.n, mb);
	printf("decoded             %" PRIu64 " pprof samples (Sample messages)\n", r.pprof_samples);
	printf("stored              %" PRIu64 " profiles, %" PRIu64 " (stack, value) pairs, %" PRIu64
	       " series\n", r.profiles, r.samples, r.series);
	printf("symbols             %" PRIu64 " stacks, %" PRIu64 " locations\n", r.stacks, r.locations);
	printf("ingest wall         %.2f s (thread CPU %.2f s)\n", r.wall_s, r.thread_cpu_s);
	printf("ingest rate         %.0f pprof samples/s (%.0f per thread CPU-second), %.0f stored pairs/s,\n"
	       "                    %.0f pprofs/s, %.0f stored profiles/s, %.1f MB/s gz\n",
	       (double)r.pprof_samples / r.wall_s, (double)r.pprof_samples / r.thread_cpu_s,
	       (double)r.samples / r.wall_s, (double)w.n / r.wall_s, (double)r.profiles / r.wall_s,
	       mb / r.wall_s);
	printf("disk after flush    %.2f MB (%.1f %% of gz input, %.2f bytes/sample)\n",
	       (double)r.disk_flush / 1e6, 100.0 * (double)r.disk_flush / (double)w.bytes,
	       r.samples ? (double)r.disk_flush / (double)r.samples : 0);
	printf("disk after close    %.2f MB (%.1f %% of gz input, %.2f bytes/sample)\n",
	       (double)r.disk_close / 1e6, 100.0 * (double)r.disk_close / (double)w.bytes,
	       r.samples ? (double)r.disk_close / (double)r.samples : 0);
	for (i = 0; i < STORE_CF_COUNT; i++)
		printf("  cf %-16s %.2f MB\n", store_cf_name((enum store_cf)i), (double)r.cf_bytes[i] / 1e6);
	printf("peak RSS            %.1f MiB (input held in memory: %.1f MiB; RSS after loading %.1f MiB)\n",
	       (double)ru.ru_maxrss / 1024, (double)w.bytes / 1048576.0, (double)rss_loaded / 1024);
	printf("RESULT files=%zu gz_bytes=%" PRIu64 " profiles=%" PRIu64 " samples=%" PRIu64
	       " pprof_samples=%" PRIu64 " wall_s=%.3f cpu_s=%.3f samples_per_s=%.0f"
	       " pprof_samples_per_s=%.0f pprof_samples_per_cpu_s=%.0f profiles_per_s=%.0f mb_per_s=%.2f"
	       " disk_flush=%" PRIu64 " disk_close=%" PRIu64 " peak_rss_kib=%ld loaded_rss_kib=%ld\n",
	       w.n, w.bytes, r.profiles, r.samples, r.pprof_samples, r.wall_s, r.thread_cpu_s,
	       (double)r.samples / r.wall_s, (double)r.pprof_samples / r.wall_s,
	       (double)r.pprof_samples / r.thread_cpu_s, (double)r.profiles / r.wall_s, mb / r.wall_s,
	       r.disk_flush,
	       r.disk_close, ru.ru_maxrss, rss_loaded);
out:
	if (rc)
		fprintf(stderr, "bench-ingest: %s: %s\n", err_str(rc), msg.text);
	if (made_tmp)
		nftw(data, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	workload_release(&w);
	return rc ? 1 : 0;
}
