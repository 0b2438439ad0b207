/*
 * retention.c - debug info kept as long as the profiles that need it.  The
 * store says which build IDs its retained profiles reference, and how new
 * the newest of them is (store_build_ids_each: block footers and the head);
 * a pass records that time per build ID (last_profile), lists the
 * referenced build IDs without a usable file (history that stays hex), and
 * deletes what no retained profile references once it is older than the
 * debug info retention.  A thread runs the pass periodically.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/thread.h"
#include "debuginfo_int.h"
#include "storage/storage.h"

#define MAX_REFS ((size_t)1 << 26)

struct ref {
	char id[DEBUGINFO_HEX_MAX];
	int64_t last;
};

struct refs {
	struct ref *v;
	size_t n, cap;
	int rc;
};

static int ref_add(void *ctx, const char *build_id, int64_t last_ns)
{
	struct refs *r = ctx;
	char id[DEBUGINFO_HEX_MAX];

	if (debuginfo__canon_id(build_id, id, NULL, NULL))
		return 0; /* not a hex build ID: no debug info can be stored for it */
	if (r->n && !strcmp(r->v[r->n - 1].id, id)) {
		if (last_ns > r->v[r->n - 1].last)
			r->v[r->n - 1].last = last_ns;
		return 0;
	}
	r->rc = GROW(r->v, r->cap, r->n + 1, MAX_REFS, NULL);
	if (r->rc)
		return r->rc;
	memcpy(r->v[r->n].id, id, sizeof(id));
	r->v[r->n++].last = last_ns;
	return 0;
}

static int ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ref *)a)->id, ((const struct ref *)b)->id);
}

/* The build IDs retained profiles reference, sorted, each once. */
static int collect_refs(struct debuginfo *s, struct refs *r, struct err_msg *msg)
{
	int rc;

	memset(r, 0, sizeof(*r));
	rc = store_build_ids_each(s->st, ref_add, r, msg);
	if (!rc)
		rc = r->rc;
	if (rc) {
		free(r->v);
		return rc;
	}
	/* Canonical forms sort like the store's lower-case hex; merge duplicates anyway. */
	if (r->n) /* r->v is NULL when the store references no build ID */
		qsort(r->v, r->n, sizeof(*r->v), ref_cmp);
	{
		size_t k = 0;
		for (size_t i = 0; i < r->n; i++) {
			if (k && !strcmp(r->v[k - 1].id, r->v[i].id)) {
				if (r->v[i].last > r->v[k - 1].last)
					r->v[k - 1].last = r->v[i].last;
				continue;
			}
			r->v[k++] = r->v[i];
		}
		r->n = k;
	}
	return 0;
}

static const struct ref *ref_find(const struct refs *r, const char *id)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(r->v[mid].id, id);
		if (!c)
			return &r->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A record that may go: its id, and the bytes of its files. */
struct doomed {
	char (*id)[DEBUGINFO_HEX_MAX];
	size_t n, cap;
	const struct refs *refs;
	int64_t cutoff;
	int rc;
};

/* The newest time a record shows use of its build ID. */
static int64_t last_use(const struct debuginfo__meta *m)
{
	int64_t last = m->last_profile;

	if (m->uploaded > last)
		last = m->uploaded;
	if (m->last_used > last)
		last = m->last_used;
	return last;
}

static int pick_doomed(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct doomed *d = ctx;
	struct debuginfo__meta m;
	char id[DEBUGINFO_HEX_MAX];
	int64_t last;

	if (klen >= DEBUGINFO_HEX_MAX || debuginfo__meta_decode(val, vlen, &m))
		return 0;
	memcpy(id, key, klen);
	id[klen] = '\0';
	if (ref_find(d->refs, id))
		return 0; /* a retained profile needs it */
	last = last_use(&m);
	if (last >= d->cutoff)
		return 0;
	d->rc = GROW(d->id, d->cap, d->n + 1, MAX_REFS, NULL);
	if (d->rc)
		return d->rc;
	memcpy(d->id[d->n++], id, sizeof(id));
	return 0;
}

/* Deletes the files, derived data and record of `id` (upload_mu held). */
static int delete_one(struct debuginfo *s, const char *id, uint64_t *bytes)
{
	static const char *const names[] = { "debuginfo", "executable", "kallsyms", "index" };
	char path[DEBUGINFO__PATH_MAX];
	uint8_t bid[SYM_BUILD_ID_MAX];
	char canon[DEBUGINFO_HEX_MAX];
	struct store_kv kv;
	size_t blen;
	int rc;

	if (debuginfo__canon_id(id, canon, bid, &blen))
		return ERR_INVALID;
	/* The record first: a crash after it leaves files no record names,
	 * which an upload of the same build ID replaces. */
	kv.key = id;
	kv.klen = strlen(id);
	kv.val = NULL;
	kv.vlen = 0;
	rc = store_aux_write(s->st, STORE_AUX_DEBUGINFO, &kv, 1, NULL);
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uint64_t size, hash;
		if (debuginfo__path(s, id, names[i], path, sizeof(path)))
			continue;
		if (i < 3 && !debuginfo__file_hash(path, &size, &hash))
			*bytes += size;
		if (unlink(path) && errno != ENOENT)
			log_warn("debuginfo: cannot delete %s: %s", path, strerror(errno));
	}
	if (!debuginfo__path(s, id, NULL, path, sizeof(path)))
		rmdir(path);
	debuginfo__drop_derived(s, id, bid, blen);
	return 0;
}

int debuginfo_retain(struct debuginfo *s, int64_t retention_ns, int64_t now_ns,
		     struct debuginfo_retention_stats *out, struct err_msg *msg)
{
	struct debuginfo_retention_stats st = { 0, 0, 0, 0 };
	struct doomed d;
	struct refs r;
	int rc, reput = 0;

	pthread_mutex_lock(&s->retain_mu);
	rc = collect_refs(s, &r, msg);
	if (rc) {
		pthread_mutex_unlock(&s->retain_mu);
		return rc;
	}
	st.referenced = r.n;
	/* The newest reference of each build ID goes into its record. */
	for (size_t i = 0; i < r.n && !rc; i++) {
		struct debuginfo__meta m;
		int g;

		pthread_mutex_lock(&s->upload_mu);
		g = debuginfo__meta_get(s, r.v[i].id, &m);
		if (g || !m.kinds || m.status != DEBUGINFO_STATUS_OK)
			st.missing++; /* no usable file: those frames stay hex */
		if (!g && m.last_profile < r.v[i].last) {
			/* Used again after an idle time past the retention: the
			 * bucket may have let it go (bucketgc.c), so what this
			 * server holds is put again (found if still there). */
			if (s->os && m.bucket && retention_ns > 0 &&
			    last_use(&m) < now_ns - retention_ns) {
				m.bucket = 0;
				reput = 1;
			}
			m.last_profile = r.v[i].last;
			if (debuginfo__meta_put(s, r.v[i].id, &m))
				log_warn("debuginfo: cannot record the last profile of %s", r.v[i].id);
		}
		pthread_mutex_unlock(&s->upload_mu);
	}
	if (reput)
		debuginfo__bucket_wake(s);
	/* What the bucket index cannot see yet (this server's head) is marked
	 * there, so the bucket keeps it (bucketgc.c). */
	{
		unsigned budget = DEBUGINFO__USE_MARKS_PER_PASS;

		for (size_t i = 0; i < r.n && budget; i++)
			if (debuginfo__gc_mark_used(s, r.v[i].id, r.v[i].last, now_ns, retention_ns,
						    &budget))
				break;
	}
	memset(&d, 0, sizeof(d));
	d.refs = &r;
	if (retention_ns > 0 && !__builtin_sub_overflow(now_ns, retention_ns, &d.cutoff)) {
		rc = store_aux_scan(s->st, STORE_AUX_DEBUGINFO, "", 0, pick_doomed, &d, msg);
		if (!rc)
			rc = d.rc;
		for (size_t i = 0; i < d.n && !rc; i++) {
			uint64_t bytes = 0;

			struct debuginfo__meta m;

			pthread_mutex_lock(&s->upload_mu);
			/* The scan ran without upload_mu: an upload (or a use) since
			 * then keeps the record. */
			if (debuginfo__meta_get(s, d.id[i], &m) || last_use(&m) >= d.cutoff) {
				pthread_mutex_unlock(&s->upload_mu);
				continue;
			}
			if (!delete_one(s, d.id[i], &bytes)) {
				st.deleted++;
				st.deleted_bytes += bytes;
				log_info("debuginfo: deleted %s: no retained profile uses it", d.id[i]);
			}
			pthread_mutex_unlock(&s->upload_mu);
		}
	}
	free(d.id);
	free(r.v);
	s->retain_last = st;
	s->retain_total.deleted += st.deleted;
	s->retain_total.deleted_bytes += st.deleted_bytes;
	s->retain_total.referenced = st.referenced;
	s->retain_total.missing = st.missing;
	pthread_mutex_unlock(&s->retain_mu);
	if (out) {
		out->referenced += st.referenced;
		out->missing += st.missing;
		out->deleted += st.deleted;
		out->deleted_bytes += st.deleted_bytes;
	}
	return rc;
}

void debuginfo_retention_totals(struct debuginfo *s, struct debuginfo_retention_stats *total,
				struct debuginfo_retention_stats *last)
{
	pthread_mutex_lock(&s->retain_mu);
	if (total)
		*total = s->retain_total;
	if (last)
		*last = s->retain_last;
	pthread_mutex_unlock(&s->retain_mu);
}

int debuginfo_missing_each(struct debuginfo *s, debuginfo_missing_fn fn, void *ctx,
			   struct err_msg *msg)
{
	struct refs r;
	int rc = collect_refs(s, &r, msg);

	for (size_t i = 0; i < r.n && !rc; i++) {
		struct debuginfo__meta m;
		int g = debuginfo__meta_get(s, r.v[i].id, &m);
		enum debuginfo_status status = DEBUGINFO_STATUS_NOT_FOUND;

		if (!g && m.kinds && m.status == DEBUGINFO_STATUS_OK)
			continue; /* a usable file */
		if (!g && m.status < DEBUGINFO_STATUS_COUNT && m.status != DEBUGINFO_STATUS_OK)
			status = (enum debuginfo_status)m.status;
		rc = fn(ctx, r.v[i].id, r.v[i].last, status);
	}
	free(r.v);
	return rc;
}

/* ---- the thread ---- */

static void *retain_main(void *arg)
{
	struct debuginfo *s = arg;

	pthread_mutex_lock(&s->mu);
	while (!s->retain_stop) {
		thread_wait_until(&s->retain_cv, &s->mu, clock_mono_ns() + s->retain_interval_ns);
		if (s->retain_stop)
			break;
		pthread_mutex_unlock(&s->mu);
		{
			struct err_msg m;

			err_clear(&m);
			if (debuginfo_retain(s, s->retention_ns, clock_wall_ns(), NULL, &m))
				log_warn("debuginfo retention: %s", m.text);
			err_clear(&m);
			if (debuginfo_perfmap_expire(s, clock_wall_ns(), NULL, &m))
				log_warn("perf map expiry: %s", m.text);
		}
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

void debuginfo__retain_init(struct debuginfo *s)
{
	pthread_mutex_init(&s->retain_mu, NULL);
	thread_cond_init_mono(&s->retain_cv);
}

int debuginfo__retain_start(struct debuginfo *s)
{
	/* Also without a retention: the pass records last_profile. */
	if (pthread_create(&s->retain_thread, NULL, retain_main, s) != 0)
		return ERR_UNAVAILABLE;
	s->retain_started = 1;
	return 0;
}

void debuginfo__retain_stop(struct debuginfo *s)
{
	if (s->retain_started) {
		thread_stop(s->retain_thread, &s->mu, &s->retain_cv, &s->retain_stop);
		s->retain_started = 0;
	}
}

void debuginfo__retain_release(struct debuginfo *s)
{
	pthread_cond_destroy(&s->retain_cv);
	pthread_mutex_destroy(&s->retain_mu);
}
