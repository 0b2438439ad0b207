/*
 * perfmap.c - perf maps of JIT runtimes (/tmp/perf-PID.map), uploaded per
 * tenant and process and used to name the frames of that process's
 * anonymous executable memory (docs/symbolization.md, "JIT runtimes").
 *
 * Storage: STORE_AUX_PERFMAP, key = tenant ("" for no tenant) NUL be32(pid),
 * value = the parsed map in perfmap_encode's form (base/perfmap.h), sorted
 * by address.  One map per (tenant, pid): a new upload replaces the old
 * one, and moves debuginfo_generation so no query memo keeps frames named
 * from the map it replaced.
 *
 * Beside each map, an index entry: key = 0xFF tenant NUL be32(pid), value
 * = be64(uploaded_ns), written and deleted in the same store write as the
 * map.  The per-tenant cap counts and the expiry scans these small entries
 * instead of the maps (up to 8 MiB each).  No tenant id starts with 0xFF
 * (not UTF-8; make_key refuses it), so the two kinds never mix.  Maps
 * stored before the index existed are indexed by the first expiry pass of
 * a process, which reads the whole namespace once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/perfmap.h"
#include "base/varint.h"
#include "debuginfo_int.h"
#include "storage/storage.h"

#define KEY_MAX 600
#define IDX 0xFFu
/* A stored map: perfmap_encode of at most PERFMAP_MAX_BYTES of text. */
#define VAL_MAX ((size_t)PERFMAP_MAX_BYTES + 64)

static int make_key(const char *tenant, uint32_t pid, uint8_t *key, size_t *klen,
		    struct err_msg *msg)
{
	size_t tl = tenant ? strlen(tenant) : 0;

	if (tl + 6 > KEY_MAX)
		return err_set(msg, ERR_INVALID, "tenant name too long for a perf map");
	if (tl && (uint8_t)tenant[0] == IDX)
		return err_set(msg, ERR_INVALID, "a tenant id starting with byte 0xFF cannot "
				   "have perf maps");
	memcpy(key, tenant ? tenant : "", tl);
	key[tl] = '\0';
	be32_put(key + tl + 1, pid);
	*klen = tl + 5;
	return 0;
}

/* The index key of the map key `key` (klen bytes) into idx (klen + 1). */
static void make_idx(const uint8_t *key, size_t klen, uint8_t *idx)
{
	idx[0] = IDX;
	memcpy(idx + 1, key, klen);
}

/* The least recently uploaded map of a tenant other than `key`, and how many. */
struct oldest {
	const uint8_t *skip; /* the index key being written (not counted) */
	size_t skip_len;
	size_t n;
	int64_t ns;
	uint8_t key[KEY_MAX + 1];
	size_t klen;
};

static int count_cb(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct oldest *o = ctx;
	int64_t ns;

	if (klen == o->skip_len && !memcmp(key, o->skip, klen))
		return 0;
	if (klen > KEY_MAX + 1 || vlen != 8)
		return 0; /* not an index entry of ours: ignored */
	ns = (int64_t)be64_get(val);
	o->n++;
	if (!o->klen || ns < o->ns) {
		o->ns = ns;
		memcpy(o->key, key, klen);
		o->klen = klen;
	}
	return 0;
}

int debuginfo_perfmap_put(struct debuginfo *d, const char *tenant, uint32_t pid,
			  const char *text, size_t len, size_t max, size_t *entries,
			  struct err_msg *msg)
{
	struct perfmap m;
	struct buf val;
	struct store_kv kv[4];
	struct oldest *o = NULL;
	uint8_t key[KEY_MAX], idx[KEY_MAX + 1], ts[8];
	size_t nkv = 2;
	int64_t now = clock_wall_ns();
	int rc;

	if (pid == 0 || pid > INT32_MAX)
		return err_set(msg, ERR_INVALID, "process id must be 1..%d", INT32_MAX);
	if ((rc = make_key(tenant, pid, key, &kv[0].klen, msg)) ||
	    (rc = perfmap_parse(text, len, &m, msg)))
		return rc;
	/* The stored form is never longer than the text plus its header. */
	buf_init(&val, VAL_MAX);
	rc = perfmap_encode(&m, now, &val);
	if (rc)
		err_set(msg, rc, "perf map: cannot encode");
	kv[0].key = key;
	kv[0].val = val.data ? val.data : "";
	kv[0].vlen = val.len;
	make_idx(key, kv[0].klen, idx);
	be64_put(ts, (uint64_t)now);
	kv[1] = (struct store_kv){ .key = idx, .klen = kv[0].klen + 1, .val = ts, .vlen = 8 };
	if (!rc && !(o = calloc(1, sizeof(*o))))
		rc = err_set(msg, ERR_NOMEM, "perf map: out of memory");
	/* Count, evict and write under perfmap_mu: two uploads cannot both
	 * see room for one more. */
	pthread_mutex_lock(&d->perfmap_mu);
	if (!rc) {
		o->skip = idx;
		o->skip_len = kv[1].klen;
		/* The tenant's index entries: 0xFF tenant NUL. */
		rc = store_aux_scan(d->st, STORE_AUX_PERFMAP, idx, kv[0].klen - 3, count_cb, o,
				    msg);
	}
	if (!max || max > (1u << 20))
		max = d->perfmap_max;
	if (!rc && o->n >= max && o->klen) {
		/* Full: the least recently uploaded map goes in the same write. */
		kv[2] = (struct store_kv){ .key = o->key + 1, .klen = o->klen - 1 };
		kv[3] = (struct store_kv){ .key = o->key, .klen = o->klen };
		nkv = 4;
	}
	if (!rc && !(rc = store_aux_write(d->st, STORE_AUX_PERFMAP, kv, nkv, msg))) {
		atomic_fetch_add(&d->generation, 1);
		if (nkv == 4) {
			atomic_fetch_add(&d->perfmaps_evicted, 1);
			log_info("perf map of process %u evicted for process %u: tenant at its "
				 "cap of %zu", be32_get(o->key + o->klen - 4), pid, max);
		}
		*entries = m.n;
	}
	pthread_mutex_unlock(&d->perfmap_mu);
	free(o);
	buf_release(&val);
	perfmap_release(&m);
	return rc;
}

/* ---- expiry ---- */

struct doomed {
	int64_t cutoff;
	int legacy;          /* the whole namespace: maps without an index entry */
	uint8_t **keys;      /* index keys of maps past the cutoff */
	size_t *lens, n, cap;
	uint8_t **fix;       /* legacy: index entries to write (key; value after it) */
	size_t *fix_lens, nfix, fix_cap;
	int rc;
};

static int push_key(uint8_t ***v, size_t **lens, size_t *n, size_t *cap, const void *k,
		    size_t klen, size_t extra)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		uint8_t **nv = realloc(*v, c * sizeof(**v));
		size_t *nl;

		if (!nv)
			return ERR_NOMEM;
		*v = nv;
		if (!(nl = realloc(*lens, c * sizeof(**lens))))
			return ERR_NOMEM;
		*lens = nl;
		*cap = c;
	}
	if (!((*v)[*n] = malloc(klen + extra)))
		return ERR_NOMEM;
	memcpy((*v)[*n], k, klen);
	(*lens)[(*n)++] = klen;
	return 0;
}

static int doomed_cb(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct doomed *d = ctx;
	const uint8_t *k = key;
	uint8_t idx[KEY_MAX + 1];
	int64_t ns;

	if (klen > KEY_MAX)
		return 0;
	if (klen && k[0] == IDX) {
		/* The legacy pass goes by the maps (each has its upload time,
		 * the same as its index entry's when it has one). */
		if (!d->legacy && vlen == 8 && (int64_t)be64_get(val) < d->cutoff)
			d->rc = push_key(&d->keys, &d->lens, &d->n, &d->cap, key, klen, 0);
		return d->rc;
	}
	/* A map (only seen by the legacy pass). */
	if (perfmap_uploaded_ns(val, vlen, &ns))
		ns = 0; /* unreadable: expired at once */
	make_idx(key, klen, idx);
	if (ns < d->cutoff)
		d->rc = push_key(&d->keys, &d->lens, &d->n, &d->cap, idx, klen + 1, 0);
	else if (!(d->rc = push_key(&d->fix, &d->fix_lens, &d->nfix, &d->fix_cap, idx,
				    klen + 1, 8)))
		be64_put(d->fix[d->nfix - 1] + klen + 1, (uint64_t)ns);
	return d->rc;
}

int debuginfo_perfmap_expire(struct debuginfo *s, int64_t now_ns, uint64_t *deleted,
			     struct err_msg *msg)
{
	struct doomed d;
	uint8_t pfx = IDX;
	uint64_t n = 0;
	int rc;

	memset(&d, 0, sizeof(d));
	if (__builtin_sub_overflow(now_ns, s->perfmap_retention_ns, &d.cutoff))
		return 0;
	d.legacy = !atomic_load(&s->perfmap_indexed);
	rc = store_aux_scan(s->st, STORE_AUX_PERFMAP, &pfx, d.legacy ? 0 : 1, doomed_cb, &d, msg);
	if (!rc && d.rc)
		rc = err_set(msg, d.rc, "perf map expiry: out of memory");
	/* Each deletion re-checks its entry under perfmap_mu: an upload since
	 * the scan keeps the map. */
	pthread_mutex_lock(&s->perfmap_mu);
	for (size_t i = 0; i < d.nfix && !rc; i++) {
		struct store_kv kv = { .key = d.fix[i], .klen = d.fix_lens[i],
				       .val = d.fix[i] + d.fix_lens[i], .vlen = 8 };
		struct buf cur;

		/* Only where no upload wrote an index entry since the scan. */
		buf_init(&cur, 16);
		if (store_aux_get(s->st, STORE_AUX_PERFMAP, kv.key, kv.klen, &cur, msg) ==
		    ERR_NOT_FOUND) {
			err_clear(msg);
			rc = store_aux_write(s->st, STORE_AUX_PERFMAP, &kv, 1, msg);
		}
		buf_release(&cur);
	}
	for (size_t i = 0; i < d.n && !rc; i++) {
		struct buf cur;
		int g;

		buf_init(&cur, 16);
		g = store_aux_get(s->st, STORE_AUX_PERFMAP, d.keys[i], d.lens[i], &cur, msg);
		/* Not found: a map without an index entry (the legacy pass; an
		 * eviction only takes indexed maps, and an upload since the scan
		 * wrote one), or one deleted since the scan (nothing to do). */
		if ((g == ERR_NOT_FOUND && d.legacy) || (!g && cur.len == 8 &&
					   (int64_t)be64_get((const uint8_t *)cur.data) < d.cutoff)) {
			struct store_kv kv[2] = {
				{ .key = d.keys[i] + 1, .klen = d.lens[i] - 1 },
				{ .key = d.keys[i], .klen = d.lens[i] },
			};

			err_clear(msg);
			if (!(rc = store_aux_write(s->st, STORE_AUX_PERFMAP, kv, 2, msg))) {
				n++;
				log_info("perf map of process %u deleted: not uploaded for the "
					 "retention period", be32_get(d.keys[i] + d.lens[i] - 4));
			}
		} else if (g && g != ERR_NOT_FOUND) {
			rc = g;
		}
		buf_release(&cur);
	}
	if (n) {
		atomic_fetch_add(&s->generation, 1);
		atomic_fetch_add(&s->perfmaps_expired, n);
	}
	if (!rc && d.legacy)
		atomic_store(&s->perfmap_indexed, 1);
	pthread_mutex_unlock(&s->perfmap_mu);
	for (size_t i = 0; i < d.n; i++)
		free(d.keys[i]);
	for (size_t i = 0; i < d.nfix; i++)
		free(d.fix[i]);
	free(d.keys);
	free(d.lens);
	free(d.fix);
	free(d.fix_lens);
	if (deleted)
		*deleted += n;
	return rc;
}

int debuginfo_perfmap_resolve(struct debuginfo *d, const char *tenant, uint32_t pid,
			      const struct debuginfo_addr_req *reqs, size_t n, sym_frames_fn fn,
			      void *ctx, enum debuginfo_status *status, char *reason,
			      size_t reason_len)
{
	struct perfmap m;
	struct err_msg msg;
	struct buf val;
	uint8_t key[KEY_MAX];
	size_t klen = 0;
	int64_t ns;
	int rc;

	err_clear(&msg);
	buf_init(&val, VAL_MAX);
	if (tenant && (uint8_t)tenant[0] == IDX) {
		rc = ERR_NOT_FOUND; /* such a tenant has no maps (make_key) */
	} else {
		if ((rc = make_key(tenant, pid, key, &klen, &msg)))
			return rc;
		rc = store_aux_get(d->st, STORE_AUX_PERFMAP, key, klen, &val, &msg);
	}
	if (rc == ERR_NOT_FOUND) {
		buf_release(&val);
		*status = DEBUGINFO_STATUS_NOT_FOUND;
		snprintf(reason, reason_len,
			 "no perf map for process %u: upload /tmp/perf-%u.map (unhex upload "
			 "--perf-map FILE --pid %u) from the host the process ran on",
			 pid, pid, pid);
		return 0;
	}
	if (!rc)
		rc = perfmap_decode(val.data, val.len, &m, &ns, &msg);
	buf_release(&val);
	if (rc) {
		*status = DEBUGINFO_STATUS_NOT_FOUND;
		snprintf(reason, reason_len,
			 "the perf map of process %u cannot be read (%s): upload it again", pid,
			 msg.text);
		return rc == ERR_CORRUPT ? 0 : rc;
	}
	*status = DEBUGINFO_STATUS_OK;
	reason[0] = '\0';
	for (size_t i = 0; i < n && !rc; i++) {
		/* A caller is a return address: the call is the byte before it. */
		uint64_t a = reqs[i].leaf || !reqs[i].addr ? reqs[i].addr : reqs[i].addr - 1;
		const struct perfmap_entry *e = perfmap_find(&m, a);
		struct sym_frame f = { 0 };

		if (e)
			f.function = perfmap_name(&m, e);
		rc = fn(ctx, i, a, &f, e ? 1 : 0);
	}
	perfmap_release(&m);
	return rc;
}
