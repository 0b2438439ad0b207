/*
 * fuzz_object.h - the entry point shared by the libFuzzer targets of the
 * bucket's own objects (storage_int.h sections 12 and 13: blocks-index,
 * debuginfo-refs), which anyone with the bucket's keys may write.  The
 * input's header checksum is sealed first (store__objhead_seal(), as the
 * writer does), so the fuzzer reaches the decoder.  What decodes must pass
 * the target's check(); encoding it again must decode, pass check() too,
 * and encode to the same bytes.  A failed check aborts, which libFuzzer
 * reports as a crash.
 */
#ifndef UNHEX_TESTS_FUZZ_OBJECT_H
#define UNHEX_TESTS_FUZZ_OBJECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "storage/storage_int.h"

/*
 * FUZZ_OBJECT_TARGET(TYPE, CODEC, MAX_BYTES): defines LLVMFuzzerTestOneInput
 * for `struct TYPE`, decoded by store__CODEC_decode(), encoded (at most
 * MAX_BYTES) by store__CODEC_encode() and freed by store__CODEC_release();
 * the target defines `static void check(const struct TYPE *)` before it.
 * Inputs over 1 MiB are passed over (the decoders' caps are far below).
 */
#define FUZZ_OBJECT_TARGET(TYPE, CODEC, MAX_BYTES) \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) \
	{ \
		struct TYPE x, y; \
		struct buf in, a, b; \
\
		if (size < STORE_OBJHEAD_BYTES || size > ((size_t)1 << 20)) \
			return 0; \
		buf_init(&in, size); \
		if (buf_append(&in, data, size)) \
			abort(); \
		store__objhead_seal(&in, 0); \
		if (store__##CODEC##_decode((const uint8_t *)in.data, size, &x, NULL) == 0) { \
			check(&x); \
			buf_init(&a, MAX_BYTES); \
			buf_init(&b, MAX_BYTES); \
			if (store__##CODEC##_encode(&x, &a) || \
			    store__##CODEC##_decode((const uint8_t *)a.data, a.len, &y, NULL)) \
				abort(); \
			check(&y); \
			if (store__##CODEC##_encode(&y, &b) || a.len != b.len || \
			    memcmp(a.data, b.data, a.len)) \
				abort(); \
			store__##CODEC##_release(&y); \
			store__##CODEC##_release(&x); \
			buf_release(&a); \
			buf_release(&b); \
		} \
		buf_release(&in); \
		return 0; \
	}

#endif
