/*
 * test_pprof_wire.c - the streaming pprof decoder (pprof_wire.c): agreement
 * with protobuf-c on valid bytes (builder profiles, the fuzz seed corpus,
 * every truncation), packed and unpacked repeated fields, unknown fields,
 * and corrupted or hostile bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "ingest/ingest_int.h"
#include "pprof_builder.h"

typedef Perftools__Profiles__Profile PbProfile;

/* ---- comparison with protobuf-c ----------------------------------------- */

static void same_vt(const PbValueType *x, const struct pprof_value_type *y)
{
	assert_int_equal(x->type, y->type);
	assert_int_equal(x->unit, y->unit);
}

static void same_profile(const PbProfile *x, const struct pprof_msg *y)
{
	assert_int_equal(x->n_sample_type, y->n_sample_type);
	for (size_t i = 0; i < x->n_sample_type; i++)
		same_vt(x->sample_type[i], &y->sample_type[i]);
	assert_int_equal(x->n_sample, y->n_sample);
	for (size_t i = 0; i < x->n_sample; i++) {
		const PbSample *a = x->sample[i];
		const struct pprof_sample *b = &y->sample[i];

		assert_int_equal(a->n_location_id, b->n_location_id);
		for (size_t j = 0; j < a->n_location_id; j++)
			assert_int_equal(a->location_id[j], b->location_id[j]);
		assert_int_equal(a->n_value, b->n_value);
		for (size_t j = 0; j < a->n_value; j++)
			assert_int_equal(a->value[j], b->value[j]);
		assert_int_equal(a->n_label, b->n_label);
		for (size_t j = 0; j < a->n_label; j++) {
			assert_int_equal(a->label[j]->key, b->label[j].key);
			assert_int_equal(a->label[j]->str, b->label[j].str);
			assert_int_equal(a->label[j]->num, b->label[j].num);
			assert_int_equal(a->label[j]->num_unit, b->label[j].num_unit);
		}
	}
	assert_int_equal(x->n_mapping, y->n_mapping);
	for (size_t i = 0; i < x->n_mapping; i++) {
		const PbMapping *a = x->mapping[i];
		const struct pprof_mapping *b = &y->mapping[i];

		assert_int_equal(a->id, b->id);
		assert_int_equal(a->memory_start, b->memory_start);
		assert_int_equal(a->memory_limit, b->memory_limit);
		assert_int_equal(a->file_offset, b->file_offset);
		assert_int_equal(a->filename, b->filename);
		assert_int_equal(a->build_id, b->build_id);
		assert_int_equal(!!a->has_functions, b->has_functions);
		assert_int_equal(!!a->has_filenames, b->has_filenames);
		assert_int_equal(!!a->has_line_numbers, b->has_line_numbers);
		assert_int_equal(!!a->has_inline_frames, b->has_inline_frames);
	}
	assert_int_equal(x->n_location, y->n_location);
	for (size_t i = 0; i < x->n_location; i++) {
		const PbLocation *a = x->location[i];
		const struct pprof_location *b = &y->location[i];

		assert_int_equal(a->id, b->id);
		assert_int_equal(a->mapping_id, b->mapping_id);
		assert_int_equal(a->address, b->address);
		assert_int_equal(!!a->is_folded, b->is_folded);
		assert_int_equal(a->n_line, b->n_line);
		for (size_t j = 0; j < a->n_line; j++) {
			assert_int_equal(a->line[j]->function_id, b->line[j].function_id);
			assert_int_equal(a->line[j]->line, b->line[j].line);
			assert_int_equal(a->line[j]->column, b->line[j].column);
		}
	}
	assert_int_equal(x->n_function, y->n_function);
	for (size_t i = 0; i < x->n_function; i++) {
		const PbFunction *a = x->function[i];
		const struct pprof_function *b = &y->function[i];

		assert_int_equal(a->id, b->id);
		assert_int_equal(a->name, b->name);
		assert_int_equal(a->system_name, b->system_name);
		assert_int_equal(a->filename, b->filename);
		assert_int_equal(a->start_line, b->start_line);
	}
	assert_int_equal(x->n_string_table, y->n_string_table);
	for (size_t i = 0; i < x->n_string_table; i++)
		assert_string_equal(x->string_table[i] ? x->string_table[i] : "", y->string_table[i]);
	assert_int_equal(x->drop_frames, y->drop_frames);
	assert_int_equal(x->keep_frames, y->keep_frames);
	assert_int_equal(x->time_nanos, y->time_nanos);
	assert_int_equal(x->duration_nanos, y->duration_nanos);
	assert_int_equal(x->period, y->period);
	assert_int_equal(x->period_type != NULL, y->has_period_type);
	if (x->period_type)
		same_vt(x->period_type, &y->period_type);
	assert_int_equal(x->n_comment, y->n_comment);
	for (size_t i = 0; i < x->n_comment; i++)
		assert_int_equal(x->comment[i], y->comment[i]);
	assert_int_equal(x->default_sample_type, y->default_sample_type);
	assert_int_equal(x->doc_url, y->doc_url);
}

/*
 * Decodes p[0..n) with both decoders; they must agree on success, and on
 * content when both succeed.  Returns our return code.
 */
static int differential(const uint8_t *p, size_t n)
{
	PbProfile *x = perftools__profiles__profile__unpack(NULL, n, p);
	struct pprof_msg y;
	struct err_msg msg = { { 0 } };
	struct arena a;
	int rc;

	arena_init(&a, ingest__pprof_arena_cap(n));
	rc = ingest__pprof_parse(p, n, &a, &y, &msg);
	if ((rc == 0) != (x != NULL)) {
		int pc_ok = x != NULL;

		if (x)
			perftools__profiles__profile__free_unpacked(x, NULL);
		arena_release(&a);
		fail_msg("%zu bytes: protobuf-c %s, ours rc %d '%s'", n, pc_ok ? "ok" : "failed", rc,
			 msg.text);
	}
	if (rc) {
		assert_int_equal(rc, ERR_INVALID);
		assert_true(msg.text[0] != '\0');
	} else {
		same_profile(x, &y);
	}
	if (x)
		perftools__profiles__profile__free_unpacked(x, NULL);
	arena_release(&a);
	return rc;
}

/* A profile that sets every field of every message. */
static struct pb *rich_profile(void)
{
	static int64_t comments[] = { 1, 2, 300 };
	struct pb *b = pb_new(8, 8);
	uint64_t s1[] = { 1, 2, 3 }, s2[] = { 3 }, s3[] = { 1000 };
	int64_t v1[] = { 5, -7 }, v2[] = { 0, INT64_MAX }, v3[] = { INT64_MIN, 1 };
	PbMapping *m;
	PbLocation *l;
	PbFunction *f;
	PbSample *s;

	pb_sample_type(b, "alloc_objects", "count");
	pb_sample_type(b, "alloc_space", "bytes");
	pb_period(b, "space", "bytes", 524288);
	m = pb_mapping(b, 1, 0x400000, 0x800000, 0x1000, "/bin/x", "abc");
	m->has_functions = m->has_filenames = m->has_line_numbers = m->has_inline_frames = 1;
	pb_mapping(b, UINT64_MAX, 0, UINT64_MAX, 0, "", "");
	f = pb_function(b, 7, "main.main", "main.go");
	f->start_line = 12;
	f->system_name = pb_str(b, "_ZN4main4mainE");
	pb_function(b, 8, "runtime.goexit", "asm.s");
	l = pb_location(b, 1, 1, 0x401000, 7, 33);
	l->is_folded = 1;
	b->lines[b->n_lines - 1].column = 9;
	pb_location(b, 2, 1, 0x402000, 8, 1);
	pb_location(b, 3, 0, 0, 0, 0);
	pb_location(b, 1000, UINT64_MAX, 0xffffffffffffffffULL, 0, 0);
	s = pb_sample(b, s1, 3, v1, 2);
	pb_label(b, s, "thread", "main", 0);
	pb_label(b, s, "bytes", NULL, 4096)->num_unit = pb_str(b, "bytes");
	pb_sample(b, s2, 1, v2, 2);
	pb_sample(b, s3, 1, v3, 2);
	pb_sample(b, s2, 0, v1, 0);
	b->p.drop_frames = pb_str(b, "drop.*");
	b->p.keep_frames = pb_str(b, "keep.*");
	b->p.time_nanos = 1700000000000000000;
	b->p.duration_nanos = -1;
	b->p.default_sample_type = 1;
	b->p.doc_url = pb_str(b, "https://example.com/doc");
	b->p.comment = comments;
	b->p.n_comment = 3;
	return b;
}

static void test_differential_builder(void **state)
{
	struct pb *b = rich_profile();
	size_t len;
	uint8_t *bytes = pb_pack(b, 0, &len);
	(void)state;

	assert_int_equal(differential(bytes, len), 0);
	/* Every prefix: protobuf-c and we agree on which are valid and what they hold. */
	for (size_t cut = 0; cut < len; cut++)
		differential(bytes, cut);
	free(bytes);
	pb_free(b);
}

/* Reads a whole file, gunzipping it when gzipped. */
static uint8_t *read_file(const char *path, size_t *len)
{
	struct buf raw, out;

	buf_init(&raw, 1 << 30);
	assert_int_equal(buf_read_file(&raw, path), 0);
	if (!is_gzip(raw.data, raw.len))
		return (uint8_t *)buf_detach(&raw, len);
	buf_init(&out, 1 << 30);
	assert_int_equal(gunzip_capped(raw.data, raw.len, 64 << 20, &out, NULL), 0);
	buf_release(&raw);
	return (uint8_t *)buf_detach(&out, len);
}

static void test_differential_corpus(void **state)
{
	DIR *d = opendir(UNHEX_PPROF_CORPUS);
	struct dirent *e;
	int files = 0;
	(void)state;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[4096];
		size_t len;
		uint8_t *bytes;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", UNHEX_PPROF_CORPUS, e->d_name);
		bytes = read_file(path, &len);
		differential(bytes, len);
		/* Flip each byte in turn: both decoders still agree. */
		for (size_t i = 0; i < len && i < 4096; i++) {
			bytes[i] ^= 0x5a;
			differential(bytes, len);
			bytes[i] ^= 0x5a;
		}
		free(bytes);
		files++;
	}
	closedir(d);
	assert_true(files >= 3);
}

/* Generated profiles of many shapes, sizes and id ranges. */
static void test_differential_generated(void **state)
{
	uint64_t x = 0x2545f4914f6cdd1dULL;
	(void)state;

	for (int round = 0; round < 40; round++) {
		struct pb *b = pb_new(64, 32);
		size_t n_locs = 1 + round * 7 % 200, len;
		uint64_t stack[32];
		int64_t v[3];
		uint8_t *bytes;

		pb_sample_type(b, "samples", "count");
		pb_sample_type(b, "cpu", "nanoseconds");
		if (round % 3 == 0)
			pb_sample_type(b, "wall", "nanoseconds");
		if (round % 2)
			pb_period(b, "cpu", "nanoseconds", round * 1000);
		pb_mapping(b, 1, 0x555500000000ULL, 0x555600000000ULL, 0, "/srv", "0123abcd");
		for (size_t i = 1; i <= n_locs && i < 500; i++)
			pb_location(b, i * (round % 4 + 1), 1, 0x555500001000ULL + i * 16 * (uint64_t)round,
				    0, 0);
		for (size_t i = 0; i < 64; i++) {
			size_t depth = 1 + i % 32;

			for (size_t j = 0; j < depth; j++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				stack[j] = x;
			}
			v[0] = (int64_t)(x % 1000) - 10;
			v[1] = (int64_t)x;
			v[2] = -(int64_t)(x >> 3);
			pb_sample(b, stack, depth, v, b->p.n_sample_type);
		}
		bytes = pb_pack(b, 0, &len);
		assert_int_equal(differential(bytes, len), 0);
		free(bytes);
		pb_free(b);
	}
}

/* ---- hand-written wire bytes -------------------------------------------- */

struct w {
	uint8_t b[4096];
	size_t n;
};

static void put_varint(struct w *w, uint64_t v)
{
	while (v >= 0x80) {
		w->b[w->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	w->b[w->n++] = (uint8_t)v;
}

static void put_tag(struct w *w, unsigned field, unsigned wt)
{
	put_varint(w, (uint64_t)field << 3 | wt);
}

static void put_bytes(struct w *w, unsigned field, const struct w *body)
{
	put_tag(w, field, 2);
	put_varint(w, body->n);
	memcpy(w->b + w->n, body->b, body->n);
	w->n += body->n;
}

static void put_uint(struct w *w, unsigned field, uint64_t v)
{
	put_tag(w, field, 0);
	put_varint(w, v);
}

/* One of each unknown wire type, with field number `field`. */
static void put_unknown(struct w *w, unsigned field)
{
	put_uint(w, field, 123456789);
	put_tag(w, field, 1);
	memset(w->b + w->n, 0xee, 8);
	w->n += 8;
	put_tag(w, field, 2);
	put_varint(w, 3);
	memcpy(w->b + w->n, "abc", 3);
	w->n += 3;
	put_tag(w, field, 5);
	memset(w->b + w->n, 0xdd, 4);
	w->n += 4;
}

static int parse(const struct w *w, struct arena *a, struct pprof_msg *m, struct err_msg *msg)
{
	err_clear(msg);
	return ingest__pprof_parse(w->b, w->n, a, m, msg);
}

/* A profile whose sample is written packed, unpacked or mixed. */
static void sample_profile(struct w *out, int style, int unknown)
{
	struct w s = { .n = 0 }, st = { .n = 0 }, packed = { .n = 0 }, str = { .n = 0 };
	const uint64_t ids[] = { 1, 300, 70000, UINT64_MAX };
	const int64_t vals[] = { -1, 2 };

	memset(out, 0, sizeof(*out));
	put_uint(&st, 1, 1);
	put_uint(&st, 2, 2);
	if (unknown)
		put_unknown(&st, 99);
	put_bytes(out, 1, &st);
	if (style == 0) {
		for (int i = 0; i < 4; i++)
			put_varint(&packed, ids[i]);
		put_bytes(&s, 1, &packed);
		packed.n = 0;
		for (int i = 0; i < 2; i++)
			put_varint(&packed, (uint64_t)vals[i]);
		put_bytes(&s, 2, &packed);
	} else if (style == 1) {
		for (int i = 0; i < 4; i++)
			put_uint(&s, 1, ids[i]);
		for (int i = 0; i < 2; i++)
			put_uint(&s, 2, (uint64_t)vals[i]);
	} else {
		/* Runs of both forms, interleaved with the other field. */
		put_uint(&s, 1, ids[0]);
		put_uint(&s, 2, (uint64_t)vals[0]);
		put_varint(&packed, ids[1]);
		put_varint(&packed, ids[2]);
		put_bytes(&s, 1, &packed);
		put_uint(&s, 2, (uint64_t)vals[1]);
		put_uint(&s, 1, ids[3]);
	}
	if (unknown)
		put_unknown(&s, 1000);
	put_bytes(out, 2, &s);
	if (unknown)
		put_unknown(out, 16);
	put_bytes(out, 6, &str);
	str.n = 1;
	str.b[0] = 'a';
	put_bytes(out, 6, &str);
}

static void test_packed_unpacked_unknown(void **state)
{
	const uint64_t ids[] = { 1, 300, 70000, UINT64_MAX };
	(void)state;

	for (int style = 0; style < 3; style++) {
		for (int unknown = 0; unknown < 2; unknown++) {
			struct w w;
			struct pprof_msg m;
			struct err_msg msg;
			struct arena a;

			sample_profile(&w, style, unknown);
			arena_init(&a, 1 << 30);
			if (parse(&w, &a, &m, &msg))
				fail_msg("style %d unknown %d: %s", style, unknown, msg.text);
			assert_int_equal(m.n_sample, 1);
			assert_int_equal(m.sample[0].n_location_id, 4);
			for (int i = 0; i < 4; i++)
				assert_int_equal(m.sample[0].location_id[i], ids[i]);
			assert_int_equal(m.sample[0].n_value, 2);
			assert_int_equal(m.sample[0].value[0], -1);
			assert_int_equal(m.sample[0].value[1], 2);
			assert_int_equal(m.n_sample_type, 1);
			assert_int_equal(m.sample_type[0].type, 1);
			assert_int_equal(m.sample_type[0].unit, 2);
			assert_int_equal(m.n_string_table, 2);
			assert_string_equal(m.string_table[1], "a");
			arena_release(&a);
			differential(w.b, w.n);
			/* Truncation at every byte: never a crash, an error that says why. */
			for (size_t cut = 0; cut < w.n; cut++)
				differential(w.b, cut);
		}
	}
}

/*
 * Packed location ids whose body ends inside a two-byte id, with the rest
 * of the id (and more fields) right after the body: refused by both
 * decoders, as a decoder that reads a two-byte id whole must check it
 * against the body's end, not the profile's.
 */
static void test_packed_cut_inside(void **state)
{
	const uint8_t ids[] = { 0x05, 0xac, 0x02, 0x07, 0x81, 0x01 }; /* 5, 300, 7, 129 */
	(void)state;

	for (size_t keep = 0; keep <= sizeof(ids); keep++) {
		struct w p = { .n = 0 }, s = { .n = 0 }, packed = { .n = 0 };

		memcpy(packed.b, ids, keep);
		packed.n = keep;
		put_bytes(&s, 1, &packed);
		/* Right after the body, a byte that would end the cut id: the
		 * tag of an unpacked value (field 2), then the value. */
		put_uint(&s, 2, 1);
		put_bytes(&p, 2, &s);
		put_uint(&p, 12, 0x123456789);
		put_uint(&p, 9, 0x123456789);
		assert_int_equal(differential(p.b, p.n) != 0, keep == 2 || keep == 5);
	}
}

/* Expects ERR_INVALID (or `code`) with `needle` in the message. */
static void expect_bad(const struct w *w, int code, const char *needle)
{
	struct pprof_msg m;
	struct err_msg msg;
	struct arena a;
	int rc;

	arena_init(&a, 1 << 20);
	rc = parse(w, &a, &m, &msg);
	if (rc != code || !strstr(msg.text, needle))
		fail_msg("want %d '%s', got %d '%s'", code, needle, rc, msg.text);
	arena_release(&a);
}

/*
 * Varints of every length from 1 to 11 bytes, the 10th byte's bits past 64
 * set or not: at the very end of the profile, followed by more fields,
 * and at the end of a location message with more of the profile after it,
 * where the bytes after the message must not complete a varint cut short
 * inside it (a decoder that reads ahead for speed must still stop there).
 * Decoded as protobuf-c decodes them, or refused by both.
 */
static void test_varint_lengths(void **state)
{
	(void)state;

	for (int len = 1; len <= 11; len++) {
		for (int where = 0; where < 3; where++) {
			for (int last = 0; last < 0x80; last += 0x7f) {
				struct w w = { .n = 0 }, loc = { .n = 0 }, *v = where == 2 ? &loc : &w;
				int cut = 0;

				if (where == 0)
					put_uint(&w, 10, 1);     /* duration_nanos */
				if (where == 2)
					put_uint(&loc, 1, 1);    /* location id */
				put_tag(v, where == 2 ? 3 : 9, 0); /* address, time_nanos */
				for (int i = 0; i < len - 1; i++)
					v->b[v->n++] = (uint8_t)(0x80 | (i * 37));
				v->b[v->n++] = (uint8_t)last;
				if (where == 2) {
					/* Once whole, once cut before its last byte. */
					for (cut = 0; cut < 2; cut++) {
						struct w p = { .n = 0 }, l = loc;

						l.n -= (size_t)cut;
						put_bytes(&p, 4, &l);
						put_uint(&p, 12, 0x123456789);
						put_uint(&p, 10, 1);
						/* Ten bytes more than any varint, so a
						 * reader ahead may read them. */
						put_uint(&p, 9, 0x123456789);
						put_uint(&p, 9, 0x123456789);
						assert_int_equal(differential(p.b, p.n) != 0,
								 len == 11 || cut);
					}
					continue;
				}
				if (where == 1) {
					put_uint(&w, 10, 1);
					put_uint(&w, 12, 0x123456789);
				}
				/* Both refuse exactly the 11-byte one. */
				assert_int_equal(differential(w.b, w.n) != 0, len == 11);
			}
		}
	}
}

static void test_corrupted(void **state)
{
	struct w w, body;
	(void)state;

	/* Varint of 11 bytes (time_nanos). */
	memset(&w, 0, sizeof(w));
	put_tag(&w, 9, 0);
	memset(w.b + w.n, 0xff, 10);
	w.n += 10;
	w.b[w.n++] = 0x01;
	expect_bad(&w, ERR_INVALID, "varint");
	/* Truncated varint. */
	w.n = 5;
	expect_bad(&w, ERR_INVALID, "varint");
	/* A huge declared length: a sample of 2^62 bytes. */
	memset(&w, 0, sizeof(w));
	put_tag(&w, 2, 2);
	put_varint(&w, (uint64_t)1 << 62);
	w.b[w.n++] = 0x08;
	expect_bad(&w, ERR_INVALID, "length past the end");
	/* A nested length past the end of its sample, not of the profile. */
	memset(&w, 0, sizeof(w));
	memset(&body, 0, sizeof(body));
	put_tag(&body, 1, 2);
	put_varint(&body, 5);
	body.b[body.n++] = 0x01;
	put_bytes(&w, 2, &body);
	put_uint(&w, 9, 1); /* more bytes after the sample */
	put_uint(&w, 9, 1);
	expect_bad(&w, ERR_INVALID, "in sample 0");
	/* Packed values ending inside a varint. */
	memset(&w, 0, sizeof(w));
	memset(&body, 0, sizeof(body));
	put_tag(&body, 2, 2);
	put_varint(&body, 2);
	body.b[body.n++] = 0x01;
	body.b[body.n++] = 0x80;
	put_bytes(&w, 2, &body);
	expect_bad(&w, ERR_INVALID, "varint");
	/* Known field, wrong wire type: a sample as a varint, time as bytes. */
	memset(&w, 0, sizeof(w));
	put_uint(&w, 2, 1);
	expect_bad(&w, ERR_INVALID, "wrong wire type");
	memset(&w, 0, sizeof(w));
	memset(&body, 0, sizeof(body));
	put_bytes(&w, 9, &body);
	expect_bad(&w, ERR_INVALID, "wrong wire type");
	memset(&w, 0, sizeof(w));
	put_tag(&w, 1, 5);
	memset(w.b + w.n, 0, 4);
	w.n += 4;
	expect_bad(&w, ERR_INVALID, "wrong wire type");
	/* Groups and field number 0. */
	memset(&w, 0, sizeof(w));
	put_tag(&w, 20, 3);
	expect_bad(&w, ERR_INVALID, "wire type");
	memset(&w, 0, sizeof(w));
	put_uint(&w, 0, 1);
	expect_bad(&w, ERR_INVALID, "field number");
	/* Truncated fixed64 / fixed32 unknown fields. */
	memset(&w, 0, sizeof(w));
	put_tag(&w, 30, 1);
	w.n += 7;
	expect_bad(&w, ERR_INVALID, "fixed64");
	memset(&w, 0, sizeof(w));
	put_tag(&w, 30, 5);
	w.n += 3;
	expect_bad(&w, ERR_INVALID, "fixed32");
}

/* Many empty sub-messages cost more decoded than encoded: the arena cap holds. */
static void test_memory_cap(void **state)
{
	struct w w, body;
	struct pprof_msg m;
	struct err_msg msg;
	struct arena a;
	(void)state;

	memset(&w, 0, sizeof(w));
	memset(&body, 0, sizeof(body));
	while (w.n + 2 < sizeof(w.b))
		put_bytes(&w, 2, &body);
	arena_init(&a, 4096);
	assert_int_equal(parse(&w, &a, &m, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "more than"));
	arena_release(&a);
	/* With the real cap it decodes: 2047 empty samples. */
	arena_init(&a, ingest__pprof_arena_cap(w.n));
	assert_int_equal(parse(&w, &a, &m, &msg), 0);
	assert_int_equal(m.n_sample, w.n / 2);
	arena_release(&a);
	/* A packed run is reserved by its length, which the arena cap bounds. */
	memset(&w, 0, sizeof(w));
	memset(&body, 0, sizeof(body));
	memset(body.b, 0x01, 4000);
	body.n = 4000;
	{
		struct w s = { .n = 0 };

		put_bytes(&s, 1, &body);
		put_bytes(&w, 2, &s);
	}
	arena_init(&a, 8192);
	assert_int_equal(parse(&w, &a, &m, &msg), ERR_TOO_LARGE);
	arena_release(&a);
}

static void test_empty(void **state)
{
	struct pprof_msg m;
	struct err_msg msg = { { 0 } };
	struct arena a;
	struct w w, s, none;
	(void)state;

	/* Empty packed runs (found by fuzz_pprof): valid, no elements. */
	memset(&w, 0, sizeof(w));
	memset(&s, 0, sizeof(s));
	memset(&none, 0, sizeof(none));
	put_bytes(&s, 1, &none);
	put_bytes(&s, 2, &none);
	put_bytes(&w, 2, &s);
	put_bytes(&w, 13, &none);
	arena_init(&a, 1 << 20);
	assert_int_equal(parse(&w, &a, &m, &msg), 0);
	assert_int_equal(m.n_sample, 1);
	assert_int_equal(m.sample[0].n_location_id, 0);
	assert_int_equal(m.sample[0].n_value, 0);
	assert_int_equal(m.n_comment, 0);
	arena_release(&a);
	differential(w.b, w.n);

	arena_init(&a, 1 << 20);
	assert_int_equal(ingest__pprof_parse(NULL, 0, &a, &m, &msg), 0);
	assert_int_equal(m.n_sample, 0);
	assert_int_equal(m.n_string_table, 0);
	assert_int_equal(m.has_period_type, 0);
	arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_differential_builder),
		cmocka_unit_test(test_differential_corpus),
		cmocka_unit_test(test_differential_generated),
		cmocka_unit_test(test_packed_unpacked_unknown),
		cmocka_unit_test(test_varint_lengths),
		cmocka_unit_test(test_packed_cut_inside),
		cmocka_unit_test(test_corrupted),
		cmocka_unit_test(test_memory_cap),
		cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
