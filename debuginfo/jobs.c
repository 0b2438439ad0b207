/*
 * jobs.c - the background workers: a queue of at most one job per build ID
 * and upstream list (fetch its debug file if needed, then build its index), worker threads
 * that run them, and queries that wait for one until their deadline.  The
 * queue and `stopping` are under s->mu; done_cv wakes the waiters.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "debuginfo_int.h"

/*
 * The debug file of `id`, which has none stored: from the bucket (unless
 * it missed lately), else from the upstreams when the build ID's record
 * lets a lookup start (with a bucket, a job may run only for the bucket's
 * sake); without upstreams, a miss is recorded as not found.  0 when a
 * file is stored now.
 */
static int obtain(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen)
{
	struct debuginfo__meta m;
	int rc = ERR_NOT_FOUND;

	if (debuginfo__bucket_due(s, id)) {
		rc = debuginfo__bucket_fetch(s, id);
		if (!rc)
			return 0;
	}
	if (!s->upstream) {
		if (s->os && rc == ERR_NOT_FOUND)
			debuginfo__meta_fail_lookup(s, id, DEBUGINFO_SOURCE_NONE,
						    DEBUGINFO_STATUS_NOT_FOUND, 0,
						    DEBUGINFO__NOT_IN_BUCKET);
		else if (s->os)
			debuginfo__meta_fail_lookup(s, id, DEBUGINFO_SOURCE_NONE,
						    DEBUGINFO_STATUS_UPSTREAM_ERROR,
						    clock_wall_ns() + s->bucket_miss_ttl_ns,
						    "the bucket could not be asked (the server log says "
						    "why); asked again later");
		return ERR_NOT_FOUND;
	}
	if (s->os && !debuginfo__meta_get(s, id, &m) && m.status != DEBUGINFO_STATUS_OK &&
	    m.status != DEBUGINFO_STATUS_PENDING && m.retry_at > clock_wall_ns())
		return ERR_NOT_FOUND;
	return debuginfo__fetch(s, id, bid, blen);
}

/*
 * Fetches the debug file of `id` if none is stored, then builds its index;
 * for a tenant's list (set > 0), only fetches through it when that tenant
 * may not see a stored file (fetch_set decides).
 */
static void job_run(struct debuginfo *s, const char *id, unsigned set)
{
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t blen;
	char tmp[DEBUGINFO_HEX_MAX], p1[DEBUGINFO__PATH_MAX], p2[DEBUGINFO__PATH_MAX];

	if (debuginfo__canon_id(id, tmp, bid, &blen))
		return;
	/* A tenant's list only fetches: the index is the server's job (set
	 * 0), which the query queues once the tenant may see the file, so
	 * one build ID's index is never built by two jobs at once. */
	if (set) {
		debuginfo__fetch_set(s, set, id, bid, blen);
		return;
	}
	if (debuginfo__path(s, id, "debuginfo", p1, sizeof(p1)) ||
	    debuginfo__path(s, id, "executable", p2, sizeof(p2)))
		return;
	/* A kernel symbol map is never fetched: debuginfod serves ELF files. */
	if (!debuginfo__file_exists(p1) && !debuginfo__file_exists(p2) &&
	    (debuginfo__path(s, id, "kallsyms", p1, sizeof(p1)) || !debuginfo__file_exists(p1)) &&
	    obtain(s, id, bid, blen))
		return;
	debuginfo__build_index(s, id, bid, blen);
}

static void *worker(void *arg)
{
	struct debuginfo *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct debuginfo__job *j = NULL;

		while (!s->stopping) {
			for (j = s->jobs; j && j->running; j = j->next)
				;
			if (j)
				break;
			pthread_cond_wait(&s->work_cv, &s->mu);
		}
		if (s->stopping)
			break;
		assert(!j->running);
		j->running = 1;
		pthread_mutex_unlock(&s->mu);
		job_run(s, j->id, j->set);
		pthread_mutex_lock(&s->mu);
		/* Only its worker removes a running job. */
		for (struct debuginfo__job **pp = &s->jobs;; pp = &(*pp)->next) {
			assert(*pp);
			if (*pp == j) {
				*pp = j->next;
				break;
			}
		}
		free(j);
		pthread_cond_broadcast(&s->done_cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Must hold s->mu.  Queues a job for (`id`, `set`) unless one exists. */
static int job_queue(struct debuginfo *s, const char *id, unsigned set)
{
	struct debuginfo__job *j, **tail = &s->jobs;

	for (j = s->jobs; j; j = j->next) {
		if (j->set == set && strcmp(j->id, id) == 0)
			return 0;
		tail = &j->next;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return ERR_NOMEM;
	snprintf(j->id, sizeof(j->id), "%s", id);
	j->set = set;
	*tail = j;
	pthread_cond_signal(&s->work_cv);
	return 0;
}

/* Must hold s->mu. */
static int job_pending(struct debuginfo *s, const char *id, unsigned set)
{
	for (struct debuginfo__job *j = s->jobs; j; j = j->next)
		if (j->set == set && strcmp(j->id, id) == 0)
			return 1;
	return 0;
}

/* Waits (holding s->mu) until no job for `id` exists or the deadline; 1 if still pending. */
static int job_wait(struct debuginfo *s, const char *id, unsigned set, int64_t deadline_mono)
{
	while (job_pending(s, id, set) && !s->stopping) {
		int64_t left = deadline_mono - clock_mono_ns();
		struct timespec ts;
		int64_t abs_ns;

		if (left <= 0)
			return 1;
		clock_gettime(CLOCK_REALTIME, &ts);
		abs_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + left;
		ts.tv_sec = abs_ns / 1000000000LL;
		ts.tv_nsec = abs_ns % 1000000000LL;
		pthread_cond_timedwait(&s->done_cv, &s->mu, &ts);
	}
	return job_pending(s, id, set);
}

int debuginfo__job_await_set(struct debuginfo *s, const char *id, unsigned set,
			     int64_t deadline_mono)
{
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = job_queue(s, id, set);
	if (!rc && job_wait(s, id, set, deadline_mono))
		rc = ERR_TIMEOUT;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int debuginfo__job_exists_set(struct debuginfo *s, const char *id, unsigned set)
{
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = job_pending(s, id, set);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int debuginfo__job_await(struct debuginfo *s, const char *id, int64_t deadline_mono)
{
	return debuginfo__job_await_set(s, id, 0, deadline_mono);
}

int debuginfo__job_exists(struct debuginfo *s, const char *id)
{
	return debuginfo__job_exists_set(s, id, 0);
}

int debuginfo__jobs_start(struct debuginfo *s, int workers)
{
	for (int i = 0; i < workers && i < DEBUGINFO__MAX_WORKERS; i++) {
		if (pthread_create(&s->threads[i], NULL, worker, s))
			break;
		s->n_threads++;
	}
	return s->n_threads ? 0 : ERR_UNAVAILABLE;
}

void debuginfo__jobs_stop(struct debuginfo *s)
{
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	atomic_store(&s->cancel, 1);
	pthread_cond_broadcast(&s->work_cv);
	pthread_cond_broadcast(&s->done_cv);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < s->n_threads; i++)
		pthread_join(s->threads[i], NULL);
	s->n_threads = 0;
	while (s->jobs) {
		struct debuginfo__job *j = s->jobs;

		assert(!j->running); /* the workers are joined */
		s->jobs = j->next;
		free(j);
	}
}
