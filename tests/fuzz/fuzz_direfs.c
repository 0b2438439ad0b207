/*
 * fuzz_direfs.c - libFuzzer target for the "debuginfo-refs" object
 * (storage/direfs.c, storage_int.h section 13), which the index writer
 * reads back from a bucket anyone with its keys may write, and by which
 * debug info is deleted.  The checksum is set over the input first, so the
 * fuzzer reaches the decoder.  What decodes is in order and within the
 * caps, every ref names an id, and encoding it again decodes to the same
 * encoding.  Seeds: corpus/fuzz_direfs.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_object.h"

static void check(const struct store_direfs *r)
{
	size_t blocks = 0, refs = 0;

	if (r->n_ids > DIREFS_MAX_IDS || r->n_tenants > BKT_MAX_TENANTS)
		abort();
	for (size_t i = 0; i < r->n_ids; i++)
		if (!r->ids[i].id[0] || strlen(r->ids[i].id) > DIREFS_ID_MAX ||
		    (i && strcmp(r->ids[i - 1].id, r->ids[i].id) >= 0))
			abort();
	for (size_t i = 0; i < r->n_tenants; i++) {
		const struct direfs_tenant *t = &r->tenants[i];

		if (i && strcmp(r->tenants[i - 1].name, t->name) >= 0)
			abort();
		blocks += t->n_blocks;
		for (size_t j = 0; j < t->n_blocks; j++) {
			const struct direfs_block *b = &t->blocks[j];

			if (j && memcmp(t->blocks[j - 1].id, b->id, BLOCK_ID_BYTES) >= 0)
				abort();
			refs += b->n_refs;
			for (uint32_t k = 0; k < b->n_refs; k++)
				if (b->refs[k] >= r->n_ids || (k && b->refs[k - 1] >= b->refs[k]))
					abort();
		}
	}
	if (blocks > BKT_MAX_BLOCKS || refs > DIREFS_MAX_REFS)
		abort();
}

FUZZ_OBJECT_TARGET(store_direfs, direfs, DIREFS_MAX_BYTES)
