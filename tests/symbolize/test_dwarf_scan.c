/*
 * test_dwarf_scan.c - dwarf.c's linear DIE scanner against the libdw walk
 * it falls back to.  Every program is opened twice, once as the server
 * does and once with SYM_DWARF_LIBDW_WALK; both build every table
 * (sym__dwarf_load_all), which must be equal entry by entry (each unit's
 * functions by DIE offset and address spans, each function's inline tree:
 * names, call sites, child spans), and the index written from each must be
 * the same bytes.  The programs: C and C++ (templates, lambdas, inlined
 * standard library) at -O0 and -O2, DWARF 4 and 5, clang's DWARF 5 forms
 * (strx, addrx, rnglists), Go, and the DWZ'd pairs whose units refer into
 * an alt file.  The scanner must also have done the work: counted units
 * and functions scanned, and none when forced to walk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "fixtures.h"
#include "symbolize/symbolize_int.h"
#include "symtest.h"

static const char *nz(const char *s)
{
	return s ? s : "(null)";
}

static void same_spans(const struct sym__span *a, const struct sym__span *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_true(a[i].lo == b[i].lo);
		assert_true(a[i].hi == b[i].hi);
		assert_true(a[i].maxhi == b[i].maxhi);
		assert_int_equal(a[i].idx, b[i].idx);
	}
}

static void same_func(struct sym__func *x, struct sym__func *y)
{
	assert_true(dwarf_dieoffset(&x->die) == dwarf_dieoffset(&y->die));
	assert_int_equal(x->loaded, y->loaded);
	assert_int_equal(x->n_nodes, y->n_nodes);
	for (size_t k = 0; k < x->n_nodes; k++) {
		const struct sym__node *a = &x->nodes[k], *b = &y->nodes[k];

		assert_string_equal(nz(a->name), nz(b->name));
		assert_string_equal(nz(a->call_file), nz(b->call_file));
		assert_int_equal(a->call_line, b->call_line);
		assert_int_equal(a->call_col, b->call_col);
		assert_int_equal(a->kids, b->kids);
		assert_int_equal(a->n_kids, b->n_kids);
	}
	assert_int_equal(x->n_spans, y->n_spans);
	same_spans(x->spans, y->spans, x->n_spans);
}

/* The function tables of both handles, unit by unit; returns the functions. */
static size_t same_tables(struct sym_dwarf *x, struct sym_dwarf *y)
{
	size_t funcs = 0;

	assert_int_equal(x->n_cus, y->n_cus);
	for (size_t i = 0; i < x->n_cus; i++) {
		struct sym__cu *a = &x->cus[i], *b = &y->cus[i];

		assert_true(dwarf_dieoffset(&a->die) == dwarf_dieoffset(&b->die));
		assert_int_equal(a->loaded, b->loaded);
		assert_int_equal(a->n_funcs, b->n_funcs);
		assert_int_equal(a->n_spans, b->n_spans);
		same_spans(a->spans, b->spans, a->n_spans);
		for (size_t j = 0; j < a->n_funcs; j++)
			same_func(&a->funcs[j], &b->funcs[j]);
		funcs += a->n_funcs;
	}
	return funcs;
}

/* find_alt: ctx is the path of the alt file. */
static int alt_cb(void *ctx, const uint8_t *id, size_t id_len, const char *name, char **path)
{
	(void)id;
	(void)id_len;
	(void)name;
	*path = strdup(ctx);
	return *path ? 0 : ERR_NOMEM;
}

/*
 * Builds `file` both ways (the DWZ alt file from `alt` when not NULL) and
 * compares.  `all_scanned`: every unit and function must have been scanned
 * (well-formed output of a compiler the scanner knows).
 */
static void compare(const char *what, const char *file, const char *alt, int all_scanned)
{
	struct sym_dwarf_opts o = { 0 };
	struct sym_dwarf *scan = NULL, *walk = NULL;
	struct err_msg msg = { "" };
	struct buf bs, bw;
	size_t funcs;

	if (alt) {
		o.find_alt = alt_cb;
		o.ctx = (void *)alt;
	}
	assert_int_equal(sym_dwarf_open(file, &o, &scan, &msg), 0);
	o.flags = SYM_DWARF_LIBDW_WALK;
	assert_int_equal(sym_dwarf_open(file, &o, &walk, &msg), 0);
	assert_int_equal(sym__dwarf_load_all(scan), 0);
	assert_int_equal(sym__dwarf_load_all(walk), 0);
	funcs = same_tables(scan, walk);

	buf_init(&bs, 1u << 30);
	buf_init(&bw, 1u << 30);
	assert_int_equal(sym_index_build_buf(scan, &bs, NULL, &msg), 0);
	assert_int_equal(sym_index_build_buf(walk, &bw, NULL, &msg), 0);
	assert_int_equal(bs.len, bw.len);
	assert_memory_equal(bs.data, bw.data, bs.len);

	fprintf(stderr, "%s: %zu units, %zu functions, %zu index bytes; scanned %zu units "
		"and %zu functions, walked %zu and %zu\n", what, scan->n_cus, funcs, bs.len,
		scan->walks.cus_scanned, scan->walks.funcs_scanned, scan->walks.cus_walked,
		scan->walks.funcs_walked);
	assert_true(funcs > 0);
	assert_true(scan->walks.cus_scanned > 0 && scan->walks.funcs_scanned > 0);
	if (all_scanned) {
		assert_int_equal(scan->walks.cus_walked, 0);
		assert_int_equal(scan->walks.funcs_walked, 0);
	}
	assert_int_equal(walk->walks.cus_scanned, 0);
	assert_int_equal(walk->walks.funcs_scanned, 0);
	assert_int_equal(walk->walks.cus_walked, walk->n_cus);
	buf_release(&bs);
	buf_release(&bw);
	sym_dwarf_close(scan);
	sym_dwarf_close(walk);
}

static int setup(void **state)
{
	(void)state;
	t_mkdtemp();
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	t_write("prog.cc", FIX_CXX);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	t_rmdir();
	return 0;
}

/* `lang` (C or C++) built by `cc` from `src` at -O2, -O0 and -O2 with DWARF 4
 * into <out>_o2, <out>_o0 and <out>_d4, each compared. */
static void gcc_builds(const char *lang, const char *cc, const char *src, const char *out)
{
	static const struct {
		const char *flags, *suffix, *what;
	} builds[] = {
		{ "-g -O2", "_o2", "-O2" },
		{ "-g -O0", "_o0", "-O0" },
		{ "-gdwarf-4 -O2", "_d4", "-O2 DWARF 4" },
	};
	char name[64], what[64];

	for (size_t i = 0; i < sizeof(builds) / sizeof(builds[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", out, builds[i].suffix);
		assert_int_equal(t_run("cd '%s' && %s %s -o %s %s", t_dir, cc, builds[i].flags, name,
				       src), 0);
		snprintf(what, sizeof(what), "%s %s", lang, builds[i].what);
		compare(what, t_path(name), NULL, 1);
	}
}

static void test_gcc_c(void **state)
{
	(void)state;
	gcc_builds("C", "gcc", "prog.c", "c");
}

static void test_gcc_cxx(void **state)
{
	(void)state;
	gcc_builds("C++", "g++", "prog.cc", "x");
}

static void test_clang(void **state)
{
	(void)state;
	if (system("command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1"))
		skip();
	assert_int_equal(t_run("cd '%s' && clang -g -O2 -o cl_c prog.c && "
			       "clang++ -g -O2 -o cl_x prog.cc", t_dir), 0);
	compare("clang C -O2", t_path("cl_c"), NULL, 1);
	compare("clang++ -O2", t_path("cl_x"), NULL, 1);
}

static void test_go(void **state)
{
	(void)state;
	if (!t_have_go())
		skip();
	t_write("main.go", FIX_GO);
	assert_int_equal(t_go_build("-ldflags=-compressdwarf=false -o gobin main.go"), 0);
	compare("Go", t_path("gobin"), NULL, 0);
}

/* Units that import partial units and refer into the alt file (DW_FORM_GNU_*_alt). */
static void test_dwz(void **state)
{
	char alt[512], alt2[512];

	(void)state;
	t_write("shared.hh", FIX_DWZ_HH);
	t_write("dwzs_x1.cc", FIX_DWZ_X1);
	t_write("dwzs_x2.cc", FIX_DWZ_X2);
	assert_int_equal(t_run("cd '%s' && gcc -g -O2 -o z_c1 prog.c && gcc -g -O1 -o z_c2 prog.c && "
			       "g++ -g -O2 -o z_x1 prog.cc && "
			       "for p in z_c1 z_c2 z_x1; do objcopy --only-keep-debug $p $p.debug "
			       "|| exit 1; done && "
			       "dwz -m z_common.debug -M /nonexistent/z.debug "
			       "z_c1.debug z_c2.debug z_x1.debug && "
			       FIX_DWZ_PAIR_BUILD, t_dir), 0);
	snprintf(alt, sizeof(alt), "%s", t_path("z_common.debug"));
	snprintf(alt2, sizeof(alt2), "%s", t_path("dwzs_common.debug"));
	compare("C -O2 dwz", t_path("z_c1.debug"), alt, 1);
	compare("C -O1 dwz", t_path("z_c2.debug"), alt, 1);
	compare("C++ -O2 dwz", t_path("z_x1.debug"), alt, 1);
	compare("C++ shared templates dwz 1", t_path("dwzs_x1.debug"), alt2, 1);
	compare("C++ shared templates dwz 2", t_path("dwzs_x2.debug"), alt2, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gcc_c),
		cmocka_unit_test(test_gcc_cxx),
		cmocka_unit_test(test_clang),
		cmocka_unit_test(test_go),
		cmocka_unit_test(test_dwz),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
