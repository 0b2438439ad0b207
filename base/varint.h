/*
 * varint.h - LEB128 varints, zigzag, and fixed-width big-endian integers.
 *
 * Decoders take (ptr, end) and never read past `end`; they return the number
 * of bytes consumed, or 0 when the input is truncated or overlong, so bytes
 * from disk or a client can be decoded without trusting them.
 */
#ifndef UNHEX_BASE_VARINT_H
#define UNHEX_BASE_VARINT_H

#include <stddef.h>
#include <stdint.h>

enum { VARINT_MAX = 10 };

static inline size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline size_t varint_get(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	size_t n = 0;
	unsigned shift = 0;

	while (p + n < end && n < VARINT_MAX) {
		uint8_t c = p[n++];
		if (shift == 63 && c > 1)
			return 0;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return n;
		}
		shift += 7;
	}
	return 0;
}

static inline uint64_t zigzag_encode(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t zigzag_decode(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static inline uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void be64_put(uint8_t *p, uint64_t v)
{
	be32_put(p, (uint32_t)(v >> 32));
	be32_put(p + 4, (uint32_t)v);
}

static inline uint64_t be64_get(const uint8_t *p)
{
	return (uint64_t)be32_get(p) << 32 | be32_get(p + 4);
}

#endif
