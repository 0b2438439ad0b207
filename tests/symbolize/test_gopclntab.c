/*
 * test_gopclntab.c - Go frames named from .gopclntab alone, checked
 * against Go's own tools on a real program built by the test:
 *
 *   - `go tool addr2line` (which reads the pclntab through debug/gosym)
 *     at thousands of addresses spread over the whole code: it prints the
 *     physical function (the outermost frame of an inline chain) and the
 *     file:line at the address (the innermost frame's);
 *   - the DWARF of the unstripped build (libdw, struct sym_dwarf), frame
 *     by frame: every inlined call, its function, file and line;
 *   - the index written from the table answers what the table answers;
 *   - binaries built with -ldflags='-s -w' (no DWARF, no symbols) too,
 *     and as a PIE;
 *   - truncated and corrupted tables open or fail cleanly, never crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_int.h"
#include "symtest.h"

static const char GO_PROG[] =
	"package main\n"
	"\n"
	"import (\n"
	"\t\"fmt\"\n"
	"\t\"os\"\n"
	")\n"
	"\n"
	"type acc struct{ v uint64 }\n"
	"\n"
	"func mix(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }\n"
	"\n"
	"func (a *acc) step(x uint64) { a.v ^= mix(x) >> 3 }\n"
	"\n"
	"func twice(a *acc, x uint64) {\n"
	"\ta.step(x)\n"
	"\ta.step(x + 1)\n"
	"}\n"
	"\n"
	"//go:noinline\n"
	"func work(n int) uint64 {\n"
	"\tvar a acc\n"
	"\tfor i := 0; i < n; i++ {\n"
	"\t\ttwice(&a, uint64(i))\n"
	"\t}\n"
	"\treturn a.v\n"
	"}\n"
	"\n"
	"func main() {\n"
	"\tfmt.Println(work(len(os.Args) * 1000))\n"
	"}\n";

static const char BID[] = "4a5a9b0a11223344556677889900aabbccddeeff";

static void build_go(void)
{
	t_write("main.go", GO_PROG);
	assert_int_equal(t_go_build("-ldflags='-B 0x%s' -o gobin main.go", BID), 0);
	assert_int_equal(t_go_build("-ldflags='-s -w -B 0x%s' -o gobin.sw main.go", BID), 0);
	assert_int_equal(t_go_build("-buildmode=pie -ldflags='-B 0x%s' -o gobin.piefull main.go",
				    BID), 0);
	assert_int_equal(t_run("cd '%s' && strip --strip-all -o gobin.pie gobin.piefull && "
			       "strip --strip-all -o gobin.stripped gobin", t_dir), 0);
}

/* The [lo, hi) of .text of `bin`, from readelf. */
static void text_range(const char *bin, uint64_t *lo, uint64_t *hi)
{
	char cmd[600], line[256];
	unsigned long long a = 0, s = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "readelf -SW '%s' | sed -n 's/^ *\\[ *[0-9]*\\] \\.text *PROGBITS *\\([0-9a-f]*\\) "
		 "[0-9a-f]* \\([0-9a-f]*\\).*/\\1 \\2/p'", bin);
	assert_non_null(p = popen(cmd, "r"));
	assert_non_null(fgets(line, sizeof(line), p));
	pclose(p);
	assert_int_equal(sscanf(line, "%llx %llx", &a, &s), 2);
	*lo = a;
	*hi = a + s;
}

struct a2l {
	char func[512];
	char file[512];
	unsigned line;
};

/* `go tool addr2line` on every address of v (one run), into out[]. */
static void addr2line(const char *bin, const uint64_t *v, size_t n, struct a2l *out)
{
	char cmd[1024], l1[512], l2[512];
	FILE *f, *p;

	assert_non_null(f = fopen(t_path("addrs"), "w"));
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%llx\n", (unsigned long long)v[i]);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "HOME='%s' GOCACHE='%s/gocache' go tool addr2line '%s' <'%s'",
		 t_dir, t_dir, bin, t_path("addrs"));
	assert_non_null(p = popen(cmd, "r"));
	for (size_t i = 0; i < n; i++) {
		char *colon;

		assert_non_null(fgets(l1, sizeof(l1), p));
		assert_non_null(fgets(l2, sizeof(l2), p));
		l1[strcspn(l1, "\n")] = l2[strcspn(l2, "\n")] = 0;
		snprintf(out[i].func, sizeof(out[i].func), "%s", l1);
		colon = strrchr(l2, ':');
		assert_non_null(colon);
		*colon = 0;
		snprintf(out[i].file, sizeof(out[i].file), "%s", l2);
		out[i].line = (unsigned)strtoul(colon + 1, NULL, 10);
	}
	pclose(p);
}

static int streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Addresses over [lo, hi): every `step` bytes, plus lo and hi - 1. */
static size_t spread(uint64_t lo, uint64_t hi, uint64_t step, uint64_t **v)
{
	size_t n = 0, cap = (size_t)((hi - lo) / step + 2);

	assert_non_null(*v = malloc(cap * sizeof(**v)));
	for (uint64_t a = lo; a < hi && n + 1 < cap; a += step)
		(*v)[n++] = a;
	(*v)[n++] = hi - 1;
	return n;
}

/*
 * Every sampled address of `bin` (stripped or built without symbols) is
 * named as addr2line names it: the outermost frame's function, the
 * innermost frame's file and line.  Where addr2line knows no line
 * (alignment padding after a function), nothing is named.
 */
static void check_addr2line(const char *bin, const char *what)
{
	struct sym_gopcln *g = NULL;
	struct sym_gopcln_opts o = { 0 };
	struct sym_frame f[SYM_MAX_FRAMES];
	struct err_msg msg;
	uint64_t lo, hi, *v;
	size_t n, k, named = 0, inlined = 0, padding = 0;
	struct a2l *ref;
	uint8_t id[SYM_BUILD_ID_MAX];
	size_t idlen;

	assert_int_equal(sym_build_id_parse(BID, id, &idlen), 0);
	o.build_id = id;
	o.build_id_len = idlen;
	err_clear(&msg);
	assert_int_equal(sym_gopcln_open(bin, &o, &g, &msg), 0);
	assert_string_equal(sym_gopcln_layout(g), "Go 1.18-1.19");
	text_range(bin, &lo, &hi);
	n = spread(lo, hi, 13, &v);
	assert_non_null(ref = calloc(n, sizeof(*ref)));
	addr2line(bin, v, n, ref);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(sym_gopcln_lookup(g, v[i], f, SYM_MAX_FRAMES, &k), 0);
		/* addr2line prints a line of -1 (as 4294967295) and no file there. */
		if (ref[i].line == 0 || ref[i].line == UINT32_MAX || !ref[i].file[0]) {
			if (k != 0)
				fail_msg("%s 0x%llx: addr2line knows no line, we name %s", what,
					 (unsigned long long)v[i], f[0].function);
			padding++;
			continue;
		}
		if (k == 0 || !streq(f[k - 1].function, ref[i].func) ||
		    !streq(f[0].file, ref[i].file) || f[0].line != ref[i].line)
			fail_msg("%s 0x%llx: addr2line says %s %s:%u, we say %s %s:%u (%zu frames)",
				 what, (unsigned long long)v[i], ref[i].func, ref[i].file,
				 ref[i].line, k ? f[k - 1].function : "-",
				 k && f[0].file ? f[0].file : "-", k ? f[0].line : 0, k);
		assert_true(f[k - 1].flags == 0);
		for (size_t j = 0; j + 1 < k; j++)
			assert_true(f[j].flags & SYM_FRAME_INLINED);
		named++;
		inlined += k > 1;
	}
	print_message("%s: %zu addresses as addr2line names them (%zu in inlined code), "
		      "%zu in padding\n", what, named, inlined, padding);
	assert_true(named > n / 2);
	assert_true(inlined > 100);
	free(ref);
	free(v);
	sym_gopcln_close(g);
}

static void test_addr2line(void **state)
{
	(void)state;
	if (!t_have_go())
		skip();
	build_go();
	check_addr2line(t_path("gobin.stripped"), "strip --strip-all");
	check_addr2line(t_path("gobin.sw"), "-ldflags=-s -w");
}

static int autogenerated(const struct sym_frame *f, size_t k)
{
	for (size_t j = 0; j < k; j++)
		if (f[j].file && strstr(f[j].file, "<autogenerated>"))
			return 1;
	return 0;
}

/*
 * Inline chains frame by frame against the DWARF the Go compiler wrote
 * from the same inline tree, at every sampled address of the unstripped
 * build (the stripped copy has the same code at the same addresses).
 */
static void check_dwarf(const char *stripped, const char *full, const char *what)
{
	struct sym_gopcln *g = NULL;
	struct sym_dwarf *d = NULL;
	struct sym_frame a[SYM_MAX_FRAMES], b[SYM_MAX_FRAMES];
	uint64_t lo, hi, *v;
	size_t n, ka, kb, same = 0, both = 0, deep = 0, work = 0, wrappers = 0;

	assert_int_equal(sym_gopcln_open(stripped, NULL, &g, NULL), 0);
	assert_int_equal(sym_dwarf_open(full, NULL, &d, NULL), 0);
	text_range(full, &lo, &hi);
	n = spread(lo, hi, 7, &v);
	for (size_t i = 0; i < n; i++) {
		int eq;

		assert_int_equal(sym_gopcln_lookup(g, v[i], a, SYM_MAX_FRAMES, &ka), 0);
		assert_int_equal(sym_dwarf_lookup(d, v[i], b, SYM_MAX_FRAMES, &kb), 0);
		if (!ka || !kb)
			continue;
		/* Compiler-generated wrappers (file <autogenerated>) are named
		 * differently: DWARF names the wrapper "(*T).m" and its file
		 * "././<autogenerated>", the table names what it inlined. */
		if (autogenerated(a, ka) || autogenerated(b, kb)) {
			wrappers++;
			continue;
		}
		both++;
		eq = ka == kb;
		for (size_t j = 0; eq && j < ka; j++)
			eq = streq(a[j].function, b[j].function) && streq(a[j].file, b[j].file) &&
			     a[j].line == b[j].line;
		same += eq;
		if (!eq && getenv("T_VERBOSE")) {
			fprintf(stderr, "0x%llx:\n", (unsigned long long)v[i]);
			for (size_t j = 0; j < ka || j < kb; j++)
				fprintf(stderr, "  %s %s:%u | %s %s:%u\n", j < ka ? a[j].function : "",
					j < ka && a[j].file ? a[j].file : "", j < ka ? a[j].line : 0,
					j < kb ? b[j].function : "", j < kb && b[j].file ? b[j].file : "",
					j < kb ? b[j].line : 0);
		}
		deep += eq && ka >= 3;
		if (ka >= 3 && streq(a[ka - 1].function, "main.work")) {
			/* mix inlined into (*acc).step inlined into twice inlined into work */
			assert_true(eq);
			work++;
		}
	}
	print_message("%s, against DWARF: %zu of %zu addresses named both ways have the same "
		      "frames (%zu with 3 or more), %zu in main.work's chains; %zu in wrappers\n",
		      what, same, both, deep, work, wrappers);
	/* The whole chain, every frame, at 99.9% of the addresses at least. */
	assert_true(same * 1000 >= both * 999);
	assert_true(work > 0);
	free(v);
	sym_dwarf_close(d);
	sym_gopcln_close(g);
}

static void test_dwarf(void **state)
{
	(void)state;
	if (!t_have_go())
		skip();
	check_dwarf(t_path("gobin.stripped"), t_path("gobin"), "executable");
	/* A PIE: the inline trees are found through relocated pointers. */
	check_dwarf(t_path("gobin.pie"), t_path("gobin.piefull"), "PIE");
}

/* The index answers what the table answers, as leaves and as callers. */
static void test_index(void **state)
{
	struct sym_gopcln *g = NULL;
	struct sym_index *x = NULL;
	struct sym_frame a[SYM_MAX_FRAMES], b[SYM_MAX_FRAMES];
	struct sym_index_stats st;
	struct err_msg msg;
	struct buf out;
	uint64_t lo, hi, *v;
	size_t n, ka, kb;
	(void)state;

	if (!t_have_go())
		skip();
	assert_int_equal(sym_gopcln_open(t_path("gobin.stripped"), NULL, &g, NULL), 0);
	buf_init(&out, 1u << 30);
	err_clear(&msg);
	assert_int_equal(sym_gopcln_index_buf(g, &out, &st, &msg), 0);
	assert_true(st.functions > 1000 && st.ranges > st.functions);
	assert_int_equal(sym_index_open_mem(out.data, out.len, NULL, 0, &x, &msg), 0);
	text_range(t_path("gobin"), &lo, &hi);
	n = spread(lo - 16, hi + 16, 3, &v);
	for (size_t i = 0; i < n; i++) {
		for (int caller = 0; caller < 2; caller++) {
			if (caller) {
				assert_int_equal(sym_gopcln_lookup_caller(g, v[i], a, SYM_MAX_FRAMES, &ka), 0);
				assert_int_equal(sym_index_lookup_caller(x, v[i], b, SYM_MAX_FRAMES, &kb), 0);
			} else {
				assert_int_equal(sym_gopcln_lookup(g, v[i], a, SYM_MAX_FRAMES, &ka), 0);
				assert_int_equal(sym_index_lookup(x, v[i], b, SYM_MAX_FRAMES, &kb), 0);
			}
			assert_int_equal(ka, kb);
			for (size_t j = 0; j < ka; j++) {
				assert_true(streq(a[j].function, b[j].function));
				assert_true(a[j].file == b[j].file || streq(a[j].file, b[j].file));
				assert_int_equal(a[j].line, b[j].line);
				assert_int_equal(a[j].flags, b[j].flags);
			}
		}
	}
	free(v);
	sym_index_close(x);
	buf_release(&out);
	sym_gopcln_close(g);
}

/* sym_index_build picks the table for a file without DWARF, and says so. */
static void test_build_engine(void **state)
{
	struct sym_index_stats st;
	struct sym_index *x = NULL;
	struct sym_gopcln *g = NULL;
	struct err_msg msg;
	(void)state;

	if (!t_have_go())
		skip();
	err_clear(&msg);
	assert_int_equal(sym_index_build(t_path("gobin.sw"), t_path("sw.index"), NULL, &st, &msg), 0);
	assert_int_equal(st.from, SYM_FROM_GOPCLNTAB);
	assert_string_equal(st.layout, "Go 1.18-1.19");
	assert_int_equal(sym_index_open(t_path("sw.index"), NULL, 0, &x, &msg), 0);
	sym_index_close(x);
	/* With DWARF, DWARF names the frames. */
	assert_int_equal(sym_index_build(t_path("gobin"), t_path("full.index"), NULL, &st, &msg), 0);
	assert_int_equal(st.from, SYM_FROM_DEBUG_FILE);
	/* Not a Go file: the table is not found, with a message. */
	t_write("empty.c", "int main(void) { return 0; }\n");
	assert_int_equal(t_run("cd '%s' && gcc -o cbin empty.c", t_dir), 0);
	err_clear(&msg);
	assert_int_equal(sym_gopcln_open(t_path("cbin"), NULL, &g, &msg), ERR_NOT_FOUND);
	assert_non_null(strstr(msg.text, "no .gopclntab"));
}

/* The section's bytes and the text address, for the table-only handle. */
static uint8_t *section_bytes(const char *bin, size_t *len)
{
	FILE *f;
	long sz;
	uint8_t *b;

	assert_int_equal(t_run("objcopy -O binary --only-section=.gopclntab '%s' '%s'", bin,
			       t_path("tab.bin")), 0);
	assert_non_null(f = fopen(t_path("tab.bin"), "rb"));
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	assert_true(sz > 64);
	assert_non_null(b = malloc((size_t)sz));
	assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	*len = (size_t)sz;
	return b;
}

static void probe(struct sym_gopcln *g, uint64_t lo, uint64_t hi)
{
	struct sym_frame f[SYM_MAX_FRAMES];
	struct buf out;
	size_t k;

	for (uint64_t a = lo; a < hi; a += 97) {
		assert_true(sym_gopcln_lookup(g, a, f, SYM_MAX_FRAMES, &k) != ERR_INVALID);
		sym_gopcln_lookup_caller(g, a, f, 3, &k);
	}
	buf_init(&out, 64u << 20);
	sym_gopcln_index_buf(g, &out, NULL, NULL);
	buf_release(&out);
}

/* Truncated and corrupted tables: ERR_INVALID or a usable handle, never a crash. */
static void test_damaged(void **state)
{
	struct sym_gopcln *g = NULL;
	struct err_msg msg;
	uint64_t lo, hi;
	size_t len, opened = 0;
	uint8_t *tab, *copy;
	unsigned seed = 7;
	(void)state;

	if (!t_have_go())
		skip();
	tab = section_bytes(t_path("gobin.stripped"), &len);
	text_range(t_path("gobin"), &lo, &hi);
	assert_int_equal(sym__gopcln_open_tables(tab, len, lo, NULL, 0, 0, &g, NULL), 0);
	sym_gopcln_close(g);
	/* Every cut of the header and function table, then a few beyond. */
	for (size_t cut = 0; cut < len; cut += cut < 4096 ? 1 : len / 64) {
		assert_non_null(copy = malloc(cut ? cut : 1));
		memcpy(copy, tab, cut);
		g = NULL;
		err_clear(&msg);
		int rc = sym__gopcln_open_tables(copy, cut, lo, NULL, 0, 0, &g, &msg);
		assert_true(rc == 0 || rc == ERR_INVALID);
		if (rc == 0) {
			opened++;
			probe(g, lo, hi);
			sym_gopcln_close(g);
		} else {
			assert_non_null(strstr(msg.text, ".gopclntab"));
		}
		free(copy);
	}
	/* Random bytes overwritten, the inline trees pointed into the table itself. */
	assert_non_null(copy = malloc(len));
	for (int round = 0; round < 40; round++) {
		memcpy(copy, tab, len);
		for (int j = 0; j < 64; j++) {
			seed = seed * 1103515245u + 12345u;
			size_t at = round < 20 ? (seed >> 8) % 4096 : (seed >> 4) % len;
			copy[at] = (uint8_t)(seed >> 16);
		}
		g = NULL;
		if (sym__gopcln_open_tables(copy, len, lo, copy, len, 8u << 20, &g, NULL) == 0) {
			opened++;
			probe(g, lo, hi);
			sym_gopcln_close(g);
		}
	}
	free(copy);
	/* Go 1.16's magic is refused by name. */
	tab[0] = 0xfa;
	err_clear(&msg);
	assert_int_equal(sym__gopcln_open_tables(tab, len, lo, NULL, 0, 0, &g, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "Go 1.16"));
	print_message("damaged tables: %zu opened and probed\n", opened);
	free(tab);
}

/* ---- a table built by hand, in both layouts ---- */

struct tb {
	uint8_t b[2048];
	size_t n;
};

static void put(struct tb *t, const void *p, size_t n)
{
	assert_true(t->n + n <= sizeof(t->b));
	memcpy(t->b + t->n, p, n);
	t->n += n;
}

static void put32(struct tb *t, uint32_t v)
{
	uint8_t le[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	put(t, le, 4);
}

static void put64(struct tb *t, uint64_t v)
{
	put32(t, (uint32_t)v);
	put32(t, (uint32_t)(v >> 32));
}

static void set32(struct tb *t, size_t at, uint32_t v)
{
	size_t n = t->n;
	t->n = at;
	put32(t, v);
	t->n = n;
}

static void set64(struct tb *t, size_t at, uint64_t v)
{
	size_t n = t->n;
	t->n = at;
	put64(t, v);
	t->n = n;
}

static void putvar(struct tb *t, uint32_t v)
{
	while (v >= 0x80) {
		uint8_t c = (uint8_t)(v | 0x80);
		put(t, &c, 1);
		v >>= 7;
	}
	uint8_t c = (uint8_t)v;
	put(t, &c, 1);
}

/* A pc-value table of rows (end offset, value); returns its offset in pctab. */
static uint32_t pcvalues(struct tb *t, size_t pctab, const int32_t (*rows)[2], size_t n)
{
	uint32_t off = (uint32_t)(t->n - pctab);
	int32_t prev = -1, pc = 0;

	for (size_t i = 0; i < n; i++) {
		int32_t d = rows[i][1] - prev;
		putvar(t, ((uint32_t)d << 1) ^ (uint32_t)(d >> 31));
		putvar(t, (uint32_t)(rows[i][0] - pc));
		prev = rows[i][1];
		pc = rows[i][0];
	}
	putvar(t, 0);
	return off;
}

/*
 * Two functions at text 0x1000: main.outer [0x1000, 0x1040) in /src/a.go,
 * into which main.inner (/src/b.go) is inlined at a.go:11 (code at
 * [0x1010, 0x1018)), into which main.leaf is inlined at b.go:31 ([0x1018,
 * 0x1020), b.go:40); main.inner out of line at [0x1040, 0x1060), its code
 * (b.go:50) ending at 0x1058.  The inline tree follows the tables: the
 * handle is opened with gofunc = the table itself.
 */
static void synth(struct tb *t, int version)
{
	static const char names[] = "\0main.outer\0main.inner\0main.leaf";
	static const char files[] = "/src/a.go\0/src/b.go";
	static const int32_t o_file[][2] = { { 0x10, 0 }, { 0x20, 1 }, { 0x40, 0 } };
	static const int32_t o_line[][2] = { { 0x8, 10 },  { 0x10, 11 }, { 0x14, 30 },
					     { 0x18, 31 }, { 0x20, 40 }, { 0x40, 12 } };
	static const int32_t o_inl[][2] = { { 0x10, -1 }, { 0x18, 0 }, { 0x20, 1 }, { 0x40, -1 } };
	static const int32_t i_file[][2] = { { 0x20, 1 } };
	static const int32_t i_line[][2] = { { 0x18, 50 } };
	size_t fsz = version == 118 ? 40 : 44, pctab, pcln, f0, f1, tree;
	uint32_t of, ol, oi, inf, inl;

	memset(t, 0, sizeof(*t));
	put32(t, version == 118 ? 0xfffffff0u : 0xfffffff1u);
	put(t, "\0\0\1\10", 4);
	put64(t, 2);      /* nfunc */
	put64(t, 2);      /* nfiles */
	put64(t, 0x1000); /* textStart */
	for (int i = 0; i < 5; i++)
		put64(t, 0);
	set64(t, 8 + 3 * 8, t->n);
	put(t, names, sizeof(names));
	set64(t, 8 + 4 * 8, t->n);
	put32(t, 0);
	put32(t, 10);
	set64(t, 8 + 5 * 8, t->n);
	put(t, files, sizeof(files));
	pctab = t->n;
	set64(t, 8 + 6 * 8, pctab);
	put(t, "\0", 1); /* offset 0 means "no table" */
	of = pcvalues(t, pctab, o_file, 3);
	ol = pcvalues(t, pctab, o_line, 6);
	oi = pcvalues(t, pctab, o_inl, 4);
	inf = pcvalues(t, pctab, i_file, 1);
	inl = pcvalues(t, pctab, i_line, 1);
	while (t->n % 4)
		put(t, "\0", 1);
	pcln = t->n;
	set64(t, 8 + 7 * 8, pcln);
	f0 = 24;
	f1 = f0 + fsz + 3 * 4 + 4 * 4;
	put32(t, 0);
	put32(t, (uint32_t)f0);
	put32(t, 0x40);
	put32(t, (uint32_t)f1);
	put32(t, 0x60);
	put32(t, 0);
	/* main.outer: 3 PCDATA (the third the inline index), 4 FUNCDATA. */
	put32(t, 0);
	put32(t, 1);
	for (int i = 0; i < 2; i++)
		put32(t, 0);
	put32(t, 0);
	put32(t, of);
	put32(t, ol);
	put32(t, 3);
	put32(t, 0);
	if (version != 118)
		put32(t, 9);
	put32(t, 4u << 24);
	put32(t, 0);
	put32(t, 0);
	put32(t, oi);
	for (int i = 0; i < 3; i++)
		put32(t, 0xffffffffu);
	tree = t->n;
	put32(t, 0); /* the inline tree's offset, set below */
	/* main.inner: no PCDATA, no FUNCDATA. */
	assert_int_equal(t->n - pcln, f1);
	put32(t, 0x40);
	put32(t, 12);
	for (int i = 0; i < 2; i++)
		put32(t, 0);
	put32(t, 0);
	put32(t, inf);
	put32(t, inl);
	put32(t, 0);
	put32(t, 0);
	if (version != 118)
		put32(t, 49);
	put32(t, 0);
	set32(t, tree, (uint32_t)t->n);
	for (int i = 0; i < 2; i++) {
		uint32_t name = i ? 23 : 12, ppc = i ? 0x14 : 0x8;
		if (version == 118) {
			put32(t, (uint32_t)(i ? 0 : 0xffff)); /* parent, funcID, pad */
			put32(t, 1);                          /* file */
			put32(t, i ? 31 : 11);                /* line */
			put32(t, name);
			put32(t, ppc);
		} else {
			put32(t, 0);
			put32(t, name);
			put32(t, ppc);
			put32(t, i ? 39 : 29);
		}
	}
}

static void expect(struct sym_gopcln *g, uint64_t pc, const char *want)
{
	struct sym_frame f[SYM_MAX_FRAMES];
	char got[512] = "";
	size_t k, at = 0;

	assert_int_equal(sym_gopcln_lookup(g, pc, f, SYM_MAX_FRAMES, &k), 0);
	for (size_t j = 0; j < k; j++)
		at += (size_t)snprintf(got + at, sizeof(got) - at, "%s%s %s:%u%s", j ? " | " : "",
				       f[j].function ? f[j].function : "?",
				       f[j].file ? f[j].file : "?", f[j].line,
				       f[j].flags & SYM_FRAME_INLINED ? " (inlined)" : "");
	if (strcmp(got, want))
		fail_msg("0x%llx: want \"%s\", got \"%s\"", (unsigned long long)pc, want, got);
}

/* Both layouts, every kind of frame, the index, and every byte damaged. */
static void test_layouts(void **state)
{
	(void)state;
	for (int version = 118; version <= 120; version += 2) {
		struct sym_gopcln *g = NULL;
		struct err_msg msg;
		struct tb t;
		const char *dir = getenv("T_WRITE_SEEDS");

		synth(&t, version);
		if (dir) { /* tests/fuzz/corpus/fuzz_gopclntab/ */
			char path[600];
			FILE *f;
			snprintf(path, sizeof(path), "%s/synthetic_%d", dir, version);
			assert_non_null(f = fopen(path, "wb"));
			assert_int_equal(fwrite(t.b, 1, t.n, f), t.n);
			fclose(f);
		}
		err_clear(&msg);
		assert_int_equal(sym__gopcln_open_tables(t.b, t.n, 0, t.b, t.n, 0, &g, &msg), 0);
		assert_string_equal(sym_gopcln_layout(g), version == 118 ? "Go 1.18-1.19" : "Go 1.20+");
		expect(g, 0xfff, "");
		expect(g, 0x1000, "main.outer /src/a.go:10");
		expect(g, 0x100f, "main.outer /src/a.go:11");
		expect(g, 0x1012, "main.inner /src/b.go:30 (inlined) | main.outer /src/a.go:11");
		expect(g, 0x1019, "main.leaf /src/b.go:40 (inlined) | main.inner /src/b.go:31 (inlined) "
				  "| main.outer /src/a.go:11");
		expect(g, 0x103f, "main.outer /src/a.go:12");
		expect(g, 0x1040, "main.inner /src/b.go:50");
		expect(g, 0x1057, "main.inner /src/b.go:50");
		expect(g, 0x1058, ""); /* padding after the code */
		expect(g, 0x1060, "");
		/* A chain cut to two frames keeps the out-of-line function last. */
		struct sym_frame f[2];
		size_t k;
		assert_int_equal(sym_gopcln_lookup(g, 0x1019, f, 2, &k), 0);
		assert_int_equal(k, 2);
		assert_string_equal(f[1].function, "main.outer");
		/* The index answers the same at every byte. */
		struct buf out;
		struct sym_index *x = NULL;
		struct sym_frame a[SYM_MAX_FRAMES], b[SYM_MAX_FRAMES];
		size_t ka, kb;
		buf_init(&out, 1u << 20);
		assert_int_equal(sym_gopcln_index_buf(g, &out, NULL, &msg), 0);
		assert_int_equal(sym_index_open_mem(out.data, out.len, NULL, 0, &x, &msg), 0);
		for (uint64_t pc = 0xff0; pc < 0x1070; pc++) {
			assert_int_equal(sym_gopcln_lookup(g, pc, a, SYM_MAX_FRAMES, &ka), 0);
			assert_int_equal(sym_index_lookup(x, pc, b, SYM_MAX_FRAMES, &kb), 0);
			assert_int_equal(ka, kb);
			for (size_t j = 0; j < ka; j++) {
				assert_true(streq(a[j].function, b[j].function));
				assert_int_equal(a[j].line, b[j].line);
			}
		}
		sym_index_close(x);
		buf_release(&out);
		sym_gopcln_close(g);
		/* Every byte set to 0x00, 0x7f, 0xff in turn: a clean open or a clean error. */
		for (size_t i = 0; i < t.n; i++) {
			static const uint8_t vals[] = { 0x00, 0x7f, 0xff };
			for (size_t v = 0; v < sizeof(vals); v++) {
				struct tb d = t;
				d.b[i] = vals[v];
				g = NULL;
				int rc = sym__gopcln_open_tables(d.b, d.n, 0, d.b, d.n, 1u << 20, &g, NULL);
				assert_true(rc == 0 || rc == ERR_INVALID || rc == ERR_TOO_LARGE);
				if (!rc) {
					probe(g, 0xff0, 0x1070);
					for (uint64_t pc = 0xff0; pc < 0x1070; pc++)
						sym_gopcln_lookup(g, pc, a, SYM_MAX_FRAMES, &ka);
					sym_gopcln_close(g);
				}
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_addr2line),
		cmocka_unit_test(test_dwarf),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_build_engine),
		cmocka_unit_test(test_damaged),
	};
	int rc;

	t_mkdtemp();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	t_rmdir();
	return rc;
}
