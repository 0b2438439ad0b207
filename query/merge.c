/*
 * merge.c - sums the selected profiles by (partition, stack id), then turns
 * the distinct stacks into one call tree of frame names.
 */
#include "query_int.h"

#include "base/err.h"
#include "storage/storage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A corrupt trie must not loop forever: stacks deeper than this are refused. */
enum { MAX_STACK_DEPTH = 1 << 16 };

void qmerge_init(struct qmerge *m)
{
	memset(m, 0, sizeof(*m));
	qmap_init_dense(&m->index);
}

void qmerge_release(struct qctx *q, struct qmerge *m)
{
	qmem_free(q, m->stacks, m->cap, sizeof(*m->stacks));
	qmap_release(q, &m->index);
	free(m->tl);
	qsym_free(q, m->sym);
	qmerge_init(m);
}

struct sel_list {
	struct qctx *q;
	uint64_t *ids;
	size_t n, cap;
};

static int add_series(void *ctx, uint64_t id, uint32_t part, const struct store_label *labels,
		      size_t n)
{
	struct sel_list *l = ctx;
	int rc;

	(void)part;
	(void)labels;
	(void)n;
	rc = qmem_grow(l->q, (void **)&l->ids, &l->cap, sizeof(*l->ids), l->n + 1, "series list");
	if (rc)
		return rc;
	l->ids[l->n++] = id;
	return 0;
}

struct collect {
	struct qctx *q;
	struct qmerge *m;
	int rc;
};

static int add_profile(void *ctx, const struct store_profile_view *p)
{
	struct collect *c = ctx;
	struct qmerge *m = c->m;
	uint64_t hi = (uint64_t)p->part << 32;
	int64_t sum = 0;
	int rc;

	if ((rc = qctx_check(c->q))) {
		c->rc = rc;
		return 1;
	}
	for (size_t i = 0; i < p->n; i++) {
		uint64_t key = hi | p->stack_ids[i];
		uint32_t at;

		sum += p->values[i];
		if (qmap_get(&m->index, key, &at)) {
			m->stacks[at].value += p->values[i];
			continue;
		}
		rc = qmem_grow(c->q, (void **)&m->stacks, &m->cap, sizeof(*m->stacks), m->n + 1,
			       "stack table");
		if (!rc)
			rc = qmap_put(c->q, &m->index, key, (uint32_t)m->n);
		if (rc) {
			c->rc = rc;
			return 1;
		}
		m->stacks[m->n].part = p->part;
		m->stacks[m->n].stack = p->stack_ids[i];
		m->stacks[m->n].value = p->values[i];
		m->n++;
	}
	m->total += sum;
	m->profiles++;
	if (p->meta.period)
		m->period = p->meta.period;
	if (m->tl && m->tl_step_ns > 0 && p->meta.time_ns >= m->tl_start_ns) {
		int64_t b = (p->meta.time_ns - m->tl_start_ns) / m->tl_step_ns;
		if (b >= 0 && (size_t)b < m->tl_n)
			m->tl[b] += sum;
	}
	return 0;
}

int qmerge_collect(struct qctx *q, const struct query_selector *sel, int64_t from_ns,
		   int64_t until_ns, struct qmerge *m)
{
	struct sel_list l = { q, NULL, 0, 0 };
	struct collect c = { q, m, 0 };
	int rc;

	if (until_ns <= from_ns)
		return err_set(q->msg, ERR_INVALID, "time range: until must be after from");
	rc = qselect_series(q, sel, add_series, &l);
	for (size_t i = 0; i < l.n && !rc; i++) {
		rc = store_profiles_each(q->st, q->tenant, l.ids[i], from_ns, until_ns, add_profile,
					 &c, q->msg);
		if (c.rc)
			rc = c.rc;
		else if (rc > 0)
			rc = 0;
		else if (rc)
			rc = err_set(q->msg, rc, "reading profiles of series %llu: %s",
				     (unsigned long long)l.ids[i], err_str(rc));
	}
	m->series = l.n;
	qmem_free(q, l.ids, l.cap, sizeof(*l.ids));
	if (!rc && q->symbolizer)
		rc = qsym_step(q, m);
	return rc;
}

/* ---- tree building ------------------------------------------------------------ */

struct builder {
	struct qctx *q;
	struct qtree *t;
	struct qviews views;
	struct qmap trie_memo;  /* part << 32 | stack id -> tree node */
	struct qmap loc_memo;   /* part << 32 | location id -> offset in frames */
	/* With query-time symbolization a stack's own (leaf) location may name
	 * other frames than the same location as a caller: separate memos. */
	const struct qsym *sym;
	struct qmap leaf_memo, leaf_loc_memo;
	uint32_t *frames;       /* [count, build id name, name ids...] per location */
	size_t nframes, fcap;
	uint32_t *path;
	size_t pcap;
	uint8_t *roles; /* per path entry: 1 when resolved as a PC (leaf) */
	size_t rcap;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * Writes "<file>+0x<hex address>" (file cut at 400 bytes) into out[512] and
 * returns its length.  By hand: snprintf was 4 % of a query that names
 * ~150k raw frames.
 */
static size_t placeholder_name(char *out, const char *file, uint64_t addr)
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

static int push_frame(struct builder *b, uint32_t name)
{
	int rc = qmem_grow(b->q, (void **)&b->frames, &b->fcap, sizeof(*b->frames),
			   b->nframes + 1, "frame table");

	if (!rc)
		b->frames[b->nframes++] = name;
	return rc;
}

/* Resolves location `loc` of `sym` to frame names (outermost first), memoized. */
static int resolve_location(struct builder *b, uint32_t part, struct store_symbols *sym,
			    uint32_t loc, int leaf, uint32_t *off)
{
	struct store_location_view lv;
	struct qctx *q = b->q;
	struct qmap *memo = leaf ? &b->leaf_loc_memo : &b->loc_memo;
	uint64_t key = (uint64_t)part << 32 | loc;
	size_t start = b->nframes;
	const struct qsym_frame *sf;
	uint32_t name, count = 0;
	size_t nsf;
	int rc;

	if (qmap_get(memo, key, off))
		return 0;
	rc = store_symbols_location(sym, loc, &lv);
	if (rc)
		return err_set(q->msg, ERR_CORRUPT, "partition %u: location %u not found", part, loc);
	if ((rc = push_frame(b, 0)) || (rc = push_frame(b, 0)))
		return rc;
	for (size_t i = lv.n_lines; i-- > 0;) {
		struct store_function f;

		if (!lv.lines[i].function_id ||
		    store_symbols_function(sym, lv.lines[i].function_id, &f) || !f.name || !f.name[0])
			continue;
		rc = qnames_intern(q, &b->t->names, f.name, strlen(f.name), &name);
		if (!rc)
			rc = push_frame(b, name);
		if (rc)
			return rc;
		count++;
	}
	nsf = lv.n_lines ? 0 : qsym_frames(b->sym, part, loc, leaf, &sf);
	for (size_t i = nsf; i-- > 0;) { /* outermost first */
		rc = qnames_intern(q, &b->t->names, sf[i].function, sf[i].function_len, &name);
		if (!rc)
			rc = push_frame(b, name);
		if (rc)
			return rc;
		count++;
	}
	if (!count) {
		struct store_mapping mp;
		char tmp[512];
		const char *file = "[unknown]";
		size_t n;

		if (lv.mapping_id && !store_symbols_mapping(sym, lv.mapping_id, &mp)) {
			if (mp.filename && mp.filename[0])
				file = base_name(mp.filename);
			if (mp.build_id && mp.build_id[0]) {
				rc = qnames_intern(q, &b->t->names, mp.build_id, strlen(mp.build_id),
						   &b->frames[start + 1]);
				if (rc)
					return rc;
			}
		}
		n = placeholder_name(tmp, file, lv.address);
		rc = qnames_intern(q, &b->t->names, tmp, n, &name);
		if (!rc)
			rc = push_frame(b, name);
		if (rc)
			return rc;
		count = 1;
	}
	b->frames[start] = count;
	*off = (uint32_t)start;
	return qmap_put(q, memo, key, *off);
}

/* Returns in *node the tree node of stack `stack` of partition `part`. */
static int resolve_stack(struct builder *b, uint32_t part, uint32_t stack, uint32_t *node)
{
	struct qctx *q = b->q;
	struct store_symbols *sym;
	uint32_t cur = 0, s = stack, parent, loc;
	size_t depth = 0;
	int rc, pc;

	if (!stack) {
		*node = 0;
		return 0;
	}
	if (b->sym && qmap_get(&b->leaf_memo, (uint64_t)part << 32 | stack, node))
		return 0;
	rc = qviews_get(q, &b->views, part, &sym);
	if (rc)
		return rc;
	/* Walk root-ward until a trie node whose tree node is known in the role
	 * it has here: with symbolization the stack's own node, and the node
	 * root-ward of a kernel frame, are resolved as a leaf (a PC). */
	pc = b->sym != NULL;
	while (s && !qmap_get(pc ? &b->leaf_memo : &b->trie_memo, (uint64_t)part << 32 | s, &cur)) {
		if (depth >= MAX_STACK_DEPTH)
			return err_set(q->msg, ERR_CORRUPT, "partition %u: stack %u deeper than %d",
				       part, stack, MAX_STACK_DEPTH);
		if (depth >= b->pcap &&
		    (rc = qmem_grow(q, (void **)&b->path, &b->pcap, sizeof(*b->path), depth + 1,
				    "stack path")))
			return rc;
		if (depth >= b->rcap &&
		    (rc = qmem_grow(q, (void **)&b->roles, &b->rcap, sizeof(*b->roles), depth + 1,
				    "stack path")))
			return rc;
		b->roles[depth] = (uint8_t)pc;
		b->path[depth++] = s;
		if (store_symbols_stack_node(sym, s, &parent, &loc))
			return err_set(q->msg, ERR_CORRUPT, "partition %u: stack %u not found", part, s);
		pc = qsym_kernel(b->sym, part, loc);
		s = parent;
	}
	if (!s)
		cur = 0;
	/* Then descend, creating tree nodes frame by frame. */
	while (depth-- > 0) {
		uint32_t off, count;

		s = b->path[depth];
		if (store_symbols_stack_node(sym, s, &parent, &loc))
			return err_set(q->msg, ERR_CORRUPT, "partition %u: stack %u not found", part, s);
		rc = resolve_location(b, part, sym, loc, b->roles[depth], &off);
		if (rc)
			return rc;
		count = b->frames[off];
		for (uint32_t i = 0; i < count; i++) {
			rc = qtree_child(q, b->t, cur, b->frames[off + 2 + i], &cur);
			if (rc)
				return rc;
		}
		if (b->frames[off + 1] && !b->t->nodes[cur].build_id)
			b->t->nodes[cur].build_id = b->frames[off + 1];
		rc = qmap_put(q, b->roles[depth] ? &b->leaf_memo : &b->trie_memo,
			      (uint64_t)part << 32 | s, cur);
		if (rc)
			return rc;
	}
	*node = cur;
	return 0;
}

int qmerge_tree(struct qctx *q, const struct qmerge *m, struct qtree *t)
{
	struct builder b;
	int rc = 0;

	memset(&b, 0, sizeof(b));
	b.q = q;
	b.t = t;
	qmap_init_dense(&b.trie_memo);
	qmap_init_dense(&b.loc_memo);
	qmap_init_dense(&b.leaf_memo);
	qmap_init_dense(&b.leaf_loc_memo);
	b.sym = m->sym;
	for (size_t i = 0; i < m->n && !rc; i++) {
		uint32_t node = 0;

		if ((i & 1023) == 1023 && (rc = qctx_check(q)))
			break;
		rc = resolve_stack(&b, m->stacks[i].part, m->stacks[i].stack, &node);
		if (!rc)
			t->nodes[node].self[0] += m->stacks[i].value;
	}
	if (!rc)
		qtree_totals(t);
	qviews_release(&b.views);
	qmap_release(q, &b.trie_memo);
	qmap_release(q, &b.loc_memo);
	qmap_release(q, &b.leaf_memo);
	qmap_release(q, &b.leaf_loc_memo);
	qmem_free(q, b.frames, b.fcap, sizeof(*b.frames));
	qmem_free(q, b.path, b.pcap, sizeof(*b.path));
	qmem_free(q, b.roles, b.rcap, sizeof(*b.roles));
	return rc;
}

int qparams_selector(const struct query_params *p, struct query_selector *sel,
		     struct err_msg *msg)
{
	int rc = query_selector_parse2(p->profile_type, p->query, sel, msg);

	if (rc)
		return rc;
	if (!sel->profile_type) {
		query_selector_release(sel);
		return err_set(msg, ERR_INVALID,
			       "query: a profile type is required, e.g. "
			       "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"api\"}");
	}
	if (p->max_nodes < 0 || p->max_nodes > QUERY_MAX_MAX_NODES) {
		query_selector_release(sel);
		return err_set(msg, ERR_INVALID, "maxNodes: %lld is outside 0..%d",
			       (long long)p->max_nodes, QUERY_MAX_MAX_NODES);
	}
	return 0;
}

int qquery_tree(struct qctx *q, const struct query_params *p, struct qmerge *m,
		struct qtree *t, char **profile_type)
{
	struct query_selector sel;
	int rc = qparams_selector(p, &sel, q->msg);

	if (rc)
		return rc;
	rc = qmerge_collect(q, &sel, p->from_ns, p->until_ns, m);
	if (!rc)
		rc = qmerge_tree(q, m, t);
	if (!rc && profile_type) {
		*profile_type = sel.profile_type;
		sel.profile_type = NULL;
	}
	query_selector_release(&sel);
	return rc;
}
