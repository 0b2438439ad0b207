/*
 * bucket.c - debug info shared through the object store of a scale-out
 * deployment (docs/object-storage.md, "Debug info in the bucket"): what
 * one server stores (uploads, debuginfod fetches, built indexes) is put in
 * the bucket, and a server that lacks a build ID's files or index looks
 * there before debuginfod, or before building the index itself.
 *
 * Keys (objstore key rules; the build ID in canonical lower-case hex):
 *   debuginfo/<id>/<kind>                  a file every tenant may see
 *   debuginfo/<id>/tenant/<tenant>/<kind>  a file of one tenant's own
 *   debuginfo/<id>/index/v<V>-<kinds>-<sha256[0:16] hex>
 *                                          the index built from the files
 *                                          whose kinds (bits, hex) and first
 *                                          file's SHA-256 the key names
 * <kind> is debuginfo, executable or kallsyms.  Every put is create-once.
 *
 * Puts.  An upload is acknowledged once it is stored locally; the bucket
 * gets it from a background thread, so an upload never waits on the
 * bucket.  What is in the bucket is a bit per file kind and one for the
 * index in the build ID's record (debuginfo_int.h), so the queue is the
 * records themselves: a pass scans them and puts what lacks its bit.  A
 * pass runs when a file is stored, and again retry_ns after a pass that
 * failed (the first failure ends it), so nothing stored is lost by a
 * bucket outage or a restart.  A put refused with 412 compares the
 * object with the local file: the same bytes are success, other bytes
 * are the "first upload wins" rule at the fleet's scale - the bucket's
 * copy stays, this server keeps its own, the conflict is logged and
 * counted and not retried.  An index that exists already is success
 * whatever its bytes (two builds of the same files).
 *
 * Lookups.  A build ID without a local file costs one LIST of
 * debuginfo/<id>/ (every kind and owner in one request), then a ranged
 * GET per object found, each checked and installed as an upload of its
 * owner would be (debuginfo__upload_commit).  A miss is remembered in a
 * fixed table of DEBUGINFO__BUCKET_MISS_SLOTS slots for miss_ttl_ns, so a
 * frame that stays hex costs one request per build ID that long, not one
 * per query.  A downloaded index is untrusted bytes: sym_index_open
 * validates every offset and its checksum before it is installed; one
 * that fails is logged, counted and built locally instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/thread.h"
#include "debuginfo_int.h"
#include "objstore/objstore.h"
#include "storage/storage.h"

#define CHUNK (8u << 20)         /* bytes of one ranged GET */
#define PASS_IDS_BYTES (1u << 20) /* build IDs one pass collects (then another pass) */
#define LIST_MAX 64              /* objects of one build ID looked at */
#define TENANT_COPIES 16         /* tenants' own copies of one build ID fetched */

static int file_key(const char *id, enum debuginfo_file_kind kind, const char *owner, char *out,
		    size_t len)
{
	int n = strcmp(owner, "*") == 0
			? snprintf(out, len, "debuginfo/%s/%s", id, debuginfo__kind_name(kind))
			: snprintf(out, len, "debuginfo/%s/tenant/%s/%s", id, owner,
				   debuginfo__kind_name(kind));

	if (n < 0 || (size_t)n >= len)
		return ERR_TOO_LARGE;
	return objstore_check_key(out, NULL);
}

static int index_key(const char *id, const struct debuginfo__meta *m, char *out, size_t len)
{
	int n = snprintf(out, len, "debuginfo/%s/index/v%u-%x-", id, SYM_INDEX_FORMAT_VERSION,
			 m->kinds);

	if (!m->has_sha256 || n < 0 || (size_t)n + 33 > len)
		return ERR_NOT_FOUND;
	for (int i = 0; i < 16; i++)
		n += snprintf(out + n, len - (size_t)n, "%02x", m->sha256[i]);
	return 0;
}

/* ---- reading an object in chunks ---- */

typedef int (*chunk_fn)(void *ctx, const void *p, size_t n);

/*
 * Reads the `size` bytes of `key` in ranged GETs of CHUNK, handing each to
 * fn (non-zero stops and is returned).  ERR_CORRUPT when the object is not
 * `size` bytes long.
 */
static int object_each(struct debuginfo *s, const char *key, uint64_t size, chunk_fn fn, void *ctx,
		       struct err_msg *msg)
{
	struct buf b;
	uint64_t off = 0, total = 0;
	int rc = 0;

	buf_init(&b, CHUNK);
	while (off < size && !rc) {
		uint64_t want = size - off < CHUNK ? size - off : CHUNK;

		b.len = 0;
		rc = objstore_get_range(s->os, key, off, want, &b, &total, msg);
		if (rc)
			break;
		atomic_fetch_add(&s->bucket_bytes_in, b.len);
		if (b.len != want || total != size) {
			rc = err_set(msg, ERR_CORRUPT, "%s: %llu bytes, %llu expected", key,
				     (unsigned long long)total, (unsigned long long)size);
			break;
		}
		rc = fn(ctx, b.data, b.len);
		off += b.len;
	}
	buf_release(&b);
	return rc;
}

struct compare_ctx {
	int fd;
	int differ;
	struct buf local;
};

static int compare_chunk(void *ctx, const void *p, size_t n)
{
	struct compare_ctx *c = ctx;

	c->local.len = 0;
	if (buf_reserve(&c->local, n))
		return ERR_NOMEM;
	for (size_t got = 0; got < n;) {
		ssize_t k = read(c->fd, c->local.data + got, n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			c->differ = 1;
			return 1;
		}
		got += (size_t)k;
	}
	if (memcmp(c->local.data, p, n)) {
		c->differ = 1;
		return 1;
	}
	return 0;
}

/* *same = 1 when object `key` holds the bytes of the file at `path` (size bytes). */
static int same_as_object(struct debuginfo *s, const char *key, const char *path, uint64_t size,
			  int *same, struct err_msg *msg)
{
	struct objstore_stat st;
	struct compare_ctx c = { -1, 0, { 0 } };
	int rc = objstore_head(s->os, key, &st, msg);

	if (rc)
		return rc;
	*same = 0;
	if (st.size != size)
		return 0;
	c.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c.fd < 0)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	buf_init(&c.local, CHUNK);
	rc = object_each(s, key, size, compare_chunk, &c, msg);
	close(c.fd);
	buf_release(&c.local);
	if (rc < 0)
		return rc;
	*same = !c.differ;
	return 0;
}

/* ---- puts ---- */

enum put_result { PUT_NEW, PUT_FOUND, PUT_CONFLICT };

/* Puts the file at `path` as `key`, create-once; a 412 compares (see the top). */
static int put_once(struct debuginfo *s, const char *key, const char *path, uint64_t size,
		    int is_index, enum put_result *res, struct err_msg *msg)
{
	int same = 0, rc = objstore_put_file(s->os, key, path, OBJSTORE_CREATE_ONCE, msg);

	if (!rc) {
		atomic_fetch_add(&s->bucket_bytes_out, size);
		*res = PUT_NEW;
		return 0;
	}
	if (rc != ERR_CONFLICT)
		return rc;
	if (is_index) {
		*res = PUT_FOUND;
		return 0;
	}
	rc = same_as_object(s, key, path, size, &same, msg);
	if (rc)
		return rc;
	*res = same ? PUT_FOUND : PUT_CONFLICT;
	return 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * Sets `bit` in the record of `id` when the file at `path` is still the one
 * put (`before`): a file replaced meanwhile cleared the bit and is put by
 * the next pass.
 */
static void mark(struct debuginfo *s, const char *id, unsigned bit, const char *path,
		 const struct stat *before)
{
	struct debuginfo__meta m;
	struct stat now;

	pthread_mutex_lock(&s->upload_mu);
	if (!stat(path, &now) && same_file(before, &now) && !debuginfo__meta_get(s, id, &m) &&
	    !(m.bucket & bit)) {
		m.bucket |= bit;
		if (debuginfo__meta_put(s, id, &m))
			log_warn("debuginfo: cannot record that %s is in the bucket", id);
	}
	pthread_mutex_unlock(&s->upload_mu);
}

/*
 * put_once() with its outcome counted and, for a failure or a conflict,
 * logged; 0 or the bucket's error.
 */
static int put_counted(struct debuginfo *s, const char *key, const char *path, uint64_t size,
		       int is_index)
{
	struct err_msg msg;
	enum put_result r;
	int rc;

	err_clear(&msg);
	rc = put_once(s, key, path, size, is_index, &r, &msg);
	if (rc) {
		atomic_fetch_add(&s->bucket_put_failures, 1);
		log_warn("debuginfo: cannot put %s in the bucket: %s; retried in %lld s", key,
			 msg.text, (long long)(s->bucket_retry_ns / 1000000000LL));
		return rc;
	}
	if (r == PUT_NEW)
		atomic_fetch_add(is_index ? &s->bucket_index_puts : &s->bucket_puts, 1);
	else if (r == PUT_FOUND)
		atomic_fetch_add(&s->bucket_puts_found, 1);
	else {
		atomic_fetch_add(&s->bucket_put_conflicts, 1);
		log_warn("debuginfo: the bucket's %s holds other bytes than this server's (the "
			 "first upload wins): this server keeps its own, other servers get the "
			 "bucket's", key);
	}
	return 0;
}

/* Puts one file of `id` under the key of each owner; 0 or the bucket's error. */
static int put_file(struct debuginfo *s, const char *id, const struct debuginfo__meta *m,
		    enum debuginfo_file_kind kind)
{
	char path[DEBUGINFO__PATH_MAX], key[OBJSTORE_KEY_MAX + 1], owner[DEBUGINFO__OWNERS_MAX];
	struct stat st;
	int rc;

	if (debuginfo__path(s, id, debuginfo__kind_name(kind), path, sizeof(path)) ||
	    stat(path, &st))
		return 0; /* deleted meanwhile (retention): nothing to put */
	for (const char *p = m->owners; *p;) {
		size_t k = strcspn(p, ",");

		snprintf(owner, sizeof(owner), "%.*s", (int)k, p);
		p += k + (p[k] == ',');
		if (file_key(id, kind, owner, key, sizeof(key))) {
			log_warn("debuginfo: %s of %s: tenant \"%s\" cannot name a bucket key; kept "
				 "on this server only", debuginfo__kind_name(kind), id, owner);
			continue;
		}
		rc = put_counted(s, key, path, (uint64_t)st.st_size, 0);
		if (rc)
			return rc;
	}
	mark(s, id, 1u << kind, path, &st);
	return 0;
}

static int put_index(struct debuginfo *s, const char *id, const struct debuginfo__meta *m)
{
	char path[DEBUGINFO__PATH_MAX], key[OBJSTORE_KEY_MAX + 1];
	struct stat st;
	int rc;

	if (index_key(id, m, key, sizeof(key)) ||
	    debuginfo__path(s, id, "index", path, sizeof(path)) || stat(path, &st))
		return 0;
	rc = put_counted(s, key, path, (uint64_t)st.st_size, 1);
	if (rc)
		return rc;
	mark(s, id, DEBUGINFO__BUCKET_INDEX, path, &st);
	return 0;
}

/* What of record `m` is still to be put: file kinds' bits, and the index's. */
static unsigned unput(const struct debuginfo__meta *m)
{
	unsigned t = m->kinds & 7u & ~m->bucket;

	if (m->status == DEBUGINFO_STATUS_OK && m->has_sha256 && !(m->bucket & DEBUGINFO__BUCKET_INDEX))
		t |= DEBUGINFO__BUCKET_INDEX;
	return t;
}

struct collect {
	struct debuginfo *s;
	struct buf ids; /* NUL-terminated build IDs */
	int more;       /* ids is full: another pass follows */
};

static int collect_unput(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct collect *c = ctx;
	struct debuginfo__meta m;
	char id[DEBUGINFO_HEX_MAX], path[DEBUGINFO__PATH_MAX];
	unsigned t;

	if (klen >= DEBUGINFO_HEX_MAX || debuginfo__meta_decode(val, vlen, &m) || !m.kinds ||
	    !(t = unput(&m)))
		return 0;
	memcpy(id, key, klen);
	id[klen] = '\0';
	/* An index not built yet is put by the pass its build wakes. */
	if (t == DEBUGINFO__BUCKET_INDEX &&
	    (debuginfo__path(c->s, id, "index", path, sizeof(path)) ||
	     !debuginfo__file_exists(path)))
		return 0;
	if (buf_append(&c->ids, key, klen) || buf_putc(&c->ids, '\0')) {
		c->more = 1;
		return 1;
	}
	return 0;
}

/* Puts what build ID `id` still lacks in the bucket; 0 or the bucket's error. */
static int put_one(struct debuginfo *s, const char *id)
{
	struct debuginfo__meta m;
	unsigned t;
	int rc = 0;

	if (debuginfo__meta_get(s, id, &m))
		return 0;
	t = unput(&m);
	for (int k = 0; k < 3 && !rc; k++)
		if (t & (1u << k))
			rc = put_file(s, id, &m, (enum debuginfo_file_kind)k);
	if (!rc && (t & DEBUGINFO__BUCKET_INDEX))
		rc = put_index(s, id, &m);
	return rc;
}

int debuginfo__bucket_sync(struct debuginfo *s, uint64_t *pending)
{
	struct collect c = { s, { 0 }, 1 };
	uint64_t left = 0;
	int rc = 0;

	if (!s->os)
		return 0;
	pthread_mutex_lock(&s->bucket_pass_mu);
	/* Rounds while the list of build IDs fills up; bounded, as records
	 * whose file vanished stay listed. */
	for (int round = 0; c.more && !rc && round < 64; round++) {
		buf_init(&c.ids, PASS_IDS_BYTES);
		c.more = 0;
		rc = store_aux_scan(s->st, STORE_AUX_DEBUGINFO, "", 0, collect_unput, &c, NULL);
		if (rc == 1)
			rc = 0;
		for (size_t at = 0; at < c.ids.len; at += strlen(c.ids.data + at) + 1) {
			/* After a failure, what the pass did not reach is still to be put. */
			if (!rc)
				rc = put_one(s, c.ids.data + at);
			left += rc != 0;
		}
		buf_release(&c.ids);
	}
	atomic_store(&s->bucket_pending, left);
	pthread_mutex_unlock(&s->bucket_pass_mu);
	if (pending)
		*pending = left;
	return rc;
}

/* ---- the thread ---- */

static void *bucket_thread(void *arg)
{
	struct debuginfo *s = arg;
	int64_t next = 0; /* monotonic: a pass is due (0: at once) */

	pthread_mutex_lock(&s->bucket_mu);
	while (!s->bucket_stop) {
		int64_t now = clock_mono_ns();

		if (!s->bucket_wake && next && now < next) {
			thread_wait_until(&s->bucket_cv, &s->bucket_mu, next);
			continue;
		}
		s->bucket_wake = 0;
		pthread_mutex_unlock(&s->bucket_mu);
		/* A failed pass is retried; a clean one waits for the next file
		 * (and checks again hourly, for what a crash left unmarked). */
		next = clock_mono_ns() +
		       (debuginfo__bucket_sync(s, NULL) ? s->bucket_retry_ns : 3600LL * 1000000000LL);
		pthread_mutex_lock(&s->bucket_mu);
	}
	pthread_mutex_unlock(&s->bucket_mu);
	return NULL;
}

int debuginfo__bucket_init(struct debuginfo *s, const struct debuginfo_options *opt)
{
	s->os = opt->objstore;
	s->bucket_miss_ttl_ns = opt->bucket_miss_ttl_ns > 0 ? opt->bucket_miss_ttl_ns
							   : 60LL * 1000000000LL;
	s->bucket_retry_ns = opt->bucket_retry_ns > 0 ? opt->bucket_retry_ns : 30LL * 1000000000LL;
	pthread_mutex_init(&s->bucket_mu, NULL);
	pthread_mutex_init(&s->bucket_pass_mu, NULL);
	pthread_mutex_init(&s->miss_mu, NULL);
	thread_cond_init_mono(&s->bucket_cv);
	if (!s->os)
		return 0;
	s->misses = calloc(DEBUGINFO__BUCKET_MISS_SLOTS, sizeof(*s->misses));
	return s->misses ? 0 : ERR_NOMEM;
}

int debuginfo__bucket_start(struct debuginfo *s)
{
	if (!s->os)
		return 0;
	if (pthread_create(&s->bucket_thread, NULL, bucket_thread, s))
		return ERR_UNAVAILABLE;
	s->bucket_started = 1;
	return 0;
}

void debuginfo__bucket_stop(struct debuginfo *s)
{
	if (!s->bucket_started)
		return;
	thread_stop(s->bucket_thread, &s->bucket_mu, &s->bucket_cv, &s->bucket_stop);
	s->bucket_started = 0;
}

void debuginfo__bucket_release(struct debuginfo *s)
{
	pthread_cond_destroy(&s->bucket_cv);
	pthread_mutex_destroy(&s->bucket_mu);
	pthread_mutex_destroy(&s->bucket_pass_mu);
	pthread_mutex_destroy(&s->miss_mu);
	free(s->misses);
	s->misses = NULL;
}

void debuginfo__bucket_wake(struct debuginfo *s)
{
	if (!s->bucket_started)
		return;
	pthread_mutex_lock(&s->bucket_mu);
	s->bucket_wake = 1;
	pthread_cond_signal(&s->bucket_cv);
	pthread_mutex_unlock(&s->bucket_mu);
}

/* ---- lookups ---- */

int debuginfo__bucket_due(struct debuginfo *s, const char *id)
{
	uint64_t h = hash_bytes(id, strlen(id), 0);
	struct debuginfo__bucket_miss *e;
	int due;

	if (!s->os)
		return 0;
	e = &s->misses[h % DEBUGINFO__BUCKET_MISS_SLOTS];
	pthread_mutex_lock(&s->miss_mu);
	due = e->hash != h || clock_mono_ns() - e->at >= s->bucket_miss_ttl_ns;
	pthread_mutex_unlock(&s->miss_mu);
	return due;
}

static void note_miss(struct debuginfo *s, const char *id)
{
	uint64_t h = hash_bytes(id, strlen(id), 0);
	struct debuginfo__bucket_miss *e = &s->misses[h % DEBUGINFO__BUCKET_MISS_SLOTS];

	pthread_mutex_lock(&s->miss_mu);
	e->hash = h;
	e->at = clock_mono_ns();
	pthread_mutex_unlock(&s->miss_mu);
}

/* One object of a build ID the listing found. */
struct found {
	enum debuginfo_file_kind kind;
	char owner[DEBUGINFO__UNSYM_TENANT_MAX]; /* "*": every tenant's */
	char key[OBJSTORE_KEY_MAX + 1];
	uint64_t size;
};

struct listing {
	const char *prefix;
	size_t plen;
	struct found v[LIST_MAX];
	size_t n, seen, tenant_copies;
};

static int kind_of(const char *name, enum debuginfo_file_kind *kind)
{
	for (int k = 0; k < 3; k++)
		if (strcmp(name, debuginfo__kind_name((enum debuginfo_file_kind)k)) == 0) {
			*kind = (enum debuginfo_file_kind)k;
			return 0;
		}
	return ERR_NOT_FOUND;
}

static int on_object(void *arg, const struct objstore_entry *e)
{
	struct listing *l = arg;
	const char *rest = e->key + l->plen, *slash;
	struct found *f = &l->v[l->n];

	if (++l->seen > LIST_MAX || l->n == LIST_MAX)
		return 1;
	if (strncmp(e->key, l->prefix, l->plen) != 0 || strlen(e->key) >= sizeof(f->key))
		return 0;
	if (!kind_of(rest, &f->kind)) {
		snprintf(f->owner, sizeof(f->owner), "*");
	} else if (strncmp(rest, "tenant/", 7) == 0 && (slash = strchr(rest + 7, '/')) &&
		   slash > rest + 7 && (size_t)(slash - rest - 7) < sizeof(f->owner) &&
		   !kind_of(slash + 1, &f->kind) && l->tenant_copies < TENANT_COPIES) {
		snprintf(f->owner, sizeof(f->owner), "%.*s", (int)(slash - rest - 7), rest + 7);
		l->tenant_copies++;
	} else {
		return 0; /* an index, or not ours */
	}
	snprintf(f->key, sizeof(f->key), "%s", e->key);
	f->size = e->size;
	l->n++;
	return 0;
}

struct upload_sink {
	struct debuginfo_upload *u;
	struct err_msg *msg;
};

static int write_chunk(void *ctx, const void *p, size_t n)
{
	struct upload_sink *k = ctx;

	return debuginfo_upload_write(k->u, p, n, k->msg);
}

/* Downloads one object and installs it as its owner's upload would be. */
static void download(struct debuginfo *s, const char *id, const struct found *f)
{
	const struct debuginfo_upload_by by = {
		strcmp(f->owner, "*") ? f->owner : NULL, 0, "bucket", "the bucket"
	};
	struct debuginfo_upload_result res;
	struct debuginfo_upload *u = NULL;
	struct upload_sink sink;
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	if (f->size > s->max_upload)
		rc = err_set(&msg, ERR_TOO_LARGE, "%llu bytes, past the limit of %llu",
			     (unsigned long long)f->size, (unsigned long long)s->max_upload);
	else
		rc = debuginfo_upload_begin(s, &u, &msg);
	if (!rc) {
		sink.u = u;
		sink.msg = &msg;
		rc = object_each(s, f->key, f->size, write_chunk, &sink, &msg);
	}
	if (!rc) {
		rc = debuginfo__upload_commit(u, id, f->kind, &by, 1, &res, &msg);
		u = NULL;
	}
	debuginfo_upload_abort(u);
	if (rc) {
		atomic_fetch_add(&s->bucket_download_failures, 1);
		log_warn("debuginfo: %s from the bucket not stored: %s", f->key, msg.text);
		return;
	}
	/* The commit logged it ("from token bucket"). */
	atomic_fetch_add(&s->bucket_downloads, 1);
}

int debuginfo__bucket_fetch(struct debuginfo *s, const char *id)
{
	struct listing *l;
	char prefix[DEBUGINFO_HEX_MAX + 16];
	struct err_msg msg;
	int rc;

	if (!s->os)
		return ERR_NOT_FOUND;
	l = calloc(1, sizeof(*l));
	if (!l)
		return ERR_NOMEM;
	snprintf(prefix, sizeof(prefix), "debuginfo/%s/", id);
	l->prefix = prefix;
	l->plen = strlen(prefix);
	err_clear(&msg);
	rc = objstore_list(s->os, prefix, on_object, l, &msg);
	if (rc < 0) {
		atomic_fetch_add(&s->bucket_lookup_failures, 1);
		log_warn("debuginfo: cannot look %s up in the bucket: %s; asked again in %lld s", id,
			 msg.text, (long long)(s->bucket_miss_ttl_ns / 1000000000LL));
		note_miss(s, id);
		free(l);
		return rc;
	}
	if (!l->n) {
		atomic_fetch_add(&s->bucket_misses, 1);
		note_miss(s, id);
		free(l);
		return ERR_NOT_FOUND;
	}
	atomic_fetch_add(&s->bucket_hits, 1);
	/* Every tenant's copies first, in kind order: debug file, executable, map. */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < 3; k++)
			for (size_t i = 0; i < l->n; i++)
				if ((int)l->v[i].kind == k && (strcmp(l->v[i].owner, "*") == 0) == !pass)
					download(s, id, &l->v[i]);
	free(l);
	if (debuginfo__has_file(s, id))
		return 0;
	note_miss(s, id);
	return ERR_NOT_FOUND;
}

int debuginfo__bucket_get_index(struct debuginfo *s, const char *id, const uint8_t *bid,
				size_t blen, const char *dst)
{
	char key[OBJSTORE_KEY_MAX + 1];
	struct debuginfo_upload *u = NULL;
	struct debuginfo__meta m;
	struct objstore_stat st;
	struct upload_sink sink;
	struct sym_index *idx;
	struct err_msg msg;
	struct stat fst;
	int rc;

	if (!s->os || debuginfo__meta_get(s, id, &m) || index_key(id, &m, key, sizeof(key)))
		return ERR_NOT_FOUND;
	err_clear(&msg);
	rc = objstore_head(s->os, key, &st, &msg);
	if (rc == ERR_NOT_FOUND)
		return rc;
	/* Into a temporary file of the uploads, under their cap. */
	if (!rc && st.size > s->max_upload)
		rc = err_set(&msg, ERR_TOO_LARGE, "%llu bytes, past the limit of %llu",
			     (unsigned long long)st.size, (unsigned long long)s->max_upload);
	if (!rc)
		rc = debuginfo_upload_begin(s, &u, &msg);
	if (!rc) {
		sink.u = u;
		sink.msg = &msg;
		rc = object_each(s, key, st.size, write_chunk, &sink, &msg);
	}
	if (!rc && fsync(u->fd))
		rc = err_set(&msg, ERR_IO, "%s", strerror(errno));
	if (rc) {
		debuginfo_upload_abort(u);
		atomic_fetch_add(&s->bucket_download_failures, 1);
		log_warn("debuginfo: cannot read %s from the bucket: %s; building it here", key,
			 msg.text);
		return rc;
	}
	/* Untrusted bytes: every offset, count and the checksum are checked. */
	rc = sym_index_open(u->path, bid, blen, &idx, &msg);
	if (rc) {
		debuginfo_upload_abort(u);
		atomic_fetch_add(&s->bucket_index_invalid, 1);
		log_warn("debuginfo: the bucket's %s is not a valid index (%s); building it here",
			 key, msg.text);
		return ERR_CORRUPT;
	}
	sym_index_close(idx);
	if (rename(u->path, dst)) {
		log_error("debuginfo: cannot rename %s to %s: %s", u->path, dst, strerror(errno));
		debuginfo_upload_abort(u);
		return ERR_IO;
	}
	debuginfo_upload_abort(u); /* closes it; the file is the index now */
	debuginfo__fsync_dir(dst);
	atomic_fetch_add(&s->bucket_index_downloads, 1);
	if (!stat(dst, &fst))
		mark(s, id, DEBUGINFO__BUCKET_INDEX, dst, &fst);
	log_info("debuginfo: the index of %s from the bucket (%llu bytes)", id,
		 (unsigned long long)st.size);
	return 0;
}
