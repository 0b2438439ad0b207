/*
 * upload.c - uploads of debug files: streamed into a temporary file under
 * <dir>/tmp, checked (an ELF whose build ID is the claimed one, with
 * symbols, or code for an executable), installed under the build ID with
 * its metadata, and what the previous file of that build ID gave (index,
 * open index, cached frames) dropped.  An upload of a DWZ alt file makes
 * the build IDs waiting for it retry at their next query.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"

int debuginfo_upload_begin(struct debuginfo *s, struct debuginfo_upload **out,
			   struct err_msg *msg)
{
	struct debuginfo_upload *u = calloc(1, sizeof(*u));

	if (!u)
		return err_set(msg, ERR_NOMEM, "out of memory");
	u->s = s;
	snprintf(u->path, sizeof(u->path), "%s/tmp/upload.%d.%llu", s->dir, (int)getpid(),
		 (unsigned long long)atomic_fetch_add(&s->tmp_seq, 1));
	u->fd = open(u->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (u->fd < 0) {
		int rc = err_set(msg, ERR_IO, "cannot create %s: %s", u->path, strerror(errno));

		free(u);
		return rc;
	}
	*out = u;
	return 0;
}

int debuginfo_upload_write(struct debuginfo_upload *u, const void *data, size_t len,
			   struct err_msg *msg)
{
	const char *p = data;

	if (len > u->s->max_upload - u->size)
		return err_set(msg, ERR_TOO_LARGE, "debug info file exceeds the limit of %llu bytes",
			       (unsigned long long)u->s->max_upload);
	while (len) {
		ssize_t n = write(u->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(msg, ERR_IO, "writing the upload: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
		u->size += (uint64_t)n;
	}
	return 0;
}

void debuginfo_upload_abort(struct debuginfo_upload *u)
{
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	unlink(u->path);
	free(u);
}

void debuginfo__drop_derived(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen)
{
	char path[DEBUGINFO__PATH_MAX];

	if (!debuginfo__path(s, id, "index", path, sizeof(path)))
		unlink(path);
	debuginfo__lru_drop(s, id);
	debuginfo__symcache_drop(s, bid, blen);
	/* Last: whoever kept frames of its own drops them from now on. */
	atomic_fetch_add(&s->generation, 1);
}

struct waiting {
	const char *alt_id;
	struct buf ids;       /* NUL-terminated build IDs */
};

static int find_waiting(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct waiting *w = ctx;
	struct debuginfo__meta m;
	int rc;

	if (klen >= DEBUGINFO_HEX_MAX || debuginfo__meta_decode(val, vlen, &m) ||
	    m.status == DEBUGINFO_STATUS_OK || !strstr(m.reason, "alt_not_found") ||
	    !strstr(m.reason, w->alt_id))
		return 0;
	rc = buf_append(&w->ids, key, klen);
	return rc ? rc : buf_putc(&w->ids, '\0');
}

/*
 * `alt_id` was just stored: the build IDs whose index waited for it as
 * their DWZ alt file are retried at their next query instead of after the
 * retry delay.  upload_mu held.
 */
static void retry_waiting(struct debuginfo *s, const char *alt_id)
{
	struct waiting w = { alt_id, { 0 } };

	buf_init(&w.ids, 1u << 20);
	if (!store_aux_scan(s->st, STORE_AUX_DEBUGINFO, "", 0, find_waiting, &w, NULL)) {
		for (size_t at = 0; at < w.ids.len; at += strlen(w.ids.data + at) + 1) {
			const char *id = w.ids.data + at;
			struct debuginfo__meta m;

			if (debuginfo__meta_get(s, id, &m) || m.status == DEBUGINFO_STATUS_OK)
				continue;
			m.retry_at = 0;
			if (debuginfo__meta_put(s, id, &m))
				log_warn("debuginfo: cannot clear the retry time of %s", id);
			else
				log_info("debuginfo: %s: its DWZ alt file %s arrived, retrying", id,
					 alt_id);
		}
	}
	buf_release(&w.ids);
}

static int refuse(struct debuginfo_upload *u, const char *id, enum sym_reason reason, int code,
		  struct debuginfo_upload_result *res, struct err_msg *msg)
{
	struct debuginfo__meta m;

	res->reason = reason;
	atomic_fetch_add(&u->s->uploads_refused, 1);
	/* A refusal explains a hex frame only when no good file is stored. */
	if (id[0] &&
	    (debuginfo__meta_get(u->s, id, &m) || m.status != DEBUGINFO_STATUS_OK || !m.kinds))
		debuginfo__meta_fail(u->s, id, DEBUGINFO_SOURCE_UPLOAD,
				     debuginfo__status_of_reason(reason), 0, msg ? msg->text : "");
	return code;
}

/* Validates the uploaded file as `kind` of build ID `id`; a refusal is recorded. */
static int check_file(struct debuginfo_upload *u, const char *id, const uint8_t *bid,
		      size_t blen, enum debuginfo_file_kind kind, struct sym_elf_info *info,
		      struct debuginfo_upload_result *res, struct err_msg *msg)
{
	enum sym_reason reason = SYM_REASON_OK;
	char have[DEBUGINFO_HEX_MAX];

	if (sym_elf_inspect_file(u->path, info, msg))
		return refuse(u, id, SYM_REASON_INVALID_ELF, ERR_INVALID, res, msg);
	if (info->build_id_len == 0) {
		err_set(msg, ERR_INVALID, "no_build_id: the file has no GNU build ID note");
		return refuse(u, "", SYM_REASON_NO_BUILD_ID, ERR_INVALID, res, msg);
	}
	if (info->build_id_len != blen || memcmp(info->build_id, bid, blen) != 0) {
		sym_build_id_hex(info->build_id, info->build_id_len, have);
		err_set(msg, ERR_CONFLICT, "build ID mismatch: file has %s, claimed %s", have, id);
		return refuse(u, id, SYM_REASON_BUILD_ID_MISMATCH, ERR_CONFLICT, res, msg);
	}
	if (kind == DEBUGINFO_FILE_DEBUGINFO && sym_elf_check(info, NULL, 0, 0, &reason, msg))
		return refuse(u, id, reason, ERR_INVALID, res, msg);
	if (kind == DEBUGINFO_FILE_EXECUTABLE &&
	    (!(info->flags & SYM_HAS_TEXT) || (info->flags & SYM_SEGMENTS_FROM_DEBUG) ||
	     !info->n_segments)) {
		err_set(msg, ERR_INVALID, "invalid_elf: not an executable (no code or no PT_LOAD)");
		return refuse(u, id, SYM_REASON_INVALID_ELF, ERR_INVALID, res, msg);
	}
	return 0;
}

/*
 * Moves the upload to `dst` unless identical content is there already
 * (res->unchanged); *replaced when other content was.  Fills the size and
 * hash of `m` for the file the record describes.  upload_mu held.
 */
static int install(struct debuginfo_upload *u, const char *id, enum debuginfo_file_kind kind,
		   const char *dst, struct debuginfo__meta *m, struct debuginfo_upload_result *res,
		   int *replaced, struct err_msg *msg)
{
	uint64_t size = 0, hash = 0;
	char dir[DEBUGINFO__PATH_MAX];
	int same = 0, rc = debuginfo__file_hash(u->path, &size, &hash);

	/* Identical means the same bytes, compared: equal 64-bit hashes of a
	 * non-cryptographic hash say nothing about a file a client chose, and
	 * a wrong "identical" would keep the old debug info for good. */
	if (!rc && debuginfo__file_exists(dst) && !debuginfo__same_content(u->path, dst, &same)) {
		if (same)
			res->unchanged = 1;
		else
			*replaced = 1;
	}
	if (!rc && (!(m->kinds & (1u << DEBUGINFO_FILE_DEBUGINFO)) ||
		    kind == DEBUGINFO_FILE_DEBUGINFO)) {
		m->size = size;
		m->hash = hash;
	}
	if (rc || res->unchanged)
		return rc;
	debuginfo__path(u->s, id, NULL, dir, sizeof(dir));
	rc = debuginfo__mkdir_p(dir);
	if (rc)
		return err_set(msg, rc, "cannot create %s: %s", dir, strerror(errno));
	if (rename(u->path, dst))
		return err_set(msg, ERR_IO, "cannot store %s: %s", dst, strerror(errno));
	debuginfo__fsync_dir(dst);
	return 0;
}

int debuginfo_upload_commit(struct debuginfo_upload *u, const char *build_id_hex,
			    enum debuginfo_file_kind kind, struct debuginfo_upload_result *res,
			    struct err_msg *msg)
{
	struct debuginfo *s = u->s;
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t blen;
	char id[DEBUGINFO_HEX_MAX], dst[DEBUGINFO__PATH_MAX], exe[DEBUGINFO__PATH_MAX];
	struct sym_elf_info info;
	struct debuginfo__meta m;
	int rc, had_meta, replaced = 0;

	assert(u && res && (kind == DEBUGINFO_FILE_DEBUGINFO || kind == DEBUGINFO_FILE_EXECUTABLE));
	memset(res, 0, sizeof(*res));
	res->size = u->size;
	if (debuginfo__canon_id(build_id_hex, id, bid, &blen)) {
		rc = err_set(msg, ERR_INVALID, "\"%.100s\" is not a hex build ID", build_id_hex);
		goto out;
	}
	if (fsync(u->fd)) {
		rc = err_set(msg, ERR_IO, "fsync of the upload: %s", strerror(errno));
		goto out;
	}
	if ((rc = check_file(u, id, bid, blen, kind, &info, res, msg)))
		goto out;

	pthread_mutex_lock(&s->upload_mu);
	had_meta = debuginfo__meta_get(s, id, &m) == 0;
	if (!had_meta)
		memset(&m, 0, sizeof(m));
	rc = debuginfo__path(s, id, debuginfo__kind_name(kind), dst, sizeof(dst));
	if (!rc)
		rc = install(u, id, kind, dst, &m, res, &replaced, msg);
	if (!rc) {
		m.kinds |= 1u << kind;
		/* An unstripped binary is its own executable: its program headers
		 * give exact file offsets, and /buildid/<id>/executable serves it. */
		if (kind == DEBUGINFO_FILE_DEBUGINFO && (info.flags & SYM_HAS_TEXT) &&
		    !(info.flags & SYM_SEGMENTS_FROM_DEBUG) &&
		    !debuginfo__path(s, id, "executable", exe, sizeof(exe)) &&
		    (!debuginfo__file_exists(exe) || replaced) &&
		    !debuginfo__install_copy(dst, exe, NULL))
			m.kinds |= 1u << DEBUGINFO_FILE_EXECUTABLE;
		if (replaced || (had_meta && m.status != DEBUGINFO_STATUS_OK))
			debuginfo__drop_derived(s, id, bid, blen);
		m.source = DEBUGINFO_SOURCE_UPLOAD;
		m.status = DEBUGINFO_STATUS_OK;
		m.reason[0] = '\0';
		m.retry_at = 0;
		if (!res->unchanged || !m.uploaded)
			m.uploaded = clock_wall_ns();
		if (!res->unchanged)
			debuginfo__touch_forget(s, bid, blen);
		rc = debuginfo__meta_put(s, id, &m);
		if (rc)
			err_set(msg, rc, "cannot record the metadata of %s", id);
		else if (!res->unchanged)
			retry_waiting(s, id);
	}
	pthread_mutex_unlock(&s->upload_mu);
	if (!rc) {
		res->kinds = m.kinds;
		atomic_fetch_add(&s->uploads_ok, 1);
		log_info("debuginfo: %s %s for %s (%llu bytes)",
			 res->unchanged ? "kept identical" : replaced ? "replaced" : "stored",
			 debuginfo__kind_name(kind), id, (unsigned long long)u->size);
	}
out:
	debuginfo_upload_abort(u);
	return rc;
}
