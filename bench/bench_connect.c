/*
 * bench_connect.c - bench-connect: one querier.v1 Connect call in process,
 * with the heap it took, for bench/query_mem.sh (issue 9: "peak memory of
 * that query stays within 4x the size of its answer").
 *
 *   bench-connect --data DIR --method M --body FILE [--json] [--tenant T]
 *                 [--runs N] [--no-symbolizer] [--out FILE]
 *
 * Opens the store and, as `unhex serve` does, a symbolization service with
 * no debuginfod upstream and a symbolization memo; then runs
 * query_connect_proto (query_connect with --json) on the request body in
 * FILE, N times (default 2: a cold call, then a warm one).  The limits are
 * the server's defaults (1 GiB memory budget) except the deadline, 10
 * minutes, so that a run under valgrind is not cut short.
 *
 * Heap: this program replaces malloc and its relatives (glibc supports
 * that by symbol interposition; each call forwards to glibc's own
 * allocator) and counts the usable bytes of every live block, RocksDB's
 * and libstdc++'s included.  For each call it prints the live heap before
 * the call, the highest live heap during it, and the live heap after it
 * with the answer still held; query_peak is the highest minus before.
 * Memory mapped by other means (RocksDB's file reads, thread stacks) is not
 * heap and is not counted.
 *
 * Under valgrind, whose own malloc replaces this one, the counts are 0
 * (bench/query_mem.sh reads massif's peak instead, as a cross-check).
 *
 * Prints one line per call (status: the HTTP status web/ gives rc):
 *   RESULT run=I rc=RC status=S bytes=ANSWER heap_before=B heap_peak=P
 *          query_peak=Q heap_after=A wall_ms=W cpu_ms=C msg=TEXT
 * and writes the last answer to --out (an error leaves it empty).
 */
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "query/query.h"
#include "storage/storage.h"
#include "debuginfo/debuginfo.h"

#include "server_env.h"

#define MAX_BODY (64u << 20)
/* The answer of one unbounded query: the query budget bounds it anyway. */
#define MAX_OUT ((size_t)QUERY_DEFAULT_MAX_BYTES)
#define TIMEOUT_NS (600LL * 1000000000LL)

/* ---- the heap counter ------------------------------------------------------ */

/* glibc's allocator under its own names. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static _Atomic int64_t heap_live;
static _Atomic int64_t heap_peak;

static void heap_add(int64_t d)
{
	int64_t now = atomic_fetch_add_explicit(&heap_live, d, memory_order_relaxed) + d;
	int64_t peak = atomic_load_explicit(&heap_peak, memory_order_relaxed);

	while (now > peak &&
	       !atomic_compare_exchange_weak_explicit(&heap_peak, &peak, now, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

static void *counted(void *p)
{
	if (p)
		heap_add((int64_t)malloc_usable_size(p));
	return p;
}

void *malloc(size_t n)
{
	return counted(__libc_malloc(n));
}

void *calloc(size_t n, size_t size)
{
	return counted(__libc_calloc(n, size));
}

void free(void *p)
{
	if (p)
		heap_add(-(int64_t)malloc_usable_size(p));
	__libc_free(p);
}

void *realloc(void *p, size_t n)
{
	int64_t old = p ? (int64_t)malloc_usable_size(p) : 0;
	void *q = __libc_realloc(p, n);

	if (q)
		heap_add((int64_t)malloc_usable_size(q) - old);
	else if (p && n == 0)
		heap_add(-old); /* glibc freed it */
	return q;
}

void *memalign(size_t align, size_t n)
{
	return counted(__libc_memalign(align, n));
}

void *aligned_alloc(size_t align, size_t n)
{
	return counted(__libc_memalign(align, n));
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)))
		return 22; /* EINVAL */
	p = counted(__libc_memalign(align, n));
	if (!p)
		return 12; /* ENOMEM */
	*out = p;
	return 0;
}

void *valloc(size_t n)
{
	return counted(__libc_memalign((size_t)sysconf(_SC_PAGESIZE), n));
}

void *pvalloc(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return counted(__libc_memalign(pg, (n + pg - 1) & ~(pg - 1)));
}

/* ---- the benchmark ----------------------------------------------------------- */

struct args {
	const char *data;
	const char *tenant;
	const char *method;
	const char *body;
	const char *out;
	int runs;
	int json;
	int no_sym;
};

/* The HTTP status web/ answers for rc (the table of docs/api.md, "Errors"). */
static int http_status(int rc)
{
	switch (rc) {
	case 0: return 200;
	case ERR_INVALID: return 400;
	case ERR_NOT_FOUND: return 404;
	case ERR_CONFLICT: return 409;
	case ERR_TOO_LARGE: return 413;
	case ERR_UNAVAILABLE: return 503;
	case ERR_TIMEOUT: return 504;
	default: return 500;
	}
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench-connect --data DIR --method M --body FILE [--json] [--tenant T]\n"
			"                     [--runs N] [--no-symbolizer] [--out FILE]\n");
	return 2;
}

enum { O_DATA = 256, O_TENANT, O_METHOD, O_BODY, O_OUT, O_RUNS, O_JSON, O_NOSYM };

static const struct option opts[] = {
	{ "data", required_argument, NULL, O_DATA },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "method", required_argument, NULL, O_METHOD },
	{ "body", required_argument, NULL, O_BODY },
	{ "out", required_argument, NULL, O_OUT },
	{ "runs", required_argument, NULL, O_RUNS },
	{ "json", no_argument, NULL, O_JSON },
	{ "no-symbolizer", no_argument, NULL, O_NOSYM },
	{ NULL, 0, NULL, 0 },
};

static int parse_args(int argc, char **argv, struct args *a)
{
	int c;

	memset(a, 0, sizeof(*a));
	a->tenant = "anonymous";
	a->runs = 2;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_DATA: a->data = optarg; break;
		case O_TENANT: a->tenant = optarg; break;
		case O_METHOD: a->method = optarg; break;
		case O_BODY: a->body = optarg; break;
		case O_OUT: a->out = optarg; break;
		case O_RUNS: a->runs = atoi(optarg); break;
		case O_JSON: a->json = 1; break;
		case O_NOSYM: a->no_sym = 1; break;
		default: return -1;
		}
	}
	if (optind != argc || !a->data || !a->method || !a->body || a->runs < 1 || a->runs > 100)
		return -1;
	return 0;
}

/* Runs the call once and prints its RESULT line; the answer stays in out. */
static int run_once(struct store *st, const struct args *a, const struct buf *body,
		    const struct query_limits *lim, int run, struct buf *out)
{
	struct err_msg msg;
	int64_t before, after, peak, t0, c0, wall, cpu;
	int rc;

	err_clear(&msg);
	buf_release(out);
	buf_init(out, lim->max_bytes);
	before = atomic_load(&heap_live);
	atomic_store(&heap_peak, before);
	t0 = clock_mono_ns();
	c0 = thread_cpu_ns();
	rc = (a->json ? query_connect : query_connect_proto)(st, a->tenant, a->method, body->data,
							     body->len, lim, out, &msg);
	wall = clock_mono_ns() - t0;
	cpu = thread_cpu_ns() - c0;
	peak = atomic_load(&heap_peak);
	after = atomic_load(&heap_live);
	printf("RESULT run=%d rc=%d status=%d bytes=%zu heap_before=%" PRId64 " heap_peak=%" PRId64
	       " query_peak=%" PRId64 " heap_after=%" PRId64 " wall_ms=%.1f cpu_ms=%.1f msg=%s\n",
	       run, rc, http_status(rc), rc ? (size_t)0 : out->len, before, peak, peak - before,
	       after, wall / 1e6, cpu / 1e6, rc ? msg.text : "");
	fflush(stdout);
	if (rc)
		buf_reset(out);
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	struct bench_server srv = { 0 };
	struct query_limits lim = { 0 };
	struct err_msg msg;
	struct buf body, out;
	int rc;

	if (parse_args(argc, argv, &a))
		return usage();
	err_clear(&msg);
	buf_init(&body, MAX_BODY);
	buf_init(&out, MAX_OUT);
	if ((rc = buf_read_file(&body, a.body))) {
		err_set(&msg, rc, "cannot read %s", a.body);
		goto out;
	}
	if ((rc = bench_server_open(a.data, a.no_sym, 0, &srv, &msg)))
		goto out;
	lim.timeout_ns = TIMEOUT_NS;
	lim.max_bytes = QUERY_DEFAULT_MAX_BYTES;
	lim.symbolizer = srv.sym;
	lim.symmemo = srv.memo;
	printf("RESULT phase=open method=%s codec=%s body_bytes=%zu heap=%" PRId64 "\n", a.method,
	       a.json ? "json" : "proto", body.len, atomic_load(&heap_live));
	for (int i = 1; i <= a.runs; i++)
		run_once(srv.st, &a, &body, &lim, i, &out);
	rc = 0;
	if (a.out)
		rc = bench_write_file(a.out, &out, &msg);
out:
	if (rc)
		fprintf(stderr, "bench-connect: %s\n", msg.text[0] ? msg.text : err_str(rc));
	buf_release(&out);
	buf_release(&body);
	bench_server_close(&srv);
	return rc ? 1 : 0;
}
