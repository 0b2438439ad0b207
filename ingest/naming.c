/*
 * naming.c - the names Pyroscope gives profiles, so that every agent's
 * data lands under the profile type ID a Pyroscope server would give it.
 *
 * A profile type ID is `<__name__>:<sample type>:<unit>:<period type>:<unit>`
 * (docs/ingest.md, "Profile types").  The four last parts come from the
 * profile itself; this file decides the first one, __name__, for the paths
 * where the client does not send it as a label:
 *
 *   - pprof sent to /ingest: Pyroscope's rule over the profile's own sample
 *     types, seen through the request's sample_type_config (display names)
 *     or, without one, through its default mapping (ingest__metric_name);
 *   - the legacy text formats: the kind suffix of the application name
 *     (ingest__text_kind), Pyroscope's table of them;
 *   - any path: Grafana Alloy's godeltaprof_<kind> names become <kind>
 *     (ingest__relabel_name), as Pyroscope's default relabelling rules do.
 *
 * Everything here is a pure function of its arguments.
 */
#include "ingest/ingest_int.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/json.h"

#include <strings.h>
#include <string.h>

/* ---- sample_type_config ------------------------------------------------- */

/*
 * Pyroscope's defaults when a request carries no sample_type_config: only
 * the display names matter for naming.  Go's block and mutex profiles share
 * the sample types "contentions" and "delay", so without a configuration
 * both read as mutex; pyroscope-go always sends one (mutex_count or
 * block_count), which is what keeps the two kinds apart.
 */
static const struct ingest_stc_entry default_entries[] = {
	{ "samples", "cpu", "samples", NULL, 0, 1 },
	{ "inuse_objects", NULL, "objects", "average", 0, 0 },
	{ "alloc_objects", NULL, "objects", NULL, 1, 0 },
	{ "inuse_space", NULL, "bytes", "average", 0, 0 },
	{ "alloc_space", NULL, "bytes", NULL, 1, 0 },
	{ "goroutine", "goroutines", "goroutines", "average", 0, 0 },
	{ "contentions", "mutex_count", "lock_samples", NULL, 1, 0 },
	{ "delay", "mutex_duration", "lock_nanoseconds", NULL, 1, 0 },
};

static const struct ingest_stc default_stc = {
	default_entries, sizeof(default_entries) / sizeof(default_entries[0])
};

const struct ingest_stc_entry *ingest__stc_find(const struct ingest_stc *stc, const char *type)
{
	if (!stc)
		stc = &default_stc;
	for (size_t i = 0; i < stc->n; i++)
		if (strcmp(stc->e[i].type, type) == 0)
			return &stc->e[i];
	return NULL;
}

/* Reads member `v` of entry `key` as a string (NULL when JSON null). */
static int stc_string(const char *key, const char *field, const struct json_value *v,
		      struct arena *a, const char **out, struct err_msg *msg)
{
	if (v->type == JSON_NULL) {
		*out = NULL;
		return 0;
	}
	if (v->type != JSON_STRING)
		return err_set(msg, ERR_INVALID, "sample_type_config: %.64s.%s: %s, want a string",
			       key, field, json_type_name(v->type));
	*out = arena_strndup(a, v->str, v->len);
	return *out ? 0 : arena_failed(a);
}

static int stc_bool(const char *key, const char *field, const struct json_value *v, int *out,
		    struct err_msg *msg)
{
	if (v->type == JSON_NULL)
		return 0;
	if (v->type != JSON_BOOL)
		return err_set(msg, ERR_INVALID, "sample_type_config: %.64s.%s: %s, want a boolean",
			       key, field, json_type_name(v->type));
	*out = v->boolean;
	return 0;
}

/* One entry; member names match case-insensitively, as Go's encoding/json does. */
static int stc_entry(struct arena *a, const char *key, const struct json_value *obj,
		     struct ingest_stc_entry *e, struct err_msg *msg)
{
	int rc = 0;

	memset(e, 0, sizeof(*e));
	e->type = arena_strndup(a, key, strlen(key));
	if (!e->type)
		return arena_failed(a);
	if (obj->type == JSON_NULL)
		return 0;
	if (obj->type != JSON_OBJECT)
		return err_set(msg, ERR_INVALID, "sample_type_config: %.64s: %s, want an object",
			       key, json_type_name(obj->type));
	for (size_t i = 0; i < obj->n && !rc; i++) {
		const char *k = obj->keys[i];
		const struct json_value *v = &obj->items[i];

		if (strcasecmp(k, "display-name") == 0)
			rc = stc_string(key, k, v, a, &e->display, msg);
		else if (strcasecmp(k, "units") == 0)
			rc = stc_string(key, k, v, a, &e->units, msg);
		else if (strcasecmp(k, "aggregation") == 0)
			rc = stc_string(key, k, v, a, &e->aggregation, msg);
		else if (strcasecmp(k, "cumulative") == 0)
			rc = stc_bool(key, k, v, &e->cumulative, msg);
		else if (strcasecmp(k, "sampled") == 0)
			rc = stc_bool(key, k, v, &e->sampled, msg);
	}
	return rc;
}

int ingest__stc_parse(struct arena *a, const void *json, size_t len, struct ingest_stc *out,
		      struct err_msg *msg)
{
	struct ingest_stc_entry *e;
	struct json_value *root;
	struct arena t;
	size_t n = 0;
	int rc;

	if (len > INGEST_MAX_STC_BYTES)
		return err_set(msg, ERR_TOO_LARGE, "sample_type_config: %zu bytes, more than %d",
			       len, INGEST_MAX_STC_BYTES);
	arena_init(&t, json_mem_bound(len));
	rc = json_parse(json, len, &t, &root, msg);
	if (rc) {
		ingest__msg_prefix(msg, rc, "sample_type_config");
		goto out;
	}
	if (root->type == JSON_NULL)
		goto done;
	if (root->type != JSON_OBJECT) {
		rc = err_set(msg, ERR_INVALID, "sample_type_config: %s, want an object",
			     json_type_name(root->type));
		goto out;
	}
	n = root->n;
done:
	e = arena_calloc(a, n ? n : 1, sizeof(*e));
	if (!e) {
		rc = arena_failed(a);
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = stc_entry(a, root->keys[i], &root->items[i], &e[i], msg);
	if (!rc) {
		out->e = e;
		out->n = n;
	}
out:
	arena_release(&t);
	return rc;
}

/* ---- __name__ of a pprof ------------------------------------------------ */

const char *ingest__metric_name(const char *const *types, size_t n, const struct ingest_stc *stc)
{
	const char *st = "";

	/* A profile with a wall sample type is a wall profile, whatever else it has. */
	for (size_t i = 0; i < n; i++)
		if (strcmp(types[i], "wall") == 0)
			return "wall";
	for (size_t i = 0; i < n; i++) {
		const struct ingest_stc_entry *e = ingest__stc_find(stc, types[i]);

		st = e && e->display && *e->display ? e->display : types[i];
		if (strstr(st, "cpu"))
			return "process_cpu";
		if (strstr(st, "alloc_") || strstr(st, "inuse_") || strcmp(st, "space") == 0 ||
		    strcmp(st, "objects") == 0)
			return "memory";
		if (strstr(st, "mutex_"))
			return "mutex";
		if (strstr(st, "block_"))
			return "block";
		if (strstr(st, "goroutines"))
			return "goroutines";
	}
	/* None matched: Pyroscope names the profile after its last sample type. */
	return st;
}

/* ---- kind suffixes of /ingest names -------------------------------------- */

/*
 * The kind suffix of a pprof's application name, as a declaration of its
 * __name__.  Each entry is what ingest__metric_name() gives the profile the
 * suffix usually comes with, so declaring the obvious changes nothing; the
 * suffix wins when the profile alone cannot tell (block_* for a Go block
 * profile sent without a sample_type_config).
 */
static const struct {
	const char *kind;
	const char *name;
} pprof_kinds[] = {
	{ "cpu", "process_cpu" },
	{ "itimer", "process_cpu" },
	{ "wall", "wall" },
	{ "alloc_objects", "memory" },
	{ "alloc_space", "memory" },
	{ "inuse_objects", "memory" },
	{ "inuse_space", "memory" },
	{ "goroutines", "goroutines" },
	{ "mutex_count", "mutex" },
	{ "mutex_duration", "mutex" },
	{ "block_count", "block" },
	{ "block_duration", "block" },
};

const char *ingest__kind_name(const char *kind, size_t len)
{
	for (size_t i = 0; i < sizeof(pprof_kinds) / sizeof(pprof_kinds[0]); i++)
		if (strlen(pprof_kinds[i].kind) == len && memcmp(pprof_kinds[i].kind, kind, len) == 0)
			return pprof_kinds[i].name;
	return NULL;
}

/*
 * The legacy text formats carry one value per stack and no sample types:
 * the kind suffix says everything.  Time-based kinds (timed_type set)
 * become <timed_type>/nanoseconds with a cpu/nanoseconds period when the
 * request has a sample rate.  The table is
 * Pyroscope's, entry for entry, including "goroutine" as the __name__ of
 * goroutines and lock_* as block.
 */
static const struct ingest_text_kind text_kinds[] = {
	{ "cpu", "process_cpu", "samples", "count", "cpu" },
	{ "itimer", "process_cpu", "samples", "count", "cpu" },
	{ "wall", "wall", "samples", "count", "wall" },
	{ "seconds", "wall", "samples", "count", "wall" },
	{ "milliseconds", "wall", "samples", "count", "wall" },
	{ "microseconds", "wall", "samples", "count", "wall" },
	{ "nanoseconds", "wall", "samples", "count", "wall" },
	{ "inuse_objects", "memory", "inuse_objects", "count", NULL },
	{ "inuse_space", "memory", "inuse_space", "bytes", NULL },
	{ "alloc_objects", "memory", "alloc_objects", "count", NULL },
	{ "alloc_space", "memory", "alloc_space", "bytes", NULL },
	{ "goroutines", "goroutine", "goroutines", "count", NULL },
	{ "mutex_count", "mutex", "contentions", "count", NULL },
	{ "mutex_duration", "mutex", "delay", "nanoseconds", NULL },
	{ "block_count", "block", "contentions", "count", NULL },
	{ "block_duration", "block", "delay", "nanoseconds", NULL },
	{ "lock_count", "block", "contentions", "count", NULL },
	{ "lock_duration", "block", "delay", "nanoseconds", NULL },
	{ "alloc_in_new_tlab_objects", "memory", "alloc_in_new_tlab_objects", "count", NULL },
	{ "alloc_in_new_tlab_bytes", "memory", "alloc_in_new_tlab_bytes", "bytes", NULL },
	{ "alloc_outside_tlab_objects", "memory", "alloc_outside_tlab_objects", "count", NULL },
	{ "alloc_outside_tlab_bytes", "memory", "alloc_outside_tlab_bytes", "bytes", NULL },
	{ "live", "memory", "live", "count", NULL },
	{ "exceptions", "exceptions", "samples", "count", NULL },
	{ "bytes", "memory", "samples", "bytes", NULL },
};

const struct ingest_text_kind *ingest__text_kind(const char *kind)
{
	for (size_t i = 0; i < sizeof(text_kinds) / sizeof(text_kinds[0]); i++)
		if (strcmp(text_kinds[i].kind, kind) == 0)
			return &text_kinds[i];
	return NULL;
}

/* ---- relabelling ---------------------------------------------------------- */

const char *ingest__relabel_name(const char *name)
{
	static const char prefix[] = "godeltaprof_";

	/* Pyroscope's rule replaces ^godeltaprof_(.*)$ by $1; an empty $1
	 * would leave no name at all, so that one is kept as sent. */
	if (strncmp(name, prefix, sizeof(prefix) - 1) == 0 && name[sizeof(prefix) - 1])
		return name + sizeof(prefix) - 1;
	return name;
}

int ingest__label_dropped(const char *name)
{
	/* Pyroscope's write path removes these before it stores a series:
	 * __delta__ (Alloy and the JFR conversion send "false") and
	 * __session_id__ (pyroscope-go; kept only with a limit unhex does not
	 * have). */
	return strcmp(name, "__delta__") == 0 || strcmp(name, "__session_id__") == 0;
}

/* ---- agents --------------------------------------------------------------- */

unsigned ingest__spy_fixes(const char *spy, const struct ingest_stc *stc)
{
	unsigned f = INGEST_FIX_TIME;

	if (!spy)
		spy = "unknown";
	/* Old .NET agents did not always say who they were; their
	 * sample_type_config, which names "inuse-space", does. */
	if (strcmp(spy, "dotnetspy") == 0 ||
	    (strcmp(spy, "unknown") == 0 && stc && ingest__stc_find(stc, "inuse-space")))
		f |= INGEST_FIX_DOTNET;
	if (strcmp(spy, "pyspy") == 0)
		f |= INGEST_FIX_SCRIPTING | INGEST_FIX_PYSPY;
	else if (strcmp(spy, "rbspy") == 0 || strcmp(spy, "scripting") == 0)
		f |= INGEST_FIX_SCRIPTING;
	return f;
}
