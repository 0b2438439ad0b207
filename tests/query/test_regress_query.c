/*
 * test_regress_query.c - the regression report over a real store: two
 * releases by label, whose profiles are the repeated measurements; one
 * function twice as costly in the second; frames of a mapping without
 * names reported per build ID and never judged; releases resolved by
 * label and by build ID; the three encodings and the verdict.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "query/regress.h"

static const char *const stacks[] = { "main;serve;parse", "main;serve;encode", "main;gc" };

/* Six profiles a release; release 2 doubles encode's cost.  Returns nothing; aborts on error. */
static void fill(struct fx *f)
{
	const char *v1[] = { "version", "1", NULL }, *v2[] = { "version", "2", NULL };
	const char *const raw[] = { "main;libfoo_hot" };
	const int64_t rawv[] = { 30 };

	for (int i = 0; i < 6; i++) {
		int64_t a[] = { 500 + 7 * i, 300 - 5 * i, 200 + 3 * i };
		int64_t b[] = { 500 - 6 * i, 600 + 8 * i, 200 - 2 * i };

		fx_add(f, "t1", "api", FX_CPU, v1, FX_T0 + i * 10 * FX_SEC, stacks, a, 3, "/usr/bin/api",
		       "aa01", 0x1000, 0);
		fx_add(f, "t1", "api", FX_CPU, v2, FX_T0 + (100 + i * 10) * FX_SEC, stacks, b, 3,
		       "/usr/bin/api", "aa02", 0x1000, 0);
		/* A service nobody uploaded symbols for: raw addresses. */
		fx_add(f, "t1", "raw", FX_CPU, v1, FX_T0 + i * 10 * FX_SEC + 1, raw, rawv, 1,
		       "/usr/lib/libfoo.so", "bb01", 0x3000, 1);
		fx_add(f, "t1", "raw", FX_CPU, v2, FX_T0 + (100 + i * 10) * FX_SEC + 1, raw, rawv, 1,
		       "/usr/lib/libfoo.so", "bb01", 0x3000, 1);
	}
}

static const struct json_value *row(const struct json_value *rows, const char *name)
{
	for (size_t i = 0; i < rows->n; i++)
		if (!strcmp(json_get(&rows->items[i], "function")->str, name))
			return &rows->items[i];
	return NULL;
}

static void test_report(void **state)
{
	struct query_regress_params rp;
	struct release_labels rl;
	struct release_sel sel[2];
	struct err_msg msg = { { 0 } };
	struct arena a;
	struct json_value *v;
	const struct json_value *rows, *r;
	struct buf out;
	struct fx f;
	int failed = -1;

	(void)state;
	fx_open(&f);
	fill(&f);
	assert_int_equal(release_labels_parse(NULL, &rl, &msg), 0);
	assert_int_equal(release_resolve(f.st, "t1", "api", "1", NULL, &rl, NULL, &sel[0], &msg), 0);
	assert_string_equal(sel[0].query, FX_CPU "{service_name=\"api\",version=\"1\"}");
	assert_string_equal(sel[0].label, "version");
	assert_int_equal(release_resolve(f.st, "t1", "api", "2", "version", &rl, NULL, &sel[1], &msg), 0);
	err_clear(&msg);
	assert_int_equal(release_resolve(f.st, "t1", "api", "3", NULL, &rl, NULL, &sel[1], &msg),
			 ERR_NOT_FOUND);
	assert_non_null(strstr(msg.text, "no release \"3\""));
	assert_int_equal(release_resolve(f.st, "t1", "nope", "1", NULL, &rl, NULL, &sel[1], &msg),
			 ERR_NOT_FOUND);
	/* A build ID names a release too, for services without labels. */
	assert_int_equal(release_resolve(f.st, "t1", "api", "aa02aa02", NULL, &rl, NULL, &sel[1],
					 &msg), 0);
	assert_string_equal(sel[1].label, RELEASE_BY_BUILD_ID);
	assert_string_equal(sel[1].build_id, "aa02aa02");
	assert_int_equal(release_resolve(f.st, "t1", "api", "2", NULL, &rl, NULL, &sel[1], &msg), 0);

	memset(&rp, 0, sizeof(rp));
	for (int s = 0; s < 2; s++) {
		rp.side[s].p.query = sel[s].query;
		rp.side[s].p.from_ns = FX_T0 - FX_SEC;
		rp.side[s].p.until_ns = FX_T0 + 1000 * FX_SEC;
		rp.side[s].title = s ? "2" : "1";
	}
	regress_params_default(&rp.stats);
	rp.stats.fail_on = 0.05;
	rp.format = QUERY_REGRESS_JSON;
	rp.report = QUERY_REGRESS_MARKDOWN;
	rp.extra = 20;
	buf_init(&out, 1 << 20);
	assert_int_equal(query_regress(f.st, "t1", &rp, &out, &failed, &msg), 0);
	assert_int_equal(failed, 1);
	arena_init(&a, json_mem_bound(out.len));
	assert_int_equal(json_parse(out.data, out.len, &a, &v, &msg), 0);
	assert_string_equal(json_get(v, "verdict")->str, "fail");
	assert_string_equal(json_get(json_get(v, "baseline"), "profiles")->str, "6");
	rows = json_get(v, "rows");
	/* encode doubled: first, on self. */
	r = &rows->items[0];
	assert_string_equal(json_get(r, "function")->str, "encode");
	assert_string_equal(json_get(json_get(r, "self"), "verdict")->str, "regressed");
	/* Its caller serve on total; parse and gc unchanged once normalised. */
	assert_string_equal(json_get(json_get(row(rows, "serve"), "total"), "verdict")->str, "regressed");
	assert_string_equal(json_get(json_get(row(rows, "parse"), "self"), "verdict")->str, "unchanged");
	assert_string_equal(json_get(json_get(row(rows, "gc"), "self"), "verdict")->str, "unchanged");
	assert_non_null(strstr(json_get(v, "report")->str, "**FAIL**"));
	arena_release(&a);

	/* Text; and no regression at all between a release and itself. */
	buf_reset(&out);
	rp.format = QUERY_REGRESS_TEXT;
	assert_int_equal(query_regress(f.st, "t1", &rp, &out, &failed, &msg), 0);
	assert_non_null(strstr(out.data, "FAIL: "));
	buf_reset(&out);
	rp.side[1].p.query = sel[0].query;
	assert_int_equal(query_regress(f.st, "t1", &rp, &out, &failed, &msg), 0);
	assert_int_equal(failed, 0);
	assert_non_null(strstr(out.data, "PASS: no regression found"));

	/* Unnamed code: one row for its build ID, never judged, never hex. */
	buf_reset(&out);
	rp.format = QUERY_REGRESS_JSON;
	rp.report = QUERY_REGRESS_JSON;
	for (int s = 0; s < 2; s++) {
		assert_int_equal(release_resolve(f.st, "t1", "raw", s ? "2" : "1", NULL, &rl, NULL,
						 &sel[s], &msg), 0);
		rp.side[s].p.query = sel[s].query;
	}
	assert_int_equal(query_regress(f.st, "t1", &rp, &out, &failed, &msg), 0);
	arena_init(&a, json_mem_bound(out.len));
	assert_int_equal(json_parse(out.data, out.len, &a, &v, &msg), 0);
	rows = json_get(v, "rows");
	r = row(rows, "bb01");
	assert_non_null(r);
	assert_true(json_get(r, "unnamed")->boolean);
	assert_string_equal(json_get(r, "mapping")->str, "libfoo.so");
	assert_string_equal(json_get(r, "buildID")->str, "bb01");
	assert_string_equal(json_get(json_get(r, "self"), "verdict")->str, "unnamed");
	assert_string_equal(json_get(r, "status")->str,
			    "not symbolized (the server has no symbolizer)");
	for (size_t i = 0; i < rows->n; i++)
		assert_null(strstr(json_get(&rows->items[i], "function")->str, "+0x"));
	assert_null(json_get(v, "report"));
	arena_release(&a);

	/* Errors: a selector without a type, two types. */
	buf_reset(&out);
	rp.side[1].p.query = "{service_name=\"api\"}";
	assert_int_equal(query_regress(f.st, "t1", &rp, &out, &failed, &msg), ERR_INVALID);
	rp.side[1].p.query = "memory:alloc_space:bytes:space:bytes{service_name=\"api\"}";
	err_clear(&msg);
	assert_int_equal(query_regress(f.st, "t1", &rp, &out, &failed, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "differs"));
	buf_release(&out);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
