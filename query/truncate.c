/*
 * truncate.c - the fifth stage of the pipeline: at most maxNodes nodes of a
 * call tree are kept, those of the largest totals (the larger side of a
 * diff); the children of a parent that fall below are folded into one child
 * "other" of that parent, so every total is kept.
 */
#include "query/query_int.h"

#include "base/err.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

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

/* Writes the kept nodes of `src` into `dst` (initialized, empty). */
static int truncate_into(struct qctx *q, const struct qtree *src, size_t max_nodes,
			 struct qtree *dst)
{
	int64_t *keys = NULL, minv = INT64_MIN;
	uint32_t *map = NULL;
	size_t kcap = 0, mcap = 0, i;
	int rc;

	if (src->n > max_nodes) {
		rc = query__mem_grow(q, (void **)&keys, &kcap, sizeof(*keys), src->n, "tree");
		if (rc)
			return rc;
		for (i = 0; i < src->n; i++)
			keys[i] = node_key(&src->nodes[i]);
		minv = kth_largest(keys, src->n, max_nodes - 1);
		query__mem_free(q, keys, kcap, sizeof(*keys));
	}
	rc = query__mem_grow(q, (void **)&map, &mcap, sizeof(*map), src->n, "tree");
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
			rc = query__tree_copy_name(q, dst, src, sn->name, &name);
		else
			name = QNAME_OTHER;
		if (!rc)
			rc = query__tree_child(q, dst, parent, name, &id);
		if (rc)
			break;
		for (int s = 0; s < 2; s++) {
			dst->nodes[id].total[s] += sn->total[s];
			dst->nodes[id].self[s] += keep ? sn->self[s] : sn->total[s];
		}
		if (keep) {
			map[i] = id;
			if (sn->build_id)
				rc = query__tree_copy_name(q, dst, src, sn->build_id,
							   &dst->nodes[id].build_id);
		}
	}
	query__mem_free(q, map, mcap, sizeof(*map));
	return rc;
}

int query__truncate(struct qctx *q, struct qtree *t, size_t max_nodes)
{
	struct qtree dst;
	int rc;

	assert(t->n >= 1 && max_nodes >= 1);
	rc = query__tree_init(q, &dst);
	if (rc)
		return rc;
	rc = truncate_into(q, t, max_nodes, &dst);
	if (rc) {
		query__tree_release(q, &dst);
		return rc;
	}
	query__tree_release(q, t);
	*t = dst;
	return 0;
}
