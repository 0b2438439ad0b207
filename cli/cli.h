/*
 * cli.h - internals of the `unhex` command: one function per subcommand and
 * the helpers they share.  Subcommands return the process exit status:
 * 0 success, 1 failure, 2 usage error.
 */
#ifndef UNHEX_CLI_CLI_H
#define UNHEX_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct buf;
struct err_msg;

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

int cli_serve(int argc, char **argv);
int cli_ingest(int argc, char **argv);
int cli_stats(int argc, char **argv);
int cli_query(int argc, char **argv);
int cli_regress(int argc, char **argv);
int cli_upload(int argc, char **argv);
int cli_token(int argc, char **argv);
int cli_verify(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_recover(int argc, char **argv);
int cli_backup(int argc, char **argv);
int cli_restore(int argc, char **argv);

/* Parses "1048576", "64K", "16MiB", "1G" into bytes; 0 or ERR_INVALID. */
int cli_parse_size(const char *s, size_t *out);

/* Parses a non-negative decimal integer; 0 or ERR_INVALID. */
int cli_parse_u64(const char *s, uint64_t *out);

/* Parses `unhex <cmd> --timeout S` (1..86400 seconds): 0, or the usage
 * error's exit code with the message printed. */
int cli_parse_timeout(const char *cmd, const char *s, uint64_t *secs);

/* Reads a whole file into out (caller-initialized, its max applies). */
int cli_read_file(const char *path, struct buf *out, struct err_msg *msg);

/* ---- serve_peers.c: a querier's ingesters ------------------------------- */

#define CLI_MAX_PEERS 256

/* Splits "URL[,URL...]" (http:// or https:// each) into owned *out[0..*n). */
int cli_peers_parse(const char *list, char ***out, size_t *n, struct err_msg *msg);
void cli_peers_free(char **v, size_t n);
/* The token for the ingesters: the first line of `file`, else
 * $UNHEX_INGESTER_TOKEN, else none (*out NULL); owned. */
int cli_peer_token(const char *file, char **out, struct err_msg *msg);

/* ---- http.c: requests to a server (libcurl, http and https) -------------- */

#define CLI_URL_MAX 1024

/* A server as --server URL and --cacert FILE name it. */
struct cli_server {
	char url[CLI_URL_MAX]; /* "http[s]://host[:port][/prefix]", no trailing '/' */
	const char *cacert;    /* borrowed; PEM CAs trusted instead of the system's, or NULL */
};

/*
 * Parses a --server URL: http:// or https:// (none means http://), a host,
 * an optional port and path prefix; no credentials, query or fragment.
 * `cacert` (borrowed, may be NULL) must be a readable file.  ERR_INVALID
 * with a message otherwise, *out untouched.
 */
int cli_server_parse(const char *url, const char *cacert, struct cli_server *out,
		     struct err_msg *msg);

/*
 * One request.  Header values must not contain line breaks.  A body comes
 * from memory (body, len) or is streamed from a file (body_file, len bytes
 * from its current position), so large debug files are never read whole.
 */
struct cli_request {
	const char *method;       /* "GET" or "POST" */
	const char *path;         /* path and encoded query, appended to the URL; borrowed */
	const char *tenant;       /* X-Scope-OrgID, or NULL; borrowed */
	const char *token;        /* "Authorization: Bearer <token>", or NULL for the
				   * client's own ($UNHEX_TOKEN_FILE, $UNHEX_TOKEN); borrowed */
	const char *content_type; /* of a POST body; NULL: application/octet-stream */
	const void *body;         /* borrowed, or NULL */
	FILE *body_file;          /* borrowed, or NULL */
	uint64_t len;             /* body length */
	int timeout_ms;           /* the whole request, connect to last byte; > 0 */
	/* Called as the body goes out (may be NULL): bytes sent so far and len. */
	void (*progress)(void *arg, uint64_t sent, uint64_t total);
	void *progress_arg;
};

/*
 * A client for one server: it keeps its connection open between requests.
 * Not thread-safe; a command opens one, makes its requests and closes it.
 * cli_http_open() returns an owned client, with the token of the
 * environment (the first line of the file $UNHEX_TOKEN_FILE names, else
 * $UNHEX_TOKEN) for requests without their own; ERR_INVALID when that
 * file cannot be read.  cli_http_close(NULL) is a no-op.
 */
struct cli_http;
int cli_http_open(const struct cli_server *srv, struct cli_http **out, struct err_msg *msg);
void cli_http_close(struct cli_http *h);

/*
 * Sends `req` and reads the answer: its status in *status and its body
 * appended to `resp` (caller-initialized, with a real cap: a body past it
 * fails with ERR_TOO_LARGE).  Returns 0 when a response was read, whatever
 * its status.  Otherwise, with a message and resp as it was:
 * ERR_UNAVAILABLE (cannot connect, TLS failed, connection lost),
 * ERR_TIMEOUT, ERR_TOO_LARGE, ERR_INVALID (not HTTP, truncated, a bad
 * header value), ERR_IO (the body file could not be read), ERR_NOMEM.
 */
int cli_http_request(struct cli_http *h, const struct cli_request *req, int *status,
		     struct buf *resp, struct err_msg *msg);

/* Appends `s` percent-encoded for a query string value (RFC 3986 unreserved kept). */
int cli_url_encode(struct buf *out, const char *s);

/* Appends "?key=<encoded value>" (or "&key=..." after the first) when value is set. */
int cli_add_param(struct buf *path, const char *key, const char *value);

/* Where and as whom a read-only command asks: its common options. */
struct cli_target {
	const char *server;  /* --server URL */
	const char *cacert;  /* --cacert FILE, or NULL */
	const char *tenant;  /* --tenant, or NULL */
	uint64_t timeout_s;  /* --timeout, > 0 */
};

/*
 * GET `path` from the server `t` names, the answer appended to `body`
 * (caller-initialized, its cap applies).  CLI_EXIT_OK on HTTP 200;
 * CLI_EXIT_USAGE for a bad --server or --cacert; CLI_EXIT_FAIL otherwise,
 * with "unhex <cmd>: ..." (the server's own message for a non-200 status)
 * printed to stderr.
 */
int cli_get(const char *cmd, const struct cli_target *t, const char *path, struct buf *body);

/*
 * Writes len bytes of s to the file `path` names ("-" or NULL: stdout).
 * CLI_EXIT_OK, or CLI_EXIT_FAIL with "unhex <cmd>: ..." on stderr.
 */
int cli_write_out(const char *cmd, const char *path, const void *s, size_t len);

/* Prints "unhex <cmd>: <message>" and a hint to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * cli_usage_error() of the option getopt_long() just refused (unknown, or
 * its argument missing): for the default case of every command's switch.
 */
int cli_bad_option(const char *cmd, char **argv);

/* cli_usage_error() of argv[optind], an argument the command does not take. */
int cli_extra_argument(const char *cmd, char **argv);

#endif
