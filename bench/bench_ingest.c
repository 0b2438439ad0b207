/*
 * bench_ingest.c - bench-ingest: single-thread ingest throughput and bytes
 * on disk for a workload directory written by unhex-workload.
 *
 *   bench-ingest --manifest DIR [--data DIR] [--tenant T] [--judge]
 *
 * --judge opens the debug-info service on the store and gives ingest the
 * server's hooks (web_ingest_hooks_init), so the cost of judging binaries
 * without names at ingest is inside the measure, as in `unhex serve`.
 * Ingest's arenas take their blocks from a block pool of the server's size
 * (base/blockpool.h), as in `unhex serve`.
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

#include "base/blockpool.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "debuginfo/debuginfo.h"
#include "ingest/ingest.h"
#include "storage/storage.h"
#include "web/web.h"
#include "workload_files.h"

static int rm_cb(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb, (void)type, (void)ftw;
	return remove(path);
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

static int run(const struct bench_workload *w, const char *data, const char *tenant, int judge,
	       struct results *r, struct err_msg *msg)
{
	struct store_options so = { .dir = data };
	struct debuginfo_options dopt = { .data_dir = data, .debuginfod_urls = "" };
	struct debuginfo *sym = NULL;
	struct ingest_hooks hooks;
	struct ingest_limits lim;
	struct blockpool pool;
	struct store *st = NULL;
	int64_t t0, c0;
	size_t i;
	int rc;

	ingest_limits_default(&lim);
	if (blockpool_init(&pool, (size_t)32 << 20, (size_t)4 << 20))
		return err_set(msg, ERR_NOMEM, "out of memory");
	lim.pool = &pool;
	if ((rc = store_open(&so, &st, msg))) {
		blockpool_release(&pool);
		return rc;
	}
	if (judge) {
		if ((rc = debuginfo_open(st, &dopt, &sym, msg)))
			goto out;
		web_ingest_hooks_init(&hooks, sym);
		lim.hooks = &hooks;
	}
	t0 = clock_mono_ns();
	c0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	for (i = 0; i < w->n; i++) {
		const struct bench_entry *e = &w->e[i];
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
	r->disk_flush = bench_dir_bytes(data);
	if ((rc = store_stats(st, stats_cb, r, msg)))
		goto out;
out:
	debuginfo_close(sym);
	store_close(st);
	blockpool_release(&pool);
	if (rc == 0)
		r->disk_close = bench_dir_bytes(data);
	return rc;
}

int main(int argc, char **argv)
{
	const char *manifest = NULL, *data = NULL, *tenant = "anonymous";
	char tmpl[] = "/tmp/unhex-bench.XXXXXX";
	struct bench_workload w = { 0 };
	struct results r = { 0 };
	struct err_msg msg = { "" };
	struct rusage ru;
	long rss_loaded;
	int i, rc, made_tmp = 0, judge = 0;
	double mb;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--manifest") == 0 && i + 1 < argc)
			manifest = argv[++i];
		else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc)
			data = argv[++i];
		else if (strcmp(argv[i], "--tenant") == 0 && i + 1 < argc)
			tenant = argv[++i];
		else if (strcmp(argv[i], "--judge") == 0)
			judge = 1;
		else
			manifest = NULL, i = argc;
	}
	if (!manifest) {
		fprintf(stderr, "usage: bench-ingest --manifest DIR [--data DIR] [--tenant T] [--judge]\n");
		return 2;
	}
	if ((rc = bench_workload_load(manifest, &w, &msg)))
		goto out;
	rss_loaded = bench_rss_kib("VmRSS:");
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
	if ((rc = run(&w, data, tenant, judge, &r, &msg)))
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
	bench_workload_release(&w);
	return rc ? 1 : 0;
}
