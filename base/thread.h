/*
 * thread.h - the waits and the stop of a background worker thread.
 *
 * A worker sleeps on a condition variable, under its mutex, until its next
 * pass is due or its stop flag is set (maintenance, bucket uploads,
 * retention, the unsymbolized table, the connection watchdog).  Its due
 * times are monotonic (base/clock.h), so its condition variable is made by
 * thread_cond_init_mono(); thread_stop() is its owner's side.
 */
#ifndef UNHEX_BASE_THREAD_H
#define UNHEX_BASE_THREAD_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Initializes *cv so that its timed waits count in CLOCK_MONOTONIC. */
static inline void thread_cond_init_mono(pthread_cond_t *cv)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

/*
 * Waits on `cv` (made by thread_cond_init_mono, `mu` held) until it is
 * signalled or the monotonic time at_ns (clock_mono_ns) has come.
 */
static inline void thread_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t at_ns)
{
	struct timespec ts;

	ts.tv_sec = at_ns / 1000000000;
	ts.tv_nsec = at_ns % 1000000000;
	pthread_cond_timedwait(cv, mu, &ts);
}

/*
 * Sets *stop under `mu`, wakes every waiter of `cv` and joins `th`.  The
 * worker must re-check *stop under `mu` after every wait; the caller must
 * not hold `mu`.
 */
static inline void thread_stop(pthread_t th, pthread_mutex_t *mu, pthread_cond_t *cv, int *stop)
{
	pthread_mutex_lock(mu);
	*stop = 1;
	pthread_cond_broadcast(cv);
	pthread_mutex_unlock(mu);
	pthread_join(th, NULL);
}

#endif
