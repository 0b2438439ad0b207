/*
 * test_blockpool.c - the block pool: exact-size reuse, its bounds, arenas on
 * it, threads, size classes and a byte budget drawing from a pool.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/arena.h"
#include "base/blockpool.h"
#include "base/err.h"

static void *get(struct blockpool *p, size_t n)
{
	int rc = 0;
	void *b = grow_resize(&p->alloc, NULL, 0, n, &rc);

	assert_non_null(b);
	assert_int_equal(rc, 0);
	return b;
}

static void drop(struct blockpool *p, void *b, size_t n)
{
	int rc = 0;

	assert_null(grow_resize(&p->alloc, b, n, 0, &rc));
}

static void test_same_size_reused(void **state)
{
	struct blockpool p;
	uint64_t reused, fresh;
	size_t held;
	void *a, *b;

	(void)state;
	assert_int_equal(blockpool_init(&p, 1 << 20, 1 << 20), 0);
	a = get(&p, 4096);
	memset(a, 0xab, 4096);
	drop(&p, a, 4096);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 4096);
	/* Another size is not served by the held block. */
	b = get(&p, 8192);
	assert_ptr_not_equal(b, a);
	drop(&p, b, 8192);
	b = get(&p, 4096);
	assert_ptr_equal(b, a);
	blockpool_stats(&p, &held, &reused, &fresh);
	assert_int_equal(held, 8192);
	assert_int_equal(reused, 1);
	assert_int_equal(fresh, 2);
	drop(&p, b, 4096);
	blockpool_release(&p);
}

static void test_bounds(void **state)
{
	struct blockpool p;
	void *blocks[BLOCKPOOL_SIZES + 2];
	size_t held;

	(void)state;
	assert_int_equal(blockpool_init(&p, 10000, 4096), 0);
	/* Past max_block: freed, not kept. */
	drop(&p, get(&p, 4097), 4097);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 0);
	/* Past max_bytes: the third 4096-byte block does not fit in 10000. */
	for (int i = 0; i < 3; i++)
		blocks[i] = get(&p, 4096);
	for (int i = 0; i < 3; i++)
		drop(&p, blocks[i], 4096);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 8192);
	blockpool_release(&p);

	/* At most BLOCKPOOL_SIZES distinct sizes. */
	assert_int_equal(blockpool_init(&p, 1 << 20, 1 << 20), 0);
	for (int i = 0; i < BLOCKPOOL_SIZES + 2; i++)
		blocks[i] = get(&p, 64 + 16 * (size_t)i);
	for (int i = 0; i < BLOCKPOOL_SIZES + 2; i++)
		drop(&p, blocks[i], 64 + 16 * (size_t)i);
	blockpool_stats(&p, &held, NULL, NULL);
	{
		size_t want = 0;

		for (int i = 0; i < BLOCKPOOL_SIZES; i++)
			want += 64 + 16 * (size_t)i;
		assert_int_equal(held, want);
	}
	/* Taking a size's last block frees its slot for another size. */
	blocks[0] = get(&p, 64);
	drop(&p, get(&p, 5000), 5000);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_true(held >= 5000);
	drop(&p, blocks[0], 64);
	blockpool_release(&p);
}

/* A resize keeps the contents, as realloc. */
static void test_resize_keeps_bytes(void **state)
{
	struct blockpool p;
	int rc = 0;
	char *b;

	(void)state;
	assert_int_equal(blockpool_init(&p, 1 << 20, 1 << 20), 0);
	b = get(&p, 100);
	memcpy(b, "hello", 6);
	b = grow_resize(&p.alloc, b, 100, 200, &rc);
	assert_non_null(b);
	assert_string_equal(b, "hello");
	drop(&p, b, 200);
	blockpool_release(&p);
}

/*
 * Size classes: a block of 2^k or 3 * 2^(k-1) bytes serves every size up to
 * it; growth inside a block keeps it; sizes outside [min, max] are the C
 * heap's and never held.
 */
static void test_classes(void **state)
{
	struct blockpool p;
	uint64_t reused, fresh;
	size_t held;
	char *a, *b;
	int rc = 0;

	(void)state;
	assert_int_equal(blockpool_init_classes(&p, 1 << 20, 4096, 1 << 16), 0);
	a = get(&p, 5000); /* class 6144 */
	memset(a, 0x5a, 5000);
	b = grow_resize(&p.alloc, a, 5000, 6144, &rc); /* same block */
	assert_ptr_equal(b, a);
	b = grow_resize(&p.alloc, a, 6144, 6145, &rc); /* class 8192: moved, bytes kept */
	assert_non_null(b);
	assert_ptr_not_equal(b, a);
	for (size_t i = 0; i < 5000; i++)
		assert_int_equal((unsigned char)b[i], 0x5a);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 6144); /* a, held */
	a = get(&p, 4097); /* class 6144: a again */
	blockpool_stats(&p, &held, &reused, &fresh);
	assert_int_equal(held, 0);
	assert_int_equal(reused, 1);
	drop(&p, a, 4097);
	drop(&p, b, 6145);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 6144 + 8192);
	/* Below min and above max: the C heap, resized and freed as realloc does. */
	a = get(&p, 100);
	memcpy(a, "small", 6);
	a = grow_resize(&p.alloc, a, 100, 3000, &rc);
	assert_string_equal(a, "small");
	a = grow_resize(&p.alloc, a, 3000, 5000, &rc); /* into a class block */
	assert_string_equal(a, "small");
	a = grow_resize(&p.alloc, a, 5000, (1 << 16) + 1, &rc); /* out of the classes */
	assert_string_equal(a, "small");
	drop(&p, a, (1 << 16) + 1);
	blockpool_stats(&p, &held, NULL, NULL);
	/* The 5000-byte request took the 6144 block, and gave it back when it
	 * grew out of the classes. */
	assert_int_equal(held, 6144 + 8192);
	blockpool_release(&p);
}

/* A byte budget on a pool counts the caller's sizes and refunds them. */
static void test_budget_on_pool(void **state)
{
	struct blockpool p;
	struct grow_budget bud;
	size_t held;
	void *a;
	int rc = 0;

	(void)state;
	assert_int_equal(blockpool_init_classes(&p, 1 << 20, 4096, 1 << 16), 0);
	grow_budget_init(&bud, 10000);
	bud.inner = &p.alloc;
	a = grow_resize(&bud.alloc, NULL, 0, 5000, &rc);
	assert_non_null(a);
	assert_int_equal(bud.used, 5000);
	assert_null(grow_resize(&bud.alloc, a, 5000, 20000, &rc));
	assert_int_equal(rc, ERR_TOO_LARGE);
	assert_null(grow_resize(&bud.alloc, a, 5000, 0, &rc));
	assert_int_equal(bud.used, 0);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 6144);
	blockpool_release(&p);
}

/* Arenas on the pool: the second request's blocks are the first one's. */
static void test_arena_on_pool(void **state)
{
	struct blockpool p;
	uint64_t reused, fresh;

	(void)state;
	assert_int_equal(blockpool_init(&p, 8 << 20, 4 << 20), 0);
	for (int round = 0; round < 2; round++) {
		struct arena a;

		arena_init_alloc(&a, 16 << 20, &p.alloc);
		for (int i = 0; i < 100; i++)
			assert_non_null(arena_calloc(&a, 1000, 7));
		assert_int_equal(arena_failed(&a), 0);
		arena_release(&a);
	}
	blockpool_stats(&p, NULL, &reused, &fresh);
	assert_true(fresh > 0);
	assert_int_equal(reused, fresh);
	blockpool_release(&p);
}

static void *worker(void *arg)
{
	struct blockpool *p = arg;

	for (int i = 0; i < 2000; i++) {
		size_t n = 4096u << (i % 4);
		unsigned char *b = get(p, n);

		memset(b, i & 0xff, n);
		assert_int_equal(b[n - 1], i & 0xff);
		drop(p, b, n);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct blockpool p;
	pthread_t t[4];
	uint64_t reused, fresh;

	(void)state;
	assert_int_equal(blockpool_init(&p, 1 << 20, 1 << 20), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, &p), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	blockpool_stats(&p, NULL, &reused, &fresh);
	assert_int_equal(reused + fresh, 4 * 2000);
	assert_true(reused > 0);
	blockpool_release(&p);
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

/*
 * Decay: blocks of a size unused for longer than the idle time leave at the
 * next give-back; a size in use stays; nothing decays without
 * blockpool_set_idle.
 */
static void test_idle_decay(void **state)
{
	struct blockpool p, q;
	size_t held;
	void *big, *small;

	(void)state;
	assert_int_equal(blockpool_init(&p, 8 << 20, 4 << 20), 0);
	assert_int_equal(blockpool_init(&q, 8 << 20, 4 << 20), 0);
	blockpool_set_idle(&p, 1000 * 1000000LL); /* 1 s */
	for (int i = 0; i < 2; i++) {
		struct blockpool *x = i ? &q : &p;

		big = get(x, 1 << 20);
		small = get(x, 4096);
		drop(x, big, 1 << 20);
		drop(x, small, 4096);
		blockpool_stats(x, &held, NULL, NULL);
		assert_int_equal(held, (1 << 20) + 4096);
	}
	pause_ms(1200);
	/* The small size is used again; the big one has been idle 1.2 s. */
	for (int i = 0; i < 2; i++) {
		struct blockpool *x = i ? &q : &p;

		small = get(x, 4096);
		drop(x, small, 4096);
		blockpool_stats(x, &held, NULL, NULL);
		assert_int_equal(held, i ? (1 << 20) + 4096 : 4096);
	}
	/* A size taken and given back within the idle time stays. */
	small = get(&p, 4096);
	drop(&p, small, 4096);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 4096);
	blockpool_release(&p);
	blockpool_release(&q);
}

/*
 * blockpool_decay: an idle pool lets its blocks go without a give-back;
 * a block used within the idle time stays; a pool without an idle time
 * keeps everything.
 */
static void test_decay_on_timer(void **state)
{
	struct blockpool p, q;
	size_t held;
	void *a, *a2, *b;

	(void)state;
	assert_int_equal(blockpool_init(&p, 8 << 20, 4 << 20), 0);
	assert_int_equal(blockpool_init(&q, 8 << 20, 4 << 20), 0);
	blockpool_set_idle(&p, 300 * 1000000LL); /* 0.3 s */
	for (int i = 0; i < 2; i++) {
		struct blockpool *x = i ? &q : &p;

		a = get(x, 1 << 20);
		a2 = get(x, 1 << 20);
		b = get(x, 2 << 20);
		drop(x, a, 1 << 20);
		drop(x, a2, 1 << 20);
		drop(x, b, 2 << 20);
	}
	assert_int_equal(blockpool_decay(&p), 0); /* all used just now */
	assert_int_equal(blockpool_decay(&q), 0);
	pause_ms(400);
	/* Taking one 1 MiB block (no give-back) keeps the other of its size. */
	a = get(&p, 1 << 20);
	assert_int_equal(blockpool_decay(&p), 2 << 20);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 1 << 20);
	assert_int_equal(blockpool_decay(&q), 0);
	blockpool_stats(&q, &held, NULL, NULL);
	assert_int_equal(held, 4 << 20);
	drop(&p, a, 1 << 20);
	pause_ms(400);
	assert_int_equal(blockpool_decay(&p), 2 << 20);
	blockpool_stats(&p, &held, NULL, NULL);
	assert_int_equal(held, 0);
	blockpool_release(&p);
	blockpool_release(&q);
}

/* Blocks of BLOCKPOOL_HUGE bytes or more: whole, reused, and grown with
 * their bytes, whatever pages back them. */
static void test_huge_blocks(void **state)
{
	const size_t big = BLOCKPOOL_HUGE + BLOCKPOOL_HUGE / 2 + 100;
	struct blockpool p;
	uint64_t reused, fresh;
	size_t held;
	unsigned char *a, *b;
	int rc = 0;

	(void)state;
	assert_int_equal(blockpool_init(&p, 4 * BLOCKPOOL_HUGE, 4 * BLOCKPOOL_HUGE), 0);
	a = get(&p, big);
#if !defined(__SANITIZE_ADDRESS__)
	assert_int_equal((uintptr_t)a % BLOCKPOOL_HUGE, 0);
#endif
	memset(a, 0x5c, big);
	drop(&p, a, big);
	b = get(&p, big);
	assert_ptr_equal(b, a);
	/* Held, it kept its bytes past the pool's link in its first pointer. */
	assert_int_equal(b[big - 1], 0x5c);
	memset(b, 0x5c, sizeof(void *));
	/* Grown into a block of another size: the bytes move with it. */
	b = grow_resize(&p.alloc, b, big, 2 * BLOCKPOOL_HUGE + 1, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(b);
	assert_int_equal(b[0], 0x5c);
	assert_int_equal(b[big - 1], 0x5c);
	memset(b, 0x3a, 2 * BLOCKPOOL_HUGE + 1);
	drop(&p, b, 2 * BLOCKPOOL_HUGE + 1);
	/* Past max_block: freed at once, not held. */
	a = get(&p, 5 * BLOCKPOOL_HUGE);
	memset(a, 1, 5 * BLOCKPOOL_HUGE);
	drop(&p, a, 5 * BLOCKPOOL_HUGE);
	blockpool_stats(&p, &held, &reused, &fresh);
	/* Both sizes held: the first block was given back when it grew. */
	assert_int_equal(held, big + 2 * BLOCKPOOL_HUGE + 1);
	assert_int_equal(reused, 1);
	assert_int_equal(fresh, 3);
	blockpool_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_size_reused),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_resize_keeps_bytes),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_budget_on_pool),
		cmocka_unit_test(test_arena_on_pool),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_idle_decay),
		cmocka_unit_test(test_decay_on_timer),
		cmocka_unit_test(test_huge_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
