/* test_store.c - opening and reopening, the format record, tenants and their
 * isolation, transaction atomicity, statistics, read-only opens next to a
 * writer, and readers racing a writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"
#include "storage/storage_int.h"

#define SEC 1000000000LL

/* Writes one series, one stack of two frames and one profile of n samples. */
static void write_one(struct store *st, const char *tenant, const char *svc, int64_t t,
		      int commit_it)
{
	struct store_txn *tx = begin(st, tenant);
	struct store_mapping m = { 0, 0x1000, 0, "/bin/x", "abcd", 0 };
	struct store_function f = { "f", "", "x.c", 1 };
	struct store_line line = { 0, 3, 0 };
	struct store_location l = { 0, 0x10, &line, 1 };
	struct store_profile_meta meta = { t, SEC, 1, { 0 } };
	uint64_t series;
	uint32_t part, locs[2], stack;
	int64_t v = 42;

	assert_int_equal(add_series(tx, svc, "pod-1", &series), 0);
	assert_int_equal(store_txn_partition(tx, svc, &part), 0);
	assert_int_equal(store_txn_mapping(tx, part, &m, &l.mapping_id), 0);
	assert_int_equal(store_txn_function(tx, part, &f, &line.function_id), 0);
	assert_int_equal(store_txn_location(tx, part, &l, &locs[0]), 0);
	l.address = 0x20;
	assert_int_equal(store_txn_location(tx, part, &l, &locs[1]), 0);
	assert_int_equal(store_txn_stack(tx, part, locs, 2, &stack), 0);
	assert_int_equal(store_txn_profile(tx, series, part, &meta, &stack, &v, 1), 0);
	if (commit_it)
		assert_int_equal(commit(tx), 0);
	else
		store_txn_abort(tx);
}

struct stats_seen {
	int n;
	struct store_tenant_stats s[8];
	char names[8][32];
};

static int stats_cb(void *ctx, const struct store_tenant_stats *s)
{
	struct stats_seen *ss = ctx;
	ss->s[ss->n] = *s;
	snprintf(ss->names[ss->n], sizeof(ss->names[0]), "%s", s->tenant);
	ss->n++;
	return 0;
}

static int tenant_cb(void *ctx, const char *t)
{
	char *out = ctx;
	strcat(out, t);
	strcat(out, ",");
	return 0;
}

static void test_open_errors(void **state)
{
	struct store_options o = { 0 };
	struct err_msg msg = { { 0 } };
	struct store *st = NULL;
	char *dir = tmpdir_new();
	char sub[256];
	(void)state;

	assert_int_equal(store_open(&o, &st, &msg), ERR_INVALID);
	/* Read-only open of a directory that holds no store. */
	snprintf(sub, sizeof(sub), "%s/none", dir);
	o.dir = sub;
	o.read_only = 1;
	assert_int_not_equal(store_open(&o, &st, &msg), 0);
	assert_null(st);
	assert_true(msg.text[0] != '\0');
	store_close(NULL);
	tmpdir_free(dir);
}

static void test_window_and_format(void **state)
{
	char *dir = tmpdir_new();
	struct store *st = open_store(dir, 0, 30 * SEC);
	uint8_t k[5];
	struct err_msg msg = { { 0 } };
	struct store_options o = { 0 };
	(void)state;

	assert_int_equal(st->window_ns, 30 * SEC);
	store_close(st);
	/* The stored window wins over the option. */
	st = open_store(dir, 0, 99 * SEC);
	assert_int_equal(st->window_ns, 30 * SEC);
	/* A damaged format record is refused on open. */
	key_tenant_tag(k, 0, TAG_FORMAT);
	assert_int_equal(store__raw_put(st, CFI_META, k, 5, "NOPE", 4), 0);
	store_close(st);
	o.dir = dir;
	st = NULL;
	assert_int_equal(store_open(&o, &st, &msg), ERR_CORRUPT);
	assert_null(st);
	assert_non_null(strstr(msg.text, "not an unhex store"));
	tmpdir_free(dir);
}

/*
 * The format record's version (storage_int.h, section 2): a format 2 store
 * opens read-only as it is, and a read-write open writes format 3 with the
 * same store id; a later version is refused, named.
 */
static void test_format_versions(void **state)
{
	char *dir = tmpdir_new();
	struct store *st = open_store(dir, 0, 30 * SEC);
	struct store_options o = { 0 };
	struct err_msg msg = { { 0 } };
	uint8_t k[5], id[16];
	char want[64];
	struct buf v;
	(void)state;

	key_tenant_tag(k, 0, TAG_FORMAT);
	buf_init(&v, 64);
	assert_int_equal(store__raw_get(st, CFI_META, k, 5, &v), 0);
	assert_int_equal(v.len, FORMAT_RECORD_LEN);
	assert_int_equal((uint8_t)v.data[4], STORE_FORMAT_VERSION);
	memcpy(id, v.data + 13, 16);
	v.data[4] = 2;
	assert_int_equal(store__raw_put(st, CFI_META, k, 5, v.data, v.len), 0);
	store_close(st);
	st = open_store(dir, 1, 0);
	buf_reset(&v);
	assert_int_equal(store__raw_get(st, CFI_META, k, 5, &v), 0);
	assert_int_equal((uint8_t)v.data[4], 2);
	assert_memory_equal(st->store_id, id, 16);
	store_close(st);
	st = open_store(dir, 0, 0);
	buf_reset(&v);
	assert_int_equal(store__raw_get(st, CFI_META, k, 5, &v), 0);
	assert_int_equal((uint8_t)v.data[4], STORE_FORMAT_VERSION);
	assert_memory_equal(v.data + 13, id, 16);
	assert_memory_equal(st->store_id, id, 16);
	v.data[4] = STORE_FORMAT_VERSION + 1;
	assert_int_equal(store__raw_put(st, CFI_META, k, 5, v.data, v.len), 0);
	store_close(st);
	o.dir = dir;
	st = NULL;
	assert_int_equal(store_open(&o, &st, &msg), ERR_CORRUPT);
	assert_null(st);
	snprintf(want, sizeof(want), "store format version %d, expected %d",
		 STORE_FORMAT_VERSION + 1, STORE_FORMAT_VERSION);
	assert_non_null(strstr(msg.text, want));
	buf_release(&v);
	tmpdir_free(dir);
}

static void test_tenants_isolated(void **state)
{
	struct store *st = sfx_store(state);
	char names[256] = "";
	struct store_symbols *a, *b, *c = NULL;
	struct store_function f;
	struct store_txn *tx = NULL;

	write_one(st, "zeta", "svc", 5 * SEC, 1);
	write_one(st, "alpha", "svc", 5 * SEC, 1);
	write_one(st, "alpha", "svc2", 5 * SEC, 1);
	assert_int_equal(store_tenants(st, tenant_cb, names), 0);
	assert_string_equal(names, "alpha,zeta,");
	/* Same partition number, different tenants: separate symbols. */
	assert_int_equal(store_symbols_get(st, "zeta", 1, &a, NULL), 0);
	assert_int_equal(store_symbols_get(st, "alpha", 1, &b, NULL), 0);
	assert_ptr_not_equal(a->p, b->p);
	assert_int_equal(store_symbols_get(st, "zeta", 2, &c, NULL), ERR_NOT_FOUND);
	assert_null(c);
	assert_int_equal(store_symbols_function(a, 1, &f), 0);
	store_symbols_put(a);
	store_symbols_put(b);
	assert_int_equal(store_symbols_get(st, "nobody", 1, &a, NULL), ERR_NOT_FOUND);
	/* Bad tenant names. */
	assert_int_equal(store_txn_begin(st, "", &tx, NULL), ERR_INVALID);
	assert_null(tx);
	st = sfx_reopen(state, 0);
	names[0] = '\0';
	assert_int_equal(store_tenants(st, tenant_cb, names), 0);
	assert_string_equal(names, "alpha,zeta,");
	/* A new tenant after reopen gets a fresh id. */
	write_one(st, "mid", "svc", 5 * SEC, 1);
	assert_int_equal(store__tenant_find(st, "mid")->id, 3);
}

static void test_atomic_and_stats(void **state)
{
	struct store *st = sfx_store(state);
	struct stats_seen ss = { 0 };
	char names[64] = "";

	write_one(st, "t", "svc", 5 * SEC, 1);
	write_one(st, "t", "svc", 6 * SEC, 1);
	write_one(st, "t", "svc", 7 * SEC, 0);    /* aborted */
	write_one(st, "ghost", "svc", 7 * SEC, 0); /* aborted new tenant */
	assert_int_equal(store_tenants(st, tenant_cb, names), 0);
	assert_string_equal(names, "t,");
	assert_int_equal(store_stats(st, stats_cb, &ss, NULL), 0);
	assert_int_equal(ss.n, 1);
	assert_string_equal(ss.names[0], "t");
	assert_int_equal(ss.s[0].series, 1);
	assert_int_equal(ss.s[0].profiles, 2);
	assert_int_equal(ss.s[0].samples, 2);
	assert_int_equal(ss.s[0].stacks, 2);
	assert_int_equal(ss.s[0].locations, 2);
	assert_int_equal(ss.s[0].functions, 1);
	assert_int_equal(ss.s[0].mappings, 1);
	for (int c = 0; c < STORE_CF_COUNT; c++)
		if (c != STORE_CF_BLOCKS)
			assert_true(ss.s[0].bytes[c] > 0); /* memtable share */
	assert_int_equal(ss.s[0].bytes[STORE_CF_BLOCKS], 0); /* nothing sealed */

	/* Counts survive; sizes now come from SST files. */
	st = sfx_reopen(state, 0);
	write_one(st, "u", "svc", 5 * SEC, 1);
	assert_int_equal(store_flush(st, NULL), 0);
	memset(&ss, 0, sizeof(ss));
	assert_int_equal(store_stats(st, stats_cb, &ss, NULL), 0);
	assert_int_equal(ss.n, 2);
	assert_int_equal(ss.s[0].profiles, 2);
	assert_int_equal(ss.s[0].series, 1);
	assert_int_equal(ss.s[1].profiles, 1);
	for (int i = 0; i < 2; i++)
		for (int c = 0; c < STORE_CF_COUNT; c++)
			assert_true(c == STORE_CF_BLOCKS || ss.s[i].bytes[c] > 0);
}

static int count_cb(void *ctx, const struct store_profile_view *p)
{
	(void)p;
	(*(int *)ctx)++;
	return 0;
}

static void test_read_only_next_to_writer(void **state)
{
	struct store *st = sfx_store(state);
	struct store *ro;
	struct stats_seen ss = { 0 };
	struct store_txn *tx = NULL;
	struct err_msg msg = { { 0 } };
	int n = 0;

	write_one(st, "t", "svc", 5 * SEC, 1);
	/* The writer still holds the DB (and its LOCK): a read-only open works
	 * and sees what was committed, including what is only in the WAL. */
	ro = open_store(sfx_dir(state), 1, 0);
	assert_non_null(ro);
	assert_int_equal(store_stats(ro, stats_cb, &ss, NULL), 0);
	assert_int_equal(ss.n, 1);
	assert_int_equal(ss.s[0].profiles, 1);
	assert_int_equal(store_profiles_each(ro, "t", 1, 0, 10 * SEC, count_cb, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(store_txn_begin(ro, "t", &tx, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "read-only"));
	assert_int_equal(store_flush(ro, NULL), 0);
	store_close(ro);
	/* A second read-write open is refused with a clear error. */
	{
		struct store_options o = { 0 };
		struct store *st2 = NULL;
		o.dir = sfx_dir(state);
		err_clear(&msg);
		assert_int_equal(store_open(&o, &st2, &msg), ERR_IO);
		assert_non_null(strstr(msg.text, "lock"));
	}
}

struct race {
	struct store *st;
	atomic_int done;
	long reads;
};

static int race_profile_cb(void *ctx, const struct store_profile_view *p)
{
	struct race *r = ctx;
	struct store_symbols *sym;
	uint32_t parent, loc;

	/* Every stack a committed profile names is readable. */
	if (store_symbols_get(r->st, "t", p->part, &sym, NULL) != 0)
		abort();
	for (size_t i = 0; i < p->n; i++)
		if (p->stack_ids[i] && store_symbols_stack_node(sym, p->stack_ids[i], &parent, &loc))
			abort();
	store_symbols_put(sym);
	r->reads++;
	return 0;
}

static int race_series_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
			  size_t n)
{
	struct race *r = ctx;
	(void)part, (void)l, (void)n;
	return store_profiles_each(r->st, "t", id, INT64_MIN, INT64_MAX, race_profile_cb, r,
				   NULL);
}

static void *race_reader(void *arg)
{
	struct race *r = arg;
	while (!atomic_load(&r->done)) {
		struct stats_seen ss = { 0 };
		if (store_series_each(r->st, "t", race_series_cb, r) != 0)
			abort();
		if (store_stats(r->st, stats_cb, &ss, NULL) != 0)
			abort();
	}
	return NULL;
}

static void test_concurrent_readers(void **state)
{
	char *dir = tmpdir_new();
	struct race r = { 0 };
	pthread_t th[2];
	(void)state;

	r.st = open_store(dir, 0, 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race_reader, &r), 0);
	for (int i = 0; i < 60; i++) {
		char svc[16];
		snprintf(svc, sizeof(svc), "svc%d", i % 7);
		write_one(r.st, "t", svc, (int64_t)i * SEC, i % 6 != 5);
	}
	atomic_store(&r.done, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	store_close(r.st);
	tmpdir_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_window_and_format),
		cmocka_unit_test(test_format_versions),
		SFX_TEST(test_tenants_isolated),
		SFX_TEST(test_atomic_and_stats),
		SFX_TEST(test_read_only_next_to_writer),
		cmocka_unit_test(test_concurrent_readers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
