/* test_pcache.c - the cache of decoded block pages (pcache.c): a query of
 * sealed data answers the same cold and warm and the warm one reads no
 * page; the cache stays under its cap by evicting the least recently used
 * pages, never a pinned one; the pages of a block leave it when the block
 * is compacted away, expired or marked bad, pinned ones at their unpin;
 * head chunks are cached only as long as their bytes stay the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blockgen.h"
#include "helpers.h"
#include "storage/storage_int.h"

static int64_t fake_now;

static struct store *open_cap(const char *dir, size_t page_cache_bytes, int64_t retention)
{
	struct store_options o = gen_options(dir, &fake_now);

	o.page_cache_bytes = page_cache_bytes;
	o.retention_ns = retention;
	return open_options(&o);
}

/* Profiles of 2 services x 3 pods every 30 s over [t0, t0 + span). */
static void fill(struct store *st, int64_t t0, int64_t span)
{
	static const char *svcs[2] = { "api", "db" }, *pods[3] = { "p0", "p1", "p2" };

	for (int64_t t = t0; t < t0 + span; t += 30 * SEC)
		for (int s = 0; s < 2; s++)
			for (int p = 0; p < 3; p++)
				assert_int_equal(gen_profile(st, "t", svcs[s], pods[p], t + p * SEC, 1,
							     (uint64_t)(t / SEC) + (uint64_t)s * 7 +
								     (uint64_t)p),
						 0);
}

/* A store in dir, the clock far past T0, retention `retention`, filled over [T0, T0 + span). */
static struct store *open_filled(const char *dir, int64_t retention, int64_t span)
{
	struct store *st;

	fake_now = T0 + 100 * RANGE;
	st = open_cap(dir, 0, retention);
	assert_non_null(st);
	fill(st, T0, span);
	return st;
}

static struct store_page_cache_stats pstats(struct store *st)
{
	struct store_page_cache_stats s;

	store_page_cache_stats(st, &s);
	return s;
}

/* The cached pages of b. */
static size_t entries_of(struct store *st, struct block *b)
{
	size_t n = 0;

	pthread_mutex_lock(&st->pages.mu);
	for (struct dlist_node *e = b->page_ents.head; e; e = e->next)
		n++;
	pthread_mutex_unlock(&st->pages.mu);
	return n;
}

/* The listed block of tenant "t" whose range starts at `start`, or NULL. */
static struct block *block_at(struct store *st, int64_t start)
{
	struct tenant *t = store__tenant_find(st, "t");
	struct block *b = NULL;

	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n_blocks; i++)
		if (t->blocks[i]->rec.range_start == start)
			b = t->blocks[i];
	pthread_mutex_unlock(&t->mu);
	return b;
}

static char *dump_all(struct store *st)
{
	size_t warn = 1;
	char *d = gen_dump(st, "t", T0 - RANGE, T0 + 20 * RANGE, NULL, &warn);

	assert_non_null(d);
	assert_int_equal(warn, 0);
	return d;
}

static void test_cold_warm_same(void **state)
{
	char *dir = tmpdir_new();
	struct store_page_cache_stats a, b;
	struct store *st;
	char *head, *cold, *warm;
	(void)state;

	st = open_filled(dir, 0, 3 * RANGE);
	head = dump_all(st);
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	a = pstats(st);
	assert_int_equal(a.entries, 0);
	assert_int_equal(a.cap_bytes, 64 << 20); /* the default */

	cold = dump_all(st);
	a = pstats(st);
	assert_int_equal(a.hits, 0);
	assert_true(a.misses > 0);
	assert_int_equal(a.entries, a.misses); /* every page read was kept */
	assert_true(a.bytes > 0 && a.bytes <= a.cap_bytes);
	assert_int_equal(a.evictions, 0);

	warm = dump_all(st);
	b = pstats(st);
	assert_int_equal(b.misses, a.misses); /* nothing read again */
	assert_int_equal(b.hits, a.misses);
	assert_int_equal(b.entries, a.entries);
	assert_string_equal(cold, head);
	assert_string_equal(warm, cold);
	free(warm);
	free(cold);
	free(head);
	store_close(st);
	tmpdir_free(dir);
}

/* Under a cap of a quarter of the pages, a read of all of them evicts and
 * answers the same; the cache never holds more than its cap. */
static void test_cap_evicts(void **state)
{
	char *dir = tmpdir_new();
	struct store_page_cache_stats a, b;
	struct store *st;
	char *all, *again;
	size_t cap;
	(void)state;

	st = open_filled(dir, 0, 10 * RANGE);
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	all = dump_all(st);
	a = pstats(st);
	assert_true(a.entries >= 60); /* 10 blocks of 6 series */
	cap = (size_t)a.bytes / 4;
	store_close(st);

	st = open_cap(dir, cap, 0);
	assert_non_null(st);
	again = dump_all(st);
	b = pstats(st);
	assert_string_equal(again, all);
	assert_int_equal(b.cap_bytes, cap);
	assert_true(b.bytes <= cap);
	assert_true(b.entries > 0 && b.entries < a.entries);
	assert_true(b.evictions > 0);
	assert_int_equal(b.entries + b.evictions, b.misses);
	free(again);
	again = dump_all(st); /* least recently used first: a scan misses again */
	assert_string_equal(again, all);
	assert_true(pstats(st).bytes <= cap);
	free(again);
	free(all);
	store_close(st);
	tmpdir_free(dir);
}

/* A real page (of one profile of n pairs), decoded into c. */
static void decoded_page(struct chunk *c, size_t n, struct buf *enc)
{
	uint32_t ids[512];
	int64_t vals[512];
	struct chunk_profile p;

	assert_true(n <= 512);
	for (size_t i = 0; i < n; i++) {
		ids[i] = (uint32_t)(i + 1);
		vals[i] = (int64_t)(i * 3) - 7;
	}
	memset(&p, 0, sizeof(p));
	p.meta.time_ns = T0;
	p.meta.duration_ns = 10 * SEC;
	p.n = n;
	p.ids = ids;
	p.vals = vals;
	buf_reset(enc);
	assert_int_equal(store__chunk_encode(5, &p, 1, 1, enc), 0);
	assert_int_equal(store__chunk_decode(c, enc->data, enc->len, NULL), 0);
}

/* Pinned pages stay past the cap until unpinned; a block's pages dropped
 * while pinned stay readable until their last unpin (ASan checks). */
static void test_pins(void **state)
{
	struct pcache pc;
	struct block *blk = calloc(1, sizeof(*blk));
	struct bpage pg[3];
	struct page_view v[3], w;
	struct pcache_ent *e[3];
	struct chunk c;
	struct buf enc;
	(void)state;

	assert_non_null(blk);
	memset(pg, 0, sizeof(pg));
	for (int i = 0; i < 3; i++)
		pg[i].off = 1000 * (uint64_t)i;
	store__chunk_init(&c);
	buf_init(&enc, 1 << 20);
	decoded_page(&c, 400, &enc);
	/* A page is ~5 KiB decoded: a cap of 48 KiB holds it (an eighth is
	 * 6 KiB) and not much more. */
	store__pcache_init(&pc, 48 << 10);
	for (int i = 0; i < 3; i++) {
		e[i] = store__pcache_add(&pc, blk, &pg[i], &c, &v[i]);
		assert_non_null(e[i]);
		assert_int_equal(v[i].n, 1);
		assert_int_equal(v[i].part, 5);
		assert_int_equal(v[i].profs[0].n, 400);
		assert_int_equal(v[i].profs[0].ids[399], 400);
		assert_int_equal(v[i].profs[0].vals[0], -7);
	}
	pc.cap = pc.bytes - 1; /* all three are over the cap, pinned */
	assert_int_equal(pc.n, 3);
	store__pcache_unpin(&pc, e[0]);
	assert_int_equal(pc.n, 2); /* the one unpinned left */
	assert_int_equal(pc.evictions, 1);
	assert_null(store__pcache_get(&pc, blk, &pg[0], &w));
	assert_int_equal(pc.misses, 1);
	assert_true(store__pcache_holds(&pc, blk, &pg[1]));
	assert_true(store__pcache_get(&pc, blk, &pg[1], &w) == e[1]); /* pinned twice */
	assert_int_equal(pc.hits, 1);

	store__pcache_forget(&pc, blk);
	assert_int_equal(pc.n, 0);
	assert_int_equal(pc.bytes, 0);
	assert_null(blk->page_ents.head);
	assert_int_equal(w.profs[0].ids[0], 1); /* still pinned, still there */
	assert_int_equal(v[2].profs[0].vals[399], 399 * 3 - 7);
	store__pcache_unpin(&pc, e[1]);
	store__pcache_unpin(&pc, e[1]);
	store__pcache_unpin(&pc, e[2]);
	assert_false(store__pcache_holds(&pc, blk, &pg[1]));

	/* A bad block gets no pages; a page too large for the cap is not kept. */
	atomic_store(&blk->bad, 2);
	assert_null(store__pcache_add(&pc, blk, &pg[0], &c, &w));
	atomic_store(&blk->bad, 0);
	pc.cap = 8 * 1024;
	assert_null(store__pcache_add(&pc, blk, &pg[0], &c, &w));
	assert_int_equal(pc.n, 0);
	store__pcache_release(&pc);
	buf_release(&enc);
	store__chunk_release(&c);
	free(blk);
}

/* The pages of a block leave the cache when it is compacted away, expired
 * or marked bad; the other blocks' stay. */
static void test_blocks_leave(void **state)
{
	char *dir = tmpdir_new();
	struct store_maint_stats ms;
	struct block *b0, *b1;
	struct store *st;
	size_t n0, n1, n;
	char *d;
	(void)state;

	/* Retention: the clock is the newest profile. */
	st = open_filled(dir, 3 * RANGE, 2 * RANGE);
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	d = dump_all(st);
	free(d);
	b0 = block_at(st, T0);
	b1 = block_at(st, T0 + RANGE);
	assert_non_null(b0);
	assert_non_null(b1);
	n0 = entries_of(st, b0);
	n1 = entries_of(st, b1);
	assert_true(n0 > 0 && n1 > 0);
	assert_int_equal(pstats(st).entries, n0 + n1);
	fill(st, T0 + 4 * RANGE, RANGE);
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
	assert_int_equal(ms.expired_blocks, 1); /* b0 */
	assert_int_equal(pstats(st).entries, n1);
	assert_int_equal(entries_of(st, b1), n1);

	/* Marked bad. */
	store__block_bad(b1, "a test marks it");
	assert_int_equal(entries_of(st, b1), 0);
	assert_int_equal(pstats(st).entries, 0);
	assert_int_equal(pstats(st).bytes, 0);
	store_close(st);
	tmpdir_free(dir);

	/* Compaction: the sources' pages leave, the output's are read anew. */
	dir = tmpdir_new();
	st = open_cap(dir, 0, 0);
	assert_non_null(st);
	st->grace_ns = 3600 * SEC; /* replaced blocks stay referenced in the grave */
	fill(st, T0, 3 * RANGE);
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	d = dump_all(st);
	n = pstats(st).entries;
	assert_true(n > 0);
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compacted_blocks, 3);
	assert_int_equal(pstats(st).entries, 0);
	assert_int_equal(pstats(st).bytes, 0);
	{
		char *after = dump_all(st);
		assert_string_equal(after, d);
		assert_true(pstats(st).entries > 0);
		free(after);
	}
	free(d);
	store_close(st);
	tmpdir_free(dir);
}

/*
 * Head chunks: a warm read of the head decodes nothing and answers as the
 * cold one; an append to a window, a second epoch's chunk in a window and
 * RocksDB's re-encoding of the chunks each change what the head holds,
 * and the cached answer is then the answer of a store opened afresh (no
 * cache); sealing drops the head's entries.
 */
static void test_head_chunks(void **state)
{
	char *dir = tmpdir_new();
	struct store_page_cache_stats a, b;
	struct store *st;
	char *cold, *warm, *d;
	(void)state;

	st = open_filled(dir, 0, 3 * 60 * SEC);
	cold = dump_all(st);
	a = pstats(st);
	assert_int_equal(a.head_hits, 0);
	assert_true(a.head_misses > 0);
	assert_int_equal(a.entries, a.head_misses); /* one per window of a series */
	assert_int_equal(a.hits + a.misses, 0);      /* no block yet */
	warm = dump_all(st);
	b = pstats(st);
	assert_string_equal(warm, cold);
	assert_int_equal(b.head_misses, a.head_misses);
	assert_int_equal(b.head_hits, a.head_misses);
	free(warm);

	/* An append to the first window: that window is read again. */
	assert_int_equal(gen_profile(st, "t", "api", "p0", T0 + 7 * SEC, 1, 99), 0);
	warm = dump_all(st);
	assert_string_not_equal(warm, cold);
	b = pstats(st);
	assert_int_equal(b.head_misses, a.head_misses + 1);
	store_close(st);
	st = open_cap(dir, 0, 0);
	assert_non_null(st);
	d = dump_all(st);
	assert_string_equal(d, warm);
	free(d);
	free(warm);
	free(cold);

	/* A seal starts an epoch: a window of the next range gets a chunk of
	 * the new epoch beside its chunk of the old one.  Read cold (cache
	 * emptied by a reopen) and warm. */
	fill(st, T0 + RANGE, 3 * 60 * SEC);
	fake_now = T0 + RANGE + 3 * 60 * SEC;
	assert_int_equal(store_maintain(st, 0, NULL, NULL), 0);
	assert_non_null(block_at(st, T0));
	assert_int_equal(gen_profile(st, "t", "db", "p1", T0 + RANGE + 9 * SEC, 1, 98), 0);
	warm = dump_all(st);
	for (int round = 0; round < 2; round++) {
		store_close(st);
		st = open_cap(dir, 0, 0);
		assert_non_null(st);
		for (int i = 0; i < 2; i++) { /* cold, then warm */
			d = dump_all(st);
			assert_string_equal(d, warm);
			free(d);
		}
	}
	assert_true(pstats(st).head_hits > 0);

	/* RocksDB's compaction re-encodes the chunks: new bytes, same profiles. */
	a = pstats(st);
	assert_int_equal(store_compact(st, NULL), 0);
	d = dump_all(st);
	assert_string_equal(d, warm);
	b = pstats(st);
	assert_true(b.head_misses > a.head_misses);
	free(d);
	free(warm);

	/* Sealing deletes the chunks, and their entries: what stays are the
	 * pages of the block sealed above (none of the new one is read yet). */
	assert_true(pstats(st).entries > entries_of(st, block_at(st, T0)));
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	assert_int_equal(pstats(st).entries, entries_of(st, block_at(st, T0)));
	store_close(st);
	tmpdir_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_warm_same),
		cmocka_unit_test(test_cap_evicts),
		cmocka_unit_test(test_pins),
		cmocka_unit_test(test_blocks_leave),
		cmocka_unit_test(test_head_chunks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
