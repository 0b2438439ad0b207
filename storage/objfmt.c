/*
 * objfmt.c - the frame of the bucket's own objects (the bucket index and
 * debuginfo-refs, storage_int.h sections 12 and 13): their 16-byte header,
 * and the bounded reader their decoders take the body apart with, so that
 * both check untrusted bytes the same way and say where they went wrong.
 */
#include "storage_int.h"

#include <assert.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"

/* ---- the header ------------------------------------------------------------------- */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int store__objhead_put(struct buf *out, const char magic[8], uint32_t version)
{
	uint8_t head[STORE_OBJHEAD_BYTES] = { 0 };

	memcpy(head, magic, 8);
	for (int i = 0; i < 4; i++)
		head[8 + i] = (uint8_t)(version >> (8 * i));
	return buf_append(out, head, sizeof(head));
}

void store__objhead_seal(struct buf *out, size_t start)
{
	uint8_t *p = (uint8_t *)out->data + start;
	uint32_t crc;

	assert(out->len >= start + STORE_OBJHEAD_BYTES);
	crc = store__crc32c(0, p + STORE_OBJHEAD_BYTES, out->len - start - STORE_OBJHEAD_BYTES);
	for (int i = 0; i < 4; i++)
		p[12 + i] = (uint8_t)(crc >> (8 * i));
}

int store__objhead_check(const uint8_t *p, size_t len, size_t max, const char magic[8],
			 uint32_t version, const char *what, struct err_msg *msg)
{
	if (len < STORE_OBJHEAD_BYTES || len > max || memcmp(p, magic, 8))
		return err_set(msg, ERR_CORRUPT, "not a %s (%zu bytes)", what, len);
	if (le32(p + 8) != version)
		return err_set(msg, ERR_CORRUPT, "%s of format %u, not %u", what, le32(p + 8),
			       version);
	if (store__crc32c(0, p + STORE_OBJHEAD_BYTES, len - STORE_OBJHEAD_BYTES) != le32(p + 12))
		return err_set(msg, ERR_CORRUPT, "%s: checksum mismatch", what);
	return 0;
}

/* ---- the body --------------------------------------------------------------------- */

void store__objrd_init(struct objrd *r, const uint8_t *p, size_t len, const char *object,
		       struct err_msg *msg)
{
	r->start = p;
	r->p = p + STORE_OBJHEAD_BYTES;
	r->end = p + len;
	r->object = object;
	r->msg = msg;
}

int store__objrd_bad(struct objrd *r, const char *what)
{
	return err_set(r->msg, ERR_CORRUPT, "%s: bad %s at byte %zu", r->object, what,
		       (size_t)(r->p - r->start));
}

static int truncated(struct objrd *r, const char *what)
{
	return err_set(r->msg, ERR_CORRUPT, "%s: %s truncated at byte %zu", r->object, what,
		       (size_t)(r->p - r->start));
}

int store__objrd_uv(struct objrd *r, uint64_t max, uint64_t *v, const char *what)
{
	uint64_t u = 0;
	size_t n = varint_get(r->p, r->end, &u);

	if (!n)
		return truncated(r, what);
	if (u > max)
		return err_set(r->msg, ERR_CORRUPT, "%s: %s %llu (at most %llu) at byte %zu",
			       r->object, what, (unsigned long long)u, (unsigned long long)max,
			       (size_t)(r->p - r->start));
	r->p += n;
	*v = u;
	return 0;
}

int store__objrd_sv(struct objrd *r, int64_t *v, const char *what)
{
	uint64_t u = 0;
	int rc = store__objrd_uv(r, UINT64_MAX, &u, what);

	if (!rc)
		*v = zigzag_decode(u);
	return rc;
}

int store__objrd_count(struct objrd *r, uint64_t max, size_t min_bytes, uint64_t *n,
		       const char *what)
{
	const uint8_t *at = r->p;
	uint64_t v = 0;
	int rc = store__objrd_uv(r, max, &v, what);

	if (!rc && v > store__objrd_left(r) / min_bytes) {
		r->p = at;
		rc = store__objrd_bad(r, what);
	}
	if (!rc)
		*n = v;
	return rc;
}

int store__objrd_bytes(struct objrd *r, size_t n, const uint8_t **out, const char *what)
{
	if (store__objrd_left(r) < n)
		return truncated(r, what);
	*out = r->p;
	r->p += n;
	return 0;
}

int store__objrd_str(struct objrd *r, struct arena *a, size_t max, const char **out,
		     const char *what)
{
	const uint8_t *at = r->p, *s = NULL;
	uint64_t n = 0;
	int rc = store__objrd_uv(r, max, &n, what);

	if (!rc)
		rc = store__objrd_bytes(r, (size_t)n, &s, what);
	if (rc)
		return rc;
	if (!n || memchr(s, 0, (size_t)n)) {
		r->p = at; /* the message names where the string starts */
		return store__objrd_bad(r, what);
	}
	*out = arena_strndup(a, (const char *)s, (size_t)n);
	return *out ? 0 : arena_failed(a);
}

int store__objrd_end(struct objrd *r, int rc)
{
	if (!rc && r->p != r->end)
		return err_set(r->msg, ERR_CORRUPT, "%s: %zu bytes after the last tenant", r->object,
			       store__objrd_left(r));
	if (rc == ERR_TOO_LARGE) /* from the arena, whose cap the object's size set */
		return err_set(r->msg, ERR_CORRUPT, "%s: decodes larger than its cap", r->object);
	return rc;
}
