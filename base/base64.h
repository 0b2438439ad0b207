/*
 * base64.h - RFC 4648 base64: the standard alphabet written padded; read
 * with or without padding, and with BASE64_URL also the URL-safe alphabet
 * ('-' and '_'), as proto3 JSON requires of bytes fields.
 */
#ifndef UNHEX_BASE_BASE64_H
#define UNHEX_BASE_BASE64_H

#include <stddef.h>
#include <stdint.h>

struct buf;

enum {
	BASE64_URL = 1,    /* also accept the URL-safe alphabet */
	BASE64_CANON = 2,  /* refuse non-zero bits after the last byte (§3.5): one
			    * encoding per input, as credentials want */
};

/* Bytes base64_decode may write for `len` input characters. */
static inline size_t base64_decoded_max(size_t len)
{
	return len / 4 * 3 + 3;
}

/*
 * Decodes s[0..len) into out (at most `max` bytes), the count in *out_len.
 * ERR_INVALID for a character outside the alphabet, bad padding or
 * length, or (BASE64_CANON) stray bits; ERR_TOO_LARGE past max.
 */
int base64_decode(const char *s, size_t len, unsigned flags, uint8_t *out, size_t max,
		  size_t *out_len);

/* Appends p[0..n) in standard padded base64; 0 or buf's error. */
int base64_encode(struct buf *b, const uint8_t *p, size_t n);

#endif
