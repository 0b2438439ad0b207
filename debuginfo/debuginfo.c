/*
 * debuginfo.c - the service as a whole: opening it (options, directories,
 * the upstream URLs, the workers), closing it, and its counters.  Each
 * concern lives in its own file; debuginfo_int.h maps them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "debuginfo_int.h"

int debuginfo_open(struct store *st, const struct debuginfo_options *opt,
		   struct debuginfo **out, struct err_msg *msg)
{
	struct debuginfo *s;
	char path[DEBUGINFO__PATH_MAX];
	int workers;

	if (!opt || !opt->data_dir || !opt->data_dir[0])
		return err_set(msg, ERR_INVALID, "debuginfo: a data directory is required");
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
				 "debuginfo: cannot create %s: %s", path, strerror(errno));
		debuginfo__lru_release(s);
		debuginfo__hot_release(&s->hot);
		free(s->dir);
		free(s);
		return rc;
	}
	{
		uint64_t n, bytes;

		debuginfo__clean_temp(s, &n, &bytes);
		if (n)
			log_info("debuginfo: removed %llu temporary files (%llu bytes) of uploads, "
				 "fetches and installs a stop cut short", (unsigned long long)n,
				 (unsigned long long)bytes);
	}
	{
		int rc = debuginfo__upstreams_open(s, opt->debuginfod_urls,
						   opt->debuginfod_headers_file, msg);

		if (rc) {
			debuginfo__lru_release(s);
			debuginfo__hot_release(&s->hot);
			free(s->dir);
			free(s);
			return rc;
		}
	}
	s->fetch_interval_ns = 60000000000LL / (opt->fetch_per_minute ? opt->fetch_per_minute : 60);
	atomic_init(&s->fetch_tat, 0);
	{
		unsigned per_tenant = opt->fetch_per_tenant_minute ? opt->fetch_per_tenant_minute : 20;

		s->tenant_interval_ns = 60000000000LL / per_tenant;
		if (s->tenant_interval_ns < s->fetch_interval_ns)
			s->tenant_interval_ns = s->fetch_interval_ns;
		for (size_t i = 0; i < DEBUGINFO__TENANT_SLOTS; i++)
			atomic_init(&s->tenant_tat[i], 0);
	}
	s->max_failures = opt->max_failure_records ? opt->max_failure_records : 10000;
	s->failure_ttl_ns = opt->failure_ttl_ns > 0 ? opt->failure_ttl_ns : 86400LL * 1000000000LL;
	atomic_init(&s->failures, -1);
	atomic_init(&s->last_sweep, clock_wall_ns());
	atomic_flag_clear(&s->sweeping);
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->upload_mu, NULL);
	pthread_mutex_init(&s->touch_mu, NULL);
	pthread_mutex_init(&s->tfail_mu, NULL);
	pthread_mutex_init(&s->perfmap_mu, NULL);
	s->perfmap_max = opt->perfmap_max == 0 ? 1000
			 : opt->perfmap_max > (1u << 20) ? (1u << 20) : opt->perfmap_max;
	s->perfmap_retention_ns = opt->perfmap_retention_ns > 0 ? opt->perfmap_retention_ns
							      : 7 * 86400LL * 1000000000LL;
	atomic_init(&s->tenants, NULL);
	debuginfo__retain_init(s);
	s->retention_ns = opt->retention_ns > 0 ? opt->retention_ns : 0;
	s->retain_interval_ns = opt->retain_interval_ns > 0 ? opt->retain_interval_ns
							     : 60LL * 1000000000LL;
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	debuginfo__gc_init(s);
	if (debuginfo__bucket_init(s, opt) ||
	    debuginfo__unsym_init(s, opt->max_unsym_entries, opt->unsym_interval_ns)) {
		debuginfo_close(s);
		return err_set(msg, ERR_NOMEM, "out of memory");
	}
	workers = opt->workers > 0 ? opt->workers : 2;
	if (workers > DEBUGINFO__MAX_WORKERS)
		workers = DEBUGINFO__MAX_WORKERS;
	if (debuginfo__jobs_start(s, workers) || debuginfo__retain_start(s) ||
	    debuginfo__unsym_start(s) || debuginfo__bucket_start(s)) {
		debuginfo_close(s);
		return err_set(msg, ERR_UNAVAILABLE, "debuginfo: cannot start a worker thread");
	}
	debuginfo__gc_start(s);
	*out = s;
	return 0;
}

void debuginfo_close(struct debuginfo *s)
{
	if (!s)
		return;
	debuginfo__gc_release(s); /* before anything the hook uses goes */
	debuginfo__bucket_stop(s);
	debuginfo__unsym_stop(s);
	debuginfo__retain_stop(s);
	debuginfo__jobs_stop(s);
	debuginfo__lru_release(s);
	pthread_cond_destroy(&s->work_cv);
	pthread_cond_destroy(&s->done_cv);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->upload_mu);
	pthread_mutex_destroy(&s->touch_mu);
	debuginfo__tenants_release(s);
	pthread_mutex_destroy(&s->tfail_mu);
	pthread_mutex_destroy(&s->perfmap_mu);
	debuginfo__retain_release(s);
	debuginfo__unsym_release(s);
	debuginfo__bucket_release(s);
	debuginfo__hot_release(&s->hot);
	debuginfo__upstreams_close(s);
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
	o->fetches_limited = atomic_load(&s->fetches_limited);
	o->fetches_deferred = atomic_load(&s->fetches_deferred);
	o->perfmaps_expired = atomic_load(&s->perfmaps_expired);
	o->perfmaps_evicted = atomic_load(&s->perfmaps_evicted);
	o->redirects_refused = atomic_load(&s->redirects_refused);
	o->failures_dropped = atomic_load(&s->failures_dropped);
	o->open_indexes = debuginfo__lru_count(s);
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT; i++)
		o->unresolved[i] = atomic_load(&s->unresolved[i]);
	o->bucket = s->os != NULL;
	o->bucket_puts = atomic_load(&s->bucket_puts);
	o->bucket_index_puts = atomic_load(&s->bucket_index_puts);
	o->bucket_puts_found = atomic_load(&s->bucket_puts_found);
	o->bucket_put_conflicts = atomic_load(&s->bucket_put_conflicts);
	o->bucket_put_failures = atomic_load(&s->bucket_put_failures);
	o->bucket_hits = atomic_load(&s->bucket_hits);
	o->bucket_misses = atomic_load(&s->bucket_misses);
	o->bucket_lookup_failures = atomic_load(&s->bucket_lookup_failures);
	o->bucket_downloads = atomic_load(&s->bucket_downloads);
	o->bucket_index_downloads = atomic_load(&s->bucket_index_downloads);
	o->bucket_download_failures = atomic_load(&s->bucket_download_failures);
	o->bucket_index_invalid = atomic_load(&s->bucket_index_invalid);
	o->bucket_bytes_in = atomic_load(&s->bucket_bytes_in);
	o->bucket_bytes_out = atomic_load(&s->bucket_bytes_out);
	o->bucket_pending = atomic_load(&s->bucket_pending);
	o->bucket_deleted = atomic_load(&s->gc_deleted);
	o->bucket_deleted_objects = atomic_load(&s->gc_objects);
	o->bucket_delete_failures = atomic_load(&s->gc_failures);
	o->bucket_delete_waiting = atomic_load(&s->gc_waiting);
	o->bucket_use_marks = atomic_load(&s->gc_use_marks);
}

uint64_t debuginfo_generation(const struct debuginfo *s)
{
	return atomic_load(&((struct debuginfo *)s)->generation);
}
