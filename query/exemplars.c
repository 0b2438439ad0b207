/*
 * exemplars.c - Pyroscope's exemplars: the stored profiles (or spans)
 * behind a SelectSeries point or a SelectHeatmap cell, with the labels of
 * their series that the grouping does not show.
 *
 * A label set is interned as its pairs sorted by name, each "name\0value\0",
 * so two sets compare by id and intersect by one merge walk.  SelectSeries
 * records one candidate per (cell, profile) it reads; query__ex_pick then
 * keeps Pyroscope's one exemplar per cell (pkg/model/timeseries and
 * timeseriescompact: the parts of one profile in several series of a group
 * are summed and their labels intersected; of the profiles of a point the
 * one with the largest value is kept, ties going to the smallest id).
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/err.h"
#include "base/intern.h"
#include "storage/storage.h"

#include <stdlib.h>
#include <string.h>

int query__ex_init(struct qctx *q, struct qexemplars *x)
{
	memset(x, 0, sizeof(*x));
	x->q = q;
	return query__names_init(q, &x->lsets);
}

void query__ex_release(struct qexemplars *x)
{
	if (!x->q)
		return;
	query__names_release(&x->lsets);
	query__mem_free(x->q, x->v, x->cap, sizeof(*x->v));
	memset(x, 0, sizeof(*x));
}

static int cmp_label_ptr(const void *a, const void *b)
{
	const struct store_label *x = *(const struct store_label *const *)a;
	const struct store_label *y = *(const struct store_label *const *)b;

	return strcmp(x->name, y->name);
}

static int excluded(const char *name, const char *const *by, size_t nby)
{
	for (size_t i = 0; i < nby; i++)
		if (!strcmp(name, by[i]))
			return 1;
	return 0;
}

int query__ex_lset(struct qexemplars *x, const struct store_label *l, size_t n,
		   const char *const *by, size_t nby, uint32_t *out)
{
	const struct store_label **s = NULL;
	size_t cap = 0;
	struct buf key;
	int rc;

	rc = query__mem_grow(x->q, (void **)&s, &cap, sizeof(*s), n ? n : 1, "exemplar labels");
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		s[i] = &l[i];
	qsort(s, n, sizeof(*s), cmp_label_ptr);
	buf_init(&key, (size_t)1 << 20);
	for (size_t i = 0; i < n && !rc; i++) {
		if (excluded(s[i]->name, by, nby))
			continue;
		rc = buf_append(&key, s[i]->name, strlen(s[i]->name) + 1);
		if (!rc)
			rc = buf_append(&key, s[i]->value, strlen(s[i]->value) + 1);
	}
	if (!rc)
		rc = query__names_intern(x->q, &x->lsets, key.data ? key.data : "", key.len, out);
	else
		rc = err_set(x->q->msg, rc, "exemplar labels too large");
	buf_release(&key);
	query__mem_free(x->q, s, cap, sizeof(*s));
	return rc;
}

/* The next pair of an encoded set from *p (< end): name and value. */
static void next_pair(const char **p, const char **name, const char **value)
{
	*name = *p;
	*value = *name + strlen(*name) + 1;
	*p = *value + strlen(*value) + 1;
}

int query__ex_intersect(struct qexemplars *x, uint32_t a, uint32_t b, uint32_t *out)
{
	const char *p = intern_str(&x->lsets, a), *pe = p + intern_len(&x->lsets, a);
	const char *q = intern_str(&x->lsets, b), *qe = q + intern_len(&x->lsets, b);
	const char *pn = NULL, *pv = NULL, *qn = NULL, *qv = NULL;
	struct buf key;
	int rc = 0;

	if (a == b) {
		*out = a;
		return 0;
	}
	buf_init(&key, intern_len(&x->lsets, a) + 1);
	if (p < pe)
		next_pair(&p, &pn, &pv);
	if (q < qe)
		next_pair(&q, &qn, &qv);
	while (pn && qn && !rc) {
		int c = strcmp(pn, qn);

		if (!c && !strcmp(pv, qv)) {
			rc = buf_append(&key, pn, (size_t)(p - pn));
		}
		if (c <= 0)
			pn = p < pe ? (next_pair(&p, &pn, &pv), pn) : NULL;
		if (c >= 0)
			qn = q < qe ? (next_pair(&q, &qn, &qv), qn) : NULL;
	}
	if (!rc)
		rc = query__names_intern(x->q, &x->lsets, key.data ? key.data : "", key.len, out);
	buf_release(&key);
	return rc;
}

int query__ex_add(struct qexemplars *x, uint64_t key, const uint8_t *id, int64_t time_ms,
		  int64_t value, uint32_t lset)
{
	struct qex *e;
	int rc = query__mem_grow(x->q, (void **)&x->v, &x->cap, sizeof(*x->v), x->n + 1,
				 "exemplars");

	if (rc)
		return rc;
	e = &x->v[x->n++];
	e->key = key;
	memcpy(e->id, id, sizeof(e->id));
	e->span = 0;
	e->time_ms = time_ms;
	e->value = value;
	e->lset = lset;
	return 0;
}

static int cmp_ex(const void *a, const void *b)
{
	const struct qex *x = a, *y = b;
	int c;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if ((c = memcmp(x->id, y->id, sizeof(x->id))))
		return c;
	return x->time_ms < y->time_ms ? -1 : x->time_ms > y->time_ms;
}

/*
 * Merges the run v[i..j) of one (key, id): per time the values summed and
 * labels intersected (one profile stored in several series of the group);
 * across times the largest sum kept (the earliest on ties), with the labels
 * of all intersected.  Writes the result to *out.
 */
static int merge_run(struct qexemplars *x, size_t i, size_t j, struct qex *out)
{
	struct qex best;
	uint32_t all = x->v[i].lset;
	int rc = 0, have = 0;

	memset(&best, 0, sizeof(best));
	for (size_t t = i; t < j && !rc;) {
		struct qex cur = x->v[t];
		size_t u = t + 1;

		for (; u < j && x->v[u].time_ms == cur.time_ms && !rc; u++) {
			cur.value = (int64_t)((uint64_t)cur.value + (uint64_t)x->v[u].value);
			rc = query__ex_intersect(x, cur.lset, x->v[u].lset, &cur.lset);
		}
		if (!rc)
			rc = query__ex_intersect(x, all, cur.lset, &all);
		if (!have || cur.value > best.value)
			best = cur;
		have = 1;
		t = u;
	}
	best.lset = all;
	*out = best;
	return rc;
}

int query__ex_pick(struct qexemplars *x)
{
	size_t k = 0;
	int rc = 0;

	if (!x->n)
		return 0;
	qsort(x->v, x->n, sizeof(*x->v), cmp_ex);
	for (size_t i = 0; i < x->n && !rc;) {
		uint64_t key = x->v[i].key;
		struct qex best;
		int have = 0;

		memset(&best, 0, sizeof(best));

		while (i < x->n && x->v[i].key == key && !rc) {
			struct qex e;
			size_t j = i + 1;

			while (j < x->n && x->v[j].key == key &&
			       !memcmp(x->v[j].id, x->v[i].id, sizeof(x->v[i].id)))
				j++;
			rc = merge_run(x, i, j, &e);
			if (!have || e.value > best.value)
				best = e;
			have = 1;
			i = j;
		}
		if (!rc)
			x->v[k++] = best; /* k <= the run's start: nothing unread is overwritten */
	}
	x->n = k;
	return rc;
}

const struct qex *query__ex_find(const struct qexemplars *x, uint64_t key)
{
	size_t lo = 0, hi = x->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->n && x->v[lo].key == key ? &x->v[lo] : NULL;
}
