/*
 * test_merge.c - merge, call tree, maxNodes folding, flamebearer and diff
 * encodings, top and folded outputs, limits; against a real store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include "base/arena.h"
#include "base/json.h"
#include "base/buf.h"
#include "query/query.h"
#include "query/query_int.h"

static const char *names[] = { "main", "run", "serve", "handle", "parse", "alloc", "hash",
			       "write", "read", "lock", "gc", "sort" };

static unsigned rng = 12345;

static unsigned next(void)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 16) & 0x7fff;
}

/* Random stacks rooted at main, depth 1..8, with recursion now and then. */
static void random_stack(char *out, size_t cap)
{
	size_t depth = 1 + next() % 8, n = 0;

	n += (size_t)snprintf(out + n, cap - n, "main");
	for (size_t i = 1; i < depth; i++)
		n += (size_t)snprintf(out + n, cap - n, ";%s", names[1 + next() % 11]);
}

/* Fills `profiles` profiles for each of 2 instances; returns the reference. */
static long long fill(struct fx *f, struct ref *ref, int profiles, int64_t t0)
{
	long long sum = 0;

	for (int inst = 0; inst < 2; inst++) {
		const char *kv[] = { "instance", inst ? "b" : "a", "env", inst ? "staging" : "prod",
				     NULL };

		for (int p = 0; p < profiles; p++) {
			char bufs[20][256];
			const char *stacks[20];
			int64_t values[20];

			for (int i = 0; i < 20; i++) {
				random_stack(bufs[i], sizeof(bufs[i]));
				stacks[i] = bufs[i];
				values[i] = 1 + next() % 100;
				if (ref)
					ref_add(ref, stacks[i], values[i]);
				sum += values[i];
			}
			fx_add(f, "t1", "api", FX_CPU, kv, t0 + p * 10 * FX_SEC, stacks, values, 20,
			       "/usr/bin/api", "aabbcc", 0x1000, 0);
		}
	}
	return sum;
}

static struct query_params params(const char *q)
{
	struct query_params p;

	memset(&p, 0, sizeof(p));
	p.query = q;
	p.from_ns = FX_T0;
	p.until_ns = FX_T0 + 3600 * FX_SEC;
	return p;
}

/* ---- flamebearer decoding ---------------------------------------------------- */

struct dnode {
	long long x, total, self;
	int name, parent;
	char path[2048];
};

/* Decodes levels (4- or 7-tuples, side `side`) back into folded stacks. */
static void decode_levels(const struct json_value *fb, int width, int side, struct ref *out,
			  long long *root_total, int check_sums)
{
	const struct json_value *levels = json_get(fb, "levels"), *nm = json_get(fb, "names");
	struct dnode *prev = NULL, *cur = NULL;
	size_t nprev = 0;

	assert_non_null(levels);
	assert_string_equal(nm->items[0].str, "total");
	for (size_t d = 0; d < levels->n; d++) {
		const struct json_value *lv = &levels->items[d];
		long long end = 0;
		size_t ncur = lv->n / (size_t)width;

		assert_int_equal(lv->n % (size_t)width, 0);
		cur = calloc(ncur ? ncur : 1, sizeof(*cur));
		for (size_t i = 0; i < ncur; i++) {
			const struct json_value *t = &lv->items[i * (size_t)width + (size_t)side * 3];
			struct dnode *n = &cur[i];

			n->x = end + atoll(t[0].str);
			n->total = atoll(t[1].str);
			n->self = atoll(t[2].str);
			n->name = atoi(lv->items[i * (size_t)width + (size_t)width - 1].str);
			end = n->x + n->total;
			n->parent = -1;
			if (d == 0) {
				*root_total = n->total;
				n->path[0] = 0;
				continue;
			}
			for (size_t k = 0; k < nprev; k++)
				if (n->x >= prev[k].x && n->x < prev[k].x + prev[k].total)
					n->parent = (int)k;
			if (n->total == 0)
				continue;
			assert_true(n->parent >= 0);
			snprintf(n->path, sizeof(n->path), "%.900s%s%.900s", prev[n->parent].path,
				 prev[n->parent].path[0] ? ";" : "", nm->items[n->name].str);
			if (n->self)
				ref_add(out, n->path, n->self);
		}
		if (check_sums && d > 0) {
			/* every parent: total == self + children totals */
			for (size_t k = 0; k < nprev; k++) {
				long long s = prev[k].self;

				for (size_t i = 0; i < ncur; i++)
					if (cur[i].parent == (int)k)
						s += cur[i].total;
				assert_int_equal(s, prev[k].total);
			}
		}
		free(prev);
		prev = cur;
		nprev = ncur;
	}
	free(prev);
}

static void parse_json(struct arena *a, const struct buf *b, struct json_value **out)
{
	struct err_msg msg = { { 0 } };
	int rc = json_parse(b->data, b->len, a, out, &msg);

	if (rc)
		fprintf(stderr, "json: %s\n", msg.text);
	assert_int_equal(rc, 0);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_merge_equals_reference(void **state)
{
	struct fx f;
	struct ref ref = { 0 }, got = { 0 }, dec = { 0 };
	struct buf out;
	struct err_msg msg = { { 0 } };
	struct query_params p = params(FX_CPU "{service_name=\"api\"}");
	struct arena a;
	struct json_value *j;
	long long sum, root = -1;

	(void)state;
	fx_open(&f);
	sum = fill(&f, &ref, 12, FX_T0);
	/* outside the range: must not count */
	fill(&f, NULL, 2, FX_T0 + 7200 * FX_SEC);
	buf_init(&out, 1 << 30);
	assert_int_equal(query_folded(f.st, "t1", &p, &out, &msg), 0);
	ref_parse_folded(&got, out.data);
	assert_true(ref_equal(&ref, &got));

	buf_reset(&out);
	p.max_nodes = QUERY_MAX_MAX_NODES;
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), 0);
	arena_init(&a, 1 << 30);
	parse_json(&a, &out, &j);
	assert_int_equal(atoll(json_get(json_get(j, "flamebearer"), "numTicks")->str), sum);
	assert_string_equal(json_get(json_get(j, "metadata"), "format")->str, "single");
	decode_levels(json_get(j, "flamebearer"), 4, 0, &dec, &root, 1);
	assert_int_equal(root, sum);
	assert_true(ref_equal(&ref, &dec));
	{
		const struct json_value *tl = json_get(j, "timeline"), *s = json_get(tl, "samples");
		long long ts = 0;

		for (size_t i = 0; i < s->n; i++)
			ts += atoll(s->items[i].str);
		assert_int_equal(ts, sum);
		assert_true(atoll(json_get(tl, "durationDelta")->str) >= 10);
	}
	arena_release(&a);

	/* other tenants see nothing */
	buf_reset(&out);
	assert_int_equal(query_folded(f.st, "t2", &p, &out, &msg), 0);
	assert_int_equal(out.len, 0);

	/* top: main is on every stack */
	buf_reset(&out);
	assert_int_equal(query_top(f.st, "t1", &p, QUERY_TOP_BY_TOTAL, 3, &out, &msg), 0);
	assert_non_null(strstr(out.data, "100.00%  main"));

	buf_release(&out);
	ref_free(&ref);
	ref_free(&got);
	ref_free(&dec);
	fx_close(&f);
}

static long long folded_sum(struct store *st, const char *q)
{
	struct query_params p = params(q);
	struct buf out;
	struct err_msg msg = { { 0 } };
	struct ref r = { 0 };
	long long s = 0;
	int rc;

	buf_init(&out, 1 << 30);
	rc = query_folded(st, "t1", &p, &out, &msg);
	if (rc)
		fprintf(stderr, "%s: %s\n", q, msg.text);
	assert_int_equal(rc, 0);
	ref_parse_folded(&r, out.data ? out.data : "");
	for (size_t i = 0; i < r.n; i++)
		s += r.v[i];
	ref_free(&r);
	buf_release(&out);
	return s;
}

static void test_selectors_filter(void **state)
{
	struct fx f;
	long long all, a, b;

	(void)state;
	fx_open(&f);
	all = fill(&f, NULL, 3, FX_T0);
	a = folded_sum(f.st, FX_CPU "{instance=\"a\"}");
	b = folded_sum(f.st, FX_CPU "{instance!=\"a\"}");
	assert_true(a > 0 && b > 0);
	assert_int_equal(a + b, all);
	assert_int_equal(folded_sum(f.st, FX_CPU "{env=~\"prod|staging\"}"), all);
	assert_int_equal(folded_sum(f.st, FX_CPU "{env=~\"prod\"}"), a);
	assert_int_equal(folded_sum(f.st, FX_CPU "{env=~\"pro\"}"), 0); /* anchored */
	assert_int_equal(folded_sum(f.st, FX_CPU "{env!~\"prod\", service_name=\"api\"}"), b);
	assert_int_equal(folded_sum(f.st, FX_CPU "{}"), all);
	assert_int_equal(folded_sum(f.st, "memory:alloc_space:bytes:space:bytes{}"), 0);
	fx_close(&f);
}

static void test_two_builds_line_up(void **state)
{
	struct fx f;
	struct query_params p = params(FX_CPU "{service_name=\"api\"}");
	const char *st[] = { "main;serve;handle", "main;serve;parse" };
	int64_t v1[] = { 10, 20 }, v2[] = { 1, 2 };
	struct buf out;
	struct err_msg msg = { { 0 } };
	struct ref got = { 0 }, want = { 0 };

	(void)state;
	fx_open(&f);
	fx_add(&f, "t1", "api", FX_CPU, NULL, FX_T0, st, v1, 2, "/bin/api", "1111", 0x1000, 0);
	fx_add(&f, "t1", "api", FX_CPU, NULL, FX_T0 + FX_SEC, st, v2, 2, "/bin/api2", "2222",
	       0x9000, 0);
	buf_init(&out, 1 << 30);
	assert_int_equal(query_folded(f.st, "t1", &p, &out, &msg), 0);
	ref_parse_folded(&got, out.data);
	ref_add(&want, "main;serve;handle", 11);
	ref_add(&want, "main;serve;parse", 22);
	assert_true(ref_equal(&want, &got));
	ref_free(&got);
	ref_free(&want);

	/* Raw addresses are named <basename>+0x<offset>, per build. */
	fx_add(&f, "t1", "raw", FX_CPU, NULL, FX_T0, st, v1, 1, "/opt/x/libfoo.so", "3333", 0x100, 1);
	buf_reset(&out);
	p.query = FX_CPU "{service_name=\"raw\"}";
	assert_int_equal(query_folded(f.st, "t1", &p, &out, &msg), 0);
	assert_non_null(strstr(out.data, "libfoo.so+0x"));
	assert_null(strstr(out.data, "main"));

	/* The flame graph names raw frames when truncation keeps them (the
	 * tree defers them): the same names and merges as the whole tree's,
	 * also across two builds of one file name. */
	fx_add(&f, "t1", "raw", FX_CPU, NULL, FX_T0 + FX_SEC, st, v2, 2, "/opt/y/libfoo.so", "4444",
	       0x100, 1);
	buf_reset(&out);
	assert_int_equal(query_folded(f.st, "t1", &p, &out, &msg), 0);
	ref_parse_folded(&want, out.data);
	assert_int_equal(want.n, 2);
	buf_reset(&out);
	p.max_nodes = QUERY_MAX_MAX_NODES;
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), 0);
	{
		struct arena a;
		struct json_value *j;
		long long root = -1;

		arena_init(&a, 1 << 30);
		parse_json(&a, &out, &j);
		decode_levels(json_get(j, "flamebearer"), 4, 0, &got, &root, 1);
		assert_int_equal(root, 10 + 1 + 2);
		assert_true(ref_equal(&want, &got));
		arena_release(&a);
	}
	ref_free(&got);
	ref_free(&want);
	buf_release(&out);
	fx_close(&f);
}

static void test_max_nodes_other(void **state)
{
	struct fx f;
	struct query_params p = params(FX_CPU);
	struct buf out;
	struct err_msg msg = { { 0 } };
	struct arena a;
	struct json_value *j;
	struct ref dec = { 0 };
	long long sum, root = -1;

	(void)state;
	fx_open(&f);
	sum = fill(&f, NULL, 5, FX_T0);
	p.max_nodes = 8;
	buf_init(&out, 1 << 30);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), 0);
	assert_non_null(strstr(out.data, "\"other\""));
	arena_init(&a, 1 << 30);
	parse_json(&a, &out, &j);
	decode_levels(json_get(j, "flamebearer"), 4, 0, &dec, &root, 1);
	assert_int_equal(root, sum);
	{
		long long s = 0;
		for (size_t i = 0; i < dec.n; i++)
			s += dec.v[i];
		assert_int_equal(s, sum);
	}
	assert_true(json_get(json_get(j, "flamebearer"), "names")->n <= 10);
	arena_release(&a);
	ref_free(&dec);

	p.max_nodes = QUERY_MAX_MAX_NODES + 1;
	buf_reset(&out);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), ERR_INVALID);
	buf_release(&out);
	fx_close(&f);
}

static void test_diff_self(void **state)
{
	struct fx f;
	struct query_params p = params(FX_CPU "{service_name=\"api\"}"), q2;
	struct buf out;
	struct err_msg msg = { { 0 } };
	struct arena a;
	struct json_value *j;
	const struct json_value *fb, *levels;
	struct ref l = { 0 }, r = { 0 };
	long long sum, lt = 0, rt = 0;

	(void)state;
	fx_open(&f);
	sum = fill(&f, NULL, 4, FX_T0);
	buf_init(&out, 1 << 30);
	assert_int_equal(query_render_diff(f.st, "t1", &p, &p, &out, &msg), 0);
	arena_init(&a, 1 << 30);
	parse_json(&a, &out, &j);
	fb = json_get(j, "flamebearer");
	/* Beside the flamebearer, as Pyroscope writes them. */
	assert_null(json_get(fb, "leftTicks"));
	assert_int_equal(atoll(json_get(j, "leftTicks")->str), sum);
	assert_int_equal(atoll(json_get(j, "rightTicks")->str), sum);
	assert_string_equal(json_get(json_get(j, "metadata"), "format")->str, "double");
	levels = json_get(fb, "levels");
	for (size_t d = 0; d < levels->n; d++) {
		const struct json_value *lv = &levels->items[d];
		for (size_t i = 0; i + 7 <= lv->n; i += 7) {
			assert_string_equal(lv->items[i].str, lv->items[i + 3].str);
			assert_string_equal(lv->items[i + 1].str, lv->items[i + 4].str);
			assert_string_equal(lv->items[i + 2].str, lv->items[i + 5].str);
		}
	}
	decode_levels(fb, 7, 0, &l, &lt, 1);
	decode_levels(fb, 7, 1, &r, &rt, 1);
	assert_int_equal(lt, sum);
	assert_true(ref_equal(&l, &r));
	arena_release(&a);

	q2 = p;
	q2.query = "memory:alloc_space:bytes:space:bytes{}";
	buf_reset(&out);
	assert_int_equal(query_render_diff(f.st, "t1", &p, &q2, &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "differs"));
	buf_release(&out);
	ref_free(&l);
	ref_free(&r);
	fx_close(&f);
}

/* A store of 3 profiles of 2 instances, and a response buffer. */
static void open_filled(struct fx *f, struct buf *out)
{
	fx_open(f);
	fill(f, NULL, 3, FX_T0);
	buf_init(out, 1 << 30);
}

static void test_limits(void **state)
{
	struct fx f;
	struct query_params p = params(FX_CPU);
	struct buf out;
	struct err_msg msg = { { 0 } };

	(void)state;
	open_filled(&f, &out);
	p.limits.max_bytes = 2048;
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "budget"));
	p.limits.max_bytes = 0;
	p.limits.timeout_ns = 1;
	err_clear(&msg);
	buf_reset(&out);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), ERR_TIMEOUT);
	assert_non_null(strstr(msg.text, "deadline"));
	p.limits.timeout_ns = 0;
	p.query = "{service_name=\"api\"}";
	err_clear(&msg);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "profile type"));
	p.query = FX_CPU;
	p.until_ns = p.from_ns;
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), ERR_INVALID);
	buf_release(&out);
	fx_close(&f);
}

/* Sums what a query of every series of t1 in [from, until) reads (query.h). */
struct scan_sum {
	uint64_t ids[16];
	size_t n;
	uint64_t bytes;
};

static int scan_series(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
		       size_t n)
{
	struct scan_sum *s = ctx;

	(void)part;
	(void)l;
	(void)n;
	assert_true(s->n < 16);
	s->ids[s->n++] = id;
	return 0;
}

static int scan_profile_cb(void *ctx, const struct store_profile_view *p)
{
	struct scan_sum *s = ctx;

	s->bytes += 64 + p->n * (p->span_ids ? 20 : 12);
	return 0;
}

/*
 * query_limits.max_scan_bytes: a query reading exactly its budget is
 * answered, one byte less is ERR_TOO_LARGE naming max_query_bytes; what is
 * read twice counts twice (render's timeline, a diff's two sides).
 */
static void test_scan_budget(void **state)
{
	struct fx f;
	struct query_params p = params(FX_CPU), q2;
	struct scan_sum s = { { 0 }, 0, 0 };
	struct buf out;
	struct err_msg msg = { { 0 } };
	int refused = 0;

	(void)state;
	open_filled(&f, &out);
	assert_int_equal(store_series_each(f.st, "t1", scan_series, &s), 0);
	assert_int_equal(s.n, 2);
	for (size_t i = 0; i < s.n; i++)
		assert_true(store_profiles_each(f.st, "t1", s.ids[i], p.from_ns, p.until_ns,
						scan_profile_cb, &s, &msg) >= 0);
	assert_true(s.bytes > 6 * 64);
	/* The pprof export reads the range once. */
	p.limits.max_scan_bytes = s.bytes;
	p.limits.scan_refused = &refused;
	assert_int_equal(query_pprof(f.st, "t1", &p, &out, &msg), 0);
	assert_int_equal(refused, 0);
	p.limits.max_scan_bytes = s.bytes - 1;
	buf_reset(&out);
	assert_int_equal(query_pprof(f.st, "t1", &p, &out, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "reads more than its"));
	assert_non_null(strstr(msg.text, "(max_query_bytes, docs/limits.md)"));
	assert_int_equal(refused, 1);
	p.limits.scan_refused = NULL;
	/* render reads it twice, for the flame graph and for the timeline. */
	p.limits.max_scan_bytes = 2 * s.bytes;
	buf_reset(&out);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), 0);
	p.limits.max_scan_bytes = 2 * s.bytes - 1;
	err_clear(&msg);
	buf_reset(&out);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), ERR_TOO_LARGE);
	/* A diff of the range with itself reads it twice, from one budget. */
	p.limits.max_scan_bytes = 2 * s.bytes;
	q2 = p;
	buf_reset(&out);
	assert_int_equal(query_render_diff(f.st, "t1", &p, &q2, &out, &msg), 0);
	p.limits.max_scan_bytes = 2 * s.bytes - 1;
	q2 = p;
	err_clear(&msg);
	buf_reset(&out);
	assert_int_equal(query_render_diff(f.st, "t1", &p, &q2, &out, &msg), ERR_TOO_LARGE);
	buf_release(&out);
	fx_close(&f);
}

/* Whether the first "samples" array of timeline JSON s holds a nonzero value. */
static int nonzero_sample(const char *s)
{
	const char *p = strstr(s, "\"samples\":[");

	for (p = p ? p + 11 : ""; *p && *p != ']'; p++)
		if (*p >= '1' && *p <= '9')
			return 1;
	return 0;
}

/*
 * render's timeline, summed while collect reads the flame graph's profiles
 * (query__render_tap), is the one a SelectSeries of its own read writes
 * (query__render_timeline without a reader): with and without groupBy,
 * sum and average, profiles in the step before `from` (point 0) and an
 * unaligned range.
 */
static void test_render_timeline_is_select_series(void **state)
{
	static const char *const by_instance[] = { "instance" };
	static const char *const by_two[] = { "instance", "env" };
	static const char *const by_none[] = { "nolabel" };
	static const struct {
		const char *const *by;
		size_t n_by;
		int average;
		int64_t from_s, until_s;
	} cases[] = {
		{ NULL, 0, 0, 95, 300 },         { NULL, 0, 1, 95, 300 },
		{ by_instance, 1, 0, 95, 300 },  { by_two, 2, 1, 95, 300 },
		{ by_none, 1, 0, 95, 300 },      { by_instance, 1, 1, -600, 7200 },
		{ NULL, 0, 0, 381, 395 },
	};
	struct fx f;
	struct buf out;
	struct err_msg msg = { { 0 } };

	(void)state;
	fx_open(&f);
	fill(&f, NULL, 40, FX_T0);
	buf_init(&out, 1 << 30);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct query_params p = params(FX_CPU);
		struct buf tl, groups;
		struct qctx q;

		p.from_ns = FX_T0 + cases[i].from_s * FX_SEC + 123000000;
		p.until_ns = FX_T0 + cases[i].until_s * FX_SEC;
		p.group_by = cases[i].by;
		p.n_group_by = cases[i].n_by;
		p.average = cases[i].average;
		buf_init(&tl, 1 << 30);
		buf_init(&groups, 1 << 30);
		query__ctx_init(&q, f.st, "t1", &p.limits, &msg);
		assert_int_equal(query__render_timeline(&q, &p, NULL, &tl, &groups), 0);
		assert_int_equal(buf_putc(&tl, '\0'), 0);
		assert_int_equal(buf_putc(&groups, '\0'), 0);
		buf_reset(&out);
		assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), 0);
		assert_int_equal(buf_putc(&out, '\0'), 0);
		/* Profiles fell in the timeline (in the groups' with several
		 * series, as Pyroscope's), and render wrote the same. */
		assert_true(nonzero_sample(cases[i].n_by ? groups.data : tl.data));
		assert_non_null(strstr(out.data, tl.data));
		if (cases[i].n_by)
			assert_non_null(strstr(out.data, groups.data));
		buf_release(&tl);
		buf_release(&groups);
	}
	buf_release(&out);
	fx_close(&f);
}

/* A shared budget of `limit` bytes for query_reserve. */
struct grant {
	size_t total, limit;
	int calls;
};

static int grant_grow(void *ctx, size_t bytes)
{
	struct grant *g = ctx;

	if (bytes > g->limit - g->total)
		return ERR_UNAVAILABLE;
	g->total += bytes;
	g->calls++;
	return 0;
}

/*
 * query_limits.reserve: a query takes more of the shared budget as its
 * tables grow, in steps, never past its max_bytes, none when it holds
 * enough already, and fails with ERR_UNAVAILABLE when none is left.
 */
static void test_reserve(void **state)
{
	struct fx f;
	struct query_params p = params(FX_CPU);
	struct grant g = { 0, SIZE_MAX, 0 };
	struct query_reserve r = { grant_grow, &g, 0 };
	struct buf out;
	struct err_msg msg = { { 0 } };

	(void)state;
	open_filled(&f, &out);
	p.limits.reserve = &r;
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), 0);
	assert_int_equal(g.calls, 1);
	assert_int_equal(g.total, QUERY_RESERVE_STEP);
	/* A budget below the step: the step is cut to it. */
	g = (struct grant){ 0, SIZE_MAX, 0 };
	p.limits.max_bytes = 1 << 20;
	buf_reset(&out);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), 0);
	assert_int_equal(g.total, 1 << 20);
	/* Holding it all already: nothing asked. */
	g = (struct grant){ 0, SIZE_MAX, 0 };
	r.held = 1 << 20;
	buf_reset(&out);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), 0);
	assert_int_equal(g.calls, 0);
	/* Nothing left to take. */
	g = (struct grant){ 0, 0, 0 };
	r.held = 0;
	buf_reset(&out);
	assert_int_equal(query_render(f.st, "t1", &p, &out, &msg), ERR_UNAVAILABLE);
	assert_non_null(strstr(msg.text, "server busy: the query needs"));
	buf_release(&out);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_equals_reference),
		cmocka_unit_test(test_selectors_filter),
		cmocka_unit_test(test_two_builds_line_up),
		cmocka_unit_test(test_max_nodes_other),
		cmocka_unit_test(test_diff_self),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_scan_budget),
		cmocka_unit_test(test_render_timeline_is_select_series),
		cmocka_unit_test(test_reserve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
