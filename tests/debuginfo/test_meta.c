/*
 * test_meta.c - the metadata record of a build ID (meta.c): round trips,
 * exactly which bytes decode (no proper prefix but the record of a version
 * before owners; appended bytes are a later version's and ignored),
 * out-of-range fields, reading and writing through a real store, recording
 * a failure, who sees which record, the bound and the expiry of failure
 * records, the typed records handed out (one, all in order, counts by
 * status), and the status and source names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"

static const struct debuginfo__meta g_meta = {
	.source = DEBUGINFO_SOURCE_UPLOAD, .status = DEBUGINFO_STATUS_NOT_FOUND, .kinds = 3,
	.size = 123456, .hash = 0xfedcba9876543210ull, .uploaded = 1700000000000000000LL,
	.last_used = -5, .retry_at = 42, .reason = "alt_not_found: something",
	.owners = "team-a,team-b", .sha256 = { 1, 2, 3, [31] = 0xff }, .has_sha256 = 1,
	.failed = 1700000000000000001LL, .last_profile = 1700000000123456789LL,
	.bucket = 1u | DEBUGINFO__BUCKET_INDEX,
};

static void same_meta(const struct debuginfo__meta *x, const struct debuginfo__meta *y)
{
	assert_int_equal(x->source, y->source);
	assert_int_equal(x->status, y->status);
	assert_int_equal(x->kinds, y->kinds);
	assert_true(x->size == y->size);
	assert_true(x->hash == y->hash);
	assert_true(x->uploaded == y->uploaded);
	assert_true(x->last_used == y->last_used);
	assert_true(x->retry_at == y->retry_at);
	assert_string_equal(x->reason, y->reason);
	assert_string_equal(x->owners, y->owners);
	assert_int_equal(x->has_sha256, y->has_sha256);
	assert_memory_equal(x->sha256, y->sha256, sizeof(x->sha256));
	assert_true(x->failed == y->failed);
	assert_true(x->last_profile == y->last_profile);
	assert_int_equal(x->bucket, y->bucket);
}

/* The length of a record up to its reason: what a version before owners wrote. */
static size_t legacy_len(const struct debuginfo__meta *m)
{
	struct debuginfo__meta l = *m;
	struct buf b;
	size_t n;

	l.owners[0] = '\0';
	l.has_sha256 = 0;
	l.failed = 0;
	l.last_profile = 0;
	l.bucket = 0;
	buf_init(&b, 1 << 20);
	assert_int_equal(debuginfo__meta_encode(&l, &b), 0);
	n = b.len - 5; /* the two empty length fields, failed, last_profile and bucket */
	buf_release(&b);
	return n;
}

/* The length of a record up to failed: what a version before last_profile wrote. */
static size_t before_last_profile_len(const struct debuginfo__meta *m)
{
	struct debuginfo__meta l = *m;
	struct buf b;
	size_t n;

	l.last_profile = 0;
	l.bucket = 0;
	buf_init(&b, 1 << 20);
	assert_int_equal(debuginfo__meta_encode(&l, &b), 0);
	n = b.len - 2; /* the 1-byte varints of 0: last_profile, bucket */
	buf_release(&b);
	return n;
}

static void encode(const struct debuginfo__meta *m, struct buf *b)
{
	buf_init(b, 1 << 20);
	assert_int_equal(debuginfo__meta_encode(m, b), 0);
}

static void test_round_trip_and_prefixes(void **state)
{
	struct debuginfo__meta out;
	struct buf b;

	(void)state;
	size_t old = legacy_len(&g_meta), owners_end = old + 1 + strlen(g_meta.owners);

	encode(&g_meta, &b);
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), 0);
	same_meta(&g_meta, &out);
	size_t sha_end = owners_end + 1 + sizeof(g_meta.sha256);
	size_t failed_end = before_last_profile_len(&g_meta);

	/* Every cut is corrupt but five: where the old version ended (its
	 * files are every tenant's), after the owners, after the SHA-256,
	 * after failed (a record before debug info retention: last_profile 0),
	 * after last_profile (a record before the bucket: nothing there). */
	for (size_t cut = 0; cut < b.len; cut++) {
		int rc = debuginfo__meta_decode(b.data, cut, &out);

		if (cut == old) {
			assert_int_equal(rc, 0);
			assert_string_equal(out.owners, "*");
			assert_false(out.has_sha256);
		} else if (cut == owners_end) {
			assert_int_equal(rc, 0);
			assert_string_equal(out.owners, g_meta.owners);
			assert_false(out.has_sha256);
		} else if (cut == sha_end) {
			assert_int_equal(rc, 0);
			assert_true(out.has_sha256);
			assert_true(out.failed == 0);
		} else if (cut == failed_end) {
			assert_int_equal(rc, 0);
			assert_true(out.failed == g_meta.failed);
			assert_true(out.last_profile == 0);
		} else if (cut == b.len - 1) {
			assert_int_equal(rc, 0);
			assert_true(out.last_profile == g_meta.last_profile);
			assert_int_equal(out.bucket, 0);
		} else {
			assert_int_equal(rc, ERR_CORRUPT);
		}
	}
	/* A later version appends fields: this reader ignores them. */
	assert_int_equal(buf_append(&b, "\x05\x06", 2), 0);
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), 0);
	same_meta(&g_meta, &out);
	buf_release(&b);
}

static void test_fields_out_of_range(void **state)
{
	struct debuginfo__meta m = g_meta, out;
	struct buf b;

	(void)state;
	/* A status this reader does not know (the encoder asserts it never
	 * writes one: the byte is patched; version, source, then status). */
	encode(&m, &b);
	assert_int_equal((unsigned char)b.data[2], DEBUGINFO_STATUS_NOT_FOUND);
	b.data[2] = DEBUGINFO_STATUS_COUNT;
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), ERR_CORRUPT);
	buf_release(&b);
	/* Another version. */
	encode(&g_meta, &b);
	b.data[0] = 2;
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), ERR_CORRUPT);
	buf_release(&b);
	/* Unknown kind bits are dropped. */
	m = g_meta;
	m.kinds = 0xff;
	encode(&m, &b);
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), 0);
	assert_int_equal(out.kinds, 7); /* debuginfo, executable, kallsyms */
	buf_release(&b);
	/* A reason longer than the record's room is cut, still terminated. */
	buf_init(&b, 1 << 20);
	assert_int_equal(buf_putc(&b, 1), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(buf_put_uvarint(&b, 0), 0);
	assert_int_equal(buf_put_uvarint(&b, 1000), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(buf_putc(&b, 'r'), 0);
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), 0);
	assert_int_equal(strlen(out.reason), sizeof(out.reason) - 1);
	assert_string_equal(out.owners, ""); /* an old record without files */
	/* ... but a reason length past the end is corrupt. */
	b.len -= 1;
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), ERR_CORRUPT);
	buf_release(&b);
	/* An owners list with a NUL, or too long, and a SHA-256 of another size. */
	m = g_meta;
	m.owners[0] = '\0';
	m.has_sha256 = 0;
	m.failed = 0;
	m.last_profile = 0;
	m.bucket = 0;
	encode(&m, &b);
	b.len -= 5; /* the empty owners and SHA-256, failed, last_profile and bucket */
	assert_int_equal(buf_append(&b, "\x02" "a\0" "\x00", 4), 0);
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), ERR_CORRUPT);
	b.len -= 4;
	assert_int_equal(buf_put_uvarint(&b, DEBUGINFO__OWNERS_MAX), 0);
	for (int i = 0; i < DEBUGINFO__OWNERS_MAX; i++)
		assert_int_equal(buf_putc(&b, 'o'), 0);
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), ERR_CORRUPT);
	buf_release(&b);
	encode(&m, &b);
	b.len -= 4; /* the empty SHA-256, failed, last_profile and bucket */
	assert_int_equal(buf_append(&b, "\x05" "abcde", 6), 0);
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), ERR_CORRUPT);
	buf_release(&b);
}

static void test_visibility(void **state)
{
	struct debuginfo__meta m = g_meta;

	(void)state;
	assert_true(debuginfo__owner_has("team-a,team-b", "team-a"));
	assert_true(debuginfo__owner_has("team-a,team-b", "team-b"));
	assert_false(debuginfo__owner_has("team-a,team-b", "team"));
	assert_false(debuginfo__owner_has("team-a,team-b", "team-a,team-b"));
	assert_false(debuginfo__owner_has("", "x"));
	assert_true(debuginfo__visible(&m, NULL));
	assert_true(debuginfo__visible(&m, "team-b"));
	assert_false(debuginfo__visible(&m, "team-c"));
	snprintf(m.owners, sizeof(m.owners), "*");
	assert_true(debuginfo__visible(&m, "team-c"));
	/* Without a file, only the every-tenant view sees a record. */
	m.kinds = 0;
	assert_false(debuginfo__visible(&m, "team-c"));
	assert_true(debuginfo__visible(&m, NULL));
}

static int collect(void *ctx, const struct debuginfo_record *r)
{
	struct buf *b = ctx;

	return buf_printf(b, "%s:%s:%s;", r->build_id, debuginfo_source_str(r->source),
			  debuginfo_status_str(r->status));
}

/* The typed records over what test_store_records left: abcd, bad0, ef01. */
static void check_records(struct debuginfo *s)
{
	struct debuginfo__meta m = g_meta;
	struct debuginfo_record r;
	uint64_t by[DEBUGINFO_STATUS_COUNT];
	struct err_msg msg;
	struct buf b;

	err_clear(&msg);
	assert_int_equal(debuginfo_get(s, "ABCD", &r, &msg), 0);
	assert_string_equal(r.build_id, "abcd");
	assert_int_equal(r.source, DEBUGINFO_SOURCE_UPLOAD);
	assert_int_equal(r.status, DEBUGINFO_STATUS_UPSTREAM_ERROR);
	assert_string_equal(r.reason, "timed out");
	assert_int_equal(r.kinds, 3);
	assert_true(r.size == g_meta.size && r.uploaded_ns == g_meta.uploaded &&
		    r.last_used_ns == g_meta.last_used && r.retry_at_ns == 99);
	assert_int_equal(debuginfo_get(s, "0123", &r, &msg), ERR_NOT_FOUND);
	assert_non_null(strstr(msg.text, "0123 is not known"));
	err_clear(&msg);
	assert_int_equal(debuginfo_get(s, "xyz", &r, &msg), ERR_INVALID);
	err_clear(&msg);
	assert_int_equal(debuginfo_get(s, "bad0", &r, &msg), ERR_CORRUPT);
	/* A source this reader does not know shows as none. */
	m.source = 7;
	assert_int_equal(debuginfo__meta_put(s, "ff00", &m), 0);
	assert_int_equal(debuginfo_get(s, "ff00", &r, NULL), 0);
	assert_int_equal(r.source, DEBUGINFO_SOURCE_NONE);
	/* Listed in key order; the record that does not decode is skipped. */
	buf_init(&b, 1 << 20);
	assert_int_equal(debuginfo_list(s, collect, &b, NULL), 0);
	assert_string_equal(b.data, "abcd:upload:upstream_error;ef01:debuginfod:not_found;"
				    "ff00:none:not_found;");
	buf_release(&b);
	assert_int_equal(debuginfo_count_by_status(s, by, NULL), 0);
	assert_int_equal(by[DEBUGINFO_STATUS_UPSTREAM_ERROR], 1);
	assert_int_equal(by[DEBUGINFO_STATUS_NOT_FOUND], 2);
	assert_int_equal(by[DEBUGINFO_STATUS_OK], 0);
	assert_string_equal(debuginfo_source_str(DEBUGINFO_SOURCE_COUNT), "none");
}

/*
 * A service with only what meta.c reads (failure cap and ttl) over a store
 * in the new temp dir `dir` (a mkdtemp template, rewritten).
 */
static void bare_open(struct debuginfo *s, char *dir, uint64_t max_failures, int64_t ttl_ns)
{
	struct store_options so = { 0 };
	struct err_msg msg;

	assert_non_null(mkdtemp(dir));
	err_clear(&msg);
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->upload_mu, NULL);
	s->max_failures = max_failures;
	s->failure_ttl_ns = ttl_ns;
	atomic_init(&s->failures, -1);
	so.dir = dir;
	assert_int_equal(store_open(&so, &s->st, &msg), 0);
}

/* Closes what bare_open() opened and removes its directory. */
static void bare_close(struct debuginfo *s, const char *dir)
{
	char cmd[64];

	store_close(s->st);
	pthread_mutex_destroy(&s->upload_mu);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_store_records(void **state)
{
	struct debuginfo s;
	struct debuginfo__meta m;
	char dir[] = "/tmp/unhex-meta-XXXXXX";

	(void)state;
	bare_open(&s, dir, 100, 86400LL * 1000000000LL);
	assert_int_equal(debuginfo__meta_get(&s, "abcd", &m), ERR_NOT_FOUND);
	assert_int_equal(debuginfo__meta_put(&s, "abcd", &g_meta), 0);
	assert_int_equal(debuginfo__meta_get(&s, "abcd", &m), 0);
	same_meta(&g_meta, &m);

	/* A failure keeps the files and the source, and replaces the rest. */
	debuginfo__meta_fail(&s, "abcd", DEBUGINFO_SOURCE_DEBUGINFOD,
			     DEBUGINFO_STATUS_UPSTREAM_ERROR, 99, "timed out");
	assert_int_equal(debuginfo__meta_get(&s, "abcd", &m), 0);
	assert_int_equal(m.source, DEBUGINFO_SOURCE_UPLOAD);
	assert_int_equal(m.kinds, 3);
	assert_true(m.size == g_meta.size);
	assert_int_equal(m.status, DEBUGINFO_STATUS_UPSTREAM_ERROR);
	assert_true(m.retry_at == 99);
	assert_string_equal(m.reason, "timed out");
	/* For an unknown build ID the source is the one given. */
	debuginfo__meta_fail(&s, "ef01", DEBUGINFO_SOURCE_DEBUGINFOD, DEBUGINFO_STATUS_NOT_FOUND,
			     0, NULL);
	assert_int_equal(debuginfo__meta_get(&s, "ef01", &m), 0);
	assert_int_equal(m.source, DEBUGINFO_SOURCE_DEBUGINFOD);
	assert_string_equal(m.reason, "");

	/* Bytes that are not a record read back as corrupt. */
	{
		struct store_kv kv = { "bad0", 4, "\x09", 1 };

		assert_int_equal(store_aux_write(s.st, STORE_AUX_DEBUGINFO, &kv, 1, NULL), 0);
		assert_int_equal(debuginfo__meta_get(&s, "bad0", &m), ERR_CORRUPT);
	}
	check_records(&s);
	bare_close(&s, dir);
}

/* Records of failed lookups: at most max_failures, forgotten after the ttl. */
static void test_failure_records(void **state)
{
	struct debuginfo s;
	struct debuginfo__meta m;
	char dir[] = "/tmp/unhex-meta-XXXXXX", id[8];
	uint64_t by[DEBUGINFO_STATUS_COUNT];

	(void)state;
	bare_open(&s, dir, 3, 3600LL * 1000000000LL);
	/* A record with a file never counts, and is never forgotten. */
	m = g_meta;
	m.last_used = 0;
	m.retry_at = 0;
	assert_int_equal(debuginfo__meta_put(&s, "f000", &m), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "a%03d", i);
		debuginfo__meta_fail(&s, id, DEBUGINFO_SOURCE_NONE, DEBUGINFO_STATUS_NOT_FOUND, 0,
				     "nowhere");
	}
	assert_int_equal(atomic_load(&s.failures_dropped), 2);
	assert_int_equal(debuginfo__meta_get(&s, "a002", &m), 0);
	assert_int_equal(debuginfo__meta_get(&s, "a003", &m), ERR_NOT_FOUND);
	/* Updating a known record is always possible. */
	debuginfo__meta_fail(&s, "a000", DEBUGINFO_SOURCE_NONE, DEBUGINFO_STATUS_UPSTREAM_ERROR, 0,
			     "again");
	assert_int_equal(debuginfo__meta_get(&s, "a000", &m), 0);
	assert_string_equal(m.reason, "again");
	/* Age two of them past the ttl: the next sweep forgets them, only them. */
	for (int i = 0; i < 2; i++) {
		snprintf(id, sizeof(id), "a%03d", i);
		assert_int_equal(debuginfo__meta_get(&s, id, &m), 0);
		m.failed -= 2 * s.failure_ttl_ns;
		assert_int_equal(debuginfo__meta_put(&s, id, &m), 0);
	}
	debuginfo__meta_sweep(&s);
	assert_int_equal(atomic_load(&s.failures), 1);
	assert_int_equal(debuginfo__meta_get(&s, "a000", &m), ERR_NOT_FOUND);
	assert_int_equal(debuginfo__meta_get(&s, "a001", &m), ERR_NOT_FOUND);
	assert_int_equal(debuginfo__meta_get(&s, "a002", &m), 0);
	assert_int_equal(debuginfo__meta_get(&s, "f000", &m), 0);
	debuginfo__meta_fail(&s, "a003", DEBUGINFO_SOURCE_NONE, DEBUGINFO_STATUS_NOT_FOUND, 0, "x");
	assert_int_equal(debuginfo__meta_get(&s, "a003", &m), 0);
	assert_int_equal(debuginfo_count_by_status(&s, by, NULL), 0);
	assert_int_equal(by[DEBUGINFO_STATUS_NOT_FOUND], 3); /* f000, a002, a003 */
	bare_close(&s, dir);
}

/*
 * A failed lookup started because a build ID had no file: when an upload
 * stored one meanwhile, the upload's record stands (else the frames stay
 * hex until the retry time); without a file the failure is recorded, and
 * debuginfo__meta_fail (an index build's verdict on a file) always is.
 */
static void test_lookup_failure_after_upload(void **state)
{
	struct debuginfo s;
	struct debuginfo__meta m;
	char dir[] = "/tmp/unhex-meta-XXXXXX", path[256];
	const char *id = "ab01";
	FILE *f;

	(void)state;
	bare_open(&s, dir, 100, 86400LL * 1000000000LL);
	s.dir = dir;
	debuginfo__meta_fail_lookup(&s, id, DEBUGINFO_SOURCE_DEBUGINFOD,
				    DEBUGINFO_STATUS_UPSTREAM_ERROR, 99, "no file: recorded");
	assert_int_equal(debuginfo__meta_get(&s, id, &m), 0);
	assert_int_equal(m.status, DEBUGINFO_STATUS_UPSTREAM_ERROR);
	assert_int_equal(atomic_load(&s.failures), 1);

	/* The upload: its file, then its record. */
	snprintf(path, sizeof(path), "%s/ab", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/ab/%s", dir, id);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/ab/%s/debuginfo", dir, id);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fclose(f), 0);
	m = g_meta;
	m.kinds = 1;
	m.status = DEBUGINFO_STATUS_OK;
	m.retry_at = 0;
	m.reason[0] = '\0';
	assert_int_equal(debuginfo__meta_put(&s, id, &m), 0);

	debuginfo__meta_fail_lookup(&s, id, DEBUGINFO_SOURCE_DEBUGINFOD,
				    DEBUGINFO_STATUS_UPSTREAM_ERROR, 99, "file: ignored");
	assert_int_equal(debuginfo__meta_get(&s, id, &m), 0);
	assert_int_equal(m.status, DEBUGINFO_STATUS_OK);
	assert_true(m.retry_at == 0);
	assert_string_equal(m.reason, "");

	debuginfo__meta_fail(&s, id, DEBUGINFO_SOURCE_NONE, DEBUGINFO_STATUS_INVALID_ELF, 0,
			     "the file is not ELF");
	assert_int_equal(debuginfo__meta_get(&s, id, &m), 0);
	assert_int_equal(m.status, DEBUGINFO_STATUS_INVALID_ELF);
	assert_int_equal(m.kinds, 1);
	s.dir = NULL;
	bare_close(&s, dir);
}

static void test_names(void **state)
{
	static const char *const want[DEBUGINFO_STATUS_COUNT] = {
		"ok", "no_build_id", "not_found", "mismatch", "invalid_elf", "no_symbols",
		"upstream_error", "pending", "disabled",
	};
	char out[8] = "keep";

	(void)state;
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT; i++)
		assert_string_equal(debuginfo_status_str(i), want[i]);
	assert_string_equal(debuginfo_status_str(DEBUGINFO_STATUS_COUNT), "unknown");
	assert_int_equal(debuginfo__status_of_reason(SYM_REASON_OK), DEBUGINFO_STATUS_OK);
	assert_int_equal(debuginfo__status_of_reason(SYM_REASON_INVALID_ELF),
			 DEBUGINFO_STATUS_INVALID_ELF);
	assert_int_equal(debuginfo__status_of_reason(SYM_REASON_BUILD_ID_MISMATCH),
			 DEBUGINFO_STATUS_MISMATCH);
	assert_int_equal(debuginfo__status_of_reason(SYM_REASON_NO_BUILD_ID),
			 DEBUGINFO_STATUS_NO_BUILD_ID);
	assert_int_equal(debuginfo__status_of_reason(SYM_REASON_NO_SYMBOLS),
			 DEBUGINFO_STATUS_NO_SYMBOLS);
	assert_int_equal(debuginfo__status_of_reason(SYM_REASON_NO_DEBUG_INFO),
			 DEBUGINFO_STATUS_NO_SYMBOLS);
	debuginfo__copy_reason(out, 0, "x");
	assert_string_equal(out, "keep");
	debuginfo__copy_reason(out, sizeof(out), "a longer reason");
	assert_string_equal(out, "a longe");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_and_prefixes),
		cmocka_unit_test(test_fields_out_of_range),
		cmocka_unit_test(test_visibility),
		cmocka_unit_test(test_store_records),
		cmocka_unit_test(test_failure_records),
		cmocka_unit_test(test_lookup_failure_after_upload),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
