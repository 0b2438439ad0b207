/*
 * bench_query_synth.c - bench-query-synth: one merged flame graph over a
 * synthetic store built in process (the query tests' fixture,
 * tests/query/fixture.h), no workload files needed: one hour of a
 * 20-instance service, 360 ten-second profiles per instance, N samples each
 * (argv[1], default 100 -> 720,000 samples; 1000 -> 7.2 M), stacks of depth
 * ~30 drawn from a pool of 2000.  Prints cold and warm times of
 * query_render.  bench-query measures the same call on a real store.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/query/fixture.h"

#include "base/buf.h"
#include "base/clock.h"
#include "query/query.h"

enum { POOL = 2000, DEPTH = 30, FUNCS = 400 };

int main(int argc, char **argv)
{
	int per = argc > 1 ? atoi(argv[1]) : 100;
	static char pool[POOL][DEPTH * 12];
	const char **stacks = malloc((size_t)per * sizeof(*stacks));
	int64_t *values = malloc((size_t)per * sizeof(*values));
	unsigned r = 42;
	struct fx f;
	struct query_params p = { 0 };
	struct buf out;
	struct err_msg msg = { { 0 } };
	int64_t t0, t1;

	for (int i = 0; i < POOL; i++) {
		size_t n = 0;
		/* shared prefixes: the first frames come from a small set */
		for (int d = 0; d < DEPTH; d++) {
			r = r * 1103515245u + 12345u;
			n += (size_t)snprintf(pool[i] + n, sizeof(pool[i]) - n, "%sfn%u", d ? ";" : "",
					      d < 5 ? (unsigned)d : (r >> 8) % FUNCS);
		}
	}
	fx_open(&f);
	t0 = clock_mono_ns();
	for (int inst = 0; inst < 20; inst++) {
		char name[16];
		const char *kv[] = { "instance", name, NULL };

		snprintf(name, sizeof(name), "i%d", inst);
		for (int k = 0; k < 360; k++) {
			for (int s = 0; s < per; s++) {
				r = r * 1103515245u + 12345u;
				stacks[s] = pool[(r >> 8) % POOL];
				values[s] = 10000000;
			}
			fx_add(&f, "t", "svc", FX_CPU, kv, FX_T0 + k * 10 * FX_SEC, stacks, values,
			       (size_t)per, "/bin/svc", "0123", 0x1000, 0);
		}
	}
	t1 = clock_mono_ns();
	printf("fill: %d profiles x %d samples in %.1f s\n", 20 * 360, per, (t1 - t0) / 1e9);
	p.query = FX_CPU "{service_name=\"svc\"}";
	p.from_ns = FX_T0;
	p.until_ns = FX_T0 + 3600 * FX_SEC;
	buf_init(&out, 1 << 30);
	for (int run = 0; run < (getenv("PERF_RUNS") ? atoi(getenv("PERF_RUNS")) : 4); run++) {
		buf_reset(&out);
		t0 = clock_mono_ns();
		if (query_render(f.st, "t", &p, &out, &msg)) {
			fprintf(stderr, "render: %s\n", msg.text);
			return 1;
		}
		t1 = clock_mono_ns();
		printf("render %s: %.1f ms (%zu bytes, %lld samples)\n", run ? "warm" : "cold",
		       (t1 - t0) / 1e6, out.len, (long long)20 * 360 * per);
	}
	buf_release(&out);
	free(stacks);
	free(values);
	fx_close(&f);
	return 0;
}
