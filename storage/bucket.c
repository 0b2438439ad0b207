/*
 * bucket.c - the bucket index at work (storage_int.h section 12): the
 * writer's pass (one LIST of "blocks/", footers of the keys the old index
 * does not hold, marks, one PUT, deletions of blocks marked long enough),
 * and the readers' sync (one GET, remote blocks listed and unlisted).
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/thread.h"
#include "objstore/objstore.h"

#define DEFAULT_DELETE_DELAY_NS (600LL * 1000000000)
/* What the writer builds in memory: the decoded caps, and then some. */
#define BUILD_ARENA_CAP ((size_t)4 << 30)

static void stat_add(struct store *st, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&st->bucket_mu);
	*field += n;
	pthread_mutex_unlock(&st->bucket_mu);
}

/* Reads the index into *x; ERR_NOT_FOUND when there is none. */
static int index_get(struct store *st, struct bkt_index *x, size_t *bytes, struct err_msg *msg)
{
	struct buf b;
	int rc;

	buf_init(&b, BKT_MAX_BYTES);
	rc = objstore_get(st->objstore, BKT_KEY, &b, msg);
	if (!rc)
		rc = store__bkt_decode((const uint8_t *)b.data, b.len, x, msg);
	*bytes = b.len;
	buf_release(&b);
	return rc;
}

/* ---- the writer ---------------------------------------------------------------- */

/* A block key whose footer was found corrupt, at the size listed then. */
struct bkt_bad {
	char *key;      /* owned */
	uint64_t size;
	int listed;     /* listed again by the current pass */
};

/* Keys remembered as corrupt at most; past it, a corrupt footer is read
 * at every pass, as before. */
#define MAX_BAD_FOOTERS 4096

/* One listed block key, with where its entry comes from. */
struct lkey {
	char *tenant;   /* in the build arena */
	struct bkt_block e;
	int fresh;      /* read from its footer in this pass: covers to close */
	size_t bad;     /* 1 + its index in st->bucket_bad when its footer was
			 * found corrupt at this size (0: not) */
	uint8_t (*sources)[BLOCK_ID_BYTES]; /* its footer's, while fresh (arena) */
	uint32_t n_sources;
};

struct build {
	struct store *st;
	const struct bkt_index *old;
	struct bkt_index *nx;
	struct lkey *v;
	size_t n, cap;
	int rc;
	struct err_msg *msg;
};

static int list_cb(void *arg, const struct objstore_entry *e)
{
	struct build *b = arg;
	char tenant[STORE_MAX_TENANT_NAME + 1];
	uint8_t id[BLOCK_ID_BYTES];
	const struct bkt_tenant *ot;
	const struct bkt_block *ob;
	struct lkey *k;

	if (store__block_key_parse(e->key, tenant, sizeof(tenant), id))
		return 0; /* not a block: someone else's object, or a temporary */
	if (GROW(b->v, b->cap, b->n + 1, BKT_MAX_BLOCKS, NULL))
		return ERR_TOO_LARGE;
	k = &b->v[b->n];
	memset(k, 0, sizeof(*k));
	k->tenant = arena_strndup(&b->nx->mem, tenant, strlen(tenant));
	if (!k->tenant)
		return arena_failed(&b->nx->mem);
	memcpy(k->e.id, id, BLOCK_ID_BYTES);
	ot = store__bkt_tenant(b->old, tenant);
	ob = ot ? store__bkt_block(ot, id) : NULL;
	if (ob && ob->rec.bytes == e->size) {
		k->e = *ob; /* covers stay in the old index's arena until the PUT */
	} else {
		k->fresh = 1;
		k->e.rec.bytes = e->size;
		for (size_t i = 0; i < b->st->n_bucket_bad; i++) {
			struct bkt_bad *x = &b->st->bucket_bad[i];

			if (!strcmp(x->key, e->key)) {
				x->listed = x->size == e->size;
				k->bad = x->listed ? i + 1 : 0;
				break;
			}
		}
	}
	b->n++;
	return 0;
}

/* Remembers `key` (listed at `size`) as corrupt; past the cap, it is not. */
static void bad_add(struct store *st, const char *key, uint64_t size)
{
	struct bkt_bad *v;
	char *k;

	if (st->n_bucket_bad >= MAX_BAD_FOOTERS)
		return;
	v = realloc(st->bucket_bad, (st->n_bucket_bad + 1) * sizeof(*v));
	if (!v)
		return;
	st->bucket_bad = v;
	k = strdup(key);
	if (!k)
		return;
	v[st->n_bucket_bad++] = (struct bkt_bad){ k, size, 1 };
}

/*
 * After a pass that listed the bucket: forgets the corrupt keys it did not
 * list at the size remembered (deleted, or other bytes now: read again).
 */
static void bad_prune(struct store *st, int listed)
{
	size_t k = 0;

	for (size_t i = 0; i < st->n_bucket_bad; i++) {
		struct bkt_bad *x = &st->bucket_bad[i];

		if (x->listed || !listed) {
			x->listed = 0;
			st->bucket_bad[k++] = *x;
		} else {
			free(x->key);
		}
	}
	st->n_bucket_bad = k;
}

/* Reads the footer of a key the old index does not hold. */
static int read_fresh(struct build *b, struct lkey *k)
{
	struct bmeta m;
	struct buf key;
	struct err_msg why;
	uint64_t size = 0;
	int rc;

	buf_init(&key, OBJSTORE_KEY_MAX + 1);
	rc = store__block_key(k->tenant, k->e.id, &key);
	if (!rc)
		rc = buf_putc(&key, '\0');
	if (rc) {
		buf_release(&key);
		return rc;
	}
	err_clear(&why);
	rc = store__block_remote_footer(b->st, key.data, &m, &size, &why);
	stat_add(b->st, &b->st->bucket.footer_reads, 1);
	if (!rc && (memcmp(m.id, k->e.id, BLOCK_ID_BYTES) || strcmp(m.tenant, k->tenant))) {
		store__bmeta_release(&m);
		rc = err_set(&why, ERR_CORRUPT, "its footer names another block or tenant");
	}
	if (rc) {
		/* Left out of this index; the next pass tries again, but for
		 * corrupt bytes, which are left out until the object changes. */
		log_warn("bucket index: %s: %s; left out", key.data,
			 why.text[0] ? why.text : err_str(rc));
		if (rc == ERR_CORRUPT) {
			bad_add(b->st, key.data, k->e.rec.bytes);
			stat_add(b->st, &b->st->bucket.footers_corrupt, 1);
		}
		buf_release(&key);
		return rc == ERR_NOMEM ? rc : 1;
	}
	buf_release(&key);
	store__brec_of(&m, size, &k->e.rec);
	k->n_sources = (uint32_t)m.n_sources;
	if (m.n_sources) {
		k->sources = arena_alloc(&b->nx->mem, m.n_sources * BLOCK_ID_BYTES);
		if (k->sources)
			memcpy(k->sources, m.sources, m.n_sources * BLOCK_ID_BYTES);
		else
			rc = arena_failed(&b->nx->mem);
	}
	store__bmeta_release(&m);
	return rc;
}

static int lkey_cmp(const void *a, const void *b)
{
	const struct lkey *x = a, *y = b;
	int c = strcmp(x->tenant, y->tenant);

	return c ? c : memcmp(x->e.id, y->e.id, BLOCK_ID_BYTES);
}

/* bsearch: a block id against a key's. */
static int lkey_id_cmp(const void *id, const void *k)
{
	return memcmp(id, ((const struct lkey *)k)->e.id, BLOCK_ID_BYTES);
}

/*
 * Closes the covers of a fresh entry: its sources, and what each source
 * covers (as the old index or this pass holds it).  Fresh entries are
 * closed level by level, so a source read in the same pass is closed first.
 */
static int close_covers(struct build *b, struct lkey *k, size_t lo, size_t hi)
{
	uint8_t(*c)[BLOCK_ID_BYTES] = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	for (uint32_t i = 0; !rc && i < k->n_sources; i++) {
		const struct lkey *s =
			bsearch(k->sources[i], b->v + lo, hi - lo, sizeof(*b->v), lkey_id_cmp);
		const struct bkt_tenant *ot = store__bkt_tenant(b->old, k->tenant);
		const struct bkt_block *ob = s ? NULL : ot ? store__bkt_block(ot, k->sources[i]) : NULL;
		const struct bkt_block *src = s ? &s->e : ob;
		size_t add = 1 + (src ? src->n_covers : 0);

		rc = GROW(c, cap, n + add, BKT_MAX_COVERS, NULL);
		if (rc)
			break;
		memcpy(c[n++], k->sources[i], BLOCK_ID_BYTES);
		for (uint32_t j = 0; src && j < src->n_covers; j++)
			memcpy(c[n++], src->covers[j], BLOCK_ID_BYTES);
	}
	if (!rc && n) {
		size_t u = 0;
		qsort(c, n, BLOCK_ID_BYTES, store__cmp_id);
		for (size_t i = 0; i < n; i++)
			if ((!u || memcmp(c[u - 1], c[i], BLOCK_ID_BYTES)) &&
			    memcmp(c[i], k->e.id, BLOCK_ID_BYTES))
				memcpy(c[u++], c[i], BLOCK_ID_BYTES);
		k->e.covers = u ? arena_alloc(&b->nx->mem, u * BLOCK_ID_BYTES) : NULL;
		if (u && !k->e.covers)
			rc = arena_failed(&b->nx->mem);
		else if (u)
			memcpy(k->e.covers, c, u * BLOCK_ID_BYTES);
		k->e.n_covers = (uint32_t)u;
	}
	free(c);
	return rc == ERR_TOO_LARGE ? 0 : rc; /* past the cap: the sources alone would do */
}

/* Groups the sorted keys into the new index's tenants, fresh covers closed. */
static int build_tenants(struct build *b)
{
	struct bkt_index *nx = b->nx;
	size_t nt = 0;
	int rc = 0;

	for (size_t i = 0; i < b->n; i++)
		nt += !i || strcmp(b->v[i].tenant, b->v[i - 1].tenant);
	nx->tenants = nt ? arena_calloc(&nx->mem, nt, sizeof(*nx->tenants)) : NULL;
	if (nt && !nx->tenants)
		return arena_failed(&nx->mem);
	for (size_t i = 0; !rc && i < b->n;) {
		size_t j = i;
		struct bkt_tenant *t = &nx->tenants[nx->n_tenants++];

		while (j < b->n && !strcmp(b->v[j].tenant, b->v[i].tenant))
			j++;
		for (uint32_t level = 0; !rc && level <= BKT_MAX_LEVEL; level++)
			for (size_t q = i; !rc && q < j; q++)
				if (b->v[q].fresh && b->v[q].e.rec.level == level)
					rc = close_covers(b, &b->v[q], i, j);
		t->name = b->v[i].tenant;
		t->n_blocks = j - i;
		t->blocks = arena_calloc(&nx->mem, j - i, sizeof(*t->blocks));
		if (!t->blocks)
			return arena_failed(&nx->mem);
		for (size_t q = i; q < j; q++)
			t->blocks[q - i] = b->v[q].e;
		i = j;
	}
	return rc;
}

/* Marks what the rule hides and what retention expired; counts the new marks. */
static int mark_tenant(struct store *st, struct bkt_tenant *t, int64_t now, int64_t clock,
		       uint64_t *marks)
{
	uint32_t *res = malloc((t->n_blocks + 1) * sizeof(*res));
	int64_t ret = store__retention(st, t->name), cutoff = INT64_MIN;
	int rc;

	if (!res)
		return ERR_NOMEM;
	if (ret > 0 && __builtin_sub_overflow(clock, ret, &cutoff))
		cutoff = INT64_MIN;
	rc = store__bkt_resolve(t, res);
	for (size_t i = 0; !rc && i < t->n_blocks; i++) {
		struct bkt_block *e = &t->blocks[i];
		uint32_t m = res[i];

		if (e->mark)
			continue;
		if (m == BKT_LIVE && e->rec.max_time < cutoff)
			m = BKT_EXPIRED;
		if (m != BKT_LIVE) {
			e->mark = m;
			e->marked_ns = now;
			(*marks)++;
		}
	}
	free(res);
	return rc;
}

/* Deletes the objects marked at least the delay ago; errors are counted and logged. */
static void delete_marked(struct store *st, const struct bkt_index *x, int64_t now)
{
	int64_t delay = st->bucket_delete_delay_ns;
	struct buf key;

	buf_init(&key, OBJSTORE_KEY_MAX + 1);
	for (size_t i = 0; i < x->n_tenants; i++) {
		const struct bkt_tenant *t = &x->tenants[i];
		for (size_t j = 0; j < t->n_blocks; j++) {
			const struct bkt_block *e = &t->blocks[j];
			struct err_msg m;
			int rc;

			if (!e->mark || e->marked_ns > now - delay)
				continue;
			buf_reset(&key);
			rc = store__block_key(t->name, e->id, &key);
			if (!rc)
				rc = buf_putc(&key, '\0');
			err_clear(&m);
			if (!rc)
				rc = objstore_delete(st->objstore, key.data, &m);
			if (rc) {
				stat_add(st, &st->bucket.delete_failures, 1);
				log_warn("bucket index: delete %s: %s; retried at the next pass",
					 key.data, m.text[0] ? m.text : err_str(rc));
				continue;
			}
			stat_add(st, &st->bucket.deleted_objects, 1);
			log_info("bucket index: deleted block %s of tenant %s (marked %s %lld s ago)",
				 key.data, t->name,
				 e->mark == BKT_EXPIRED ? "expired"
				 : e->mark == BKT_DUPLICATE ? "a duplicate" : "replaced",
				 (long long)((now - e->marked_ns) / 1000000000));
		}
	}
	buf_release(&key);
}

static int apply(struct store *st, const struct bkt_index *x, struct err_msg *msg);

int store__bucket_index_pass(struct store *st, struct err_msg *msg)
{
	struct bkt_index old, nx;
	struct build b;
	struct buf out;
	size_t old_bytes = 0;
	uint64_t marks = 0, blocks = 0;
	int64_t now = store__wall(st), clock = store__clock(st);
	int rc, listed;

	memset(&b, 0, sizeof(b));
	store__bkt_init(&nx, BUILD_ARENA_CAP);
	rc = index_get(st, &old, &old_bytes, msg);
	if (rc == ERR_CORRUPT) {
		/* Rebuilt from the footers; its marks' times start again. */
		log_warn("%s; the index is rebuilt from the blocks", msg->text);
		err_clear(msg);
	}
	if (rc == ERR_NOT_FOUND || rc == ERR_CORRUPT) {
		store__bkt_init(&old, 1);
		rc = 0;
	}
	if (rc) {
		store__bkt_release(&nx);
		goto fail;
	}
	b.st = st;
	b.old = &old;
	b.nx = &nx;
	b.msg = msg;
	rc = objstore_list(st->objstore, BLOCKS_DIR "/", list_cb, &b, msg);
	if (rc == ERR_TOO_LARGE)
		err_set(msg, rc, "bucket index: more than %u blocks", BKT_MAX_BLOCKS);
	listed = !rc;
	for (size_t i = 0; !rc && i < b.n; i++) {
		if (!b.v[i].fresh)
			continue;
		if (b.v[i].bad) {
			/* Still reported at every pass, without reading it again. */
			log_warn("bucket index: %s: its footer was found corrupt, and the object "
				 "is unchanged (%llu bytes); left out",
				 st->bucket_bad[b.v[i].bad - 1].key,
				 (unsigned long long)b.v[i].e.rec.bytes);
			stat_add(st, &st->bucket.footers_corrupt, 1);
			rc = 1;
		} else {
			rc = read_fresh(&b, &b.v[i]);
		}
		if (rc == 1) { /* unreadable: dropped from this index */
			b.v[i] = b.v[--b.n];
			i--;
			rc = 0;
		}
	}
	bad_prune(st, listed);
	if (!rc && b.n) /* an empty bucket lists nothing, and b.v is NULL */
		qsort(b.v, b.n, sizeof(*b.v), lkey_cmp);
	if (!rc)
		rc = build_tenants(&b);
	for (size_t i = 0; !rc && i < nx.n_tenants; i++) {
		rc = mark_tenant(st, &nx.tenants[i], now, clock, &marks);
		blocks += nx.tenants[i].n_blocks;
	}
	nx.written_ns = now;
	buf_init(&out, BKT_MAX_BYTES);
	if (!rc)
		rc = store__bkt_encode(&nx, &out);
	if (!rc)
		rc = objstore_put(st->objstore, BKT_KEY, out.data, out.len, 0, msg);
	if (!rc) {
		pthread_mutex_lock(&st->bucket_mu);
		st->bucket.index_writes++;
		st->bucket.marks += marks;
		st->bucket.index_blocks = blocks;
		st->bucket.index_bytes = out.len;
		pthread_mutex_unlock(&st->bucket_mu);
		delete_marked(st, &nx, now);
		store__direfs_pass(st, &nx, now); /* debug info by the same index (section 13) */
		if (st->bucket_mode & STORE_BUCKET_DISCOVER)
			rc = apply(st, &nx, msg);
	}
	buf_release(&out);
	free(b.v);
	store__bkt_release(&nx);
	store__bkt_release(&old);
fail:
	atomic_store(&st->bucket_indexed, !rc);
	if (rc)
		stat_add(st, &st->bucket.index_failures, 1);
	return rc;
}

/* ---- readers ------------------------------------------------------------------- */

/* Unlists b and deletes its record (it may have none); under the locks a
 * publication takes, so a reader sees it or not, never half. */
static int unlist(struct store *st, struct tenant *t, struct block *b)
{
	uint8_t rk[5 + BLOCK_ID_BYTES];
	char *err = NULL;
	int done = 0;

	store__brec_key(rk, t->id, b->id);
	pthread_rwlock_wrlock(&st->commit_lock);
	rocksdb_delete_cf(st->db, st->wopt_sync, st->cf[CFI_META], (const char *)rk, sizeof(rk),
			  &err);
	if (!err) {
		pthread_mutex_lock(&t->mu);
		if (b->live && !store__block_bury(t, b)) {
			b->doomed = !b->remote; /* a remote block has no file of ours */
			done = 1;
		}
		pthread_mutex_unlock(&t->mu);
	}
	pthread_rwlock_unlock(&st->commit_lock);
	if (err)
		return store__rocks_err(NULL, ERR_IO, "unlist a block", err);
	if (done)
		store__block_uncache(st, b);
	return 0;
}

/*
 * The ids a sync must not list again: those of t's live blocks v[0..n)
 * and of every source they name, sorted for bsearch (owned; *len ids).
 */
static int taken_ids(struct block **v, size_t n, uint8_t (**out)[BLOCK_ID_BYTES], size_t *len)
{
	size_t k = n;

	for (size_t i = 0; i < n; i++)
		k += v[i]->have_meta ? v[i]->m.n_sources : 0;
	*out = malloc((k + 1) * BLOCK_ID_BYTES);
	if (!*out)
		return ERR_NOMEM;
	k = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy((*out)[k++], v[i]->id, BLOCK_ID_BYTES);
		for (size_t j = 0; v[i]->have_meta && j < v[i]->m.n_sources; j++)
			memcpy((*out)[k++], v[i]->m.sources[j], BLOCK_ID_BYTES);
	}
	if (k)
		qsort(*out, k, BLOCK_ID_BYTES, store__cmp_id);
	*len = k;
	return 0;
}

/* Raises *v to at least x. */
static void raise_to(_Atomic int64_t *v, int64_t x)
{
	for (int64_t cur = atomic_load(v); x > cur;)
		if (atomic_compare_exchange_weak(v, &cur, x))
			break;
}

/* Why the index no longer counts a block, for the log. */
static const char *gone_why(const struct bkt_block *e, uint32_t r)
{
	return !e ? "no longer in the bucket" : r == BKT_EXPIRED ? "expired"
	       : r == BKT_DUPLICATE ? "a duplicate" : "replaced";
}

/* Deletes b's record, if it has one (a remote block has none). */
static int unrecord(struct store *st, struct tenant *t, struct block *b)
{
	uint8_t rk[5 + BLOCK_ID_BYTES];
	char *err = NULL;

	store__brec_key(rk, t->id, b->id);
	rocksdb_delete_cf(st->db, st->wopt_sync, st->cf[CFI_META], (const char *)rk, sizeof(rk),
			  &err);
	return err ? store__rocks_err(NULL, ERR_IO, "unlist a block", err) : 0;
}

/*
 * The remote blocks the index stopped counting (drop) leave the list and
 * the new ones it counts (add, registered) join it in one critical
 * section under the locks a reader opens with: a reader sees the list of
 * one index or of the next, never a block and its replacement both, nor
 * neither (what a querier tells its ingesters, section 13, relies on it).
 */
static void swap_remote(struct store *st, struct tenant *t, struct block **drop, size_t n_drop,
			struct block **add, size_t n_add, uint64_t *gone, uint64_t *added)
{
	pthread_rwlock_wrlock(&st->commit_lock);
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < n_drop; i++) {
		if (drop[i]->live && !store__block_bury(t, drop[i]))
			++*gone;
		else
			drop[i] = NULL;
	}
	for (size_t i = 0; i < n_add; i++) {
		if (!store__block_list(t, add[i]))
			++*added;
	}
	pthread_mutex_unlock(&t->mu);
	pthread_rwlock_unlock(&st->commit_lock);
	for (size_t i = 0; i < n_drop; i++)
		if (drop[i])
			store__block_uncache(st, drop[i]);
	for (size_t i = 0; i < n_add; i++) {
		raise_to(&st->newest_ns, add[i]->m.max_time);
		store__block_put(st, add[i]); /* the list holds it, or it goes */
	}
}

/*
 * The ids a sync keeps listed although the index no longer counts them:
 * every block that a new block which could not be read this sync
 * replaces, directly or through the blocks it replaces (held[i] marks the
 * index's blocks[i] that could not be read).  Until the new block can be
 * read, its sources hold its profiles; without them a querier would
 * answer without those profiles until the next sync.  Sorted for bsearch
 * (owned; *len ids).
 */
static int held_ids(const struct bkt_tenant *xt, uint8_t *held, uint8_t (**out)[BLOCK_ID_BYTES],
		    size_t *len)
{
	size_t k = 0;
	int changed = 1;

	/* Down the chain of replacements: a pass per compaction level. */
	while (changed) {
		changed = 0;
		for (size_t i = 0; i < xt->n_blocks; i++) {
			for (uint32_t j = 0; held[i] && j < xt->blocks[i].n_covers; j++) {
				const struct bkt_block *c = store__bkt_block(xt, xt->blocks[i].covers[j]);

				if (c && !held[c - xt->blocks]) {
					held[c - xt->blocks] = 1;
					changed = 1;
				}
			}
		}
	}
	for (size_t i = 0; i < xt->n_blocks; i++)
		k += held[i] ? xt->blocks[i].n_covers : 0;
	*out = malloc((k + 1) * BLOCK_ID_BYTES);
	if (!*out)
		return ERR_NOMEM;
	k = 0;
	for (size_t i = 0; i < xt->n_blocks; i++)
		for (uint32_t j = 0; held[i] && j < xt->blocks[i].n_covers; j++)
			memcpy((*out)[k++], xt->blocks[i].covers[j], BLOCK_ID_BYTES);
	if (k)
		qsort(*out, k, BLOCK_ID_BYTES, store__cmp_id);
	*len = k;
	return 0;
}

static int apply_tenant(struct store *st, struct tenant *t, const struct bkt_tenant *xt,
			int64_t written_ns)
{
	int discover = !!(st->bucket_mode & STORE_BUCKET_DISCOVER);
	uint32_t *res = NULL;
	uint8_t(*taken)[BLOCK_ID_BYTES] = NULL, (*kept)[BLOCK_ID_BYTES] = NULL;
	uint8_t *held = NULL;
	struct block **v = NULL, **drop = NULL, **add = NULL;
	size_t n = 0, n_taken = 0, n_kept = 0, n_drop = 0, n_add = 0;
	uint64_t added = 0, gone = 0;
	int rc = 0;

	if (xt) {
		res = malloc((xt->n_blocks + 1) * sizeof(*res));
		held = calloc(xt->n_blocks + 1, 1);
		if (!res || !held)
			rc = ERR_NOMEM;
		else
			rc = store__bkt_resolve(xt, res);
	}
	if (store__blocks_snapshot(t, &v, &n) || !(drop = malloc((n + 1) * sizeof(*drop))))
		rc = ERR_NOMEM;
	if (!rc && xt && !(add = malloc((xt->n_blocks + 1) * sizeof(*add))))
		rc = ERR_NOMEM;
	/* An uploaded block of ours the index marks goes now. */
	for (size_t i = 0; !rc && i < n; i++) {
		struct block *b = v[i];
		const struct bkt_block *e = xt ? store__bkt_block(xt, b->id) : NULL;
		uint32_t r = e ? res[e - xt->blocks] : BKT_REPLACED;

		if (b->remote || !e || r == BKT_LIVE || !atomic_load(&b->uploaded))
			continue;
		/* A querier whose view is older than this index may not account
		 * for what we drop: peers.c answers it 409.  Raised first, so a
		 * reader that misses b sees it raised (section 13). */
		raise_to(&st->bucket_pruned_ns, written_ns);
		rc = unlist(st, t, b);
		if (!rc) {
			gone++;
			log_info("bucket index: block %s of tenant %s unlisted (%s)", b->id_hex, t->name,
				 gone_why(e, r));
		}
	}
	/* The new blocks the index counts: never one of ours again, nor one a
	 * block of ours replaced (an output of ours the index has not seen
	 * yet). */
	if (!rc && discover && xt)
		rc = taken_ids(v, n, &taken, &n_taken);
	for (size_t i = 0; !rc && discover && xt && i < xt->n_blocks; i++) {
		const struct bkt_block *e = &xt->blocks[i];
		struct err_msg why;
		int r;

		if (res[i] != BKT_LIVE || bsearch(e->id, taken, n_taken, BLOCK_ID_BYTES, store__cmp_id))
			continue;
		err_clear(&why);
		r = store__block_remote_new(st, t, e->id, &e->rec,
					    (const uint8_t(*)[BLOCK_ID_BYTES])e->covers, e->n_covers,
					    &add[n_add], &why);
		if (r == ERR_NOMEM) {
			rc = r;
		} else if (r) {
			/* Tried again at the next sync. */
			held[i] = 1;
			stat_add(st, &st->bucket.sync_failures, 1);
			log_warn("bucket index: block of tenant %s: %s", t->name,
				 why.text[0] ? why.text : err_str(r));
		} else {
			n_add++;
		}
	}
	if (!rc && discover && xt)
		rc = held_ids(xt, held, &kept, &n_kept);
	/* A remote block the index no longer accepts goes as the new ones
	 * join, unless a new block that could not be read replaces it. */
	for (size_t i = 0; !rc && discover && i < n; i++) {
		struct block *b = v[i];
		const struct bkt_block *e = xt ? store__bkt_block(xt, b->id) : NULL;
		uint32_t r = e ? res[e - xt->blocks] : BKT_REPLACED;

		if (!b->remote || r == BKT_LIVE)
			continue;
		if (n_kept && bsearch(b->id, kept, n_kept, BLOCK_ID_BYTES, store__cmp_id)) {
			log_info("bucket index: block %s of tenant %s kept until the block that "
				 "replaces it can be read", b->id_hex, t->name);
			continue;
		}
		rc = unrecord(st, t, b);
		if (!rc) {
			drop[n_drop++] = b;
			log_info("bucket index: block %s of tenant %s unlisted (%s)", b->id_hex,
				 t->name, gone_why(e, r));
		}
	}
	/* Never a new block listed next to a block it replaces. */
	if (rc) {
		for (size_t i = 0; i < n_add; i++)
			store__block_put(st, add[i]);
		n_add = 0;
	}
	if (n_drop || n_add)
		swap_remote(st, t, drop, n_drop, add, n_add, &gone, &added);
	store__blocks_release(st, v, n);
	free(drop);
	free(add);
	free(res);
	free(held);
	free(taken);
	free(kept);
	pthread_mutex_lock(&st->bucket_mu);
	st->bucket.discovered_blocks += added;
	st->bucket.unlisted_blocks += gone;
	pthread_mutex_unlock(&st->bucket_mu);
	return rc;
}

static int apply(struct store *st, const struct bkt_index *x, struct err_msg *msg)
{
	struct tenant *t;
	int rc = 0;

	for (size_t i = 0; !rc && (st->bucket_mode & STORE_BUCKET_DISCOVER) && i < x->n_tenants;
	     i++) {
		pthread_mutex_lock(&st->writer);
		rc = store__tenant_ensure(st, x->tenants[i].name, &t, msg);
		pthread_mutex_unlock(&st->writer);
	}
	for (size_t i = 0; !rc; i++) {
		pthread_mutex_lock(&st->mu);
		t = i < st->n_tenants ? st->tenants[i] : NULL;
		pthread_mutex_unlock(&st->mu);
		if (!t)
			break;
		rc = apply_tenant(st, t, store__bkt_tenant(x, t->name), x->written_ns);
		store__reclaim(st, t, 0);
	}
	if (rc)
		err_set(msg, rc, "bucket index: %s", err_str(rc));
	else
		raise_to(&st->bucket_view_ns, x->written_ns);
	return rc;
}

/* Forgets the index the last sync read (bucket_sync_mu held). */
static void index_forget(struct store *st)
{
	if (st->bucket_idx) {
		store__bkt_release(st->bucket_idx);
		free(st->bucket_idx);
	}
	st->bucket_idx = NULL;
	st->bucket_idx_etag[0] = '\0';
}

/*
 * The index into st->bucket_idx: read and decoded only when its ETag is
 * not the one of the copy kept (a conditional GET: an unchanged index
 * costs one 304, no bytes and no decoding).  ERR_NOT_FOUND when there is
 * none; on any failure nothing is kept.  bucket_sync_mu held.
 */
static int index_fresh(struct store *st, struct err_msg *msg)
{
	char etag[OBJSTORE_ETAG_MAX] = "";
	struct bkt_index *x = NULL;
	int changed = 1, rc;
	struct buf b;

	buf_init(&b, BKT_MAX_BYTES);
	rc = objstore_get_if_changed(st->objstore, BKT_KEY,
				     st->bucket_idx ? st->bucket_idx_etag : NULL, &b, etag,
				     &changed, msg);
	if (!rc && changed && !(x = malloc(sizeof(*x))))
		rc = err_set(msg, ERR_NOMEM, "bucket index: out of memory");
	if (!rc && changed && (rc = store__bkt_decode((const uint8_t *)b.data, b.len, x, msg))) {
		free(x);
		x = NULL;
	}
	if (rc || changed)
		index_forget(st);
	if (x) {
		st->bucket_idx = x;
		st->bucket_idx_bytes = b.len;
		/* Without a tag (a server that sends none) it is read every time. */
		_Static_assert(sizeof(st->bucket_idx_etag) == OBJSTORE_ETAG_MAX, "ETag size");
		memcpy(st->bucket_idx_etag, etag, sizeof(etag));
	}
	buf_release(&b);
	return rc;
}

int store_bucket_sync(struct store *st, struct err_msg *msg)
{
	const struct bkt_index *x;
	int rc;

	if (!st->objstore || !(st->bucket_mode & (STORE_BUCKET_DISCOVER | STORE_BUCKET_PRUNE)))
		return 0;
	pthread_mutex_lock(&st->bucket_sync_mu);
	rc = index_fresh(st, msg);
	if (rc == ERR_NOT_FOUND) {
		/* No index written yet: nothing to learn, and nothing to unlist. */
		pthread_mutex_unlock(&st->bucket_sync_mu);
		err_clear(msg);
		return 0;
	}
	if (!rc) {
		x = st->bucket_idx;
		/* Applied again even when unchanged: what it means depends on
		 * this store too (its own blocks, footers that failed to read). */
		pthread_mutex_lock(&st->maint_mu);
		/* The writer's pass applies each index it writes: one read
		 * before it, applied last, would take back blocks the newer one
		 * replaced. */
		if (x->written_ns >= atomic_load(&st->bucket_view_ns))
			rc = apply(st, x, msg);
		pthread_mutex_unlock(&st->maint_mu);
		pthread_mutex_lock(&st->bucket_mu);
		st->bucket.syncs++;
		st->bucket.index_blocks = 0;
		for (size_t i = 0; i < x->n_tenants; i++)
			st->bucket.index_blocks += x->tenants[i].n_blocks;
		st->bucket.index_bytes = st->bucket_idx_bytes;
		pthread_mutex_unlock(&st->bucket_mu);
	}
	pthread_mutex_unlock(&st->bucket_sync_mu);
	if (rc)
		stat_add(st, &st->bucket.sync_failures, 1);
	return rc;
}

/* ---- compaction gate and stats ----------------------------------------------------- */

/* Counts t's live local blocks not uploaded yet and the oldest's creation time. */
static void pending(struct tenant *t, uint64_t *n, int64_t *oldest)
{
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n_blocks; i++) {
		const struct block *b = t->blocks[i];
		if (b->remote || atomic_load(&b->uploaded) || atomic_load(&b->bad) || !b->have_meta)
			continue;
		(*n)++;
		if (b->m.created_ns < *oldest)
			*oldest = b->m.created_ns;
	}
	pthread_mutex_unlock(&t->mu);
}

static void pending_all(struct store *st, uint64_t *n, int64_t *oldest)
{
	*n = 0;
	*oldest = INT64_MAX;
	pthread_mutex_lock(&st->mu);
	for (size_t i = 0; i < st->n_tenants; i++)
		pending(st->tenants[i], n, oldest);
	pthread_mutex_unlock(&st->mu);
}

int store__bucket_may_compact(struct store *st)
{
	uint64_t n;
	int64_t oldest;

	if (!(st->bucket_mode & STORE_BUCKET_DISCOVER))
		return 1;
	if (!atomic_load(&st->bucket_indexed))
		return 0;
	pending_all(st, &n, &oldest);
	return n == 0;
}

void store_bucket_stats(struct store *st, struct store_bucket_stats *out)
{
	uint64_t n;
	int64_t oldest, now = clock_wall_ns();

	pthread_mutex_lock(&st->bucket_mu);
	*out = st->bucket;
	pthread_mutex_unlock(&st->bucket_mu);
	out->enabled = st->objstore != NULL;
	if (!st->objstore)
		return;
	pending_all(st, &n, &oldest);
	out->upload_pending = n;
	out->upload_lag_ns = n && now > oldest ? now - oldest : 0;
}

/* ---- the sync thread ----------------------------------------------------------- */

static void *sync_main(void *arg)
{
	struct store *st = arg;

	pthread_mutex_lock(&st->bucket_wait_mu);
	while (!st->bucket_stop) {
		struct err_msg m;
		int rc;

		thread_wait_until(&st->bucket_cv, &st->bucket_wait_mu,
				  clock_mono_ns() + st->bucket_sync_ns);
		if (st->bucket_stop)
			break;
		pthread_mutex_unlock(&st->bucket_wait_mu);
		err_clear(&m);
		rc = store_bucket_sync(st, &m);
		if (rc)
			log_warn("bucket index sync: %s; tried again in %lld s",
				 m.text[0] ? m.text : err_str(rc),
				 (long long)(st->bucket_sync_ns / 1000000000));
		pthread_mutex_lock(&st->bucket_wait_mu);
	}
	pthread_mutex_unlock(&st->bucket_wait_mu);
	return NULL;
}

int store__bucket_open(struct store *st, struct err_msg *msg)
{
	struct err_msg m;
	int rc;

	(void)msg;
	if (!st->bucket_delete_delay_ns)
		st->bucket_delete_delay_ns = DEFAULT_DELETE_DELAY_NS;
	thread_cond_init_mono(&st->bucket_cv);
	if (!st->objstore || st->read_only ||
	    !(st->bucket_mode & (STORE_BUCKET_DISCOVER | STORE_BUCKET_PRUNE)))
		return 0;
	/* A bucket down at open is no reason not to serve: the thread retries. */
	err_clear(&m);
	rc = store_bucket_sync(st, &m);
	if (rc == ERR_NOMEM)
		return rc;
	if (rc)
		log_warn("bucket index sync at open: %s", m.text[0] ? m.text : err_str(rc));
	if (st->bucket_sync_ns <= 0)
		return 0;
	if (pthread_create(&st->bucket_thread, NULL, sync_main, st) != 0)
		return ERR_NOMEM;
	st->bucket_started = 1;
	return 0;
}

void store__bucket_free(struct store *st)
{
	for (size_t i = 0; i < st->n_bucket_bad; i++)
		free(st->bucket_bad[i].key);
	free(st->bucket_bad);
	st->bucket_bad = NULL;
	st->n_bucket_bad = 0;
}

void store__bucket_close(struct store *st)
{
	if (st->bucket_started) {
		thread_stop(st->bucket_thread, &st->bucket_wait_mu, &st->bucket_cv,
			    &st->bucket_stop);
		st->bucket_started = 0;
	}
	pthread_mutex_lock(&st->bucket_sync_mu);
	index_forget(st);
	pthread_mutex_unlock(&st->bucket_sync_mu);
}
