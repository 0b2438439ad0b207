/*
 * svctest.h - fixtures of the service tests: a store and a service in a
 * temp dir, two builds of the C fixture program (prog, and prog2 with
 * other code) with .debug and stripped variants, and uploads streamed in
 * pieces as the web layer does.  Header-only: each test is one program.
 */
#ifndef UNHEX_TESTS_DEBUGINFO_SVCTEST_H
#define UNHEX_TESTS_DEBUGINFO_SVCTEST_H

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "debuginfo/debuginfo.h"
#include "storage/storage.h"
#include "symbolize/symbolize.h"
#include "tests/symbolize/fixtures.h"
#include "tests/symbolize/symtest.h"

static struct store *g_st;
static struct debuginfo *g_svc;
static char g_id[2 * SYM_BUILD_ID_MAX + 1];    /* prog */
static char g_id2[2 * SYM_BUILD_ID_MAX + 1];   /* prog2, never uploaded at first */

/* Opens g_st in t_dir/data with `so` and g_svc on it with `o`, one worker:
 * the directories are set here, the rest is the caller's. */
static void open_with(struct store_options so, struct debuginfo_options o)
{
	struct err_msg msg;

	err_clear(&msg);
	so.dir = t_path("data");
	assert_int_equal(store_open(&so, &g_st, &msg), 0);
	o.data_dir = t_path("data");
	o.workers = 1;
	assert_int_equal(debuginfo_open(g_st, &o, &g_svc, &msg), 0);
}

static void open_all(void)
{
	struct store_options so = { 0 };
	struct debuginfo_options o = { 0 };

	open_with(so, o);
}

static void close_all(void)
{
	debuginfo_close(g_svc);
	store_close(g_st);
	g_svc = NULL;
	g_st = NULL;
}

static void id_of(const char *path, char *out)
{
	struct sym_elf_info info;

	assert_int_equal(sym_elf_inspect_file(path, &info, NULL), 0);
	assert_true(info.build_id_len > 0);
	sym_build_id_hex(info.build_id, info.build_id_len, out);
}

static int svc_setup(void **state)
{
	(void)state;
	t_mkdtemp();
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	t_write("prog2.c", FIX_C);
	if (t_run("cd %s && gcc -g -O2 -fPIE -pie -Wl,--build-id -o prog prog.c && "
		  "gcc -g -O2 -fPIE -pie -Wl,--build-id -DVARIANT=2 -o prog2 prog2.c -Dwork=work2 && "
		  "objcopy --only-keep-debug prog prog.debug && cp prog prog.stripped && "
		  "strip --strip-all prog.stripped && objcopy --only-keep-debug prog2 prog2.debug",
		  t_dir))
		return -1;
	id_of(t_path("prog"), g_id);
	id_of(t_path("prog2"), g_id2);
	if (strcmp(g_id, g_id2) == 0)
		return -1;
	open_all();
	return 0;
}

static int svc_teardown(void **state)
{
	(void)state;
	close_all();
	t_rmdir();
	return 0;
}

/*
 * Uploads the file at `path` as `by` says (NULL: an all-tenants uploader
 * that replaces what is there, as the tests of replacements need).
 */
static int upload_file_by(const char *path, const char *id, enum debuginfo_file_kind kind,
			  const struct debuginfo_upload_by *by, struct debuginfo_upload_result *res,
			  struct err_msg *msg)
{
	static const struct debuginfo_upload_by replacer = { NULL, 1, "test", NULL };
	struct debuginfo_upload *u;
	struct buf b;
	int rc;

	buf_init(&b, 1 << 30);
	if (buf_read_file(&b, path))
		fail();
	assert_int_equal(debuginfo_upload_begin(g_svc, &u, msg), 0);
	/* In pieces, as the web layer streams it. */
	for (size_t off = 0; off < b.len; off += 4000) {
		size_t n = b.len - off < 4000 ? b.len - off : 4000;

		assert_int_equal(debuginfo_upload_write(u, b.data + off, n, msg), 0);
	}
	rc = debuginfo_upload_commit_as(u, id, kind, by ? by : &replacer, res, msg);
	buf_release(&b);
	return rc;
}

static int upload_file(const char *path, const char *id, enum debuginfo_file_kind kind,
		       struct debuginfo_upload_result *res, struct err_msg *msg)
{
	return upload_file_by(path, id, kind, NULL, res, msg);
}

#endif
