/*
 * test_index.c - the compact index: built from real debug files, it must
 * answer exactly what the DWARF resolver answers at every address of .text;
 * the reader must refuse every corrupted, truncated or foreign file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "fixtures.h"
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_int.h"
#include "symtest.h"

static const char *s_or(const char *s)
{
	return s ? s : "(null)";
}

/* Every address in [lo, hi) plus `extra`: index == DWARF, field by field. */
static void compare_range(struct sym_dwarf *d, const struct sym_index *x, uint64_t lo,
			  uint64_t hi, size_t *n_checked, size_t *n_inlined)
{
	struct sym_frame f1[SYM_MAX_FRAMES], f2[SYM_MAX_FRAMES];

	for (uint64_t a = lo; a < hi; a++) {
		size_t k1 = 0, k2 = 0;
		assert_int_equal(sym_dwarf_lookup(d, a, f1, SYM_MAX_FRAMES, &k1), 0);
		assert_int_equal(sym_index_lookup(x, a, f2, SYM_MAX_FRAMES, &k2), 0);
		if (k1 != k2)
			fprintf(stderr, "0x%" PRIx64 ": dwarf %zu frames, index %zu\n", a, k1, k2);
		assert_int_equal(k1, k2);
		for (size_t j = 0; j < k1; j++) {
			assert_string_equal(s_or(f1[j].function), s_or(f2[j].function));
			assert_string_equal(s_or(f1[j].file), s_or(f2[j].file));
			assert_int_equal(f1[j].line, f2[j].line);
			assert_int_equal(f1[j].column, f2[j].column);
			assert_int_equal(f1[j].flags, f2[j].flags);
		}
		(*n_checked)++;
		*n_inlined += k1 > 1;
	}
}

/* The address range of .text, read with readelf. */
static void text_range(const char *bin, uint64_t *lo, uint64_t *hi)
{
	char cmd[512], line[512];
	unsigned long long addr = 0, size = 0;

	snprintf(cmd, sizeof(cmd),
		 "readelf -SW '%s' | awk '{for(i=1;i<NF;i++) if($i==\".text\") print $(i+2), $(i+4)}'", bin);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(line, sizeof(line), p));
	pclose(p);
	assert_int_equal(sscanf(line, "%llx %llx", &addr, &size), 2);
	*lo = addr;
	*hi = addr + size;
}

static void roundtrip(const char *bin, const char *debug, uint64_t step)
{
	struct sym_dwarf *d = NULL;
	struct sym_index *x = NULL;
	struct sym_index_stats st;
	struct err_msg msg = { "" };
	struct sym_elf_info info;
	char out[600];
	uint64_t lo, hi;
	size_t checked = 0, inlined = 0;

	snprintf(out, sizeof(out), "%s.symidx", debug);
	assert_int_equal(sym_index_build(debug, out, NULL, &st, &msg), 0);
	fprintf(stderr, "%s: %" PRIu64 " ranges, %" PRIu64 " locations, %" PRIu64
		" string bytes, %" PRIu64 " file bytes, %" PRIu64 " functions, %" PRIu64
		" symbols\n", t_base(debug), st.ranges, st.locations, st.string_bytes,
		st.file_bytes, st.functions, st.symbols);
	assert_int_equal(sym_elf_inspect_file(debug, &info, &msg), 0);
	assert_int_equal(sym_index_open(out, info.build_id, info.build_id_len, &x, &msg), 0);
	size_t idlen;
	const uint8_t *id = sym_index_build_id(x, &idlen);
	assert_int_equal(idlen, info.build_id_len);
	assert_memory_equal(id, info.build_id, idlen);

	assert_int_equal(sym_dwarf_open(debug, NULL, &d, &msg), 0);
	text_range(bin, &lo, &hi);
	if (step == 1) {
		compare_range(d, x, lo - 64, hi + 64, &checked, &inlined);
	} else {
		for (uint64_t a = lo; a < hi; a += step)
			compare_range(d, x, a, a + 1, &checked, &inlined);
	}
	uint64_t *v;
	size_t n = t_addresses(bin, &v);
	for (size_t i = 0; i < n; i++)
		compare_range(d, x, v[i], v[i] + 1, &checked, &inlined);
	free(v);
	fprintf(stderr, "%s: %zu addresses equal, %zu with inline frames\n", t_base(debug),
		checked, inlined);
	assert_true(inlined > 0);
	sym_dwarf_close(d);
	sym_index_close(x);
}

static void test_roundtrip_c(void **state)
{
	(void)state;
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	assert_int_equal(t_run("cd '%s' && gcc -g -O2 -o c prog.c && "
			       "objcopy --only-keep-debug c c.debug", t_dir), 0);
	roundtrip(t_path("c"), t_path("c.debug"), 1);
}

static void test_roundtrip_cxx(void **state)
{
	(void)state;
	t_write("prog.cc", FIX_CXX);
	assert_int_equal(t_run("cd '%s' && g++ -g -O2 -o cxx prog.cc && "
			       "objcopy --only-keep-debug cxx cxx.debug", t_dir), 0);
	roundtrip(t_path("cxx"), t_path("cxx.debug"), 1);
}

static void test_roundtrip_go(void **state)
{
	(void)state;
	if (!t_have_go())
		skip();
	t_write("main.go", FIX_GO);
	assert_int_equal(t_go_build("-o gobin main.go"), 0);
	/* Go compresses its DWARF by default: libelf inflates it. */
	roundtrip(t_path("gobin"), t_path("gobin"), 7);
}

static void test_symtab_only_index(void **state)
{
	struct sym_dwarf *d = NULL;
	struct sym_index *x = NULL;
	struct err_msg msg = { "" };
	struct buf b;
	uint64_t lo, hi;
	size_t checked = 0, inlined = 0;
	(void)state;

	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	assert_int_equal(t_run("cd '%s' && gcc -O2 -o nodebug prog.c", t_dir), 0);
	assert_int_equal(sym_dwarf_open(t_path("nodebug"), NULL, &d, &msg), 0);
	buf_init(&b, 1 << 20);
	assert_int_equal(sym_index_build_buf(d, &b, NULL, &msg), 0);
	assert_int_equal(sym_index_open_mem(b.data, b.len, NULL, 0, &x, &msg), 0);
	text_range(t_path("nodebug"), &lo, &hi);
	compare_range(d, x, lo - 16, hi + 16, &checked, &inlined);
	assert_int_equal(inlined, 0);
	struct sym_frame f[2];
	size_t k;
	uint64_t *v;
	size_t n = t_addresses(t_path("nodebug"), &v);
	int saw_work = 0;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(sym_index_lookup(x, v[i], f, 2, &k), 0);
		if (k == 1 && f[0].function && !strcmp(f[0].function, "work")) {
			assert_true(f[0].flags & SYM_FRAME_SYMTAB);
			saw_work = 1;
		}
	}
	assert_true(saw_work);
	free(v);
	sym_index_close(x);
	sym_dwarf_close(d);
	buf_release(&b);
}

/* ---- the reader against bad bytes ---- */

static uint8_t *g_idx;
static size_t g_len;

static void make_index(void)
{
	struct sym_dwarf *d = NULL;
	struct err_msg msg = { "" };
	struct buf b;

	if (g_idx)
		return;
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	assert_int_equal(t_run("cd '%s' && gcc -g -O2 -o cidx prog.c", t_dir), 0);
	assert_int_equal(sym_dwarf_open(t_path("cidx"), NULL, &d, &msg), 0);
	buf_init(&b, 1 << 24);
	assert_int_equal(sym_index_build_buf(d, &b, NULL, &msg), 0);
	sym_dwarf_close(d);
	g_idx = (uint8_t *)buf_detach(&b, &g_len);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Re-seals a modified copy so only the structural checks can catch it. */
static void reseal(uint8_t *p, size_t len)
{
	uLong crc = crc32(0L, p, 124);
	crc = crc32(crc, p + SYM_INDEX_HEADER, (uInt)(len - SYM_INDEX_HEADER));
	put32(p + 124, (uint32_t)crc);
}

static int open_copy(const uint8_t *p, size_t len, struct err_msg *msg)
{
	struct sym_index *x = NULL;
	uint8_t *copy = malloc(len ? len : 1);
	memcpy(copy, p, len);
	int rc = sym_index_open_mem(copy, len, NULL, 0, &x, msg);
	sym_index_close(x);
	free(copy);
	return rc;
}

static void test_corrupt_bytes(void **state)
{
	struct err_msg msg = { "" };
	(void)state;

	make_index();
	assert_int_equal(open_copy(g_idx, g_len, &msg), 0);
	uint8_t *c = malloc(g_len);
	size_t step = g_len / 3000 + 1;
	for (size_t i = 0; i < g_len; i += step) {
		for (int bit = 0; bit < 8; bit += 3) {
			memcpy(c, g_idx, g_len);
			c[i] ^= (uint8_t)(1u << bit);
			memset(&msg, 0, sizeof(msg));
			assert_int_equal(open_copy(c, g_len, &msg), ERR_CORRUPT);
			assert_non_null(strstr(msg.text, "symbol index"));
		}
	}
	for (size_t len = 0; len < g_len; len += (len < 256 ? 1 : step))
		assert_int_equal(open_copy(g_idx, len, NULL), ERR_CORRUPT);
	free(c);
}

static void test_corrupt_structure(void **state)
{
	uint8_t *c = malloc(g_len);
	(void)state;

	make_index();
	uint32_t n_ranges = get32(g_idx + 24), n_locs = get32(g_idx + 28);
	uint32_t r_off = get32(g_idx + 104), rl_off = get32(g_idx + 108);
	uint32_t l_off = get32(g_idx + 112), s_off = get32(g_idx + 116);
	assert_true(n_ranges > 2 && n_locs > 2);

	struct { const char *what; uint32_t off, val; } cases[] = {
		{ "parent after child", l_off + 16, 5 },               /* loc 0 */
		{ "parent self", l_off + 24 * 3 + 16, 3 },
		{ "function offset", l_off + 24 * 1, 0x7fffffff },
		{ "file offset", l_off + 24 * 2 + 4, g_len },
		{ "flags", l_off + 20, 0x80 },
		{ "range loc", rl_off + 4, n_locs },
		{ "range order", r_off + 4, 0 },
		{ "n_ranges", 24, n_ranges + 1 },
		{ "n_locs", 28, 0x10000000 },
		{ "strtab size", 32, get32(g_idx + 32) + 4 },
		{ "build id len", 36, 65 },
		{ "version", 8, SYM_INDEX_VERSION + 1 },
		{ "old version", 8, SYM_INDEX_VERSION - 1 },
		{ "locs offset", 112, l_off + 4 },
		{ "file size", 120, g_len + 4 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct err_msg msg = { "" };
		memcpy(c, g_idx, g_len);
		put32(c + cases[i].off, cases[i].val);
		reseal(c, g_len);
		int rc = open_copy(c, g_len, &msg);
		if (rc != ERR_CORRUPT)
			fprintf(stderr, "case '%s' not detected (%d)\n", cases[i].what, rc);
		assert_int_equal(rc, ERR_CORRUPT);
	}
	/* An unterminated string table. */
	memcpy(c, g_idx, g_len);
	memset(c + s_off, 'x', g_len - s_off);
	reseal(c, g_len);
	assert_int_equal(open_copy(c, g_len, NULL), ERR_CORRUPT);
	free(c);
}

static void test_wrong_build_id(void **state)
{
	struct sym_index *x = NULL;
	struct err_msg msg = { "" };
	uint8_t id[20] = { 1, 2, 3 };
	(void)state;

	make_index();
	assert_int_equal(sym_index_open_mem(g_idx, g_len, id, sizeof(id), &x, &msg),
			 ERR_CONFLICT);
	assert_null(x);
	memset(&msg, 0, sizeof(msg));
	assert_int_equal(sym_index_open(t_path("does-not-exist"), NULL, 0, &x, &msg),
			 ERR_NOT_FOUND);
}

static int no_alt(void *ctx, const uint8_t *id, size_t id_len, const char *name, char **path)
{
	(void)ctx;
	(void)id;
	(void)id_len;
	(void)name;
	(void)path;
	return ERR_NOT_FOUND;
}

/*
 * Every FUNC symbol of `bin` looked up in the index at `idx` (of `debug`),
 * at its address (a leaf) and one below (a return address), against
 * llvm-symbolizer on `bin`: no function depends on a profile sampling it.
 */
static void check_index_funcs(const char *bin, const char *idx, const char *debug)
{
	struct sym_index *x = NULL;
	struct err_msg msg = { "" };
	struct sym_elf_info info;
	struct sym_frame f[SYM_MAX_FRAMES];
	struct t_stats st;
	char ipath[600], bpath[600];
	uint64_t *a;
	size_t nf, n;

	snprintf(ipath, sizeof(ipath), "%s", idx);
	snprintf(bpath, sizeof(bpath), "%s", bin);
	n = t_func_probes(bpath, &a, &nf);
	assert_true(nf >= 10);
	struct t_result *ref = t_llvm(bpath, a, n);
	t_cxxfilt_raw(ref, n);
	assert_int_equal(sym_elf_inspect_file(debug, &info, &msg), 0);
	assert_int_equal(sym_index_open(ipath, info.build_id, info.build_id_len, &x, &msg), 0);
	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		assert_int_equal(sym_index_lookup(x, a[i], f, SYM_MAX_FRAMES, &k), 0);
		if (!t_nothing_known(f, k, &ref[i]))
			t_compare(a[i], f, k, &ref[i], &st, 1, 1);
	}
	t_print_stats(t_base(bpath), &st);
	assert_int_equal(st.depth_diff, 0);
	assert_int_equal(st.name_diff, 0);
	assert_int_equal(st.file_diff, 0);
	assert_int_equal(st.line_diff, 0);
	sym_index_close(x);
	t_free_results(ref, n);
	free(a);
}

/*
 * In t_dir: `build` (shell commands writing programs p1 and p2), their
 * debug info split into p1.debug and p2.debug, both run through `dwz -m alt
 * -M alt` (the link names the alt file by its relative name), then `check`.
 */
static int dwz_pair(const char *build, const char *p1, const char *p2, const char *alt,
		    const char *check)
{
	return t_run("cd '%s' && %s && objcopy --only-keep-debug %s %s.debug && "
		     "objcopy --only-keep-debug %s %s.debug && dwz -m %s -M %s %s.debug %s.debug && %s",
		     t_dir, build, p1, p1, p2, p2, alt, alt, p1, p2, check);
}

/*
 * DWZ: debug files whose names and inline origins live in a shared alt file
 * (found here by the relative name in the link).  The index must hold the
 * alt file's names, and must not be built when find_alt cannot find it.
 */
static void test_roundtrip_dwz(void **state)
{
	struct sym_dwarf_opts o = { 0 };
	struct sym_index *x = NULL;
	struct err_msg msg = { "" };
	struct sym_elf_info info;
	struct sym_frame f[SYM_MAX_FRAMES];
	char out[600];
	uint64_t *v;
	size_t leaf = 0;
	(void)state;

	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	assert_int_equal(dwz_pair("gcc -g -O2 -o dz1 prog.c && gcc -g -O1 -o dz2 prog.c", "dz1",
				  "dz2", "dz_common.debug",
				  "readelf --debug-dump=abbrev dz1.debug 2>/dev/null "
				  "| grep -q DW_FORM_GNU_strp_alt"), 0);
	roundtrip(t_path("dz1"), t_path("dz1.debug"), 1);

	snprintf(out, sizeof(out), "%s", t_path("dz1.debug.symidx"));
	assert_int_equal(sym_elf_inspect_file(t_path("dz1.debug"), &info, &msg), 0);
	assert_int_equal(sym_index_open(out, info.build_id, info.build_id_len, &x, &msg), 0);
	size_t n = t_addresses(t_path("dz1"), &v);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		assert_int_equal(sym_index_lookup(x, v[i], f, SYM_MAX_FRAMES, &k), 0);
		if (k >= 2 && f[0].function && !strcmp(f[0].function, "leaf") &&
		    (f[0].flags & SYM_FRAME_INLINED))
			leaf++;
	}
	free(v);
	sym_index_close(x);
	assert_true(leaf > 0);

	/* The C++ pair of the integration test (templates shared through the
	 * alt file): the index equals the DWARF resolver at every byte of
	 * .text, and at every FUNC symbol, as a leaf and as a return address,
	 * equals llvm-symbolizer on the unstripped build. */
	t_write("shared.hh", FIX_DWZ_HH);
	t_write("dzx1.cc", FIX_DWZ_X1);
	t_write("dzx2.cc", FIX_DWZ_X2);
	assert_int_equal(dwz_pair("g++ -g -O2 -o dzx1 dzx1.cc && g++ -g -O2 -o dzx2 dzx2.cc", "dzx1",
				  "dzx2", "dzx_common.debug",
				  "readelf --debug-dump=info dzx1.debug 2>/dev/null "
				  "| grep -q 'DW_AT_specification: <alt 0x'"), 0);
	for (int i = 1; i <= 2; i++) {
		char bin[512], dbg[520], idx[530];

		snprintf(bin, sizeof(bin), "%s", t_path(i == 1 ? "dzx1" : "dzx2"));
		snprintf(dbg, sizeof(dbg), "%s.debug", bin);
		snprintf(idx, sizeof(idx), "%s.symidx", dbg);
		roundtrip(bin, dbg, 1);
		check_index_funcs(bin, idx, dbg);
	}

	/* find_alt finds nothing: no index, and the message names the alt file. */
	o.find_alt = no_alt;
	snprintf(out, sizeof(out), "%s", t_path("dz2.debug.symidx"));
	assert_int_equal(sym_index_build(t_path("dz2.debug"), out, &o, NULL, &msg), ERR_NOT_FOUND);
	assert_non_null(strstr(msg.text, "alt_not_found"));
	assert_int_equal(access(out, F_OK), -1);
}

/* The outermost function of a lookup, or "(none)". */
static const char *outer(const struct sym_frame *f, size_t n)
{
	return n && f[n - 1].function ? f[n - 1].function : "(none)";
}

/*
 * The caller rule on a real binary: at every return address (the
 * instruction after each call objdump shows), the raw form (ret) and the
 * pprof form (ret - 1) name what ret - 1 names, in the index and in DWARF
 * alike; and Go's planted goexit + 1 names runtime.goexit in both forms,
 * which ret - 1 alone gets wrong for the pprof form.
 */
static void caller_rule(const char *bin, int go)
{
	struct sym_frame f[SYM_MAX_FRAMES], g[SYM_MAX_FRAMES];
	struct sym_dwarf *d = NULL;
	struct sym_index *x = NULL;
	struct err_msg msg = { "" };
	char out[600], cmd[2048];
	uint64_t *rets, *goexit;
	size_t n, k, kg;

	snprintf(out, sizeof(out), "%s.caller.symidx", bin);
	assert_int_equal(sym_index_build(bin, out, NULL, NULL, &msg), 0);
	assert_int_equal(sym_index_open(out, NULL, 0, &x, &msg), 0);
	assert_int_equal(sym_dwarf_open(bin, NULL, &d, &msg), 0);
	snprintf(cmd, sizeof(cmd),
		 "objdump -d -j .text --no-show-raw-insn '%s' 2>/dev/null | awk "
		 "'/^ *[0-9a-f]+:\\t/ { a = $1; sub(\":\", \"\", a); if (c) print a; "
		 "c = ($2 ~ /^call/) }'", bin);
	n = t_popen_addresses(cmd, &rets);
	assert_true(n >= (go ? 1000u : 3u));
	for (size_t i = 0; i < n; i++) {
		for (int form = 0; form < 2; form++) {
			uint64_t ret = rets[i] - (uint64_t)form;

			assert_int_equal(sym_index_lookup(x, ret - 1, g, SYM_MAX_FRAMES, &kg), 0);
			assert_int_equal(sym_index_lookup_caller(x, ret, f, SYM_MAX_FRAMES, &k), 0);
			if (strcmp(outer(f, k), outer(g, kg)) != 0)
				fprintf(stderr, "0x%" PRIx64 ": caller %s, ret - 1 %s\n", ret,
					outer(f, k), outer(g, kg));
			assert_string_equal(outer(f, k), outer(g, kg));
			assert_int_equal(sym_dwarf_lookup_caller(d, ret, g, SYM_MAX_FRAMES, &kg), 0);
			assert_string_equal(outer(f, k), outer(g, kg));
		}
	}
	fprintf(stderr, "%s: %zu return addresses, both forms, unchanged\n", t_base(bin), n);
	free(rets);
	if (go) {
		snprintf(cmd, sizeof(cmd),
			 "nm '%s' | awk '$3 == \"runtime.goexit.abi0\" || $3 == \"runtime.goexit\""
			 " { print $1 }'", bin);
		assert_int_equal(t_popen_addresses(cmd, &goexit), 1);
		/* What ret - 1 alone names for the pprof form: not goexit. */
		assert_int_equal(sym_index_lookup(x, goexit[0] - 1, g, SYM_MAX_FRAMES, &kg), 0);
		assert_false(sym_planted_entry(outer(g, kg)));
		for (uint64_t ret = goexit[0]; ret <= goexit[0] + 1; ret++) {
			assert_int_equal(sym_index_lookup_caller(x, ret, f, SYM_MAX_FRAMES, &k), 0);
			assert_string_equal(outer(f, k), "runtime.goexit");
			assert_int_equal(sym_dwarf_lookup_caller(d, ret, f, SYM_MAX_FRAMES, &k), 0);
			assert_string_equal(outer(f, k), "runtime.goexit");
		}
		free(goexit);
	}
	sym_dwarf_close(d);
	sym_index_close(x);
}

static void test_caller_rule_c(void **state)
{
	(void)state;
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	assert_int_equal(t_run("cd '%s' && gcc -g -O2 -o crule prog.c", t_dir), 0);
	caller_rule(t_path("crule"), 0);
}

static void test_caller_rule_go(void **state)
{
	(void)state;
	if (!t_have_go())
		skip();
	t_write("main.go", FIX_GO);
	assert_int_equal(t_go_build("-o gorule main.go"), 0);
	caller_rule(t_path("gorule"), 1);
}

static void test_planted_entry(void **state)
{
	(void)state;
	assert_true(sym_planted_entry("runtime.goexit"));
	assert_true(sym_planted_entry("runtime.goexit.abi0"));
	assert_false(sym_planted_entry("runtime.goexit1"));
	assert_false(sym_planted_entry("runtime.goexit0"));
	assert_false(sym_planted_entry("main.main"));
	assert_true(sym_planted_entry("runtime.sigreturn__sigaction"));
	assert_true(sym_planted_entry("__restore_rt"));
	assert_false(sym_planted_entry("__restore_rt2"));
	assert_false(sym_planted_entry(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_c),
		cmocka_unit_test(test_roundtrip_cxx),
		cmocka_unit_test(test_roundtrip_go),
		cmocka_unit_test(test_roundtrip_dwz),
		cmocka_unit_test(test_symtab_only_index),
		cmocka_unit_test(test_corrupt_bytes),
		cmocka_unit_test(test_corrupt_structure),
		cmocka_unit_test(test_wrong_build_id),
		cmocka_unit_test(test_caller_rule_c),
		cmocka_unit_test(test_caller_rule_go),
		cmocka_unit_test(test_planted_entry),
	};
	t_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(g_idx);
	t_rmdir();
	return rc;
}
