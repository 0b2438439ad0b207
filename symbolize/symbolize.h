/*
 * symbolize.h - turning ELF virtual addresses into functions, files, lines
 * and inline frames, from debug info identified by GNU build ID.
 *
 * Three layers, each usable alone:
 *
 *   1. Inspection (sym_elf_*): reads the headers of an ELF file or of bytes
 *      from a client (an upload) without trusting them: build ID, type,
 *      PT_LOAD segments, which symbol and debug sections exist, the DWZ
 *      .gnu_debugaltlink.  sym_elf_check() turns that into one of the
 *      per-build-ID reasons the rest of unhex reports ("invalid_elf",
 *      "no_symbols", "build_id_mismatch").
 *
 *   2. Resolution from raw DWARF (struct sym_dwarf): opens a debug file (or
 *      an unstripped executable) with libdw, and answers lookups with an
 *      index built lazily per compile unit and per function.  Names come
 *      from DWARF subprograms and inlined subroutines, else from the ELF
 *      symbol tables, and are demangled once (libiberty: C++, Rust, D).
 *
 *   3. The compact per-build-ID index (struct sym_index): one pass over the
 *      whole debug file writes a flat file (documented byte by byte in
 *      symbolize_int.h) that answers a lookup with one binary search and no
 *      decoding.  The debug-info service (debuginfo/debuginfo.h)
 *      keeps one per build ID on disk and queries it.
 *
 * Addresses.  Profiles store file offsets (ingest normalizes runtime PCs to
 * `pc - memory_start + file_offset`).  sym_addr_to_vaddr() maps a file
 * offset to an ELF virtual address through the PT_LOAD segment holding it,
 * and subtracts 1 for return addresses (every non-leaf frame), so the
 * lookup lands inside the call instruction.  The segment table must come
 * from the executable: objcopy --only-keep-debug rewrites p_offset/p_filesz
 * in debug files, which sym_elf_inspect() detects (segments_from_debug).
 * Every lookup below takes ELF virtual addresses.
 *
 * Frames.  A lookup returns the inline chain innermost first.  frames[0]
 * names the function whose code is at the address, with the source
 * location of the address.  frames[i] (i > 0) names the function that
 * frames[i-1] was inlined into, with the location of that call site.  The
 * last frame is the out-of-line function.
 *
 * Threading.  libdw's lazy caches (line tables, our per-CU tables) are not
 * thread-safe: a struct sym_dwarf must be used by one thread at a time
 * (callers hold a per-build-ID lock while building an index from it).  A
 * struct sym_index is immutable once opened and may be queried from any
 * number of threads without a lock.  There is no global state besides
 * libelf's one-time elf_version() call, which is idempotent.
 *
 * Ownership.  Strings in struct sym_frame are borrowed from the object that
 * filled them (the sym_dwarf's string table, or the index's mapping) and
 * stay valid until that object is closed.
 */
#ifndef UNHEX_SYMBOLIZE_SYMBOLIZE_H
#define UNHEX_SYMBOLIZE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct err_msg;
struct buf;

#define SYM_BUILD_ID_MAX 64   /* bytes; GNU build IDs are 20 (sha1) */
#define SYM_MAX_SEGMENTS 16   /* PT_LOAD entries kept; more is invalid_elf */
#define SYM_MAX_FRAMES 64     /* deepest inline chain reported */

/* ---- 1. Inspection ------------------------------------------------------ */

struct sym_segment {
	uint64_t offset; /* p_offset */
	uint64_t vaddr;  /* p_vaddr */
	uint64_t filesz; /* p_filesz */
	uint64_t memsz;  /* p_memsz */
	uint32_t flags;  /* p_flags (PF_X = 1, PF_W = 2, PF_R = 4) */
};

enum sym_elf_flags {
	SYM_HAS_DEBUG_INFO = 1 << 0,   /* .debug_info with contents */
	SYM_HAS_SYMTAB = 1 << 1,       /* .symtab with at least one FUNC */
	SYM_HAS_DYNSYM = 1 << 2,       /* .dynsym with at least one FUNC */
	SYM_HAS_ALTLINK = 1 << 3,      /* .gnu_debugaltlink (DWZ) */
	SYM_HAS_DEBUGLINK = 1 << 4,    /* .gnu_debuglink */
	SYM_DEBUG_COMPRESSED = 1 << 5, /* SHF_COMPRESSED or .zdebug_* */
	SYM_HAS_TEXT = 1 << 6,         /* .text with contents (not a .debug) */
	SYM_SEGMENTS_FROM_DEBUG = 1 << 7, /* PT_LOAD offsets not trustworthy */
	SYM_HAS_GOPCLNTAB = 1 << 8,    /* Go's function table (.gopclntab) */
};

struct sym_elf_info {
	uint8_t build_id[SYM_BUILD_ID_MAX];
	size_t build_id_len;          /* 0: the file has no GNU build ID */
	int elf_class;                /* 32 or 64 */
	int elf_type;                 /* ET_EXEC, ET_DYN, ET_REL, ET_CORE */
	int machine;                  /* e_machine */
	unsigned flags;               /* enum sym_elf_flags */
	size_t n_segments;
	struct sym_segment segments[SYM_MAX_SEGMENTS];
	/* From .gnu_debugaltlink when SYM_HAS_ALTLINK. */
	char alt_name[256];
	uint8_t alt_build_id[SYM_BUILD_ID_MAX];
	size_t alt_build_id_len;
};

/*
 * Inspects `len` bytes of an ELF file (borrowed; read only during the
 * call).  Returns 0, or ERR_INVALID with a message for anything that is not
 * a well-formed ELF file, or ERR_NOMEM.  `out` is written on success only.
 */
int sym_elf_inspect(const void *data, size_t len, struct sym_elf_info *out,
		    struct err_msg *msg);

/* Same for a file on disk (mmapped read-only); ERR_IO if it cannot be read. */
int sym_elf_inspect_file(const char *path, struct sym_elf_info *out,
			 struct err_msg *msg);

/* The per-build-ID status reasons shown by API, metrics and UI. */
enum sym_reason {
	SYM_REASON_OK = 0,
	SYM_REASON_INVALID_ELF,
	SYM_REASON_NO_SYMBOLS,        /* neither .debug_info nor FUNC symbols */
	SYM_REASON_NO_DEBUG_INFO,     /* symbols only; asked for debug info */
	SYM_REASON_BUILD_ID_MISMATCH,
	SYM_REASON_NO_BUILD_ID,
};

/* "ok", "invalid_elf", "no_symbols", "no_debug_info", "build_id_mismatch", "no_build_id". */
const char *sym_reason_str(enum sym_reason r);

/*
 * Decides whether an inspected file can serve as debug info for `want_id`
 * (borrowed, `want_len` bytes; NULL skips the check).  With `need_dwarf`,
 * a file without .debug_info is refused (SYM_REASON_NO_DEBUG_INFO): the
 * stripped-binary-served-as-debuginfo trap of debuginfod.  Returns 0 when
 * usable, else ERR_INVALID with *reason set and a message naming it.
 */
int sym_elf_check(const struct sym_elf_info *info, const uint8_t *want_id,
		  size_t want_len, int need_dwarf, enum sym_reason *reason,
		  struct err_msg *msg);

/* Lower-case hex of a build ID into `out` (at least 2*len+1 bytes). */
void sym_build_id_hex(const uint8_t *id, size_t len, char *out);

/* Parses hex into `out` (SYM_BUILD_ID_MAX bytes); ERR_INVALID if malformed. */
int sym_build_id_parse(const char *hex, uint8_t *out, size_t *len);

/* ---- Addresses ------------------------------------------------------------ */

enum sym_addr_flags {
	SYM_ADDR_RETURN = 1 << 0, /* a return address: look up addr - 1 */
};

/*
 * Maps a file offset of the executable to an ELF virtual address through
 * the PT_LOAD segment of `info` that holds it (vaddr = off - p_offset +
 * p_vaddr; when several do, the executable one wins).  With SYM_ADDR_RETURN
 * the result is one less.  ERR_NOT_FOUND if no segment holds the offset,
 * ERR_INVALID if `info` describes a debug-only file (its offsets are not the
 * executable's).
 */
int sym_addr_to_vaddr(const struct sym_elf_info *info, uint64_t file_offset,
		      unsigned flags, uint64_t *vaddr);

/* ---- Frames --------------------------------------------------------------- */

enum sym_frame_flags {
	SYM_FRAME_INLINED = 1 << 0, /* this function was inlined into the next */
	SYM_FRAME_SYMTAB = 1 << 1,  /* name from the ELF symbol table, no DWARF */
};

struct sym_frame {
	const char *function; /* demangled; NULL if unknown; borrowed */
	const char *file;     /* absolute when the comp dir is known; NULL if unknown */
	uint32_t line;        /* 0 if unknown */
	uint32_t column;      /* 0 if unknown */
	uint32_t flags;       /* enum sym_frame_flags */
};

/* ---- 2. Resolution from DWARF -------------------------------------------- */

struct sym_dwarf;

struct sym_dwarf_opts {
	/* Expected build ID (borrowed); when set, a mismatch fails the open. */
	const uint8_t *build_id;
	size_t build_id_len;
	/*
	 * Called when the file has a .gnu_debugaltlink: return 0 and an owned
	 * (malloc'd) path in *path of the DWZ alt file with that build ID, or
	 * ERR_NOT_FOUND.  With a callback it is the only source: when it fails
	 * (or its file has another build ID) the open fails with ERR_NOT_FOUND
	 * ("alt_not_found: ...").  Without a callback the name in the link is
	 * tried (relative to the debug file's directory); if that fails, DIEs
	 * in the alt file resolve without names.
	 */
	int (*find_alt)(void *ctx, const uint8_t *id, size_t id_len,
			const char *name, char **path);
	void *ctx;
	/* Caps the bytes the handle's tables and strings hold at once (an
	 * index build's included); past it, ERR_TOO_LARGE.  0 means 4 GiB. */
	size_t max_memory;
	unsigned flags;  /* enum sym_dwarf_flags */
	/*
	 * An executable with the same build ID (borrowed path; NULL: none) to
	 * take PLT stub names from when the file opened has none: a .debug
	 * file keeps .plt's address but not the relocations that name its
	 * entries.  Ignored unless it is a regular ELF file with that build ID.
	 * sym_index_build also takes Go's .gopclntab from it when the file
	 * has no DWARF.
	 */
	const char *plt_from;
};

enum sym_dwarf_flags {
	/*
	 * Walks the DIEs of every unit with libdw only (dwarf_child,
	 * dwarf_siblingof), never scanning their bytes itself: slower, and
	 * the reference the scanner is tested against.  Answers are the same.
	 */
	SYM_DWARF_LIBDW_WALK = 1 << 0,
};

/*
 * Opens a debug file (or an unstripped executable) for resolution.  PLT
 * stubs are named "sym@plt" (the dynamic symbol, demangled), as perf and
 * objdump name them, from the file's own .rela.plt or opts->plt_from's.  A file
 * with neither DWARF nor FUNC symbols fails with ERR_INVALID, and so does a
 * build-ID mismatch; both messages name the reason.  `opts` may be NULL.
 * Returns an owned handle in *out (free with sym_dwarf_close).
 */
int sym_dwarf_open(const char *path, const struct sym_dwarf_opts *opts,
		   struct sym_dwarf **out, struct err_msg *msg);

/* Like sym_dwarf_open on bytes in memory (borrowed; must outlive the handle). */
int sym_dwarf_open_mem(const void *data, size_t len,
		       const struct sym_dwarf_opts *opts,
		       struct sym_dwarf **out, struct err_msg *msg);

void sym_dwarf_close(struct sym_dwarf *d);

/* The inspected headers of the open file (borrowed). */
const struct sym_elf_info *sym_dwarf_info(const struct sym_dwarf *d);

/*
 * Resolves one ELF virtual address into at most `max` frames, innermost
 * first; *n is the number written (0 when nothing is known about the
 * address, which is not an error).  Returns 0, or ERR_NOMEM/ERR_TOO_LARGE
 * (memory cap) or ERR_CORRUPT (DWARF libdw refuses to read).
 */
int sym_dwarf_lookup(struct sym_dwarf *d, uint64_t vaddr,
		     struct sym_frame *frames, size_t max, size_t *n);

/*
 * Resolution callback for batches: `i` is the index of the address in the
 * input array.  Returning non-zero stops the batch with that value.
 */
typedef int (*sym_frames_fn)(void *ctx, size_t i, uint64_t vaddr,
			     const struct sym_frame *frames, size_t n);

/*
 * Resolves `n` addresses (borrowed; sorted input is fastest) and calls `fn`
 * once per address, in input order.
 */
int sym_dwarf_resolve(struct sym_dwarf *d, const uint64_t *vaddrs, size_t n,
		      sym_frames_fn fn, void *ctx);

/*
 * Resolves a caller's frame (every frame of a stack but the leaf).  `ret`
 * is the address the stack records for it, in either form producers use:
 * the return address itself (perf with frame pointers or DWARF, libunwind,
 * the Go runtime's raw PCs), or an address already moved into the call
 * instruction (pprof's Location.address convention: Go's runtime/pprof,
 * perf's libdw unwinder).  ret - 1 is inside the call instruction either
 * way, and is what this looks up, except when `ret` is the first byte of a
 * function and ret - 1 cannot be the call:
 *
 *   - nothing is known at ret - 1 (alignment padding between functions,
 *     or before the first one), or
 *   - ret starts a function that a runtime or the kernel plants as a
 *     return address (sym_planted_entry: Go's runtime.goexit, whose
 *     "return address" is its first byte + 1, which pprof producers move
 *     back to the first byte; signal restorers, whose first byte the
 *     kernel stores as a handler's return address), whatever precedes it.
 *
 * Then the frames at `ret` are returned.  docs/symbolization.md states the
 * rule and what it cannot tell apart.  Same contract as sym_dwarf_lookup.
 */
int sym_dwarf_lookup_caller(struct sym_dwarf *d, uint64_t ret, struct sym_frame *frames,
			    size_t max, size_t *n);

/*
 * 1 when `function` (a demangled name, may be NULL) is one whose first
 * byte a runtime or the kernel plants as a return address: Go's
 * "runtime.goexit" (a goroutine's first frame returns to goexit + 1, which
 * pprof producers move back to its first byte) and the signal restorers a
 * handler returns to ("runtime.sigreturn", "runtime.sigreturn__sigaction",
 * glibc's "__restore_rt"); Go's ".abi0" symbol names too.
 */
int sym_planted_entry(const char *function);

/* ---- 3. The compact index ------------------------------------------------- */

struct sym_index;

struct sym_index_stats {
	uint64_t ranges;      /* address ranges written */
	uint64_t locations;   /* distinct (function, file, line, column, parent) */
	uint64_t string_bytes;
	uint64_t file_bytes;
	uint64_t functions;   /* DWARF subprograms with code */
	uint64_t symbols;     /* ELF FUNC symbols used as fallback */
	uint32_t from;        /* enum sym_index_from: what named the frames */
	const char *layout;   /* SYM_FROM_GOPCLNTAB: sym_gopcln_layout(); else NULL */
};

enum sym_index_from {
	SYM_FROM_DEBUG_FILE = 0, /* DWARF, else the ELF symbol tables */
	SYM_FROM_GOPCLNTAB,      /* Go's .gopclntab: no DWARF for the build ID */
};

/*
 * Writes the whole index of an open debug file to `out` (appended; the
 * buffer's cap bounds it, ERR_TOO_LARGE past it).  `stats` may be NULL.
 */
int sym_index_build_buf(struct sym_dwarf *d, struct buf *out,
			struct sym_index_stats *stats, struct err_msg *msg);

/*
 * Opens `debug_path` (with `opts`, may be NULL), builds its index and
 * writes it to `out_path` atomically (a temporary file, fsync, rename).
 * The engine per build ID: DWARF when the file has it; else Go's
 * .gopclntab (section 5) of the file, or of opts->plt_from (the
 * executable) when the file has none; else the ELF symbol tables.
 * stats->from says which.
 */
int sym_index_build(const char *debug_path, const char *out_path,
		    const struct sym_dwarf_opts *opts,
		    struct sym_index_stats *stats, struct err_msg *msg);

/*
 * The version of the index file format (symbolize_int.h): an index of
 * another version is refused by sym_index_open, so whoever names index
 * files it keeps elsewhere (debuginfo/'s bucket keys) names them by it.
 */
#define SYM_INDEX_FORMAT_VERSION 2u

/*
 * Maps an index file read-only and validates every offset and count in it
 * (and its checksum); bytes that do not check out give ERR_CORRUPT with a
 * message.  With `want_id` (borrowed, may be NULL) a different build ID is
 * ERR_CONFLICT.  Returns an owned handle (free with sym_index_close).
 */
int sym_index_open(const char *path, const uint8_t *want_id, size_t want_len,
		   struct sym_index **out, struct err_msg *msg);

/*
 * Same over bytes in memory (borrowed; they must outlive the handle), e.g.
 * a value read from the store.
 */
int sym_index_open_mem(const void *data, size_t len, const uint8_t *want_id,
		       size_t want_len, struct sym_index **out,
		       struct err_msg *msg);

void sym_index_close(struct sym_index *idx);

/* The build ID recorded in the index (borrowed). */
const uint8_t *sym_index_build_id(const struct sym_index *idx, size_t *len);

/*
 * Same contract as sym_dwarf_lookup, with no allocation and no lock: one
 * binary search, then the parent chain.  Always returns 0.
 */
int sym_index_lookup(const struct sym_index *idx, uint64_t vaddr,
		     struct sym_frame *frames, size_t max, size_t *n);

/* sym_dwarf_lookup_caller's rule over the index; no allocation, no lock. */
int sym_index_lookup_caller(const struct sym_index *idx, uint64_t ret,
			    struct sym_frame *frames, size_t max, size_t *n);

/* ---- 4. Kernel symbol maps ----------------------------------------------- */

/*
 * A kernel symbol map is the text of /proc/kallsyms or of a System.map:
 * one symbol a line, "ADDR TYPE NAME" with an optional "\t[MODULE]" (ADDR
 * 1..16 hex digits, TYPE one letter or '?', NAME 1..SYM_KALLSYMS_MAX_NAME
 * printable non-blank bytes, MODULE 1..64 of them without brackets), "\n"
 * line ends, the last one optional.  It carries no build ID: the uploader
 * names it.  Addresses are the kernel's runtime addresses of one boot;
 * only their distance from the `_text` symbol is kept, so a map read on
 * any boot of a kernel names frames of every boot of that kernel, KASLR or
 * not (module symbols only for the boot their modules were loaded in).
 */
#define SYM_KALLSYMS_MAX_BYTES (64u << 20)
#define SYM_KALLSYMS_MAX_LINES (4u << 20)
#define SYM_KALLSYMS_MAX_NAME 512u

/*
 * Checks `len` bytes (borrowed) as a kernel symbol map: 0 with the number
 * of function symbols (types t, T, w, W) in *n_funcs (may be NULL), or
 * ERR_INVALID with a message naming the line and what is wrong, or
 * ERR_TOO_LARGE past the caps above.  Also refused: no `_text` symbol,
 * `_text` at 0 (a map read without the right to see addresses:
 * kptr_restrict), no function symbol.
 */
int sym_kallsyms_check(const void *data, size_t len, size_t *n_funcs, struct err_msg *msg);

/*
 * Writes the index (section 3) of the symbol map in `len` bytes (borrowed)
 * for build ID `bid` (borrowed, blen bytes) to `out` (appended).  Its
 * addresses are offsets from `_text`: look a kernel frame up at its
 * runtime address minus the runtime address of `_text`.  Every address
 * from a function symbol up to the next symbol of the map names that
 * function (module symbols as "name [module]"); where several functions
 * share an address the last one the map lists wins, as perf names them
 * (the others end where they start).  Errors as sym_kallsyms_check,
 * ERR_NOMEM.
 */
int sym_kallsyms_index_buf(const void *data, size_t len, const uint8_t *bid, size_t blen,
			   struct buf *out, struct sym_index_stats *stats, struct err_msg *msg);

/* The same from the map at `map_path` to the index file `out_path` (atomically). */
int sym_kallsyms_index_build(const char *map_path, const char *out_path, const uint8_t *bid,
			     size_t blen, struct sym_index_stats *stats, struct err_msg *msg);

/* ---- 5. Go's function table ---------------------------------------------- */

/*
 * Go executables carry their own function table, .gopclntab, even when
 * stripped (`strip`, `-ldflags=-s -w`): the runtime needs it for
 * tracebacks.  struct sym_gopcln names frames from it when a build ID has
 * no DWARF: function names (Go's, e.g. "main.(*T).m"), files, lines, and
 * inlined calls (no columns).  The layouts of Go 1.18 and 1.19 (magic
 * 0xfffffff0) and of Go 1.20 onwards (0xfffffff1) are read, little-endian
 * files only; older ones are refused with a message naming the version.
 * Every read is bounds-checked: a damaged table gives ERR_INVALID at open,
 * or no frames for the function whose records are damaged.
 *
 * Threading and ownership as struct sym_dwarf: one thread at a time
 * (lookups keep the last decoded function); strings in frames are
 * borrowed from the handle.
 */
struct sym_gopcln;

struct sym_gopcln_opts {
	const uint8_t *build_id; /* borrowed; when set, a mismatch fails the open */
	size_t build_id_len;
	size_t max_memory;       /* cap of the handle's tables and strings; 0: 1 GiB */
};

/*
 * Opens the Go executable at `path` (or `len` bytes at `data`, borrowed,
 * which must outlive the handle).  ERR_NOT_FOUND (with a message) when it
 * has no .gopclntab, ERR_INVALID for a malformed ELF, table or an
 * unsupported Go version, ERR_IO, ERR_NOMEM.  `opts` may be NULL.
 * Returns an owned handle in *out (free with sym_gopcln_close).
 */
int sym_gopcln_open(const char *path, const struct sym_gopcln_opts *opts,
		    struct sym_gopcln **out, struct err_msg *msg);
int sym_gopcln_open_mem(const void *data, size_t len, const struct sym_gopcln_opts *opts,
			struct sym_gopcln **out, struct err_msg *msg);
void sym_gopcln_close(struct sym_gopcln *g);

/* The inspected headers of the open file (borrowed). */
const struct sym_elf_info *sym_gopcln_info(const struct sym_gopcln *g);

/* "Go 1.18-1.19" or "Go 1.20+": the table layout read. */
const char *sym_gopcln_layout(const struct sym_gopcln *g);

/* Same contract as sym_dwarf_lookup (frames innermost first). */
int sym_gopcln_lookup(struct sym_gopcln *g, uint64_t vaddr, struct sym_frame *frames,
		      size_t max, size_t *n);

/* Same contract as sym_dwarf_lookup_caller. */
int sym_gopcln_lookup_caller(struct sym_gopcln *g, uint64_t ret, struct sym_frame *frames,
			     size_t max, size_t *n);

/*
 * Writes the index (section 3) of the whole table to `out` (appended),
 * answering at every address what sym_gopcln_lookup answers.
 */
int sym_gopcln_index_buf(struct sym_gopcln *g, struct buf *out, struct sym_index_stats *stats,
			 struct err_msg *msg);

#endif
