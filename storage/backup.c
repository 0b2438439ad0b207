/*
 * backup.c - store_backup(): a consistent copy of a live store, and
 * store_restore(): a data directory made from one.
 *
 * A backup is a data directory: the head as a RocksDB checkpoint (SST files
 * hard-linked when on the same file system, else copied; the MANIFEST and
 * the memtables flushed first, so no log is needed), and every file beside
 * it (blocks/, debuginfo/), linked or copied, except files being written.
 * Maintenance (sealing, compaction, retention) is held off for the whole
 * backup, so the checkpoint's block records and the block files agree.
 * Everything is written under "<to>.partial", fsynced, and renamed to
 * "<to>" last: a backup killed midway leaves no "<to>", only a partial
 * directory the next backup to the same place removes.  The source is
 * never modified beyond a memtable flush.
 */
#include "storage_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"

#define COPY_CHUNK ((size_t)1 << 20)

/* Names a write in progress uses (blocks, debuginfo): never copied. */
static int is_temp_name(const char *name)
{
	size_t n = strlen(name);
	const char *t = strstr(name, ".tmp.");

	if (n > 4 && strcmp(name + n - 4, ".tmp") == 0)
		return 1;
	if (t && t[5]) {
		for (t += 5; *t >= '0' && *t <= '9'; t++)
			;
		if (!*t)
			return 1;
	}
	if (n == 12 && strncmp(name, "index.", 6) == 0)
		return 1; /* mkstemp of the symbol index writer */
	return 0;
}

static int fsync_path(const char *path, int dir)
{
	int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -1;
	if (fsync(fd))
		rc = -1;
	close(fd);
	return rc;
}

int store_copy_file(const char *from, const char *to, unsigned mode, uint64_t *bytes,
		    struct err_msg *msg)
{
	char *b = malloc(COPY_CHUNK);
	ssize_t n = 0;
	int in = -1, out = -1, rc = 0;

	if (!b)
		return ERR_NOMEM;
	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		rc = errno == ENOENT ? ERR_NOT_FOUND : err_set(msg, ERR_IO, "%s: %s", from, strerror(errno));
		goto out;
	}
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
	if (out < 0) {
		rc = err_set(msg, ERR_IO, "%s: %s", to, strerror(errno));
		goto out;
	}
	while (!rc && (n = read(in, b, COPY_CHUNK)) > 0) {
		for (ssize_t off = 0; !rc && off < n;) {
			ssize_t w = write(out, b + off, (size_t)(n - off));
			if (w < 0)
				rc = err_set(msg, ERR_IO, "%s: %s", to, strerror(errno));
			else
				off += w;
		}
		if (bytes)
			*bytes += (uint64_t)n;
	}
	if (!rc && n < 0)
		rc = err_set(msg, ERR_IO, "%s: %s", from, strerror(errno));
	if (!rc && fsync(out))
		rc = err_set(msg, ERR_IO, "%s: %s", to, strerror(errno));
out:
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) && !rc)
		rc = err_set(msg, ERR_IO, "%s: %s", to, strerror(errno));
	free(b);
	return rc;
}

struct walk {
	int link;              /* try hard links first */
	struct store_backup_stats *st;
	struct err_msg *msg;
};

/* One immutable file: a hard link when allowed and possible, else a copy. */
static int put_file(struct walk *w, const char *from, const char *to)
{
	struct stat sb;
	int rc;

	if (w->link && link(from, to) == 0) {
		if (stat(to, &sb) == 0)
			w->st->bytes += (uint64_t)sb.st_size;
		w->st->files++;
		w->st->linked++;
		return 0;
	}
	if (w->link && errno == ENOENT)
		return ERR_NOT_FOUND;
	if (w->link && errno != EXDEV && errno != EPERM && errno != EMLINK)
		return err_set(w->msg, ERR_IO, "link %s: %s", to, strerror(errno));
	w->link = w->link && errno != EXDEV; /* another file system: copy from now on */
	rc = store_copy_file(from, to, 0644, &w->st->bytes, w->msg);
	if (!rc)
		w->st->files++;
	return rc;
}

/*
 * Copies directory `from` into the new directory `to`, recursively, except
 * temporary files and "tmp" directories.  A file that vanishes meanwhile is
 * skipped (debug info retention may delete one; block files it needs are
 * protected by the maintenance lock).
 */
static int copy_tree(struct walk *w, const char *from, const char *to, int depth)
{
	char a[4096], b[4096];
	struct dirent *e;
	struct stat sb;
	DIR *d;
	int rc = 0;

	if (depth > 8)
		return err_set(w->msg, ERR_INVALID, "%s: directories nested too deep", from);
	if (mkdir(to, 0755) && errno != EEXIST)
		return err_set(w->msg, ERR_IO, "mkdir %s: %s", to, strerror(errno));
	d = opendir(from);
	if (!d)
		return errno == ENOENT ? 0 : err_set(w->msg, ERR_IO, "%s: %s", from, strerror(errno));
	while (!rc && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || is_temp_name(e->d_name))
			continue;
		if (snprintf(a, sizeof(a), "%s/%s", from, e->d_name) >= (int)sizeof(a) ||
		    snprintf(b, sizeof(b), "%s/%s", to, e->d_name) >= (int)sizeof(b)) {
			rc = err_set(w->msg, ERR_TOO_LARGE, "%s/%s: path too long", from, e->d_name);
			break;
		}
		if (lstat(a, &sb))
			continue;
		if (S_ISDIR(sb.st_mode)) {
			if (strcmp(e->d_name, "tmp") != 0)
				rc = copy_tree(w, a, b, depth + 1);
		} else if (S_ISREG(sb.st_mode)) {
			rc = put_file(w, a, b);
			if (rc == ERR_NOT_FOUND)
				rc = 0;
		}
	}
	closedir(d);
	if (!rc && fsync_path(to, 1))
		rc = err_set(w->msg, ERR_IO, "fsync %s: %s", to, strerror(errno));
	return rc;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

/* The directories beside the head that belong to the store. */
static const char *const side_dirs[] = { BLOCKS_DIR, "debuginfo" };

static int parent_fsync(const char *path)
{
	char *p = strdup(path), *slash;
	int rc;

	if (!p)
		return -1;
	slash = strrchr(p, '/');
	if (slash == p)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	else
		strcpy(p, ".");
	rc = fsync_path(p, 1);
	free(p);
	return rc;
}

/*
 * The end of a backup or a restore: on failure the partial copy is removed;
 * on success the stats, with the time taken, go to `out` (may be NULL).
 */
static int finish(int rc, const char *partial, struct store_backup_stats *bs, int64_t t0,
		  struct store_backup_stats *out)
{
	if (rc) {
		nftw(partial, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		return rc;
	}
	bs->ns = store__mono() - t0;
	if (out)
		*out = *bs;
	return 0;
}

int store_backup(struct store *st, const char *to, struct store_backup_stats *out,
		 struct err_msg *msg)
{
	struct store_backup_stats bs;
	struct walk w;
	rocksdb_checkpoint_t *cp = NULL;
	char partial[4096], a[4096], b[4096];
	char *err = NULL;
	struct stat sb;
	int64_t t0 = store__mono();
	int rc = 0;

	memset(&bs, 0, sizeof(bs));
	if (st->read_only)
		return err_set(msg, ERR_INVALID, "backup: the store is open read-only");
	if (!to || to[0] != '/')
		return err_set(msg, ERR_INVALID, "backup: the destination must be an absolute path");
	if (snprintf(partial, sizeof(partial), "%s.partial", to) >= (int)sizeof(partial) - 64)
		return err_set(msg, ERR_TOO_LARGE, "backup: destination path too long");
	if (stat(to, &sb) == 0 || errno != ENOENT)
		return err_set(msg, ERR_INVALID, "backup: %s exists already", to);
	/* What an interrupted backup to the same place left. */
	if (lstat(partial, &sb) == 0) {
		log_warn("backup: removing %s, left by an interrupted backup", partial);
		nftw(partial, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	pthread_mutex_lock(&st->maint_mu);
	cp = rocksdb_checkpoint_object_create(st->db, &err);
	if (!err)
		rocksdb_checkpoint_create(cp, partial, 0, &err); /* 0: flush, no log needed */
	if (cp)
		rocksdb_checkpoint_object_destroy(cp);
	if (err) {
		rc = store__rocks_err(msg, ERR_IO, "backup: checkpoint", err);
		goto out;
	}
	w.link = 1;
	w.st = &bs;
	w.msg = msg;
	for (size_t i = 0; !rc && i < sizeof(side_dirs) / sizeof(side_dirs[0]); i++) {
		if (snprintf(a, sizeof(a), "%s/%s", st->dir, side_dirs[i]) >= (int)sizeof(a) ||
		    snprintf(b, sizeof(b), "%s/%s", partial, side_dirs[i]) >= (int)sizeof(b)) {
			rc = err_set(msg, ERR_TOO_LARGE, "backup: path too long");
			break;
		}
		if (stat(a, &sb) == 0)
			rc = copy_tree(&w, a, b, 0);
	}
	if (rc)
		goto out;
	store__crashpoint(st, "backup-before-rename");
	if (fsync_path(partial, 1) || rename(partial, to) || parent_fsync(to)) {
		rc = err_set(msg, ERR_IO, "backup: publishing %s: %s", to, strerror(errno));
		goto out;
	}
out:
	pthread_mutex_unlock(&st->maint_mu);
	return finish(rc, partial, &bs, t0, out);
}

int store_restore(const char *from, const char *data, struct store_backup_stats *out,
		  struct err_msg *msg)
{
	struct store_backup_stats bs;
	struct walk w;
	char partial[4096], a[4096], b[4096];
	struct dirent *e;
	struct stat sb;
	DIR *d;
	int64_t t0 = store__mono();
	int rc = 0;

	memset(&bs, 0, sizeof(bs));
	if (snprintf(partial, sizeof(partial), "%s.partial", data) >= (int)sizeof(partial) - 64)
		return err_set(msg, ERR_TOO_LARGE, "restore: path too long");
	if (snprintf(a, sizeof(a), "%s/CURRENT", from) >= (int)sizeof(a) || stat(a, &sb))
		return err_set(msg, ERR_INVALID, "restore: %s is not a backup (no CURRENT file)", from);
	if (stat(data, &sb) == 0 || errno != ENOENT)
		return err_set(msg, ERR_INVALID, "restore: %s exists already; restore into a new "
			       "directory", data);
	if (lstat(partial, &sb) == 0)
		nftw(partial, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	/* Copies, never links: the restored store changes, the backup must not. */
	w.link = 0;
	w.st = &bs;
	w.msg = msg;
	if (mkdir(partial, 0755))
		return err_set(msg, ERR_IO, "restore: mkdir %s: %s", partial, strerror(errno));
	d = opendir(from);
	if (!d) {
		rc = err_set(msg, ERR_IO, "restore: %s: %s", from, strerror(errno));
		goto out;
	}
	while (!rc && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, "LOCK") == 0)
			continue;
		if (snprintf(a, sizeof(a), "%s/%s", from, e->d_name) >= (int)sizeof(a) ||
		    snprintf(b, sizeof(b), "%s/%s", partial, e->d_name) >= (int)sizeof(b)) {
			rc = err_set(msg, ERR_TOO_LARGE, "restore: path too long");
			break;
		}
		if (lstat(a, &sb))
			continue;
		if (S_ISDIR(sb.st_mode))
			rc = copy_tree(&w, a, b, 0);
		else if (S_ISREG(sb.st_mode))
			rc = put_file(&w, a, b);
	}
	closedir(d);
	if (!rc && (fsync_path(partial, 1) || rename(partial, data) || parent_fsync(data)))
		rc = err_set(msg, ERR_IO, "restore: publishing %s: %s", data, strerror(errno));
out:
	return finish(rc, partial, &bs, t0, out);
}
