/*
 * server.c - the civetweb glue: start and stop, routing, who asks and for
 * which tenant (before any handler runs or any body byte is read), reading
 * request bodies under the caps, and writing responses.  The only file
 * that includes civetweb.h.
 */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <civetweb.h>

#include "base/clock.h"
#include "base/thread.h"
#include "base/compress.h"
#include "base/log.h"
#include "web_int.h"

#define ERRORS_OTLP 2

enum route_kind { R_READY, R_INGEST, R_PUSH, R_STATS, R_METRICS, R_QUERY, R_CONNECT, R_SETTINGS,
		  R_DEBUGINFO_V1, R_SYMBOLZ, R_STATIC, R_DEBUGINFO, R_SYMSTATUS, R_RELEASES,
		  R_REGRESSIONS, R_BACKUP, R_HEAD_BLOCK, R_KIND_COUNT };


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
	{ "/internal/v1/head-block", "POST", R_HEAD_BLOCK, 0, 0, WEB_SCOPE_QUERY },
	{ "/pyroscope/render", "GET", R_QUERY, WEB_Q_RENDER, 0, WEB_SCOPE_QUERY },
	{ "/pyroscope/render-diff", "GET", R_QUERY, WEB_Q_RENDER_DIFF, 0, WEB_SCOPE_QUERY },
	{ "/pyroscope/labels", "GET", R_QUERY, WEB_Q_LABELS, 0, WEB_SCOPE_QUERY },
	{ "/pyroscope/label-values", "GET", R_QUERY, WEB_Q_LABEL_VALUES, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/pprof", "GET", R_QUERY, WEB_Q_PPROF, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/top", "GET", R_QUERY, WEB_Q_TOP, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/folded", "GET", R_QUERY, WEB_Q_FOLDED, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/diff-top", "GET", R_QUERY, WEB_Q_DIFF_TOP, 0, WEB_SCOPE_QUERY },
	{ "/querier.v1.QuerierService/", "POST", R_CONNECT, 0, 1, WEB_SCOPE_QUERY },
	{ "/settings.v1.SettingsService/", "POST", R_SETTINGS, 0, 1, WEB_SCOPE_QUERY },
	{ "/debuginfo.v1alpha1.DebuginfoService/Upload/", "POST", R_DEBUGINFO, 0, 0, WEB_SCOPE_UPLOAD },
	{ "/debuginfo.v1alpha1.DebuginfoService/", "POST", R_DEBUGINFO_V1, 0, 1, WEB_SCOPE_UPLOAD },
	{ "/symbolz", "POST", R_SYMBOLZ, 0, 0, WEB_SCOPE_QUERY },
	{ "/api/v1/debuginfo/", "*", R_DEBUGINFO, 0, 0, SCOPE_BY_METHOD },
	{ "/api/v1/perfmap/", "POST", R_DEBUGINFO, 0, 0, WEB_SCOPE_UPLOAD },
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
	opt->request_timeout_ms = WEB_DEFAULT_HEADER_TIMEOUT_MS;
	opt->body_timeout_ms = WEB_DEFAULT_BODY_TIMEOUT_MS;
	opt->idle_timeout_ms = WEB_DEFAULT_IDLE_TIMEOUT_MS;
	opt->max_connections = WEB_DEFAULT_MAX_CONNECTIONS;
	opt->max_client_connections = WEB_DEFAULT_MAX_CLIENT_CONNECTIONS;
	ingest_limits_default(&opt->limits);
	opt->query.timeout_ns = QUERY_DEFAULT_TIMEOUT_NS;
	opt->query.max_bytes = QUERY_DEFAULT_MAX_BYTES;
	opt->max_response_bytes = WEB_DEFAULT_MAX_RESPONSE_BYTES;
	opt->max_inflight_bytes = WEB_DEFAULT_MAX_INFLIGHT_BYTES;
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
	if (!lim->max_request_decoded_bytes)
		lim->max_request_decoded_bytes = def.max_request_decoded_bytes;
}

/* Connection limits of 0 (options not from web_options_default) get the defaults. */
static void default_conn_limits(struct web_options *o)
{
	if (o->request_timeout_ms <= 0)
		o->request_timeout_ms = WEB_DEFAULT_HEADER_TIMEOUT_MS;
	if (o->body_timeout_ms <= 0)
		o->body_timeout_ms = WEB_DEFAULT_BODY_TIMEOUT_MS;
	if (o->idle_timeout_ms <= 0)
		o->idle_timeout_ms = WEB_DEFAULT_IDLE_TIMEOUT_MS;
	if (o->max_connections <= 0)
		o->max_connections = WEB_DEFAULT_MAX_CONNECTIONS;
	if (o->max_connections < o->threads)
		o->max_connections = o->threads;
	if (o->max_client_connections <= 0)
		o->max_client_connections = WEB_DEFAULT_MAX_CLIENT_CONNECTIONS;
	if (!o->max_inflight_bytes)
		o->max_inflight_bytes = WEB_DEFAULT_MAX_INFLIGHT_BYTES;
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
		/* A declared body is read into the room reserved for it and no
		 * further: civetweb's mg_read returns nothing past Content-Length,
		 * and reserving a chunk only to see that grew every buffer past
		 * 128 KiB, a block glibc maps and unmaps per request. */
		if (declared >= 0 && out->len >= (unsigned long long)declared)
			break;
		if (declared >= 0 && room > (size_t)declared - out->len)
			room = (size_t)declared - out->len;
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
static int decode_body(struct mg_connection *conn, size_t cap, size_t max, struct buf *body,
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
	buf_init_alloc(&out, cap, body->heap);
	rc = gunzip_capped(body->data, body->len, cap, &out, msg);
	if (rc) {
		if (rc == ERR_TOO_LARGE)
			err_reset(msg, rc, "gzip body inflates past the limit of %zu bytes%s", cap,
				  cap < max ? " (the size its gzip trailer declared)" : "");
		buf_release(&out);
		return rc;
	}
	buf_release(body);
	*body = out;
	return 0;
}

/* Bodies up to this size leave in the same write as the header. */
#define ONE_WRITE_MAX (64 * 1024)

/*
 * Sends the response.  Header and body go out in one write when the body
 * is small: with a second write the first segment would wait for the
 * client's delayed ACK (Nagle; TCP_NODELAY is set too, see start options).
 */
static void send_resp(struct mg_connection *conn, const struct web__resp *rs, int close_conn,
		      const char *extra_headers)
{
	char head[1024];
	char *one;
	int n;

	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\n"
		     "Content-Type: %s\r\n"
		     "Content-Length: %zu\r\n"
		     "Cache-Control: %s\r\n"
		     "%s%s%s\r\n",
		     rs->status, err_http_reason(rs->status), rs->content_type, rs->body.len,
		     rs->cache_control ? rs->cache_control : "no-store",
		     close_conn ? "Connection: close\r\n" : "", extra_headers ? extra_headers : "",
		     rs->extra_headers ? rs->extra_headers : "");
	assert(n > 0 && (size_t)n < sizeof(head)); /* every header part is ours and short */
	one = rs->body.len <= ONE_WRITE_MAX ? malloc((size_t)n + rs->body.len) : NULL;
	if (one) {
		memcpy(one, head, (size_t)n);
		if (rs->body.len)
			memcpy(one + n, rs->body.data, rs->body.len);
		mg_write(conn, one, (size_t)n + rs->body.len);
		free(one);
		return;
	}
	mg_write(conn, head, (size_t)n);
	if (rs->body.len)
		mg_write(conn, rs->body.data, rs->body.len);
}

/* Streams a file response (debuginfod downloads) in chunks: its size, 0 if it cannot be opened. */
static size_t send_file(struct mg_connection *conn, const struct web__resp *rs, int close_conn)
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
	return sb.st_size > 0 ? (size_t)sb.st_size : 1;
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

/* The handlers of the routes that pass them nothing but the request. */
static void (*const plain_handlers[R_KIND_COUNT])(struct web__req *, struct web__resp *) = {
	[R_STATS] = web__handle_stats,
	[R_BACKUP] = web__handle_backup,
	[R_HEAD_BLOCK] = web__handle_head_block,
	[R_DEBUGINFO] = web__handle_debuginfo,
	[R_SYMSTATUS] = web__handle_debuginfo, /* symbolization; this one merges profiles */
	[R_SYMBOLZ] = web__handle_symbolz,
	[R_RELEASES] = web__handle_releases,
	[R_REGRESSIONS] = web__handle_regressions,
	[R_STATIC] = web__handle_static,
};

/* The handlers of the Connect services: the path after the route's prefix is the method. */
static void (*const method_handlers[R_KIND_COUNT])(struct web__req *, const char *,
						   struct web__resp *) = {
	[R_CONNECT] = web__handle_connect,
	[R_SETTINGS] = web__handle_settings,
	[R_DEBUGINFO_V1] = web__handle_debuginfo_connect,
};

static void dispatch(struct web__req *rq, const struct route *rt, struct web__resp *rs)
{
	if (plain_handlers[rt->kind]) {
		plain_handlers[rt->kind](rq, rs);
		return;
	}
	if (method_handlers[rt->kind]) {
		method_handlers[rt->kind](rq, rq->path + strlen(rt->path), rs);
		return;
	}
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
	case R_METRICS:
		web__handle_metrics(rq, rs);
		web__debuginfo_metrics(rq, rs);
		break;
	case R_QUERY:
		web__handle_query(rq, (enum web__query_route)rt->ep, rs);
		break;
	default:
		assert(!"a route kind without a handler");
	}
}

/*
 * The memory budget (docs/operations.md, "Memory"): every request holds
 * bytes of srv->opt.max_inflight_bytes from before it reads its body until
 * its answer is sent.  Reserving fails when they are not free.
 */
static int mem_reserve(struct web_server *srv, size_t n, size_t *held)
{
	size_t cur = atomic_load_explicit(&srv->inflight_bytes, memory_order_relaxed);

	do {
		if (n > srv->opt.max_inflight_bytes - cur)
			return ERR_UNAVAILABLE;
	} while (!atomic_compare_exchange_weak_explicit(&srv->inflight_bytes, &cur, cur + n,
							memory_order_relaxed,
							memory_order_relaxed));
	*held += n;
	return 0;
}

static void mem_release(struct web_server *srv, size_t held)
{
	size_t was = atomic_fetch_sub_explicit(&srv->inflight_bytes, held, memory_order_relaxed);

	assert(was >= held);
	(void)was;
}

static int mem_busy(struct web_server *srv, size_t want, struct err_msg *msg)
{
	atomic_fetch_add_explicit(&srv->mem_refused, 1, memory_order_relaxed);
	return err_set(msg, ERR_UNAVAILABLE,
		       "server busy: requests in flight hold %zu of the %zu bytes of "
		       "--max-inflight-bytes and this one needs %zu; retry shortly",
		       atomic_load_explicit(&srv->inflight_bytes, memory_order_relaxed),
		       srv->opt.max_inflight_bytes, want);
}

/*
 * Whether a query route takes the memory budget as its tables grow
 * (query_limits.reserve).  Releases and regressions keep budgets of their
 * own beside the query's (a release's index, the change-point statistics),
 * not charged as they grow, so they hold their whole budget from the start.
 */
static int query_grows(const struct route *rt)
{
	return rt->kind != R_RELEASES && rt->kind != R_REGRESSIONS;
}

/* What a query holds of the memory budget when admitted. */
static size_t query_hold(const struct web_server *srv, const struct route *rt)
{
	size_t max = srv->opt.query.max_bytes;

	if (!query_grows(rt) || max <= QUERY_RESERVE_STEP)
		return max;
	return QUERY_RESERVE_STEP;
}

/* The memory budget a running query takes more of (struct query_reserve). */
struct query_grow {
	struct web_server *srv;
	size_t *held; /* the request's reservation, released after its answer */
};

static int query_grow(void *ctx, size_t bytes)
{
	struct query_grow *g = ctx;

	if (mem_reserve(g->srv, bytes, g->held)) {
		atomic_fetch_add_explicit(&g->srv->mem_refused, 1, memory_order_relaxed);
		return ERR_UNAVAILABLE;
	}
	return 0;
}

/*
 * Before any body byte is read: a query holds query_hold(), a body its
 * declared length (the request cap when chunked).
 */
static int admit_bytes(struct web_server *srv, const struct route *rt,
		       const struct mg_request_info *ri, int chunked, size_t *held,
		       struct err_msg *msg)
{
	size_t want = 0;

	if (is_query(rt))
		want += query_hold(srv, rt);
	if (rt->kind == R_INGEST || rt->kind == R_PUSH || rt->kind == R_CONNECT ||
	    rt->kind == R_SYMBOLZ) {
		if (ri->content_length > 0 &&
		    (unsigned long long)ri->content_length <= srv->opt.limits.max_request_bytes)
			want += (size_t)ri->content_length;
		else if (chunked)
			want += srv->opt.limits.max_request_bytes;
	}
	if (want && mem_reserve(srv, want, held))
		return mem_busy(srv, want, msg);
	return 0;
}

/*
 * After the body is read and inflated, before it is decoded: an ingest
 * request holds WEB_INGEST_AMPLIFICATION bytes per byte its profiles may
 * decode to.  A gzipped payload says how much that is in its trailer; in a
 * multipart or push body (profiles inside, each maybe gzipped) a profile
 * may inflate to WEB_CONTAINER_INFLATE times the body.  The request's
 * inflate limit becomes that size, so a trailer that lies gets 413.  A
 * request that could not fit the budget even alone is narrowed to fit it.
 * All its profiles together inflate to at most WEB_CONTAINER_INFLATE times
 * the body too (ingest's max_request_decoded_bytes).
 */
static int admit_decode(struct web__req *rq, const struct route *rt, size_t *held,
			struct err_msg *msg)
{
	struct web_server *srv = rq->srv;
	size_t max = srv->opt.limits.max_decompressed_bytes, len = rq->body.len, dec, want, total;
	size_t isize = web__gzip_isize(rq->body.data, len);
	int container = rt->kind == R_PUSH ||
			(rq->content_type && web__media_type_is(rq->content_type, "multipart/form-data"));
	size_t sum = 0;
	int pushed = 0;

	if (isize)
		dec = web__inflate_bound(isize, len, max);
	else if (container)
		dec = len > max / WEB_CONTAINER_INFLATE ? max : len * WEB_CONTAINER_INFLATE;
	else
		dec = len;
	/* A binary push says what its profiles inflate to: the request holds
	 * for their sum, and they may inflate to that much together (a trailer
	 * that lies gets 413), where the container bound would have it hold
	 * for 16 times its body. */
	if (rt->kind == R_PUSH && !isize && rq->content_type &&
	    !web__media_type_is(rq->content_type, "application/json") &&
	    web__push_bound((const uint8_t *)rq->body.data, len, max, &sum) && sum < dec) {
		dec = sum < len ? len : sum;
		pushed = 1;
	}
	if (dec > (srv->opt.max_inflight_bytes - *held) / WEB_INGEST_AMPLIFICATION)
		dec = (srv->opt.max_inflight_bytes - *held) / WEB_INGEST_AMPLIFICATION;
	if (dec < len)
		return err_set(msg, ERR_TOO_LARGE,
			       "a %zu-byte body may need %zu bytes to decode, more than "
			       "--max-inflight-bytes (%zu)", len, len * WEB_INGEST_AMPLIFICATION,
			       srv->opt.max_inflight_bytes);
	if (dec < rq->lim.max_decompressed_bytes)
		rq->lim.max_decompressed_bytes = dec;
	/* The profiles of the body together inflate to at most
	 * WEB_CONTAINER_INFLATE times it (one profile's bound when larger):
	 * inflating is CPU the memory budget does not see, as each profile's
	 * buffer is freed before the next is inflated. */
	total = len > SIZE_MAX / WEB_CONTAINER_INFLATE ? SIZE_MAX : len * WEB_CONTAINER_INFLATE;
	if (total < dec || pushed)
		total = dec;
	if (total < rq->lim.max_request_decoded_bytes)
		rq->lim.max_request_decoded_bytes = total;
	want = dec * WEB_INGEST_AMPLIFICATION;
	if (mem_reserve(srv, want, held))
		return mem_busy(srv, want, msg);
	return 0;
}

/*
 * Ends the body deadline of the connection (set by body_deadline): true
 * when it had passed, and the watchdog shut the connection's reading side.
 */
static int body_done(struct web_server *srv, struct mg_connection *conn)
{
	struct web__conn *c = mg_get_user_connection_data(conn);
	int expired;

	if (!c)
		return 0;
	expired = web__conns_expired(&srv->conns, c);
	web__conns_deadline(&srv->conns, c, 0);
	return expired;
}

/* The 408 of a body that did not arrive by its deadline. */
static void body_timeout(struct web_server *srv, const struct route *rt, struct web__resp *rs)
{
	char m[160];

	atomic_fetch_add_explicit(&srv->body_timeouts, 1, memory_order_relaxed);
	snprintf(m, sizeof(m), "request body not received within its deadline (%d s, plus a "
		 "second per MiB declared)", srv->opt.body_timeout_ms / 1000);
	buf_reset(&rs->body);
	set_error(rs, rt, ERR_TIMEOUT, m, WEB_REJ_OTHER);
	rs->status = 408;
}

/* Reads and validates what every body-carrying route needs; 0 or an error in rs. */
static int prepare(struct mg_connection *conn, const struct mg_request_info *ri,
		   const struct route *rt, struct web__req *rq, struct web__resp *rs,
		   int *unread, size_t *held)
{
	struct web_server *srv = rq->srv;
	const char *enc = mg_get_header(conn, "Content-Encoding");
	struct err_msg msg;
	size_t cap = srv->opt.limits.max_decompressed_bytes;
	int rc;

	if (!enc)
		enc = mg_get_header(conn, "Connect-Content-Encoding");
	err_clear(&msg);
	rc = read_body(conn, ri, &rq->body, unread, &msg);
	if (body_done(srv, conn) && rc) {
		body_timeout(srv, rt, rs);
		return ERR_TIMEOUT;
	}
	if (rc == 0 && (rt->kind == R_INGEST || rt->kind == R_PUSH))
		atomic_fetch_add_explicit(&srv->counters.bytes, rq->body.len,
					  memory_order_relaxed);
	if (rc == 0 && enc && strcasecmp(enc, "gzip") == 0) {
		/* The inflated body is held until the answer is sent. */
		cap = web__inflate_bound(web__gzip_isize(rq->body.data, rq->body.len), rq->body.len, cap);
		if (mem_reserve(srv, cap, held))
			rc = mem_busy(srv, cap, &msg);
	}
	if (rc == 0)
		rc = decode_body(conn, cap, srv->opt.limits.max_decompressed_bytes, &rq->body, &msg);
	if (rc == 0 && (rt->kind == R_INGEST || rt->kind == R_PUSH))
		rc = admit_decode(rq, rt, held, &msg);
	if (rc)
		set_error(rs, rt, rc, msg.text, web__reason_of_err(rc));
	if (rc == ERR_UNAVAILABLE)
		rs->extra_headers = "Retry-After: 1\r\n";
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

/*
 * Line ends civetweb 1.15 accepted as they came.  It parses the header
 * block in place: a CRLF line end becomes two NULs, a bare LF one, so the
 * byte after a line's terminating NUL tells them apart.  It is inside the
 * header block for the request line and for every header but the last
 * (whose next byte may be the block's final LF, also turned into a NUL):
 * a request with any bare-LF line but its last header is caught, and a
 * request without headers has no Host, which HTTP/1.1 requires.
 */
static int bare_lf(const struct mg_request_info *ri)
{
	const char *v = ri->http_version;

	if (v && v[strlen(v) + 1] != '\0')
		return 1;
	for (int i = 0; i + 1 < ri->num_headers; i++) {
		v = ri->http_headers[i].value;
		if (v[strlen(v) + 1] != '\0')
			return 1;
	}
	return 0;
}

/*
 * Refuses message framing that two HTTP parsers could read differently,
 * so a proxy in front and this server never disagree on where a request
 * ends (request smuggling, RFC 9112 §6.3, §11.2): Content-Length given
 * twice or not a plain number, Content-Length with Transfer-Encoding,
 * Transfer-Encoding twice, bare LF line ends, HTTP/1.1 without Host.
 * 0, or ERR_INVALID with a message; the connection must then be closed.
 */
static int framing_check(const struct mg_request_info *ri, const char *cl, struct err_msg *msg)
{
	int n_cl = header_count(ri, "Content-Length");
	int n_te = header_count(ri, "Transfer-Encoding");

	if (n_cl > 1)
		return err_set(msg, ERR_INVALID, "Content-Length given %d times", n_cl);
	if (n_te > 1)
		return err_set(msg, ERR_INVALID, "Transfer-Encoding given %d times", n_te);
	if (n_cl && n_te)
		return err_set(msg, ERR_INVALID,
			       "Content-Length together with Transfer-Encoding (RFC 9112 6.3)");
	if (cl && (!cl[0] || strspn(cl, "0123456789") != strlen(cl) || strlen(cl) > 18))
		return err_set(msg, ERR_INVALID, "Content-Length \"%.32s\" is not a number", cl);
	if (bare_lf(ri))
		return err_set(msg, ERR_INVALID, "line ends must be CRLF, not a bare LF");
	if (ri->http_version && strcmp(ri->http_version, "1.1") == 0 && header_count(ri, "Host") != 1)
		return err_set(msg, ERR_INVALID, "an HTTP/1.1 request needs exactly one Host header");
	return 0;
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

/*
 * The connection's slot, taken at its first request (civetweb 1.15 shows
 * no request info to init_connection): NULL when it is over the
 * per-address cap, or when no slot is free (then it is not counted).
 */
static struct web__conn *conn_slot(struct web_server *srv, struct mg_connection *conn,
				   const struct mg_request_info *ri, int *refused)
{
	struct web__conn *c = mg_get_user_connection_data(conn);

	*refused = 0;
	if (c)
		return c;
	c = web__conns_open(&srv->conns, ri->remote_addr, ri->remote_port, ri->server_port,
			    refused);
	mg_set_user_connection_data(conn, c);
	return *refused ? NULL : c;
}

/*
 * Starts the deadline of the request's body, if it has one: the whole body
 * within body_timeout_ms plus a second per MiB declared (conns.c's
 * watchdog enforces it).  Returns the connection to clear it on, or NULL.
 */
static struct web__conn *body_deadline(struct web_server *srv, struct mg_connection *conn,
				       const struct mg_request_info *ri)
{
	struct web__conn *c = mg_get_user_connection_data(conn);
	int64_t ns = (int64_t)srv->opt.body_timeout_ms * 1000000;

	if (!c || (ri->content_length <= 0 && !mg_get_header(conn, "Transfer-Encoding")))
		return NULL;
	if (ri->content_length > 0)
		ns += (ri->content_length >> 20) * 1000000000LL;
	web__conns_deadline(&srv->conns, c, clock_mono_ns() + ns);
	return c;
}

/* The kind of route a request's latency is counted under, or -1. */
static int latency_kind(const struct route *rt)
{
	if (!rt)
		return -1;
	switch (rt->kind) {
	case R_INGEST: case R_PUSH:
		return WEB_LAT_INGEST;
	case R_QUERY: case R_CONNECT: case R_RELEASES: case R_REGRESSIONS:
		return WEB_LAT_QUERY;
	case R_SYMSTATUS: case R_SYMBOLZ: case R_DEBUGINFO:
		return WEB_LAT_SYMBOLIZATION;
	default:
		return -1;
	}
}

/* Appends `s` as a logfmt value: bare when it can be, else quoted. */
static void logfmt_value(struct buf *b, const char *s)
{
	if (*s && strcspn(s, " =\"\\") == strlen(s)) {
		int ctl = 0;

		for (const char *p = s; *p; p++)
			ctl |= (unsigned char)*p < 0x20 || *p == 0x7f;
		if (!ctl) {
			buf_puts(b, s);
			return;
		}
	}
	buf_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_printf(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			buf_printf(b, "\\x%02x", (unsigned char)*s);
		else
			buf_putc(b, *s);
	}
	buf_putc(b, '"');
}

/*
 * After the answer: the latency histogram, and with --log-requests one
 * logfmt line on stderr (one write, so lines never interleave).
 */
static void finished(struct web_server *srv, const struct route *rt, const struct web__req *rq,
		     const struct web__resp *rs, const struct mg_request_info *ri, size_t sent,
		     int64_t ns)
{
	int kind = latency_kind(rt);
	char ts[40];
	struct timespec now;
	struct tm tm;
	struct buf line;

	if (kind >= 0)
		web__observe(&srv->latency[kind], ns);
	if (!srv->opt.log_requests)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	buf_init(&line, 4096);
	buf_printf(&line, "ts=%s.%03ldZ level=info msg=request method=", ts, now.tv_nsec / 1000000);
	logfmt_value(&line, ri->request_method);
	buf_puts(&line, " route=");
	logfmt_value(&line, rt ? rt->path : "none");
	buf_puts(&line, " path=");
	logfmt_value(&line, rq->path);
	buf_puts(&line, " tenant=");
	logfmt_value(&line, rq->tenant);
	buf_printf(&line, " status=%d bytes_in=%lld bytes_out=%zu duration_ms=%.3f remote=",
		   rs->status, ri->content_length > 0 ? ri->content_length : (long long)rq->body.len,
		   sent, (double)ns / 1e6);
	logfmt_value(&line, ri->remote_addr);
	if (rs->status >= 400 && rs->body.len && rs->content_type &&
	    strncmp(rs->content_type, "text/plain", 10) == 0) {
		char err[161];
		size_t n = rs->body.len < sizeof(err) - 1 ? rs->body.len : sizeof(err) - 1;

		memcpy(err, rs->body.data, n);
		err[n] = '\0';
		err[strcspn(err, "\n")] = '\0';
		buf_puts(&line, " error=");
		logfmt_value(&line, err);
	}
	if (buf_putc(&line, '\n') == 0 && write(STDERR_FILENO, line.data, line.len) < 0)
		(void)0; /* nowhere left to say it */
	buf_release(&line);
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
	struct web__tenant_state *qts = NULL;
	struct web__req rq = { 0 };
	struct web__resp rs = { 0 };
	char extra[128] = "", tenant[WEB_TENANT_MAX + 1] = WEB_DEFAULT_TENANT;
	struct err_msg msg;
	int unread = ri->content_length > 0, refused, rc;
	size_t held = 0, sent;
	struct query_grow qg = { srv, &held };
	struct query_reserve qres = { query_grow, &qg, 0 };
	int64_t t0;
	int scan_refused = 0; /* set by the query when max_query_bytes stopped it */

	atomic_fetch_add_explicit(&srv->requests_running, 1, memory_order_relaxed);
	t0 = clock_mono_ns();
	rq.srv = srv;
	rq.method = ri->request_method;
	rq.path = path;
	rq.query = ri->query_string;
	rq.content_type = mg_get_header(conn, "Content-Type");
	rq.tenant = tenant;
	rq.who = &who;
	rq.conn = conn;
	rq.lim = srv->opt.limits;
	rq.qlim = srv->opt.query;
	who = open_principal;
	buf_init_alloc(&rq.body, srv->opt.limits.max_request_bytes, &srv->body_pool.alloc);
	/* A flame graph's JSON runs to megabytes: from the body pool, its pages
	 * stay resident for the next response instead of being faulted in again. */
	buf_init_alloc(&rs.body, srv->opt.max_response_bytes, &srv->body_pool.alloc);
	rs.reason = WEB_REJ_OTHER;
	err_clear(&msg);

	conn_slot(srv, conn, ri, &refused);
	if (refused) {
		snprintf(extra, sizeof(extra), "Retry-After: %d\r\n", srv->opt.idle_timeout_ms / 1000 + 1);
		err_set(&msg, ERR_UNAVAILABLE, "%.48s holds %d connections already (the limit per "
			"client address); use fewer", ri->remote_addr, srv->opt.max_client_connections);
		set_error(&rs, NULL, ERR_UNAVAILABLE, msg.text, WEB_REJ_OTHER);
		rs.status = 429;
		unread = 1;
	} else if (framing_check(ri, mg_get_header(conn, "Content-Length"), &msg)) {
		set_error(&rs, NULL, ERR_INVALID, msg.text, WEB_REJ_INVALID);
		unread = 1;
	} else if (!rt) {
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
	} else if ((rt->kind == R_INGEST || rt->kind == R_PUSH) && srv->opt.no_ingest) {
		set_error(&rs, rt, ERR_UNAVAILABLE, srv->opt.no_ingest, WEB_REJ_OTHER);
		unread = 1;
	} else if (admit_bytes(srv, rt, ri, mg_get_header(conn, "Transfer-Encoding") != NULL,
			       &held, &msg)) {
		set_error(&rs, rt, ERR_UNAVAILABLE, msg.text, WEB_REJ_OTHER);
		snprintf(extra, sizeof(extra), "Retry-After: 1\r\n");
	} else if (is_query(rt) && (rc = web__query_admit(srv, rq.tenant, &rs, &qts, &msg))) {
		set_error(&rs, rt, rc, msg.text, rc == ERR_RATE_LIMITED ? WEB_REJ_LIMIT : WEB_REJ_OTHER);
	} else {
		struct web__conn *c = body_deadline(srv, conn, ri);

		if (is_query(rt)) {
			rq.qlim.max_scan_bytes = web__limits_query_bytes(qts);
			rq.qlim.scan_refused = &scan_refused;
			qres.held = query_hold(srv, rt);
			if (query_grows(rt))
				rq.qlim.reserve = &qres;
		}

		if ((rt->kind != R_INGEST && rt->kind != R_PUSH && rt->kind != R_CONNECT &&
		     rt->kind != R_SETTINGS && rt->kind != R_DEBUGINFO_V1 && rt->kind != R_SYMBOLZ &&
		     rt->kind != R_HEAD_BLOCK) ||
		    prepare(conn, ri, rt, &rq, &rs, &unread, &held) == 0)
			dispatch(&rq, rt, &rs);
		if (is_query(rt)) {
			web__limits_query_finished(qts, rs.status == 413 && scan_refused);
			web__query_done(srv, qts);
			/* A 503 of a query is the memory budget (query_grow): retry. */
			if (rs.status == 503 && !rs.extra_headers)
				rs.extra_headers = "Retry-After: 1\r\n";
		}
		/* Streaming handlers (uploads) read the body themselves: a failure
		 * of theirs after the deadline passed is its 408.  A success read
		 * the whole body, whenever the deadline passed. */
		if (c && body_done(srv, conn) && rs.status >= 400) {
			body_timeout(srv, rt, &rs);
			unread = 1;
		}
	}
	if (rt && (rt->kind == R_INGEST || rt->kind == R_PUSH))
		web__count(srv, rt->ep, &rs);
	/* A 503 is the server protecting itself (memory budget, query slots):
	 * one line each under a flood would only add to it. */
	if (rs.status >= 500 && rs.status != 503)
		log_error("%s %s: %d %.*s", ri->request_method, path, rs.status,
			  (int)rs.body.len, rs.body.data ? rs.body.data : "");
	else if (rs.status >= 400)
		log_debug("%s %s: %d %.*s", ri->request_method, path, rs.status,
			  (int)rs.body.len, rs.body.data ? rs.body.data : "");
	if (rq.body_state == WEB_BODY_CONSUMED)
		unread = 0;
	else if (rq.body_state == WEB_BODY_UNREAD)
		unread = 1;
	if (unread)
		mg_disable_connection_keep_alive(conn);
	sent = rs.body.len;
	if (!rs.file || !(sent = send_file(conn, &rs, unread))) {
		if (rs.file) {
			rs.status = 404;
			buf_reset(&rs.body);
		}
		send_resp(conn, &rs, unread, extra[0] ? extra : NULL);
		sent = rs.body.len;
	}
	finished(srv, rt, &rq, &rs, ri, sent, clock_mono_ns() - t0);
	free(rs.file);
	buf_release(&rq.body);
	buf_release(&rs.body);
	mem_release(srv, held);
	atomic_fetch_sub_explicit(&srv->requests_running, 1, memory_order_relaxed);
	return rs.status;
}

static void on_connection_close(const struct mg_connection *conn)
{
	struct web_server *srv = mg_get_user_data(mg_get_context(conn));
	struct web__conn *c = mg_get_user_connection_data(conn);

	if (c)
		web__conns_close(&srv->conns, c);
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

/* The per-tenant limits: the file at `path`, or the defaults (docs/limits.md). */
static int start_limits(struct web_server *srv, struct store *st, const char *path,
			struct err_msg *msg)
{
	struct web__limits_conf conf;
	struct web__tenant_limits base;
	int rc;

	/* The server's own label limits (--max-labels, ...) are every tenant's
	 * until the file says otherwise. */
	web__tenant_limits_default(&base);
	base.max_labels = (uint32_t)(srv->opt.limits.max_labels < 256 ? srv->opt.limits.max_labels : 256);
	base.max_label_bytes = (uint32_t)(srv->opt.limits.max_label_bytes < 65536
						  ? srv->opt.limits.max_label_bytes
						  : 65536);
	if (srv->opt.perfmap_max)
		base.max_perfmaps = srv->opt.perfmap_max < 1048576 ? srv->opt.perfmap_max : 1048576;
	web__limits_conf_default(&conf, &base);
	if (path && path[0] && (rc = web__limits_load(path, &base, &conf, msg)))
		return rc;
	/* Symbolization off and a tenant's own upstreams are the service's to enforce. */
	if (srv->opt.query.symbolizer &&
	    (rc = web__limits_debuginfo(&conf, srv->opt.query.symbolizer, msg))) {
		web__limits_conf_release(&conf);
		return rc;
	}
	rc = web__limits_new(&conf, st, &srv->limits, msg);
	if (rc) {
		web__limits_conf_release(&conf);
		return rc;
	}
	if (path && path[0])
		log_info("limits: %s: at most %u tenants%s, %zu tenant lines", path,
			 conf.max_tenants, conf.listed_only ? " (only those listed)" : "",
			 conf.n_tenants);
	return 0;
}

/*
 * Frees what web_server_start() set up, civetweb stopped or never started;
 * each part may still be unset (zeroed) when starting failed on the way.
 */
static void server_free(struct web_server *srv)
{
	thread_stop(srv->sweep_thread, &srv->sweep_mu, &srv->sweep_cv, &srv->sweep_stop);
	pthread_cond_destroy(&srv->sweep_cv);
	pthread_mutex_destroy(&srv->sweep_mu);
	web__conns_release(&srv->conns);
	web__auth_free(srv->auth);
	web__limits_free(srv->limits);
	pthread_mutex_destroy(&srv->settings_lock);
	blockpool_release(&srv->ingest_pool);
	blockpool_release(&srv->query_pool);
	blockpool_release(&srv->body_pool);
	if (srv->ingest_gate.limit)
		gate_destroy(&srv->ingest_gate);
	free(srv);
}

/*
 * The pools' sweep: a give-back frees what has been idle, but a server that
 * answers one large query and then none (a quiet night) would keep that
 * query's tables until its next request; every WEB_POOL_SWEEP_NS this frees
 * them without one.
 */
static void *sweep_pools(void *arg)
{
	struct web_server *srv = arg;

	pthread_mutex_lock(&srv->sweep_mu);
	while (!srv->sweep_stop) {
		thread_wait_until(&srv->sweep_cv, &srv->sweep_mu, clock_mono_ns() + WEB_POOL_SWEEP_NS);
		if (srv->sweep_stop)
			break;
		pthread_mutex_unlock(&srv->sweep_mu);
		blockpool_decay(&srv->ingest_pool);
		blockpool_decay(&srv->query_pool);
		blockpool_decay(&srv->body_pool);
		pthread_mutex_lock(&srv->sweep_mu);
	}
	pthread_mutex_unlock(&srv->sweep_mu);
	return NULL;
}

/*
 * The pools of memory blocks requests leave for the next ones
 * (docs/operations.md, "Memory: the allocator"): ingest requests' arenas,
 * queries' tables (which otherwise fault in fresh pages each time) and
 * request bodies; blocks of a size no request used for WEB_POOL_IDLE_NS
 * leave.  0, or ERR_NOMEM with none of them set up.
 */
static int init_pools(struct web_server *srv)
{
	if (blockpool_init(&srv->ingest_pool, WEB_INGEST_POOL_BYTES, WEB_INGEST_POOL_BLOCK))
		return ERR_NOMEM;
	if (blockpool_init_classes(&srv->query_pool, WEB_QUERY_POOL_BYTES, WEB_QUERY_POOL_MIN_BLOCK,
				   WEB_QUERY_POOL_MAX_BLOCK)) {
		blockpool_release(&srv->ingest_pool);
		return ERR_NOMEM;
	}
	if (blockpool_init_classes(&srv->body_pool, WEB_BODY_POOL_BYTES, WEB_BODY_POOL_MIN_BLOCK,
				   WEB_BODY_POOL_MAX_BLOCK)) {
		blockpool_release(&srv->query_pool);
		blockpool_release(&srv->ingest_pool);
		return ERR_NOMEM;
	}
	blockpool_set_idle(&srv->ingest_pool, WEB_POOL_IDLE_NS);
	blockpool_set_idle(&srv->query_pool, WEB_POOL_IDLE_NS);
	blockpool_set_idle(&srv->body_pool, WEB_POOL_IDLE_NS);
	pthread_mutex_init(&srv->sweep_mu, NULL);
	thread_cond_init_mono(&srv->sweep_cv);
	if (pthread_create(&srv->sweep_thread, NULL, sweep_pools, srv)) {
		pthread_cond_destroy(&srv->sweep_cv);
		pthread_mutex_destroy(&srv->sweep_mu);
		blockpool_release(&srv->body_pool);
		blockpool_release(&srv->query_pool);
		blockpool_release(&srv->ingest_pool);
		return ERR_NOMEM;
	}
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
	char threads[16], timeout[16], idle[16], ports_opt[sizeof(srv->listen) + 2];
	const char *options[30];
	int n = 0, tls, rc;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return err_set(msg, ERR_NOMEM, "out of memory");
	srv->store = st;
	pthread_mutex_init(&srv->settings_lock, NULL);
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
	web__debuginfo_ingest_hooks(srv);
	if (init_pools(srv)) {
		pthread_mutex_destroy(&srv->settings_lock);
		free(srv);
		return err_set(msg, ERR_NOMEM, "out of memory");
	}
	srv->opt.limits.pool = &srv->ingest_pool;
	if (!srv->opt.ingest_concurrency)
		srv->opt.ingest_concurrency = gate_cpus_available();
	if (srv->opt.ingest_concurrency > GATE_MAX_LIMIT)
		srv->opt.ingest_concurrency = GATE_MAX_LIMIT;
	gate_init(&srv->ingest_gate, srv->opt.ingest_concurrency);
	srv->opt.query.heap = &srv->query_pool.alloc;
	srv->max_queries = srv->opt.threads - (srv->opt.threads / 4 > 2 ? srv->opt.threads / 4 : 2);
	if (srv->max_queries < 1)
		srv->max_queries = 1;
	default_conn_limits(&srv->opt);
	srv->started_ns = clock_wall_ns();
	srv->opt.auth_tokens = NULL; /* read here; the table is srv->auth */
	err_clear(&srv->tls_msg);
	snprintf(threads, sizeof(threads), "%d", srv->opt.max_connections);
	snprintf(timeout, sizeof(timeout), "%d", srv->opt.request_timeout_ms);
	snprintf(idle, sizeof(idle), "%d", srv->opt.idle_timeout_ms);
	tls = opt->tls_cert && opt->tls_cert[0];
	/* civetweb's suffix "s" makes a port TLS-only. */
	snprintf(ports_opt, sizeof(ports_opt), "%s%s", srv->listen, tls ? "s" : "");
	rc = check_access(srv, opt, msg);
	if (!rc && web__conns_init(&srv->conns, (size_t)srv->opt.max_connections,
				   (unsigned)srv->opt.max_client_connections))
		rc = err_set(msg, ERR_NOMEM, "out of memory for %d connections",
			     srv->opt.max_connections);
	if (!rc)
		rc = start_limits(srv, st, opt->limits_file, msg);
	if (rc) {
		server_free(srv);
		return rc;
	}
	srv->opt.limits_file = NULL; /* read here; the state is srv->limits */

	options[n++] = "listening_ports";
	options[n++] = ports_opt;
	options[n++] = "num_threads";
	options[n++] = threads;
	options[n++] = "request_timeout_ms";
	options[n++] = timeout;
	options[n++] = "enable_keep_alive";
	options[n++] = "yes";
	options[n++] = "keep_alive_timeout_ms";
	options[n++] = idle;
	/* Connections the kernel completes while every worker is busy wait
	 * here (civetweb's default, 200, refuses a burst of agents). */
	options[n++] = "listen_backlog";
	options[n++] = "1024";
	/* Accepted connections waiting for a worker. */
	options[n++] = "connection_queue";
	options[n++] = "128";
	/* Responses leave at once, not after the client's delayed ACK (40 ms). */
	options[n++] = "tcp_nodelay";
	options[n++] = "1";
	if (tls) {
		/* civetweb's own floor too (4: TLS 1.2 and later); tls.c sets the same. */
		options[n++] = "ssl_protocol_version";
		options[n++] = "4";
	}
	options[n++] = NULL;

	pthread_once(&lib_once, lib_init);
	memset(&cb, 0, sizeof(cb));
	cb.log_message = on_log;
	cb.connection_close = on_connection_close;
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
		server_free(srv);
		return rc;
	}
	mg_set_request_handler(srv->ctx, "/", on_request, srv);
	memset(ports, 0, sizeof(ports));
	if (mg_get_server_ports(srv->ctx, 4, ports) < 1) {
		mg_stop(srv->ctx);
		server_free(srv);
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

/* The stopping half of web_server_stop_within(), on a thread of its own. */
struct stopper {
	pthread_mutex_t lock;
	pthread_cond_t done_cv;
	struct mg_context *ctx;
	int done;
	int abandoned; /* the caller gave up waiting: the thread frees this */
};

static void stopper_free(struct stopper *sp)
{
	pthread_cond_destroy(&sp->done_cv);
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

static void *stop_thread(void *arg)
{
	struct stopper *sp = arg;
	int abandoned;

	mg_stop(sp->ctx);
	pthread_mutex_lock(&sp->lock);
	sp->done = 1;
	abandoned = sp->abandoned;
	pthread_cond_signal(&sp->done_cv);
	pthread_mutex_unlock(&sp->lock);
	if (abandoned) {
		stopper_free(sp);
	}
	return NULL;
}

int web_server_stop_within(struct web_server *srv, int64_t timeout_ns, int *running)
{
	struct stopper *sp;
	struct timespec ts;
	pthread_t t;
	int done;

	assert(timeout_ns > 0);
	*running = 0;
	if (!srv)
		return 0;
	sp = calloc(1, sizeof(*sp));
	if (!sp) {
		web_server_stop(srv);
		return 0;
	}
	pthread_mutex_init(&sp->lock, NULL);
	pthread_cond_init(&sp->done_cv, NULL);
	sp->ctx = srv->ctx;
	if (pthread_create(&t, NULL, stop_thread, sp)) {
		stopper_free(sp);
		web_server_stop(srv);
		return 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(timeout_ns / 1000000000);
	ts.tv_nsec += (long)(timeout_ns % 1000000000);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&sp->lock);
	while (!sp->done && pthread_cond_timedwait(&sp->done_cv, &sp->lock, &ts) == 0)
		;
	done = sp->done;
	if (!done)
		sp->abandoned = 1;
	pthread_mutex_unlock(&sp->lock);
	if (!done) {
		pthread_detach(t);
		*running = atomic_load_explicit(&srv->requests_running, memory_order_relaxed);
		return ERR_TIMEOUT; /* srv stays: its requests still use it */
	}
	pthread_join(t, NULL);
	stopper_free(sp);
	server_free(srv);
	return 0;
}

void web_server_stop(struct web_server *srv)
{
	if (!srv)
		return;
	mg_stop(srv->ctx);
	server_free(srv);
}
