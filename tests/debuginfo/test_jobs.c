/*
 * test_jobs.c - the background jobs (jobs.c) of a service over a real
 * store: a wait that returns when the job is done, one job for many
 * waiters, a wait past its deadline while the job goes on, and a close
 * with jobs still queued.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/clock.h"
#include "fetchtest.h"

static struct store *g_st;
static char g_id[DEBUGINFO_HEX_MAX];

static struct debuginfo *open_service(const char *data, int workers)
{
	struct debuginfo_options o = { 0 };
	struct debuginfo *s = NULL;
	struct err_msg msg;

	err_clear(&msg);
	o.data_dir = data;
	o.workers = workers;
	assert_int_equal(debuginfo_open(g_st, &o, &s, &msg), 0);
	return s;
}

/* Stores prog as the debuginfo of its build ID, as an upload would. */
static void store_debuginfo(struct debuginfo *s, const char *prog)
{
	char dir[DEBUGINFO__PATH_MAX], dst[DEBUGINFO__PATH_MAX];

	assert_int_equal(debuginfo__path(s, g_id, NULL, dir, sizeof(dir)), 0);
	assert_int_equal(debuginfo__path(s, g_id, "debuginfo", dst, sizeof(dst)), 0);
	assert_int_equal(debuginfo__mkdir_p(dir), 0);
	assert_int_equal(debuginfo__install_copy(prog, dst, NULL), 0);
}

static int setup(void **state)
{
	struct store_options so = { 0 };
	struct sym_elf_info info;
	struct err_msg msg;

	(void)state;
	t_mkdtemp();
	t_write("p.c", "int main(void) { return 0; }\n");
	if (t_run("cd '%s' && gcc -g -Wl,--build-id -o p p.c", t_dir) ||
	    ft_build_id("p", &info, g_id))
		return -1;
	err_clear(&msg);
	so.dir = t_path("store");
	return store_open(&so, &g_st, &msg);
}

static int teardown(void **state)
{
	(void)state;
	store_close(g_st);
	t_rmdir();
	return 0;
}

static void test_await_done(void **state)
{
	struct debuginfo *s = open_service(t_path("data1"), 2);
	char idx[DEBUGINFO__PATH_MAX];

	(void)state;
	store_debuginfo(s, t_path("p"));
	assert_int_equal(debuginfo__job_await(s, g_id, clock_mono_ns() + 60000000000LL), 0);
	assert_int_equal(debuginfo__path(s, g_id, "index", idx, sizeof(idx)), 0);
	assert_true(debuginfo__file_exists(idx));
	assert_int_equal(atomic_load(&s->index_builds), 1);
	/* The index exists: a second job has nothing to do. */
	assert_int_equal(debuginfo__job_await(s, g_id, clock_mono_ns() + 60000000000LL), 0);
	assert_int_equal(atomic_load(&s->index_builds), 1);
	/* Nothing stored and no upstream: the job ends at once, with no index. */
	assert_int_equal(debuginfo__job_await(s, "abcdef", clock_mono_ns() + 60000000000LL), 0);
	assert_int_equal(debuginfo__path(s, "abcdef", "index", idx, sizeof(idx)), 0);
	assert_false(debuginfo__file_exists(idx));
	debuginfo_close(s);
}

/* A deadline already past: the wait says pending, and the job still runs. */
static void test_await_past_deadline(void **state)
{
	struct debuginfo *s = open_service(t_path("data2"), 1);
	char idx[DEBUGINFO__PATH_MAX];

	(void)state;
	store_debuginfo(s, t_path("p"));
	/* Still queued or running: the waiter holds the queue's lock until it
	 * has looked, so the job cannot have finished. */
	assert_int_equal(debuginfo__job_await(s, g_id, clock_mono_ns() - 1), ERR_TIMEOUT);
	assert_int_equal(debuginfo__job_await(s, g_id, clock_mono_ns() + 60000000000LL), 0);
	assert_int_equal(debuginfo__path(s, g_id, "index", idx, sizeof(idx)), 0);
	assert_true(debuginfo__file_exists(idx));
	assert_int_equal(atomic_load(&s->index_builds), 1);
	debuginfo_close(s);
}

/* Many build IDs queued behind one worker, then a close: nothing leaks or hangs. */
static void test_close_with_queue(void **state)
{
	struct debuginfo *s = open_service(t_path("data3"), 1);
	char id[16];

	(void)state;
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof(id), "%08x", i);
		assert_int_equal(debuginfo__job_await(s, id, clock_mono_ns() - 1), ERR_TIMEOUT);
	}
	debuginfo_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_await_done),
		cmocka_unit_test(test_await_past_deadline),
		cmocka_unit_test(test_close_with_queue),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
