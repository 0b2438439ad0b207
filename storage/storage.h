/*
 * storage.h - the profile store: a head of recent profiles in RocksDB and
 * immutable, self-contained time blocks in files of our own format.  The
 * only module that includes RocksDB.
 *
 * Model
 *   A *tenant* (X-Scope-OrgID) owns everything below it; tenants never see
 *   each other's data.
 *   A *series* is a sorted label set that always holds `service_name` and
 *   `__profile_type__` (e.g. process_cpu:cpu:nanoseconds:cpu:nanoseconds).
 *   A *partition* holds the symbols of one service of a tenant: strings,
 *   mappings, functions, locations and a stack trie.  Symbol ids are dense
 *   uint32 per partition, starting at 1; 0 means "none".  A stack id is a
 *   trie node id (parent stack id + location id); 0 is the empty stack.
 *   A *profile* is one pprof sample type of one ingested pprof: a timestamp and
 *   the columns (stack id, value).
 *
 * Head and blocks (docs/storage.md; byte layouts in storage_int.h)
 *   Commits go to the *head*: RocksDB with its WAL.  The head's partitions
 *   live in *epochs*: a new epoch starts each time the head is sealed, and
 *   an epoch's symbols are dropped once every profile that used them is in
 *   a block, so the head holds the symbols of recent data only.
 *   store_maintain() (or the background thread of store_options.
 *   maintain_interval_ns) *seals* the head's profiles of each level-0 time
 *   range that has ended into a *block*: one immutable file holding that
 *   range's series, postings, the symbols its samples reference (one
 *   partition per service, as columns) and its samples; it *compacts*
 *   blocks into larger ones (6 and 24 level-0 ranges by default), and
 *   applies *retention* by deleting whole blocks.  Block partitions get
 *   partition ids of their own (>= STORE_BLOCK_PART_MIN, never reused by a
 *   process), so a merge by (partition, stack id) works across the head and
 *   blocks unchanged.  A profile is in exactly one place at any time: a
 *   reader sees it in the head or in one block, never both, never neither
 *   (also across crashes: storage_int.h, section 10).
 *
 * Writing
 *   store_txn_begin() takes the store's single writer lock; everything added
 *   through the txn becomes visible to readers and durable atomically at
 *   store_txn_commit() (one RocksDB write batch through the WAL).  A commit
 *   that returned 0 survives kill -9 of the process.  store_txn_abort()
 *   discards everything the txn added, including in-memory dedup entries.
 *   Strings given to the txn are borrowed for the duration of the call only.
 *   A partition id is valid for the txn that got it (the next may be in a
 *   new epoch).
 *
 * Reading
 *   A struct store_reader is a consistent view of one tenant over a time
 *   range: a snapshot of the head and references on the blocks, so sealing,
 *   compaction and retention running meanwhile change nothing it reads.
 *   Its series are label sets merged across the head and blocks.  The
 *   store_series_*, store_label_* and store_profiles_each calls without a
 *   reader read the current state, where one label set may be several
 *   series (one per block); they are kept for tools and tests.
 *   Symbol views (struct store_symbols) are refcounted snapshots: entries
 *   committed before store_symbols_get() are visible and stay valid until
 *   store_symbols_put().  A partition id named by a profile a reader
 *   returned stays valid while that reader is open.
 *
 * Threading: struct store is thread-safe.  A struct store_txn belongs to the
 * thread that began it; a struct store_reader to one thread at a time.
 */
#ifndef UNHEX_STORAGE_STORAGE_H
#define UNHEX_STORAGE_STORAGE_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct err_msg;
struct objstore;
struct store;
struct store_txn;
struct store_symbols;

/* Label names with a meaning to the store. */
#define STORE_LABEL_SERVICE "service_name"
#define STORE_LABEL_PROFILE_TYPE "__profile_type__"
#define STORE_LABEL_NAME "__name__"

/* A tenant's own retention (store_options.retention_overrides). */
struct store_retention {
	const char *tenant; /* borrowed for the life of the store */
	int64_t ns;         /* 0 keeps everything */
};

struct store_options {
	const char *dir;            /* database directory; created if missing */
	int read_only;              /* open an existing store for reading only */
	int sync_writes;            /* fsync the WAL at every commit (power loss) */
	size_t block_cache_bytes;   /* RocksDB's block cache; 0 picks 64 MiB */
	int64_t window_ns;          /* head chunk window; 0 picks 10 minutes */
	/* Level-0 block range, a multiple of window_ns; 0 picks 1 hour. */
	int64_t block_range_ns;
	/* How long past the end of a range profiles may still arrive before it
	 * is sealed; 0 picks a quarter of the block range. */
	int64_t seal_delay_ns;
	/* Blocks whose newest profile is older than this are deleted; 0 keeps
	 * everything.  Overrides (borrowed) replace it for their tenants. */
	int64_t retention_ns;
	const struct store_retention *retention_overrides;
	size_t n_retention_overrides;
	/* Decoded block indexes and symbols kept across queries; 0 picks 128 MiB. */
	size_t symbol_cache_bytes;
	/* Decoded sample pages of blocks kept across queries; 0 picks 64 MiB. */
	size_t page_cache_bytes;
	/* Period of the background maintenance thread (seal, compact, expire);
	 * 0 starts none: the caller runs store_maintain(). */
	int64_t maintain_interval_ns;
	/* How long partitions and blocks that sealing, compaction or retention
	 * replaced stay readable by the calls without a reader; 0 picks 2 min. */
	int64_t reader_grace_ns;
	/* The wall clock, ns since the epoch (tests); NULL reads CLOCK_REALTIME. */
	int64_t (*clock_ns)(void *ctx);
	void *clock_ctx;
	/*
	 * A write-ahead log damaged anywhere but a cut-short last record makes
	 * store_open() fail with ERR_CORRUPT and a message naming the file and
	 * the offset (never a silent loss of what follows).  Set, the store is
	 * opened anyway with the writes before the damage and without the rest
	 * (RocksDB's point-in-time recovery): `unhex recover`.
	 */
	int wal_recover;
	/*
	 * Idempotent pushes (store_txn_claim_id): an ID is remembered for this
	 * long (0 picks 10 minutes), at most push_id_max IDs per window (0
	 * picks 524288; more are stored but not remembered).
	 */
	int64_t push_id_window_ns;
	uint32_t push_id_max;
	/*
	 * A bucket (borrowed; must outlive the store), or NULL.  Set, every
	 * maintenance pass uploads the live blocks not uploaded yet by this
	 * process, create-once under their path in the data directory
	 * ("blocks/<tenant>/<id>.blk"); an upload that fails is retried at the
	 * next pass and never holds up ingest.  A block with a record but no
	 * local file is read from the bucket: its footer at open (a suffix
	 * GET), then the sections and pages each query needs by ranged GETs,
	 * kept in a local cache (compaction and verify fetch the whole
	 * object; docs/object-storage.md).
	 */
	struct objstore *objstore;
	/* Cap of that cache (<dir>/s3cache, emptied at open); 0: 1 GiB. */
	uint64_t objstore_cache_bytes;
	/*
	 * What this process does with the bucket index (STORE_BUCKET_* flags,
	 * needs objstore; docs/object-storage.md, storage_int.h section 12).
	 */
	unsigned bucket_mode;
	/* Period of the index sync thread (DISCOVER, PRUNE); 0 starts none:
	 * the caller runs store_bucket_sync(). */
	int64_t bucket_sync_interval_ns;
	/* How long a block stays in the bucket once the index marks it for
	 * deletion; 0 picks 10 minutes.  Longer than the queriers' sync
	 * interval plus their reader grace, or a query may miss a block. */
	int64_t bucket_delete_delay_ns;
	/*
	 * Queriers: the ingesters (base URLs, "http://host:port"; copied)
	 * that every reader asks for the profiles its
	 * bucket view does not hold yet: their heads and their blocks not in
	 * the index (storage_int.h section 13, docs/object-storage.md
	 * "Freshness").  Each profile is counted once; an ingester that fails
	 * is a warning of the reader, never an error.
	 */
	const char *const *peers;
	size_t n_peers;
	const char *peer_token;   /* bearer token for them (copied), NULL: none */
	int64_t peer_timeout_ns;  /* all of them, per reader; 0 picks 10 s */
	/* Largest head block an ingester answers and a querier accepts;
	 * 0 picks 256 MiB. */
	uint64_t head_block_max_bytes;
};

enum {
	/* Rewrite the bucket index at the end of each maintenance pass, and
	 * delete the blocks it has marked for bucket_delete_delay_ns. */
	STORE_BUCKET_INDEX = 1 << 0,
	/* List the blocks the index names as remote blocks, unlist those it
	 * no longer names (queriers, compactors). */
	STORE_BUCKET_DISCOVER = 1 << 1,
	/* Unlist and delete this process's own uploaded blocks that the index
	 * marks (ingesters: the compactor merged or expired them). */
	STORE_BUCKET_PRUNE = 1 << 2,
	/* No compaction and no retention: another process's job. */
	STORE_NO_COMPACT = 1 << 3,
};

/* Partition ids at or above this name a service of a block. */
#define STORE_BLOCK_PART_MIN 0x80000000u

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
	/* The profile's id (a UUID, docs/ingest.md "Profile ids"); all zero:
	 * none (profiles stored before ids were kept).  The stored profiles of
	 * one ingested pprof share it. */
	uint8_t id[16];
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
 * The stack of the `n` locations leaf_first[0..n) points to (leaf first),
 * given by their contents: the same ids and records as store_txn_location()
 * for each and store_txn_stack() of their ids, but frames the writer of
 * this partition has seen before cost one hash of their contents instead
 * of one lookup per location.  Borrows leaf_first and the locations.
 */
int store_txn_stack_of(struct store_txn *tx, uint32_t part,
		       const struct store_location *const *leaf_first, size_t n,
		       uint32_t *stack_id);

/*
 * Finds or creates the series of `labels` (any order; names unique; must hold
 * service_name and __profile_type__) and returns its id (never 0).
 */
int store_txn_series(struct store_txn *tx, const struct store_label *labels, size_t n,
		     uint64_t *series_id, struct err_msg *msg);
/*
 * Caps the series the tenant of `tx` may have: past `max` (> 0) known series
 * store_txn_series() refuses to create one with ERR_TOO_LARGE and a message
 * "series limit of N reached" (existing series are still found).  A txn
 * starts with no cap below the store's own.
 */
void store_txn_set_max_series(struct store_txn *tx, uint64_t max);
/*
 * Caps the distinct label names of the tenant of `tx` (`max_names`, > 0)
 * and the distinct values of each name (`max_values`, > 0), counted over
 * the series the tenant holds: store_txn_series() refuses to create a
 * series that would add a name or a value past them with ERR_TOO_LARGE and
 * a message "label name limit of N reached" or "label NAME has N values,
 * its limit" (existing series are still found).  A txn starts with no cap.
 */
void store_txn_set_max_labels(struct store_txn *tx, uint64_t max_names, uint64_t max_values);

/*
 * Adds one profile to `series_id`, its symbols in partition `part`: `n` pairs
 * of (stack id, value).  Pairs with the same stack id may repeat; values of
 * 0 are kept as given.
 */
int store_txn_profile(struct store_txn *tx, uint64_t series_id, uint32_t part,
		      const struct store_profile_meta *meta, const uint32_t *stack_ids,
		      const int64_t *values, size_t n);

/*
 * As store_txn_profile, each pair also with the trace span id its samples
 * were taken in (`spans[i]`, 0 for none; NULL: none has one).  Pairs are
 * then summed per (stack id, span id), so a span's samples stay apart from
 * other spans' and from those without one.
 */
int store_txn_profile_spans(struct store_txn *tx, uint64_t series_id, uint32_t part,
			    const struct store_profile_meta *meta, const uint32_t *stack_ids,
			    const int64_t *values, const uint64_t *spans, size_t n);

/* Longest push ID, in bytes (Pyroscope agents send a 36-byte UUID). */
#define STORE_PUSH_ID_MAX 256

/*
 * Idempotent pushes: claims profile ID `id` (1..STORE_PUSH_ID_MAX bytes,
 * borrowed) for the txn's tenant.  *seen = 1 when a commit less than the
 * window ago (store_options.push_id_window_ns) claimed it: the caller skips
 * that profile.  Else *seen = 0 and the claim is written with the txn (it
 * survives a restart; an aborted txn forgets it).  Returns 0, ERR_INVALID
 * for a bad length, ERR_NOMEM.
 */
int store_txn_claim_id(struct store_txn *tx, const void *id, size_t len, int *seen);

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
	/* Span id of each pair, 0 for none; NULL when no pair has one.  A
	 * (stack id, span id) pair appears once; a stack id may repeat. */
	const uint64_t *span_ids;
};

/*
 * Calls cb, in time order, for every profile of `series_id` with
 * from_ns <= time_ns < until_ns.  Reads whole chunks with range scans.
 */
int store_profiles_each(struct store *st, const char *tenant, uint64_t series_id,
			int64_t from_ns, int64_t until_ns,
			int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx,
			struct err_msg *msg);

/* ---- readers: head and blocks at once ----------------------------------- */

struct store_reader;

/*
 * Opens a consistent view of `tenant` over [from_ns, until_ns): a snapshot
 * of the head and the blocks that overlap the range.  An unknown tenant
 * gives an empty reader.  With store_options.peers, also what each peer
 * holds that this view lacks, as blocks of the reader (an unanswered peer
 * is a warning; storage_int.h section 13).  Returns owned *out.
 */
int store_reader_open(struct store *st, const char *tenant, int64_t from_ns,
		      int64_t until_ns, struct store_reader **out, struct err_msg *msg);
/*
 * The same, for a read of only series that carry every label eq[i] (name
 * = value, both non-empty; borrowed during the call): a querier asks its
 * peers for those series only, so the reader may lack the others.
 */
int store_reader_open_eq(struct store *st, const char *tenant, int64_t from_ns,
			 int64_t until_ns, const struct store_label *eq, size_t n_eq,
			 struct store_reader **out, struct err_msg *msg);
/* Releases the view; NULL is a no-op. */
void store_reader_close(struct store_reader *r);

/*
 * Series of the view, each label set once with an id of this reader (the
 * `part` argument is 0: its profiles carry their partitions).
 */
int store_reader_series_each(struct store_reader *r, store_series_cb cb, void *ctx);
int store_reader_series_with(struct store_reader *r, const char *name, const char *value,
			     store_series_cb cb, void *ctx);
int store_reader_label_names(struct store_reader *r,
			     int (*cb)(void *ctx, const char *name), void *ctx);
int store_reader_label_values(struct store_reader *r, const char *name,
			      int (*cb)(void *ctx, const char *value), void *ctx);

/*
 * Calls cb for every profile of reader series `series_id` with from_ns <=
 * time_ns < until_ns (within the reader's range), in time order within each
 * block and within the head.  A block whose bytes turn out corrupt is
 * skipped whole (checked before its first profile is passed) and reported
 * as a warning of the reader.
 */
int store_reader_profiles_each(struct store_reader *r, uint64_t series_id, int64_t from_ns,
			       int64_t until_ns,
			       int (*cb)(void *ctx, const struct store_profile_view *p),
			       void *ctx, struct err_msg *msg);

/*
 * Warnings of the reader: blocks of its range it could not read (corrupt
 * or missing), one sentence each, valid until the reader is closed.
 */
size_t store_reader_warning_count(const struct store_reader *r);
const char *store_reader_warning(const struct store_reader *r, size_t i);

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

/* Where bytes are: the head's column families, and the block files. */
enum store_cf {
	STORE_CF_META,
	STORE_CF_SERIES,
	STORE_CF_SYMBOLS,
	STORE_CF_SAMPLES,
	STORE_CF_BLOCKS,
	STORE_CF_COUNT
};

/* The name of `cf` ("series", ..., "blocks"). */
const char *store_cf_name(enum store_cf cf);

/*
 * Per tenant.  profiles and samples count every retained profile once,
 * wherever it is; series counts distinct label sets (reading the index of
 * every block); the symbol counts are entries stored (the head's partitions
 * plus each block's: a function in three blocks counts three times).
 */
struct store_tenant_stats {
	const char *tenant;
	uint64_t series;
	uint64_t profiles;
	uint64_t samples;
	uint64_t stacks;
	uint64_t locations;
	uint64_t functions;
	uint64_t mappings;
	uint64_t bytes[STORE_CF_COUNT]; /* on disk (SST + memtable estimate; block files) */
	uint64_t head_profiles;      /* of profiles: not sealed yet */
	uint64_t blocks;             /* block files, the unreadable included */
	uint64_t blocks_unreadable;  /* corrupt or missing: skipped by queries */
	uint64_t head_unreadable;    /* head symbol partitions whose records did not
				      * load (damaged SST blocks): their profiles
				      * cannot be read; `unhex verify` names the file */
	int64_t oldest_ns, newest_ns; /* first and last profile time in blocks (0: none) */
	/* What retention removed, since the store was created. */
	uint64_t expired_blocks, expired_bytes, expired_profiles, expired_samples;
};

/* Calls cb once per tenant, in tenant name order. */
int store_stats(struct store *st,
		int (*cb)(void *ctx, const struct store_tenant_stats *s), void *ctx,
		struct err_msg *msg);

/* One block, as listed by store_blocks_each(); strings live during the call. */
struct store_block_info {
	const char *tenant;
	const char *id;         /* 32 hex digits */
	uint32_t level;         /* 0 sealed from the head, k compacted */
	int64_t range_start, range_end; /* [start, end) */
	int64_t min_time, max_time;     /* of its profiles */
	uint64_t bytes, series, profiles, samples;
	size_t sources;         /* blocks it replaced */
	const char *error;      /* NULL, or why it is skipped (corrupt, missing) */
};

/* Calls cb for every block of `tenant` (NULL: every tenant), by time. */
int store_blocks_each(struct store *st, const char *tenant,
		      int (*cb)(void *ctx, const struct store_block_info *b), void *ctx,
		      struct err_msg *msg);

/* ---- maintenance: sealing, compaction, retention ------------------------ */

struct store_maint_stats {
	uint64_t sealed_blocks;     /* written from the head */
	uint64_t sealed_profiles;
	uint64_t compactions;       /* blocks written by compaction */
	uint64_t compacted_blocks;  /* blocks they replaced */
	uint64_t expired_blocks;    /* deleted by retention */
	uint64_t expired_bytes;
	uint64_t dropped_epochs;    /* head symbol epochs freed */
	uint64_t uploaded_blocks;   /* put in the bucket (store_options.objstore) */
	uint64_t uploaded_bytes;
	uint64_t upload_failures;   /* uploads to retry at the next pass */
	uint64_t upload_found;      /* blocks found in the bucket already (a restart) */
};

enum {
	/* Seal every profile of the head, also of ranges not over yet. */
	STORE_MAINT_SEAL_ALL = 1 << 0,
	/* Compact every group of two or more blocks, also of ranges not over. */
	STORE_MAINT_COMPACT_ALL = 1 << 1,
};

/*
 * One maintenance pass over every tenant: seal the ranges that ended
 * (seal_delay_ns ago, by the store's clock), compact, expire.  The store's
 * clock is the newest profile time stored, never ahead of the wall clock,
 * so a backfill is sealed and expired as it would have been live.  Adds
 * what it did to *out (may be NULL).  Serialized with the background
 * thread; never blocks ingest or queries for longer than a write batch.
 */
int store_maintain(struct store *st, unsigned flags, struct store_maint_stats *out,
		   struct err_msg *msg);

/* Counters of the maintenance done by this process (background included). */
void store_maint_totals(struct store *st, struct store_maint_stats *out);

/* What this process did with the bucket index, since open. */
struct store_bucket_stats {
	int enabled;                  /* the store has a bucket (store_options.objstore) */
	uint64_t index_writes;        /* index objects written */
	uint64_t index_failures;      /* index passes that failed (logged) */
	uint64_t index_blocks;        /* blocks in the last index written or read */
	uint64_t index_bytes;         /* its size */
	uint64_t footer_reads;        /* footers of new keys read by the writer */
	uint64_t footers_corrupt;     /* of those, found corrupt, plus each later pass that
				       * left the unchanged object out without reading it */
	uint64_t marks;               /* deletion marks the writer added */
	uint64_t deleted_objects;     /* marked blocks deleted from the bucket */
	uint64_t delete_failures;
	uint64_t syncs;               /* indexes read and applied */
	uint64_t sync_failures;
	uint64_t discovered_blocks;   /* listed from the index */
	uint64_t unlisted_blocks;     /* unlisted because the index no longer counts them */
	uint64_t upload_pending;      /* live blocks of this process not uploaded yet */
	int64_t upload_lag_ns;        /* age of the oldest of them (0: none) */
};
void store_bucket_stats(struct store *st, struct store_bucket_stats *out);

/*
 * Debug info references of the bucket (storage_int.h section 13).  The
 * process that writes the bucket index (STORE_BUCKET_INDEX) also keeps,
 * in the object "debuginfo-refs", for each build ID the newest time of a
 * profile referencing it among the blocks the index counts (from the
 * blocks' footers), and whether such a block references it now.  After
 * each index it writes, it hands that table to the hook a module above
 * set (the debug-info service deletes from the bucket by it), then puts
 * the table, with what the hook forgot left out and what it saw added.
 */
struct store_direfs; /* one pass's table; valid during the hook only */

struct store_direfs_entry {
	const char *build_id; /* as the blocks' footers list it (or as seen) */
	int64_t last_ns;      /* newest use: a counted block's newest profile, or when seen */
	int referenced;       /* a block the index counts references it now */
};

struct store_direfs_pass {
	int64_t now_ns;   /* the writer's wall clock */
	/* Every counted block's references are known (a footer that could not
	 * be read makes it 0: nothing may be deleted by this pass). */
	int complete;
	/*
	 * How long a build ID must stay unreferenced before its debug info
	 * may leave the bucket: bucket_delete_delay_ns plus the time a profile
	 * takes to reach the index (block range + seal delay + two maintenance
	 * intervals), so a block an ingester holds is counted first.
	 */
	int64_t delay_ns;
};

struct store_direfs_hook {
	/* Borrows r, which it may change with store_direfs_forget/seen only.
	 * Non-zero is logged; the table is written anyway. */
	int (*pass)(void *ctx, struct store_direfs *r, const struct store_direfs_pass *p);
	void *ctx; /* borrowed */
};

/* Sets (h borrowed, copied) or clears (NULL) the hook; waits for a running pass. */
void store_direfs_hook_set(struct store *st, const struct store_direfs_hook *h);
size_t store_direfs_count(const struct store_direfs *r);
/* Entry i (< count), in ascending build ID order; build_id borrowed from r. */
void store_direfs_at(const struct store_direfs *r, size_t i, struct store_direfs_entry *out);
/* Leaves entry i out of the object written; ignored while it is referenced. */
void store_direfs_forget(struct store_direfs *r, size_t i);
/* Records a first use of `build_id` (borrowed) at at_ns, when r lacks it. */
int store_direfs_seen(struct store_direfs *r, const char *build_id, int64_t at_ns);

/*
 * Reads the bucket index (one GET) and applies it as bucket_mode says
 * (DISCOVER, PRUNE); the sync thread calls it every
 * bucket_sync_interval_ns, and store_open once.  Serialized with
 * maintenance.
 */
int store_bucket_sync(struct store *st, struct err_msg *msg);

/*
 * What the store holds in memory now, for /metrics: the parts of the
 * server's RSS that grow with load and are bounded by options, each read
 * without blocking writers (RocksDB's properties, the caches' counters).
 */
struct store_memory_stats {
	uint64_t memtable_bytes;       /* RocksDB memtables, flushed ones still pinned too */
	uint64_t table_readers_bytes;  /* RocksDB table readers outside the block cache */
	uint64_t block_cache_bytes;    /* RocksDB's block cache (index and filter blocks too) */
	uint64_t block_cache_pinned_bytes; /* of those, pinned by readers */
	uint64_t symbol_cache_bytes;   /* decoded block indexes and symbols */
	uint64_t head_partitions;      /* symbol partitions in memory, retired ones included */
	uint64_t head_partitions_retired; /* of those, dropped and waiting for readers */
	uint64_t blocks_referenced;    /* block footers in memory: live, in the grave, pinned */
};

void store_memory_stats(struct store *st, struct store_memory_stats *out);

/*
 * The cache of decoded block pages and head chunks
 * (store_options.page_cache_bytes), for /metrics: what it holds and its
 * cap, and since the open the pages asked of it found (hits) and not
 * (misses, then read and decoded), the same for head chunks, and the
 * entries it dropped to stay under the cap.
 */
struct store_page_cache_stats {
	uint64_t bytes, cap_bytes, entries;
	uint64_t hits, misses, evictions;
	uint64_t head_hits, head_misses; /* head chunks asked of it, found and not */
};
void store_page_cache_stats(struct store *st, struct store_page_cache_stats *out);

/*
 * Checks every block of every tenant: the checksums of every section, the
 * decoding of every section and page, and every reference (stack ids of the
 * pages, ids inside the symbols, services and sources).  Calls cb per block
 * (error set when it is corrupt or missing).  Returns 0 when all are fine,
 * ERR_CORRUPT when any is not, another error when the check itself failed.
 */
int store_verify(struct store *st, int (*cb)(void *ctx, const struct store_block_info *b),
		 void *ctx, struct err_msg *msg);

/*
 * Checks the head: reads every key of every column family with RocksDB's
 * block checksums verified (every data and index block of every live SST
 * file, and the memtables replayed from the log), stopping at a family's
 * first error.  Calls cb once per family with its live SST files, their
 * bytes, the keys read, and error (NULL, or RocksDB's message, which names
 * the file).  Returns 0 when all are fine, ERR_CORRUPT when any is not,
 * another error when the check itself failed.
 */
struct store_head_check {
	const char *family;
	uint64_t files, bytes, keys;
	const char *error;
};
int store_verify_head(struct store *st, int (*cb)(void *ctx, const struct store_head_check *c),
		      void *ctx, struct err_msg *msg);

/*
 * Calls cb for every build ID that a retained profile references (the head
 * and every readable block) with the newest time of such a profile, once per
 * build ID, in build ID order.
 */
int store_build_ids_each(struct store *st,
			 int (*cb)(void *ctx, const char *build_id, int64_t last_ns), void *ctx,
			 struct err_msg *msg);

/* ---- durability checks (docs/operations.md) ----------------------------- */

/*
 * What store_wal_check() found in the write-ahead logs of a store directory
 * (RocksDB's *.log files, oldest first).  A batch is one store commit.
 */
struct store_wal_report {
	uint64_t files, bytes;        /* log files read, and their bytes */
	uint64_t batches, entries;    /* intact write batches, and their entries */
	uint64_t last_seq;            /* the last sequence number before any damage */
	int torn_tail;                /* the newest log ends in a cut-short record */
	/* The first damage: file name ("" when none), offset, why (static). */
	char file[64];
	uint64_t offset;
	const char *why;
	/* Intact batches after the damage: what a point-in-time recovery drops. */
	uint64_t batches_after, entries_after, bytes_after;
	uint64_t first_seq_after, last_seq_after;
	uint64_t files_after;         /* later log files holding such batches */
};

/*
 * Reads every log of the store in `dir` (which need not be open; the files
 * are only read) and fills *out.  Returns 0 whatever the logs hold (damage
 * is in out->file), or an error when a file cannot be read.
 */
int store_wal_check(const char *dir, struct store_wal_report *out, struct err_msg *msg);

/* ---- backups (docs/operations.md) -------------------------------------- */

struct store_backup_stats {
	uint64_t files, bytes; /* beside the head's checkpoint: blocks, debug files */
	uint64_t linked;       /* of those, hard links instead of copies */
	int64_t ns;            /* how long it took */
};

/*
 * Writes a consistent copy of the open (read-write) store into the new
 * directory `to` (absolute; must not exist): the head as a RocksDB
 * checkpoint, and the block and debug files of the data directory (hard
 * links where the file system allows, else copies).  Commits go on
 * meanwhile; maintenance waits.  Written under "<to>.partial" and renamed
 * at the end, so `to` is complete or absent, whatever happens.
 */
int store_backup(struct store *st, const char *to, struct store_backup_stats *out,
		 struct err_msg *msg);

/*
 * Copies backup `from` into the new data directory `data` (must not exist),
 * through "<data>.partial" renamed at the end.  The store is not opened.
 */
int store_restore(const char *from, const char *data, struct store_backup_stats *out,
		  struct err_msg *msg);

/*
 * Copies the file `from` into the new file `to` (created with `mode`; an
 * existing `to` is ERR_IO) and fsyncs it; adds the bytes copied to *bytes
 * unless bytes is NULL.  A missing `from` is ERR_NOT_FOUND with no message
 * (a backup skips files that vanish).
 */
int store_copy_file(const char *from, const char *to, unsigned mode, uint64_t *bytes,
		    struct err_msg *msg);

/*
 * What was read from the bucket for blocks without a local file (the
 * cache of store_options.objstore_cache_bytes), for /metrics and
 * benchmarks.  By kind: the footers read at open, index sections, symbol
 * sections, sample pages, whole blocks (compaction, verify).  bytes is
 * what the GETs fetched; needed_bytes what of it was asked for (the
 * sections and pages themselves, without the gaps merged GETs carried).
 * hits and misses count pieces asked of the cache.
 */
struct store_bucket_reads {
	struct {
		const char *name; /* "footer", "index", "symbols", "pages", "whole" */
		uint64_t gets, bytes, needed_bytes;
	} kind[5];
	uint64_t hits, misses, evictions, failures;
	uint64_t cached_bytes, cap_bytes;
};
/* Zeros when the store reads no bucket. */
void store_bucket_reads(struct store *st, struct store_bucket_reads *out);

/* What the push ID memory holds and did, for /metrics. */
struct store_push_id_stats {
	uint64_t remembered; /* IDs claimed in the last one to two windows */
	uint64_t duplicates; /* claims of a remembered ID: profiles not stored again */
	uint64_t overflow;   /* IDs stored but not remembered (a window was full) */
	int64_t window_ns;
};
void store_push_id_stats(struct store *st, struct store_push_id_stats *out);

/* ---- ingesters' heads for queriers (storage_int.h section 13) ----------- */

/* The route an ingester serves them on (web/). */
#define STORE_HEAD_BLOCK_PATH "/internal/v1/head-block"

/*
 * An ingester's answer: appends to `out` one block file holding every
 * profile of `tenant` in [from_ns, until_ns) that this store reads without
 * the blocks named in the request `body` (untrusted: `len` bytes of
 * `format` 1, 16 bytes per id, ascending; or 2, which adds labels every
 * series written must carry: storage_int.h section 13), or nothing when
 * there is none.  ERR_CONFLICT when the asker's bucket view `view_ns` is
 * older than an index by which this store dropped blocks of its own (it
 * must sync and ask again), ERR_INVALID for a bad body, ERR_TOO_LARGE past
 * head_block_max_bytes or a cap of the body.
 */
int store_head_block(struct store *st, const char *tenant, int64_t from_ns, int64_t until_ns,
		     int64_t view_ns, int format, const void *body, size_t len,
		     struct buf *out, struct err_msg *msg);

/* What a querier's requests to one ingester did, since open. */
struct store_peer_stats {
	const char *peer;  /* its URL, as configured */
	uint64_t ok;       /* answered (a block, or nothing to add) */
	uint64_t stale;    /* 409: our index view was older than theirs */
	uint64_t failed;   /* unreachable, an error status, an unreadable block */
	uint64_t timeout;  /* no answer within peer_timeout_ns */
	uint64_t too_large; /* past head_block_max_bytes */
	uint64_t bytes;    /* bodies received */
	uint64_t ns_sum, ns_count; /* latency of the requests that got an answer */
};
/* The number of peers, and the stats of peer i. */
size_t store_peer_count(struct store *st);
void store_peer_stats(struct store *st, size_t i, struct store_peer_stats *out);

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
 *   STORE_AUX_PERFMAP    (tenant, pid) -> a JIT perf map (debuginfo/perfmap.c)
 * Keys and values are arbitrary bytes (keys at most 1 KiB, values 16 MiB).
 */
enum store_aux {
	STORE_AUX_DEBUGINFO,
	STORE_AUX_SYMCACHE,
	STORE_AUX_SETTINGS,
	STORE_AUX_PERFMAP,
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
