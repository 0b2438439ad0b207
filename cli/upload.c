/*
 * upload.c - `unhex upload`: sends debug files (unstripped binaries or
 * `objcopy --only-keep-debug` files) to a server, keyed by the GNU build ID
 * read locally, skipping those the server already has.  The file is
 * streamed from disk, never read whole, so a progress bar can follow it on
 * a terminal; the server checks everything again.  With --perf-map it
 * sends a JIT runtime's perf map instead, for one process.
 *
 * Exit status: 0 when every file is uploaded or already present, 1 when any
 * failed, 2 on usage errors.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/perfmap.h"
#include "cli.h"
#include "symbolize/symbolize.h"

#define RESPONSE_MAX (1 << 20)

static void upload_help(FILE *f)
{
	fputs("usage: unhex upload [options] FILE...\n"
	      "       unhex upload [options] --kallsyms MAP --build-id ID\n"
	      "       unhex upload [options] --perf-map MAP [--pid PID]\n"
	      "\n"
	      "Uploads each ELF FILE (an unstripped binary or a .debug file from\n"
	      "objcopy --only-keep-debug) to URL/api/v1/debuginfo/<build ID>, unless the\n"
	      "server already has that build ID.\n"
	      "\n"
	      "  --server URL     default http://127.0.0.1:4040; https:// works too\n"
	      "  --cacert FILE    PEM CA certificates to trust for https instead of the system's\n"
	      "  --token T        sent as \"Authorization: Bearer T\"; visible in ps: prefer\n"
	      "                   $UNHEX_TOKEN_FILE or $UNHEX_TOKEN (docs/cli.md)\n"
	      "  --tenant T       X-Scope-OrgID: the tenant the files are for\n"
	      "  --type KIND      debuginfo (default) or executable\n"
	      "  --kallsyms MAP   upload the kernel symbol map MAP (/proc/kallsyms read as\n"
	      "                   root, or a System.map) for the kernel with build ID\n"
	      "  --build-id ID    (perf buildid-list -k, or /sys/kernel/notes)\n"
	      "  --force          upload even when the server has the build ID, replacing\n"
	      "                   other bytes it holds (needs a token with the admin scope)\n"
	      "  --timeout S      seconds per file (default 600)\n"
	      "  --perf-map MAP   upload MAP, a JIT runtime's /tmp/perf-PID.map, to\n"
	      "                   URL/api/v1/perfmap/PID: it names the process's JIT frames\n"
	      "  --pid PID        the process MAP belongs to (default: from the name)\n"
	      "\n"
	      "Exit status: 0 when every file is uploaded or already present, 1 otherwise,\n"
	      "2 on usage errors.\n",
	      f);
}

struct upload_args {
	const char *token;
	const char *tenant;
	const char *type;
	const char *build_id; /* of --kallsyms */
	int force;
	int timeout_ms;
	const char *perf_map;
	uint32_t pid;
	struct cli_server srv;
	struct cli_http *http; /* owned */
	int tty;
};

static void bar(const char *name, uint64_t done, uint64_t total)
{
	int width = 30, fill = total ? (int)(done * (uint64_t)width / total) : width;
	char b[64];

	for (int i = 0; i < width; i++)
		b[i] = i < fill ? '=' : i == fill ? '>' : ' ';
	b[width] = '\0';
	fprintf(stderr, "\r%.40s [%s] %3d%% %.1f MiB", name, b,
		total ? (int)(done * 100 / total) : 100, (double)done / (1024.0 * 1024.0));
}

static void on_progress(void *arg, uint64_t sent, uint64_t total)
{
	bar(arg, sent, total);
}

/* POSTs `size` bytes of the open file `f`, streamed. */
static int post_file(const struct upload_args *a, const char *file, const char *path, FILE *f,
		     uint64_t size, int *status, struct buf *resp, struct err_msg *msg)
{
	struct cli_request req = { 0 };
	int rc;

	req.method = "POST";
	req.path = path;
	req.tenant = a->tenant;
	req.token = a->token;
	req.content_type = "application/octet-stream";
	req.body_file = f;
	req.len = size;
	req.timeout_ms = a->timeout_ms;
	if (a->tty) {
		req.progress = on_progress;
		req.progress_arg = (void *)file;
	}
	rc = cli_http_request(a->http, &req, status, resp, msg);
	if (a->tty)
		fputc('\n', stderr);
	return rc;
}

static int get(const struct upload_args *a, const char *path, int *status, struct buf *resp,
	       struct err_msg *msg)
{
	struct cli_request req = { 0 };

	req.method = "GET";
	req.path = path;
	req.tenant = a->tenant;
	req.token = a->token;
	req.timeout_ms = 30000;
	return cli_http_request(a->http, &req, status, resp, msg);
}

static void trim(struct buf *b)
{
	while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r'))
		b->data[--b->len] = '\0';
}

/*
 * The outcome of an upload request for `file`: the request's failure `rc`
 * (its message printed), ERR_INVALID with the server's answer printed when
 * `status` is neither 201 nor (if `accept_200`) 200, else 0.  Trims resp.
 */
static int answered(const char *file, int rc, int status, int accept_200, struct buf *resp,
		    const struct err_msg *msg)
{
	if (rc) {
		fprintf(stderr, "unhex upload: %s: %s\n", file, msg->text);
		return rc;
	}
	trim(resp);
	if (status != 201 && !(accept_200 && status == 200)) {
		fprintf(stderr, "unhex upload: %s: HTTP %d: %s\n", file, status,
			resp->data ? resp->data : "");
		return ERR_INVALID;
	}
	return 0;
}

/* Uploads one file; 0 when it is on the server afterwards. */
static int upload_one(const struct upload_args *a, const char *file)
{
	struct sym_elf_info info;
	struct err_msg msg;
	struct buf resp;
	char id[2 * SYM_BUILD_ID_MAX + 1], path[512], want[64];
	struct stat sb;
	FILE *f = NULL;
	int status = 0, rc;

	err_clear(&msg);
	buf_init(&resp, RESPONSE_MAX);
	rc = sym_elf_inspect_file(file, &info, &msg);
	if (rc) {
		fprintf(stderr, "unhex upload: %s: not an ELF file we can use: %s\n", file, msg.text);
		goto out;
	}
	if (!info.build_id_len) {
		fprintf(stderr, "unhex upload: %s: has no GNU build ID (link with -Wl,--build-id)\n",
			file);
		rc = ERR_INVALID;
		goto out;
	}
	sym_build_id_hex(info.build_id, info.build_id_len, id);
	snprintf(path, sizeof(path), "/api/v1/debuginfo/%s", id);
	if (!a->force) {
		rc = get(a, path, &status, &resp, &msg);
		if (rc) {
			fprintf(stderr, "unhex upload: %s: %s\n", file, msg.text);
			goto out;
		}
		snprintf(want, sizeof(want), "\"%s\":true", a->type);
		if (status == 200 && strstr(resp.data ? resp.data : "", want) &&
		    strstr(resp.data, "\"status\":\"ok\"")) {
			printf("%s: %s already uploaded\n", file, id);
			goto out;
		}
		buf_reset(&resp);
	}
	f = fopen(file, "rbe");
	if (!f || fstat(fileno(f), &sb)) {
		fprintf(stderr, "unhex upload: %s: %s\n", file, strerror(errno));
		rc = ERR_IO;
		goto out;
	}
	/* --force replaces what the server holds (its admin scope decides). */
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s",
		 strcmp(a->type, "executable") == 0 ? "?type=executable" : "",
		 !a->force ? "" : strcmp(a->type, "executable") == 0 ? "&replace=true"
								       : "?replace=true");
	rc = post_file(a, file, path, f, (uint64_t)sb.st_size, &status, &resp, &msg);
	rc = answered(file, rc, status, 1, &resp, &msg);
	if (rc)
		goto out;
	printf("%s: %s %s (%lld bytes)\n", file, id, status == 201 ? "uploaded" : "unchanged",
	       (long long)sb.st_size);
out:
	if (f)
		fclose(f);
	buf_release(&resp);
	return rc;
}

/*
 * Uploads a kernel symbol map for the build ID the user names (the map has
 * none).  /proc/kallsyms has no size until read, so it is read whole (it is
 * capped) and checked here first, for an answer that names the bad line
 * without a round trip.
 */
static int upload_kallsyms(const struct upload_args *a, const char *file)
{
	struct err_msg msg;
	struct buf map, resp;
	char path[512], id[2 * SYM_BUILD_ID_MAX + 1];
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t blen;
	int status = 0, rc;
	struct cli_request req = { 0 };

	err_clear(&msg);
	buf_init(&map, SYM_KALLSYMS_MAX_BYTES);
	buf_init(&resp, RESPONSE_MAX);
	if (sym_build_id_parse(a->build_id, bid, &blen) || !blen) {
		fprintf(stderr, "unhex upload: --build-id \"%s\" is not a hex build ID\n",
			a->build_id);
		rc = ERR_INVALID;
		goto out;
	}
	rc = buf_read_file(&map, file);
	if (rc) {
		fprintf(stderr, "unhex upload: %s: %s\n", file,
			rc == ERR_TOO_LARGE ? "larger than a kernel symbol map can be"
					    : strerror(errno));
		goto out;
	}
	if ((rc = sym_kallsyms_check(map.data, map.len, NULL, &msg))) {
		fprintf(stderr, "unhex upload: %s: not a kernel symbol map: %s\n", file, msg.text);
		goto out;
	}
	sym_build_id_hex(bid, blen, id);
	snprintf(path, sizeof(path), "/api/v1/debuginfo/%s?type=kallsyms%s", id,
		 a->force ? "&replace=true" : "");
	req.method = "POST";
	req.path = path;
	req.tenant = a->tenant;
	req.token = a->token;
	req.content_type = "text/plain";
	req.body = map.data;
	req.len = map.len;
	req.timeout_ms = a->timeout_ms;
	rc = cli_http_request(a->http, &req, &status, &resp, &msg);
	rc = answered(file, rc, status, 1, &resp, &msg);
	if (rc)
		goto out;
	printf("%s: kernel symbols of %s %s (%zu bytes)\n", file, id,
	       status == 201 ? "uploaded" : "unchanged", map.len);
out:
	buf_release(&map);
	buf_release(&resp);
	return rc;
}

/* Uploads a perf map for process a->pid; 0 when the server stored it. */
static int upload_perf_map(const struct upload_args *a)
{
	struct err_msg msg;
	struct buf resp;
	struct stat sb;
	char path[64];
	FILE *f;
	int status = 0, rc;

	err_clear(&msg);
	buf_init(&resp, RESPONSE_MAX);
	f = fopen(a->perf_map, "rbe");
	if (!f || fstat(fileno(f), &sb)) {
		fprintf(stderr, "unhex upload: %s: %s\n", a->perf_map, strerror(errno));
		rc = ERR_IO;
		goto out;
	}
	snprintf(path, sizeof(path), "/api/v1/perfmap/%u", a->pid);
	rc = post_file(a, a->perf_map, path, f, (uint64_t)sb.st_size, &status, &resp, &msg);
	rc = answered(a->perf_map, rc, status, 0, &resp, &msg);
	if (rc)
		goto out;
	printf("%s: perf map of process %u uploaded: %s\n", a->perf_map, a->pid, resp.data);
out:
	if (f)
		fclose(f);
	buf_release(&resp);
	return rc;
}

enum { O_SERVER = 256, O_CACERT, O_TOKEN, O_TENANT, O_TYPE, O_FORCE, O_TIMEOUT, O_HELP,
       O_KALLSYMS, O_BUILD_ID, O_PERF_MAP, O_PID };

static const struct option upload_opts[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "token", required_argument, NULL, O_TOKEN },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "type", required_argument, NULL, O_TYPE },
	{ "force", no_argument, NULL, O_FORCE },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "kallsyms", required_argument, NULL, O_KALLSYMS },
	{ "build-id", required_argument, NULL, O_BUILD_ID },
	{ "perf-map", required_argument, NULL, O_PERF_MAP },
	{ "pid", required_argument, NULL, O_PID },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

int cli_upload(int argc, char **argv)
{
	struct upload_args a = { 0 };
	const char *server = "http://127.0.0.1:4040", *cacert = NULL, *kallsyms = NULL;
	struct err_msg msg;
	size_t failed = 0;
	uint64_t secs;
	int c, rc;

	a.type = "debuginfo";
	a.timeout_ms = 600000;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", upload_opts, NULL)) != -1) {
		switch (c) {
		case O_SERVER: server = optarg; break;
		case O_CACERT: cacert = optarg; break;
		case O_TOKEN: a.token = optarg; break;
		case O_TENANT: a.tenant = optarg; break;
		case O_FORCE: a.force = 1; break;
		case O_KALLSYMS: kallsyms = optarg; break;
		case O_BUILD_ID: a.build_id = optarg; break;
		case O_PERF_MAP: a.perf_map = optarg; break;
		case O_PID:
			if (cli_parse_u64(optarg, &secs) || secs == 0 || secs > INT32_MAX)
				return cli_usage_error("upload", "--pid: \"%s\" is not 1..%d", optarg,
						       INT32_MAX);
			a.pid = (uint32_t)secs;
			break;
		case O_HELP: upload_help(stdout); return CLI_EXIT_OK;
		case O_TYPE:
			if (strcmp(optarg, "debuginfo") && strcmp(optarg, "executable"))
				return cli_usage_error("upload", "--type: \"%s\" is not debuginfo or "
							 "executable", optarg);
			a.type = optarg;
			break;
		case O_TIMEOUT:
			if ((rc = cli_parse_timeout("upload", optarg, &secs)))
				return rc;
			a.timeout_ms = (int)secs * 1000;
			break;
		default:
			return cli_bad_option("upload", argv);
		}
	}
	if (!kallsyms != !a.build_id)
		return cli_usage_error("upload", "--kallsyms and --build-id go together");
	if (kallsyms && optind < argc)
		return cli_usage_error("upload", "--kallsyms takes no FILE arguments");
	if (a.perf_map && (optind < argc || kallsyms))
		return cli_usage_error("upload", "--perf-map: give no FILE and no --kallsyms");
	if (a.pid && !a.perf_map)
		return cli_usage_error("upload", "--pid goes with --perf-map");
	if (a.perf_map && !a.pid && !perfmap_pid_of(a.perf_map, &a.pid))
		return cli_usage_error("upload", "--perf-map: %s is not named perf-PID.map: "
				       "give --pid", a.perf_map);
	if (!kallsyms && !a.perf_map && optind >= argc)
		return cli_usage_error("upload", "no FILE given");
	if (a.token && (strchr(a.token, '\r') || strchr(a.token, '\n')))
		return cli_usage_error("upload", "--token: must not contain line breaks");
	if (a.tenant && (strchr(a.tenant, '\r') || strchr(a.tenant, '\n')))
		return cli_usage_error("upload", "--tenant: must not contain line breaks");
	err_clear(&msg);
	if (cli_server_parse(server, cacert, &a.srv, &msg))
		return cli_usage_error("upload", "%s", msg.text);
	if (cli_http_open(&a.srv, &a.http, &msg)) {
		fprintf(stderr, "unhex upload: %s\n", msg.text);
		return CLI_EXIT_FAIL;
	}
	a.tty = isatty(STDERR_FILENO);
	if (a.perf_map) {
		failed = upload_perf_map(&a) != 0;
		cli_http_close(a.http);
		return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	}
	if (kallsyms)
		failed = upload_kallsyms(&a, kallsyms) != 0;
	for (int i = optind; i < argc; i++)
		if (upload_one(&a, argv[i]))
			failed++;
	cli_http_close(a.http);
	if (failed && !kallsyms)
		fprintf(stderr, "unhex upload: %zu of %d files failed\n", failed, argc - optind);
	return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
