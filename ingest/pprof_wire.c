/*
 * pprof_wire.c - a one-pass decoder of pprof protobuf bytes into the flat
 * struct pprof_msg of ingest_int.h.
 *
 * protobuf-c materializes every sub-message as its own allocation plus a
 * pointer (one per sample, label, location and line), which made unpacking
 * the largest single cost of ingest.  This decoder walks the wire format
 * (https://protobuf.dev/programming-guides/encoding/) directly:
 *
 *   pass 1  skims the top-level fields only (tag, length, skip) to count the
 *           repeated messages and comments, so their arrays are allocated
 *           once at their exact size;
 *   pass 2  decodes every field.  The repeated scalars and messages nested
 *           in samples and locations (location_id, value, label, line) are
 *           appended to four per-profile pools that grow by doubling; each
 *           sample or location records its offset, and the pointers are set
 *           once the pools stop moving.
 *
 * Wire rules, chosen to accept exactly what protobuf-c accepts for valid
 * pprofs: scalars are last-one-wins; a repeated scalar may come packed
 * (wire type 2) or unpacked, in several runs; a non-repeated message
 * (period_type) seen twice is merged; unknown fields of wire types 0, 1, 2
 * and 5 are skipped; bools take any of those wire types (get_bool).
 * Groups (3, 4), wire types 6 and 7, field number 0, any other known field
 * with the wrong wire type, a varint longer than 10 bytes and a length past
 * the end of its enclosing message are errors.
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/err.h"

#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* Top-level field numbers of message Profile. */
enum {
	F_SAMPLE_TYPE = 1, F_SAMPLE = 2, F_MAPPING = 3, F_LOCATION = 4, F_FUNCTION = 5,
	F_STRING_TABLE = 6, F_DROP_FRAMES = 7, F_KEEP_FRAMES = 8, F_TIME_NANOS = 9,
	F_DURATION_NANOS = 10, F_PERIOD_TYPE = 11, F_PERIOD = 12, F_COMMENT = 13,
	F_DEFAULT_SAMPLE_TYPE = 14, F_DOC_URL = 15, F_COUNT
};

/* A growable array in the arena; old copies stay in the arena until it is released. */
struct pool {
	void *data;
	size_t n, cap, elem;
};

struct dec {
	struct arena *a;
	struct err_msg *msg;
	const uint8_t *start;      /* first byte of the profile, for offsets in messages */
	size_t len;
	const uint8_t *readable;   /* start + len: get_varint() may read up to it */
	const char *what;          /* the message being decoded, for messages */
	size_t idx;
	struct pool ids, vals, labels, lines;
	size_t sample_bytes;       /* sum of the sample messages' lengths (pool sizing) */
};

static int fail(struct dec *d, const uint8_t *at, const char *problem)
{
	size_t off = (size_t)(at - d->start);

	if (d->what)
		return err_set(d->msg, ERR_INVALID,
			       "not a valid pprof protobuf (%zu bytes): %s in %s %zu at byte %zu",
			       d->len, problem, d->what, d->idx, off);
	return err_set(d->msg, ERR_INVALID, "not a valid pprof protobuf (%zu bytes): %s at byte %zu",
		       d->len, problem, off);
}

static int nomem(struct dec *d)
{
	int rc = arena_failed(d->a) ? arena_failed(d->a) : ERR_NOMEM;

	if (rc == ERR_TOO_LARGE)
		return err_set(d->msg, rc, "decoding the profile needs more than %zu bytes of memory",
			       d->a->cap);
	return err_set(d->msg, rc, "out of memory decoding the profile");
}

/* ---- primitives --------------------------------------------------------- */

/* The end of a varint read past its message's end: *pp = p and *out = v
 * when it ends by `end`, else -1 (truncated). */
static inline int varint_end(const uint8_t **pp, const uint8_t *p, const uint8_t *end, uint64_t v,
			     uint64_t *out)
{
	if (p > end)
		return -1;
	*out = v;
	*pp = p;
	return 0;
}

/*
 * Reads a varint at *pp (before end); advances *pp.  -1 when truncated or
 * longer than 10 bytes.  Bits past 64 are dropped, as protobuf-c does.
 * The bytes up to `readable` (>= end: the end of the whole profile) may be
 * read; with ten of them left, the bytes are read without a bound check
 * each and the varint checked against `end` once.  Most of a pprof's bytes
 * are addresses, varints of 5 to 7 bytes that end their location message,
 * so `end` alone would rarely allow it.
 */
static inline int get_varint(const uint8_t **pp, const uint8_t *end, const uint8_t *readable,
			     uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;

	if (p < end && *p < 0x80) {
		*out = *p;
		*pp = p + 1;
		return 0;
	}
	if (readable - p >= 10 && p < end) {
		v = p[0] & 0x7f;
		for (unsigned i = 1; i < 10; i++) {
			uint64_t b = p[i];

			v |= (b & 0x7f) << (7 * i); /* the 10th byte: its low bit only */
			if (b < 0x80)
				return varint_end(pp, p + i + 1, end, v, out);
		}
		return -1;
	}
	for (unsigned shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (p >= end)
			return -1;
		b = *p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			*pp = p;
			return 0;
		}
	}
	return -1;
}

/* Reads a tag; 0 on success with the field number and wire type. */
static inline int get_tag(struct dec *d, const uint8_t **pp, const uint8_t *end, uint32_t *field,
			  unsigned *wt)
{
	const uint8_t *at = *pp;
	uint64_t t;

	if (get_varint(pp, end, d->readable, &t))
		return fail(d, at, "truncated or overlong tag");
	if (t >> 3 == 0 || t >> 3 > 0x1fffffff)
		return fail(d, at, "bad field number");
	*field = (uint32_t)(t >> 3);
	*wt = (unsigned)(t & 7);
	return 0;
}

static inline int get_u64(struct dec *d, const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *at = *pp;

	if (get_varint(pp, end, d->readable, out))
		return fail(d, at, "truncated or overlong varint");
	return 0;
}

/* Reads a length prefix and checks that many bytes remain; *body points at them. */
static inline int get_len(struct dec *d, const uint8_t **pp, const uint8_t *end,
			  const uint8_t **body, const uint8_t **body_end)
{
	const uint8_t *at = *pp;
	uint64_t n;

	if (get_varint(pp, end, d->readable, &n))
		return fail(d, at, "truncated or overlong length");
	if (n > (uint64_t)(end - *pp))
		return fail(d, at, "length past the end of the enclosing message");
	*body = *pp;
	*body_end = *pp + n;
	*pp += n;
	return 0;
}

/* Skips the value of an unknown field. */
static int skip(struct dec *d, const uint8_t **pp, const uint8_t *end, unsigned wt)
{
	const uint8_t *body = NULL, *body_end = NULL;
	uint64_t v = 0;

	switch (wt) {
	case WT_VARINT:
		return get_u64(d, pp, end, &v);
	case WT_I64:
		if (end - *pp < 8)
			return fail(d, *pp, "truncated fixed64");
		*pp += 8;
		return 0;
	case WT_LEN:
		return get_len(d, pp, end, &body, &body_end);
	case WT_I32:
		if (end - *pp < 4)
			return fail(d, *pp, "truncated fixed32");
		*pp += 4;
		return 0;
	default:
		return fail(d, *pp, "unsupported wire type (group or reserved)");
	}
}

/*
 * A bool field.  protobuf-c reads bools of any wire type as "some byte of
 * the field's value (length prefix included) has a low bit set"; doing the
 * same keeps both decoders in agreement on every input.
 */
static int get_bool(struct dec *d, const uint8_t **pp, const uint8_t *end, unsigned wt, int *out)
{
	const uint8_t *at = *pp;
	int rc = skip(d, pp, end, wt);

	if (rc)
		return rc;
	*out = 0;
	for (; at < *pp; at++)
		if (*at & 0x7f) {
			*out = 1;
			break;
		}
	return 0;
}

static int want(struct dec *d, const uint8_t *at, unsigned wt, unsigned expect)
{
	if (wt == expect)
		return 0;
	return fail(d, at, "known field with the wrong wire type");
}

/* The body of a known field of wire type 2 whose tag starts at `at`. */
static inline int get_msg(struct dec *d, const uint8_t *at, unsigned wt, const uint8_t **pp,
			  const uint8_t *end, const uint8_t **body, const uint8_t **body_end)
{
	int rc = want(d, at, wt, WT_LEN);

	return rc ? rc : get_len(d, pp, end, body, body_end);
}

/* ---- pools -------------------------------------------------------------- */

static void *pool_reserve(struct dec *d, struct pool *pl, size_t more, size_t hint)
{
	size_t cap;
	void *nd;

	/* An empty packed run still gets a real pointer (never NULL + 0). */
	if (more == 0)
		more = 1;
	if (pl->cap - pl->n >= more)
		return (char *)pl->data + pl->n * pl->elem;
	cap = pl->cap ? 2 * pl->cap : (hint > 16 ? hint : 16);
	while (cap - pl->n < more) {
		if (cap > SIZE_MAX / 4 / pl->elem) {
			nomem(d);
			return NULL;
		}
		cap *= 2;
	}
	if (cap > SIZE_MAX / pl->elem || !(nd = arena_alloc(d->a, cap * pl->elem))) {
		nomem(d);
		return NULL;
	}
	if (pl->n)
		memcpy(nd, pl->data, pl->n * pl->elem);
	pl->data = nd;
	pl->cap = cap;
	return (char *)nd + pl->n * pl->elem;
}

/* The code of the failure pool_reserve() has already described. */
static int pool_rc(const struct dec *d)
{
	return arena_failed(d->a) ? arena_failed(d->a) : ERR_NOMEM;
}

/*
 * Appends the varints of one repeated scalar field (packed or not) to `pl`
 * (elements of 8 bytes).
 */
static int rep_varints(struct dec *d, const uint8_t **pp, const uint8_t *end, unsigned wt,
		       struct pool *pl, size_t hint)
{
	const uint8_t *body = NULL, *body_end = NULL, *at = *pp;
	uint64_t *out;
	size_t k = 0;
	int rc;

	if (wt == WT_VARINT) {
		out = pool_reserve(d, pl, 1, hint);
		if (!out)
			return pool_rc(d);
		rc = get_u64(d, pp, end, out);
		if (!rc)
			pl->n++;
		return rc;
	}
	rc = get_msg(d, at, wt, pp, end, &body, &body_end);
	if (rc)
		return rc;
	/* At most one element per byte. */
	out = pool_reserve(d, pl, (size_t)(body_end - body), hint);
	if (!out)
		return pool_rc(d);
	while (body < body_end) {
		if (*body < 0x80) {
			out[k++] = *body++;
			continue;
		}
		/* Two bytes: location ids up to 16383. */
		if (body_end - body >= 2 && body[1] < 0x80) {
			out[k++] = (uint64_t)(body[0] & 0x7f) | (uint64_t)body[1] << 7;
			body += 2;
			continue;
		}
		rc = get_u64(d, &body, body_end, &out[k]);
		if (rc)
			return rc;
		k++;
	}
	pl->n += k;
	return 0;
}

/* ---- messages ----------------------------------------------------------- */

/*
 * Decodes a message made only of scalar fields, the way the five small pprof
 * messages are: fields 1..n_num are varints (the last occurrence wins, as in
 * protobuf) stored in num[field - 1]; the n_flag fields after them are bools
 * stored in flag[]; any other field is skipped.
 */
static int dec_scalars(struct dec *d, const uint8_t *p, const uint8_t *end, uint64_t *num,
		       uint32_t n_num, int *flag, uint32_t n_flag)
{
	while (p < end) {
		const uint8_t *at = p;
		uint32_t f = 0;
		unsigned wt = 0;
		int rc = get_tag(d, &p, end, &f, &wt);

		if (rc)
			return rc;
		if (f > n_num + n_flag)
			rc = skip(d, &p, end, wt);
		else if (f > n_num)
			rc = get_bool(d, &p, end, wt, &flag[f - n_num - 1]);
		else if (!(rc = want(d, at, wt, WT_VARINT)))
			rc = get_u64(d, &p, end, &num[f - 1]);
		if (rc)
			return rc;
	}
	return 0;
}

static int dec_value_type(struct dec *d, const uint8_t *p, const uint8_t *end,
			  struct pprof_value_type *o)
{
	uint64_t v[2] = { (uint64_t)o->type, (uint64_t)o->unit };
	int rc = dec_scalars(d, p, end, v, 2, NULL, 0);

	o->type = (int64_t)v[0];
	o->unit = (int64_t)v[1];
	return rc;
}

/*
 * Decodes a message of n_num scalar fields (dec_scalars, into num[]) that
 * goes to `pl`: returns its slot, appended, for the caller to fill whole,
 * or NULL with *rc set.
 */
static inline void *dec_pooled(struct dec *d, struct pool *pl, size_t hint, const uint8_t *p,
			       const uint8_t *end, uint64_t *num, uint32_t n_num, int *rc)
{
	void *o = pool_reserve(d, pl, 1, hint);

	if (!o) {
		*rc = pool_rc(d);
		return NULL;
	}
	*rc = dec_scalars(d, p, end, num, n_num, NULL, 0);
	if (*rc)
		return NULL;
	pl->n++;
	return o;
}

static int dec_label(struct dec *d, const uint8_t *p, const uint8_t *end)
{
	uint64_t v[4] = { 0 };
	int rc;
	struct pprof_label *o = dec_pooled(d, &d->labels, 16, p, end, v, 4, &rc);

	if (!o)
		return rc;
	*o = (struct pprof_label){ .key = (int64_t)v[0], .str = (int64_t)v[1],
				   .num = (int64_t)v[2], .num_unit = (int64_t)v[3] };
	return 0;
}

/* Decodes one Sample; its pool offsets go to off[0..2]. */
static int dec_sample(struct dec *d, const uint8_t *p, const uint8_t *end,
		      struct pprof_sample *o, size_t off[3])
{
	size_t ids_hint = d->sample_bytes / 2 + 16;

	off[0] = d->ids.n;
	off[1] = d->vals.n;
	off[2] = d->labels.n;
	while (p < end) {
		const uint8_t *at = p, *body = NULL, *body_end = NULL;
		uint32_t f = 0;
		unsigned wt = 0;
		int rc = get_tag(d, &p, end, &f, &wt);

		if (rc)
			return rc;
		switch (f) {
		case 1:
			rc = rep_varints(d, &p, end, wt, &d->ids, ids_hint);
			break;
		case 2:
			rc = rep_varints(d, &p, end, wt, &d->vals, 64);
			break;
		case 3:
			rc = get_msg(d, at, wt, &p, end, &body, &body_end);
			if (!rc)
				rc = dec_label(d, body, body_end);
			break;
		default:
			rc = skip(d, &p, end, wt);
		}
		if (rc)
			return rc;
	}
	o->n_location_id = d->ids.n - off[0];
	o->n_value = d->vals.n - off[1];
	o->n_label = d->labels.n - off[2];
	return 0;
}

static int dec_mapping(struct dec *d, const uint8_t *p, const uint8_t *end,
		       struct pprof_mapping *o)
{
	uint64_t v[6] = { o->id, o->memory_start, o->memory_limit, o->file_offset,
			  (uint64_t)o->filename, (uint64_t)o->build_id };
	int flag[4] = { o->has_functions, o->has_filenames, o->has_line_numbers,
			o->has_inline_frames };
	int rc = dec_scalars(d, p, end, v, 6, flag, 4);

	o->id = v[0];
	o->memory_start = v[1];
	o->memory_limit = v[2];
	o->file_offset = v[3];
	o->filename = (int64_t)v[4];
	o->build_id = (int64_t)v[5];
	o->has_functions = flag[0];
	o->has_filenames = flag[1];
	o->has_line_numbers = flag[2];
	o->has_inline_frames = flag[3];
	return rc;
}

static int dec_line(struct dec *d, const uint8_t *p, const uint8_t *end, size_t hint)
{
	uint64_t v[3] = { 0 };
	int rc;
	struct pprof_line *o = dec_pooled(d, &d->lines, hint, p, end, v, 3, &rc);

	if (!o)
		return rc;
	*o = (struct pprof_line){ .function_id = v[0], .line = (int64_t)v[1],
				  .column = (int64_t)v[2] };
	return 0;
}

/*
 * The location of a raw-address profile: id, mapping_id and address as
 * varints with one-byte tags, nothing else (no lines, not folded).  Decodes
 * it into *o and returns 1; 0 for any other field or a bad varint, which
 * dec_location()'s general loop then decodes or reports from the start.
 * Repeated fields: the last one wins, as there.
 */
static inline int location_fast(const struct dec *d, const uint8_t *p, const uint8_t *end,
				struct pprof_location *o)
{
	uint64_t v[3] = { 0, 0, 0 };

	while (p < end) {
		unsigned tag = *p++;

		if (tag != 1 << 3 && tag != 2 << 3 && tag != 3 << 3)
			return 0;
		if (get_varint(&p, end, d->readable, &v[(tag >> 3) - 1]))
			return 0;
	}
	*o = (struct pprof_location){ .id = v[0], .mapping_id = v[1], .address = v[2] };
	return 1;
}

static int dec_location(struct dec *d, const uint8_t *p, const uint8_t *end,
			struct pprof_location *o, size_t *off, size_t hint)
{
	*off = d->lines.n;
	if (location_fast(d, p, end, o))
		return 0;
	memset(o, 0, sizeof(*o));
	while (p < end) {
		const uint8_t *at = p, *body = NULL, *body_end = NULL;
		uint32_t f = 0;
		unsigned wt = 0;
		uint64_t v = 0;
		int rc = get_tag(d, &p, end, &f, &wt);

		if (rc)
			return rc;
		if (f == 4) {
			rc = get_msg(d, at, wt, &p, end, &body, &body_end);
			if (!rc)
				rc = dec_line(d, body, body_end, hint);
		} else if (f == 5) {
			rc = get_bool(d, &p, end, wt, &o->is_folded);
		} else if (f > 5) {
			rc = skip(d, &p, end, wt);
		} else {
			rc = want(d, at, wt, WT_VARINT);
			if (!rc)
				rc = get_u64(d, &p, end, &v);
			if (!rc) {
				if (f == 1)
					o->id = v;
				else if (f == 2)
					o->mapping_id = v;
				else
					o->address = v;
			}
		}
		if (rc)
			return rc;
	}
	o->n_line = d->lines.n - *off;
	return 0;
}

static int dec_function(struct dec *d, const uint8_t *p, const uint8_t *end,
			struct pprof_function *o)
{
	uint64_t v[5] = { o->id, (uint64_t)o->name, (uint64_t)o->system_name,
			  (uint64_t)o->filename, (uint64_t)o->start_line };
	int rc = dec_scalars(d, p, end, v, 5, NULL, 0);

	o->id = v[0];
	o->name = (int64_t)v[1];
	o->system_name = (int64_t)v[2];
	o->filename = (int64_t)v[3];
	o->start_line = (int64_t)v[4];
	return rc;
}

/* ---- the profile -------------------------------------------------------- */

/*
 * Pass 1: counts the top-level repeated fields that pass 2 will accept
 * (message fields with wire type 2, comments packed or not) and checks the
 * top-level framing.  Packed comments count their terminating bytes.
 */
static int count_fields(struct dec *d, const uint8_t *p, const uint8_t *end, size_t count[F_COUNT])
{
	while (p < end) {
		const uint8_t *body = NULL, *body_end = NULL;
		uint32_t f = 0;
		unsigned wt = 0;
		int rc = get_tag(d, &p, end, &f, &wt);

		if (rc)
			return rc;
		if (wt != WT_LEN) {
			if (f == F_COMMENT && wt == WT_VARINT)
				count[f]++;
			rc = skip(d, &p, end, wt);
			if (rc)
				return rc;
			continue;
		}
		rc = get_len(d, &p, end, &body, &body_end);
		if (rc)
			return rc;
		if (f == F_COMMENT) {
			for (; body < body_end; body++)
				count[f] += *body < 0x80;
		} else if (f < F_COUNT) {
			count[f]++;
			if (f == F_SAMPLE)
				d->sample_bytes += (size_t)(body_end - body);
		}
	}
	return 0;
}

struct out_arrays {
	struct pprof_value_type *sample_type;
	struct pprof_sample *sample;
	size_t *sample_off;        /* 3 per sample: ids, values, labels */
	struct pprof_mapping *mapping;
	struct pprof_location *location;
	size_t *line_off;
	struct pprof_function *function;
	const char **string_table;
	size_t *string_len;
	int64_t *comment;
};

/*
 * Arrays whose every element pass 2 writes whole (samples and their
 * offsets, locations, which dec_location() clears first, strings, comments)
 * are not zeroed here: the location table alone is about 100 KB of a
 * 37 KB pprof, and clearing it was a pass over memory of its own.  Pass 2
 * writes exactly count[f] of each (checked in dec_profile()).
 */
static int alloc_arrays(struct dec *d, const size_t count[F_COUNT], struct out_arrays *o)
{
#define ALLOC(field, n, type, zero)                                                    \
	do {                                                                           \
		size_t n_ = (n) != 0 ? (n) : 1;                                        \
		o->field = (zero) ? arena_calloc(d->a, n_, sizeof(type))               \
				  : (n_ <= SIZE_MAX / sizeof(type)                     \
					     ? arena_alloc(d->a, n_ * sizeof(type))    \
					     : NULL);                                  \
		if (!o->field)                                                         \
			return nomem(d);                                               \
	} while (0)
	if (count[F_SAMPLE] > SIZE_MAX / 3)
		return nomem(d);
	ALLOC(sample_type, count[F_SAMPLE_TYPE], struct pprof_value_type, 1);
	ALLOC(sample, count[F_SAMPLE], struct pprof_sample, 0);
	ALLOC(sample_off, 3 * count[F_SAMPLE], size_t, 0);
	ALLOC(mapping, count[F_MAPPING], struct pprof_mapping, 1);
	ALLOC(location, count[F_LOCATION], struct pprof_location, 0);
	ALLOC(line_off, count[F_LOCATION], size_t, 0);
	ALLOC(function, count[F_FUNCTION], struct pprof_function, 1);
	ALLOC(string_table, count[F_STRING_TABLE], const char *, 0);
	ALLOC(string_len, count[F_STRING_TABLE], size_t, 0);
	ALLOC(comment, count[F_COMMENT], int64_t, 0);
#undef ALLOC
	return 0;
}

/* Pass 2 for one top-level field of wire type 2; n[] counts what was decoded. */
static int dec_top_len(struct dec *d, uint32_t f, const uint8_t *body, const uint8_t *body_end,
		       struct out_arrays *o, size_t n[F_COUNT], struct pprof_msg *m)
{
	size_t i = n[f];
	int rc = 0;

	d->idx = i;
	switch (f) {
	case F_SAMPLE_TYPE:
		d->what = "sample_type";
		rc = dec_value_type(d, body, body_end, &o->sample_type[i]);
		break;
	case F_SAMPLE:
		d->what = "sample";
		rc = dec_sample(d, body, body_end, &o->sample[i], &o->sample_off[3 * i]);
		break;
	case F_MAPPING:
		d->what = "mapping";
		rc = dec_mapping(d, body, body_end, &o->mapping[i]);
		break;
	case F_LOCATION:
		d->what = "location";
		rc = dec_location(d, body, body_end, &o->location[i], &o->line_off[i],
				  m->n_location + 16);
		break;
	case F_FUNCTION:
		d->what = "function";
		rc = dec_function(d, body, body_end, &o->function[i]);
		break;
	case F_STRING_TABLE:
		o->string_len[i] = (size_t)(body_end - body);
		o->string_table[i] = arena_strndup(d->a, (const char *)body, o->string_len[i]);
		if (!o->string_table[i])
			return nomem(d);
		break;
	case F_PERIOD_TYPE:
		d->what = "period_type";
		d->idx = 0;
		m->has_period_type = 1;
		rc = dec_value_type(d, body, body_end, &m->period_type);
		break;
	default:
		return fail(d, body, "known field with the wrong wire type");
	}
	d->what = NULL;
	n[f]++;
	return rc;
}

static int dec_top_varint(uint32_t f, uint64_t v, struct pprof_msg *m)
{
	switch (f) {
	case F_DROP_FRAMES: m->drop_frames = (int64_t)v; break;
	case F_KEEP_FRAMES: m->keep_frames = (int64_t)v; break;
	case F_TIME_NANOS: m->time_nanos = (int64_t)v; break;
	case F_DURATION_NANOS: m->duration_nanos = (int64_t)v; break;
	case F_PERIOD: m->period = (int64_t)v; break;
	case F_DEFAULT_SAMPLE_TYPE: m->default_sample_type = (int64_t)v; break;
	case F_DOC_URL: m->doc_url = (int64_t)v; break;
	default: return -1;
	}
	return 0;
}

static int dec_comments(struct dec *d, const uint8_t **pp, const uint8_t *end, unsigned wt,
			int64_t *out, size_t cap, size_t *n)
{
	const uint8_t *body = NULL, *body_end = NULL, *at = *pp;
	uint64_t v = 0;
	int rc;

	if (wt == WT_VARINT) {
		rc = get_u64(d, pp, end, &v);
		if (!rc && *n < cap)
			out[(*n)++] = (int64_t)v;
		return rc;
	}
	rc = get_msg(d, at, wt, pp, end, &body, &body_end);
	while (!rc && body < body_end) {
		rc = get_u64(d, &body, body_end, &v);
		if (!rc && *n < cap)
			out[(*n)++] = (int64_t)v;
	}
	return rc;
}

static int dec_profile(struct dec *d, const uint8_t *p, const uint8_t *end,
		       const size_t count[F_COUNT], struct out_arrays *o, struct pprof_msg *m)
{
	size_t n[F_COUNT] = { 0 };

	m->n_location = count[F_LOCATION];
	while (p < end) {
		const uint8_t *at = p, *body = NULL, *body_end = NULL;
		uint32_t f = 0;
		unsigned wt = 0;
		uint64_t v = 0;
		int rc = get_tag(d, &p, end, &f, &wt);

		if (rc)
			return rc;
		if (f == F_COMMENT) {
			rc = dec_comments(d, &p, end, wt, o->comment, count[F_COMMENT], &n[F_COMMENT]);
		} else if (f >= F_COUNT) {
			rc = skip(d, &p, end, wt);
		} else if (wt == WT_LEN) {
			rc = get_len(d, &p, end, &body, &body_end);
			if (!rc)
				rc = dec_top_len(d, f, body, body_end, o, n, m);
		} else if (wt == WT_VARINT) {
			rc = get_u64(d, &p, end, &v);
			if (!rc && dec_top_varint(f, v, m))
				rc = fail(d, at, "known field with the wrong wire type");
		} else {
			rc = fail(d, at, "known field with the wrong wire type");
		}
		if (rc)
			return rc;
	}
	/* Pass 1 and pass 2 see the same bytes, so the counts agree. */
	for (int f = 1; f < F_COUNT; f++)
		if (n[f] != count[f] && (f <= F_STRING_TABLE || f == F_COMMENT))
			return fail(d, end, "inconsistent field counts");
	return 0;
}

/* Points every sample and location at its slice of the pools. */
static void fix_pointers(struct dec *d, const size_t count[F_COUNT], struct out_arrays *o)
{
	const uint64_t *ids = d->ids.data;
	const int64_t *vals = d->vals.data;
	const struct pprof_label *labels = d->labels.data;
	const struct pprof_line *lines = d->lines.data;

	for (size_t i = 0; i < count[F_SAMPLE]; i++) {
		struct pprof_sample *s = &o->sample[i];

		s->location_id = s->n_location_id ? ids + o->sample_off[3 * i] : NULL;
		s->value = s->n_value ? vals + o->sample_off[3 * i + 1] : NULL;
		s->label = s->n_label ? labels + o->sample_off[3 * i + 2] : NULL;
	}
	for (size_t i = 0; i < count[F_LOCATION]; i++) {
		struct pprof_location *l = &o->location[i];

		l->line = l->n_line ? lines + o->line_off[i] : NULL;
	}
}

int ingest__pprof_parse(const uint8_t *p, size_t n, struct arena *a, struct pprof_msg *out,
			struct err_msg *msg)
{
	size_t count[F_COUNT] = { 0 };
	struct out_arrays o;
	struct pprof_msg m;
	struct dec d;
	int rc;

	memset(&d, 0, sizeof(d));
	memset(&m, 0, sizeof(m));
	memset(&o, 0, sizeof(o));
	d.a = a;
	d.msg = msg;
	d.start = p;
	d.len = n;
	d.ids.elem = sizeof(uint64_t);
	d.vals.elem = sizeof(int64_t);
	d.labels.elem = sizeof(struct pprof_label);
	d.lines.elem = sizeof(struct pprof_line);
	if (!p)
		p = (const uint8_t *)"";
	d.start = p;
	d.readable = p + n;
	rc = count_fields(&d, p, p + n, count);
	if (!rc)
		rc = alloc_arrays(&d, count, &o);
	if (!rc)
		rc = dec_profile(&d, p, p + n, count, &o, &m);
	if (rc)
		return rc;
	fix_pointers(&d, count, &o);
	m.sample_type = o.sample_type;
	m.n_sample_type = count[F_SAMPLE_TYPE];
	m.sample = o.sample;
	m.n_sample = count[F_SAMPLE];
	m.mapping = o.mapping;
	m.n_mapping = count[F_MAPPING];
	m.location = o.location;
	m.n_location = count[F_LOCATION];
	m.function = o.function;
	m.n_function = count[F_FUNCTION];
	m.string_table = o.string_table;
	m.string_len = o.string_len;
	m.n_string_table = count[F_STRING_TABLE];
	m.comment = o.comment;
	m.n_comment = count[F_COMMENT];
	*out = m;
	return 0;
}
