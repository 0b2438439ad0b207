/*
 * web_int.h - internals of the web module, shared by its files and tests.
 *
 * Design
 *   server.c owns civetweb: options, routing, reading bodies under the caps,
 *   writing responses.  routes_ingest.c and routes_ops.c hold the handlers;
 *   they see a request only as struct web__req (method, path, query, a few
 *   headers, the body in a capped buffer), so civetweb's types stay in
 *   server.c.  params.c and multipart.c are pure functions over untrusted
 *   bytes (query strings, times, tenants, multipart bodies) and are unit
 *   tested without a socket.
 *
 * Metrics
 *   Counters are per server (struct web__counters), updated with relaxed
 *   atomics by worker threads and read by /metrics.  Statuses are counted in
 *   a fixed table of buckets (web__status_bucket) so no label set grows with
 *   client input.
 */
#ifndef UNHEX_WEB_WEB_INT_H
#define UNHEX_WEB_WEB_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/blockpool.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/gate.h"
#include "web/web.h"

/* ---- pushbound.c -------------------------------------------------------- */

/*
 * The uncompressed size a gzip stream declares in its trailer (ISIZE,
 * RFC 1952 2.3.1: modulo 2^32), or 0 when `p` is not gzip.  Untrusted: it
 * only sizes a reservation, and the inflate is capped at it.
 */
size_t web__gzip_isize(const char *p, size_t n);

/* An inflate bound from a declared size: at least `floor`, at most `max`. */
size_t web__inflate_bound(size_t isize, size_t floor, size_t max);

/*
 * What one profile of n bytes may decode to: its gzip trailer's size (at
 * least n, at most `max`), or n when it is not gzip.
 */
size_t web__profile_bound(const char *p, size_t n, size_t max);

/*
 * What the profiles of the binary push.v1 PushRequest [body, body +
 * body_len) may decode to together: the sum of web__profile_bound over
 * every raw_profile field, read off the wire bytes without unpacking them
 * (saturating at SIZE_MAX).  1 with *sum; 0 when the bytes are not protobuf
 * message bytes or a field of the schema has another wire type than the
 * schema's (*sum then means nothing; the decode says what is wrong).  Bytes
 * protobuf-c unpacks as a PushRequest always give 1 and a *sum at least
 * that of the profiles it unpacks.
 */
int web__push_bound(const uint8_t *body, size_t body_len, size_t max, size_t *sum);

/* ---- params.c ----------------------------------------------------------- */

/*
 * Finds `key` in the query string `qs` (without '?'; may be NULL) and
 * URL-decodes its first value into out (NUL-terminated, at most out_len-1
 * bytes).  Returns 0, ERR_NOT_FOUND, ERR_TOO_LARGE or ERR_INVALID (a bad
 * %-escape or an embedded NUL).
 */
int web__query_param(const char *qs, const char *key, char *out, size_t out_len);

#define WEB_TENANT_MAX 150

/* 0 when `s` is a valid tenant id, else ERR_INVALID with a message. */
int web__tenant_check(const char *s, struct err_msg *msg);

/*
 * True when the media type of Content-Type `ct` (parameters and case
 * ignored) is `type`.
 */
int web__media_type_is(const char *ct, const char *type);

/* ---- credentials.c: who is asking (pure functions over untrusted bytes) ---- */

/* Scopes a token grants (docs/security.md has the table of routes). */
#define WEB_SCOPE_INGEST 1u  /* send profiles */
#define WEB_SCOPE_QUERY 2u   /* read profiles, stats, debug-info listings */
#define WEB_SCOPE_UPLOAD 4u  /* upload debug info a build ID does not have yet */
#define WEB_SCOPE_ADMIN 8u   /* /metrics, replacing debug info */
#define WEB_SCOPE_ALL 15u

#define WEB_ALL_TENANTS "*"   /* tenant= of a token that may act for any tenant */
#define WEB_SECRET_MAX 512    /* bytes of a token */
#define WEB_TOKEN_NAME_MAX 64
#define WEB_TOKEN_LINE_MAX 1024

/*
 * Parses a comma-separated scope list ("ingest,query") of `len` bytes into
 * bits.  ERR_INVALID naming an unknown or empty scope.
 */
int web__scopes_parse(const char *s, size_t len, unsigned *out, struct err_msg *msg);
/* The scope list of `scopes` ("ingest,query"; "" for none) into out[len]. */
void web__scopes_str(unsigned scopes, char *out, size_t len);

/* The credentials of an Authorization header. */
struct web__cred {
	int basic;                         /* 1: Basic, 0: Bearer */
	char user[WEB_TENANT_MAX + 1];     /* the Basic user ("" when none): a tenant id */
	char secret[WEB_SECRET_MAX + 1];   /* the token, NUL-terminated */
	size_t secret_len;
};

/*
 * Parses an Authorization header value (borrowed): "Bearer <token68>" or
 * "Basic <base64 of user:password>", the scheme in any case.  A token is
 * 1..WEB_SECRET_MAX bytes without control characters; a Basic user at most
 * WEB_TENANT_MAX.  ERR_UNAUTHENTICATED with a message for anything else,
 * *out untouched then.
 */
int web__cred_parse(const char *value, struct web__cred *out, struct err_msg *msg);

/* One token of the token file. */
struct web__token_line {
	uint8_t sha256[32];                   /* SHA-256 of the token's bytes */
	char tenant[WEB_TENANT_MAX + 1];      /* a tenant id, or WEB_ALL_TENANTS */
	unsigned scopes;                      /* WEB_SCOPE_* bits */
	char name[WEB_TOKEN_NAME_MAX + 1];    /* label for logs; "" when not given */
};

/*
 * Parses one line of the token file (`len` bytes, no line end needed; a
 * trailing CR is ignored): "sha256=<64 hex> tenant=<id|*> scopes=<list>
 * [name=<label>]" in any order, blanks between.  Returns 1 with *out for a
 * token, 0 for a blank or '#' comment line, ERR_INVALID with a message
 * (unknown or repeated field, bad value, a plain token) otherwise.
 */
int web__token_line_parse(const char *line, size_t len, struct web__token_line *out,
			  struct err_msg *msg);

/* Who a request is: the token it showed, or the open server's stand-in. */
struct web__principal {
	char tenant[WEB_TENANT_MAX + 1];      /* bound tenant, or WEB_ALL_TENANTS */
	unsigned scopes;
	char name[WEB_TOKEN_NAME_MAX + 1];
};

/*
 * The tenant a request of `p` acts for, into out: X-Scope-OrgID `header`
 * (borrowed, NULL when absent), else the Basic user `basic_user` (NULL or
 * "" when none), else the bound tenant (WEB_DEFAULT_TENANT for an
 * all-tenants token).  ERR_INVALID for a malformed tenant id; ERR_PERMISSION
 * when a token bound to one tenant is asked for another.
 */
int web__tenant_for(const struct web__principal *p, const char *basic_user, const char *header,
		    char out[WEB_TENANT_MAX + 1], struct err_msg *msg);

/*
 * 1 when the "HOST:PORT" listen address `listen` binds loopback only
 * (127.0.0.0/8, [::1], localhost), 0 for anything else: all interfaces
 * (":4040", "4040", 0.0.0.0, [::]) or any other address.
 */
int web__listen_is_loopback(const char *listen);

/* ---- auth.c: the token table ------------------------------------------- */

struct web_auth;

/*
 * Loads the token file at `path` (copied): at most 1 MiB and 10000
 * tokens, each once, not writable by other users.  Returns an owned *out;
 * ERR_INVALID naming the file and line, ERR_IO, ERR_TOO_LARGE, ERR_NOMEM.
 */
int web__auth_new(const char *path, struct web_auth **out, struct err_msg *msg);
/* Re-reads the file; on any failure the loaded tokens stay.  Thread-safe. */
int web__auth_reload(struct web_auth *a, struct err_msg *msg);
size_t web__auth_count(struct web_auth *a);
const char *web__auth_path(const struct web_auth *a);
/* NULL is a no-op; no lookup may be running. */
void web__auth_free(struct web_auth *a);
/*
 * The principal of a presented token (`len` bytes, borrowed) into *who:
 * 0, or ERR_UNAUTHENTICATED when no token of the table has its SHA-256
 * (every entry is compared, in constant time).  Thread-safe.
 */
int web__auth_lookup(struct web_auth *a, const char *secret, size_t len,
		     struct web__principal *who);

/* ---- tls.c: the server's TLS through civetweb's OpenSSL --------------- */

/*
 * Checks that civetweb will find a usable OpenSSL when it loads
 * "libssl.so" (tls.c says why it may not): ERR_UNAVAILABLE with a message
 * otherwise.
 */
int web__tls_check_runtime(struct err_msg *msg);
/*
 * Configures civetweb's SSL_CTX `ssl_ctx` (an SSL_CTX *): the certificate
 * chain `cert` and private key `key` (PEM paths, borrowed), TLS 1.2 or
 * later, forward-secret AEAD ciphers only.  0 or ERR_INVALID with
 * OpenSSL's reason.
 */
int web__tls_setup(void *ssl_ctx, const char *cert, const char *key, struct err_msg *msg);

/* ---- multipart.c -------------------------------------------------------- */

#define WEB_BOUNDARY_MAX 70 /* RFC 2046 §5.1.1 */
#define WEB_MULTIPART_MAX_PARTS 16
#define WEB_MULTIPART_MAX_HEADER 8192 /* header block of one part */

/*
 * Extracts the boundary parameter of a multipart/form-data Content-Type into
 * out (at least WEB_BOUNDARY_MAX + 1 bytes).  ERR_INVALID when the type is
 * not multipart/form-data or the boundary is missing or malformed.
 */
int web__multipart_boundary(const char *content_type, char *out, size_t out_len,
			    struct err_msg *msg);

/* One part of a multipart body; pointers into the body (borrowed, not NUL-terminated). */
struct web__part {
	const char *name;
	size_t name_len;
	const char *filename; /* NULL when the part has none */
	size_t filename_len;
	const char *data;
	size_t len;
};

/*
 * Splits a multipart/form-data `body` at `boundary` into at most max_parts
 * parts.  Line ends are CRLF (bare LF tolerated).  ERR_INVALID with a
 * message on a missing delimiter, a missing close delimiter, a part without
 * a form-data name, or too many parts.
 */
int web__multipart_parse(const char *body, size_t len, const char *boundary,
			 struct web__part *parts, size_t max_parts, size_t *n_parts,
			 struct err_msg *msg);

/* The first part named `name`, or NULL. */
const struct web__part *web__multipart_find(const struct web__part *parts, size_t n,
					    const char *name);

/* ---- conns.c: open connections, per-address cap, body deadlines ------- */

/* One open connection (civetweb's connection data points here). */
struct web__conn {
	int used;
	int refused;          /* over the per-address cap: answered 429 and closed */
	int expired;          /* its body deadline passed: reading side shut down */
	char addr[48];        /* the client's address as civetweb prints it */
	int remote_port, local_port;
	int64_t deadline_ns;  /* monotonic; 0: no body being read */
};

/*
 * The table: one slot per civetweb worker (a worker holds one connection),
 * a lock, and the watchdog thread that shuts down connections whose body
 * deadline passed (conns.c says how).
 */
struct web__conns {
	struct web__conn *slots;
	size_t n;
	unsigned per_addr;
	uint64_t refused;     /* connections refused by the per-address cap */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	int stop;
};

/* n slots (> 0), at most per_addr (> 0) per address; starts the watchdog. */
int web__conns_init(struct web__conns *t, size_t n, unsigned per_addr);
/* Stops the watchdog and frees; no connection may be open.  Idempotent. */
void web__conns_release(struct web__conns *t);
/*
 * Takes a slot for a new connection from addr:rport to local port lport.
 * When addr already holds per_addr connections, *refused is set (the slot
 * is taken but not counted for addr).  NULL when no slot is free (the
 * connection is not counted).
 */
struct web__conn *web__conns_open(struct web__conns *t, const char *addr, int rport, int lport,
				  int *refused);
void web__conns_close(struct web__conns *t, struct web__conn *c);
/* Sets (monotonic ns) or clears (0) the deadline of the body being read on c. */
void web__conns_deadline(struct web__conns *t, struct web__conn *c, int64_t deadline_ns);
/* True once the watchdog shut c down for its deadline. */
int web__conns_expired(struct web__conns *t, struct web__conn *c);
uint64_t web__conns_refused(struct web__conns *t);

/* ---- limits.c: per-tenant limits (docs/limits.md) ----------------------- */

#define WEB_LIMITS_MAX_TENANTS 100000  /* largest max_tenants */
#define WEB_LIMITS_MAX_LINES 10000     /* tenant lines of a limits file */
#define WEB_LIMITS_MAX_FILE (1 << 20)  /* bytes of a limits file */

/* What one tenant may do; every field > 0 (no "0 means unlimited"). */
struct web__tenant_limits {
	double ingest_bytes_per_s;       /* request bytes as received */
	double ingest_profiles_per_s;    /* stored profiles */
	double burst_s;                  /* the ingest buckets hold this many seconds */
	uint64_t max_series;
	uint32_t max_queries;            /* running at once */
	uint32_t max_labels;             /* of one series */
	uint32_t max_label_bytes;        /* one label name or value */
	uint32_t max_label_names;        /* distinct label names of the tenant */
	uint32_t max_label_values;       /* distinct values of one label name */
	double debuginfo_bytes_per_hour; /* uploaded; the bucket holds one hour */
	double max_query_bytes;          /* sample bytes one query reads (query_limits.max_scan_bytes) */
	uint32_t max_perfmaps;           /* JIT perf maps kept (debuginfo_perfmap_put) */
	int symbolization_off;           /* symbolization=off: queries never symbolize */
};

#define WEB_LIMITS_URL_MAX 1023          /* bytes of one debuginfod URL */
#define WEB_LIMITS_PATH_MAX 4095         /* bytes of a headers file's path */

struct web__tenant_override {
	char name[WEB_TENANT_MAX + 1];
	struct web__tenant_limits lim;   /* complete: the default's for keys not given */
	size_t line;                     /* of the limits file */
	int own_upstreams;               /* debuginfod_urls given (maybe "none") */
	char *debuginfod_urls;           /* owned; space-separated; "" for none */
	char *debuginfod_headers_file;   /* owned; NULL none */
};

struct web__limits_conf {
	uint32_t max_tenants;            /* tenants the server takes data from */
	int listed_only;                 /* only tenants with a tenant line */
	struct web__tenant_limits dflt;
	struct web__tenant_override *tenants; /* owned */
	size_t n_tenants;
};

/* Why a request was refused by a tenant limit (unhex_tenant_refusals_total). */
enum web__limit_reason {
	WEB_LIM_INGEST_BYTES,
	WEB_LIM_INGEST_PROFILES,
	WEB_LIM_SERIES,
	WEB_LIM_LABELS,
	WEB_LIM_QUERIES,
	WEB_LIM_DEBUGINFO_BYTES,
	WEB_LIM_TENANT_CAP,
	WEB_LIM_NOT_LISTED,
	WEB_LIM_LABEL_NAMES,
	WEB_LIM_LABEL_VALUES,
	WEB_LIM_QUERY_BYTES,
	WEB_LIM_COUNT
};
extern const char *const web__limit_reason_names[WEB_LIM_COUNT];

void web__tenant_limits_default(struct web__tenant_limits *l);
/* The defaults: `base` for every tenant (NULL: web__tenant_limits_default). */
void web__limits_conf_default(struct web__limits_conf *c, const struct web__tenant_limits *base);
void web__limits_conf_release(struct web__limits_conf *c);
/*
 * Parses a limits file's `len` bytes (docs/limits.md) into *out (release
 * with web__limits_conf_release), its default line over `base` (NULL: the
 * built-in defaults): ERR_INVALID or ERR_TOO_LARGE naming the line; *out
 * untouched on failure.
 */
int web__limits_parse(const char *text, size_t len, const struct web__tenant_limits *base,
		      struct web__limits_conf *out, struct err_msg *msg);
/* Reads and parses the file at `path` (at most WEB_LIMITS_MAX_FILE bytes). */
int web__limits_load(const char *path, const struct web__tenant_limits *base,
		     struct web__limits_conf *out, struct err_msg *msg);
struct debuginfo;
/*
 * Gives the debug-info service the symbolization settings of `c`: the
 * default line's symbolization, and each tenant line's symbolization and
 * upstreams (debuginfo_tenants_set).  ERR_INVALID naming the tenant.
 */
int web__limits_debuginfo(const struct web__limits_conf *c, struct debuginfo *svc,
			  struct err_msg *msg);

struct web_limits;
struct web__tenant_state;
struct store;

/*
 * The enforcing state for `conf` (its tenant array is taken; the rest
 * copied), knowing every tenant of `st` (borrowed; may be NULL), which is
 * served whatever the cap.  Thread-safe once made.
 */
int web__limits_new(const struct web__limits_conf *conf, struct store *st,
		    struct web_limits **out, struct err_msg *msg);
void web__limits_free(struct web_limits *L);
/*
 * Admits an ingest request of `bytes` for `tenant`: *out its state, or
 * ERR_PERMISSION (a new tenant past the cap or not listed) or
 * ERR_RATE_LIMITED (bytes or profiles over the rate; *retry_s set).
 */
int web__limits_ingest_admit(struct web_limits *L, const char *tenant, size_t bytes,
			     struct web__tenant_state **out, int *retry_s, struct err_msg *msg);
/* Charges the profiles an admitted request stored, and counts its refusal by
 * a series or label limit (`rc`, `message` of the ingest call). */
void web__limits_ingest_done(struct web_limits *L, struct web__tenant_state *s, uint64_t profiles,
			     int rc, const char *message);
/* `base` with the tenant's series and label limits. */
void web__limits_ingest_limits(const struct web__tenant_state *s, const struct ingest_limits *base,
			       struct ingest_limits *out);
/* Takes one of the tenant's query slots, or ERR_RATE_LIMITED. */
int web__limits_query_admit(struct web_limits *L, const char *tenant,
			    struct web__tenant_state **out, struct err_msg *msg);
void web__limits_query_done(struct web__tenant_state *s);
/* The sample bytes one query of the tenant of `s` may read (max_query_bytes). */
uint64_t web__limits_query_bytes(const struct web__tenant_state *s);
/* Counts a query of `s` refused by its max_query_bytes when `scan_refused`
 * (query_limits.scan_refused was set and the answer was its 413). */
void web__limits_query_finished(struct web__tenant_state *s, int scan_refused);
/* Admits `bytes` of debug-info upload for `tenant`, as web__limits_ingest_admit. */
int web__limits_debuginfo_admit(struct web_limits *L, const char *tenant, size_t bytes,
				int *retry_s, struct err_msg *msg);
/* Charges `bytes` of a chunked upload, read after its admission. */
void web__limits_debuginfo_charge(struct web_limits *L, const char *tenant, size_t bytes);

/* The perf maps `tenant` (borrowed) may keep (max_perfmaps). */
uint32_t web__limits_max_perfmaps(const struct web_limits *L, const char *tenant);
/* Appends unhex_tenant_refusals_total and the tenant gauges to /metrics. */
int web__limits_metrics(struct web_limits *L, struct buf *b);

/* ---- server.c and routes ------------------------------------------------ */

enum web__endpoint {
	WEB_EP_INGEST,
	WEB_EP_PYROSCOPE_INGEST,
	WEB_EP_PUSH,
	WEB_EP_OTLP,
	WEB_EP_COUNT
};

/* Status buckets counted per endpoint; the last one is "other". */
#define WEB_STATUS_BUCKETS 13
extern const int web__status_buckets[WEB_STATUS_BUCKETS];
size_t web__status_bucket(int status);

/* Rejection reasons counted by unhex_ingest_rejected_total{reason}. */
enum web__reason {
	WEB_REJ_INVALID,     /* malformed profile or parameters */
	WEB_REJ_TOO_LARGE,   /* a size limit */
	WEB_REJ_TENANT,      /* bad X-Scope-OrgID */
	WEB_REJ_UNSUPPORTED, /* format, content type or method */
	WEB_REJ_LIMIT,       /* a per-tenant limit (limits.c) */
	WEB_REJ_OTHER,       /* server-side failures */
	WEB_REJ_COUNT
};
extern const char *const web__reason_names[WEB_REJ_COUNT];

struct web__counters {
	atomic_uint_fast64_t requests[WEB_EP_COUNT][WEB_STATUS_BUCKETS];
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t samples;
	atomic_uint_fast64_t profiles;
	atomic_uint_fast64_t rejected[WEB_REJ_COUNT];
};

/* Request latency histograms on /metrics, by the kind of route. */
enum web__latency { WEB_LAT_INGEST, WEB_LAT_QUERY, WEB_LAT_SYMBOLIZATION, WEB_LAT_COUNT };
#define WEB_LAT_BUCKETS 14 /* web__latency_bounds, then +Inf */
extern const double web__latency_bounds[WEB_LAT_BUCKETS - 1];
extern const char *const web__latency_names[WEB_LAT_COUNT];

struct web__histogram {
	atomic_uint_fast64_t bucket[WEB_LAT_BUCKETS]; /* not cumulative; /metrics sums */
	atomic_uint_fast64_t count;
	atomic_uint_fast64_t sum_ns;
};

/* Counts one request of `ns` nanoseconds into h. */
void web__observe(struct web__histogram *h, int64_t ns);

struct web_server {
	struct store *store; /* borrowed */
	struct web_options opt;
	char listen[256];    /* copy of opt.listen */
	struct mg_context *ctx;
	int port;
	int64_t started_ns;
	struct web__counters counters;
	atomic_int queries_running;  /* admitted queries (web__query_admit) */
	int max_queries;             /* threads minus the reserve kept for ingest */
	struct web_auth *auth;       /* owned; NULL: the server runs open */
	struct web_limits *limits;   /* owned: per-tenant limits (limits.c) */
	struct err_msg tls_msg;      /* why the TLS setup failed, at start */
	pthread_mutex_t settings_lock; /* serializes settings.v1 read-modify-write */
	struct web__conns conns;     /* open connections (conns.c) */
	atomic_uint_fast64_t body_timeouts; /* bodies not received by their deadline */
	atomic_size_t inflight_bytes;       /* of opt.max_inflight_bytes, held by requests */
	atomic_int requests_running;        /* in on_request */
	struct web__histogram latency[WEB_LAT_COUNT];
	atomic_uint_fast64_t mem_refused;   /* requests refused for the memory budget */
	struct ingest_hooks ingest_hooks;   /* opt.limits.hooks: to the debug-info service */
	struct blockpool ingest_pool;       /* opt.limits.pool: ingest arenas' blocks */
	struct gate ingest_gate;            /* opt.ingest_concurrency requests at a time */
	struct blockpool query_pool;        /* opt.query.heap: queries' tables */
	struct blockpool body_pool;         /* request bodies, as read and as inflated */
	pthread_t sweep_thread;             /* blockpool_decay of the pools above */
	pthread_mutex_t sweep_mu;
	pthread_cond_t sweep_cv;            /* monotonic (thread_cond_init_mono) */
	int sweep_stop;                     /* under sweep_mu */
};

/*
 * The blocks ingest requests' arenas leave for the next request: at most
 * 32 MiB held (eight concurrent requests of the bench shape use about 1
 * MiB each), none over 4 MiB (a larger profile's blocks go back to libc).
 */
#define WEB_INGEST_POOL_BYTES ((size_t)32 << 20)
#define WEB_INGEST_POOL_BLOCK ((size_t)4 << 20)

/*
 * The blocks queries' tables leave for the next query: at most 128 MiB held
 * (a warm render of 300,000 samples over 187,000 distinct stacks takes 108
 * blocks, 119 MiB; 64 MiB left a sixth of them to fault in anew, 7 % more
 * CPU), in size classes from 128 KiB (the server's mmap threshold: smaller
 * tables come from glibc's heap) to 64 MiB.
 */
#define WEB_QUERY_POOL_BYTES ((size_t)128 << 20)
#define WEB_QUERY_POOL_MIN_BLOCK ((size_t)128 << 10)
#define WEB_QUERY_POOL_MAX_BLOCK ((size_t)64 << 20)

/*
 * The buffers request bodies are read (and inflated) into, left for the
 * next request: at most 32 MiB held, in size classes from 128 KiB (smaller
 * bodies come from glibc's heap) to 8 MiB.  A push of 16 bench-shape
 * pprofs is about 300 KiB: without the pool every such body was a fresh
 * mapping, faulted in by the socket reads and unmapped after the answer
 * (bench/RESULTS.md, "Push bodies and their admission from pools").
 */
#define WEB_BODY_POOL_BYTES ((size_t)32 << 20)
#define WEB_BODY_POOL_MIN_BLOCK ((size_t)128 << 10)
#define WEB_BODY_POOL_MAX_BLOCK ((size_t)8 << 20)

/*
 * Blocks of a size that no request of a pool took or gave back for this
 * long are freed at the pool's next give-back (blockpool_set_idle), or by
 * the server's sweep every WEB_POOL_SWEEP_NS when no request comes: one
 * query over a month of stacks filled the query pool from 27 to 95 MiB,
 * which then stayed resident though no later query needed it
 * (bench/RESULTS.md, "The month with the pools").
 */
#define WEB_POOL_IDLE_NS (30 * 1000000000LL)
#define WEB_POOL_SWEEP_NS (10 * 1000000000LL)

/*
 * Bytes an ingest request may hold per byte its profiles decode to: the
 * worst case measured (issue 15: 30 MiB of empty pprof strings peaked at
 * 1.4 GB, 47x).  A profile inside a push or multipart body may inflate to
 * at most WEB_CONTAINER_INFLATE times the body.
 */
#define WEB_INGEST_AMPLIFICATION 48
#define WEB_CONTAINER_INFLATE 16

/* A request as the handlers see it. */
struct web__req {
	struct web_server *srv;
	const char *method;
	const char *path;
	const char *query;            /* may be NULL */
	const char *content_type;     /* may be NULL */
	const char *tenant;           /* validated; the one the request acts for */
	const struct web__principal *who; /* who asks (an open server's stand-in
				       * has every scope for every tenant) */
	struct buf body;              /* read and, if Content-Encoding said so, inflated */
	struct ingest_limits lim;     /* the server's, with the inflate limit this
				       * request's memory reservation allows */
	struct query_limits qlim;     /* the server's, with the tenant's max_query_bytes */
	/* Streaming handlers (uploads) read the body themselves through
	 * web__req_read() and say here what they left on the connection. */
	struct mg_connection *conn;
	int body_state;               /* enum web__body_state */
};

enum web__body_state { WEB_BODY_DEFAULT, WEB_BODY_CONSUMED, WEB_BODY_UNREAD };

/* Reads up to len body bytes: >0 read, 0 at the end, <0 failure or timeout. */
int web__req_read(struct web__req *rq, void *buf, size_t len);
/* A request header (borrowed), or NULL. */
const char *web__req_header(struct web__req *rq, const char *name);
/* The declared Content-Length, -1 when chunked or absent. */
long long web__req_content_length(struct web__req *rq);
/* The client's address (borrowed, valid during the request), for logs. */
const char *web__req_remote(struct web__req *rq);

/* ---- routes_debuginfo.c: uploads, debuginfod protocol, symbolization ---- */

struct web__resp;

/* /api/v1/debuginfo[/<id>], /buildid/<id>/<kind>, /api/v1/symbolization. */
void web__handle_debuginfo(struct web__req *rq, struct web__resp *rs);
struct debuginfo;
/* routes_perfmap.c: POST /api/v1/perfmap/<pid>, a JIT runtime's perf map. */
void web__handle_perfmap(struct web__req *rq, struct debuginfo *svc, struct web__resp *rs);
/* Appends the debug-info service's metrics to a /metrics response. */
void web__debuginfo_metrics(struct web__req *rq, struct web__resp *rs);
/* Appends a Prometheus label value: backslash, double quote and newline escaped. */
void web__prom_label_value(struct buf *b, const char *s);
/* Points srv->opt.limits at srv->ingest_hooks, which tell the symbolizer
 * (when there is one) what ingest stored without names. */
void web__debuginfo_ingest_hooks(struct web_server *srv);

struct debuginfo_record;
struct debuginfo_stats;

/* The JSON object of one build ID in GET /api/v1/debuginfo[/<id>]. */
int web__debuginfo_record_json(struct buf *out, const struct debuginfo_record *r);
/*
 * The Prometheus text of the debug-info service: `st`, and the build IDs
 * the store knows by status (by_status[DEBUGINFO_STATUS_COUNT]).
 */
int web__debuginfo_metrics_text(struct buf *out, const struct debuginfo_stats *st,
				const uint64_t *by_status);

/* A response built by a handler; server.c sends it. */
struct web__resp {
	int status;
	const char *content_type;     /* static */
	struct buf body;
	enum web__reason reason;      /* why a 4xx/5xx was sent */
	const char *extra_headers;    /* static, `hdr`, or NULL: "Name: value\r\n" lines */
	char hdr[64];                 /* a computed header, e.g. Retry-After */
	const char *cache_control;    /* NULL means "no-store" */
	char *file;                   /* owned or NULL: send this file as the body */
};

/* Handlers: fill resp (status and body); they never touch the socket. */
void web__handle_ingest(struct web__req *rq, enum web__endpoint ep, struct web__resp *rs);
void web__handle_push(struct web__req *rq, struct web__resp *rs);
/* OTLP/HTTP POST /v1development/profiles (routes_ingest.c). */
void web__handle_otlp(struct web__req *rq, struct web__resp *rs);
/* An OTLP/HTTP error: google.rpc.Status in protobuf, or in JSON when `json`. */
void web__resp_otlp_error(struct web__resp *rs, int code, const char *message, int json);
void web__handle_stats(struct web__req *rq, struct web__resp *rs);
void web__handle_metrics(struct web__req *rq, struct web__resp *rs);
void web__handle_backup(struct web__req *rq, struct web__resp *rs);
/* POST STORE_HEAD_BLOCK_PATH: an ingester's head for a querier (routes_internal.c). */
void web__handle_head_block(struct web__req *rq, struct web__resp *rs);
void web__handle_index(struct web__req *rq, struct web__resp *rs); /* phase-1 page, unrouted */

/* ---- routes_query.c: the read API over query/query.h ------------------- */

enum web__query_route {
	WEB_Q_RENDER,       /* GET /pyroscope/render */
	WEB_Q_RENDER_DIFF,  /* GET /pyroscope/render-diff */
	WEB_Q_PPROF,        /* GET /api/v1/pprof */
	WEB_Q_TOP,          /* GET /api/v1/top */
	WEB_Q_FOLDED,       /* GET /api/v1/folded */
	WEB_Q_DIFF_TOP,     /* GET /api/v1/diff-top */
	WEB_Q_LABELS,       /* GET /pyroscope/labels */
	WEB_Q_LABEL_VALUES, /* GET /pyroscope/label-values */
};

/* Largest query-string parameter a query route reads (selectors are 4 KiB). */
#define WEB_PARAM_MAX 8192

/*
 * Reads query parameter `key` into out (len bytes with the NUL):
 * ERR_NOT_FOUND as is, other failures with a message naming the parameter.
 */
int web__param(const struct web__req *rq, const char *key, char *out, size_t len,
	       struct err_msg *msg);
/* A time parameter (base/timeparse.h), `dflt` when absent or empty. */
int web__param_time(const struct web__req *rq, const char *key, const char *dflt, int64_t now,
		    int64_t *out, struct err_msg *msg);

/* GET /api/v1/releases and /api/v1/regressions (routes_regress.c); admitted as queries. */
void web__handle_releases(struct web__req *rq, struct web__resp *rs);
void web__handle_regressions(struct web__req *rq, struct web__resp *rs);

/*
 * Handles a GET query route.  Sets resp->extra_headers for downloads.  The
 * caller has admitted the query (web__query_admit).
 */
void web__handle_query(struct web__req *rq, enum web__query_route r, struct web__resp *rs);

/*
 * POST /symbolz: `go tool pprof URL` asks here for names of addresses that
 * have none; the exported pprof already carries every name the server has,
 * so the answer is an empty symbol list (pprof then keeps the addresses).
 */
void web__handle_symbolz(struct web__req *rq, struct web__resp *rs);

/* POST /querier.v1.QuerierService/<method>: Connect JSON through query_connect. */
void web__handle_connect(struct web__req *rq, const char *method, struct web__resp *rs);
/* debuginfo.v1alpha1.DebuginfoService/<method> over Connect (routes_debuginfo.c). */
void web__handle_debuginfo_connect(struct web__req *rq, const char *method, struct web__resp *rs);
/* settings.v1.SettingsService/<method> (routes_settings.c). */
void web__handle_settings(struct web__req *rq, const char *method, struct web__resp *rs);

/*
 * Takes a query slot of `tenant` and of the server: 0 with *ts, or
 * ERR_RATE_LIMITED (429 with Retry-After in rs) when the tenant runs its
 * max_queries, so one tenant's heavy queries leave the others their slots,
 * or ERR_UNAVAILABLE when the server's max_queries are running, so a burst
 * of slow queries leaves workers for ingest.  Pair with web__query_done().
 */
int web__query_admit(struct web_server *srv, const char *tenant, struct web__resp *rs,
		     struct web__tenant_state **ts, struct err_msg *msg);
void web__query_done(struct web_server *srv, struct web__tenant_state *ts);

/* ---- static.c: the browser UI embedded at build time ------------------- */

/* One file of web/ui, generated into the build tree by web/ui_embed.cmake. */
struct web__asset {
	const char *name;           /* "index.html", "app.js" */
	const unsigned char *data;
	size_t len;
};
extern const struct web__asset web__assets[];
extern const size_t web__n_assets;

/* The asset for a request path ("/" is index.html), or NULL. */
const struct web__asset *web__asset_find(const char *path);

/* The Content-Type of an asset name by extension (static string). */
const char *web__asset_type(const char *name);

/* GET / and GET /<file>: an embedded UI file, or 404. */
void web__handle_static(struct web__req *rq, struct web__resp *rs);

/*
 * Sets a plain-text error response "message\n" with the status and reason
 * of `code`; an empty message is replaced by err_str(code).
 */
void web__resp_text_error(struct web__resp *rs, int code, const char *message);

/* Adds "Retry-After: <seconds>" to the response's headers (rs->hdr). */
void web__resp_retry_after(struct web__resp *rs, int seconds);

/*
 * Charges `declared` bytes (a chunked body: 0, charged once read) of a
 * debug-info or perf-map upload to the tenant's debug-info bytes per hour
 * (limits.c); on refusal sets the error response (with Retry-After for a
 * rate) and returns the code.
 */
int web__debuginfo_bytes_admit(struct web__req *rq, struct web__resp *rs, long long declared);

/* Sets a Connect JSON error response for `code`. */
void web__resp_connect_error(struct web__resp *rs, int code, const char *message);

/*
 * The codec of a Connect unary request from its Content-Type: 0 JSON
 * (application/json), 1 binary protobuf (application/proto, /protobuf,
 * /x-protobuf).  Otherwise answers 415 in Connect's error form, the
 * message prefixed by `service`, and returns -1.
 */
int web__connect_codec(const struct web__req *rq, const char *service, struct web__resp *rs);

/* A unary method of a Connect service served in web/: its name, its request. */
struct web__connect_method {
	const char *name;
	const struct ProtobufCMessageDescriptor *req;
};

/*
 * The index of `method` in methods[0..n).  Otherwise answers 404 in
 * Connect's error form ("SERVICE has no method ...", `service` the full
 * name) and returns n.
 */
size_t web__connect_find(const struct web__connect_method *methods, size_t n,
			 const char *service, const char *method, struct web__resp *rs);

/*
 * Ends a Connect unary call whose answer is in rs->body: 200 with the
 * codec's Content-Type, or for rc != 0 Connect's JSON error with msg's
 * text, "<service>: <err_str(rc)>" when msg is empty.
 */
void web__connect_finish(struct web__resp *rs, int rc, int proto, const char *service,
			 const struct err_msg *msg);

struct arena;
struct ProtobufCMessage;

/*
 * A Connect service whose methods are all unary calls answered by call():
 * the request decoded from either codec, the answer encoded back (with
 * default values, PBJSON_EMIT_DEFAULTS), both in an arena of arena_bytes.
 */
struct web__connect_service {
	const char *name;      /* full name: "settings.v1.SettingsService" */
	const char *package;   /* what errors are prefixed with: "settings.v1" */
	const struct web__connect_method *methods;
	size_t n_methods;
	size_t arena_bytes;
	const char *unavailable; /* when set, a NULL ctx is answered 503 with this */
	/* Answers methods[m]'s `req` (borrowed) into *resp, from `a`; 0 or a code. */
	int (*call)(struct web__req *rq, void *ctx, size_t m, const struct ProtobufCMessage *req,
		    struct arena *a, struct ProtobufCMessage **resp, struct err_msg *msg);
};

/*
 * Serves `method` of `svc` (borrowed) with `ctx` (borrowed, given to
 * call()): 404 for a method it lacks, 415 for a codec it lacks, then the
 * call's answer or error (web__connect_finish).
 */
void web__connect_serve(struct web__req *rq, const struct web__connect_service *svc, void *ctx,
			const char *method, struct web__resp *rs);

/* Counts a finished ingest request and, for a 4xx/5xx, its reason. */
void web__count(struct web_server *srv, enum web__endpoint ep, const struct web__resp *rs);

/* The rejection reason of an ERR_* code. */
enum web__reason web__reason_of_err(int code);

#endif
