/*
 * symbolize_step.c - query-time symbolization: between the merge by stack
 * id and the name tree, resolves the distinct unsymbolized locations of the
 * result through the symbolization service (grouped by build ID, sorted by
 * address, one budget for the whole query), remembers why any stayed hex,
 * and measures the share of samples each build ID leaves unnamed.
 */
#include "query_int.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/perfmap.h"
#include "debuginfo/debuginfo.h"
#include "storage/storage.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 4096          /* distinct binaries reported per query */
#define STRS_CAP (256u << 20)    /* resolved names and paths of one query */
#define MAX_DEPTH (1 << 16)
#define MAP_KERNEL (1u << 31)    /* in mapgroup values */

/*
 * ST_NA: has lines or needs nothing; ST_WANT: to resolve; ST_DONE: resolved
 * by this query, frames in s->frames; ST_MEMO: answered by the memo.
 */
enum { ST_NA = 0, ST_WANT, ST_DONE, ST_MEMO };

struct qloc {
	uint32_t part, loc;
	uint32_t group;
	uint16_t n_frames;
	uint8_t leaf;
	uint8_t state;
	uint64_t addr;
	union {
		size_t off;                    /* ST_DONE: into s->frames */
		const struct qsym_frame *memo; /* ST_MEMO: in the memo */
	} fr;
};

struct qgroup {
	char *build_id;      /* "" when the mapping has none */
	char *binary;
	uint32_t jit_pid;    /* a JIT mapping (perf-PID.map) of this process; 0 none */
	struct debuginfo_mapping_ref map;
	enum debuginfo_status status;
	char reason[256];
	int kernel;          /* the kernel's mapping: named from a symbol map */
	int answered;        /* resolve_groups: its status needed no address */
	int64_t unnamed;
	size_t n_want;
	size_t n_unresolved;  /* distinct locations left without names */
};

/*
 * Unwinding signatures of the stacks whose outermost user-space frame is in
 * one binary (diagnose() below; docs/symbolization.md, "Unwinding or
 * symbolization").  Values are sample weights.
 */
struct ugroup {
	char *build_id;        /* "" when the mapping has none */
	char *binary;
	int64_t total;         /* stacks whose root is in this binary */
	int64_t complete;      /* reach an entry point (_start, clone, goexit...) */
	int64_t truncated;     /* named root that is no entry point */
	int64_t root_unnamed;  /* root without a name: symbolize first */
	int64_t short_interp;  /* 1-2 user frames, root in an interpreter */
	int go;                /* a runtime.* frame was seen in this binary */
	int64_t go_rooted;     /* Go stacks that reach goexit/mstart */
};

struct qsym {
	struct arena strs;
	struct ugroup *ug;
	size_t n_ug, cap_ug;
	struct qmap mapug;          /* part << 32 | mapping -> 1 + ugroup */
	struct qloc *locs;
	size_t n_locs, cap_locs;
	struct qmap nonleaf, leaf;  /* part << 32 | loc -> index in locs */
	struct qmap mapgroup;       /* part << 32 | mapping -> 1 + group, 0 if none wanted */
	struct qmap kern;           /* part << 32 | loc -> 1, for kernel frames only */
	int any_kernel;             /* kern is not empty: roles need looking at */
	struct qsym_frame *frames;
	size_t n_frames, cap_frames;
	struct qgroup *groups;
	size_t n_groups, cap_groups;
	int64_t total, unnamed;
	int pending;
	int disabled;               /* the tenant's symbolization is off */
	size_t walked;              /* (trie node, role) pairs of the stacks: pnodes made */
	struct ptrie *kept;         /* pass 1's pnodes, kept for the tree build; NULL none */
	size_t n_stacks;            /* the merge's stacks kept->of_stack maps */
	struct qmemo_view memo;
};

static void ptrie_release(struct qctx *q, struct ptrie *t);

void query__sym_free(struct qctx *q, struct qsym *s)
{
	if (!s)
		return;
	query__memo_end(&s->memo);
	query__sym_walk_release(q, s);
	arena_release(&s->strs);
	query__mem_free(q, s->locs, s->cap_locs, sizeof(*s->locs));
	query__mem_free(q, s->frames, s->cap_frames, sizeof(*s->frames));
	query__mem_free(q, s->groups, s->cap_groups, sizeof(*s->groups));
	query__mem_free(q, s->ug, s->cap_ug, sizeof(*s->ug));
	query__map_release(q, &s->mapug);
	query__map_release(q, &s->nonleaf);
	query__map_release(q, &s->leaf);
	query__map_release(q, &s->mapgroup);
	query__map_release(q, &s->kern);
	free(s);
}

/* The resolved frames of s->locs[idx]; 0 when it has none. */
static size_t loc_frames(const struct qsym *s, uint32_t idx, const struct qsym_frame **frames)
{
	const struct qloc *l = &s->locs[idx];

	if (!l->n_frames)
		return 0;
	if (l->state == ST_MEMO)
		*frames = l->fr.memo;
	else if (l->state == ST_DONE)
		*frames = &s->frames[l->fr.off];
	else
		return 0;
	return l->n_frames;
}

size_t query__sym_walked(const struct qsym *s)
{
	return s ? s->walked : 0;
}

size_t query__sym_frames(const struct qsym *s, uint32_t part, uint32_t loc, int leaf,
		   const struct qsym_frame **frames)
{
	uint32_t at;

	if (!s || !query__map_get(leaf ? &s->leaf : &s->nonleaf, (uint64_t)part << 32 | loc, &at))
		return 0;
	return loc_frames(s, at, frames);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static char *sdupn(struct qctx *q, struct qsym *s, const char *p, size_t n)
{
	char *d = arena_strndup(&s->strs, p ? p : "", p ? n : 0);

	if (!d)
		err_set(q->msg, ERR_TOO_LARGE, "symbolization: name memory of %u bytes exceeded",
			STRS_CAP);
	return d;
}

static char *sdup(struct qctx *q, struct qsym *s, const char *p)
{
	return sdupn(q, s, p, p ? strlen(p) : 0);
}

static int kernel_mapping(const struct store_mapping *mp);

/* Anonymous memory as agents name it: JIT code whose process is unknown. */
static int anon_mapping(const char *fn)
{
	return fn && (!strncmp(fn, "//anon", 6) || !strncmp(fn, "[anon", 5) ||
		      !strncmp(fn, "/memfd:", 7));
}

/* The group of a mapping: one per build ID (or per file name without one). */
static int group_of(struct qctx *q, struct qsym *s, const struct store_mapping *mp,
		    uint32_t *out)
{
	const char *bid = mp->build_id ? mp->build_id : "";
	const char *bin = mp->filename && mp->filename[0] ? base_name(mp->filename) : "[unknown]";
	struct qgroup *g;
	int rc;

	for (size_t i = 0; i < s->n_groups; i++) {
		g = &s->groups[i];
		if (strcmp(g->build_id, bid) == 0 && (bid[0] || strcmp(g->binary, bin) == 0)) {
			*out = (uint32_t)i;
			return 0;
		}
	}
	if (s->n_groups >= MAX_GROUPS)
		return err_set(q->msg, ERR_TOO_LARGE, "symbolization: more than %d binaries",
			       MAX_GROUPS);
	rc = query__mem_grow(q, (void **)&s->groups, &s->cap_groups, sizeof(*s->groups),
		       s->n_groups + 1, "symbolization groups");
	if (rc)
		return rc;
	g = &s->groups[s->n_groups];
	memset(g, 0, sizeof(*g));
	if (!(g->build_id = sdup(q, s, bid)) || !(g->binary = sdup(q, s, bin)))
		return ERR_TOO_LARGE;
	g->map.memory_start = mp->memory_start;
	g->map.memory_limit = mp->memory_limit;
	g->map.file_offset = mp->file_offset;
	g->map.addr_is_vaddr = !!(mp->flags & STORE_MAP_ADDR_VADDR);
	g->status = bid[0] ? DEBUGINFO_STATUS_OK : DEBUGINFO_STATUS_NO_BUILD_ID;
	g->kernel = kernel_mapping(mp);
	/* JIT code has no file: its names come from the process's perf map. */
	if (perfmap_jit_mapping(mp->filename, bid, &g->jit_pid))
		g->status = DEBUGINFO_STATUS_OK;
	else if (!bid[0] && g->kernel)
		snprintf(g->reason, sizeof(g->reason),
			 "no build ID for the kernel mapping: make the agent report the running "
			 "kernel's (perf does: perf buildid-list -k)");
	else if (!bid[0] && anon_mapping(mp->filename))
		snprintf(g->reason, sizeof(g->reason),
			 "anonymous executable memory (JIT code?) of an unknown process: name the "
			 "mapping /tmp/perf-PID.map, as perf does, and upload the runtime's perf map");
	else if (!bid[0])
		snprintf(g->reason, sizeof(g->reason),
			 "the profile's mapping has no build ID; rebuild with -Wl,--build-id "
			 "or send build IDs from the agent");
	*out = (uint32_t)s->n_groups++;
	return 0;
}

int query__sym_kernel(const struct qsym *s, uint32_t part, uint32_t loc)
{
	uint32_t k;

	return s && s->any_kernel && query__map_get(&s->kern, (uint64_t)part << 32 | loc, &k);
}

/* A mapping the kernel's frames are in (perf: [kernel.kallsyms]). */
static int kernel_mapping(const struct store_mapping *mp)
{
	return mp->filename &&
	       (!strncmp(mp->filename, "[kernel", 7) || !strncmp(mp->filename, "[vmlinux", 8));
}

/* Registers location `loc` as leaf or not; *idx is its entry in s->locs. */
static int add_loc(struct qctx *q, struct qsym *s, struct store_symbols *sym, uint32_t part,
		   uint32_t loc, int leaf, uint32_t *idx)
{
	struct qmap *map = leaf ? &s->leaf : &s->nonleaf;
	uint64_t key = (uint64_t)part << 32 | loc;
	struct store_location_view lv;
	struct store_mapping mp;
	struct qloc *l;
	int rc, kern;

	if (query__map_get(map, key, idx))
		return 0;
	if (store_symbols_location(sym, loc, &lv))
		return err_set(q->msg, ERR_CORRUPT, "partition %u: location %u not found", part, loc);
	rc = query__mem_grow(q, (void **)&s->locs, &s->cap_locs, sizeof(*s->locs), s->n_locs + 1,
		       "symbolization locations");
	if (rc)
		return rc;
	l = &s->locs[s->n_locs];
	memset(l, 0, sizeof(*l));
	l->part = part;
	l->loc = loc;
	l->leaf = (uint8_t)leaf;
	l->addr = lv.address;
	kern = lv.address >= (UINT64_C(1) << 63);
	if (lv.mapping_id) {
		/* Every location of a mapping lands in the same group: decode the
		 * mapping and search the groups once per mapping.  mapgroup holds
		 * 1 + the group (0: none made yet) | MAP_KERNEL.  A group is made
		 * for the first location without lines, whatever the mapping's
		 * has_functions says: the store keeps one mapping per build ID
		 * with the flags first seen, so a binary's raw frames can share
		 * the mapping of a profile that arrived with names. */
		uint64_t mkey = (uint64_t)part << 32 | lv.mapping_id;
		uint32_t g1;
		int have = query__map_get(&s->mapgroup, mkey, &g1);

		if (!have || (!lv.n_lines && !(g1 & ~MAP_KERNEL))) {
			g1 = have ? g1 : 0;
			if (!store_symbols_mapping(sym, lv.mapping_id, &mp)) {
				if (!lv.n_lines) {
					uint32_t g = 0;

					if ((rc = group_of(q, s, &mp, &g)))
						return rc;
					g1 |= g + 1;
				}
				if (kernel_mapping(&mp))
					g1 |= MAP_KERNEL;
			}
			if ((rc = query__map_put(q, &s->mapgroup, mkey, g1)))
				return rc;
		}
		kern |= !!(g1 & MAP_KERNEL);
		g1 &= ~MAP_KERNEL;
		if (lv.n_lines)
			g1 = 0; /* named already */
		if (g1) {
			const struct qsym_frame *mf;
			uint32_t mn;

			l->group = g1 - 1;
			if (s->memo.locked && query__memo_get(&s->memo, part, loc, leaf, &mf, &mn)) {
				l->state = ST_MEMO;
				l->fr.memo = mf;
				l->n_frames = (uint16_t)mn;
			} else {
				l->state = ST_WANT;
				s->groups[l->group].n_want++;
			}
		}
	}
	/* Only kernel frames are listed: most merges have none. */
	if (kern) {
		uint32_t known;

		if (!query__map_get(&s->kern, key, &known) && (rc = query__map_put(q, &s->kern, key, 1)))
			return rc;
		s->any_kernel = 1;
	}
	*idx = (uint32_t)s->n_locs;
	rc = query__map_put(q, map, key, *idx);
	if (!rc)
		s->n_locs++;
	return rc;
}

/*
 * The trie as the merge uses it.  A trie node's own role depends on the
 * node leaf-ward of it (a kernel frame makes it a PC), its ancestors' roles
 * do not: the parent of a node is in the role the node's own frame gives
 * it, whatever the node's role.  Pass 1 makes one pnode per (trie node,
 * role) the stacks reach, linked to its parent's, so that passes 3 and 4
 * follow indexes instead of decoding the trie and looking frames up again.
 */
enum {
	UF_JUNK = 1,       /* the outermost user frame is outside every mapping */
	UF_RAW = 2,        /* ... arrived without lines */
	UF_NAMED = 4,      /* ... has a name */
	UF_OUTER = UF_JUNK | UF_RAW | UF_NAMED,
	UF_ENTRY = 8,      /* some user frame is an entry point */
	UF_GO = 16,        /* ... a runtime.* function */
	UF_GO_ROOTED = 32, /* ... runtime.goexit or runtime.mstart */
};

/* The fold of passes 3 and 4 over a path root..node. */
struct pfold {
	uint32_t set;      /* the groups unnamed on the path (struct gsets) */
	uint32_t root_map; /* the mapping of the outermost user frame that has one; 0 none */
	uint32_t depth;    /* frames on the path */
	uint8_t user;      /* user frames, counted up to 3: only 0, 1-2 and more matter */
	uint8_t flags;     /* UF_* */
};

#define NO_PNODE UINT32_MAX

struct pnode {
	uint32_t idx;      /* its frame (the location in its role): index in s->locs */
	uint32_t parent;   /* its parent's pnode; NO_PNODE at the root */
	uint32_t twin;     /* the same trie node's pnode in the other role; NO_PNODE none */
	uint8_t role;      /* 1: a PC, 0: a return address */
	uint8_t kern;      /* a kernel frame: the parent is a PC */
	uint8_t done;      /* fold is known */
	struct pfold fold;
};

struct ptrie {
	struct pnode *v;
	size_t n, cap;
	uint32_t *of_stack;  /* m->stacks[i] -> its pnode; NO_PNODE for the empty stack */
	size_t cap_of;
	struct qmap memo;    /* part << 32 | trie node -> its first pnode */
};

static void ptrie_release(struct qctx *q, struct ptrie *t)
{
	query__mem_free(q, t->v, t->cap, sizeof(*t->v));
	query__mem_free(q, t->of_stack, t->cap_of, sizeof(*t->of_stack));
	query__map_release(q, &t->memo);
}

void query__sym_walk_release(struct qctx *q, struct qsym *s)
{
	if (!s || !s->kept)
		return;
	ptrie_release(q, s->kept);
	free(s->kept);
	s->kept = NULL;
}

uint32_t query__sym_walk_stack(const struct qsym *s, const struct qmerge *m, size_t i)
{
	if (!s || !s->kept || s->n_stacks != m->n)
		return QSYM_NO_WALK;
	assert(i < m->n);
	return s->kept->of_stack[i] == NO_PNODE ? QSYM_ROOT : s->kept->of_stack[i];
}

size_t query__sym_walk_size(const struct qsym *s, size_t *n_locs)
{
	*n_locs = s && s->kept ? s->n_locs : 0;
	return s && s->kept ? s->kept->n : 0;
}

uint32_t query__sym_walk_node(const struct qsym *s, uint32_t e, uint32_t *idx, uint32_t *loc,
			      int *leaf)
{
	const struct pnode *p = &s->kept->v[e];

	assert(e < s->kept->n);
	*idx = p->idx;
	*loc = s->locs[p->idx].loc;
	*leaf = s->locs[p->idx].leaf;
	return p->parent == NO_PNODE ? QSYM_ROOT : p->parent;
}

size_t query__sym_walk_frames(const struct qsym *s, uint32_t idx, const struct qsym_frame **frames)
{
	assert(idx < s->n_locs);
	return loc_frames(s, idx, frames);
}

/* *out: a new pnode of location `loc` in `role`, its parent not yet known. */
static int new_pnode(struct qctx *q, struct qsym *s, struct ptrie *t, struct store_symbols *sym,
		     uint32_t part, uint32_t loc, int role, uint32_t *out)
{
	struct pnode *p;
	uint32_t idx;
	int rc;

	if (t->n >= NO_PNODE - 1)
		return err_set(q->msg, ERR_TOO_LARGE, "symbolization: too many stack nodes");
	if ((rc = add_loc(q, s, sym, part, loc, role, &idx)) ||
	    (t->n == t->cap && (rc = query__mem_grow(q, (void **)&t->v, &t->cap, sizeof(*t->v),
						     t->n + 1, "stack nodes"))))
		return rc;
	p = &t->v[t->n];
	memset(p, 0, sizeof(*p));
	p->idx = idx;
	p->parent = NO_PNODE;
	p->twin = NO_PNODE;
	p->role = (uint8_t)role;
	p->kern = (uint8_t)query__sym_kernel(s, part, loc);
	*out = (uint32_t)t->n++;
	return 0;
}

/*
 * The pnode of stack `st` (a PC) in *out, making those of its path up to
 * the first one made already.  Walks root-ward; child is the pnode made
 * last, which the next one becomes the parent of.
 */
static int collect_stack(struct qctx *q, struct qsym *s, struct ptrie *t,
			 struct store_symbols *sym, uint32_t part, uint32_t st, uint32_t *out)
{
	uint32_t n = st, child = NO_PNODE, e, other, parent, loc;
	size_t depth = 0;
	int role = 1, rc;

	for (;;) {
		uint64_t key = (uint64_t)part << 32 | n;
		int known = query__map_get(&t->memo, key, &e);

		if (known && t->v[e].role != role && t->v[e].twin != NO_PNODE)
			e = t->v[e].twin;
		if (known && t->v[e].role == role)
			parent = 0;
		else if (child != NO_PNODE && ++depth > MAX_DEPTH)
			return err_set(q->msg, ERR_CORRUPT, "partition %u: stack too deep", part);
		else if (known) {
			/* Walked in the other role: its ancestors are known. */
			other = e;
			if ((rc = new_pnode(q, s, t, sym, part, s->locs[t->v[other].idx].loc, role,
					    &e)))
				return rc;
			t->v[e].parent = t->v[other].parent;
			t->v[e].twin = other;
			t->v[other].twin = e;
			parent = 0;
		} else {
			if (store_symbols_stack_node(sym, n, &parent, &loc))
				return err_set(q->msg, ERR_CORRUPT, "partition %u: stack %u not found",
					       part, n);
			if ((rc = new_pnode(q, s, t, sym, part, loc, role, &e)) ||
			    (rc = query__map_put(q, &t->memo, key, e)))
				return rc;
		}
		if (child == NO_PNODE)
			*out = e;
		else
			t->v[child].parent = e;
		if (!parent)
			return 0;
		child = e;
		role = t->v[e].kern;
		n = parent;
	}
}

/* Pass 1: every distinct (location, role) reachable from the stacks. */
static int collect(struct qctx *q, struct qsym *s, const struct qmerge *m, struct qviews *v,
		   struct ptrie *t)
{
	int rc;

	if ((rc = query__mem_grow(q, (void **)&t->of_stack, &t->cap_of, sizeof(*t->of_stack),
				  m->n, "stack nodes")))
		return rc;
	for (size_t i = 0; i < m->n && !rc; i++) {
		struct store_symbols *sym;
		uint32_t st = m->stacks[i].stack, part = m->stacks[i].part;

		t->of_stack[i] = NO_PNODE;
		if (st && !(rc = query__views_get(q, v, part, &sym)))
			rc = collect_stack(q, s, t, sym, part, st, &t->of_stack[i]);
	}
	return rc;
}

struct res_ctx {
	struct qctx *q;
	struct qsym *s;
	const uint32_t *which; /* request i -> index in s->locs */
};

static int on_frames(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	struct res_ctx *r = ctx;
	struct qsym *s = r->s;
	struct qloc *l = &s->locs[r->which[i]];
	size_t k = 0;
	int rc;

	(void)vaddr;
	rc = query__mem_grow(r->q, (void **)&s->frames, &s->cap_frames, sizeof(*s->frames),
		       s->n_frames + n, "symbolization frames");
	if (rc)
		return rc;
	for (size_t j = 0; j < n && j < UINT16_MAX; j++) {
		struct qsym_frame *o = &s->frames[s->n_frames + k];

		size_t fl;

		if (!f[j].function)
			continue; /* a frame without a name cannot label the tree */
		fl = strlen(f[j].function);
		if (fl > UINT32_MAX - 1)
			fl = UINT32_MAX - 1;
		if (!(o->function = sdupn(r->q, s, f[j].function, fl)))
			return ERR_TOO_LARGE;
		o->function_len = (uint32_t)fl;
		o->file = NULL;
		if (f[j].file && !(o->file = sdup(r->q, s, f[j].file)))
			return ERR_TOO_LARGE;
		o->line = f[j].line;
		o->column = f[j].column;
		k++;
	}
	l->fr.off = s->n_frames;
	l->n_frames = (uint16_t)k;
	l->state = ST_DONE;
	s->n_frames += k;
	return 0;
}

struct areq {
	uint64_t addr;
	uint32_t leaf;
	uint32_t idx;
};

/*
 * Sorts a[0..n) by (addr, leaf), stably, with tmp[n] as scratch: an LSD
 * radix sort (leaf, then the address a byte at a time, skipping bytes all
 * requests share), several times faster than qsort on ~10^5 addresses.
 */
static unsigned areq_digit(const struct areq *r, int pass)
{
	return pass ? (unsigned)(r->addr >> (8 * (pass - 1))) & 255 : r->leaf & 1;
}

static void sort_areq(struct areq *a, struct areq *tmp, size_t n)
{
	struct areq *src = a, *dst = tmp;
	size_t cnt[9][256];

	/* A pass permutes, so the digit counts of every pass are those of
	 * the input: one loop counts them all. */
	memset(cnt, 0, sizeof(cnt));
	for (size_t i = 0; i < n; i++) {
		cnt[0][a[i].leaf & 1]++;
		for (int b = 0; b < 8; b++)
			cnt[1 + b][(a[i].addr >> (8 * b)) & 255]++;
	}
	for (int pass = 0; pass < 9; pass++) {
		size_t *c = cnt[pass], sum = 0;

		if (!n || c[areq_digit(&src[0], pass)] == n)
			continue; /* one digit value: this pass would not move anything */
		for (size_t d = 0; d < 256; d++) {
			size_t k = c[d];

			c[d] = sum;
			sum += k;
		}
		for (size_t i = 0; i < n; i++)
			dst[c[areq_digit(&src[i], pass)]++] = src[i];
		src = dst;
		dst = src == a ? tmp : a;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

/* Groups the service can name: a build ID's, or a process's JIT code. */
static int resolvable(const struct qgroup *g)
{
	return g->build_id[0] || g->jit_pid;
}

/* Groups whose addresses resolve_groups sends to the service. */
static int asks(const struct qgroup *g)
{
	return resolvable(g) && g->n_want && !g->answered;
}

/* What the service's answer for group g means for the query. */
static void group_status(struct qsym *s, struct qgroup *gr)
{
	if (gr->status == DEBUGINFO_STATUS_PENDING)
		s->pending = 1;
	if (gr->kernel && gr->status == DEBUGINFO_STATUS_NOT_FOUND)
		snprintf(gr->reason, sizeof(gr->reason),
			 "kernel symbols not uploaded: unhex upload --kallsyms /proc/kallsyms "
			 "--build-id %s, as root on a machine running this kernel",
			 gr->build_id);
}

/* Pass 2: one service call per build ID (or JIT process), addresses sorted. */
static int resolve_groups(struct qctx *q, struct qsym *s)
{
	int64_t deadline = clock_mono_ns() + debuginfo_budget_ns(q->symbolizer);
	/* The query's tenant may use only its own and shared debug files. */
	struct debuginfo_asker asker = { q->tenant, DEBUGINFO_QUERY_FETCHES };
	struct areq *a = NULL, *tmp = NULL;
	struct debuginfo_addr_req *reqs = NULL;
	uint32_t *which = NULL;
	size_t *start = NULL, total = 0, most = 0, cap_a = 0, cap_tmp = 0, cap_reqs = 0,
	       cap_which = 0;
	int rc = 0;

	if (deadline > q->deadline_ns)
		deadline = q->deadline_ns;
	/* One pass over the locations buckets the wanted ones by group; a
	 * build ID that settled as missing (every render of a binary whose
	 * debug info nobody has) is answered without them. */
	for (size_t g = 0; g < s->n_groups; g++) {
		struct qgroup *gr = &s->groups[g];

		gr->answered = 0;
		if (!resolvable(gr) || !gr->n_want)
			continue;
		if (!gr->jit_pid &&
		    debuginfo_resolve_settled(q->symbolizer, &asker, gr->build_id, gr->n_want,
					      &gr->status, gr->reason, sizeof(gr->reason))) {
			gr->answered = 1;
			group_status(s, gr);
			continue;
		}
		total += gr->n_want;
		if (gr->n_want > most)
			most = gr->n_want;
	}
	if (!total)
		return 0;
	/* Room for the wanted locations of the groups not answered above
	 * (asks()), on every render that has any.  From the query's budget
	 * and its pool, which keeps the pages resident, rather than fresh
	 * mappings each time. */
	start = calloc(s->n_groups + 1, sizeof(*start));
	if (!start) {
		rc = err_set(q->msg, ERR_NOMEM, "symbolization: out of memory");
		goto out;
	}
	if ((rc = query__mem_grow(q, (void **)&a, &cap_a, sizeof(*a), total, "addresses")) ||
	    (rc = query__mem_grow(q, (void **)&tmp, &cap_tmp, sizeof(*tmp), most, "addresses")) ||
	    (rc = query__mem_grow(q, (void **)&reqs, &cap_reqs, sizeof(*reqs), most,
				  "addresses")) ||
	    (rc = query__mem_grow(q, (void **)&which, &cap_which, sizeof(*which), most,
				  "addresses")))
		goto out;
	for (size_t g = 0, at = 0; g < s->n_groups; g++) {
		struct qgroup *gr = &s->groups[g];

		start[g] = at;
		if (asks(gr))
			at += gr->n_want;
	}
	for (size_t i = 0; i < s->n_locs; i++) {
		const struct qloc *l = &s->locs[i];
		size_t *at;

		if (l->state != ST_WANT || !asks(&s->groups[l->group]))
			continue;
		at = &start[l->group];
		a[*at].addr = l->addr;
		a[*at].leaf = l->leaf;
		a[*at].idx = (uint32_t)i;
		(*at)++;
	}
	/* start[g] now ends group g: it begins n_want before. */
	for (size_t g = 0; g < s->n_groups && !rc; g++) {
		struct qgroup *gr = &s->groups[g];
		struct res_ctx rctx = { q, s, NULL };
		struct areq *ga;
		size_t n = gr->n_want;

		if (!asks(gr))
			continue;
		ga = a + start[g] - n;
		sort_areq(ga, tmp, n);
		for (size_t i = 0; i < n; i++) {
			reqs[i].addr = ga[i].addr;
			reqs[i].leaf = (int)ga[i].leaf;
			which[i] = ga[i].idx;
		}
		rctx.which = which;
		if (gr->jit_pid)
			rc = debuginfo_perfmap_resolve(q->symbolizer, q->tenant, gr->jit_pid, reqs, n,
						       on_frames, &rctx, &gr->status, gr->reason,
						       sizeof(gr->reason));
		else
			rc = debuginfo_resolve_as(q->symbolizer, &asker, gr->build_id, &gr->map,
						  reqs, n, deadline, on_frames, &rctx, &gr->status,
						  gr->reason, sizeof(gr->reason));
		if (rc && !q->msg->text[0])
			err_set(q->msg, rc, "symbolizing %s: %s",
				gr->jit_pid ? gr->binary : gr->build_id, err_str(rc));
		group_status(s, gr);
	}
out:
	free(start);
	query__mem_free(q, a, cap_a, sizeof(*a));
	query__mem_free(q, tmp, cap_tmp, sizeof(*tmp));
	query__mem_free(q, reqs, cap_reqs, sizeof(*reqs));
	query__mem_free(q, which, cap_which, sizeof(*which));
	return rc;
}

static int unresolved(const struct qsym *s, uint32_t idx)
{
	const struct qloc *l = &s->locs[idx];

	return l->state == ST_WANT || (l->state >= ST_DONE && !l->n_frames);
}

/*
 * Sets of groups, interned: set 0 is empty, set k > 0 is set sets[k].parent
 * plus group sets[k].group.  A stack's set holds the groups of its unnamed
 * frames; a trie path shares its prefix's set, so the sets stay few.
 */
struct gset {
	uint32_t parent, group;
};

struct gsets {
	struct gset *v;
	size_t n, cap;
	struct qmap index;  /* parent << 32 | group -> set */
};

/* *set becomes *set plus group g. */
static int gset_add(struct qctx *q, struct gsets *gs, uint32_t *set, uint32_t g)
{
	uint64_t key = (uint64_t)*set << 32 | g;
	uint32_t found;
	int rc;

	for (uint32_t k = *set; k; k = gs->v[k].parent)
		if (gs->v[k].group == g)
			return 0;
	if (query__map_get(&gs->index, key, &found)) {
		*set = found;
		return 0;
	}
	if (!gs->n)
		gs->n = 1; /* set 0, the empty one */
	if ((rc = query__mem_grow(q, (void **)&gs->v, &gs->cap, sizeof(*gs->v), gs->n + 1, "group sets")))
		return rc;
	gs->v[gs->n].parent = *set;
	gs->v[gs->n].group = g;
	if ((rc = query__map_put(q, &gs->index, key, (uint32_t)gs->n)))
		return rc;
	*set = (uint32_t)gs->n++;
	return 0;
}


/* ---- unwinding or symbolization ---------------------------------------- */

/*
 * Functions a complete user-space stack starts from (its root, or near it
 * when an unwinder reads one frame too far): program and thread entries of
 * glibc, musl and Go.  Go's assembly symbols carry ".abi0".
 */
static const char *const entries[] = {
	"_start", "__libc_start_main", "__libc_start_call_main", "_dl_start", "_dl_start_user",
	"clone", "clone3", "__clone", "__clone3", "__GI___clone", "__GI___clone3",
	"start_thread", "thread_start", "runtime.goexit", "runtime.mstart", "runtime.rt0_go",
};

static int name_is(const char *name, const char *want)
{
	size_t n = strlen(want);

	return !strncmp(name, want, n) && (name[n] == '\0' || !strcmp(name + n, ".abi0"));
}

static int is_entry(const char *name)
{
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (name_is(name, entries[i]))
			return 1;
	return 0;
}

/* Binaries of interpreters and VMs, whose own frames say nothing alone. */
static int is_interpreter(const char *binary)
{
	static const char *const names[] = { "python", "libpython", "ruby", "libruby", "node",
					     "libnode", "java", "libjvm", "php", "perl", "libperl",
					     "lua", "libluajit", "luajit" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(binary, names[i], strlen(names[i])))
			return 1;
	return 0;
}

int query_stack_entry(const char *function)
{
	return function && is_entry(function);
}

int query_interpreter_binary(const char *binary)
{
	return binary && is_interpreter(binary);
}

/* The ugroup of mapping `map_id` of partition `part` (*out 0: none). */
static int ugroup_of(struct qctx *q, struct qsym *s, struct store_symbols *sym, uint32_t part,
		     uint32_t map_id, uint32_t *out)
{
	uint64_t key = (uint64_t)part << 32 | map_id;
	struct store_mapping mp;
	const char *bid, *bin;
	uint32_t g1;
	int rc;

	*out = 0;
	if (query__map_get(&s->mapug, key, out))
		return 0;
	if (!map_id || store_symbols_mapping(sym, map_id, &mp) || kernel_mapping(&mp))
		return query__map_put(q, &s->mapug, key, 0);
	bid = mp.build_id ? mp.build_id : "";
	bin = mp.filename && mp.filename[0] ? base_name(mp.filename) : "[unknown]";
	for (g1 = 1; g1 <= s->n_ug; g1++)
		if (!strcmp(s->ug[g1 - 1].build_id, bid) &&
		    (bid[0] || !strcmp(s->ug[g1 - 1].binary, bin)))
			break;
	if (g1 > s->n_ug) {
		struct ugroup *u;

		if (s->n_ug >= MAX_GROUPS)
			return query__map_put(q, &s->mapug, key, 0);
		if ((rc = query__mem_grow(q, (void **)&s->ug, &s->cap_ug, sizeof(*s->ug), s->n_ug + 1,
					  "unwinding groups")))
			return rc;
		u = &s->ug[s->n_ug];
		memset(u, 0, sizeof(*u));
		if (!(u->build_id = sdup(q, s, bid)) || !(u->binary = sdup(q, s, bin)))
			return ERR_TOO_LARGE;
		g1 = (uint32_t)++s->n_ug;
	}
	*out = g1;
	return query__map_put(q, &s->mapug, key, g1);
}

/* The out-of-line function of frame s->locs[idx], or NULL. */
static const char *frame_name(const struct qsym *s, struct store_symbols *sym, uint32_t idx,
			      const struct store_location_view *lv)
{
	const struct qsym_frame *f;
	struct store_function fn;
	size_t n;

	if (lv->n_lines) {
		if (store_symbols_function(sym, lv->lines[lv->n_lines - 1].function_id, &fn) ||
		    !fn.name || !fn.name[0])
			return NULL;
		return fn.name;
	}
	n = loc_frames(s, idx, &f);
	return n ? f[n - 1].function : NULL;
}

/* ---- passes 3 and 4: one memoized walk of the trie --------------------------- */

/*
 * Pass 3 (unnamed samples): a stack with unnamed frames counts once toward
 * the unnamed total and once against each build ID with an unnamed frame on
 * it (so a missing libc at the leaf does not hide a missing program above
 * it).  Pass 4 (unwinding): per binary of the outermost user-space frame,
 * how many samples' stacks reach an entry point, stop at a named function
 * that is none or at an address outside every mapping (a broken unwinder),
 * stop at a frame without a name (symbolization first), or are one or two
 * frames deep in an interpreter.
 *
 * Both are folds over a stack's path from the root, so they are memoized
 * per pnode (a trie node in its role): a pnode's fold is its parent's plus
 * its own frame.  Each pnode's frame is looked at once, however many stacks
 * share it.
 */

/* One frame: a location in a role. */
struct pframe {
	uint32_t map;   /* mapping id; 0 none */
	uint8_t user;   /* not a kernel frame */
	uint8_t flags;  /* UF_* of this frame alone */
	uint8_t known;  /* in struct pwalk: filled in */
};

static int frame_of(struct qctx *q, const struct qsym *s, struct store_symbols *sym,
		    uint32_t part, const struct pnode *p, struct pframe *f)
{
	struct store_location_view lv;
	const char *name;

	memset(f, 0, sizeof(*f));
	if (p->kern)
		return 0;
	if (store_symbols_location(sym, s->locs[p->idx].loc, &lv))
		return err_set(q->msg, ERR_CORRUPT, "partition %u: location %u not found", part,
			       s->locs[p->idx].loc);
	name = frame_name(s, sym, p->idx, &lv);
	f->user = 1;
	f->map = lv.mapping_id;
	f->flags = (lv.mapping_id ? 0 : UF_JUNK) | (lv.n_lines ? 0 : UF_RAW);
	if (name)
		f->flags |= UF_NAMED | (is_entry(name) ? UF_ENTRY : 0) |
			    (!strncmp(name, "runtime.", 8) ? UF_GO : 0) |
			    (name_is(name, "runtime.goexit") || name_is(name, "runtime.mstart") ?
				     UF_GO_ROOTED : 0);
	return 0;
}

/* *o becomes the fold of the path *o was, extended leaf-ward by frame f. */
static void fold_child(struct pfold *o, const struct pframe *f)
{
	if (o->depth < UINT32_MAX)
		o->depth++;
	if (!f->user)
		return;
	if (!o->user)
		o->flags |= f->flags & UF_OUTER;
	o->flags |= f->flags & ~UF_OUTER;
	if (!o->root_map)
		o->root_map = f->map;
	if (o->user < 3)
		o->user++;
}

/* *o becomes the fold of the path *o was, extended root-ward by frame f. */
static void fold_parent(struct pfold *o, const struct pframe *f)
{
	o->depth++;
	if (!f->user)
		return;
	o->flags = (o->flags & ~UF_OUTER) | f->flags;
	if (f->map)
		o->root_map = f->map;
	if (o->user < 3)
		o->user++;
}

struct pwalk {
	struct gsets gs;
	uint32_t *path;
	size_t cap_path;
	struct pframe *frames; /* per s->locs entry: pnodes share frames */
	size_t cap_frames;
};

/*
 * Sets the fold of pnode `e` (of partition `part`): walks root-ward to a
 * pnode whose fold is known, then fills the folds leaf-ward.
 */
static int node_fold(struct qctx *q, struct qsym *s, struct ptrie *t, struct pwalk *w,
		     struct store_symbols *sym, uint32_t part, uint32_t e)
{
	size_t depth = 0;
	int rc;

	for (; e != NO_PNODE && !t->v[e].done; e = t->v[e].parent) {
		/* A path longer than there are pnodes loops: a corrupt trie. */
		if (depth >= t->n)
			return err_set(q->msg, ERR_CORRUPT, "partition %u: stack loops", part);
		if (depth == w->cap_path &&
		    (rc = query__mem_grow(q, (void **)&w->path, &w->cap_path, sizeof(*w->path),
					  depth + 1, "stack path")))
			return rc;
		w->path[depth++] = e;
	}
	while (depth-- > 0) {
		struct pnode *p = &t->v[w->path[depth]];
		struct pframe *f = &w->frames[p->idx];
		struct pfold o;

		if (!f->known && (rc = frame_of(q, s, sym, part, p, f)))
			return rc;
		f->known = 1;
		if (p->parent == NO_PNODE)
			memset(&o, 0, sizeof(o));
		else
			o = t->v[p->parent].fold;
		if (unresolved(s, p->idx) && (rc = gset_add(q, &w->gs, &o.set, s->locs[p->idx].group)))
			return rc;
		fold_child(&o, f);
		p->fold = o;
		p->done = 1;
	}
	return 0;
}

/*
 * The unwinding fold of a stack deeper than MAX_DEPTH: of its MAX_DEPTH
 * leaf-most frames, as the diagnosis has always judged such stacks.
 */
static int leaf_fold(struct qctx *q, const struct qsym *s, const struct ptrie *t,
		     struct store_symbols *sym, uint32_t part, uint32_t e, struct pfold *o)
{
	int rc;

	memset(o, 0, sizeof(*o));
	for (size_t depth = 0; e != NO_PNODE && depth < MAX_DEPTH; depth++) {
		struct pframe f;

		if ((rc = frame_of(q, s, sym, part, &t->v[e], &f)))
			return rc;
		fold_parent(o, &f);
		e = t->v[e].parent;
	}
	return 0;
}

/* Adds the unwinding signature `f` of a stack of `value` samples to its binary's. */
static int add_signature(struct qctx *q, struct qsym *s, struct store_symbols *sym,
			 uint32_t part, const struct pfold *f, int64_t value)
{
	struct ugroup *u;
	uint32_t g1;
	int rc;

	/* A root that arrived with its name was unwound by a runtime's own
	 * profiler (Java, Python, Go's runtime/pprof), whose roots are its
	 * language's, not the native entry points: only raw roots, which
	 * a native unwinder produced, are judged.  A root outside every
	 * mapping is an address the unwinder read from junk; the stack counts
	 * for the binary of the outermost frame that has one. */
	if (!f->user || !(f->flags & UF_RAW))
		return 0;
	if ((rc = ugroup_of(q, s, sym, part, f->root_map, &g1)) || !g1)
		return rc;
	u = &s->ug[g1 - 1];
	u->total += value;
	u->go |= !!(f->flags & UF_GO);
	if (f->flags & UF_GO_ROOTED)
		u->go_rooted += value;
	if (f->flags & UF_ENTRY)
		u->complete += value;
	else if (!(f->flags & (UF_NAMED | UF_JUNK)))
		u->root_unnamed += value;
	else
		u->truncated += value;
	if (f->user <= 2 && is_interpreter(u->binary))
		u->short_interp += value;
	return 0;
}

/* Passes 3 and 4 over every stack of the merge, on the pnodes of pass 1. */
static int walk(struct qctx *q, struct qsym *s, const struct qmerge *m, struct qviews *v,
		struct ptrie *t)
{
	struct pwalk w;
	int rc = 0;

	memset(&w, 0, sizeof(w));
	query__map_init(&w.gs.index);
	rc = query__mem_grow(q, (void **)&w.frames, &w.cap_frames, sizeof(*w.frames), s->n_locs,
			     "stack frames");
	if (!rc && w.frames)
		memset(w.frames, 0, w.cap_frames * sizeof(*w.frames));
	for (size_t i = 0; i < m->n && !rc; i++) {
		struct store_symbols *sym;
		uint32_t e = t->of_stack[i], part = m->stacks[i].part;
		int64_t value = m->stacks[i].value;
		struct pfold f;

		s->total += value;
		if (e == NO_PNODE)
			continue;
		if ((rc = query__views_get(q, v, part, &sym)) ||
		    (rc = node_fold(q, s, t, &w, sym, part, e)))
			break;
		f = t->v[e].fold;
		if (f.set)
			s->unnamed += value;
		for (uint32_t k = f.set; k; k = w.gs.v[k].parent)
			s->groups[w.gs.v[k].group].unnamed += value;
		if (f.depth > MAX_DEPTH && (rc = leaf_fold(q, s, t, sym, part, e, &f)))
			break;
		rc = add_signature(q, s, sym, part, &f, value);
	}
	query__map_release(q, &w.gs.index);
	query__mem_free(q, w.gs.v, w.gs.cap, sizeof(*w.gs.v));
	query__mem_free(q, w.path, w.cap_path, sizeof(*w.path));
	query__mem_free(q, w.frames, w.cap_frames, sizeof(*w.frames));
	return rc;
}

/* The symbolization states of the merges ms[n] (at most MAX_SYMS) into ss; their count. */
#define MAX_SYMS 64
static size_t syms_of(const struct qmerge *const *ms, size_t n, const struct qsym **ss)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k < MAX_SYMS; i++)
		if (ms[i] && ms[i]->sym)
			ss[k++] = ms[i]->sym;
	return k;
}

/* The stacks' roots of every binary of the merges: what a verdict weighs against. */
static int64_t all_roots(const struct qsym *const *ss, size_t n)
{
	int64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t g = 0; ss[i] && g < ss[i]->n_ug; g++)
			sum += ss[i]->ug[g].total;
	return sum;
}

/*
 * What the signatures of `u` say: NULL when nothing points at the unwinder.
 * `roots`: all_roots() of the merges.
 */
static const char *unwind_verdict(const struct ugroup *u, int64_t roots, const char **fix)
{
	/* Go's runtime/pprof leaves runtime.goexit out of its stacks: a Go
	 * binary none of whose stacks reach goexit or mstart had its roots
	 * removed by the producer, not lost by an unwinder. */
	int64_t truncated = u->go && !u->go_rooted ? 0 : u->truncated;

	/* A binary under 5 % of the roots is not judged, as `unhex doctor
	 * FILE` does not: the few samples a profiler takes while ld.so loads
	 * the program stop in its named functions whatever the unwinder. */
	if (u->total <= 0 || u->total < roots / 20)
		return NULL;
	if (u->short_interp * 2 >= u->total) {
		*fix = "the interpreter's own frames are all the unwinder sees: profile with the "
		       "runtime's profiler, or have it write a perf map (python -X perf, "
		       "node --perf-basic-prof, the JVM's perf-map-agent)";
		return "interpreter";
	}
	if (truncated * 10 >= u->total) {
		*fix = "stacks stop at a named function that is not an entry point (_start, "
		       "__libc_start_main, clone, start_thread, runtime.goexit): fix the unwinder, "
		       "not the symbols. With frame-pointer unwinding (perf --call-graph fp, most "
		       "eBPF agents) rebuild with -fno-omit-frame-pointer "
		       "-mno-omit-leaf-frame-pointer, or unwind with .eh_frame (perf --call-graph "
		       "dwarf) and keep .eh_frame in the binary";
		return "truncated";
	}
	return NULL;
}

static int unwinding_json(struct buf *out, const struct qsym *const *ss, size_t n, int all)
{
	int first = 1, rc = buf_puts(out, ",\"unwinding\":[");
	int64_t roots = all_roots(ss, n);

	for (size_t i = 0; i < n && !rc; i++)
		for (size_t g = 0; ss[i] && g < ss[i]->n_ug && !rc; g++) {
			const struct ugroup *u = &ss[i]->ug[g];
			const char *fix = "", *verdict = unwind_verdict(u, roots, &fix);
			double t = u->total > 0 ? (double)u->total : 1.0;

			if (!verdict && !all)
				continue;
			rc = buf_puts(out, first ? "{\"buildId\":" : ",{\"buildId\":");
			first = 0;
			if (!rc) rc = buf_put_json_str(out, u->build_id, strlen(u->build_id));
			if (!rc) rc = buf_puts(out, ",\"binary\":");
			if (!rc) rc = buf_put_json_str(out, u->binary, strlen(u->binary));
			if (!rc)
				rc = buf_printf(out, ",\"verdict\":\"%s\",\"completeShare\":%.6f,"
						"\"truncatedShare\":%.6f,\"rootUnnamedShare\":%.6f,"
						"\"shortInterpreterShare\":%.6f,\"fix\":",
						verdict ? verdict : "ok", (double)u->complete / t,
						(double)u->truncated / t, (double)u->root_unnamed / t,
						(double)u->short_interp / t);
			if (!rc) rc = buf_put_json_str(out, fix, strlen(fix));
			if (!rc) rc = buf_putc(out, '}');
		}
	return rc ? rc : buf_putc(out, ']');
}

/*
 * What this query resolved goes into the memo for the next ones, and the
 * build IDs it used get their last-use date.
 */
static void remember(struct qctx *q, struct qsym *s)
{
	for (size_t i = 0; i < s->n_locs; i++)
		if (s->locs[i].state != ST_NA && unresolved(s, (uint32_t)i))
			s->groups[s->locs[i].group].n_unresolved++;
	for (size_t g = 0; g < s->n_groups; g++) {
		const struct qgroup *gr = &s->groups[g];

		debuginfo_note_unresolved(q->symbolizer, gr->status, gr->n_unresolved);
		if (gr->build_id[0] && gr->status == DEBUGINFO_STATUS_OK)
			debuginfo_touch(q->symbolizer, gr->build_id);
	}
	if (!s->memo.m)
		return;
	query__memo_put_begin(&s->memo, q->tenant);
	for (size_t i = 0; i < s->n_locs; i++) {
		const struct qloc *l = &s->locs[i];

		if (l->state == ST_DONE)
			query__memo_put(&s->memo, l->part, l->loc, l->leaf, &s->frames[l->fr.off],
				  l->n_frames);
	}
	query__memo_put_end(&s->memo);
}

/*
 * A tenant whose symbolization is off (limits file): every group that
 * wanted names says so, and its frames stay as stored.
 */
static void disable_groups(struct qsym *s)
{
	for (size_t g = 0; g < s->n_groups; g++) {
		struct qgroup *gr = &s->groups[g];

		gr->status = DEBUGINFO_STATUS_DISABLED;
		snprintf(gr->reason, sizeof(gr->reason), "%s", DEBUGINFO_DISABLED_REASON);
	}
	s->disabled = 1;
}

int query__symbolize(struct qctx *q, struct qmerge *m)
{
	struct qviews v;
	struct ptrie t;
	struct qsym *s;
	int off, rc;

	if (!q->symbolizer || m->sym)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(q->msg, ERR_NOMEM, "symbolization: out of memory");
	arena_init(&s->strs, STRS_CAP);
	query__map_init_dense(&s->nonleaf);
	query__map_init_dense(&s->leaf);
	query__map_init_dense(&s->mapgroup);
	query__map_init(&s->kern);
	query__map_init(&s->mapug);
	memset(&v, 0, sizeof(v));
	memset(&t, 0, sizeof(t));
	query__map_init_dense(&t.memo);
	m->sym = s;
	/* Off: no memo, no service call; the groups are still measured, so the
	 * answer says which binaries stay hex and why. */
	off = !debuginfo_tenant_symbolizes(q->symbolizer, q->tenant);
	query__memo_begin(off ? NULL : q->symmemo, q->tenant, &s->memo);
	rc = collect(q, s, m, &v, &t);
	/* Passes 3 and 4 follow the pnodes: the trie's ids are done with. */
	query__map_release(q, &t.memo);
	query__memo_unlock(&s->memo);
	if (!rc && off)
		disable_groups(s);
	else if (!rc)
		rc = resolve_groups(q, s);
	if (!rc && !off)
		remember(q, s);
	if (!rc)
		rc = walk(q, s, m, &v, &t);
	s->walked = t.n;
	/* The tree build follows the same pnodes instead of the trie. */
	if (!rc && (s->kept = malloc(sizeof(*s->kept)))) {
		*s->kept = t;
		s->n_stacks = m->n;
	} else {
		ptrie_release(q, &t);
	}
	query__views_release(&v);
	return rc;
}

/* ---- JSON ------------------------------------------------------------------- */

static int group_json(struct buf *out, const struct qgroup *g, int64_t total, int first)
{
	const char *status = debuginfo_status_str(g->status);
	int rc = buf_puts(out, first ? "{\"buildId\":" : ",{\"buildId\":");

	/* Frames that stayed hex under an "ok" build ID: the debug info knows
	 * nothing at those addresses (e.g. hand-written assembly, PLT). */
	if (!rc) rc = buf_put_json_str(out, g->build_id, strlen(g->build_id));
	if (!rc) rc = buf_puts(out, ",\"binary\":");
	if (!rc) rc = buf_put_json_str(out, g->binary, strlen(g->binary));
	if (!rc) rc = buf_printf(out, ",\"status\":\"%s\",\"reason\":", status);
	if (!rc) rc = buf_put_json_str(out, g->reason, strlen(g->reason));
	if (!rc)
		rc = buf_printf(out, ",\"samplesShare\":%.6f}",
				total > 0 ? (double)g->unnamed / (double)total : 0.0);
	return rc;
}

/* all: every group (the /api/v1/symbolization listing); else only those
 * leaving samples unnamed or not ok. */
static int put_object(const struct qmerge *const *ms, size_t n, int all, struct buf *out)
{
	int64_t total = 0, unnamed = 0;
	int pending = 0, disabled = 0, first = 1, rc;

	for (size_t i = 0; i < n; i++)
		if (ms[i] && ms[i]->sym) {
			total += ms[i]->sym->total;
			unnamed += ms[i]->sym->unnamed;
			pending |= ms[i]->sym->pending;
			disabled |= ms[i]->sym->disabled;
		}
	rc = buf_printf(out, "{\"pending\":%s,%s\"unsymbolizedShare\":%.6f,\"buildIds\":[",
			pending ? "true" : "false", disabled ? "\"disabled\":true," : "",
			total > 0 ? (double)unnamed / (double)total : 0.0);
	for (size_t i = 0; i < n && !rc; i++) {
		const struct qsym *s = ms[i] ? ms[i]->sym : NULL;

		for (size_t g = 0; s && g < s->n_groups && !rc; g++) {
			const struct qgroup *gr = &s->groups[g];

			if (!all && !gr->unnamed && gr->status == DEBUGINFO_STATUS_OK)
				continue;
			rc = group_json(out, gr, total, first);
			first = 0;
		}
	}
	if (!rc)
		rc = buf_putc(out, ']');
	if (!rc) {
		const struct qsym *ss[MAX_SYMS];

		rc = unwinding_json(out, ss, syms_of(ms, n, ss), all);
	}
	if (!rc)
		rc = buf_putc(out, '}');
	return rc;
}

int query__sym_json(const struct qmerge *const *ms, size_t n, struct buf *out)
{
	const struct qsym *ss[MAX_SYMS];
	int needed = 0, rc;
	int64_t roots = all_roots(ss, syms_of(ms, n, ss));

	for (size_t i = 0; i < n; i++) {
		const struct qsym *s = ms[i] ? ms[i]->sym : NULL;

		if (!s)
			continue;
		if (s->pending || s->unnamed)
			needed = 1;
		for (size_t g = 0; g < s->n_ug; g++) {
			const char *fix;

			if (unwind_verdict(&s->ug[g], roots, &fix))
				needed = 1;
		}
		for (size_t g = 0; g < s->n_groups; g++)
			if (s->groups[g].status != DEBUGINFO_STATUS_OK)
				needed = 1;
	}
	if (!needed)
		return 0;
	rc = buf_puts(out, ",\"symbolization\":");
	return rc ? rc : put_object(ms, n, 0, out);
}

int query__sym_status_json(const struct qmerge *m, struct buf *out)
{
	const struct qmerge *ms[1] = { m };

	return put_object(ms, 1, 1, out);
}
