/*
 * json.c - base64 for the JSON decoders of push.c and otlp_json.c (the
 * JSON reader itself is base/json.c).
 */
#include "ingest/ingest_int.h"

#include "base/arena.h"
#include "base/err.h"

#include <stdint.h>
#include <string.h>

static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int base64_decode(struct arena *a, const char *s, size_t len, uint8_t **out, size_t *out_len)
{
	uint8_t *buf, *w;
	uint32_t acc = 0;
	int bits = 0;
	size_t pad = 0;

	while (len && s[len - 1] == '=' && pad < 2) {
		len--;
		pad++;
	}
	if (len % 4 == 1 || (pad && (len + pad) % 4 != 0))
		return ERR_INVALID;
	buf = arena_alloc(a, len / 4 * 3 + 3);
	if (!buf)
		return arena_failed(a);
	w = buf;
	for (size_t i = 0; i < len; i++) {
		int v = b64_val((unsigned char)s[i]);

		if (v < 0)
			return ERR_INVALID;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*w++ = (uint8_t)(acc >> bits);
		}
	}
	*out = buf;
	*out_len = (size_t)(w - buf);
	return 0;
}
