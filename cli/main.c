/*
 * main.c - the `unhex` command: dispatches to a subcommand, and holds the
 * small helpers the subcommands share (sizes, numbers, files, usage errors).
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"

#ifndef UNHEX_VERSION
#define UNHEX_VERSION "unknown"
#endif

static void usage(FILE *f)
{
	fputs("usage: unhex <command> [options]\n"
	      "\n"
	      "commands:\n"
	      "  serve     run the HTTP server on a data directory\n"
	      "  ingest    send pprof files to a server\n"
	      "  stats     print what a store holds (--data DIR or --server URL)\n"
	      "  query     ask a server: top, folded, pprof, diff\n"
	      "  regress   the regression report between two releases, for CI\n"
	      "  upload    send debug files (by build ID) to a server\n"
	      "  token     make API tokens and lines of the server's token file\n"
	      "  verify    check every file of a store (--data DIR)\n"
	      "  recover   open a store whose write-ahead log is damaged (--data DIR)\n"
	      "  backup    a consistent copy of a store, live or stopped (--to DIR)\n"
	      "  restore   a data directory from a backup (--from DIR --data DIR)\n"
	      "  doctor    why frames are hex: which stage (unwinding, symbols) is broken\n"
	      "  version   print the version\n"
	      "\n"
	      "Run `unhex <command> --help` for a command's options; docs/cli.md has more.\n",
	      f);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "unhex %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nRun `unhex %s --help` for usage.\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, char **argv)
{
	return cli_usage_error(cmd, "unknown or incomplete option \"%s\"", argv[optind - 1]);
}

int cli_extra_argument(const char *cmd, char **argv)
{
	return cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
}

/* A decimal number at the start of s (a digit first, no sign); *end after it. */
static int leading_u64(const char *s, unsigned long long *v, char **end)
{
	if (!s || *s < '0' || *s > '9')
		return ERR_INVALID;
	errno = 0;
	*v = strtoull(s, end, 10);
	return errno ? ERR_INVALID : 0;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (leading_u64(s, &v, &end) || *end)
		return ERR_INVALID;
	*out = v;
	return 0;
}

int cli_parse_timeout(const char *cmd, const char *s, uint64_t *secs)
{
	if (cli_parse_u64(s, secs) || *secs == 0 || *secs > 86400)
		return cli_usage_error(cmd, "--timeout: \"%s\" is not 1..86400 seconds", s);
	return 0;
}

int cli_parse_size(const char *s, size_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "", 1 },           { "b", 1 },          { "k", 1ULL << 10 },  { "kib", 1ULL << 10 },
		{ "m", 1ULL << 20 }, { "mib", 1ULL << 20 }, { "g", 1ULL << 30 }, { "gib", 1ULL << 30 },
	};
	char *end;
	unsigned long long v;

	if (leading_u64(s, &v, &end))
		return ERR_INVALID;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].suffix) == 0) {
			if (v > SIZE_MAX / 2 / units[i].mult)
				return ERR_INVALID;
			*out = (size_t)(v * units[i].mult);
			return 0;
		}
	}
	return ERR_INVALID;
}

int cli_read_file(const char *path, struct buf *out, struct err_msg *msg)
{
	int rc;

	errno = 0;
	rc = buf_read_file(out, path);

	if (rc == ERR_TOO_LARGE)
		return err_set(msg, rc, "%s: larger than %zu bytes", path, out->max);
	if (rc)
		return err_set(msg, rc, "%s: %s", path, errno ? strerror(errno) : "read error");
	return 0;
}

/* The subcommands; each gets argv from its own name on. */
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "serve", cli_serve },     { "ingest", cli_ingest }, { "stats", cli_stats },
	{ "query", cli_query },     { "regress", cli_regress }, { "verify", cli_verify },
	{ "upload", cli_upload },   { "token", cli_token },   { "doctor", cli_doctor },
	{ "backup", cli_backup },   { "restore", cli_restore }, { "recover", cli_recover },
};

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	cmd = argv[1];
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(cmd, commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("unhex %s\n", UNHEX_VERSION);
		return CLI_EXIT_OK;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "unhex: unknown command \"%s\"\n\n", cmd);
	usage(stderr);
	return CLI_EXIT_USAGE;
}

/* ---- the read-only commands' GET and output ----------------------------------- */

int cli_get(const char *cmd, const struct cli_target *t, const char *path, struct buf *body)
{
	struct cli_server srv;
	struct cli_http *http = NULL;
	struct cli_request req = { .method = "GET", .path = path, .tenant = t->tenant };
	struct err_msg msg;
	int status = 0, rc;

	assert(t->timeout_s > 0);
	req.timeout_ms = t->timeout_s > INT32_MAX / 1000 ? INT32_MAX : (int)(t->timeout_s * 1000);
	err_clear(&msg);
	if (cli_server_parse(t->server, t->cacert, &srv, &msg))
		return cli_usage_error(cmd, "%s", msg.text);
	rc = cli_http_open(&srv, &http, &msg);
	if (!rc)
		rc = cli_http_request(http, &req, &status, body, &msg);
	cli_http_close(http);
	if (rc) {
		fprintf(stderr, "unhex %s: %s\n", cmd, msg.text);
		return CLI_EXIT_FAIL;
	}
	if (status != 200) {
		fprintf(stderr, "unhex %s: HTTP %d: %.*s%s", cmd, status, (int)body->len,
			body->data ? body->data : "",
			body->len && body->data[body->len - 1] == '\n' ? "" : "\n");
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

int cli_write_out(const char *cmd, const char *path, const void *s, size_t len)
{
	FILE *f = path && strcmp(path, "-") ? fopen(path, "wb") : stdout;
	int ok;

	if (!f) {
		fprintf(stderr, "unhex %s: %s: %s\n", cmd, path, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	ok = !len || fwrite(s, 1, len, f) == len;
	ok = (f != stdout ? fclose(f) : fflush(f)) == 0 && ok;
	if (!ok) {
		fprintf(stderr, "unhex %s: writing %s failed\n", cmd, path ? path : "stdout");
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}
