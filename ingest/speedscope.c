/*
 * speedscope.c - speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json) as /ingest accepts
 * it with format=speedscope: one builder per profile of the file.
 *
 * The file: {"$schema": <the schema URL>, "shared": {"frames": [{"name":
 * ...}, ...]}, "profiles": [...]}.  A "sampled" profile has "samples"
 * (stacks of frame indices, root first) and as many "weights"; an
 * "evented" profile has "events" {"type": "O"|"C", "at", "frame"} in time
 * order, and every span of time between two events counts for the stack
 * open during it.  Profiles with the same name, type, unit and startValue
 * are one profile (Pyroscope merges them).  Member names match
 * case-insensitively and unknown members are ignored, as Go's
 * encoding/json reads them for Pyroscope.
 *
 * Values: a weight or a span is truncated to an integer, then multiplied
 * by 100 for time units and "none" (1 for bytes); request.c turns that
 * into nanoseconds with the sample rate (speedscope_rate()).
 */
#include "ingest/ingest_int.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/json.h"

#include <math.h>
#include <strings.h>
#include <string.h>

#define SCHEMA "https://www.speedscope.app/file-format-schema.json"

static const struct json_value *member(const struct json_value *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (strcasecmp(obj->keys[i], key) == 0)
			return &obj->items[i];
	return NULL;
}

static int want(const struct json_value *v, enum json_type t, const char *what,
		struct err_msg *msg)
{
	if (v && v->type != t && v->type != JSON_NULL)
		return err_set(msg, ERR_INVALID, "speedscope: %s: %s, want %s", what,
			       json_type_name(v->type), json_type_name(t));
	return 0;
}

static const char *str_of(const struct json_value *v)
{
	return v && v->type == JSON_STRING ? v->str : "";
}

static int num_of(const struct json_value *v, const char *what, double *out, struct err_msg *msg)
{
	if (!v || v->type == JSON_NULL) {
		*out = 0;
		return 0;
	}
	if (v->type != JSON_NUMBER)
		return err_set(msg, ERR_INVALID, "speedscope: %s: %s, want a number", what,
			       json_type_name(v->type));
	return json_double(v, out, msg) ? err_set(msg, ERR_INVALID, "speedscope: %s: bad number", what)
					: 0;
}

int ingest__ss_unit(const char *unit, uint64_t *mult)
{
	static const char *const timed[] = { "none", "nanoseconds", "microseconds", "milliseconds",
					     "seconds" };

	for (size_t i = 0; i < sizeof(timed) / sizeof(timed[0]); i++)
		if (strcmp(unit, timed[i]) == 0) {
			*mult = 100;
			return 0;
		}
	if (strcmp(unit, "bytes") == 0) {
		*mult = 1;
		return 0;
	}
	return ERR_INVALID;
}

/* One frame index of a sample or event: a number, truncated as Go's int() does. */
static int frame_index(const struct json_value *v, size_t n_frames, const char *what,
		       size_t *out, struct err_msg *msg)
{
	double d;
	int rc = num_of(v, what, &d, msg);

	if (rc)
		return rc;
	if (!(d > -1.0) || d >= (double)n_frames)
		return err_set(msg, ERR_INVALID, "speedscope: %s: frame %g out of range (%zu frames)",
			       what, d, n_frames);
	*out = (size_t)d;
	return 0;
}

/* A weight or a time span as Pyroscope counts it: truncated, times the unit's multiplier. */
static int value_of(double d, uint64_t mult, int64_t *out)
{
	if (!(d >= 0) || d >= 9.2e18)
		return ERR_INVALID;
	if (__builtin_mul_overflow((int64_t)d, (int64_t)mult, out))
		return ERR_INVALID;
	return 0;
}

struct frames {
	const struct json_value *items;
	size_t n;
	uint32_t *loc; /* location + 1 per frame, 0 until used */
};

static int frame_loc(struct ingest_builder *b, struct frames *fr, size_t i, uint32_t *out)
{
	if (!fr->loc[i]) {
		const char *name = str_of(member(&fr->items[i], "name"));
		uint32_t fn, loc;
		int rc = ingest__b_function(b, name, strlen(name), &fn);

		if (!rc)
			rc = ingest__b_location(b, fn, 0, &loc);
		if (rc)
			return rc;
		fr->loc[i] = loc + 1;
	}
	*out = fr->loc[i] - 1;
	return 0;
}

/* Adds one stack (frame indices root first, `n` of them) with `value`. */
static int add_stack(struct ingest_builder *b, struct frames *fr, const size_t *idx, size_t n,
		     int64_t value, uint32_t *scratch, struct err_msg *msg)
{
	int rc;

	if (n > b->lim->max_stack_depth)
		return err_set(msg, ERR_TOO_LARGE, "speedscope: stack deeper than %zu frames",
			       b->lim->max_stack_depth);
	for (size_t i = 0; i < n; i++) {
		rc = frame_loc(b, fr, idx[i], &scratch[n - 1 - i]);
		if (rc)
			return rc;
	}
	rc = ingest__b_sample(b, scratch, n, 0, &value, NULL);
	if (rc == ERR_INVALID)
		return err_set(msg, rc, "speedscope: the values of one stack overflow");
	return rc;
}

static int sampled(struct ingest_builder *b, struct frames *fr, const struct json_value *const *profs,
		   size_t n_profs, uint64_t mult, size_t *idx, uint32_t *scratch,
		   struct err_msg *msg)
{
	for (size_t k = 0; k < n_profs; k++) {
		const struct json_value *samples = member(profs[k], "samples");
		const struct json_value *weights = member(profs[k], "weights");
		size_t ns = samples && samples->type == JSON_ARRAY ? samples->n : 0;
		size_t nw = weights && weights->type == JSON_ARRAY ? weights->n : 0;
		int rc;

		if ((rc = want(samples, JSON_ARRAY, "samples", msg)) ||
		    (rc = want(weights, JSON_ARRAY, "weights", msg)))
			return rc;
		if (ns != nw)
			return err_set(msg, ERR_INVALID,
				       "speedscope: %zu samples but %zu weights", ns, nw);
		for (size_t i = 0; i < ns; i++) {
			const struct json_value *s = &samples->items[i];
			int64_t v;
			double w;

			if ((rc = want(s, JSON_ARRAY, "sample", msg)) ||
			    (rc = num_of(&weights->items[i], "weight", &w, msg)))
				return rc;
			if (w < 0)
				return err_set(msg, ERR_INVALID, "speedscope: negative weight %g", w);
			if (value_of(w, mult, &v))
				return err_set(msg, ERR_INVALID, "speedscope: weight %g out of range", w);
			if (s->type == JSON_ARRAY && s->n > b->lim->max_stack_depth)
				return err_set(msg, ERR_TOO_LARGE, "speedscope: stack deeper than %zu frames",
					       b->lim->max_stack_depth);
			for (size_t j = 0; s->type == JSON_ARRAY && j < s->n; j++)
				if ((rc = frame_index(&s->items[j], fr->n, "sample", &idx[j], msg)))
					return rc;
			rc = add_stack(b, fr, idx, s->type == JSON_ARRAY ? s->n : 0, v, scratch, msg);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int evented(struct ingest_builder *b, struct frames *fr, const struct json_value *const *profs,
		   size_t n_profs, uint64_t mult, size_t *idx, uint32_t *scratch,
		   struct err_msg *msg)
{
	for (size_t k = 0; k < n_profs; k++) {
		const struct json_value *events = member(profs[k], "events");
		double last;
		size_t depth = 0;
		int rc;

		if ((rc = want(events, JSON_ARRAY, "events", msg)) ||
		    (rc = num_of(member(profs[k], "startValue"), "startValue", &last, msg)))
			return rc;
		for (size_t i = 0; events && events->type == JSON_ARRAY && i < events->n; i++) {
			const struct json_value *ev = &events->items[i];
			const char *type = str_of(member(ev, "type"));
			double at;
			size_t f = 0;
			int64_t v;

			if ((rc = want(ev, JSON_OBJECT, "event", msg)) ||
			    (rc = num_of(member(ev, "at"), "at", &at, msg)) ||
			    (rc = frame_index(member(ev, "frame"), fr->n, "event", &f, msg)))
				return rc;
			if (at < last)
				return err_set(msg, ERR_INVALID,
					       "speedscope: event %zu: events out of order (%g < %g)", i,
					       at, last);
			if (value_of(at - last, mult, &v))
				return err_set(msg, ERR_INVALID, "speedscope: event %zu: span out of range",
					       i);
			if (strcmp(type, "C") == 0) {
				if (depth == 0)
					return err_set(msg, ERR_INVALID,
						       "speedscope: event %zu: no frame open to close", i);
				if (idx[depth - 1] != f)
					return err_set(msg, ERR_INVALID,
						       "speedscope: event %zu: closes frame %zu, open is %zu",
						       i, f, idx[depth - 1]);
				rc = add_stack(b, fr, idx, depth, v, scratch, msg);
				depth--;
			} else if (strcmp(type, "O") == 0) {
				/* The open stack's own time up to this child's start. */
				rc = depth ? add_stack(b, fr, idx, depth, v, scratch, msg) : 0;
				if (!rc && depth == b->lim->max_stack_depth)
					rc = err_set(msg, ERR_TOO_LARGE,
						     "speedscope: stack deeper than %zu frames",
						     b->lim->max_stack_depth);
				if (!rc)
					idx[depth++] = f;
			} else {
				return err_set(msg, ERR_INVALID,
					       "speedscope: event %zu: unknown type \"%.16s\"", i, type);
			}
			if (rc)
				return rc;
			last = at;
		}
	}
	return 0;
}

/* Whether profile j has the same merge key (name, type, unit, startValue) as i. */
static int same_key(const struct json_value *i, const struct json_value *j)
{
	const struct json_value *si = member(i, "startValue"), *sj = member(j, "startValue");
	double a = 0, c = 0;

	if (si && si->type == JSON_NUMBER)
		json_double(si, &a, NULL);
	if (sj && sj->type == JSON_NUMBER)
		json_double(sj, &c, NULL);
	return strcmp(str_of(member(i, "name")), str_of(member(j, "name"))) == 0 &&
	       strcmp(str_of(member(i, "type")), str_of(member(j, "type"))) == 0 &&
	       strcmp(str_of(member(i, "unit")), str_of(member(j, "unit"))) == 0 && a == c;
}

int ingest__parse_speedscope(struct arena *a, struct arena *tree, const void *data, size_t len,
			     const struct ingest_limits *lim, size_t tmp_cap,
			     struct ingest_ss_profile **out, size_t *n_out, struct err_msg *msg)
{
	const struct json_value *schema, *shared, *frames, *profiles;
	const struct json_value **group;
	struct ingest_ss_profile *res;
	struct json_value *root;
	struct frames fr;
	size_t n = 0, *idx;
	uint32_t *scratch;
	uint8_t *done;
	int rc;

	rc = json_parse(data, len, tree, &root, msg);
	if (rc)
		return ingest__msg_prefix(msg, rc, "speedscope");
	if (root->type != JSON_OBJECT)
		return err_set(msg, ERR_INVALID, "speedscope: the file is %s, want an object",
			       json_type_name(root->type));
	schema = member(root, "$schema");
	if (strcmp(str_of(schema), SCHEMA) != 0)
		return err_set(msg, ERR_INVALID, "speedscope: unknown $schema \"%.128s\" (want %s)",
			       str_of(schema), SCHEMA);
	shared = member(root, "shared");
	frames = member(shared, "frames");
	profiles = member(root, "profiles");
	if ((rc = want(shared, JSON_OBJECT, "shared", msg)) ||
	    (rc = want(frames, JSON_ARRAY, "shared.frames", msg)) ||
	    (rc = want(profiles, JSON_ARRAY, "profiles", msg)))
		return rc;
	fr.items = frames && frames->type == JSON_ARRAY ? frames->items : NULL;
	fr.n = fr.items ? frames->n : 0;
	for (size_t i = 0; i < fr.n; i++)
		if ((rc = want(&fr.items[i], JSON_OBJECT, "frame", msg)) ||
		    (rc = want(member(&fr.items[i], "name"), JSON_STRING, "frame name", msg)))
			return rc;
	if (!profiles || profiles->type != JSON_ARRAY || profiles->n == 0) {
		*out = NULL;
		*n_out = 0;
		return 0;
	}
	res = arena_calloc(a, profiles->n, sizeof(*res));
	done = arena_calloc(tree, profiles->n, 1);
	group = arena_alloc(tree, profiles->n * sizeof(*group));
	idx = arena_alloc(tree, (lim->max_stack_depth + 1) * sizeof(*idx));
	scratch = arena_alloc(tree, (lim->max_stack_depth + 1) * sizeof(*scratch));
	fr.loc = arena_calloc(tree, fr.n ? fr.n : 1, sizeof(*fr.loc));
	if (!res || !done || !group || !idx || !scratch || !fr.loc)
		return ERR_TOO_LARGE;
	for (size_t i = 0; i < profiles->n; i++) {
		const struct json_value *p = &profiles->items[i];
		const char *type, *unit;
		uint64_t mult;
		size_t ng = 0;

		if (done[i])
			continue;
		if ((rc = want(p, JSON_OBJECT, "profile", msg)))
			goto fail;
		for (size_t j = i; j < profiles->n; j++)
			if (!done[j] && profiles->items[j].type == JSON_OBJECT &&
			    same_key(p, &profiles->items[j])) {
				done[j] = 1;
				group[ng++] = &profiles->items[j];
			}
		type = str_of(member(p, "type"));
		unit = str_of(member(p, "unit"));
		if (ingest__ss_unit(unit, &mult)) {
			rc = err_set(msg, ERR_INVALID, "speedscope: unknown unit \"%.32s\"", unit);
			goto fail;
		}
		memset(fr.loc, 0, (fr.n ? fr.n : 1) * sizeof(*fr.loc));
		ingest__b_init(&res[n].b, a, tmp_cap, lim, 1);
		res[n].name = str_of(member(p, "name"));
		res[n].unit = unit;
		n++;
		if (strcmp(type, "sampled") == 0)
			rc = sampled(&res[n - 1].b, &fr, group, ng, mult, idx, scratch, msg);
		else if (strcmp(type, "evented") == 0)
			rc = evented(&res[n - 1].b, &fr, group, ng, mult, idx, scratch, msg);
		else
			rc = err_set(msg, ERR_INVALID, "speedscope: profile type \"%.32s\" not supported",
				     type);
		if (rc)
			goto fail;
	}
	*out = res;
	*n_out = n;
	return 0;
fail:
	for (size_t i = 0; i < n; i++)
		ingest__b_release(&res[i].b);
	return rc;
}
