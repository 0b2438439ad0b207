/*
 * pprof.c - decoding, validation and conversion of one pprof.
 *
 * The pprof is decoded by pprof_wire.c into a capped arena (the "pprof
 * arena"), checked element by element against the rules of
 * google/pprof proto/profile.proto (see docs/ingest.md), and copied into the
 * compact struct ingest_pprof of ingest_int.h in the request arena.  pprof
 * ids are resolved through a direct array when they are dense (the usual
 * 1..n) and through an open-addressing table otherwise, so every lookup on
 * the per-sample path is O(1).
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/hex.h"
#include "base/perfmap.h"

#include <stddef.h>
#include <string.h>

#define MAX_SAMPLE_TYPES 64
#define YEAR_1971_NS (365LL * 86400 * 1000000000)

typedef struct pprof_msg Profile;

/* ---- decoding ----------------------------------------------------------- */

size_t ingest__pprof_arena_cap(size_t len)
{
	/* The flat decode costs at most ~24x the wire size (an empty sample of
	 * two bytes becomes a 48-byte struct plus its pool offsets); 32x plus a
	 * fixed megabyte leaves room for the conversion's temporaries. */
	const size_t fixed = (size_t)1 << 20;

	if (len > (SIZE_MAX - fixed) / 32)
		return SIZE_MAX;
	return 32 * len + fixed;
}

/* The refusal of a pprof that would take the request past its decode budget. */
static int over_budget(const struct ingest_limits *lim, struct err_msg *msg)
{
	return err_reset(msg, ERR_TOO_LARGE,
			 "the request's profiles decode to more than %zu bytes together (its "
			 "inflate budget, max_request_decoded_bytes)",
			 lim->max_request_decoded_bytes);
}

int ingest__decode_pprof(const void *data, size_t len, const struct ingest_limits *lim,
			 size_t *decoded_left, struct arena *pa, struct buf *scratch, Profile *out,
			 struct err_msg *msg)
{
	const uint8_t *p = data;
	size_t n = len, cap = lim->max_decompressed_bytes;
	int by_budget = 0, rc;

	if (decoded_left && *decoded_left < cap) {
		cap = *decoded_left;
		by_budget = 1;
	}
	ingest__arena_init(pa, 1, lim);
	if (is_gzip(data, len)) {
		buf_reset(scratch);
		rc = gunzip_capped(data, len, cap, scratch, msg);
		if (rc == ERR_TOO_LARGE && by_budget)
			return over_budget(lim, msg);
		if (rc)
			return rc;
		p = (const uint8_t *)scratch->data;
		n = scratch->len;
	} else if (len > cap) {
		if (by_budget)
			return over_budget(lim, msg);
		return err_set(msg, ERR_TOO_LARGE, "profile of %zu bytes exceeds the limit of %zu",
			       len, lim->max_decompressed_bytes);
	}
	if (decoded_left)
		*decoded_left -= n;
	ingest__arena_init(pa, ingest__pprof_arena_cap(n), lim);
	return ingest__pprof_parse(p, n, pa, out, msg);
}

/* ---- id maps ------------------------------------------------------------ */

struct idmap {
	uint32_t *direct;  /* direct[id] = index + 1, when ids are dense */
	uint64_t n_direct;
	uint64_t *keys;    /* open addressing otherwise; 0 = empty slot */
	uint32_t *vals;
	size_t mask;
};

static int idmap_init(struct arena *t, struct idmap *m, size_t n, uint64_t max_id)
{
	memset(m, 0, sizeof(*m));
	if (max_id <= 2 * (uint64_t)n + 64) {
		m->n_direct = max_id + 1;
		m->direct = arena_calloc(t, (size_t)m->n_direct, sizeof(*m->direct));
		return m->direct ? 0 : arena_failed(t);
	}
	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	m->mask = cap - 1;
	m->keys = arena_calloc(t, cap, sizeof(*m->keys));
	m->vals = arena_calloc(t, cap, sizeof(*m->vals));
	return m->keys && m->vals ? 0 : arena_failed(t);
}

/* Adds id (nonzero) -> idx; returns 1 when the id is already present. */
static int idmap_put(struct idmap *m, uint64_t id, uint32_t idx)
{
	size_t i;

	if (m->direct) {
		if (m->direct[id])
			return 1;
		m->direct[id] = idx + 1;
		return 0;
	}
	for (i = hash_u64(id) & m->mask; m->keys[i]; i = (i + 1) & m->mask)
		if (m->keys[i] == id)
			return 1;
	m->keys[i] = id;
	m->vals[i] = idx + 1;
	return 0;
}

/* Returns index + 1, or 0 when the id is unknown. */
static inline uint32_t idmap_get(const struct idmap *m, uint64_t id)
{
	size_t i;

	if (m->direct)
		return id < m->n_direct ? m->direct[id] : 0;
	if (!m->keys || id == 0)
		return 0;
	for (i = hash_u64(id) & m->mask; m->keys[i]; i = (i + 1) & m->mask)
		if (m->keys[i] == id)
			return m->vals[i];
	return 0;
}

/* ---- conversion --------------------------------------------------------- */

struct conv {
	struct arena *a;            /* request arena: results */
	struct arena *t;            /* pprof arena: temporaries */
	const struct ingest_limits *lim;
	const Profile *p;
	struct ingest_pprof *out;
	const char **copied;        /* string index -> copy in a */
	uint64_t *str_hash;         /* string index -> content hash + 1, lazily */
	uint8_t *key_state;         /* string index as sample label key, see key_check */
	struct idmap maps, funcs, locs;
	uint8_t *map_jit;           /* mapping index -> a JIT mapping (perf-PID.map) */
	unsigned fixes;             /* INGEST_FIX_* of the request */
	struct err_msg *msg;
};

static int check_str(struct conv *c, int64_t idx, const char *what, size_t i, const char *field)
{
	size_t n = c->p->n_string_table;

	if (idx >= 0 && (uint64_t)idx < n)
		return 0;
	if (i == SIZE_MAX)
		return err_set(c->msg, ERR_INVALID,
			       "%s: %s: string index %lld out of range (%zu strings)", what, field,
			       (long long)idx, n);
	return err_set(c->msg, ERR_INVALID,
		       "%s %zu: %s: string index %lld out of range (%zu strings)", what, i, field,
		       (long long)idx, n);
}

static inline const char *str_at(const struct conv *c, int64_t idx)
{
	const char *s = c->p->string_table[idx];
	return s ? s : "";
}

/* A copy of string `idx` (already checked) in the request arena. */
static const char *str_copy(struct conv *c, int64_t idx)
{
	if (!c->copied[idx]) {
		const char *s = str_at(c, idx);
		c->copied[idx] = arena_strndup(c->a, s, strlen(s));
	}
	return c->copied[idx];
}

static uint64_t str_hash(struct conv *c, int64_t idx)
{
	if (!c->str_hash[idx]) {
		const char *s = str_at(c, idx);
		c->str_hash[idx] = hash_bytes(s, strlen(s), 0x756e686578ULL) | 1;
	}
	return c->str_hash[idx];
}

static int conv_header(struct conv *c)
{
	const Profile *p = c->p;
	int rc = 0;

	if (p->n_string_table == 0)
		return err_set(c->msg, ERR_INVALID, "string_table is empty (string_table[0] must be \"\")");
	if (str_at(c, 0)[0] != '\0')
		return err_set(c->msg, ERR_INVALID, "string_table[0] must be \"\"");
	if (p->n_sample_type == 0)
		return err_set(c->msg, ERR_INVALID, "no sample_type");
	if (p->n_sample_type > MAX_SAMPLE_TYPES)
		return err_set(c->msg, ERR_TOO_LARGE, "%zu sample types, more than %d",
			       p->n_sample_type, MAX_SAMPLE_TYPES);
	for (size_t i = 0; i < p->n_sample_type && !rc; i++) {
		const struct pprof_value_type *vt = &p->sample_type[i];
		rc = check_str(c, vt->type, "sample_type", i, "type");
		if (!rc)
			rc = check_str(c, vt->unit, "sample_type", i, "unit");
		for (size_t j = 0; j < i && !rc; j++)
			if (strcmp(str_at(c, vt->type), str_at(c, p->sample_type[j].type)) == 0 &&
			    strcmp(str_at(c, vt->unit), str_at(c, p->sample_type[j].unit)) == 0)
				rc = err_set(c->msg, ERR_INVALID,
					     "sample_type %zu: duplicate of sample_type %zu (%s/%s)",
					     i, j, str_at(c, vt->type), str_at(c, vt->unit));
	}
	if (!rc && p->has_period_type) {
		rc = check_str(c, p->period_type.type, "period_type", SIZE_MAX, "type");
		if (!rc)
			rc = check_str(c, p->period_type.unit, "period_type", SIZE_MAX, "unit");
	}
	if (!rc)
		rc = check_str(c, p->default_sample_type, "profile", SIZE_MAX, "default_sample_type");
	if (!rc)
		rc = check_str(c, p->drop_frames, "profile", SIZE_MAX, "drop_frames");
	if (!rc)
		rc = check_str(c, p->keep_frames, "profile", SIZE_MAX, "keep_frames");
	if (!rc)
		rc = check_str(c, p->doc_url, "profile", SIZE_MAX, "doc_url");
	for (size_t i = 0; i < p->n_comment && !rc; i++)
		rc = check_str(c, p->comment[i], "comment", i, "text");
	if (rc)
		return rc;
	if (p->time_nanos < 0)
		return err_set(c->msg, ERR_INVALID, "time_nanos %lld is negative",
			       (long long)p->time_nanos);
	if (p->duration_nanos < 0)
		return err_set(c->msg, ERR_INVALID, "duration_nanos %lld is negative",
			       (long long)p->duration_nanos);
	if (p->period < 0)
		return err_set(c->msg, ERR_INVALID, "period %lld is negative", (long long)p->period);
	return 0;
}

/*
 * Indexes the ids of `n` pprof elements, `stride` bytes apart and each
 * starting with its uint64 id, into `map`, checking that every id is nonzero
 * and unique; `what` names the element in the message.
 */
static int index_ids(struct conv *c, struct idmap *map, const void *elems, size_t n,
		     size_t stride, const char *what)
{
	const unsigned char *e = elems;
	uint64_t max_id = 0, id;
	int rc;

	for (size_t i = 0; i < n; i++) {
		memcpy(&id, e + i * stride, sizeof(id));
		if (id > max_id)
			max_id = id;
	}
	rc = idmap_init(c->t, map, n, max_id);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		memcpy(&id, e + i * stride, sizeof(id));
		if (id == 0)
			return err_set(c->msg, ERR_INVALID, "%s %zu: id is 0", what, i);
		if (idmap_put(map, id, (uint32_t)i))
			return err_set(c->msg, ERR_INVALID, "%s %zu: id %llu is not unique", what, i,
				       (unsigned long long)id);
	}
	return 0;
}

_Static_assert(offsetof(struct pprof_mapping, id) == 0, "index_ids reads ids first");
_Static_assert(offsetof(struct pprof_function, id) == 0, "index_ids reads ids first");
_Static_assert(offsetof(struct pprof_location, id) == 0, "index_ids reads ids first");

static int conv_mappings(struct conv *c)
{
	const Profile *p = c->p;
	size_t n = p->n_mapping;
	struct store_mapping *out;
	uint32_t pid;
	int rc;

	out = arena_calloc(c->a, n ? n : 1, sizeof(*out));
	c->map_jit = arena_alloc(c->t, n ? n : 1);
	if (!out)
		return arena_failed(c->a);
	if (!c->map_jit)
		return arena_failed(c->t);
	rc = index_ids(c, &c->maps, p->mapping, n, sizeof(p->mapping[0]), "mapping");
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const struct pprof_mapping *m = &p->mapping[i];
		struct store_mapping *o = &out[i];

		rc = check_str(c, m->filename, "mapping", i, "filename");
		if (!rc)
			rc = check_str(c, m->build_id, "mapping", i, "build_id");
		if (rc)
			return rc;
		rc = ingest__build_id(c->a, str_at(c, m->build_id), &o->build_id);
		if (rc == ERR_INVALID)
			return err_set(c->msg, rc, "mapping %zu: build_id longer than %d bytes", i,
				       INGEST_MAX_BUILD_ID);
		if (rc)
			return rc;
		o->filename = str_copy(c, m->filename);
		if (!o->filename)
			return arena_failed(c->a);
		o->memory_start = m->memory_start;
		o->memory_limit = m->memory_limit;
		o->file_offset = m->file_offset;
		c->map_jit[i] = (uint8_t)perfmap_jit_mapping(o->filename, o->build_id, &pid);
		o->flags = (m->has_functions ? STORE_MAP_HAS_FUNCTIONS : 0) |
			   (m->has_filenames ? STORE_MAP_HAS_FILENAMES : 0) |
			   (m->has_line_numbers ? STORE_MAP_HAS_LINE_NUMBERS : 0) |
			   (m->has_inline_frames ? STORE_MAP_HAS_INLINE_FRAMES : 0);
	}
	c->out->mappings = out;
	c->out->n_mappings = n;
	return 0;
}

/*
 * Interpreted stacks (py-spy, rbspy) name a function by its name alone, so
 * `main` of two files would be one frame; Pyroscope names them
 * "<file> <name>" for these agents (py-spy's absolute paths excepted).
 */
static const char *script_name(struct conv *c, const struct pprof_function *f)
{
	const char *file = str_at(c, f->filename), *name = str_at(c, f->name);
	size_t fl = strlen(file), nl = strlen(name);
	char *r;

	if ((c->fixes & INGEST_FIX_PYSPY) && file[0] == '/')
		return str_copy(c, f->name);
	r = arena_alloc(c->a, fl + nl + 2);
	if (!r)
		return NULL;
	memcpy(r, file, fl);
	r[fl] = ' ';
	memcpy(r + fl + 1, name, nl + 1);
	return r;
}

static int conv_functions(struct conv *c)
{
	const Profile *p = c->p;
	size_t n = p->n_function;
	struct store_function *out;
	int rc;

	out = arena_calloc(c->a, n ? n : 1, sizeof(*out));
	if (!out)
		return arena_failed(c->a);
	rc = index_ids(c, &c->funcs, p->function, n, sizeof(p->function[0]), "function");
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const struct pprof_function *f = &p->function[i];

		rc = check_str(c, f->name, "function", i, "name");
		if (!rc)
			rc = check_str(c, f->system_name, "function", i, "system_name");
		if (!rc)
			rc = check_str(c, f->filename, "function", i, "filename");
		if (rc)
			return rc;
		out[i].name = (c->fixes & INGEST_FIX_SCRIPTING) ? script_name(c, f)
							       : str_copy(c, f->name);
		out[i].system_name = str_copy(c, f->system_name);
		out[i].filename = str_copy(c, f->filename);
		out[i].start_line = f->start_line;
		if (!out[i].name || !out[i].system_name || !out[i].filename)
			return arena_failed(c->a);
	}
	c->out->functions = out;
	c->out->n_functions = n;
	return 0;
}

static int conv_location(struct conv *c, size_t i, struct ingest_location *o)
{
	const struct pprof_location *l = &c->p->location[i];
	struct ingest_line *lines = NULL;

	memset(o, 0, sizeof(*o));
	o->address = l->address;
	if (l->mapping_id) {
		uint32_t mi = idmap_get(&c->maps, l->mapping_id);
		const struct store_mapping *m;

		if (!mi)
			return err_set(c->msg, ERR_INVALID, "location %zu: mapping_id %llu not found",
				       i, (unsigned long long)l->mapping_id);
		m = &c->out->mappings[mi - 1];
		/* JIT code (a perf-PID.map mapping without a build ID) has no file
		 * offsets: its runtime address is what the process's perf map names,
		 * and the store keeps one mapping per file name, so it is kept. */
		if (c->map_jit[mi - 1])
			o->address = l->address;
		else if (ingest__normalize_address(l->address, m->memory_start, m->memory_limit,
					      m->file_offset, &o->address)) {
			if (l->address < m->memory_start)
				return err_set(c->msg, ERR_INVALID,
					       "location %zu: address 0x%llx below mapping %llu start 0x%llx",
					       i, (unsigned long long)l->address,
					       (unsigned long long)l->mapping_id,
					       (unsigned long long)m->memory_start);
			return err_set(c->msg, ERR_INVALID,
				       "location %zu: address 0x%llx overflows with mapping %llu file_offset 0x%llx",
				       i, (unsigned long long)l->address,
				       (unsigned long long)l->mapping_id,
				       (unsigned long long)m->file_offset);
		}
		o->mapping = mi;
	}
	if (l->n_line) {
		if (l->n_line > UINT32_MAX)
			return err_set(c->msg, ERR_TOO_LARGE, "location %zu: too many lines", i);
		lines = arena_alloc(c->a, l->n_line * sizeof(*lines));
		if (!lines)
			return arena_failed(c->a);
	}
	for (size_t j = 0; j < l->n_line; j++) {
		const struct pprof_line *ln = &l->line[j];
		uint32_t fi = 0;

		if (ln->function_id) {
			fi = idmap_get(&c->funcs, ln->function_id);
			if (!fi)
				return err_set(c->msg, ERR_INVALID,
					       "location %zu: line %zu: function_id %llu not found", i,
					       j, (unsigned long long)ln->function_id);
		}
		lines[j].function = fi;
		lines[j].line = ln->line;
		lines[j].column = ln->column;
	}
	o->lines = lines;
	o->n_lines = (uint32_t)l->n_line;
	return 0;
}

static int conv_locations(struct conv *c)
{
	const Profile *p = c->p;
	size_t n = p->n_location;
	struct ingest_location *out;
	int rc;

	if (n >= UINT32_MAX || p->n_mapping >= UINT32_MAX || p->n_function >= UINT32_MAX)
		return err_set(c->msg, ERR_TOO_LARGE, "too many locations, functions or mappings");
	/* conv_location() clears each element: the table is ~45 KB of a
	 * bench-shape pprof, not worth a pass of its own. */
	out = arena_alloc(c->a, (n ? n : 1) * sizeof(*out));
	if (!out)
		return arena_failed(c->a);
	rc = index_ids(c, &c->locs, p->location, n, sizeof(p->location[0]), "location");
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = conv_location(c, i, &out[i]);
		if (rc)
			return rc;
	}
	c->out->locations = out;
	c->out->n_locations = n;
	return 0;
}

/* ---- sample label sets -------------------------------------------------- */

/* One string label of a sample, as string indices. */
struct pair {
	int64_t key;
	int64_t val;
};

struct gtab {
	uint64_t hash[2 * INGEST_MAX_GROUPS];
	uint32_t slot[2 * INGEST_MAX_GROUPS]; /* group index, 0 = empty (group 0 has no labels) */
	struct pair *pairs[INGEST_MAX_GROUPS];
	size_t n_pairs[INGEST_MAX_GROUPS];
	size_t n_groups;
	size_t n_base; /* labels every series of this pprof has, with __name__ */
};

enum { KEY_UNKNOWN, KEY_OK, KEY_INVALID, KEY_RESERVED, KEY_IGNORED, KEY_LONG, KEY_SPAN };

/*
 * Sample labels that name one span or one profile would create a series
 * per request; like Pyroscope we do not make them series labels.
 */
static int key_check(struct conv *c, int64_t key)
{
	if (c->key_state[key] == KEY_UNKNOWN) {
		const char *k = str_at(c, key);
		uint8_t st = KEY_OK;

		if (strlen(k) > c->lim->max_label_bytes)
			st = KEY_LONG;
		else if (!ingest__label_name_ok(k))
			st = KEY_INVALID;
		else if ((k[0] == '_' && k[1] == '_') || strcmp(k, STORE_LABEL_SERVICE) == 0)
			st = KEY_RESERVED;
		else if (strcmp(k, "span_id") == 0 || strcmp(k, "profile_id") == 0)
			st = KEY_SPAN; /* Pyroscope reads profile_id as span_id */
		else if (strcmp(k, "span_name") == 0 || strcmp(k, "trace_id") == 0)
			st = KEY_IGNORED;
		c->key_state[key] = st;
	}
	return c->key_state[key];
}

static int pairs_equal(struct conv *c, const struct pair *x, const struct pair *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(str_at(c, x[i].key), str_at(c, y[i].key)) != 0 ||
		    strcmp(str_at(c, x[i].val), str_at(c, y[i].val)) != 0)
			return 0;
	return 1;
}

static int label_str(struct conv *c, int64_t idx, size_t si, size_t j, const char *field)
{
	size_t n = c->p->n_string_table;

	if (idx >= 0 && (uint64_t)idx < n)
		return 0;
	return err_set(c->msg, ERR_INVALID,
		       "sample %zu: label %zu: %s: string index %lld out of range (%zu strings)", si,
		       j, field, (long long)idx, n);
}

/*
 * A span id label's value as Pyroscope reads it: 16 hex digits, the 8 bytes
 * they spell read as a little-endian u64; anything else is no span (0).
 */
static uint64_t span_of(const char *s)
{
	uint64_t v = 0;

	if (strlen(s) != 16)
		return 0;
	for (int i = 0; i < 8; i++) {
		int hi = hex_digit((unsigned char)s[2 * i]);
		int lo = hex_digit((unsigned char)s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		v |= (uint64_t)(hi << 4 | lo) << (8 * i);
	}
	return v;
}

/*
 * Collects the string labels of sample `si` into `pr`, sorted by name, and
 * their count; *span is its span id (0: none).
 */
static int sample_pairs(struct conv *c, size_t si, struct pair *pr, size_t *np, uint64_t *span)
{
	const struct pprof_sample *s = &c->p->sample[si];
	size_t n = 0;
	int rc;

	for (size_t j = 0; j < s->n_label; j++) {
		const struct pprof_label *lb = &s->label[j];

		rc = label_str(c, lb->key, si, j, "key");
		if (!rc)
			rc = label_str(c, lb->str, si, j, "str");
		if (!rc)
			rc = label_str(c, lb->num_unit, si, j, "num_unit");
		if (rc)
			return rc;
		if (lb->str && lb->num)
			return err_set(c->msg, ERR_INVALID,
				       "sample %zu: label '%.64s' has both str and num", si,
				       str_at(c, lb->key));
		if (!lb->str)
			continue;
		switch (key_check(c, lb->key)) {
		case KEY_LONG:
			return err_set(c->msg, ERR_TOO_LARGE,
				       "sample %zu: label name longer than %zu bytes", si,
				       c->lim->max_label_bytes);
		case KEY_INVALID:
			return err_set(c->msg, ERR_INVALID,
				       "sample %zu: label name '%.64s' is invalid (want [a-zA-Z_][a-zA-Z0-9_.]*)",
				       si, str_at(c, lb->key));
		case KEY_RESERVED:
			return err_set(c->msg, ERR_INVALID,
				       "sample %zu: label '%.64s' may not be set by a sample", si,
				       str_at(c, lb->key));
		case KEY_IGNORED:
			continue;
		case KEY_SPAN:
			if (!*span)
				*span = span_of(str_at(c, lb->str));
			continue;
		}
		if (strlen(str_at(c, lb->str)) > c->lim->max_label_bytes)
			return err_set(c->msg, ERR_TOO_LARGE,
				       "sample %zu: label '%.64s': value longer than %zu bytes", si,
				       str_at(c, lb->key), c->lim->max_label_bytes);
		pr[n].key = lb->key;
		pr[n].val = lb->str;
		/* Insertion sort by name: label sets are small. */
		for (size_t k = n; k > 0; k--) {
			int cmp = strcmp(str_at(c, pr[k - 1].key), str_at(c, pr[k].key));
			struct pair tmp;

			if (cmp == 0)
				return err_set(c->msg, ERR_INVALID, "sample %zu: label '%.64s' given twice",
					       si, str_at(c, lb->key));
			if (cmp < 0)
				break;
			tmp = pr[k - 1];
			pr[k - 1] = pr[k];
			pr[k] = tmp;
		}
		n++;
	}
	*np = n;
	return 0;
}

/* How many labels a series of this group will have (base + own + __profile_type__). */
static size_t series_label_count(struct conv *c, const struct pair *pr, size_t np)
{
	size_t n = c->out->n_labels + 1;

	for (size_t i = 0; i < np; i++)
		if (!ingest__label_get(c->out->labels, c->out->n_labels, str_at(c, pr[i].key)))
			n++;
	return n;
}

static int group_of(struct conv *c, struct gtab *g, size_t si, struct pair *pr, size_t np,
		    uint32_t *out)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	size_t i;

	for (size_t k = 0; k < np; k++)
		h = hash_combine(hash_combine(h, str_hash(c, pr[k].key)), str_hash(c, pr[k].val));
	for (i = h & (2 * INGEST_MAX_GROUPS - 1); g->slot[i]; i = (i + 1) & (2 * INGEST_MAX_GROUPS - 1)) {
		uint32_t gi = g->slot[i];
		if (g->hash[i] == h && g->n_pairs[gi] == np && pairs_equal(c, g->pairs[gi], pr, np)) {
			*out = gi;
			return 0;
		}
	}
	if (g->n_groups == INGEST_MAX_GROUPS)
		return err_set(c->msg, ERR_TOO_LARGE,
			       "sample %zu: more than %d distinct sample label sets", si,
			       INGEST_MAX_GROUPS - 1);
	if (series_label_count(c, pr, np) > c->lim->max_labels)
		return err_set(c->msg, ERR_TOO_LARGE,
			       "sample %zu: %zu series labels, more than the limit of %zu", si,
			       series_label_count(c, pr, np), c->lim->max_labels);
	g->pairs[g->n_groups] = arena_alloc(c->t, np * sizeof(*pr));
	if (!g->pairs[g->n_groups])
		return arena_failed(c->t);
	memcpy(g->pairs[g->n_groups], pr, np * sizeof(*pr));
	g->n_pairs[g->n_groups] = np;
	g->hash[i] = h;
	g->slot[i] = (uint32_t)g->n_groups;
	*out = (uint32_t)g->n_groups++;
	return 0;
}

static int conv_groups(struct conv *c, const struct gtab *g)
{
	size_t n = g ? g->n_groups : 1;
	struct ingest_group *out = arena_calloc(c->a, n, sizeof(*out));

	if (!out)
		return arena_failed(c->a);
	for (size_t gi = 1; gi < n; gi++) {
		struct store_label *l = arena_calloc(c->a, g->n_pairs[gi], sizeof(*l));

		if (!l)
			return arena_failed(c->a);
		for (size_t k = 0; k < g->n_pairs[gi]; k++) {
			l[k].name = str_copy(c, g->pairs[gi][k].key);
			l[k].value = str_copy(c, g->pairs[gi][k].val);
			if (!l[k].name || !l[k].value)
				return arena_failed(c->a);
		}
		out[gi].labels = l;
		out[gi].n_labels = g->n_pairs[gi];
	}
	c->out->groups = out;
	c->out->n_groups = n;
	return 0;
}

/* ---- samples ------------------------------------------------------------ */

static int conv_samples(struct conv *c)
{
	const Profile *p = c->p;
	size_t n = p->n_sample, nt = p->n_sample_type, total = 0, max_labels = 0;
	size_t *off;
	uint32_t *locs, *grp;
	int64_t *vals;
	uint64_t *spans = NULL;
	struct pair *pr = NULL;
	struct gtab *g;
	int rc;

	if (n > c->lim->max_samples)
		return err_set(c->msg, ERR_TOO_LARGE, "%zu samples, more than the limit of %zu", n,
			       c->lim->max_samples);
	for (size_t i = 0; i < n; i++) {
		const struct pprof_sample *s = &p->sample[i];

		if (s->n_location_id > c->lim->max_stack_depth)
			return err_set(c->msg, ERR_TOO_LARGE,
				       "sample %zu: stack depth %zu exceeds the limit of %zu", i,
				       s->n_location_id, c->lim->max_stack_depth);
		if (s->n_value != nt)
			return err_set(c->msg, ERR_INVALID,
				       "sample %zu: %zu values, want %zu (one per sample_type)", i,
				       s->n_value, nt);
		total += s->n_location_id;
		if (s->n_label > max_labels)
			max_labels = s->n_label;
	}
	off = arena_alloc(c->a, (n + 1) * sizeof(*off));
	locs = arena_alloc(c->a, (total ? total : 1) * sizeof(*locs));
	grp = arena_alloc(c->a, (n ? n : 1) * sizeof(*grp));
	vals = arena_calloc(c->a, n ? n : 1, nt * sizeof(*vals));
	if (!off || !locs || !grp || !vals)
		return arena_failed(c->a);
	/* The label-set table is only needed when some sample has labels. */
	g = NULL;
	if (max_labels) {
		g = arena_calloc(c->t, 1, sizeof(*g));
		pr = arena_alloc(c->t, max_labels * sizeof(*pr));
		if (!g || !pr)
			return arena_failed(c->t);
		g->n_groups = 1; /* group 0: no sample labels */
	}
	total = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pprof_sample *s = &p->sample[i];
		size_t np = 0;

		off[i] = total;
		for (size_t j = 0; j < s->n_location_id; j++) {
			uint32_t li = idmap_get(&c->locs, s->location_id[j]);

			if (!li)
				return err_set(c->msg, ERR_INVALID,
					       "sample %zu: location_id %llu not found", i,
					       (unsigned long long)s->location_id[j]);
			locs[total++] = li - 1;
		}
		memcpy(vals + i * nt, s->value, nt * sizeof(*vals));
		grp[i] = 0;
		if (s->n_label) {
			uint64_t span = 0;

			rc = sample_pairs(c, i, pr, &np, &span);
			if (!rc && np)
				rc = group_of(c, g, i, pr, np, &grp[i]);
			if (rc)
				return rc;
			if (span && !spans && !(spans = arena_calloc(c->a, n, sizeof(*spans))))
				return arena_failed(c->a);
			if (span)
				spans[i] = span;
		}
	}
	c->out->sample_span = spans;
	off[n] = total;
	c->out->n_samples = n;
	c->out->sample_off = off;
	c->out->stack_locs = locs;
	c->out->sample_group = grp;
	c->out->values = vals;
	return conv_groups(c, g);
}

/* ---- profile types ------------------------------------------------------ */

/*
 * The sample type names as named: .NET agents wrote "inuse-space" where
 * everyone else writes "inuse_space", and Pyroscope renames them.
 */
static int conv_type_names(struct conv *c, const char ***out)
{
	const Profile *p = c->p;
	const char **names = arena_calloc(c->t, p->n_sample_type, sizeof(*names));

	if (!names)
		return arena_failed(c->t);
	for (size_t t = 0; t < p->n_sample_type; t++) {
		const char *s = str_at(c, p->sample_type[t].type);
		char *r;

		names[t] = s;
		if (!(c->fixes & INGEST_FIX_DOTNET) || !strchr(s, '-'))
			continue;
		r = arena_strndup(c->t, s, strlen(s));
		if (!r)
			return arena_failed(c->t);
		for (char *q = r; *q; q++)
			if (*q == '-')
				*q = '_';
		names[t] = r;
	}
	*out = names;
	return 0;
}

/*
 * Base labels: the request's, with __name__ as Pyroscope has it: the one
 * the request gives (Alloy's godeltaprof_<kind> read as <kind>), else the
 * one Pyroscope derives from the sample types and the request's
 * sample_type_config (ingest__metric_name).
 */
static int conv_labels(struct conv *c, const struct ingest_series *in)
{
	const Profile *p = c->p;
	const char *name = ingest__label_get(in->labels, in->n_labels, STORE_LABEL_NAME);
	const struct ingest_stc *stc = in->hints ? in->hints->stc : NULL;
	const char **type_names = NULL;
	struct store_label *l;
	size_t n = in->n_labels;
	int rc;

	rc = conv_type_names(c, &type_names);
	if (rc)
		return rc;
	if (name) {
		name = ingest__relabel_name(name);
	} else {
		name = ingest__metric_name(type_names, p->n_sample_type, stc);
		if (!*name)
			return err_set(c->msg, ERR_INVALID,
				       "no __name__ label and sample_type 0 has no type to derive it");
		if (!ingest__label_name_ok(name))
			return err_set(c->msg, ERR_INVALID,
				       "no __name__ label and the profile's name '%.64s' is not a valid name",
				       name);
		n++;
	}
	name = arena_strndup(c->a, name, strlen(name));
	if (!name)
		return arena_failed(c->a);
	l = arena_calloc(c->a, n ? n : 1, sizeof(*l));
	if (!l)
		return arena_failed(c->a);
	n = 0;
	for (size_t i = 0; i < in->n_labels; i++) {
		if (ingest__label_dropped(in->labels[i].name))
			continue;
		l[n] = in->labels[i];
		if (strcmp(l[n].name, STORE_LABEL_NAME) == 0)
			l[n].value = name;
		n++;
	}
	if (!ingest__label_get(l, n, STORE_LABEL_NAME)) {
		l[n].name = STORE_LABEL_NAME;
		l[n++].value = name;
	}
	if (n + 1 > c->lim->max_labels)
		return err_set(c->msg, ERR_TOO_LARGE, "%zu series labels, more than the limit of %zu",
			       n + 1, c->lim->max_labels);
	c->out->labels = l;
	c->out->n_labels = n;
	c->out->service = ingest__label_get(l, n, STORE_LABEL_SERVICE);

	const char **types = arena_calloc(c->a, p->n_sample_type, sizeof(*types));
	if (!types)
		return arena_failed(c->a);
	for (size_t t = 0; t < p->n_sample_type; t++) {
		const struct pprof_value_type *st = &p->sample_type[t];
		const char *parts[5] = { name, type_names[t], str_at(c, st->unit), "", "" };

		/* Without a period_type Pyroscope leaves its two parts empty. */
		if (p->has_period_type) {
			parts[3] = str_at(c, p->period_type.type);
			parts[4] = str_at(c, p->period_type.unit);
		}
		types[t] = ingest__profile_type_id(c->a, parts);
		if (!types[t])
			return arena_failed(c->a);
		if (strlen(types[t]) > c->lim->max_label_bytes)
			return err_set(c->msg, ERR_TOO_LARGE,
				       "sample_type %zu: profile type longer than %zu bytes", t,
				       c->lim->max_label_bytes);
	}
	c->out->profile_types = types;
	c->out->n_types = p->n_sample_type;
	return 0;
}

static int convert_profile(struct conv *c, const struct ingest_series *in,
			   const struct ingest_defaults *def)
{
	const Profile *p = c->p;
	int rc;

	c->copied = arena_calloc(c->t, p->n_string_table ? p->n_string_table : 1, sizeof(*c->copied));
	c->str_hash = arena_calloc(c->t, p->n_string_table ? p->n_string_table : 1, sizeof(*c->str_hash));
	c->key_state = arena_calloc(c->t, p->n_string_table ? p->n_string_table : 1, 1);
	if (!c->copied || !c->str_hash || !c->key_state)
		return arena_failed(c->t);
	rc = conv_header(c);
	if (!rc)
		rc = conv_labels(c, in);
	if (!rc)
		rc = conv_mappings(c);
	if (!rc)
		rc = conv_functions(c);
	if (!rc)
		rc = conv_locations(c);
	if (!rc)
		rc = conv_samples(c);
	if (rc)
		return rc;
	c->out->time_ns = p->time_nanos ? p->time_nanos : def->time_ns;
	/* Old py-spy, rbspy and pyroscope-rs agents wrote microseconds here:
	 * a time in 1970 is taken as missing. */
	if ((c->fixes & INGEST_FIX_TIME) && p->time_nanos < YEAR_1971_NS)
		c->out->time_ns = def->time_ns;
	c->out->duration_ns = p->duration_nanos ? p->duration_nanos : def->duration_ns;
	c->out->period = p->period;
	return 0;
}

/*
 * Old .NET agents wrote every function with id 0 and one function per
 * location, in the same order; Pyroscope repairs such a profile by giving
 * each function the id of its location, which is what the lines refer to.
 */
static int dotnet_function_ids(struct arena *pa, Profile *p)
{
	struct pprof_function *f;

	if (p->n_function == 0 || p->n_function != p->n_location)
		return 0;
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i].id != 0)
			return 0;
	f = arena_alloc(pa, p->n_function * sizeof(*f));
	if (!f)
		return arena_failed(pa);
	for (size_t i = 0; i < p->n_function; i++) {
		f[i] = p->function[i];
		f[i].id = p->location[i].id;
	}
	p->function = f;
	return 0;
}

int ingest__convert(struct arena *a, const struct ingest_limits *lim,
		    const struct ingest_series *in, const struct ingest_defaults *def,
		    struct ingest_pprof *out, struct err_msg *msg)
{
	struct ingest_pprof res;
	struct conv c;
	struct arena pa;
	struct buf scratch;
	Profile prof;
	int rc;

	rc = ingest__check_labels(lim, in->labels, in->n_labels, msg);
	if (rc)
		return rc;
	buf_init(&scratch, lim->max_decompressed_bytes);
	rc = ingest__decode_pprof(in->data, in->len, lim, def->decoded_left, &pa, &scratch, &prof,
				  msg);
	/* The decoded message holds copies, never pointers into these bytes. */
	buf_release(&scratch);
	if (rc)
		goto out;
	if (in->hints && (in->hints->fixes & INGEST_FIX_DOTNET)) {
		rc = dotnet_function_ids(&pa, &prof);
		if (rc)
			goto out;
	}
	memset(&res, 0, sizeof(res));
	memset(&c, 0, sizeof(c));
	c.fixes = in->hints ? in->hints->fixes : 0;
	c.a = a;
	c.t = &pa;
	c.lim = lim;
	c.p = &prof;
	c.out = &res;
	c.msg = msg;
	rc = convert_profile(&c, in, def);
	if (rc == ERR_TOO_LARGE && msg && !msg->text[0])
		rc = err_set(msg, rc, "converting the profile needs more memory than allowed");
	if (rc == ERR_NOMEM && msg && !msg->text[0])
		rc = err_set(msg, rc, "out of memory converting the profile");
	if (!rc)
		*out = res;
out:
	arena_release(&pa);
	return rc;
}
