/*
 * upload.c - uploads of debug files: streamed into a temporary file under
 * <dir>/tmp, checked (a well-formed ELF whose build ID is the claimed one,
 * with symbols, or code for an executable), and installed under the build
 * ID with its metadata, under the trust rules of debuginfo.h: the first
 * upload wins, the same bytes again only add their uploader to the
 * owners, and other bytes replace the file only when asked to by someone
 * allowed to (then what the previous file gave - index, open index,
 * cached frames - is dropped, and the replacement is logged with both
 * SHA-256s).  An upload of a DWZ alt file makes the build IDs waiting for
 * it retry at their next query.  Messages never carry server paths: those
 * go to the log.
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
#include "base/sha256.h"
#include "debuginfo_int.h"
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
		log_error("debuginfo: cannot create %s: %s", u->path, strerror(errno));
		free(u);
		return err_set(msg, ERR_IO, "cannot store the upload: %s (the server log says more)",
			       strerror(errno));
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
			return err_set(msg, ERR_IO, "cannot store the upload: %s", strerror(errno));
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

/*
 * Counts a refused upload.  Nothing is written to the store: the uploader
 * reads why in the answer, and a client's garbage must leave no records
 * behind (nor explain another tenant's frames).
 */
static int refuse(struct debuginfo_upload *u, enum sym_reason reason, int code,
		  struct debuginfo_upload_result *res)
{
	res->reason = reason;
	atomic_fetch_add(&u->s->uploads_refused, 1);
	return code;
}

/*
 * Validates a kernel symbol map.  Its build ID cannot be checked: the map
 * carries none, the uploader names the kernel's.
 */
static int check_kallsyms(struct debuginfo_upload *u, struct debuginfo_upload_result *res,
			  struct err_msg *msg)
{
	struct err_msg why;
	struct buf b;
	int rc;

	err_clear(&why);
	buf_init(&b, SYM_KALLSYMS_MAX_BYTES);
	rc = buf_read_file(&b, u->path);
	if (rc == ERR_TOO_LARGE)
		err_set(msg, rc, "a kernel symbol map is at most %u bytes", SYM_KALLSYMS_MAX_BYTES);
	else if (rc)
		err_set(msg, rc, "cannot read the kernel symbol map back: %s",
			rc == ERR_IO ? strerror(errno) : err_str(rc));
	else if ((rc = sym_kallsyms_check(b.data, b.len, NULL, &why)))
		err_set(msg, rc, "invalid kernel symbol map: %s", why.text);
	buf_release(&b);
	if (rc == ERR_INVALID || rc == ERR_TOO_LARGE)
		return refuse(u, SYM_REASON_INVALID_ELF, rc, res);
	return rc;
}

/* Validates the uploaded file as `kind` of build ID `id`. */
static int check_file(struct debuginfo_upload *u, const char *id, const uint8_t *bid,
		      size_t blen, enum debuginfo_file_kind kind, struct sym_elf_info *info,
		      struct debuginfo_upload_result *res, struct err_msg *msg)
{
	enum sym_reason reason = SYM_REASON_OK;
	char have[DEBUGINFO_HEX_MAX];

	memset(info, 0, sizeof(*info));
	if (kind == DEBUGINFO_FILE_KALLSYMS)
		return check_kallsyms(u, res, msg);
	if (sym_elf_inspect_file(u->path, info, msg))
		return refuse(u, SYM_REASON_INVALID_ELF, ERR_INVALID, res);
	if (info->build_id_len == 0) {
		err_set(msg, ERR_INVALID, "no_build_id: the file has no GNU build ID note");
		return refuse(u, SYM_REASON_NO_BUILD_ID, ERR_INVALID, res);
	}
	if (info->build_id_len != blen || memcmp(info->build_id, bid, blen) != 0) {
		sym_build_id_hex(info->build_id, info->build_id_len, have);
		err_set(msg, ERR_CONFLICT, "build ID mismatch: file has %s, claimed %s", have, id);
		return refuse(u, SYM_REASON_BUILD_ID_MISMATCH, ERR_CONFLICT, res);
	}
	if (kind == DEBUGINFO_FILE_DEBUGINFO && sym_elf_check(info, NULL, 0, 0, &reason, msg))
		return refuse(u, reason, ERR_INVALID, res);
	if (kind == DEBUGINFO_FILE_EXECUTABLE &&
	    (!(info->flags & SYM_HAS_TEXT) || (info->flags & SYM_SEGMENTS_FROM_DEBUG) ||
	     !info->n_segments)) {
		err_set(msg, ERR_INVALID, "invalid_elf: not an executable (no code or no PT_LOAD)");
		return refuse(u, SYM_REASON_INVALID_ELF, ERR_INVALID, res);
	}
	return 0;
}

/* The first 8 bytes of a SHA-256, big endian: the record's informational hash. */
static uint64_t short_hash(const uint8_t d[SHA256_LEN])
{
	uint64_t h = 0;

	for (int i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return h;
}

/*
 * Whether `by` may store a file of `kind` for the record `m` (had_meta:
 * it exists), given what is at `dst` now (*exists, *same: the same bytes).
 * 0, ERR_CONFLICT (other bytes came first, or the build ID's files belong
 * to other tenants) or ERR_PERMISSION (a replacement by someone who may
 * not).  upload_mu held.
 */
static int may_store(const struct debuginfo_upload_by *by, const char *id,
		     const struct debuginfo__meta *m, int exists, int same, struct err_msg *msg)
{
	const char *tenant = by ? by->tenant : NULL;
	int mine = debuginfo__visible(m, tenant), others = m->kinds && !mine;

	if (same && (!others || (m->owners[0] && strcmp(m->owners, "*") != 0)))
		return 0;
	if (exists && !same && !(by && by->replace))
		return err_set(msg, ERR_CONFLICT,
			       "build ID %s already has other debug info (the first upload wins); "
			       "replacing it needs an admin token and ?replace=true", id);
	if (exists && !same && tenant && (others || strcmp(m->owners, tenant) != 0))
		return err_set(msg, ERR_PERMISSION,
			       "the debug info of build ID %s is not this tenant's alone; only an "
			       "all-tenants admin token may replace it", id);
	if (others)
		return err_set(msg, ERR_CONFLICT,
			       "build ID %s already has debug info of another tenant", id);
	return 0;
}

int debuginfo__owner_add(struct debuginfo__meta *m, const char *tenant, const char *id,
			 struct err_msg *msg)
{
	size_t n = strlen(m->owners), k;

	if (!tenant) {
		snprintf(m->owners, sizeof(m->owners), "*");
		return 0;
	}
	if (strcmp(m->owners, "*") == 0 || debuginfo__owner_has(m->owners, tenant))
		return 0;
	k = strlen(tenant);
	if (n + (n > 0) + k >= sizeof(m->owners))
		return err_set(msg, ERR_CONFLICT,
			       "build ID %s: too many tenants uploaded this file; upload it with an "
			       "all-tenants token to share it with everyone", id);
	if (n)
		m->owners[n++] = ',';
	memcpy(m->owners + n, tenant, k + 1);
	return 0;
}

/* Logs a stored or replaced file: who, from where, when, which bytes. */
static void log_install(const struct debuginfo_upload_by *by, const char *id,
			enum debuginfo_file_kind kind, int replaced, const uint8_t old[SHA256_LEN],
			const uint8_t new_d[SHA256_LEN], uint64_t size)
{
	char oh[SHA256_HEX_LEN + 1] = "?", nh[SHA256_HEX_LEN + 1];
	const char *name = by && by->name ? by->name : "server";
	const char *tenant = by && by->tenant ? by->tenant : "*";
	const char *from = by && by->from ? by->from : "local";

	sha256_hex(new_d, nh);
	if (!replaced) {
		log_info("debuginfo: stored %s for %s (%llu bytes, sha256 %s) from token %s, "
			 "tenant %s, %s", debuginfo__kind_name(kind), id, (unsigned long long)size,
			 nh, name, tenant, from);
		return;
	}
	if (old)
		sha256_hex(old, oh);
	log_warn("debuginfo: REPLACED %s of %s by token %s, tenant %s, from %s at %lld ms: "
		 "sha256 %s -> %s (%llu bytes)", debuginfo__kind_name(kind), id, name, tenant,
		 from, (long long)(clock_wall_ns() / 1000000), oh, nh, (unsigned long long)size);
}

/*
 * Moves the upload to `dst`; fills the size and hashes of `m` for the file
 * the record describes.  upload_mu held.
 */
static int install(struct debuginfo_upload *u, const char *id, enum debuginfo_file_kind kind,
		   const char *dst, const uint8_t d[SHA256_LEN], struct debuginfo__meta *m,
		   struct err_msg *msg)
{
	char dir[DEBUGINFO__PATH_MAX];
	int rc;

	/* The record describes the first file of debuginfo, executable, kallsyms. */
	if (!(m->kinds & ((1u << kind) - 1))) {
		m->size = u->size;
		m->hash = short_hash(d);
		memcpy(m->sha256, d, SHA256_LEN);
		m->has_sha256 = 1;
	}
	debuginfo__path(u->s, id, NULL, dir, sizeof(dir));
	rc = debuginfo__mkdir_p(dir);
	if (rc) {
		log_error("debuginfo: cannot create %s: %s", dir, strerror(errno));
		return err_set(msg, rc, "cannot store the upload: %s", strerror(errno));
	}
	if (rename(u->path, dst)) {
		log_error("debuginfo: cannot rename %s to %s: %s", u->path, dst, strerror(errno));
		return err_set(msg, ERR_IO, "cannot store the upload: %s", strerror(errno));
	}
	debuginfo__fsync_dir(dst);
	return 0;
}

/* What is at `dst` now: *exists, *same (the same bytes as the upload), *old its SHA-256. */
static int compare_stored(struct debuginfo_upload *u, const char *dst, int *exists, int *same,
			  uint8_t old[SHA256_LEN], struct err_msg *msg)
{
	*exists = debuginfo__file_exists(dst);
	*same = 0;
	/* Identical means the same bytes, compared: a wrong "identical" would
	 * keep the old debug info for good. */
	if (*exists && debuginfo__same_content(u->path, dst, same)) {
		log_error("debuginfo: cannot compare the upload with %s", dst);
		return err_set(msg, ERR_IO, "cannot read the stored debug info");
	}
	if (*exists && !*same && sha256_file(dst, old, NULL))
		memset(old, 0, SHA256_LEN);
	return 0;
}

int debuginfo__upload_commit(struct debuginfo_upload *u, const char *build_id_hex,
			     enum debuginfo_file_kind kind, const struct debuginfo_upload_by *by,
			     int from_bucket, struct debuginfo_upload_result *res,
			     struct err_msg *msg)
{
	struct debuginfo *s = u->s;
	char owners[DEBUGINFO__OWNERS_MAX];
	uint8_t bid[SYM_BUILD_ID_MAX], d[SHA256_LEN], old[SHA256_LEN];
	size_t blen;
	char id[DEBUGINFO_HEX_MAX], dst[DEBUGINFO__PATH_MAX], exe[DEBUGINFO__PATH_MAX];
	struct sym_elf_info info;
	struct debuginfo__meta m;
	int rc, had_meta, exists = 0, same = 0, replaced = 0;

	assert(u && res && (unsigned)kind <= DEBUGINFO_FILE_KALLSYMS);
	memset(res, 0, sizeof(*res));
	res->size = u->size;
	if (debuginfo__canon_id(build_id_hex, id, bid, &blen)) {
		rc = err_set(msg, ERR_INVALID, "\"%.100s\" is not a hex build ID", build_id_hex);
		goto out;
	}
	if (fsync(u->fd)) {
		rc = err_set(msg, ERR_IO, "cannot store the upload: %s", strerror(errno));
		goto out;
	}
	if ((rc = check_file(u, id, bid, blen, kind, &info, res, msg)))
		goto out;
	if (sha256_file(u->path, d, NULL)) {
		rc = err_set(msg, ERR_IO, "cannot read the upload back: %s", strerror(errno));
		goto out;
	}

	pthread_mutex_lock(&s->upload_mu);
	had_meta = debuginfo__meta_get(s, id, &m) == 0;
	if (!had_meta)
		memset(&m, 0, sizeof(m));
	rc = debuginfo__path(s, id, debuginfo__kind_name(kind), dst, sizeof(dst));
	if (!rc)
		rc = compare_stored(u, dst, &exists, &same, old, msg);
	if (!rc)
		rc = may_store(by, id, &m, exists, same, msg);
	/* A map renames every frame of its build ID: never a program's. */
	if (!rc && kind == DEBUGINFO_FILE_KALLSYMS &&
	    (m.kinds & (1u << DEBUGINFO_FILE_DEBUGINFO | 1u << DEBUGINFO_FILE_EXECUTABLE)))
		rc = err_set(msg, ERR_CONFLICT,
			     "build ID %s has an ELF file: a kernel symbol map is for the build "
			     "ID of a kernel (perf buildid-list -k)", id);
	memcpy(owners, m.owners, sizeof(owners));
	if (!rc && exists && !same && by && by->tenant) /* a replacement: its tenant's alone now */
		m.owners[0] = '\0';
	if (!rc)
		rc = debuginfo__owner_add(&m, by ? by->tenant : NULL, id, msg);
	res->unchanged = same;
	replaced = exists && !same;
	if (!rc && !same)
		rc = install(u, id, kind, dst, d, &m, msg);
	if (!rc) {
		unsigned had_kinds = m.kinds;

		m.kinds |= 1u << kind;
		/* An unstripped binary is its own executable: its program headers
		 * give exact file offsets, and /buildid/<id>/executable serves it. */
		if (kind == DEBUGINFO_FILE_DEBUGINFO && !same && (info.flags & SYM_HAS_TEXT) &&
		    !(info.flags & SYM_SEGMENTS_FROM_DEBUG) &&
		    !debuginfo__path(s, id, "executable", exe, sizeof(exe)) &&
		    (!debuginfo__file_exists(exe) || replaced) &&
		    !debuginfo__install_copy(dst, exe, NULL))
			m.kinds |= 1u << DEBUGINFO_FILE_EXECUTABLE;
		/* A new executable names the PLT stubs a .debug file cannot, and a
		 * debug file after an executable alone brings DWARF, which wins
		 * over a Go executable's .gopclntab and its symbol tables: the
		 * index built without it is rebuilt. */
		if (replaced || (had_meta && m.status != DEBUGINFO_STATUS_OK) ||
		    (kind == DEBUGINFO_FILE_KALLSYMS && !same) ||
		    (kind == DEBUGINFO_FILE_DEBUGINFO && !same &&
		     (had_kinds & (1u << DEBUGINFO_FILE_EXECUTABLE))) ||
		    (kind == DEBUGINFO_FILE_EXECUTABLE && !same &&
		     (m.kinds & (1u << DEBUGINFO_FILE_DEBUGINFO)))) {
			debuginfo__drop_derived(s, id, bid, blen);
			m.bucket &= ~DEBUGINFO__BUCKET_INDEX;
		}
		/* New bytes, or new owners, go to the bucket under each owner's
		 * key (bucket.c); bytes from the bucket are there already. */
		if (from_bucket)
			m.bucket |= 1u << kind;
		else if (!same || strcmp(owners, m.owners) != 0)
			m.bucket &= ~(1u << kind);
		if ((m.kinds & ~had_kinds) & (1u << DEBUGINFO_FILE_EXECUTABLE) &&
		    kind != DEBUGINFO_FILE_EXECUTABLE)
			m.bucket &= ~(1u << DEBUGINFO_FILE_EXECUTABLE);
		/* The same bytes again keep what the index build noted (build.c). */
		if (!same || m.status != DEBUGINFO_STATUS_OK)
			m.reason[0] = '\0';
		m.source = DEBUGINFO_SOURCE_UPLOAD;
		m.status = DEBUGINFO_STATUS_OK;
		m.retry_at = 0;
		if (!same || !m.uploaded)
			m.uploaded = clock_wall_ns();
		if (!same)
			debuginfo__touch_forget(s, bid, blen);
		rc = debuginfo__meta_put(s, id, &m);
		if (rc)
			err_set(msg, rc, "cannot record the metadata of %s", id);
		else if (!same)
			retry_waiting(s, id);
	}
	pthread_mutex_unlock(&s->upload_mu);
	if (!rc) {
		res->kinds = m.kinds;
		if (!from_bucket)
			atomic_fetch_add(&s->uploads_ok, 1);
		debuginfo__unsym_wake(s);
		debuginfo__bucket_wake(s);
		if (!same)
			log_install(by, id, kind, replaced, replaced ? old : NULL, d, u->size);
	} else if ((rc == ERR_CONFLICT || rc == ERR_PERMISSION) && !from_bucket) {
		atomic_fetch_add(&s->uploads_refused, 1);
		log_info("debuginfo: upload of %s for %s refused (token %s, tenant %s): %s",
			 debuginfo__kind_name(kind), id, by && by->name ? by->name : "server",
			 by && by->tenant ? by->tenant : "*", msg ? msg->text : "");
	}
out:
	debuginfo_upload_abort(u);
	return rc;
}

int debuginfo_upload_commit_as(struct debuginfo_upload *u, const char *build_id_hex,
			       enum debuginfo_file_kind kind, const struct debuginfo_upload_by *by,
			       struct debuginfo_upload_result *res, struct err_msg *msg)
{
	return debuginfo__upload_commit(u, build_id_hex, kind, by, 0, res, msg);
}

int debuginfo_upload_commit(struct debuginfo_upload *u, const char *build_id_hex,
			    enum debuginfo_file_kind kind, struct debuginfo_upload_result *res,
			    struct err_msg *msg)
{
	return debuginfo_upload_commit_as(u, build_id_hex, kind, NULL, res, msg);
}
