/*
 * main.c - the `unhex` command: dispatches to a subcommand, and holds the
 * small helpers the subcommands share (sizes, numbers, files, usage errors).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return ERR_INVALID;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return ERR_INVALID;
	*out = v;
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

	if (!s || *s < '0' || *s > '9')
		return ERR_INVALID;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
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

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "serve") == 0)
		return cli_serve(argc - 1, argv + 1);
	if (strcmp(cmd, "ingest") == 0)
		return cli_ingest(argc - 1, argv + 1);
	if (strcmp(cmd, "stats") == 0)
		return cli_stats(argc - 1, argv + 1);
	if (strcmp(cmd, "query") == 0)
		return cli_query(argc - 1, argv + 1);
	if (strcmp(cmd, "regress") == 0)
		return cli_regress(argc - 1, argv + 1);
	if (strcmp(cmd, "verify") == 0)
		return cli_verify(argc - 1, argv + 1);
	if (strcmp(cmd, "backup") == 0)
		return cli_backup(argc - 1, argv + 1);
	if (strcmp(cmd, "restore") == 0)
		return cli_restore(argc - 1, argv + 1);
	if (strcmp(cmd, "recover") == 0)
		return cli_recover(argc - 1, argv + 1);
	if (strcmp(cmd, "upload") == 0)
		return cli_upload(argc - 1, argv + 1);
	if (strcmp(cmd, "token") == 0)
		return cli_token(argc - 1, argv + 1);
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
