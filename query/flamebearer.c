/*
 * flamebearer.c - the writer of Pyroscope's flamebearer JSON: the "single"
 * document of /pyroscope/render and the "double" (diff) one of
 * /pyroscope/render-diff, from a flame graph (flame.c) and the merges'
 * timelines and symbolization summaries.  Writing only: nothing here
 * computes a value.
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/err.h"

#include <assert.h>
#include <string.h>

/* The longest int64 in decimal: "-9223372036854775808". */
#define I64_CHARS 20

/*
 * Writes v in decimal at p, two digits per division, and returns the end:
 * at most I64_CHARS characters.  By hand: a flame graph is mostly
 * integers, and buf_printf costs several times more per number.
 */
static char *dec_i64(char *p, int64_t v)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";
	char tmp[I64_CHARS], *t = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	while (u >= 100) {
		size_t d = (size_t)(u % 100) * 2;

		u /= 100;
		*--t = pairs[d + 1];
		*--t = pairs[d];
	}
	if (u >= 10) {
		*--t = pairs[u * 2 + 1];
		*--t = pairs[u * 2];
	} else {
		*--t = (char)('0' + u);
	}
	if (v < 0)
		*p++ = '-';
	memcpy(p, t, (size_t)(tmp + sizeof(tmp) - t));
	return p + (tmp + sizeof(tmp) - t);
}

/* Appends v in decimal. */
static int put_i64(struct buf *b, int64_t v)
{
	char tmp[I64_CHARS];

	return buf_append(b, tmp, (size_t)(dec_i64(tmp, v) - tmp));
}

/*
 * Appends `[v0,v1,...]`.  A flame graph's levels are most of the document:
 * the row is written in place, into room reserved once for its longest
 * form.  A buffer too near its cap for that takes the values one by one,
 * so the cap refuses exactly the documents it refused before.
 */
static int put_row(struct buf *out, const int64_t *v, size_t n)
{
	char *p, *start;
	int rc;

	if (n > (SIZE_MAX - 2) / (I64_CHARS + 1) || buf_reserve(out, n * (I64_CHARS + 1) + 2)) {
		rc = buf_putc(out, '[');
		for (size_t i = 0; i < n && !rc; i++) {
			if (i)
				rc = buf_putc(out, ',');
			if (!rc)
				rc = put_i64(out, v[i]);
		}
		return rc ? rc : buf_putc(out, ']');
	}
	start = p = out->data + out->len;
	*p++ = '[';
	for (size_t i = 0; i < n; i++) {
		if (i)
			*p++ = ',';
		p = dec_i64(p, v[i]);
	}
	*p++ = ']';
	out->len += (size_t)(p - start);
	out->data[out->len] = '\0';
	return 0;
}

/* Appends `"names":[...],"levels":[[...],...]`. */
static int put_levels(const struct query__flame *f, struct buf *out)
{
	int rc = buf_puts(out, "\"names\":[");

	for (size_t i = 0; i < f->n_names && !rc; i++) {
		if (i)
			rc = buf_putc(out, ',');
		if (!rc)
			rc = buf_put_json_str(out, f->names[i], f->name_len[i]);
	}
	if (!rc)
		rc = buf_puts(out, "],\"levels\":[");
	for (size_t d = 0; d < f->n_levels && !rc; d++) {
		if (d)
			rc = buf_putc(out, ',');
		if (!rc)
			rc = put_row(out, f->levels[d], f->n_values[d]);
	}
	if (!rc)
		rc = buf_putc(out, ']');
	return rc;
}

/*
 * Pyroscope's metadata for a sample type (ExportToFlamebearer): the units
 * are the sample unit, except "objects" for object and goroutine counts
 * and "samples" for cpu, whose sample rate 10^9 turns nanoseconds into
 * seconds in Pyroscope's UI; every other type has rate 100.
 */
static const char *units(const char *sample_type, const char *sample_unit, unsigned *rate)
{
	static const char *const objects[] = { "inuse_objects", "alloc_objects", "goroutine",
					       "samples" };

	*rate = 100;
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		if (!strcmp(sample_type, objects[i]))
			return "objects";
	if (!strcmp(sample_type, "cpu")) {
		*rate = 1000000000;
		return "samples";
	}
	return sample_unit;
}

static int put_timeline(struct buf *out, const struct qmerge *m)
{
	int rc;

	if (m->tl_json) {
		rc = buf_append(out, m->tl_json->data, m->tl_json->len);
		if (!rc)
			rc = buf_puts(out, ",\"groups\":");
		if (!rc)
			rc = m->groups_json->len ? buf_append(out, m->groups_json->data,
							     m->groups_json->len)
						 : buf_puts(out, "null");
		return rc;
	}
	rc = buf_printf(out, "{\"startTime\":%lld,\"samples\":",
			    (long long)(m->tl_start_ns / 1000000000LL));
	if (!rc)
		rc = put_row(out, m->tl, m->tl_n);
	if (!rc)
		rc = buf_printf(out, ",\"durationDelta\":%lld,\"watermarks\":{}}",
				(long long)(m->tl_step_ns / 1000000000LL));
	return rc;
}

/* Pyroscope names the profile by its sample type; a type that does not split keeps its text. */
static int put_metadata(struct buf *out, const char *format, const char *profile_type)
{
	char tmp[QUERY_MAX_SELECTOR_BYTES + 1];
	const char *parts[5];
	const char *u = "", *name = profile_type;
	unsigned rate = 100;
	int rc;

	if (!query__profile_type_split(profile_type, tmp, sizeof(tmp), parts)) {
		u = units(parts[1], parts[2], &rate);
		name = parts[1];
	}
	rc = buf_printf(out, "\"metadata\":{\"format\":\"%s\",\"spyName\":\"\",\"sampleRate\":%u,"
			     "\"units\":", format, rate);
	if (!rc)
		rc = buf_put_json_str(out, u, strlen(u));
	if (!rc)
		rc = buf_puts(out, ",\"name\":");
	if (!rc)
		rc = buf_put_json_str(out, name, strlen(name));
	if (!rc)
		rc = buf_putc(out, '}');
	return rc;
}

int query__fb_write(const struct query__flame *f, const char *profile_type,
		    const struct qmerge *const *ms, size_t n, struct buf *out)
{
	int dbl = n == 2, rc;

	assert((n == 1 || n == 2) && f->width == (dbl ? 7 : 4));
	rc = buf_puts(out, "{\"version\":1,\"flamebearer\":{");
	if (!rc)
		rc = put_levels(f, out);
	if (!rc && !dbl)
		rc = buf_printf(out, ",\"numTicks\":%lld,\"maxSelf\":%lld},",
				(long long)f->total[0], (long long)f->max_self);
	else if (!rc)
		rc = buf_printf(out, ",\"numTicks\":%lld,\"maxSelf\":%lld},",
				(long long)(f->total[0] + f->total[1]), (long long)f->max_self);
	if (!rc)
		rc = put_metadata(out, dbl ? "double" : "single", profile_type);
	for (size_t i = 0; i < n && !rc; i++) {
		rc = buf_puts(out, !dbl ? ",\"timeline\":" : i ? ",\"rightTimeline\":"
							       : ",\"leftTimeline\":");
		if (!rc)
			rc = put_timeline(out, ms[i]);
	}
	/* Pyroscope writes a diff's side totals beside the flamebearer, not in it. */
	if (!rc && dbl)
		rc = buf_printf(out, ",\"leftTicks\":%lld,\"rightTicks\":%lld",
				(long long)f->total[0], (long long)f->total[1]);
	if (!rc)
		rc = query__sym_json(ms, n, out);
	/* Only when a block was skipped, so that other answers keep their bytes. */
	if (!rc && query__warning_count(ms, n)) {
		rc = buf_puts(out, ",\"warnings\":");
		if (!rc)
			rc = query__warnings_json(ms, n, out);
	}
	if (!rc)
		rc = buf_putc(out, '}');
	return rc;
}
