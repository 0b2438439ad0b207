/*
 * test_bucket.c - debug info shared through an object store (bucket.c):
 * two services with stores of their own share one bucket (the directory
 * backend, the same interface as S3).  An upload to A is put in the bucket
 * under the documented key, byte for byte, and marked in its record; B
 * resolves it from the bucket, index included (no build); a build ID the
 * bucket lacks costs one listing until the miss expires; a put that fails
 * is left pending and put by a later pass, and a lookup it cannot answer
 * is an upstream_error; other bytes under a key are a
 * counted conflict; an index that is not one is rebuilt; a tenant's own
 * file goes under the tenant's key and answers only that tenant.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/hash.h"
#include "debuginfo/debuginfo_int.h"
#include "objstore/objstore.h"
#include "storage/storage.h"
#include "tests/symbolize/fixtures.h"
#include "tests/symbolize/symtest.h"

#define N_PROGS 5

static struct objstore *g_os;
static struct store *g_sta, *g_stb;
static struct debuginfo *g_a, *g_b;
static char g_id[N_PROGS][DEBUGINFO_HEX_MAX];
static uint64_t g_work[N_PROGS]; /* vaddr of the program's work function */

static void open_svc(const char *dir, struct store **st, struct debuginfo **d)
{
	struct store_options so = { 0 };
	struct debuginfo_options o = { 0 };
	struct err_msg msg;

	err_clear(&msg);
	so.dir = t_path(dir);
	assert_int_equal(store_open(&so, st, &msg), 0);
	o.data_dir = t_path(dir);
	o.workers = 1;
	o.objstore = g_os;
	o.bucket_miss_ttl_ns = 3600LL * 1000000000LL; /* the tests expire misses by hand */
	assert_int_equal(debuginfo_open(*st, &o, d, &msg), 0);
	/* The passes run in the test's thread (debuginfo__bucket_sync), so
	 * counters are exact and the bucket can be swapped. */
	debuginfo__bucket_stop(*d);
}

static int setup(void **state)
{
	struct err_msg msg;

	(void)state;
	t_mkdtemp();
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	for (int i = 0; i < N_PROGS; i++) {
		char p[16];
		uint64_t *a = NULL;
		struct sym_elf_info info;

		snprintf(p, sizeof(p), "p%d", i);
		if (t_run("cd %s && gcc -g -O2 -fPIE -pie -Wl,--build-id -DVARIANT=%d -Dwork=work%d "
			  "-o %s prog.c && objcopy --only-keep-debug %s %s.debug",
			  t_dir, i + 1, i, p, p, p))
			return -1;
		if (sym_elf_inspect_file(t_path(p), &info, NULL) || !info.build_id_len)
			return -1;
		sym_build_id_hex(info.build_id, info.build_id_len, g_id[i]);
		{
			char cmd[600];

			snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3==\"work%d\"{print $1}'",
				 t_path(p), i);
			if (t_popen_addresses(cmd, &a) != 1)
				return -1;
			g_work[i] = a[0];
			free(a);
		}
	}
	err_clear(&msg);
	if (objstore_open_dir(t_path("bucket"), &g_os, &msg))
		return -1;
	open_svc("a", &g_sta, &g_a);
	open_svc("b", &g_stb, &g_b);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	debuginfo_close(g_a);
	debuginfo_close(g_b);
	store_close(g_sta);
	store_close(g_stb);
	objstore_close(g_os);
	t_rmdir();
	return 0;
}

static int upload(struct debuginfo *d, int prog, const char *suffix,
		  const struct debuginfo_upload_by *by)
{
	struct debuginfo_upload_result res;
	struct debuginfo_upload *u;
	struct err_msg msg;
	char name[32];
	struct buf b;
	int rc;

	snprintf(name, sizeof(name), "p%d%s", prog, suffix);
	buf_init(&b, 1 << 30);
	assert_int_equal(buf_read_file(&b, t_path(name)), 0);
	err_clear(&msg);
	assert_int_equal(debuginfo_upload_begin(d, &u, &msg), 0);
	assert_int_equal(debuginfo_upload_write(u, b.data, b.len, &msg), 0);
	rc = debuginfo_upload_commit_as(u, g_id[prog], DEBUGINFO_FILE_DEBUGINFO, by, &res, &msg);
	buf_release(&b);
	return rc;
}

/* 1 when object `key` holds the bytes of file `name` of the test dir. */
static int object_is(const char *key, const char *name)
{
	struct buf obj, file;
	struct err_msg msg;
	int same;

	buf_init(&obj, 1 << 30);
	buf_init(&file, 1 << 30);
	err_clear(&msg);
	same = !objstore_get(g_os, key, &obj, &msg) && !buf_read_file(&file, t_path(name)) &&
	       obj.len == file.len && memcmp(obj.data, file.data, obj.len) == 0;
	buf_release(&obj);
	buf_release(&file);
	return same;
}

static int exists(const char *key)
{
	struct objstore_stat st;

	return objstore_head(g_os, key, &st, NULL) == 0;
}

struct named {
	char name[128];
	int called;
};

static int on_frames(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	struct named *r = ctx;

	(void)i, (void)vaddr;
	r->called++;
	snprintf(r->name, sizeof(r->name), "%s", n && f[0].function ? f[0].function : "");
	return 0;
}

/* Resolves the work function of `prog` on `d` as `tenant` (NULL: every tenant). */
static enum debuginfo_status resolve(struct debuginfo *d, int prog, const char *tenant,
				     struct named *r, char *reason, size_t rlen)
{
	struct debuginfo_mapping_ref map = { 0, 0, 0, 1 };
	struct debuginfo_addr_req req = { g_work[prog], 1 };
	struct debuginfo_asker a = { tenant, DEBUGINFO_QUERY_FETCHES };
	enum debuginfo_status st;

	memset(r, 0, sizeof(*r));
	assert_int_equal(debuginfo_resolve_as(d, tenant ? &a : NULL, g_id[prog], &map, &req, 1,
					      clock_mono_ns() + 60LL * 1000000000LL, on_frames,
					      r, &st, reason, rlen),
			 0);
	return st;
}

static void want_named(struct debuginfo *d, int prog, const char *tenant)
{
	char want[16], reason[256];
	struct named r;

	snprintf(want, sizeof(want), "work%d", prog);
	assert_int_equal(resolve(d, prog, tenant, &r, reason, sizeof(reason)), DEBUGINFO_STATUS_OK);
	assert_int_equal(r.called, 1);
	assert_string_equal(r.name, want);
}

static void key_of(int prog, const char *rest, char *out, size_t len)
{
	snprintf(out, len, "debuginfo/%s/%s", g_id[prog], rest);
}

static struct debuginfo_stats stats(struct debuginfo *d)
{
	struct debuginfo_stats st;

	debuginfo_stats(d, &st);
	return st;
}

static unsigned bucket_bits(struct debuginfo *d, int prog)
{
	struct debuginfo__meta m;

	assert_int_equal(debuginfo__meta_get(d, g_id[prog], &m), 0);
	return m.bucket;
}

/* Forgets B's remembered miss of `prog`, as miss_ttl passing would. */
static void expire_miss(int prog)
{
	uint64_t h = hash_bytes(g_id[prog], strlen(g_id[prog]), 0);

	g_b->misses[h % DEBUGINFO__BUCKET_MISS_SLOTS].at -= g_b->bucket_miss_ttl_ns;
}

/* An upload to A reaches the bucket and B: the file, then the index. */
static void test_upload_shared(void **state)
{
	char key[300];
	uint64_t pending = 1;
	struct debuginfo_stats sa, sb;

	(void)state;
	assert_int_equal(upload(g_a, 0, ".debug", NULL), 0);
	assert_int_equal(debuginfo__bucket_sync(g_a, &pending), 0);
	assert_true(pending == 0);
	key_of(0, "debuginfo", key, sizeof(key));
	assert_true(object_is(key, "p0.debug"));
	assert_int_equal(bucket_bits(g_a, 0), 1u << DEBUGINFO_FILE_DEBUGINFO);
	/* A resolves (builds the index); the next pass puts the index. */
	want_named(g_a, 0, NULL);
	assert_true(stats(g_a).index_builds == 1);
	assert_int_equal(debuginfo__bucket_sync(g_a, &pending), 0);
	sa = stats(g_a);
	assert_true(sa.bucket_puts == 1 && sa.bucket_index_puts == 1 && sa.bucket_put_failures == 0);
	assert_int_equal(bucket_bits(g_a, 0), 1u | DEBUGINFO__BUCKET_INDEX);
	/* Another pass has nothing to put. */
	assert_int_equal(debuginfo__bucket_sync(g_a, &pending), 0);
	assert_true(stats(g_a).bucket_puts == 1 && stats(g_a).bucket_puts_found == 0);

	/* B never saw it: one listing, the file and the index downloaded, no build. */
	want_named(g_b, 0, NULL);
	sb = stats(g_b);
	assert_true(sb.bucket_hits == 1 && sb.bucket_misses == 0);
	assert_true(sb.bucket_downloads == 1 && sb.bucket_index_downloads == 1);
	assert_true(sb.index_builds == 0 && sb.uploads_ok == 0);
	assert_true(sb.bucket_bytes_in > 0);
	/* What came from the bucket is not put back. */
	assert_int_equal(bucket_bits(g_b, 0), 1u | DEBUGINFO__BUCKET_INDEX);
	assert_int_equal(debuginfo__bucket_sync(g_b, &pending), 0);
	assert_true(stats(g_b).bucket_puts == 0 && stats(g_b).bucket_index_puts == 0);
}

/* A build ID nobody has: one listing per miss_ttl, not one per query. */
static void test_miss_cached(void **state)
{
	char reason[256];
	struct named r;

	(void)state;
	assert_int_equal(resolve(g_b, 1, NULL, &r, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);
	assert_string_equal(reason, DEBUGINFO__NOT_IN_BUCKET);
	assert_true(stats(g_b).bucket_misses == 1);
	assert_int_equal(resolve(g_b, 1, NULL, &r, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);
	assert_true(stats(g_b).bucket_misses == 1);
	/* Uploaded to A meanwhile: B sees it once the miss expired. */
	assert_int_equal(upload(g_a, 1, ".debug", NULL), 0);
	assert_int_equal(debuginfo__bucket_sync(g_a, NULL), 0);
	assert_int_equal(resolve(g_b, 1, NULL, &r, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);
	expire_miss(1);
	want_named(g_b, 1, NULL);
	assert_true(stats(g_b).bucket_misses == 1 && stats(g_b).bucket_hits == 2);
	/* A built no index of it, so B built its own. */
	assert_true(stats(g_b).index_builds == 1);
}

/* A bucket that fails: the upload stays pending, and a pass after a restart puts it. */
static void test_put_retried(void **state)
{
	struct objstore_s3_config cfg = { 0 };
	struct objstore *down;
	struct err_msg msg;
	uint64_t pending = 0;
	char key[300];

	(void)state;
	cfg.endpoint = "http://127.0.0.1:1"; /* nothing listens on port 1 */
	cfg.bucket = "b";
	cfg.path_style = 1;
	cfg.access_key = "k";
	cfg.secret_key = "s";
	cfg.max_attempts = 1;
	err_clear(&msg);
	assert_int_equal(objstore_open_s3(&cfg, &down, &msg), 0);
	g_a->os = down;
	assert_int_equal(upload(g_a, 2, ".debug", NULL), 0);
	assert_int_not_equal(debuginfo__bucket_sync(g_a, &pending), 0);
	assert_true(pending == 1);
	assert_true(stats(g_a).bucket_put_failures == 1 && stats(g_a).bucket_pending == 1);
	assert_int_equal(bucket_bits(g_a, 2), 0);
	/* A lookup the bucket cannot answer says so, and is not a "not found". */
	{
		char reason[256];
		struct named r;

		assert_int_equal(resolve(g_a, 4, NULL, &r, reason, sizeof(reason)),
				 DEBUGINFO_STATUS_UPSTREAM_ERROR);
		assert_non_null(strstr(reason, "the bucket could not be asked"));
		assert_true(stats(g_a).bucket_lookup_failures == 1);
	}
	/* A restart: the record still says the file is not in the bucket. */
	debuginfo_close(g_a);
	store_close(g_sta);
	objstore_close(down);
	open_svc("a", &g_sta, &g_a);
	assert_int_equal(debuginfo__bucket_sync(g_a, &pending), 0);
	assert_true(pending == 0 && stats(g_a).bucket_pending == 0);
	assert_int_equal(bucket_bits(g_a, 2), 1u << DEBUGINFO_FILE_DEBUGINFO);
	key_of(2, "debuginfo", key, sizeof(key));
	assert_true(object_is(key, "p2.debug"));
}

/* Other bytes under a build ID's key: counted, kept apart, not retried. */
static void test_conflict(void **state)
{
	char key[300];
	uint64_t pending = 1;

	(void)state;
	/* The unstripped binary has the build ID of its .debug file. */
	assert_int_equal(upload(g_a, 3, ".debug", NULL), 0);
	assert_int_equal(debuginfo__bucket_sync(g_a, NULL), 0);
	assert_int_equal(upload(g_b, 3, "", NULL), 0);
	assert_int_equal(debuginfo__bucket_sync(g_b, &pending), 0);
	assert_true(pending == 0);
	assert_true(stats(g_b).bucket_put_conflicts == 1);
	key_of(3, "debuginfo", key, sizeof(key));
	assert_true(object_is(key, "p3.debug"));
	/* B's own copy of the executable (an unstripped upload is one) is new. */
	key_of(3, "executable", key, sizeof(key));
	assert_true(object_is(key, "p3"));
	assert_int_equal(debuginfo__bucket_sync(g_b, NULL), 0);
	assert_true(stats(g_b).bucket_put_conflicts == 1);
}

/* An index in the bucket that is not one is rebuilt, not used. */
static void test_bad_index(void **state)
{
	char key[300], hex[40] = "";
	struct debuginfo__meta m;
	struct err_msg msg;

	(void)state;
	/* p1: A has the file, B built its index; B's record names the key. */
	assert_int_equal(debuginfo__meta_get(g_a, g_id[1], &m), 0);
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", m.sha256[i]);
	snprintf(key, sizeof(key), "debuginfo/%s/index/v%u-%x-%s", g_id[1],
		 SYM_INDEX_FORMAT_VERSION, m.kinds, hex);
	err_clear(&msg);
	assert_int_equal(objstore_put(g_os, key, "not an index at all", 19, 0, &msg), 0);
	/* A resolves p1: its index build finds the bucket's, refuses it, builds. */
	want_named(g_a, 1, NULL);
	assert_true(stats(g_a).bucket_index_invalid == 1);
	assert_true(stats(g_a).bucket_index_downloads == 0);
	assert_true(stats(g_a).index_builds == 1);
}

/* A tenant's own upload: under its key, and only its frames are named. */
static void test_tenant_private(void **state)
{
	const struct debuginfo_upload_by t1 = { "t1", 0, "ci", NULL };
	char key[300], reason[256];
	struct named r;

	(void)state;
	assert_int_equal(upload(g_a, 4, ".debug", &t1), 0);
	assert_int_equal(debuginfo__bucket_sync(g_a, NULL), 0);
	key_of(4, "tenant/t1/debuginfo", key, sizeof(key));
	assert_true(object_is(key, "p4.debug"));
	key_of(4, "debuginfo", key, sizeof(key));
	assert_false(exists(key));
	/* On B, another tenant's query brings the file but gets no names. */
	assert_int_equal(resolve(g_b, 4, "t2", &r, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(r.called, 0);
	want_named(g_b, 4, "t1");
	assert_int_equal(resolve(g_b, 4, "t2", &r, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(r.called, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upload_shared),
		cmocka_unit_test(test_miss_cached),
		cmocka_unit_test(test_put_retried),
		cmocka_unit_test(test_conflict),
		cmocka_unit_test(test_bad_index),
		cmocka_unit_test(test_tenant_private),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
