/*
 * ingest_cmd.c - `unhex ingest`: POST pprof files to a server's /ingest,
 * one request per file, with progress and a summary.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"

#define FILE_MAX (1ULL << 30)
#define RESPONSE_MAX (1 << 20)

static void ingest_help(FILE *f)
{
	fputs("usage: unhex ingest --server URL --name NAME [options] FILE...\n"
	      "\n"
	      "Sends each pprof FILE (gzipped or raw) to URL/ingest?name=NAME&format=pprof.\n"
	      "\n"
	      "  --server URL     e.g. http://127.0.0.1:4040 or https://unhex.example.org\n"
	      "  --cacert FILE    PEM CA certificates to trust for https instead of the system's\n"
	      "  --name NAME      Pyroscope application name, e.g. 'app.cpu{env=prod}'\n"
	      "  --tenant T       X-Scope-OrgID (default: none, the server uses anonymous)\n"
	      "  --from UNIX      profile time when the pprof has none (Unix seconds)\n"
	      "  --timeout S      seconds per request (default 60)\n"
	      "\n"
	      "Exit status: 0 when every file was accepted, 1 otherwise, 2 on usage errors.\n",
	      f);
}

struct ingest_args {
	const char *server;
	const char *name;
	const char *tenant;
	const char *from;
	const char *cacert;
	int timeout_ms;
	struct cli_server srv;
	struct cli_http *http; /* owned */
};

/* Reads a number after `"key":` in our own flat JSON answers; 0 if absent. */
static unsigned long long json_u64(const char *body, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = body ? strstr(body, pat) : NULL;
	return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

static int build_path(const struct ingest_args *a, struct buf *path)
{
	int rc = buf_puts(path, "/ingest?name=");

	if (!rc)
		rc = cli_url_encode(path, a->name);
	if (!rc)
		rc = buf_puts(path, "&format=pprof");
	if (!rc && a->from) {
		rc = buf_puts(path, "&from=");
		if (!rc)
			rc = cli_url_encode(path, a->from);
	}
	return rc;
}

/* Sends one file; prints the failure and returns non-zero when it was not accepted. */
static int send_file(const struct ingest_args *a, const char *path, const char *file,
		     unsigned long long *profiles, unsigned long long *samples, size_t *bytes)
{
	struct cli_request req = { 0 };
	struct buf data, resp;
	struct err_msg msg;
	int status = 0, rc;

	err_clear(&msg);
	buf_init(&data, FILE_MAX);
	buf_init(&resp, RESPONSE_MAX);
	rc = cli_read_file(file, &data, &msg);
	if (!rc) {
		*bytes += data.len;
		req.method = "POST";
		req.path = path;
		req.tenant = a->tenant;
		req.content_type = "application/octet-stream";
		req.body = data.data;
		req.len = data.len;
		req.timeout_ms = a->timeout_ms;
		rc = cli_http_request(a->http, &req, &status, &resp, &msg);
	}
	if (rc) {
		fprintf(stderr, "unhex ingest: %s: %s\n", file, msg.text);
	} else if (status != 200) {
		size_t n = resp.len;

		while (n > 0 && (resp.data[n - 1] == '\n' || resp.data[n - 1] == '\r'))
			n--;
		fprintf(stderr, "unhex ingest: %s: HTTP %d: %.*s\n", file, status, (int)n,
			resp.data ? resp.data : "");
		rc = ERR_INVALID;
	} else {
		*profiles += json_u64(resp.data, "profiles");
		*samples += json_u64(resp.data, "samples");
	}
	buf_release(&data);
	buf_release(&resp);
	return rc;
}

static void progress(size_t i, size_t n, size_t bytes, int tty, size_t *last_decile)
{
	double mib = (double)bytes / (1024.0 * 1024.0);

	if (n < 2)
		return;
	if (tty) {
		fprintf(stderr, "\r[%zu/%zu] %.1f MiB", i, n, mib);
		if (i == n)
			fputc('\n', stderr);
		return;
	}
	if (i * 10 / n > *last_decile || i == n) {
		*last_decile = i * 10 / n;
		fprintf(stderr, "[%zu/%zu] %.1f MiB\n", i, n, mib);
	}
}

enum { O_SERVER = 256, O_CACERT, O_NAME, O_TENANT, O_FROM, O_TIMEOUT, O_HELP };

static const struct option ingest_opts[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "name", required_argument, NULL, O_NAME },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "from", required_argument, NULL, O_FROM },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

static int parse_ingest(int argc, char **argv, struct ingest_args *a)
{
	struct err_msg msg;
	uint64_t v;
	int c, rc;

	a->timeout_ms = 60000;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", ingest_opts, NULL)) != -1) {
		switch (c) {
		case O_SERVER: a->server = optarg; break;
		case O_CACERT: a->cacert = optarg; break;
		case O_NAME: a->name = optarg; break;
		case O_TENANT: a->tenant = optarg; break;
		case O_FROM:
			if (cli_parse_u64(optarg, &v))
				return cli_usage_error("ingest", "--from: \"%s\" is not Unix seconds",
						       optarg);
			a->from = optarg;
			break;
		case O_TIMEOUT:
			if ((rc = cli_parse_timeout("ingest", optarg, &v)))
				return rc;
			a->timeout_ms = (int)v * 1000;
			break;
		case O_HELP: ingest_help(stdout); return -1;
		default:
			return cli_bad_option("ingest", argv);
		}
	}
	if (!a->server)
		return cli_usage_error("ingest", "--server URL is required");
	if (!a->name || !*a->name)
		return cli_usage_error("ingest", "--name NAME is required");
	if (optind >= argc)
		return cli_usage_error("ingest", "no FILE given");
	err_clear(&msg);
	if (cli_server_parse(a->server, a->cacert, &a->srv, &msg))
		return cli_usage_error("ingest", "%s", msg.text);
	return 0;
}

int cli_ingest(int argc, char **argv)
{
	struct ingest_args a = { 0 };
	struct err_msg msg;
	struct buf path;
	unsigned long long profiles = 0, samples = 0;
	size_t bytes = 0, failed = 0, n, last_decile = 0;
	int tty = isatty(STDERR_FILENO), rc;

	err_clear(&msg);
	rc = parse_ingest(argc, argv, &a);
	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	buf_init(&path, 1 << 16);
	if (build_path(&a, &path)) {
		buf_release(&path);
		return cli_usage_error("ingest", "--name is too long");
	}
	if (cli_http_open(&a.srv, &a.http, &msg)) {
		fprintf(stderr, "unhex ingest: %s\n", msg.text);
		buf_release(&path);
		return CLI_EXIT_FAIL;
	}
	n = (size_t)(argc - optind);
	for (size_t i = 0; i < n; i++) {
		if (send_file(&a, path.data, argv[optind + (int)i], &profiles, &samples, &bytes))
			failed++;
		progress(i + 1, n, bytes, tty, &last_decile);
	}
	cli_http_close(a.http);
	buf_release(&path);
	printf("unhex ingest: %zu of %zu files accepted (%.1f MiB): %llu profiles, %llu samples\n",
	       n - failed, n, (double)bytes / (1024.0 * 1024.0), profiles, samples);
	if (failed)
		printf("unhex ingest: %zu failed\n", failed);
	return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
