/*
 * fuzz_symindex.c - libFuzzer target for the symbol-index reader
 * (symbolize/index.c, format in symbolize_int.h) over bytes nobody here
 * wrote: an index downloaded from the bucket (debuginfo/bucket.c) is
 * opened with sym_index_open before any lookup.  The input is opened as
 * it is (its checksum is rarely right), then with the size and CRC-32
 * fields rewritten to match it, so the fuzzer reaches the checks of the
 * sections behind the checksum.  Whatever opens must answer lookups
 * anywhere without reading out of bounds.  Seeds: make_seeds.py.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "symbolize/symbolize.h"

#define HEADER 128u

static void probe(const uint8_t *data, size_t size)
{
	struct sym_index *x = NULL;
	struct sym_frame f[8];
	uint64_t base = 0;
	size_t k;

	if (sym_index_open_mem(data, size, NULL, 0, &x, NULL))
		return;
	for (int i = 0; i < 8; i++)
		base |= (uint64_t)data[16 + i] << (8 * i);
	for (uint64_t a = 0; a < 256; a++) {
		sym_index_lookup(x, base + a * 3, f, 8, &k);
		sym_index_lookup_caller(x, base + a * 3, f, 8, &k);
	}
	sym_index_lookup(x, 0, f, 8, &k);
	sym_index_lookup(x, UINT64_MAX, f, 8, &k);
	sym_index_close(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;
	uLong crc;

	probe(data, size);
	if (size < HEADER || size > UINT32_MAX)
		return 0;
	fixed = malloc(size);
	if (!fixed)
		abort();
	memcpy(fixed, data, size);
	for (int i = 0; i < 4; i++)
		fixed[120 + i] = (uint8_t)(size >> (8 * i));
	crc = crc32(0L, fixed, 124);
	crc = crc32(crc, fixed + HEADER, (uInt)(size - HEADER));
	for (int i = 0; i < 4; i++)
		fixed[124 + i] = (uint8_t)(crc >> (8 * i));
	probe(fixed, size);
	free(fixed);
	return 0;
}
