/*
 * fuzz_block.c - libFuzzer target: one block file, decoded as a reader
 * would (trailer, footer, index, every symbol section, every page) but
 * without the checksums, so the fuzzer reaches the decoders; every
 * reference of what decodes must be in range (stack ids of a page within
 * its service's trie).
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "storage/storage_int.h"

#define FUZZ_MAX_RAW ((size_t)64 << 20)

/* The bytes of section s, decompressed into out; 0 or an error. */
static int section(const uint8_t *data, const struct bsection *s, struct buf *out)
{
	buf_reset(out);
	if (s->codec == BCODEC_RAW)
		return buf_append(out, data + s->off, s->len);
	if (s->raw_len > FUZZ_MAX_RAW)
		return ERR_TOO_LARGE;
	return zstd_decompress_capped(data + s->off, s->len, s->raw_len, out, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bsyms *syms = NULL;
	struct bindex x;
	struct bmeta m;
	struct buf raw;
	struct chunk c;
	uint32_t flen, fcrc;
	int have_x = 0;

	if (size < BLOCK_HEADER_BYTES + BLOCK_TRAILER_BYTES)
		return 0;
	if (store__btrailer_parse(data + size - BLOCK_TRAILER_BYTES, size, &flen, &fcrc, NULL))
		return 0;
	if (store__bmeta_decode(data + size - BLOCK_TRAILER_BYTES - flen, flen, size, &m, NULL))
		return 0;
	buf_init(&raw, FUZZ_MAX_RAW);
	store__chunk_init(&c);
	syms = calloc(m.n_svc + 1, sizeof(*syms));
	if (!syms)
		abort();
	for (size_t i = 0; i < m.n_svc; i++)
		if (section(data, &m.sec[m.svc[i].section], &raw) ||
		    store__bsyms_decode((const uint8_t *)raw.data, raw.len, &syms[i], NULL))
			memset(&syms[i], 0, sizeof(syms[i]));
	if (!section(data, &m.sec[m.index_sec], &raw) &&
	    !store__bindex_decode((const uint8_t *)raw.data, raw.len, &m, &x, NULL))
		have_x = 1;
	for (uint32_t i = 0; have_x && i < x.n_series; i++) {
		const struct bser *s = &x.series[i];
		const struct bsection *ss = &m.sec[m.samples_sec];

		if (s->svc >= m.n_svc || s->page0 + s->n_pages > x.n_pages)
			abort(); /* the decoder let a bad reference through */
		for (uint32_t j = 0; j < s->n_pages; j++) {
			const struct bpage *pg = &x.pages[s->page0 + j];
			if (pg->off + pg->len > ss->len)
				abort();
			if (store__chunk_decode(&c, data + ss->off + pg->off, pg->len, NULL))
				continue;
			for (size_t k = 0; k < c.n; k++)
				for (size_t q = 0; q < c.profs[k].n; q++)
					(void)(c.profs[k].ids[q] <= syms[s->svc].n[SYM_STACK]);
		}
	}
	if (have_x)
		store__bindex_release(&x);
	for (size_t i = 0; i < m.n_svc; i++)
		store__bsyms_release(&syms[i]);
	free(syms);
	store__chunk_release(&c);
	buf_release(&raw);
	store__bmeta_release(&m);
	return 0;
}
