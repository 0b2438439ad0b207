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
		atomic_fetch_add_explicit(&os->failures, 1, memory_order_relaxed);
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

int objstore_get_if_changed(struct objstore *os, const char *key, const char *etag,
			    struct buf *out, char *etag_out, int *changed, struct err_msg *msg)
{
	int rc = objstore_check_key(key, msg);

	/* The tag goes into a header: one token of printable ASCII, no quote. */
	for (size_t i = 0; !rc && etag && etag[i]; i++)
		if ((unsigned char)etag[i] < 0x21 || (unsigned char)etag[i] > 0x7e ||
		    etag[i] == '"' || i + 1 >= OBJSTORE_ETAG_MAX)
			rc = err_set(msg, ERR_INVALID, "%s: entity tag %.16s... is not one", key,
				     etag);
	if (!rc)
		rc = os->ops->get_if(os, key, etag && etag[0] ? etag : NULL, out, etag_out, changed,
				     msg);
	return failed(os, rc);
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

static const char *const op_names[OBJSTORE_OP_COUNT] = {
	"put", "part", "get", "range_get", "head", "delete", "list",
};

static const char *const result_names[OBJSTORE_RES_COUNT] = {
	"ok", "not_found", "conflict", "error", "not_modified",
};

const char *objstore_op_name(enum objstore_op op)
{
	return (unsigned)op < OBJSTORE_OP_COUNT ? op_names[op] : "unknown";
}

const char *objstore_result_name(enum objstore_result r)
{
	return (unsigned)r < OBJSTORE_RES_COUNT ? result_names[r] : "unknown";
}

void objstore__count(struct objstore *os, enum objstore_op op, int rc, int retried,
		     uint64_t bytes_in, uint64_t bytes_out)
{
	struct objstore__counters *c = &os->op[op];
	enum objstore_result r = !rc ? OBJSTORE_RES_OK
				 : rc == OBJSTORE__NOT_MODIFIED ? OBJSTORE_RES_NOT_MODIFIED
				 : rc == ERR_NOT_FOUND ? OBJSTORE_RES_NOT_FOUND
				 : rc == ERR_CONFLICT ? OBJSTORE_RES_CONFLICT
						      : OBJSTORE_RES_ERROR;

	atomic_fetch_add_explicit(&c->requests[r], 1, memory_order_relaxed);
	if (retried)
		atomic_fetch_add_explicit(&c->retries, 1, memory_order_relaxed);
	if (bytes_in)
		atomic_fetch_add_explicit(&c->bytes_in, bytes_in, memory_order_relaxed);
	if (bytes_out)
		atomic_fetch_add_explicit(&c->bytes_out, bytes_out, memory_order_relaxed);
}

void objstore_stats(const struct objstore *os, struct objstore_stats *out)
{
	struct objstore *o = (struct objstore *)os;

	for (int i = 0; i < OBJSTORE_OP_COUNT; i++) {
		struct objstore__counters *c = &o->op[i];
		struct objstore_op_stats *d = &out->op[i];

		for (int r = 0; r < OBJSTORE_RES_COUNT; r++)
			d->requests[r] = atomic_load_explicit(&c->requests[r], memory_order_relaxed);
		d->retries = atomic_load_explicit(&c->retries, memory_order_relaxed);
		d->bytes_in = atomic_load_explicit(&c->bytes_in, memory_order_relaxed);
		d->bytes_out = atomic_load_explicit(&c->bytes_out, memory_order_relaxed);
	}
	out->failures = atomic_load_explicit(&o->failures, memory_order_relaxed);
}

void objstore_stats_total(const struct objstore_stats *st, struct objstore_op_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < OBJSTORE_OP_COUNT; i++) {
		for (int r = 0; r < OBJSTORE_RES_COUNT; r++)
			out->requests[r] += st->op[i].requests[r];
		out->retries += st->op[i].retries;
		out->bytes_in += st->op[i].bytes_in;
		out->bytes_out += st->op[i].bytes_out;
	}
}
