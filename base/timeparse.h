/*
 * timeparse.h - the one parser of the time parameters of the HTTP API
 * (`from`, `until` of ingest and of every query route), so that a time means
 * the same thing wherever a client writes it.
 *
 * Forms
 *   "now"                  the caller's wall clock
 *   "now-<N><unit>"        N decimal digits; unit s, m, h, d or w
 *   "<N>"                  a Unix time of N decimal digits whose unit is told
 *                          apart by magnitude:
 *                            N < 10^10   seconds
 *                            N < 10^13   milliseconds
 *                            N < 10^16   microseconds
 *                            otherwise   nanoseconds
 *
 * Why these bounds: 10^10 seconds is the year 2286, past the last time an
 * int64 of nanoseconds can hold (2262).  Reading a number as seconds while
 * it is a time before 2286 in seconds, then as milliseconds while it is one
 * in milliseconds, and so on, reads every time from 1970-04-26 to 2262 right
 * in all four units; only times before 1970-04-26 written in milliseconds or
 * finer are ambiguous, and nobody profiles those.  Pyroscope reads digits as
 * seconds only; every seconds value it accepts for a time before 2262 means
 * the same here.  Signs, spaces, fractions and exponents are rejected.
 *
 * Threading: pure functions.
 */
#ifndef UNHEX_BASE_TIMEPARSE_H
#define UNHEX_BASE_TIMEPARSE_H

#include <stdint.h>

struct err_msg;

/* Longest string time_parse() accepts; longer ones are ERR_INVALID. */
#define TIME_MAX_LEN 32

/*
 * Parses the NUL-terminated `s` (borrowed) against the wall clock `now_ns`
 * into nanoseconds since the epoch.  Returns 0, or ERR_INVALID with a
 * message starting "time: " and quoting `s` (callers prefix the parameter's
 * name); *out_ns is untouched on failure.  A result before the epoch (now-N
 * past 1970) or beyond INT64_MAX nanoseconds is ERR_INVALID.
 */
int time_parse(const char *s, int64_t now_ns, int64_t *out_ns, struct err_msg *msg);

#endif
