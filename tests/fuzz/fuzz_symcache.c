/*
 * fuzz_symcache.c - libFuzzer target for the symbol-cache record decoder
 * (debuginfo/codec.c): values read back from the store are untrusted
 * bytes.  Both decoders (arena and scratch buffer) must agree on whether
 * the bytes are a record and on its frames, and a record that decodes
 * must survive encode -> decode unchanged, with no proper prefix of the
 * re-encoding decoding.  Seeds: make_seeds.py.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_frames(const struct sym_frame *x, const struct sym_frame *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!same_str(x[i].function, y[i].function) || !same_str(x[i].file, y[i].file) ||
		    x[i].line != y[i].line || x[i].column != y[i].column ||
		    x[i].flags != y[i].flags)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_frame f[SYM_MAX_FRAMES], g[SYM_MAX_FRAMES], h[SYM_MAX_FRAMES];
	size_t n = 0, m = 0, k = 0;
	struct arena a;
	struct buf scr, enc;
	int rc, rc2;

	arena_init(&a, 64u << 20);
	buf_init(&scr, 64u << 20);
	buf_init(&enc, 64u << 20);
	rc = debuginfo__frames_decode(data, size, &a, f, SYM_MAX_FRAMES, &n);
	rc2 = debuginfo__frames_decode_scratch(data, size, &scr, g, SYM_MAX_FRAMES, &m);
	if (rc != rc2 || (rc && rc != ERR_CORRUPT))
		abort();
	if (rc == 0) {
		if (n != m || !same_frames(f, g, n))
			abort();
		if (debuginfo__frames_encode(f, n, &enc) ||
		    debuginfo__frames_decode(enc.data, enc.len, &a, h, SYM_MAX_FRAMES, &k) ||
		    k != n || !same_frames(f, h, n))
			abort();
		for (size_t cut = 0; cut < enc.len; cut++)
			if (debuginfo__frames_decode(enc.data, cut, &a, h, SYM_MAX_FRAMES, &k) !=
			    ERR_CORRUPT)
				abort();
	}
	buf_release(&enc);
	buf_release(&scr);
	arena_release(&a);
	return 0;
}
