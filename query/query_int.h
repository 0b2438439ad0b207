/*
 * query_int.h - private design of the query engine, for the query/ sources and its
 * tests.
 *
 * Memory
 *   A query owns one struct qctx: its deadline, its byte budget (struct qmem)
 *   and the message of its failure.  Every growable table of a query (the
 *   stack aggregation, memo tables, tree nodes, names) is grown through
 *   qmem_grow(), which charges the budget, so a query fails with
 *   ERR_TOO_LARGE instead of exhausting the machine.
 *
 * Names
 *   struct qnames interns strings: id 0 is "total" (the root), id 1 is
 *   "other" (folded children).  Strings live in an arena charged to the
 *   budget.
 *
 * Tree
 *   struct qtree is a flat array of nodes; node 0 is the root.  A child is
 *   always created after its parent, so totals are propagated by one pass
 *   from the last node to the first.  Children are keyed by name id through
 *   one hash table (parent, name) -> node.  Each node carries two value
 *   sides: side 0 for single trees and the left of a diff, side 1 for the
 *   right of a diff.
 *
 * Merge
 *   qmerge_collect() sums values per (partition, stack id) over every
 *   selected series; qmerge_tree() then resolves each distinct stack once,
 *   walking the stack trie root-ward only until a memoized trie node, so a
 *   prefix shared by many stacks is resolved once.
 */
#ifndef UNHEX_QUERY_QUERY_INT_H
#define UNHEX_QUERY_QUERY_INT_H

#include "base/arena.h"
#include "query/query.h"

#include <stddef.h>
#include <stdint.h>

struct buf;
struct store_symbols;

/* ---- budget and deadline ------------------------------------------------- */

struct qmem {
	size_t used;
	size_t cap;
};

struct qctx {
	struct store *st;
	const char *tenant;
	int64_t deadline_ns;   /* monotonic clock */
	struct qmem mem;
	struct err_msg *msg;
	unsigned tick;
	struct debuginfo *symbolizer;   /* borrowed from the limits; may be NULL */
	struct query_symmemo *symmemo;  /* borrowed from the limits; may be NULL */
};

void qctx_init(struct qctx *q, struct store *st, const char *tenant,
	       const struct query_limits *lim, struct err_msg *msg);
/* Returns ERR_TIMEOUT (with a message) once the deadline passed. */
int qctx_check(struct qctx *q);

/*
 * Grows *p (an array of `elem`-byte items, *cap items allocated) to hold at
 * least `need` items, charging the budget.  Returns 0, ERR_NOMEM or
 * ERR_TOO_LARGE (with a message naming `what`).
 */
int qmem_grow(struct qctx *q, void **p, size_t *cap, size_t elem, size_t need,
	      const char *what);
/* Frees an array grown by qmem_grow and refunds the budget. */
void qmem_free(struct qctx *q, void *p, size_t cap, size_t elem);

/* ---- u64 -> u32 hash map (open addressing; key 0 is allowed) ------------ */

/*
 * A map from uint64 keys to uint32 values (UINT32_MAX is not a value).
 * Open addressing by default.  A map made with qmap_init_dense() is for keys
 * `part << 32 | id` where ids are the store's dense symbol or stack ids: the
 * first QMAP_DENSE_PARTS partitions get flat arrays indexed by id, which a
 * merge over ~150k trie nodes needs (a hash probe per node is a cache miss);
 * keys that do not fit (other partitions, ids far beyond the entries held)
 * go to the hash table.
 */
enum { QMAP_DENSE_PARTS = 4 };

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
	int dense;        /* made by qmap_init_dense */
	unsigned n_dense;
	size_t dense_entries;
	struct qmap_dense d[QMAP_DENSE_PARTS];
};

void qmap_init(struct qmap *m);
void qmap_init_dense(struct qmap *m);
void qmap_release(struct qctx *q, struct qmap *m);
/* qmap_get returns 1 and sets *val when `key` is present, else 0. */
int qmap_get(const struct qmap *m, uint64_t key, uint32_t *val);
int qmap_put(struct qctx *q, struct qmap *m, uint64_t key, uint32_t val);

/* ---- interned names -------------------------------------------------------- */

enum { QNAME_TOTAL = 0, QNAME_OTHER = 1 };

struct qnames {
	struct arena strs;
	const char **s;
	uint32_t *len;
	size_t n, cap;
	uint32_t *slots;  /* hash index: name id + 1, 0 empty */
	size_t nslots;
};

int qnames_init(struct qctx *q, struct qnames *nm);
void qnames_release(struct qctx *q, struct qnames *nm);
int qnames_intern(struct qctx *q, struct qnames *nm, const char *s, size_t len, uint32_t *id);

/* ---- call tree ------------------------------------------------------------- */

struct qnode {
	uint32_t name;
	uint32_t parent;       /* UINT32_MAX for the root */
	uint32_t first_child;  /* UINT32_MAX when none */
	uint32_t next_sibling; /* UINT32_MAX when none */
	uint32_t build_id;     /* name id of the build ID of a raw frame, 0 none */
	int64_t self[2];
	int64_t total[2];
};

struct qtree {
	struct qnames names;
	struct qnode *nodes;
	size_t n, cap;
	struct qmap children;  /* parent << 32 | name -> node */
};

#define QNONE UINT32_MAX

int qtree_init(struct qctx *q, struct qtree *t);
void qtree_release(struct qctx *q, struct qtree *t);
/* Finds or creates the child `name` of `parent`. */
int qtree_child(struct qctx *q, struct qtree *t, uint32_t parent, uint32_t name, uint32_t *out);
/* Sets every total from the selves (both sides). */
void qtree_totals(struct qtree *t);
/* Adds every node of `src` (side 0) into `dst` side `side`, by name. */
int qtree_add(struct qctx *q, struct qtree *dst, const struct qtree *src, int side);
/*
 * Writes into `dst` (initialized, empty) the nodes of `src` whose total (max
 * of both sides) is at least the `max_nodes`-th biggest; the rest of each
 * parent's children are folded into a child "other".
 */
int qtree_truncate(struct qctx *q, const struct qtree *src, size_t max_nodes, struct qtree *dst);
/* Children of `node` sorted by name, into *out (owned; free()). */
int qtree_sorted_children(const struct qtree *t, uint32_t node, uint32_t **out, size_t *n);

/* ---- symbol views, one per partition a query touches ------------------- */

struct qviews {
	uint32_t *part;
	struct store_symbols **sym;
	size_t n, cap;
};

/* Returns the view of `part`, getting it from the store on first use. */
int qviews_get(struct qctx *q, struct qviews *v, uint32_t part, struct store_symbols **out);
void qviews_release(struct qviews *v);

/* ---- merge --------------------------------------------------------------- */

struct qstack {
	uint32_t part;
	uint32_t stack;
	int64_t value;
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
};

void qmerge_init(struct qmerge *m);
void qmerge_release(struct qctx *q, struct qmerge *m);

/* Calls cb for every series of sel (postings for an equality matcher). */
typedef int (*qseries_cb)(void *ctx, uint64_t series_id, uint32_t part,
			  const struct store_label *labels, size_t n);
int qselect_series(struct qctx *q, const struct query_selector *sel, qseries_cb cb, void *ctx);

/* Sums every profile of every series of `sel` in [from, until). */
int qmerge_collect(struct qctx *q, const struct query_selector *sel, int64_t from_ns,
		   int64_t until_ns, struct qmerge *m);
/* Builds the name tree of the collected stacks into `t` (initialized). */
int qmerge_tree(struct qctx *q, const struct qmerge *m, struct qtree *t);

/* Parses the profile selection of `p` (query/profile_type), checked. */
int qparams_selector(const struct query_params *p, struct query_selector *sel,
		     struct err_msg *msg);

/* Runs selection + merge + tree for `p`: the whole tree, untruncated. */
int qquery_tree(struct qctx *q, const struct query_params *p, struct qmerge *m,
		struct qtree *t, char **profile_type);

/* ---- query-time symbolization (symbolize_step.c) ------------------------- */

/*
 * After qmerge_collect: the distinct locations reachable from the merged
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
 * qmemo_begin and qmemo_unlock the memo is read-locked and qmemo_get may be
 * called; frames it returns stay valid until qmemo_end.  New answers go in
 * between qmemo_put_begin (write-locked) and qmemo_put_end, and are dropped
 * when the service's debug info changed since qmemo_begin.  With a NULL
 * memo every call is a no-op and qmemo_get finds nothing.
 */
struct qmemo_gen;
struct qmemo_tenant;

struct qmemo_view {
	struct query_symmemo *m;
	struct qmemo_gen *g;            /* referenced until qmemo_end */
	const struct qmemo_tenant *t;   /* while read-locked */
	struct qmemo_tenant *put;       /* while write-locked */
	uint64_t svc_gen;
	uint64_t hits, stored;
	int locked;
};

void qmemo_begin(struct query_symmemo *m, const char *tenant, struct qmemo_view *v);
/* 1 and the frames (n may be 0: nothing known there), or 0 when not memoized. */
int qmemo_get(struct qmemo_view *v, uint32_t part, uint32_t loc, int leaf,
	      const struct qsym_frame **f, uint32_t *n);
void qmemo_unlock(struct qmemo_view *v);
void qmemo_put_begin(struct qmemo_view *v, const char *tenant);
void qmemo_put(struct qmemo_view *v, uint32_t part, uint32_t loc, int leaf,
	       const struct qsym_frame *f, uint32_t n);
void qmemo_put_end(struct qmemo_view *v);
void qmemo_end(struct qmemo_view *v);

/* Runs the step for `m` (q->symbolizer set); fills m->sym. */
int qsym_step(struct qctx *q, struct qmerge *m);
void qsym_free(struct qctx *q, struct qsym *s);
/*
 * Whether location `loc` of partition `part` is a kernel frame: its mapping
 * is named "[kernel..." or "[vmlinux...", or its address is in the upper
 * half (0 with s NULL).  The location just root-ward of a kernel frame is
 * the PC the kernel was entered from (an interrupt, fault or system call),
 * not a return address: it is resolved as a leaf, like the stack's own
 * location.  Known for every location of the merge after qsym_step.
 */
int qsym_kernel(const struct qsym *s, uint32_t part, uint32_t loc);
/* Resolved frames of a location, innermost first; 0 when it has none. */
size_t qsym_frames(const struct qsym *s, uint32_t part, uint32_t loc, int leaf,
		   const struct qsym_frame **frames);
/*
 * Appends `,"symbolization":{...}` over the merges given (NULL entries
 * skipped) when any has unresolved frames; nothing otherwise.
 */
int qsym_json(const struct qmerge *const *ms, size_t n, struct buf *out);

/* ---- encoders --------------------------------------------------------------- */

/*
 * Appends `"names":[...],"levels":[...]` of a single (4-tuples) or double
 * (7-tuples) tree; `connect` writes levels as [{"values":["int64",...]}].
 * Names are those the levels use, in order of first use; names[0] "total".
 */
int qfb_encode(const struct qtree *t, int dbl, int connect, struct buf *out, int64_t *max_self);
/* Units for the flamebearer metadata from the sample type and unit. */
const char *qfb_units(const char *sample_type, const char *sample_unit);
/*
 * Runs both sides of a diff and combines them into `dt` (left on side 0,
 * right on side 1), truncated to the left side's maxNodes.
 */
int qdiff_tree(struct qctx *q, const struct query_params *left,
	       const struct query_params *right, struct qmerge *ml, struct qmerge *mr,
	       struct qtree *dt, char **profile_type);
/* Runs `p` and truncates to its maxNodes: *tr initialized by the callee. */
int qfb_query(struct qctx *q, const struct query_params *p, struct qmerge *m,
	      struct qtree *tr, char **profile_type);

/* Splits a profile type ID into its 5 parts (pointers into `buf`). */
int qprofile_type_split(const char *id, char *buf, size_t bufsz, const char *parts[5]);

struct Perftools__Profiles__Profile;
/* Builds the merged pprof (owned by the arena `a`). */
int qpprof_build(struct qctx *q, const struct qmerge *m, const char *profile_type,
		 int64_t from_ns, int64_t until_ns, struct arena *a, struct Perftools__Profiles__Profile **out);
/* proto3 JSON of a pprof (google.v1.Profile). */
int qpprof_json(const struct Perftools__Profiles__Profile *p, struct buf *out);

/* ---- JSON input ------------------------------------------------------------ */

enum qjson_type { QJ_NULL, QJ_BOOL, QJ_NUM, QJ_STR, QJ_ARR, QJ_OBJ };

struct qjson {
	enum qjson_type type;
	const char *s;        /* string (unescaped, NUL-terminated) or number text */
	size_t len;
	int b;
	struct qjson *kids;   /* array items or object values */
	const char **keys;    /* object keys */
	size_t n;
};

/* Parses `len` bytes into a tree allocated in `a`; strict, depth-capped. */
int qjson_parse(const char *s, size_t len, struct arena *a, struct qjson **out,
		struct err_msg *msg);
const struct qjson *qjson_get(const struct qjson *obj, const char *key);
/* Reads an int64 given as a JSON number or a decimal string; absent -> dflt. */
int qjson_int(const struct qjson *obj, const char *key, int64_t dflt, int64_t *out,
	      struct err_msg *msg);
int qjson_double(const struct qjson *obj, const char *key, double *out, struct err_msg *msg);
/* Returns the string of `key`, "" when absent; ERR_INVALID if not a string. */
int qjson_str(const struct qjson *obj, const char *key, const char **out, struct err_msg *msg);

/*
 * Connect protobuf requests (connect.c): unpacks the request message of
 * `method` from `len` bytes into the JSON request tree the method parses
 * (keys are the proto3 JSON names; int64 and double as number text, proto3
 * zero values present, empty repeated fields and unset messages absent).
 * Everything lives in `a`.  ERR_INVALID for bytes that are not the message,
 * ERR_TOO_LARGE past the arena's cap, ERR_NOT_FOUND for an unknown method.
 */
int qconnect_pb_request(const char *method, const void *body, size_t len, struct arena *a,
			struct qjson **out, struct err_msg *msg);

#endif
