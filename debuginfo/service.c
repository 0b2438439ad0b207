/*
 * service.c - the debug-info service: the debug-file store and its
 * metadata, uploads, background workers that fetch from debuginfod and build
 * indexes (one job per build ID at a time), the LRU of open indexes, the
 * persisted symbol cache, and batch resolution for the query path.  Formats
 * and file layout are documented in debuginfo_int.h, the flow in
 * docs/symbolization.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/varint.h"
#include "storage/storage.h"
#include "debuginfo/debuginfo_int.h"

#define TOUCH_EVERY_NS (60LL * 1000000000)

/* ---- open / close --------------------------------------------------------- */

int debuginfo_open(struct store *st, const struct debuginfo_options *opt,
		     struct debuginfo **out, struct err_msg *msg)
{
	struct debuginfo *s;
	char path[4096], cache[4096], timeout[32];
	int workers;

	if (!opt || !opt->data_dir || !opt->data_dir[0])
		return err_set(msg, ERR_INVALID, "symbolize: a data directory is required");
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(msg, ERR_NOMEM, "out of memory");
	debuginfo__hot_init(&s->hot);
	s->st = st;
	snprintf(path, sizeof(path), "%s/debuginfo", opt->data_dir);
	s->dir = strdup(path);
	s->retry_ns = opt->retry_ns > 0 ? opt->retry_ns : 600LL * 1000000000LL;
	s->budget_ns = opt->budget_ns > 0 ? opt->budget_ns : 5LL * 1000000000LL;
	s->fetch_timeout_ns = (opt->fetch_timeout_s > 0 ? opt->fetch_timeout_s : 30) * 1000000000LL;
	s->max_upload = opt->max_upload_bytes ? opt->max_upload_bytes : (uint64_t)2 << 30;
	s->max_open = opt->max_open ? opt->max_open : 32;
	snprintf(path, sizeof(path), "%s/debuginfo/tmp", opt->data_dir);
	if (!s->dir || debuginfo__lru_init(s) || debuginfo__mkdir_p(path)) {
		int rc = err_set(msg, s->dir && s->lru ? ERR_IO : ERR_NOMEM,
				 "symbolize: cannot create %s: %s", path, strerror(errno));
		free(s->lru);
		free(s->dir);
		free(s);
		return rc;
	}
	if (opt->debuginfod_urls && opt->debuginfod_urls[0]) {
		snprintf(cache, sizeof(cache), "%s",
			 opt->cache_dir ? opt->cache_dir : "");
		if (!opt->cache_dir)
			snprintf(cache, sizeof(cache), "%s/debuginfod-cache", opt->data_dir);
		snprintf(timeout, sizeof(timeout), "%lld",
			 (long long)(s->fetch_timeout_ns / 1000000000LL));
		debuginfo__mkdir_p(cache);
		setenv("DEBUGINFOD_URLS", opt->debuginfod_urls, 1);
		setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
		setenv("DEBUGINFOD_TIMEOUT", timeout, 1);
		s->upstream = 1;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->upload_mu, NULL);
	pthread_mutex_init(&s->touch_mu, NULL);
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	workers = opt->workers > 0 ? opt->workers : 2;
	if (workers > DEBUGINFO__MAX_WORKERS)
		workers = DEBUGINFO__MAX_WORKERS;
	if (debuginfo__jobs_start(s, workers)) {
		debuginfo_close(s);
		return err_set(msg, ERR_UNAVAILABLE, "symbolize: cannot start a worker thread");
	}
	*out = s;
	return 0;
}

void debuginfo_close(struct debuginfo *s)
{
	if (!s)
		return;
	debuginfo__jobs_stop(s);
	debuginfo__lru_release(s);
	pthread_cond_destroy(&s->work_cv);
	pthread_cond_destroy(&s->done_cv);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->upload_mu);
	pthread_mutex_destroy(&s->touch_mu);
	debuginfo__hot_release(&s->hot);
	free(s->dir);
	free(s);
}

int64_t debuginfo_budget_ns(const struct debuginfo *s)
{
	return s->budget_ns;
}

uint64_t debuginfo_max_upload(const struct debuginfo *s)
{
	return s->max_upload;
}

void debuginfo_stats(struct debuginfo *s, struct debuginfo_stats *o)
{
	o->index_builds = atomic_load(&s->index_builds);
	o->index_opens = atomic_load(&s->index_opens);
	o->cache_hits = atomic_load(&s->cache_hits);
	o->cache_misses = atomic_load(&s->cache_misses);
	o->fetches_ok = atomic_load(&s->fetches_ok);
	o->fetches_not_found = atomic_load(&s->fetches_not_found);
	o->fetches_error = atomic_load(&s->fetches_error);
	o->uploads_ok = atomic_load(&s->uploads_ok);
	o->uploads_refused = atomic_load(&s->uploads_refused);
}

/* ---- uploads ----------------------------------------------------------------- */

int debuginfo_upload_begin(struct debuginfo *s, struct debuginfo_upload **out, struct err_msg *msg)
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

int debuginfo_upload_write(struct debuginfo_upload *u, const void *data, size_t len, struct err_msg *msg)
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

/* Drops the derived state of `id` (index, LRU entry, cached frames). */
static void drop_derived(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen)
{
	char path[DEBUGINFO__PATH_MAX];

	if (!debuginfo__path(s, id, "index", path, sizeof(path)))
		unlink(path);
	debuginfo__lru_drop(s, id);
	debuginfo__symcache_drop(s, bid, blen);
	/* Last: whoever kept frames of its own drops them from now on. */
	atomic_fetch_add(&s->generation, 1);
}

uint64_t debuginfo_generation(const struct debuginfo *s)
{
	return atomic_load(&((struct debuginfo *)s)->generation);
}

/* The next use of `bid` is recorded again (its file just changed). */
static void touch_forget(struct debuginfo *s, const uint8_t *bid, size_t blen)
{
	uint64_t h = hash_bytes(bid, blen, 0);
	struct debuginfo__touch_slot *t = &s->touched[h % DEBUGINFO__TOUCH_SLOTS];

	pthread_mutex_lock(&s->touch_mu);
	if (t->hash == h)
		t->written = 0;
	pthread_mutex_unlock(&s->touch_mu);
}

void debuginfo_touch(struct debuginfo *s, const char *build_id_hex)
{
	uint8_t bid[SYM_BUILD_ID_MAX];
	char id[DEBUGINFO_HEX_MAX];
	int64_t now = clock_wall_ns();
	struct debuginfo__touch_slot *t;
	struct debuginfo__meta m;
	uint64_t h;
	size_t blen;

	if (debuginfo__canon_id(build_id_hex, id, bid, &blen))
		return;
	h = hash_bytes(bid, blen, 0);
	t = &s->touched[h % DEBUGINFO__TOUCH_SLOTS];
	pthread_mutex_lock(&s->touch_mu);
	if (t->hash == h && now - t->written < TOUCH_EVERY_NS) {
		pthread_mutex_unlock(&s->touch_mu);
		return;
	}
	t->hash = h;
	t->written = now;
	pthread_mutex_unlock(&s->touch_mu);
	/* upload_mu orders this read-modify-write against uploads; when an
	 * upload holds it, this minute's touch is skipped, not waited for. */
	if (pthread_mutex_trylock(&s->upload_mu)) {
		touch_forget(s, bid, blen);
		return;
	}
	if (!debuginfo__meta_get(s, id, &m) && m.status == DEBUGINFO_STATUS_OK) {
		m.last_used = now;
		if (debuginfo__meta_put(s, id, &m))
			log_warn("symbolize: cannot record the last use of %s", id);
	}
	pthread_mutex_unlock(&s->upload_mu);
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

	if (klen >= DEBUGINFO_HEX_MAX || debuginfo__meta_decode(val, vlen, &m) || m.status == DEBUGINFO_STATUS_OK ||
	    !strstr(m.reason, "alt_not_found") || !strstr(m.reason, w->alt_id))
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
				log_warn("symbolize: cannot clear the retry time of %s", id);
			else
				log_info("symbolize: %s: its DWZ alt file %s arrived, retrying", id,
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
	if (id[0] && (debuginfo__meta_get(u->s, id, &m) || m.status != DEBUGINFO_STATUS_OK || !m.kinds))
		debuginfo__meta_fail(u->s, id, DEBUGINFO_SOURCE_UPLOAD, debuginfo__status_of_reason(reason), 0, msg ? msg->text : "");
	return code;
}

int debuginfo_upload_commit(struct debuginfo_upload *u, const char *build_id_hex, enum debuginfo_file_kind kind,
		      struct debuginfo_upload_result *res, struct err_msg *msg)
{
	struct debuginfo *s = u->s;
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t blen;
	char id[DEBUGINFO_HEX_MAX], have[DEBUGINFO_HEX_MAX], dir[4096], dst[4096];
	struct sym_elf_info info;
	enum sym_reason reason = SYM_REASON_OK;
	struct debuginfo__meta m;
	int rc, had_meta, replaced = 0;

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
	if (sym_elf_inspect_file(u->path, &info, msg)) {
		rc = refuse(u, id, SYM_REASON_INVALID_ELF, ERR_INVALID, res, msg);
		goto out;
	}
	if (info.build_id_len == 0) {
		err_set(msg, ERR_INVALID, "no_build_id: the file has no GNU build ID note");
		rc = refuse(u, "", SYM_REASON_NO_BUILD_ID, ERR_INVALID, res, msg);
		goto out;
	}
	if (info.build_id_len != blen || memcmp(info.build_id, bid, blen) != 0) {
		sym_build_id_hex(info.build_id, info.build_id_len, have);
		err_set(msg, ERR_CONFLICT, "build ID mismatch: file has %s, claimed %s", have, id);
		rc = refuse(u, id, SYM_REASON_BUILD_ID_MISMATCH, ERR_CONFLICT, res, msg);
		goto out;
	}
	if (kind == DEBUGINFO_FILE_DEBUGINFO && sym_elf_check(&info, NULL, 0, 0, &reason, msg)) {
		rc = refuse(u, id, reason, ERR_INVALID, res, msg);
		goto out;
	}
	if (kind == DEBUGINFO_FILE_EXECUTABLE &&
	    (!(info.flags & SYM_HAS_TEXT) || (info.flags & SYM_SEGMENTS_FROM_DEBUG) ||
	     !info.n_segments)) {
		err_set(msg, ERR_INVALID, "invalid_elf: not an executable (no code or no PT_LOAD)");
		rc = refuse(u, id, SYM_REASON_INVALID_ELF, ERR_INVALID, res, msg);
		goto out;
	}

	pthread_mutex_lock(&s->upload_mu);
	had_meta = debuginfo__meta_get(s, id, &m) == 0;
	if (!had_meta)
		memset(&m, 0, sizeof(m));
	rc = debuginfo__path(s, id, debuginfo__kind_name(kind), dst, sizeof(dst));
	if (!rc) {
		uint64_t size = 0, hash = 0, osize = 0, ohash = 0;

		rc = debuginfo__file_hash(u->path, &size, &hash);
		if (!rc && debuginfo__file_exists(dst) && !debuginfo__file_hash(dst, &osize, &ohash)) {
			if (osize == size && ohash == hash) {
				res->unchanged = 1;
			} else {
				replaced = 1;
			}
		}
		if (!rc && (!(m.kinds & (1u << DEBUGINFO_FILE_DEBUGINFO)) || kind == DEBUGINFO_FILE_DEBUGINFO)) {
			m.size = size;
			m.hash = hash;
		}
	}
	if (!rc && !res->unchanged) {
		debuginfo__path(s, id, NULL, dir, sizeof(dir));
		rc = debuginfo__mkdir_p(dir);
		if (rc)
			err_set(msg, rc, "cannot create %s: %s", dir, strerror(errno));
		else if (rename(u->path, dst))
			rc = err_set(msg, ERR_IO, "cannot store %s: %s", dst, strerror(errno));
		else
			debuginfo__fsync_dir(dst);
	}
	if (!rc) {
		char exe[4096];

		m.kinds |= 1u << kind;
		/* An unstripped binary is its own executable: its program headers
		 * give exact file offsets, and /buildid/<id>/executable serves it. */
		if (kind == DEBUGINFO_FILE_DEBUGINFO && (info.flags & SYM_HAS_TEXT) &&
		    !(info.flags & SYM_SEGMENTS_FROM_DEBUG) &&
		    !debuginfo__path(s, id, "executable", exe, sizeof(exe)) &&
		    (!debuginfo__file_exists(exe) || replaced) && !debuginfo__install_copy(dst, exe, NULL))
			m.kinds |= 1u << DEBUGINFO_FILE_EXECUTABLE;
		if (replaced || (had_meta && m.status != DEBUGINFO_STATUS_OK))
			drop_derived(s, id, bid, blen);
		m.source = DEBUGINFO_SOURCE_UPLOAD;
		m.status = DEBUGINFO_STATUS_OK;
		m.reason[0] = '\0';
		m.retry_at = 0;
		if (!res->unchanged || !m.uploaded)
			m.uploaded = clock_wall_ns();
		if (!res->unchanged)
			touch_forget(s, bid, blen);
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
		log_info("symbolize: %s %s for %s (%llu bytes)",
			 res->unchanged ? "kept identical" : replaced ? "replaced" : "stored",
			 debuginfo__kind_name(kind), id, (unsigned long long)u->size);
	}
out:
	debuginfo_upload_abort(u);
	return rc;
}

/* ---- listing ------------------------------------------------------------------ */

static int meta_json(struct buf *out, const char *id, size_t idlen, const struct debuginfo__meta *m)
{
	static const char *const sources[] = { "none", "upload", "debuginfod" };
	int rc = buf_puts(out, "{\"buildId\":");

	if (!rc) rc = buf_put_json_str(out, id, idlen);
	if (!rc)
		rc = buf_printf(out,
				",\"source\":\"%s\",\"size\":%llu,\"uploaded\":%lld,\"lastUsed\":%lld,"
				"\"status\":\"%s\",\"reason\":",
				sources[m->source < 3 ? m->source : 0], (unsigned long long)m->size,
				(long long)(m->uploaded / 1000000), (long long)(m->last_used / 1000000),
				debuginfo_status_str(m->status));
	if (!rc) rc = buf_put_json_str(out, m->reason, strlen(m->reason));
	if (!rc)
		rc = buf_printf(out, ",\"debuginfo\":%s,\"executable\":%s,\"retryAt\":%lld}",
				m->kinds & 1 ? "true" : "false", m->kinds & 2 ? "true" : "false",
				(long long)(m->retry_at / 1000000));
	return rc;
}

struct list_ctx {
	struct buf *out;
	size_t n;
};

static int list_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct list_ctx *l = ctx;
	struct debuginfo__meta m;
	int rc;

	if (debuginfo__meta_decode(val, vlen, &m))
		return 0;
	rc = l->n++ ? buf_putc(l->out, ',') : 0;
	return rc ? rc : meta_json(l->out, key, klen, &m);
}

int debuginfo_info_json(struct debuginfo *s, const char *build_id_hex, struct buf *out,
			  struct err_msg *msg)
{
	struct list_ctx l = { out, 0 };
	char id[DEBUGINFO_HEX_MAX];
	struct debuginfo__meta m;
	int rc;

	if (build_id_hex) {
		if (debuginfo__canon_id(build_id_hex, id, NULL, NULL))
			return err_set(msg, ERR_INVALID, "\"%.100s\" is not a hex build ID",
				       build_id_hex);
		rc = debuginfo__meta_get(s, id, &m);
		if (rc == ERR_NOT_FOUND)
			return err_set(msg, rc, "build ID %s is not known", id);
		if (rc)
			return err_set(msg, rc, "reading the metadata of %s: %s", id, err_str(rc));
		return meta_json(out, id, strlen(id), &m);
	}
	rc = buf_putc(out, '[');
	if (!rc)
		rc = store_aux_scan(s->st, STORE_AUX_DEBUGINFO, "", 0, list_one, &l, msg);
	if (!rc)
		rc = buf_putc(out, ']');
	return rc;
}

static int count_status(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	uint64_t *by = ctx;
	struct debuginfo__meta m;

	(void)key;
	(void)klen;
	if (!debuginfo__meta_decode(val, vlen, &m) && m.status < DEBUGINFO_STATUS_COUNT)
		by[m.status]++;
	return 0;
}

/* Per-status lines: the build IDs the store knows, and what queries left hex. */
static int status_metrics(struct debuginfo *s, struct buf *out)
{
	uint64_t by[DEBUGINFO_STATUS_COUNT] = { 0 };
	int rc;

	store_aux_scan(s->st, STORE_AUX_DEBUGINFO, "", 0, count_status, by, NULL);
	rc = buf_puts(out, "# HELP unhex_debuginfo_build_ids Build IDs the server knows, by status.\n"
			   "# TYPE unhex_debuginfo_build_ids gauge\n");
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT && !rc; i++)
		if (i != DEBUGINFO_STATUS_PENDING)
			rc = buf_printf(out, "unhex_debuginfo_build_ids{status=\"%s\"} %llu\n",
					debuginfo_status_str(i), (unsigned long long)by[i]);
	if (!rc)
		rc = buf_puts(out, "# HELP unhex_symbolize_unresolved_locations_total Distinct "
				   "locations that queries left without names, by why.\n"
				   "# TYPE unhex_symbolize_unresolved_locations_total counter\n");
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT && !rc; i++)
		rc = buf_printf(out, "unhex_symbolize_unresolved_locations_total{status=\"%s\"} %llu\n",
				debuginfo_status_str(i), (unsigned long long)atomic_load(&s->unresolved[i]));
	return rc;
}

int debuginfo_metrics(struct debuginfo *s, struct buf *out)
{
	struct debuginfo_stats st;
	size_t open_n;
	int rc;

	debuginfo_stats(s, &st);
	open_n = debuginfo__lru_count(s);
	rc = status_metrics(s, out);
	return rc ? rc : buf_printf(
		out,
		"# TYPE unhex_debuginfo_uploads_total counter\n"
		"unhex_debuginfo_uploads_total{result=\"ok\"} %llu\n"
		"unhex_debuginfo_uploads_total{result=\"refused\"} %llu\n"
		"# TYPE unhex_debuginfod_fetches_total counter\n"
		"unhex_debuginfod_fetches_total{result=\"ok\"} %llu\n"
		"unhex_debuginfod_fetches_total{result=\"not_found\"} %llu\n"
		"unhex_debuginfod_fetches_total{result=\"error\"} %llu\n"
		"# TYPE unhex_symbolize_index_builds_total counter\n"
		"unhex_symbolize_index_builds_total %llu\n"
		"# TYPE unhex_symbolize_index_opens_total counter\n"
		"unhex_symbolize_index_opens_total %llu\n"
		"# TYPE unhex_symbolize_cache_lookups_total counter\n"
		"unhex_symbolize_cache_lookups_total{result=\"hit\"} %llu\n"
		"unhex_symbolize_cache_lookups_total{result=\"miss\"} %llu\n"
		"# TYPE unhex_symbolize_open_indexes gauge\n"
		"unhex_symbolize_open_indexes %zu\n",
		(unsigned long long)st.uploads_ok, (unsigned long long)st.uploads_refused,
		(unsigned long long)st.fetches_ok, (unsigned long long)st.fetches_not_found,
		(unsigned long long)st.fetches_error, (unsigned long long)st.index_builds,
		(unsigned long long)st.index_opens, (unsigned long long)st.cache_hits,
		(unsigned long long)st.cache_misses, open_n);
}
