/*
 * test_upload.c - uploads (upload.c) through a real service: stored,
 * identical, the wrong build, not an ELF, truncated, a stripped binary as
 * debug info or a .debug file as an executable (none of them leaving a
 * record behind), a replacement dropping what the old file gave, a file
 * of the same size one byte apart (not identical), an alt file waking the
 * build IDs that waited for it, the upload cap, and the trust rules: the
 * first upload wins, only the right uploader replaces, and a tenant sees,
 * lists and fetches only its own files and the shared ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "debuginfo/debuginfo_int.h"
#include "svctest.h"

/* Counts the records of g_id in a listing. */
static int count_id(void *ctx, const struct debuginfo_record *r)
{
	*(int *)ctx += strcmp(r->build_id, g_id) == 0;
	return 0;
}

struct named {
	const char *id;
	int *seen;
};

static int count_named(void *ctx, const struct debuginfo_record *r)
{
	struct named *n = ctx;

	*n->seen += strcmp(r->build_id, n->id) == 0;
	return 0;
}

static void test_uploads(void **state)
{
	struct debuginfo_upload_result res;
	struct debuginfo_record rec;
	struct err_msg msg;
	char path[4096];
	int seen;

	(void)state;
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	assert_false(res.unchanged);
	assert_int_equal(res.kinds, 1u << DEBUGINFO_FILE_DEBUGINFO);
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	assert_true(res.unchanged);

	/* The wrong build under our ID: refused, and named. */
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog2.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 ERR_CONFLICT);
	assert_int_equal(res.reason, SYM_REASON_BUILD_ID_MISMATCH);
	assert_non_null(strstr(msg.text, "build ID mismatch"));
	assert_non_null(strstr(msg.text, g_id2));

	/* Not an ELF file. */
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.c"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 ERR_INVALID);
	assert_int_equal(res.reason, SYM_REASON_INVALID_ELF);

	/* Cut short in transit: refused as truncated, not as a file without a build ID. */
	assert_int_equal(t_run("head -c 4000 '%s' > '%s'", t_path("prog.debug"), t_path("cut")), 0);
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("cut"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 ERR_INVALID);
	assert_int_equal(res.reason, SYM_REASON_INVALID_ELF);
	assert_non_null(strstr(msg.text, "truncated"));

	/* A stripped executable is no debug info; it is a fine executable. */
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.stripped"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 ERR_INVALID);
	assert_int_equal(res.reason, SYM_REASON_NO_SYMBOLS);
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_EXECUTABLE, &res, &msg),
			 ERR_INVALID);

	/* The good file is still there and still ok, refusals notwithstanding. */
	assert_int_equal(debuginfo_get(g_svc, g_id, &rec, &msg), 0);
	assert_string_equal(rec.build_id, g_id);
	assert_int_equal(rec.status, DEBUGINFO_STATUS_OK);
	assert_int_equal(rec.source, DEBUGINFO_SOURCE_UPLOAD);
	assert_int_equal(rec.kinds, 1u << DEBUGINFO_FILE_DEBUGINFO);
	assert_true(rec.uploaded_ns > 0);
	seen = 0;
	assert_int_equal(debuginfo_list(g_svc, count_id, &seen, &msg), 0);
	assert_int_equal(seen, 1);
	assert_int_equal(debuginfo_file_path(g_svc, g_id, DEBUGINFO_FILE_DEBUGINFO, path,
					     sizeof(path)), 0);
	assert_int_equal(t_run("cmp -s '%s' '%s'", path, t_path("prog.debug")), 0);
	assert_int_equal(debuginfo_file_path(g_svc, g_id, DEBUGINFO_FILE_EXECUTABLE, path, sizeof(path)),
			 ERR_NOT_FOUND);
	assert_int_equal(debuginfo_file_path(g_svc, "zz", DEBUGINFO_FILE_DEBUGINFO, path, sizeof(path)),
			 ERR_NOT_FOUND);
}

static void test_upload_cap(void **state)
{
	struct debuginfo_options o = { 0 };
	struct debuginfo *small;
	struct debuginfo_upload *u;
	struct err_msg msg;
	char block[1024] = { 0 };

	(void)state;
	o.data_dir = t_path("data-small");
	o.max_upload_bytes = 4096;
	err_clear(&msg);
	assert_int_equal(debuginfo_open(g_st, &o, &small, &msg), 0);
	assert_int_equal(debuginfo_upload_begin(small, &u, &msg), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(debuginfo_upload_write(u, block, sizeof(block), &msg), 0);
	assert_int_equal(debuginfo_upload_write(u, block, 1, &msg), ERR_TOO_LARGE);
	debuginfo_upload_abort(u);
	debuginfo_close(small);
}

/* Different content under the same build ID replaces the file and drops its index. */
static void test_replace(void **state)
{
	struct debuginfo_upload_result res;
	struct err_msg msg;
	char idx[DEBUGINFO__PATH_MAX];
	uint64_t gen;

	(void)state;
	err_clear(&msg);
	assert_int_equal(debuginfo__job_await(g_svc, g_id, clock_mono_ns() + 60000000000LL), 0);
	assert_int_equal(debuginfo__path(g_svc, g_id, "index", idx, sizeof(idx)), 0);
	assert_true(debuginfo__file_exists(idx));
	gen = debuginfo_generation(g_svc);
	/* Identical content: nothing changes. */
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res,
				     &msg), 0);
	assert_true(res.unchanged);
	assert_true(debuginfo__file_exists(idx));
	assert_true(debuginfo_generation(g_svc) == gen);
	/* The unstripped binary: replaced, and it is also the executable. */
	assert_int_equal(upload_file(t_path("prog"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 0);
	assert_false(res.unchanged);
	assert_int_equal(res.kinds, 3);
	assert_false(debuginfo__file_exists(idx));
	assert_true(debuginfo_generation(g_svc) > gen);
}

/* Same size, same build ID, one byte apart: a replacement, not "identical". */
static void test_same_size_other_bytes(void **state)
{
	struct debuginfo_upload_result res;
	struct err_msg msg;

	(void)state;
	err_clear(&msg);
	/* The compiler's note in .comment, one letter changed in place. */
	assert_int_equal(t_run("cd '%s' && sed 's/GCC: (/GCX: (/' prog.stripped > prog.edited && "
			       "! cmp -s prog.stripped prog.edited && "
			       "test $(stat -c %%s prog.stripped) = $(stat -c %%s prog.edited)",
			       t_dir), 0);
	assert_int_equal(upload_file(t_path("prog.stripped"), g_id, DEBUGINFO_FILE_EXECUTABLE,
				     &res, &msg), 0);
	assert_int_equal(upload_file(t_path("prog.edited"), g_id, DEBUGINFO_FILE_EXECUTABLE, &res,
				     &msg), 0);
	assert_false(res.unchanged);
	assert_int_equal(upload_file(t_path("prog.edited"), g_id, DEBUGINFO_FILE_EXECUTABLE, &res,
				     &msg), 0);
	assert_true(res.unchanged);
}

/* An uploaded DWZ alt file clears the retry time of the build IDs waiting for it. */
static void test_alt_arrives(void **state)
{
	struct debuginfo_upload_result res;
	struct debuginfo__meta m;
	struct err_msg msg;
	char reason[256];

	(void)state;
	err_clear(&msg);
	snprintf(reason, sizeof(reason), "alt_not_found: the DWZ alt file x (build ID %s)", g_id2);
	debuginfo__meta_fail(g_svc, "abcd", DEBUGINFO_SOURCE_UPLOAD, DEBUGINFO_STATUS_NOT_FOUND,
			     INT64_MAX, reason);
	debuginfo__meta_fail(g_svc, "abce", DEBUGINFO_SOURCE_UPLOAD, DEBUGINFO_STATUS_NOT_FOUND,
			     INT64_MAX, "alt_not_found: another alt file");
	assert_int_equal(upload_file(t_path("prog2.debug"), g_id2, DEBUGINFO_FILE_DEBUGINFO, &res,
				     &msg), 0);
	assert_int_equal(debuginfo__meta_get(g_svc, "abcd", &m), 0);
	assert_true(m.retry_at == 0);
	assert_int_equal(debuginfo__meta_get(g_svc, "abce", &m), 0);
	assert_true(m.retry_at == INT64_MAX);
}

/* Bad uploads for a build ID nobody has leave no record (500 of them left 500). */
static void test_refusals_leave_nothing(void **state)
{
	struct debuginfo_upload_result res;
	struct debuginfo_record rec;
	struct err_msg msg;
	char id[64];

	(void)state;
	for (int i = 0; i < 20; i++) {
		snprintf(id, sizeof(id), "77%02x77", i);
		err_clear(&msg);
		assert_int_equal(upload_file(t_path("prog.c"), id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
				 ERR_INVALID);
		assert_int_equal(upload_file(t_path("prog.debug"), id, DEBUGINFO_FILE_DEBUGINFO, &res,
					     &msg), ERR_CONFLICT);
		assert_int_equal(debuginfo_get(g_svc, id, &rec, &msg), ERR_NOT_FOUND);
	}
}

static int list_has(const char *tenant, const char *id)
{
	int seen = 0;
	struct named n = { id, &seen };
	struct err_msg msg;

	err_clear(&msg);
	assert_int_equal(debuginfo_list_as(g_svc, tenant, count_named, &n, &msg), 0);
	return seen;
}

/* The first upload wins; who may replace it, and who sees it. */
static void test_trust(void **state)
{
	const struct debuginfo_upload_by a = { "team-a", 0, "a-ci", "10.0.0.1" };
	const struct debuginfo_upload_by a_replace = { "team-a", 1, "a-admin", NULL };
	const struct debuginfo_upload_by b = { "team-b", 0, "b-ci", NULL };
	const struct debuginfo_upload_by b_replace = { "team-b", 1, "b-admin", NULL };
	const struct debuginfo_upload_by all_replace = { NULL, 1, "ops", NULL };
	struct debuginfo_upload_result res;
	struct debuginfo_record rec;
	struct err_msg msg;
	char path[4096], id3[2 * SYM_BUILD_ID_MAX + 1];

	(void)state;
	assert_int_equal(t_run("cd %s && gcc -g -O1 -Wl,--build-id -DVARIANT=3 -o prog3 prog.c && "
			       "objcopy --only-keep-debug prog3 prog3.debug && "
			       "objcopy --strip-debug --redefine-sym work=pwned prog3 prog3.forged",
			       t_dir), 0);
	id_of(t_path("prog3"), id3);
	err_clear(&msg);
	assert_int_equal(upload_file_by(t_path("prog3.debug"), id3, DEBUGINFO_FILE_DEBUGINFO, &a,
					&res, &msg), 0);
	/* Tenant A sees it; B neither gets, lists nor fetches it; every tenant's view does. */
	assert_int_equal(debuginfo_get_as(g_svc, "team-a", id3, &rec, &msg), 0);
	assert_false(rec.shared);
	assert_true(rec.has_sha256);
	err_clear(&msg);
	assert_int_equal(debuginfo_get_as(g_svc, "team-b", id3, &rec, &msg), ERR_NOT_FOUND);
	assert_non_null(strstr(msg.text, "is not known"));
	assert_int_equal(list_has("team-a", id3), 1);
	assert_int_equal(list_has("team-b", id3), 0);
	assert_int_equal(list_has(NULL, id3), 1);
	assert_int_equal(debuginfo_file_path_as(g_svc, "team-b", id3, DEBUGINFO_FILE_DEBUGINFO, path,
						sizeof(path)), ERR_NOT_FOUND);
	assert_int_equal(debuginfo_file_path_as(g_svc, "team-a", id3, DEBUGINFO_FILE_DEBUGINFO, path,
						sizeof(path)), 0);
	assert_true(debuginfo_visible(g_svc, "team-a", id3));
	assert_false(debuginfo_visible(g_svc, "team-b", id3));

	/* A forged file under the same build ID: refused, even by the owner, without replace. */
	err_clear(&msg);
	assert_int_equal(upload_file_by(t_path("prog3.forged"), id3, DEBUGINFO_FILE_DEBUGINFO, &a,
					&res, &msg), ERR_CONFLICT);
	assert_non_null(strstr(msg.text, "first upload wins"));
	assert_int_equal(upload_file_by(t_path("prog3.forged"), id3, DEBUGINFO_FILE_DEBUGINFO, &b,
					&res, &msg), ERR_CONFLICT);
	err_clear(&msg);
	assert_int_equal(upload_file_by(t_path("prog3.forged"), id3, DEBUGINFO_FILE_DEBUGINFO,
					&b_replace, &res, &msg), ERR_PERMISSION);
	assert_int_equal(t_run("cmp -s '%s' '%s'", path, t_path("prog3.debug")), 0);
	/* B shows the same bytes: it has the file, so it may see it too. */
	assert_int_equal(upload_file_by(t_path("prog3.debug"), id3, DEBUGINFO_FILE_DEBUGINFO, &b,
					&res, &msg), 0);
	assert_true(res.unchanged);
	assert_int_equal(debuginfo_get_as(g_svc, "team-b", id3, &rec, &msg), 0);
	assert_int_equal(list_has("team-b", id3), 1);
	/* Shared by two now: neither replaces it alone. */
	assert_int_equal(upload_file_by(t_path("prog3.forged"), id3, DEBUGINFO_FILE_DEBUGINFO,
					&a_replace, &res, &msg), ERR_PERMISSION);
	/* An uploader for every tenant may, and the file becomes everyone's. */
	assert_int_equal(upload_file_by(t_path("prog3.forged"), id3, DEBUGINFO_FILE_DEBUGINFO,
					&all_replace, &res, &msg), 0);
	assert_false(res.unchanged);
	assert_int_equal(debuginfo_get_as(g_svc, "team-c", id3, &rec, &msg), 0);
	assert_true(rec.shared);
	assert_int_equal(t_run("cmp -s '%s' '%s'", path, t_path("prog3.forged")), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uploads),
		cmocka_unit_test(test_refusals_leave_nothing),
		cmocka_unit_test(test_trust),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_same_size_other_bytes),
		cmocka_unit_test(test_alt_arrives),
		cmocka_unit_test(test_upload_cap),
	};

	return cmocka_run_group_tests(tests, svc_setup, svc_teardown);
}
