/*
 * plt.c - names for PLT stubs, "memcmp@plt" as perf and objdump print them,
 * from what a stripped executable keeps: the section headers of .plt and
 * .plt.sec, the jump-slot relocations of .rela.plt and the dynamic symbols
 * they name.
 *
 * The linkers (GNU ld, gold, lld) write one PLT entry per .rela.plt
 * relocation, in the same order: entry i of .plt.sec (IBT/-fcf-protection
 * PLTs, where .plt keeps the lazy-binding stubs) or, without .plt.sec, the
 * entry after .plt's header.  perf (dso__synthesize_plt_symbols) relies on
 * the same order.  Entry and header sizes are per architecture; only
 * x86-64 (16-byte entries, a 16-byte header) and AArch64 (16-byte entries,
 * a 32-byte header) are known, other machines get no PLT names.
 */
#include <string.h>

#include "base/err.h"
#include "symbolize_int.h"

#define MAX_PLT_ENTRIES (1u << 20)

struct plt_layout {
	uint64_t entry, header; /* bytes of one entry; of .plt's header */
	uint32_t jump_slot;     /* the relocation type of a PLT slot */
};

static int layout_of(int machine, struct plt_layout *out)
{
	switch (machine) {
	case EM_X86_64:
		*out = (struct plt_layout){ 16, 16, R_X86_64_JUMP_SLOT };
		return 0;
	case EM_AARCH64:
		*out = (struct plt_layout){ 16, 32, R_AARCH64_JUMP_SLOT };
		return 0;
	default:
		return ERR_NOT_FOUND;
	}
}

struct plt_secs {
	GElf_Shdr plt, plt_sec, rela;
	int have_plt, have_plt_sec, have_rela;
	Elf_Scn *rela_scn;
};

static void find_sections(Elf *elf, struct plt_secs *p)
{
	size_t shstrndx;

	memset(p, 0, sizeof(*p));
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".plt") && (sh.sh_flags & SHF_EXECINSTR)) {
			p->plt = sh;
			p->have_plt = 1;
		} else if (!strcmp(name, ".plt.sec") && (sh.sh_flags & SHF_EXECINSTR)) {
			p->plt_sec = sh;
			p->have_plt_sec = 1;
		} else if (!strcmp(name, ".rela.plt") && sh.sh_type == SHT_RELA &&
			   sh.sh_entsize) {
			p->rela = sh;
			p->rela_scn = scn;
			p->have_rela = 1;
		}
	}
}

int sym__plt_each(Elf *elf, sym__plt_fn fn, void *ctx)
{
	struct plt_layout lay;
	struct plt_secs p;
	GElf_Ehdr eh;
	Elf_Data *rel, *syms;
	Elf_Scn *symscn;
	GElf_Shdr symsh;
	uint64_t base, end;

	if (!gelf_getehdr(elf, &eh) || layout_of(eh.e_machine, &lay))
		return 0;
	find_sections(elf, &p);
	/* A .debug file keeps the headers with SHT_NOBITS: no relocations. */
	if (!p.have_rela || p.rela.sh_type == SHT_NOBITS || (!p.have_plt && !p.have_plt_sec))
		return 0;
	if (p.have_plt_sec) {
		base = p.plt_sec.sh_addr;
		end = base + p.plt_sec.sh_size;
	} else {
		base = p.plt.sh_addr + lay.header;
		end = p.plt.sh_addr + p.plt.sh_size;
	}
	if (end < base || !(rel = elf_getdata(p.rela_scn, NULL)) ||
	    !(symscn = elf_getscn(elf, p.rela.sh_link)) || !gelf_getshdr(symscn, &symsh) ||
	    symsh.sh_type == SHT_NOBITS || !symsh.sh_entsize || !(syms = elf_getdata(symscn, NULL)))
		return 0;
	size_t n = rel->d_size / p.rela.sh_entsize;
	for (size_t i = 0; i < n && i < MAX_PLT_ENTRIES; i++) {
		uint64_t lo = base + (uint64_t)i * lay.entry;
		GElf_Rela r;
		GElf_Sym s;
		const char *name;
		int rc;

		if (lo + lay.entry > end || lo < base)
			break;
		if (!gelf_getrela(rel, (int)i, &r))
			break;
		/* Other slots (IRELATIVE) take an entry too, but name nothing. */
		if (GELF_R_TYPE(r.r_info) != lay.jump_slot ||
		    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &s) ||
		    !(name = elf_strptr(elf, symsh.sh_link, s.st_name)) || !name[0])
			continue;
		if ((rc = fn(ctx, lo, lo + lay.entry, name)))
			return rc;
	}
	return 0;
}
