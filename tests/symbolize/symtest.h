/*
 * symtest.h - fixtures shared by the symbolize tests: a temp dir, real
 * programs compiled there by gcc/g++/go, the addresses to probe (function
 * entries from nm or readelf, every instruction from objdump), and
 * llvm-symbolizer's answers as the reference.  Header-only: each test is one program.
 */
#ifndef UNHEX_TESTS_SYMTEST_H
#define UNHEX_TESTS_SYMTEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/symbolize.h"

#define T_MAX_FUNC 1024
#define T_MAX_FILE 1024

static char t_dir[256];

static inline void t_mkdtemp(void)
{
	strcpy(t_dir, "/tmp/unhex-sym-XXXXXX");
	if (!mkdtemp(t_dir)) {
		perror("mkdtemp");
		exit(1);
	}
}

static inline void t_rmdir(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", t_dir);
}

/* Runs the shell command `prefix` followed by `fmt` formatted; 0 on success. */
static inline int t_vrun(const char *prefix, const char *fmt, va_list ap)
{
	char cmd[4096];
	int n = snprintf(cmd, sizeof(cmd), "%s", prefix), rc;

	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	return rc;
}

static inline int t_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int t_run(const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = t_vrun("", fmt, ap);
	va_end(ap);
	return rc;
}

/* Whether a Go toolchain is on PATH: the Go tests skip without one. */
static inline int t_have_go(void)
{
	return system("command -v go >/dev/null 2>&1") == 0;
}

/*
 * Runs `go build <args>` in t_dir, its arguments formatted from `fmt`, with
 * HOME, the build cache and GOPATH inside t_dir and modules off (the test
 * programs use the standard library only); 0 on success.
 */
static inline int t_go_build(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int t_go_build(const char *fmt, ...)
{
	char pre[1280];
	va_list ap;
	int rc;

	snprintf(pre, sizeof(pre), "cd '%s' && HOME='%s' GOCACHE='%s/gocache' GOPATH='%s/gopath' "
		 "GO111MODULE=off go build ", t_dir, t_dir, t_dir, t_dir);
	va_start(ap, fmt);
	rc = t_vrun(pre, fmt, ap);
	va_end(ap);
	return rc;
}

static inline void t_write(const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", t_dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* "<dir>/<name>" in a static ring of buffers. */
static inline const char *t_path(const char *name)
{
	static char ring[8][512];
	static int k;
	char *p = ring[k++ % 8];
	snprintf(p, 512, "%s/%s", t_dir, name);
	return p;
}

static int u64_sort(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The hex addresses `cmd` prints, one a line, without 0; sorted, unique,
 * malloc'd.
 */
static inline size_t t_popen_addresses(const char *cmd, uint64_t **out)
{
	char line[1024];
	size_t n = 0, cap = 1024;
	uint64_t *v = malloc(cap * sizeof(*v));

	FILE *p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		v[n++] = strtoull(line, NULL, 16);
	}
	if (p)
		pclose(p);
	qsort(v, n, sizeof(*v), u64_sort);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] && (k == 0 || v[k - 1] != v[i]))
			v[k++] = v[i];
	*out = v;
	return k;
}

/*
 * Addresses to probe in `bin`: every FUNC symbol in .text (nm) and every
 * instruction objdump disassembles in .text; sorted, unique, malloc'd.
 */
static inline size_t t_addresses(const char *bin, uint64_t **out)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "(nm --defined-only '%s' | awk '$2==\"T\"||$2==\"t\"{print $1}';"
		 " objdump -d -j .text --no-show-raw-insn '%s' |"
		 " sed -n 's/^ *\\([0-9a-f]\\+\\):\\t.*/\\1/p') 2>/dev/null", bin, bin);
	return t_popen_addresses(cmd, out);
}

/*
 * Every defined FUNC symbol's address in `bin` (readelf -s: .symtab and
 * .dynsym, local, global and weak, so template instances and lambdas too);
 * sorted, unique, malloc'd.  Never thinned: each one is a probe.
 */
static inline size_t t_func_addresses(const char *bin, uint64_t **out)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "readelf -sW '%s' 2>/dev/null | awk '$4==\"FUNC\" && $7!=\"UND\" {print $2}'",
		 bin);
	return t_popen_addresses(cmd, out);
}

/*
 * The probes of every FUNC symbol of `bin` in both roles: its address (a
 * leaf, the sampled PC) and its address - 1 (where a return address would
 * be looked up: padding or the end of the previous function).  Sets *nf to
 * the number of symbols; returns the number of probes (2 * *nf), malloc'd.
 */
static inline size_t t_func_probes(const char *bin, uint64_t **out, size_t *nf)
{
	uint64_t *fa;
	size_t k = t_func_addresses(bin, &fa), n = 0;
	uint64_t *a = malloc(2 * k * sizeof(*a) + 1);

	if (!a) {
		perror("malloc");
		exit(1);
	}
	for (size_t i = 0; i < k; i++) {
		a[n++] = fa[i];
		a[n++] = fa[i] - 1;
	}
	free(fa);
	*out = a;
	*nf = k;
	return n;
}

struct t_frame {
	char *func; /* owned; "" when unknown */
	char *file; /* owned; "" when unknown */
	unsigned line, col;
};

struct t_result {
	size_t n;
	struct t_frame f[SYM_MAX_FRAMES];
};

/*
 * Runs llvm-symbolizer (LLVM output style) on `bin` for every address and
 * parses its answers: pairs of "function\nfile:line:col" lines, a blank
 * line between addresses.  "??" names and files become empty strings; an
 * answer of one frame with neither is zero frames.
 */
static inline struct t_result *t_llvm(const char *bin, const uint64_t *a, size_t n)
{
	char cmd[2048];
	static char l1[1 << 16], l2[1 << 16];
	const char *in = t_path("addrs.txt");
	FILE *f = fopen(in, "w");

	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%" PRIx64 "\n", a[i]);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "llvm-symbolizer --obj='%s' --inlining --demangle --functions=linkage"
		 " --output-style=LLVM < '%s'", bin, in);
	FILE *p = popen(cmd, "r");
	struct t_result *r = calloc(n, sizeof(*r));
	size_t i = 0;
	while (p && i < n && fgets(l1, sizeof(l1), p)) {
		l1[strcspn(l1, "\n")] = 0;
		if (!l1[0]) {
			i++;
			continue;
		}
		if (!fgets(l2, sizeof(l2), p))
			break;
		l2[strcspn(l2, "\n")] = 0;
		struct t_result *res = &r[i];
		if (res->n == SYM_MAX_FRAMES)
			continue;
		struct t_frame *fr = &res->f[res->n++];
		fr->func = strdup(strcmp(l1, "??") ? l1 : "");
		/* file:line:col, the file may itself contain ':' */
		char *c2 = strrchr(l2, ':');
		char *c1 = c2 ? (*c2 = 0, strrchr(l2, ':')) : NULL;
		if (c1) {
			*c1 = 0;
			fr->line = (unsigned)atoi(c1 + 1);
			fr->col = (unsigned)atoi(c2 + 1);
		}
		fr->file = strdup(strcmp(l2, "??") ? l2 : "");
	}
	if (p)
		pclose(p);
	for (size_t k = 0; k < n; k++)
		if (r[k].n == 1 && !r[k].f[0].func[0] && !r[k].f[0].file[0]) {
			free(r[k].f[0].func);
			free(r[k].f[0].file);
			r[k].n = 0;
		}
	return r;
}

/*
 * LLVM 14 leaves some GCC 12 manglings raw (std::swap<enable_if...>,
 * std::make_shared).  Those reference names are demangled with c++filt
 * (binutils) so the test still checks which linkage name we picked.
 */
static inline void t_cxxfilt_raw(struct t_result *r, size_t n)
{
	const char *in = t_path("raw.txt"), *out = t_path("filt.txt");
	FILE *f = fopen(in, "w");
	size_t k = 0;
	static char line[1 << 16];

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < r[i].n; j++)
			if (!strncmp(r[i].f[j].func, "_Z", 2)) {
				fprintf(f, "%s\n", r[i].f[j].func);
				k++;
			}
	fclose(f);
	if (!k || t_run("c++filt < '%s' > '%s'", in, out) != 0)
		return;
	f = fopen(out, "r");
	for (size_t i = 0; i < n && f; i++)
		for (size_t j = 0; j < r[i].n; j++)
			if (!strncmp(r[i].f[j].func, "_Z", 2) && fgets(line, sizeof(line), f)) {
				line[strcspn(line, "\n")] = 0;
				free(r[i].f[j].func);
				r[i].f[j].func = strdup(line);
			}
	if (f)
		fclose(f);
}

static inline void t_free_results(struct t_result *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < r[i].n; j++) {
			free(r[i].f[j].func);
			free(r[i].f[j].file);
		}
	free(r);
}

static inline const char *t_base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : (path ? path : "");
}

/*
 * Function-name normalization for comparing with LLVM 14 (documented in
 * the report).  Exact: whitespace dropped ("> >" vs ">>") and clone
 * suffixes removed (" [clone .constprop.0]" from libiberty, " (.constprop.0)"
 * from llvm's symtab names).  Loose, for C++: also template arguments,
 * parameters, lambda and anonymous-scope spellings and all but the last
 * scope component removed, because LLVM 14 prints DW_AT_name where the
 * linkage name is reached through abstract_origin -> specification, spells
 * lambdas 'lambda'(...) where libiberty says {lambda(...)#1}, and leaves
 * some GCC manglings undemangled.
 */
static inline void t_norm(const char *in, char *out, size_t cap)
{
	size_t k = 0;
	for (const char *s = in; s && *s && k + 1 < cap; s++) {
		if (!strncmp(s, " [clone ", 8) || !strncmp(s, " (.", 3))
			break;
		if (*s != ' ')
			out[k++] = *s;
	}
	out[k] = 0;
	/* llvm replaces the outermost DWARF name by the symbol's: "main.cold", "f.abi0" */
	static const char *sfx[] = { ".cold", ".abi0" };
	for (size_t i = 0; i < 2; i++) {
		size_t l = strlen(sfx[i]);
		if (k > l && !strcmp(out + k - l, sfx[i]))
			out[k - l] = 0;
	}
}

static inline void t_norm_loose(const char *in, char *out, size_t cap)
{
	static const char *ops[][2] = {
		{ "operator()", "operator@call" }, { "operator<<", "operator@shl" },
		{ "operator>>", "operator@shr" }, { "operator<=", "operator@le" },
		{ "operator>=", "operator@ge" }, { "operator->", "operator@arrow" },
		{ "operator<", "operator@lt" }, { "operator>", "operator@gt" },
	};
	char tmp[1 << 14];
	size_t k = 0;
	int depth = 0, inq = 0;

	t_norm(in, tmp, sizeof(tmp));
	if (tmp[0] == '_' && tmp[1] == 'Z') { /* left mangled by one side */
		snprintf(out, cap, "%s", "<mangled>");
		return;
	}
	for (const char *s = tmp; *s && k + 16 < cap;) {
		int matched = 0;
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && !depth; i++) {
			size_t l = strlen(ops[i][0]);
			if (!strncmp(s, ops[i][0], l)) {
				k += (size_t)snprintf(out + k, cap - k, "%s", ops[i][1]);
				s += l;
				matched = 1;
				break;
			}
		}
		if (matched)
			continue;
		char c = *s++;
		if (c == '\'') {
			inq = !inq;
			continue;
		}
		if (inq)
			continue;
		if (c == '<' || c == '(' || c == '{') {
			depth++;
			continue;
		}
		if (c == '>' || c == ')' || c == '}') {
			if (depth > 0)
				depth--;
			continue;
		}
		if (!depth)
			out[k++] = c;
	}
	out[k] = 0;
	/* last scope component, without a trailing "const" */
	char *last = out, *p;
	while ((p = strstr(last, "::")) != NULL && p[2])
		last = p + 2;
	memmove(out, last, strlen(last) + 1);
	size_t l = strlen(out);
	if (l > 5 && !strcmp(out + l - 5, "const"))
		out[l - 5] = 0;
}

struct t_stats {
	size_t addrs, frames, exact_name_diff, name_diff, file_diff, line_diff, col_diff, depth_diff;
};

/* Compares our frames with the reference; prints the first differences. */
static inline void t_compare(uint64_t a, const struct sym_frame *f, size_t n,
		      const struct t_result *ref, struct t_stats *st, int verbose, int loose)
{
	static char x[1 << 14], y[1 << 14];

	st->addrs++;
	if (n != ref->n) {
		st->depth_diff++;
		if (verbose && st->depth_diff <= 10) {
			fprintf(stderr, "0x%" PRIx64 ": depth %zu, llvm %zu\n", a, n, ref->n);
			for (size_t i = 0; i < n; i++)
				fprintf(stderr, "   ours %s %s:%u\n", f[i].function ? f[i].function : "??",
					t_base(f[i].file), f[i].line);
			for (size_t i = 0; i < ref->n; i++)
				fprintf(stderr, "   llvm %s %s:%u\n", ref->f[i].func,
					t_base(ref->f[i].file), ref->f[i].line);
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct t_frame *r = &ref->f[i];
		st->frames++;
		t_norm(f[i].function, x, sizeof(x));
		t_norm(r->func, y, sizeof(y));
		if (strcmp(x, y))
			st->exact_name_diff++;
		if (loose) {
			t_norm_loose(f[i].function, x, sizeof(x));
			t_norm_loose(r->func, y, sizeof(y));
		}
		if (strcmp(x, y)) {
			if (verbose && st->name_diff < 60)
				fprintf(stderr, "0x%" PRIx64 " #%zu: name '%s' vs llvm '%s'\n", a, i,
					f[i].function ? f[i].function : "", r->func);
			st->name_diff++;
		}
		/* llvm names a symtab-only frame's file from STT_FILE, with line 0 */
		int file_unknown = !f[i].file && r->line == 0;
		if (!file_unknown && strcmp(t_base(f[i].file), t_base(r->file))) {
			if (verbose && st->file_diff < 10)
				fprintf(stderr, "0x%" PRIx64 " #%zu: file '%s' vs llvm '%s'\n", a, i,
					f[i].file ? f[i].file : "", r->file);
			st->file_diff++;
		}
		if (f[i].line != r->line) {
			if (verbose && st->line_diff < 10)
				fprintf(stderr, "0x%" PRIx64 " #%zu: line %u vs llvm %u\n", a, i,
					f[i].line, r->line);
			st->line_diff++;
		}
		if (f[i].column != r->col)
			st->col_diff++;
	}
}

/*
 * Both sides know nothing at the address: we give no frame, llvm only its
 * nearest-symbol guess (a symbol name, no file, line 0), as it does past
 * the end of .plt.got or in a gap between sections.
 */
static inline int t_nothing_known(const struct sym_frame *f, size_t n,
				  const struct t_result *ref)
{
	(void)f;
	return n == 0 && ref->n == 1 && ref->f[0].line == 0 && !ref->f[0].file[0];
}

static inline void t_print_stats(const char *what, const struct t_stats *st)
{
	fprintf(stderr,
		"%s: %zu addresses, %zu frames; differences: depth %zu, exact name %zu, "
		"compared name %zu, file %zu, line %zu, column %zu\n",
		what, st->addrs, st->frames, st->depth_diff, st->exact_name_diff,
		st->name_diff, st->file_diff,
		st->line_diff, st->col_diff);
}

#endif
