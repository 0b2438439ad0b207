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
 *      decoding.  It is what later layers cache on disk and query.
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
	/* Caps the memory of per-CU tables and strings; 0 means 4 GiB. */
	size_t max_memory;
};

/*
 * Opens a debug file (or an unstripped executable) for resolution.  A file
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

/* ---- 3. The compact index ------------------------------------------------- */

struct sym_index;

struct sym_index_stats {
	uint64_t ranges;      /* address ranges written */
	uint64_t locations;   /* distinct (function, file, line, column, parent) */
	uint64_t string_bytes;
	uint64_t file_bytes;
	uint64_t functions;   /* DWARF subprograms with code */
	uint64_t symbols;     /* ELF FUNC symbols used as fallback */
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
 */
int sym_index_build(const char *debug_path, const char *out_path,
		    const struct sym_dwarf_opts *opts,
		    struct sym_index_stats *stats, struct err_msg *msg);

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

/* ---- 4. The symbolization service ------------------------------------------
 *
 * struct sym_service turns (build ID, file offset) into frames for the query
 * path, and owns everything that makes that cheap after the first time
 * (docs/symbolization.md has the whole flow):
 *
 *   - the debug-file store: <data dir>/debuginfo/<id[0:2]>/<id>/
 *     {debuginfo, executable, index}, each written to a temporary file,
 *     fsynced and renamed; metadata per build ID in the store namespace
 *     STORE_AUX_DEBUGINFO (format in symbolize_int.h).  Debug info is global,
 *     not per tenant: it is content-addressed by build ID, and a build ID
 *     names the same bytes for every tenant.
 *   - the persisted symbol cache (STORE_AUX_SYMCACHE): resolved frames per
 *     (build ID, file offset, leaf/return), read with one multi-get per build
 *     ID and written with one batch, so an address is resolved once, ever.
 *   - an LRU of open indexes (struct sym_index), built once per build ID by a
 *     background worker and kept on disk across restarts.
 *   - the debuginfod client: build IDs that are not uploaded are fetched from
 *     the upstream URLs by the workers (one fetch per build ID at a time),
 *     with a not-found cache and a retry time in the metadata.
 *
 * Threading: every function is thread-safe.  Queries wait for a build or a
 * fetch at most until their deadline; the work goes on in the background and
 * the next query finds the result.
 */
struct store;
struct sym_service;

/* Why the frames of a build ID are (or are not) named. */
enum sym_status {
	SYM_STATUS_OK = 0,
	SYM_STATUS_NO_BUILD_ID,    /* the mapping has no build ID */
	SYM_STATUS_NOT_FOUND,      /* not uploaded, not upstream */
	SYM_STATUS_MISMATCH,       /* the only file offered had another build ID */
	SYM_STATUS_INVALID_ELF,
	SYM_STATUS_NO_SYMBOLS,     /* no .debug_info and no FUNC symbols */
	SYM_STATUS_UPSTREAM_ERROR, /* debuginfod failed or timed out */
	SYM_STATUS_PENDING,        /* a fetch or index build is in progress */
	SYM_STATUS_COUNT
};

/* "ok", "no_build_id", "not_found", "mismatch", "invalid_elf", "no_symbols",
 * "upstream_error", "pending". */
const char *sym_status_str(enum sym_status s);

struct sym_service_options {
	const char *data_dir;        /* required; borrowed during open */
	const char *debuginfod_urls; /* space-separated upstreams; NULL/"" none */
	const char *cache_dir;       /* debuginfod client cache; NULL picks
				      * <data dir>/debuginfod-cache */
	int fetch_timeout_s;         /* per upstream fetch; 0 picks 30 */
	int64_t retry_ns;            /* not_found/upstream_error retry; 0: 10 min */
	int64_t budget_ns;           /* what a query waits; 0 picks 5 s */
	uint64_t max_upload_bytes;   /* 0 picks 2 GiB */
	size_t max_open;             /* open indexes kept; 0 picks 32 */
	int workers;                 /* background threads (1..4); 0 picks 2 */
};

/*
 * Opens the service over `st` (borrowed; must outlive the service).  With
 * upstream URLs it sets DEBUGINFOD_URLS, DEBUGINFOD_CACHE_PATH and
 * DEBUGINFOD_TIMEOUT in the environment once, before its threads start
 * (libdebuginfod reads them there).  Returns an owned *out.
 */
int sym_service_open(struct store *st, const struct sym_service_options *opt,
		     struct sym_service **out, struct err_msg *msg);

/* Stops the workers (an in-flight fetch is cancelled) and frees.  NULL: no-op. */
void sym_service_close(struct sym_service *s);

int64_t sym_service_budget_ns(const struct sym_service *s);
uint64_t sym_service_max_upload(const struct sym_service *s);

/* ---- uploads ---- */

struct sym_upload;

enum sym_file_kind { SYM_FILE_DEBUGINFO = 0, SYM_FILE_EXECUTABLE = 1 };

/* Starts an upload into a temporary file under the data dir (owned *out). */
int sym_upload_begin(struct sym_service *s, struct sym_upload **out, struct err_msg *msg);

/* Appends bytes; ERR_TOO_LARGE past the upload cap, ERR_IO on a disk error. */
int sym_upload_write(struct sym_upload *u, const void *data, size_t len,
		     struct err_msg *msg);

struct sym_upload_result {
	int unchanged;            /* identical content was already stored */
	enum sym_reason reason;   /* why a file was refused */
	uint64_t size;
	unsigned kinds;           /* 1 << enum sym_file_kind stored for the ID */
};

/*
 * Validates the uploaded bytes as `kind` for the claimed `build_id_hex` and
 * stores them; frees `u` in every case.  A file whose build ID differs is
 * ERR_CONFLICT ("build ID mismatch: file has X, claimed Y"); not an ELF, or
 * no symbols for a debuginfo upload, is ERR_INVALID with res->reason set.
 * A refusal is recorded in the metadata unless a good file is stored.
 */
int sym_upload_commit(struct sym_upload *u, const char *build_id_hex,
		      enum sym_file_kind kind, struct sym_upload_result *res,
		      struct err_msg *msg);

/* Discards an upload. NULL is a no-op. */
void sym_upload_abort(struct sym_upload *u);

/*
 * The path of a stored file of `build_id_hex` into `out`, 0 or ERR_NOT_FOUND
 * (also for a malformed ID).  Used to serve the debuginfod protocol.
 */
int sym_service_file_path(struct sym_service *s, const char *build_id_hex,
			  enum sym_file_kind kind, char *out, size_t out_len);

/*
 * Appends the JSON metadata object of one build ID ({"buildId", "source",
 * "size", "uploaded", "lastUsed", "status", "reason", "kinds"}), or the JSON
 * array of every known build ID when `build_id_hex` is NULL.  ERR_NOT_FOUND
 * when the one ID is unknown.
 */
int sym_service_info_json(struct sym_service *s, const char *build_id_hex,
			  struct buf *out, struct err_msg *msg);

/* Prometheus text of the service's counters (uploads, fetches, builds). */
int sym_service_metrics(struct sym_service *s, struct buf *out);

/* ---- resolution ---- */

/* How file offsets of one mapping relate to the binary (from the profile). */
struct sym_mapping_ref {
	uint64_t memory_start, memory_limit, file_offset;
	int addr_is_vaddr;   /* addresses are ELF vaddrs already (OTLP) */
};

/* One address to resolve: a file offset, and whether it is a leaf PC. */
struct sym_addr_req {
	uint64_t addr;
	int leaf;            /* 0: a return address, looked up at vaddr - 1 */
};

/*
 * Resolves `n` addresses (borrowed; sorted is fastest) of one build ID:
 * first the persisted cache (one multi-get), then the index, waiting for a
 * fetch or index build at most until `deadline_ns` (monotonic clock).  `fn`
 * is called for every address that got an answer (n frames, possibly 0 when
 * the debug info knows nothing there), in any order, with `i` its index in
 * `reqs`.  *status says why the rest got none (SYM_STATUS_PENDING past the
 * deadline) and `reason` (reason_len bytes) explains it.  Returns 0, or an
 * error of `fn` or of the store.
 */
int sym_service_resolve(struct sym_service *s, const char *build_id_hex,
			const struct sym_mapping_ref *map, const struct sym_addr_req *reqs,
			size_t n, int64_t deadline_ns, sym_frames_fn fn, void *ctx,
			enum sym_status *status, char *reason, size_t reason_len);

/*
 * A counter that changes whenever frames resolved earlier may no longer be
 * right: the debug info of a build ID was replaced.  Callers that keep
 * resolved frames of their own (the query's symbolization memo) drop them
 * when it moved.
 */
uint64_t sym_service_generation(const struct sym_service *s);

/*
 * Counts `n` distinct locations a query left without names because of
 * `status` (unhex_symbolize_unresolved_locations_total{status} in /metrics;
 * "ok" means the debug info knows nothing at those addresses).
 */
void sym_service_note_unresolved(struct sym_service *s, enum sym_status status, uint64_t n);

/*
 * Records that a query used the debug info of `build_id_hex` (the
 * "lastUsed" date of GET /api/v1/debuginfo).  Cheap to call per query:
 * the store is written at most once a minute per build ID, and never while
 * an upload is installing a file.
 */
void sym_service_touch(struct sym_service *s, const char *build_id_hex);

struct sym_service_stats {
	uint64_t index_builds;     /* DWARF index builds since open */
	uint64_t index_opens;      /* indexes opened from disk */
	uint64_t cache_hits, cache_misses;
	uint64_t fetches_ok, fetches_not_found, fetches_error;
	uint64_t uploads_ok, uploads_refused;
};

void sym_service_stats(struct sym_service *s, struct sym_service_stats *out);

#endif
