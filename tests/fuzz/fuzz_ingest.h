/*
 * fuzz_ingest.h - shared by the libFuzzer targets of the ingest decoders:
 * the entry point's prototype, the limits they run under, and the index
 * checks every converted profile must pass (the invariants ingest__write()
 * relies on).  A failed check aborts, which libFuzzer reports as a crash.
 */
#ifndef UNHEX_TESTS_FUZZ_INGEST_H
#define UNHEX_TESTS_FUZZ_INGEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ingest/ingest_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The default limits, smaller where a large input would make runs slow. */
static inline void fuzz_limits(struct ingest_limits *lim)
{
	ingest_limits_default(lim);
	lim->max_decompressed_bytes = 4 << 20;
	lim->max_samples = 100000;
}

/*
 * Every location's mapping and line functions, every sample's group,
 * stack range and stack locations in range; at least one group and one
 * type, and a service.
 */
static inline void fuzz_check_indexes(const struct ingest_pprof *p)
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

#endif
