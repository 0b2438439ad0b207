/*
 * compress.h - gzip and zstd with hard output caps.
 *
 * Decompressors write into a caller's struct buf and stop with ERR_TOO_LARGE
 * as soon as the output would pass `max_out`, before allocating it, so a
 * gzip bomb costs at most `max_out` bytes of memory.  Malformed input gives
 * ERR_INVALID with a message.
 */
#ifndef UNHEX_BASE_COMPRESS_H
#define UNHEX_BASE_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct err_msg;

/* True when the bytes start with the gzip magic 1f 8b. */
static inline int is_gzip(const void *p, size_t n)
{
	const unsigned char *c = p;
	return n >= 2 && c[0] == 0x1f && c[1] == 0x8b;
}

/* Inflates gzip (concatenated members allowed) or zlib data, appending to out. */
int gunzip_capped(const void *in, size_t in_len, size_t max_out, struct buf *out,
		  struct err_msg *msg);

/* Appends a gzip stream of `in` to out (level 1..9; 0 picks 6). */
int gzip_compress(const void *in, size_t in_len, int level, struct buf *out);

/* Appends one zstd frame of `in` to out. */
int zstd_compress_buf(const void *in, size_t in_len, int level, struct buf *out);

/* Appends the content of one zstd frame to out, failing past max_out bytes. */
int zstd_decompress_capped(const void *in, size_t in_len, size_t max_out,
			   struct buf *out, struct err_msg *msg);

#endif
