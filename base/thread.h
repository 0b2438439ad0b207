/*
 * thread.h - the stop of a background worker thread.
 *
 * A worker sleeps on a condition variable, under its mutex, until its stop
 * flag is set (maintenance, bucket uploads, retention, the unsymbolized
 * table, the connection watchdog).  thread_stop() is its owner's side.
 */
#ifndef UNHEX_BASE_THREAD_H
#define UNHEX_BASE_THREAD_H

#include <pthread.h>

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
