/*
 * storage_int.h - private design of the store: on-disk layouts, in-memory
 * tables and the internals shared by the files of storage/ and its tests.
 *
 * Sections 1-8 are the head (RocksDB), 9 the block files, 10 how data
 * moves from the head into blocks and between blocks, and why a crash at
 * any point loses nothing acknowledged and counts nothing twice.
 *
 * ==========================================================================
 * 1. Column families
 * ==========================================================================
 *
 *   name       enum store_cf      merge operator   holds
 *   ---------  -----------------  ---------------  ---------------------------
 *   default    STORE_CF_META      -                nothing (RocksDB requires it)
 *   meta       STORE_CF_META      -                format record, tenants,
 *                                                  partitions, epochs, the
 *                                                  block registry
 *   counters   STORE_CF_META      unhex.add64.v1   per-tenant statistics
 *   series     STORE_CF_SERIES    -                series records, postings
 *   symbols    STORE_CF_SYMBOLS   -                strings, mappings, functions,
 *                                                  locations, stack trie nodes
 *   samples    STORE_CF_SAMPLES   unhex.chunk.v1   columnar sample chunks
 *                                 (+ compaction filter unhex.chunk-recode.v1)
 *   debuginfo  STORE_AUX_DEBUGINFO  -              auxiliary, global (section 7)
 *   symcache   STORE_AUX_SYMCACHE   -              auxiliary, global (section 7)
 *   settings   STORE_AUX_SETTINGS   -              auxiliary, global (section 7)
 *   perfmap    STORE_AUX_PERFMAP    -              auxiliary, global (section 7)
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
 * Format record, written when the store is created (or upgraded):
 *
 *   key   offset size  field
 *         0      4     tenant = 0
 *         4      1     'F'
 *   value 0      4     magic "UNHX"
 *         4      1     format version (STORE_FORMAT_VERSION = 3)
 *         5      8     window_ns, u64 BE: the sample chunk window.  The value
 *                      given at creation is used for the life of the store.
 *         13     16    store id: random bytes, named by the head origins of
 *                      the blocks this store sealed (section 9)
 *
 * Format 1 (the release before blocks) had a 13-byte value and no store id;
 * such a store is read as it is and upgraded at its first read-write open
 * (section 10, "Upgrade").  Format 2 (the release before runs of symbols,
 * section 5) had this record with version 2: its data is read as it is,
 * and a read-write open writes version 3, so that a format 2 release
 * refuses the store instead of failing on its runs.
 *
 * Tenant name -> id (ids are dense from 1; the next id is max + 1 at open):
 *
 *   key   0      4     tenant = 0
 *         4      1     'T'
 *         5      n     tenant name (no NUL)
 *   value 0      4     tenant id, u32 BE
 *
 * Partition (tenant, service_name) -> the service's newest partition id
 * (dense from 1 per tenant, below STORE_BLOCK_PART_MIN, never reused):
 *
 *   key   0      4     tenant id
 *         4      1     'R'
 *         5      n     service name (no NUL)
 *   value 0      4     partition id, u32 BE
 *
 * A service gets a new partition in each epoch it writes in; the record then
 * names the new one.  A record naming a partition of an earlier epoch (or
 * one dropped with its epoch) only says the id is taken.
 *
 * Epoch (section 10), one per live epoch of the head:
 *
 *   key   0      4     tenant id
 *         4      1     'E'
 *         5      4     epoch number, u32 BE
 *   value 0      4     its first partition id, u32 BE; its partitions are
 *                      [this, the next epoch's first)
 *
 * Block record, one per block of the tenant (the registry: a block file
 * without a record is adopted or deleted at open, a record without a file
 * is a missing block, section 10):
 *
 *   key   0      4     tenant id
 *         4      1     'B'
 *         5      16    block id
 *   value 0      1     record version = 1
 *         1      ...   uv level, sv range start, sv range end, sv min time,
 *                      sv max time, uv file bytes, uv series, uv profiles,
 *                      uv samples (as in the footer)
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
 * (ids are dense), the next partition id is 1 + the largest 'R' value or the
 * current epoch's first, whichever is larger.  They are derived by the range
 * scans that build the in-memory indexes anyway, so they can never disagree
 * with the data.
 *
 * ==========================================================================
 * 3. counters (merge operator unhex.add64.v1: wrapping u64 sum)
 * ==========================================================================
 *
 *   key   0      4     tenant id
 *         4      1     counter kind: enum ctr (CTR_SERIES = 1 ... CTR_EXP_SAMPLES)
 *   value 0      8     u64 little-endian; each merge operand is the same
 *
 * Operands are added in the same write batch as the records they count, so
 * the counters are exact and survive restarts.  A value of another length is
 * ignored by the merge (counted as 0) and reported as ERR_CORRUPT on read.
 * CTR_SERIES .. CTR_MAPPINGS count what the head holds: sealing subtracts
 * (a wrapping add of the negation) what it moves into a block, in the batch
 * that deletes it; dropping an epoch subtracts its symbols.  CTR_EXP_*
 * count what retention deleted (blocks, bytes, profiles, samples).
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
 * A txn writes the new symbols of a kind in a partition as one run: the
 * ids first .. first+n-1 in one key.
 *
 *   key   0      4     tenant id
 *         4      4     partition id, u32 BE
 *         8      1     kind: SYM_STRING 1, SYM_MAPPING 2, SYM_FUNCTION 3,
 *                      SYM_LOCATION 4, SYM_STACK 5
 *         9      4     first id, u32 BE; ids are dense from 1 per
 *                      (partition, kind)
 *         13     1     SYM_RUN_TAG 'R'
 *   value              per symbol, in id order: uv length, then its record
 *                      (below); at least one symbol, at most
 *                      SYM_RUN_MAX_VALUE bytes.  A run is written when the
 *                      txn moves to another partition, when it reaches
 *                      STORE_SYM_RUN_BYTES, and at commit.
 *
 * Format 2 wrote each symbol as its record under the first 13 bytes of that
 * key (no tag, the id its own).  Such keys are read as they are, before and
 * between runs: keys sort by kind and id either way, and ids never repeat.
 *
 * Why runs: a RocksDB memtable insert costs about 3,000 instructions with
 * Debian's librocksdb (bench/RESULTS.md), and ingest of the bench workload
 * adds some 65 symbols per pprof: one put per symbol was 14 % of ingest's
 * instructions, one put per run is a few per commit.
 *
 * The record of each kind:
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
 * One chunk per (series, time window, epoch):
 *
 *   key   0      4     tenant id
 *         4      1     'C'
 *         5      8     series id, u64 BE
 *         13     8     window index = floor(time_ns / window_ns), as u64 BE
 *                      with the sign bit flipped (so negative times sort first)
 *         21     4     epoch the chunk was written in, u32 BE (section 10)
 *
 * A format 1 key ends after the window (21 bytes): epoch 0.  A window's
 * chunks of several epochs are adjacent (the epoch is the last field) and
 * readers merge them by time.  All the profiles of one chunk value are of
 * one partition (one series is one service, and a txn writes one epoch).
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
 * Span ids.  A block some of whose pairs carry a trace span id (docs/ingest.md,
 * "Span ids") has magic 0xC2 (CHUNK_MAGIC_SPANS) instead, the same header and
 * payload, with two differences: pairs are unique and sorted by (stack id,
 * span id) rather than by stack id alone, so a stack id delta may be 0 (the
 * same stack under a larger span id); and after the values column comes
 *
 *     column spans, for each profile in turn:
 *       uv k                   number of its pairs that have a span id
 *       k times:  uv index delta   the pair's index in the profile minus the
 *                                  previous such index + 1 (the first: its index)
 *                 8 bytes          span id, u64 little-endian, never 0
 *
 * Span id 0 means "no span".  A block without any span id is always written
 * as 0xC1, byte for byte as before span ids existed, so stores and block files
 * written earlier are read unchanged and a store that never receives a span
 * id never holds a 0xC2 block.
 *
 * Profile ids.  A block some of whose profiles carry an id (docs/ingest.md,
 * "Profile ids": a UUID per ingested pprof) has magic 0xC3
 * (CHUNK_MAGIC_IDS), or 0xC4 (CHUNK_MAGIC_IDS_SPANS) when it also has span
 * ids, with the layout of 0xC1 (0xC2) followed by one more column:
 *
 *     column profile ids:
 *       uv k                   number of the block's profiles that have an id
 *       k times:  uv index delta   the profile's index in the block minus the
 *                                  previous such index + 1 (the first: its index)
 *                 16 bytes         the id (UUID bytes), never all zero
 *
 * The nil UUID means "no id".  Blocks whose profiles have none are written
 * as 0xC1 or 0xC2 as before, so chunks and block files of earlier releases
 * read unchanged, and a block mixing both (a compaction of old and new
 * profiles) lists only the profiles that have one.
 *
 * ==========================================================================
 * 7. debuginfo, symcache, settings and perfmap (auxiliary namespaces)
 * ==========================================================================
 *
 * Global: no tenant prefix, the only families whose keys do not start with a
 * tenant id, so they are left out of per-tenant statistics.  Keys and values
 * are stored verbatim; their formats belong to the module that writes them
 * (symbolize/symbolize_int.h documents the first two; web/routes_settings.c
 * the tenant settings; base/perfmap.h the perf maps).  The store enforces only:
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
 * struct part (a symbol partition of the head) is loaded from disk by one
 * range scan at open (every partition of the live epochs: the head is small
 * by design), or created empty by the txn that creates the partition.  It
 * is refcounted: the tenant's list holds one reference until its epoch is
 * dropped, each view and each reader or seal that pinned it one more; it is
 * freed with its last reference, so a reader that pinned the partitions of
 * its snapshot can name them even after the epoch is gone.  A partition
 * whose records do not decode is kept empty and "broken": reads and writes
 * of it fail with ERR_CORRUPT, the rest of the store works.  Its entries live
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
 *
 * struct block (blocks.c) is one block file: its decoded footer (small: the
 * section table, services, build IDs), its 'B' record, refs.  The index and
 * the symbol sections are decoded on demand into refcounted objects (struct
 * bidx, struct bsymtab) kept in one LRU cache of at most
 * store_options.symbol_cache_bytes for the whole store (struct bcache):
 * memory grows with the head and with what queries read, never with
 * history.  A block's services are partitions part_base..part_base+n-1,
 * given when the process registers the block from a counter that only grows
 * (starting at STORE_BLOCK_PART_MIN): an id names one immutable symbol table
 * for the life of the process, which is what the query engine's
 * symbolization memo (keyed by tenant, partition, location) relies on.
 * The sample pages a query reads are kept decoded too, in a second LRU
 * cache of at most store_options.page_cache_bytes (struct pcache), keyed
 * by (block, page offset): a page enters it once it passed its CRC and its
 * index's checks and decoded, readers use it in place while they pin it,
 * and a block's pages leave it when the block is marked bad, replaced
 * (store__block_uncache) or freed, so a warm query of sealed data reads
 * no page and decompresses nothing.
 *
 * ==========================================================================
 * 9. Block files
 * ==========================================================================
 *
 * A block holds every profile of one tenant over one time range, and
 * everything needed to read them: its series and postings, the symbols its
 * samples reference (per service, as columns) and the samples (per series,
 * as pages).  One file per block, written once, never modified:
 *
 *   <dir>/blocks/<tenant>/<id as 32 lower-case hex digits>.blk
 *
 * <tenant> is the tenant name with every byte outside [A-Za-z0-9_.-] (and a
 * leading '.') written %XX, which is one to one and never "." or "..".  A
 * block id is 6 bytes of the creation time in ms, big-endian, then 10
 * random bytes: unique without coordination, which the next step (several
 * processes writing to one bucket) needs.  A block being written is
 * "<id>.blk.tmp" until it is complete and fsynced (section 10).
 *
 * File layout (fixed-width integers little-endian; uv/sv varints as above):
 *
 *   offset        size  field
 *   0             8     magic "UNHXBLK
"
 *   8             4     block format version, u32 (BLOCK_FORMAT_VERSION = 1)
 *   12            4     0 (reserved)
 *   16            ...   sections back to back, at the offsets the footer
 *                       gives: the samples section, then the symbol
 *                       sections of the services in name order, then the
 *                       index section
 *   F             L     footer
 *   size - 16     4     L, footer length, u32 (<= BLOCK_MAX_FOOTER)
 *   size - 12     4     CRC-32C of the footer
 *   size - 8      8     magic "UNHXBEND"
 *
 * Reading a block takes one read of its last 64 KiB (BLOCK_SUFFIX_READ),
 * which holds the trailer and the footer unless the footer is larger (then
 * one more), and then one read per section or page it needs: exactly the
 * ranged GETs of object storage (issue 12).  Every byte read is checked: the
 * footer by its CRC, each section by the CRC in the footer, each page by
 * the CRC in the index.  CRC-32C is computed with the SSE4.2 instruction
 * (crc32c.c), several GB/s, so checking costs nothing next to zstd.  A
 * query reads each page in its range twice on a block's first use (once to
 * check every page before passing on any profile, once to decode it), and
 * not at all while the page cache (section 8) holds it decoded.
 *
 * Footer (BLOCK_FOOTER_VERSION = 1), fields in this order:
 *
 *   uv   footer version
 *   16   block id
 *   uv+  tenant name (uv length, bytes; 1..STORE_MAX_TENANT_NAME)
 *   uv   level: 0 sealed from the head, k > 0 written by compaction
 *   sv   range start ns; sv range length ns (> 0): [start, start + length)
 *   sv   min time - range start; sv max time - min time: the first and last
 *        profile time, inclusive, inside the range
 *   sv   creation time, ns since the epoch (wall clock, for people)
 *   uv   series, uv profiles, uv samples (counts of the whole block)
 *   uv   n origins (0..BLOCK_MAX_ORIGINS); each: 16 bytes store id, sv
 *        window_ns, sv first window, sv last window - first, uv max epoch:
 *        "the head chunks of this store with a window in [first, last] and
 *        an epoch <= max are in this block" (a compaction output lists the
 *        origins of all its sources)
 *   uv   n sources; each: 16 bytes, the id of a block this one replaces
 *   uv   n build IDs; each uv+ lower-case hex, sorted, unique: every build
 *        ID of a mapping of the block (for debug info retention)
 *   uv   n services (>= 1), in name order; each: uv+ service name, uv index
 *        of its symbol section in the section table, uv strings, uv
 *        mappings, uv functions, uv locations, uv stacks (its counts)
 *   uv   n sections; each: uv kind (1 index, 2 symbols, 3 samples), uv codec
 *        (0 raw, 1 zstd frame with content size), uv offset, uv stored
 *        length, uv raw length, 4 bytes CRC-32C of the stored bytes
 *
 * The decoder checks: one index section, one samples section (raw), one
 * symbol section per service and none shared, sections inside [16, size -
 * 16) and not overlapping, raw lengths <= BLOCK_MAX_SECTION_RAW, times in
 * order, counts within the limits, and nothing after the last field.
 *
 * Index section (zstd; what a query reads to find series and pages):
 *
 *   uv   n strings: the label names and values, sorted bytewise, unique
 *        each: uv length, bytes
 *   uv   n series (== footer series), sorted by (service, label key)
 *        each: uv service index
 *              uv n labels; each: uv name string id, uv value string id
 *                 (names ascending: the series' label key of section 4)
 *              uv n pages (>= 1), ascending in time; each:
 *                 sv min time - previous page's max time (first: - range
 *                    start), uv max time - min time
 *                 uv stored length, 4 bytes CRC-32C of it
 *                 uv profiles, uv samples
 *   uv   n label names of the postings, ascending string ids; each:
 *        uv name string id, uv n values; each (ascending): uv value string
 *        id, uv n series, that many uv series index deltas (ascending; the
 *        first from 0)
 *
 * A page's offset is implied: pages are stored in series order, back to
 * back, from the start of the samples section, and the lengths must add up
 * to it.  Profile and sample counts must add up to the footer's.
 *
 * Samples section (raw; its pages are compressed one by one): a page is
 * one chunk block of section 6 (magic 0xC1, codec, lengths, payload) whose
 * partition field is the service index + 1: all the profiles of one series
 * in one page span (the level-0 range; a compaction output of 24 ranges has
 * up to 24 pages per series), sorted by time, stack ids into the service's
 * trie of this block.  A query of part of a block's range reads only the
 * pages it overlaps.
 *
 * Symbol section (zstd; one per service; column by column, which is what
 * lets zstd find the regularity of each column):
 *
 *   uv   n strings (string id 0 is "" and is not stored; ids 1..n)
 *        n x uv length (>= 1), then the n strings' bytes back to back,
 *        sorted bytewise
 *   uv   n mappings; columns of n: uv memory start, uv memory limit - start,
 *        uv file offset, uv filename id, uv build ID id, uv flags
 *   uv   n functions, sorted by (name, file, system name, start line);
 *        columns: sv name id - previous name id, uv system name id, uv
 *        filename id, sv start line
 *   uv   n locations, sorted by (mapping, address, lines); columns: sv
 *        mapping id - previous (0 = none), sv address - previous address of
 *        the same mapping (the first of a mapping: - 0), uv n lines; then the
 *        lines of every location in order as three columns: uv function id,
 *        sv line, sv column
 *   uv   n stacks (trie nodes, ids 1..n, parent before child); columns: uv
 *        id - parent id (1..id; id for a root), uv location id (>= 1)
 *
 * Every id is checked against the count of what it names.  A block's
 * stacks keep the ids the writer gave them on first sight (the pages
 * already use them); trie nodes met along new paths are consecutive, so
 * most parent deltas are 1.  Strings, functions and locations are sorted
 * at the end and renumbered, so that addresses and name ids become small
 * deltas.
 *
 * Why a file format of our own and not a RocksDB SST (SstFileWriter and
 * IngestExternalFile): (1) an SST is RocksDB's format, read through
 * RocksDB's Env; the C API has no Env of our own, so a querier could not
 * read an SST in object storage with range GETs, which is what the next
 * issue needs; a footer, a section table and CRCs of our own is what
 * Pyroscope v2 and Parca do too.  (2) An SST stores keys: one record per
 * string, location and trie node, as the head does, costs bytes per entry
 * that no column layout pays (bench/RESULTS.md, "Blocks", for the numbers).
 * (3) A block is immutable and read as a whole object or in a few large
 * ranges; an SST's sorted-key machinery (block index, bloom filters,
 * compaction) buys nothing for that and would tie the object format to
 * RocksDB's release.
 *
 * ==========================================================================
 * 10. Head, epochs, sealing, compaction, retention, crash safety
 * ==========================================================================
 *
 * Clock.  The store's clock is the newest profile time stored, capped by
 * the wall clock (store__clock): sealing and retention follow it, so a
 * backfill (or a simulated month) is sealed and expired as it would have
 * been live, a profile stamped in the future cannot expire anything, and an
 * idle store keeps its last retention period.
 *
 * Epochs.  Every partition of the head belongs to one epoch; every chunk
 * key names the epoch it was written in.  A txn writes to the current
 * epoch: store_txn_partition gives the service's partition of that epoch,
 * creating it if needed.  Each seal starts a new epoch before it reads
 * anything, so the partitions of the epochs it seals receive nothing more.
 * An epoch that is not current and has no chunk left (its window set,
 * rebuilt at open from the chunk keys, is empty) is dropped: its 'E'
 * record, a DeleteRange of its partitions' symbol records, and its
 * partitions leave memory when the last reader lets go.  So the head's
 * symbols are those of the data not sealed yet: a few epochs, never
 * history.  A window whose epoch is FORCE_EPOCHS behind is sealed even if
 * its range has not ended (profiles stamped in the future), so no epoch
 * lives long.
 *
 * Sealing (maint.c, seal_tenant), per tenant, for each level-0 range
 * [r * R, (r + 1) * R) whose end + seal delay <= clock (R = block range):
 *   1. under the writer lock: choose the ranges, max_epoch = the current
 *      epoch, start epoch max_epoch + 1 (its record written synced), take a
 *      RocksDB snapshot, pin the partitions of epochs <= max_epoch.  From
 *      here on no commit adds a chunk with an epoch <= max_epoch.
 *   2. without any lock: collect the snapshot's chunk keys of those ranges
 *      with epoch <= max_epoch; per range, write the block (blockwrite.c:
 *      temporary file, fsync, rename, fsync of the directory).
 *   3. publish, under the writer lock and the write side of commit_lock:
 *      one synced batch deletes exactly the collected chunk keys, subtracts
 *      their profiles and samples from the counters and writes the block's
 *      'B' record; the block joins the tenant's list in the same critical
 *      section.  A reader takes its snapshot and its blocks under the read
 *      side: it sees the chunks or the block, never both, never neither.
 *   4. series with no chunk left leave the head (record and postings); then
 *      epochs without chunks are dropped.
 * The block's origin (store id, window range, max_epoch) says which head
 * chunks it holds.
 *
 * Compaction (compact_level): blocks of lower levels that fit in one
 * aligned slot of level k (6 and 24 level-0 ranges) are merged once the
 * slot's last range is over (by the clock the pass read once, the one its
 * sealing used); a range sealed after its slot was compacted (late
 * profiles) is merged with the slot's level-k block, so a slot ends as one
 * block whatever order its ranges were sealed in: series by label key,
 * symbols rebuilt per
 * service from the sources' (only what the pages reference), pages
 * re-cut by page span and re-sorted by time.  The output names its sources
 * and inherits their origins.  Publication: one synced batch writes the
 * output's record and deletes the sources'; in the same critical section
 * the output joins the list and the sources leave it; a source's file is
 * deleted when its last reader lets go.  A source found corrupt makes the
 * compaction give up; the source is marked and left out of the next.
 *
 * Retention: a block whose newest profile is older than clock - retention
 * (per tenant: store_options.retention_overrides) is deleted whole: its
 * record goes in a synced batch that also adds it to CTR_EXP_*, then its
 * file with its last reference.  Nothing else is scanned.
 *
 * Crash safety, case by case (kill -9 or power loss at any point):
 *   - during a commit: RocksDB's WAL; a commit that returned is durable
 *     (kill -9: always; power loss: with sync_writes).
 *   - while a block is written: only "<id>.blk.tmp" exists; open deletes
 *     it; the head still has everything.
 *   - after the rename, before the seal's batch: a complete block with no
 *     record, whose origin covers chunks still in the head.  Open adopts the
 *     block (writes its record) and deletes the head chunks its origins
 *     cover, with their counters, in one synced batch: the seal finishes
 *     (idempotently: a second crash there repeats the same deletions).
 *     The epoch record of the seal was synced before any write of the new
 *     epoch could happen, so no chunk written after the seal began can be
 *     covered.
 *   - after the seal's batch: nothing to do; an epoch left without chunks
 *     is dropped at open.
 *   - after a compaction's rename, before its batch: the output has no
 *     record and names its sources.  Open deletes every block named as a
 *     source by a complete block (files and records), then adopts the
 *     output: its profiles are counted once.
 *   - after the batch, before the sources' files are deleted: sources
 *     without records, named by the output: deleted at open, as above.
 *   - retention after the batch, before the unlink: a block without a
 *     record, not named by any output: adopted at open, and expired again.
 *   - a record without a file: a missing block, reported by readers
 *     (warnings), stats and verify, never silently dropped.
 *   - a file whose footer does not check: a corrupt block, kept for the
 *     operator, reported and skipped; its record (if any) still gives its
 *     range, so only the queries of that range warn.
 * UNHEX_CRASHPOINT=<name> makes the process kill itself (SIGKILL) at
 * "block-synced" (a block fsynced, not renamed), "seal-before-head-delete"
 * (renamed, head not deleted) and "compact-output-written" (renamed, sources
 * not forgotten): the integration tests' way to crash at those exact points.
 *
 * Upgrade.  A format 1 store is read as it is: its chunk keys are epoch 0,
 * its partitions (from 1) are epoch 0's.  The first read-write open writes
 * epoch records 0 and 1 for every tenant and the format 3 record with a new
 * store id; new writes go to epoch 1, and maintenance seals the old data
 * into blocks like any other.  A format 2 store is read as it is too; the
 * first read-write open writes the format 3 record (same store id), and
 * new symbols follow the old records of their partitions as runs
 * (section 5).  Nothing is rewritten at open.
 *
 * ==========================================================================
 * 11. Push IDs (pushid.c)
 * ==========================================================================
 *
 * A claimed profile ID (store_txn_claim_id), in meta, written in the
 * claiming txn's batch:
 *
 *   key   0      4     tenant = 0
 *         4      1     'I'
 *         5      8     generation = claim time / window, u64 BE
 *         13     4     tenant id, u32 BE
 *         17     16    two 64-bit hashes of the ID (hash_bytes, two seeds), BE
 *   value 0      8     claim time, ns, u64 BE
 *
 * The generation leads the key so that forgetting a generation is one
 * DeleteRange.  Open reads the current and the previous generation; older
 * records are deleted then and whenever a claim starts a new generation.
 * The 128-bit hash stands for the ID: a false "seen" needs two IDs of one
 * tenant colliding in 128 bits within a window.
 *
 * ==========================================================================
 * 12. The bucket index (bucketidx.c, bucket.c)
 * ==========================================================================
 *
 * One object per bucket, key "blocks-index" (BKT_KEY): every block of
 * every tenant in the bucket, what each replaces, and which are marked for
 * deletion.  Queriers and compactors find blocks with one GET of it (never a
 * LIST per query); the process that maintains it (store_options.bucket_mode
 * & STORE_BUCKET_INDEX) rewrites it at the end of each maintenance pass from
 * one LIST of "blocks/", reading by suffix GET the footers of the keys the
 * previous index does not hold.  One object for the bucket rather than one
 * per tenant: a querier learns of new tenants from the same GET, and the
 * whole index of a large fleet is a few MiB (docs/object-storage.md).  It
 * lives outside "blocks/" so that the LIST never returns it.  Writing it is
 * a plain PUT over the old one: it is computed from the LIST and the old
 * index alone, so two writers converge.
 *
 * Layout (fixed-width integers little-endian; uv/sv varints as above):
 *
 *   offset  size  field
 *   0       8     magic "UNHXBKTI"
 *   8       4     format version, u32 (BKT_VERSION = 1)
 *   12      4     CRC-32C of bytes [16, size)
 *   16      ...   body:
 *     sv   written_ns: the writer's wall clock
 *     uv   n tenants (<= BKT_MAX_TENANTS), names strictly ascending bytewise
 *     each tenant:
 *       uv+  name (uv length 1..STORE_MAX_TENANT_NAME, bytes, no NUL)
 *       uv   n blocks, ids strictly ascending (all tenants together <=
 *            BKT_MAX_BLOCKS); each block:
 *         16   block id
 *         uv   level (<= BKT_MAX_LEVEL)
 *         sv   range start; uv range length (> 0)
 *         uv   min time - range start; uv max time - min time (max < end)
 *         uv   file bytes, uv series, uv profiles, uv samples
 *         uv   n covers (<= BKT_MAX_COVERS; all blocks together <=
 *              BKT_MAX_ALL_COVERS); each 16 bytes, strictly ascending, never
 *              the block's own id: every block it replaces, transitively
 *         uv   mark: 0 none, 1 replaced, 2 duplicate, 3 expired (enum bkt_mark)
 *         sv   if mark: the writer's wall clock when it was first marked
 *   nothing after the last tenant; the whole object <= BKT_MAX_BYTES.
 *
 * Covers.  A compaction's footer names its direct sources; the index
 * stores the closure: its sources, and what each source covered as the
 * index held it when the output was first indexed (a source is deleted
 * only after its output is indexed, so the closure is complete then).  So
 * a level-0 block uploaded again after its level-1 and level-2 outputs
 * were made, and its level-1 output deleted, is still known as covered.
 *
 * Which blocks count (store__bkt_resolve, the same code on both sides):
 * among a tenant's blocks not marked, in order of level descending, then
 * number of covers descending (a block covers more than any block it
 * covers), then id ascending, a block is accepted unless its id or one of its covers is
 * already the id or a cover of an accepted block.  A block inside an
 * accepted one is thus hidden (replaced); of two compactions of the same
 * sources (two compactors by mistake) the one first in that order wins and
 * the other is hidden (duplicate), and a level-0 block that only the loser
 * covered stays visible.  The writer marks every hidden block, and every
 * accepted block whose newest profile is past its tenant's retention by
 * its clock (expired); marks are sticky (kept from the old index while the
 * key is listed).  A marked block's object is deleted by the writer once it
 * has been marked for store_options.bucket_delete_delay_ns; the mark goes
 * with the key from the next LIST.
 *
 * Readers (STORE_BUCKET_DISCOVER) list every accepted, unmarked block they
 * do not know as a remote block (its footer by one suffix GET, its contents
 * through the rcache), never one that a live block of theirs names as a
 * source, and bury (grace for readers) the remote blocks that are no longer
 * accepted.  STORE_BUCKET_PRUNE unlists this process's own uploaded blocks
 * the index marks, and deletes their files and records.
 *
 * ==========================================================================
 * 13. Ingesters' heads for queriers (peers.c)
 * ==========================================================================
 *
 * A querier (store_options.peers) opens each reader as before, then asks
 * every ingester, in parallel (libcurl multi, one total deadline), for
 * what that reader does not hold: POST STORE_HEAD_BLOCK_PATH with the
 * tenant (X-Scope-OrgID), from, until and view (the reader's
 * bucket_view_ns) as query parameters, and as the body the ids the
 * reader's blocks account for, 16 bytes each, ascending: every block's
 * own id, the covers the index gave it and the sources its footer names.
 * The ingester opens its own reader over the range without the blocks
 * whose id is in that list and writes what it reads (its head and its
 * other local blocks) as one block file of section 9 (level 0, range
 * [from, until)), the answer's body; 204 when it holds nothing there.
 * The querier registers that file unlisted (store__block_load_file) and
 * adds it to the reader; it is deleted with the reader's last reference.
 *
 * The body (store__head_req_parse), format 1 (no format= parameter): only
 * the ids.  Format 2 (format=2) adds the labels every series the query
 * reads carries (store_reader_open_eq: its profile type and the
 * equality matchers of its selector), so the ingester writes only the
 * series that carry them all:
 *
 *   uv     n_ids (<= STORE_MAX_HEAD_BLOCK_IDS)
 *   16 B   n_ids block ids, strictly ascending
 *   uv     n_eq (1..STORE_MAX_LABELS)
 *   n_eq x (uv len | name bytes | uv len | value bytes): each 1..
 *          STORE_MAX_LABEL_BYTES bytes without NUL, the pairs strictly
 *          ascending by (name, value) as strcmp orders them
 *
 * and nothing after.  A querier sends format 1 when it has no label to
 * restrict by, so an ingester older than format 2 still answers it.
 * Leaving series out keeps "count once": a series the ingester leaves out
 * lacks a label every series the query selects carries.
 *
 * Count once.  A profile of an ingester is in its head, or in a block B
 * of its own.  The querier's view holds B (or a block covering B) exactly
 * when B's id is in the list, so either the querier or the ingester
 * counts it, never both.  The one way to count it nowhere: the ingester
 * dropped B because an index marked it (STORE_BUCKET_PRUNE) that is newer
 * than the querier's view.  The ingester remembers the written_ns of the
 * newest index by which it dropped a block (bucket_pruned_ns) and answers
 * 409 (ERR_CONFLICT) to a view older than that; the querier then syncs its
 * index once and starts again with a new reader.
 *
 * Failures never fail a query: an ingester down, slow past the deadline,
 * answering an error, too large (head_block_max_bytes) or still 409 after
 * the sync is a warning of the reader naming it.
 */
#ifndef UNHEX_STORAGE_STORAGE_INT_H
#define UNHEX_STORAGE_STORAGE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rocksdb/c.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/dlist.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "base/intern.h"
#include "base/varint.h"
#include "storage/storage.h"

#define STORE_FORMAT_VERSION 3
#define FORMAT_RECORD_LEN 29
#define STORE_MAGIC "UNHX"
#define CHUNK_MAGIC 0xC1
#define CHUNK_MAGIC_SPANS 0xC2 /* section 6, "Span ids" */
#define CHUNK_MAGIC_IDS 0xC3       /* section 6, "Profile ids" */
#define CHUNK_MAGIC_IDS_SPANS 0xC4 /* both */

/* Limits on what a client may make the store hold (ERR_TOO_LARGE past them). */
#define STORE_MAX_TENANT_NAME 256
#define STORE_MAX_LABELS 128
#define STORE_MAX_LABEL_BYTES 4096
#define STORE_MAX_STRING (64 * 1024)
/* A run of new symbols (section 5) is written once it holds this many bytes;
 * one more symbol may follow, so a run's value is below twice this plus a
 * longest string. */
#define STORE_SYM_RUN_BYTES (16 * 1024)
#define SYM_RUN_MAX_VALUE (STORE_SYM_RUN_BYTES + STORE_MAX_STRING + 16)
/* The last byte of a run's 14-byte key. */
#define SYM_RUN_TAG 'R'
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
	CFI_PERFMAP,
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
	TAG_EPOCH = 'E',
	TAG_BLOCK = 'B',
	TAG_MIGRATION = 'M',
	TAG_PUSHID = 'I',
};

/* Chunk keys: tenant, 'C', series, window, epoch (format 1: without the epoch). */
#define CHUNK_KEY_LEN 25
#define CHUNK_KEY_LEN_V1 21

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
	CTR_EXP_BLOCKS,   /* what retention removed */
	CTR_EXP_BYTES,
	CTR_EXP_PROFILES,
	CTR_EXP_SAMPLES,
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
/* Adds a key (copied), or sets the value of a present one; ERR_TOO_LARGE past a cap. */
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

/*
 * The hash a partition's (and a block's) mapping and function indexes key
 * on: a mapping by its build ID when it has one, else its file name (and
 * its address kind); a function by all it is.  One definition, so the
 * head and the blocks deduplicate alike.
 */
static inline uint64_t store__map_hash(uint32_t filename, uint32_t build_id, uint32_t flags)
{
	uint64_t v = !!(flags & STORE_MAP_ADDR_VADDR) << 1;

	return build_id ? hash_u64((uint64_t)build_id << 2 | v | 1)
			: hash_u64((uint64_t)filename << 2 | v);
}

static inline uint64_t store__fn_hash(const struct sym_function *f)
{
	uint64_t h = hash_u64(f->name);

	h = hash_combine(h, f->system_name);
	h = hash_combine(h, f->filename);
	return hash_combine(h, (uint64_t)f->start_line);
}

static inline uint64_t store__loc_hash(uint32_t mapping_id, uint64_t address,
				       const struct store_line *lines, size_t n)
{
	uint64_t h = hash_combine(hash_u64(mapping_id), address);

	for (size_t i = 0; i < n; i++) {
		h = hash_combine(h, lines[i].function_id);
		h = hash_combine(h, (uint64_t)lines[i].line);
		h = hash_combine(h, (uint64_t)lines[i].column);
	}
	return h;
}

/* Two line lists equal, field by field: struct store_line has padding. */
static inline int store__lines_eq(const struct store_line *a, const struct store_line *b,
				  size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].function_id != b[i].function_id || a[i].line != b[i].line ||
		    a[i].column != b[i].column)
			return 0;
	return 1;
}
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
	/* One reference from the tenant's list while the partition's epoch
	 * lives, one per view and per reader that pinned it; the last put
	 * of a retired partition frees it (section 8). */
	_Atomic int refs;
	int retired;                   /* its epoch was dropped; under tenant.mu */
	int reclaimed;                 /* the list's reference went (store__reclaim) */
	int64_t retired_ns;            /* monotonic time of the drop */
	char *broken;                  /* why its records did not load (then empty); owned */
	struct symtab tab[SYM_NKINDS]; /* index by enum sym_kind; [0] unused */
	struct pool pool;
	struct pool_mark committed_mark; /* writer only */
	/* Whole stacks seen by the writer -> stack id, so a repeated stack
	 * costs one hash instead of one trie lookup (and, given by its
	 * frames' contents, one location lookup) per frame.  Keys are the
	 * location ids, leaf first (store_txn_stack), or the frames'
	 * contents behind four zero bytes (store_txn_stack_of, symbols.c).
	 * Holds at most STORE_MAX_STACK_CACHE bytes (keys, tables, values);
	 * cleared by an abort that added stacks: a stack the abort keeps
	 * holds only locations it keeps too.  Writer only. */
	struct bmap stack_cache;
	int dirty;                       /* in the current txn; writer only */
};

/*
 * A view of one partition: a head partition (p, counts snapshotted from its
 * published counts) or the decoded symbols of one service of a block (b,
 * counts from the section).  Holds a reference on either.
 */
struct bsymtab;
struct store_symbols {
	struct part *p;
	struct tenant *t; /* of p */
	struct bsymtab *b;
	uint32_t count[SYM_NKINDS];
};

/* ---- store (store.c) --------------------------------------------------- */

/* A head epoch (section 10): its partitions and the windows its chunks are in. */
struct epoch {
	uint32_t n;
	uint32_t part_lo;   /* its partitions are [part_lo, next epoch's part_lo) */
	int64_t *win;       /* windows holding chunks of this epoch, ascending */
	size_t n_win, cap_win;
};

struct block;

struct tenant {
	uint32_t id;
	char *name;
	int persisted;       /* has its 'T' record (a read-only open may lack it) */

	pthread_mutex_t mu;  /* guards parts, blocks and known */
	struct part **parts; /* live head partitions and retired ones still referenced, by id */
	size_t n_parts, cap_parts;
	_Atomic uint32_t committed_parts; /* largest partition id committed */

	/* Blocks: live ones by (range start, id); and every block this process
	 * registered that is still referenced, by ref (= by part_base). */
	struct block **blocks;
	size_t n_blocks, cap_blocks;
	struct block **known;
	size_t n_known, cap_known;
	/* Blocks unlisted by compaction or retention whose list reference is
	 * kept for the grace period (store__reclaim). */
	struct block **grave;
	size_t n_grave, cap_grave;

	/* Head epochs, under the store's writer lock; the last one is current. */
	struct epoch *epochs;
	size_t n_epochs, cap_epochs;

	/* writer index, under the store's writer lock */
	int index_loaded;
	struct bmap services; /* service name -> partition id */
	struct bmap series;   /* label key -> series id */
	struct bmap lnames;   /* label name -> number of its distinct values */
	struct bmap lvalues;  /* "name\0value" -> 1, of every label of a series */
	uint32_t next_part;
	uint64_t next_series;

	_Atomic uint64_t written[CFI_N]; /* bytes written by this process */
};

/*
 * Pieces of blocks whose file is missing but which are in the bucket
 * (rcache.c): the sections and pages queries read (or whole blocks, for
 * compaction and verify), each GET's bytes one file in <dir>/s3cache, at
 * most `cap` bytes, least recently used evicted first, never one a
 * handle (struct bread) pins.
 */
enum rkind { RKIND_FOOTER, RKIND_INDEX, RKIND_SYMBOLS, RKIND_PAGES, RKIND_WHOLE, RKIND_N };
struct rcache_ent;
struct rcache {
	pthread_mutex_t mu;
	int ready;
	struct objstore *os;          /* borrowed */
	char *dir;                    /* <data dir>/s3cache */
	size_t prefix_len;            /* strlen(data dir) + 1: a block's key is path + this */
	uint64_t cap, used;           /* under mu */
	struct dlist lru;             /* of rcache_ent, most recently used first */
	/* Under mu: GETs, bytes they fetched, bytes of the pieces asked for
	 * (sections, pages) among them, by enum rkind; pieces found cached
	 * and not; entries evicted; reads the bucket failed. */
	uint64_t gets[RKIND_N], got[RKIND_N], need[RKIND_N];
	uint64_t hits, misses, evictions, failures;
};

/* A byte range of a block's object to read, with the CRC it must have. */
struct rpiece {
	uint64_t off, len;
	uint32_t crc;
	int has_crc;
	int kind;              /* enum rkind */
};

/*
 * A handle reading one block: its local file (fd), or pieces of its object
 * through the cache, pinned until store__bread_release.  One thread.
 */
struct bread {
	struct block *b;            /* borrowed; the caller holds a reference */
	int fd;                     /* the local file, once opened; -1 */
	struct rcache_ent **pin;    /* entries this handle holds */
	size_t n_pin, cap_pin;
};

/* Empties (creates) <dir>/s3cache and sets up c for st->objstore. */
int store__rcache_init(struct store *st, struct rcache *c, uint64_t cap, struct err_msg *msg);
void store__rcache_release(struct rcache *c);
/* An fd of a local copy of all of b, downloaded whole first if needed; < 0 an error. */
int store__rcache_fd(struct rcache *c, struct block *b, struct err_msg *msg);
/* Drops every cached piece of b (its last reference is going). */
void store__rcache_forget(struct rcache *c, struct block *b);
/* Adds `gets` requests of `bytes` of kind to the counters (the footer reads). */
void store__rcache_count(struct rcache *c, int kind, uint64_t gets, uint64_t bytes);
void store__rcache_stats(struct rcache *c, struct store_bucket_reads *out);
const char *store__rkind_name(int kind);

void store__bread_init(struct bread *h, struct block *b);
void store__bread_release(struct bread *h);
/*
 * Makes the n pieces (borrowed) of h's block readable without the bucket
 * until h is released: those not cached are fetched in merged ranged GETs
 * at once and checked against their CRCs.  A no-op for a local block.
 */
int store__bread_fetch(struct bread *h, const struct rpiece *p, size_t n, struct err_msg *msg);
/* Reads piece p into dst (p->len bytes); fetches it first if it is not pinned. */
int store__bread_read(struct bread *h, const struct rpiece *p, void *dst, struct err_msg *msg);

/* Decoded block objects kept across queries within a byte budget (blocks.c). */
struct bcache_ent;
struct bcache {
	pthread_mutex_t mu;
	struct dlist lru;               /* of bcache_ent, most recently used first */
	size_t bytes, cap;
	uint64_t hits, misses, evictions;
};

/*
 * Decoded sample pages of blocks kept across queries (pcache.c): entries
 * keyed by (block, page offset), which name the same bytes for the life of
 * the process (blocks are immutable), and head chunks keyed by their
 * RocksDB key and checked against the value bytes a reader holds; on one
 * LRU list and in a chained hash table, all of them under `cap` bytes
 * (fixed at init; pinned pages may exceed it while pinned).  Everything
 * else under mu.
 */
struct pcache_ent;
struct bpage;
struct chunk;
struct pcache {
	pthread_mutex_t mu;
	struct dlist lru;               /* of pcache_ent, most recently used first */
	struct pcache_ent **tab;        /* hash chains; mask + 1 of them, or NULL */
	size_t mask;
	size_t n, bytes, cap;
	uint64_t hits, misses, evictions;
	uint64_t head_hits, head_misses; /* head chunks (store__pcache_head_get) */
};

/* A decoded page: its profiles sorted by time, all of partition `part`. */
struct page_view {
	uint32_t part;
	size_t n;
	const struct chunk_profile *profs;
};

/* Sets up an empty cache of at most cap bytes (> 0). */
void store__pcache_init(struct pcache *c, size_t cap);
/* Frees every entry; none may be pinned. */
void store__pcache_release(struct pcache *c);
/*
 * Page pg of b if cached: the entry, pinned (never evicted nor freed until
 * store__pcache_unpin), with *out viewing its profiles; else NULL.
 * Counts a hit or a miss.
 */
struct pcache_ent *store__pcache_get(struct pcache *c, const struct block *b,
				     const struct bpage *pg, struct page_view *out);
/* Whether page pg of b is cached (no pin, nothing counted). */
int store__pcache_holds(struct pcache *c, const struct block *b, const struct bpage *pg);
/*
 * Caches a copy of ch (borrowed; page pg of b, read, checked against its
 * CRC and the index, decoded): returns the entry pinned and *out viewing
 * it, or NULL (then *out is untouched) when the page is larger than a
 * fraction of the cap, memory is short, or b is bad.  A page another
 * thread cached first is returned instead of the copy.
 */
struct pcache_ent *store__pcache_add(struct pcache *c, struct block *b, const struct bpage *pg,
				     const struct chunk *ch, struct page_view *out);
/* Releases a pin of store__pcache_get/add (NULL: nothing). */
void store__pcache_unpin(struct pcache *c, struct pcache_ent *e);
/* Drops every entry of b; pinned ones are freed at their last unpin. */
void store__pcache_forget(struct pcache *c, struct block *b);
/*
 * Head chunks (pcache.c, "Head chunks"): the chunk stored under RocksDB key
 * `key` decoded, if the cache holds it decoded from exactly the value v of
 * vlen bytes: the entry pinned, *out viewing it; else NULL.  Counts a head
 * hit or miss.
 */
struct pcache_ent *store__pcache_head_get(struct pcache *c, const uint8_t *key, size_t klen,
					  const void *v, size_t vlen, struct page_view *out);
/*
 * Caches a copy of ch, decoded from value v of key (both borrowed), in
 * place of any entry of that key: returns it pinned and *out viewing it,
 * or NULL as store__pcache_add does.
 */
struct pcache_ent *store__pcache_head_add(struct pcache *c, const uint8_t *key, size_t klen,
					  const void *v, size_t vlen, const struct chunk *ch,
					  struct page_view *out);
/* Drops the entry of head chunk `key`, if any (its chunk was deleted). */
void store__pcache_head_forget(struct pcache *c, const uint8_t *key, size_t klen);
/* The value a head entry was decoded from (vlen bytes), valid while pinned. */
const void *store__pcache_head_value(const struct pcache_ent *e, size_t *vlen);
void store__pcache_stats(struct pcache *c, struct store_page_cache_stats *out);

/* ---- push IDs (pushid.c), section 11 ------------------------------------ */

struct pushid_entry {
	uint64_t h1, h2;    /* two 64-bit hashes of the ID */
	int64_t time_ns;    /* when it was claimed (store__wall) */
	uint32_t tenant;
};

/* One generation: the IDs claimed in one window, indexed by hmap. */
struct pushid_gen {
	uint64_t gen;
	struct pushid_entry *v; /* owned */
	size_t n, cap;
	struct hmap map;
};

/* Guarded by the writer lock; the counters are read without it. */
struct pushids {
	int64_t window_ns;
	uint32_t max;             /* entries per generation */
	struct pushid_gen g[2];   /* g[0] current, g[1] previous */
	_Atomic uint64_t remembered, duplicates, overflow;
};

void store__pushids_init(struct pushids *p, int64_t window_ns, uint32_t max);
void store__pushids_release(struct pushids *p);
/* Reads the claims of the last two generations, drops older records. */
int store__pushids_load(struct store *st, struct err_msg *msg);
/* Forgets the claims of an aborted txn. */
void store__pushids_rollback(struct store_txn *tx);

struct store {
	rocksdb_t *db;
	char *dir;
	uint8_t store_id[16];
	rocksdb_column_family_handle_t *cf[CFI_N];
	rocksdb_options_t *dbopt;
	rocksdb_options_t *cfopt[CFI_N];
	rocksdb_cache_t *cache_rocks;
	rocksdb_readoptions_t *ropt;
	rocksdb_writeoptions_t *wopt;
	rocksdb_writeoptions_t *wopt_sync; /* for the writes sealing depends on */
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

	/* Time blocks and maintenance (sections 9 and 10). */
	int64_t block_range_ns, seal_delay_ns, retention_ns;
	int64_t grace_ns;           /* retired partitions and blocks outlive readers' calls */
	struct store_retention *overrides; /* owned copies of the names */
	size_t n_overrides;
	int64_t (*clock_ns)(void *ctx);
	void *clock_ctx;
	_Atomic int64_t newest_ns;  /* newest profile time stored (head or blocks) */
	_Atomic uint32_t next_bref; /* block refs: 1, 2, ... per process */
	_Atomic uint32_t next_bpart; /* partition ids of blocks, from STORE_BLOCK_PART_MIN */
	struct bcache cache;
	struct pcache pages;        /* decoded sample pages of blocks (pcache.c) */
	pthread_mutex_t maint_mu;   /* one maintenance pass at a time */
	struct store_maint_stats maint_total; /* under maint_mu */
	struct objstore *objstore;  /* borrowed; NULL: blocks stay local only */
	uint64_t objstore_cache_bytes;
	struct rcache rcache;       /* local copies of blocks read from objstore */
	struct pushids pushids;     /* push IDs claimed lately (pushid.c) */
	/* The bucket index (bucket.c, section 12). */
	unsigned bucket_mode;       /* STORE_BUCKET_* */
	int64_t bucket_sync_ns, bucket_delete_delay_ns;
	/* The debug info references hook (direfs.c, section 13); under maint_mu. */
	struct store_direfs_hook direfs_hook;
	uint64_t direfs_writes, direfs_failures; /* under bucket_mu */
	_Atomic int bucket_indexed; /* the last index pass wrote the index */
	/* written_ns of the newest index applied whole (a reader's view is at
	 * least that new), and of the newest by which this process dropped
	 * blocks of its own (peers.c, storage_int.h section 13). */
	_Atomic int64_t bucket_view_ns, bucket_pruned_ns;
	pthread_mutex_t bucket_mu;  /* guards bucket */
	struct store_bucket_stats bucket;
	/* One sync at a time; guards the index the last one read (NULL:
	 * none) with its ETag and size, so an unchanged one is not read
	 * again (bucket.c). */
	pthread_mutex_t bucket_sync_mu;
	struct bkt_index *bucket_idx;
	char bucket_idx_etag[80];
	size_t bucket_idx_bytes;
	/* Block keys whose footer an index pass found corrupt, with the size
	 * the bucket listed then: left out without a GET while it lists them
	 * at that size (bucket.c; under maint_mu). */
	struct bkt_bad *bucket_bad;
	size_t n_bucket_bad;
	pthread_t bucket_thread;
	int bucket_started, bucket_stop;
	pthread_mutex_t bucket_wait_mu;
	pthread_cond_t bucket_cv;
	pthread_t maint_thread;
	int maint_started;
	pthread_mutex_t maint_wait_mu;
	pthread_cond_t maint_cv;
	int maint_stop;
	int64_t maint_interval_ns;
	char crashpoint[64];        /* UNHEX_CRASHPOINT: test hook, section 10 */
	/* Section 13: the ingesters a querier asks (peers.c), and the cap of a
	 * head block either side. */
	struct store_peer *peers;
	size_t n_peers;
	char *peer_token;
	int64_t peer_timeout_ns;
	uint64_t head_block_max;
	char *peers_dir;            /* <dir>/ephemeral */
	_Atomic uint64_t peers_seq;
	int peers_curl;             /* curl_global_init called */
};

struct txn_profile {
	uint64_t series;
	int64_t window;
	struct store_profile_meta meta;
	uint32_t part;
	size_t off, n; /* into ids/values (and spans) */
};

struct store_txn {
	struct store *st;
	struct tenant *t;
	uint64_t max_series; /* store_txn_set_max_series; UINT64_MAX until set */
	uint64_t max_label_names, max_label_values; /* store_txn_set_max_labels; UINT64_MAX until set */
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
	/* Span id per pair (0: none), parallel to ids; NULL until a profile of
	 * the txn has one, then allocated to alloc_spans >= n_samples. */
	uint64_t *spans;
	size_t alloc_spans;
	struct buf key, val; /* scratch */
	/* The partition of the last symbol call: ingest adds thousands of
	 * symbols to one partition per request, and resolving it through the
	 * tenant's mutex each time cost ~9 % of ingest. */
	uint32_t last_part_id;
	struct part *last_part;
	/* New symbols of one partition, a run per kind (section 5): one
	 * RocksDB put per run, not per symbol.  Written when the txn moves to
	 * another partition, when a run reaches STORE_SYM_RUN_BYTES, and at
	 * commit. */
	struct part *run_part;
	struct sym_run {
		struct buf b; /* uv length, then the record's value, per symbol */
		uint32_t first, n; /* ids first .. first+n-1 */
	} run[SYM_NKINDS];
	/* Windows of the profiles added, for the epoch's window set. */
	int64_t *wins;
	size_t n_wins, cap_wins;
	int64_t max_time;
	/* Push IDs claimed (pushid.c): the generation and its entry count at
	 * the first claim, to forget them on abort. */
	int pushid_claimed;
	uint64_t pushid_gen;
	size_t pushid_mark;
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

/* Puts the txn's pending runs of new symbols into its batch (symbols.c). */
void store__txn_put_runs(struct store_txn *tx);

/* Adds a put to the txn batch and accounts its bytes. */
void store__txn_put(struct store_txn *tx, enum cfi cf, const void *k, size_t klen,
		    const void *v, size_t vlen);
/* The RocksDB column family name of `c` ("meta", "samples", ...). */
const char *store__cfi_name(enum cfi c);
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
/* The same at a snapshot (NULL: the latest state). */
int store__scan_open_snap(struct store *st, enum cfi cf, const rocksdb_snapshot_t *snap,
			  struct scan *s, const void *lo, size_t lolen, const void *hi,
			  size_t hilen);
/* Returns 0 at the end of a clean scan, else the iterator's error. */
int store__scan_close(struct scan *s, struct err_msg *msg);
/* Opens a scan over every key of one tag of a tenant (snap NULL: the latest state). */
static inline int store__scan_tag(struct store *st, enum cfi cf, const rocksdb_snapshot_t *snap,
				  uint32_t tenant, uint8_t tag, struct scan *s)
{
	uint8_t lo[5], hi[5];

	key_tenant_tag(lo, tenant, tag);
	key_tenant_tag(hi, tenant, (uint8_t)(tag + 1));
	return store__scan_open_snap(st, cf, snap, s, lo, 5, hi, 5);
}

/* Looks up a committed tenant by name; NULL when unknown. */
struct tenant *store__tenant_find(struct store *st, const char *name);

/*
 * The live head partition `id` of t (not a reference: the writer's, or under
 * a pin); `create` lists a new empty one (writer only).
 */
int store__part_get(struct store *st, struct tenant *t, uint32_t id, int create,
		    struct part **out, struct err_msg *msg);
/* The listed partition `id` (live or retired), or NULL; t->mu held. */
struct part *store__part_find(struct tenant *t, uint32_t id);
/* Index in v (n partitions, ascending by id) of the first whose id is >= id. */
size_t store__part_lower(struct part *const *v, size_t n, uint32_t id);
/* Loads every partition of t with symbols on disk and an id >= from_id (open). */
int store__parts_load(struct store *st, struct tenant *t, uint32_t from_id,
		      struct err_msg *msg);
/* Drops a reference; the last one of a retired partition frees it. */
void store__part_put(struct tenant *t, struct part *p);
void store__part_free(struct part *p);
/* Frees what only the writer of the partition's (closed) epoch needed. */
void store__part_close_writer(struct part *p);
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

/* ---- the head's epochs (head.c), section 10 ---- */

void store__chunk_key(uint8_t k[CHUNK_KEY_LEN], uint32_t tenant, uint64_t series, int64_t window,
		      uint32_t epoch);
/* Parses a chunk key of either format; ERR_CORRUPT otherwise. */
int store__chunk_key_parse(const uint8_t *k, size_t klen, uint64_t *series, int64_t *window,
			   uint32_t *epoch);
/* The current epoch of t and its first partition id (writer lock held). */
uint32_t store__epoch_current(const struct tenant *t);
uint32_t store__epoch_part_lo(const struct tenant *t);
struct epoch *store__epoch_find(struct tenant *t, uint32_t n);
void store__epoch_put_record(rocksdb_writebatch_t *wb, struct store *st, uint32_t tenant,
			     uint32_t n, uint32_t part_lo);
int store__epochs_load(struct store *st, struct tenant *t, struct err_msg *msg);
void store__epochs_free(struct tenant *t);
/* Starts a new epoch (writer lock held): a synced record, then new partitions. */
int store__epoch_bump(struct store *st, struct tenant *t, struct err_msg *msg);
/* Notes the windows a commit wrote to in the current epoch. */
void store__epoch_note(struct tenant *t, const int64_t *wins, size_t n);
/* Forgets windows [first, last] of every epoch <= max_epoch (they were sealed). */
void store__epoch_forget_windows(struct tenant *t, uint32_t max_epoch, int64_t first,
				 int64_t last);
/* Drops every closed epoch without windows, and its symbols (writer lock held). */
int store__epochs_gc(struct store *st, struct tenant *t, uint64_t *dropped, struct err_msg *msg);
/*
 * Flushes the memtables of the tenant families (waiting for the flush):
 * after sealing deleted what it moved into blocks, they hold the history
 * of the head's writes, live and deleted, until a family fills its write
 * buffer; the flush leaves them the live head only (docs/storage.md,
 * "Memory").
 */
int store__flush_head(struct store *st, struct err_msg *msg);
/* Loads the head of t at open and finishes an interrupted seal. */
int store__head_open(struct store *st, struct tenant *t, struct err_msg *msg);
/* Whether a block holds the head chunk (w, e) already. */
int store__head_covered(struct store *st, struct tenant *t, int64_t w, uint32_t e);
/* Adds a (wrapping) decrement or increment of counter c to wb. */
void store__ctr_sub(rocksdb_writebatch_t *wb, struct store *st, uint32_t tenant, enum ctr c,
		    uint64_t n);
void store__ctr_add(rocksdb_writebatch_t *wb, struct store *st, uint32_t tenant, enum ctr c,
		    uint64_t n);

/* Head reads, at a snapshot (NULL: the latest state) (series.c, samples.c). */
int store__head_series_each(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			    store_series_cb cb, void *ctx);
int store__head_series_with(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			    const char *name, const char *value, store_series_cb cb, void *ctx);
int store__head_label_names(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			    int (*cb)(void *ctx, const char *name), void *ctx);
int store__head_label_values(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			     const char *name, int (*cb)(void *ctx, const char *value), void *ctx);
int store__head_profiles(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			 uint64_t series_id, int64_t from_ns, int64_t until_ns,
			 int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx,
			 struct err_msg *msg);
/* Deletes (into wb) every series of t for which keep() says no, with its postings. */
int store__series_gc(struct store *st, struct tenant *t, rocksdb_writebatch_t *wb,
		     int (*keep)(void *ctx, uint64_t id), void *ctx, uint64_t *deleted,
		     struct err_msg *msg);

/* Tenants (store.c): finds or creates (and records) the tenant `name`. */
int store__tenant_ensure(struct store *st, const char *name, struct tenant **out,
			 struct err_msg *msg);
/* Writes the epoch record of a new tenant into wb and gives it epoch 1 in memory. */
int store__tenant_first_epoch(struct store *st, struct tenant *t, rocksdb_writebatch_t *wb);
/* The background maintenance thread (maint.c). */
int store__maint_start(struct store *st);
void store__maint_stop(struct store *st);
/* The store's clock: the newest profile time stored, never past the wall clock. */
int64_t store__clock(struct store *st);
int64_t store__wall(struct store *st);
/* The retention of a tenant (0: none). */
int64_t store__retention(struct store *st, const char *tenant);

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
/* Their shared callbacks (store.c): the destructor of a stateless operator or
 * filter factory, and the free of a value a merge returned from malloc. */
void store__stateless_free(void *state);
void store__merge_free_value(void *state, const char *value, size_t len);

/* One (stack id, value) pair being sorted (samples.c, blockwrite.c). */
struct store__pair {
	uint32_t id;
	int64_t v;
};
/*
 * Copies n pairs sorted by stack id (a radix sort), with repeats summed,
 * from in_* to ids/vals (which may be the same arrays: tmp, 2 * n entries,
 * takes the copy); returns the count kept.
 */
size_t store__sort_pairs(uint32_t *ids, int64_t *vals, const uint32_t *in_ids,
			 const int64_t *in_vals, size_t n, struct store__pair *tmp);

/* One (stack id, span id, value) pair being sorted (samples.c, blockwrite.c). */
struct store__span_pair {
	uint32_t id;
	uint64_t span;
	int64_t v;
};
/*
 * Copies n pairs with their span ids, sorted by (stack id, span id) and with
 * repeats summed, from in_* to ids/vals/spans (which may be the same arrays:
 * tmp, n entries, takes the copy); returns the count kept.
 */
size_t store__sort_span_pairs(uint32_t *ids, int64_t *vals, uint64_t *spans,
			      const uint32_t *in_ids, const int64_t *in_vals,
			      const uint64_t *in_spans, size_t n, struct store__span_pair *tmp);

/* Chunk codec (samples.c). */
struct chunk_profile {
	struct store_profile_meta meta;
	uint32_t part; /* set by the decoder; ignored by the encoder */
	size_t n;
	const uint32_t *ids;
	const int64_t *vals;
	const uint64_t *spans; /* per pair, 0 = none; NULL: no pair has one */
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
	uint64_t *spans;  /* all span ids, owned; NULL until a 0xC2 block */
	size_t alloc_spans;
};
void store__chunk_init(struct chunk *c);
void store__chunk_release(struct chunk *c);
int store__chunk_decode(struct chunk *c, const void *v, size_t len, struct err_msg *msg);
/* Decodes more values into c, keeping what it holds (all merged by time). */
int store__chunk_decode_more(struct chunk *c, const void *v, size_t len, struct err_msg *msg);

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

/* ---- symbol access for both kinds of views (ids 1..count, checked by the caller) */

static inline const struct sym_stack *sv_stack(const struct store_symbols *v, uint32_t id);
static inline const struct sym_location *sv_loc(const struct store_symbols *v, uint32_t id);
static inline const struct sym_function *sv_fn(const struct store_symbols *v, uint32_t id);
static inline const struct sym_mapping *sv_map(const struct store_symbols *v, uint32_t id);
static inline const struct sym_string *sv_str(const struct store_symbols *v, uint32_t id);

/* ---- checksums (crc32c.c) ----------------------------------------------- */

/* CRC-32C of n bytes, continuing `crc` (0 to start). */
uint32_t store__crc32c(uint32_t crc, const void *p, size_t n);
/* The table-driven path alone (tests compare it with the fast one). */
uint32_t store__crc32c_soft(uint32_t crc, const void *p, size_t n);

/* ---- the bucket's own objects (objfmt.c) ---------------------------------- */

/*
 * The 16-byte header of the bucket's own objects (blocks-index,
 * debuginfo-refs: sections 12 and 13): 8 bytes of magic, the format
 * version (u32 LE), the CRC-32C (u32 LE) of every byte after the header.
 * store__objhead_put() appends a header with a zero CRC; store__objhead_seal()
 * fills in the CRC of what was appended after the header at `start`;
 * store__objhead_check() checks size (16..max), magic, version and CRC,
 * with a message naming `what`.
 */
#define STORE_OBJHEAD_BYTES 16
int store__objhead_put(struct buf *out, const char magic[8], uint32_t version);
void store__objhead_seal(struct buf *out, size_t start);
int store__objhead_check(const uint8_t *p, size_t len, size_t max, const char magic[8],
			 uint32_t version, const char *what, struct err_msg *msg);

/*
 * A bounded reader of such an object's body, for untrusted
 * bytes: no read passes `end`, and every failure is ERR_CORRUPT with a
 * message "<object>: <what> ... at byte <offset in the object>", `what`
 * naming the field read.  Borrows the bytes, `object` and `msg`.
 * store__objrd_init() starts after the header (checked by the caller).
 */
struct objrd {
	const uint8_t *start, *p, *end;
	const char *object; /* "bucket index", "debuginfo-refs" */
	struct err_msg *msg;
};
void store__objrd_init(struct objrd *r, const uint8_t *p, size_t len, const char *object,
		       struct err_msg *msg);
static inline size_t store__objrd_left(const struct objrd *r)
{
	return (size_t)(r->end - r->p);
}
/* Sets "<object>: bad <what> at byte N" and returns ERR_CORRUPT. */
int store__objrd_bad(struct objrd *r, const char *what);
/* A uvarint of at most `max`; an svarint. */
int store__objrd_uv(struct objrd *r, uint64_t max, uint64_t *v, const char *what);
int store__objrd_sv(struct objrd *r, int64_t *v, const char *what);
/* A count of at most `max` items that take at least min_bytes each, so fit in what is left. */
int store__objrd_count(struct objrd *r, uint64_t max, size_t min_bytes, uint64_t *n,
		       const char *what);
/* n bytes in place (*out borrows the input). */
int store__objrd_bytes(struct objrd *r, size_t n, const uint8_t **out, const char *what);
/* A uv length 1..max and that many bytes without a NUL, copied NUL-terminated into `a`. */
int store__objrd_str(struct objrd *r, struct arena *a, size_t max, const char **out,
		     const char *what);
/*
 * What a decoder that stopped with rc returns: rc, or ERR_CORRUPT for
 * bytes after the last tenant, or for ERR_TOO_LARGE (a decode arena sized
 * from the object's bytes ran out: the object lies about its counts).
 */
int store__objrd_end(struct objrd *r, int rc);

/* ---- block files: codecs (blockfmt.c), section 9 ------------------------ */

#define BLOCK_MAGIC "UNHXBLK\n"
#define BLOCK_END_MAGIC "UNHXBEND"
#define BLOCK_FORMAT_VERSION 1
#define BLOCK_FOOTER_VERSION 1
#define BLOCK_HEADER_BYTES 16
#define BLOCK_TRAILER_BYTES 16
#define BLOCK_ID_BYTES 16
#define BLOCK_SUFFIX_READ ((size_t)64 << 10) /* what one tail read fetches */
/* Limits a reader enforces on what a block file claims (ERR_CORRUPT past them). */
#define BLOCK_MAX_FOOTER ((size_t)64 << 20)
#define BLOCK_MAX_SECTION_RAW ((size_t)2 << 30)
#define BLOCK_MAX_SERVICES 65536u
#define BLOCK_MAX_SOURCES 65536u
#define BLOCK_MAX_ORIGINS 65536u
#define BLOCK_MAX_BUILD_IDS (1u << 20)
#define BLOCK_MAX_BUILD_ID_LEN 256
#define BLOCK_MAX_SECTIONS (BLOCK_MAX_SERVICES + 2)
#define BLOCK_MAX_SERIES (1u << 28)
#define BLOCK_MAX_PAGES (1u << 28)
#define BLOCK_MAX_PAGE_BYTES ((size_t)512 << 20)
/* zstd levels of sealing (fast, off the hot path anyway) and compaction. */
#define BLOCK_ZLEVEL_SEAL 3
#define BLOCK_ZLEVEL_COMPACT 6

/*
 * qsort and bsearch comparators by an element's first member: a block id
 * (uint8_t[BLOCK_ID_BYTES]: bare ids, struct bkt_block, struct direfs_block),
 * a string (const char *: struct bkt_tenant, struct direfs_tenant, struct
 * direfs_id, an array of strings), a uint64_t.  A bsearch key has the same
 * form: the id, the address of the string pointer, the address of the integer.
 */
static inline int store__cmp_id(const void *a, const void *b)
{
	return memcmp(a, b, BLOCK_ID_BYTES);
}

static inline int store__cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static inline int store__cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

enum bsec_kind { BSEC_INDEX = 1, BSEC_SYMBOLS = 2, BSEC_SAMPLES = 3 };
enum bsec_codec { BCODEC_RAW = 0, BCODEC_ZSTD = 1 };

struct bsection {
	uint32_t kind;    /* enum bsec_kind */
	uint32_t codec;   /* enum bsec_codec (the samples section is always raw) */
	uint64_t off;     /* from the start of the file */
	uint64_t len;     /* stored bytes */
	uint64_t raw_len; /* bytes once decompressed (= len when raw) */
	uint32_t crc;     /* CRC-32C of the stored bytes */
};

struct bservice {
	const char *name;  /* NUL-terminated, in bmeta.mem */
	uint32_t section;  /* index into bmeta.sec of its BSEC_SYMBOLS */
	uint32_t count[SYM_NKINDS];
};

/* The head chunks a block took over when it was sealed (see section 10). */
struct borigin {
	uint8_t store_id[16];
	int64_t window_ns;
	int64_t first, last; /* window indexes, inclusive */
	uint32_t max_epoch;
};

/* A decoded footer.  Every pointer points into `mem` (owned). */
struct bmeta {
	uint8_t id[BLOCK_ID_BYTES];
	const char *tenant;
	uint32_t level;
	int64_t range_start, range_end; /* [start, end): every profile time is inside */
	int64_t min_time, max_time;     /* of its profiles, inclusive */
	int64_t created_ns;
	uint64_t series, profiles, samples;
	struct borigin *origins;
	size_t n_origins;
	uint8_t (*sources)[BLOCK_ID_BYTES];
	size_t n_sources;
	const char **build_ids; /* sorted, unique */
	size_t n_build_ids;
	struct bservice *svc;   /* sorted by name */
	size_t n_svc;
	struct bsection *sec;
	size_t n_sec;
	uint32_t index_sec, samples_sec;
	void *mem;
	size_t mem_bytes;
};

/*
 * Parses the 16-byte trailer at `tail` of a file of `file_size` bytes into
 * the footer's length and CRC; ERR_CORRUPT when it is not a block trailer.
 */
int store__btrailer_parse(const uint8_t tail[BLOCK_TRAILER_BYTES], uint64_t file_size,
			  uint32_t *footer_len, uint32_t *footer_crc, struct err_msg *msg);
void store__btrailer_put(uint8_t tail[BLOCK_TRAILER_BYTES], uint32_t footer_len,
			 uint32_t footer_crc);
/*
 * Decodes the `len` bytes of a footer (its CRC already checked) of a file of
 * `file_size` bytes into *out (released with store__bmeta_release); every
 * count, offset and reference is checked (ERR_CORRUPT).
 */
int store__bmeta_decode(const uint8_t *p, size_t len, uint64_t file_size, struct bmeta *out,
			struct err_msg *msg);
/* Appends the footer of `m` (borrowed) to out. */
int store__bmeta_encode(const struct bmeta *m, struct buf *out);
void store__bmeta_release(struct bmeta *m);

/* A page of a series: one chunk block (section 6 layout) in the samples section. */
struct bpage {
	int64_t min_time, max_time;
	uint64_t off;      /* from the start of the samples section */
	uint32_t len, crc; /* stored bytes and their CRC-32C */
	uint32_t profiles;
	uint64_t samples;
};

struct bser {
	uint32_t svc;     /* index into bmeta.svc */
	uint32_t label0;  /* first pair in bindex.labels */
	uint32_t n_labels;
	uint32_t page0;   /* first page in bindex.pages */
	uint32_t n_pages;
};

struct bpost_name {
	uint32_t name;    /* string id */
	uint32_t val0, n_vals; /* into bindex.pvals */
};

struct bpost_val {
	uint32_t value;   /* string id */
	uint32_t list0, n; /* into bindex.plist */
};

/* The decoded index section of a block: label strings, series, postings. */
struct bindex {
	uint32_t n_str;
	const char **str;  /* NUL-terminated, sorted bytewise */
	uint32_t *str_len;
	uint32_t n_series;
	struct bser *series;
	uint32_t *labels;  /* (name id, value id) pairs */
	uint32_t n_pages;
	struct bpage *pages;
	uint32_t n_pnames;
	struct bpost_name *pnames;
	struct bpost_val *pvals;
	uint32_t *plist;   /* series indexes */
	void *mem;         /* owns everything above */
	size_t bytes;
};

/* Decodes the raw (decompressed) index section of a block with footer m. */
int store__bindex_decode(const uint8_t *p, size_t len, const struct bmeta *m,
			 struct bindex *out, struct err_msg *msg);
void store__bindex_release(struct bindex *x);

/* The decoded symbols of one service of a block; ids are 1-based as in the head. */
struct bsyms {
	uint32_t n[SYM_NKINDS];
	struct sym_string *str;   /* [id - 1] */
	struct sym_mapping *map;
	struct sym_function *fn;
	struct sym_location *loc;
	struct sym_stack *stk;
	void *mem;                /* owns everything above, and the lines */
	size_t bytes;
};

int store__bsyms_decode(const uint8_t *p, size_t len, struct bsyms *out, struct err_msg *msg);
void store__bsyms_release(struct bsyms *s);

/* ---- blocks: the registry, caches and reads (blocks.c), section 9 ------- */

#define BLOCKS_DIR "blocks"
#define BLOCK_SUFFIX ".blk"
#define BLOCK_TMP_SUFFIX ".tmp"

/* A block's 'B' record in the meta family: what the registry knows without the file. */
struct brec {
	uint32_t level;
	int64_t range_start, range_end, min_time, max_time;
	uint64_t bytes, series, profiles, samples;
};

/* A block's decoded index, shared by readers and the cache. */
struct bidx {
	_Atomic int refs;
	struct bindex x;
	size_t bytes;
	struct bcache_ent *ent;
};

struct block {
	_Atomic int refs;       /* the tenant's list while live, readers, views, maintenance */
	struct tenant *t;
	uint32_t ref;           /* process-local, 1, 2, ...: block series ids carry it */
	uint32_t part_base;     /* its services are partitions part_base + i */
	uint32_t n_parts;       /* partition ids it holds (>= 1) */
	int live;               /* listed in tenant.blocks; under tenant.mu */
	int doomed;             /* delete the file with the last reference */
	int have_meta;          /* m is the decoded footer */
	struct bmeta m;
	struct brec rec;        /* from the footer, or the 'B' record without one */
	uint8_t id[BLOCK_ID_BYTES];
	char id_hex[2 * BLOCK_ID_BYTES + 1];
	char *path;             /* the file (may be gone: a missing block) */
	uint64_t file_size;
	int64_t retired_ns;     /* monotonic time it was unlisted */
	_Atomic int bad;        /* corrupt or missing: skipped; why says why */
	_Atomic int uploaded;   /* in the bucket (store.objstore), as far as this process knows */
	struct rcache *remote;  /* no local file: read through this cache from the bucket */
	struct rcache_ent *rext; /* its pieces in that cache (under remote->mu) */
	char why[256];
	/* A remote block: every block the bucket index says it covers (owned;
	 * section 12), what a querier tells ingesters it accounts for. */
	uint8_t (*covers)[BLOCK_ID_BYTES];
	uint32_t n_covers;
	/* Cached decoded objects (under store.cache.mu). */
	struct bidx *index;
	struct bsymtab **syms;  /* [m.n_svc] */
	/* Its decoded sample pages (store.pages); the list under pages->mu. */
	struct pcache *pages;
	struct dlist page_ents;
};

/* Opens the blocks directory at store open: section 10's recovery. */
int store__blocks_open(struct store *st, struct err_msg *msg);
void store__blocks_close(struct store *st);
/* The directory of a tenant's blocks; created (with its parents) if asked. */
int store__tenant_dir(struct store *st, const char *tenant, int create, char **out,
		      struct err_msg *msg);
/*
 * Reads the footer of the new block file `path` and gives it a ref and
 * partition ids in t, unlisted: the caller's reference is the only one
 * (put without listing, the file stays for the next open to adopt).
 */
int store__block_load_unlisted(struct store *st, struct tenant *t, const char *path,
			       struct block **out, struct err_msg *msg);
void store__block_ref(struct block *b);
void store__block_put(struct store *st, struct block *b);
/* References every listed block of t (taking t->mu): owned *out, *n of them;
 * store__blocks_release() puts them all and frees the array. */
int store__blocks_snapshot(struct tenant *t, struct block ***out, size_t *n);
void store__blocks_release(struct store *st, struct block **v, size_t n);
/* Fills *bi (borrowing t's and b's strings) with b's record; error is the
 * reason b was marked bad, if it was. */
void store__block_info(const struct tenant *t, const struct block *b, struct store_block_info *bi);
/* Marks b corrupt or missing (first reason wins) and logs it once. */
void store__block_bad(struct block *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The block holding partition `part` / with ref `ref`, or NULL; t->mu held. */
struct block *store__block_by_part(struct tenant *t, uint32_t part);
struct block *store__block_by_ref(struct tenant *t, uint32_t ref);
/* Removes a live block from the list; the list's reference passes to the caller (t->mu held). */
void store__block_unlist(struct tenant *t, struct block *b);
/* Unlists b and keeps the list's reference for the grace period (t->mu held). */
int store__block_bury(struct tenant *t, struct block *b);
/* Drops the cache's copies of b's decoded index and symbols (no lock of t
 * held): a block compaction or retention replaced is read again only by the
 * readers that referenced it before, which hold their own references. */
void store__block_uncache(struct store *st, struct block *b);
/*
 * Drops the references of partitions and blocks retired more than
 * grace_ns ago (all of them with `all`): until then the calls without a
 * reader, which hold nothing between a series listing, a profile read and
 * a symbol view, still find what they were told of.
 */
void store__reclaim(struct store *st, struct tenant *t, int all);
int64_t store__mono(void);
/* Lists a registered block live, with a reference of the list (t->mu held). */
int store__block_list(struct tenant *t, struct block *b);

/* The decoded index of b (a reference the caller puts); marks b bad when corrupt. */
int store__block_index(struct store *st, struct block *b, struct bidx **out,
		       struct err_msg *msg);
void store__bidx_put(struct bidx *x);
/* The decoded symbols of service `svc` of b (a reference). */
int store__block_syms(struct store *st, struct block *b, uint32_t svc, struct bsymtab **out,
		      struct err_msg *msg);
void store__bsymtab_put(struct bsymtab *s);
/* Reads page `pg` of b through fd (opened by the caller) into out; checks its CRC. */
int store__block_page(struct block *b, int fd, const struct bpage *pg, struct buf *out,
		      struct err_msg *msg);
int store__block_open_fd(struct block *b, struct err_msg *msg);
/* pread of exactly n bytes at off; ERR_CORRUPT when the file ends first, ERR_IO. */
int store__pread_all(int fd, void *p, size_t n, uint64_t off);
/* Reads and checks one whole section into out (decompressed). */
int store__block_section(struct block *b, int fd, const struct bsection *sec, struct buf *out,
			 struct err_msg *msg);
/* The same through a handle (a local file, or the bucket's pieces). */
int store__bread_section(struct bread *h, const struct bsection *sec, int kind, struct buf *out,
			 struct err_msg *msg);
int store__bread_page(struct bread *h, const struct bpage *pg, struct buf *out,
		      struct err_msg *msg);
/*
 * Page pg of series of service svc of h's block, decoded: from the page
 * cache (*pin set: unpin after the last use of *out), or read, checked
 * against its CRC and the index, decoded into c (pb its bytes) and then
 * cached when it fits (*pin set) or not (*pin NULL, *out views c).
 * ERR_CORRUPT when the page is; the caller marks the block bad.
 */
int store__bread_chunk(struct bread *h, uint32_t svc, const struct bpage *pg, struct buf *pb,
		       struct chunk *c, struct page_view *out, struct pcache_ent **pin,
		       struct err_msg *msg);
/* The piece of page pg / of section sec of b. */
void store__page_piece(const struct block *b, const struct bpage *pg, struct rpiece *out);
void store__section_piece(const struct bsection *sec, int kind, struct rpiece *out);

/* 'B' records (meta family): key tenant|'B'|id. */
void store__brec_key(uint8_t k[5 + BLOCK_ID_BYTES], uint32_t tenant,
		     const uint8_t id[BLOCK_ID_BYTES]);
int store__brec_encode(const struct brec *r, struct buf *out);
int store__brec_decode(const uint8_t *v, size_t len, struct brec *out);
void store__brec_of(const struct bmeta *m, uint64_t bytes, struct brec *out);

/* ---- writing blocks (blockwrite.c) ---- */

/* A series of a block being written: its service, label key and labels. */
struct wser {
	char *svc;
	char *key;      /* label key bytes */
	size_t key_len;
	struct store_label *labels; /* strings in `text` */
	size_t n_labels;
	char *text;
	size_t src0, n_src; /* the sources' parts, in the caller's array */
};
/* A series' label key (section 4) into out: the order of series in a block. */
int store__label_key(const struct store_label *l, size_t n, struct buf *out);
/* The bytes the strings of n labels take NUL-terminated; copies them into
 * text (that many bytes) and points out[0, n) at the copies. */
size_t store__labels_size(const struct store_label *l, size_t n);
void store__labels_copy(const struct store_label *l, size_t n, char *text,
			struct store_label *out);
/* The service_name of labels l, or NULL. */
const char *store__service_of(const struct store_label *l, size_t n);
/* Fills s with copies of l (sorted by name) and its key; ERR_CORRUPT without a service. */
int store__wser_set(struct wser *s, const struct store_label *l, size_t n, struct buf *kb);
void store__wser_free(struct wser *s);
/* qsort order of a block's series: service name, then label key. */
int store__wser_cmp(const void *a, const void *b);

struct bw;
int store__block_id_new(uint8_t id[BLOCK_ID_BYTES]);
void store__block_id_hex(const uint8_t id[BLOCK_ID_BYTES], char out[2 * BLOCK_ID_BYTES + 1]);
/*
 * Starts a block of `tenant` over [range_start, range_end) in a temporary
 * file.  Then, services in name order (store__bw_service), each with its
 * series (store__bw_series, labels sorted by name), each with its profiles
 * (store__bw_profile: stacks of the source view `src`, which must stay
 * valid until the service ends), a page at a time (store__bw_page_end:
 * pages of a series ascend in time); store__bw_finish writes the rest,
 * makes the file durable under its final name and returns that (owned).
 * store__bw_abort removes the temporary file.  Memory: see blockwrite.c.
 */
int store__bw_open(struct store *st, const char *tenant, uint32_t level, int64_t range_start,
		   int64_t range_end, int zlevel, struct bw **out, struct err_msg *msg);
/* The same in directory `dir` (borrowed; it must exist) instead of the
 * tenant's: a block that is no part of the store (peers.c). */
int store__bw_open_in(struct store *st, const char *dir, const char *tenant, uint32_t level,
		      int64_t range_start, int64_t range_end, int zlevel, struct bw **out,
		      struct err_msg *msg);
/* Bytes written to the file so far. */
uint64_t store__bw_bytes(const struct bw *w);
int store__bw_service(struct bw *w, const char *name, struct err_msg *msg);
int store__bw_series(struct bw *w, const struct store_label *labels, size_t n,
		     struct err_msg *msg);
int store__bw_profile(struct bw *w, const struct store_symbols *src,
		      const struct store_profile_meta *meta, const uint32_t *stack_ids,
		      const int64_t *values, const uint64_t *spans, size_t n,
		      struct err_msg *msg);
int store__bw_page_end(struct bw *w, struct err_msg *msg);
int store__bw_finish(struct bw *w, const struct borigin *origins, size_t n_origins,
		     const uint8_t (*sources)[BLOCK_ID_BYTES], size_t n_sources, char **path_out,
		     struct err_msg *msg);
void store__bw_abort(struct bw *w);
int store__fsync_dir(const char *dir);

/*
 * Uploads t's live blocks not uploaded yet to st->objstore (upload.c);
 * stops at the first failure (logged, counted) and returns its code.
 */
int store__upload_tenant(struct store *st, struct tenant *t, struct store_maint_stats *ms);

/*
 * The index pass of a maintenance pass (STORE_BUCKET_INDEX; maint_mu held):
 * LIST, footers of new keys, marks, PUT, deletions past the delay; then,
 * with STORE_BUCKET_DISCOVER, the new index is applied at once.
 */
int store__bucket_index_pass(struct store *st, struct err_msg *msg);
/* Whether a compactor may compact now: the last index pass wrote the index
 * and every live block of this process is uploaded (bucket.c). */
int store__bucket_may_compact(struct store *st);
/* At open (after the blocks): one sync, then the sync thread; and at close
 * (the thread stopped), then, once no maintenance pass runs, the memory. */
int store__bucket_open(struct store *st, struct err_msg *msg);
void store__bucket_close(struct store *st);
void store__bucket_free(struct store *st);

/* Test hook: when UNHEX_CRASHPOINT names `point`, the process kills itself there. */
void store__crashpoint(struct store *st, const char *point);

/* A block's decoded symbols of one service, shared by views and the cache. */
struct bsymtab {
	_Atomic int refs;
	struct bsyms s;
	size_t bytes;          /* accounted in the cache */
	struct bcache_ent *ent; /* its cache entry while cached; under the cache lock */
};

static inline const struct sym_stack *sv_stack(const struct store_symbols *v, uint32_t id)
{
	return v->b ? &v->b->s.stk[id - 1] : segarr_get(&v->p->tab[SYM_STACK].arr, id - 1);
}

static inline const struct sym_location *sv_loc(const struct store_symbols *v, uint32_t id)
{
	return v->b ? &v->b->s.loc[id - 1] : segarr_get(&v->p->tab[SYM_LOCATION].arr, id - 1);
}

static inline const struct sym_function *sv_fn(const struct store_symbols *v, uint32_t id)
{
	return v->b ? &v->b->s.fn[id - 1] : segarr_get(&v->p->tab[SYM_FUNCTION].arr, id - 1);
}

static inline const struct sym_mapping *sv_map(const struct store_symbols *v, uint32_t id)
{
	return v->b ? &v->b->s.map[id - 1] : segarr_get(&v->p->tab[SYM_MAPPING].arr, id - 1);
}

static inline const struct sym_string *sv_str(const struct store_symbols *v, uint32_t id)
{
	return v->b ? &v->b->s.str[id - 1] : segarr_get(&v->p->tab[SYM_STRING].arr, id - 1);
}
/*
 * Appends the raw symbol section of `s` (functions sorted by name id,
 * locations by mapping then address, every stack after its parent).
 */
int store__bsyms_encode(const struct bsyms *s, struct buf *out);
/* Appends the raw index section of `x` (pages' off ignored: implied by order). */
int store__bindex_encode(const struct bindex *x, int64_t range_start, struct buf *out);

/* ---- the bucket index (bucketidx.c, bucket.c), section 12 --------------- */

#define BKT_KEY "blocks-index"
#define BKT_MAGIC "UNHXBKTI"
#define BKT_VERSION 1
#define BKT_HEADER_BYTES STORE_OBJHEAD_BYTES
/* Limits a reader enforces on what an index claims (ERR_CORRUPT past them). */
#define BKT_MAX_BYTES ((size_t)256 << 20)
#define BKT_MAX_TENANTS 65536u
#define BKT_MAX_BLOCKS (1u << 22)
#define BKT_MAX_COVERS 65536u
#define BKT_MAX_ALL_COVERS (1u << 24)
#define BKT_MAX_LEVEL 64u

enum bkt_mark { BKT_LIVE = 0, BKT_REPLACED = 1, BKT_DUPLICATE = 2, BKT_EXPIRED = 3 };

struct bkt_block {
	uint8_t id[BLOCK_ID_BYTES];
	struct brec rec;
	uint8_t (*covers)[BLOCK_ID_BYTES]; /* ascending; in the index's arena */
	uint32_t n_covers;
	uint32_t mark;     /* enum bkt_mark */
	int64_t marked_ns; /* when first marked (writer's wall clock) */
};

struct bkt_tenant {
	const char *name;         /* in the arena */
	struct bkt_block *blocks; /* ascending by id; in the arena */
	size_t n_blocks;
};

/* A decoded (or built) index; everything lives in `mem`. */
struct bkt_index {
	int64_t written_ns;
	struct bkt_tenant *tenants; /* ascending by name */
	size_t n_tenants;
	struct arena mem;
};

/* An empty index whose arena holds at most `cap` bytes (release it). */
void store__bkt_init(struct bkt_index *x, size_t cap);
void store__bkt_release(struct bkt_index *x);
/*
 * Decodes `len` bytes (untrusted) into *out (initialized here, released by
 * the caller on success only); every count, order and cap is checked and
 * anything else is ERR_CORRUPT with a message.
 */
int store__bkt_decode(const uint8_t *p, size_t len, struct bkt_index *out, struct err_msg *msg);
/* Appends the encoding of x (tenants and blocks sorted, as decoded) to out. */
int store__bkt_encode(const struct bkt_index *x, struct buf *out);
/* The tenant named `name` of x, or NULL. */
const struct bkt_tenant *store__bkt_tenant(const struct bkt_index *x, const char *name);
/* The block `id` of t, or NULL. */
const struct bkt_block *store__bkt_block(const struct bkt_tenant *t,
					 const uint8_t id[BLOCK_ID_BYTES]);
/*
 * Section 12's rule over t's blocks: out[i] is BKT_LIVE for an accepted
 * unmarked block, BKT_REPLACED or BKT_DUPLICATE for a hidden one, and the
 * block's own mark for a marked one.  out has t->n_blocks entries.
 */
int store__bkt_resolve(const struct bkt_tenant *t, uint32_t *out);

/* The key of t's block `id` ("blocks/<tenant dir>/<id>.blk") into out. */
int store__block_key(const char *tenant, const uint8_t id[BLOCK_ID_BYTES], struct buf *out);
/* Parses such a key: tenant name (NUL-terminated, >= STORE_MAX_TENANT_NAME + 1
 * bytes) and id; ERR_INVALID when it is not a block key. */
int store__block_key_parse(const char *key, char *tenant, size_t cap,
			   uint8_t id[BLOCK_ID_BYTES]);
/*
 * Reads the footer of the object `key` of st->objstore (one suffix GET, a
 * ranged GET of its header when the block is longer): *m (release it) and
 * the object's size.
 */
int store__block_remote_footer(struct store *st, const char *key, struct bmeta *m,
			       uint64_t *size, struct err_msg *msg);
/*
 * Registers the block `id` of t, which the bucket holds (rec and its covers
 * from the index), as a remote block, unlisted: its footer read now, its
 * contents through st->rcache.  Returns owned *out (list it under t->mu).
 */
int store__block_remote_new(struct store *st, struct tenant *t, const uint8_t id[BLOCK_ID_BYTES],
			    const struct brec *rec, const uint8_t (*covers)[BLOCK_ID_BYTES],
			    uint32_t n_covers, struct block **out, struct err_msg *msg);
/*
 * Registers the block file at `path` (any name; the id is its footer's,
 * the tenant must be t's) unlisted, as store__block_load_unlisted does:
 * the ephemeral blocks of a reader (peers.c).  Returns owned *out.
 */
int store__block_load_file(struct store *st, struct tenant *t, const char *path,
			   struct block **out, struct err_msg *msg);

/* ---- readers and the ingesters' heads (reader.c, peers.c), section 13 --- */

#define STORE_DEFAULT_PEER_TIMEOUT_NS (10LL * 1000000000)
#define STORE_DEFAULT_HEAD_BLOCK_MAX ((uint64_t)256 << 20)
#define STORE_MAX_HEAD_BLOCK_IDS ((size_t)1 << 22) /* ids in one request body */
#define PEERS_DIR "ephemeral"

/* store_reader_open without the blocks whose id is in skip[0..n_skip)
 * (sorted), and without asking the peers. */
int store__reader_open(struct store *st, const char *tenant, int64_t from_ns, int64_t until_ns,
		       const uint8_t (*skip)[BLOCK_ID_BYTES], size_t n_skip,
		       struct store_reader **out, struct err_msg *msg);
/* The time range r was opened over. */
void store__reader_range(const struct store_reader *r, int64_t *from, int64_t *until);
/* The bucket index written_ns r's blocks reflect at least. */
int64_t store__reader_view_ns(const struct store_reader *r);
/* The ids r's blocks account for (own, covers, sources), sorted; owned. */
int store__reader_ids(const struct store_reader *r, uint8_t (**out)[BLOCK_ID_BYTES], size_t *n);
/* Adds block b to r as one more source; takes b's reference on success. */
int store__reader_add(struct store_reader *r, struct block *b);
/* Adds a warning of r (copied). */
int store__reader_warn(struct store_reader *r, const char *text);
/* Asks the peers for what *r lacks, restricted to the series carrying
 * every label eq[0..n_eq) (borrowed), and adds it (may replace *r). */
int store__peers_read(struct store *st, const char *tenant, struct store_reader **r,
		      const struct store_label *eq, size_t n_eq, struct err_msg *msg);

/* A head-block request body, parsed (section 13). */
struct head_req {
	const uint8_t (*ids)[BLOCK_ID_BYTES]; /* borrowed from the body */
	size_t n_ids;
	struct store_label *eq; /* owned, with its strings; NULL when n_eq is 0 */
	size_t n_eq;
};
/*
 * Parses the untrusted body[0..len) of format 1 or 2 into *out (the ids
 * point into body).  ERR_INVALID for a bad format or body (truncated,
 * trailing bytes, unordered or repeated ids or labels, an empty or NUL
 * carrying label), ERR_TOO_LARGE past the caps; *out untouched then.
 */
int store__head_req_parse(int format, const void *body, size_t len, struct head_req *out,
			  struct err_msg *msg);
void store__head_req_release(struct head_req *r);
/* 1 when the label set l[0..n) carries every label of r->eq. */
int store__head_req_matches(const struct head_req *r, const struct store_label *l, size_t n);
/*
 * Appends the body asking without ids[0..n_ids) (sorted) for the series
 * carrying every label eq[0..n_eq) (borrowed; any order, repeats, and
 * labels the format cannot carry are dropped: a wider answer is still
 * exact) to out; *format is the format written (1 when no label is left).
 */
int store__head_req_encode(const uint8_t (*ids)[BLOCK_ID_BYTES], size_t n_ids,
			   const struct store_label *eq, size_t n_eq, struct buf *out,
			   int *format);
/* At store open and close: the peers' state, the ephemeral directory emptied. */
int store__peers_open(struct store *st, const struct store_options *opt, struct err_msg *msg);
void store__peers_close(struct store *st);


/* ---- debug info references of the bucket (direfs.c), section 13 ---------
 *
 * The object "debuginfo-refs", next to "blocks-index", written by the same
 * process right after each index it writes: for every build ID that a block
 * the index counts references, or that the debug-info service saw in the
 * bucket (store_direfs_seen), the newest time of such a use; and for every
 * counted block the build IDs its footer lists, so that the next pass reads
 * the footers of new blocks only.  Entries stay after their blocks leave
 * (the time is what retention counts from) until the service forgets them.
 *
 *   header  magic "UNHXDIRF" (8) | version u8 = 1, 3 zero bytes | CRC-32C of
 *           everything after the header (u32 little-endian)
 *   body    written_ns (zigzag varint)
 *           n_ids (varint), each: length (varint, 1..DIREFS_ID_MAX), bytes
 *             (strictly ascending, bytewise), last_ns (zigzag varint)
 *           n_tenants (varint), each: name length (varint,
 *             1..STORE_MAX_TENANT_NAME), name (strictly ascending),
 *             n_blocks (varint), each: id (16 bytes, strictly ascending),
 *             n_refs (varint), refs as gaps (varint): the first is an index
 *             into the ids, each next one is the previous + 1 + the gap;
 *             every index < n_ids
 *
 * A reader caps the object's size, the ids, the blocks and all refs
 * together (ERR_CORRUPT past them); a fuzz target is tests/fuzz/fuzz_direfs.c.
 */

#define DIREFS_KEY "debuginfo-refs"
#define DIREFS_MAGIC "UNHXDIRF"
#define DIREFS_VERSION 1
#define DIREFS_HEADER_BYTES STORE_OBJHEAD_BYTES
#define DIREFS_MAX_BYTES ((size_t)256 << 20)
#define DIREFS_MAX_IDS (1u << 21)
#define DIREFS_ID_MAX 128u
#define DIREFS_MAX_REFS (1u << 26)

struct direfs_id {
	const char *id;   /* NUL-terminated; in the arena */
	int64_t last_ns;
	uint8_t referenced; /* a counted block lists it (this pass) */
	uint8_t forget;     /* left out of the next encoding */
};

struct direfs_block {
	uint8_t id[BLOCK_ID_BYTES];
	uint32_t *refs;   /* ascending indexes into ids; in the arena */
	uint32_t n_refs;
};

struct direfs_tenant {
	const char *name;
	struct direfs_block *blocks; /* ascending by id */
	size_t n_blocks;
};

struct store_direfs {
	int64_t written_ns;
	struct direfs_id *ids;       /* ascending by id */
	size_t n_ids;
	struct direfs_tenant *tenants; /* ascending by name */
	size_t n_tenants;
	struct direfs_id *seen;      /* added by store_direfs_seen (heap), merged at encoding */
	size_t n_seen, cap_seen;
	struct arena mem;
};

void store__direfs_init(struct store_direfs *r, size_t cap);
void store__direfs_release(struct store_direfs *r);
/* Decodes `len` untrusted bytes into *out (released by the caller on success only). */
int store__direfs_decode(const uint8_t *p, size_t len, struct store_direfs *out,
			 struct err_msg *msg);
/* Appends the encoding of r to out: forgotten ids left out, seen ones merged in. */
int store__direfs_encode(const struct store_direfs *r, struct buf *out);
/*
 * The writer's step after index `x` was put (bucket.c): references of the
 * blocks x counts, from the previous object and the footers of new blocks;
 * the hook of store_direfs_hook_set; the object put.  Failures are logged
 * and counted; they never fail the index pass.
 */
void store__direfs_pass(struct store *st, const struct bkt_index *x, int64_t now);

#endif
