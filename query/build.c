/*
 * build.c - the fourth stage of the pipeline: the call tree of frame names
 * over the collected stacks.  Each distinct stack is resolved once, walking
 * the stack trie root-ward only until a memoized trie node, so a prefix
 * shared by many stacks is resolved once; a location names its frames from
 * its lines, else from query-time symbolization, else as
 * `<binary>+0x<address>`.  After query-time symbolization, whose first pass
 * walked the same stacks into (trie node, role) pnodes, the build follows
 * those (resolve_walked) with arrays instead of decoding the trie and
 * hashing each node again.
 */
#include "query_int.h"

#include "base/err.h"
#include "storage/storage.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A corrupt trie must not loop forever: stacks deeper than this are refused. */
enum { MAX_STACK_DEPTH = 1 << 16 };

/* In fn_memo: the function has no name (or is not found); its line is skipped. */
#define NO_NAME (UINT32_MAX - 1)

/* A trie node on the way root-ward, kept for the way back down. */
struct step {
	uint32_t stack;
	uint32_t loc;
	uint32_t off; /* the location's frames when memoized before the descent, else NOT_YET */
	uint8_t pc;   /* resolved as a PC (leaf) */
};

#define NOT_YET UINT32_MAX

/* About the bytes a reserved name costs: its table entry and index slots. */
#define NAME_BYTES 48
/* About the bytes a reserved key of a qmap costs (12 per slot, <= 3/4 full, doubling). */
#define RAW_KEY_BYTES 32

/* What a raw frame's name needs of its mapping, decoded once per mapping. */
struct rawmap {
	const char *file; /* base name, in the symbol view */
	uint32_t bid;     /* name id of the build ID ("" when none) */
	uint32_t file_id; /* deferred names: name id of the file, cut; else QNONE */
};

/* A deferred name is keyed by file id << RAW_ADDR_BITS | address. */
enum { RAW_ADDR_BITS = 44, RAW_FILE_IDS = 1 << (64 - RAW_ADDR_BITS) };

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
	/* Interning a name hashes it: a name a partition's function or mapping
	 * gave once is looked up by id after. */
	struct qmap fn_memo;    /* part << 32 | function id -> name id or NO_NAME */
	struct qmap map_memo;   /* part << 32 | mapping id -> index in rawmaps */
	/* Deferred raw names (query__build_tree_deferred): (file, address)
	 * -> index in t->raw. */
	int deferred;
	struct qmap raw_memo;
	struct rawmap *rawmaps;
	size_t nrawmaps, rmcap;
	uint32_t *frames;       /* [count, build id name, name ids...] per location */
	size_t nframes, fcap;
	struct step *path;
	size_t pcap;
	/* Following symbolization's walk (resolve_walked): the tree node of
	 * each pnode and the frames of each entry, NOT_YET before. */
	int walked;
	uint32_t *of_pnode, *of_entry;
	size_t cap_of_pnode, cap_of_entry;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int push_frame(struct builder *b, uint32_t name)
{
	int rc = 0;

	/* Three or more a location: the call to grow was 1.5 % of a render. */
	if (b->nframes >= b->fcap)
		rc = query__mem_grow(b->q, (void **)&b->frames, &b->fcap, sizeof(*b->frames),
				     b->nframes + 1, "frame table");
	if (!rc)
		b->frames[b->nframes++] = name;
	return rc;
}

/* The name id of function `fn` of partition `part`: NO_NAME when it has none. */
static int function_name(struct builder *b, uint32_t part, struct store_symbols *sym,
			 uint32_t fn, uint32_t *name)
{
	uint64_t key = (uint64_t)part << 32 | fn;
	struct store_function f;
	int rc;

	if (query__map_get(&b->fn_memo, key, name))
		return 0;
	if (store_symbols_function(sym, fn, &f) || !f.name || !f.name[0])
		*name = NO_NAME;
	else if ((rc = query__names_intern(b->q, &b->t->names, f.name, strlen(f.name), name)))
		return rc;
	return query__map_put(b->q, &b->fn_memo, key, *name);
}

/* The file and build ID a raw frame of mapping `mp_id` is named by. */
static int raw_mapping(struct builder *b, uint32_t part, struct store_symbols *sym,
		       uint32_t mp_id, const struct rawmap **out)
{
	uint64_t key = (uint64_t)part << 32 | mp_id;
	struct store_mapping mp;
	struct rawmap *rm;
	const char *bid = "";
	uint32_t at;
	int rc;

	if (query__map_get(&b->map_memo, key, &at)) {
		*out = &b->rawmaps[at];
		return 0;
	}
	rc = query__mem_grow(b->q, (void **)&b->rawmaps, &b->rmcap, sizeof(*b->rawmaps),
			     b->nrawmaps + 1, "mapping table");
	if (rc)
		return rc;
	rm = &b->rawmaps[b->nrawmaps];
	rm->file = "[unknown]";
	if (mp_id && !store_symbols_mapping(sym, mp_id, &mp)) {
		if (mp.filename && mp.filename[0])
			rm->file = base_name(mp.filename);
		if (mp.build_id)
			bid = mp.build_id;
	}
	rc = query__names_intern(b->q, &b->t->names, bid, strlen(bid), &rm->bid);
	rm->file_id = QNONE;
	if (!rc && b->deferred) {
		size_t n = strnlen(rm->file, 400), i = 0;

		/* Only an ASCII file: its name is then the same made whole here
		 * or when truncation keeps it (cleaning cannot differ). */
		while (i < n && !((unsigned char)rm->file[i] & 0x80))
			i++;
		if (i == n)
			rc = query__names_intern(b->q, &b->t->names, rm->file, n, &rm->file_id);
	}
	if (!rc)
		rc = query__map_put(b->q, &b->map_memo, key, (uint32_t)b->nrawmaps);
	if (rc)
		return rc;
	*out = &b->rawmaps[b->nrawmaps++];
	return 0;
}

/*
 * The deferred name (QNAME_RAW | index in t->raw) of the raw frame of
 * `addr` in the file of name id `file`: equal file and address, equal
 * name, as interning the written name would give.
 */
static int raw_deferred(struct builder *b, uint32_t file, uint64_t addr, uint32_t *name)
{
	uint64_t key = (uint64_t)file << RAW_ADDR_BITS | addr;
	struct qtree *t = b->t;
	uint32_t at;
	int rc;

	if (query__map_get(&b->raw_memo, key, &at)) {
		*name = QNAME_RAW | at;
		return 0;
	}
	if (t->nraw >= HMAP_MAX - 1)
		return err_set(b->q->msg, ERR_TOO_LARGE, "too many raw frames");
	rc = query__mem_grow(b->q, (void **)&t->raw, &t->rawcap, sizeof(*t->raw), t->nraw + 1,
			     "names");
	if (!rc)
		rc = query__map_put(b->q, &b->raw_memo, key, (uint32_t)t->nraw);
	if (rc)
		return rc;
	t->raw[t->nraw].addr = addr;
	t->raw[t->nraw].file = file;
	*name = QNAME_RAW | (uint32_t)t->nraw++;
	return 0;
}

/*
 * Appends the frame names (outermost first) of location `loc` of `sym` to
 * b->frames; *off is where they start.  Its symbolized frames are `sf`,
 * `nsf` of them (used only when the location has no lines).
 */
static int location_frames(struct builder *b, uint32_t part, struct store_symbols *sym,
			   uint32_t loc, const struct qsym_frame *sf, size_t nsf, uint32_t *off)
{
	struct store_location_view lv;
	struct qctx *q = b->q;
	size_t start = b->nframes;
	uint32_t name, count = 0;
	int rc;

	rc = store_symbols_location(sym, loc, &lv);
	if (rc)
		return err_set(q->msg, ERR_CORRUPT, "partition %u: location %u not found", part, loc);
	if ((rc = push_frame(b, 0)) || (rc = push_frame(b, 0)))
		return rc;
	for (size_t i = lv.n_lines; i-- > 0;) {
		if (!lv.lines[i].function_id)
			continue;
		rc = function_name(b, part, sym, lv.lines[i].function_id, &name);
		if (!rc && name != NO_NAME)
			rc = push_frame(b, name);
		if (rc)
			return rc;
		count += name != NO_NAME;
	}
	if (lv.n_lines)
		nsf = 0;
	for (size_t i = nsf; i-- > 0;) { /* outermost first */
		rc = query__names_intern(q, &b->t->names, sf[i].function, sf[i].function_len, &name);
		if (!rc)
			rc = push_frame(b, name);
		if (rc)
			return rc;
		count++;
	}
	if (!count) {
		const struct rawmap *rm;
		char tmp[512];
		size_t n;

		rc = raw_mapping(b, part, sym, lv.mapping_id, &rm);
		if (rc)
			return rc;
		/* Marks the frame raw: "" when the mapping has no build ID. */
		b->frames[start + 1] = rm->bid;
		if (rm->file_id < RAW_FILE_IDS && lv.address >> RAW_ADDR_BITS == 0) {
			rc = raw_deferred(b, rm->file_id, lv.address, &name);
		} else {
			n = query__raw_name(tmp, rm->file, lv.address);
			rc = query__names_intern(q, &b->t->names, tmp, n, &name);
		}
		if (!rc)
			rc = push_frame(b, name);
		if (rc)
			return rc;
		count = 1;
	}
	b->frames[start] = count;
	*off = (uint32_t)start;
	return 0;
}

/* Resolves location `loc` of `sym` to frame names (outermost first), memoized. */
static int resolve_location(struct builder *b, uint32_t part, struct store_symbols *sym,
			    uint32_t loc, int leaf, uint32_t *off)
{
	struct qmap *memo = leaf ? &b->leaf_loc_memo : &b->loc_memo;
	uint64_t key = (uint64_t)part << 32 | loc;
	const struct qsym_frame *sf = NULL;
	size_t nsf;
	int rc;

	if (query__map_get(memo, key, off))
		return 0;
	nsf = query__sym_frames(b->sym, part, loc, leaf, &sf);
	if ((rc = location_frames(b, part, sym, loc, sf, nsf, off)))
		return rc;
	return query__map_put(b->q, memo, key, *off);
}

/*
 * Moves *cur down through the frames of one location (at b->frames[off]),
 * creating the tree nodes missing.
 */
static int descend(struct builder *b, uint32_t off, uint32_t *cur)
{
	uint32_t count = b->frames[off];
	int rc;

	for (uint32_t i = 0; i < count; i++) {
		size_t before = b->t->n;

		rc = query__tree_child(b->q, b->t, *cur, b->frames[off + 2 + i], cur);
		if (rc)
			return rc;
		/* Frames after a location's first are inlined into the one before. */
		if (b->t->n != before)
			b->t->nodes[*cur].inlined = i > 0;
		else if (!i)
			b->t->nodes[*cur].inlined = 0;
	}
	if (b->frames[off + 1] && !b->t->nodes[*cur].build_id)
		b->t->nodes[*cur].build_id = b->frames[off + 1];
	return 0;
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
	if (b->sym && query__map_get(&b->leaf_memo, (uint64_t)part << 32 | stack, node))
		return 0;
	rc = query__views_get(q, &b->views, part, &sym);
	if (rc)
		return rc;
	/* Walk root-ward until a trie node whose tree node is known in the role
	 * it has here: with symbolization the stack's own node, and the node
	 * root-ward of a kernel frame, are resolved as a leaf (a PC). */
	pc = b->sym != NULL;
	while (s && !query__map_get(pc ? &b->leaf_memo : &b->trie_memo, (uint64_t)part << 32 | s, &cur)) {
		if (depth >= MAX_STACK_DEPTH)
			return err_set(q->msg, ERR_CORRUPT, "partition %u: stack %u deeper than %d",
				       part, stack, MAX_STACK_DEPTH);
		if (depth >= b->pcap &&
		    (rc = query__mem_grow(q, (void **)&b->path, &b->pcap, sizeof(*b->path), depth + 1,
					  "stack path")))
			return rc;
		if (store_symbols_stack_node(sym, s, &parent, &loc))
			return err_set(q->msg, ERR_CORRUPT, "partition %u: stack %u not found", part, s);
		b->path[depth].stack = s;
		b->path[depth].loc = loc;
		b->path[depth++].pc = (uint8_t)pc;
		pc = query__sym_kernel(b->sym, part, loc);
		s = parent;
	}
	if (!s)
		cur = 0;
	assert(cur < b->t->n);
	/* The locations' memo entries, and the frames they point to, are far
	 * apart: start loading them all before the descent waits on each in
	 * turn.  The lookups of the second pass do not depend on each other. */
	for (size_t i = 0; i < depth; i++)
		query__map_prefetch(b->path[i].pc ? &b->leaf_loc_memo : &b->loc_memo,
				    (uint64_t)part << 32 | b->path[i].loc);
	for (size_t i = 0; i < depth; i++) {
		struct step *st = &b->path[i];

		if (query__map_get(st->pc ? &b->leaf_loc_memo : &b->loc_memo,
				   (uint64_t)part << 32 | st->loc, &st->off))
			__builtin_prefetch(&b->frames[st->off]);
		else
			st->off = NOT_YET;
	}
	/* Then descend, creating tree nodes frame by frame. */
	while (depth-- > 0) {
		const struct step *st = &b->path[depth];
		uint32_t off = st->off;

		if (off == NOT_YET && (rc = resolve_location(b, part, sym, st->loc, st->pc, &off)))
			return rc;
		if ((rc = descend(b, off, &cur)))
			return rc;
		rc = query__map_put(q, st->pc ? &b->leaf_memo : &b->trie_memo,
				    (uint64_t)part << 32 | st->stack, cur);
		if (rc)
			return rc;
	}
	*node = cur;
	return 0;
}

/*
 * Returns in *node the tree node of m->stacks[i] by symbolization's walk
 * (query__sym_walk_*): as resolve_stack, with the pnodes' parents for the
 * trie and arrays by pnode (b->of_pnode) and by entry (b->of_entry) for
 * the memos.  The same nodes are made in the same order.
 */
static int resolve_walked(struct builder *b, const struct qmerge *m, size_t i, uint32_t *node)
{
	struct qctx *q = b->q;
	struct store_symbols *sym = NULL;
	uint32_t part = m->stacks[i].part, e = query__sym_walk_stack(b->sym, m, i), cur;
	uint32_t idx, loc, off;
	size_t depth = 0;
	int rc, leaf;

	assert(e != QSYM_NO_WALK);
	while (e != QSYM_ROOT && b->of_pnode[e] == NOT_YET) {
		if (depth >= MAX_STACK_DEPTH)
			return err_set(q->msg, ERR_CORRUPT, "partition %u: stack %u deeper than %d",
				       part, m->stacks[i].stack, MAX_STACK_DEPTH);
		if (depth >= b->pcap &&
		    (rc = query__mem_grow(q, (void **)&b->path, &b->pcap, sizeof(*b->path), depth + 1,
					  "stack path")))
			return rc;
		b->path[depth++].stack = e; /* here: the pnode */
		e = query__sym_walk_node(b->sym, e, &idx, &loc, &leaf);
	}
	cur = e == QSYM_ROOT ? 0 : b->of_pnode[e];
	assert(cur < b->t->n);
	while (depth-- > 0) {
		uint32_t pe = b->path[depth].stack;

		(void)query__sym_walk_node(b->sym, pe, &idx, &loc, &leaf);
		off = b->of_entry[idx];
		if (off == NOT_YET) {
			const struct qsym_frame *sf = NULL;
			size_t nsf = query__sym_walk_frames(b->sym, idx, &sf);

			if ((!sym && (rc = query__views_get(q, &b->views, part, &sym))) ||
			    (rc = location_frames(b, part, sym, loc, sf, nsf, &off)))
				return rc;
			b->of_entry[idx] = off;
		}
		if ((rc = descend(b, off, &cur)))
			return rc;
		b->of_pnode[pe] = cur;
	}
	*node = cur;
	return 0;
}

/* Sets up b->of_pnode and b->of_entry when symbolization's walk of m is kept. */
static int walk_arrays(struct builder *b, const struct qmerge *m)
{
	size_t n_locs, n_p = query__sym_walk_size(b->sym, &n_locs);
	int rc;

	if (!m->n || query__sym_walk_stack(b->sym, m, 0) == QSYM_NO_WALK)
		return 0;
	if ((rc = query__mem_grow(b->q, (void **)&b->of_pnode, &b->cap_of_pnode,
				  sizeof(*b->of_pnode), n_p ? n_p : 1, "stack nodes")) ||
	    (rc = query__mem_grow(b->q, (void **)&b->of_entry, &b->cap_of_entry,
				  sizeof(*b->of_entry), n_locs ? n_locs : 1, "frame table")))
		return rc;
	memset(b->of_pnode, 0xff, n_p * sizeof(*b->of_pnode));
	memset(b->of_entry, 0xff, n_locs * sizeof(*b->of_entry));
	b->walked = 1;
	/* A raw frame's name (`<file>+0x<address>`) is its location's alone:
	 * room for about a name per entry, made once rather than by doubling
	 * (each doubling rehashed every name), while that takes little of the
	 * budget.  Without it the names grow as they come. */
	if (!b->deferred && n_locs < UINT32_MAX - 2 &&
	    n_locs + 2 <= (b->q->mem.cap - b->q->mem.used) / 4 / NAME_BYTES)
		(void)intern_reserve(&b->t->names, (uint32_t)n_locs + 2);
	/* Deferred, a raw frame costs a key of the map instead (growing it
	 * rehashed every key at each doubling). */
	if (b->deferred && n_locs <= (b->q->mem.cap - b->q->mem.used) / 4 / RAW_KEY_BYTES)
		(void)query__map_reserve(b->q, &b->raw_memo, n_locs);
	return 0;
}

static int build(struct qctx *q, const struct qmerge *m, struct qtree *t, uint32_t *node_of,
		 int deferred)
{
	struct builder b;
	size_t hint = query__sym_walked(m->sym) + 1;
	int rc = query__tree_init(q, t);

	if (rc)
		return rc;
	/* Sized once from symbolization's walk of the same stacks, while that
	 * takes little of the budget: doubling copied the nodes each time (7 %
	 * of a warm render whose tables come from the server's pool). */
	if (hint > 1 && hint <= (q->mem.cap - q->mem.used) / 4 / sizeof(*t->nodes) &&
	    (rc = query__tree_reserve(q, t, hint))) {
		query__tree_release(q, t);
		return rc;
	}
	memset(&b, 0, sizeof(b));
	b.q = q;
	b.t = t;
	b.deferred = deferred;
	query__map_init(&b.raw_memo);
	query__map_init_dense(&b.trie_memo);
	query__map_init_dense(&b.loc_memo);
	query__map_init_dense(&b.leaf_memo);
	query__map_init_dense(&b.leaf_loc_memo);
	query__map_init_dense(&b.fn_memo);
	query__map_init_dense(&b.map_memo);
	b.sym = m->sym;
	rc = walk_arrays(&b, m);
	for (size_t i = 0; i < m->n && !rc; i++) {
		uint32_t node = 0;

		if ((i & 1023) == 1023 && (rc = query__ctx_check(q)))
			break;
		if (b.walked)
			rc = resolve_walked(&b, m, i, &node);
		else
			rc = resolve_stack(&b, m->stacks[i].part, m->stacks[i].stack, &node);
		if (!rc)
			t->nodes[node].self[0] += m->stacks[i].value;
		if (!rc && node_of)
			node_of[i] = node;
	}
	if (!rc)
		query__tree_totals(t);
	query__views_release(&b.views);
	query__map_release(q, &b.trie_memo);
	query__map_release(q, &b.loc_memo);
	query__map_release(q, &b.leaf_memo);
	query__map_release(q, &b.leaf_loc_memo);
	query__map_release(q, &b.fn_memo);
	query__map_release(q, &b.map_memo);
	query__map_release(q, &b.raw_memo);
	query__mem_free(q, b.rawmaps, b.rmcap, sizeof(*b.rawmaps));
	query__mem_free(q, b.frames, b.fcap, sizeof(*b.frames));
	query__mem_free(q, b.path, b.pcap, sizeof(*b.path));
	query__mem_free(q, b.of_pnode, b.cap_of_pnode, sizeof(*b.of_pnode));
	query__mem_free(q, b.of_entry, b.cap_of_entry, sizeof(*b.of_entry));
	/* The walk served this tree: its memory goes back to the budget. */
	query__sym_walk_release(q, m->sym);
	if (rc)
		query__tree_release(q, t);
	return rc;
}

int query__build_tree(struct qctx *q, const struct qmerge *m, struct qtree *t)
{
	return build(q, m, t, NULL, 0);
}

int query__build_tree_nodes(struct qctx *q, const struct qmerge *m, struct qtree *t,
			    uint32_t *node_of)
{
	return build(q, m, t, node_of, 0);
}

int query__build_tree_deferred(struct qctx *q, const struct qmerge *m, struct qtree *t)
{
	return build(q, m, t, NULL, 1);
}
