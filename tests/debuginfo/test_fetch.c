/*
 * test_fetch.c - fetches from upstream into the store (fetch.c) through a
 * real service and a fake debuginfod on loopback: not found, an upstream
 * that hangs, files that cannot serve as debug info (not an ELF, a stripped
 * binary), and a good .debug file stored and then resolved from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/clock.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"
#include "tests/symbolize/fixtures.h"
#include "tests/symbolize/symtest.h"
#include "upstream.h"

static struct fake_upstream g_up;
static struct debuginfo_options g_opt;
static char g_urls[64], g_data[300];
static struct store *g_st;
static struct debuginfo *g_s;
static char g_id[DEBUGINFO_HEX_MAX];
static uint8_t g_bid[SYM_BUILD_ID_MAX];
static size_t g_blen;

static int setup(void **state)
{
	struct store_options so = { 0 };
	struct sym_elf_info info;
	struct err_msg msg;

	(void)state;
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	if (t_run("cd '%s' && gcc -g -O2 -Wl,--build-id -o prog prog.c && "
		  "objcopy --only-keep-debug prog prog.debug && cp prog prog.stripped && "
		  "strip --strip-all prog.stripped", t_dir) ||
	    sym_elf_inspect_file(t_path("prog"), &info, NULL) || !info.build_id_len)
		return -1;
	memcpy(g_bid, info.build_id, info.build_id_len);
	g_blen = info.build_id_len;
	sym_build_id_hex(g_bid, g_blen, g_id);
	err_clear(&msg);
	so.dir = t_path("store");
	if (fake_start(&g_up) || store_open(&so, &g_st, &msg) ||
	    debuginfo_open(g_st, &g_opt, &g_s, &msg)) {
		fprintf(stderr, "%s\n", msg.text);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	debuginfo_close(g_s);
	store_close(g_st);
	fake_stop(&g_up);
	return 0;
}

static void serve(enum fake_mode mode, const char *file)
{
	atomic_store(&g_up.mode, mode);
	if (file)
		snprintf(g_up.file, sizeof(g_up.file), "%s", t_path(file));
}

static struct debuginfo__meta meta_of(const char *id)
{
	struct debuginfo__meta m;

	assert_int_equal(debuginfo__meta_get(g_s, id, &m), 0);
	return m;
}

static void test_not_found_and_errors(void **state)
{
	struct debuginfo__meta m;
	int64_t now = clock_wall_ns();

	(void)state;
	serve(FAKE_404, NULL);
	assert_int_equal(debuginfo__fetch(g_s, "0a0b", (const uint8_t *)"\x0a\x0b", 2),
			 ERR_NOT_FOUND);
	m = meta_of("0a0b");
	assert_int_equal(m.status, DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(m.source, DEBUGINFO_SOURCE_DEBUGINFOD);
	assert_true(m.retry_at > now);
	assert_int_equal(atomic_load(&g_s->fetches_not_found), 1);

	/* An upstream that never answers: an upstream error past the fetch timeout. */
	serve(FAKE_HANG, NULL);
	assert_int_equal(debuginfo__fetch(g_s, "0c0d", (const uint8_t *)"\x0c\x0d", 2),
			 ERR_TIMEOUT);
	m = meta_of("0c0d");
	assert_int_equal(m.status, DEBUGINFO_STATUS_UPSTREAM_ERROR);
	assert_non_null(strstr(m.reason, "timed out"));
	assert_int_equal(atomic_load(&g_s->fetches_error), 1);
}

static void test_unusable_files(void **state)
{
	struct debuginfo__meta m;
	char dst[DEBUGINFO__PATH_MAX];

	(void)state;
	serve(FAKE_FILE, "prog.c");
	assert_int_equal(debuginfo__fetch(g_s, g_id, g_bid, g_blen), ERR_INVALID);
	m = meta_of(g_id);
	assert_int_equal(m.status, DEBUGINFO_STATUS_INVALID_ELF);
	assert_non_null(strstr(m.reason, "debuginfod served an unusable file"));
	/* libdebuginfod caches what it got: the next files need their own IDs. */
	assert_int_equal(debuginfo__path(g_s, g_id, "debuginfo", dst, sizeof(dst)), 0);
	assert_false(debuginfo__file_exists(dst));
	assert_int_equal(atomic_load(&g_s->fetches_ok), 1);
}

/* A stripped binary served as "debuginfo": refused, it has no DWARF. */
static void test_stripped_binary(void **state)
{
	struct sym_elf_info info;
	char id[DEBUGINFO_HEX_MAX];
	struct debuginfo__meta m;

	(void)state;
	assert_int_equal(t_run("cd '%s' && gcc -O2 -Wl,--build-id -o other prog.c && "
			       "strip other", t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("other"), &info, NULL), 0);
	sym_build_id_hex(info.build_id, info.build_id_len, id);
	serve(FAKE_FILE, "other");
	assert_int_equal(debuginfo__fetch(g_s, id, info.build_id, info.build_id_len), ERR_INVALID);
	m = meta_of(id);
	assert_int_equal(m.status, DEBUGINFO_STATUS_NO_SYMBOLS);
	assert_non_null(strstr(m.reason, "no .debug_info"));
}

static int count(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	(void)i;
	(void)vaddr;
	(void)f;
	*(size_t *)ctx += n;
	return 0;
}

/* Nobody uploaded prog: a query fetches its .debug, and names its frames. */
static void test_fetched_and_resolved(void **state)
{
	struct debuginfo_mapping_ref map = { 0, 0, 0, 1 };
	struct debuginfo_addr_req req;
	enum debuginfo_status st;
	struct sym_elf_info info;
	char reason[256], id[DEBUGINFO_HEX_MAX];
	size_t frames = 0;
	uint64_t *a;
	size_t n;

	(void)state;
	/* Another build: what was served for prog is in libdebuginfod's cache. */
	assert_int_equal(t_run("cd '%s' && gcc -g -O1 -Wl,--build-id -o third prog.c && "
			       "objcopy --only-keep-debug third third.debug", t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("third"), &info, NULL), 0);
	sym_build_id_hex(info.build_id, info.build_id_len, id);
	serve(FAKE_FILE, "third.debug");
	n = t_func_addresses(t_path("third"), &a);
	assert_true(n > 0);
	req.addr = a[0];
	req.leaf = 1;
	assert_int_equal(debuginfo_resolve(g_s, id, &map, &req, 1,
					   clock_mono_ns() + 60000000000LL, count, &frames, &st,
					   reason, sizeof(reason)), 0);
	assert_int_equal(st, DEBUGINFO_STATUS_OK);
	assert_true(frames > 0);
	assert_int_equal(meta_of(id).source, DEBUGINFO_SOURCE_DEBUGINFOD);
	assert_int_equal(meta_of(id).kinds, 1u << DEBUGINFO_FILE_DEBUGINFO);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_found_and_errors),
		cmocka_unit_test(test_unusable_files),
		cmocka_unit_test(test_stripped_binary),
		cmocka_unit_test(test_fetched_and_resolved),
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
	g_opt.fetch_timeout_s = 1;
	g_opt.workers = 1;
	err_clear(&msg);
	if (debuginfo_setenv(&g_opt, &msg)) {
		fprintf(stderr, "%s\n", msg.text);
		return 1;
	}
	rc = cmocka_run_group_tests(tests, setup, teardown);
	t_rmdir();
	return rc;
}
