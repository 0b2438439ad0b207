/*
 * test_files.c - the debug files on disk (files.c): canonical build IDs,
 * the path layout and its limit, mkdir -p, installing by link or by copy,
 * hashing and comparing files, the lookup behind the debuginfod
 * protocol, and removing what a crash left mid-write.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/hash.h"
#include "debuginfo/debuginfo_int.h"

static char g_dir[64];

static const char *at(const char *name)
{
	static char ring[4][512];
	static int k;
	char *p = ring[k++ % 4];

	snprintf(p, 512, "%s/%s", g_dir, name);
	return p;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/unhex-files-XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_canon_id(void **state)
{
	char out[DEBUGINFO_HEX_MAX], big[DEBUGINFO_HEX_MAX + 2];
	uint8_t bytes[SYM_BUILD_ID_MAX];
	size_t len = 0;

	(void)state;
	assert_int_equal(debuginfo__canon_id("0aFF", out, bytes, &len), 0);
	assert_string_equal(out, "0aff");
	assert_int_equal(len, 2);
	assert_int_equal(bytes[1], 0xff);
	assert_int_equal(debuginfo__canon_id("ab", out, NULL, NULL), 0);
	assert_int_equal(debuginfo__canon_id(NULL, out, NULL, NULL), ERR_INVALID);
	assert_int_equal(debuginfo__canon_id("", out, NULL, NULL), ERR_INVALID);
	assert_int_equal(debuginfo__canon_id("abc", out, NULL, NULL), ERR_INVALID);
	assert_int_equal(debuginfo__canon_id("zz", out, NULL, NULL), ERR_INVALID);
	assert_int_equal(debuginfo__canon_id("../..", out, NULL, NULL), ERR_INVALID);
	/* 128 digits is the longest build ID. */
	memset(big, 'a', 2 * SYM_BUILD_ID_MAX);
	big[2 * SYM_BUILD_ID_MAX] = '\0';
	assert_int_equal(debuginfo__canon_id(big, out, NULL, &len), 0);
	assert_int_equal(len, SYM_BUILD_ID_MAX);
	memcpy(big + 2 * SYM_BUILD_ID_MAX, "aa", 3);
	assert_int_equal(debuginfo__canon_id(big, out, NULL, NULL), ERR_INVALID);
}

static void test_paths(void **state)
{
	struct debuginfo s;
	char p[DEBUGINFO__PATH_MAX], small[24];

	(void)state;
	memset(&s, 0, sizeof(s));
	s.dir = "/data/debuginfo";
	assert_int_equal(debuginfo__path(&s, "abcdef", "index", p, sizeof(p)), 0);
	assert_string_equal(p, "/data/debuginfo/ab/abcdef/index");
	assert_int_equal(debuginfo__path(&s, "abcdef", NULL, p, sizeof(p)), 0);
	assert_string_equal(p, "/data/debuginfo/ab/abcdef");
	assert_int_equal(debuginfo__path(&s, "abcdef", "debuginfo", small, sizeof(small)),
			 ERR_TOO_LARGE);
	assert_string_equal(debuginfo__kind_name(DEBUGINFO_FILE_DEBUGINFO), "debuginfo");
	assert_string_equal(debuginfo__kind_name(DEBUGINFO_FILE_EXECUTABLE), "executable");
}

static void test_mkdir_and_install(void **state)
{
	struct stat a, b;
	char src[512], dst[512];
	uint64_t size = 0, hash = 0;

	(void)state;
	assert_int_equal(debuginfo__mkdir_p(at("x/y/z")), 0);
	assert_int_equal(debuginfo__mkdir_p(at("x/y/z")), 0); /* exists already */
	write_file(at("x/file"), "hello");
	assert_int_equal(debuginfo__mkdir_p(at("x/file/sub")), ERR_IO);
	assert_false(debuginfo__file_exists(at("x/y")));   /* a directory */
	assert_true(debuginfo__file_exists(at("x/file")));

	/* Same file system: a hard link, so the same inode. */
	snprintf(src, sizeof(src), "%s", at("x/file"));
	snprintf(dst, sizeof(dst), "%s", at("x/y/z/installed"));
	assert_int_equal(debuginfo__install_copy(src, dst, NULL), 0);
	assert_int_equal(stat(src, &a), 0);
	assert_int_equal(stat(dst, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(debuginfo__file_hash(dst, &size, &hash), 0);
	assert_int_equal(size, 5);
	assert_true(hash == hash_bytes("hello", 5, 0));
	/* Over an existing file. */
	write_file(at("x/other"), "bye");
	snprintf(src, sizeof(src), "%s", at("x/other"));
	assert_int_equal(debuginfo__install_copy(src, dst, NULL), 0);
	assert_int_equal(debuginfo__file_hash(dst, &size, &hash), 0);
	assert_int_equal(size, 3);
	/* A source that does not exist: an error, and no temporary left. */
	snprintf(src, sizeof(src), "%s", at("x/missing"));
	assert_int_equal(debuginfo__install_copy(src, dst, NULL), ERR_IO);
	assert_int_equal(debuginfo__file_hash(src, &size, &hash), ERR_IO);
	write_file(at("x/empty"), "");
	assert_int_equal(debuginfo__file_hash(at("x/empty"), &size, &hash), 0);
	assert_int_equal(size, 0);
}

/* Across file systems the file is copied; /dev/shm is tmpfs on Linux. */
static void test_install_by_copy(void **state)
{
	char src[128], dst[512];
	struct stat a, b;
	uint64_t size = 0, hash = 0;

	(void)state;
	snprintf(src, sizeof(src), "/dev/shm/unhex-files-%d", (int)getpid());
	snprintf(dst, sizeof(dst), "%s", at("copied"));
	if (stat("/dev/shm", &a) || stat(g_dir, &b) || a.st_dev == b.st_dev)
		skip();
	write_file(src, "across file systems");
	assert_int_equal(debuginfo__install_copy(src, dst, NULL), 0);
	assert_int_equal(debuginfo__file_hash(dst, &size, &hash), 0);
	assert_int_equal(size, strlen("across file systems"));
	assert_true(hash == hash_bytes("across file systems", size, 0));
	unlink(src);
}

static void write_bytes(const char *path, const char *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Whole files compared, past the first chunk, whatever their hashes. */
static void test_same_content(void **state)
{
	size_t n = 200000;
	char *x = malloc(n), a[512], b[512];
	int same = -1;

	(void)state;
	assert_non_null(x);
	for (size_t i = 0; i < n; i++)
		x[i] = (char)(i * 7);
	snprintf(a, sizeof(a), "%s", at("cmp-a"));
	snprintf(b, sizeof(b), "%s", at("cmp-b"));
	write_bytes(a, x, n);
	write_bytes(b, x, n);
	assert_int_equal(debuginfo__same_content(a, b, &same), 0);
	assert_int_equal(same, 1);
	x[n - 1] ^= 1; /* in the last chunk */
	write_bytes(b, x, n);
	assert_int_equal(debuginfo__same_content(a, b, &same), 0);
	assert_int_equal(same, 0);
	write_bytes(b, x, n - 1);
	assert_int_equal(debuginfo__same_content(a, b, &same), 0);
	assert_int_equal(same, 0);
	write_bytes(a, "", 0);
	write_bytes(b, "", 0);
	assert_int_equal(debuginfo__same_content(a, b, &same), 0);
	assert_int_equal(same, 1);
	assert_int_equal(debuginfo__same_content(a, at("cmp-none"), &same), ERR_IO);
	assert_int_equal(same, 0);
	free(x);
}

static void test_file_path(void **state)
{
	struct debuginfo s;
	char p[DEBUGINFO__PATH_MAX], dir[512];

	(void)state;
	memset(&s, 0, sizeof(s));
	snprintf(dir, sizeof(dir), "%s", at("store"));
	s.dir = dir;
	assert_int_equal(debuginfo__mkdir_p(at("store/ab/abcd")), 0);
	write_file(at("store/ab/abcd/debuginfo"), "x");
	assert_int_equal(debuginfo_file_path(&s, "ABCD", DEBUGINFO_FILE_DEBUGINFO, p, sizeof(p)), 0);
	assert_string_equal(p, at("store/ab/abcd/debuginfo"));
	assert_int_equal(debuginfo_file_path(&s, "abcd", DEBUGINFO_FILE_EXECUTABLE, p, sizeof(p)),
			 ERR_NOT_FOUND);
	assert_int_equal(debuginfo_file_path(&s, "abc", DEBUGINFO_FILE_DEBUGINFO, p, sizeof(p)),
			 ERR_NOT_FOUND);
	assert_int_equal(debuginfo_file_path(&s, "abcd", (enum debuginfo_file_kind)7, p, sizeof(p)),
			 ERR_NOT_FOUND);
}

static void test_clean_temp(void **state)
{
	struct debuginfo s;
	struct stat sb;
	char dir[512];
	uint64_t n, bytes;

	(void)state;
	memset(&s, 0, sizeof(s));
	snprintf(dir, sizeof(dir), "%s", at("crash"));
	s.dir = dir;
	assert_int_equal(debuginfo__mkdir_p(at("crash/tmp")), 0);
	assert_int_equal(debuginfo__mkdir_p(at("crash/ab/abcd")), 0);
	/* What a kill -9 leaves: an upload, a fetch, an install, an index. */
	write_file(at("crash/tmp/upload.123.4"), "12345");
	write_file(at("crash/tmp/fetch.123.5"), "123");
	write_file(at("crash/ab/abcd/debuginfo.tmp.123"), "12");
	write_file(at("crash/ab/abcd/index.Ab12Cd"), "1");
	/* What must stay. */
	write_file(at("crash/ab/abcd/debuginfo"), "x");
	write_file(at("crash/ab/abcd/index"), "x");
	write_file(at("crash/ab/abcd/executable"), "x");
	write_file(at("crash/ab/abcd/index.tmp"), "x");
	write_file(at("crash/ab/abcd/index.toolong7"), "x");

	debuginfo__clean_temp(&s, &n, &bytes);
	assert_int_equal(n, 4);
	assert_int_equal(bytes, 11);
	assert_int_not_equal(stat(at("crash/tmp/upload.123.4"), &sb), 0);
	assert_int_not_equal(stat(at("crash/tmp/fetch.123.5"), &sb), 0);
	assert_int_not_equal(stat(at("crash/ab/abcd/debuginfo.tmp.123"), &sb), 0);
	assert_int_not_equal(stat(at("crash/ab/abcd/index.Ab12Cd"), &sb), 0);
	assert_int_equal(stat(at("crash/tmp"), &sb), 0);
	assert_int_equal(stat(at("crash/ab/abcd/debuginfo"), &sb), 0);
	assert_int_equal(stat(at("crash/ab/abcd/index"), &sb), 0);
	assert_int_equal(stat(at("crash/ab/abcd/executable"), &sb), 0);
	assert_int_equal(stat(at("crash/ab/abcd/index.tmp"), &sb), 0);
	assert_int_equal(stat(at("crash/ab/abcd/index.toolong7"), &sb), 0);
	debuginfo__clean_temp(&s, &n, &bytes);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canon_id),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_mkdir_and_install),
		cmocka_unit_test(test_install_by_copy),
		cmocka_unit_test(test_same_content),
		cmocka_unit_test(test_file_path),
		cmocka_unit_test(test_clean_temp),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
