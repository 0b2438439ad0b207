/*
 * objstore.c - the interface of objstore.h over the backends' ops: key
 * checks, counters, and what is the same for every backend.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objstore_int.h"

int objstore_check_key(const char *key, struct err_msg *msg)
{
	size_t n = key ? strlen(key) : 0, comp = 0;

	if (!n || n > OBJSTORE_KEY_MAX)
		return err_set(msg, ERR_INVALID, "object key of %zu bytes (1..%d)", n,
			       OBJSTORE_KEY_MAX);
	for (size_t i = 0; i <= n; i++) {
		unsigned char c = (unsigned char)key[i];

		if (c == '/' || c == '\0') {
			if (comp == 0 || (comp == 1 && key[i - 1] == '.') ||
			    (comp == 2 && key[i - 1] == '.' && key[i - 2] == '.'))
				return err_set(msg, ERR_INVALID,
					       "object key %.64s: empty, \".\" or \"..\" component", key);
			comp = 0;
			continue;
		}
		if (c < 0x21 || c > 0x7e)
			return err_set(msg, ERR_INVALID,
				       "object key %.64s: byte 0x%02x (printable ASCII only)", key, c);
		comp++;
	}
	return 0;
}

int objstore_open_dir(const char *root, struct objstore **out, struct err_msg *msg)
{
	return objstore__open_dir(root, out, msg);
}

int objstore_open_s3(const struct objstore_s3_config *cfg, struct objstore **out,
		     struct err_msg *msg)
{
	return objstore__open_s3(cfg, out, msg);
}

void objstore_close(struct objstore *os)
{
	if (os)
		os->ops->close(os);
}

const char *objstore_kind(const struct objstore *os)
{
	return os->ops->kind;
}

static int failed(struct objstore *os, int rc)
{
	if (rc)
		atomic_fetch_add(&os->failures, 1);
	return rc;
}

int objstore_put(struct objstore *os, const char *key, const void *data, size_t len,
		 unsigned flags, struct err_msg *msg)
{
	int rc = objstore_check_key(key, msg);

	if (!rc)
		rc = os->ops->put(os, key, data, len, flags, msg);
	return failed(os, rc);
}

int objstore_put_file(struct objstore *os, const char *key, const char *path, unsigned flags,
		      struct err_msg *msg)
{
	struct stat st;
	void *map = NULL;
	int fd, rc;

	rc = objstore_check_key(key, msg);
	if (rc)
		return failed(os, rc);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			map = NULL;
			rc = err_set(msg, ERR_IO, "%s: mmap: %s", path, strerror(errno));
			goto out;
		}
	}
	rc = os->ops->put(os, key, map ? map : "", (size_t)st.st_size, flags, msg);
out:
	if (map)
		munmap(map, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	return failed(os, rc);
}

static int read_ranges(struct objstore *os, struct objstore_range *r, size_t n, uint64_t *sizes,
		       struct err_msg *msg)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++)
		rc = objstore_check_key(r[i].key, msg);
	if (!rc)
		rc = os->ops->get_ranges(os, r, n, sizes, msg);
	return failed(os, rc);
}

int objstore_get(struct objstore *os, const char *key, struct buf *out, struct err_msg *msg)
{
	struct objstore_range r = {.key = key, .off = 0, .len = UINT64_MAX, .out = out};

	return read_ranges(os, &r, 1, NULL, msg);
}

int objstore_get_range(struct objstore *os, const char *key, uint64_t off, uint64_t len,
		       struct buf *out, uint64_t *size, struct err_msg *msg)
{
	struct objstore_range r = {.key = key, .off = off, .len = len, .out = out};

	if (!len || off == OBJSTORE__SUFFIX)
		return failed(os, err_set(msg, ERR_INVALID, "%s: an empty range", key));
	return read_ranges(os, &r, 1, size, msg);
}

int objstore_get_suffix(struct objstore *os, const char *key, uint64_t n, struct buf *out,
			uint64_t *size, struct err_msg *msg)
{
	struct objstore_range r = {.key = key, .off = OBJSTORE__SUFFIX, .len = n, .out = out};

	if (!n)
		return failed(os, err_set(msg, ERR_INVALID, "%s: an empty suffix", key));
	return read_ranges(os, &r, 1, size, msg);
}

int objstore_get_ranges(struct objstore *os, struct objstore_range *r, size_t n,
			struct err_msg *msg)
{
	for (size_t i = 0; i < n; i++) {
		r[i].rc = 0;
		if (!r[i].len || r[i].off == OBJSTORE__SUFFIX)
			return failed(os, r[i].rc = err_set(msg, ERR_INVALID, "%s: an empty range",
							     r[i].key ? r[i].key : "(null)"));
	}
	return read_ranges(os, r, n, NULL, msg);
}

int objstore_head(struct objstore *os, const char *key, struct objstore_stat *st,
		  struct err_msg *msg)
{
	int rc = objstore_check_key(key, msg);

	if (!rc)
		rc = os->ops->head(os, key, st, msg);
	return rc == ERR_NOT_FOUND ? rc : failed(os, rc);
}

int objstore_delete(struct objstore *os, const char *key, struct err_msg *msg)
{
	int rc = objstore_check_key(key, msg);

	if (!rc)
		rc = os->ops->del(os, key, msg);
	return failed(os, rc);
}

int objstore_list(struct objstore *os, const char *prefix,
		  int (*fn)(void *arg, const struct objstore_entry *e), void *arg,
		  struct err_msg *msg)
{
	if (!prefix || strlen(prefix) > OBJSTORE_KEY_MAX)
		return failed(os, err_set(msg, ERR_INVALID, "list prefix longer than %d bytes",
					  OBJSTORE_KEY_MAX));
	return os->ops->list(os, prefix, fn, arg, msg);
}

void objstore_stats(const struct objstore *os, struct objstore_stats *out)
{
	struct objstore *o = (struct objstore *)os;

	out->requests = atomic_load(&o->requests);
	out->retries = atomic_load(&o->retries);
	out->failures = atomic_load(&o->failures);
	out->bytes_in = atomic_load(&o->bytes_in);
	out->bytes_out = atomic_load(&o->bytes_out);
}
