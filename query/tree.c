/* tree.c - the merged call tree: children by name, totals, maxNodes folding. */
#include "query_int.h"

#include "base/err.h"

#include <stdlib.h>
#include <string.h>

int qtree_init(struct qctx *q, struct qtree *t)
{
	int rc;

	memset(t, 0, sizeof(*t));
	qmap_init(&t->children);
	rc = qnames_init(q, &t->names);
	if (rc)
		return rc;
	rc = qmem_grow(q, (void **)&t->nodes, &t->cap, sizeof(*t->nodes), 1, "tree");
	if (rc) {
		qnames_release(q, &t->names);
		return rc;
	}
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nodes[0].name = QNAME_TOTAL;
	t->nodes[0].parent = QNONE;
	t->nodes[0].first_child = QNONE;
	t->nodes[0].next_sibling = QNONE;
	t->n = 1;
	return 0;
}

void qtree_release(struct qctx *q, struct qtree *t)
{
	qnames_release(q, &t->names);
	qmem_free(q, t->nodes, t->cap, sizeof(*t->nodes));
	qmap_release(q, &t->children);
	memset(t, 0, sizeof(*t));
}

int qtree_child(struct qctx *q, struct qtree *t, uint32_t parent, uint32_t name, uint32_t *out)
{
	uint64_t key = (uint64_t)parent << 32 | name;
	struct qnode *c;
	uint32_t id;
	int rc;

	if (qmap_get(&t->children, key, &id)) {
		*out = id;
		return 0;
	}
	if (t->n >= UINT32_MAX - 1)
		return err_set(q->msg, ERR_TOO_LARGE, "call tree has too many nodes");
	rc = qmem_grow(q, (void **)&t->nodes, &t->cap, sizeof(*t->nodes), t->n + 1, "tree");
	if (rc)
		return rc;
	id = (uint32_t)t->n;
	rc = qmap_put(q, &t->children, key, id);
	if (rc)
		return rc;
	c = &t->nodes[id];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->parent = parent;
	c->first_child = QNONE;
	c->next_sibling = t->nodes[parent].first_child;
	t->nodes[parent].first_child = id;
	t->n++;
	*out = id;
	return 0;
}

void qtree_totals(struct qtree *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		t->nodes[i].total[0] = t->nodes[i].self[0];
		t->nodes[i].total[1] = t->nodes[i].self[1];
	}
	for (i = t->n; i-- > 1;) {
		struct qnode *p = &t->nodes[t->nodes[i].parent];
		p->total[0] += t->nodes[i].total[0];
		p->total[1] += t->nodes[i].total[1];
	}
}

static int map_name(struct qctx *q, struct qtree *dst, const struct qtree *src, uint32_t name,
		    uint32_t *out)
{
	if (name == QNAME_TOTAL || name == QNAME_OTHER) {
		*out = name;
		return 0;
	}
	return qnames_intern(q, &dst->names, src->names.s[name], src->names.len[name], out);
}

int qtree_add(struct qctx *q, struct qtree *dst, const struct qtree *src, int side)
{
	uint32_t *map = NULL;
	size_t mcap = 0, i;
	int rc = qmem_grow(q, (void **)&map, &mcap, sizeof(*map), src->n, "tree");

	if (rc)
		return rc;
	map[0] = 0;
	dst->nodes[0].self[side] += src->nodes[0].self[0];
	for (i = 1; i < src->n && !rc; i++) {
		const struct qnode *s = &src->nodes[i];
		uint32_t name, id;

		rc = map_name(q, dst, src, s->name, &name);
		if (!rc)
			rc = qtree_child(q, dst, map[s->parent], name, &id);
		if (rc)
			break;
		map[i] = id;
		dst->nodes[id].self[side] += s->self[0];
		if (!dst->nodes[id].build_id && s->build_id)
			rc = map_name(q, dst, src, s->build_id, &dst->nodes[id].build_id);
	}
	qmem_free(q, map, mcap, sizeof(*map));
	if (!rc)
		qtree_totals(dst);
	return rc;
}

static int64_t node_key(const struct qnode *n)
{
	return n->total[0] > n->total[1] ? n->total[0] : n->total[1];
}

/*
 * Returns the k-th largest of keys[0..n) (k counts from 0), reordering keys.
 * Quickselect: linear on average, where a full sort of ~150k node totals per
 * query was the single largest cost of truncation.
 */
static int64_t kth_largest(int64_t *keys, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		int64_t pivot = keys[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (keys[i] > pivot)
				i++;
			while (keys[j] < pivot)
				j--;
			if (i <= j) {
				int64_t t = keys[i];
				keys[i] = keys[j];
				keys[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		/* Now keys[lo..j] >= pivot >= keys[i..hi]; i > j. */
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return keys[k];
	}
	return keys[k];
}

int qtree_truncate(struct qctx *q, const struct qtree *src, size_t max_nodes, struct qtree *dst)
{
	int64_t *keys = NULL, minv = INT64_MIN;
	uint32_t *map = NULL;
	size_t kcap = 0, mcap = 0, i;
	int rc;

	if (max_nodes == 0)
		max_nodes = 1;
	if (src->n > max_nodes) {
		rc = qmem_grow(q, (void **)&keys, &kcap, sizeof(*keys), src->n, "tree");
		if (rc)
			return rc;
		for (i = 0; i < src->n; i++)
			keys[i] = node_key(&src->nodes[i]);
		minv = kth_largest(keys, src->n, max_nodes - 1);
		qmem_free(q, keys, kcap, sizeof(*keys));
	}
	rc = qmem_grow(q, (void **)&map, &mcap, sizeof(*map), src->n, "tree");
	if (rc)
		return rc;
	map[0] = 0;
	for (int s = 0; s < 2; s++) {
		dst->nodes[0].self[s] += src->nodes[0].self[s];
		dst->nodes[0].total[s] += src->nodes[0].total[s];
	}
	for (i = 1; i < src->n && !rc; i++) {
		const struct qnode *sn = &src->nodes[i];
		uint32_t parent = map[sn->parent], name, id;
		int keep = parent != QNONE && node_key(sn) >= minv && sn->name != QNAME_OTHER;

		map[i] = QNONE;
		if (parent == QNONE)
			continue;
		if (keep)
			rc = map_name(q, dst, src, sn->name, &name);
		else
			name = QNAME_OTHER;
		if (!rc)
			rc = qtree_child(q, dst, parent, name, &id);
		if (rc)
			break;
		for (int s = 0; s < 2; s++) {
			dst->nodes[id].total[s] += sn->total[s];
			dst->nodes[id].self[s] += keep ? sn->self[s] : sn->total[s];
		}
		if (keep) {
			map[i] = id;
			if (sn->build_id)
				rc = map_name(q, dst, src, sn->build_id, &dst->nodes[id].build_id);
		}
	}
	qmem_free(q, map, mcap, sizeof(*map));
	return rc;
}

struct named {
	const char *s;
	uint32_t len;
	uint32_t id;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

int qtree_sorted_children(const struct qtree *t, uint32_t node, uint32_t **out, size_t *n)
{
	size_t k = 0, i;
	uint32_t c;
	struct named *v;
	uint32_t *ids;

	for (c = t->nodes[node].first_child; c != QNONE; c = t->nodes[c].next_sibling)
		k++;
	*out = NULL;
	*n = 0;
	if (!k)
		return 0;
	v = malloc(k * sizeof(*v));
	ids = malloc(k * sizeof(*ids));
	if (!v || !ids) {
		free(v);
		free(ids);
		return ERR_NOMEM;
	}
	i = 0;
	for (c = t->nodes[node].first_child; c != QNONE; c = t->nodes[c].next_sibling) {
		v[i].s = t->names.s[t->nodes[c].name];
		v[i].len = t->names.len[t->nodes[c].name];
		v[i].id = c;
		i++;
	}
	qsort(v, k, sizeof(*v), cmp_named);
	for (i = 0; i < k; i++)
		ids[i] = v[i].id;
	free(v);
	*out = ids;
	*n = k;
	return 0;
}
