/* test_auxns.c - the auxiliary namespaces on a real RocksDB: atomic batches
 * with deletes, MultiGet in key order with absent keys, exact prefix scan
 * bounds, persistence, read-only opens (also of a store that predates the
 * namespaces), limits, and isolation from tenant statistics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/buf.h"
#include "helpers.h"
#include "storage/storage_int.h"

#define KV(k, v) { k, sizeof(k) - 1, v, (v) ? sizeof(v) - 1 : 0 }

static void put(struct store *st, enum store_aux ns, const char *k, const char *v)
{
	struct store_kv kv = { k, strlen(k), v, v ? strlen(v) : 0 };
	struct err_msg msg = { { 0 } };

	assert_int_equal(store_aux_write(st, ns, &kv, 1, &msg), 0);
}

/* Returns the value of k as a string ("" when absent, "<rc>" on error). */
static const char *get(struct store *st, enum store_aux ns, const char *k, struct buf *b)
{
	int rc;

	buf_reset(b);
	rc = store_aux_get(st, ns, k, strlen(k), b, NULL);
	if (rc == ERR_NOT_FOUND)
		return "<absent>";
	assert_int_equal(rc, 0);
	assert_int_equal(buf_putc(b, '\0'), 0);
	return b->data;
}

static void test_batch_atomic_with_deletes(void **state)
{
	struct store *st = sfx_store(state);
	struct err_msg msg = { { 0 } };
	struct store_kv first[] = { KV("a", "1"), KV("b", "2"), KV("c", "3") };
	struct store_kv second[] = { KV("b", NULL), KV("c", "33"), KV("d", "") };
	char big[STORE_AUX_MAX_KEY + 1];
	struct store_kv bad[] = { KV("e", "5"), { big, sizeof(big), "x", 1 } };
	struct buf b;

	assert_non_null(st);
	buf_init(&b, STORE_AUX_MAX_VALUE);
	assert_int_equal(store_aux_write(st, STORE_AUX_DEBUGINFO, first, 3, &msg), 0);
	assert_int_equal(store_aux_write(st, STORE_AUX_DEBUGINFO, second, 3, &msg), 0);
	assert_string_equal(get(st, STORE_AUX_DEBUGINFO, "a", &b), "1");
	assert_string_equal(get(st, STORE_AUX_DEBUGINFO, "b", &b), "<absent>");
	assert_string_equal(get(st, STORE_AUX_DEBUGINFO, "c", &b), "33");
	assert_string_equal(get(st, STORE_AUX_DEBUGINFO, "d", &b), ""); /* empty value kept */
	/* Namespaces are separate. */
	assert_string_equal(get(st, STORE_AUX_SYMCACHE, "a", &b), "<absent>");
	/* A batch with one bad pair writes nothing. */
	memset(big, 'k', sizeof(big));
	assert_int_equal(store_aux_write(st, STORE_AUX_DEBUGINFO, bad, 2, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "key"));
	assert_string_equal(get(st, STORE_AUX_DEBUGINFO, "e", &b), "<absent>");
	/* Deleting an absent key is fine. */
	put(st, STORE_AUX_DEBUGINFO, "zz", NULL);
	buf_release(&b);
}

struct got {
	size_t n;
	size_t idx[16];
	char val[16][16];
	int absent[16];
	size_t stop_at;
};

static int got_cb(void *ctx, size_t i, const void *val, size_t vlen)
{
	struct got *g = ctx;

	if (g->n == g->stop_at)
		return 77;
	g->idx[g->n] = i;
	g->absent[g->n] = val == NULL;
	if (val) {
		assert_true(vlen < sizeof(g->val[0]));
		memcpy(g->val[g->n], val, vlen);
		g->val[g->n][vlen] = '\0';
	}
	g->n++;
	return 0;
}

/* Checks that indexes come in order and counts the keys found. */
struct order {
	size_t next, present;
};

static int order_cb(void *ctx, size_t i, const void *val, size_t vlen)
{
	struct order *o = ctx;

	(void)vlen;
	if (i != o->next++)
		return -1;
	o->present += val != NULL;
	return 0;
}

static void test_multi_get_in_order(void **state)
{
	struct store *st = sfx_store(state);
	struct store_kv kv[] = { KV("k1", "v1"), KV("k3", "v3"), KV("k5", "v5") };
	struct store_kv keys[] = { KV("k5", NULL), KV("k0", NULL), KV("k1", NULL),
				   KV("k4", NULL), KV("k3", NULL), KV("k1", NULL) };
	struct store_kv *many;
	struct got g;
	size_t n_many = 600, present = 0;

	assert_non_null(st);
	assert_int_equal(store_aux_write(st, STORE_AUX_SYMCACHE, kv, 3, NULL), 0);
	memset(&g, 0, sizeof(g));
	g.stop_at = SIZE_MAX;
	assert_int_equal(store_aux_multi_get(st, STORE_AUX_SYMCACHE, keys, 6, got_cb, &g, NULL), 0);
	assert_int_equal(g.n, 6);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(g.idx[i], i);
	assert_string_equal(g.val[0], "v5");
	assert_true(g.absent[1]);
	assert_string_equal(g.val[2], "v1");
	assert_true(g.absent[3]);
	assert_string_equal(g.val[4], "v3");
	assert_string_equal(g.val[5], "v1");
	assert_false(g.absent[0] || g.absent[2] || g.absent[4] || g.absent[5]);
	/* A non-zero return stops and is returned. */
	memset(&g, 0, sizeof(g));
	g.stop_at = 2;
	assert_int_equal(store_aux_multi_get(st, STORE_AUX_SYMCACHE, keys, 6, got_cb, &g, NULL),
			 77);
	assert_int_equal(g.n, 2);
	/* More keys than one MultiGet slice keep their indexes. */
	many = calloc(n_many, sizeof(*many));
	assert_non_null(many);
	for (size_t i = 0; i < n_many; i++) {
		many[i] = keys[i % 6];
		present += !(i % 6 == 1 || i % 6 == 3);
	}
	{
		struct order c = { 0, 0 };
		assert_int_equal(store_aux_multi_get(st, STORE_AUX_SYMCACHE, many, n_many,
						     order_cb, &c, NULL),
				 0);
		assert_int_equal(c.next, n_many);
		assert_int_equal(c.present, present);
	}
	free(many);
	/* Empty keys are refused. */
	{
		struct store_kv empty = { "", 0, NULL, 0 };
		assert_int_equal(store_aux_multi_get(st, STORE_AUX_SYMCACHE, &empty, 1, got_cb, &g,
						     NULL),
				 ERR_INVALID);
	}
}

struct scanned {
	size_t n;
	char keys[16][32];
	size_t klen[16];
};

static int scan_cb(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct scanned *s = ctx;

	(void)val, (void)vlen;
	assert_true(s->n < 16 && klen <= 32);
	memcpy(s->keys[s->n], key, klen);
	s->klen[s->n++] = klen;
	return 0;
}

static size_t scan(struct store *st, const void *prefix, size_t plen, struct scanned *s)
{
	struct err_msg msg = { { 0 } };

	memset(s, 0, sizeof(*s));
	assert_int_equal(store_aux_scan(st, STORE_AUX_SYMCACHE, prefix, plen, scan_cb, s, &msg),
			 0);
	return s->n;
}

static void test_prefix_scan_bounds(void **state)
{
	struct store *st = sfx_store(state);
	static const struct {
		const char *k;
		size_t len;
	} keys[] = {
		{ "a", 1 },	   { "ab", 2 },	    { "ab\0", 3 },	   { "ab\x7f", 3 },
		{ "ab\xff", 3 },   { "ab\xff\xff", 4 }, { "ac", 2 },	   { "b", 1 },
		{ "\xff", 1 },	   { "\xff\xff", 2 },  { "\xff\xff\x01", 3 }, { "aa\xff", 3 },
	};
	struct scanned s;

	assert_non_null(st);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		struct store_kv kv = { keys[i].k, keys[i].len, "v", 1 };
		assert_int_equal(store_aux_write(st, STORE_AUX_SYMCACHE, &kv, 1, NULL), 0);
	}
	/* Keys of another namespace never show up. */
	put(st, STORE_AUX_DEBUGINFO, "ab-debug", "x");
	assert_int_equal(scan(st, "ab", 2, &s), 5);
	assert_int_equal(s.klen[0], 2);
	assert_memory_equal(s.keys[0], "ab", 2);
	assert_memory_equal(s.keys[1], "ab\0", 3);
	assert_memory_equal(s.keys[2], "ab\x7f", 3);
	assert_memory_equal(s.keys[3], "ab\xff", 3);
	assert_memory_equal(s.keys[4], "ab\xff\xff", 4);
	/* A prefix ending in 0xff bytes. */
	assert_int_equal(scan(st, "ab\xff", 3, &s), 2);
	assert_int_equal(scan(st, "\xff", 1, &s), 3);
	assert_int_equal(scan(st, "\xff\xff", 2, &s), 2);
	assert_int_equal(scan(st, "a", 1, &s), 8);
	assert_int_equal(scan(st, "abc", 3, &s), 0);
	assert_int_equal(scan(st, "c", 1, &s), 0);
	/* The empty prefix scans everything, in key order. */
	assert_int_equal(scan(st, NULL, 0, &s), 12);
	assert_memory_equal(s.keys[0], "a", 1);
	assert_memory_equal(s.keys[1], "aa\xff", 3);
	assert_memory_equal(s.keys[11], "\xff\xff\x01", 3);
}

static void test_persistence_and_read_only(void **state)
{
	char *dir = tmpdir_new();
	struct store *st = open_store(dir, 0, 0), *ro;
	struct store_kv kv = { "k", 1, "v", 1 };
	struct err_msg msg = { { 0 } };
	struct scanned s;
	struct buf b;
	(void)state;

	assert_non_null(st);
	buf_init(&b, STORE_AUX_MAX_VALUE);
	put(st, STORE_AUX_DEBUGINFO, "build-1", "meta-1");
	put(st, STORE_AUX_SYMCACHE, "build-1/0x10", "frames");
	/* A read-only open beside the writer sees what the writer flushed. */
	assert_int_equal(store_flush(st, NULL), 0);
	ro = open_store(dir, 1, 0);
	assert_non_null(ro);
	assert_string_equal(get(ro, STORE_AUX_DEBUGINFO, "build-1", &b), "meta-1");
	assert_int_equal(store_aux_write(ro, STORE_AUX_DEBUGINFO, &kv, 1, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "read-only"));
	assert_int_equal(store_compact(ro, NULL), 0);
	store_close(ro);
	store_close(st);
	/* Everything survives a reopen (no explicit flush: the WAL replays). */
	st = open_store(dir, 0, 0);
	assert_non_null(st);
	put(st, STORE_AUX_SYMCACHE, "build-1/0x20", "more");
	store_close(st);
	st = open_store(dir, 1, 0);
	assert_non_null(st);
	assert_string_equal(get(st, STORE_AUX_DEBUGINFO, "build-1", &b), "meta-1");
	assert_string_equal(get(st, STORE_AUX_SYMCACHE, "build-1/0x10", &b), "frames");
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_aux_scan(st, STORE_AUX_SYMCACHE, "build-1/", 8, scan_cb, &s, NULL),
			 0);
	assert_int_equal(s.n, 2);
	assert_true(store_aux_bytes(st, STORE_AUX_SYMCACHE) > 0);
	store_close(st);
	buf_release(&b);
	tmpdir_free(dir);
}

/* Drops the auxiliary families with RocksDB itself: a store from before them. */
static void drop_aux_families(const char *dir)
{
	const char *names[CFI_N];
	const rocksdb_options_t *opts[CFI_N];
	rocksdb_column_family_handle_t *h[CFI_N];
	rocksdb_options_t *o = rocksdb_options_create();
	size_t n = 0;
	char *err = NULL;
	char **list = rocksdb_list_column_families(o, dir, &n, &err);
	rocksdb_t *db;

	assert_null(err);
	assert_int_equal(n, CFI_N);
	for (size_t i = 0; i < n; i++) {
		names[i] = list[i];
		opts[i] = o;
	}
	db = rocksdb_open_column_families(o, dir, (int)n, names, opts, h, &err);
	assert_null(err);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(names[i], "debuginfo") || !strcmp(names[i], "symcache") ||
		    !strcmp(names[i], "settings") || !strcmp(names[i], "perfmap")) {
			rocksdb_drop_column_family(db, h[i], &err);
			assert_null(err);
		}
		rocksdb_column_family_handle_destroy(h[i]);
	}
	rocksdb_close(db);
	rocksdb_list_column_families_destroy(list, n);
	rocksdb_options_destroy(o);
}

static void test_old_store_without_aux(void **state)
{
	char *dir = tmpdir_new();
	struct store *st = open_store(dir, 0, 0);
	struct store_txn *tx;
	struct store_kv key = { "k", 1, NULL, 0 };
	struct err_msg msg = { { 0 } };
	struct scanned s;
	struct got g;
	struct buf b;
	uint64_t id;
	(void)state;

	assert_non_null(st);
	put(st, STORE_AUX_DEBUGINFO, "gone", "x");
	tx = begin(st, "t");
	assert_int_equal(add_series(tx, "svc", "a", &id), 0);
	assert_int_equal(commit(tx), 0);
	store_close(st);
	drop_aux_families(dir);
	buf_init(&b, STORE_AUX_MAX_VALUE);
	/* Read-only: opens, the namespaces read as empty. */
	st = open_store(dir, 1, 0);
	assert_non_null(st);
	assert_string_equal(get(st, STORE_AUX_DEBUGINFO, "gone", &b), "<absent>");
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_aux_scan(st, STORE_AUX_DEBUGINFO, NULL, 0, scan_cb, &s, NULL), 0);
	assert_int_equal(s.n, 0);
	memset(&g, 0, sizeof(g));
	g.stop_at = SIZE_MAX;
	assert_int_equal(store_aux_multi_get(st, STORE_AUX_SYMCACHE, &key, 1, got_cb, &g, NULL), 0);
	assert_int_equal(g.n, 1);
	assert_true(g.absent[0]);
	assert_int_equal(store_aux_bytes(st, STORE_AUX_SYMCACHE), 0);
	store_close(st);
	/* Read-write: the families are created and usable; the rest is intact. */
	st = open_store(dir, 0, 0);
	assert_non_null(st);
	put(st, STORE_AUX_DEBUGINFO, "new", "y");
	assert_string_equal(get(st, STORE_AUX_DEBUGINFO, "new", &b), "y");
	tx = begin(st, "t");
	{
		uint64_t again = 0;
		assert_int_equal(add_series(tx, "svc", "a", &again), 0);
		assert_int_equal(again, id);
	}
	store_txn_abort(tx);
	store_close(st);
	/* A directory that is no store fails read-only with a message. */
	{
		char *empty = tmpdir_new();
		struct store_options o = { 0 };
		struct store *none = NULL;
		o.dir = empty;
		o.read_only = 1;
		assert_true(store_open(&o, &none, &msg) < 0);
		assert_null(none);
		assert_true(msg.text[0] != '\0');
		tmpdir_free(empty);
	}
	buf_release(&b);
	tmpdir_free(dir);
}

struct stat_sum {
	uint64_t bytes;
};

static int stats_cb(void *ctx, const struct store_tenant_stats *s)
{
	struct stat_sum *sum = ctx;

	for (int c = 0; c < STORE_CF_COUNT; c++)
		sum->bytes += s->bytes[c];
	return 0;
}

static void test_limits_and_stats_isolation(void **state)
{
	struct store *st = sfx_store(state);
	struct err_msg msg = { { 0 } };
	struct store_kv kv = { "k", 1, NULL, STORE_AUX_MAX_VALUE + 1 };
	struct stat_sum before = { 0 }, after = { 0 };
	struct store_txn *tx;
	char *big = malloc(STORE_AUX_MAX_VALUE + 1), *blob;
	uint64_t rnd = 88172645463325252ull;
	uint64_t id;
	struct buf b;

	assert_non_null(st);
	assert_non_null(big);
	memset(big, 'v', STORE_AUX_MAX_VALUE + 1);
	kv.val = big;
	assert_int_equal(store_aux_write(st, STORE_AUX_DEBUGINFO, &kv, 1, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "value"));
	kv.vlen = STORE_AUX_MAX_VALUE; /* the maximum itself is fine */
	assert_int_equal(store_aux_write(st, STORE_AUX_DEBUGINFO, &kv, 1, &msg), 0);
	buf_init(&b, STORE_AUX_MAX_VALUE);
	assert_int_equal(store_aux_get(st, STORE_AUX_DEBUGINFO, "k", 1, &b, NULL), 0);
	assert_int_equal(b.len, STORE_AUX_MAX_VALUE);
	buf_release(&b);
	/* A capped output buffer fails cleanly. */
	buf_init(&b, 10);
	assert_int_equal(store_aux_get(st, STORE_AUX_DEBUGINFO, "k", 1, &b, NULL), ERR_TOO_LARGE);
	buf_release(&b);
	assert_int_equal(store_aux_get(st, STORE_AUX_DEBUGINFO, "", 0, &b, &msg), ERR_INVALID);
	assert_int_equal(store_aux_get(st, (enum store_aux)7, "k", 1, &b, &msg), ERR_INVALID);
	assert_int_equal(store_aux_write(st, STORE_AUX_COUNT, &kv, 1, &msg), ERR_INVALID);
	free(big);

	/* Aux bytes are global: tenant sizes do not count them, even when the
	 * aux keys look like a tenant's key range. */
	tx = begin(st, "t");
	assert_int_equal(add_series(tx, "svc", "a", &id), 0);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(store_flush(st, NULL), 0);
	assert_int_equal(store_stats(st, stats_cb, &before, NULL), 0);
	blob = malloc(1 << 20);
	assert_non_null(blob);
	for (int i = 0; i < 4; i++) {
		uint8_t k[6] = { 0, 0, 0, 1, 'S', (uint8_t)i }; /* tenant 1's prefix */
		struct store_kv x = { k, sizeof(k), blob, 1 << 20 };
		for (size_t j = 0; j < (1 << 20); j++) { /* incompressible */
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			blob[j] = (char)(rnd >> 24);
		}
		assert_int_equal(store_aux_write(st, STORE_AUX_SYMCACHE, &x, 1, NULL), 0);
	}
	free(blob);
	assert_int_equal(store_flush(st, NULL), 0);
	assert_true(store_aux_bytes(st, STORE_AUX_SYMCACHE) > (2u << 20));
	assert_int_equal(store_stats(st, stats_cb, &after, NULL), 0);
	assert_int_equal(after.bytes, before.bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		SFX_TEST(test_batch_atomic_with_deletes),
		SFX_TEST(test_multi_get_in_order),
		SFX_TEST(test_prefix_scan_bounds),
		cmocka_unit_test(test_persistence_and_read_only),
		cmocka_unit_test(test_old_store_without_aux),
		SFX_TEST(test_limits_and_stats_isolation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
