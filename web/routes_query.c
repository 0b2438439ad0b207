/*
 * routes_query.c - the read API: HTTP parameters in, query/query.h out.
 *
 * Every route parses its query string (untrusted: sizes capped at
 * WEB_PARAM_MAX, times through time_parse, selectors by the engine),
 * runs one engine call under the server's query limits, and answers with
 * the engine's bytes or with the engine's message through the one
 * ERR -> HTTP table.  Unknown parameters are ignored, so clients that add
 * their own (go tool pprof's `seconds`) still work.
 *
 *   /pyroscope/render, /pyroscope/render-diff   flamebearer JSON
 *   /api/v1/pprof                               gzipped pprof download
 *   /api/v1/top, /api/v1/folded                 text for `unhex query`
 *   /api/v1/diff-top                            text: largest changes
 *   /pyroscope/labels, /pyroscope/label-values  legacy JSON arrays
 *   /querier.v1.QuerierService/<Method>         Connect JSON or protobuf
 *   /symbolz                                    go tool pprof's symbol lookup
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/clock.h"
#include "base/timeparse.h"
#include "query/query.h"
#include "web_int.h"

#include "types.pb-c.h"

#define TIME_PARAM_MAX 64
#define DEFAULT_FROM "now-1h"
#define DEFAULT_UNTIL "now"

/* One side of a query: the selector buffer and the engine parameters. */
enum { MAX_GROUP_BY = 16, GROUP_BY_LEN = 256 };

struct side {
	char query[WEB_PARAM_MAX];
	struct query_params p;
	char by[MAX_GROUP_BY][GROUP_BY_LEN]; /* render's groupBy */
	const char *byp[MAX_GROUP_BY];
};

/* Reads `key` into out; ERR_NOT_FOUND is returned as is, other errors get a message. */
int web__param(const struct web__req *rq, const char *key, char *out, size_t len,
	       struct err_msg *msg)
{
	int rc = web__query_param(rq->query, key, out, len);

	if (rc == ERR_TOO_LARGE)
		return err_set(msg, rc, "parameter %s is longer than %zu bytes", key, len - 1);
	if (rc == ERR_INVALID)
		return err_set(msg, rc, "parameter %s: bad %%-escape or NUL byte", key);
	return rc;
}

int web__param_time(const struct web__req *rq, const char *key, const char *dflt, int64_t now,
		    int64_t *out, struct err_msg *msg)
{
	char v[TIME_PARAM_MAX];
	struct err_msg why;
	int rc = web__param(rq, key, v, sizeof(v), msg);

	if (rc == ERR_NOT_FOUND || (rc == 0 && v[0] == '\0'))
		snprintf(v, sizeof(v), "%s", dflt);
	else if (rc)
		return rc;
	err_clear(&why);
	rc = time_parse(v, now, out, &why);
	if (rc)
		return err_set(msg, rc, "parameter %s: %s", key, why.text);
	return 0;
}

/* A non-negative integer parameter; absent or empty leaves *out as is. */
static int param_int(const struct web__req *rq, const char *key, int64_t max, int64_t *out,
		     struct err_msg *msg)
{
	char v[32];
	char *end;
	long long n;
	int rc = web__param(rq, key, v, sizeof(v), msg);

	if (rc == ERR_NOT_FOUND || (rc == 0 && v[0] == '\0'))
		return 0;
	if (rc)
		return rc;
	n = strtoll(v, &end, 10);
	if (*end || v[0] < '0' || v[0] > '9' || n > max)
		return err_set(msg, ERR_INVALID,
			       "parameter %s: \"%s\" is not an integer from 0 to %lld", key, v,
			       (long long)max);
	*out = n;
	return 0;
}

/* Fills a side from the parameters named qkey, fkey, ukey (and maxNodes). */
static int parse_side(const struct web__req *rq, const char *qkey, const char *fkey,
		      const char *ukey, int64_t now, struct side *s, struct err_msg *msg)
{
	int rc;

	memset(&s->p, 0, sizeof(s->p));
	rc = web__param(rq, qkey, s->query, sizeof(s->query), msg);
	if (rc == ERR_NOT_FOUND || (rc == 0 && s->query[0] == '\0'))
		return err_set(msg, ERR_INVALID,
			       "missing parameter %s (a selector such as "
			       "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"api\"})",
			       qkey);
	if (rc)
		return rc;
	s->p.query = s->query;
	s->p.limits = rq->qlim;
	rc = web__param_time(rq, fkey, DEFAULT_FROM, now, &s->p.from_ns, msg);
	if (!rc)
		rc = web__param_time(rq, ukey, DEFAULT_UNTIL, now, &s->p.until_ns, msg);
	if (!rc && s->p.until_ns <= s->p.from_ns)
		rc = err_set(msg, ERR_INVALID, "%s must be later than %s", ukey, fkey);
	/* Pyroscope reads max-nodes (Drilldown's spelling), then maxNodes over it. */
	if (!rc)
		rc = param_int(rq, "max-nodes", QUERY_MAX_MAX_NODES, &s->p.max_nodes, msg);
	if (!rc)
		rc = param_int(rq, "maxNodes", QUERY_MAX_MAX_NODES, &s->p.max_nodes, msg);
	return rc;
}

/* ---- /api/v1/diff-top ---------------------------------------------------- */

static int diff_top(struct web__req *rq, const struct side *l, const struct side *r,
		    struct buf *out, struct err_msg *msg)
{
	char mode[16] = "relative";
	int64_t limit = 20;
	int rc;

	rc = web__param(rq, "mode", mode, sizeof(mode), msg);
	if (rc == ERR_NOT_FOUND)
		rc = 0;
	if (rc)
		return rc;
	if (strcmp(mode, "relative") != 0 && strcmp(mode, "absolute") != 0)
		return err_set(msg, ERR_INVALID, "parameter mode: \"%s\" is not relative or absolute",
			       mode);
	rc = param_int(rq, "limit", 1000000, &limit, msg);
	if (rc)
		return rc;
	return query_diff_top(rq->srv->store, rq->tenant, &l->p, &r->p,
			      mode[0] == 'r' ? QUERY_DIFF_RELATIVE : QUERY_DIFF_ABSOLUTE,
			      (size_t)limit, out, msg);
}

/* ---- legacy label routes ---------------------------------------------------- */

/* Writes names as the bare JSON array Pyroscope's legacy routes return. */
static int put_names(struct buf *out, char *const *names, size_t n)
{
	int rc = buf_putc(out, '[');

	for (size_t i = 0; i < n && !rc; i++) {
		if (i)
			rc = buf_putc(out, ',');
		if (!rc)
			rc = buf_put_json_str(out, names[i], strlen(names[i]));
	}
	if (!rc)
		rc = buf_puts(out, "]\n");
	return rc;
}

/*
 * /pyroscope/labels and /pyroscope/label-values: the LabelNames or
 * LabelValues method over the series of `query` (all without one) with a
 * profile in [from, until).
 */
static int labels(struct web__req *rq, int values, int64_t now, struct buf *out,
		  struct err_msg *msg)
{
	char sel[WEB_PARAM_MAX], name[256], *matchers[1] = { sel };
	int64_t from, until;
	struct arena a;
	int rc, have_sel;

	rc = web__param(rq, "query", sel, sizeof(sel), msg);
	have_sel = rc == 0 && sel[0];
	if (rc == ERR_NOT_FOUND)
		rc = 0;
	if (!rc && values) {
		rc = web__param(rq, "label", name, sizeof(name), msg);
		if (rc == ERR_NOT_FOUND || (rc == 0 && !name[0]))
			rc = err_set(msg, ERR_INVALID, "missing parameter label");
	}
	if (!rc)
		rc = web__param_time(rq, "from", DEFAULT_FROM, now, &from, msg);
	if (!rc)
		rc = web__param_time(rq, "until", DEFAULT_UNTIL, now, &until, msg);
	if (rc)
		return rc;
	/* The methods take Unix milliseconds, as Connect clients send them. */
	arena_init(&a, rq->srv->opt.query.max_bytes ? rq->srv->opt.query.max_bytes
						      : QUERY_DEFAULT_MAX_BYTES);
	if (values) {
		Types__V1__LabelValuesRequest req = TYPES__V1__LABEL_VALUES_REQUEST__INIT;
		Types__V1__LabelValuesResponse *resp;

		req.name = name;
		req.matchers = matchers;
		req.n_matchers = have_sel;
		req.start = from / 1000000;
		req.end = until / 1000000;
		rc = query_label_values(rq->srv->store, rq->tenant, &req, &rq->qlim, &a,
					&resp, msg);
		if (!rc)
			rc = put_names(out, resp->names, resp->n_names);
	} else {
		Types__V1__LabelNamesRequest req = TYPES__V1__LABEL_NAMES_REQUEST__INIT;
		Types__V1__LabelNamesResponse *resp;

		req.matchers = matchers;
		req.n_matchers = have_sel;
		req.start = from / 1000000;
		req.end = until / 1000000;
		rc = query_label_names(rq->srv->store, rq->tenant, &req, &rq->qlim, &a,
				       &resp, msg);
		if (!rc)
			rc = put_names(out, resp->names, resp->n_names);
	}
	arena_release(&a);
	return rc;
}

/* ---- handlers ---------------------------------------------------------------- */

static int parse_sort(const struct web__req *rq, enum query_top_sort *out, struct err_msg *msg)
{
	char v[16];
	int rc = web__param(rq, "sort", v, sizeof(v), msg);

	*out = QUERY_TOP_BY_SELF;
	if (rc == ERR_NOT_FOUND || (rc == 0 && !v[0]))
		return 0;
	if (rc)
		return rc;
	if (strcmp(v, "total") == 0)
		*out = QUERY_TOP_BY_TOTAL;
	else if (strcmp(v, "self") != 0)
		return err_set(msg, ERR_INVALID, "parameter sort: \"%s\" is not self or total", v);
	return 0;
}

/*
 * Render's `format`: json (or none) is the flamebearer, dot Graphviz's
 * call graph (*dot set); anything else is refused.
 */
static int render_format(const struct web__req *rq, int *dot, struct err_msg *msg)
{
	char v[16];
	int rc = web__param(rq, "format", v, sizeof(v), msg);

	*dot = 0;
	if (rc == ERR_NOT_FOUND || (!rc && (!v[0] || !strcmp(v, "json"))))
		return 0;
	if (rc)
		return rc;
	if (!strcmp(v, "dot")) {
		*dot = 1;
		return 0;
	}
	return err_set(msg, ERR_INVALID, "parameter format: \"%s\" is not json or dot", v);
}

/*
 * Render's timeline parameters, as Pyroscope reads them: every `groupBy`
 * (repeated), and `aggregation` sum or avg (anything else: sum).
 */
static int render_series(const struct web__req *rq, struct side *s, struct err_msg *msg)
{
	const char *p = rq->query;
	char seg[WEB_PARAM_MAX], v[16], name[GROUP_BY_LEN];
	size_t n = 0;
	int rc;

	while (p && *p) {
		const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);

		if ((size_t)(end - p) < sizeof(seg)) {
			memcpy(seg, p, (size_t)(end - p));
			seg[end - p] = '\0';
			rc = web__query_param(seg, "groupBy", name, sizeof(name));
			if (rc == ERR_TOO_LARGE || rc == ERR_INVALID)
				return err_set(msg, rc, "parameter groupBy: too long or badly escaped");
			if (rc == 0 && name[0]) {
				if (n == MAX_GROUP_BY)
					return err_set(msg, ERR_TOO_LARGE,
						       "more than %d groupBy parameters", MAX_GROUP_BY);
				memcpy(s->by[n], name, sizeof(name));
				s->byp[n] = s->by[n];
				n++;
			}
		}
		p = amp ? amp + 1 : NULL;
	}
	s->p.group_by = s->byp;
	s->p.n_group_by = n;
	/* Not sum or avg (too long ones included): Pyroscope sums. */
	rc = web__query_param(rq->query, "aggregation", v, sizeof(v));
	if (rc == ERR_INVALID)
		return err_set(msg, rc, "parameter aggregation: bad %%-escape or NUL byte");
	s->p.average = rc == 0 && !strcmp(v, "avg");
	return 0;
}

static int run_query(struct web__req *rq, enum web__query_route r, struct web__resp *rs,
		     int *dot, struct err_msg *msg)
{
	struct store *st = rq->srv->store;
	int64_t now = clock_wall_ns();
	struct side *a, *b = NULL;
	struct buf *out = &rs->body;
	enum query_top_sort sort;
	int64_t limit = 0;
	int rc;

	if (r == WEB_Q_LABELS || r == WEB_Q_LABEL_VALUES)
		return labels(rq, r == WEB_Q_LABEL_VALUES, now, out, msg);
	a = malloc(2 * sizeof(*a));
	if (!a)
		return err_set(msg, ERR_NOMEM, "out of memory");
	if (r == WEB_Q_RENDER_DIFF || r == WEB_Q_DIFF_TOP) {
		b = a + 1;
		rc = parse_side(rq, "leftQuery", "leftFrom", "leftUntil", now, a, msg);
		if (!rc)
			rc = parse_side(rq, "rightQuery", "rightFrom", "rightUntil", now, b, msg);
	} else {
		rc = parse_side(rq, "query", "from", "until", now, a, msg);
	}
	if (rc)
		goto out;
	switch (r) {
	case WEB_Q_RENDER:
		rc = render_format(rq, dot, msg);
		if (!rc && *dot)
			rc = query_dot(st, rq->tenant, &a->p, out, msg);
		else if (!rc)
			rc = render_series(rq, a, msg);
		if (!rc && !*dot)
			rc = query_render(st, rq->tenant, &a->p, out, msg);
		break;
	case WEB_Q_RENDER_DIFF:
		rc = query_render_diff(st, rq->tenant, &a->p, &b->p, out, msg);
		break;
	case WEB_Q_PPROF:
		rc = query_pprof(st, rq->tenant, &a->p, out, msg);
		break;
	case WEB_Q_TOP:
		rc = parse_sort(rq, &sort, msg);
		if (!rc)
			rc = param_int(rq, "limit", 1000000, &limit, msg);
		if (!rc)
			rc = query_top(st, rq->tenant, &a->p, sort, (size_t)limit, out, msg);
		break;
	case WEB_Q_FOLDED:
		rc = query_folded(st, rq->tenant, &a->p, out, msg);
		break;
	case WEB_Q_DIFF_TOP:
		rc = diff_top(rq, a, b, out, msg);
		break;
	default:
		rc = err_set(msg, ERR_NOT_FOUND, "no such query route");
		break;
	}
out:
	free(a);
	return rc;
}

void web__handle_query(struct web__req *rq, enum web__query_route r, struct web__resp *rs)
{
	struct err_msg msg;
	int rc, dot = 0;

	err_clear(&msg);
	/* rs->body is capped by the server's response limit (server.c). */
	rc = run_query(rq, r, rs, &dot, &msg);
	if (rc) {
		if (!msg.text[0] && rc == ERR_TOO_LARGE)
			snprintf(msg.text, sizeof(msg.text),
				 "response larger than the limit of %zu bytes", rs->body.max);
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	rs->status = 200;
	switch (r) {
	case WEB_Q_PPROF:
		rs->content_type = "application/octet-stream";
		rs->extra_headers = "Content-Disposition: attachment; filename=profile.pb.gz\r\n";
		break;
	case WEB_Q_TOP:
	case WEB_Q_FOLDED:
	case WEB_Q_DIFF_TOP:
		rs->content_type = "text/plain; charset=utf-8";
		break;
	case WEB_Q_RENDER:
		/* Pyroscope's: Go's sniffed type of DOT text, bare for no samples. */
		if (dot) {
			rs->content_type = rs->body.len ? "text/plain; charset=utf-8" : "text/plain";
			break;
		}
		rs->content_type = "application/json";
		break;
	default:
		rs->content_type = "application/json";
		break;
	}
}

void web__handle_connect(struct web__req *rq, const char *method, struct web__resp *rs)
{
	struct err_msg msg;
	int rc, proto;

	err_clear(&msg);
	if ((proto = web__connect_codec(rq, "querier.v1", rs)) < 0)
		return;
	rc = (proto ? query_connect_proto : query_connect)(
		rq->srv->store, rq->tenant, method, rq->body.data ? rq->body.data : "",
		rq->body.len, &rq->qlim, &rs->body, &msg);
	if (rc == ERR_NOT_FOUND && !msg.text[0])
		snprintf(msg.text, sizeof(msg.text),
			 "querier.v1.QuerierService has no method \"%.64s\"", method);
	web__connect_finish(rs, rc, proto, "querier.v1", &msg);
}

int web__query_admit(struct web_server *srv, const char *tenant, struct web__resp *rs,
		     struct web__tenant_state **ts, struct err_msg *msg)
{
	int n, rc;

	/* The tenant's slots first: a tenant at its limit takes no server slot. */
	rc = web__limits_query_admit(srv->limits, tenant, ts, msg);
	if (rc) {
		web__resp_retry_after(rs, 1);
		return rc;
	}
	n = atomic_fetch_add_explicit(&srv->queries_running, 1, memory_order_relaxed);
	if (n < srv->max_queries)
		return 0;
	atomic_fetch_sub_explicit(&srv->queries_running, 1, memory_order_relaxed);
	web__limits_query_done(*ts);
	return err_set(msg, ERR_UNAVAILABLE,
		       "server busy: %d queries running (the rest of the %d workers are kept "
		       "for ingest); retry shortly", n, srv->opt.threads);
}

void web__query_done(struct web_server *srv, struct web__tenant_state *ts)
{
	web__limits_query_done(ts);
	atomic_fetch_sub_explicit(&srv->queries_running, 1, memory_order_relaxed);
}

void web__handle_symbolz(struct web__req *rq, struct web__resp *rs)
{
	(void)rq;
	rs->status = 200;
	rs->content_type = "text/plain; charset=utf-8";
}
