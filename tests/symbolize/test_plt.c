/*
 * test_plt.c - PLT stubs are named "sym@plt" as objdump names them: for
 * every entry objdump labels <name@plt> in .plt or .plt.sec of a real C
 * program (a lazy-binding PLT, and an IBT one with .plt.sec), the DWARF
 * resolver and the index name every byte of the entry the same, from the
 * unstripped binary, and from the .debug file with the stripped executable
 * as plt_from (alone, or with another program's executable, the .debug
 * file names none).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/err.h"
#include "symbolize/symbolize.h"
#include "symtest.h"

static const char PROG[] =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"__attribute__((noinline)) static int scan(const char *a, const char *b, int k)\n"
	"{\n"
	"\tint s = 0;\n"
	"\tfor (int i = 0; i < k; i++)\n"
	"\t\ts += memcmp(a + (i & 7), b + (i & 7), 1);\n"
	"\treturn s;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tstatic char a[64] = \"abcdefgh\", b[64] = \"abcdefgh\";\n"
	"\tprintf(\"%d\\n\", scan(a, b, argc > 1 ? atoi(argv[1]) : 10));\n"
	"\treturn 0;\n"
	"}\n";

struct entry {
	uint64_t addr;
	char name[128];
};

/* objdump's <name@plt> labels in .plt and .plt.sec of `bin`. */
static size_t objdump_plt(const char *bin, struct entry *e, size_t max)
{
	char cmd[1024], line[512];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "objdump -d -j .plt -j .plt.sec '%s' 2>/dev/null | "
		 "sed -n 's/^\\([0-9a-f]*\\) <\\(.*@plt\\)>:$/\\1 \\2/p'", bin);
	assert_non_null(p = popen(cmd, "r"));
	while (n < max && fgets(line, sizeof(line), p)) {
		unsigned long long a;

		if (sscanf(line, "%llx %127s", &a, e[n].name) == 2) {
			e[n].addr = a;
			n++;
		}
	}
	pclose(p);
	return n;
}

/* Every byte of every entry: `d` and its index name it e[i].name. */
static void check_names(const char *path, const char *plt_from, const struct entry *e, size_t n,
			int expect)
{
	struct sym_dwarf_opts o = { 0 };
	struct err_msg msg = { "" };
	struct sym_frame f[SYM_MAX_FRAMES];
	struct sym_dwarf *d = NULL;
	struct sym_index *x = NULL;
	char idx[600];
	size_t k;

	o.plt_from = plt_from;
	snprintf(idx, sizeof(idx), "%s.%s.symidx", path, plt_from ? "exe" : "alone");
	assert_int_equal(sym_dwarf_open(path, &o, &d, &msg), 0);
	assert_int_equal(sym_index_build(path, idx, &o, NULL, &msg), 0);
	assert_int_equal(sym_index_open(idx, NULL, 0, &x, &msg), 0);
	for (size_t i = 0; i < n; i++)
		for (uint64_t a = e[i].addr; a < e[i].addr + 16; a++) {
			for (int via = 0; via < 2; via++) {
				if (via == 0)
					assert_int_equal(sym_dwarf_lookup(d, a, f, SYM_MAX_FRAMES, &k), 0);
				else
					assert_int_equal(sym_index_lookup(x, a, f, SYM_MAX_FRAMES, &k), 0);
				if (!expect) {
					assert_true(k == 0 || !f[0].function ||
						    !strstr(f[0].function, "@plt"));
					continue;
				}
				assert_int_equal(k, 1);
				assert_non_null(f[0].function);
				assert_string_equal(f[0].function, e[i].name);
				assert_true(f[0].flags & SYM_FRAME_SYMTAB);
			}
		}
	fprintf(stderr, "%s%s: %zu PLT entries %s\n", t_base(path), plt_from ? " + exe" : "", n,
		expect ? "named as objdump names them" : "unnamed, as expected");
	sym_index_close(x);
	sym_dwarf_close(d);
}

static void one_build(const char *name, const char *flags)
{
	struct entry e[64];
	char bin[512], dbg[530], str[530];
	size_t n;
	int memcmp_seen = 0;

	assert_int_equal(t_run("cd '%s' && gcc -g -O2 -fno-builtin-memcmp %s -o %s plt.c && "
			       "objcopy --only-keep-debug %s %s.debug && "
			       "cp %s %s.stripped && strip --strip-all %s.stripped",
			       t_dir, flags, name, name, name, name, name, name), 0);
	snprintf(bin, sizeof(bin), "%s", t_path(name));
	snprintf(dbg, sizeof(dbg), "%s.debug", bin);
	snprintf(str, sizeof(str), "%s.stripped", bin);
	n = objdump_plt(bin, e, 64);
	for (size_t i = 0; i < n; i++)
		memcmp_seen |= !strcmp(e[i].name, "memcmp@plt");
	assert_true(memcmp_seen);
	check_names(bin, NULL, e, n, 1);
	check_names(dbg, NULL, e, n, 0);
	check_names(dbg, str, e, n, 1);
	/* An executable of another build ID is ignored. */
	check_names(dbg, t_path("other"), e, n, 0);
}

static void test_plt_lazy(void **state)
{
	(void)state;
	one_build("lazy", "-fcf-protection=none");
}

static void test_plt_ibt(void **state)
{
	(void)state;
	one_build("ibt", "-fcf-protection -Wl,-z,ibtplt");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plt_lazy),
		cmocka_unit_test(test_plt_ibt),
	};
	t_mkdtemp();
	t_write("plt.c", PROG);
	/* Another program: its build ID differs from every one above. */
	if (t_run("cd '%s' && printf 'int main(void){return 0;}' > o.c && gcc -o other o.c", t_dir))
		return 1;
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	t_rmdir();
	return rc;
}
