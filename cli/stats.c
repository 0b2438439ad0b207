/*
 * stats.c - `unhex stats`: what a store holds, per tenant, read from the
 * data directory (read-only) or from a running server's /api/v1/stats.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"
#include "objstore/objstore.h"
#include "storage/storage.h"
#include "web/web.h"

static void stats_help(FILE *f)
{
	fputs("usage: unhex stats --data DIR [--blocks] [--json]\n"
	      "       unhex stats --server URL [--cacert FILE] [--tenant T] [--blocks] [--json]\n"
	      "\n"
	      "Prints per tenant: series, profiles, samples (retained, in the head and in\n"
	      "blocks), stacks, locations, functions, mappings, bytes on disk (the head's\n"
	      "column families and the block files), the blocks (count, unreadable, time\n"
	      "span) and what retention removed; --blocks lists every block with its range.\n"
	      "--data opens the store read-only (all tenants); --server asks GET\n"
	      "/api/v1/stats (one tenant), over http or https (--cacert: PEM CAs to trust\n"
	      "instead of the system's).  With --data, exits 1 when it met data it cannot\n"
	      "read (a damaged SST block, a corrupt or missing block file); it reads what\n"
	      "its numbers need, so only `unhex verify` checks every file.  --server, of a\n"
	      "server with --storage.backend s3: also what it did with the bucket index\n"
	      "(docs/object-storage.md) and, with a token with the admin scope (or an open\n"
	      "server), the bucket's requests by operation and outcome, retries and bytes\n"
	      "since the server started.\n",
	      f);
}

static void print_time(const char *name, int64_t ns)
{
	char when[64] = "-";
	time_t secs = (time_t)(ns / 1000000000);
	struct tm tm;

	if (ns && gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("  %-16s %20s\n", name, when);
}

/*
 * The counts, the bytes, and (only when there are any: a store without
 * blocks prints what it always did) the blocks and what retention removed.
 */
static void print_human(const struct store_tenant_stats *s)
{
	unsigned long long total = 0;

	const struct {
		const char *name;
		uint64_t v;
	} rows[] = {
		{ "series", s->series },       { "profiles", s->profiles },
		{ "samples", s->samples },     { "stacks", s->stacks },
		{ "locations", s->locations }, { "functions", s->functions },
		{ "mappings", s->mappings },
	}, blocks[] = {
		{ "head profiles", s->head_profiles }, { "blocks", s->blocks },
		{ "unreadable", s->blocks_unreadable },
	}, expired[] = {
		{ "expired blocks", s->expired_blocks }, { "expired bytes", s->expired_bytes },
		{ "expired profiles", s->expired_profiles },
	};
	char name[64];

	printf("tenant %s\n", s->tenant);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		printf("  %-16s %14llu\n", rows[i].name, (unsigned long long)rows[i].v);
	if (s->head_unreadable)
		printf("  %-16s %14llu\n", "unreadable head", (unsigned long long)s->head_unreadable);
	for (size_t i = 0; s->blocks && i < sizeof(blocks) / sizeof(blocks[0]); i++)
		printf("  %-16s %14llu\n", blocks[i].name, (unsigned long long)blocks[i].v);
	for (size_t i = 0; s->expired_blocks && i < sizeof(expired) / sizeof(expired[0]); i++)
		printf("  %-16s %14llu\n", expired[i].name, (unsigned long long)expired[i].v);
	for (int cf = 0; cf < STORE_CF_COUNT; cf++) {
		total += s->bytes[cf];
		if (cf == STORE_CF_BLOCKS && !s->blocks)
			continue;
		snprintf(name, sizeof(name), "bytes %s", store_cf_name(cf));
		printf("  %-16s %14llu\n", name, (unsigned long long)s->bytes[cf]);
	}
	printf("  %-16s %14llu\n", "bytes total", total);
	if (s->blocks) {
		print_time("oldest in blocks", s->oldest_ns);
		print_time("newest in blocks", s->newest_ns);
	}
}

static void print_range(int64_t a, int64_t b)
{
	char x[32] = "?", y[32] = "?";
	time_t sa = (time_t)(a / 1000000000), sb = (time_t)(b / 1000000000);
	struct tm tm;

	if (b != INT64_MAX && gmtime_r(&sa, &tm))
		strftime(x, sizeof(x), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (b != INT64_MAX && gmtime_r(&sb, &tm))
		strftime(y, sizeof(y), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("%s .. %s", x, y);
}

static int print_block(void *ctx, const struct store_block_info *b)
{
	(void)ctx;
	printf("  block %s level %u  ", b->id, b->level);
	print_range(b->range_start, b->range_end);
	printf("  %llu bytes, %llu series, %llu profiles%s%s\n", (unsigned long long)b->bytes,
	       (unsigned long long)b->series, (unsigned long long)b->profiles,
	       b->error ? "  UNREADABLE: " : "", b->error ? b->error : "");
	return 0;
}

struct collect {
	int json, blocks;
	size_t n;
	uint64_t bad_head, bad_blocks; /* damage met while reading */
	struct buf out;
	struct store *st;
	int rc;
};

static int on_tenant(void *ctx, const struct store_tenant_stats *s)
{
	struct collect *c = ctx;

	c->bad_head += s->head_unreadable;
	c->bad_blocks += s->blocks_unreadable;
	if (!c->json) {
		print_human(s);
		if (c->blocks)
			store_blocks_each(c->st, s->tenant, print_block, NULL, NULL);
		c->n++;
		return 0;
	}
	if (c->n++)
		c->rc = buf_putc(&c->out, ',');
	if (!c->rc)
		c->rc = web_stats_json(&c->out, s, c->st, NULL);
	return c->rc;
}

static int stats_local(const char *dir, int json, int blocks)
{
	struct store_options so = { 0 };
	struct store *st = NULL;
	struct collect c = { .json = json, .blocks = blocks };
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	so.dir = dir;
	so.read_only = 1;
	if (store_open(&so, &st, &msg)) {
		fprintf(stderr, "unhex stats: cannot open %s: %s\n", dir, msg.text);
		return CLI_EXIT_FAIL;
	}
	c.st = st;
	buf_init(&c.out, 64u << 20); /* the stats JSON of every tenant */
	buf_puts(&c.out, "{\"tenants\":[");
	rc = store_stats(st, on_tenant, &c, &msg);
	if (!rc)
		rc = c.rc;
	store_close(st);
	if (rc) {
		fprintf(stderr, "unhex stats: %s\n", msg.text[0] ? msg.text : err_str(rc));
		buf_release(&c.out);
		return CLI_EXIT_FAIL;
	}
	if (json)
		printf("%s]}\n", c.out.data);
	else if (c.n == 0)
		printf("no tenants in %s\n", dir);
	buf_release(&c.out);
	if (c.bad_head || c.bad_blocks) {
		/* The numbers above leave out what cannot be read: not a healthy store. */
		fprintf(stderr, "unhex stats: %s has unreadable data (%llu head symbol partitions, "
			"%llu blocks); `unhex verify --data %s` names the damaged files\n", dir,
			(unsigned long long)c.bad_head, (unsigned long long)c.bad_blocks, dir);
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

/* Reads a number after `"key":` in the server's flat stats JSON. */
static unsigned long long json_u64(const char *body, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(body, pat);
	return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

/* The string after `"key":"` in p, into out (at most n - 1 bytes). */
static void json_str(const char *p, const char *key, char *out, size_t n)
{
	char pat[64];
	const char *q;
	size_t k = 0;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	q = strstr(p, pat);
	out[0] = '\0';
	if (!q)
		return;
	for (q += strlen(pat); *q && *q != '"' && k + 1 < n; q++)
		out[k++] = *q;
	out[k] = '\0';
}

/*
 * Prints the "objstore" object of a server with a bucket (admin scope):
 * one row per operation, as web_objstore_json() lays them out.
 */
static void print_remote_objstore(const char *body)
{
	const char *p = strstr(body, "\"objstore\":{");
	char backend[16];

	if (!p)
		return;
	json_str(p, "backend", backend, sizeof(backend));
	printf("object store %s (requests since the server started)\n", backend);
	printf("  %-10s %10s %10s %10s %10s %10s %10s %14s %14s\n", "operation", "ok", "not found",
	       "conflict", "error", "unchanged", "retries", "bytes in", "bytes out");
	for (int op = 0; op < OBJSTORE_OP_COUNT; op++) {
		char pat[32];
		const char *o;

		snprintf(pat, sizeof(pat), "\"%s\":{", objstore_op_name(op));
		o = strstr(p, pat);
		if (!o)
			continue;
		printf("  %-10s", objstore_op_name(op));
		for (int r = 0; r < OBJSTORE_RES_COUNT; r++)
			printf(" %10llu", json_u64(o, objstore_result_name(r)));
		printf(" %10llu %14llu %14llu\n", json_u64(o, "retries"), json_u64(o, "bytes_in"),
		       json_u64(o, "bytes_out"));
	}
	printf("  %-10s %10llu\n", "failures", json_u64(p, "failures"));
}

/* Prints the "list" of our own blocks object, one block per "{...}". */
static void print_remote_blocks(const char *blocks)
{
	const char *p = strstr(blocks, "\"list\":[");

	for (p = p ? strchr(p, '{') : NULL; p; p = strchr(p + 1, '{')) {
		struct store_block_info b = { 0 };
		char id[40], err[256];
		const char *end = strchr(p, '}');

		json_str(p, "id", id, sizeof(id));
		json_str(p, "error", err, sizeof(err));
		b.id = id;
		b.level = (uint32_t)json_u64(p, "level");
		b.range_start = (int64_t)json_u64(p, "range_start_ns");
		b.range_end = (int64_t)json_u64(p, "range_end_ns");
		b.bytes = json_u64(p, "bytes");
		b.series = json_u64(p, "series");
		b.profiles = json_u64(p, "profiles");
		b.error = err[0] ? err : NULL;
		if (!b.range_end)
			b.range_end = INT64_MAX;
		print_block(NULL, &b);
		if (!end)
			break;
		p = end;
	}
}

/* What a server with a bucket did with its index (docs/object-storage.md). */
static void print_bucket(const char *b)
{
	static const char *const keys[] = {
		"index_writes", "index_failures", "index_blocks", "index_bytes", "footer_reads",
		"deletion_marks", "deleted_blocks", "delete_failures", "syncs", "sync_failures",
		"discovered_blocks", "unlisted_blocks", "upload_pending",
	};

	if (!b)
		return;
	printf("bucket (this server, since it started)\n");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		printf("  %-18s %12llu\n", keys[i], json_u64(b, keys[i]));
	printf("  %-18s %12.1f s\n", "upload lag", (double)json_u64(b, "upload_lag_ns") / 1e9);
}

static int stats_remote(const char *server, const char *cacert, const char *tenant, int json,
			int blocks)
{
	struct cli_target t = { server, cacert, tenant, 30 };
	struct store_tenant_stats s = { 0 };
	struct buf body;
	int rc;
	const char *bytes;
	char *os;

	buf_init(&body, 1 << 20);
	if ((rc = cli_get("stats", &t, "/api/v1/stats", &body)) != CLI_EXIT_OK) {
		buf_release(&body);
		return rc;
	}
	if (json) {
		fputs(body.data, stdout);
		buf_release(&body);
		return CLI_EXIT_OK;
	}
	/* Our own fixed-layout answer: counts first, then the "bytes" object. */
	s.tenant = tenant ? tenant : WEB_DEFAULT_TENANT;
	s.series = json_u64(body.data, "series");
	s.profiles = json_u64(body.data, "profiles");
	s.samples = json_u64(body.data, "samples");
	s.stacks = json_u64(body.data, "stacks");
	s.locations = json_u64(body.data, "locations");
	s.functions = json_u64(body.data, "functions");
	s.mappings = json_u64(body.data, "mappings");
	s.head_profiles = json_u64(body.data, "head_profiles");
	s.expired_blocks = json_u64(body.data, "expired_blocks");
	s.expired_bytes = json_u64(body.data, "expired_bytes");
	s.expired_profiles = json_u64(body.data, "expired_profiles");
	bytes = strstr(body.data, "\"bytes\":");
	for (int cf = 0; bytes && cf < STORE_CF_COUNT; cf++)
		s.bytes[cf] = json_u64(bytes, store_cf_name(cf));
	bytes = strstr(body.data, "\"blocks\":{");
	if (bytes) {
		s.blocks = json_u64(bytes, "count");
		s.blocks_unreadable = json_u64(bytes, "unreadable");
		s.oldest_ns = (int64_t)json_u64(bytes, "oldest_ns");
		s.newest_ns = (int64_t)json_u64(bytes, "newest_ns");
	}
	print_human(&s);
	print_bucket(strstr(body.data, "\"bucket\":{"));
	/* The block list's scan stops where the server-wide objstore object starts. */
	os = strstr(body.data, ",\"objstore\":{");
	if (os)
		*os = '\0';
	if (blocks && bytes)
		print_remote_blocks(bytes);
	if (os) {
		*os = ',';
		print_remote_objstore(os);
	}
	buf_release(&body);
	return CLI_EXIT_OK;
}

enum { O_DATA = 256, O_SERVER, O_CACERT, O_TENANT, O_JSON, O_BLOCKS, O_HELP };

static const struct option stats_opts[] = {
	{ "data", required_argument, NULL, O_DATA },
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "json", no_argument, NULL, O_JSON },
	{ "blocks", no_argument, NULL, O_BLOCKS },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

int cli_stats(int argc, char **argv)
{
	const char *data = NULL, *server = NULL, *cacert = NULL, *tenant = NULL;
	int json = 0, blocks = 0, c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", stats_opts, NULL)) != -1) {
		switch (c) {
		case O_DATA: data = optarg; break;
		case O_SERVER: server = optarg; break;
		case O_CACERT: cacert = optarg; break;
		case O_TENANT: tenant = optarg; break;
		case O_JSON: json = 1; break;
		case O_BLOCKS: blocks = 1; break;
		case O_HELP: stats_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("stats", argv);
		}
	}
	if (optind < argc)
		return cli_extra_argument("stats", argv);
	if (!!data == !!server)
		return cli_usage_error("stats", "give exactly one of --data DIR or --server URL");
	if (tenant && data)
		return cli_usage_error("stats", "--tenant goes with --server; --data shows all tenants");
	if (cacert && data)
		return cli_usage_error("stats", "--cacert goes with --server");
	return data ? stats_local(data, json, blocks)
		    : stats_remote(server, cacert, tenant, json, blocks);
}
