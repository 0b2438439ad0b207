/*
 * direfs.c - which build IDs the blocks of the bucket reference, and how
 * recently (storage_int.h section 13): the "debuginfo-refs" object's codec,
 * and the index writer's step that keeps it, so that the debug-info service
 * deletes from the bucket only what no counted block needs.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"
#include "base/log.h"
#include "objstore/objstore.h"

/* Decoded, a table takes a few times its bytes (an id of 21 bytes or more
 * becomes 32 of struct plus itself; a ref of 1 byte becomes 4). */
#define DECODE_GROWTH 8

void store__direfs_init(struct store_direfs *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	arena_init(&r->mem, cap);
}

void store__direfs_release(struct store_direfs *r)
{
	for (size_t i = 0; i < r->n_seen; i++)
		free((char *)r->seen[i].id);
	free(r->seen);
	arena_release(&r->mem);
	memset(r, 0, sizeof(*r));
}

/* ---- encoding --------------------------------------------------------------------- */

int store__direfs_encode(const struct store_direfs *r, struct buf *out)
{
	size_t start = out->len;
	uint32_t *map = malloc((r->n_ids + 1) * sizeof(*map));
	uint32_t kept = 0;
	int rc;

	if (!map)
		return ERR_NOMEM;
	/* Forgotten ids go; the refs of the blocks are renumbered past them. */
	for (size_t i = 0; i < r->n_ids; i++)
		map[i] = r->ids[i].forget && !r->ids[i].referenced ? UINT32_MAX : kept++;
	rc = store__objhead_put(out, DIREFS_MAGIC, DIREFS_VERSION);
	if (!rc)
		rc = buf_put_svarint(out, r->written_ns);
	if (!rc)
		rc = buf_put_uvarint(out, kept);
	for (size_t i = 0; !rc && i < r->n_ids; i++) {
		size_t n = strlen(r->ids[i].id);

		if (map[i] == UINT32_MAX)
			continue;
		rc = buf_put_lstr(out, r->ids[i].id, n);
		if (!rc)
			rc = buf_put_svarint(out, r->ids[i].last_ns);
	}
	if (!rc)
		rc = buf_put_uvarint(out, r->n_tenants);
	for (size_t i = 0; !rc && i < r->n_tenants; i++) {
		const struct direfs_tenant *t = &r->tenants[i];
		size_t n = strlen(t->name);

		rc = buf_put_lstr(out, t->name, n);
		if (!rc)
			rc = buf_put_uvarint(out, t->n_blocks);
		for (size_t j = 0; !rc && j < t->n_blocks; j++) {
			const struct direfs_block *b = &t->blocks[j];
			uint32_t prev = 0;

			rc = buf_append(out, b->id, BLOCK_ID_BYTES);
			if (!rc)
				rc = buf_put_uvarint(out, b->n_refs);
			for (uint32_t k = 0; !rc && k < b->n_refs; k++) {
				uint32_t at = map[b->refs[k]]; /* referenced: never forgotten */

				rc = buf_put_uvarint(out, k ? at - prev - 1 : at);
				prev = at;
			}
		}
	}
	free(map);
	if (rc)
		return rc;
	store__objhead_seal(out, start);
	return 0;
}

/* ---- decoding --------------------------------------------------------------------- */

static int in_block(struct objrd *in, struct store_direfs *r, struct direfs_block *b,
		    const struct direfs_block *prev, uint64_t *all_refs)
{
	const uint8_t *id = NULL;
	uint64_t n = 0, at = 0;
	int rc = store__objrd_bytes(in, BLOCK_ID_BYTES, &id, "block id");

	if (rc)
		return rc;
	memcpy(b->id, id, BLOCK_ID_BYTES);
	if (prev && memcmp(prev->id, b->id, BLOCK_ID_BYTES) >= 0)
		return store__objrd_bad(in, "block order");
	rc = store__objrd_count(in, r->n_ids, 1, &n, "ref count");
	if (rc)
		return rc;
	*all_refs += n;
	if (*all_refs > DIREFS_MAX_REFS)
		return store__objrd_bad(in, "ref count (all blocks together)");
	b->n_refs = (uint32_t)n;
	b->refs = n ? arena_alloc(&r->mem, n * sizeof(*b->refs)) : NULL;
	if (n && !b->refs)
		return arena_failed(&r->mem);
	for (uint64_t k = 0; k < n; k++) {
		uint64_t gap = 0;

		rc = store__objrd_uv(in, r->n_ids, &gap, "ref");
		if (rc)
			return rc;
		at = k ? at + 1 + gap : gap;
		if (at >= r->n_ids)
			return store__objrd_bad(in, "ref");
		b->refs[k] = (uint32_t)at;
	}
	return 0;
}

static int in_tenant(struct objrd *in, struct store_direfs *r, struct direfs_tenant *t,
		     const struct direfs_tenant *prev, uint64_t *all_blocks, uint64_t *all_refs)
{
	uint64_t n = 0;
	int rc = store__objrd_str(in, &r->mem, STORE_MAX_TENANT_NAME, &t->name, "tenant name");

	if (!rc && prev && strcmp(prev->name, t->name) >= 0)
		rc = store__objrd_bad(in, "tenant order");
	if (!rc)
		rc = store__objrd_count(in, BKT_MAX_BLOCKS, BLOCK_ID_BYTES + 1, &n, "block count");
	if (rc)
		return rc;
	*all_blocks += n;
	if (*all_blocks > BKT_MAX_BLOCKS)
		return store__objrd_bad(in, "block count (all tenants together)");
	t->blocks = n ? arena_calloc(&r->mem, (size_t)n, sizeof(*t->blocks)) : NULL;
	if (n && !t->blocks)
		return arena_failed(&r->mem);
	for (size_t j = 0; !rc && j < n; j++) {
		rc = in_block(in, r, &t->blocks[j], j ? &t->blocks[j - 1] : NULL, all_refs);
		t->n_blocks = j + 1;
	}
	return rc;
}

int store__direfs_decode(const uint8_t *p, size_t len, struct store_direfs *out,
			 struct err_msg *msg)
{
	struct objrd in;
	struct store_direfs r;
	uint64_t n = 0, blocks = 0, refs = 0;
	int rc;

	rc = store__objhead_check(p, len, DIREFS_MAX_BYTES, DIREFS_MAGIC, DIREFS_VERSION,
				  "debuginfo-refs object", msg);
	if (rc)
		return rc;
	store__objrd_init(&in, p, len, "debuginfo-refs", msg);
	store__direfs_init(&r, DECODE_GROWTH * len + 4096);
	rc = store__objrd_sv(&in, &r.written_ns, "write time");
	if (!rc)
		rc = store__objrd_count(&in, DIREFS_MAX_IDS, 3, &n, "id count");
	if (!rc && n) {
		r.ids = arena_calloc(&r.mem, (size_t)n, sizeof(*r.ids));
		if (!r.ids)
			rc = arena_failed(&r.mem);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		rc = store__objrd_str(&in, &r.mem, DIREFS_ID_MAX, &r.ids[i].id, "build id");
		if (!rc && i && strcmp(r.ids[i - 1].id, r.ids[i].id) >= 0)
			rc = store__objrd_bad(&in, "build id order");
		if (!rc)
			rc = store__objrd_sv(&in, &r.ids[i].last_ns, "last use");
		r.n_ids = i + 1;
	}
	if (!rc)
		rc = store__objrd_count(&in, BKT_MAX_TENANTS, 2, &n, "tenant count");
	if (!rc && n) {
		r.tenants = arena_calloc(&r.mem, (size_t)n, sizeof(*r.tenants));
		if (!r.tenants)
			rc = arena_failed(&r.mem);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		rc = in_tenant(&in, &r, &r.tenants[i], i ? &r.tenants[i - 1] : NULL, &blocks, &refs);
		r.n_tenants = i + 1;
	}
	rc = store__objrd_end(&in, rc);
	if (rc) {
		store__direfs_release(&r);
		return rc;
	}
	*out = r;
	return 0;
}

/* ---- the hook's view -------------------------------------------------------------- */

size_t store_direfs_count(const struct store_direfs *r)
{
	return r->n_ids;
}

void store_direfs_at(const struct store_direfs *r, size_t i, struct store_direfs_entry *out)
{
	out->build_id = r->ids[i].id;
	out->last_ns = r->ids[i].last_ns;
	out->referenced = r->ids[i].referenced;
}

void store_direfs_forget(struct store_direfs *r, size_t i)
{
	r->ids[i].forget = 1;
}

/* The entry of `id` in v (ascending), or NULL; v is NULL while empty, and bsearch wants a base. */
static struct direfs_id *id_find(struct direfs_id *v, size_t n, const char *id)
{
	return n ? bsearch(&id, v, n, sizeof(*v), store__cmp_str) : NULL;
}

int store_direfs_seen(struct store_direfs *r, const char *build_id, int64_t at_ns)
{
	size_t n = strlen(build_id);
	char *copy;
	int rc;

	if (!n || n > DIREFS_ID_MAX)
		return ERR_INVALID;
	if (id_find(r->ids, r->n_ids, build_id))
		return 0;
	if (r->n_ids + r->n_seen >= DIREFS_MAX_IDS)
		return ERR_TOO_LARGE;
	rc = GROW(r->seen, r->cap_seen, r->n_seen + 1, DIREFS_MAX_IDS, NULL);
	if (rc)
		return rc;
	copy = strdup(build_id);
	if (!copy)
		return ERR_NOMEM;
	memset(&r->seen[r->n_seen], 0, sizeof(r->seen[0]));
	r->seen[r->n_seen].id = copy;
	r->seen[r->n_seen++].last_ns = at_ns;
	return 0;
}

/* ---- the writer's step ---------------------------------------------------------- */

/* One use of a build ID: an old entry, or a counted block's reference. */
struct use {
	const char *id;
	int64_t t;
	int ref;
};

/* A counted block whose references are known: its uses are bref[from, to). */
struct cblock {
	size_t tenant;
	const struct bkt_block *e;
	size_t from, to;
};

struct collect {
	struct store *st;
	struct store_direfs *nx;
	struct use *u;
	size_t n_u, cap_u;
	const char **bref;
	size_t n_bref, cap_bref;
	struct cblock *b;
	size_t n_b, cap_b;
	int complete;
};

static int use_cmp(const void *a, const void *b)
{
	const struct use *x = a, *y = b;

	return strcmp(x->id, y->id);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int add_use(struct collect *c, const char *id, int64_t t, int ref)
{
	int rc = GROW(c->u, c->cap_u, c->n_u + 1, (size_t)DIREFS_MAX_REFS + DIREFS_MAX_IDS, NULL);

	if (rc)
		return rc;
	c->u[c->n_u].id = id;
	c->u[c->n_u].t = t;
	c->u[c->n_u++].ref = ref;
	if (!ref)
		return 0;
	rc = GROW(c->bref, c->cap_bref, c->n_bref + 1, DIREFS_MAX_REFS, NULL);
	if (!rc)
		c->bref[c->n_bref++] = id;
	return rc;
}

static const struct direfs_block *old_block(const struct store_direfs *old, const char *tenant,
					    const uint8_t *id)
{
	const struct direfs_tenant *t = NULL;

	/* The arrays are NULL while empty, and bsearch wants a base. */
	if (old->n_tenants)
		t = bsearch(&tenant, old->tenants, old->n_tenants, sizeof(*old->tenants),
			    store__cmp_str);
	if (!t || !t->n_blocks)
		return NULL;
	return bsearch(id, t->blocks, t->n_blocks, sizeof(*t->blocks), store__cmp_id);
}

/* The build IDs of a block the old table lacks, from its footer; 1: unreadable. */
static int footer_uses(struct collect *c, const char *tenant, const struct bkt_block *e)
{
	struct bmeta m;
	struct buf key;
	struct err_msg why;
	uint64_t size = 0;
	int rc;

	buf_init(&key, OBJSTORE_KEY_MAX + 1);
	rc = store__block_key(tenant, e->id, &key);
	if (!rc)
		rc = buf_putc(&key, '\0');
	err_clear(&why);
	if (!rc)
		rc = store__block_remote_footer(c->st, key.data, &m, &size, &why);
	if (rc) {
		log_warn("debuginfo-refs: %s: %s; nothing is deleted from the bucket until it is "
			 "read", key.len ? key.data : tenant, why.text[0] ? why.text : err_str(rc));
		buf_release(&key);
		return rc == ERR_NOMEM ? rc : 1;
	}
	buf_release(&key);
	for (size_t i = 0; !rc && i < m.n_build_ids; i++) {
		size_t n = strlen(m.build_ids[i]);
		const char *id;

		if (!n || n > DIREFS_ID_MAX)
			continue; /* no debug info can be named by it */
		id = arena_strndup(&c->nx->mem, m.build_ids[i], n);
		rc = id ? add_use(c, id, e->rec.max_time, 1) : arena_failed(&c->nx->mem);
	}
	store__bmeta_release(&m);
	return rc;
}

/* The uses of every block x counts (old table first, else the footer). */
static int collect_blocks(struct collect *c, const struct store_direfs *old,
			  const struct bkt_index *x)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < x->n_tenants; i++) {
		const struct bkt_tenant *t = &x->tenants[i];

		for (size_t j = 0; !rc && j < t->n_blocks; j++) {
			const struct bkt_block *e = &t->blocks[j];
			const struct direfs_block *ob;
			size_t from = c->n_bref;

			if (e->mark)
				continue; /* not counted: its references do not keep anything */
			ob = old_block(old, t->name, e->id);
			if (ob) {
				for (uint32_t k = 0; !rc && k < ob->n_refs; k++)
					rc = add_use(c, old->ids[ob->refs[k]].id, e->rec.max_time, 1);
			} else {
				rc = footer_uses(c, t->name, e);
				if (rc == 1) {
					c->complete = 0;
					c->n_u -= c->n_bref - from;
					c->n_bref = from;
					rc = 0;
					continue;
				}
			}
			if (!rc)
				rc = GROW(c->b, c->cap_b, c->n_b + 1, BKT_MAX_BLOCKS, NULL);
			if (!rc) {
				c->b[c->n_b].tenant = i;
				c->b[c->n_b].e = e;
				c->b[c->n_b].from = from;
				c->b[c->n_b++].to = c->n_bref;
			}
		}
	}
	return rc;
}

/* The sorted uses merged into the new table's ids: newest time, referenced or not. */
static int build_ids(struct collect *c)
{
	struct store_direfs *nx = c->nx;
	size_t k = 0;

	if (c->n_u)
		qsort(c->u, c->n_u, sizeof(*c->u), use_cmp);
	nx->ids = c->n_u ? arena_calloc(&nx->mem, c->n_u, sizeof(*nx->ids)) : NULL;
	if (c->n_u && !nx->ids)
		return arena_failed(&nx->mem);
	for (size_t i = 0; i < c->n_u; i++) {
		if (k && !strcmp(nx->ids[k - 1].id, c->u[i].id)) {
			if (c->u[i].t > nx->ids[k - 1].last_ns)
				nx->ids[k - 1].last_ns = c->u[i].t;
			nx->ids[k - 1].referenced |= (uint8_t)c->u[i].ref;
			continue;
		}
		if (k == DIREFS_MAX_IDS)
			return ERR_TOO_LARGE;
		nx->ids[k].id = c->u[i].id;
		nx->ids[k].last_ns = c->u[i].t;
		nx->ids[k++].referenced = (uint8_t)c->u[i].ref;
	}
	nx->n_ids = k;
	return 0;
}

/* The counted blocks, grouped by tenant, their refs as ascending indexes. */
static int build_blocks(struct collect *c, const struct bkt_index *x)
{
	struct store_direfs *nx = c->nx;
	size_t nt = 0;

	for (size_t i = 0; i < c->n_b; i++)
		nt += !i || c->b[i].tenant != c->b[i - 1].tenant;
	nx->tenants = nt ? arena_calloc(&nx->mem, nt, sizeof(*nx->tenants)) : NULL;
	if (nt && !nx->tenants)
		return arena_failed(&nx->mem);
	for (size_t i = 0; i < c->n_b;) {
		size_t j = i;
		struct direfs_tenant *t = &nx->tenants[nx->n_tenants++];

		while (j < c->n_b && c->b[j].tenant == c->b[i].tenant)
			j++;
		t->name = x->tenants[c->b[i].tenant].name;
		t->n_blocks = j - i;
		t->blocks = arena_calloc(&nx->mem, j - i, sizeof(*t->blocks));
		if (!t->blocks)
			return arena_failed(&nx->mem);
		for (size_t q = i; q < j; q++) {
			struct direfs_block *b = &t->blocks[q - i];
			size_t n = c->b[q].to - c->b[q].from, u = 0;

			memcpy(b->id, c->b[q].e->id, BLOCK_ID_BYTES);
			b->refs = n ? arena_alloc(&nx->mem, n * sizeof(*b->refs)) : NULL;
			if (n && !b->refs)
				return arena_failed(&nx->mem);
			for (size_t k = 0; k < n; k++)
				b->refs[k] = (uint32_t)(id_find(nx->ids, nx->n_ids,
								c->bref[c->b[q].from + k]) -
							nx->ids);
			if (n)
				qsort(b->refs, n, sizeof(*b->refs), u32_cmp);
			for (size_t k = 0; k < n; k++)
				if (!u || b->refs[u - 1] != b->refs[k])
					b->refs[u++] = b->refs[k];
			b->n_refs = (uint32_t)u;
		}
		i = j;
	}
	return 0;
}

/* What the hook saw, merged into the ids (the blocks' indexes renumbered). */
static int merge_seen(struct store_direfs *nx)
{
	struct direfs_id *v;
	uint32_t *map;
	size_t n = 0, a = 0;
	int rc = 0;

	if (!nx->n_seen)
		return 0;
	qsort(nx->seen, nx->n_seen, sizeof(*nx->seen), store__cmp_str);
	v = arena_calloc(&nx->mem, nx->n_ids + nx->n_seen, sizeof(*v));
	map = malloc((nx->n_ids + 1) * sizeof(*map));
	if (!v || !map) {
		free(map);
		return v ? ERR_NOMEM : arena_failed(&nx->mem);
	}
	for (size_t s = 0; s < nx->n_seen || a < nx->n_ids;) {
		int c = s == nx->n_seen ? 1 : a == nx->n_ids ? -1 : strcmp(nx->seen[s].id, nx->ids[a].id);

		if (c > 0) {
			map[a] = (uint32_t)n;
			v[n++] = nx->ids[a++];
			continue;
		}
		if (c < 0 && !(n && !strcmp(v[n - 1].id, nx->seen[s].id))) {
			v[n] = nx->seen[s];
			v[n].id = arena_strndup(&nx->mem, nx->seen[s].id, strlen(nx->seen[s].id));
			if (!v[n++].id) {
				rc = arena_failed(&nx->mem);
				break;
			}
		}
		s++; /* a duplicate, or one the ids hold */
	}
	for (size_t i = 0; !rc && i < nx->n_tenants; i++)
		for (size_t j = 0; j < nx->tenants[i].n_blocks; j++) {
			struct direfs_block *b = &nx->tenants[i].blocks[j];

			for (uint32_t k = 0; k < b->n_refs; k++)
				b->refs[k] = map[b->refs[k]];
		}
	free(map);
	if (!rc) {
		nx->ids = v;
		nx->n_ids = n;
	}
	return rc;
}

/* The old table; empty when there is none or it is unreadable (footers again). */
static int read_old(struct store *st, struct store_direfs *old)
{
	struct err_msg msg;
	struct buf b;
	int rc;

	buf_init(&b, DIREFS_MAX_BYTES);
	err_clear(&msg);
	rc = objstore_get(st->objstore, DIREFS_KEY, &b, &msg);
	if (!rc)
		rc = store__direfs_decode((const uint8_t *)b.data, b.len, old, &msg);
	buf_release(&b);
	if (rc == ERR_CORRUPT)
		log_warn("%s; rebuilt from the blocks' footers", msg.text);
	if (rc == ERR_CORRUPT || rc == ERR_NOT_FOUND) {
		store__direfs_init(old, 1);
		return 0;
	}
	if (rc)
		log_warn("debuginfo-refs: %s; retried at the next pass", msg.text);
	return rc;
}

void store_direfs_hook_set(struct store *st, const struct store_direfs_hook *h)
{
	pthread_mutex_lock(&st->maint_mu);
	if (h)
		st->direfs_hook = *h;
	else
		memset(&st->direfs_hook, 0, sizeof(st->direfs_hook));
	pthread_mutex_unlock(&st->maint_mu);
}

void store__direfs_pass(struct store *st, const struct bkt_index *x, int64_t now)
{
	struct store_direfs old, nx;
	struct store_direfs_pass p;
	struct collect c;
	struct err_msg msg;
	struct buf out;
	int rc;

	if (!st->direfs_hook.pass)
		return; /* nobody deletes debug info by it: not kept */
	memset(&c, 0, sizeof(c));
	rc = read_old(st, &old);
	if (rc)
		goto count;
	store__direfs_init(&nx, BKT_MAX_BYTES);
	c.st = st;
	c.nx = &nx;
	c.complete = 1;
	for (size_t i = 0; !rc && i < old.n_ids; i++)
		rc = add_use(&c, old.ids[i].id, old.ids[i].last_ns, 0);
	if (!rc)
		rc = collect_blocks(&c, &old, x);
	if (!rc)
		rc = build_ids(&c);
	if (!rc)
		rc = build_blocks(&c, x);
	if (!rc) {
		p.now_ns = now;
		p.complete = c.complete;
		p.delay_ns = st->bucket_delete_delay_ns + st->block_range_ns + st->seal_delay_ns +
			     2 * st->maint_interval_ns;
		if (st->direfs_hook.pass(st->direfs_hook.ctx, &nx, &p))
			log_warn("debuginfo-refs: the debug-info pass failed; the table is kept");
		rc = merge_seen(&nx);
	}
	nx.written_ns = now;
	buf_init(&out, DIREFS_MAX_BYTES);
	err_clear(&msg);
	if (!rc)
		rc = store__direfs_encode(&nx, &out);
	if (!rc)
		rc = objstore_put(st->objstore, DIREFS_KEY, out.data, out.len, 0, &msg);
	if (rc)
		log_warn("debuginfo-refs: not written: %s", msg.text[0] ? msg.text : err_str(rc));
	buf_release(&out);
	free(c.u);
	free(c.bref);
	free(c.b);
	store__direfs_release(&nx);
	store__direfs_release(&old);
count:
	pthread_mutex_lock(&st->bucket_mu);
	if (rc)
		st->direfs_failures++;
	else
		st->direfs_writes++;
	pthread_mutex_unlock(&st->bucket_mu);
}
