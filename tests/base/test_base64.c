/* test_base64.c - base64_decode and base64_encode (base/base64.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/err.h"

static int dec(const char *s, unsigned flags, uint8_t *out, size_t max, size_t *n)
{
	return base64_decode(s, strlen(s), flags, out, max, n);
}

/* RFC 4648 §10's vectors both ways, padded and not. */
static void test_vectors(void **state)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const enc[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
					   "Zm9vYmFy" };
	uint8_t out[16];
	size_t n;
	(void)state;

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		struct buf b;
		char bare[16];

		buf_init(&b, 64);
		assert_int_equal(base64_encode(&b, (const uint8_t *)plain[i], strlen(plain[i])), 0);
		assert_int_equal(b.len, strlen(enc[i]));
		assert_memory_equal(b.data ? b.data : "", enc[i], b.len);
		buf_release(&b);
		assert_int_equal(dec(enc[i], BASE64_CANON, out, sizeof(out), &n), 0);
		assert_int_equal(n, strlen(plain[i]));
		assert_memory_equal(out, plain[i], n);
		snprintf(bare, sizeof(bare), "%.*s", (int)strcspn(enc[i], "="), enc[i]);
		assert_int_equal(dec(bare, 0, out, sizeof(out), &n), 0);
		assert_int_equal(n, strlen(plain[i]));
	}
}

static void test_alphabets_and_refusals(void **state)
{
	uint8_t out[8];
	size_t n = 99;
	(void)state;

	/* 0xfb 0xff: "+/8" standard, "-_8" URL-safe. */
	assert_int_equal(dec("-_8", 0, out, sizeof(out), &n), ERR_INVALID);
	assert_int_equal(dec("-_8", BASE64_URL, out, sizeof(out), &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[0], 0xfb);
	assert_int_equal(out[1], 0xff);
	assert_int_equal(dec("+/8=", 0, out, sizeof(out), &n), 0);
	/* One character short of a byte, padding in the wrong place, a stray byte. */
	assert_int_equal(dec("Zm9vY", 0, out, sizeof(out), &n), ERR_INVALID);
	assert_int_equal(dec("Zg=", 0, out, sizeof(out), &n), ERR_INVALID);
	assert_int_equal(dec("Zm!v", 0, out, sizeof(out), &n), ERR_INVALID);
	/* "Zh==" has stray bits after 'f': only BASE64_CANON refuses it. */
	assert_int_equal(dec("Zh==", 0, out, sizeof(out), &n), 0);
	assert_int_equal(dec("Zh==", BASE64_CANON, out, sizeof(out), &n), ERR_INVALID);
	/* Past max. */
	assert_int_equal(dec("Zm9vYmFy", 0, out, 5, &n), ERR_TOO_LARGE);
	assert_int_equal(dec("Zm9vYmFy", 0, out, 6, &n), 0);
	assert_true(base64_decoded_max(8) >= 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_alphabets_and_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
