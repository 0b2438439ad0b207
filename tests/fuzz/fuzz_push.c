/*
 * fuzz_push.c - libFuzzer target: push.v1 PushRequest decoding.  The first
 * byte picks the form (even: binary protobuf, odd: Connect JSON); every
 * decoded raw profile then goes through pprof conversion too.
 */
#include "base/arena.h"
#include "base/err.h"
#include "fuzz_ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ingest_limits lim;
	struct ingest_series *s = NULL;
	struct err_msg msg = { { 0 } };
	struct arena a;
	size_t n = 0;
	int rc;

	if (size < 1)
		return 0;
	ingest_limits_default(&lim);
	lim.max_decompressed_bytes = 4 << 20;
	lim.max_profiles = 16;
	arena_init(&a, 64 << 20);
	rc = ingest__decode_push(&a, &lim, data + 1, size - 1, data[0] & 1, &s, &n, &msg);
	if (rc && !msg.text[0])
		abort();
	for (size_t i = 0; !rc && i < n; i++) {
		struct ingest_defaults def = { 1, 0, NULL };
		struct ingest_pprof p;
		struct err_msg m2 = { { 0 } };

		if (ingest__convert(&a, &lim, &s[i], &def, &p, &m2) && !m2.text[0])
			abort();
	}
	arena_release(&a);
	return 0;
}
