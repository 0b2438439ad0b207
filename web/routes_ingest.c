/*
 * routes_ingest.c - the ingest endpoints: Pyroscope's legacy
 * POST /ingest (pprof raw or multipart with its sample_type_config, JFR raw
 * or multipart with its labels, folded and lines text, trie, tree and
 * speedscope), the Connect unary
 * POST /push.v1.PusherService/Push (JSON or binary PushRequest), and
 * OTLP/HTTP POST /v1development/profiles (binary or JSON
 * ExportProfilesServiceRequest; errors as google.rpc.Status, in the
 * encoding of the request).
 */
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/clock.h"
#include "base/compress.h"
#include "base/timeparse.h"
#include "proto/pbjson.h"
#include "web_int.h"

#include "otlp_status.pb-c.h"

#define NAME_MAX_BYTES 4096
#define TIME_MAX_BYTES 64
#define FORMAT_MAX_BYTES 32
#define SPY_MAX_BYTES 128

void web__resp_text_error(struct web__resp *rs, int code, const char *message)
{
	rs->status = err_http_status(code);
	rs->content_type = "text/plain; charset=utf-8";
	rs->reason = web__reason_of_err(code);
	buf_reset(&rs->body);
	buf_printf(&rs->body, "%s\n", message && *message ? message : err_str(code));
}

void web__resp_retry_after(struct web__resp *rs, int seconds)
{
	snprintf(rs->hdr, sizeof(rs->hdr), "Retry-After: %d\r\n", seconds);
	rs->extra_headers = rs->hdr;
}

void web__resp_connect_error(struct web__resp *rs, int code, const char *message)
{
	const char *m = message && *message ? message : err_str(code);

	rs->status = err_http_status(code);
	rs->content_type = "application/json";
	rs->reason = web__reason_of_err(code);
	buf_reset(&rs->body);
	buf_printf(&rs->body, "{\"code\":\"%s\",\"message\":", err_connect_code(code));
	buf_put_json_str(&rs->body, m, strlen(m));
	buf_puts(&rs->body, "}");
}

int web__connect_codec(const struct web__req *rq, const char *service, struct web__resp *rs)
{
	char text[256];

	if (web__media_type_is(rq->content_type, "application/json"))
		return 0;
	if (web__media_type_is(rq->content_type, "application/proto") ||
	    web__media_type_is(rq->content_type, "application/protobuf") ||
	    web__media_type_is(rq->content_type, "application/x-protobuf"))
		return 1;
	/* Connect: a codec the server lacks is HTTP 415. */
	snprintf(text, sizeof(text),
		 "%s: Content-Type \"%.64s\" not supported (use application/json or "
		 "application/proto)", service, rq->content_type ? rq->content_type : "");
	web__resp_connect_error(rs, ERR_INVALID, text);
	rs->status = 415;
	rs->reason = WEB_REJ_UNSUPPORTED;
	return -1;
}

size_t web__connect_find(const struct web__connect_method *methods, size_t n,
			 const char *service, const char *method, struct web__resp *rs)
{
	struct err_msg msg;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(methods[i].name, method))
			return i;
	snprintf(msg.text, sizeof(msg.text), "%s has no method \"%.64s\"", service, method);
	web__resp_connect_error(rs, ERR_NOT_FOUND, msg.text);
	return n;
}

void web__connect_finish(struct web__resp *rs, int rc, int proto, const char *service,
			 const struct err_msg *msg)
{
	char text[sizeof(msg->text)];

	if (rc) {
		if (msg->text[0])
			snprintf(text, sizeof(text), "%s", msg->text);
		else
			snprintf(text, sizeof(text), "%s: %s", service, err_str(rc));
		web__resp_connect_error(rs, rc, text);
		return;
	}
	rs->status = 200;
	rs->content_type = proto ? "application/proto" : "application/json";
}

void web__connect_serve(struct web__req *rq, const struct web__connect_service *svc, void *ctx,
			const char *method, struct web__resp *rs)
{
	size_t m = web__connect_find(svc->methods, svc->n_methods, svc->name, method, rs);
	ProtobufCMessage *req = NULL, *resp = NULL;
	struct err_msg msg;
	struct arena a;
	int rc, proto;

	if (m == svc->n_methods)
		return;
	err_clear(&msg);
	if (svc->unavailable && !ctx) {
		web__resp_connect_error(rs, ERR_UNAVAILABLE, svc->unavailable);
		return;
	}
	if ((proto = web__connect_codec(rq, svc->package, rs)) < 0)
		return;
	arena_init(&a, svc->arena_bytes);
	rc = pbjson_read_message(svc->methods[m].req, proto, rq->body.data, rq->body.len, &a, &req,
				 &msg);
	if (!rc)
		rc = svc->call(rq, ctx, m, req, &a, &resp, &msg);
	if (!rc)
		rc = pbjson_write_message(resp, proto, PBJSON_EMIT_DEFAULTS, &rs->body);
	arena_release(&a);
	web__connect_finish(rs, rc, proto, svc->package, &msg);
}

enum web__reason web__reason_of_err(int code)
{
	switch (code) {
	case ERR_INVALID:
		return WEB_REJ_INVALID;
	case ERR_TOO_LARGE:
		return WEB_REJ_TOO_LARGE;
	case ERR_RATE_LIMITED:
		return WEB_REJ_LIMIT;
	case ERR_PERMISSION:
		return WEB_REJ_TENANT;
	default:
		return WEB_REJ_OTHER;
	}
}

/*
 * Admits an ingest request under its tenant's limits (limits.c): 0 with *ts
 * and the tenant's ingest limits in *lim; else the code, a message, and a
 * Retry-After header in rs for a rate limit.
 */
static int tenant_admit(struct web__req *rq, struct web__resp *rs, struct web__tenant_state **ts,
			struct ingest_limits *lim, struct err_msg *msg)
{
	int retry = 0, rc;

	rc = web__limits_ingest_admit(rq->srv->limits, rq->tenant, rq->body.len, ts, &retry, msg);
	if (rc) {
		if (retry)
			web__resp_retry_after(rs, retry);
		return rc;
	}
	/* The request's limits (its inflate bound from the memory budget), the tenant's caps. */
	web__limits_ingest_limits(*ts, &rq->lim, lim);
	return 0;
}

static void count_success(struct web_server *srv, const struct ingest_stats *st)
{
	atomic_fetch_add_explicit(&srv->counters.profiles, st->profiles, memory_order_relaxed);
	atomic_fetch_add_explicit(&srv->counters.samples, st->samples, memory_order_relaxed);
}

/* Reads an optional time parameter; `now` when absent. */
static int time_param(const char *qs, const char *key, int64_t now_ns, int64_t *out,
		      struct err_msg *msg)
{
	char v[TIME_MAX_BYTES];
	struct err_msg why;
	int rc = web__query_param(qs, key, v, sizeof(v));

	if (rc == ERR_NOT_FOUND || (rc == 0 && v[0] == '\0')) {
		*out = now_ns;
		return 0;
	}
	if (rc)
		return err_set(msg, ERR_INVALID, "%s: malformed or too long", key);
	err_clear(&why);
	rc = time_parse(v, now_ns, out, &why);
	return rc ? err_set(msg, rc, "%s: %s", key, why.text) : 0;
}

/* The parts of a multipart body, or none when the body is not multipart. */
struct form {
	struct web__part parts[WEB_MULTIPART_MAX_PARTS];
	size_t n;
	int multipart;
};

static int read_form(struct web__req *rq, struct form *f, struct err_msg *msg)
{
	char boundary[WEB_BOUNDARY_MAX + 1];
	int rc;

	f->n = 0;
	f->multipart = web__media_type_is(rq->content_type, "multipart/form-data");
	if (!f->multipart)
		return 0;
	rc = web__multipart_boundary(rq->content_type, boundary, sizeof(boundary), msg);
	if (rc)
		return rc;
	return web__multipart_parse(rq->body.data, rq->body.len, boundary, f->parts,
				    WEB_MULTIPART_MAX_PARTS, &f->n, msg);
}

/*
 * The profile bytes: the body, or, in a multipart body, the part named
 * `field` (pprof: "profile", with an optional "sample_type_config"; jfr:
 * "jfr", with an optional "labels"), as Pyroscope's clients lay them out.
 */
static int find_parts(struct web__req *rq, const struct form *f, struct ingest_request *req,
		      struct err_msg *msg)
{
	const char *field = req->format == INGEST_FORMAT_JFR ? "jfr" : "profile";
	const struct web__part *p;

	if (!f->multipart) {
		req->data = rq->body.data;
		req->len = rq->body.len;
		return 0;
	}
	p = web__multipart_find(f->parts, f->n, field);
	if (!p)
		return err_set(msg, ERR_INVALID, "multipart: no \"%s\" field", field);
	req->data = p->data;
	req->len = p->len;
	if (req->format == INGEST_FORMAT_JFR) {
		p = web__multipart_find(f->parts, f->n, "labels");
		if (p && p->len) {
			req->jfr_labels = p->data;
			req->labels_len = p->len;
		}
		return 0;
	}
	/* Delta profiles computed by the server: Pyroscope refuses them too. */
	if (web__multipart_find(f->parts, f->n, "prev_profile"))
		return err_set(msg, ERR_INVALID,
			       "multipart: prev_profile is not supported; update pyroscope-go");
	p = web__multipart_find(f->parts, f->n, "sample_type_config");
	if (p) {
		req->sample_type_config = p->data;
		req->stc_len = p->len;
	}
	return 0;
}

/*
 * The format, as Pyroscope picks it: the format parameter, else a
 * content type that names trie or tree, else pprof for a multipart body,
 * else folded text.  unhex also takes "folded" and "groups" by name, a
 * gzipped body without a format as pprof (text never starts 1f 8b), and
 * refuses formats it does not know.
 */
static int pick_format(struct web__req *rq, const char *format, int multipart,
		       enum ingest_format *out, struct err_msg *msg)
{
	static const struct {
		const char *name;
		enum ingest_format f;
	} names[] = {
		{ "pprof", INGEST_FORMAT_PPROF },   { "jfr", INGEST_FORMAT_JFR },
		{ "trie", INGEST_FORMAT_TRIE },     { "tree", INGEST_FORMAT_TREE },
		{ "lines", INGEST_FORMAT_LINES },   { "speedscope", INGEST_FORMAT_SPEEDSCOPE },
		{ "folded", INGEST_FORMAT_FOLDED }, { "groups", INGEST_FORMAT_FOLDED },
	};

	if (format) {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(format, names[i].name) == 0) {
				*out = names[i].f;
				return 0;
			}
		return err_set(msg, ERR_INVALID,
			       "format %.32s not supported (pprof, jfr, folded, lines, trie, tree, "
			       "speedscope)",
			       format);
	}
	if (web__media_type_is(rq->content_type, "binary/octet-stream+trie"))
		*out = INGEST_FORMAT_TRIE;
	else if (web__media_type_is(rq->content_type, "binary/octet-stream+tree"))
		*out = INGEST_FORMAT_TREE;
	else if (multipart || is_gzip(rq->body.data, rq->body.len))
		*out = INGEST_FORMAT_PPROF;
	else
		*out = INGEST_FORMAT_FOLDED;
	return 0;
}

/* sampleRate as Pyroscope reads it: a non-negative integer, else the default 100. */
static uint32_t sample_rate(const char *qs)
{
	char v[32];
	unsigned long long r = 0;
	const char *p = v;

	if (web__query_param(qs, "sampleRate", v, sizeof(v)) || !*v)
		return 100;
	if (*p == '+')
		p++;
	if (!*p)
		return 100;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || r > UINT32_MAX)
			return 100;
		r = r * 10 + (unsigned)(*p - '0');
	}
	return r > UINT32_MAX ? 100 : (uint32_t)r;
}

/* Reads the query parameters into `req` (name, format, spyName, ...). */
static int ingest_params(struct web__req *rq, char *name, char *format, char *spy,
			 struct ingest_request *req, enum web__reason *reason, struct err_msg *msg)
{
	int64_t now = clock_wall_ns();
	int rc;

	*reason = WEB_REJ_INVALID;
	rc = web__query_param(rq->query, "name", name, NAME_MAX_BYTES);
	if (rc == ERR_NOT_FOUND || (rc == 0 && name[0] == '\0'))
		return err_set(msg, ERR_INVALID,
			       "name parameter is required (e.g. name=app.cpu{env=prod})");
	if (rc == ERR_TOO_LARGE)
		return err_set(msg, ERR_INVALID, "name parameter longer than %d bytes",
			       NAME_MAX_BYTES - 1);
	if (rc)
		return err_set(msg, ERR_INVALID, "name parameter: malformed percent-encoding");
	req->name = name;
	rc = web__query_param(rq->query, "format", format, FORMAT_MAX_BYTES);
	if (rc && rc != ERR_NOT_FOUND) {
		*reason = WEB_REJ_UNSUPPORTED;
		return err_set(msg, ERR_INVALID, "format parameter not supported");
	}
	if (rc == ERR_NOT_FOUND || !*format)
		format[0] = '\0';
	rc = web__query_param(rq->query, "spyName", spy, SPY_MAX_BYTES);
	if (rc == ERR_NOT_FOUND || (!rc && !*spy))
		req->spy_name = NULL;
	else if (rc)
		return err_set(msg, ERR_INVALID, "spyName parameter: malformed or too long");
	else
		req->spy_name = spy;
	req->sample_rate = sample_rate(rq->query);
	rc = time_param(rq->query, "from", now, &req->from_ns, msg);
	if (rc == 0)
		rc = time_param(rq->query, "until", now, &req->until_ns, msg);
	return rc;
}

static const char *format_name(enum ingest_format f)
{
	switch (f) {
	case INGEST_FORMAT_PPROF:
		return "pprof";
	case INGEST_FORMAT_JFR:
		return "jfr";
	case INGEST_FORMAT_FOLDED:
		return "folded text";
	case INGEST_FORMAT_LINES:
		return "lines";
	case INGEST_FORMAT_TRIE:
		return "trie";
	case INGEST_FORMAT_TREE:
		return "tree";
	case INGEST_FORMAT_SPEEDSCOPE:
		return "speedscope";
	}
	return "?";
}

void web__handle_ingest(struct web__req *rq, enum web__endpoint ep, struct web__resp *rs)
{
	char name[NAME_MAX_BYTES], format[FORMAT_MAX_BYTES], spy[SPY_MAX_BYTES];
	struct web__tenant_state *ts;
	struct ingest_limits lim;
	struct ingest_request req;
	enum web__reason reason;
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	struct form form;
	int rc;

	(void)ep;
	err_clear(&msg);
	memset(&req, 0, sizeof(req));
	rc = ingest_params(rq, name, format, spy, &req, &reason, &msg);
	if (!rc)
		rc = read_form(rq, &form, &msg);
	if (!rc) {
		rc = pick_format(rq, *format ? format : NULL, form.multipart, &req.format, &msg);
		if (rc)
			reason = WEB_REJ_UNSUPPORTED;
	}
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		rs->reason = reason;
		return;
	}
	rc = find_parts(rq, &form, &req, &msg);
	if (rc == 0 && req.len == 0)
		rc = err_set(&msg, ERR_INVALID, "empty profile body");
	if (rc == 0 && (rc = tenant_admit(rq, rs, &ts, &lim, &msg))) {
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	if (rc == 0) {
		gate_enter(&rq->srv->ingest_gate);
		rc = ingest_pyroscope(rq->srv->store, &lim, rq->tenant, &req, &st, &msg);
		gate_leave(&rq->srv->ingest_gate);
		web__limits_ingest_done(rq->srv->limits, ts, st.profiles, rc, msg.text);
	}
	if (rc) {
		if (rc == ERR_INVALID && !*format && !form.multipart) {
			size_t n = strlen(msg.text);

			snprintf(msg.text + n, sizeof(msg.text) - n,
				 " (no format parameter: body read as %s)", format_name(req.format));
		}
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	count_success(rq->srv, &st);
	rs->status = 200;
	rs->content_type = "application/json";
	buf_printf(&rs->body, "{\"profiles\":%llu,\"samples\":%llu}\n",
		   (unsigned long long)st.profiles, (unsigned long long)st.samples);
}

void web__handle_push(struct web__req *rq, struct web__resp *rs)
{
	struct web__tenant_state *ts;
	struct ingest_limits lim;
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	int proto, json, rc;

	err_clear(&msg);
	if ((proto = web__connect_codec(rq, "push.v1", rs)) < 0)
		return;
	json = !proto;
	if (rq->body.len == 0) {
		web__resp_connect_error(rs, ERR_INVALID, "empty PushRequest");
		return;
	}
	if ((rc = tenant_admit(rq, rs, &ts, &lim, &msg))) {
		web__resp_connect_error(rs, rc, msg.text);
		return;
	}
	gate_enter(&rq->srv->ingest_gate);
	rc = ingest_push(rq->srv->store, &lim, rq->tenant, rq->body.data, rq->body.len, json, &st,
			 &msg);
	gate_leave(&rq->srv->ingest_gate);
	web__limits_ingest_done(rq->srv->limits, ts, st.profiles, rc, msg.text);
	if (rc) {
		web__resp_connect_error(rs, rc, msg.text);
		return;
	}
	count_success(rq->srv, &st);
	rs->status = 200;
	if (json) {
		rs->content_type = "application/json";
		buf_puts(&rs->body, "{}");
	} else {
		rs->content_type = "application/proto";
	}
}

void web__resp_otlp_error(struct web__resp *rs, int code, const char *message, int json)
{
	const char *m = message && *message ? message : err_str(code);
	Google__Rpc__Status st = GOOGLE__RPC__STATUS__INIT;
	size_t n;

	rs->status = err_http_status(code);
	rs->reason = web__reason_of_err(code);
	buf_reset(&rs->body);
	if (json) {
		rs->content_type = "application/json";
		buf_printf(&rs->body, "{\"code\":%d,\"message\":", err_grpc_code(code));
		buf_put_json_str(&rs->body, m, strlen(m));
		buf_puts(&rs->body, "}");
		return;
	}
	rs->content_type = "application/x-protobuf";
	st.code = err_grpc_code(code);
	st.message = (char *)m;
	n = google__rpc__status__get_packed_size(&st);
	if (buf_reserve(&rs->body, n) == 0) {
		google__rpc__status__pack(&st, (uint8_t *)rs->body.data);
		rs->body.len = n;
	}
}

void web__handle_otlp(struct web__req *rq, struct web__resp *rs)
{
	struct web__tenant_state *ts;
	struct ingest_limits lim;
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	int json = 0, rc;

	err_clear(&msg);
	/* OTLP/HTTP: the response uses the encoding of the request. */
	if (web__media_type_is(rq->content_type, "application/json")) {
		json = 1;
	} else if (rq->content_type && *rq->content_type &&
		   !web__media_type_is(rq->content_type, "application/x-protobuf") &&
		   !web__media_type_is(rq->content_type, "application/protobuf")) {
		snprintf(msg.text, sizeof(msg.text),
			 "Content-Type \"%.64s\" not supported (use application/x-protobuf or "
			 "application/json)",
			 rq->content_type);
		web__resp_otlp_error(rs, ERR_INVALID, msg.text, 0);
		rs->status = 415;
		rs->reason = WEB_REJ_UNSUPPORTED;
		return;
	}
	if ((rc = tenant_admit(rq, rs, &ts, &lim, &msg))) {
		web__resp_otlp_error(rs, rc, msg.text, json);
		return;
	}
	gate_enter(&rq->srv->ingest_gate);
	rc = ingest_otlp(rq->srv->store, &lim, rq->tenant, rq->body.data, rq->body.len, json,
			 clock_wall_ns(), &st, &msg);
	gate_leave(&rq->srv->ingest_gate);
	web__limits_ingest_done(rq->srv->limits, ts, st.profiles, rc, msg.text);
	if (rc) {
		web__resp_otlp_error(rs, rc, msg.text, json);
		return;
	}
	count_success(rq->srv, &st);
	/* An empty ExportProfilesServiceResponse: everything was accepted. */
	rs->status = 200;
	if (json) {
		rs->content_type = "application/json";
		buf_reset(&rs->body);
		buf_puts(&rs->body, "{}");
	} else {
		rs->content_type = "application/x-protobuf";
	}
}
