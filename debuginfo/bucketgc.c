/*
 * bucketgc.c - debug info leaves the bucket by the rule of one node
 * (retention.c): a build ID's objects (files of every owner, indexes) are
 * deleted once no block the bucket index counts references it and its last
 * use is older than the debug info retention.  It runs where the bucket
 * index is written, as the store's hook after each index
 * (store_direfs_hook_set): the store says which build IDs counted blocks
 * reference and when each was last used; this pass lists "debuginfo/" once.
 *
 * Uses.  A reference by a counted block (its newest profile), a use
 * marker (below), or, for a build ID no block referenced yet, the first
 * pass that saw it in the bucket (recorded in the store's table), so an
 * upload waits as long as on one node before it may go.
 *
 * The race with writers.  A build ID is deleted only after it has been
 * found deletable by every pass over pass_delay_ns (the store's delete
 * delay plus the time a profile takes to reach the index): a block an
 * ingester seals meanwhile is counted first and keeps it.  Which build IDs
 * wait for that delay is kept in memory: a restarted writer waits again.
 * What the index cannot see yet, profiles in an ingester's head, every
 * server marks in the bucket: its retention pass puts, for each build ID
 * its own profiles used within the retention, a marker
 * "debuginfo/<id>/used/<unix seconds of that use>", again once the use
 * moved a quarter of the retention on (debuginfo__gc_mark_used); the
 * newest marker is a use, and markers past the retention are deleted.  And a build ID used again
 * after an idle time past the retention is put again by every server that
 * holds its files (retention.c clears its bucket bits).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/log.h"
#include "debuginfo_int.h"
#include "objstore/objstore.h"
#include "storage/storage.h"

#define PREFIX "debuginfo/"
#define USED "used"                  /* debuginfo/<id>/used/<unix seconds> */
#define GROUP_KEYS_BYTES (1u << 20)  /* keys of one build ID looked at */
#define DELETE_KEYS_BYTES (16u << 20) /* keys one pass deletes (the rest: next pass) */
#define MAX_IDS ((size_t)1 << 22)

struct gc_ref {
	char id[DEBUGINFO_HEX_MAX];
	size_t at; /* the entry of the store's table */
	int64_t last;
	int referenced, listed;
};

struct gc {
	struct debuginfo *s;
	struct store_direfs *r;
	const struct store_direfs_pass *p;
	int64_t cutoff;
	struct gc_ref *refs; /* ascending by id */
	size_t n_refs, cap_refs;
	struct debuginfo__doom *doom; /* this pass's waiting build IDs, ascending */
	size_t n_doom, cap_doom;
	char cur[DEBUGINFO_HEX_MAX];  /* the build ID of the keys in `keys` ("" none) */
	struct buf keys;              /* its keys, each NUL-terminated */
	int keys_full;                /* more than the cap: not deleted this pass */
	int64_t used;                 /* its newest use marker's time (0: none) */
	struct buf stale;             /* use markers past the retention, to delete */
	struct buf del;               /* groups to delete: id, keys, then an empty string */
	int rc;
};

static int ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gc_ref *)a)->id, ((const struct gc_ref *)b)->id);
}

static int doom_cmp(const void *a, const void *b)
{
	return strcmp(((const struct debuginfo__doom *)a)->id,
		      ((const struct debuginfo__doom *)b)->id);
}

/* The store's table by canonical build ID (spellings merged). */
static int load_refs(struct gc *g)
{
	size_t n = store_direfs_count(g->r), k = 0;

	for (size_t i = 0; i < n; i++) {
		struct store_direfs_entry e;
		struct gc_ref *x;
		int rc;

		store_direfs_at(g->r, i, &e);
		rc = GROW(g->refs, g->cap_refs, g->n_refs + 1, MAX_IDS, NULL);
		if (rc)
			return rc;
		x = &g->refs[g->n_refs];
		if (debuginfo__canon_id(e.build_id, x->id, NULL, NULL)) {
			/* Not hex: no debug info is stored under it; its entry
			 * goes once it would be past the retention. */
			if (!e.referenced && e.last_ns < g->cutoff)
				store_direfs_forget(g->r, i);
			continue;
		}
		x->at = i;
		x->last = e.last_ns;
		x->referenced = e.referenced;
		x->listed = 0;
		g->n_refs++;
	}
	if (g->n_refs)
		qsort(g->refs, g->n_refs, sizeof(*g->refs), ref_cmp);
	for (size_t i = 0; i < g->n_refs; i++) {
		if (k && !strcmp(g->refs[k - 1].id, g->refs[i].id)) {
			if (g->refs[i].last > g->refs[k - 1].last)
				g->refs[k - 1].last = g->refs[i].last;
			g->refs[k - 1].referenced |= g->refs[i].referenced;
			continue;
		}
		g->refs[k++] = g->refs[i];
	}
	g->n_refs = k;
	return 0;
}

static struct gc_ref *ref_find(struct gc *g, const char *id)
{
	struct gc_ref key;

	snprintf(key.id, sizeof(key.id), "%s", id);
	return g->n_refs ? bsearch(&key, g->refs, g->n_refs, sizeof(*g->refs), ref_cmp) : NULL;
}

/* Since when the previous passes found `id` deletable (0: they did not). */
static int64_t doomed_since(struct debuginfo *s, const char *id)
{
	struct debuginfo__doom key, *d;

	snprintf(key.id, sizeof(key.id), "%s", id);
	d = s->gc_n_doom ? bsearch(&key, s->gc_doom, s->gc_n_doom, sizeof(*s->gc_doom), doom_cmp)
			 : NULL;
	return d ? d->since : 0;
}

/* Decides on the build ID whose keys were gathered. */
static int finish_group(struct gc *g)
{
	struct gc_ref *ref;
	int64_t last, since;
	int rc;

	if (!g->cur[0])
		return 0;
	ref = ref_find(g, g->cur);
	if (ref)
		ref->listed = 1;
	if (ref && ref->referenced)
		return 0;
	if (!ref && g->used >= g->cutoff)
		return 0; /* a server's profiles use it */
	if (!ref && g->used < g->cutoff) {
		/* No block referenced it yet: its grace starts now. */
		rc = store_direfs_seen(g->r, g->cur, g->p->now_ns);
		return rc == ERR_TOO_LARGE ? 0 : rc;
	}
	last = ref->last > g->used ? ref->last : g->used;
	if (last >= g->cutoff)
		return 0;
	since = doomed_since(g->s, g->cur);
	if (!since)
		since = g->p->now_ns;
	rc = GROW(g->doom, g->cap_doom, g->n_doom + 1, MAX_IDS, NULL);
	if (rc)
		return rc;
	memcpy(g->doom[g->n_doom].id, g->cur, sizeof(g->cur));
	g->doom[g->n_doom++].since = since;
	if (!g->p->complete || g->keys_full || g->p->now_ns - since < g->p->delay_ns)
		return 0;
	{
		size_t len = g->del.len;

		if (buf_puts(&g->del, g->cur) || buf_putc(&g->del, '\0') ||
		    buf_append(&g->del, g->keys.data, g->keys.len) || buf_putc(&g->del, '\0'))
			g->del.len = len; /* past the cap: deleted by a later pass */
	}
	return 0;
}

/*
 * The time in the name of a use marker ("<unix seconds>"), at most now (a
 * server's clock ahead of the writer's gains nothing); 0 when it is not one.
 */
static int64_t marker_time(const char *name, int64_t now)
{
	char *end;
	unsigned long long sec;

	if (*name < '0' || *name > '9' || strlen(name) > 12)
		return 0;
	sec = strtoull(name, &end, 10);
	if (*end || !sec)
		return 0;
	return (int64_t)sec * 1000000000LL < now ? (int64_t)sec * 1000000000LL : now;
}

static int on_key(void *arg, const struct objstore_entry *e)
{
	struct gc *g = arg;
	const char *rest = e->key + strlen(PREFIX), *slash = strchr(rest, '/');
	char raw[DEBUGINFO_HEX_MAX], id[DEBUGINFO_HEX_MAX];
	size_t n = slash ? (size_t)(slash - rest) : 0;

	if (strncmp(e->key, PREFIX, strlen(PREFIX)) || !n || n >= sizeof(raw))
		return 0;
	memcpy(raw, rest, n);
	raw[n] = '\0';
	if (debuginfo__canon_id(raw, id, NULL, NULL) || strcmp(raw, id))
		return 0; /* not a key of ours: left alone */
	if (strcmp(id, g->cur)) {
		g->rc = finish_group(g);
		if (g->rc)
			return 1;
		memcpy(g->cur, id, sizeof(id));
		buf_reset(&g->keys);
		g->keys_full = 0;
		g->used = 0;
	}
	if (!strncmp(slash, "/" USED "/", strlen(USED) + 2)) {
		int64_t t = marker_time(slash + strlen(USED) + 2, g->p->now_ns);

		if (t > g->used)
			g->used = t;
		if (t && t < g->cutoff && (buf_puts(&g->stale, e->key) || buf_putc(&g->stale, '\0')))
			g->stale.len = 0; /* past the cap: the next pass */
	}
	if (buf_puts(&g->keys, e->key) || buf_putc(&g->keys, '\0'))
		g->keys_full = 1;
	return 0;
}

/* Deletes the queued groups; a group is forgotten once all its keys are gone. */
static void delete_groups(struct gc *g, uint64_t *ids, uint64_t *objects)
{
	for (size_t at = 0; at < g->del.len;) {
		const char *id = g->del.data + at;
		struct err_msg msg;
		uint64_t n = 0;
		int failed = 0;
		struct gc_ref *ref;

		at += strlen(id) + 1;
		for (; at < g->del.len && g->del.data[at]; at += strlen(g->del.data + at) + 1) {
			err_clear(&msg);
			if (objstore_delete(g->s->os, g->del.data + at, &msg)) {
				if (!failed)
					log_warn("debuginfo: cannot delete %s from the bucket: %s; retried "
						 "at the next pass", g->del.data + at, msg.text);
				failed = 1;
				continue;
			}
			n++;
		}
		at++;
		*objects += n;
		atomic_fetch_add(&g->s->gc_objects, n);
		if (failed) {
			atomic_fetch_add(&g->s->gc_failures, 1);
			continue;
		}
		(*ids)++;
		atomic_fetch_add(&g->s->gc_deleted, 1);
		ref = ref_find(g, id);
		if (ref)
			store_direfs_forget(g->r, ref->at);
		for (size_t i = 0; i < g->n_doom; i++)
			if (!strcmp(g->doom[i].id, id))
				g->doom[i].since = -1; /* dropped below */
		log_info("debuginfo: deleted %s from the bucket (%llu objects): no counted block "
			 "references it", id, (unsigned long long)n);
	}
}

static int gc_pass(void *ctx, struct store_direfs *r, const struct store_direfs_pass *p)
{
	struct debuginfo *s = ctx;
	struct gc g;
	struct err_msg msg;
	uint64_t ids = 0, objects = 0;
	size_t k = 0;
	int rc;

	if (s->retention_ns <= 0 || !s->os)
		return 0; /* debug info is kept forever */
	memset(&g, 0, sizeof(g));
	g.s = s;
	g.r = r;
	g.p = p;
	if (__builtin_sub_overflow(p->now_ns, s->retention_ns, &g.cutoff))
		return 0;
	buf_init(&g.keys, GROUP_KEYS_BYTES);
	buf_init(&g.del, DELETE_KEYS_BYTES);
	buf_init(&g.stale, DELETE_KEYS_BYTES);
	pthread_mutex_lock(&s->gc_mu);
	rc = load_refs(&g);
	err_clear(&msg);
	if (!rc)
		rc = objstore_list(s->os, PREFIX, on_key, &g, &msg);
	if (rc == 1)
		rc = g.rc;
	else if (rc)
		log_warn("debuginfo: cannot list the bucket's debug info: %s", msg.text);
	if (!rc)
		rc = finish_group(&g);
	if (!rc) {
		delete_groups(&g, &ids, &objects);
		for (size_t at = 0; at < g.stale.len; at += strlen(g.stale.data + at) + 1) {
			err_clear(&msg);
			if (!objstore_delete(s->os, g.stale.data + at, &msg))
				atomic_fetch_add(&s->gc_objects, 1);
		}
		/* Entries with nothing in the bucket and past the retention are
		 * forgotten: they would only keep nothing. */
		for (size_t i = 0; i < g.n_refs; i++)
			if (!g.refs[i].listed && !g.refs[i].referenced && g.refs[i].last < g.cutoff)
				store_direfs_forget(r, g.refs[i].at);
		for (size_t i = 0; i < g.n_doom; i++)
			if (g.doom[i].since >= 0)
				g.doom[k++] = g.doom[i];
		g.n_doom = k;
		if (g.n_doom)
			qsort(g.doom, g.n_doom, sizeof(*g.doom), doom_cmp);
		free(s->gc_doom);
		s->gc_doom = g.doom;
		s->gc_n_doom = g.n_doom;
		g.doom = NULL;
		atomic_store(&s->gc_waiting, g.n_doom);
	}
	pthread_mutex_unlock(&s->gc_mu);
	if (rc)
		atomic_fetch_add(&s->gc_failures, 1);
	free(g.doom);
	free(g.refs);
	buf_release(&g.keys);
	buf_release(&g.del);
	buf_release(&g.stale);
	return rc;
}

/* ---- use markers: what the index cannot see yet ---- */

int debuginfo__gc_mark_used(struct debuginfo *s, const char *id, int64_t last_ns, int64_t now_ns,
			    int64_t retention_ns, unsigned *budget)
{
	uint64_t h = hash_bytes(id, strlen(id), 0);
	struct debuginfo__bucket_miss *e;
	char key[OBJSTORE_KEY_MAX + 1];
	struct err_msg msg;
	int rc = 0;

	if (!s->os || retention_ns <= 0 || last_ns < now_ns - retention_ns || !*budget)
		return 0;
	pthread_mutex_lock(&s->gc_mark_mu);
	if (!s->gc_marks)
		s->gc_marks = calloc(DEBUGINFO__BUCKET_MISS_SLOTS, sizeof(*s->gc_marks));
	if (!s->gc_marks) {
		pthread_mutex_unlock(&s->gc_mark_mu);
		return ERR_NOMEM;
	}
	e = &s->gc_marks[h % DEBUGINFO__BUCKET_MISS_SLOTS];
	/* The marker names the use itself, not now, so it keeps the build ID
	 * no longer than a block would; a new one once the use moved a
	 * quarter of the retention past the last. */
	if (last_ns > now_ns)
		last_ns = now_ns;
	if (e->hash == h && last_ns - e->at < retention_ns / 4)
		goto out;
	snprintf(key, sizeof(key), PREFIX "%s/" USED "/%lld", id, (long long)(last_ns / 1000000000LL));
	err_clear(&msg);
	(*budget)--;
	rc = objstore_put(s->os, key, "1", 1, 0, &msg);
	if (rc) {
		log_warn("debuginfo: cannot mark %s as used in the bucket: %s; retried at the next "
			 "pass", id, msg.text);
		goto out;
	}
	e->hash = h;
	e->at = last_ns;
	atomic_fetch_add(&s->gc_use_marks, 1);
out:
	pthread_mutex_unlock(&s->gc_mark_mu);
	return rc;
}

void debuginfo__gc_init(struct debuginfo *s)
{
	pthread_mutex_init(&s->gc_mu, NULL);
	pthread_mutex_init(&s->gc_mark_mu, NULL);
}

void debuginfo__gc_start(struct debuginfo *s)
{
	struct store_direfs_hook h = { gc_pass, s };

	if (!s->os || s->retention_ns <= 0)
		return; /* nothing leaves the bucket: no table is kept */
	store_direfs_hook_set(s->st, &h);
	s->gc_hooked = 1;
}

void debuginfo__gc_release(struct debuginfo *s)
{
	if (s->gc_hooked)
		store_direfs_hook_set(s->st, NULL); /* waits for a pass under way */
	s->gc_hooked = 0;
	pthread_mutex_destroy(&s->gc_mu);
	pthread_mutex_destroy(&s->gc_mark_mu);
	free(s->gc_marks);
	s->gc_marks = NULL;
	free(s->gc_doom);
	s->gc_doom = NULL;
	s->gc_n_doom = 0;
}
