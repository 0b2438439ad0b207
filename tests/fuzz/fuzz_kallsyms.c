/*
 * fuzz_kallsyms.c - libFuzzer target for kernel symbol maps uploaded with
 * type=kallsyms (symbolize/kallsyms.c): the strict checker, and for a map
 * it accepts, the index written from it, which the index reader must
 * accept and answer lookups from.  The checker and the index writer must
 * agree on what is a map.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "symbolize/symbolize.h"

static const uint8_t BID[20] = { 0x4a, 0x5a, 0x9b, 0x0a };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_index *x = NULL;
	struct sym_frame f[4];
	struct buf b;
	size_t funcs = 0, k;
	int checked, built;

	checked = sym_kallsyms_check(data, size, &funcs, NULL);
	buf_init(&b, 1u << 30);
	built = sym_kallsyms_index_buf(data, size, BID, sizeof(BID), &b, NULL, NULL);
	/* The writer refuses what the checker refuses; it may also find no
	 * function within 4 GiB above _text. */
	if (checked && !built)
		abort();
	if (!built) {
		if (!funcs || sym_index_open_mem(b.data, b.len, BID, sizeof(BID), &x, NULL))
			abort();
		for (uint64_t a = 0; a < 64; a++) {
			sym_index_lookup(x, a * 0x41, f, 4, &k);
			sym_index_lookup_caller(x, a * 0x41, f, 4, &k);
		}
		sym_index_lookup(x, UINT64_MAX, f, 4, &k);
		sym_index_close(x);
	}
	buf_release(&b);
	return 0;
}
