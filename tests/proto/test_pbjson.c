/*
 * test_pbjson.c - the proto3 JSON mapping of proto/pbjson.c: exact JSON
 * for messages of every field type (pbjson_test.proto), round trips that
 * must give back the same packed bytes (that test message, and our
 * querier, push and OTLP messages, the OTLP one from the fuzz corpus),
 * both field-name styles, 64-bit integers as strings and numbers,
 * unknown fields, the hex hook, and each class of bad input with its
 * located message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "proto/pbjson.h"

#include "otlp_profiles_service.pb-c.h"
#include "pbjson_test.pb-c.h"
#include "pbjson_test2.pb-c.h"
#include "push.pb-c.h"
#include "querier.pb-c.h"
#include "types.pb-c.h"

#define ALL (&pbjsontest__all__descriptor)
#define OTLP_REQ (&opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor)

/* ---- helpers ---------------------------------------------------------------- */

/* OTLP's ids, and the test message's hex_id, are hex. */
static int hex_ids(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f,
		   void *ctx)
{
	(void)d;
	(void)ctx;
	return !strcmp(f->name, "trace_id") || !strcmp(f->name, "span_id") ||
	       !strcmp(f->name, "profile_id") || !strcmp(f->name, "hex_id");
}

static const struct pbjson_hooks hex_hooks = { hex_ids, NULL };

/* The JSON of m, NUL-terminated, owned by the caller. */
static char *enc(const ProtobufCMessage *m, const struct pbjson_hooks *h, unsigned flags)
{
	struct buf b;
	size_t n;
	int rc;

	buf_init(&b, 64 << 20);
	rc = pbjson_encode(m, h, flags, &b);
	if (rc)
		fail_msg("encode: %s", err_str(rc));
	if (!b.data)
		buf_putc(&b, 0);
	return buf_detach(&b, &n);
}

/* Decodes `json` (asserting success) into `a`. */
static ProtobufCMessage *dec(const ProtobufCMessageDescriptor *d, const char *json,
			     const struct pbjson_hooks *h, unsigned flags, struct arena *a)
{
	struct err_msg msg = { { 0 } };
	ProtobufCMessage *m = NULL;

	if (pbjson_decode(d, json, strlen(json), h, flags, a, &m, &msg))
		fail_msg("decode '%s': %s", json, msg.text);
	assert_non_null(m);
	return m;
}

/* Asserts that `json` fails with exactly `code` and `want`, leaving *out alone. */
static void dec_bad(const ProtobufCMessageDescriptor *d, const char *json, unsigned flags,
		    int code, const char *want)
{
	struct err_msg msg = { { 0 } };
	ProtobufCMessage *m = (ProtobufCMessage *)&msg;
	struct arena a;
	int rc;

	arena_init(&a, 1 << 20);
	rc = pbjson_decode(d, json, strlen(json), &hex_hooks, flags, &a, &m, &msg);
	if (rc != code || strcmp(msg.text, want))
		fail_msg("'%s': got %d \"%s\", want %d \"%s\"", json, rc, msg.text, code, want);
	assert_ptr_equal(m, (ProtobufCMessage *)&msg);
	arena_release(&a);
}

/* The packed bytes of m, owned by the caller. */
static uint8_t *pack(const ProtobufCMessage *m, size_t *n)
{
	uint8_t *p;

	*n = protobuf_c_message_get_packed_size(m);
	p = malloc(*n ? *n : 1);
	assert_non_null(p);
	assert_int_equal(protobuf_c_message_pack(m, p), *n);
	return p;
}

/*
 * message -> JSON -> message gives the same packed bytes, and the second
 * message writes the same JSON; under both flag settings.  Returns the
 * JSON of the first (flags 0), owned by the caller.
 */
static char *round_trip(const ProtobufCMessage *m, const struct pbjson_hooks *h)
{
	size_t n1, n2;
	uint8_t *p1 = pack(m, &n1);
	char *first = NULL;

	for (unsigned flags = 0; flags <= PBJSON_EMIT_DEFAULTS; flags += PBJSON_EMIT_DEFAULTS) {
		struct arena a;
		char *j1 = enc(m, h, flags), *j2;
		ProtobufCMessage *back;
		uint8_t *p2;

		arena_init(&a, 1 << 30);
		back = dec(m->descriptor, j1, h, 0, &a);
		p2 = pack(back, &n2);
		if (n1 != n2 || memcmp(p1, p2, n1))
			fail_msg("%s: packed bytes differ after %s", m->descriptor->name, j1);
		j2 = enc(back, h, flags);
		assert_string_equal(j1, j2);
		free(p2);
		free(j2);
		arena_release(&a);
		if (!first)
			first = j1;
		else
			free(j1);
	}
	free(p1);
	return first;
}

/* ---- every field type ------------------------------------------------------- */

static Pbjsontest__Inner inner_a = { PROTOBUF_C_MESSAGE_INIT(&pbjsontest__inner__descriptor),
				     "in", 2, (int64_t[]){ -1, INT64_MAX } };
static Pbjsontest__Inner inner_b = { PROTOBUF_C_MESSAGE_INIT(&pbjsontest__inner__descriptor),
				     (char *)"", 0, NULL };

/* A message with every field set to a value at some edge. */
static void fill_all(Pbjsontest__All *m)
{
	static Pbjsontest__Inner *inners[] = { &inner_a, &inner_b };
	static char *strs[] = { "", "a\"b\\c\n\x01\xc3\xa9", "\xf0\x9f\x98\x80" };
	static ProtobufCBinaryData bys[] = { { 0, NULL }, { 3, (uint8_t *)"\x00\xff\x10" } };
	static int32_t r_i32[] = { INT32_MIN, -1, 0, INT32_MAX };
	static int64_t r_s64[] = { INT64_MIN, 0, INT64_MAX };
	static uint64_t r_f64[] = { 0, UINT64_MAX };
	static float r_fl[] = { 0.1f, -0.0f, 3.4028235e38f, 1e-45f };
	static double r_db[] = { 0.1, -0.0, 1e21, 5e-324, 1.7976931348623157e308, 123456789.125 };
	static protobuf_c_boolean r_b[] = { 1, 0 };
	static Pbjsontest__Color r_color[] = { PBJSONTEST__COLOR__RED, PBJSONTEST__COLOR__NEGATIVE,
					       (Pbjsontest__Color)77 };
	static uint32_t unpacked[] = { 1, UINT32_MAX };

	pbjsontest__all__init(m);
	m->i32 = INT32_MIN;
	m->s32 = -5;
	m->sf32 = INT32_MAX;
	m->u32 = UINT32_MAX;
	m->f32 = 7;
	m->i64 = INT64_MIN;
	m->s64 = -9;
	m->sf64 = INT64_MAX;
	m->u64 = UINT64_MAX;
	m->f64 = 1;
	m->fl = -1.5f;
	m->db = -0.0;
	m->b = 1;
	m->str = "caf\xc3\xa9";
	m->by.data = (uint8_t *)"hello";
	m->by.len = 5;
	m->color = PBJSONTEST__COLOR__GREEN;
	m->inner = &inner_a;
	m->n_r_i32 = 4, m->r_i32 = r_i32;
	m->n_r_s64 = 3, m->r_s64 = r_s64;
	m->n_r_f64 = 2, m->r_f64 = r_f64;
	m->n_r_fl = 4, m->r_fl = r_fl;
	m->n_r_db = 6, m->r_db = r_db;
	m->n_r_b = 2, m->r_b = r_b;
	m->n_r_str = 3, m->r_str = strs;
	m->n_r_by = 2, m->r_by = bys;
	m->n_r_color = 3, m->r_color = r_color;
	m->n_r_inner = 2, m->r_inner = inners;
	m->n_unpacked = 2, m->unpacked = unpacked;
	m->choice_case = PBJSONTEST__ALL__CHOICE_C_I64;
	m->c_i64 = 0;
	m->hex_id.data = (uint8_t *)"\x01\xab";
	m->hex_id.len = 2;
	m->snake_case_name_2x = "s";
}

static void test_all_types(void **state)
{
	Pbjsontest__All m;
	char *j;
	(void)state;

	fill_all(&m);
	j = round_trip(&m.base, &hex_hooks);
	assert_string_equal(j,
		"{\"i32\":-2147483648,\"s32\":-5,\"sf32\":2147483647,\"u32\":4294967295,\"f32\":7,"
		"\"i64\":\"-9223372036854775808\",\"s64\":\"-9\",\"sf64\":\"9223372036854775807\","
		"\"u64\":\"18446744073709551615\",\"f64\":\"1\",\"fl\":-1.5,\"db\":-0,\"b\":true,"
		"\"str\":\"caf\xc3\xa9\",\"by\":\"aGVsbG8=\",\"color\":\"GREEN\","
		"\"inner\":{\"s\":\"in\",\"v\":[\"-1\",\"9223372036854775807\"]},"
		"\"rI32\":[-2147483648,-1,0,2147483647],"
		"\"rS64\":[\"-9223372036854775808\",\"0\",\"9223372036854775807\"],"
		"\"rF64\":[\"0\",\"18446744073709551615\"],"
		"\"rFl\":[0.1,-0,3.4028235e+38,1e-45],"
		"\"rDb\":[0.1,-0,1e+21,5e-324,1.7976931348623157e+308,123456789.125],"
		"\"rB\":[true,false],\"rStr\":[\"\",\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\",\"\xf0\x9f\x98\x80\"],"
		"\"rBy\":[\"\",\"AP8Q\"],\"rColor\":[\"RED\",\"NEGATIVE\",77],"
		"\"rInner\":[{\"s\":\"in\",\"v\":[\"-1\",\"9223372036854775807\"]},{}],"
		"\"unpacked\":[1,4294967295],\"cI64\":\"0\",\"hexId\":\"01ab\",\"snakeCaseName2x\":\"s\"}");
	free(j);
	/* Without the hook, bytes are base64 everywhere. */
	j = enc(&m.base, NULL, 0);
	assert_non_null(strstr(j, "\"hexId\":\"Aas=\""));
	free(j);
	/* The oneof's other members. */
	m.choice_case = PBJSONTEST__ALL__CHOICE_C_INNER;
	m.c_inner = &inner_b;
	j = round_trip(&m.base, &hex_hooks);
	assert_non_null(strstr(j, "\"cInner\":{}"));
	free(j);
	m.choice_case = PBJSONTEST__ALL__CHOICE_C_STR;
	m.c_str = "";
	j = round_trip(&m.base, &hex_hooks);
	assert_non_null(strstr(j, "\"cStr\":\"\""));
	free(j);
}

static void test_defaults(void **state)
{
	Pbjsontest__All m;
	char *j;
	(void)state;

	pbjsontest__all__init(&m);
	j = round_trip(&m.base, NULL);
	assert_string_equal(j, "{}");
	free(j);
	j = enc(&m.base, NULL, PBJSON_EMIT_DEFAULTS);
	assert_string_equal(j,
		"{\"i32\":0,\"s32\":0,\"sf32\":0,\"u32\":0,\"f32\":0,\"i64\":\"0\",\"s64\":\"0\","
		"\"sf64\":\"0\",\"u64\":\"0\",\"f64\":\"0\",\"fl\":0,\"db\":0,\"b\":false,\"str\":\"\","
		"\"by\":\"\",\"color\":\"COLOR_UNSPECIFIED\",\"inner\":null,\"rI32\":[],\"rS64\":[],"
		"\"rF64\":[],\"rFl\":[],\"rDb\":[],\"rB\":[],\"rStr\":[],\"rBy\":[],\"rColor\":[],"
		"\"rInner\":[],\"unpacked\":[],\"hexId\":\"\",\"snakeCaseName2x\":\"\"}");
	free(j);
}

/* NaN and the infinities, which JSON numbers cannot say. */
static void test_special_reals(void **state)
{
	Pbjsontest__All m;
	double db[] = { NAN, INFINITY, -INFINITY };
	float fl[] = { -INFINITY, NAN };
	struct arena a;
	Pbjsontest__All *back;
	char *j;
	(void)state;

	pbjsontest__all__init(&m);
	m.n_r_db = 3, m.r_db = db;
	m.n_r_fl = 2, m.r_fl = fl;
	m.db = INFINITY;
	j = round_trip(&m.base, NULL);
	assert_string_equal(j, "{\"db\":\"Infinity\",\"rFl\":[\"-Infinity\",\"NaN\"],"
			       "\"rDb\":[\"NaN\",\"Infinity\",\"-Infinity\"]}");
	free(j);
	arena_init(&a, 1 << 30);
	back = (Pbjsontest__All *)dec(ALL, "{\"db\":\"-0\",\"fl\":\"1.5\",\"rDb\":[\"1e3\",2.5e-1]}",
				       NULL, 0, &a);
	assert_true(back->db == 0 && signbit(back->db));
	assert_true(back->fl == 1.5f);
	assert_true(back->r_db[0] == 1000 && back->r_db[1] == 0.25);
	arena_release(&a);
}

/* proto2's explicit presence: has_ flags, defaults, required fields. */
static void test_proto2(void **state)
{
	Pbjsontest2__Legacy m, sub;
	struct arena a;
	Pbjsontest2__Legacy *back;
	char *j;
	(void)state;

	pbjsontest2__legacy__init(&m);
	m.r = "req";
	j = round_trip(&m.base, NULL);
	assert_string_equal(j, "{\"r\":\"req\"}");
	free(j);
	j = enc(&m.base, NULL, PBJSON_EMIT_DEFAULTS);
	assert_string_equal(j, "{\"r\":\"req\"}");
	free(j);
	pbjsontest2__legacy__init(&sub);
	sub.r = "";
	m.has_a = 1, m.a = 0;
	m.s = "";
	m.has_b = 1;
	m.m = &sub;
	m.has_d = 1, m.d = -0.0;
	j = round_trip(&m.base, NULL);
	assert_string_equal(j, "{\"a\":0,\"r\":\"req\",\"s\":\"\",\"b\":\"\",\"m\":{\"r\":\"\"},\"d\":-0}");
	free(j);
	arena_init(&a, 1 << 30);
	back = (Pbjsontest2__Legacy *)dec(&pbjsontest2__legacy__descriptor, "{\"r\":\"x\",\"a\":null}",
					  NULL, 0, &a);
	assert_int_equal(back->has_a, 0);
	assert_string_equal(back->s, "dflt");
	arena_release(&a);
	dec_bad(&pbjsontest2__legacy__descriptor, "{\"a\":1}", 0, ERR_INVALID,
		"Legacy: required field r is missing");
	dec_bad(&pbjsontest2__legacy__descriptor, "{\"r\":null}", 0, ERR_INVALID,
		"Legacy: required field r is null");
	dec_bad(&pbjsontest2__legacy__descriptor, "{\"r\":\"\",\"m\":{}}", 0, ERR_INVALID,
		"m: required field r is missing");
}

/* ---- decoding ---------------------------------------------------------------- */

static void test_names_and_numbers(void **state)
{
	static const char *const forms[] = {
		/* proto3 JSON names, 64-bit as strings */
		"{\"rI32\":[1],\"i64\":\"-5\",\"u64\":\"7\",\"snakeCaseName2x\":\"n\",\"cI64\":\"9\","
		"\"rInner\":[{\"v\":[\"1\"]}],\"color\":\"RED\"}",
		/* field names, 64-bit as numbers */
		"{\"r_i32\":[1],\"i64\":-5,\"u64\":7,\"snake_case_name_2x\":\"n\",\"c_i64\":9,"
		"\"r_inner\":[{\"v\":[1]}],\"color\":1}",
		/* integral spellings of every kind, both names mixed */
		"{\"rI32\":[\"1\"],\"i64\":-5.0,\"u64\":\"0.7e1\",\"snake_case_name_2x\":\"n\","
		"\"cI64\":9e0,\"r_inner\":[{\"v\":[\"1E0\"]}],\"color\":\"RED\"}",
	};
	char *want = NULL;
	(void)state;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct arena a;
		ProtobufCMessage *m;
		char *j;

		arena_init(&a, 1 << 30);
		m = dec(ALL, forms[i], NULL, 0, &a);
		j = enc(m, NULL, 0);
		if (!want)
			want = j;
		else
			assert_string_equal(j, want), free(j);
		arena_release(&a);
	}
	assert_string_equal(want, "{\"i64\":\"-5\",\"u64\":\"7\",\"color\":\"RED\",\"rI32\":[1],"
				  "\"rInner\":[{\"v\":[\"1\"]}],\"cI64\":\"9\",\"snakeCaseName2x\":\"n\"}");
	free(want);
}

static void test_nulls_unknown_and_bytes(void **state)
{
	struct arena a;
	Pbjsontest__All *m;
	(void)state;

	arena_init(&a, 1 << 30);
	/* null keeps the default, for every kind of field, and leaves a oneof unset. */
	m = (Pbjsontest__All *)dec(ALL, "{\"i32\":null,\"str\":null,\"inner\":null,\"rI32\":null,"
				       "\"cStr\":null,\"cI64\":\"4\",\"by\":null}", NULL, 0, &a);
	assert_int_equal(m->i32, 0);
	assert_string_equal(m->str, "");
	assert_null(m->inner);
	assert_int_equal(m->n_r_i32, 0);
	assert_int_equal(m->choice_case, PBJSONTEST__ALL__CHOICE_C_I64);
	assert_int_equal(m->c_i64, 4);
	/* Unknown members and enum names, when allowed. */
	m = (Pbjsontest__All *)dec(ALL, "{\"zz\":[1,{\"a\":null}],\"i32\":3,\"inner\":{\"q\":1},"
				       "\"color\":\"PURPLE\",\"rColor\":[\"RED\",\"PURPLE\",2]}",
				   NULL, PBJSON_IGNORE_UNKNOWN, &a);
	assert_int_equal(m->i32, 3);
	assert_non_null(m->inner);
	assert_int_equal(m->color, 0);
	assert_int_equal(m->n_r_color, 2);
	assert_int_equal(m->r_color[0], PBJSONTEST__COLOR__RED);
	assert_int_equal(m->r_color[1], PBJSONTEST__COLOR__GREEN);
	/* Enum numbers need not be named (proto3 enums are open). */
	m = (Pbjsontest__All *)dec(ALL, "{\"color\":-3,\"rColor\":[99]}", NULL, 0, &a);
	assert_int_equal(m->color, PBJSONTEST__COLOR__NEGATIVE);
	assert_int_equal(m->r_color[0], 99);
	/* base64: standard and URL-safe, padded or not; hex: either case. */
	m = (Pbjsontest__All *)dec(ALL, "{\"by\":\"-_8\",\"rBy\":[\"+/8=\",\"aGVsbG8\",\"\",\"aGV=\"],"
				       "\"hexId\":\"0aFF\"}", &hex_hooks, 0, &a);
	assert_int_equal(m->by.len, 2);
	assert_memory_equal(m->by.data, "\xfb\xff", 2);
	assert_int_equal(m->n_r_by, 4);
	assert_memory_equal(m->r_by[0].data, "\xfb\xff", 2);
	assert_int_equal(m->r_by[1].len, 5);
	assert_memory_equal(m->r_by[1].data, "hello", 5);
	assert_int_equal(m->r_by[2].len, 0);
	assert_int_equal(m->r_by[3].len, 2);
	assert_memory_equal(m->r_by[3].data, "he", 2);
	assert_int_equal(m->hex_id.len, 2);
	assert_memory_equal(m->hex_id.data, "\x0a\xff", 2);
	/* Strings are copies in the arena, UTF-8 as given. */
	m = (Pbjsontest__All *)dec(ALL, "{\"str\":\"caf\\u00e9 \xe2\x82\xac\"}", NULL, 0, &a);
	assert_string_equal(m->str, "caf\xc3\xa9 \xe2\x82\xac");
	arena_release(&a);
}

/* The two lookups for callers that read a tree before decoding it. */
static void test_field_names(void **state)
{
	const ProtobufCFieldDescriptor *f;
	char name[64], small[4];
	(void)state;

	f = pbjson_field(ALL, "snakeCaseName2x");
	assert_non_null(f);
	assert_ptr_equal(f, pbjson_field(ALL, "snake_case_name_2x"));
	assert_string_equal(pbjson_json_name(f, name, sizeof(name)), "snakeCaseName2x");
	assert_string_equal(pbjson_json_name(f, small, sizeof(small)), "sna");
	assert_null(pbjson_field(ALL, "SnakeCaseName2x"));
	assert_null(pbjson_field(ALL, "snakecasename2x"));
	assert_null(pbjson_field(ALL, ""));
	f = pbjson_field(&querier__v1__select_merge_stacktraces_request__descriptor, "profileTypeID");
	assert_non_null(f);
	assert_string_equal(f->name, "profile_typeID");
	f = pbjson_field(&types__v1__profile_type__descriptor, "ID");
	assert_non_null(f);
	assert_string_equal(pbjson_json_name(f, name, sizeof(name)), "ID");
}

static void test_decode_errors(void **state)
{
	static const struct {
		const char *json;
		const char *msg;
	} cases[] = {
		/* shape */
		{ "[]", "All: not an object (got an array)" },
		{ "{\"inner\":[]}", "inner: not an object (got an array)" },
		{ "{\"rI32\":{}}", "rI32: not an array (got an object)" },
		{ "{\"rI32\":[1,null]}", "rI32[1]: null in a repeated field" },
		{ "{\"rInner\":[{},{\"v\":[1,\"x\"]}]}", "rInner[1].v[1]: not an integer: \"x\"" },
		{ "{\"zz\":1}", "zz: no such field in All" },
		{ "{\"inner\":{\"v\":[],\"Vv\":1}}", "inner.Vv: no such field in Inner" },
		{ "{\"rI32\":[],\"r_i32\":[]}", "All: field rI32 given twice (as \"rI32\" and \"r_i32\")" },
		{ "{\"cStr\":\"a\",\"c_i64\":1}", "All: both cStr and cI64 set (a oneof)" },
		{ "{\"inner\":{\"s\":1}}", "inner.s: not a string (got a number)" },
		{ "{\"b\":\"true\"}", "b: not a boolean (got a string)" },
		{ "{\"b\":1}", "b: not a boolean (got a number)" },
		{ "{\"color\":\"PURPLE\"}", "color: \"PURPLE\" is not a value of pbjsontest.Color" },
		{ "{\"color\":true}", "color: not an enum name or number (got a boolean)" },
		{ "{\"color\":1.5}", "color: not an integer: \"1.5\"" },
		/* integers */
		{ "{\"i32\":2147483648}", "i32: 2147483648 is out of range for int32" },
		{ "{\"s32\":\"-2147483649\"}", "s32: -2147483649 is out of range for int32" },
		{ "{\"u32\":4294967296}", "u32: 4294967296 is out of range for uint32" },
		{ "{\"f32\":-1}", "f32: -1 is negative (want an unsigned integer)" },
		{ "{\"i64\":\"9223372036854775808\"}", "i64: 9223372036854775808 is out of range for int64" },
		{ "{\"u64\":\"18446744073709551616\"}",
		  "u64: 18446744073709551616 is out of range for a 64-bit integer" },
		{ "{\"i64\":1.5}", "i64: not an integer: \"1.5\"" },
		{ "{\"i64\":\" 1\"}", "i64: not an integer: \" 1\"" },
		{ "{\"i64\":true}", "i64: not an integer (want a number or a decimal string, got a boolean)" },
		/* reals */
		{ "{\"fl\":1e39}", "fl: 1e39 is out of range for float" },
		{ "{\"db\":1e309}", "db: 1e309 is out of range for a double" },
		{ "{\"db\":\"nan\"}", "db: not a number: \"nan\"" },
		{ "{\"rDb\":[1,[]]}",
		  "rDb[1]: not a number (want a number or a numeric string, got an array)" },
		/* bytes */
		{ "{\"by\":\"a\"}", "by: not base64" },
		{ "{\"by\":\"aG!s\"}", "by: not base64" },
		{ "{\"rBy\":[\"\",\"aGVsbG8===\"]}", "rBy[1]: not base64" },
		{ "{\"by\":\"aG==x\"}", "by: not base64" },
		{ "{\"by\":\"aGVsbG8=x\"}", "by: not base64" },
		{ "{\"by\":5}", "by: not a base64 string (got a number)" },
		{ "{\"hexId\":\"abc\"}", "hexId: odd number of hex digits" },
		{ "{\"hexId\":\"zz\"}", "hexId: not hex: \"zz\"" },
		{ "{\"hexId\":[]}", "hexId: not a hex string (got an array)" },
		/* the reader's own errors */
		{ "{\"i32\":1", "json: at byte 8: unexpected end of input" },
		{ "{\"str\":\"\xff\"}", "json: at byte 8: invalid UTF-8: byte 0xff" },
		{ "{\"i32\":1,\"i32\":2}", "json: at byte 9: duplicate key \"i32\"" },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		dec_bad(ALL, cases[i].json, 0, ERR_INVALID, cases[i].msg);
	/* Under IGNORE_UNKNOWN the fields that are known are still checked. */
	dec_bad(ALL, "{\"zz\":1,\"i32\":\"x\"}", PBJSON_IGNORE_UNKNOWN, ERR_INVALID,
		"i32: not an integer: \"x\"");
}

/* Every truncated prefix of a request fails with the reader's end-of-input error. */
static void test_truncated(void **state)
{
	Pbjsontest__All m;
	char *j;
	size_t len;
	(void)state;

	fill_all(&m);
	j = enc(&m.base, &hex_hooks, 0);
	len = strlen(j);
	for (size_t cut = 0; cut < len; cut++) {
		char want[64];
		char *p = strndup(j, cut);

		assert_non_null(p);
		snprintf(want, sizeof(want), "json: at byte %zu: unexpected end of input", cut);
		dec_bad(ALL, p, 0, ERR_INVALID, want);
		free(p);
	}
	free(j);
}

static void test_memory(void **state)
{
	Pbjsontest__All m;
	struct err_msg msg = { { 0 } };
	ProtobufCMessage *out = NULL;
	struct arena a;
	struct buf b;
	char *j;
	int rc;
	(void)state;

	fill_all(&m);
	j = enc(&m.base, &hex_hooks, 0);
	/* An arena too small for the tree: the reader's ERR_TOO_LARGE. */
	arena_init(&a, 2048);
	rc = pbjson_decode(ALL, j, strlen(j), &hex_hooks, 0, &a, &out, &msg);
	assert_int_equal(rc, ERR_TOO_LARGE);
	assert_null(out);
	assert_non_null(strstr(msg.text, "json: "));
	assert_non_null(strstr(msg.text, " more bytes of memory needed, "));
	arena_release(&a);
	/* A tree parsed apart, and an arena too small for the message: located. */
	{
		struct arena t;
		struct json_value *v;

		arena_init(&t, 1 << 30);
		assert_int_equal(json_parse(j, strlen(j), &t, &v, NULL), 0);
		arena_init(&a, 400);
		err_clear(&msg);
		rc = pbjson_decode_value(ALL, v, &hex_hooks, 0, &a, &out, &msg);
		assert_int_equal(rc, ERR_TOO_LARGE);
		assert_null(out);
		assert_string_equal(msg.text,
				    "inner: the message needs more than the 400 bytes of memory allowed");
		arena_release(&a);
		arena_release(&t);
	}
	/* An arena with nothing left. */
	arena_init(&a, 1024);
	assert_non_null(arena_alloc(&a, 1024));
	err_clear(&msg);
	assert_int_equal(pbjson_decode(ALL, j, strlen(j), NULL, 0, &a, &out, &msg), ERR_TOO_LARGE);
	assert_string_equal(msg.text, "All: no memory left to decode into");
	arena_release(&a);
	/* A buffer cap: ERR_TOO_LARGE, and the buffer as it was. */
	buf_init(&b, 100);
	assert_int_equal(buf_puts(&b, "keep"), 0);
	assert_int_equal(pbjson_encode(&m.base, NULL, 0, &b), ERR_TOO_LARGE);
	assert_int_equal(b.len, 4);
	assert_string_equal(b.data, "keep");
	buf_release(&b);
	free(j);
}

/* A string that is not UTF-8 (protobuf-c does not check) is written with U+FFFD. */
static void test_encode_bad_utf8(void **state)
{
	Pbjsontest__All m;
	char *j;
	(void)state;

	pbjsontest__all__init(&m);
	m.str = "a\xff" "b\xc3" "c\xe2\x82\xac\xed\xa0\x80";
	j = enc(&m.base, NULL, 0);
	assert_string_equal(j, "{\"str\":\"a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xe2\x82\xac"
			       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"}");
	free(j);
}

/* ---- our messages ------------------------------------------------------------- */

static void test_querier(void **state)
{
	Querier__V1__SelectMergeStacktracesRequest req = QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	Querier__V1__DiffRequest diff = QUERIER__V1__DIFF_REQUEST__INIT;
	int64_t v0[] = { 0, 100, 0, 0 }, v1[] = { 0, 60, 10, 1, 0, 40, 40, 2 };
	Querier__V1__Level l0 = QUERIER__V1__LEVEL__INIT, l1 = QUERIER__V1__LEVEL__INIT;
	Querier__V1__Level *levels[] = { &l0, &l1 };
	Querier__V1__FlameGraph fg = QUERIER__V1__FLAME_GRAPH__INIT;
	Querier__V1__SelectMergeStacktracesResponse resp =
		QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
	char *names[] = { "total", "main", "f\xc3\xa9" };
	Types__V1__ProfileType pt = TYPES__V1__PROFILE_TYPE__INIT, *pts[] = { &pt };
	Querier__V1__ProfileTypesResponse ptr = QUERIER__V1__PROFILE_TYPES_RESPONSE__INIT;
	Types__V1__Point p0 = TYPES__V1__POINT__INIT, p1 = TYPES__V1__POINT__INIT;
	Types__V1__Point *points[] = { &p0, &p1 };
	Types__V1__LabelPair lp = TYPES__V1__LABEL_PAIR__INIT, *lps[] = { &lp };
	Types__V1__Series s = TYPES__V1__SERIES__INIT, *ss[] = { &s };
	Querier__V1__SelectSeriesResponse ssr = QUERIER__V1__SELECT_SERIES_RESPONSE__INIT;
	char *j;
	(void)state;

	req.profile_typeid = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
	req.label_selector = "{service_name=\"a\"}";
	req.start = 1700000000000;
	req.end = 1700000360000;
	req.max_nodes = 1024;
	j = round_trip(&req.base, NULL);
	assert_string_equal(j, "{\"profileTypeID\":\"process_cpu:cpu:nanoseconds:cpu:nanoseconds\","
			       "\"labelSelector\":\"{service_name=\\\"a\\\"}\",\"start\":\"1700000000000\","
			       "\"end\":\"1700000360000\",\"maxNodes\":\"1024\"}");
	free(j);
	diff.left = &req;
	diff.right = &req;
	free(round_trip(&diff.base, NULL));
	l0.n_values = 4, l0.values = v0;
	l1.n_values = 8, l1.values = v1;
	fg.n_names = 3, fg.names = names;
	fg.n_levels = 2, fg.levels = levels;
	fg.total = 100;
	fg.max_self = 60;
	resp.flamegraph = &fg;
	j = round_trip(&resp.base, NULL);
	assert_string_equal(j, "{\"flamegraph\":{\"names\":[\"total\",\"main\",\"f\xc3\xa9\"],"
			       "\"levels\":[{\"values\":[\"0\",\"100\",\"0\",\"0\"]},"
			       "{\"values\":[\"0\",\"60\",\"10\",\"1\",\"0\",\"40\",\"40\",\"2\"]}],"
			       "\"total\":\"100\",\"maxSelf\":\"60\"}}");
	free(j);
	pt.id = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
	pt.name = "process_cpu";
	pt.sample_type = "cpu";
	ptr.n_profile_types = 1, ptr.profile_types = pts;
	j = round_trip(&ptr.base, NULL);
	assert_string_equal(j, "{\"profileTypes\":[{\"ID\":\"process_cpu:cpu:nanoseconds:cpu:"
			       "nanoseconds\",\"name\":\"process_cpu\",\"sampleType\":\"cpu\"}]}");
	free(j);
	p0.value = 0.5, p0.timestamp = 1700000000000;
	p1.value = 1e-7, p1.timestamp = 1700000015000;
	lp.name = "service_name", lp.value = "a";
	s.n_labels = 1, s.labels = lps;
	s.n_points = 2, s.points = points;
	ssr.n_series = 1, ssr.series = ss;
	j = round_trip(&ssr.base, NULL);
	assert_string_equal(j, "{\"series\":[{\"labels\":[{\"name\":\"service_name\",\"value\":\"a\"}],"
			       "\"points\":[{\"value\":0.5,\"timestamp\":\"1700000000000\"},"
			       "{\"value\":1e-07,\"timestamp\":\"1700000015000\"}]}]}");
	free(j);
}

static void test_push(void **state)
{
	Push__V1__LabelPair l1 = PUSH__V1__LABEL_PAIR__INIT, l2 = PUSH__V1__LABEL_PAIR__INIT;
	Push__V1__LabelPair *lp[] = { &l1, &l2 };
	Push__V1__RawSample rs = PUSH__V1__RAW_SAMPLE__INIT, *rsp[] = { &rs, &rs };
	Push__V1__RawProfileSeries ser = PUSH__V1__RAW_PROFILE_SERIES__INIT, *serp[] = { &ser };
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	uint8_t raw[256];
	char *j;
	(void)state;

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7);
	l1.name = "__name__", l1.value = "process_cpu";
	l2.name = "service_name", l2.value = "svc";
	rs.raw_profile.data = raw, rs.raw_profile.len = sizeof(raw);
	rs.id = "0b6bbd3e-8b5c-4e4e-a1a0-1c5e5e5e5e5e";
	ser.n_labels = 2, ser.labels = lp;
	ser.n_samples = 2, ser.samples = rsp;
	req.n_series = 1, req.series = serp;
	j = round_trip(&req.base, NULL);
	assert_non_null(strstr(j, "{\"series\":[{\"labels\":[{\"name\":\"__name__\",\"value\":"
				  "\"process_cpu\"},{\"name\":\"service_name\",\"value\":\"svc\"}],"
				  "\"samples\":[{\"rawProfile\":\"AAcOFRwjKjE4P0ZN"));
	assert_non_null(strstr(j, "\",\"ID\":\"0b6bbd3e-8b5c-4e4e-a1a0-1c5e5e5e5e5e\"}"));
	free(j);
}

static void test_otlp(void **state)
{
	FILE *fp = fopen(UNHEX_OTLP_CORPUS "/ebpf_like.bin", "rb");
	uint8_t *p = malloc(1 << 20);
	ProtobufCAllocator al;
	ProtobufCMessage *r;
	struct arena a;
	size_t len;
	char *j;
	(void)state;

	assert_non_null(fp);
	assert_non_null(p);
	len = fread(p, 1, 1 << 20, fp);
	fclose(fp);
	arena_init(&a, 1 << 30);
	pbjson_arena_allocator(&a, &al);
	r = protobuf_c_message_unpack(OTLP_REQ, &al, len, p);
	assert_non_null(r);
	j = round_trip(r, &hex_hooks);
	assert_non_null(strstr(j, "{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{\"key\":"));
	assert_non_null(strstr(j, "\"timeUnixNano\":\"1700000000000000000\""));
	free(j);
	/* OTLP/JSON's spelling: hex ids, both names, 64-bit numbers. */
	{
		ProtobufCMessage *m = dec(OTLP_REQ,
			"{\"dictionary\":{\"link_table\":[{},{\"traceId\":\"0102030405060708090A0B0C0D0E0F10\","
			"\"span_id\":\"0102030405060708\"}],\"stringTable\":[\"\"]},"
			"\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"profileId\":"
			"\"000102030405060708090a0b0c0d0e0f\",\"time_unix_nano\":1700000000000000000,"
			"\"samples\":[{\"values\":[\"3\",4],\"timestampsUnixNano\":[\"1\"]}]}]}]}]}",
			&hex_hooks, 0, &a);

		j = enc(m, &hex_hooks, 0);
		assert_string_equal(j,
			"{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"samples\":[{"
			"\"values\":[\"3\",\"4\"],\"timestampsUnixNano\":[\"1\"]}],"
			"\"timeUnixNano\":\"1700000000000000000\","
			"\"profileId\":\"000102030405060708090a0b0c0d0e0f\"}]}]}],"
			"\"dictionary\":{\"linkTable\":[{},{\"traceId\":\"0102030405060708090a0b0c0d0e0f10\","
			"\"spanId\":\"0102030405060708\"}],\"stringTable\":[\"\"]}}");
		free(j);
	}
	arena_release(&a);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_types),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_special_reals),
		cmocka_unit_test(test_proto2),
		cmocka_unit_test(test_names_and_numbers),
		cmocka_unit_test(test_nulls_unknown_and_bytes),
		cmocka_unit_test(test_field_names),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_encode_bad_utf8),
		cmocka_unit_test(test_querier),
		cmocka_unit_test(test_push),
		cmocka_unit_test(test_otlp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
