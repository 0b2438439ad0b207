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

/* a + b as an int64 that must stay inside the range end; ERR_CORRUPT past it. */
static int add_in(int64_t a, uint64_t b, int64_t *out)
{
	if (b > (uint64_t)INT64_MAX || __builtin_add_overflow(a, (int64_t)b, out))
		return ERR_CORRUPT;
	return 0;
}

static int get_block(struct objrd *r, struct bkt_index *x, struct bkt_block *b, uint64_t *covers)
{
	struct brec *c = &b->rec;
	const uint8_t *id = NULL;
	uint64_t v = 0, len = 0, d1 = 0, d2 = 0, n = 0;
	int64_t s = 0;
	int rc;

	rc = store__objrd_bytes(r, BLOCK_ID_BYTES, &id, "block id");
	if (rc)
		return rc;
	memcpy(b->id, id, BLOCK_ID_BYTES);
	rc = store__objrd_uv(r, BKT_MAX_LEVEL, &v, "level");
	c->level = (uint32_t)v;
	if (!rc)
		rc = store__objrd_sv(r, &s, "range start");
	if (!rc)
		rc = store__objrd_uv(r, UINT64_MAX, &len, "range length");
	if (!rc)
		rc = store__objrd_uv(r, UINT64_MAX, &d1, "min time");
	if (!rc)
		rc = store__objrd_uv(r, UINT64_MAX, &d2, "max time");
	if (rc)
		return rc;
	c->range_start = s;
	if (!len || add_in(s, len, &c->range_end) || add_in(s, d1, &c->min_time) ||
	    add_in(c->min_time, d2, &c->max_time) || c->max_time >= c->range_end)
		return store__objrd_bad(r, "block times");
	rc = store__objrd_uv(r, UINT64_MAX, &c->bytes, "size");
	if (!rc)
		rc = store__objrd_uv(r, UINT64_MAX, &c->series, "series count");
	if (!rc)
		rc = store__objrd_uv(r, UINT64_MAX, &c->profiles, "profile count");
	if (!rc)
		rc = store__objrd_uv(r, UINT64_MAX, &c->samples, "sample count");
	if (!rc)
		rc = store__objrd_count(r, BKT_MAX_COVERS, BLOCK_ID_BYTES, &n, "cover count");
	if (rc)
		return rc;
	*covers += n;
	if (*covers > BKT_MAX_ALL_COVERS)
		return store__objrd_bad(r, "cover count (all blocks together)");
	b->n_covers = (uint32_t)n;
	b->covers = n ? arena_alloc(&x->mem, n * BLOCK_ID_BYTES) : NULL;
	if (n && !b->covers)
		return arena_failed(&x->mem);
	for (uint64_t i = 0; i < n; i++) {
		rc = store__objrd_bytes(r, BLOCK_ID_BYTES, &id, "cover");
		if (rc)
			return rc;
		memcpy(b->covers[i], id, BLOCK_ID_BYTES);
		if ((i && memcmp(b->covers[i - 1], id, BLOCK_ID_BYTES) >= 0) ||
		    !memcmp(id, b->id, BLOCK_ID_BYTES))
			return store__objrd_bad(r, "cover order");
	}
	rc = store__objrd_uv(r, BKT_EXPIRED, &v, "mark");
	b->mark = (uint32_t)v;
	if (!rc && b->mark)
		rc = store__objrd_sv(r, &b->marked_ns, "mark time");
	return rc;
}

static int get_tenant(struct objrd *r, struct bkt_index *x, struct bkt_tenant *t,
		      const struct bkt_tenant *prev, uint64_t *blocks, uint64_t *covers)
{
	uint64_t n = 0;
	int rc = store__objrd_str(r, &x->mem, STORE_MAX_TENANT_NAME, &t->name, "tenant name");

	if (!rc && prev && strcmp(prev->name, t->name) >= 0)
		rc = store__objrd_bad(r, "tenant order");
	if (!rc)
		rc = store__objrd_count(r, BKT_MAX_BLOCKS, BLOCK_ID_BYTES + 11, &n, /* the least block */
					"block count");
	if (rc)
		return rc;
	*blocks += n;
	if (*blocks > BKT_MAX_BLOCKS)
		return store__objrd_bad(r, "block count (all tenants together)");
	t->n_blocks = (size_t)n;
	t->blocks = n ? arena_calloc(&x->mem, n, sizeof(*t->blocks)) : NULL;
	if (n && !t->blocks)
		return arena_failed(&x->mem);
	for (size_t i = 0; i < t->n_blocks; i++) {
		rc = get_block(r, x, &t->blocks[i], covers);
		if (rc)
			return rc;
		if (i && memcmp(t->blocks[i - 1].id, t->blocks[i].id, BLOCK_ID_BYTES) >= 0)
			return store__objrd_bad(r, "block order");
	}
	return 0;
}

int store__bkt_decode(const uint8_t *p, size_t len, struct bkt_index *out, struct err_msg *msg)
{
	struct objrd r;
	struct bkt_index x;
	uint64_t n = 0, blocks = 0, covers = 0;
	int rc;

	rc = store__objhead_check(p, len, BKT_MAX_BYTES, BKT_MAGIC, BKT_VERSION, "bucket index",
				  msg);
	if (rc)
		return rc;
	store__objrd_init(&r, p, len, "bucket index", msg);
	/* Decoded, an index takes at most a few times its bytes: a block of
	 * 28 bytes or more becomes a struct of ~120, a cover stays 16. */
	store__bkt_init(&x, 8 * len + 4096);
	rc = store__objrd_sv(&r, &x.written_ns, "write time");
	if (!rc)
		rc = store__objrd_count(&r, BKT_MAX_TENANTS, 2, &n, "tenant count");
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
	rc = store__objrd_end(&r, rc);
	if (rc) {
		store__bkt_release(&x);
		return rc;
	}
	*out = x;
	return 0;
}

/* ---- lookups and the rule -------------------------------------------------------- */

/* The arrays are NULL while empty, and bsearch wants a base. */
const struct bkt_tenant *store__bkt_tenant(const struct bkt_index *x, const char *name)
{
	if (!x->n_tenants)
		return NULL;
	return bsearch(&name, x->tenants, x->n_tenants, sizeof(*x->tenants), store__cmp_str);
}

const struct bkt_block *store__bkt_block(const struct bkt_tenant *t,
					 const uint8_t id[BLOCK_ID_BYTES])
{
	if (!t->n_blocks)
		return NULL;
	return bsearch(id, t->blocks, t->n_blocks, sizeof(*t->blocks), store__cmp_id);
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
