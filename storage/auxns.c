/*
 * auxns.c - the auxiliary key-value namespaces (debug info metadata, the
 * symbol cache): global column families whose bytes belong to their users.
 * Layout and limits: storage_int.h, section 7.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"

/* MultiGet is issued in slices of this many keys, bounding its arrays. */
#define MULTI_GET_SLICE 256

static const char *const ns_names[STORE_AUX_COUNT] = { "debuginfo", "symcache",
								 "settings", "perfmap" };

/* The family of `ns`, or NULL (absent in an old store opened read-only). */
static int aux_cf(struct store *st, enum store_aux ns, rocksdb_column_family_handle_t **cf,
		  struct err_msg *msg)
{
	if ((unsigned)ns >= STORE_AUX_COUNT)
		return err_set(msg, ERR_INVALID, "unknown auxiliary namespace %d", (int)ns);
	*cf = st->cf[ns == STORE_AUX_DEBUGINFO ? CFI_DEBUGINFO
		     : ns == STORE_AUX_SYMCACHE ? CFI_SYMCACHE
		     : ns == STORE_AUX_SETTINGS ? CFI_SETTINGS
		     : CFI_PERFMAP];
	return 0;
}

static int check_key(enum store_aux ns, const void *key, size_t klen, struct err_msg *msg)
{
	if (!key || klen == 0)
		return err_set(msg, ERR_INVALID, "%s: empty key", ns_names[ns]);
	if (klen > STORE_AUX_MAX_KEY)
		return err_set(msg, ERR_TOO_LARGE, "%s: key of %zu bytes, at most %d",
			       ns_names[ns], klen, STORE_AUX_MAX_KEY);
	return 0;
}

int store_aux_write(struct store *st, enum store_aux ns, const struct store_kv *kv,
		    size_t n, struct err_msg *msg)
{
	rocksdb_column_family_handle_t *cf = NULL;
	rocksdb_writebatch_t *wb;
	size_t total = 0;
	char *err = NULL;
	int rc = aux_cf(st, ns, &cf, msg);

	if (rc)
		return rc;
	if (st->read_only || !cf)
		return err_set(msg, ERR_INVALID, "%s: store is open read-only", ns_names[ns]);
	if (n && !kv)
		return err_set(msg, ERR_INVALID, "%s: no pairs given", ns_names[ns]);
	for (size_t i = 0; i < n; i++) {
		rc = check_key(ns, kv[i].key, kv[i].klen, msg);
		if (rc)
			return rc;
		if (kv[i].val && kv[i].vlen > STORE_AUX_MAX_VALUE)
			return err_set(msg, ERR_TOO_LARGE, "%s: value of %zu bytes, at most %zu",
				       ns_names[ns], kv[i].vlen, STORE_AUX_MAX_VALUE);
		total += kv[i].klen + (kv[i].val ? kv[i].vlen : 0);
		if (total > STORE_AUX_MAX_BATCH)
			return err_set(msg, ERR_TOO_LARGE, "%s: batch larger than %zu bytes",
				       ns_names[ns], STORE_AUX_MAX_BATCH);
	}
	if (n == 0)
		return 0;
	wb = rocksdb_writebatch_create();
	for (size_t i = 0; i < n; i++) {
		if (kv[i].val)
			rocksdb_writebatch_put_cf(wb, cf, kv[i].key, kv[i].klen, kv[i].val,
						  kv[i].vlen);
		else
			rocksdb_writebatch_delete_cf(wb, cf, kv[i].key, kv[i].klen);
	}
	rocksdb_write(st->db, st->wopt, wb, &err);
	rocksdb_writebatch_destroy(wb);
	if (err)
		return store__rocks_err(msg, ERR_IO, ns_names[ns], err);
	return 0;
}

int store_aux_get(struct store *st, enum store_aux ns, const void *key, size_t klen,
		  struct buf *out, struct err_msg *msg)
{
	rocksdb_column_family_handle_t *cf = NULL;
	rocksdb_pinnableslice_t *ps;
	const char *v;
	size_t vlen = 0;
	char *err = NULL;
	int rc = aux_cf(st, ns, &cf, msg);

	if (!rc)
		rc = check_key(ns, key, klen, msg);
	if (rc)
		return rc;
	if (!cf)
		return ERR_NOT_FOUND;
	ps = rocksdb_get_pinned_cf(st->db, st->ropt, cf, key, klen, &err);
	if (err)
		return store__rocks_err(msg, ERR_IO, ns_names[ns], err);
	if (!ps)
		return ERR_NOT_FOUND;
	v = rocksdb_pinnableslice_value(ps, &vlen);
	rc = buf_append(out, v, vlen);
	rocksdb_pinnableslice_destroy(ps);
	if (rc)
		return err_set(msg, rc, "%s: value of %zu bytes does not fit", ns_names[ns], vlen);
	return 0;
}

/* Looks up keys[0..n) (n <= MULTI_GET_SLICE) and calls cb in order. */
static int multi_get_slice(struct store *st, rocksdb_column_family_handle_t *cf,
			   enum store_aux ns, const struct store_kv *keys, size_t n,
			   size_t base,
			   int (*cb)(void *ctx, size_t i, const void *val, size_t vlen),
			   void *ctx, struct err_msg *msg)
{
	const char *k[MULTI_GET_SLICE];
	size_t klen[MULTI_GET_SLICE];
	rocksdb_pinnableslice_t *vals[MULTI_GET_SLICE];
	char *errs[MULTI_GET_SLICE];
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		k[i] = keys[i].key;
		klen[i] = keys[i].klen;
	}
	rocksdb_batched_multi_get_cf(st->db, st->ropt, cf, n, k, klen, vals, errs, false);
	for (size_t i = 0; i < n; i++) {
		if (errs[i] && !rc)
			rc = store__rocks_err(msg, ERR_IO, ns_names[ns], errs[i]);
		else if (errs[i])
			rocksdb_free(errs[i]);
	}
	for (size_t i = 0; i < n && !rc; i++) {
		const char *v = NULL;
		size_t vlen = 0;

		if (vals[i])
			v = rocksdb_pinnableslice_value(vals[i], &vlen);
		rc = cb(ctx, base + i, v, vlen);
	}
	for (size_t i = 0; i < n; i++)
		if (vals[i])
			rocksdb_pinnableslice_destroy(vals[i]);
	return rc;
}

int store_aux_multi_get(struct store *st, enum store_aux ns, const struct store_kv *keys,
			size_t n,
			int (*cb)(void *ctx, size_t i, const void *val, size_t vlen),
			void *ctx, struct err_msg *msg)
{
	rocksdb_column_family_handle_t *cf = NULL;
	int rc = aux_cf(st, ns, &cf, msg);

	if (!rc && n && (!keys || !cb))
		rc = err_set(msg, ERR_INVALID, "%s: no keys or callback", ns_names[ns]);
	for (size_t i = 0; i < n && !rc; i++)
		rc = check_key(ns, keys[i].key, keys[i].klen, msg);
	for (size_t at = 0; at < n && !rc; at += MULTI_GET_SLICE) {
		size_t m = n - at < MULTI_GET_SLICE ? n - at : MULTI_GET_SLICE;

		if (!cf) {
			for (size_t i = 0; i < m && !rc; i++)
				rc = cb(ctx, at + i, NULL, 0);
			continue;
		}
		rc = multi_get_slice(st, cf, ns, keys + at, m, at, cb, ctx, msg);
	}
	return rc;
}

/*
 * The smallest key greater than every key starting with `prefix`: the
 * prefix with its last byte below 0xff incremented and the rest dropped.
 * Returns 0 when there is none (the prefix is all 0xff): scan to the end.
 */
static size_t prefix_end(const uint8_t *prefix, size_t plen, uint8_t *out)
{
	while (plen > 0 && prefix[plen - 1] == 0xff)
		plen--;
	if (plen == 0)
		return 0;
	memcpy(out, prefix, plen);
	out[plen - 1]++;
	return plen;
}

int store_aux_scan(struct store *st, enum store_aux ns, const void *prefix, size_t plen,
		   int (*cb)(void *ctx, const void *key, size_t klen, const void *val,
			     size_t vlen),
		   void *ctx, struct err_msg *msg)
{
	rocksdb_column_family_handle_t *cf = NULL;
	uint8_t hi[STORE_AUX_MAX_KEY];
	size_t hilen;
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *it;
	char *err = NULL;
	int rc = aux_cf(st, ns, &cf, msg);

	if (rc)
		return rc;
	if (!cb || (plen && !prefix))
		return err_set(msg, ERR_INVALID, "%s: no prefix or callback", ns_names[ns]);
	if (plen > STORE_AUX_MAX_KEY)
		return err_set(msg, ERR_TOO_LARGE, "%s: prefix of %zu bytes, at most %d",
			       ns_names[ns], plen, STORE_AUX_MAX_KEY);
	if (!cf)
		return 0;
	hilen = plen ? prefix_end(prefix, plen, hi) : 0;
	ro = rocksdb_readoptions_create();
	if (hilen)
		rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi, hilen);
	it = rocksdb_create_iterator_cf(st->db, ro, cf);
	if (plen)
		rocksdb_iter_seek(it, prefix, plen);
	else
		rocksdb_iter_seek_to_first(it);
	for (; !rc && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v = rocksdb_iter_value(it, &vlen);

		/* The upper bound already ends the scan, except for an all-0xff
		 * prefix, which has none. */
		if (plen && (klen < plen || memcmp(k, prefix, plen) != 0))
			break;
		rc = cb(ctx, k, klen, v, vlen);
	}
	if (!rc) {
		rocksdb_iter_get_error(it, &err);
		if (err)
			rc = store__rocks_err(msg, ERR_IO, ns_names[ns], err);
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	return rc;
}

uint64_t store_aux_bytes(struct store *st, enum store_aux ns)
{
	rocksdb_column_family_handle_t *cf = NULL;
	uint64_t v = 0;

	if (aux_cf(st, ns, &cf, NULL) || !cf)
		return 0;
	if (rocksdb_property_int_cf(st->db, cf, "rocksdb.total-sst-files-size", &v))
		return 0;
	return v;
}
