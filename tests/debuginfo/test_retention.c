/*
 * test_retention.c - debug info kept as long as the profiles that need it
 * (retention.c): a pass records each build ID's newest retained profile,
 * lists the referenced build IDs without debug info, never deletes what a
 * retained block references however old, and deletes what retention left
 * unreferenced once the debug info retention passed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <unistd.h>

#include "debuginfo/debuginfo_int.h"
#include "svctest.h"

#define DAY (86400LL * 1000000000LL)

/* Profile times around the real clock: uploads are stamped with it. */
static int64_t T_NEW, T_OLD;
#define ID3 "deadbeefdeadbeefdeadbeefdeadbeefdeadbeef"

static int64_t fake_now;

static int64_t fake_clock(void *ctx)
{
	(void)ctx;
	return fake_now;
}

/* A store retaining 7 days (by its clock, the newest profile), and the service. */
static void open_retaining(void)
{
	struct store_options so = { 0 };
	struct debuginfo_options o = { 0 };

	so.retention_ns = 7 * DAY;
	so.clock_ns = fake_clock;
	so.reader_grace_ns = 1;
	o.retain_interval_ns = 1000 * DAY; /* the test runs the passes itself */
	open_with(so, o);
}

/* One profile at t of one location in a mapping with build ID `bid`. */
static void profile(int64_t t, const char *svc, const char *bid)
{
	struct err_msg msg = { { 0 } };
	struct store_txn *tx = NULL;
	struct store_label l[2] = { { "__profile_type__", "cpu" }, { "service_name", svc } };
	struct store_mapping m = { 0x1000, 0x2000, 0, "/bin/prog", bid, 0 };
	struct store_location loc = { 0, 0x1010, NULL, 0 };
	struct store_profile_meta meta = { t, 0, 0, { 0 } };
	uint64_t series;
	uint32_t part, lid, stack;
	int64_t v = 1;

	assert_int_equal(store_txn_begin(g_st, "t", &tx, &msg), 0);
	assert_int_equal(store_txn_series(tx, l, 2, &series, &msg), 0);
	assert_int_equal(store_txn_partition(tx, svc, &part), 0);
	assert_int_equal(store_txn_mapping(tx, part, &m, &loc.mapping_id), 0);
	assert_int_equal(store_txn_location(tx, part, &loc, &lid), 0);
	assert_int_equal(store_txn_stack(tx, part, &lid, 1, &stack), 0);
	assert_int_equal(store_txn_profile(tx, series, part, &meta, &stack, &v, 1), 0);
	assert_int_equal(store_txn_commit(tx, &msg), 0);
}

struct seen {
	char id[8][DEBUGINFO_HEX_MAX];
	int64_t last[8];
	int n;
};

static int seen_missing(void *ctx, const char *id, int64_t last, enum debuginfo_status st)
{
	struct seen *s = ctx;

	(void)st;
	if (s->n < 8) {
		snprintf(s->id[s->n], sizeof(s->id[0]), "%s", id);
		s->last[s->n++] = last;
	}
	return 0;
}

static void test_retention(void **state)
{
	struct debuginfo_upload_result res;
	struct debuginfo_retention_stats st;
	struct debuginfo_record rec;
	struct store_maint_stats ms;
	struct err_msg msg;
	struct seen seen;
	char path[4096];

	(void)state;
	T_NEW = clock_wall_ns() / DAY * DAY - DAY;
	T_OLD = T_NEW - 10 * DAY;
	close_all();
	open_retaining();
	err_clear(&msg);
	fake_now = T_NEW + DAY;
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	assert_int_equal(upload_file(t_path("prog2.debug"), g_id2, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	profile(T_OLD, "old", g_id);
	profile(T_OLD, "both", g_id2);
	profile(T_NEW, "both", g_id2);
	profile(T_NEW, "hex", ID3);

	/* Everything in the head: referenced, last profiles recorded, one missing. */
	memset(&st, 0, sizeof(st));
	assert_int_equal(debuginfo_retain(g_svc, DAY, T_NEW + 30 * DAY, &st, &msg), 0);
	assert_int_equal(st.referenced, 3);
	assert_int_equal(st.missing, 1);
	assert_int_equal(st.deleted, 0);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(debuginfo_missing_each(g_svc, seen_missing, &seen, &msg), 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.id[0], ID3);

	/* Sealed; the blocks of T_OLD expire (the clock is T_NEW, 7 days kept). */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(g_st, STORE_MAINT_SEAL_ALL, &ms, &msg), 0);
	assert_true(ms.sealed_blocks >= 2);
	assert_true(ms.expired_blocks >= 1);
	memset(&st, 0, sizeof(st));
	assert_int_equal(debuginfo_retain(g_svc, DAY, T_NEW + 30 * DAY, &st, &msg), 0);
	/* g_id is used by no retained profile, and its last use is 40 days
	 * old: deleted.  g_id2 is older than the retention too, but a retained
	 * block uses it: kept. */
	assert_int_equal(st.deleted, 1);
	assert_int_equal(st.referenced, 2);
	assert_int_equal(debuginfo_get(g_svc, g_id, &rec, NULL), ERR_NOT_FOUND);
	assert_int_equal(debuginfo_file_path(g_svc, g_id, DEBUGINFO_FILE_DEBUGINFO, path,
					     sizeof(path)), ERR_NOT_FOUND);
	assert_int_equal(debuginfo_get(g_svc, g_id2, &rec, NULL), 0);
	assert_true(rec.last_profile_ns == T_NEW);
	assert_int_equal(debuginfo_file_path(g_svc, g_id2, DEBUGINFO_FILE_DEBUGINFO, path,
					     sizeof(path)), 0);
	assert_int_equal(access(path, R_OK), 0);

	/* Without a debug info retention nothing goes, whatever its age. */
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	memset(&st, 0, sizeof(st));
	assert_int_equal(debuginfo_retain(g_svc, 0, T_NEW + 3000 * DAY, &st, &msg), 0);
	assert_int_equal(st.deleted, 0);
	assert_int_equal(debuginfo_get(g_svc, g_id, &rec, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_retention),
	};
	return cmocka_run_group_tests(tests, svc_setup, svc_teardown);
}
