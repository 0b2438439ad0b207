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

#include "base/buf.h"
#include "base/err.h"
#include "storage/storage_int.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bkt_index x, y;
	struct buf in, a, b;
	uint32_t crc;

	if (size < BKT_HEADER_BYTES || size > ((size_t)1 << 20))
		return 0;
	buf_init(&in, size);
	if (buf_append(&in, data, size))
		abort();
	crc = store__crc32c(0, in.data + BKT_HEADER_BYTES, size - BKT_HEADER_BYTES);
	for (int i = 0; i < 4; i++)
		((uint8_t *)in.data)[12 + i] = (uint8_t)(crc >> (8 * i));
	if (store__bkt_decode((const uint8_t *)in.data, size, &x, NULL) == 0) {
		check(&x);
		buf_init(&a, BKT_MAX_BYTES);
		buf_init(&b, BKT_MAX_BYTES);
		if (store__bkt_encode(&x, &a) ||
		    store__bkt_decode((const uint8_t *)a.data, a.len, &y, NULL))
			abort();
		if (store__bkt_encode(&y, &b) || a.len != b.len || memcmp(a.data, b.data, a.len))
			abort();
		store__bkt_release(&y);
		store__bkt_release(&x);
		buf_release(&a);
		buf_release(&b);
	}
	buf_release(&in);
	return 0;
}
