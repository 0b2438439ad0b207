/*
 * otlp_json.c - the OTLP/HTTP JSON encoding of an
 * ExportProfilesServiceRequest, decoded into the same protoc-c structs as
 * the binary protobuf (otlp_types.h), so that one validator and converter
 * (otlp_convert.c) serves both encodings.
 *
 * The rules are the proto3 JSON mapping as OTLP specifies it
 * (opentelemetry-proto docs/specification.md, "JSON Protobuf Encoding"),
 * which proto/pbjson.c implements from the descriptors: lowerCamelCase
 * member names, the original snake_case names accepted too; 64-bit
 * integers as decimal strings or numbers; `bytes` as base64, except trace,
 * span and profile IDs, which are hex (the hook below); null means
 * "absent"; unknown members are ignored.  A known member of the wrong JSON
 * type, a number that is not an integer or out of range, or two members of
 * one oneof are ERR_INVALID, with the JSON path of the offending value.
 *
 * What is OTLP's or ours, not proto3 JSON's, is done here on the tree
 * before pbjson sees it (prepare()): the bounds on one string and one
 * array, and AnyValue's arrayValue and kvlistValue, which our .proto
 * declares as opaque bytes (so that binary decoding never recurses into
 * client-chosen nesting): in JSON they are objects, recognized and not
 * kept, as for protobuf.  originalPayload is not read either.
 *
 * The JSON tree lives in a temporary arena of its own, freed before
 * returning: only the structs and copies of the strings stay in the
 * caller's arena.
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/json.h"
#include "proto/pbjson.h"

#include "otlp_types.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define REQ_DESC \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor

struct prep {
	struct err_msg *msg;
	struct json_path path;  /* of the value being looked at, for errors */
};

/* ---- paths and errors --------------------------------------------------- */

static int fail(struct prep *p, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct prep *p, int code, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(p->msg, code, "%s: %s", p->path.len ? p->path.s : "request", what);
}

/* ---- OTLP's rules, on the tree ---------------------------------------------- */

static int is_field(const ProtobufCFieldDescriptor *f, const char *name)
{
	return !strcmp(f->name, name);
}

/* Trace, span and profile ids are hex in OTLP/JSON; other bytes base64. */
static int otlp_hex(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f,
		    void *ctx)
{
	(void)d;
	(void)ctx;
	return is_field(f, "trace_id") || is_field(f, "span_id") || is_field(f, "profile_id");
}

static int prepare(struct prep *p, const ProtobufCMessageDescriptor *d, struct json_value *obj);

/* A string within the bound on one string or bytes value. */
static int check_string(struct prep *p, const struct json_value *v)
{
	if (v->type == JSON_STRING && v->len > INGEST_OTLP_JSON_MAX_STRING)
		return fail(p, ERR_TOO_LARGE, "string of %zu bytes, more than the limit of %d", v->len,
			    INGEST_OTLP_JSON_MAX_STRING);
	return 0;
}

/* One value of field f; pbjson judges its type later, this only its size. */
static int prepare_value(struct prep *p, const ProtobufCFieldDescriptor *f, struct json_value *v)
{
	if (f->type == PROTOBUF_C_TYPE_MESSAGE && v->type == JSON_OBJECT)
		return prepare(p, f->descriptor, v);
	return check_string(p, v);
}

static int prepare_member(struct prep *p, const ProtobufCFieldDescriptor *f, struct json_value *v)
{
	int rc = 0;

	if (is_field(f, "original_payload")) {
		v->type = JSON_NULL;  /* not read */
		return 0;
	}
	if (is_field(f, "array_value") || is_field(f, "kvlist_value")) {
		/* An object in JSON, opaque bytes to us: recognized, not kept. */
		if (v->type != JSON_OBJECT)
			return fail(p, ERR_INVALID, "not an object");
		v->type = JSON_STRING;
		v->str = "";
		v->len = 0;
		v->keys = NULL;
		return 0;
	}
	if (f->label != PROTOBUF_C_LABEL_REPEATED || v->type != JSON_ARRAY)
		return prepare_value(p, f, v);
	if (v->n > INGEST_OTLP_JSON_MAX_ARRAY)
		return fail(p, ERR_TOO_LARGE, "%zu elements, more than the limit of %d", v->n,
			    INGEST_OTLP_JSON_MAX_ARRAY);
	for (size_t i = 0; i < v->n && !rc; i++) {
		size_t old = json_path_push(&p->path, "[%zu]", i);

		rc = prepare_value(p, f, &v->items[i]);
		json_path_pop(&p->path, old);
	}
	return rc;
}

/* Applies OTLP's rules to the members of obj, a message of type d. */
static int prepare(struct prep *p, const ProtobufCMessageDescriptor *d, struct json_value *obj)
{
	int rc = 0;

	for (size_t i = 0; i < obj->n && !rc; i++) {
		const ProtobufCFieldDescriptor *f = pbjson_field(d, obj->keys[i]);
		char name[64];
		size_t old;

		if (!f || obj->items[i].type == JSON_NULL)
			continue;
		old = json_path_push(&p->path, "%s%s", p->path.len ? "." : "",
				     pbjson_json_name(f, name, sizeof(name)));
		rc = prepare_member(p, f, &obj->items[i]);
		json_path_pop(&p->path, old);
	}
	return rc;
}

/* ---- entry -------------------------------------------------------------- */

size_t ingest__otlp_json_tree_cap(size_t len)
{
	/* The reader's own bound: every document of `len` bytes fits. */
	return json_mem_bound(len);
}

int ingest__otlp_json_decode(struct arena *a, const struct ingest_limits *lim, const void *p,
			     size_t n, Req **out, struct err_msg *msg)
{
	static const struct pbjson_hooks hooks = { otlp_hex, NULL };
	struct prep pr = { .msg = msg };
	struct json_value *root;
	ProtobufCMessage *m;
	struct arena ta;
	int rc;

	if (n > lim->max_decompressed_bytes)
		return err_set(msg, ERR_TOO_LARGE, "request of %zu bytes exceeds the limit of %zu", n,
			       lim->max_decompressed_bytes);
	arena_init(&ta, ingest__otlp_json_tree_cap(n));
	rc = json_parse(n ? p : "", n, &ta, &root, msg);
	if (rc) {
		if (rc == ERR_TOO_LARGE)
			rc = err_reset(msg, rc, "parsing the JSON request needs more than %zu bytes of memory",
				       ta.cap);
		goto out;
	}
	if (root->type != JSON_OBJECT) {
		rc = fail(&pr, ERR_INVALID, "not a JSON object (want an ExportProfilesServiceRequest)");
		goto out;
	}
	rc = prepare(&pr, &REQ_DESC, root);
	if (!rc)
		rc = pbjson_decode_value(&REQ_DESC, root, &hooks, PBJSON_IGNORE_UNKNOWN, a, &m, msg);
	if (!rc)
		*out = (Req *)m;
out:
	arena_release(&ta);
	return rc;
}
