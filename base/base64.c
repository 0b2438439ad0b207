/* base64.c - see base64.h. */
#include "base/base64.h"

#include "base/buf.h"
#include "base/err.h"

static const char std_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int value_of(unsigned char c, unsigned flags)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || (c == '-' && (flags & BASE64_URL)))
		return 62;
	if (c == '/' || (c == '_' && (flags & BASE64_URL)))
		return 63;
	return -1;
}

int base64_decode(const char *s, size_t len, unsigned flags, uint8_t *out, size_t max,
		  size_t *out_len)
{
	uint32_t acc = 0;
	size_t pad = 0, w = 0;
	int bits = 0;

	while (len && s[len - 1] == '=' && pad < 2) {
		len--;
		pad++;
	}
	if (len % 4 == 1 || (pad && (len + pad) % 4))
		return ERR_INVALID;
	for (size_t i = 0; i < len; i++) {
		int v = value_of((unsigned char)s[i], flags);

		if (v < 0)
			return ERR_INVALID;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (w == max)
				return ERR_TOO_LARGE;
			out[w++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if ((flags & BASE64_CANON) && acc)
		return ERR_INVALID;
	*out_len = w;
	return 0;
}

int base64_encode(struct buf *b, const uint8_t *p, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		char q[4] = { std_alphabet[v >> 18 & 63], std_alphabet[v >> 12 & 63],
			      i + 1 < n ? std_alphabet[v >> 6 & 63] : '=',
			      i + 2 < n ? std_alphabet[v & 63] : '=' };

		rc = buf_append(b, q, 4);
	}
	return rc;
}
