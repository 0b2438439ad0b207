/*
 * symbolize_int.h - internals of the symbolize module, shared by its files
 * and its tests: the in-memory resolver tables and the on-disk index format.
 *
 * ==== Resolver tables (struct sym_dwarf) ====
 *
 * Built lazily, two levels, after the recipe in shared/notes/symbolization.md:
 *
 *   cu_spans    every address range of every compile unit (DW_AT_ranges or
 *               low/high_pc via dwarf_ranges), sorted; built on open.  We never
 *               rely on .debug_aranges (Go and clang do not emit it).
 *   cu->funcs   on the first lookup in a CU: every DW_TAG_subprogram with
 *               code, found by a DFS of the whole CU (GCC nests lambda
 *               operator() bodies inside other functions' DIEs).
 *   fn->nodes   on the first lookup in a function: its tree of
 *               DW_TAG_inlined_subroutine, each with the ranges of its
 *               children sorted, and the call_file/line/column of each.
 *   symtab      FUNC symbols of .symtab and .dynsym, sorted: the fallback for
 *               addresses without a DWARF function.
 *
 * Every table is a sorted array of struct sym__span, looked up with
 * sym__span_find(): the last span starting at or before the address that
 * still contains it (overlaps are resolved by a bounded backward scan using
 * the running maximum of span ends).  The answer of a lookup is therefore
 * constant between any two consecutive span boundaries or line-table rows;
 * the index writer relies on this to flatten the tables into ranges.
 *
 * The walks behind cu->funcs and fn->nodes scan a unit's DIE bytes
 * linearly with a per-unit abbreviation cache (cu->scan, dwarf.c), falling
 * back to dwarf_child/dwarf_siblingof when the scan meets anything unknown;
 * on well-formed DWARF both visit the same DIEs in the same order
 * (tests/symbolize/test_dwarf_scan.c builds both ways, with
 * SYM_DWARF_LIBDW_WALK, and compares the tables and the index bytes).
 *
 * All strings handed out (names, paths) are interned in one base/intern.h
 * table, so equal strings are equal pointers for the lifetime of the
 * handle; its arena and index count against the handle's budget.
 *
 * Memory: the tables of a handle (and the index writer's) grow with
 * SYM__GROW through one struct grow_budget of max_memory bytes and are
 * freed through it, so the budget bounds what the handle holds at once;
 * scratch freed after a build (an inline tree's spans) is refunded.
 *
 * ==== Index file format, version 2 ====
 *
 * Version 2 has the layout of version 1 and names PLT stubs ("sym@plt"):
 * a version-1 file is refused as corrupt, and debuginfo/ rebuilds it.
 *
 * All integers little-endian.  Sections are 4-byte aligned and follow the
 * header in this order; every offset is from the start of the file.
 *
 * Header (128 bytes):
 *   off  size  field
 *     0     8  magic "UNHXSYMI"
 *     8     4  version (2)
 *    12     4  header size (128)
 *    16     8  base: ELF virtual address that range starts are relative to
 *    24     4  n_ranges
 *    28     4  n_locs
 *    32     4  strtab size in bytes
 *    36     4  build ID length (0..64)
 *    40    64  build ID, zero padded
 *   104     4  offset of range starts   (n_ranges * 4 bytes)
 *   108     4  offset of range locs     (n_ranges * 4 bytes)
 *   112     4  offset of locations      (n_locs * 24 bytes)
 *   116     4  offset of strtab         (strtab size bytes)
 *   120     4  file size
 *   124     4  CRC-32 (zlib) of bytes [0, 124) followed by bytes [128, file size)
 *
 * Range starts: u32 (address - base), strictly increasing.  Range i covers
 * [start[i], start[i+1]); the last range extends to the end of the address
 * space, so the writer always ends with a range whose loc is NONE.
 *
 * Range locs: u32 index of the innermost location of range i, or NONE
 * (0xffffffff) when nothing is known there.
 *
 * Location (24 bytes):
 *     0  4  function: strtab offset of the demangled name, or NONE
 *     4  4  file: strtab offset of the path, or NONE
 *     8  4  line
 *    12  4  column
 *    16  4  parent: index of the location this one was inlined into (its
 *           call site), or NONE.  Always smaller than the location's own
 *           index, so every chain ends.
 *    20  4  flags (enum sym_frame_flags)
 *
 * Strtab: NUL-terminated strings.  Its last byte is NUL, so any offset
 * below its size names a terminated string inside it.
 *
 * The reader checks all of this on open (O(file size)) and answers lookups
 * without further checks.
 */
#ifndef UNHEX_SYMBOLIZE_SYMBOLIZE_INT_H
#define UNHEX_SYMBOLIZE_SYMBOLIZE_INT_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#include "base/grow.h"
#include "base/hmap.h"
#include "base/intern.h"
#include "symbolize/symbolize.h"

#define SYM_NONE 0xffffffffu
#define SYM_INDEX_MAGIC "UNHXSYMI"
#define SYM_INDEX_VERSION SYM_INDEX_FORMAT_VERSION
#define SYM_INDEX_HEADER 128u
#define SYM_INDEX_LOC_SIZE 24u

#define SYM__MAX_DIE_DEPTH 256   /* DIE nesting we follow; deeper is ignored */
#define SYM__MAX_NAME 65536      /* longer names are not demangled */
/* Items of any one table: span idx, node and location indexes are u32. */
#define SYM__MAX_ITEMS ((size_t)UINT32_MAX - 1)

struct sym__span {
	uint64_t lo, hi;  /* [lo, hi) */
	uint64_t maxhi;   /* max hi of this span and all before it */
	uint32_t idx;     /* what the span maps to (table-specific) */
};

/* Sorts spans by lo and fills maxhi. */
void sym__spans_sort(struct sym__span *s, size_t n);
/* See the header comment; NULL if no span contains pc. */
const struct sym__span *sym__span_find(const struct sym__span *s, size_t n,
				       uint64_t pc);

/*
 * A map from pointer keys (never NULL) to pointer values: a base/hmap.h
 * index over an array of pairs, both grown through `alloc` (borrowed; the
 * handle's budget), at most SYM__MAX_PTRMAP pairs.
 */
struct sym__ptrmap_pair {
	const void *key;
	void *val;
};

struct sym__ptrmap {
	struct hmap index;              /* hash_u64 of the key -> pair */
	struct sym__ptrmap_pair *v;     /* owned, through alloc */
	size_t n, cap;
	const struct grow_alloc *alloc; /* borrowed */
};

#define SYM__MAX_PTRMAP HMAP_MAX

void sym__ptrmap_init(struct sym__ptrmap *m, const struct grow_alloc *alloc);
/* The value of `key`, or NULL when it has none. */
void *sym__ptrmap_get(const struct sym__ptrmap *m, const void *key);
/* Sets the value of `key`; 0, ERR_TOO_LARGE or ERR_NOMEM (the map unchanged). */
int sym__ptrmap_put(struct sym__ptrmap *m, const void *key, void *val);
void sym__ptrmap_release(struct sym__ptrmap *m);

/*
 * Returns the copy of s[0..len) (borrowed) in the interner `t`: equal
 * content, equal pointer, valid until t is released.  Interned strings are
 * C strings, so the content stops at an embedded NUL.  NULL when a cap of
 * t or its budget refuses, or without memory.
 */
const char *sym__intern(struct intern *t, const char *s, size_t len);

/*
 * Demangles `name` (C++, Rust, D via libiberty) and interns the result, or
 * interns `name` as is when it is not a mangled name.
 */
const char *sym__demangle(struct intern *t, const char *name);

/* An inline-tree node: index 0 is the function itself. */
struct sym__node {
	const char *name;       /* interned, demangled */
	const char *call_file;  /* interned; call site in the parent */
	uint32_t call_line, call_col;
	uint32_t kids, n_kids;  /* slice of fn->spans; idx = child node */
};

struct sym__func {
	Dwarf_Die die;
	int loaded;                 /* 1: nodes built, -1: failed */
	struct sym__node *nodes;    /* owned, through sym_dwarf.budget */
	size_t n_nodes, nodes_cap;
	struct sym__span *spans;    /* owned, through sym_dwarf.budget */
	size_t n_spans, spans_cap;
};

struct sym__cu_scan;

struct sym__cu {
	Dwarf_Die die;
	const char *comp_dir;       /* interned, or NULL */
	int loaded;                 /* 1: funcs built, -1: failed */
	int have_files;
	Dwarf_Files *files;
	size_t n_files;
	struct sym__func *funcs;    /* owned, through sym_dwarf.budget */
	size_t n_funcs, funcs_cap;
	struct sym__span *spans;    /* idx = function; owned, through sym_dwarf.budget */
	size_t n_spans, spans_cap;
	struct sym__cu_scan *scan;  /* owned, through sym_dwarf.budget; dwarf.c's DIE
				       scanner state, or NULL */
	int scan_failed;            /* the unit cannot be scanned: libdw walks */
};

/* How the function tables were built: units and functions scanned by
 * dwarf.c, or walked with libdw (the fallback, or SYM_DWARF_LIBDW_WALK). */
struct sym__walks {
	size_t cus_scanned, cus_walked;
	size_t funcs_scanned, funcs_walked;
};

struct sym_dwarf {
	struct sym_elf_info info;
	unsigned flags;             /* enum sym_dwarf_flags */
	struct sym__walks walks;
	int fd, alt_fd;
	void *mem;                  /* owned copy for sym_dwarf_open_mem */
	Elf *elf, *alt_elf;
	Dwarf *dw, *alt;
	struct grow_budget budget;  /* max_memory: every table and string of
				       the handle is allocated through budget.alloc */
	struct intern strings;      /* every name and path handed out */
	struct sym__ptrmap names;   /* raw DWARF/ELF name -> demangled */
	struct sym__ptrmap paths;   /* raw libdw file name (per CU) -> absolute */
	struct sym__ptrmap origins; /* abstract origin DIE addr -> name of the
				       inlined DIEs that only refer to it */
	struct sym__cu *cus;
	size_t n_cus, cus_cap;
	struct sym__span *cu_spans; /* idx = cu */
	size_t n_cu_spans, cu_spans_cap;
	struct sym__span *syms;     /* idx = sym_names index */
	size_t n_syms, syms_cap;
	const char **sym_names;
	size_t sym_names_cap;
};

/*
 * Grows the table `p` (a T *; capacity `cap`, a size_t) of handle `d` to
 * hold `need` items, against the handle's budget: 0, ERR_TOO_LARGE (past
 * SYM__MAX_ITEMS or max_memory) or ERR_NOMEM, the table unchanged then.
 */
#define SYM__GROW(d, p, cap, need) GROW(p, cap, need, SYM__MAX_ITEMS, &(d)->budget.alloc)
/* Frees a table grown by SYM__GROW, refunding the budget. */
#define SYM__FREE(d, p, cap) grow_free(&(d)->budget.alloc, p, cap, sizeof(*(p)))

/* A lookup (sym_dwarf_lookup, sym_index_lookup) behind sym__lookup_caller. */
typedef int (*sym__lookup_fn)(void *ctx, uint64_t vaddr, struct sym_frame *frames, size_t max,
			      size_t *n);

/* The caller rule of sym_dwarf_lookup_caller over any lookup. */
int sym__lookup_caller(sym__lookup_fn fn, void *ctx, uint64_t ret, struct sym_frame *frames,
		       size_t max, size_t *n);

/* Loads every CU's functions and every function's tree (index writer). */
int sym__dwarf_load_all(struct sym_dwarf *d);

/*
 * The boundaries of the piecewise-constant lookup, appended to *v (grown
 * through d->budget.alloc: the caller frees it with grow_free there).
 */
int sym__dwarf_boundaries(struct sym_dwarf *d, uint64_t **v, size_t *n,
			  size_t *cap);

/*
 * Calls `fn` for every named PLT entry of `elf` ([lo, hi), the dynamic
 * symbol's raw name, borrowed from elf) in address order (plt.c says how
 * they are found); a file without relocations for its PLT (a .debug file,
 * another machine) has none.  Returns 0 or the first non-zero of `fn`.
 */
typedef int (*sym__plt_fn)(void *ctx, uint64_t lo, uint64_t hi, const char *name);
int sym__plt_each(Elf *elf, sym__plt_fn fn, void *ctx);

/* Initializes libelf once (idempotent, thread-safe). */
void sym__elf_init(void);

/* Fills `out` from an open Elf; shared by sym_elf_inspect* and sym_dwarf. */
int sym__elf_info(Elf *elf, struct sym_elf_info *out, struct err_msg *msg);

/* ---- kallsyms.c and index.c: kernel symbol maps ---- */

/* One boundary of a symbol table written as an index. */
struct sym__named_start {
	uint64_t addr;
	const char *name; /* borrowed; NULL: nothing is known from addr on */
};

/*
 * Writes (appends to `out`) an index whose range i starts at e[i].addr -
 * base and names e[i].name as one frame with SYM_FRAME_SYMTAB.  The `n`
 * entries are sorted with strictly increasing addresses in [base, base +
 * 4 GiB), and the last one has no name (a programmer error otherwise).
 */
int sym__index_write_symbols(const struct sym__named_start *e, size_t n, uint64_t base,
			     const uint8_t *bid, size_t blen, struct buf *out,
			     struct err_msg *msg);

/*
 * Writes (appends to `out`) the index of any lookup `fn`: evaluated at each
 * of the `n` sorted addresses `v` (duplicates allowed; the lookup must be
 * constant between consecutive ones and answer nothing at the last), whose
 * span is below 4 GiB.  Tables grow through `alloc`.  `stats` may be NULL.
 */
int sym__index_write_lookup(sym__lookup_fn fn, void *ctx, const uint64_t *v, size_t n,
			    const uint8_t *bid, size_t blen, const struct grow_alloc *alloc,
			    struct buf *out, struct sym_index_stats *stats, struct err_msg *msg);

/* ---- gopclntab.c: Go's function table ---- *
 *
 * Layouts (all little-endian; P = pointer size, 4 or 8, from the header),
 * after Go's runtime/symtab.go and runtime2.go:
 *
 * pcHeader, at the start of .gopclntab:
 *     0  4  magic: 0xfffffff0 (Go 1.18, 1.19), 0xfffffff1 (1.20+)
 *     4  2  zero
 *     6  1  minLC: the pc quantum (1 x86, 4 arm64)
 *     7  1  P
 *     8  P  nfunc;  8+P nfiles;  8+2P textStart (0 in a PIE: .text's address)
 *  8+3P  P  offsets from the header of: funcnametab, cutab, filetab,
 *           pctab, pclntab (five words)
 *
 * pclntab starts with the function table: nfunc + 1 pairs of u32
 * (entry - textStart, offset of the function's record from pclntab); the
 * last entry is the end of the code.  A function record (_func):
 *     0 entryOff  4 nameOff (into funcnametab)  8 args  12 deferreturn
 *    16 pcsp  20 pcfile  24 pcln (offsets into pctab, 0: none)
 *    28 npcdata  32 cuOffset (into cutab, u32 entries)
 *    then 1.18/1.19: 36 funcID, flag, pad, 39 nfuncdata (40 bytes)
 *         1.20+:     36 startLine, 40 funcID, flag, pad, 43 nfuncdata (44)
 *    then npcdata u32 pctab offsets (index 2: the inline-tree index), and
 *    nfuncdata u32 offsets from moduledata.gofunc (index 3: the inline
 *    tree; 0xffffffff: none).
 *
 * A pc-value table is a sequence of (zig-zag varint value delta, varint pc
 * delta times the quantum) pairs from value -1 at the entry, ending at a
 * zero value delta after the first pair; a value holds from the previous
 * pc up to the pc of its pair.  File numbers index the function's unit in
 * cutab, which gives offsets of NUL-terminated paths in filetab.
 *
 * Inline-tree entries: 1.18/1.19 20 bytes (name offset at 12, parentPc at
 * 16), 1.20+ 16 bytes (name offset at 4, parentPc at 8).  parentPc is an
 * offset from the entry of an instruction positioned at the call site.
 *
 * moduledata, in writable data, starts with words: the header's address,
 * funcnametab (slice: address, len, cap), cutab (slice), ...; word 22 is
 * the text address, and gofunc is word 38 (1.18/1.19) or 40 (1.20+, which
 * added two coverage-counter words before `end`).  In a PIE these words
 * are 0 in the file, with RELATIVE relocations whose addends are the
 * values.
 */
#define SYM_GOPCLN_MAX_FUNCS (4u << 20)     /* functions of one table */
#define SYM_GOPCLN_MAX_ROWS (1u << 20)      /* rows of one pc-value table */
#define SYM_GOPCLN_MAX_PCDATA 1024u         /* PCDATA tables of one function */
#define SYM_GOPCLN_MAX_RELOCS (16u << 20)   /* RELATIVE relocations read (PIE) */
#define SYM_GOPCLN_MAX_EMPTY 16u            /* pc-value pairs of pc delta 0, per table */
#define SYM_GOPCLN_DEFAULT_MEM ((size_t)1 << 30)

struct sym__pcrow {
	uint64_t end;   /* the value holds below end (from the previous row's end) */
	int32_t val;
};

struct sym__pctab {
	struct sym__pcrow *rows; /* owned, through the handle's budget */
	size_t n, cap;
};

/* The last function decoded. */
struct sym__gofunc {
	uint32_t idx;            /* function index, SYM_NONE: none yet */
	int bad;                 /* its records do not decode: no frames */
	uint64_t entry, end;     /* end: where its line table ends */
	uint32_t nameoff, cuoff;
	struct sym__pctab file, line, inl;
	const uint8_t *inltree;  /* borrowed from the file; NULL: no inlining */
	size_t inltree_len;      /* bytes from inltree to its section's end */
};

struct sym_gopcln {
	struct sym_elf_info info;
	int fd;
	Elf *elf;
	int version;             /* 118 (1.18, 1.19) or 120 (1.20+) */
	unsigned quantum, ptrsize;
	uint32_t nfunc;
	uint64_t text;           /* textStart */
	const uint8_t *tab;      /* .gopclntab, borrowed from the file */
	size_t tab_len;
	uint64_t funcname_off, cu_off, file_off, pc_off, ln_off; /* within tab */
	const uint8_t *gofunc;   /* moduledata.gofunc's bytes; NULL: not found */
	size_t gofunc_len;
	struct grow_budget budget;
	struct intern strings;   /* every name and path handed out */
	struct sym__gofunc fn;
};

/*
 * A handle over the table bytes alone (borrowed, must outlive it), for
 * tests and the fuzzer: `text` is used when the header's textStart is 0,
 * `gofunc` (may be NULL) is where FUNCDATA offsets point.
 */
int sym__gopcln_open_tables(const uint8_t *tab, size_t tab_len, uint64_t text,
			    const uint8_t *gofunc, size_t gofunc_len, size_t max_memory,
			    struct sym_gopcln **out, struct err_msg *msg);

/* Writes `len` bytes to `path` atomically (temporary file, fsync, rename). */
int sym__write_atomic(const char *path, const void *data, size_t len, struct err_msg *msg);

#endif
