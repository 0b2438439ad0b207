/* hash.c - a fast 64-bit byte hash (multiply-fold over 8-byte words). */
#include "base/hash.h"

#include <string.h>

static inline uint64_t fold(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t rd64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static const uint64_t K0 = 0xa0761d6478bd642fULL;
static const uint64_t K1 = 0xe7037ed1a0b428dbULL;
static const uint64_t K2 = 0x8ebc6af09c88c6e3ULL;

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = seed ^ K0 ^ (uint64_t)len * K2;
	size_t i = 0;
	uint64_t a = 0, b = 0;

	for (; i + 16 <= len; i += 16)
		h = fold(rd64(p + i) ^ K1, rd64(p + i + 8) ^ h);
	if (len - i >= 8) {
		a = rd64(p + i);
		i += 8;
	}
	if (i < len) {
		unsigned char t[8] = { 0 };
		memcpy(t, p + i, len - i);
		b = rd64(t);
	}
	h = fold(a ^ K1, b ^ h);
	return fold(h ^ K2, (uint64_t)len ^ K0);
}
