/* test_buf.c - growable buffer: appends, varints, JSON strings, the cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/blockpool.h"
#include "base/buf.h"
#include "base/json.h"
#include "base/err.h"
#include "base/varint.h"
#include "zero_cap.h"

#define TEST_MAX (1 << 20)

static void test_append_printf(void **state)
{
	struct buf b;
	(void)state;
	buf_init(&b, TEST_MAX);
	assert_int_equal(buf_puts(&b, "abc"), 0);
	assert_int_equal(buf_printf(&b, "-%d-%s", 42, "x"), 0);
	assert_string_equal(b.data, "abc-42-x");
	buf_reset(&b);
	assert_int_equal(b.len, 0);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(buf_putc(&b, 'z'), 0);
	assert_int_equal(b.len, 10000);
	buf_release(&b);
}

static void test_cap_leaves_contents(void **state)
{
	struct buf b;
	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_puts(&b, "12345"), 0);
	assert_int_equal(buf_puts(&b, "6789"), ERR_TOO_LARGE);
	assert_string_equal(b.data, "12345");
	assert_int_equal(buf_puts(&b, "678"), 0);
	assert_int_equal(b.len, 8);
	buf_release(&b);
}

static void test_varints(void **state)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX };
	struct buf b;
	(void)state;
	buf_init(&b, TEST_MAX);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		assert_int_equal(buf_put_uvarint(&b, vals[i]), 0);
	assert_int_equal(buf_put_svarint(&b, -5), 0);
	const uint8_t *p = (const uint8_t *)b.data, *end = p + b.len;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint64_t v;
		size_t n = varint_get(p, end, &v);
		assert_true(n > 0);
		assert_true(v == vals[i]);
		p += n;
	}
	uint64_t z = 0;
	assert_true(varint_get(p, end, &z) > 0);
	assert_true(zigzag_decode(z) == -5);
	/* Truncated and overlong varints are refused. */
	uint8_t trunc[] = { 0x80, 0x80 };
	assert_int_equal(varint_get(trunc, trunc + 2, &z), 0);
	uint8_t over[11];
	memset(over, 0xff, sizeof(over));
	assert_int_equal(varint_get(over, over + 11, &z), 0);
	buf_release(&b);
}

/* A length-prefixed string: the uvarint length, then the bytes; a 200-byte
 * one takes a two-byte length; past the cap nothing is half-written. */
static void test_lstr(void **state)
{
	char big[200];
	struct buf b;
	(void)state;
	memset(big, 'x', sizeof(big));
	buf_init(&b, 6 + 2 + sizeof(big) + 1);
	assert_int_equal(buf_put_lstr(&b, "abcd", 4), 0);
	assert_int_equal(buf_put_lstr(&b, "", 0), 0);
	assert_int_equal(b.len, 6);
	assert_memory_equal(b.data, "\x04" "abcd" "\x00", 6);
	assert_int_equal(buf_put_lstr(&b, big, sizeof(big)), 0);
	assert_int_equal(b.len, 6 + 2 + sizeof(big));
	assert_int_equal((uint8_t)b.data[6], 0xc8);
	assert_int_equal((uint8_t)b.data[7], 0x01);
	/* One byte left: the length fits, the byte does not. */
	assert_int_not_equal(buf_put_lstr(&b, "y", 1), 0);
	assert_int_equal(b.len, 6 + 2 + sizeof(big));
	buf_release(&b);
}

static void test_json_string(void **state)
{
	struct buf b;
	(void)state;
	buf_init(&b, TEST_MAX);
	assert_int_equal(buf_put_json_str(&b, "a\"b\\c\n\x01", 7), 0);
	assert_string_equal(b.data, "\"a\\\"b\\\\c\\n\\u0001\"");
	b.len = 0;
	assert_int_equal(buf_put_json_str(&b, "\b\f\r\t\x1f\x7f~", 7), 0);
	assert_string_equal(b.data, "\"\\b\\f\\r\\t\\u001f\\u007f~\"");
	b.len = 0;
	assert_int_equal(buf_put_json_str(&b, "a\"b\\c\n\x01", 7), 0);
	size_t len;
	char *d = buf_detach(&b, &len);
	assert_int_equal(len, strlen(d));
	free(d);
	assert_null(b.data);
	/* UTF-8 is kept; a byte that starts no valid sequence becomes U+FFFD. */
	buf_init(&b, TEST_MAX);
	assert_int_equal(buf_put_json_str(&b, "\xc3\xa9\xff-\xe2\x82\xac\xe2\x82-\xc0\xaf", 12), 0);
	assert_string_equal(b.data, "\"\xc3\xa9\xef\xbf\xbd-\xe2\x82\xac\xef\xbf\xbd\xef\xbf\xbd-"
				    "\xef\xbf\xbd\xef\xbf\xbd\"");
	assert_true(json_utf8_valid(b.data, b.len));
	buf_release(&b);
	buf_init(&b, TEST_MAX);
	assert_int_equal(buf_put_json_str(&b, "\xf0\x9f\x98", 3), 0); /* cut at the end */
	assert_string_equal(b.data, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	buf_release(&b);
}

/* Growth doubles from 256 bytes and stops at the cap plus the NUL. */
static void test_growth_policy(void **state)
{
	struct buf b;
	(void)state;
	buf_init(&b, 1000);
	assert_int_equal(buf_putc(&b, 'a'), 0);
	assert_int_equal(b.alloc, 256);
	assert_int_equal(buf_reserve(&b, 300), 0);
	assert_int_equal(b.alloc, 512);
	assert_int_equal(buf_reserve(&b, 999), 0);
	assert_int_equal(b.alloc, 1001);
	assert_int_equal(buf_reserve(&b, 1000), ERR_TOO_LARGE);
	assert_int_equal(b.alloc, 1001);
	buf_release(&b);
	/* A cap of SIZE_MAX keeps room for the NUL. */
	buf_init(&b, SIZE_MAX);
	assert_int_equal(buf_reserve(&b, SIZE_MAX), ERR_TOO_LARGE);
	assert_null(b.data);
	buf_release(&b);
}

static void buf_init0(void *b)
{
	buf_init(b, 0);
}

/*
 * A cap of 0 is a programmer error: buf_init asserts where asserts are
 * compiled in (Debug, ASan), and where they are not the buffer refuses
 * every byte instead of growing without bound.
 */
static void test_zero_cap(void **state)
{
	struct buf b;
	(void)state;

	zero_cap_init(buf_init0, &b, sizeof(b));
	assert_int_equal(buf_putc(&b, 'x'), ERR_TOO_LARGE);
	assert_int_equal(b.len, 0);
	buf_release(&b);
}

/* buf_read_file: whole files at and past the cap, with chunk-sized edges. */
static void test_read_file(void **state)
{
	char path[] = "/tmp/unhex-test-buf-XXXXXX";
	size_t sizes[] = { 0, 1, 65535, 65536, 65537, 200000 };
	int fd = mkstemp(path);
	(void)state;

	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		char *data = malloc(n + 1);
		struct buf b;

		assert_non_null(data);
		for (size_t k = 0; k < n; k++)
			data[k] = (char)('a' + k % 26);
		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, data, n, 0), (ssize_t)n);
		buf_init(&b, n ? n : 1);
		assert_int_equal(buf_read_file(&b, path), 0);
		assert_int_equal(b.len, n);
		assert_memory_equal(b.data ? b.data : "", data, n);
		buf_release(&b);
		if (n > 1) {
			buf_init(&b, n - 1);
			assert_int_equal(buf_read_file(&b, path), ERR_TOO_LARGE);
			buf_release(&b);
		}
		free(data);
	}
	close(fd);
	unlink(path);
	struct buf b;
	buf_init(&b, 16);
	assert_int_equal(buf_read_file(&b, "/nonexistent/unhex"), ERR_IO);
	buf_release(&b);
}

/*
 * A buffer on a block pool: what it grows into comes from the pool, goes
 * back to it on release, and serves the next buffer without the C heap;
 * the cap, the contents and a failed growth behave as on the C heap.
 */
static void test_on_pool(void **state)
{
	struct blockpool pool;
	struct buf b;
	size_t held;
	uint64_t reused, fresh;
	(void)state;
	assert_int_equal(blockpool_init_classes(&pool, 4u << 20, 128u << 10, 1u << 20), 0);
	for (int round = 0; round < 3; round++) {
		buf_init_alloc(&b, 600u << 10, &pool.alloc);
		for (size_t i = 0; i < (300u << 10); i++)
			assert_int_equal(buf_putc(&b, (char)('a' + i % 26)), 0);
		assert_int_equal(b.len, 300u << 10);
		for (size_t i = 0; i < b.len; i += 4099)
			assert_int_equal(b.data[i], (char)('a' + i % 26));
		assert_int_equal(b.data[b.len], '\0');
		/* Past the cap: refused, the contents kept. */
		assert_int_equal(buf_reserve(&b, 301u << 10), ERR_TOO_LARGE);
		assert_int_equal(b.data[7], 'h');
		buf_release(&b);
		blockpool_stats(&pool, &held, &reused, &fresh);
		assert_true(held >= (300u << 10));
		if (round > 0)
			assert_true(reused > 0);
	}
	blockpool_stats(&pool, &held, &reused, &fresh);
	/* The first round's growth took fresh blocks; the later rounds' came back. */
	assert_true(reused >= 2);
	blockpool_release(&pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_printf),
		cmocka_unit_test(test_cap_leaves_contents),
		cmocka_unit_test(test_varints),
		cmocka_unit_test(test_lstr),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_growth_policy),
		cmocka_unit_test(test_zero_cap),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_on_pool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
