/*
 * fuzz_gopclntab.c - libFuzzer target for Go's function table
 * (symbolize/gopclntab.c), which stripped Go executables uploaded or
 * fetched as `executable` carry: the input is the .gopclntab section, and
 * also the bytes FUNCDATA offsets point into (inline trees).  A table the
 * decoder accepts is looked up across its code, as leaves and callers,
 * and written as an index, which the index reader must accept and answer
 * the same from.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_gopcln *g = NULL;
	struct sym_index *x = NULL;
	struct sym_frame a[SYM_MAX_FRAMES], b[SYM_MAX_FRAMES];
	struct buf out;
	size_t ka, kb;
	uint64_t lo, hi;

	if (sym__gopcln_open_tables(data, size, 0x400000, data, size, 16u << 20, &g, NULL))
		return 0;
	lo = g->text;
	hi = lo + 0x10000;
	for (uint64_t pc = lo; pc < hi; pc += 61) {
		sym_gopcln_lookup(g, pc, a, SYM_MAX_FRAMES, &ka);
		sym_gopcln_lookup_caller(g, pc, a, 4, &ka);
	}
	buf_init(&out, 64u << 20);
	if (sym_gopcln_index_buf(g, &out, NULL, NULL) == 0) {
		if (sym_index_open_mem(out.data, out.len, NULL, 0, &x, NULL))
			abort(); /* the writer wrote what the reader refuses */
		for (uint64_t pc = lo; pc < hi; pc += 61) {
			if (sym_gopcln_lookup(g, pc, a, SYM_MAX_FRAMES, &ka) ||
			    sym_index_lookup(x, pc, b, SYM_MAX_FRAMES, &kb))
				continue;
			if (ka != kb)
				abort(); /* the index answers otherwise than the table */
			for (size_t j = 0; j < ka; j++)
				if (a[j].line != b[j].line ||
				    (a[j].function != b[j].function &&
				     (!a[j].function || !b[j].function ||
				      strcmp(a[j].function, b[j].function))))
					abort();
		}
		sym_index_close(x);
	}
	buf_release(&out);
	sym_gopcln_close(g);
	return 0;
}
