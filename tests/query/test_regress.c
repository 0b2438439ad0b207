/*
 * test_regress.c - the statistics of regression reports: Student's t and
 * Welch's test against closed forms, a report computed by hand, recursion,
 * inline frames, new/gone and unnamed code, the normalisation, the
 * false-positive rate over repeated same-distribution pairs and the power
 * against one function made 2x slower, the encoders and the limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "query/regress.h"

static void test_t_distribution(void **state)
{
	(void)state;
	/* df 1 is Cauchy: p = 1 - 2 atan(|t|) / pi. */
	for (double t = 0; t < 50; t += 0.7)
		assert_true(fabs(query_regress_t_pvalue(t, 1) - (1 - 2 * atan(t) / M_PI)) < 1e-10);
	/* df 2: p = 1 - |t| / sqrt(t^2 + 2). */
	for (double t = 0; t < 50; t += 0.3)
		assert_true(fabs(query_regress_t_pvalue(-t, 2) - (1 - t / sqrt(t * t + 2))) < 1e-10);
	/* df 4: F(t) = 1/2 + 3/8 u (1 - t^2 / (12 (1 + t^2 / 4))), u = t / sqrt(1 + t^2 / 4). */
	for (double t = 0; t < 30; t += 0.25) {
		double w = 1 + t * t / 4, u = t / sqrt(w);
		double F = 0.5 + 0.375 * u * (1 - t * t / (12 * w));
		assert_true(fabs(query_regress_t_pvalue(t, 4) - 2 * (1 - F)) < 1e-10);
	}
	assert_true(query_regress_t_pvalue(0, 7.5) == 1);
	assert_true(query_regress_t_pvalue(HUGE_VAL, 3) == 0);
	/* Quantiles from the tables. */
	assert_true(fabs(query_regress_t_quantile(0.975, 2) - 4.302653) < 1e-5);
	assert_true(fabs(query_regress_t_quantile(0.995, 10) - 3.169273) < 1e-5);
	assert_true(fabs(query_regress_t_quantile(0.975, 30) - 2.042272) < 1e-5);
	assert_true(fabs(query_regress_t_quantile(0.975, 1e7) - 1.959964) < 1e-5);
	assert_true(fabs(query_regress_t_quantile(0.025, 2) + 4.302653) < 1e-5);
}

static void test_welch(void **state)
{
	double t, df, se;

	(void)state;
	/* a = {1, 2, 3}: mean 2, var 1; b = {4, 6, 8}: mean 6, var 4. */
	query_regress_welch(3, 2, 1, 3, 6, 4, &t, &df, &se);
	assert_true(fabs(se - sqrt(5.0 / 3)) < 1e-12);
	assert_true(fabs(t - 4 / sqrt(5.0 / 3)) < 1e-12);
	assert_true(fabs(df - (25.0 / 9) / (1.0 / 18 + 16.0 / 18)) < 1e-12);
	query_regress_welch(2, 1, 0, 2, 1, 0, &t, &df, &se);
	assert_true(t == 0 && se == 0);
	query_regress_welch(2, 1, 0, 2, 2, 0, &t, &df, &se);
	assert_true(isinf(t) && t > 0);
}

struct fx {
	struct regress *r;
	uint32_t main, a, b;
};

static void fx_new(struct fx *f, const struct regress_params *p)
{
	assert_int_equal(query_regress_new(p, &f->r, NULL), 0);
	assert_int_equal(query_regress_fn(f->r, "main", 4, &f->main), 0);
	assert_int_equal(query_regress_fn(f->r, "a", 1, &f->a), 0);
	assert_int_equal(query_regress_fn(f->r, "b", 1, &f->b), 0);
}

/* One profile of stacks main;a (va) and main;b (vb). */
static void fx_profile(struct fx *f, int side, int64_t va, int64_t vb)
{
	uint32_t sa[2] = { f->main, f->a }, sb[2] = { f->main, f->b };

	assert_int_equal(query_regress_profile_begin(f->r, side), 0);
	assert_int_equal(query_regress_stack(f->r, sa, 2, va), 0);
	assert_int_equal(query_regress_stack(f->r, sb, 2, vb), 0);
	assert_int_equal(query_regress_profile_end(f->r), 0);
}

/* Four profiles a side: a's share 0.30 -> 0.60, each within 0.015. */
static void fx_four(struct fx *f)
{
	fx_profile(f, 0, 30, 70);
	fx_profile(f, 0, 32, 68);
	fx_profile(f, 0, 29, 71);
	fx_profile(f, 0, 29, 71);
	fx_profile(f, 1, 60, 40);
	fx_profile(f, 1, 61, 39);
	fx_profile(f, 1, 58, 42);
	fx_profile(f, 1, 61, 39);
}

static const struct regress_row *row_of(const struct regress_result *res, const char *name)
{
	for (size_t i = 0; i < res->n; i++)
		if (!strcmp(res->rows[i].name, name))
			return &res->rows[i];
	fail_msg("no row %s", name);
	return NULL;
}

static void test_known_answer(void **state)
{
	struct regress_params p;
	struct regress_result res;
	const struct regress_row *a, *b, *m;
	struct fx f;
	double t = 0.3 / sqrt(2 * 0.0025 / 3), p0, w, u, F;

	(void)state;
	query_regress_params_default(&p);
	p.norm = REGRESS_NORM_TOTAL;
	fx_new(&f, &p);
	/* a's self shares: 0.30 0.40 0.35 -> 0.60 0.70 0.65; b's the rest. */
	fx_profile(&f, 0, 30, 70);
	fx_profile(&f, 0, 80, 120); /* twice the traffic, the same shares */
	fx_profile(&f, 0, 35, 65);
	fx_profile(&f, 1, 60, 40);
	fx_profile(&f, 1, 70, 30);
	fx_profile(&f, 1, 65, 35);
	assert_int_equal(query_regress_compute(f.r, &res), 0);
	assert_int_equal(res.profiles[0], 3);
	assert_int_equal(res.profiles[1], 3);
	assert_int_equal(res.value[0], 400);
	assert_true(res.k == 1);
	/* Judged: a self, a total, b self, b total, main total (main's self is 0). */
	assert_int_equal(res.tests, 5);
	a = row_of(&res, "a");
	b = row_of(&res, "b");
	m = row_of(&res, "main");
	assert_true(fabs(a->self.mean[0] - 0.35) < 1e-12 && fabs(a->self.mean[1] - 0.65) < 1e-12);
	assert_true(fabs(a->self.sd[0] - 0.05) < 1e-12 && fabs(a->self.sd[1] - 0.05) < 1e-12);
	assert_true(fabs(a->self.impact - 0.3) < 1e-12);
	assert_true(fabs(a->self.change - 0.3 / 0.35) < 1e-12);
	/* Welch: se = sqrt(2 * 0.05^2 / 3), df = 4; p from the closed form, times 5 (Holm). */
	w = 1 + t * t / 4;
	u = t / sqrt(w);
	F = 0.5 + 0.375 * u * (1 - t * t / (12 * w));
	p0 = 2 * (1 - F);
	assert_true(fabs(a->self.p - 5 * p0) < 1e-9);
	assert_true(fabs(a->self.confidence - (1 - 5 * p0)) < 1e-9);
	assert_true(fabs(a->self.hi - a->self.impact - query_regress_t_quantile(1 - 0.005, 4) *
		    sqrt(2 * 0.0025 / 3)) < 1e-9);
	assert_int_equal(a->self.verdict, REGRESS_REGRESSED);
	assert_int_equal(a->total.verdict, REGRESS_REGRESSED);
	assert_int_equal(b->self.verdict, REGRESS_IMPROVED);
	assert_int_equal(m->self.verdict, REGRESS_NOISE);
	assert_int_equal(m->total.verdict, REGRESS_UNCHANGED);
	assert_true(m->total.p == 1);
	/* Ranked: the two flagged rows, tied in score, by name; then main. */
	assert_string_equal(res.rows[0].name, "a");
	assert_string_equal(res.rows[1].name, "b");
	assert_string_equal(res.rows[2].name, "main");
	assert_int_equal(res.regressed, 1);
	assert_false(res.failed);
	query_regress_free(f.r);

	/* fail_on: a adds 30% of the total; 25% fails, 35% passes. */
	for (int passes = 0; passes < 2; passes++) {
		p.fail_on = passes ? 0.35 : 0.25;
		fx_new(&f, &p);
		fx_four(&f);
		assert_int_equal(query_regress_compute(f.r, &res), 0);
		assert_int_equal(res.failed, !passes);
		assert_int_equal(res.regressed, 1);
		query_regress_free(f.r);
	}
}

static void test_recursion_inline_new_gone(void **state)
{
	struct regress_params p;
	struct regress_result res;
	struct regress *r;
	uint32_t m, f, g, inl, nw, gone;

	(void)state;
	query_regress_params_default(&p);
	p.norm = REGRESS_NORM_TOTAL;
	assert_int_equal(query_regress_new(&p, &r, NULL), 0);
	assert_int_equal(query_regress_fn(r, "main", 4, &m), 0);
	assert_int_equal(query_regress_fn(r, "f", 1, &f), 0);
	assert_int_equal(query_regress_fn(r, "g", 1, &g), 0);
	/* An inline frame is a function of its own, named as such. */
	assert_int_equal(query_regress_fn(r, "inlined_helper", 14, &inl), 0);
	assert_int_equal(query_regress_fn(r, "new_fn", 6, &nw), 0);
	assert_int_equal(query_regress_fn(r, "gone_fn", 7, &gone), 0);
	{
		uint32_t again;
		assert_int_equal(query_regress_fn(r, "f", 1, &again), 0);
		assert_int_equal(again, f);
	}
	for (int side = 0; side < 2; side++) {
		for (int i = 0; i < 4; i++) {
			uint32_t rec[5] = { m, f, f, g, inl };   /* f recurses */
			uint32_t other[2] = { m, side ? nw : gone };

			assert_int_equal(query_regress_profile_begin(r, side), 0);
			assert_int_equal(query_regress_stack(r, rec, 5, 60 + i), 0);
			assert_int_equal(query_regress_stack(r, other, 2, 40 - i), 0);
			assert_int_equal(query_regress_profile_end(r), 0);
		}
	}
	/* An empty profile is dropped. */
	assert_int_equal(query_regress_profile_begin(r, 0), 0);
	assert_int_equal(query_regress_profile_end(r), 0);
	assert_int_equal(query_regress_compute(r, &res), 0);
	assert_int_equal(res.profiles[0], 4);
	{
		const struct regress_row *rf = row_of(&res, "f"), *ri = row_of(&res, "inlined_helper");
		const struct regress_row *rn = row_of(&res, "new_fn"), *rg = row_of(&res, "gone_fn");

		/* f's total counts each stack once, though f is in it twice. */
		assert_true(fabs(rf->total.mean[0] - (60 + 61 + 62 + 63) / 400.0) < 1e-12);
		assert_true(rf->self.mean[0] == 0);
		assert_true(fabs(ri->self.mean[0] - rf->total.mean[0]) < 1e-12);
		assert_int_equal(rf->total.verdict, REGRESS_UNCHANGED);
		assert_int_equal(rn->self.verdict, REGRESS_NEW);
		assert_true(isinf(rn->self.change));
		assert_int_equal(rg->self.verdict, REGRESS_GONE);
		assert_true(rg->self.change == -1);
		assert_true(res.rows[0].flagged && res.rows[1].flagged);
	}
	query_regress_free(r);
}

static void test_unnamed(void **state)
{
	struct regress_params p;
	struct regress_result res;
	struct regress *r;
	uint32_t m, u, u2, f;
	struct buf b;

	(void)state;
	query_regress_params_default(&p);
	assert_int_equal(query_regress_new(&p, &r, NULL), 0);
	assert_int_equal(query_regress_fn(r, "main", 4, &m), 0);
	assert_int_equal(query_regress_fn(r, "f", 1, &f), 0);
	assert_int_equal(query_regress_fn_unnamed(r, "abcdef01", "libfoo.so", "not found", &u), 0);
	assert_int_equal(query_regress_fn_unnamed(r, "abcdef01", "libfoo.so", "other", &u2), 0);
	assert_int_equal(u, u2);
	for (int side = 0; side < 2; side++) {
		for (int i = 0; i < 3; i++) {
			uint32_t s1[2] = { m, u }, s2[2] = { m, f };
			assert_int_equal(query_regress_profile_begin(r, side), 0);
			/* The unnamed code triples: never judged all the same. */
			assert_int_equal(query_regress_stack(r, s1, 2, side ? 60 + i : 20 + i), 0);
			assert_int_equal(query_regress_stack(r, s2, 2, 50), 0);
			assert_int_equal(query_regress_profile_end(r), 0);
		}
	}
	assert_int_equal(query_regress_compute(r, &res), 0);
	{
		const struct regress_row *ru = row_of(&res, "abcdef01");
		assert_true(ru->unnamed);
		assert_int_equal(ru->self.verdict, REGRESS_UNNAMED);
		assert_int_equal(ru->total.verdict, REGRESS_UNNAMED);
		assert_false(ru->flagged);
		assert_string_equal(ru->build_id, "abcdef01");
		assert_string_equal(ru->mapping, "libfoo.so");
		assert_string_equal(ru->status, "not found");
	}
	buf_init(&b, 1 << 20);
	{
		const char *title[2] = { "1", "2" };
		assert_int_equal(query_regress_write_text(&res, title, 20, &b), 0);
		assert_non_null(strstr(b.data, "libfoo.so [no names: build ID abcdef01: not found]"));
	}
	buf_release(&b);
	query_regress_free(r);
}

/* ---- simulated profiles -------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* xorshift64*: fixed seeds make the simulation the same on every run. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static double unif(void)
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

static double gauss(void)
{
	double u1 = unif(), u2 = unif();
	return sqrt(-2 * log(u1 > 0 ? u1 : 1e-300)) * cos(2 * M_PI * u2);
}

/*
 * A program of NF leaf functions under 4 callers under main; each profile
 * takes `samples` samples from the weights, each weight jittered per
 * profile by a log-normal factor (machines and moments differ).
 */
enum { NF = 20, NCALLERS = 4 };

struct sim {
	struct regress *r;
	uint32_t main, caller[NCALLERS], leaf[NF];
};

static void sim_new(struct sim *s, const struct regress_params *p)
{
	char name[32];

	assert_int_equal(query_regress_new(p, &s->r, NULL), 0);
	assert_int_equal(query_regress_fn(s->r, "main", 4, &s->main), 0);
	for (int i = 0; i < NCALLERS; i++) {
		snprintf(name, sizeof(name), "caller%d", i);
		assert_int_equal(query_regress_fn(s->r, name, strlen(name), &s->caller[i]), 0);
	}
	for (int i = 0; i < NF; i++) {
		snprintf(name, sizeof(name), "leaf%02d", i);
		assert_int_equal(query_regress_fn(s->r, name, strlen(name), &s->leaf[i]), 0);
	}
}

static void sim_profile(struct sim *s, int side, const double *weight, int samples)
{
	double w[NF], sum = 0;
	int64_t count[NF] = { 0 };

	for (int i = 0; i < NF; i++) {
		w[i] = weight[i] * exp(0.05 * gauss());
		sum += w[i];
	}
	for (int n = 0; n < samples; n++) {
		double x = unif() * sum;
		int i = 0;
		while (i < NF - 1 && x >= w[i])
			x -= w[i++];
		count[i]++;
	}
	assert_int_equal(query_regress_profile_begin(s->r, side), 0);
	for (int i = 0; i < NF; i++) {
		uint32_t st[3] = { s->main, s->caller[i % NCALLERS], s->leaf[i] };
		assert_int_equal(query_regress_stack(s->r, st, 3, count[i]), 0);
	}
	assert_int_equal(query_regress_profile_end(s->r), 0);
}

static void sim_weights(double *w)
{
	for (int i = 0; i < NF; i++)
		w[i] = 1.0 + (double)(i % 7); /* shares from 1% to 8% */
}

static void test_false_positive_rate(void **state)
{
	const int pairs = 200, per_side = 8;
	struct regress_params p;
	double w[NF];
	int with_flags = 0;

	(void)state;
	query_regress_params_default(&p);
	sim_weights(w);
	rng_state = 0x9e3779b97f4a7c15ULL;
	for (int k = 0; k < pairs; k++) {
		struct regress_result res;
		struct sim s;

		sim_new(&s, &p);
		for (int side = 0; side < 2; side++)
			for (int i = 0; i < per_side; i++)
				sim_profile(&s, side, w, 1000);
		assert_int_equal(query_regress_compute(s.r, &res), 0);
		for (size_t i = 0; i < res.n; i++)
			assert_true(isfinite(res.rows[i].self.p) && res.rows[i].self.p <= 1);
		if (res.n && res.rows[0].flagged)
			with_flags++;
		query_regress_free(s.r);
	}
	/* alpha 0.01 bounds the family-wise rate; allow sampling error. */
	print_message("same-distribution pairs with a flagged function: %d of %d (%.1f%%)\n",
		      with_flags, pairs, 100.0 * with_flags / pairs);
	assert_true(with_flags <= pairs * 3 / 100);
}

static void test_power_one_function_2x(void **state)
{
	const int pairs = 40, per_side = 8;
	struct regress_params p;
	double w[NF], w2[NF];
	int exact = 0;

	(void)state;
	query_regress_params_default(&p);
	sim_weights(w);
	memcpy(w2, w, sizeof(w));
	w2[5] *= 2; /* leaf05 (share ~6.5%) twice as slow; its caller is caller1 */
	rng_state = 0x243f6a8885a308d3ULL;
	for (int k = 0; k < pairs; k++) {
		struct regress_result res;
		struct sim s;
		int ok = 1;

		sim_new(&s, &p);
		for (int i = 0; i < per_side; i++)
			sim_profile(&s, 0, w, 3000);
		for (int i = 0; i < per_side; i++)
			sim_profile(&s, 1, w2, 3000);
		assert_int_equal(query_regress_compute(s.r, &res), 0);
		for (size_t i = 0; i < res.n; i++) {
			const struct regress_row *row = &res.rows[i];
			int is_leaf = !strcmp(row->name, "leaf05");
			int is_caller = !strcmp(row->name, "caller1") || !strcmp(row->name, "main");

			if (is_leaf && row->self.verdict != REGRESS_REGRESSED)
				ok = 0;
			if (!is_leaf && row->self.verdict != REGRESS_UNCHANGED &&
			    row->self.verdict != REGRESS_NOISE)
				ok = 0;
			/* Callers' totals may be flagged, and only as regressions. */
			if (!is_leaf && !is_caller && row->total.verdict != REGRESS_UNCHANGED &&
			    row->total.verdict != REGRESS_NOISE)
				ok = 0;
			if (is_caller && row->total.verdict == REGRESS_IMPROVED)
				ok = 0;
		}
		/* The leaf ranks first, and its impact is about its old share. */
		if (strcmp(res.rows[0].name, "leaf05") && strcmp(res.rows[0].name, "caller1") &&
		    strcmp(res.rows[0].name, "main"))
			ok = 0;
		if (fabs(row_of(&res, "leaf05")->self.change - 1.0) > 0.25)
			ok = 0;
		exact += ok;
		query_regress_free(s.r);
	}
	print_message("one function 2x slower: flagged exactly in %d of %d pairs\n", exact, pairs);
	assert_true(exact >= pairs * 9 / 10);
}

/* Plain shares make every other function look faster; the normalisation does not. */
static void test_normalisation(void **state)
{
	struct regress_params p;
	double w[NF], w2[NF];

	(void)state;
	sim_weights(w);
	memcpy(w2, w, sizeof(w));
	w2[3] *= 4;
	for (int norm = 0; norm < 2; norm++) {
		struct regress_result res;
		struct sim s;
		size_t improved = 0;

		query_regress_params_default(&p);
		p.norm = norm ? REGRESS_NORM_TOTAL : REGRESS_NORM_UNCHANGED;
		rng_state = 0x13198a2e03707344ULL;
		sim_new(&s, &p);
		for (int i = 0; i < 10; i++)
			sim_profile(&s, 0, w, 4000);
		for (int i = 0; i < 10; i++)
			sim_profile(&s, 1, w2, 4000);
		assert_int_equal(query_regress_compute(s.r, &res), 0);
		for (size_t i = 0; i < res.n; i++)
			improved += res.rows[i].self.verdict == REGRESS_IMPROVED;
		assert_int_equal(row_of(&res, "leaf03")->self.verdict, REGRESS_REGRESSED);
		if (norm == 0) {
			/* leaf03 was 4/88 of the total and adds 12/88: k = 88 / 100. */
			print_message("k %.4f (expected %.4f)\n", res.k, 88.0 / 100);
			/* Each ratio is good to ~3%, their median to ~1%: allow 3 sigma. */
			assert_true(fabs(res.k - 88.0 / 100) < 0.03);
			assert_int_equal(improved, 0);
			/* k's own error counts: main's total, 100% of every profile, is judged with it. */
			assert_true(row_of(&res, "main")->total.verdict == REGRESS_REGRESSED ||
				    row_of(&res, "main")->total.verdict == REGRESS_UNCHANGED);
			print_message("k %.4f, main's total impact %.4f (expected %.4f)\n", res.k,
				      row_of(&res, "main")->total.impact, 12.0 / 88);
			assert_true(fabs(row_of(&res, "main")->total.impact - 12.0 / 88) < 0.04);
		} else {
			assert_true(res.k == 1);
			assert_true(improved > 0);
		}
		query_regress_free(s.r);
	}
}

static void test_encoders(void **state)
{
	struct regress_params p;
	struct regress_result res;
	const char *title[2] = { "1.4", "1.5|x" };
	struct arena a;
	struct json_value *v;
	struct fx f;
	struct buf b;

	(void)state;
	query_regress_params_default(&p);
	p.norm = REGRESS_NORM_TOTAL;
	p.fail_on = 0.05;
	fx_new(&f, &p);
	fx_four(&f);
	assert_int_equal(query_regress_compute(f.r, &res), 0);
	buf_init(&b, 1 << 20);
	assert_int_equal(query_regress_write_json(&res, title, 0, &b), 0);
	arena_init(&a, json_mem_bound(b.len));
	assert_int_equal(json_parse(b.data, b.len, &a, &v, NULL), 0);
	assert_string_equal(json_get(v, "verdict")->str, "fail");
	assert_int_equal(json_get(v, "rows")->n, 2); /* the flagged rows only */
	{
		/* Every field of the API's report, in order (docs/regressions.md). */
		static const char *const stat_keys[] = { "baseline", "candidate", "baselineSd",
							 "candidateSd", "impact", "change", "low",
							 "high", "p", "confidence", "verdict" };
		static const char *const param_keys[] = { "alpha", "minEffect", "noiseFloor", "failOn",
							   "normalize" };
		const struct json_value *params = json_get(v, "params");
		const struct json_value *self = json_get(&json_get(v, "rows")->items[0], "self");
		assert_non_null(params);
		assert_non_null(self);
		assert_int_equal(params->n, 5);
		for (size_t i = 0; i < 5; i++)
			assert_string_equal(params->keys[i], param_keys[i]);
		{
			double fail_on = 0;
			assert_int_equal(json_double(json_get(params, "failOn"), &fail_on, NULL), 0);
			assert_true(fail_on == 0.05);
		}
		assert_int_equal(self->n, 11);
		for (size_t i = 0; i < 11; i++)
			assert_string_equal(self->keys[i], stat_keys[i]);
	}
	arena_release(&a);
	buf_reset(&b);
	assert_int_equal(query_regress_write_json(&res, title, 5, &b), 0);
	assert_non_null(strstr(b.data, "\"function\":\"main\""));
	buf_reset(&b);
	assert_int_equal(query_regress_write_markdown(&res, title, 5, &b), 0);
	assert_non_null(strstr(b.data, "**FAIL**"));
	assert_non_null(strstr(b.data, "| 🔴 regressed | `a` | 30.00% → 60.00% | +100.0% |"));
	buf_reset(&b);
	assert_int_equal(query_regress_write_text(&res, title, 5, &b), 0);
	assert_non_null(strstr(b.data, "FAIL: 1 regression, the largest adds 30.00%"));
	buf_release(&b);
	query_regress_free(f.r);
}

static void test_limits(void **state)
{
	struct regress_params p;
	struct regress *r;
	struct err_msg msg;
	char name[64];
	uint32_t id;
	int rc = 0;

	(void)state;
	query_regress_params_default(&p);
	p.alpha = 0;
	assert_int_equal(query_regress_new(&p, &r, &msg), ERR_INVALID);
	query_regress_params_default(&p);
	p.noise_floor = 1;
	assert_int_equal(query_regress_new(&p, &r, &msg), ERR_INVALID);
	query_regress_params_default(&p);
	p.max_bytes = 1 << 20;
	assert_int_equal(query_regress_new(&p, &r, &msg), 0);
	for (int i = 0; i < 100000 && !rc; i++) {
		snprintf(name, sizeof(name), "function_%d", i);
		rc = query_regress_fn(r, name, strlen(name), &id);
	}
	assert_int_equal(rc, ERR_TOO_LARGE);
	/* Still usable after the failure. */
	assert_int_equal(query_regress_fn(r, "function_1", 10, &id), 0);
	assert_int_equal(id, 1);
	query_regress_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_t_distribution),
		cmocka_unit_test(test_welch),
		cmocka_unit_test(test_known_answer),
		cmocka_unit_test(test_recursion_inline_new_gone),
		cmocka_unit_test(test_unnamed),
		cmocka_unit_test(test_false_positive_rate),
		cmocka_unit_test(test_power_one_function_2x),
		cmocka_unit_test(test_normalisation),
		cmocka_unit_test(test_encoders),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
