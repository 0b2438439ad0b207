/*
 * test_hot.c - the hot cache (hot.c): hits and cold lists of a probe,
 * growth past the first table, a first value that stays, pairs too large
 * to keep, the pool cap that empties the cache, a probe stopped by its
 * callback, and readers racing a writer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pthread.h>

#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"

#define KLEN 12

static void key_of(uint32_t i, uint8_t *k)
{
	memset(k, 0xab, KLEN);
	memcpy(k, &i, sizeof(i));
}

static void put_one(struct debuginfo__hot *c, uint32_t i, const void *val, size_t vlen)
{
	uint8_t k[KLEN];
	struct store_kv kv = { k, KLEN, val, vlen };

	key_of(i, k);
	debuginfo__hot_put(c, &kv, 1);
}

struct seen {
	size_t hits;
	char last[64];
	int stop_at; /* -1: never */
};

static int on_hit(void *ctx, size_t i, const void *val, size_t vlen)
{
	struct seen *s = ctx;

	s->hits++;
	snprintf(s->last, sizeof(s->last), "%.*s", (int)vlen, (const char *)val);
	return (int)i == s->stop_at ? ERR_INVALID : 0;
}

/* Probes keys [0, n) and returns how many were cold. */
static size_t probe(struct debuginfo__hot *c, uint32_t n, struct seen *s, int *rc)
{
	uint8_t *keys = malloc((size_t)n * KLEN);
	uint64_t *hashes = malloc(n * sizeof(*hashes));
	size_t *cold = malloc(n * sizeof(*cold)), n_cold = 0;

	assert_non_null(keys);
	for (uint32_t i = 0; i < n; i++)
		key_of(i, keys + (size_t)i * KLEN);
	*rc = debuginfo__hot_probe(c, keys, KLEN, n, hashes, on_hit, s, cold, &n_cold);
	for (size_t j = 1; j < n_cold; j++)
		assert_true(cold[j - 1] < cold[j]);
	free(keys);
	free(hashes);
	free(cold);
	return n_cold;
}

static void test_hits_and_growth(void **state)
{
	struct debuginfo__hot c;
	struct seen s = { 0, "", -1 };
	char v[32];
	int rc;

	(void)state;
	debuginfo__hot_init(&c);
	assert_int_equal(probe(&c, 10, &s, &rc), 10);
	assert_int_equal(s.hits, 0);
	/* Every other key of 5000: the table grows from 1024 slots several times. */
	for (uint32_t i = 0; i < 5000; i += 2) {
		snprintf(v, sizeof(v), "v%u", i);
		put_one(&c, i, v, strlen(v));
	}
	assert_int_equal(c.n, 2500);
	assert_true(c.cap >= 2 * c.n && (c.cap & (c.cap - 1)) == 0);
	assert_int_equal(probe(&c, 5000, &s, &rc), 2500);
	assert_int_equal(rc, 0);
	assert_int_equal(s.hits, 2500);
	assert_string_equal(s.last, "v4998");
	/* A second value for a key does not replace the first. */
	put_one(&c, 4998, "other", 5);
	assert_int_equal(probe(&c, 4999, &s, &rc), 2499);
	assert_string_equal(s.last, "v4998");
	debuginfo__hot_clear(&c);
	assert_int_equal(probe(&c, 5000, &s, &rc), 5000);
	debuginfo__hot_release(&c);
}

static void test_stop_and_sizes(void **state)
{
	struct debuginfo__hot c;
	struct seen s = { 0, "", 3 };
	size_t big = (64u << 20) / 4; /* the largest pair is a quarter of the pool */
	char *v = calloc(1, big);
	int rc;

	(void)state;
	assert_non_null(v);
	debuginfo__hot_init(&c);
	for (uint32_t i = 0; i < 8; i++)
		put_one(&c, i, "x", 1);
	/* The callback's error stops the probe where it happened. */
	assert_int_equal(probe(&c, 8, &s, &rc), 0);
	assert_int_equal(rc, ERR_INVALID);
	assert_int_equal(s.hits, 4);

	/* Too large to keep: a pair of more than a quarter of the pool. */
	debuginfo__hot_clear(&c);
	put_one(&c, 0, v, big - KLEN + 1);
	assert_int_equal(c.n, 0);
	/* Four pairs just under a quarter fill the pool; the fifth starts over. */
	for (uint32_t i = 0; i < 4; i++)
		put_one(&c, i, v, big - KLEN - 1);
	assert_int_equal(c.n, 4);
	put_one(&c, 4, v, big - KLEN - 1);
	assert_int_equal(c.n, 1);
	s.stop_at = -1;
	s.hits = 0;
	assert_int_equal(probe(&c, 5, &s, &rc), 4);
	assert_int_equal(s.hits, 1);
	debuginfo__hot_release(&c);
	free(v);
}

struct race {
	struct debuginfo__hot *c;
	int done;
};

static void *reader(void *arg)
{
	struct race *r = arg;

	for (int round = 0; round < 200; round++) {
		struct seen s = { 0, "", -1 };
		int rc;

		probe(r->c, 64, &s, &rc);
		if (rc)
			return arg;
	}
	return NULL;
}

/* Readers probe while a writer adds and clears: values seen are whole. */
static void test_readers_and_writer(void **state)
{
	struct debuginfo__hot c;
	struct race r = { &c, 0 };
	pthread_t t[3];

	(void)state;
	debuginfo__hot_init(&c);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, &r), 0);
	for (uint32_t round = 0; round < 200; round++) {
		for (uint32_t i = 0; i < 64; i++)
			put_one(&c, i, "value", 5);
		if (round % 7 == 0)
			debuginfo__hot_clear(&c);
	}
	for (int i = 0; i < 3; i++) {
		void *ret;

		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	debuginfo__hot_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hits_and_growth),
		cmocka_unit_test(test_stop_and_sizes),
		cmocka_unit_test(test_readers_and_writer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
