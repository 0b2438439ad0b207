/*
 * hash.h - 64-bit non-cryptographic hashing for in-memory tables and
 * content-addressed deduplication.
 *
 * hash_bytes() reads 8 bytes at a time and mixes with 64x64->128 multiplies;
 * its output is stable across runs and machines of the same endianness, so it
 * may be persisted (series fingerprints), but collisions must always be
 * resolved by comparing content.
 */
#ifndef UNHEX_BASE_HASH_H
#define UNHEX_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash_bytes(const void *p, size_t len, uint64_t seed);

/* Mixes one 64-bit value into a well-distributed 64-bit hash. */
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Combines a running hash with another value (order-dependent). */
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
	return hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

#endif
