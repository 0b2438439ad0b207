/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of block files (storage_int.h, section 9): the SSE4.2 crc32
 * instruction where the CPU has it, else a table-driven loop, both giving
 * the same value (RFC 3720, appendix B.4 has the test vectors).
 */
#include "storage_int.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? c >> 1 ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = table[t - 1][i] >> 8 ^ table[0][table[t - 1][i] & 0xff];
}

/* Eight bytes per step through eight tables ("slicing by 8"). */
static uint32_t crc_soft(uint32_t c, const uint8_t *p, size_t n)
{
	while (n && ((uintptr_t)p & 7)) {
		c = c >> 8 ^ table[0][(c ^ *p++) & 0xff];
		n--;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= c; /* little-endian: the low bytes come first */
		c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
		    table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
		    table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = c >> 8 ^ table[0][(c ^ *p++) & 0xff];
	return c;
}

#if defined(__x86_64__) && defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HAVE_HW 1
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t c64;

	while (n && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi(c, *p++);
		n--;
	}
	c64 = c;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#else
#define HAVE_HW 0
#endif

uint32_t store__crc32c(uint32_t crc, const void *p, size_t n)
{
	uint32_t c = ~crc;

#if HAVE_HW
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_hw(c, p, n);
#endif
	pthread_once(&table_once, table_init);
	return ~crc_soft(c, p, n);
}

uint32_t store__crc32c_soft(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&table_once, table_init);
	return ~crc_soft(~crc, p, n);
}
