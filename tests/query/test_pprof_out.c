/*
 * test_pprof_out.c - pprof export: gunzip + protobuf-c unpack round trip,
 * totals, leaf-first locations, mappings with build IDs, and the Connect
 * JSON calls over the same store.  With an argument FILE it writes the
 * pprof of a fixture to FILE and prints its total (for pprof_go.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include "base/buf.h"
#include "base/compress.h"
#include "query/query.h"
#include "query/query_int.h"

#include "profile.pb-c.h"

static struct query_params params(void)
{
	struct query_params p;

	memset(&p, 0, sizeof(p));
	p.query = FX_CPU "{service_name=\"api\"}";
	p.from_ns = FX_T0;
	p.until_ns = FX_T0 + 3600 * FX_SEC;
	return p;
}

static void test_roundtrip(void **state)
{
	struct fx f;
	struct query_params p = params();
	struct buf gz, raw;
	struct err_msg msg = { { 0 } };
	Perftools__Profiles__Profile *pr;
	long long want, sum = 0;
	int saw_build = 0, saw_raw = 0;

	(void)state;
	fx_open(&f);
	want = fx_fill_small(&f, 0);
	buf_init(&gz, 1 << 30);
	buf_init(&raw, 1 << 30);
	assert_int_equal(query_pprof(f.st, "t1", &p, &gz, &msg), 0);
	assert_true(is_gzip(gz.data, gz.len));
	assert_int_equal(gunzip_capped(gz.data, gz.len, 1 << 24, &raw, &msg), 0);
	pr = perftools__profiles__profile__unpack(NULL, raw.len, (const uint8_t *)raw.data);
	assert_non_null(pr);
	assert_string_equal(pr->string_table[0], "");
	assert_int_equal(pr->n_sample_type, 1);
	assert_string_equal(pr->string_table[pr->sample_type[0]->type], "cpu");
	assert_string_equal(pr->string_table[pr->sample_type[0]->unit], "nanoseconds");
	assert_string_equal(pr->string_table[pr->period_type->type], "cpu");
	assert_int_equal(pr->period, 10000000);
	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];

		assert_int_equal(s->n_value, 1);
		sum += s->value[0];
		for (size_t k = 0; k < s->n_location_id; k++)
			assert_true(s->location_id[k] >= 1 && s->location_id[k] <= pr->n_location);
		/* leaf first: the root frame (main, or a raw libc address) is last */
		if (s->n_location_id) {
			const Perftools__Profiles__Location *root =
				pr->location[s->location_id[s->n_location_id - 1] - 1];
			if (root->n_line) {
				const Perftools__Profiles__Function *fn =
					pr->function[root->line[0]->function_id - 1];
				assert_string_equal(pr->string_table[fn->name], "main");
			}
		}
	}
	assert_int_equal(sum, want);
	for (size_t i = 0; i < pr->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = pr->mapping[i];
		const char *b = pr->string_table[m->build_id];

		saw_build += !strcmp(b, "abcd01") || !strcmp(b, "abcd02");
		saw_raw += !strcmp(b, "ffee") && !m->has_functions;
	}
	assert_int_equal(saw_build, 2);
	assert_int_equal(saw_raw, 1);
	for (size_t i = 0; i < pr->n_location; i++) {
		const Perftools__Profiles__Location *l = pr->location[i];
		const Perftools__Profiles__Mapping *m = pr->mapping[l->mapping_id - 1];

		assert_true(l->address >= m->memory_start && l->address < m->memory_limit);
	}
	perftools__profiles__profile__free_unpacked(pr, NULL);
	buf_release(&gz);
	buf_release(&raw);
	fx_close(&f);
}

static int call(struct store *st, const char *method, const char *body, struct buf *out,
		struct err_msg *msg)
{
	buf_reset(out);
	err_clear(msg);
	return query_connect(st, "t1", method, body, strlen(body), NULL, out, msg);
}

/* SelectSeries of the fixture's hour in 10 s steps by pod, with `more`
 * fields (",\"limit\":1") at the end of the request. */
static int series_by_pod(struct store *st, const char *more, struct buf *out,
			 struct err_msg *msg)
{
	const long long from_ms = FX_T0 / 1000000, to_ms = from_ms + 3600000;
	char body[512];

	snprintf(body, sizeof(body), "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":\"{}\","
		 "\"start\":%lld,\"end\":%lld,\"step\":10,\"groupBy\":[\"pod\"]%s}", from_ms,
		 to_ms, more);
	return call(st, "SelectSeries", body, out, msg);
}

static void test_connect(void **state)
{
	struct fx f;
	struct buf out;
	struct err_msg msg = { { 0 } };
	char body[1024];
	const long long from_ms = FX_T0 / 1000000, to_ms = from_ms + 3600000;

	(void)state;
	fx_open(&f);
	fx_fill_small(&f, 0);
	buf_init(&out, 1 << 30);
	snprintf(body, sizeof(body), "{\"start\":%lld,\"end\":%lld}", from_ms, to_ms);
	assert_int_equal(call(f.st, "ProfileTypes", body, &out, &msg), 0);
	assert_string_equal(out.data,
			    "{\"profileTypes\":[{\"ID\":\"" FX_CPU "\",\"name\":\"process_cpu\","
			    "\"sampleType\":\"cpu\",\"sampleUnit\":\"nanoseconds\","
			    "\"periodType\":\"cpu\",\"periodUnit\":\"nanoseconds\"}]}");
	assert_int_equal(call(f.st, "LabelNames", "{}", &out, &msg), 0);
	assert_string_equal(out.data,
			    "{\"names\":[\"__profile_type__\",\"pod\",\"service_name\"]}");
	snprintf(body, sizeof(body), "{\"name\":\"pod\",\"matchers\":[\"{pod=\\\"p2\\\"}\"],"
		 "\"start\":\"%lld\",\"end\":%lld}", from_ms, to_ms);
	assert_int_equal(call(f.st, "LabelValues", body, &out, &msg), 0);
	assert_string_equal(out.data, "{\"names\":[\"p2\"]}");
	/* p1's only profile is at FX_T0: a range after it drops the series */
	snprintf(body, sizeof(body), "{\"matchers\":[\"{}\"],\"labelNames\":[\"pod\"],"
		 "\"start\":\"%lld\",\"end\":\"%lld\"}", from_ms + 10000, to_ms);
	assert_int_equal(call(f.st, "Series", body, &out, &msg), 0);
	assert_string_equal(out.data,
			    "{\"labelsSet\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}]}]}");
	snprintf(body, sizeof(body), "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":"
		 "\"{service_name=\\\"api\\\"}\",\"start\":%lld,\"end\":%lld}", from_ms, to_ms);
	assert_int_equal(call(f.st, "SelectMergeStacktraces", body, &out, &msg), 0);
	assert_non_null(strstr(out.data, "\"total\":\"510\""));
	assert_non_null(strstr(out.data, "\"levels\":[{\"values\":[\"0\",\"510\",\"0\",\"0\"]}"));
	assert_int_equal(call(f.st, "SelectMergeProfile", body, &out, &msg), 0);
	assert_non_null(strstr(out.data, "\"stringTable\":[\"\""));
	assert_non_null(strstr(out.data, "\"sampleType\":[{\"type\":"));
	assert_int_equal(series_by_pod(f.st, "", &out, &msg), 0);
	assert_string_equal(out.data,
		"{\"series\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}],\"points\":["
		"{\"value\":180,\"timestamp\":\"1700000020000\",\"exemplars\":[]},"
		"{\"value\":150,\"timestamp\":\"1700000030000\",\"exemplars\":[]}]},"
		"{\"labels\":[{\"name\":\"pod\",\"value\":\"p1\"}],\"points\":["
		"{\"value\":180,\"timestamp\":\"1700000000000\",\"exemplars\":[]}]}]}");
	/* limit: the top N groups by total, largest first (p2 330, p1 180). */
	assert_int_equal(series_by_pod(f.st, ",\"limit\":1", &out, &msg), 0);
	assert_string_equal(out.data,
		"{\"series\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}],\"points\":["
		"{\"value\":180,\"timestamp\":\"1700000020000\",\"exemplars\":[]},"
		"{\"value\":150,\"timestamp\":\"1700000030000\",\"exemplars\":[]}]}]}");
	assert_int_equal(series_by_pod(f.st, ",\"limit\":5", &out, &msg), 0);
	assert_non_null(strstr(out.data, "{\"series\":[{\"labels\":[{\"name\":\"pod\",\"value\":\"p2\"}]"));
	assert_non_null(strstr(out.data, "\"value\":\"p1\""));
	snprintf(body, sizeof(body), "{\"profileTypeID\":\"" FX_CPU "\",\"start\":%lld,"
		 "\"end\":%lld,\"limit\":-1}", from_ms, to_ms);
	assert_int_equal(call(f.st, "SelectSeries", body, &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "limit"));
	snprintf(body, sizeof(body), "{\"left\":{\"profileTypeID\":\"" FX_CPU "\",\"start\":%lld,"
		 "\"end\":%lld},\"right\":{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":"
		 "\"{pod=\\\"p1\\\"}\",\"start\":%lld,\"end\":%lld}}", from_ms, to_ms, from_ms, to_ms);
	assert_int_equal(call(f.st, "Diff", body, &out, &msg), 0);
	assert_non_null(strstr(out.data, "\"leftTicks\":\"510\",\"rightTicks\":\"180\""));

	assert_int_equal(call(f.st, "Nope", "{}", &out, &msg), ERR_NOT_FOUND);
	assert_int_equal(call(f.st, "Series", "[1]", &out, &msg), ERR_INVALID);
	assert_int_equal(call(f.st, "Series", "{\"matchers\":[\"{a=\"]}", &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "selector"));
	assert_int_equal(call(f.st, "SelectMergeStacktraces", "{\"start\":\"x\"}", &out, &msg),
			 ERR_INVALID);
	assert_int_equal(call(f.st, "SelectSeries",
			      "{\"profileTypeID\":\"" FX_CPU "\",\"start\":1,\"end\":1700000000000,"
			      "\"step\":1}", &out, &msg), ERR_INVALID);
	assert_int_equal(call(f.st, "LabelValues", "{}", &out, &msg), ERR_INVALID);
	buf_release(&out);
	fx_close(&f);
}

static int write_file(const char *path)
{
	struct fx f;
	struct query_params p = params();
	struct buf gz;
	struct err_msg msg = { { 0 } };
	long long want;
	FILE *fp;
	int rc;

	fx_open(&f);
	want = fx_fill_small(&f, 0);
	buf_init(&gz, 1 << 30);
	rc = query_pprof(f.st, "t1", &p, &gz, &msg);
	if (!rc && (fp = fopen(path, "wb"))) {
		fwrite(gz.data, 1, gz.len, fp);
		fclose(fp);
		printf("%lld\n", want);
	} else {
		fprintf(stderr, "pprof: %s\n", msg.text);
		rc = 1;
	}
	buf_release(&gz);
	fx_close(&f);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_connect),
	};

	if (argc > 1)
		return write_file(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
