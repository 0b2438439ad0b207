/*
 * codec.c - the value of a symbol-cache record: the frames of one address
 * (format in debuginfo_int.h).  Pure functions over bytes read back from
 * the store, which are checked like any other input from disk.
 */
#include <assert.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/varint.h"
#include "debuginfo_int.h"

#define CACHE_VERSION 1

static int put_str(struct buf *out, const char *s)
{
	return s ? buf_put_lstr(out, s, strlen(s)) : buf_put_uvarint(out, 0);
}

int debuginfo__frames_encode(const struct sym_frame *f, size_t n, struct buf *out)
{
	int rc;

	assert(f || n == 0);
	rc = buf_putc(out, CACHE_VERSION);
	if (!rc)
		rc = buf_put_uvarint(out, n);
	for (size_t i = 0; i < n && !rc; i++) {
		if (!(rc = buf_put_uvarint(out, f[i].flags)) &&
		    !(rc = buf_put_uvarint(out, f[i].line)) &&
		    !(rc = buf_put_uvarint(out, f[i].column)) && !(rc = put_str(out, f[i].function)))
			rc = put_str(out, f[i].file);
	}
	return rc;
}

/* A string of the encoding: copied into `scr` when given (room reserved by
 * the caller), else into the arena `a`. */
static int get_str(const uint8_t **p, const uint8_t *end, struct arena *a, struct buf *scr,
		   const char **out)
{
	uint64_t n;
	size_t k = varint_get(*p, end, &n);

	if (!k || n > (uint64_t)(end - *p - k))
		return ERR_CORRUPT;
	*p += k;
	/* Strings are C strings, so one ends at a NUL, and one that starts
	 * with a NUL is unknown, as "" is: what decodes re-encodes to the same
	 * frames.  Refusing any NUL would mean scanning every string of every
	 * cached frame; the first byte is enough for that guarantee. */
	if (n == 0 || **p == '\0') {
		*out = NULL;
		*p += n;
		return 0;
	}
	if (scr) {
		char *d = scr->data + scr->len;

		/* Room was reserved up front, so the buffer never moves. */
		assert(scr->len + n + 1 <= scr->alloc);
		memcpy(d, *p, (size_t)n);
		d[n] = '\0';
		scr->len += (size_t)n + 1;
		*out = d;
	} else {
		*out = arena_strndup(a, (const char *)*p, (size_t)n);
	}
	*p += n;
	return *out ? 0 : ERR_NOMEM;
}

static int frames_decode(const void *val, size_t len, struct arena *strs, struct buf *scr,
			 struct sym_frame *f, size_t max, size_t *n)
{
	const uint8_t *p = val, *end = p + len;
	uint64_t cnt, v[3];
	size_t k;
	int rc;

	assert((val || len == 0) && (f || max == 0) && n && (strs || scr));
	if (len < 2 || p[0] != CACHE_VERSION)
		return ERR_CORRUPT;
	p++;
	k = varint_get(p, end, &cnt);
	if (!k || cnt > max)
		return ERR_CORRUPT;
	p += k;
	for (size_t i = 0; i < cnt; i++) {
		for (int j = 0; j < 3; j++) {
			k = varint_get(p, end, &v[j]);
			if (!k || v[j] > UINT32_MAX)
				return ERR_CORRUPT;
			p += k;
		}
		f[i].flags = (uint32_t)v[0];
		f[i].line = (uint32_t)v[1];
		f[i].column = (uint32_t)v[2];
		if ((rc = get_str(&p, end, strs, scr, &f[i].function)) ||
		    (rc = get_str(&p, end, strs, scr, &f[i].file)))
			return rc;
	}
	*n = (size_t)cnt;
	return 0;
}

int debuginfo__frames_decode(const void *val, size_t len, struct arena *strs,
			     struct sym_frame *f, size_t max, size_t *n)
{
	return frames_decode(val, len, strs, NULL, f, max, n);
}

int debuginfo__frames_decode_into(const void *val, size_t len, struct buf *scr,
				  struct sym_frame *f, size_t max, size_t *n)
{
	return frames_decode(val, len, NULL, scr, f, max, n);
}

/* The strings' bytes and NULs fit in len + 2 * max, reserved up front so
 * the buffer never moves while decoding. */
int debuginfo__frames_decode_scratch(const void *val, size_t len, struct buf *scr,
				     struct sym_frame *f, size_t max, size_t *n)
{
	int rc;

	buf_reset(scr);
	if ((rc = buf_reserve(scr, len + 2 * max)))
		return rc;
	return frames_decode(val, len, NULL, scr, f, max, n);
}
