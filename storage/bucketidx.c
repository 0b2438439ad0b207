/*
 * bucketidx.c - the bucket index object (storage_int.h section 12): its
 * encoding, a decoder bounded for untrusted bytes, and the rule that says
 * which of a tenant's blocks count.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

void store__bkt_init(struct bkt_index *x, size_t cap)
{
	memset(x, 0, sizeof(*x));
	arena_init(&x->mem, cap);
}

void store__bkt_release(struct bkt_index *x)
{
	arena_release(&x->mem);
	memset(x, 0, sizeof(*x));
}

/* ---- encoding --------------------------------------------------------------------- */

static int put_block(struct buf *o, const struct bkt_block *b)
{
	const struct brec *r = &b->rec;
	int rc = buf_append(o, b->id, BLOCK_ID_BYTES);

	if (!rc)
		rc = buf_put_uvarint(o, r->level);
	if (!rc)
		rc = buf_put_svarint(o, r->range_start);
	if (!rc)
		rc = buf_put_uvarint(o, (uint64_t)(r->range_end - r->range_start));
	if (!rc)
		rc = buf_put_uvarint(o, (uint64_t)(r->min_time - r->range_start));
	if (!rc)
		rc = buf_put_uvarint(o, (uint64_t)(r->max_time - r->min_time));
	if (!rc)
		rc = buf_put_uvarint(o, r->bytes);
	if (!rc)
		rc = buf_put_uvarint(o, r->series);
	if (!rc)
		rc = buf_put_uvarint(o, r->profiles);
	if (!rc)
		rc = buf_put_uvarint(o, r->samples);
	if (!rc)
		rc = buf_put_uvarint(o, b->n_covers);
	for (uint32_t i = 0; !rc && i < b->n_covers; i++)
		rc = buf_append(o, b->covers[i], BLOCK_ID_BYTES);
	if (!rc)
		rc = buf_put_uvarint(o, b->mark);
	if (!rc && b->mark)
		rc = buf_put_svarint(o, b->marked_ns);
	return rc;
}

int store__bkt_encode(const struct bkt_index *x, struct buf *out)
{
	size_t start = out->len;
	int rc;

	rc = store__objhead_put(out, BKT_MAGIC, BKT_VERSION);
	if (!rc)
		rc = buf_put_svarint(out, x->written_ns);
	if (!rc)
		rc = buf_put_uvarint(out, x->n_tenants);
	for (size_t i = 0; !rc && i < x->n_tenants; i++) {
		const struct bkt_tenant *t = &x->tenants[i];
		size_t nl = strlen(t->name);

		rc = buf_put_lstr(out, t->name, nl);
		if (!rc)
			rc = buf_put_uvarint(out, t->n_blocks);
		for (size_t j = 0; !rc && j < t->n_blocks; j++)
			rc = put_block(out, &t->blocks[j]);
	}
	if (rc)
		return rc;
	store__objhead_seal(out, start);
	return 0;
}

/* ---- decoding --------------------------------------------------------------------- */

struct rd {
	const uint8_t *p, *end;
	struct err_msg *msg;
};

static int rd_uv(struct rd *r, uint64_t *v, const char *what)
{
	size_t n = varint_get(r->p, r->end, v);

	if (!n)
		*v = 0;
	if (!n)
		return err_set(r->msg, ERR_CORRUPT, "bucket index: truncated at %s", what);
	r->p += n;
	return 0;
}

static int rd_sv(struct rd *r, int64_t *v, const char *what)
{
	uint64_t u = 0;
	int rc = rd_uv(r, &u, what);

	if (!rc)
		*v = zigzag_decode(u);
	return rc;
}

static int rd_bytes(struct rd *r, size_t n, const uint8_t **out, const char *what)
{
	if ((size_t)(r->end - r->p) < n)
		return err_set(r->msg, ERR_CORRUPT, "bucket index: truncated at %s", what);
	*out = r->p;
	r->p += n;
	return 0;
}

/* a + b as an int64 that must stay inside the range end; ERR_CORRUPT past it. */
static int add_in(int64_t a, uint64_t b, int64_t *out)
{
	if (b > (uint64_t)INT64_MAX || __builtin_add_overflow(a, (int64_t)b, out))
		return ERR_CORRUPT;
	return 0;
}

static int get_block(struct rd *r, struct bkt_index *x, struct bkt_block *b, uint64_t *covers)
{
	struct brec *c = &b->rec;
	const uint8_t *id = NULL;
	uint64_t v = 0, len = 0, d1 = 0, d2 = 0, n = 0;
	int64_t s = 0;
	int rc;

	rc = rd_bytes(r, BLOCK_ID_BYTES, &id, "a block id");
	if (rc)
		return rc;
	memcpy(b->id, id, BLOCK_ID_BYTES);
	rc = rd_uv(r, &v, "a level");
	if (!rc && v > BKT_MAX_LEVEL)
		rc = err_set(r->msg, ERR_CORRUPT, "bucket index: level %llu", (unsigned long long)v);
	c->level = (uint32_t)v;
	if (!rc)
		rc = rd_sv(r, &s, "a range");
	if (!rc)
		rc = rd_uv(r, &len, "a range");
	if (!rc)
		rc = rd_uv(r, &d1, "a min time");
	if (!rc)
		rc = rd_uv(r, &d2, "a max time");
	if (rc)
		return rc;
	c->range_start = s;
	if (!len || add_in(s, len, &c->range_end) || add_in(s, d1, &c->min_time) ||
	    add_in(c->min_time, d2, &c->max_time) || c->max_time >= c->range_end)
		return err_set(r->msg, ERR_CORRUPT, "bucket index: block times out of their range");
	rc = rd_uv(r, &c->bytes, "a size");
	if (!rc)
		rc = rd_uv(r, &c->series, "counts");
	if (!rc)
		rc = rd_uv(r, &c->profiles, "counts");
	if (!rc)
		rc = rd_uv(r, &c->samples, "counts");
	if (!rc)
		rc = rd_uv(r, &n, "covers");
	if (rc)
		return rc;
	*covers += n;
	if (n > BKT_MAX_COVERS || *covers > BKT_MAX_ALL_COVERS ||
	    n * BLOCK_ID_BYTES > (uint64_t)(r->end - r->p))
		return err_set(r->msg, ERR_CORRUPT, "bucket index: %llu covers",
			       (unsigned long long)n);
	b->n_covers = (uint32_t)n;
	b->covers = n ? arena_alloc(&x->mem, n * BLOCK_ID_BYTES) : NULL;
	if (n && !b->covers)
		return arena_failed(&x->mem);
	for (uint64_t i = 0; i < n; i++) {
		rc = rd_bytes(r, BLOCK_ID_BYTES, &id, "covers");
		if (rc)
			return rc;
		memcpy(b->covers[i], id, BLOCK_ID_BYTES);
		if ((i && memcmp(b->covers[i - 1], id, BLOCK_ID_BYTES) >= 0) ||
		    !memcmp(id, b->id, BLOCK_ID_BYTES))
			return err_set(r->msg, ERR_CORRUPT, "bucket index: covers out of order");
	}
	rc = rd_uv(r, &v, "a mark");
	if (!rc && v > BKT_EXPIRED)
		rc = err_set(r->msg, ERR_CORRUPT, "bucket index: mark %llu", (unsigned long long)v);
	b->mark = (uint32_t)v;
	if (!rc && b->mark)
		rc = rd_sv(r, &b->marked_ns, "a mark");
	return rc;
}

static int get_tenant(struct rd *r, struct bkt_index *x, struct bkt_tenant *t,
		      const struct bkt_tenant *prev, uint64_t *blocks, uint64_t *covers)
{
	const uint8_t *name = NULL;
	uint64_t nl = 0, n = 0;
	int rc = rd_uv(r, &nl, "a tenant name");

	if (!rc && (!nl || nl > STORE_MAX_TENANT_NAME))
		rc = err_set(r->msg, ERR_CORRUPT, "bucket index: a tenant name of %llu bytes",
			     (unsigned long long)nl);
	if (!rc)
		rc = rd_bytes(r, nl, &name, "a tenant name");
	if (rc)
		return rc;
	if (memchr(name, 0, nl))
		return err_set(r->msg, ERR_CORRUPT, "bucket index: a tenant name holds a NUL");
	t->name = arena_strndup(&x->mem, (const char *)name, nl);
	if (!t->name)
		return arena_failed(&x->mem);
	if (prev && strcmp(prev->name, t->name) >= 0)
		return err_set(r->msg, ERR_CORRUPT, "bucket index: tenants out of order");
	rc = rd_uv(r, &n, "a block count");
	if (rc)
		return rc;
	*blocks += n;
	/* Each block takes at least 16 + 11 bytes: a count past what is left is a lie. */
	if (*blocks > BKT_MAX_BLOCKS || n > (uint64_t)(r->end - r->p) / (BLOCK_ID_BYTES + 11))
		return err_set(r->msg, ERR_CORRUPT, "bucket index: %llu blocks",
			       (unsigned long long)n);
	t->n_blocks = (size_t)n;
	t->blocks = n ? arena_calloc(&x->mem, n, sizeof(*t->blocks)) : NULL;
	if (n && !t->blocks)
		return arena_failed(&x->mem);
	for (size_t i = 0; i < t->n_blocks; i++) {
		rc = get_block(r, x, &t->blocks[i], covers);
		if (rc)
			return rc;
		if (i && memcmp(t->blocks[i - 1].id, t->blocks[i].id, BLOCK_ID_BYTES) >= 0)
			return err_set(r->msg, ERR_CORRUPT, "bucket index: blocks out of order");
	}
	return 0;
}

int store__bkt_decode(const uint8_t *p, size_t len, struct bkt_index *out, struct err_msg *msg)
{
	struct rd r = { p + BKT_HEADER_BYTES, p + len, msg };
	struct bkt_index x;
	uint64_t n = 0, blocks = 0, covers = 0;
	int rc;

	rc = store__objhead_check(p, len, BKT_MAX_BYTES, BKT_MAGIC, BKT_VERSION, "bucket index",
				  msg);
	if (rc)
		return rc;
	/* Decoded, an index takes at most a few times its bytes: a block of
	 * 28 bytes or more becomes a struct of ~120, a cover stays 16. */
	store__bkt_init(&x, 8 * len + 4096);
	rc = rd_sv(&r, &x.written_ns, "the header");
	if (!rc)
		rc = rd_uv(&r, &n, "the tenant count");
	if (!rc && (n > BKT_MAX_TENANTS || n > (uint64_t)(r.end - r.p) / 2))
		rc = err_set(msg, ERR_CORRUPT, "bucket index: %llu tenants", (unsigned long long)n);
	if (!rc && n) {
		x.tenants = arena_calloc(&x.mem, (size_t)n, sizeof(*x.tenants));
		if (!x.tenants)
			rc = arena_failed(&x.mem);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		rc = get_tenant(&r, &x, &x.tenants[i], i ? &x.tenants[i - 1] : NULL, &blocks,
				&covers);
		x.n_tenants = i + 1;
	}
	if (!rc && r.p != r.end)
		rc = err_set(msg, ERR_CORRUPT, "bucket index: %zu bytes after the last tenant",
			     (size_t)(r.end - r.p));
	if (rc) {
		if (rc == ERR_TOO_LARGE)
			err_set(msg, ERR_CORRUPT, "bucket index: decodes larger than its cap");
		store__bkt_release(&x);
		return rc == ERR_TOO_LARGE ? ERR_CORRUPT : rc;
	}
	*out = x;
	return 0;
}

/* ---- lookups and the rule -------------------------------------------------------- */

const struct bkt_tenant *store__bkt_tenant(const struct bkt_index *x, const char *name)
{
	size_t lo = 0, hi = x->n_tenants;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(name, x->tenants[mid].name);
		if (!c)
			return &x->tenants[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct bkt_block *store__bkt_block(const struct bkt_tenant *t,
					 const uint8_t id[BLOCK_ID_BYTES])
{
	size_t lo = 0, hi = t->n_blocks;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = memcmp(id, t->blocks[mid].id, BLOCK_ID_BYTES);
		if (!c)
			return &t->blocks[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Ids taken by accepted blocks: open addressing over the ids' first 8 bytes. */
struct idset {
	uint8_t (*v)[BLOCK_ID_BYTES];
	uint8_t *used;
	size_t mask;
};

static uint64_t id_hash(const uint8_t *id)
{
	uint64_t h;

	memcpy(&h, id + BLOCK_ID_BYTES - 8, 8); /* the random part */
	return hash_u64(h);
}

static int idset_has(const struct idset *s, const uint8_t *id)
{
	for (size_t i = id_hash(id) & s->mask; s->used[i]; i = (i + 1) & s->mask)
		if (!memcmp(s->v[i], id, BLOCK_ID_BYTES))
			return 1;
	return 0;
}

static void idset_add(struct idset *s, const uint8_t *id)
{
	size_t i = id_hash(id) & s->mask;

	while (s->used[i] && memcmp(s->v[i], id, BLOCK_ID_BYTES))
		i = (i + 1) & s->mask;
	memcpy(s->v[i], id, BLOCK_ID_BYTES);
	s->used[i] = 1;
}

/*
 * A candidate of the rule, sorted by (level descending, covers descending,
 * id): one order for every reader and writer, in which a block comes before
 * every block it covers (a slot's block merged again with a late range is
 * of the same level, and covers one block more than the one it replaces).
 */
struct cand {
	uint32_t level, n_covers, i;
	const uint8_t *id;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->level != y->level)
		return x->level > y->level ? -1 : 1;
	if (x->n_covers != y->n_covers)
		return x->n_covers > y->n_covers ? -1 : 1;
	return memcmp(x->id, y->id, BLOCK_ID_BYTES);
}

int store__bkt_resolve(const struct bkt_tenant *t, uint32_t *out)
{
	struct idset s = { NULL, NULL, 0 };
	struct cand *order = NULL;
	size_t n = 0, ids = 0, cap = 16;

	for (size_t i = 0; i < t->n_blocks; i++)
		ids += 1 + t->blocks[i].n_covers;
	while (cap < 2 * ids)
		cap <<= 1;
	order = malloc((t->n_blocks + 1) * sizeof(*order));
	s.v = malloc(cap * sizeof(*s.v));
	s.used = calloc(cap, 1);
	if (!order || !s.v || !s.used) {
		free(order);
		free(s.v);
		free(s.used);
		return ERR_NOMEM;
	}
	s.mask = cap - 1;
	for (size_t i = 0; i < t->n_blocks; i++) {
		out[i] = t->blocks[i].mark;
		if (!t->blocks[i].mark)
			order[n++] = (struct cand){ t->blocks[i].rec.level,
						    t->blocks[i].n_covers, (uint32_t)i,
						    t->blocks[i].id };
	}
	qsort(order, n, sizeof(*order), cand_cmp);
	for (size_t k = 0; k < n; k++) {
		const struct bkt_block *b = &t->blocks[order[k].i];
		int clash = idset_has(&s, b->id) ? BKT_REPLACED : 0;

		for (uint32_t j = 0; !clash && j < b->n_covers; j++)
			if (idset_has(&s, b->covers[j]))
				clash = BKT_DUPLICATE;
		out[order[k].i] = (uint32_t)clash;
		if (clash)
			continue;
		idset_add(&s, b->id);
		for (uint32_t j = 0; j < b->n_covers; j++)
			idset_add(&s, b->covers[j]);
	}
	free(order);
	free(s.v);
	free(s.used);
	return 0;
}
