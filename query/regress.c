/*
 * regress.c - the statistics of a regression report: per-profile shares of
 * every function, Welch's t test per function and measure, Holm's
 * adjustment over the report, and the ranking (see regress.h).
 */
#include "query/regress.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/intern.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct fninfo {
	uint32_t key;          /* id in r->keys */
	int unnamed;
	const char *build_id;  /* unnamed: in r->strs; else "" */
	const char *mapping;
	const char *status;
};

/* One function seen in one profile: its shares of that profile's total. */
struct obs {
	uint32_t fn;
	uint32_t prof;
	double self, total;
};

/* A function in the profile being read. */
struct cur {
	int64_t self, total;
	uint32_t stamp;           /* the stack number that last counted its total */
	uint32_t seen;            /* profile number + 1 that last touched it */
};

struct regress {
	struct regress_params p;
	struct grow_budget budget;
	struct intern keys;       /* "N" name or "U" build ID / mapping */
	struct arena strs;        /* copied strings of unnamed functions */
	struct fninfo *fn;
	size_t nfn, fncap;

	/* The profile being read (between begin and end). */
	int in_profile, side;
	int64_t cur_value;
	struct cur *cur;          /* by function */
	size_t cur_cap;
	uint32_t stack_no;
	uint32_t *touched;
	size_t ntouched, touched_cap;

	struct obs *obs;
	size_t nobs, obscap;
	uint8_t *prof_side;
	size_t nprof, profcap;
	size_t nside[2];
	int64_t value[2];

	/* Results of regress_compute. */
	struct regress_row *rows;
	size_t rowcap;
	struct obs *sorted;
	size_t sortedcap;
	size_t *start;
	size_t startcap;
	double *scratch;
	size_t scratchcap;
	struct regress_stat **tests;
	size_t testcap;
	double logk_se, logk_df;  /* the standard error of log k and its degrees of freedom */
};

void regress_params_default(struct regress_params *p)
{
	memset(p, 0, sizeof(*p));
	p->alpha = REGRESS_DEFAULT_ALPHA;
	p->min_effect = REGRESS_DEFAULT_MIN_EFFECT;
	p->noise_floor = REGRESS_DEFAULT_NOISE_FLOOR;
	p->norm = REGRESS_NORM_UNCHANGED;
	p->max_bytes = REGRESS_DEFAULT_MAX_BYTES;
}

const char *regress_verdict_str(enum regress_verdict v)
{
	switch (v) {
	case REGRESS_UNCHANGED: return "unchanged";
	case REGRESS_REGRESSED: return "regressed";
	case REGRESS_IMPROVED: return "improved";
	case REGRESS_NEW: return "new";
	case REGRESS_GONE: return "gone";
	case REGRESS_NOISE: return "below noise floor";
	case REGRESS_TOO_FEW: return "too few profiles";
	case REGRESS_UNNAMED: return "unnamed";
	}
	return "?";
}

int regress_new(const struct regress_params *p, struct regress **out, struct err_msg *msg)
{
	struct regress *r;

	if (!(p->alpha > 0 && p->alpha <= 0.5))
		return err_set(msg, ERR_INVALID, "alpha: %g is outside (0, 0.5]", p->alpha);
	if (!(p->min_effect >= 0 && p->min_effect < 1e6))
		return err_set(msg, ERR_INVALID, "minEffect: %g must be >= 0", p->min_effect);
	if (!(p->noise_floor >= 0 && p->noise_floor < 1))
		return err_set(msg, ERR_INVALID, "noiseFloor: %g is outside [0, 1)", p->noise_floor);
	if (isnan(p->fail_on))
		return err_set(msg, ERR_INVALID, "failOn: not a number");
	if (p->norm != REGRESS_NORM_UNCHANGED && p->norm != REGRESS_NORM_TOTAL)
		return err_set(msg, ERR_INVALID, "normalize: unknown mode");
	assert(p->max_bytes > 0);
	r = calloc(1, sizeof(*r));
	if (!r)
		return err_set(msg, ERR_NOMEM, "out of memory (regression report)");
	r->p = *p;
	grow_budget_init(&r->budget, p->max_bytes);
	intern_init(&r->keys, REGRESS_MAX_FUNCTIONS, p->max_bytes, &r->budget.alloc);
	arena_init_alloc(&r->strs, p->max_bytes, &r->budget.alloc);
	*out = r;
	return 0;
}

void regress_free(struct regress *r)
{
	const struct grow_alloc *a;

	if (!r)
		return;
	a = &r->budget.alloc;
	intern_release(&r->keys);
	arena_release(&r->strs);
	grow_free(a, r->fn, r->fncap, sizeof(*r->fn));
	grow_free(a, r->cur, r->cur_cap, sizeof(*r->cur));
	grow_free(a, r->touched, r->touched_cap, sizeof(*r->touched));
	grow_free(a, r->obs, r->obscap, sizeof(*r->obs));
	grow_free(a, r->prof_side, r->profcap, sizeof(*r->prof_side));
	grow_free(a, r->rows, r->rowcap, sizeof(*r->rows));
	grow_free(a, r->sorted, r->sortedcap, sizeof(*r->sorted));
	grow_free(a, r->start, r->startcap, sizeof(*r->start));
	grow_free(a, r->scratch, r->scratchcap, sizeof(*r->scratch));
	grow_free(a, r->tests, r->testcap, sizeof(*r->tests));
	free(r);
}

/* Makes r->cur cover `n` functions, new entries zeroed. */
static int cover(struct regress *r, size_t n)
{
	size_t old = r->cur_cap;
	int rc;

	if (n <= old)
		return 0;
	if ((rc = GROW(r->cur, r->cur_cap, n, REGRESS_MAX_FUNCTIONS, &r->budget.alloc)))
		return rc;
	memset(r->cur + old, 0, (r->cur_cap - old) * sizeof(*r->cur));
	return 0;
}

/* Room for one more function, so that interning a new key cannot be left half done. */
static int reserve_fn(struct regress *r)
{
	int rc;

	if ((rc = GROW(r->fn, r->fncap, r->nfn + 1, REGRESS_MAX_FUNCTIONS, &r->budget.alloc)))
		return rc;
	return cover(r, r->nfn + 1);
}

static void add_fn(struct regress *r, uint32_t key, int unnamed, const char *build_id,
		   const char *mapping, const char *status, uint32_t *id)
{
	assert(key == r->nfn && r->nfn < r->fncap && r->nfn < r->cur_cap);
	r->fn[r->nfn] = (struct fninfo){ key, unnamed, build_id, mapping, status };
	*id = (uint32_t)r->nfn++;
}

int regress_fn(struct regress *r, const char *name, size_t len, uint32_t *id)
{
	char stackbuf[256];
	char *k = len + 1 <= sizeof(stackbuf) ? stackbuf : malloc(len + 1);
	uint32_t key;
	int rc;

	if (!k)
		return ERR_NOMEM;
	k[0] = 'N';
	memcpy(k + 1, name, len);
	if (intern_find(&r->keys, k, len + 1, &key) == 0)
		rc = 0;
	else if (!(rc = reserve_fn(r)))
		rc = intern_put(&r->keys, k, len + 1, &key);
	if (k != stackbuf)
		free(k);
	if (rc)
		return rc;
	if (key < r->nfn) {
		*id = key;
		return 0;
	}
	add_fn(r, key, 0, "", "", "", id);
	return 0;
}

static const char *copy_str(struct regress *r, const char *s)
{
	size_t n = strlen(s);
	char *c = arena_alloc(&r->strs, n + 1);

	if (c)
		memcpy(c, s, n + 1);
	return c;
}

int regress_fn_unnamed(struct regress *r, const char *build_id, const char *mapping,
		       const char *status, uint32_t *id)
{
	const char *by = build_id && build_id[0] ? build_id : mapping ? mapping : "";
	size_t len = strlen(by);
	char *k = malloc(len + 2);
	const char *b, *m, *s;
	uint32_t key;
	int rc;

	if (!k)
		return ERR_NOMEM;
	k[0] = 'U';
	k[1] = build_id && build_id[0] ? 'B' : 'M';
	memcpy(k + 2, by, len);
	if (intern_find(&r->keys, k, len + 2, &key) == 0)
		rc = 0;
	else if (!(rc = reserve_fn(r)))
		rc = intern_put(&r->keys, k, len + 2, &key);
	free(k);
	if (rc)
		return rc;
	if (key < r->nfn) {
		*id = key;
		return 0;
	}
	b = copy_str(r, build_id ? build_id : "");
	m = copy_str(r, mapping ? mapping : "");
	s = copy_str(r, status ? status : "");
	/* The key is interned: register it even when a copy failed. */
	add_fn(r, key, 1, b ? b : "", m ? m : "", s ? s : "", id);
	return 0;
}

int regress_profile_begin(struct regress *r, int side)
{
	assert(!r->in_profile && (side == 0 || side == 1));
	if (r->nprof >= REGRESS_MAX_PROFILES)
		return ERR_TOO_LARGE;
	r->in_profile = 1;
	r->side = side;
	r->cur_value = 0;
	r->ntouched = 0;
	return 0;
}

int regress_stack(struct regress *r, const uint32_t *fns, size_t depth, int64_t value)
{
	uint32_t prof_mark = (uint32_t)r->nprof + 1;
	int rc;

	assert(r->in_profile && depth >= 1 && value >= 0);
	if (value == 0)
		return 0;
	if (r->cur_value > INT64_MAX - value)
		return ERR_TOO_LARGE;
	if (++r->stack_no == UINT32_MAX) {
		for (size_t f = 0; f < r->cur_cap; f++)
			r->cur[f].stamp = 0;
		r->stack_no = 1;
	}
	for (size_t i = 0; i < depth; i++) {
		uint32_t f = fns[i];
		struct cur *c;

		assert(f < r->nfn);
		c = &r->cur[f];
		if (c->seen != prof_mark) {
			rc = GROW(r->touched, r->touched_cap, r->ntouched + 1, REGRESS_MAX_FUNCTIONS,
				  &r->budget.alloc);
			if (rc)
				return rc;
			r->touched[r->ntouched++] = f;
			c->seen = prof_mark;
			c->self = 0;
			c->total = 0;
		}
		if (c->stamp != r->stack_no) {
			c->stamp = r->stack_no;
			c->total += value;
		}
	}
	r->cur[fns[depth - 1]].self += value;
	r->cur_value += value;
	return 0;
}

int regress_profile_end(struct regress *r)
{
	const struct grow_alloc *a = &r->budget.alloc;
	double tot;
	int rc;

	assert(r->in_profile);
	r->in_profile = 0;
	if (r->cur_value <= 0) {
		/* No share is defined; the touched marks die with the number. */
		for (size_t i = 0; i < r->ntouched; i++)
			r->cur[r->touched[i]].seen = 0;
		return 0;
	}
	if ((rc = GROW(r->prof_side, r->profcap, r->nprof + 1, REGRESS_MAX_PROFILES, a)))
		return rc;
	if ((rc = GROW(r->obs, r->obscap, r->nobs + r->ntouched, SIZE_MAX / sizeof(*r->obs), a)))
		return rc;
	tot = (double)r->cur_value;
	for (size_t i = 0; i < r->ntouched; i++) {
		uint32_t f = r->touched[i];
		r->obs[r->nobs++] = (struct obs){ f, (uint32_t)r->nprof, (double)r->cur[f].self / tot,
						 (double)r->cur[f].total / tot };
	}
	r->prof_side[r->nprof++] = (uint8_t)r->side;
	r->nside[r->side]++;
	r->value[r->side] += r->cur_value;
	return 0;
}

/* ---- statistics ------------------------------------------------------------- */

/*
 * The continued fraction of the regularized incomplete beta function
 * I_x(a, b), evaluated by the modified Lentz method; converges quickly for
 * x < (a + 1) / (a + b + 2).
 */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, num, del;

		num = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
		d = 1 + num * d;
		c = 1 + num / c;
		d = 1 / (fabs(d) < tiny ? tiny : d);
		c = fabs(c) < tiny ? tiny : c;
		h *= d * c;
		num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
		d = 1 + num * d;
		c = 1 + num / c;
		d = 1 / (fabs(d) < tiny ? tiny : d);
		c = fabs(c) < tiny ? tiny : c;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-15)
			break;
	}
	return h;
}

static double inc_beta(double a, double b, double x)
{
	int s;
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma_r(a + b, &s) - lgamma_r(a, &s) - lgamma_r(b, &s) + a * log(x) +
		    b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double regress_t_pvalue(double t, double df)
{
	assert(df > 0);
	if (isnan(t))
		return 1;
	if (isinf(t))
		return 0;
	/* P(|T| >= |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2). */
	return inc_beta(df / 2, 0.5, df / (df + t * t));
}

double regress_t_quantile(double q, double df)
{
	double lo = 0, hi = 1, tail;

	assert(q > 0 && q < 1 && df > 0);
	if (q == 0.5)
		return 0;
	if (q < 0.5)
		return -regress_t_quantile(1 - q, df);
	tail = 2 * (1 - q); /* the two-sided p-value at the quantile */
	while (regress_t_pvalue(hi, df) > tail && hi < 1e12)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;
		if (regress_t_pvalue(mid, df) > tail)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

void regress_welch(size_t na, double ma, double va, size_t nb, double mb, double vb,
		   double *t, double *df, double *se)
{
	double ea = va / (double)na, eb = vb / (double)nb, s2 = ea + eb;

	assert(na >= 2 && nb >= 2);
	*se = sqrt(s2);
	if (s2 <= 0) {
		*df = (double)(na + nb - 2);
		*t = mb == ma ? 0 : mb > ma ? HUGE_VAL : -HUGE_VAL;
		return;
	}
	*t = (mb - ma) / *se;
	*df = s2 * s2 / (ea * ea / (double)(na - 1) + eb * eb / (double)(nb - 1));
}

/* ---- the report --------------------------------------------------------------- */

struct moments {
	double mean[2], var[2];
};

/* Mean and sample variance per side of one measure over the obs of a function. */
static void moments(const struct regress *r, const struct obs *o, size_t n, int total,
		    struct moments *m)
{
	double sum[2] = { 0, 0 }, ss[2] = { 0, 0 };
	size_t seen[2] = { 0, 0 };

	for (size_t i = 0; i < n; i++) {
		int s = r->prof_side[o[i].prof];
		sum[s] += total ? o[i].total : o[i].self;
		seen[s]++;
	}
	for (int s = 0; s < 2; s++)
		m->mean[s] = r->nside[s] ? sum[s] / (double)r->nside[s] : 0;
	for (size_t i = 0; i < n; i++) {
		int s = r->prof_side[o[i].prof];
		double d = (total ? o[i].total : o[i].self) - m->mean[s];
		ss[s] += d * d;
	}
	for (int s = 0; s < 2; s++) {
		/* Profiles without the function measured a share of 0. */
		ss[s] += (double)(r->nside[s] - seen[s]) * m->mean[s] * m->mean[s];
		m->var[s] = r->nside[s] >= 2 ? ss[s] / (double)(r->nside[s] - 1) : 0;
	}
}

static int cmp_test(const void *a, const void *b)
{
	const struct regress_stat *x = *(const struct regress_stat *const *)a;
	const struct regress_stat *y = *(const struct regress_stat *const *)b;
	return (x->p > y->p) - (x->p < y->p);
}

static int worse(const struct regress_stat *st)
{
	return st->verdict == REGRESS_REGRESSED || st->verdict == REGRESS_NEW;
}

/*
 * Rank groups, first to last: regressed on self (the functions that got
 * slower), regressed on total only (their callers), improved on self, on
 * total, the rest.
 */
static int rank_class(const struct regress_row *r)
{
	if (!r->flagged)
		return 0;
	if (worse(&r->self))
		return 4;
	if (worse(&r->total))
		return 3;
	return r->self_flagged ? 2 : 1;
}

static int cmp_row(const void *a, const void *b)
{
	const struct regress_row *x = a, *y = b;

	if (rank_class(x) != rank_class(y))
		return rank_class(y) - rank_class(x);
	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	{
		double ix = fmax(fabs(x->self.impact), fabs(x->total.impact));
		double iy = fmax(fabs(y->self.impact), fabs(y->total.impact));
		if (ix != iy)
			return ix < iy ? 1 : -1;
	}
	return strcmp(x->name, y->name);
}

/* Groups r->obs by function into r->sorted, r->start[f] .. r->start[f + 1]. */
static int group(struct regress *r)
{
	const struct grow_alloc *a = &r->budget.alloc;
	int rc;

	if ((rc = GROW(r->start, r->startcap, r->nfn + 1, REGRESS_MAX_FUNCTIONS + 1, a)) ||
	    (rc = GROW(r->sorted, r->sortedcap, r->nobs ? r->nobs : 1, SIZE_MAX / sizeof(*r->obs), a)))
		return rc;
	memset(r->start, 0, (r->nfn + 1) * sizeof(*r->start));
	for (size_t i = 0; i < r->nobs; i++)
		r->start[r->obs[i].fn + 1]++;
	for (size_t f = 0; f < r->nfn; f++)
		r->start[f + 1] += r->start[f];
	for (size_t i = 0; i < r->nobs; i++) {
		/* start[f] is the next free slot of f; shifted back below. */
		r->sorted[r->start[r->obs[i].fn]++] = r->obs[i];
	}
	for (size_t f = r->nfn; f > 0; f--)
		r->start[f] = r->start[f - 1];
	r->start[0] = 0;
	return 0;
}

/* A function's ratio of mean self shares, and the variance of its log. */
struct ratio {
	double r, var;
};

static int cmp_ratio(const void *a, const void *b)
{
	double x = ((const struct ratio *)a)->r, y = ((const struct ratio *)b)->r;
	return (x > y) - (x < y);
}

/*
 * k: the median over the judged named functions of the ratio of their
 * mean self shares, candidate over baseline.  Unweighted on purpose: a
 * weight by share or precision lets one big function hold half the weight,
 * and when that function is the one that changed, k follows it and every
 * other function reads as changed.  Each function is one vote, so k holds
 * while fewer than half of them changed.
 *
 * k is itself measured.  Each function's log ratio has the error
 * sqrt(cv0^2 + cv1^2), with cv the standard error of a side's mean over
 * the mean (the delta method); the median of n such ratios scattered by
 * their own noise has 1.2533 s / sqrt(n), s the typical (median) error.
 * Its degrees of freedom: min(n0, n1) - 1.  Every test adds it: the totals
 * of main and its kin, 100% of every profile, have no other variance, and
 * would otherwise turn k's noise into certainty.  (The spread of the ratios
 * themselves would not do: when many functions changed, as when hot paths
 * move, it measures the changes, not k.)
 */
static int norm_factor(struct regress *r, double *k)
{
	struct ratio *v;
	size_t n = 0;
	int rc;

	*k = 1;
	r->logk_se = 0;
	r->logk_df = 1;
	if (r->p.norm == REGRESS_NORM_TOTAL || r->nside[0] < 2 || r->nside[1] < 2)
		return 0;
	rc = GROW(r->scratch, r->scratchcap, 2 * (r->nfn ? r->nfn : 1),
		  2 * (size_t)REGRESS_MAX_FUNCTIONS, &r->budget.alloc);
	if (rc)
		return rc;
	v = (struct ratio *)r->scratch;
	for (size_t f = 0; f < r->nfn; f++) {
		struct moments m;
		double cv0, cv1;

		if (r->fn[f].unnamed)
			continue;
		moments(r, r->sorted + r->start[f], r->start[f + 1] - r->start[f], 0, &m);
		if (m.mean[0] <= 0 || m.mean[1] <= 0 ||
		    fmax(m.mean[0], m.mean[1]) < r->p.noise_floor)
			continue;
		cv0 = m.var[0] / (double)r->nside[0] / (m.mean[0] * m.mean[0]);
		cv1 = m.var[1] / (double)r->nside[1] / (m.mean[1] * m.mean[1]);
		v[n].r = m.mean[1] / m.mean[0];
		v[n++].var = cv0 + cv1;
	}
	if (n < 3)
		return 0;
	qsort(v, n, sizeof(*v), cmp_ratio);
	*k = n % 2 ? v[n / 2].r : (v[n / 2 - 1].r + v[n / 2].r) / 2;
	/* The median error: sort the variances in the ratios' place. */
	for (size_t i = 0; i < n; i++)
		v[i].r = v[i].var;
	qsort(v, n, sizeof(*v), cmp_ratio);
	{
		double mid = n % 2 ? v[n / 2].r : (v[n / 2 - 1].r + v[n / 2].r) / 2;
		r->logk_se = 1.2533 * sqrt(mid) / sqrt((double)n);
	}
	r->logk_df = (double)((r->nside[0] < r->nside[1] ? r->nside[0] : r->nside[1]) - 1);
	return 0;
}

/* One measure of one function: moments, Welch's test (raw p), interval. */
static void judge(const struct regress *r, const struct fninfo *fi, const struct moments *m,
		  double k, double tq_cache[2], struct regress_stat *st)
{
	double t, df, se, mb = m->mean[1] / k, vb = m->var[1] / (k * k);

	memset(st, 0, sizeof(*st));
	st->mean[0] = m->mean[0];
	st->mean[1] = mb;
	st->sd[0] = sqrt(m->var[0]);
	st->sd[1] = sqrt(vb);
	st->impact = mb - m->mean[0];
	st->change = m->mean[0] > 0 ? st->impact / m->mean[0] : mb > 0 ? HUGE_VAL : 0;
	st->lo = st->hi = st->impact;
	st->p = 1;
	if (fi->unnamed) {
		st->verdict = REGRESS_UNNAMED;
		return;
	}
	if (r->nside[0] < 2 || r->nside[1] < 2) {
		st->verdict = REGRESS_TOO_FEW;
		return;
	}
	if (fmax(m->mean[0], mb) < r->p.noise_floor) {
		st->verdict = REGRESS_NOISE;
		return;
	}
	regress_welch(r->nside[0], m->mean[0], m->var[0], r->nside[1], mb, vb, &t, &df, &se);
	if (r->logk_se > 0 && mb > 0) {
		/* k's own error: mb / k moves by mb * se(log k); Welch-Satterthwaite over three terms. */
		double e0 = m->var[0] / (double)r->nside[0], e1 = vb / (double)r->nside[1];
		double ek = mb * mb * r->logk_se * r->logk_se, s2 = e0 + e1 + ek;

		se = sqrt(s2);
		t = st->impact / se;
		df = s2 * s2 / (e0 * e0 / (double)(r->nside[0] - 1) + e1 * e1 / (double)(r->nside[1] - 1) +
				ek * ek / r->logk_df);
	}
	st->p = regress_t_pvalue(t, df);
	if (se > 0) {
		/* The quantile depends on df only; a one-entry cache saves the bisection. */
		double q;
		if (tq_cache[0] == df) {
			q = tq_cache[1];
		} else {
			q = regress_t_quantile(1 - r->p.alpha / 2, df);
			tq_cache[0] = df;
			tq_cache[1] = q;
		}
		st->lo = st->impact - q * se;
		st->hi = st->impact + q * se;
	}
	st->verdict = REGRESS_UNCHANGED; /* until Holm's adjustment says otherwise */
}

static void verdict(const struct regress_params *p, struct regress_stat *st)
{
	st->confidence = 1 - st->p;
	if (st->verdict != REGRESS_UNCHANGED)
		return;
	if (!(st->p < p->alpha) || fabs(st->change) < p->min_effect || st->impact == 0)
		return;
	if (st->mean[0] == 0)
		st->verdict = REGRESS_NEW;
	else if (st->mean[1] == 0)
		st->verdict = REGRESS_GONE;
	else
		st->verdict = st->impact > 0 ? REGRESS_REGRESSED : REGRESS_IMPROVED;
}

static int flagged(enum regress_verdict v)
{
	return v == REGRESS_REGRESSED || v == REGRESS_IMPROVED || v == REGRESS_NEW ||
	       v == REGRESS_GONE;
}

int regress_compute(struct regress *r, struct regress_result *out)
{
	const struct grow_alloc *a = &r->budget.alloc;
	double k, tq[2] = { -1, 0 };
	size_t ntests = 0;
	int rc;

	assert(!r->in_profile);
	if ((rc = group(r)) || (rc = norm_factor(r, &k)))
		return rc;
	if ((rc = GROW(r->rows, r->rowcap, r->nfn ? r->nfn : 1, REGRESS_MAX_FUNCTIONS, a)) ||
	    (rc = GROW(r->tests, r->testcap, 2 * r->nfn + 1, 2 * (size_t)REGRESS_MAX_FUNCTIONS, a)))
		return rc;
	for (size_t f = 0; f < r->nfn; f++) {
		const struct obs *o = r->sorted + r->start[f];
		size_t n = r->start[f + 1] - r->start[f];
		struct regress_row *row = &r->rows[f];
		struct moments ms, mt;
		const char *key = intern_str(&r->keys, r->fn[f].key);

		memset(row, 0, sizeof(*row));
		row->name = r->fn[f].unnamed ? key + 2 : key + 1;
		row->unnamed = r->fn[f].unnamed;
		row->build_id = r->fn[f].build_id;
		row->mapping = r->fn[f].mapping;
		row->status = r->fn[f].status;
		moments(r, o, n, 0, &ms);
		moments(r, o, n, 1, &mt);
		judge(r, &r->fn[f], &ms, k, tq, &row->self);
		judge(r, &r->fn[f], &mt, k, tq, &row->total);
		if (row->self.verdict == REGRESS_UNCHANGED)
			r->tests[ntests++] = &row->self;
		if (row->total.verdict == REGRESS_UNCHANGED)
			r->tests[ntests++] = &row->total;
	}
	/* Holm: the i-th smallest p (from 0) times (m - i), made monotone. */
	qsort(r->tests, ntests, sizeof(*r->tests), cmp_test);
	{
		double run = 0;
		for (size_t i = 0; i < ntests; i++) {
			double adj = fmin(1, r->tests[i]->p * (double)(ntests - i));
			run = fmax(run, adj);
			r->tests[i]->p = run;
		}
	}
	memset(out, 0, sizeof(*out));
	for (size_t f = 0; f < r->nfn; f++) {
		struct regress_row *row = &r->rows[f];

		verdict(&r->p, &row->self);
		verdict(&r->p, &row->total);
		row->self_flagged = flagged(row->self.verdict);
		row->flagged = row->self_flagged || flagged(row->total.verdict);
		row->score = fmax(row->self.confidence * fabs(row->self.impact),
				  row->total.confidence * fabs(row->total.impact));
		if (worse(&row->self) || worse(&row->total)) {
			out->regressed++;
			if (r->p.fail_on > 0 && ((worse(&row->self) && row->self.impact >= r->p.fail_on) ||
						 (worse(&row->total) && row->total.impact >= r->p.fail_on)))
				out->failed = 1;
		}
	}
	qsort(r->rows, r->nfn, sizeof(*r->rows), cmp_row);
	out->rows = r->rows;
	out->n = r->nfn;
	out->profiles[0] = r->nside[0];
	out->profiles[1] = r->nside[1];
	out->value[0] = r->value[0];
	out->value[1] = r->value[1];
	out->k = k;
	out->tests = ntests;
	out->params = r->p;
	return 0;
}
