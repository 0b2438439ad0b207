/*
 * fuzz_pprof.c - libFuzzer target: decode, validate and convert one pprof
 * (gzipped or raw) without a store, then check the invariants the writer
 * relies on (every index of the converted profile in range).
 */
#include "base/arena.h"
#include "base/err.h"
#include "fuzz_ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct store_label labels[] = { { "service_name", "fuzz" } };
	struct ingest_limits lim;
	struct ingest_defaults def = { 1, 0, NULL };
	struct ingest_series in = { labels, 1, data, size, NULL, NULL };
	struct ingest_pprof p;
	struct err_msg msg = { { 0 } };
	struct arena a;
	int rc;

	fuzz_limits(&lim);
	arena_init(&a, 1 << 30);
	rc = ingest__convert(&a, &lim, &in, &def, &p, &msg);
	if (rc == 0)
		fuzz_check_indexes(&p);
	else if (!msg.text[0])
		abort(); /* every failure must say why */
	arena_release(&a);
	return 0;
}
