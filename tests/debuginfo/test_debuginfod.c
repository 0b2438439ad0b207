/*
 * test_debuginfod.c - the debuginfod client (debuginfod.c) against a fake
 * upstream on loopback: the environment debuginfo_setenv sets before any
 * thread and the check debuginfo_open makes of it, a file found and then
 * served from libdebuginfod's cache, not found, and a transfer stopped by
 * the deadline or by the service's cancel flag.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "tests/symbolize/symtest.h"
#include "upstream.h"

static struct fake_upstream g_up;
static struct debuginfo_options g_opt;
static char g_urls[64], g_data[300];

static int setup(void **state)
{
	(void)state;
	return fake_start(&g_up);
}

static int teardown(void **state)
{
	(void)state;
	fake_stop(&g_up);
	return 0;
}

static void test_environment(void **state)
{
	struct debuginfo_options other = g_opt, none = { 0 };
	char cache[400];
	struct err_msg msg;

	(void)state;
	snprintf(cache, sizeof(cache), "%s/debuginfod-cache", g_data);
	assert_string_equal(getenv("DEBUGINFOD_URLS"), g_urls);
	assert_string_equal(getenv("DEBUGINFOD_CACHE_PATH"), cache);
	assert_string_equal(getenv("DEBUGINFOD_TIMEOUT"), "5");
	assert_int_equal(access(cache, W_OK), 0);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_env_check(&g_opt, &msg), 0);
	/* Set already: nothing to change (so this is safe with threads running). */
	assert_int_equal(debuginfo_setenv(&g_opt, &msg), 0);
	/* Options the environment was not set for are refused by the check. */
	other.debuginfod_urls = "http://elsewhere:1";
	assert_int_equal(debuginfo__debuginfod_env_check(&other, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "debuginfo_setenv"));
	other = g_opt;
	other.fetch_timeout_s = 9;
	assert_int_equal(debuginfo__debuginfod_env_check(&other, &msg), ERR_INVALID);
	/* Without upstreams there is nothing to set. */
	assert_int_equal(debuginfo_setenv(&none, &msg), 0);
	none.debuginfod_urls = "http://x:1";
	err_clear(&msg);
	assert_int_equal(debuginfo_setenv(&none, &msg), ERR_INVALID);
}

static void test_found_then_cached(void **state)
{
	struct err_msg msg;
	char *path = NULL;
	int before;

	(void)state;
	t_write("served", "the bytes upstream");
	snprintf(g_up.file, sizeof(g_up.file), "%s", t_path("served"));
	atomic_store(&g_up.mode, FAKE_FILE);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch("a1b2", 0, clock_mono_ns() + 10000000000LL,
						     NULL, &path, &msg), 0);
	assert_non_null(path);
	assert_int_equal(t_run("cmp -s '%s' '%s'", path, t_path("served")), 0);
	free(path);
	before = atomic_load(&g_up.requests);
	assert_int_equal(debuginfo__debuginfod_fetch("a1b2", 0, clock_mono_ns() + 10000000000LL,
						     NULL, &path, &msg), 0);
	free(path);
	assert_int_equal(atomic_load(&g_up.requests), before);
}

static void test_not_found(void **state)
{
	struct err_msg msg;
	char *path = NULL;

	(void)state;
	atomic_store(&g_up.mode, FAKE_404);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch("c3d4", 0, clock_mono_ns() + 10000000000LL,
						     NULL, &path, &msg), ERR_NOT_FOUND);
	assert_null(path);
	assert_non_null(strstr(msg.text, "debug info for c3d4"));
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch("c3d5", 1, clock_mono_ns() + 10000000000LL,
						     NULL, &path, &msg), ERR_NOT_FOUND);
	assert_non_null(strstr(msg.text, "an executable for c3d5"));
}

static void test_deadline(void **state)
{
	struct err_msg msg;
	char *path = NULL;
	int64_t t0 = clock_mono_ns();

	(void)state;
	atomic_store(&g_up.mode, FAKE_HANG);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch("e5f6", 0, t0 + 300000000LL, NULL, &path,
						     &msg), ERR_TIMEOUT);
	assert_non_null(strstr(msg.text, "timed out"));
	/* Well before the 5 s DEBUGINFOD_TIMEOUT: our deadline stopped it. */
	assert_true(clock_mono_ns() - t0 < 4000000000LL);
}

struct canceller {
	atomic_int *flag;
};

static void *cancel_soon(void *arg)
{
	struct canceller *c = arg;
	struct timespec ts = { 0, 200000000 };

	nanosleep(&ts, NULL);
	atomic_store(c->flag, 1);
	return NULL;
}

static void test_cancel(void **state)
{
	atomic_int flag = 0;
	struct canceller c = { &flag };
	struct err_msg msg;
	pthread_t t;
	char *path = NULL;
	int64_t t0 = clock_mono_ns();

	(void)state;
	atomic_store(&g_up.mode, FAKE_HANG);
	assert_int_equal(pthread_create(&t, NULL, cancel_soon, &c), 0);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch("a7b8", 0, t0 + 60000000000LL, &flag, &path,
						     &msg), ERR_TIMEOUT);
	pthread_join(t, NULL);
	assert_true(clock_mono_ns() - t0 < 4000000000LL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_found_then_cached),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_cancel),
	};
	struct err_msg msg;
	int rc;

	/* Before any thread: the environment, then the server's socket. */
	t_mkdtemp();
	if (fake_listen(&g_up))
		return 1;
	snprintf(g_urls, sizeof(g_urls), "http://127.0.0.1:%d", g_up.port);
	snprintf(g_data, sizeof(g_data), "%s", t_path("data"));
	g_opt.data_dir = g_data;
	g_opt.debuginfod_urls = g_urls;
	g_opt.fetch_timeout_s = 5;
	err_clear(&msg);
	if (debuginfo_setenv(&g_opt, &msg)) {
		fprintf(stderr, "%s\n", msg.text);
		return 1;
	}
	rc = cmocka_run_group_tests(tests, setup, teardown);
	t_rmdir();
	return rc;
}
