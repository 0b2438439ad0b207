/*
 * test_unsym.c - binaries seen at ingest without names (unsym.c) through a
 * real service and store: what arrives before the first check is counted
 * by its answer, later profiles at once; an upload flips the answer with
 * no query; no build ID is judged at once and "[...]" mappings without one
 * are left out; the tables keep their caps (untracked profiles, the
 * overflow row) and forget idle entries; tenants with symbolization off
 * are not tracked, those with upstreams of their own are judged through
 * them.  The checking thread is stopped
 * so each check runs where the test says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <unistd.h>

#include "debuginfo/debuginfo_int.h"
#include "svctest.h"
#include "upstream.h"

static struct fake_upstream g_up;

struct seen {
	const char *tenant, *service;  /* the row to read */
	int rows;
	uint64_t profiles[DEBUGINFO_STATUS_COUNT], samples[DEBUGINFO_STATUS_COUNT];
	int entries;
	enum debuginfo_status status;  /* of the last entry of `service` */
	char reason[200];
};

static int on_row(void *ctx, const struct debuginfo_unsym_row *r)
{
	struct seen *s = ctx;

	s->rows++;
	if (!strcmp(r->tenant, s->tenant) && !strcmp(r->service, s->service)) {
		memcpy(s->profiles, r->profiles, sizeof(s->profiles));
		memcpy(s->samples, r->samples, sizeof(s->samples));
	}
	return 0;
}

static int on_entry(void *ctx, const struct debuginfo_unsym_entry *e)
{
	struct seen *s = ctx;

	s->entries++;
	if (!strcmp(e->service, s->service)) {
		s->status = e->status;
		snprintf(s->reason, sizeof(s->reason), "%s", e->reason);
	}
	return 0;
}

static struct seen look(const char *tenant, const char *service, const char *filter)
{
	struct seen s;

	memset(&s, 0, sizeof(s));
	s.tenant = tenant;
	s.service = service;
	s.status = DEBUGINFO_STATUS_COUNT;
	assert_int_equal(debuginfo_unsym_each(g_svc, filter, on_row, on_entry, &s), 0);
	return s;
}

/* What ingest does for a pprof whose only unnamed frames are in one binary. */
static void ingest_one(const char *tenant, const char *service, const char *id, const char *file,
		       uint64_t profiles, uint64_t samples)
{
	int cls = debuginfo_unsym_class(g_svc, tenant, service, id, file);

	if (cls == DEBUGINFO_UNSYM_SKIP)
		return;
	if (cls >= 0)
		debuginfo_note_ingested_class(g_svc, tenant, service, cls, profiles, samples);
	debuginfo_note_ingested(g_svc, tenant, service, id, file, cls, profiles, samples);
}

static int setup(void **state)
{
	if (svc_setup(state))
		return -1;
	debuginfo__unsym_stop(g_svc);
	return 0;
}

/* Not uploaded, no upstream: not_found, then ok once uploaded. */
static void test_missing_then_uploaded(void **state)
{
	struct debuginfo_upload_result res;
	struct debuginfo_unsym_stats st;
	struct err_msg msg;
	struct seen s;

	(void)state;
	err_clear(&msg);
	ingest_one("t1", "api", g_id, "/usr/bin/prog", 2, 10);
	s = look("t1", "api", NULL);
	assert_int_equal(s.status, DEBUGINFO_STATUS_PENDING);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 0);

	debuginfo_unsym_check(g_svc);
	s = look("t1", "api", NULL);
	assert_int_equal(s.status, DEBUGINFO_STATUS_NOT_FOUND);
	assert_non_null(strstr(s.reason, "not uploaded"));
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 2);
	assert_int_equal(s.samples[DEBUGINFO_STATUS_NOT_FOUND], 10);
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.build_ids[DEBUGINFO_STATUS_NOT_FOUND], 1);

	/* Known now: counted at once, without a check. */
	ingest_one("t1", "api", g_id, "/usr/bin/prog", 1, 5);
	s = look("t1", "api", NULL);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 3);
	assert_int_equal(s.samples[DEBUGINFO_STATUS_NOT_FOUND], 15);

	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 0);
	debuginfo_unsym_check(g_svc);
	s = look("t1", "api", NULL);
	assert_int_equal(s.status, DEBUGINFO_STATUS_OK);
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.build_ids[DEBUGINFO_STATUS_NOT_FOUND], 0);
	/* Counters never go down, and named profiles add nothing. */
	ingest_one("t1", "api", g_id, "/usr/bin/prog", 4, 4);
	s = look("t1", "api", NULL);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 3);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_OK], 0);
}

/* An upload before the first answer: what waited is not counted. */
static void test_pending_dropped_when_ok(void **state)
{
	struct seen s;

	(void)state;
	ingest_one("t1", "web", g_id, "prog", 7, 70);
	debuginfo_unsym_check(g_svc);
	s = look("t1", "web", NULL);
	assert_int_equal(s.status, DEBUGINFO_STATUS_OK);
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT; i++)
		assert_int_equal(s.profiles[i], 0);
}

/* No build ID: judged at once; "[...]" and JIT code without one are left out. */
static void test_no_build_id(void **state)
{
	struct debuginfo_unsym_stats before, after;
	struct seen s;

	(void)state;
	debuginfo_unsym_stats(g_svc, &before);
	ingest_one("t2", "batch", "", "/opt/batch", 1, 3);
	ingest_one("t2", "batch", NULL, "[vdso]", 1, 3);
	ingest_one("t2", "batch", "", "[kernel.kallsyms]", 1, 3);
	ingest_one("t2", "batch", "", "/tmp/perf-4242.map", 1, 3); /* JIT: its perf map names it */
	s = look("t2", "batch", "t2");
	assert_int_equal(s.entries, 1);
	assert_int_equal(s.rows, 1);
	assert_int_equal(s.status, DEBUGINFO_STATUS_NO_BUILD_ID);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NO_BUILD_ID], 1);
	assert_int_equal(s.samples[DEBUGINFO_STATUS_NO_BUILD_ID], 3);
	/* Not hex: treated as having no build ID, never looked up. */
	ingest_one("t2", "batch", "zz", "/opt/other", 1, 1);
	s = look("t2", "batch", "t2");
	assert_int_equal(s.entries, 2);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NO_BUILD_ID], 2);
	debuginfo_unsym_check(g_svc);
	debuginfo_unsym_stats(g_svc, &after);
	assert_int_equal(after.build_ids[DEBUGINFO_STATUS_NO_BUILD_ID],
			 before.build_ids[DEBUGINFO_STATUS_NO_BUILD_ID] + 2);
	/* The tenant filter hides other tenants' rows and entries. */
	s = look("t1", "api", "t2");
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 0);
}

/* A kernel mapping that reports a build ID is judged like any binary. */
static void test_kernel_with_build_id(void **state)
{
	struct seen s;

	(void)state;
	ingest_one("t3", "k", g_id2, "[kernel.kallsyms]", 1, 1);
	debuginfo_unsym_check(g_svc);
	s = look("t3", "k", "t3");
	assert_int_equal(s.status, DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 1);
}

/* A kernel's build ID is named once its symbol map is uploaded. */
static void test_kernel_symbol_map(void **state)
{
	static const char kid[] = "5b6a9b0affb66c437abcd455d2738af879985fa9";
	struct debuginfo_upload_result res;
	struct err_msg msg;
	struct seen s;

	(void)state;
	ingest_one("t6", "k", kid, "[kernel.kallsyms]", 1, 1);
	debuginfo_unsym_check(g_svc);
	assert_int_equal(look("t6", "k", "t6").status, DEBUGINFO_STATUS_NOT_FOUND);
	t_write("kallsyms", "ffffffff81000000 T _text\nffffffff81000100 T vfs_write\n");
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("kallsyms"), kid, DEBUGINFO_FILE_KALLSYMS, &res, &msg), 0);
	debuginfo_unsym_check(g_svc);
	s = look("t6", "k", "t6");
	assert_int_equal(s.status, DEBUGINFO_STATUS_OK);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 1);
}

/* A failure recorded for the build ID (a stripped file) is its answer. */
static void test_recorded_failure(void **state)
{
	struct seen s;

	(void)state;
	debuginfo__meta_fail(g_svc, g_id2, DEBUGINFO_SOURCE_DEBUGINFOD, DEBUGINFO_STATUS_NO_SYMBOLS,
			     clock_wall_ns() + 3600LL * 1000000000LL, "no .debug_info");
	ingest_one("t4", "s", g_id2, "prog2", 1, 2);
	debuginfo_unsym_check(g_svc);
	s = look("t4", "s", "t4");
	assert_int_equal(s.status, DEBUGINFO_STATUS_NO_SYMBOLS);
	assert_string_equal(s.reason, "no .debug_info");
	assert_int_equal(s.samples[DEBUGINFO_STATUS_NO_SYMBOLS], 2);
}

/* Two binaries of one status in one pprof: the row counts the profile once. */
static void test_one_status_counts_once(void **state)
{
	static const char a[] = "0123456789abcdef01", b[] = "fedcba9876543210fe";
	struct seen s;
	int ca, cb;

	(void)state;
	ingest_one("t5", "svc", a, "liba.so", 1, 1);
	ingest_one("t5", "svc", b, "libb.so", 1, 1);
	debuginfo_unsym_check(g_svc);
	s = look("t5", "svc", "t5");
	/* What arrived before the answer is counted per binary. */
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 2);
	ca = debuginfo_unsym_class(g_svc, "t5", "svc", a, "liba.so");
	cb = debuginfo_unsym_class(g_svc, "t5", "svc", b, "libb.so");
	assert_int_equal(ca, DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(cb, DEBUGINFO_STATUS_NOT_FOUND);
	debuginfo_note_ingested_class(g_svc, "t5", "svc", ca, 2, 7);
	debuginfo_note_ingested(g_svc, "t5", "svc", a, "liba.so", ca, 2, 5);
	debuginfo_note_ingested(g_svc, "t5", "svc", b, "libb.so", cb, 2, 4);
	s = look("t5", "svc", "t5");
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 4);
	assert_int_equal(s.samples[DEBUGINFO_STATUS_NOT_FOUND], 9);
	assert_int_equal(debuginfo_unsym_class(g_svc, "t5", "svc", "", "[vdso]"), DEBUGINFO_UNSYM_SKIP);
	assert_int_equal(debuginfo_unsym_class(g_svc, "t5", "svc", "", "/tmp/perf-7.map"),
			 DEBUGINFO_UNSYM_SKIP);
	assert_int_equal(debuginfo_unsym_class(g_svc, "t5", "svc", "", "/bin/x"),
			 DEBUGINFO_STATUS_NO_BUILD_ID);
	assert_int_equal(debuginfo_unsym_class(g_svc, "t5", "svc", g_id, "prog"), DEBUGINFO_UNSYM_OWN);
}

/* Opens the store and service again as `o` says (o->data_dir is copied), checks stopped. */
static void reopen(struct debuginfo_options *o)
{
	struct store_options so = { 0 };
	struct err_msg msg;
	char dir[300];

	close_all();
	err_clear(&msg);
	snprintf(dir, sizeof(dir), "%s", o->data_dir);
	so.dir = dir;
	o->data_dir = dir;
	o->workers = 1;
	assert_int_equal(store_open(&so, &g_st, &msg), 0);
	assert_int_equal(debuginfo_open(g_st, o, &g_svc, &msg), 0);
	debuginfo__unsym_stop(g_svc);
}

/* The caps: entries, then rows; idle entries are forgotten. */
static void test_bounds(void **state)
{
	struct debuginfo_options o = { 0 };
	struct debuginfo_unsym_stats st;
	struct seen s;
	char name[32], id[32];

	(void)state;
	o.data_dir = t_path("data");
	o.max_unsym_entries = 3;
	reopen(&o);
	/* Five binaries waiting for an answer: three tracked, two not. */
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "svc%d", i);
		snprintf(id, sizeof(id), "0b0b0b0b0b0b0b%02d", i);
		ingest_one("t", name, id, "/bin/x", 2, 1);
	}
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.max_entries, 3);
	assert_int_equal(st.untracked_profiles, 4);
	s = look("", "", NULL);
	assert_int_equal(s.rows, 3);

	/* Without a build ID the status is known at once: the rows count it
	 * although the entries are full, svc3 and svc4 in the overflow row
	 * (there are as many rows as entries). */
	ingest_one("t", "svc3", "", "/bin/y", 1, 1);
	ingest_one("t", "svc4", "", "/bin/y", 1, 1);
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.untracked_profiles, 4);
	s = look("", "", NULL);
	assert_int_equal(s.rows, 4);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NO_BUILD_ID], 2);

	/* Forgotten when idle; their rows stay, new services overflow. */
	g_svc->unsym.idle_ns = 0;
	debuginfo_unsym_check(g_svc);
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.entries, 0);
	g_svc->unsym.idle_ns = DEBUGINFO__UNSYM_IDLE_NS;
	ingest_one("t", "late", "", "/bin/y", 1, 1);
	ingest_one("t", "svc0", "", "/bin/y", 1, 1);
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.entries, 2);
	s = look("", "", NULL);
	assert_int_equal(s.rows, 4);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NO_BUILD_ID], 3);
	s = look("t", "svc0", NULL);
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NO_BUILD_ID], 1);
	/* A tenant's view has no overflow row. */
	s = look("", "", "t");
	assert_int_equal(s.rows, 3);
}

static void wait_job(const char *id)
{
	for (int i = 0; i < 3000 && debuginfo__job_exists(g_svc, id); i++)
		usleep(10000);
	assert_false(debuginfo__job_exists(g_svc, id));
}

/*
 * With an upstream: a new build ID is looked up in the background; a 404
 * makes it not_found (counted, in the gauge); once its retry time passed
 * it is looked up again, its status standing meanwhile, and a file the
 * upstream now has makes it ok.
 */
static void test_upstream_lookup(void **state)
{
	struct debuginfo_options o = { 0 };
	struct debuginfo_unsym_stats st;
	struct debuginfo__meta m;
	char urls[64];
	struct seen s;

	(void)state;
	assert_int_equal(fake_start(&g_up), 0);
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%d", g_up.port);
	o.data_dir = t_path("data-up");
	o.debuginfod_urls = urls;
	o.fetch_per_minute = 600;
	o.fetch_timeout_s = 5;
	reopen(&o);
	atomic_store(&g_up.mode, FAKE_404);

	ingest_one("u", "svc", g_id, "prog", 1, 2);
	debuginfo_unsym_check(g_svc);
	assert_int_equal(look("u", "svc", "u").status, DEBUGINFO_STATUS_PENDING);
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.lookups, 1);
	wait_job(g_id);
	debuginfo_unsym_check(g_svc);
	s = look("u", "svc", "u");
	assert_int_equal(s.status, DEBUGINFO_STATUS_NOT_FOUND);
	assert_non_null(strstr(s.reason, "no debuginfod upstream has it"));
	assert_int_equal(s.profiles[DEBUGINFO_STATUS_NOT_FOUND], 1);
	assert_int_equal(s.samples[DEBUGINFO_STATUS_NOT_FOUND], 2);
	/* The not-found cache: no new lookup before the retry time. */
	debuginfo_unsym_check(g_svc);
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.lookups, 1);
	assert_int_equal(st.build_ids[DEBUGINFO_STATUS_NOT_FOUND], 1);

	snprintf(g_up.file, sizeof(g_up.file), "%s", t_path("prog.debug"));
	atomic_store(&g_up.mode, FAKE_FILE);
	assert_int_equal(debuginfo__meta_get(g_svc, g_id, &m), 0);
	m.retry_at = 0;
	assert_int_equal(debuginfo__meta_put(g_svc, g_id, &m), 0);
	/* The checks' share of the budget admits the lookup soon. */
	for (int i = 0; i < 500 && st.lookups < 2; i++) {
		usleep(10000);
		debuginfo_unsym_check(g_svc);
		debuginfo_unsym_stats(g_svc, &st);
		if (st.lookups < 2)
			continue;
		/* Looked up again: the known status stands meanwhile. */
		assert_int_equal(st.build_ids[DEBUGINFO_STATUS_NOT_FOUND], 1);
		assert_int_equal(look("u", "svc", "u").status, DEBUGINFO_STATUS_NOT_FOUND);
	}
	assert_int_equal(st.lookups, 2);
	wait_job(g_id);
	debuginfo_unsym_check(g_svc);
	assert_int_equal(look("u", "svc", "u").status, DEBUGINFO_STATUS_OK);
	debuginfo_unsym_stats(g_svc, &st);
	assert_int_equal(st.build_ids[DEBUGINFO_STATUS_NOT_FOUND], 0);
	fake_stop(&g_up);
}

/*
 * Per-tenant settings: a tenant whose symbolization is off is never
 * tracked; one without upstreams of its own is not_found with no lookup,
 * while the server's tenants still have theirs.
 */
static void test_tenant_settings(void **state)
{
	struct debuginfo_tenant_conf v[2] = { { "quiet", 0, 0, NULL, NULL },
					      { "bare", 1, 1, "", NULL } };
	struct debuginfo_unsym_stats before, after;
	struct err_msg msg;
	struct seen s;

	(void)state;
	err_clear(&msg);
	assert_int_equal(debuginfo_tenants_set(g_svc, 1, v, 2, &msg), 0);
	ingest_one("quiet", "svc", g_id2, "prog2", 1, 1);
	assert_int_equal(look("quiet", "svc", "quiet").entries, 0);

	debuginfo_unsym_stats(g_svc, &before);
	ingest_one("bare", "svc", g_id2, "prog2", 1, 3);
	debuginfo_unsym_check(g_svc);
	s = look("bare", "svc", "bare");
	assert_int_equal(s.status, DEBUGINFO_STATUS_NOT_FOUND);
	assert_non_null(strstr(s.reason, "this tenant has no debuginfod upstream"));
	assert_int_equal(s.samples[DEBUGINFO_STATUS_NOT_FOUND], 3);
	debuginfo_unsym_stats(g_svc, &after);
	assert_int_equal(after.lookups, before.lookups);
	assert_int_equal(look("quiet", "svc", "quiet").entries, 0);
	assert_int_equal(debuginfo_tenants_set(g_svc, 1, NULL, 0, &msg), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_then_uploaded),
		cmocka_unit_test(test_pending_dropped_when_ok),
		cmocka_unit_test(test_no_build_id),
		cmocka_unit_test(test_kernel_with_build_id),
		cmocka_unit_test(test_kernel_symbol_map),
		cmocka_unit_test(test_recorded_failure),
		cmocka_unit_test(test_one_status_counts_once),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_upstream_lookup),
		cmocka_unit_test(test_tenant_settings),
	};

	/* Bound before the first thread, as upstream.h asks. */
	if (fake_listen(&g_up))
		return 1;
	return cmocka_run_group_tests(tests, setup, svc_teardown);
}
