/* test_push.c - push.v1 Push requests in binary protobuf and Connect JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/base64.h"
#include "base/buf.h"
#include "base/err.h"
#include "ingest/ingest_int.h"
#include "pprof_builder.h"
#include "push_builder.h"

static struct pb *cpu_profile(void)
{
	struct pb *b = pb_new(4, 4);
	uint64_t s1[] = { 1 };
	int64_t v[] = { 5 };

	pb_sample_type(b, "cpu", "nanoseconds");
	pb_period(b, "cpu", "nanoseconds", 10000000);
	pb_location(b, 1, 0, 0x1234, 0, 0);
	pb_sample(b, s1, 1, v, 1);
	return b;
}

/* Appends p in base64 to out, in the URL-safe alphabet (RFC 4648 §5) if `url`. */
static void b64(struct buf *out, const uint8_t *p, size_t n, int url)
{
	size_t from = out->len;

	assert_int_equal(base64_encode(out, p, n), 0);
	for (size_t i = from; url && i < out->len; i++)
		if (out->data[i] == '+' || out->data[i] == '/')
			out->data[i] = out->data[i] == '+' ? '-' : '_';
}

static int decode(const void *body, size_t len, int json, struct arena *a,
		  struct ingest_series **s, size_t *n, struct err_msg *msg)
{
	struct ingest_limits lim;

	ingest_limits_default(&lim);
	lim.max_profiles = 4;
	err_clear(msg);
	return ingest__decode_push(a, &lim, body, len, json, s, n, msg);
}

static void test_binary(void **state)
{
	struct pb *b = cpu_profile();
	size_t plen, len;
	uint8_t *pprof = pb_pack(b, 1, &plen), *body;
	struct pushb pr;
	struct ingest_series *s;
	struct err_msg msg;
	struct arena a;
	size_t n;
	(void)state;

	pushb_init(&pr, "pushed", pprof, plen, 2);
	pr.rs.id = "uuid";
	body = pushb_pack(&pr, &len);

	arena_init(&a, 1 << 30);
	assert_int_equal(decode(body, len, 0, &a, &s, &n, &msg), 0);
	assert_int_equal(n, 2);
	assert_int_equal(s[1].n_labels, 2);
	assert_string_equal(s[1].labels[1].value, "pushed");
	assert_int_equal(s[1].len, plen);
	assert_memory_equal(s[1].data, pprof, plen);
	assert_string_equal(s[1].id, "uuid");
	{
		struct ingest_limits lim;
		struct ingest_defaults d = { 1, 0, NULL };
		struct ingest_pprof pp;

		ingest_limits_default(&lim);
		assert_int_equal(ingest__convert(&a, &lim, &s[0], &d, &pp, &msg), 0);
		assert_string_equal(pp.profile_types[0], "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	}
	arena_release(&a);

	/* Too many profiles. */
	{
		Push__V1__RawProfileSeries *three[] = { &pr.ser, &pr.ser, &pr.ser };
		pr.req.series = three;
		pr.req.n_series = 3;
		free(body);
		body = pushb_pack(&pr, &len);
	}
	arena_init(&a, 1 << 30);
	assert_int_equal(decode(body, len, 0, &a, &s, &n, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "more than 4 profiles"));
	arena_release(&a);

	/* Truncated bytes never crash. */
	for (size_t cut = 0; cut < len; cut++) {
		arena_init(&a, 1 << 30);
		int rc = decode(body, cut, 0, &a, &s, &n, &msg);
		assert_true(rc == 0 || rc == ERR_INVALID || rc == ERR_TOO_LARGE);
		arena_release(&a);
	}
	/* Not a protobuf. */
	arena_init(&a, 1 << 30);
	assert_int_equal(decode("\xff\xff\xff", 3, 0, &a, &s, &n, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "not a valid PushRequest"));
	arena_release(&a);
	free(body);
	free(pprof);
	pb_free(b);
}

static void test_json(void **state)
{
	struct pb *b = cpu_profile();
	size_t plen;
	uint8_t *pprof = pb_pack(b, 1, &plen);
	struct buf body;
	struct ingest_series *s;
	struct err_msg msg;
	struct arena a;
	size_t n;
	(void)state;

	buf_init(&body, 1 << 30);
	buf_puts(&body, "{\"series\":[{\"labels\":[{\"name\":\"__name__\",\"value\":\"process_cpu\"},"
			"{\"name\":\"service_name\",\"value\":\"j\"}],\"samples\":[{\"rawProfile\":\"");
	b64(&body, pprof, plen, 0);
	buf_puts(&body, "\",\"ID\":\"x\"},{\"raw_profile\":\"");
	b64(&body, pprof, plen, 1);
	buf_puts(&body, "\"}]},{\"labels\":null,\"samples\":[],\"extra\":{\"ignored\":[1,2]}}]}");
	arena_init(&a, 1 << 30);
	assert_int_equal(decode(body.data, body.len, 1, &a, &s, &n, &msg), 0);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].labels[1].name, "service_name");
	assert_int_equal(s[0].len, plen);
	assert_memory_equal(s[0].data, pprof, plen);
	assert_memory_equal(s[1].data, pprof, plen);
	assert_string_equal(s[0].id, "x");
	assert_true(!s[1].id || !s[1].id[0]);
	arena_release(&a);

	/* Truncations of the JSON body: all rejected cleanly. */
	for (size_t cut = 0; cut < body.len; cut += 7) {
		arena_init(&a, 1 << 30);
		assert_int_equal(decode(body.data, cut, 1, &a, &s, &n, &msg), ERR_INVALID);
		assert_true(msg.text[0] != '\0');
		arena_release(&a);
	}
	buf_release(&body);
	free(pprof);
	pb_free(b);
}

static void test_json_errors(void **state)
{
	static const struct {
		const char *body;
		const char *err;
	} cases[] = {
		{ "[]", "push: request must be a JSON object" },
		/* The JSON mapper (proto/pbjson.c) names the path of the bad value. */
		{ "{\"series\":{}}", "push: series: not an array (got an object)" },
		{ "{\"series\":[1]}", "push: series[0]: not an object (got a number)" },
		{ "{\"series\":[{\"samples\":{}}]}",
		  "push: series[0].samples: not an array (got an object)" },
		{ "{\"series\":[{\"labels\":[1]}]}", "push: series[0].labels[0]: not an object (got a number)" },
		{ "{\"series\":[{\"labels\":[{\"name\":1}]}]}",
		  "push: series[0].labels[0].name: not a string (got a number)" },
		{ "{\"series\":[{\"samples\":[{}]}]}", "push: series 0: sample 0: rawProfile is missing or empty" },
		{ "{\"series\":[{\"samples\":[{\"rawProfile\":\"\"}]}]}",
		  "push: series 0: sample 0: rawProfile is missing or empty" },
		{ "{\"series\":[{\"samples\":[{\"rawProfile\":5}]}]}",
		  "push: series[0].samples[0].rawProfile: not a base64 string (got a number)" },
		{ "{\"series\":[{\"samples\":[{\"rawProfile\":\"!!\"}]}]}",
		  "push: series[0].samples[0].rawProfile: not base64" },
		{ "{\"series\":[{\"samples\":[{\"raw_profile\":\"aGk=\",\"rawProfile\":\"aGk=\"}]}]}",
		  "push: series[0].samples[0]: field rawProfile given twice (as \"raw_profile\" and \"rawProfile\")" },
		{ "{\"series\":[{\"samples\":[{},{},{},{},{}]}]}", "more than 4 profiles" },
		{ "{\"series\":[}", "json: at byte 11: unexpected character '}'" },
	};
	struct ingest_series *s;
	struct err_msg msg;
	struct arena a;
	size_t n;
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		arena_init(&a, 1 << 30);
		int rc = decode(cases[i].body, strlen(cases[i].body), 1, &a, &s, &n, &msg);
		if (rc == 0 || !strstr(msg.text, cases[i].err))
			fail_msg("'%s': want '%s', got %d '%s'", cases[i].body, cases[i].err, rc,
				 msg.text);
		arena_release(&a);
	}
	/* Empty request: no profiles. */
	arena_init(&a, 1 << 30);
	assert_int_equal(decode("{}", 2, 1, &a, &s, &n, &msg), 0);
	assert_int_equal(n, 0);
	arena_release(&a);
	/* Request size limit. */
	{
		struct ingest_limits lim;
		ingest_limits_default(&lim);
		lim.max_request_bytes = 1;
		arena_init(&a, 1 << 30);
		assert_int_equal(ingest__decode_push(&a, &lim, "{}", 2, 1, &s, &n, &msg),
				 ERR_TOO_LARGE);
		arena_release(&a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
