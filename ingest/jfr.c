/*
 * jfr.c - Java Flight Recorder files (JDK 11+ chunk format 2.x, as the JDK
 * and async-profiler write them) as one profile per event kind, named as
 * Pyroscope names them.
 *
 * A file is one or more self-contained chunks.  A chunk is a 68-byte
 * big-endian header (magic "FLR\0", major version 2, chunk size, offsets
 * of the last constant-pool checkpoint and of the metadata, start time,
 * duration, start ticks, ticks per second, flags) followed by records.  A
 * record is a varint size (of the whole record), a varlong type and a
 * payload; type 0 is the metadata, type 1 a checkpoint of constant pools,
 * any other an event of the type the metadata declares with that id.
 * Integers are "compressed": LEB128 groups of 7 bits, with a ninth byte,
 * when there is one, taking all its 8 bits; booleans and bytes are one
 * byte, floats and doubles big-endian.  A string starts with its encoding:
 * 0 null, 1 empty, 2 an index into the java.lang.String pool, 3 UTF-8, 4
 * UTF-16 code units as varints, 5 Latin-1, each with a varint length.
 *
 * The metadata is a tree of elements (name, attributes, children, all by
 * index into its own string table): root > metadata > class (name, id) >
 * field (name, class = type id, constantPool, dimension).  A value of a
 * class is its fields in order: a constant-pool field is a varlong key, an
 * array a varint count then its elements, a primitive as above, any other
 * class inline.  A checkpoint holds pools: per pool a type id, a count and
 * (key, value) pairs.
 *
 * One pass reads a chunk: the metadata at the header's offset, then every
 * record in order, checkpoints first (a first sweep), events second.  From
 * the pools it keeps symbols, classes, methods, stack traces, thread
 * states and strings; every other value is skipped by walking its type.
 *
 * Events, and what Pyroscope makes of them (struct jfr_kind below):
 *   jdk.ExecutionSample           process_cpu, unless the thread sleeps;
 *                                 also wall when the recording's "event"
 *                                 setting is wall (async-profiler)
 *   profiler.WallClockSample      wall (and process_cpu when runnable)
 *   jdk.ObjectAllocationInNewTLAB memory alloc_in_new_tlab_{objects,bytes}
 *   jdk.ObjectAllocationOutsideTLAB memory alloc_outside_tlab_{objects,bytes}
 *   jdk.ObjectAllocationSample    memory alloc_sample_{objects,bytes}
 *   jdk.JavaMonitorEnter          mutex contentions, delay
 *   jdk.ThreadPark                block contentions, delay
 *   profiler.LiveObject           memory live
 *   profiler.Malloc               memory malloc_{objects,bytes}
 *   jdk.ActiveSetting "event"     the jfr_event label
 * A frame is "<class>.<method>" with the class in its internal form
 * (java/lang/Thread.run) and its line; JVM-generated names (lambdas,
 * reflection accessors, CGLIB proxies, temp copies of native libraries)
 * lose their per-process suffix, as Pyroscope's parser renames them.
 * Durations are read in ticks and stored in nanoseconds.
 *
 * Bounds: every count is checked against the bytes left before anything
 * is allocated for it, the element tree and inline values nest at most
 * JFR_MAX_DEPTH deep, and a step budget (JFR_STEPS_PER_BYTE per byte of
 * the chunk) ends values of empty types repeated by huge counts.  Memory
 * is the chunk's arena (capped, freed per chunk) plus the builders'.
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/hash.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JFR_HEADER 68
#define JFR_MAX_DEPTH 32
#define JFR_STEPS_PER_BYTE 16
#define JFR_LABELS_MAX_DEPTH 4
#define NS_PER_S 1000000000ULL

/* ---- event kinds ---------------------------------------------------------- */

enum kind_id {
	K_CPU,
	K_WALL,
	K_TLAB_IN,
	K_TLAB_OUT,
	K_LOCK,
	K_PARK,
	K_LIVE,
	K_ALLOC_SAMPLE,
	K_MALLOC,
	K_COUNT
};

static const struct ingest_jfr_kind kinds[K_COUNT] = {
	[K_CPU] = { "process_cpu", 1, { "cpu" }, { "nanoseconds" }, "cpu", "nanoseconds", 1 },
	[K_WALL] = { "wall", 1, { "wall" }, { "nanoseconds" }, "wall", "nanoseconds", 1 },
	[K_TLAB_IN] = { "memory", 2, { "alloc_in_new_tlab_objects", "alloc_in_new_tlab_bytes" },
			{ "count", "bytes" }, "space", "bytes", 0 },
	[K_TLAB_OUT] = { "memory", 2, { "alloc_outside_tlab_objects", "alloc_outside_tlab_bytes" },
			 { "count", "bytes" }, "space", "bytes", 0 },
	[K_LOCK] = { "mutex", 2, { "contentions", "delay" }, { "count", "nanoseconds" }, "mutex",
		     "count", 0 },
	[K_PARK] = { "block", 2, { "contentions", "delay" }, { "count", "nanoseconds" }, "block",
		     "count", 0 },
	[K_LIVE] = { "memory", 1, { "live" }, { "count" }, "objects", "count", 0 },
	[K_ALLOC_SAMPLE] = { "memory", 2, { "alloc_sample_objects", "alloc_sample_bytes" },
			     { "count", "bytes" }, "space", "bytes", 0 },
	[K_MALLOC] = { "memory", 2, { "malloc_objects", "malloc_bytes" }, { "count", "bytes" }, "",
		       "", 0 },
};

/* The events read, by class name. */
enum ev_id {
	E_EXEC,
	E_WALL,
	E_TLAB_IN,
	E_TLAB_OUT,
	E_ALLOC_SAMPLE,
	E_LOCK,
	E_PARK,
	E_LIVE,
	E_MALLOC,
	E_SETTING,
	E_COUNT
};

static const char *const ev_names[E_COUNT] = {
	"jdk.ExecutionSample",		   "profiler.WallClockSample",
	"jdk.ObjectAllocationInNewTLAB",   "jdk.ObjectAllocationOutsideTLAB",
	"jdk.ObjectAllocationSample",	   "jdk.JavaMonitorEnter",
	"jdk.ThreadPark",		   "profiler.LiveObject",
	"profiler.Malloc",		   "jdk.ActiveSetting",
};

/* The constant pools kept, by class name. */
enum pool_id { P_SYMBOL, P_CLASS, P_METHOD, P_STACK, P_STATE, P_STRING, P_COUNT };

static const char *const pool_names[P_COUNT] = {
	"jdk.types.Symbol",     "java.lang.Class",       "jdk.types.Method",
	"jdk.types.StackTrace", "jdk.types.ThreadState", "java.lang.String",
};

/* ---- metadata ---------------------------------------------------------------- */

enum prim { T_STRUCT, T_BOOL, T_BYTE, T_CHAR, T_SHORT, T_INT, T_LONG, T_FLOAT, T_DOUBLE, T_STRING };

/* What a field of a class we read is for (assigned once per chunk). */
enum role {
	R_SKIP,
	R_STACK,    /* events: stackTrace, a constant-pool key */
	R_STATE,    /* events: state, a constant-pool key */
	R_CTX,      /* events: contextId */
	R_SAMPLES,  /* profiler.WallClockSample: samples */
	R_TLAB,     /* tlabSize */
	R_ALLOC,    /* allocationSize */
	R_WEIGHT,   /* weight */
	R_DURATION, /* duration, in ticks */
	R_SIZE,     /* profiler.Malloc: size */
	R_NAME,     /* jdk.ActiveSetting name; Class and Method name (a Symbol key) */
	R_VALUE,    /* jdk.ActiveSetting value */
	R_STRING,   /* Symbol string, ThreadState name */
	R_TYPE,     /* Method type (a Class key) */
	R_METHOD,   /* StackFrame method (a Method key) */
	R_LINE,     /* StackFrame lineNumber */
	R_FRAMES,   /* StackTrace frames (an array of StackFrame) */
};

struct jfield {
	const char *name;
	uint64_t type_id;
	uint32_t type; /* index into types, resolved after the metadata */
	uint8_t cp, array;
	uint8_t role;  /* enum role */
};

struct jtype {
	uint64_t id;
	const char *name;
	struct jfield *fields;
	uint32_t n_fields, cap_fields;
	enum prim prim;
};

/* A map u64 -> index, open addressing (key 0 is stored like any other). */
struct umap {
	uint64_t *keys;
	uint32_t *vals; /* index + 1; 0 = empty */
	size_t mask;
	size_t n;
};

struct method {
	uint64_t cls, name;   /* pool keys */
	const char *frame;    /* "<class>.<method>", lazily */
	size_t frame_len;
};

struct frame {
	uint64_t method;
	int64_t line;
};

struct stack {
	uint32_t off, n; /* into frames */
};

/* A sample already made from one stack trace of one kind and context. */
struct seen {
	uint64_t stack, ctx;
	uint32_t kind;
	size_t sample;
};

/* Everything of one chunk, in the chunk arena. */
struct chunk {
	struct arena *t;
	const uint8_t *base, *p, *end; /* the chunk */
	uint64_t steps, max_steps;
	uint64_t ticks_per_s;
	struct jtype *types;
	uint32_t n_types, cap_types;
	struct umap type_ix;
	uint32_t ev_type[E_COUNT];   /* type index + 1, 0 = absent */
	uint32_t pool_type[P_COUNT]; /* type index + 1 */
	uint32_t t_frame;            /* jdk.types.StackFrame, index + 1 */
	struct umap pools[P_COUNT];
	const char **symbols, **states, **strings;
	size_t n_symbols, n_states, n_strings, cap_symbols, cap_states, cap_strings;
	uint64_t *class_sym;
	size_t n_classes, cap_classes;
	struct method *methods;
	size_t n_methods, cap_methods;
	struct stack *stacks;
	size_t n_stacks, cap_stacks;
	struct frame *frames;
	size_t n_frames, cap_frames;
	struct umap seen; /* hash of (kind, stack, context) -> index into seen_keys */
	struct seen *seen_keys;
	size_t n_seen, cap_seen;
	uint32_t *scratch;   /* max_stack_depth locations */
	struct err_msg *msg;
};

/* ---- the parse of one upload ------------------------------------------------ */

struct labels_ctx {
	uint64_t *kv; /* n pairs of (key string id, value string id) */
	size_t n;
};

/* pyroscope-java's LabelsSnapshot: string ids and the label sets of context ids. */
struct labels_snapshot {
	struct umap strings;  /* id -> index into str */
	const char **str;
	size_t n_str, cap_str;
	struct umap contexts; /* id -> index into ctx */
	struct labels_ctx *ctx;
	size_t n_ctx, cap_ctx;
};

struct parse {
	const struct ingest_limits *lim;
	struct ingest_jfr *out;
	const struct store_label *base;
	size_t n_base;
	struct labels_snapshot ls;
	struct arena ls_arena;
	regex_t re[6];
	uint8_t compiled[6]; /* re[i] compiled (on first use) */
	char event[64];
	int event_wall;
	struct err_msg *msg;
};

/* ---- small readers ------------------------------------------------------------ */

static int corrupt(struct chunk *c, const char *what)
{
	return err_set(c->msg, ERR_INVALID, "jfr: %s at byte %zu of the chunk", what,
		       (size_t)(c->p - c->base));
}

static int step(struct chunk *c)
{
	if (++c->steps > c->max_steps)
		return err_set(c->msg, ERR_INVALID,
			       "jfr: more values than a chunk of %zu bytes can hold",
			       (size_t)(c->end - c->base));
	return 0;
}

/* A compressed long: 7 bits per byte, the ninth byte whole. */
static int rd_long(struct chunk *c, uint64_t *out)
{
	uint64_t v = 0;

	*out = 0;
	for (unsigned i = 0; i < 9; i++) {
		uint8_t b;

		if (c->p >= c->end)
			return corrupt(c, "truncated integer");
		b = *c->p++;
		if (i == 8) {
			v |= (uint64_t)b << 56;
			break;
		}
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			break;
	}
	*out = v;
	return 0;
}

static int rd_byte(struct chunk *c, uint8_t *out)
{
	*out = 0;
	if (c->p >= c->end)
		return corrupt(c, "truncated byte");
	*out = *c->p++;
	return 0;
}

/* A count of items that take at least `min` bytes each: bounded by what is left. */
static int rd_count(struct chunk *c, size_t min, uint64_t *out)
{
	int rc = rd_long(c, out);

	if (rc)
		return rc;
	if (min && *out > (uint64_t)(c->end - c->p) / min)
		return corrupt(c, "count larger than the bytes left");
	return 0;
}

static size_t utf8_put(char *w, uint32_t cp)
{
	if (cp < 0x80) {
		w[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		w[0] = (char)(0xc0 | cp >> 6);
		w[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		w[0] = (char)(0xe0 | cp >> 12);
		w[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		w[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	w[0] = (char)(0xf0 | cp >> 18);
	w[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	w[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	w[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static const char *pool_string(struct chunk *c, uint64_t key);

/*
 * A string, as UTF-8 in the chunk arena (NULL for a null string).  With
 * `keep` 0 it is only skipped.  A pooled string (encoding 2) is looked up
 * in the String pool when `keep`.
 */
static int rd_string(struct chunk *c, int keep, const char **out)
{
	uint8_t enc;
	uint64_t len, v;
	char *s = NULL;
	size_t w = 0;
	int rc;

	*out = NULL;
	if ((rc = rd_byte(c, &enc)))
		return rc;
	switch (enc) {
	case 0:
		return 0;
	case 1:
		*out = "";
		return 0;
	case 2:
		if ((rc = rd_long(c, &v)))
			return rc;
		*out = keep ? pool_string(c, v) : NULL;
		return 0;
	case 3:
	case 5:
		if ((rc = rd_count(c, 1, &len)))
			return rc;
		if (keep) {
			s = arena_alloc(c->t, enc == 3 ? len + 1 : 2 * len + 1);
			if (!s)
				return arena_failed(c->t);
			if (enc == 3) {
				memcpy(s, c->p, len);
				w = len;
			} else {
				/* Latin-1 is the first 256 code points. */
				for (uint64_t i = 0; i < len; i++)
					w += utf8_put(s + w, c->p[i]);
			}
			s[w] = '\0';
			*out = s;
		}
		c->p += len;
		return 0;
	case 4:
		if ((rc = rd_count(c, 1, &len)))
			return rc;
		if (keep && !(s = arena_alloc(c->t, 4 * len + 1)))
			return arena_failed(c->t);
		for (uint64_t i = 0; i < len; i++) {
			uint32_t cu;

			if ((rc = rd_long(c, &v)))
				return rc;
			cu = (uint32_t)(v & 0xffff);
			if (!keep)
				continue;
			/* A surrogate pair is one code point; a lone half is U+FFFD. */
			if (cu >= 0xd800 && cu < 0xdc00 && i + 1 < len && c->p < c->end) {
				const uint8_t *save = c->p;
				uint64_t lo = 0;

				if (!rd_long(c, &lo) && (lo & 0xffff) >= 0xdc00 && (lo & 0xffff) < 0xe000) {
					w += utf8_put(s + w, 0x10000 + ((cu - 0xd800) << 10) +
								 ((uint32_t)(lo & 0xffff) - 0xdc00));
					i++;
					continue;
				}
				c->p = save;
			}
			if (cu >= 0xd800 && cu < 0xe000)
				cu = 0xfffd;
			w += utf8_put(s + w, cu);
		}
		if (keep) {
			s[w] = '\0';
			*out = s;
		}
		return 0;
	default:
		return corrupt(c, "unknown string encoding");
	}
}

/* ---- u64 maps ------------------------------------------------------------------ */

static int umap_put(struct arena *t, struct umap *m, uint64_t key, uint32_t val, int *fresh)
{
	size_t i;

	if (2 * (m->n + 1) > (m->mask ? m->mask + 1 : 0)) {
		size_t cap = m->mask ? 2 * (m->mask + 1) : 64;
		uint64_t *k = arena_alloc(t, cap * sizeof(*k));
		uint32_t *v = arena_calloc(t, cap, sizeof(*v));

		if (!k || !v)
			return arena_failed(t);
		for (size_t j = 0; m->mask && j <= m->mask; j++) {
			if (!m->vals[j])
				continue;
			for (i = hash_u64(m->keys[j]) & (cap - 1); v[i]; i = (i + 1) & (cap - 1))
				;
			k[i] = m->keys[j];
			v[i] = m->vals[j];
		}
		m->keys = k;
		m->vals = v;
		m->mask = cap - 1;
	}
	for (i = hash_u64(key) & m->mask; m->vals[i]; i = (i + 1) & m->mask)
		if (m->keys[i] == key) {
			if (fresh)
				*fresh = 0;
			return 0;
		}
	m->keys[i] = key;
	m->vals[i] = val + 1;
	m->n++;
	if (fresh)
		*fresh = 1;
	return 0;
}

/* Returns index + 1, or 0. */
static uint32_t umap_get(const struct umap *m, uint64_t key)
{
	if (!m->mask)
		return 0;
	for (size_t i = hash_u64(key) & m->mask; m->vals[i]; i = (i + 1) & m->mask)
		if (m->keys[i] == key)
			return m->vals[i];
	return 0;
}

/* ---- the metadata ------------------------------------------------------------- */

struct meta {
	const char **str;
	uint64_t n_str;
};

static const char *attr(const struct meta *m, const uint64_t *kv, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(m->str[kv[2 * i]], name) == 0)
			return m->str[kv[2 * i + 1]];
	return NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *e;

	if (!s || !*s || *s < '0' || *s > '9')
		return ERR_INVALID;
	*out = strtoull(s, &e, 10);
	return *e ? ERR_INVALID : 0;
}

static int meta_class(struct chunk *c, const struct meta *m, const uint64_t *kv, size_t n)
{
	struct jtype *ty;
	uint64_t id;
	int fresh, rc;

	if (parse_u64(attr(m, kv, n, "id"), &id) || !attr(m, kv, n, "name") ||
	    !*attr(m, kv, n, "name"))
		return corrupt(c, "metadata class without a name or a numeric id");
	if (c->n_types == c->cap_types) {
		size_t cap = c->cap_types;

		rc = arena_grow(c->t, (void **)&c->types, &cap, (size_t)c->n_types + 1, sizeof(*c->types));
		if (rc)
			return rc;
		c->cap_types = (uint32_t)cap;
	}
	rc = umap_put(c->t, &c->type_ix, id, c->n_types, &fresh);
	if (rc)
		return rc;
	if (!fresh)
		return corrupt(c, "two metadata classes with one id");
	ty = &c->types[c->n_types++];
	memset(ty, 0, sizeof(*ty));
	ty->id = id;
	ty->name = attr(m, kv, n, "name");
	return 0;
}

static int meta_field(struct chunk *c, const struct meta *m, const uint64_t *kv, size_t n)
{
	struct jtype *ty = &c->types[c->n_types - 1];
	const char *dim = attr(m, kv, n, "dimension"), *cp = attr(m, kv, n, "constantPool");
	struct jfield *f;
	uint64_t tid;

	if (parse_u64(attr(m, kv, n, "class"), &tid) || !attr(m, kv, n, "name"))
		return corrupt(c, "metadata field without a name or a numeric class");
	if (dim && strcmp(dim, "1") != 0)
		return corrupt(c, "metadata field of more than one dimension");
	if (ty->n_fields == ty->cap_fields) {
		size_t cap = ty->cap_fields;
		int rc = arena_grow(c->t, (void **)&ty->fields, &cap, (size_t)ty->n_fields + 1,
			      sizeof(*ty->fields));

		if (rc)
			return rc;
		ty->cap_fields = (uint32_t)cap;
	}
	f = &ty->fields[ty->n_fields++];
	f->name = attr(m, kv, n, "name");
	f->type_id = tid;
	f->cp = cp && strcmp(cp, "true") == 0;
	f->array = dim != NULL;
	return 0;
}

/* Where an element of the metadata tree is: what its parent was. */
enum under { U_NOTHING, U_ROOT, U_METADATA, U_CLASS, U_OTHER };

/*
 * One element and its children: root > metadata > class > field are read
 * (classes and their fields become types), everything else is walked and
 * forgotten.
 */
static int meta_element(struct chunk *c, const struct meta *m, int depth, enum under under)
{
	uint64_t name, n_attr, n_child, *kv;
	enum under children = U_OTHER;
	const char *ename;
	int rc = 0;

	if (depth > JFR_MAX_DEPTH)
		return corrupt(c, "metadata nested too deep");
	if ((rc = step(c)) || (rc = rd_long(c, &name)))
		return rc;
	if (name >= m->n_str)
		return corrupt(c, "metadata element name out of range");
	ename = m->str[name];
	if ((rc = rd_count(c, 2, &n_attr)))
		return rc;
	kv = arena_alloc(c->t, (n_attr ? n_attr : 1) * 2 * sizeof(*kv));
	if (!kv)
		return arena_failed(c->t);
	for (uint64_t i = 0; i < 2 * n_attr; i++) {
		if ((rc = rd_long(c, &kv[i])))
			return rc;
		if (kv[i] >= m->n_str)
			return corrupt(c, "metadata attribute out of range");
	}
	switch (under) {
	case U_NOTHING:
		if (strcmp(ename, "root") != 0)
			return corrupt(c, "metadata does not start with its root");
		children = U_ROOT;
		break;
	case U_ROOT:
		children = strcmp(ename, "metadata") == 0 ? U_METADATA : U_OTHER;
		break;
	case U_METADATA:
		if (strcmp(ename, "class") == 0) {
			rc = meta_class(c, m, kv, n_attr);
			children = U_CLASS;
		}
		break;
	case U_CLASS:
		if (strcmp(ename, "field") == 0)
			rc = meta_field(c, m, kv, n_attr);
		break;
	case U_OTHER:
		break;
	}
	if (rc)
		return rc;
	if ((rc = rd_count(c, 3, &n_child)))
		return rc;
	for (uint64_t i = 0; i < n_child; i++)
		if ((rc = meta_element(c, m, depth + 1, children)))
			return rc;
	return 0;
}

static enum prim prim_of(const char *name)
{
	static const struct {
		const char *name;
		enum prim p;
	} prims[] = {
		{ "boolean", T_BOOL }, { "byte", T_BYTE },     { "char", T_CHAR },
		{ "short", T_SHORT },  { "int", T_INT },       { "long", T_LONG },
		{ "float", T_FLOAT },  { "double", T_DOUBLE }, { "java.lang.String", T_STRING },
	};

	for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
		if (strcmp(prims[i].name, name) == 0)
			return prims[i].p;
	return T_STRUCT;
}

/* Whether a field holds one integer: a constant-pool key or an integer primitive. */
static int scalar(const struct chunk *c, const struct jfield *f)
{
	enum prim p = c->types[f->type].prim;

	return !f->array && (f->cp || (p != T_STRUCT && p != T_STRING && p != T_FLOAT &&
				       p != T_DOUBLE));
}

static int string_field(const struct chunk *c, const struct jfield *f)
{
	return !f->array && c->types[f->type].prim == T_STRING;
}

/*
 * The role of every field we read, by its name and kind, so that the
 * values are read without comparing names (a recording has millions).
 */
static void assign_roles(struct chunk *c, struct jtype *ty)
{
	static const struct {
		const char *name;
		enum role role;
	} ev[] = {
		{ "stackTrace", R_STACK }, { "state", R_STATE },     { "contextId", R_CTX },
		{ "samples", R_SAMPLES },  { "tlabSize", R_TLAB },   { "allocationSize", R_ALLOC },
		{ "weight", R_WEIGHT },    { "duration", R_DURATION }, { "size", R_SIZE },
	};
	int is_event = 0, is_setting = 0;
	int pid = -1;

	for (int e = 0; e < E_COUNT; e++)
		if (c->ev_type[e] == (uint32_t)(ty - c->types) + 1) {
			is_event = 1;
			is_setting = e == E_SETTING;
		}
	for (int p = 0; p < P_COUNT; p++)
		if (c->pool_type[p] == (uint32_t)(ty - c->types) + 1)
			pid = p;
	for (uint32_t i = 0; i < ty->n_fields; i++) {
		struct jfield *f = &ty->fields[i];
		const char *n = f->name;

		f->role = R_SKIP;
		if (is_event) {
			for (size_t k = 0; k < sizeof(ev) / sizeof(ev[0]); k++)
				if (strcmp(n, ev[k].name) == 0 && scalar(c, f) &&
				    ((ev[k].role != R_STACK && ev[k].role != R_STATE) || f->cp))
					f->role = (uint8_t)ev[k].role;
			if (is_setting && string_field(c, f))
				f->role = strcmp(n, "name") == 0    ? R_NAME
					  : strcmp(n, "value") == 0 ? R_VALUE
								    : R_SKIP;
		} else if ((pid == P_SYMBOL && strcmp(n, "string") == 0) ||
			   (pid == P_STATE && strcmp(n, "name") == 0)) {
			f->role = string_field(c, f) ? R_STRING : R_SKIP;
		} else if ((pid == P_CLASS || pid == P_METHOD) && strcmp(n, "name") == 0 && f->cp &&
			   !f->array) {
			f->role = R_NAME;
		} else if (pid == P_METHOD && strcmp(n, "type") == 0 && f->cp && !f->array) {
			f->role = R_TYPE;
		} else if (pid == P_STACK && strcmp(n, "frames") == 0 && f->array && !f->cp &&
			   c->t_frame && f->type == c->t_frame - 1) {
			f->role = R_FRAMES;
		} else if (c->t_frame == (uint32_t)(ty - c->types) + 1) {
			if (strcmp(n, "method") == 0 && f->cp && !f->array)
				f->role = R_METHOD;
			else if (strcmp(n, "lineNumber") == 0 && scalar(c, f) && !f->cp)
				f->role = R_LINE;
		}
	}
}

static int read_metadata(struct chunk *c, const uint8_t *at)
{
	struct meta m;
	uint64_t size, type, v;
	const uint8_t *end;
	int rc;

	c->p = at;
	if ((rc = rd_long(c, &size)) || (rc = rd_long(c, &type)))
		return rc;
	end = at + size;
	if (type != 0 || size == 0 || size > (uint64_t)(c->end - at) || end < c->p)
		return corrupt(c, "no metadata record at the header's metadata offset");
	c->end = end;
	for (int i = 0; i < 3; i++)
		if ((rc = rd_long(c, &v))) /* start time, duration, metadata id */
			return rc;
	if ((rc = rd_count(c, 1, &m.n_str)))
		return rc;
	m.str = arena_alloc(c->t, (m.n_str ? m.n_str : 1) * sizeof(*m.str));
	if (!m.str)
		return arena_failed(c->t);
	for (uint64_t i = 0; i < m.n_str; i++) {
		if ((rc = step(c)) || (rc = rd_string(c, 1, &m.str[i])))
			return rc;
		if (!m.str[i])
			m.str[i] = "";
	}
	rc = meta_element(c, &m, 0, U_NOTHING);
	if (rc)
		return rc;
	/* Resolve field types and find the classes this parser reads. */
	for (uint32_t i = 0; i < c->n_types; i++) {
		struct jtype *ty = &c->types[i];

		ty->prim = prim_of(ty->name);
		for (uint32_t f = 0; f < ty->n_fields; f++) {
			uint32_t ix = umap_get(&c->type_ix, ty->fields[f].type_id);

			if (!ix)
				return err_set(c->msg, ERR_INVALID,
					       "jfr: field %.64s of %.64s has an undeclared type %llu",
					       ty->fields[f].name, ty->name,
					       (unsigned long long)ty->fields[f].type_id);
			ty->fields[f].type = ix - 1;
		}
		for (int e = 0; e < E_COUNT; e++)
			if (strcmp(ty->name, ev_names[e]) == 0)
				c->ev_type[e] = i + 1;
		for (int p = 0; p < P_COUNT; p++)
			if (strcmp(ty->name, pool_names[p]) == 0)
				c->pool_type[p] = i + 1;
		if (strcmp(ty->name, "jdk.types.StackFrame") == 0)
			c->t_frame = i + 1;
	}
	for (uint32_t i = 0; i < c->n_types; i++)
		assign_roles(c, &c->types[i]);
	return 0;
}

/* ---- values ------------------------------------------------------------------- */

static int skip_value(struct chunk *c, const struct jtype *ty, int depth);

/* One field's value (its whole array when it is one), skipped. */
static int skip_field(struct chunk *c, const struct jfield *f, int depth)
{
	uint64_t n = 1, v;
	int rc;

	if (f->array && (rc = rd_count(c, 0, &n)))
		return rc;
	for (uint64_t i = 0; i < n; i++) {
		if ((rc = step(c)))
			return rc;
		if (f->cp)
			rc = rd_long(c, &v);
		else
			rc = skip_value(c, &c->types[f->type], depth + 1);
		if (rc)
			return rc;
	}
	return 0;
}

static int skip_value(struct chunk *c, const struct jtype *ty, int depth)
{
	uint64_t v;
	uint8_t b;
	const char *s;
	int rc;

	if (depth > JFR_MAX_DEPTH)
		return corrupt(c, "values nested too deep");
	switch (ty->prim) {
	case T_BOOL:
	case T_BYTE:
		return rd_byte(c, &b);
	case T_CHAR:
	case T_SHORT:
	case T_INT:
	case T_LONG:
		return rd_long(c, &v);
	case T_FLOAT:
	case T_DOUBLE:
		if ((size_t)(c->end - c->p) < (ty->prim == T_FLOAT ? 4u : 8u))
			return corrupt(c, "truncated floating-point value");
		c->p += ty->prim == T_FLOAT ? 4 : 8;
		return 0;
	case T_STRING:
		return rd_string(c, 0, &s);
	case T_STRUCT:
		break;
	}
	for (uint32_t f = 0; f < ty->n_fields; f++)
		if ((rc = skip_field(c, &ty->fields[f], depth)))
			return rc;
	return 0;
}

/* A field read as one integer: a constant-pool key, an integer, a boolean or a byte. */
static int read_int_field(struct chunk *c, const struct jfield *f, uint64_t *out)
{
	const struct jtype *ty = &c->types[f->type];
	uint8_t b;
	int rc;

	if (f->array)
		return skip_field(c, f, 0);
	if (f->cp)
		return rd_long(c, out);
	switch (ty->prim) {
	case T_BOOL:
	case T_BYTE:
		rc = rd_byte(c, &b);
		*out = b;
		return rc;
	case T_CHAR:
	case T_SHORT:
	case T_INT:
	case T_LONG:
		return rd_long(c, out);
	default:
		return skip_field(c, f, 0);
	}
}

/* A field read as a string (inline or pooled); others are skipped. */
static int read_str_field(struct chunk *c, const struct jfield *f, const char **out)
{
	uint64_t key;
	int rc;

	if (f->array || c->types[f->type].prim != T_STRING)
		return skip_field(c, f, 0);
	if (f->cp) {
		rc = rd_long(c, &key);
		*out = rc ? NULL : pool_string(c, key);
		return rc;
	}
	return rd_string(c, 1, out);
}

/* ---- constant pools ------------------------------------------------------------ */

static const char *pool_string(struct chunk *c, uint64_t key)
{
	uint32_t ix = umap_get(&c->pools[P_STRING], key);

	return ix ? c->strings[ix - 1] : NULL;
}

static int pool_strings(struct chunk *c, const char ***arr, size_t *n, size_t *cap,
			enum pool_id pid, uint64_t key, const char *s)
{
	int fresh, rc = umap_put(c->t, &c->pools[pid], key, (uint32_t)*n, &fresh);

	if (rc || !fresh)
		return rc;
	if ((rc = arena_grow(c->t, (void **)arr, cap, *n + 1, sizeof(**arr))))
		return rc;
	(*arr)[(*n)++] = s ? s : "";
	return 0;
}

/* A value of a pooled class whose fields we want: the string or key fields by name. */
static int pool_entry(struct chunk *c, enum pool_id pid, const struct jtype *ty, uint64_t key)
{
	const char *s = NULL;
	uint64_t a = 0, b = 0;
	int fresh, rc = 0;

	if (pid == P_STRING) {
		if ((rc = rd_string(c, 1, &s)))
			return rc;
		return pool_strings(c, &c->strings, &c->n_strings, &c->cap_strings, P_STRING, key, s);
	}
	for (uint32_t i = 0; i < ty->n_fields && !rc; i++) {
		const struct jfield *f = &ty->fields[i];

		switch (f->role) {
		case R_STRING:
			rc = read_str_field(c, f, &s);
			break;
		case R_NAME:
			rc = read_int_field(c, f, &a);
			break;
		case R_TYPE:
			rc = read_int_field(c, f, &b);
			break;
		default:
			rc = skip_field(c, f, 0);
		}
	}
	if (rc)
		return rc;
	switch (pid) {
	case P_SYMBOL:
		return pool_strings(c, &c->symbols, &c->n_symbols, &c->cap_symbols, P_SYMBOL, key,
				    s);
	case P_STATE:
		return pool_strings(c, &c->states, &c->n_states, &c->cap_states, P_STATE, key, s);
	case P_CLASS:
		if ((rc = umap_put(c->t, &c->pools[P_CLASS], key, (uint32_t)c->n_classes, &fresh)) ||
		    !fresh)
			return rc;
		if ((rc = arena_grow(c->t, (void **)&c->class_sym, &c->cap_classes, c->n_classes + 1,
			       sizeof(*c->class_sym))))
			return rc;
		c->class_sym[c->n_classes++] = a;
		return 0;
	case P_METHOD:
		if ((rc = umap_put(c->t, &c->pools[P_METHOD], key, (uint32_t)c->n_methods, &fresh)) ||
		    !fresh)
			return rc;
		if ((rc = arena_grow(c->t, (void **)&c->methods, &c->cap_methods, c->n_methods + 1,
			       sizeof(*c->methods))))
			return rc;
		memset(&c->methods[c->n_methods], 0, sizeof(*c->methods));
		c->methods[c->n_methods].cls = b;
		c->methods[c->n_methods++].name = a;
		return 0;
	default:
		return 0;
	}
}

/* A stack trace: its frames (method key, line), top of the stack first. */
static int pool_stack(struct chunk *c, const struct jtype *ty, uint64_t key)
{
	size_t first = c->n_frames;
	int fresh, rc = 0;

	for (uint32_t i = 0; i < ty->n_fields && !rc; i++) {
		const struct jfield *f = &ty->fields[i];
		const struct jtype *ft = &c->types[f->type];
		uint64_t n;

		if (f->role != R_FRAMES) {
			rc = skip_field(c, f, 0);
			continue;
		}
		if ((rc = rd_count(c, 0, &n)))
			return rc;
		for (uint64_t k = 0; k < n && !rc; k++) {
			struct frame fr = { 0, 0 };
			uint64_t v;

			if ((rc = step(c)))
				return rc;
			for (uint32_t j = 0; j < ft->n_fields && !rc; j++) {
				const struct jfield *g = &ft->fields[j];

				if (g->role == R_METHOD) {
					rc = read_int_field(c, g, &fr.method);
				} else if (g->role == R_LINE) {
					rc = read_int_field(c, g, &v);
					/* An int: -1 (no line) arrives as 2^32 - 1. */
					fr.line = (int32_t)(uint32_t)v > 0 ? (int32_t)(uint32_t)v : 0;
				} else {
					rc = skip_field(c, g, 1);
				}
			}
			if (rc)
				return rc;
			if ((rc = arena_grow(c->t, (void **)&c->frames, &c->cap_frames, c->n_frames + 1,
				       sizeof(*c->frames))))
				return rc;
			c->frames[c->n_frames++] = fr;
		}
	}
	if (rc)
		return rc;
	if ((rc = umap_put(c->t, &c->pools[P_STACK], key, (uint32_t)c->n_stacks, &fresh)))
		return rc;
	if (!fresh) {
		c->n_frames = first;
		return 0;
	}
	if ((rc = arena_grow(c->t, (void **)&c->stacks, &c->cap_stacks, c->n_stacks + 1,
		       sizeof(*c->stacks))))
		return rc;
	if (c->n_frames - first > UINT32_MAX || c->n_frames > UINT32_MAX)
		return corrupt(c, "too many frames");
	c->stacks[c->n_stacks].off = (uint32_t)first;
	c->stacks[c->n_stacks++].n = (uint32_t)(c->n_frames - first);
	return 0;
}

static int read_checkpoint(struct chunk *c)
{
	uint64_t v, n_pools;
	uint8_t flush;
	int rc;

	for (int i = 0; i < 3; i++) /* start time, duration, delta to the previous one */
		if ((rc = rd_long(c, &v)))
			return rc;
	if ((rc = rd_byte(c, &flush)) || (rc = rd_count(c, 2, &n_pools)))
		return rc;
	for (uint64_t i = 0; i < n_pools; i++) {
		uint64_t tid, count;
		uint32_t ix;
		const struct jtype *ty;
		int pid = -1;

		if ((rc = rd_long(c, &tid)) || (rc = rd_count(c, 1, &count)))
			return rc;
		ix = umap_get(&c->type_ix, tid);
		if (!ix)
			return corrupt(c, "constant pool of an undeclared type");
		ty = &c->types[ix - 1];
		for (int p = 0; p < P_COUNT; p++)
			if (c->pool_type[p] == ix)
				pid = p;
		for (uint64_t k = 0; k < count; k++) {
			uint64_t key;

			if ((rc = step(c)) || (rc = rd_long(c, &key)))
				return rc;
			if (pid == P_STACK)
				rc = pool_stack(c, ty, key);
			else if (pid >= 0)
				rc = pool_entry(c, (enum pool_id)pid, ty, key);
			else if (strcmp(ty->name, "jdk.types.ChunkHeader") == 0)
				rc = (size_t)(c->end - c->p) < JFR_HEADER
					     ? corrupt(c, "truncated chunk header constant")
					     : (c->p += JFR_HEADER, 0);
			else
				rc = skip_value(c, ty, 0);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* ---- frames and samples ---------------------------------------------------------- */

/*
 * JVM-generated names carry per-process suffixes (GeneratedMethodAccessor31,
 * Foo$$Lambda$669/0x0000000800fd7318, temp copies of native libraries);
 * Pyroscope folds each family into one name, and so do we.  `keep`: the
 * replacement is the first group plus "_"; otherwise `fixed`.  Only a name
 * holding `hint` can match, so most names are never matched at all, and a
 * pattern is compiled the first time a name needs it.
 */
static const struct {
	const char *hint;
	const char *re;
	int keep;
	const char *fixed;
} renames[] = {
	{ "GeneratedMethodAccessor", "^(jdk/internal/reflect/GeneratedMethodAccessor)([0-9]+)$", 1,
	  NULL },
	{ "$$Lambda", "^(.+\\$\\$Lambda)(\\$?[0-9]*[./](0x)?[0-9a-f]+|[0-9]+)$", 1, NULL },
	{ "libzstd-jni-",
	  "^(\\.?/tmp/)?(libzstd-jni-[0-9]+\\.[0-9]+\\.[0-9]+-)([0-9]+)(\\.so)( \\(deleted\\))?$", 0,
	  "libzstd-jni-_.so" },
	{ "amazonCorrettoCryptoProvider",
	  "^(\\.?/tmp/)?(lib)?(amazonCorrettoCryptoProvider)(NativeLibraries\\.)?([0-9a-f]{16})"
	  "(/libcrypto|/libamazonCorrettoCryptoProvider)?(\\.so)( \\(deleted\\))?$",
	  0, "libamazonCorrettoCryptoProvider_.so" },
	{ "libasyncProfiler-",
	  "^(\\.?/tmp/)?(libasyncProfiler)-(linux-arm64|linux-musl-x64|linux-x64|macos)-"
	  "(17b9a1d8156277a98ccc871afa9a8f69215f92)(\\.so)( \\(deleted\\))?$",
	  0, "libasyncProfiler-_.so" },
	{ "$$EnhancerBySpringCGLIB$$", "^(.+\\$\\$EnhancerBySpringCGLIB\\$\\$)(.*)$", 1, NULL },
};

static const char *rename_symbol(struct parse *ps, struct arena *t, const char *s)
{
	for (size_t i = 0; i < sizeof(renames) / sizeof(renames[0]); i++) {
		regmatch_t m[2];
		char *r;

		if (!strstr(s, renames[i].hint))
			continue;
		if (!ps->compiled[i]) {
			if (regcomp(&ps->re[i], renames[i].re, REG_EXTENDED) != 0)
				continue;
			ps->compiled[i] = 1;
		}
		if (regexec(&ps->re[i], s, 2, m, 0) != 0)
			continue;
		if (!renames[i].keep) {
			s = renames[i].fixed;
			continue;
		}
		r = arena_alloc(t, (size_t)m[1].rm_eo + 2);
		if (!r)
			return s;
		memcpy(r, s, (size_t)m[1].rm_eo);
		r[m[1].rm_eo] = '_';
		r[m[1].rm_eo + 1] = '\0';
		s = r;
	}
	return s;
}

static const char *symbol(struct chunk *c, uint64_t key)
{
	uint32_t ix = umap_get(&c->pools[P_SYMBOL], key);

	return ix ? c->symbols[ix - 1] : "";
}

/* The frame name of a method: "<class>.<name>", NULL when Pyroscope drops the frame. */
static int method_frame(struct parse *ps, struct chunk *c, uint64_t key, const char **out,
			size_t *len)
{
	uint32_t ix = umap_get(&c->pools[P_METHOD], key), cx;
	struct method *m;
	const char *cls, *name;
	size_t cl, nl;
	char *f;

	*out = NULL;
	if (!ix)
		return 0;
	m = &c->methods[ix - 1];
	if (!m->frame) {
		cx = umap_get(&c->pools[P_CLASS], m->cls);
		if (!cx)
			return 0;
		cls = rename_symbol(ps, c->t, symbol(c, c->class_sym[cx - 1]));
		name = rename_symbol(ps, c->t, symbol(c, m->name));
		cl = strlen(cls);
		nl = strlen(name);
		if (cl + nl + 1 > INGEST_MAX_FRAME_BYTES)
			return err_set(c->msg, ERR_TOO_LARGE, "jfr: a frame name longer than %d bytes",
				       INGEST_MAX_FRAME_BYTES);
		f = arena_alloc(c->t, cl + nl + 2);
		if (!f)
			return arena_failed(c->t);
		memcpy(f, cls, cl);
		f[cl] = '.';
		memcpy(f + cl + 1, name, nl + 1);
		m->frame = f;
		m->frame_len = cl + nl + 1;
	}
	*out = m->frame;
	*len = m->frame_len;
	return 0;
}

/* The group of a sample from the labels of its context id (pyroscope-java). */
static int context_group(struct parse *ps, struct ingest_builder *b, uint64_t ctx,
			 uint32_t *group)
{
	struct store_label l[64];
	size_t n = 0;
	uint32_t ix = ctx ? umap_get(&ps->ls.contexts, ctx) : 0;

	*group = 0;
	if (!ix)
		return 0;
	for (size_t i = 0; i < ps->ls.ctx[ix - 1].n; i++) {
		uint32_t kx = umap_get(&ps->ls.strings, ps->ls.ctx[ix - 1].kv[2 * i]);
		uint32_t vx = umap_get(&ps->ls.strings, ps->ls.ctx[ix - 1].kv[2 * i + 1]);
		const char *k = kx ? ps->ls.str[kx - 1] : "", *v = vx ? ps->ls.str[vx - 1] : "";
		size_t j;

		/* An empty value is no label; the series' own labels win. */
		if (!*v || ingest__label_get(ps->base, ps->n_base, k) ||
		    strcmp(k, STORE_LABEL_NAME) == 0 || strcmp(k, "jfr_event") == 0)
			continue;
		if (strcmp(k, "span_id") == 0 || strcmp(k, "span_name") == 0 ||
		    strcmp(k, "trace_id") == 0 || strcmp(k, "profile_id") == 0)
			continue;
		if (!ingest__label_name_ok(k) || (k[0] == '_' && k[1] == '_'))
			return err_set(ps->msg, ERR_INVALID,
				       "jfr: labels: context %llu: label name '%.64s' is invalid",
				       (unsigned long long)ctx, k);
		if (strlen(k) > ps->lim->max_label_bytes || strlen(v) > ps->lim->max_label_bytes)
			return err_set(ps->msg, ERR_TOO_LARGE,
				       "jfr: labels: context %llu: label '%.64s' longer than %zu bytes",
				       (unsigned long long)ctx, k, ps->lim->max_label_bytes);
		if (n == sizeof(l) / sizeof(l[0]) || n + 1 >= ps->lim->max_labels)
			return err_set(ps->msg, ERR_TOO_LARGE,
				       "jfr: labels: context %llu: too many labels",
				       (unsigned long long)ctx);
		/* Insertion by name; a repeated name keeps its first value. */
		for (j = n; j > 0 && strcmp(l[j - 1].name, k) > 0; j--)
			l[j] = l[j - 1];
		if (j > 0 && strcmp(l[j - 1].name, k) == 0) {
			memmove(&l[j], &l[j + 1], (n - j) * sizeof(*l));
			continue;
		}
		l[j].name = k;
		l[j].value = v;
		n++;
	}
	return ingest__b_group(b, l, n, group) == ERR_TOO_LARGE
		       ? err_set(ps->msg, ERR_TOO_LARGE, "jfr: more than %d distinct label sets",
				 INGEST_MAX_GROUPS - 1)
		       : 0;
}

/*
 * Adds `values` of kind `k` for stack trace `stack` and context `ctx`.
 * Events repeat a few stacks: the first one of a (kind, stack, context)
 * resolves the frames, later ones add to its sample.
 */
static int add_sample(struct parse *ps, struct chunk *c, enum kind_id k, uint64_t stack,
		      uint64_t ctx, const int64_t *values)
{
	struct ingest_builder *b = &ps->out->p[k].b;
	uint64_t h = hash_combine(hash_combine(hash_u64(stack), ctx), k);
	uint32_t six = umap_get(&c->pools[P_STACK], stack), group, hit;
	const struct stack *st;
	size_t depth = 0, sample;
	int fresh, rc;

	if (!six)
		return 0; /* no stack trace: Pyroscope drops the event */
	hit = umap_get(&c->seen, h);
	if (hit) {
		const struct seen *sn = &c->seen_keys[hit - 1];

		if (sn->stack == stack && sn->ctx == ctx && sn->kind == (uint32_t)k)
			return ingest__b_add(b, sn->sample, values)
				       ? err_set(c->msg, ERR_INVALID,
						 "jfr: the values of one stack overflow")
				       : 0;
	}
	st = &c->stacks[six - 1];
	if (st->n > ps->lim->max_stack_depth)
		return err_set(c->msg, ERR_TOO_LARGE,
			       "jfr: a stack of %u frames, deeper than the limit of %zu", st->n,
			       ps->lim->max_stack_depth);
	for (uint32_t i = 0; i < st->n; i++) {
		const char *name;
		size_t len;
		uint32_t fn;

		if ((rc = method_frame(ps, c, c->frames[st->off + i].method, &name, &len)))
			return rc;
		if (!name)
			continue; /* Pyroscope drops frames of unknown methods or classes */
		if ((rc = ingest__b_function(b, name, len, &fn)) ||
		    (rc = ingest__b_location(b, fn, c->frames[st->off + i].line,
					     &c->scratch[depth])))
			return rc;
		depth++;
	}
	if ((rc = context_group(ps, b, ctx, &group)))
		return rc;
	rc = ingest__b_sample(b, c->scratch, depth, group, values, &sample);
	if (rc == ERR_INVALID)
		return err_set(c->msg, rc, "jfr: the values of one stack overflow");
	if (rc == ERR_TOO_LARGE && b->n_samples >= ps->lim->max_samples)
		return err_set(c->msg, rc, "jfr: more than %zu distinct stacks of one kind",
			       ps->lim->max_samples);
	if (rc || hit)
		return rc; /* a hash collision: this triple stays uncached */
	if ((rc = arena_grow(c->t, (void **)&c->seen_keys, &c->cap_seen, c->n_seen + 1,
		       sizeof(*c->seen_keys))) ||
	    (rc = umap_put(c->t, &c->seen, h, (uint32_t)c->n_seen, &fresh)))
		return rc;
	c->seen_keys[c->n_seen].stack = stack;
	c->seen_keys[c->n_seen].ctx = ctx;
	c->seen_keys[c->n_seen].kind = (uint32_t)k;
	c->seen_keys[c->n_seen++].sample = sample;
	return 0;
}

/* ---- events ---------------------------------------------------------------------- */

struct ev {
	uint64_t stack, state, ctx, samples, tlab, alloc, weight, duration, size;
	int has_state, has_samples;
	const char *name, *value;
};

static int read_event(struct chunk *c, const struct jtype *ty, struct ev *e)
{
	int rc = 0;

	memset(e, 0, sizeof(*e));
	for (uint32_t i = 0; i < ty->n_fields && !rc; i++) {
		const struct jfield *f = &ty->fields[i];

		switch (f->role) {
		case R_STACK:
			rc = read_int_field(c, f, &e->stack);
			break;
		case R_STATE:
			rc = read_int_field(c, f, &e->state);
			e->has_state = 1;
			break;
		case R_CTX:
			rc = read_int_field(c, f, &e->ctx);
			break;
		case R_SAMPLES:
			rc = read_int_field(c, f, &e->samples);
			e->has_samples = 1;
			break;
		case R_TLAB:
			rc = read_int_field(c, f, &e->tlab);
			break;
		case R_ALLOC:
			rc = read_int_field(c, f, &e->alloc);
			break;
		case R_WEIGHT:
			rc = read_int_field(c, f, &e->weight);
			break;
		case R_DURATION:
			rc = read_int_field(c, f, &e->duration);
			break;
		case R_SIZE:
			rc = read_int_field(c, f, &e->size);
			break;
		case R_NAME:
			rc = read_str_field(c, f, &e->name);
			break;
		case R_VALUE:
			rc = read_str_field(c, f, &e->value);
			break;
		default:
			rc = skip_field(c, f, 0);
		}
	}
	return rc;
}

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Ticks to nanoseconds by the chunk's clock. */
static int64_t ticks_ns(const struct chunk *c, uint64_t ticks)
{
	unsigned __int128 v;

	if (!c->ticks_per_s || c->ticks_per_s == NS_PER_S)
		return clamp64(ticks);
	v = (unsigned __int128)ticks * NS_PER_S / c->ticks_per_s;
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static const char *state_name(struct chunk *c, uint64_t key)
{
	uint32_t ix = umap_get(&c->pools[P_STATE], key);

	return ix ? c->states[ix - 1] : NULL;
}

static int on_event(struct parse *ps, struct chunk *c, enum ev_id id, const struct ev *e)
{
	int64_t one[2] = { 1, 0 }, v[2] = { 1, 0 };
	const char *st;
	int rc = 0;

	switch (id) {
	case E_EXEC:
		st = e->has_state ? state_name(c, e->state) : NULL;
		if (st && strcmp(st, "STATE_SLEEPING") != 0)
			rc = add_sample(ps, c, K_CPU, e->stack, e->ctx, one);
		if (!rc && ps->event_wall)
			rc = add_sample(ps, c, K_WALL, e->stack, e->ctx, one);
		return rc;
	case E_WALL:
		v[0] = clamp64(e->has_samples ? e->samples : 1);
		st = e->has_state ? state_name(c, e->state) : NULL;
		if (st && strcmp(st, "STATE_RUNNABLE") == 0 && ps->event_wall)
			rc = add_sample(ps, c, K_CPU, e->stack, e->ctx, v);
		return rc ? rc : add_sample(ps, c, K_WALL, e->stack, e->ctx, v);
	case E_TLAB_IN:
		v[1] = clamp64(e->tlab);
		return add_sample(ps, c, K_TLAB_IN, e->stack, e->ctx, v);
	case E_TLAB_OUT:
		v[1] = clamp64(e->alloc);
		return add_sample(ps, c, K_TLAB_OUT, e->stack, e->ctx, v);
	case E_ALLOC_SAMPLE:
		v[1] = clamp64(e->weight);
		return add_sample(ps, c, K_ALLOC_SAMPLE, e->stack, 0, v);
	case E_LOCK:
		v[1] = ticks_ns(c, e->duration);
		return add_sample(ps, c, K_LOCK, e->stack, e->ctx, v);
	case E_PARK:
		v[1] = ticks_ns(c, e->duration);
		return add_sample(ps, c, K_PARK, e->stack, 0, v);
	case E_LIVE:
		return add_sample(ps, c, K_LIVE, e->stack, 0, one);
	case E_MALLOC:
		v[1] = clamp64(e->size);
		return add_sample(ps, c, K_MALLOC, e->stack, 0, v);
	case E_SETTING:
		if (e->name && strcmp(e->name, "event") == 0 && e->value) {
			snprintf(ps->event, sizeof(ps->event), "%s", e->value);
			ps->event_wall = strcmp(e->value, "wall") == 0;
		}
		return 0;
	case E_COUNT:
		break;
	}
	return 0;
}

/* ---- chunks ------------------------------------------------------------------------ */

/*
 * Walks the records of the chunk: checkpoints when `events` is 0, else
 * the events we read.
 */
static int walk_records(struct parse *ps, struct chunk *c, const uint8_t *end, int events)
{
	const uint8_t *pos = c->base + JFR_HEADER;
	int rc;

	while (pos < end) {
		uint64_t size, type;
		const uint8_t *rec_end;
		uint32_t ix;

		c->p = pos;
		c->end = end;
		if ((rc = rd_long(c, &size)) || (rc = rd_long(c, &type)))
			return rc;
		if (size == 0 || size > (uint64_t)(end - pos) || pos + size < c->p)
			return corrupt(c, "record size out of range");
		rec_end = pos + size;
		c->end = rec_end;
		if (!events && type == 1) {
			rc = read_checkpoint(c);
		} else if (events && type > 1 && (ix = umap_get(&c->type_ix, type))) {
			for (int e = 0; e < E_COUNT; e++) {
				struct ev ev;

				if (c->ev_type[e] != ix)
					continue;
				rc = read_event(c, &c->types[ix - 1], &ev);
				if (!rc) {
					ps->out->events++;
					rc = on_event(ps, c, (enum ev_id)e, &ev);
				}
				break;
			}
		}
		if (rc)
			return rc;
		if ((rc = step(c)))
			return rc;
		pos = rec_end;
	}
	return 0;
}

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The chunk arena: tables and pools of one chunk, about 40x its size at worst. */
static size_t chunk_cap(size_t len)
{
	const size_t fixed = (size_t)4 << 20;

	if (len > (SIZE_MAX - fixed) / 48)
		return SIZE_MAX;
	return 48 * len + fixed;
}

static int read_chunk(struct parse *ps, const uint8_t *p, size_t left, size_t *used)
{
	struct chunk c;
	struct arena t;
	uint64_t size, cp_off, meta_off;
	int rc;

	if (left < JFR_HEADER)
		return err_set(ps->msg, ERR_INVALID, "jfr: %zu bytes, too short for a chunk header",
			       left);
	if (memcmp(p, "FLR\0", 4) != 0)
		return err_set(ps->msg, ERR_INVALID, "jfr: no chunk magic (want \"FLR\\0\")");
	if (p[4] != 0 || p[5] != 2)
		return err_set(ps->msg, ERR_INVALID,
			       "jfr: chunk format %u.%u not supported (want 2.x, JDK 11 or later)",
			       (unsigned)(p[4] << 8 | p[5]), (unsigned)(p[6] << 8 | p[7]));
	size = be64(p + 8);
	cp_off = be64(p + 16);
	meta_off = be64(p + 24);
	if (size < JFR_HEADER || size > left)
		return err_set(ps->msg, ERR_INVALID,
			       "jfr: chunk of %llu bytes, but %zu bytes are left",
			       (unsigned long long)size, left);
	if (meta_off < JFR_HEADER || meta_off >= size || cp_off < JFR_HEADER || cp_off >= size)
		return err_set(ps->msg, ERR_INVALID, "jfr: chunk header offsets out of range");
	memset(&c, 0, sizeof(c));
	arena_init(&t, chunk_cap((size_t)size));
	c.t = &t;
	c.base = p;
	c.end = p + size;
	c.msg = ps->msg;
	c.ticks_per_s = be64(p + 56);
	c.max_steps = JFR_STEPS_PER_BYTE * size + 4096;
	c.scratch = arena_alloc(&t, (ps->lim->max_stack_depth + 1) * sizeof(*c.scratch));
	rc = c.scratch ? read_metadata(&c, p + meta_off) : arena_failed(&t);
	if (!rc)
		rc = walk_records(ps, &c, p + size, 0);
	if (!rc)
		rc = walk_records(ps, &c, p + size, 1);
	if (rc == ERR_TOO_LARGE && !(ps->msg && ps->msg->text[0]))
		err_set(ps->msg, rc, "jfr: a chunk of %llu bytes needs more memory than allowed",
			(unsigned long long)size);
	if (rc == ERR_NOMEM && !(ps->msg && ps->msg->text[0]))
		err_set(ps->msg, rc, "jfr: out of memory");
	arena_release(&t);
	*used = (size_t)size;
	return rc;
}

/* ---- the labels part ------------------------------------------------------------ */

/* A protobuf varint, bounds-checked. */
static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned s = 0; s < 64; s += 7) {
		if (*p >= end)
			return ERR_INVALID;
		v |= (uint64_t)(**p & 0x7f) << s;
		if (!(*(*p)++ & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return ERR_INVALID;
}

/* Calls cb for each field of a message; skips the wire types it cannot use. */
static int pb_each(const uint8_t *p, const uint8_t *end,
		   int (*cb)(void *ctx, uint32_t field, const uint8_t *v, size_t len, uint64_t num),
		   void *ctx)
{
	while (p < end) {
		uint64_t tag, len = 0, num = 0;
		int rc;

		if (pb_varint(&p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
			return ERR_INVALID;
		switch (tag & 7) {
		case 0:
			if (pb_varint(&p, end, &num))
				return ERR_INVALID;
			rc = cb(ctx, (uint32_t)(tag >> 3), NULL, 0, num);
			break;
		case 1:
			if (end - p < 8)
				return ERR_INVALID;
			p += 8;
			rc = 0;
			break;
		case 2:
			if (pb_varint(&p, end, &len) || len > (uint64_t)(end - p))
				return ERR_INVALID;
			rc = cb(ctx, (uint32_t)(tag >> 3), p, (size_t)len, 0);
			p += len;
			break;
		case 5:
			if (end - p < 4)
				return ERR_INVALID;
			p += 4;
			rc = 0;
			break;
		default:
			return ERR_INVALID;
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* A map entry: key (1, varint) and value (2, varint or bytes). */
struct entry {
	uint64_t key, num;
	const uint8_t *v;
	size_t len;
	int has_v;
};

static int entry_cb(void *ctx, uint32_t field, const uint8_t *v, size_t len, uint64_t num)
{
	struct entry *e = ctx;

	if (field == 1 && !v)
		e->key = num;
	else if (field == 2) {
		e->v = v;
		e->len = len;
		e->num = num;
		e->has_v = 1;
	}
	return 0;
}

struct ctx_build {
	struct parse *ps;
	uint64_t *kv;
	size_t n, cap;
};

static int ctx_label_cb(void *ctx, uint32_t field, const uint8_t *v, size_t len, uint64_t num)
{
	struct ctx_build *cb = ctx;
	struct entry e = { 0, 0, NULL, 0, 0 };

	(void)num;
	if (field != 1 || !v)
		return 0;
	if (pb_each(v, v + len, entry_cb, &e) || (e.has_v && e.v))
		return ERR_INVALID;
	if (cb->n == cb->cap) {
		size_t nc = cb->cap ? 2 * cb->cap : 8;
		uint64_t *k = arena_alloc(&cb->ps->ls_arena, 2 * nc * sizeof(*k));

		if (!k)
			return arena_failed(&cb->ps->ls_arena);
		if (cb->n)
			memcpy(k, cb->kv, 2 * cb->n * sizeof(*k));
		cb->kv = k;
		cb->cap = nc;
	}
	cb->kv[2 * cb->n] = e.key;
	cb->kv[2 * cb->n++ + 1] = e.num;
	return 0;
}

static int snapshot_cb(void *ctx, uint32_t field, const uint8_t *v, size_t len, uint64_t num)
{
	struct parse *ps = ctx;
	struct labels_snapshot *ls = &ps->ls;
	struct arena *t = &ps->ls_arena;
	struct entry e = { 0, 0, NULL, 0, 0 };
	struct ctx_build cb = { ps, NULL, 0, 0 };
	int fresh, rc;
	char *s;

	(void)num;
	if ((field != 1 && field != 2) || !v)
		return 0;
	if (pb_each(v, v + len, entry_cb, &e) || (e.has_v && !e.v))
		return ERR_INVALID;
	if (field == 2) {
		s = arena_strndup(t, e.v ? (const char *)e.v : "", e.len);
		if (!s)
			return arena_failed(t);
		if ((rc = umap_put(t, &ls->strings, e.key, (uint32_t)ls->n_str, &fresh)) || !fresh)
			return rc;
		if ((rc = arena_grow(t, (void **)&ls->str, &ls->cap_str, ls->n_str + 1, sizeof(*ls->str))))
			return rc;
		ls->str[ls->n_str++] = s;
		return 0;
	}
	if (e.v && (rc = pb_each(e.v, e.v + e.len, ctx_label_cb, &cb)))
		return rc;
	if ((rc = umap_put(t, &ls->contexts, e.key, (uint32_t)ls->n_ctx, &fresh)) || !fresh)
		return rc;
	if ((rc = arena_grow(t, (void **)&ls->ctx, &ls->cap_ctx, ls->n_ctx + 1, sizeof(*ls->ctx))))
		return rc;
	ls->ctx[ls->n_ctx].kv = cb.kv;
	ls->ctx[ls->n_ctx++].n = cb.n;
	return 0;
}

/* ---- entry ------------------------------------------------------------------------- */

void ingest__jfr_release(struct ingest_jfr *j)
{
	for (size_t i = 0; i < j->n; i++)
		ingest__b_release(&j->p[i].b);
	j->n = 0;
}

int ingest__parse_jfr(struct arena *a, const void *data, size_t len, const void *labels,
		      size_t labels_len, const struct ingest_limits *lim, uint32_t sample_rate,
		      const struct store_label *base, size_t n_base, struct ingest_jfr *out,
		      struct err_msg *msg)
{
	const uint8_t *p = data;
	struct parse ps;
	size_t off = 0;
	int rc = 0;

	memset(&ps, 0, sizeof(ps));
	memset(out, 0, sizeof(*out));
	ps.lim = lim;
	ps.out = out;
	ps.base = base;
	ps.n_base = n_base;
	ps.msg = msg;
	for (size_t i = 0; i < K_COUNT; i++) {
		out->p[i].kind = &kinds[i];
		ingest__b_init(&out->p[i].b, a, chunk_cap(len), lim, kinds[i].n_types);
	}
	out->n = K_COUNT;
	out->period = sample_rate ? (int64_t)(NS_PER_S / sample_rate) : 0;
	arena_init(&ps.ls_arena, 16 * labels_len + ((size_t)1 << 20));
	if (labels_len && pb_each(labels, (const uint8_t *)labels + labels_len, snapshot_cb, &ps)) {
		rc = err_set(msg, ERR_INVALID, "jfr: the labels part is not a LabelsSnapshot");
		goto out;
	}
	if (len == 0)
		rc = err_set(msg, ERR_INVALID, "jfr: empty recording");
	while (!rc && off < len) {
		size_t used = 0;

		rc = read_chunk(&ps, p + off, len - off, &used);
		off += used;
	}
	if (rc)
		goto out;
	/* Timed kinds count samples: each is one period of the sample rate. */
	for (size_t k = 0; k < K_COUNT; k++) {
		struct ingest_builder *b = &out->p[k].b;

		if (!kinds[k].timed)
			continue;
		for (size_t i = 0; i < b->n_samples; i++)
			if (__builtin_mul_overflow(b->vals[i], out->period, &b->vals[i])) {
				rc = err_set(msg, ERR_INVALID, "jfr: a stack's time overflows");
				goto out;
			}
	}
	out->event = arena_strndup(a, ps.event, strlen(ps.event));
	if (!out->event)
		rc = arena_failed(a);
out:
	for (size_t i = 0; i < sizeof(renames) / sizeof(renames[0]); i++)
		if (ps.compiled[i])
			regfree(&ps.re[i]);
	arena_release(&ps.ls_arena);
	if (rc)
		ingest__jfr_release(out);
	return rc;
}
