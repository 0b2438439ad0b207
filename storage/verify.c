/*
 * verify.c - store_verify(): every byte of every block checked against its
 * checksum, every section and page decoded, every reference followed (the
 * stack ids of the pages into their service's trie, ids inside the
 * symbols, services of the series); store_verify_head(): every block of
 * every SST file of the head read with its checksum.  `unhex verify` runs
 * both.
 */
#include "storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"

/* Checks one block; returns 0, ERR_CORRUPT (why in msg) or another failure. */
static int verify_block(struct store *st, struct block *b, struct err_msg *msg)
{
	struct bsymtab **syms = NULL;
	struct bidx *x = NULL;
	struct buf raw, pb;
	struct chunk c;
	int fd = -1, rc;

	if (atomic_load(&b->bad) == 2)
		return err_set(msg, ERR_CORRUPT, "%s", b->why);
	buf_init(&raw, BLOCK_MAX_SECTION_RAW);
	buf_init(&pb, BLOCK_MAX_PAGE_BYTES);
	store__chunk_init(&c);
	fd = store__block_open_fd(b, msg);
	rc = fd < 0 ? fd : 0;
	/* Every section's checksum, the samples section whole. */
	for (size_t i = 0; !rc && i < b->m.n_sec; i++) {
		buf_reset(&raw);
		rc = store__block_section(b, fd, &b->m.sec[i], &raw, msg);
	}
	if (!rc)
		rc = store__block_index(st, b, &x, msg);
	syms = calloc(b->m.n_svc + 1, sizeof(*syms));
	if (!rc && !syms)
		rc = ERR_NOMEM;
	for (size_t i = 0; !rc && i < b->m.n_svc; i++)
		rc = store__block_syms(st, b, (uint32_t)i, &syms[i], msg);
	for (uint32_t i = 0; !rc && x && i < x->x.n_series; i++) {
		const struct bser *s = &x->x.series[i];
		uint32_t n_stacks = syms[s->svc]->s.n[SYM_STACK];

		for (uint32_t j = 0; !rc && j < s->n_pages; j++) {
			const struct bpage *pg = &x->x.pages[s->page0 + j];
			rc = store__block_page(b, fd, pg, &pb, msg);
			if (!rc)
				rc = store__chunk_decode(&c, pb.data, pb.len, msg);
			if (!rc && (c.part != s->svc + 1 || c.n != pg->profiles))
				rc = err_set(msg, ERR_CORRUPT, "series %u: a page disagrees with the index", i);
			for (size_t k = 0; !rc && k < c.n; k++) {
				const struct chunk_profile *p = &c.profs[k];
				if (p->meta.time_ns < pg->min_time || p->meta.time_ns > pg->max_time)
					rc = err_set(msg, ERR_CORRUPT, "series %u: a profile outside its page", i);
				for (size_t q = 0; !rc && q < p->n; q++)
					if (p->ids[q] > n_stacks)
						rc = err_set(msg, ERR_CORRUPT,
							     "series %u: stack %u beyond the %u of its service",
							     i, p->ids[q], n_stacks);
			}
		}
	}
	if (rc == ERR_CORRUPT)
		store__block_bad(b, "%s", msg && msg->text[0] ? msg->text : "corrupt");
	for (size_t i = 0; syms && i < b->m.n_svc; i++)
		store__bsymtab_put(syms[i]);
	free(syms);
	store__bidx_put(x);
	if (fd >= 0)
		close(fd);
	store__chunk_release(&c);
	buf_release(&raw);
	buf_release(&pb);
	return rc;
}

int store_verify(struct store *st, int (*cb)(void *ctx, const struct store_block_info *b),
		 void *ctx, struct err_msg *msg)
{
	int bad = 0, rc = 0;

	for (size_t i = 0; !rc && i < st->n_tenants; i++) {
		struct tenant *t = st->tenants[i];
		struct block **v;
		size_t n = 0;

		if (store__blocks_snapshot(t, &v, &n))
			return ERR_NOMEM;
		for (size_t j = 0; j < n; j++) {
			struct block *b = v[j];
			struct store_block_info bi;
			struct err_msg m;
			int r;

			err_clear(&m);
			r = verify_block(st, b, &m);
			if (r && r != ERR_CORRUPT && r != ERR_NOT_FOUND && !rc)
				rc = err_set(msg, r, "block %s: %s", b->id_hex, m.text[0] ? m.text : err_str(r));
			store__block_info(t, b, &bi);
			if (r && !bi.error)
				bi.error = m.text[0] ? m.text : err_str(r);
			else if (!r)
				bi.error = NULL;
			if (r)
				bad = 1;
			if (cb && !rc)
				rc = cb(ctx, &bi);
		}
		store__blocks_release(st, v, n);
	}
	if (!rc && bad)
		rc = err_set(msg, ERR_CORRUPT, "some blocks are corrupt or missing");
	return rc;
}

/* Live SST files of family `name` and their bytes. */
static void live_files(struct store *st, const char *name, uint64_t *files, uint64_t *bytes)
{
	const rocksdb_livefiles_t *lf = rocksdb_livefiles(st->db);
	int n = lf ? rocksdb_livefiles_count(lf) : 0;

	for (int i = 0; i < n; i++) {
		if (strcmp(rocksdb_livefiles_column_family_name(lf, i), name) != 0)
			continue;
		(*files)++;
		*bytes += rocksdb_livefiles_size(lf, i);
	}
	if (lf)
		rocksdb_livefiles_destroy(lf);
}

int store_verify_head(struct store *st, int (*cb)(void *ctx, const struct store_head_check *c),
		      void *ctx, struct err_msg *msg)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	int bad = 0, rc = 0;

	rocksdb_readoptions_set_verify_checksums(ro, 1);
	rocksdb_readoptions_set_fill_cache(ro, 0);
	for (int c = 0; !rc && c < CFI_N; c++) {
		struct store_head_check hc;
		rocksdb_iterator_t *it;
		char *err = NULL;

		if (!st->cf[c])
			continue; /* a family an older store lacks (read-only open) */
		memset(&hc, 0, sizeof(hc));
		hc.family = store__cfi_name((enum cfi)c);
		live_files(st, hc.family, &hc.files, &hc.bytes);
		it = rocksdb_create_iterator_cf(st->db, ro, st->cf[c]);
		for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it))
			hc.keys++;
		rocksdb_iter_get_error(it, &err);
		rocksdb_iter_destroy(it);
		hc.error = err;
		if (err)
			bad = 1;
		if (cb)
			rc = cb(ctx, &hc);
		rocksdb_free(err);
	}
	rocksdb_readoptions_destroy(ro);
	if (!rc && bad)
		rc = err_set(msg, ERR_CORRUPT, "the head has corrupt files");
	return rc;
}
