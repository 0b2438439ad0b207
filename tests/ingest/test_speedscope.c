/* test_speedscope.c - speedscope's file format: sampled and evented
 * profiles, the merge of profiles with one key, units and multipliers,
 * member names in any case, and malformed, truncated and hostile files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/json.h"
#include "ingest/ingest_int.h"
#include "folded.h"

#define SCHEMA "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""
#define FRAMES "\"shared\":{\"frames\":[{\"name\":\"main\"},{\"name\":\"foo\"},{\"name\":\"bar\"}]}"

struct run {
	struct arena a, tree;
	struct ingest_ss_profile *p;
	size_t n;
	struct ingest_pprof out[4];
	struct ingest_limits lim;
	struct err_msg msg;
	int rc;
};

static int run(struct run *r, const char *json)
{
	memset(r, 0, sizeof(*r));
	ingest_limits_default(&r->lim);
	r->lim.max_stack_depth = 16;
	arena_init(&r->a, 64 << 20);
	arena_init(&r->tree, json_mem_bound(strlen(json)) + (1 << 20));
	r->rc = ingest__parse_speedscope(&r->a, &r->tree, json, strlen(json), &r->lim, 16 << 20,
					 &r->p, &r->n, &r->msg);
	for (size_t i = 0; r->rc == 0 && i < r->n && i < 4; i++)
		assert_int_equal(ingest__b_finish(&r->p[i].b, &r->out[i]), 0);
	return r->rc;
}

static void done(struct run *r)
{
	for (size_t i = 0; r->rc == 0 && i < r->n; i++)
		ingest__b_release(&r->p[i].b);
	arena_release(&r->tree);
	arena_release(&r->a);
}

static void test_sampled(void **state)
{
	static const char json[] =
		"{" SCHEMA "," FRAMES ",\"profiles\":["
		"{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"milliseconds\",\"startValue\":0,"
		"\"endValue\":10,\"samples\":[[0,1],[0,1,2],[0,1]],\"weights\":[2.9,3,1]},"
		/* Same name, type, unit and start: merged into the one above. */
		"{\"Type\":\"sampled\",\"NAME\":\"p\",\"unit\":\"milliseconds\",\"startValue\":0,"
		"\"samples\":[[0]],\"weights\":[4]}]}";
	struct run r;
	uint64_t mult;
	(void)state;

	assert_int_equal(run(&r, json), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.p[0].name, "p");
	assert_string_equal(r.p[0].unit, "milliseconds");
	/* Weights are truncated, then multiplied by 100. */
	EXPECT_FOLDED(&r.out[0], { "main;foo", 300 }, { "main;foo;bar", 300 }, { "main", 400 });
	assert_int_equal(ingest__ss_unit("bytes", &mult), 0);
	assert_int_equal(mult, 1);
	assert_int_equal(ingest__ss_unit("furlongs", &mult), ERR_INVALID);
	done(&r);
}

static void test_evented(void **state)
{
	/* main [0, 10): foo [2, 5) with bar [3, 4); baz-less remainder is main's. */
	static const char json[] =
		"{" SCHEMA "," FRAMES ",\"profiles\":["
		"{\"type\":\"evented\",\"name\":\"e\",\"unit\":\"bytes\",\"startValue\":0,"
		"\"endValue\":10,\"events\":["
		"{\"type\":\"O\",\"frame\":0,\"at\":0},{\"type\":\"O\",\"frame\":1,\"at\":2},"
		"{\"type\":\"O\",\"frame\":2,\"at\":3},{\"type\":\"C\",\"frame\":2,\"at\":4},"
		"{\"type\":\"C\",\"frame\":1,\"at\":5},{\"type\":\"C\",\"frame\":0,\"at\":10}]},"
		"{\"type\":\"sampled\",\"name\":\"s\",\"unit\":\"seconds\",\"samples\":[[1]],"
		"\"weights\":[1]}]}";
	struct run r;
	(void)state;

	assert_int_equal(run(&r, json), 0);
	assert_int_equal(r.n, 2);
	EXPECT_FOLDED(&r.out[0], { "main", 2 + 5 }, { "main;foo", 1 + 1 },
		      { "main;foo;bar", 1 });
	assert_int_equal(folded_value(&r.out[1], "foo"), 100);
	done(&r);
}

static void test_errors(void **state)
{
	static const struct {
		const char *json, *err;
	} bad[] = {
		{ "{\"$schema\":\"x\"}", "unknown $schema" },
		{ "[1]", "want an object" },
		{ "{" SCHEMA "," FRAMES ",\"profiles\":[{\"type\":\"sampled\",\"unit\":\"parsecs\"}]}",
		  "unknown unit" },
		{ "{" SCHEMA "," FRAMES ",\"profiles\":[{\"type\":\"other\",\"unit\":\"none\"}]}",
		  "not supported" },
		{ "{" SCHEMA "," FRAMES ",\"profiles\":[{\"type\":\"sampled\",\"unit\":\"none\","
		  "\"samples\":[[0]],\"weights\":[]}]}",
		  "1 samples but 0 weights" },
		{ "{" SCHEMA "," FRAMES ",\"profiles\":[{\"type\":\"sampled\",\"unit\":\"none\","
		  "\"samples\":[[3]],\"weights\":[1]}]}",
		  "frame 3 out of range" },
		{ "{" SCHEMA "," FRAMES ",\"profiles\":[{\"type\":\"sampled\",\"unit\":\"none\","
		  "\"samples\":[[0]],\"weights\":[-1]}]}",
		  "negative weight" },
		{ "{" SCHEMA "," FRAMES ",\"profiles\":[{\"type\":\"evented\",\"unit\":\"none\","
		  "\"events\":[{\"type\":\"C\",\"frame\":0,\"at\":1}]}]}",
		  "no frame open" },
		{ "{" SCHEMA "," FRAMES ",\"profiles\":[{\"type\":\"evented\",\"unit\":\"none\","
		  "\"events\":[{\"type\":\"O\",\"frame\":0,\"at\":2},{\"type\":\"C\",\"frame\":0,"
		  "\"at\":1}]}]}",
		  "out of order" },
		{ "{" SCHEMA "," FRAMES ",\"profiles\":[{\"type\":\"evented\",\"unit\":\"none\","
		  "\"events\":[{\"type\":\"O\",\"frame\":0,\"at\":1},{\"type\":\"C\",\"frame\":1,"
		  "\"at\":2}]}]}",
		  "closes frame 1" },
		{ "{" SCHEMA ",\"shared\":{\"frames\":[{\"name\":3}]}}", "frame name" },
	};
	struct run r;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(run(&r, bad[i].json), ERR_INVALID);
		if (!strstr(r.msg.text, bad[i].err))
			fail_msg("case %zu: want '%s', got '%s'", i, bad[i].err, r.msg.text);
		done(&r);
	}
}

static void test_truncated_and_deep(void **state)
{
	static const char json[] =
		"{" SCHEMA "," FRAMES ",\"profiles\":["
		"{\"type\":\"sampled\",\"name\":\"p\",\"unit\":\"nanoseconds\",\"startValue\":0,"
		"\"samples\":[[0,1],[0,1,2]],\"weights\":[2,3]}]}";
	char buf[sizeof(json)], deep[2048];
	struct run r;
	size_t n;
	(void)state;

	for (size_t len = 0; len + 1 < sizeof(json); len++) {
		memcpy(buf, json, len);
		buf[len] = '\0';
		assert_int_not_equal(run(&r, buf), 0);
		assert_true(r.msg.text[0] != '\0');
		done(&r);
	}
	/* A stack of 17 frames, past the test's limit of 16. */
	n = (size_t)snprintf(deep, sizeof(deep), "{" SCHEMA "," FRAMES
				     ",\"profiles\":[{\"type\":\"sampled\",\"unit\":\"none\","
				     "\"samples\":[[0");
	for (int i = 0; i < 16; i++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, ",1");
	snprintf(deep + n, sizeof(deep) - n, "]],\"weights\":[1]}]}");
	assert_int_equal(run(&r, deep), ERR_TOO_LARGE);
	done(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sampled),
		cmocka_unit_test(test_evented),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_truncated_and_deep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
