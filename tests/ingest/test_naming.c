/* test_naming.c - Pyroscope's names: __name__ of a pprof from its sample
 * types and sample_type_config, the kind suffixes of /ingest names, Alloy's
 * godeltaprof names, the fixes per agent, and sample_type_config parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "ingest/ingest_int.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define BAD1 "{\"a\":{\"display-name\":3}}"
#define BAD2 "{\"a\":{\"sampled\":\"yes\"}}"
#define BAD3 "{\"a\":"

/* pyroscope-go's configurations, as its upload sends them. */
static const char go_mutex[] = "{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":"
			       "\"mutex_count\"},\"delay\":{\"units\":\"lock_nanoseconds\","
			       "\"display-name\":\"mutex_duration\"}}";
static const char go_block[] = "{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":"
			       "\"block_count\"},\"delay\":{\"units\":\"lock_nanoseconds\","
			       "\"display-name\":\"block_duration\"}}";
static const char go_goroutine[] = "{\"goroutine\":{\"units\":\"goroutines\",\"aggregation\":"
				   "\"average\",\"display-name\":\"goroutines\"}}";

static const char *name_with(const char *const *types, size_t n, const char *stc_json,
			     struct arena *a)
{
	struct ingest_stc stc;
	struct err_msg msg = { { 0 } };

	if (!stc_json)
		return ingest__metric_name(types, n, NULL);
	assert_int_equal(ingest__stc_parse(a, stc_json, strlen(stc_json), &stc, &msg), 0);
	return ingest__metric_name(types, n, &stc);
}

/* The sample types of a pprof, its sample_type_config JSON (or NULL), its __name__. */
struct name_case {
	const char *const *types;
	size_t n;
	const char *stc;
	const char *want;
};

static void expect_names(const struct name_case *c, size_t n)
{
	struct arena a;

	arena_init(&a, 1 << 20);
	for (size_t i = 0; i < n; i++) {
		const char *got = name_with(c[i].types, c[i].n, c[i].stc, &a);

		if (strcmp(got, c[i].want))
			fail_msg("%s... with %s: want %s, got %s", c[i].types[0],
				 c[i].stc ? c[i].stc : "no configuration", c[i].want, got);
	}
	arena_release(&a);
}

static void test_metric_name(void **state)
{
	static const char *const go_cpu[] = { "samples", "cpu" };
	static const char *const go_heap[] = { "alloc_objects", "alloc_space", "inuse_objects",
					       "inuse_space" };
	static const char *const go_lock[] = { "contentions", "delay" };
	static const char *const go_gr[] = { "goroutine" };
	static const char *const node_wall[] = { "samples", "wall" };
	static const char *const node_heap[] = { "inuse_objects", "inuse_space" };
	static const char *const dotnet[] = { "cpu", "exception", "alloc_samples", "alloc_size",
					      "lock_count", "lock_time" };
	static const char *const odd[] = { "foo", "bar" };
	/* Without a configuration: Pyroscope's defaults. */
	static const struct name_case defaults[] = {
		{ go_cpu, N(go_cpu), NULL, "process_cpu" },
		{ go_heap, N(go_heap), NULL, "memory" },
		/* Go's block profile reads as mutex ... */
		{ go_lock, N(go_lock), NULL, "mutex" },
		{ go_gr, N(go_gr), NULL, "goroutines" },
		{ node_wall, N(node_wall), NULL, "wall" },
		{ node_heap, N(node_heap), NULL, "memory" },
		{ dotnet, N(dotnet), NULL, "process_cpu" },
		/* Nothing matches: the last sample type. */
		{ odd, N(odd), NULL, "bar" },
	};
	static const struct name_case configured[] = {
		/* ... with pyroscope-go's configurations, the two kinds are apart. */
		{ go_lock, N(go_lock), go_mutex, "mutex" },
		{ go_lock, N(go_lock), go_block, "block" },
		{ go_gr, N(go_gr), go_goroutine, "goroutines" },
		/* A configuration replaces the defaults whole: goroutine without a display name. */
		{ go_gr, N(go_gr), go_mutex, "goroutine" },
	};
	(void)state;

	expect_names(defaults, N(defaults));
	expect_names(configured, N(configured));
}

static void test_stc_parse(void **state)
{
	struct ingest_stc stc;
	struct err_msg msg = { { 0 } };
	const struct ingest_stc_entry *e;
	struct arena a;
	static const char mixed[] = "{\"alloc_space\":{\"Units\":\"bytes\",\"Display-Name\":\"x\","
				    "\"cumulative\":true,\"sampled\":false,\"other\":[1]},"
				    "\"inuse_space\":null}";
	(void)state;

	arena_init(&a, 1 << 20);
	assert_int_equal(ingest__stc_parse(&a, mixed, strlen(mixed), &stc, &msg), 0);
	assert_int_equal(stc.n, 2);
	e = ingest__stc_find(&stc, "alloc_space");
	assert_non_null(e);
	assert_string_equal(e->display, "x");
	assert_string_equal(e->units, "bytes");
	assert_int_equal(e->cumulative, 1);
	assert_null(ingest__stc_find(&stc, "inuse_space")->display);
	assert_null(ingest__stc_find(&stc, "cpu"));
	/* The defaults. */
	assert_string_equal(ingest__stc_find(NULL, "samples")->display, "cpu");
	assert_string_equal(ingest__stc_find(NULL, "inuse_space")->aggregation, "average");
	/* Errors name the member. */
	assert_int_equal(ingest__stc_parse(&a, "[1]", strlen("[1]"), &stc, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "want an object"));
	err_clear(&msg);
	assert_int_equal(ingest__stc_parse(&a, BAD1, strlen(BAD1), &stc, &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "a.display-name"));
	err_clear(&msg);
	assert_int_equal(ingest__stc_parse(&a, BAD2, strlen(BAD2), &stc, &msg),
			 ERR_INVALID);
	err_clear(&msg);
	assert_int_equal(ingest__stc_parse(&a, BAD3, strlen(BAD3), &stc, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "sample_type_config: json"));
	/* Every prefix of a valid one fails cleanly. */
	for (size_t n = 0; n + 1 < sizeof(go_mutex) - 1; n++) {
		err_clear(&msg);
		assert_int_equal(ingest__stc_parse(&a, go_mutex, n, &stc, &msg), ERR_INVALID);
		assert_true(msg.text[0] != '\0');
	}
	arena_release(&a);
}

static void test_kinds(void **state)
{
	const struct ingest_text_kind *k;
	(void)state;

	assert_string_equal(ingest__kind_name("cpu", 3), "process_cpu");
	assert_string_equal(ingest__kind_name("goroutines", 10), "goroutines");
	assert_string_equal(ingest__kind_name("block_duration", 14), "block");
	assert_null(ingest__kind_name("foo", 3));
	k = ingest__text_kind("goroutines");
	assert_string_equal(k->name, "goroutine");
	assert_string_equal(k->type, "goroutines");
	k = ingest__text_kind("lock_duration");
	assert_string_equal(k->name, "block");
	assert_string_equal(k->unit, "nanoseconds");
	assert_string_equal(ingest__text_kind("itimer")->timed_type, "cpu");
	assert_string_equal(ingest__text_kind("milliseconds")->timed_type, "wall");
	assert_null(ingest__text_kind("inuse_space")->timed_type);
	assert_null(ingest__text_kind("none"));
}

static void test_relabel_and_spies(void **state)
{
	struct ingest_stc stc;
	struct ingest_stc_entry e = { "inuse-space", NULL, NULL, NULL, 0, 0 };
	(void)state;

	assert_string_equal(ingest__relabel_name("godeltaprof_memory"), "memory");
	assert_string_equal(ingest__relabel_name("godeltaprof_mutex"), "mutex");
	assert_string_equal(ingest__relabel_name("godeltaprof_"), "godeltaprof_");
	assert_string_equal(ingest__relabel_name("process_cpu"), "process_cpu");
	assert_int_equal(ingest__spy_fixes("gospy", NULL), INGEST_FIX_TIME);
	assert_int_equal(ingest__spy_fixes("dotnetspy", NULL), INGEST_FIX_TIME | INGEST_FIX_DOTNET);
	assert_int_equal(ingest__spy_fixes("pyspy", NULL),
			 INGEST_FIX_TIME | INGEST_FIX_SCRIPTING | INGEST_FIX_PYSPY);
	assert_int_equal(ingest__spy_fixes("rbspy", NULL), INGEST_FIX_TIME | INGEST_FIX_SCRIPTING);
	stc.e = &e;
	stc.n = 1;
	/* An old .NET agent that did not say its name. */
	assert_int_equal(ingest__spy_fixes(NULL, &stc), INGEST_FIX_TIME | INGEST_FIX_DOTNET);
	assert_int_equal(ingest__spy_fixes("gospy", &stc), INGEST_FIX_TIME);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metric_name),
		cmocka_unit_test(test_stc_parse),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_relabel_and_spies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
