/*
 * fuzz_pprof.c - libFuzzer target: decode, validate and convert one pprof
 * (gzipped or raw) without a store, then check the invariants the writer
 * relies on (every index of the converted profile in range).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/arena.h"
#include "base/err.h"
#include "ingest/ingest_int.h"

static void check(const struct ingest_pprof *p)
{
	for (size_t i = 0; i < p->n_locations; i++) {
		const struct ingest_location *l = &p->locations[i];
		if (l->mapping > p->n_mappings)
			abort();
		for (uint32_t j = 0; j < l->n_lines; j++)
			if (l->lines[j].function > p->n_functions)
				abort();
	}
	if (p->n_groups == 0 || p->n_types == 0 || !p->service)
		abort();
	for (size_t i = 0; i < p->n_samples; i++) {
		if (p->sample_group[i] >= p->n_groups || p->sample_off[i] > p->sample_off[i + 1])
			abort();
		for (size_t k = p->sample_off[i]; k < p->sample_off[i + 1]; k++)
			if (p->stack_locs[k] >= p->n_locations)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct store_label labels[] = { { "service_name", "fuzz" } };
	struct ingest_limits lim;
	struct ingest_defaults def = { 1, 0 };
	struct ingest_series in = { labels, 1, data, size };
	struct ingest_pprof p;
	struct err_msg msg = { { 0 } };
	struct arena a;
	int rc;

	ingest_limits_default(&lim);
	/* Smaller than the defaults so each run stays fast. */
	lim.max_decompressed_bytes = 4 << 20;
	lim.max_samples = 100000;
	arena_init(&a, 0);
	rc = ingest__convert(&a, &lim, &in, &def, &p, &msg);
	if (rc == 0)
		check(&p);
	else if (!msg.text[0])
		abort(); /* every failure must say why */
	arena_release(&a);
	return 0;
}
