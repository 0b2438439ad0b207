/*
 * routes_debuginfo.c - debug info over HTTP, on top of the symbolization
 * service (symbolize/symbolize.h):
 *
 *   POST /api/v1/debuginfo/<build-id>[?type=executable]  upload, streamed to disk
 *   GET  /api/v1/debuginfo/<build-id>                    metadata, 404 if unknown
 *   GET  /api/v1/debuginfo                               every build ID
 *   GET  /buildid/<build-id>/debuginfo|executable        debuginfod protocol
 *   GET  /api/v1/symbolization?query=&from=&until=       status per build ID
 *
 * Uploads are never buffered: the body is read in chunks straight into the
 * service's temporary file, under --max-debuginfo-bytes (a Content-Length
 * over it is refused before reading).  With --upload-token, uploads must
 * carry "Authorization: Bearer <token>".  Debug info is global, so these
 * routes ignore the tenant, except /api/v1/symbolization which measures
 * the tenant's profiles.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/timeparse.h"
#include "query/query.h"
#include "symbolize/symbolize.h"
#include "web/web_int.h"

#define UPLOAD_CHUNK (256 * 1024)
#define ID_MAX (2 * SYM_BUILD_ID_MAX)

static void json_ok(struct web__resp *rs, int status)
{
	rs->status = status;
	rs->content_type = "application/json";
}

/* Copies the build ID path element at `p` (up to '/' or the end) into id. */
static int take_id(const char *p, char *id, size_t len, const char **rest)
{
	size_t n = strcspn(p, "/");

	if (n == 0 || n >= len)
		return ERR_INVALID;
	memcpy(id, p, n);
	id[n] = '\0';
	*rest = p + n;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return ERR_INVALID;
	}
	return n % 2 ? ERR_INVALID : 0;
}

static int authorized(struct web__req *rq)
{
	const char *tok = rq->srv->opt.upload_token;
	const char *h;

	if (!tok || !tok[0])
		return 1;
	h = web__req_header(rq, "Authorization");
	return h && strncmp(h, "Bearer ", 7) == 0 && strcmp(h + 7, tok) == 0;
}

static void upload(struct web__req *rq, struct sym_service *svc, const char *id,
		   struct web__resp *rs)
{
	struct sym_upload_result res;
	struct sym_upload *u = NULL;
	enum sym_file_kind kind = SYM_FILE_DEBUGINFO;
	long long declared = web__req_content_length(rq);
	struct err_msg msg;
	char type[32];
	char *chunk = NULL;
	int rc;

	err_clear(&msg);
	rq->body_state = WEB_BODY_UNREAD;
	if (!authorized(rq)) {
		web__resp_text_error(rs, ERR_INVALID, "upload needs \"Authorization: Bearer <token>\"");
		rs->status = 401;
		return;
	}
	if (web__query_param(rq->query, "type", type, sizeof(type)) == 0 && type[0]) {
		if (strcmp(type, "executable") == 0)
			kind = SYM_FILE_EXECUTABLE;
		else if (strcmp(type, "debuginfo") != 0) {
			web__resp_text_error(rs, ERR_INVALID, "type must be debuginfo or executable");
			return;
		}
	}
	if (declared >= 0 && (unsigned long long)declared > sym_service_max_upload(svc)) {
		err_set(&msg, ERR_TOO_LARGE, "debug info file of %lld bytes exceeds the limit of %llu",
			declared, (unsigned long long)sym_service_max_upload(svc));
		web__resp_text_error(rs, ERR_TOO_LARGE, msg.text);
		return;
	}
	chunk = malloc(UPLOAD_CHUNK);
	rc = chunk ? sym_upload_begin(svc, &u, &msg) : err_set(&msg, ERR_NOMEM, "out of memory");
	while (!rc) {
		int n = web__req_read(rq, chunk, UPLOAD_CHUNK);

		if (n == 0)
			break;
		if (n < 0) {
			rc = err_set(&msg, ERR_INVALID, "upload: read failed or timed out");
			break;
		}
		rc = sym_upload_write(u, chunk, (size_t)n, &msg);
	}
	free(chunk);
	if (rc) {
		sym_upload_abort(u);
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	rq->body_state = WEB_BODY_CONSUMED;
	rc = sym_upload_commit(u, id, kind, &res, &msg);
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		if (rc == ERR_INVALID && res.reason == SYM_REASON_NO_SYMBOLS)
			rs->status = 422;
		return;
	}
	json_ok(rs, res.unchanged ? 200 : 201);
	buf_printf(&rs->body,
		   "{\"buildId\":\"%s\",\"type\":\"%s\",\"size\":%llu,\"unchanged\":%s,"
		   "\"debuginfo\":%s,\"executable\":%s}\n",
		   id, kind == SYM_FILE_EXECUTABLE ? "executable" : "debuginfo",
		   (unsigned long long)res.size, res.unchanged ? "true" : "false",
		   res.kinds & 1 ? "true" : "false", res.kinds & 2 ? "true" : "false");
}

static void symbolization(struct web__req *rq, struct sym_service *svc, struct web__resp *rs)
{
	char query[8192], from[64], until[64];
	struct query_params p;
	struct err_msg msg;
	int64_t now = clock_wall_ns();
	int rc;

	err_clear(&msg);
	memset(&p, 0, sizeof(p));
	if (web__query_param(rq->query, "query", query, sizeof(query))) {
		web__resp_text_error(rs, ERR_INVALID,
				     "parameter query is required, e.g. "
				     "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"api\"}");
		return;
	}
	if (web__query_param(rq->query, "from", from, sizeof(from)) || !from[0])
		snprintf(from, sizeof(from), "now-1h");
	if (web__query_param(rq->query, "until", until, sizeof(until)) || !until[0])
		snprintf(until, sizeof(until), "now");
	p.query = query;
	p.limits = rq->srv->opt.query;
	p.limits.symbolizer = svc;
	rc = time_parse(from, now, &p.from_ns, &msg);
	if (!rc)
		rc = time_parse(until, now, &p.until_ns, &msg);
	if (!rc)
		rc = query_symbolization(rq->srv->store, rq->tenant, &p, &rs->body, &msg);
	if (rc) {
		buf_reset(&rs->body);
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	json_ok(rs, 200);
}

void web__handle_debuginfo(struct web__req *rq, struct web__resp *rs)
{
	struct sym_service *svc = rq->srv->opt.query.symbolizer;
	const char *path = rq->path, *rest;
	int is_get = strcmp(rq->method, "GET") == 0;
	char id[ID_MAX + 1];
	struct err_msg msg;

	err_clear(&msg);
	if (!svc) {
		web__resp_text_error(rs, ERR_UNAVAILABLE, "symbolization is not enabled");
		return;
	}
	if (strcmp(path, "/api/v1/symbolization") == 0) {
		symbolization(rq, svc, rs);
		return;
	}
	if (strcmp(path, "/api/v1/debuginfo") == 0) {
		if (sym_service_info_json(svc, NULL, &rs->body, &msg)) {
			buf_reset(&rs->body);
			web__resp_text_error(rs, ERR_IO, msg.text);
			return;
		}
		json_ok(rs, 200);
		return;
	}
	if (strncmp(path, "/buildid/", 9) == 0) {
		enum sym_file_kind kind;
		char file[4096];

		if (take_id(path + 9, id, sizeof(id), &rest)) {
			web__resp_text_error(rs, ERR_NOT_FOUND, "not a build ID");
			return;
		}
		if (strcmp(rest, "/debuginfo") == 0)
			kind = SYM_FILE_DEBUGINFO;
		else if (strcmp(rest, "/executable") == 0)
			kind = SYM_FILE_EXECUTABLE;
		else {
			web__resp_text_error(rs, ERR_NOT_FOUND, "only debuginfo and executable are served");
			return;
		}
		if (sym_service_file_path(svc, id, kind, file, sizeof(file))) {
			web__resp_text_error(rs, ERR_NOT_FOUND, "no such build ID here");
			return;
		}
		rs->status = 200;
		rs->content_type = "application/octet-stream";
		rs->file = strdup(file);
		if (!rs->file)
			web__resp_text_error(rs, ERR_NOMEM, "out of memory");
		return;
	}
	/* /api/v1/debuginfo/<id> */
	if (take_id(path + strlen("/api/v1/debuginfo/"), id, sizeof(id), &rest) || *rest) {
		rq->body_state = WEB_BODY_UNREAD;
		web__resp_text_error(rs, ERR_INVALID, "expected /api/v1/debuginfo/<hex build ID>");
		return;
	}
	if (strcmp(rq->method, "POST") == 0) {
		upload(rq, svc, id, rs);
		return;
	}
	if (!is_get) {
		rq->body_state = WEB_BODY_UNREAD;
		web__resp_text_error(rs, ERR_INVALID, "use GET or POST");
		rs->status = 405;
		return;
	}
	if (sym_service_info_json(svc, id, &rs->body, &msg)) {
		buf_reset(&rs->body);
		web__resp_text_error(rs, ERR_NOT_FOUND, msg.text);
		return;
	}
	json_ok(rs, 200);
}

void web__debuginfo_metrics(struct web__req *rq, struct web__resp *rs)
{
	if (rq->srv->opt.query.symbolizer && rs->status == 200)
		sym_service_metrics(rq->srv->opt.query.symbolizer, &rs->body);
	if (rq->srv->opt.query.symmemo && rs->status == 200)
		query_symmemo_metrics(rq->srv->opt.query.symmemo, &rs->body);
}
