/*
 * regress_out.c - the regression report as JSON (GET /api/v1/regressions),
 * plain text and Markdown (`unhex regress`, pull-request comments).
 */
#include "regress.h"

#include "base/buf.h"
#include "base/err.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Flagged rows, unnamed rows at or over the noise floor, then `extra` others. */
static int shown(const struct regress_result *res, const struct regress_row *row, size_t extra,
		 size_t *others)
{
	if (row->flagged)
		return 1;
	if (row->unnamed)
		return fmax(row->self.mean[0], row->self.mean[1]) >= res->params.noise_floor ||
		       fmax(row->total.mean[0], row->total.mean[1]) >= res->params.noise_floor;
	if (*others >= extra)
		return 0;
	++*others;
	return 1;
}

/* The largest impact among regressions, for the verdict line. */
static double worst(const struct regress_result *res)
{
	double w = 0;

	for (size_t i = 0; i < res->n; i++) {
		const struct regress_row *row = &res->rows[i];
		if (row->self.verdict == REGRESS_REGRESSED || row->self.verdict == REGRESS_NEW)
			w = fmax(w, row->self.impact);
		if (row->total.verdict == REGRESS_REGRESSED || row->total.verdict == REGRESS_NEW)
			w = fmax(w, row->total.impact);
	}
	return w;
}

static int json_num(struct buf *b, double v)
{
	if (!isfinite(v))
		return buf_puts(b, "null");
	return buf_printf(b, "%.6g", v);
}

/* `,"key":number` for each of n fields. */
struct json_field {
	const char *key;
	double v;
};

static int json_fields(struct buf *b, const struct json_field *f, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		rc = buf_printf(b, ",\"%s\":", f[i].key);
		rc = rc ? rc : json_num(b, f[i].v);
	}
	return rc;
}

static int json_stat(struct buf *b, const char *key, const struct regress_stat *st)
{
	const struct json_field f[] = {
		{ "candidate", st->mean[1] }, { "baselineSd", st->sd[0] },
		{ "candidateSd", st->sd[1] }, { "impact", st->impact },
		{ "change", st->change },     { "low", st->lo },
		{ "high", st->hi },           { "p", st->p },
		{ "confidence", st->confidence },
	};
	int rc = buf_printf(b, "\"%s\":{\"baseline\":", key);

	rc = rc ? rc : json_num(b, st->mean[0]);
	rc = rc ? rc : json_fields(b, f, sizeof(f) / sizeof(f[0]));
	rc = rc ? rc : buf_printf(b, ",\"verdict\":\"%s\"}", query_regress_verdict_str(st->verdict));
	return rc;
}

static int json_side(struct buf *b, const char *key, const char *title, size_t profiles,
		     int64_t value)
{
	int rc = buf_printf(b, "\"%s\":{\"name\":", key);

	rc = rc ? rc : buf_put_json_str(b, title, strlen(title));
	rc = rc ? rc : buf_printf(b, ",\"profiles\":%zu,\"value\":%lld}", profiles, (long long)value);
	return rc;
}

static const char *norm_name(enum regress_norm n)
{
	return n == REGRESS_NORM_TOTAL ? "total" : "unchanged";
}

int query_regress_write_json(const struct regress_result *res, const char *const title[2], size_t extra,
		       struct buf *out)
{
	const struct regress_params *p = &res->params;
	const struct json_field params[] = {
		{ "minEffect", p->min_effect },
		{ "noiseFloor", p->noise_floor },
		{ "failOn", p->fail_on > 0 ? p->fail_on : 0 },
	};
	size_t others = 0;
	int rc, first = 1;

	rc = buf_putc(out, '{');
	rc = rc ? rc : json_side(out, "baseline", title[0], res->profiles[0], res->value[0]);
	rc = rc ? rc : buf_putc(out, ',');
	rc = rc ? rc : json_side(out, "candidate", title[1], res->profiles[1], res->value[1]);
	rc = rc ? rc : buf_puts(out, ",\"params\":{\"alpha\":");
	rc = rc ? rc : json_num(out, p->alpha);
	rc = rc ? rc : json_fields(out, params, sizeof(params) / sizeof(params[0]));
	rc = rc ? rc : buf_printf(out, ",\"normalize\":\"%s\"},\"k\":", norm_name(p->norm));
	rc = rc ? rc : json_num(out, res->k);
	rc = rc ? rc : buf_printf(out, ",\"tests\":%zu,\"functions\":%zu,\"regressed\":%zu,"
				       "\"worstImpact\":",
				  res->tests, res->n, res->regressed);
	rc = rc ? rc : json_num(out, worst(res));
	rc = rc ? rc : buf_printf(out, ",\"verdict\":\"%s\",\"rows\":[", res->failed ? "fail" : "pass");
	for (size_t i = 0; i < res->n && !rc; i++) {
		const struct regress_row *row = &res->rows[i];

		if (!shown(res, row, extra, &others))
			continue;
		rc = buf_puts(out, first ? "{\"function\":" : ",{\"function\":");
		first = 0;
		rc = rc ? rc : buf_put_json_str(out, row->name, strlen(row->name));
		rc = rc ? rc : buf_printf(out, ",\"flagged\":%s,\"unnamed\":%s,\"score\":",
					  row->flagged ? "true" : "false",
					  row->unnamed ? "true" : "false");
		rc = rc ? rc : json_num(out, row->score);
		if (row->unnamed) {
			rc = rc ? rc : buf_puts(out, ",\"buildID\":");
			rc = rc ? rc : buf_put_json_str(out, row->build_id, strlen(row->build_id));
			rc = rc ? rc : buf_puts(out, ",\"mapping\":");
			rc = rc ? rc : buf_put_json_str(out, row->mapping, strlen(row->mapping));
			rc = rc ? rc : buf_puts(out, ",\"status\":");
			rc = rc ? rc : buf_put_json_str(out, row->status, strlen(row->status));
		}
		rc = rc ? rc : buf_putc(out, ',');
		rc = rc ? rc : json_stat(out, "self", &row->self);
		rc = rc ? rc : buf_putc(out, ',');
		rc = rc ? rc : json_stat(out, "total", &row->total);
		rc = rc ? rc : buf_putc(out, '}');
	}
	rc = rc ? rc : buf_puts(out, "]}\n");
	return rc;
}

/* ---- text and Markdown ------------------------------------------------------- */

static void pct(char *s, size_t n, double v)
{
	snprintf(s, n, "%.2f%%", 100 * v);
}

static void change(char *s, size_t n, const struct regress_stat *st)
{
	if (!isfinite(st->change))
		snprintf(s, n, "new");
	else
		snprintf(s, n, "%+.1f%%", 100 * st->change);
}

static void conf(char *s, size_t n, const struct regress_stat *st)
{
	if (st->verdict == REGRESS_NOISE || st->verdict == REGRESS_TOO_FEW ||
	    st->verdict == REGRESS_UNNAMED)
		snprintf(s, n, "-");
	else if (st->confidence >= 0.9999)
		snprintf(s, n, ">99.99%%");
	else
		snprintf(s, n, "%.2f%%", 100 * st->confidence);
}

static int flagged_stat(const struct regress_stat *st)
{
	return st->verdict == REGRESS_REGRESSED || st->verdict == REGRESS_IMPROVED ||
	       st->verdict == REGRESS_NEW || st->verdict == REGRESS_GONE;
}

/*
 * The row's headline: a flagged self verdict, else a flagged total one,
 * else the total when only it was judged (a caller's self is often under
 * the noise floor), else the self.
 */
static const struct regress_stat *lead(const struct regress_row *row)
{
	if (flagged_stat(&row->self))
		return &row->self;
	if (flagged_stat(&row->total))
		return &row->total;
	if (row->self.verdict == REGRESS_NOISE && row->total.verdict == REGRESS_UNCHANGED)
		return &row->total;
	return &row->self;
}

static int summary(const struct regress_result *res, const char *const title[2], int md,
		   struct buf *out)
{
	const struct regress_params *p = &res->params;
	char w[32], f[32], nf[32];
	int rc;

	pct(w, sizeof(w), worst(res));
	pct(f, sizeof(f), p->fail_on);
	pct(nf, sizeof(nf), p->noise_floor);
	if (md)
		rc = buf_printf(out, "### Profile regressions: `%s` → `%s`\n\n", title[0], title[1]);
	else
		rc = buf_printf(out, "regressions: baseline %s -> candidate %s\n", title[0], title[1]);
	rc = rc ? rc : buf_printf(out, "%s%zu baseline and %zu candidate profiles; %zu functions, "
				       "%zu tests (Welch, Holm-adjusted, alpha %g); min effect "
				       "%.0f%%, noise floor %s; normalised by %s (k = %.4f)%s\n",
				  md ? "" : "  ", res->profiles[0], res->profiles[1], res->n,
				  res->tests, p->alpha, 100 * p->min_effect, nf,
				  p->norm == REGRESS_NORM_TOTAL ? "each side's total"
								: "the unchanged functions",
				  res->k, md ? "\n" : "");
	if (res->failed)
		rc = rc ? rc : buf_printf(out, "%s%s: %zu regression%s, the largest adds %s of the "
					       "baseline's total (fail-on %s)\n",
					  md ? "" : "  ", md ? "**FAIL**" : "FAIL", res->regressed,
					  res->regressed == 1 ? "" : "s", w, f);
	else if (res->regressed)
		rc = rc ? rc : buf_printf(out, "%s%s: %zu regression%s, the largest adds %s of the "
					       "baseline's total%s%s%s\n",
					  md ? "" : "  ", md ? "**PASS**" : "PASS", res->regressed,
					  res->regressed == 1 ? "" : "s", w,
					  p->fail_on > 0 ? " (under fail-on " : "",
					  p->fail_on > 0 ? f : "", p->fail_on > 0 ? ")" : "");
	else
		rc = rc ? rc : buf_printf(out, "%s%s: no regression found\n", md ? "" : "  ",
					  md ? "**PASS**" : "PASS");
	return rc;
}

/* A row's printed numbers: confidence, shares per side and their changes. */
struct cells {
	char conf[32], self[2][32], self_change[32], total[2][32], total_change[32];
};

static void cells_of(const struct regress_row *row, const struct regress_stat *l,
		     struct cells *k)
{
	conf(k->conf, sizeof(k->conf), l);
	pct(k->self[0], sizeof(k->self[0]), row->self.mean[0]);
	pct(k->self[1], sizeof(k->self[1]), row->self.mean[1]);
	change(k->self_change, sizeof(k->self_change), &row->self);
	pct(k->total[0], sizeof(k->total[0]), row->total.mean[0]);
	pct(k->total[1], sizeof(k->total[1]), row->total.mean[1]);
	change(k->total_change, sizeof(k->total_change), &row->total);
}

int query_regress_write_text(const struct regress_result *res, const char *const title[2], size_t extra,
		       struct buf *out)
{
	size_t others = 0;
	int rc = summary(res, title, 0, out);

	rc = rc ? rc : buf_printf(out, "\n%-10s %-8s %8s %8s %8s  %8s %8s %8s  %s\n", "VERDICT",
				  "CONF", "SELF-B", "SELF-C", "CHANGE", "TOTAL-B", "TOTAL-C",
				  "CHANGE", "FUNCTION");
	for (size_t i = 0; i < res->n && !rc; i++) {
		const struct regress_row *row = &res->rows[i];
		const struct regress_stat *l = lead(row);
		struct cells k;
		const char *v = l == &row->total ? "(total)" : "";

		if (!shown(res, row, extra, &others))
			continue;
		cells_of(row, l, &k);
		rc = buf_printf(out, "%-10s %-8s %8s %8s %8s  %8s %8s %8s  %s%s%s",
				query_regress_verdict_str(l->verdict), k.conf, k.self[0], k.self[1],
				k.self_change, k.total[0], k.total[1], k.total_change,
				row->unnamed ? row->mapping : row->name, *v ? " " : "", v);
		if (!rc && row->unnamed)
			rc = buf_printf(out, " [no names: build ID %s: %s]",
					row->build_id[0] ? row->build_id : "unknown", row->status);
		rc = rc ? rc : buf_putc(out, '\n');
	}
	return rc;
}

/* Markdown table cells: `|` and newlines would break the row. */
static int md_cell(struct buf *b, const char *s)
{
	int rc = 0;

	for (; *s && !rc; s++)
		rc = *s == '|' ? buf_puts(b, "\\|") : *s == '\n' ? buf_putc(b, ' ')
			: *s == '`' ? buf_putc(b, '\'') : buf_putc(b, *s);
	return rc;
}

int query_regress_write_markdown(const struct regress_result *res, const char *const title[2],
			   size_t extra, struct buf *out)
{
	size_t others = 0;
	int rc = summary(res, title, 1, out);

	rc = rc ? rc : buf_puts(out, "\n| verdict | function | self | Δ self | total | Δ total | "
				     "confidence |\n|---|---|---:|---:|---:|---:|---:|\n");
	for (size_t i = 0; i < res->n && !rc; i++) {
		const struct regress_row *row = &res->rows[i];
		const struct regress_stat *l = lead(row);
		struct cells k;

		if (!shown(res, row, extra, &others))
			continue;
		cells_of(row, l, &k);
		rc = buf_printf(out, "| %s%s%s | `", l->verdict == REGRESS_REGRESSED ||
				l->verdict == REGRESS_NEW ? "🔴 " : "",
				query_regress_verdict_str(l->verdict), l == &row->total ? " (total)" : "");
		rc = rc ? rc : md_cell(out, row->unnamed ? row->mapping : row->name);
		rc = rc ? rc : buf_putc(out, '`');
		if (!rc && row->unnamed) {
			rc = buf_puts(out, " (no names: build ID ");
			rc = rc ? rc : md_cell(out, row->build_id[0] ? row->build_id : "unknown");
			rc = rc ? rc : buf_puts(out, ": ");
			rc = rc ? rc : md_cell(out, row->status);
			rc = rc ? rc : buf_putc(out, ')');
		}
		rc = rc ? rc : buf_printf(out, " | %s → %s | %s | %s → %s | %s | %s |\n", k.self[0],
					  k.self[1], k.self_change, k.total[0], k.total[1],
					  k.total_change, k.conf);
	}
	return rc;
}
