/*
 * regress.h - the statistics of a regression report between two releases
 * (or any two selections): which functions cost more, by how much, and how
 * sure we are.  Pure computation: no store, no I/O; query/ feeds it the
 * stacks of each profile and encodes what it returns (docs/regressions.md).
 *
 * Model
 *   Side 0 is the baseline, side 1 the candidate.  Each side is a set of
 *   profiles, and each profile is a set of stacks (function ids, root
 *   first) with values.  Per profile and per function the report takes the
 *   SELF share (value of the stacks whose leaf is the function, over the
 *   profile's total) and the TOTAL share (value of the stacks the function
 *   appears in, once per stack however often it recurses).  The profiles of
 *   a side are repeated measurements of the same program: a function's
 *   shares across them give its mean and its variance, and Welch's t test
 *   (unequal variances, Welch-Satterthwaite degrees of freedom) judges the
 *   difference of the means.  p-values are adjusted by Holm's method over
 *   every test of the report, so `alpha` bounds the chance that a report of
 *   two samples of the same program flags anything at all.
 *
 * Normalisation
 *   Shares are of each profile's own total, so more traffic in one release
 *   does not read as a regression.  With REGRESS_NORM_UNCHANGED (the
 *   default) the candidate's shares are then divided by k, the (unweighted)
 *   median over the judged named functions of (candidate mean self share /
 *   baseline mean self share): if most functions did not change, k is the
 *   factor by which the candidate's total shrank relative to them, and the
 *   rescaled shares are costs in units of the baseline's total per unit of
 *   work.  Without it
 *   one function growing would make every other function look faster, and
 *   one function getting faster would make every other look slower.
 *   k is measured too: the error of log k (the median of the functions'
 *   log-ratio errors, times 1.2533 / sqrt(n)) enters every test as a third
 *   Welch term, or the totals of main and its callers, 100% of every
 *   profile, would read k's noise as certain change.
 *   REGRESS_NORM_TOTAL keeps plain shares (k = 1).
 *
 * Judgement (per function, for self and for total)
 *   judged      the larger mean share of the two sides is >= noise_floor,
 *               both sides have >= 2 profiles, and the function is named;
 *   impact      rescaled candidate mean - baseline mean: the cost it added,
 *               as a share of the baseline's total;
 *   change      impact / baseline mean (infinite for a new function);
 *   flagged     Holm-adjusted p < alpha and |change| >= min_effect;
 *               REGRESSED when impact > 0, IMPROVED when < 0.
 *   A function seen on one side only is NEW or GONE (judged the same way).
 *   Rows are ranked: regressed on self (the functions that got slower),
 *   regressed on total only (their callers), improved on self, improved on
 *   total, then the rest; within each group by confidence x |impact|.
 *
 * Unnamed code
 *   Frames the symbolizer could not name are registered per build ID with
 *   regress_fn_unnamed(): the row carries the build ID, the mapping and the
 *   caller's status text, its shares are reported, and it is never judged:
 *   two hex addresses of different builds say nothing about each other.
 *
 * Memory: every table is grown through one byte budget (max_bytes);
 * ERR_TOO_LARGE past it.  Threading: a struct regress is used by one thread.
 */
#ifndef UNHEX_QUERY_REGRESS_H
#define UNHEX_QUERY_REGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "query/query.h"

struct buf;
struct store_label;

enum regress_norm { REGRESS_NORM_UNCHANGED, REGRESS_NORM_TOTAL };

/* Defaults (docs/regressions.md). */
#define REGRESS_DEFAULT_ALPHA 0.01
#define REGRESS_DEFAULT_MIN_EFFECT 0.10
#define REGRESS_DEFAULT_NOISE_FLOOR 0.005
#define REGRESS_DEFAULT_MAX_BYTES ((size_t)256 << 20)
#define REGRESS_MAX_FUNCTIONS 4000000u
#define REGRESS_MAX_PROFILES 100000u

struct regress_params {
	double alpha;       /* family-wise false-positive bound, in (0, 0.5] */
	double min_effect;  /* smallest |relative change| flagged, >= 0 */
	double noise_floor; /* smallest share (of a side's total) judged, in [0, 1) */
	double fail_on;     /* the report fails when a regression's impact is >= this; <= 0 never */
	enum regress_norm norm;
	size_t max_bytes;   /* > 0 */
};

/* The defaults above, fail_on 0 (never), REGRESS_NORM_UNCHANGED. */
void regress_params_default(struct regress_params *p);

enum regress_verdict {
	REGRESS_UNCHANGED,  /* judged, not flagged */
	REGRESS_REGRESSED,
	REGRESS_IMPROVED,
	REGRESS_NEW,        /* absent from every baseline profile, flagged */
	REGRESS_GONE,       /* absent from every candidate profile, flagged */
	REGRESS_NOISE,      /* under the noise floor on both sides: not judged */
	REGRESS_TOO_FEW,    /* fewer than 2 profiles on a side: not judged */
	REGRESS_UNNAMED,    /* unnamed code: reported, never judged */
};

/* "unchanged", "regressed", ... (static). */
const char *regress_verdict_str(enum regress_verdict v);

/* One measure (self or total) of one function. */
struct regress_stat {
	double mean[2];     /* mean share per side; side 1 rescaled by 1/k */
	double sd[2];       /* standard deviation of the shares across profiles */
	double impact;      /* mean[1] - mean[0] */
	double change;      /* impact / mean[0]; HUGE_VAL when mean[0] is 0 */
	double lo, hi;      /* the (1 - alpha) Welch interval of impact (unadjusted) */
	double p;           /* Holm-adjusted two-sided p-value; 1 when not judged */
	double confidence;  /* 1 - p */
	enum regress_verdict verdict;
};

struct regress_row {
	const char *name;      /* owned by the struct regress */
	const char *build_id;  /* unnamed rows: the build ID ("" unknown); else "" */
	const char *mapping;   /* unnamed rows: the mapping's file; else "" */
	const char *status;    /* unnamed rows: the caller's symbolization status; else "" */
	int unnamed;
	struct regress_stat self, total;
	double score;          /* max over self and total of confidence x |impact| */
	int flagged;           /* self or total REGRESSED/IMPROVED/NEW/GONE */
	int self_flagged;      /* self is */
};

struct regress_result {
	struct regress_row *rows;  /* owned by the struct regress; ranked */
	size_t n;
	size_t profiles[2];        /* profiles with a non-zero total per side */
	int64_t value[2];          /* sum of the profiles' totals per side */
	double k;                  /* the normalisation factor (1 with NORM_TOTAL) */
	size_t tests;              /* hypotheses in the Holm family */
	size_t regressed;          /* rows whose self or total regressed or is new */
	int failed;                /* a regression's impact >= fail_on */
	struct regress_params params;
};

struct regress;

/* Checks `p` (ERR_INVALID naming the bad one); *out owned, free with regress_free. */
struct err_msg;
int regress_new(const struct regress_params *p, struct regress **out, struct err_msg *msg);
void regress_free(struct regress *r);

/*
 * The id of a named function (the `len` bytes of `name`, borrowed), the
 * same id for the same name: inline frames are functions of their own.
 */
int regress_fn(struct regress *r, const char *name, size_t len, uint32_t *id);

/*
 * The id of the unnamed code of one build ID: `build_id` (may be "" when
 * unknown, then `mapping` keys it), `mapping` and `status` are copied; the
 * status of the first registration stays.
 */
int regress_fn_unnamed(struct regress *r, const char *build_id, const char *mapping,
		       const char *status, uint32_t *id);

/*
 * Profiles: regress_profile_begin(side), stacks, regress_profile_end().
 * `fns` (borrowed) are ids from regress_fn*, root first, depth >= 1;
 * values must be >= 0.  A profile whose stacks sum to 0 is dropped.
 */
int regress_profile_begin(struct regress *r, int side);
int regress_stack(struct regress *r, const uint32_t *fns, size_t depth, int64_t value);
int regress_profile_end(struct regress *r);

/*
 * Computes the report.  *out (rows included) stays valid until the next
 * call or regress_free; calling it again after more profiles is allowed.
 */
int regress_compute(struct regress *r, struct regress_result *out);

/* ---- statistics, exposed for tests --------------------------------------- */

/* Two-sided p-value of Student's t with `df` (> 0) degrees of freedom. */
double regress_t_pvalue(double t, double df);
/* The q-quantile (0 < q < 1) of Student's t with `df` degrees of freedom. */
double regress_t_quantile(double q, double df);

/*
 * Welch's test of mean(b) - mean(a) from the counts, means and sample
 * variances of two samples (na, nb >= 2): sets *t, *df and *se; when both
 * variances are 0, *se is 0 and *t is 0 or +-HUGE_VAL.
 */
void regress_welch(size_t na, double ma, double va, size_t nb, double mb, double vb,
		   double *t, double *df, double *se);

/* ---- encoders -------------------------------------------------------------- */

/*
 * The report as JSON, plain text or Markdown (a pull-request comment),
 * appended to `out`: the header (sides, profiles, k, verdict), then every
 * flagged row, every unnamed row whose share reaches the noise floor, and
 * the first `extra` other rows in rank order.  `title[2]` names the sides
 * (borrowed, e.g. "1.4" and "1.5").
 */
int regress_write_json(const struct regress_result *res, const char *const title[2],
		       size_t extra, struct buf *out);
int regress_write_text(const struct regress_result *res, const char *const title[2],
		       size_t extra, struct buf *out);
int regress_write_markdown(const struct regress_result *res, const char *const title[2],
			   size_t extra, struct buf *out);

/* ---- releases (releases.c) ------------------------------------------------ */

/*
 * A service's releases: the values of the first of a configured list of
 * labels that its series carry (RELEASE_DEFAULT_LABELS), and for profiles
 * of series with none of them, the build ID of the profile's main
 * executable: the mapping, not a shared library, kernel or vDSO, with a
 * build ID, whose code the most samples were taken in (at the leaf).
 */
#define RELEASE_DEFAULT_LABELS \
	"version,release,service_version,service.version,service_git_ref,git_sha,git_commit"
#define RELEASE_MAX_LABELS 16
#define RELEASE_MAX_RELEASES 10000u
/* The pseudo-label of releases told apart by build ID. */
#define RELEASE_BY_BUILD_ID "build_id"

struct release_labels {
	char buf[512];
	const char *name[RELEASE_MAX_LABELS]; /* into buf */
	size_t n;
};

/*
 * Parses a comma-separated list of label names (NULL or "": the default)
 * into *out: ERR_INVALID for a name that is not a label name, too many or
 * too long.
 */
int release_labels_parse(const char *csv, struct release_labels *out, struct err_msg *msg);

/*
 * The index in `rl` of the first configured label that the label set `l`
 * carries with a non-empty value (in *value, borrowed from `l`), or -1.
 */
int release_label_of(const struct release_labels *rl, const struct store_label *l, size_t n,
		     const char **value);

struct store;
struct store_symbols;
struct debuginfo;

/*
 * The main executable of one profile (see above): per partition, a memo of
 * each stack's leaf mapping.  release_main_init, then release_main_of per
 * profile (its stacks and values, borrowed), release_main_release.  *out
 * is "" when no mapping with a build ID was sampled; it points into the
 * partition's symbols, valid until release_main_release.
 */
struct release_main {
	struct store *st;
	const char *tenant;
	uint32_t part;
	struct store_symbols *sym;
	uint32_t *leaf_map;  /* by stack id: mapping id + 1; 0 not yet known */
	size_t leaf_cap;
	struct { uint32_t map; int64_t value; } *acc;
	size_t nacc, acc_cap;
	size_t max_bytes;
};

void release_main_init(struct release_main *m, struct store *st, const char *tenant,
		       size_t max_bytes);
int release_main_of(struct release_main *m, uint32_t part, const uint32_t *stack_ids,
		    const int64_t *values, size_t n, const char **build_id, const char **file,
		    struct err_msg *msg);
void release_main_release(struct release_main *m);

struct release_query {
	const char *service;       /* required */
	const char *profile_type;  /* NULL: every type */
	int64_t from_ns, until_ns;
	const struct release_labels *labels;
	struct debuginfo *debuginfo; /* may be NULL: build ID status "unknown" */
	int64_t timeout_ns;        /* > 0 */
	size_t max_bytes;          /* > 0 */
};

/*
 * `GET /api/v1/releases`: the releases of a service in [from, until) as
 * JSON, oldest first: per release its label and value, time range,
 * profiles, series, values per profile type, and its build IDs with their
 * share of the samples, file and symbolization status (docs/regressions.md).
 */
int query_releases(struct store *st, const char *tenant, const struct release_query *rq,
		   struct buf *out, struct err_msg *msg);

/* A release resolved to a selection. */
struct release_sel {
	char query[4096];      /* "<profile type>{service_name=\"S\"[,label=\"name\"]}" */
	char label[128];       /* the label that names it, or RELEASE_BY_BUILD_ID */
	char build_id[160];    /* by build ID: the main executable's, else "" */
};

/*
 * Resolves release `name` of `service`: the series whose release label
 * (`label` when given, else the first of `rl` they carry) has that value,
 * else, when no series does, the profiles whose main executable has build
 * ID `name`.  `profile_type` may be NULL: the service's CPU type
 * (`:cpu:nanoseconds`, else the first in sort order) is taken.
 * ERR_NOT_FOUND with a message naming the service's releases' labels when
 * nothing matches.
 */
int release_resolve(struct store *st, const char *tenant, const char *service, const char *name,
		    const char *label, const struct release_labels *rl, const char *profile_type,
		    struct release_sel *out, struct err_msg *msg);

/* ---- the report over the store (regress_query.c) ---------------------------- */

enum query_regress_format { QUERY_REGRESS_JSON, QUERY_REGRESS_TEXT, QUERY_REGRESS_MARKDOWN };

struct query_regress_side {
	struct query_params p;  /* the selection: profile type required; borrowed strings */
	const char *build_id;   /* only profiles whose main executable has it; NULL: all */
	const char *title;      /* the side's name in the report */
};

struct query_regress_params {
	struct query_regress_side side[2];  /* baseline, candidate */
	struct regress_params stats;
	enum query_regress_format format;
	/* With QUERY_REGRESS_JSON: a "report" member holding the text or
	 * Markdown form too (QUERY_REGRESS_JSON: none), for `unhex regress`. */
	enum query_regress_format report;
	size_t extra;           /* rows beyond the flagged and unnamed ones */
};

/*
 * `GET /api/v1/regressions`: the regression report between two selections.
 * Runs the pipeline's select, collect (per profile), symbolize and build
 * stages over both sides at once, so a function is the same tree name on
 * both; then the statistics of regress.c.  Limits are side 0's.  Sets
 * *failed to the verdict (regress_result.failed).
 */
int query_regress(struct store *st, const char *tenant, const struct query_regress_params *rp,
		  struct buf *out, int *failed, struct err_msg *msg);

#endif
