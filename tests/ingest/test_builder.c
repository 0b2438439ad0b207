/* test_builder.c - profiles from named frames: interning of functions,
 * locations and label sets, samples summed per (stack, group), limits,
 * overflow, scaling, and the result's shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "ingest/ingest_int.h"

struct fx {
	struct arena a;
	struct ingest_builder b;
	struct ingest_limits lim;
};

static void setup(struct fx *f, size_t n_types, size_t tmp_cap)
{
	memset(f, 0, sizeof(*f));
	ingest_limits_default(&f->lim);
	f->lim.max_samples = 3;
	f->lim.max_stack_depth = 4;
	arena_init(&f->a, 16 << 20);
	ingest__b_init(&f->b, &f->a, tmp_cap, &f->lim, n_types);
}

static void teardown(struct fx *f)
{
	ingest__b_release(&f->b);
	arena_release(&f->a);
}

static void test_interning(void **state)
{
	struct fx f;
	uint32_t a, b, c, la, lb, lc;
	(void)state;

	setup(&f, 1, 16 << 20);
	assert_int_equal(ingest__b_function(&f.b, "main", 4, &a), 0);
	assert_int_equal(ingest__b_function(&f.b, "mainX", 4, &b), 0); /* the same 4 bytes */
	assert_int_equal(ingest__b_function(&f.b, "foo", 3, &c), 0);
	assert_int_equal(a, b);
	assert_int_not_equal(a, c);
	assert_int_equal(ingest__b_location(&f.b, a, 10, &la), 0);
	assert_int_equal(ingest__b_location(&f.b, a, 11, &lb), 0);
	assert_int_equal(ingest__b_location(&f.b, a, 10, &lc), 0);
	assert_int_equal(la, lc);
	assert_int_not_equal(la, lb);
	/* Many names: the tables grow. */
	for (int i = 0; i < 5000; i++) {
		char n[32];
		uint32_t x, y;

		snprintf(n, sizeof(n), "f%d", i);
		assert_int_equal(ingest__b_function(&f.b, n, strlen(n), &x), 0);
		assert_int_equal(ingest__b_function(&f.b, n, strlen(n), &y), 0);
		assert_int_equal(x, y);
	}
	assert_int_equal(f.b.n_fns, 5002);
	teardown(&f);
}

static void test_samples_and_groups(void **state)
{
	static const struct store_label g1[] = { { "a", "1" }, { "b", "2" } };
	static const struct store_label g2[] = { { "a", "1" } };
	struct ingest_pprof p;
	struct fx f;
	uint32_t fn, loc[2], grp1, grp1b, grp2, grp0;
	int64_t v[2] = { 1, 100 };
	size_t s1, s2, s3;
	(void)state;

	setup(&f, 2, 1 << 20);
	assert_int_equal(ingest__b_function(&f.b, "leaf", 4, &fn), 0);
	assert_int_equal(ingest__b_location(&f.b, fn, 1, &loc[0]), 0);
	assert_int_equal(ingest__b_function(&f.b, "root", 4, &fn), 0);
	assert_int_equal(ingest__b_location(&f.b, fn, 2, &loc[1]), 0);
	assert_int_equal(ingest__b_group(&f.b, g1, 2, &grp1), 0);
	assert_int_equal(ingest__b_group(&f.b, g1, 2, &grp1b), 0);
	assert_int_equal(ingest__b_group(&f.b, g2, 1, &grp2), 0);
	assert_int_equal(ingest__b_group(&f.b, NULL, 0, &grp0), 0);
	assert_int_equal(grp1, grp1b);
	assert_int_not_equal(grp1, grp2);
	assert_int_equal(grp0, 0);
	assert_int_equal(ingest__b_sample(&f.b, loc, 2, grp1, v, &s1), 0);
	assert_int_equal(ingest__b_sample(&f.b, loc, 2, grp1, v, &s2), 0);
	assert_int_equal(s1, s2);
	assert_int_equal(ingest__b_sample(&f.b, loc, 2, 0, v, &s3), 0);
	assert_int_not_equal(s1, s3);
	assert_int_equal(ingest__b_add(&f.b, s3, v), 0);
	assert_int_equal(ingest__b_sample(&f.b, loc, 1, 0, v, NULL), 0);
	/* The fourth distinct sample is past max_samples; a fifth frame past the depth. */
	assert_int_equal(ingest__b_sample(&f.b, loc + 1, 1, 0, v, NULL), ERR_TOO_LARGE);
	assert_int_equal(ingest__b_sample(&f.b, loc, 5, 0, v, NULL), ERR_TOO_LARGE);
	assert_int_equal(ingest__b_scale(&f.b, 3, 2), 0);
	memset(&p, 0, sizeof(p));
	assert_int_equal(ingest__b_finish(&f.b, &p), 0);
	assert_int_equal(p.n_samples, 3);
	assert_int_equal(p.n_types, 2);
	assert_int_equal(p.n_groups, 3);
	assert_int_equal(p.groups[grp1].n_labels, 2);
	assert_string_equal(p.groups[grp1].labels[1].value, "2");
	assert_int_equal(p.values[s1 * 2], 3);       /* (1 + 1) * 3 / 2 */
	assert_int_equal(p.values[s1 * 2 + 1], 300); /* (100 + 100) * 3 / 2 */
	assert_int_equal(p.sample_off[s1 + 1] - p.sample_off[s1], 2);
	assert_int_equal(p.n_functions, 2);
	assert_string_equal(p.functions[p.locations[p.stack_locs[p.sample_off[s1]]].lines[0].function - 1].name,
			    "leaf");
	assert_int_equal(p.locations[loc[1]].lines[0].line, 2);
	assert_int_equal(p.n_mappings, 0);
	teardown(&f);
}

static void test_overflow_and_cap(void **state)
{
	struct fx f;
	uint32_t fn, loc;
	int64_t big = INT64_MAX, one = 1;
	(void)state;

	setup(&f, 1, 1 << 20);
	assert_int_equal(ingest__b_function(&f.b, "x", 1, &fn), 0);
	assert_int_equal(ingest__b_location(&f.b, fn, 0, &loc), 0);
	assert_int_equal(ingest__b_sample(&f.b, &loc, 1, 0, &big, NULL), 0);
	assert_int_equal(ingest__b_sample(&f.b, &loc, 1, 0, &one, NULL), ERR_INVALID);
	assert_int_equal(ingest__b_scale(&f.b, 2, 1), ERR_INVALID);
	teardown(&f);
	/* A tiny arena: the tables cannot grow. */
	setup(&f, 1, 4096);
	f.lim.max_samples = 1 << 20;
	for (int i = 0, rc = 0; i < 10000 && !rc; i++) {
		char n[16];

		snprintf(n, sizeof(n), "f%d", i);
		rc = ingest__b_function(&f.b, n, strlen(n), &fn);
		if (rc) {
			assert_int_equal(rc, ERR_TOO_LARGE);
			break;
		}
		assert_true(i < 9999);
	}
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interning),
		cmocka_unit_test(test_samples_and_groups),
		cmocka_unit_test(test_overflow_and_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
