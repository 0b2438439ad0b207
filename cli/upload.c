/*
 * upload.c - `unhex upload`: sends debug files (unstripped binaries or
 * `objcopy --only-keep-debug` files) to a server, keyed by the GNU build ID
 * read locally, skipping those the server already has.  The file is
 * streamed from an mmap over one HTTP/1.1 connection, so a progress bar can
 * follow it on a terminal; the server checks everything again.
 *
 * Exit status: 0 when every file is uploaded or already present, 1 when any
 * failed, 2 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "cli/cli.h"
#include "symbolize/symbolize.h"
#include "web/web.h"

#define SEND_CHUNK (256 * 1024)
#define RESPONSE_MAX (1 << 20)

static void upload_help(FILE *f)
{
	fputs("usage: unhex upload [options] FILE...\n"
	      "\n"
	      "Uploads each ELF FILE (an unstripped binary or a .debug file from\n"
	      "objcopy --only-keep-debug) to URL/api/v1/debuginfo/<build ID>, unless the\n"
	      "server already has that build ID.\n"
	      "\n"
	      "  --server URL     default http://127.0.0.1:4040 (http only)\n"
	      "  --token T        sent as \"Authorization: Bearer T\" (serve --upload-token)\n"
	      "  --tenant T       X-Scope-OrgID (debug info itself is global)\n"
	      "  --type KIND      debuginfo (default) or executable\n"
	      "  --force          upload even when the server has the build ID\n"
	      "  --timeout S      seconds per file (default 600)\n"
	      "\n"
	      "Exit status: 0 when every file is uploaded or already present, 1 otherwise,\n"
	      "2 on usage errors.\n",
	      f);
}

struct upload_args {
	const char *token;
	const char *tenant;
	const char *type;
	int force;
	int timeout_ms;
	struct web_url url;
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

static int dial(const struct web_url *u, struct err_msg *msg)
{
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	char port[16];
	int fd = -1, rc;

	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", u->port);
	rc = getaddrinfo(u->host, port, &hints, &res);
	if (rc)
		return err_set(msg, ERR_UNAVAILABLE, "cannot resolve %s: %s", u->host,
			       gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return err_set(msg, ERR_UNAVAILABLE, "cannot connect to %s:%d: %s", u->host, u->port,
			       strerror(errno));
	return fd;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline, struct err_msg *msg)
{
	while (n) {
		struct pollfd pfd = { fd, POLLOUT, 0 };
		int64_t left = (deadline - clock_mono_ns()) / 1000000;
		ssize_t w;

		if (left <= 0 || poll(&pfd, 1, (int)(left > 60000 ? 60000 : left)) <= 0)
			return err_set(msg, ERR_TIMEOUT, "sending timed out");
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return err_set(msg, ERR_UNAVAILABLE, "connection closed while sending: %s",
				       strerror(errno));
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads the whole response (Connection: close) and parses the status line. */
static int recv_response(int fd, int64_t deadline, int *status, struct buf *body,
			 struct err_msg *msg)
{
	struct buf raw;
	char chunk[4096];
	const char *sep;
	int rc = 0;

	buf_init(&raw, RESPONSE_MAX);
	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		int64_t left = (deadline - clock_mono_ns()) / 1000000;
		ssize_t r;

		if (left <= 0 || poll(&pfd, 1, (int)(left > 60000 ? 60000 : left)) <= 0) {
			rc = err_set(msg, ERR_TIMEOUT, "no response in time");
			break;
		}
		r = recv(fd, chunk, sizeof(chunk), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if ((rc = buf_append(&raw, chunk, (size_t)r))) {
			err_set(msg, rc, "response larger than %d bytes", RESPONSE_MAX);
			break;
		}
	}
	if (!rc && (raw.len < 12 || strncmp(raw.data, "HTTP/1.", 7) != 0 ||
		    !(sep = strstr(raw.data, "\r\n\r\n"))))
		rc = err_set(msg, ERR_INVALID, "not an HTTP response");
	if (!rc) {
		*status = atoi(raw.data + 9);
		rc = buf_append(body, sep + 4, raw.len - (size_t)(sep + 4 - raw.data));
	}
	buf_release(&raw);
	return rc;
}

static int post_file(const struct upload_args *a, const char *file, const char *path,
		     const void *data, uint64_t size, int *status, struct buf *resp,
		     struct err_msg *msg)
{
	int64_t deadline = clock_mono_ns() + (int64_t)a->timeout_ms * 1000000;
	struct buf hdr;
	uint64_t sent = 0;
	int fd, rc;

	fd = dial(&a->url, msg);
	if (fd < 0)
		return fd;
	buf_init(&hdr, 16384);
	rc = buf_printf(&hdr,
			"POST %s%s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/octet-stream\r\n"
			"Content-Length: %llu\r\nConnection: close\r\n",
			a->url.prefix, path, a->url.host, a->url.port, (unsigned long long)size);
	if (!rc && a->token)
		rc = buf_printf(&hdr, "Authorization: Bearer %s\r\n", a->token);
	if (!rc && a->tenant)
		rc = buf_printf(&hdr, "X-Scope-OrgID: %s\r\n", a->tenant);
	if (!rc)
		rc = buf_puts(&hdr, "\r\n");
	if (!rc)
		rc = send_all(fd, hdr.data, hdr.len, deadline, msg);
	while (!rc && sent < size) {
		size_t n = size - sent > SEND_CHUNK ? SEND_CHUNK : (size_t)(size - sent);

		rc = send_all(fd, (const char *)data + sent, n, deadline, msg);
		sent += n;
		if (a->tty)
			bar(file, sent, size);
	}
	if (a->tty)
		fputc('\n', stderr);
	/* A server that refuses early (401, 413) answers before reading it all. */
	if (!rc || rc == ERR_UNAVAILABLE)
		rc = recv_response(fd, deadline, status, resp, msg);
	buf_release(&hdr);
	close(fd);
	return rc;
}

static int get(const struct upload_args *a, const char *path, int *status, struct buf *resp,
	       struct err_msg *msg)
{
	struct web_header hdr[1] = { { "X-Scope-OrgID", a->tenant } };
	struct web_request req = { 0 };

	req.method = "GET";
	req.path = path;
	req.headers = hdr;
	req.n_headers = a->tenant ? 1 : 0;
	req.timeout_ms = 30000;
	return web_client_request(&a->url, &req, status, resp, msg);
}

static void trim(struct buf *b)
{
	while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r'))
		b->data[--b->len] = '\0';
}

/* Uploads one file; 0 when it is on the server afterwards. */
static int upload_one(const struct upload_args *a, const char *file)
{
	struct sym_elf_info info;
	struct err_msg msg;
	struct buf resp;
	char id[2 * SYM_BUILD_ID_MAX + 1], path[512], want[64];
	struct stat sb;
	void *data = MAP_FAILED;
	int fd = -1, status = 0, rc;

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
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb)) {
		fprintf(stderr, "unhex upload: %s: %s\n", file, strerror(errno));
		rc = ERR_IO;
		goto out;
	}
	if (sb.st_size > 0)
		data = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (data == MAP_FAILED) {
		fprintf(stderr, "unhex upload: %s: cannot map the file\n", file);
		rc = ERR_IO;
		goto out;
	}
	if (strcmp(a->type, "executable") == 0)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "?type=executable");
	rc = post_file(a, file, path, data, (uint64_t)sb.st_size, &status, &resp, &msg);
	if (rc) {
		fprintf(stderr, "unhex upload: %s: %s\n", file, msg.text);
		goto out;
	}
	trim(&resp);
	if (status != 200 && status != 201) {
		fprintf(stderr, "unhex upload: %s: HTTP %d: %s\n", file, status,
			resp.data ? resp.data : "");
		rc = ERR_INVALID;
		goto out;
	}
	printf("%s: %s %s (%lld bytes)\n", file, id, status == 201 ? "uploaded" : "unchanged",
	       (long long)sb.st_size);
out:
	if (data != MAP_FAILED)
		munmap(data, (size_t)sb.st_size);
	if (fd >= 0)
		close(fd);
	buf_release(&resp);
	return rc;
}

enum { O_SERVER = 256, O_TOKEN, O_TENANT, O_TYPE, O_FORCE, O_TIMEOUT, O_HELP };

static const struct option upload_opts[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "token", required_argument, NULL, O_TOKEN },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "type", required_argument, NULL, O_TYPE },
	{ "force", no_argument, NULL, O_FORCE },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

int cli_upload(int argc, char **argv)
{
	struct upload_args a = { 0 };
	const char *server = "http://127.0.0.1:4040";
	struct err_msg msg;
	size_t failed = 0;
	uint64_t secs;
	int c;

	a.type = "debuginfo";
	a.timeout_ms = 600000;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", upload_opts, NULL)) != -1) {
		switch (c) {
		case O_SERVER: server = optarg; break;
		case O_TOKEN: a.token = optarg; break;
		case O_TENANT: a.tenant = optarg; break;
		case O_FORCE: a.force = 1; break;
		case O_HELP: upload_help(stdout); return CLI_EXIT_OK;
		case O_TYPE:
			if (strcmp(optarg, "debuginfo") && strcmp(optarg, "executable"))
				return cli_usage_error("upload", "--type: \"%s\" is not debuginfo or "
							 "executable", optarg);
			a.type = optarg;
			break;
		case O_TIMEOUT:
			if (cli_parse_u64(optarg, &secs) || secs == 0 || secs > 86400)
				return cli_usage_error("upload", "--timeout: \"%s\" is not 1..86400",
						       optarg);
			a.timeout_ms = (int)secs * 1000;
			break;
		default:
			return cli_usage_error("upload", "unknown or incomplete option \"%s\"",
					       argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("upload", "no FILE given");
	if (a.token && (strchr(a.token, '\r') || strchr(a.token, '\n')))
		return cli_usage_error("upload", "--token: must not contain line breaks");
	if (a.tenant && (strchr(a.tenant, '\r') || strchr(a.tenant, '\n')))
		return cli_usage_error("upload", "--tenant: must not contain line breaks");
	err_clear(&msg);
	if (web_url_parse(server, &a.url, &msg))
		return cli_usage_error("upload", "--server: %s", msg.text);
	a.tty = isatty(STDERR_FILENO);
	for (int i = optind; i < argc; i++)
		if (upload_one(&a, argv[i]))
			failed++;
	if (failed)
		fprintf(stderr, "unhex upload: %zu of %d files failed\n", failed, argc - optind);
	return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
