/*
 * symcache.c - the persisted symbol cache (STORE_AUX_SYMCACHE, format in
 * debuginfo_int.h): resolved frames per (build ID, file offset, leaf or
 * return address), read for a whole batch of one build ID through the hot
 * cache and one multi-get, written in batches, and dropped when the build
 * ID's debug info is replaced.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/varint.h"
#include "debuginfo_int.h"
#include "storage/storage.h"

#define WRITE_BATCH 4096            /* pairs per store write */
#define MAX_BATCH_BYTES (64u << 20) /* encoded frames per store write */
#define SCRATCH_BYTES (64u << 20)   /* strings of the frames handed out */
#define DROP_BATCH (1u << 20)       /* keys deleted per store write */

void debuginfo__cache_key(uint8_t *k, const uint8_t *bid, size_t blen,
			  const struct debuginfo_addr_req *r)
{
	assert(blen > 0 && blen <= SYM_BUILD_ID_MAX);
	memcpy(k, bid, blen);
	be64_put(k + blen, r->addr);
	k[blen + 8] = (uint8_t)(DEBUGINFO__CACHE_RULES << 1 | (r->leaf ? 1 : 0));
}

/* ---- lookup ---- */

struct hit_ctx {
	struct debuginfo *s;
	const struct debuginfo_addr_req *reqs;
	struct buf scratch; /* the strings of the frames being handed out */
	sym_frames_fn fn;
	void *ctx;
	uint8_t *missing;   /* 1 per request not answered by the cache */
	size_t n_missing;
	const uint8_t *bid;
	size_t klen;
	size_t *cold;       /* requests the hot cache lacked, in store order */
	size_t n_cold;
	int rc;
};

static int on_cached(void *ctx, size_t i, const void *val, size_t vlen)
{
	struct hit_ctx *h = ctx;
	struct sym_frame f[SYM_MAX_FRAMES];
	size_t n;
	int rc;

	/* debuginfo__frames_decode_scratch, spelt out: this runs once per
	 * cached address, and the call it saves is 1.5 % of a warm lookup. */
	buf_reset(&h->scratch);
	if (!val || buf_reserve(&h->scratch, vlen + 2 * SYM_MAX_FRAMES) ||
	    debuginfo__frames_decode_into(val, vlen, &h->scratch, f, SYM_MAX_FRAMES, &n)) {
		h->missing[i] = 1;
		h->n_missing++;
		return 0;
	}
	rc = h->fn(h->ctx, i, h->reqs[i].addr, f, n);
	if (rc)
		h->rc = rc;
	return rc;
}

/* A store answer for the j-th cold request: remember it in the hot cache. */
static int on_stored(void *ctx, size_t j, const void *val, size_t vlen)
{
	struct hit_ctx *h = ctx;
	size_t i = h->cold[j];

	if (val) {
		uint8_t key[DEBUGINFO__KEY_MAX];
		struct store_kv kv = { key, h->klen, val, vlen };

		debuginfo__cache_key(key, h->bid, h->klen - 9, &h->reqs[i]);
		debuginfo__hot_put(&h->s->hot, &kv, 1);
	}
	return on_cached(ctx, i, val, vlen);
}

int debuginfo__symcache_lookup(struct debuginfo *s, const uint8_t *bid, size_t blen,
			       const struct debuginfo_addr_req *reqs, size_t n, sym_frames_fn fn,
			       void *ctx, uint8_t *missing, size_t *n_missing)
{
	size_t klen = blen + 9;
	struct store_kv *keys = NULL;
	uint8_t *kbytes = NULL;
	uint64_t *hashes = NULL;
	struct hit_ctx h;
	int rc = 0;

	*n_missing = 0;
	if (!n)
		return 0;
	memset(&h, 0, sizeof(h));
	h.s = s;
	h.reqs = reqs;
	h.fn = fn;
	h.ctx = ctx;
	h.missing = missing;
	h.bid = bid;
	h.klen = klen;
	buf_init(&h.scratch, SCRATCH_BYTES);
	keys = calloc(n, sizeof(*keys));
	kbytes = malloc(n * klen);
	h.cold = calloc(n, sizeof(*h.cold));
	hashes = malloc(n * sizeof(*hashes));
	if (!keys || !kbytes || !h.cold || !hashes) {
		rc = ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		debuginfo__cache_key(kbytes + i * klen, bid, blen, &reqs[i]);
	/* The hot cache first; what it lacks goes to the store in one batch. */
	debuginfo__hot_probe(&s->hot, kbytes, klen, n, hashes, on_cached, &h, h.cold, &h.n_cold);
	for (size_t j = 0; j < h.n_cold; j++) {
		keys[j].key = kbytes + h.cold[j] * klen;
		keys[j].klen = klen;
	}
	if (!h.rc && h.n_cold)
		rc = store_aux_multi_get(s->st, STORE_AUX_SYMCACHE, keys, h.n_cold, on_stored, &h,
					 NULL);
	if (h.rc)
		rc = h.rc;
	*n_missing = h.n_missing;
out:
	buf_release(&h.scratch);
	free(h.cold);
	free(hashes);
	free(keys);
	free(kbytes);
	return rc;
}

/* ---- writing ---- */

int debuginfo__symcache_writer_init(struct debuginfo__symcache_writer *w, struct debuginfo *s,
				    const uint8_t *bid, size_t blen)
{
	memset(w, 0, sizeof(*w));
	w->s = s;
	w->bid = bid;
	w->blen = blen;
	w->klen = blen + 9;
	buf_init(&w->vals, MAX_BATCH_BYTES);
	w->keys = malloc(WRITE_BATCH * w->klen);
	w->offs = malloc((WRITE_BATCH + 1) * sizeof(*w->offs));
	if (!w->keys || !w->offs) {
		debuginfo__symcache_writer_release(w);
		return ERR_NOMEM;
	}
	w->offs[0] = 0;
	return 0;
}

void debuginfo__symcache_writer_release(struct debuginfo__symcache_writer *w)
{
	buf_release(&w->vals);
	free(w->keys);
	free(w->offs);
	w->keys = NULL;
	w->offs = NULL;
}

int debuginfo__symcache_flush(struct debuginfo__symcache_writer *w)
{
	struct store_kv *kv;
	size_t n = w->k;
	int rc;

	if (!n)
		return 0;
	kv = calloc(n, sizeof(*kv));
	if (!kv)
		return ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		kv[i].key = w->keys + i * w->klen;
		kv[i].klen = w->klen;
		kv[i].val = w->vals.data + w->offs[i];
		kv[i].vlen = w->offs[i + 1] - w->offs[i];
	}
	rc = store_aux_write(w->s->st, STORE_AUX_SYMCACHE, kv, n, NULL);
	if (!rc)
		debuginfo__hot_put(&w->s->hot, kv, n);
	free(kv);
	buf_reset(&w->vals);
	w->k = 0;
	return rc;
}

int debuginfo__symcache_add(struct debuginfo__symcache_writer *w,
			    const struct debuginfo_addr_req *r, const struct sym_frame *f, size_t n)
{
	size_t pre = w->vals.len;
	int rc;

	assert(w->keys && w->k < WRITE_BATCH);
	if (debuginfo__frames_encode(f, n, &w->vals)) {
		/* The batch is full: write it, then this pair starts the next. */
		w->vals.len = pre;
		if ((rc = debuginfo__symcache_flush(w)) ||
		    (rc = debuginfo__frames_encode(f, n, &w->vals)))
			return rc;
	}
	debuginfo__cache_key(w->keys + w->k * w->klen, w->bid, w->blen, r);
	w->k++;
	w->offs[w->k] = w->vals.len;
	return w->k == WRITE_BATCH ? debuginfo__symcache_flush(w) : 0;
}

/* ---- dropping a build ID ---- */

struct del_ctx {
	size_t klen;       /* keys of exactly this length are the build ID's */
	struct buf keys;   /* uvarint length + key, DROP_BATCH at most */
	size_t n;
};

enum { BATCH_FULL = 1 }; /* stops the scan; not an error code */

static int collect_key(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct del_ctx *d = ctx;
	int rc;

	(void)val;
	(void)vlen;
	/* A longer build ID that starts with the same bytes is another one. */
	if (klen != d->klen)
		return 0;
	rc = buf_put_uvarint(&d->keys, klen);
	if (!rc)
		rc = buf_append(&d->keys, key, klen);
	if (!rc && ++d->n == DROP_BATCH)
		rc = BATCH_FULL;
	return rc;
}

/* Deletes the keys collected in `d`. */
static int delete_keys(struct debuginfo *s, const struct del_ctx *d)
{
	struct store_kv *kv = calloc(d->n, sizeof(*kv));
	const uint8_t *p = (const uint8_t *)d->keys.data, *end = p + d->keys.len;
	int rc;

	if (!kv)
		return ERR_NOMEM;
	for (size_t i = 0; i < d->n; i++) {
		uint64_t kl = 0;
		size_t k = varint_get(p, end, &kl);

		p += k;
		kv[i].key = p;
		kv[i].klen = (size_t)kl;
		p += kl;
	}
	rc = store_aux_write(s->st, STORE_AUX_SYMCACHE, kv, d->n, NULL);
	free(kv);
	return rc;
}

void debuginfo__symcache_drop(struct debuginfo *s, const uint8_t *bid, size_t blen)
{
	struct del_ctx d;
	int rc;

	d.klen = blen + 9;
	buf_init(&d.keys, (size_t)DROP_BATCH * (d.klen + 1));
	/* In batches, each scan starting over the keys left: a build ID
	 * resolved at millions of addresses is dropped whole, with bounded
	 * memory. */
	do {
		buf_reset(&d.keys);
		d.n = 0;
		rc = store_aux_scan(s->st, STORE_AUX_SYMCACHE, bid, blen, collect_key, &d, NULL);
		if (rc < 0 || !d.n || delete_keys(s, &d))
			break;
	} while (rc == BATCH_FULL);
	buf_release(&d.keys);
	/* After the store, so no query can bring the old frames back.
	 * Replacements are rare: forgetting every hot pair is simpler than
	 * finding this build ID's. */
	debuginfo__hot_clear(&s->hot);
}
