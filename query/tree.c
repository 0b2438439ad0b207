/*
 * tree.c - the merged call tree: children by name, totals, the union of two
 * trees for a diff, and children in name order for the encoders.
 */
#include "query_int.h"

#include "base/err.h"
#include "base/hash.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

int query__tree_init(struct qctx *q, struct qtree *t)
{
	int rc;

	memset(t, 0, sizeof(*t));
	rc = query__names_init(q, &t->names);
	if (rc)
		return rc;
	rc = query__mem_grow(q, (void **)&t->nodes, &t->cap, sizeof(*t->nodes), 1, "tree");
	if (rc) {
		query__names_release(&t->names);
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

/* By hand: snprintf was 4 % of a query that names ~150k raw frames. */
size_t query__raw_name(char *out, const char *file, uint64_t addr)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strnlen(file, 400), d = 1;

	memcpy(out, file, n);
	memcpy(out + n, "+0x", 3);
	n += 3;
	while (d < 16 && addr >> (4 * d))
		d++;
	for (size_t i = d; i-- > 0; addr >>= 4)
		out[n + i] = hex[addr & 15];
	n += d;
	out[n] = '\0';
	return n;
}

int query__tree_reserve(struct qctx *q, struct qtree *t, size_t n)
{
	return query__mem_grow(q, (void **)&t->nodes, &t->cap, sizeof(*t->nodes), n, "tree");
}

void query__tree_release(struct qctx *q, struct qtree *t)
{
	query__names_release(&t->names);
	query__mem_free(q, t->nodes, t->cap, sizeof(*t->nodes));
	query__mem_free(q, t->kids, t->kids_cap, sizeof(*t->kids));
	query__mem_free(q, t->raw, t->rawcap, sizeof(*t->raw));
	memset(t, 0, sizeof(*t));
}

/* A node with more children than this has them in the index. */
enum { KIDS_LISTED = 4 };

/* The high half of the hash of (parent, name): its low bits are the first slot. */
static uint32_t kid_hash(uint32_t parent, uint32_t name)
{
	return (uint32_t)(hash_u64((uint64_t)parent << 32 | name) >> 32);
}

/* In the index: the node of child `name` of `parent`, QNONE when none. */
static uint32_t kid_find(const struct qtree *t, uint32_t parent, uint32_t name)
{
	uint32_t h = kid_hash(parent, name);
	size_t mask = t->kids_cap - 1, i;

	for (i = h & mask; t->kids[i]; i = (i + 1) & mask) {
		uint32_t id = (uint32_t)t->kids[i];

		if ((uint32_t)(t->kids[i] >> 32) == h && t->nodes[id].parent == parent &&
		    t->nodes[id].name == name)
			return id;
	}
	return QNONE;
}

/* Adds node `id` to the index, which has room. */
static void kid_add(struct qtree *t, uint32_t id)
{
	uint32_t h = kid_hash(t->nodes[id].parent, t->nodes[id].name);
	size_t mask = t->kids_cap - 1, i;

	for (i = h & mask; t->kids[i]; i = (i + 1) & mask)
		;
	t->kids[i] = (uint64_t)h << 32 | id;
	t->kids_n++;
}

/* Makes room in the index for `more` nodes: doubles it (from 64 slots) past 3/4 full. */
static int kids_reserve(struct qctx *q, struct qtree *t, size_t more)
{
	size_t ncap = t->kids_cap ? t->kids_cap : 64, kc = 0, mask, i, j;
	uint64_t *kids = NULL;
	int rc;

	while ((t->kids_n + more) * 4 > ncap * 3)
		ncap *= 2;
	if (ncap == t->kids_cap)
		return 0;
	rc = query__mem_grow(q, (void **)&kids, &kc, sizeof(*kids), ncap, "tree index");
	if (rc)
		return rc;
	/* query__mem_grow rounds to powers of two starting at 16, so kc == ncap. */
	memset(kids, 0, kc * sizeof(*kids));
	mask = kc - 1;
	for (i = 0; i < t->kids_cap; i++) {
		if (!t->kids[i])
			continue;
		for (j = (t->kids[i] >> 32) & mask; kids[j]; j = (j + 1) & mask)
			;
		kids[j] = t->kids[i];
	}
	query__mem_free(q, t->kids, t->kids_cap, sizeof(*t->kids));
	t->kids = kids;
	t->kids_cap = kc;
	return 0;
}

/*
 * The node of child `name` of `parent`, QNONE when none; *listed is how
 * many children the walk of an unindexed parent's list passed.
 */
static uint32_t child_of(const struct qtree *t, uint32_t parent, uint32_t name, size_t *listed)
{
	uint32_t c;

	*listed = 0;
	if (t->nodes[parent].indexed)
		return kid_find(t, parent, name);
	for (c = t->nodes[parent].first_child; c != QNONE; c = t->nodes[c].next_sibling) {
		if (t->nodes[c].name == name)
			return c;
		++*listed;
	}
	return QNONE;
}

int query__tree_child(struct qctx *q, struct qtree *t, uint32_t parent, uint32_t name,
		      uint32_t *out)
{
	struct qnode *c;
	size_t listed;
	uint32_t id;
	int rc;

	assert(parent < t->n);
	assert(name < intern_count(&t->names) ||
	       (name & QNAME_RAW && (name & ~QNAME_RAW) < t->nraw));
	id = child_of(t, parent, name, &listed);
	if (id != QNONE) {
		*out = id;
		return 0;
	}
	if (t->n >= UINT32_MAX - 1)
		return err_set(q->msg, ERR_TOO_LARGE, "call tree has too many nodes");
	rc = query__mem_grow(q, (void **)&t->nodes, &t->cap, sizeof(*t->nodes), t->n + 1, "tree");
	if (rc)
		return rc;
	/* The new child makes listed + 1: past the list's length, index them all. */
	if (t->nodes[parent].indexed || listed >= KIDS_LISTED) {
		rc = kids_reserve(q, t, 1 + (t->nodes[parent].indexed ? 0 : listed));
		if (rc)
			return rc;
		if (!t->nodes[parent].indexed) {
			for (id = t->nodes[parent].first_child; id != QNONE;
			     id = t->nodes[id].next_sibling)
				kid_add(t, id);
			t->nodes[parent].indexed = 1;
		}
	}
	id = (uint32_t)t->n;
	c = &t->nodes[id];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->parent = parent;
	c->first_child = QNONE;
	c->next_sibling = t->nodes[parent].first_child;
	t->nodes[parent].first_child = id;
	t->n++;
	if (t->nodes[parent].indexed)
		kid_add(t, id);
	*out = id;
	return 0;
}

void query__tree_totals(struct qtree *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		t->nodes[i].total[0] = t->nodes[i].self[0];
		t->nodes[i].total[1] = t->nodes[i].self[1];
	}
	for (i = t->n; i-- > 1;) {
		struct qnode *p = &t->nodes[t->nodes[i].parent];

		assert(t->nodes[i].parent < i); /* a child comes after its parent */
		p->total[0] += t->nodes[i].total[0];
		p->total[1] += t->nodes[i].total[1];
	}
}

int query__tree_call_site(struct qctx *q, struct qtree *t, const char *const *site, size_t n)
{
	uint32_t at = 0, name;
	uint8_t *keep = NULL;
	size_t cap = 0, listed;
	int rc;

	for (size_t i = 0; i < n && at != QNONE; i++) {
		rc = query__names_intern(q, &t->names, site[i], strlen(site[i]), &name);
		if (rc)
			return rc;
		at = child_of(t, at, name, &listed);
	}
	rc = query__mem_grow(q, (void **)&keep, &cap, 1, t->n, "call site");
	if (rc)
		return rc;
	/* A child comes after its parent: one pass marks the subtree of `at`. */
	for (size_t i = 0; i < t->n; i++) {
		keep[i] = at != QNONE && (i == at || (i > at && keep[t->nodes[i].parent]));
		if (!keep[i])
			t->nodes[i].self[0] = t->nodes[i].self[1] = 0;
	}
	query__mem_free(q, keep, cap, 1);
	query__tree_totals(t);
	return 0;
}

int query__tree_copy_name(struct qctx *q, struct qtree *dst, const struct qtree *src,
			  uint32_t name, uint32_t *out)
{
	if (name == QNAME_TOTAL || name == QNAME_OTHER) {
		*out = name;
		return 0;
	}
	if (name & QNAME_RAW) {
		const struct qraw *r = &src->raw[name & ~QNAME_RAW];
		char tmp[512];
		size_t n;

		assert((name & ~QNAME_RAW) < src->nraw);
		n = query__raw_name(tmp, intern_str(&src->names, r->file), r->addr);
		return query__names_intern(q, &dst->names, tmp, n, out);
	}
	return query__names_intern(q, &dst->names, intern_str(&src->names, name),
				   intern_len(&src->names, name), out);
}

/* Adds every node of `src` (side 0) into `dst` side `side`, by name. */
static int tree_add(struct qctx *q, struct qtree *dst, const struct qtree *src, int side)
{
	uint32_t *map = NULL;
	size_t mcap = 0, i;
	int rc = query__mem_grow(q, (void **)&map, &mcap, sizeof(*map), src->n, "tree");

	if (rc)
		return rc;
	map[0] = 0;
	dst->nodes[0].self[side] += src->nodes[0].self[0];
	for (i = 1; i < src->n && !rc; i++) {
		const struct qnode *s = &src->nodes[i];
		uint32_t name, id = 0;

		rc = query__tree_copy_name(q, dst, src, s->name, &name);
		if (!rc)
			rc = query__tree_child(q, dst, map[s->parent], name, &id);
		if (rc)
			break;
		map[i] = id;
		dst->nodes[id].self[side] += s->self[0];
		if (!dst->nodes[id].build_id && s->build_id)
			rc = query__tree_copy_name(q, dst, src, s->build_id,
						   &dst->nodes[id].build_id);
	}
	query__mem_free(q, map, mcap, sizeof(*map));
	if (!rc)
		query__tree_totals(dst);
	return rc;
}

int query__tree_diff(struct qctx *q, const struct qtree *left, const struct qtree *right,
		     struct qtree *out)
{
	int rc = query__tree_init(q, out);

	if (rc)
		return rc;
	rc = tree_add(q, out, left, 0);
	if (!rc)
		rc = tree_add(q, out, right, 1);
	if (rc)
		query__tree_release(q, out);
	return rc;
}

struct query__named {
	const char *s;
	uint32_t len;
	uint32_t id;
};

static int cmp_named(const void *a, const void *b)
{
	const struct query__named *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->s, y->s, n);

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

void query__kids_release(struct qctx *q, struct query__kids *k)
{
	query__mem_free(q, k->named, k->named_cap, sizeof(*k->named));
	query__mem_free(q, k->ids, k->ids_cap, sizeof(*k->ids));
	memset(k, 0, sizeof(*k));
}

int query__tree_sorted_children(struct qctx *q, const struct qtree *t, uint32_t node,
				struct query__kids *k, const uint32_t **out, size_t *n)
{
	size_t nk = 0, i;
	uint32_t c;
	int rc;

	assert(node < t->n);
	*out = NULL;
	*n = 0;
	for (c = t->nodes[node].first_child; c != QNONE; c = t->nodes[c].next_sibling)
		nk++;
	if (!nk)
		return 0;
	if ((rc = query__mem_grow(q, (void **)&k->named, &k->named_cap, sizeof(*k->named), nk,
				  "child list")) ||
	    (rc = query__mem_grow(q, (void **)&k->ids, &k->ids_cap, sizeof(*k->ids), nk,
				  "child list")))
		return rc;
	i = 0;
	for (c = t->nodes[node].first_child; c != QNONE; c = t->nodes[c].next_sibling) {
		k->named[i].s = intern_str(&t->names, t->nodes[c].name);
		k->named[i].len = intern_len(&t->names, t->nodes[c].name);
		k->named[i].id = c;
		i++;
	}
	if (nk > 1)
		qsort(k->named, nk, sizeof(*k->named), cmp_named);
	for (i = 0; i < nk; i++)
		k->ids[i] = k->named[i].id;
	*out = k->ids;
	*n = nk;
	return 0;
}
