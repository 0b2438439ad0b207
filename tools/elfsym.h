/*
 * elfsym.h - small but real ELF64 x86-64 symbol files for the synthetic
 * workload, and the realistic function names that go into them.
 *
 * Writer.  struct elfsym collects FUNC symbols and writes a file shaped
 * like a separate .debug file that still carries the executable's program
 * headers, so unhex can map profile file offsets to symbols:
 *
 *   ELF header      ET_DYN, EM_X86_64, ELFCLASS64, little-endian
 *   PT_LOAD  R      offset 0, vaddr 0: the headers and the build-ID note
 *   PT_LOAD  R+X    p_offset == p_vaddr == text_vaddr,
 *                   p_filesz == p_memsz == text_size (the mapping's range)
 *   PT_NOTE         the .note.gnu.build-id section
 *   sections        .note.gnu.build-id (NT_GNU_BUILD_ID, name "GNU"),
 *                   .text (SHT_NOBITS: no code, like a .debug file),
 *                   .symtab (one STT_FUNC/STB_GLOBAL per function,
 *                   st_shndx = .text), .strtab, .shstrtab
 *
 * Because p_offset == p_vaddr, a profile address (a file offset) is also
 * the symbol's virtual address.  The text segment's file range overlaps the
 * symbol tables' bytes; no code is stored, and no loader ever maps it.
 *
 * Names.  elfsym_name() derives a function name from the flavour of its
 * binary, a scope (the service name, for the service's own code) and the
 * function's ordinal within the binary.  The same inputs always give the
 * same name, different ordinals of one binary always give different names,
 * and C++ names are valid Itanium manglings (libiberty demangles them).
 *
 * Not thread-safe per writer; no global state.
 */
#ifndef UNHEX_TOOLS_ELFSYM_H
#define UNHEX_TOOLS_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct err_msg;

#define ELFSYM_NAME_MAX 256      /* bytes of a generated name, NUL included */
#define ELFSYM_MAX_SYMBOLS (8u * 1024 * 1024)
#define ELFSYM_MAX_BYTES (1u << 30) /* cap of the symbol and string tables */

struct elfsym {
	uint8_t build_id[64];
	size_t build_id_len;
	uint64_t text_vaddr, text_size;
	struct buf symtab; /* Elf64_Sym entries, the null symbol first */
	struct buf strtab; /* NUL first */
	size_t n_syms;     /* FUNC symbols added */
};

/*
 * Starts a file for the build ID `id` (borrowed, 1..64 bytes) whose code
 * segment spans [text_vaddr, text_vaddr + text_size); text_vaddr must be
 * page-aligned (it is also the segment's file offset) and at least one page.
 * ERR_INVALID for bad parameters.  Release with elfsym_release in all cases.
 */
int elfsym_init(struct elfsym *w, const uint8_t *id, size_t id_len, uint64_t text_vaddr,
		uint64_t text_size);
void elfsym_release(struct elfsym *w);

/*
 * Adds the function `name` (borrowed, copied) at [vaddr, vaddr + size),
 * which must lie inside the text segment: ERR_INVALID otherwise,
 * ERR_TOO_LARGE past ELFSYM_MAX_SYMBOLS or ELFSYM_MAX_BYTES.
 */
int elfsym_add(struct elfsym *w, const char *name, uint64_t vaddr, uint64_t size);

/* Appends the whole ELF file to `out` (its cap applies). */
int elfsym_write_buf(const struct elfsym *w, struct buf *out);

/* Writes the ELF file to `path` (created or truncated); ERR_IO with msg on failure. */
int elfsym_write_file(const struct elfsym *w, const char *path, struct err_msg *msg);

/* ---- names --------------------------------------------------------------- */

enum elfsym_flavor {
	ELFSYM_MAIN = 0,     /* the service's executable: C++ in <scope>::<module> */
	ELFSYM_LIBC,         /* glibc: plain C, ifunc variants, internals */
	ELFSYM_LIBSSL,       /* OpenSSL: SSL_, EVP_, BN_, ossl_ ... */
	ELFSYM_LIBSTDCXX,    /* libstdc++: std:: and __gnu_cxx:: C++ */
	ELFSYM_SERVICE_LIB,  /* the service's library: C++ in <scope>:: */
};

/*
 * Writes the name of function number `ordinal` of a binary of `flavor` into
 * `out` (`size` bytes, at least ELFSYM_NAME_MAX).  `scope` (borrowed) is the
 * service name for ELFSYM_MAIN and ELFSYM_SERVICE_LIB (anything not
 * [A-Za-z0-9_] becomes '_'), ignored otherwise.  Ordinal 0 of ELFSYM_MAIN is
 * "main".  Returns 0, or ERR_INVALID when `size` is too small.
 */
int elfsym_name(enum elfsym_flavor flavor, const char *scope, uint64_t ordinal, char *out,
		size_t size);

#endif
