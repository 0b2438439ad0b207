/*
 * flame.c - the flame graph of a truncated tree (struct query__flame in
 * query_int.h): the levels layout that the flamebearer JSON and Connect's
 * FlameGraph messages share, computed once and written by either.
 *
 * Two passes: a DFS in pre-order (children by name, so the layout is
 * deterministic) records each drawn node with its depth and absolute left
 * offsets; then the nodes are laid out by depth, keeping DFS order within a
 * level, with their offsets made relative to the end of the previous node
 * of the same level.
 */
#include "query/query_int.h"

#include "base/err.h"

#include <assert.h>
#include <string.h>

struct ent {
	uint32_t node;
	uint32_t depth;
	int64_t x[2];
};

/* Scratch of one build, every array charged to the budget. */
struct scratch {
	struct ent *e;        /* drawn nodes in DFS pre-order */
	size_t n, cap;
	struct ent *stack;
	size_t sn, scap;
	struct query__kids kids;
	uint32_t *remap;      /* tree name id -> flame name index */
	size_t rcap;
	int64_t *end;         /* per level and side: right end of the last node */
	size_t ecap;
	uint32_t max_depth;
};

static int64_t drawn(const struct qnode *n)
{
	return n->total[0] + n->total[1];
}

/* Fills s->e with the drawn nodes of `t` in DFS pre-order. */
static int flatten(struct qctx *q, const struct qtree *t, struct scratch *s)
{
	int rc = query__mem_grow(q, (void **)&s->stack, &s->scap, sizeof(*s->stack), 1,
				 "flame graph");

	if (rc)
		return rc;
	s->stack[s->sn++] = (struct ent){ 0, 0, { 0, 0 } };
	while (s->sn) {
		struct ent it = s->stack[--s->sn];
		const uint32_t *kids;
		size_t nk, pushed = 0;
		int64_t x[2] = { it.x[0], it.x[1] };

		if ((rc = query__mem_grow(q, (void **)&s->e, &s->cap, sizeof(*s->e), s->n + 1,
					  "flame graph")))
			return rc;
		s->e[s->n++] = it;
		if (it.depth > s->max_depth)
			s->max_depth = it.depth;
		if ((rc = query__tree_sorted_children(q, t, it.node, &s->kids, &kids, &nk)) ||
		    (rc = query__mem_grow(q, (void **)&s->stack, &s->scap, sizeof(*s->stack),
					  s->sn + nk, "flame graph")))
			return rc;
		/* Offsets left to right; pushed right to left so the first pops first. */
		for (size_t i = 0; i < nk; i++) {
			const struct qnode *c = &t->nodes[kids[i]];

			if (drawn(c)) {
				s->stack[s->sn + nk - 1 - pushed] =
					(struct ent){ kids[i], it.depth + 1, { x[0], x[1] } };
				pushed++;
			}
			x[0] += c->total[0];
			x[1] += c->total[1];
		}
		/* Close the gap left by children that are not drawn. */
		if (pushed < nk)
			memmove(&s->stack[s->sn], &s->stack[s->sn + nk - pushed],
				pushed * sizeof(*s->stack));
		s->sn += pushed;
	}
	return 0;
}

static void scratch_release(struct qctx *q, struct scratch *s)
{
	query__mem_free(q, s->e, s->cap, sizeof(*s->e));
	query__mem_free(q, s->stack, s->scap, sizeof(*s->stack));
	query__kids_release(q, &s->kids);
	query__mem_free(q, s->remap, s->rcap, sizeof(*s->remap));
	query__mem_free(q, s->end, s->ecap, sizeof(*s->end));
}

void query__flame_release(struct qctx *q, struct query__flame *f)
{
	query__mem_free(q, f->values, f->cap_values, sizeof(*f->values));
	query__mem_free(q, f->levels, f->cap_levels, sizeof(*f->levels));
	query__mem_free(q, f->n_values, f->cap_n_values, sizeof(*f->n_values));
	query__mem_free(q, f->names, f->cap_names, sizeof(*f->names));
	query__mem_free(q, f->name_len, f->cap_name_len, sizeof(*f->name_len));
	memset(f, 0, sizeof(*f));
}

/* Allocates the output arrays of f for s->n nodes on s->max_depth + 1 levels. */
static int alloc_levels(struct qctx *q, const struct qtree *t, struct scratch *s,
			struct query__flame *f)
{
	size_t nl = (size_t)s->max_depth + 1, off = 0;
	int rc;

	if ((rc = query__mem_grow(q, (void **)&f->values, &f->cap_values, sizeof(*f->values),
				  s->n * (size_t)f->width, "flame graph")) ||
	    (rc = query__mem_grow(q, (void **)&f->levels, &f->cap_levels, sizeof(*f->levels), nl,
				  "flame graph")) ||
	    (rc = query__mem_grow(q, (void **)&f->n_values, &f->cap_n_values,
				  sizeof(*f->n_values), nl, "flame graph")) ||
	    (rc = query__mem_grow(q, (void **)&f->names, &f->cap_names, sizeof(*f->names),
				  t->names.n, "flame graph")) ||
	    (rc = query__mem_grow(q, (void **)&f->name_len, &f->cap_name_len,
				  sizeof(*f->name_len), t->names.n, "flame graph")) ||
	    (rc = query__mem_grow(q, (void **)&s->remap, &s->rcap, sizeof(*s->remap), t->names.n,
				  "flame graph")) ||
	    (rc = query__mem_grow(q, (void **)&s->end, &s->ecap, sizeof(*s->end), 2 * nl,
				  "flame graph")))
		return rc;
	f->n_levels = nl;
	memset(f->n_values, 0, nl * sizeof(*f->n_values));
	for (size_t i = 0; i < s->n; i++)
		f->n_values[s->e[i].depth] += (size_t)f->width;
	for (size_t d = 0; d < nl; d++) {
		f->levels[d] = f->values + off;
		off += f->n_values[d];
		f->n_values[d] = 0; /* counted again while laying out */
	}
	memset(s->remap, 0xff, t->names.n * sizeof(*s->remap));
	memset(s->end, 0, 2 * nl * sizeof(*s->end));
	return 0;
}

/* Writes node e (in DFS order) at the end of its level. */
static void lay_out(const struct qtree *t, struct scratch *s, const struct ent *e,
		    struct query__flame *f)
{
	const struct qnode *nd = &t->nodes[e->node];
	int64_t *v = f->levels[e->depth] + f->n_values[e->depth];
	int64_t *end = &s->end[2 * (size_t)e->depth];
	int sides = f->width == 7 ? 2 : 1;

	if (s->remap[nd->name] == UINT32_MAX) {
		s->remap[nd->name] = (uint32_t)f->n_names;
		f->names[f->n_names] = t->names.s[nd->name];
		f->name_len[f->n_names++] = t->names.len[nd->name];
	}
	for (int k = 0; k < sides; k++) {
		if (nd->self[k] > f->max_self)
			f->max_self = nd->self[k];
		*v++ = e->x[k] - end[k];
		*v++ = nd->total[k];
		*v++ = nd->self[k];
		end[k] = e->x[k] + nd->total[k];
	}
	*v = s->remap[nd->name];
	f->n_values[e->depth] += (size_t)f->width;
}

int query__flame_build(struct qctx *q, const struct qtree *t, int dbl, struct query__flame *f)
{
	struct scratch s;
	int rc;

	assert(t->n >= 1 && t->nodes[0].name == QNAME_TOTAL);
	memset(f, 0, sizeof(*f));
	memset(&s, 0, sizeof(s));
	f->width = dbl ? 7 : 4;
	f->total[0] = t->nodes[0].total[0];
	f->total[1] = t->nodes[0].total[1];
	rc = flatten(q, t, &s);
	if (!rc)
		rc = alloc_levels(q, t, &s, f);
	for (size_t i = 0; i < s.n && !rc; i++)
		lay_out(t, &s, &s.e[i], f);
	scratch_release(q, &s);
	if (rc)
		query__flame_release(q, f);
	else
		assert(f->n_names >= 1 && f->names[0] == t->names.s[QNAME_TOTAL]);
	return rc;
}
