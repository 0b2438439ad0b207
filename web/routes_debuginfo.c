/*
 * routes_debuginfo.c - debug info over HTTP, on top of the debug-info
 * service (debuginfo/debuginfo.h):
 *
 *   POST /api/v1/debuginfo/<build-id>[?type=executable]  upload, streamed to disk
 *   GET  /api/v1/debuginfo/<build-id>                    metadata, 404 if unknown
 *   GET  /api/v1/debuginfo                               every build ID
 *   GET  /api/v1/debuginfo?missing=1                     build IDs retained profiles
 *                                                        use without debug info
 *   GET  /api/v1/debuginfo?unsymbolizable=1              binaries ingest saw without
 *                                                        names, per tenant and service
 *   GET  /buildid/<build-id>/debuginfo|executable        debuginfod protocol
 *   GET  /api/v1/symbolization?query=&from=&until=       status per build ID
 *   POST /api/v1/perfmap/<pid>                           a JIT perf map (routes_perfmap.c)
 *
 * and Pyroscope's debuginfo.v1alpha1.DebuginfoService, as profilecli and
 * the eBPF agents call it: ShouldInitiateUpload, UploadFinished and
 * ListDebuginfo over Connect (JSON or protobuf), and
 *   POST /debuginfo.v1alpha1.DebuginfoService/Upload/<build-id>
 * which stores the body like an upload of type executable and answers 200.
 *
 * Uploads are never buffered: the body is read in chunks straight into the
 * service's temporary file, under --max-debuginfo-bytes (a Content-Length
 * over it is refused before reading).  server.c has checked the token's
 * scope (upload for POST, query or upload to read); replacing stored bytes
 * (?replace=true) also needs admin, checked here before the body is read.
 * A token bound to one tenant sees, fetches and replaces only what the
 * service lets that tenant see (debuginfo.h, "Trust"); an all-tenants
 * token sees everything and uploads files for every tenant.  Answers
 * never carry server paths: store and disk errors are logged, and the
 * client gets a plain sentence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/timeparse.h"
#include "debuginfo/debuginfo.h"
#include "query/query.h"
#include "web_int.h"

#include "debuginfo.pb-c.h"

#define UPLOAD_CHUNK (256 * 1024)
#define PYRO_UPLOAD "/debuginfo.v1alpha1.DebuginfoService/Upload/"
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

/* The tenant whose view of debug info a request gets: NULL for an all-tenants token. */
static const char *viewer(const struct web__req *rq)
{
	return strcmp(rq->who->tenant, WEB_ALL_TENANTS) == 0 ? NULL : rq->tenant;
}

static int truthy(const char *v)
{
	return strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0;
}

static const char *kind_str(enum debuginfo_file_kind kind)
{
	return kind == DEBUGINFO_FILE_EXECUTABLE ? "executable"
	       : kind == DEBUGINFO_FILE_KALLSYMS ? "kallsyms"
						  : "debuginfo";
}

int web__debuginfo_bytes_admit(struct web__req *rq, struct web__resp *rs, long long declared)
{
	struct err_msg msg;
	int retry = 0, rc;

	err_clear(&msg);
	rc = web__limits_debuginfo_admit(rq->srv->limits, rq->tenant,
					 declared > 0 ? (size_t)declared : 0, &retry, &msg);
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		if (retry)
			web__resp_retry_after(rs, retry);
	}
	return rc;
}

static void upload(struct web__req *rq, struct debuginfo *svc, const char *id, int pyroscope,
		   struct web__resp *rs)
{
	struct debuginfo_upload_result res;
	struct debuginfo_upload *u = NULL;
	struct debuginfo_upload_by by = { viewer(rq), 0, rq->who->name, web__req_remote(rq) };
	enum debuginfo_file_kind kind = DEBUGINFO_FILE_DEBUGINFO;
	long long declared = web__req_content_length(rq);
	struct err_msg msg;
	char type[32], replace[16];
	char *chunk = NULL;
	size_t got = 0;
	int rc;

	err_clear(&msg);
	rq->body_state = WEB_BODY_UNREAD;
	if (web__query_param(rq->query, "replace", replace, sizeof(replace)) == 0 &&
	    truthy(replace)) {
		if (!(rq->who->scopes & WEB_SCOPE_ADMIN)) {
			web__resp_text_error(rs, ERR_PERMISSION,
					     "replacing stored debug info needs a token with the admin "
					     "scope");
			return;
		}
		by.replace = 1;
	}
	/* Pyroscope's uploads are whole executables (profilecli's executable-full). */
	if (pyroscope)
		kind = DEBUGINFO_FILE_EXECUTABLE;
	else if (web__query_param(rq->query, "type", type, sizeof(type)) == 0 && type[0]) {
		if (strcmp(type, "executable") == 0)
			kind = DEBUGINFO_FILE_EXECUTABLE;
		else if (strcmp(type, "kallsyms") == 0)
			kind = DEBUGINFO_FILE_KALLSYMS;
		else if (strcmp(type, "debuginfo") != 0) {
			web__resp_text_error(rs, ERR_INVALID,
					     "type must be debuginfo, executable or kallsyms");
			return;
		}
	}
	if (declared >= 0 && (unsigned long long)declared > debuginfo_max_upload(svc)) {
		err_set(&msg, ERR_TOO_LARGE, "debug info file of %lld bytes exceeds the limit of %llu",
			declared, (unsigned long long)debuginfo_max_upload(svc));
		web__resp_text_error(rs, ERR_TOO_LARGE, msg.text);
		return;
	}
	if (web__debuginfo_bytes_admit(rq, rs, declared))
		return;
	chunk = malloc(UPLOAD_CHUNK);
	rc = chunk ? debuginfo_upload_begin(svc, &u, &msg)
		   : err_set(&msg, ERR_NOMEM, "out of memory");
	while (!rc) {
		int n = web__req_read(rq, chunk, UPLOAD_CHUNK);

		if (n == 0)
			break;
		if (n < 0) {
			rc = err_set(&msg, ERR_INVALID, "upload: read failed or timed out");
			break;
		}
		got += (size_t)n;
		rc = debuginfo_upload_write(u, chunk, (size_t)n, &msg);
	}
	free(chunk);
	if (declared < 0)
		web__limits_debuginfo_charge(rq->srv->limits, rq->tenant, got);
	if (rc) {
		debuginfo_upload_abort(u);
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	rq->body_state = WEB_BODY_CONSUMED;
	rc = debuginfo_upload_commit_as(u, id, kind, &by, &res, &msg);
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		if (rc == ERR_INVALID && res.reason == SYM_REASON_NO_SYMBOLS)
			rs->status = 422;
		return;
	}
	json_ok(rs, res.unchanged || pyroscope ? 200 : 201);
	buf_printf(&rs->body,
		   "{\"buildId\":\"%s\",\"type\":\"%s\",\"size\":%llu,\"unchanged\":%s,"
		   "\"debuginfo\":%s,\"executable\":%s,\"kallsyms\":%s}\n",
		   id, kind_str(kind), (unsigned long long)res.size, res.unchanged ? "true" : "false",
		   res.kinds & 1 ? "true" : "false", res.kinds & 2 ? "true" : "false",
		   res.kinds & 4 ? "true" : "false");
}

struct list_out {
	struct buf *out;
	size_t n;
};

/* `key` (the JSON text before the value, e.g. ",\"name\":"), then s as a JSON string. */
static int put_str(struct buf *out, const char *key, const char *s)
{
	int rc = buf_puts(out, key);

	return rc ? rc : buf_put_json_str(out, s, strlen(s));
}

int web__debuginfo_record_json(struct buf *out, const struct debuginfo_record *r)
{
	char sha[2 * sizeof(r->sha256) + 1];
	int rc = put_str(out, "{\"buildId\":", r->build_id);

	if (!rc)
		rc = buf_printf(out,
				",\"source\":\"%s\",\"size\":%llu,\"uploaded\":%lld,\"lastUsed\":%lld,"
				"\"status\":\"%s\"",
				debuginfo_source_str(r->source), (unsigned long long)r->size,
				(long long)(r->uploaded_ns / 1000000),
				(long long)(r->last_used_ns / 1000000),
				debuginfo_status_str(r->status));
	if (!rc)
		rc = put_str(out, ",\"reason\":", r->reason);
	if (!rc)
		rc = buf_printf(out, ",\"debuginfo\":%s,\"executable\":%s,\"kallsyms\":%s,"
				"\"retryAt\":%lld,\"shared\":%s,\"lastProfile\":%lld",
				r->kinds & (1u << DEBUGINFO_FILE_DEBUGINFO) ? "true" : "false",
				r->kinds & (1u << DEBUGINFO_FILE_EXECUTABLE) ? "true" : "false",
				r->kinds & (1u << DEBUGINFO_FILE_KALLSYMS) ? "true" : "false",
				(long long)(r->retry_at_ns / 1000000), r->shared ? "true" : "false",
				(long long)(r->last_profile_ns / 1000000));
	if (!rc && r->has_sha256) {
		sha256_hex(r->sha256, sha);
		rc = buf_printf(out, ",\"sha256\":\"%s\"", sha);
	}
	return rc ? rc : buf_putc(out, '}');
}

static int missing_one(void *ctx, const char *build_id, int64_t last_profile_ns,
		       enum debuginfo_status status)
{
	struct list_out *l = ctx;
	int rc = l->n++ ? buf_putc(l->out, ',') : 0;

	if (!rc)
		rc = put_str(l->out, "{\"buildId\":", build_id);
	if (!rc)
		rc = buf_printf(l->out, ",\"lastProfile\":%lld,\"status\":\"%s\"}",
				(long long)(last_profile_ns / 1000000), debuginfo_status_str(status));
	return rc;
}

static int unsym_one(void *ctx, const struct debuginfo_unsym_entry *e)
{
	struct list_out *l = ctx;
	int rc = l->n++ ? buf_putc(l->out, ',') : 0;

	if (!rc)
		rc = put_str(l->out, "{\"tenant\":", e->tenant);
	if (!rc)
		rc = put_str(l->out, ",\"service\":", e->service);
	if (!rc)
		rc = put_str(l->out, ",\"buildId\":", e->build_id);
	if (!rc)
		rc = put_str(l->out, ",\"binary\":", e->binary);
	if (!rc)
		rc = buf_printf(l->out, ",\"status\":\"%s\"", debuginfo_status_str(e->status));
	if (!rc)
		rc = put_str(l->out, ",\"reason\":", e->reason);
	if (!rc)
		rc = buf_printf(l->out,
				",\"profiles\":%llu,\"samples\":%llu,\"firstSeen\":%lld,"
				"\"lastSeen\":%lld}",
				(unsigned long long)e->profiles, (unsigned long long)e->samples,
				(long long)(e->first_seen_ns / 1000000),
				(long long)(e->last_seen_ns / 1000000));
	return rc;
}

static int list_one(void *ctx, const struct debuginfo_record *r)
{
	struct list_out *l = ctx;
	int rc = l->n++ ? buf_putc(l->out, ',') : 0;

	return rc ? rc : web__debuginfo_record_json(l->out, r);
}

/* A failure of the store or the disk: logged in full, answered plainly. */
static void internal_error(struct web__resp *rs, int rc, const char *what, const struct err_msg *msg)
{
	char text[128];

	log_error("%s: %s", what, msg->text[0] ? msg->text : err_str(rc));
	snprintf(text, sizeof(text), "%s failed (the server log says why)", what);
	buf_reset(&rs->body);
	web__resp_text_error(rs, rc == ERR_TOO_LARGE ? rc : ERR_IO, text);
}

/*
 * GET /api/v1/debuginfo: a JSON array of the records the request may see;
 * with missing=1, of the build IDs that retained profiles reference and
 * have no usable debug info (their frames stay hex).  The store does not
 * say which tenant's profiles reference a build ID, so that list is for
 * all-tenants tokens only: it would name other tenants' binaries.
 */
static void list(struct web__req *rq, struct debuginfo *svc, struct web__resp *rs)
{
	struct list_out l = { &rs->body, 0 };
	struct err_msg msg;
	char missing[8];
	int rc;

	err_clear(&msg);
	rc = buf_putc(&rs->body, '[');
	if (!rc && !web__query_param(rq->query, "missing", missing, sizeof(missing)) &&
	    truthy(missing)) {
		if (viewer(rq)) {
			buf_reset(&rs->body);
			web__resp_text_error(rs, ERR_PERMISSION,
					     "missing=1 lists the build IDs of every tenant's profiles: "
					     "it needs a token for all tenants");
			return;
		}
		rc = debuginfo_missing_each(svc, missing_one, &l, &msg);
	} else if (!rc && !web__query_param(rq->query, "unsymbolizable", missing, sizeof(missing)) &&
		   truthy(missing)) {
		rc = debuginfo_unsym_each(svc, viewer(rq), NULL, unsym_one, &l);
	} else if (!rc) {
		rc = debuginfo_list_as(svc, viewer(rq), list_one, &l, &msg);
	}
	if (!rc)
		rc = buf_putc(&rs->body, ']');
	if (rc) {
		internal_error(rs, rc, "listing the debug info", &msg);
		return;
	}
	json_ok(rs, 200);
}

static void symbolization(struct web__req *rq, struct debuginfo *svc, struct web__resp *rs)
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
	p.limits = rq->qlim;
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

/* ---- debuginfo.v1alpha1 over Connect ----------------------------------- */

/* Pyroscope's reasons (pkg/debuginfo), so agents log the same words. */
#define REASON_FIRST_TIME "First time we see this Build ID, and it does not exist in debuginfo " \
	"storage, therefore it should be uploaded."
#define REASON_EXISTS "Debuginfo already exists and is not marked as invalid, therefore no " \
	"new upload is needed."
#define REASON_INVALID "Debuginfo is invalid, therefore it should be uploaded again."
#define REASON_EMPTY "Empty GNU build ID, therefore no upload is needed."

static int should_upload(struct debuginfo *svc, const Debuginfo__V1alpha1__ShouldInitiateUploadRequest *req,
			 struct arena *a, ProtobufCMessage **out, struct err_msg *msg)
{
	Debuginfo__V1alpha1__ShouldInitiateUploadResponse *r = arena_calloc(a, 1, sizeof(*r));
	const char *id = req->file ? req->file->gnu_build_id : "";
	struct debuginfo_record rec;
	int rc;

	if (!r)
		return err_set(msg, ERR_NOMEM, "out of memory");
	debuginfo__v1alpha1__should_initiate_upload_response__init(r);
	if (!id[0]) {
		r->reason = REASON_EMPTY;
	} else if ((rc = debuginfo_get(svc, id, &rec, msg)) == ERR_NOT_FOUND ||
		   (!rc && !rec.uploaded_ns)) {
		r->should_initiate_upload = 1;
		r->reason = REASON_FIRST_TIME;
	} else if (rc) {
		return rc;
	} else if (rec.status != DEBUGINFO_STATUS_OK) {
		r->should_initiate_upload = 1;
		r->reason = REASON_INVALID;
	} else {
		r->reason = REASON_EXISTS;
	}
	err_clear(msg);
	*out = &r->base;
	return 0;
}

struct v1_list {
	struct arena *a;
	Debuginfo__V1alpha1__ObjectMetadata **v;
	size_t n, cap;
};

static int v1_list_one(void *ctx, const struct debuginfo_record *rec)
{
	struct v1_list *l = ctx;
	Debuginfo__V1alpha1__ObjectMetadata *o;
	Debuginfo__V1alpha1__FileMetadata *f;
	Debuginfo__V1alpha1__Timestamp *t;

	if (!rec->uploaded_ns)
		return 0; /* only files that arrived, as Pyroscope lists its bucket */
	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 64;
		void *nv = arena_calloc(l->a, nc, sizeof(*l->v));

		if (!nv)
			return ERR_TOO_LARGE;
		if (l->n)
			memcpy(nv, l->v, l->n * sizeof(*l->v));
		l->v = nv;
		l->cap = nc;
	}
	o = arena_calloc(l->a, 1, sizeof(*o));
	f = arena_calloc(l->a, 1, sizeof(*f));
	t = arena_calloc(l->a, 1, sizeof(*t));
	if (!o || !f || !t)
		return ERR_TOO_LARGE;
	debuginfo__v1alpha1__object_metadata__init(o);
	debuginfo__v1alpha1__file_metadata__init(f);
	debuginfo__v1alpha1__timestamp__init(t);
	f->gnu_build_id = arena_strndup(l->a, rec->build_id, strlen(rec->build_id));
	if (!f->gnu_build_id)
		return ERR_TOO_LARGE;
	f->type = DEBUGINFO__V1ALPHA1__FILE_METADATA__TYPE__TYPE_EXECUTABLE_FULL;
	t->seconds = rec->uploaded_ns / 1000000000;
	t->nanos = (int32_t)(rec->uploaded_ns % 1000000000);
	o->file = f;
	o->state = DEBUGINFO__V1ALPHA1__OBJECT_METADATA__STATE__STATE_UPLOADED;
	o->started_at = t;
	o->finished_at = t;
	o->size_bytes = (int64_t)rec->size;
	l->v[l->n++] = o;
	return 0;
}

static const struct web__connect_method v1_methods[] = {
	{ "ShouldInitiateUpload", &debuginfo__v1alpha1__should_initiate_upload_request__descriptor },
	{ "UploadFinished", &debuginfo__v1alpha1__upload_finished_request__descriptor },
	{ "ListDebuginfo", &debuginfo__v1alpha1__list_debuginfo_request__descriptor },
};

static int v1_call(struct web__req *rq, void *ctx, size_t m, const ProtobufCMessage *req,
		   struct arena *a, ProtobufCMessage **resp, struct err_msg *msg)
{
	struct debuginfo *svc = ctx;
	int rc = 0;

	(void)rq;
	if (m == 0) {
		rc = should_upload(svc, (const void *)req, a, resp, msg);
	} else if (m == 1) {
		/* Uploads are stored when their body ends: nothing is left to finish. */
		Debuginfo__V1alpha1__UploadFinishedResponse *r = arena_calloc(a, 1, sizeof(*r));

		if (!r)
			return err_set(msg, ERR_NOMEM, "out of memory");
		debuginfo__v1alpha1__upload_finished_response__init(r);
		*resp = &r->base;
	} else {
		Debuginfo__V1alpha1__ListDebuginfoResponse *r = arena_calloc(a, 1, sizeof(*r));
		struct v1_list l = { a, NULL, 0, 0 };

		if (!r)
			return err_set(msg, ERR_NOMEM, "out of memory");
		debuginfo__v1alpha1__list_debuginfo_response__init(r);
		rc = debuginfo_list(svc, v1_list_one, &l, msg);
		if (rc == ERR_TOO_LARGE && !msg->text[0])
			err_set(msg, rc, "ListDebuginfo: the list is larger than allowed");
		r->object = l.v;
		r->n_object = l.n;
		*resp = &r->base;
	}
	return rc;
}

static const struct web__connect_service v1_service = {
	"debuginfo.v1alpha1.DebuginfoService", "debuginfo.v1alpha1", v1_methods,
	sizeof(v1_methods) / sizeof(v1_methods[0]), (size_t)64 << 20,
	"symbolization is not enabled", v1_call,
};

void web__handle_debuginfo_connect(struct web__req *rq, const char *method, struct web__resp *rs)
{
	web__connect_serve(rq, &v1_service, rq->srv->opt.query.symbolizer, method, rs);
}

void web__handle_debuginfo(struct web__req *rq, struct web__resp *rs)
{
	struct debuginfo *svc = rq->srv->opt.query.symbolizer;
	struct debuginfo_record rec;
	const char *path = rq->path, *rest;
	int is_get = strcmp(rq->method, "GET") == 0, rc;
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
	if (strncmp(path, "/api/v1/perfmap/", 16) == 0) {
		web__handle_perfmap(rq, svc, rs);
		return;
	}
	if (strcmp(path, "/api/v1/debuginfo") == 0) {
		list(rq, svc, rs);
		return;
	}
	if (strncmp(path, PYRO_UPLOAD, strlen(PYRO_UPLOAD)) == 0) {
		if (take_id(path + strlen(PYRO_UPLOAD), id, sizeof(id), &rest) || *rest) {
			rq->body_state = WEB_BODY_UNREAD;
			web__resp_text_error(rs, ERR_INVALID, "expected " PYRO_UPLOAD "<hex build ID>");
			return;
		}
		upload(rq, svc, id, 1, rs);
		return;
	}
	if (strncmp(path, "/buildid/", 9) == 0) {
		enum debuginfo_file_kind kind;
		char file[4096];

		if (take_id(path + 9, id, sizeof(id), &rest)) {
			web__resp_text_error(rs, ERR_NOT_FOUND, "not a build ID");
			return;
		}
		if (strcmp(rest, "/debuginfo") == 0)
			kind = DEBUGINFO_FILE_DEBUGINFO;
		else if (strcmp(rest, "/executable") == 0)
			kind = DEBUGINFO_FILE_EXECUTABLE;
		else {
			web__resp_text_error(rs, ERR_NOT_FOUND, "only debuginfo and executable are served");
			return;
		}
		if (debuginfo_file_path_as(svc, viewer(rq), id, kind, file, sizeof(file))) {
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
		upload(rq, svc, id, 0, rs);
		return;
	}
	if (!is_get) {
		rq->body_state = WEB_BODY_UNREAD;
		web__resp_text_error(rs, ERR_INVALID, "use GET or POST");
		rs->status = 405;
		return;
	}
	rc = debuginfo_get_as(svc, viewer(rq), id, &rec, &msg);
	if (rc == ERR_NOT_FOUND || rc == ERR_INVALID) {
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	if (rc) {
		internal_error(rs, rc, "reading the debug info record", &msg);
		return;
	}
	if (web__debuginfo_record_json(&rs->body, &rec)) {
		buf_reset(&rs->body);
		web__resp_text_error(rs, ERR_NOMEM, "out of memory");
		return;
	}
	json_ok(rs, 200);
}

/* Debug info through the bucket (--storage.backend s3; docs/object-storage.md). */
static int bucket_metrics_text(struct buf *out, const struct debuginfo_stats *st)
{
	int rc = buf_printf(
		out,
		"# TYPE unhex_debuginfo_bucket_puts_total counter\n"
		"unhex_debuginfo_bucket_puts_total{object=\"file\",result=\"stored\"} %llu\n"
		"unhex_debuginfo_bucket_puts_total{object=\"index\",result=\"stored\"} %llu\n"
		"unhex_debuginfo_bucket_puts_total{object=\"any\",result=\"found\"} %llu\n"
		"unhex_debuginfo_bucket_puts_total{object=\"file\",result=\"conflict\"} %llu\n"
		"unhex_debuginfo_bucket_puts_total{object=\"any\",result=\"error\"} %llu\n"
		"# TYPE unhex_debuginfo_bucket_pending_build_ids gauge\n"
		"unhex_debuginfo_bucket_pending_build_ids %llu\n"
		"# TYPE unhex_debuginfo_bucket_lookups_total counter\n"
		"unhex_debuginfo_bucket_lookups_total{result=\"hit\"} %llu\n"
		"unhex_debuginfo_bucket_lookups_total{result=\"miss\"} %llu\n"
		"unhex_debuginfo_bucket_lookups_total{result=\"error\"} %llu\n"
		"# TYPE unhex_debuginfo_bucket_downloads_total counter\n"
		"unhex_debuginfo_bucket_downloads_total{object=\"file\",result=\"stored\"} %llu\n"
		"unhex_debuginfo_bucket_downloads_total{object=\"index\",result=\"stored\"} %llu\n"
		"unhex_debuginfo_bucket_downloads_total{object=\"index\",result=\"invalid\"} %llu\n"
		"unhex_debuginfo_bucket_downloads_total{object=\"any\",result=\"error\"} %llu\n"
		"# TYPE unhex_debuginfo_bucket_bytes_total counter\n"
		"unhex_debuginfo_bucket_bytes_total{direction=\"in\"} %llu\n"
		"unhex_debuginfo_bucket_bytes_total{direction=\"out\"} %llu\n",
		(unsigned long long)st->bucket_puts, (unsigned long long)st->bucket_index_puts,
		(unsigned long long)st->bucket_puts_found,
		(unsigned long long)st->bucket_put_conflicts,
		(unsigned long long)st->bucket_put_failures, (unsigned long long)st->bucket_pending,
		(unsigned long long)st->bucket_hits, (unsigned long long)st->bucket_misses,
		(unsigned long long)st->bucket_lookup_failures,
		(unsigned long long)st->bucket_downloads,
		(unsigned long long)st->bucket_index_downloads,
		(unsigned long long)st->bucket_index_invalid,
		(unsigned long long)st->bucket_download_failures,
		(unsigned long long)st->bucket_bytes_in, (unsigned long long)st->bucket_bytes_out);
	if (!rc)
		rc = buf_printf(
			out,
			"# TYPE unhex_debuginfo_bucket_deleted_total counter\n"
			"unhex_debuginfo_bucket_deleted_total{object=\"build_id\"} %llu\n"
			"unhex_debuginfo_bucket_deleted_total{object=\"object\"} %llu\n"
			"# TYPE unhex_debuginfo_bucket_delete_failures_total counter\n"
			"unhex_debuginfo_bucket_delete_failures_total %llu\n"
			"# TYPE unhex_debuginfo_bucket_delete_waiting_build_ids gauge\n"
			"unhex_debuginfo_bucket_delete_waiting_build_ids %llu\n"
			"# TYPE unhex_debuginfo_bucket_use_marks_total counter\n"
			"unhex_debuginfo_bucket_use_marks_total %llu\n",
			(unsigned long long)st->bucket_deleted,
			(unsigned long long)st->bucket_deleted_objects,
			(unsigned long long)st->bucket_delete_failures,
			(unsigned long long)st->bucket_delete_waiting,
			(unsigned long long)st->bucket_use_marks);
	return rc;
}

int web__debuginfo_metrics_text(struct buf *out, const struct debuginfo_stats *st,
				const uint64_t *by_status)
{
	int rc = buf_puts(out,
			  "# HELP unhex_debuginfo_build_ids Build IDs the server knows, by status.\n"
			  "# TYPE unhex_debuginfo_build_ids gauge\n");

	/* Records never hold pending or disabled: those are answers of a query. */
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT && !rc; i++)
		if (i != DEBUGINFO_STATUS_PENDING && i != DEBUGINFO_STATUS_DISABLED)
			rc = buf_printf(out, "unhex_debuginfo_build_ids{status=\"%s\"} %llu\n",
					debuginfo_status_str(i), (unsigned long long)by_status[i]);
	if (!rc)
		rc = buf_puts(out, "# HELP unhex_symbolize_unresolved_locations_total Distinct "
				   "locations that queries left without names, by why.\n"
				   "# TYPE unhex_symbolize_unresolved_locations_total counter\n");
	/* A tenant without symbolization resolves nothing and counts nothing here. */
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT && !rc; i++)
		if (i != DEBUGINFO_STATUS_DISABLED)
			rc = buf_printf(out,
				"unhex_symbolize_unresolved_locations_total{status=\"%s\"} %llu\n",
				debuginfo_status_str(i), (unsigned long long)st->unresolved[i]);
	if (!rc && st->bucket)
		rc = bucket_metrics_text(out, st);
	return rc ? rc : buf_printf(
		out,
		"# TYPE unhex_debuginfo_uploads_total counter\n"
		"unhex_debuginfo_uploads_total{result=\"ok\"} %llu\n"
		"unhex_debuginfo_uploads_total{result=\"refused\"} %llu\n"
		"# TYPE unhex_debuginfod_fetches_total counter\n"
		"unhex_debuginfod_fetches_total{result=\"ok\"} %llu\n"
		"unhex_debuginfod_fetches_total{result=\"not_found\"} %llu\n"
		"unhex_debuginfod_fetches_total{result=\"error\"} %llu\n"
		"unhex_debuginfod_fetches_total{result=\"rate_limited\"} %llu\n"
		"unhex_debuginfod_fetches_total{result=\"deferred\"} %llu\n"
		"# TYPE unhex_debuginfod_redirects_refused_total counter\n"
		"unhex_debuginfod_redirects_refused_total %llu\n"
		"# TYPE unhex_debuginfo_failure_records_dropped_total counter\n"
		"unhex_debuginfo_failure_records_dropped_total %llu\n"
		"# TYPE unhex_symbolize_index_builds_total counter\n"
		"unhex_symbolize_index_builds_total %llu\n"
		"# TYPE unhex_symbolize_index_opens_total counter\n"
		"unhex_symbolize_index_opens_total %llu\n"
		"# TYPE unhex_symbolize_cache_lookups_total counter\n"
		"unhex_symbolize_cache_lookups_total{result=\"hit\"} %llu\n"
		"unhex_symbolize_cache_lookups_total{result=\"miss\"} %llu\n"
		"# TYPE unhex_symbolize_open_indexes gauge\n"
		"unhex_symbolize_open_indexes %llu\n",
		(unsigned long long)st->uploads_ok, (unsigned long long)st->uploads_refused,
		(unsigned long long)st->fetches_ok, (unsigned long long)st->fetches_not_found,
		(unsigned long long)st->fetches_error, (unsigned long long)st->fetches_limited,
		(unsigned long long)st->fetches_deferred,
		(unsigned long long)st->redirects_refused, (unsigned long long)st->failures_dropped,
		(unsigned long long)st->index_builds,
		(unsigned long long)st->index_opens, (unsigned long long)st->cache_hits,
		(unsigned long long)st->cache_misses, (unsigned long long)st->open_indexes);
}

static int count_missing(void *ctx, const char *build_id, int64_t last_profile_ns,
			 enum debuginfo_status status)
{
	(void)build_id, (void)last_profile_ns, (void)status;
	++*(uint64_t *)ctx;
	return 0;
}

/* Build IDs retained profiles use without debug info, and what retention deleted. */
static void retention_metrics(struct debuginfo *svc, struct buf *out)
{
	struct debuginfo_retention_stats total;
	struct debuginfo_stats st;
	uint64_t missing = 0;

	debuginfo_retention_totals(svc, &total, NULL);
	if (debuginfo_missing_each(svc, count_missing, &missing, NULL))
		return;
	buf_printf(out,
		   "# HELP unhex_debuginfo_missing_build_ids Build IDs that retained profiles use "
		   "and that have no debug info: those frames stay hex.\n"
		   "# TYPE unhex_debuginfo_missing_build_ids gauge\n"
		   "unhex_debuginfo_missing_build_ids %llu\n"
		   "# HELP unhex_debuginfo_deleted_total Debug info deleted by retention (no "
		   "retained profile used it).\n"
		   "# TYPE unhex_debuginfo_deleted_total counter\n"
		   "unhex_debuginfo_deleted_total %llu\n"
		   "# HELP unhex_debuginfo_deleted_bytes_total Bytes of the debug files retention deleted.\n"
		   "# TYPE unhex_debuginfo_deleted_bytes_total counter\n"
		   "unhex_debuginfo_deleted_bytes_total %llu\n",
		   (unsigned long long)missing, (unsigned long long)total.deleted,
		   (unsigned long long)total.deleted_bytes);
	debuginfo_stats(svc, &st);
	buf_printf(out,
		   "# HELP unhex_perfmap_deleted_total JIT perf maps deleted: not uploaded for "
		   "--perfmap-retention (expired), or the least recently uploaded past "
		   "--perfmap-max (evicted).\n"
		   "# TYPE unhex_perfmap_deleted_total counter\n"
		   "unhex_perfmap_deleted_total{reason=\"expired\"} %llu\n"
		   "unhex_perfmap_deleted_total{reason=\"evicted\"} %llu\n",
		   (unsigned long long)st.perfmaps_expired, (unsigned long long)st.perfmaps_evicted);
}

struct unsym_out {
	struct buf *out;
	const char *name;
	int samples;      /* the samples counter, else the profiles one */
};

/* The series of one row: the reasons that counted something. */
static int unsym_row_metric(void *ctx, const struct debuginfo_unsym_row *r)
{
	const struct unsym_out *u = ctx;
	struct buf *out = u->out;

	for (int i = 0; i < DEBUGINFO_STATUS_COUNT; i++) {
		uint64_t v = u->samples ? r->samples[i] : r->profiles[i];

		if (!r->profiles[i] && !r->samples[i])
			continue;
		buf_printf(out, "%s{tenant=\"", u->name);
		web__prom_label_value(out, r->tenant[0] || r->service[0] ? r->tenant : "_other");
		buf_puts(out, "\",service=\"");
		web__prom_label_value(out, r->tenant[0] || r->service[0] ? r->service : "_other");
		buf_printf(out, "\",reason=\"%s\"} %llu\n", debuginfo_status_str(i),
			   (unsigned long long)v);
	}
	return 0;
}

/*
 * What ingest counted without names (docs/symbolization.md, "Alerting
 * before anyone looks"): counters per (tenant, service, reason) with a
 * series only for reasons that counted something, and the binaries
 * lacking debug info now, by reason.
 */
static void unsym_metrics(struct debuginfo *svc, struct buf *out)
{
	struct debuginfo_unsym_stats st;
	struct unsym_out prof = { out, "unhex_unsymbolizable_profiles_total", 0 };
	struct unsym_out samp = { out, "unhex_unsymbolizable_samples_total", 1 };

	debuginfo_unsym_stats(svc, &st);
	buf_puts(out, "# HELP unhex_unsymbolizable_profiles_total Stored profiles with frames in a "
		      "binary whose debug info unhex cannot reach, by tenant, service and reason "
		      "(counted at ingest).\n"
		      "# TYPE unhex_unsymbolizable_profiles_total counter\n");
	debuginfo_unsym_each(svc, NULL, unsym_row_metric, NULL, &prof);
	buf_puts(out, "# HELP unhex_unsymbolizable_samples_total Samples of those profiles with "
		      "such a frame, weighted by their count.\n"
		      "# TYPE unhex_unsymbolizable_samples_total counter\n");
	debuginfo_unsym_each(svc, NULL, unsym_row_metric, NULL, &samp);
	buf_puts(out, "# HELP unhex_unsymbolizable_build_ids Binaries seen at ingest lately whose "
		      "debug info is missing, by reason.\n"
		      "# TYPE unhex_unsymbolizable_build_ids gauge\n");
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT; i++)
		if (i != DEBUGINFO_STATUS_OK && i != DEBUGINFO_STATUS_PENDING &&
		    i != DEBUGINFO_STATUS_DISABLED)
			buf_printf(out, "unhex_unsymbolizable_build_ids{reason=\"%s\"} %llu\n",
				   debuginfo_status_str(i), (unsigned long long)st.build_ids[i]);
	buf_printf(out,
		   "# HELP unhex_unsymbolizable_tracked Binaries per tenant and service the "
		   "ingest check tracks, and its cap.\n"
		   "# TYPE unhex_unsymbolizable_tracked gauge\n"
		   "unhex_unsymbolizable_tracked %llu\n"
		   "# TYPE unhex_unsymbolizable_tracked_limit gauge\n"
		   "unhex_unsymbolizable_tracked_limit %llu\n"
		   "# HELP unhex_unsymbolizable_untracked_profiles_total Profiles with frames "
		   "without names not judged: the table was full.\n"
		   "# TYPE unhex_unsymbolizable_untracked_profiles_total counter\n"
		   "unhex_unsymbolizable_untracked_profiles_total %llu\n"
		   "# TYPE unhex_unsymbolizable_lookups_total counter\n"
		   "unhex_unsymbolizable_lookups_total %llu\n",
		   (unsigned long long)st.entries, (unsigned long long)st.max_entries,
		   (unsigned long long)st.untracked_profiles, (unsigned long long)st.lookups);
}

/* The debug-info service's side of struct ingest_hooks. */
static int raw_class(void *ctx, const char *tenant, const char *service, const char *build_id,
		     const char *filename)
{
	return debuginfo_unsym_class(ctx, tenant, service, build_id, filename);
}

static void raw_class_total(void *ctx, const char *tenant, const char *service, int cls,
			    uint64_t profiles, uint64_t samples)
{
	debuginfo_note_ingested_class(ctx, tenant, service, cls, profiles, samples);
}

static void raw_binary(void *ctx, const char *tenant, const char *service, const char *build_id,
		       const char *filename, int cls, uint64_t profiles, uint64_t samples)
{
	debuginfo_note_ingested(ctx, tenant, service, build_id, filename, cls, profiles, samples);
}

_Static_assert(DEBUGINFO_STATUS_COUNT <= INGEST_RAW_CLASSES, "a status is an ingest class");

void web_ingest_hooks_init(struct ingest_hooks *h, struct debuginfo *symbolizer)
{
	h->raw_class = raw_class;
	h->raw_class_total = raw_class_total;
	h->raw_binary = raw_binary;
	h->ctx = symbolizer;
}

void web__debuginfo_ingest_hooks(struct web_server *srv)
{
	if (!srv->opt.query.symbolizer)
		return;
	web_ingest_hooks_init(&srv->ingest_hooks, srv->opt.query.symbolizer);
	srv->opt.limits.hooks = &srv->ingest_hooks;
}

void web__debuginfo_metrics(struct web__req *rq, struct web__resp *rs)
{
	struct debuginfo *svc = rq->srv->opt.query.symbolizer;

	if (svc && rs->status == 200) {
		uint64_t by[DEBUGINFO_STATUS_COUNT];
		struct debuginfo_stats st;

		debuginfo_stats(svc, &st);
		/* A store error leaves the build IDs counted before it: the
		 * gauge is advice, the rest of /metrics still matters. */
		debuginfo_count_by_status(svc, by, NULL);
		web__debuginfo_metrics_text(&rs->body, &st, by);
		retention_metrics(svc, &rs->body);
		unsym_metrics(svc, &rs->body);
	}
	if (rq->srv->opt.query.symmemo && rs->status == 200)
		query_symmemo_metrics(rq->srv->opt.query.symmemo, &rs->body);
}
