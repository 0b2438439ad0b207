/*
 * pushid.c - idempotent pushes: the profile IDs (push.v1 RawSample.ID) a
 * tenant's commits claimed in the last window, so a push retried after a
 * lost answer is not counted twice (storage_int.h, section 11).
 *
 * Time is cut into generations of one window; an ID claimed at time t
 * belongs to generation t / window.  Memory holds the current and the
 * previous generation (a base/hmap.h index over an entry array each), so
 * an ID is remembered for at least a window and at most two; a claim
 * compares times, so "seen" means "claimed less than a window ago".  Each
 * claim is a META record written in the claiming txn's batch (durable and
 * atomic with the profiles); older generations are removed with one
 * DeleteRange when a claim moves to a new generation, and at open.  All of
 * it runs under the store's writer lock.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/varint.h"

#define PUSHID_KEY_LEN (5 + 8 + 4 + 16)
#define SEED_A 0x9e3779b97f4a7c15ull
#define SEED_B 0xc2b2ae3d27d4eb4full

static void gen_reset(struct pushid_gen *g, uint64_t gen)
{
	g->gen = gen;
	g->n = 0;
	hmap_clear(&g->map);
}

void store__pushids_init(struct pushids *p, int64_t window_ns, uint32_t max)
{
	memset(p, 0, sizeof(*p));
	p->window_ns = window_ns;
	p->max = max;
	for (int i = 0; i < 2; i++)
		hmap_init(&p->g[i].map, max, NULL);
}

void store__pushids_release(struct pushids *p)
{
	if (!p->max)
		return; /* never initialized (store_open failed early) */
	for (int i = 0; i < 2; i++) {
		hmap_release(&p->g[i].map);
		free(p->g[i].v);
		p->g[i].v = NULL;
	}
}

static void key_of(uint8_t k[PUSHID_KEY_LEN], uint64_t gen, const struct pushid_entry *e)
{
	key_tenant_tag(k, 0, TAG_PUSHID);
	be64_put(k + 5, gen);
	be32_put(k + 13, e->tenant);
	be64_put(k + 17, e->h1);
	be64_put(k + 25, e->h2);
}

static uint64_t entry_hash(const struct pushid_entry *e)
{
	return hash_combine(hash_u64(e->h1 ^ e->tenant), e->h2);
}

static int find(const struct pushid_gen *g, const struct pushid_entry *e, struct hmap_probe *pr)
{
	for (uint32_t i = hmap_first(&g->map, entry_hash(e), pr); i != HMAP_NONE;
	     i = hmap_next(&g->map, pr)) {
		const struct pushid_entry *x = &g->v[i];
		if (x->h1 == e->h1 && x->h2 == e->h2 && x->tenant == e->tenant)
			return (int)i;
	}
	return -1;
}

/* Appends e to g (whose map was probed into pr); ERR_TOO_LARGE when full. */
static int add(struct pushid_gen *g, uint32_t max, const struct pushid_entry *e,
	       const struct hmap_probe *pr)
{
	int rc;

	if (g->n >= max)
		return ERR_TOO_LARGE;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 1024;
		struct pushid_entry *v;
		if (cap > max)
			cap = max;
		v = realloc(g->v, cap * sizeof(*v));
		if (!v)
			return ERR_NOMEM;
		g->v = v;
		g->cap = cap;
	}
	if (pr)
		rc = hmap_put_probed(&g->map, pr, (uint32_t)g->n);
	else
		rc = hmap_put(&g->map, entry_hash(e), (uint32_t)g->n);
	if (rc)
		return rc;
	g->v[g->n++] = *e;
	return 0;
}

/* Moves memory to generation `cur` (g[0] current, g[1] previous). */
static void rotate(struct pushids *p, uint64_t cur)
{
	struct pushid_gen tmp;

	if (p->g[0].gen == cur)
		return;
	if (p->g[0].gen + 1 == cur) {
		tmp = p->g[1];
		p->g[1] = p->g[0];
		p->g[0] = tmp;
		gen_reset(&p->g[0], cur);
	} else {
		gen_reset(&p->g[0], cur);
		gen_reset(&p->g[1], cur ? cur - 1 : 0);
	}
}

/* DeleteRange of every generation below `keep` into wb. */
static void drop_below(struct store *st, rocksdb_writebatch_t *wb, uint64_t keep)
{
	uint8_t lo[13], hi[13];

	key_tenant_tag(lo, 0, TAG_PUSHID);
	be64_put(lo + 5, 0);
	key_tenant_tag(hi, 0, TAG_PUSHID);
	be64_put(hi + 5, keep);
	rocksdb_writebatch_delete_range_cf(wb, st->cf[CFI_META], (const char *)lo, sizeof(lo),
					   (const char *)hi, sizeof(hi));
}

int store_txn_claim_id(struct store_txn *tx, const void *id, size_t len, int *seen)
{
	struct store *st = tx->st;
	struct pushids *p = &st->pushids;
	struct pushid_entry e;
	struct hmap_probe pr;
	uint8_t k[PUSHID_KEY_LEN], v[8];
	int64_t now = store__wall(st);
	uint64_t cur;
	int i, rc;

	if (!len || len > STORE_PUSH_ID_MAX)
		return ERR_INVALID;
	cur = now > 0 ? (uint64_t)now / (uint64_t)p->window_ns : 0;
	e.h1 = hash_bytes(id, len, SEED_A);
	e.h2 = hash_bytes(id, len, SEED_B);
	e.tenant = tx->t->id;
	e.time_ns = now;
	if (cur > p->g[0].gen) {
		rotate(p, cur);
		drop_below(st, tx->wb, cur - 1);
	}
	for (int g = 1; g >= 0; g--) {
		i = find(&p->g[g], &e, &pr);
		if (i >= 0 && now - p->g[g].v[i].time_ns < p->window_ns) {
			*seen = 1;
			atomic_fetch_add(&p->duplicates, 1);
			return 0;
		}
	}
	if (!tx->pushid_claimed) {
		tx->pushid_claimed = 1;
		tx->pushid_gen = p->g[0].gen;
		tx->pushid_mark = p->g[0].n;
	}
	/* pr rests where the lookup in g[0] ended: index the new entry there. */
	rc = add(&p->g[0], p->max, &e, &pr);
	if (rc == ERR_TOO_LARGE) {
		/* More IDs in a window than memory holds: this one is stored, not
		 * remembered (docs/operations.md says so; the metric counts it). */
		if (atomic_fetch_add(&p->overflow, 1) == 0)
			log_warn("push IDs: more than %u in one window; retries of the newest "
				 "are not recognized (raise --push-id-max)", p->max);
		*seen = 0;
		return 0;
	}
	if (rc)
		return rc;
	atomic_store(&p->remembered, p->g[0].n + p->g[1].n);
	key_of(k, cur, &e);
	be64_put(v, (uint64_t)now);
	store__txn_put(tx, CFI_META, k, sizeof(k), v, sizeof(v));
	*seen = 0;
	return 0;
}

static void truncate_gen(struct pushid_gen *g, size_t keep)
{
	if (keep < g->n) {
		hmap_truncate(&g->map, (uint32_t)keep);
		g->n = keep;
	}
}

void store__pushids_rollback(struct store_txn *tx)
{
	struct pushids *p = &tx->st->pushids;

	if (!tx->pushid_claimed)
		return;
	/* The writer lock was held since the first claim: every entry past the
	 * mark is this txn's, also when a claim of it moved to a new generation. */
	if (tx->pushid_gen == p->g[0].gen) {
		truncate_gen(&p->g[0], tx->pushid_mark);
	} else if (tx->pushid_gen == p->g[1].gen) {
		truncate_gen(&p->g[1], tx->pushid_mark);
		truncate_gen(&p->g[0], 0);
	} else {
		truncate_gen(&p->g[0], 0);
	}
	atomic_store(&p->remembered, p->g[0].n + p->g[1].n);
}

int store__pushids_load(struct store *st, struct err_msg *msg)
{
	struct pushids *p = &st->pushids;
	int64_t now = store__wall(st);
	uint64_t cur = now > 0 ? (uint64_t)now / (uint64_t)p->window_ns : 0;
	uint8_t lo[13], hi[5];
	struct scan s;
	int rc;

	gen_reset(&p->g[0], cur);
	gen_reset(&p->g[1], cur ? cur - 1 : 0);
	key_tenant_tag(lo, 0, TAG_PUSHID);
	be64_put(lo + 5, cur ? cur - 1 : 0);
	key_tenant_tag(hi, 0, TAG_PUSHID + 1);
	rc = store__scan_open(st, CFI_META, &s, lo, sizeof(lo), hi, sizeof(hi));
	if (rc)
		return rc;
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(s.it, &vlen);
		struct pushid_entry e;
		uint64_t gen;
		struct pushid_gen *g;

		if (klen != PUSHID_KEY_LEN || vlen != 8) {
			rc = err_set(msg, ERR_CORRUPT, "meta: bad push ID record");
			break;
		}
		gen = be64_get(k + 5);
		e.tenant = be32_get(k + 13);
		e.h1 = be64_get(k + 17);
		e.h2 = be64_get(k + 25);
		e.time_ns = (int64_t)be64_get(v);
		g = gen == cur ? &p->g[0] : gen + 1 == cur ? &p->g[1] : NULL;
		if (!g || now - e.time_ns >= p->window_ns)
			continue;
		rc = add(g, p->max, &e, NULL);
		if (rc == ERR_TOO_LARGE)
			rc = 0;
	}
	{
		int rc2 = store__scan_close(&s, msg);
		if (!rc)
			rc = rc2;
	}
	if (!rc && !st->read_only && cur > 1) {
		rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
		char *err = NULL;

		drop_below(st, wb, cur - 1);
		rocksdb_write(st->db, st->wopt, wb, &err);
		rocksdb_writebatch_destroy(wb);
		if (err)
			rc = store__rocks_err(msg, ERR_IO, "push IDs", err);
	}
	atomic_store(&p->remembered, p->g[0].n + p->g[1].n);
	return rc;
}

void store_push_id_stats(struct store *st, struct store_push_id_stats *out)
{
	out->remembered = atomic_load(&st->pushids.remembered);
	out->duplicates = atomic_load(&st->pushids.duplicates);
	out->overflow = atomic_load(&st->pushids.overflow);
	out->window_ns = st->pushids.window_ns;
}
