/*
 * test_sha256.c - SHA-256 against the FIPS 180-4 examples and sha256sum,
 * files (empty, larger than a read chunk, missing), the constant-time
 * comparison, and the hex forms (round trip, case, bad digits, length).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/sha256.h"

static void hex_of(const void *p, size_t n, char out[SHA256_HEX_LEN + 1])
{
	uint8_t d[SHA256_LEN];

	assert_int_equal(sha256_buf(p, n, d), 0);
	sha256_hex(d, out);
}

static void test_known_answers(void **state)
{
	char h[SHA256_HEX_LEN + 1];
	(void)state;

	hex_of("", 0, h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of("abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, h);
	assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* A file of n pseudo-random bytes, hashed by us and by sha256sum. */
static void check_file(size_t n)
{
	char path[] = "/tmp/unhex-sha256-XXXXXX", cmd[128], want[SHA256_HEX_LEN + 8] = "";
	char have[SHA256_HEX_LEN + 1];
	uint8_t d[SHA256_LEN];
	uint64_t size = 1;
	int fd = mkstemp(path);
	FILE *p;

	assert_true(fd >= 0);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)(i * 2654435761u >> 13);

		assert_int_equal(write(fd, &c, 1), 1);
	}
	close(fd);
	assert_int_equal(sha256_file(path, d, &size), 0);
	assert_int_equal(size, n);
	sha256_hex(d, have);
	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(want, sizeof(want), p));
	pclose(p);
	want[SHA256_HEX_LEN] = '\0';
	assert_string_equal(have, want);
	unlink(path);
}

static void test_files(void **state)
{
	uint8_t d[SHA256_LEN], before[SHA256_LEN];
	(void)state;

	check_file(0);
	check_file(1);
	check_file(64 * 1024);
	check_file(200 * 1024 + 17);
	memset(d, 7, sizeof(d));
	memcpy(before, d, sizeof(d));
	assert_int_equal(sha256_file("/nonexistent/unhex", d, NULL), ERR_IO);
	assert_memory_equal(d, before, sizeof(d));
}

static void test_equal(void **state)
{
	uint8_t a[SHA256_LEN], b[SHA256_LEN];
	(void)state;

	assert_int_equal(sha256_buf("token", 5, a), 0);
	assert_int_equal(sha256_buf("token", 5, b), 0);
	assert_true(sha256_equal(a, b));
	for (size_t i = 0; i < SHA256_LEN; i++) {
		b[i] ^= 1;
		assert_false(sha256_equal(a, b));
		b[i] ^= 1;
	}
}

static void test_hex(void **state)
{
	const char *h = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
	char back[SHA256_HEX_LEN + 1], bad[SHA256_HEX_LEN + 1];
	uint8_t d[SHA256_LEN], e[SHA256_LEN];
	(void)state;

	assert_int_equal(sha256_parse_hex(h, strlen(h), d), 0);
	assert_int_equal(sha256_buf("abc", 3, e), 0);
	assert_memory_equal(d, e, SHA256_LEN);
	sha256_hex(d, back);
	assert_string_equal(back, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(sha256_parse_hex(h, 63, d), ERR_INVALID);
	assert_int_equal(sha256_parse_hex(h, 0, d), ERR_INVALID);
	memcpy(bad, back, sizeof(bad));
	bad[10] = 'g';
	memset(d, 0, sizeof(d));
	assert_int_equal(sha256_parse_hex(bad, SHA256_HEX_LEN, d), ERR_INVALID);
	for (size_t i = 0; i < SHA256_LEN; i++)
		assert_int_equal(d[i], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_hex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
