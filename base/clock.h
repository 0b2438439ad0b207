/* clock.h - wall and monotonic time in nanoseconds. */
#ifndef UNHEX_BASE_CLOCK_H
#define UNHEX_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
