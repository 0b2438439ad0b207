/* test_pprof.c - pprof decoding, validation and conversion, without a store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/compress.h"
#include "base/err.h"
#include "ingest/ingest_int.h"
#include "pprof_builder.h"

static const struct store_label base_labels[] = {
	{ "service_name", "app" },
	{ "__name__", "process_cpu" },
};

struct run {
	struct arena a;
	struct ingest_pprof pp;
	struct err_msg msg;
	int rc;
};

/* Converts request bytes `p` with `labels`; the caller calls done(). */
static int convert_bytes(struct run *r, const void *p, size_t len,
			 const struct ingest_limits *lim, const struct store_label *labels, size_t n)
{
	struct ingest_limits def;
	struct ingest_defaults d = { 1000, 0, NULL };
	struct ingest_series s = { labels, n, p, len, NULL, NULL };

	if (!lim) {
		ingest_limits_default(&def);
		lim = &def;
	}
	arena_init(&r->a, 1 << 30);
	err_clear(&r->msg);
	memset(&r->pp, 0, sizeof(r->pp));
	r->rc = ingest__convert(&r->a, lim, &s, &d, &r->pp, &r->msg);
	return r->rc;
}

/* Converts the builder's profile with `labels`; the caller calls done(). */
static void convert_labels(struct run *r, struct pb *b, int gz, const struct ingest_limits *lim,
			   const struct store_label *labels, size_t n)
{
	size_t len;
	uint8_t *bytes = pb_pack(b, gz, &len);

	convert_bytes(r, bytes, len, lim, labels, n);
	free(bytes);
}

static void convert(struct run *r, struct pb *b, int gz, const struct ingest_limits *lim)
{
	convert_labels(r, b, gz, lim, base_labels, 2);
}

static void done(struct run *r)
{
	arena_release(&r->a);
}

/* Expects conversion with `labels` to fail with `code` and a message
 * containing `needle`; frees `b`. */
static void expect_fail_labels(struct pb *b, const struct ingest_limits *lim,
			       const struct store_label *labels, size_t n, int code,
			       const char *needle)
{
	struct run r;

	convert_labels(&r, b, 0, lim, labels, n);
	if (r.rc != code || !strstr(r.msg.text, needle))
		fail_msg("want %d '%s', got %d '%s'", code, needle, r.rc, r.msg.text);
	done(&r);
	pb_free(b);
}

static void expect_fail(struct pb *b, const struct ingest_limits *lim, int code,
			const char *needle)
{
	expect_fail_labels(b, lim, base_labels, 2, code, needle);
}

static void test_native(void **state)
{
	struct pb *b = pb_native_profile();
	struct run r;
	(void)state;

	for (int gz = 0; gz < 2; gz++) {
		convert(&r, b, gz, NULL);
		assert_int_equal(r.rc, 0);
		assert_int_equal(r.pp.n_types, 2);
		assert_string_equal(r.pp.profile_types[0],
				    "process_cpu:samples:count:cpu:nanoseconds");
		assert_string_equal(r.pp.profile_types[1],
				    "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
		assert_string_equal(r.pp.service, "app");
		assert_int_equal(r.pp.n_mappings, 2);
		assert_string_equal(r.pp.mappings[0].build_id, "abcdef0123");
		assert_string_equal(r.pp.mappings[1].build_id, "abcdef0123");
		/* Same instruction, different load addresses: same stored address. */
		assert_int_equal(r.pp.locations[0].address, 0x1100);
		assert_int_equal(r.pp.locations[1].address, 0x1100);
		assert_int_equal(r.pp.locations[2].address, 0x1200);
		assert_int_equal(r.pp.locations[0].mapping, 1);
		assert_int_equal(r.pp.locations[1].mapping, 2);
		assert_int_equal(r.pp.n_samples, 3);
		assert_int_equal(r.pp.sample_off[3], 5);
		assert_int_equal(r.pp.stack_locs[0], 0);
		assert_int_equal(r.pp.stack_locs[1], 2);
		assert_int_equal(r.pp.values[1], 20000000);
		assert_int_equal(r.pp.time_ns, 1700000000000000000);
		assert_int_equal(r.pp.duration_ns, 10000000000);
		assert_int_equal(r.pp.period, 10000000);
		assert_int_equal(r.pp.n_groups, 1);
		done(&r);
	}
	pb_free(b);
}

/* A Go heap profile: symbolized locations, four sample types, no __name__
 * in the request (derived from the first sample type). */
static void test_go_functions(void **state)
{
	struct pb *b = pb_new(4, 4);
	static const struct store_label labels[] = { { "service_name", "goapp" } };
	uint64_t s1[] = { 1, 2 };
	int64_t v[] = { 1, 512, 1, 512 };
	struct run r;
	(void)state;

	pb_sample_type(b, "alloc_objects", "count");
	pb_sample_type(b, "alloc_space", "bytes");
	pb_sample_type(b, "inuse_objects", "count");
	pb_sample_type(b, "inuse_space", "bytes");
	pb_period(b, "space", "bytes", 524288);
	pb_mapping(b, 1, 0x400000, 0x800000, 0, "/app", "go-build-id/xyz")->has_functions = 1;
	pb_function(b, 1, "main.alloc", "/src/main.go");
	pb_function(b, 2, "main.main", "/src/main.go");
	pb_location(b, 1, 1, 0x401000, 1, 12);
	pb_location(b, 2, 1, 0x402000, 2, 30);
	pb_sample(b, s1, 2, v, 4);
	convert_labels(&r, b, 1, NULL, labels, 1);
	assert_int_equal(r.rc, 0);
	/* Pyroscope's name for a heap profile (ingest__metric_name). */
	assert_string_equal(r.pp.profile_types[1], "memory:alloc_space:bytes:space:bytes");
	assert_string_equal(ingest__label_get(r.pp.labels, r.pp.n_labels, "__name__"), "memory");
	assert_string_equal(r.pp.mappings[0].build_id, "go-build-id/xyz");
	assert_true(r.pp.mappings[0].flags & STORE_MAP_HAS_FUNCTIONS);
	assert_int_equal(r.pp.n_functions, 2);
	assert_string_equal(r.pp.functions[0].name, "main.alloc");
	assert_string_equal(r.pp.functions[0].filename, "/src/main.go");
	assert_int_equal(r.pp.locations[0].n_lines, 1);
	assert_int_equal(r.pp.locations[0].lines[0].function, 1);
	assert_int_equal(r.pp.locations[0].lines[0].line, 12);
	assert_int_equal(r.pp.locations[1].address, 0x2000);
	/* No time in the pprof: the default. */
	assert_int_equal(r.pp.time_ns, 1000);
	done(&r);
	pb_free(b);

	/* A CPU profile without __name__ is process_cpu. */
	b = pb_native_profile();
	convert_labels(&r, b, 0, NULL, labels, 1);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.pp.profile_types[0], "process_cpu:samples:count:cpu:nanoseconds");
	done(&r);
	/* Without a period type Pyroscope leaves its parts empty; the name
	 * still comes from the sample types ("samples" displays as cpu). */
	b->p.period_type = NULL;
	convert_labels(&r, b, 0, NULL, labels, 1);
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.pp.profile_types[1], "process_cpu:cpu:nanoseconds::");
	done(&r);
	pb_free(b);
}

/* Java/Python style: locations without mapping or address, only lines. */
static void test_symbolized_no_mapping(void **state)
{
	struct pb *b = pb_new(4, 4);
	uint64_t s1[] = { 10, 20 };
	int64_t v[] = { 7 };
	struct run r;
	(void)state;

	pb_sample_type(b, "cpu", "nanoseconds");
	pb_function(b, 5, "com.Foo.bar", "Foo.java");
	pb_function(b, 6, "com.Foo.main", "Foo.java");
	pb_location(b, 10, 0, 0, 5, 3);
	pb_location(b, 20, 0, 0, 6, 9);
	pb_sample(b, s1, 2, v, 1);
	convert(&r, b, 0, NULL);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.pp.locations[0].mapping, 0);
	assert_int_equal(r.pp.locations[0].address, 0);
	assert_int_equal(r.pp.locations[1].lines[0].function, 2);
	done(&r);
	pb_free(b);
}

/* Sparse ids (addresses as ids) go through the hash map. */
static void test_sparse_ids(void **state)
{
	struct pb *b = pb_new(4, 4);
	uint64_t s1[] = { 0x7f0000001234, 0x7f0000005678 };
	int64_t v[] = { 1 };
	struct run r;
	(void)state;

	pb_sample_type(b, "samples", "count");
	pb_mapping(b, 0x400000, 0x400000, 0x500000, 0, "/bin/x", "");
	pb_location(b, 0x7f0000001234, 0x400000, 0x400010, 0, 0);
	pb_location(b, 0x7f0000005678, 0, 0x1234, 0, 0);
	pb_sample(b, s1, 2, v, 1);
	convert(&r, b, 0, NULL);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.pp.locations[0].address, 0x10);
	assert_int_equal(r.pp.locations[1].address, 0x1234);
	assert_int_equal(r.pp.stack_locs[1], 1);
	done(&r);
	/* An unknown sparse id. */
	b->smp[0].location_id[1] = 0x7f0000009999;
	expect_fail(b, NULL, ERR_INVALID, "sample 0: location_id 139637976766873 not found");
}

static void test_fake_mapping(void **state)
{
	struct pb *b = pb_new(4, 4);
	uint64_t s1[] = { 1 };
	int64_t v[] = { 1 };
	struct run r;
	(void)state;

	pb_sample_type(b, "samples", "count");
	pb_mapping(b, 1, 0, 0, 0, "[kernel]", "");
	pb_location(b, 1, 1, 0xffffffff81000000, 0, 0);
	pb_sample(b, s1, 1, v, 1);
	convert(&r, b, 0, NULL);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.pp.locations[0].address, 0xffffffff81000000);
	done(&r);
	pb_free(b);
}

static void test_sample_labels(void **state)
{
	struct pb *b = pb_new(8, 4);
	uint64_t s1[] = { 1 };
	int64_t v[] = { 1 };
	PbSample *s;
	struct run r;
	(void)state;

	pb_sample_type(b, "samples", "count");
	pb_location(b, 1, 0, 0x10, 0, 0);
	pb_sample(b, s1, 1, v, 1);                     /* group 0 */
	s = pb_sample(b, s1, 1, v, 1);                 /* {endpoint=/a, region=eu} */
	pb_label(b, s, "region", "eu", 0);
	pb_label(b, s, "endpoint", "/a", 0);
	s = pb_sample(b, s1, 1, v, 1);                 /* same set, other order */
	pb_label(b, s, "endpoint", "/a", 0);
	pb_label(b, s, "region", "eu", 0);
	pb_label(b, s, "bytes", NULL, 100);            /* numeric: ignored */
	s = pb_sample(b, s1, 1, v, 1);                 /* {endpoint=/b} + ignored span */
	pb_label(b, s, "endpoint", "/b", 0);
	pb_label(b, s, "span_id", "abc", 0);
	convert(&r, b, 0, NULL);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.pp.n_groups, 3);
	assert_int_equal(r.pp.sample_group[0], 0);
	assert_int_equal(r.pp.sample_group[1], 1);
	assert_int_equal(r.pp.sample_group[2], 1);
	assert_int_equal(r.pp.sample_group[3], 2);
	assert_int_equal(r.pp.groups[1].n_labels, 2);
	assert_string_equal(r.pp.groups[1].labels[0].name, "endpoint");
	assert_string_equal(r.pp.groups[1].labels[1].value, "eu");
	assert_int_equal(r.pp.groups[2].n_labels, 1);
	done(&r);
	pb_free(b);
}

/* ---- validation: one failing case per rule ------------------------------ */

static struct pb *minimal(void)
{
	struct pb *b = pb_new(8, 8);
	uint64_t s1[] = { 1 };
	int64_t v[] = { 1 };

	pb_sample_type(b, "samples", "count");
	pb_mapping(b, 1, 0x1000, 0x2000, 0, "/bin/x", "");
	pb_function(b, 1, "f", "f.c");
	pb_location(b, 1, 1, 0x1010, 1, 1);
	pb_sample(b, s1, 1, v, 1);
	return b;
}

/*
 * Breaks rule `i` of minimal() in `b` (a limit rule lowers `lim` instead or
 * as well) and returns the message the decoder must give, with *code; NULL
 * past the last rule: each case reads as its cause next to its effect.
 */
static const char *break_rule(int i, struct pb *b, struct ingest_limits *lim, int *code)
{
	static int64_t comments[] = { 0, 77 };
	char long_id[600];

	*code = ERR_INVALID;
	switch (i) {
	case 0: free(b->strings[0]);
		b->strings[0] = strdup("x");
		return "string_table[0] must be \"\"";
	case 1: b->p.n_string_table = 0; return "string_table is empty";
	case 2: b->p.n_sample_type = 0; return "no sample_type";
	case 3: b->st[0].unit = 99; return "sample_type 0: unit: string index 99 out of range";
	case 4: pb_sample_type(b, "samples", "count");
		return "sample_type 1: duplicate of sample_type 0";
	case 5: pb_period(b, "cpu", "nanoseconds", 1);
		b->period_type.type = -1;
		return "period_type: type: string index -1 out of range";
	case 6: b->p.default_sample_type = 50; return "default_sample_type: string index 50";
	case 7: b->p.drop_frames = 50; return "drop_frames: string index 50";
	case 8: b->p.keep_frames = 50; return "keep_frames: string index 50";
	case 9: b->p.comment = comments;
		b->p.n_comment = 2;
		return "comment 1: text: string index 77";
	case 10: b->p.time_nanos = -5; return "time_nanos -5 is negative";
	case 11: b->maps[0].id = 0; return "mapping 0: id is 0";
	case 12: pb_mapping(b, 1, 0, 0, 0, "", ""); return "mapping 1: id 1 is not unique";
	case 13: b->maps[0].filename = 1000;
		return "mapping 0: filename: string index 1000 out of range";
	case 14: b->maps[0].build_id = 1000; return "mapping 0: build_id: string index 1000";
	case 15: memset(long_id, 'a', sizeof(long_id) - 1);
		long_id[sizeof(long_id) - 1] = '\0';
		b->maps[0].build_id = pb_str(b, long_id);
		return "mapping 0: build_id longer than 256 bytes";
	case 16: b->fns[0].id = 0; return "function 0: id is 0";
	case 17: pb_function(b, 1, "g", "g.c"); return "function 1: id 1 is not unique";
	case 18: b->fns[0].name = 555; return "function 0: name: string index 555";
	case 19: b->fns[0].system_name = 555; return "function 0: system_name: string index 555";
	case 20: b->fns[0].filename = 555; return "function 0: filename: string index 555";
	case 21: b->locs[0].id = 0; return "location 0: id is 0";
	case 22: pb_location(b, 1, 0, 0, 0, 0); return "location 1: id 1 is not unique";
	case 23: b->locs[0].mapping_id = 9; return "location 0: mapping_id 9 not found";
	case 24: b->locs[0].address = 0x10;
		return "location 0: address 0x10 below mapping 1 start 0x1000";
	case 25: b->maps[0].file_offset = UINT64_MAX;
		return "location 0: address 0x1010 overflows";
	case 26: b->lines[0].function_id = 42;
		return "location 0: line 0: function_id 42 not found";
	case 27: b->smp[0].location_id[0] = 99; return "sample 0: location_id 99 not found";
	case 28: b->smp[0].n_value = 2; return "sample 0: 2 values, want 1";
	case 29: pb_label(b, &b->smp[0], "k", "v", 3);
		return "sample 0: label 'k' has both str and num";
	case 30: pb_label(b, &b->smp[0], "k", "v", 0)->key = 999;
		return "sample 0: label 0: key: string index 999";
	case 31: pb_label(b, &b->smp[0], "k", "v", 0)->str = 999;
		return "sample 0: label 0: str: string index 999";
	case 32: pb_label(b, &b->smp[0], "k", NULL, 1)->num_unit = 999;
		return "sample 0: label 0: num_unit: string index 999";
	case 33: pb_label(b, &b->smp[0], "bad-name", "v", 0);
		return "sample 0: label name 'bad-name' is invalid";
	case 34: pb_label(b, &b->smp[0], "service_name", "other", 0);
		return "sample 0: label 'service_name' may not be set";
	case 35: pb_label(b, &b->smp[0], "k", "v", 0);
		pb_label(b, &b->smp[0], "k", "w", 0);
		return "sample 0: label 'k' given twice";
	}
	*code = ERR_TOO_LARGE;
	switch (i) {
	case 36: lim->max_label_bytes = 40;
		pb_label(b, &b->smp[0], "k", "a value that is longer than forty bytes, surely", 0);
		return "sample 0: label 'k': value longer than 40 bytes";
	case 37: lim->max_labels = 4; /* service_name, __name__, __profile_type__ + one */
		pb_label(b, &b->smp[0], "a", "1", 0);
		pb_label(b, &b->smp[0], "b", "2", 0);
		return "sample 0: 5 series labels, more than the limit of 4";
	case 38: lim->max_samples = 1;
		pb_sample(b, (uint64_t[]){ 1 }, 1, (int64_t[]){ 1 }, 1);
		return "2 samples, more than the limit of 1";
	case 39: lim->max_stack_depth = 2;
		pb_sample(b, (uint64_t[]){ 1, 1, 1 }, 3, (int64_t[]){ 1 }, 1);
		return "sample 1: stack depth 3 exceeds the limit of 2";
	case 40: lim->max_decompressed_bytes = 10; return "exceeds the limit of 10";
	}
	return NULL;
}

static void test_validation(void **state)
{
	int i, code, n = 0;
	(void)state;

	for (i = 0;; i++) {
		struct ingest_limits lim;
		struct pb *b = minimal();
		const char *want;

		ingest_limits_default(&lim);
		want = break_rule(i, b, &lim, &code);
		if (!want) {
			pb_free(b);
			break;
		}
		expect_fail(b, &lim, code, want);
		n++;
	}
	assert_int_equal(n, 41);
}

static void expect_label_fail(const struct store_label *labels, size_t n, int code,
			      const char *needle)
{
	expect_fail_labels(minimal(), NULL, labels, n, code, needle);
}

static void test_request_labels(void **state)
{
	(void)state;
	expect_label_fail((struct store_label[]){ { "env", "x" } }, 1, ERR_INVALID,
			  "label 'service_name' is required");
	expect_label_fail((struct store_label[]){ { "service_name", "" } }, 1, ERR_INVALID,
			  "label 'service_name' is required");
	expect_label_fail((struct store_label[]){ { "service_name", "a" }, { "9x", "b" } }, 2,
			  ERR_INVALID, "label name '9x' is invalid");
	expect_label_fail((struct store_label[]){ { "service_name", "a" }, { "e", "1" },
						  { "e", "2" } },
			  3, ERR_INVALID, "label 'e' given twice");
	expect_label_fail((struct store_label[]){ { "service_name", "a" },
						  { "__profile_type__", "x" } },
			  2, ERR_INVALID, "label '__profile_type__' is set by the server");
}

/* ---- hostile bytes ------------------------------------------------------ */

static void test_truncated_and_corrupted(void **state)
{
	struct pb *b = pb_native_profile();
	size_t len;
	uint8_t *bytes = pb_pack(b, 0, &len), *copy = malloc(len);
	struct run r;
	int ok = 0, bad = 0;
	(void)state;

	for (int gz = 0; gz < 2; gz++) {
		if (gz) {
			free(bytes);
			bytes = pb_pack(b, 1, &len);
			copy = realloc(copy, len);
		}
		for (size_t cut = 0; cut < len; cut++) {
			if (convert_bytes(&r, bytes, cut, NULL, base_labels, 2)) {
				assert_true(r.rc == ERR_INVALID);
				assert_true(r.msg.text[0] != '\0');
				bad++;
			} else {
				ok++;
			}
			done(&r);
		}
		/* Flip every byte in turn. */
		for (size_t i = 0; i < len; i++) {
			memcpy(copy, bytes, len);
			copy[i] ^= 0xa5;
			if (convert_bytes(&r, copy, len, NULL, base_labels, 2))
				assert_true(r.msg.text[0] != '\0');
			done(&r);
		}
	}
	assert_true(bad > 0);
	free(bytes);
	free(copy);
	pb_free(b);
}

static void test_gzip_bomb(void **state)
{
	size_t n = (size_t)65 << 20;
	char *zeros = calloc(1, n);
	struct buf gz;
	struct run r;
	(void)state;

	buf_init(&gz, 1 << 30);
	assert_int_equal(gzip_compress(zeros, n, 9, &gz), 0);
	free(zeros);
	assert_true(gz.len < 200 * 1024);
	assert_int_equal(convert_bytes(&r, gz.data, gz.len, NULL, base_labels, 2), ERR_TOO_LARGE);
	assert_non_null(strstr(r.msg.text, "exceeds"));
	done(&r);
	buf_release(&gz);
}

/* Many tiny sub-messages (empty labels) cost far more memory decoded than
 * encoded: the pprof arena cap turns that into ERR_TOO_LARGE. */
static void test_decode_memory_cap(void **state)
{
	size_t n = 4u << 20, len = 0;
	uint8_t *p = malloc(n + 16);
	struct run r;
	(void)state;

	/* One sample (field 2) holding ~2M empty labels (field 3, length 0). */
	p[len++] = 0x12;
	{
		size_t body = n - 8, v = body;
		while (v >= 0x80) {
			p[len++] = (uint8_t)(v | 0x80);
			v >>= 7;
		}
		p[len++] = (uint8_t)v;
		for (size_t i = 0; i < body / 2; i++) {
			p[len++] = 0x1a;
			p[len++] = 0x00;
		}
	}
	convert_bytes(&r, p, len, NULL, base_labels, 2);
	/* Either the cap stops the decoder or the profile is rejected later. */
	assert_true(r.rc == ERR_TOO_LARGE || r.rc == ERR_INVALID);
	assert_true(r.msg.text[0] != '\0');
	done(&r);
	free(p);
}

/* ---- speed (measured, printed, never a pass/fail threshold) ------------- */

static struct pb *big_profile(size_t n_samples, size_t depth, size_t n_locs)
{
	struct pb *b = pb_new(n_samples, depth);
	uint64_t stack[64];
	int64_t v[2];
	uint64_t x = 88172645463325252ULL;

	pb_sample_type(b, "samples", "count");
	pb_sample_type(b, "cpu", "nanoseconds");
	pb_period(b, "cpu", "nanoseconds", 10000000);
	pb_mapping(b, 1, 0x555500000000, 0x555600000000, 0, "/usr/bin/server",
		   "0123456789abcdef0123456789abcdef01234567");
	for (size_t i = 1; i <= n_locs; i++)
		pb_location(b, i, 1, 0x555500001000 + i * 16, 0, 0);
	for (size_t i = 0; i < n_samples; i++) {
		for (size_t j = 0; j < depth; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			stack[j] = 1 + (j * 13 + (x % 8)) % n_locs;
		}
		v[0] = 1 + (int64_t)(x % 3);
		v[1] = v[0] * 10000000;
		pb_sample(b, stack, depth, v, 2);
	}
	return b;
}

static void test_speed(void **state)
{
	struct pb *b = big_profile(4000, 30, 500);
	size_t len;
	uint8_t *bytes = pb_pack(b, 1, &len);
	int rounds = 50;
	int64_t t0 = clock_mono_ns();
	struct run r;
	(void)state;

	for (int i = 0; i < rounds; i++) {
		assert_int_equal(convert_bytes(&r, bytes, len, NULL, base_labels, 2), 0);
		assert_int_equal(r.pp.n_samples, 4000);
		done(&r);
	}
	double secs = (double)(clock_mono_ns() - t0) / 1e9;
	printf("ingest: decode+convert of a %zu-byte gzipped pprof (4000 samples, depth 30): "
	       "%.0f samples/s\n", len, 4000.0 * rounds / secs);
	free(bytes);
	pb_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native),
		cmocka_unit_test(test_go_functions),
		cmocka_unit_test(test_symbolized_no_mapping),
		cmocka_unit_test(test_sparse_ids),
		cmocka_unit_test(test_fake_mapping),
		cmocka_unit_test(test_sample_labels),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_request_labels),
		cmocka_unit_test(test_truncated_and_corrupted),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_decode_memory_cap),
		cmocka_unit_test(test_speed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
