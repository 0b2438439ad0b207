/*
 * store.c - opening the RocksDB database and its column families, tenants,
 * write transactions, statistics and flushes.  Layouts: storage_int.h.
 */
#include "storage/storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"
#include "base/varint.h"

#define DEFAULT_CACHE_BYTES ((size_t)64 << 20)
#define DEFAULT_WINDOW_NS ((int64_t)600 * 1000000000)
#define WRITE_BUFFER_BYTES ((size_t)32 << 20)
#define DB_WRITE_BUFFER_BYTES ((size_t)128 << 20)

static const char *const cf_names[CFI_N] = {
	"default", "meta", "counters", "series", "symbols", "samples", "debuginfo", "symcache",
	"settings",
};

const char *store_cf_name(enum store_cf cf)
{
	switch (cf) {
	case STORE_CF_META: return "meta";
	case STORE_CF_SERIES: return "series";
	case STORE_CF_SYMBOLS: return "symbols";
	case STORE_CF_SAMPLES: return "samples";
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

static void merge_free_value(void *state, const char *value, size_t len)
{
	(void)state, (void)len;
	free((void *)value);
}

static const char *add64_name(void *state)
{
	(void)state;
	return "unhex.add64.v1";
}

static void merge_state_free(void *state)
{
	(void)state;
}

rocksdb_mergeoperator_t *store__add64_merge_operator(void)
{
	return rocksdb_mergeoperator_create(NULL, merge_state_free, add64_full, add64_partial,
					    merge_free_value, add64_name);
}

/* ---- options ------------------------------------------------------------ */

static rocksdb_options_t *cf_options(struct store *st, enum cfi c)
{
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_block_based_table_options_t *bbo = rocksdb_block_based_options_create();

	rocksdb_block_based_options_set_block_cache(bbo, st->cache);
	rocksdb_block_based_options_set_block_size(bbo, 16 * 1024);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(bbo, 1);
	rocksdb_block_based_options_set_format_version(bbo, 5);
	if (c == CFI_SERIES || c == CFI_META || c == CFI_COUNTERS || c == CFI_DEBUGINFO ||
	    c == CFI_SYMCACHE || c == CFI_SETTINGS)
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
	if (c == CFI_SAMPLES) {
		rocksdb_options_set_merge_operator(o, store__chunk_merge_operator());
		rocksdb_options_set_compaction_filter_factory(o, store__chunk_filter_factory());
	} else if (c == CFI_COUNTERS)
		rocksdb_options_set_merge_operator(o, store__add64_merge_operator());
	return o;
}

static void db_options(struct store *st)
{
	rocksdb_options_t *o = rocksdb_options_create();

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
	pthread_mutex_init(&t->mu, NULL);
	store__bmap_init(&t->services, HMAP_MAX, STORE_MAX_PARTS * STORE_MAX_LABEL_BYTES);
	store__bmap_init(&t->series, STORE_MAX_SERIES, STORE_MAX_SERIES_KEY_BYTES);
	return t;
}

static void tenant_free(struct tenant *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n_parts; i++)
		store__part_free(t->parts[i]);
	free(t->parts);
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

/* Reads or writes the format record; sets st->window_ns. */
static int load_format(struct store *st, int64_t want_window, struct err_msg *msg)
{
	uint8_t k[5], v[13];
	char *err = NULL, *val;
	size_t vlen;

	key_tenant_tag(k, 0, TAG_FORMAT);
	val = rocksdb_get_cf(st->db, st->ropt, st->cf[CFI_META], (const char *)k, 5, &vlen, &err);
	if (err)
		return store__rocks_err(msg, ERR_IO, "read format record", err);
	if (val) {
		int ok = vlen == 13 && memcmp(val, STORE_MAGIC, 4) == 0;
		uint8_t ver = vlen > 4 ? (uint8_t)val[4] : 0;
		int64_t w = ok ? (int64_t)be64_get((const uint8_t *)val + 5) : 0;
		rocksdb_free(val);
		if (!ok || w <= 0)
			return err_set(msg, ERR_CORRUPT, "%s: not an unhex store (bad format record)",
				       "meta");
		if (ver != STORE_FORMAT_VERSION)
			return err_set(msg, ERR_CORRUPT, "store format version %u, expected %u",
				       ver, STORE_FORMAT_VERSION);
		st->window_ns = w;
		return 0;
	}
	if (st->read_only)
		return err_set(msg, ERR_NOT_FOUND, "no unhex store (format record missing)");
	memcpy(v, STORE_MAGIC, 4);
	v[4] = STORE_FORMAT_VERSION;
	be64_put(v + 5, (uint64_t)want_window);
	rocksdb_put_cf(st->db, st->wopt, st->cf[CFI_META], (const char *)k, 5, (const char *)v,
		       13, &err);
	if (err)
		return store__rocks_err(msg, ERR_IO, "write format record", err);
	st->window_ns = want_window;
	return 0;
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

int store_open(const struct store_options *opt, struct store **out, struct err_msg *msg)
{
	struct store *st;
	const rocksdb_options_t *cfo[CFI_N];
	char *err = NULL;
	int rc = 0;

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
	st->cache = rocksdb_cache_create_lru(opt->block_cache_bytes ? opt->block_cache_bytes
								     : DEFAULT_CACHE_BYTES);
	db_options(st);
	for (int c = 0; c < CFI_N; c++) {
		st->cfopt[c] = cf_options(st, (enum cfi)c);
		cfo[c] = st->cfopt[c];
	}
	st->ropt = rocksdb_readoptions_create();
	st->wopt = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(st->wopt, opt->sync_writes ? 1 : 0);

	if (st->read_only)
		rc = open_read_only(st, opt->dir, cfo, &err, msg);
	else
		st->db = rocksdb_open_column_families(st->dbopt, opt->dir, CFI_N, cf_names, cfo,
						      st->cf, &err);
	if (rc)
		goto fail;
	if (err) {
		rc = store__rocks_err(msg, st->read_only ? ERR_NOT_FOUND : ERR_IO,
				      st->read_only ? "open store read-only" : "open store", err);
		st->db = NULL;
		goto fail;
	}
	rc = load_format(st, opt->window_ns ? opt->window_ns : DEFAULT_WINDOW_NS, msg);
	if (rc)
		goto fail;
	rc = load_tenants(st, msg);
	if (!rc)
		rc = store__migrate(st, msg);
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
	if (st->cache)
		rocksdb_cache_destroy(st->cache);
	if (st->ropt)
		rocksdb_readoptions_destroy(st->ropt);
	if (st->wopt)
		rocksdb_writeoptions_destroy(st->wopt);
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
	buf_release(&tx->key);
	buf_release(&tx->val);
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
	buf_init(&tx->key, STORE_MAX_LABEL_KEY);
	buf_init(&tx->val, STORE_MAX_TXN_VALUE);
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
	for (int c = 1; c < CTR_N; c++) {
		uint8_t k[5];
		char v[8];
		if (!tx->ctr[c])
			continue;
		key_tenant_tag(k, t->id, (uint8_t)c);
		le64_put(v, tx->ctr[c]);
		store__txn_merge(tx, CFI_COUNTERS, k, 5, v, 8);
	}
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

static uint64_t memtable_bytes(struct store *st, enum cfi c)
{
	uint64_t v = 0;

	if (rocksdb_property_int_cf(st->db, st->cf[c], "rocksdb.cur-size-all-mem-tables", &v))
		return 0;
	return v;
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
	uint64_t mem[CFI_N], total_records = 0;
	size_t n = 0;
	int rc = tenants_snapshot(st, &v, &n);

	if (rc)
		return rc;
	ctr = calloc(n ? n : 1, sizeof(*ctr));
	if (!ctr) {
		free(v);
		return ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		rc = read_counters(st, v[i]->id, ctr[i], msg);
		if (rc)
			goto out;
		for (int c = 1; c < CTR_N; c++)
			total_records += ctr[i][c];
	}
	for (int c = 0; c < CFI_TENANT_N; c++)
		mem[c] = memtable_bytes(st, (enum cfi)c);
	for (size_t i = 0; i < n; i++) {
		struct store_tenant_stats s;
		uint64_t sst[CFI_N], records = 0;

		rc = tenant_sst_bytes(st, v[i]->id, sst, msg);
		if (rc)
			goto out;
		memset(&s, 0, sizeof(s));
		s.tenant = v[i]->name;
		s.series = ctr[i][CTR_SERIES];
		s.profiles = ctr[i][CTR_PROFILES];
		s.samples = ctr[i][CTR_SAMPLES];
		s.stacks = ctr[i][CTR_STACKS];
		s.locations = ctr[i][CTR_LOCATIONS];
		s.functions = ctr[i][CTR_FUNCTIONS];
		s.mappings = ctr[i][CTR_MAPPINGS];
		for (int c = 1; c < CTR_N; c++)
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
		rc = cb(ctx, &s);
		if (rc)
			goto out;
	}
out:
	free(ctr);
	free(v);
	return rc;
}

int store_flush(struct store *st, struct err_msg *msg)
{
	rocksdb_flushoptions_t *fo;
	int rc = 0;

	if (st->read_only)
		return 0;
	fo = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(fo, 1);
	for (int c = 0; c < CFI_N && !rc; c++) {
		char *err = NULL;
		rocksdb_flush_cf(st->db, fo, st->cf[c], &err);
		if (err)
			rc = store__rocks_err(msg, ERR_IO, "flush", err);
	}
	rocksdb_flushoptions_destroy(fo);
	return rc;
}

int store__scan_open(struct store *st, enum cfi cf, struct scan *s, const void *lo,
		     size_t lolen, const void *hi, size_t hilen)
{
	s->hi = malloc(hilen ? hilen : 1);
	if (!s->hi)
		return ERR_NOMEM;
	memcpy(s->hi, hi, hilen);
	s->ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(s->ro, s->hi, hilen);
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
