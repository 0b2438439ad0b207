/*
 * files.c - the debug files on disk: canonical build IDs and the paths
 * under <data dir>/debuginfo (layout in debuginfo_int.h), creating
 * directories, installing a file under its final name (a temporary name,
 * fsync, rename, fsync of the directory), comparing two files, and the
 * lookup that serves the debuginfod protocol to those who may see a file.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"
#include "debuginfo_int.h"

static const char *const kind_names[3] = { "debuginfo", "executable", "kallsyms" };

const char *debuginfo__kind_name(enum debuginfo_file_kind kind)
{
	assert((unsigned)kind <= DEBUGINFO_FILE_KALLSYMS);
	return kind_names[kind];
}

int debuginfo__canon_id(const char *hex, char out[DEBUGINFO_HEX_MAX], uint8_t *bytes, size_t *len)
{
	uint8_t tmp[SYM_BUILD_ID_MAX];
	size_t n;

	if (!hex || sym_build_id_parse(hex, bytes ? bytes : tmp, &n) || n == 0)
		return ERR_INVALID;
	sym_build_id_hex(bytes ? bytes : tmp, n, out);
	if (len)
		*len = n;
	return 0;
}

int debuginfo__path(const struct debuginfo *s, const char *id, const char *name, char *out,
		    size_t len)
{
	/* Canonical IDs only (debuginfo__canon_id): never a path of the client's. */
	assert(id && strlen(id) >= 2 && !strchr(id, '/') && !strchr(id, '.'));
	int n = snprintf(out, len, "%s/%.2s/%s%s%s", s->dir, id, id, name ? "/" : "",
			 name ? name : "");

	return n < 0 || (size_t)n >= len ? ERR_TOO_LARGE : 0;
}

int debuginfo__file_exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

int debuginfo__has_file(const struct debuginfo *s, const char *id)
{
	static const char *const names[] = { "debuginfo", "executable", "kallsyms" };
	char path[DEBUGINFO__PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!debuginfo__path(s, id, names[i], path, sizeof(path)) &&
		    debuginfo__file_exists(path))
			return 1;
	return 0;
}

int debuginfo__mkdir_p(const char *path)
{
	char tmp[DEBUGINFO__PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(tmp))
		return ERR_TOO_LARGE;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return ERR_IO;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return ERR_IO;
	return 0;
}

void debuginfo__fsync_dir(const char *file_path)
{
	char dir[DEBUGINFO__PATH_MAX];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", file_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/*
 * Runs on web worker threads, whose stacks are small: the copy buffer is on
 * the heap (a 64 KiB stack array overflowed them under ASan).
 */
#define INSTALL_CHUNK 65536

int debuginfo__install_copy(const char *src, const char *dst, struct err_msg *msg)
{
	char tmp[4200];
	char *chunk = NULL;
	int in = -1, out = -1, rc = 0;
	ssize_t n;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", dst, (int)getpid());
	unlink(tmp);
	if (link(src, tmp) == 0)
		goto done;
	chunk = malloc(INSTALL_CHUNK);
	if (!chunk) {
		rc = err_set(msg, ERR_NOMEM, "out of memory copying %s", src);
		goto out;
	}
	in = open(src, O_RDONLY | O_CLOEXEC);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (in < 0 || out < 0) {
		rc = err_set(msg, ERR_IO, "copying %s: %s", src, strerror(errno));
		goto out;
	}
	while ((n = read(in, chunk, INSTALL_CHUNK)) > 0)
		if (write(out, chunk, (size_t)n) != n) {
			rc = err_set(msg, ERR_IO, "writing %s: %s", tmp, strerror(errno));
			goto out;
		}
	if (n < 0 || fsync(out)) {
		rc = err_set(msg, ERR_IO, "copying %s: %s", src, strerror(errno));
		goto out;
	}
done:
	if (rename(tmp, dst))
		rc = err_set(msg, ERR_IO, "renaming to %s: %s", dst, strerror(errno));
	else
		debuginfo__fsync_dir(dst);
out:
	free(chunk);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (rc)
		unlink(tmp);
	return rc;
}

int debuginfo__file_hash(const char *path, uint64_t *size, uint64_t *hash)
{
	struct stat sb;
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ERR_IO;
	if (fstat(fd, &sb)) {
		close(fd);
		return ERR_IO;
	}
	*size = (uint64_t)sb.st_size;
	if (sb.st_size == 0) {
		close(fd);
		*hash = hash_bytes("", 0, 0);
		return 0;
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return ERR_IO;
	*hash = hash_bytes(p, (size_t)sb.st_size, 0);
	munmap(p, (size_t)sb.st_size);
	return 0;
}

#define COMPARE_CHUNK 65536

/* Reads exactly n bytes (short only at the end of the file); -1 on error. */
static ssize_t read_full(int fd, char *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = read(fd, p + got, n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

int debuginfo__same_content(const char *a, const char *b, int *same)
{
	struct stat sa, sb;
	char *ba = NULL, *bb = NULL;
	int fa = -1, fb = -1, rc = 0;

	*same = 0;
	if (stat(a, &sa) || stat(b, &sb))
		return ERR_IO;
	if (sa.st_size != sb.st_size)
		return 0;
	fa = open(a, O_RDONLY | O_CLOEXEC);
	fb = open(b, O_RDONLY | O_CLOEXEC);
	/* On the heap: this runs on web worker threads, whose stacks are small. */
	ba = malloc(COMPARE_CHUNK);
	bb = malloc(COMPARE_CHUNK);
	if (fa < 0 || fb < 0 || !ba || !bb) {
		rc = fa < 0 || fb < 0 ? ERR_IO : ERR_NOMEM;
		goto out;
	}
	for (;;) {
		ssize_t na = read_full(fa, ba, COMPARE_CHUNK), nb = read_full(fb, bb, COMPARE_CHUNK);

		if (na < 0 || nb < 0) {
			rc = ERR_IO;
			break;
		}
		if (na != nb || memcmp(ba, bb, (size_t)na) != 0)
			break;
		if (na == 0) {
			*same = 1;
			break;
		}
	}
out:
	free(ba);
	free(bb);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return rc;
}

int debuginfo_file_path_as(struct debuginfo *s, const char *tenant, const char *build_id_hex,
			   enum debuginfo_file_kind kind, char *out, size_t out_len)
{
	char id[DEBUGINFO_HEX_MAX];
	struct debuginfo__meta m;

	if (debuginfo__canon_id(build_id_hex, id, NULL, NULL) ||
	    (unsigned)kind > DEBUGINFO_FILE_EXECUTABLE ||
	    debuginfo__path(s, id, debuginfo__kind_name(kind), out, out_len) ||
	    !debuginfo__file_exists(out))
		return ERR_NOT_FOUND;
	/* A file without a record (a crash between rename and record) is no
	 * tenant's: only the every-tenant view serves it. */
	if (tenant && (debuginfo__meta_get(s, id, &m) || !debuginfo__visible(&m, tenant)))
		return ERR_NOT_FOUND;
	return 0;
}

int debuginfo_file_path(struct debuginfo *s, const char *build_id_hex,
			enum debuginfo_file_kind kind, char *out, size_t out_len)
{
	return debuginfo_file_path_as(s, NULL, build_id_hex, kind, out, out_len);
}

/* ---- temporary files left by a crash ------------------------------------- */

/* "<file>.tmp.<pid>" (debuginfo__install_copy) or "index.XXXXXX" (mkstemp of
 * the index writer): names only a write in progress uses. */
static int is_temp_name(const char *name)
{
	const char *t = strstr(name, ".tmp.");
	size_t n;

	if (t && t != name && t[5]) {
		for (t += 5; *t >= '0' && *t <= '9'; t++)
			;
		if (!*t)
			return 1;
	}
	n = strlen(name);
	if (n == 12 && strncmp(name, "index.", 6) == 0) {
		for (size_t i = 6; i < 12; i++)
			if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'z') ||
			      (name[i] >= 'A' && name[i] <= 'Z')))
				return 0;
		return 1;
	}
	return 0;
}

/* Removes the regular files of `dir` that `pick` selects (NULL: all). */
static void remove_in(const char *dir, int (*pick)(const char *name), uint64_t *n,
		      uint64_t *bytes)
{
	char path[DEBUGINFO__PATH_MAX];
	struct dirent *e;
	struct stat sb;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || (pick && !pick(e->d_name)))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			continue;
		if (lstat(path, &sb) || !S_ISREG(sb.st_mode))
			continue;
		if (unlink(path) == 0) {
			(*n)++;
			*bytes += (uint64_t)sb.st_size;
		} else {
			log_warn("debuginfo: cannot remove the temporary file %s: %s", path,
				 strerror(errno));
		}
	}
	closedir(d);
}

void debuginfo__clean_temp(const struct debuginfo *s, uint64_t *n, uint64_t *bytes)
{
	char path[DEBUGINFO__PATH_MAX], sub[DEBUGINFO__PATH_MAX];
	struct dirent *e, *f;
	DIR *d, *dd;

	*n = *bytes = 0;
	/* Uploads and upstream fetches in progress: nobody else writes here
	 * while this process holds the store (RocksDB's LOCK). */
	snprintf(path, sizeof(path), "%s/tmp", s->dir);
	remove_in(path, NULL, n, bytes);
	/* Files being installed under a build ID: <id[0:2]>/<id>/. */
	d = opendir(s->dir);
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strlen(e->d_name) != 2 || e->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", s->dir, e->d_name) >= (int)sizeof(path))
			continue;
		dd = opendir(path);
		if (!dd)
			continue;
		while ((f = readdir(dd)) != NULL) {
			if (f->d_name[0] == '.')
				continue;
			if (snprintf(sub, sizeof(sub), "%s/%s", path, f->d_name) >= (int)sizeof(sub))
				continue;
			remove_in(sub, is_temp_name, n, bytes);
		}
		closedir(dd);
	}
	closedir(d);
}
