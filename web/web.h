/*
 * web.h - the HTTP face of unhex: a civetweb server with the ingest, query,
 * debuginfo and ops routes.  (The command line's client is cli/http.c.)
 *
 * Server
 *   web_server_start() binds the listen address, starts `threads` civetweb
 *   worker threads and returns an owned server; web_server_stop() stops
 *   accepting, waits for in-flight requests to finish and frees it.  The
 *   store is borrowed: it must stay open until web_server_stop() returned.
 *   Routes (docs/api.md; the table is `routes` in server.c): GET /ready;
 *   ingest: POST /ingest and /pyroscope/ingest (Pyroscope legacy), POST
 *   /push.v1.PusherService/Push (Connect, JSON or binary), POST
 *   /v1development/profiles (OTLP profiles over HTTP); GET /api/v1/stats,
 *   GET /metrics; the query routes (GET /pyroscope/render,
 *   /pyroscope/render-diff, /api/v1/pprof, /api/v1/top, /api/v1/folded,
 *   /api/v1/diff-top, /pyroscope/labels, /pyroscope/label-values, POST
 *   /querier.v1.QuerierService/<Method>, POST /symbolz, GET
 *   /api/v1/symbolization); debug info (POST and GET
 *   /api/v1/debuginfo/<build-id>, GET /api/v1/debuginfo, and debuginfod's
 *   GET /buildid/<build-id>/debuginfo|executable); and the browser UI
 *   embedded at build time (GET / and GET /<file>).
 *
 *   Queries run on the same workers as ingest, but at most threads minus a
 *   reserve (a quarter of the threads, at least 2) at once: past that a
 *   query gets 503, so long queries can never take every worker from ingest.
 *
 *   Per-tenant limits (opt.limits_file, docs/limits.md; web/limits.c):
 *   ingest bytes and profiles per second and debug-info bytes per hour
 *   (429 with Retry-After), series and labels (413), queries running at
 *   once per tenant (429, before a server slot is taken), and a cap or an
 *   allow-list on the tenants that send data (403).
 *
 *   Every request body is untrusted: its Content-Length is checked against
 *   limits.max_request_bytes before a byte is read, chunked bodies stop at
 *   the same cap, compressed bodies inflate under max_decompressed_bytes.
 *   Slow clients (docs/operations.md): the headers must arrive within
 *   request_timeout_ms, the body within body_timeout_ms (408 past it), a
 *   kept-alive connection idle for idle_timeout_ms is closed, and one
 *   client address may hold max_client_connections of the max_connections
 *   (further ones are closed at once).  Framing two parsers could read
 *   differently (two Content-Lengths, Content-Length with chunked, bare LF)
 *   is 400 and closes the connection.  All requests in flight together
 *   hold at most max_inflight_bytes: each reserves its body, its inflated
 *   body and what its decode may need before using it, a query 16 MiB
 *   more and then more as its tables grow (query_limits.reserve), and gets
 *   503 with Retry-After when that does not fit.  Every
 *   response body is built in memory under max_response_bytes: a route
 *   whose answer (a flame graph, a pprof, a table) would pass it answers
 *   413 instead.  Error codes become HTTP statuses through base/err.h's
 *   table (err_http_status).
 *
 *   Who may do what (docs/security.md).  With a token file
 *   (opt.auth_tokens) every route but /ready needs a token, sent as
 *   "Authorization: Bearer <token>" or as HTTP Basic with the tenant as
 *   user and the token as password; each token grants scopes (ingest,
 *   query, upload, admin) for one tenant or for all.  The tenant of a
 *   request is X-Scope-OrgID, else the Basic user, else the token's own
 *   (WEB_DEFAULT_TENANT for an all-tenants token); a token bound to one
 *   tenant never acts for another, and a repeated X-Scope-OrgID or
 *   Authorization header is refused.  Failures are 401 (no or unknown
 *   token; with a Basic challenge, so a browser asks) or 403 (a token
 *   without the scope, or another tenant's), decided before a byte of
 *   the body is read.  The file is read at start and again by
 *   web_server_reload_auth().  Without a token file the server is open
 *   (every request may act for any tenant), which web_server_start()
 *   refuses on a listen address that is not loopback unless
 *   opt.auth_disabled says it is meant.
 *
 *   TLS: with opt.tls_cert and opt.tls_key the server speaks only HTTPS,
 *   TLS 1.2 or later with forward-secret AEAD ciphers, through civetweb's
 *   OpenSSL (web/tls.c says how Debian's civetweb is made to load it).
 *
 * Threading
 *   Requests run on civetweb worker threads (max_connections of them, one
 *   per open connection); the server keeps no per-request state outside
 *   the request and its connection's slot (web/conns.c, under a lock), and
 *   its counters (for /metrics) and memory budget are atomics in struct
 *   web_server.  One more thread per server watches body deadlines.  There is no process-wide state besides civetweb's
 *   own library initialization, done once by web_server_start().
 */
#ifndef UNHEX_WEB_WEB_H
#define UNHEX_WEB_WEB_H

#include <stddef.h>
#include <stdint.h>

#include "ingest/ingest.h"
#include "query/query.h"

struct buf;
struct debuginfo;
struct err_msg;
struct store;
struct objstore;
struct store_tenant_stats;
struct web_server;

#define WEB_DEFAULT_LISTEN "127.0.0.1:4040"
#define WEB_DEFAULT_TENANT "anonymous"

struct web_options {
	const char *listen;        /* "HOST:PORT"; port 0 picks a free port; borrowed */
	int threads;               /* civetweb worker threads; 0 picks WEB_DEFAULT_THREADS */
	int request_timeout_ms;    /* every header of a request must arrive within
				    * it, and no read or write of a body may stall
				    * longer; 0 picks WEB_DEFAULT_HEADER_TIMEOUT_MS */
	int body_timeout_ms;       /* the whole body must arrive within it, plus a
				    * second per MiB declared; 0 picks the default */
	int idle_timeout_ms;       /* a kept-alive connection idle this long is
				    * closed; 0 picks the default */
	int max_connections;       /* connections served at once (civetweb workers,
				    * at least `threads`); 0 picks the default */
	int max_client_connections; /* of those, from one client address; 0 picks
				    * the default */
	struct ingest_limits limits;
	struct query_limits query; /* deadline and byte budget of every query;
				    * query.symbolizer (borrowed) also serves the
				    * debuginfo and debuginfod routes */
	const char *auth_tokens;   /* borrowed: the token file; NULL runs open */
	const char *limits_file;   /* borrowed: per-tenant limits (docs/limits.md);
				    * NULL: the defaults */
	uint32_t perfmap_max;      /* perf maps kept per tenant, the limits file's
				    * max_perfmaps default; 0 picks 1000 */
	int auth_disabled;         /* open on purpose: allows a non-loopback listen */
	const char *tls_cert;      /* borrowed: PEM certificate (chain); with tls_key */
	const char *tls_key;       /* borrowed: PEM private key; both or neither */
	const char *release_labels; /* borrowed; comma-separated labels that name a
				    * release (docs/regressions.md); NULL: the default */
	int log_requests;          /* one logfmt line per request on stderr */
	const char *no_ingest;     /* borrowed; set, every ingest route answers 503
				    * with this text before reading the body (a
				    * querier or a compactor: docs/object-storage.md) */
	size_t max_inflight_bytes; /* memory all requests may hold at once (503 with
				    * Retry-After past it; docs/operations.md);
				    * 0 picks WEB_DEFAULT_MAX_INFLIGHT_BYTES */
	const struct objstore *objstore; /* borrowed: the bucket of --storage.backend
				    * s3, counted on /metrics and /api/v1/stats;
				    * NULL: none */
	uint32_t ingest_concurrency; /* ingest requests inflating, decoding and
				    * writing at once (base/gate.h), 1 to
				    * GATE_MAX_LIMIT; 0 picks gate_cpus_available() */
	size_t max_response_bytes; /* largest response body of any route (413
				    * past it); 0 picks WEB_DEFAULT_MAX_RESPONSE_BYTES,
				    * less than WEB_MIN_RESPONSE_BYTES is raised to it */
};

#define WEB_DEFAULT_THREADS 16
#define WEB_DEFAULT_HEADER_TIMEOUT_MS 10000
#define WEB_DEFAULT_BODY_TIMEOUT_MS 60000
#define WEB_DEFAULT_IDLE_TIMEOUT_MS 5000
#define WEB_DEFAULT_MAX_CONNECTIONS 512
#define WEB_DEFAULT_MAX_INFLIGHT_BYTES ((size_t)4 << 30)
#define WEB_DEFAULT_MAX_CLIENT_CONNECTIONS 64
#define WEB_DEFAULT_MAX_RESPONSE_BYTES ((size_t)256 << 20)
#define WEB_MIN_RESPONSE_BYTES ((size_t)64 << 10) /* an error message always fits */

/*
 * Fills the defaults: WEB_DEFAULT_LISTEN, 16 threads, 30 s, ingest and query
 * defaults, WEB_DEFAULT_MAX_RESPONSE_BYTES.
 */
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

/*
 * Fills *h (caller-allocated; it borrows `symbolizer`, which must outlive
 * its use) with the hooks that tell the debug-info service what ingest
 * stored without names (debuginfo.h, "binaries that arrive without
 * names").  The server sets them on its own ingest; `unhex serve
 * --preload` uses them for what it ingests before serving.
 */
void web_ingest_hooks_init(struct ingest_hooks *h, struct debuginfo *symbolizer);

/*
 * Reads the token file again and, when it parses, uses it for every
 * request from now on (requests in flight finish with the old tokens;
 * connections stay open).  A file that does not parse changes nothing and
 * is ERR_INVALID (or ERR_IO) with a message naming the line.  *n gets the
 * number of tokens now in use.  ERR_INVALID on a server without a token
 * file.  Thread-safe.
 */
int web_server_reload_auth(struct web_server *srv, size_t *n, struct err_msg *msg);

/*
 * Appends the token-file line of a token (borrowed, `len` bytes) bound to
 * `tenant` ("*" for all) with `scopes` ("ingest,query") and an optional
 * `name` (NULL for none), with a line end: what `unhex token` prints.
 * ERR_INVALID with a message for a bad tenant, scope list, name or token.
 */
int web_token_line(const char *token, size_t len, const char *tenant, const char *scopes,
		   const char *name, struct buf *out, struct err_msg *msg);

/* Stops accepting, waits for running requests, frees.  NULL is a no-op. */
void web_server_stop(struct web_server *srv);

/*
 * Like web_server_stop(), but waits at most timeout_ns (> 0) for running
 * requests: 0 when they finished (srv is freed), else ERR_TIMEOUT with
 * *running the requests still in flight; srv then stays allocated (they
 * still use it and the store), and the caller should end the process
 * without closing the store.  Every profile acknowledged before is in the
 * store's write-ahead log already.
 */
int web_server_stop_within(struct web_server *srv, int64_t timeout_ns, int *running);

/*
 * Appends the JSON object of one tenant's statistics (the body of
 * GET /api/v1/stats, also printed by `unhex stats --json`): counts, bytes,
 * blocks (with the list of the tenant's blocks read from `st`, borrowed;
 * NULL leaves the list out), what retention removed and, when `os`
 * (borrowed) is not NULL, the object store's requests (web_objstore_json).
 */
int web_stats_json(struct buf *out, const struct store_tenant_stats *s, struct store *st,
		   const struct objstore *os);

/*
 * Appends the JSON object of the object store's counters since start
 * (objstore_stats(): requests by operation and outcome, retries, bytes):
 * {"backend":"s3","failures":N,"ops":{"put":{"ok":N,"not_found":N,
 * "conflict":N,"error":N,"retries":N,"bytes_in":N,"bytes_out":N},...}}.
 */
int web_objstore_json(struct buf *out, const struct objstore *os);

#endif
