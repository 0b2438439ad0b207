/*
 * cli.h - internals of the `unhex` command: one function per subcommand and
 * the helpers they share.  Subcommands return the process exit status:
 * 0 success, 1 failure, 2 usage error.
 */
#ifndef UNHEX_CLI_CLI_H
#define UNHEX_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct err_msg;

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

int cli_serve(int argc, char **argv);
int cli_ingest(int argc, char **argv);
int cli_stats(int argc, char **argv);
int cli_query(int argc, char **argv);
int cli_upload(int argc, char **argv);

/* Parses "1048576", "64K", "16MiB", "1G" into bytes; 0 or ERR_INVALID. */
int cli_parse_size(const char *s, size_t *out);

/* Parses a non-negative decimal integer; 0 or ERR_INVALID. */
int cli_parse_u64(const char *s, uint64_t *out);

/* Reads a whole file into out (caller-initialized, its max applies). */
int cli_read_file(const char *path, struct buf *out, struct err_msg *msg);

/* Prints "unhex <cmd>: <message>" and a hint to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
