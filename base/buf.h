/*
 * buf.h - a growable byte buffer with a maximum size.
 *
 * Growth past `max` fails with ERR_TOO_LARGE and leaves the contents as they
 * were (curl's dynbuf is the model).  The cap is mandatory: every buffer is
 * initialized with the largest size what it holds may reach, named after
 * that (a response body, a chunk, a key); `max` 0 is a programmer error
 * (asserted; in a build without asserts every non-empty append then
 * fails).  The data is always NUL-terminated one byte past `len`, so text
 * can be read as a C string.
 */
#ifndef UNHEX_BASE_BUF_H
#define UNHEX_BASE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct grow_alloc;

struct buf {
	char *data;  /* owned; NULL until the first append */
	size_t len;
	size_t alloc;
	size_t max;  /* maximum len; > 0 */
	const struct grow_alloc *heap; /* borrowed; NULL: the C heap */
};

/* Initializes an empty buffer of at most `max` (> 0) bytes; allocates nothing. */
void buf_init(struct buf *b, size_t max);

/*
 * Like buf_init, its memory taken from and given back through `heap`
 * (base/grow.h; borrowed, must outlive the buffer; NULL is the C heap):
 * e.g. a block pool, for buffers that request after request fills and
 * frees.  Such a buffer cannot be detached.
 */
void buf_init_alloc(struct buf *b, size_t max, const struct grow_alloc *heap);
void buf_release(struct buf *b);

/* Empties the buffer, keeping its allocation. */
static inline void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

/* Makes room for `extra` more bytes; returns 0, ERR_NOMEM or ERR_TOO_LARGE. */
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *p, size_t n);
int buf_putc(struct buf *b, char c);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Appends a uvarint / zigzag varint / fixed-width big-endian integer. */
int buf_put_uvarint(struct buf *b, uint64_t v);
int buf_put_svarint(struct buf *b, int64_t v);
int buf_put_be32(struct buf *b, uint32_t v);
int buf_put_be64(struct buf *b, uint64_t v);
/* Appends n as a uvarint, then the n bytes at s (the codecs' string form). */
int buf_put_lstr(struct buf *b, const void *s, size_t n);

/*
 * Appends `s` as a JSON string literal, quotes included: `"` `\\` and
 * \n \r \t \b \f as their short escapes, the other control bytes and
 * DEL (0x7f) as \u00XX; each byte that does not start a valid UTF-8 sequence
 * is written as U+FFFD, so the result is always valid JSON.  The one JSON
 * string writer: the HTTP answers and pbjson's Connect JSON both use it.
 */
int buf_put_json_str(struct buf *b, const char *s, size_t n);

/*
 * Appends the whole file at `path`.  Returns 0, ERR_IO (cannot open or
 * read; errno says why) or ERR_TOO_LARGE (past the buffer's cap).
 */
int buf_read_file(struct buf *b, const char *path);

/* Hands the data to the caller (who frees it) and resets the buffer. */
char *buf_detach(struct buf *b, size_t *len);

#endif
