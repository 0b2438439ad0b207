/*
 * pprof_writer.h - builds a pprof Profile from raw-address samples, for the
 * test tools (perf2pprof) and the benchmark workload generator.
 *
 * The writer interns strings, mappings and locations, and aggregates samples
 * that have the same location sequence and the same `thread`-style string
 * label by adding their values.  Every table has a cap (PW_MAX_ENTRIES); an
 * add past it fails with ERR_TOO_LARGE.  Locations carry no lines: the
 * profiles it writes are the stripped-production case (has_functions=false).
 *
 * Ids handed out are pprof ids (1-based).  Not thread-safe.
 */
#ifndef UNHEX_TOOLS_PPROF_WRITER_H
#define UNHEX_TOOLS_PPROF_WRITER_H

#include <stddef.h>
#include <stdint.h>

struct buf;

#define PW_MAX_VALUES 4
#define PW_MAX_ENTRIES (64u * 1024 * 1024)

struct pw_table {
	uint32_t *slots; /* index + 1; 0 is empty */
	size_t cap;      /* power of two */
	size_t n;
};

struct pw_sample {
	size_t loc_off; /* into pw.locs_pool */
	uint32_t n_locs;
	int64_t label_str; /* string index of the label value; 0 = no label */
	int64_t values[PW_MAX_VALUES];
};

struct pw_mapping {
	uint64_t start, limit, offset;
	int64_t filename, build_id;
};

struct pw_location {
	uint64_t mapping_id;
	uint64_t address;
};

struct pw {
	size_t n_values;
	char **strs;     /* owned */
	size_t n_strs, cap_strs;
	struct pw_table str_tab;
	struct pw_mapping *maps;
	size_t n_maps, cap_maps;
	struct pw_location *locs;
	size_t n_locs, cap_locs;
	struct pw_table loc_tab;
	uint64_t *locs_pool;
	size_t n_pool, cap_pool;
	struct pw_sample *samples;
	size_t n_samples, cap_samples;
	struct pw_table sample_tab;
	int64_t label_key; /* string index of the sample label key, 0 = none */
};

/* Caller allocates; `n_values` (1..PW_MAX_VALUES) values per sample. */
int pw_init(struct pw *w, size_t n_values);
void pw_release(struct pw *w);

/* Interns a string (borrowed) and returns its index in *idx. */
int pw_string(struct pw *w, const char *s, int64_t *idx);

/* Adds a mapping (strings borrowed) and returns its id; no dedup. */
int pw_mapping(struct pw *w, uint64_t start, uint64_t limit, uint64_t offset,
	       const char *filename, const char *build_id, uint64_t *id);

/* Finds or adds the location (mapping id or 0, runtime address). */
int pw_location(struct pw *w, uint64_t mapping_id, uint64_t address, uint64_t *id);

/* Sets the key of the per-sample string label ("thread"); borrowed. */
int pw_label_key(struct pw *w, const char *key);

/*
 * Adds a sample: location ids leaf first (borrowed), `label` the string
 * label value (NULL for none; needs pw_label_key), w->n_values values.
 * Samples with the same locations and label are summed.
 */
int pw_sample(struct pw *w, const uint64_t *loc_ids, size_t n, const char *label,
	      const int64_t *values);

struct pw_meta {
	const char *const *type_unit; /* 2 * n_values strings: type, unit, ... */
	const char *period_type;
	const char *period_unit;
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
};

/* Appends the encoded Profile to out, gzipped when `gzip` is non-zero. */
int pw_write(struct pw *w, const struct pw_meta *meta, int gzip, struct buf *out);

#endif
