/*
 * perfmap.h - perf map files: the symbol tables JIT runtimes write for
 * their generated code (/tmp/perf-PID.map: Node.js --perf-basic-prof, the
 * JVM's perf-map-agent, LuaJIT), one "START SIZE name" line per function,
 * START and SIZE in hex without "0x", the name up to the end of the line.
 *
 * The parser is strict (the bytes come from clients): every line must be
 * well formed and end in '\n', START + SIZE must not overflow, names are
 * 1..PERFMAP_MAX_NAME bytes without control characters, and the whole map
 * is at most PERFMAP_MAX_BYTES and PERFMAP_MAX_ENTRIES lines; the first
 * bad line is named in the message (ERR_INVALID / ERR_TOO_LARGE).
 *
 * A parsed map is sorted by START; of lines with the same START the last
 * one wins (a runtime that reuses code memory writes the newer function
 * later).  perfmap_find answers the entry starting nearest below an
 * address when it covers it.
 *
 * Ownership: a struct perfmap owns its entries and names (one allocation
 * each); perfmap_release frees them.  No shared state: thread-safe on
 * distinct maps, read-only calls on one map may run concurrently.
 */
#ifndef UNHEX_BASE_PERFMAP_H
#define UNHEX_BASE_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct err_msg;

#define PERFMAP_MAX_BYTES (8u << 20)
#define PERFMAP_MAX_ENTRIES (1u << 18)
#define PERFMAP_MAX_NAME 4096u

struct perfmap_entry {
	uint64_t start, size;
	uint32_t name_off, name_len; /* into perfmap.names */
};

struct perfmap {
	struct perfmap_entry *e;
	size_t n;
	char *names; /* the names, each followed by a NUL */
};

/*
 * Parses `len` bytes of map text (borrowed) into *out (initialized here;
 * release it).  0, ERR_INVALID ("line N: why"), ERR_TOO_LARGE, ERR_NOMEM;
 * on failure *out holds nothing.
 */
int perfmap_parse(const char *text, size_t len, struct perfmap *out, struct err_msg *msg);

/* The entry covering `addr`, or NULL; its name is perfmap_name(m, e). */
const struct perfmap_entry *perfmap_find(const struct perfmap *m, uint64_t addr);

static inline const char *perfmap_name(const struct perfmap *m, const struct perfmap_entry *e)
{
	return m->names + e->name_off;
}

/*
 * The compact form stored for a map (appended to `out`):
 *   u8 version (1) | uvarint uploaded_ns | uvarint n |
 *   n x (uvarint start | uvarint size | uvarint name_len | name bytes)
 * sorted by start.  perfmap_decode checks every length and the order
 * (ERR_CORRUPT) and fills *out like perfmap_parse.
 */
int perfmap_encode(const struct perfmap *m, int64_t uploaded_ns, struct buf *out);
int perfmap_decode(const void *p, size_t len, struct perfmap *out, int64_t *uploaded_ns,
		   struct err_msg *msg);

/* The upload time of a stored map (its header only); ERR_CORRUPT if bad. */
int perfmap_uploaded_ns(const void *p, size_t len, int64_t *uploaded_ns);

void perfmap_release(struct perfmap *m);

/*
 * The process id named by a mapping file name whose last component is
 * "perf-PID.map" (what perf calls a process's anonymous executable
 * memory, and where the runtime writes its map): 1 and *pid, else 0.
 * PID is 1..10 decimal digits without a leading zero, at most INT32_MAX.
 */
int perfmap_pid_of(const char *filename, uint32_t *pid);

/*
 * A profile mapping of JIT code: no build ID ("" or NULL) and a file name
 * perfmap_pid_of accepts.  1 and *pid, else 0.  Such code has no file, so
 * its locations are kept and named at their runtime addresses.
 */
int perfmap_jit_mapping(const char *filename, const char *build_id, uint32_t *pid);

#endif
