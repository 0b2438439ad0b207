/*
 * maint.c - maintenance: sealing the head's ended time ranges into level-0
 * blocks, compacting blocks into larger ones, deleting blocks past
 * retention, and the background thread that runs these.  The crash-safety
 * argument of each step is in storage_int.h, section 10; the test hook
 * store__crashpoint() marks the points the integration tests kill at.
 */
#include "storage_int.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/thread.h"
#include "base/varint.h"

/* Level k > 0 covers LEVEL_MULT[k] level-0 ranges (1 h, 6 h, 24 h by default). */
static const int64_t LEVEL_MULT[] = { 1, 6, 24 };
#define N_LEVELS (sizeof(LEVEL_MULT) / sizeof(LEVEL_MULT[0]))
/* Windows of an epoch this many epochs old are sealed even before their range ended. */
#define FORCE_EPOCHS 3
#define MAX_PLAN ((size_t)1 << 26)

void store__crashpoint(struct store *st, const char *point)
{
	if (st->crashpoint[0] && strcmp(st->crashpoint, point) == 0) {
		log_warn("crash point %s reached: killing the process (UNHEX_CRASHPOINT)", point);
		raise(SIGKILL);
	}
}

static void add_stats(struct store_maint_stats *a, const struct store_maint_stats *b)
{
	a->sealed_blocks += b->sealed_blocks;
	a->sealed_profiles += b->sealed_profiles;
	a->compactions += b->compactions;
	a->compacted_blocks += b->compacted_blocks;
	a->expired_blocks += b->expired_blocks;
	a->expired_bytes += b->expired_bytes;
	a->dropped_epochs += b->dropped_epochs;
	a->uploaded_blocks += b->uploaded_blocks;
	a->uploaded_bytes += b->uploaded_bytes;
	a->upload_failures += b->upload_failures;
	a->upload_found += b->upload_found;
}

/* A series' label key (storage_int.h, section 4), the order of series in a block. */
int store__label_key(const struct store_label *l, size_t n, struct buf *out)
{
	int rc;

	buf_reset(out);
	rc = buf_put_uvarint(out, n);
	for (size_t i = 0; i < n && !rc; i++) {
		size_t a = strlen(l[i].name), b = strlen(l[i].value);
		rc = buf_put_uvarint(out, a);
		if (!rc)
			rc = buf_append(out, l[i].name, a);
		if (!rc)
			rc = buf_put_uvarint(out, b);
		if (!rc)
			rc = buf_append(out, l[i].value, b);
	}
	return rc;
}

size_t store__labels_size(const struct store_label *l, size_t n)
{
	size_t bytes = 0;

	for (size_t i = 0; i < n; i++)
		bytes += strlen(l[i].name) + strlen(l[i].value) + 2;
	return bytes;
}

void store__labels_copy(const struct store_label *l, size_t n, char *text,
			struct store_label *out)
{
	for (size_t i = 0; i < n; i++) {
		size_t a = strlen(l[i].name) + 1, b = strlen(l[i].value) + 1;

		out[i].name = memcpy(text, l[i].name, a);
		out[i].value = memcpy(text + a, l[i].value, b);
		text += a + b;
	}
}

const char *store__service_of(const struct store_label *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i].name, STORE_LABEL_SERVICE) == 0)
			return l[i].value;
	return NULL;
}


void store__wser_free(struct wser *s)
{
	free(s->svc);
	free(s->key);
	free(s->labels);
	free(s->text);
}

int store__wser_set(struct wser *s, const struct store_label *l, size_t n, struct buf *kb)
{
	size_t bytes = store__labels_size(l, n);
	const char *svc = store__service_of(l, n);
	int rc;

	if (!svc)
		return ERR_CORRUPT;
	rc = store__label_key(l, n, kb);
	if (rc)
		return rc;
	s->svc = strdup(svc);
	s->key = malloc(kb->len ? kb->len : 1);
	s->labels = calloc(n, sizeof(*s->labels));
	s->text = malloc(bytes ? bytes : 1);
	if (!s->svc || !s->key || !s->labels || !s->text)
		return ERR_NOMEM;
	memcpy(s->key, kb->data, kb->len);
	s->key_len = kb->len;
	store__labels_copy(l, n, s->text, s->labels);
	s->n_labels = n;
	return 0;
}

int store__wser_cmp(const void *a, const void *b)
{
	const struct wser *x = a, *y = b;
	int c = strcmp(x->svc, y->svc);
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;

	if (c)
		return c;
	c = memcmp(x->key, y->key, n);
	return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

/* ---- sealing ------------------------------------------------------------------- */

/* A head chunk to seal. */
struct skey {
	uint32_t range;  /* index into the plan's ranges */
	uint64_t series;
	int64_t window;
	uint8_t key[CHUNK_KEY_LEN];
	uint8_t klen;
};

struct seal {
	struct store *st;
	struct tenant *t;
	const rocksdb_snapshot_t *snap;
	rocksdb_readoptions_t *ro;
	uint32_t max_epoch;
	int64_t clock;          /* the pass's clock (store_maintain) */
	int64_t wpr;            /* windows per range */
	int64_t *ranges;        /* range indexes, ascending */
	size_t n_ranges, cap_ranges;
	struct skey *keys;      /* sorted by (range, series, window, epoch) */
	size_t n_keys, cap_keys;
	/* pinned partitions of the sealed epochs and their views */
	struct part **pinned;
	struct store_symbols *views;
	size_t n_pinned;
};

static int skey_cmp(const void *a, const void *b)
{
	const struct skey *x = a, *y = b;

	if (x->range != y->range)
		return x->range < y->range ? -1 : 1;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->window != y->window)
		return x->window < y->window ? -1 : 1;
	return memcmp(x->key, y->key, CHUNK_KEY_LEN) < 0 ? -1 : 1;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Whether range r ended seal_delay ago by the clock. */
static int range_over(struct store *st, int64_t r, int64_t clock)
{
	int64_t end;

	if (__builtin_mul_overflow(r + 1, st->block_range_ns, &end) ||
	    __builtin_add_overflow(end, st->seal_delay_ns, &end))
		return 0;
	return end <= clock;
}

/* The ranges to seal now (writer lock held). */
static int plan_ranges(struct seal *s, unsigned flags)
{
	struct tenant *t = s->t;
	int64_t clock = s->clock;
	uint32_t cur = store__epoch_current(t);
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < t->n_epochs && !rc; i++) {
		const struct epoch *e = &t->epochs[i];
		int forced = e->n + FORCE_EPOCHS <= cur;
		for (size_t j = 0; j < e->n_win && !rc; j++) {
			int64_t r = floor_div(e->win[j], s->wpr);
			if (!(flags & STORE_MAINT_SEAL_ALL) && !forced && !range_over(s->st, r, clock))
				continue;
			rc = GROW(s->ranges, s->cap_ranges, s->n_ranges + 1, MAX_PLAN, NULL);
			if (!rc)
				s->ranges[s->n_ranges++] = r;
		}
	}
	if (rc || !s->n_ranges)
		return rc;
	qsort(s->ranges, s->n_ranges, sizeof(*s->ranges), i64_cmp);
	for (size_t i = 0; i < s->n_ranges; i++)
		if (!k || s->ranges[k - 1] != s->ranges[i])
			s->ranges[k++] = s->ranges[i];
	s->n_ranges = k;
	return 0;
}

static int range_index(const struct seal *s, int64_t r)
{
	const int64_t *at = NULL;

	if (s->n_ranges) /* ranges is NULL while empty, and bsearch wants a base */
		at = bsearch(&r, s->ranges, s->n_ranges, sizeof(*s->ranges), i64_cmp);
	return at ? (int)(at - s->ranges) : -1;
}

/* The chunk keys of the snapshot to seal: planned ranges, epochs <= max_epoch. */
static int collect_keys(struct seal *s, struct err_msg *msg)
{
	struct scan sc;
	int rc;

	rc = store__scan_tag(s->st, CFI_SAMPLES, s->snap, s->t->id, TAG_CHUNK, &sc);
	for (; !rc && rocksdb_iter_valid(sc.it); rocksdb_iter_next(sc.it)) {
		size_t klen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(sc.it, &klen);
		struct skey *sk;
		uint64_t series;
		int64_t w;
		uint32_t e;
		int ri;

		if (store__chunk_key_parse(k, klen, &series, &w, &e)) {
			rc = err_set(msg, ERR_CORRUPT, "seal: bad chunk key of tenant %s", s->t->name);
			break;
		}
		if (e > s->max_epoch || (ri = range_index(s, floor_div(w, s->wpr))) < 0)
			continue;
		rc = GROW(s->keys, s->cap_keys, s->n_keys + 1, MAX_PLAN, NULL);
		if (rc)
			break;
		sk = &s->keys[s->n_keys++];
		sk->range = (uint32_t)ri;
		sk->series = series;
		sk->window = w;
		memset(sk->key, 0, sizeof(sk->key));
		memcpy(sk->key, k, klen);
		sk->klen = (uint8_t)klen;
	}
	if (rc)
		store__scan_close(&sc, NULL);
	else
		rc = store__scan_close(&sc, msg);
	if (!rc && s->n_keys) /* a GROW array is NULL while empty; qsort wants a base */
		qsort(s->keys, s->n_keys, sizeof(*s->keys), skey_cmp);
	return rc;
}

static const struct store_symbols *pinned_view(const struct seal *s, uint32_t part)
{
	size_t i = store__part_lower(s->pinned, s->n_pinned, part);

	return i < s->n_pinned && s->pinned[i]->id == part ? &s->views[i] : NULL;
}

/* Reads series `id`'s labels from the snapshot into w. */
static int series_labels(struct seal *s, uint64_t id, struct wser *w, struct buf *kb,
			 struct err_msg *msg)
{
	struct store_label l[STORE_MAX_LABELS];
	uint8_t k[13];
	char *err = NULL, *v;
	size_t vlen;
	int rc = 0;

	key_tenant_tag(k, s->t->id, TAG_SERIES);
	be64_put(k + 5, id);
	v = rocksdb_get_cf(s->st->db, s->ro, s->st->cf[CFI_SERIES], (const char *)k, 13, &vlen, &err);
	if (err)
		return store__rocks_err(msg, ERR_IO, "seal: read series", err);
	if (!v)
		return err_set(msg, ERR_CORRUPT, "seal: chunks of series %llu without its record",
			       (unsigned long long)id);
	{
		/* version, uv part, uv n, n x (uv len, name, uv len, value) */
		const uint8_t *p = (const uint8_t *)v + 1, *end = (const uint8_t *)v + vlen;
		char text[2 * STORE_MAX_LABELS * (STORE_MAX_LABEL_BYTES + 1)];
		uint64_t part, n, len;
		size_t at = 0, c;

		if (vlen < 2 || v[0] != 1 || !(c = varint_get(p, end, &part)))
			rc = ERR_CORRUPT;
		p += rc ? 0 : c;
		if (!rc && (!(c = varint_get(p, end, &n)) || n == 0 || n > STORE_MAX_LABELS))
			rc = ERR_CORRUPT;
		p += rc ? 0 : c;
		for (uint64_t i = 0; !rc && i < 2 * n; i++) {
			if (!(c = varint_get(p, end, &len)) || len > STORE_MAX_LABEL_BYTES ||
			    len > (uint64_t)(end - p - c)) {
				rc = ERR_CORRUPT;
				break;
			}
			memcpy(text + at, p + c, len);
			text[at + len] = '\0';
			if (i & 1)
				l[i / 2].value = text + at;
			else
				l[i / 2].name = text + at;
			at += len + 1;
			p += c + len;
		}
		if (!rc)
			rc = store__wser_set(w, l, (size_t)n, kb);
	}
	rocksdb_free(v);
	if (rc == ERR_CORRUPT)
		err_set(msg, rc, "seal: bad record of series %llu", (unsigned long long)id);
	return rc;
}

/* Writes the block of plan range `ri` (keys [k0, k1)); returns its path. */
static int seal_build(struct seal *s, size_t ri, size_t k0, size_t k1, char **path,
		      uint64_t *profiles, uint64_t *samples, struct err_msg *msg)
{
	struct store *st = s->st;
	int64_t r = s->ranges[ri];
	struct wser *ser = NULL;
	size_t n_ser = 0, cap_ser = 0;
	struct borigin o;
	struct bw *w = NULL;
	struct chunk c;
	struct buf kb;
	int rc;

	buf_init(&kb, STORE_MAX_LABEL_KEY);
	store__chunk_init(&c);
	/* The distinct series, with their first key. */
	for (size_t i = k0; i < k1; i++) {
		if (n_ser && s->keys[i].series == s->keys[i - 1].series)
			continue;
		rc = GROW(ser, cap_ser, n_ser + 1, MAX_PLAN, NULL);
		if (rc)
			goto out;
		memset(&ser[n_ser], 0, sizeof(ser[n_ser]));
		ser[n_ser].src0 = i;
		rc = series_labels(s, s->keys[i].series, &ser[n_ser], &kb, msg);
		n_ser++;
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < n_ser; i++)
		ser[i].n_src = (i + 1 < n_ser ? ser[i + 1].src0 : k1) - ser[i].src0;
	if (n_ser)
		qsort(ser, n_ser, sizeof(*ser), store__wser_cmp);
	rc = store__bw_open(st, s->t->name, 0, r * st->block_range_ns, (r + 1) * st->block_range_ns,
			    BLOCK_ZLEVEL_SEAL, &w, msg);
	for (size_t i = 0; !rc && i < n_ser; i++) {
		if (!i || strcmp(ser[i].svc, ser[i - 1].svc))
			rc = store__bw_service(w, ser[i].svc, msg);
		if (!rc)
			rc = store__bw_series(w, ser[i].labels, ser[i].n_labels, msg);
		for (size_t j = ser[i].src0; !rc && j < ser[i].src0 + ser[i].n_src; j++) {
			const struct skey *sk = &s->keys[j];
			char *err = NULL, *v;
			size_t vlen;

			v = rocksdb_get_cf(st->db, s->ro, st->cf[CFI_SAMPLES], (const char *)sk->key,
					   sk->klen, &vlen, &err);
			if (err) {
				rc = store__rocks_err(msg, ERR_IO, "seal: read chunk", err);
				break;
			}
			if (!v)
				continue;
			rc = store__chunk_decode(&c, v, vlen, msg);
			rocksdb_free(v);
			for (size_t p = 0; !rc && p < c.n; p++) {
				const struct store_symbols *view = pinned_view(s, c.profs[p].part);
				if (view && view->p->broken) {
					/* Unreadable already; sealing drops it instead of stalling. */
					log_error("seal: a profile of series %llu is lost with corrupt partition %u",
						  (unsigned long long)sk->series, c.profs[p].part);
					*profiles += 1;
					*samples += c.profs[p].n;
					continue;
				}
				if (!view) {
					rc = err_set(msg, ERR_CORRUPT, "seal: series %llu names partition %u",
						     (unsigned long long)sk->series, c.profs[p].part);
					break;
				}
				rc = store__bw_profile(w, view, &c.profs[p].meta, c.profs[p].ids,
						       c.profs[p].vals, c.profs[p].spans, c.profs[p].n,
						       msg);
				*profiles += 1;
				*samples += c.profs[p].n;
			}
		}
		/* One page per series: a level-0 block spans one range. */
		if (!rc)
			rc = store__bw_page_end(w, msg);
	}
	memcpy(o.store_id, st->store_id, 16);
	o.window_ns = st->window_ns;
	o.first = r * s->wpr;
	o.last = (r + 1) * s->wpr - 1;
	o.max_epoch = s->max_epoch;
	if (!rc)
		rc = store__bw_finish(w, &o, 1, NULL, 0, path, msg);
out:
	store__bw_abort(w);
	for (size_t i = 0; i < n_ser; i++)
		store__wser_free(&ser[i]);
	free(ser);
	store__chunk_release(&c);
	buf_release(&kb);
	return rc;
}

/* Whether the live head still has a chunk of series `id`. */
static int has_chunks(struct store *st, struct tenant *t, uint64_t id)
{
	uint8_t lo[13], hi[13];
	struct scan s;
	int yes;

	key_tenant_tag(lo, t->id, TAG_CHUNK);
	be64_put(lo + 5, id);
	key_tenant_tag(hi, t->id, TAG_CHUNK);
	be64_put(hi + 5, id + 1);
	if (store__scan_open(st, CFI_SAMPLES, &s, lo, 13, hi, 13))
		return 1;
	yes = rocksdb_iter_valid(s.it);
	store__scan_close(&s, NULL);
	return yes;
}

struct sealed_set {
	const struct skey *k;
	size_t n;
};

static int keep_unsealed(void *ctx, uint64_t id)
{
	const struct sealed_set *s = ctx;
	size_t lo = 0, hi = s->n;

	/* Only series of this block may go, and only those without chunks left. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->k[mid].series < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= s->n || s->k[lo].series != id)
		return 1;
	return 0;
}

struct gc_ctx {
	struct sealed_set set;
	struct store *st;
	struct tenant *t;
};

static int keep_cb(void *ctx, uint64_t id)
{
	struct gc_ctx *g = ctx;

	return keep_unsealed(&g->set, id) || has_chunks(g->st, g->t, id);
}

/*
 * Makes the block of range `ri` take over its chunks: one synced batch
 * deletes them from the head and records the block, and the block becomes
 * visible to readers with it, atomically.
 */
static int seal_publish(struct seal *s, size_t ri, size_t k0, size_t k1, const char *path,
			uint64_t profiles, uint64_t samples, struct err_msg *msg)
{
	struct store *st = s->st;
	struct tenant *t = s->t;
	struct block *b = NULL;
	rocksdb_writebatch_t *wb;
	uint8_t rk[5 + BLOCK_ID_BYTES];
	struct buf v;
	char *err = NULL;
	uint64_t gone = 0;
	int rc;

	rc = store__block_load_unlisted(st, t, path, &b, msg);
	if (rc)
		return rc;
	buf_init(&v, 256);
	wb = rocksdb_writebatch_create();
	for (size_t i = k0; i < k1; i++)
		rocksdb_writebatch_delete_cf(wb, st->cf[CFI_SAMPLES], (const char *)s->keys[i].key,
					     s->keys[i].klen);
	store__ctr_sub(wb, st, t->id, CTR_PROFILES, profiles);
	store__ctr_sub(wb, st, t->id, CTR_SAMPLES, samples);
	store__brec_key(rk, t->id, b->id);
	rc = store__brec_encode(&b->rec, &v);
	if (!rc)
		rocksdb_writebatch_put_cf(wb, st->cf[CFI_META], (const char *)rk, sizeof(rk), v.data,
					  v.len);
	buf_release(&v);
	if (rc) {
		rocksdb_writebatch_destroy(wb);
		store__block_put(st, b);
		return rc;
	}
	store__crashpoint(st, "seal-before-head-delete");
	pthread_mutex_lock(&st->writer);
	pthread_rwlock_wrlock(&st->commit_lock);
	rocksdb_write(st->db, st->wopt_sync, wb, &err);
	if (!err) {
		pthread_mutex_lock(&t->mu);
		rc = store__block_list(t, b);
		pthread_mutex_unlock(&t->mu);
	}
	pthread_rwlock_unlock(&st->commit_lock);
	rocksdb_writebatch_destroy(wb);
	if (err || rc) {
		pthread_mutex_unlock(&st->writer);
		store__block_put(st, b);
		/* The file stays: the next open adopts it and finishes the seal. */
		return err ? store__rocks_err(msg, ERR_IO, "seal: delete sealed chunks", err) : rc;
	}
	store__epoch_forget_windows(t, s->max_epoch, s->ranges[ri] * s->wpr,
				    (s->ranges[ri] + 1) * s->wpr - 1);
	/* Their decoded copies would only age out of the page cache. */
	for (size_t i = k0; i < k1; i++)
		store__pcache_head_forget(&st->pages, s->keys[i].key, s->keys[i].klen);
	/* Series whose every chunk is sealed leave the head. */
	{
		struct gc_ctx g = { { s->keys + k0, k1 - k0 }, st, t };
		rocksdb_writebatch_t *gb = rocksdb_writebatch_create();

		rc = store__series_gc(st, t, gb, keep_cb, &g, &gone, msg);
		if (!rc && gone) {
			store__ctr_sub(gb, st, t->id, CTR_SERIES, gone);
			rocksdb_write(st->db, st->wopt, gb, &err);
			if (err)
				rc = store__rocks_err(msg, ERR_IO, "seal: drop sealed series", err);
			store__index_drop(t); /* rebuilt from what is left by the next txn */
		}
		rocksdb_writebatch_destroy(gb);
	}
	pthread_mutex_unlock(&st->writer);
	store__block_put(st, b); /* the list keeps its own */
	return rc;
}

static void seal_release(struct seal *s)
{
	for (size_t i = 0; i < s->n_pinned; i++)
		store__part_put(s->t, s->pinned[i]);
	free(s->pinned);
	free(s->views);
	if (s->ro)
		rocksdb_readoptions_destroy(s->ro);
	if (s->snap)
		rocksdb_release_snapshot(s->st->db, s->snap);
	free(s->ranges);
	free(s->keys);
}

/* Pins every partition of the epochs being sealed, with a view of each (t->mu). */
static int pin_parts(struct seal *s, uint32_t below)
{
	struct tenant *t = s->t;
	int rc = 0;

	pthread_mutex_lock(&t->mu);
	s->pinned = calloc(t->n_parts + 1, sizeof(*s->pinned));
	s->views = calloc(t->n_parts + 1, sizeof(*s->views));
	if (!s->pinned || !s->views)
		rc = ERR_NOMEM;
	for (size_t i = 0; !rc && i < t->n_parts; i++) {
		struct part *p = t->parts[i];
		struct store_symbols *v = &s->views[s->n_pinned];

		if (p->retired || p->id >= below)
			continue;
		atomic_fetch_add(&p->refs, 1);
		s->pinned[s->n_pinned++] = p;
		v->p = p;
		v->t = t;
		for (int k = SYM_NKINDS - 1; k >= 1; k--)
			v->count[k] = atomic_load_explicit(&p->tab[k].committed, memory_order_acquire);
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

static int seal_tenant(struct store *st, struct tenant *t, int64_t clock, unsigned flags,
		       struct store_maint_stats *ms, struct err_msg *msg)
{
	struct seal s;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	s.st = st;
	s.t = t;
	s.clock = clock;
	s.wpr = st->block_range_ns / st->window_ns;
	pthread_mutex_lock(&st->writer);
	if (!t->index_loaded)
		rc = store__index_load(st, t, msg);
	if (!rc)
		rc = plan_ranges(&s, flags);
	if (rc || !s.n_ranges) {
		pthread_mutex_unlock(&st->writer);
		seal_release(&s);
		return rc;
	}
	/*
	 * From here on writers use a new epoch: the chunks of the planned
	 * ranges with an epoch up to max_epoch are exactly those in the
	 * snapshot, and no commit adds to them.
	 */
	s.max_epoch = store__epoch_current(t);
	rc = store__epoch_bump(st, t, msg);
	if (!rc) {
		s.snap = rocksdb_create_snapshot(st->db);
		s.ro = rocksdb_readoptions_create();
		rocksdb_readoptions_set_snapshot(s.ro, s.snap);
		rc = pin_parts(&s, store__epoch_part_lo(t));
	}
	pthread_mutex_unlock(&st->writer);
	if (!rc)
		rc = collect_keys(&s, msg);
	for (size_t k0 = 0; !rc && k0 < s.n_keys;) {
		size_t ri = s.keys[k0].range, k1 = k0;
		uint64_t profiles = 0, samples = 0;
		char *path = NULL;

		while (k1 < s.n_keys && s.keys[k1].range == ri)
			k1++;
		rc = seal_build(&s, ri, k0, k1, &path, &profiles, &samples, msg);
		if (!rc)
			rc = seal_publish(&s, ri, k0, k1, path, profiles, samples, msg);
		if (!rc) {
			ms->sealed_blocks++;
			ms->sealed_profiles += profiles;
		}
		free(path);
		k0 = k1;
	}
	seal_release(&s);
	if (!rc) {
		pthread_mutex_lock(&st->writer);
		rc = store__epochs_gc(st, t, &ms->dropped_epochs, msg);
		pthread_mutex_unlock(&st->writer);
	}
	return rc;
}

/* ---- compaction ------------------------------------------------------------------ */

struct csrc {
	struct block *b;    /* a reference of compact_level */
	struct bidx *x;
	int fd;
	int32_t svc;        /* the service being written, in this source; -1 none */
	struct bsymtab *syms;
	struct store_symbols view;
};

struct cser {
	struct wser w;
	uint32_t src;       /* index into the sources */
	uint32_t series;    /* in that source's index */
};

static int cser_cmp(const void *a, const void *b)
{
	const struct cser *x = a, *y = b;
	int c = store__wser_cmp(&x->w, &y->w);

	return c ? c : (x->src > y->src) - (x->src < y->src);
}

/* The label set of series i of source x as store labels in w. */
static int source_series(const struct bindex *x, uint32_t i, const struct bmeta *m,
			 struct wser *w, struct buf *kb)
{
	struct store_label l[STORE_MAX_LABELS];
	const struct bser *s = &x->series[i];
	int rc;

	for (uint32_t j = 0; j < s->n_labels; j++) {
		l[j].name = x->str[x->labels[2 * ((size_t)s->label0 + j)]];
		l[j].value = x->str[x->labels[2 * ((size_t)s->label0 + j) + 1]];
	}
	rc = store__wser_set(w, l, s->n_labels, kb);
	if (!rc && strcmp(w->svc, m->svc[s->svc].name) != 0)
		rc = ERR_CORRUPT; /* its service_name label names another partition */
	return rc;
}

/* Opens the symbols of `svc` in every source that has it. */
static int sources_service(struct store *st, struct csrc *src, size_t n, const char *svc,
			   struct err_msg *msg)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		const struct bmeta *m = &src[i].b->m;
		src[i].svc = -1;
		store__bsymtab_put(src[i].syms);
		src[i].syms = NULL;
		for (size_t j = 0; j < m->n_svc; j++)
			if (strcmp(m->svc[j].name, svc) == 0)
				src[i].svc = (int32_t)j;
		if (src[i].svc < 0)
			continue;
		rc = store__block_syms(st, src[i].b, (uint32_t)src[i].svc, &src[i].syms, msg);
		if (!rc) {
			memset(&src[i].view, 0, sizeof(src[i].view));
			src[i].view.b = src[i].syms;
			memcpy(src[i].view.count, src[i].syms->s.n, sizeof(src[i].view.count));
		}
	}
	return rc;
}

struct span {
	int64_t start;
};

/* Writes the pages of one output series from its parts in the sources. */
static int compact_series(struct bw *w, struct csrc *src, const struct cser *parts, size_t n,
			  int64_t page_ns, struct chunk *c, struct buf *pb, struct err_msg *msg)
{
	int64_t *spans = NULL, prev;
	size_t n_spans = 0, cap = 0;
	int rc = 0;

	/* Every page span a source page of this series touches, ascending. */
	for (size_t i = 0; i < n && !rc; i++) {
		const struct bindex *x = &src[parts[i].src].x->x;
		const struct bser *s = &x->series[parts[i].series];
		for (uint32_t j = 0; j < s->n_pages && !rc; j++) {
			const struct bpage *pg = &x->pages[s->page0 + j];
			for (int64_t a = floor_div(pg->min_time, page_ns);
			     a <= floor_div(pg->max_time, page_ns) && !rc; a++) {
				rc = GROW(spans, cap, n_spans + 1, MAX_PLAN, NULL);
				if (!rc)
					spans[n_spans++] = a;
			}
		}
	}
	if (n_spans)
		qsort(spans, n_spans, sizeof(*spans), i64_cmp);
	prev = INT64_MIN;
	for (size_t k = 0; k < n_spans && !rc; k++) {
		int64_t a = spans[k], lo, hi;
		if (a == prev)
			continue;
		prev = a;
		lo = a * page_ns;
		hi = lo + page_ns;
		for (size_t i = 0; i < n && !rc; i++) {
			struct csrc *cs = &src[parts[i].src];
			const struct bindex *x = &cs->x->x;
			const struct bser *s = &x->series[parts[i].series];
			for (uint32_t j = 0; j < s->n_pages && !rc; j++) {
				const struct bpage *pg = &x->pages[s->page0 + j];
				if (pg->max_time < lo || pg->min_time >= hi)
					continue;
				rc = store__block_page(cs->b, cs->fd, pg, pb, msg);
				if (!rc)
					rc = store__chunk_decode(c, pb->data, pb->len, msg);
				if (!rc && (c->part != (uint32_t)cs->svc + 1 || c->n != pg->profiles))
					rc = err_set(msg, ERR_CORRUPT, "block %s: a page disagrees with its index",
						     cs->b->id_hex);
				if (rc == ERR_CORRUPT)
					store__block_bad(cs->b, "a page is corrupt");
				for (size_t p = 0; !rc && p < c->n; p++) {
					const struct chunk_profile *cp = &c->profs[p];
					if (cp->meta.time_ns < lo || cp->meta.time_ns >= hi)
						continue;
					rc = store__bw_profile(w, &cs->view, &cp->meta, cp->ids, cp->vals,
							       cp->spans, cp->n, msg);
				}
			}
		}
		if (!rc)
			rc = store__bw_page_end(w, msg);
	}
	free(spans);
	return rc;
}

static int compact_publish(struct store *st, struct tenant *t, const char *path,
			   struct csrc *src, size_t n, struct err_msg *msg);

/* Compacts the blocks src[0..n) into one block of level `level` over [lo, hi). */
static int compact_group(struct store *st, struct tenant *t, struct csrc *src, size_t n,
			 uint32_t level, int64_t lo, int64_t hi, struct store_maint_stats *ms,
			 struct err_msg *msg)
{
	struct cser *all = NULL;
	size_t n_all = 0, cap_all = 0;
	struct borigin *orig = NULL;
	uint8_t (*ids)[BLOCK_ID_BYTES] = NULL;
	size_t n_orig = 0;
	struct bw *w = NULL;
	char *path = NULL;
	struct chunk c;
	struct buf kb, pb;
	int rc = 0;

	buf_init(&kb, STORE_MAX_LABEL_KEY);
	buf_init(&pb, BLOCK_MAX_PAGE_BYTES);
	store__chunk_init(&c);
	for (size_t i = 0; i < n && !rc; i++) {
		src[i].fd = -1;
		src[i].svc = -1;
		rc = store__block_index(st, src[i].b, &src[i].x, msg);
		if (!rc) {
			src[i].fd = store__block_open_fd(src[i].b, msg);
			rc = src[i].fd < 0 ? src[i].fd : 0;
		}
		for (uint32_t j = 0; !rc && j < src[i].x->x.n_series; j++) {
			rc = GROW(all, cap_all, n_all + 1, MAX_PLAN, NULL);
			if (rc)
				break;
			memset(&all[n_all], 0, sizeof(all[n_all]));
			all[n_all].src = (uint32_t)i;
			all[n_all].series = j;
			rc = source_series(&src[i].x->x, j, &src[i].b->m, &all[n_all].w, &kb);
			n_all++;
			if (rc == ERR_CORRUPT) {
				store__block_bad(src[i].b, "a series disagrees with its service");
				err_set(msg, rc, "block %s is corrupt", src[i].b->id_hex);
			}
		}
		n_orig += src[i].b->m.n_origins;
	}
	if (rc)
		goto out;
	if (n_all)
		qsort(all, n_all, sizeof(*all), cser_cmp);
	rc = store__bw_open(st, t->name, level, lo, hi, BLOCK_ZLEVEL_COMPACT, &w, msg);
	for (size_t i = 0; !rc && i < n_all;) {
		size_t j = i + 1;
		while (j < n_all && !store__wser_cmp(&all[j].w, &all[i].w))
			j++;
		if (!i || strcmp(all[i].w.svc, all[i - 1].w.svc)) {
			rc = store__bw_service(w, all[i].w.svc, msg);
			if (!rc)
				rc = sources_service(st, src, n, all[i].w.svc, msg);
		}
		if (!rc)
			rc = store__bw_series(w, all[i].w.labels, all[i].w.n_labels, msg);
		if (!rc)
			rc = compact_series(w, src, all + i, j - i, st->block_range_ns, &c, &pb, msg);
		i = j;
	}
	/* The output inherits what its sources took over from the head, and names them. */
	orig = calloc(n_orig + 1, sizeof(*orig));
	ids = calloc(n + 1, sizeof(*ids));
	if (!rc && (!orig || !ids))
		rc = ERR_NOMEM;
	n_orig = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		memcpy(ids[i], src[i].b->id, BLOCK_ID_BYTES);
		for (size_t j = 0; j < src[i].b->m.n_origins; j++)
			orig[n_orig++] = src[i].b->m.origins[j];
	}
	if (!rc)
		rc = store__bw_finish(w, orig, n_orig, (const uint8_t(*)[BLOCK_ID_BYTES])ids, n, &path,
				      msg);
	if (!rc)
		rc = compact_publish(st, t, path, src, n, msg);
	if (!rc) {
		ms->compactions++;
		ms->compacted_blocks += n;
	}
out:
	store__bw_abort(w);
	for (size_t i = 0; i < n_all; i++)
		store__wser_free(&all[i].w);
	free(all);
	free(orig);
	free(ids);
	free(path);
	for (size_t i = 0; i < n; i++) {
		if (src[i].fd >= 0)
			close(src[i].fd);
		store__bidx_put(src[i].x);
		store__bsymtab_put(src[i].syms);
		src[i].x = NULL;
		src[i].syms = NULL;
	}
	store__chunk_release(&c);
	buf_release(&kb);
	buf_release(&pb);
	return rc;
}

/*
 * Publishes a compaction: one synced batch records the output and forgets
 * the sources, and readers see the output instead of the sources at once.
 */
static int compact_publish(struct store *st, struct tenant *t, const char *path,
			   struct csrc *src, size_t n, struct err_msg *msg)
{
	struct block *b = NULL;
	rocksdb_writebatch_t *wb;
	uint8_t rk[5 + BLOCK_ID_BYTES];
	struct buf v;
	char *err = NULL;
	int rc = store__block_load_unlisted(st, t, path, &b, msg);

	if (rc)
		return rc;
	store__crashpoint(st, "compact-output-written");
	buf_init(&v, 256);
	wb = rocksdb_writebatch_create();
	store__brec_key(rk, t->id, b->id);
	rc = store__brec_encode(&b->rec, &v);
	if (!rc)
		rocksdb_writebatch_put_cf(wb, st->cf[CFI_META], (const char *)rk, sizeof(rk), v.data,
					  v.len);
	for (size_t i = 0; i < n; i++) {
		store__brec_key(rk, t->id, src[i].b->id);
		rocksdb_writebatch_delete_cf(wb, st->cf[CFI_META], (const char *)rk, sizeof(rk));
	}
	buf_release(&v);
	if (!rc) {
		pthread_rwlock_wrlock(&st->commit_lock);
		rocksdb_write(st->db, st->wopt_sync, wb, &err);
		if (!err) {
			pthread_mutex_lock(&t->mu);
			rc = store__block_list(t, b);
			for (size_t i = 0; !rc && i < n; i++) {
				if (src[i].b->live) {
					src[i].b->doomed = 1;
					rc = store__block_bury(t, src[i].b);
				}
			}
			pthread_mutex_unlock(&t->mu);
		}
		pthread_rwlock_unlock(&st->commit_lock);
	}
	rocksdb_writebatch_destroy(wb);
	/* The sources' decoded symbols would otherwise fill the block cache
	 * for the grace period, pushing out those of live blocks. */
	for (size_t i = 0; !err && !rc && i < n; i++)
		if (src[i].b->doomed)
			store__block_uncache(st, src[i].b);
	store__block_put(st, b);
	if (err)
		return store__rocks_err(msg, ERR_IO, "compaction: record", err);
	return rc;
}

/*
 * Compacts what is due at level k of tenant t.  A slot already compacted
 * takes the blocks sealed into it later (profiles that came late, or a
 * range sealed after its neighbours): its level-k block is a source again,
 * so a slot ends as one block whatever the order its ranges were sealed in.
 */
static int compact_level(struct store *st, struct tenant *t, size_t k, int64_t clock,
			 unsigned flags, struct store_maint_stats *ms, struct err_msg *msg)
{
	int64_t span = st->block_range_ns * LEVEL_MULT[k];
	struct block **v = NULL;
	size_t n = 0;
	int rc = 0;

	pthread_mutex_lock(&t->mu);
	v = calloc(t->n_blocks + 1, sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&t->mu);
		return ERR_NOMEM;
	}
	for (size_t i = 0; i < t->n_blocks; i++) {
		struct block *b = t->blocks[i];
		int64_t len = b->rec.range_end - b->rec.range_start;
		if (!b->have_meta || atomic_load(&b->bad) || len > span ||
		    floor_div(b->rec.range_start, span) != floor_div(b->rec.range_end - 1, span))
			continue;
		store__block_ref(b);
		v[n++] = b;
	}
	pthread_mutex_unlock(&t->mu);
	/* Blocks are by range start: a slot's blocks are adjacent. */
	for (size_t i = 0; i < n && !rc;) {
		int64_t slot = floor_div(v[i]->rec.range_start, span);
		size_t j = i + 1, small = 0;
		while (j < n && floor_div(v[j]->rec.range_start, span) == slot)
			j++;
		for (size_t q = i; q < j; q++)
			small += v[q]->rec.range_end - v[q]->rec.range_start < span;
		if (j - i >= 2 && small && ((flags & STORE_MAINT_COMPACT_ALL) ||
				   range_over(st, slot * LEVEL_MULT[k] + LEVEL_MULT[k] - 1, clock))) {
			struct csrc *src = calloc(j - i, sizeof(*src));
			if (!src) {
				rc = ERR_NOMEM;
				break;
			}
			for (size_t q = i; q < j; q++)
				src[q - i].b = v[q];
			rc = compact_group(st, t, src, j - i, (uint32_t)k, slot * span,
					   slot * span + span, ms, msg);
			free(src);
			if (rc == ERR_CORRUPT) {
				/* The bad source is marked; the next pass compacts without it. */
				log_warn("compaction of tenant %s: %s", t->name, msg ? msg->text : "corrupt");
				err_clear(msg);
				rc = 0;
			}
		}
		i = j;
	}
	for (size_t i = 0; i < n; i++)
		store__block_put(st, v[i]);
	free(v);
	return rc;
}

/* ---- retention ---------------------------------------------------------------------- */

static int expire_tenant(struct store *st, struct tenant *t, int64_t clock,
			 struct store_maint_stats *ms, struct err_msg *msg)
{
	int64_t ret = store__retention(st, t->name), cutoff;
	uint64_t blocks = 0, bytes = 0, profiles = 0, samples = 0;
	struct block **v = NULL;
	rocksdb_writebatch_t *wb;
	char *err = NULL;
	size_t n = 0;

	if (ret <= 0 || __builtin_sub_overflow(clock, ret, &cutoff))
		return 0;
	pthread_mutex_lock(&t->mu);
	v = calloc(t->n_blocks + 1, sizeof(*v));
	for (size_t i = 0; v && i < t->n_blocks; i++) {
		struct block *b = t->blocks[i];
		/* A block of unknown range (unreadable, no record) is never expired. */
		if (b->rec.range_end == INT64_MAX || b->rec.max_time >= cutoff)
			continue;
		store__block_ref(b);
		v[n++] = b;
	}
	pthread_mutex_unlock(&t->mu);
	if (!v)
		return ERR_NOMEM;
	wb = rocksdb_writebatch_create();
	for (size_t i = 0; i < n; i++) {
		uint8_t rk[5 + BLOCK_ID_BYTES];
		store__brec_key(rk, t->id, v[i]->id);
		rocksdb_writebatch_delete_cf(wb, st->cf[CFI_META], (const char *)rk, sizeof(rk));
		blocks++;
		bytes += v[i]->rec.bytes;
		profiles += v[i]->rec.profiles;
		samples += v[i]->rec.samples;
	}
	store__ctr_add(wb, st, t->id, CTR_EXP_BLOCKS, blocks);
	store__ctr_add(wb, st, t->id, CTR_EXP_BYTES, bytes);
	store__ctr_add(wb, st, t->id, CTR_EXP_PROFILES, profiles);
	store__ctr_add(wb, st, t->id, CTR_EXP_SAMPLES, samples);
	if (n) {
		/* The record goes first: a block file without one that a crash
		 * leaves behind is adopted at open, and expired again. */
		pthread_rwlock_wrlock(&st->commit_lock);
		rocksdb_write(st->db, st->wopt_sync, wb, &err);
		if (!err) {
			pthread_mutex_lock(&t->mu);
			for (size_t i = 0; i < n; i++) {
				if (!v[i]->live)
					continue;
				v[i]->doomed = 1;
				if (store__block_bury(t, v[i])) { /* no memory: released now */
					store__block_unlist(t, v[i]);
					atomic_fetch_sub(&v[i]->refs, 1);
				}
			}
			pthread_mutex_unlock(&t->mu);
		}
		pthread_rwlock_unlock(&st->commit_lock);
	}
	rocksdb_writebatch_destroy(wb);
	for (size_t i = 0; i < n; i++) {
		if (!err && v[i]->doomed)
			store__block_uncache(st, v[i]);
		if (!err)
			log_info("retention: block %s of tenant %s (profiles up to %lld) deleted",
				 v[i]->id_hex, t->name, (long long)v[i]->rec.max_time);
		store__block_put(st, v[i]);
	}
	free(v);
	if (err)
		return store__rocks_err(msg, ERR_IO, "retention", err);
	ms->expired_blocks += blocks;
	ms->expired_bytes += bytes;
	return 0;
}

/* ---- the pass and the thread ------------------------------------------------------- */

static int tenants_copy(struct store *st, struct tenant ***out, size_t *n)
{
	pthread_mutex_lock(&st->mu);
	*out = malloc((st->n_tenants + 1) * sizeof(**out));
	if (*out && st->n_tenants)
		memcpy(*out, st->tenants, st->n_tenants * sizeof(**out));
	*n = st->n_tenants;
	pthread_mutex_unlock(&st->mu);
	return *out ? 0 : ERR_NOMEM;
}

int store_maintain(struct store *st, unsigned flags, struct store_maint_stats *out,
		   struct err_msg *msg)
{
	struct store_maint_stats ms;
	struct tenant **ts = NULL;
	size_t n = 0;
	int rc, upload_rc = 0, compact, may_compact;

	if (st->read_only)
		return err_set(msg, ERR_INVALID, "store is open read-only");
	memset(&ms, 0, sizeof(ms));
	pthread_mutex_lock(&st->maint_mu);
	/* Ingesters and queriers leave compaction and retention to the
	 * compactor, which compacts only what the bucket index has caught up
	 * with (bucket.c). */
	compact = !(st->bucket_mode & STORE_NO_COMPACT);
	may_compact = compact && store__bucket_may_compact(st);
	rc = tenants_copy(st, &ts, &n);
	for (size_t i = 0; !rc && i < n; i++) {
		/* One clock for the tenant's pass: what sealing left open because
		 * its range is not over, compaction must not take as over. */
		int64_t clock = store__clock(st);
		rc = seal_tenant(st, ts[i], clock, flags, &ms, msg);
		for (size_t k = 1; !rc && may_compact && k < N_LEVELS; k++)
			rc = compact_level(st, ts[i], k, clock, flags, &ms, msg);
		if (!rc && compact)
			rc = expire_tenant(st, ts[i], clock, &ms, msg);
		/* After one failed upload the bucket is likely down: the next pass retries. */
		if (!rc && !upload_rc)
			upload_rc = store__upload_tenant(st, ts[i], &ms);
		store__reclaim(st, ts[i], 0);
	}
	/* What sealing deleted stays in the memtables until they are flushed. */
	if (!rc && (ms.sealed_blocks || ms.dropped_epochs))
		rc = store__flush_head(st, msg);
	if (!rc && st->objstore && (st->bucket_mode & STORE_BUCKET_INDEX)) {
		struct err_msg im;
		/* Like an upload, a failed index pass is retried at the next one. */
		err_clear(&im);
		if (store__bucket_index_pass(st, &im))
			log_warn("bucket index: %s; written again at the next maintenance pass",
				 im.text[0] ? im.text : "failed");
	}
	add_stats(&st->maint_total, &ms);
	pthread_mutex_unlock(&st->maint_mu);
	free(ts);
	if (out)
		add_stats(out, &ms);
	return rc;
}

void store_maint_totals(struct store *st, struct store_maint_stats *out)
{
	pthread_mutex_lock(&st->maint_mu);
	*out = st->maint_total;
	pthread_mutex_unlock(&st->maint_mu);
}

static void *maint_main(void *arg)
{
	struct store *st = arg;

	pthread_mutex_lock(&st->maint_wait_mu);
	while (!st->maint_stop) {
		thread_wait_until(&st->maint_cv, &st->maint_wait_mu,
				  clock_mono_ns() + st->maint_interval_ns);
		if (st->maint_stop)
			break;
		pthread_mutex_unlock(&st->maint_wait_mu);
		{
			struct err_msg m;
			int rc;

			err_clear(&m);
			rc = store_maintain(st, 0, NULL, &m);
			if (rc)
				log_warn("maintenance: %s", m.text[0] ? m.text : err_str(rc));
#ifdef __GLIBC__
			/* A pass frees whole partitions, decoded blocks and the
			 * buffers of sealing and compaction, allocated by many
			 * threads in many arenas: glibc keeps the free pages in
			 * the middle of its heaps mapped until asked, so a server
			 * that seals a day of backfill a minute grew by tens of
			 * MiB a day with nothing in use (bench/RESULTS.md, "RSS of
			 * a shortened month").  Once a pass, give them back. */
			malloc_trim(0);
#endif
		}
		pthread_mutex_lock(&st->maint_wait_mu);
	}
	pthread_mutex_unlock(&st->maint_wait_mu);
	return NULL;
}

int store__maint_start(struct store *st)
{
	thread_cond_init_mono(&st->maint_cv);
	if (st->maint_interval_ns <= 0 || st->read_only)
		return 0;
	if (pthread_create(&st->maint_thread, NULL, maint_main, st) != 0)
		return ERR_NOMEM;
	st->maint_started = 1;
	return 0;
}

void store__maint_stop(struct store *st)
{
	if (!st->maint_started)
		return;
	thread_stop(st->maint_thread, &st->maint_wait_mu, &st->maint_cv, &st->maint_stop);
	st->maint_started = 0;
}
