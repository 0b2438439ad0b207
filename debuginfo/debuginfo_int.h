/*
 * debuginfo_int.h - internals of the debug-info service, shared by its
 * files and its tests: which file does what, the store records, the file
 * layout, and struct debuginfo with its locks.
 *
 * ==== Files ====
 *
 *   debuginfo.c   open (options, directories, workers), close, counters
 *   files.c       canonical IDs, paths, installing and comparing files,
 *                 the debuginfod server side (debuginfo_file_path)
 *   meta.c        the metadata record: codec, get/put, failures (bounded,
 *                 expiring), who may see a record, the typed records
 *                 (debuginfo_get, _list, _count_by_status)
 *   upload.c      uploads: check, install, drop what a replaced file gave
 *   touch.c       last use, written at most once a minute
 *   debuginfod.c  the client of upstream debuginfod servers (libcurl only here)
 *                 and where it may connect
 *   jobs.c        worker threads and the queue of one job per build ID
 *   fetch.c       a job's fetch from upstream into the store
 *   build.c       a job's index build, with the DWZ alt file by build ID
 *   lru.c         open indexes in slots that never move
 *   codec.c       the symbol-cache value codec
 *   symcache.c    the symbol cache: batch lookups, batch writes, drops
 *   hot.c         recent symbol-cache pairs in memory
 *   resolve.c     debuginfo_resolve and the address rule
 *   retention.c   debug info kept as long as retained profiles reference it
 *   unsym.c       binaries seen at ingest without names: a bounded table,
 *                 counters per (tenant, service) and its checking thread
 *   tenants.c     per-tenant settings: symbolization off, upstream lists
 *                 with their headers, failed lookups per list
 *   bucket.c      debug files and indexes shared through the object store:
 *                 keys, the thread that puts them, lookups of what is missing
 *
 * ==== Store records ====
 *
 * STORE_AUX_DEBUGINFO, key: the build ID in lower-case hex.  Value:
 *   u8       version (1)
 *   uvarint  source   (0 none, 1 upload, 2 debuginfod)
 *   uvarint  status   (enum debuginfo_status of the build ID)
 *   uvarint  kinds    (bit 1 << enum debuginfo_file_kind for each file stored;
 *                      bit 2, a kernel symbol map, is ignored by readers older
 *                      than it, which then see no file)
 *   uvarint  size     (bytes of the debuginfo file, else of the executable)
 *   uvarint  hash     (informational: the first 8 bytes of sha256 below, big
 *                      endian; hash_bytes of the file in records written before
 *                      sha256 existed.  Whether a re-upload is identical is
 *                      decided by comparing bytes)
 *   svarint  uploaded (ns since the epoch the file arrived)
 *   svarint  last_used (ns; updated at most once a minute)
 *   svarint  retry_at (ns; when a not_found / upstream_error may be retried)
 *   uvarint  reason length, then that many bytes of text
 *   uvarint  owners length, then that many bytes: who may see the files ("*"
 *            every tenant; else the tenant ids that uploaded them or whose
 *            own upstreams served them (tenants.c), joined by ','; "" when
 *            no file is stored)
 *   uvarint  sha256 length (0 or 32), then the SHA-256 of the file `size`
 *            describes
 *   svarint  failed (ns; when the last failure was recorded: records without
 *            a file are forgotten failure_ttl after it)
 *   svarint  last_profile (ns; the newest profile the store retains that
 *                      references the build ID, as the last retention pass
 *                      saw it; 0 none seen; absent in records written before
 *                      debug info retention, read as 0)
 *   uvarint  bucket   (what is in the object store, bucket.c: bit
 *                      1 << enum debuginfo_file_kind for each file put under
 *                      the key of each of its owners, bit 1 << 3 for the
 *                      index; absent in older records, read as 0: nothing
 *                      is there yet, the next pass puts it)
 * A reader ignores bytes after the fields it knows (later versions append).
 * A record that ends after the reason predates owners: its files are
 * every tenant's, as all files were then.
 *
 * STORE_AUX_SYMCACHE, key: build ID bytes, then the file offset as 8 bytes
 * big-endian, then one byte: DEBUGINFO__CACHE_RULES << 1 | 1 for a leaf PC,
 * | 0 for a return address, so one build ID's entries are contiguous and
 * sorted by address.  The rules generation moves whenever the answer for
 * an address changes (the caller rule of symbolize.h, PLT names): entries
 * of older generations are never read again, and go with the build ID's
 * other entries when its debug info is replaced or deleted.  Value:
 *   u8       version (1)
 *   uvarint  n frames (0: the debug info knows nothing at this address)
 *   n times, innermost first:
 *     uvarint flags, uvarint line, uvarint column,
 *     uvarint length + bytes of the function name ("" when unknown),
 *     uvarint length + bytes of the file path ("" when unknown)
 * Strings are written without NUL; a reader ends one at its first NUL and
 * takes one that starts with NUL as unknown.  Bytes after the last frame
 * are ignored.  A record that does not decode is treated as a miss and
 * rewritten.
 *
 * ==== File layout ====
 *
 *   <data dir>/debuginfo/<id[0:2]>/<id>/debuginfo   uploaded .debug or unstripped ELF
 *   <data dir>/debuginfo/<id[0:2]>/<id>/executable  the executable, when known
 *   <data dir>/debuginfo/<id[0:2]>/<id>/kallsyms    a kernel symbol map, as uploaded
 *   <data dir>/debuginfo/<id[0:2]>/<id>/index       our index (symbolize_int.h)
 *   <data dir>/debuginfo/tmp/                       uploads in progress
 * Every file is written to a temporary name, fsynced and renamed.
 */
#ifndef UNHEX_DEBUGINFO_DEBUGINFO_INT_H
#define UNHEX_DEBUGINFO_DEBUGINFO_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/hmap.h"
#include "debuginfo/debuginfo.h"

struct arena;
struct sockaddr;
struct store_kv;

#define DEBUGINFO__MAX_WORKERS 4
#define DEBUGINFO__TOUCH_SLOTS 1024
#define DEBUGINFO__PATH_MAX 4096

#define DEBUGINFO__OWNERS_MAX 1024 /* the owners list, with its NUL */

/* A decoded STORE_AUX_DEBUGINFO record. */
struct debuginfo__meta {
	unsigned source, status, kinds; /* enum debuginfo_source, enum debuginfo_status */
	uint64_t size, hash;
	int64_t uploaded, last_used, retry_at;
	char reason[256];
	char owners[DEBUGINFO__OWNERS_MAX]; /* "*", "a,b" or "" (format above) */
	uint8_t sha256[32];
	int has_sha256;
	int64_t failed;                 /* when the last failure was recorded */
	int64_t last_profile;
	unsigned bucket;                /* DEBUGINFO__BUCKET_* bits: in the object store */
};

/* Bits of debuginfo__meta.bucket: a file kind's bit (1 << kind), and the index. */
#define DEBUGINFO__BUCKET_INDEX (1u << 3)
#define DEBUGINFO__BUCKET_ALL 15u

/* A background job: fetch (if needed) and build the index of one build ID. */
struct debuginfo__job {
	char id[DEBUGINFO_HEX_MAX];
	unsigned set;               /* the upstream list it fetches through (tenants.c) */
	int running;
	struct debuginfo__job *next;
};

/* An open index (lru.c); `refs` queries are using it. */
struct debuginfo__open_index {
	char id[DEBUGINFO_HEX_MAX];
	struct sym_index *idx;      /* owned */
	struct sym_elf_info layout; /* program headers for file offsets */
	int kernel_map;             /* built from a kernel symbol map: addresses
				       are offsets from the mapping's start */
	uint64_t used;              /* LRU tick */
	unsigned refs;
	int stale;                  /* replaced: the last reference closes it */
	int heap;                   /* not in the array: the reference frees it */
};

/* When the last_used of the build ID with this hash was last written. */
struct debuginfo__touch_slot {
	uint64_t hash;
	int64_t written;
};

/* ---- debuginfod.c: upstream fetches ---- */

#define DEBUGINFO__URL_MAX 1024
#define DEBUGINFO__MAX_UPSTREAMS DEBUGINFO_MAX_UPSTREAMS

/* One configured upstream. */
struct debuginfo__upstream {
	char url[DEBUGINFO__URL_MAX];  /* http(s)://host[:port][/prefix], no trailing '/' */
	char host[256];                /* without IPv6 brackets */
	int port;                      /* the URL's, or its scheme's default */
};

/*
 * Parses space-separated upstream URLs (NULL or "" for none) into an owned
 * array (NULL when none) of *n: http:// or https:// with a host, at most
 * DEBUGINFO__MAX_UPSTREAMS.  ERR_INVALID naming the bad one.
 */
int debuginfo__upstreams_parse(const char *urls, struct debuginfo__upstream **out, size_t *n,
			       struct err_msg *msg);
/* Sets s->server and s->upstream from `urls` and the headers file, and
 * readies libcurl. */
int debuginfo__upstreams_open(struct debuginfo *s, const char *urls, const char *headers_file,
			      struct err_msg *msg);
/* Frees the upstreams and drops libcurl's reference. */
void debuginfo__upstreams_close(struct debuginfo *s);
/* An address and port a fetch may reach although it is private: an upstream's. */
struct debuginfo__allowed {
	int family;           /* AF_INET or AF_INET6 */
	uint8_t addr[16];     /* network order; 4 bytes for AF_INET */
	int port;
};

/*
 * 1 when a fetch may connect to `sa`: a public address, or one of the
 * n_allow addresses of `allow` with its port.  Private means loopback,
 * link-local, RFC 1918, shared (100.64/10), unique-local, multicast,
 * unspecified or reserved, also inside IPv4-mapped IPv6.
 */
int debuginfo__address_allowed(const struct sockaddr *sa, const struct debuginfo__allowed *allow,
			       size_t n_allow);
/*
 * Fetches one file of a build ID from the upstreams, in order, into a
 * temporary file under <dir>/tmp; on success *path is its owned path (the
 * caller moves or removes the file).  ERR_NOT_FOUND when every upstream
 * answered 404, ERR_TIMEOUT past `deadline_ns` (monotonic) or when the
 * service's cancel flag is set, ERR_TOO_LARGE past max_upload,
 * ERR_UNAVAILABLE for other failures (a refused redirect among them);
 * `msg` says which.
 */
int debuginfo__debuginfod_fetch(struct debuginfo *s, const char *build_id_hex, int executable,
				int64_t deadline_ns, char **path, struct err_msg *msg);
struct debuginfo__uset;
/*
 * The same through the upstreams of `u` (borrowed), with its headers.  An
 * upstream that answers 401 or 403 is a failure saying it refused the
 * request; with headers, redirects are not followed (libcurl would send
 * the headers to the new host).
 */
int debuginfo__debuginfod_fetch_from(struct debuginfo *s, const struct debuginfo__uset *u,
				     const char *build_id_hex, int executable, int64_t deadline_ns,
				     char **path, struct err_msg *msg);
/* Readies libcurl once (tenants.c calls it when a tenant has upstreams). */
int debuginfo__curl_ready(struct debuginfo *s, struct err_msg *msg);

/* ---- fetch.c: the outbound budget ---- */

/*
 * Takes one upstream fetch from the budget of fetch_per_minute: 0, or
 * ERR_UNAVAILABLE with *retry_ns (wall clock) when the next one may start.
 */
int debuginfo__fetch_admit(struct debuginfo *s, int64_t *retry_ns);
/*
 * Takes one lookup from the per-minute budget of `tenant`'s queries: 0, or
 * ERR_UNAVAILABLE.  Tenants share DEBUGINFO__TENANT_SLOTS budgets by a
 * hash of their id, so the table is bounded whatever the tenants.
 */
int debuginfo__tenant_admit(struct debuginfo *s, const char *tenant);

#define DEBUGINFO__TENANT_SLOTS 256

/* How the reason of a build ID named from Go's table alone begins (build.c). */
#define DEBUGINFO__GOPCLNTAB "named from .gopclntab"

/* How the reason of a fetch refused by fetch_per_minute begins: the build
 * ID was not looked up, whatever its upstream_error status says. */
#define DEBUGINFO__LIMITED "not fetched: upstream lookups are limited"

/* ---- codec.c: symbol-cache values ---- */

/* Appends the record of frames f[0..n) (ERR_TOO_LARGE past out's cap). */
int debuginfo__frames_encode(const struct sym_frame *f, size_t n, struct buf *out);
/*
 * Decodes a record into f (room for `max` frames); the strings are copied
 * into the arena `strs`.  ERR_CORRUPT when the bytes are not a record of at
 * most `max` frames (f and *n are then undefined), ERR_NOMEM.
 */
int debuginfo__frames_decode(const void *val, size_t len, struct arena *strs,
			     struct sym_frame *f, size_t max, size_t *n);
/*
 * The same, with the strings copied into the scratch buffer `scr` (emptied
 * first), so they stay valid until the next call with that buffer.
 */
int debuginfo__frames_decode_scratch(const void *val, size_t len, struct buf *scr,
				     struct sym_frame *f, size_t max, size_t *n);
/* The same into `scr` as it is, which has room for len + 2 * max more bytes. */
int debuginfo__frames_decode_into(const void *val, size_t len, struct buf *scr,
				  struct sym_frame *f, size_t max, size_t *n);

/* ---- files.c: paths and files ---- */

/*
 * A build ID in canonical form (lower-case hex of 2..128 digits) into
 * `out`, and its bytes into `bytes` (SYM_BUILD_ID_MAX, may be NULL) and
 * *len (may be NULL).  ERR_INVALID for NULL or anything else.
 */
int debuginfo__canon_id(const char *hex, char out[DEBUGINFO_HEX_MAX], uint8_t *bytes,
			size_t *len);
/* "<dir>/<id[0:2]>/<id>/<name>" (or the directory when name is NULL); ERR_TOO_LARGE. */
int debuginfo__path(const struct debuginfo *s, const char *id, const char *name, char *out,
		    size_t len);
/* "debuginfo" or "executable": the file name of a kind. */
const char *debuginfo__kind_name(enum debuginfo_file_kind kind);
/* 1 when `path` is a regular file. */
int debuginfo__file_exists(const char *path);
/* 1 when build ID `id` has a stored file: debuginfo, executable or kallsyms. */
int debuginfo__has_file(const struct debuginfo *s, const char *id);
/* mkdir -p; ERR_IO (errno says why) or ERR_TOO_LARGE. */
int debuginfo__mkdir_p(const char *path);
/* fsyncs the directory holding `file_path`, so a rename in it is durable. */
void debuginfo__fsync_dir(const char *file_path);
/* Hard-links (same file system) or copies `src` to `dst` via a temporary name. */
int debuginfo__install_copy(const char *src, const char *dst, struct err_msg *msg);
/*
 * Removes what writes cut short by a crash left (every file of <dir>/tmp,
 * "<file>.tmp.<pid>" and "index.XXXXXX" under the build IDs) and says how
 * many files and bytes.  Called at open, before any write can start.
 */
void debuginfo__clean_temp(const struct debuginfo *s, uint64_t *n, uint64_t *bytes);

/* Size and hash_bytes (seed 0) of a whole file; ERR_IO. */
int debuginfo__file_hash(const char *path, uint64_t *size, uint64_t *hash);
/* *same = 1 when files a and b hold the same bytes (compared in full); ERR_IO. */
int debuginfo__same_content(const char *a, const char *b, int *same);

/* ---- meta.c: the metadata record of a build ID ---- */

int debuginfo__meta_encode(const struct debuginfo__meta *m, struct buf *out);
/* ERR_CORRUPT for bytes that are not a record (*m is then zeroed). */
int debuginfo__meta_decode(const void *val, size_t len, struct debuginfo__meta *m);
/* 0 and *m, ERR_NOT_FOUND, ERR_CORRUPT or an error of the store. */
int debuginfo__meta_get(struct debuginfo *s, const char *id, struct debuginfo__meta *m);
int debuginfo__meta_put(struct debuginfo *s, const char *id, const struct debuginfo__meta *m);
/*
 * Records a failure status for `id` (a canonical ID), keeping what is
 * known about its files; `source` only fills an empty one.  A build ID
 * without a file gets a record only while fewer than max_failure_records
 * exist after forgetting those older than failure_ttl_ns (a sweep runs at
 * most every failure_ttl_ns / 24, or when the count is reached).  A
 * failure to write is logged, not returned: the status is advice, the
 * query goes on.
 */
void debuginfo__meta_fail(struct debuginfo *s, const char *id, unsigned source,
			  enum debuginfo_status st, int64_t retry_at, const char *reason);
/*
 * The same for a lookup (bucket or upstream) that started because `id` had
 * no file: nothing is recorded when one is there now, stored by an upload
 * or another lookup meanwhile, whose record must not turn into this
 * failure until its retry time.  Takes upload_mu.
 */
void debuginfo__meta_fail_lookup(struct debuginfo *s, const char *id, unsigned source,
				 enum debuginfo_status st, int64_t retry_at, const char *reason);
/*
 * 1 when `tenant` may see the files of record `m`: NULL (every tenant's
 * view) sees every record; a tenant sees a record with a file whose owners
 * are "*" or name it.
 */
int debuginfo__visible(const struct debuginfo__meta *m, const char *tenant);
/* 1 when the owners list `owners` names `tenant`. */
int debuginfo__owner_has(const char *owners, const char *tenant);
/* Adds `tenant` (NULL: every tenant) to the owners of `m`; ERR_CONFLICT
 * naming build ID `id` when the list is full. */
int debuginfo__owner_add(struct debuginfo__meta *m, const char *tenant, const char *id,
			 struct err_msg *msg);
/*
 * Forgets the records of build IDs without a file whose last failure is
 * older than failure_ttl_ns and whose retry time passed, and counts those
 * left into s->failures.  One sweep at a time; takes upload_mu.
 */
void debuginfo__meta_sweep(struct debuginfo *s);

/* The status a refused file gives its build ID. */
enum debuginfo_status debuginfo__status_of_reason(enum sym_reason r);
/* snprintf of `s` (NULL: "") into out[len], when len > 0. */
void debuginfo__copy_reason(char *out, size_t len, const char *s);

/* retention.c: the thread of debuginfo_retain (started when retention_ns > 0). */
void debuginfo__retain_init(struct debuginfo *s);
int debuginfo__retain_start(struct debuginfo *s);
void debuginfo__retain_stop(struct debuginfo *s);
void debuginfo__retain_release(struct debuginfo *s);

/* Drops what was derived from the file of `id`: index, open index, cached frames. */
void debuginfo__drop_derived(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen);

/* ---- lru.c: open indexes ---- */

/* Allocates the max_open slots; ERR_NOMEM. */
int debuginfo__lru_init(struct debuginfo *s);
/* Closes every index and frees the slots (no references may remain). */
void debuginfo__lru_release(struct debuginfo *s);
/*
 * A referenced entry for `id` (bytes `bid`): the open one, else its index
 * file opened and inserted.  ERR_NOT_FOUND when there is no usable index
 * file (a corrupt one is deleted, to be rebuilt), ERR_NOMEM.  The entry
 * stays valid until debuginfo__lru_unref.
 */
int debuginfo__lru_acquire(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen,
			   struct debuginfo__open_index **out);
void debuginfo__lru_unref(struct debuginfo *s, struct debuginfo__open_index *e);
/* Forgets the open index of `id` (its debug info was replaced). */
void debuginfo__lru_drop(struct debuginfo *s, const char *id);
/* Open indexes in the table. */
size_t debuginfo__lru_count(struct debuginfo *s);

/* ---- jobs.c, fetch.c, build.c: background work ---- */

/* Starts up to `workers` threads; ERR_UNAVAILABLE when none started. */
int debuginfo__jobs_start(struct debuginfo *s, int workers);
/* Cancels a fetch in flight, joins the workers and drops queued jobs. */
void debuginfo__jobs_stop(struct debuginfo *s);
/*
 * Queues the job of `id` unless one is queued or running, and waits for it
 * until `deadline_mono`: 0 when it is done, ERR_TIMEOUT when it is still
 * pending (it goes on), ERR_NOMEM.
 */
int debuginfo__job_await(struct debuginfo *s, const char *id, int64_t deadline_mono);
/* 1 when a job for `id` is queued or running. */
int debuginfo__job_exists(struct debuginfo *s, const char *id);
/*
 * The same for the job of `id` through upstream list `set` (tenants.c; 0
 * is the server's, what the two calls above use): it fetches through that
 * list when the build ID has no file that list's owner may see, then
 * builds the index.
 */
int debuginfo__job_await_set(struct debuginfo *s, const char *id, unsigned set,
			     int64_t deadline_mono);
int debuginfo__job_exists_set(struct debuginfo *s, const char *id, unsigned set);
/* Fetches the debug info of `id` from upstream into the store; the
 * outcome is in its metadata.  0 when a usable file was stored. */
int debuginfo__fetch(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen);
/*
 * Fetches `id` through the upstreams of list `set` > 0 for its tenant: with
 * no file stored, the fetched file is stored as the tenant's own; with a
 * file the tenant may not see, the tenant joins its owners when the
 * fetched bytes are the stored ones.  Failures go to the list's failure
 * table (debuginfo__tfail_put), not to the build ID's record.  0 when the
 * tenant may now see a usable file.
 */
int debuginfo__fetch_set(struct debuginfo *s, unsigned set, const char *id, const uint8_t *bid,
			 size_t blen);
/* Builds the index of `id` from its stored debuginfo (else executable)
 * file unless it exists; a failure is recorded in its metadata. */
int debuginfo__build_index(struct debuginfo *s, const char *id, const uint8_t *bid,
			   size_t blen);

/* ---- symcache.c: the persisted symbol cache ---- */

#define DEBUGINFO__KEY_MAX (SYM_BUILD_ID_MAX + 9)
/* The generation of the resolution rules in symbol-cache keys: 1, the
 * caller rule of sym_index_lookup_caller (0 was ret - 1 for every caller);
 * 2, PLT stubs named "sym@plt". */
#define DEBUGINFO__CACHE_RULES 2

/* The key of request `r` of a build ID (blen + 9 bytes into k). */
void debuginfo__cache_key(uint8_t *k, const uint8_t *bid, size_t blen,
			  const struct debuginfo_addr_req *r);
/*
 * Looks the `n` requests of build ID `bid` up in the hot cache, then the
 * rest in the store with one multi-get (what it finds joins the hot
 * cache).  Calls fn for each request answered, in any order, and sets
 * missing[i] (zeroed by the caller) for the others, whose count goes to
 * *n_missing.  A record that does not decode is a miss.  Returns 0, the
 * first non-zero return of fn, or an error.
 */
int debuginfo__symcache_lookup(struct debuginfo *s, const uint8_t *bid, size_t blen,
			       const struct debuginfo_addr_req *reqs, size_t n, sym_frames_fn fn,
			       void *ctx, uint8_t *missing, size_t *n_missing);

/* Resolved frames of one build ID on their way to the store, in batches. */
struct debuginfo__symcache_writer {
	struct debuginfo *s;
	const uint8_t *bid;         /* borrowed */
	size_t blen, klen;
	uint8_t *keys;              /* owned: WRITE_BATCH keys */
	size_t *offs;               /* owned: where each value starts in vals */
	struct buf vals;
	size_t k;                   /* pairs in the batch */
};

int debuginfo__symcache_writer_init(struct debuginfo__symcache_writer *w, struct debuginfo *s,
				    const uint8_t *bid, size_t blen);
/* Adds the frames of request `r`, writing the batch when it is full. */
int debuginfo__symcache_add(struct debuginfo__symcache_writer *w,
			    const struct debuginfo_addr_req *r, const struct sym_frame *f, size_t n);
/* Writes what the batch holds (and adds it to the hot cache). */
int debuginfo__symcache_flush(struct debuginfo__symcache_writer *w);
/* Frees the batch; what was not flushed is not written. */
void debuginfo__symcache_writer_release(struct debuginfo__symcache_writer *w);
/* Deletes every cached frame of a build ID, and empties the hot cache. */
void debuginfo__symcache_drop(struct debuginfo *s, const uint8_t *bid, size_t blen);

/* ---- touch.c ---- */

/* The next use of build ID `bid` is written again (its file just changed). */
void debuginfo__touch_forget(struct debuginfo *s, const uint8_t *bid, size_t blen);

/* ---- hot.c: recent symbol-cache pairs in memory ---- */

struct debuginfo__hot_entry {
	uint32_t koff, klen;
	uint32_t voff, vlen;
};

/*
 * A base/hmap.h index (hash_bytes of the key) over entries whose key and
 * value bytes live in `pool`, in the order they came.  Readers hold the
 * read lock while they use pointers into the pool, writers the write lock.
 */
struct debuginfo__hot {
	pthread_rwlock_t lock;
	struct hmap index;
	struct debuginfo__hot_entry *v; /* owned */
	size_t n, cap;
	struct buf pool;
};

void debuginfo__hot_init(struct debuginfo__hot *c);
void debuginfo__hot_release(struct debuginfo__hot *c);
/* Adds `n` pairs (copied; failures only skip a pair). */
void debuginfo__hot_put(struct debuginfo__hot *c, const struct store_kv *kv, size_t n);
/* Forgets every pair. */
void debuginfo__hot_clear(struct debuginfo__hot *c);

/* A hit of debuginfo__hot_probe: the value is valid during the call only. */
typedef int (*debuginfo__hot_hit_fn)(void *ctx, size_t i, const void *val, size_t vlen);

/*
 * Looks up the `n` keys of `klen` bytes each at `keys`, under one read
 * lock: calls `hit` for each key found, and lists the indexes of the
 * others in cold[0..*n_cold).  `hashes` is scratch for n hashes.  Stops at
 * the first non-zero return of `hit` and returns it.
 */
int debuginfo__hot_probe(struct debuginfo__hot *c, const uint8_t *keys, size_t klen, size_t n,
			 uint64_t *hashes, debuginfo__hot_hit_fn hit, void *ctx, size_t *cold,
			 size_t *n_cold);

/* ---- unsym.c: binaries seen at ingest without names ---- */

#define DEBUGINFO__UNSYM_TENANT_MAX 160   /* bytes of a tenant id (web: 150), with NUL */
#define DEBUGINFO__UNSYM_SERVICE_MAX 256  /* of a service name */
#define DEBUGINFO__UNSYM_BINARY_MAX 64    /* of a file's base name */
#define DEBUGINFO__UNSYM_IDLE_NS (86400LL * 1000000000LL) /* forgotten after */
#define DEBUGINFO__UNSYM_GAP_NS 1000000000LL /* checks at most this often */
#define DEBUGINFO__UNSYM_SOON_NS 2000000000LL /* the next check, while answers are due */

/*
 * One (tenant, service, binary): a binary is its build ID, or without one
 * its file's base name.  Longer names are cut at the caps above, so two
 * names that share that much share an entry.
 */
struct debuginfo__unsym_entry {
	char tenant[DEBUGINFO__UNSYM_TENANT_MAX];
	char service[DEBUGINFO__UNSYM_SERVICE_MAX];
	char build_id[DEBUGINFO_HEX_MAX];   /* "" none */
	char binary[DEBUGINFO__UNSYM_BINARY_MAX];
	uint64_t hash;
	uint32_t row;                       /* its counters */
	enum debuginfo_status status;       /* PENDING: no answer yet */
	char reason[192];
	uint64_t pending_profiles, pending_samples; /* arrived before the answer */
	uint64_t profiles, samples;         /* counted as unsymbolizable */
	int64_t first_seen, last_seen;      /* wall clock */
};

/* The counters of one (tenant, service); never removed. */
struct debuginfo__unsym_row {
	char tenant[DEBUGINFO__UNSYM_TENANT_MAX];
	char service[DEBUGINFO__UNSYM_SERVICE_MAX];
	uint64_t hash;
	uint64_t profiles[DEBUGINFO_STATUS_COUNT], samples[DEBUGINFO_STATUS_COUNT];
};

/*
 * The tracker.  `mu` guards the tables and counters, held only for
 * in-memory work (never across the store or a fetch); `pass_mu` makes
 * checks run one at a time; `cv` (CLOCK_MONOTONIC) wakes the thread.
 * Entries and rows grow up to their caps; rows[max_rows] is the overflow
 * row, made on first need.
 */
struct debuginfo__unsym {
	pthread_mutex_t mu, pass_mu;
	pthread_cond_t cv;
	struct debuginfo__unsym_entry *e;  /* owned */
	size_t n, cap, max;
	struct hmap index;                 /* hash -> entry */
	struct debuginfo__unsym_row *rows; /* owned; max_rows + 1 */
	size_t n_rows, max_rows;
	int overflow_row;                  /* rows[max_rows] is in use */
	struct hmap row_index;
	uint64_t untracked, lookups, checks;
	uint64_t gauge[DEBUGINFO_STATUS_COUNT];
	int64_t interval_ns;
	int64_t lookup_interval_ns;        /* between two lookups the checks start */
	int64_t next_lookup;               /* monotonic: the next one may start */
	int64_t idle_ns;                   /* DEBUGINFO__UNSYM_IDLE_NS; tests lower it */
	int wake, stop, started;
	pthread_t thread;
};

/* Sets up the tracker of `s` (max_entries 0: 4096; interval 0: 10 s); ERR_NOMEM. */
int debuginfo__unsym_init(struct debuginfo *s, size_t max_entries, int64_t interval_ns);
int debuginfo__unsym_start(struct debuginfo *s);
void debuginfo__unsym_stop(struct debuginfo *s);
void debuginfo__unsym_release(struct debuginfo *s);
/* Asks for a check soon (a file was stored). */
void debuginfo__unsym_wake(struct debuginfo *s);

/* ---- tenants.c: per-tenant settings ---- */

/*
 * A list of upstreams and the headers sent to them.  List 0 is the
 * server's (--debuginfod-urls; owner "*": what it fetches is everyone's);
 * list k > 0 belongs to one tenant (owner: its id), whose fetches go only
 * there.  Set up before the lists are used and read-only after.
 */
struct debuginfo__uset {
	char owner[DEBUGINFO__UNSYM_TENANT_MAX];
	struct debuginfo__upstream *ups; /* owned; n of them */
	size_t n;
	char **headers;                  /* owned "Name: value" strings */
	size_t n_headers;
};

/* A tenant with its own settings. */
struct debuginfo__tenant {
	char name[DEBUGINFO__UNSYM_TENANT_MAX];
	int symbolize;
	unsigned set;                    /* its upstream list; 0 the server's */
};

/* debuginfo_tenants_set's table (s->tenants), read-only once published. */
struct debuginfo__tenants {
	int dflt_symbolize;
	struct debuginfo__tenant *v;     /* owned; sorted by name */
	size_t n;
	struct debuginfo__uset *sets;    /* owned; list k is sets[k - 1] */
	size_t n_sets;
	struct debuginfo__tenants *retired; /* owned: the table this one replaced */
};

/* A failed lookup of one build ID through list `set` > 0 (in memory). */
struct debuginfo__tfail {
	unsigned set;                    /* 0: the slot is free */
	char id[DEBUGINFO_HEX_MAX];
	enum debuginfo_status status;
	int64_t retry_at;                /* wall clock */
	char reason[256];
};

/* Fills list `u` (zeroed by the caller) from urls and a headers file. */
int debuginfo__uset_init(struct debuginfo__uset *u, const char *owner, const char *urls,
			 const char *headers_file, struct err_msg *msg);
void debuginfo__uset_release(struct debuginfo__uset *u);
/*
 * Not a tenant's list: the server's list (0) asked for a build ID whose
 * stored file the asking tenant may not see, one another tenant's own
 * upstreams served (another tenant's upload is never looked up).  Its
 * job fetches through the server's upstreams and, when they serve the
 * stored bytes, makes the file every tenant's; its failures go to the
 * failure table under this number.
 */
#define DEBUGINFO__SET_SERVER ((unsigned)-1)

/* The list a tenant's fetches use: 0 (the server's) unless it has its own. */
unsigned debuginfo__tenant_set(struct debuginfo *s, const char *tenant);
/* List `set` (0 and DEBUGINFO__SET_SERVER: the server's); NULL for a number no list has. */
const struct debuginfo__uset *debuginfo__uset_get(struct debuginfo *s, unsigned set);
/* Remembers (a slot per hash of set and ID: a collision forgets the older). */
void debuginfo__tfail_put(struct debuginfo *s, unsigned set, const char *id,
			  enum debuginfo_status st, int64_t retry_at, const char *reason);
/* 1 and the failure of `id` through list `set`, else 0. */
int debuginfo__tfail_get(struct debuginfo *s, unsigned set, const char *id,
			 struct debuginfo__tfail *out);
/* Forgets it (the list's lookup found the file). */
void debuginfo__tfail_clear(struct debuginfo *s, unsigned set, const char *id);
/* Frees the table and the lists (at close). */
void debuginfo__tenants_release(struct debuginfo *s);

/* ---- bucket.c: debug info in the object store ---- */

/* The reason of a build ID neither stored, in the bucket nor upstream. */
#define DEBUGINFO__NOT_IN_BUCKET \
	"not uploaded (unhex upload) to this server or any other sharing its bucket, and no " \
	"debuginfod upstream is configured"

#define DEBUGINFO__BUCKET_MISS_SLOTS 4096

/* A build ID the bucket did not have, when it was asked (monotonic). */
struct debuginfo__bucket_miss {
	uint64_t hash;
	int64_t at;
};

/* Reads the options and readies the locks (always); ERR_NOMEM. */
int debuginfo__bucket_init(struct debuginfo *s, const struct debuginfo_options *opt);
/* Starts the thread that puts files in the bucket (with a bucket only). */
int debuginfo__bucket_start(struct debuginfo *s);
void debuginfo__bucket_stop(struct debuginfo *s);
void debuginfo__bucket_release(struct debuginfo *s);
/* Asks the thread for a pass soon (a file or an index was stored). */
void debuginfo__bucket_wake(struct debuginfo *s);
/*
 * One pass: puts every file and built index a record lacks the bucket bit
 * of (bucket.c says how), in the caller's thread.  0, or the first error
 * of the bucket (the pass stops there); *pending (may be NULL): build IDs
 * left for the next pass.
 */
int debuginfo__bucket_sync(struct debuginfo *s, uint64_t *pending);
/* 1 when the bucket may be asked about `id` now: a bucket, and no miss
 * of `id` remembered within miss_ttl_ns. */
int debuginfo__bucket_due(struct debuginfo *s, const char *id);
/*
 * Looks canonical build ID `id` up in the bucket (one LIST) and installs
 * what it finds as uploads of its owners.  0 when a file is now stored;
 * ERR_NOT_FOUND (a miss, remembered) or the bucket's error.
 */
int debuginfo__bucket_fetch(struct debuginfo *s, const char *id);
/*
 * Downloads the index of `id` built from the files its record describes to
 * `dst`, validated (sym_index_open) before it is renamed there.  0,
 * ERR_NOT_FOUND (the bucket has none), ERR_CORRUPT (it is not a valid
 * index: build it), or the bucket's error.
 */
int debuginfo__bucket_get_index(struct debuginfo *s, const char *id, const uint8_t *bid,
				size_t blen, const char *dst);

/* ---- upload.c ---- */

/*
 * debuginfo_upload_commit_as; `from_bucket`: the bytes came from the
 * bucket, so the record says they are there, and the upload is not
 * counted as one.
 */
int debuginfo__upload_commit(struct debuginfo_upload *u, const char *build_id_hex,
			     enum debuginfo_file_kind kind, const struct debuginfo_upload_by *by,
			     int from_bucket, struct debuginfo_upload_result *res,
			     struct err_msg *msg);

/* ---- struct debuginfo ---- */

/*
 * The service.  Its locks:
 *   mu         jobs, stopping, the LRU (lru, n_lru, tick, refs)
 *   upload_mu  installing the files and metadata of an upload, and the
 *              read-modify-write of last_used
 *   touch_mu   the touched table
 *   hot.lock   the hot cache
 * Only upload_mu is held while taking another (an upload drops an open
 * index, clears the hot cache and forgets a touch), and bucket_pass_mu
 * while taking upload_mu (a pass marks what it put), so there is no
 * cycle; bucket_mu and miss_mu are taken with nothing else held.
 * Counters are atomics; everything else is set at open and read-only.
 */
struct debuginfo {
	struct store *st;           /* borrowed */
	char *dir;                  /* owned: <data dir>/debuginfo */
	int upstream;               /* debuginfod URLs were given */
	struct debuginfo__uset server; /* list 0: the server's upstreams and headers */
	int curl_ready;             /* curl_global_init succeeded: close cleans up */
	/* Per-tenant settings (tenants.c): each table read-only once published. */
	_Atomic(struct debuginfo__tenants *) tenants;
	pthread_mutex_t tfail_mu;   /* tfail, and making it */
	struct debuginfo__tfail *tfail; /* owned; DEBUGINFO_TENANT_FAILURES slots, made
				     * on the first failure to keep */
	int64_t retry_ns, budget_ns, fetch_timeout_ns;
	uint64_t max_upload;
	size_t max_open;
	int64_t fetch_interval_ns;  /* 60 s / fetch_per_minute */
	atomic_int_fast64_t fetch_tat; /* the budget's theoretical arrival time (GCRA) */
	int64_t tenant_interval_ns; /* 60 s / fetch_per_tenant_minute */
	atomic_int_fast64_t tenant_tat[DEBUGINFO__TENANT_SLOTS]; /* per hashed tenant */
	uint64_t max_failures;      /* max_failure_records */
	int64_t failure_ttl_ns;
	atomic_int_fast64_t failures; /* file-less records, an upper bound; -1 unknown */
	atomic_int_fast64_t last_sweep; /* wall clock of the last expiry sweep */
	atomic_flag sweeping;

	pthread_mutex_t mu;
	pthread_cond_t work_cv;     /* a job was queued, or stopping */
	pthread_cond_t done_cv;     /* a job finished */
	struct debuginfo__job *jobs; /* owned; queued and running, one per build ID */
	int stopping;
	atomic_int cancel;          /* set once, by close: in-flight fetches stop */
	pthread_t threads[DEBUGINFO__MAX_WORKERS];
	int n_threads;
	struct debuginfo__open_index *lru; /* owned; max_open slots (lru.c) */
	size_t n_lru;
	uint64_t tick;

	pthread_mutex_t upload_mu;
	atomic_uint_fast64_t tmp_seq;

	struct debuginfo__hot hot;
	atomic_uint_fast64_t generation; /* bumped when a build ID's debug info is replaced */

	pthread_mutex_t touch_mu;
	struct debuginfo__touch_slot touched[DEBUGINFO__TOUCH_SLOTS];

	atomic_uint_fast64_t index_builds, index_opens, cache_hits, cache_misses;
	atomic_uint_fast64_t fetches_ok, fetches_not_found, fetches_error;
	atomic_uint_fast64_t uploads_ok, uploads_refused;
	atomic_uint_fast64_t fetches_limited, redirects_refused, failures_dropped;
	atomic_uint_fast64_t fetches_deferred;
	atomic_uint_fast64_t unresolved[DEBUGINFO_STATUS_COUNT]; /* locations queries left hex */

	/* Retention (retention.c): its thread, and what its last pass saw. */
	int64_t retention_ns, retain_interval_ns;
	pthread_t retain_thread;
	int retain_started;
	pthread_mutex_t retain_mu;     /* one pass at a time; the fields below */
	pthread_cond_t retain_cv;
	int retain_stop;
	struct debuginfo_retention_stats retain_last, retain_total;

	struct debuginfo__unsym unsym;

	/* perfmap.c: one put or expiry decision at a time (count, evict,
	 * write), and what they deleted. */
	pthread_mutex_t perfmap_mu;
	size_t perfmap_max;
	int64_t perfmap_retention_ns;
	atomic_uint_fast64_t perfmaps_expired, perfmaps_evicted;
	atomic_int perfmap_indexed; /* a pass indexed the maps stored before the index */

	/* bucket.c: the object store (borrowed; NULL none), its thread (under
	 * bucket_mu), one pass at a time (bucket_pass_mu), the misses
	 * (miss_mu; made only with a bucket), and its counters. */
	struct objstore *os;
	int64_t bucket_miss_ttl_ns, bucket_retry_ns;
	pthread_mutex_t bucket_mu, bucket_pass_mu, miss_mu;
	pthread_cond_t bucket_cv;      /* CLOCK_MONOTONIC */
	int bucket_wake, bucket_stop, bucket_started;
	pthread_t bucket_thread;
	struct debuginfo__bucket_miss *misses; /* owned; DEBUGINFO__BUCKET_MISS_SLOTS */
	atomic_uint_fast64_t bucket_puts, bucket_index_puts, bucket_puts_found;
	atomic_uint_fast64_t bucket_put_conflicts, bucket_put_failures;
	atomic_uint_fast64_t bucket_hits, bucket_misses, bucket_lookup_failures;
	atomic_uint_fast64_t bucket_downloads, bucket_index_downloads;
	atomic_uint_fast64_t bucket_download_failures, bucket_index_invalid;
	atomic_uint_fast64_t bucket_bytes_in, bucket_bytes_out, bucket_pending;

	/* bucketgc.c: the build IDs waiting to leave the bucket (under gc_mu,
	 * taken with nothing else held, by the store's index pass only), and
	 * what left. */
	pthread_mutex_t gc_mu;
	int gc_hooked;
	struct debuginfo__doom *gc_doom; /* owned; ascending by id */
	size_t gc_n_doom;
	atomic_uint_fast64_t gc_deleted, gc_objects, gc_failures, gc_waiting;
	/* Use markers put (gc_marks: when each build ID's last was, in
	 * DEBUGINFO__BUCKET_MISS_SLOTS hashed slots, made at the first). */
	pthread_mutex_t gc_mark_mu;
	struct debuginfo__bucket_miss *gc_marks;
	atomic_uint_fast64_t gc_use_marks;
};

/* ---- bucketgc.c: debug info leaves the bucket by the retention rule ---- */

/* Use markers one retention pass puts at most (the rest: the next pass). */
#define DEBUGINFO__USE_MARKS_PER_PASS 1000u

/* A build ID found deletable by every pass since `since` (writer's wall clock). */
struct debuginfo__doom {
	char id[DEBUGINFO_HEX_MAX];
	int64_t since;
};

/* gc_start sets the store's references hook when there is a bucket;
 * gc_release clears it (and waits for a pass under way). */
void debuginfo__gc_init(struct debuginfo *s);
void debuginfo__gc_start(struct debuginfo *s);
/*
 * Puts a use marker of `id` (canonical hex) named by last_ns in the
 * bucket when this server's profiles used it at last_ns, within
 * retention_ns of now_ns, a quarter of the retention or more after the
 * last marker this server put; each put takes one of *budget.  0 or the
 * bucket's error (retried next pass).
 */
int debuginfo__gc_mark_used(struct debuginfo *s, const char *id, int64_t last_ns, int64_t now_ns,
			    int64_t retention_ns, unsigned *budget);
void debuginfo__gc_release(struct debuginfo *s);

/* An upload in progress: a temporary file under <dir>/tmp. */
struct debuginfo_upload {
	struct debuginfo *s;        /* borrowed */
	char path[DEBUGINFO__PATH_MAX];
	int fd;
	uint64_t size;
};

#endif
