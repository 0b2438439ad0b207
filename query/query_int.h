/*
 * query_int.h - private design of the query engine, for the query/ sources and its
 * tests.
 *
 * Memory
 *   A query owns one struct qctx: its deadline, its byte budget (a
 *   base/grow.h struct grow_budget) and the message of its failure.  Every
 *   growable table of a query (the stack aggregation, memo tables, tree
 *   nodes) is grown through query__mem_grow(), which is grow_array()
 *   through the budget, and the name tables are base/intern.h interners
 *   on the same budget, so a query fails with ERR_TOO_LARGE instead of
 *   exhausting the machine.
 *
 * Names
 *   A name table is a struct intern (base/intern.h) made by
 *   query__names_init: id 0 is "total" (the root), id 1 is "other" (folded
 *   children).  Its strings, id table and index are charged to the budget.
 *
 * Tree
 *   struct qtree is a flat array of nodes; node 0 is the root.  A child is
 *   always created after its parent, so totals are propagated by one pass
 *   from the last node to the first.  Children are keyed by name id through
 *   one hash table (parent, name) -> node.  Each node carries two value
 *   sides: side 0 for single trees and the left of a diff, side 1 for the
 *   right of a diff.
 *
 * Pipeline
 *   Every read API runs the same stages over each selection it names
 *   (pipeline.c, query__run; a diff runs two), as far as its output needs:
 *
 *     select     select.c          parameters -> checked selector -> series
 *     collect    collect.c         values summed per (partition, stack id),
 *                                  and per time step for a timeline
 *     symbolize  symbolize_step.c  frames for the raw locations of those
 *                                  stacks (with a symbolizer)
 *     build      build.c           the call tree of frame names
 *     truncate   truncate.c        at most maxNodes nodes, the rest "other"
 *     encode     the API's writer  flamebearer.c (render JSON), connect.c
 *                                  (querier.v1 messages), top.c (text),
 *                                  pprof_out.c (pprof), dot.c (Graphviz),
 *                                  symbolize_step.c
 *
 *   A stage's result is a typed value (struct query_selector, struct
 *   qmerge, struct qtree, struct query__flame, protobuf-c messages), and
 *   only the encode stage writes bytes; nothing a stage wrote is read back.
 */
#ifndef UNHEX_QUERY_QUERY_INT_H
#define UNHEX_QUERY_QUERY_INT_H

#include "base/arena.h"
#include "base/grow.h"
#include "base/intern.h"
#include "query/query.h"

#include <stddef.h>
#include <stdint.h>

struct buf;
struct store_profile_view;
struct store_label;
struct store_symbols;

/* ---- budget and deadline ------------------------------------------------- */

struct qctx {
	struct store *st;
	const char *tenant;
	int64_t deadline_ns;   /* monotonic clock */
	struct grow_budget mem; /* not to be moved: mem.alloc points to it */
	struct err_msg *msg;
	unsigned tick;
	struct debuginfo *symbolizer;   /* borrowed from the limits; may be NULL */
	struct query_symmemo *symmemo;  /* borrowed from the limits; may be NULL */
	uint64_t scanned, max_scan;     /* sample bytes read, and the limit */
	int *scan_refused;              /* borrowed from the limits; may be NULL */
	/* Every table of the query grows through `alloc`: mem's budget, after
	 * taking more of `reserve` (may be NULL) when it would pass `held`. */
	const struct query_reserve *reserve;
	size_t held;
	struct grow_alloc alloc;        /* not to be moved: alloc.ctx points here */
};

void query__ctx_init(struct qctx *q, struct store *st, const char *tenant,
		     const struct query_limits *lim, struct err_msg *msg);
/* Returns ERR_TIMEOUT (with a message) once the deadline passed. */
int query__ctx_check(struct qctx *q);

struct store_reader;
struct store_profile_view;

/*
 * store_reader_profiles_each over `rd`, or store_profiles_each of the
 * query's tenant when `rd` is NULL, charging each profile to the query's
 * scan budget before `cb` sees it (query_limits.max_scan_bytes): past the
 * budget reading stops with ERR_TOO_LARGE.  Returns what the store call
 * does (> 0 when cb stopped it).
 */
int query__profiles_each(struct qctx *q, struct store_reader *rd, uint64_t series_id,
			 int64_t from_ns, int64_t until_ns,
			 int (*cb)(void *ctx, const struct store_profile_view *p), void *ctx);

/*
 * Grows *p (an array of `elem`-byte items, *cap items allocated) to hold at
 * least `need` items, charging the budget.  Returns 0, ERR_NOMEM or
 * ERR_TOO_LARGE (with a message naming `what`).
 */
int query__mem_grow(struct qctx *q, void **p, size_t *cap, size_t elem, size_t need,
		    const char *what);
/* Frees an array grown by query__mem_grow and refunds the budget. */
void query__mem_free(struct qctx *q, void *p, size_t cap, size_t elem);

/* A list of series ids, charged to the query's budget. */
struct query__ids {
	struct qctx *q;
	uint64_t *v;
	size_t n, cap;
};

/* A series callback (store_series_fn's shape) that appends the series id to
 * the struct query__ids given as ctx; nonzero (an err.h code) stops. */
int query__ids_add(void *ctx, uint64_t id, uint32_t part, const struct store_label *labels,
		   size_t n);
/* Frees the list and refunds the budget; the list is empty after. */
void query__ids_free(struct query__ids *ids);

/* ---- u64 -> u32 hash map (open addressing; key 0 is allowed) ------------ */

/*
 * A map from uint64 keys to uint32 values (UINT32_MAX is not a value).
 * Open addressing by default.  A map made with query__map_init_dense() is for keys
 * `part << 32 | id` where ids are the store's dense symbol or stack ids: the
 * first QMAP_DENSE_PARTS partitions get flat arrays indexed by id, which a
 * merge over ~150k trie nodes needs (a hash probe per node is a cache miss);
 * keys that do not fit (other partitions, ids far beyond the entries held)
 * go to the hash table.  A day of a long store is a dozen partitions (the
 * head's and one per block: 6 h, 1 h blocks), so there is room for 32.
 */
enum { QMAP_DENSE_PARTS = 32 };

struct qmap_dense {
	uint32_t part;
	uint32_t *v;      /* v[id], UINT32_MAX when absent */
	size_t size;      /* ids covered; the allocation is cap */
	size_t cap;
};

struct qmap {
	uint64_t *keys;
	uint32_t *vals;   /* UINT32_MAX marks an empty slot */
	size_t cap;       /* power of two or 0 */
	size_t n;         /* entries in the hash table */
	int dense;        /* made by query__map_init_dense */
	unsigned n_dense;
	size_t dense_entries;
	uint32_t dpart[QMAP_DENSE_PARTS]; /* d[i].part, packed for the scan of each lookup */
	struct qmap_dense d[QMAP_DENSE_PARTS];
};

void query__map_init(struct qmap *m);
void query__map_init_dense(struct qmap *m);
void query__map_release(struct qctx *q, struct qmap *m);
/* query__map_get returns 1 and sets *val when `key` is present, else 0. */
int query__map_get(const struct qmap *m, uint64_t key, uint32_t *val);
int query__map_put(struct qctx *q, struct qmap *m, uint64_t key, uint32_t val);
/* Makes room in the hash table for `n` more keys without growing (dense parts aside). */
int query__map_reserve(struct qctx *q, struct qmap *m, size_t n);
/* Starts loading the memory a query__map_get of `key` will read (a hint only). */
void query__map_prefetch(const struct qmap *m, uint64_t key);

/* ---- interned names -------------------------------------------------------- */

enum { QNAME_TOTAL = 0, QNAME_OTHER = 1 };

/*
 * A raw frame's name not written yet (query__build_tree_deferred): the bit
 * QNAME_RAW over an index into the tree's `raw`.  Interned ids stay below
 * HMAP_MAX, so the two never meet.
 */
#define QNAME_RAW 0x80000000u

/* Writes "<file>+0x<hex address>" (file cut at 400 bytes) into out[512]; returns its length. */
size_t query__raw_name(char *out, const char *file, uint64_t addr);

/*
 * A name table: intern_init() on the query's budget, then "total" and
 * "other".  Read it with intern_str(), intern_len() and intern_count().
 */
int query__names_init(struct qctx *q, struct intern *nm);
void query__names_release(struct intern *nm);
/* intern_put() with the failure's message in q->msg. */
int query__names_intern(struct qctx *q, struct intern *nm, const char *s, size_t len, uint32_t *id);

/* ---- call tree ------------------------------------------------------------- */

struct qnode {
	uint32_t name;
	uint32_t parent;       /* UINT32_MAX for the root */
	uint32_t first_child;  /* UINT32_MAX when none */
	uint32_t next_sibling; /* UINT32_MAX when none */
	uint32_t build_id;     /* a raw frame (`<file>+0x<address>`): name id of its build
				* ID, "" when its mapping has none; 0 a named frame */
	uint8_t inlined;       /* every stack reached it as a frame inlined into its
				* parent's (one location, several lines): build.c */
	uint8_t indexed;       /* its children are in the tree's index (tree.c) */
	int64_t self[2];
	int64_t total[2];
};

/* A deferred raw frame name: its file (cut, ASCII) as a name id, and its address. */
struct qraw {
	uint64_t addr;
	uint32_t file;
};

struct qtree {
	struct intern names;
	struct qnode *nodes;
	size_t n, cap;
	struct qraw *raw; /* the names QNAME_RAW | i (only before truncation) */
	size_t nraw, rawcap;
	/* Index of the children by (parent, name) of the nodes with more than a
	 * few (a shorter list of siblings is walked instead), open addressing:
	 * a slot is the high half of the pair's hash << 32 | the node id, 0 when
	 * empty (the root is no one's child).  Probes compare the hash half
	 * first, then the node's own parent and name: one load per probe, and
	 * the node read on a hit is the one the caller reads next. */
	uint64_t *kids;
	size_t kids_n;    /* nodes in the index */
	size_t kids_cap;  /* power of two or 0 */
};

#define QNONE UINT32_MAX

int query__tree_init(struct qctx *q, struct qtree *t);
/* Makes room for `n` nodes (a hint: the tree grows past it as needed). */
int query__tree_reserve(struct qctx *q, struct qtree *t, size_t n);
void query__tree_release(struct qctx *q, struct qtree *t);
/* Finds or creates the child `name` of `parent`. */
int query__tree_child(struct qctx *q, struct qtree *t, uint32_t parent, uint32_t name,
		      uint32_t *out);
/* Sets every total from the selves (both sides). */
void query__tree_totals(struct qtree *t);
/*
 * Keeps only the stacks that begin, root first, with the `n` frame names
 * `site` (Pyroscope's stack trace selector): every self outside the subtree
 * of that path is zeroed and the totals recomputed; no such path, an empty
 * tree.  Nodes of total 0 are not written by any encoder.
 */
int query__tree_call_site(struct qctx *q, struct qtree *t, const char *const *site, size_t n);
/* The id in `dst` of name `name` of `src` (interned into `dst`). */
int query__tree_copy_name(struct qctx *q, struct qtree *dst, const struct qtree *src,
			  uint32_t name, uint32_t *out);
/*
 * The union of two trees by name path into `out` (initialized by the
 * callee): `left` on side 0, `right` on side 1 (each read from its side 0),
 * totals set.  Both are borrowed.
 */
int query__tree_diff(struct qctx *q, const struct qtree *left, const struct qtree *right,
		     struct qtree *out);

/* Scratch of query__tree_sorted_children, reused across calls, charged to the budget. */
struct query__named;
struct query__kids {
	struct query__named *named;
	size_t named_cap;
	uint32_t *ids;
	size_t ids_cap;
};

void query__kids_release(struct qctx *q, struct query__kids *k);
/*
 * The children of `node`, sorted by name (bytewise, shorter first), as *n
 * node ids at *out: memory of `k`, valid until its next use.
 */
int query__tree_sorted_children(struct qctx *q, const struct qtree *t, uint32_t node,
				struct query__kids *k, const uint32_t **out, size_t *n);

/* ---- symbol views, one per partition a query touches ------------------- */

enum { QVIEWS_MAX = 1 << 20 }; /* partitions one query reads */

struct qviews {
	uint32_t *part;
	size_t part_cap;
	struct store_symbols **sym;
	size_t sym_cap;
	size_t n;
};

/* Returns the view of `part`, getting it from the store on first use. */
int query__views_get(struct qctx *q, struct qviews *v, uint32_t part, struct store_symbols **out);
void query__views_release(struct qviews *v);

/* ---- merge --------------------------------------------------------------- */

struct qstack {
	uint32_t part;
	uint32_t stack;
	int64_t value;
};

/*
 * The stacks of each collected profile, kept apart (optional, for the
 * regression report): profile i holds entries start[i] .. start[i + 1] - 1
 * of idx (indexes into the merge's stacks) and val; side[i] is the merge's
 * `side` when it was collected.
 */
struct qprofiles {
	uint32_t *start;       /* n + 1 entries once a profile is in */
	uint8_t *side;
	size_t n, start_cap, side_cap;
	uint32_t *idx;
	int64_t *val;
	size_t len, idx_cap, val_cap;
};

/* Decides per profile whether a collect takes it (1) or skips it (0); < 0 fails. */
typedef int (*qprofile_keep)(void *ctx, const struct store_profile_view *p);

/*
 * A reader of the profiles collect reads, beside the merge (render's
 * timeline, connect.c): told of each selected series in turn (series(),
 * as a qseries_cb), then of each profile of the i-th of them with
 * from_ns <= time_ns < until_ns, whatever the merge keeps of it, with the
 * sum of all its values.  collect reads the union of that range and its
 * own once; a profile in both counts twice against max_query_bytes, as
 * when the timeline read it again.  An error either returns stops collect.
 */
struct qtap {
	int (*series)(void *ctx, uint64_t series_id, uint32_t part,
		      const struct store_label *labels, size_t n);
	int (*profile)(void *ctx, size_t i, const struct store_profile_view *p, int64_t sum);
	void *ctx;
	int64_t from_ns, until_ns;
};

struct qmerge {
	struct qstack *stacks; /* distinct (part, stack) with summed values */
	size_t n, cap;
	struct qmap index;     /* part << 32 | stack -> index in stacks */
	uint64_t profiles;
	uint64_t series;
	int64_t period;
	int64_t total;
	/* timeline: per step bucket totals (optional) */
	int64_t tl_start_ns, tl_step_ns;
	int64_t *tl;
	size_t tl_n;
	struct qsym *sym;      /* owned; query-time symbolization, NULL if none ran */
	/* Per-profile records (borrowed; NULL: none): with them, several
	 * collects may go into one merge, each its own side. */
	struct qprofiles *per_profile;
	int side;
	qprofile_keep keep;    /* may be NULL: every profile */
	void *keep_ctx;
	/* Only the pairs of these span ids (sorted; borrowed); n 0: every pair. */
	const uint64_t *span_sel;
	size_t n_span_sel;
	/* Only the profiles of these ids (sorted; borrowed); n 0: every profile. */
	const uint8_t (*id_sel)[16];
	size_t n_id_sel;
	/*
	 * owned; the consistent view of the head and blocks collect read the
	 * profiles from (NULL before).  Open until the merge is released, so
	 * the partitions its profiles named stay readable while the tree is
	 * built and symbolized, whatever sealing, compaction and retention do
	 * meanwhile; its warnings name the blocks it had to skip.
	 */
	struct store_reader *rd;
	/* The range rd was opened for: collect's own, widened to cover
	 * [rd_from, rd_until) when that is set before (rd_until > rd_from),
	 * so a later read of the same query (render's timeline) shares the
	 * view instead of opening another, which on a querier is another
	 * head-block request to every ingester. */
	int64_t rd_from, rd_until;
	/* per-profile records collect twice (one side each): the second view */
	struct store_reader *rd_side;
	/* render: Pyroscope's timeline and groups, written instead of tl (borrowed) */
	const struct buf *tl_json, *groups_json;
	const struct qtap *tap; /* borrowed; NULL: none */
};

void query__profiles_release(struct qctx *q, struct qprofiles *pp);

void query__merge_init(struct qmerge *m);
void query__merge_release(struct qctx *q, struct qmerge *m);
/* Frees the stack table once the tree is built; totals, timeline and sym stay. */
void query__merge_drop_stacks(struct qctx *q, struct qmerge *m);

/* ---- exemplars (exemplars.c) ---------------------------------------------- */

/* One exemplar candidate: a profile (or a span of one) behind cell `key`. */
struct qex {
	uint64_t key;
	uint8_t id[16];   /* profile id; nil for span exemplars */
	uint64_t span;    /* span id; 0 for profile exemplars */
	int64_t time_ms;  /* the profile's time */
	int64_t value;
	uint32_t lset;    /* its labels: an id of qexemplars.lsets */
};

struct qexemplars {
	struct qctx *q;
	struct intern lsets; /* label sets, "name\0value\0" sorted by name (ids from 2) */
	struct qex *v;
	size_t n, cap;
};

int query__ex_init(struct qctx *q, struct qexemplars *x);
/* Frees everything; a zeroed (never initialized) x is fine too. */
void query__ex_release(struct qexemplars *x);
/* The id of labels l[0..n) without those named in by[0..nby) (all borrowed). */
int query__ex_lset(struct qexemplars *x, const struct store_label *l, size_t n,
		   const char *const *by, size_t nby, uint32_t *out);
/* The id of the pairs common to label sets a and b. */
int query__ex_intersect(struct qexemplars *x, uint32_t a, uint32_t b, uint32_t *out);
/* Records a candidate (id: 16 bytes, borrowed). */
int query__ex_add(struct qexemplars *x, uint64_t key, const uint8_t *id, int64_t time_ms,
		  int64_t value, uint32_t lset);
/* Keeps one exemplar per key (Pyroscope's choice, see exemplars.c), sorted by key. */
int query__ex_pick(struct qexemplars *x);
/* After query__ex_pick: the exemplar of `key`, or NULL. */
const struct qex *query__ex_find(const struct qexemplars *x, uint64_t key);

/* ---- regexes (regex.c) ------------------------------------------------------ */

/* Bounds of one regex; see regex.c and docs/query.md. */
#define QUERY__REGEX_MAX_NESTING 64          /* nested parentheses */
#define QUERY__REGEX_COMPILE_BYTES (1 << 20) /* allocated while compiling */
#define QUERY__REGEX_CODE_BYTES (256 << 10)  /* the compiled code */
#define QUERY__REGEX_MATCH_STEPS 100000      /* backtracking steps of one match */
#define QUERY__REGEX_DEPTH 10000             /* nested backtracking points */
#define QUERY__REGEX_HEAP_KIB 4096           /* heap of one match */

/*
 * Compiles the `len` bytes of `pattern` (the value of a matcher of label
 * `label`, borrowed) into *out (returns owned; free with query__regex_free):
 * anchored at both ends, UTF-8, no back-references, every resource bounded.
 * ERR_INVALID for a bad pattern or one past a bound (ERR_TOO_LARGE for its length).
 */
int query__regex_compile(const char *pattern, size_t len, const char *label,
			 struct query_regex **out, struct err_msg *msg);
/*
 * 1 when the whole of s[0..len) matches, 0 when not; ERR_INVALID (with a
 * message naming `label`) when the match needs more than its bounds.
 */
int query__regex_match(struct query_regex *re, const char *s, size_t len, const char *label,
		       struct err_msg *msg);
void query__regex_free(struct query_regex *re);

/* ---- pipeline stages --------------------------------------------------------- */

/*
 * select (select.c): the checked selector of `p` into *sel (released by
 * the caller with query_selector_release): a profile type is required and
 * maxNodes must be in 0..QUERY_MAX_MAX_NODES.
 */
int query__select(const struct query_params *p, struct query_selector *sel,
		  struct err_msg *msg);
/* maxNodes of `p`, the default for 0. */
size_t query__max_nodes(const struct query_params *p);

/* Calls cb for every series of sel (postings for an equality matcher). */
typedef int (*qseries_cb)(void *ctx, uint64_t series_id, uint32_t part,
			  const struct store_label *labels, size_t n);
int query__select_series(struct qctx *q, struct query_selector *sel, qseries_cb cb,
			 void *ctx);
/* The same through reader `rd` (borrowed): series ids are the reader's. */
int query__select_series_in(struct qctx *q, struct store_reader *rd,
			    struct query_selector *sel, qseries_cb cb, void *ctx);
/*
 * store_reader_open for a read of the series of sels[0..n_sels) only (any
 * of them): a querier asks its ingesters for the series carrying the
 * labels every selector requires (its profile type, the values of its
 * equality matchers).  Returns owned *out.
 */
int query__reader_open(struct qctx *q, const struct query_selector *sels, size_t n_sels,
		       int64_t from_ns, int64_t until_ns, struct store_reader **out);
/*
 * The warnings of the readers of ms[0..n) as a JSON array of strings
 * (`[]` when none): the blocks a query skipped because they are corrupt or
 * missing.
 */
size_t query__warning_count(const struct qmerge *const *ms, size_t n);
int query__warnings_json(const struct qmerge *const *ms, size_t n, struct buf *out);

/*
 * collect (collect.c): sums every profile of every series of `sel` in
 * [from, until) into `m` (initialized); with a timeline set up by
 * query__timeline_init, the totals per step too.
 */
int query__collect(struct qctx *q, struct query_selector *sel, int64_t from_ns,
		   int64_t until_ns, struct qmerge *m);
/* Timeline buckets of [from, until) in `m`: at most ~1024 steps, never under 10 s. */
int query__timeline_init(struct qctx *q, struct qmerge *m, int64_t from_ns, int64_t until_ns);

/* build (build.c): the name tree of the stacks of `m` into *t (initialized by the callee). */
int query__build_tree(struct qctx *q, const struct qmerge *m, struct qtree *t);
/* The same, also setting node_of[i] (m->n entries) to the tree node of m->stacks[i]. */
int query__build_tree_nodes(struct qctx *q, const struct qmerge *m, struct qtree *t,
			    uint32_t *node_of);
/*
 * The same, for a tree that only query__truncate() reads next: a raw
 * frame's name is QNAME_RAW | i (t->raw[i]), written only when truncation
 * keeps its node (query__tree_copy_name).  Most raw frames of a large
 * query are folded into "other", and formatting and interning each was
 * ~12 % of such a render.
 */
int query__build_tree_deferred(struct qctx *q, const struct qmerge *m, struct qtree *t);

/*
 * truncate (truncate.c): keeps the nodes of *t whose total (the larger
 * side) is at least the `max_nodes`-th largest (>= 1); the other children
 * of each parent are folded into a child "other".  *t is replaced.
 */
int query__truncate(struct qctx *q, struct qtree *t, size_t max_nodes);

/* ---- the pipeline (pipeline.c) ------------------------------------------------ */

/* How far query__run goes. */
enum query__stage {
	QUERY__COLLECTED,  /* select, collect, symbolize */
	QUERY__TREE,       /* ... and build the whole tree */
	QUERY__TRUNCATED,  /* ... and truncate it to maxNodes */
};

enum { QUERY__TIMELINE = 1 }; /* flags: collect a timeline too */

/* One selection as it went through the pipeline. */
struct query__side {
	struct query_selector sel; /* select; sel.profile_type is set */
	struct qmerge m;           /* collect, symbolize */
	struct qtree t;            /* build, truncate: valid when have_tree */
	int have_tree;
};

void query__side_init(struct query__side *s);
void query__side_release(struct qctx *q, struct query__side *s);
/* Runs the stages of `p` (borrowed) up to `last` into *s (initialized). */
int query__run(struct qctx *q, const struct query_params *p, enum query__stage last,
	       unsigned flags, struct query__side *s);
/*
 * Both sides of a diff to their whole trees, then their union into *t
 * (initialized by the callee; left on side 0), truncated to the left's
 * maxNodes.  The profile types must be equal.
 */
int query__run_diff(struct qctx *q, const struct query_params *left,
		    const struct query_params *right, unsigned flags, struct query__side *l,
		    struct query__side *r, struct qtree *t);

/* ---- query-time symbolization (symbolize_step.c) ------------------------- */

/*
 * After query__collect: the distinct locations reachable from the merged
 * stacks whose mapping has no functions and that carry no lines are
 * grouped by build ID, sorted by address and resolved through the
 * service, all within one budget.  A location is resolved as a leaf (the
 * sampled PC) where it is a stack's own node and as a return address
 * (vaddr - 1) elsewhere, so it may have two answers.  Frames are kept
 * innermost first with strings in the qsym's arena.
 */
struct qsym;

struct qsym_frame {
	const char *function; /* never NULL */
	const char *file;     /* may be NULL */
	uint32_t line, column;
	uint32_t function_len; /* strlen(function), so the tree need not count */
};

/*
 * The symbolization memo (symmemo.c; query_symmemo_new in query.h): a
 * query's access to the frames earlier queries resolved.  Between
 * query__memo_begin and query__memo_unlock the memo is read-locked and
 * query__memo_get may be called; frames it returns stay valid until
 * query__memo_end.  New answers go in between query__memo_put_begin
 * (write-locked) and query__memo_put_end, and are dropped when the
 * service's debug info changed since query__memo_begin.  With a NULL memo
 * every call is a no-op and query__memo_get finds nothing.
 */
struct qmemo_gen;
struct qmemo_tenant;
struct qmemo_part;

struct qmemo_view {
	struct query_symmemo *m;
	struct qmemo_gen *g;            /* referenced until query__memo_end */
	const struct qmemo_tenant *t;   /* while read-locked */
	struct qmemo_tenant *put;       /* while write-locked */
	const struct qmemo_part *last;   /* partition last_part's memo, while read-locked */
	uint32_t last_part;
	uint64_t svc_gen;
	uint64_t hits, stored;
	int locked;
};

void query__memo_begin(struct query_symmemo *m, const char *tenant, struct qmemo_view *v);
/* 1 and the frames (n may be 0: nothing known there), or 0 when not memoized. */
int query__memo_get(struct qmemo_view *v, uint32_t part, uint32_t loc, int leaf,
		    const struct qsym_frame **f, uint32_t *n);
void query__memo_unlock(struct qmemo_view *v);
void query__memo_put_begin(struct qmemo_view *v, const char *tenant);
void query__memo_put(struct qmemo_view *v, uint32_t part, uint32_t loc, int leaf,
		     const struct qsym_frame *f, uint32_t n);
void query__memo_put_end(struct qmemo_view *v);
void query__memo_end(struct qmemo_view *v);

/*
 * The (trie node, role) pairs symbolization walked over the merge's stacks
 * (0 without it): about the tree nodes the name tree will have, so the
 * tree can be sized once instead of doubling (each doubling copied).
 */
size_t query__sym_walked(const struct qsym *s);

/*
 * The walk of pass 1 kept for the tree build: one pnode per (trie node,
 * role) the merge's stacks reach, linked root-ward, each naming its entry
 * (idx) among the step's distinct (location, role) pairs.  The build
 * follows it instead of decoding the trie and hashing every node again.
 *
 * query__sym_walk_stack: the pnode of m->stacks[i], QSYM_ROOT for the empty
 * stack, QSYM_NO_WALK when no walk of this merge is kept.
 * query__sym_walk_size: the pnodes (ids below it) and, in *n_locs, the
 * entries (idx below it).
 * query__sym_walk_node: the entry, location and role (1: a leaf, a PC) of
 * pnode e; returns its parent's pnode, QSYM_ROOT for the outermost frame.
 * query__sym_walk_frames: query__sym_frames() of entry idx.
 * query__sym_walk_release: frees the walk (the tree is built).
 */
#define QSYM_NO_WALK UINT32_MAX
#define QSYM_ROOT (UINT32_MAX - 1)
uint32_t query__sym_walk_stack(const struct qsym *s, const struct qmerge *m, size_t i);
size_t query__sym_walk_size(const struct qsym *s, size_t *n_locs);
uint32_t query__sym_walk_node(const struct qsym *s, uint32_t e, uint32_t *idx, uint32_t *loc,
			      int *leaf);
size_t query__sym_walk_frames(const struct qsym *s, uint32_t idx, const struct qsym_frame **frames);
void query__sym_walk_release(struct qctx *q, struct qsym *s);

/*
 * symbolize: runs the step for `m` when q->symbolizer is set (else, or when
 * it ran already, nothing); fills m->sym.
 */
int query__symbolize(struct qctx *q, struct qmerge *m);
void query__sym_free(struct qctx *q, struct qsym *s);
/*
 * Whether location `loc` of partition `part` is a kernel frame: its mapping
 * is named "[kernel..." or "[vmlinux...", or its address is in the upper
 * half (0 with s NULL).  The location just root-ward of a kernel frame is
 * the PC the kernel was entered from (an interrupt, fault or system call),
 * not a return address: it is resolved as a leaf, like the stack's own
 * location.  Known for every location of the merge after query__symbolize.
 */
int query__sym_kernel(const struct qsym *s, uint32_t part, uint32_t loc);
/* Resolved frames of a location, innermost first; 0 when it has none. */
size_t query__sym_frames(const struct qsym *s, uint32_t part, uint32_t loc, int leaf,
			 const struct qsym_frame **frames);
/*
 * Appends `,"symbolization":{...}` over the merges given (NULL entries
 * skipped) when any has unresolved frames; nothing otherwise.
 */
int query__sym_json(const struct qmerge *const *ms, size_t n, struct buf *out);
/* The /api/v1/symbolization object of `m` (every build ID; m->sym set). */
int query__sym_status_json(const struct qmerge *m, struct buf *out);

/* ---- encode: flame graphs (flame.c, flamebearer.c, connect.c) --------------- */

/*
 * A truncated tree in the layout of Pyroscope's flamebearer and of
 * querier.v1's FlameGraph and FlameGraphDiff messages: nodes in DFS
 * pre-order, children by name, nodes without a value on either side left
 * out; one array of values per depth, per node [x, total, self, name] of a
 * single tree or [lx, ltotal, lself, rx, rtotal, rself, name] of a diff,
 * where x is the node's left offset minus the right end of the previous node
 * of its level (delta encoding) and name an index into names.  names[0] is
 * "total"; names are those the levels use, in order of first use.
 */
struct query__flame {
	const char **names;   /* borrowed from the tree (live while it does) */
	uint32_t *name_len;
	size_t n_names;
	int64_t **levels;     /* levels[d]: n_values[d] values */
	size_t *n_values;
	size_t n_levels;
	int width;            /* values per node: 4, or 7 for a diff */
	int64_t total[2];     /* the root's totals of both sides */
	int64_t max_self;     /* the largest self of any node, of either side drawn */
	/* Allocations (charged to the query's budget). */
	int64_t *values;
	size_t cap_values, cap_levels, cap_n_values, cap_names, cap_name_len;
};

/* The flame graph of `t` (borrowed, kept alive by the caller) into *f; dbl: a diff. */
int query__flame_build(struct qctx *q, const struct qtree *t, int dbl, struct query__flame *f);
void query__flame_release(struct qctx *q, struct query__flame *f);

/*
 * Appends the flamebearer document of /pyroscope/render (n 1: format
 * "single", a "timeline") or render-diff (n 2: "double", "leftTimeline"
 * and "rightTimeline"), the timelines and the symbolization summary from
 * the merges `ms` (borrowed).
 */
/*
 * The timeline of `GET /pyroscope/render` as Pyroscope computes it: a
 * SelectSeries of p (its groupBy and aggregation) with Pyroscope's point
 * interval (range / 1500, at least 15 s, rounded), written by Pyroscope's
 * timeline.New into *timeline; with a groupBy, `{"value": timeline, ...}`
 * of every series into *groups (keyed by the first groupBy label, "*"
 * without it).
 */
int query__render_timeline(struct qctx *q, const struct query_params *p,
			   const struct qmerge *m, struct buf *timeline, struct buf *groups);
/*
 * The same timeline read by collect as it reads the flame graph's profiles
 * (one decode of each): query__render_tap sets up *out (owned) and
 * (*out)->tap for m->tap before the collect; query__render_tap_timeline
 * writes what the tap gathered.  *out stays NULL when the timeline's
 * request is not one the tap answers as SelectSeries would (then
 * query__render_timeline reads it, and reports what is wrong with it).
 */
struct query__rtap {
	struct qtap tap;
};
int query__render_tap(struct qctx *q, const struct query_params *p, struct query__rtap **out);
int query__render_tap_timeline(struct qctx *q, const struct query_params *p,
			       struct query__rtap *t, struct buf *timeline, struct buf *groups);
void query__render_tap_free(struct query__rtap *t);
/*
 * The range render's timeline reads for p ([from - step, until], in whole
 * milliseconds, as Pyroscope reads it), united with p's own: what
 * query_render opens its one reader for.  The timeline reads through m->rd
 * (borrowed; m may be NULL) when that view covers its range, else through
 * a view of its own.
 */
void query__render_read_range(const struct query_params *p, int64_t *from_ns,
			      int64_t *until_ns);
int query__fb_write(const struct query__flame *f, const char *profile_type,
		    const struct qmerge *const *ms, size_t n, struct buf *out);

/* Splits a profile type ID into its 5 parts (pointers into `buf`). */
int query__profile_type_split(const char *id, char *buf, size_t bufsz, const char *parts[5]);

/* ---- encode: text (top.c) ------------------------------------------------------ */

/* The top table of `t` (sorted, at most `limit` rows, 0: all) as text. */
int query__top_write(struct qctx *q, const struct qtree *t, enum query_top_sort sort,
		     size_t limit, struct buf *out);
/* Folded stacks of `t`: "root;caller;callee value\n" per node with self > 0. */
int query__folded_write(struct qctx *q, const struct qtree *t, struct buf *out);
/*
 * The diff-top table of two whole trees (borrowed): functions by the
 * change of their self, as text.
 */
int query__diff_top_write(struct qctx *q, const struct qtree *l, const struct qtree *r,
			  enum query_diff_mode mode, size_t limit, struct buf *out);

/* ---- encode: Graphviz (dot.c) --------------------------------------------------- */

/*
 * The call graph of functions of the whole tree `t` (borrowed) in Graphviz
 * DOT, at most `max_nodes` functions (>= 1) kept by cumulative value;
 * nothing is written for a tree of total 0.  See dot.c.
 */
int query__dot_write(struct qctx *q, const struct qtree *t, const char *profile_type,
		     size_t max_nodes, struct buf *out);

/* ---- encode: pprof (pprof_out.c) ------------------------------------------------ */

struct Perftools__Profiles__Profile;
/* Builds the merged pprof (owned by the arena `a`). */
int query__pprof_build(struct qctx *q, const struct qmerge *m, const char *profile_type,
		       int64_t from_ns, int64_t until_ns, struct arena *a,
		       struct Perftools__Profiles__Profile **out);
/* The pprof packed and gzipped, appended to `out`. */
int query__pprof_write_gz(struct qctx *q, const struct Perftools__Profiles__Profile *p,
			  struct buf *out);

#endif
