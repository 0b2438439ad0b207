/*
 * test_lru.c - the open indexes (lru.c) over real index files of small
 * programs compiled here with fixed build IDs: sharing an open index,
 * evicting the least recently used, entries that never move while a query
 * holds them, the heap entry when every slot is in use, an index dropped
 * while in use, and index files that are missing or corrupt.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "tests/symbolize/symtest.h"

#define N_IDS 4

static char g_ids[N_IDS][DEBUGINFO_HEX_MAX];
static uint8_t g_bid[N_IDS][20];
static char g_store[512];
static struct debuginfo g_s;

static int setup(void **state)
{
	(void)state;
	t_mkdtemp();
	t_write("p.c", "int main(void) { return 0; }\n");
	snprintf(g_store, sizeof(g_store), "%s", t_path("store"));
	memset(&g_s, 0, sizeof(g_s));
	g_s.dir = g_store;
	for (int i = 0; i < N_IDS; i++) {
		char dir[DEBUGINFO__PATH_MAX], dbg[DEBUGINFO__PATH_MAX], idx[DEBUGINFO__PATH_MAX];
		struct sym_index_stats st;

		for (int k = 0; k < 20; k++)
			g_bid[i][k] = (uint8_t)(0x10 * (i + 1) + k);
		sym_build_id_hex(g_bid[i], 20, g_ids[i]);
		if (debuginfo__path(&g_s, g_ids[i], NULL, dir, sizeof(dir)) ||
		    debuginfo__path(&g_s, g_ids[i], "debuginfo", dbg, sizeof(dbg)) ||
		    debuginfo__path(&g_s, g_ids[i], "index", idx, sizeof(idx)) ||
		    t_run("mkdir -p '%s' && gcc -g -Wl,--build-id=0x%s -o '%s' '%s'", dir, g_ids[i],
			  dbg, t_path("p.c")) ||
		    sym_index_build(dbg, idx, NULL, &st, NULL))
			return -1;
	}
	pthread_mutex_init(&g_s.mu, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pthread_mutex_destroy(&g_s.mu);
	t_rmdir();
	return 0;
}

static struct debuginfo__open_index *get(int i)
{
	struct debuginfo__open_index *e = NULL;

	assert_int_equal(debuginfo__lru_acquire(&g_s, g_ids[i], g_bid[i], 20, &e), 0);
	assert_non_null(e);
	assert_string_equal(e->id, g_ids[i]);
	return e;
}

static void open_table(size_t max_open)
{
	g_s.max_open = max_open;
	assert_int_equal(debuginfo__lru_init(&g_s), 0);
	atomic_store(&g_s.index_opens, 0);
}

static void test_share_and_evict(void **state)
{
	struct debuginfo__open_index *a, *a2, *b, *c;

	(void)state;
	open_table(2);
	a = get(0);
	a2 = get(0);
	assert_ptr_equal(a, a2);
	assert_int_equal(a->refs, 2);
	assert_int_equal(debuginfo__lru_count(&g_s), 1);
	assert_int_equal(atomic_load(&g_s.index_opens), 1);
	debuginfo__lru_unref(&g_s, a);
	debuginfo__lru_unref(&g_s, a2);
	b = get(1);
	/* b stays referenced while 0 goes: its entry must not move. */
	c = get(2);
	assert_int_equal(debuginfo__lru_count(&g_s), 2);
	assert_string_equal(b->id, g_ids[1]);
	assert_int_equal(b->refs, 1);
	debuginfo__lru_unref(&g_s, b);
	debuginfo__lru_unref(&g_s, c);
	/* 0 was evicted: it is opened from disk again, evicting 1. */
	a = get(0);
	assert_int_equal(atomic_load(&g_s.index_opens), 4);
	debuginfo__lru_unref(&g_s, a);
	c = get(2);
	assert_int_equal(atomic_load(&g_s.index_opens), 4);
	debuginfo__lru_unref(&g_s, c);
	debuginfo__lru_release(&g_s);
}

/* Every slot referenced: the new index lives in a heap entry of its own. */
static void test_all_in_use(void **state)
{
	struct debuginfo__open_index *a, *b, *c;
	size_t n;
	struct sym_frame f[SYM_MAX_FRAMES];

	(void)state;
	open_table(2);
	a = get(0);
	b = get(1);
	c = get(2);
	assert_true(c->heap);
	assert_int_equal(debuginfo__lru_count(&g_s), 2);
	assert_int_equal(sym_index_lookup(c->idx, 0, f, SYM_MAX_FRAMES, &n), 0);
	debuginfo__lru_unref(&g_s, c);
	debuginfo__lru_unref(&g_s, a);
	debuginfo__lru_unref(&g_s, b);
	assert_int_equal(debuginfo__lru_count(&g_s), 2);
	debuginfo__lru_release(&g_s);
}

/* A replaced build ID: unused, it goes at once; in use, after its last query. */
static void test_drop(void **state)
{
	struct debuginfo__open_index *a, *a2;

	(void)state;
	open_table(3);
	a = get(0);
	debuginfo__lru_unref(&g_s, a);
	debuginfo__lru_drop(&g_s, g_ids[0]);
	assert_int_equal(debuginfo__lru_count(&g_s), 0);

	a = get(0);
	debuginfo__lru_drop(&g_s, g_ids[0]);
	assert_true(a->stale);
	assert_string_equal(a->id, g_ids[0]); /* still usable by its query */
	a2 = get(0);                           /* the next query opens it again */
	assert_ptr_not_equal(a, a2);
	assert_int_equal(debuginfo__lru_count(&g_s), 2);
	debuginfo__lru_unref(&g_s, a);
	assert_int_equal(debuginfo__lru_count(&g_s), 1);
	debuginfo__lru_unref(&g_s, a2);
	debuginfo__lru_drop(&g_s, g_ids[3]); /* not open: nothing happens */
	assert_int_equal(debuginfo__lru_count(&g_s), 1);
	debuginfo__lru_release(&g_s);
}

static void test_missing_and_corrupt(void **state)
{
	struct debuginfo__open_index *e = NULL;
	char idx[DEBUGINFO__PATH_MAX];
	uint8_t other[20] = { 1 };

	(void)state;
	open_table(2);
	/* A build ID whose index was built for another one: refused and deleted. */
	assert_int_equal(debuginfo__lru_acquire(&g_s, g_ids[3], other, 20, &e), ERR_NOT_FOUND);
	assert_int_equal(debuginfo__path(&g_s, g_ids[3], "index", idx, sizeof(idx)), 0);
	assert_false(debuginfo__file_exists(idx));
	assert_int_equal(debuginfo__lru_acquire(&g_s, g_ids[3], g_bid[3], 20, &e), ERR_NOT_FOUND);
	/* Garbage where the index should be. */
	assert_int_equal(debuginfo__path(&g_s, g_ids[2], "index", idx, sizeof(idx)), 0);
	assert_int_equal(t_run("echo garbage > '%s'", idx), 0);
	assert_int_equal(debuginfo__lru_acquire(&g_s, g_ids[2], g_bid[2], 20, &e), ERR_NOT_FOUND);
	assert_false(debuginfo__file_exists(idx));
	assert_int_equal(debuginfo__lru_count(&g_s), 0);
	debuginfo__lru_release(&g_s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share_and_evict),
		cmocka_unit_test(test_all_in_use),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_missing_and_corrupt),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
