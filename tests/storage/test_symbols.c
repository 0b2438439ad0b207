/* test_symbols.c - symbol partitions: round trips, deduplication, mapping
 * identity, aborts, stacks given by their frames' contents, reopen with
 * rebuilt dedup tables, runs of new symbols across partitions, corrupt
 * records and runs, and a reader thread racing the writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"
#include "base/varint.h"
#include "storage/storage_int.h"

struct syms {
	uint32_t part, map_a, map_b, fn, loc[3], stack;
};

/* Writes a small symbol set; returns its ids. */
static void write_syms(struct store_txn *tx, struct syms *s)
{
	struct store_mapping ma = { 0x1000, 0x9000, 0x0, "/usr/bin/app", "deadbeef", 0 };
	struct store_mapping mb = { 0x7f0000, 0x7f9000, 0x1000, "/lib/libc.so.6", "", 0 };
	struct store_function f = { "main", "_Z4mainv", "app.c", 10 };
	struct store_line line = { 0, 42, 3 };
	uint32_t leaf_first[3];

	assert_int_equal(store_txn_partition(tx, "svc", &s->part), 0);
	assert_int_equal(store_txn_mapping(tx, s->part, &ma, &s->map_a), 0);
	assert_int_equal(store_txn_mapping(tx, s->part, &mb, &s->map_b), 0);
	assert_int_equal(store_txn_function(tx, s->part, &f, &s->fn), 0);
	line.function_id = s->fn;
	for (int i = 0; i < 3; i++) {
		struct store_location l = { s->map_a, 0x100 + (uint64_t)i * 16, &line, 1 };
		if (i == 2) {
			l.mapping_id = s->map_b;
			l.n_lines = 0;
		}
		assert_int_equal(store_txn_location(tx, s->part, &l, &s->loc[i]), 0);
		leaf_first[2 - i] = s->loc[i];
	}
	assert_int_equal(store_txn_stack(tx, s->part, leaf_first, 3, &s->stack), 0);
}

static void check_syms(struct store *st, const char *tenant, const struct syms *s)
{
	struct store_symbols *sym = NULL;
	struct store_mapping m;
	struct store_function f;
	struct store_location_view lv;
	uint32_t parent, loc, id;

	assert_int_equal(store_symbols_get(st, tenant, s->part, &sym, NULL), 0);
	assert_int_equal(store_symbols_mapping(sym, s->map_a, &m), 0);
	assert_string_equal(m.filename, "/usr/bin/app");
	assert_string_equal(m.build_id, "deadbeef");
	assert_int_equal(m.memory_start, 0x1000);
	assert_int_equal(m.memory_limit, 0x9000);
	assert_int_equal(store_symbols_mapping(sym, s->map_b, &m), 0);
	assert_string_equal(m.build_id, "");
	assert_int_equal(m.file_offset, 0x1000);
	assert_int_equal(store_symbols_function(sym, s->fn, &f), 0);
	assert_string_equal(f.name, "main");
	assert_string_equal(f.system_name, "_Z4mainv");
	assert_string_equal(f.filename, "app.c");
	assert_int_equal(f.start_line, 10);
	assert_int_equal(store_symbols_location(sym, s->loc[0], &lv), 0);
	assert_int_equal(lv.mapping_id, s->map_a);
	assert_int_equal(lv.address, 0x100);
	assert_int_equal(lv.n_lines, 1);
	assert_int_equal(lv.lines[0].function_id, s->fn);
	assert_int_equal(lv.lines[0].line, 42);
	assert_int_equal(lv.lines[0].column, 3);
	assert_int_equal(store_symbols_location(sym, s->loc[2], &lv), 0);
	assert_int_equal(lv.n_lines, 0);
	assert_int_equal(store_symbols_location_count(sym), 3);
	assert_int_equal(store_symbols_stack_count(sym), 3);
	/* Walk the stack from the leaf to the root. */
	id = s->stack;
	for (int i = 2; i >= 0; i--) {
		assert_int_equal(store_symbols_stack_node(sym, id, &parent, &loc), 0);
		assert_int_equal(loc, s->loc[i]);
		id = parent;
	}
	assert_int_equal(id, 0);
	assert_int_equal(store_symbols_stack_node(sym, 0, &parent, &loc), ERR_NOT_FOUND);
	assert_int_equal(store_symbols_stack_node(sym, 99, &parent, &loc), ERR_NOT_FOUND);
	assert_int_equal(store_symbols_function(sym, 99, &f), ERR_NOT_FOUND);
	store_symbols_put(sym);
}

static void test_round_trip_and_reopen(void **state)
{
	struct store *st = sfx_store(state);
	struct syms s, s2;
	struct store_txn *tx;

	tx = begin(st, "t1");
	write_syms(tx, &s);
	/* Same content in the same txn dedups. */
	write_syms(tx, &s2);
	assert_memory_equal(&s, &s2, sizeof(s));
	assert_int_equal(commit(tx), 0);
	check_syms(st, "t1", &s);

	st = sfx_reopen(state, 0);
	check_syms(st, "t1", &s);
	/* After reopen the dedup tables are rebuilt from disk: same ids. */
	tx = begin(st, "t1");
	write_syms(tx, &s2);
	assert_memory_equal(&s, &s2, sizeof(s));
	{
		/* A new stack sharing a prefix adds one node only. */
		uint32_t lf[2] = { s.loc[1], s.loc[0] }, id;
		assert_int_equal(store_txn_stack(tx, s.part, lf, 2, &id), 0);
		assert_int_equal(id, 2);
		lf[0] = s.loc[2];
		assert_int_equal(store_txn_stack(tx, s.part, lf, 2, &id), 0);
		assert_int_equal(id, 4);
	}
	assert_int_equal(commit(tx), 0);
}

static void test_mapping_identity(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct store_mapping m = { 0x1000, 0x2000, 0, "/bin/a", "abc", 0 };
	uint32_t part, a, b, c, d, e;
	struct store_symbols *sym;

	assert_int_equal(store_txn_partition(tx, "svc", &part), 0);
	assert_int_equal(store_txn_mapping(tx, part, &m, &a), 0);
	/* Same build ID, other file name and addresses: the same mapping. */
	m.filename = "/other/path";
	m.memory_start = 0x5000;
	assert_int_equal(store_txn_mapping(tx, part, &m, &b), 0);
	assert_int_equal(a, b);
	/* No build ID: identity by file name. */
	m.build_id = "";
	assert_int_equal(store_txn_mapping(tx, part, &m, &c), 0);
	assert_int_not_equal(c, a);
	m.memory_start = 0x9000;
	assert_int_equal(store_txn_mapping(tx, part, &m, &d), 0);
	assert_int_equal(c, d);
	m.filename = "/bin/a";
	assert_int_equal(store_txn_mapping(tx, part, &m, &e), 0);
	assert_int_not_equal(e, a);
	assert_int_not_equal(e, c);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(store_symbols_get(st, "t", part, &sym, NULL), 0);
	assert_int_equal(store_symbols_mapping(sym, a, &m), 0);
	assert_string_equal(m.filename, "/bin/a"); /* kept as first seen */
	assert_int_equal(m.memory_start, 0x1000);
	store_symbols_put(sym);
}

/* File offsets and ELF virtual addresses of one binary: two mappings, also
 * after the partition is rebuilt from the store. */
static void test_mapping_address_space(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct store_mapping off = { 0x7f0000, 0x7f8000, 0, "/bin/a", "abc", 0 };
	struct store_mapping va = { 0x401000, 0x409000, 0x1000, "a", "abc", STORE_MAP_ADDR_VADDR };
	uint32_t part, a, b, c, d;

	assert_int_equal(store_txn_partition(tx, "svc", &part), 0);
	assert_int_equal(store_txn_mapping(tx, part, &off, &a), 0);
	assert_int_equal(store_txn_mapping(tx, part, &va, &b), 0);
	assert_int_not_equal(a, b);
	assert_int_equal(store_txn_mapping(tx, part, &va, &c), 0);
	assert_int_equal(b, c);
	assert_int_equal(commit(tx), 0);

	st = sfx_reopen(state, 0);
	tx = begin(st, "t");
	assert_int_equal(store_txn_partition(tx, "svc", &part), 0);
	assert_int_equal(store_txn_mapping(tx, part, &va, &c), 0);
	assert_int_equal(store_txn_mapping(tx, part, &off, &d), 0);
	assert_int_equal(c, b);
	assert_int_equal(d, a);
	assert_int_equal(commit(tx), 0);
}

static void test_invalid_refs(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct store_line line = { 5, 1, 0 };
	struct store_location l = { 0, 0x10, &line, 1 };
	uint32_t part, id, bad[2] = { 1, 7 };

	assert_int_equal(store_txn_partition(tx, "svc", &part), 0);
	assert_int_equal(store_txn_location(tx, part, &l, &id), ERR_INVALID); /* function 5 */
	line.function_id = 0;
	l.mapping_id = 3;
	assert_int_equal(store_txn_location(tx, part, &l, &id), ERR_INVALID); /* mapping 3 */
	l.mapping_id = 0;
	assert_int_equal(store_txn_location(tx, part, &l, &id), 0);
	assert_int_equal(store_txn_stack(tx, part, bad, 2, &id), ERR_INVALID); /* location 7 */
	assert_int_equal(store_txn_stack(tx, part + 5, bad, 1, &id), ERR_INVALID);
	assert_int_equal(store_txn_stack(tx, part, bad, 0, &id), 0);
	assert_int_equal(id, 0);
	assert_int_equal(commit(tx), 0);
}

static void test_abort_rolls_back(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx;
	struct syms s, s2;
	struct store_symbols *sym;
	struct store_function f = { "aborted_fn", "", "x.c", 1 };
	uint32_t id, part2;

	tx = begin(st, "t");
	write_syms(tx, &s);
	assert_int_equal(commit(tx), 0);

	tx = begin(st, "t");
	assert_int_equal(store_txn_function(tx, s.part, &f, &id), 0);
	assert_int_equal(id, 2);
	assert_int_equal(store_txn_partition(tx, "svc2", &part2), 0);
	for (int i = 0; i < 3000; i++) {
		struct store_location l = { 0, 0x100000 + (uint64_t)i, NULL, 0 };
		assert_int_equal(store_txn_location(tx, s.part, &l, &id), 0);
	}
	{
		uint32_t lf[2] = { s.loc[2], s.loc[2] };
		assert_int_equal(store_txn_stack(tx, s.part, lf, 2, &id), 0);
		assert_int_equal(id, 5); /* nodes 4 (root loc2) and 5 */
	}
	store_txn_abort(tx);

	/* The whole-stack cache forgets aborted stacks: ids 4 and 5 now name
	 * other stacks, and the aborted one gets new ids. */
	tx = begin(st, "t");
	{
		uint32_t lf[2] = { s.loc[0], s.loc[1] }, lf2[2] = { s.loc[2], s.loc[2] };
		assert_int_equal(store_txn_stack(tx, s.part, lf, 2, &id), 0);
		assert_int_equal(id, 5);
		assert_int_equal(store_txn_stack(tx, s.part, lf2, 2, &id), 0);
		assert_int_equal(id, 7);
		assert_int_equal(store_txn_stack(tx, s.part, lf, 2, &id), 0);
		assert_int_equal(id, 5);
	}
	store_txn_abort(tx);

	assert_int_equal(store_symbols_get(st, "t", s.part, &sym, NULL), 0);
	assert_int_equal(store_symbols_location_count(sym), 3);
	assert_int_equal(store_symbols_function(sym, 2, &f), ERR_NOT_FOUND);
	store_symbols_put(sym);
	assert_int_equal(store_symbols_get(st, "t", part2, &sym, NULL), ERR_NOT_FOUND);

	/* The aborted ids are reused, and old content still dedups. */
	tx = begin(st, "t");
	write_syms(tx, &s2);
	assert_memory_equal(&s, &s2, sizeof(s));
	f.name = "other_fn";
	assert_int_equal(store_txn_function(tx, s.part, &f, &id), 0);
	assert_int_equal(id, 2);
	assert_int_equal(store_txn_partition(tx, "svc3", &id), 0);
	assert_int_equal(id, part2);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(store_symbols_get(st, "t", s.part, &sym, NULL), 0);
	assert_int_equal(store_symbols_function(sym, 2, &f), 0);
	assert_string_equal(f.name, "other_fn");
	store_symbols_put(sym);

	/* Nothing of the aborted txn reached the disk. */
	st = sfx_reopen(state, 0);
	assert_int_equal(store_symbols_get(st, "t", s.part, &sym, NULL), 0);
	assert_int_equal(store_symbols_location_count(sym), 3);
	assert_int_equal(store_symbols_function(sym, 2, &f), 0);
	assert_string_equal(f.name, "other_fn");
	store_symbols_put(sym);
}

/* The frames of write_syms' stack, leaf first, as store_txn_stack_of takes them. */
static void syms_frames(const struct syms *s, struct store_line *line, struct store_location *f)
{
	line->function_id = s->fn;
	line->line = 42;
	line->column = 3;
	for (int i = 0; i < 3; i++) {
		struct store_location l = { s->map_a, 0x100 + (uint64_t)i * 16, line, 1 };
		if (i == 2) {
			l.mapping_id = s->map_b;
			l.n_lines = 0;
		}
		f[2 - i] = l;
	}
}

/* The location ids of stack `id`, leaf first; returns the depth. */
static size_t stack_locs(struct store *st, uint32_t part, uint32_t id, uint32_t *out)
{
	struct store_symbols *sym = NULL;
	uint32_t parent, loc;
	size_t n = 0;

	assert_int_equal(store_symbols_get(st, "t", part, &sym, NULL), 0);
	for (; id; id = parent, n++) {
		assert_int_equal(store_symbols_stack_node(sym, id, &parent, &loc), 0);
		out[n] = loc;
	}
	store_symbols_put(sym);
	return n;
}

/* Points p[0..n) at f[0..n). */
static const struct store_location *const *ptrs(const struct store_location *f, size_t n,
						 const struct store_location **p)
{
	for (size_t i = 0; i < n; i++)
		p[i] = &f[i];
	return p;
}

static void test_stack_of_frames(void **state)
{
	const struct store_location *fp[3];
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct store_line line, lines[STORE_MAX_LINES + 1];
	struct store_location f[3], g[2];
	struct store_symbols *sym = NULL;
	struct store_location_view lv;
	struct syms s;
	uint32_t id, id2, ids[2], locs[4];

	/* The same stack as store_txn_location + store_txn_stack, found twice
	 * (the second time by the contents of its frames), adding nothing. */
	write_syms(tx, &s);
	syms_frames(&s, &line, f);
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(f, 3, fp), 3, &id), 0);
	assert_int_equal(id, s.stack);
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(f, 3, fp), 3, &id), 0);
	assert_int_equal(id, s.stack);
	/* Its suffix is another stack; then as ids, the same stack again. */
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(f + 1, 2, fp), 2, &id), 0);
	assert_int_equal(id, 2);
	ids[0] = s.loc[1];
	ids[1] = s.loc[0];
	assert_int_equal(store_txn_stack(tx, s.part, ids, 2, &id2), 0);
	assert_int_equal(id2, 2);
	/* New frames: a new location and a new leaf node. */
	g[0] = (struct store_location){ s.map_b, 0x999, NULL, 0 };
	g[1] = f[2];
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g, 2, fp), 2, &id), 0);
	assert_int_equal(id, 4);
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g, 2, fp), 2, &id), 0);
	assert_int_equal(id, 4);
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g, 0, fp), 0, &id), 0);
	assert_int_equal(id, 0);
	/* What store_txn_location refuses, with the same codes. */
	g[0].mapping_id = 99;
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g, 2, fp), 2, &id), ERR_INVALID);
	g[0].mapping_id = s.map_a;
	g[0].n_lines = 1;
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g, 2, fp), 2, &id), ERR_INVALID); /* no lines */
	memset(lines, 0, sizeof(lines));
	g[0].lines = lines;
	g[0].n_lines = STORE_MAX_LINES + 1;
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g, 2, fp), 2, &id), ERR_TOO_LARGE);
	assert_int_equal(commit(tx), 0);

	assert_int_equal(stack_locs(st, s.part, 4, locs), 2);
	assert_int_equal(locs[1], s.loc[0]);
	assert_int_equal(store_symbols_get(st, "t", s.part, &sym, NULL), 0);
	assert_int_equal(store_symbols_location_count(sym), 4);
	assert_int_equal(store_symbols_stack_count(sym), 4);
	assert_int_equal(store_symbols_location(sym, locs[0], &lv), 0);
	assert_int_equal(lv.mapping_id, s.map_b);
	assert_int_equal(lv.address, 0x999);
	assert_int_equal(lv.n_lines, 0);
	store_symbols_put(sym);

	/* An aborted stack is forgotten by the cache: the same frames later
	 * get the ids of a new txn, naming their own locations. */
	tx = begin(st, "t");
	g[0] = (struct store_location){ s.map_a, 0x5555, NULL, 0 };
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g, 2, fp), 2, &id), 0);
	assert_int_equal(id, 5);
	store_txn_abort(tx);
	tx = begin(st, "t");
	g[1] = (struct store_location){ s.map_b, 0x7777, NULL, 0 };
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g + 1, 1, fp), 1, &id), 0);
	assert_int_equal(id, 5);
	g[1] = f[2];
	assert_int_equal(store_txn_stack_of(tx, s.part, ptrs(g, 2, fp), 2, &id), 0);
	assert_int_equal(id, 6);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(stack_locs(st, s.part, 6, locs), 2);
	assert_int_equal(store_symbols_get(st, "t", s.part, &sym, NULL), 0);
	assert_int_equal(store_symbols_location(sym, locs[0], &lv), 0);
	assert_int_equal(lv.address, 0x5555);
	assert_int_equal(store_symbols_location(sym, locs[1], &lv), 0);
	assert_int_equal(lv.address, 0x100);
	assert_int_equal(stack_locs(st, s.part, 5, locs), 1);
	assert_int_equal(store_symbols_location(sym, locs[0], &lv), 0);
	assert_int_equal(lv.address, 0x7777);
	store_symbols_put(sym);
}

/*
 * The cache key of a stack's frames is a word per frame where it can be:
 * frames that need the long form (an address of 2^48 or more, lines) are
 * told apart from each other and from the plain frames whose word would
 * have the same bits, and found again.
 */
static void test_stack_key_forms(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	const struct store_location *fp[1];
	struct store_symbols *sym = NULL;
	struct store_location_view lv;
	struct store_line line;
	struct syms s;
	enum { N = 6 };
	struct store_location f[N];
	uint32_t id[N], again, parent, loc;

	write_syms(tx, &s);
	assert_int_equal(s.map_b, s.map_a + 1);
	line = (struct store_line){ s.fn, 7, 0 };
	/* map_a | 2^48 + 0x100 would be map_b's word for 0x100. */
	f[0] = (struct store_location){ s.map_a, ((uint64_t)1 << 48) | 0x100, NULL, 0 };
	f[1] = (struct store_location){ s.map_b, 0x100, NULL, 0 };
	f[2] = (struct store_location){ s.map_b, 0xffffffff81000000ull, NULL, 0 };
	f[3] = (struct store_location){ s.map_b, 0xffffffff81000010ull, NULL, 0 };
	f[4] = (struct store_location){ s.map_b, 0x100, &line, 1 };
	f[5] = (struct store_location){ s.map_b, 0x200, NULL, 0 };
	for (int i = 0; i < N; i++) {
		fp[0] = &f[i];
		assert_int_equal(store_txn_stack_of(tx, s.part, fp, 1, &id[i]), 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(id[i], id[j]);
	}
	for (int i = 0; i < N; i++) {
		fp[0] = &f[i];
		assert_int_equal(store_txn_stack_of(tx, s.part, fp, 1, &again), 0);
		assert_int_equal(again, id[i]);
	}
	assert_int_equal(commit(tx), 0);
	assert_int_equal(store_symbols_get(st, "t", s.part, &sym, NULL), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(store_symbols_stack_node(sym, id[i], &parent, &loc), 0);
		assert_int_equal(parent, 0);
		assert_int_equal(store_symbols_location(sym, loc, &lv), 0);
		assert_int_equal(lv.mapping_id, f[i].mapping_id);
		assert_int_equal(lv.address, f[i].address);
		assert_int_equal(lv.n_lines, f[i].n_lines);
	}
	store_symbols_put(sym);
}

/* The key of tenant 1's run of kind k in partition `part` from id `first`
 * (storage_int.h section 5); a 13-byte prefix is the key of one record. */
static void run_key(uint8_t key[14], uint32_t part, enum sym_kind k, uint32_t first)
{
	be32_put(key, 1);
	be32_put(key + 4, part);
	key[8] = (uint8_t)k;
	be32_put(key + 9, first);
	key[13] = SYM_RUN_TAG;
}

/* Opens the store again; the partition loads with `want`, msg naming `what`. */
static struct store *reopen_expect(void **state, uint32_t part, int want, const char *what)
{
	struct store *st = sfx_reopen(state, 0);
	struct store_symbols *sym = NULL;
	struct err_msg msg = { { 0 } };

	assert_non_null(st);
	assert_int_equal(store_symbols_get(st, "t", part, &sym, &msg), want);
	if (what)
		assert_non_null(strstr(msg.text, what));
	store_symbols_put(sym);
	return st;
}

static void test_corrupt_record(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct syms s;
	struct buf good;
	uint8_t key[14];

	write_syms(tx, &s);
	assert_int_equal(commit(tx), 0);
	/* The txn wrote one run per kind: locations 1-3 in one value.  Its
	 * first record a truncated varint.  The head's partitions load at
	 * open: a bad one leaves the store usable. */
	run_key(key, s.part, SYM_LOCATION, 1);
	buf_init(&good, 1 << 16);
	assert_int_equal(store__raw_get(st, CFI_SYMBOLS, key, 14, &good), 0);
	assert_int_equal(store__raw_put(st, CFI_SYMBOLS, key, 14, "\x02\xff\xff", 3), 0);
	st = reopen_expect(state, s.part, ERR_CORRUPT, "location 1");
	/* Its last record cut short: the error names the third location. */
	assert_int_equal(store__raw_put(st, CFI_SYMBOLS, key, 14, good.data, good.len - 1), 0);
	st = reopen_expect(state, s.part, ERR_CORRUPT, "location 3");
	/* An empty run. */
	assert_int_equal(store__raw_put(st, CFI_SYMBOLS, key, 14, "", 0), 0);
	st = reopen_expect(state, s.part, ERR_CORRUPT, "location 1");
	/* Repaired. */
	assert_int_equal(store__raw_put(st, CFI_SYMBOLS, key, 14, good.data, good.len), 0);
	st = reopen_expect(state, s.part, 0, NULL);
	check_syms(st, "t", &s);
	buf_release(&good);
	/* A record of the format before runs (13-byte key) after a run loads:
	 * stack 4, below stack 3. */
	run_key(key, s.part, SYM_STACK, 4);
	assert_int_equal(store__raw_put(st, CFI_SYMBOLS, key, 13, "\x03\x01", 2), 0);
	st = reopen_expect(state, s.part, 0, NULL);
	/* Then a stack whose parent is not below it. */
	run_key(key, s.part, SYM_STACK, 5);
	assert_int_equal(store__raw_put(st, CFI_SYMBOLS, key, 13, "\x06\x01", 2), 0);
	st = reopen_expect(state, s.part, ERR_CORRUPT, "stack 5");
	/* A gap in the ids, as a record and as a run. */
	assert_int_equal(store__raw_put(st, CFI_SYMBOLS, key, 13, "\x04\x01", 2), 0);
	st = reopen_expect(state, s.part, 0, NULL);
	run_key(key, s.part, SYM_FUNCTION, 3);
	assert_int_equal(store__raw_put(st, CFI_SYMBOLS, key, 14, "\x04\x01\x01\x01\x02", 5),
			 0);
	st = reopen_expect(state, s.part, ERR_CORRUPT, "function 3");
	/* A writer on the corrupt partition gets the error too, not a crash. */
	tx = begin(st, "t");
	{
		struct store_function f = { "x", "", "", 0 };
		uint32_t id;
		assert_int_equal(store_txn_function(tx, s.part, &f, &id), ERR_CORRUPT);
	}
	store_txn_abort(tx);
}

/*
 * One txn adds thousands of functions to two partitions in turn: a run ends
 * at each change of partition and at STORE_SYM_RUN_BYTES, and every id
 * reads back after reopen.
 */
static void test_runs(void **state)
{
	enum { N = 3000, TURN = 700 };
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	uint32_t part[2], n[2] = { 0, 0 }, id;
	char name[64];

	assert_int_equal(store_txn_partition(tx, "a", &part[0]), 0);
	assert_int_equal(store_txn_partition(tx, "b", &part[1]), 0);
	for (int i = 0; i < N; i++) {
		int w = i / TURN % 2;
		struct store_function f = { name, "", "runs.c", i };

		snprintf(name, sizeof(name), "function %d, named long enough to fill runs", i);
		assert_int_equal(store_txn_function(tx, part[w], &f, &id), 0);
		assert_int_equal(id, ++n[w]);
	}
	assert_int_equal(commit(tx), 0);
	st = sfx_reopen(state, 0);
	for (int w = 0; w < 2; w++) {
		struct store_symbols *sym = NULL;
		struct store_function f;
		uint32_t next = 0;

		assert_int_equal(store_symbols_get(st, "t", part[w], &sym, NULL), 0);
		for (int i = 0; i < N; i++) {
			if (i / TURN % 2 != w)
				continue;
			snprintf(name, sizeof(name), "function %d, named long enough to fill runs",
				 i);
			assert_int_equal(store_symbols_function(sym, ++next, &f), 0);
			assert_string_equal(f.name, name);
			assert_string_equal(f.filename, "runs.c");
			assert_int_equal(f.start_line, i);
		}
		assert_int_equal(next, n[w]);
		assert_int_equal(store_symbols_function(sym, next + 1, &f), ERR_NOT_FOUND);
		store_symbols_put(sym);
	}
}

/*
 * The largest run: a string run just short of STORE_SYM_RUN_BYTES, then a
 * string of STORE_MAX_STRING bytes in the same run, which the run's buffer
 * must take (SYM_RUN_MAX_VALUE), and which reads back whole.
 */
static void test_run_largest(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct store_symbols *sym = NULL;
	struct store_function f = { NULL, "", "", 0 };
	size_t filled = 0;
	uint32_t part, id, n = 0;
	char *big = malloc(STORE_MAX_STRING + 1), small[128];

	assert_non_null(big);
	assert_int_equal(store_txn_partition(tx, "svc", &part), 0);
	/* Each name is a string record of 1 + 100 bytes in the run. */
	while (filled + 101 < STORE_SYM_RUN_BYTES) {
		snprintf(small, sizeof(small), "%0100u", n);
		f.name = small;
		assert_int_equal(store_txn_function(tx, part, &f, &id), 0);
		filled += 101;
		n++;
	}
	/* One more name brings the run to STORE_SYM_RUN_BYTES - 1 bytes. */
	assert_true(STORE_SYM_RUN_BYTES - 1 - filled >= 2 && STORE_SYM_RUN_BYTES - 1 - filled <= 102);
	memset(small, 'y', sizeof(small));
	small[STORE_SYM_RUN_BYTES - 1 - filled - 1] = '\0';
	f.name = small;
	assert_int_equal(store_txn_function(tx, part, &f, &id), 0);
	n++;
	memset(big, 'x', STORE_MAX_STRING);
	big[STORE_MAX_STRING] = '\0';
	f.name = big;
	assert_int_equal(store_txn_function(tx, part, &f, &id), 0);
	assert_int_equal(id, n + 1);
	assert_int_equal(commit(tx), 0);
	st = sfx_reopen(state, 0);
	assert_int_equal(store_symbols_get(st, "t", part, &sym, NULL), 0);
	assert_int_equal(store_symbols_function(sym, n + 1, &f), 0);
	assert_int_equal(strlen(f.name), STORE_MAX_STRING);
	assert_int_equal(store_symbols_function(sym, n - 1, &f), 0);
	snprintf(small, sizeof(small), "%0100u", n - 2);
	assert_string_equal(f.name, small);
	assert_int_equal(store_symbols_function(sym, n, &f), 0);
	assert_int_equal(strlen(f.name), STORE_SYM_RUN_BYTES - 1 - filled - 1);
	store_symbols_put(sym);
	free(big);
}

struct race {
	struct store *st;
	uint32_t part;
	atomic_int done;
	long checks;
};

/* Reads every entry of fresh views while the writer appends. */
static void *reader(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->done)) {
		struct store_symbols *sym;
		uint32_t n;

		if (store_symbols_get(r->st, "t", r->part, &sym, NULL) != 0)
			continue;
		n = store_symbols_stack_count(sym);
		for (uint32_t id = 1; id <= n; id++) {
			uint32_t parent, loc;
			struct store_location_view lv;
			struct store_function f;
			if (store_symbols_stack_node(sym, id, &parent, &loc) != 0 || parent >= id ||
			    store_symbols_location(sym, loc, &lv) != 0 || lv.n_lines != 1 ||
			    store_symbols_function(sym, lv.lines[0].function_id, &f) != 0 ||
			    strncmp(f.name, "fn_", 3) != 0)
				abort();
			r->checks++;
		}
		store_symbols_put(sym);
	}
	return NULL;
}

static void test_concurrent_reader(void **state)
{
	char *dir = tmpdir_new();
	struct race r = { 0 };
	pthread_t th;
	struct store_txn *tx;
	(void)state;

	r.st = open_store(dir, 0, 0);
	tx = begin(r.st, "t");
	assert_int_equal(store_txn_partition(tx, "svc", &r.part), 0);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(pthread_create(&th, NULL, reader, &r), 0);
	for (int round = 0; round < 40; round++) {
		uint32_t prev = 0;
		tx = begin(r.st, "t");
		for (int i = 0; i < 500; i++) {
			char name[32];
			struct store_function f = { name, "", "f.c", 0 };
			struct store_line line = { 0, i, 0 };
			struct store_location l = { 0, (uint64_t)round * 1000 + (uint64_t)i, &line, 1 };
			uint32_t lf[2], id;
			snprintf(name, sizeof(name), "fn_%d_%d", round, i);
			assert_int_equal(store_txn_function(tx, r.part, &f, &line.function_id), 0);
			assert_int_equal(store_txn_location(tx, r.part, &l, &lf[0]), 0);
			lf[1] = prev ? prev : lf[0];
			assert_int_equal(store_txn_stack(tx, r.part, lf, 2, &id), 0);
			prev = lf[0];
		}
		if (round % 5 == 4)
			store_txn_abort(tx);
		else
			assert_int_equal(commit(tx), 0);
	}
	atomic_store(&r.done, 1);
	pthread_join(th, NULL);
	assert_true(r.checks > 0);
	store_close(r.st);
	tmpdir_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		SFX_TEST(test_round_trip_and_reopen),
		SFX_TEST(test_mapping_identity),
		SFX_TEST(test_mapping_address_space),
		SFX_TEST(test_invalid_refs),
		SFX_TEST(test_abort_rolls_back),
		SFX_TEST(test_stack_of_frames),
		SFX_TEST(test_stack_key_forms),
		SFX_TEST(test_corrupt_record),
		SFX_TEST(test_runs),
		SFX_TEST(test_run_largest),
		cmocka_unit_test(test_concurrent_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
