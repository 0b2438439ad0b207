/* test_blocks.c - the head and its blocks: sealing and compaction keep every
 * profile exactly once (the same content before and after, and after a
 * reopen), epochs free the head's symbols, readers keep a consistent view
 * while blocks change under them, a seal or a compaction interrupted by a
 * crash is finished at open without double counting, retention removes
 * exactly the expired blocks, and corrupt or missing blocks are reported
 * and skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockgen.h"
#include "helpers.h"
#include "storage/storage_int.h"

static int64_t fake_now;

static struct store *open_blocks(const char *dir, int64_t retention)
{
	struct store_options o = gen_options(dir, &fake_now);

	o.retention_ns = retention;
	return open_options(&o);
}

/* Profiles of 2 services x 3 pods every 30 s over [t0, t0 + span). */
static size_t fill(struct store *st, int64_t t0, int64_t span, int release)
{
	static const char *svcs[2] = { "api", "db" }, *pods[3] = { "p0", "p1", "p2" };
	size_t n = 0;

	for (int64_t t = t0; t < t0 + span; t += 30 * SEC)
		for (int s = 0; s < 2; s++)
			for (int p = 0; p < 3; p++) {
				assert_int_equal(gen_profile(st, "t", svcs[s], pods[p], t + p * SEC, release,
							     (uint64_t)(t / SEC) + (uint64_t)s * 7 + (uint64_t)p),
						 0);
				n++;
			}
	return n;
}

struct tstats {
	struct store_tenant_stats s;
	int n;
};

static int stats_cb(void *ctx, const struct store_tenant_stats *s)
{
	struct tstats *t = ctx;

	if (strcmp(s->tenant, "t") == 0) {
		t->s = *s;
		t->n++;
	}
	return 0;
}

static struct store_tenant_stats stats_of(struct store *st)
{
	struct tstats t;

	memset(&t, 0, sizeof(t));
	assert_int_equal(store_stats(st, stats_cb, &t, NULL), 0);
	assert_int_equal(t.n, 1);
	return t.s;
}

static size_t count_parts(struct store *st)
{
	struct tenant *t = store__tenant_find(st, "t");
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = t->n_parts;
	pthread_mutex_unlock(&t->mu);
	return n;
}

static void test_seal_compact_same(void **state)
{
	char *dir = tmpdir_new();
	struct store *st;
	struct store_maint_stats ms;
	struct store_tenant_stats s;
	char *before, *after;
	size_t n, series = 0, warn = 1;
	(void)state;

	fake_now = T0 + 100 * RANGE;
	st = open_blocks(dir, 0);
	assert_non_null(st);
	n = fill(st, T0, 3 * RANGE, 1);
	n += fill(st, T0 + 3 * RANGE, 2 * RANGE, 2);
	before = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, &series, &warn);
	assert_non_null(before);
	assert_int_equal(series, 6);
	assert_int_equal(warn, 0);
	s = stats_of(st);
	assert_int_equal(s.profiles, n);
	assert_int_equal(s.head_profiles, n);

	/* Seal: four ranges are over by the clock (the newest profile). */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, 0, &ms, NULL), 0);
	assert_int_equal(ms.sealed_blocks, 4);
	assert_int_equal(ms.compactions, 0); /* their 6-range slot is not over */
	s = stats_of(st);
	assert_int_equal(s.profiles, n);
	assert_int_equal(s.head_profiles, n / 5);
	assert_int_equal(s.blocks, 4);
	after = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, &series, &warn);
	assert_non_null(after);
	assert_string_equal(before, after);
	free(after);
	/* The last one too, on request; then one block of the six ranges. */
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
	assert_int_equal(ms.sealed_blocks, 5);
	assert_int_equal(ms.sealed_profiles, n);
	assert_true(ms.dropped_epochs >= 1);
	assert_int_equal(count_parts(st), 0); /* the head's symbols are gone */
	assert_int_equal(store_maintain(st, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compactions, 1);
	assert_int_equal(ms.compacted_blocks, 5);
	s = stats_of(st);
	assert_int_equal(s.profiles, n);
	assert_int_equal(s.head_profiles, 0);
	assert_int_equal(s.blocks, 1);
	after = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, &series, &warn);
	assert_non_null(after);
	assert_int_equal(series, 6);
	assert_int_equal(warn, 0);
	assert_string_equal(before, after);
	free(after);

	/* A part of the range reads the same profiles from head and blocks. */
	{
		char *part = gen_dump(st, "t", T0 + RANGE + 90 * SEC, T0 + 2 * RANGE, NULL, NULL);
		assert_non_null(part);
		assert_true(strlen(part) > 0 && strlen(part) < strlen(before));
		free(part);
	}

	/* Reopened: the same. */
	store_close(st);
	st = open_blocks(dir, 0);
	assert_non_null(st);
	after = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_non_null(after);
	assert_string_equal(before, after);
	free(after);
	assert_int_equal(stats_of(st).profiles, n);

	/* New profiles go to the head next to the blocks, and are read with them. */
	assert_int_equal(gen_profile(st, "t", "api", "p9", T0 + 5 * RANGE + SEC, 2, 42), 0);
	after = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, &series, NULL);
	assert_int_equal(series, 7);
	assert_true(strlen(after) > strlen(before));
	free(after);
	assert_int_equal(stats_of(st).profiles, n + 1);
	store_close(st);
	free(before);
	tmpdir_free(dir);
}

/* The decoded symbols of blocks compaction replaced leave the block cache at
 * once, not when the grace period of their last readers ends: a backfill
 * compacts a day a minute, and they pushed out the live blocks' symbols. */
static void test_replaced_blocks_leave_cache(void **state)
{
	char *dir = tmpdir_new();
	struct store *st;
	struct store_maint_stats ms;
	char *before, *after;
	(void)state;

	fake_now = T0 + 100 * RANGE;
	st = open_blocks(dir, 0);
	assert_non_null(st);
	st->grace_ns = 3600 * SEC; /* replaced blocks stay listed in the grave */
	fill(st, T0, 3 * RANGE, 1);
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
	assert_int_equal(ms.sealed_blocks, 3);
	before = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_non_null(before);
	assert_true(st->cache.bytes > 0);
	assert_int_equal(store_maintain(st, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compacted_blocks, 3);
	assert_int_equal(st->cache.bytes, 0); /* the output was written, not read */
	after = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_non_null(after);
	assert_string_equal(before, after);
	assert_true(st->cache.bytes > 0);
	free(after);
	free(before);
	store_close(st);
	tmpdir_free(dir);
}

/* store_memory_stats (the /metrics gauges) follows what the store holds:
 * memtables and head partitions after ingest, the blocks' footers and the
 * symbol cache after sealing and a read, none of the retired partitions
 * once their grace is over; and a seal flushes the memtables, so what it
 * deleted does not stay in memory until a write buffer fills (issue 11's
 * month: +5 MiB a day for weeks). */
static void test_memory_stats(void **state)
{
	char *dir = tmpdir_new();
	struct store *st;
	struct store_memory_stats m;
	uint64_t before;
	char *dump;
	(void)state;

	fake_now = T0 + 100 * RANGE;
	st = open_blocks(dir, 0);
	assert_non_null(st);
	fill(st, T0, 2 * RANGE, 1);
	store_memory_stats(st, &m);
	assert_true(m.memtable_bytes > 0);
	assert_int_equal(m.head_partitions, count_parts(st));
	assert_true(m.head_partitions >= 2); /* one per service */
	assert_int_equal(m.head_partitions_retired, 0);
	assert_int_equal(m.blocks_referenced, 0);
	assert_int_equal(m.symbol_cache_bytes, 0);
	before = m.memtable_bytes;
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	store_memory_stats(st, &m);
	/* What sealing moved into blocks and deleted leaves the memtables:
	 * without the flush they would hold it and its deletions too. */
	assert_true(m.memtable_bytes < before / 4);
	assert_int_equal(m.blocks_referenced, 2);
	assert_int_equal(m.head_partitions_retired, 0); /* reclaimed at the pass's end */
	assert_int_equal(m.head_partitions, count_parts(st));
	dump = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_non_null(dump);
	store_memory_stats(st, &m);
	assert_true(m.symbol_cache_bytes > 0);
	assert_int_equal(m.symbol_cache_bytes, st->cache.bytes);
	assert_true(m.block_cache_bytes >= m.block_cache_pinned_bytes);
	free(dump);
	store_close(st);
	tmpdir_free(dir);
}

/* A range sealed after its slot was compacted (a late profile) joins the
 * slot's block: the slot stays one block, every profile counted once. */
static void test_late_range_joins_slot(void **state)
{
	char *dir = tmpdir_new();
	struct store *st;
	struct store_maint_stats ms;
	struct store_tenant_stats s;
	char *before, *after;
	size_t n;
	(void)state;

	fake_now = T0 + 100 * RANGE;
	st = open_blocks(dir, 0);
	assert_non_null(st);
	n = fill(st, T0, 6 * RANGE, 1);
	/* The clock: a profile 2 minutes into the next slot (its range stays open). */
	assert_int_equal(gen_profile(st, "t", "api", "p0", T0 + 6 * RANGE + 120 * SEC, 1, 5), 0);
	n++;
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, 0, &ms, NULL), 0);
	assert_int_equal(ms.sealed_blocks, 6);
	assert_int_equal(ms.compactions, 1);
	assert_int_equal(stats_of(st).blocks, 1);

	/* Late: a profile of the third range, after its slot was compacted. */
	assert_int_equal(gen_profile(st, "t", "db", "p7", T0 + 2 * RANGE + 5 * SEC, 2, 77), 0);
	n++;
	before = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_non_null(before);
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, 0, &ms, NULL), 0);
	assert_int_equal(ms.sealed_blocks, 1);
	assert_int_equal(ms.compactions, 1);
	assert_int_equal(ms.compacted_blocks, 2);
	s = stats_of(st);
	assert_int_equal(s.blocks, 1);
	assert_int_equal(s.profiles, n);
	assert_int_equal(s.head_profiles, 1);
	after = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_non_null(after);
	assert_string_equal(before, after);
	free(after);
	/* Nothing more to do: a slot's lone block is not compacted again. */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, 0, &ms, NULL), 0);
	assert_int_equal(ms.compactions, 0);
	store_close(st);
	free(before);
	tmpdir_free(dir);
}

static void test_seal_only_ended_ranges(void **state)
{
	char *dir = tmpdir_new();
	struct store *st;
	struct store_maint_stats ms;
	struct store_tenant_stats s;
	(void)state;

	fake_now = T0 + 100 * RANGE; /* the wall clock is far ahead; the data is not */
	st = open_blocks(dir, 0);
	fill(st, T0, RANGE + 30 * SEC, 1); /* up to 30 s into the second range */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, 0, &ms, NULL), 0);
	/* The clock is the newest profile (T0 + RANGE + 32 s): range 0 ended
	 * less than the seal delay ago, so nothing is sealed yet. */
	assert_int_equal(ms.sealed_blocks, 0);
	fill(st, T0 + RANGE + 60 * SEC, 60 * SEC, 1);
	/* A reopen finds the clock again (the newest profile, not its window). */
	store_close(st);
	st = open_blocks(dir, 0);
	assert_int_equal(store_maintain(st, 0, &ms, NULL), 0);
	assert_int_equal(ms.sealed_blocks, 1);
	s = stats_of(st);
	assert_int_equal(s.blocks, 1);
	assert_true(s.head_profiles > 0);
	assert_int_equal(s.oldest_ns, T0);
	/* Sealing everything, on request. */
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
	s = stats_of(st);
	assert_int_equal(s.head_profiles, 0);
	assert_int_equal(s.blocks, 2);
	store_close(st);
	tmpdir_free(dir);
}

/* Counts regular files in dir/blocks/t. */
static int count_files(const char *dir, const char *suffix)
{
	char path[512];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/blocks/t", dir);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (strstr(de->d_name, suffix))
			n++;
	closedir(d);
	return n;
}

struct blist {
	char id[16][40];
	int64_t max[16];
	int n;
	int bad;
};

static int blist_cb(void *ctx, const struct store_block_info *b)
{
	struct blist *l = ctx;

	if (l->n < 16) {
		snprintf(l->id[l->n], sizeof(l->id[0]), "%s", b->id);
		l->max[l->n++] = b->max_time;
	}
	if (b->error)
		l->bad++;
	return 0;
}

static void test_retention(void **state)
{
	char *dir = tmpdir_new();
	struct store *st;
	struct store_maint_stats ms;
	struct store_tenant_stats s;
	struct blist l;
	size_t n_late;
	(void)state;

	fake_now = T0 + 100 * RANGE;
	st = open_blocks(dir, 3 * RANGE);
	fill(st, T0, 2 * RANGE, 1);
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	n_late = fill(st, T0 + 4 * RANGE, RANGE, 1);
	memset(&ms, 0, sizeof(ms));
	/*
	 * The clock is the newest profile, T0 + 5 ranges - 28 s: the block of
	 * range 0 (newest profile T0 + 1 range - 28 s) is past 3 ranges; the
	 * block of range 1 holds a profile of exactly the cutoff and stays.
	 */
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
	assert_int_equal(ms.expired_blocks, 1);
	s = stats_of(st);
	assert_int_equal(s.expired_blocks, 1);
	assert_int_equal(s.expired_profiles, n_late);
	assert_int_equal(s.profiles, 2 * n_late);
	assert_int_equal(s.oldest_ns, T0 + RANGE);
	memset(&l, 0, sizeof(l));
	assert_int_equal(store_blocks_each(st, "t", blist_cb, &l, NULL), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(count_files(dir, ".blk"), 2);
	/* Nothing more to expire. */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, 0, &ms, NULL), 0);
	assert_int_equal(ms.expired_blocks, 0);
	store_close(st);
	/* Counters survive a reopen. */
	st = open_blocks(dir, 3 * RANGE);
	s = stats_of(st);
	assert_int_equal(s.expired_blocks, 1);
	assert_int_equal(s.profiles, 2 * n_late);
	store_close(st);
	tmpdir_free(dir);
}

/* Copies file a to b. */
static void copy_file(const char *a, const char *b)
{
	struct buf x;
	FILE *f;

	buf_init(&x, (size_t)1 << 30);
	assert_int_equal(buf_read_file(&x, a), 0);
	f = fopen(b, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(x.data, 1, x.len, f), x.len);
	fclose(f);
	buf_release(&x);
}

struct saved_chunks {
	struct buf keys[256], vals[256];
	int n;
};

/* Every head chunk of tenant 1, raw. */
static void save_chunks(struct store *st, struct saved_chunks *sc)
{
	uint8_t lo[5], hi[5];
	struct scan s;

	key_tenant_tag(lo, 1, TAG_CHUNK);
	key_tenant_tag(hi, 1, TAG_CHUNK + 1);
	assert_int_equal(store__scan_open(st, CFI_SAMPLES, &s, lo, 5, hi, 5), 0);
	for (; rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(s.it, &kl), *v = rocksdb_iter_value(s.it, &vl);
		assert_true(sc->n < 256);
		buf_init(&sc->keys[sc->n], 64);
		buf_init(&sc->vals[sc->n], 1 << 26);
		buf_append(&sc->keys[sc->n], k, kl);
		buf_append(&sc->vals[sc->n], v, vl);
		sc->n++;
	}
	assert_int_equal(store__scan_close(&s, NULL), 0);
}

static void test_interrupted_seal(void **state)
{
	char *dir = tmpdir_new();
	struct saved_chunks sc;
	struct store *st;
	char *before, *after;
	size_t n;
	(void)state;

	/* A seal that wrote its block and stopped before deleting the head's
	 * chunks: put the chunks back and forget the block's record. */
	fake_now = T0 + 100 * RANGE;
	st = open_blocks(dir, 0);
	n = fill(st, T0, RANGE, 1);
	before = gen_dump(st, "t", T0, T0 + RANGE, NULL, NULL);
	memset(&sc, 0, sizeof(sc));
	save_chunks(st, &sc);
	assert_true(sc.n > 0);
	{
		uint8_t ck[5];
		struct buf ctr[CTR_N];
		for (int c = 1; c < CTR_N; c++) {
			key_tenant_tag(ck, 1, (uint8_t)c);
			buf_init(&ctr[c], 64);
			store__raw_get(st, CFI_COUNTERS, ck, 5, &ctr[c]);
		}
		assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
		assert_int_equal(stats_of(st).head_profiles, 0);
		for (int c = 1; c < CTR_N; c++) {
			key_tenant_tag(ck, 1, (uint8_t)c);
			if (ctr[c].len)
				assert_int_equal(store__raw_put(st, CFI_COUNTERS, ck, 5, ctr[c].data, 8), 0);
			buf_release(&ctr[c]);
		}
	}
	for (int i = 0; i < sc.n; i++)
		assert_int_equal(store__raw_put(st, CFI_SAMPLES, sc.keys[i].data, sc.keys[i].len,
						sc.vals[i].data, sc.vals[i].len), 0);
	{
		uint8_t lo[5], hi[5];
		struct scan s;
		key_tenant_tag(lo, 1, TAG_BLOCK);
		key_tenant_tag(hi, 1, TAG_BLOCK + 1);
		assert_int_equal(store__scan_open(st, CFI_META, &s, lo, 5, hi, 5), 0);
		assert_true(rocksdb_iter_valid(s.it));
		{
			size_t kl;
			const char *k = rocksdb_iter_key(s.it, &kl);
			char *err = NULL;
			rocksdb_delete_cf(st->db, st->wopt, st->cf[CFI_META], k, kl, &err);
			assert_null(err);
		}
		store__scan_close(&s, NULL);
	}
	store_close(st);
	/* Open finishes the seal: the block is adopted, the chunks it holds go. */
	st = open_blocks(dir, 0);
	assert_int_equal(count_files(dir, ".blk"), 1);
	after = gen_dump(st, "t", T0, T0 + RANGE, NULL, NULL);
	assert_string_equal(before, after);
	assert_int_equal(stats_of(st).profiles, n);
	assert_int_equal(stats_of(st).head_profiles, 0);
	for (int i = 0; i < sc.n; i++) {
		struct buf v;
		buf_init(&v, 1 << 26);
		assert_int_equal(store__raw_get(st, CFI_SAMPLES, sc.keys[i].data, sc.keys[i].len, &v),
				 ERR_NOT_FOUND);
		buf_release(&v);
		buf_release(&sc.keys[i]);
		buf_release(&sc.vals[i]);
	}
	free(after);
	free(before);
	store_close(st);
	tmpdir_free(dir);
}

static void test_interrupted_compaction(void **state)
{
	char *dir = tmpdir_new(), path[512], saved[8][512];
	struct store *st;
	struct blist l;
	char *before, *after;
	size_t n;
	(void)state;

	/* A compaction that wrote its output and stopped before deleting its
	 * sources: put the sources back. */
	fake_now = T0 + 100 * RANGE;
	st = open_blocks(dir, 0);
	n = fill(st, T0, 3 * RANGE, 1);
	before = gen_dump(st, "t", T0, T0 + 3 * RANGE, NULL, NULL);
	/* Seal range by range so that the compaction has 3 sources. */
	fake_now = T0 + 3 * RANGE;
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	memset(&l, 0, sizeof(l));
	assert_int_equal(store_blocks_each(st, "t", blist_cb, &l, NULL), 0);
	assert_int_equal(l.n, 3);
	for (int i = 0; i < l.n; i++) {
		snprintf(path, sizeof(path), "%s/blocks/t/%s.blk", dir, l.id[i]);
		snprintf(saved[i], sizeof(saved[i]), "%s/saved-%d", dir, i);
		copy_file(path, saved[i]);
	}
	assert_int_equal(store_maintain(st, STORE_MAINT_COMPACT_ALL, NULL, NULL), 0);
	assert_int_equal(count_files(dir, ".blk"), 1);
	for (int i = 0; i < l.n; i++) {
		snprintf(path, sizeof(path), "%s/blocks/t/%s.blk", dir, l.id[i]);
		copy_file(saved[i], path);
	}
	store_close(st);
	st = open_blocks(dir, 0);
	assert_int_equal(count_files(dir, ".blk"), 1); /* the sources went at open */
	after = gen_dump(st, "t", T0, T0 + 3 * RANGE, NULL, NULL);
	assert_string_equal(before, after);
	assert_int_equal(stats_of(st).profiles, n);
	free(after);
	free(before);
	store_close(st);
	tmpdir_free(dir);
}

/* Flips one byte at `off` from the end (negative) or start of the only block file. */
static void flip(const char *dir, long off)
{
	char path[512];
	struct dirent *de;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "%s/blocks/t", dir);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".blk"))
			snprintf(path, sizeof(path), "%s/blocks/t/%s", dir, de->d_name);
	closedir(d);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	{
		struct stat sb;
		unsigned char c;
		off_t at;
		fstat(fd, &sb);
		at = off < 0 ? sb.st_size + off : off;
		assert_int_equal(pread(fd, &c, 1, at), 1);
		c ^= 0x5a;
		assert_int_equal(pwrite(fd, &c, 1, at), 1);
	}
	close(fd);
}

static int verify_cb(void *ctx, const struct store_block_info *b)
{
	struct blist *l = ctx;

	l->n++;
	if (b->error)
		l->bad++;
	return 0;
}

static void test_corrupt_blocks(void **state)
{
	char *dir = tmpdir_new();
	struct store *st;
	struct blist l;
	char *d;
	size_t warn = 0, n_head;
	(void)state;

	fake_now = T0 + 100 * RANGE;
	st = open_blocks(dir, 0);
	fill(st, T0, RANGE, 1);
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	memset(&l, 0, sizeof(l));
	assert_int_equal(store_verify(st, verify_cb, &l, NULL), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.bad, 0);
	store_close(st);

	/* A page: the first bytes after the header are the first page. */
	flip(dir, 40);
	st = open_blocks(dir, 0);
	n_head = fill(st, T0 + 2 * RANGE, 60 * SEC, 1); /* the rest stays writable */
	d = gen_dump(st, "t", T0, T0 + 3 * RANGE, NULL, &warn);
	assert_non_null(d);
	assert_int_equal(warn, 1);
	{
		size_t lines = 0;
		for (const char *p = d; *p; p++)
			lines += *p == '\n';
		assert_int_equal(lines, n_head); /* the block left out whole */
	}
	free(d);
	memset(&l, 0, sizeof(l));
	assert_int_equal(store_verify(st, verify_cb, &l, NULL), ERR_CORRUPT);
	assert_int_equal(l.bad, 1);
	store_close(st);

	/* The footer. */
	flip(dir, 40);
	flip(dir, -20);
	st = open_blocks(dir, 0);
	assert_non_null(st);
	d = gen_dump(st, "t", T0, T0 + 3 * RANGE, NULL, &warn);
	assert_int_equal(warn, 1);
	free(d);
	assert_int_equal(stats_of(st).blocks_unreadable, 1);
	memset(&l, 0, sizeof(l));
	assert_int_equal(store_verify(st, verify_cb, &l, NULL), ERR_CORRUPT);
	assert_int_equal(l.bad, 1);
	store_close(st);

	/* Missing. */
	{
		char path[512];
		struct dirent *de;
		DIR *dd;
		snprintf(path, sizeof(path), "%s/blocks/t", dir);
		dd = opendir(path);
		while ((de = readdir(dd)))
			if (strstr(de->d_name, ".blk")) {
				snprintf(path, sizeof(path), "%s/blocks/t/%s", dir, de->d_name);
				unlink(path);
				break;
			}
		closedir(dd);
	}
	st = open_blocks(dir, 0);
	d = gen_dump(st, "t", T0, T0 + 3 * RANGE, NULL, &warn);
	assert_int_equal(warn, 1);
	free(d);
	d = gen_dump(st, "t", T0 + 2 * RANGE, T0 + 3 * RANGE, NULL, &warn);
	assert_int_equal(warn, 0); /* another range: no warning */
	free(d);
	memset(&l, 0, sizeof(l));
	assert_int_equal(store_verify(st, verify_cb, &l, NULL), ERR_CORRUPT);
	assert_int_equal(l.bad, 1);
	store_close(st);
	tmpdir_free(dir);
}

/* A thread that reads (r->read says whether a read was right) while the
 * test seals and compacts. */
struct race {
	struct store *st;
	int (*read)(struct race *r);
	const char *expect;         /* reader_read: the dump every read gives */
	uint64_t profiles, samples; /* stats_read: what every read counts */
	_Atomic int stop;
	_Atomic int bad;
	_Atomic int reads;
};

static void *race_main(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->stop)) {
		if (!r->read(r))
			atomic_fetch_add(&r->bad, 1);
		atomic_fetch_add(&r->reads, 1);
	}
	return NULL;
}

/* Seals the four ranges fill() wrote one by one, then compacts, while
 * r->read runs in a loop from before the first seal to after the
 * compaction; the wrong reads. */
static int race_maintain(struct race *r)
{
	pthread_t th;
	int at;

	r->stop = 0;
	r->bad = 0;
	r->reads = 0;
	assert_int_equal(pthread_create(&th, NULL, race_main, r), 0);
	while (atomic_load(&r->reads) < 1)
		usleep(1000);
	for (int i = 1; i <= 4; i++) {
		fake_now = T0 + i * RANGE;
		assert_int_equal(store_maintain(r->st, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	}
	assert_int_equal(store_maintain(r->st, STORE_MAINT_COMPACT_ALL, NULL, NULL), 0);
	at = atomic_load(&r->reads);
	while (atomic_load(&r->reads) < at + 2)
		usleep(1000);
	atomic_store(&r->stop, 1);
	pthread_join(th, NULL);
	return atomic_load(&r->bad);
}

static int reader_read(struct race *r)
{
	char *d = gen_dump(r->st, "t", T0, T0 + 4 * RANGE, NULL, NULL);
	int ok = d && strcmp(d, r->expect) == 0;

	free(d);
	return ok;
}

static void test_readers_during_maintenance(void **state)
{
	char *dir = tmpdir_new(), *expect;
	struct race r = { 0 };
	(void)state;

	fake_now = T0 + 100 * RANGE;
	r.st = open_blocks(dir, 0);
	fill(r.st, T0, 4 * RANGE, 1);
	expect = gen_dump(r.st, "t", T0, T0 + 4 * RANGE, NULL, NULL);
	r.expect = expect;
	r.read = reader_read;
	assert_int_equal(race_maintain(&r), 0);
	store_close(r.st);
	free(expect);
	tmpdir_free(dir);
}

static int stats_read(struct race *r)
{
	struct tstats t;

	memset(&t, 0, sizeof(t));
	return store_stats(r->st, stats_cb, &t, NULL) == 0 && t.n == 1 &&
	       t.s.profiles == r->profiles && t.s.samples == r->samples;
}

/*
 * A seal moves profiles from the head's counters to a block in one
 * commit: statistics read meanwhile count every profile once, never in
 * both places (nor in neither).
 */
static void test_stats_during_maintenance(void **state)
{
	char *dir = tmpdir_new();
	struct store_tenant_stats s;
	struct race r = { 0 };
	(void)state;

	fake_now = T0 + 100 * RANGE;
	r.st = open_blocks(dir, 0);
	fill(r.st, T0, 4 * RANGE, 1);
	s = stats_of(r.st);
	assert_true(s.profiles > 0);
	r.profiles = s.profiles;
	r.samples = s.samples;
	r.read = stats_read;
	assert_int_equal(race_maintain(&r), 0);
	s = stats_of(r.st);
	assert_int_equal(s.blocks, 1);
	assert_int_equal(s.head_profiles, 0);
	assert_int_equal(s.profiles, r.profiles);
	assert_int_equal(s.samples, r.samples);
	store_close(r.st);
	tmpdir_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seal_compact_same),
		cmocka_unit_test(test_seal_only_ended_ranges),
		cmocka_unit_test(test_late_range_joins_slot),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_replaced_blocks_leave_cache),
		cmocka_unit_test(test_memory_stats),
		cmocka_unit_test(test_interrupted_seal),
		cmocka_unit_test(test_interrupted_compaction),
		cmocka_unit_test(test_corrupt_blocks),
		cmocka_unit_test(test_readers_during_maintenance),
		cmocka_unit_test(test_stats_during_maintenance),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
