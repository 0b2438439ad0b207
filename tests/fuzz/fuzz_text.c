/*
 * fuzz_text.c - libFuzzer target: the legacy /ingest formats (folded,
 * lines, trie, tree), speedscope JSON and pyroscope-go's
 * sample_type_config, chosen by the first input byte; every profile
 * built goes through the invariants the writer relies on.
 */
#include "base/arena.h"
#include "base/err.h"
#include "base/json.h"
#include "fuzz_ingest.h"

#include <string.h>

static void check(struct ingest_builder *b)
{
	struct ingest_pprof p;

	memset(&p, 0, sizeof(p));
	if (ingest__b_finish(b, &p))
		abort();
	p.service = "fuzz";
	fuzz_check_indexes(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum ingest_format text[] = { INGEST_FORMAT_FOLDED, INGEST_FORMAT_LINES,
						   INGEST_FORMAT_TRIE, INGEST_FORMAT_TREE };
	struct ingest_limits lim;
	struct err_msg msg = { { 0 } };
	struct arena a, t;
	int rc, which;

	if (size < 1)
		return 0;
	which = data[0] % 6;
	data++;
	size--;
	fuzz_limits(&lim);
	arena_init(&a, (size_t)256 << 20);
	arena_init(&t, json_mem_bound(size) + ((size_t)64 << 20));
	if (which < 4) {
		struct ingest_builder b;

		ingest__b_init(&b, &a, (size_t)64 << 20, &lim, 1);
		rc = ingest__parse_text(text[which], data, size, &b, &msg);
		if (rc == 0)
			check(&b);
		ingest__b_release(&b);
	} else if (which == 4) {
		struct ingest_ss_profile *ps;
		size_t n;

		rc = ingest__parse_speedscope(&a, &t, data, size, &lim, (size_t)64 << 20, &ps, &n,
					      &msg);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			check(&ps[i].b);
			ingest__b_release(&ps[i].b);
		}
	} else {
		struct ingest_stc stc;

		rc = ingest__stc_parse(&a, data, size, &stc, &msg);
	}
	if (rc && !msg.text[0] && rc != ERR_TOO_LARGE)
		abort(); /* every failure must say why */
	arena_release(&t);
	arena_release(&a);
	return 0;
}
