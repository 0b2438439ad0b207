/*
 * test_perfmap.c - perf maps through a real service and store
 * (debuginfo/perfmap.c): a map names the addresses it covers (callers at
 * addr - 1), only for its tenant and process; without one nothing is named
 * and the reason says which process; a new upload replaces the map and
 * moves the generation; a refused map stores nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "debuginfo/debuginfo.h"
#include "storage/storage.h"
#include "tests/symbolize/symtest.h"

static struct store *g_st;
static struct debuginfo *g_svc;

struct got {
	char names[8][64];
	int named[8];
	size_t calls;
};

static int on_frames(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	struct got *g = ctx;

	(void)vaddr;
	g->calls++;
	g->named[i] = (int)n;
	if (n)
		snprintf(g->names[i], sizeof(g->names[i]), "%s", f[0].function);
	return 0;
}

static enum debuginfo_status resolve(const char *tenant, uint32_t pid,
				     const struct debuginfo_addr_req *r, size_t n, struct got *g,
				     char *reason, size_t rlen)
{
	enum debuginfo_status st = DEBUGINFO_STATUS_PENDING;

	memset(g, 0, sizeof(*g));
	assert_int_equal(debuginfo_perfmap_resolve(g_svc, tenant, pid, r, n, on_frames, g, &st,
						   reason, rlen),
			 0);
	return st;
}

static void test_put_and_resolve(void **state)
{
	static const char map[] = "1000 100 JS:*hot a.js:1:1\n1100 10 JS:~cold a.js:9:1\n";
	const struct debuginfo_addr_req r[] = {
		{ 0x1000, 1 }, { 0x1100, 1 }, { 0x1100, 0 }, { 0x1110, 1 }, { 0xfff, 1 },
	};
	struct err_msg msg;
	struct got g;
	char reason[256];
	size_t entries = 0;
	uint64_t gen;

	(void)state;
	err_clear(&msg);
	/* No map yet: nothing named, the reason names the process. */
	assert_int_equal(resolve("t1", 42, r, 5, &g, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(g.calls, 0);
	assert_non_null(strstr(reason, "no perf map for process 42"));

	gen = debuginfo_generation(g_svc);
	assert_int_equal(debuginfo_perfmap_put(g_svc, "t1", 42, map, strlen(map), &entries, &msg),
			 0);
	assert_int_equal(entries, 2);
	assert_true(debuginfo_generation(g_svc) > gen);
	assert_int_equal(resolve("t1", 42, r, 5, &g, reason, sizeof(reason)), DEBUGINFO_STATUS_OK);
	assert_int_equal(g.calls, 5);
	assert_string_equal(g.names[0], "JS:*hot a.js:1:1");
	assert_string_equal(g.names[1], "JS:~cold a.js:9:1");
	/* A caller at 0x1100 returns into the call that ends there: hot. */
	assert_string_equal(g.names[2], "JS:*hot a.js:1:1");
	assert_int_equal(g.named[3], 0);
	assert_int_equal(g.named[4], 0);

	/* Another tenant, another process: not theirs. */
	assert_int_equal(resolve("t2", 42, r, 5, &g, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(resolve("t1", 43, r, 5, &g, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(resolve(NULL, 42, r, 5, &g, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);

	/* A refused map leaves the stored one as it was. */
	gen = debuginfo_generation(g_svc);
	assert_int_equal(debuginfo_perfmap_put(g_svc, "t1", 42, "1000 1 x\nzz", 11, &entries, &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "line 2"));
	assert_int_equal(debuginfo_generation(g_svc), gen);
	assert_int_equal(debuginfo_perfmap_put(g_svc, "t1", 0, map, strlen(map), &entries, &msg),
			 ERR_INVALID);
	assert_int_equal(resolve("t1", 42, r, 1, &g, reason, sizeof(reason)), DEBUGINFO_STATUS_OK);
	assert_string_equal(g.names[0], "JS:*hot a.js:1:1");

	/* The latest upload wins. */
	err_clear(&msg);
	assert_int_equal(debuginfo_perfmap_put(g_svc, "t1", 42, "1000 8 newer\n", 13, &entries,
					       &msg),
			 0);
	assert_int_equal(resolve("t1", 42, r, 2, &g, reason, sizeof(reason)), DEBUGINFO_STATUS_OK);
	assert_string_equal(g.names[0], "newer");
	assert_int_equal(g.named[1], 0);
}

static int setup(void **state)
{
	struct store_options so = { 0 };
	struct debuginfo_options o = { 0 };
	struct err_msg msg;

	(void)state;
	err_clear(&msg);
	t_mkdtemp();
	so.dir = t_path("data");
	if (store_open(&so, &g_st, &msg))
		return -1;
	o.data_dir = t_path("data");
	o.workers = 1;
	return debuginfo_open(g_st, &o, &g_svc, &msg) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	debuginfo_close(g_svc);
	store_close(g_st);
	t_rmdir();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_put_and_resolve) };

	return cmocka_run_group_tests(tests, setup, teardown);
}
