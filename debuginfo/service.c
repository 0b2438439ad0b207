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

uint64_t debuginfo_generation(const struct debuginfo *s)
{
	return atomic_load(&((struct debuginfo *)s)->generation);
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
