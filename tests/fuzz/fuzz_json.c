/*
 * fuzz_json.c - libFuzzer target: the JSON reader (base/json.c) and the
 * proto3 JSON decoder (proto/pbjson.c).  The first byte picks a message
 * type for pbjson; the rest is the document.
 *
 * Reader: under a cap of json_mem_bound(len) it never runs out of memory,
 * and its tree stays within 17 bytes per byte + 1024 (json.h); a refused
 * document gets a "json: " message; an accepted one is a well-formed tree
 * (UTF-8 strings of their stated length, unique keys, numbers the helpers
 * read, depth within the limit) that prints back to JSON which parses to
 * the same tree.
 * pbjson: a refused document gets a message; an accepted message encodes
 * to JSON that decodes to a message with the same packed bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "proto/pbjson.h"

#include "otlp_profiles_service.pb-c.h"
#include "push.pb-c.h"
#include "querier.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ProtobufCMessageDescriptor *const types[] = {
	&opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
	&push__v1__push_request__descriptor,
	&querier__v1__select_merge_stacktraces_request__descriptor,
	&querier__v1__diff_request__descriptor,
	&querier__v1__select_series_request__descriptor,
	&querier__v1__select_merge_stacktraces_response__descriptor,
};

static int otlp_ids(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f,
		    void *ctx)
{
	(void)d;
	(void)ctx;
	return !strcmp(f->name, "trace_id") || !strcmp(f->name, "span_id") ||
	       !strcmp(f->name, "profile_id");
}

static void check_tree(const struct json_value *v, int depth)
{
	int64_t i;
	uint64_t u;
	double d;

	if (depth > JSON_MAX_DEPTH)
		abort();
	switch (v->type) {
	case JSON_NULL:
	case JSON_BOOL:
		break;
	case JSON_NUMBER:
		/* Grammar-checked text: every short number without an exponent is
		 * a finite double; the integer helpers read it or say why. */
		if (!v->len || strlen(v->str) != v->len)
			abort();
		if (json_double(v, &d, NULL) && v->len < 300 && !strpbrk(v->str, "eE"))
			abort();
		(void)json_int64(v, &i, NULL);
		(void)json_uint64(v, &u, NULL);
		break;
	case JSON_STRING:
		if (strlen(v->str) != v->len || !json_utf8_valid(v->str, v->len))
			abort();
		break;
	case JSON_ARRAY:
		for (size_t k = 0; k < v->n; k++)
			check_tree(&v->items[k], depth + 1);
		break;
	case JSON_OBJECT:
		for (size_t k = 0; k < v->n; k++) {
			if (!json_utf8_valid(v->keys[k], strlen(v->keys[k])))
				abort();
			for (size_t j = 0; j < k && k < 64; j++)
				if (!strcmp(v->keys[j], v->keys[k]))
					abort();
			if (json_get(v, v->keys[k]) != &v->items[k])
				abort();
			check_tree(&v->items[k], depth + 1);
		}
		break;
	default:
		abort();
	}
}

static void print(const struct json_value *v, struct buf *b)
{
	int rc = 0;

	switch (v->type) {
	case JSON_NULL: rc = buf_puts(b, "null"); break;
	case JSON_BOOL: rc = buf_puts(b, v->boolean ? "true" : "false"); break;
	case JSON_NUMBER: rc = buf_append(b, v->str, v->len); break;
	case JSON_STRING: rc = buf_put_json_str(b, v->str, v->len); break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		rc = buf_putc(b, v->type == JSON_ARRAY ? '[' : '{');
		for (size_t k = 0; k < v->n && !rc; k++) {
			if (k)
				rc = buf_putc(b, ',');
			if (!rc && v->type == JSON_OBJECT) {
				rc = buf_put_json_str(b, v->keys[k], strlen(v->keys[k]));
				if (!rc)
					rc = buf_putc(b, ':');
			}
			print(&v->items[k], b);
		}
		if (!rc)
			rc = buf_putc(b, v->type == JSON_ARRAY ? ']' : '}');
		break;
	}
	if (rc)
		abort();
}

static void same_tree(const struct json_value *x, const struct json_value *y)
{
	if (x->type != y->type)
		abort();
	switch (x->type) {
	case JSON_BOOL:
		if (x->boolean != y->boolean)
			abort();
		break;
	case JSON_NUMBER:
	case JSON_STRING:
		if (x->len != y->len || memcmp(x->str, y->str, x->len))
			abort();
		break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		if (x->n != y->n)
			abort();
		for (size_t k = 0; k < x->n; k++) {
			if (x->type == JSON_OBJECT && strcmp(x->keys[k], y->keys[k]))
				abort();
			same_tree(&x->items[k], &y->items[k]);
		}
		break;
	default:
		break;
	}
}

static void reader(const char *p, size_t len)
{
	struct err_msg msg = { { 0 } };
	struct json_value *v = NULL, *w = NULL;
	size_t tree = 17 * len + 1024 + 16;
	struct arena a, b;
	struct buf out;
	int rc;

	arena_init(&a, json_mem_bound(len));
	rc = json_parse(p, len, &a, &v, &msg);
	if (rc == ERR_TOO_LARGE || (rc && strncmp(msg.text, "json: ", 6)))
		abort();
	if (a.used > (tree > 65536 ? tree : 65536))
		abort();
	if (rc) {
		arena_release(&a);
		return;
	}
	check_tree(v, 0);
	buf_init(&out, 64 * len + 64);
	print(v, &out);
	arena_init(&b, 1 << 30);
	if (json_parse(out.data, out.len, &b, &w, &msg))
		abort();
	same_tree(v, w);
	arena_release(&b);
	buf_release(&out);
	arena_release(&a);
}

static void packed(const ProtobufCMessage *m, struct buf *out)
{
	size_t n = protobuf_c_message_get_packed_size(m);

	if (buf_reserve(out, n))
		abort();
	out->len = protobuf_c_message_pack(m, (uint8_t *)out->data);
}

static void decoder(const ProtobufCMessageDescriptor *d, const char *p, size_t len)
{
	const struct pbjson_hooks hooks = { otlp_ids, NULL };
	struct err_msg msg = { { 0 } };
	ProtobufCMessage *m = NULL, *m2 = NULL;
	struct buf j, pa, pb;
	struct arena a;
	int rc;

	arena_init(&a, 64 << 20);
	rc = pbjson_decode(d, p, len, &hooks, PBJSON_IGNORE_UNKNOWN, &a, &m, &msg);
	if (rc && !msg.text[0])
		abort();
	if (rc) {
		arena_release(&a);
		return;
	}
	buf_init(&j, 256 << 20);
	buf_init(&pa, 256 << 20);
	buf_init(&pb, 256 << 20);
	if (pbjson_encode(m, &hooks, 0, &j))
		abort();
	if (pbjson_decode(d, j.data, j.len, &hooks, 0, &a, &m2, &msg))
		abort();
	packed(m, &pa);
	packed(m2, &pb);
	if (pa.len != pb.len || memcmp(pa.data, pb.data, pa.len))
		abort();
	buf_release(&j);
	buf_release(&pa);
	buf_release(&pb);
	arena_release(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1;

	if (size < 1)
		return 0;
	reader(p, size - 1);
	decoder(types[data[0] % (sizeof(types) / sizeof(types[0]))], p, size - 1);
	return 0;
}
