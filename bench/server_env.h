/*
 * server_env.h - the query side of `unhex serve`, opened in process by the
 * benchmarks that time a query without HTTP (bench-query, bench-connect):
 * the store of a data directory, its debug-info service with no upstream,
 * and a symbolization memo, as the server would open them.
 */
#ifndef UNHEX_BENCH_SERVER_ENV_H
#define UNHEX_BENCH_SERVER_ENV_H

struct buf;
struct err_msg;

struct bench_server {
	struct store *st;
	struct debuginfo *sym;      /* NULL when opened without symbolizer */
	struct query_symmemo *memo; /* NULL without symbolizer or memo */
};

/*
 * Opens the store of `data` (borrowed) and, unless no_sym, its debug-info
 * service (debuginfod off) and, unless no_memo, a memo of the default
 * size.  Returns 0 or an error with msg set; on failure nothing is left
 * open and *s is empty.
 */
int bench_server_open(const char *data, int no_sym, int no_memo, struct bench_server *s,
		      struct err_msg *msg);
/* Closes what bench_server_open opened; *s may be empty. */
void bench_server_close(struct bench_server *s);

/* Writes the bytes of `b` to `path`; 0 or ERR_IO with msg set. */
int bench_write_file(const char *path, const struct buf *b, struct err_msg *msg);

#endif
