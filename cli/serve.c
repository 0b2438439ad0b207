/*
 * serve.c - `unhex serve`: open the store, optionally preload a workload
 * directory, run the HTTP server until SIGINT or SIGTERM, shut down cleanly;
 * SIGHUP reads the token file again.
 *
 * Signals are blocked before any thread starts, so civetweb's threads
 * inherit the mask and only the main thread receives them, in sigwait().
 */
#include <dirent.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/gate.h"
#include "base/log.h"
#include "cli.h"
#include "debuginfo/debuginfo.h"
#include "ingest/ingest.h"
#include "objstore/objstore.h"
#include "query/query.h"
#include "query/regress.h"
#include "storage/storage.h"
#include "web/web.h"

#define MANIFEST_LINE_MAX 65536

static void serve_help(FILE *f)
{
	fputs("usage: unhex serve [options]\n"
	      "\n"
	      "Runs the HTTP server until SIGINT or SIGTERM.\n"
	      "\n"
	      "  --data DIR                  store directory (default ./data)\n"
	      "  --listen HOST:PORT          listen address (default 127.0.0.1:4040; port 0 picks\n"
	      "                              one; 0.0.0.0:4040 for every interface)\n"
	      "  --limits-file FILE          per-tenant limits: ingest rates, series, label\n"
	      "                              names and values, queries, query bytes,\n"
	      "                              debug-info bytes, the number of tenants\n"
	      "                              (docs/limits.md); default: the defaults there\n"
	      "  --auth.tokens FILE          who may do what: one hashed token per line\n"
	      "                              (docs/security.md; `unhex token` writes lines);\n"
	      "                              SIGHUP reads it again\n"
	      "  --auth.disabled             no token file on purpose: serve anyone, also on a\n"
	      "                              listen address other than loopback\n"
	      "  --tls.cert FILE             PEM certificate (chain): serve HTTPS only, TLS 1.2+\n"
	      "  --tls.key FILE              PEM private key of --tls.cert\n"
	      "  --preload DIR               ingest DIR/manifest.tsv into tenant anonymous when the\n"
	      "                              store is empty\n"
	      "  --preload-debuginfo DIR     store every DIR/<build-id>.debug as if uploaded\n"
	      "  --threads N                 worker threads (default 16); queries may use all\n"
	      "                              but a quarter of them (at least 2 kept for ingest)\n"
	      "  --ingest-concurrency N      ingest requests decoding and writing at once, 1 to\n"
	      "                              1024 (default: the CPUs unhex may use); others\n"
	      "                              wait their turn, bodies read\n"
	      "  --max-connections N         connections served at once (default 512; at least\n"
	      "                              --threads)\n"
	      "  --max-client-connections N  of those, from one client address (default 64);\n"
	      "                              more are closed at once\n"
	      "  --header-timeout T          all headers of a request within T, and no read or\n"
	      "                              write stalled longer (default 10s)\n"
	      "  --body-timeout T            a whole request body within T plus a second per MiB\n"
	      "                              (default 60s; 408 past it)\n"
	      "  --idle-timeout T            close a kept-alive connection idle for T (default 5s)\n"
	      "  --log-requests              one logfmt line per request on stderr (tenant,\n"
	      "                              route, status, bytes, duration)\n"
	      "  --shutdown-timeout T        on SIGTERM, wait at most T for running requests\n"
	      "                              (default 30s), then exit with status 1\n"
	      "  --max-inflight-bytes N      memory all requests may hold at once (default 4G):\n"
	      "                              past it 503 with Retry-After\n"
	      "  --malloc-mmap-threshold N   glibc maps allocations of N bytes or more on their\n"
	      "                              own (default 128K, 4K to 32M), or \"dynamic\":\n"
	      "                              glibc's own, rising threshold\n"
	      "  --malloc-trim-threshold N   free memory glibc keeps at the top of each of its\n"
	      "                              heaps (default 4M, 128K to 64M; with a fixed\n"
	      "                              --malloc-mmap-threshold only)\n"
	      "  --query-timeout T           deadline of one query: 30s (default), 500ms, 2m\n"
	      "  --query-max-bytes N         memory budget of one query (default 1G)\n"
	      "  --max-request-bytes N       largest request body (K, M, G suffixes)\n"
	      "  --max-decompressed-bytes N  largest pprof after gunzip\n"
	      "  --max-samples N             samples in one pprof\n"
	      "  --max-stack-depth N         locations in one sample\n"
	      "  --max-labels N              labels of one series\n"
	      "  --sync-writes               fsync the WAL at every commit\n"
	      "  --debuginfod-urls URLS      upstream debuginfod servers (http, https),\n"
	      "                              space-separated (default: $DEBUGINFOD_URLS; \"\"\n"
	      "                              for none)\n"
	      "  --debuginfod-headers-file F HTTP headers for those upstreams, one\n"
	      "                              \"Name: value\" a line (credentials; never\n"
	      "                              taken from $DEBUGINFOD_HEADERS_FILE)\n"
	      "  --debuginfod-fetches-per-minute N  upstream lookups started per minute at\n"
	      "                              most (default 60)\n"
	      "  --debuginfod-fetches-per-tenant-minute N  of those, started by one\n"
	      "                              tenant's queries (default 20)\n"
	      "  --symbolize-budget T        how long a query waits for symbolization (5s)\n"
	      "  --symbolize-memo-bytes N    memory for resolved frames kept across queries\n"
	      "                              (default 64M)\n"
	      "  --max-debuginfo-bytes N     largest debug file upload (default 2G)\n"
	      "  --release-labels L,L        labels that name a release, first found wins\n"
	      "                              (default " RELEASE_DEFAULT_LABELS ")\n"
	      "  --retention T               delete profiles older than T (30d, 12h; default: keep\n"
	      "                              everything), a whole block at a time\n"
	      "  --retention-tenant TENANT=T this tenant's own retention (repeatable; 0 keeps all)\n"
	      "  --block-range T             time range of a sealed block (default 1h); blocks are\n"
	      "                              compacted into 6 and 24 of them\n"
	      "  --seal-delay T              how long after a range ends late profiles may come\n"
	      "                              before it is sealed (default a quarter of the range)\n"
	      "  --maintain-interval T       how often to seal, compact and expire (default 1m)\n"
	      "  --symbol-cache-bytes N      decoded block indexes and symbols kept (default 128M)\n"
	      "  --page-cache-bytes N        decoded sample pages of blocks and head chunks kept\n"
	      "                              (default 64M)\n"
	      "  --debuginfo-retention T     delete debug info no retained profile uses once its\n"
	      "                              last use is older than T (default: keep forever)\n"
	      "  --perfmap-retention T       delete a JIT perf map not uploaded again for T\n"
	      "                              (default 7d)\n"
	      "  --perfmap-max N             perf maps kept per tenant; past it the least\n"
	      "                              recently uploaded goes (default 1000; the limits\n"
	      "                              file's max_perfmaps per tenant)\n"
	      "  --push-id-window T          a pushed profile ID is remembered this long, so a\n"
	      "                              retried push is not stored twice (default 10m)\n"
	      "  --push-id-max N             IDs remembered per window at most (default 524288)\n"
	      "  --storage.backend B         local (default) or s3: sealed and compacted blocks\n"
	      "                              are also uploaded to a bucket (docs/object-storage.md)\n"
	      "  --storage.s3.endpoint URL   http(s)://host[:port] of the S3 API\n"
	      "  --storage.s3.bucket NAME    the bucket (it must exist)\n"
	      "  --storage.s3.region R       SigV4 region (default us-east-1)\n"
	      "  --storage.s3.path-style     URLs endpoint/bucket/key, not bucket.endpoint/key\n"
	      "  --storage.s3.cache-size N   local copies of blocks read from the bucket (blocks\n"
	      "                              whose file is missing) take at most N (default 1G)\n"
	      "                              (credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
	      "                              AWS_SESSION_TOKEN, else ~/.aws/credentials)\n"
	      "  --target R                  all (default: one process does everything), or one\n"
	      "                              role of a deployment sharing a bucket: ingester\n"
	      "                              (ingests, seals, uploads), querier (answers queries\n"
	      "                              from the bucket index), compactor (compacts, expires,\n"
	      "                              writes the index, deletes replaced blocks); roles\n"
	      "                              need --storage.backend s3 (docs/object-storage.md)\n"
	      "  --storage.s3.sync-interval T  how often ingesters and queriers read the bucket\n"
	      "                              index (default 15s)\n"
	      "  --storage.s3.delete-delay T how long a block the index marks stays in the\n"
	      "                              bucket before the compactor deletes it (default 10m;\n"
	      "                              longer than the queriers' sync interval)\n"
	      "  --querier.ingesters URL[,URL...]  a querier asks these ingesters, at every\n"
	      "                              query, for what the bucket does not hold yet (their\n"
	      "                              heads and blocks not in the index): fresh within\n"
	      "                              seconds (docs/object-storage.md \"Freshness\")\n"
	      "  --querier.ingester-timeout T  all of them, per query (default 10s); a late or\n"
	      "                              failed ingester is a warning of the answer\n"
	      "  --querier.ingester-token-file F  the token sent to them (query scope, every\n"
	      "                              tenant); else $UNHEX_INGESTER_TOKEN\n"
	      "  --head-block-max-bytes N    largest such answer an ingester sends and a querier\n"
	      "                              takes (default 256M)\n"
	      "  --log-level L               error, warn, info (default) or debug\n",
	      f);
}

static int count_tenant(void *ctx, const char *tenant)
{
	(void)tenant;
	++*(size_t *)ctx;
	return 0;
}

/* Ingests one manifest line "<path>\t<name>\t<unix seconds>". */
static int preload_line(struct store *st, const struct ingest_limits *lim, const char *dir,
			char *line, struct ingest_stats *total, struct err_msg *msg)
{
	char *name, *when, *path;
	uint64_t secs;
	struct ingest_stats one = { 0 };
	struct buf file;
	int rc;

	name = strchr(line, '\t');
	when = name ? strchr(name + 1, '\t') : NULL;
	if (!when)
		return err_set(msg, ERR_INVALID, "expected <path> TAB <name> TAB <unix seconds>");
	*name++ = '\0';
	*when++ = '\0';
	if (cli_parse_u64(when, &secs) || secs > INT64_MAX / 1000000000)
		return err_set(msg, ERR_INVALID, "bad time \"%s\"", when);
	if (asprintf(&path, "%s/%s", dir, line) < 0)
		return err_set(msg, ERR_NOMEM, "out of memory");
	buf_init(&file, lim->max_request_bytes);
	rc = cli_read_file(path, &file, msg);
	if (!rc)
		rc = ingest_legacy(st, lim, WEB_DEFAULT_TENANT, name, (int64_t)secs * 1000000000,
				   (int64_t)secs * 1000000000, file.data, file.len, &one, msg);
	if (!rc) {
		total->profiles += one.profiles;
		total->samples += one.samples;
	}
	buf_release(&file);
	free(path);
	return rc;
}

static int preload(struct store *st, const struct ingest_limits *lim, const char *dir)
{
	struct ingest_stats total = { 0 };
	size_t tenants = 0, files = 0, failed = 0, lineno = 0, cap = 0;
	char *line = NULL, *manifest = NULL;
	int64_t t0 = clock_mono_ns();
	ssize_t n;
	FILE *f;

	store_tenants(st, count_tenant, &tenants);
	if (tenants > 0) {
		log_info("preload: the store already holds data; skipping %s", dir);
		return 0;
	}
	if (asprintf(&manifest, "%s/manifest.tsv", dir) < 0)
		return ERR_NOMEM;
	f = fopen(manifest, "r");
	if (!f) {
		log_error("preload: cannot open %s", manifest);
		free(manifest);
		return ERR_IO;
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		struct err_msg msg;

		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		err_clear(&msg);
		files++;
		if (n > MANIFEST_LINE_MAX)
			err_set(&msg, ERR_INVALID, "line longer than %d bytes", MANIFEST_LINE_MAX);
		else if (preload_line(st, lim, dir, line, &total, &msg) == 0)
			continue;
		failed++;
		log_warn("preload: %s:%zu: %s", manifest, lineno, msg.text);
	}
	free(line);
	fclose(f);
	log_info("preload: %zu files from %s: %llu profiles, %llu samples in %.2f s (%zu failed)",
		 files - failed, dir, (unsigned long long)total.profiles,
		 (unsigned long long)total.samples, (double)(clock_mono_ns() - t0) / 1e9, failed);
	free(manifest);
	return 0;
}

/* The URL a user can open for a listen address, e.g. 0.0.0.0:4040 -> 127.0.0.1. */
static void reachable_url(const char *listen, int port, int tls, char *out, size_t len, int *all)
{
	const char *scheme = tls ? "https" : "http";
	const char *colon = strrchr(listen, ':');
	size_t hlen = colon ? (size_t)(colon - listen) : 0;
	char host[256];

	if (hlen >= sizeof(host))
		hlen = 0;
	memcpy(host, listen, hlen);
	host[hlen] = '\0';
	*all = hlen == 0 || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0;
	if (*all)
		snprintf(out, len, "%s://%s:%d", scheme,
			 strcmp(host, "[::]") == 0 ? "[::1]" : "127.0.0.1", port);
	else
		snprintf(out, len, "%s://%s:%d", scheme, host, port);
}

static int parse_level(const char *s, enum log_level *out)
{
	static const char *names[] = { "error", "warn", "info", "debug" };

	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return ERR_INVALID;
}

enum { O_DATA = 256, O_LISTEN, O_PRELOAD, O_THREADS, O_MAX_REQ, O_MAX_DEC, O_MAX_SAMPLES,
       O_MAX_DEPTH, O_MAX_LABELS, O_SYNC, O_LOG, O_HELP, O_QTIMEOUT, O_QBYTES,
       O_DEBUGINFOD, O_DEBUGINFOD_HEADERS, O_SYM_BUDGET, O_MAX_DEBUGINFO, O_UPLOAD_TOKEN, O_PRELOAD_DEBUG,
       O_SYM_MEMO, O_AUTH_TOKENS, O_AUTH_DISABLED, O_TLS_CERT, O_TLS_KEY, O_FETCH_RATE,
       O_TENANT_FETCH_RATE, O_RELEASE_LABELS, O_RETENTION, O_RETENTION_TENANT,
       O_BLOCK_RANGE, O_SEAL_DELAY, O_MAINTAIN, O_SYMCACHE, O_PAGECACHE, O_DEBUGINFO_RETENTION,
       O_MAX_CONNS, O_MAX_CLIENT_CONNS, O_HEADER_TIMEOUT, O_BODY_TIMEOUT, O_IDLE_TIMEOUT,
       O_MAX_INFLIGHT, O_SHUTDOWN, O_LOG_REQUESTS, O_LIMITS_FILE,
       O_PUSH_ID_WINDOW, O_PUSH_ID_MAX, O_PERFMAP_RETENTION, O_PERFMAP_MAX, O_BACKEND,
       O_S3_ENDPOINT, O_S3_BUCKET, O_S3_REGION, O_S3_PATH_STYLE, O_S3_CACHE, O_TARGET,
       O_S3_SYNC, O_S3_DELETE_DELAY, O_PEERS, O_PEER_TIMEOUT, O_PEER_TOKEN_FILE,
       O_HEAD_BLOCK_MAX, O_MMAP_THRESHOLD, O_TRIM_THRESHOLD, O_INGEST_CONCURRENCY };

#define MAX_RETENTION_TENANTS 1024
#define DEFAULT_SYNC_NS (15LL * 1000000000)

/* --target: which part of a scale-out deployment this process is. */
enum target { T_ALL, T_INGESTER, T_QUERIER, T_COMPACTOR };
static const char *const target_names[] = { "all", "ingester", "querier", "compactor" };
/* What each does with the bucket index (storage.h). */
static const unsigned target_modes[] = {
	STORE_BUCKET_INDEX,
	STORE_BUCKET_PRUNE | STORE_NO_COMPACT,
	STORE_BUCKET_DISCOVER | STORE_NO_COMPACT,
	STORE_BUCKET_INDEX | STORE_BUCKET_DISCOVER,
};
#define DEFAULT_MAINTAIN_NS (60LL * 1000000000)

static const struct option serve_opts[] = {
	{ "data", required_argument, NULL, O_DATA },
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "preload", required_argument, NULL, O_PRELOAD },
	{ "preload-debuginfo", required_argument, NULL, O_PRELOAD_DEBUG },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "ingest-concurrency", required_argument, NULL, O_INGEST_CONCURRENCY },
	{ "max-request-bytes", required_argument, NULL, O_MAX_REQ },
	{ "max-decompressed-bytes", required_argument, NULL, O_MAX_DEC },
	{ "max-samples", required_argument, NULL, O_MAX_SAMPLES },
	{ "max-stack-depth", required_argument, NULL, O_MAX_DEPTH },
	{ "max-labels", required_argument, NULL, O_MAX_LABELS },
	{ "sync-writes", no_argument, NULL, O_SYNC },
	{ "log-level", required_argument, NULL, O_LOG },
	{ "query-timeout", required_argument, NULL, O_QTIMEOUT },
	{ "query-max-bytes", required_argument, NULL, O_QBYTES },
	{ "debuginfod-urls", required_argument, NULL, O_DEBUGINFOD },
	{ "debuginfod-headers-file", required_argument, NULL, O_DEBUGINFOD_HEADERS },
	{ "symbolize-budget", required_argument, NULL, O_SYM_BUDGET },
	{ "max-debuginfo-bytes", required_argument, NULL, O_MAX_DEBUGINFO },
	{ "symbolize-memo-bytes", required_argument, NULL, O_SYM_MEMO },
	{ "upload-token", required_argument, NULL, O_UPLOAD_TOKEN },
	{ "auth.tokens", required_argument, NULL, O_AUTH_TOKENS },
	{ "limits-file", required_argument, NULL, O_LIMITS_FILE },
	{ "auth.disabled", no_argument, NULL, O_AUTH_DISABLED },
	{ "tls.cert", required_argument, NULL, O_TLS_CERT },
	{ "tls.key", required_argument, NULL, O_TLS_KEY },
	{ "debuginfod-fetches-per-minute", required_argument, NULL, O_FETCH_RATE },
	{ "debuginfod-fetches-per-tenant-minute", required_argument, NULL, O_TENANT_FETCH_RATE },
	{ "release-labels", required_argument, NULL, O_RELEASE_LABELS },
	{ "retention", required_argument, NULL, O_RETENTION },
	{ "retention-tenant", required_argument, NULL, O_RETENTION_TENANT },
	{ "block-range", required_argument, NULL, O_BLOCK_RANGE },
	{ "seal-delay", required_argument, NULL, O_SEAL_DELAY },
	{ "maintain-interval", required_argument, NULL, O_MAINTAIN },
	{ "symbol-cache-bytes", required_argument, NULL, O_SYMCACHE },
	{ "page-cache-bytes", required_argument, NULL, O_PAGECACHE },
	{ "debuginfo-retention", required_argument, NULL, O_DEBUGINFO_RETENTION },
	{ "max-connections", required_argument, NULL, O_MAX_CONNS },
	{ "max-client-connections", required_argument, NULL, O_MAX_CLIENT_CONNS },
	{ "header-timeout", required_argument, NULL, O_HEADER_TIMEOUT },
	{ "body-timeout", required_argument, NULL, O_BODY_TIMEOUT },
	{ "idle-timeout", required_argument, NULL, O_IDLE_TIMEOUT },
	{ "max-inflight-bytes", required_argument, NULL, O_MAX_INFLIGHT },
	{ "malloc-mmap-threshold", required_argument, NULL, O_MMAP_THRESHOLD },
	{ "malloc-trim-threshold", required_argument, NULL, O_TRIM_THRESHOLD },
	{ "shutdown-timeout", required_argument, NULL, O_SHUTDOWN },
	{ "log-requests", no_argument, NULL, O_LOG_REQUESTS },
	{ "push-id-window", required_argument, NULL, O_PUSH_ID_WINDOW },
	{ "push-id-max", required_argument, NULL, O_PUSH_ID_MAX },
	{ "perfmap-retention", required_argument, NULL, O_PERFMAP_RETENTION },
	{ "perfmap-max", required_argument, NULL, O_PERFMAP_MAX },
	{ "storage.backend", required_argument, NULL, O_BACKEND },
	{ "storage.s3.endpoint", required_argument, NULL, O_S3_ENDPOINT },
	{ "storage.s3.bucket", required_argument, NULL, O_S3_BUCKET },
	{ "storage.s3.region", required_argument, NULL, O_S3_REGION },
	{ "storage.s3.path-style", no_argument, NULL, O_S3_PATH_STYLE },
	{ "storage.s3.cache-size", required_argument, NULL, O_S3_CACHE },
	{ "storage.s3.sync-interval", required_argument, NULL, O_S3_SYNC },
	{ "storage.s3.delete-delay", required_argument, NULL, O_S3_DELETE_DELAY },
	{ "target", required_argument, NULL, O_TARGET },
	{ "querier.ingesters", required_argument, NULL, O_PEERS },
	{ "querier.ingester-timeout", required_argument, NULL, O_PEER_TIMEOUT },
	{ "querier.ingester-token-file", required_argument, NULL, O_PEER_TOKEN_FILE },
	{ "head-block-max-bytes", required_argument, NULL, O_HEAD_BLOCK_MAX },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

struct serve_args {
	const char *data;
	const char *preload;
	const char *preload_debuginfo;
	int sync_writes;
	size_t memo_bytes;
	struct web_options web;
	struct debuginfo_options sym;
	int64_t retention_ns, block_range_ns, seal_delay_ns, maintain_ns, shutdown_ns;
	int64_t push_id_window_ns;
	uint64_t push_id_max;
	size_t symbol_cache_bytes;
	size_t page_cache_bytes;
	struct store_retention tenant_retention[MAX_RETENTION_TENANTS];
	size_t n_tenant_retention;
	int s3;                          /* --storage.backend s3 */
	struct objstore_s3_config s3cfg; /* strings borrowed from argv */
	size_t s3_cache_bytes;           /* 0: the store's default */
	int target;                      /* enum target */
	int64_t s3_sync_ns, s3_delete_delay_ns; /* 0: the defaults */
	const char *peers;               /* --querier.ingesters, as given */
	const char *peer_token_file;
	int64_t peer_timeout_ns;         /* 0: the store's default */
	size_t head_block_max;           /* 0: the store's default */
	size_t mmap_threshold;           /* M_MMAP_THRESHOLD; 0: glibc's dynamic one */
	size_t trim_threshold;           /* M_TRIM_THRESHOLD, with a fixed mmap threshold */
};

/*
 * glibc serves an allocation of M_MMAP_THRESHOLD bytes or more with a
 * mapping of its own, returned to the system when freed.  Left dynamic, the
 * threshold rises to the size of every such block freed (up to 32 MiB), and
 * the multi-MiB buffers of sealing, compaction, decoded blocks and queries
 * then land in the heap arenas between long-lived objects, which a month of
 * ingest fragments (bench/RESULTS.md, issue 11).  Fixed, they are mapped and
 * unmapped; ingest, whose per-request blocks come from the server's block
 * pool, no longer pays for it (docs/operations.md, "Memory: the allocator").
 */
#define DEFAULT_MMAP_THRESHOLD ((size_t)128 << 10)
#define MIN_MMAP_THRESHOLD ((size_t)4 << 10)
#define MAX_MMAP_THRESHOLD ((size_t)32 << 20)

/*
 * Fixing the mmap threshold also fixes glibc's trim threshold at its
 * initial 128 KiB: a free that leaves more than that at the top of a heap
 * gives it back to the system, and the next request faults the same pages
 * in again.  A warm render of the bench shape's 300,000 samples took 350
 * page faults, 125 of them for this; at 4 MiB kept per heap they are gone
 * and the render takes 7 % less CPU (bench/RESULTS.md, "A heap that keeps
 * 4 MiB").  16 MiB saved no more.
 */
#define DEFAULT_TRIM_THRESHOLD ((size_t)4 << 20)
#define MIN_TRIM_THRESHOLD ((size_t)128 << 10)
#define MAX_TRIM_THRESHOLD ((size_t)64 << 20)

/* Parses "30s", "500ms", "2m", "1h", "7d", "2w" or plain seconds into nanoseconds (> 0). */
static int parse_duration(const char *s, int64_t *out)
{
	static const struct {
		const char *suffix;
		int64_t ns;
	} units[] = {
		{ "", 1000000000LL },  { "s", 1000000000LL },      { "ms", 1000000LL },
		{ "m", 60000000000LL }, { "h", 3600000000000LL }, { "d", 86400000000000LL },
		{ "w", 7 * 86400000000000LL },
	};
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return ERR_INVALID;
	v = strtoull(s, &end, 10);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].suffix) == 0) {
			if (v == 0 || v > (unsigned long long)(INT64_MAX / units[i].ns))
				return ERR_INVALID;
			*out = (int64_t)v * units[i].ns;
			return 0;
		}
	return ERR_INVALID;
}

static int parse_serve(int argc, char **argv, struct serve_args *a)
{
	int c, idx = 0;

	a->data = "./data";
	a->shutdown_ns = 30LL * 1000000000;
	a->mmap_threshold = DEFAULT_MMAP_THRESHOLD;
	a->trim_threshold = DEFAULT_TRIM_THRESHOLD;
	web_options_default(&a->web);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", serve_opts, &idx)) != -1) {
		size_t v = 0;
		enum log_level lvl;

		switch (c) {
		case O_DATA: a->data = optarg; break;
		case O_LISTEN: a->web.listen = optarg; break;
		case O_PRELOAD: a->preload = optarg; break;
		case O_PRELOAD_DEBUG: a->preload_debuginfo = optarg; break;
		case O_SYNC: a->sync_writes = 1; break;
		case O_DEBUGINFOD: a->sym.debuginfod_urls = optarg; break;
		case O_DEBUGINFOD_HEADERS: a->sym.debuginfod_headers_file = optarg; break;
		case O_UPLOAD_TOKEN:
			/* A secret on the command line is readable by every user in
			 * ps and /proc: the option is gone, and says what replaces it. */
			return cli_usage_error("serve", "--upload-token was removed: a token on the "
						"command line is visible to every user (ps). Put a "
						"hashed line in a token file instead:\n"
						"  printf %%s \"$TOKEN\" | unhex token hash --tenant '*' "
						"--scopes upload --name ci >> tokens\n"
						"  unhex serve --auth.tokens tokens ...\n"
						"Clients keep sending \"Authorization: Bearer $TOKEN\" "
						"(docs/security.md, \"Migrating from --upload-token\")");
		case O_AUTH_TOKENS: a->web.auth_tokens = optarg; break;
		case O_LIMITS_FILE: a->web.limits_file = optarg; break;
		case O_AUTH_DISABLED: a->web.auth_disabled = 1; break;
		case O_TLS_CERT: a->web.tls_cert = optarg; break;
		case O_TLS_KEY: a->web.tls_key = optarg; break;
		case O_RELEASE_LABELS: {
			struct release_labels rl;
			struct err_msg msg;

			err_clear(&msg);
			if (query_release_labels_parse(optarg, &rl, &msg))
				return cli_usage_error("serve", "--release-labels: %s", msg.text);
			a->web.release_labels = optarg;
			break;
		}
		case O_SYM_BUDGET:
			if (parse_duration(optarg, &a->sym.budget_ns))
				return cli_usage_error("serve", "--symbolize-budget: \"%s\" is not a "
							"positive duration (5s, 500ms)", optarg);
			break;
		case O_MAX_DEBUGINFO:
			if (cli_parse_size(optarg, &v) || v == 0)
				return cli_usage_error("serve", "--max-debuginfo-bytes: \"%s\" is not "
							"a positive size", optarg);
			a->sym.max_upload_bytes = v;
			break;
		case O_QTIMEOUT:
			if (parse_duration(optarg, &a->web.query.timeout_ns))
				return cli_usage_error("serve", "--query-timeout: \"%s\" is not a "
							"positive duration (30s, 500ms, 2m)", optarg);
			break;
		case O_RETENTION:
			if (strcmp(optarg, "0") && parse_duration(optarg, &a->retention_ns))
				return cli_usage_error("serve", "--retention: \"%s\" is not a duration "
							"(30d, 12h) or 0", optarg);
			break;
		case O_RETENTION_TENANT: {
			char *eq = strrchr(optarg, '=');
			struct store_retention *r = &a->tenant_retention[a->n_tenant_retention];

			if (!eq || eq == optarg || a->n_tenant_retention >= MAX_RETENTION_TENANTS)
				return cli_usage_error("serve", "--retention-tenant: \"%s\" is not "
							"TENANT=DURATION", optarg);
			*eq = '\0';
			r->tenant = optarg;
			r->ns = 0;
			if (strcmp(eq + 1, "0") && parse_duration(eq + 1, &r->ns))
				return cli_usage_error("serve", "--retention-tenant: \"%s\" is not a "
							"duration (30d, 12h) or 0", eq + 1);
			a->n_tenant_retention++;
			break;
		}
		case O_BLOCK_RANGE: case O_SEAL_DELAY: case O_MAINTAIN: {
			int64_t *d = c == O_BLOCK_RANGE ? &a->block_range_ns
				     : c == O_SEAL_DELAY ? &a->seal_delay_ns : &a->maintain_ns;
			if (parse_duration(optarg, d))
				return cli_usage_error("serve", "--%s: \"%s\" is not a positive "
							"duration (1h, 10m)", serve_opts[idx].name, optarg);
			break;
		}
		case O_PUSH_ID_WINDOW:
			if (parse_duration(optarg, &a->push_id_window_ns))
				return cli_usage_error("serve", "--push-id-window: \"%s\" is not a "
							"positive duration (10m, 1h)", optarg);
			break;
		case O_PUSH_ID_MAX:
			if (cli_parse_u64(optarg, &a->push_id_max) || !a->push_id_max ||
			    a->push_id_max > (1u << 30))
				return cli_usage_error("serve", "--push-id-max: \"%s\" is not a number "
							"from 1 to 1073741824", optarg);
			break;
		case O_PERFMAP_RETENTION:
			if (parse_duration(optarg, &a->sym.perfmap_retention_ns) ||
			    a->sym.perfmap_retention_ns <= 0)
				return cli_usage_error("serve", "--perfmap-retention: \"%s\" is not a "
							"positive duration (7d, 12h)", optarg);
			break;
		case O_PERFMAP_MAX: {
			uint64_t v;

			if (cli_parse_u64(optarg, &v) || !v || v > (1u << 20))
				return cli_usage_error("serve", "--perfmap-max: \"%s\" is not a number "
							"from 1 to 1048576", optarg);
			a->sym.perfmap_max = (size_t)v;
			a->web.perfmap_max = (uint32_t)v;
			break;
		}
		case O_DEBUGINFO_RETENTION:
			if (strcmp(optarg, "0") && parse_duration(optarg, &a->sym.retention_ns))
				return cli_usage_error("serve", "--debuginfo-retention: \"%s\" is not a "
							"duration (30d, 12h) or 0", optarg);
			break;
		case O_SYMCACHE:
			if (cli_parse_size(optarg, &a->symbol_cache_bytes) || !a->symbol_cache_bytes)
				return cli_usage_error("serve", "--symbol-cache-bytes: \"%s\" is not a "
							"positive size", optarg);
			break;
		case O_PAGECACHE:
			if (cli_parse_size(optarg, &a->page_cache_bytes) || !a->page_cache_bytes)
				return cli_usage_error("serve", "--page-cache-bytes: \"%s\" is not a "
							"positive size", optarg);
			break;
		case O_HEADER_TIMEOUT: case O_BODY_TIMEOUT: case O_IDLE_TIMEOUT: {
			int64_t ns = 0;
			int *ms = c == O_HEADER_TIMEOUT ? &a->web.request_timeout_ms
				  : c == O_BODY_TIMEOUT ? &a->web.body_timeout_ms : &a->web.idle_timeout_ms;

			if (parse_duration(optarg, &ns) || ns < 1000000 || ns > 86400000000000LL)
				return cli_usage_error("serve", "--%s: \"%s\" is not a duration from "
							"1ms to 1d (10s, 500ms)", serve_opts[idx].name, optarg);
			*ms = (int)(ns / 1000000);
			break;
		}
		case O_LOG_REQUESTS: a->web.log_requests = 1; break;
		case O_SHUTDOWN:
			if (parse_duration(optarg, &a->shutdown_ns))
				return cli_usage_error("serve", "--shutdown-timeout: \"%s\" is not a "
							"positive duration (30s, 500ms)", optarg);
			break;
		case O_INGEST_CONCURRENCY:
			if (cli_parse_size(optarg, &v) || v == 0 || v > GATE_MAX_LIMIT)
				return cli_usage_error("serve", "--ingest-concurrency: \"%s\" is not a "
							"number from 1 to %d", optarg, GATE_MAX_LIMIT);
			a->web.ingest_concurrency = (uint32_t)v;
			break;
		case O_MAX_INFLIGHT:
			/* A cap, never "unlimited": 0 is refused like any size below 16M. */
			if (cli_parse_size(optarg, &v) || v < ((size_t)16 << 20))
				return cli_usage_error("serve", "--max-inflight-bytes: \"%s\" is not a "
							"size of at least 16M", optarg);
			a->web.max_inflight_bytes = v;
			break;
		case O_MMAP_THRESHOLD:
			if (strcmp(optarg, "dynamic") == 0) {
				a->mmap_threshold = 0;
				break;
			}
			if (cli_parse_size(optarg, &v) || v < MIN_MMAP_THRESHOLD ||
			    v > MAX_MMAP_THRESHOLD)
				return cli_usage_error("serve", "--malloc-mmap-threshold: \"%s\" is "
							"not \"dynamic\" or a size from 4K to 32M",
							optarg);
			a->mmap_threshold = v;
			break;
		case O_TRIM_THRESHOLD:
			if (cli_parse_size(optarg, &v) || v < MIN_TRIM_THRESHOLD ||
			    v > MAX_TRIM_THRESHOLD)
				return cli_usage_error("serve", "--malloc-trim-threshold: \"%s\" is "
							"not a size from 128K to 64M", optarg);
			a->trim_threshold = v;
			break;
		case O_MAX_CONNS: case O_MAX_CLIENT_CONNS:
			if (cli_parse_size(optarg, &v) || v == 0 || v > 65536)
				return cli_usage_error("serve", "--%s: \"%s\" is not a number from 1 "
							"to 65536", serve_opts[idx].name, optarg);
			if (c == O_MAX_CONNS)
				a->web.max_connections = (int)v;
			else
				a->web.max_client_connections = (int)v;
			break;
		case O_BACKEND:
			if (strcmp(optarg, "local") && strcmp(optarg, "s3"))
				return cli_usage_error("serve", "--storage.backend: \"%s\" is not local "
							"or s3", optarg);
			a->s3 = !strcmp(optarg, "s3");
			break;
		case O_S3_ENDPOINT: a->s3cfg.endpoint = optarg; break;
		case O_S3_BUCKET: a->s3cfg.bucket = optarg; break;
		case O_S3_REGION: a->s3cfg.region = optarg; break;
		case O_S3_PATH_STYLE: a->s3cfg.path_style = 1; break;
		case O_S3_CACHE:
			if (cli_parse_size(optarg, &a->s3_cache_bytes) || !a->s3_cache_bytes)
				return cli_usage_error("serve", "--storage.s3.cache-size: \"%s\" is not "
							"a size above 0", optarg);
			break;
		case O_TARGET: {
			int found = -1;
			for (int i = 0; i < 4; i++)
				if (!strcmp(optarg, target_names[i]))
					found = i;
			if (found < 0)
				return cli_usage_error("serve", "--target: \"%s\" is not all, ingester, "
							"querier or compactor", optarg);
			a->target = found;
			break;
		}
		case O_PEERS: a->peers = optarg; break;
		case O_PEER_TOKEN_FILE: a->peer_token_file = optarg; break;
		case O_PEER_TIMEOUT:
			if (parse_duration(optarg, &a->peer_timeout_ns))
				return cli_usage_error("serve", "--querier.ingester-timeout: \"%s\" is "
							"not a positive duration (10s)", optarg);
			break;
		case O_HEAD_BLOCK_MAX:
			if (cli_parse_size(optarg, &a->head_block_max) || !a->head_block_max)
				return cli_usage_error("serve", "--head-block-max-bytes: \"%s\" is not "
							"a size above 0", optarg);
			break;
		case O_S3_SYNC: case O_S3_DELETE_DELAY:
			if (parse_duration(optarg, c == O_S3_SYNC ? &a->s3_sync_ns
								   : &a->s3_delete_delay_ns))
				return cli_usage_error("serve", "--%s: \"%s\" is not a positive "
							"duration (15s, 10m)", serve_opts[idx].name, optarg);
			break;
		case O_HELP: serve_help(stdout); return -1;
		case O_LOG:
			if (parse_level(optarg, &lvl))
				return cli_usage_error("serve", "--log-level: \"%s\" is not error, "
							"warn, info or debug", optarg);
			log_set_level(lvl);
			break;
		case O_THREADS: case O_MAX_REQ: case O_MAX_DEC: case O_MAX_SAMPLES:
		case O_MAX_DEPTH: case O_MAX_LABELS: case O_QBYTES: case O_SYM_MEMO:
		case O_FETCH_RATE: case O_TENANT_FETCH_RATE:
			if (cli_parse_size(optarg, &v) || v == 0)
				return cli_usage_error("serve", "--%s: \"%s\" is not a positive number",
						       serve_opts[idx].name, optarg);
			if (c == O_THREADS)
				a->web.threads = v > 256 ? 256 : (int)v;
			else if (c == O_MAX_REQ)
				a->web.limits.max_request_bytes = v;
			else if (c == O_MAX_DEC)
				a->web.limits.max_decompressed_bytes = v;
			else if (c == O_QBYTES)
				a->web.query.max_bytes = v;
			else if (c == O_SYM_MEMO)
				a->memo_bytes = v;
			else if (c == O_FETCH_RATE)
				a->sym.fetch_per_minute = v > 100000 ? 100000 : (unsigned)v;
			else if (c == O_TENANT_FETCH_RATE)
				a->sym.fetch_per_tenant_minute = v > 100000 ? 100000 : (unsigned)v;
			else if (c == O_MAX_SAMPLES)
				a->web.limits.max_samples = v;
			else if (c == O_MAX_DEPTH)
				a->web.limits.max_stack_depth = v;
			else
				a->web.limits.max_labels = v;
			break;
		default:
			return cli_usage_error("serve", "unknown or incomplete option \"%s\"",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("serve", "unexpected argument \"%s\"", argv[optind]);
	if (!a->web.tls_cert != !a->web.tls_key)
		return cli_usage_error("serve", "--tls.cert and --tls.key go together");
	if (a->web.auth_tokens && a->web.auth_disabled)
		return cli_usage_error("serve", "--auth.tokens and --auth.disabled contradict each other");
	if (a->s3 && (!a->s3cfg.endpoint || !a->s3cfg.bucket))
		return cli_usage_error("serve", "--storage.backend s3 needs --storage.s3.endpoint and "
					"--storage.s3.bucket");
	if (!a->s3 && (a->s3cfg.endpoint || a->s3cfg.bucket || a->s3cfg.region ||
		       a->s3_cache_bytes || a->s3_sync_ns || a->s3_delete_delay_ns))
		return cli_usage_error("serve", "--storage.s3.* options need --storage.backend s3");
	if ((a->peers || a->peer_timeout_ns || a->peer_token_file) && a->target != T_QUERIER)
		return cli_usage_error("serve", "--querier.* options need --target querier");
	if (!a->s3 && a->target != T_ALL)
		return cli_usage_error("serve", "--target %s needs --storage.backend s3: the roles "
					"share their blocks through a bucket", target_names[a->target]);
	return 0;
}

/* Stores one debug file through the same validation as an HTTP upload. */
static int preload_debug_file(struct debuginfo *sym, const char *path, const char *hex,
			      struct debuginfo_upload_result *res, struct err_msg *msg)
{
	struct debuginfo_upload *u = NULL;
	struct buf file;
	int rc;

	buf_init(&file, debuginfo_max_upload(sym));
	rc = cli_read_file(path, &file, msg);
	if (!rc)
		rc = debuginfo_upload_begin(sym, &u, msg);
	if (!rc)
		rc = debuginfo_upload_write(u, file.data, file.len, msg);
	if (!rc) {
		rc = debuginfo_upload_commit(u, hex, DEBUGINFO_FILE_DEBUGINFO, res, msg);
		u = NULL; /* commit consumes the upload, also on failure */
	}
	debuginfo_upload_abort(u);
	buf_release(&file);
	return rc;
}

/*
 * Uploads every DIR/<build-id>.debug file into the debug info store, as
 * `unhex upload` would, so demo profiles get names.  Identical files already
 * stored are left as they are.
 */
static void preload_debuginfo(struct debuginfo *sym, const char *dir)
{
	size_t stored = 0, unchanged = 0, failed = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d) {
		log_error("preload-debuginfo: cannot open %s", dir);
		return;
	}
	while ((de = readdir(d))) {
		struct debuginfo_upload_result res = { 0 };
		struct err_msg msg;
		size_t len = strlen(de->d_name);
		char hex[64], *path;

		if (len < 7 || len - 6 >= sizeof(hex) || strcmp(de->d_name + len - 6, ".debug"))
			continue;
		memcpy(hex, de->d_name, len - 6);
		hex[len - 6] = '\0';
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
			break;
		err_clear(&msg);
		if (preload_debug_file(sym, path, hex, &res, &msg)) {
			log_warn("preload-debuginfo: %s: %s", path, msg.text);
			failed++;
		} else if (res.unchanged) {
			unchanged++;
		} else {
			stored++;
		}
		free(path);
	}
	closedir(d);
	log_info("preload-debuginfo: %zu stored, %zu already present, %zu refused from %s",
		 stored, unchanged, failed, dir);
}

/*
 * Fixes glibc's mmap and trim thresholds, before any thread starts; a
 * threshold set in GLIBC_TUNABLES wins.  With a dynamic mmap threshold the
 * trim threshold stays glibc's too: setting one turns off the other's
 * adjustment.
 */
static void set_malloc_thresholds(size_t mmap_v, size_t trim_v)
{
	const char *t = getenv("GLIBC_TUNABLES");

	if (mmap_v == 0)
		return;
	/* glibc takes every size in range; an allocator that replaced it (a
	 * sanitizer's, a preloaded one) may not. */
	if (!(t && strstr(t, "malloc.mmap_threshold")) && mallopt(M_MMAP_THRESHOLD, (int)mmap_v) != 1)
		log_info("--malloc-mmap-threshold %zu: the allocator does not take it (not glibc's "
			 "malloc?); left as it is", mmap_v);
	if (!(t && strstr(t, "malloc.trim_threshold")) && mallopt(M_TRIM_THRESHOLD, (int)trim_v) != 1)
		log_info("--malloc-trim-threshold %zu: the allocator does not take it (not glibc's "
			 "malloc?); left as it is", trim_v);
}

int cli_serve(int argc, char **argv)
{
	struct serve_args a = { 0 };
	struct store_options so = { 0 };
	struct store *st = NULL;
	struct web_server *srv = NULL;
	struct debuginfo *sym = NULL;
	struct query_symmemo *memo = NULL;
	struct objstore *os = NULL;
	struct err_msg msg;
	sigset_t set;
	char url[300];
	char **peers = NULL, *peer_token = NULL;
	size_t n_peers = 0;
	int rc, sig = 0, all = 0, running = 0;

	rc = parse_serve(argc, argv, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	set_malloc_thresholds(a.mmap_threshold, a.trim_threshold);

	err_clear(&msg);
	a.sym.data_dir = a.data;
	if (!a.sym.debuginfod_urls)
		a.sym.debuginfod_urls = getenv("DEBUGINFOD_URLS");
	so.dir = a.data;
	so.sync_writes = a.sync_writes;
	so.retention_ns = a.retention_ns;
	so.retention_overrides = a.tenant_retention;
	so.n_retention_overrides = a.n_tenant_retention;
	so.block_range_ns = a.block_range_ns;
	so.seal_delay_ns = a.seal_delay_ns;
	so.push_id_window_ns = a.push_id_window_ns;
	so.push_id_max = (uint32_t)a.push_id_max;
	so.symbol_cache_bytes = a.symbol_cache_bytes;
	so.page_cache_bytes = a.page_cache_bytes;
	so.maintain_interval_ns = a.maintain_ns ? a.maintain_ns : DEFAULT_MAINTAIN_NS;
	if (a.s3 && objstore_open_s3(&a.s3cfg, &os, &msg)) {
		log_error("--storage.backend s3: %s", msg.text);
		return CLI_EXIT_FAIL;
	}
	so.objstore = os;
	so.objstore_cache_bytes = a.s3_cache_bytes;
	so.head_block_max_bytes = a.head_block_max;
	so.peer_timeout_ns = a.peer_timeout_ns;
	if (a.peers && cli_peers_parse(a.peers, &peers, &n_peers, &msg)) {
		log_error("--querier.ingesters: %s", msg.text);
		objstore_close(os);
		return CLI_EXIT_USAGE;
	}
	if (a.peers && cli_peer_token(a.peer_token_file, &peer_token, &msg)) {
		log_error("--querier.ingester-token-file: %s", msg.text);
		cli_peers_free(peers, n_peers);
		objstore_close(os);
		return CLI_EXIT_USAGE;
	}
	so.peers = (const char *const *)peers;
	so.n_peers = n_peers;
	so.peer_token = peer_token;
	/* Debug info and its indexes are shared through the same bucket. */
	a.sym.objstore = os;
	a.web.objstore = os;
	if (os) {
		so.bucket_mode = target_modes[a.target];
		/* A compactor applies the index it writes at each of its passes. */
		if (a.target == T_INGESTER || a.target == T_QUERIER)
			so.bucket_sync_interval_ns = a.s3_sync_ns ? a.s3_sync_ns : DEFAULT_SYNC_NS;
		so.bucket_delete_delay_ns = a.s3_delete_delay_ns;
	}
	if (a.target == T_QUERIER || a.target == T_COMPACTOR)
		a.web.no_ingest = a.target == T_QUERIER
			? "this server is a querier (--target querier): it accepts no profiles; "
			  "send them to an ingester"
			: "this server is a compactor (--target compactor): it accepts no profiles; "
			  "send them to an ingester";
	/* Debug info retention follows the blocks it depends on, at the same pace. */
	a.sym.retain_interval_ns = so.maintain_interval_ns;
	rc = store_open(&so, &st, &msg);
	/* The store keeps copies of the ingesters' URLs and token. */
	cli_peers_free(peers, n_peers);
	if (peer_token) {
		memset(peer_token, 0, strlen(peer_token));
		free(peer_token);
	}
	if (rc) {
		log_error("cannot open the store in %s: %s", a.data, msg.text);
		objstore_close(os);
		return CLI_EXIT_FAIL;
	}
	if (debuginfo_open(st, &a.sym, &sym, &msg)) {
		log_error("%s", msg.text);
		store_close(st);
		objstore_close(os);
		return CLI_EXIT_FAIL;
	}
	/* Debug info first, as CI uploads it before the binaries run. */
	if (a.preload_debuginfo)
		preload_debuginfo(sym, a.preload_debuginfo);
	if (a.preload) {
		/* Judged like any ingest: binaries without names are counted. */
		struct ingest_limits lim = a.web.limits;
		struct ingest_hooks hooks;

		web_ingest_hooks_init(&hooks, sym);
		lim.hooks = &hooks;
		preload(st, &lim, a.preload);
	}
	if (query_symmemo_new(sym, a.memo_bytes, &memo)) {
		log_error("out of memory");
		debuginfo_close(sym);
		store_close(st);
		objstore_close(os);
		return CLI_EXIT_FAIL;
	}
	a.web.query.symbolizer = sym;
	a.web.query.symmemo = memo;
	if (web_server_start(st, &a.web, &srv, &msg)) {
		log_error("%s", msg.text);
		query_symmemo_free(memo);
		debuginfo_close(sym);
		store_close(st);
		objstore_close(os);
		return CLI_EXIT_FAIL;
	}
	reachable_url(a.web.listen, web_server_port(srv), a.web.tls_cert != NULL, url, sizeof(url),
		      &all);
	printf("unhex: listening on %s\n", url);
	fflush(stdout);
	log_info("serving %s on %s%s%s as --target %s", a.data,
		 all ? "all interfaces, port " : a.web.listen, all ? strrchr(url, ':') + 1 : "",
		 a.web.tls_cert ? " (TLS)" : "", target_names[a.target]);

	for (;;) {
		size_t n = 0;

		while (sigwait(&set, &sig) != 0)
			;
		if (sig != SIGHUP)
			break;
		err_clear(&msg);
		if (!a.web.auth_tokens)
			log_warn("SIGHUP: no token file to read again (the server runs open)");
		else if (web_server_reload_auth(srv, &n, &msg))
			log_error("SIGHUP: %s; the tokens loaded before stay in use", msg.text);
		else
			log_info("SIGHUP: %zu tokens from %s", n, a.web.auth_tokens);
	}
	log_info("received %s; finishing in-flight requests (at most %lld ms)",
		 sig == SIGINT ? "SIGINT" : "SIGTERM", (long long)(a.shutdown_ns / 1000000));
	if (web_server_stop_within(srv, a.shutdown_ns, &running)) {
		/* The store stays open under the running requests; what was
		 * acknowledged is in its write-ahead log already. */
		log_error("%d requests still running after --shutdown-timeout; exiting without "
			  "waiting for them", running);
		fflush(NULL);
		_exit(CLI_EXIT_FAIL);
	}
	query_symmemo_free(memo);
	debuginfo_close(sym);
	store_close(st);
	objstore_close(os);
	log_info("stopped");
	return CLI_EXIT_OK;
}
