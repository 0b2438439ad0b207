/*
 * dir.c - the local-directory backend: one file per key under a root
 * ("a/b" is root/a/b).  A put writes root/.tmp/<random>, fsyncs it, then
 * link()s it in (create-once: EEXIST is the conflict) or rename()s it
 * over the old object, so a reader sees a whole object or none.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/uuid.h"
#include "objstore_int.h"

/* Keys one list call collects before sorting them (a directory is no bucket). */
#define DIR_LIST_MAX (1u << 20)

struct dirstore {
	struct objstore os;
	char root[PATH_MAX / 2];
};

/* out = a "/" b ("" a: just b); 0, or -1 when it does not fit in cap. */
static int join(char *out, size_t cap, const char *a, const char *b)
{
	size_t al = strlen(a), bl = strlen(b), k = al ? al + 1 : 0;

	if (k + bl + 1 > cap)
		return -1;
	memcpy(out, a, al);
	if (al)
		out[al] = '/';
	memcpy(out + k, b, bl + 1);
	return 0;
}

static int path_of(struct dirstore *d, const char *key, char *out, size_t cap,
		   struct err_msg *msg)
{
	if (join(out, cap, d->root, key))
		return err_set(msg, ERR_INVALID, "%s: path too long", key);
	return 0;
}

/* mkdir -p of the directories of `path` below the root. */
static int make_parents(struct dirstore *d, char *path, struct err_msg *msg)
{
	size_t rl = strlen(d->root);

	for (char *s = path + rl + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		int r = mkdir(path, 0755);
		int e = errno;

		*s = '/';
		if (r && e != EEXIST)
			return err_set(msg, ERR_IO, "mkdir %.*s: %s", (int)(s - path), path,
				       strerror(e));
	}
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int write_object(struct objstore *os, const char *key, const void *data, size_t len,
			unsigned flags, struct err_msg *msg)
{
	struct dirstore *d = (struct dirstore *)os;
	char path[PATH_MAX], tmp[PATH_MAX], id[UUID_TEXT + 1], rel[5 + UUID_TEXT + 1];
	uint8_t u[UUID_BYTES];
	int fd = -1, rc;

	rc = path_of(d, key, path, sizeof(path), msg);
	if (rc)
		return rc;
	rc = uuid_new_v4(u);
	if (rc)
		return err_set(msg, rc, "%s: no random temporary name", key);
	uuid_format(u, id);
	memcpy(rel, ".tmp/", 5);
	memcpy(rel + 5, id, sizeof(id));
	if (join(tmp, sizeof(tmp), d->root, rel))
		return err_set(msg, ERR_INVALID, "%s: path too long", key);
	rc = make_parents(d, path, msg);
	if (rc)
		return rc;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(msg, ERR_IO, "%s: %s", tmp, strerror(errno));
	if (write_all(fd, data, len) || fsync(fd)) {
		rc = err_set(msg, ERR_IO, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	if (flags & OBJSTORE_CREATE_ONCE) {
		if (link(tmp, path))
			rc = errno == EEXIST ? err_set(msg, ERR_CONFLICT, "%s: exists", key)
					     : err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	} else if (rename(tmp, path)) {
		rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	}
out:
	close(fd);
	unlink(tmp);
	return rc;
}

/* Each file operation is one request of objstore_stats(), never retried. */
static int dir_put(struct objstore *os, const char *key, const void *data, size_t len,
		   unsigned flags, struct err_msg *msg)
{
	int rc = write_object(os, key, data, len, flags, msg);

	objstore__count(os, OBJSTORE_OP_PUT, rc, 0, 0, rc ? 0 : len);
	return rc;
}

/* Opens key's file for reading into *fd, its stat into *st. */
static int open_object(struct dirstore *d, const char *key, char *path, size_t cap, int *fd,
		       struct stat *st, struct err_msg *msg)
{
	int rc = path_of(d, key, path, cap, msg);

	if (rc)
		return rc;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return errno == ENOENT || errno == ENOTDIR
			       ? err_set(msg, ERR_NOT_FOUND, "%s: no such object", key)
			       : err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	if (fstat(*fd, st) || !S_ISREG(st->st_mode)) {
		close(*fd);
		*fd = -1;
		return err_set(msg, ERR_NOT_FOUND, "%s: no such object", key);
	}
	return 0;
}

/*
 * A file's entity tag: its inode and modification time.  A put links a
 * new file in, so a tag names one content, as an S3 ETag does.
 */
static void etag_of(const struct stat *s, char *out, size_t cap)
{
	snprintf(out, cap, "%llx-%llx", (unsigned long long)s->st_ino,
		 (unsigned long long)s->st_mtim.tv_sec * 1000000000ull +
			 (unsigned long long)s->st_mtim.tv_nsec);
}

/* r's range of the open file fd (stat st, at path). */
static int read_fd(int fd, const struct stat *st, const char *path, struct objstore_range *r,
		   uint64_t *size, struct err_msg *msg)
{
	uint64_t off, len, sz = (uint64_t)st->st_size;
	int rc;

	if (r->off == OBJSTORE__SUFFIX) {
		len = r->len < sz ? r->len : sz;
		off = sz - len;
	} else {
		off = r->off;
		if (r->len != UINT64_MAX && off >= sz)
			return err_set(msg, ERR_INVALID, "%s: range from %llu of an object of %llu bytes",
				       r->key, (unsigned long long)off, (unsigned long long)sz);
		len = off >= sz ? 0 : sz - off < r->len ? sz - off : r->len;
	}
	if (len > r->out->max - r->out->len)
		return err_set(msg, ERR_TOO_LARGE, "%s: %llu bytes over the reader's cap of %zu",
			       r->key, (unsigned long long)len, r->out->max);
	rc = buf_reserve(r->out, (size_t)len);
	if (rc)
		return err_set(msg, rc, "%s: %llu bytes", r->key, (unsigned long long)len);
	for (uint64_t got = 0; got < len;) {
		ssize_t n = pread(fd, r->out->data + r->out->len + got, (size_t)(len - got),
				  (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(msg, ERR_IO, "%s: %s", path, n ? strerror(errno) : "shrank");
		got += (uint64_t)n;
	}
	r->out->len += (size_t)len;
	r->out->data[r->out->len] = '\0';
	if (size)
		*size = sz;
	return 0;
}

static int read_range(struct dirstore *d, struct objstore_range *r, uint64_t *size,
		      struct err_msg *msg)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, rc = open_object(d, r->key, path, sizeof(path), &fd, &st, msg);

	if (rc)
		return rc;
	rc = read_fd(fd, &st, path, r, size, msg);
	close(fd);
	return rc;
}

static int dir_get_ranges(struct objstore *os, struct objstore_range *r, size_t n,
			  uint64_t *sizes, struct err_msg *msg)
{
	int first = 0;

	for (size_t i = 0; i < n; i++) {
		size_t before = r[i].out->len;

		r[i].rc = read_range((struct dirstore *)os, &r[i], sizes, msg);
		objstore__count(os, r[i].off == 0 && r[i].len == UINT64_MAX ? OBJSTORE_OP_GET
									     : OBJSTORE_OP_RANGE,
				r[i].rc, 0, r[i].rc ? 0 : r[i].out->len - before, 0);
		if (r[i].rc && !first)
			first = r[i].rc;
	}
	return first;
}

static int stat_object(struct objstore *os, const char *key, struct objstore_stat *st,
		       struct err_msg *msg)
{
	struct dirstore *d = (struct dirstore *)os;
	char path[PATH_MAX];
	struct stat s;
	int rc = path_of(d, key, path, sizeof(path), msg);

	if (rc)
		return rc;
	if (stat(path, &s) || !S_ISREG(s.st_mode))
		return err_set(msg, ERR_NOT_FOUND, "%s: no such object", key);
	st->size = (uint64_t)s.st_size;
	etag_of(&s, st->etag, sizeof(st->etag));
	return 0;
}

static int dir_get_if(struct objstore *os, const char *key, const char *etag, struct buf *out,
		      char *etag_out, int *changed, struct err_msg *msg)
{
	struct objstore_range r = {.key = key, .off = 0, .len = UINT64_MAX, .out = out};
	char path[PATH_MAX], tag[OBJSTORE_ETAG_MAX];
	size_t before = out->len;
	struct stat st;
	int fd, rc = open_object((struct dirstore *)os, key, path, sizeof(path), &fd, &st, msg);

	if (rc) {
		objstore__count(os, OBJSTORE_OP_GET, rc, 0, 0, 0);
		return rc;
	}
	etag_of(&st, tag, sizeof(tag));
	if (etag && !strcmp(etag, tag)) {
		close(fd);
		objstore__count(os, OBJSTORE_OP_GET, OBJSTORE__NOT_MODIFIED, 0, 0, 0);
		*changed = 0;
		return 0;
	}
	rc = read_fd(fd, &st, path, &r, NULL, msg);
	close(fd);
	objstore__count(os, OBJSTORE_OP_GET, rc, 0, rc ? 0 : out->len - before, 0);
	if (!rc) {
		memcpy(etag_out, tag, sizeof(tag));
		*changed = 1;
	}
	return rc;
}

static int dir_head(struct objstore *os, const char *key, struct objstore_stat *st,
		    struct err_msg *msg)
{
	int rc = stat_object(os, key, st, msg);

	objstore__count(os, OBJSTORE_OP_HEAD, rc, 0, 0, 0);
	return rc;
}

static int dir_del(struct objstore *os, const char *key, struct err_msg *msg)
{
	struct dirstore *d = (struct dirstore *)os;
	char path[PATH_MAX];
	int rc = path_of(d, key, path, sizeof(path), msg);

	if (!rc && unlink(path) && errno != ENOENT && errno != ENOTDIR)
		rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	objstore__count(os, OBJSTORE_OP_DELETE, rc, 0, 0, 0);
	return rc;
}

struct walk {
	char **keys;
	uint64_t *sizes;
	size_t n, alloc;
	const char *prefix;
	size_t plen;
};

/* Collects the regular files under root/rel whose key starts with the prefix. */
static int walk_dir(struct dirstore *d, const char *rel, struct walk *w, int depth,
		    struct err_msg *msg)
{
	char path[PATH_MAX], key[OBJSTORE_KEY_MAX + 2];
	struct dirent *de;
	DIR *dir;
	int rc = 0;

	if (depth > OBJSTORE_KEY_MAX / 2)
		return err_set(msg, ERR_TOO_LARGE, "%s: directories nested too deep", rel);
	if (join(path, sizeof(path), d->root, rel))
		return err_set(msg, ERR_TOO_LARGE, "%s: path too long", rel);
	dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? 0 : err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	while (!rc && (de = readdir(dir))) {
		struct stat st;
		size_t kl;

		if (de->d_name[0] == '.')
			continue; /* ".", "..", ".tmp": never keys */
		if (join(key, OBJSTORE_KEY_MAX + 1, rel, de->d_name))
			continue;
		kl = strlen(key);
		/* Descend only where the prefix can still match. */
		if (strncmp(key, w->prefix, kl < w->plen ? kl : w->plen))
			continue;
		if (join(path, sizeof(path), d->root, key) || lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			rc = walk_dir(d, key, w, depth + 1, msg);
		} else if (S_ISREG(st.st_mode) && kl >= w->plen) {
			if (w->n == DIR_LIST_MAX) {
				rc = err_set(msg, ERR_TOO_LARGE, "list: more than %u objects", DIR_LIST_MAX);
			} else if (w->n == w->alloc) {
				size_t na = w->alloc ? w->alloc * 2 : 64;
				char **k = realloc(w->keys, na * sizeof(*k));
				uint64_t *s = k ? realloc(w->sizes, na * sizeof(*s)) : NULL;

				if (k)
					w->keys = k;
				if (s)
					w->sizes = s, w->alloc = na;
				else
					rc = err_set(msg, ERR_NOMEM, "list: out of memory");
			}
			if (!rc) {
				w->keys[w->n] = strdup(key);
				if (!w->keys[w->n])
					rc = err_set(msg, ERR_NOMEM, "list: out of memory");
				else
					w->sizes[w->n++] = (uint64_t)st.st_size;
			}
		}
	}
	closedir(dir);
	return rc;
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dir_list(struct objstore *os, const char *prefix,
		    int (*fn)(void *arg, const struct objstore_entry *e), void *arg,
		    struct err_msg *msg)
{
	struct walk w = {.prefix = prefix, .plen = strlen(prefix)};
	size_t *order = NULL;
	int rc = walk_dir((struct dirstore *)os, "", &w, 0, msg);

	objstore__count(os, OBJSTORE_OP_LIST, rc, 0, 0, 0);
	if (!rc && w.n) {
		/* Sort the keys with their sizes: sort indexes by key. */
		char **sorted = malloc(w.n * sizeof(*sorted));

		order = malloc(w.n * sizeof(*order));
		if (!sorted || !order) {
			free(sorted);
			rc = err_set(msg, ERR_NOMEM, "list: out of memory");
		} else {
			memcpy(sorted, w.keys, w.n * sizeof(*sorted));
			qsort(sorted, w.n, sizeof(*sorted), key_cmp);
			for (size_t i = 0; i < w.n && !rc; i++) {
				struct objstore_entry e = {.key = sorted[i]};

				for (size_t j = 0; j < w.n; j++)
					if (w.keys[j] == sorted[i])
						e.size = w.sizes[j];
				rc = fn(arg, &e);
			}
			free(sorted);
		}
	}
	free(order);
	for (size_t i = 0; i < w.n; i++)
		free(w.keys[i]);
	free(w.keys);
	free(w.sizes);
	return rc;
}

static void dir_close(struct objstore *os)
{
	free(os);
}

static const struct objstore_ops dir_ops = {
	.kind = "dir",
	.put = dir_put,
	.get_ranges = dir_get_ranges,
	.get_if = dir_get_if,
	.head = dir_head,
	.del = dir_del,
	.list = dir_list,
	.close = dir_close,
};

int objstore__open_dir(const char *root, struct objstore **out, struct err_msg *msg)
{
	struct dirstore *d;
	char tmp[PATH_MAX];

	if (!root || !root[0] || strlen(root) + 64 >= sizeof(d->root))
		return err_set(msg, ERR_INVALID, "object store directory: empty or too long");
	if (mkdir(root, 0755) && errno != EEXIST)
		return err_set(msg, ERR_IO, "mkdir %s: %s", root, strerror(errno));
	join(tmp, sizeof(tmp), root, ".tmp");
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return err_set(msg, ERR_IO, "mkdir %s: %s", tmp, strerror(errno));
	d = calloc(1, sizeof(*d));
	if (!d)
		return err_set(msg, ERR_NOMEM, "object store: out of memory");
	d->os.ops = &dir_ops;
	snprintf(d->root, sizeof(d->root), "%s", root);
	*out = &d->os;
	return 0;
}
