/*
 * web.h - the HTTP face of unhex: a civetweb server with the ingest and ops
 * routes, and a minimal HTTP/1.1 client for the command line.
 *
 * Server
 *   web_server_start() binds the listen address, starts `threads` civetweb
 *   worker threads and returns an owned server; web_server_stop() stops
 *   accepting, waits for in-flight requests to finish and frees it.  The
 *   store is borrowed: it must stay open until web_server_stop() returned.
 *   Routes (docs/api.md): GET /ready, POST /ingest and /pyroscope/ingest
 *   (Pyroscope legacy), POST /push.v1.PusherService/Push (Connect, JSON or
 *   binary), GET /api/v1/stats, GET /metrics; the query routes (GET
 *   /pyroscope/render, /pyroscope/render-diff, /api/v1/pprof, /api/v1/top,
 *   /api/v1/folded, /api/v1/diff-top, /pyroscope/labels,
 *   /pyroscope/label-values, POST /querier.v1.QuerierService/<Method>); and
 *   the browser UI embedded at build time (GET / and GET /<file>).
 *
 *   Queries run on the same workers as ingest, but at most threads minus a
 *   reserve (a quarter of the threads, at least 2) at once: past that a
 *   query gets 503, so long queries can never take every worker from ingest.
 *
 *   Every request body is untrusted: its Content-Length is checked against
 *   limits.max_request_bytes before a byte is read, chunked bodies stop at
 *   the same cap, compressed bodies inflate under max_decompressed_bytes, and
 *   a client that stops sending is dropped after request_timeout_ms.  Error
 *   codes become HTTP statuses through base/err.h's table (err_http_status).
 *
 *   Tenants come from the X-Scope-OrgID header (default "anonymous").
 *
 * Threading
 *   Requests run on civetweb worker threads; the server keeps no per-request
 *   state outside the request, and its counters (for /metrics) are atomics in
 *   struct web_server.  There is no process-wide state besides civetweb's
 *   own library initialization, done once by web_server_start().
 *
 * Client
 *   web_url_parse() and web_client_request() are blocking, thread-safe, and
 *   use plain sockets with a deadline per request.  Only http:// URLs.
 */
#ifndef UNHEX_WEB_WEB_H
#define UNHEX_WEB_WEB_H

#include <stddef.h>
#include <stdint.h>

#include "ingest/ingest.h"
#include "query/query.h"

struct buf;
struct err_msg;
struct store;
struct store_tenant_stats;
struct web_server;

#define WEB_DEFAULT_LISTEN "0.0.0.0:4040"
#define WEB_DEFAULT_TENANT "anonymous"

struct web_options {
	const char *listen;        /* "HOST:PORT"; port 0 picks a free port; borrowed */
	int threads;               /* civetweb worker threads; 0 picks WEB_DEFAULT_THREADS */
	int request_timeout_ms;    /* per-request socket deadline; 0 picks 30000 */
	struct ingest_limits limits;
	struct query_limits query; /* deadline and byte budget of every query;
				    * query.symbolizer (borrowed) also serves the
				    * debuginfo and debuginfod routes */
	const char *upload_token;  /* borrowed; when set, debuginfo uploads need
				    * "Authorization: Bearer <token>" */
};

#define WEB_DEFAULT_THREADS 16

/* Fills the defaults: WEB_DEFAULT_LISTEN, 16 threads, 30 s, ingest and query defaults. */
void web_options_default(struct web_options *opt);

/*
 * Starts serving `st` (borrowed) as configured by `opt` (copied).  On
 * success returns an owned *out; on failure (address in use, bad listen
 * string) a message in msg.
 */
int web_server_start(struct store *st, const struct web_options *opt,
		     struct web_server **out, struct err_msg *msg);

/* The TCP port actually bound (useful with port 0). */
int web_server_port(const struct web_server *srv);

/* Stops accepting, waits for running requests, frees.  NULL is a no-op. */
void web_server_stop(struct web_server *srv);

/*
 * Appends the JSON object of one tenant's statistics (the body of
 * GET /api/v1/stats, also printed by `unhex stats --json`).
 */
int web_stats_json(struct buf *out, const struct store_tenant_stats *s);

/* ---- client ------------------------------------------------------------- */

/* A parsed http://host[:port][/prefix] URL. */
struct web_url {
	char host[256];   /* name or address, without IPv6 brackets */
	int port;         /* 80 when not given */
	char prefix[512]; /* path prefix without trailing '/', "" for none */
};

/* Parses `url`; https and other schemes fail with ERR_INVALID. */
int web_url_parse(const char *url, struct web_url *out, struct err_msg *msg);

struct web_header {
	const char *name;  /* borrowed */
	const char *value; /* borrowed */
};

struct web_request {
	const char *method;               /* "GET", "POST" */
	const char *path;                 /* path and query, appended to the prefix */
	const struct web_header *headers; /* extra headers; borrowed */
	size_t n_headers;
	const void *body;                 /* borrowed; NULL for none */
	size_t len;
	int timeout_ms;                   /* whole request; 0 picks 60000 */
	size_t max_response_bytes;        /* 0 picks 64 MiB */
};

/*
 * Sends `req` to `url` over one HTTP/1.1 connection and reads the answer:
 * the status in *status, the body appended to `body` (caller-initialized).
 * Returns 0 when a response was read, whatever its status; ERR_UNAVAILABLE
 * (connect failed), ERR_TIMEOUT, ERR_TOO_LARGE or ERR_INVALID (not HTTP)
 * with a message otherwise.
 */
int web_client_request(const struct web_url *url, const struct web_request *req,
		       int *status, struct buf *body, struct err_msg *msg);

/* Appends `s` percent-encoded for a query string value (RFC 3986 unreserved kept). */
int web_url_encode(struct buf *out, const char *s);

#endif
