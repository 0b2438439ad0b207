/*
 * workload_files.h - a workload directory written by unhex-workload, read
 * whole into memory by the in-process ingest benchmarks (bench-ingest,
 * bench-blocks), and the sizes they report.
 */
#ifndef UNHEX_BENCH_WORKLOAD_FILES_H
#define UNHEX_BENCH_WORKLOAD_FILES_H

#include <stddef.h>
#include <stdint.h>

struct err_msg;

struct bench_entry {
	char *name;     /* the series name (owned) */
	int64_t unix_s; /* the profile's time */
	char *data;     /* the file's bytes (owned) */
	size_t len;
};

struct bench_workload {
	struct bench_entry *e;
	size_t n, cap;
	uint64_t bytes; /* sum of len */
};

/*
 * Reads DIR/manifest.tsv (`<relative path>\t<name>\t<unix seconds>` lines;
 * empty and '#' lines skipped) and every file it names into `w` (zeroed by
 * the caller).  0, or ERR_IO / ERR_INVALID / ERR_TOO_LARGE / ERR_NOMEM with
 * msg set; what was loaded stays in w for bench_workload_release().
 */
int bench_workload_load(const char *dir, struct bench_workload *w, struct err_msg *msg);
void bench_workload_release(struct bench_workload *w);

/* Bytes of every regular file under dir (links not followed). */
uint64_t bench_dir_bytes(const char *dir);

/* A "VmRSS:"-style field of /proc/self/status in KiB, or -1. */
long bench_rss_kib(const char *field);

#endif
