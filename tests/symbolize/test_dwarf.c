/*
 * test_dwarf.c - the DWARF resolver against llvm-symbolizer on real
 * programs compiled here: C with guaranteed inlining, C++ with templates
 * and lambdas, Go (no .debug_aranges), split debug files, the symbol-table
 * fallback, and the failures a debug file can have.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/err.h"
#include "fixtures.h"
#include "symbolize/symbolize.h"
#include "symtest.h"

#define MAX_PROBES 20000

/* Keeps at most MAX_PROBES addresses, evenly spread. */
static size_t thin(uint64_t *a, size_t n)
{
	if (n <= MAX_PROBES)
		return n;
	for (size_t i = 0; i < MAX_PROBES; i++)
		a[i] = a[i * n / MAX_PROBES];
	return MAX_PROBES;
}

/* Resolves every probe of `ref_bin` from `debug` and compares with llvm. */
/*
 * a[0..n) looked up in the DWARF of `debug` (opened with `o`) and compared
 * with llvm-symbolizer on `ref_bin`; with `skip_unknown`, addresses where
 * neither knows anything are not compared.  Fills *st and *max_depth (the
 * longest inline chain) and prints the stats.
 */
static void compare_with_llvm(const char *what, const char *ref_bin, const char *debug,
			      const struct sym_dwarf_opts *o, const uint64_t *a, size_t n,
			      int skip_unknown, int loose, struct t_stats *st, size_t *max_depth)
{
	struct sym_dwarf *d = NULL;
	struct err_msg msg = { "" };
	struct sym_frame f[SYM_MAX_FRAMES];
	struct t_result *ref = t_llvm(ref_bin, a, n);

	t_cxxfilt_raw(ref, n);
	assert_int_equal(sym_dwarf_open(debug, o, &d, &msg), 0);
	memset(st, 0, sizeof(*st));
	*max_depth = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		assert_int_equal(sym_dwarf_lookup(d, a[i], f, SYM_MAX_FRAMES, &k), 0);
		if (k > *max_depth)
			*max_depth = k;
		if (!skip_unknown || !t_nothing_known(f, k, &ref[i]))
			t_compare(a[i], f, k, &ref[i], st, 1, loose);
	}
	t_print_stats(what, st);
	sym_dwarf_close(d);
	t_free_results(ref, n);
}

static void check_against_llvm_opts(const char *what, const char *ref_bin, const char *debug,
				    const struct sym_dwarf_opts *o, int loose, struct t_stats *st,
				    size_t *max_depth)
{
	uint64_t *a;
	size_t n = t_addresses(ref_bin, &a);

	n = thin(a, n);
	assert_true(n > 20);
	compare_with_llvm(what, ref_bin, debug, o, a, n, 0, loose, st, max_depth);
	free(a);
}

/*
 * Every FUNC symbol of `ref_bin` resolved from `debug` in both roles: its
 * address as a leaf (the sampled PC) and its address - 1 as a return
 * address would be looked up (the byte before a function start: padding or
 * the end of the previous function).  Nothing is thinned or sampled, so no
 * function's answer can hide behind which addresses a profile happened to
 * hit.  Returns the number of symbols probed.
 */
static size_t check_funcs_against_llvm(const char *what, const char *ref_bin,
				       const char *debug, const struct sym_dwarf_opts *o,
				       int loose, struct t_stats *st)
{
	uint64_t *a;
	size_t nf, depth, n = t_func_probes(ref_bin, &a, &nf);

	compare_with_llvm(what, ref_bin, debug, o, a, n, 1, loose, st, &depth);
	free(a);
	return nf;
}

static void check_against_llvm(const char *what, const char *ref_bin, const char *debug,
			       int loose, struct t_stats *st, size_t *max_depth)
{
	check_against_llvm_opts(what, ref_bin, debug, NULL, loose, st, max_depth);
}

static void assert_exact(const struct t_stats *st)
{
	assert_int_equal(st->depth_diff, 0);
	assert_int_equal(st->name_diff, 0);
	assert_int_equal(st->file_diff, 0);
	assert_int_equal(st->line_diff, 0);
}

static int build_c(const char *flags, const char *out)
{
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	return t_run("cd '%s' && gcc %s -o %s prog.c", t_dir, flags, out);
}

static void test_c_inline_chains(void **state)
{
	struct t_stats st;
	size_t depth;
	(void)state;

	assert_int_equal(build_c("-g -O2", "c_full"), 0);
	check_against_llvm("C -O2", t_path("c_full"), t_path("c_full"), 0, &st, &depth);
	assert_exact(&st);
	assert_int_equal(st.col_diff, 0);
	/* leaf inlined into mid into top into work: at least 4 frames somewhere. */
	assert_true(depth >= 4);
}

static void test_c_chain_content(void **state)
{
	struct sym_dwarf *d = NULL;
	struct err_msg msg = { "" };
	struct sym_frame f[SYM_MAX_FRAMES];
	uint64_t *a;
	size_t n, found = 0;
	(void)state;

	assert_int_equal(build_c("-g -O2", "c_full2"), 0);
	n = t_addresses(t_path("c_full2"), &a);
	assert_int_equal(sym_dwarf_open(t_path("c_full2"), NULL, &d, &msg), 0);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		assert_int_equal(sym_dwarf_lookup(d, a[i], f, SYM_MAX_FRAMES, &k), 0);
		if (k != 4 || strcmp(f[0].function, "leaf"))
			continue;
		assert_string_equal(t_base(f[0].file), "inl.h");
		assert_int_equal(f[0].line, 3);
		assert_true(f[0].flags & SYM_FRAME_INLINED);
		assert_string_equal(f[1].function, "mid");
		assert_string_equal(t_base(f[1].file), "prog.c");
		assert_int_equal(f[1].line, 7); /* s += leaf(i ^ x); */
		assert_string_equal(f[2].function, "top");
		assert_int_equal(f[2].line, 12);
		assert_string_equal(f[3].function, "work");
		assert_int_equal(f[3].line, 16);
		assert_false(f[3].flags & SYM_FRAME_INLINED);
		assert_true(f[3].file[0] == '/'); /* made absolute with comp_dir */
		found++;
	}
	assert_true(found > 0);
	sym_dwarf_close(d);
	free(a);
}

static void test_cxx_templates_lambdas(void **state)
{
	struct t_stats st;
	size_t depth;
	(void)state;

	t_write("prog.cc", FIX_CXX);
	assert_int_equal(t_run("cd '%s' && g++ -g -O2 -o cxx_full prog.cc", t_dir), 0);
	check_against_llvm("C++ -O2", t_path("cxx_full"), t_path("cxx_full"), 1, &st, &depth);
	assert_int_equal(st.depth_diff, 0);
	assert_int_equal(st.file_diff, 0);
	assert_int_equal(st.line_diff, 0);
	assert_int_equal(st.name_diff, 0);
	assert_true(depth >= 5);
}

static void test_split_debug_file(void **state)
{
	struct sym_elf_info exe;
	struct sym_dwarf *full = NULL, *dbg = NULL;
	struct sym_dwarf_opts o = { 0 };
	struct err_msg msg = { "" };
	struct sym_frame f1[SYM_MAX_FRAMES], f2[SYM_MAX_FRAMES];
	uint64_t *a;
	(void)state;

	assert_int_equal(build_c("-g -O2", "split"), 0);
	assert_int_equal(t_run("cd '%s' && cp split split.full && "
			       "objcopy --only-keep-debug split split.debug && "
			       "strip --strip-all split && "
			       "objcopy --add-gnu-debuglink=split.debug split", t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("split"), &exe, &msg), 0);
	assert_true(exe.build_id_len == 20);
	o.build_id = exe.build_id;
	o.build_id_len = exe.build_id_len;
	assert_int_equal(sym_dwarf_open(t_path("split.debug"), &o, &dbg, &msg), 0);
	assert_int_equal(sym_dwarf_open(t_path("split.full"), &o, &full, &msg), 0);
	size_t n = t_addresses(t_path("split.full"), &a);
	for (size_t i = 0; i < n; i++) {
		size_t k1 = 0, k2 = 0;
		assert_int_equal(sym_dwarf_lookup(full, a[i], f1, SYM_MAX_FRAMES, &k1), 0);
		assert_int_equal(sym_dwarf_lookup(dbg, a[i], f2, SYM_MAX_FRAMES, &k2), 0);
		assert_int_equal(k1, k2);
		for (size_t j = 0; j < k1; j++) {
			assert_string_equal(f1[j].function ? f1[j].function : "",
					    f2[j].function ? f2[j].function : "");
			assert_int_equal(f1[j].line, f2[j].line);
		}
	}
	sym_dwarf_close(full);
	sym_dwarf_close(dbg);
	free(a);

	/* The stripped executable has no symbols of its own. */
	memset(&msg, 0, sizeof(msg));
	assert_int_equal(sym_dwarf_open(t_path("split"), NULL, &dbg, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "no_symbols"));

	/* A debug file for another build. */
	uint8_t other[20];
	memcpy(other, exe.build_id, 20);
	other[0] ^= 0xff;
	o.build_id = other;
	memset(&msg, 0, sizeof(msg));
	assert_int_equal(sym_dwarf_open(t_path("split.debug"), &o, &dbg, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "build_id_mismatch"));
}

static void test_symtab_fallback(void **state)
{
	struct t_stats st;
	size_t depth;
	struct sym_dwarf *d = NULL;
	struct err_msg msg = { "" };
	struct sym_frame f[4];
	size_t k = 0;
	uint64_t *a;
	(void)state;

	/* C++ without -g: names come from .symtab, demangled. */
	t_write("prog.cc", FIX_CXX);
	assert_int_equal(t_run("cd '%s' && g++ -O2 -o cxx_nodebug prog.cc", t_dir), 0);
	check_against_llvm("C++ no -g", t_path("cxx_nodebug"), t_path("cxx_nodebug"), 1, &st,
			   &depth);
	assert_int_equal(st.depth_diff, 0);
	assert_int_equal(st.name_diff, 0);
	assert_int_equal(depth, 1);

	assert_int_equal(sym_dwarf_open(t_path("cxx_nodebug"), NULL, &d, &msg), 0);
	size_t n = t_addresses(t_path("cxx_nodebug"), &a);
	size_t named = 0;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(sym_dwarf_lookup(d, a[i], f, 4, &k), 0);
		if (k && f[0].function && strstr(f[0].function, "mapper[abi:cxx11](int)")) {
			assert_true(f[0].flags & SYM_FRAME_SYMTAB);
			assert_null(f[0].file);
			named++;
		}
	}
	assert_true(named > 0);
	free(a);
	sym_dwarf_close(d);
}

static void test_go_without_aranges(void **state)
{
	struct t_stats st;
	size_t depth;
	(void)state;

	if (!t_have_go())
		skip();
	t_write("main.go", FIX_GO);
	assert_int_equal(t_go_build("-ldflags=-compressdwarf=false -o gobin main.go"), 0);
	check_against_llvm("Go", t_path("gobin"), t_path("gobin"), 0, &st, &depth);
	assert_exact(&st);
	assert_true(depth >= 2);
}

struct counter {
	size_t calls, next;
};

static int count_cb(void *ctx, size_t i, uint64_t v, const struct sym_frame *f, size_t k)
{
	struct counter *c = ctx;
	(void)v;
	(void)f;
	(void)k;
	if (i != c->next)
		return -100;
	c->next++;
	c->calls++;
	return 0;
}

static void test_resolve_batch(void **state)
{
	struct sym_dwarf *d = NULL;
	struct err_msg msg = { "" };
	struct counter c = { 0, 0 };
	uint64_t *a;
	(void)state;

	assert_int_equal(build_c("-g -O1", "batch"), 0);
	size_t n = t_addresses(t_path("batch"), &a);
	assert_int_equal(sym_dwarf_open(t_path("batch"), NULL, &d, &msg), 0);
	assert_int_equal(sym_dwarf_resolve(d, a, n, count_cb, &c), 0);
	assert_int_equal(c.calls, n);
	sym_dwarf_close(d);
	free(a);
}

/* find_alt of the DWZ test: ctx is the path to hand out, or NULL. */
static int alt_cb(void *ctx, const uint8_t *id, size_t id_len, const char *name, char **path)
{
	(void)id;
	(void)id_len;
	(void)name;
	if (!ctx)
		return ERR_NOT_FOUND;
	*path = strdup(ctx);
	return *path ? 0 : ERR_NOMEM;
}

/*
 * DWZ: two C and two C++ builds split and run through `dwz -m`, so names,
 * types and the abstract instances of inlined functions move to a shared
 * alt file (DW_FORM_GNU_ref_alt / DW_FORM_GNU_strp_alt).  The link names a
 * path that does not exist; the alt file comes from find_alt.
 */
static void test_dwz_alt_file(void **state)
{
	struct sym_dwarf_opts o = { 0 };
	struct sym_elf_info info;
	struct sym_dwarf *d = NULL;
	struct err_msg msg = { "" };
	struct t_stats st;
	size_t depth;
	char alt[512], other[512]; /* t_path's buffers are reused */
	static const struct {
		const char *what, *prog;
		int loose, exact_cols;
		size_t min_depth;
	} builds[] = {
		{ "C -O2 dwz", "dwz_c1", 0, 1, 4 },
		{ "C -O1 dwz", "dwz_c2", 0, 0, 0 },
		{ "C++ -O2 dwz", "dwz_x1", 1, 0, 5 },
		{ "C++ -O1 dwz", "dwz_x2", 1, 0, 0 },
	};
	(void)state;

	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	t_write("prog.cc", FIX_CXX);
	assert_int_equal(t_run("cd '%s' && gcc -g -O2 -o dwz_c1 prog.c && "
			       "gcc -g -O1 -o dwz_c2 prog.c && "
			       "g++ -g -O2 -o dwz_x1 prog.cc && g++ -g -O1 -o dwz_x2 prog.cc && "
			       "for p in dwz_c1 dwz_c2 dwz_x1 dwz_x2; do "
			       "objcopy --only-keep-debug $p $p.debug || exit 1; done && "
			       "dwz -m dwz_common.debug -M /nonexistent-unhex-dwz/common.debug "
			       "dwz_c1.debug dwz_c2.debug dwz_x1.debug dwz_x2.debug && "
			       "readelf --debug-dump=abbrev dwz_c1.debug 2>/dev/null "
			       "| grep -q DW_FORM_GNU_strp_alt && "
			       "readelf --debug-dump=abbrev dwz_x1.debug 2>/dev/null "
			       "| grep -q DW_FORM_GNU_ref_alt", t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("dwz_c1.debug"), &info, &msg), 0);
	assert_true(info.flags & SYM_HAS_ALTLINK);
	assert_string_equal(info.alt_name, "/nonexistent-unhex-dwz/common.debug");

	snprintf(alt, sizeof(alt), "%s", t_path("dwz_common.debug"));
	/* With the alt file: exactly llvm-symbolizer on the unstripped builds. */
	o.find_alt = alt_cb;
	for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		char bin[512], dbg[520];

		snprintf(bin, sizeof(bin), "%s", t_path(builds[i].prog));
		snprintf(dbg, sizeof(dbg), "%s.debug", bin);
		o.ctx = alt;
		check_against_llvm_opts(builds[i].what, bin, dbg, &o, builds[i].loose, &st, &depth);
		assert_exact(&st);
		if (builds[i].exact_cols)
			assert_int_equal(st.col_diff, 0);
		assert_true(depth >= builds[i].min_depth);
	}
	o.ctx = alt;
	assert_true(check_funcs_against_llvm("C++ -O2 dwz, every function", t_path("dwz_x1"),
					     t_path("dwz_x1.debug"), &o, 1, &st) >= 20);
	assert_exact(&st);

	/* Without a callback and no file at the linked path: it opens, but the
	 * names that moved to the alt file are gone (the test above is real). */
	check_against_llvm_opts("C -O2 dwz, no alt", t_path("dwz_c1"), t_path("dwz_c1.debug"),
				NULL, 0, &st, &depth);
	assert_true(st.name_diff > 0 || st.depth_diff > 0);

	/* With a callback that finds nothing: the open fails and says why. */
	o.ctx = NULL;
	assert_int_equal(sym_dwarf_open(t_path("dwz_c1.debug"), &o, &d, &msg), ERR_NOT_FOUND);
	assert_non_null(strstr(msg.text, "alt_not_found"));
	assert_non_null(strstr(msg.text, "/nonexistent-unhex-dwz/common.debug"));
	/* A file with another build ID is not the alt file. */
	snprintf(other, sizeof(other), "%s", t_path("dwz_c2.debug"));
	o.ctx = other;
	assert_int_equal(sym_dwarf_open(t_path("dwz_c1.debug"), &o, &d, &msg), ERR_NOT_FOUND);
	/* Nor is a FIFO: it must not block the open (O_NONBLOCK, S_ISREG). */
	assert_int_equal(t_run("cd '%s' && mkfifo dwz_fifo", t_dir), 0);
	snprintf(other, sizeof(other), "%s", t_path("dwz_fifo"));
	o.ctx = other;
	assert_int_equal(sym_dwarf_open(t_path("dwz_c1.debug"), &o, &d, &msg), ERR_NOT_FOUND);
	o.ctx = alt;
	assert_int_equal(sym_dwarf_open(t_path("dwz_c1.debug"), &o, &d, &msg), 0);
	sym_dwarf_close(d);
}

/*
 * The C++ pair of tests/integration/sym_dwz.sh, through `dwz -m` exactly as
 * there: two different programs sharing a header of templates, so the alt
 * file holds the declarations, abstract instances and specifications of
 * out-of-line template instances (std::sort's helpers, the iterator
 * operators) and partial units the .debug files import.  Every FUNC symbol
 * of both programs (leaf and return-address roles) and every instruction
 * must resolve exactly as llvm-symbolizer does on the unstripped builds.
 */
static void test_dwz_shared_templates(void **state)
{
	struct sym_dwarf_opts o = { 0 };
	struct t_stats st;
	size_t depth;
	char alt[512];
	static const char *progs[] = { "dwzs_x1", "dwzs_x2" };
	(void)state;

	t_write("shared.hh", FIX_DWZ_HH);
	t_write("dwzs_x1.cc", FIX_DWZ_X1);
	t_write("dwzs_x2.cc", FIX_DWZ_X2);
	assert_int_equal(t_run("cd '%s' && "
			       FIX_DWZ_PAIR_BUILD, t_dir), 0);
	snprintf(alt, sizeof(alt), "%s", t_path("dwzs_common.debug"));
	o.find_alt = alt_cb;
	for (size_t i = 0; i < 2; i++) {
		char bin[512], dbg[520], what[128];
		snprintf(bin, sizeof(bin), "%s", t_path(progs[i]));
		snprintf(dbg, sizeof(dbg), "%s.debug", bin);
		snprintf(what, sizeof(what), "%s dwz, every function", progs[i]);
		o.ctx = alt;
		assert_true(check_funcs_against_llvm(what, bin, dbg, &o, 1, &st) >= 10);
		assert_exact(&st);
		snprintf(what, sizeof(what), "%s dwz, every instruction", progs[i]);
		o.ctx = alt;
		check_against_llvm_opts(what, bin, dbg, &o, 1, &st, &depth);
		assert_exact(&st);
		assert_true(depth >= 4);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_c_inline_chains),
		cmocka_unit_test(test_c_chain_content),
		cmocka_unit_test(test_cxx_templates_lambdas),
		cmocka_unit_test(test_split_debug_file),
		cmocka_unit_test(test_symtab_fallback),
		cmocka_unit_test(test_go_without_aranges),
		cmocka_unit_test(test_resolve_batch),
		cmocka_unit_test(test_dwz_alt_file),
		cmocka_unit_test(test_dwz_shared_templates),
	};
	t_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	t_rmdir();
	return rc;
}
