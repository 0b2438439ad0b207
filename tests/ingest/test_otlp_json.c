/*
 * test_otlp_json.c - the OTLP JSON encoding of ingest_otlp() through a
 * real RocksDB store in a fresh temp directory:
 *   - the eBPF-shaped request of the fuzz corpus (ebpf_like.bin), stored
 *     once as protobuf and once per JSON variant (camelCase / snake_case,
 *     64-bit integers as strings / numbers) written by the independent
 *     descriptor-driven encoder of otlp_json_enc.h, must give the same
 *     series and the same folded stacks through query/;
 *   - a hand-written JSON request (mixed names, nulls, unknown members,
 *     hex link IDs, base64 bytes, exponent integers) stores what it says;
 *   - bad JSON gets ERR_INVALID / ERR_TOO_LARGE with the JSON path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "ingest/ingest.h"
#include "ingest/ingest_int.h"
#include "query/query.h"
#include "storage/storage.h"

#include "fixture.h"
#include "otlp_test.h"
#include "ingest/otlp_types.h"
#include "otlp_json_enc.h"

/* Every series of a tenant as "name=value,..." lines, sorted. */
struct seen {
	char lines[16][512];
	size_t n;
};

static int series_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct seen *s = ctx;
	size_t o = 0;

	(void)id, (void)part;
	if (s->n == 16)
		return 0;
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(s->lines[s->n] + o, sizeof(s->lines[0]) - o, "%s=%s,",
				      l[i].name, l[i].value);
	s->n++;
	return 0;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void series_of(struct fx *f, const char *tenant, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(store_series_each(f->st, tenant, series_cb, s), 0);
	qsort(s->lines, s->n, sizeof(s->lines[0]), cmp_line);
}

/* The value of label `name` in a series line, copied into out. */
static void label_of(const char *line, const char *name, char *out, size_t cap)
{
	char key[64];
	const char *p, *e;

	snprintf(key, sizeof(key), "%s=", name);
	p = strstr(line, key);
	assert_non_null(p);
	p += strlen(key);
	e = strchr(p, ',');
	assert_non_null(e);
	snprintf(out, cap, "%.*s", (int)(e - p), p);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *p = malloc(1 << 20);

	assert_non_null(fp);
	assert_non_null(p);
	*len = fread(p, 1, 1 << 20, fp);
	fclose(fp);
	return p;
}

static int ingest_json(struct fx *f, const char *tenant, const char *js,
		       struct ingest_stats *st, struct err_msg *msg)
{
	err_clear(msg);
	return ingest_otlp(f->st, &f->lim, tenant, js, strlen(js), 1, T0 + 5 * SEC, st, msg);
}

/* Protobuf and every JSON variant of one request store the same data. */
static void test_same_as_protobuf(void **state)
{
	static const int variants[] = { 0, JE_SNAKE, JE_NUM64, JE_SNAKE | JE_NUM64 };
	struct fx *f = *state;
	struct ingest_stats pst = { 0 };
	struct err_msg msg;
	struct seen pb, js;
	struct buf j, a, b;
	size_t len;
	uint8_t *p = read_file(UNHEX_OTLP_CORPUS "/ebpf_like.bin", &len);
	Req *r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, p);

	assert_non_null(r);
	err_clear(&msg);
	if (ingest_otlp(f->st, &f->lim, "pb", p, len, 0, T0 + 5 * SEC, &pst, &msg))
		fail_msg("protobuf: %s", msg.text);
	assert_true(pst.profiles >= 2);
	series_of(f, "pb", &pb);
	assert_int_equal(pb.n, pst.profiles);
	buf_init(&j, 1 << 30);
	buf_init(&a, 1 << 30);
	buf_init(&b, 1 << 30);
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		struct ingest_stats jst = { 0 };
		char tenant[16];

		snprintf(tenant, sizeof(tenant), "js%zu", v);
		buf_reset(&j);
		je_message(&j, &r->base, variants[v]);
		assert_non_null(strstr(j.data, variants[v] & JE_SNAKE ? "\"resource_profiles\""
								    : "\"resourceProfiles\""));
		assert_non_null(strstr(j.data, variants[v] & JE_NUM64 ? "1700000000000000000,"
								    : "\"1700000000000000000\""));
		err_clear(&msg);
		if (ingest_otlp(f->st, &f->lim, tenant, j.data, j.len, 1, T0 + 5 * SEC, &jst, &msg))
			fail_msg("json variant %zu: %s\n%s", v, msg.text, j.data);
		assert_int_equal(jst.profiles, pst.profiles);
		assert_int_equal(jst.samples, pst.samples);
		assert_int_equal(jst.pprof_samples, pst.pprof_samples);
		series_of(f, tenant, &js);
		assert_int_equal(js.n, pb.n);
		for (size_t i = 0; i < pb.n; i++) {
			char type[256], svc[128], q[512];

			assert_string_equal(js.lines[i], pb.lines[i]);
			label_of(pb.lines[i], "__profile_type__", type, sizeof(type));
			label_of(pb.lines[i], "service_name", svc, sizeof(svc));
			snprintf(q, sizeof(q), "%s{service_name=\"%s\"}", type, svc);
			otlp_folded(f, "pb", q, &a);
			otlp_folded(f, tenant, q, &b);
			assert_true(a.len > 0);
			assert_string_equal(b.data, a.data);
		}
	}
	buf_release(&j);
	buf_release(&a);
	buf_release(&b);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
	free(p);
}

/*
 * Written by hand, not by an encoder: camelCase and snake_case mixed,
 * int64 as strings and numbers (one with an exponent), null members,
 * unknown members at several levels, a hex link, a base64 bytesValue, an
 * arrayValue.  Two samples of stack 1 (values 3+4 in a span, and 10) sum
 * to 17 in the flame graph.
 */
static const char literal[] =
	"{\"resourceProfiles\":[{\"resource\":{\"attributes\":["
	"{\"key\":\"service.name\",\"value\":{\"stringValue\":\"lit\"}},"
	"{\"key\":\"host.name\",\"value\":{\"string_value\":\"h2\"}},"
	"{\"key\":\"process.pid\",\"value\":{\"intValue\":\"77\"}},"
	"{\"key\":\"blob\",\"value\":{\"bytesValue\":\"aGVsbG8=\"}},"
	"{\"key\":\"list\",\"value\":{\"arrayValue\":{\"values\":[{\"intValue\":1}]}}}]},"
	" \"scope_profiles\":[{\"scope\":{\"name\":\"hand\",\"futureField\":[1,2]},"
	"  \"profiles\":[{\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
	"   \"period_type\":{\"type_strindex\":1,\"unit_strindex\":2},"
	"   \"period\":\"10000000\",\"timeUnixNano\":\"1700000000000000000\","
	"   \"durationNano\":1e9,\"profileId\":\"000102030405060708090a0b0c0d0e0f\","
	"   \"originalPayload\":null,"
	"   \"samples\":[{\"stackIndex\":1,\"values\":[\"3\",4],\"linkIndex\":1},"
	"              {\"stack_index\":\"1\",\"values\":[10],\"attributeIndices\":null}]}]}]}],"
	" \"dictionary\":{\"string_table\":[\"\",\"cpu\",\"nanoseconds\",\"leaf\",\"root\",\"f.c\"],"
	"  \"mappingTable\":[{}],"
	"  \"locationTable\":[{},{\"lines\":[{\"functionIndex\":1,\"line\":\"12\"}]},"
	"                   {\"lines\":[{\"function_index\":2,\"line\":3}]}],"
	"  \"functionTable\":[{},{\"nameStrindex\":3,\"filenameStrindex\":5},"
	"                   {\"name_strindex\":4,\"filename_strindex\":5}],"
	"  \"linkTable\":[{},{\"traceId\":\"0102030405060708090A0B0C0D0E0F10\","
	"                  \"spanId\":\"0102030405060708\"}],"
	"  \"attributeTable\":[{}],"
	"  \"stackTable\":[{},{\"locationIndices\":[1,2]}],"
	"  \"unknownTable\":{\"x\":null}}}";

static void test_literal(void **state)
{
	struct fx *f = *state;
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	struct seen s;
	struct buf out;

	if (ingest_json(f, "t1", literal, &st, &msg))
		fail_msg("literal: %s", msg.text);
	assert_int_equal(st.profiles, 1);
	assert_int_equal(st.pprof_samples, 2);
	assert_int_equal(st.samples, 2); /* the linked sample keeps its span id apart */
	series_of(f, "t1", &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.lines[0], "__name__=process_cpu,__profile_type__=" CPU
			    ",host.name=h2,service_name=lit,");
	buf_init(&out, 1 << 30);
	otlp_folded(f, "t1", CPU "{service_name=\"lit\"}", &out);
	assert_string_equal(out.data, "root;leaf 17\n");
	buf_release(&out);
	/* "{}" is an empty request: valid, nothing stored. */
	assert_int_equal(ingest_json(f, "t2", " {} ", &st, &msg), 0);
}

struct bad {
	const char *json;
	int rc;
	const char *msg;
};

/* A request with one profile whose samples member is SAMPLES. */
#define PROF(samples)                                                                        \
	"{\"resourceProfiles\":[{\"scopeProfiles\":[{},{\"profiles\":[{\"samples\":" samples \
	"}]}]}]}"
/* A request whose dictionary is DICT. */
#define DICT(dict) "{\"dictionary\":" dict "}"

static const struct bad bads[] = {
	{ "[]", ERR_INVALID, "request: not a JSON object" },
	{ "", ERR_INVALID, "json: at byte 0: unexpected end of input" },
	{ "{\"resourceProfiles\":[", ERR_INVALID, "json: " },
	{ "{} x", ERR_INVALID, "json: at byte 3: unexpected data after the document" },
	{ "{\"resourceProfiles\":{}}", ERR_INVALID, "resourceProfiles: not an array" },
	{ "{\"resourceProfiles\":[1]}", ERR_INVALID, "resourceProfiles[0]: not an object" },
	{ PROF("[{},{},{},{\"stackIndex\":\"x\"}]"), ERR_INVALID,
	  "resourceProfiles[0].scopeProfiles[1].profiles[0].samples[3].stackIndex: not an integer" },
	{ PROF("[{\"stackIndex\":1.5}]"), ERR_INVALID, "samples[0].stackIndex: not an integer" },
	{ PROF("[{\"stackIndex\":true}]"), ERR_INVALID, "samples[0].stackIndex: not an integer" },
	{ PROF("[{\"stack_index\":4294967296}]"), ERR_INVALID,
	  "samples[0].stackIndex: 4294967296 is out of range for int32" },
	{ PROF("[{\"values\":[\"1\",\"9223372036854775808\"]}]"), ERR_INVALID,
	  "samples[0].values[1]: 9223372036854775808 is out of range for int64" },
	{ PROF("[{\"values\":[1,{}]}]"), ERR_INVALID, "samples[0].values[1]: not an integer" },
	{ PROF("[{\"timestampsUnixNano\":[\"-1\"]}]"), ERR_INVALID,
	  "samples[0].timestampsUnixNano[0]: -1 is negative" },
	{ PROF("[{\"timestampsUnixNano\":[\"18446744073709551616\"]}]"), ERR_INVALID,
	  "18446744073709551616 is out of range for a 64-bit integer" },
	{ PROF("[{\"values\":[\"1e\"]}]"), ERR_INVALID, "values[0]: not an integer: \"1e\"" },
	{ PROF("[{\"values\":[\" 1\"]}]"), ERR_INVALID, "values[0]: not an integer" },
	{ DICT("{\"stringTable\":[\"\",7]}"), ERR_INVALID, "dictionary.stringTable[1]: not a string" },
	{ DICT("{\"linkTable\":[{},{\"traceId\":\"zz\"}]}"), ERR_INVALID,
	  "dictionary.linkTable[1].traceId: not hex" },
	{ DICT("{\"linkTable\":[{},{\"spanId\":\"123\"}]}"), ERR_INVALID,
	  "dictionary.linkTable[1].spanId: odd number of hex digits" },
	{ DICT("{\"attributeTable\":[{},{\"value\":{\"bytesValue\":\"!!\"}}]}"), ERR_INVALID,
	  "dictionary.attributeTable[1].value.bytesValue: not base64" },
	{ DICT("{\"attributeTable\":[{},{\"value\":{\"stringValue\":5}}]}"), ERR_INVALID,
	  "dictionary.attributeTable[1].value.stringValue: not a string" },
	{ DICT("{\"attributeTable\":[{},{\"value\":{\"stringValue\":\"a\",\"int_value\":1}}]}"),
	  ERR_INVALID, "dictionary.attributeTable[1].value: both stringValue and intValue set" },
	{ DICT("{\"attributeTable\":[{},{\"value\":{\"boolValue\":\"true\"}}]}"), ERR_INVALID,
	  "value.boolValue: not a boolean" },
	{ DICT("{\"attributeTable\":[{},{\"value\":{\"arrayValue\":[]}}]}"), ERR_INVALID,
	  "value.arrayValue: not an object" },
	{ DICT("{\"mappingTable\":[{},{\"memoryStart\":\"-5\"}]}"), ERR_INVALID,
	  "dictionary.mappingTable[1].memoryStart: -5 is negative" },
	{ DICT("{\"stackTable\":{}}"), ERR_INVALID, "dictionary.stackTable: not an array" },
	{ DICT("[]"), ERR_INVALID, "dictionary: not an object" },
	/* Past the decoder, the shared validator speaks. */
	{ "{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"sampleType\":{\"typeStrindex\":1},"
	  "\"samples\":[{\"stackIndex\":99,\"values\":[1]}]}]}]}],"
	  "\"dictionary\":{\"stringTable\":[\"\",\"cpu\"],\"stackTable\":[{}]}}",
	  ERR_INVALID, "resource 0: scope 0: profile 0: sample 0: stack_index 99 out of range" },
	{ DICT("{\"stringTable\":[\"x\"]}"), ERR_INVALID, "string_table[0] must be \"\"" },
};

static void test_invalid(void **state)
{
	struct fx *f = *state;

	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct err_msg msg;
		int rc = ingest_json(f, "t1", bads[i].json, NULL, &msg);

		if (rc != bads[i].rc || !strstr(msg.text, bads[i].msg))
			fail_msg("%s: got %d \"%s\", want %d \"%s\"", bads[i].json, rc, msg.text,
				 bads[i].rc, bads[i].msg);
	}
	assert_int_equal(fx_tenant_stats(f).profiles, 0);
}

/* Size, depth and string length are bounded; truncations all fail cleanly. */
static void test_limits(void **state)
{
	struct fx *f = *state;
	size_t n = INGEST_OTLP_JSON_MAX_STRING + 1, len = strlen(literal);
	char *big = malloc(n + 64), *p;
	struct err_msg msg;
	int rc;

	assert_non_null(big);
	/* One string past the limit. */
	p = big + sprintf(big, "{\"dictionary\":{\"stringTable\":[\"\",\"");
	memset(p, 'a', n);
	strcpy(p + n, "\"]}}");
	assert_int_equal(ingest_json(f, "t1", big, NULL, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "dictionary.stringTable[1]: string of 1048577 bytes"));
	/* Nesting (in an unknown member) deeper than the parser allows. */
	p = big + sprintf(big, "{\"x\":");
	for (int i = 0; i < JSON_MAX_DEPTH + 2; i++)
		*p++ = '[';
	for (int i = 0; i < JSON_MAX_DEPTH + 2; i++)
		*p++ = ']';
	strcpy(p, "}");
	assert_int_equal(ingest_json(f, "t1", big, NULL, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "json: at byte 36: nesting deeper than 32"));
	free(big);
	/* The request size limit. */
	f->lim.max_decompressed_bytes = len - 1;
	assert_int_equal(ingest_json(f, "t1", literal, NULL, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "exceeds the limit"));
	ingest_limits_default(&f->lim);
	/* Every truncation of a valid request fails with a message. */
	for (size_t cut = 0; cut < len; cut++) {
		err_clear(&msg);
		rc = ingest_otlp(f->st, &f->lim, "t1", literal, cut, 1, T0, NULL, &msg);
		if (rc != ERR_INVALID || !msg.text[0])
			fail_msg("cut %zu: rc %d \"%s\"", cut, rc, msg.text);
	}
	/*
	 * A bomb of tiny values used to end in ERR_TOO_LARGE: the old reader
	 * needed more than 32 bytes of tree per byte for it.  The reader of
	 * base/json.c needs at most 17, so the tree cap now holds any request
	 * and the bomb decodes (its member is unknown, so into nothing).
	 */
	{
		struct arena a;
		Req *r = NULL;
		size_t nv = 3000000, blen = 2 * nv + 64;
		char *bomb = malloc(blen), *q = bomb;

		assert_non_null(bomb);
		q += sprintf(q, "{\"x\":[");
		for (size_t i = 0; i < nv; i++)
			*q++ = '0', *q++ = ',';
		strcpy(q, "0]}");
		arena_init(&a, ingest__otlp_arena_cap(strlen(bomb)));
		err_clear(&msg);
		rc = ingest__otlp_json_decode(&a, &f->lim, bomb, strlen(bomb), &r, &msg);
		if (rc)
			fail_msg("bomb: %s", msg.text);
		assert_non_null(r);
		assert_int_equal(r->n_resource_profiles, 0);
		arena_release(&a);
		free(bomb);
	}
	/* One array past the element limit, in a field that is read. */
	{
		size_t nv = INGEST_OTLP_JSON_MAX_ARRAY + 1;
		char *doc = malloc(2 * nv + 128), *q = doc;

		assert_non_null(doc);
		q += sprintf(q, "{\"dictionary\":{\"stackTable\":[{},{\"locationIndices\":[");
		for (size_t i = 0; i < nv; i++)
			*q++ = '0', *q++ = ',';
		strcpy(q - 1, "]}]}}");
		err_clear(&msg);
		rc = ingest_otlp(f->st, &f->lim, "t1", doc, strlen(doc), 1, T0, NULL, &msg);
		assert_int_equal(rc, ERR_TOO_LARGE);
		assert_string_equal(msg.text, "dictionary.stackTable[1].locationIndices: 4194305 elements, "
					      "more than the limit of 4194304");
		free(doc);
	}
	assert_int_equal(fx_tenant_stats(f).profiles, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(test_same_as_protobuf),
		FX_TEST(test_literal),
		FX_TEST(test_invalid),
		FX_TEST(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
