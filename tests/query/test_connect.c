/*
 * test_connect.c - Connect JSON of querier.v1.QuerierService (query/connect.c)
 * over a small real store, with exact expected answers: requests decoded by
 * the proto3 JSON mapper (lowerCamel and original field names, int64 as
 * numbers or strings, members unhex does not read ignored), responses with
 * every field written as Pyroscope's clients read them; the typed label
 * methods of the legacy routes; and malformed requests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include "base/arena.h"
#include "base/buf.h"
#include "query/query.h"

#include "types.pb-c.h"

#define FROM "1700000000000"
#define TO "1700003600000"
#define RANGE "\"start\":" FROM ",\"end\":\"" TO "\""

static struct fx f;

static int setup(void **state)
{
	(void)state;
	fx_open(&f);
	fx_fill_small(&f, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_close(&f);
	return 0;
}

/* Calls `method` with the JSON `req` and checks the answer is exactly `want`. */
static void call(const char *method, const char *req, const char *want)
{
	struct err_msg msg = { { 0 } };
	struct buf out;
	int rc;

	buf_init(&out, 1 << 20);
	rc = query_connect(f.st, "t1", method, req, strlen(req), NULL, &out, &msg);
	if (rc)
		fail_msg("%s %s: %s", method, req, msg.text);
	assert_string_equal(out.data, want);
	buf_release(&out);
}

static void answer_ex(const char *method, const char *req, struct buf *out);

/* As call, for tenant ex. */
static void call_ex(const char *method, const char *req, const char *want)
{
	struct buf out;

	answer_ex(method, req, &out);
	assert_string_equal(out.data, want);
	buf_release(&out);
}

/* Calls `method` with the JSON `req`, which must fail with `rc` and a message containing `why`. */
static void refused(const char *method, const char *req, int want_rc, const char *why)
{
	struct err_msg msg = { { 0 } };
	struct buf out;

	buf_init(&out, 1 << 20);
	assert_int_equal(query_connect(f.st, "t1", method, req, strlen(req), NULL, &out, &msg),
			 want_rc);
	if (!strstr(msg.text, why))
		fail_msg("%s %s: message \"%s\" lacks \"%s\"", method, req, msg.text, why);
	buf_release(&out);
}

static void test_metadata(void **state)
{
	(void)state;
	/* Without a range, the last hour, as Pyroscope: the fixture's profiles are older. */
	call("ProfileTypes", "", "{\"profileTypes\":[]}");
	/* A range with only db's memory profile (T0+5 s). */
	call("ProfileTypes", "{\"start\":1700000001000,\"end\":1700000010000}",
	     "{\"profileTypes\":[{\"ID\":\"memory:alloc_space:bytes:space:bytes\",\"name\":\"memory\","
	     "\"sampleType\":\"alloc_space\",\"sampleUnit\":\"bytes\",\"periodType\":\"space\","
	     "\"periodUnit\":\"bytes\"}]}");
	call("ProfileTypes", "{" RANGE "}",
	     "{\"profileTypes\":[{\"ID\":\"memory:alloc_space:bytes:space:bytes\",\"name\":\"memory\","
	     "\"sampleType\":\"alloc_space\",\"sampleUnit\":\"bytes\",\"periodType\":\"space\","
	     "\"periodUnit\":\"bytes\"},{\"ID\":\"" FX_CPU "\",\"name\":\"process_cpu\","
	     "\"sampleType\":\"cpu\",\"sampleUnit\":\"nanoseconds\",\"periodType\":\"cpu\","
	     "\"periodUnit\":\"nanoseconds\"}]}");
	call("LabelNames", "{" RANGE "}",
	     "{\"names\":[\"__profile_type__\",\"pod\",\"service_name\"]}");
	call("LabelValues", "{\"name\":\"pod\",\"matchers\":[\"{service_name=\\\"api\\\"}\"]," RANGE "}",
	     "{\"names\":[\"p1\",\"p2\"]}");
	/* No series in range: the list is written, empty. */
	call("LabelValues", "{\"name\":\"pod\",\"start\":1,\"end\":2}", "{\"names\":[]}");
	/* Original field names, and members unhex does not read. */
	call("Series", "{\"matchers\":[\"{service_name=\\\"api\\\"}\"],\"label_names\":[\"pod\"],"
		       RANGE ",\"format\":\"x\",\"extra\":{\"a\":[1,null]}}",
	     "{\"labelsSet\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p1\"}]},"
	     "{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}]}]}");
	/* labelNames: each distinct set once (three api series, one db). */
	call("Series", "{\"matchers\":[\"{}\"],\"labelNames\":[\"service_name\"]," RANGE "}",
	     "{\"labelsSet\":[{\"labels\":[{\"name\":\"service_name\",\"value\":\"api\"}]},"
	     "{\"labels\":[{\"name\":\"service_name\",\"value\":\"db\"}]}]}");
	call("SelectSeries",
	     "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{}\"," RANGE
	     ",\"step\":15,\"groupBy\":[\"pod\"]}",
	     "{\"series\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}],"
	     "\"points\":[{\"value\":330,\"timestamp\":\"1700000030000\",\"exemplars\":[]}]},"
	     "{\"labels\":[{\"name\":\"pod\",\"value\":\"p1\"}],"
	     "\"points\":[{\"value\":180,\"timestamp\":\"1700000000000\",\"exemplars\":[]}]}]}");
	/*
	 * Pyroscope's grid: points at start + k*step, each the profiles of
	 * (t - step, t]; p1's profile at T0 is 1 s before this start, so it
	 * makes point 0.  Average divides by the profiles in a point; groupBy
	 * names a label no series has (left out of the labels) and repeats one.
	 */
	call("SelectSeries",
	     "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{}\",\"start\":1700000001000,"
	     "\"end\":1700000031000,\"step\":15,\"groupBy\":[\"zone\",\"pod\",\"pod\"],"
	     "\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\"}",
	     "{\"series\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p1\"}],"
	     "\"points\":[{\"value\":180,\"timestamp\":\"1700000001000\",\"exemplars\":[]}]},"
	     "{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}],"
	     "\"points\":[{\"value\":165,\"timestamp\":\"1700000031000\",\"exemplars\":[]}]}]}");
	/* Sum (the enum by number) over 10 s steps: p2's profiles in two points. */
	call("SelectSeries",
	     "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{}\",\"start\":1700000001000,"
	     "\"end\":1700000031000,\"step\":10,\"aggregation\":0}",
	     "{\"series\":[{\"labels\":[],"
	     "\"points\":[{\"value\":180,\"timestamp\":\"1700000001000\",\"exemplars\":[]},"
	     "{\"value\":180,\"timestamp\":\"1700000021000\",\"exemplars\":[]},"
	     "{\"value\":150,\"timestamp\":\"1700000031000\",\"exemplars\":[]}]}]}");
}

/* GetProfileStats: t1's oldest (api p1, T0) and newest (api p2, T0+30 s); none for t9. */
static void test_profile_stats(void **state)
{
	struct err_msg msg = { { 0 } };
	struct buf out;

	(void)state;
	call("GetProfileStats", "{}",
	     "{\"dataIngested\":true,\"oldestProfileTime\":\"1700000000000\","
	     "\"newestProfileTime\":\"1700000030000\"}");
	buf_init(&out, 1 << 20);
	assert_int_equal(query_connect(f.st, "t9", "GetProfileStats", "", 0, NULL, &out, &msg), 0);
	assert_string_equal(out.data, "{\"dataIngested\":false,\"oldestProfileTime\":\"0\","
				      "\"newestProfileTime\":\"0\"}");
	buf_release(&out);
}

/*
 * SelectHeatmap of individual profiles on Pyroscope's grid (start T0+1 s,
 * step 10 s): p1's 180 at T0 in the slot ending at start, p2's 180 and 150
 * in the slots ending 20 s and 30 s later; 20 value buckets from 150 to
 * 180, 180 in the last, 150 in the first.
 */
static void test_heatmap(void **state)
{
	char ymin[256] = "", c19[128] = "", c0[128] = "", want[2048];
	int n = 0;

	(void)state;
	for (int b = 0; b < 20; b++) {
		n += snprintf(ymin + n, sizeof(ymin) - (size_t)n, "%s%lld", b ? "," : "",
			      150LL + (long long)(b * 1.5));
		snprintf(c19 + strlen(c19), sizeof(c19) - strlen(c19), "%s%d", b ? "," : "", b == 19);
		snprintf(c0 + strlen(c0), sizeof(c0) - strlen(c0), "%s%d", b ? "," : "", b == 0);
	}
	snprintf(want, sizeof(want),
		 "{\"series\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p1\"}],\"slots\":["
		 "{\"timestamp\":\"1700000001000\",\"yMin\":[%s],\"counts\":[%s],\"exemplars\":[]}]},"
		 "{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}],\"slots\":["
		 "{\"timestamp\":\"1700000021000\",\"yMin\":[%s],\"counts\":[%s],\"exemplars\":[]},"
		 "{\"timestamp\":\"1700000031000\",\"yMin\":[%s],\"counts\":[%s],\"exemplars\":[]}]}]}",
		 ymin, c19, ymin, c19, ymin, c0);
	call("SelectHeatmap",
	     "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{}\",\"start\":1700000001000,"
	     "\"end\":1700000031000,\"step\":10,\"groupBy\":[\"pod\"],"
	     "\"queryType\":\"HEATMAP_QUERY_TYPE_INDIVIDUAL\"}", want);
	/* A span heatmap counts the samples with span ids: the fixture has none. */
	call("SelectHeatmap",
	     "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{}\",\"start\":1700000001000,"
	     "\"end\":1700000031000,\"step\":10,\"queryType\":2}", "{\"series\":[]}");
	refused("SelectHeatmap", "{\"profileTypeID\":\"" FX_CPU "\",\"step\":10}", ERR_INVALID,
		"valid heatmap query type");
	refused("SelectHeatmap", "{\"profileTypeID\":\"" FX_CPU "\",\"queryType\":1}", ERR_INVALID,
		"at least 1ms");
}

/* The answer of tenant ex to `method` with the JSON `req` (caller frees out). */
static void answer_ex(const char *method, const char *req, struct buf *out)
{
	struct err_msg msg = { { 0 } };
	int rc;

	buf_init(out, 1 << 20);
	rc = query_connect(f.st, "ex", method, req, strlen(req), NULL, out, &msg);
	if (rc)
		fail_msg("%s %s: %s", method, req, msg.text);
}

static void contains_ex(const char *method, const char *req, const char *want)
{
	struct buf out;

	answer_ex(method, req, &out);
	if (!strstr(out.data, want))
		fail_msg("%s %s:\n%s\nlacks\n%s", method, req, out.data, want);
	buf_release(&out);
}

#define EX_A "aaaaaaaa-aaaa-4aaa-aaaa-aaaaaaaaaaaa"
#define EX_B "bbbbbbbb-bbbb-4bbb-bbbb-bbbbbbbbbbbb"
#define EX_LABELS(pod) "\"labels\":[{\"name\":\"__profile_type__\",\"value\":\"" FX_CPU "\"}," \
		       pod "{\"name\":\"service_name\",\"value\":\"svc\"}]"
#define EX_P1 "{\"name\":\"pod\",\"value\":\"p1\"},"

/*
 * Tenant ex: profile A (one pprof split into pods p1 and p2: one id, 180 +
 * 30), B (p1, 100) and C (p1, 500, stored without an id) in one 15 s step.
 */
static void fill_ex(void)
{
	static const char *const st[] = { "main;a" }, *const st2[] = { "main;b" };
	static const int64_t v180[] = { 180 }, v30[] = { 30 }, v100[] = { 100 }, v500[] = { 500 };
	const char *p1[] = { "pod", "p1", NULL }, *p2[] = { "pod", "p2", NULL };
	uint8_t a[16], b[16];

	memset(a, 0xaa, sizeof(a));
	memset(b, 0xbb, sizeof(b));
	a[6] = 0x4a; /* version 4, as EX_A spells it */
	b[6] = 0x4b;
	fx_add_id(&f, "ex", "svc", FX_CPU, p1, FX_T0 + FX_SEC, st, v180, 1, "/bin/x", "ee01",
		  0x1000, 0, a);
	fx_add_id(&f, "ex", "svc", FX_CPU, p2, FX_T0 + FX_SEC, st, v30, 1, "/bin/x", "ee01",
		  0x1000, 0, a);
	fx_add_id(&f, "ex", "svc", FX_CPU, p1, FX_T0 + 2 * FX_SEC, st2, v100, 1, "/bin/x", "ee01",
		  0x1000, 0, b);
	fx_add(&f, "ex", "svc", FX_CPU, p1, FX_T0 + 3 * FX_SEC, st2, v500, 1, "/bin/x", "ee01",
	       0x1000, 0);
}

#define EX_REQ "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{}\",\"start\":" FROM \
	       ",\"end\":1700000030000,\"step\":15"

/*
 * Exemplars as Pyroscope picks them: per SelectSeries point the profile of
 * largest total (the parts of one profile in several series of a group
 * summed, their labels intersected, groupBy labels left out); per heatmap
 * cell the largest point; a profile without an id is never one.  The
 * profile id selector restricts merges to the profiles named.
 */
static void test_exemplars(void **state)
{
	struct buf out;
	(void)state;

	fill_ex();
	call_ex("SelectSeries", EX_REQ ",\"exemplarType\":\"EXEMPLAR_TYPE_INDIVIDUAL\"}",
		"{\"series\":[{\"labels\":[],\"points\":[{\"value\":810,"
		"\"timestamp\":\"1700000015000\",\"exemplars\":[{\"timestamp\":\"1700000001000\","
		"\"profileId\":\"" EX_A "\",\"spanId\":\"\",\"value\":\"210\"," EX_LABELS("") "}]}]}]}");
	call_ex("SelectSeries", EX_REQ ",\"exemplar_type\":2,\"groupBy\":[\"pod\"]}",
		"{\"series\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p1\"}],\"points\":[{"
		"\"value\":780,\"timestamp\":\"1700000015000\",\"exemplars\":[{\"timestamp\":"
		"\"1700000001000\",\"profileId\":\"" EX_A "\",\"spanId\":\"\",\"value\":\"180\","
		EX_LABELS("") "}]}]},{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}],\"points\":[{"
		"\"value\":30,\"timestamp\":\"1700000015000\",\"exemplars\":[{\"timestamp\":"
		"\"1700000001000\",\"profileId\":\"" EX_A "\",\"spanId\":\"\",\"value\":\"30\","
		EX_LABELS("") "}]}]}]}");
	/* Without an exemplar type: none. */
	call_ex("SelectSeries", EX_REQ "}",
		"{\"series\":[{\"labels\":[],\"points\":[{\"value\":810,"
		"\"timestamp\":\"1700000015000\",\"exemplars\":[]}]}]}");
	/* The heatmap: A is one point (210), B the other; C (500) has no id. */
	contains_ex("SelectHeatmap", EX_REQ ",\"queryType\":1,\"exemplarType\":2}",
		    "\"counts\":[1,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,1],\"exemplars\":["
		    "{\"timestamp\":\"1700000002000\",\"profileId\":\"" EX_B "\",\"spanId\":\"\","
		    "\"value\":\"100\"," EX_LABELS(EX_P1) "},"
		    "{\"timestamp\":\"1700000001000\",\"profileId\":\"" EX_A "\",\"spanId\":\"\","
		    "\"value\":\"210\"," EX_LABELS("") "}]}");
	/* Opening an exemplar: only that profile, in every series it is stored in. */
	contains_ex("SelectMergeStacktraces", EX_REQ ",\"profileIdSelector\":[\"" EX_A "\"]}",
		    "\"total\":\"210\"");
	contains_ex("SelectMergeStacktraces",
		    EX_REQ ",\"profile_id_selector\":[\"BBBBBBBBBBBB4BBBBBBBBBBBBBBBBBBB\",\"" EX_A "\"]}",
		    "\"total\":\"310\"");
	answer_ex("SelectMergeProfile", EX_REQ ",\"profileIdSelector\":[\"" EX_B "\"]}", &out);
	assert_non_null(strstr(out.data, "\"value\":[\"100\"]"));
	assert_null(strstr(out.data, "\"180\""));
	buf_release(&out);
	contains_ex("SelectMergeStacktraces",
		    EX_REQ ",\"profileIdSelector\":[\"00000000-0000-4000-8000-000000000000\"]}",
		    "\"total\":\"0\"");
	refused("SelectMergeStacktraces", EX_REQ ",\"profileIdSelector\":[\"" EX_A "x\"]}",
		ERR_INVALID, "is not a UUID");
	refused("SelectMergeProfile", EX_REQ ",\"profileIdSelector\":[\"not-a-uuid\"]}",
		ERR_INVALID, "is not a UUID");
	refused("SelectSeries", EX_REQ ",\"exemplarType\":\"EXEMPLAR_TYPE_SPAN\"}", ERR_INVALID,
		"SelectHeatmap answers it");
	refused("SelectSeries", EX_REQ ",\"exemplarType\":7}", ERR_INVALID, "unknown value");
	refused("SelectHeatmap", EX_REQ ",\"queryType\":1,\"exemplarType\":3}", ERR_INVALID,
		"span exemplars only");
	refused("SelectHeatmap", EX_REQ ",\"queryType\":2,\"exemplarType\":2}", ERR_INVALID,
		"individual exemplars only");
}

static void test_flame_graphs(void **state)
{
	(void)state;
	/* maxNodes as a string with an exponent: any integral spelling. */
	call("SelectMergeStacktraces",
	     "{\"profile_typeID\":\"" FX_CPU "\",\"labelSelector\":\"{pod=\\\"p1\\\"}\"," RANGE
	     ",\"maxNodes\":\"1e1\"}",
	     "{\"flamegraph\":{\"names\":[\"total\",\"main\",\"gc\",\"serve\",\"handle\",\"parse\"],"
	     "\"levels\":[{\"values\":[\"0\",\"180\",\"0\",\"0\"]},"
	     "{\"values\":[\"0\",\"180\",\"5\",\"1\"]},"
	     "{\"values\":[\"0\",\"25\",\"25\",\"2\",\"0\",\"150\",\"0\",\"3\"]},"
	     "{\"values\":[\"25\",\"100\",\"100\",\"4\",\"0\",\"50\",\"50\",\"5\"]}],"
	     "\"total\":\"180\",\"maxSelf\":\"100\"},\"tree\":\"\",\"dot\":\"\"}");
	/* Grafana's function details: only stacks through main;serve (snake_case). */
	call("SelectMergeStacktraces",
	     "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{pod=\\\"p1\\\"}\"," RANGE
	     ",\"stack_trace_selector\":{\"callSite\":[{\"name\":\"main\"},{\"name\":\"serve\"}]}}",
	     "{\"flamegraph\":{\"names\":[\"total\",\"main\",\"serve\",\"handle\",\"parse\"],"
	     "\"levels\":[{\"values\":[\"0\",\"150\",\"0\",\"0\"]},"
	     "{\"values\":[\"0\",\"150\",\"0\",\"1\"]},"
	     "{\"values\":[\"0\",\"150\",\"0\",\"2\"]},"
	     "{\"values\":[\"0\",\"100\",\"100\",\"3\",\"0\",\"50\",\"50\",\"4\"]}],"
	     "\"total\":\"150\",\"maxSelf\":\"100\"},\"tree\":\"\",\"dot\":\"\"}");
	/* A call site no stack has: an empty graph. */
	call("SelectMergeStacktraces",
	     "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{pod=\\\"p1\\\"}\"," RANGE
	     ",\"stackTraceSelector\":{\"callSite\":[{\"name\":\"serve\"}]}}",
	     "{\"flamegraph\":{\"names\":[\"total\"],\"levels\":[{\"values\":[\"0\",\"0\",\"0\",\"0\"]}],"
	     "\"total\":\"0\",\"maxSelf\":\"0\"},\"tree\":\"\",\"dot\":\"\"}");
	/* maxNodes 3 keeps root, main and serve; gc, handle and parse become
	 * "other" under their parents. */
	call("Diff",
	     "{\"left\":{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{pod=\\\"p1\\\"}\","
	     RANGE ",\"maxNodes\":3},\"right\":{\"profileTypeID\":\"" FX_CPU "\","
	     "\"labelSelector\":\"{service_name=\\\"api\\\",pod=\\\"p1\\\"}\"," RANGE "}}",
	     "{\"flamegraph\":{\"names\":[\"total\",\"main\",\"other\",\"serve\"],"
	     "\"levels\":[{\"values\":[\"0\",\"180\",\"0\",\"0\",\"180\",\"0\",\"0\"]},"
	     "{\"values\":[\"0\",\"180\",\"5\",\"0\",\"180\",\"5\",\"1\"]},"
	     "{\"values\":[\"0\",\"25\",\"25\",\"0\",\"25\",\"25\",\"2\","
	     "\"0\",\"150\",\"0\",\"0\",\"150\",\"0\",\"3\"]},"
	     "{\"values\":[\"25\",\"150\",\"150\",\"25\",\"150\",\"150\",\"2\"]}],"
	     "\"total\":\"360\",\"maxSelf\":\"150\",\"leftTicks\":\"180\",\"rightTicks\":\"180\"}}");
}

static void test_rejects(void **state)
{
	(void)state;
	refused("LabelNames", "{\"start\":1,\"start\":2}", ERR_INVALID, "duplicate key");
	refused("LabelNames", "[]", ERR_INVALID, "LabelNamesRequest: not an object");
	refused("LabelNames", "{\"start\":", ERR_INVALID, "unexpected end");
	refused("SelectMergeStacktraces", "{\"profileTypeID\":5}", ERR_INVALID, "profileTypeID");
	refused("SelectMergeStacktraces", "{\"maxNodes\":1.5}", ERR_INVALID, "maxNodes");
	refused("LabelValues", "{}", ERR_INVALID, "label name");
	refused("Diff", "{\"left\":{}}", ERR_INVALID, "field right is required");
	refused("Series", "{\"start\":\"-5\"}", ERR_INVALID, "out of range");
	refused("Nope", "{}", ERR_NOT_FOUND, "unknown method");
	refused("SelectSeries", "{\"profileTypeID\":\"" FX_CPU "\",\"limit\":-1}", ERR_INVALID,
		"negative");
}

/*
 * Profile type IDs with empty parts, as ingest stores a pprof without a
 * period type and older .NET agents' types: listed, and queryable by the
 * selector and by profileTypeID (tenant t3 holds only these).
 */
static void test_empty_type_parts(void **state)
{
	const char *mem = "memory:inuse_space:bytes::", *net = "process_cpu:cpu:nanoseconds::nanoseconds";
	const char *req = "{\"profileTypeID\":\"memory:inuse_space:bytes::\","
			  "\"labelSelector\":\"{service_name=\\\"shop\\\"}\"," RANGE "}";
	struct query_params p = { 0 };
	struct err_msg msg = { { 0 } };
	struct buf out;

	(void)state;
	fx_add(&f, "t3", "shop", mem, NULL, FX_T0, fx_small_stacks, fx_small_values, 4, "/bin/shop",
	       "5e01", 0x1000, 0);
	fx_add(&f, "t3", "shop", net, NULL, FX_T0, fx_small_stacks, fx_small_values, 2, "/bin/shop",
	       "5e01", 0x1000, 0);
	buf_init(&out, 1 << 20);
	assert_int_equal(query_connect(f.st, "t3", "ProfileTypes", "{" RANGE "}", strlen("{" RANGE "}"),
				       NULL, &out, &msg), 0);
	assert_string_equal(out.data,
			    "{\"profileTypes\":[{\"ID\":\"memory:inuse_space:bytes::\",\"name\":\"memory\","
			    "\"sampleType\":\"inuse_space\",\"sampleUnit\":\"bytes\",\"periodType\":\"\","
			    "\"periodUnit\":\"\"},{\"ID\":\"process_cpu:cpu:nanoseconds::nanoseconds\","
			    "\"name\":\"process_cpu\",\"sampleType\":\"cpu\",\"sampleUnit\":\"nanoseconds\","
			    "\"periodType\":\"\",\"periodUnit\":\"nanoseconds\"}]}");
	buf_reset(&out);
	assert_int_equal(query_connect(f.st, "t3", "SelectMergeStacktraces", req, strlen(req), NULL,
				       &out, &msg), 0);
	assert_string_equal(out.data,
			    "{\"flamegraph\":{\"names\":[\"total\",\"main\",\"gc\",\"serve\",\"handle\","
			    "\"parse\"],\"levels\":[{\"values\":[\"0\",\"180\",\"0\",\"0\"]},"
			    "{\"values\":[\"0\",\"180\",\"5\",\"1\"]},"
			    "{\"values\":[\"0\",\"25\",\"25\",\"2\",\"0\",\"150\",\"0\",\"3\"]},"
			    "{\"values\":[\"25\",\"100\",\"100\",\"4\",\"0\",\"50\",\"50\",\"5\"]}],"
			    "\"total\":\"180\",\"maxSelf\":\"100\"},\"tree\":\"\",\"dot\":\"\"}");
	buf_reset(&out);
	/* The .NET type through the selector of the legacy render. */
	p.query = "process_cpu:cpu:nanoseconds::nanoseconds{service_name=\"shop\"}";
	p.from_ns = FX_T0;
	p.until_ns = FX_T0 + 3600 * FX_SEC;
	assert_int_equal(query_render(f.st, "t3", &p, &out, &msg), 0);
	assert_non_null(strstr(out.data, "\"flamebearer\":{\"names\":[\"total\",\"main\",\"serve\","
					 "\"handle\",\"parse\"],\"levels\":[[0,150,0,0],[0,150,0,1],"
					 "[0,150,0,2],[0,100,100,3,0,50,50,4]],\"numTicks\":150,"));
	assert_non_null(strstr(out.data, "\"sampleRate\":1000000000,\"units\":\"samples\","
					 "\"name\":\"cpu\"}"));
	buf_release(&out);
}

/*
 * A render reads its flame graph and its timeline through one view: a
 * querier asks each ingester once per render (two unreachable ones here:
 * one failed request each, one warning each), and the answer is the one of
 * a store without ingesters but for the warnings.
 */
static void test_render_one_view(void **state)
{
	const char *peers[] = { "http://127.0.0.1:1", "http://127.0.0.1:9" };
	struct store_options o = { 0 };
	struct query_params p = { 0 };
	struct err_msg msg = { { 0 } };
	struct buf want, got;
	struct fx g;
	char *w;

	(void)state;
	strcpy(g.dir, "/tmp/unhex-query-XXXXXX");
	assert_non_null(mkdtemp(g.dir));
	o.dir = g.dir;
	o.peers = peers;
	o.n_peers = 2;
	o.peer_timeout_ns = 5 * FX_SEC;
	assert_int_equal(store_open(&o, &g.st, &msg), 0);
	fx_fill_small(&g, 1);
	p.query = FX_CPU "{service_name=\"api\"}";
	p.from_ns = FX_T0;
	p.until_ns = FX_T0 + 3600 * FX_SEC;
	buf_init(&want, 1 << 20);
	buf_init(&got, 1 << 20);
	assert_int_equal(query_render(f.st, "t1", &p, &want, &msg), 0);
	assert_int_equal(query_render(g.st, "t1", &p, &got, &msg), 0);
	for (size_t i = 0; i < 2; i++) {
		struct store_peer_stats s;

		store_peer_stats(g.st, i, &s);
		assert_int_equal(s.ok + s.stale + s.failed + s.timeout + s.too_large, 1);
		assert_int_equal(s.failed, 1);
	}
	w = strstr(got.data, ",\"warnings\":[");
	assert_non_null(w);
	assert_int_equal(got.data + got.len - w, strlen(w));
	assert_non_null(strstr(w, peers[0]));
	assert_non_null(strstr(w, peers[1]));
	assert_null(strstr(strstr(w, peers[0]) + 1, peers[0]));
	assert_true(want.len > 2 && want.data[want.len - 1] == '}');
	assert_int_equal((size_t)(w - got.data), want.len - 1);
	assert_memory_equal(got.data, want.data, want.len - 1);
	assert_non_null(strstr(want.data, "\"timeline\":{\"startTime\""));
	buf_release(&want);
	buf_release(&got);
	fx_close(&g);
}

/* The typed methods behind /pyroscope/labels and /pyroscope/label-values. */
static void test_typed_labels(void **state)
{
	Types__V1__LabelNamesRequest nr = TYPES__V1__LABEL_NAMES_REQUEST__INIT;
	Types__V1__LabelValuesRequest vr = TYPES__V1__LABEL_VALUES_REQUEST__INIT;
	Types__V1__LabelNamesResponse *n;
	Types__V1__LabelValuesResponse *v;
	char *matchers[] = { "{pod=\"p2\"}" };
	struct err_msg msg = { { 0 } };
	struct arena a;
	size_t need = 0;

	(void)state;
	arena_init(&a, 1 << 20);
	nr.start = FX_T0 / 1000000;
	nr.end = nr.start + 3600000;
	assert_int_equal(query_label_names(f.st, "t1", &nr, NULL, &a, &n, &msg), 0);
	assert_int_equal(n->n_names, 3);
	assert_string_equal(n->names[1], "pod");
	vr.name = "service_name";
	assert_int_equal(query_label_values(f.st, "t1", &vr, NULL, &a, &v, &msg), 0);
	assert_int_equal(v->n_names, 2);
	assert_string_equal(v->names[0], "api");
	assert_string_equal(v->names[1], "db");
	vr.name = "pod";
	vr.matchers = matchers;
	vr.n_matchers = 1;
	assert_int_equal(query_label_values(f.st, "t1", &vr, NULL, &a, &v, &msg), 0);
	assert_int_equal(v->n_names, 1);
	assert_string_equal(v->names[0], "p2");
	/* Another tenant sees nothing. */
	assert_int_equal(query_label_values(f.st, "t2", &vr, NULL, &a, &v, &msg), 0);
	assert_int_equal(v->n_names, 0);
	arena_release(&a);
	/*
	 * The response's arena bounds it: below the answer's size every call is
	 * ERR_TOO_LARGE with a message, from it on the answer is whole.
	 */
	vr.n_matchers = 0;
	vr.name = "service_name";
	for (size_t cap = 1; cap <= 4096 && !need; cap++) {
		int rc;

		err_clear(&msg);
		arena_init(&a, cap);
		rc = query_label_values(f.st, "t1", &vr, NULL, &a, &v, &msg);
		if (rc == 0) {
			need = cap;
			assert_int_equal(v->n_names, 2);
			assert_string_equal(v->names[1], "db");
		} else {
			assert_int_equal(rc, ERR_TOO_LARGE);
			assert_true(msg.text[0]);
		}
		arena_release(&a);
	}
	assert_true(need > sizeof(*v));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_profile_stats),
		cmocka_unit_test(test_heatmap),
		cmocka_unit_test(test_flame_graphs),
		cmocka_unit_test(test_exemplars),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_typed_labels),
		cmocka_unit_test(test_empty_type_parts),
		cmocka_unit_test(test_render_one_view),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
