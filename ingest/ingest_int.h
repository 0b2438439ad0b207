/*
 * ingest_int.h - internals of the ingest module, for its own files, its
 * tests and its fuzz targets.
 *
 * Pipeline of one request
 *   1. decode   (pprof.c, pprof_wire.c)  gunzip with a cap, then one pass
 *                           over the wire bytes into the flat struct
 *                           pprof_msg below, allocated from an arena with a
 *                           cap (the "pprof arena", per pprof).  protobuf-c
 *                           is not on this path: it keeps the push.v1
 *                           envelope and the tests that build pprofs.
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

#include "base/arena.h"
#include "base/blockpool.h"
#include "base/err.h"
#include "ingest/ingest.h"
#include "storage/storage.h"

struct buf;
struct err_msg;

/* Rewrites `msg` as "<prefix>: <its text>" (or the code's name); returns rc. */
static inline int ingest__msg_prefix(struct err_msg *msg, int rc, const char *prefix)
{
	struct err_msg old;

	if (!msg)
		return rc;
	old = *msg;
	return err_reset(msg, rc, "%s: %s", prefix, old.text[0] ? old.text : err_str(rc));
}

/* Initializes a per-request arena of at most `cap` bytes on lim->pool (or the C heap). */
static inline void ingest__arena_init(struct arena *a, size_t cap, const struct ingest_limits *lim)
{
	arena_init_alloc(a, cap, lim && lim->pool ? &lim->pool->alloc : NULL);
}

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
	const uint64_t *sample_span;        /* span id per sample, 0 none; NULL: none has one */
	const char *push_id;                /* ingest_series.id; NULL or "": none */
};

/* Per-pprof fallbacks for fields the pprof does not carry. */
struct ingest_defaults {
	int64_t time_ns;     /* when time_nanos is 0 */
	int64_t duration_ns; /* when duration_nanos is 0 */
	/* Bytes the request's pprofs may still decode to, together (its
	 * max_request_decoded_bytes, kept by ingest.c's run()); each decoded
	 * pprof takes its size off.  NULL: only max_decompressed_bytes. */
	size_t *decoded_left;
};

/* ---- pprof_wire.c ------------------------------------------------------- */

/*
 * A decoded pprof message (google/pprof proto/profile.proto), field for
 * field, in flat arrays: what protobuf-c would unpack, without a struct and
 * a pointer per sub-message.  Field names follow the .proto.  Every array
 * and string lives in the arena it was decoded into.  Strings are
 * NUL-terminated copies (bytes after an embedded NUL are invisible, as with
 * protobuf-c); string_len holds their wire lengths.
 */
struct pprof_value_type {
	int64_t type, unit;
};

struct pprof_label {
	int64_t key, str, num, num_unit;
};

struct pprof_sample {
	const uint64_t *location_id;
	const int64_t *value;
	const struct pprof_label *label;
	size_t n_location_id, n_value, n_label;
};

struct pprof_mapping {
	uint64_t id, memory_start, memory_limit, file_offset;
	int64_t filename, build_id;
	int has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pprof_line {
	uint64_t function_id;
	int64_t line, column;
};

struct pprof_location {
	uint64_t id, mapping_id, address;
	const struct pprof_line *line;
	size_t n_line;
	int is_folded;
};

struct pprof_function {
	uint64_t id;
	int64_t name, system_name, filename, start_line;
};

struct pprof_msg {
	const struct pprof_value_type *sample_type;
	size_t n_sample_type;
	const struct pprof_sample *sample;
	size_t n_sample;
	const struct pprof_mapping *mapping;
	size_t n_mapping;
	const struct pprof_location *location;
	size_t n_location;
	const struct pprof_function *function;
	size_t n_function;
	const char *const *string_table;
	const size_t *string_len;
	size_t n_string_table;
	int64_t drop_frames, keep_frames, time_nanos, duration_nanos, period;
	int has_period_type;              /* period_type was present */
	struct pprof_value_type period_type;
	const int64_t *comment;
	size_t n_comment;
	int64_t default_sample_type, doc_url;
};

/*
 * Decodes the protobuf bytes p[0..n) into `out`, allocated from `a` (whose
 * cap bounds the memory; ERR_TOO_LARGE past it).  One pass over the bytes:
 * every varint and length is bounds-checked; repeated scalars are accepted
 * packed and unpacked; unknown fields are skipped; a known field with the
 * wrong wire type, a group, field number 0 or a varint of more than 10
 * bytes is ERR_INVALID with a message that says what and where.  Returns
 * owned-by-arena arrays in *out; on failure *out is untouched.
 */
int ingest__pprof_parse(const uint8_t *p, size_t n, struct arena *a, struct pprof_msg *out,
			struct err_msg *msg);

/* ---- pprof.c ------------------------------------------------------------ */

/*
 * Gunzips `data` (if gzipped) into `scratch` and decodes it with
 * ingest__pprof_parse() into `pa` (the caller's arena, initialized here with
 * the cap of ingest__pprof_arena_cap()).  Returns the profile, owned by `pa`.
 * With `decoded_left` (may be NULL) the pprof decodes to at most that many
 * bytes, which are then taken off it: past it ERR_TOO_LARGE naming the
 * request's max_request_decoded_bytes.
 */
int ingest__decode_pprof(const void *data, size_t len, const struct ingest_limits *lim,
			 size_t *decoded_left, struct arena *pa, struct buf *scratch,
			 struct pprof_msg *out, struct err_msg *msg);

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
 * The profile type ID "name:type:unit:period type:period unit" (the series
 * label __profile_type__) from its five parts, in the arena; NULL when the
 * arena is full.
 */
char *ingest__profile_type_id(struct arena *a, const char *const parts[5]);

/*
 * Checks request labels: names valid and unique, none reserved for the
 * server (__profile_type__), service_name present and not empty, sizes and
 * count within `lim`.
 */
int ingest__check_labels(const struct ingest_limits *lim, const struct store_label *labels,
			 size_t n, struct err_msg *msg);

/* The value of label `name`, or NULL. */
const char *ingest__label_get(const struct store_label *labels, size_t n, const char *name);

/* Pyroscope's `name` parameter, taken apart (ingest__parse_name). */
struct ingest_name {
	const char *app;                  /* before '{', trimmed, never empty */
	const char *kind;                 /* after the last '.' of app, or NULL */
	size_t base_len;                  /* bytes of app before ".kind" */
	const struct store_label *labels; /* the braces' labels, __*__ ones dropped */
	size_t n_labels;
};

/*
 * Parses `app.name.kind{k=v,...}` (see labels.c) into `out`; everything
 * lives in `a`.  Labels named __*__ are dropped (Pyroscope drops them,
 * pyroscope-go sends __session_id__); any other invalid or repeated label
 * name is ERR_INVALID.
 */
int ingest__parse_name(struct arena *a, const char *name, struct ingest_name *out,
		       struct err_msg *msg);


/* ---- naming.c ----------------------------------------------------------- */

#define INGEST_MAX_STC_BYTES (1 << 20) /* a sample_type_config part */

/* One entry of pyroscope-go's sample_type_config ("display-name", ...). */
struct ingest_stc_entry {
	const char *type;        /* the pprof sample type it configures */
	const char *display;     /* "display-name", or NULL */
	const char *units;       /* or NULL */
	const char *aggregation; /* "sum", "average", or NULL */
	int cumulative, sampled;
};

/* A request's sample_type_config; NULL where one is taken means Pyroscope's defaults. */
struct ingest_stc {
	const struct ingest_stc_entry *e;
	size_t n;
};

/*
 * Parses the JSON of a sample_type_config multipart part (an object of
 * sample type -> settings; members matched case-insensitively, unknown ones
 * ignored) into `out`, allocated from `a`.  ERR_INVALID names the member.
 */
int ingest__stc_parse(struct arena *a, const void *json, size_t len, struct ingest_stc *out,
		      struct err_msg *msg);

/* The entry of `type` in `stc` (Pyroscope's defaults when stc is NULL), or NULL. */
const struct ingest_stc_entry *ingest__stc_find(const struct ingest_stc *stc, const char *type);

/*
 * Pyroscope's __name__ of a pprof sent to /ingest, from its sample types in
 * order, each seen through its display name: "wall" when any type is wall,
 * else the first match of process_cpu (contains "cpu"), memory ("alloc_",
 * "inuse_", "space", "objects"), mutex ("mutex_"), block ("block_"),
 * goroutines ("goroutines"); else the last display name.  Returns a static
 * string or one of `types` / the stc's strings (borrowed).
 */
const char *ingest__metric_name(const char *const *types, size_t n, const struct ingest_stc *stc);

/* __name__ declared by a pprof's kind suffix ("cpu" -> "process_cpu"), or NULL. */
const char *ingest__kind_name(const char *kind, size_t len);

/* A kind of the legacy text formats: one value per stack, named by the suffix. */
struct ingest_text_kind {
	const char *kind;       /* the suffix */
	const char *name;       /* __name__ */
	const char *type, *unit; /* the sample type without a sample rate */
	const char *timed_type; /* with a sample rate: <timed_type>/nanoseconds, else NULL */
};

/* The text kind of suffix `kind`, or NULL when Pyroscope does not know it. */
const struct ingest_text_kind *ingest__text_kind(const char *kind);

/* Alloy's godeltaprof_<kind> __name__ as <kind> (a pointer into `name`); others unchanged. */
const char *ingest__relabel_name(const char *name);

/* Whether Pyroscope drops a request label of this name before storing (__delta__, __session_id__). */
int ingest__label_dropped(const char *name);

/* Fixes Pyroscope applies to the pprof of /ingest, by agent (struct ingest_hints). */
enum {
	INGEST_FIX_TIME = 1 << 0,      /* time_nanos in 1970 (microseconds): use `from` */
	INGEST_FIX_DOTNET = 1 << 1,    /* function ids 0 -> location ids; '-' -> '_' in types */
	INGEST_FIX_SCRIPTING = 1 << 2, /* function names become "<file> <name>" */
	INGEST_FIX_PYSPY = 1 << 3,     /* ... except for absolute file names */
};

/* The INGEST_FIX_* flags for a spyName (NULL when absent) and sample_type_config. */
unsigned ingest__spy_fixes(const char *spy, const struct ingest_stc *stc);

/* How a request's /ingest parameters change the conversion of its pprof. */
struct ingest_hints {
	const struct ingest_stc *stc; /* names __name__ when no label gives it; NULL: defaults */
	unsigned fixes;               /* INGEST_FIX_* */
};

/* ---- builder.c ---------------------------------------------------------- */

#define INGEST_MAX_FRAME_BYTES 65535 /* one frame name (Pyroscope's symbol limit) */
#define INGEST_BUILDER_MAX_TYPES 4

/* An open-addressing table of indices + 1 (0 = empty) with their hashes. */
struct ingest_btab {
	uint32_t *slot;
	uint64_t *hash;
	size_t mask; /* 0 before the first insert */
};

/*
 * Builds one struct ingest_pprof from named frames (builder.c).  Fields
 * are the builder's; callers use the functions below.
 */
struct ingest_builder {
	struct arena *a;   /* the result's arena (borrowed) */
	struct arena t;    /* tables and growing arrays, capped */
	const struct ingest_limits *lim;
	size_t n_types;
	struct store_function *fns;
	size_t *fn_len;
	size_t n_fns, cap_fns, cap_fn_len;
	struct ingest_line *lines; /* one per location */
	size_t n_locs, cap_lines;
	struct ingest_group *groups; /* [1..n_groups]; 0 is the empty set */
	size_t n_groups, cap_groups;
	size_t *off;
	uint32_t *stack, *grp;
	int64_t *vals;
	size_t n_samples, n_stack, cap_off, cap_grp, cap_vals, cap_stack;
	struct ingest_btab fn_tab, loc_tab, grp_tab, smp_tab;
};

/*
 * Starts a profile of `n_types` values per sample (1..INGEST_BUILDER_MAX_TYPES)
 * whose result lives in `a` (borrowed) and whose temporaries may take
 * `tmp_cap` bytes.  Always pair with ingest__b_release().
 */
void ingest__b_init(struct ingest_builder *b, struct arena *a, size_t tmp_cap,
		    const struct ingest_limits *lim, size_t n_types);
void ingest__b_release(struct ingest_builder *b);

/* Interns a frame name (borrowed, `len` bytes) as a function; *out is its index. */
int ingest__b_function(struct ingest_builder *b, const char *name, size_t len, uint32_t *out);
/* Interns (function, line) as a location; *out is its index. */
int ingest__b_location(struct ingest_builder *b, uint32_t fn, int64_t line, uint32_t *out);
/* Interns a label set (sorted by name, borrowed); *out is its group, 0 for none. */
int ingest__b_group(struct ingest_builder *b, const struct store_label *sorted, size_t n,
		    uint32_t *out);
/*
 * Adds `values` (n_types of them) to the sample of this stack (location
 * indices, leaf first) and group, creating it.  ERR_TOO_LARGE past
 * max_samples or max_stack_depth, ERR_INVALID when a sum overflows.
 * *sample (may be NULL) is the sample's index.
 */
int ingest__b_sample(struct ingest_builder *b, const uint32_t *leaf_first, size_t depth,
		     uint32_t group, const int64_t *values, size_t *sample);
/*
 * Copies the symbols, groups and samples into `out` (in the result
 * arena); labels, types, times and the period are the caller's to set.
 */
int ingest__b_finish(struct ingest_builder *b, struct ingest_pprof *out);
/* Adds `values` to sample `sample` (an index from ingest__b_sample); ERR_INVALID on overflow. */
int ingest__b_add(struct ingest_builder *b, size_t sample, const int64_t *values);
/* Every value becomes value * num / den (num >= 0, den > 0); ERR_INVALID on overflow. */
int ingest__b_scale(struct ingest_builder *b, int64_t num, int64_t den);

/* ---- text.c ------------------------------------------------------------- */

/*
 * Adds one stack written as frames root first separated by ';' (`s`,
 * `len` bytes, borrowed) with `value`, splitting it as Pyroscope does.
 * `scratch` holds max_stack_depth + 1 entries.
 */
int ingest__b_stack_string(struct ingest_builder *b, const char *s, size_t len, int64_t value,
			   uint32_t *scratch, struct err_msg *msg);

/* Reads a folded, lines, trie or tree body (text.c) into `b` (one value per sample). */
int ingest__parse_text(enum ingest_format f, const void *data, size_t n,
		       struct ingest_builder *b, struct err_msg *msg);

/* ---- speedscope.c ------------------------------------------------------- */

/* One profile of a speedscope file: its builder holds value * multiplier per stack. */
struct ingest_ss_profile {
	const char *name; /* borrowed from the JSON tree */
	const char *unit; /* "nanoseconds", ..., "none" or "bytes" */
	struct ingest_builder b;
};

/* The multiplier of a speedscope unit (100 for time units and none, 1 for bytes); ERR_INVALID when unknown. */
int ingest__ss_unit(const char *unit, uint64_t *mult);

/*
 * Parses a speedscope file into *out (n_out profiles, in `a`; their
 * builders draw on `a` and tmp_cap each, and must be released by the
 * caller).  The JSON tree lives in `tree` (cap it with json_mem_bound()).
 */
int ingest__parse_speedscope(struct arena *a, struct arena *tree, const void *data, size_t len,
			     const struct ingest_limits *lim, size_t tmp_cap,
			     struct ingest_ss_profile **out, size_t *n_out, struct err_msg *msg);

/* ---- jfr.c -------------------------------------------------------------- */

/* One profile Pyroscope makes of a JFR event kind. */
struct ingest_jfr_kind {
	const char *metric;            /* __name__ */
	size_t n_types;
	const char *types[2], *units[2];
	const char *period_type, *period_unit; /* "" when none */
	int timed;                     /* values are samples of 1/sample_rate s each */
};

struct ingest_jfr_profile {
	const struct ingest_jfr_kind *kind;
	struct ingest_builder b;
};

#define INGEST_JFR_KINDS 9

/* A parsed recording: one builder per kind (most stay empty). */
struct ingest_jfr {
	struct ingest_jfr_profile p[INGEST_JFR_KINDS];
	size_t n;
	const char *event;   /* the recording's "event" setting, "" when none */
	int64_t period;      /* 1e9 / sample_rate, 0 when the rate is 0 */
	uint64_t events;     /* events read */
};

/*
 * Parses a JFR file (one or more chunks, not gzipped) and pyroscope-java's
 * LabelsSnapshot (`labels`, may be NULL) into `out`, whose builders put
 * their results in `a`.  Context labels already among `base` (the
 * series' labels) are left to them.  On failure *out holds nothing.
 * Always pair with ingest__jfr_release().
 */
int ingest__parse_jfr(struct arena *a, const void *data, size_t len, const void *labels,
		      size_t labels_len, const struct ingest_limits *lim, uint32_t sample_rate,
		      const struct store_label *base, size_t n_base, struct ingest_jfr *out,
		      struct err_msg *msg);
void ingest__jfr_release(struct ingest_jfr *j);

/* ---- push.c ------------------------------------------------------------- */

/*
 * Decodes a push.v1 PushRequest (binary protobuf, or Connect JSON when
 * `json`) into series allocated from `a`; raw profiles point into `a`.
 */
int ingest__decode_push(struct arena *a, const struct ingest_limits *lim, const void *body,
			size_t len, int json, struct ingest_series **out, size_t *n,
			struct err_msg *msg);

/* ---- ingest.c ----------------------------------------------------------- */

/*
 * Converts the `n` pprofs of `in` and writes them in one transaction:
 * what ingest_profiles() does, with the defaults of time and duration.
 */
int ingest__run(struct store *st, const struct ingest_limits *lim, const char *tenant,
		const struct ingest_series *in, size_t n, int64_t time_ns, int64_t duration_ns,
		struct ingest_stats *out, struct err_msg *msg);

/*
 * Writes `n` converted profiles (borrowed) in one store transaction for
 * `tenant`, which may have at most lim->max_series series; nothing is
 * written on failure.  Messages of a failing profile are prefixed
 * "profile <i>: ".
 */
int ingest__write(struct store *st, const struct ingest_limits *lim, const char *tenant,
		  const struct ingest_pprof *pp, size_t n, struct ingest_stats *out,
		  struct err_msg *msg);

/* ---- otlp_convert.c ----------------------------------------------------- */

/*
 * OTLP profiles (opentelemetry-proto v1.10/v1.11, v1development) as
 * struct ingest_pprof.
 *
 *   decode    protobuf-c unpacks the ExportProfilesServiceRequest into `a`,
 *             or otlp_json.c decodes its JSON encoding into the same structs
 *             (its cap, ingest__otlp_arena_cap(), bounds the memory).  The
 *             .proto declares AnyValue's array/kvlist values as bytes, so
 *             unpacking never recurses deeper than the schema.
 *   validate  the dictionary whole, once: element 0 of every non-empty
 *             table is the zero value, every index in range, every stack
 *             within max_stack_depth.
 *   convert   the dictionary once into arrays shared by every profile:
 *             store_mapping / store_function / ingest_location arrays hold
 *             dictionary entries 1..n-1, so an OTLP mapping_index or
 *             function_index is already the "index + 1" of ingest_pprof,
 *             and stack_locs hold location_index - 1.  Then per Profile:
 *             its labels and profile type, and its samples merged by
 *             stack_index (sample attributes are not series labels).
 *
 * Messages name the place: "resource 0: scope 1: profile 2: sample 5:
 * stack_index 99 out of range (stack_table has 12)".
 */
struct ingest_otlp_req {
	struct ingest_pprof *profiles;  /* one per Profile with nonzero samples */
	size_t n;
	uint64_t otlp_samples;          /* Sample messages of those profiles */
};

/* The cap of the arena a request of `len` (inflated) bytes is converted in. */
size_t ingest__otlp_arena_cap(size_t len);

/*
 * Decodes, validates and converts an ExportProfilesServiceRequest p[0..n)
 * -- binary protobuf, or the OTLP/HTTP JSON encoding when `json`
 * (otlp_json.c) -- into `out`, allocated from `a`.  Both decoders fill the
 * same protoc-c structs, so validation and conversion are one code path.
 * `now_ns` is the time of profiles without time_unix_nano.  On failure
 * *out is untouched.
 */
int ingest__otlp_convert(struct arena *a, const struct ingest_limits *lim, const void *p,
			 size_t n, int json, int64_t now_ns, struct ingest_otlp_req *out,
			 struct err_msg *msg);

/* Bounds of the JSON decoder (otlp_json.c), besides the size and depth
 * limits: one string or bytes value, and the elements of one array. */
#define INGEST_OTLP_JSON_MAX_STRING (1 << 20)
#define INGEST_OTLP_JSON_MAX_ARRAY (1 << 22)

/* The cap of the temporary arena the JSON tree of `len` bytes is parsed into. */
size_t ingest__otlp_json_tree_cap(size_t len);

#endif
