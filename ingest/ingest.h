/*
 * ingest.h - decoding, validation and normalization of incoming profiles,
 * and their write into the store.
 *
 * Every entry point treats its bytes as hostile: sizes are capped by struct
 * ingest_limits before anything is allocated for them, every index and id is
 * checked, and a request is either written whole, in one store transaction,
 * or not at all.  Failures return ERR_INVALID (malformed), ERR_TOO_LARGE (a
 * limit) or a storage error, with a message that names the problem
 * ("profile 0: sample 17: location_id 99 not found").
 *
 * Each sample type of a pprof becomes its own profile type, identified as
 * Pyroscope does: `<__name__>:<sample type>:<sample unit>:<period type>:<period unit>`,
 * stored as the series label __profile_type__, with __name__ as Pyroscope
 * gives it per agent (naming.c; docs/ingest.md, "Profile type names"): the
 * request's declaration when it makes one, else Pyroscope's rule over the
 * profile's sample types, so two kinds of data never share a series.
 * Runtime addresses are stored as file offsets (address - memory_start +
 * file_offset); see normalize.c.
 *
 * Threading: all functions are reentrant; the store serializes writers.
 */
#ifndef UNHEX_INGEST_INGEST_H
#define UNHEX_INGEST_INGEST_H

#include <stddef.h>
#include <stdint.h>

struct arena;
struct blockpool;
struct err_msg;
struct store;
struct store_label;

/*
 * What ingest tells the layer above about what it stored (web/ passes it
 * on to the debug-info service, which ingest may not call).  Called after
 * a request's transaction committed, in the request's thread.
 */
#define INGEST_RAW_CLASSES 16

struct ingest_hooks {
	/*
	 * Per written pprof, for each binary whose frames in it have no names
	 * (locations without lines; `build_id` "" when the mapping has none;
	 * strings borrowed for the call), first raw_class: the class its
	 * profiles count in, [0, INGEST_RAW_CLASSES), so that a profile with
	 * several binaries of one class counts once there; -1 when the binary
	 * counts on its own; less to leave it out.  Then raw_class_total per
	 * class hit, and raw_binary per binary not left out (`cls` as
	 * raw_class said).  `profiles` is the stored profiles of the pprof;
	 * `samples` its samples with a frame in the class or binary, weighted
	 * by the value of the first sample type counted in "count" or
	 * "samples" (else one each).
	 */
	int (*raw_class)(void *ctx, const char *tenant, const char *service, const char *build_id,
			 const char *filename);
	void (*raw_class_total)(void *ctx, const char *tenant, const char *service, int cls,
				uint64_t profiles, uint64_t samples);
	void (*raw_binary)(void *ctx, const char *tenant, const char *service,
			   const char *build_id, const char *filename, int cls, uint64_t profiles,
			   uint64_t samples);
	void *ctx;
};

struct ingest_limits {
	size_t max_request_bytes;      /* HTTP body as received (web enforces) */
	size_t max_decompressed_bytes; /* one pprof after gunzip (gzip bombs) */
	size_t max_request_decoded_bytes; /* all pprofs of one request after gunzip,
					   * together (many small gzip bombs) */
	size_t max_profiles;           /* raw profiles in one request */
	size_t max_samples;            /* samples in one pprof */
	size_t max_stack_depth;        /* locations in one sample */
	size_t max_labels;             /* labels of one series */
	size_t max_label_bytes;        /* one label name or value */
	size_t max_series;             /* series of the tenant (store_txn_set_max_series) */
	size_t max_label_names;        /* distinct label names of the tenant */
	size_t max_label_values;       /* distinct values of one label name of the tenant
					* (both store_txn_set_max_labels) */
	const struct ingest_hooks *hooks; /* borrowed; NULL (the default): none */
	/* Where a request's arenas take their blocks (borrowed, shared by
	 * every thread that ingests; base/blockpool.h): a server passes one so
	 * that request after request reuses the same blocks.  NULL (the
	 * default): the C heap. */
	struct blockpool *pool;
};

/* Fills the defaults (documented in docs/ingest.md). */
void ingest_limits_default(struct ingest_limits *lim);

/* What a successful request wrote. */
struct ingest_stats {
	uint64_t profiles; /* stored profiles: one per (pprof, sample type) */
	uint64_t samples;  /* stored (stack, value) pairs */
	uint64_t pprof_samples; /* pprof Sample messages decoded, before aggregation */
	uint64_t duplicates; /* profiles skipped: their push ID was stored lately */
};

struct ingest_hints;

/* One raw pprof with the labels of its series. */
struct ingest_series {
	const struct store_label *labels; /* borrowed; must include service_name */
	size_t n_labels;
	const void *data;                 /* pprof, gzipped or raw; borrowed */
	size_t len;
	const struct ingest_hints *hints; /* borrowed, internal (ingest_int.h); NULL: none */
	/* The agent's profile ID (push.v1 RawSample.ID), or NULL/"": a profile
	 * whose ID the tenant pushed lately is skipped (store_txn_claim_id). */
	const char *id;
};

/*
 * Decodes and validates every pprof of `in`, then writes all of them in one
 * store transaction.  `default_time_ns` is used for profiles without
 * time_nanos.  On failure nothing is written.
 */
int ingest_profiles(struct store *st, const struct ingest_limits *lim, const char *tenant,
		    const struct ingest_series *in, size_t n, int64_t default_time_ns,
		    struct ingest_stats *out, struct err_msg *msg);

/*
 * Pyroscope's legacy `POST /ingest?name=<app>.<kind>{k=v,...}&from=&until=`
 * with a pprof body.  The app name becomes service_name; a known kind suffix
 * (cpu, alloc_objects, inuse_space, goroutines, ...) gives __name__.
 * `from_ns` is used when the pprof carries no time.
 */
int ingest_legacy(struct store *st, const struct ingest_limits *lim, const char *tenant,
		  const char *name, int64_t from_ns, int64_t until_ns, const void *pprof,
		  size_t len, struct ingest_stats *out, struct err_msg *msg);

/* The formats of Pyroscope's `POST /ingest` (its `format` parameter). */
enum ingest_format {
	INGEST_FORMAT_PPROF,      /* pprof, gzipped or raw */
	INGEST_FORMAT_JFR,        /* Java Flight Recorder chunks, gzipped or raw */
	INGEST_FORMAT_FOLDED,     /* "a;b;c 12" per line (Pyroscope's default, "groups") */
	INGEST_FORMAT_LINES,      /* "a;b;c" per line, one sample each */
	INGEST_FORMAT_TRIE,       /* the first Go agent's transport trie */
	INGEST_FORMAT_TREE,       /* a serialized flame tree */
	INGEST_FORMAT_SPEEDSCOPE, /* speedscope's JSON file format */
};

/* One `POST /ingest` as web/ decoded it; every pointer is borrowed. */
struct ingest_request {
	const char *name;           /* the name parameter: app[.kind]{k=v,...} */
	enum ingest_format format;
	const char *spy_name;       /* spyName, NULL when absent */
	uint32_t sample_rate;       /* sampleRate; 100 when absent or not a number */
	int64_t from_ns, until_ns;  /* from and until */
	const void *data;           /* the profile: the body or its multipart part */
	size_t len;
	const void *sample_type_config; /* pprof: the multipart part, or NULL */
	size_t stc_len;
	const void *jfr_labels;     /* jfr: the "labels" part (LabelsSnapshot), or NULL */
	size_t labels_len;
};

/*
 * Pyroscope's `POST /ingest` in any format, named as Pyroscope names it
 * (docs/ingest.md has the labels and profile types per format and agent).
 * A pprof or JFR without times of its own is stored at `from_ns`, lasting
 * until `until_ns`.  Everything is written in one transaction, or nothing.
 */
int ingest_pyroscope(struct store *st, const struct ingest_limits *lim, const char *tenant,
		     const struct ingest_request *req, struct ingest_stats *out,
		     struct err_msg *msg);

/*
 * The labels of a pprof sent to /ingest as application `name`
 * ("app.cpu{env=prod}"): service_name (the braces' one, else the
 * application name without a known kind suffix), __name__ when the suffix
 * is a known kind (ingest__kind_name), then the braces' labels.  Allocated
 * from `a`.  A client that sends the same pprofs through push.v1 (`unhex
 * ingest --batch`) gives its series these labels, so both land in the same
 * series.  A malformed name is ERR_INVALID, one past the label caps
 * ERR_TOO_LARGE.
 */
int ingest_legacy_labels(struct arena *a, const char *name, struct store_label **labels,
			 size_t *n, struct err_msg *msg);

/*
 * Pyroscope's `push.v1.PusherService/Push`: a PushRequest in binary protobuf
 * (json == 0) or Connect JSON (json != 0).
 */
int ingest_push(struct store *st, const struct ingest_limits *lim, const char *tenant,
		const void *body, size_t len, int json, struct ingest_stats *out,
		struct err_msg *msg);

/*
 * OTLP profiles over OTLP/HTTP (`POST /v1development/profiles`): an
 * ExportProfilesServiceRequest of opentelemetry-proto v1.10/v1.11
 * (package opentelemetry.proto.profiles.v1development) in binary protobuf,
 * or in the OTLP/HTTP JSON encoding when `json` != 0 (application/json:
 * lowerCamelCase or snake_case names, 64-bit integers as strings or
 * numbers, hex trace/span IDs; errors name the JSON path).  Each OTLP Profile with samples becomes
 * one stored profile of the series {service_name, __name__, allow-listed
 * resource/scope/profile attributes, __profile_type__}; native frames keep
 * their ELF virtual addresses (STORE_MAP_ADDR_VADDR).  The rules are in
 * docs/ingest.md, "OTLP profiles".  `now_ns` is the time of profiles
 * without time_unix_nano.  All profiles are written in one store
 * transaction, or none.  `body` is borrowed and already inflated;
 * out->pprof_samples counts OTLP Sample messages.
 */
int ingest_otlp(struct store *st, const struct ingest_limits *lim, const char *tenant,
		const void *body, size_t len, int json, int64_t now_ns, struct ingest_stats *out,
		struct err_msg *msg);

#endif
