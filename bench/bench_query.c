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
#include <getopt.h>
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

#include "server_env.h"

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

enum { O_DATA = 256, O_TENANT, O_QUERY, O_FROM, O_UNTIL, O_OUT, O_RUNS, O_MAXN, O_TIMEOUT,
       O_COMPACT, O_NOSYM, O_NOMEMO };

static const struct option opts[] = {
	{ "data", required_argument, NULL, O_DATA },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "query", required_argument, NULL, O_QUERY },
	{ "from", required_argument, NULL, O_FROM },
	{ "until", required_argument, NULL, O_UNTIL },
	{ "out", required_argument, NULL, O_OUT },
	{ "runs", required_argument, NULL, O_RUNS },
	{ "max-nodes", required_argument, NULL, O_MAXN },
	{ "timeout-s", required_argument, NULL, O_TIMEOUT },
	{ "compact", no_argument, NULL, O_COMPACT },
	{ "no-symbolizer", no_argument, NULL, O_NOSYM },
	{ "no-memo", no_argument, NULL, O_NOMEMO },
	{ NULL, 0, NULL, 0 },
};

static int parse_args(int argc, char **argv, struct args *a)
{
	int c;

	memset(a, 0, sizeof(*a));
	a->tenant = "anonymous";
	a->runs = 10;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_DATA: a->data = optarg; break;
		case O_TENANT: a->tenant = optarg; break;
		case O_QUERY: a->query = optarg; break;
		case O_FROM: a->from = optarg; break;
		case O_UNTIL: a->until = optarg; break;
		case O_OUT: a->out = optarg; break;
		case O_RUNS: a->runs = atoi(optarg); break;
		case O_MAXN: a->max_nodes = strtoll(optarg, NULL, 10); break;
		case O_TIMEOUT: a->timeout_s = strtoll(optarg, NULL, 10); break;
		case O_COMPACT: a->compact = 1; break;
		case O_NOSYM: a->no_sym = 1; break;
		case O_NOMEMO: a->no_memo = 1; break;
		default: return -1;
		}
	}
	if (optind != argc || !a->data || !a->query || !a->from || !a->until || a->runs < 1 ||
	    a->runs > MAX_RUNS || a->timeout_s < 0 || a->timeout_s > 86400)
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
	struct bench_server srv = { 0 };
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
	t0 = clock_mono_ns();
	if ((rc = bench_server_open(a.data, a.no_sym, a.no_memo, &srv, &msg)))
		goto out;
	p.limits.symbolizer = srv.sym;
	p.limits.symmemo = srv.memo;
	printf("RESULT phase=open open_ms=%.2f\n", (clock_mono_ns() - t0) / 1e6);
	if ((rc = measure(srv.st, &a, &p, "before_compact", &out, &msg)))
		goto out;
	if (a.compact) {
		t0 = clock_mono_ns();
		if ((rc = store_compact(srv.st, &msg)))
			goto out;
		printf("RESULT phase=compact compact_ms=%.1f\n", (clock_mono_ns() - t0) / 1e6);
		if ((rc = measure(srv.st, &a, &p, "after_compact", &out, &msg)))
			goto out;
	}
	if (a.out && (rc = bench_write_file(a.out, &out, &msg)))
		goto out;
	getrusage(RUSAGE_SELF, &ru);
	printf("RESULT phase=end peak_rss_kib=%ld\n", ru.ru_maxrss);
out:
	if (rc)
		fprintf(stderr, "bench-query: %s\n", msg.text[0] ? msg.text : "failed");
	buf_release(&out);
	bench_server_close(&srv);
	return rc ? 1 : 0;
}
