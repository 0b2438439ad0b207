/*
 * sym_compare.c - checks a pprof exported by the server against
 * llvm-symbolizer, for the integration tests (tests/integration/sym_*.sh).
 *
 *   sym_compare PPROF BUILD_ID=UNSTRIPPED[:loose|:rust]...
 *
 * For every location of a mapping with one of the build IDs, in each role
 * it has in the samples, computes the ELF virtual address with the rule of
 * docs/symbolization.md (the executable PT_LOAD of the unstripped binary;
 * minus 1 for a return address), asks `llvm-symbolizer --inlining` on the
 * unstripped binary, and compares the whole inline chain: names (normalized as the
 * phase-1 tests do; `loose` for C++), file basenames and lines.  A location
 * without lines counts as a failure.  Exit 0 only when everything matches.
 *
 * The roles: the sample's first location is the sampled PC.  So is the
 * first user-space location below kernel frames (a sample taken in the
 * kernel during an interrupt, fault or system call): perf and eBPF agents
 * report there the PC the kernel was entered from, not a return address.
 * Every other location is a return address.  A kernel frame is one whose
 * mapping is named "[kernel..." / "[vmlinux..." or whose address is in the
 * upper half of the address space.
 *
 * `rust` is `loose` after a Rust normalization of both sides: LLVM 14 reads
 * legacy Rust symbols as Itanium names and leaves the hash and the `$LT$`
 * escapes (core::num::_$LT$impl$u20$u64$GT$::rotate_left::h0123...), where
 * libiberty's Rust demangler gives core::num::<impl u64>::rotate_left.  So
 * the escapes are decoded and a trailing `::h<16 hex>` is dropped.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "profile.pb-c.h"
#include "symbolize/symbolize.h"
#include "symtest.h"

#define MAX_BINS 16

/*
 * Decodes legacy Rust escapes and drops llvm's " (.llvm.N)" clone suffix and
 * the `::h<16 hex>` hash, in place.
 */
static void rust_norm(char *s)
{
	static const char *esc[][2] = {
		{ "$LT$", "<" }, { "$GT$", ">" }, { "$RF$", "&" }, { "$BP$", "*" },
		{ "$SP$", "@" }, { "$C$", "," }, { "$LP$", "(" }, { "$RP$", ")" },
		{ "$u20$", " " }, { "$u27$", "'" }, { "$u5b$", "[" }, { "$u5d$", "]" },
		{ "$u7b$", "{" }, { "$u7d$", "}" }, { "$u7e$", "~" }, { "$u22$", "\"" },
		{ "$u2b$", "+" }, { "$u3b$", ";" }, { "$u21$", "!" }, { "$u3d$", "=" },
	};
	char *w = s;
	for (const char *r = s; *r;) {
		size_t i, l = 0;
		if (r[0] == '.' && r[1] == '.') { /* ".." is "::" */
			*w++ = ':';
			*w++ = ':';
			r += 2;
			continue;
		}
		if (r[0] == '_' && r[1] == '$' && (r == s || r[-1] == ':'))
			r++; /* "_$LT$" at a component start */
		for (i = 0; i < sizeof(esc) / sizeof(esc[0]); i++) {
			l = strlen(esc[i][0]);
			if (!strncmp(r, esc[i][0], l))
				break;
		}
		if (i < sizeof(esc) / sizeof(esc[0])) {
			*w++ = esc[i][1][0];
			r += l;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	w = strstr(s, " (."); /* llvm's symtab clone suffix: " (.llvm.123)" */
	if (w)
		*w = '\0';
	size_t n = strlen(s);
	if (n > 19 && !strncmp(s + n - 19, "::h", 3) &&
	    strspn(s + n - 16, "0123456789abcdef") == 16)
		s[n - 19] = '\0';
}

struct bin {
	char id[2 * SYM_BUILD_ID_MAX + 1];
	const char *path;
	int loose;
	int rust;
	struct sym_segment text;
	uint64_t *addrs;
	const Perftools__Profiles__Location **locs;
	size_t n, cap;
	size_t unsymbolized;
};


/* The location of id `id` and its mapping (either may be NULL). */
static const Perftools__Profiles__Location *
find_loc(const Perftools__Profiles__Profile *p, uint64_t id,
	 const Perftools__Profiles__Mapping **m)
{
	const Perftools__Profiles__Location *l = NULL;

	*m = NULL;
	for (size_t j = 0; j < p->n_location && !l; j++)
		if (p->location[j]->id == id)
			l = p->location[j];
	for (size_t j = 0; l && j < p->n_mapping && !*m; j++)
		if (p->mapping[j]->id == l->mapping_id)
			*m = p->mapping[j];
	return l;
}

/* Whether location `id` is a kernel frame (see the header comment). */
static int is_kernel(const Perftools__Profiles__Profile *p, uint64_t id)
{
	const Perftools__Profiles__Mapping *m;
	const Perftools__Profiles__Location *l = find_loc(p, id, &m);
	const char *name = NULL;

	if (!l)
		return 0;
	if (l->address >= (UINT64_C(1) << 63))
		return 1;
	if (m && m->filename > 0 && (size_t)m->filename < p->n_string_table)
		name = p->string_table[m->filename];
	return name && (!strncmp(name, "[kernel", 7) || !strncmp(name, "[vmlinux", 8));
}

static void add(struct bin *b, uint64_t vaddr, const Perftools__Profiles__Location *l)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->addrs[i] == vaddr && b->locs[i] == l)
			return;
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 256;
		b->addrs = realloc(b->addrs, b->cap * sizeof(*b->addrs));
		b->locs = realloc(b->locs, b->cap * sizeof(*b->locs));
	}
	b->addrs[b->n] = vaddr;
	b->locs[b->n++] = l;
}

int main(int argc, char **argv)
{
	struct bin bins[MAX_BINS];
	size_t nb = 0, total = 0, bad = 0;
	struct buf raw, pb;
	Perftools__Profiles__Profile *p;

	if (argc < 3) {
		fprintf(stderr, "usage: sym_compare PPROF BUILD_ID=UNSTRIPPED[:loose]...\n");
		return 2;
	}
	memset(bins, 0, sizeof(bins));
	for (int i = 2; i < argc && nb < MAX_BINS; i++) {
		char *eq = strchr(argv[i], '='), *colon;
		struct sym_elf_info info;
		struct bin *b = &bins[nb];

		if (!eq)
			return 2;
		*eq = '\0';
		snprintf(b->id, sizeof(b->id), "%s", argv[i]);
		b->path = eq + 1;
		colon = strrchr(eq + 1, ':');
		if (colon && strcmp(colon, ":loose") == 0) {
			*colon = '\0';
			b->loose = 1;
		} else if (colon && strcmp(colon, ":rust") == 0) {
			*colon = '\0';
			b->loose = b->rust = 1;
		}
		if (sym_elf_inspect_file(b->path, &info, NULL))
			return 2;
		for (size_t s = 0; s < info.n_segments; s++)
			if (info.segments[s].flags & 1)
				b->text = info.segments[s];
		nb++;
	}
	buf_init(&raw, 1u << 30);
	buf_init(&pb, 1u << 30);
	if (buf_read_file(&raw, argv[1]) || gunzip_capped(raw.data, raw.len, 1u << 30, &pb, NULL)) {
		fprintf(stderr, "sym_compare: cannot read %s\n", argv[1]);
		return 2;
	}
	p = perftools__profiles__profile__unpack(NULL, pb.len, (const uint8_t *)pb.data);
	if (!p) {
		fprintf(stderr, "sym_compare: %s is not a pprof\n", argv[1]);
		return 2;
	}
	/* Every (location, role) of the samples, per binary. */
	for (size_t s = 0; s < p->n_sample; s++)
		for (size_t k = 0; k < p->sample[s]->n_location_id; k++) {
			uint64_t id = p->sample[s]->location_id[k];
			const Perftools__Profiles__Mapping *m;
			const Perftools__Profiles__Location *l = find_loc(p, id, &m);
			int ret = k > 0 && !is_kernel(p, p->sample[s]->location_id[k - 1]);

			if (!l || !m || m->build_id <= 0 || (size_t)m->build_id >= p->n_string_table)
				continue;
			for (size_t b = 0; b < nb; b++) {
				uint64_t off;

				if (strcmp(bins[b].id, p->string_table[m->build_id]))
					continue;
				off = l->address - m->memory_start + m->file_offset;
				add(&bins[b], off - bins[b].text.offset + bins[b].text.vaddr -
						      (ret ? 1 : 0), l);
			}
		}
	for (size_t b = 0; b < nb; b++) {
		struct bin *bn = &bins[b];
		struct t_stats st;
		struct t_result *ref;

		if (!bn->n) {
			fprintf(stderr, "%s: no location of %s in the profile\n", bn->path, bn->id);
			bad++;
			continue;
		}
		t_mkdtemp();
		ref = t_llvm(bn->path, bn->addrs, bn->n);
		t_cxxfilt_raw(ref, bn->n);
		for (size_t i = 0; bn->rust && i < bn->n; i++)
			for (size_t j = 0; j < ref[i].n; j++)
				rust_norm(ref[i].f[j].func);
		memset(&st, 0, sizeof(st));
		for (size_t i = 0; i < bn->n; i++) {
			const Perftools__Profiles__Location *l = bn->locs[i];
			struct sym_frame f[SYM_MAX_FRAMES];
			static char rnames[SYM_MAX_FRAMES][1 << 12];
			size_t nf = 0;

			if (!l->n_line) {
				/* Fine only where the debug info knows nothing either:
				 * llvm's nearest-symbol guess (line 0) in a PLT is not
				 * knowledge. */
				if (ref[i].n && !(ref[i].n == 1 && ref[i].f[0].line == 0)) {
					fprintf(stderr, "0x%" PRIx64 ": no names, llvm says %s\n",
						bn->addrs[i], ref[i].f[0].func);
					bn->unsymbolized++;
				}
				continue;
			}
			for (size_t j = 0; j < l->n_line && nf < SYM_MAX_FRAMES; j++) {
				const Perftools__Profiles__Function *fn = NULL;

				for (size_t q = 0; q < p->n_function && !fn; q++)
					if (p->function[q]->id == l->line[j]->function_id)
						fn = p->function[q];
				memset(&f[nf], 0, sizeof(f[nf]));
				if (fn) {
					f[nf].function = p->string_table[fn->name];
					f[nf].file = fn->filename ? p->string_table[fn->filename] : NULL;
				}
				if (bn->rust && f[nf].function) {
					snprintf(rnames[nf], sizeof(rnames[nf]), "%s", f[nf].function);
					rust_norm(rnames[nf]);
					f[nf].function = rnames[nf];
				}
				f[nf].line = (uint32_t)l->line[j]->line;
				f[nf].column = (uint32_t)l->line[j]->column;
				nf++;
			}
			t_compare(bn->addrs[i], f, nf, &ref[i], &st, 1, bn->loose);
		}
		t_print_stats(bn->path, &st);
		fprintf(stderr, "%s: %zu locations, %zu without names\n", bn->path, bn->n,
			bn->unsymbolized);
		total += bn->n;
		if (st.depth_diff || st.name_diff || st.file_diff || st.line_diff || bn->unsymbolized)
			bad++;
		t_free_results(ref, bn->n);
		t_rmdir();
		free(bn->addrs);
		free(bn->locs);
	}
	perftools__profiles__profile__free_unpacked(p, NULL);
	buf_release(&raw);
	buf_release(&pb);
	printf("sym_compare: %zu locations compared, %zu binaries with differences\n", total, bad);
	return bad || !total ? 1 : 0;
}
