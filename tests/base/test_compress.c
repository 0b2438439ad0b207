/* test_compress.c - gzip/zstd round trips, truncation and bomb caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"

/* Test inputs and outputs stay far below this. */
#define TEST_BUF_MAX (64u << 20)

static void fill(struct buf *b, size_t n)
{
	buf_init(b, TEST_BUF_MAX);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(buf_putc(b, (char)("abcdefgh"[i % 8] + (i % 13 == 0))), 0);
}

static void test_gzip_round_trip(void **state)
{
	struct buf in, gz, out;
	struct err_msg msg = { { 0 } };
	(void)state;
	fill(&in, 100000);
	buf_init(&gz, TEST_BUF_MAX);
	buf_init(&out, TEST_BUF_MAX);
	assert_int_equal(gzip_compress(in.data, in.len, 6, &gz), 0);
	assert_true(is_gzip(gz.data, gz.len));
	assert_int_equal(gunzip_capped(gz.data, gz.len, 1 << 20, &out, &msg), 0);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.data, in.data, in.len);
	/* Truncated. */
	buf_reset(&out);
	assert_int_equal(gunzip_capped(gz.data, gz.len / 2, 1 << 20, &out, &msg), ERR_INVALID);
	assert_int_equal(out.len, 0);
	assert_non_null(strstr(msg.text, "truncated"));
	/* Corrupted header. */
	err_clear(&msg);
	gz.data[3] = (char)0xff;
	gz.data[10] ^= 0x55;
	assert_int_equal(gunzip_capped(gz.data, gz.len, 1 << 20, &out, &msg), ERR_INVALID);
	buf_release(&in);
	buf_release(&gz);
	buf_release(&out);
}

static void test_gzip_bomb_is_capped(void **state)
{
	struct buf zeros, gz, out;
	struct err_msg msg = { { 0 } };
	(void)state;
	buf_init(&zeros, TEST_BUF_MAX);
	assert_int_equal(buf_reserve(&zeros, 8 << 20), 0);
	memset(zeros.data, 0, 8 << 20);
	zeros.len = 8 << 20;
	buf_init(&gz, TEST_BUF_MAX);
	buf_init(&out, TEST_BUF_MAX);
	assert_int_equal(gzip_compress(zeros.data, zeros.len, 9, &gz), 0);
	assert_true(gz.len < 64 * 1024);
	assert_int_equal(gunzip_capped(gz.data, gz.len, 1 << 20, &out, &msg), ERR_TOO_LARGE);
	/* Growth doubles, so memory stays within twice the cap. */
	assert_true(out.alloc <= 2 * ((1 << 20) + 1));
	assert_int_equal(out.len, 0);
	buf_release(&zeros);
	buf_release(&gz);
	buf_release(&out);
}

static void test_zstd(void **state)
{
	struct buf in, z, out;
	struct err_msg msg = { { 0 } };
	(void)state;
	fill(&in, 50000);
	buf_init(&z, TEST_BUF_MAX);
	buf_init(&out, TEST_BUF_MAX);
	assert_int_equal(zstd_compress_buf(in.data, in.len, 3, &z), 0);
	assert_int_equal(zstd_decompress_capped(z.data, z.len, in.len, &out, &msg), 0);
	assert_memory_equal(out.data, in.data, in.len);
	buf_reset(&out);
	assert_int_equal(zstd_decompress_capped(z.data, z.len, in.len - 1, &out, &msg),
			 ERR_TOO_LARGE);
	err_clear(&msg);
	assert_int_equal(zstd_decompress_capped(z.data, z.len - 3, in.len, &out, &msg),
			 ERR_CORRUPT);
	buf_release(&in);
	buf_release(&z);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gzip_round_trip),
		cmocka_unit_test(test_gzip_bomb_is_capped),
		cmocka_unit_test(test_zstd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
