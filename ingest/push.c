/*
 * push.c - Pyroscope's push.v1.PusherService/Push request, in binary
 * protobuf or in Connect JSON, turned into struct ingest_series.
 *
 * JSON shape (protojson names; snake_case accepted too):
 *   {"series":[{"labels":[{"name":"service_name","value":"app"}],
 *               "samples":[{"rawProfile":"<base64 pprof>","ID":"<uuid>"}]}]}
 * Unknown members are ignored, as protojson does for forward compatibility;
 * known members must have the right JSON type (null meaning "absent").
 */
#include "ingest/ingest_int.h"

#include "base/arena.h"
#include "base/err.h"

#include "push.pb-c.h"

#include <string.h>

static void *pb_alloc(void *data, size_t size)
{
	return arena_alloc(data, size ? size : 1);
}

static void pb_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

static int too_many(const struct ingest_limits *lim, struct err_msg *msg)
{
	return err_set(msg, ERR_TOO_LARGE, "push: more than %zu profiles in one request",
		       lim->max_profiles);
}

static int decode_binary(struct arena *a, const struct ingest_limits *lim, const void *body,
			 size_t len, struct ingest_series **out, size_t *n, struct err_msg *msg)
{
	ProtobufCAllocator al = { pb_alloc, pb_free, a };
	Push__V1__PushRequest *req;
	struct ingest_series *res;
	size_t total = 0, k = 0;

	req = push__v1__push_request__unpack(&al, len, len ? body : (const void *)"");
	if (!req) {
		if (arena_failed(a))
			return err_set(msg, arena_failed(a), "push: request needs more memory than allowed");
		return err_set(msg, ERR_INVALID, "push: not a valid PushRequest protobuf");
	}
	for (size_t i = 0; i < req->n_series; i++) {
		total += req->series[i]->n_samples;
		if (total > lim->max_profiles)
			return too_many(lim, msg);
	}
	res = arena_calloc(a, total ? total : 1, sizeof(*res));
	if (!res)
		return arena_failed(a);
	for (size_t i = 0; i < req->n_series; i++) {
		const Push__V1__RawProfileSeries *s = req->series[i];
		struct store_label *labels;

		if (s->n_labels > lim->max_labels)
			return err_set(msg, ERR_TOO_LARGE, "push: series %zu: %zu labels, more than %zu",
				       i, s->n_labels, lim->max_labels);
		labels = arena_calloc(a, s->n_labels ? s->n_labels : 1, sizeof(*labels));
		if (!labels)
			return arena_failed(a);
		for (size_t j = 0; j < s->n_labels; j++) {
			labels[j].name = s->labels[j]->name;
			labels[j].value = s->labels[j]->value;
		}
		for (size_t j = 0; j < s->n_samples; j++) {
			res[k].labels = labels;
			res[k].n_labels = s->n_labels;
			res[k].data = s->samples[j]->raw_profile.data;
			res[k].len = s->samples[j]->raw_profile.len;
			k++;
		}
	}
	*out = res;
	*n = total;
	return 0;
}

/* A member that must be a string (or absent/null). */
static int get_str(const struct json_value *obj, const char *key, const char *alt,
		   const struct json_value **out)
{
	const struct json_value *v = json_get(obj, key);

	if (!v && alt)
		v = json_get(obj, alt);
	if (v && v->type == JSON_NULL)
		v = NULL;
	if (v && v->type != JSON_STRING)
		return ERR_INVALID;
	*out = v;
	return 0;
}

/* A member that must be an array (or absent/null); returns its length. */
static int get_arr(const struct json_value *obj, const char *key,
		   const struct json_value **out, size_t *n)
{
	const struct json_value *v = json_get(obj, key);

	if (v && v->type == JSON_NULL)
		v = NULL;
	if (v && v->type != JSON_ARRAY)
		return ERR_INVALID;
	*out = v;
	*n = v ? v->n : 0;
	return 0;
}

static int json_labels(struct arena *a, const struct ingest_limits *lim,
		       const struct json_value *series, size_t si, struct store_label **out,
		       size_t *n, struct err_msg *msg)
{
	const struct json_value *arr;
	struct store_label *labels;
	size_t nl;

	if (get_arr(series, "labels", &arr, &nl))
		return err_set(msg, ERR_INVALID, "push: series %zu: labels must be an array", si);
	if (nl > lim->max_labels)
		return err_set(msg, ERR_TOO_LARGE, "push: series %zu: %zu labels, more than %zu", si,
			       nl, lim->max_labels);
	labels = arena_calloc(a, nl ? nl : 1, sizeof(*labels));
	if (!labels)
		return arena_failed(a);
	for (size_t j = 0; j < nl; j++) {
		const struct json_value *l = &arr->items[j], *name, *value;

		if (l->type != JSON_OBJECT || get_str(l, "name", NULL, &name) ||
		    get_str(l, "value", NULL, &value))
			return err_set(msg, ERR_INVALID,
				       "push: series %zu: label %zu must be {\"name\":string,\"value\":string}",
				       si, j);
		labels[j].name = name ? name->str : "";
		labels[j].value = value ? value->str : "";
	}
	*out = labels;
	*n = nl;
	return 0;
}

static int decode_json(struct arena *a, const struct ingest_limits *lim, const void *body,
		       size_t len, struct ingest_series **out, size_t *n, struct err_msg *msg)
{
	const struct json_value *series, *samples;
	struct json_value *root;
	struct ingest_series *res;
	size_t ns, total = 0, k = 0, m;
	int rc;

	rc = json_parse(body, len, a, &root, msg);
	if (rc)
		return rc;
	if (root->type != JSON_OBJECT)
		return err_set(msg, ERR_INVALID, "push: request must be a JSON object");
	if (get_arr(root, "series", &series, &ns))
		return err_set(msg, ERR_INVALID, "push: series must be an array");
	for (size_t i = 0; i < ns; i++) {
		if (series->items[i].type != JSON_OBJECT)
			return err_set(msg, ERR_INVALID, "push: series %zu must be an object", i);
		if (get_arr(&series->items[i], "samples", &samples, &m))
			return err_set(msg, ERR_INVALID, "push: series %zu: samples must be an array", i);
		total += m;
		if (total > lim->max_profiles)
			return too_many(lim, msg);
	}
	res = arena_calloc(a, total ? total : 1, sizeof(*res));
	if (!res)
		return arena_failed(a);
	for (size_t i = 0; i < ns; i++) {
		const struct json_value *s = &series->items[i];
		struct store_label *labels = NULL;
		size_t nl = 0;

		rc = json_labels(a, lim, s, i, &labels, &nl, msg);
		if (rc)
			return rc;
		get_arr(s, "samples", &samples, &m);
		for (size_t j = 0; j < m; j++) {
			const struct json_value *smp = &samples->items[j], *raw;
			uint8_t *data;
			size_t dlen;

			if (smp->type != JSON_OBJECT ||
			    get_str(smp, "rawProfile", "raw_profile", &raw))
				return err_set(msg, ERR_INVALID,
					       "push: series %zu: sample %zu: rawProfile must be a base64 string",
					       i, j);
			if (!raw)
				return err_set(msg, ERR_INVALID,
					       "push: series %zu: sample %zu: rawProfile is missing", i, j);
			rc = base64_decode(a, raw->str, raw->len, &data, &dlen);
			if (rc == ERR_INVALID)
				return err_set(msg, rc,
					       "push: series %zu: sample %zu: rawProfile is not valid base64",
					       i, j);
			if (rc)
				return err_set(msg, rc, "push: request needs more memory than allowed");
			res[k].labels = labels;
			res[k].n_labels = nl;
			res[k].data = data;
			res[k].len = dlen;
			k++;
		}
	}
	*out = res;
	*n = total;
	return 0;
}

int ingest__decode_push(struct arena *a, const struct ingest_limits *lim, const void *body,
			size_t len, int json, struct ingest_series **out, size_t *n,
			struct err_msg *msg)
{
	int rc;

	if (len > lim->max_request_bytes)
		return err_set(msg, ERR_TOO_LARGE, "push: request of %zu bytes exceeds the limit of %zu",
			       len, lim->max_request_bytes);
	if (json)
		rc = decode_json(a, lim, body, len, out, n, msg);
	else
		rc = decode_binary(a, lim, body, len, out, n, msg);
	if ((rc == ERR_TOO_LARGE || rc == ERR_NOMEM) && msg && !msg->text[0])
		err_set(msg, rc, "push: request needs more memory than allowed");
	return rc;
}
