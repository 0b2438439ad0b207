/* test_migrate.c - the profile-types.v1 migration at store_open(): series
 * written with the old names (as the old ingest wrote them, through the same
 * store API) come back under Pyroscope's, postings follow, samples stay, the
 * ambiguous and colliding ones are kept, and a second open changes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/buf.h"
#include "helpers.h"
#include "storage/storage_int.h"

#define GO_HEAP "alloc_objects:alloc_space:bytes:space:bytes"

struct listing {
	char text[8192];
	int n;
};

static int list_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct listing *s = ctx;
	size_t len = strlen(s->text);

	(void)part;
	len += (size_t)snprintf(s->text + len, sizeof(s->text) - len, "%llu:",
				(unsigned long long)id);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s->text + len, sizeof(s->text) - len, "%s=%s,", l[i].name,
					l[i].value);
	snprintf(s->text + len, sizeof(s->text) - len, "\n");
	s->n++;
	return 0;
}

static uint64_t series(struct store_txn *tx, const char *svc, const char *name,
		       const char *type, const char *extra)
{
	struct store_label l[4] = {
		{ STORE_LABEL_SERVICE, svc },
		{ STORE_LABEL_NAME, name },
		{ STORE_LABEL_PROFILE_TYPE, type },
		{ "pod", extra },
	};
	struct err_msg msg = { { 0 } };
	uint64_t id = 0;

	assert_int_equal(store_txn_series(tx, l, extra ? 4 : 3, &id, &msg), 0);
	return id;
}

static void profile(struct store_txn *tx, uint64_t series_id, int64_t v)
{
	struct store_profile_meta meta = { 1700000000000000000LL, 0, 0, { 0 } };
	uint32_t part, loc, stack;
	struct store_location l = { 0, 0x10, NULL, 0 };

	assert_int_equal(store_txn_partition(tx, "svc", &part), 0);
	assert_int_equal(store_txn_location(tx, part, &l, &loc), 0);
	assert_int_equal(store_txn_stack(tx, part, &loc, 1, &stack), 0);
	assert_int_equal(store_txn_profile(tx, series_id, part, &meta, &stack, &v, 1), 0);
}

struct total {
	int64_t sum;
};

static int sum_cb(void *ctx, const struct store_profile_view *p)
{
	struct total *t = ctx;

	for (size_t i = 0; i < p->n; i++)
		t->sum += p->values[i];
	return 0;
}

static void with(struct store *st, const char *name, const char *value, struct listing *out)
{
	memset(out, 0, sizeof(*out));
	assert_int_equal(store_series_with(st, "t", name, value, list_cb, out), 0);
}

/*
 * Makes the store look written by a version before the migration: those
 * never wrote its marker (a fresh store gets it at its first open).
 */
static void forget_migration(struct store *st)
{
	uint8_t k[5 + 16];
	char *err = NULL;

	key_tenant_tag(k, 0, TAG_MIGRATION);
	memcpy(k + 5, "profile-types.v1", 16);
	rocksdb_delete_cf(st->db, st->wopt, st->cf[CFI_META], (const char *)k, sizeof(k), &err);
	assert_null(err);
}

/* Writes the series the old naming produced, as the old ingest did. */
static void write_old(struct store *st, uint64_t ids[8])
{
	struct store_txn *tx = begin(st, "t");

	/* A Go heap pprof without __name__: every type named alloc_objects. */
	ids[0] = series(tx, "svc", "alloc_objects", "alloc_objects:alloc_objects:count:space:bytes",
			NULL);
	ids[1] = series(tx, "svc", "alloc_objects", GO_HEAP, NULL);
	/* Node's wall profile: first type samples, a wall type beside it. */
	ids[2] = series(tx, "svc", "samples", "samples:samples:count:wall:microseconds", NULL);
	ids[3] = series(tx, "svc", "samples", "samples:wall:microseconds:wall:microseconds", NULL);
	/* .NET: first type cpu, an empty period type. */
	ids[4] = series(tx, "svc", "cpu", "cpu:cpu:nanoseconds::nanoseconds", NULL);
	/* Go mutex or block, merged: no way to tell, kept. */
	ids[5] = series(tx, "svc", "contentions", "contentions:delay:nanoseconds:contentions:count",
			NULL);
	/* The renamed labels already exist (pod=x under both names): kept. */
	ids[6] = series(tx, "svc", "alloc_objects", GO_HEAP, "x");
	ids[7] = series(tx, "svc", "memory", "memory:alloc_space:bytes:space:bytes", "x");
	for (int i = 0; i < 8; i++)
		profile(tx, ids[i], 10 + i);
	assert_int_equal(commit(tx), 0);
	forget_migration(st);
}

static void test_renames_old_names(void **state)
{
	struct store *st = sfx_store(state);
	struct listing s;
	struct total t = { 0 };
	uint64_t ids[8];

	assert_non_null(st);
	write_old(st, ids);
	/* A store written before the migration existed has no marker. */
	st = sfx_reopen(state, 0);
	assert_non_null(st);
	with(st, STORE_LABEL_PROFILE_TYPE, "memory:alloc_space:bytes:space:bytes", &s);
	assert_int_equal(s.n, 2); /* ids[1] renamed, ids[7] as it was */
	assert_non_null(strstr(s.text, "__name__=memory"));
	with(st, STORE_LABEL_PROFILE_TYPE, "memory:alloc_objects:count:space:bytes", &s);
	assert_int_equal(s.n, 1);
	with(st, STORE_LABEL_PROFILE_TYPE, "wall:samples:count:wall:microseconds", &s);
	assert_int_equal(s.n, 1);
	with(st, STORE_LABEL_PROFILE_TYPE, "wall:wall:microseconds:wall:microseconds", &s);
	assert_int_equal(s.n, 1);
	with(st, STORE_LABEL_PROFILE_TYPE, "process_cpu:cpu:nanoseconds::nanoseconds", &s);
	assert_int_equal(s.n, 1);
	/* The old names are gone from the postings... */
	with(st, STORE_LABEL_NAME, "alloc_objects", &s);
	assert_int_equal(s.n, 1); /* only the one whose new labels collided */
	assert_non_null(strstr(s.text, "pod=x"));
	with(st, STORE_LABEL_NAME, "samples", &s);
	assert_int_equal(s.n, 0);
	with(st, STORE_LABEL_NAME, "cpu", &s);
	assert_int_equal(s.n, 0);
	/* ...except the ambiguous one. */
	with(st, STORE_LABEL_PROFILE_TYPE, "contentions:delay:nanoseconds:contentions:count", &s);
	assert_int_equal(s.n, 1);
	/* Ids and samples stay. */
	assert_int_equal(store_profiles_each(st, "t", ids[4], 0, INT64_MAX, sum_cb, &t, NULL), 0);
	assert_int_equal(t.sum, 14);
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_series_each(st, "t", list_cb, &s), 0);
	assert_int_equal(s.n, 8);
}

static void test_idempotent_and_writable(void **state)
{
	struct store *st = sfx_store(state);
	struct listing a, b;
	struct store_txn *tx;
	uint64_t ids[8], id;

	write_old(st, ids);
	st = sfx_reopen(state, 0);
	memset(&a, 0, sizeof(a));
	assert_int_equal(store_series_each(st, "t", list_cb, &a), 0);
	st = sfx_reopen(state, 0);
	memset(&b, 0, sizeof(b));
	assert_int_equal(store_series_each(st, "t", list_cb, &b), 0);
	assert_string_equal(a.text, b.text);
	/* New profiles under the new name land in the renamed series. */
	tx = begin(st, "t");
	id = series(tx, "svc", "memory", "memory:alloc_objects:count:space:bytes", NULL);
	assert_int_equal(id, ids[0]);
	store_txn_abort(tx);
	/* A read-only open never writes. */
	st = sfx_reopen(state, 1);
	assert_non_null(st);
}

/* Old names in a store the migration already ran on are left alone (the marker). */
static void test_marker(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx;
	struct listing s;

	st = sfx_reopen(state, 0); /* the marker is written on the first open */
	tx = begin(st, "t");
	series(tx, "svc", "cpu", "cpu:cpu:nanoseconds::nanoseconds", NULL);
	assert_int_equal(commit(tx), 0);
	st = sfx_reopen(state, 0);
	with(st, STORE_LABEL_NAME, "cpu", &s);
	assert_int_equal(s.n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		SFX_TEST(test_renames_old_names),
		SFX_TEST(test_idempotent_and_writable),
		SFX_TEST(test_marker),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
