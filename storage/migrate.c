/*
 * migrate.c - one-time rewrites of stored data at store_open(), so data
 * written by an older unhex stays queryable under today's names.
 *
 * profile-types.v1: until this migration, a pprof that arrived without a
 * __name__ (no kind suffix on /ingest, no label on push) was named after
 * its first sample type: a Go heap profile became alloc_objects:...,
 * Node.js's wall profile samples:..., a .NET profile cpu:....  Pyroscope,
 * and unhex since, names them memory, wall and process_cpu (ingest/
 * naming.c).  A series is renamed when its old name can only have come
 * from that rule, i.e. its __name__ is one no client sends and Pyroscope
 * never gives:
 *
 *   old __name__                                    new __name__
 *   alloc_objects, alloc_space, inuse_objects,      memory
 *   inuse_space
 *   samples, cpu                                    process_cpu
 *   any of the above, when a sibling series         wall
 *   (same labels but the profile type) has the
 *   sample type "wall"
 *
 * Both the series' __name__ and the first part of its __profile_type__
 * change; its id, partition and samples stay.  Left as they are, because
 * the old name does not say what the data was:
 *   - contentions:... (Go mutex and block profiles, merged into one series
 *     by the old naming: the two kinds cannot be told apart any more);
 *   - goroutine:... (Grafana Alloy sends that name itself);
 *   - a profile without a period type, stored with its sample type in the
 *     period's place (indistinguishable from a real period of that type);
 *   - a series whose new labels another series already has (both stay;
 *     queries by service_name still see both).
 *
 * The rewrite of a tenant is one write batch (series records and the
 * postings of the two labels); a marker in meta records that the
 * migration ran, and the rename is idempotent anyway (a renamed series no
 * longer matches).  Runs only on read-write opens, before any writer.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/varint.h"

#define MIGRATION "profile-types.v1"
#define SERIES_VERSION 1

/* One series as read: its labels point into `text`. */
struct mseries {
	uint64_t id;
	uint32_t part;
	size_t n;
	struct store_label l[STORE_MAX_LABELS];
	char *text;
	uint64_t group;   /* hash of the labels without __profile_type__ */
	const char *name; /* the new __name__, or NULL to keep */
};

static int get_str(const uint8_t **p, const uint8_t *end, char **w)
{
	uint64_t len;
	size_t n = varint_get(*p, end, &len);

	if (!n || len > STORE_MAX_LABEL_BYTES || len > (size_t)(end - *p - n))
		return ERR_CORRUPT;
	memcpy(*w, *p + n, len);
	(*w)[len] = '\0';
	*w += len + 1;
	*p += n + len;
	return 0;
}

/* Decodes a series record (storage_int.h section 4) into *s. */
static int decode(const uint8_t *v, size_t vlen, struct mseries *s)
{
	const uint8_t *p = v + 1, *end = v + vlen;
	uint64_t part, n;
	size_t c;
	char *w;

	if (vlen < 2 || v[0] != SERIES_VERSION)
		return ERR_CORRUPT;
	if (!(c = varint_get(p, end, &part)) || part == 0 || part > UINT32_MAX)
		return ERR_CORRUPT;
	p += c;
	if (!(c = varint_get(p, end, &n)) || n == 0 || n > STORE_MAX_LABELS)
		return ERR_CORRUPT;
	p += c;
	/* Every string fits in the record, so the record bounds the text. */
	s->text = malloc(vlen + 2 * n);
	if (!s->text)
		return ERR_NOMEM;
	w = s->text;
	for (size_t i = 0; i < n; i++) {
		s->l[i].name = w;
		if (get_str(&p, end, &w))
			return ERR_CORRUPT;
		s->l[i].value = w;
		if (get_str(&p, end, &w))
			return ERR_CORRUPT;
	}
	if (p != end)
		return ERR_CORRUPT;
	s->part = (uint32_t)part;
	s->n = (size_t)n;
	return 0;
}

static const char *label(const struct mseries *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->l[i].name, name) == 0)
			return s->l[i].value;
	return NULL;
}

/* The second part of a profile type ID (its sample type), or "". */
static size_t sample_type(const char *id, const char **out)
{
	const char *a = strchr(id, ':'), *b = a ? strchr(a + 1, ':') : NULL;

	*out = a && b ? a + 1 : "";
	return a && b ? (size_t)(b - a - 1) : 0;
}

/* Whether `name` is one the old naming rule gave and nobody else gives. */
static int renamable(const char *name)
{
	static const char *const old[] = { "alloc_objects", "alloc_space", "inuse_objects",
					   "inuse_space", "samples", "cpu" };

	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
		if (strcmp(name, old[i]) == 0)
			return 1;
	return 0;
}

static uint64_t group_hash(const struct mseries *s)
{
	uint64_t h = 0x6d696772ULL;

	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->l[i].name, STORE_LABEL_PROFILE_TYPE) == 0)
			continue;
		h = hash_combine(h, hash_bytes(s->l[i].name, strlen(s->l[i].name), 1));
		h = hash_combine(h, hash_bytes(s->l[i].value, strlen(s->l[i].value), 2));
	}
	return h;
}

/* The label key of a series (storage_int.h section 4), with two values replaced. */
static int label_key(const struct mseries *s, const char *name, const char *type,
		     struct buf *out)
{
	int rc = buf_put_uvarint(out, s->n);

	for (size_t i = 0; i < s->n && !rc; i++) {
		const char *v = s->l[i].value;

		if (strcmp(s->l[i].name, STORE_LABEL_NAME) == 0 && name)
			v = name;
		else if (strcmp(s->l[i].name, STORE_LABEL_PROFILE_TYPE) == 0 && type)
			v = type;
		rc = buf_put_uvarint(out, strlen(s->l[i].name));
		if (!rc)
			rc = buf_append(out, s->l[i].name, strlen(s->l[i].name));
		if (!rc)
			rc = buf_put_uvarint(out, strlen(v));
		if (!rc)
			rc = buf_append(out, v, strlen(v));
	}
	return rc;
}

/* Grows an array of u64 to hold `need` (doubling). */
static int n_grow(uint64_t **p, size_t *cap, size_t need)
{
	size_t nc = *cap ? *cap : 64;
	uint64_t *np;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	np = realloc(*p, nc * sizeof(*np));
	if (!np)
		return ERR_NOMEM;
	*p = np;
	*cap = nc;
	return 0;
}

static int has_u64(const uint64_t *v, size_t n, uint64_t x)
{
	return n && bsearch(&x, v, n, sizeof(*v), store__cmp_u64) != NULL; /* v is NULL when n is 0 */
}

struct tenant_scan {
	struct mseries *s;
	size_t n, cap;
	uint64_t *keys;   /* hashes of every series' label key, sorted */
	uint64_t *walls;  /* groups with a wall sample type, sorted */
	size_t n_keys, n_walls;
};

static void scan_release(struct tenant_scan *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		free(ts->s[i].text);
	free(ts->s);
	free(ts->keys);
	free(ts->walls);
	memset(ts, 0, sizeof(*ts));
}

/* Reads every series of `t`: candidates in full, the rest as hashes. */
static int scan_tenant(struct store *st, struct tenant *t, struct tenant_scan *ts,
		       struct err_msg *msg)
{
	size_t cap_keys = 0, cap_walls = 0;
	struct scan sc;
	int rc;

	rc = store__scan_tag(st, CFI_SERIES, NULL, t->id, TAG_SERIES, &sc);
	if (rc)
		return rc;
	for (; !rc && rocksdb_iter_valid(sc.it); rocksdb_iter_next(sc.it)) {
		size_t klen, vlen, c;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(sc.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(sc.it, &vlen);
		struct mseries s;
		const char *name, *type, *stype;
		uint64_t part, n;

		memset(&s, 0, sizeof(s));
		if (klen != 13 || !(c = varint_get(v + 1, v + vlen, &part)) || 1 + c >= vlen ||
		    !varint_get(v + 1 + c, v + vlen, &n)) {
			rc = err_set(msg, ERR_CORRUPT, "migrate: bad series record of tenant %s",
				     t->name);
			break;
		}
		if (n_grow(&ts->keys, &cap_keys, ts->n_keys + 1)) {
			rc = ERR_NOMEM;
			break;
		}
		ts->keys[ts->n_keys++] = hash_bytes(v + 1 + c, vlen - 1 - c, 0);
		rc = decode(v, vlen, &s);
		if (rc) {
			free(s.text);
			rc = err_set(msg, rc, "migrate: bad series record of tenant %s", t->name);
			break;
		}
		s.id = be64_get(k + 5);
		s.group = group_hash(&s);
		name = label(&s, STORE_LABEL_NAME);
		type = label(&s, STORE_LABEL_PROFILE_TYPE);
		if (type && sample_type(type, &stype) == 4 && memcmp(stype, "wall", 4) == 0) {
			if (n_grow(&ts->walls, &cap_walls, ts->n_walls + 1)) {
				free(s.text);
				rc = ERR_NOMEM;
				break;
			}
			ts->walls[ts->n_walls++] = s.group;
		}
		if (!name || !type || !renamable(name) || strncmp(type, name, strlen(name)) != 0 ||
		    type[strlen(name)] != ':') {
			free(s.text);
			continue;
		}
		if (ts->n == ts->cap) {
			size_t nc = ts->cap ? 2 * ts->cap : 16;
			struct mseries *ns = realloc(ts->s, nc * sizeof(*ns));

			if (!ns) {
				free(s.text);
				rc = ERR_NOMEM;
				break;
			}
			ts->s = ns;
			ts->cap = nc;
		}
		ts->s[ts->n++] = s;
	}
	if (rc)
		store__scan_close(&sc, NULL);
	else
		rc = store__scan_close(&sc, msg);
	/* qsort's base may not be NULL, even for 0 elements (C11 7.22.5). */
	if (!rc && ts->n_keys)
		qsort(ts->keys, ts->n_keys, sizeof(*ts->keys), store__cmp_u64);
	if (!rc && ts->n_walls)
		qsort(ts->walls, ts->n_walls, sizeof(*ts->walls), store__cmp_u64);
	return rc;
}

/* Adds the batch operations that rename series `s` to `name`. */
static int rename_series(struct store *st, struct tenant *t, rocksdb_writebatch_t *wb,
			 const struct mseries *s, const char *name, struct buf *scratch)
{
	const char *old_type = label(s, STORE_LABEL_PROFILE_TYPE);
	const char *old_name = label(s, STORE_LABEL_NAME);
	const char *rest = old_type + strlen(old_name);
	uint8_t head[13];
	size_t tl = strlen(name) + strlen(rest);
	char *type = malloc(tl + 1);
	int rc;

	if (!type)
		return ERR_NOMEM;
	memcpy(type, name, strlen(name));
	memcpy(type + strlen(name), rest, strlen(rest) + 1);
	/* The series record: same id and partition, new label key. */
	buf_reset(scratch);
	rc = buf_putc(scratch, SERIES_VERSION);
	if (!rc)
		rc = buf_put_uvarint(scratch, s->part);
	if (!rc)
		rc = label_key(s, name, type, scratch);
	if (!rc) {
		key_tenant_tag(head, t->id, TAG_SERIES);
		be64_put(head + 5, s->id);
		rocksdb_writebatch_put_cf(wb, st->cf[CFI_SERIES], (const char *)head, 13,
					  scratch->data, scratch->len);
	}
	/* The postings of the two labels: old ones out, new ones in. */
	for (int i = 0; i < 4 && !rc; i++) {
		const char *ln = i % 2 ? STORE_LABEL_PROFILE_TYPE : STORE_LABEL_NAME;
		const char *lv = i < 2 ? (i % 2 ? old_type : old_name) : (i % 2 ? type : name);

		buf_reset(scratch);
		key_tenant_tag(head, t->id, TAG_POSTING);
		rc = buf_append(scratch, head, 5);
		if (!rc)
			rc = buf_append(scratch, ln, strlen(ln) + 1);
		if (!rc)
			rc = buf_append(scratch, lv, strlen(lv) + 1);
		if (!rc)
			rc = buf_put_be64(scratch, s->id);
		if (rc)
			break;
		if (i < 2)
			rocksdb_writebatch_delete_cf(wb, st->cf[CFI_SERIES], scratch->data,
						     scratch->len);
		else
			rocksdb_writebatch_put_cf(wb, st->cf[CFI_SERIES], scratch->data, scratch->len,
						  "", 0);
	}
	free(type);
	return rc;
}

static int migrate_tenant(struct store *st, struct tenant *t, size_t *renamed, size_t *kept,
			  struct err_msg *msg)
{
	struct tenant_scan ts;
	rocksdb_writebatch_t *wb = NULL;
	struct buf scratch, key;
	char *err = NULL;
	size_t n = 0;
	int rc;

	memset(&ts, 0, sizeof(ts));
	buf_init(&scratch, (size_t)STORE_MAX_LABELS * 2 * (STORE_MAX_LABEL_BYTES + 8) + 64);
	buf_init(&key, (size_t)STORE_MAX_LABELS * 2 * (STORE_MAX_LABEL_BYTES + 8) + 64);
	rc = scan_tenant(st, t, &ts, msg);
	if (rc || ts.n == 0)
		goto out;
	wb = rocksdb_writebatch_create();
	for (size_t i = 0; i < ts.n && !rc; i++) {
		struct mseries *s = &ts.s[i];
		const char *old = label(s, STORE_LABEL_NAME), *name;
		const char *rest = label(s, STORE_LABEL_PROFILE_TYPE) + strlen(old);
		char type[STORE_MAX_LABEL_BYTES + 16];

		if (has_u64(ts.walls, ts.n_walls, s->group))
			name = "wall";
		else if (strcmp(old, "samples") == 0 || strcmp(old, "cpu") == 0)
			name = "process_cpu";
		else
			name = "memory";
		if (strlen(name) + strlen(rest) >= sizeof(type)) {
			(*kept)++;
			continue;
		}
		memcpy(type, name, strlen(name));
		memcpy(type + strlen(name), rest, strlen(rest) + 1);
		buf_reset(&key);
		rc = label_key(s, name, type, &key);
		if (rc)
			break;
		/* Another series has these labels already: keep both as they are. */
		if (has_u64(ts.keys, ts.n_keys, hash_bytes(key.data, key.len, 0))) {
			(*kept)++;
			continue;
		}
		rc = rename_series(st, t, wb, s, name, &scratch);
		n++;
	}
	if (!rc && n) {
		rocksdb_write(st->db, st->wopt, wb, &err);
		if (err)
			rc = store__rocks_err(msg, ERR_IO, "migrate: write", err);
	}
	if (!rc)
		*renamed += n;
out:
	if (wb)
		rocksdb_writebatch_destroy(wb);
	buf_release(&scratch);
	buf_release(&key);
	scan_release(&ts);
	return rc;
}

int store__migrate(struct store *st, struct err_msg *msg)
{
	uint8_t k[5 + sizeof(MIGRATION) - 1];
	size_t renamed = 0, kept = 0;
	struct buf v;
	char *err = NULL;
	int rc;

	if (st->read_only)
		return 0;
	key_tenant_tag(k, 0, TAG_MIGRATION);
	memcpy(k + 5, MIGRATION, sizeof(MIGRATION) - 1);
	buf_init(&v, 64);
	rc = store__raw_get(st, CFI_META, k, sizeof(k), &v);
	buf_release(&v);
	if (rc == 0)
		return 0;
	if (rc != ERR_NOT_FOUND)
		return err_set(msg, rc, "migrate: reading the marker: %s", err_str(rc));
	for (size_t i = 0; i < st->n_tenants; i++) {
		rc = migrate_tenant(st, st->tenants[i], &renamed, &kept, msg);
		if (rc)
			return rc;
	}
	rocksdb_put_cf(st->db, st->wopt, st->cf[CFI_META], (const char *)k, sizeof(k), "1", 1,
		       &err);
	if (err)
		return store__rocks_err(msg, ERR_IO, "migrate: marker", err);
	if (renamed || kept)
		log_info("store: %s: %zu series renamed to Pyroscope's profile type names, "
			 "%zu kept (another series has the new labels)",
			 MIGRATION, renamed, kept);
	return 0;
}
