/*
 * gate.h - at most `limit` threads inside a section at once, admitted in
 * the order they arrived: the CPU-bound part of ingest requests.
 *
 * Why: an ingest request inflates, decodes and converts its pprofs into
 * arenas of a few MiB, then writes them under the store's one writer lock.
 * With more requests than CPUs at that stage, the kernel switches between
 * them mid-pprof: each switch evicts the others' tables from the caches,
 * and each request holds its arenas the whole time, so the block pool
 * keeps (and first faults in) one set per request.  Admitted no more than
 * CPUs at a time, the bench server on one CPU ingests its hour with 1.5-5 %
 * less CPU and 3,100 fewer page faults (of 11,200; bench/RESULTS.md,
 * "Ingest through a gate"), and only `limit` requests' decoded pprofs are
 * in memory at once.
 *
 * Order: a thread that finds the gate full queues; a thread leaving hands
 * its place to the queue's head (FIFO, one wakeup per admission).  The
 * waits are not bounded in time: what a waiter holds was admitted already
 * (a request's body, under the server's in-flight byte budget), and every
 * thread inside leaves when its section ends.
 *
 * Threading: every call takes the gate's mutex.
 */
#ifndef UNHEX_BASE_GATE_H
#define UNHEX_BASE_GATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define GATE_MAX_LIMIT 1024

struct gate_waiter;

struct gate {
	pthread_mutex_t mu;
	uint32_t limit;              /* 1..GATE_MAX_LIMIT */
	uint32_t inside;             /* threads between enter and leave */
	struct gate_waiter *head;    /* queued, oldest first */
	struct gate_waiter *tail;
	uint32_t waiting;            /* queued now */
	uint64_t waits;              /* admissions that queued */
	uint64_t wait_ns;            /* their time in the queue */
};

/* limit in 1..GATE_MAX_LIMIT (asserted). */
void gate_init(struct gate *g, uint32_t limit);
/* No thread may be inside or queued. */
void gate_destroy(struct gate *g);

void gate_enter(struct gate *g);
/* By a thread that entered. */
void gate_leave(struct gate *g);

/* Any out pointer may be NULL. */
void gate_stats(struct gate *g, uint32_t *inside, uint32_t *waiting, uint64_t *waits,
		uint64_t *wait_ns);

/*
 * The CPUs this process may use: its affinity mask, lowered to a cgroup
 * v2 CPU quota (cpu.max of its cgroup, rounded up) when one is set;
 * at least 1, at most GATE_MAX_LIMIT.
 */
uint32_t gate_cpus_available(void);

#endif
