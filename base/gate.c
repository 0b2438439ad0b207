/* gate.c - a FIFO counting gate, and the CPUs a process may use. */
#include "base/gate.h"

#include <assert.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"

/* A queued thread, on its own stack: its own condition variable, so a
 * leave wakes exactly the thread it admits. */
struct gate_waiter {
	pthread_cond_t cv;
	int admitted;
	struct gate_waiter *next;
};

void gate_init(struct gate *g, uint32_t limit)
{
	assert(limit >= 1 && limit <= GATE_MAX_LIMIT);
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	g->limit = limit;
}

void gate_destroy(struct gate *g)
{
	assert(g->inside == 0 && g->head == NULL);
	pthread_mutex_destroy(&g->mu);
}

void gate_enter(struct gate *g)
{
	struct gate_waiter w;
	int64_t t0;

	pthread_mutex_lock(&g->mu);
	/* A leave hands its place to a queued thread, so a free place means
	 * an empty queue: a newcomer never overtakes the queue. */
	assert(!g->head || g->inside == g->limit);
	if (g->inside < g->limit) {
		g->inside++;
		pthread_mutex_unlock(&g->mu);
		return;
	}
	t0 = clock_mono_ns();
	pthread_cond_init(&w.cv, NULL);
	w.admitted = 0;
	w.next = NULL;
	if (g->tail)
		g->tail->next = &w;
	else
		g->head = &w;
	g->tail = &w;
	g->waiting++;
	while (!w.admitted)
		pthread_cond_wait(&w.cv, &g->mu);
	/* gate_leave() dequeued us and passed its place on: inside is ours. */
	g->waits++;
	g->wait_ns += (uint64_t)(clock_mono_ns() - t0);
	pthread_mutex_unlock(&g->mu);
	pthread_cond_destroy(&w.cv);
}

void gate_leave(struct gate *g)
{
	struct gate_waiter *w;

	pthread_mutex_lock(&g->mu);
	assert(g->inside > 0 && g->inside <= g->limit);
	w = g->head;
	if (w) {
		g->head = w->next;
		if (!g->head)
			g->tail = NULL;
		g->waiting--;
		w->admitted = 1;
		pthread_cond_signal(&w->cv);
	} else {
		g->inside--;
	}
	pthread_mutex_unlock(&g->mu);
}

void gate_stats(struct gate *g, uint32_t *inside, uint32_t *waiting, uint64_t *waits,
		uint64_t *wait_ns)
{
	pthread_mutex_lock(&g->mu);
	if (inside)
		*inside = g->inside;
	if (waiting)
		*waiting = g->waiting;
	if (waits)
		*waits = g->waits;
	if (wait_ns)
		*wait_ns = g->wait_ns;
	pthread_mutex_unlock(&g->mu);
}

/*
 * The CPUs of a cgroup v2 quota: "max PERIOD" is none (0); "QUOTA PERIOD"
 * is QUOTA / PERIOD rounded up.  Only the process's own cgroup is read
 * (/proc/self/cgroup's "0::" line), as a container sees it.
 */
static uint32_t cgroup_cpus(void)
{
	char line[512], path[600];
	FILE *f = fopen("/proc/self/cgroup", "r");
	unsigned long long quota, period;
	uint32_t n = 0;
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			found = snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max",
					 strcmp(line + 3, "/") ? line + 3 : "") < (int)sizeof(path);
			break;
		}
	fclose(f);
	if (!found || !(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%llu %llu", &quota, &period) == 2 && period > 0 && quota > 0) {
		unsigned long long c = quota / period + (quota % period != 0);

		n = c > GATE_MAX_LIMIT ? GATE_MAX_LIMIT : (uint32_t)c;
	}
	fclose(f);
	return n;
}

uint32_t gate_cpus_available(void)
{
	cpu_set_t set;
	uint32_t n = 0, q;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = (uint32_t)CPU_COUNT(&set);
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (uint32_t)c : 1;
	}
	q = cgroup_cpus();
	if (q && q < n)
		n = q;
	return n > GATE_MAX_LIMIT ? GATE_MAX_LIMIT : n;
}
