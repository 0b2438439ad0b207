/*
 * rcache.c - local copies of blocks that are in the bucket but whose file
 * is missing from the data directory (a lost disk, a new machine).
 *
 * The first read of such a block downloads the whole object, in ranged
 * GETs of RCACHE_CHUNK bytes (bounded memory), into
 * <dir>/s3cache/<tenant id>-<block id>.blk; later reads open that file,
 * so everything that reads a block through an fd (readers, compaction,
 * verify) works unchanged.  The copies take at most `cap` bytes: before a
 * new one is added, the least recently opened ones are unlinked (a reader
 * that has one open keeps reading it).  The directory is emptied at open:
 * the cache lives as long as the process.  A block larger than the cap,
 * or a failed download, is an error of this read only (the bucket may be
 * back for the next query); the objstore's retries and stall timeout
 * bound how long a read waits.
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

#include "base/log.h"
#include "objstore/objstore.h"

#define RCACHE_DIR "s3cache"
#define RCACHE_DEFAULT_CAP (1ull << 30)
#define RCACHE_CHUNK (8u << 20)

struct rcache_ent {
	struct dlist_node lru;
	char *path;
	uint64_t size;
};

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

void store__rcache_release(struct rcache *c)
{
	if (!c->ready)
		return;
	while (c->lru.head) {
		struct rcache_ent *e = dlist_entry(c->lru.head, struct rcache_ent, lru);
		dlist_unlink(&c->lru, &e->lru);
		free(e->path);
		free(e);
	}
	pthread_mutex_destroy(&c->mu);
	free(c->dir);
	memset(c, 0, sizeof(*c));
}

/* The entry of `path`, moved to the front, with an fd of it (c->mu held). */
static int open_cached(struct rcache *c, const char *path, int *fd)
{
	for (struct dlist_node *n = c->lru.head; n; n = n->next) {
		struct rcache_ent *e = dlist_entry(n, struct rcache_ent, lru);

		if (strcmp(e->path, path) != 0)
			continue;
		*fd = open(e->path, O_RDONLY | O_CLOEXEC);
		if (*fd < 0) { /* removed behind our back: forget it */
			dlist_unlink(&c->lru, &e->lru);
			c->used -= e->size;
			free(e->path);
			free(e);
			return 0;
		}
		dlist_move_front(&c->lru, &e->lru);
		return 1;
	}
	return 0;
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

/* Downloads b's object into the new file `tmp`. */
static int download(struct rcache *c, struct block *b, const char *tmp, struct err_msg *msg)
{
	const char *key = b->path + c->prefix_len;
	struct buf chunk;
	uint64_t off = 0;
	int fd, rc = 0;

	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(msg, ERR_IO, "block %s: s3 cache: create %s: %s", b->id_hex, tmp,
			       strerror(errno));
	buf_init(&chunk, RCACHE_CHUNK);
	while (!rc && off < b->file_size) {
		uint64_t want = b->file_size - off, size = 0;
		struct err_msg m;

		if (want > RCACHE_CHUNK)
			want = RCACHE_CHUNK;
		buf_reset(&chunk);
		err_clear(&m);
		rc = objstore_get_range(c->os, key, off, want, &chunk, &size, &m);
		if (rc)
			rc = err_set(msg, rc, "block %s: the bucket: %s", b->id_hex,
				     m.text[0] ? m.text : err_str(rc));
		else if (size != b->file_size || chunk.len != want)
			rc = err_set(msg, ERR_CORRUPT, "block %s: the bucket holds %llu bytes, the "
				     "block has %llu", b->id_hex, (unsigned long long)size,
				     (unsigned long long)b->file_size);
		else if (write_all(fd, chunk.data, chunk.len))
			rc = err_set(msg, ERR_IO, "block %s: s3 cache: write %s: %s", b->id_hex, tmp,
				     strerror(errno));
		off += want;
	}
	buf_release(&chunk);
	if (close(fd) != 0 && !rc)
		rc = err_set(msg, ERR_IO, "block %s: s3 cache: close %s: %s", b->id_hex, tmp,
			     strerror(errno));
	if (rc)
		unlink(tmp);
	return rc;
}

int store__rcache_fd(struct rcache *c, struct block *b, struct err_msg *out)
{
	static _Atomic unsigned long seq;
	struct rcache_ent *e = NULL;
	char *path = NULL, *tmp = NULL;
	struct err_msg why, *msg = &why; /* out may be NULL: the log line needs the text */
	int fd = -1, rc;

	err_clear(&why);
	if (!c->ready)
		return err_set(out, ERR_INVALID, "block %s is missing", b->id_hex);
	if (asprintf(&path, "%s/%u-%s.blk", c->dir, b->t->id, b->id_hex) < 0)
		return ERR_NOMEM;
	pthread_mutex_lock(&c->mu);
	if (open_cached(c, path, &fd)) {
		pthread_mutex_unlock(&c->mu);
		free(path);
		return fd;
	}
	pthread_mutex_unlock(&c->mu);
	if (b->file_size > c->cap) {
		rc = err_set(msg, ERR_TOO_LARGE, "block %s (%llu bytes) is larger than the s3 cache "
			     "(%llu bytes, --storage.s3.cache-size)", b->id_hex,
			     (unsigned long long)b->file_size, (unsigned long long)c->cap);
		goto fail;
	}
	if (asprintf(&tmp, "%s.tmp.%lu", path, (unsigned long)atomic_fetch_add(&seq, 1)) < 0) {
		tmp = NULL;
		rc = ERR_NOMEM;
		goto fail;
	}
	rc = download(c, b, tmp, msg);
	if (rc)
		goto fail;
	e = calloc(1, sizeof(*e));
	if (!e) {
		unlink(tmp);
		rc = ERR_NOMEM;
		goto fail;
	}
	pthread_mutex_lock(&c->mu);
	if (open_cached(c, path, &fd)) { /* another reader fetched it meanwhile */
		pthread_mutex_unlock(&c->mu);
		unlink(tmp);
		free(e);
		free(tmp);
		free(path);
		return fd;
	}
	while (c->lru.tail && c->used + b->file_size > c->cap) {
		struct rcache_ent *old = dlist_entry(c->lru.tail, struct rcache_ent, lru);
		dlist_unlink(&c->lru, &old->lru);
		c->used -= old->size;
		c->evictions++;
		if (unlink(old->path) != 0 && errno != ENOENT)
			log_warn("s3 cache: cannot delete %s: %s", old->path, strerror(errno));
		free(old->path);
		free(old);
	}
	if (rename(tmp, path) != 0) {
		rc = err_set(msg, ERR_IO, "block %s: s3 cache: rename %s: %s", b->id_hex, tmp,
			     strerror(errno));
		pthread_mutex_unlock(&c->mu);
		unlink(tmp);
		free(e);
		goto fail;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = err_set(msg, ERR_IO, "block %s: s3 cache: open %s: %s", b->id_hex, path,
			     strerror(errno));
		pthread_mutex_unlock(&c->mu);
		unlink(path);
		free(e);
		goto fail;
	}
	e->path = path;
	e->size = b->file_size;
	c->used += e->size;
	c->fetches++;
	c->fetch_bytes += e->size;
	dlist_push_front(&c->lru, &e->lru);
	pthread_mutex_unlock(&c->mu);
	free(tmp);
	return fd;
fail:
	pthread_mutex_lock(&c->mu);
	c->failures++;
	pthread_mutex_unlock(&c->mu);
	log_warn("%s", why.text[0] ? why.text : err_str(rc));
	err_set(out, rc, "%s", why.text[0] ? why.text : err_str(rc));
	free(tmp);
	free(path);
	return rc;
}
