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
static void check_against_llvm(const char *what, const char *ref_bin, const char *debug,
			       int loose, struct t_stats *st, size_t *max_depth)
{
	struct sym_dwarf *d = NULL;
	struct err_msg msg = { "" };
	struct sym_frame f[SYM_MAX_FRAMES];
	uint64_t *a;
	size_t n = t_addresses(ref_bin, &a);

	n = thin(a, n);
	assert_true(n > 20);
	struct t_result *ref = t_llvm(ref_bin, a, n);
	t_cxxfilt_raw(ref, n);
	assert_int_equal(sym_dwarf_open(debug, NULL, &d, &msg), 0);
	memset(st, 0, sizeof(*st));
	*max_depth = 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		assert_int_equal(sym_dwarf_lookup(d, a[i], f, SYM_MAX_FRAMES, &k), 0);
		if (k > *max_depth)
			*max_depth = k;
		t_compare(a[i], f, k, &ref[i], st, 1, loose);
	}
	t_print_stats(what, st);
	sym_dwarf_close(d);
	t_free_results(ref, n);
	free(a);
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

	if (system("command -v go >/dev/null 2>&1") != 0)
		skip();
	t_write("main.go", FIX_GO);
	assert_int_equal(t_run("cd '%s' && HOME='%s' GOCACHE='%s/gocache' GOPATH='%s/gopath' "
			       "GOFLAGS=-mod=mod GO111MODULE=off go build "
			       "-ldflags=-compressdwarf=false -o gobin main.go",
			       t_dir, t_dir, t_dir, t_dir), 0);
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
	};
	t_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	t_rmdir();
	return rc;
}
