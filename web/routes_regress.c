/*
 * routes_regress.c - releases and regression reports over HTTP
 * (docs/regressions.md):
 *
 *   GET /api/v1/releases?service=S       a service's releases, JSON
 *   GET /api/v1/regressions?service=S&baseline=A&candidate=B
 *   GET /api/v1/regressions?baselineQuery=Q&candidateQuery=Q
 *                                        the report: JSON, text or Markdown;
 *                                        X-Unhex-Verdict: pass or fail
 *
 * Parameters are untrusted: sizes capped, numbers range-checked, release
 * names resolved by the engine; failures answer through the ERR -> HTTP
 * table with the engine's message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "query/regress.h"
#include "web_int.h"

#define DEFAULT_FROM "now-24h"
#define DEFAULT_UNTIL "now"
#define MAX_EXTRA_ROWS 100000

/* An optional parameter: 0 (set), 1 (absent or empty), or an error. */
static int opt_param(const struct web__req *rq, const char *key, char *out, size_t len,
		     struct err_msg *msg)
{
	int rc = web__param(rq, key, out, len, msg);

	if (rc == ERR_NOT_FOUND || (rc == 0 && !out[0])) {
		out[0] = '\0';
		return 1;
	}
	return rc;
}

/* "5", "5%" or "0.5%": a percentage from 0 to 100 as a fraction; absent leaves *out. */
static int param_percent(const struct web__req *rq, const char *key, double *out,
			 struct err_msg *msg)
{
	char v[32], *end;
	double d;
	int rc = opt_param(rq, key, v, sizeof(v), msg);

	if (rc)
		return rc > 0 ? 0 : rc;
	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || (*end && strcmp(end, "%")) || !(d >= 0 && d <= 100))
		return err_set(msg, ERR_INVALID, "parameter %s: \"%s\" is not a percentage from 0 to 100",
			       key, v);
	*out = d / 100;
	return 0;
}

static int param_labels(const struct web__req *rq, struct release_labels *rl, struct err_msg *msg)
{
	char v[512];
	int rc = opt_param(rq, "labels", v, sizeof(v), msg);

	if (rc < 0)
		return rc;
	return query_release_labels_parse(rc ? rq->srv->opt.release_labels : v, rl, msg);
}

static int param_range(const struct web__req *rq, const char *fkey, const char *ukey,
		       int64_t dfrom, int64_t duntil, int64_t now, int64_t *from, int64_t *until,
		       struct err_msg *msg)
{
	char v[64];
	int rc;

	*from = dfrom;
	*until = duntil;
	if ((rc = opt_param(rq, fkey, v, sizeof(v), msg)) < 0)
		return rc;
	if (!rc && (rc = web__param_time(rq, fkey, DEFAULT_FROM, now, from, msg)))
		return rc;
	if ((rc = opt_param(rq, ukey, v, sizeof(v), msg)) < 0)
		return rc;
	if (!rc && (rc = web__param_time(rq, ukey, DEFAULT_UNTIL, now, until, msg)))
		return rc;
	if (*until <= *from)
		return err_set(msg, ERR_INVALID, "%s must be later than %s", ukey, fkey);
	return 0;
}

static void answer(struct web__resp *rs, int rc, const char *text)
{
	if (rc) {
		buf_reset(&rs->body);
		if (!text[0] && rc == ERR_TOO_LARGE)
			text = "response larger than the limit";
		web__resp_text_error(rs, rc, text);
		return;
	}
	rs->status = 200;
}

/* ---- /api/v1/releases ------------------------------------------------------------ */

void web__handle_releases(struct web__req *rq, struct web__resp *rs)
{
	struct release_labels rl;
	struct release_query q;
	char service[WEB_PARAM_MAX], type[256];
	struct err_msg msg;
	int64_t now = clock_wall_ns(), from = 0, until = 0;
	int rc;

	err_clear(&msg);
	memset(&q, 0, sizeof(q));
	rc = opt_param(rq, "service", service, sizeof(service), &msg);
	if (rc > 0)
		rc = err_set(&msg, ERR_INVALID, "missing parameter service");
	if (!rc && (rc = opt_param(rq, "type", type, sizeof(type), &msg)) > 0)
		rc = 0, q.profile_type = NULL;
	else if (!rc)
		q.profile_type = type;
	if (!rc && (rc = web__param_time(rq, "from", DEFAULT_FROM, now, &from, &msg)) == 0)
		rc = web__param_time(rq, "until", DEFAULT_UNTIL, now, &until, &msg);
	if (!rc)
		rc = param_labels(rq, &rl, &msg);
	if (!rc) {
		q.service = service;
		q.from_ns = from;
		q.until_ns = until;
		q.labels = &rl;
		q.debuginfo = rq->srv->opt.query.symbolizer;
		q.timeout_ns = rq->srv->opt.query.timeout_ns > 0 ? rq->srv->opt.query.timeout_ns
								 : QUERY_DEFAULT_TIMEOUT_NS;
		q.max_bytes = rq->srv->opt.query.max_bytes ? rq->srv->opt.query.max_bytes
							   : QUERY_DEFAULT_MAX_BYTES;
		rc = query_releases(rq->srv->store, rq->tenant, &q, &rs->body, &msg);
	}
	rs->content_type = "application/json";
	answer(rs, rc, msg.text);
}

/* ---- /api/v1/regressions ------------------------------------------------------- */

/* The parsed request; large buffers, so it lives on the heap. */
struct regress_req {
	struct query_regress_params p;
	struct release_labels rl;
	struct release_sel rel[2];
	char query[2][WEB_PARAM_MAX];
	char service[1024], name[2][512], label[128], type[256];
};

static int parse_format(const struct web__req *rq, const char *key, enum query_regress_format *out,
			struct err_msg *msg)
{
	char v[16];
	int rc = opt_param(rq, key, v, sizeof(v), msg);

	if (rc)
		return rc > 0 ? 0 : rc;
	if (!strcmp(v, "json"))
		*out = QUERY_REGRESS_JSON;
	else if (!strcmp(v, "text"))
		*out = QUERY_REGRESS_TEXT;
	else if (!strcmp(v, "markdown"))
		*out = QUERY_REGRESS_MARKDOWN;
	else
		return err_set(msg, ERR_INVALID, "parameter %s: \"%s\" is not json, text or markdown",
			       key, v);
	return 0;
}

static int parse_stats(const struct web__req *rq, struct regress_params *s, struct err_msg *msg)
{
	char v[32], *end;
	int rc;

	query_regress_params_default(s);
	if ((rc = param_percent(rq, "minEffect", &s->min_effect, msg)) ||
	    (rc = param_percent(rq, "noiseFloor", &s->noise_floor, msg)) ||
	    (rc = param_percent(rq, "failOn", &s->fail_on, msg)))
		return rc;
	if (s->noise_floor >= 1)
		return err_set(msg, ERR_INVALID, "parameter noiseFloor: must be under 100%%");
	if ((rc = opt_param(rq, "alpha", v, sizeof(v), msg)) < 0)
		return rc;
	if (!rc) {
		errno = 0;
		s->alpha = strtod(v, &end);
		if (errno || end == v || *end || !(s->alpha > 0 && s->alpha <= 0.5))
			return err_set(msg, ERR_INVALID, "parameter alpha: \"%s\" is not in (0, 0.5]", v);
	}
	if ((rc = opt_param(rq, "normalize", v, sizeof(v), msg)) < 0)
		return rc;
	if (!rc && !strcmp(v, "total"))
		s->norm = REGRESS_NORM_TOTAL;
	else if (!rc && strcmp(v, "unchanged"))
		return err_set(msg, ERR_INVALID, "parameter normalize: \"%s\" is not unchanged or total",
			       v);
	return 0;
}

/* The two sides: release names of a service, or two selectors. */
static int parse_sides(const struct web__req *rq, struct regress_req *r, int64_t now,
		       struct err_msg *msg)
{
	static const char *const qkey[2] = { "baselineQuery", "candidateQuery" };
	static const char *const nkey[2] = { "baseline", "candidate" };
	static const char *const fkey[2] = { "baselineFrom", "candidateFrom" };
	static const char *const ukey[2] = { "baselineUntil", "candidateUntil" };
	int64_t from, until;
	int rc, byq[2];

	/* from/until default to the last day; per side they may be overridden. */
	if ((rc = web__param_time(rq, "from", DEFAULT_FROM, now, &from, msg)) ||
	    (rc = web__param_time(rq, "until", DEFAULT_UNTIL, now, &until, msg)))
		return rc;
	if (until <= from)
		return err_set(msg, ERR_INVALID, "until must be later than from");
	for (int s = 0; s < 2; s++) {
		if ((rc = opt_param(rq, qkey[s], r->query[s], sizeof(r->query[s]), msg)) < 0)
			return rc;
		byq[s] = rc == 0;
	}
	if (byq[0] != byq[1])
		return err_set(msg, ERR_INVALID, "baselineQuery and candidateQuery go together");
	if (!byq[0]) {
		if ((rc = opt_param(rq, "service", r->service, sizeof(r->service), msg)) ||
		    (rc = opt_param(rq, nkey[0], r->name[0], sizeof(r->name[0]), msg)) ||
		    (rc = opt_param(rq, nkey[1], r->name[1], sizeof(r->name[1]), msg)))
			return rc > 0 ? err_set(msg, ERR_INVALID,
						"missing parameter: service, baseline and candidate "
						"(or baselineQuery and candidateQuery)")
				      : rc;
		if ((rc = opt_param(rq, "label", r->label, sizeof(r->label), msg)) < 0 ||
		    (rc = opt_param(rq, "type", r->type, sizeof(r->type), msg)) < 0 ||
		    (rc = param_labels(rq, &r->rl, msg)))
			return rc;
	}
	for (int s = 0; s < 2; s++) {
		struct query_regress_side *sd = &r->p.side[s];

		if (!byq[0]) {
			rc = query_release_resolve(rq->srv->store, rq->tenant, r->service, r->name[s],
					     r->label, &r->rl, r->type[0] ? r->type : NULL, &r->rel[s],
					     msg);
			if (rc)
				return rc;
			sd->p.query = r->rel[s].query;
			sd->build_id = r->rel[s].build_id[0] ? r->rel[s].build_id : NULL;
			sd->title = r->name[s];
		} else {
			sd->p.query = r->query[s];
			sd->title = nkey[s];
		}
		sd->p.limits = rq->qlim;
		if ((rc = param_range(rq, fkey[s], ukey[s], from, until, now, &sd->p.from_ns,
				      &sd->p.until_ns, msg)))
			return rc;
	}
	return 0;
}

void web__handle_regressions(struct web__req *rq, struct web__resp *rs)
{
	struct regress_req *r = calloc(1, sizeof(*r));
	int64_t now = clock_wall_ns(), extra = 20;
	struct err_msg msg;
	char v[32], *end;
	int rc, failed = 0;

	err_clear(&msg);
	if (!r) {
		answer(rs, ERR_NOMEM, "out of memory");
		return;
	}
	r->p.format = QUERY_REGRESS_JSON;
	r->p.report = QUERY_REGRESS_JSON;
	rc = parse_sides(rq, r, now, &msg);
	if (!rc)
		rc = parse_stats(rq, &r->p.stats, &msg);
	if (!rc)
		rc = parse_format(rq, "format", &r->p.format, &msg);
	if (!rc)
		rc = parse_format(rq, "report", &r->p.report, &msg);
	if (!rc && (rc = opt_param(rq, "limit", v, sizeof(v), &msg)) == 0) {
		extra = strtoll(v, &end, 10);
		if (*end || v[0] < '0' || v[0] > '9' || extra > MAX_EXTRA_ROWS)
			rc = err_set(&msg, ERR_INVALID, "parameter limit: \"%s\" is not 0..%d", v,
				     MAX_EXTRA_ROWS);
	} else if (rc > 0) {
		rc = 0;
	}
	r->p.extra = (size_t)extra;
	if (!rc)
		rc = query_regress(rq->srv->store, rq->tenant, &r->p, &rs->body, &failed, &msg);
	rs->content_type = r->p.format == QUERY_REGRESS_JSON ? "application/json"
			   : r->p.format == QUERY_REGRESS_MARKDOWN ? "text/markdown; charset=utf-8"
								  : "text/plain; charset=utf-8";
	if (!rc)
		rs->extra_headers = failed ? "X-Unhex-Verdict: fail\r\n" : "X-Unhex-Verdict: pass\r\n";
	answer(rs, rc, msg.text);
	free(r);
}
