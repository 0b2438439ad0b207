/*
 * otlp_convert.c - decoding, validation and conversion of an OTLP
 * ExportProfilesServiceRequest (opentelemetry-proto v1.10/v1.11,
 * package v1development) into struct ingest_pprof, ready for
 * ingest__write().  The pipeline and the index conventions are described
 * in ingest_int.h; the user-facing rules (service name, labels, profile
 * types, build IDs, limits) in docs/ingest.md, "OTLP profiles".
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/err.h"

#include "otlp_types.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Semantic-convention attribute names unhex reads. */
#define ATTR_SERVICE_NAME "service.name"
#define ATTR_EXE_NAME "process.executable.name"
#define ATTR_BUILD_ID_GNU "process.executable.build_id.gnu"
#define UNKNOWN_SERVICE "unknown_service"

/*
 * Resource, scope and profile attributes that become series labels, under
 * their own names.  Only attributes whose value is stable across restarts
 * and shared by many processes are listed: per-process or per-thread ones
 * (process.pid, thread.id, container.id, k8s.pod.name, command lines,
 * environment variables) would make a new series per process.
 */
static const char *const label_attrs[] = {
	"service.namespace",   "service.version",    "deployment.environment",
	"deployment.environment.name", "host.name",  "process.executable.name",
	"container.image.name", "k8s.cluster.name",  "k8s.namespace.name",
	"k8s.deployment.name", "k8s.statefulset.name", "k8s.daemonset.name",
	"k8s.container.name",  "k8s.node.name",
};

#define N_LABEL_ATTRS (sizeof(label_attrs) / sizeof(label_attrs[0]))
/* service_name + __name__ + the allow list: the most a profile can have. */
#define MAX_BASE_LABELS (N_LABEL_ATTRS + 2)

/* An index into a table of n elements: 0 ("not set") is always allowed. */
#define IDX_OK(i, n) ((i) == 0 || ((i) > 0 && (size_t)(i) < (n)))

static const Dict empty_dict = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;

struct oconv {
	struct arena *a;
	const struct ingest_limits *lim;
	const Dict *d;
	int64_t now_ns;
	struct err_msg *msg;
	/* The dictionary converted once, entries 1..n-1 (see ingest_int.h). */
	struct store_mapping *maps;
	struct store_function *funcs;
	struct ingest_location *locs;
	struct ingest_group *group0;   /* the one group: no sample labels */
	uint32_t *slot;                /* per stack index: merged sample + 1 */
	uint32_t *touched;             /* stack indices of the current profile */
	int64_t *sums;                 /* per merged sample */
	uint64_t *spans;               /* per merged sample: its link's span id (0 none) */
	int any_span;                  /* some merged sample of the profile has one */
};

/* A label set being built: names are static or dictionary strings. */
struct lset {
	struct store_label l[MAX_BASE_LABELS];
	size_t n;
};

static size_t tab_n(const struct oconv *c, int which);

static const char *str(const struct oconv *c, int32_t i)
{
	if (i <= 0 || (size_t)i >= c->d->n_string_table || !c->d->string_table[i])
		return "";
	return c->d->string_table[i];
}

static int bad_index(struct oconv *c, const char *pre, const char *field, int64_t idx,
		     const char *table, size_t n)
{
	return err_set(c->msg, ERR_INVALID, "%s: %s %" PRId64 " out of range (%s has %zu)", pre,
		       field, idx, table, n);
}

static int check_str(struct oconv *c, const char *pre, const char *field, int32_t idx)
{
	if (IDX_OK(idx, c->d->n_string_table))
		return 0;
	return bad_index(c, pre, field, idx, "string_table", c->d->n_string_table);
}

static int check_attrs(struct oconv *c, const char *pre, const int32_t *idx, size_t n)
{
	for (size_t j = 0; j < n; j++)
		if (!IDX_OK(idx[j], c->d->n_attribute_table)) {
			char f[48];

			snprintf(f, sizeof(f), "attribute_indices[%zu]", j);
			return bad_index(c, pre, f, idx[j], "attribute_table",
					 c->d->n_attribute_table);
		}
	return 0;
}

static int not_zero(struct oconv *c, const char *table)
{
	return err_set(c->msg, ERR_INVALID,
		       "dictionary: %s[0] must be the zero value (index 0 means \"not set\")", table);
}

/* ---- attribute values --------------------------------------------------- */

/*
 * The value of an attribute as a label value, allocated from the arena
 * when it has to be formatted; NULL for values that are not strings, ints
 * or bools (arrays, maps, bytes, doubles are not labels).  *out stays NULL
 * on those.
 */
static int any_str(struct oconv *c, const AnyValue *v, const char **out)
{
	char tmp[32];

	*out = NULL;
	if (!v)
		return 0;
	switch (v->value_case) {
	case ANY(STRING_VALUE):
		*out = v->string_value ? v->string_value : "";
		return 0;
	case ANY(STRING_VALUE_STRINDEX):
		*out = str(c, v->string_value_strindex);
		return 0;
	case ANY(INT_VALUE):
		snprintf(tmp, sizeof(tmp), "%" PRId64, v->int_value);
		break;
	case ANY(BOOL_VALUE):
		snprintf(tmp, sizeof(tmp), "%s", v->bool_value ? "true" : "false");
		break;
	default:
		return 0;
	}
	*out = arena_strndup(c->a, tmp, strlen(tmp));
	return *out ? 0 : arena_failed(c->a);
}

static int check_any(struct oconv *c, const char *pre, const AnyValue *v)
{
	if (v && v->value_case == ANY(STRING_VALUE_STRINDEX))
		return check_str(c, pre, "value.string_value_strindex", v->string_value_strindex);
	return 0;
}

/* The value of `key` among dictionary attributes idx[0..n) (checked), or NULL. */
static const AnyValue *dict_attr(const struct oconv *c, const int32_t *idx, size_t n,
				 const char *key)
{
	for (size_t j = 0; j < n; j++) {
		const KeyValueAndUnit *kv;

		if (idx[j] <= 0)
			continue;
		kv = c->d->attribute_table[idx[j]];
		if (strcmp(str(c, kv->key_strindex), key) == 0)
			return kv->value;
	}
	return NULL;
}

static int dict_bool(const struct oconv *c, const int32_t *idx, size_t n, const char *key)
{
	const AnyValue *v = dict_attr(c, idx, n, key);

	return v && v->value_case == ANY(BOOL_VALUE) && v->bool_value;
}

/* ---- the dictionary ----------------------------------------------------- */

enum { T_MAPPING, T_LOCATION, T_FUNCTION, T_LINK, T_ATTRIBUTE, T_STACK };

static size_t tab_n(const struct oconv *c, int which)
{
	switch (which) {
	case T_MAPPING:
		return c->d->n_mapping_table;
	case T_LOCATION:
		return c->d->n_location_table;
	case T_FUNCTION:
		return c->d->n_function_table;
	case T_LINK:
		return c->d->n_link_table;
	case T_ATTRIBUTE:
		return c->d->n_attribute_table;
	default:
		return c->d->n_stack_table;
	}
}

static int check_mappings(struct oconv *c)
{
	char pre[64];
	int rc;

	for (size_t i = 0; i < c->d->n_mapping_table; i++) {
		const Mapping *m = c->d->mapping_table[i];

		snprintf(pre, sizeof(pre), "dictionary: mapping %zu", i);
		if ((rc = check_str(c, pre, "filename_strindex", m->filename_strindex)) ||
		    (rc = check_attrs(c, pre, m->attribute_indices, m->n_attribute_indices)))
			return rc;
		if (i == 0 && (m->memory_start || m->memory_limit || m->file_offset ||
			       m->filename_strindex || m->n_attribute_indices))
			return not_zero(c, "mapping_table");
	}
	return 0;
}

static int check_locations(struct oconv *c)
{
	char pre[64], f[48];
	int rc;

	for (size_t i = 0; i < c->d->n_location_table; i++) {
		const Location *l = c->d->location_table[i];

		snprintf(pre, sizeof(pre), "dictionary: location %zu", i);
		if (!IDX_OK(l->mapping_index, tab_n(c, T_MAPPING)))
			return bad_index(c, pre, "mapping_index", l->mapping_index, "mapping_table",
					 tab_n(c, T_MAPPING));
		for (size_t j = 0; j < l->n_lines; j++)
			if (!IDX_OK(l->lines[j]->function_index, tab_n(c, T_FUNCTION))) {
				snprintf(f, sizeof(f), "lines[%zu].function_index", j);
				return bad_index(c, pre, f, l->lines[j]->function_index,
						 "function_table", tab_n(c, T_FUNCTION));
			}
		if ((rc = check_attrs(c, pre, l->attribute_indices, l->n_attribute_indices)))
			return rc;
		if (l->n_lines > UINT32_MAX)
			return err_set(c->msg, ERR_TOO_LARGE, "%s: too many lines", pre);
		if (i == 0 && (l->mapping_index || l->address || l->n_lines || l->n_attribute_indices))
			return not_zero(c, "location_table");
	}
	return 0;
}

static int check_functions(struct oconv *c)
{
	char pre[64];
	int rc;

	for (size_t i = 0; i < c->d->n_function_table; i++) {
		const Function *f = c->d->function_table[i];

		snprintf(pre, sizeof(pre), "dictionary: function %zu", i);
		if ((rc = check_str(c, pre, "name_strindex", f->name_strindex)) ||
		    (rc = check_str(c, pre, "system_name_strindex", f->system_name_strindex)) ||
		    (rc = check_str(c, pre, "filename_strindex", f->filename_strindex)))
			return rc;
		if (i == 0 && (f->name_strindex || f->system_name_strindex || f->filename_strindex ||
			       f->start_line))
			return not_zero(c, "function_table");
	}
	return 0;
}

static int all_zero(const ProtobufCBinaryData *b)
{
	for (size_t i = 0; i < b->len; i++)
		if (b->data[i])
			return 0;
	return 1;
}

static int check_links(struct oconv *c)
{
	for (size_t i = 0; i < c->d->n_link_table; i++) {
		const Link *l = c->d->link_table[i];

		if ((l->trace_id.len && l->trace_id.len != 16) || (l->span_id.len && l->span_id.len != 8))
			return err_set(c->msg, ERR_INVALID,
				       "dictionary: link %zu: trace_id must have 16 bytes and span_id 8 (got %zu and %zu)",
				       i, l->trace_id.len, l->span_id.len);
		if (i == 0 && (!all_zero(&l->trace_id) || !all_zero(&l->span_id)))
			return not_zero(c, "link_table");
	}
	return 0;
}

static int check_attribute_table(struct oconv *c)
{
	char pre[64];
	int rc;

	for (size_t i = 0; i < c->d->n_attribute_table; i++) {
		const KeyValueAndUnit *kv = c->d->attribute_table[i];

		snprintf(pre, sizeof(pre), "dictionary: attribute %zu", i);
		if ((rc = check_str(c, pre, "key_strindex", kv->key_strindex)) ||
		    (rc = check_str(c, pre, "unit_strindex", kv->unit_strindex)) ||
		    (rc = check_any(c, pre, kv->value)))
			return rc;
		if (i == 0 && (kv->key_strindex || kv->unit_strindex ||
			       (kv->value && kv->value->value_case != ANY(_NOT_SET))))
			return not_zero(c, "attribute_table");
	}
	return 0;
}

static int check_stacks(struct oconv *c)
{
	size_t nl = tab_n(c, T_LOCATION);

	for (size_t i = 0; i < c->d->n_stack_table; i++) {
		const Stack *s = c->d->stack_table[i];

		if (i == 0 && s->n_location_indices)
			return not_zero(c, "stack_table");
		if (s->n_location_indices > c->lim->max_stack_depth)
			return err_set(c->msg, ERR_TOO_LARGE,
				       "dictionary: stack %zu: depth %zu exceeds the limit of %zu", i,
				       s->n_location_indices, c->lim->max_stack_depth);
		for (size_t j = 0; j < s->n_location_indices; j++) {
			int32_t li = s->location_indices[j];

			if (li == 0)
				return err_set(c->msg, ERR_INVALID,
					       "dictionary: stack %zu: location_indices[%zu] is 0 (the zero location is not a frame)",
					       i, j);
			if (!IDX_OK(li, nl)) {
				char pre[64], f[48];

				snprintf(pre, sizeof(pre), "dictionary: stack %zu", i);
				snprintf(f, sizeof(f), "location_indices[%zu]", j);
				return bad_index(c, pre, f, li, "location_table", nl);
			}
		}
	}
	return 0;
}

static int check_dict(struct oconv *c)
{
	const Dict *d = c->d;
	int rc;

	if (d->n_string_table && d->string_table[0] && d->string_table[0][0])
		return err_set(c->msg, ERR_INVALID,
			       "dictionary: string_table[0] must be \"\" (index 0 means \"not set\")");
	if ((rc = check_mappings(c)) || (rc = check_functions(c)) || (rc = check_locations(c)) ||
	    (rc = check_links(c)) || (rc = check_attribute_table(c)) || (rc = check_stacks(c)))
		return rc;
	return 0;
}

/* Converts mappings, functions and locations 1..n-1 into the shared arrays. */
static int conv_dict(struct oconv *c)
{
	const Dict *d = c->d;
	size_t nm = d->n_mapping_table, nf = d->n_function_table, nl = d->n_location_table;
	uint32_t *n_locs, *n_lined;
	int rc;

	c->maps = arena_calloc(c->a, nm ? nm : 1, sizeof(*c->maps));
	c->funcs = arena_calloc(c->a, nf ? nf : 1, sizeof(*c->funcs));
	c->locs = arena_calloc(c->a, nl ? nl : 1, sizeof(*c->locs));
	n_locs = arena_calloc(c->a, nm ? nm : 1, sizeof(*n_locs));
	n_lined = arena_calloc(c->a, nm ? nm : 1, sizeof(*n_lined));
	c->group0 = arena_calloc(c->a, 1, sizeof(*c->group0));
	if (!c->maps || !c->funcs || !c->locs || !n_locs || !n_lined || !c->group0)
		return arena_failed(c->a);
	for (size_t i = 1; i < nf; i++) {
		const Function *f = d->function_table[i];
		struct store_function *o = &c->funcs[i - 1];

		o->name = str(c, f->name_strindex);
		o->system_name = str(c, f->system_name_strindex);
		o->filename = str(c, f->filename_strindex);
		o->start_line = f->start_line;
	}
	for (size_t i = 1; i < nl; i++) {
		const Location *l = d->location_table[i];
		struct ingest_location *o = &c->locs[i - 1];
		struct ingest_line *lines = NULL;

		if (l->n_lines) {
			lines = arena_alloc(c->a, l->n_lines * sizeof(*lines));
			if (!lines)
				return arena_failed(c->a);
		}
		for (size_t j = 0; j < l->n_lines; j++) {
			lines[j].function = (uint32_t)l->lines[j]->function_index;
			lines[j].line = l->lines[j]->line;
			lines[j].column = l->lines[j]->column;
		}
		o->mapping = (uint32_t)l->mapping_index;
		o->address = l->address;
		o->lines = lines;
		o->n_lines = (uint32_t)l->n_lines;
		n_locs[l->mapping_index]++;
		if (l->n_lines)
			n_lined[l->mapping_index]++;
	}
	for (size_t i = 1; i < nm; i++) {
		const Mapping *m = d->mapping_table[i];
		struct store_mapping *o = &c->maps[i - 1];
		const AnyValue *bid = dict_attr(c, m->attribute_indices, m->n_attribute_indices,
						ATTR_BUILD_ID_GNU);
		const char *s = NULL;

		o->memory_start = m->memory_start;
		o->memory_limit = m->memory_limit;
		o->file_offset = m->file_offset;
		o->filename = str(c, m->filename_strindex);
		o->build_id = "";
		if ((rc = any_str(c, bid, &s)))
			return rc;
		if (s && *s) {
			rc = ingest__build_id(c->a, s, &o->build_id);
			if (rc == ERR_INVALID)
				return err_set(c->msg, rc,
					       "dictionary: mapping %zu: %s longer than %d bytes", i,
					       ATTR_BUILD_ID_GNU, INGEST_MAX_BUILD_ID);
			if (rc)
				return rc;
		}
		/* OTLP native frames carry ELF virtual addresses (the eBPF
		 * profiler's convention); they are stored as they are. */
		o->flags = STORE_MAP_ADDR_VADDR;
		/* Symbolized on the host when every location of the mapping has
		 * lines; otherwise its bare addresses are resolved at query time. */
		if ((n_locs[i] && n_locs[i] == n_lined[i]) ||
		    dict_bool(c, m->attribute_indices, m->n_attribute_indices,
			      "pprof.mapping.has_functions"))
			o->flags |= STORE_MAP_HAS_FUNCTIONS;
		if (dict_bool(c, m->attribute_indices, m->n_attribute_indices,
			      "pprof.mapping.has_filenames"))
			o->flags |= STORE_MAP_HAS_FILENAMES;
		if (dict_bool(c, m->attribute_indices, m->n_attribute_indices,
			      "pprof.mapping.has_line_numbers"))
			o->flags |= STORE_MAP_HAS_LINE_NUMBERS;
		if (dict_bool(c, m->attribute_indices, m->n_attribute_indices,
			      "pprof.mapping.has_inline_frames"))
			o->flags |= STORE_MAP_HAS_INLINE_FRAMES;
	}
	c->slot = arena_calloc(c->a, d->n_stack_table ? d->n_stack_table : 1, sizeof(*c->slot));
	return c->slot ? 0 : arena_failed(c->a);
}

/* ---- labels ------------------------------------------------------------- */

static int label_attr(const char *key)
{
	for (size_t i = 0; i < N_LABEL_ATTRS; i++)
		if (strcmp(label_attrs[i], key) == 0)
			return (int)i;
	return -1;
}

/* Sets label `name` to `value` (replacing an earlier one). */
static int lset_put(struct oconv *c, const char *pre, struct lset *ls, const char *name,
		    const char *value)
{
	size_t i;

	if (strlen(value) > c->lim->max_label_bytes)
		return err_set(c->msg, ERR_TOO_LARGE, "%s: attribute %s: value longer than %zu bytes",
			       pre, name, c->lim->max_label_bytes);
	for (i = 0; i < ls->n; i++)
		if (strcmp(ls->l[i].name, name) == 0)
			break;
	if (i == ls->n) {
		if (ls->n == MAX_BASE_LABELS)
			return err_set(c->msg, ERR_INVALID, "%s: too many labels", pre);
		ls->n++;
	}
	ls->l[i].name = name;
	ls->l[i].value = value;
	return 0;
}

/* Applies one attribute (key, value) to the labels and the service name. */
static int apply_attr(struct oconv *c, const char *pre, struct lset *ls, const char **service,
		      const char **exe, const char *key, const AnyValue *v)
{
	const char *s = NULL;
	int k = label_attr(key), is_svc = strcmp(key, ATTR_SERVICE_NAME) == 0;
	int rc;

	if (k < 0 && !is_svc)
		return 0;
	if ((rc = any_str(c, v, &s)) || !s || !*s)
		return rc;
	if (is_svc)
		*service = s;
	if (strcmp(key, ATTR_EXE_NAME) == 0)
		*exe = s;
	return k < 0 ? 0 : lset_put(c, pre, ls, label_attrs[k], s);
}

/* Attributes given as KeyValue (resource, scope): key or key_strindex. */
static int apply_kvs(struct oconv *c, const char *pre, struct lset *ls, const char **service,
		     const char **exe, KeyValue *const *kvs, size_t n)
{
	char p2[160];
	int rc;

	for (size_t j = 0; j < n; j++) {
		const KeyValue *kv = kvs[j];
		const char *key = kv->key && *kv->key ? kv->key : "";

		snprintf(p2, sizeof(p2), "%s: attribute %zu", pre, j);
		if (!*key) {
			if ((rc = check_str(c, p2, "key_strindex", kv->key_strindex)))
				return rc;
			key = str(c, kv->key_strindex);
		}
		if ((rc = check_any(c, p2, kv->value)) ||
		    (rc = apply_attr(c, pre, ls, service, exe, key, kv->value)))
			return rc;
	}
	return 0;
}

/* ---- one profile -------------------------------------------------------- */


struct ptype {
	const char *name, *type, *unit, *ptype, *punit;
	int64_t mult; /* values are multiplied by this (samples -> nanoseconds) */
};

/*
 * The profile type, named as Pyroscope names it: __name__ is process_cpu
 * when the period type is cpu, else the sample type; a period type that is
 * missing repeats the sample type.  On-CPU samples counted with a period
 * in nanoseconds (the eBPF profiler's samples/count, cpu/nanoseconds)
 * become cpu/nanoseconds with value x period.
 */
static int profile_type(struct oconv *c, const char *pre, const Profile *p, struct ptype *t)
{
	const ValueType *st = p->sample_type, *pt = p->period_type;
	int rc;

	if (!st)
		return err_set(c->msg, ERR_INVALID, "%s: no sample_type", pre);
	if ((rc = check_str(c, pre, "sample_type.type_strindex", st->type_strindex)) ||
	    (rc = check_str(c, pre, "sample_type.unit_strindex", st->unit_strindex)))
		return rc;
	if (pt && ((rc = check_str(c, pre, "period_type.type_strindex", pt->type_strindex)) ||
		   (rc = check_str(c, pre, "period_type.unit_strindex", pt->unit_strindex))))
		return rc;
	if (p->period < 0)
		return err_set(c->msg, ERR_INVALID, "%s: period %" PRId64 " is negative", pre,
			       p->period);
	t->type = str(c, st->type_strindex);
	t->unit = str(c, st->unit_strindex);
	if (!*t->type)
		return err_set(c->msg, ERR_INVALID, "%s: sample_type has no type", pre);
	if (pt && *str(c, pt->type_strindex)) {
		t->ptype = str(c, pt->type_strindex);
		t->punit = str(c, pt->unit_strindex);
	} else {
		t->ptype = t->type;
		t->punit = t->unit;
	}
	t->mult = 1;
	if (strcmp(t->type, "samples") == 0 && strcmp(t->unit, "count") == 0 &&
	    strcmp(t->ptype, "cpu") == 0 && strcmp(t->punit, "nanoseconds") == 0 && p->period > 0) {
		t->type = "cpu";
		t->unit = "nanoseconds";
		t->mult = p->period;
	}
	t->name = strcmp(t->ptype, "cpu") == 0 ? "process_cpu" : t->type;
	if (!ingest__label_name_ok(t->name))
		return err_set(c->msg, ERR_INVALID,
			       "%s: sample type '%.64s' is not a valid profile name (want [a-zA-Z_][a-zA-Z0-9_.]*)",
			       pre, t->name);
	return 0;
}

/* The value of one sample: sum of values, or the number of timestamps. */
static int sample_value(struct oconv *c, const char *pre, size_t si, const Sample *s,
			int64_t mult, int64_t *out)
{
	int64_t v = 0;

	if (s->n_values && s->n_timestamps_unix_nano && s->n_values != s->n_timestamps_unix_nano)
		return err_set(c->msg, ERR_INVALID,
			       "%s: sample %zu: %zu values but %zu timestamps (must be equal when both are set)",
			       pre, si, s->n_values, s->n_timestamps_unix_nano);
	if (s->n_values) {
		for (size_t k = 0; k < s->n_values; k++)
			if (__builtin_add_overflow(v, s->values[k], &v))
				goto overflow;
	} else {
		/* Timestamps only: each one is one observation. */
		v = (int64_t)s->n_timestamps_unix_nano;
	}
	if (__builtin_mul_overflow(v, mult, &v))
		goto overflow;
	*out = v;
	return 0;
overflow:
	return err_set(c->msg, ERR_INVALID, "%s: sample %zu: value overflows int64", pre, si);
}

static int check_sample(struct oconv *c, const char *pre, size_t si, const Sample *s)
{
	char p2[192];
	int rc;

	snprintf(p2, sizeof(p2), "%s: sample %zu", pre, si);
	if (!IDX_OK(s->stack_index, tab_n(c, T_STACK)))
		return bad_index(c, p2, "stack_index", s->stack_index, "stack_table",
				 tab_n(c, T_STACK));
	if (!IDX_OK(s->link_index, tab_n(c, T_LINK)))
		return bad_index(c, p2, "link_index", s->link_index, "link_table",
				 tab_n(c, T_LINK));
	if ((rc = check_attrs(c, p2, s->attribute_indices, s->n_attribute_indices)))
		return rc;
	return 0;
}

/*
 * The span id of link `li` as Pyroscope reads it (the span_id label it
 * makes of the link): the 8 bytes as a little-endian u64, 0 for none.
 */
static uint64_t link_span(const struct oconv *c, int32_t li)
{
	const Link *l;
	uint64_t v = 0;

	if (li <= 0 || (size_t)li >= c->d->n_link_table)
		return 0;
	l = c->d->link_table[li];
	for (size_t b = 0; b < l->span_id.len && b < 8; b++)
		v |= (uint64_t)l->span_id.data[b] << (8 * b);
	return v;
}

/*
 * Merges the samples of `p` by stack index into c->touched / c->sums;
 * returns their count in *nu.  Sample identity also includes attributes
 * and links, but neither becomes a series label, so they merge, except
 * a sample whose link names a span: its span id is kept (docs/ingest.md,
 * "Span ids"), so it stays apart here and ingest__write sums it per
 * (stack, span).
 */
static int merge_samples(struct oconv *c, const char *pre, const Profile *p, int64_t mult,
			 size_t *nu)
{
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < p->n_samples && !rc; i++) {
		const Sample *s = p->samples[i];
		int64_t v = 0;
		uint32_t k;

		uint64_t span;

		if ((rc = check_sample(c, pre, i, s)) || (rc = sample_value(c, pre, i, s, mult, &v)))
			break;
		span = link_span(c, s->link_index);
		if (span) {
			c->touched[n] = (uint32_t)s->stack_index;
			c->sums[n] = v;
			c->spans[n++] = span;
			c->any_span = 1;
			continue;
		}
		k = c->slot[s->stack_index];
		if (!k) {
			c->touched[n] = (uint32_t)s->stack_index;
			c->sums[n] = 0;
			c->spans[n] = 0;
			k = c->slot[s->stack_index] = (uint32_t)++n;
		}
		if (__builtin_add_overflow(c->sums[k - 1], v, &c->sums[k - 1]))
			rc = err_set(c->msg, ERR_INVALID,
				     "%s: sample %zu: sum of the samples of stack %d overflows int64",
				     pre, i, s->stack_index);
	}
	for (size_t u = 0; u < n; u++)
		if (!c->spans[u])
			c->slot[c->touched[u]] = 0;
	*nu = n;
	return rc;
}

/* Builds the samples of `o` from the merged stacks, dropping zero sums. */
static int fill_samples(struct oconv *c, size_t nu, struct ingest_pprof *o)
{
	size_t total = 0, n = 0;
	size_t *off;
	uint32_t *locs, *grp;
	int64_t *vals;
	uint64_t *spans = NULL;

	if (c->any_span && !(spans = arena_calloc(c->a, nu ? nu : 1, sizeof(*spans))))
		return arena_failed(c->a);
	for (size_t u = 0; u < nu; u++)
		if (c->sums[u])
			total += c->d->n_stack_table ? c->d->stack_table[c->touched[u]]->n_location_indices : 0;
	off = arena_alloc(c->a, (nu + 1) * sizeof(*off));
	locs = arena_alloc(c->a, (total ? total : 1) * sizeof(*locs));
	grp = arena_calloc(c->a, nu ? nu : 1, sizeof(*grp));
	vals = arena_alloc(c->a, (nu ? nu : 1) * sizeof(*vals));
	if (!off || !locs || !grp || !vals)
		return arena_failed(c->a);
	total = 0;
	for (size_t u = 0; u < nu; u++) {
		const Stack *s;

		if (!c->sums[u])
			continue;
		off[n] = total;
		vals[n] = c->sums[u];
		if (spans)
			spans[n] = c->spans[u];
		s = c->d->n_stack_table ? c->d->stack_table[c->touched[u]] : NULL;
		for (size_t j = 0; s && j < s->n_location_indices; j++)
			locs[total++] = (uint32_t)s->location_indices[j] - 1;
		n++;
	}
	off[n] = total;
	o->n_samples = n;
	o->sample_off = off;
	o->stack_locs = locs;
	o->sample_group = grp;
	o->values = vals;
	o->sample_span = spans;
	return 0;
}

/*
 * Converts one Profile with the labels of its resource and scope.  *kept
 * is 0 when the profile has no sample with a nonzero value (nothing to
 * store).
 */
static int conv_profile(struct oconv *c, const char *pre, const struct lset *base,
			const char *service, const char *exe, const Profile *p,
			struct ingest_pprof *o, int *kept)
{
	struct lset ls = *base;
	struct store_label *labels;
	struct ptype t = { 0 };
	const char **types;
	const char *parts[5];
	size_t nu;
	int rc;

	*kept = 0;
	if ((rc = profile_type(c, pre, p, &t)) ||
	    (rc = check_attrs(c, pre, p->attribute_indices, p->n_attribute_indices)))
		return rc;
	for (size_t j = 0; j < p->n_attribute_indices; j++) {
		const KeyValueAndUnit *kv;

		if (p->attribute_indices[j] <= 0)
			continue;
		kv = c->d->attribute_table[p->attribute_indices[j]];
		if ((rc = apply_attr(c, pre, &ls, &service, &exe, str(c, kv->key_strindex),
				     kv->value)))
			return rc;
	}
	if (!service)
		service = exe ? exe : UNKNOWN_SERVICE;
	if (strlen(service) > c->lim->max_label_bytes)
		return err_set(c->msg, ERR_TOO_LARGE, "%s: service name longer than %zu bytes", pre,
			       c->lim->max_label_bytes);
	if ((rc = lset_put(c, pre, &ls, STORE_LABEL_SERVICE, service)) ||
	    (rc = lset_put(c, pre, &ls, STORE_LABEL_NAME, t.name)))
		return rc;
	if (ls.n + 1 > c->lim->max_labels)
		return err_set(c->msg, ERR_TOO_LARGE, "%s: %zu series labels, more than the limit of %zu",
			       pre, ls.n + 1, c->lim->max_labels);
	if (p->n_samples > c->lim->max_samples)
		return err_set(c->msg, ERR_TOO_LARGE, "%s: %zu samples, more than the limit of %zu",
			       pre, p->n_samples, c->lim->max_samples);
	if (p->time_unix_nano > INT64_MAX)
		return err_set(c->msg, ERR_INVALID, "%s: time_unix_nano %" PRIu64 " is out of range",
			       pre, p->time_unix_nano);
	if (p->duration_nano > INT64_MAX)
		return err_set(c->msg, ERR_INVALID, "%s: duration_nano %" PRIu64 " is out of range",
			       pre, p->duration_nano);
	c->touched = arena_alloc(c->a, (p->n_samples ? p->n_samples : 1) * sizeof(*c->touched));
	c->sums = arena_alloc(c->a, (p->n_samples ? p->n_samples : 1) * sizeof(*c->sums));
	c->spans = arena_alloc(c->a, (p->n_samples ? p->n_samples : 1) * sizeof(*c->spans));
	c->any_span = 0;
	if (!c->touched || !c->sums || !c->spans)
		return arena_failed(c->a);
	if ((rc = merge_samples(c, pre, p, t.mult, &nu)) || (rc = fill_samples(c, nu, o)))
		return rc;
	if (!o->n_samples)
		return 0;
	labels = arena_alloc(c->a, ls.n * sizeof(*labels));
	types = arena_alloc(c->a, sizeof(*types));
	if (!labels || !types)
		return arena_failed(c->a);
	memcpy(labels, ls.l, ls.n * sizeof(*labels));
	parts[0] = t.name;
	parts[1] = t.type;
	parts[2] = t.unit;
	parts[3] = t.ptype;
	parts[4] = t.punit;
	if (!(types[0] = ingest__profile_type_id(c->a, parts)))
		return arena_failed(c->a);
	if (strlen(types[0]) > c->lim->max_label_bytes)
		return err_set(c->msg, ERR_TOO_LARGE, "%s: profile type longer than %zu bytes", pre,
			       c->lim->max_label_bytes);
	o->service = service;
	o->labels = labels;
	o->n_labels = ls.n;
	o->profile_types = types;
	o->n_types = 1;
	o->time_ns = p->time_unix_nano ? (int64_t)p->time_unix_nano : c->now_ns;
	o->duration_ns = (int64_t)p->duration_nano;
	o->period = p->period;
	o->mappings = c->maps;
	o->n_mappings = c->d->n_mapping_table ? c->d->n_mapping_table - 1 : 0;
	o->functions = c->funcs;
	o->n_functions = c->d->n_function_table ? c->d->n_function_table - 1 : 0;
	o->locations = c->locs;
	o->n_locations = c->d->n_location_table ? c->d->n_location_table - 1 : 0;
	o->groups = c->group0;
	o->n_groups = 1;
	*kept = 1;
	return 0;
}

/* ---- the request -------------------------------------------------------- */

static void *pb_alloc(void *data, size_t size)
{
	return arena_alloc(data, size ? size : 1);
}

static void pb_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

size_t ingest__otlp_arena_cap(size_t len)
{
	/* protobuf-c gives every sub-message its own struct and pointer: an
	 * empty Sample of 2 wire bytes costs 104 bytes (52x), while the
	 * messages of real requests (eBPF profiler, collector) carry their
	 * fields and cost at most ~12x.  32x plus 4 MiB holds any real request
	 * with its conversion; a bomb of empty messages fails cleanly. */
	const size_t fixed = (size_t)4 << 20;

	if (len > (SIZE_MAX - fixed) / 32)
		return SIZE_MAX;
	return 32 * len + fixed;
}

static size_t count_profiles(const Req *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_resource_profiles; i++)
		for (size_t j = 0; j < r->resource_profiles[i]->n_scope_profiles; j++)
			n += r->resource_profiles[i]->scope_profiles[j]->n_profiles;
	return n;
}

static int conv_request(struct oconv *c, const Req *r, struct ingest_otlp_req *out)
{
	size_t np = count_profiles(r), k = 0;
	uint64_t samples = 0;
	struct ingest_pprof *pp;
	char pre[128];
	int rc;

	if (np > c->lim->max_profiles)
		return err_set(c->msg, ERR_TOO_LARGE,
			       "%zu profiles in one request, more than the limit of %zu", np,
			       c->lim->max_profiles);
	if (np && !c->d->n_string_table)
		return err_set(c->msg, ERR_INVALID,
			       "dictionary: string_table is empty (profiles need sample type names)");
	if ((rc = check_dict(c)) || (rc = conv_dict(c)))
		return rc;
	pp = arena_calloc(c->a, np ? np : 1, sizeof(*pp));
	if (!pp)
		return arena_failed(c->a);
	for (size_t i = 0; i < r->n_resource_profiles; i++) {
		const ResourceProfiles *rp = r->resource_profiles[i];
		const char *rsvc = NULL, *rexe = NULL;
		struct lset rls = { .n = 0 };

		snprintf(pre, sizeof(pre), "resource %zu", i);
		if (rp->resource &&
		    (rc = apply_kvs(c, pre, &rls, &rsvc, &rexe, rp->resource->attributes,
				    rp->resource->n_attributes)))
			return rc;
		for (size_t j = 0; j < rp->n_scope_profiles; j++) {
			const ScopeProfiles *sp = rp->scope_profiles[j];
			const char *svc = rsvc, *exe = rexe;
			struct lset sls = rls;

			snprintf(pre, sizeof(pre), "resource %zu: scope %zu", i, j);
			if (sp->scope &&
			    (rc = apply_kvs(c, pre, &sls, &svc, &exe, sp->scope->attributes,
					    sp->scope->n_attributes)))
				return rc;
			for (size_t q = 0; q < sp->n_profiles; q++) {
				int kept;

				snprintf(pre, sizeof(pre), "resource %zu: scope %zu: profile %zu", i, j,
					 q);
				rc = conv_profile(c, pre, &sls, svc, exe, sp->profiles[q], &pp[k],
						  &kept);
				if (rc)
					return rc;
				if (kept) {
					samples += sp->profiles[q]->n_samples;
					k++;
				}
			}
		}
	}
	out->profiles = pp;
	out->n = k;
	out->otlp_samples = samples;
	return 0;
}

/* protobuf-c unpacks the binary request into `a`. */
static int unpack(struct arena *a, const void *p, size_t n, Req **out, struct err_msg *msg)
{
	ProtobufCAllocator al = { pb_alloc, pb_free, a };
	Req *r;

	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		&al, n, n ? p : (const void *)"");
	if (!r) {
		if (arena_failed(a) == ERR_TOO_LARGE)
			return err_set(msg, ERR_TOO_LARGE,
				       "decoding the request needs more than %zu bytes of memory", a->cap);
		if (arena_failed(a))
			return err_set(msg, arena_failed(a), "out of memory decoding the request");
		return err_set(msg, ERR_INVALID,
			       "not a valid ExportProfilesServiceRequest protobuf (%zu bytes): truncated, "
			       "a wrong wire type or a bad length (opentelemetry-proto v1.10+ numbering)",
			       n);
	}
	*out = r;
	return 0;
}

int ingest__otlp_convert(struct arena *a, const struct ingest_limits *lim, const void *p,
			 size_t n, int json, int64_t now_ns, struct ingest_otlp_req *out,
			 struct err_msg *msg)
{
	struct ingest_otlp_req res;
	struct oconv c;
	Req *r = NULL;
	int rc;

	if (n > lim->max_decompressed_bytes)
		return err_set(msg, ERR_TOO_LARGE, "request of %zu bytes exceeds the limit of %zu", n,
			       lim->max_decompressed_bytes);
	rc = json ? ingest__otlp_json_decode(a, lim, p, n, &r, msg) : unpack(a, p, n, &r, msg);
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	memset(&res, 0, sizeof(res));
	c.a = a;
	c.lim = lim;
	c.d = r->dictionary ? r->dictionary : &empty_dict;
	c.now_ns = now_ns;
	c.msg = msg;
	rc = conv_request(&c, r, &res);
	if (rc == ERR_TOO_LARGE && msg && !msg->text[0])
		rc = err_set(msg, rc, "converting the request needs more than %zu bytes of memory",
			     a->cap);
	if (rc == ERR_NOMEM && msg && !msg->text[0])
		rc = err_set(msg, rc, "out of memory converting the request");
	if (!rc)
		*out = res;
	return rc;
}
