/*
 * store.c - opening the store (the RocksDB database, its column families,
 * the format record and its upgrade, the head and the blocks), tenants,
 * write transactions, statistics and flushes.  Layouts: storage_int.h.
 */
#include "storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/varint.h"

#define DEFAULT_CACHE_BYTES ((size_t)64 << 20)
#define DEFAULT_WINDOW_NS ((int64_t)600 * 1000000000)
#define DEFAULT_BLOCK_RANGE_NS ((int64_t)3600 * 1000000000)
#define DEFAULT_SYMBOL_CACHE_BYTES ((size_t)128 << 20)
#define DEFAULT_PAGE_CACHE_BYTES ((size_t)64 << 20)
#define DEFAULT_GRACE_NS ((int64_t)120 * 1000000000)
#define DEFAULT_PUSH_ID_WINDOW_NS ((int64_t)600 * 1000000000)
#define DEFAULT_PUSH_ID_MAX 524288u
#define WRITE_BUFFER_BYTES ((size_t)32 << 20)
#define DB_WRITE_BUFFER_BYTES ((size_t)128 << 20)

static const char *const cf_names[CFI_N] = {
	"default", "meta", "counters", "series", "symbols", "samples", "debuginfo", "symcache",
	"settings", "perfmap",
};

const char *store__cfi_name(enum cfi c)
{
	return c >= 0 && c < CFI_N ? cf_names[c] : "?";
}

const char *store_cf_name(enum store_cf cf)
{
	switch (cf) {
	case STORE_CF_META: return "meta";
	case STORE_CF_SERIES: return "series";
	case STORE_CF_SYMBOLS: return "symbols";
	case STORE_CF_SAMPLES: return "samples";
	case STORE_CF_BLOCKS: return "blocks";
	default: return "?";
	}
}

static enum store_cf cf_public(enum cfi c)
{
	switch (c) {
	case CFI_SERIES: return STORE_CF_SERIES;
	case CFI_SYMBOLS: return STORE_CF_SYMBOLS;
	case CFI_SAMPLES: return STORE_CF_SAMPLES;
	default: return STORE_CF_META;
	}
}

int store__rocks_err(struct err_msg *msg, int code, const char *what, char *err)
{
	if (err && strncmp(err, "Corruption", 10) == 0)
		code = ERR_CORRUPT;
	err_set(msg, code, "%s: %s", what, err ? err : "failed");
	rocksdb_free(err);
	return code;
}

/* ---- the add64 merge operator (counters) -------------------------------- */

static uint64_t le64_get(const char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | (uint8_t)p[i];
	return v;
}

static void le64_put(char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (char)(uint8_t)v;
}

static char *add64_merge(const char *existing, size_t existing_len,
			 const char *const *ops, const size_t *op_lens, int n_ops,
			 unsigned char *success, size_t *new_len)
{
	uint64_t sum = 0;
	char *out = malloc(8);

	if (!out) {
		*success = 0;
		return NULL;
	}
	if (existing && existing_len == 8)
		sum = le64_get(existing);
	for (int i = 0; i < n_ops; i++)
		if (op_lens[i] == 8)
			sum += le64_get(ops[i]);
	le64_put(out, sum);
	*new_len = 8;
	*success = 1;
	return out;
}

static char *add64_full(void *state, const char *key, size_t key_len, const char *existing,
			size_t existing_len, const char *const *ops, const size_t *op_lens,
			int n_ops, unsigned char *success, size_t *new_len)
{
	(void)state, (void)key, (void)key_len;
	return add64_merge(existing, existing_len, ops, op_lens, n_ops, success, new_len);
}

static char *add64_partial(void *state, const char *key, size_t key_len,
			   const char *const *ops, const size_t *op_lens, int n_ops,
			   unsigned char *success, size_t *new_len)
{
	(void)state, (void)key, (void)key_len;
	return add64_merge(NULL, 0, ops, op_lens, n_ops, success, new_len);
}

void store__merge_free_value(void *state, const char *value, size_t len)
{
	(void)state, (void)len;
	free((void *)value);
}

static const char *add64_name(void *state)
{
	(void)state;
	return "unhex.add64.v1";
}

void store__stateless_free(void *state)
{
	(void)state;
}

rocksdb_mergeoperator_t *store__add64_merge_operator(void)
{
	return rocksdb_mergeoperator_create(NULL, store__stateless_free, add64_full,
					    add64_partial, store__merge_free_value, add64_name);
}

/* ---- options ------------------------------------------------------------ */

/*
 * A symbol record's key is tenant, partition, kind, id (storage_int.h), and a
 * writer appends ids in order: with a hint per 9-byte prefix the memtable
 * inserts each record next to the previous one of its kind instead of
 * searching its skip list from the top.  A counter (5 bytes) takes a merge
 * operand per commit under the same key, each sorted right before the one
 * of the commit before: a hint per whole key does for them what the prefix
 * does for symbols (17 M of the 440 M instructions of RocksDB's writes in
 * callgrind's count of 1,200 pprofs of the bench workload).  Chunks would
 * save 12 M more, but the memtable keeps a hint (a splice in its arena, a
 * node of a hash map on the heap) per distinct key, and a fleet's chunk
 * keys, one per series and window, are many.  The C API has no setter
 * for the option; the options-string parser sets it.  Without it (an older
 * RocksDB) the options stay as they were.
 */
static rocksdb_options_t *with_insert_hint(rocksdb_options_t *o, const char *opt)
{
	rocksdb_options_t *h = rocksdb_options_create();
	char *err = NULL;

	rocksdb_get_options_from_string(o, opt, h, &err);
	if (err) {
		rocksdb_free(err);
		rocksdb_options_destroy(h);
		return o;
	}
	rocksdb_options_destroy(o);
	return h;
}

static rocksdb_options_t *cf_options(struct store *st, enum cfi c)
{
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_block_based_table_options_t *bbo = rocksdb_block_based_options_create();

	rocksdb_block_based_options_set_block_cache(bbo, st->cache_rocks);
	rocksdb_block_based_options_set_block_size(bbo, 16 * 1024);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(bbo, 1);
	rocksdb_block_based_options_set_format_version(bbo, 5);
	if (c == CFI_SERIES || c == CFI_META || c == CFI_COUNTERS || c == CFI_DEBUGINFO ||
	    c == CFI_SYMCACHE || c == CFI_SETTINGS || c == CFI_PERFMAP)
		rocksdb_block_based_options_set_filter_policy(
			bbo, rocksdb_filterpolicy_create_bloom_full(10));
	rocksdb_options_set_block_based_table_factory(o, bbo);
	rocksdb_block_based_options_destroy(bbo);

	rocksdb_options_set_write_buffer_size(o, WRITE_BUFFER_BYTES);
	rocksdb_options_set_max_write_buffer_number(o, 3);
	rocksdb_options_set_level_compaction_dynamic_level_bytes(o, 1);
	/* Commits write raw sample blocks (storage_int.h, section 6), so lz4
	 * keeps flushed files small until compaction recodes the chunks with
	 * zstd; the bottommost level, where most bytes end up, uses zstd. */
	rocksdb_options_set_compression(o, rocksdb_lz4_compression);
	rocksdb_options_set_bottommost_compression(o, rocksdb_zstd_compression);
	if (c == CFI_SYMBOLS)
		o = with_insert_hint(o, "memtable_insert_with_hint_prefix_extractor=fixed:9");
	else if (c == CFI_COUNTERS)
		o = with_insert_hint(o, "memtable_insert_with_hint_prefix_extractor=fixed:5");

	if (c == CFI_SAMPLES) {
		rocksdb_options_set_merge_operator(o, store__chunk_merge_operator());
		rocksdb_options_set_compaction_filter_factory(o, store__chunk_filter_factory());
	} else if (c == CFI_COUNTERS)
		rocksdb_options_set_merge_operator(o, store__add64_merge_operator());
	return o;
}

/* RocksDB's WALRecoveryMode values (the C API takes the int). */
enum { WAL_TOLERATE_TAIL = 0, WAL_POINT_IN_TIME = 2 };

static void db_options(struct store *st, int wal_recover)
{
	rocksdb_options_t *o = rocksdb_options_create();

	/*
	 * A log that ends in a cut-short record (a crash mid-write) opens; one
	 * damaged anywhere else fails to open instead of silently losing every
	 * write after the damage (RocksDB's default, point-in-time, does that).
	 */
	rocksdb_options_set_wal_recovery_mode(o, wal_recover ? WAL_POINT_IN_TIME
							     : WAL_TOLERATE_TAIL);
	rocksdb_options_set_paranoid_checks(o, 1);

	rocksdb_options_set_create_if_missing(o, 1);
	rocksdb_options_set_create_missing_column_families(o, 1);
	rocksdb_options_increase_parallelism(o, 2);
	rocksdb_options_set_max_background_jobs(o, 2);
	rocksdb_options_set_db_write_buffer_size(o, DB_WRITE_BUFFER_BYTES);
	rocksdb_options_set_max_total_wal_size(o, (uint64_t)256 << 20);
	rocksdb_options_set_bytes_per_sync(o, (uint64_t)1 << 20);
	rocksdb_options_set_wal_bytes_per_sync(o, (uint64_t)1 << 20);
	rocksdb_options_set_keep_log_file_num(o, 3);
	rocksdb_options_set_max_log_file_size(o, (size_t)8 << 20);
	rocksdb_options_set_info_log_level(o, 2); /* WARN */
	st->dbopt = o;
}

/* ---- tenants ------------------------------------------------------------ */

static struct tenant *tenant_new(uint32_t id, const char *name, size_t len)
{
	struct tenant *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->name = malloc(len + 1);
	if (!t->name) {
		free(t);
		return NULL;
	}
	memcpy(t->name, name, len);
	t->name[len] = '\0';
	t->id = id;
	t->persisted = 1;
	pthread_mutex_init(&t->mu, NULL);
	store__bmap_init(&t->services, HMAP_MAX, STORE_MAX_PARTS * STORE_MAX_LABEL_BYTES);
	store__bmap_init(&t->series, STORE_MAX_SERIES, STORE_MAX_SERIES_KEY_BYTES);
	store__bmap_init(&t->lnames, HMAP_MAX, STORE_MAX_SERIES_KEY_BYTES);
	store__bmap_init(&t->lvalues, HMAP_MAX, STORE_MAX_SERIES_KEY_BYTES);
	return t;
}

static void tenant_free(struct tenant *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_parts; i++)
		store__part_free(t->parts[i]);
	free(t->parts);
	free(t->blocks);
	free(t->known);
	free(t->grave);
	store__epochs_free(t);
	store__index_drop(t);
	pthread_mutex_destroy(&t->mu);
	free(t->name);
	free(t);
}

/* Index of the first tenant whose name is >= name; caller holds st->mu. */
static size_t tenant_lower(struct store *st, const char *name)
{
	size_t lo = 0, hi = st->n_tenants;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(st->tenants[mid]->name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct tenant *store__tenant_find(struct store *st, const char *name)
{
	struct tenant *t = NULL;
	size_t i;

	pthread_mutex_lock(&st->mu);
	i = tenant_lower(st, name);
	if (i < st->n_tenants && strcmp(st->tenants[i]->name, name) == 0)
		t = st->tenants[i];
	pthread_mutex_unlock(&st->mu);
	return t;
}

/* Makes room for one more tenant, so that tenant_insert cannot fail. */
static int tenant_reserve(struct store *st)
{
	int rc;

	pthread_mutex_lock(&st->mu);
	rc = GROW(st->tenants, st->alloc_tenants, st->n_tenants + 1, STORE_MAX_TENANTS, NULL);
	pthread_mutex_unlock(&st->mu);
	return rc;
}

static void tenant_insert(struct store *st, struct tenant *t)
{
	size_t i;

	pthread_mutex_lock(&st->mu);
	i = tenant_lower(st, t->name);
	memmove(st->tenants + i + 1, st->tenants + i, (st->n_tenants - i) * sizeof(*st->tenants));
	st->tenants[i] = t;
	st->n_tenants++;
	if (t->id >= st->next_tenant)
		st->next_tenant = t->id + 1;
	pthread_mutex_unlock(&st->mu);
}

static int load_tenants(struct store *st, struct err_msg *msg)
{
	uint8_t lo[5], hi[5];
	rocksdb_iterator_t *it;
	char *err = NULL;
	int rc = 0;

	key_tenant_tag(lo, 0, TAG_TENANT);
	key_tenant_tag(hi, 0, TAG_TENANT + 1);
	it = rocksdb_create_iterator_cf(st->db, st->ropt, st->cf[CFI_META]);
	for (rocksdb_iter_seek(it, (const char *)lo, 5); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);
		struct tenant *t;
		uint32_t max = 0;

		if (memcmp(k, hi, klen < 5 ? klen : 5) >= 0)
			break;
		if (klen <= 5 || klen > 5 + STORE_MAX_TENANT_NAME || vlen != 4 ||
		    memchr(k + 5, 0, klen - 5)) {
			rc = err_set(msg, ERR_CORRUPT, "meta: bad tenant record");
			break;
		}
		t = tenant_new(be32_get((const uint8_t *)v), k + 5, klen - 5);
		if (!t) {
			rc = ERR_NOMEM;
			break;
		}
		if (t->id == 0 || t->id == UINT32_MAX) {
			tenant_free(t);
			rc = err_set(msg, ERR_CORRUPT, "meta: bad tenant id");
			break;
		}
		rc = tenant_reserve(st);
		if (!rc)
			rc = store__scan_parts(st, t, NULL, &max, msg);
		if (rc) {
			tenant_free(t);
			break;
		}
		atomic_store(&t->committed_parts, max);
		tenant_insert(st, t);
	}
	if (!rc) {
		rocksdb_iter_get_error(it, &err);
		if (err)
			rc = store__rocks_err(msg, ERR_IO, "meta scan", err);
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/* Writes the format record of this version (a new store, or an upgrade). */
static int put_format(struct store *st, struct err_msg *msg)
{
	uint8_t k[5], v[FORMAT_RECORD_LEN];
	char *err = NULL;

	key_tenant_tag(k, 0, TAG_FORMAT);
	memcpy(v, STORE_MAGIC, 4);
	v[4] = STORE_FORMAT_VERSION;
	be64_put(v + 5, (uint64_t)st->window_ns);
	memcpy(v + 13, st->store_id, 16);
	rocksdb_put_cf(st->db, st->wopt_sync, st->cf[CFI_META], (const char *)k, 5, (const char *)v,
		       sizeof(v), &err);
	if (err)
		return store__rocks_err(msg, ERR_IO, "write format record", err);
	return 0;
}

/*
 * Reads or writes the format record; sets st->window_ns and st->store_id.
 * *upgrade is the format of an older store, else 0: format 1 (no store id,
 * no epochs, chunk keys without an epoch), whose data is read as it is, as
 * epoch 0; format 2 (symbols one record each), read as it is (section 10).
 */
static int load_format(struct store *st, int64_t want_window, int *upgrade, struct err_msg *msg)
{
	uint8_t k[5];
	char *err = NULL, *val;
	size_t vlen;

	*upgrade = 0;
	key_tenant_tag(k, 0, TAG_FORMAT);
	val = rocksdb_get_cf(st->db, st->ropt, st->cf[CFI_META], (const char *)k, 5, &vlen, &err);
	if (err)
		return store__rocks_err(msg, ERR_IO, "read format record", err);
	if (val) {
		int ok = vlen >= 13 && memcmp(val, STORE_MAGIC, 4) == 0;
		uint8_t ver = vlen > 4 ? (uint8_t)val[4] : 0;
		int64_t w = ok ? (int64_t)be64_get((const uint8_t *)val + 5) : 0;

		if (ok && ver >= 2 && ver <= STORE_FORMAT_VERSION && vlen == FORMAT_RECORD_LEN)
			memcpy(st->store_id, val + 13, 16);
		rocksdb_free(val);
		if (!ok || w <= 0)
			return err_set(msg, ERR_CORRUPT, "%s: not an unhex store (bad format record)",
				       "meta");
		if ((ver == 1 && vlen == 13) || (ver == 2 && vlen == FORMAT_RECORD_LEN)) {
			*upgrade = ver;
		} else if (ver != STORE_FORMAT_VERSION || vlen != FORMAT_RECORD_LEN) {
			return err_set(msg, ERR_CORRUPT, "store format version %u, expected %u",
				       ver, STORE_FORMAT_VERSION);
		}
		st->window_ns = w;
		return 0;
	}
	if (st->read_only)
		return err_set(msg, ERR_NOT_FOUND, "no unhex store (format record missing)");
	st->window_ns = want_window;
	if (store__block_id_new(st->store_id))
		return err_set(msg, ERR_IO, "no random bytes for the store id");
	return put_format(st, msg);
}

/*
 * Opens the families that exist on disk: a read-only open cannot create the
 * auxiliary families of a store written by an older version, and those stay
 * NULL (empty).  A missing tenant family means this is no unhex store.
 */
static int open_read_only(struct store *st, const char *dir, const rocksdb_options_t **cfo,
			  char **err, struct err_msg *msg)
{
	const char *names[CFI_N];
	const rocksdb_options_t *opts[CFI_N];
	rocksdb_column_family_handle_t *handles[CFI_N];
	int idx[CFI_N], n = 0;
	size_t n_disk = 0;
	char **disk = rocksdb_list_column_families(st->dbopt, dir, &n_disk, err);

	if (*err) {
		if (disk) /* an empty list is allocated even on failure */
			rocksdb_list_column_families_destroy(disk, n_disk);
		return 0; /* reported by the caller */
	}
	for (int c = 0; c < CFI_N; c++) {
		int found = 0;
		for (size_t i = 0; i < n_disk && !found; i++)
			found = strcmp(disk[i], cf_names[c]) == 0;
		if (!found && c < CFI_TENANT_N) {
			rocksdb_list_column_families_destroy(disk, n_disk);
			return err_set(msg, ERR_CORRUPT,
				       "%s: not an unhex store (no column family \"%s\")", dir,
				       cf_names[c]);
		}
		if (found) {
			names[n] = cf_names[c];
			opts[n] = cfo[c];
			idx[n++] = c;
		}
	}
	rocksdb_list_column_families_destroy(disk, n_disk);
	st->db = rocksdb_open_for_read_only_column_families(st->dbopt, dir, n, names, opts,
							    handles, 0, err);
	if (*err)
		return 0;
	for (int i = 0; i < n; i++)
		st->cf[idx[i]] = handles[i];
	return 0;
}

static int copy_options(struct store *st, const struct store_options *opt, struct err_msg *msg)
{
	const char *cp = getenv("UNHEX_CRASHPOINT");

	st->dir = strdup(opt->dir);
	st->objstore = opt->objstore;
	st->objstore_cache_bytes = opt->objstore_cache_bytes;
	if (!st->dir)
		return ERR_NOMEM;
	st->block_range_ns = opt->block_range_ns ? opt->block_range_ns : DEFAULT_BLOCK_RANGE_NS;
	st->seal_delay_ns = opt->seal_delay_ns ? opt->seal_delay_ns : st->block_range_ns / 4;
	st->retention_ns = opt->retention_ns;
	st->clock_ns = opt->clock_ns;
	st->clock_ctx = opt->clock_ctx;
	st->maint_interval_ns = opt->maintain_interval_ns;
	st->grace_ns = opt->reader_grace_ns ? opt->reader_grace_ns : DEFAULT_GRACE_NS;
	st->cache.cap = opt->symbol_cache_bytes ? opt->symbol_cache_bytes : DEFAULT_SYMBOL_CACHE_BYTES;
	if (opt->block_range_ns < 0 || opt->seal_delay_ns < 0 || opt->retention_ns < 0 ||
	    opt->maintain_interval_ns < 0)
		return err_set(msg, ERR_INVALID, "store: negative durations");
	if (opt->n_retention_overrides) {
		st->overrides = calloc(opt->n_retention_overrides, sizeof(*st->overrides));
		if (!st->overrides)
			return ERR_NOMEM;
		for (size_t i = 0; i < opt->n_retention_overrides; i++) {
			const struct store_retention *o = &opt->retention_overrides[i];
			if (!o->tenant || o->ns < 0)
				return err_set(msg, ERR_INVALID, "store: bad retention override");
			st->overrides[i].tenant = strdup(o->tenant);
			st->overrides[i].ns = o->ns;
			st->n_overrides++;
			if (!st->overrides[i].tenant)
				return ERR_NOMEM;
		}
	}
	if (opt->push_id_window_ns < 0)
		return err_set(msg, ERR_INVALID, "store: negative push ID window");
	if (opt->push_id_max > HMAP_MAX)
		return err_set(msg, ERR_INVALID, "store: push ID cap above %u", HMAP_MAX);
	store__pushids_init(&st->pushids,
			    opt->push_id_window_ns ? opt->push_id_window_ns : DEFAULT_PUSH_ID_WINDOW_NS,
			    opt->push_id_max ? opt->push_id_max : DEFAULT_PUSH_ID_MAX);
	if (cp && strlen(cp) < sizeof(st->crashpoint))
		strcpy(st->crashpoint, cp);
	st->next_bref = 1;
	st->next_bpart = STORE_BLOCK_PART_MIN;
	pthread_mutex_init(&st->cache.mu, NULL);
	store__pcache_init(&st->pages,
			   opt->page_cache_bytes ? opt->page_cache_bytes : DEFAULT_PAGE_CACHE_BYTES);
	pthread_mutex_init(&st->maint_mu, NULL);
	pthread_mutex_init(&st->maint_wait_mu, NULL);
	pthread_mutex_init(&st->bucket_mu, NULL);
	pthread_mutex_init(&st->bucket_sync_mu, NULL);
	pthread_mutex_init(&st->bucket_wait_mu, NULL);
	st->bucket_mode = opt->bucket_mode;
	st->bucket_sync_ns = opt->bucket_sync_interval_ns;
	st->bucket_delete_delay_ns = opt->bucket_delete_delay_ns;
	if (opt->bucket_sync_interval_ns < 0 || opt->bucket_delete_delay_ns < 0)
		return err_set(msg, ERR_INVALID, "store: negative durations");
	if (opt->bucket_mode & ~(unsigned)(STORE_BUCKET_INDEX | STORE_BUCKET_DISCOVER |
					   STORE_BUCKET_PRUNE | STORE_NO_COMPACT))
		return err_set(msg, ERR_INVALID, "store: unknown bucket mode flags");
	if ((opt->bucket_mode & ~(unsigned)STORE_NO_COMPACT) && !opt->objstore)
		return err_set(msg, ERR_INVALID, "store: the bucket index needs a bucket");
	return 0;
}

/*
 * RocksDB refused to open `dir` as corrupt: says where (store_wal_check)
 * and how to go on.  Returns ERR_CORRUPT.
 */
static int wal_refusal(const char *dir, const char *rocks, struct err_msg *msg)
{
	struct store_wal_report r;
	struct err_msg m;

	err_clear(&m);
	if (store_wal_check(dir, &r, &m) || !r.file[0])
		return err_set(msg, ERR_CORRUPT,
			       "store %s: RocksDB refuses to open it: %s.  Nothing was changed; "
			       "`unhex verify --data %s` checks every file (docs/operations.md)",
			       dir, rocks, dir);
	return err_set(msg, ERR_CORRUPT,
		       "store %s: write-ahead log %s/%s damaged at byte %llu (%s); %llu intact "
		       "writes (%llu entries) follow, which opening would drop.  Nothing was "
		       "changed.  To open with the writes before the damage (a copy of the log "
		       "is kept), run: unhex recover --data %s (docs/operations.md)",
		       dir, dir, r.file, (unsigned long long)r.offset, r.why,
		       (unsigned long long)r.batches_after,
		       (unsigned long long)r.entries_after, dir);
}

int store_open(const struct store_options *opt, struct store **out, struct err_msg *msg)
{
	struct store *st;
	const rocksdb_options_t *cfo[CFI_N];
	char *err = NULL;
	int rc = 0, upgrade = 0;

	if (!opt || !opt->dir || !*opt->dir)
		return err_set(msg, ERR_INVALID, "store: no directory given");
	if (opt->window_ns < 0)
		return err_set(msg, ERR_INVALID, "store: negative window");
	st = calloc(1, sizeof(*st));
	if (!st)
		return ERR_NOMEM;
	pthread_mutex_init(&st->writer, NULL);
	pthread_mutex_init(&st->mu, NULL);
	pthread_rwlock_init(&st->commit_lock, NULL);
	st->read_only = opt->read_only;
	st->next_tenant = 1;
	rc = copy_options(st, opt, msg);
	if (rc)
		goto fail;
	st->cache_rocks = rocksdb_cache_create_lru(opt->block_cache_bytes ? opt->block_cache_bytes
									  : DEFAULT_CACHE_BYTES);
	db_options(st, opt->wal_recover);
	for (int c = 0; c < CFI_N; c++) {
		st->cfopt[c] = cf_options(st, (enum cfi)c);
		cfo[c] = st->cfopt[c];
	}
	st->ropt = rocksdb_readoptions_create();
	st->wopt = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wopt, opt->sync_writes ? 1 : 0);
	st->wopt_sync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wopt_sync, 1);

	if (st->read_only)
		rc = open_read_only(st, opt->dir, cfo, &err, msg);
	else
		st->db = rocksdb_open_column_families(st->dbopt, opt->dir, CFI_N, cf_names, cfo,
						      st->cf, &err);
	if (rc)
		goto fail;
	if (err) {
		if (strncmp(err, "Corruption:", 11) == 0) {
			rc = wal_refusal(opt->dir, err, msg);
			rocksdb_free(err);
		} else {
			rc = store__rocks_err(msg, st->read_only ? ERR_NOT_FOUND : ERR_IO,
					      st->read_only ? "open store read-only" : "open store",
					      err);
		}
		st->db = NULL;
		goto fail;
	}
	rc = load_format(st, opt->window_ns ? opt->window_ns : DEFAULT_WINDOW_NS, &upgrade, msg);
	if (rc)
		goto fail;
	if (st->block_range_ns % st->window_ns != 0 || st->block_range_ns < st->window_ns) {
		rc = err_set(msg, ERR_INVALID, "store: the block range (%lld ns) is not a multiple of "
			     "the chunk window (%lld ns)", (long long)st->block_range_ns,
			     (long long)st->window_ns);
		goto fail;
	}
	rc = load_tenants(st, msg);
	if (!rc)
		rc = store__pushids_load(st, msg);
	if (!rc)
		rc = store__migrate(st, msg);
	if (!rc)
		rc = store__blocks_open(st, msg);
	for (size_t i = 0; !rc && i < st->n_tenants; i++)
		rc = store__head_open(st, st->tenants[i], msg);
	if (rc)
		goto fail;
	if (upgrade && !st->read_only) {
		/* Every tenant has its epochs now: the store is of this format.
		 * From format 2 nothing else changes: new symbols are written as
		 * runs, and the record keeps an older release from opening a store
		 * it cannot read. */
		if (upgrade == 1 && store__block_id_new(st->store_id)) {
			rc = err_set(msg, ERR_IO, "no random bytes for the store id");
			goto fail;
		}
		rc = put_format(st, msg);
		if (rc)
			goto fail;
		if (upgrade == 1)
			log_info("store %s: upgraded from format 1; its data is in the head and is "
				 "sealed into blocks by maintenance", opt->dir);
		else
			log_info("store %s: upgraded from format %d", opt->dir, upgrade);
	}
	rc = store__peers_open(st, opt, msg);
	if (!rc)
		rc = store__bucket_open(st, msg);
	if (!rc)
		rc = store__maint_start(st);
	if (rc)
		goto fail;
	*out = st;
	return 0;
fail:
	store_close(st);
	return rc;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	store__bucket_close(st);
	store__maint_stop(st);
	store__bucket_free(st);
	store__blocks_close(st);
	if (st->db) {
		if (!st->read_only)
			store_flush(st, NULL);
		for (int c = 0; c < CFI_N; c++)
			if (st->cf[c])
				rocksdb_column_family_handle_destroy(st->cf[c]);
		rocksdb_close(st->db);
	}
	for (size_t i = 0; i < st->n_tenants; i++)
		tenant_free(st->tenants[i]);
	free(st->tenants);
	for (int c = 0; c < CFI_N; c++)
		if (st->cfopt[c])
			rocksdb_options_destroy(st->cfopt[c]);
	if (st->dbopt)
		rocksdb_options_destroy(st->dbopt);
	if (st->cache_rocks)
		rocksdb_cache_destroy(st->cache_rocks);
	if (st->ropt)
		rocksdb_readoptions_destroy(st->ropt);
	if (st->wopt)
		rocksdb_writeoptions_destroy(st->wopt);
	if (st->wopt_sync)
		rocksdb_writeoptions_destroy(st->wopt_sync);
	store__pushids_release(&st->pushids);
	for (size_t i = 0; i < st->n_overrides; i++)
		free((char *)st->overrides[i].tenant);
	free(st->overrides);
	store__peers_close(st);
	free(st->dir);
	pthread_mutex_destroy(&st->cache.mu);
	store__pcache_release(&st->pages);
	pthread_mutex_destroy(&st->maint_mu);
	pthread_mutex_destroy(&st->maint_wait_mu);
	pthread_mutex_destroy(&st->bucket_mu);
	pthread_mutex_destroy(&st->bucket_sync_mu);
	pthread_mutex_destroy(&st->bucket_wait_mu);
	pthread_mutex_destroy(&st->writer);
	pthread_mutex_destroy(&st->mu);
	pthread_rwlock_destroy(&st->commit_lock);
	free(st);
}

/* ---- transactions ------------------------------------------------------- */

void store__txn_put(struct store_txn *tx, enum cfi cf, const void *k, size_t klen,
		    const void *v, size_t vlen)
{
	rocksdb_writebatch_put_cf(tx->wb, tx->st->cf[cf], k, klen, v, vlen);
	tx->written[cf] += klen + vlen;
}

void store__txn_merge(struct store_txn *tx, enum cfi cf, const void *k, size_t klen,
		      const void *v, size_t vlen)
{
	rocksdb_writebatch_merge_cf(tx->wb, tx->st->cf[cf], k, klen, v, vlen);
	tx->written[cf] += klen + vlen;
}

int store__txn_touch(struct store_txn *tx, struct part *p)
{
	if (p->dirty)
		return 0;
	int rc = GROW(tx->dirty, tx->alloc_dirty, tx->n_dirty + 1, STORE_MAX_PARTS, NULL);

	if (rc)
		return rc;
	tx->dirty[tx->n_dirty++] = p;
	p->dirty = 1;
	return 0;
}

static void txn_free(struct store_txn *tx)
{
	if (tx->wb)
		rocksdb_writebatch_destroy(tx->wb);
	free(tx->dirty);
	free(tx->profs);
	free(tx->ids);
	free(tx->vals);
	free(tx->spans);
	free(tx->wins);
	buf_release(&tx->key);
	buf_release(&tx->val);
	for (int k = 0; k < SYM_NKINDS; k++)
		buf_release(&tx->run[k].b);
	free(tx);
}

int store_txn_begin(struct store *st, const char *tenant, struct store_txn **out,
		    struct err_msg *msg)
{
	struct store_txn *tx;
	size_t len;
	int rc;

	if (st->read_only)
		return err_set(msg, ERR_INVALID, "store is open read-only");
	if (!tenant || !*tenant)
		return err_set(msg, ERR_INVALID, "empty tenant name");
	len = strlen(tenant);
	if (len > STORE_MAX_TENANT_NAME)
		return err_set(msg, ERR_TOO_LARGE, "tenant name longer than %d bytes",
			       STORE_MAX_TENANT_NAME);
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return ERR_NOMEM;
	tx->st = st;
	tx->max_series = UINT64_MAX;
	tx->max_label_names = UINT64_MAX;
	tx->max_label_values = UINT64_MAX;
	tx->max_time = INT64_MIN;
	buf_init(&tx->key, STORE_MAX_LABEL_KEY);
	buf_init(&tx->val, STORE_MAX_TXN_VALUE);
	for (int k = 0; k < SYM_NKINDS; k++)
		buf_init(&tx->run[k].b, SYM_RUN_MAX_VALUE);
	tx->wb = rocksdb_writebatch_create();
	pthread_mutex_lock(&st->writer);
	tx->t = store__tenant_find(st, tenant);
	if (!tx->t) {
		uint8_t k[5 + STORE_MAX_TENANT_NAME], v[4];

		if (st->next_tenant == UINT32_MAX) {
			rc = err_set(msg, ERR_TOO_LARGE, "too many tenants");
			goto fail;
		}
		rc = tenant_reserve(st);
		if (rc)
			goto fail;
		tx->t = tenant_new(st->next_tenant, tenant, len);
		if (!tx->t) {
			rc = ERR_NOMEM;
			goto fail;
		}
		tx->new_tenant = 1;
		tx->t->index_loaded = 1;
		tx->t->next_part = 1;
		tx->t->next_series = 1;
		key_tenant_tag(k, 0, TAG_TENANT);
		memcpy(k + 5, tenant, len);
		be32_put(v, tx->t->id);
		store__txn_put(tx, CFI_META, k, 5 + len, v, 4);
		/* A new tenant starts in epoch 1 (epoch 0 is a format 1 store's data). */
		rc = store__tenant_first_epoch(st, tx->t, tx->wb);
		if (rc)
			goto fail;
	} else if (!tx->t->index_loaded) {
		rc = store__index_load(st, tx->t, msg);
		if (rc)
			goto fail;
	}
	*out = tx;
	return 0;
fail:
	if (tx->new_tenant)
		tenant_free(tx->t);
	pthread_mutex_unlock(&st->writer);
	txn_free(tx);
	return rc;
}

static void txn_rollback(struct store_txn *tx)
{
	store__pushids_rollback(tx);
	for (size_t i = 0; i < tx->n_dirty; i++) {
		store__part_rollback(tx->dirty[i]);
		tx->dirty[i]->dirty = 0;
	}
	if (tx->new_tenant) {
		tenant_free(tx->t);
	} else if (tx->index_dirty) {
		/* The writer index holds the aborted series and partitions; drop
		 * it so the next txn rebuilds it from what was committed. */
		store__index_drop(tx->t);
	}
}

void store_txn_abort(struct store_txn *tx)
{
	struct store *st;

	if (!tx)
		return;
	st = tx->st;
	txn_rollback(tx);
	pthread_mutex_unlock(&st->writer);
	txn_free(tx);
}

int store__txn_flush_profiles(struct store_txn *tx, struct err_msg *msg);

int store_txn_commit(struct store_txn *tx, struct err_msg *msg)
{
	struct store *st = tx->st;
	struct tenant *t = tx->t;
	char *err = NULL;
	int rc = 0;

	if (tx->failed) {
		rc = err_set(msg, ERR_INVALID, "commit of a txn after an internal failure");
		goto fail;
	}
	rc = store__txn_flush_profiles(tx, msg);
	if (rc)
		goto fail;
	store__txn_put_runs(tx);
	for (int c = 1; c < CTR_N; c++) {
		uint8_t k[5];
		char v[8];
		if (!tx->ctr[c])
			continue;
		key_tenant_tag(k, t->id, (uint8_t)c);
		le64_put(v, tx->ctr[c]);
		store__txn_merge(tx, CFI_COUNTERS, k, 5, v, 8);
	}
	/* RocksDB counts every key comparison in a thread-local perf context
	 * unless told not to (its default level is "count"); nothing reads
	 * those counts, and a commit of new symbols compares keys thousands of
	 * times.  The level is per thread, so each committing thread sets it. */
	rocksdb_set_perf_level(rocksdb_disable);
	pthread_rwlock_wrlock(&st->commit_lock);
	if (rocksdb_writebatch_count(tx->wb) > 0) {
		rocksdb_write(st->db, st->wopt, tx->wb, &err);
		if (err) {
			pthread_rwlock_unlock(&st->commit_lock);
			rc = store__rocks_err(msg, ERR_IO, "commit", err);
			goto fail;
		}
	}
	for (int c = 0; c < CFI_N; c++) {
		atomic_fetch_add(&t->written[c], tx->written[c]);
		atomic_fetch_add(&st->written_total[c], tx->written[c]);
	}
	for (size_t i = 0; i < tx->n_dirty; i++) {
		store__part_publish(tx->dirty[i]);
		tx->dirty[i]->dirty = 0;
	}
	atomic_store_explicit(&t->committed_parts, t->next_part - 1, memory_order_release);
	if (tx->new_tenant)
		tenant_insert(st, t);
	pthread_rwlock_unlock(&st->commit_lock);
	store__epoch_note(t, tx->wins, tx->n_wins);
	if (tx->n_profs) {
		int64_t cur = atomic_load(&st->newest_ns);
		while (tx->max_time > cur &&
		       !atomic_compare_exchange_weak(&st->newest_ns, &cur, tx->max_time))
			;
	}
	pthread_mutex_unlock(&st->writer);
	txn_free(tx);
	return rc;
fail:
	txn_rollback(tx);
	pthread_mutex_unlock(&st->writer);
	txn_free(tx);
	return rc;
}

/* ---- reading tenants, statistics, flush ---------------------------------- */

/* Copies the tenant list (pointers stay valid until store_close). */
static int tenants_snapshot(struct store *st, struct tenant ***out, size_t *n)
{
	struct tenant **v;

	pthread_mutex_lock(&st->mu);
	v = malloc((st->n_tenants ? st->n_tenants : 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&st->mu);
		return ERR_NOMEM;
	}
	if (st->n_tenants)
		memcpy(v, st->tenants, st->n_tenants * sizeof(*v));
	*n = st->n_tenants;
	pthread_mutex_unlock(&st->mu);
	*out = v;
	return 0;
}

int store_tenants(struct store *st, int (*cb)(void *ctx, const char *tenant), void *ctx)
{
	struct tenant **v = NULL;
	size_t n = 0;
	int rc = tenants_snapshot(st, &v, &n);

	for (size_t i = 0; !rc && i < n; i++)
		rc = cb(ctx, v[i]->name);
	free(v);
	return rc;
}

static int read_counters(struct store *st, uint32_t tenant, uint64_t *ctr,
			 struct err_msg *msg)
{
	for (int c = 1; c < CTR_N; c++) {
		uint8_t k[5];
		size_t vlen;
		char *err = NULL, *v;

		key_tenant_tag(k, tenant, (uint8_t)c);
		v = rocksdb_get_cf(st->db, st->ropt, st->cf[CFI_COUNTERS], (const char *)k, 5,
				   &vlen, &err);
		if (err)
			return store__rocks_err(msg, ERR_IO, "read counters", err);
		ctr[c] = 0;
		if (v) {
			int ok = vlen == 8;
			if (ok)
				ctr[c] = le64_get(v);
			rocksdb_free(v);
			if (!ok)
				return err_set(msg, ERR_CORRUPT,
					       "counters: value of %zu bytes, expected 8", vlen);
		}
	}
	return 0;
}

/* SST bytes of the tenant's key range in each column family. */
static int tenant_sst_bytes(struct store *st, uint32_t tenant, uint64_t *bytes,
			    struct err_msg *msg)
{
	uint8_t lo[4], hi[5];
	const char *start[1] = { (const char *)lo }, *limit[1] = { (const char *)hi };
	size_t slen[1] = { 4 }, llen[1];

	be32_put(lo, tenant);
	if (tenant == UINT32_MAX) {
		memset(hi, 0xff, 5);
		llen[0] = 5;
	} else {
		be32_put(hi, tenant + 1);
		llen[0] = 4;
	}
	for (int c = 0; c < CFI_TENANT_N; c++) {
		char *err = NULL;
		rocksdb_approximate_sizes_cf(st->db, st->cf[c], 1, start, slen, limit, llen,
					     &bytes[c], &err);
		if (err)
			return store__rocks_err(msg, ERR_IO, "approximate sizes", err);
	}
	return 0;
}

/* RocksDB's integer property `name` of family c (0 when it has none). */
static uint64_t rocks_property(struct store *st, enum cfi c, const char *name)
{
	uint64_t v = 0;

	if (!st->cf[c] || rocksdb_property_int_cf(st->db, st->cf[c], name, &v))
		return 0;
	return v;
}

static uint64_t memtable_bytes(struct store *st, enum cfi c)
{
	return rocks_property(st, c, "rocksdb.cur-size-all-mem-tables");
}

static uint64_t rocks_property_sum(struct store *st, const char *name)
{
	uint64_t sum = 0;

	for (int c = 0; c < CFI_N; c++)
		sum += rocks_property(st, (enum cfi)c, name);
	return sum;
}

/* Flushes the memtables of column families [first, end) and waits for it. */
static int flush_cfs(struct store *st, int first, int end, struct err_msg *msg)
{
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	int rc = 0;

	if (!fo)
		return ERR_NOMEM;
	rocksdb_flushoptions_set_wait(fo, 1);
	for (int c = first; c < end && !rc; c++) {
		char *err = NULL;

		rocksdb_flush_cf(st->db, fo, st->cf[c], &err);
		if (err)
			rc = store__rocks_err(msg, ERR_IO, "flush", err);
	}
	rocksdb_flushoptions_destroy(fo);
	return rc;
}

int store__flush_head(struct store *st, struct err_msg *msg)
{
	return flush_cfs(st, CFI_META, CFI_TENANT_N, msg);
}

void store_page_cache_stats(struct store *st, struct store_page_cache_stats *out)
{
	store__pcache_stats(&st->pages, out);
}

void store_memory_stats(struct store *st, struct store_memory_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->memtable_bytes = rocks_property_sum(st, "rocksdb.size-all-mem-tables");
	out->table_readers_bytes = rocks_property_sum(st, "rocksdb.estimate-table-readers-mem");
	out->block_cache_bytes = rocksdb_cache_get_usage(st->cache_rocks);
	out->block_cache_pinned_bytes = rocksdb_cache_get_pinned_usage(st->cache_rocks);
	pthread_mutex_lock(&st->cache.mu);
	out->symbol_cache_bytes = st->cache.bytes;
	pthread_mutex_unlock(&st->cache.mu);
	pthread_mutex_lock(&st->mu);
	for (size_t i = 0; i < st->n_tenants; i++) {
		struct tenant *t = st->tenants[i];

		pthread_mutex_lock(&t->mu);
		for (size_t k = 0; k < t->n_parts; k++) {
			out->head_partitions++;
			out->head_partitions_retired += t->parts[k]->retired != 0;
		}
		out->blocks_referenced += t->n_known;
		pthread_mutex_unlock(&t->mu);
	}
	pthread_mutex_unlock(&st->mu);
}

/* A set of 64-bit hashes (of label keys), for counting distinct series. */
struct hset {
	uint64_t *v;
	size_t n, cap;
	struct hmap ix;
	struct buf key;
	int rc;
};

static int hset_add_labels(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
			   size_t n)
{
	struct hset *h = ctx;
	struct hmap_probe pr;
	uint64_t x;
	uint32_t i;
	int rc;

	(void)id, (void)part;
	buf_reset(&h->key);
	rc = buf_put_uvarint(&h->key, n);
	for (size_t k = 0; k < n && !rc; k++) {
		rc = buf_puts(&h->key, l[k].name);
		if (!rc)
			rc = buf_putc(&h->key, '\0');
		if (!rc)
			rc = buf_puts(&h->key, l[k].value);
		if (!rc)
			rc = buf_putc(&h->key, '\0');
	}
	if (rc)
		return h->rc = rc;
	x = hash_bytes(h->key.data, h->key.len, 0x5e71e5);
	for (i = hmap_first(&h->ix, x, &pr); i != HMAP_NONE; i = hmap_next(&h->ix, &pr))
		if (h->v[i] == x)
			return 0;
	rc = GROW(h->v, h->cap, h->n + 1, (size_t)STORE_MAX_SERIES, NULL);
	if (!rc)
		rc = hmap_put_probed(&h->ix, &pr, (uint32_t)h->n);
	if (!rc)
		h->v[h->n++] = x;
	return h->rc = rc;
}

/*
 * The distinct label sets of t, head and blocks (hashes of the label keys:
 * two label sets whose 64-bit hashes collide count once, which the count
 * of a stats page can live with).
 */
static uint64_t distinct_series(struct store *st, struct tenant *t)
{
	struct store_label l[STORE_MAX_LABELS];
	struct block **v = NULL;
	struct hset h;
	size_t n = 0;
	uint64_t count;

	memset(&h, 0, sizeof(h));
	hmap_init(&h.ix, STORE_MAX_SERIES, NULL);
	buf_init(&h.key, STORE_MAX_LABEL_KEY);
	store__head_series_each(st, t, NULL, hset_add_labels, &h);
	store__blocks_snapshot(t, &v, &n); /* without memory, the head's alone */
	for (size_t i = 0; i < n; i++) {
		struct bidx *x = NULL;
		if (v[i]->have_meta && !atomic_load(&v[i]->bad) &&
		    !store__block_index(st, v[i], &x, NULL)) {
			for (uint32_t j = 0; j < x->x.n_series && !h.rc; j++) {
				const struct bser *se = &x->x.series[j];
				for (uint32_t k = 0; k < se->n_labels; k++) {
					l[k].name = x->x.str[x->x.labels[2 * ((size_t)se->label0 + k)]];
					l[k].value = x->x.str[x->x.labels[2 * ((size_t)se->label0 + k) + 1]];
				}
				hset_add_labels(&h, 0, 0, l, se->n_labels);
			}
			store__bidx_put(x);
		}
	}
	store__blocks_release(st, v, n);
	count = h.n;
	free(h.v);
	hmap_release(&h.ix);
	buf_release(&h.key);
	return count;
}

/* Adds what the blocks of t hold to s. */
static void block_stats(struct tenant *t, struct store_tenant_stats *s)
{
	int64_t oldest = INT64_MAX, newest = INT64_MIN;

	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n_blocks; i++) {
		const struct block *b = t->blocks[i];
		const struct brec *r = &b->rec;

		s->blocks++;
		if (atomic_load(&b->bad))
			s->blocks_unreadable++;
		if (r->range_end == INT64_MAX)
			continue; /* nothing known of it */
		s->bytes[STORE_CF_BLOCKS] += r->bytes;
		s->profiles += r->profiles;
		s->samples += r->samples;
		if (r->min_time < oldest)
			oldest = r->min_time;
		if (r->max_time > newest)
			newest = r->max_time;
		for (size_t k = 0; b->have_meta && k < b->m.n_svc; k++) {
			s->stacks += b->m.svc[k].count[SYM_STACK];
			s->locations += b->m.svc[k].count[SYM_LOCATION];
			s->functions += b->m.svc[k].count[SYM_FUNCTION];
			s->mappings += b->m.svc[k].count[SYM_MAPPING];
		}
	}
	pthread_mutex_unlock(&t->mu);
	if (oldest != INT64_MAX) {
		s->oldest_ns = oldest;
		s->newest_ns = newest;
	}
}

/*
 * RocksDB 7.8's C API has no approximate size including memtables, so the
 * unflushed bytes of each column family are shared among tenants in
 * proportion to the bytes each tenant wrote through this process (exact with
 * one tenant, and zero after store_flush).  A store that wrote nothing yet
 * (read-only, or just reopened with a WAL to replay) shares them in
 * proportion to the tenants' record counts instead.
 */
int store_stats(struct store *st, int (*cb)(void *ctx, const struct store_tenant_stats *s),
		void *ctx, struct err_msg *msg)
{
	struct tenant **v = NULL;
	uint64_t (*ctr)[CTR_N] = NULL;
	struct store_tenant_stats *blk = NULL;
	uint64_t mem[CFI_N], total_records = 0;
	size_t n = 0;
	int rc = tenants_snapshot(st, &v, &n);

	if (rc)
		return rc;
	ctr = calloc(n ? n : 1, sizeof(*ctr));
	blk = calloc(n ? n : 1, sizeof(*blk));
	if (!ctr || !blk) {
		rc = ERR_NOMEM;
		goto out;
	}
	/* The counters and the block lists as of one moment: a seal moves
	 * profiles from the head's counters to a block in one commit
	 * (seal_publish), and counters read before it with a list read after
	 * would count them twice.  Commits wait for these gets and list walks,
	 * as for a reader's snapshot. */
	pthread_rwlock_rdlock(&st->commit_lock);
	for (size_t i = 0; !rc && i < n; i++) {
		rc = read_counters(st, v[i]->id, ctr[i], msg);
		if (!rc)
			block_stats(v[i], &blk[i]);
	}
	pthread_rwlock_unlock(&st->commit_lock);
	if (rc)
		goto out;
	for (size_t i = 0; i < n; i++)
		for (int c = 1; c < CTR_EXP_BLOCKS; c++)
			total_records += ctr[i][c];
	for (int c = 0; c < CFI_TENANT_N; c++)
		mem[c] = memtable_bytes(st, (enum cfi)c);
	for (size_t i = 0; i < n; i++) {
		struct store_tenant_stats s;
		uint64_t sst[CFI_N], records = 0;

		rc = tenant_sst_bytes(st, v[i]->id, sst, msg);
		if (rc)
			goto out;
		s = blk[i]; /* the blocks' share; the head's is added */
		s.tenant = v[i]->name;
		/* With blocks, a label set may be in several places. */
		s.series = s.blocks ? distinct_series(st, v[i]) : ctr[i][CTR_SERIES];
		s.profiles += ctr[i][CTR_PROFILES];
		s.samples += ctr[i][CTR_SAMPLES];
		s.stacks += ctr[i][CTR_STACKS];
		s.locations += ctr[i][CTR_LOCATIONS];
		s.functions += ctr[i][CTR_FUNCTIONS];
		s.mappings += ctr[i][CTR_MAPPINGS];
		s.head_profiles = ctr[i][CTR_PROFILES];
		s.expired_blocks = ctr[i][CTR_EXP_BLOCKS];
		s.expired_bytes = ctr[i][CTR_EXP_BYTES];
		s.expired_profiles = ctr[i][CTR_EXP_PROFILES];
		s.expired_samples = ctr[i][CTR_EXP_SAMPLES];
		for (int c = 1; c < CTR_EXP_BLOCKS; c++)
			records += ctr[i][c];
		for (int c = 0; c < CFI_TENANT_N; c++) {
			uint64_t total = atomic_load(&st->written_total[c]);
			double share;

			if (total)
				share = (double)atomic_load(&v[i]->written[c]) / (double)total;
			else
				share = total_records ? (double)records / (double)total_records : 0;
			s.bytes[cf_public((enum cfi)c)] += sst[c] + (uint64_t)(share * (double)mem[c]);
		}
		pthread_mutex_lock(&v[i]->mu);
		for (size_t j = 0; j < v[i]->n_parts; j++)
			s.head_unreadable += v[i]->parts[j]->broken != NULL;
		pthread_mutex_unlock(&v[i]->mu);
		rc = cb(ctx, &s);
		if (rc)
			goto out;
	}
out:
	free(blk);
	free(ctr);
	free(v);
	return rc;
}

int store_flush(struct store *st, struct err_msg *msg)
{
	return st->read_only ? 0 : flush_cfs(st, 0, CFI_N, msg);
}

int store__scan_open(struct store *st, enum cfi cf, struct scan *s, const void *lo,
		     size_t lolen, const void *hi, size_t hilen)
{
	return store__scan_open_snap(st, cf, NULL, s, lo, lolen, hi, hilen);
}

int store__scan_open_snap(struct store *st, enum cfi cf, const rocksdb_snapshot_t *snap,
			  struct scan *s, const void *lo, size_t lolen, const void *hi,
			  size_t hilen)
{
	s->hi = malloc(hilen ? hilen : 1);
	if (!s->hi)
		return ERR_NOMEM;
	memcpy(s->hi, hi, hilen);
	s->ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(s->ro, s->hi, hilen);
	if (snap)
		rocksdb_readoptions_set_snapshot(s->ro, snap);
	pthread_rwlock_rdlock(&st->commit_lock);
	s->it = rocksdb_create_iterator_cf(st->db, s->ro, st->cf[cf]);
	pthread_rwlock_unlock(&st->commit_lock);
	rocksdb_iter_seek(s->it, lo, lolen);
	return 0;
}

int store__scan_close(struct scan *s, struct err_msg *msg)
{
	char *err = NULL;
	int rc = 0;

	if (!s->it)
		return 0;
	rocksdb_iter_get_error(s->it, &err);
	if (err)
		rc = store__rocks_err(msg, ERR_IO, "scan", err);
	rocksdb_iter_destroy(s->it);
	rocksdb_readoptions_destroy(s->ro);
	free(s->hi);
	s->it = NULL;
	return rc;
}

/* ---- tenants at open, the clock, retention ------------------------------- */

int store__tenant_first_epoch(struct store *st, struct tenant *t, rocksdb_writebatch_t *wb)
{
	int rc = GROW(t->epochs, t->cap_epochs, 1, 1, NULL);

	if (rc)
		return rc;
	memset(&t->epochs[0], 0, sizeof(t->epochs[0]));
	t->epochs[0].n = 1;
	t->epochs[0].part_lo = 1;
	t->n_epochs = 1;
	store__epoch_put_record(wb, st, t->id, 1, 1);
	return 0;
}

int store__tenant_ensure(struct store *st, const char *name, struct tenant **out,
			 struct err_msg *msg)
{
	size_t len = strlen(name);
	struct tenant *t = store__tenant_find(st, name);
	rocksdb_writebatch_t *wb;
	uint8_t k[5 + STORE_MAX_TENANT_NAME], v[4];
	char *err = NULL;
	int rc;

	if (t) {
		*out = t;
		return 0;
	}
	if (len == 0 || len > STORE_MAX_TENANT_NAME || st->next_tenant == UINT32_MAX)
		return err_set(msg, ERR_INVALID, "blocks: bad tenant name");
	rc = tenant_reserve(st);
	if (rc)
		return rc;
	t = tenant_new(st->next_tenant, name, len);
	if (!t)
		return ERR_NOMEM;
	wb = rocksdb_writebatch_create();
	rc = store__tenant_first_epoch(st, t, wb);
	if (!rc && !st->read_only) {
		/* Blocks of a tenant the head does not know (copied in): record it. */
		key_tenant_tag(k, 0, TAG_TENANT);
		memcpy(k + 5, name, len);
		be32_put(v, t->id);
		rocksdb_writebatch_put_cf(wb, st->cf[CFI_META], (const char *)k, 5 + len,
					  (const char *)v, 4);
		rocksdb_write(st->db, st->wopt_sync, wb, &err);
		if (err)
			rc = store__rocks_err(msg, ERR_IO, "record a tenant", err);
	}
	rocksdb_writebatch_destroy(wb);
	if (rc) {
		tenant_free(t);
		return rc;
	}
	t->persisted = !st->read_only;
	tenant_insert(st, t);
	*out = t;
	return 0;
}

int64_t store__mono(void)
{
	return clock_mono_ns();
}

int64_t store__wall(struct store *st)
{
	return st->clock_ns ? st->clock_ns(st->clock_ctx) : clock_wall_ns();
}

int64_t store__clock(struct store *st)
{
	int64_t wall = store__wall(st), newest = atomic_load(&st->newest_ns);

	return newest < wall ? newest : wall;
}

int64_t store__retention(struct store *st, const char *tenant)
{
	for (size_t i = 0; i < st->n_overrides; i++)
		if (strcmp(st->overrides[i].tenant, tenant) == 0)
			return st->overrides[i].ns;
	return st->retention_ns;
}

/* ---- listing blocks and their build IDs ----------------------------------- */

void store__block_info(const struct tenant *t, const struct block *b, struct store_block_info *bi)
{
	memset(bi, 0, sizeof(*bi));
	bi->tenant = t->name;
	bi->id = b->id_hex;
	bi->level = b->rec.level;
	bi->range_start = b->rec.range_start;
	bi->range_end = b->rec.range_end;
	bi->min_time = b->rec.min_time;
	bi->max_time = b->rec.max_time;
	bi->bytes = b->rec.bytes;
	bi->series = b->rec.series;
	bi->profiles = b->rec.profiles;
	bi->samples = b->rec.samples;
	bi->sources = b->have_meta ? b->m.n_sources : 0;
	bi->error = atomic_load(&b->bad) == 2 ? b->why : NULL;
}

int store_blocks_each(struct store *st, const char *tenant,
		      int (*cb)(void *ctx, const struct store_block_info *b), void *ctx,
		      struct err_msg *msg)
{
	struct tenant **v = NULL;
	size_t n = 0;
	int rc = tenants_snapshot(st, &v, &n);

	(void)msg;
	for (size_t i = 0; !rc && i < n; i++) {
		struct tenant *t = v[i];
		struct block **bs;
		size_t nb = 0;

		if (tenant && strcmp(tenant, t->name) != 0)
			continue;
		rc = store__blocks_snapshot(t, &bs, &nb);
		if (rc)
			break;
		for (size_t j = 0; j < nb; j++) {
			const struct block *b = bs[j];
			struct store_block_info bi;

			store__block_info(t, b, &bi);
			if (!rc)
				rc = cb(ctx, &bi);
		}
		store__blocks_release(st, bs, nb);
	}
	free(v);
	return rc;
}

struct bid_ent {
	char *id;
	int64_t last;
};

int store_build_ids_each(struct store *st,
			 int (*cb)(void *ctx, const char *build_id, int64_t last_ns), void *ctx,
			 struct err_msg *msg)
{
	struct tenant **v = NULL;
	struct bid_ent *e = NULL;
	size_t n = 0, ne = 0, cap = 0;
	int rc = tenants_snapshot(st, &v, &n);

	(void)msg;
	for (size_t i = 0; !rc && i < n; i++) {
		struct tenant *t = v[i];
		int64_t head_last = store__clock(st);

		pthread_mutex_lock(&t->mu);
		for (size_t j = 0; !rc && j < t->n_blocks; j++) {
			const struct block *b = t->blocks[j];
			for (size_t k = 0; b->have_meta && !rc && k < b->m.n_build_ids; k++) {
				rc = GROW(e, cap, ne + 1, (size_t)1 << 28, NULL);
				if (!rc && !(e[ne].id = strdup(b->m.build_ids[k])))
					rc = ERR_NOMEM;
				if (!rc)
					e[ne++].last = b->m.max_time;
			}
		}
		/* The head: every mapping of its live partitions, as of now. */
		for (size_t j = 0; !rc && j < t->n_parts; j++) {
			struct part *p = t->parts[j];
			uint32_t nm = atomic_load(&p->tab[SYM_MAPPING].committed);
			if (p->retired)
				continue;
			for (uint32_t m = 1; !rc && m <= nm; m++) {
				const struct sym_mapping *mp = segarr_get(&p->tab[SYM_MAPPING].arr, m - 1);
				const struct sym_string *bs;
				if (!mp->build_id)
					continue;
				bs = segarr_get(&p->tab[SYM_STRING].arr, mp->build_id - 1);
				rc = GROW(e, cap, ne + 1, (size_t)1 << 28, NULL);
				if (!rc && !(e[ne].id = strdup(bs->s)))
					rc = ERR_NOMEM;
				if (!rc)
					e[ne++].last = head_last;
			}
		}
		pthread_mutex_unlock(&t->mu);
	}
	if (!rc && ne) /* qsort's base may not be NULL, even for 0 elements */
		qsort(e, ne, sizeof(*e), store__cmp_str);
	for (size_t i = 0; !rc && i < ne;) {
		size_t j = i + 1;
		int64_t last = e[i].last;
		while (j < ne && !strcmp(e[j].id, e[i].id)) {
			if (e[j].last > last)
				last = e[j].last;
			j++;
		}
		rc = cb(ctx, e[i].id, last);
		i = j;
	}
	for (size_t i = 0; i < ne; i++)
		free(e[i].id);
	free(e);
	free(v);
	return rc;
}

/* ---- test hooks --------------------------------------------------------- */

int store__raw_put(struct store *st, enum cfi cf, const void *k, size_t klen,
		   const void *v, size_t vlen)
{
	char *err = NULL;

	rocksdb_put_cf(st->db, st->wopt, st->cf[cf], k, klen, v, vlen, &err);
	if (err)
		return store__rocks_err(NULL, ERR_IO, "put", err);
	return 0;
}

int store__raw_get(struct store *st, enum cfi cf, const void *k, size_t klen,
		   struct buf *out)
{
	char *err = NULL, *v;
	size_t vlen;
	int rc;

	v = rocksdb_get_cf(st->db, st->ropt, st->cf[cf], k, klen, &vlen, &err);
	if (err)
		return store__rocks_err(NULL, ERR_IO, "get", err);
	if (!v)
		return ERR_NOT_FOUND;
	rc = buf_append(out, v, vlen);
	rocksdb_free(v);
	return rc;
}

int store__compact(struct store *st, enum cfi cf)
{
	if (st->read_only || !st->cf[cf])
		return 0;
	rocksdb_compact_range_cf(st->db, st->cf[cf], NULL, 0, NULL, 0);
	/* The first pass merges operands into plain values; only a second
	 * compaction shows those to the filter that makes them columnar. */
	if (cf == CFI_SAMPLES)
		rocksdb_compact_range_cf(st->db, st->cf[cf], NULL, 0, NULL, 0);
	return 0;
}

int store_compact(struct store *st, struct err_msg *msg)
{
	int rc = store_flush(st, msg);

	for (int c = 0; c < CFI_N && !rc; c++)
		rc = store__compact(st, (enum cfi)c);
	return rc;
}
