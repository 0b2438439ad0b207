/*
 * test_pushbound.c - web__push_bound (web/pushbound.c), the admission's
 * reading of a binary PushRequest off its wire bytes, held to protobuf-c's
 * unpack of the same bytes: requests packed by protobuf-c give the exact
 * sum of their profiles' bounds, and every truncation, byte change and
 * inserted field that protobuf-c still unpacks gives a bound of at least
 * what it unpacked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/compress.h"
#include "web/web_int.h"

#include "push.pb-c.h"

#define MAX_DEC ((size_t)64 << 20)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

/* The sum web__push_bound must reach for what protobuf-c unpacked. */
static size_t unpacked_sum(const Push__V1__PushRequest *req)
{
	size_t sum = 0;

	for (size_t i = 0; i < req->n_series; i++)
		for (size_t j = 0; j < req->series[i]->n_samples; j++) {
			const ProtobufCBinaryData *d = &req->series[i]->samples[j]->raw_profile;

			sum += web__profile_bound((const char *)d->data, d->len, MAX_DEC);
		}
	return sum;
}

/* A random PushRequest, packed into out; its profiles gzipped or raw. */
static void random_request(struct buf *out)
{
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries series[4], *sp[4];
	Push__V1__LabelPair labels[4][3], *lp[4][3];
	Push__V1__RawSample samples[4][5], *smp[4][5];
	struct buf prof[4][5];
	uint8_t raw[600];

	req.n_series = rnd(5);
	req.series = sp;
	for (size_t i = 0; i < req.n_series; i++) {
		push__v1__raw_profile_series__init(&series[i]);
		sp[i] = &series[i];
		series[i].n_labels = rnd(4);
		series[i].labels = lp[i];
		for (size_t k = 0; k < series[i].n_labels; k++) {
			push__v1__label_pair__init(&labels[i][k]);
			labels[i][k].name = k ? "service_name" : "__name__";
			labels[i][k].value = rnd(2) ? "process_cpu" : "";
			lp[i][k] = &labels[i][k];
		}
		series[i].n_samples = rnd(6);
		series[i].samples = smp[i];
		for (size_t j = 0; j < series[i].n_samples; j++) {
			size_t n = rnd(sizeof(raw));

			for (size_t b = 0; b < n; b++)
				raw[b] = (uint8_t)rnd(rnd(2) ? 4 : 256);
			buf_init(&prof[i][j], 1 << 20);
			if (rnd(3))
				assert_int_equal(gzip_compress(raw, n, 1, &prof[i][j]), 0);
			else
				assert_int_equal(buf_append(&prof[i][j], raw, n), 0);
			push__v1__raw_sample__init(&samples[i][j]);
			samples[i][j].raw_profile.data = (uint8_t *)prof[i][j].data;
			samples[i][j].raw_profile.len = prof[i][j].len;
			samples[i][j].id = rnd(2) ? "5c3a8e9e-0d5f-4a38-9a53-6d2f6f3c2f4e" : "";
			smp[i][j] = &samples[i][j];
		}
	}
	buf_reset(out);
	assert_int_equal(buf_reserve(out, push__v1__push_request__get_packed_size(&req)), 0);
	out->len = push__v1__push_request__pack(&req, (uint8_t *)out->data);
	for (size_t i = 0; i < req.n_series; i++)
		for (size_t j = 0; j < series[i].n_samples; j++)
			buf_release(&prof[i][j]);
}

/*
 * The property: bytes protobuf-c unpacks give 1 and at least its sum
 * (exactly it when `exact`).  Returns whether protobuf-c unpacked them.
 */
static int check_bytes(const uint8_t *p, size_t n, int exact)
{
	Push__V1__PushRequest *req = push__v1__push_request__unpack(NULL, n, p);
	size_t sum = 12345, want;
	int rc = web__push_bound(p, n, MAX_DEC, &sum);

	if (!req)
		return 0;
	want = unpacked_sum(req);
	push__v1__push_request__free_unpacked(req, NULL);
	assert_int_equal(rc, 1);
	if (exact)
		assert_int_equal(sum, want);
	else
		assert_true(sum >= want);
	return 1;
}

static void test_packed_requests_exact(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 16 << 20);
	for (int i = 0; i < 300; i++) {
		random_request(&b);
		assert_true(check_bytes((const uint8_t *)b.data, b.len, 1));
	}
	buf_release(&b);
}

static void test_truncations(void **state)
{
	struct buf b;
	int unpacked = 0;

	(void)state;
	buf_init(&b, 16 << 20);
	for (int i = 0; i < 20; i++) {
		random_request(&b);
		for (size_t n = 0; n <= b.len; n++)
			unpacked += check_bytes((const uint8_t *)b.data, n, 0);
	}
	assert_true(unpacked > 20); /* at least the whole requests */
	buf_release(&b);
}

static void test_byte_changes(void **state)
{
	struct buf b;
	int unpacked = 0, tried = 0;

	(void)state;
	buf_init(&b, 16 << 20);
	for (int i = 0; i < 40; i++) {
		random_request(&b);
		if (!b.len)
			continue;
		for (int k = 0; k < 200; k++) {
			size_t at = rnd((uint32_t)b.len);
			char was = b.data[at];

			b.data[at] = (char)rnd(256);
			unpacked += check_bytes((const uint8_t *)b.data, b.len, 0);
			tried++;
			b.data[at] = was;
		}
	}
	/* Most changes land in profile bytes, which protobuf-c keeps. */
	assert_true(unpacked > tried / 4);
	buf_release(&b);
}

/* A field of every wire type protobuf-c skips: varint, fixed64, bytes, fixed32. */
static const uint8_t unknown_fields[] = {
	0x78, 0x96, 0x01,                                     /* 15: varint 150 */
	0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8,                   /* 16: fixed64 */
	0x8a, 0x01, 3, 'a', 'b', 'c',                         /* 17: bytes */
	0x95, 0x01, 9, 9, 9, 9,                               /* 18: fixed32 */
};

static void test_unknown_fields(void **state)
{
	/* PushRequest { unknown; series { unknown; samples { unknown;
	 * raw_profile "hello"; ID "x" } labels {} } } */
	uint8_t msg[128];
	size_t n = 0, series_at, sample_at, sum = 0;

	(void)state;
	memcpy(msg + n, unknown_fields, sizeof(unknown_fields));
	n += sizeof(unknown_fields);
	msg[n++] = 0x0a; /* series */
	series_at = n++;
	memcpy(msg + n, unknown_fields, sizeof(unknown_fields));
	n += sizeof(unknown_fields);
	msg[n++] = 0x12; /* samples */
	sample_at = n++;
	memcpy(msg + n, unknown_fields, sizeof(unknown_fields));
	n += sizeof(unknown_fields);
	memcpy(msg + n, "\x0a\x05hello\x12\x01x", 10);
	n += 10;
	msg[sample_at] = (uint8_t)(n - sample_at - 1);
	memcpy(msg + n, "\x0a\x00", 2); /* an empty label pair */
	n += 2;
	msg[series_at] = (uint8_t)(n - series_at - 1);
	assert_true(check_bytes(msg, n, 1));
	assert_int_equal(web__push_bound(msg, n, MAX_DEC, &sum), 1);
	assert_int_equal(sum, 5);
	/* Field number 0 (here an overlong tag 0, varint 0, twice; found by
	 * fuzz_pushbound): protobuf-c skips it as unknown. */
	assert_true(check_bytes((const uint8_t *)"\x80\x00\x00\x80\x00\x00", 6, 1));
	/* A varint of ten bytes whose last holds bits past 64: protobuf-c
	 * skips it (found by fuzz_pushbound too). */
	assert_true(check_bytes((const uint8_t *)"\x60\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\x60", 11, 1));
}

static void test_replaced_profile_counted(void **state)
{
	/* A sample with raw_profile twice: protobuf-c keeps the last, the
	 * bound counts both. */
	static const uint8_t msg[] = { 0x0a, 0x0c, 0x12, 0x0a, 0x0a, 0x03, 'a', 'b', 'c',
				       0x0a, 0x03, 'd', 'e', 'f' };
	size_t sum = 0;

	(void)state;
	assert_true(check_bytes(msg, sizeof(msg), 0));
	assert_int_equal(web__push_bound(msg, sizeof(msg), MAX_DEC, &sum), 1);
	assert_int_equal(sum, 6);
}

static void test_not_push_bytes(void **state)
{
	/* samples as a varint; a group; wire type 7; a length past the end;
	 * a truncated tag; JSON. */
	static const struct {
		const char *p;
		size_t n;
	} bad[] = {
		{ "\x0a\x02\x10\x01", 4 },
		{ "\x0b\x0c", 2 },
		{ "\x0f", 1 },
		{ "\x0a\x05\x12\x01", 4 },
		{ "\x80", 1 },
		{ "{\"series\":[]}", 13 },
	};
	size_t sum;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(web__push_bound((const uint8_t *)bad[i].p, bad[i].n, MAX_DEC, &sum), 0);
		assert_false(check_bytes((const uint8_t *)bad[i].p, bad[i].n, 0));
	}
	assert_int_equal(web__push_bound(NULL, 0, MAX_DEC, &sum), 1);
	assert_int_equal(sum, 0);
}

static void test_profile_bound(void **state)
{
	struct buf g;
	char big[4000];

	(void)state;
	memset(big, 'x', sizeof(big));
	buf_init(&g, 1 << 20);
	assert_int_equal(gzip_compress(big, sizeof(big), 6, &g), 0);
	/* The trailer's size, at least the stream's own, at most max. */
	assert_int_equal(web__profile_bound(g.data, g.len, MAX_DEC), sizeof(big));
	assert_int_equal(web__profile_bound(g.data, g.len, 1000), 1000);
	assert_int_equal(web__profile_bound(big, 10, MAX_DEC), 10);
	assert_int_equal(web__inflate_bound(5, 20, MAX_DEC), 20);
	assert_int_equal(web__gzip_isize(g.data, 17), 0);
	buf_release(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_packed_requests_exact),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_byte_changes),
		cmocka_unit_test(test_unknown_fields),
		cmocka_unit_test(test_replaced_profile_counted),
		cmocka_unit_test(test_not_push_bytes),
		cmocka_unit_test(test_profile_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
