/*
 * ingest_cmd.c - `unhex ingest`: POST pprof files to a server's /ingest,
 * one request per file, or with --batch N through push.v1, N files of the
 * series per PushRequest; with progress and a summary.
 */
#include <assert.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "cli.h"
#include "ingest/ingest.h"
#include "storage/storage.h"

#include "push.pb-c.h"

#define FILE_MAX (1ULL << 30)
#define RESPONSE_MAX (1 << 20)
/* --batch: at most the server's default profiles per request, and a
 * request body of at most half its default 32 MiB body limit (a batch is
 * cut before the file that would pass it; a larger single file goes alone). */
#define BATCH_MAX 1024
#define BATCH_BYTES ((size_t)16 << 20)
#define PUSH_PATH "/push.v1.PusherService/Push"

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
	      "  --batch N        send N files per request through push.v1 (1..1024, default 1:\n"
	      "                   one /ingest request per file); the series get the labels\n"
	      "                   /ingest gives NAME, and --from does not apply\n"
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
	size_t batch;
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

/* Prints a refused request's answer: its HTTP status and body, trimmed. */
static void refused(const char *what, int status, const struct buf *resp)
{
	size_t n = resp->len;

	while (n > 0 && (resp->data[n - 1] == '\n' || resp->data[n - 1] == '\r'))
		n--;
	fprintf(stderr, "unhex ingest: %s: HTTP %d: %.*s\n", what, status, (int)n,
		resp->data ? resp->data : "");
}

/*
 * cli_http_request, retried while the server answers 503 (server busy:
 * its in-flight memory or a slot is taken, docs/operations.md) or 429 (a
 * tenant's rate, docs/limits.md): both say "retry shortly" with
 * Retry-After: 1.  Waits 1, 2, 4, 4... seconds, RETRIES times at most, then
 * returns the last answer.
 */
#define RETRIES 8
static int request_retrying(const struct ingest_args *a, const struct cli_request *req,
			    int *status, struct buf *resp, struct err_msg *msg)
{
	unsigned wait_s = 1;
	int rc;

	for (int attempt = 0;; attempt++) {
		buf_reset(resp);
		rc = cli_http_request(a->http, req, status, resp, msg);
		if (rc || (*status != 503 && *status != 429) || attempt == RETRIES)
			return rc;
		sleep(wait_s);
		if (wait_s < 4)
			wait_s *= 2;
	}
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
		rc = request_retrying(a, &req, &status, &resp, &msg);
	}
	if (rc) {
		fprintf(stderr, "unhex ingest: %s: %s\n", file, msg.text);
	} else if (status != 200) {
		refused(file, status, &resp);
		rc = ERR_INVALID;
	} else {
		*profiles += json_u64(resp.data, "profiles");
		*samples += json_u64(resp.data, "samples");
	}
	buf_release(&data);
	buf_release(&resp);
	return rc;
}

/* One PushRequest being filled: the series' labels, and the files read. */
struct batch {
	Push__V1__LabelPair *lp;
	Push__V1__LabelPair **lpp;
	size_t n_labels;
	struct buf files[BATCH_MAX];
	Push__V1__RawSample rs[BATCH_MAX];
	Push__V1__RawSample *rsp[BATCH_MAX];
};

/* The series' labels, as /ingest would give NAME. */
static int batch_labels(struct batch *b, struct arena *a, const char *name, struct err_msg *msg)
{
	struct store_label *l;
	size_t n;
	int rc = ingest_legacy_labels(a, name, &l, &n, msg);

	if (rc)
		return rc;
	b->lp = calloc(n ? n : 1, sizeof(*b->lp));
	b->lpp = calloc(n ? n : 1, sizeof(*b->lpp));
	if (!b->lp || !b->lpp)
		return err_set(msg, ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		push__v1__label_pair__init(&b->lp[i]);
		b->lp[i].name = (char *)l[i].name;
		b->lp[i].value = (char *)l[i].value;
		b->lpp[i] = &b->lp[i];
	}
	b->n_labels = n;
	return 0;
}

/*
 * Sends files [0, k) of `files` (read into b->files) as one PushRequest;
 * returns 0 when the server took them all, else prints why.
 */
static int send_batch(const struct ingest_args *a, struct batch *b, char *const *files, size_t k)
{
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries ser = PUSH__V1__RAW_PROFILE_SERIES__INIT;
	Push__V1__RawProfileSeries *serp = &ser;
	struct cli_request hr = { 0 };
	struct err_msg msg;
	struct buf resp;
	uint8_t *body;
	size_t len;
	int status = 0, rc;
	char what[64];

	assert(k > 0 && k <= BATCH_MAX);
	for (size_t i = 0; i < k; i++) {
		push__v1__raw_sample__init(&b->rs[i]);
		b->rs[i].raw_profile.data = (uint8_t *)b->files[i].data;
		b->rs[i].raw_profile.len = b->files[i].len;
		b->rsp[i] = &b->rs[i];
	}
	ser.n_labels = b->n_labels;
	ser.labels = b->lpp;
	ser.n_samples = k;
	ser.samples = b->rsp;
	req.n_series = 1;
	req.series = &serp;
	snprintf(what, sizeof(what), "%zu files from %.32s", k, files[0]);
	len = push__v1__push_request__get_packed_size(&req);
	if (!(body = malloc(len ? len : 1))) {
		fprintf(stderr, "unhex ingest: %s: out of memory\n", what);
		return ERR_NOMEM;
	}
	push__v1__push_request__pack(&req, body);
	err_clear(&msg);
	buf_init(&resp, RESPONSE_MAX);
	hr.method = "POST";
	hr.path = PUSH_PATH;
	hr.tenant = a->tenant;
	hr.content_type = "application/proto";
	hr.body = body;
	hr.len = len;
	hr.timeout_ms = a->timeout_ms;
	rc = request_retrying(a, &hr, &status, &resp, &msg);
	if (rc)
		fprintf(stderr, "unhex ingest: %s: %s\n", what, msg.text);
	else if (status != 200)
		refused(what, status, &resp);
	free(body);
	buf_release(&resp);
	return rc ? rc : status != 200 ? ERR_INVALID : 0;
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

enum { O_SERVER = 256, O_CACERT, O_NAME, O_TENANT, O_FROM, O_TIMEOUT, O_BATCH, O_HELP };

static const struct option ingest_opts[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "name", required_argument, NULL, O_NAME },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "from", required_argument, NULL, O_FROM },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

static int parse_ingest(int argc, char **argv, struct ingest_args *a)
{
	struct err_msg msg;
	uint64_t v;
	int c, rc;

	a->timeout_ms = 60000;
	a->batch = 1;
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
		case O_BATCH:
			if (cli_parse_u64(optarg, &v) || v < 1 || v > BATCH_MAX)
				return cli_usage_error("ingest", "--batch: \"%s\" is not 1..%d", optarg,
						       BATCH_MAX);
			a->batch = (size_t)v;
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
	if (a->batch > 1 && a->from)
		return cli_usage_error("ingest", "--from needs --batch 1: a push.v1 request has "
				       "no default time for pprofs without one");
	err_clear(&msg);
	if (cli_server_parse(a->server, a->cacert, &a->srv, &msg))
		return cli_usage_error("ingest", "%s", msg.text);
	return 0;
}

/*
 * --batch: the files in PushRequests of at most a->batch files and
 * BATCH_BYTES of body; returns how many files were not accepted, and
 * counts the requests sent in *requests.
 */
static size_t push_all(const struct ingest_args *a, char *const *files, size_t n, int tty,
		       size_t *bytes, size_t *requests)
{
	struct batch *b = calloc(1, sizeof(*b));
	struct arena ar;
	struct err_msg msg;
	size_t failed = 0, last_decile = 0, i = 0;

	err_clear(&msg);
	arena_init(&ar, 1 << 20);
	if (!b || batch_labels(b, &ar, a->name, &msg)) {
		fprintf(stderr, "unhex ingest: --name: %s\n", b ? msg.text : "out of memory");
		failed = n;
		goto out;
	}
	for (size_t k = 0; k < BATCH_MAX; k++)
		buf_init(&b->files[k], FILE_MAX);
	while (i < n) {
		size_t k = 0, size = 0;
		struct stat st;

		while (i < n && k < a->batch) {
			/* A file that would take the body past BATCH_BYTES starts the next one. */
			if (k && !stat(files[i], &st) && size + (uint64_t)st.st_size > BATCH_BYTES)
				break;
			buf_reset(&b->files[k]);
			if (cli_read_file(files[i], &b->files[k], &msg)) {
				fprintf(stderr, "unhex ingest: %s: %s\n", files[i], msg.text);
				failed++;
				i++;
				continue;
			}
			size += b->files[k].len;
			k++;
			i++;
		}
		if (k) {
			(*requests)++;
			if (send_batch(a, b, files + i - k, k))
				failed += k;
			*bytes += size;
		}
		progress(i, n, *bytes, tty, &last_decile);
	}
	for (size_t k = 0; k < BATCH_MAX; k++)
		buf_release(&b->files[k]);
out:
	if (b) {
		free(b->lp);
		free(b->lpp);
	}
	free(b);
	arena_release(&ar);
	return failed;
}

int cli_ingest(int argc, char **argv)
{
	struct ingest_args a = { 0 };
	struct err_msg msg;
	struct buf path;
	unsigned long long profiles = 0, samples = 0;
	size_t bytes = 0, failed = 0, n, last_decile = 0, requests = 0;
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
	if (a.batch > 1)
		failed = push_all(&a, argv + optind, n, tty, &bytes, &requests);
	for (size_t i = 0; a.batch == 1 && i < n; i++) {
		if (send_file(&a, path.data, argv[optind + (int)i], &profiles, &samples, &bytes))
			failed++;
		progress(i + 1, n, bytes, tty, &last_decile);
	}
	cli_http_close(a.http);
	buf_release(&path);
	if (a.batch > 1)
		/* A PushResponse is empty: the server does not count back. */
		printf("unhex ingest: %zu of %zu files accepted (%.1f MiB) in %zu push.v1 "
		       "requests\n", n - failed, n, (double)bytes / (1024.0 * 1024.0), requests);
	else
		printf("unhex ingest: %zu of %zu files accepted (%.1f MiB): %llu profiles, %llu "
		       "samples\n", n - failed, n, (double)bytes / (1024.0 * 1024.0), profiles,
		       samples);
	if (failed)
		printf("unhex ingest: %zu failed\n", failed);
	return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
