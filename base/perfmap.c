/*
 * perfmap.c - the strict reader of perf map files, their stored form, and
 * the "perf-PID.map" mapping name (perfmap.h says what is accepted).
 */
#include "perfmap.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "hex.h"
#include "varint.h"

/* A hex field of 1..16 digits at *p ending in a space; advances past it. */
static int hex_field(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	const char *s = *p;
	int d, n = 0;

	while (s < end && (d = hex_digit(*s)) >= 0) {
		if (++n > 16)
			return -1;
		v = v << 4 | (uint64_t)d;
		s++;
	}
	if (n == 0 || s >= end || *s != ' ')
		return -1;
	*p = s + 1;
	*out = v;
	return 0;
}

/* Sorts by start, then by line (names are appended in line order). */
static int cmp_entry(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->name_off < y->name_off ? -1 : x->name_off > y->name_off;
}

/* Sorts, and keeps the last line of each start. */
static void finish(struct perfmap *m)
{
	size_t k = 0;

	qsort(m->e, m->n, sizeof(*m->e), cmp_entry);
	for (size_t i = 0; i < m->n; i++) {
		if (k && m->e[k - 1].start == m->e[i].start)
			k--;
		m->e[k++] = m->e[i];
	}
	m->n = k;
}

int perfmap_parse(const char *text, size_t len, struct perfmap *out, struct err_msg *msg)
{
	struct perfmap m = { 0 };
	const char *p = text, *end = text + len;
	size_t lines = 0, at = 0;

	if (len > PERFMAP_MAX_BYTES)
		return err_set(msg, ERR_TOO_LARGE, "perf map of %zu bytes, at most %u", len,
			       PERFMAP_MAX_BYTES);
	if (len == 0)
		return err_set(msg, ERR_INVALID, "empty perf map");
	for (const char *s = text; s < end && (s = memchr(s, '\n', (size_t)(end - s))); s++)
		lines++;
	if (lines > PERFMAP_MAX_ENTRIES)
		return err_set(msg, ERR_TOO_LARGE, "perf map of %zu lines, at most %u", lines,
			       PERFMAP_MAX_ENTRIES);
	m.e = malloc((lines ? lines : 1) * sizeof(*m.e));
	m.names = malloc(len + 1);
	if (!m.e || !m.names) {
		perfmap_release(&m);
		return err_set(msg, ERR_NOMEM, "perf map: out of memory");
	}
	for (size_t line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *name;
		struct perfmap_entry *e = &m.e[m.n];
		const char *why = NULL;

		if (!nl) {
			why = "cut short (no newline at the end of the file)";
		} else if (hex_field(&p, nl, &e->start) || hex_field(&p, nl, &e->size)) {
			why = "not \"START SIZE name\" with START and SIZE in hex";
		} else if (e->size > UINT64_MAX - e->start) {
			why = "START + SIZE overflows";
		} else if (p == nl) {
			why = "no name";
		} else if ((size_t)(nl - p) > PERFMAP_MAX_NAME) {
			why = "name longer than 4096 bytes";
		}
		for (name = p; !why && name < nl; name++)
			if ((unsigned char)*name < 0x20 || *name == 0x7f)
				why = "control character in the name";
		if (why) {
			perfmap_release(&m);
			return err_set(msg, ERR_INVALID, "perf map line %zu: %s", line, why);
		}
		e->name_off = (uint32_t)at;
		e->name_len = (uint32_t)(nl - p);
		memcpy(m.names + at, p, e->name_len);
		at += e->name_len;
		m.names[at++] = '\0';
		m.n++;
		p = nl + 1;
	}
	finish(&m);
	*out = m;
	return 0;
}

const struct perfmap_entry *perfmap_find(const struct perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	/* The first entry starting above addr is e[lo]. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr - m->e[lo - 1].start >= m->e[lo - 1].size)
		return NULL;
	return &m->e[lo - 1];
}

int perfmap_encode(const struct perfmap *m, int64_t uploaded_ns, struct buf *out)
{
	int rc = buf_putc(out, 1);

	if (!rc)
		rc = buf_put_uvarint(out, (uint64_t)(uploaded_ns > 0 ? uploaded_ns : 0));
	if (!rc)
		rc = buf_put_uvarint(out, m->n);
	for (size_t i = 0; i < m->n && !rc; i++) {
		const struct perfmap_entry *e = &m->e[i];

		rc = buf_put_uvarint(out, e->start);
		if (!rc)
			rc = buf_put_uvarint(out, e->size);
		if (!rc)
			rc = buf_put_uvarint(out, e->name_len);
		if (!rc)
			rc = buf_append(out, m->names + e->name_off, e->name_len);
	}
	return rc;
}

int perfmap_uploaded_ns(const void *data, size_t len, int64_t *uploaded_ns)
{
	const uint8_t *p = data;
	uint64_t ns;

	if (len < 1 || p[0] != 1 || !varint_get(p + 1, p + len, &ns) || ns > INT64_MAX)
		return ERR_CORRUPT;
	*uploaded_ns = (int64_t)ns;
	return 0;
}

int perfmap_decode(const void *data, size_t len, struct perfmap *out, int64_t *uploaded_ns,
		   struct err_msg *msg)
{
	const uint8_t *p = data, *end = p + len;
	struct perfmap m = { 0 };
	uint64_t ns, n, at = 0;
	size_t k;

	if (len < 1 || p[0] != 1)
		return err_set(msg, ERR_CORRUPT, "perf map record: unknown version");
	p++;
	if (!(k = varint_get(p, end, &ns)) || ns > INT64_MAX)
		goto bad;
	p += k;
	if (!(k = varint_get(p, end, &n)) || n > PERFMAP_MAX_ENTRIES || n > len)
		goto bad;
	p += k;
	m.e = malloc((n ? n : 1) * sizeof(*m.e));
	m.names = malloc(len + n + 1);
	if (!m.e || !m.names) {
		perfmap_release(&m);
		return err_set(msg, ERR_NOMEM, "perf map: out of memory");
	}
	for (m.n = 0; m.n < n; m.n++) {
		struct perfmap_entry *e = &m.e[m.n];
		uint64_t nl;

		if (!(k = varint_get(p, end, &e->start)))
			goto bad;
		p += k;
		if (!(k = varint_get(p, end, &e->size)))
			goto bad;
		p += k;
		if (!(k = varint_get(p, end, &nl)) || nl == 0 || nl > PERFMAP_MAX_NAME ||
		    nl > (uint64_t)(end - p - (ptrdiff_t)k))
			goto bad;
		p += k;
		if (e->size > UINT64_MAX - e->start || (m.n && e->start <= m.e[m.n - 1].start) ||
		    memchr(p, '\0', nl))
			goto bad;
		e->name_off = (uint32_t)at;
		e->name_len = (uint32_t)nl;
		memcpy(m.names + at, p, nl);
		at += nl;
		m.names[at++] = '\0';
		p += nl;
	}
	if (p != end)
		goto bad;
	*out = m;
	*uploaded_ns = (int64_t)ns;
	return 0;
bad:
	perfmap_release(&m);
	return err_set(msg, ERR_CORRUPT, "perf map record: malformed");
}

void perfmap_release(struct perfmap *m)
{
	free(m->e);
	free(m->names);
	memset(m, 0, sizeof(*m));
}

int perfmap_jit_mapping(const char *filename, const char *build_id, uint32_t *pid)
{
	return !(build_id && build_id[0]) && perfmap_pid_of(filename, pid);
}

int perfmap_pid_of(const char *filename, uint32_t *pid)
{
	const char *b = filename ? strrchr(filename, '/') : NULL, *d;
	uint64_t v = 0;

	if (!filename)
		return 0;
	b = b ? b + 1 : filename;
	if (strncmp(b, "perf-", 5) != 0)
		return 0;
	for (d = b + 5; *d >= '0' && *d <= '9'; d++) {
		if (d - (b + 5) >= 10)
			return 0;
		v = v * 10 + (uint64_t)(*d - '0');
	}
	if (d == b + 5 || b[5] == '0' || strcmp(d, ".map") != 0 || v > INT32_MAX)
		return 0;
	*pid = (uint32_t)v;
	return 1;
}
