/*
 * server.c - the civetweb glue: start and stop, routing, who asks and for
 * which tenant (before any handler runs or any body byte is read), reading
 * request bodies under the caps, and writing responses.  The only file
 * that includes civetweb.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <civetweb.h>

#include "base/clock.h"
#include "base/compress.h"
#include "base/log.h"
#include "web_int.h"

#define ERRORS_OTLP 2

enum route_kind { R_READY, R_INGEST, R_PUSH, R_STATS, R_METRICS, R_QUERY, R_CONNECT,
		  R_SYMBOLZ, R_STATIC, R_DEBUGINFO, R_SYMSTATUS, R_RELEASES, R_REGRESSIONS,
		  R_BACKUP };


/*
 * A path ending in '/' is a prefix (the rest is the Connect method).
 * `scopes`: a token needs one of them (docs/security.md); SCOPE_PUBLIC
 * needs no token, SCOPE_ANY_TOKEN any valid token (the UI's files: a
 * browser must ask for credentials before its first API call).  The debug
 * info routes decide by method (route_scopes).
 */
#define SCOPE_PUBLIC 0u
#define SCOPE_ANY_TOKEN WEB_SCOPE_ALL
#define SCOPE_BY_METHOD (~0u)

static const struct route {
	const char *path;
	const char *method;
	enum route_kind kind;
	int ep;                /* enum web__endpoint for R_INGEST and R_PUSH,
				  enum web__query_route for R_QUERY */
	int connect;           /* errors in Connect JSON form (1) or as
				  OTLP google.rpc.Status (ERRORS_OTLP) */
	unsigned scopes;
} routes[] = {
	{ "/ready", "GET", R_READY, 0, 0, SCOPE_PUBLIC },
	{ "/ingest", "POST", R_INGEST, WEB_EP_INGEST, 0, WEB_SCOPE_INGEST },
	{ "/pyroscope/ingest", "POST", R_INGEST, WEB_EP_PYROSCOPE_INGEST, 0, WEB_SCOPE_INGEST },
	{ "/push.v1.PusherService/Push", "POST", R_PUSH, WEB_EP_PUSH, 1, WEB_SCOPE_INGEST },
	{ "/v1development/profiles", "POST", R_PUSH, WEB_EP_OTLP, ERRORS_OTLP, WEB_SCOPE_INGEST },
	{ "/api/v1/stats", "GET", R_STATS, 0, 0, WEB_SCOPE_QUERY },
	{ "/metrics", "GET", R_METRICS, 0, 0, WEB_SCOPE_ADMIN },
	{ "/api/v1/admin/backup", "POST", R_BACKUP, 0, 0, WEB_SCOPE_ADMIN },
	{ "/pyroscope/render", "GET", R_QUERY, WEB_Q_RENDER, 0, WEB_SCOPE_QUERY },
	{ "/pyroscope/render-diff", "GET", R_QUERY, WEB_Q_RENDER_DIFF, 0, WEB_SCOPE_QUERY },
	{ "/pyroscope/labels", "GET", R_QUERY, WEB_Q_LABELS, 0, WEB_SCOPE_QUERY },
	{ "/pyroscope/label-values", "GET", R_QUERY, WEB_Q_LABEL_VALUES, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/pprof", "GET", R_QUERY, WEB_Q_PPROF, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/top", "GET", R_QUERY, WEB_Q_TOP, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/folded", "GET", R_QUERY, WEB_Q_FOLDED, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/diff-top", "GET", R_QUERY, WEB_Q_DIFF_TOP, 0, WEB_SCOPE_QUERY },
	{ "/querier.v1.QuerierService/", "POST", R_CONNECT, 0, 1, WEB_SCOPE_QUERY },
	{ "/symbolz", "POST", R_SYMBOLZ, 0, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/debuginfo/", "*", R_DEBUGINFO, 0, 0, SCOPE_BY_METHOD },
	{ "/api/v1/debuginfo", "GET", R_DEBUGINFO, 0, 0, WEB_SCOPE_QUERY | WEB_SCOPE_UPLOAD },
	{ "/api/v1/symbolization", "GET", R_SYMSTATUS, 0, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/releases", "GET", R_RELEASES, 0, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/regressions", "GET", R_REGRESSIONS, 0, 0, WEB_SCOPE_QUERY },
	{ "/buildid/", "GET", R_DEBUGINFO, 0, 0, WEB_SCOPE_QUERY },
};

/* Any other GET path is looked up among the embedded UI files. */
static const struct route static_route = { "/", "GET", R_STATIC, 0, 0, SCOPE_ANY_TOKEN };

/*
 * The scopes a request on `rt` needs: an upload (POST) needs upload
 * (replacing also needs admin, which routes_debuginfo.c checks); reading a
 * build ID's record needs query or upload (`unhex upload` asks first).
 */
static unsigned route_scopes(const struct route *rt, const char *method)
{
	if (rt->scopes != SCOPE_BY_METHOD)
		return rt->scopes;
	return strcmp(method, "POST") == 0 ? WEB_SCOPE_UPLOAD : WEB_SCOPE_QUERY | WEB_SCOPE_UPLOAD;
}

/* Routes that merge profiles: they count against the query limit. */
static int is_query(const struct route *rt)
{
	return rt->kind == R_QUERY || rt->kind == R_CONNECT || rt->kind == R_SYMSTATUS ||
	       rt->kind == R_RELEASES || rt->kind == R_REGRESSIONS;
}

#define READ_CHUNK (64 * 1024)

void web_options_default(struct web_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	opt->listen = WEB_DEFAULT_LISTEN;
	opt->threads = WEB_DEFAULT_THREADS;
	opt->request_timeout_ms = 30000;
	ingest_limits_default(&opt->limits);
	opt->query.timeout_ns = QUERY_DEFAULT_TIMEOUT_NS;
	opt->query.max_bytes = QUERY_DEFAULT_MAX_BYTES;
	opt->max_response_bytes = WEB_DEFAULT_MAX_RESPONSE_BYTES;
}

/* Request body caps of 0 (options not from web_options_default) get the defaults. */
static void default_body_caps(struct ingest_limits *lim)
{
	struct ingest_limits def;

	ingest_limits_default(&def);
	if (!lim->max_request_bytes)
		lim->max_request_bytes = def.max_request_bytes;
	if (!lim->max_decompressed_bytes)
		lim->max_decompressed_bytes = def.max_decompressed_bytes;
}

static const struct route *find_route(const char *path)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		size_t n = strlen(routes[i].path);

		if (routes[i].path[n - 1] == '/' ? strncmp(routes[i].path, path, n) == 0
						 : strcmp(routes[i].path, path) == 0)
			return &routes[i];
	}
	return web__asset_find(path) ? &static_route : NULL;
}

/*
 * Reads the body into out (initialized with the request cap).  A declared
 * Content-Length over the cap fails before reading; a chunked body fails as
 * soon as it passes the cap.  *unread is set when bytes may be left on the
 * connection, which must then be closed.
 */
static int read_body(struct mg_connection *conn, const struct mg_request_info *ri,
		     struct buf *out, int *unread, struct err_msg *msg)
{
	long long declared = ri->content_length;

	*unread = 1;
	if (declared >= 0 && (unsigned long long)declared > out->max)
		return err_set(msg, ERR_TOO_LARGE,
			       "request body of %lld bytes exceeds the limit of %zu bytes",
			       declared, out->max);
	if (declared > 0 && buf_reserve(out, (size_t)declared))
		return err_set(msg, ERR_NOMEM, "out of memory for a %lld-byte body", declared);
	for (;;) {
		size_t room = out->max - out->len;
		int n;

		if (room == 0) {
			char probe;

			n = mg_read(conn, &probe, 1);
			if (n > 0)
				return err_set(msg, ERR_TOO_LARGE,
					       "request body exceeds the limit of %zu bytes", out->max);
			break;
		}
		if (room > READ_CHUNK)
			room = READ_CHUNK;
		if (buf_reserve(out, room))
			return err_set(msg, ERR_NOMEM, "out of memory reading the body");
		n = mg_read(conn, out->data + out->len, room);
		if (n == 0)
			break;
		if (n < 0)
			return err_set(msg, ERR_INVALID,
				       "request body: read failed or timed out after %zu bytes", out->len);
		out->len += (size_t)n;
		out->data[out->len] = '\0';
	}
	if (declared >= 0 && out->len < (unsigned long long)declared)
		return err_set(msg, ERR_INVALID, "request body truncated: got %zu of %lld bytes",
			       out->len, declared);
	*unread = 0;
	return 0;
}

/* Inflates the body when Content-Encoding (or Connect-Content-Encoding) says gzip. */
static int decode_body(struct mg_connection *conn, struct web_server *srv, struct buf *body,
		       struct err_msg *msg)
{
	const char *enc = mg_get_header(conn, "Content-Encoding");
	struct buf out;
	int rc;

	if (!enc)
		enc = mg_get_header(conn, "Connect-Content-Encoding");
	if (!enc || strcasecmp(enc, "identity") == 0)
		return 0;
	if (strcasecmp(enc, "gzip") != 0)
		return err_set(msg, ERR_INVALID, "Content-Encoding \"%.64s\" not supported (use gzip)",
			       enc);
	buf_init(&out, srv->opt.limits.max_decompressed_bytes);
	rc = gunzip_capped(body->data, body->len, srv->opt.limits.max_decompressed_bytes, &out, msg);
	if (rc) {
		if (rc == ERR_TOO_LARGE)
			err_reset(msg, rc, "gzip body inflates past the limit of %zu bytes",
				  srv->opt.limits.max_decompressed_bytes);
		buf_release(&out);
		return rc;
	}
	buf_release(body);
	*body = out;
	return 0;
}

static void send_resp(struct mg_connection *conn, const struct web__resp *rs, int close_conn,
		      const char *extra_headers)
{
	mg_printf(conn,
		  "HTTP/1.1 %d %s\r\n"
		  "Content-Type: %s\r\n"
		  "Content-Length: %zu\r\n"
		  "Cache-Control: %s\r\n"
		  "%s%s%s\r\n",
		  rs->status, err_http_reason(rs->status), rs->content_type, rs->body.len,
		  rs->cache_control ? rs->cache_control : "no-store",
		  close_conn ? "Connection: close\r\n" : "", extra_headers ? extra_headers : "",
		  rs->extra_headers ? rs->extra_headers : "");
	if (rs->body.len)
		mg_write(conn, rs->body.data, rs->body.len);
}

/* Streams a file response (debuginfod downloads) in chunks; false if it cannot be opened. */
static int send_file(struct mg_connection *conn, const struct web__resp *rs, int close_conn)
{
	char *chunk = malloc(READ_CHUNK); /* worker stacks are small */
	struct stat sb;
	FILE *f = chunk ? fopen(rs->file, "rb") : NULL;
	size_t n;

	if (!f || fstat(fileno(f), &sb)) {
		if (f)
			fclose(f);
		free(chunk);
		return 0;
	}
	mg_printf(conn,
		  "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %lld\r\n"
		  "Cache-Control: no-store\r\n%s\r\n",
		  rs->content_type, (long long)sb.st_size, close_conn ? "Connection: close\r\n" : "");
	while ((n = fread(chunk, 1, READ_CHUNK, f)) > 0)
		if (mg_write(conn, chunk, n) <= 0)
			break;
	fclose(f);
	free(chunk);
	return 1;
}

int web__req_read(struct web__req *rq, void *buf, size_t len)
{
	return mg_read(rq->conn, buf, len);
}

const char *web__req_header(struct web__req *rq, const char *name)
{
	return mg_get_header(rq->conn, name);
}

long long web__req_content_length(struct web__req *rq)
{
	return mg_get_request_info(rq->conn)->content_length;
}

const char *web__req_remote(struct web__req *rq)
{
	return mg_get_request_info(rq->conn)->remote_addr;
}

static void set_error(struct web__resp *rs, const struct route *rt, int code, const char *m,
		      enum web__reason reason)
{
	if (rt && rt->connect == ERRORS_OTLP)
		web__resp_otlp_error(rs, code, m, 0);
	else if (rt && rt->connect)
		web__resp_connect_error(rs, code, m);
	else
		web__resp_text_error(rs, code, m);
	rs->reason = reason;
}

static void dispatch(struct web__req *rq, const struct route *rt, struct web__resp *rs)
{
	switch (rt->kind) {
	case R_READY:
		rs->status = 200;
		rs->content_type = "text/plain; charset=utf-8";
		buf_puts(&rs->body, "ready\n");
		break;
	case R_INGEST:
		web__handle_ingest(rq, rt->ep, rs);
		break;
	case R_PUSH:
		if (rt->ep == WEB_EP_OTLP)
			web__handle_otlp(rq, rs);
		else
			web__handle_push(rq, rs);
		break;
	case R_STATS:
		web__handle_stats(rq, rs);
		break;
	case R_BACKUP:
		web__handle_backup(rq, rs);
		break;
	case R_METRICS:
		web__handle_metrics(rq, rs);
		web__debuginfo_metrics(rq, rs);
		break;
	case R_DEBUGINFO:
	case R_SYMSTATUS: /* the symbolization routes; this one merges profiles */
		web__handle_debuginfo(rq, rs);
		break;
	case R_QUERY:
		web__handle_query(rq, (enum web__query_route)rt->ep, rs);
		break;
	case R_CONNECT:
		web__handle_connect(rq, rq->path + strlen(rt->path), rs);
		break;
	case R_SYMBOLZ:
		web__handle_symbolz(rq, rs);
		break;
	case R_RELEASES:
		web__handle_releases(rq, rs);
		break;
	case R_REGRESSIONS:
		web__handle_regressions(rq, rs);
		break;
	case R_STATIC:
		web__handle_static(rq, rs);
		break;
	}
}

/* Reads and validates what every body-carrying route needs; 0 or an error in rs. */
static int prepare(struct mg_connection *conn, const struct mg_request_info *ri,
		   const struct route *rt, struct web__req *rq, struct web__resp *rs,
		   int *unread)
{
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	rc = read_body(conn, ri, &rq->body, unread, &msg);
	if (rc == 0 && (rt->kind == R_INGEST || rt->kind == R_PUSH))
		atomic_fetch_add_explicit(&rq->srv->counters.bytes, rq->body.len,
					  memory_order_relaxed);
	if (rc == 0)
		rc = decode_body(conn, rq->srv, &rq->body, &msg);
	if (rc)
		set_error(rs, rt, rc, msg.text, web__reason_of_err(rc));
	return rc;
}

/* How many times header `name` came (civetweb keeps every occurrence). */
static int header_count(const struct mg_request_info *ri, const char *name)
{
	int n = 0;

	for (int i = 0; i < ri->num_headers; i++)
		if (strcasecmp(ri->http_headers[i].name, name) == 0)
			n++;
	return n;
}

static const struct web__principal open_principal = { WEB_ALL_TENANTS, WEB_SCOPE_ALL, "open" };

/*
 * Decides who asks and for which tenant, before anything of the request is
 * read: *who and tenant, or an error code with a message (ERR_UNAUTHENTICATED
 * 401, ERR_PERMISSION 403, ERR_INVALID 400).  On an open server every
 * request may act for any tenant; its Basic user, if any, still names the
 * tenant, as it does for an all-tenants token.
 */
static int authenticate(struct web_server *srv, struct mg_connection *conn,
			const struct route *rt, const char *method, struct web__principal *who,
			char tenant[WEB_TENANT_MAX + 1], struct err_msg *msg)
{
	const char *h = mg_get_header(conn, "Authorization");
	const char *org = mg_get_header(conn, "X-Scope-OrgID");
	unsigned need = route_scopes(rt, method);
	struct web__cred cred;
	char have[64], want[64];
	int rc;

	memset(&cred, 0, sizeof(cred));
	if (!srv->auth || need == SCOPE_PUBLIC) {
		*who = open_principal;
		if (h && web__cred_parse(h, &cred, NULL) != 0)
			cred.user[0] = '\0';
		rc = web__tenant_for(who, srv->auth ? NULL : cred.user, org, tenant, msg);
		goto out;
	}
	if (!h) {
		rc = err_set(msg, ERR_UNAUTHENTICATED,
			     "authentication required: send \"Authorization: Bearer <token>\", or "
			     "HTTP Basic with the tenant as user and the token as password");
		goto out;
	}
	rc = web__cred_parse(h, &cred, msg);
	if (!rc) {
		rc = web__auth_lookup(srv->auth, cred.secret, cred.secret_len, who);
		if (rc == ERR_UNAUTHENTICATED)
			err_set(msg, rc, "unknown token");
		else if (rc)
			err_set(msg, rc, "out of memory");
	}
	if (!rc)
		rc = web__tenant_for(who, cred.basic ? cred.user : NULL, org, tenant, msg);
	if (!rc && !(who->scopes & need)) {
		web__scopes_str(who->scopes, have, sizeof(have));
		web__scopes_str(need, want, sizeof(want));
		rc = err_set(msg, ERR_PERMISSION, "token \"%s\" (scopes %s) may not %s %s: it needs %s%s",
			     who->name, have[0] ? have : "none", method, rt->path,
			     need == SCOPE_ANY_TOKEN ? "any scope" : "the scope ",
			     need == SCOPE_ANY_TOKEN ? "" : want);
	}
out:
	explicit_bzero(&cred, sizeof(cred));
	return rc;
}

/* A 401 invites credentials; Basic makes a browser ask for tenant and token. */
#define CHALLENGE "WWW-Authenticate: Basic realm=\"unhex\", charset=\"UTF-8\"\r\n"

static int on_request(struct mg_connection *conn, void *cbdata)
{
	struct web_server *srv = cbdata;
	const struct mg_request_info *ri = mg_get_request_info(conn);
	const char *path = ri->local_uri ? ri->local_uri : "";
	const struct route *rt = find_route(path);
	struct web__principal who;
	struct web__req rq = { 0 };
	struct web__resp rs = { 0 };
	char extra[128] = "", tenant[WEB_TENANT_MAX + 1] = WEB_DEFAULT_TENANT;
	struct err_msg msg;
	int unread = ri->content_length > 0, rc;

	rq.srv = srv;
	rq.method = ri->request_method;
	rq.path = path;
	rq.query = ri->query_string;
	rq.content_type = mg_get_header(conn, "Content-Type");
	rq.tenant = tenant;
	rq.who = &who;
	rq.conn = conn;
	who = open_principal;
	buf_init(&rq.body, srv->opt.limits.max_request_bytes);
	buf_init(&rs.body, srv->opt.max_response_bytes);
	rs.reason = WEB_REJ_OTHER;
	err_clear(&msg);

	if (!rt) {
		char m[256];

		snprintf(m, sizeof(m), "no route %.200s (see docs/api.md)", path);
		set_error(&rs, NULL, ERR_NOT_FOUND, m, WEB_REJ_OTHER);
	} else if (strcmp(rt->method, "*") != 0 && strcmp(ri->request_method, rt->method) != 0) {
		char m[96];

		snprintf(m, sizeof(m), "method %.16s not allowed; use %s", ri->request_method,
			 rt->method);
		set_error(&rs, rt, ERR_INVALID, m, WEB_REJ_UNSUPPORTED);
		rs.status = 405;
		snprintf(extra, sizeof(extra), "Allow: %s\r\n", rt->method);
	} else if (header_count(ri, "X-Scope-OrgID") > 1 || header_count(ri, "Authorization") > 1) {
		/* Which one counts would depend on who reads them: a client's
		 * header must never win over the one a proxy adds. */
		set_error(&rs, rt, ERR_INVALID,
			  header_count(ri, "Authorization") > 1 ? "Authorization given more than once"
								: "X-Scope-OrgID given more than once",
			  WEB_REJ_TENANT);
	} else if ((rc = authenticate(srv, conn, rt, ri->request_method, &who, tenant, &msg))) {
		set_error(&rs, rt, rc, msg.text, rc == ERR_INVALID ? WEB_REJ_TENANT : WEB_REJ_OTHER);
		if (rc == ERR_UNAUTHENTICATED)
			snprintf(extra, sizeof(extra), "%s", CHALLENGE);
		log_info("auth: %s %s from %s: %d %s", ri->request_method, path, ri->remote_addr,
			 rs.status, msg.text);
	} else if (web__tenant_check(rq.tenant, &msg)) {
		set_error(&rs, rt, ERR_INVALID, msg.text, WEB_REJ_TENANT);
	} else if (is_query(rt) && web__query_admit(srv, &msg)) {
		set_error(&rs, rt, ERR_UNAVAILABLE, msg.text, WEB_REJ_OTHER);
	} else {
		if ((rt->kind != R_INGEST && rt->kind != R_PUSH && rt->kind != R_CONNECT &&
		     rt->kind != R_SYMBOLZ) ||
		    prepare(conn, ri, rt, &rq, &rs, &unread) == 0)
			dispatch(&rq, rt, &rs);
		if (is_query(rt))
			web__query_done(srv);
	}
	if (rt && (rt->kind == R_INGEST || rt->kind == R_PUSH))
		web__count(srv, rt->ep, &rs);
	if (rs.status >= 500)
		log_error("%s %s: %d %.*s", ri->request_method, path, rs.status,
			  (int)rs.body.len, rs.body.data ? rs.body.data : "");
	else if (rs.status >= 400)
		log_debug("%s %s: %d %.*s", ri->request_method, path, rs.status,
			  (int)rs.body.len, rs.body.data ? rs.body.data : "");
	if (rq.body_state == WEB_BODY_CONSUMED)
		unread = 0;
	else if (rq.body_state == WEB_BODY_UNREAD)
		unread = 1;
	if (!rs.file || !send_file(conn, &rs, unread)) {
		if (rs.file) {
			rs.status = 404;
			buf_reset(&rs.body);
		}
		send_resp(conn, &rs, unread, extra[0] ? extra : NULL);
	}
	free(rs.file);
	buf_release(&rq.body);
	buf_release(&rs.body);
	return rs.status;
}

static int on_log(const struct mg_connection *conn, const char *message)
{
	(void)conn;
	log_warn("civetweb: %s", message);
	return 1;
}

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_init(void)
{
	mg_init_library(0);
}

static int on_init_ssl(void *ssl_ctx, void *user_data)
{
	struct web_server *srv = user_data;

	/* 1: the certificate is set up; civetweb adds nothing of its own. */
	return web__tls_setup(ssl_ctx, srv->opt.tls_cert, srv->opt.tls_key, &srv->tls_msg) ? -1 : 1;
}

/*
 * Who may connect, checked before anything listens: a token file is
 * loaded, or the server is open, which is refused on a reachable address
 * unless asked for; TLS needs both files and a working libssl.
 */
static int check_access(struct web_server *srv, const struct web_options *o, struct err_msg *msg)
{
	int rc;

	if ((o->tls_cert && o->tls_cert[0]) != (o->tls_key && o->tls_key[0]))
		return err_set(msg, ERR_INVALID, "TLS needs both a certificate and a private key");
	if (o->tls_cert && o->tls_cert[0] && (rc = web__tls_check_runtime(msg)))
		return rc;
	if (o->auth_tokens && o->auth_tokens[0]) {
		rc = web__auth_new(o->auth_tokens, &srv->auth, msg);
		if (rc)
			return rc;
		log_info("auth: %zu tokens from %s", web__auth_count(srv->auth), o->auth_tokens);
		if (!web__auth_count(srv->auth))
			log_warn("auth: %s holds no token: every request but /ready gets 401",
				 o->auth_tokens);
		return 0;
	}
	if (!o->auth_disabled && !web__listen_is_loopback(srv->listen))
		return err_set(msg, ERR_INVALID,
			       "refusing to listen on %s without authentication: anyone who can "
			       "reach it could read and write every tenant's profiles; give a token "
			       "file (--auth.tokens FILE, docs/security.md), listen on 127.0.0.1, or "
			       "pass --auth.disabled if that is really meant", srv->listen);
	log_warn("AUTHENTICATION IS OFF: every client that reaches %s may read and write every "
		 "tenant's profiles and debug info (give --auth.tokens FILE; docs/security.md)",
		 srv->listen);
	return 0;
}

int web_server_start(struct store *st, const struct web_options *opt,
		     struct web_server **out, struct err_msg *msg)
{
	struct web_server *srv;
	struct mg_callbacks cb;
	struct mg_init_data init;
	struct mg_error_data err;
	struct mg_server_port ports[4];
	unsigned err_code = 0;
	char err_text[256] = "";
	char threads[16], timeout[16], ports_opt[sizeof(srv->listen) + 2];
	const char *options[20];
	int n = 0, tls, rc;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return err_set(msg, ERR_NOMEM, "out of memory");
	srv->store = st;
	srv->opt = *opt;
	snprintf(srv->listen, sizeof(srv->listen), "%s", opt->listen ? opt->listen : WEB_DEFAULT_LISTEN);
	srv->opt.listen = srv->listen;
	if (srv->opt.threads <= 0)
		srv->opt.threads = WEB_DEFAULT_THREADS;
	if (!srv->opt.max_response_bytes)
		srv->opt.max_response_bytes = WEB_DEFAULT_MAX_RESPONSE_BYTES;
	else if (srv->opt.max_response_bytes < WEB_MIN_RESPONSE_BYTES)
		srv->opt.max_response_bytes = WEB_MIN_RESPONSE_BYTES;
	default_body_caps(&srv->opt.limits);
	srv->max_queries = srv->opt.threads - (srv->opt.threads / 4 > 2 ? srv->opt.threads / 4 : 2);
	if (srv->max_queries < 1)
		srv->max_queries = 1;
	if (srv->opt.request_timeout_ms <= 0)
		srv->opt.request_timeout_ms = 30000;
	srv->started_ns = clock_wall_ns();
	srv->opt.auth_tokens = NULL; /* read here; the table is srv->auth */
	err_clear(&srv->tls_msg);
	snprintf(threads, sizeof(threads), "%d", srv->opt.threads);
	snprintf(timeout, sizeof(timeout), "%d", srv->opt.request_timeout_ms);
	tls = opt->tls_cert && opt->tls_cert[0];
	/* civetweb's suffix "s" makes a port TLS-only. */
	snprintf(ports_opt, sizeof(ports_opt), "%s%s", srv->listen, tls ? "s" : "");
	rc = check_access(srv, opt, msg);
	if (rc) {
		free(srv);
		return rc;
	}

	options[n++] = "listening_ports";
	options[n++] = ports_opt;
	options[n++] = "num_threads";
	options[n++] = threads;
	options[n++] = "request_timeout_ms";
	options[n++] = timeout;
	options[n++] = "enable_keep_alive";
	options[n++] = "yes";
	options[n++] = "keep_alive_timeout_ms";
	options[n++] = "5000";
	if (tls) {
		/* civetweb's own floor too (4: TLS 1.2 and later); tls.c sets the same. */
		options[n++] = "ssl_protocol_version";
		options[n++] = "4";
	}
	options[n++] = NULL;

	pthread_once(&lib_once, lib_init);
	memset(&cb, 0, sizeof(cb));
	cb.log_message = on_log;
	if (tls)
		cb.init_ssl = on_init_ssl;
	memset(&init, 0, sizeof(init));
	init.callbacks = &cb;
	init.user_data = srv;
	init.configuration_options = options;
	memset(&err, 0, sizeof(err));
	err.code = &err_code;
	err.text = err_text;
	err.text_buffer_size = sizeof(err_text);

	srv->ctx = mg_start2(&init, &err);
	if (!srv->ctx) {
		rc = srv->tls_msg.text[0]
			     ? err_set(msg, ERR_INVALID, "%s", srv->tls_msg.text)
			     : err_set(msg, ERR_UNAVAILABLE, "cannot listen on %s: %s", srv->listen,
				       err_text[0] ? err_text : "civetweb failed to start");
		web__auth_free(srv->auth);
		free(srv);
		return rc;
	}
	mg_set_request_handler(srv->ctx, "/", on_request, srv);
	memset(ports, 0, sizeof(ports));
	if (mg_get_server_ports(srv->ctx, 4, ports) < 1) {
		mg_stop(srv->ctx);
		web__auth_free(srv->auth);
		free(srv);
		return err_set(msg, ERR_UNAVAILABLE, "civetweb reports no listening port");
	}
	srv->port = ports[0].port;
	*out = srv;
	return 0;
}

int web_server_reload_auth(struct web_server *srv, size_t *n, struct err_msg *msg)
{
	int rc;

	if (!srv->auth)
		return err_set(msg, ERR_INVALID, "the server runs without a token file");
	rc = web__auth_reload(srv->auth, msg);
	if (n)
		*n = web__auth_count(srv->auth);
	return rc;
}

int web_server_port(const struct web_server *srv)
{
	return srv->port;
}

void web_server_stop(struct web_server *srv)
{
	if (!srv)
		return;
	mg_stop(srv->ctx);
	web__auth_free(srv->auth);
	free(srv);
}
