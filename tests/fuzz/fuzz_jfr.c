/*
 * fuzz_jfr.c - libFuzzer target: a JFR recording and pyroscope-java's
 * LabelsSnapshot through ingest/jfr.c, then every profile it builds
 * through the invariants the writer relies on.  The first input byte says
 * how many of the last bytes (times 4) are the labels part.
 */
#include "base/arena.h"
#include "base/err.h"
#include "fuzz_ingest.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct store_label base[] = { { "service_name", "fuzz" } };
	struct ingest_limits lim;
	struct ingest_jfr j;
	struct err_msg msg = { { 0 } };
	struct arena a;
	size_t nl;
	int rc;

	if (size < 1)
		return 0;
	nl = (size_t)data[0] * 4;
	data++;
	size--;
	if (nl > size)
		nl = size;
	fuzz_limits(&lim);
	arena_init(&a, (size_t)256 << 20);
	rc = ingest__parse_jfr(&a, data, size - nl, nl ? data + size - nl : NULL, nl, &lim, 100,
			       base, 1, &j, &msg);
	if (rc == 0) {
		for (size_t i = 0; i < j.n; i++) {
			struct ingest_pprof p;

			memset(&p, 0, sizeof(p));
			if (ingest__b_finish(&j.p[i].b, &p))
				abort();
			p.service = "fuzz";
			fuzz_check_indexes(&p);
		}
	} else if (!msg.text[0]) {
		abort(); /* every failure must say why */
	}
	ingest__jfr_release(&j);
	arena_release(&a);
	return 0;
}
