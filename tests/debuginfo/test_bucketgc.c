/*
 * test_bucketgc.c - debug info leaves the bucket by the retention rule
 * (bucketgc.c), on the directory bucket backend: an ingester's blocks and a
 * compactor that writes the index, with the debug-info service on the
 * compactor.  A build ID a counted block references stays however old its
 * reference, also past the debug info retention; one no block references
 * is deleted with every object of its own (files, tenant copies, indexes)
 * once it has been unused past the retention and then past the delay, and
 * not before; a block that expired keeps its build ID for the retention
 * after its newest profile; keys that are not ours are left alone; a
 * build ID an ingester's head uses is marked used by that ingester and
 * kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "debuginfo/debuginfo_int.h"
#include "objstore/objstore.h"
#include "storage/storage.h"
#include "tests/storage/blockgen.h"
#include "tests/storage/helpers.h"

#define DAY (86400 * SEC)
#define NOW0 (T0 + 30 * DAY)
#define RETENTION (3 * DAY)
/* The store's delete delay + block range + seal delay (no maintenance thread). */
#define DELAY (30 * SEC + RANGE + 60 * SEC)

#define ID_A "aa000000000000000000000000000000000000a1" /* "keep": an old profile */
#define ID_B "bb000000000000000000000000000000000000b2" /* "short": its block expires */
#define ID_C "cc000000000000000000000000000000000000c3" /* "keep": a recent profile */
#define ID_D "dd000000000000000000000000000000000000d4" /* uploaded, never referenced */
#define ID_E "ee000000000000000000000000000000000000e5" /* used in an ingester's head */

static int64_t fake_now;

static void put(struct objstore *os, const char *key)
{
	struct err_msg msg = { { 0 } };

	assert_int_equal(objstore_put(os, key, "x", 1, 0, &msg), 0);
}

static int present(struct objstore *os, const char *key)
{
	struct objstore_stat st;
	struct err_msg msg = { { 0 } };

	return objstore_head(os, key, &st, &msg) == 0;
}

/* The objects of every build ID: a file, a tenant's copy, an index. */
static const char *const keys[][3] = {
	{ "debuginfo/" ID_A "/debuginfo", "debuginfo/" ID_A "/tenant/keep/executable",
	  "debuginfo/" ID_A "/index/v1-1-0123456789abcdef0123456789abcdef" },
	{ "debuginfo/" ID_B "/debuginfo", "debuginfo/" ID_B "/tenant/short/debuginfo",
	  "debuginfo/" ID_B "/index/v1-1-0123456789abcdef0123456789abcdef" },
	{ "debuginfo/" ID_C "/executable", "debuginfo/" ID_C "/tenant/keep/debuginfo",
	  "debuginfo/" ID_C "/index/v1-2-0123456789abcdef0123456789abcdef" },
	{ "debuginfo/" ID_D "/debuginfo", "debuginfo/" ID_D "/tenant/x/kallsyms",
	  "debuginfo/" ID_D "/index/v1-5-0123456789abcdef0123456789abcdef" },
};

static int all_present(struct objstore *os, int which)
{
	int n = 0;

	for (int i = 0; i < 3; i++)
		n += present(os, keys[which][i]);
	return n;
}

/* Copies the key listed last into arg (128 bytes). */
static int one_key(void *arg, const struct objstore_entry *e)
{
	snprintf(arg, 128, "%s", e->key);
	return 0;
}

static void pass(struct store *c, int64_t at)
{
	fake_now = at;
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
}

static void test_lifecycle(void **state)
{
	static const struct store_retention short_one = { "short", DAY };
	struct gen_deploy dep;
	struct err_msg msg = { { 0 } };
	struct objstore *os;
	struct store *in, *c;
	struct debuginfo *d;
	struct debuginfo_options o;
	struct debuginfo_stats ds;
	int64_t seen;

	(void)state;
	fake_now = NOW0;
	assert_int_equal(gen_deploy_open(&dep, &fake_now), 0);
	os = dep.os;
	dep.retention = &short_one;
	dep.n_retention = 1;
	in = gen_deploy_role(&dep, STORE_BUCKET_PRUNE | STORE_NO_COMPACT);
	c = gen_deploy_role(&dep, STORE_BUCKET_INDEX | STORE_BUCKET_DISCOVER);
	assert_true(in && c);
	memset(&o, 0, sizeof(o));
	o.data_dir = gen_deploy_dir(&dep, c);
	o.workers = 1;
	o.objstore = os;
	o.retention_ns = RETENTION;
	assert_int_equal(debuginfo_open(c, &o, &d, &msg), 0);
	debuginfo__bucket_stop(d); /* nothing of this test is put by the service */

	assert_int_equal(gen_ref_profile(in, "keep", ID_A, NOW0 - 5 * DAY), 0);
	assert_int_equal(gen_ref_profile(in, "short", ID_B, NOW0 - 3 * DAY / 2), 0);
	assert_int_equal(gen_ref_profile(in, "keep", ID_C, NOW0 - 2 * RANGE), 0);
	assert_int_equal(store_maintain(in, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < 3; k++)
			put(os, keys[i][k]);
	put(os, "debuginfo/README");
	put(os, "debuginfo/NOT-HEX/debuginfo");

	/* First pass: D is seen, its grace starts; nothing goes. */
	seen = NOW0;
	pass(c, seen);
	debuginfo_stats(d, &ds);
	assert_int_equal(ds.bucket_deleted, 0);
	assert_int_equal(ds.bucket_delete_waiting, 0);

	/* B's block expired (a day of retention for "short", by the newest
	 * profile's time), but its last
	 * use is within the retention until NOW0 + 1.5 days: it stays. */
	pass(c, NOW0 - 3 * DAY / 2 + RETENTION - SEC);
	debuginfo_stats(d, &ds);
	assert_int_equal(ds.bucket_delete_waiting, 0);
	/* Past it, B waits the delay, then goes with all its objects. */
	pass(c, NOW0 - 3 * DAY / 2 + RETENTION + SEC);
	debuginfo_stats(d, &ds);
	assert_int_equal(ds.bucket_delete_waiting, 1);
	pass(c, NOW0 - 3 * DAY / 2 + RETENTION + DELAY);
	assert_int_equal(all_present(os, 1), 3);
	pass(c, NOW0 - 3 * DAY / 2 + RETENTION + DELAY + 2 * SEC);
	debuginfo_stats(d, &ds);
	assert_int_equal(ds.bucket_deleted, 1);
	assert_int_equal(ds.bucket_deleted_objects, 3);
	assert_int_equal(ds.bucket_delete_waiting, 0);
	assert_int_equal(all_present(os, 1), 0);

	/* D, never referenced, has the retention from when it was seen. */
	pass(c, seen + RETENTION - SEC);
	assert_int_equal(all_present(os, 3), 3);
	pass(c, seen + RETENTION + SEC);
	pass(c, seen + RETENTION + DELAY);
	assert_int_equal(all_present(os, 3), 3);
	pass(c, seen + RETENTION + DELAY + 2 * SEC);
	debuginfo_stats(d, &ds);
	assert_int_equal(ds.bucket_deleted, 2);
	assert_int_equal(ds.bucket_deleted_objects, 6);
	assert_int_equal(ds.bucket_delete_failures, 0);
	assert_int_equal(all_present(os, 3), 0);

	/* A's block counts, however old its profile and its upload; so does
	 * C's.  Keys that are not a build ID's are left alone. */
	pass(c, NOW0 + 10 * DAY);
	pass(c, NOW0 + 10 * DAY + 2 * DELAY);
	assert_int_equal(all_present(os, 0), 3);
	assert_int_equal(all_present(os, 2), 3);
	assert_true(present(os, "debuginfo/README"));
	assert_true(present(os, "debuginfo/NOT-HEX/debuginfo"));

	/* An upload of D again is a new upload: its grace starts again. */
	put(os, keys[3][0]);
	seen = fake_now + DAY;
	pass(c, seen);
	pass(c, seen + RETENTION - SEC);
	pass(c, seen + RETENTION - SEC + 2 * DELAY);
	assert_int_equal(all_present(os, 3), 1);

	/* E waits to go when an ingester's head (which no index counts)
	 * uses it: that ingester's retention pass marks it used, and the
	 * bucket keeps it; the marker goes once past the retention. */
	{
		struct debuginfo *dn;
		struct debuginfo_options on = o;
		char marker[128];
		int64_t x = fake_now + DAY, used;

		on.data_dir = gen_deploy_dir(&dep, in);
		assert_int_equal(debuginfo_open(in, &on, &dn, &msg), 0);
		debuginfo__bucket_stop(dn);
		put(os, "debuginfo/" ID_E "/debuginfo");
		pass(c, x);
		pass(c, x + RETENTION + SEC);
		debuginfo_stats(d, &ds);
		assert_int_equal(ds.bucket_delete_waiting, 1);
		used = x + RETENTION + 2 * SEC;
		assert_int_equal(gen_ref_profile(in, "keep", ID_E, used), 0);
		assert_int_equal(debuginfo_retain(dn, RETENTION, used, NULL, &msg), 0);
		debuginfo_stats(dn, &ds);
		assert_int_equal(ds.bucket_use_marks, 1);
		marker[0] = '\0';
		assert_int_equal(objstore_list(os, "debuginfo/" ID_E "/used/", one_key, marker, &msg), 0);
		assert_true(marker[0]);
		/* Named by the profile's time (the head's newest for E), not later. */
		assert_true(atoll(marker + strlen("debuginfo/" ID_E "/used/")) <= used / SEC + 60);
		assert_true(atoll(marker + strlen("debuginfo/" ID_E "/used/")) >= used / SEC - 60);
		/* A second pass within a quarter of the retention puts none. */
		assert_int_equal(debuginfo_retain(dn, RETENTION, used + SEC, NULL, &msg), 0);
		debuginfo_stats(dn, &ds);
		assert_int_equal(ds.bucket_use_marks, 1);
		pass(c, x + RETENTION + DELAY + 10 * SEC);
		debuginfo_stats(d, &ds);
		assert_int_equal(ds.bucket_delete_waiting, 0);
		assert_true(present(os, "debuginfo/" ID_E "/debuginfo"));
		pass(c, used + RETENTION + SEC);
		assert_false(present(os, marker));
		debuginfo_close(dn);
	}

	debuginfo_close(d);
	gen_deploy_close(&dep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
