/*
 * samples.c - columnar sample chunks: adding profiles to a txn, the block
 * codec, the concatenating merge operator, the compaction filter that
 * recodes a chunk into one columnar block, and time-range reads.  Layout:
 * storage_int.h, section 6.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/compress.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/uuid.h"
#include "base/varint.h"

#define COMPRESS_MIN 64 /* smaller payloads are stored raw */

/* ---- block codec ----------------------------------------------------------- */

/* Whether some pair of the profiles has a span id: the block is then 0xC2. */
static int has_spans(const struct chunk_profile *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; p[i].spans && j < p[i].n; j++)
			if (p[i].spans[j])
				return 1;
	return 0;
}

/* Appends the spans column (section 6, "Span ids"). */
static int put_spans(struct buf *raw, const struct chunk_profile *p, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		size_t k = 0, next = 0;

		for (size_t j = 0; p[i].spans && j < p[i].n; j++)
			k += p[i].spans[j] != 0;
		rc = buf_reserve(raw, VARINT_MAX + k * (VARINT_MAX + 8));
		if (rc)
			break;
		raw->len += varint_put((uint8_t *)raw->data + raw->len, k);
		for (size_t j = 0; k && j < p[i].n; j++) {
			uint8_t *w;

			if (!p[i].spans[j])
				continue;
			raw->len += varint_put((uint8_t *)raw->data + raw->len, j - next);
			next = j + 1;
			w = (uint8_t *)raw->data + raw->len;
			for (int b = 0; b < 8; b++)
				w[b] = (uint8_t)(p[i].spans[j] >> (8 * b));
			raw->len += 8;
		}
	}
	return rc;
}

/* Whether some profile has an id: the block is then 0xC3 or 0xC4. */
static int has_ids(const struct chunk_profile *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!uuid_is_nil(p[i].meta.id))
			return 1;
	return 0;
}

/* Appends the profile ids column (section 6, "Profile ids"). */
static int put_ids(struct buf *raw, const struct chunk_profile *p, size_t n)
{
	size_t k = 0, next = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		k += !uuid_is_nil(p[i].meta.id);
	rc = buf_reserve(raw, VARINT_MAX + k * (VARINT_MAX + UUID_BYTES));
	if (rc)
		return rc;
	raw->len += varint_put((uint8_t *)raw->data + raw->len, k);
	for (size_t i = 0; i < n; i++) {
		if (uuid_is_nil(p[i].meta.id))
			continue;
		raw->len += varint_put((uint8_t *)raw->data + raw->len, i - next);
		next = i + 1;
		memcpy(raw->data + raw->len, p[i].meta.id, UUID_BYTES);
		raw->len += UUID_BYTES;
	}
	return 0;
}

/* The magic of a block: whether it has the spans and the ids columns. */
static uint8_t block_magic(int spans, int ids)
{
	if (ids)
		return spans ? CHUNK_MAGIC_IDS_SPANS : CHUNK_MAGIC_IDS;
	return spans ? CHUNK_MAGIC_SPANS : CHUNK_MAGIC;
}

int store__chunk_encode(uint32_t part, const struct chunk_profile *p, size_t n, int zlevel,
			struct buf *out)
{
	struct buf raw;
	uint64_t prev = 0;
	int rc, spans, ids;

	buf_init(&raw, STORE_MAX_CHUNK_RAW);
	rc = buf_put_uvarint(&raw, part);
	if (!rc)
		rc = buf_put_uvarint(&raw, n);
	for (size_t i = 0; i < n && !rc; i++) {
		uint64_t t = (uint64_t)p[i].meta.time_ns;
		rc = buf_put_svarint(&raw, (int64_t)(t - prev));
		prev = t;
		if (!rc)
			rc = buf_put_svarint(&raw, p[i].meta.duration_ns);
		if (!rc)
			rc = buf_put_svarint(&raw, p[i].meta.period);
		if (!rc)
			rc = buf_put_uvarint(&raw, p[i].n);
	}
	for (size_t i = 0; i < n && !rc; i++) {
		uint32_t last = 0;
		rc = buf_reserve(&raw, p[i].n * 5);
		for (size_t j = 0; j < p[i].n && !rc; j++) {
			raw.len += varint_put((uint8_t *)raw.data + raw.len, p[i].ids[j] - last);
			last = p[i].ids[j];
		}
	}
	for (size_t i = 0; i < n && !rc; i++) {
		rc = buf_reserve(&raw, p[i].n * VARINT_MAX);
		for (size_t j = 0; j < p[i].n && !rc; j++)
			raw.len += varint_put((uint8_t *)raw.data + raw.len,
					      zigzag_encode(p[i].vals[j]));
	}
	spans = has_spans(p, n);
	if (spans && !rc)
		rc = put_spans(&raw, p, n);
	ids = has_ids(p, n);
	if (ids && !rc)
		rc = put_ids(&raw, p, n);
	if (rc)
		goto out;
	{
		uint8_t head[2 + 2 * VARINT_MAX];
		size_t hlen = 2, at = out->len;
		struct buf z;

		buf_init(&z, STORE_MAX_CHUNK_ZSTD);
		head[0] = block_magic(spans, ids);
		head[1] = 0;
		if (zlevel > 0 && raw.len >= COMPRESS_MIN &&
		    zstd_compress_buf(raw.data, raw.len, zlevel, &z) == 0 &&
		    z.len < raw.len)
			head[1] = 1;
		hlen += varint_put(head + hlen, head[1] ? z.len : raw.len);
		hlen += varint_put(head + hlen, raw.len);
		rc = buf_append(out, head, hlen);
		if (!rc)
			rc = head[1] ? buf_append(out, z.data, z.len) : buf_append(out, raw.data, raw.len);
		if (rc)
			out->len = at;
		buf_release(&z);
	}
out:
	buf_release(&raw);
	return rc;
}

void store__chunk_init(struct chunk *c)
{
	memset(c, 0, sizeof(*c));
	buf_init(&c->raw, STORE_MAX_CHUNK_RAW);
}

void store__chunk_release(struct chunk *c)
{
	free(c->profs);
	free(c->ids);
	free(c->vals);
	free(c->spans);
	buf_release(&c->raw);
	memset(c, 0, sizeof(*c));
}

/*
 * Grows the parallel arrays *ids and *vals, both of *cap items, to hold
 * `need`.  After a failure *cap is still what both hold (ids may have grown
 * alone, which is harmless).
 */
static int grow_pairs(uint32_t **ids, int64_t **vals, size_t *cap, size_t need, size_t max)
{
	size_t ci = *cap, cv = *cap;
	int rc;

	if (need <= *cap)
		return 0;
	rc = GROW(*ids, ci, need, max, NULL);
	if (!rc)
		rc = GROW(*vals, cv, need, max, NULL);
	if (!rc)
		*cap = cv; /* == ci: the same growth from the same capacity */
	return rc;
}

/*
 * Makes the span array *spans (NULL until a pair with a span id is seen)
 * hold `need` ids, of which [have, need) are set to 0.
 */
static int grow_spans(uint64_t **spans, size_t *cap, size_t have, size_t need, size_t max)
{
	int rc;

	if (!*spans)
		*cap = 0;
	rc = GROW(*spans, *cap, need ? need : 1, max, NULL);
	if (!rc && need > have)
		memset(*spans + have, 0, (need - have) * sizeof(**spans));
	return rc;
}

static int chunk_grow(struct chunk *c, size_t profs, size_t samples)
{
	int rc = GROW(c->profs, c->alloc, c->n + profs, STORE_MAX_CHUNK_PROFILES, NULL);

	if (!rc)
		rc = grow_pairs(&c->ids, &c->vals, &c->alloc_samples, c->n_samples + samples,
				STORE_MAX_CHUNK_SAMPLES);
	if (!rc && c->spans)
		rc = grow_spans(&c->spans, &c->alloc_spans, c->n_samples, c->n_samples + samples,
				STORE_MAX_CHUNK_SAMPLES);
	return rc;
}

/*
 * Decodes the spans column of the profiles [first, first + n) of c (their
 * pairs from `base` on), checking that pairs ascend by (stack id, span id).
 */
static int decode_spans(struct chunk *c, size_t first, uint64_t n, size_t base,
			const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	size_t at = base, k;
	int rc = grow_spans(&c->spans, &c->alloc_spans, c->spans ? base : 0, c->n_samples,
			    STORE_MAX_CHUNK_SAMPLES);

	if (rc)
		return rc;
	for (uint64_t i = 0; i < n; i++) {
		const struct chunk_profile *cp = &c->profs[first + i];
		uint64_t cnt, d, next = 0;

		if (!(k = varint_get(p, end, &cnt)) || cnt > cp->n)
			return ERR_CORRUPT;
		p += k;
		for (uint64_t j = 0; j < cnt; j++) {
			uint64_t span = 0;

			if (!(k = varint_get(p, end, &d)) || d >= cp->n - next ||
			    (size_t)(end - p) < k + 8)
				return ERR_CORRUPT;
			p += k;
			next += d;
			for (int b = 0; b < 8; b++)
				span |= (uint64_t)p[b] << (8 * b);
			p += 8;
			if (!span)
				return ERR_CORRUPT;
			c->spans[at + next] = span;
			next++;
		}
		/* Pairs are unique by (stack id, span id), in that order. */
		for (size_t j = 1; j < cp->n; j++)
			if (c->ids[at + j] == c->ids[at + j - 1] &&
			    c->spans[at + j] <= c->spans[at + j - 1])
				return ERR_CORRUPT;
		at += cp->n;
	}
	*pp = p;
	return 0;
}

/*
 * Decodes the profile ids column of the profiles [first, first + n) of c:
 * ids ascend by index, none is nil.
 */
static int decode_ids(struct chunk *c, size_t first, uint64_t n, const uint8_t **pp,
		      const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint64_t k, d, next = 0;
	size_t len;

	if (!(len = varint_get(p, end, &k)) || k > n)
		return ERR_CORRUPT;
	p += len;
	for (uint64_t j = 0; j < k; j++) {
		uint8_t *id;

		if (!(len = varint_get(p, end, &d)) || d >= n - next ||
		    (size_t)(end - p) < len + UUID_BYTES)
			return ERR_CORRUPT;
		p += len;
		next += d;
		id = c->profs[first + next].meta.id;
		memcpy(id, p, UUID_BYTES);
		p += UUID_BYTES;
		if (uuid_is_nil(id))
			return ERR_CORRUPT;
		next++;
	}
	*pp = p;
	return 0;
}

static int magic_spans(int magic)
{
	return magic == CHUNK_MAGIC_SPANS || magic == CHUNK_MAGIC_IDS_SPANS;
}

/*
 * varint_get for the sample columns, which are most of a read's decoding:
 * a one-byte varint at once, and with VARINT_MAX bytes left a longer one
 * without a bound check per byte.  Accepts and refuses exactly what
 * varint_get does.
 */
static inline size_t sample_varint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
	uint64_t v;

	if (p < end && p[0] < 0x80) {
		*out = p[0];
		return 1;
	}
	if (end - p < VARINT_MAX)
		return varint_get(p, end, out);
	v = p[0] & 0x7f;
	for (unsigned n = 1; n < VARINT_MAX - 1; n++) {
		v |= (uint64_t)(p[n] & 0x7f) << (7 * n);
		if (!(p[n] & 0x80)) {
			*out = v;
			return n + 1;
		}
	}
	if (p[VARINT_MAX - 1] > 1)
		return 0;
	*out = v | (uint64_t)p[VARINT_MAX - 1] << 63;
	return VARINT_MAX;
}

/* Decodes one payload, appending its profiles; ids/vals hold offsets until the end. */
static int decode_payload(struct chunk *c, int magic, const uint8_t *p, const uint8_t *end)
{
	uint64_t part, n, prev = 0, total = 0;
	size_t k, first = c->n, base;
	int rc;

	if (!(k = varint_get(p, end, &part)) || part == 0 || part > UINT32_MAX)
		return ERR_CORRUPT;
	p += k;
	if (!(k = varint_get(p, end, &n)) || n > (uint64_t)(end - p) / 4)
		return ERR_CORRUPT;
	p += k;
	if (c->part && c->part != part)
		return ERR_CORRUPT; /* one chunk value is of one partition */
	c->part = (uint32_t)part;
	rc = chunk_grow(c, (size_t)n, 0);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < n; i++) {
		struct chunk_profile *cp = &c->profs[c->n + i];
		uint64_t u[4];
		for (int j = 0; j < 4; j++) {
			if (!(k = varint_get(p, end, &u[j])))
				return ERR_CORRUPT;
			p += k;
		}
		prev += (uint64_t)zigzag_decode(u[0]);
		cp->part = (uint32_t)part;
		cp->meta.time_ns = (int64_t)prev;
		cp->meta.duration_ns = zigzag_decode(u[1]);
		cp->meta.period = zigzag_decode(u[2]);
		memset(cp->meta.id, 0, sizeof(cp->meta.id));
		/* Every pair takes at least two bytes (an id and a value). */
		if (u[3] > (uint64_t)(end - p) / 2 || total + u[3] > (uint64_t)(end - p) / 2)
			return ERR_CORRUPT;
		cp->n = (size_t)u[3];
		total += u[3];
	}
	rc = chunk_grow(c, 0, (size_t)total);
	if (rc)
		return rc;
	base = c->n_samples;
	for (uint64_t i = 0; i < n; i++) {
		struct chunk_profile *cp = &c->profs[first + i];
		uint64_t last = 0, d;
		cp->ids = (const uint32_t *)(uintptr_t)c->n_samples; /* offset for now */
		for (size_t j = 0; j < cp->n; j++) {
			if (!(k = sample_varint(p, end, &d)) ||
			    (j && d == 0 && !magic_spans(magic)) || (last += d) > UINT32_MAX)
				return ERR_CORRUPT;
			p += k;
			c->ids[c->n_samples++] = (uint32_t)last;
		}
	}
	for (size_t i = base; i < c->n_samples; i++) {
		uint64_t v;
		if (!(k = sample_varint(p, end, &v)))
			return ERR_CORRUPT;
		p += k;
		c->vals[i] = zigzag_decode(v);
	}
	if (magic_spans(magic)) {
		rc = decode_spans(c, first, n, base, &p, end);
		if (rc)
			return rc;
	}
	if (magic == CHUNK_MAGIC_IDS || magic == CHUNK_MAGIC_IDS_SPANS) {
		rc = decode_ids(c, first, n, &p, end);
		if (rc)
			return rc;
	}
	if (p != end)
		return ERR_CORRUPT;
	c->n += (size_t)n;
	return 0;
}

static int prof_cmp(const void *a, const void *b)
{
	const struct chunk_profile *x = a, *y = b;

	if (x->meta.time_ns != y->meta.time_ns)
		return x->meta.time_ns < y->meta.time_ns ? -1 : 1;
	/* Equal times keep their order: ids hold the (increasing) offsets. */
	return (uintptr_t)x->ids < (uintptr_t)y->ids ? -1 : (uintptr_t)x->ids > (uintptr_t)y->ids;
}

/* Commits usually add blocks in time order, which needs no sort at all. */
static int time_sorted(const struct chunk *c)
{
	for (size_t i = 1; i < c->n; i++)
		if (c->profs[i].meta.time_ns < c->profs[i - 1].meta.time_ns)
			return 0;
	return 1;
}

/* Parses the block at *p: its codec and payload bounds. */
static int block_header(const uint8_t **p, const uint8_t *end, int *magic, int *codec,
			const uint8_t **payload, uint64_t *stored, uint64_t *raw)
{
	const uint8_t *q = *p;
	size_t k;

	if (end - q < 4 || q[0] < CHUNK_MAGIC || q[0] > CHUNK_MAGIC_IDS_SPANS || q[1] > 1)
		return ERR_CORRUPT;
	*magic = q[0];
	*codec = q[1];
	q += 2;
	if (!(k = varint_get(q, end, stored)))
		return ERR_CORRUPT;
	q += k;
	if (!(k = varint_get(q, end, raw)))
		return ERR_CORRUPT;
	q += k;
	if (*stored > (uint64_t)(end - q) || *raw > STORE_MAX_CHUNK_RAW ||
	    (*codec == 0 && *stored != *raw))
		return ERR_CORRUPT;
	*payload = q;
	*p = q + *stored;
	return 0;
}

int store__chunk_decode(struct chunk *c, const void *v, size_t len, struct err_msg *msg)
{
	c->n = 0;
	c->n_samples = 0;
	return store__chunk_decode_more(c, v, len, msg);
}

int store__chunk_decode_more(struct chunk *c, const void *v, size_t len, struct err_msg *msg)
{
	const uint8_t *p = v, *end = p + len;
	size_t blocks = 0, first = c->n;
	int rc;

	if (first) {
		/* Offsets again until the end, as decode_payload leaves them. */
		for (size_t i = 0; i < first; i++)
			c->profs[i].ids = (const uint32_t *)(uintptr_t)(c->profs[i].ids - c->ids);
		blocks = 1;
	}
	c->part = 0;
	if (len == 0)
		return err_set(msg, ERR_CORRUPT, "sample chunk is empty");
	while (p < end) {
		const uint8_t *payload;
		uint64_t stored, raw;
		int codec, magic;

		rc = block_header(&p, end, &magic, &codec, &payload, &stored, &raw);
		if (rc)
			return err_set(msg, rc, "sample chunk: bad block header");
		if (codec == 1) {
			buf_reset(&c->raw);
			rc = zstd_decompress_capped(payload, (size_t)stored, (size_t)raw, &c->raw,
						    msg);
			if (rc || c->raw.len != raw)
				return err_set(msg, ERR_CORRUPT, "sample chunk: bad zstd block");
			payload = (const uint8_t *)c->raw.data;
		}
		rc = decode_payload(c, magic, payload, payload + raw);
		if (rc)
			return err_set(msg, rc, "sample chunk: bad block payload");
		blocks++;
	}
	/* Blocks are each sorted by time; several blocks need a merge.  Until
	 * the sort, ids holds each profile's offset, which keeps equal times
	 * in insertion order. */
	if (blocks > 1 && !time_sorted(c))
		qsort(c->profs, c->n, sizeof(*c->profs), prof_cmp);
	(void)first;
	for (size_t i = 0; i < c->n; i++) {
		size_t off = (size_t)(uintptr_t)c->profs[i].ids;
		c->profs[i].ids = c->ids + off;
		c->profs[i].vals = c->vals + off;
		c->profs[i].spans = c->spans ? c->spans + off : NULL;
	}
	return 0;
}

/* ---- merge operator ---------------------------------------------------------- */

static char *concat(const char *existing, size_t existing_len, const char *const *ops,
		    const size_t *op_lens, int n_ops, size_t *new_len)
{
	size_t total = existing ? existing_len : 0;
	char *out, *w;

	for (int i = 0; i < n_ops; i++)
		total += op_lens[i];
	out = malloc(total ? total : 1);
	if (!out)
		return NULL;
	w = out;
	if (existing) {
		memcpy(w, existing, existing_len);
		w += existing_len;
	}
	for (int i = 0; i < n_ops; i++) {
		memcpy(w, ops[i], op_lens[i]);
		w += op_lens[i];
	}
	*new_len = total;
	return out;
}

/*
 * The full merge only concatenates: it runs on every read of a window whose
 * operands are not compacted yet, so it must not decode, sort or compress.
 * Re-encoding into one block is the compaction filter's job (below).
 */
static char *chunk_full(void *state, const char *key, size_t key_len, const char *existing,
			size_t existing_len, const char *const *ops, const size_t *op_lens,
			int n_ops, unsigned char *success, size_t *new_len)
{
	char *out;

	(void)state, (void)key, (void)key_len;
	out = concat(existing, existing_len, ops, op_lens, n_ops, new_len);
	*success = out != NULL;
	return out;
}

static char *chunk_partial(void *state, const char *key, size_t key_len,
			   const char *const *ops, const size_t *op_lens, int n_ops,
			   unsigned char *success, size_t *new_len)
{
	char *out;

	(void)state, (void)key, (void)key_len;
	out = concat(NULL, 0, ops, op_lens, n_ops, new_len);
	*success = out != NULL;
	return out;
}

static const char *chunk_name(void *state)
{
	(void)state;
	return "unhex.chunk.v1";
}

rocksdb_mergeoperator_t *store__chunk_merge_operator(void)
{
	return rocksdb_mergeoperator_create(NULL, store__stateless_free, chunk_full,
					    chunk_partial, store__merge_free_value, chunk_name);
}

/* ---- compaction filter: one columnar block per chunk -------------------------- */

/*
 * Compaction is where a chunk's blocks become one: the filter sees every
 * plain value a compaction reads (the output of an earlier merge included),
 * and rewrites a chunk of several blocks, or of one raw block worth
 * compressing, as a single zstd block sorted by time.  RocksDB copies the new
 * value at once and never frees it, so it lives in the filter's own buffer,
 * which one (sub)compaction uses from one thread and frees at its end.
 */
#define RECODE_ZSTD_LEVEL 3

struct recoder {
	struct chunk c;
	struct buf out;
};

static int needs_recode(const char *v, size_t len)
{
	const uint8_t *p = (const uint8_t *)v, *end = p + len, *payload;
	uint64_t stored, raw;
	int codec, magic;

	if (block_header(&p, end, &magic, &codec, &payload, &stored, &raw))
		return 0; /* corrupt: kept as it is, readers report it */
	if (p != end)
		return 1;
	return codec == 0 && raw >= COMPRESS_MIN;
}

static unsigned char chunk_filter(void *state, int level, const char *key, size_t key_len,
				  const char *v, size_t vlen, char **new_value,
				  size_t *new_len, unsigned char *changed)
{
	struct recoder *r = state;

	(void)level, (void)key, (void)key_len;
	*changed = 0;
	if (!needs_recode(v, vlen))
		return 0;
	buf_reset(&r->out);
	if (store__chunk_decode(&r->c, v, vlen, NULL) || r->c.n == 0 ||
	    store__chunk_encode(r->c.part, r->c.profs, r->c.n, RECODE_ZSTD_LEVEL, &r->out))
		return 0; /* undecodable bytes stay as they are */
	*new_value = r->out.data;
	*new_len = r->out.len;
	*changed = 1;
	return 0;
}

static void recoder_free(void *state)
{
	struct recoder *r = state;

	store__chunk_release(&r->c);
	buf_release(&r->out);
	free(r);
}

static const char *filter_name(void *state)
{
	(void)state;
	return "unhex.chunk-recode.v1";
}

static rocksdb_compactionfilter_t *filter_create(void *state,
						 rocksdb_compactionfiltercontext_t *ctx)
{
	struct recoder *r = calloc(1, sizeof(*r));

	(void)state, (void)ctx;
	if (!r)
		return NULL; /* RocksDB then compacts without a filter */
	store__chunk_init(&r->c);
	buf_init(&r->out, STORE_MAX_CHUNK_BLOCK);
	return rocksdb_compactionfilter_create(r, recoder_free, chunk_filter, filter_name);
}

static const char *factory_name(void *state)
{
	(void)state;
	return "unhex.chunk-recode-factory.v1";
}

rocksdb_compactionfilterfactory_t *store__chunk_filter_factory(void)
{
	return rocksdb_compactionfilterfactory_create(NULL, store__stateless_free, filter_create,
						      factory_name);
}

/* ---- writing ------------------------------------------------------------------ */

/*
 * LSD radix sort of pairs by stack id, one byte per pass, skipping the high
 * bytes that are zero in every id: a profile's stack ids are dense and
 * small, so this is usually two linear passes.  `tmp` holds 2 * n pairs;
 * returns where the sorted pairs are.
 */
static struct store__pair *radix_sort(struct store__pair *tmp, size_t n, uint32_t max_id)
{
	struct store__pair *a = tmp, *b = tmp + n;

	for (unsigned shift = 0; shift < 32 && (max_id >> shift); shift += 8) {
		size_t count[256] = { 0 }, pos = 0;

		for (size_t i = 0; i < n; i++)
			count[(a[i].id >> shift) & 0xff]++;
		for (int d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[(a[i].id >> shift) & 0xff]++] = a[i];
		{
			struct store__pair *t = a;
			a = b;
			b = t;
		}
	}
	return a;
}

/* Room for n more pairs; with `spans` (or once the txn has any) their span ids too. */
static int txn_reserve_samples(struct store_txn *tx, size_t n, int spans)
{
	int rc;

	if (n > STORE_MAX_TXN_SAMPLES)
		return ERR_TOO_LARGE;
	rc = grow_pairs(&tx->ids, &tx->vals, &tx->alloc_samples, tx->n_samples + n,
			STORE_MAX_TXN_SAMPLES);
	if (!rc && (spans || tx->spans))
		rc = grow_spans(&tx->spans, &tx->alloc_spans, tx->spans ? tx->n_samples : 0,
				tx->n_samples + n, STORE_MAX_TXN_SAMPLES);
	return rc;
}

static int spair_cmp(const void *a, const void *b)
{
	const struct store__span_pair *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->span < y->span ? -1 : x->span > y->span;
}

/* Profiles with span ids are the few of traced services, so a comparison sort does. */
size_t store__sort_span_pairs(uint32_t *ids, int64_t *vals, uint64_t *spans,
			      const uint32_t *in_ids, const int64_t *in_vals,
			      const uint64_t *in_spans, size_t n, struct store__span_pair *tmp)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		tmp[i].id = in_ids[i];
		tmp[i].span = in_spans[i];
		tmp[i].v = in_vals[i];
	}
	qsort(tmp, n, sizeof(*tmp), spair_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && ids[k - 1] == tmp[i].id && spans[k - 1] == tmp[i].span) {
			vals[k - 1] = (int64_t)((uint64_t)vals[k - 1] + (uint64_t)tmp[i].v);
			continue;
		}
		ids[k] = tmp[i].id;
		spans[k] = tmp[i].span;
		vals[k] = tmp[i].v;
		k++;
	}
	return k;
}

size_t store__sort_pairs(uint32_t *ids, int64_t *vals, const uint32_t *in_ids,
			 const int64_t *in_vals, size_t n, struct store__pair *tmp)
{
	size_t k = 0;
	uint32_t max_id = 0;
	int sorted = 1;

	for (size_t i = 1; i < n && sorted; i++)
		sorted = in_ids[i - 1] < in_ids[i];
	if (sorted) {
		memmove(ids, in_ids, n * sizeof(*ids)); /* the same arrays, maybe */
		memmove(vals, in_vals, n * sizeof(*vals));
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		tmp[i].id = in_ids[i];
		tmp[i].v = in_vals[i];
		if (in_ids[i] > max_id)
			max_id = in_ids[i];
	}
	tmp = radix_sort(tmp, n, max_id);
	for (size_t i = 0; i < n; i++) {
		if (k && ids[k - 1] == tmp[i].id) {
			vals[k - 1] = (int64_t)((uint64_t)vals[k - 1] + (uint64_t)tmp[i].v);
			continue;
		}
		ids[k] = tmp[i].id;
		vals[k] = tmp[i].v;
		k++;
	}
	return k;
}

int store_txn_profile(struct store_txn *tx, uint64_t series_id, uint32_t part,
		      const struct store_profile_meta *meta, const uint32_t *stack_ids,
		      const int64_t *values, size_t n)
{
	return store_txn_profile_spans(tx, series_id, part, meta, stack_ids, values, NULL, n);
}

int store_txn_profile_spans(struct store_txn *tx, uint64_t series_id, uint32_t part,
			    const struct store_profile_meta *meta, const uint32_t *stack_ids,
			    const int64_t *values, const uint64_t *spans, size_t n)
{
	struct txn_profile *tp;
	struct part *p;
	void *tmp = NULL;
	uint32_t n_stacks;
	int rc, with_spans = 0;

	if (!meta || (n && (!stack_ids || !values)))
		return ERR_INVALID;
	if (series_id == 0 || series_id >= tx->t->next_series || part == 0 ||
	    part >= tx->t->next_part)
		return ERR_INVALID;
	if (part < store__epoch_part_lo(tx->t))
		return ERR_INVALID; /* of an earlier epoch */
	rc = store__part_get(tx->st, tx->t, part, 1, &p, NULL);
	if (rc)
		return rc;
	n_stacks = p->tab[SYM_STACK].len;
	for (size_t i = 0; i < n; i++)
		if (stack_ids[i] > n_stacks)
			return ERR_INVALID;
	for (size_t i = 0; spans && i < n && !with_spans; i++)
		with_spans = spans[i] != 0;
	rc = GROW(tx->profs, tx->alloc_profs, tx->n_profs + 1, STORE_MAX_TXN_PROFILES, NULL);
	if (!rc)
		rc = txn_reserve_samples(tx, n, with_spans);
	if (rc)
		return rc;
	if (n > 1 || with_spans) {
		tmp = malloc(with_spans ? n * sizeof(struct store__span_pair) : 2 * n * sizeof(struct store__pair));
		if (!tmp)
			return ERR_NOMEM;
	}
	tp = &tx->profs[tx->n_profs++];
	tp->series = series_id;
	tp->window = floor_div(meta->time_ns, tx->st->window_ns);
	tp->meta = *meta;
	tp->part = part;
	tp->off = tx->n_samples;
	if (with_spans)
		tp->n = store__sort_span_pairs(tx->ids + tx->n_samples, tx->vals + tx->n_samples,
					tx->spans + tx->n_samples, stack_ids, values, spans, n, tmp);
	else
		tp->n = store__sort_pairs(tx->ids + tx->n_samples, tx->vals + tx->n_samples,
					  stack_ids, values, n, tmp);
	tx->n_samples += tp->n;
	free(tmp);
	return 0;
}

static int txn_prof_cmp(const void *a, const void *b)
{
	const struct txn_profile *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->window != y->window)
		return x->window < y->window ? -1 : 1;
	if (x->meta.time_ns != y->meta.time_ns)
		return x->meta.time_ns < y->meta.time_ns ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Notes window w of the txn (ascending input, so a check of the last one dedups). */
static int txn_window(struct store_txn *tx, int64_t w)
{
	int rc;

	for (size_t i = tx->n_wins; i-- > 0;)
		if (tx->wins[i] == w)
			return 0;
	rc = GROW(tx->wins, tx->cap_wins, tx->n_wins + 1, STORE_MAX_TXN_PROFILES, NULL);
	if (!rc)
		tx->wins[tx->n_wins++] = w;
	return rc;
}

int store__txn_flush_profiles(struct store_txn *tx, struct err_msg *msg)
{
	struct chunk_profile *cp;
	size_t i = 0;
	int rc = 0;

	if (!tx->n_profs)
		return 0;
	cp = malloc(tx->n_profs * sizeof(*cp));
	if (!cp)
		return ERR_NOMEM;
	qsort(tx->profs, tx->n_profs, sizeof(*tx->profs), txn_prof_cmp);
	while (i < tx->n_profs && !rc) {
		const struct txn_profile *g = &tx->profs[i];
		size_t j = i, m = 0;
		uint8_t k[CHUNK_KEY_LEN];

		for (; j < tx->n_profs && tx->profs[j].series == g->series &&
		       tx->profs[j].window == g->window; j++) {
			const struct txn_profile *tp = &tx->profs[j];
			cp[m].meta = tp->meta;
			cp[m].n = tp->n;
			cp[m].ids = tx->ids + tp->off;
			cp[m].vals = tx->vals + tp->off;
			cp[m].spans = tx->spans ? tx->spans + tp->off : NULL;
			if (tp->meta.time_ns > tx->max_time)
				tx->max_time = tp->meta.time_ns;
			m++;
		}
		buf_reset(&tx->val);
		/* Raw: compression belongs to compaction, off the commit path. */
		rc = store__chunk_encode(g->part, cp, m, 0, &tx->val);
		if (rc) {
			err_set(msg, rc, "encoding the samples of series %llu",
				(unsigned long long)g->series);
			break;
		}
		rc = txn_window(tx, g->window);
		if (rc)
			break;
		store__chunk_key(k, tx->t->id, g->series, g->window, store__epoch_current(tx->t));
		store__txn_merge(tx, CFI_SAMPLES, k, sizeof(k), tx->val.data, tx->val.len);
		i = j;
	}
	free(cp);
	if (!rc) {
		tx->ctr[CTR_PROFILES] += tx->n_profs;
		tx->ctr[CTR_SAMPLES] += tx->n_samples;
	}
	return rc;
}

/* ---- reading the head ------------------------------------------------------------ */

/* Passes the profiles of profs[0..n) in [from, until) to cb; returns cb's non-zero value. */
static int emit(const struct chunk_profile *profs, size_t n, uint64_t series_id, int64_t from_ns,
		int64_t until_ns, int (*cb)(void *ctx, const struct store_profile_view *p),
		void *ctx)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		struct store_profile_view pv;

		if (profs[i].meta.time_ns < from_ns || profs[i].meta.time_ns >= until_ns)
			continue;
		pv.series_id = series_id;
		pv.part = profs[i].part;
		pv.meta = profs[i].meta;
		pv.n = profs[i].n;
		pv.stack_ids = profs[i].ids;
		pv.values = profs[i].vals;
		pv.span_ids = profs[i].spans;
		rc = cb(ctx, &pv);
	}
	return rc;
}

/*
 * One window of a series as store__head_profiles reads it: its first
 * chunk from the page cache (`hit`, pinned; pcache.c, "Head chunks"), and
 * when the window has chunks of other epochs, all of them decoded into c.
 */
struct hwin {
	struct store *st;
	struct chunk c;
	struct pcache_ent *hit;
	struct page_view hv;
	int in_c; /* c holds what hit holds: hit was cached from c */
};

static int hwin_emit(struct hwin *h, uint64_t series_id, int64_t from_ns, int64_t until_ns,
		     int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx)
{
	int rc = h->hit ? emit(h->hv.profs, h->hv.n, series_id, from_ns, until_ns, cb, ctx)
			: emit(h->c.profs, h->c.n, series_id, from_ns, until_ns, cb, ctx);

	store__pcache_unpin(&h->st->pages, h->hit);
	h->hit = NULL;
	h->in_c = 0;
	h->c.n = h->c.n_samples = 0;
	return rc;
}

/* Adds the chunk of key k (value v) to the window; `first`: of a new window. */
static int hwin_add(struct hwin *h, const uint8_t *k, size_t klen, const char *v, size_t vlen,
		    int first, struct err_msg *msg)
{
	int rc;

	if (first && (h->hit = store__pcache_head_get(&h->st->pages, k, klen, v, vlen, &h->hv)))
		return 0;
	if (h->hit) {
		/* A second epoch's chunk: the window is merged in c, uncached. */
		if (!h->in_c) {
			size_t hlen;
			const void *hval = store__pcache_head_value(h->hit, &hlen);

			rc = store__chunk_decode_more(&h->c, hval, hlen, msg);
			if (rc)
				return rc;
		}
		store__pcache_unpin(&h->st->pages, h->hit);
		h->hit = NULL;
		h->in_c = 0;
	}
	rc = store__chunk_decode_more(&h->c, v, vlen, msg);
	if (rc)
		return rc;
	if (first)
		h->hit = store__pcache_head_add(&h->st->pages, k, klen, v, vlen, &h->c, &h->hv);
	h->in_c = h->hit != NULL;
	return 0;
}

int store__head_profiles(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			 uint64_t series_id, int64_t from_ns, int64_t until_ns,
			 int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx,
			 struct err_msg *msg)
{
	uint8_t lo[CHUNK_KEY_LEN], hi[CHUNK_KEY_LEN];
	struct hwin h = { .st = st };
	int64_t cur = 0;
	int have = 0;
	struct scan s;
	int rc;

	if (until_ns <= from_ns)
		return 0;
	store__chunk_key(lo, t->id, series_id, floor_div(from_ns, st->window_ns), 0);
	store__chunk_key(hi, t->id, series_id, floor_div(until_ns - 1, st->window_ns) + 1, 0);
	store__chunk_init(&h.c);
	rc = store__scan_open_snap(st, CFI_SAMPLES, snap, &s, lo, CHUNK_KEY_LEN_V1, hi,
				   CHUNK_KEY_LEN_V1);
	/* The chunks of one window (one per epoch that wrote to it) are merged by time. */
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		const char *v = rocksdb_iter_value(s.it, &vlen);
		uint64_t sid;
		int64_t w;
		uint32_t e;
		int first;

		if (store__chunk_key_parse(k, klen, &sid, &w, &e) || sid != series_id) {
			rc = err_set(msg, ERR_CORRUPT, "series %llu of tenant %s: bad chunk key",
				     (unsigned long long)series_id, t->name);
			break;
		}
		if (st->read_only && store__head_covered(st, t, w, e))
			continue; /* a block has it; a writer would have deleted it */
		if (have && w != cur && (rc = hwin_emit(&h, series_id, from_ns, until_ns, cb, ctx)))
			break;
		first = !have || w != cur;
		cur = w;
		have = 1;
		rc = hwin_add(&h, k, klen, v, vlen, first, msg);
		if (rc) {
			err_set(msg, rc, "series %llu of tenant %s: corrupt sample chunk",
				(unsigned long long)series_id, t->name);
			break;
		}
	}
	if (!rc && have)
		rc = hwin_emit(&h, series_id, from_ns, until_ns, cb, ctx);
	store__pcache_unpin(&st->pages, h.hit);
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, msg);
	store__chunk_release(&h.c);
	return rc;
}
