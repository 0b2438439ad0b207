/*
 * storage_int.h - private design of the store: on-disk layouts, in-memory
 * tables and the internals shared by the files of storage/ and its tests.
 *
 * ==========================================================================
 * 1. Column families
 * ==========================================================================
 *
 *   name       enum store_cf      merge operator   holds
 *   ---------  -----------------  ---------------  ---------------------------
 *   default    STORE_CF_META      -                nothing (RocksDB requires it)
 *   meta       STORE_CF_META      -                format record, tenants,
 *                                                  partitions
 *   counters   STORE_CF_META      unhex.add64.v1   per-tenant statistics
 *   series     STORE_CF_SERIES    -                series records, postings
 *   symbols    STORE_CF_SYMBOLS   -                strings, mappings, functions,
 *                                                  locations, stack trie nodes
 *   samples    STORE_CF_SAMPLES   unhex.chunk.v1   columnar sample chunks
 *                                 (+ compaction filter unhex.chunk-recode.v1)
 *   debuginfo  STORE_AUX_DEBUGINFO  -              auxiliary, global (section 7)
 *   symcache   STORE_AUX_SYMCACHE   -              auxiliary, global (section 7)
 *   settings   STORE_AUX_SETTINGS   -              auxiliary, global (section 7)
 *
 * A store created before the auxiliary families existed gets them created
 * by the next read-write open; a read-only open lists the families on disk
 * (rocksdb_list_column_families), opens those that exist and treats a
 * missing auxiliary family as empty.
 *
 * Every key of the tenant families starts with a tenant id, u32 big-endian, so that one tenant is one
 * contiguous key range in every column family ([be32(t), be32(t+1))): sizes
 * per tenant come from rocksdb_approximate_sizes_cf over that range, and
 * retention can later drop a range.  Tenant id 0 is reserved for records that
 * belong to no tenant.  All multi-byte integers in keys are big-endian so that
 * byte order is numeric order.  "uv" below is a LEB128 varint, "sv" a zigzag
 * LEB128 varint (base/varint.h).
 *
 * ==========================================================================
 * 2. meta
 * ==========================================================================
 *
 * Format record, written once when the store is created:
 *
 *   key   offset size  field
 *         0      4     tenant = 0
 *         4      1     'F'
 *   value 0      4     magic "UNHX"
 *         4      1     format version (STORE_FORMAT_VERSION = 1)
 *         5      8     window_ns, u64 BE: the sample chunk window.  The value
 *                      given at creation is used for the life of the store.
 *
 * Tenant name -> id (ids are dense from 1; the next id is max + 1 at open):
 *
 *   key   0      4     tenant = 0
 *         4      1     'T'
 *         5      n     tenant name (no NUL)
 *   value 0      4     tenant id, u32 BE
 *
 * Partition (tenant, service_name) -> partition id (dense from 1 per tenant):
 *
 *   key   0      4     tenant id
 *         4      1     'R'
 *         5      n     service name (no NUL)
 *   value 0      4     partition id, u32 BE
 *
 * Migrations done (migrate.c), one record per migration that ran:
 *
 *   key   0      4     tenant = 0
 *         4      1     'M'
 *         5      n     migration name, e.g. "profile-types.v1"
 *   value              "1"
 *
 * Id counters are not stored: the next series id is 1 + the last 'S' key of
 * the tenant, the next symbol id of a kind is 1 + the entries of that kind
 * (ids are dense), the next partition id is 1 + the largest 'R' value.  They
 * are derived by the range scans that build the in-memory indexes anyway, so
 * they can never disagree with the data.
 *
 * ==========================================================================
 * 3. counters (merge operator unhex.add64.v1: wrapping u64 sum)
 * ==========================================================================
 *
 *   key   0      4     tenant id
 *         4      1     counter kind: enum ctr (CTR_SERIES = 1 ... CTR_MAPPINGS)
 *   value 0      8     u64 little-endian; each merge operand is the same
 *
 * Operands are added in the same write batch as the records they count, so
 * the counters are exact and survive restarts.  A value of another length is
 * ignored by the merge (counted as 0) and reported as ERR_CORRUPT on read.
 *
 * ==========================================================================
 * 4. series
 * ==========================================================================
 *
 * Series record (ids dense from 1 per tenant):
 *
 *   key   0      4     tenant id
 *         4      1     'S'
 *         5      8     series id, u64 BE
 *   value 0      1     record version = 1
 *         1      uv    partition id of the series' service_name
 *         .      uv    n, number of labels (1..STORE_MAX_LABELS)
 *         .            n times, sorted by name, names unique:
 *                        uv name length, name bytes, uv value length, value bytes
 *
 * The bytes from `n` to the end are the series' *label key*: the in-memory
 * map labels -> series id of a tenant is keyed by them and rebuilt by one
 * range scan of the 'S' records the first time a writer uses the tenant.
 * Because that map holds every series, no separate hash -> id dedup record is
 * needed on disk: a lookup never touches RocksDB.
 *
 * Posting (inverted index), one per label of each series:
 *
 *   key   0      4     tenant id
 *         4      1     'P'
 *         5      n     label name, then 0x00
 *         .      m     label value, then 0x00
 *         .      8     series id, u64 BE
 *   value              empty
 *
 * Names and values cannot hold 0x00 (they are C strings), so the 0x00
 * terminators make prefix scans exact; the next distinct name or value is
 * found by seeking past "name\x01" or "name\0value\x01".
 *
 * ==========================================================================
 * 5. symbols
 * ==========================================================================
 *
 *   key   0      4     tenant id
 *         4      4     partition id, u32 BE
 *         8      1     kind: SYM_STRING 1, SYM_MAPPING 2, SYM_FUNCTION 3,
 *                      SYM_LOCATION 4, SYM_STACK 5
 *         9      4     id, u32 BE, dense from 1 per (partition, kind)
 *
 *   SYM_STRING   value = the string bytes (no NUL), at most STORE_MAX_STRING.
 *   SYM_MAPPING  uv memory_start, uv memory_limit, uv file_offset,
 *                uv filename string id, uv build_id string id, uv flags
 *   SYM_FUNCTION uv name string id, uv system_name string id,
 *                uv filename string id, sv start_line
 *   SYM_LOCATION uv mapping id (0 = none), uv address, uv n_lines, then per
 *                line (innermost first): uv function id, sv line, sv column
 *   SYM_STACK    uv parent stack id (0 = root, always < own id),
 *                uv location id
 *
 * String id 0 is the empty string and is never stored.  The kinds are ordered
 * so that one range scan of [tenant|part, tenant|part+1) meets every id
 * before any record that references it; the loader checks every reference
 * (ERR_CORRUPT otherwise).  Strings are interned, so a file name shared by a
 * thousand functions is stored once.
 *
 * ==========================================================================
 * 6. samples (merge operator unhex.chunk.v1)
 * ==========================================================================
 *
 * One chunk per (series, time window):
 *
 *   key   0      4     tenant id
 *         4      1     'C'
 *         5      8     series id, u64 BE
 *         13     8     window index = floor(time_ns / window_ns), as u64 BE
 *                      with the sign bit flipped (so negative times sort first)
 *
 * A chunk value is a sequence of one or more *blocks*, back to back.  Each
 * commit adds one raw (uncompressed) block per chunk it touches as a merge
 * operand.  Both the full and the partial merge only concatenate operands:
 * a read of a window whose operands are not compacted yet runs the full
 * merge every time, so it must cost a memcpy, never a decode or a
 * compression.  Readers decode every block once and merge them by time.
 *
 * The compaction filter unhex.chunk-recode.v1 makes chunks columnar: every
 * plain value a compaction reads (which includes the concatenation an
 * earlier merge wrote) of more than one block, or of one raw block of at
 * least 64 payload bytes, is rewritten as ONE zstd block (level 3) holding
 * every profile of the window sorted by time.  Compaction runs in RocksDB's
 * background threads, so neither commits nor reads pay for compression.
 * RocksDB does not run filters on flushes nor on the output of a merge in
 * the same compaction, so a window is recoded by the first compaction after
 * the one that merged it; store_compact() therefore compacts the samples
 * family twice.  A value that does not decode is kept as it is and readers
 * report ERR_CORRUPT for that chunk; the database stays writable.
 *
 * Chunks written by earlier versions (zstd blocks from every commit, level
 * 1) are valid under this layout and are recoded by compaction like others.
 *
 *   block 0      1     magic 0xC1 (CHUNK_MAGIC)
 *         1      1     codec: 0 raw, 1 zstd (one frame with content size)
 *         2      uv    stored length s
 *         .      uv    raw length r (<= STORE_MAX_CHUNK_RAW)
 *         .      s     payload (raw length r once decompressed)
 *
 *   payload (all varints):
 *     uv partition id          of every profile in the block
 *     uv p                     number of profiles
 *     p times, in time order:
 *       sv time_ns delta       from the previous profile (first: from 0)
 *       sv duration_ns
 *       sv period
 *       uv n                   number of (stack, value) pairs
 *     column stack ids, for each profile in turn: its n stack ids, sorted
 *       ascending and unique, each as uv (id - previous id of the profile;
 *       the first against 0)
 *     column values, for each profile in turn: its n values as sv
 *
 * Pairs with the same stack id in one profile are summed when the profile is
 * added, which makes the stack id deltas small and the columns regular.
 *
 * ==========================================================================
 * 7. debuginfo, symcache and settings (auxiliary namespaces)
 * ==========================================================================
 *
 * Global: no tenant prefix, the only families whose keys do not start with a
 * tenant id, so they are left out of per-tenant statistics.  Keys and values
 * are stored verbatim; their formats belong to the module that writes them
 * (symbolize/symbolize_int.h documents the first two; web/routes_settings.c
 * the tenant settings).  The store enforces only:
 *
 *   key    1 .. STORE_AUX_MAX_KEY (1 KiB) bytes, any content
 *   value  0 .. STORE_AUX_MAX_VALUE (16 MiB) bytes, any content
 *   batch  at most STORE_AUX_MAX_BATCH (256 MiB) of keys and values in one
 *          store_aux_write(), written as one RocksDB write batch (atomic)
 *
 * Both families use a bloom filter (point lookups and MultiGet dominate) and
 * lz4, zstd at the bottommost level.
 *
 * ==========================================================================
 * 8. In memory
 * ==========================================================================
 *
 * struct tenant is created at open (one per 'T' record) or by the commit of
 * the first txn of a new tenant, and lives until store_close.  Its writer
 * index (services map, series map, next ids) is touched only under the
 * store's writer lock; an aborted txn that created series or partitions
 * drops it and it is rebuilt from disk by the next txn.
 *
 * struct part (a symbol partition) is loaded from disk by one range scan the
 * first time anyone uses it, and lives until store_close.  Its entries live
 * in segmented arrays (struct segarr) whose segments never move, and strings
 * and line arrays live in a chunked pool whose chunks never move, so readers
 * can read any entry below a published count without a lock while the writer
 * appends past it.  The writer publishes counts with atomic release stores
 * after the write batch commits; readers snapshot them with acquire loads in
 * store_symbols_get().  An abort truncates the arrays back to the published
 * counts, rolls the pool back, and drops the aborted ids from the dedup
 * tables (struct symtab.dedup), which only the writer uses.
 *
 * A commit writes the batch and publishes the new counts under the write
 * side of store.commit_lock; every range scan creates its iterator under the
 * read side.  So a profile or series visible to a scan was published before
 * it, and the symbols it references are in any view taken afterwards.
 */
#ifndef UNHEX_STORAGE_STORAGE_INT_H
#define UNHEX_STORAGE_STORAGE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "base/buf.h"
#include "base/hmap.h"
#include "base/intern.h"
#include "base/varint.h"
#include "storage/storage.h"

#define STORE_FORMAT_VERSION 1
#define STORE_MAGIC "UNHX"
#define CHUNK_MAGIC 0xC1

/* Limits on what a client may make the store hold (ERR_TOO_LARGE past them). */
#define STORE_MAX_TENANT_NAME 256
#define STORE_MAX_LABELS 128
#define STORE_MAX_LABEL_BYTES 4096
#define STORE_MAX_STRING (64 * 1024)
#define STORE_MAX_LINES 1024
#define STORE_MAX_STACK_DEPTH 16384
#define STORE_MAX_SYMBOLS (1u << 30)          /* per kind per partition */
#define STORE_MAX_POOL_BYTES ((size_t)4 << 30) /* per partition */
#define STORE_MAX_TXN_SAMPLES ((size_t)64 << 20)
#define STORE_MAX_TXN_PROFILES STORE_MAX_TXN_SAMPLES /* ingest writes no empty profile */
#define STORE_MAX_CHUNK_RAW ((size_t)512 << 20)
/* What one chunk (every block of a window) may decode to. */
#define STORE_MAX_CHUNK_PROFILES ((size_t)1 << 28)
#define STORE_MAX_CHUNK_SAMPLES ((size_t)1 << 31)
#define STORE_MAX_STACK_CACHE ((size_t)32 << 20) /* per partition */
/* The writer index of a tenant holds every series and partition in memory. */
#define STORE_MAX_SERIES (1u << 30)                   /* per tenant */
#define STORE_MAX_TENANTS ((size_t)UINT32_MAX)         /* tenant ids are u32 */
#define STORE_MAX_PARTS ((size_t)UINT32_MAX)           /* partition ids are u32 */
#define STORE_MAX_SERIES_KEY_BYTES ((size_t)64 << 30) /* their label keys */

/* Caps of the scratch buffers, derived from the limits above. */
/* A series' label key (section 4): uv n, then n names and values with lengths. */
#define STORE_MAX_LABEL_KEY \
	(VARINT_MAX + 2 * (size_t)STORE_MAX_LABELS * (VARINT_MAX + STORE_MAX_LABEL_BYTES))
/* A posting key (section 4): tenant, 'P', name\0, value\0, series id. */
#define STORE_MAX_POSTING_KEY (5 + 2 * ((size_t)STORE_MAX_LABEL_BYTES + 1) + 8)
/* A chunk block (section 6): magic, codec, two uv lengths, the payload. */
#define STORE_MAX_CHUNK_BLOCK (2 + 2 * VARINT_MAX + STORE_MAX_CHUNK_RAW)
/* The zstd output of one payload: ZSTD_compressBound(r) is r + r/256 + 64 KiB at most. */
#define STORE_MAX_CHUNK_ZSTD (STORE_MAX_CHUNK_RAW + STORE_MAX_CHUNK_RAW / 128 + ((size_t)64 << 10))
/* A txn's value scratch: a series or symbol record, a posting key, a chunk block. */
#define STORE_MAX_TXN_VALUE STORE_MAX_CHUNK_BLOCK

/* Column families as opened, in this order; the tenant families come first. */
enum cfi {
	CFI_DEFAULT,
	CFI_META,
	CFI_COUNTERS,
	CFI_SERIES,
	CFI_SYMBOLS,
	CFI_SAMPLES,
	CFI_TENANT_N, /* families below this one are keyed by tenant */
	CFI_DEBUGINFO = CFI_TENANT_N,
	CFI_SYMCACHE,
	CFI_SETTINGS,
	CFI_N
};

/* Limits of the auxiliary namespaces (section 7). */
#define STORE_AUX_MAX_KEY 1024
#define STORE_AUX_MAX_VALUE ((size_t)16 << 20)
#define STORE_AUX_MAX_BATCH ((size_t)256 << 20)

/* Key tags (byte 4 of tenant-prefixed keys). */
enum {
	TAG_FORMAT = 'F',
	TAG_TENANT = 'T',
	TAG_PART = 'R',
	TAG_SERIES = 'S',
	TAG_POSTING = 'P',
	TAG_CHUNK = 'C',
	TAG_MIGRATION = 'M',
};

/* Symbol kinds (byte 8 of symbol keys). */
enum sym_kind { SYM_STRING = 1, SYM_MAPPING, SYM_FUNCTION, SYM_LOCATION, SYM_STACK, SYM_NKINDS };

/* Counter kinds (byte 4 of counter keys). */
enum ctr {
	CTR_SERIES = 1,
	CTR_PROFILES,
	CTR_SAMPLES,
	CTR_STACKS,
	CTR_LOCATIONS,
	CTR_FUNCTIONS,
	CTR_MAPPINGS,
	CTR_N
};

/* ---- containers (table.c) ---------------------------------------------- */

/*
 * Map of byte keys to u64, for the writer index (service -> partition,
 * label key -> series id) and the stack cache: base/intern.h gives each key
 * a dense id and vals[id] holds its value.  Writer-only.  A released map is
 * empty and usable again with the same caps.
 */
struct bmap {
	struct intern keys;
	uint64_t *vals; /* by key id; owned */
	size_t cap;
};
/* At most max_keys keys (<= HMAP_MAX) of max_bytes key storage in all. */
void store__bmap_init(struct bmap *m, uint32_t max_keys, size_t max_bytes);
void store__bmap_release(struct bmap *m);
/* Forgets every key, keeping the tables' memory. */
void store__bmap_clear(struct bmap *m);
int store__bmap_get(const struct bmap *m, const void *key, size_t len, uint64_t *val);
/* Adds a key that is not present yet (copies it); ERR_TOO_LARGE past a cap. */
int store__bmap_put(struct bmap *m, const void *key, size_t len, uint64_t val);
/* Bytes the map holds: keys, their table and index, the values. */
size_t store__bmap_bytes(const struct bmap *m);

/* Append-only array whose elements never move: segment k holds 1024 << k. */
#define SEGARR_LEVELS 23
struct segarr {
	void *seg[SEGARR_LEVELS];
	size_t elem;
};
void store__segarr_init(struct segarr *a, size_t elem);
void store__segarr_release(struct segarr *a);
/* Returns the slot of index i (0-based), allocating its segment if `grow`. */
void *store__segarr_at(struct segarr *a, uint32_t i, int grow);

static inline const void *segarr_get(const struct segarr *a, uint32_t i)
{
	uint32_t q = (i >> 10) + 1;
	unsigned k = 31u - (unsigned)__builtin_clz(q);
	uint32_t off = i - ((((uint32_t)1 << k) - 1) << 10);
	return (const char *)a->seg[k] + (size_t)off * a->elem;
}

/* Chunked byte pool whose chunks never move; rolls back to a mark. */
struct pool_chunk {
	char *data; /* owned */
	size_t size;
};
struct pool {
	struct pool_chunk *chunks; /* owned */
	size_t n, alloc;
	size_t used;  /* bytes used in chunks[n - 1] */
	size_t total; /* bytes of all chunks */
};
struct pool_mark {
	size_t n, used;
};
void store__pool_init(struct pool *p);
void store__pool_release(struct pool *p);
void *store__pool_alloc(struct pool *p, size_t len, size_t align);
struct pool_mark store__pool_mark(const struct pool *p);
void store__pool_rollback(struct pool *p, struct pool_mark m);

/* ---- symbols (symbols.c) ----------------------------------------------- */

struct sym_string {
	const char *s; /* NUL-terminated, in the pool */
	uint32_t len;
};
struct sym_mapping {
	uint64_t start, limit, offset;
	uint32_t filename, build_id, flags;
};
struct sym_function {
	uint32_t name, system_name, filename;
	int64_t start_line;
};
struct sym_location {
	uint64_t address;
	const struct store_line *lines; /* in the pool */
	uint32_t mapping_id, n_lines;
};
struct sym_stack {
	uint32_t parent, location;
};

/*
 * The entries of one kind.  dedup finds an entry by content: content hash
 * -> id (hmap index = the id itself), the content compared inline by
 * symbols.c.  It is writer-only; an abort truncates it to the published
 * count (hmap_truncate needs no allocation).
 */
struct symtab {
	struct segarr arr;
	struct hmap dedup;          /* writer only */
	uint32_t len;               /* entries incl. uncommitted; writer only */
	_Atomic uint32_t committed; /* published count */
};

struct part {
	uint32_t id;
	pthread_mutex_t load_mu;
	_Atomic int loaded;
	struct symtab tab[SYM_NKINDS]; /* index by enum sym_kind; [0] unused */
	struct pool pool;
	struct pool_mark committed_mark; /* writer only */
	/* Whole stacks seen by the writer (location ids, leaf first) -> stack
	 * id, so a repeated stack costs one hash instead of one trie lookup
	 * per frame.  Holds at most STORE_MAX_STACK_CACHE bytes (keys, tables,
	 * values); cleared by an abort that added stacks.  Writer only. */
	struct bmap stack_cache;
	int dirty;                       /* in the current txn; writer only */
};

struct store_symbols {
	struct part *p;
	uint32_t count[SYM_NKINDS];
};

/* ---- store (store.c) --------------------------------------------------- */

struct tenant {
	uint32_t id;
	char *name;

	pthread_mutex_t mu;  /* guards parts/n_parts */
	struct part **parts; /* by partition id; [0] unused */
	uint32_t n_parts;    /* slots in parts */
	_Atomic uint32_t committed_parts;

	/* writer index, under the store's writer lock */
	int index_loaded;
	struct bmap services; /* service name -> partition id */
	struct bmap series;   /* label key -> series id */
	uint32_t next_part;
	uint64_t next_series;

	_Atomic uint64_t written[CFI_N]; /* bytes written by this process */
};

struct store {
	rocksdb_t *db;
	rocksdb_column_family_handle_t *cf[CFI_N];
	rocksdb_options_t *dbopt;
	rocksdb_options_t *cfopt[CFI_N];
	rocksdb_cache_t *cache;
	rocksdb_readoptions_t *ropt;
	rocksdb_writeoptions_t *wopt;
	int read_only;
	int64_t window_ns;

	pthread_mutex_t writer; /* held from store_txn_begin to commit/abort */
	/* Held for writing from the RocksDB write of a commit until its symbols
	 * are published, and for reading while an iterator takes its implicit
	 * snapshot: whatever a scan can see, store_symbols_get() can name. */
	pthread_rwlock_t commit_lock;
	pthread_mutex_t mu;     /* guards tenants */
	struct tenant **tenants; /* sorted by name */
	size_t n_tenants, alloc_tenants;
	uint32_t next_tenant; /* under writer */
	_Atomic uint64_t written_total[CFI_N];
};

struct txn_profile {
	uint64_t series;
	int64_t window;
	struct store_profile_meta meta;
	uint32_t part;
	size_t off, n; /* into ids/values */
};

struct store_txn {
	struct store *st;
	struct tenant *t;
	int new_tenant;
	int index_dirty; /* created series or partitions */
	int failed;      /* an internal error may have left partial state */
	rocksdb_writebatch_t *wb;
	struct part **dirty;
	size_t n_dirty, alloc_dirty;
	uint64_t ctr[CTR_N];
	uint64_t written[CFI_N];
	struct txn_profile *profs;
	size_t n_profs, alloc_profs;
	uint32_t *ids;
	int64_t *vals;
	size_t n_samples, alloc_samples;
	struct buf key, val; /* scratch */
	/* The partition of the last symbol call: ingest adds thousands of
	 * symbols to one partition per request, and resolving it through the
	 * tenant's mutex each time cost ~9 % of ingest. */
	uint32_t last_part_id;
	struct part *last_part;
};

/* Key helpers. */
static inline size_t key_tenant_tag(uint8_t *k, uint32_t tenant, uint8_t tag)
{
	k[0] = (uint8_t)(tenant >> 24);
	k[1] = (uint8_t)(tenant >> 16);
	k[2] = (uint8_t)(tenant >> 8);
	k[3] = (uint8_t)tenant;
	k[4] = tag;
	return 5;
}

/* Translates a RocksDB error string (freed here) into `code` with a message. */
int store__rocks_err(struct err_msg *msg, int code, const char *what, char *err);

/* Adds a put to the txn batch and accounts its bytes. */
void store__txn_put(struct store_txn *tx, enum cfi cf, const void *k, size_t klen,
		    const void *v, size_t vlen);
void store__txn_merge(struct store_txn *tx, enum cfi cf, const void *k, size_t klen,
		      const void *v, size_t vlen);

/* A range scan [lo, hi) of one column family. */
struct scan {
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	char *hi;
};
int store__scan_open(struct store *st, enum cfi cf, struct scan *s, const void *lo,
		     size_t lolen, const void *hi, size_t hilen);
/* Returns 0 at the end of a clean scan, else the iterator's error. */
int store__scan_close(struct scan *s, struct err_msg *msg);

/* Looks up a committed tenant by name; NULL when unknown. */
struct tenant *store__tenant_find(struct store *st, const char *name);

/* Returns the loaded partition `id` of `t` (creating its struct). */
int store__part_get(struct store *st, struct tenant *t, uint32_t id, struct part **out,
		    struct err_msg *msg);
void store__part_free(struct part *p);
/* Marks the partition as touched by the txn. */
int store__txn_touch(struct store_txn *tx, struct part *p);
void store__part_publish(struct part *p);
void store__part_rollback(struct part *p);

/* Writer index of a tenant (series.c). */
int store__index_load(struct store *st, struct tenant *t, struct err_msg *msg);
/* Scans the tenant's partitions; fills `map` if not NULL, sets *max_id. */
int store__scan_parts(struct store *st, struct tenant *t, struct bmap *map, uint32_t *max_id,
		      struct err_msg *msg);
void store__index_drop(struct tenant *t);

/*
 * The one-time rewrites of data written by older versions (migrate.c),
 * run by store_open() on read-write opens before anything else touches
 * the store.  Idempotent.
 */
int store__migrate(struct store *st, struct err_msg *msg);

/* Merge operators and the chunk compaction filter (samples.c, store.c). */
rocksdb_mergeoperator_t *store__chunk_merge_operator(void);
rocksdb_compactionfilterfactory_t *store__chunk_filter_factory(void);
rocksdb_mergeoperator_t *store__add64_merge_operator(void);

/* Chunk codec (samples.c). */
struct chunk_profile {
	struct store_profile_meta meta;
	size_t n;
	const uint32_t *ids;
	const int64_t *vals;
};
/* Appends one block of `n` profiles (sorted by time) to out, zstd-compressed
 * at `zlevel` when that is smaller, raw when zlevel is 0. */
int store__chunk_encode(uint32_t part, const struct chunk_profile *p, size_t n, int zlevel,
			struct buf *out);
/* Decoded chunk: every profile of every block, sorted by time. */
struct chunk {
	uint32_t part;
	struct chunk_profile *profs;
	size_t n, alloc;
	struct buf raw;   /* decompressed payloads */
	uint32_t *ids;    /* all ids, owned */
	int64_t *vals;    /* all values, owned */
	size_t n_samples, alloc_samples;
};
void store__chunk_init(struct chunk *c);
void store__chunk_release(struct chunk *c);
int store__chunk_decode(struct chunk *c, const void *v, size_t len, struct err_msg *msg);

/* Test hooks: raw access to a column family. */
int store__raw_put(struct store *st, enum cfi cf, const void *k, size_t klen,
		   const void *v, size_t vlen);
int store__raw_get(struct store *st, enum cfi cf, const void *k, size_t klen,
		   struct buf *out);
/* Compacts one family fully; the samples family twice (see section 6). */
int store__compact(struct store *st, enum cfi cf);

static inline int64_t floor_div(int64_t t, int64_t w)
{
	int64_t q = t / w;
	if (t % w != 0 && t < 0)
		q--;
	return q;
}

#endif
