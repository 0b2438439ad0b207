/* test_hmap.c - the hash index: lookups by caller compare, collisions, growth, caps, truncation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/hmap.h"

/* A u64 -> u64 table as a caller would write it on top of the index. */
struct kv {
	uint64_t key, val;
};

struct table {
	struct hmap m;
	struct kv *v;
	size_t n, cap;
	uint64_t (*hash)(uint64_t key);
};

static uint64_t good_hash(uint64_t k)
{
	return hash_u64(k);
}

/* Every key in one of four digests: long probe chains of mismatches. */
static uint64_t bad_hash(uint64_t k)
{
	return k & 3;
}

static uint32_t find(const struct table *t, uint64_t key)
{
	struct hmap_probe pr;

	for (uint32_t i = hmap_first(&t->m, t->hash(key), &pr); i != HMAP_NONE;
	     i = hmap_next(&t->m, &pr))
		if (t->v[i].key == key)
			return i;
	return HMAP_NONE;
}

static int add(struct table *t, uint64_t key, uint64_t val)
{
	int rc = GROW(t->v, t->cap, t->n + 1, 1u << 20, NULL);

	if (!rc)
		rc = hmap_put(&t->m, t->hash(key), (uint32_t)t->n);
	if (rc)
		return rc;
	t->v[t->n].key = key;
	t->v[t->n++].val = val;
	return 0;
}

static void table_init(struct table *t, uint32_t max, uint64_t (*hash)(uint64_t))
{
	memset(t, 0, sizeof(*t));
	hmap_init(&t->m, max, NULL);
	t->hash = hash;
}

static void table_release(struct table *t)
{
	hmap_release(&t->m);
	free(t->v);
}

static void test_empty_map(void **state)
{
	struct hmap m;
	struct hmap_probe pr;
	(void)state;

	hmap_init(&m, 10, NULL);
	assert_int_equal(hmap_first(&m, 12345, &pr), HMAP_NONE);
	assert_int_equal(hmap_bytes(&m), 0);
	hmap_clear(&m);
	hmap_truncate(&m, 0);
	assert_int_equal(hmap_first(&m, 0, &pr), HMAP_NONE);
	hmap_release(&m);
	hmap_release(&m); /* twice is harmless */
}

static void run_many(uint64_t (*hash)(uint64_t), uint32_t count)
{
	struct table t;

	table_init(&t, HMAP_MAX, hash);
	for (uint32_t k = 0; k < count; k++) {
		assert_int_equal(find(&t, k * 7919), HMAP_NONE);
		assert_int_equal(add(&t, k * 7919, k), 0);
	}
	assert_int_equal(t.m.n, count);
	/* At most 3/4 full. */
	assert_true((uint64_t)t.m.n * 4 <= ((uint64_t)t.m.mask + 1) * 3);
	for (uint32_t k = 0; k < count; k++) {
		uint32_t i = find(&t, k * 7919);
		assert_int_equal(i, k);
		assert_int_equal(t.v[i].val, k);
	}
	assert_int_equal(find(&t, 1), HMAP_NONE);
	table_release(&t);
}

static void test_many_keys(void **state)
{
	(void)state;
	run_many(good_hash, 100000);
}

static void test_colliding_hashes(void **state)
{
	(void)state;
	run_many(bad_hash, 2000);
}

static void test_same_hash_yields_every_candidate(void **state)
{
	struct hmap m;
	struct hmap_probe pr;
	int seen[3] = { 0 };
	uint32_t i;
	(void)state;

	hmap_init(&m, 10, NULL);
	assert_int_equal(hmap_put(&m, 99, 0), 0);
	assert_int_equal(hmap_put(&m, 99, 1), 0);
	assert_int_equal(hmap_put(&m, 42, 2), 0);
	for (i = hmap_first(&m, 99, &pr); i != HMAP_NONE; i = hmap_next(&m, &pr))
		seen[i]++;
	assert_int_equal(seen[0], 1);
	assert_int_equal(seen[1], 1);
	assert_int_equal(seen[2], 0);
	hmap_release(&m);
}

static void test_max_entries(void **state)
{
	struct table t;
	(void)state;

	table_init(&t, 3, good_hash);
	assert_int_equal(add(&t, 1, 10), 0);
	assert_int_equal(add(&t, 2, 20), 0);
	assert_int_equal(add(&t, 3, 30), 0);
	assert_int_equal(hmap_put(&t.m, good_hash(4), 3), ERR_TOO_LARGE);
	assert_int_equal(t.m.n, 3);
	assert_int_equal(hmap_reserve(&t.m, 4), ERR_TOO_LARGE);
	assert_int_equal(find(&t, 2), 1);
	assert_int_equal(find(&t, 4), HMAP_NONE);
	table_release(&t);
}

static void test_budget_refusal_leaves_map(void **state)
{
	struct grow_budget b;
	struct hmap m;
	struct hmap_probe pr;
	(void)state;

	/* 16 slots of 8 bytes fit; the resize to 32 (256 more bytes while the
	 * old table is alive) does not. */
	grow_budget_init(&b, 128 + 200);
	hmap_init(&m, 1000, &b.alloc);
	for (uint32_t k = 0; k < 12; k++)
		assert_int_equal(hmap_put(&m, hash_u64(k), k), 0);
	assert_int_equal(b.used, 128);
	assert_int_equal(hmap_put(&m, hash_u64(12), 12), ERR_TOO_LARGE);
	assert_int_equal(m.n, 12);
	assert_int_equal(m.mask, 15);
	assert_int_equal(b.used, 128);
	for (uint32_t k = 0; k < 12; k++)
		assert_int_equal(hmap_first(&m, hash_u64(k), &pr), k);
	hmap_release(&m);
	assert_int_equal(b.used, 0);
}

static void test_reserve(void **state)
{
	struct hmap m;
	(void)state;

	hmap_init(&m, 1000, NULL);
	assert_int_equal(hmap_reserve(&m, 100), 0);
	assert_int_equal(m.mask + 1, 256); /* 100 * 4 > 128 * 3 */
	for (uint32_t k = 0; k < 100; k++)
		assert_int_equal(hmap_put(&m, hash_u64(k), k), 0);
	assert_int_equal(m.mask + 1, 256);
	assert_int_equal(hmap_bytes(&m), 256 * sizeof(struct hmap_slot));
	hmap_release(&m);
}

static void check_truncate(uint64_t (*hash)(uint64_t), uint32_t count, uint32_t keep)
{
	struct table t;

	table_init(&t, HMAP_MAX, hash);
	for (uint32_t k = 0; k < count; k++)
		assert_int_equal(add(&t, k, k), 0);
	hmap_truncate(&t.m, keep);
	t.n = keep;
	assert_int_equal(t.m.n, keep);
	for (uint32_t k = 0; k < count; k++)
		assert_int_equal(find(&t, k), k < keep ? k : HMAP_NONE);
	/* The map is still usable: re-add the dropped keys. */
	for (uint32_t k = keep; k < count; k++)
		assert_int_equal(add(&t, k, k), 0);
	for (uint32_t k = 0; k < count; k++)
		assert_int_equal(find(&t, k), k);
	table_release(&t);
}

static void test_truncate(void **state)
{
	(void)state;
	check_truncate(good_hash, 1000, 0);
	check_truncate(good_hash, 1000, 500);
	check_truncate(good_hash, 1000, 999);
	check_truncate(good_hash, 1000, 1000);
	/* Clusters that wrap around the end of the table. */
	check_truncate(bad_hash, 40, 10);
	for (uint32_t keep = 0; keep <= 47; keep++)
		check_truncate(bad_hash, 47, keep);
}

static uint64_t high_hash(uint64_t k)
{
	/* Digests at the top of a 64-slot table: clusters wrap past the end. */
	return (uint64_t)(60 + (k & 3));
}

static void test_truncate_wrapping(void **state)
{
	(void)state;
	for (uint32_t keep = 0; keep <= 40; keep++)
		check_truncate(high_hash, 40, keep);
}

/* "Find, else add" with one probe, as the interner does it. */
static void test_put_probed(void **state)
{
	uint64_t (*hashes[])(uint64_t) = { good_hash, bad_hash, high_hash };
	(void)state;

	for (size_t h = 0; h < 3; h++) {
		struct table t;
		struct hmap_probe pr;

		table_init(&t, 100000, hashes[h]);
		for (uint32_t round = 0; round < 2; round++) {
			for (uint64_t k = 0; k < 3000; k++) {
				uint32_t i;

				for (i = hmap_first(&t.m, t.hash(k), &pr); i != HMAP_NONE;
				     i = hmap_next(&t.m, &pr))
					if (t.v[i].key == k)
						break;
				if (round) {
					assert_int_equal(i, k); /* all found the second time */
					continue;
				}
				assert_int_equal(i, HMAP_NONE);
				assert_int_equal(GROW(t.v, t.cap, t.n + 1, 100000, NULL), 0);
				t.v[t.n].key = k;
				assert_int_equal(hmap_put_probed(&t.m, &pr, (uint32_t)t.n++), 0);
			}
		}
		assert_int_equal(t.m.n, 3000);
		table_release(&t);
	}
}

/* A put between the probe and hmap_put_probed may take its slot: it probes again. */
static void test_put_probed_after_put(void **state)
{
	struct hmap m;
	struct hmap_probe pr;
	int seen[3] = { 0 };
	uint32_t i;
	(void)state;

	hmap_init(&m, 100, NULL);
	assert_int_equal(hmap_put(&m, 5, 0), 0);
	assert_int_equal(hmap_first(&m, 5 + ((uint64_t)1 << 40), &pr), HMAP_NONE); /* other digest */
	assert_int_equal(hmap_put(&m, 5, 1), 0); /* takes the slot the probe ended on */
	assert_int_equal(hmap_put_probed(&m, &pr, 2), 0);
	for (i = hmap_first(&m, 5, &pr); i != HMAP_NONE; i = hmap_next(&m, &pr))
		seen[i]++;
	assert_int_equal(seen[0] + seen[1], 2);
	assert_int_equal(seen[2], 0);
	assert_int_equal(hmap_first(&m, 5 + ((uint64_t)1 << 40), &pr), 2);
	assert_int_equal(m.n, 3);
	hmap_release(&m);
}

static void test_clear(void **state)
{
	struct table t;
	(void)state;

	table_init(&t, 100, good_hash);
	for (uint32_t k = 0; k < 50; k++)
		assert_int_equal(add(&t, k, k), 0);
	size_t bytes = hmap_bytes(&t.m);
	hmap_clear(&t.m);
	t.n = 0;
	assert_int_equal(t.m.n, 0);
	assert_int_equal(hmap_bytes(&t.m), bytes);
	assert_int_equal(find(&t, 3), HMAP_NONE);
	assert_int_equal(add(&t, 3, 33), 0);
	assert_int_equal(find(&t, 3), 0);
	table_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_map),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_colliding_hashes),
		cmocka_unit_test(test_same_hash_yields_every_candidate),
		cmocka_unit_test(test_max_entries),
		cmocka_unit_test(test_budget_refusal_leaves_map),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_truncate_wrapping),
		cmocka_unit_test(test_put_probed),
		cmocka_unit_test(test_put_probed_after_put),
		cmocka_unit_test(test_clear),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
