/* test_table.c - the store's in-memory containers: byte map and its caps,
 * dedup tables with truncation after an abort, segmented arrays, the
 * rollback pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "storage/storage_int.h"

static void test_bmap(void **state)
{
	struct bmap m;
	char key[32];
	uint64_t v;

	(void)state;
	store__bmap_init(&m, 10000, 1 << 20);
	assert_int_equal(store__bmap_get(&m, "x", 1, &v), ERR_NOT_FOUND);
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(key, sizeof(key), "key-%d", i);
		assert_int_equal(store__bmap_put(&m, key, (size_t)n, (uint64_t)i * 3), 0);
	}
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(key, sizeof(key), "key-%d", i);
		assert_int_equal(store__bmap_get(&m, key, (size_t)n, &v), 0);
		assert_int_equal(v, (uint64_t)i * 3);
	}
	assert_int_equal(store__bmap_get(&m, "key-5000", 8, &v), ERR_NOT_FOUND);
	/* Binary keys with NULs are distinct from their prefixes. */
	assert_int_equal(store__bmap_put(&m, "a\0b", 3, 7), 0);
	assert_int_equal(store__bmap_get(&m, "a", 1, &v), ERR_NOT_FOUND);
	assert_int_equal(store__bmap_get(&m, "a\0b", 3, &v), 0);
	assert_int_equal(v, 7);
	/* Released, the map is empty and usable again. */
	store__bmap_release(&m);
	assert_int_equal(store__bmap_get(&m, "key-1", 5, &v), ERR_NOT_FOUND);
	assert_int_equal(store__bmap_put(&m, "key-1", 5, 9), 0);
	assert_int_equal(store__bmap_get(&m, "key-1", 5, &v), 0);
	assert_int_equal(v, 9);
	store__bmap_release(&m);
}

static void test_bmap_caps(void **state)
{
	struct bmap m;
	uint64_t v;
	size_t before;
	(void)state;

	store__bmap_init(&m, 2, 1 << 20);
	assert_int_equal(store__bmap_put(&m, "a", 1, 1), 0);
	assert_int_equal(store__bmap_put(&m, "b", 1, 2), 0);
	assert_int_equal(store__bmap_put(&m, "c", 1, 3), ERR_TOO_LARGE);
	assert_int_equal(store__bmap_get(&m, "c", 1, &v), ERR_NOT_FOUND);
	assert_int_equal(store__bmap_get(&m, "b", 1, &v), 0);
	assert_int_equal(v, 2);
	before = store__bmap_bytes(&m);
	assert_true(before >= 64 * 1024); /* the keys' first arena block */
	/* Clear keeps the tables, forgets the keys. */
	store__bmap_clear(&m);
	assert_int_equal(store__bmap_get(&m, "a", 1, &v), ERR_NOT_FOUND);
	assert_int_equal(store__bmap_put(&m, "c", 1, 3), 0);
	assert_int_equal(store__bmap_get(&m, "c", 1, &v), 0);
	assert_int_equal(v, 3);
	store__bmap_release(&m);
	assert_int_equal(store__bmap_bytes(&m), 0);
}

/*
 * The dedup tables of the symbol kinds (struct symtab.dedup) index entries
 * by id (1-based) and are truncated to the published count after an abort
 * with hmap_truncate(keep + 1).  find() returns the id stored under `h`
 * that equals `id`, as symbols.c compares content.
 */
static uint32_t find(const struct hmap *m, uint64_t h, uint32_t id)
{
	struct hmap_probe pr;

	for (uint32_t i = hmap_first(m, h, &pr); i != HMAP_NONE; i = hmap_next(m, &pr))
		if (i == id)
			return i;
	return 0;
}

static void test_dedup_truncate(void **state)
{
	struct hmap t;
	(void)state;

	hmap_init(&t, STORE_MAX_SYMBOLS, NULL);
	/* Few distinct hashes force long clusters, which truncation must keep
	 * reachable. */
	for (uint32_t id = 1; id <= 3000; id++)
		assert_int_equal(hmap_put(&t, id % 7, id), 0);
	for (uint32_t id = 1; id <= 3000; id++)
		assert_int_equal(find(&t, id % 7, id), id);
	hmap_truncate(&t, 1234 + 1);
	assert_int_equal(t.n, 1234);
	for (uint32_t id = 1; id <= 3000; id++)
		assert_int_equal(find(&t, id % 7, id), id <= 1234 ? id : 0);
	/* Re-adding after truncation works. */
	for (uint32_t id = 1235; id <= 1300; id++)
		assert_int_equal(hmap_put(&t, id * 2654435761u, id), 0);
	for (uint32_t id = 1235; id <= 1300; id++)
		assert_int_equal(find(&t, id * 2654435761u, id), id);
	hmap_release(&t);
}

static void test_dedup_truncate_random(void **state)
{
	(void)state;
	srand(42);
	for (int round = 0; round < 50; round++) {
		struct hmap t;
		uint32_t n = 1 + (uint32_t)(rand() % 500), keep = (uint32_t)rand() % (n + 1);
		uint64_t *h = malloc(n * sizeof(*h));

		hmap_init(&t, STORE_MAX_SYMBOLS, NULL);
		for (uint32_t id = 1; id <= n; id++) {
			h[id - 1] = (uint64_t)(rand() % 64) * 0x10001u;
			assert_int_equal(hmap_put(&t, h[id - 1], id), 0);
		}
		hmap_truncate(&t, keep + 1);
		for (uint32_t id = 1; id <= n; id++)
			assert_int_equal(find(&t, h[id - 1], id), id <= keep ? id : 0);
		free(h);
		hmap_release(&t);
	}
}

static void test_segarr(void **state)
{
	struct segarr a;
	(void)state;

	store__segarr_init(&a, sizeof(uint64_t));
	for (uint32_t i = 0; i < 200000; i++) {
		uint64_t *p = store__segarr_at(&a, i, 1);
		assert_non_null(p);
		*p = (uint64_t)i * 11;
	}
	for (uint32_t i = 0; i < 200000; i++)
		assert_int_equal(*(const uint64_t *)segarr_get(&a, i), (uint64_t)i * 11);
	/* Pointers handed out before growth still point at the same entries. */
	assert_ptr_equal(store__segarr_at(&a, 5, 0), segarr_get(&a, 5));
	assert_null(store__segarr_at(&a, 300000000u, 0));
	store__segarr_release(&a);
}

static void test_pool_rollback(void **state)
{
	struct pool p;
	struct pool_mark m;
	char *keep, *big;
	(void)state;

	store__pool_init(&p);
	keep = store__pool_alloc(&p, 10, 1);
	memcpy(keep, "committed", 10);
	m = store__pool_mark(&p);
	for (int i = 0; i < 100; i++)
		assert_non_null(store__pool_alloc(&p, 1000, 8));
	big = store__pool_alloc(&p, 100000, 1);
	assert_non_null(big);
	memset(big, 1, 100000);
	store__pool_rollback(&p, m);
	assert_string_equal(keep, "committed");
	assert_int_equal(p.n, m.n);
	/* Space after the mark is reused. */
	assert_ptr_equal(store__pool_alloc(&p, 4, 1), keep + 10);
	store__pool_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bmap),
		cmocka_unit_test(test_bmap_caps),
		cmocka_unit_test(test_dedup_truncate),
		cmocka_unit_test(test_dedup_truncate_random),
		cmocka_unit_test(test_segarr),
		cmocka_unit_test(test_pool_rollback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
