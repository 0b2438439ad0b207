/*
 * reader.c - reading the head and the blocks as one: struct store_reader (a
 * snapshot of the head, references on the blocks of a time range, label
 * sets merged across them), and the calls without a reader that read the
 * latest state, where block series keep ids of their own.
 */
#include "storage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "base/intern.h"

#define MAX_WARNINGS 1024
#define MAX_READER_SERIES ((size_t)1 << 28)

/* Block series ids of the calls without a reader: bit 63, the block's ref, the index. */
#define BLOCK_SERIES_BIT ((uint64_t)1 << 63)

static uint64_t block_series_id(const struct block *b, uint32_t i)
{
	return BLOCK_SERIES_BIT | (uint64_t)b->ref << 32 | i;
}

/* ---- block helpers ------------------------------------------------------------ */

/* Whether block b may hold profiles of [from, until). */
static int overlaps(const struct block *b, int64_t from, int64_t until)
{
	return b->rec.range_start < until && b->rec.range_end > from;
}

static int block_ok(const struct block *b)
{
	return b->have_meta && atomic_load_explicit(&b->bad, memory_order_acquire) == 0;
}

/* The labels of series i of index x into l (strings owned by x). */
static size_t series_labels(const struct bindex *x, uint32_t i, struct store_label *l)
{
	const struct bser *s = &x->series[i];

	for (uint32_t j = 0; j < s->n_labels; j++) {
		l[j].name = x->str[x->labels[2 * ((size_t)s->label0 + j)]];
		l[j].value = x->str[x->labels[2 * ((size_t)s->label0 + j) + 1]];
	}
	return s->n_labels;
}

/* The string id of s in the sorted table of x, or -1. */
static int64_t find_str(const struct bindex *x, const char *s)
{
	const char **at = x->n_str ? bsearch(&s, x->str, x->n_str, sizeof(*x->str), store__cmp_str)
				   : NULL; /* x->str is NULL while empty; bsearch wants a base */

	return at ? at - x->str : -1;
}

/* The postings of name=value in x: *list and *n (n 0 when none). */
static void postings(const struct bindex *x, const char *name, const char *value,
		     const uint32_t **list, uint32_t *n)
{
	int64_t ni = find_str(x, name), vi = find_str(x, value);

	*n = 0;
	if (ni < 0 || vi < 0)
		return;
	for (uint32_t i = 0; i < x->n_pnames; i++) {
		const struct bpost_name *pn = &x->pnames[i];
		if (pn->name != (uint32_t)ni)
			continue;
		for (uint32_t j = 0; j < pn->n_vals; j++) {
			const struct bpost_val *pv = &x->pvals[pn->val0 + j];
			if (pv->value == (uint32_t)vi) {
				*list = x->plist + pv->list0;
				*n = pv->n;
			}
		}
	}
}

/*
 * Reads the pages of series i of block b in [from, until) and passes its
 * profiles to cb, with `sid` as their series id.
 */
static int block_profiles(struct bread *h, const struct bindex *x, uint32_t i,
			  uint64_t sid, int64_t from, int64_t until, struct buf *pb, struct chunk *c,
			  int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx,
			  struct err_msg *msg)
{
	const struct bser *s = &x->series[i];
	struct block *b = h->b;
	int rc = 0;

	for (uint32_t j = 0; j < s->n_pages && !rc; j++) {
		const struct bpage *pg = &x->pages[s->page0 + j];
		struct pcache_ent *pin = NULL;
		struct page_view v;

		if (pg->max_time < from || pg->min_time >= until)
			continue;
		rc = store__bread_chunk(h, s->svc, pg, pb, c, &v, &pin, msg);
		if (rc == ERR_CORRUPT) {
			store__block_bad(b, "a page of it is corrupt");
			break;
		}
		for (size_t k = 0; !rc && k < v.n; k++) {
			struct store_profile_view pv;
			const struct chunk_profile *cp = &v.profs[k];

			if (cp->meta.time_ns < from || cp->meta.time_ns >= until)
				continue;
			pv.series_id = sid;
			pv.part = b->part_base + s->svc;
			pv.meta = cp->meta;
			pv.n = cp->n;
			pv.stack_ids = cp->ids;
			pv.values = cp->vals;
			pv.span_ids = cp->spans;
			rc = cb(ctx, &pv);
		}
		store__pcache_unpin(b->pages, pin);
	}
	return rc;
}

/* ---- readers ----------------------------------------------------------------------- */

struct rsrc {
	struct block *b;        /* a reference; NULL for the head */
	struct bidx *x;         /* a reference, once loaded */
	struct bread rd;        /* its file, or the pieces of the bucket it read (pinned) */
	int skip;               /* unreadable: its profiles are left out */
	int checked;            /* pages and symbols of the series selected so far verified */
	struct bsymtab **syms;  /* [n_svc]: pinned while the reader lives */
};

struct rpart {
	uint32_t src;
	uint32_t checked;
	uint64_t id;            /* head series id, or series index in the block */
};

struct rser {
	char *key;              /* label key bytes, then the label text */
	size_t key_len;
	struct store_label *labels;
	size_t n_labels;
	struct rpart *parts;
	size_t n_parts, cap_parts;
};

struct store_reader {
	struct store *st;
	struct tenant *t;
	int64_t from, until;
	const rocksdb_snapshot_t *snap;
	struct part **pinned;
	size_t n_pinned;
	struct rsrc *src;       /* [0] is the head */
	size_t n_src;
	struct rser *ser;       /* reader series id i + 1 */
	size_t n_ser, cap_ser;
	struct hmap ser_ix;     /* hash of the label key -> index */
	uint32_t *touched;      /* series of the call in progress */
	size_t n_touched, cap_touched;
	char **warn;
	size_t n_warn, cap_warn;
	struct buf kb, page;
	struct chunk c;
	size_t cap_src;
	int64_t view_ns;        /* the bucket index its blocks reflect at least */
};

static void warn(struct store_reader *r, const struct block *b)
{
	char *w;
	char when[64];

	if (r->n_warn >= MAX_WARNINGS ||
	    GROW(r->warn, r->cap_warn, r->n_warn + 1, MAX_WARNINGS, NULL))
		return;
	for (size_t i = 0; i < r->n_warn; i++)
		if (strstr(r->warn[i], b->id_hex))
			return;
	if (b->rec.range_end == INT64_MAX)
		snprintf(when, sizeof(when), "an unknown time range");
	else
		snprintf(when, sizeof(when), "%lld..%lld ns", (long long)b->rec.range_start,
			 (long long)b->rec.range_end);
	if (asprintf(&w, "block %s (%s) of tenant %s is skipped: %s; its profiles are missing "
		     "from this answer", b->id_hex, when, b->t->name,
		     atomic_load(&b->bad) == 2 ? b->why : "unreadable") >= 0)
		r->warn[r->n_warn++] = w;
}

int store__reader_warn(struct store_reader *r, const char *text)
{
	char *w;

	if (r->n_warn >= MAX_WARNINGS)
		return 0;
	if (GROW(r->warn, r->cap_warn, r->n_warn + 1, MAX_WARNINGS, NULL) || !(w = strdup(text)))
		return ERR_NOMEM;
	r->warn[r->n_warn++] = w;
	return 0;
}

size_t store_reader_warning_count(const struct store_reader *r)
{
	return r ? r->n_warn : 0;
}

const char *store_reader_warning(const struct store_reader *r, size_t i)
{
	return r && i < r->n_warn ? r->warn[i] : NULL;
}

void store_reader_close(struct store_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_src; i++) {
		struct rsrc *s = &r->src[i];
		store__bread_release(&s->rd);
		store__bidx_put(s->x);
		for (size_t k = 0; s->syms && k < s->b->m.n_svc; k++)
			store__bsymtab_put(s->syms[k]);
		free(s->syms);
		if (s->b)
			store__block_put(r->st, s->b);
	}
	free(r->src);
	for (size_t i = 0; i < r->n_pinned; i++)
		store__part_put(r->t, r->pinned[i]);
	free(r->pinned);
	if (r->snap)
		rocksdb_release_snapshot(r->st->db, r->snap);
	for (size_t i = 0; i < r->n_ser; i++) {
		free(r->ser[i].key);
		free(r->ser[i].labels);
		free(r->ser[i].parts);
	}
	free(r->ser);
	hmap_release(&r->ser_ix);
	free(r->touched);
	for (size_t i = 0; i < r->n_warn; i++)
		free(r->warn[i]);
	free(r->warn);
	buf_release(&r->kb);
	buf_release(&r->page);
	store__chunk_release(&r->c);
	free(r);
}

int store_reader_open(struct store *st, const char *tenant, int64_t from_ns,
		      int64_t until_ns, struct store_reader **out, struct err_msg *msg)
{
	return store_reader_open_eq(st, tenant, from_ns, until_ns, NULL, 0, out, msg);
}

int store_reader_open_eq(struct store *st, const char *tenant, int64_t from_ns,
			 int64_t until_ns, const struct store_label *eq, size_t n_eq,
			 struct store_reader **out, struct err_msg *msg)
{
	int rc;

	if (!st->n_peers)
		return store__reader_open(st, tenant, from_ns, until_ns, NULL, 0, out, msg);
	/* A querier: its view of the bucket and what the ingesters hold that
	 * the view does not (peers.c). */
	rc = store__reader_open(st, tenant, from_ns, until_ns, NULL, 0, out, msg);
	if (!rc)
		rc = store__peers_read(st, tenant, out, eq, n_eq, msg);
	return rc;
}

int store__reader_open(struct store *st, const char *tenant, int64_t from_ns, int64_t until_ns,
		       const uint8_t (*skip)[BLOCK_ID_BYTES], size_t n_skip,
		       struct store_reader **out, struct err_msg *msg)
{
	struct store_reader *r = calloc(1, sizeof(*r));
	struct tenant *t;
	int rc = 0;

	if (!r)
		return ERR_NOMEM;
	r->st = st;
	r->from = from_ns;
	r->until = until_ns;
	/* Read before the blocks are: they reflect at least this index. */
	r->view_ns = atomic_load(&st->bucket_view_ns);
	hmap_init(&r->ser_ix, (uint32_t)MAX_READER_SERIES, NULL);
	buf_init(&r->kb, STORE_MAX_LABEL_KEY);
	buf_init(&r->page, BLOCK_MAX_PAGE_BYTES);
	store__chunk_init(&r->c);
	t = store__tenant_find(st, tenant);
	r->t = t;
	if (!t) {
		*out = r;
		return 0;
	}
	pthread_rwlock_rdlock(&st->commit_lock);
	r->snap = rocksdb_create_snapshot(st->db);
	pthread_mutex_lock(&t->mu);
	r->pinned = calloc(t->n_parts + 1, sizeof(*r->pinned));
	r->src = calloc(t->n_blocks + 1, sizeof(*r->src));
	r->cap_src = t->n_blocks + 1;
	if (!r->pinned || !r->src)
		rc = ERR_NOMEM;
	for (size_t i = 0; !rc && i < t->n_parts; i++) {
		if (t->parts[i]->retired)
			continue;
		atomic_fetch_add(&t->parts[i]->refs, 1);
		r->pinned[r->n_pinned++] = t->parts[i];
	}
	if (!rc) {
		store__bread_init(&r->src[0].rd, NULL);
		r->n_src = 1;
	}
	for (size_t i = 0; !rc && i < t->n_blocks; i++) {
		struct block *b = t->blocks[i];
		if (!overlaps(b, from_ns, until_ns) ||
		    (n_skip && bsearch(b->id, skip, n_skip, BLOCK_ID_BYTES, store__cmp_id)))
			continue;
		store__block_ref(b);
		r->src[r->n_src].b = b;
		store__bread_init(&r->src[r->n_src].rd, b);
		r->src[r->n_src].skip = !block_ok(b);
		r->n_src++;
	}
	pthread_mutex_unlock(&t->mu);
	pthread_rwlock_unlock(&st->commit_lock);
	for (size_t i = 1; i < r->n_src; i++)
		if (r->src[i].skip)
			warn(r, r->src[i].b);
	if (rc) {
		store_reader_close(r);
		return err_set(msg, rc, "reader: %s", err_str(rc));
	}
	*out = r;
	return 0;
}

void store__reader_range(const struct store_reader *r, int64_t *from, int64_t *until)
{
	*from = r->from;
	*until = r->until;
}

int64_t store__reader_view_ns(const struct store_reader *r)
{
	return r->view_ns;
}

int store__reader_ids(const struct store_reader *r, uint8_t (**out)[BLOCK_ID_BYTES], size_t *n)
{
	size_t k = 0;
	uint8_t(*v)[BLOCK_ID_BYTES];

	for (size_t i = 1; i < r->n_src; i++)
		k += 1 + r->src[i].b->n_covers + (r->src[i].b->have_meta ? r->src[i].b->m.n_sources : 0);
	v = malloc((k + 1) * BLOCK_ID_BYTES);
	if (!v)
		return ERR_NOMEM;
	k = 0;
	for (size_t i = 1; i < r->n_src; i++) {
		const struct block *b = r->src[i].b;
		memcpy(v[k++], b->id, BLOCK_ID_BYTES);
		for (uint32_t j = 0; j < b->n_covers; j++)
			memcpy(v[k++], b->covers[j], BLOCK_ID_BYTES);
		for (size_t j = 0; b->have_meta && j < b->m.n_sources; j++)
			memcpy(v[k++], b->m.sources[j], BLOCK_ID_BYTES);
	}
	if (k)
		qsort(v, k, BLOCK_ID_BYTES, store__cmp_id);
	/* A source is also among the covers the index gave: once each. */
	if (k) {
		size_t u = 1;
		for (size_t i = 1; i < k; i++)
			if (memcmp(v[i], v[u - 1], BLOCK_ID_BYTES))
				memcpy(v[u++], v[i], BLOCK_ID_BYTES);
		k = u;
	}
	*out = v;
	*n = k;
	return 0;
}

int store__reader_add(struct store_reader *r, struct block *b)
{
	int rc = GROW(r->src, r->cap_src, r->n_src + 2, (size_t)UINT32_MAX, NULL);

	if (rc)
		return rc;
	if (!r->n_src) {
		/* A tenant the store did not know when the reader opened: its
		 * head is empty, and stays out of this reader. */
		memset(&r->src[0], 0, sizeof(r->src[0]));
		store__bread_init(&r->src[0].rd, NULL);
		r->n_src = 1;
	}
	if (!r->t)
		r->t = b->t;
	memset(&r->src[r->n_src], 0, sizeof(r->src[0]));
	r->src[r->n_src].b = b;
	store__bread_init(&r->src[r->n_src].rd, b);
	r->src[r->n_src].skip = !block_ok(b);
	r->n_src++;
	return 0;
}

/* The decoded index of source i, or NULL (the source is then skipped). */
static const struct bindex *src_index(struct store_reader *r, size_t i)
{
	struct rsrc *s = &r->src[i];
	struct err_msg m;

	if (s->skip)
		return NULL;
	if (s->x)
		return &s->x->x;
	err_clear(&m);
	if (store__block_index(r->st, s->b, &s->x, &m)) {
		s->skip = 1;
		warn(r, s->b);
		return NULL;
	}
	return &s->x->x;
}

/* Adds (src, id) to the reader series of `labels`, noting it as touched. */
static int add_part(struct store_reader *r, uint32_t src, uint64_t id,
		    const struct store_label *labels, size_t n)
{
	struct hmap_probe pr;
	struct rser *s = NULL;
	uint64_t h;
	uint32_t i;
	int rc;

	rc = store__label_key(labels, n, &r->kb);
	if (rc)
		return rc;
	h = hash_bytes(r->kb.data, r->kb.len, 0x5e);
	for (i = hmap_first(&r->ser_ix, h, &pr); i != HMAP_NONE; i = hmap_next(&r->ser_ix, &pr))
		if (r->ser[i].key_len == r->kb.len && !memcmp(r->ser[i].key, r->kb.data, r->kb.len))
			break;
	if (i == HMAP_NONE) {
		rc = GROW(r->ser, r->cap_ser, r->n_ser + 1, MAX_READER_SERIES, NULL);
		if (!rc)
			rc = hmap_put_probed(&r->ser_ix, &pr, (uint32_t)r->n_ser);
		if (rc)
			return rc;
		s = &r->ser[r->n_ser];
		memset(s, 0, sizeof(*s));
		s->key = malloc(r->kb.len + store__labels_size(labels, n));
		s->labels = calloc(n + 1, sizeof(*s->labels));
		if (!s->key || !s->labels) {
			free(s->key);
			free(s->labels);
			hmap_truncate(&r->ser_ix, (uint32_t)r->n_ser);
			return ERR_NOMEM;
		}
		memcpy(s->key, r->kb.data, r->kb.len);
		s->key_len = r->kb.len;
		store__labels_copy(labels, n, s->key + r->kb.len, s->labels);
		s->n_labels = n;
		i = (uint32_t)r->n_ser++;
	}
	s = &r->ser[i];
	for (size_t k = 0; k < s->n_parts; k++)
		if (s->parts[k].src == src && s->parts[k].id == id)
			goto touched;
	rc = GROW(s->parts, s->cap_parts, s->n_parts + 1, (size_t)UINT32_MAX, NULL);
	if (rc)
		return rc;
	s->parts[s->n_parts].src = src;
	s->parts[s->n_parts].id = id;
	s->parts[s->n_parts].checked = 0;
	s->n_parts++;
touched:
	for (size_t k = 0; k < r->n_touched; k++)
		if (r->touched[k] == i)
			return 0;
	rc = GROW(r->touched, r->cap_touched, r->n_touched + 1, MAX_READER_SERIES, NULL);
	if (!rc)
		r->touched[r->n_touched++] = i;
	return rc;
}

struct head_add {
	struct store_reader *r;
	int rc;
};

static int head_add_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
		       size_t n)
{
	struct head_add *h = ctx;

	(void)part;
	h->rc = add_part(h->r, 0, id, l, n);
	return h->rc;
}

/* Calls cb for each reader series touched by the call that just gathered them. */
static int report(struct store_reader *r, store_series_cb cb, void *ctx)
{
	int rc = 0;

	for (size_t k = 0; k < r->n_touched && !rc; k++) {
		const struct rser *s = &r->ser[r->touched[k]];
		rc = cb(ctx, (uint64_t)r->touched[k] + 1, 0, s->labels, s->n_labels);
	}
	r->n_touched = 0;
	return rc;
}

static int gather(struct store_reader *r, const char *name, const char *value)
{
	struct store_label l[STORE_MAX_LABELS];
	struct head_add h = { r, 0 };
	int rc;

	r->n_touched = 0;
	if (!r->t)
		return 0;
	rc = name ? store__head_series_with(r->st, r->t, r->snap, name, value, head_add_cb, &h)
		  : store__head_series_each(r->st, r->t, r->snap, head_add_cb, &h);
	if (h.rc)
		return h.rc;
	if (rc)
		return rc;
	for (size_t i = 1; i < r->n_src && !rc; i++) {
		const struct bindex *x = src_index(r, i);
		const uint32_t *list = NULL;
		uint32_t n = 0;

		if (!x)
			continue;
		if (name) {
			postings(x, name, value, &list, &n);
			for (uint32_t k = 0; k < n && !rc; k++)
				rc = add_part(r, (uint32_t)i, list[k], l, series_labels(x, list[k], l));
		} else {
			for (uint32_t k = 0; k < x->n_series && !rc; k++)
				rc = add_part(r, (uint32_t)i, k, l, series_labels(x, k, l));
		}
	}
	return rc;
}

int store_reader_series_each(struct store_reader *r, store_series_cb cb, void *ctx)
{
	int rc = gather(r, NULL, NULL);

	return rc ? rc : report(r, cb, ctx);
}

int store_reader_series_with(struct store_reader *r, const char *name, const char *value,
			     store_series_cb cb, void *ctx)
{
	int rc;

	if (!name || !value)
		return 0;
	rc = gather(r, name, value);
	return rc ? rc : report(r, cb, ctx);
}

/* ---- distinct strings --------------------------------------------------------------- */

struct strset {
	struct intern in;
	int rc;
};

static int strset_add(void *ctx, const char *s)
{
	struct strset *ss = ctx;
	uint32_t id;

	ss->rc = intern_put(&ss->in, s, strlen(s), &id);
	return ss->rc;
}

static const struct intern *tls_in;

static int strset_cmp(const void *a, const void *b)
{
	return strcmp(intern_str(tls_in, *(const uint32_t *)a), intern_str(tls_in, *(const uint32_t *)b));
}

/* Calls cb with every string of the set, sorted. */
static int strset_report(struct strset *ss, int (*cb)(void *ctx, const char *s), void *ctx)
{
	uint32_t n = intern_count(&ss->in), *ord = malloc(((size_t)n + 1) * sizeof(*ord));
	int rc = 0;

	if (!ord)
		return ERR_NOMEM;
	for (uint32_t i = 0; i < n; i++)
		ord[i] = i;
	tls_in = &ss->in;
	qsort(ord, n, sizeof(*ord), strset_cmp);
	tls_in = NULL;
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = cb(ctx, intern_str(&ss->in, ord[i]));
	free(ord);
	return rc;
}

/* Adds the label names (name NULL) or the values of `name` of index x. */
static int index_strings(const struct bindex *x, const char *name, struct strset *ss)
{
	int64_t ni = name ? find_str(x, name) : -1;
	int rc = 0;

	for (uint32_t i = 0; i < x->n_pnames && !rc; i++) {
		const struct bpost_name *pn = &x->pnames[i];
		if (!name) {
			rc = strset_add(ss, x->str[pn->name]);
			continue;
		}
		if ((int64_t)pn->name != ni)
			continue;
		for (uint32_t j = 0; j < pn->n_vals && !rc; j++)
			rc = strset_add(ss, x->str[x->pvals[pn->val0 + j].value]);
	}
	return rc;
}

static int reader_strings(struct store_reader *r, const char *name,
			  int (*cb)(void *ctx, const char *s), void *ctx)
{
	struct strset ss;
	int rc = 0;

	if (!r->t)
		return 0;
	intern_init(&ss.in, STORE_MAX_SYMBOLS, STORE_MAX_POOL_BYTES, NULL);
	ss.rc = 0;
	rc = name ? store__head_label_values(r->st, r->t, r->snap, name, strset_add, &ss)
		  : store__head_label_names(r->st, r->t, r->snap, strset_add, &ss);
	if (ss.rc)
		rc = ss.rc;
	for (size_t i = 1; i < r->n_src && !rc; i++) {
		const struct bindex *x = src_index(r, i);
		if (x)
			rc = index_strings(x, name, &ss);
	}
	if (!rc)
		rc = strset_report(&ss, cb, ctx);
	intern_release(&ss.in);
	return rc;
}

int store_reader_label_names(struct store_reader *r, int (*cb)(void *ctx, const char *name),
			     void *ctx)
{
	return reader_strings(r, NULL, cb, ctx);
}

int store_reader_label_values(struct store_reader *r, const char *name,
			      int (*cb)(void *ctx, const char *value), void *ctx)
{
	return name ? reader_strings(r, name, cb, ctx) : 0;
}

/* ---- profiles --------------------------------------------------------------------------- */

/* Appends the pieces series i of x needs for [from, until): its pages in range. */
static int series_pieces(const struct block *b, const struct bindex *x, uint32_t i,
			 int64_t from, int64_t until, struct rpiece **v, size_t *n, size_t *cap)
{
	const struct bser *bs = &x->series[i];
	int rc = 0;

	for (uint32_t j = 0; j < bs->n_pages && !rc; j++) {
		const struct bpage *pg = &x->pages[bs->page0 + j];

		if (pg->max_time < from || pg->min_time >= until)
			continue;
		rc = GROW(*v, *cap, *n + 1, (size_t)BLOCK_MAX_PAGES, NULL);
		if (!rc)
			store__page_piece(b, pg, &(*v)[(*n)++]);
	}
	return rc;
}

/*
 * A block read from the bucket: the symbol sections of the services and
 * the pages in range of every series selected from source i and not
 * checked yet, fetched together (merged ranged GETs in parallel) and
 * pinned by the reader, so that nothing it reads later asks the bucket.
 */
static int prefetch(struct store_reader *r, size_t i, const struct bindex *x, int64_t from,
		    int64_t until, struct err_msg *msg)
{
	struct rsrc *s = &r->src[i];
	struct rpiece *v = NULL;
	size_t n = 0, cap = 0;
	uint8_t *svc = calloc(s->b->m.n_svc, 1);
	int rc = svc ? 0 : ERR_NOMEM;

	for (size_t k = 0; k < r->n_ser && !rc; k++) {
		const struct rser *se = &r->ser[k];
		for (size_t p = 0; p < se->n_parts && !rc; p++) {
			const struct rpart *rp = &se->parts[p];
			uint32_t sv;

			if (rp->src != i || rp->checked)
				continue;
			sv = x->series[rp->id].svc;
			if (!svc[sv] && !s->syms[sv]) {
				svc[sv] = 1;
				rc = GROW(v, cap, n + 1, (size_t)BLOCK_MAX_PAGES, NULL);
				if (!rc)
					store__section_piece(&s->b->m.sec[s->b->m.svc[sv].section],
							     RKIND_SYMBOLS, &v[n++]);
			}
			if (!rc)
				rc = series_pieces(s->b, x, (uint32_t)rp->id, from, until, &v, &n, &cap);
		}
	}
	if (!rc)
		rc = store__bread_fetch(&s->rd, v, n, msg);
	free(v);
	free(svc);
	return rc;
}

/*
 * Before the first profile of block source i is passed on, every page in
 * range of every series selected from it, and the symbols of their
 * services, are read and checked: a corrupt block is left out whole.
 */
static int check_source(struct store_reader *r, size_t i, int64_t from, int64_t until)
{
	struct rsrc *s = &r->src[i];
	const struct bindex *x = src_index(r, i);
	struct err_msg m;
	int rc = 0;

	if (!x)
		return 0;
	if (!s->syms) {
		s->syms = calloc(s->b->m.n_svc, sizeof(*s->syms));
		if (!s->syms)
			return ERR_NOMEM;
	}
	err_clear(&m);
	if (s->b->remote) {
		rc = prefetch(r, i, x, from, until, &m);
	} else if (s->rd.fd < 0) {
		s->rd.fd = store__block_open_fd(s->b, &m);
		if (s->rd.fd < 0) {
			s->skip = 1;
			warn(r, s->b);
			return 0;
		}
	}
	for (size_t k = 0; k < r->n_ser && !rc; k++) {
		struct rser *se = &r->ser[k];
		for (size_t p = 0; p < se->n_parts && !rc; p++) {
			struct rpart *rp = &se->parts[p];
			const struct bser *bs;

			if (rp->src != i || rp->checked)
				continue;
			rp->checked = 1;
			bs = &x->series[rp->id];
			if (!s->syms[bs->svc]) {
				err_clear(&m);
				rc = store__block_syms(r->st, s->b, bs->svc, &s->syms[bs->svc], &m);
				if (rc == ERR_CORRUPT)
					break;
			}
			for (uint32_t j = 0; j < bs->n_pages && !rc; j++) {
				const struct bpage *pg = &x->pages[bs->page0 + j];
				/* A cached page passed its check when it was read. */
				if (pg->max_time < from || pg->min_time >= until ||
				    store__pcache_holds(s->b->pages, s->b, pg))
					continue;
				err_clear(&m);
				rc = store__bread_page(&s->rd, pg, &r->page, &m);
				if (rc == ERR_CORRUPT)
					store__block_bad(s->b, "a page of it is corrupt");
			}
		}
	}
	/* A block read from the bucket that the bucket fails now is skipped
	 * like a corrupt one, but not marked bad: the next query tries again. */
	if (rc == ERR_CORRUPT || (rc && rc != ERR_NOMEM && s->b->remote) ||
	    (!rc && !block_ok(s->b))) {
		s->skip = 1;
		warn(r, s->b);
		return 0;
	}
	return rc;
}

int store_reader_profiles_each(struct store_reader *r, uint64_t series_id, int64_t from_ns,
			       int64_t until_ns,
			       int (*cb)(void *ctx, const struct store_profile_view *p),
			       void *ctx, struct err_msg *msg)
{
	struct rser *s;
	int rc = 0;

	if (series_id == 0 || series_id > r->n_ser)
		return err_set(msg, ERR_NOT_FOUND, "reader has no series %llu",
			       (unsigned long long)series_id);
	if (from_ns < r->from)
		from_ns = r->from;
	if (until_ns > r->until)
		until_ns = r->until;
	if (until_ns <= from_ns)
		return 0;
	s = &r->ser[series_id - 1];
	for (size_t p = 0; p < s->n_parts && !rc; p++) {
		const struct rpart *rp = &s->parts[p];
		struct rsrc *src = &r->src[rp->src];

		if (rp->src == 0) {
			rc = store__head_profiles(r->st, r->t, r->snap, rp->id, from_ns, until_ns, cb,
						  ctx, msg);
			continue;
		}
		if (!rp->checked && !src->skip)
			rc = check_source(r, rp->src, r->from, r->until);
		if (rc || src->skip)
			continue;
		rc = block_profiles(&src->rd, &src->x->x, (uint32_t)rp->id, series_id, from_ns,
				    until_ns, &r->page, &r->c, cb, ctx, msg);
		if (rc == ERR_CORRUPT || (rc < 0 && rc != ERR_NOMEM && src->b->remote)) {
			/* Past the check: a page decodes wrong, or (pinned pieces
			 * make it unlikely) the bucket failed a read. */
			src->skip = 1;
			warn(r, src->b);
			err_clear(msg);
			rc = 0;
		}
	}
	return rc;
}

/* ---- the calls without a reader -------------------------------------------------------- */

static int series_plain(struct store *st, const char *tenant, const char *name,
			const char *value, store_series_cb cb, void *ctx)
{
	struct tenant *t = store__tenant_find(st, tenant);
	struct store_label l[STORE_MAX_LABELS];
	struct block **v = NULL;
	size_t n = 0;
	int rc;

	if (!t)
		return 0;
	rc = name ? store__head_series_with(st, t, NULL, name, value, cb, ctx)
		  : store__head_series_each(st, t, NULL, cb, ctx);
	if (!rc)
		rc = store__blocks_snapshot(t, &v, &n);
	for (size_t i = 0; i < n && !rc; i++) {
		struct bidx *x = NULL;
		const uint32_t *list;
		uint32_t k;

		if (!block_ok(v[i]) || store__block_index(st, v[i], &x, NULL))
			continue;
		if (name) {
			postings(&x->x, name, value, &list, &k);
			for (uint32_t j = 0; j < k && !rc; j++)
				rc = cb(ctx, block_series_id(v[i], list[j]),
					v[i]->part_base + x->x.series[list[j]].svc, l,
					series_labels(&x->x, list[j], l));
		} else {
			for (uint32_t j = 0; j < x->x.n_series && !rc; j++)
				rc = cb(ctx, block_series_id(v[i], j), v[i]->part_base + x->x.series[j].svc,
					l, series_labels(&x->x, j, l));
		}
		store__bidx_put(x);
	}
	store__blocks_release(st, v, n);
	return rc;
}

int store_series_each(struct store *st, const char *tenant, store_series_cb cb, void *ctx)
{
	return series_plain(st, tenant, NULL, NULL, cb, ctx);
}

int store_series_with(struct store *st, const char *tenant, const char *name,
		      const char *value, store_series_cb cb, void *ctx)
{
	if (!name || !value)
		return 0;
	return series_plain(st, tenant, name, value, cb, ctx);
}

static int strings_plain(struct store *st, const char *tenant, const char *name,
			 int (*cb)(void *ctx, const char *s), void *ctx)
{
	struct tenant *t = store__tenant_find(st, tenant);
	struct block **v = NULL;
	struct strset ss;
	size_t n = 0;
	int rc;

	if (!t)
		return 0;
	intern_init(&ss.in, STORE_MAX_SYMBOLS, STORE_MAX_POOL_BYTES, NULL);
	ss.rc = 0;
	rc = name ? store__head_label_values(st, t, NULL, name, strset_add, &ss)
		  : store__head_label_names(st, t, NULL, strset_add, &ss);
	if (ss.rc)
		rc = ss.rc;
	if (!rc)
		rc = store__blocks_snapshot(t, &v, &n);
	for (size_t i = 0; i < n && !rc; i++) {
		struct bidx *x = NULL;
		if (!block_ok(v[i]) || store__block_index(st, v[i], &x, NULL))
			continue;
		rc = index_strings(&x->x, name, &ss);
		store__bidx_put(x);
	}
	store__blocks_release(st, v, n);
	if (!rc)
		rc = strset_report(&ss, cb, ctx);
	intern_release(&ss.in);
	return rc;
}

int store_label_names(struct store *st, const char *tenant,
		      int (*cb)(void *ctx, const char *name), void *ctx)
{
	return strings_plain(st, tenant, NULL, cb, ctx);
}

int store_label_values(struct store *st, const char *tenant, const char *name,
		       int (*cb)(void *ctx, const char *value), void *ctx)
{
	return name ? strings_plain(st, tenant, name, cb, ctx) : 0;
}

/*
 * Series i of a block read from the bucket, for a call without a reader:
 * its pages in range and its service's symbols (which the caller's
 * symbol view asks for next) fetched together and pinned by h.
 */
static int remote_series(struct store *st, struct bread *h, const struct bindex *x, uint32_t i,
			 int64_t from, int64_t until, struct err_msg *msg)
{
	const struct block *b = h->b;
	uint32_t svc = x->series[i].svc;
	struct rpiece *v = NULL;
	struct bsymtab *sy = NULL;
	size_t n = 0, cap = 0;
	int rc = GROW(v, cap, 1, (size_t)BLOCK_MAX_PAGES, NULL);

	if (!rc) {
		store__section_piece(&b->m.sec[b->m.svc[svc].section], RKIND_SYMBOLS, &v[n++]);
		rc = series_pieces(b, x, i, from, until, &v, &n, &cap);
	}
	if (!rc)
		rc = store__bread_fetch(h, v, n, msg);
	free(v);
	if (!rc)
		rc = store__block_syms(st, h->b, svc, &sy, msg);
	store__bsymtab_put(sy);
	return rc;
}

int store_profiles_each(struct store *st, const char *tenant, uint64_t series_id,
			int64_t from_ns, int64_t until_ns,
			int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx,
			struct err_msg *msg)
{
	struct tenant *t = store__tenant_find(st, tenant);
	struct bidx *x = NULL;
	struct block *b;
	struct bread h;
	struct buf pb;
	struct chunk c;
	uint32_t i;
	int rc;

	if (!t || until_ns <= from_ns)
		return 0;
	if (!(series_id & BLOCK_SERIES_BIT))
		return store__head_profiles(st, t, NULL, series_id, from_ns, until_ns, cb, ctx, msg);
	pthread_mutex_lock(&t->mu);
	b = store__block_by_ref(t, (uint32_t)(series_id >> 32) & 0x7fffffffu);
	if (b)
		store__block_ref(b);
	pthread_mutex_unlock(&t->mu);
	if (!b)
		return 0;
	i = (uint32_t)series_id;
	rc = block_ok(b) ? store__block_index(st, b, &x, msg) : 0;
	if (rc || !x || i >= x->x.n_series)
		goto out;
	store__bread_init(&h, b);
	if (b->remote)
		rc = remote_series(st, &h, &x->x, i, from_ns, until_ns, msg);
	buf_init(&pb, BLOCK_MAX_PAGE_BYTES);
	store__chunk_init(&c);
	if (!rc)
		rc = block_profiles(&h, &x->x, i, series_id, from_ns, until_ns, &pb, &c, cb, ctx, msg);
	store__chunk_release(&c);
	buf_release(&pb);
	store__bread_release(&h);
out:
	/* Without a reader there is no answer to warn in: a block the bucket
	 * fails is left out as an unreadable one is (the reader of the same
	 * query, if any, warns of it; the log names the bucket's error). */
	if (rc < 0 && rc != ERR_NOMEM && b->remote) {
		err_clear(msg);
		rc = 0;
	}
	store__bidx_put(x);
	store__block_put(st, b);
	return rc;
}
