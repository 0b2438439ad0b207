/*
 * verify.c - debuginfo_verify_files(): every stored debug file read whole
 * and its SHA-256 and size compared with its metadata record, for `unhex
 * verify`.  Needs only the store, not an open service (no workers, no
 * directories created), so it runs on a read-only store next to a server.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/sha256.h"
#include "storage/storage.h"
#include "debuginfo_int.h"

struct vfy {
	const char *data_dir;
	debuginfo_verify_fn fn;
	void *ctx;
	int bad;
};

static int check_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct vfy *v = ctx;
	struct debuginfo__meta m;
	struct debuginfo_file_check c;
	char id[DEBUGINFO_HEX_MAX], path[DEBUGINFO__PATH_MAX], why[160];
	uint8_t sum[SHA256_LEN];
	uint64_t size = 0;
	enum debuginfo_file_kind kind;

	memset(&c, 0, sizeof(c));
	if (klen >= DEBUGINFO_HEX_MAX)
		return 0; /* no canonical build ID: not a record of ours */
	memcpy(id, key, klen);
	id[klen] = 0;
	c.build_id = id;
	c.path = "";
	if (debuginfo__meta_decode(val, vlen, &m)) {
		c.error = "its metadata record does not decode";
		v->bad = 1;
		return v->fn(v->ctx, &c);
	}
	if (!(m.kinds & 7u))
		return 0; /* a lookup that found nothing: no file to check */
	/* The file the record's size and hash describe (upload.c, install). */
	kind = m.kinds & 1u << DEBUGINFO_FILE_DEBUGINFO	   ? DEBUGINFO_FILE_DEBUGINFO
	       : m.kinds & 1u << DEBUGINFO_FILE_EXECUTABLE ? DEBUGINFO_FILE_EXECUTABLE
							   : DEBUGINFO_FILE_KALLSYMS;
	snprintf(path, sizeof(path), "%s/debuginfo/%.2s/%s/%s", v->data_dir, id, id,
		 debuginfo__kind_name(kind));
	c.path = path;
	c.size = m.size;
	c.checked = m.has_sha256;
	if (sha256_file(path, sum, &size)) {
		snprintf(why, sizeof(why), "cannot read it: %s", errno ? strerror(errno) : "I/O error");
		c.error = why;
	} else if (size != m.size) {
		snprintf(why, sizeof(why), "%llu bytes where its record says %llu",
			 (unsigned long long)size, (unsigned long long)m.size);
		c.error = why;
	} else if (m.has_sha256 && !sha256_equal(sum, m.sha256)) {
		c.error = "SHA-256 mismatch: the file changed since it was stored";
	}
	if (c.error)
		v->bad = 1;
	return v->fn(v->ctx, &c);
}

int debuginfo_verify_files(struct store *st, const char *data_dir, debuginfo_verify_fn fn,
			   void *ctx, struct err_msg *msg)
{
	struct vfy v = { data_dir, fn, ctx, 0 };
	int rc = store_aux_scan(st, STORE_AUX_DEBUGINFO, "", 0, check_one, &v, msg);

	if (!rc && v.bad)
		rc = err_set(msg, ERR_CORRUPT, "some debug files are damaged or missing");
	return rc;
}
