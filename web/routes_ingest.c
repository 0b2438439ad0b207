/*
 * routes_ingest.c - the ingest endpoints: Pyroscope's legacy
 * POST /ingest (raw or multipart pprof) and the Connect unary
 * POST /push.v1.PusherService/Push (JSON or binary PushRequest), and
 * OTLP/HTTP POST /v1development/profiles (binary or JSON
 * ExportProfilesServiceRequest; errors as google.rpc.Status, in the
 * encoding of the request).
 */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/timeparse.h"
#include "web/web_int.h"

#include "otlp_status.pb-c.h"

#define NAME_MAX_BYTES 4096
#define TIME_MAX_BYTES 64

void web__resp_text_error(struct web__resp *rs, int code, const char *message)
{
	rs->status = err_http_status(code);
	rs->content_type = "text/plain; charset=utf-8";
	rs->reason = web__reason_of_err(code);
	buf_reset(&rs->body);
	buf_printf(&rs->body, "%s\n", message && *message ? message : err_str(code));
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

enum web__reason web__reason_of_err(int code)
{
	switch (code) {
	case ERR_INVALID:
		return WEB_REJ_INVALID;
	case ERR_TOO_LARGE:
		return WEB_REJ_TOO_LARGE;
	default:
		return WEB_REJ_OTHER;
	}
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

/* Finds the pprof bytes of the request: the body, or its multipart `profile` field. */
static int find_pprof(struct web__req *rq, const void **data, size_t *len, struct err_msg *msg)
{
	char boundary[WEB_BOUNDARY_MAX + 1];
	struct web__part parts[WEB_MULTIPART_MAX_PARTS];
	const struct web__part *p;
	size_t n = 0;
	int rc;

	if (!web__media_type_is(rq->content_type, "multipart/form-data")) {
		*data = rq->body.data;
		*len = rq->body.len;
		return 0;
	}
	rc = web__multipart_boundary(rq->content_type, boundary, sizeof(boundary), msg);
	if (rc)
		return rc;
	rc = web__multipart_parse(rq->body.data, rq->body.len, boundary, parts,
				  WEB_MULTIPART_MAX_PARTS, &n, msg);
	if (rc)
		return rc;
	p = web__multipart_find(parts, n, "profile");
	if (!p)
		return err_set(msg, ERR_INVALID, "multipart: no \"profile\" field");
	*data = p->data;
	*len = p->len;
	return 0;
}

/* Checks name and format and reads from/until; 0 or an error with its reason. */
static int ingest_params(struct web__req *rq, char *name, int64_t *from, int64_t *until,
			 int *format_given, enum web__reason *reason, struct err_msg *msg)
{
	char format[32];
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
	rc = web__query_param(rq->query, "format", format, sizeof(format));
	*format_given = rc != ERR_NOT_FOUND;
	if (rc == 0 && strcmp(format, "pprof") != 0) {
		*reason = WEB_REJ_UNSUPPORTED;
		return err_set(msg, ERR_INVALID, "format %s not supported (only pprof)", format);
	}
	if (rc && rc != ERR_NOT_FOUND) {
		*reason = WEB_REJ_UNSUPPORTED;
		return err_set(msg, ERR_INVALID, "format parameter not supported (only pprof)");
	}
	rc = time_param(rq->query, "from", now, from, msg);
	if (rc == 0)
		rc = time_param(rq->query, "until", now, until, msg);
	return rc;
}

void web__handle_ingest(struct web__req *rq, enum web__endpoint ep, struct web__resp *rs)
{
	char name[NAME_MAX_BYTES];
	int64_t from = 0, until = 0;
	int format_given = 0;
	enum web__reason reason;
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	const void *data = NULL;
	size_t len = 0;
	int rc;

	(void)ep;
	err_clear(&msg);
	rc = ingest_params(rq, name, &from, &until, &format_given, &reason, &msg);
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		rs->reason = reason;
		return;
	}
	rc = find_pprof(rq, &data, &len, &msg);
	if (rc == 0 && len == 0)
		rc = err_set(&msg, ERR_INVALID, "empty profile body");
	if (rc == 0)
		rc = ingest_legacy(rq->srv->store, &rq->srv->opt.limits, rq->tenant, name, from,
				   until, data, len, &st, &msg);
	if (rc) {
		if (rc == ERR_INVALID && !format_given &&
		    !web__media_type_is(rq->content_type, "multipart/form-data")) {
			size_t n = strlen(msg.text);

			snprintf(msg.text + n, sizeof(msg.text) - n,
				 " (no format parameter: body parsed as pprof)");
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
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	int json, rc;

	err_clear(&msg);
	if (web__media_type_is(rq->content_type, "application/json")) {
		json = 1;
	} else if (web__media_type_is(rq->content_type, "application/proto") ||
		   web__media_type_is(rq->content_type, "application/protobuf") ||
		   web__media_type_is(rq->content_type, "application/x-protobuf")) {
		json = 0;
	} else {
		/* Connect: an unsupported codec is HTTP 415. */
		snprintf(msg.text, sizeof(msg.text),
			 "Content-Type \"%.64s\" not supported (use application/json or "
			 "application/proto)", rq->content_type ? rq->content_type : "");
		web__resp_connect_error(rs, ERR_INVALID, msg.text);
		rs->status = 415;
		rs->reason = WEB_REJ_UNSUPPORTED;
		return;
	}
	if (rq->body.len == 0) {
		web__resp_connect_error(rs, ERR_INVALID, "empty PushRequest");
		return;
	}
	rc = ingest_push(rq->srv->store, &rq->srv->opt.limits, rq->tenant, rq->body.data,
			 rq->body.len, json, &st, &msg);
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
	rc = ingest_otlp(rq->srv->store, &rq->srv->opt.limits, rq->tenant, rq->body.data,
			 rq->body.len, json, clock_wall_ns(), &st, &msg);
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
