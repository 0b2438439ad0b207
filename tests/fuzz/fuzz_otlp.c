/*
 * fuzz_otlp.c - libFuzzer target: decode, validate and convert one OTLP
 * ExportProfilesServiceRequest without a store, then check the invariants
 * ingest__write() relies on (every index of the converted profiles in
 * range, one sample type, one group, a service name).  The first byte
 * picks the decoder: 'J' is the JSON encoding (otlp_json.c) of the bytes
 * after it, anything else binary protobuf of the whole input.
 */
#include "base/arena.h"
#include "base/err.h"
#include "fuzz_ingest.h"

/* Beyond the index checks: one sample type, one group, a non-empty
 * service name, and no sample of value 0 (those are dropped). */
static void check(const struct ingest_pprof *p)
{
	fuzz_check_indexes(p);
	if (p->n_groups != 1 || p->n_types != 1 || !p->service[0] || !p->n_samples)
		abort();
	for (size_t i = 0; i < p->n_samples; i++)
		if (p->values[i] == 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ingest_limits lim;
	struct ingest_otlp_req req;
	struct err_msg msg = { { 0 } };
	struct arena a;
	int rc;

	int json = size && data[0] == 'J';

	fuzz_limits(&lim);
	if (json)
		data++, size--;
	arena_init(&a, ingest__otlp_arena_cap(size));
	rc = ingest__otlp_convert(&a, &lim, data, size, json, 1, &req, &msg);
	if (rc == 0) {
		for (size_t i = 0; i < req.n; i++)
			check(&req.profiles[i]);
	} else if (!msg.text[0]) {
		abort(); /* every failure must say why */
	}
	arena_release(&a);
	return 0;
}
