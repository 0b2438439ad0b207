/*
 * query.h - the query engine: series selection, merged call trees, and the
 * encoders of every read API (Pyroscope flamebearer JSON and its diff form,
 * Connect JSON of querier.v1.QuerierService, gzipped pprof, top table and
 * folded stacks).
 *
 * Model
 *   A query names a profile type (`name:sample_type:sample_unit:period_type:
 *   period_unit`, the series label __profile_type__) and label matchers, and a
 *   time range [from_ns, until_ns).  The engine selects the matching series
 *   (postings for an equality matcher, a scan otherwise), sums the values of
 *   every profile in range by (partition, stack id), then builds one call
 *   tree over the distinct stacks, merging frames by function NAME so the
 *   same code in two builds lines up.  Frames without source lines are named
 *   `<mapping basename>+0x<file offset>` and remember their build ID.
 *
 * Output
 *   Every entry point appends its response bytes to a caller's struct buf
 *   and is web-agnostic: web/ and cli/ parse HTTP or argv into the
 *   parameters below.  A response counts against the query's byte budget:
 *   for the call, the buffer's cap is lowered to the budget when it has
 *   none or a larger one (and restored).  On failure nothing useful is in
 *   `out` (the caller resets it) and `msg` says what and where.
 *
 * Limits
 *   Each query has a deadline (ERR_TIMEOUT), a byte budget for its tables,
 *   trees and encoders (ERR_TOO_LARGE), and a budget of the stored sample
 *   bytes it reads (ERR_TOO_LARGE, "max_query_bytes"); selectors and JSON bodies are
 *   untrusted and rejected with ERR_INVALID and a message.  Times are
 *   nanoseconds here; HTTP strings are parsed by base/timeparse.h.
 *
 * Threading: every function is reentrant.  Queries read profiles and
 * symbols only through the store's read functions, which never take the
 * writer lock, so they never block ingest.  With a symbolizer (struct
 * query_limits) a query also writes: the service records the frames it
 * resolved in the store's symbol cache and the debug-info status of the
 * build IDs it looked up (store_aux_write, outside the writer lock), and the
 * symbolization memo takes its own lock to keep the answers.
 */
#ifndef UNHEX_QUERY_QUERY_H
#define UNHEX_QUERY_QUERY_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct err_msg;
struct store;

/* Defaults and maxima (documented in docs/query.md). */
#define QUERY_DEFAULT_MAX_NODES 8192
#define QUERY_MAX_MAX_NODES 1048576
#define QUERY_DEFAULT_TIMEOUT_NS (30LL * 1000000000LL)
#define QUERY_DEFAULT_MAX_BYTES ((size_t)1 << 30)
/* Sample bytes one query may read (query_limits.max_scan_bytes). */
#define QUERY_DEFAULT_MAX_SCAN_BYTES ((uint64_t)4 << 30)
/* Memory of the symbolization memo of a server. */
#define QUERY_DEFAULT_SYMMEMO_BYTES ((size_t)64 << 20)
#define QUERY_MAX_SELECTOR_BYTES 4096
#define QUERY_MAX_MATCHERS 64
/* Bytes of one regex (the value of a =~ or !~ matcher). */
#define QUERY_MAX_REGEX_BYTES 1024

/* ---- selectors ---------------------------------------------- */

enum query_match_op { QUERY_EQ, QUERY_NEQ, QUERY_RE, QUERY_NRE };

struct query_regex;

struct query_matcher {
	char *name;            /* owned by the selector */
	char *value;           /* owned by the selector; unescaped */
	enum query_match_op op;
	struct query_regex *re; /* =~ and !~ once compiled; owned */
};

struct query_selector {
	char *profile_type;    /* owned; NULL when the selector named none */
	struct query_matcher *m; /* owned array */
	size_t n;
	int compiled;          /* query_selector_compile() succeeded */
};

/*
 * Parses `[<profile type>]{<name><op>"<value>", ...}` (see docs/query.md).
 * `len` bytes of `s` are read (no NUL needed).  Fills *out, which the caller
 * releases with query_selector_release(); on failure *out is untouched.
 * A regex is only checked for its length and UTF-8 here: it is compiled by
 * query_selector_compile(), which series selection calls once a tenant has a
 * candidate series, so a client spends no regex work on a tenant without data.
 */
int query_selector_parse(const char *s, size_t len, struct query_selector *out,
			 struct err_msg *msg);

/*
 * Connect form: a profile type ID and a label selector given separately.
 * `profile_type` may be NULL when `label_selector` carries one.
 */
int query_selector_parse2(const char *profile_type, const char *label_selector,
			  struct query_selector *out, struct err_msg *msg);

/*
 * Compiles the regexes of `sel` (PCRE2, bounded: see docs/query.md); a no-op
 * once done.  ERR_INVALID or ERR_TOO_LARGE with a message naming the label.
 */
int query_selector_compile(struct query_selector *sel, struct err_msg *msg);

void query_selector_release(struct query_selector *sel);

/*
 * 1 when the sorted or unsorted label set satisfies every matcher, 0 when
 * not; ERR_INVALID (with a message) when a regex needed more than its match
 * bounds.  `sel` must be compiled; a selector is used by one thread at a time.
 */
struct store_label;
int query_selector_matches(const struct query_selector *sel,
			   const struct store_label *labels, size_t n, struct err_msg *msg);

/* ---- parameters --------------------------------------------------------- */

struct debuginfo;
struct grow_alloc;

/*
 * A query's share of a memory budget it shares with other work (web's
 * --max-inflight-bytes).  The query holds `held` bytes of it when it
 * starts; before its tables grow past what it holds it asks grow() for
 * more, QUERY_RESERVE_STEP at least, never past its max_bytes.  grow()
 * returns 0 (the bytes are held until the caller releases them, after the
 * query), or ERR_UNAVAILABLE: the query then fails with ERR_UNAVAILABLE and
 * a "server busy" message.  Called on the query's thread.
 */
struct query_reserve {
	int (*grow)(void *ctx, size_t bytes);
	void *ctx;     /* borrowed by grow */
	size_t held;   /* bytes held before the query starts */
};
#define QUERY_RESERVE_STEP ((size_t)16 << 20)

struct query_limits {
	int64_t timeout_ns;   /* 0 picks QUERY_DEFAULT_TIMEOUT_NS */
	size_t max_bytes;     /* 0 picks QUERY_DEFAULT_MAX_BYTES */
	/*
	 * Sample bytes the query may read, 0 picking QUERY_DEFAULT_MAX_SCAN_BYTES:
	 * each profile it reads counts 64 bytes plus 12 per (stack, value) pair
	 * (20 with a span id), its size decoded.  Reading stops past it with
	 * ERR_TOO_LARGE and a message naming max_query_bytes (docs/limits.md).
	 * Counted by the flame graph, pprof, top, series and heatmap reads and
	 * AnalyzeQuery; label and metadata calls read no samples.
	 */
	uint64_t max_scan_bytes;
	/* Set to 1 when reading stopped at max_scan_bytes (borrowed; may be
	 * NULL), so a caller can count that refusal apart from other ERR_TOO_LARGE. */
	int *scan_refused;
	/* The shared budget the query's tables are charged to as they grow
	 * (borrowed; NULL: only max_bytes bounds them). */
	const struct query_reserve *reserve;
	/* Where the query's tables get their bytes (borrowed; NULL: the C
	 * heap): the server's is a pool of size classes (base/blockpool.h), so
	 * a query reuses the pages earlier ones touched instead of faulting in
	 * fresh ones.  Must allow use from any thread. */
	const struct grow_alloc *heap;
	/*
	 * Query-time symbolization (borrowed; NULL: frames without lines stay
	 * `binary+0xoffset`).  With a service, the distinct unsymbolized
	 * locations of each merged result are resolved before the name tree is
	 * built, waiting at most the service's budget; responses then carry a
	 * "symbolization" object (docs/symbolization.md).
	 */
	struct debuginfo *symbolizer;
	/*
	 * The symbolization memo (borrowed; may be NULL): frames resolved by
	 * earlier queries, per location, so a repeated query skips the
	 * service.  Used only with a symbolizer, which it must belong to.
	 */
	struct query_symmemo *symmemo;
};

/*
 * A symbolization memo for the queries of one server: thread-safe, holding
 * at most `max_bytes` (0 picks QUERY_DEFAULT_SYMMEMO_BYTES; when full it
 * starts over) of resolved frames by (tenant, partition, location), emptied
 * whenever `svc` reports replaced debug info.  Returns 0 or ERR_NOMEM.
 */
struct query_symmemo;

int query_symmemo_new(struct debuginfo *svc, size_t max_bytes, struct query_symmemo **out);
void query_symmemo_free(struct query_symmemo *m);
/* Prometheus text of the memo's counters (lookups, resets, bytes). */
int query_symmemo_metrics(struct query_symmemo *m, struct buf *out);

struct query_params {
	/* Selector: `query` alone ("type{...}"), or profile_type plus an
	 * optional label selector in `query` ("{...}"). Borrowed. */
	const char *query;
	const char *profile_type;
	int64_t from_ns;      /* inclusive */
	int64_t until_ns;     /* exclusive */
	int64_t max_nodes;    /* 0 picks QUERY_DEFAULT_MAX_NODES */
	struct query_limits limits;
	/* Pyroscope's stack trace selector: only stacks whose frames, root
	 * first, begin with these names.  n_call_site 0: every stack. Borrowed. */
	const char *const *call_site;
	size_t n_call_site;
	/* Pyroscope's span selector: only the samples taken in these spans
	 * (sorted ascending, unique, none 0).  n_span_ids 0: every sample.
	 * Borrowed. */
	const uint64_t *span_ids;
	size_t n_span_ids;
	/* Pyroscope's profile id selector: only the profiles with these ids
	 * (16-byte UUIDs, sorted by memcmp, unique, none nil).  n_profile_ids
	 * 0: every profile.  Borrowed. */
	const uint8_t (*profile_ids)[16];
	size_t n_profile_ids;
	/* query_render's timeline: SelectSeries' groupBy (the first names the
	 * `groups` keys; borrowed) and aggregation (average, else sum). */
	const char *const *group_by;
	size_t n_group_by;
	int average;
};

/* ---- flame graphs --------------------------------------------------------- */

/*
 * `GET /pyroscope/render`: flamebearer JSON, format "single", with a
 * timeline of totals per step.
 */
int query_render(struct store *st, const char *tenant, const struct query_params *p,
		 struct buf *out, struct err_msg *msg);

/*
 * `GET /pyroscope/render-diff`: flamebearer JSON, format "double", of the
 * union of both trees.  Both sides must have the same profile type.
 */
int query_render_diff(struct store *st, const char *tenant, const struct query_params *left,
		      const struct query_params *right, struct buf *out, struct err_msg *msg);

/* `GET /api/v1/pprof`: the merged profile as a gzipped pprof. */
int query_pprof(struct store *st, const char *tenant, const struct query_params *p,
		struct buf *out, struct err_msg *msg);

/* Functions a DOT call graph keeps when the query names no maxNodes (Pyroscope's). */
#define QUERY_DOT_DEFAULT_MAX_NODES 100

/*
 * `GET /pyroscope/render?format=dot`: the merged profile as a Graphviz DOT
 * call graph of functions (nodes with flat and cumulative values, edges
 * caller -> callee), at most p->max_nodes functions (0 picks
 * QUERY_DOT_DEFAULT_MAX_NODES) kept by cumulative value; nothing is
 * appended when the selection has no samples (see docs/query.md).
 */
int query_dot(struct store *st, const char *tenant, const struct query_params *p,
	      struct buf *out, struct err_msg *msg);

enum query_top_sort { QUERY_TOP_BY_SELF, QUERY_TOP_BY_TOTAL };

/*
 * Top table as text: one line per function name, "self self% total total%
 * name", sorted, at most `limit` lines (0: all).  Not truncated by maxNodes.
 */
int query_top(struct store *st, const char *tenant, const struct query_params *p,
	      enum query_top_sort sort, size_t limit, struct buf *out, struct err_msg *msg);

/* Folded stacks: "root;caller;callee value\n" per node with self > 0. */
int query_folded(struct store *st, const char *tenant, const struct query_params *p,
		 struct buf *out, struct err_msg *msg);

/* How diff-top compares: shares of each side's total, or raw values. */
enum query_diff_mode { QUERY_DIFF_RELATIVE, QUERY_DIFF_ABSOLUTE };

/*
 * `GET /api/v1/diff-top`: the functions of `left` (baseline) and `right`
 * (comparison) by the change of their self, largest first, at most `limit`
 * rows (0: all), as text: a "# mode ..." line with both totals, a header,
 * then per function its self and total on each side and their changes,
 * tagged " [new]" or " [removed]" when absent from one side.  Neither side
 * is truncated by maxNodes; the limits are the left side's.
 */
int query_diff_top(struct store *st, const char *tenant, const struct query_params *left,
		   const struct query_params *right, enum query_diff_mode mode, size_t limit,
		   struct buf *out, struct err_msg *msg);

/*
 * The unwinding signatures behind the "unwinding" array of the
 * symbolization object (docs/symbolization.md, "Unwinding or
 * symbolization").  query_stack_entry: 1 when `function` (demangled; NULL
 * gives 0) is one a complete user-space stack starts from (_start,
 * __libc_start_main, clone, clone3, start_thread, runtime.goexit,
 * runtime.mstart, ...).  query_interpreter_binary: 1 when `binary` (a base
 * name) is an interpreter's or a VM's (python, ruby, node, java, ...).
 */
int query_stack_entry(const char *function);
int query_interpreter_binary(const char *binary);

/*
 * `GET /api/v1/symbolization`: for the selection of `p`, per build ID of
 * the unsymbolized mappings its status, reason and the share of samples it
 * leaves unnamed, and the overall unsymbolized share (JSON object).  Needs
 * p->limits.symbolizer (ERR_UNAVAILABLE without).
 */
int query_symbolization(struct store *st, const char *tenant, const struct query_params *p,
			struct buf *out, struct err_msg *msg);

/* ---- Connect (querier.v1.QuerierService) ---------------------------------- */

/*
 * Handles one Connect JSON call: `method` is the last path element
 * ("ProfileTypes", "LabelNames", "LabelValues", "Series",
 * "SelectMergeStacktraces", "SelectMergeProfile", "SelectSeries", "Diff"),
 * `body` the request message in proto3 JSON (members naming no field are
 * ignored; empty: all defaults).  Appends the JSON response message to
 * `out`: proto3 JSON with every field written (SelectMergeProfile: without
 * defaults), see query/connect.c.  Unknown method: ERR_NOT_FOUND.  `lim`
 * may be NULL for the defaults.
 */
int query_connect(struct store *st, const char *tenant, const char *method,
		  const void *body, size_t len, const struct query_limits *lim,
		  struct buf *out, struct err_msg *msg);

/*
 * The same call in Connect's binary protobuf codec (`application/proto`):
 * `body` is the packed request message of proto/querier.proto or
 * proto/types.proto (empty: all defaults), and the packed response message
 * is appended to `out` (SelectMergeProfile: a pprof Profile).  Runs the same
 * method implementation as query_connect, so both codecs give the same
 * result.  A body that is not the method's request message: ERR_INVALID
 * with a message naming the message type.  Errors are reported through the
 * return code and `msg` only; Connect error bodies are JSON in both codecs.
 */
int query_connect_proto(struct store *st, const char *tenant, const char *method,
			const void *body, size_t len, const struct query_limits *lim,
			struct buf *out, struct err_msg *msg);

/*
 * The LabelNames and LabelValues methods as typed calls (the legacy label
 * routes use them): `req` is borrowed; the response and its strings are
 * allocated in the caller's arena `a` (ERR_TOO_LARGE past its cap): names
 * sorted and distinct.  Matchers are selectors; with start or end (Unix ms)
 * only series with a profile in range count.
 */
struct arena;
struct Types__V1__LabelNamesRequest;
struct Types__V1__LabelNamesResponse;
struct Types__V1__LabelValuesRequest;
struct Types__V1__LabelValuesResponse;

int query_label_names(struct store *st, const char *tenant,
		      const struct Types__V1__LabelNamesRequest *req,
		      const struct query_limits *lim, struct arena *a,
		      struct Types__V1__LabelNamesResponse **out, struct err_msg *msg);
int query_label_values(struct store *st, const char *tenant,
		       const struct Types__V1__LabelValuesRequest *req,
		       const struct query_limits *lim, struct arena *a,
		       struct Types__V1__LabelValuesResponse **out, struct err_msg *msg);

#endif
