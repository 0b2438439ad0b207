/* test_jfr.c - JFR chunks into one profile per event kind: values, frame
 * names, the wall setting, pyroscope-java's context labels, several chunks,
 * and truncated, corrupted and hostile input (bounded time, no crash, a
 * message on every failure). Chunks come from jfr_build.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/arena.h"
#include "base/err.h"
#include "ingest/ingest_int.h"
#include "jfr_build.h"

/* ---- reading results ------------------------------------------------------------ */

struct result {
	struct arena a;
	struct ingest_jfr j;
	struct ingest_pprof p[INGEST_JFR_KINDS];
	struct err_msg msg;
	int rc;
};

static int parse(struct result *r, const void *data, size_t len, const void *labels,
		 size_t labels_len, uint32_t rate)
{
	static const struct store_label base[] = { { "service_name", "app" } };
	struct ingest_limits lim;

	ingest_limits_default(&lim);
	memset(r, 0, sizeof(*r));
	arena_init(&r->a, (size_t)256 << 20);
	r->rc = ingest__parse_jfr(&r->a, data, len, labels, labels_len, &lim, rate, base, 1, &r->j,
				  &r->msg);
	for (size_t i = 0; r->rc == 0 && i < r->j.n; i++)
		assert_int_equal(ingest__b_finish(&r->j.p[i].b, &r->p[i]), 0);
	return r->rc;
}

static void done(struct result *r)
{
	ingest__jfr_release(&r->j);
	arena_release(&r->a);
}

/* The profile of the kind named metric + first sample type. */
static const struct ingest_pprof *kind(struct result *r, const char *metric, const char *type)
{
	for (size_t i = 0; i < r->j.n; i++)
		if (strcmp(r->j.p[i].kind->metric, metric) == 0 &&
		    strcmp(r->j.p[i].kind->types[0], type) == 0)
			return &r->p[i];
	fail_msg("no kind %s %s", metric, type);
	return NULL;
}

/* "root;...;leaf:line" of sample i, plus its group's labels. */
static void stack_str(const struct ingest_pprof *p, size_t i, char *out, size_t cap)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t k = p->sample_off[i + 1]; k > p->sample_off[i]; k--) {
		const struct ingest_location *l = &p->locations[p->stack_locs[k - 1]];

		n += (size_t)snprintf(out + n, cap - n, "%s%s:%lld", n ? ";" : "",
				      p->functions[l->lines[0].function - 1].name,
				      (long long)l->lines[0].line);
	}
	for (size_t g = 0; g < p->groups[p->sample_group[i]].n_labels; g++)
		n += (size_t)snprintf(out + n, cap - n, " %s=%s",
				      p->groups[p->sample_group[i]].labels[g].name,
				      p->groups[p->sample_group[i]].labels[g].value);
}

/* Value `t` of the sample whose stack_str is `want`, or -1. */
static int64_t value_of(const struct ingest_pprof *p, const char *want, size_t t)
{
	char s[512];

	for (size_t i = 0; i < p->n_samples; i++) {
		stack_str(p, i, s, sizeof(s));
		if (strcmp(s, want) == 0)
			return p->values[i * p->n_types + t];
	}
	return -1;
}

static int64_t total(const struct ingest_pprof *p, size_t t)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->n_samples; i++)
		sum += p->values[i * p->n_types + t];
	return sum;
}

/* ---- fixtures ----------------------------------------------------------------------- */

static const struct jb_event basic[] = {
	{ JB_EXEC, 1, 1, 0, 0, NULL, NULL },
	{ JB_EXEC, 1, 1, 0, 0, NULL, NULL },
	{ JB_EXEC, 1, 1, 0, 0, NULL, NULL },
	{ JB_EXEC, 2, 2, 0, 0, NULL, NULL },  /* sleeping: not CPU */
	{ JB_EXEC, 3, 1, 1, 0, NULL, NULL },  /* context 1 */
	{ JB_EXEC, 3, 1, 1, 0, NULL, NULL },
	{ JB_EXEC, 0, 1, 0, 0, NULL, NULL },  /* no stack: dropped */
	{ JB_EXEC, 4, 1, 0, 0, NULL, NULL },  /* its leaf method is unknown */
	{ JB_OTHER, 1, 0, 0, 0, NULL, NULL }, /* not read */
	{ JB_ALLOCS, 1, 0, 0, 100, NULL, NULL },
	{ JB_ALLOCS, 1, 0, 0, 50, NULL, NULL },
	{ JB_ALLOCS, 2, 0, 0, 200, NULL, NULL },
	{ JB_MON, 1, 0, 1, 2000, NULL, NULL }, /* 2000 ticks of 0.5 ns */
	{ JB_PARK, 2, 0, 0, 4000, NULL, NULL },
	{ JB_TLAB, 2, 0, 0, 4096, NULL, NULL },
	{ JB_OUTTLAB, 1, 0, 0, 70000, NULL, NULL },
	{ JB_LIVE, 2, 0, 0, 64, NULL, NULL },
	{ JB_MALLOC, 1, 0, 0, 512, NULL, NULL },
	{ JB_EMPTYARR, 0, 0, 0, 3, NULL, NULL },
};

/* ---- tests ---------------------------------------------------------------------------- */

static void test_events(void **state)
{
	struct jb b = { 0 };
	struct result r;
	const struct ingest_pprof *p;
	(void)state;

	jb_chunk(&b, basic, sizeof(basic) / sizeof(basic[0]), 2000000000ULL);
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 100), 0);
	assert_string_equal(r.j.event, "");
	assert_int_equal(r.j.period, 10000000);
	p = kind(&r, "process_cpu", "cpu");
	assert_int_equal(total(p, 0), 6 * 10000000LL);
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 0), 3 * 10000000LL);
	/* No labels part: context ids make no labels. */
	assert_int_equal(value_of(p, "Foo.main:5;Foo$$Lambda_.run:1", 0), 2 * 10000000LL);
	assert_int_equal(value_of(p, "Foo.main:6", 0), 10000000LL);
	assert_int_equal(value_of(p, "Foo.main:4;Foo.baz:20", 0), -1);
	assert_int_equal(kind(&r, "wall", "wall")->n_samples, 0);
	p = kind(&r, "memory", "alloc_sample_objects");
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 0), 2);
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 1), 150);
	assert_int_equal(value_of(p, "Foo.main:4;Foo.baz:20", 1), 200);
	p = kind(&r, "mutex", "contentions");
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 0), 1);
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 1), 1000); /* ticks -> ns */
	p = kind(&r, "block", "contentions");
	assert_int_equal(value_of(p, "Foo.main:4;Foo.baz:20", 1), 2000);
	p = kind(&r, "memory", "alloc_in_new_tlab_objects");
	assert_int_equal(value_of(p, "Foo.main:4;Foo.baz:20", 1), 4096);
	p = kind(&r, "memory", "alloc_outside_tlab_objects");
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 1), 70000);
	p = kind(&r, "memory", "live");
	assert_int_equal(total(p, 0), 1);
	p = kind(&r, "memory", "malloc_objects");
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 1), 512);
	assert_string_equal(r.j.p[0].kind->period_type, "cpu");
	assert_int_equal(r.j.events, sizeof(basic) / sizeof(basic[0]) - 2); /* not OTHER, EMPTYARR */
	done(&r);
	/* A sample rate of 0 makes every sample worth nothing, as in Pyroscope. */
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 0), 0);
	assert_int_equal(total(kind(&r, "process_cpu", "cpu"), 0), 0);
	done(&r);
	free(b.p);
}

/* JVM-generated names lose their per-process part, as in Pyroscope. */
static void test_renames(void **state)
{
	static const struct jb_event ev[] = { { JB_EXEC, 5, 1, 0, 0, NULL, NULL } };
	struct jb b = { 0 };
	struct result r;
	(void)state;

	jb_chunk(&b, ev, 1, 1000000000ULL);
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 100), 0);
	assert_int_equal(value_of(kind(&r, "process_cpu", "cpu"),
				  "Svc$$EnhancerBySpringCGLIB$$_.run:2;"
				  "jdk/internal/reflect/GeneratedMethodAccessor_.invoke:0",
				  0),
			 10000000);
	done(&r);
	free(b.p);
}

static void test_wall_setting(void **state)
{
	static const struct jb_event ev[] = {
		{ JB_SETTING, 0, 0, 0, 0, "event", "wall" },
		{ JB_EXEC, 1, 1, 0, 0, NULL, NULL },
		{ JB_WALL, 2, 1, 0, 5, NULL, NULL }, /* runnable: cpu and wall */
		{ JB_WALL, 2, 2, 0, 7, NULL, NULL }, /* sleeping: wall only */
	};
	struct jb b = { 0 };
	struct result r;
	const struct ingest_pprof *p;
	(void)state;

	jb_chunk(&b, ev, 4, 1000000000ULL);
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 1000), 0);
	assert_string_equal(r.j.event, "wall");
	p = kind(&r, "wall", "wall");
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 0), 1000000);
	assert_int_equal(value_of(p, "Foo.main:4;Foo.baz:20", 0), 12 * 1000000LL);
	p = kind(&r, "process_cpu", "cpu");
	assert_int_equal(value_of(p, "Foo.main:4;Foo.baz:20", 0), 5 * 1000000LL);
	assert_int_equal(total(p, 0), 6 * 1000000LL);
	done(&r);
	free(b.p);
}

static void test_context_labels(void **state)
{
	static const uint8_t snap[] = {
		/* contexts: {1: {10: 11, 12: 13}} */
		0x0a, 0x10, 0x08, 0x01, 0x12, 0x0c,
		0x0a, 0x04, 0x08, 0x0a, 0x10, 0x0b,
		0x0a, 0x04, 0x08, 0x0c, 0x10, 0x0d,
		/* strings: 10 controller, 11 slow, 12 service_name, 13 other */
		0x12, 0x0e, 0x08, 0x0a, 0x12, 0x0a, 'c', 'o', 'n', 't', 'r', 'o', 'l', 'l', 'e', 'r',
		0x12, 0x08, 0x08, 0x0b, 0x12, 0x04, 's', 'l', 'o', 'w',
		0x12, 0x10, 0x08, 0x0c, 0x12, 0x0c, 's', 'e', 'r', 'v', 'i', 'c', 'e', '_', 'n', 'a',
		'm', 'e',
		0x12, 0x09, 0x08, 0x0d, 0x12, 0x05, 'o', 't', 'h', 'e', 'r',
	};
	uint8_t bad[sizeof(snap)];
	struct jb b = { 0 };
	struct result r;
	const struct ingest_pprof *p;
	(void)state;

	jb_chunk(&b, basic, sizeof(basic) / sizeof(basic[0]), 1000000000ULL);
	assert_int_equal(parse(&r, b.p, b.n, snap, sizeof(snap), 100), 0);
	p = kind(&r, "process_cpu", "cpu");
	/* service_name is the series' own: the context's is left out. */
	assert_int_equal(value_of(p, "Foo.main:5;Foo$$Lambda_.run:1 controller=slow", 0),
			 2 * 10000000LL);
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10", 0), 3 * 10000000LL);
	p = kind(&r, "mutex", "contentions");
	assert_int_equal(value_of(p, "Foo.main:3;Foo.bar:10 controller=slow", 1), 2000);
	done(&r);
	/* A label name that is not one. */
	memcpy(bad, snap, sizeof(snap));
	bad[26] = '-';
	assert_int_equal(parse(&r, b.p, b.n, bad, sizeof(bad), 100), ERR_INVALID);
	assert_non_null(strstr(r.msg.text, "label name"));
	done(&r);
	/* Not a LabelsSnapshot. */
	assert_int_equal(parse(&r, b.p, b.n, "\x0a\xff", 2, 100), ERR_INVALID);
	assert_non_null(strstr(r.msg.text, "LabelsSnapshot"));
	done(&r);
	free(b.p);
}

static void test_chunks(void **state)
{
	struct jb b = { 0 };
	struct result r;
	(void)state;

	jb_chunk(&b, basic, sizeof(basic) / sizeof(basic[0]), 1000000000ULL);
	jb_chunk(&b, basic, sizeof(basic) / sizeof(basic[0]), 1000000000ULL);
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 100), 0);
	assert_int_equal(total(kind(&r, "process_cpu", "cpu"), 0), 12 * 10000000LL);
	assert_int_equal(kind(&r, "process_cpu", "cpu")->n_samples, 3);
	done(&r);
	free(b.p);
}

static void test_header_errors(void **state)
{
	struct jb b = { 0 };
	struct result r;
	(void)state;

	jb_chunk(&b, basic, 2, 1000000000ULL);
	b.p[5] = 1; /* format 1.x */
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 100), ERR_INVALID);
	assert_non_null(strstr(r.msg.text, "format 1.1 not supported"));
	done(&r);
	b.p[5] = 2;
	b.p[0] = 'X';
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 100), ERR_INVALID);
	assert_non_null(strstr(r.msg.text, "magic"));
	done(&r);
	assert_int_equal(parse(&r, "", 0, NULL, 0, 100), ERR_INVALID);
	done(&r);
	free(b.p);
}

/* Every prefix fails with a message, every time fast. */
static void test_truncated(void **state)
{
	struct jb b = { 0 };
	struct result r;
	(void)state;

	jb_chunk(&b, basic, sizeof(basic) / sizeof(basic[0]), 1000000000ULL);
	for (size_t n = 0; n < b.n; n++) {
		if (parse(&r, b.p, n, NULL, 0, 100) == 0)
			fail_msg("a prefix of %zu of %zu bytes parsed", n, b.n);
		if (!r.msg.text[0])
			fail_msg("prefix %zu: no message", n);
		done(&r);
	}
	free(b.p);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random byte changes: never a crash, a message on every failure. */
static void test_corrupted(void **state)
{
	struct jb b = { 0 };
	struct result r;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	uint8_t *copy;
	(void)state;

	jb_chunk(&b, basic, sizeof(basic) / sizeof(basic[0]), 1000000000ULL);
	copy = malloc(b.n);
	for (int round = 0; round < 3000; round++) {
		memcpy(copy, b.p, b.n);
		for (int k = 0; k < 1 + round % 4; k++) {
			size_t at = 68 + (size_t)(rnd(&seed) % (b.n - 68));

			copy[at] = (uint8_t)rnd(&seed);
		}
		if (parse(&r, copy, b.n, NULL, 0, 100) && !r.msg.text[0])
			fail_msg("round %d: failed without a message", round);
		done(&r);
	}
	free(copy);
	free(b.p);
}

/* A huge array of a type without fields costs no bytes: the step budget ends it. */
static void test_empty_type_bomb(void **state)
{
	struct jb b = { 0 };
	struct result r;
	clock_t t0 = clock();
	(void)state;

	jb_chunk_bomb(&b, basic, 3, 1000000000ULL, (uint64_t)1 << 40);
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 100), ERR_INVALID);
	assert_non_null(strstr(r.msg.text, "more values than"));
	assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0);
	done(&r);
	free(b.p);
}

/* Measures (never asserts) the speed on a recording of many events. */
static void test_speed(void **state)
{
	enum { N = 200000 };
	struct jb_event *ev = calloc(N, sizeof(*ev));
	struct jb b = { 0 };
	struct result r;
	struct timespec t0, t1;
	double s;
	(void)state;

	for (size_t i = 0; i < N; i++) {
		ev[i].type = i % 3 ? JB_EXEC : JB_ALLOCS;
		ev[i].stack = 1 + i % 4;
		ev[i].state = 1;
		ev[i].value = 64;
	}
	jb_chunk(&b, ev, N, 1000000000ULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(parse(&r, b.p, b.n, NULL, 0, 100), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("jfr: %d events (%zu bytes) parsed in %.3f s: %.0f events/s, %.1f MB/s\n", N, b.n, s,
	       N / s, (double)b.n / s / 1e6);
	done(&r);
	free(ev);
	free(b.p);
}

/* With UNHEX_JFR_SEEDS=dir, writes the fuzz seeds (tests/fuzz/corpus/fuzz_jfr). */
static void write_seeds(void)
{
	const char *dir = getenv("UNHEX_JFR_SEEDS");
	static const struct jb_event wall[] = {
		{ JB_SETTING, 0, 0, 0, 0, "event", "wall" },
		{ JB_WALL, 2, 1, 1, 5, NULL, NULL },
		{ JB_EXEC, 3, 1, 1, 0, NULL, NULL },
	};
	struct jb b = { 0 };
	char path[512];
	FILE *f;

	if (!dir)
		return;
	for (int i = 0; i < 2; i++) {
		b.n = 0;
		if (i == 0)
			jb_chunk(&b, basic, sizeof(basic) / sizeof(basic[0]), 1000000000ULL);
		else
			jb_chunk(&b, wall, 3, 1000000000ULL);
		snprintf(path, sizeof(path), "%s/%s.jfr", dir, i == 0 ? "jdk_events" : "wall_ctx");
		f = fopen(path, "wb");
		if (!f || fwrite(b.p, 1, b.n, f) != b.n)
			abort();
		fclose(f);
	}
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_renames),
		cmocka_unit_test(test_wall_setting),
		cmocka_unit_test(test_context_labels),
		cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_header_errors),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupted),
		cmocka_unit_test(test_empty_type_bomb),
		cmocka_unit_test(test_speed),
	};

	write_seeds();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
