/*
 * test_symcache.c - the persisted symbol cache (symcache.c) over a real
 * store: frames written in batches read back through the store and then
 * the hot cache, records that do not decode read as misses, a callback's
 * error, and dropping one build ID without touching another whose bytes
 * start with it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"

#define N 5000 /* more than one write batch */

static char g_dir[] = "/tmp/unhex-symcache-XXXXXX";
static struct store *g_st;
static struct debuginfo *g_s;
static const uint8_t g_a[20] = { 0xaa, 1, 2, 3 };
static const uint8_t g_b[24] = { 0xaa, 1, 2, 3 }; /* starts with g_a's bytes */
static struct debuginfo_addr_req g_reqs[N];

static int setup(void **state)
{
	struct store_options so = { 0 };
	struct debuginfo_options o = { 0 };
	struct err_msg msg;
	char data[64];

	(void)state;
	if (!mkdtemp(g_dir))
		return -1;
	err_clear(&msg);
	so.dir = g_dir;
	snprintf(data, sizeof(data), "%s/data", g_dir);
	o.data_dir = data;
	o.workers = 1;
	for (size_t i = 0; i < N; i++) {
		g_reqs[i].addr = 0x1000 + 4 * (i / 2);
		g_reqs[i].leaf = (int)(i % 2);
	}
	if (store_open(&so, &g_st, &msg) || debuginfo_open(g_st, &o, &g_s, &msg))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	debuginfo_close(g_s);
	store_close(g_st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The frames of request i: a name and line that say which request it was. */
static void frames_of(size_t i, struct sym_frame *f, char *name, size_t cap)
{
	snprintf(name, cap, "fn_%zx_%d", (size_t)g_reqs[i].addr, g_reqs[i].leaf);
	memset(f, 0, sizeof(*f));
	f->function = name;
	f->file = "/src/x.c";
	f->line = (uint32_t)i;
}

static void write_all(const uint8_t *bid, size_t blen)
{
	struct debuginfo__symcache_writer w;
	struct sym_frame f;
	char name[64];

	assert_int_equal(debuginfo__symcache_writer_init(&w, g_s, bid, blen), 0);
	for (size_t i = 0; i < N; i++) {
		frames_of(i, &f, name, sizeof(name));
		assert_int_equal(debuginfo__symcache_add(&w, &g_reqs[i], &f, i % 7 ? 1 : 0), 0);
	}
	assert_int_equal(debuginfo__symcache_flush(&w), 0);
	debuginfo__symcache_writer_release(&w);
}

struct got {
	size_t calls;
	int fail_at; /* -1: never */
	uint8_t seen[N];
};

static int on_frames(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	struct got *g = ctx;
	char name[64];

	assert_true(i < N);
	assert_true(vaddr == g_reqs[i].addr);
	assert_int_equal(n, i % 7 ? 1 : 0);
	if (n) {
		snprintf(name, sizeof(name), "fn_%zx_%d", (size_t)g_reqs[i].addr, g_reqs[i].leaf);
		assert_string_equal(f[0].function, name);
		assert_string_equal(f[0].file, "/src/x.c");
		assert_int_equal(f[0].line, i);
	}
	g->seen[i]++;
	g->calls++;
	return (int)i == g->fail_at ? ERR_INVALID : 0;
}

static size_t lookup(const uint8_t *bid, size_t blen, struct got *g, uint8_t *missing, int *rc)
{
	size_t n_missing = 0;

	memset(g->seen, 0, sizeof(g->seen));
	g->calls = 0;
	memset(missing, 0, N);
	*rc = debuginfo__symcache_lookup(g_s, bid, blen, g_reqs, N, on_frames, g, missing,
					 &n_missing);
	return n_missing;
}

static void test_write_and_read(void **state)
{
	static struct got g = { .fail_at = -1 };
	static uint8_t missing[N];
	int rc;

	(void)state;
	assert_int_equal(lookup(g_a, sizeof(g_a), &g, missing, &rc), N);
	assert_int_equal(rc, 0);
	assert_int_equal(g.calls, 0);
	write_all(g_a, sizeof(g_a));
	/* From the hot cache, which the writes filled. */
	assert_int_equal(lookup(g_a, sizeof(g_a), &g, missing, &rc), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(g.calls, N);
	/* From the store, with the hot cache empty, then from the hot cache again. */
	debuginfo__hot_clear(&g_s->hot);
	assert_int_equal(lookup(g_a, sizeof(g_a), &g, missing, &rc), 0);
	assert_int_equal(g.calls, N);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(g.seen[i], 1);
	assert_int_equal(g_s->hot.n, N);
	/* A callback's error stops the lookup and is returned. */
	g.fail_at = 10;
	assert_int_equal(lookup(g_a, sizeof(g_a), &g, missing, &rc), 0);
	assert_int_equal(rc, ERR_INVALID);
	assert_int_equal(g.calls, 11);
	g.fail_at = -1;
}

static void test_undecodable_is_a_miss(void **state)
{
	static struct got g = { .fail_at = -1 };
	static uint8_t missing[N];
	uint8_t key[DEBUGINFO__KEY_MAX];
	struct store_kv kv = { key, sizeof(g_a) + 9, "\x07garbage", 8 };
	int rc;

	(void)state;
	debuginfo__cache_key(key, g_a, sizeof(g_a), &g_reqs[3]);
	assert_int_equal(store_aux_write(g_st, STORE_AUX_SYMCACHE, &kv, 1, NULL), 0);
	debuginfo__hot_clear(&g_s->hot);
	assert_int_equal(lookup(g_a, sizeof(g_a), &g, missing, &rc), 1);
	assert_int_equal(rc, 0);
	assert_int_equal(missing[3], 1);
	assert_int_equal(g.seen[3], 0);
	write_all(g_a, sizeof(g_a)); /* rewritten, as a query would */
}

static void test_drop(void **state)
{
	static struct got g = { .fail_at = -1 };
	static uint8_t missing[N];
	int rc;

	(void)state;
	write_all(g_b, sizeof(g_b));
	debuginfo__symcache_drop(g_s, g_a, sizeof(g_a));
	assert_int_equal(g_s->hot.n, 0);
	assert_int_equal(lookup(g_a, sizeof(g_a), &g, missing, &rc), N);
	assert_int_equal(rc, 0);
	/* The longer build ID that starts with the same bytes keeps its frames. */
	assert_int_equal(lookup(g_b, sizeof(g_b), &g, missing, &rc), 0);
	assert_int_equal(g.calls, N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_and_read),
		cmocka_unit_test(test_undecodable_is_a_miss),
		cmocka_unit_test(test_drop),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
