/*
 * routes_ops.c - operational endpoints: GET /api/v1/stats (the requesting
 * tenant's store statistics), GET /metrics (Prometheus text exposition
 * format 0.0.4) and the small index page at GET /.
 */
#include <stddef.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "base/log.h"
#include "objstore/objstore.h"
#include "storage/storage.h"
#include "web_int.h"

#ifndef UNHEX_VERSION
#define UNHEX_VERSION "unknown"
#endif

const int web__status_buckets[WEB_STATUS_BUCKETS] = {
	200, 400, 403, 404, 405, 408, 413, 415, 429, 500, 503, 504, 0 /* other */
};

const char *const web__reason_names[WEB_REJ_COUNT] = {
	"invalid", "too_large", "tenant", "unsupported", "limit", "other",
};

static const char *const endpoint_names[WEB_EP_COUNT] = {
	"/ingest", "/pyroscope/ingest", "/push.v1.PusherService/Push", "/v1development/profiles",
};

const double web__latency_bounds[WEB_LAT_BUCKETS - 1] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30,
};

const char *const web__latency_names[WEB_LAT_COUNT] = { "ingest", "query", "symbolization" };

void web__observe(struct web__histogram *h, int64_t ns)
{
	size_t i = 0;

	if (ns < 0)
		ns = 0;
	while (i < WEB_LAT_BUCKETS - 1 && (double)ns / 1e9 > web__latency_bounds[i])
		i++;
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, (uint64_t)ns, memory_order_relaxed);
}

size_t web__status_bucket(int status)
{
	for (size_t i = 0; i + 1 < WEB_STATUS_BUCKETS; i++)
		if (web__status_buckets[i] == status)
			return i;
	return WEB_STATUS_BUCKETS - 1;
}

void web__count(struct web_server *srv, enum web__endpoint ep, const struct web__resp *rs)
{
	struct web__counters *c = &srv->counters;

	atomic_fetch_add_explicit(&c->requests[ep][web__status_bucket(rs->status)], 1,
				  memory_order_relaxed);
	if (rs->status >= 400)
		atomic_fetch_add_explicit(&c->rejected[rs->reason], 1, memory_order_relaxed);
}

static int json_i64_or_null(struct buf *out, const char *key, int64_t v, int have)
{
	return have ? buf_printf(out, ",\"%s\":%lld", key, (long long)v)
		    : buf_printf(out, ",\"%s\":null", key);
}

static int block_json(void *ctx, const struct store_block_info *b)
{
	struct buf *out = ctx;
	int known = b->range_end != INT64_MAX;
	int rc = buf_printf(out, "%s{\"id\":\"%s\",\"level\":%u", out->data[out->len - 1] == '[' ? "" : ",",
			    b->id, b->level);

	if (!rc)
		rc = json_i64_or_null(out, "range_start_ns", b->range_start, known);
	if (!rc)
		rc = json_i64_or_null(out, "range_end_ns", b->range_end, known);
	if (!rc)
		rc = json_i64_or_null(out, "min_time_ns", b->min_time, known);
	if (!rc)
		rc = json_i64_or_null(out, "max_time_ns", b->max_time, known);
	if (!rc)
		rc = buf_printf(out, ",\"bytes\":%llu,\"series\":%llu,\"profiles\":%llu,"
				"\"samples\":%llu,\"sources\":%zu,\"error\":",
				(unsigned long long)b->bytes, (unsigned long long)b->series,
				(unsigned long long)b->profiles, (unsigned long long)b->samples,
				b->sources);
	if (!rc)
		rc = b->error ? buf_put_json_str(out, b->error, strlen(b->error)) : buf_puts(out, "null");
	if (!rc)
		rc = buf_putc(out, '}');
	return rc;
}

int web_objstore_json(struct buf *out, const struct objstore *os)
{
	struct objstore_stats st;
	int rc;

	objstore_stats(os, &st);
	rc = buf_puts(out, "{\"backend\":");
	if (!rc)
		rc = buf_put_json_str(out, objstore_kind(os), strlen(objstore_kind(os)));
	if (!rc)
		rc = buf_printf(out, ",\"failures\":%llu,\"ops\":{",
				(unsigned long long)st.failures);
	for (int op = 0; !rc && op < OBJSTORE_OP_COUNT; op++) {
		const struct objstore_op_stats *o = &st.op[op];

		rc = buf_printf(out, "%s\"%s\":{", op ? "," : "", objstore_op_name(op));
		for (int r = 0; !rc && r < OBJSTORE_RES_COUNT; r++)
			rc = buf_printf(out, "\"%s\":%llu,", objstore_result_name(r),
					(unsigned long long)o->requests[r]);
		if (!rc)
			rc = buf_printf(out, "\"retries\":%llu,\"bytes_in\":%llu,\"bytes_out\":%llu}",
					(unsigned long long)o->retries,
					(unsigned long long)o->bytes_in,
					(unsigned long long)o->bytes_out);
	}
	if (!rc)
		rc = buf_puts(out, "}}");
	return rc;
}

/* ,"bucket":{...} when the store has a bucket: what this process did with its index. */
static int bucket_json(struct buf *out, struct store *st)
{
	struct store_bucket_stats b;

	store_bucket_stats(st, &b);
	if (!b.enabled)
		return 0;
	return buf_printf(out,
			  ",\"bucket\":{\"index_writes\":%llu,\"index_failures\":%llu,"
			  "\"index_blocks\":%llu,\"index_bytes\":%llu,\"footer_reads\":%llu,"
			  "\"deletion_marks\":%llu,\"deleted_blocks\":%llu,"
			  "\"delete_failures\":%llu,\"syncs\":%llu,\"sync_failures\":%llu,"
			  "\"discovered_blocks\":%llu,\"unlisted_blocks\":%llu,"
			  "\"upload_pending\":%llu,\"upload_lag_ns\":%lld}",
			  (unsigned long long)b.index_writes, (unsigned long long)b.index_failures,
			  (unsigned long long)b.index_blocks, (unsigned long long)b.index_bytes,
			  (unsigned long long)b.footer_reads, (unsigned long long)b.marks,
			  (unsigned long long)b.deleted_objects, (unsigned long long)b.delete_failures,
			  (unsigned long long)b.syncs, (unsigned long long)b.sync_failures,
			  (unsigned long long)b.discovered_blocks, (unsigned long long)b.unlisted_blocks,
			  (unsigned long long)b.upload_pending, (long long)b.upload_lag_ns);
}

int web_stats_json(struct buf *out, const struct store_tenant_stats *s, struct store *st,
		   const struct objstore *os)
{
	int have = s->oldest_ns || s->newest_ns;
	int rc;

	rc = buf_puts(out, "{\"tenant\":");
	if (!rc)
		rc = buf_put_json_str(out, s->tenant, strlen(s->tenant));
	if (!rc)
		rc = buf_printf(out,
				",\"series\":%llu,\"profiles\":%llu,\"samples\":%llu,"
				"\"stacks\":%llu,\"locations\":%llu,\"functions\":%llu,"
				"\"mappings\":%llu,\"bytes\":{",
				(unsigned long long)s->series, (unsigned long long)s->profiles,
				(unsigned long long)s->samples, (unsigned long long)s->stacks,
				(unsigned long long)s->locations, (unsigned long long)s->functions,
				(unsigned long long)s->mappings);
	for (int cf = 0; !rc && cf < STORE_CF_COUNT; cf++)
		rc = buf_printf(out, "%s\"%s\":%llu", cf ? "," : "", store_cf_name(cf),
				(unsigned long long)s->bytes[cf]);
	if (!rc)
		rc = buf_printf(out, "},\"head_profiles\":%llu", (unsigned long long)s->head_profiles);
	if (!rc)
		rc = buf_printf(out, ",\"retention\":{\"expired_blocks\":%llu,\"expired_bytes\":%llu,"
				"\"expired_profiles\":%llu,\"expired_samples\":%llu}",
				(unsigned long long)s->expired_blocks, (unsigned long long)s->expired_bytes,
				(unsigned long long)s->expired_profiles,
				(unsigned long long)s->expired_samples);
	if (!rc)
		rc = buf_printf(out, ",\"blocks\":{\"count\":%llu,\"unreadable\":%llu",
				(unsigned long long)s->blocks, (unsigned long long)s->blocks_unreadable);
	if (!rc)
		rc = json_i64_or_null(out, "oldest_ns", s->oldest_ns, have);
	if (!rc)
		rc = json_i64_or_null(out, "newest_ns", s->newest_ns, have);
	if (!rc && st) {
		rc = buf_puts(out, ",\"list\":[");
		if (!rc)
			rc = store_blocks_each(st, s->tenant, block_json, out, NULL);
		if (!rc)
			rc = buf_putc(out, ']');
	}
	if (!rc)
		rc = buf_putc(out, '}');
	if (!rc && st)
		rc = bucket_json(out, st);
	if (!rc && os) {
		rc = buf_puts(out, ",\"objstore\":");
		if (!rc)
			rc = web_objstore_json(out, os);
	}
	if (!rc)
		rc = buf_putc(out, '}');
	return rc;
}

struct pick {
	const char *tenant;
	struct store_tenant_stats found;
	int have;
};

static int pick_tenant(void *ctx, const struct store_tenant_stats *s)
{
	struct pick *p = ctx;

	if (strcmp(s->tenant, p->tenant) != 0)
		return 0;
	p->found = *s;
	p->found.tenant = p->tenant;
	p->have = 1;
	return 1;
}

void web__handle_stats(struct web__req *rq, struct web__resp *rs)
{
	struct pick p = { .tenant = rq->tenant };
	const struct objstore *os;
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	rc = store_stats(rq->srv->store, pick_tenant, &p, &msg);
	if (rc < 0) {
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	if (!p.have) {
		memset(&p.found, 0, sizeof(p.found));
		p.found.tenant = rq->tenant;
	}
	rs->status = 200;
	rs->content_type = "application/json";
	/* The bucket's counters are server-wide: for whom may read /metrics. */
	os = rq->who->scopes & WEB_SCOPE_ADMIN ? rq->srv->opt.objstore : NULL;
	if (web_stats_json(&rs->body, &p.found, rq->srv->store, os) || buf_putc(&rs->body, '\n'))
		web__resp_text_error(rs, ERR_NOMEM, "out of memory");
}

/*
 * POST /api/v1/admin/backup?to=/abs/dir: a consistent copy of the store and
 * its files written by the server into a new directory of its own file
 * system (docs/operations.md).  Admin scope: the server writes where it
 * may write, so who may ask is restricted like replacing debug info.
 */
void web__handle_backup(struct web__req *rq, struct web__resp *rs)
{
	struct store_backup_stats bs;
	struct err_msg msg;
	char to[1024];
	int rc;

	err_clear(&msg);
	rc = web__param(rq, "to", to, sizeof(to), &msg);
	if (rc == ERR_NOT_FOUND || (!rc && !to[0])) {
		web__resp_text_error(rs, ERR_INVALID,
				     "the parameter to= (a new absolute directory) is required");
		return;
	}
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	rc = store_backup(rq->srv->store, to, &bs, &msg);
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	log_info("backup: %s written (%llu files beside the head, %llu bytes, %llu linked) in "
		 "%lld ms", to, (unsigned long long)bs.files, (unsigned long long)bs.bytes,
		 (unsigned long long)bs.linked, (long long)(bs.ns / 1000000));
	rs->status = 200;
	rs->content_type = "application/json";
	buf_puts(&rs->body, "{\"path\":");
	buf_put_json_str(&rs->body, to, strlen(to));
	buf_printf(&rs->body, ",\"files\":%llu,\"bytes\":%llu,\"linked\":%llu,\"ms\":%lld}\n",
		   (unsigned long long)bs.files, (unsigned long long)bs.bytes,
		   (unsigned long long)bs.linked, (long long)(bs.ns / 1000000));
}

static void metric_head(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric with one unlabelled sample. */
static void metric_u64(struct buf *b, const char *name, const char *type, const char *help,
		       unsigned long long v)
{
	metric_head(b, name, type, help);
	buf_printf(b, "%s %llu\n", name, v);
}

/* A cache's counter of lookups by result="hit"/"miss". */
static void metric_hits(struct buf *b, const char *name, const char *help, uint64_t hits,
			uint64_t misses)
{
	metric_head(b, name, "counter", help);
	buf_printf(b, "%s{result=\"hit\"} %llu\n%s{result=\"miss\"} %llu\n", name,
		   (unsigned long long)hits, name, (unsigned long long)misses);
}

/* A cache's gauge of bytes by state="used"/"cap". */
static void metric_used_cap(struct buf *b, const char *name, const char *help, uint64_t used,
			    uint64_t cap)
{
	metric_head(b, name, "gauge", help);
	buf_printf(b, "%s{state=\"used\"} %llu\n%s{state=\"cap\"} %llu\n", name,
		   (unsigned long long)used, name, (unsigned long long)cap);
}

static unsigned long long load(atomic_uint_fast64_t *v)
{
	return (unsigned long long)atomic_load_explicit(v, memory_order_relaxed);
}

/* A Prometheus label value: backslash, double quote and newline escaped. */
void web__prom_label_value(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			buf_puts(b, "\\n");
		else
			buf_putc(b, *s);
	}
}

/* The HTTP layer's own: latency histograms, the memory budget, connections. */

/* unhex_<name>_pool_bytes and unhex_<name>_pool_blocks_total of a block pool. */
static void pool_metrics(struct buf *b, struct blockpool *pool, const char *name,
			 const char *help_bytes, const char *help_blocks)
{
	char metric[64];
	size_t held = 0;
	uint64_t reused = 0, fresh = 0;

	blockpool_stats(pool, &held, &reused, &fresh);
	snprintf(metric, sizeof(metric), "unhex_%s_pool_bytes", name);
	metric_u64(b, metric, "gauge", help_bytes, held);
	snprintf(metric, sizeof(metric), "unhex_%s_pool_blocks_total", name);
	metric_head(b, metric, "counter", help_blocks);
	buf_printf(b, "%s{from=\"pool\"} %llu\n%s{from=\"heap\"} %llu\n", metric,
		   (unsigned long long)reused, metric, (unsigned long long)fresh);
}
/* The ingest gate (base/gate.h, --ingest-concurrency). */
static void gate_metrics(struct buf *b, struct gate *g)
{
	uint32_t inside = 0, waiting = 0;
	uint64_t waits = 0, wait_ns = 0;

	gate_stats(g, &inside, &waiting, &waits, &wait_ns);
	metric_u64(b, "unhex_ingest_concurrency_limit", "gauge",
		   "--ingest-concurrency: ingest requests decoding and writing at once.", g->limit);
	metric_u64(b, "unhex_ingest_running", "gauge",
		   "Ingest requests decoding and writing now.", inside);
	metric_u64(b, "unhex_ingest_waiting", "gauge",
		   "Ingest requests, bodies read, waiting for their turn.", waiting);
	metric_u64(b, "unhex_ingest_waited_total", "counter",
		   "Ingest requests that waited for their turn.", waits);
	metric_head(b, "unhex_ingest_wait_seconds_total", "counter",
		    "Time ingest requests spent waiting for their turn.");
	buf_printf(b, "unhex_ingest_wait_seconds_total %.9f\n", (double)wait_ns / 1e9);
}

static void http_metrics(struct web_server *srv, struct buf *b)
{
	metric_head(b, "unhex_http_request_duration_seconds", "histogram",
		    "Time from a request's headers to its answer sent, by kind of route: ingest "
		    "(the ingest endpoints), query (the query routes and Connect queries), "
		    "symbolization (symbolization status, /symbolz, debug info uploads and downloads).");
	for (int k = 0; k < WEB_LAT_COUNT; k++) {
		struct web__histogram *h = &srv->latency[k];
		unsigned long long cum = 0;

		for (int i = 0; i < WEB_LAT_BUCKETS; i++) {
			cum += load(&h->bucket[i]);
			if (i < WEB_LAT_BUCKETS - 1)
				buf_printf(b, "unhex_http_request_duration_seconds_bucket{kind=\"%s\","
					   "le=\"%g\"} %llu\n", web__latency_names[k],
					   web__latency_bounds[i], cum);
			else
				buf_printf(b, "unhex_http_request_duration_seconds_bucket{kind=\"%s\","
					   "le=\"+Inf\"} %llu\n", web__latency_names[k], cum);
		}
		buf_printf(b, "unhex_http_request_duration_seconds_sum{kind=\"%s\"} %.9f\n",
			   web__latency_names[k], (double)load(&h->sum_ns) / 1e9);
		buf_printf(b, "unhex_http_request_duration_seconds_count{kind=\"%s\"} %llu\n",
			   web__latency_names[k], load(&h->count));
	}
	metric_u64(b, "unhex_http_inflight_bytes", "gauge",
		   "Bytes of --max-inflight-bytes held by requests in flight.",
		   atomic_load_explicit(&srv->inflight_bytes, memory_order_relaxed));
	metric_u64(b, "unhex_http_inflight_bytes_limit", "gauge", "--max-inflight-bytes.",
		   srv->opt.max_inflight_bytes);
	gate_metrics(b, &srv->ingest_gate);
	pool_metrics(b, &srv->ingest_pool, "ingest",
		     "Bytes of freed ingest arena blocks kept for the next requests.",
		     "Arena blocks ingest requests took, by where they came from.");
	pool_metrics(b, &srv->query_pool, "query",
		     "Bytes of freed query table blocks kept for the next queries.",
		     "Table blocks of 128 KiB or more queries took, by where they came from.");
	pool_metrics(b, &srv->body_pool, "body",
		     "Bytes of freed request and response body buffers kept for the next requests.",
		     "Request and response body buffers of 128 KiB or more, by where they came from.");
	metric_u64(b, "unhex_http_memory_refused_total", "counter",
		   "Requests answered 503 because the memory budget was full.",
		   load(&srv->mem_refused));
	metric_head(b, "unhex_http_requests_in_flight", "gauge", "Requests being handled.");
	buf_printf(b, "unhex_http_requests_in_flight %d\n",
		   atomic_load_explicit(&srv->requests_running, memory_order_relaxed));
	metric_u64(b, "unhex_http_connections_refused_total", "counter",
		   "Connections answered 429 for --max-client-connections.",
		   web__conns_refused(&srv->conns));
	metric_u64(b, "unhex_http_body_timeouts_total", "counter",
		   "Requests answered 408: the body did not arrive by its deadline.",
		   load(&srv->body_timeouts));
}

/* glibc's own account of its heap (mallinfo2, glibc 2.33 on), read under
 * each arena's lock: what is handed out, what its arenas keep free, what is
 * mapped block by block.  Against VmRSS it tells memory in use from memory
 * the allocator keeps (docs/operations.md, "Memory: the allocator"); glibc
 * counts the chunks parked in each thread's tcache as in use.  Under
 * another allocator (a sanitizer's, a preloaded one) these are glibc's
 * mostly unused arenas, so they are served only where glibc is the C
 * library, and say nothing of RocksDB's or anyone's use then. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
static void malloc_metrics(struct buf *b)
{
	struct mallinfo2 mi = mallinfo2();

	metric_u64(b, "unhex_malloc_in_use_bytes", "gauge",
		   "Bytes glibc's malloc has handed out from its arenas and not had back, "
		   "small chunks freed into a thread's cache (tcache) included.",
		   mi.uordblks);
	metric_u64(b, "unhex_malloc_free_bytes", "gauge",
		   "Bytes free inside glibc's arenas, resident or already given back to the system.",
		   mi.fordblks);
	metric_u64(b, "unhex_malloc_mmapped_bytes", "gauge",
		   "Bytes of allocations glibc mapped one by one (at or above its mmap threshold).",
		   mi.hblkhd);
	metric_u64(b, "unhex_malloc_top_bytes", "gauge",
		   "Of the free bytes, the free top of the main arena (what trimming its top returns).",
		   mi.keepcost);
}
#else
static void malloc_metrics(struct buf *b)
{
	(void)b;
}
#endif

struct store_metric {
	const char *name, *type, *help;
};

static const struct store_metric store_metric_defs[] = {
	{ "unhex_store_profiles", "gauge", "Profiles retained, in the head and in blocks." },
	{ "unhex_store_head_profiles", "gauge", "Profiles in the head, not sealed into a block yet." },
	{ "unhex_store_blocks", "gauge", "Block files of the tenant." },
	{ "unhex_store_blocks_unreadable", "gauge",
	  "Blocks skipped by queries because they are corrupt or missing (see unhex verify)." },
	{ "unhex_store_block_bytes", "gauge", "Bytes of the tenant's block files." },
	{ "unhex_store_head_bytes", "gauge", "Bytes of the tenant's head in RocksDB (estimate)." },
	{ "unhex_store_oldest_profile_seconds", "gauge", "Time of the oldest profile in a block." },
	{ "unhex_store_expired_blocks_total", "counter", "Blocks deleted by retention." },
	{ "unhex_store_expired_bytes_total", "counter", "Bytes of the blocks deleted by retention." },
	{ "unhex_store_expired_profiles_total", "counter", "Profiles deleted by retention." },
};
#define N_STORE_METRICS (sizeof(store_metric_defs) / sizeof(store_metric_defs[0]))

struct store_metric_ctx {
	struct buf lines[N_STORE_METRICS];
};

static int store_metric_tenant(void *ctx, const struct store_tenant_stats *s)
{
	struct store_metric_ctx *c = ctx;
	uint64_t head = s->bytes[STORE_CF_META] + s->bytes[STORE_CF_SERIES] +
			s->bytes[STORE_CF_SYMBOLS] + s->bytes[STORE_CF_SAMPLES];
	double v[N_STORE_METRICS] = {
		(double)s->profiles, (double)s->head_profiles, (double)s->blocks,
		(double)s->blocks_unreadable, (double)s->bytes[STORE_CF_BLOCKS], (double)head,
		(double)s->oldest_ns / 1e9, (double)s->expired_blocks, (double)s->expired_bytes,
		(double)s->expired_profiles,
	};

	for (size_t i = 0; i < N_STORE_METRICS; i++) {
		if (i == 6 && !s->oldest_ns)
			continue;
		buf_printf(&c->lines[i], "%s{tenant=\"", store_metric_defs[i].name);
		web__prom_label_value(&c->lines[i], s->tenant);
		buf_printf(&c->lines[i], "\"} %.17g\n", v[i]);
	}
	return 0;
}

/* The object store's requests by operation (nothing without a bucket). */
static void objstore_metrics(const struct objstore *os, struct buf *b)
{
	struct objstore_stats st;

	if (!os)
		return;
	objstore_stats(os, &st);
	metric_head(b, "unhex_objstore_requests_total", "counter",
		    "Requests sent to the object store (each attempt of a retried one), by "
		    "operation and outcome.");
	for (int op = 0; op < OBJSTORE_OP_COUNT; op++)
		for (int r = 0; r < OBJSTORE_RES_COUNT; r++)
			buf_printf(b, "unhex_objstore_requests_total{op=\"%s\",result=\"%s\"} %llu\n",
				   objstore_op_name(op), objstore_result_name(r),
				   (unsigned long long)st.op[op].requests[r]);
	metric_head(b, "unhex_objstore_retries_total", "counter",
		    "Object store requests that failed and were sent again, by operation.");
	for (int op = 0; op < OBJSTORE_OP_COUNT; op++)
		buf_printf(b, "unhex_objstore_retries_total{op=\"%s\"} %llu\n", objstore_op_name(op),
			   (unsigned long long)st.op[op].retries);
	metric_head(b, "unhex_objstore_bytes_total", "counter",
		    "Body bytes received from (in) and sent to (out) the object store, by operation.");
	for (int op = 0; op < OBJSTORE_OP_COUNT; op++)
		buf_printf(b, "unhex_objstore_bytes_total{op=\"%s\",direction=\"in\"} %llu\n"
			      "unhex_objstore_bytes_total{op=\"%s\",direction=\"out\"} %llu\n",
			   objstore_op_name(op), (unsigned long long)st.op[op].bytes_in,
			   objstore_op_name(op), (unsigned long long)st.op[op].bytes_out);
	metric_u64(b, "unhex_objstore_failures_total", "counter",
		   "Object store calls that failed after their retries.",
		   st.failures);
}

/* What this process did with the bucket index (docs/object-storage.md). */
static void bucket_metrics(struct store *st, struct buf *b)
{
	struct store_bucket_stats s;

	store_bucket_stats(st, &s);
	if (!s.enabled)
		return;
	metric_head(b, "unhex_bucket_index_total", "counter",
		    "The bucket index since the server started, by event.");
	buf_printf(b, "unhex_bucket_index_total{event=\"writes\"} %llu\n"
		      "unhex_bucket_index_total{event=\"write_failures\"} %llu\n"
		      "unhex_bucket_index_total{event=\"footer_reads\"} %llu\n"
		      "unhex_bucket_index_total{event=\"footers_corrupt\"} %llu\n"
		      "unhex_bucket_index_total{event=\"deletion_marks\"} %llu\n"
		      "unhex_bucket_index_total{event=\"deleted_blocks\"} %llu\n"
		      "unhex_bucket_index_total{event=\"delete_failures\"} %llu\n"
		      "unhex_bucket_index_total{event=\"syncs\"} %llu\n"
		      "unhex_bucket_index_total{event=\"sync_failures\"} %llu\n"
		      "unhex_bucket_index_total{event=\"discovered_blocks\"} %llu\n"
		      "unhex_bucket_index_total{event=\"unlisted_blocks\"} %llu\n",
		   (unsigned long long)s.index_writes, (unsigned long long)s.index_failures,
		   (unsigned long long)s.footer_reads, (unsigned long long)s.footers_corrupt,
		   (unsigned long long)s.marks,
		   (unsigned long long)s.deleted_objects, (unsigned long long)s.delete_failures,
		   (unsigned long long)s.syncs, (unsigned long long)s.sync_failures,
		   (unsigned long long)s.discovered_blocks, (unsigned long long)s.unlisted_blocks);
	metric_u64(b, "unhex_bucket_index_blocks", "gauge",
		   "Blocks in the bucket index last written or read by this server.",
		   s.index_blocks);
	metric_u64(b, "unhex_bucket_index_bytes", "gauge", "Size of that index object.",
		   s.index_bytes);
	metric_u64(b, "unhex_bucket_upload_pending_blocks", "gauge",
		   "Sealed or compacted blocks of this server not in the bucket yet.",
		   s.upload_pending);
	metric_head(b, "unhex_bucket_upload_lag_seconds", "gauge",
		    "Age of the oldest of them (0 when none waits).");
	buf_printf(b, "unhex_bucket_upload_lag_seconds %.3f\n", (double)s.upload_lag_ns / 1e9);
}

/* Starts a sample line `name{ingester="url"`, the caller ends it. */
static void peer_sample(struct buf *b, const char *name, const char *url)
{
	buf_printf(b, "%s{ingester=\"", name);
	web__prom_label_value(b, url);
	buf_putc(b, '"');
}

/* A querier's requests to its ingesters (storage_int.h section 13). */
static void peer_metrics(struct store *st, struct buf *b)
{
	static const char *results[] = { "ok", "stale", "failed", "timeout", "too_large" };
	size_t n = store_peer_count(st);

	if (!n)
		return;
	metric_head(b, "unhex_querier_ingester_requests_total", "counter",
		    "Head-block requests of this querier to each ingester, by result.");
	for (size_t i = 0; i < n; i++) {
		struct store_peer_stats p;
		uint64_t v[5];

		store_peer_stats(st, i, &p);
		v[0] = p.ok, v[1] = p.stale, v[2] = p.failed, v[3] = p.timeout, v[4] = p.too_large;
		for (size_t k = 0; k < 5; k++) {
			peer_sample(b, "unhex_querier_ingester_requests_total", p.peer);
			buf_printf(b, ",result=\"%s\"} %llu\n", results[k], (unsigned long long)v[k]);
		}
	}
	/* Each family's samples together, after its HELP and TYPE. */
	metric_head(b, "unhex_querier_ingester_bytes_total", "counter",
		    "Bytes of head blocks received from each ingester.");
	for (size_t i = 0; i < n; i++) {
		struct store_peer_stats p;

		store_peer_stats(st, i, &p);
		peer_sample(b, "unhex_querier_ingester_bytes_total", p.peer);
		buf_printf(b, "} %llu\n", (unsigned long long)p.bytes);
	}
	metric_head(b, "unhex_querier_ingester_request_seconds", "summary",
		    "Time of the head-block requests each ingester answered.");
	for (size_t i = 0; i < n; i++) {
		struct store_peer_stats p;

		store_peer_stats(st, i, &p);
		peer_sample(b, "unhex_querier_ingester_request_seconds_sum", p.peer);
		buf_printf(b, "} %.6f\n", (double)p.ns_sum / 1e9);
		peer_sample(b, "unhex_querier_ingester_request_seconds_count", p.peer);
		buf_printf(b, "} %llu\n", (unsigned long long)p.ns_count);
	}
}

/* The store's gauges per tenant, and what maintenance did since start. */
static void store_metrics(struct store *st, struct buf *b)
{
	struct store_metric_ctx c;
	struct store_maint_stats m;

	for (size_t i = 0; i < N_STORE_METRICS; i++)
		buf_init(&c.lines[i], (size_t)64 << 20);
	if (store_stats(st, store_metric_tenant, &c, NULL) == 0) {
		for (size_t i = 0; i < N_STORE_METRICS; i++) {
			metric_head(b, store_metric_defs[i].name, store_metric_defs[i].type,
				    store_metric_defs[i].help);
			if (c.lines[i].len)
				buf_append(b, c.lines[i].data, c.lines[i].len);
		}
	}
	for (size_t i = 0; i < N_STORE_METRICS; i++)
		buf_release(&c.lines[i]);
	store_maint_totals(st, &m);
	metric_head(b, "unhex_store_maintenance_total", "counter",
		    "What maintenance did since the server started, by action.");
	buf_printf(b, "unhex_store_maintenance_total{action=\"sealed_blocks\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"sealed_profiles\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"compactions\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"compacted_blocks\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"expired_blocks\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"dropped_epochs\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"uploaded_blocks\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"uploaded_bytes\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"upload_failures\"} %llu\n"
		      "unhex_store_maintenance_total{action=\"upload_found\"} %llu\n",
		   (unsigned long long)m.sealed_blocks, (unsigned long long)m.sealed_profiles,
		   (unsigned long long)m.compactions, (unsigned long long)m.compacted_blocks,
		   (unsigned long long)m.expired_blocks, (unsigned long long)m.dropped_epochs,
		   (unsigned long long)m.uploaded_blocks, (unsigned long long)m.uploaded_bytes,
		   (unsigned long long)m.upload_failures, (unsigned long long)m.upload_found);
	bucket_metrics(st, b);
	peer_metrics(st, b);
	{
		struct store_bucket_reads r;

		store_bucket_reads(st, &r);
		metric_head(b, "unhex_store_bucket_read_requests_total", "counter",
			    "Ranged GETs of blocks without a local file, by what they read.");
		for (size_t i = 0; i < sizeof(r.kind) / sizeof(r.kind[0]) && r.kind[i].name; i++)
			buf_printf(b, "unhex_store_bucket_read_requests_total{kind=\"%s\"} %llu\n",
				   r.kind[i].name, (unsigned long long)r.kind[i].gets);
		metric_head(b, "unhex_store_bucket_read_bytes_total", "counter",
			    "Bytes those GETs fetched, by what they read.");
		for (size_t i = 0; i < sizeof(r.kind) / sizeof(r.kind[0]) && r.kind[i].name; i++)
			buf_printf(b, "unhex_store_bucket_read_bytes_total{kind=\"%s\"} %llu\n",
				   r.kind[i].name, (unsigned long long)r.kind[i].bytes);
		metric_head(b, "unhex_store_bucket_read_needed_bytes_total", "counter",
			    "Of those bytes, the sections and pages asked for (the rest: gaps "
			    "merged GETs carried).");
		for (size_t i = 0; i < sizeof(r.kind) / sizeof(r.kind[0]) && r.kind[i].name; i++)
			buf_printf(b, "unhex_store_bucket_read_needed_bytes_total{kind=\"%s\"} %llu\n",
				   r.kind[i].name, (unsigned long long)r.kind[i].needed_bytes);
		metric_hits(b, "unhex_store_bucket_cache_requests_total",
			    "Pieces of blocks asked of the s3 cache, by result.", r.hits, r.misses);
		metric_head(b, "unhex_store_bucket_cache_hit_ratio", "gauge",
			    "Hits over pieces asked of the s3 cache since start (0 before any).");
		buf_printf(b, "unhex_store_bucket_cache_hit_ratio %.4f\n",
			   r.hits + r.misses ? (double)r.hits / (double)(r.hits + r.misses) : 0.0);
		metric_u64(b, "unhex_store_bucket_cache_evictions_total", "counter",
			   "Entries the s3 cache deleted to stay under --storage.s3.cache-size.",
			   r.evictions);
		metric_u64(b, "unhex_store_bucket_read_failures_total", "counter",
			   "Reads of blocks the bucket failed (the block was skipped with a warning).",
			   r.failures);
		metric_used_cap(b, "unhex_store_bucket_cache_bytes",
				"Bytes the s3 cache holds, and its cap.", r.cached_bytes, r.cap_bytes);
	}
	{
		struct store_push_id_stats p;

		store_push_id_stats(st, &p);
		metric_u64(b, "unhex_push_ids_remembered", "gauge",
			   "Pushed profile IDs remembered to recognize retries (docs/operations.md).",
			   p.remembered);
		metric_u64(b, "unhex_push_duplicates_total", "counter",
			   "Pushed profiles not stored again: their ID was stored within the window.",
			   p.duplicates);
		metric_u64(b, "unhex_push_ids_overflow_total", "counter",
			   "Pushed IDs stored but not remembered: the window's cap was reached.",
			   p.overflow);
	}
	{
		struct store_page_cache_stats pc;

		store_page_cache_stats(st, &pc);
		metric_used_cap(b, "unhex_store_page_cache_bytes",
				"Decoded block pages and head chunks the page cache holds, and its cap.",
				pc.bytes, pc.cap_bytes);
		metric_u64(b, "unhex_store_page_cache_entries", "gauge",
			   "Pages and head chunks the page cache holds.", pc.entries);
		metric_hits(b, "unhex_store_page_cache_requests_total",
			    "Pages of blocks asked of the page cache, by result.", pc.hits, pc.misses);
		metric_hits(b, "unhex_store_page_cache_head_requests_total",
			    "Head chunks asked of the page cache, by result.", pc.head_hits,
			    pc.head_misses);
		metric_u64(b, "unhex_store_page_cache_evictions_total", "counter",
			   "Pages the page cache dropped to stay under --page-cache-bytes.",
			   pc.evictions);
	}
	{
		struct store_memory_stats ms;

		store_memory_stats(st, &ms);
		metric_u64(b, "unhex_store_memtable_bytes", "gauge",
			   "RocksDB memtables of the head, every column family.", ms.memtable_bytes);
		metric_u64(b, "unhex_store_table_readers_bytes", "gauge",
			   "RocksDB table readers held outside the block cache.",
			   ms.table_readers_bytes);
		metric_u64(b, "unhex_store_block_cache_bytes", "gauge", "RocksDB block cache in use.",
			   ms.block_cache_bytes);
		metric_u64(b, "unhex_store_block_cache_pinned_bytes", "gauge",
			   "Of the RocksDB block cache, the part pinned by readers.",
			   ms.block_cache_pinned_bytes);
		metric_u64(b, "unhex_store_symbol_cache_bytes", "gauge",
			   "Decoded block indexes and symbols in the symbol cache.",
			   ms.symbol_cache_bytes);
		metric_u64(b, "unhex_store_head_partitions", "gauge",
			   "Head symbol partitions in memory, retired ones still read included.",
			   ms.head_partitions);
		metric_u64(b, "unhex_store_head_partitions_retired", "gauge",
			   "Head symbol partitions dropped by sealing, kept for their readers.",
			   ms.head_partitions_retired);
		metric_u64(b, "unhex_store_blocks_referenced", "gauge",
			   "Blocks whose footer is in memory: live, replaced in their grace period, read.",
			   ms.blocks_referenced);
	}
}

void web__handle_metrics(struct web__req *rq, struct web__resp *rs)
{
	struct web__counters *c = &rq->srv->counters;
	struct buf *b = &rs->body;

	metric_head(b, "unhex_ingest_requests_total", "counter",
		    "Ingest requests by endpoint and HTTP status.");
	for (int ep = 0; ep < WEB_EP_COUNT; ep++)
		for (size_t i = 0; i < WEB_STATUS_BUCKETS; i++) {
			unsigned long long v = load(&c->requests[ep][i]);

			if (v == 0 && web__status_buckets[i] != 200)
				continue;
			if (web__status_buckets[i])
				buf_printf(b, "unhex_ingest_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n",
					   endpoint_names[ep], web__status_buckets[i], v);
			else
				buf_printf(b, "unhex_ingest_requests_total{endpoint=\"%s\",code=\"other\"} %llu\n",
					   endpoint_names[ep], v);
		}
	metric_u64(b, "unhex_ingest_bytes_total", "counter",
		   "Request body bytes received by the ingest endpoints.",
		   load(&c->bytes));
	metric_u64(b, "unhex_ingest_samples_total", "counter",
		   "Stored (stack, value) pairs from successful ingest requests.",
		   load(&c->samples));
	metric_u64(b, "unhex_ingest_profiles_total", "counter",
		   "Stored profiles (one per pprof sample type) from successful ingest requests.",
		   load(&c->profiles));
	metric_head(b, "unhex_ingest_rejected_total", "counter",
		    "Ingest requests answered with an error, by reason.");
	for (int r = 0; r < WEB_REJ_COUNT; r++)
		buf_printf(b, "unhex_ingest_rejected_total{reason=\"%s\"} %llu\n",
			   web__reason_names[r], load(&c->rejected[r]));
	http_metrics(rq->srv, b);
	malloc_metrics(b);
	store_metrics(rq->srv->store, b);
	objstore_metrics(rq->srv->opt.objstore, b);
	web__limits_metrics(rq->srv->limits, b);
	metric_head(b, "unhex_build_info", "gauge", "Build information; the value is always 1.");
	buf_printf(b, "unhex_build_info{version=\"%s\"} 1\n", UNHEX_VERSION);
	rs->status = 200;
	rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

static const char index_html[] =
	"<!doctype html>\n"
	"<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<title>unhex</title>\n"
	"<style>\n"
	"body{font:15px/1.5 system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em;color:#222}\n"
	"h1{margin-bottom:0}code{background:#f3f3f3;padding:0 .25em}\n"
	"table{border-collapse:collapse}td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:left}\n"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
	"</style></head><body>\n"
	"<h1>unhex</h1>\n"
	"<p>A continuous-profiling backend that stores raw-address profiles from stripped\n"
	"production binaries and names their frames at query time from the debug info of\n"
	"the exact build. The full UI comes later; this page shows what is stored.</p>\n"
	"<h2>Stored data (tenant <span id=\"tenant\">&hellip;</span>)</h2>\n"
	"<table id=\"stats\"><tr><td>loading&hellip;</td></tr></table>\n"
	"<h2>API</h2>\n"
	"<ul>\n"
	"<li><code>POST /ingest?name=app.cpu{k=v}&amp;from=&amp;until=&amp;format=pprof</code> &mdash; Pyroscope ingest (also <code>/pyroscope/ingest</code>)</li>\n"
	"<li><code>POST /push.v1.PusherService/Push</code> &mdash; Connect, JSON or binary</li>\n"
	"<li><code>GET /api/v1/stats</code> &mdash; this tenant's statistics (JSON)</li>\n"
	"<li><code>GET /metrics</code> &mdash; Prometheus metrics</li>\n"
	"<li><code>GET /ready</code> &mdash; readiness</li>\n"
	"</ul>\n"
	"<p>Tenants are chosen with the <code>X-Scope-OrgID</code> header (default <code>anonymous</code>).</p>\n"
	"<script>\n"
	"fetch('/api/v1/stats').then(function(r){if(!r.ok)throw new Error('HTTP '+r.status);return r.json();})\n"
	".then(function(s){\n"
	" document.getElementById('tenant').textContent=s.tenant;\n"
	" var t=document.getElementById('stats');t.textContent='';\n"
	" function row(k,v){var tr=t.insertRow();tr.insertCell().textContent=k;var c=tr.insertCell();c.className='n';c.textContent=Number(v).toLocaleString();}\n"
	" ['series','profiles','samples','stacks','locations','functions','mappings'].forEach(function(k){row(k,s[k]);});\n"
	" Object.keys(s.bytes).forEach(function(k){row('bytes ('+k+')',s.bytes[k]);});\n"
	"}).catch(function(e){document.getElementById('stats').textContent='stats unavailable: '+e.message;});\n"
	"</script>\n"
	"</body></html>\n";

void web__handle_index(struct web__req *rq, struct web__resp *rs)
{
	(void)rq;
	rs->status = 200;
	rs->content_type = "text/html; charset=utf-8";
	if (buf_append(&rs->body, index_html, sizeof(index_html) - 1))
		web__resp_text_error(rs, ERR_NOMEM, "out of memory");
}
