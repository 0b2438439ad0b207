/*
 * test_build.c - index builds (build.c) of stored debug files compiled
 * here: a good file, a file that is not an ELF, a file of another build,
 * no file at all, and a DWZ'd debug file whose alt file is missing, then
 * stored by build ID.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fetchtest.h"

static struct store *g_st;
static struct debuginfo *g_s;

static void id_of(const char *name, char *hex, uint8_t *bid, size_t *blen)
{
	struct sym_elf_info info;

	assert_int_equal(ft_build_id(name, &info, hex), 0);
	memcpy(bid, info.build_id, info.build_id_len);
	*blen = info.build_id_len;
}

static void store_as(const char *id, const char *kind, const char *file)
{
	char dir[DEBUGINFO__PATH_MAX], dst[DEBUGINFO__PATH_MAX];

	assert_int_equal(debuginfo__path(g_s, id, NULL, dir, sizeof(dir)), 0);
	assert_int_equal(debuginfo__path(g_s, id, kind, dst, sizeof(dst)), 0);
	assert_int_equal(debuginfo__mkdir_p(dir), 0);
	assert_int_equal(debuginfo__install_copy(file, dst, NULL), 0);
}

static int has_index(const char *id)
{
	char idx[DEBUGINFO__PATH_MAX];

	return !debuginfo__path(g_s, id, "index", idx, sizeof(idx)) && debuginfo__file_exists(idx);
}

static int setup(void **state)
{
	struct debuginfo_options o = { 0 };

	(void)state;
	t_mkdtemp();
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	if (t_run("cd '%s' && gcc -g -O2 -Wl,--build-id -o a prog.c && "
		  "gcc -g -O1 -Wl,--build-id -o b prog.c && "
		  "objcopy --only-keep-debug a a.debug && objcopy --only-keep-debug b b.debug && "
		  "dwz -m common.debug -M /nonexistent-unhex/common.debug a.debug b.debug",
		  t_dir))
		return -1;
	o.data_dir = t_path("data");
	o.workers = 1;
	return ft_open(NULL, &o, &g_st, &g_s);
}

static int teardown(void **state)
{
	(void)state;
	ft_close(NULL, g_st, g_s);
	t_rmdir();
	return 0;
}

static void test_good_and_bad_files(void **state)
{
	char id[DEBUGINFO_HEX_MAX];
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t blen;
	struct debuginfo__meta m;

	(void)state;
	id_of("a", id, bid, &blen);
	/* Nothing stored. */
	assert_int_equal(debuginfo__build_index(g_s, id, bid, blen), ERR_NOT_FOUND);
	/* Not an ELF file: invalid_elf, retried later. */
	store_as(id, "debuginfo", t_path("prog.c"));
	assert_int_equal(debuginfo__build_index(g_s, id, bid, blen), ERR_INVALID);
	assert_false(has_index(id));
	assert_int_equal(debuginfo__meta_get(g_s, id, &m), 0);
	assert_int_equal(m.status, DEBUGINFO_STATUS_INVALID_ELF);
	assert_true(m.retry_at > 0);
	/* Another build's file: mismatch. */
	store_as(id, "debuginfo", t_path("b"));
	assert_int_equal(debuginfo__build_index(g_s, id, bid, blen), ERR_INVALID);
	assert_int_equal(debuginfo__meta_get(g_s, id, &m), 0);
	assert_int_equal(m.status, DEBUGINFO_STATUS_MISMATCH);
	assert_non_null(strstr(m.reason, "build_id_mismatch"));
	/* Without a debuginfo file, the executable (here unstripped) is used. */
	{
		char dbg[DEBUGINFO__PATH_MAX];

		assert_int_equal(debuginfo__path(g_s, id, "debuginfo", dbg, sizeof(dbg)), 0);
		assert_int_equal(unlink(dbg), 0);
	}
	store_as(id, "executable", t_path("a"));
	assert_int_equal(debuginfo__build_index(g_s, id, bid, blen), 0);
	assert_true(has_index(id));
	assert_int_equal(atomic_load(&g_s->index_builds), 1);
	/* Built already: nothing to do. */
	assert_int_equal(debuginfo__build_index(g_s, id, bid, blen), 0);
	assert_int_equal(atomic_load(&g_s->index_builds), 1);
}

/* The alt file is looked up by build ID in the store, never by its name. */
static void test_dwz_alt_by_build_id(void **state)
{
	char id[DEBUGINFO_HEX_MAX], alt[DEBUGINFO_HEX_MAX];
	uint8_t bid[SYM_BUILD_ID_MAX], abid[SYM_BUILD_ID_MAX];
	size_t blen, ablen;
	struct debuginfo__meta m;

	(void)state;
	id_of("b.debug", id, bid, &blen);
	id_of("common.debug", alt, abid, &ablen);
	store_as(id, "debuginfo", t_path("b.debug"));
	assert_int_equal(debuginfo__build_index(g_s, id, bid, blen), ERR_NOT_FOUND);
	assert_false(has_index(id));
	assert_int_equal(debuginfo__meta_get(g_s, id, &m), 0);
	assert_int_equal(m.status, DEBUGINFO_STATUS_NOT_FOUND);
	assert_non_null(strstr(m.reason, "alt_not_found"));
	assert_non_null(strstr(m.reason, alt));
	store_as(alt, "debuginfo", t_path("common.debug"));
	assert_int_equal(debuginfo__build_index(g_s, id, bid, blen), 0);
	assert_true(has_index(id));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_and_bad_files),
		cmocka_unit_test(test_dwz_alt_by_build_id),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
