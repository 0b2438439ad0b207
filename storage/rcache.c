/*
 * rcache.c - reading blocks that are in the bucket but whose file is
 * missing from the data directory (a lost disk, a new machine), a piece
 * at a time, through a bounded disk cache.
 *
 * What is fetched.  A query needs of a block its index section, the
 * symbol section of each service it touches and the pages of the series
 * it selected that overlap its range (storage_int.h section 9): each is a
 * piece, a byte range of the object with a CRC from the footer or the
 * index.  A reader asks for the pieces of one block at once
 * (store__bread_fetch); those not cached are sorted, runs of pieces less
 * than RCACHE_GAP apart are merged into one ranged GET (a gap costs fewer
 * bytes than a request), and the GETs go out together on one curl multi
 * handle (objstore_get_ranges).  Every piece is checked against its CRC
 * before it enters the cache, as a local read checks it.
 *
 * The cache.  Each GET's bytes are one entry: a file
 * <dir>/s3cache/<tenant id>-<block id>-<offset>-<length>, listed on its
 * block (for lookups by containment) and on one LRU list, all of them
 * under `cap` bytes.  A handle (struct bread) pins the entries it read
 * until it is released: a pinned entry is never evicted, so a reader that
 * prefetched its pages and symbols reads them again later (its pages once
 * to check them, once to pass them on; its symbols when the query's
 * symbolization asks for them after the decoded copy left the memory
 * cache) without asking the bucket, which may be down by then.  Pieces
 * that cannot fit beside the pinned ones fail this read (ERR_TOO_LARGE);
 * the reader then skips the block with a warning.  The directory is
 * emptied at open: the cache lives as long as the process.
 *
 * Whole objects.  store__rcache_fd downloads a whole block as one entry,
 * in ranged GETs of RCACHE_CHUNK bytes: what compaction and verify read
 * (every section and every page), for which one sequential download is
 * the right call (fewer requests, nothing read twice), and which then
 * serves any piece of the block by containment.  Queries never ask for a
 * whole block.
 *
 * A failed download is an error of that read only: nothing is marked
 * bad, the next query asks the bucket again; the objstore's retries and
 * stall timeout bound how long a read waits.
 */
#include "storage_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/grow.h"
#include "base/log.h"
#include "objstore/objstore.h"

#define RCACHE_DIR "s3cache"
#define RCACHE_DEFAULT_CAP (1ull << 30)
#define RCACHE_CHUNK (8u << 20)     /* a whole download's GETs */
#define RCACHE_GAP (16u << 10)      /* pieces closer than this share a GET */
#define RCACHE_RUN_MAX (8u << 20)   /* a merged GET grows no longer than this */
#define RCACHE_BATCH_BYTES (64u << 20) /* bytes of one objstore_get_ranges call */
#define RCACHE_BATCH_RANGES 256u
#define RCACHE_MAX_PINS ((size_t)1 << 24)
#define RCACHE_MAX_PIECES ((size_t)1 << 28)

struct rcache_ent {
	struct dlist_node lru;
	struct rcache_ent *next; /* on its block's list, block.rext */
	struct block *b;
	uint64_t off, len;       /* the bytes of the object it holds */
	char *path;
	int pins;                /* handles holding it; never evicted while > 0 */
};

static const char *const kind_names[RKIND_N] = { "footer", "index", "symbols", "pages",
						  "whole" };

const char *store__rkind_name(int kind)
{
	return kind >= 0 && kind < RKIND_N ? kind_names[kind] : "?";
}

int store__rcache_init(struct store *st, struct rcache *c, uint64_t cap, struct err_msg *msg)
{
	DIR *d;
	struct dirent *de;

	memset(c, 0, sizeof(*c));
	if (asprintf(&c->dir, "%s/%s", st->dir, RCACHE_DIR) < 0) {
		c->dir = NULL;
		return ERR_NOMEM;
	}
	if (mkdir(c->dir, 0755) != 0 && errno != EEXIST) {
		int rc = err_set(msg, ERR_IO, "s3 cache: mkdir %s: %s", c->dir, strerror(errno));
		free(c->dir);
		c->dir = NULL;
		return rc;
	}
	d = opendir(c->dir);
	if (!d) {
		int rc = err_set(msg, ERR_IO, "s3 cache: open %s: %s", c->dir, strerror(errno));
		free(c->dir);
		c->dir = NULL;
		return rc;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) != 0)
			log_warn("s3 cache: cannot delete %s/%s: %s", c->dir, de->d_name,
				 strerror(errno));
	}
	closedir(d);
	pthread_mutex_init(&c->mu, NULL);
	c->os = st->objstore;
	c->prefix_len = strlen(st->dir) + 1;
	c->cap = cap ? cap : RCACHE_DEFAULT_CAP;
	c->ready = 1;
	return 0;
}

static void ent_free(struct rcache_ent *e)
{
	free(e->path);
	free(e);
}

/* Takes e off its block's list and the LRU, deletes its file (c->mu held). */
static void ent_drop(struct rcache *c, struct rcache_ent *e)
{
	struct rcache_ent **pp = &e->b->rext;

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	dlist_unlink(&c->lru, &e->lru);
	c->used -= e->len;
	if (unlink(e->path) != 0 && errno != ENOENT)
		log_warn("s3 cache: cannot delete %s: %s", e->path, strerror(errno));
	ent_free(e);
}

void store__rcache_release(struct rcache *c)
{
	if (!c->ready)
		return;
	while (c->lru.tail)
		ent_drop(c, dlist_entry(c->lru.tail, struct rcache_ent, lru));
	pthread_mutex_destroy(&c->mu);
	free(c->dir);
	memset(c, 0, sizeof(*c));
}

void store__rcache_forget(struct rcache *c, struct block *b)
{
	if (!c || !c->ready)
		return;
	pthread_mutex_lock(&c->mu);
	while (b->rext)
		ent_drop(c, b->rext);
	pthread_mutex_unlock(&c->mu);
}

void store__rcache_stats(struct rcache *c, struct store_bucket_reads *out)
{
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < RKIND_N; k++)
		out->kind[k].name = kind_names[k];
	if (!c->ready)
		return;
	pthread_mutex_lock(&c->mu);
	for (int k = 0; k < RKIND_N; k++) {
		out->kind[k].gets = c->gets[k];
		out->kind[k].bytes = c->got[k];
		out->kind[k].needed_bytes = c->need[k];
	}
	out->hits = c->hits;
	out->misses = c->misses;
	out->evictions = c->evictions;
	out->failures = c->failures;
	out->cached_bytes = c->used;
	out->cap_bytes = c->cap;
	pthread_mutex_unlock(&c->mu);
}

void store__rcache_count(struct rcache *c, int kind, uint64_t gets, uint64_t bytes)
{
	if (!c->ready)
		return; /* a read-only store has no cache of the bucket to count into */
	pthread_mutex_lock(&c->mu);
	c->gets[kind] += gets;
	c->got[kind] += bytes;
	c->need[kind] += bytes;
	pthread_mutex_unlock(&c->mu);
}

/* The entry of b holding [off, off + len), or NULL (c->mu held). */
static struct rcache_ent *find(struct block *b, uint64_t off, uint64_t len)
{
	for (struct rcache_ent *e = b->rext; e; e = e->next)
		if (e->off <= off && off + len <= e->off + e->len)
			return e;
	return NULL;
}

/* The entry h pinned that holds [off, off + len), or NULL. */
static struct rcache_ent *find_pinned(const struct bread *h, uint64_t off, uint64_t len)
{
	for (size_t i = h->n_pin; i-- > 0;) {
		struct rcache_ent *e = h->pin[i];
		if (e->off <= off && off + len <= e->off + e->len)
			return e;
	}
	return NULL;
}

/* Pins e for h (c->mu held). */
static int pin(struct bread *h, struct rcache_ent *e)
{
	int rc = GROW(h->pin, h->cap_pin, h->n_pin + 1, RCACHE_MAX_PINS, NULL);

	if (rc)
		return rc;
	h->pin[h->n_pin++] = e;
	e->pins++;
	return 0;
}

/* Unlinks unpinned entries, oldest first, until `need` more bytes fit (c->mu held). */
static int make_room(struct rcache *c, uint64_t need)
{
	struct dlist_node *n = c->lru.tail;

	while (n && c->used + need > c->cap) {
		struct rcache_ent *e = dlist_entry(n, struct rcache_ent, lru);
		n = n->prev;
		if (e->pins)
			continue;
		ent_drop(c, e);
		c->evictions++;
	}
	return c->used + need <= c->cap ? 0 : ERR_TOO_LARGE;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ERR_IO;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int new_tmp(struct rcache *c, struct block *b, char **tmp, int *fd, struct err_msg *msg)
{
	static _Atomic unsigned long seq;

	if (asprintf(tmp, "%s/.tmp.%u-%s.%lu", c->dir, b->t->id, b->id_hex,
		     (unsigned long)atomic_fetch_add(&seq, 1)) < 0) {
		*tmp = NULL;
		return ERR_NOMEM;
	}
	*fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (*fd < 0) {
		int rc = err_set(msg, ERR_IO, "block %s: s3 cache: create %s: %s", b->id_hex, *tmp,
				 strerror(errno));
		free(*tmp);
		*tmp = NULL;
		return rc;
	}
	return 0;
}

/*
 * Makes the complete file `tmp` the entry of [off, off + len) of b, pinned
 * by h: room is made first; another handle's entry holding the same bytes,
 * added meanwhile, is taken instead.  Consumes tmp.
 */
static int add_entry(struct rcache *c, struct bread *h, const char *tmp, uint64_t off,
		     uint64_t len, struct err_msg *msg)
{
	struct block *b = h->b;
	struct rcache_ent *e;
	int rc;

	e = calloc(1, sizeof(*e));
	if (!e || asprintf(&e->path, "%s/%u-%s-%llu-%llu", c->dir, b->t->id, b->id_hex,
			   (unsigned long long)off, (unsigned long long)len) < 0) {
		free(e);
		unlink(tmp);
		return ERR_NOMEM;
	}
	pthread_mutex_lock(&c->mu);
	{
		struct rcache_ent *had = find(b, off, len);
		if (had) {
			rc = pin(h, had);
			pthread_mutex_unlock(&c->mu);
			unlink(tmp);
			ent_free(e);
			return rc;
		}
	}
	rc = make_room(c, len);
	if (rc) {
		rc = err_set(msg, rc, "block %s: the s3 cache (%llu bytes, --storage.s3.cache-size) "
			     "has no room for %llu bytes beside what queries are reading",
			     b->id_hex, (unsigned long long)c->cap, (unsigned long long)len);
	} else if (rename(tmp, e->path) != 0) {
		rc = err_set(msg, ERR_IO, "block %s: s3 cache: rename %s: %s", b->id_hex, tmp,
			     strerror(errno));
	}
	if (!rc) {
		e->b = b;
		e->off = off;
		e->len = len;
		e->next = b->rext;
		b->rext = e;
		dlist_push_front(&c->lru, &e->lru);
		c->used += len;
		rc = pin(h, e);
		/* Pinning fails only for want of memory: the entry stays, unpinned. */
		pthread_mutex_unlock(&c->mu);
		return rc;
	}
	pthread_mutex_unlock(&c->mu);
	unlink(tmp);
	ent_free(e);
	return rc;
}

static void count_fail(struct rcache *c)
{
	pthread_mutex_lock(&c->mu);
	c->failures++;
	pthread_mutex_unlock(&c->mu);
}

static const char *key_of(const struct rcache *c, const struct block *b)
{
	return b->path + c->prefix_len;
}

/* ---- handles ------------------------------------------------------------------ */

void store__bread_init(struct bread *h, struct block *b)
{
	memset(h, 0, sizeof(*h));
	h->b = b;
	h->fd = -1;
}

void store__bread_release(struct bread *h)
{
	struct rcache *c = h->b ? h->b->remote : NULL;

	if (h->fd >= 0)
		close(h->fd);
	if (c && h->n_pin) {
		pthread_mutex_lock(&c->mu);
		for (size_t i = 0; i < h->n_pin; i++)
			h->pin[i]->pins--;
		pthread_mutex_unlock(&c->mu);
	}
	free(h->pin);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}

static int piece_cmp(const void *a, const void *b)
{
	const struct rpiece *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* One merged GET: pieces [p0, p1) of the sorted list, bytes [off, off + len). */
struct run {
	size_t p0, p1;
	uint64_t off, len;
	uint64_t need; /* bytes of its pieces */
	struct buf data;
	int kind;
};

/* Checks the pieces of run r, writes it to a file and adds it, pinned by h. */
static int store_run(struct rcache *c, struct bread *h, const struct rpiece *p, struct run *r,
		     struct err_msg *msg)
{
	struct block *b = h->b;
	char *tmp = NULL;
	int fd, rc;

	if (r->data.len != r->len)
		return err_set(msg, ERR_CORRUPT, "block %s: the bucket gave %zu bytes of %llu at %llu",
			       b->id_hex, r->data.len, (unsigned long long)r->len,
			       (unsigned long long)r->off);
	for (size_t i = r->p0; i < r->p1; i++)
		if (p[i].has_crc &&
		    store__crc32c(0, r->data.data + (p[i].off - r->off), p[i].len) != p[i].crc)
			return err_set(msg, ERR_CORRUPT, "block %s: %s checksum mismatch in the bucket's "
				       "copy", b->id_hex, kind_names[p[i].kind]);
	rc = new_tmp(c, b, &tmp, &fd, msg);
	if (rc)
		return rc;
	rc = write_all(fd, r->data.data, r->data.len);
	if (close(fd) != 0 && !rc)
		rc = ERR_IO;
	if (rc) {
		unlink(tmp);
		rc = err_set(msg, rc, "block %s: s3 cache: write %s: %s", b->id_hex, tmp,
			     strerror(errno));
	} else {
		rc = add_entry(c, h, tmp, r->off, r->len, msg);
	}
	free(tmp);
	return rc;
}

/* Fetches runs [r0, r1) in one objstore_get_ranges call and caches them. */
static int fetch_runs(struct rcache *c, struct bread *h, const struct rpiece *p, struct run *runs,
		      size_t r0, size_t r1, struct err_msg *msg)
{
	struct block *b = h->b;
	struct objstore_range *rg = calloc(r1 - r0, sizeof(*rg));
	struct err_msg m;
	int rc;

	if (!rg)
		return ERR_NOMEM;
	for (size_t i = r0; i < r1; i++) {
		buf_init(&runs[i].data, runs[i].len);
		rg[i - r0].key = key_of(c, b);
		rg[i - r0].off = runs[i].off;
		rg[i - r0].len = runs[i].len;
		rg[i - r0].out = &runs[i].data;
	}
	err_clear(&m);
	rc = objstore_get_ranges(c->os, rg, r1 - r0, &m);
	pthread_mutex_lock(&c->mu);
	for (size_t i = r0; i < r1; i++) {
		c->gets[runs[i].kind]++;
		c->got[runs[i].kind] += runs[i].data.len;
		for (size_t k = runs[i].p0; k < runs[i].p1; k++)
			c->need[p[k].kind] += p[k].len;
	}
	pthread_mutex_unlock(&c->mu);
	if (rc)
		rc = err_set(msg, rc, "block %s: the bucket: %s", b->id_hex,
			     m.text[0] ? m.text : err_str(rc));
	for (size_t i = r0; i < r1 && !rc; i++)
		rc = store_run(c, h, p, &runs[i], msg);
	for (size_t i = r0; i < r1; i++)
		buf_release(&runs[i].data);
	free(rg);
	return rc;
}

int store__bread_fetch(struct bread *h, const struct rpiece *pieces, size_t n,
		       struct err_msg *out)
{
	struct rcache *c = h->b->remote;
	struct rpiece *miss = NULL;
	struct run *runs = NULL;
	size_t n_miss = 0, n_runs = 0;
	uint64_t run_max;
	struct err_msg why, *msg = &why; /* out may be NULL: the log line needs the text */
	int rc = 0;

	if (!c || h->fd >= 0 || !n)
		return 0;
	if (n > RCACHE_MAX_PIECES)
		return err_set(out, ERR_TOO_LARGE, "block %s: %zu pieces in one read", h->b->id_hex, n);
	err_clear(&why);
	miss = malloc(n * sizeof(*miss));
	if (!miss)
		return ERR_NOMEM;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < n && !rc; i++) {
		struct rcache_ent *e;

		if (find_pinned(h, pieces[i].off, pieces[i].len))
			continue;
		e = find(h->b, pieces[i].off, pieces[i].len);
		if (e) {
			c->hits++;
			dlist_move_front(&c->lru, &e->lru);
			rc = pin(h, e);
		} else {
			c->misses++;
			miss[n_miss++] = pieces[i];
		}
	}
	pthread_mutex_unlock(&c->mu);
	if (rc || !n_miss)
		goto out;
	qsort(miss, n_miss, sizeof(*miss), piece_cmp);
	/* A merged GET is at most a sixteenth of the cache, so that merging
	 * never makes pieces that fit fail for want of room. */
	run_max = c->cap / 16 < RCACHE_RUN_MAX ? c->cap / 16 : RCACHE_RUN_MAX;
	runs = calloc(n_miss, sizeof(*runs));
	if (!runs) {
		rc = ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < n_miss; i++) {
		struct run *r = n_runs ? &runs[n_runs - 1] : NULL;
		uint64_t end = miss[i].off + miss[i].len;

		/* A gap joins a GET only while the bytes it wastes stay under the
		 * bytes asked for (so a GET fetches less than twice what its
		 * pieces need), kinds apart so that bytes are counted by kind. */
		if (r && r->kind == miss[i].kind && miss[i].off <= r->off + r->len + RCACHE_GAP &&
		    end - r->off <= run_max) {
			uint64_t len = end > r->off + r->len ? end - r->off : r->len;
			uint64_t need = r->need + miss[i].len;
			if (len <= 2 * need) {
				r->len = len;
				r->need = need;
				r->p1 = i + 1;
				continue;
			}
		}
		r = &runs[n_runs++];
		r->p0 = i;
		r->p1 = i + 1;
		r->off = miss[i].off;
		r->len = miss[i].len;
		r->need = miss[i].len;
		r->kind = miss[i].kind;
	}
	for (size_t r0 = 0; r0 < n_runs && !rc;) {
		size_t r1 = r0;
		uint64_t bytes = 0;

		if (runs[r0].len > c->cap) {
			rc = err_set(msg, ERR_TOO_LARGE, "block %s: %llu bytes of it are more than the "
				     "s3 cache holds (%llu bytes, --storage.s3.cache-size)",
				     h->b->id_hex, (unsigned long long)runs[r0].len,
				     (unsigned long long)c->cap);
			break;
		}
		while (r1 < n_runs && r1 - r0 < RCACHE_BATCH_RANGES &&
		       (r1 == r0 || bytes + runs[r1].len <= RCACHE_BATCH_BYTES))
			bytes += runs[r1++].len;
		rc = fetch_runs(c, h, miss, runs, r0, r1, msg);
		r0 = r1;
	}
out:
	free(runs);
	free(miss);
	if (rc && rc != ERR_NOMEM) {
		count_fail(c);
		log_warn("%s", why.text[0] ? why.text : err_str(rc));
		err_set(out, rc, "%s", why.text[0] ? why.text : err_str(rc));
	}
	return rc;
}

int store__bread_read(struct bread *h, const struct rpiece *p, void *dst, struct err_msg *msg)
{
	struct rcache_ent *e;
	int fd, rc;

	if (!h->b->remote && h->fd < 0) {
		h->fd = store__block_open_fd(h->b, msg);
		if (h->fd < 0)
			return h->fd;
	}
	if (h->fd >= 0) {
		rc = store__pread_all(h->fd, dst, p->len, p->off);
		return rc ? err_set(msg, rc, "block %s: cannot read its %s", h->b->id_hex,
				    kind_names[p->kind])
			  : 0;
	}
	e = find_pinned(h, p->off, p->len);
	if (!e) {
		rc = store__bread_fetch(h, p, 1, msg);
		if (rc)
			return rc;
		e = find_pinned(h, p->off, p->len);
		if (!e)
			return err_set(msg, ERR_NOMEM, "block %s: s3 cache: nothing pinned", h->b->id_hex);
	}
	/* A pinned entry's file stays until the pin goes. */
	fd = open(e->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(msg, ERR_IO, "block %s: s3 cache: open %s: %s", h->b->id_hex, e->path,
			       strerror(errno));
	rc = store__pread_all(fd, dst, p->len, p->off - e->off);
	close(fd);
	return rc ? err_set(msg, rc, "block %s: s3 cache: read %s", h->b->id_hex, e->path) : 0;
}

/* ---- whole blocks ---------------------------------------------------------------- */

/* Downloads b's object into the new file `tmp` (fd open for writing). */
static int download(struct rcache *c, struct block *b, int fd, struct err_msg *msg)
{
	struct buf chunk;
	uint64_t off = 0;
	int rc = 0;

	buf_init(&chunk, RCACHE_CHUNK);
	while (!rc && off < b->file_size) {
		uint64_t want = b->file_size - off, size = 0;
		struct err_msg m;

		if (want > RCACHE_CHUNK)
			want = RCACHE_CHUNK;
		buf_reset(&chunk);
		err_clear(&m);
		rc = objstore_get_range(c->os, key_of(c, b), off, want, &chunk, &size, &m);
		store__rcache_count(c, RKIND_WHOLE, 1, chunk.len);
		if (rc)
			rc = err_set(msg, rc, "block %s: the bucket: %s", b->id_hex,
				     m.text[0] ? m.text : err_str(rc));
		else if (size != b->file_size || chunk.len != want)
			rc = err_set(msg, ERR_CORRUPT, "block %s: the bucket holds %llu bytes, the "
				     "block has %llu", b->id_hex, (unsigned long long)size,
				     (unsigned long long)b->file_size);
		else if (write_all(fd, chunk.data, chunk.len))
			rc = err_set(msg, ERR_IO, "block %s: s3 cache: write: %s", b->id_hex,
				     strerror(errno));
		off += want;
	}
	buf_release(&chunk);
	return rc;
}

int store__rcache_fd(struct rcache *c, struct block *b, struct err_msg *out)
{
	struct err_msg why, *msg = &why;
	struct bread h;
	struct rcache_ent *e;
	char *tmp = NULL;
	int fd = -1, rc;

	err_clear(&why);
	if (!c->ready)
		return err_set(out, ERR_INVALID, "block %s is missing", b->id_hex);
	store__bread_init(&h, b);
	pthread_mutex_lock(&c->mu);
	e = find(b, 0, b->file_size);
	if (e) {
		c->hits++;
		dlist_move_front(&c->lru, &e->lru);
		rc = pin(&h, e);
		pthread_mutex_unlock(&c->mu);
		if (rc)
			goto fail;
		goto open;
	}
	c->misses++;
	pthread_mutex_unlock(&c->mu);
	if (b->file_size > c->cap) {
		rc = err_set(msg, ERR_TOO_LARGE, "block %s (%llu bytes) is larger than the s3 cache "
			     "(%llu bytes, --storage.s3.cache-size)", b->id_hex,
			     (unsigned long long)b->file_size, (unsigned long long)c->cap);
		goto fail;
	}
	rc = new_tmp(c, b, &tmp, &fd, msg);
	if (rc)
		goto fail;
	rc = download(c, b, fd, msg);
	if (close(fd) != 0 && !rc)
		rc = err_set(msg, ERR_IO, "block %s: s3 cache: close: %s", b->id_hex, strerror(errno));
	fd = -1;
	if (rc) {
		unlink(tmp);
		goto fail;
	}
	rc = add_entry(c, &h, tmp, 0, b->file_size, msg);
	if (rc)
		goto fail;
open:
	/* The open file stays readable after the entry is evicted. */
	e = find_pinned(&h, 0, b->file_size);
	fd = open(e->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		rc = err_set(msg, ERR_IO, "block %s: s3 cache: open %s: %s", b->id_hex, e->path,
			     strerror(errno));
	store__bread_release(&h);
	free(tmp);
	if (fd >= 0)
		return fd;
	err_set(out, rc, "%s", why.text);
	return rc;
fail:
	store__bread_release(&h);
	count_fail(c);
	log_warn("%s", why.text[0] ? why.text : err_str(rc));
	err_set(out, rc, "%s", why.text[0] ? why.text : err_str(rc));
	free(tmp);
	return rc;
}

_Static_assert(RKIND_N == sizeof(((struct store_bucket_reads *)0)->kind) /
			     sizeof(((struct store_bucket_reads *)0)->kind[0]),
	       "store_bucket_reads has a slot per kind");

void store_bucket_reads(struct store *st, struct store_bucket_reads *out)
{
	store__rcache_stats(&st->rcache, out);
}
