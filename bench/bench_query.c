/*
 * bench_query.c - bench-query: in-process time of query_render() over an
 * existing store (the data directory a stopped `unhex serve` left), to
 * separate the engine's cost from HTTP's in bench/bench_query.sh.
 *
 *   bench-query --data DIR --query SELECTOR --from T --until T
 *               [--tenant T] [--runs N] [--max-nodes N] [--compact]
 *               [--no-symbolizer] [--no-memo] [--timeout-s S] [--out FILE]
 *
 * Opens the store, and, like `unhex serve`, a symbolization service over it
 * with no debuginfod upstream (so the query runs the same symbolize step as
 * the server does, with the server's symbolization memo; --no-memo goes
 * without the memo, --no-symbolizer skips the step).  Times the first query_render
 * (cold: nothing of this store is in memory yet) and then N more (warm,
 * median and min).  With --compact it then times store_compact() and the
 * same cold/warm series again.  T is anything time_parse() accepts.
 * --timeout-s replaces the server's 30 s query deadline (a query under
 * callgrind on a busy machine can take longer; bench/callgrind.sh).
 * --out writes the last response body.  Prints one `key=value` line per
 * phase for scripts; the process's peak RSS is on the last line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/timeparse.h"
#include "debuginfo/debuginfo.h"
#include "query/query.h"
#include "storage/storage.h"

#define MAX_RUNS 1000
#define MAX_RESPONSE ((size_t)1 << 30) /* one render's flamebearer JSON */

struct args {
	const char *data;
	const char *tenant;
	const char *query;
	const char *from;
	const char *until;
	const char *out;
	int runs;
	int64_t max_nodes;
	int64_t timeout_s;
	int compact;
	int no_sym;
	int no_memo;
};

/* CPU time of this thread: on a shared machine it moves less than wall time. */
static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int usage(void)
{
	fprintf(stderr, "usage: bench-query --data DIR --query SELECTOR --from T --until T\n"
			"                   [--tenant T] [--runs N] [--max-nodes N] [--compact]\n"
			"                   [--no-symbolizer] [--no-memo] [--timeout-s S] [--out FILE]\n");
	return 2;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->tenant = "anonymous";
	a->runs = 10;
	for (i = 1; i < argc; i++) {
		const char *k = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(k, "--compact")) {
			a->compact = 1;
			continue;
		}
		if (!strcmp(k, "--no-symbolizer")) {
			a->no_sym = 1;
			continue;
		}
		if (!strcmp(k, "--no-memo")) {
			a->no_memo = 1;
			continue;
		}
		if (!v)
			return -1;
		i++;
		if (!strcmp(k, "--data"))
			a->data = v;
		else if (!strcmp(k, "--tenant"))
			a->tenant = v;
		else if (!strcmp(k, "--query"))
			a->query = v;
		else if (!strcmp(k, "--from"))
			a->from = v;
		else if (!strcmp(k, "--until"))
			a->until = v;
		else if (!strcmp(k, "--out"))
			a->out = v;
		else if (!strcmp(k, "--runs"))
			a->runs = atoi(v);
		else if (!strcmp(k, "--max-nodes"))
			a->max_nodes = strtoll(v, NULL, 10);
		else if (!strcmp(k, "--timeout-s"))
			a->timeout_s = strtoll(v, NULL, 10);
		else
			return -1;
	}
	if (!a->data || !a->query || !a->from || !a->until || a->runs < 1 || a->runs > MAX_RUNS ||
	    a->timeout_s < 0 || a->timeout_s > 86400)
		return -1;
	return 0;
}

/* One cold query and `runs` warm ones; prints a RESULT line for `phase`. */
static int measure(struct store *st, const struct args *a, const struct query_params *p,
		   const char *phase, struct buf *out, struct err_msg *msg)
{
	int64_t t[MAX_RUNS + 1], c[MAX_RUNS + 1];
	int i, rc;

	for (i = 0; i <= a->runs; i++) {
		int64_t t0, c0;

		buf_reset(out);
		t0 = clock_mono_ns();
		c0 = thread_cpu_ns();
		rc = query_render(st, a->tenant, p, out, msg);
		t[i] = clock_mono_ns() - t0;
		c[i] = thread_cpu_ns() - c0;
		if (rc)
			return rc;
	}
	qsort(t + 1, (size_t)a->runs, sizeof(t[0]), cmp_i64);
	qsort(c + 1, (size_t)a->runs, sizeof(c[0]), cmp_i64);
	printf("RESULT phase=%s cold_ms=%.2f warm_median_ms=%.2f warm_min_ms=%.2f "
	       "warm_max_ms=%.2f cold_cpu_ms=%.2f warm_cpu_median_ms=%.2f warm_cpu_min_ms=%.2f "
	       "runs=%d bytes=%zu\n",
	       phase, t[0] / 1e6, t[1 + a->runs / 2] / 1e6, t[1] / 1e6, t[a->runs] / 1e6,
	       c[0] / 1e6, c[1 + a->runs / 2] / 1e6, c[1] / 1e6, a->runs, out->len);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	struct store_options so = { 0 };
	struct debuginfo_options sy = { 0 };
	struct store *st = NULL;
	struct debuginfo *sym = NULL;
	struct query_symmemo *memo = NULL;
	struct query_params p = { 0 };
	struct err_msg msg = { { 0 } };
	struct buf out;
	struct rusage ru;
	int64_t now = clock_wall_ns(), t0;
	int rc;

	if (parse_args(argc, argv, &a))
		return usage();
	buf_init(&out, MAX_RESPONSE);
	if (time_parse(a.from, now, &p.from_ns, &msg) ||
	    time_parse(a.until, now, &p.until_ns, &msg)) {
		rc = 1;
		goto out;
	}
	p.query = a.query;
	p.max_nodes = a.max_nodes;
	p.limits.timeout_ns = a.timeout_s * 1000000000LL;
	so.dir = a.data;
	t0 = clock_mono_ns();
	if ((rc = store_open(&so, &st, &msg)))
		goto out;
	if (!a.no_sym) {
		sy.data_dir = a.data;
		sy.debuginfod_urls = "";
		if ((rc = debuginfo_open(st, &sy, &sym, &msg)))
			goto out;
		p.limits.symbolizer = sym;
		if (!a.no_memo && (rc = query_symmemo_new(sym, 0, &memo)))
			goto out;
		p.limits.symmemo = memo;
	}
	printf("RESULT phase=open open_ms=%.2f\n", (clock_mono_ns() - t0) / 1e6);
	if ((rc = measure(st, &a, &p, "before_compact", &out, &msg)))
		goto out;
	if (a.compact) {
		t0 = clock_mono_ns();
		if ((rc = store_compact(st, &msg)))
			goto out;
		printf("RESULT phase=compact compact_ms=%.1f\n", (clock_mono_ns() - t0) / 1e6);
		if ((rc = measure(st, &a, &p, "after_compact", &out, &msg)))
			goto out;
	}
	if (a.out) {
		FILE *f = fopen(a.out, "wb");

		if (!f || fwrite(out.data, 1, out.len, f) != out.len) {
			rc = err_set(&msg, ERR_IO, "cannot write %s", a.out);
			if (f)
				fclose(f);
			goto out;
		}
		if (fclose(f)) {
			rc = err_set(&msg, ERR_IO, "cannot write %s", a.out);
			goto out;
		}
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("RESULT phase=end peak_rss_kib=%ld\n", ru.ru_maxrss);
out:
	if (rc)
		fprintf(stderr, "bench-query: %s\n", msg.text[0] ? msg.text : "failed");
	buf_release(&out);
	query_symmemo_free(memo);
	debuginfo_close(sym);
	store_close(st);
	return rc ? 1 : 0;
}
