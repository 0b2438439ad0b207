/*
 * test_flamebearer.c - the flamebearer JSON writer (query/flamebearer.c)
 * with exact expected documents: the "single" form with its timeline and
 * metadata units, the "double" form of a diff with both timelines, JSON
 * escaping of names, and the output cap.  (Connect's form of the same
 * flame graph is tested in test_connect.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "treefx.h"

#define CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
#define T0 1700000000LL

/* A merge holding only a timeline of `n` steps of 10 s from T0. */
static void timeline(struct qmerge *m, int64_t *tl, size_t n)
{
	query__merge_init(m);
	m->tl_start_ns = T0 * 1000000000LL;
	m->tl_step_ns = 10 * 1000000000LL;
	m->tl = tl;
	m->tl_n = n;
}

static void test_single(void **state)
{
	static const char *const p[] = { "z", "main;b", "main;a", "main;b;c", "z;x\"y" };
	static const int64_t v[] = { 4, 3, 2, 1, 1 };
	int64_t tl[] = { 5, 0, 6 };
	const struct qmerge *ms[1];
	struct query__flame f;
	struct qmerge m;
	struct tfx_out x;

	(void)state;
	tfx_open(&x, p, v, 5);
	timeline(&m, tl, 3);
	ms[0] = &m;
	assert_int_equal(query__flame_build(&x.q, &x.t, 0, &f), 0);
	assert_int_equal(query__fb_write(&f, CPU, ms, 1, &x.b), 0);
	assert_string_equal(x.b.data,
		"{\"version\":1,\"flamebearer\":{"
		"\"names\":[\"total\",\"main\",\"a\",\"b\",\"c\",\"z\",\"x\\\"y\"],"
		"\"levels\":[[0,11,0,0],[0,6,0,1,0,5,4,5],[0,2,2,2,0,4,3,3,0,1,1,6],[2,1,1,4]],"
		"\"numTicks\":11,\"maxSelf\":4},"
		"\"metadata\":{\"format\":\"single\",\"spyName\":\"\",\"sampleRate\":1000000000,"
		"\"units\":\"samples\",\"name\":\"cpu\"},"
		"\"timeline\":{\"startTime\":1700000000,\"samples\":[5,0,6],\"durationDelta\":10,"
		"\"watermarks\":{}}}");

	/* Past the cap: ERR_TOO_LARGE, and the buffer as it was. */
	buf_release(&x.b);
	buf_init(&x.b, 100);
	assert_int_equal(buf_puts(&x.b, "x"), 0);
	assert_int_equal(query__fb_write(&f, CPU, ms, 1, &x.b), ERR_TOO_LARGE);
	assert_true(x.b.len <= 100);
	query__flame_release(&x.q, &f);
	tfx_close(&x);
}

/*
 * Integers at every width and sign, INT64_MIN and INT64_MAX included, as
 * printf writes them; and a document exactly as long as the cap still
 * fits (rows are written into room reserved for their longest form, which
 * must not make the cap refuse a document it holds).
 */
static void test_integers(void **state)
{
	static const char *const p[] = { "main" };
	static const int64_t v[] = { 7 };
	int64_t tl[] = { INT64_MIN, INT64_MAX, -1, 0, 9, 10, 99, 100, 101, 999, 1000,
			 -100, 1234567890123, -9876543210, 10000000000000000LL };
	char want[512], *w = want;
	const struct qmerge *ms[1];
	struct query__flame f;
	struct qmerge m;
	struct tfx_out x;
	struct buf exact;
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(tl) / sizeof(tl[0]); i++)
		w += sprintf(w, "%s%lld", i ? "," : "[", (long long)tl[i]);
	strcpy(w, "]");
	tfx_open(&x, p, v, 1);
	timeline(&m, tl, sizeof(tl) / sizeof(tl[0]));
	ms[0] = &m;
	assert_int_equal(query__flame_build(&x.q, &x.t, 0, &f), 0);
	assert_int_equal(query__fb_write(&f, CPU, ms, 1, &x.b), 0);
	assert_non_null(strstr(x.b.data, want));
	len = x.b.len;
	buf_init(&exact, len);
	assert_int_equal(query__fb_write(&f, CPU, ms, 1, &exact), 0);
	assert_string_equal(exact.data, x.b.data);
	buf_release(&exact);
	buf_init(&exact, len - 1);
	assert_int_equal(query__fb_write(&f, CPU, ms, 1, &exact), ERR_TOO_LARGE);
	buf_release(&exact);
	query__flame_release(&x.q, &f);
	tfx_close(&x);
}

static void test_units(void **state)
{
	/* Pyroscope's ExportToFlamebearer: by sample type, else the sample unit. */
	static const struct { const char *type, *units, *name; } cases[] = {
		{ "memory:alloc_space:bytes:space:bytes", "bytes", "alloc_space" },
		{ "goroutines:goroutine:count:goroutine:count", "objects", "goroutine" },
		{ "memory:alloc_objects:count:space:bytes", "objects", "alloc_objects" },
		{ "memory:inuse_objects:count:space:bytes", "objects", "inuse_objects" },
		{ "process_cpu:samples:count:cpu:nanoseconds", "objects", "samples" },
		{ "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "samples", "cpu" },
		{ "wall:wall:nanoseconds:wall:nanoseconds", "nanoseconds", "wall" },
		{ "block:delay:seconds:contentions:count", "seconds", "delay" },
		{ "x:y::p:q", "", "y" },
		{ "not-a-profile-type", "", "not-a-profile-type" },
	};
	int64_t tl[1] = { 0 };
	const struct qmerge *ms[1];
	struct query__flame f;
	struct err_msg msg;
	struct qmerge m;
	struct qctx q;
	struct qtree t;
	struct buf b;
	char want[256];

	(void)state;
	tfx_ctx(&q, &msg, 0);
	assert_int_equal(query__tree_init(&q, &t), 0);
	assert_int_equal(query__flame_build(&q, &t, 0, &f), 0);
	timeline(&m, tl, 0);
	ms[0] = &m;
	buf_init(&b, 1 << 20);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_reset(&b);
		assert_int_equal(query__fb_write(&f, cases[i].type, ms, 1, &b), 0);
		snprintf(want, sizeof(want), "\"units\":\"%s\",\"name\":\"%s\"}", cases[i].units,
			 cases[i].name);
		if (!strstr(b.data, want))
			fail_msg("%s: want %s in %s", cases[i].type, want, b.data);
	}
	/* An empty tree and timeline. */
	buf_reset(&b);
	assert_int_equal(query__fb_write(&f, CPU, ms, 1, &b), 0);
	assert_string_equal(b.data,
		"{\"version\":1,\"flamebearer\":{\"names\":[\"total\"],\"levels\":[[0,0,0,0]],"
		"\"numTicks\":0,\"maxSelf\":0},"
		"\"metadata\":{\"format\":\"single\",\"spyName\":\"\",\"sampleRate\":1000000000,"
		"\"units\":\"samples\",\"name\":\"cpu\"},"
		"\"timeline\":{\"startTime\":1700000000,\"samples\":[],\"durationDelta\":10,"
		"\"watermarks\":{}}}");
	buf_release(&b);
	query__flame_release(&q, &f);
	query__tree_release(&q, &t);
}

static void test_double(void **state)
{
	int64_t ltl[] = { 5 }, rtl[] = { 1, 4 };
	const struct qmerge *ms[2];
	struct query__flame f;
	struct err_msg msg;
	struct qmerge ml, mr;
	struct qctx q;
	struct qtree l, r, d;
	struct buf b;

	(void)state;
	tfx_diff(&q, &msg, &l, &r, &d);
	assert_int_equal(query__flame_build(&q, &d, 1, &f), 0);
	timeline(&ml, ltl, 1);
	timeline(&mr, rtl, 2);
	mr.tl_start_ns += 3600 * 1000000000LL;
	ms[0] = &ml;
	ms[1] = &mr;
	buf_init(&b, 1 << 20);
	assert_int_equal(query__fb_write(&f, CPU, ms, 2, &b), 0);
	assert_string_equal(b.data,
		"{\"version\":1,\"flamebearer\":{"
		"\"names\":[\"total\",\"c\",\"main\",\"a\",\"b\"],"
		"\"levels\":[[0,5,0,0,5,0,0],[0,0,0,0,4,4,1,0,5,0,0,1,0,2],"
		"[0,2,2,4,0,0,3,0,3,3,0,1,1,4]],"
		"\"numTicks\":10,\"maxSelf\":4},"
		"\"metadata\":{\"format\":\"double\",\"spyName\":\"\",\"sampleRate\":1000000000,"
		"\"units\":\"samples\",\"name\":\"cpu\"},"
		"\"leftTimeline\":{\"startTime\":1700000000,\"samples\":[5],\"durationDelta\":10,"
		"\"watermarks\":{}},"
		"\"rightTimeline\":{\"startTime\":1700003600,\"samples\":[1,4],\"durationDelta\":10,"
		"\"watermarks\":{}},\"leftTicks\":5,\"rightTicks\":5}");
	buf_release(&b);
	query__flame_release(&q, &f);
	tfx_diff_end(&q, &l, &r, &d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_double),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
