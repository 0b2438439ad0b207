/*
 * debuginfo.h - the debug-info service: turns (build ID, file offset) into
 * frames for the query path, and owns everything that makes that cheap
 * after the first time (docs/symbolization.md has the whole flow):
 *
 *   - the debug-file store: <data dir>/debuginfo/<id[0:2]>/<id>/
 *     {debuginfo, executable, index}, each written to a temporary file,
 *     fsynced and renamed; metadata per build ID in the store namespace
 *     STORE_AUX_DEBUGINFO (format in debuginfo_int.h).  A build ID has one
 *     debuginfo and one executable file, whoever uploaded them.
 *   - the persisted symbol cache (STORE_AUX_SYMCACHE): resolved frames per
 *     (build ID, file offset, leaf/return), read with one multi-get per
 *     build ID and written with one batch, so an address is resolved once,
 *     ever.
 *   - an LRU of open indexes (struct sym_index), built once per build ID by
 *     a background worker and kept on disk across restarts.
 *   - the debuginfod client: build IDs that are not uploaded are fetched
 *     from the upstream URLs by the workers (one fetch per build ID at a
 *     time), with a not-found cache and a retry time in the metadata.
 *   - the bucket (debuginfo_options.objstore, optional): every file and
 *     index stored is put in the object store the servers of a
 *     deployment share, by a thread of its own; a build ID without a
 *     file is looked for there before the upstreams, and an index there
 *     is downloaded (and validated) instead of built.
 *
 * Trust.  The first file stored for a build ID wins: another upload of
 * the same bytes changes nothing, other bytes are refused (ERR_CONFLICT)
 * unless the upload asks to replace and may (an uploader for every
 * tenant, or the file's only owner; the web layer also demands the admin
 * scope), and a replacement is logged with who, when and both SHA-256s.
 * Every file is a well-formed ELF (sym_elf_inspect_file) whose build-ID
 * note is the ID it is stored under.  Who may see a build ID's files (the
 * _as calls below, with a tenant): the tenants that uploaded them or
 * whose own upstreams served them, or every tenant when an all-tenants
 * uploader stored them or they came from the server's upstreams; records of build IDs without a file (statuses of lookups
 * that failed) only the all-tenants view (tenant NULL) lists.  What a
 * tenant may not see answers as unknown, in the same words.
 *
 * Outbound.  Fetches go only to http(s) upstreams; redirects are followed
 * only to public addresses or to the upstreams themselves (a redirect to
 * loopback, link-local or private addresses is refused, so an upstream
 * cannot aim the server at its own network); at most fetch_per_minute
 * fetches start per minute; one query starts at most
 * DEBUGINFO_QUERY_FETCHES new lookups, one tenant's queries at most
 * fetch_per_tenant_minute a minute (struct debuginfo_asker); a tenant
 * with upstreams of its own (debuginfo_tenants_set) is fetched for only
 * there, with that list's headers, and no redirect is followed for a list
 * with headers; records of
 * failed lookups expire after
 * failure_ttl_ns and are at most max_failure_records (debuginfod.c and
 * fetch.c say how).
 *
 * Resolution itself (ELF, DWARF, the index format, demangling) is the
 * symbolize module's (symbolize/symbolize.h); this module decides which
 * file to resolve from, and remembers the answers.
 *
 * Invariants.  A stored file was checked before it was stored: an ELF
 * whose build-ID note is the ID it is stored under, with DWARF or function
 * symbols (code, for an executable).  An index and cached frames always
 * come from the file stored now: replacing a file drops its index, its
 * open index (once no query holds it) and its cached frames, then moves
 * debuginfo_generation.  Every build ID with a file has a record, and so
 * does every build ID a query needed and found nowhere.
 *
 * Threading: every function is thread-safe.  Queries wait for a build or a
 * fetch at most until their deadline; the work goes on in the background
 * and the next query finds the result.
 *
 * Ownership: the caller of debuginfo_open owns the service and closes it
 * after every other call has returned; the service borrows the store.  An
 * upload belongs to its caller until debuginfo_upload_commit or _abort,
 * which free it.  Records and counters are copied out; frames handed to a
 * sym_frames_fn, and records handed to a debuginfo_record_fn, are borrowed
 * for the call only.
 */
#ifndef UNHEX_DEBUGINFO_DEBUGINFO_H
#define UNHEX_DEBUGINFO_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize/symbolize.h"

struct buf;
struct err_msg;
struct objstore;
struct store;
struct debuginfo;

/* A build ID in lower-case hex, with its NUL. */
#define DEBUGINFO_HEX_MAX (2 * SYM_BUILD_ID_MAX + 1)

/* Why the frames of a build ID are (or are not) named. */
enum debuginfo_status {
	DEBUGINFO_STATUS_OK = 0,
	DEBUGINFO_STATUS_NO_BUILD_ID,    /* the mapping has no build ID */
	DEBUGINFO_STATUS_NOT_FOUND,      /* not uploaded, not upstream */
	DEBUGINFO_STATUS_MISMATCH,       /* the only file offered had another build ID */
	DEBUGINFO_STATUS_INVALID_ELF,
	DEBUGINFO_STATUS_NO_SYMBOLS,     /* no .debug_info and no FUNC symbols */
	DEBUGINFO_STATUS_UPSTREAM_ERROR, /* debuginfod failed or timed out */
	DEBUGINFO_STATUS_PENDING,        /* a fetch or index build is in progress */
	DEBUGINFO_STATUS_DISABLED,       /* symbolization is off for the tenant */
	DEBUGINFO_STATUS_COUNT
};

/* "ok", "no_build_id", "not_found", "mismatch", "invalid_elf", "no_symbols",
 * "upstream_error", "pending", "disabled". */
const char *debuginfo_status_str(enum debuginfo_status s);

/* Where the debug info of a build ID came from. */
enum debuginfo_source {
	DEBUGINFO_SOURCE_NONE = 0,   /* nowhere yet: a query needed it */
	DEBUGINFO_SOURCE_UPLOAD,
	DEBUGINFO_SOURCE_DEBUGINFOD,
	DEBUGINFO_SOURCE_COUNT
};

struct debuginfo_options {
	const char *data_dir;        /* required; borrowed during open */
	const char *debuginfod_urls; /* space-separated http(s) upstreams; NULL/"" none;
				      * borrowed during open */
	const char *debuginfod_headers_file; /* HTTP headers sent to those upstreams
				      * (debuginfo_headers_load); NULL none; read
				      * during open */
	int fetch_timeout_s;         /* per upstream fetch; 0 picks 30 */
	unsigned fetch_per_minute;   /* upstream fetches started per minute at most
				      * (bursts up to it); 0 picks 60 */
	unsigned fetch_per_tenant_minute; /* new upstream lookups one tenant's queries
				      * start per minute at most; 0 picks 20; at
				      * most fetch_per_minute */
	uint64_t max_failure_records; /* records of build IDs without a file (failed
				      * lookups) kept at most; 0 picks 10000 */
	int64_t failure_ttl_ns;      /* such a record is forgotten this long after its
				      * last failure; 0 picks 24 h */
	int64_t retry_ns;            /* not_found/upstream_error retry; 0: 10 min */
	int64_t budget_ns;           /* what a query waits; 0 picks 5 s */
	uint64_t max_upload_bytes;   /* 0 picks 2 GiB */
	size_t max_open;             /* open indexes kept; 0 picks 32 */
	int workers;                 /* background threads (1..4); 0 picks 2 */
	/* Debug info no retained profile references is deleted once its last
	 * reference (or its upload) is this old; 0 keeps it forever.  A
	 * thread runs debuginfo_retain every retain_interval_ns (0: 1 min),
	 * also with no retention (it records each build ID's last profile). */
	int64_t retention_ns;
	int64_t retain_interval_ns;
	/* Binaries seen at ingest without names (debuginfo_note_ingested):
	 * at most max_unsym_entries (tenant, service, binary) kept (0 picks
	 * 4096, at most 2^20), checked every unsym_interval_ns (0: 10 s). */
	size_t max_unsym_entries;
	int64_t unsym_interval_ns;
	/* JIT perf maps: at most perfmap_max per tenant unless a put says (0
	 * picks 1000, at most 2^20; past it the least recently uploaded goes), each deleted by the
	 * retention thread once its last upload is perfmap_retention_ns old
	 * (0 picks 7 days). */
	size_t perfmap_max;
	int64_t perfmap_retention_ns;
	/* The object store every server of a deployment shares (borrowed; must
	 * outlive the service; NULL: debug info stays on this server).  Files
	 * and indexes stored here are put in it by a background thread (a
	 * failed put is retried every bucket_retry_ns, 0 picks 30 s); a build
	 * ID without a file is looked for there before debuginfod, and one
	 * the bucket lacks is asked again after bucket_miss_ttl_ns (0 picks
	 * 60 s).  docs/object-storage.md has the keys. */
	struct objstore *objstore;
	int64_t bucket_retry_ns;
	int64_t bucket_miss_ttl_ns;
};

/*
 * Opens the service over `st` (borrowed; must outlive the service) and
 * starts its workers.  Upstream URLs must be http:// or https:// with a
 * host and no user or password (ERR_INVALID naming the bad one; file://
 * and every other scheme are refused).  Returns an owned *out.
 */
int debuginfo_open(struct store *st, const struct debuginfo_options *opt,
		   struct debuginfo **out, struct err_msg *msg);

/* Stops the workers (an in-flight fetch is cancelled) and frees.  NULL: no-op. */
void debuginfo_close(struct debuginfo *d);

int64_t debuginfo_budget_ns(const struct debuginfo *d);
uint64_t debuginfo_max_upload(const struct debuginfo *d);

/* ---- per-tenant settings ---- */

/*
 * Tenants may differ from the server in two ways (docs/symbolization.md,
 * "Per-tenant settings"):
 *
 *   - symbolization off: the tenant's queries resolve nothing (status
 *     disabled, no fetch, no index, no cache), and ingest does not track
 *     its binaries as unsymbolizable;
 *   - upstreams of its own: a list of debuginfod URLs (possibly empty) that
 *     replaces the server's for this tenant, with HTTP headers read from a
 *     file (credentials).  Its fetches go only there.  A file fetched
 *     through them is the tenant's own, like a file it uploaded: other
 *     tenants see it only once their own upstreams serve the same bytes
 *     (or they upload them).  Files fetched through the server's upstreams
 *     are every tenant's, as before.  Failed lookups through a tenant's
 *     upstreams are remembered in memory per tenant (retried after
 *     retry_ns), never in the build ID's record, which is the server's.
 *
 * At most DEBUGINFO_MAX_UPSTREAMS URLs and DEBUGINFO_MAX_HEADERS headers
 * per list; a tenant's failures at most DEBUGINFO_TENANT_FAILURES in all.
 */
#define DEBUGINFO_MAX_UPSTREAMS 16
#define DEBUGINFO_MAX_HEADERS 8
#define DEBUGINFO_TENANT_FAILURES 4096

struct debuginfo_tenant_conf {
	const char *tenant;       /* borrowed during the call */
	int symbolize;            /* 0: symbolization is off for the tenant */
	int own_upstreams;        /* 1: `urls` replace the server's upstreams */
	const char *urls;         /* space- or comma-separated; NULL/"" none */
	const char *headers_file; /* NULL: no headers */
};

/*
 * Installs the per-tenant settings: `n` tenants (each at most once) and
 * whether the others symbolize.  URLs are checked as debuginfo_open
 * checks them; header files are read now (debuginfo_headers_load).
 * ERR_INVALID naming the tenant, and the file and line when a header file
 * is at fault (never its contents); the settings in force stay on
 * failure.  A later call replaces them whole (failed lookups of tenants'
 * lists are forgotten); the service keeps the replaced ones until close.
 */
int debuginfo_tenants_set(struct debuginfo *d, int default_symbolize,
			  const struct debuginfo_tenant_conf *v, size_t n, struct err_msg *msg);

/* The reason of status disabled. */
#define DEBUGINFO_DISABLED_REASON \
	"symbolization is off for this tenant (limits file: symbolization=off)"

/* 1 when `tenant`'s frames may be symbolized (NULL: the server's view, 1). */
int debuginfo_tenant_symbolizes(struct debuginfo *d, const char *tenant);

/*
 * Reads an HTTP headers file: one "Name: value" a line (a name of RFC 9110
 * token characters, a value of printable bytes and tabs), blank lines and
 * lines starting with '#' skipped, at most DEBUGINFO_MAX_HEADERS headers
 * and 64 KiB.  *out: an owned array of *n owned "Name: value" strings
 * (free each, then the array; NULL when none).  ERR_INVALID / ERR_IO /
 * ERR_TOO_LARGE name the file and the line, never a header's value.
 */
int debuginfo_headers_load(const char *path, char ***out, size_t *n, struct err_msg *msg);

/* ---- uploads ---- */

struct debuginfo_upload;

/*
 * DEBUGINFO_FILE_KALLSYMS: a kernel symbol map (/proc/kallsyms or System.map
 * text, symbolize.h section 4) named by the kernel's build ID, which the map
 * itself does not carry.  When a build ID has one, its index is built from
 * it and frames are looked up at their offset from the mapping's start
 * (the kernel's `_text`); it is never served by /buildid/, and refused
 * (ERR_CONFLICT) for a build ID that has an ELF file.
 */
enum debuginfo_file_kind {
	DEBUGINFO_FILE_DEBUGINFO = 0,
	DEBUGINFO_FILE_EXECUTABLE = 1,
	DEBUGINFO_FILE_KALLSYMS = 2,
};

/* Starts an upload into a temporary file under the data dir (owned *out). */
int debuginfo_upload_begin(struct debuginfo *d, struct debuginfo_upload **out,
			   struct err_msg *msg);

/* Appends bytes; ERR_TOO_LARGE past the upload cap, ERR_IO on a disk error. */
int debuginfo_upload_write(struct debuginfo_upload *u, const void *data, size_t len,
			   struct err_msg *msg);

struct debuginfo_upload_result {
	int unchanged;            /* identical content was already stored */
	enum sym_reason reason;   /* why a file was refused */
	uint64_t size;
	unsigned kinds;           /* 1 << enum debuginfo_file_kind stored for the ID */
};

/* Who uploads, for the trust rules and the log (all borrowed). */
struct debuginfo_upload_by {
	const char *tenant;  /* the uploading tenant; NULL: every tenant's file */
	int replace;         /* replace other bytes already stored, if allowed */
	const char *name;    /* the token's name, for the log; NULL: "server" */
	const char *from;    /* the client's address, for the log; NULL: "local" */
};

/*
 * Validates the uploaded bytes as `kind` for the claimed `build_id_hex` and
 * stores them under the trust rules above; frees `u` in every case.  A
 * file whose build ID differs is ERR_CONFLICT ("build ID mismatch: file
 * has X, claimed Y"); not a well-formed ELF, or no symbols for a
 * debuginfo upload, is ERR_INVALID with res->reason set; other bytes than
 * those stored are ERR_CONFLICT without by->replace, ERR_PERMISSION when
 * `by` may not replace them.  A refusal writes nothing to the store.
 * `by` NULL uploads for every tenant without replacing.
 */
int debuginfo_upload_commit_as(struct debuginfo_upload *u, const char *build_id_hex,
			       enum debuginfo_file_kind kind, const struct debuginfo_upload_by *by,
			       struct debuginfo_upload_result *res, struct err_msg *msg);

/* debuginfo_upload_commit_as with `by` NULL. */
int debuginfo_upload_commit(struct debuginfo_upload *u, const char *build_id_hex,
			    enum debuginfo_file_kind kind, struct debuginfo_upload_result *res,
			    struct err_msg *msg);

/* Discards an upload. NULL is a no-op. */
void debuginfo_upload_abort(struct debuginfo_upload *u);

/*
 * The path of a stored file of `build_id_hex` into `out`, 0 or ERR_NOT_FOUND
 * (also for a malformed ID, and for a file `tenant` may not see; NULL: every
 * tenant's view).  Used to serve the debuginfod protocol; the path is for
 * the server, never for a client.
 */
int debuginfo_file_path_as(struct debuginfo *d, const char *tenant, const char *build_id_hex,
			   enum debuginfo_file_kind kind, char *out, size_t out_len);
int debuginfo_file_path(struct debuginfo *d, const char *build_id_hex,
			enum debuginfo_file_kind kind, char *out, size_t out_len);

/*
 * 1 when build ID `build_id_hex` has a file `tenant` may see (NULL: every
 * tenant's view, any file), else 0.  For callers that resolve on behalf
 * of one tenant.
 */
int debuginfo_visible(struct debuginfo *d, const char *tenant, const char *build_id_hex);

/* ---- what is known per build ID ---- */

/*
 * The metadata of one build ID, as GET /api/v1/debuginfo shows it: every
 * build ID with a debug file, and those a query needed and found nowhere.
 */
struct debuginfo_record {
	char build_id[DEBUGINFO_HEX_MAX];   /* canonical lower-case hex */
	enum debuginfo_source source;
	enum debuginfo_status status;
	char reason[256];                   /* why, when the status is not ok */
	unsigned kinds;                     /* 1 << enum debuginfo_file_kind stored */
	uint64_t size;                      /* of the debuginfo file, else the executable */
	int64_t uploaded_ns;                /* wall clock; 0 when no file arrived */
	int64_t last_used_ns;               /* last query that used it, to the minute */
	int64_t retry_at_ns;                /* a failure is retried from then on; 0 now */
	int shared;                         /* every tenant may see the files */
	int has_sha256;
	uint8_t sha256[32];                 /* of the file `size` describes */
	int64_t last_profile_ns;            /* newest retained profile using it; 0 none seen */
};

/* "none", "upload", "debuginfod". */
const char *debuginfo_source_str(enum debuginfo_source s);

/*
 * The record of `build_id_hex` into *out: 0, ERR_INVALID (not a hex build
 * ID), ERR_NOT_FOUND (never heard of, or not `tenant`'s to see), or an
 * error of the store (ERR_CORRUPT for a record that does not decode); `msg`
 * says which.  `tenant` NULL is every tenant's view; debuginfo_get is that.
 */
int debuginfo_get_as(struct debuginfo *d, const char *tenant, const char *build_id_hex,
		     struct debuginfo_record *out, struct err_msg *msg);
int debuginfo_get(struct debuginfo *d, const char *build_id_hex, struct debuginfo_record *out,
		  struct err_msg *msg);

/* Called per record (borrowed for the call); non-zero stops the listing. */
typedef int (*debuginfo_record_fn)(void *ctx, const struct debuginfo_record *r);

/*
 * Calls `fn` for every record `tenant` may see (NULL: all), in build-ID
 * order; records that do not decode are skipped.  Returns 0, the non-zero
 * return of `fn`, or an error of the store.  debuginfo_list is every
 * tenant's view.
 */
int debuginfo_list_as(struct debuginfo *d, const char *tenant, debuginfo_record_fn fn, void *ctx,
		      struct err_msg *msg);
int debuginfo_list(struct debuginfo *d, debuginfo_record_fn fn, void *ctx, struct err_msg *msg);

/*
 * Counts the records by status into by[] (zeroed first).  On an error of
 * the store, by[] holds what was counted before it, and the error is
 * returned.
 */
int debuginfo_count_by_status(struct debuginfo *d, uint64_t by[DEBUGINFO_STATUS_COUNT],
			      struct err_msg *msg);

/* ---- checking the files (`unhex verify`) ---- */

/* One stored debug file as debuginfo_verify_files() found it. */
struct debuginfo_file_check {
	const char *build_id;  /* borrowed for the call */
	const char *path;      /* the file checked ("" when the record is unreadable) */
	uint64_t size;         /* its size by the record */
	int checked;           /* its SHA-256 was compared (records of old versions lack it) */
	const char *error;     /* NULL, or what is wrong (missing, size, SHA-256) */
};
typedef int (*debuginfo_verify_fn)(void *ctx, const struct debuginfo_file_check *c);

/*
 * Reads every debug file recorded in `st` (files under `data_dir`/debuginfo)
 * and compares its size and SHA-256 with its record; calls `fn` per file.
 * Needs no open service.  Returns 0 when all match, ERR_CORRUPT when any
 * does not, another error when the check itself failed (or fn's non-zero).
 */
int debuginfo_verify_files(struct store *st, const char *data_dir, debuginfo_verify_fn fn,
			   void *ctx, struct err_msg *msg);

/* ---- resolution ---- */

/* How file offsets of one mapping relate to the binary (from the profile). */
struct debuginfo_mapping_ref {
	uint64_t memory_start, memory_limit, file_offset;
	int addr_is_vaddr;   /* addresses are ELF vaddrs already (OTLP) */
};

/* One address to resolve: a file offset, and whether it is a leaf PC. */
struct debuginfo_addr_req {
	uint64_t addr;
	int leaf;            /* 0: a return address, looked up at vaddr - 1 */
};

/*
 * Resolves `n` addresses (borrowed; sorted is fastest) of one build ID:
 * first the persisted cache (one multi-get), then the index, waiting for a
 * fetch or index build at most until `deadline_ns` (monotonic clock).  `fn`
 * is called for every address that got an answer (n frames, possibly 0 when
 * the debug info knows nothing there), in any order, with `i` its index in
 * `reqs`; the frames' strings are borrowed for the call only.  *status says
 * why the rest got none (DEBUGINFO_STATUS_PENDING past the deadline) and
 * `reason` (reason_len bytes) explains it.  Returns 0, or an error of `fn`
 * or of the store.
 */
int debuginfo_resolve(struct debuginfo *d, const char *build_id_hex,
		      const struct debuginfo_mapping_ref *map,
		      const struct debuginfo_addr_req *reqs, size_t n, int64_t deadline_ns,
		      sym_frames_fn fn, void *ctx, enum debuginfo_status *status, char *reason,
		      size_t reason_len);

/* ---- JIT perf maps ---- */

/*
 * Stores the perf map `text` (len bytes, borrowed; base/perfmap.h says what
 * is accepted) of process `pid` (1..INT32_MAX) for `tenant` (borrowed; NULL
 * is the server without tenants), replacing the one stored before, and
 * moves debuginfo_generation in the same write.  When the tenant already
 * has `max` (0: the service's perfmap_max) maps of other processes, the least recently uploaded is
 * deleted in that write (counted in perfmaps_evicted).  *entries: the
 * distinct functions kept.  ERR_INVALID / ERR_TOO_LARGE name the first
 * bad line or the limit.
 */
int debuginfo_perfmap_put(struct debuginfo *d, const char *tenant, uint32_t pid,
			  const char *text, size_t len, size_t max, size_t *entries,
			  struct err_msg *msg);

/*
 * Names runtime addresses of process `pid`'s JIT code from its stored perf
 * map, like debuginfo_resolve: `fn` gets every address (a caller looked
 * up at addr - 1) with one frame, or none when the map has no function
 * there; *status is ok.  Without a map, nothing is resolved and *status
 * is not_found with the reason ("no perf map for process N").
 */
int debuginfo_perfmap_resolve(struct debuginfo *d, const char *tenant, uint32_t pid,
			      const struct debuginfo_addr_req *reqs, size_t n, sym_frames_fn fn,
			      void *ctx, enum debuginfo_status *status, char *reason,
			      size_t reason_len);

/*
 * Deletes every perf map (all tenants) last uploaded before
 * now_ns - perfmap_retention_ns; the retention thread calls it each pass.
 * Adds the count to *deleted (may be NULL) and to perfmaps_expired.
 */
int debuginfo_perfmap_expire(struct debuginfo *d, int64_t now_ns, uint64_t *deleted,
			     struct err_msg *msg);

/* New upstream lookups one query may start (struct debuginfo_asker). */
#define DEBUGINFO_QUERY_FETCHES 8u

/*
 * On whose behalf a query resolves: one per query, shared by all its
 * debuginfo_resolve_as calls (one thread at a time), which update it.
 */
struct debuginfo_asker {
	const char *tenant;      /* borrowed; NULL: every tenant's view */
	unsigned fetches_left;   /* new upstream lookups it may still start;
				  * DEBUGINFO_QUERY_FETCHES for a new query */
};

/*
 * debuginfo_resolve for one tenant's query `a` (NULL: every tenant's view,
 * no query budget).  A tenant whose symbolization is off resolves nothing
 * (status disabled, DEBUGINFO_DISABLED_REASON).  A build ID whose file
 * `a->tenant` may not see (debuginfo_visible) resolves nothing, with
 * status not_found and the words of a build ID nobody uploaded, so a
 * tenant cannot name frames from another's private file by sending its
 * build ID; a tenant with upstreams of its own asks them first
 * (debuginfo_tenants_set), and resolves once they served those bytes.  A lookup the build ID
 * needs upstream starts only while the query's and the tenant's budgets
 * allow (one fetch per build ID is shared by every query waiting for it);
 * past them the status is pending with the reason, nothing is recorded,
 * and a later query asks again.
 */
int debuginfo_resolve_as(struct debuginfo *d, struct debuginfo_asker *a,
			 const char *build_id_hex, const struct debuginfo_mapping_ref *map,
			 const struct debuginfo_addr_req *reqs, size_t n, int64_t deadline_ns,
			 sym_frames_fn fn, void *ctx, enum debuginfo_status *status,
			 char *reason, size_t reason_len);

/*
 * Whether debuginfo_resolve_as would answer `n` addresses of the build ID
 * without looking at them: a build ID that is not hex, a tenant whose
 * symbolization is off, or one that settled as missing (not uploaded and
 * nowhere to fetch it from, or a failed fetch not due again yet) for a
 * tenant without upstreams of its own that may see its file.  Returns 1
 * with *status and `reason` as debuginfo_resolve_as would set them (and
 * counts the n cache misses it would count), else 0: call it.  Spares a
 * caller sorting addresses nobody will look at.
 */
int debuginfo_resolve_settled(struct debuginfo *d, struct debuginfo_asker *a,
			      const char *build_id_hex, size_t n, enum debuginfo_status *status,
			      char *reason, size_t reason_len);

/*
 * A counter that changes whenever frames resolved earlier may no longer be
 * right: the debug info of a build ID was replaced.  Callers that keep
 * resolved frames of their own (the query's symbolization memo) drop them
 * when it moved.
 */
uint64_t debuginfo_generation(const struct debuginfo *d);

/*
 * Counts `n` distinct locations a query left without names because of
 * `status` (unhex_symbolize_unresolved_locations_total{status} in /metrics;
 * "ok" means the debug info knows nothing at those addresses).
 */
void debuginfo_note_unresolved(struct debuginfo *d, enum debuginfo_status status, uint64_t n);

/*
 * Records that a query used the debug info of `build_id_hex` (the
 * "lastUsed" date of GET /api/v1/debuginfo).  Cheap to call per query:
 * the store is written at most once a minute per build ID, and never while
 * an upload is installing a file.
 */
void debuginfo_touch(struct debuginfo *d, const char *build_id_hex);

/* The service's counters since open (cheap: no store access). */
struct debuginfo_stats {
	uint64_t index_builds;     /* DWARF index builds */
	uint64_t index_opens;      /* indexes opened from disk */
	uint64_t cache_hits, cache_misses;
	uint64_t fetches_ok, fetches_not_found, fetches_error;
	uint64_t uploads_ok, uploads_refused;
	uint64_t fetches_limited;  /* fetches not started: past fetch_per_minute */
	uint64_t fetches_deferred; /* lookups a query did not start: past its own
				    * or its tenant's budget */
	uint64_t redirects_refused; /* upstream redirects to a private address */
	uint64_t failures_dropped; /* failure records not kept: max_failure_records */
	uint64_t open_indexes;     /* a gauge: indexes open now */
	/* Distinct locations queries left without names, by why
	 * (debuginfo_note_unresolved). */
	uint64_t unresolved[DEBUGINFO_STATUS_COUNT];
	/* Perf maps deleted: past perfmap_retention_ns, past perfmap_max. */
	uint64_t perfmaps_expired, perfmaps_evicted;
	/* The bucket (debuginfo_options.objstore; all 0 without one).  Puts:
	 * files and indexes put, found there already with the same bytes,
	 * found with other bytes (kept apart), failed (retried).  Lookups of
	 * build IDs without a file: found, not there, failed.  Downloads:
	 * files and indexes stored from it, failed or refused, indexes that
	 * did not validate.  Bytes each way; build IDs still to put. */
	int bucket;
	uint64_t bucket_puts, bucket_index_puts, bucket_puts_found, bucket_put_conflicts;
	uint64_t bucket_put_failures;
	uint64_t bucket_hits, bucket_misses, bucket_lookup_failures;
	uint64_t bucket_downloads, bucket_index_downloads, bucket_download_failures;
	uint64_t bucket_index_invalid;
	uint64_t bucket_bytes_in, bucket_bytes_out, bucket_pending;
	/* Deletions from the bucket, where the bucket index is written
	 * (bucketgc.c): build IDs deleted with all their objects, objects
	 * deleted, failed passes or build IDs (retried), build IDs waiting
	 * out the delay before they may go (a gauge); use markers this server
	 * put for build IDs its own profiles use. */
	uint64_t bucket_deleted, bucket_deleted_objects, bucket_delete_failures;
	uint64_t bucket_delete_waiting, bucket_use_marks;
};

void debuginfo_stats(struct debuginfo *d, struct debuginfo_stats *out);

/* ---- retention: debug info lives as long as the profiles that need it ---- */

struct debuginfo_retention_stats {
	uint64_t referenced;     /* build IDs retained profiles reference */
	uint64_t missing;        /* of those, without a usable debug file */
	uint64_t deleted;        /* records (and files) deleted */
	uint64_t deleted_bytes;  /* bytes of the files deleted */
};

/*
 * One pass: every build ID that a profile the store retains references
 * (store_build_ids_each: its blocks and its head) gets the time of the
 * newest such profile recorded as its last_profile; then, when
 * `retention_ns` > 0, the files, index, cached frames and record of every
 * build ID that no retained profile references and whose last reference
 * (its upload or last use when none was ever seen) is older than
 * now_ns - retention_ns are deleted.  A build ID a retained profile
 * references is never deleted, whatever its age.  Adds to *out (may be
 * NULL).
 */
int debuginfo_retain(struct debuginfo *d, int64_t retention_ns, int64_t now_ns,
		     struct debuginfo_retention_stats *out, struct err_msg *msg);

/* What the retention passes did since open, and what the last one saw. */
void debuginfo_retention_totals(struct debuginfo *d, struct debuginfo_retention_stats *total,
				struct debuginfo_retention_stats *last);

/*
 * Calls fn for every build ID that retained profiles reference and whose
 * debug info is missing (no usable file: those frames will stay hex), with
 * the newest profile time referencing it and its status, in build ID order.
 */
typedef int (*debuginfo_missing_fn)(void *ctx, const char *build_id, int64_t last_profile_ns,
				    enum debuginfo_status status);
int debuginfo_missing_each(struct debuginfo *d, debuginfo_missing_fn fn, void *ctx,
			   struct err_msg *msg);

/* ---- binaries that arrive without names, judged at ingest ---- */

/*
 * Profiles are symbolized when queried, so a binary nobody queries would
 * never say its frames stay hex.  Ingest reports, per stored pprof, each
 * binary whose frames arrived as raw addresses; a background check (every
 * unsym_interval_ns, and at once when a new binary or an upload arrives)
 * decides whether its debug info is reachable: a stored file, else the
 * upstreams (at most DEBUGINFO_UNSYM_LOOKUPS new lookups a pass, through
 * the fetch jobs and their not-found cache).  Profiles of a binary whose
 * answer is known are counted at once by status; those that arrive before
 * the first answer are counted when it comes (or not at all if it is ok).
 * No build ID is judged at once; a mapping named "[...]" without one (the
 * kernel, [vdso]) is not counted, as no upload can name it.
 *
 * Bounds: max_unsym_entries (tenant, service, binary) entries, forgotten a
 * day after their last profile (what does not fit is counted as
 * untracked); as many (tenant, service) rows of counters, the rest counted
 * in one row with empty names.  Counters never go down.
 */
#define DEBUGINFO_UNSYM_LOOKUPS 4u

/*
 * Ingest (through web/) reports each written pprof in three steps, so a
 * profile with frames in several binaries of one status counts once for
 * that status.  First, per binary whose frames arrived without names,
 * debuginfo_unsym_class: the status its profiles count in now (a
 * debuginfo_status that is not ok or pending), DEBUGINFO_UNSYM_OWN when
 * the binary counts on its own (no answer yet, or named), or
 * DEBUGINFO_UNSYM_SKIP when it is not counted.  Then, per status a pprof
 * hit, debuginfo_note_ingested_class with its `profiles` stored profiles
 * and `samples` weighted samples that have a frame in any binary of that
 * status; and per binary (SKIP aside) debuginfo_note_ingested with `cls`
 * as the first step said, and its own profiles and samples.  Profiles
 * that arrive before a binary's first answer are counted per binary when
 * it comes.  `build_id_hex` "" or NULL: the mapping has none; `filename`
 * may be NULL; all borrowed.  Each call is one lock and one hash probe.
 */
#define DEBUGINFO_UNSYM_OWN (-1)
#define DEBUGINFO_UNSYM_SKIP (-2)
int debuginfo_unsym_class(struct debuginfo *d, const char *tenant, const char *service,
			  const char *build_id_hex, const char *filename);
void debuginfo_note_ingested_class(struct debuginfo *d, const char *tenant, const char *service,
				   int cls, uint64_t profiles, uint64_t samples);
void debuginfo_note_ingested(struct debuginfo *d, const char *tenant, const char *service,
			     const char *build_id_hex, const char *filename, int cls,
			     uint64_t profiles, uint64_t samples);

/* Counters of one (tenant, service): what was counted, by status. */
struct debuginfo_unsym_row {
	const char *tenant, *service;   /* borrowed for the call; "" "" for the overflow row */
	uint64_t profiles[DEBUGINFO_STATUS_COUNT];
	uint64_t samples[DEBUGINFO_STATUS_COUNT];
};
typedef int (*debuginfo_unsym_row_fn)(void *ctx, const struct debuginfo_unsym_row *r);

/* One tracked binary of one (tenant, service). */
struct debuginfo_unsym_entry {
	const char *tenant, *service, *build_id, *binary; /* borrowed for the call */
	enum debuginfo_status status;  /* pending until the first check answered */
	const char *reason;
	uint64_t profiles, samples;    /* counted as unsymbolizable */
	int64_t first_seen_ns, last_seen_ns;
};
typedef int (*debuginfo_unsym_entry_fn)(void *ctx, const struct debuginfo_unsym_entry *e);

struct debuginfo_unsym_stats {
	/* Binaries (build IDs; without one, each (tenant, service, file)) whose
	 * profiles arrived lately and whose debug info is missing, by status;
	 * as of the last check.  ok and pending are 0. */
	uint64_t build_ids[DEBUGINFO_STATUS_COUNT];
	uint64_t entries, max_entries;   /* tracked (tenant, service, binary) */
	uint64_t untracked_profiles;     /* not judged: the table was full */
	uint64_t lookups;                /* upstream lookups the checks started */
	uint64_t checks;                 /* passes run */
};

/*
 * Calls `fn` for every row of counters, then every entry of `tenant` (NULL:
 * all), under the tracker's lock: `fn` must not call the service.  A NULL
 * fn is skipped.  Returns 0 or fn's non-zero.
 */
int debuginfo_unsym_each(struct debuginfo *d, const char *tenant, debuginfo_unsym_row_fn row_fn,
			 debuginfo_unsym_entry_fn entry_fn, void *ctx);
void debuginfo_unsym_stats(struct debuginfo *d, struct debuginfo_unsym_stats *out);

/* Runs one check now, in the caller's thread (tests; the thread runs them too). */
void debuginfo_unsym_check(struct debuginfo *d);

#endif
