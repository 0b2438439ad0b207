/* buf.c - growable byte buffer with a cap. */
#include "base/buf.h"

#include "base/err.h"
#include "base/grow.h"
#include "base/json.h"
#include "base/varint.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
	buf_init_alloc(b, max, NULL);
}

void buf_init_alloc(struct buf *b, size_t max, const struct grow_alloc *heap)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	assert(max > 0);
	b->max = max < SIZE_MAX ? max : SIZE_MAX - 1; /* room for the NUL */
	b->heap = heap;
}

void buf_release(struct buf *b)
{
	grow_free(b->heap, b->data, b->alloc, 1);
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
}

#define FIRST_ALLOC 256

int buf_reserve(struct buf *b, size_t extra)
{
	size_t want, most = b->max + 1; /* buf_init keeps max below SIZE_MAX */

	if (extra > b->max || b->len > b->max - extra)
		return ERR_TOO_LARGE;
	want = b->len + extra + 1; /* and the NUL */
	if (want <= b->alloc)
		return 0;
	if (!b->alloc && want < FIRST_ALLOC)
		want = FIRST_ALLOC < most ? FIRST_ALLOC : most;
	return grow_array(&b->data, &b->alloc, 1, want, most, b->heap);
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	int rc = buf_reserve(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_putc(struct buf *b, char c)
{
	return buf_append(b, &c, 1);
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return ERR_INVALID;
	rc = buf_reserve(b, (size_t)n);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int buf_put_uvarint(struct buf *b, uint64_t v)
{
	uint8_t tmp[VARINT_MAX];

	return buf_append(b, tmp, varint_put(tmp, v));
}

int buf_put_svarint(struct buf *b, int64_t v)
{
	return buf_put_uvarint(b, zigzag_encode(v));
}

int buf_put_lstr(struct buf *b, const void *s, size_t n)
{
	size_t at = b->len;
	int rc = buf_put_uvarint(b, n);

	if (!rc)
		rc = buf_append(b, s, n);
	if (rc)
		b->len = at; /* as the other calls: nothing half-written */
	return rc;
}

int buf_put_be32(struct buf *b, uint32_t v)
{
	uint8_t t[4];

	be32_put(t, v);
	return buf_append(b, t, 4);
}

int buf_put_be64(struct buf *b, uint64_t v)
{
	uint8_t t[8];

	be64_put(t, v);
	return buf_append(b, t, 8);
}

int buf_put_json_str(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	int rc = buf_putc(b, '"');
	size_t i, start = 0;

	for (i = 0; i < n && !rc; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[7];
		const char *e = NULL;
		size_t elen = 2;

		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		default:
			/* Invalid UTF-8 (names stored before ingest refused it)
			 * becomes U+FFFD, so the answer stays a JSON text. */
			if (c >= 0x80) {
				size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;

				if (i + k <= n && json_utf8_valid(s + i, k)) {
					i += k - 1;
					continue;
				}
				e = "\xef\xbf\xbd";
				elen = 3;
			} else if (c < 0x20 || c == 0x7f) {
				esc[0] = '\\'; esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
				esc[4] = hex[c >> 4]; esc[5] = hex[c & 15]; esc[6] = 0;
				e = esc;
				elen = 6;
			}
		}
		if (!e)
			continue;
		rc = buf_append(b, s + start, i - start);
		if (!rc)
			rc = buf_append(b, e, elen);
		start = i + 1;
	}
	if (!rc)
		rc = buf_append(b, s + start, n - start);
	if (!rc)
		rc = buf_putc(b, '"');
	return rc;
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p = b->data;

	assert(!b->heap); /* the caller frees it with free() */
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	return p;
}

int buf_read_file(struct buf *b, const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n, room;
	int rc = 0;

	if (!f)
		return ERR_IO;
	/* Straight into the buffer: a 64 KiB chunk on the stack does not fit
	 * the small stacks of the web server's worker threads. */
	for (;;) {
		room = b->max - b->len < 65536 ? b->max - b->len : 65536;
		if (!room) {
			if (fgetc(f) != EOF)
				rc = ERR_TOO_LARGE;
			break;
		}
		if ((rc = buf_reserve(b, room)))
			break;
		n = fread(b->data + b->len, 1, room, f);
		b->len += n;
		b->data[b->len] = '\0';
		if (n < room)
			break;
	}
	if (!rc && ferror(f))
		rc = ERR_IO;
	fclose(f);
	return rc;
}
