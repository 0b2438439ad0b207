/*
 * test_gate.c - the FIFO gate: never more than its limit inside, queued
 * threads admitted in their order of arrival, and the CPUs a process may
 * use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "base/gate.h"

enum { THREADS = 8, ROUNDS = 200 };

struct crowd {
	struct gate g;
	atomic_int inside;
	atomic_int most;
};

static void *crowd_run(void *arg)
{
	struct crowd *c = arg;

	for (int r = 0; r < ROUNDS; r++) {
		int now, seen;

		gate_enter(&c->g);
		now = atomic_fetch_add(&c->inside, 1) + 1;
		seen = atomic_load(&c->most);
		while (now > seen && !atomic_compare_exchange_weak(&c->most, &seen, now))
			;
		sched_yield(); /* let the others try to get in meanwhile */
		atomic_fetch_sub(&c->inside, 1);
		gate_leave(&c->g);
	}
	return NULL;
}

/* Eight threads through a gate of two: at most two inside at once. */
static void test_limit_holds(void **state)
{
	struct crowd c;
	pthread_t t[THREADS];
	uint32_t inside, waiting;
	uint64_t waits;

	(void)state;
	gate_init(&c.g, 2);
	atomic_init(&c.inside, 0);
	atomic_init(&c.most, 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, crowd_run, &c), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_true(atomic_load(&c.most) >= 1);
	assert_true(atomic_load(&c.most) <= 2);
	gate_stats(&c.g, &inside, &waiting, &waits, NULL);
	assert_int_equal(inside, 0);
	assert_int_equal(waiting, 0);
	assert_true(waits <= (uint64_t)THREADS * ROUNDS);
	gate_destroy(&c.g);
}

struct queued {
	struct gate *g;
	int id;
	int *order;
	atomic_int *n_order;
};

static void *queued_run(void *arg)
{
	struct queued *q = arg;

	gate_enter(q->g);
	q->order[atomic_fetch_add(q->n_order, 1)] = q->id;
	gate_leave(q->g);
	return NULL;
}

static void wait_queued(struct gate *g, uint32_t n)
{
	const struct timespec ms = { 0, 1000000 };
	uint32_t waiting = 0;

	for (int i = 0; i < 10000; i++) {
		gate_stats(g, NULL, &waiting, NULL, NULL);
		if (waiting == n)
			return;
		nanosleep(&ms, NULL);
	}
	fail_msg("%u threads queued, want %u", waiting, n);
}

/*
 * A gate of one, held: threads queue one after another, and are let in in
 * that order when it is left.
 */
static void test_fifo(void **state)
{
	struct gate g;
	pthread_t t[THREADS];
	struct queued q[THREADS];
	int order[THREADS];
	atomic_int n_order;
	uint64_t waits, wait_ns;

	(void)state;
	gate_init(&g, 1);
	atomic_init(&n_order, 0);
	gate_enter(&g);
	for (int i = 0; i < THREADS; i++) {
		q[i] = (struct queued){ &g, i, order, &n_order };
		assert_int_equal(pthread_create(&t[i], NULL, queued_run, &q[i]), 0);
		wait_queued(&g, (uint32_t)i + 1);
	}
	gate_leave(&g);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&n_order), THREADS);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(order[i], i);
	gate_stats(&g, NULL, NULL, &waits, &wait_ns);
	assert_int_equal(waits, THREADS);
	assert_true(wait_ns > 0);
	gate_destroy(&g);
}

/* At least one CPU, at most the affinity mask's. */
static void test_cpus_available(void **state)
{
	cpu_set_t set;
	uint32_t n = gate_cpus_available();

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_true(n >= 1);
	assert_true(n <= (uint32_t)CPU_COUNT(&set));
	assert_true(n <= GATE_MAX_LIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit_holds),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_cpus_available),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
