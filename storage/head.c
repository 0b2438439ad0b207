/*
 * head.c - the head's epochs: chunk keys carry the epoch they were written
 * in, every partition belongs to one epoch, and an epoch whose chunks are
 * all sealed is dropped with its symbols.  At open, the head is loaded
 * (epochs, partitions) and whatever a crash left half done is finished:
 * chunks a block already holds are deleted, series without chunks go.
 * Layouts and the argument: storage_int.h, section 10.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/varint.h"

#define MAX_EPOCHS ((size_t)1 << 20)
#define MAX_WINDOWS ((size_t)1 << 24)

/* ---- chunk keys ------------------------------------------------------------- */

void store__chunk_key(uint8_t k[CHUNK_KEY_LEN], uint32_t tenant, uint64_t series, int64_t window,
		      uint32_t epoch)
{
	key_tenant_tag(k, tenant, TAG_CHUNK);
	be64_put(k + 5, series);
	be64_put(k + 13, (uint64_t)window ^ ((uint64_t)1 << 63));
	be32_put(k + 21, epoch);
}

int store__chunk_key_parse(const uint8_t *k, size_t klen, uint64_t *series, int64_t *window,
			   uint32_t *epoch)
{
	if ((klen != CHUNK_KEY_LEN && klen != CHUNK_KEY_LEN_V1) || k[4] != TAG_CHUNK)
		return ERR_CORRUPT;
	*series = be64_get(k + 5);
	*window = (int64_t)(be64_get(k + 13) ^ ((uint64_t)1 << 63));
	*epoch = klen == CHUNK_KEY_LEN ? be32_get(k + 21) : 0; /* format 1 keys: epoch 0 */
	return 0;
}

/* ---- epochs ------------------------------------------------------------------ */

uint32_t store__epoch_part_lo(const struct tenant *t)
{
	return t->n_epochs ? t->epochs[t->n_epochs - 1].part_lo : 1;
}

uint32_t store__epoch_current(const struct tenant *t)
{
	return t->n_epochs ? t->epochs[t->n_epochs - 1].n : 0;
}

struct epoch *store__epoch_find(struct tenant *t, uint32_t n)
{
	for (size_t i = 0; i < t->n_epochs; i++)
		if (t->epochs[i].n == n)
			return &t->epochs[i];
	return NULL;
}

static int epoch_append(struct tenant *t, uint32_t n, uint32_t part_lo)
{
	int rc = GROW(t->epochs, t->cap_epochs, t->n_epochs + 1, MAX_EPOCHS, NULL);

	if (rc)
		return rc;
	memset(&t->epochs[t->n_epochs], 0, sizeof(t->epochs[0]));
	t->epochs[t->n_epochs].n = n;
	t->epochs[t->n_epochs].part_lo = part_lo;
	t->n_epochs++;
	return 0;
}

void store__epochs_free(struct tenant *t)
{
	for (size_t i = 0; i < t->n_epochs; i++)
		free(t->epochs[i].win);
	free(t->epochs);
	t->epochs = NULL;
	t->n_epochs = t->cap_epochs = 0;
}

static void epoch_key(uint8_t k[9], uint32_t tenant, uint32_t n)
{
	key_tenant_tag(k, tenant, TAG_EPOCH);
	be32_put(k + 5, n);
}

void store__epoch_put_record(rocksdb_writebatch_t *wb, struct store *st, uint32_t tenant,
			     uint32_t n, uint32_t part_lo)
{
	uint8_t k[9], v[4];

	epoch_key(k, tenant, n);
	be32_put(v, part_lo);
	rocksdb_writebatch_put_cf(wb, st->cf[CFI_META], (const char *)k, 9, (const char *)v, 4);
}

/* Adds window w to the epoch's set (kept ascending, unique). */
static int epoch_add_window(struct epoch *e, int64_t w)
{
	size_t lo = 0, hi = e->n_win;
	int rc;

	if (e->n_win && e->win[e->n_win - 1] < w) {
		lo = e->n_win;
	} else {
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (e->win[mid] < w)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < e->n_win && e->win[lo] == w)
			return 0;
	}
	rc = GROW(e->win, e->cap_win, e->n_win + 1, MAX_WINDOWS, NULL);
	if (rc)
		return rc;
	memmove(e->win + lo + 1, e->win + lo, (e->n_win - lo) * sizeof(*e->win));
	e->win[lo] = w;
	e->n_win++;
	return 0;
}

void store__epoch_note(struct tenant *t, const int64_t *wins, size_t n)
{
	struct epoch *e = t->n_epochs ? &t->epochs[t->n_epochs - 1] : NULL;

	/* On ERR_NOMEM a window is not noted: its chunks are then sealed
	 * only once a later write to it, or the next open, notes it. */
	for (size_t i = 0; e && i < n; i++)
		if (epoch_add_window(e, wins[i]))
			log_warn("head: out of memory noting a window of tenant %s", t->name);
}

void store__epoch_forget_windows(struct tenant *t, uint32_t max_epoch, int64_t first,
				 int64_t last)
{
	for (size_t i = 0; i < t->n_epochs; i++) {
		struct epoch *e = &t->epochs[i];
		size_t k = 0;

		if (e->n > max_epoch)
			continue;
		for (size_t j = 0; j < e->n_win; j++)
			if (e->win[j] < first || e->win[j] > last)
				e->win[k++] = e->win[j];
		e->n_win = k;
	}
}

int store__epochs_load(struct store *st, struct tenant *t, struct err_msg *msg)
{
	struct scan s;
	int rc;

	store__epochs_free(t);
	rc = store__scan_tag(st, CFI_META, NULL, t->id, TAG_EPOCH, &s);
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(s.it, &vlen);
		uint32_t n, part_lo;

		if (klen != 9 || vlen != 4) {
			rc = err_set(msg, ERR_CORRUPT, "meta: bad epoch record of tenant %s", t->name);
			break;
		}
		n = be32_get(k + 5);
		part_lo = be32_get(v);
		if (part_lo == 0 || (t->n_epochs && (part_lo < t->epochs[t->n_epochs - 1].part_lo))) {
			rc = err_set(msg, ERR_CORRUPT, "meta: epochs of tenant %s out of order", t->name);
			break;
		}
		rc = epoch_append(t, n, part_lo);
	}
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, msg);
	if (rc || t->n_epochs)
		return rc;
	/*
	 * A tenant of a format 1 store: everything it holds is epoch 0, whose
	 * partitions start at 1; writes go to epoch 1 from here on.
	 */
	{
		uint32_t next = atomic_load(&t->committed_parts) + 1;
		rc = epoch_append(t, 0, 1);
		if (!rc)
			rc = epoch_append(t, 1, next);
		if (!rc && !st->read_only) {
			rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
			char *err = NULL;

			store__epoch_put_record(wb, st, t->id, 0, 1);
			store__epoch_put_record(wb, st, t->id, 1, next);
			rocksdb_write(st->db, st->wopt_sync, wb, &err);
			rocksdb_writebatch_destroy(wb);
			if (err)
				rc = store__rocks_err(msg, ERR_IO, "write epoch records", err);
		}
	}
	return rc;
}

int store__epoch_bump(struct store *st, struct tenant *t, struct err_msg *msg)
{
	uint32_t cur = store__epoch_current(t), lo = store__epoch_part_lo(t);
	rocksdb_writebatch_t *wb;
	char *err = NULL;
	int rc;

	if (cur == UINT32_MAX)
		return err_set(msg, ERR_TOO_LARGE, "tenant %s: epochs exhausted", t->name);
	rc = GROW(t->epochs, t->cap_epochs, t->n_epochs + 1, MAX_EPOCHS, NULL);
	if (rc)
		return rc;
	/* Synced: no write of the new epoch may survive a crash without it. */
	wb = rocksdb_writebatch_create();
	store__epoch_put_record(wb, st, t->id, cur + 1, t->next_part);
	rocksdb_write(st->db, st->wopt_sync, wb, &err);
	rocksdb_writebatch_destroy(wb);
	if (err)
		return store__rocks_err(msg, ERR_IO, "write epoch record", err);
	epoch_append(t, cur + 1, t->next_part);
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n_parts; i++)
		if (t->parts[i]->id >= lo && !t->parts[i]->retired)
			store__part_close_writer(t->parts[i]);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static void ctr_sub(rocksdb_writebatch_t *wb, struct store *st, uint32_t tenant, enum ctr c,
		    uint64_t n)
{
	uint8_t k[5];
	char v[8];
	uint64_t d = (uint64_t)0 - n; /* the add64 merge wraps */

	if (!n)
		return;
	key_tenant_tag(k, tenant, (uint8_t)c);
	for (int i = 0; i < 8; i++)
		v[i] = (char)(uint8_t)(d >> (8 * i));
	rocksdb_writebatch_merge_cf(wb, st->cf[CFI_COUNTERS], (const char *)k, 5, v, 8);
}

void store__ctr_sub(rocksdb_writebatch_t *wb, struct store *st, uint32_t tenant, enum ctr c,
		    uint64_t n)
{
	ctr_sub(wb, st, tenant, c, n);
}

void store__ctr_add(rocksdb_writebatch_t *wb, struct store *st, uint32_t tenant, enum ctr c,
		    uint64_t n)
{
	if (n)
		ctr_sub(wb, st, tenant, c, (uint64_t)0 - n);
}

int store__epochs_gc(struct store *st, struct tenant *t, uint64_t *dropped, struct err_msg *msg)
{
	size_t i = 0;
	int rc = 0;

	while (!rc && i + 1 < t->n_epochs) {
		struct epoch *e = &t->epochs[i];
		uint32_t lo = e->part_lo, hi = t->epochs[i + 1].part_lo;
		uint64_t cnt[SYM_NKINDS] = { 0 };
		rocksdb_writebatch_t *wb;
		uint8_t k[9], a[8], b[8];
		char *err = NULL;

		if (e->n_win) {
			i++;
			continue;
		}
		pthread_mutex_lock(&t->mu);
		for (size_t j = 0; j < t->n_parts; j++) {
			struct part *p = t->parts[j];
			if (p->id < lo || p->id >= hi || p->retired)
				continue;
			for (int kd = 1; kd < SYM_NKINDS; kd++)
				cnt[kd] += atomic_load(&p->tab[kd].committed);
		}
		pthread_mutex_unlock(&t->mu);
		wb = rocksdb_writebatch_create();
		epoch_key(k, t->id, e->n);
		rocksdb_writebatch_delete_cf(wb, st->cf[CFI_META], (const char *)k, 9);
		be32_put(a, t->id);
		be32_put(a + 4, lo);
		be32_put(b, t->id);
		be32_put(b + 4, hi);
		if (lo < hi)
			rocksdb_writebatch_delete_range_cf(wb, st->cf[CFI_SYMBOLS], (const char *)a, 8,
							   (const char *)b, 8);
		ctr_sub(wb, st, t->id, CTR_STACKS, cnt[SYM_STACK]);
		ctr_sub(wb, st, t->id, CTR_LOCATIONS, cnt[SYM_LOCATION]);
		ctr_sub(wb, st, t->id, CTR_FUNCTIONS, cnt[SYM_FUNCTION]);
		ctr_sub(wb, st, t->id, CTR_MAPPINGS, cnt[SYM_MAPPING]);
		rocksdb_write(st->db, st->wopt, wb, &err);
		rocksdb_writebatch_destroy(wb);
		if (err) {
			rc = store__rocks_err(msg, ERR_IO, "drop epoch", err);
			break;
		}
		/* Readers that pinned a partition keep it until they let go. */
		pthread_mutex_lock(&t->mu);
		for (size_t j = 0; j < t->n_parts;) {
			struct part *p = t->parts[j];
			if (p->id < lo || p->id >= hi || p->retired) {
				j++;
				continue;
			}
			/* The list keeps its reference for the grace period
			 * (store__reclaim): readers without a struct store_reader
			 * may still name the partition. */
			p->retired = 1;
			p->retired_ns = store__mono();
			j++;
		}
		pthread_mutex_unlock(&t->mu);
		free(e->win);
		memmove(t->epochs + i, t->epochs + i + 1, (t->n_epochs - i - 1) * sizeof(*t->epochs));
		t->n_epochs--;
		if (dropped)
			(*dropped)++;
	}
	return rc;
}

/* ---- open ----------------------------------------------------------------------- */

/* Whether a block of t already holds the head chunk (window w, epoch e). */
static int covered(struct store *st, struct tenant *t, int64_t w, uint32_t e)
{
	for (size_t i = 0; i < t->n_blocks; i++) {
		const struct block *b = t->blocks[i];
		for (size_t j = 0; b->have_meta && j < b->m.n_origins; j++) {
			const struct borigin *o = &b->m.origins[j];
			if (!memcmp(o->store_id, st->store_id, 16) && o->window_ns == st->window_ns &&
			    w >= o->first && w <= o->last && e <= o->max_epoch)
				return 1;
		}
	}
	return 0;
}

/* Counts the profiles and samples of a chunk value (for the counters). */
static void chunk_counts(const void *v, size_t len, uint64_t *profiles, uint64_t *samples)
{
	struct chunk c;

	store__chunk_init(&c);
	if (!store__chunk_decode(&c, v, len, NULL)) {
		*profiles += c.n;
		*samples += c.n_samples;
	}
	store__chunk_release(&c);
}

struct u64set {
	uint64_t *v;
	size_t n, cap;
};

static int u64set_has(const struct u64set *s, uint64_t x)
{
	/* v is NULL while empty, and bsearch wants a base. */
	return s->n && bsearch(&x, s->v, s->n, sizeof(*s->v), store__cmp_u64);
}

/*
 * Scans the head's chunks: deletes those a block holds (a seal that wrote its
 * block and stopped before deleting them), notes the windows of the others in
 * their epochs, and collects the series that still have chunks.
 */
/* Raises *newest to the newest profile time of a chunk value. */
static void newest_of(const void *v, size_t len, _Atomic int64_t *newest)
{
	struct chunk c;

	store__chunk_init(&c);
	if (!store__chunk_decode(&c, v, len, NULL))
		for (size_t i = 0; i < c.n; i++)
			if (c.profs[i].meta.time_ns > atomic_load(newest))
				atomic_store(newest, c.profs[i].meta.time_ns);
	store__chunk_release(&c);
}

static int scan_chunks(struct store *st, struct tenant *t, rocksdb_writebatch_t *wb,
		       struct u64set *live, uint64_t *del_profiles, uint64_t *del_samples,
		       int64_t *max_window, struct err_msg *msg)
{
	struct scan s;
	int rc;

	rc = store__scan_tag(st, CFI_SAMPLES, NULL, t->id, TAG_CHUNK, &s);
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		uint64_t series;
		int64_t w;
		uint32_t e;
		struct epoch *ep;

		if (store__chunk_key_parse(k, klen, &series, &w, &e)) {
			rc = err_set(msg, ERR_CORRUPT, "samples: bad chunk key of tenant %s", t->name);
			break;
		}
		if (covered(st, t, w, e)) {
			const char *v = rocksdb_iter_value(s.it, &vlen);
			chunk_counts(v, vlen, del_profiles, del_samples);
			rocksdb_writebatch_delete_cf(wb, st->cf[CFI_SAMPLES], (const char *)k, klen);
			continue;
		}
		ep = store__epoch_find(t, e);
		if (!ep) {
			log_warn("head: tenant %s has chunks of unknown epoch %u; kept in epoch %u",
				 t->name, e, t->epochs[0].n);
			ep = &t->epochs[0];
		}
		rc = epoch_add_window(ep, w);
		if (!rc && (!live->n || live->v[live->n - 1] != series)) {
			rc = GROW(live->v, live->cap, live->n + 1, (size_t)STORE_MAX_SERIES, NULL);
			if (!rc)
				live->v[live->n++] = series;
		}
		/* The store's clock is the newest profile time: read from the
		 * chunks of the latest window seen so far (keys are by series,
		 * so this decodes about one chunk per series). */
		if (!rc && w >= *max_window) {
			const char *v = rocksdb_iter_value(s.it, &vlen);
			*max_window = w;
			newest_of(v, vlen, &st->newest_ns);
		}
	}
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, msg);
	return rc;
}

static int u64set_has_cb(void *ctx, uint64_t x)
{
	return u64set_has(ctx, x);
}

void store__reclaim(struct store *st, struct tenant *t, int all)
{
	int64_t now = store__mono();
	struct block **drop = NULL;
	size_t n_drop = 0;

	pthread_mutex_lock(&t->mu);
	for (size_t j = 0; j < t->n_parts;) {
		struct part *p = t->parts[j];
		if (!p->retired || p->reclaimed || (!all && now - p->retired_ns < st->grace_ns)) {
			j++;
			continue;
		}
		p->reclaimed = 1;
		if (atomic_fetch_sub(&p->refs, 1) == 1) {
			memmove(t->parts + j, t->parts + j + 1, (t->n_parts - j - 1) * sizeof(*t->parts));
			t->n_parts--;
			store__part_free(p);
			continue;
		}
		j++;
	}
	drop = calloc(t->n_grave + 1, sizeof(*drop));
	for (size_t j = 0; drop && j < t->n_grave;) {
		if (!all && now - t->grave[j]->retired_ns < st->grace_ns) {
			j++;
			continue;
		}
		drop[n_drop++] = t->grave[j];
		memmove(t->grave + j, t->grave + j + 1, (t->n_grave - j - 1) * sizeof(*t->grave));
		t->n_grave--;
	}
	pthread_mutex_unlock(&t->mu);
	for (size_t j = 0; j < n_drop; j++)
		store__block_put(st, drop[j]);
	free(drop);
}

int store__head_covered(struct store *st, struct tenant *t, int64_t w, uint32_t e)
{
	return covered(st, t, w, e);
}

int store__head_open(struct store *st, struct tenant *t, struct err_msg *msg)
{
	struct u64set live = { NULL, 0, 0 };
	uint64_t del_profiles = 0, del_samples = 0, del_series = 0;
	int64_t max_window = INT64_MIN;
	rocksdb_writebatch_t *wb;
	char *err = NULL;
	int rc;

	rc = store__epochs_load(st, t, msg);
	if (!rc)
		rc = store__parts_load(st, t, t->epochs[0].part_lo, msg);
	if (rc)
		return rc;
	wb = rocksdb_writebatch_create();
	rc = scan_chunks(st, t, wb, &live, &del_profiles, &del_samples, &max_window, msg);
	/* Series left without chunks by the interrupted seal go too (a series
	 * that never had a profile, which ingest never writes, is kept). */
	if (!rc && !st->read_only && del_profiles)
		rc = store__series_gc(st, t, wb, u64set_has_cb, &live, &del_series, msg);
	if (!rc && !st->read_only && rocksdb_writebatch_count(wb) > 0) {
		ctr_sub(wb, st, t->id, CTR_PROFILES, del_profiles);
		ctr_sub(wb, st, t->id, CTR_SAMPLES, del_samples);
		ctr_sub(wb, st, t->id, CTR_SERIES, del_series);
		rocksdb_write(st->db, st->wopt_sync, wb, &err);
		if (err)
			rc = store__rocks_err(msg, ERR_IO, "finish an interrupted seal", err);
		else if (del_profiles)
			log_info("head: tenant %s: %llu profiles already in blocks deleted from the head",
				 t->name, (unsigned long long)del_profiles);
	}
	rocksdb_writebatch_destroy(wb);
	free(live.v);
	if (!rc && !st->read_only)
		rc = store__epochs_gc(st, t, NULL, msg);
	return rc;
}
