/*
 * test_symstep.c - the query's symbolization step over a real store and
 * symbolization service: the memo (what one query stores the next finds,
 * per tenant, partition, location and leafness; the byte cap and its reset
 * while older readers still hold their frames; concurrent readers and
 * writers), the unnamed shares per build ID, JIT frames named from a
 * process's perf map, and a tenant whose symbolization is off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>

#include "fixture.h"

#include "base/buf.h"
#include "debuginfo/debuginfo.h"
#include "query/query.h"
#include "query/query_int.h"
#include "storage/storage.h"

static struct fx g_fx;
static struct debuginfo *g_svc;

static int setup(void **state)
{
	struct debuginfo_options o = { 0 };
	struct err_msg msg = { { 0 } };

	(void)state;
	fx_open(&g_fx);
	o.data_dir = g_fx.dir;
	o.debuginfod_urls = "";
	o.workers = 1;
	return debuginfo_open(g_fx.st, &o, &g_svc, &msg);
}

static int teardown(void **state)
{
	(void)state;
	debuginfo_close(g_svc);
	fx_close(&g_fx);
	return 0;
}

/* The name a (part, loc, leaf) is given in these tests, frame k of it. */
static void name_of(char *out, size_t cap, uint32_t part, uint32_t loc, int leaf, uint32_t k)
{
	snprintf(out, cap, "fn_%u_%u_%d_%u", part, loc, leaf, k % 3);
}

static void put_named(struct qmemo_view *v, uint32_t part, uint32_t loc, int leaf, uint32_t n)
{
	struct qsym_frame f[4];
	char names[4][64];

	for (uint32_t k = 0; k < n; k++) {
		name_of(names[k], sizeof(names[k]), part, loc, leaf, k);
		f[k].function = names[k];
		f[k].function_len = (uint32_t)strlen(names[k]);
		f[k].file = k ? "src/x.c" : NULL;
		f[k].line = 10 + k;
		f[k].column = k;
	}
	query__memo_put(v, part, loc, leaf, f, n);
}

static uint64_t metric(struct query_symmemo *m, const char *name)
{
	struct buf b;
	const char *p;
	uint64_t v = UINT64_MAX;

	buf_init(&b, 1 << 30);
	assert_int_equal(query_symmemo_metrics(m, &b), 0);
	assert_int_equal(buf_putc(&b, '\0'), 0);
	/* The sample line, not the # HELP line naming the same metric. */
	for (p = b.data; (p = strstr(p, name)) && p != b.data && p[-1] != '\n';)
		p++;
	if (p)
		v = strtoull(p + strlen(name), NULL, 10);
	else
		fail_msg("no %s in the metrics", name);
	buf_release(&b);
	return v;
}

static void test_roundtrip(void **state)
{
	struct query_symmemo *m;
	struct qmemo_view v;
	const struct qsym_frame *f, *g;
	uint32_t n;
	char want[64];

	(void)state;
	assert_int_equal(query_symmemo_new(g_svc, 0, &m), 0);
	query__memo_begin(m, "acme", &v);
	assert_int_equal(query__memo_get(&v, 1, 5, 1, &f, &n), 0);
	query__memo_unlock(&v);
	query__memo_put_begin(&v, "acme");
	put_named(&v, 1, 5, 1, 3);
	put_named(&v, 1, 5, 0, 0); /* resolved: nothing known there */
	put_named(&v, 2, 70000, 1, 1);
	put_named(&v, 2, 70001, 1, 2);
	query__memo_put_end(&v);
	query__memo_end(&v);
	assert_int_equal(metric(m, "unhex_symbolize_memo_lookups_total{result=\"stored\"} "), 4);

	query__memo_begin(m, "acme", &v);
	assert_int_equal(query__memo_get(&v, 1, 5, 1, &f, &n), 1);
	assert_int_equal(n, 3);
	assert_int_equal(query__memo_get(&v, 1, 5, 1, &f, &n), 1); /* twice: two hits */
	for (uint32_t k = 0; k < n; k++) {
		name_of(want, sizeof(want), 1, 5, 1, k);
		assert_string_equal(f[k].function, want);
		assert_int_equal(f[k].function_len, strlen(want));
		assert_int_equal(f[k].line, 10 + k);
		if (k)
			assert_string_equal(f[k].file, "src/x.c");
		else
			assert_null(f[k].file);
	}
	assert_int_equal(query__memo_get(&v, 1, 5, 0, &g, &n), 1);
	assert_int_equal(n, 0);
	assert_int_equal(query__memo_get(&v, 2, 70000, 1, &g, &n), 1);
	assert_int_equal(n, 1);
	assert_int_equal(query__memo_get(&v, 2, 70001, 1, &g, &n), 1);
	assert_int_equal(n, 2);
	/* Interned: one copy of a string however many frames use it. */
	assert_ptr_equal(f[1].file, g[1].file);
	assert_int_equal(query__memo_get(&v, 2, 70000, 0, &f, &n), 0);
	assert_int_equal(query__memo_get(&v, 1, 6, 1, &f, &n), 0);
	assert_int_equal(query__memo_get(&v, 3, 5, 1, &f, &n), 0);
	query__memo_end(&v);
	/* Tenants never see each other's locations. */
	query__memo_begin(m, "other", &v);
	assert_int_equal(query__memo_get(&v, 1, 5, 1, &f, &n), 0);
	query__memo_end(&v);
	assert_int_equal(metric(m, "unhex_symbolize_memo_lookups_total{result=\"hit\"} "), 5);
	assert_int_equal(metric(m, "unhex_symbolize_memo_resets_total "), 0);
	query_symmemo_free(m);

	/* Without a memo everything is a quiet miss. */
	query__memo_begin(NULL, "acme", &v);
	assert_int_equal(query__memo_get(&v, 1, 5, 1, &f, &n), 0);
	query__memo_unlock(&v);
	query__memo_put_begin(&v, "acme");
	put_named(&v, 1, 5, 1, 1);
	query__memo_put_end(&v);
	query__memo_end(&v);
}

/* Blocks' partitions (ids from 2^31) are memoized like the head's, many of
 * them side by side, and storing them never empties the memo. */
static void test_block_parts(void **state)
{
	const uint32_t n_parts = 200, head = 3;
	struct query_symmemo *m;
	struct qmemo_view v;
	const struct qsym_frame *f;
	uint32_t n, p;
	char want[64];

	(void)state;
	assert_int_equal(query_symmemo_new(g_svc, 0, &m), 0);
	query__memo_begin(m, "acme", &v);
	query__memo_unlock(&v);
	query__memo_put_begin(&v, "acme");
	for (p = 0; p < n_parts; p++) {
		put_named(&v, STORE_BLOCK_PART_MIN + p, p + 1, 1, 1 + p % 3);
		put_named(&v, head, p + 1, 0, 1);
	}
	query__memo_put_end(&v);
	query__memo_end(&v);
	assert_int_equal(metric(m, "unhex_symbolize_memo_lookups_total{result=\"stored\"} "),
			 2 * n_parts);

	query__memo_begin(m, "acme", &v);
	/* Interleaved partitions, as a merge of several blocks asks. */
	for (p = n_parts; p-- > 0;) {
		assert_int_equal(query__memo_get(&v, STORE_BLOCK_PART_MIN + p, p + 1, 1, &f, &n), 1);
		assert_int_equal(n, 1 + p % 3);
		name_of(want, sizeof(want), STORE_BLOCK_PART_MIN + p, p + 1, 1, 0);
		assert_string_equal(f[0].function, want);
		assert_int_equal(query__memo_get(&v, head, p + 1, 0, &f, &n), 1);
		assert_int_equal(n, 1);
		/* Same location id, another partition or role: not memoized. */
		assert_int_equal(query__memo_get(&v, STORE_BLOCK_PART_MIN + p, p + 1, 0, &f, &n), 0);
		assert_int_equal(query__memo_get(&v, STORE_BLOCK_PART_MIN + n_parts + p, p + 1, 1,
						 &f, &n), 0);
	}
	query__memo_end(&v);
	assert_int_equal(metric(m, "unhex_symbolize_memo_resets_total "), 0);
	query_symmemo_free(m);
}

/* Past the cap storing stops, the next writer starts over, and a reader
 * of the old generation keeps valid frames until it ends. */
static void test_cap(void **state)
{
	const size_t cap = 256 << 10;
	struct query_symmemo *m;
	struct qmemo_view v, old;
	const struct qsym_frame *f;
	uint32_t n, loc;
	char want[64];

	(void)state;
	assert_int_equal(query_symmemo_new(g_svc, cap, &m), 0);
	query__memo_begin(m, "acme", &v);
	query__memo_unlock(&v);
	query__memo_put_begin(&v, "acme");
	for (loc = 1; loc < 100000; loc++)
		put_named(&v, 1, loc, 1, 2);
	query__memo_put_end(&v);
	query__memo_end(&v);
	assert_true(metric(m, "unhex_symbolize_memo_lookups_total{result=\"stored\"} ") < 99999);
	assert_true(metric(m, "unhex_symbolize_memo_lookups_total{result=\"stored\"} ") > 100);
	assert_true(metric(m, "unhex_symbolize_memo_bytes ") <= cap + 4096);

	query__memo_begin(m, "acme", &old);
	assert_int_equal(query__memo_get(&old, 1, 7, 1, &f, &n), 1);
	query__memo_unlock(&old);
	/* The memo is full: this writer replaces it. */
	query__memo_begin(m, "acme", &v);
	query__memo_unlock(&v);
	query__memo_put_begin(&v, "acme");
	put_named(&v, 9, 9, 0, 1);
	query__memo_put_end(&v);
	query__memo_end(&v);
	assert_int_equal(metric(m, "unhex_symbolize_memo_resets_total "), 1);
	assert_int_equal(n, 2);
	name_of(want, sizeof(want), 1, 7, 1, 1);
	assert_string_equal(f[1].function, want); /* still the old generation's */
	query__memo_end(&old);

	query__memo_begin(m, "acme", &v);
	assert_int_equal(query__memo_get(&v, 1, 7, 1, &f, &n), 0);
	assert_int_equal(query__memo_get(&v, 9, 9, 0, &f, &n), 1);
	query__memo_end(&v);
	query_symmemo_free(m);
}

struct worker {
	struct query_symmemo *m;
	unsigned seed;
	int bad;
	uint64_t hits;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char want[64];

	for (int it = 0; it < 400; it++) {
		struct qmemo_view v;
		const struct qsym_frame *f;
		uint32_t n;

		query__memo_begin(w->m, (it & 1) ? "acme" : "beta", &v);
		for (int i = 0; i < 50; i++) {
			uint32_t part = 1 + rand_r(&w->seed) % 3, loc = rand_r(&w->seed) % 3000;
			int leaf = (int)(rand_r(&w->seed) & 1);

			if (!query__memo_get(&v, part, loc, leaf, &f, &n))
				continue;
			w->hits++;
			if (n != 1 + loc % 3)
				w->bad++;
			for (uint32_t k = 0; k < n; k++) {
				name_of(want, sizeof(want), part, loc, leaf, k);
				if (strcmp(f[k].function, want))
					w->bad++;
			}
		}
		query__memo_unlock(&v);
		query__memo_put_begin(&v, (it & 1) ? "acme" : "beta");
		for (int i = 0; i < 40; i++) {
			uint32_t part = 1 + rand_r(&w->seed) % 3, loc = rand_r(&w->seed) % 3000;

			put_named(&v, part, loc, (int)(rand_r(&w->seed) & 1), 1 + loc % 3);
		}
		query__memo_put_end(&v);
		query__memo_end(&v);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct query_symmemo *m;
	struct worker w[4];
	pthread_t t[4];
	uint64_t hits = 0;

	(void)state;
	/* A small cap, so generations are replaced under the readers' feet. */
	assert_int_equal(query_symmemo_new(g_svc, 1 << 20, &m), 0);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ m, 77u + (unsigned)i, 0, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].bad, 0);
		hits += w[i].hits;
	}
	assert_true(hits > 0);
	assert_int_equal(metric(m, "unhex_symbolize_memo_lookups_total{result=\"hit\"} "), hits);
	assert_true(metric(m, "unhex_symbolize_memo_resets_total ") > 0);
	query_symmemo_free(m);
}

static uint32_t add_loc(struct store_txn *tx, uint32_t part, uint32_t map, uint64_t addr,
			const struct store_line *line)
{
	struct store_location l = { map, addr, line, line ? 1 : 0 };
	uint32_t id;

	assert_int_equal(store_txn_location(tx, part, &l, &id), 0);
	return id;
}

/*
 * A transaction of `tenant` (commit_cpu ends it) with the partition of
 * `service` and its CPU series.
 */
static struct store_txn *begin_cpu(const char *tenant, const char *service, uint32_t *part,
				   uint64_t *series)
{
	struct store_label labels[2] = { { STORE_LABEL_SERVICE, service },
					 { STORE_LABEL_PROFILE_TYPE, FX_CPU } };
	struct err_msg msg = { { 0 } };
	struct store_txn *tx;

	assert_int_equal(store_txn_begin(g_fx.st, tenant, &tx, &msg), 0);
	assert_int_equal(store_txn_partition(tx, service, part), 0);
	assert_int_equal(store_txn_series(tx, labels, 2, series, &msg), 0);
	return tx;
}

/* One 10-second profile at FX_T0 of the `n` stacks, and the commit. */
static void commit_cpu(struct store_txn *tx, uint64_t series, uint32_t part,
		       const uint32_t *stacks, const int64_t *values, size_t n)
{
	struct store_profile_meta meta = { FX_T0, 10 * FX_SEC, 10000000, { 0 } };
	struct err_msg msg = { { 0 } };

	assert_int_equal(store_txn_profile(tx, series, part, &meta, stacks, values, n), 0);
	assert_int_equal(store_txn_commit(tx, &msg), 0);
}

/* The symbolization object of `tenant`'s CPU profiles of `service` into out (reset). */
static void symbolization_of(const char *tenant, const char *service, struct buf *out)
{
	char query[128];
	struct query_params p = { 0 };
	struct err_msg msg = { { 0 } };

	snprintf(query, sizeof(query), FX_CPU "{service_name=\"%s\"}", service);
	p.query = query;
	p.from_ns = FX_T0 - FX_SEC;
	p.until_ns = FX_T0 + 60 * FX_SEC;
	p.limits.symbolizer = g_svc;
	buf_reset(out);
	assert_int_equal(query_symbolization(g_fx.st, tenant, &p, out, &msg), 0);
	assert_int_equal(buf_putc(out, '\0'), 0);
}

static uint32_t add_map(struct store_txn *tx, uint32_t part, const struct store_mapping *m)
{
	uint32_t id;

	assert_int_equal(store_txn_mapping(tx, part, m, &id), 0);
	return id;
}

/* The stack of `n` locations, leaf first. */
static uint32_t add_stack(struct store_txn *tx, uint32_t part, const uint32_t *leaf_first,
			  size_t n)
{
	uint32_t id;

	assert_int_equal(store_txn_stack(tx, part, leaf_first, n, &id), 0);
	return id;
}

/* The share after `"binary":"<binary>"` in a symbolization object. */
static double share_of(const char *json, const char *binary)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "\"binary\":\"%s\"", binary);
	p = strstr(json, key);
	if (!p || !(p = strstr(p, "\"samplesShare\":")))
		fail_msg("no share of %s in %s", binary, json);
	return strtod(p + strlen("\"samplesShare\":"), NULL);
}

/*
 * A stack counts against every build ID with an unnamed frame on it: a
 * missing library at the leaf must not hide a missing program above it.
 */
static void test_shares(void **state)
{
	static const char *bid_prog = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	static const char *bid_lib = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
	struct store_mapping mp = { 0x400000, 0x500000, 0, "/usr/bin/prog", bid_prog, 0 };
	struct store_mapping ml = { 0x7f0000000000, 0x7f0000100000, 0, "/lib/libc.so.6", bid_lib, 0 };
	struct store_mapping mn = { 0x600000, 0x700000, 0, "/usr/bin/named", "", STORE_MAP_HAS_FUNCTIONS };
	struct store_function fn = { "named_main", "", "n.c", 1 };
	struct store_line line = { 0, 5, 0 };
	struct store_txn *tx;
	uint32_t part, map_p, map_l, map_n, main_, work_, memcpy_, named, st[3], leaf_first[2];
	int64_t values[3] = { 6, 3, 1 };
	uint64_t series;
	struct buf out;

	(void)state;
	tx = begin_cpu("shares", "svc", &part, &series);
	map_p = add_map(tx, part, &mp);
	map_l = add_map(tx, part, &ml);
	map_n = add_map(tx, part, &mn);
	main_ = add_loc(tx, part, map_p, 0x1100, NULL);
	work_ = add_loc(tx, part, map_p, 0x1200, NULL);
	memcpy_ = add_loc(tx, part, map_l, 0x2300, NULL);
	assert_int_equal(store_txn_function(tx, part, &fn, &line.function_id), 0);
	named = add_loc(tx, part, map_n, 0x10, &line);
	leaf_first[0] = memcpy_, leaf_first[1] = main_; /* main -> memcpy: 6 */
	st[0] = add_stack(tx, part, leaf_first, 2);
	leaf_first[0] = work_;                          /* main -> work: 3 */
	st[1] = add_stack(tx, part, leaf_first, 2);
	st[2] = add_stack(tx, part, &named, 1); /* named: 1 */
	commit_cpu(tx, series, part, st, values, 3);

	buf_init(&out, 1 << 30);
	symbolization_of("shares", "svc", &out);
	assert_non_null(strstr(out.data, "\"unsymbolizedShare\":0.900000"));
	assert_true(share_of(out.data, "prog") > 0.8999 && share_of(out.data, "prog") < 0.9001);
	assert_true(share_of(out.data, "libc.so.6") > 0.5999 && share_of(out.data, "libc.so.6") < 0.6001);
	assert_non_null(strstr(out.data, "\"status\":\"not_found\""));
	buf_release(&out);
}

/* JIT code: perf-77.map frames wait for the map of process 77 with its
 * reason, then are named from it (a caller at addr - 1); //anon says what
 * to do; the map of another tenant does not count. */
static void test_jit(void **state)
{
	struct store_mapping mj = { 0x7f0000000000, 0x7f0000100000, 0x7f0000000000,
				    "/tmp/perf-77.map", "", 0 };
	struct store_mapping ma = { 0x7e0000000000, 0x7e0000001000, 0, "//anon", "", 0 };
	static const char map[] = "7f0000001000 100 JS:*hot a.js:1:1\n"
				  "7f0000002000 100 JS:~caller a.js:9:1\n";
	struct err_msg msg = { { 0 } };
	struct store_txn *tx;
	uint32_t part, map_j, map_a, hot, caller, anon, st[2], leaf_first[2];
	int64_t values[2] = { 3, 1 };
	uint64_t series;
	size_t entries;
	struct buf out;

	(void)state;
	tx = begin_cpu("jit", "node", &part, &series);
	map_j = add_map(tx, part, &mj);
	map_a = add_map(tx, part, &ma);
	hot = add_loc(tx, part, map_j, 0x7f0000001010, NULL);
	/* A return address just past the caller's entry: named at - 1. */
	caller = add_loc(tx, part, map_j, 0x7f0000002100, NULL);
	anon = add_loc(tx, part, map_a, 0x10, NULL);
	leaf_first[0] = hot, leaf_first[1] = caller; /* caller -> hot: 3 */
	st[0] = add_stack(tx, part, leaf_first, 2);
	st[1] = add_stack(tx, part, &anon, 1); /* anon: 1 */
	commit_cpu(tx, series, part, st, values, 2);

	buf_init(&out, 1 << 30);
	symbolization_of("jit", "node", &out);
	assert_non_null(strstr(out.data, "\"unsymbolizedShare\":1.000000"));
	assert_non_null(strstr(out.data, "no perf map for process 77"));
	assert_non_null(strstr(out.data, "anonymous executable memory (JIT code?)"));

	/* Another tenant's map of the same pid changes nothing. */
	assert_int_equal(debuginfo_perfmap_put(g_svc, "other", 77, map, strlen(map), 0, &entries,
					       &msg), 0);
	symbolization_of("jit", "node", &out);
	assert_non_null(strstr(out.data, "no perf map for process 77"));

	/* The tenant's own map names both frames: only //anon stays hex. */
	assert_int_equal(debuginfo_perfmap_put(g_svc, "jit", 77, map, strlen(map), 0, &entries, &msg),
			 0);
	symbolization_of("jit", "node", &out);
	assert_non_null(strstr(out.data, "\"unsymbolizedShare\":0.250000"));
	assert_null(strstr(out.data, "no perf map"));
	buf_release(&out);
}

/*
 * A tenant whose symbolization is off: frames its perf map would name stay
 * as stored, every binary says disabled, and the object says so.
 */
static void test_disabled(void **state)
{
	struct store_mapping mj = { 0x7f0000000000, 0x7f0000100000, 0x7f0000000000,
				    "/tmp/perf-78.map", "", 0 };
	static const char map[] = "7f0000001000 100 JS:*hot a.js:1:1\n";
	struct debuginfo_tenant_conf off = { "quiet", 0, 0, NULL, NULL };
	struct err_msg msg = { { 0 } };
	struct store_txn *tx;
	uint32_t part, map_j, hot, st;
	int64_t value = 2;
	uint64_t series;
	size_t entries;
	struct buf out;

	(void)state;
	tx = begin_cpu("quiet", "node", &part, &series);
	map_j = add_map(tx, part, &mj);
	hot = add_loc(tx, part, map_j, 0x7f0000001010, NULL);
	st = add_stack(tx, part, &hot, 1);
	commit_cpu(tx, series, part, &st, &value, 1);
	assert_int_equal(debuginfo_perfmap_put(g_svc, "quiet", 78, map, strlen(map), 0, &entries,
					       &msg), 0);

	buf_init(&out, 1 << 30);
	symbolization_of("quiet", "node", &out);
	assert_non_null(strstr(out.data, "\"unsymbolizedShare\":0.000000")); /* named by the map */

	assert_int_equal(debuginfo_tenants_set(g_svc, 1, &off, 1, &msg), 0);
	symbolization_of("quiet", "node", &out);
	assert_non_null(strstr(out.data, "\"disabled\":true"));
	assert_non_null(strstr(out.data, "\"unsymbolizedShare\":1.000000"));
	assert_non_null(strstr(out.data, "\"status\":\"disabled\""));
	assert_non_null(strstr(out.data, DEBUGINFO_DISABLED_REASON));
	/* Another tenant is not affected. */
	symbolization_of("jit", "node", &out);
	assert_null(strstr(out.data, "disabled"));
	assert_int_equal(debuginfo_tenants_set(g_svc, 1, NULL, 0, &msg), 0);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shares),
		cmocka_unit_test(test_jit),
		cmocka_unit_test(test_disabled),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_block_parts),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
