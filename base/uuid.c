/* uuid.c - parsing, formatting and drawing UUIDs (base/uuid.h). */
#include "base/uuid.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "base/err.h"
#include "base/hex.h"

int uuid_parse(const char *s, size_t len, uint8_t out[UUID_BYTES])
{
	uint8_t v[UUID_BYTES];
	size_t at = 0;
	int dashed = len == UUID_TEXT;

	if (len != UUID_TEXT && len != 2 * UUID_BYTES)
		return ERR_INVALID;
	for (size_t b = 0; b < UUID_BYTES; b++) {
		int hi, lo;

		/* Dashes sit before bytes 4, 6, 8 and 10 (positions 8, 13, 18, 23). */
		if (dashed && (b == 4 || b == 6 || b == 8 || b == 10)) {
			if (s[at] != '-')
				return ERR_INVALID;
			at++;
		}
		hi = hex_digit((unsigned char)s[at]);
		lo = hex_digit((unsigned char)s[at + 1]);
		if (hi < 0 || lo < 0)
			return ERR_INVALID;
		v[b] = (uint8_t)(hi << 4 | lo);
		at += 2;
	}
	memcpy(out, v, UUID_BYTES);
	return 0;
}

void uuid_format(const uint8_t id[UUID_BYTES], char out[UUID_TEXT + 1])
{
	static const char digits[] = "0123456789abcdef";
	size_t at = 0;

	for (size_t b = 0; b < UUID_BYTES; b++) {
		if (b == 4 || b == 6 || b == 8 || b == 10)
			out[at++] = '-';
		out[at++] = digits[id[b] >> 4];
		out[at++] = digits[id[b] & 15];
	}
	out[at] = '\0';
}

int uuid_new_v4(uint8_t out[UUID_BYTES])
{
	uint8_t v[UUID_BYTES];
	size_t got = 0;

	while (got < UUID_BYTES) {
		ssize_t n = getrandom(v + got, UUID_BYTES - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return ERR_IO;
		got += (size_t)n;
	}
	v[6] = (uint8_t)((v[6] & 0x0f) | 0x40); /* version 4 */
	v[8] = (uint8_t)((v[8] & 0x3f) | 0x80); /* RFC 9562 variant */
	memcpy(out, v, UUID_BYTES);
	return 0;
}

int uuid_is_nil(const uint8_t id[UUID_BYTES])
{
	uint8_t acc = 0;

	for (size_t b = 0; b < UUID_BYTES; b++)
		acc |= id[b];
	return acc == 0;
}
