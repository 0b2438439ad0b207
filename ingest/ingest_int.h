/*
 * ingest_int.h - internals of the ingest module, for its own files, its
 * tests and its fuzz targets.
 *
 * Pipeline of one request
 *   1. decode   (pprof.c)   gunzip with a cap, protobuf-c unpack into an
 *                           arena with a cap (the "pprof arena", per pprof).
 *   2. convert  (pprof.c)   validate every index and id, normalize mappings
 *                           and addresses (normalize.c), group samples by
 *                           their string labels, and copy what the store
 *                           needs into a compact struct ingest_pprof in the
 *                           request arena.  The pprof arena is then freed,
 *                           so a request holds only the compact forms.
 *   3. write    (ingest.c)  one store transaction for every pprof of the
 *                           request; identical stacks of one stored profile
 *                           are summed and zero sums dropped before
 *                           store_txn_profile().
 *
 * Indices in struct ingest_pprof are positions in its own arrays, never
 * pprof ids: pprof ids are resolved (and checked) once during conversion.
 * Everything of a struct ingest_pprof lives in the arena it was converted
 * into; strings are NUL-terminated.
 */
#ifndef UNHEX_INGEST_INGEST_INT_H
#define UNHEX_INGEST_INGEST_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ingest/ingest.h"
#include "storage/storage.h"

struct arena;
struct buf;
struct err_msg;
struct Perftools__Profiles__Profile;

#define INGEST_MAX_GROUPS 4096     /* distinct sample label sets in one pprof */
#define INGEST_MAX_BUILD_ID 256    /* bytes of a mapping build id */
#define INGEST_MAX_NAME_BYTES 4096 /* Pyroscope /ingest name parameter */

struct ingest_line {
	uint32_t function; /* index + 1 into ingest_pprof.functions; 0 = none */
	int64_t line;
	int64_t column;
};

struct ingest_location {
	uint32_t mapping;  /* index + 1 into ingest_pprof.mappings; 0 = none */
	uint32_t n_lines;
	uint64_t address;  /* normalized: file offset, or as given (see normalize.c) */
	const struct ingest_line *lines;
};

/* The extra series labels of samples that carry string labels. */
struct ingest_group {
	const struct store_label *labels; /* sorted by name */
	size_t n_labels;
};

struct ingest_pprof {
	const char *service;                /* value of service_name */
	const struct store_label *labels;   /* request labels + __name__ */
	size_t n_labels;
	const char **profile_types;         /* one __profile_type__ per sample type */
	size_t n_types;
	int64_t time_ns;
	int64_t duration_ns;
	int64_t period;
	const struct store_mapping *mappings;
	size_t n_mappings;
	const struct store_function *functions;
	size_t n_functions;
	const struct ingest_location *locations;
	size_t n_locations;
	const struct ingest_group *groups;  /* groups[0] has no labels */
	size_t n_groups;
	size_t n_samples;
	const size_t *sample_off;           /* n_samples + 1 offsets into stack_locs */
	const uint32_t *stack_locs;         /* location indices, leaf first */
	const uint32_t *sample_group;       /* index into groups */
	const int64_t *values;              /* n_samples x n_types, row-major */
};

/* Per-pprof fallbacks for fields the pprof does not carry. */
struct ingest_defaults {
	int64_t time_ns;     /* when time_nanos is 0 */
	int64_t duration_ns; /* when duration_nanos is 0 */
};

/* ---- pprof.c ------------------------------------------------------------ */

/*
 * Gunzips `data` (if gzipped) into `scratch` and unpacks it with protobuf-c
 * into `pa` (the caller's arena, whose cap bounds the decoded size; see
 * ingest__pprof_arena_cap()).  Returns the profile, owned by `pa`.
 */
int ingest__decode_pprof(const void *data, size_t len, const struct ingest_limits *lim,
			 struct arena *pa, struct buf *scratch,
			 struct Perftools__Profiles__Profile **out, struct err_msg *msg);

/* The cap of the arena a pprof of `len` decompressed bytes is unpacked into. */
size_t ingest__pprof_arena_cap(size_t len);

/*
 * Decodes, validates and converts one raw pprof with its request labels
 * into `out`, allocated from `a` (the request arena).  Temporary memory is
 * freed before returning.
 */
int ingest__convert(struct arena *a, const struct ingest_limits *lim,
		    const struct ingest_series *in, const struct ingest_defaults *def,
		    struct ingest_pprof *out, struct err_msg *msg);

/* ---- normalize.c -------------------------------------------------------- */

/*
 * Copies a pprof build id into `a`: lower-case hex when it is hex (GNU
 * build ids), otherwise as given.  ERR_INVALID when longer than
 * INGEST_MAX_BUILD_ID.  Returns owned-by-arena *out.
 */
int ingest__build_id(struct arena *a, const char *bid, const char **out);

/* True for a mapping that covers the whole address space (addresses are
 * already what they should be): start 0 and limit 0 or all ones. */
int ingest__mapping_is_fake(uint64_t memory_start, uint64_t memory_limit,
			    uint64_t file_offset);

/*
 * Turns runtime address `addr` of a location in the given mapping into the
 * stored address (file offset: addr - memory_start + file_offset).  Address
 * 0 (none) and addresses in fake mappings are kept.  ERR_INVALID when the
 * address lies below the mapping's start or the offset overflows.
 */
int ingest__normalize_address(uint64_t addr, uint64_t memory_start, uint64_t memory_limit,
			      uint64_t file_offset, uint64_t *out);

/* ---- labels.c ----------------------------------------------------------- */

/* True when `name` matches [a-zA-Z_][a-zA-Z0-9_.]*. */
int ingest__label_name_ok(const char *name);

/*
 * Checks request labels: names valid and unique, none reserved for the
 * server (__profile_type__), service_name present and not empty, sizes and
 * count within `lim`.
 */
int ingest__check_labels(const struct ingest_limits *lim, const struct store_label *labels,
			 size_t n, struct err_msg *msg);

/* The value of label `name`, or NULL. */
const char *ingest__label_get(const struct store_label *labels, size_t n, const char *name);

/*
 * Parses Pyroscope's `app.name.kind{k=v,...}` into labels (service_name,
 * __name__ when the kind is known, then the braces' labels), allocated from
 * `a`.  Returns owned-by-arena *labels.
 */
int ingest__parse_legacy_name(struct arena *a, const char *name,
			      struct store_label **labels, size_t *n, struct err_msg *msg);

/* Pyroscope's __name__ for a legacy kind suffix ("cpu" -> "process_cpu"), or NULL. */
const char *ingest__kind_name(const char *kind, size_t len);

/* ---- push.c ------------------------------------------------------------- */

/*
 * Decodes a push.v1 PushRequest (binary protobuf, or Connect JSON when
 * `json`) into series allocated from `a`; raw profiles point into `a`.
 */
int ingest__decode_push(struct arena *a, const struct ingest_limits *lim, const void *body,
			size_t len, int json, struct ingest_series **out, size_t *n,
			struct err_msg *msg);

/* ---- json.c ------------------------------------------------------------- */

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

#define JSON_MAX_DEPTH 32

struct json_value {
	enum json_type type;
	int boolean;
	const char *str;             /* STRING (unescaped, NUL-terminated) or NUMBER text */
	size_t len;                  /* bytes of str */
	size_t n;                    /* elements of ARRAY / members of OBJECT */
	struct json_value *items;    /* ARRAY elements or OBJECT member values */
	const char **keys;           /* OBJECT member names */
};

/*
 * Parses one JSON document (RFC 8259; nesting at most JSON_MAX_DEPTH, no
 * duplicate object keys) into values allocated from `a`.
 */
int json_parse(struct arena *a, const char *p, size_t len, struct json_value **out,
	       struct err_msg *msg);

/* The member `key` of an object, or NULL. */
const struct json_value *json_get(const struct json_value *obj, const char *key);

/*
 * Decodes standard or URL-safe base64, padded or not, into `a`.
 * Returns owned-by-arena *out.
 */
int base64_decode(struct arena *a, const char *s, size_t len, uint8_t **out, size_t *out_len);

#endif
