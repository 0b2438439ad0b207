/* test_pprof_writer.c - the pprof writer of the tools. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "profile.pb-c.h"
#include "tests/tools/pprof_writer.h"

static const char *const types[] = { "samples", "count", "cpu", "nanoseconds" };

static Perftools__Profiles__Profile *encode(struct pw *w, int gzip, struct buf *out)
{
	struct pw_meta meta = { .type_unit = types, .period_type = "cpu", .period_unit = "nanoseconds",
				.period = 10000000, .time_nanos = 123, .duration_nanos = 456 };
	struct buf raw;
	Perftools__Profiles__Profile *p;

	assert_int_equal(pw_write(w, &meta, gzip, out), 0);
	buf_init(&raw, 1 << 30);
	if (gzip) {
		assert_true(is_gzip(out->data, out->len));
		assert_int_equal(gunzip_capped(out->data, out->len, 1 << 20, &raw, NULL), 0);
	} else {
		assert_int_equal(buf_append(&raw, out->data, out->len), 0);
	}
	p = perftools__profiles__profile__unpack(NULL, raw.len, (const uint8_t *)raw.data);
	buf_release(&raw);
	assert_non_null(p);
	return p;
}

static void test_aggregates_and_encodes(void **state)
{
	struct pw w;
	struct buf out;
	uint64_t m1, m2, l1, l2, l3, again;
	int64_t v[2] = { 1, 10000000 };
	Perftools__Profiles__Profile *p;
	(void)state;

	buf_init(&out, 1 << 30);
	assert_int_equal(pw_init(&w, 2), 0);
	assert_int_equal(pw_label_key(&w, "thread"), 0);
	assert_int_equal(pw_mapping(&w, 0x400000, 0x500000, 0x1000, "/bin/app", "abcd", &m1), 0);
	assert_int_equal(pw_mapping(&w, 0x7f0000000000, 0x7f0000100000, 0, "/lib/libc.so.6", "", &m2), 0);
	assert_int_equal(pw_location(&w, m1, 0x401234, &l1), 0);
	assert_int_equal(pw_location(&w, m2, 0x7f0000000010, &l2), 0);
	assert_int_equal(pw_location(&w, 0, 0x99, &l3), 0);
	assert_int_equal(pw_location(&w, m1, 0x401234, &again), 0);
	assert_int_equal(again, l1);
	assert_int_equal(pw_location(&w, 7, 0x1, &again), ERR_INVALID);

	uint64_t s1[] = { l1, l2 }, s2[] = { l2, l1 }, bad[] = { l1, 42 };
	assert_int_equal(pw_sample(&w, s1, 2, "main", v), 0);
	assert_int_equal(pw_sample(&w, s1, 2, "main", v), 0);
	assert_int_equal(pw_sample(&w, s1, 2, "worker", v), 0);
	assert_int_equal(pw_sample(&w, s2, 2, "main", v), 0);
	assert_int_equal(pw_sample(&w, &l3, 1, NULL, v), 0);
	assert_int_equal(pw_sample(&w, bad, 2, "main", v), ERR_INVALID);
	assert_int_equal(w.n_samples, 4);

	p = encode(&w, 1, &out);
	assert_int_equal(p->n_sample, 4);
	assert_int_equal(p->n_location, 3);
	assert_int_equal(p->n_mapping, 2);
	assert_int_equal(p->n_function, 0);
	assert_int_equal(p->period, 10000000);
	assert_int_equal(p->time_nanos, 123);
	assert_string_equal(p->string_table[0], "");
	assert_string_equal(p->string_table[p->sample_type[1]->type], "cpu");
	assert_string_equal(p->string_table[p->period_type->unit], "nanoseconds");
	assert_int_equal(p->sample[0]->value[0], 2);
	assert_int_equal(p->sample[0]->value[1], 20000000);
	assert_int_equal(p->sample[0]->n_location_id, 2);
	assert_int_equal(p->sample[0]->location_id[0], l1);
	assert_int_equal(p->sample[0]->n_label, 1);
	assert_string_equal(p->string_table[p->sample[0]->label[0]->key], "thread");
	assert_string_equal(p->string_table[p->sample[0]->label[0]->str], "main");
	assert_string_equal(p->string_table[p->sample[2]->label[0]->str], "main");
	assert_int_equal(p->sample[3]->n_label, 0);
	assert_int_equal(p->mapping[0]->memory_start, 0x400000);
	assert_int_equal(p->mapping[0]->file_offset, 0x1000);
	assert_string_equal(p->string_table[p->mapping[0]->build_id], "abcd");
	assert_int_equal(p->location[1]->mapping_id, m2);
	assert_int_equal(p->location[1]->address, 0x7f0000000010);
	assert_int_equal(p->location[2]->mapping_id, 0);
	perftools__profiles__profile__free_unpacked(p, NULL);

	buf_reset(&out);
	p = encode(&w, 0, &out);
	assert_int_equal(p->n_sample, 4);
	perftools__profiles__profile__free_unpacked(p, NULL);
	pw_release(&w);
	buf_release(&out);
}

static void test_many_entries_grow(void **state)
{
	struct pw w;
	uint64_t i, loc, m;
	int64_t v[1] = { 1 };
	(void)state;

	assert_int_equal(pw_init(&w, 1), 0);
	assert_int_equal(pw_mapping(&w, 0, 1ULL << 40, 0, "x", "", &m), 0);
	for (i = 0; i < 100000; i++) {
		assert_int_equal(pw_location(&w, m, i * 16, &loc), 0);
		assert_int_equal(loc, i + 1);
		assert_int_equal(pw_sample(&w, &loc, 1, NULL, v), 0);
	}
	assert_int_equal(w.n_locs, 100000);
	assert_int_equal(w.n_samples, 100000);
	pw_release(&w);
	assert_int_equal(pw_init(&w, PW_MAX_VALUES + 1), ERR_INVALID);
	pw_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aggregates_and_encodes),
		cmocka_unit_test(test_many_entries_grow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
