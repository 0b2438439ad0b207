/*
 * perf2pprof.h - internals shared by the two input readers of perf2pprof
 * (perf.data through `perf script`, gperftools legacy CPU profiles).
 *
 * Both readers fill a struct pw with runtime addresses, one mapping per
 * loaded executable segment that a sample touched, build IDs from the
 * caller's cache, and a `thread` label, then report the time span.
 */
#ifndef UNHEX_TOOLS_PERF2PPROF_H
#define UNHEX_TOOLS_PERF2PPROF_H

#include <stdint.h>

struct err_msg;
struct pw;

/* path -> build ID (hex, "" when unknown), filled lazily. */
struct bid_entry {
	char *path;
	char *hex;
	struct bid_entry *next;
};

struct bid_cache {
	struct bid_entry *head; /* owned */
};

/* Sets the build ID of `path` (both borrowed) unless it is already known. */
int bid_put(struct bid_cache *c, const char *path, const char *hex);
/* Returns the build ID of `path` (borrowed from the cache), reading the ELF
 * file when it is not known yet; "" when none. */
const char *bid_get(struct bid_cache *c, const char *path);
void bid_release(struct bid_cache *c);

/* What a reader learned besides the samples. */
struct p2p_result {
	int64_t time_nanos;
	int64_t duration_nanos;
	int64_t period;       /* nanoseconds between samples */
	uint64_t events;      /* samples read (before aggregation) */
};

enum p2p_flags {
	/*
	 * Moves every caller's address into its call instruction (return
	 * address - 1, except for the frame just below a kernel frame, which
	 * is a PC), as pprof producers that follow Location.address's
	 * convention send them (Go's runtime/pprof, perf's libdw unwinder).
	 */
	P2P_CALLERS_IN_CALL = 1 << 0,
};

/* Reads perf.data at `path` through `perf_bin` (e.g. "perf"); `flags` are
 * enum p2p_flags. */
int p2p_read_perf(const char *perf_bin, const char *path, unsigned flags,
		  struct bid_cache *bids, struct pw *w, struct p2p_result *res,
		  struct err_msg *msg);

/* Reads a gperftools CPUPROFILE file. */
int p2p_read_gperftools(const char *path, struct bid_cache *bids, struct pw *w,
			struct p2p_result *res, struct err_msg *msg);

#endif
