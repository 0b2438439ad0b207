/*
 * fuzz_bucketidx.c - libFuzzer target for the bucket index object
 * (storage/bucketidx.c, storage_int.h section 12), which queriers and
 * compactors read from a bucket anyone with its keys may write.  The
 * checksum is set over the input first, so the fuzzer reaches the decoder.
 * What decodes is in order and within the caps, the rule runs over every
 * tenant, and encoding it again decodes to the same encoding.
 * Seeds: corpus/fuzz_bucketidx.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_object.h"

static void check(const struct bkt_index *x)
{
	size_t blocks = 0;

	if (x->n_tenants > BKT_MAX_TENANTS)
		abort();
	for (size_t i = 0; i < x->n_tenants; i++) {
		const struct bkt_tenant *t = &x->tenants[i];
		uint32_t *res = malloc((t->n_blocks + 1) * sizeof(*res));

		if (!res || (i && strcmp(x->tenants[i - 1].name, t->name) >= 0))
			abort();
		blocks += t->n_blocks;
		for (size_t j = 0; j < t->n_blocks; j++) {
			const struct bkt_block *b = &t->blocks[j];
			if ((j && memcmp(t->blocks[j - 1].id, b->id, BLOCK_ID_BYTES) >= 0) ||
			    b->n_covers > BKT_MAX_COVERS || b->rec.max_time >= b->rec.range_end ||
			    b->rec.min_time < b->rec.range_start || b->mark > BKT_EXPIRED ||
			    store__bkt_block(t, b->id) != b)
				abort();
		}
		if (store__bkt_resolve(t, res) == 0)
			for (size_t j = 0; j < t->n_blocks; j++)
				if (res[j] > BKT_EXPIRED || (t->blocks[j].mark && res[j] != t->blocks[j].mark))
					abort();
		free(res);
		if (store__bkt_tenant(x, t->name) != t)
			abort();
	}
	if (blocks > BKT_MAX_BLOCKS)
		abort();
}

FUZZ_OBJECT_TARGET(bkt_index, bkt, BKT_MAX_BYTES)
