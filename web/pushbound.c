/*
 * pushbound.c - what a request's profiles may inflate to, read before they
 * are decoded: a gzip stream's declared size, and the sum of a binary
 * push.v1 PushRequest's profiles read off its wire bytes.  The ingest
 * unpacks the request with protobuf-c after this; an unpack here too copied
 * every profile once more (bench/RESULTS.md, "A push's admission reads the
 * wire bytes").  tests/web/test_pushbound.c and tests/fuzz/fuzz_pushbound.c
 * hold it to protobuf-c's unpack of the same bytes.
 */
#include <stdint.h>

#include "base/varint.h"
#include "web_int.h"

/*
 * The uncompressed size a gzip stream declares in its trailer (ISIZE,
 * RFC 1952 2.3.1: modulo 2^32), or 0 when `p` is not gzip.  Untrusted: it
 * only sizes the reservation, and the inflate is capped at it.
 */
size_t web__gzip_isize(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;

	if (n < 18 || u[0] != 0x1f || u[1] != 0x8b)
		return 0;
	return (size_t)u[n - 4] | (size_t)u[n - 3] << 8 | (size_t)u[n - 2] << 16 |
	       (size_t)u[n - 1] << 24;
}

/* An inflate bound from a declared size: at least `floor`, at most `max`. */
size_t web__inflate_bound(size_t isize, size_t floor, size_t max)
{
	if (max >= ((size_t)1 << 32))
		return max; /* ISIZE wraps at 4 GiB: it says nothing then */
	if (isize < floor)
		isize = floor;
	return isize < max ? isize : max;
}

size_t web__profile_bound(const char *p, size_t n, size_t max)
{
	size_t isize = web__gzip_isize(p, n);

	return isize ? web__inflate_bound(isize, n, max) : n;
}

/*
 * The next field of the protobuf message bytes [*p, end): its number and
 * wire type, and for a length-delimited field its bytes in *body and *len;
 * a varint, fixed64 or fixed32 is skipped.  1 when there is one, 0 at the
 * end, -1 when the bytes are not a message (a truncated field, a group,
 * wire type 6 or 7, a length past the end).
 */
static int wire_next(const uint8_t **p, const uint8_t *end, uint64_t *field, unsigned *wt,
		     const uint8_t **body, size_t *len)
{
	uint64_t tag, v;
	size_t n;

	if (*p == end)
		return 0;
	/* Field number 0 is no field of any schema, but protobuf-c skips it
	 * as an unknown one; so does this. */
	if (!(n = varint_get(*p, end, &tag)))
		return -1;
	*p += n;
	*field = tag >> 3;
	*wt = (unsigned)(tag & 7);
	switch (*wt) {
	case 0:
		/* Skipped as protobuf-c skips it: up to 10 bytes, what they
		 * hold past 64 bits ignored. */
		for (n = 0; n < VARINT_MAX && *p + n < end && ((*p)[n] & 0x80); n++)
			;
		n = n < VARINT_MAX && *p + n < end ? n + 1 : 0;
		break;
	case 1:
		n = end - *p >= 8 ? 8 : 0;
		break;
	case 2:
		if (!(n = varint_get(*p, end, &v)) || v > (uint64_t)(end - *p - n))
			return -1;
		*body = *p + n;
		*len = (size_t)v;
		n += (size_t)v;
		break;
	case 5:
		n = end - *p >= 4 ? 4 : 0;
		break;
	default:
		return -1;
	}
	if (!n)
		return -1;
	*p += n;
	return 1;
}

/*
 * The next field `want` of the message bytes [*p, end) whose fields 1 to
 * `known` are all length-delimited (its body in *body and *len): 1 with
 * it, 0 at the end, -1 when the bytes are not such a message.
 */
static int wire_field(const uint8_t **p, const uint8_t *end, uint64_t want, uint64_t known,
		      const uint8_t **body, size_t *len)
{
	uint64_t f;
	unsigned wt;
	int rc;

	while ((rc = wire_next(p, end, &f, &wt, body, len)) > 0) {
		if (f == 0 || f > known)
			continue;
		if (wt != 2)
			return -1;
		if (f == want)
			return 1;
	}
	return rc;
}

/*
 * PushRequest.series (1); RawProfileSeries.samples (2) next to its labels
 * (1); RawSample.raw_profile (1) next to its ID (2).  Every raw_profile
 * field is counted, also one a later one of its sample replaces, so the sum
 * is never below what the unpack of the same bytes decodes.
 */
int web__push_bound(const uint8_t *body, size_t body_len, size_t max, size_t *sum)
{
	const uint8_t *p = body, *end = body + body_len;
	const uint8_t *series, *sample, *prof;
	size_t series_len, sample_len, prof_len;
	int rc;

	*sum = 0;
	while ((rc = wire_field(&p, end, 1, 1, &series, &series_len)) > 0) {
		const uint8_t *q = series, *q_end = series + series_len;

		while ((rc = wire_field(&q, q_end, 2, 2, &sample, &sample_len)) > 0) {
			const uint8_t *r = sample, *r_end = sample + sample_len;

			while ((rc = wire_field(&r, r_end, 1, 2, &prof, &prof_len)) > 0) {
				size_t b = web__profile_bound((const char *)prof, prof_len, max);

				*sum = b > SIZE_MAX - *sum ? SIZE_MAX : *sum + b;
			}
			if (rc < 0)
				return 0;
		}
		if (rc < 0)
			return 0;
	}
	return rc == 0;
}
