/*
 * storage.h - the profile store: series, symbols and columnar samples on
 * RocksDB.  The only module that includes RocksDB.
 *
 * Model
 *   A *tenant* (X-Scope-OrgID) owns everything below it; every key starts with
 *   the tenant's numeric id, so tenants never see each other's data.
 *   A *series* is a sorted label set that always holds `service_name` and
 *   `__profile_type__` (e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds).
 *   A *partition* holds the symbols of one (tenant, service_name): strings,
 *   mappings, functions, locations and a stack trie.  Symbol ids are dense
 *   uint32 per partition, starting at 1; 0 means "none".  A stack id is a trie
 *   node id (parent stack id + location id); 0 is the empty stack.
 *   A *profile* is one pprof sample type of one ingested pprof: a timestamp and
 *   the columns (stack id, value).  Profiles are stored in columnar chunks per
 *   (series, time window).
 *
 * Writing
 *   store_txn_begin() takes the store's single writer lock; everything added
 *   through the txn becomes visible to readers and durable atomically at
 *   store_txn_commit() (one RocksDB write batch through the WAL).  A commit
 *   that returned 0 survives kill -9 of the process.  store_txn_abort()
 *   discards everything the txn added, including in-memory dedup entries.
 *   Strings given to the txn are borrowed for the duration of the call only.
 *
 * Reading
 *   Read functions never take the writer lock and may run on any thread
 *   concurrently with a writer.  Symbol views (struct store_symbols) are
 *   refcounted snapshots: entries committed before store_symbols_get()
 *   are visible and stay valid until store_symbols_put().
 *
 * Threading: struct store is thread-safe.  A struct store_txn belongs to the
 * thread that began it.
 */
#ifndef UNHEX_STORAGE_STORAGE_H
#define UNHEX_STORAGE_STORAGE_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct err_msg;
struct store;
struct store_txn;
struct store_symbols;

/* Label names with a meaning to the store. */
#define STORE_LABEL_SERVICE "service_name"
#define STORE_LABEL_PROFILE_TYPE "__profile_type__"
#define STORE_LABEL_NAME "__name__"

struct store_options {
	const char *dir;            /* database directory; created if missing */
	int read_only;              /* open an existing store for reading only */
	int sync_writes;            /* fsync the WAL at every commit (power loss) */
	size_t block_cache_bytes;   /* 0 picks 64 MiB */
	int64_t window_ns;          /* sample chunk window; 0 picks 10 minutes */
};

/* Opens (creating if needed) the store; returns owned *out. */
int store_open(const struct store_options *opt, struct store **out, struct err_msg *msg);
/* Flushes and closes; NULL is a no-op. */
void store_close(struct store *st);

struct store_label {
	const char *name;  /* NUL-terminated; borrowed */
	const char *value; /* NUL-terminated; borrowed */
};

/* Mapping flags (store_mapping.flags). */
enum {
	STORE_MAP_HAS_FUNCTIONS = 1 << 0,
	STORE_MAP_HAS_FILENAMES = 1 << 1,
	STORE_MAP_HAS_LINE_NUMBERS = 1 << 2,
	STORE_MAP_HAS_INLINE_FRAMES = 1 << 3,
	/* Addresses of this mapping's locations are ELF virtual addresses (OTLP
	 * native frames) rather than file offsets (pprof, normalized). */
	STORE_MAP_ADDR_VADDR = 1 << 4,
};

/*
 * A mapping's identity is its build ID when it has one, else its file name,
 * and whether its addresses are ELF vaddrs (STORE_MAP_ADDR_VADDR); two
 * mappings with the same identity in one partition are one mapping.
 * memory_start/limit/file_offset are kept as first seen, for reference.
 */
struct store_mapping {
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	const char *filename; /* "" when unknown */
	const char *build_id; /* lower-case hex, "" when unknown */
	uint32_t flags;
};

struct store_function {
	const char *name;        /* human-readable (demangled) */
	const char *system_name; /* mangled, "" if none */
	const char *filename;
	int64_t start_line;
};

struct store_line {
	uint32_t function_id; /* from store_txn_function in the same partition */
	int64_t line;
	int64_t column;
};

/*
 * A location: a normalized address in a mapping, and its source lines.
 * lines[0] is the innermost inlined frame, the last one the outermost caller
 * (pprof order).  Identity is (mapping_id, address, lines).
 */
struct store_location {
	uint32_t mapping_id; /* 0 when the frame has no mapping */
	uint64_t address;    /* file offset (or ELF vaddr, see flags); 0 if none */
	const struct store_line *lines;
	size_t n_lines;
};

/* Metadata of one stored profile. */
struct store_profile_meta {
	int64_t time_ns;     /* start of the profile, ns since the epoch */
	int64_t duration_ns; /* 0 when unknown */
	int64_t period;      /* pprof period, 0 when unknown */
};

/* ---- writing ------------------------------------------------------------ */

/* Begins a write transaction for `tenant` (created on first use). */
int store_txn_begin(struct store *st, const char *tenant, struct store_txn **out,
		    struct err_msg *msg);

/* Finds or creates the symbol partition of `service` and returns its id. */
int store_txn_partition(struct store_txn *tx, const char *service, uint32_t *part);

/* Find-or-create of symbols in partition `part`; each returns the id. */
int store_txn_mapping(struct store_txn *tx, uint32_t part, const struct store_mapping *m,
		      uint32_t *id);
int store_txn_function(struct store_txn *tx, uint32_t part, const struct store_function *f,
		       uint32_t *id);
int store_txn_location(struct store_txn *tx, uint32_t part, const struct store_location *l,
		       uint32_t *id);

/*
 * Finds or creates the stack of `n` location ids, given leaf first (pprof
 * Sample.location_id order), and returns its stack id (0 for n == 0).
 */
int store_txn_stack(struct store_txn *tx, uint32_t part, const uint32_t *leaf_first,
		    size_t n, uint32_t *stack_id);

/*
 * Finds or creates the series of `labels` (any order; names unique; must hold
 * service_name and __profile_type__) and returns its id (never 0).
 */
int store_txn_series(struct store_txn *tx, const struct store_label *labels, size_t n,
		     uint64_t *series_id, struct err_msg *msg);

/*
 * Adds one profile to `series_id`, its symbols in partition `part`: `n` pairs
 * of (stack id, value).  Pairs with the same stack id may repeat; values of
 * 0 are kept as given.
 */
int store_txn_profile(struct store_txn *tx, uint64_t series_id, uint32_t part,
		      const struct store_profile_meta *meta, const uint32_t *stack_ids,
		      const int64_t *values, size_t n);

/* Writes everything atomically and frees the txn (also on failure). */
int store_txn_commit(struct store_txn *tx, struct err_msg *msg);

/* Discards everything the txn added and frees it. NULL is a no-op. */
void store_txn_abort(struct store_txn *tx);

/* ---- reading ------------------------------------------------------------ */

/* Calls cb for every tenant name; a non-zero return from cb stops and is returned. */
int store_tenants(struct store *st, int (*cb)(void *ctx, const char *tenant), void *ctx);

/*
 * Calls cb for every series of `tenant` with its id, partition and labels
 * (sorted by name; valid during the call).  Unknown tenant: no calls, 0.
 */
typedef int (*store_series_cb)(void *ctx, uint64_t series_id, uint32_t part,
			       const struct store_label *labels, size_t n);
int store_series_each(struct store *st, const char *tenant, store_series_cb cb, void *ctx);

/*
 * Calls cb for every series of `tenant` whose label `name` equals `value`
 * (from the inverted postings, not a full scan).
 */
int store_series_with(struct store *st, const char *tenant, const char *name,
		      const char *value, store_series_cb cb, void *ctx);

/* Calls cb for every distinct label name, or every value of label `name`. */
int store_label_names(struct store *st, const char *tenant,
		      int (*cb)(void *ctx, const char *name), void *ctx);
int store_label_values(struct store *st, const char *tenant, const char *name,
		       int (*cb)(void *ctx, const char *value), void *ctx);

/* One profile as read back; arrays are valid during the callback only. */
struct store_profile_view {
	uint64_t series_id;
	uint32_t part;
	struct store_profile_meta meta;
	size_t n;
	const uint32_t *stack_ids;
	const int64_t *values;
};

/*
 * Calls cb, in time order, for every profile of `series_id` with
 * from_ns <= time_ns < until_ns.  Reads whole chunks with range scans.
 */
int store_profiles_each(struct store *st, const char *tenant, uint64_t series_id,
			int64_t from_ns, int64_t until_ns,
			int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx,
			struct err_msg *msg);

/* Returns a refcounted view of partition `part` of `tenant`. */
int store_symbols_get(struct store *st, const char *tenant, uint32_t part,
		      struct store_symbols **out, struct err_msg *msg);
void store_symbols_put(struct store_symbols *sym);

/* Counts of the view (ids are 1..count). */
uint32_t store_symbols_stack_count(const struct store_symbols *sym);
uint32_t store_symbols_location_count(const struct store_symbols *sym);

/* Stack trie node: its parent stack id and its (leaf) location id. */
int store_symbols_stack_node(const struct store_symbols *sym, uint32_t stack_id,
			     uint32_t *parent, uint32_t *location_id);

/* Symbol records; returned strings and arrays live as long as the view. */
struct store_location_view {
	uint32_t mapping_id;
	uint64_t address;
	const struct store_line *lines;
	size_t n_lines;
};
int store_symbols_location(const struct store_symbols *sym, uint32_t id,
			   struct store_location_view *out);
int store_symbols_function(const struct store_symbols *sym, uint32_t id,
			   struct store_function *out);
int store_symbols_mapping(const struct store_symbols *sym, uint32_t id,
			  struct store_mapping *out);

/* ---- statistics --------------------------------------------------------- */

enum store_cf {
	STORE_CF_META,
	STORE_CF_SERIES,
	STORE_CF_SYMBOLS,
	STORE_CF_SAMPLES,
	STORE_CF_COUNT
};

/* The RocksDB column family name of `cf` ("series", ...). */
const char *store_cf_name(enum store_cf cf);

struct store_tenant_stats {
	const char *tenant;
	uint64_t series;
	uint64_t profiles;
	uint64_t samples;
	uint64_t stacks;
	uint64_t locations;
	uint64_t functions;
	uint64_t mappings;
	uint64_t bytes[STORE_CF_COUNT]; /* on disk (SST + memtable estimate) */
};

/* Calls cb once per tenant, in tenant name order. */
int store_stats(struct store *st,
		int (*cb)(void *ctx, const struct store_tenant_stats *s), void *ctx,
		struct err_msg *msg);

/* Flushes memtables to SST files (for accurate sizes and benchmarks). */
int store_flush(struct store *st, struct err_msg *msg);

/* Runs a full compaction of every column family (benchmarks, tests). */
int store_compact(struct store *st, struct err_msg *msg);

/* ---- auxiliary key-value namespaces --------------------------------------
 *
 * Global (not per tenant) namespaces whose value formats belong to the module
 * that uses them (symbolize/ documents its own in symbolize_int.h); the store
 * only guarantees durability, atomicity of one call, and ordered scans.
 *   STORE_AUX_DEBUGINFO  build ID -> debug info metadata (source, size, status)
 *   STORE_AUX_SYMCACHE   (build ID, address) -> resolved frames
 *   STORE_AUX_SETTINGS   (tenant, name) -> a tenant setting (settings.v1)
 * Keys and values are arbitrary bytes (keys at most 1 KiB, values 16 MiB).
 */
enum store_aux {
	STORE_AUX_DEBUGINFO,
	STORE_AUX_SYMCACHE,
	STORE_AUX_SETTINGS,
	STORE_AUX_COUNT
};

struct store_kv {
	const void *key;
	size_t klen;
	const void *val; /* NULL deletes the key in store_aux_write */
	size_t vlen;
};

/* Writes (or deletes) `n` pairs atomically in one batch. */
int store_aux_write(struct store *st, enum store_aux ns, const struct store_kv *kv,
		    size_t n, struct err_msg *msg);

/* Appends the value of `key` to `out`; ERR_NOT_FOUND when absent. */
int store_aux_get(struct store *st, enum store_aux ns, const void *key, size_t klen,
		  struct buf *out, struct err_msg *msg);

/*
 * Looks up `n` keys in one batch (RocksDB MultiGet); calls cb(ctx, i, val,
 * vlen) for each key in order, with val NULL when absent.  A non-zero return
 * from cb stops and is returned.
 */
int store_aux_multi_get(struct store *st, enum store_aux ns, const struct store_kv *keys,
			size_t n,
			int (*cb)(void *ctx, size_t i, const void *val, size_t vlen),
			void *ctx, struct err_msg *msg);

/* Calls cb for every pair whose key starts with `prefix`, in key order. */
int store_aux_scan(struct store *st, enum store_aux ns, const void *prefix, size_t plen,
		   int (*cb)(void *ctx, const void *key, size_t klen, const void *val,
			     size_t vlen),
		   void *ctx, struct err_msg *msg);

/* Bytes on disk of an auxiliary namespace (SST estimate). */
uint64_t store_aux_bytes(struct store *st, enum store_aux ns);

#endif
