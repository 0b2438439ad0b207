/* test_samples.c - columnar sample chunks: round trip with aggregation, time
 * ranges across windows, merge-operator compaction, atomicity, and corrupt
 * or truncated chunks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/varint.h"
#include "helpers.h"
#include "storage/storage_int.h"

#define SEC 1000000000LL
#define WINDOW (60 * SEC)

struct fixture {
	char *dir;
	struct store *st;
	uint64_t series;
	uint32_t part;
	uint32_t stacks[50];
};

/* A store with one series and 50 distinct stacks. */
static void fixture_open(struct fixture *f)
{
	struct store_txn *tx;

	memset(f, 0, sizeof(*f));
	f->dir = tmpdir_new();
	f->st = open_store(f->dir, 0, WINDOW);
	assert_non_null(f->st);
	tx = begin(f->st, "t");
	assert_int_equal(add_series(tx, "svc", "a", &f->series), 0);
	assert_int_equal(store_txn_partition(tx, "svc", &f->part), 0);
	for (int i = 0; i < 50; i++) {
		struct store_location l = { 0, 0x1000 + (uint64_t)i, NULL, 0 };
		uint32_t loc;
		assert_int_equal(store_txn_location(tx, f->part, &l, &loc), 0);
		assert_int_equal(store_txn_stack(tx, f->part, &loc, 1, &f->stacks[i]), 0);
	}
	assert_int_equal(commit(tx), 0);
}

static void fixture_close(struct fixture *f)
{
	store_close(f->st);
	tmpdir_free(f->dir);
}

/* Profile k: time base + k seconds, pairs (stacks[j], k * 100 + j) for j < n. */
static void add_profile(struct store_txn *tx, struct fixture *f, int64_t time_ns, int k, int n)
{
	uint32_t ids[50];
	int64_t vals[50];
	struct store_profile_meta m = { time_ns, 10 * SEC, 10000000, { 0 } };

	for (int j = 0; j < n; j++) {
		/* Given in reverse order, so the store must sort. */
		ids[j] = f->stacks[n - 1 - j];
		vals[j] = (int64_t)k * 100 + (n - 1 - j);
	}
	assert_int_equal(store_txn_profile(tx, f->series, f->part, &m, ids, vals, (size_t)n), 0);
}

struct collect {
	int n;
	int64_t times[4096];
	int64_t sum;
	size_t pairs;
	int sorted;
};

static int collect_cb(void *ctx, const struct store_profile_view *p)
{
	struct collect *c = ctx;

	if (c->n >= 4096)
		return -100;
	c->times[c->n++] = p->meta.time_ns;
	for (size_t i = 0; i < p->n; i++) {
		c->sum += p->values[i];
		if (i && p->stack_ids[i - 1] >= p->stack_ids[i])
			c->sorted = 0;
	}
	c->pairs += p->n;
	return 0;
}

static int read_range(struct fixture *f, int64_t from, int64_t until, struct collect *c)
{
	struct err_msg msg = { { 0 } };
	int rc;

	memset(c, 0, sizeof(*c));
	c->sorted = 1;
	rc = store_profiles_each(f->st, "t", f->series, from, until, collect_cb, c, &msg);
	if (rc)
		fprintf(stderr, "store_profiles_each: %s: %s\n", err_str(rc), msg.text);
	return rc;
}

/* The profile both round-trip tests write: values { 5, 7, -3, 0, 11 } on
 * stacks[3] twice (summed), stacks[1], stacks[2] and the empty stack. */
struct mixed {
	uint32_t ids[5];
	int64_t vals[5];
	struct store_profile_meta m;
};

static void mixed_init(struct mixed *x, const struct fixture *f, int64_t t0)
{
	static const int64_t vals[5] = { 5, 7, -3, 0, 11 };
	struct store_profile_meta m = { t0, SEC, 7, { 0 } };

	x->ids[0] = f->stacks[3];
	x->ids[1] = f->stacks[1];
	x->ids[2] = f->stacks[3];
	x->ids[3] = f->stacks[2];
	x->ids[4] = 0;
	memcpy(x->vals, vals, sizeof(vals));
	x->m = m;
}

static void test_round_trip_aggregates(void **state)
{
	struct fixture f;
	struct store_txn *tx;
	struct collect c;
	struct mixed x;
	int64_t t0 = 1700000000 * SEC;
	(void)state;

	fixture_open(&f);
	mixed_init(&x, &f, t0);
	tx = begin(f.st, "t");
	assert_int_equal(store_txn_profile(tx, f.series, f.part, &x.m, x.ids, x.vals, 5), 0);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(read_range(&f, t0, t0 + 1, &c), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.pairs, 4); /* stacks[3] summed */
	assert_int_equal(c.sum, 20);
	assert_true(c.sorted);
	fixture_close(&f);
}

static int exact_cb(void *ctx, const struct store_profile_view *p)
{
	const struct fixture *f = ctx;

	assert_int_equal(p->n, 4);
	assert_int_equal(p->part, f->part);
	assert_int_equal(p->meta.duration_ns, SEC);
	assert_int_equal(p->meta.period, 7);
	assert_int_equal(p->stack_ids[0], 0);
	assert_int_equal(p->values[0], 11);
	assert_int_equal(p->stack_ids[1], f->stacks[1]);
	assert_int_equal(p->values[1], 7);
	assert_int_equal(p->stack_ids[2], f->stacks[2]);
	assert_int_equal(p->values[2], 0); /* zero values are kept */
	assert_int_equal(p->stack_ids[3], f->stacks[3]);
	assert_int_equal(p->values[3], 2);
	return 0;
}

static void test_exact_content(void **state)
{
	struct fixture f;
	struct store_txn *tx;
	struct mixed x;
	(void)state;

	fixture_open(&f);
	mixed_init(&x, &f, -5 * SEC); /* negative times work too */
	tx = begin(f.st, "t");
	assert_int_equal(store_txn_profile(tx, f.series, f.part, &x.m, x.ids, x.vals, 5), 0);
	/* A stack id that does not exist is refused. */
	x.ids[0] = 9999;
	assert_int_equal(store_txn_profile(tx, f.series, f.part, &x.m, x.ids, x.vals, 5),
			 ERR_INVALID);
	assert_int_equal(store_txn_profile(tx, 777, f.part, &x.m, x.ids + 1, x.vals, 1),
			 ERR_INVALID);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(store_profiles_each(f.st, "t", f.series, INT64_MIN, INT64_MAX, exact_cb,
					     &f, NULL),
			 0);
	fixture_close(&f);
}

static void test_time_ranges(void **state)
{
	struct fixture f;
	struct store_txn *tx;
	struct collect c;
	int64_t t0 = 1700000000 * SEC - 1700000000 * SEC % WINDOW;
	(void)state;

	fixture_open(&f);
	/* 200 profiles 10 s apart span 34 windows, written out of order over
	 * several txns. */
	for (int round = 0; round < 4; round++) {
		tx = begin(f.st, "t");
		for (int k = round; k < 200; k += 4)
			add_profile(tx, &f, t0 + (int64_t)(199 - k) * 10 * SEC, k, 5);
		assert_int_equal(commit(tx), 0);
	}
	assert_int_equal(read_range(&f, INT64_MIN, INT64_MAX, &c), 0);
	assert_int_equal(c.n, 200);
	for (int i = 1; i < c.n; i++)
		assert_true(c.times[i - 1] < c.times[i]);
	/* [t0 + 55 s, t0 + 125 s): profiles at 60..120 s, crossing windows. */
	assert_int_equal(read_range(&f, t0 + 55 * SEC, t0 + 125 * SEC, &c), 0);
	assert_int_equal(c.n, 7);
	assert_int_equal(c.times[0], t0 + 60 * SEC);
	assert_int_equal(c.times[6], t0 + 120 * SEC);
	/* Bounds are [from, until). */
	assert_int_equal(read_range(&f, t0 + 60 * SEC, t0 + 120 * SEC, &c), 0);
	assert_int_equal(c.n, 6);
	assert_int_equal(read_range(&f, t0 + 120 * SEC, t0 + 60 * SEC, &c), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(read_range(&f, t0 - WINDOW * 10, t0, &c), 0);
	assert_int_equal(c.n, 0);
	/* Another series and another tenant see nothing. */
	assert_int_equal(store_profiles_each(f.st, "t", f.series + 1, INT64_MIN, INT64_MAX,
					     collect_cb, &c, NULL),
			 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(store_profiles_each(f.st, "other", f.series, INT64_MIN, INT64_MAX,
					     collect_cb, &c, NULL),
			 0);
	assert_int_equal(c.n, 0);
	/* A callback's non-zero return stops the scan and is returned. */
	memset(&c, 0, sizeof(c));
	c.n = 4096;
	assert_int_equal(store_profiles_each(f.st, "t", f.series, INT64_MIN, INT64_MAX,
					     collect_cb, &c, NULL),
			 -100);
	fixture_close(&f);
}

/* Counts the blocks of a chunk value and how many are zstd-compressed. */
static size_t count_blocks(const struct buf *raw, size_t *zstd)
{
	size_t blocks = 0;

	*zstd = 0;
	for (size_t at = 0; at < raw->len;) {
		uint64_t stored = 0, rawlen = 0;
		size_t k;
		assert_int_equal((uint8_t)raw->data[at], CHUNK_MAGIC);
		*zstd += raw->data[at + 1] == 1;
		at += 2;
		k = varint_get((uint8_t *)raw->data + at, (uint8_t *)raw->data + raw->len, &stored);
		assert_true(k > 0);
		at += k;
		k = varint_get((uint8_t *)raw->data + at, (uint8_t *)raw->data + raw->len, &rawlen);
		assert_true(k > 0);
		at += k + stored;
		assert_true(at <= raw->len);
		blocks++;
	}
	return blocks;
}

static void chunk_blocks(struct fixture *f, int64_t window, size_t *blocks, size_t *zstd)
{
	uint8_t key[CHUNK_KEY_LEN];
	struct buf raw;

	store__chunk_key(key, 1, f->series, window, 1); /* a new tenant writes epoch 1 */
	buf_init(&raw, STORE_MAX_CHUNK_BLOCK);
	assert_int_equal(store__raw_get(f->st, CFI_SAMPLES, key, sizeof(key), &raw), 0);
	*blocks = count_blocks(&raw, zstd);
	buf_release(&raw);
}

static void test_merge_compaction(void **state)
{
	struct fixture f;
	struct store_txn *tx;
	struct collect before, after;
	int64_t t0 = 1000 * WINDOW;
	size_t blocks = 0, zstd = 0;
	(void)state;

	fixture_open(&f);
	/* 60 commits of one profile each into one window: 60 merge operands,
	 * committed in reverse time order so the reader must merge them. */
	for (int k = 0; k < 60; k++) {
		tx = begin(f.st, "t");
		add_profile(tx, &f, t0 + (int64_t)(59 - k) * SEC, k, 1 + k % 50);
		assert_int_equal(commit(tx), 0);
	}
	assert_int_equal(read_range(&f, t0, t0 + WINDOW, &before), 0);
	assert_int_equal(before.n, 60);
	for (int i = 1; i < 60; i++)
		assert_true(before.times[i - 1] < before.times[i]);
	/* A read merges by concatenation only: 60 raw blocks, nothing compressed. */
	chunk_blocks(&f, 1000, &blocks, &zstd);
	assert_int_equal(blocks, 60);
	assert_int_equal(zstd, 0);
	/* A flush does not recode either (filters do not run on flushes). */
	assert_int_equal(store_flush(f.st, NULL), 0);
	chunk_blocks(&f, 1000, &blocks, &zstd);
	assert_int_equal(blocks, 60);
	/* A compaction makes it one columnar zstd block. */
	assert_int_equal(store_compact(f.st, NULL), 0);
	assert_int_equal(read_range(&f, t0, t0 + WINDOW, &after), 0);
	assert_int_equal(after.n, before.n);
	assert_memory_equal(after.times, before.times, sizeof(int64_t) * 60);
	assert_int_equal(after.sum, before.sum);
	assert_int_equal(after.pairs, before.pairs);
	assert_true(after.sorted);
	chunk_blocks(&f, 1000, &blocks, &zstd);
	assert_int_equal(blocks, 1);
	assert_int_equal(zstd, 1);
	/* New operands on top of the compacted block merge and read back. */
	tx = begin(f.st, "t");
	add_profile(tx, &f, t0 + 30 * SEC + 1, 99, 5);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(read_range(&f, t0, t0 + WINDOW, &after), 0);
	assert_int_equal(after.n, 61);
	assert_int_equal(after.times[31], t0 + 30 * SEC + 1);
	chunk_blocks(&f, 1000, &blocks, &zstd);
	assert_int_equal(blocks, 2);
	/* It survives a reopen too, and compacts again into one block. */
	store_close(f.st);
	f.st = open_store(f.dir, 0, 0);
	assert_non_null(f.st);
	assert_int_equal(store__compact(f.st, CFI_SAMPLES), 0);
	chunk_blocks(&f, 1000, &blocks, &zstd);
	assert_int_equal(blocks, 1);
	assert_int_equal(read_range(&f, t0, t0 + WINDOW, &after), 0);
	assert_int_equal(after.n, 61);
	assert_int_equal(after.sum, before.sum + 99 * 100 * 5 + (0 + 1 + 2 + 3 + 4));
	fixture_close(&f);
}

static void test_abort_and_reopen(void **state)
{
	struct fixture f;
	struct store_txn *tx;
	struct collect c;
	(void)state;

	fixture_open(&f);
	tx = begin(f.st, "t");
	add_profile(tx, &f, 10 * SEC, 1, 3);
	assert_int_equal(commit(tx), 0);
	tx = begin(f.st, "t");
	add_profile(tx, &f, 11 * SEC, 2, 3);
	store_txn_abort(tx);
	assert_int_equal(read_range(&f, 0, 100 * SEC, &c), 0);
	assert_int_equal(c.n, 1);
	store_close(f.st);
	f.st = open_store(f.dir, 0, 0);
	assert_int_equal(read_range(&f, 0, 100 * SEC, &c), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.times[0], 10 * SEC);
	fixture_close(&f);
}

static void test_corrupt_chunk(void **state)
{
	struct fixture f;
	struct store_txn *tx;
	struct collect c;
	struct err_msg msg = { { 0 } };
	uint8_t key[CHUNK_KEY_LEN];
	(void)state;

	fixture_open(&f);
	store__chunk_key(key, 1, f.series, 0, 1);
	assert_int_equal(store__raw_put(f.st, CFI_SAMPLES, key, sizeof(key), "garbage!", 8), 0);
	/* Merges on top of garbage keep working (the DB stays writable). */
	tx = begin(f.st, "t");
	add_profile(tx, &f, 1 * SEC, 1, 3);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(store_flush(f.st, NULL), 0);
	assert_int_equal(store__compact(f.st, CFI_SAMPLES), 0);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_profiles_each(f.st, "t", f.series, 0, WINDOW, collect_cb, &c, &msg),
			 ERR_CORRUPT);
	assert_non_null(strstr(msg.text, "chunk"));
	/* Other windows read fine. */
	tx = begin(f.st, "t");
	add_profile(tx, &f, WINDOW + SEC, 1, 3);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(read_range(&f, WINDOW, 2 * WINDOW, &c), 0);
	assert_int_equal(c.n, 1);
	fixture_close(&f);
}

/* Every truncation and many byte flips of a valid chunk decode or fail cleanly. */
static void test_decode_truncated_and_flipped(void **state)
{
	struct chunk_profile p[3];
	uint32_t ids[40];
	int64_t vals[40];
	uint64_t spans[40];
	struct buf enc;
	struct chunk c;
	(void)state;

	for (int i = 0; i < 40; i++) {
		ids[i] = (uint32_t)(i * 3 + 1);
		vals[i] = (int64_t)i * 1000 - 7;
		spans[i] = i % 3 ? 0x1122334455667700ULL + (uint64_t)i : 0;
	}
	for (int i = 0; i < 3; i++) {
		p[i].meta.time_ns = 1000 + i;
		p[i].meta.duration_ns = 5;
		p[i].meta.period = 1;
		p[i].n = 40;
		p[i].ids = ids;
		p[i].vals = vals;
		p[i].spans = i == 1 ? spans : NULL; /* the first block is 0xC4 */
		memset(p[i].meta.id, 0, sizeof(p[i].meta.id));
	}
	memset(p[2].meta.id, 0x5a, sizeof(p[2].meta.id)); /* with spans: ids and spans */
	buf_init(&enc, 2 * STORE_MAX_CHUNK_BLOCK);
	assert_int_equal(store__chunk_encode(3, p, 3, 1, &enc), 0);
	assert_int_equal((uint8_t)enc.data[0], CHUNK_MAGIC_IDS_SPANS);
	{
		size_t at = enc.len;

		assert_int_equal(store__chunk_encode(3, p, 1, 0, &enc), 0); /* two blocks */
		assert_int_equal((uint8_t)enc.data[at], CHUNK_MAGIC); /* no id: as before */
	}
	store__chunk_init(&c);
	assert_int_equal(store__chunk_decode(&c, enc.data, enc.len, NULL), 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(c.profs[3].meta.id[15], 0x5a);
	assert_int_equal(c.profs[0].meta.id[0] | c.profs[1].meta.id[0] | c.profs[2].meta.id[0], 0);
	assert_int_equal(c.profs[2].meta.time_ns, 1001);
	assert_true(c.profs[2].spans[1] == 0x1122334455667701ULL);
	assert_true(c.profs[2].spans[0] == 0 && c.profs[0].spans[1] == 0);
	assert_int_equal(c.part, 3);
	assert_int_equal(c.profs[0].meta.time_ns, 1000);
	assert_int_equal(c.profs[1].meta.time_ns, 1000); /* the second block's, merged */
	assert_int_equal(c.profs[3].vals[39], 38993);
	for (size_t len = 0; len < enc.len; len++) {
		int rc = store__chunk_decode(&c, enc.data, len, NULL);
		assert_true(rc == 0 || rc == ERR_CORRUPT);
	}
	srand(7);
	for (int i = 0; i < 3000; i++) {
		size_t at = (size_t)rand() % enc.len;
		char old = enc.data[at];
		int rc;
		enc.data[at] = (char)(old ^ (1 << (rand() % 8)));
		rc = store__chunk_decode(&c, enc.data, enc.len, NULL);
		assert_true(rc == 0 || rc == ERR_CORRUPT || rc == ERR_TOO_LARGE);
		enc.data[at] = old;
	}
	store__chunk_release(&c);
	buf_release(&enc);
}

/* Sums of the pairs read back per (stack, span), for the span test. */
struct spansum {
	int n;
	int64_t by_span[4]; /* span ids 0, 1, 2 and 0x8000000000000001 */
	int64_t total;
	int dup;            /* a (stack, span) pair seen twice in one profile */
};

static int span_cb(void *ctx, const struct store_profile_view *p)
{
	struct spansum *s = ctx;

	s->n++;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t sp = p->span_ids ? p->span_ids[i] : 0;
		int k = sp == 0x8000000000000001ULL ? 3 : (int)sp;

		assert_true(k >= 0 && k < 4);
		s->by_span[k] += p->values[i];
		s->total += p->values[i];
		for (size_t j = 0; j < i; j++)
			if (p->stack_ids[j] == p->stack_ids[i] &&
			    (p->span_ids ? p->span_ids[j] : 0) == sp)
				s->dup = 1;
	}
	return 0;
}

static int first_series(void *ctx, uint64_t series_id, uint32_t part,
			const struct store_label *labels, size_t n)
{
	(void)part, (void)labels, (void)n;
	*(uint64_t *)ctx = series_id;
	return 0;
}

static void read_spans(struct fixture *f, int64_t from, int64_t until, struct spansum *s)
{
	struct store_reader *r;
	struct err_msg msg = { { 0 } };
	uint64_t sid = 0;

	memset(s, 0, sizeof(*s));
	assert_int_equal(store_reader_open(f->st, "t", from, until, &r, &msg), 0);
	assert_int_equal(store_reader_series_each(r, first_series, &sid), 0);
	assert_int_not_equal(sid, 0);
	assert_int_equal(store_reader_profiles_each(r, sid, from, until, span_cb, s, &msg), 0);
	store_reader_close(r);
}

/*
 * Span ids survive every path a profile takes: the txn (pairs summed per
 * (stack, span)), the head's merge and recode, sealing into a block and
 * compaction of blocks; a profile without them reads as before.
 */
static void test_span_ids(void **state)
{
	struct fixture f;
	struct store_txn *tx;
	struct store_maint_stats ms = { 0 };
	struct spansum s;
	int64_t t0 = 1700000000 * SEC;
	uint32_t ids[6];
	int64_t vals[6] = { 1, 2, 4, 8, 16, 32 };
	uint64_t spans[6] = { 1, 2, 1, 0, 0x8000000000000001ULL, 1 };
	(void)state;

	fixture_open(&f);
	ids[0] = f.stacks[4];
	ids[1] = f.stacks[4];
	ids[2] = f.stacks[2];
	ids[3] = f.stacks[4];
	ids[4] = f.stacks[9];
	ids[5] = f.stacks[4]; /* (stacks[4], 1) again: summed with the first */
	for (int k = 0; k < 3; k++) {
		struct store_profile_meta m = { t0 + k * 10 * SEC, 10 * SEC, 1, { 0 } };
		tx = begin(f.st, "t");
		if (k == 1) /* one profile without span ids between two with */
			assert_int_equal(store_txn_profile(tx, f.series, f.part, &m, ids, vals, 6), 0);
		else
			assert_int_equal(store_txn_profile_spans(tx, f.series, f.part, &m, ids, vals,
								 spans, 6), 0);
		assert_int_equal(commit(tx), 0);
	}
	for (int pass = 0; pass < 4; pass++) {
		if (pass == 1)
			assert_int_equal(store_compact(f.st, NULL), 0);
		if (pass == 2)
			assert_int_equal(store_maintain(f.st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
		if (pass == 3) {
			struct store_profile_meta m = { t0 + 3600 * SEC, 10 * SEC, 1, { 0 } };
			uint32_t part, st[10], ids2[6];
			uint64_t series;
			tx = begin(f.st, "t");
			assert_int_equal(add_series(tx, "svc", "a", &series), 0);
			/* Sealing began a new epoch: the service has a new partition. */
			assert_int_equal(store_txn_partition(tx, "svc", &part), 0);
			for (int i = 0; i < 10; i++) {
				struct store_location l = { 0, 0x1000 + (uint64_t)i, NULL, 0 };
				uint32_t loc;
				assert_int_equal(store_txn_location(tx, part, &l, &loc), 0);
				assert_int_equal(store_txn_stack(tx, part, &loc, 1, &st[i]), 0);
			}
			for (int i = 0; i < 6; i++)
				ids2[i] = st[ids[i] == f.stacks[4] ? 4 : ids[i] == f.stacks[2] ? 2 : 9];
			assert_int_equal(store_txn_profile_spans(tx, series, part, &m, ids2, vals,
								 spans, 6), 0);
			assert_int_equal(commit(tx), 0);
			assert_int_equal(store_maintain(f.st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
			assert_int_equal(store_maintain(f.st, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
		}
		read_spans(&f, t0, t0 + 7200 * SEC, &s);
		assert_int_equal(s.n, pass == 3 ? 4 : 3);
		assert_false(s.dup);
		assert_int_equal(s.by_span[1], (pass == 3 ? 3 : 2) * (1 + 4 + 32));
		assert_int_equal(s.by_span[2], (pass == 3 ? 3 : 2) * 2);
		assert_int_equal(s.by_span[3], (pass == 3 ? 3 : 2) * 16);
		assert_int_equal(s.by_span[0], (pass == 3 ? 3 : 2) * 8 + 63);
	}
	assert_true(ms.sealed_blocks >= 1);
	fixture_close(&f);
}

/* The id of each profile read back, by its time. */
struct idread {
	int n;
	int64_t t[8];
	uint8_t id[8][16];
};

static int id_cb(void *ctx, const struct store_profile_view *p)
{
	struct idread *r = ctx;

	assert_true(r->n < 8);
	r->t[r->n] = p->meta.time_ns;
	memcpy(r->id[r->n++], p->meta.id, 16);
	return 0;
}

/*
 * Profile ids survive every path a profile takes, as span ids do: the txn,
 * the head's merge and recode, sealing and compaction; a profile without
 * one (stored by an earlier release) reads with the nil id beside others
 * that have one, and a chunk of profiles without ids stays 0xC1.
 */
static void test_profile_ids(void **state)
{
	struct fixture f;
	struct store_txn *tx;
	struct store_maint_stats ms = { 0 };
	struct store_reader *r;
	struct err_msg msg = { { 0 } };
	int64_t t0 = 1700000000 * SEC;
	uint32_t ids[3];
	int64_t vals[3] = { 1, 2, 4 };
	uint64_t spans[3] = { 7, 0, 7 };
	(void)state;

	fixture_open(&f);
	ids[0] = f.stacks[1];
	ids[1] = f.stacks[2];
	ids[2] = f.stacks[3];
	for (int k = 0; k < 3; k++) {
		struct store_profile_meta m = { t0 + k * 10 * SEC, 10 * SEC, 1, { 0 } };

		if (k != 1) /* the middle one has no id */
			memset(m.id, 0x10 + k, sizeof(m.id));
		tx = begin(f.st, "t");
		assert_int_equal(store_txn_profile_spans(tx, f.series, f.part, &m, ids, vals,
							 k == 2 ? spans : NULL, 3), 0);
		assert_int_equal(commit(tx), 0);
	}
	for (int pass = 0; pass < 3; pass++) {
		struct idread got;
		uint64_t sid = 0;

		if (pass == 1)
			assert_int_equal(store_compact(f.st, NULL), 0);
		if (pass == 2) {
			assert_int_equal(store_maintain(f.st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
			assert_int_equal(store_maintain(f.st, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
			assert_true(ms.sealed_blocks >= 1);
		}
		memset(&got, 0, sizeof(got));
		assert_int_equal(store_reader_open(f.st, "t", t0, t0 + 3600 * SEC, &r, &msg), 0);
		assert_int_equal(store_reader_series_each(r, first_series, &sid), 0);
		assert_int_equal(store_reader_profiles_each(r, sid, t0, t0 + 3600 * SEC, id_cb, &got,
							    &msg), 0);
		store_reader_close(r);
		assert_int_equal(got.n, 3);
		for (int k = 0; k < 3; k++) {
			assert_int_equal(got.t[k], t0 + k * 10 * SEC);
			for (int b = 0; b < 16; b++)
				assert_int_equal(got.id[k][b], k == 1 ? 0 : 0x10 + k);
		}
	}
	fixture_close(&f);
}

/* A nil id inside the ids column, or an index past the block, is corrupt. */
static void test_profile_ids_corrupt(void **state)
{
	struct chunk_profile p[2];
	uint32_t ids[1] = { 1 };
	int64_t vals[1] = { 5 };
	struct buf enc;
	struct chunk c;
	size_t last;
	(void)state;

	memset(p, 0, sizeof(p));
	for (int i = 0; i < 2; i++) {
		p[i].meta.time_ns = 1000 + i;
		p[i].n = 1;
		p[i].ids = ids;
		p[i].vals = vals;
	}
	memset(p[1].meta.id, 0xee, sizeof(p[1].meta.id));
	buf_init(&enc, STORE_MAX_CHUNK_BLOCK);
	assert_int_equal(store__chunk_encode(3, p, 2, 0, &enc), 0); /* raw: bytes visible */
	assert_int_equal((uint8_t)enc.data[0], CHUNK_MAGIC_IDS);
	store__chunk_init(&c);
	assert_int_equal(store__chunk_decode(&c, enc.data, enc.len, NULL), 0);
	assert_int_equal(c.profs[1].meta.id[0], 0xee);
	/* The payload ends with: uv k = 1, uv delta = 1, 16 id bytes. */
	last = enc.len;
	assert_int_equal((uint8_t)enc.data[last - 17], 1);
	enc.data[last - 17] = 2; /* index 2 of a 2-profile block */
	assert_int_equal(store__chunk_decode(&c, enc.data, enc.len, NULL), ERR_CORRUPT);
	enc.data[last - 17] = 1;
	memset(enc.data + last - 16, 0, 16); /* a nil id written out */
	assert_int_equal(store__chunk_decode(&c, enc.data, enc.len, NULL), ERR_CORRUPT);
	store__chunk_release(&c);
	buf_release(&enc);
}

/* store__sort_pairs, copying or in place, against a counting reference. */
static void test_sort_pairs(void **state)
{
	enum { N = 300, IDS = 70000 };
	static uint32_t in_ids[N], ids[N];
	static int64_t in_vals[N], vals[N], want[IDS];
	static struct store__pair tmp[2 * N];
	uint64_t seed = 7;
	(void)state;

	for (int in_place = 0; in_place < 2; in_place++) {
		size_t k;

		memset(want, 0, sizeof(want));
		for (size_t i = 0; i < N; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			/* Two ranges, so that the sort takes more than one byte pass. */
			in_ids[i] = (uint32_t)(seed >> 33) % 97 + (i % 3 ? 0 : IDS - 100);
			in_vals[i] = (int64_t)(seed >> 40) - (1 << 23);
			want[in_ids[i]] += in_vals[i];
		}
		memcpy(ids, in_ids, sizeof(ids));
		memcpy(vals, in_vals, sizeof(vals));
		k = in_place ? store__sort_pairs(ids, vals, ids, vals, N, tmp)
			     : store__sort_pairs(ids, vals, in_ids, in_vals, N, tmp);
		assert_true(k > 0 && k < N);
		for (size_t i = 0; i < k; i++) {
			assert_true(!i || ids[i - 1] < ids[i]);
			assert_int_equal(vals[i], want[ids[i]]);
			want[ids[i]] = 0;
		}
		for (size_t i = 0; i < IDS; i++)
			assert_int_equal(want[i], 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_aggregates),
		cmocka_unit_test(test_exact_content),
		cmocka_unit_test(test_time_ranges),
		cmocka_unit_test(test_merge_compaction),
		cmocka_unit_test(test_abort_and_reopen),
		cmocka_unit_test(test_corrupt_chunk),
		cmocka_unit_test(test_decode_truncated_and_flipped),
		cmocka_unit_test(test_span_ids),
		cmocka_unit_test(test_profile_ids),
		cmocka_unit_test(test_profile_ids_corrupt),
		cmocka_unit_test(test_sort_pairs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
