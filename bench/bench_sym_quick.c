/*
 * bench_sym_quick.c - bench-sym-quick: every phase of the symbolize engine
 * on one debug file in one process, for a quick look while changing it:
 * cold first answer, bulk lookups from raw DWARF (first pass and warm),
 * index build time and size, index open and lookups, peak RSS.
 *
 *   bench-sym-quick <debug-or-unstripped-elf> [n_addresses=100000] [distinct=2000]
 *
 * Addresses are drawn (fixed seed) from the FUNC symbols' ranges: `distinct`
 * addresses sampled n times with a skewed (profile-like) distribution.  The
 * ranges come from the handle's symbol table, which is why this one reads
 * symbolize_int.h.  bench-sym and bench_sym.sh run the same engines one per
 * process, on the address files llvm-symbolizer reads too, for RESULTS.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_int.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct err_msg msg = { "" };
	struct sym_dwarf *d = NULL;
	struct sym_index *x = NULL;
	struct sym_frame f[SYM_MAX_FRAMES];
	struct buf b;
	size_t k, frames = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s ELF [n] [distinct]\n", argv[0]);
		return 2;
	}
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
	size_t distinct = argc > 3 ? strtoul(argv[3], NULL, 10) : 2000;
	if (n == 0 || distinct == 0) {
		fprintf(stderr, "n and distinct must be positive\n");
		return 2;
	}

	double t0 = now();
	if (sym_dwarf_open(argv[1], NULL, &d, &msg)) {
		fprintf(stderr, "open: %s\n", msg.text);
		return 1;
	}
	double t_open = now() - t0;
	if (!d->n_syms) {
		fprintf(stderr, "no FUNC symbols to draw addresses from\n");
		return 1;
	}
	uint64_t *pool = malloc(distinct * sizeof(*pool));
	uint64_t *addrs = calloc(n, sizeof(*addrs));
	for (size_t i = 0; i < distinct; i++) {
		const struct sym__span *s = &d->syms[next() % d->n_syms];
		pool[i] = s->lo + next() % (s->hi - s->lo);
	}
	for (size_t i = 0; i < n; i++) {
		/* skewed: small indexes are much more frequent */
		double u = (double)(next() % 1000000) / 1e6;
		addrs[i] = pool[(size_t)((double)distinct * u * u * u)];
	}

	t0 = now();
	sym_dwarf_lookup(d, addrs[0], f, SYM_MAX_FRAMES, &k);
	double t_cold = now() - t0 + t_open;

	t0 = now();
	for (size_t i = 0; i < n; i++) {
		sym_dwarf_lookup(d, addrs[i], f, SYM_MAX_FRAMES, &k);
		frames += k;
	}
	double t_first = now() - t0;
	t0 = now();
	for (size_t i = 0; i < n; i++)
		sym_dwarf_lookup(d, addrs[i], f, SYM_MAX_FRAMES, &k);
	double t_warm = now() - t0;

	buf_init(&b, (size_t)UINT32_MAX);
	t0 = now();
	struct sym_index_stats st;
	if (sym_index_build_buf(d, &b, &st, &msg)) {
		fprintf(stderr, "index: %s\n", msg.text);
		return 1;
	}
	double t_build = now() - t0;
	t0 = now();
	if (sym_index_open_mem(b.data, b.len, NULL, 0, &x, &msg)) {
		fprintf(stderr, "index open: %s\n", msg.text);
		return 1;
	}
	double t_iopen = now() - t0;
	qsort(pool, distinct, sizeof(*pool), cmp64);
	t0 = now();
	size_t iframes = 0;
	for (size_t r = 0; r < 10; r++)
		for (size_t i = 0; i < n; i++) {
			sym_index_lookup(x, addrs[i], f, SYM_MAX_FRAMES, &k);
			iframes += k;
		}
	double t_idx = (now() - t0) / 10;
	/* random addresses over the whole index span: no cache help */
	uint64_t lo = d->syms[0].lo, hi = d->syms[d->n_syms - 1].hi;
	for (size_t i = 0; i < n; i++)
		addrs[i] = lo + next() % (hi - lo);
	t0 = now();
	for (size_t i = 0; i < n; i++)
		sym_index_lookup(x, addrs[i], f, SYM_MAX_FRAMES, &k);
	double t_idx_rand = now() - t0;

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("file                 %s\n", argv[1]);
	printf("addresses            %zu (%zu distinct), %.2f frames/address\n", n, distinct,
	       (double)frames / (double)n);
	printf("open (CU table+syms) %.1f ms\n", t_open * 1e3);
	printf("cold first answer    %.1f ms\n", t_cold * 1e3);
	printf("DWARF first pass     %.0f addr/s (%.2f us/addr)\n", (double)n / t_first,
	       t_first * 1e6 / (double)n);
	printf("DWARF warm           %.0f addr/s\n", (double)n / t_warm);
	printf("index build          %.2f s: %llu ranges, %llu locations, %llu string bytes,"
	       " %.1f MB\n", t_build, (unsigned long long)st.ranges,
	       (unsigned long long)st.locations, (unsigned long long)st.string_bytes,
	       (double)st.file_bytes / 1e6);
	printf("index open+validate  %.2f ms\n", t_iopen * 1e3);
	printf("index lookups        %.0f addr/s (profile-like), %.0f addr/s (uniform)\n",
	       (double)n / t_idx, (double)n / t_idx_rand);
	printf("peak RSS             %.1f MB\n", (double)ru.ru_maxrss / 1024);
	sym_index_close(x);
	buf_release(&b);
	sym_dwarf_close(d);
	free(pool);
	free(addrs);
	return iframes == 0;
}
