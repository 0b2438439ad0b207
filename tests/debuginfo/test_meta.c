/*
 * test_meta.c - the metadata record of a build ID (meta.c): round trips,
 * exactly which bytes decode (no proper prefix; appended bytes are a later
 * version's and ignored), out-of-range fields, reading and writing through
 * a real store, recording a failure, the typed records handed out (one,
 * all in order, counts by status), and the status and source names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"

static const struct debuginfo__meta g_meta = {
	DEBUGINFO_SOURCE_UPLOAD, DEBUGINFO_STATUS_NOT_FOUND, 3, 123456, 0xfedcba9876543210ull,
	1700000000000000000LL, -5, 42, "alt_not_found: something", 1700000000123456789LL
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
	assert_true(x->last_profile == y->last_profile);
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
	encode(&g_meta, &b);
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), 0);
	same_meta(&g_meta, &out);
	/* Every cut fails up to the reason's end; last_profile was appended
	 * later, so a record that ends before it (or in it) is one of the
	 * format before, with last_profile 0. */
	{
		size_t whole = b.len, old_len;
		struct buf o;
		struct debuginfo__meta m = g_meta;

		m.last_profile = 0;
		encode(&m, &o);
		old_len = o.len - 1; /* the 1-byte varint of 0 */
		buf_release(&o);
		for (size_t cut = 0; cut < old_len; cut++)
			assert_int_equal(debuginfo__meta_decode(b.data, cut, &out), ERR_CORRUPT);
		for (size_t cut = old_len; cut < whole; cut++) {
			assert_int_equal(debuginfo__meta_decode(b.data, cut, &out), 0);
			assert_true(out.last_profile == 0);
			out.last_profile = g_meta.last_profile;
			same_meta(&g_meta, &out);
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
	assert_int_equal(out.kinds, 3);
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
	/* ... but a reason length past the end is corrupt. */
	b.len -= 1;
	assert_int_equal(debuginfo__meta_decode(b.data, b.len, &out), ERR_CORRUPT);
	buf_release(&b);
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

static void test_store_records(void **state)
{
	struct store_options so = { 0 };
	struct debuginfo s;
	struct debuginfo__meta m;
	struct err_msg msg;
	char dir[] = "/tmp/unhex-meta-XXXXXX", cmd[64];

	(void)state;
	assert_non_null(mkdtemp(dir));
	err_clear(&msg);
	memset(&s, 0, sizeof(s));
	so.dir = dir;
	assert_int_equal(store_open(&so, &s.st, &msg), 0);
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
	store_close(s.st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_names(void **state)
{
	static const char *const want[DEBUGINFO_STATUS_COUNT] = {
		"ok", "no_build_id", "not_found", "mismatch", "invalid_elf", "no_symbols",
		"upstream_error", "pending",
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
		cmocka_unit_test(test_store_records),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
