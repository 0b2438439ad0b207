/*
 * push.c - Pyroscope's push.v1.PusherService/Push request, in binary
 * protobuf or in Connect JSON, turned into struct ingest_series.
 *
 * JSON shape (protojson names; snake_case accepted too), decoded by
 * proto/pbjson.c into the same message as the binary form:
 *   {"series":[{"labels":[{"name":"service_name","value":"app"}],
 *               "samples":[{"rawProfile":"<base64 pprof>","ID":"<uuid>"}]}]}
 * Unknown members are ignored, as protojson does for forward compatibility;
 * known members must have the right JSON type (null meaning "absent"), and
 * errors name the JSON path ("push: series[0].samples[1].rawProfile: not
 * base64").
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/json.h"
#include "proto/pbjson.h"

#include "push.pb-c.h"

#include <string.h>

static int too_many(const struct ingest_limits *lim, struct err_msg *msg)
{
	return err_set(msg, ERR_TOO_LARGE, "push: more than %zu profiles in one request",
		       lim->max_profiles);
}

/*
 * One struct ingest_series per (series, sample) pair of a decoded request.
 * A JSON request must give every sample its raw profile (in protobuf an
 * absent and an empty one are the same bytes, left to the pprof decoder).
 */
static int to_series(struct arena *a, const struct ingest_limits *lim,
		     const Push__V1__PushRequest *req, int json, struct ingest_series **out,
		     size_t *n, struct err_msg *msg)
{
	struct ingest_series *res;
	size_t total = 0, k = 0;

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
			if (json && !s->samples[j]->raw_profile.len)
				return err_set(msg, ERR_INVALID,
					       "push: series %zu: sample %zu: rawProfile is missing or empty",
					       i, j);
			res[k].labels = labels;
			res[k].n_labels = s->n_labels;
			res[k].data = s->samples[j]->raw_profile.data;
			res[k].len = s->samples[j]->raw_profile.len;
			res[k].id = s->samples[j]->id;
			if (res[k].id && strlen(res[k].id) > STORE_PUSH_ID_MAX)
				return err_set(msg, ERR_INVALID,
					       "push: series %zu: sample %zu: ID longer than %d bytes",
					       i, j, STORE_PUSH_ID_MAX);
			k++;
		}
	}
	*out = res;
	*n = total;
	return 0;
}

static int decode_binary(struct arena *a, const struct ingest_limits *lim, const void *body,
			 size_t len, struct ingest_series **out, size_t *n, struct err_msg *msg)
{
	ProtobufCAllocator al;
	Push__V1__PushRequest *req;

	pbjson_arena_allocator(a, &al);
	req = push__v1__push_request__unpack(&al, len, len ? body : (const void *)"");
	if (!req) {
		if (arena_failed(a))
			return err_set(msg, arena_failed(a), "push: request needs more memory than allowed");
		return err_set(msg, ERR_INVALID, "push: not a valid PushRequest protobuf");
	}
	return to_series(a, lim, req, 0, out, n, msg);
}

/*
 * The tree lives in a temporary arena (json_mem_bound() holds any body);
 * the message, its strings and the raw profiles are decoded into `a`.
 */
static int decode_json(struct arena *a, const struct ingest_limits *lim, const void *body,
		       size_t len, struct ingest_series **out, size_t *n, struct err_msg *msg)
{
	struct err_msg why = { { 0 } };
	struct json_value *root;
	ProtobufCMessage *req;
	struct arena t;
	int rc;

	arena_init(&t, json_mem_bound(len));
	rc = json_parse(len ? body : "", len, &t, &root, msg);
	if (!rc && root->type != JSON_OBJECT)
		rc = err_set(msg, ERR_INVALID, "push: request must be a JSON object");
	if (!rc) {
		rc = pbjson_decode_value(&push__v1__push_request__descriptor, root, NULL,
					 PBJSON_IGNORE_UNKNOWN, a, &req, &why);
		if (rc)
			err_set(msg, rc, "push: %s", why.text);
	}
	arena_release(&t);
	return rc ? rc : to_series(a, lim, (Push__V1__PushRequest *)req, 1, out, n, msg);
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
