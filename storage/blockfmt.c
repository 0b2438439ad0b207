/*
 * blockfmt.c - the codecs of block files: trailer, footer, index section and
 * symbol sections (storage_int.h, section 9).  Decoders treat their input as
 * untrusted: every count is checked against the bytes left before anything
 * is allocated, every id against the table it names, and a violation is
 * ERR_CORRUPT with a message, never an assert.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/varint.h"

/* ---- a bounds-checked reader --------------------------------------------- */

struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t rd_uv(struct rd *r)
{
	uint64_t v = 0;
	size_t n = r->bad ? 0 : varint_get(r->p, r->end, &v);

	if (!n) {
		r->bad = 1;
		return 0;
	}
	r->p += n;
	return v;
}

static int64_t rd_sv(struct rd *r)
{
	return zigzag_decode(rd_uv(r));
}

/* A count of items that take at least `min_bytes` each: checked against what is left. */
static uint64_t rd_count(struct rd *r, uint64_t max, size_t min_bytes)
{
	uint64_t n = rd_uv(r);

	if (r->bad || n > max || n > (uint64_t)(r->end - r->p) / min_bytes) {
		r->bad = 1;
		return 0;
	}
	return n;
}

static const uint8_t *rd_bytes(struct rd *r, uint64_t n)
{
	const uint8_t *p = r->p;

	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = 1;
		return NULL;
	}
	r->p += n;
	return p;
}

static uint32_t rd_le32(struct rd *r)
{
	const uint8_t *b = rd_bytes(r, 4);

	return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
			   (uint32_t)b[3] << 24
		 : 0;
}

static void le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* An arena sized for what `len` input bytes can decode to. */
static struct arena *arena_for(size_t len, size_t per_byte)
{
	struct arena *a = malloc(sizeof(*a));

	if (a)
		arena_init(a, len * per_byte + ((size_t)64 << 10));
	return a;
}

static void arena_free(struct arena *a)
{
	if (a) {
		arena_release(a);
		free(a);
	}
}

/* ---- trailer -------------------------------------------------------------- */

void store__btrailer_put(uint8_t tail[BLOCK_TRAILER_BYTES], uint32_t footer_len,
			 uint32_t footer_crc)
{
	le32_put(tail, footer_len);
	le32_put(tail + 4, footer_crc);
	memcpy(tail + 8, BLOCK_END_MAGIC, 8);
}

int store__btrailer_parse(const uint8_t tail[BLOCK_TRAILER_BYTES], uint64_t file_size,
			  uint32_t *footer_len, uint32_t *footer_crc, struct err_msg *msg)
{
	uint32_t len;

	if (file_size < BLOCK_HEADER_BYTES + BLOCK_TRAILER_BYTES)
		return err_set(msg, ERR_CORRUPT, "block file of %llu bytes is too short",
			       (unsigned long long)file_size);
	if (memcmp(tail + 8, BLOCK_END_MAGIC, 8) != 0)
		return err_set(msg, ERR_CORRUPT, "block trailer: bad magic");
	len = le32_get(tail);
	if (len == 0 || len > BLOCK_MAX_FOOTER ||
	    len > file_size - BLOCK_HEADER_BYTES - BLOCK_TRAILER_BYTES)
		return err_set(msg, ERR_CORRUPT, "block trailer: footer length %u out of range", len);
	*footer_len = len;
	*footer_crc = le32_get(tail + 4);
	return 0;
}

/* ---- footer --------------------------------------------------------------- */

static int put_str(struct buf *b, const char *s)
{
	return buf_put_lstr(b, s, strlen(s));
}

int store__bmeta_encode(const struct bmeta *m, struct buf *out)
{
	int rc = buf_put_uvarint(out, BLOCK_FOOTER_VERSION);

	if (!rc)
		rc = buf_append(out, m->id, BLOCK_ID_BYTES);
	if (!rc)
		rc = put_str(out, m->tenant);
	if (!rc)
		rc = buf_put_uvarint(out, m->level);
	if (!rc)
		rc = buf_put_svarint(out, m->range_start);
	if (!rc)
		rc = buf_put_svarint(out, m->range_end - m->range_start);
	if (!rc)
		rc = buf_put_svarint(out, m->min_time - m->range_start);
	if (!rc)
		rc = buf_put_svarint(out, m->max_time - m->min_time);
	if (!rc)
		rc = buf_put_svarint(out, m->created_ns);
	if (!rc)
		rc = buf_put_uvarint(out, m->series);
	if (!rc)
		rc = buf_put_uvarint(out, m->profiles);
	if (!rc)
		rc = buf_put_uvarint(out, m->samples);
	if (!rc)
		rc = buf_put_uvarint(out, m->n_origins);
	for (size_t i = 0; i < m->n_origins && !rc; i++) {
		const struct borigin *o = &m->origins[i];
		rc = buf_append(out, o->store_id, 16);
		if (!rc)
			rc = buf_put_svarint(out, o->window_ns);
		if (!rc)
			rc = buf_put_svarint(out, o->first);
		if (!rc)
			rc = buf_put_svarint(out, o->last - o->first);
		if (!rc)
			rc = buf_put_uvarint(out, o->max_epoch);
	}
	if (!rc)
		rc = buf_put_uvarint(out, m->n_sources);
	for (size_t i = 0; i < m->n_sources && !rc; i++)
		rc = buf_append(out, m->sources[i], BLOCK_ID_BYTES);
	if (!rc)
		rc = buf_put_uvarint(out, m->n_build_ids);
	for (size_t i = 0; i < m->n_build_ids && !rc; i++)
		rc = put_str(out, m->build_ids[i]);
	if (!rc)
		rc = buf_put_uvarint(out, m->n_svc);
	for (size_t i = 0; i < m->n_svc && !rc; i++) {
		rc = put_str(out, m->svc[i].name);
		if (!rc)
			rc = buf_put_uvarint(out, m->svc[i].section);
		for (int k = 1; k < SYM_NKINDS && !rc; k++)
			rc = buf_put_uvarint(out, m->svc[i].count[k]);
	}
	if (!rc)
		rc = buf_put_uvarint(out, m->n_sec);
	for (size_t i = 0; i < m->n_sec && !rc; i++) {
		const struct bsection *s = &m->sec[i];
		uint8_t crc[4];

		rc = buf_put_uvarint(out, s->kind);
		if (!rc)
			rc = buf_put_uvarint(out, s->codec);
		if (!rc)
			rc = buf_put_uvarint(out, s->off);
		if (!rc)
			rc = buf_put_uvarint(out, s->len);
		if (!rc)
			rc = buf_put_uvarint(out, s->raw_len);
		le32_put(crc, s->crc);
		if (!rc)
			rc = buf_append(out, crc, 4);
	}
	return rc;
}

void store__bmeta_release(struct bmeta *m)
{
	arena_free(m->mem);
	memset(m, 0, sizeof(*m));
}

/* A string of 1..max bytes without NUL, copied into the arena. */
static const char *rd_str(struct rd *r, struct arena *a, size_t max)
{
	uint64_t n = rd_uv(r);
	const uint8_t *b;
	char *s;

	if (r->bad || n == 0 || n > max) {
		r->bad = 1;
		return NULL;
	}
	b = rd_bytes(r, n);
	if (!b || memchr(b, 0, n)) {
		r->bad = 1;
		return NULL;
	}
	s = arena_strndup(a, (const char *)b, n);
	if (!s)
		r->bad = 2;
	return s;
}

/* Adds a - b when it fits in int64 (times in a footer are untrusted). */
static int add_i64(int64_t a, int64_t b, int64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? ERR_CORRUPT : 0;
}

static int check_sections(struct bmeta *m, uint64_t file_size, struct err_msg *msg)
{
	uint64_t body_end = file_size - BLOCK_TRAILER_BYTES;
	int n_index = 0, n_samples = 0;

	for (size_t i = 0; i < m->n_sec; i++) {
		const struct bsection *s = &m->sec[i];

		if (s->kind < BSEC_INDEX || s->kind > BSEC_SAMPLES || s->codec > BCODEC_ZSTD)
			return err_set(msg, ERR_CORRUPT, "block footer: section %zu has kind %u codec %u",
				       i, s->kind, s->codec);
		if (s->off < BLOCK_HEADER_BYTES || s->len > body_end || s->off > body_end - s->len)
			return err_set(msg, ERR_CORRUPT, "block footer: section %zu outside the file", i);
		if (s->raw_len > BLOCK_MAX_SECTION_RAW || (s->codec == BCODEC_RAW && s->raw_len != s->len))
			return err_set(msg, ERR_CORRUPT, "block footer: section %zu raw length %llu",
				       i, (unsigned long long)s->raw_len);
		if (s->kind == BSEC_SAMPLES && s->codec != BCODEC_RAW)
			return err_set(msg, ERR_CORRUPT, "block footer: compressed samples section");
		for (size_t j = 0; j < i; j++) {
			const struct bsection *o = &m->sec[j];
			if (s->off < o->off + o->len && o->off < s->off + s->len && s->len && o->len)
				return err_set(msg, ERR_CORRUPT,
					       "block footer: sections %zu and %zu overlap", j, i);
		}
		if (s->kind == BSEC_INDEX) {
			n_index++;
			m->index_sec = (uint32_t)i;
		} else if (s->kind == BSEC_SAMPLES) {
			n_samples++;
			m->samples_sec = (uint32_t)i;
		}
	}
	if (n_index != 1 || n_samples != 1)
		return err_set(msg, ERR_CORRUPT, "block footer: %d index and %d samples sections",
			       n_index, n_samples);
	for (size_t i = 0; i < m->n_svc; i++) {
		uint32_t k = m->svc[i].section;
		if (k >= m->n_sec || m->sec[k].kind != BSEC_SYMBOLS)
			return err_set(msg, ERR_CORRUPT, "block footer: service %zu names section %u", i, k);
		for (size_t j = 0; j < i; j++)
			if (m->svc[j].section == k)
				return err_set(msg, ERR_CORRUPT, "block footer: services share section %u", k);
		if (i && strcmp(m->svc[i - 1].name, m->svc[i].name) >= 0)
			return err_set(msg, ERR_CORRUPT, "block footer: services out of order");
	}
	return 0;
}

static int decode_footer(struct rd *r, struct arena *a, uint64_t file_size, struct bmeta *m,
			 struct err_msg *msg)
{
	const uint8_t *b;
	int64_t len, d;

	if (rd_uv(r) != BLOCK_FOOTER_VERSION || r->bad)
		return err_set(msg, ERR_CORRUPT, "block footer: unknown version");
	b = rd_bytes(r, BLOCK_ID_BYTES);
	if (b)
		memcpy(m->id, b, BLOCK_ID_BYTES);
	m->tenant = rd_str(r, a, STORE_MAX_TENANT_NAME);
	m->level = (uint32_t)rd_uv(r);
	m->range_start = rd_sv(r);
	len = rd_sv(r);
	d = rd_sv(r);
	if (r->bad || len <= 0 || d < 0 || add_i64(m->range_start, len, &m->range_end) ||
	    add_i64(m->range_start, d, &m->min_time))
		return err_set(msg, ERR_CORRUPT, "block footer: bad time range");
	d = rd_sv(r);
	if (r->bad || d < 0 || add_i64(m->min_time, d, &m->max_time) ||
	    m->max_time >= m->range_end)
		return err_set(msg, ERR_CORRUPT, "block footer: bad time range");
	m->created_ns = rd_sv(r);
	m->series = rd_uv(r);
	m->profiles = rd_uv(r);
	m->samples = rd_uv(r);
	if (r->bad || m->series > BLOCK_MAX_SERIES || m->series == 0 || m->profiles == 0)
		return err_set(msg, ERR_CORRUPT, "block footer: bad counts");

	m->n_origins = rd_count(r, BLOCK_MAX_ORIGINS, 20);
	m->origins = arena_calloc(a, m->n_origins + 1, sizeof(*m->origins));
	for (size_t i = 0; m->origins && i < m->n_origins && !r->bad; i++) {
		struct borigin *o = &m->origins[i];
		b = rd_bytes(r, 16);
		if (b)
			memcpy(o->store_id, b, 16);
		o->window_ns = rd_sv(r);
		o->first = rd_sv(r);
		d = rd_sv(r);
		o->max_epoch = (uint32_t)rd_uv(r);
		if (r->bad || o->window_ns <= 0 || d < 0 || add_i64(o->first, d, &o->last))
			return err_set(msg, ERR_CORRUPT, "block footer: bad origin %zu", i);
	}
	m->n_sources = rd_count(r, BLOCK_MAX_SOURCES, BLOCK_ID_BYTES);
	m->sources = arena_alloc(a, (m->n_sources + 1) * BLOCK_ID_BYTES);
	for (size_t i = 0; m->sources && i < m->n_sources && !r->bad; i++) {
		b = rd_bytes(r, BLOCK_ID_BYTES);
		if (b)
			memcpy(m->sources[i], b, BLOCK_ID_BYTES);
	}
	m->n_build_ids = rd_count(r, BLOCK_MAX_BUILD_IDS, 2);
	m->build_ids = arena_calloc(a, m->n_build_ids + 1, sizeof(*m->build_ids));
	for (size_t i = 0; m->build_ids && i < m->n_build_ids && !r->bad; i++) {
		m->build_ids[i] = rd_str(r, a, BLOCK_MAX_BUILD_ID_LEN);
		if (!r->bad && i && strcmp(m->build_ids[i - 1], m->build_ids[i]) >= 0)
			return err_set(msg, ERR_CORRUPT, "block footer: build IDs out of order");
	}
	m->n_svc = rd_count(r, BLOCK_MAX_SERVICES, 2 + SYM_NKINDS);
	m->svc = arena_calloc(a, m->n_svc + 1, sizeof(*m->svc));
	for (size_t i = 0; m->svc && i < m->n_svc && !r->bad; i++) {
		struct bservice *s = &m->svc[i];
		uint64_t v;
		s->name = rd_str(r, a, STORE_MAX_LABEL_BYTES);
		s->section = (uint32_t)rd_uv(r);
		for (int k = 1; k < SYM_NKINDS; k++) {
			v = rd_uv(r);
			if (v > STORE_MAX_SYMBOLS)
				r->bad = 1;
			s->count[k] = (uint32_t)v;
		}
	}
	if (!r->bad && m->n_svc == 0)
		return err_set(msg, ERR_CORRUPT, "block footer: no services");
	m->n_sec = rd_count(r, BLOCK_MAX_SECTIONS, 9);
	m->sec = arena_calloc(a, m->n_sec + 1, sizeof(*m->sec));
	for (size_t i = 0; m->sec && i < m->n_sec && !r->bad; i++) {
		struct bsection *s = &m->sec[i];
		s->kind = (uint32_t)rd_uv(r);
		s->codec = (uint32_t)rd_uv(r);
		s->off = rd_uv(r);
		s->len = rd_uv(r);
		s->raw_len = rd_uv(r);
		s->crc = rd_le32(r);
	}
	if (arena_failed(a))
		return arena_failed(a) == ERR_NOMEM ? ERR_NOMEM : ERR_CORRUPT;
	if (r->bad || r->p != r->end)
		return err_set(msg, ERR_CORRUPT, "block footer: malformed");
	return check_sections(m, file_size, msg);
}

int store__bmeta_decode(const uint8_t *p, size_t len, uint64_t file_size, struct bmeta *out,
			struct err_msg *msg)
{
	struct rd r = { p, p + len, 0 };
	struct bmeta m;
	struct arena *a;
	int rc;

	memset(&m, 0, sizeof(m));
	a = arena_for(len, 24);
	if (!a)
		return ERR_NOMEM;
	rc = decode_footer(&r, a, file_size, &m, msg);
	if (rc) {
		arena_free(a);
		return rc == ERR_NOMEM ? rc : err_set(msg, ERR_CORRUPT, "block footer: malformed");
	}
	m.mem = a;
	m.mem_bytes = a->used;
	*out = m;
	return 0;
}

/* ---- index section ----------------------------------------------------------- */

void store__bindex_release(struct bindex *x)
{
	arena_free(x->mem);
	memset(x, 0, sizeof(*x));
}

static int decode_strings(struct rd *r, struct arena *a, struct bindex *x)
{
	x->n_str = (uint32_t)rd_count(r, STORE_MAX_SYMBOLS, 1);
	x->str = arena_calloc(a, x->n_str + 1, sizeof(*x->str));
	x->str_len = arena_calloc(a, x->n_str + 1, sizeof(*x->str_len));
	if (!x->str || !x->str_len)
		return ERR_NOMEM;
	for (uint32_t i = 0; i < x->n_str && !r->bad; i++) {
		uint64_t n = rd_uv(r);
		const uint8_t *b = n <= STORE_MAX_LABEL_BYTES ? rd_bytes(r, n) : NULL;
		if (!b || memchr(b, 0, n)) {
			r->bad = 1;
			break;
		}
		x->str[i] = arena_strndup(a, (const char *)b, n);
		x->str_len[i] = (uint32_t)n;
		if (!x->str[i])
			return ERR_NOMEM;
		if (i && strcmp(x->str[i - 1], x->str[i]) >= 0)
			r->bad = 1;
	}
	return 0;
}

static int decode_series(struct rd *r, struct arena *a, const struct bmeta *m, struct bindex *x)
{
	uint64_t n_labels = 0, n_pages = 0;
	const uint8_t *save;
	uint32_t prev_svc = 0;

	x->n_series = (uint32_t)rd_count(r, BLOCK_MAX_SERIES, 3);
	if (r->bad || x->n_series != m->series)
		return ERR_CORRUPT;
	x->series = arena_calloc(a, x->n_series + 1, sizeof(*x->series));
	if (!x->series)
		return ERR_NOMEM;
	/* First pass: counts, so the label and page arrays are allocated once. */
	save = r->p;
	for (uint32_t i = 0; i < x->n_series && !r->bad; i++) {
		uint64_t svc = rd_uv(r), nl = rd_count(r, STORE_MAX_LABELS, 2), np;
		for (uint64_t j = 0; j < 2 * nl; j++)
			rd_uv(r);
		np = rd_count(r, BLOCK_MAX_PAGES, 6);
		for (uint64_t j = 0; j < np && !r->bad; j++) {
			rd_sv(r), rd_uv(r), rd_uv(r), rd_le32(r), rd_uv(r), rd_uv(r);
		}
		if (r->bad || svc >= m->n_svc || svc < prev_svc || nl == 0 || np == 0)
			return ERR_CORRUPT;
		prev_svc = (uint32_t)svc;
		x->series[i].svc = (uint32_t)svc;
		x->series[i].label0 = (uint32_t)n_labels;
		x->series[i].n_labels = (uint32_t)nl;
		x->series[i].page0 = (uint32_t)n_pages;
		x->series[i].n_pages = (uint32_t)np;
		n_labels += nl;
		n_pages += np;
		if (n_pages > BLOCK_MAX_PAGES)
			return ERR_CORRUPT;
	}
	x->labels = arena_alloc(a, (2 * n_labels + 1) * sizeof(*x->labels));
	x->pages = arena_calloc(a, n_pages + 1, sizeof(*x->pages));
	if (!x->labels || !x->pages)
		return ERR_NOMEM;
	x->n_pages = (uint32_t)n_pages;
	r->p = save;
	{
		uint64_t off = 0, profiles = 0, samples = 0;
		const struct bsection *ss = &m->sec[m->samples_sec];

		for (uint32_t i = 0; i < x->n_series && !r->bad; i++) {
			struct bser *s = &x->series[i];
			uint32_t *l = x->labels + 2 * (size_t)s->label0;
			int64_t prev_max = m->range_start;

			rd_uv(r), rd_uv(r);
			for (uint32_t j = 0; j < 2 * s->n_labels; j++) {
				uint64_t id = rd_uv(r);
				if (id >= x->n_str)
					return ERR_CORRUPT;
				l[j] = (uint32_t)id;
			}
			/* Label names ascending and unique, as in the head's label key. */
			for (uint32_t j = 1; j < s->n_labels; j++)
				if (l[2 * j - 2] >= l[2 * j])
					return ERR_CORRUPT;
			rd_uv(r);
			for (uint32_t j = 0; j < s->n_pages && !r->bad; j++) {
				struct bpage *pg = &x->pages[s->page0 + j];
				int64_t d = rd_sv(r);
				uint64_t span = rd_uv(r);
				pg->len = (uint32_t)0;
				{
					uint64_t len = rd_uv(r);
					if (len == 0 || len > BLOCK_MAX_PAGE_BYTES)
						return ERR_CORRUPT;
					pg->len = (uint32_t)len;
				}
				pg->crc = rd_le32(r);
				{
					uint64_t np = rd_uv(r), ns = rd_uv(r);
					if (np == 0 || np > STORE_MAX_CHUNK_PROFILES ||
					    ns > STORE_MAX_CHUNK_SAMPLES)
						return ERR_CORRUPT;
					pg->profiles = (uint32_t)np;
					pg->samples = ns;
				}
				if (r->bad || add_i64(prev_max, d, &pg->min_time) || span > INT64_MAX ||
				    add_i64(pg->min_time, (int64_t)span, &pg->max_time) ||
				    pg->min_time < m->min_time || pg->max_time > m->max_time ||
				    (j && pg->min_time <= x->pages[s->page0 + j - 1].max_time))
					return ERR_CORRUPT;
				prev_max = pg->max_time;
				pg->off = off;
				off += pg->len;
				profiles += pg->profiles;
				samples += pg->samples;
				if (off > ss->len)
					return ERR_CORRUPT;
			}
		}
		if (!r->bad && (off != ss->len || profiles != m->profiles || samples != m->samples))
			return ERR_CORRUPT;
	}
	return r->bad ? ERR_CORRUPT : 0;
}

static int decode_postings(struct rd *r, struct arena *a, struct bindex *x)
{
	uint64_t total_vals = 0, total_list = 0;
	const uint8_t *save;

	x->n_pnames = (uint32_t)rd_count(r, STORE_MAX_SYMBOLS, 2);
	x->pnames = arena_calloc(a, x->n_pnames + 1, sizeof(*x->pnames));
	if (!x->pnames)
		return ERR_NOMEM;
	save = r->p;
	for (uint32_t i = 0; i < x->n_pnames && !r->bad; i++) {
		uint64_t nv;
		rd_uv(r);
		nv = rd_count(r, STORE_MAX_SYMBOLS, 2);
		for (uint64_t j = 0; j < nv && !r->bad; j++) {
			uint64_t ns;
			rd_uv(r);
			ns = rd_count(r, x->n_series, 1);
			for (uint64_t k = 0; k < ns; k++)
				rd_uv(r);
			total_list += ns;
		}
		total_vals += nv;
	}
	if (r->bad || total_vals > STORE_MAX_SYMBOLS || total_list > (uint64_t)x->n_series * STORE_MAX_LABELS)
		return ERR_CORRUPT;
	x->pvals = arena_calloc(a, total_vals + 1, sizeof(*x->pvals));
	x->plist = arena_alloc(a, (total_list + 1) * sizeof(*x->plist));
	if (!x->pvals || !x->plist)
		return ERR_NOMEM;
	r->p = save;
	total_vals = total_list = 0;
	for (uint32_t i = 0; i < x->n_pnames && !r->bad; i++) {
		struct bpost_name *pn = &x->pnames[i];
		uint64_t name = rd_uv(r);

		if (name >= x->n_str || (i && name <= x->pnames[i - 1].name))
			return ERR_CORRUPT;
		pn->name = (uint32_t)name;
		pn->n_vals = (uint32_t)rd_uv(r);
		pn->val0 = (uint32_t)total_vals;
		for (uint32_t j = 0; j < pn->n_vals && !r->bad; j++) {
			struct bpost_val *pv = &x->pvals[pn->val0 + j];
			uint64_t value = rd_uv(r), prev = 0;

			if (value >= x->n_str || (j && value <= x->pvals[pn->val0 + j - 1].value))
				return ERR_CORRUPT;
			pv->value = (uint32_t)value;
			pv->n = (uint32_t)rd_uv(r);
			pv->list0 = (uint32_t)total_list;
			if (pv->n == 0)
				return ERR_CORRUPT;
			for (uint32_t k = 0; k < pv->n && !r->bad; k++) {
				uint64_t d = rd_uv(r), sid = prev + d;
				if ((k && d == 0) || sid >= x->n_series)
					return ERR_CORRUPT;
				x->plist[total_list++] = (uint32_t)sid;
				prev = sid;
			}
		}
		total_vals += pn->n_vals;
	}
	return r->bad ? ERR_CORRUPT : 0;
}

int store__bindex_decode(const uint8_t *p, size_t len, const struct bmeta *m,
			 struct bindex *out, struct err_msg *msg)
{
	struct rd r = { p, p + len, 0 };
	struct bindex x;
	struct arena *a;
	int rc;

	memset(&x, 0, sizeof(x));
	a = arena_for(len, 48);
	if (!a)
		return ERR_NOMEM;
	rc = decode_strings(&r, a, &x);
	if (!rc && !r.bad)
		rc = decode_series(&r, a, m, &x);
	if (!rc && !r.bad)
		rc = decode_postings(&r, a, &x);
	if (!rc && (r.bad || r.p != r.end))
		rc = ERR_CORRUPT;
	if (rc) {
		arena_free(a);
		return rc == ERR_NOMEM ? rc : err_set(msg, ERR_CORRUPT, "block index: malformed");
	}
	x.mem = a;
	x.bytes = a->used + sizeof(*a);
	*out = x;
	return 0;
}

/* ---- symbol sections ------------------------------------------------------------ */

void store__bsyms_release(struct bsyms *s)
{
	arena_free(s->mem);
	memset(s, 0, sizeof(*s));
}

static int syms_strings(struct rd *r, struct arena *a, struct bsyms *s)
{
	uint32_t n = (uint32_t)rd_count(r, STORE_MAX_SYMBOLS, 2);
	uint64_t total = 0;
	uint32_t *len;
	const uint8_t *b;

	s->n[SYM_STRING] = n;
	s->str = arena_alloc(a, ((size_t)n + 1) * sizeof(*s->str));
	len = arena_alloc(a, ((size_t)n + 1) * sizeof(*len));
	if (!s->str || !len)
		return ERR_NOMEM;
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		uint64_t l = rd_uv(r);
		if (l == 0 || l > STORE_MAX_STRING)
			return ERR_CORRUPT;
		len[i] = (uint32_t)l;
		total += l;
	}
	b = rd_bytes(r, total);
	if (!b)
		return ERR_CORRUPT;
	for (uint32_t i = 0; i < n; i++) {
		char *c = arena_strndup(a, (const char *)b, len[i]);
		if (!c)
			return ERR_NOMEM;
		s->str[i].s = c;
		s->str[i].len = len[i];
		b += len[i];
	}
	return 0;
}

static int syms_mappings(struct rd *r, struct arena *a, struct bsyms *s)
{
	uint32_t n = (uint32_t)rd_count(r, STORE_MAX_SYMBOLS, 6), ns = s->n[SYM_STRING];

	s->n[SYM_MAPPING] = n;
	s->map = arena_calloc(a, (size_t)n + 1, sizeof(*s->map));
	if (!s->map)
		return ERR_NOMEM;
	for (uint32_t i = 0; i < n; i++)
		s->map[i].start = rd_uv(r);
	for (uint32_t i = 0; i < n; i++)
		s->map[i].limit = s->map[i].start + rd_uv(r);
	for (uint32_t i = 0; i < n; i++)
		s->map[i].offset = rd_uv(r);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = rd_uv(r);
		if (v > ns)
			return ERR_CORRUPT;
		s->map[i].filename = (uint32_t)v;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = rd_uv(r);
		if (v > ns)
			return ERR_CORRUPT;
		s->map[i].build_id = (uint32_t)v;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = rd_uv(r);
		if (v > UINT32_MAX)
			return ERR_CORRUPT;
		s->map[i].flags = (uint32_t)v;
	}
	return r->bad ? ERR_CORRUPT : 0;
}

static int syms_functions(struct rd *r, struct arena *a, struct bsyms *s)
{
	uint32_t n = (uint32_t)rd_count(r, STORE_MAX_SYMBOLS, 4), ns = s->n[SYM_STRING];
	uint64_t prev = 0;

	s->n[SYM_FUNCTION] = n;
	s->fn = arena_calloc(a, (size_t)n + 1, sizeof(*s->fn));
	if (!s->fn)
		return ERR_NOMEM;
	/* Functions are sorted by name, so the name ids are delta-coded. */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = prev + (uint64_t)rd_sv(r);
		if (v > ns)
			return ERR_CORRUPT;
		s->fn[i].name = (uint32_t)v;
		prev = v;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = rd_uv(r);
		if (v > ns)
			return ERR_CORRUPT;
		s->fn[i].system_name = (uint32_t)v;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = rd_uv(r);
		if (v > ns)
			return ERR_CORRUPT;
		s->fn[i].filename = (uint32_t)v;
	}
	for (uint32_t i = 0; i < n; i++)
		s->fn[i].start_line = rd_sv(r);
	return r->bad ? ERR_CORRUPT : 0;
}

static int syms_locations(struct rd *r, struct arena *a, struct bsyms *s)
{
	uint32_t n = (uint32_t)rd_count(r, STORE_MAX_SYMBOLS, 3);
	uint64_t total = 0, prev_map = 0, prev_addr = 0;
	struct store_line *lines;

	s->n[SYM_LOCATION] = n;
	s->loc = arena_calloc(a, (size_t)n + 1, sizeof(*s->loc));
	if (!s->loc)
		return ERR_NOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t m = prev_map + (uint64_t)rd_sv(r);
		if (m > s->n[SYM_MAPPING])
			return ERR_CORRUPT;
		if (m != prev_map)
			prev_addr = 0;
		s->loc[i].mapping_id = (uint32_t)m;
		prev_map = m;
		/* Addresses ascend within a mapping: deltas from the previous one. */
		s->loc[i].address = prev_addr + (uint64_t)rd_sv(r);
		prev_addr = s->loc[i].address;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t l = rd_uv(r);
		if (l > STORE_MAX_LINES)
			return ERR_CORRUPT;
		s->loc[i].n_lines = (uint32_t)l;
		total += l;
	}
	if (r->bad || total > (uint64_t)(r->end - r->p) / 3)
		return ERR_CORRUPT;
	lines = arena_alloc(a, (total + 1) * sizeof(*lines));
	if (!lines)
		return ERR_NOMEM;
	for (uint64_t i = 0; i < total; i++) {
		uint64_t f = rd_uv(r);
		if (f > s->n[SYM_FUNCTION])
			return ERR_CORRUPT;
		lines[i].function_id = (uint32_t)f;
	}
	for (uint64_t i = 0; i < total; i++)
		lines[i].line = rd_sv(r);
	for (uint64_t i = 0; i < total; i++)
		lines[i].column = rd_sv(r);
	for (uint32_t i = 0; i < n; i++) {
		s->loc[i].lines = s->loc[i].n_lines ? lines : NULL;
		lines += s->loc[i].n_lines;
	}
	return r->bad ? ERR_CORRUPT : 0;
}

static int syms_stacks(struct rd *r, struct arena *a, struct bsyms *s)
{
	uint32_t n = (uint32_t)rd_count(r, STORE_MAX_SYMBOLS, 2);

	s->n[SYM_STACK] = n;
	s->stk = arena_alloc(a, ((size_t)n + 1) * sizeof(*s->stk));
	if (!s->stk)
		return ERR_NOMEM;
	/* Parents as the distance back from the node: 1 for a node right after its parent. */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t d = rd_uv(r), id = (uint64_t)i + 1;
		if (d == 0 || d > id)
			return ERR_CORRUPT;
		s->stk[i].parent = (uint32_t)(id - d);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t l = rd_uv(r);
		if (l == 0 || l > s->n[SYM_LOCATION])
			return ERR_CORRUPT;
		s->stk[i].location = (uint32_t)l;
	}
	return r->bad ? ERR_CORRUPT : 0;
}

int store__bsyms_decode(const uint8_t *p, size_t len, struct bsyms *out, struct err_msg *msg)
{
	struct rd r = { p, p + len, 0 };
	struct bsyms s;
	struct arena *a;
	int rc;

	memset(&s, 0, sizeof(s));
	a = arena_for(len, 48);
	if (!a)
		return ERR_NOMEM;
	rc = syms_strings(&r, a, &s);
	if (!rc && !r.bad)
		rc = syms_mappings(&r, a, &s);
	if (!rc && !r.bad)
		rc = syms_functions(&r, a, &s);
	if (!rc && !r.bad)
		rc = syms_locations(&r, a, &s);
	if (!rc && !r.bad)
		rc = syms_stacks(&r, a, &s);
	if (!rc && (r.bad || r.p != r.end))
		rc = ERR_CORRUPT;
	if (rc) {
		arena_free(a);
		return rc == ERR_NOMEM ? rc : err_set(msg, ERR_CORRUPT, "block symbols: malformed");
	}
	s.mem = a;
	s.bytes = a->used + sizeof(*a);
	*out = s;
	return 0;
}

/* ---- symbol section encoding ------------------------------------------------------ */

int store__bsyms_encode(const struct bsyms *s, struct buf *out)
{
	uint64_t prev = 0, prev_addr = 0, total_lines = 0;
	int rc = buf_put_uvarint(out, s->n[SYM_STRING]);

	for (uint32_t i = 0; i < s->n[SYM_STRING] && !rc; i++)
		rc = buf_put_uvarint(out, s->str[i].len);
	for (uint32_t i = 0; i < s->n[SYM_STRING] && !rc; i++)
		rc = buf_append(out, s->str[i].s, s->str[i].len);

	if (!rc)
		rc = buf_put_uvarint(out, s->n[SYM_MAPPING]);
	for (uint32_t i = 0; i < s->n[SYM_MAPPING] && !rc; i++)
		rc = buf_put_uvarint(out, s->map[i].start);
	for (uint32_t i = 0; i < s->n[SYM_MAPPING] && !rc; i++)
		rc = buf_put_uvarint(out, s->map[i].limit - s->map[i].start);
	for (uint32_t i = 0; i < s->n[SYM_MAPPING] && !rc; i++)
		rc = buf_put_uvarint(out, s->map[i].offset);
	for (uint32_t i = 0; i < s->n[SYM_MAPPING] && !rc; i++)
		rc = buf_put_uvarint(out, s->map[i].filename);
	for (uint32_t i = 0; i < s->n[SYM_MAPPING] && !rc; i++)
		rc = buf_put_uvarint(out, s->map[i].build_id);
	for (uint32_t i = 0; i < s->n[SYM_MAPPING] && !rc; i++)
		rc = buf_put_uvarint(out, s->map[i].flags);

	if (!rc)
		rc = buf_put_uvarint(out, s->n[SYM_FUNCTION]);
	for (uint32_t i = 0; i < s->n[SYM_FUNCTION] && !rc; i++) {
		rc = buf_put_svarint(out, (int64_t)(s->fn[i].name - prev));
		prev = s->fn[i].name;
	}
	for (uint32_t i = 0; i < s->n[SYM_FUNCTION] && !rc; i++)
		rc = buf_put_uvarint(out, s->fn[i].system_name);
	for (uint32_t i = 0; i < s->n[SYM_FUNCTION] && !rc; i++)
		rc = buf_put_uvarint(out, s->fn[i].filename);
	for (uint32_t i = 0; i < s->n[SYM_FUNCTION] && !rc; i++)
		rc = buf_put_svarint(out, s->fn[i].start_line);

	if (!rc)
		rc = buf_put_uvarint(out, s->n[SYM_LOCATION]);
	prev = 0;
	for (uint32_t i = 0; i < s->n[SYM_LOCATION] && !rc; i++) {
		const struct sym_location *l = &s->loc[i];
		if (l->mapping_id != prev)
			prev_addr = 0;
		rc = buf_put_svarint(out, (int64_t)(l->mapping_id - prev));
		if (!rc)
			rc = buf_put_svarint(out, (int64_t)(l->address - prev_addr));
		prev = l->mapping_id;
		prev_addr = l->address;
	}
	for (uint32_t i = 0; i < s->n[SYM_LOCATION] && !rc; i++) {
		rc = buf_put_uvarint(out, s->loc[i].n_lines);
		total_lines += s->loc[i].n_lines;
	}
	for (uint32_t i = 0; i < s->n[SYM_LOCATION] && !rc; i++)
		for (uint32_t j = 0; j < s->loc[i].n_lines && !rc; j++)
			rc = buf_put_uvarint(out, s->loc[i].lines[j].function_id);
	for (uint32_t i = 0; i < s->n[SYM_LOCATION] && !rc; i++)
		for (uint32_t j = 0; j < s->loc[i].n_lines && !rc; j++)
			rc = buf_put_svarint(out, s->loc[i].lines[j].line);
	for (uint32_t i = 0; i < s->n[SYM_LOCATION] && !rc; i++)
		for (uint32_t j = 0; j < s->loc[i].n_lines && !rc; j++)
			rc = buf_put_svarint(out, s->loc[i].lines[j].column);
	(void)total_lines;

	if (!rc)
		rc = buf_put_uvarint(out, s->n[SYM_STACK]);
	for (uint32_t i = 0; i < s->n[SYM_STACK] && !rc; i++)
		rc = buf_put_uvarint(out, (uint64_t)i + 1 - s->stk[i].parent);
	for (uint32_t i = 0; i < s->n[SYM_STACK] && !rc; i++)
		rc = buf_put_uvarint(out, s->stk[i].location);
	return rc;
}

/* ---- index section encoding -------------------------------------------------------- */

int store__bindex_encode(const struct bindex *x, int64_t range_start, struct buf *out)
{
	int rc = buf_put_uvarint(out, x->n_str);

	for (uint32_t i = 0; i < x->n_str && !rc; i++) {
		rc = buf_put_uvarint(out, x->str_len[i]);
		if (!rc)
			rc = buf_append(out, x->str[i], x->str_len[i]);
	}
	if (!rc)
		rc = buf_put_uvarint(out, x->n_series);
	for (uint32_t i = 0; i < x->n_series && !rc; i++) {
		const struct bser *s = &x->series[i];
		int64_t prev_max = range_start;

		rc = buf_put_uvarint(out, s->svc);
		if (!rc)
			rc = buf_put_uvarint(out, s->n_labels);
		for (uint32_t j = 0; j < 2 * s->n_labels && !rc; j++)
			rc = buf_put_uvarint(out, x->labels[2 * (size_t)s->label0 + j]);
		if (!rc)
			rc = buf_put_uvarint(out, s->n_pages);
		for (uint32_t j = 0; j < s->n_pages && !rc; j++) {
			const struct bpage *pg = &x->pages[s->page0 + j];
			uint8_t crc[4];

			rc = buf_put_svarint(out, pg->min_time - prev_max);
			if (!rc)
				rc = buf_put_uvarint(out, (uint64_t)(pg->max_time - pg->min_time));
			if (!rc)
				rc = buf_put_uvarint(out, pg->len);
			le32_put(crc, pg->crc);
			if (!rc)
				rc = buf_append(out, crc, 4);
			if (!rc)
				rc = buf_put_uvarint(out, pg->profiles);
			if (!rc)
				rc = buf_put_uvarint(out, pg->samples);
			prev_max = pg->max_time;
		}
	}
	if (!rc)
		rc = buf_put_uvarint(out, x->n_pnames);
	for (uint32_t i = 0; i < x->n_pnames && !rc; i++) {
		const struct bpost_name *pn = &x->pnames[i];

		rc = buf_put_uvarint(out, pn->name);
		if (!rc)
			rc = buf_put_uvarint(out, pn->n_vals);
		for (uint32_t j = 0; j < pn->n_vals && !rc; j++) {
			const struct bpost_val *pv = &x->pvals[pn->val0 + j];
			uint32_t prev = 0;

			rc = buf_put_uvarint(out, pv->value);
			if (!rc)
				rc = buf_put_uvarint(out, pv->n);
			for (uint32_t k = 0; k < pv->n && !rc; k++) {
				rc = buf_put_uvarint(out, x->plist[pv->list0 + k] - prev);
				prev = x->plist[pv->list0 + k];
			}
		}
	}
	return rc;
}
