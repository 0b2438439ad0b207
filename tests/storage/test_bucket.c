/* test_bucket.c - the bucket index (storage_int.h section 12): its format
 * round-trips and refuses truncated, corrupt and oversized input; the rule
 * hides replaced blocks and exactly one of two compactions of the same
 * sources; and real stores sharing a directory bucket as two ingesters, a
 * compactor (two, by mistake) and a querier see every profile exactly once,
 * the same as one store that ingested everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockgen.h"
#include "helpers.h"
#include "objstore/objstore.h"
#include "storage/storage_int.h"

/* ---- the format ---- */

static void id_of(uint8_t id[BLOCK_ID_BYTES], int hi, int lo)
{
	memset(id, 0, BLOCK_ID_BYTES);
	id[0] = (uint8_t)hi;
	id[BLOCK_ID_BYTES - 1] = (uint8_t)lo;
}

/* A block entry of level `level`, covering n ids (ascending). */
static void entry(struct bkt_index *x, struct bkt_block *b, int hi, int lo, uint32_t level,
		  const int (*cov)[2], uint32_t n)
{
	memset(b, 0, sizeof(*b));
	id_of(b->id, hi, lo);
	b->rec.level = level;
	b->rec.range_start = T0;
	b->rec.range_end = T0 + RANGE;
	b->rec.min_time = T0 + SEC;
	b->rec.max_time = T0 + 2 * SEC;
	b->rec.bytes = 1000 + (uint64_t)lo;
	b->rec.series = 3;
	b->rec.profiles = 10;
	b->rec.samples = 77;
	b->n_covers = n;
	b->covers = n ? arena_alloc(&x->mem, n * BLOCK_ID_BYTES) : NULL;
	for (uint32_t i = 0; i < n; i++)
		id_of(b->covers[i], cov[i][0], cov[i][1]);
}

static void sample_index(struct bkt_index *x)
{
	static const int cov[2][2] = { { 1, 1 }, { 1, 2 } };

	store__bkt_init(x, 1 << 20);
	x->written_ns = T0;
	x->n_tenants = 2;
	x->tenants = arena_calloc(&x->mem, 2, sizeof(*x->tenants));
	x->tenants[0].name = "a";
	x->tenants[0].n_blocks = 3;
	x->tenants[0].blocks = arena_calloc(&x->mem, 3, sizeof(struct bkt_block));
	entry(x, &x->tenants[0].blocks[0], 1, 1, 0, NULL, 0);
	entry(x, &x->tenants[0].blocks[1], 1, 2, 0, NULL, 0);
	entry(x, &x->tenants[0].blocks[2], 2, 1, 1, cov, 2);
	x->tenants[0].blocks[0].mark = BKT_REPLACED;
	x->tenants[0].blocks[0].marked_ns = T0 - 5;
	x->tenants[1].name = "b\xc3\xa9";
	x->tenants[1].n_blocks = 1;
	x->tenants[1].blocks = arena_calloc(&x->mem, 1, sizeof(struct bkt_block));
	entry(x, &x->tenants[1].blocks[0], 3, 3, 0, NULL, 0);
}

static void test_format(void **state)
{
	struct bkt_index x, y;
	struct buf a, b;
	struct err_msg msg = { { 0 } };
	const struct bkt_tenant *t;
	const struct bkt_block *e;
	(void)state;

	sample_index(&x);
	buf_init(&a, 1 << 20);
	buf_init(&b, 1 << 20);
	assert_int_equal(store__bkt_encode(&x, &a), 0);
	assert_int_equal(store__bkt_decode((const uint8_t *)a.data, a.len, &y, &msg), 0);
	assert_int_equal(y.written_ns, T0);
	assert_int_equal(y.n_tenants, 2);
	t = store__bkt_tenant(&y, "b\xc3\xa9");
	assert_non_null(t);
	assert_int_equal(t->n_blocks, 1);
	t = store__bkt_tenant(&y, "a");
	assert_non_null(t);
	assert_null(store__bkt_tenant(&y, "c"));
	e = store__bkt_block(t, x.tenants[0].blocks[2].id);
	assert_non_null(e);
	assert_int_equal(e->rec.level, 1);
	assert_int_equal(e->n_covers, 2);
	assert_memory_equal(e->covers[1], x.tenants[0].blocks[2].covers[1], BLOCK_ID_BYTES);
	assert_int_equal(e->rec.samples, 77);
	assert_int_equal(e->rec.max_time, T0 + 2 * SEC);
	assert_int_equal(t->blocks[0].mark, BKT_REPLACED);
	assert_int_equal(t->blocks[0].marked_ns, T0 - 5);
	/* Encoding what was decoded gives the same bytes. */
	assert_int_equal(store__bkt_encode(&y, &b), 0);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	store__bkt_release(&y);

	/* Cut short anywhere, or any byte changed: refused, never a crash. */
	for (size_t n = 0; n < a.len; n++)
		assert_int_not_equal(store__bkt_decode((const uint8_t *)a.data, n, &y, NULL), 0);
	for (size_t i = 0; i < a.len; i++) {
		a.data[i] ^= 0x40;
		assert_int_not_equal(store__bkt_decode((const uint8_t *)a.data, a.len, &y, NULL), 0);
		a.data[i] ^= 0x40;
	}
	/* A body that checks but lies: a tenant count past the bytes left,
	 * then blocks out of order. */
	buf_reset(&b);
	buf_append(&b, a.data, BKT_HEADER_BYTES);
	buf_put_svarint(&b, 0);
	buf_put_uvarint(&b, (uint64_t)1 << 40);
	store__objhead_seal(&b, 0); /* the CRC of the edited body */
	err_clear(&msg);
	assert_int_equal(store__bkt_decode((const uint8_t *)b.data, b.len, &y, &msg), ERR_CORRUPT);
	assert_non_null(strstr(msg.text, "tenant count"));
	x.tenants[0].blocks[0].id[0] = 9;
	buf_reset(&b);
	assert_int_equal(store__bkt_encode(&x, &b), 0);
	err_clear(&msg);
	assert_int_equal(store__bkt_decode((const uint8_t *)b.data, b.len, &y, &msg), ERR_CORRUPT);
	assert_non_null(strstr(msg.text, "order"));
	/* Another version is named. */
	a.data[8] = 2;
	err_clear(&msg);
	assert_int_equal(store__bkt_decode((const uint8_t *)a.data, a.len, &y, &msg), ERR_CORRUPT);
	assert_non_null(strstr(msg.text, "format 2"));
	buf_release(&a);
	buf_release(&b);
	store__bkt_release(&x);
}

/* store__bkt_resolve() over t gives want[0, t->n_blocks). */
static void resolves_to(const struct bkt_tenant *t, const uint32_t *want)
{
	uint32_t r[8];

	assert_int_equal(store__bkt_resolve(t, r), 0);
	for (size_t i = 0; i < t->n_blocks; i++)
		assert_int_equal(r[i], want[i]);
}

/* The rule of section 12 over one tenant's blocks. */
static void test_resolve(void **state)
{
	static const int ab[2][2] = { { 0, 1 }, { 0, 2 } }, bc[2][2] = { { 0, 2 }, { 0, 3 } };
	static const int o2[4][2] = { { 0, 1 }, { 0, 2 }, { 0, 4 }, { 5, 9 } };
	struct bkt_index x;
	struct bkt_tenant t;
	(void)state;

	store__bkt_init(&x, 1 << 20);
	t.name = "t";
	t.blocks = arena_calloc(&x.mem, 8, sizeof(struct bkt_block));
	/* Level-0 blocks 1, 2, 3; two compactions that overlap on block 2:
	 * A (id 5,1) of {1, 2} and B (id 5,2) of {2, 3}.  A comes first (same
	 * level, same cover count, smaller id) and wins; 1 and 2 are inside
	 * it; B loses; 3, which only the loser covered, stays. */
	entry(&x, &t.blocks[0], 0, 1, 0, NULL, 0);
	entry(&x, &t.blocks[1], 0, 2, 0, NULL, 0);
	entry(&x, &t.blocks[2], 0, 3, 0, NULL, 0);
	entry(&x, &t.blocks[3], 5, 1, 1, ab, 2);
	entry(&x, &t.blocks[4], 5, 2, 1, bc, 2);
	t.n_blocks = 5;
	resolves_to(&t, (const uint32_t[]){ BKT_REPLACED, BKT_REPLACED, BKT_LIVE, BKT_LIVE,
					    BKT_DUPLICATE });
	/* Marked blocks keep their mark and take no part: without A, B wins. */
	t.blocks[3].mark = BKT_EXPIRED;
	resolves_to(&t, (const uint32_t[]){ BKT_LIVE, BKT_REPLACED, BKT_REPLACED, BKT_EXPIRED,
					    BKT_LIVE });
	t.blocks[3].mark = BKT_LIVE;
	/* A slot's block merged again with a late block 4: the new one (a
	 * smaller id here, same level) covers A and wins over it, and over B. */
	entry(&x, &t.blocks[5], 0, 4, 0, NULL, 0);
	entry(&x, &t.blocks[6], 5, 0, 1, o2, 4); /* covers 1, 2, 4 and A */
	id_of(t.blocks[6].covers[3], 5, 1);
	t.n_blocks = 7;
	/* Sorted by id: 0/1 0/2 0/3 0/4 5/0 5/1 5/2 */
	{
		struct bkt_block s[7] = { t.blocks[0], t.blocks[1], t.blocks[2], t.blocks[5],
					  t.blocks[6], t.blocks[3], t.blocks[4] };
		memcpy(t.blocks, s, sizeof(s));
	}
	/* 0/3 only B covered; 0/4 the late block; 5/0 the merged slot; 5/1 A, inside it. */
	resolves_to(&t, (const uint32_t[]){ BKT_REPLACED, BKT_REPLACED, BKT_LIVE, BKT_REPLACED,
					    BKT_LIVE, BKT_REPLACED, BKT_DUPLICATE });
	store__bkt_release(&x);
}

/* ---- stores sharing a bucket ---- */

static int64_t fake_now;

/* gen_fill, asserted; returns how many profiles each store got. */
static size_t fill(struct store **sts, size_t n_sts, const char *svc, int64_t t0, int64_t span)
{
	size_t n = 0;

	assert_int_equal(gen_fill(sts, n_sts, svc, t0, span, &n), 0);
	return n;
}

static uint64_t blocks_of(struct store *st)
{
	struct tenant *t = store__tenant_find(st, "t");
	uint64_t n;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->mu);
	n = t->n_blocks;
	pthread_mutex_unlock(&t->mu);
	return n;
}

static size_t bucket_blocks(const char *root)
{
	char path[512];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/blocks/t", root);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += strstr(de->d_name, ".blk") && !strstr(de->d_name, ".tmp");
	closedir(d);
	return n;
}

static void same(struct store *st, const char *want)
{
	size_t warn = 1;
	char *got = gen_dump(st, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, &warn);

	assert_non_null(got);
	assert_int_equal(warn, 0);
	assert_string_equal(got, want);
	free(got);
}

static void test_roles(void **state)
{
	struct gen_deploy d;
	struct store *i1, *i2, *c, *c2, *q, *ref;
	struct store_bucket_stats bs;
	struct store_maint_stats ms;
	struct err_msg msg = { { 0 } };
	const char *root;
	char *want;
	size_t n;
	(void)state;

	fake_now = T0 + 100 * RANGE;
	assert_int_equal(gen_deploy_open(&d, &fake_now), 0);
	root = d.root;
	i1 = gen_deploy_role(&d, STORE_BUCKET_PRUNE | STORE_NO_COMPACT);
	i2 = gen_deploy_role(&d, STORE_BUCKET_PRUNE | STORE_NO_COMPACT);
	c = gen_deploy_role(&d, STORE_BUCKET_INDEX | STORE_BUCKET_DISCOVER);
	c2 = gen_deploy_role(&d, STORE_BUCKET_INDEX | STORE_BUCKET_DISCOVER);
	q = gen_deploy_role(&d, STORE_BUCKET_DISCOVER | STORE_NO_COMPACT);
	ref = gen_deploy_ref(&d);
	assert_true(i1 && i2 && c && c2 && q && ref);

	/* Profiles sent round-robin: services to one ingester each, and the
	 * reference store gets them all. */
	n = fill((struct store *[]){ i1, ref }, 2, "api", T0, 3 * RANGE);
	n += fill((struct store *[]){ i2, ref }, 2, "db", T0 + RANGE, 3 * RANGE);
	want = gen_dump(ref, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_non_null(want);
	assert_true(n > 0);

	/* Ingesters seal and upload, and never compact. */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(i1, STORE_MAINT_SEAL_ALL | STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(store_maintain(i2, STORE_MAINT_SEAL_ALL | STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.sealed_blocks, 6);
	assert_int_equal(ms.compactions, 0);
	assert_int_equal(ms.uploaded_blocks, 6);
	assert_int_equal(bucket_blocks(root), 6);

	/* No index yet: the querier sees nothing, and says nothing is wrong. */
	assert_int_equal(store_bucket_sync(q, &msg), 0);
	assert_int_equal(blocks_of(q), 0);

	/* The compactors' first pass: no compaction before an index is
	 * written; the index lists the six blocks, read by their footers. */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(c, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compactions, 0);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.index_writes, 1);
	assert_int_equal(bs.footer_reads, 6);
	assert_int_equal(bs.index_blocks, 6);
	assert_int_equal(bs.discovered_blocks, 6);
	assert_int_equal(bs.marks, 0);
	assert_int_equal(store_maintain(c2, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	store_bucket_stats(c2, &bs);
	assert_int_equal(bs.footer_reads, 0); /* the index had them all */
	assert_int_equal(blocks_of(c2), 6);

	/* The querier finds the six blocks: every profile once. */
	assert_int_equal(store_bucket_sync(q, &msg), 0);
	assert_int_equal(blocks_of(q), 6);
	same(q, want);
	/* The index unchanged, a sync reads it no more: one "not modified". */
	{
		struct objstore_stats o0, o1;
		const int G = OBJSTORE_OP_GET;

		objstore_stats(d.os, &o0);
		assert_int_equal(store_bucket_sync(q, &msg), 0);
		objstore_stats(d.os, &o1);
		assert_int_equal(o1.op[G].requests[OBJSTORE_RES_NOT_MODIFIED] -
					 o0.op[G].requests[OBJSTORE_RES_NOT_MODIFIED], 1);
		assert_int_equal(o1.op[G].requests[OBJSTORE_RES_OK], o0.op[G].requests[OBJSTORE_RES_OK]);
		assert_int_equal(o1.op[G].bytes_in, o0.op[G].bytes_in);
		store_bucket_stats(q, &bs);
		assert_int_equal(bs.syncs, 2);
		assert_int_equal(bs.index_blocks, 6);
		assert_true(bs.index_bytes > 0);
		assert_int_equal(blocks_of(q), 6);
		same(q, want);
	}

	/* Both compactors (by mistake) merge the same six blocks. */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(c, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(store_maintain(c2, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compactions, 2);
	assert_int_equal(ms.compacted_blocks, 12);
	assert_int_equal(bucket_blocks(root), 8);
	{
		/* Six replaced (by the first), one duplicate (by the second). */
		struct store_bucket_stats b1;
		store_bucket_stats(c, &b1);
		store_bucket_stats(c2, &bs);
		assert_int_equal(b1.marks, 6);
		assert_int_equal(bs.marks, 1);
	}
	/* The querier unlists the six and lists exactly one of the two: the
	 * index changed, so it is read whole again. */
	{
		struct objstore_stats o0, o1;

		objstore_stats(d.os, &o0);
		assert_int_equal(store_bucket_sync(q, &msg), 0);
		objstore_stats(d.os, &o1);
		assert_int_equal(o1.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_OK] -
					 o0.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_OK], 1);
		assert_int_equal(o1.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_MODIFIED],
				 o0.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_MODIFIED]);
	}
	assert_int_equal(blocks_of(q), 1);
	same(q, want);
	store_bucket_stats(q, &bs);
	assert_int_equal(bs.discovered_blocks, 7);
	assert_int_equal(bs.unlisted_blocks, 6);
	/* The compactor whose output lost drops it at its next pass. */
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	assert_int_equal(blocks_of(c) + blocks_of(c2), 2);
	assert_int_equal(store_bucket_sync(c, &msg), 0);
	assert_int_equal(store_bucket_sync(c2, &msg), 0);
	assert_int_equal(blocks_of(c) + blocks_of(c2), 2); /* the winner, once each */
	same(c, want);
	same(c2, want);

	/* Ingesters drop their blocks the index marks. */
	assert_int_equal(store_bucket_sync(i1, &msg), 0);
	assert_int_equal(store_bucket_sync(i2, &msg), 0);
	assert_int_equal(blocks_of(i1) + blocks_of(i2), 0);

	/* Marked blocks leave the bucket after the delay, not before. */
	fake_now += 10 * SEC;
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	assert_int_equal(bucket_blocks(root), 8);
	fake_now += 30 * SEC;
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.deleted_objects, 7);
	assert_int_equal(bucket_blocks(root), 1);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.index_blocks, 1);

	/* A new querier with an empty data directory finds it at open. */
	gen_deploy_drop(&d, q);
	q = gen_deploy_role(&d, STORE_BUCKET_DISCOVER | STORE_NO_COMPACT);
	assert_non_null(q);
	assert_int_equal(blocks_of(q), 1);
	same(q, want);

	/* A corrupt index is rebuilt by the next pass from the footers. */
	{
		char path[512];
		FILE *f;
		snprintf(path, sizeof(path), "%s/%s", root, BKT_KEY);
		f = fopen(path, "r+b");
		assert_non_null(f);
		fseek(f, 20, SEEK_SET);
		fputc('!', f);
		fclose(f);
		err_clear(&msg);
		assert_int_equal(store_bucket_sync(q, &msg), ERR_CORRUPT);
		assert_int_equal(blocks_of(q), 1); /* it keeps what it had */
		assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
		assert_int_equal(store_bucket_sync(q, &msg), 0);
		same(q, want);
	}

	gen_deploy_close(&d);
	free(want);
}

/*
 * A deployment of one ingester, one compactor (which indexes and finds
 * blocks) and the reference store, at fake_now = T0 + 100 ranges.
 */
static void open_ingest_compact(struct gen_deploy *d, struct store **i1, struct store **c,
				struct store **ref)
{
	fake_now = T0 + 100 * RANGE;
	assert_int_equal(gen_deploy_open(d, &fake_now), 0);
	*i1 = gen_deploy_role(d, STORE_BUCKET_PRUNE | STORE_NO_COMPACT);
	*c = gen_deploy_role(d, STORE_BUCKET_INDEX | STORE_BUCKET_DISCOVER);
	*ref = gen_deploy_ref(d);
	assert_true(*i1 && *c && *ref);
}

/* The bucket path of the one block store `c` lists in tenant t. */
static void only_block_path(struct store *c, const char *root, char *out, size_t len)
{
	struct tenant *t = store__tenant_find(c, "t");

	assert_non_null(t);
	pthread_mutex_lock(&t->mu);
	assert_int_equal(t->n_blocks, 1);
	snprintf(out, len, "%s/blocks/t/%s.blk", root, t->blocks[0]->id_hex);
	pthread_mutex_unlock(&t->mu);
}

/*
 * A querier whose sync cannot read the block that replaces its blocks
 * (its footer's read fails: gone, here) keeps the blocks it replaces
 * until a sync can: every profile once, before, during and after.
 */
static void test_replacement_unreadable(void **state)
{
	char moved[600], path[512];
	struct gen_deploy d;
	struct store *i1, *c, *q, *ref;
	struct store_bucket_stats bs;
	struct store_maint_stats ms;
	struct err_msg msg = { { 0 } };
	char *want;
	(void)state;

	open_ingest_compact(&d, &i1, &c, &ref);
	q = gen_deploy_role(&d, STORE_BUCKET_DISCOVER | STORE_NO_COMPACT);
	assert_non_null(q);
	assert_true(fill((struct store *[]){ i1, ref }, 2, "api", T0, 3 * RANGE) > 0);
	want = gen_dump(ref, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_non_null(want);
	assert_int_equal(store_maintain(i1, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0); /* the first index */
	assert_int_equal(store_bucket_sync(q, &msg), 0);
	assert_int_equal(blocks_of(q), 3);
	same(q, want);

	/* The compactor merges the three; its output's object goes away. */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(c, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compactions, 1);
	only_block_path(c, d.root, path, sizeof(path));
	snprintf(moved, sizeof(moved), "%s.aside", path);
	assert_int_equal(rename(path, moved), 0);

	/* The sync fails to read it and keeps the three. */
	assert_int_equal(store_bucket_sync(q, &msg), 0);
	store_bucket_stats(q, &bs);
	assert_true(bs.sync_failures > 0);
	assert_int_equal(blocks_of(q), 3);
	same(q, want);

	/* Back in the bucket: the next sync swaps the three for it. */
	assert_int_equal(rename(moved, path), 0);
	assert_int_equal(store_bucket_sync(q, &msg), 0);
	assert_int_equal(blocks_of(q), 1);
	same(q, want);
	gen_deploy_close(&d);
	free(want);
}

/* Reads or writes a whole small file. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = malloc(1 << 20);

	assert_non_null(f);
	*len = fread(p, 1, 1 << 20, f);
	fclose(f);
	return p;
}

static void spill(const char *path, const char *p, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	fclose(f);
}

/* A compactor killed after its output was written, before it was uploaded
 * and indexed: at restart the old index still counts the sources, and the
 * compactor must neither list them next to its output nor compact again
 * before the index caught up. */
static void test_compactor_restart(void **state)
{
	char *old, path[512], key[512];
	struct gen_deploy d;
	struct store *i1, *c, *q, *ref;
	struct store_bucket_stats bs;
	struct store_maint_stats ms;
	size_t old_len;
	char *want;
	(void)state;

	open_ingest_compact(&d, &i1, &c, &ref);
	/* An empty bucket: an empty index. */
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.index_writes, 1);
	assert_int_equal(bs.index_blocks, 0);
	fill((struct store *[]){ i1, ref }, 2, "api", T0, 3 * RANGE);
	want = gen_dump(ref, "t", T0 - RANGE, T0 + 10 * RANGE, NULL, NULL);
	assert_int_equal(store_maintain(i1, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	assert_int_equal(blocks_of(c), 3);
	snprintf(path, sizeof(path), "%s/%s", d.root, BKT_KEY);
	old = slurp(path, &old_len);

	/* The compaction, then the crash: the upload and the index undone. */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(c, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compactions, 1);
	only_block_path(c, d.root, key, sizeof(key));
	assert_int_equal(unlink(key), 0);
	spill(path, old, old_len);
	c = gen_deploy_restart(&d, c);
	assert_non_null(c);
	assert_int_equal(blocks_of(c), 1); /* its output, not the sources again */
	same(c, want);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.upload_pending, 1);
	assert_true(bs.upload_lag_ns > 0);
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(c, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compactions, 0);
	assert_int_equal(ms.uploaded_blocks, 1);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.upload_pending, 0);
	assert_int_equal(bs.marks, 3);
	q = gen_deploy_role(&d, STORE_BUCKET_DISCOVER | STORE_NO_COMPACT);
	assert_non_null(q);
	assert_int_equal(blocks_of(q), 1);
	same(q, want);

	gen_deploy_close(&d);
	free(old);
	free(want);
}

/*
 * A block key whose footer is corrupt is left out of the index, and its
 * footer is read once: later passes report it without a GET while the
 * bucket lists it at the same size, and read it again once it changed.
 */
static void test_corrupt_footer(void **state)
{
	struct store_bucket_stats bs;
	struct objstore_stats o0, o1;
	struct err_msg msg = { { 0 } };
	uint8_t id[BLOCK_ID_BYTES];
	struct gen_deploy d;
	struct objstore *os;
	struct store *c;
	struct buf key;
	char junk[4096];
	(void)state;

	fake_now = T0 + 100 * RANGE;
	assert_int_equal(gen_deploy_open(&d, &fake_now), 0);
	os = d.os;
	c = gen_deploy_role(&d, STORE_BUCKET_INDEX | STORE_BUCKET_DISCOVER);
	assert_non_null(c);
	id_of(id, 7, 7);
	buf_init(&key, 4096);
	assert_int_equal(store__block_key("t", id, &key), 0);
	memset(junk, 'x', sizeof(junk));
	assert_int_equal(objstore_put(os, key.data, junk, sizeof(junk), 0, &msg), 0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.index_writes, 1);
	assert_int_equal(bs.index_blocks, 0);
	assert_int_equal(bs.footer_reads, 1);
	assert_int_equal(bs.footers_corrupt, 1);
	/* Twice more: reported, not read. */
	objstore_stats(os, &o0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	objstore_stats(os, &o1);
	assert_int_equal(o1.op[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_OK] +
				 o1.op[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_ERROR],
			 o0.op[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_OK] +
				 o0.op[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_ERROR]);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.index_writes, 3);
	assert_int_equal(bs.index_blocks, 0);
	assert_int_equal(bs.footer_reads, 1);
	assert_int_equal(bs.footers_corrupt, 3);
	/* Other bytes under the key (another size): read again. */
	assert_int_equal(objstore_put(os, key.data, junk, sizeof(junk) - 1, 0, &msg), 0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.footer_reads, 2);
	assert_int_equal(bs.footers_corrupt, 4);
	/* Gone from the bucket: forgotten, so the same bytes put back are read. */
	assert_int_equal(objstore_delete(os, key.data, &msg), 0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	assert_int_equal(objstore_put(os, key.data, junk, sizeof(junk) - 1, 0, &msg), 0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	store_bucket_stats(c, &bs);
	assert_int_equal(bs.footer_reads, 3);
	assert_int_equal(bs.footers_corrupt, 5);
	buf_release(&key);
	gen_deploy_close(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_compactor_restart),
		cmocka_unit_test(test_corrupt_footer),
		cmocka_unit_test(test_replacement_unreadable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
