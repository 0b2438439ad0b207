/*
 * test_codec.c - the symbol-cache record codec (codec.c): round trips
 * through both decoders, the exact set of inputs that decode (every proper
 * prefix of a record is refused; bytes after a record are ignored), and
 * hand-made records that break each rule, and NULs inside strings (found
 * by fuzz_symcache): a string ends at its first one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"

static const struct sym_frame g_in[3] = {
	{ "inner", "/src/a.h", 3, 4, SYM_FRAME_INLINED },
	{ "middle", NULL, 7, 0, SYM_FRAME_INLINED },
	{ "outer", "/src/a.c", 11, 2, 0 },
};

static void encode(const struct sym_frame *f, size_t n, struct buf *b)
{
	buf_init(b, 1 << 20);
	assert_int_equal(debuginfo__frames_encode(f, n, b), 0);
}

static void same_frames(const struct sym_frame *x, const struct sym_frame *y, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (x[i].function)
			assert_string_equal(x[i].function, y[i].function);
		else
			assert_null(y[i].function);
		if (x[i].file)
			assert_string_equal(x[i].file, y[i].file);
		else
			assert_null(y[i].file);
		assert_int_equal(x[i].line, y[i].line);
		assert_int_equal(x[i].column, y[i].column);
		assert_int_equal(x[i].flags, y[i].flags);
	}
}

static void test_round_trip(void **state)
{
	struct sym_frame out[SYM_MAX_FRAMES];
	struct arena a;
	struct buf b, scr;
	size_t n = 0;

	(void)state;
	encode(g_in, 3, &b);
	arena_init(&a, 1 << 20);
	assert_int_equal(debuginfo__frames_decode(b.data, b.len, &a, out, SYM_MAX_FRAMES, &n), 0);
	assert_int_equal(n, 3);
	same_frames(g_in, out, 3);

	buf_init(&scr, 1 << 20);
	n = 0;
	assert_int_equal(debuginfo__frames_decode_scratch(b.data, b.len, &scr, out,
							  SYM_MAX_FRAMES, &n), 0);
	assert_int_equal(n, 3);
	same_frames(g_in, out, 3);
	/* The strings live in the scratch buffer, not in the record. */
	assert_true(out[0].function >= scr.data && out[0].function < scr.data + scr.len);

	/* Zero frames: the debug info knows nothing at the address. */
	buf_release(&b);
	encode(NULL, 0, &b);
	assert_int_equal(b.len, 2);
	assert_int_equal(debuginfo__frames_decode(b.data, b.len, &a, out, SYM_MAX_FRAMES, &n), 0);
	assert_int_equal(n, 0);

	/* Empty strings are unknown ones. */
	buf_release(&b);
	encode((struct sym_frame[]){ { "", "", 1, 2, 0 } }, 1, &b);
	assert_int_equal(debuginfo__frames_decode(b.data, b.len, &a, out, SYM_MAX_FRAMES, &n), 0);
	assert_null(out[0].function);
	assert_null(out[0].file);
	buf_release(&scr);
	buf_release(&b);
	arena_release(&a);
}

/*
 * The decoders accept exactly the records: no proper prefix of a record is
 * one (the count comes first and every field after it is required), and a
 * record followed by anything decodes to the same frames.
 */
static void test_prefixes_and_tails(void **state)
{
	struct sym_frame out[SYM_MAX_FRAMES];
	struct arena a;
	struct buf b, scr;
	size_t n;

	(void)state;
	encode(g_in, 3, &b);
	arena_init(&a, 1 << 20);
	buf_init(&scr, 1 << 20);
	for (size_t cut = 0; cut < b.len; cut++) {
		assert_int_equal(debuginfo__frames_decode(b.data, cut, &a, out, SYM_MAX_FRAMES, &n),
				 ERR_CORRUPT);
		assert_int_equal(debuginfo__frames_decode_scratch(b.data, cut, &scr, out,
								  SYM_MAX_FRAMES, &n),
				 ERR_CORRUPT);
	}
	assert_int_equal(buf_append(&b, "\x07\xff", 2), 0);
	n = 0;
	assert_int_equal(debuginfo__frames_decode(b.data, b.len, &a, out, SYM_MAX_FRAMES, &n), 0);
	assert_int_equal(n, 3);
	same_frames(g_in, out, 3);
	buf_release(&scr);
	buf_release(&b);
	arena_release(&a);
}

static int decode_bytes(const char *bytes, size_t len, size_t max)
{
	struct sym_frame out[SYM_MAX_FRAMES];
	struct arena a;
	size_t n;
	int rc;

	arena_init(&a, 1 << 20);
	rc = debuginfo__frames_decode(bytes, len, &a, out, max, &n);
	arena_release(&a);
	return rc;
}

static void test_broken_records(void **state)
{
	(void)state;
	/* Version 1, one frame: flags 0, line 5, column 0, "f", "". */
	assert_int_equal(decode_bytes("\x01\x01\x00\x05\x00\x01" "f" "\x00", 8, SYM_MAX_FRAMES), 0);
	/* More frames than the caller has room for. */
	assert_int_equal(decode_bytes("\x01\x01\x00\x05\x00\x01" "f" "\x00", 8, 0), ERR_CORRUPT);
	/* Another version. */
	assert_int_equal(decode_bytes("\x02\x00", 2, SYM_MAX_FRAMES), ERR_CORRUPT);
	/* A line past 32 bits (2^32 as a varint). */
	assert_int_equal(decode_bytes("\x01\x01\x00\x80\x80\x80\x80\x10\x00\x00\x00", 11,
				      SYM_MAX_FRAMES), ERR_CORRUPT);
	/* A string longer than what is left. */
	assert_int_equal(decode_bytes("\x01\x01\x00\x05\x00\x09" "f" "\x00", 8, SYM_MAX_FRAMES),
			 ERR_CORRUPT);
	/* A count that is not a varint (ten continuation bytes). */
	assert_int_equal(decode_bytes("\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11,
				      SYM_MAX_FRAMES), ERR_CORRUPT);
}

/* Strings are C strings: a NUL ends one, and one starting with NUL is unknown. */
static void test_nul_in_strings(void **state)
{
	struct sym_frame out[SYM_MAX_FRAMES], again[SYM_MAX_FRAMES];
	struct arena a;
	struct buf b;
	size_t n = 0, m = 0;

	(void)state;
	arena_init(&a, 1 << 20);
	/* Function "f\0g", file "\0x". */
	assert_int_equal(debuginfo__frames_decode("\x01\x01\x00\x05\x00\x03" "f\0g" "\x02" "\0x", 12,
						  &a, out, SYM_MAX_FRAMES, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].function, "f");
	assert_null(out[0].file);
	/* What decodes re-encodes to the same frames. */
	encode(out, n, &b);
	assert_int_equal(debuginfo__frames_decode(b.data, b.len, &a, again, SYM_MAX_FRAMES, &m), 0);
	assert_int_equal(m, 1);
	same_frames(out, again, 1);
	buf_release(&b);
	arena_release(&a);
}

static void test_encoder_cap(void **state)
{
	struct buf b;
	size_t full;

	(void)state;
	encode(g_in, 3, &b);
	full = b.len;
	buf_release(&b);
	/* Past the buffer's cap the encoder fails instead of growing. */
	buf_init(&b, full - 1);
	assert_int_equal(debuginfo__frames_encode(g_in, 3, &b), ERR_TOO_LARGE);
	buf_release(&b);
	buf_init(&b, full);
	assert_int_equal(debuginfo__frames_encode(g_in, 3, &b), 0);
	assert_int_equal(b.len, full);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_prefixes_and_tails),
		cmocka_unit_test(test_broken_records),
		cmocka_unit_test(test_nul_in_strings),
		cmocka_unit_test(test_encoder_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
