/*
 * series.c - partitions of a tenant, the series index (records and inverted
 * postings) and the writer's in-memory maps service -> partition and
 * labels -> series id.  Layouts: storage_int.h, sections 2 and 4.
 */
#include "storage_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/varint.h"

#define SERIES_VERSION 1

/* ---- the writer index ---------------------------------------------------- */

int store__scan_parts(struct store *st, struct tenant *t, struct bmap *map, uint32_t *max_id,
		      struct err_msg *msg)
{
	struct scan s;
	uint32_t max = 0;
	int rc;

	rc = store__scan_tag(st, CFI_META, NULL, t->id, TAG_PART, &s);
	if (rc)
		return rc;
	for (; rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(s.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(s.it, &vlen);
		uint32_t id;

		if (vlen != 4 || (id = be32_get(v)) == 0 || id == UINT32_MAX) {
			rc = err_set(msg, ERR_CORRUPT, "meta: bad partition record of tenant %s",
				     t->name);
			break;
		}
		if (id > max)
			max = id;
		if (map) {
			rc = store__bmap_put(map, k + 5, klen - 5, id);
			if (rc)
				break;
		}
	}
	if (rc) {
		store__scan_close(&s, NULL);
		return rc;
	}
	rc = store__scan_close(&s, msg);
	if (!rc)
		*max_id = max;
	return rc;
}

void store__index_drop(struct tenant *t)
{
	store__bmap_release(&t->services);
	store__bmap_release(&t->series);
	store__bmap_release(&t->lnames);
	store__bmap_release(&t->lvalues);
	t->index_loaded = 0;
}

/*
 * Counts label `name` = `value` in the tenant's label maps (writer index):
 * a value new to its name adds one to the name's count.  `b` (borrowed)
 * builds the key "name\0value".
 */
static int label_add(struct tenant *t, const void *name, size_t nl, const void *value, size_t vl,
		     struct buf *b)
{
	uint64_t cnt = 0;
	int rc;

	buf_reset(b);
	rc = buf_append(b, name, nl);
	if (!rc)
		rc = buf_putc(b, '\0');
	if (!rc)
		rc = buf_append(b, value, vl);
	if (rc || store__bmap_get(&t->lvalues, b->data, b->len, &cnt) == 0)
		return rc;
	rc = store__bmap_put(&t->lvalues, b->data, b->len, 1);
	if (!rc) {
		if (store__bmap_get(&t->lnames, name, nl, &cnt))
			cnt = 0;
		rc = store__bmap_put(&t->lnames, name, nl, cnt + 1);
	}
	return rc;
}

/* Counts every label of a series' label key (section 4's layout) with label_add. */
static int index_labels(struct tenant *t, const uint8_t *k, size_t len, struct buf *b)
{
	const uint8_t *p = k, *end = k + len;
	uint64_t n, nl, vl;
	size_t c;
	int rc;

	if (!(c = varint_get(p, end, &n)) || n == 0 || n > STORE_MAX_LABELS)
		return ERR_CORRUPT;
	p += c;
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *name, *value;

		if (!(c = varint_get(p, end, &nl)) || nl > (uint64_t)(end - p) - c)
			return ERR_CORRUPT;
		name = p + c;
		p = name + nl;
		if (!(c = varint_get(p, end, &vl)) || vl > (uint64_t)(end - p) - c)
			return ERR_CORRUPT;
		value = p + c;
		p = value + vl;
		rc = label_add(t, name, (size_t)nl, value, (size_t)vl, b);
		if (rc)
			return rc;
	}
	return p == end ? 0 : ERR_CORRUPT;
}

int store__index_load(struct store *st, struct tenant *t, struct err_msg *msg)
{
	struct scan s;
	struct buf lb;
	uint32_t max_part = 0;
	uint64_t max_series = 0;
	int rc;

	store__index_drop(t);
	buf_init(&lb, STORE_MAX_LABEL_KEY);
	rc = store__scan_parts(st, t, &t->services, &max_part, msg);
	if (rc)
		goto fail;
	rc = store__scan_tag(st, CFI_SERIES, NULL, t->id, TAG_SERIES, &s);
	if (rc)
		goto fail;
	for (; rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen, n;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(s.it, &vlen);
		uint64_t id, part;

		if (klen != 13 || vlen < 2 || v[0] != SERIES_VERSION ||
		    !(n = varint_get(v + 1, v + vlen, &part)) || 1 + n >= vlen) {
			rc = err_set(msg, ERR_CORRUPT, "series: bad record of tenant %s", t->name);
			break;
		}
		id = be64_get(k + 5);
		if (id > max_series)
			max_series = id;
		rc = store__bmap_put(&t->series, v + 1 + n, vlen - 1 - n, id);
		if (!rc)
			rc = index_labels(t, v + 1 + n, vlen - 1 - n, &lb);
		if (rc == ERR_CORRUPT)
			rc = err_set(msg, ERR_CORRUPT, "series: bad labels of tenant %s", t->name);
		if (rc)
			break;
	}
	buf_release(&lb);
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, msg);
	if (rc)
		goto fail;
	/* A partition of the current epoch may be the largest id, or none yet. */
	t->next_part = max_part + 1 > store__epoch_part_lo(t) ? max_part + 1 : store__epoch_part_lo(t);
	t->next_series = max_series + 1;
	t->index_loaded = 1;
	return 0;
fail:
	store__index_drop(t);
	return rc;
}

/* ---- partitions --------------------------------------------------------- */

static int txn_partition(struct store_txn *tx, const char *service, size_t len,
			 uint32_t *part)
{
	struct tenant *t = tx->t;
	uint8_t k[5 + STORE_MAX_LABEL_BYTES], v[4];
	uint64_t id;
	int rc;

	/* A service's partition of an earlier epoch is not written to again. */
	if (store__bmap_get(&t->services, service, len, &id) == 0 &&
	    id >= store__epoch_part_lo(t)) {
		*part = (uint32_t)id;
		return 0;
	}
	if (t->next_part >= STORE_BLOCK_PART_MIN - 1)
		return ERR_TOO_LARGE;
	rc = store__bmap_put(&t->services, service, len, t->next_part);
	if (rc) {
		tx->failed = 1;
		return rc;
	}
	tx->index_dirty = 1;
	key_tenant_tag(k, t->id, TAG_PART);
	memcpy(k + 5, service, len);
	be32_put(v, t->next_part);
	store__txn_put(tx, CFI_META, k, 5 + len, v, 4);
	*part = t->next_part++;
	/* The partition exists from now on, even before it holds a symbol. */
	{
		struct part *p;
		rc = store__part_get(tx->st, t, *part, 1, &p, NULL);
		if (rc)
			tx->failed = 1;
	}
	return rc;
}

int store_txn_partition(struct store_txn *tx, const char *service, uint32_t *part)
{
	size_t len;

	if (!service || !*service)
		return ERR_INVALID;
	len = strlen(service);
	if (len > STORE_MAX_LABEL_BYTES)
		return ERR_TOO_LARGE;
	return txn_partition(tx, service, len, part);
}

/* ---- series ------------------------------------------------------------- */

/* Sorts label pointers by name and checks the rules of store_txn_series. */
static int check_labels(const struct store_label *labels, size_t n,
			const struct store_label **sorted, const char **service,
			struct err_msg *msg)
{
	int have_type = 0;

	if (n == 0)
		return err_set(msg, ERR_INVALID, "series has no labels");
	if (n > STORE_MAX_LABELS)
		return err_set(msg, ERR_TOO_LARGE, "series has %zu labels, at most %d", n,
			       STORE_MAX_LABELS);
	*service = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct store_label *l = &labels[i];
		size_t j;

		if (!l->name || !l->value || !*l->name)
			return err_set(msg, ERR_INVALID, "label %zu: empty name", i);
		if (strlen(l->name) > STORE_MAX_LABEL_BYTES ||
		    strlen(l->value) > STORE_MAX_LABEL_BYTES)
			return err_set(msg, ERR_TOO_LARGE, "label %zu: longer than %d bytes", i,
				       STORE_MAX_LABEL_BYTES);
		if (strcmp(l->name, STORE_LABEL_SERVICE) == 0 && *l->value)
			*service = l->value;
		if (strcmp(l->name, STORE_LABEL_PROFILE_TYPE) == 0 && *l->value)
			have_type = 1;
		for (j = i; j > 0; j--) {
			int c = strcmp(sorted[j - 1]->name, l->name);
			if (c == 0)
				return err_set(msg, ERR_INVALID, "label %s given twice", l->name);
			if (c < 0)
				break;
			sorted[j] = sorted[j - 1];
		}
		sorted[j] = l;
	}
	if (!*service)
		return err_set(msg, ERR_INVALID, "series has no %s label", STORE_LABEL_SERVICE);
	if (!have_type)
		return err_set(msg, ERR_INVALID, "series has no %s label",
			       STORE_LABEL_PROFILE_TYPE);
	return 0;
}

static int put_str(struct buf *b, const char *s)
{
	return buf_put_lstr(b, s, strlen(s));
}

static int put_postings(struct store_txn *tx, const struct store_label *const *sorted,
			size_t n, uint64_t id)
{
	struct buf *k = &tx->val;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		uint8_t head[5];

		buf_reset(k);
		key_tenant_tag(head, tx->t->id, TAG_POSTING);
		rc = buf_append(k, head, 5);
		if (!rc)
			rc = buf_append(k, sorted[i]->name, strlen(sorted[i]->name) + 1);
		if (!rc)
			rc = buf_append(k, sorted[i]->value, strlen(sorted[i]->value) + 1);
		if (!rc)
			rc = buf_put_be64(k, id);
		if (!rc)
			store__txn_put(tx, CFI_SERIES, k->data, k->len, "", 0);
	}
	return rc;
}

/*
 * Refuses a new series that would add a label name or a value of a name
 * past the txn's caps (store_txn_set_max_labels).  `b` (borrowed) is scratch.
 */
static int check_label_caps(struct store_txn *tx, const struct store_label *const *sorted,
			    size_t n, struct buf *b, struct err_msg *msg)
{
	struct tenant *t = tx->t;
	uint64_t names = intern_count(&t->lnames.keys), cnt;

	if (tx->max_label_names == UINT64_MAX && tx->max_label_values == UINT64_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = sorted[i]->name, *value = sorted[i]->value;
		size_t nl = strlen(name);
		int rc;

		buf_reset(b);
		rc = buf_append(b, name, nl + 1);
		if (!rc)
			rc = buf_append(b, value, strlen(value));
		if (rc)
			return rc;
		if (store__bmap_get(&t->lvalues, b->data, b->len, &cnt) == 0)
			continue;
		if (store__bmap_get(&t->lnames, name, nl, &cnt)) {
			cnt = 0;
			if (++names > tx->max_label_names)
				return err_set(msg, ERR_TOO_LARGE,
					       "label name limit of %llu reached for this tenant "
					       "(limits file: max_label_names); no new label name is "
					       "accepted (\"%.64s\")",
					       (unsigned long long)tx->max_label_names, name);
		}
		if (cnt >= tx->max_label_values)
			return err_set(msg, ERR_TOO_LARGE,
				       "label %.64s has %llu values, its limit (limits file: "
				       "max_label_values); no new value is accepted (\"%.64s\")",
				       name, (unsigned long long)cnt, value);
	}
	return 0;
}

int store_txn_series(struct store_txn *tx, const struct store_label *labels, size_t n,
		     uint64_t *series_id, struct err_msg *msg)
{
	const struct store_label *sorted[STORE_MAX_LABELS];
	struct tenant *t = tx->t;
	const char *service = NULL;
	struct buf *lk = &tx->key, *v = &tx->val;
	uint8_t k[13];
	uint64_t id;
	uint32_t part;
	int rc;

	rc = check_labels(labels, n, sorted, &service, msg);
	if (rc)
		return rc;
	buf_reset(lk);
	rc = buf_put_uvarint(lk, n);
	for (size_t i = 0; i < n && !rc; i++) {
		rc = put_str(lk, sorted[i]->name);
		if (!rc)
			rc = put_str(lk, sorted[i]->value);
	}
	if (rc)
		return rc;
	if (store__bmap_get(&t->series, lk->data, lk->len, &id) == 0) {
		*series_id = id;
		return 0;
	}
	if (intern_count(&t->series.keys) >= tx->max_series)
		return err_set(msg, ERR_TOO_LARGE,
			       "series limit of %llu reached for this tenant (limits file: "
			       "max_series); no new label set is accepted",
			       (unsigned long long)tx->max_series);
	rc = check_label_caps(tx, sorted, n, v, msg);
	if (rc)
		return rc;
	rc = txn_partition(tx, service, strlen(service), &part);
	if (rc)
		return rc;
	id = t->next_series;
	buf_reset(v);
	rc = buf_putc(v, SERIES_VERSION);
	if (!rc)
		rc = buf_put_uvarint(v, part);
	if (!rc)
		rc = buf_append(v, lk->data, lk->len);
	if (!rc)
		rc = store__bmap_put(&t->series, lk->data, lk->len, id);
	if (rc) {
		tx->failed = 1;
		return rc;
	}
	tx->index_dirty = 1;
	key_tenant_tag(k, t->id, TAG_SERIES);
	be64_put(k + 5, id);
	store__txn_put(tx, CFI_SERIES, k, 13, v->data, v->len);
	rc = put_postings(tx, sorted, n, id);
	for (size_t i = 0; i < n && !rc; i++)
		rc = label_add(t, sorted[i]->name, strlen(sorted[i]->name), sorted[i]->value,
			       strlen(sorted[i]->value), v);
	if (rc) {
		tx->failed = 1;
		return rc;
	}
	t->next_series++;
	tx->ctr[CTR_SERIES]++;
	*series_id = id;
	return 0;
}

void store_txn_set_max_series(struct store_txn *tx, uint64_t max)
{
	assert(tx && max > 0);
	tx->max_series = max;
}

void store_txn_set_max_labels(struct store_txn *tx, uint64_t max_names, uint64_t max_values)
{
	assert(tx && max_names > 0 && max_values > 0);
	tx->max_label_names = max_names;
	tx->max_label_values = max_values;
}

/* ---- reading ------------------------------------------------------------ */

struct labels_buf {
	struct store_label l[STORE_MAX_LABELS];
	struct buf text;
};

static int get_str(const uint8_t **p, const uint8_t *end, struct buf *text, size_t *off)
{
	uint64_t len;
	size_t n = varint_get(*p, end, &len);

	if (!n || len > STORE_MAX_LABEL_BYTES || len > (size_t)(end - *p - n))
		return ERR_CORRUPT;
	*off = text->len;
	if (buf_append(text, *p + n, len) || buf_putc(text, '\0'))
		return ERR_NOMEM;
	*p += n + len;
	return 0;
}

/* Decodes a series record; labels point into lb->text. */
static int decode_series(const uint8_t *v, size_t vlen, uint32_t *part, struct labels_buf *lb,
			 size_t *n_out)
{
	const uint8_t *p = v + 1, *end = v + vlen;
	size_t offs[2 * STORE_MAX_LABELS];
	uint64_t pt, n;
	size_t c;
	int rc;

	if (vlen < 2 || v[0] != SERIES_VERSION)
		return ERR_CORRUPT;
	if (!(c = varint_get(p, end, &pt)) || pt == 0 || pt > UINT32_MAX)
		return ERR_CORRUPT;
	p += c;
	if (!(c = varint_get(p, end, &n)) || n == 0 || n > STORE_MAX_LABELS)
		return ERR_CORRUPT;
	p += c;
	buf_reset(&lb->text);
	for (size_t i = 0; i < n; i++) {
		rc = get_str(&p, end, &lb->text, &offs[2 * i]);
		if (!rc)
			rc = get_str(&p, end, &lb->text, &offs[2 * i + 1]);
		if (rc)
			return rc;
	}
	if (p != end)
		return ERR_CORRUPT;
	for (size_t i = 0; i < n; i++) {
		lb->l[i].name = lb->text.data + offs[2 * i];
		lb->l[i].value = lb->text.data + offs[2 * i + 1];
	}
	*part = (uint32_t)pt;
	*n_out = (size_t)n;
	return 0;
}

static struct labels_buf *labels_buf_new(void)
{
	struct labels_buf *lb = malloc(sizeof(*lb));

	if (lb)
		buf_init(&lb->text, 2 * STORE_MAX_LABELS * (STORE_MAX_LABEL_BYTES + 1));
	return lb;
}

static void labels_buf_free(struct labels_buf *lb)
{
	if (lb) {
		buf_release(&lb->text);
		free(lb);
	}
}

int store__head_series_each(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			    store_series_cb cb, void *ctx)
{
	struct labels_buf *lb;
	struct scan s;
	int rc;

	lb = labels_buf_new();
	if (!lb)
		return ERR_NOMEM;
	rc = store__scan_tag(st, CFI_SERIES, snap, t->id, TAG_SERIES, &s);
	if (rc)
		goto out;
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen, n;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(s.it, &vlen);
		uint32_t part;

		if (klen != 13)
			rc = ERR_CORRUPT;
		if (!rc)
			rc = decode_series(v, vlen, &part, lb, &n);
		if (!rc)
			rc = cb(ctx, be64_get(k + 5), part, lb->l, n);
	}
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, NULL);
out:
	labels_buf_free(lb);
	return rc;
}

/* False for a name or value longer than any label the store accepts. */
static int storable(const char *s)
{
	return strnlen(s, STORE_MAX_LABEL_BYTES + 1) <= STORE_MAX_LABEL_BYTES;
}

/* Builds tenant|'P'|name\0[value\0] into b. */
static int posting_prefix(struct buf *b, uint32_t tenant, const char *name, const char *value)
{
	uint8_t head[5];
	int rc;

	key_tenant_tag(head, tenant, TAG_POSTING);
	buf_reset(b);
	rc = buf_append(b, head, 5);
	if (!rc && name)
		rc = buf_append(b, name, strlen(name) + 1);
	if (!rc && value)
		rc = buf_append(b, value, strlen(value) + 1);
	return rc;
}

/* The smallest key above every key that starts with b (b ends in 0x00). */
static void prefix_end(struct buf *b)
{
	b->data[b->len - 1] = 1;
}

int store__head_series_with(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			    const char *name, const char *value, store_series_cb cb, void *ctx)
{
	struct labels_buf *lb = NULL;
	rocksdb_readoptions_t *ro = NULL;
	struct buf lo, hi;
	struct scan s = { 0 };
	int rc;

	if (!name || !value || !storable(name) || !storable(value))
		return 0;
	buf_init(&lo, STORE_MAX_POSTING_KEY);
	buf_init(&hi, STORE_MAX_POSTING_KEY);
	lb = labels_buf_new();
	rc = lb ? posting_prefix(&lo, t->id, name, value) : ERR_NOMEM;
	if (!rc)
		rc = posting_prefix(&hi, t->id, name, value);
	if (rc)
		goto out;
	prefix_end(&hi);
	ro = rocksdb_readoptions_create();
	if (snap)
		rocksdb_readoptions_set_snapshot(ro, snap);
	rc = store__scan_open_snap(st, CFI_SERIES, snap, &s, lo.data, lo.len, hi.data, hi.len);
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen, n;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		uint8_t sk[13];
		char *err = NULL, *v;
		uint32_t part;

		if (klen != lo.len + 8) {
			rc = ERR_CORRUPT;
			break;
		}
		key_tenant_tag(sk, t->id, TAG_SERIES);
		memcpy(sk + 5, k + lo.len, 8);
		v = rocksdb_get_cf(st->db, ro, st->cf[CFI_SERIES], (const char *)sk, 13, &vlen, &err);
		if (err) {
			rc = store__rocks_err(NULL, ERR_IO, "series get", err);
			break;
		}
		if (!v) {
			rc = ERR_CORRUPT; /* a posting without its series */
			break;
		}
		rc = decode_series((const uint8_t *)v, vlen, &part, lb, &n);
		rocksdb_free(v);
		if (!rc)
			rc = cb(ctx, be64_get(k + lo.len), part, lb->l, n);
	}
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, NULL);
out:
	if (ro)
		rocksdb_readoptions_destroy(ro);
	labels_buf_free(lb);
	buf_release(&lo);
	buf_release(&hi);
	return rc;
}

/*
 * Walks the distinct strings that follow `lo` in posting keys: each one is
 * reported once, then the scan seeks past every key that continues it.
 */
static int distinct_after(struct store *st, const rocksdb_snapshot_t *snap, struct buf *lo,
			  struct buf *hi, int (*cb)(void *ctx, const char *s), void *ctx)
{
	size_t base = lo->len;
	struct buf next;
	struct scan s;
	int rc;

	buf_init(&next, STORE_MAX_POSTING_KEY);
	rc = store__scan_open_snap(st, CFI_SERIES, snap, &s, lo->data, lo->len, hi->data, hi->len);
	while (!rc && rocksdb_iter_valid(s.it)) {
		size_t klen;
		const char *k = rocksdb_iter_key(s.it, &klen);
		const char *nul = klen > base ? memchr(k + base, 0, klen - base) : NULL;

		if (!nul) {
			rc = ERR_CORRUPT;
			break;
		}
		buf_reset(&next);
		rc = buf_append(&next, k, (size_t)(nul - k) + 1);
		if (rc)
			break;
		rc = cb(ctx, next.data + base);
		if (rc)
			break;
		prefix_end(&next);
		rocksdb_iter_seek(s.it, next.data, next.len);
	}
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, NULL);
	buf_release(&next);
	return rc;
}

int store__head_label_names(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			    int (*cb)(void *ctx, const char *name), void *ctx)
{
	struct buf lo, hi;
	uint8_t k[5];
	int rc;

	buf_init(&lo, STORE_MAX_POSTING_KEY);
	buf_init(&hi, STORE_MAX_POSTING_KEY);
	key_tenant_tag(k, t->id, TAG_POSTING);
	rc = buf_append(&lo, k, 5);
	key_tenant_tag(k, t->id, TAG_POSTING + 1);
	if (!rc)
		rc = buf_append(&hi, k, 5);
	if (!rc)
		rc = distinct_after(st, snap, &lo, &hi, cb, ctx);
	buf_release(&lo);
	buf_release(&hi);
	return rc;
}

int store__head_label_values(struct store *st, struct tenant *t, const rocksdb_snapshot_t *snap,
			     const char *name, int (*cb)(void *ctx, const char *value), void *ctx)
{
	struct buf lo, hi;
	int rc;

	if (!name || !storable(name))
		return 0;
	buf_init(&lo, STORE_MAX_POSTING_KEY);
	buf_init(&hi, STORE_MAX_POSTING_KEY);
	rc = posting_prefix(&lo, t->id, name, NULL);
	if (!rc)
		rc = posting_prefix(&hi, t->id, name, NULL);
	if (!rc) {
		prefix_end(&hi);
		rc = distinct_after(st, snap, &lo, &hi, cb, ctx);
	}
	buf_release(&lo);
	buf_release(&hi);
	return rc;
}

/* ---- dropping series whose chunks are all sealed -------------------------- */

/* Adds the deletion of series `id` (record value v) and its postings to wb. */
static int delete_series(struct store *st, struct tenant *t, rocksdb_writebatch_t *wb,
			 uint64_t id, const uint8_t *v, size_t vlen, struct labels_buf *lb,
			 struct buf *k)
{
	uint8_t sk[13];
	uint32_t part;
	size_t n;
	int rc = decode_series(v, vlen, &part, lb, &n);

	for (size_t i = 0; i < n && !rc; i++) {
		rc = posting_prefix(k, t->id, lb->l[i].name, lb->l[i].value);
		if (!rc)
			rc = buf_put_be64(k, id);
		if (!rc)
			rocksdb_writebatch_delete_cf(wb, st->cf[CFI_SERIES], k->data, k->len);
	}
	if (rc)
		return rc;
	key_tenant_tag(sk, t->id, TAG_SERIES);
	be64_put(sk + 5, id);
	rocksdb_writebatch_delete_cf(wb, st->cf[CFI_SERIES], (const char *)sk, 13);
	return 0;
}

int store__series_gc(struct store *st, struct tenant *t, rocksdb_writebatch_t *wb,
		     int (*keep)(void *ctx, uint64_t id), void *ctx, uint64_t *deleted,
		     struct err_msg *msg)
{
	struct labels_buf *lb = labels_buf_new();
	struct buf k;
	struct scan s;
	int rc;

	if (!lb)
		return ERR_NOMEM;
	buf_init(&k, STORE_MAX_POSTING_KEY);
	rc = store__scan_tag(st, CFI_SERIES, NULL, t->id, TAG_SERIES, &s);
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen;
		const uint8_t *key = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(s.it, &vlen);
		uint64_t id;

		if (klen != 13) {
			rc = err_set(msg, ERR_CORRUPT, "series: bad key of tenant %s", t->name);
			break;
		}
		id = be64_get(key + 5);
		if (keep(ctx, id))
			continue;
		rc = delete_series(st, t, wb, id, v, vlen, lb, &k);
		if (rc)
			err_set(msg, rc, "series %llu of tenant %s: bad record", (unsigned long long)id,
				t->name);
		else
			(*deleted)++;
	}
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, msg);
	buf_release(&k);
	labels_buf_free(lb);
	return rc;
}
