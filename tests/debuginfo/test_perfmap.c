/*
 * test_perfmap.c - perf maps through a real service and store
 * (debuginfo/perfmap.c): a map names the addresses it covers (callers at
 * addr - 1), only for its tenant and process; without one nothing is named
 * and the reason says which process; a new upload replaces the map and
 * moves the generation; a refused map stores nothing.  Bounds: past the
 * per-tenant cap the least recently uploaded map goes (in the same write),
 * a map not uploaded for the retention period is deleted by the expiry
 * pass, both counted; maps stored before the index are indexed (or
 * expired) by the first pass of a process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/perfmap.h"
#include "base/varint.h"
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
	assert_int_equal(debuginfo_perfmap_put(g_svc, "t1", 42, map, strlen(map), 0, &entries, &msg),
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
	assert_int_equal(debuginfo_perfmap_put(g_svc, "t1", 42, "1000 1 x\nzz", 11, 0, &entries, &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "line 2"));
	assert_int_equal(debuginfo_generation(g_svc), gen);
	assert_int_equal(debuginfo_perfmap_put(g_svc, "t1", 0, map, strlen(map), 0, &entries, &msg),
			 ERR_INVALID);
	assert_int_equal(resolve("t1", 42, r, 1, &g, reason, sizeof(reason)), DEBUGINFO_STATUS_OK);
	assert_string_equal(g.names[0], "JS:*hot a.js:1:1");

	/* The latest upload wins. */
	err_clear(&msg);
	assert_int_equal(debuginfo_perfmap_put(g_svc, "t1", 42, "1000 8 newer\n", 13, 0, &entries,
					       &msg),
			 0);
	assert_int_equal(resolve("t1", 42, r, 2, &g, reason, sizeof(reason)), DEBUGINFO_STATUS_OK);
	assert_string_equal(g.names[0], "newer");
	assert_int_equal(g.named[1], 0);
}

#define DAY (86400LL * 1000000000LL)

/* The service again over the same data, with these perf map bounds. */
static void reopen(size_t max, int64_t retention_ns)
{
	struct store_options so = { 0 };
	struct debuginfo_options o = { 0 };
	struct err_msg msg;

	err_clear(&msg);
	debuginfo_close(g_svc);
	store_close(g_st);
	so.dir = t_path("data");
	assert_int_equal(store_open(&so, &g_st, &msg), 0);
	o.data_dir = t_path("data");
	o.workers = 1;
	o.retain_interval_ns = 1000 * DAY; /* the test runs the passes itself */
	o.perfmap_max = max;
	o.perfmap_retention_ns = retention_ns;
	assert_int_equal(debuginfo_open(g_st, &o, &g_svc, &msg), 0);
}

/* Stores a one-entry map; max: the tenant's cap for this upload (0: the service's). */
static void put_max(const char *tenant, uint32_t pid, const char *name, size_t max)
{
	struct err_msg msg;
	char map[64];
	size_t entries = 0;

	err_clear(&msg);
	snprintf(map, sizeof(map), "1000 100 %s\n", name);
	assert_int_equal(debuginfo_perfmap_put(g_svc, tenant, pid, map, strlen(map), max, &entries,
					       &msg),
			 0);
	assert_int_equal(entries, 1);
}

static void put(const char *tenant, uint32_t pid, const char *name)
{
	put_max(tenant, pid, name, 0);
}

/* The name the stored map of (tenant, pid) gives 0x1000, or "" without one. */
static const char *name_of(const char *tenant, uint32_t pid)
{
	static struct got g;
	static const struct debuginfo_addr_req r = { 0x1000, 1 };
	char reason[256];

	if (resolve(tenant, pid, &r, 1, &g, reason, sizeof(reason)) != DEBUGINFO_STATUS_OK) {
		assert_non_null(strstr(reason, "no perf map for process"));
		return "";
	}
	return g.names[0];
}

static uint64_t evicted(void)
{
	struct debuginfo_stats st;

	debuginfo_stats(g_svc, &st);
	return st.perfmaps_evicted;
}

static void test_cap_evicts_oldest(void **state)
{
	(void)state;
	reopen(3, 0);
	put("cap", 1, "one");
	put("cap", 2, "two");
	put("cap", 3, "three");
	assert_int_equal(evicted(), 0);
	/* A fourth process: the least recently uploaded (1) goes. */
	put("cap", 4, "four");
	assert_int_equal(evicted(), 1);
	assert_string_equal(name_of("cap", 1), "");
	assert_string_equal(name_of("cap", 2), "two");
	assert_string_equal(name_of("cap", 4), "four");
	/* Uploading again replaces, takes no room, and makes 2 the newest. */
	put("cap", 2, "two again");
	assert_int_equal(evicted(), 1);
	assert_string_equal(name_of("cap", 2), "two again");
	put("cap", 5, "five");
	assert_int_equal(evicted(), 2);
	assert_string_equal(name_of("cap", 3), "");
	assert_string_equal(name_of("cap", 2), "two again");
	assert_string_equal(name_of("cap", 4), "four");
	assert_string_equal(name_of("cap", 5), "five");
	/* A cap given with the upload (the tenant's max_perfmaps) wins. */
	put_max("cap", 6, "six", 4);
	assert_int_equal(evicted(), 2);
	put_max("cap", 7, "seven", 4);
	assert_int_equal(evicted(), 3);
	assert_string_equal(name_of("cap", 4), "");
	assert_string_equal(name_of("cap", 6), "six");
	put("cap", 8, "eight"); /* back to 3: one goes per upload (4 stay) */
	assert_int_equal(evicted(), 4);
	assert_string_equal(name_of("cap", 2), "");
	/* The cap is per tenant: another tenant's maps take nothing here. */
	put("cap-other", 1, "o1");
	put("cap-other", 2, "o2");
	put(NULL, 1, "none");
	assert_int_equal(evicted(), 4);
	assert_string_equal(name_of("cap", 5), "five");
	assert_string_equal(name_of("cap-other", 1), "o1");
	assert_string_equal(name_of(NULL, 1), "none");
}

static void test_expiry(void **state)
{
	struct debuginfo_stats st;
	struct err_msg msg;
	uint64_t n = 0;
	int64_t now;

	(void)state;
	err_clear(&msg);
	reopen(0, DAY);
	put("exp", 7, "seven");
	now = clock_wall_ns();
	/* Uploaded just now: kept. */
	assert_int_equal(debuginfo_perfmap_expire(g_svc, now + DAY / 2, &n, &msg), 0);
	assert_int_equal(n, 0);
	assert_string_equal(name_of("exp", 7), "seven");
	/* Past the retention, since its upload: every map goes, counted. */
	assert_int_equal(debuginfo_perfmap_expire(g_svc, now + 2 * DAY, &n, &msg), 0);
	assert_true(n >= 1);
	debuginfo_stats(g_svc, &st);
	assert_int_equal(st.perfmaps_expired, n);
	assert_string_equal(name_of("exp", 7), "");
	assert_string_equal(name_of("cap", 5), "");
	/* Nothing is left to delete, and uploading again works. */
	assert_int_equal(debuginfo_perfmap_expire(g_svc, now + 2 * DAY, &n, &msg), 0);
	debuginfo_stats(g_svc, &st);
	assert_int_equal(st.perfmaps_expired, n);
	put("exp", 7, "seven again");
	assert_string_equal(name_of("exp", 7), "seven again");
}

/* A map uploaded at uploaded_ns: as stored before the index (the map key
 * only), or `indexed` as now (0xFF key NUL be32(pid) -> be64(uploaded_ns)). */
static void put_legacy(const char *tenant, uint32_t pid, int64_t uploaded_ns, int indexed)
{
	struct err_msg msg;
	struct perfmap m;
	struct buf val;
	struct store_kv kv;
	uint8_t key[64], idx[65], ts[8];
	size_t tl = strlen(tenant);

	err_clear(&msg);
	assert_int_equal(perfmap_parse("1000 100 legacy\n", 16, &m, &msg), 0);
	buf_init(&val, 1024);
	assert_int_equal(perfmap_encode(&m, uploaded_ns, &val), 0);
	memcpy(key, tenant, tl + 1);
	be32_put(key + tl + 1, pid);
	kv = (struct store_kv){ .key = key, .klen = tl + 5, .val = val.data, .vlen = val.len };
	assert_int_equal(store_aux_write(g_st, STORE_AUX_PERFMAP, &kv, 1, &msg), 0);
	if (indexed) {
		idx[0] = 0xFF;
		memcpy(idx + 1, key, tl + 5);
		be64_put(ts, (uint64_t)uploaded_ns);
		kv = (struct store_kv){ .key = idx, .klen = tl + 6, .val = ts, .vlen = 8 };
		assert_int_equal(store_aux_write(g_st, STORE_AUX_PERFMAP, &kv, 1, &msg), 0);
	}
	buf_release(&val);
	perfmap_release(&m);
}

static void test_legacy_maps(void **state)
{
	struct err_msg msg;
	uint64_t n = 0;
	int64_t now = clock_wall_ns();

	(void)state;
	err_clear(&msg);
	reopen(2, DAY);
	put_legacy("old", 1, now - 2 * DAY, 0);
	put_legacy("old", 2, now, 0);
	/* An indexed map, expired: deleted once, counted once. */
	put_legacy("old", 9, now - 2 * DAY, 1);
	assert_string_equal(name_of("old", 1), "legacy");
	/* The first pass reads the maps themselves: 1 expired, 2 indexed. */
	assert_int_equal(debuginfo_perfmap_expire(g_svc, now, &n, &msg), 0);
	assert_int_equal(n, 2);
	assert_string_equal(name_of("old", 9), "");
	assert_string_equal(name_of("old", 1), "");
	assert_string_equal(name_of("old", 2), "legacy");
	/* Indexed: it counts toward the cap (2), and goes first when full. */
	put("old", 3, "three");
	assert_int_equal(evicted(), 0);
	put("old", 4, "four");
	assert_int_equal(evicted(), 1);
	assert_string_equal(name_of("old", 2), "");
	assert_string_equal(name_of("old", 3), "three");
	/* Later passes read only the index, and expire by it. */
	n = 0;
	assert_int_equal(debuginfo_perfmap_expire(g_svc, now + 2 * DAY, &n, &msg), 0);
	assert_int_equal(n, 3);
	assert_string_equal(name_of("old", 4), "");
}

static void test_tenant_ff_refused(void **state)
{
	struct err_msg msg;
	size_t entries;

	(void)state;
	err_clear(&msg);
	assert_int_equal(debuginfo_perfmap_put(g_svc, "\xff", 1, "1000 1 x\n", 9, 0, &entries, &msg),
			 ERR_INVALID);
	assert_string_equal(name_of("\xff", 1), "");
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
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_and_resolve), cmocka_unit_test(test_cap_evicts_oldest),
		cmocka_unit_test(test_expiry),           cmocka_unit_test(test_legacy_maps),
		cmocka_unit_test(test_tenant_ff_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
