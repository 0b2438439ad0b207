/*
 * stats.c - `unhex stats`: what a store holds, per tenant, read from the
 * data directory (read-only) or from a running server's /api/v1/stats.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"
#include "storage/storage.h"
#include "web/web.h"

static void stats_help(FILE *f)
{
	fputs("usage: unhex stats --data DIR [--json]\n"
	      "       unhex stats --server URL [--cacert FILE] [--tenant T] [--json]\n"
	      "\n"
	      "Prints per tenant: series, profiles, samples, distinct stacks, locations,\n"
	      "functions, mappings and bytes on disk per column family.  --data opens the\n"
	      "store read-only (all tenants); --server asks GET /api/v1/stats (one tenant),\n"
	      "over http or https (--cacert: PEM CAs to trust instead of the system's).\n",
	      f);
}

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
	};
	char name[64];

	printf("tenant %s\n", s->tenant);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		printf("  %-16s %14llu\n", rows[i].name, (unsigned long long)rows[i].v);
	for (int cf = 0; cf < STORE_CF_COUNT; cf++) {
		snprintf(name, sizeof(name), "bytes %s", store_cf_name(cf));
		printf("  %-16s %14llu\n", name, (unsigned long long)s->bytes[cf]);
		total += s->bytes[cf];
	}
	printf("  %-16s %14llu\n", "bytes total", total);
}

struct collect {
	int json;
	size_t n;
	struct buf out;
	int rc;
};

static int on_tenant(void *ctx, const struct store_tenant_stats *s)
{
	struct collect *c = ctx;

	if (!c->json) {
		print_human(s);
		c->n++;
		return 0;
	}
	if (c->n++)
		c->rc = buf_putc(&c->out, ',');
	if (!c->rc)
		c->rc = web_stats_json(&c->out, s);
	return c->rc;
}

static int stats_local(const char *dir, int json)
{
	struct store_options so = { 0 };
	struct store *st = NULL;
	struct collect c = { .json = json };
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	so.dir = dir;
	so.read_only = 1;
	if (store_open(&so, &st, &msg)) {
		fprintf(stderr, "unhex stats: cannot open %s: %s\n", dir, msg.text);
		return CLI_EXIT_FAIL;
	}
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

static int stats_remote(const char *server, const char *cacert, const char *tenant, int json)
{
	struct cli_server srv;
	struct cli_http *http = NULL;
	struct cli_request req = { .method = "GET", .path = "/api/v1/stats", .tenant = tenant,
				   .timeout_ms = 30000 };
	struct store_tenant_stats s = { 0 };
	struct buf body;
	struct err_msg msg;
	int status = 0, rc;
	const char *bytes;

	err_clear(&msg);
	if (cli_server_parse(server, cacert, &srv, &msg))
		return cli_usage_error("stats", "%s", msg.text);
	buf_init(&body, 1 << 20);
	rc = cli_http_open(&srv, &http, &msg);
	if (!rc)
		rc = cli_http_request(http, &req, &status, &body, &msg);
	cli_http_close(http);
	if (rc || status != 200) {
		if (rc)
			fprintf(stderr, "unhex stats: %s\n", msg.text);
		else
			fprintf(stderr, "unhex stats: HTTP %d: %s", status, body.data ? body.data : "\n");
		buf_release(&body);
		return CLI_EXIT_FAIL;
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
	bytes = strstr(body.data, "\"bytes\":");
	for (int cf = 0; bytes && cf < STORE_CF_COUNT; cf++)
		s.bytes[cf] = json_u64(bytes, store_cf_name(cf));
	print_human(&s);
	buf_release(&body);
	return CLI_EXIT_OK;
}

enum { O_DATA = 256, O_SERVER, O_CACERT, O_TENANT, O_JSON, O_HELP };

static const struct option stats_opts[] = {
	{ "data", required_argument, NULL, O_DATA },
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "json", no_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

int cli_stats(int argc, char **argv)
{
	const char *data = NULL, *server = NULL, *cacert = NULL, *tenant = NULL;
	int json = 0, c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", stats_opts, NULL)) != -1) {
		switch (c) {
		case O_DATA: data = optarg; break;
		case O_SERVER: server = optarg; break;
		case O_CACERT: cacert = optarg; break;
		case O_TENANT: tenant = optarg; break;
		case O_JSON: json = 1; break;
		case O_HELP: stats_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_usage_error("stats", "unknown or incomplete option \"%s\"",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("stats", "unexpected argument \"%s\"", argv[optind]);
	if (!!data == !!server)
		return cli_usage_error("stats", "give exactly one of --data DIR or --server URL");
	if (tenant && data)
		return cli_usage_error("stats", "--tenant goes with --server; --data shows all tenants");
	if (cacert && data)
		return cli_usage_error("stats", "--cacert goes with --server");
	return data ? stats_local(data, json) : stats_remote(server, cacert, tenant, json);
}
