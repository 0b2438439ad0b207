/*
 * otlp_json_enc.h - a test-only JSON encoder for any protobuf-c message,
 * driven by its descriptor (field names, labels, types, offsets), so that
 * the OTLP JSON decoder (ingest/otlp_json.c, which is written against the
 * schema by hand) is checked against an independent encoder.  It follows
 * the OTLP JSON rules: lowerCamelCase names (or the .proto's snake_case
 * with JE_SNAKE), 64-bit integers as decimal strings (or numbers with
 * JE_NUM64), bytes as base64 except trace/span/profile IDs in hex.
 * AnyValue's array_value / kvlist_value (bytes in our .proto) are written
 * as empty objects.  Output goes to a caller's struct buf.
 */
#ifndef UNHEX_TESTS_INGEST_OTLP_JSON_ENC_H
#define UNHEX_TESTS_INGEST_OTLP_JSON_ENC_H

#include <inttypes.h>
#include <protobuf-c/protobuf-c.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"

enum { JE_SNAKE = 1, JE_NUM64 = 2 };

static inline void je_name(struct buf *o, const char *name, int flags)
{
	buf_puts(o, "\"");
	for (const char *s = name; *s; s++) {
		if (!(flags & JE_SNAKE) && *s == '_' && s[1]) {
			char up = s[1] >= 'a' && s[1] <= 'z' ? (char)(s[1] - 'a' + 'A') : s[1];

			buf_printf(o, "%c", up);
			s++;
			continue;
		}
		buf_printf(o, "%c", *s);
	}
	buf_puts(o, "\":");
}

static inline void je_bytes(struct buf *o, const ProtobufCBinaryData *b, int hex)
{
	buf_puts(o, "\"");
	if (hex) {
		for (size_t i = 0; i < b->len; i++)
			buf_printf(o, "%02x", b->data[i]);
	} else {
		base64_encode(o, b->data, b->len);
	}
	buf_puts(o, "\"");
}

static inline void je_message(struct buf *o, const ProtobufCMessage *m, int flags);

/* One value of field f at p. */
static inline void je_value(struct buf *o, const ProtobufCFieldDescriptor *f, const void *p,
			    int flags)
{
	const char *q64 = flags & JE_NUM64 ? "" : "\"";

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		buf_printf(o, "%" PRId32, *(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		buf_printf(o, "%" PRIu32, *(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		buf_printf(o, "%s%" PRId64 "%s", q64, *(const int64_t *)p, q64);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		buf_printf(o, "%s%" PRIu64 "%s", q64, *(const uint64_t *)p, q64);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		buf_puts(o, *(const protobuf_c_boolean *)p ? "true" : "false");
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		buf_printf(o, "%.17g", *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		buf_printf(o, "%.9g", (double)*(const float *)p);
		break;
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		buf_put_json_str(o, s ? s : "", s ? strlen(s) : 0);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES:
		if (strcmp(f->name, "array_value") == 0 || strcmp(f->name, "kvlist_value") == 0)
			buf_puts(o, "{}");
		else
			je_bytes(o, p, strcmp(f->name, "trace_id") == 0 ||
					       strcmp(f->name, "span_id") == 0 ||
					       strcmp(f->name, "profile_id") == 0);
		break;
	case PROTOBUF_C_TYPE_MESSAGE:
		je_message(o, *(ProtobufCMessage *const *)p, flags);
		break;
	}
}

static inline size_t je_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	default:
		return 4;
	}
}

/* Whether a singular proto3 field holds its default (and is left out). */
static inline int je_default(const ProtobufCFieldDescriptor *f, const void *p)
{
	const unsigned char *b = p;

	if (f->type == PROTOBUF_C_TYPE_STRING)
		return !*(char *const *)p || !**(char *const *)p;
	if (f->type == PROTOBUF_C_TYPE_MESSAGE)
		return !*(void *const *)p;
	if (f->type == PROTOBUF_C_TYPE_BYTES)
		return !((const ProtobufCBinaryData *)p)->len;
	for (size_t i = 0; i < je_size(f); i++)
		if (b[i])
			return 0;
	return 1;
}

static inline void je_message(struct buf *o, const ProtobufCMessage *m, int flags)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;
	int first = 1;

	buf_puts(o, "{");
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *p = base + f->offset;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
				continue;
		} else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			if (!*(const size_t *)(base + f->quantifier_offset))
				continue;
		} else if (je_default(f, p)) {
			continue;
		}
		if (!first)
			buf_puts(o, ",");
		first = 0;
		je_name(o, f->name, flags);
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			const char *arr = *(const char *const *)p;

			buf_puts(o, "[");
			for (size_t k = 0; k < n; k++) {
				if (k)
					buf_puts(o, ",");
				je_value(o, f, arr + k * je_size(f), flags);
			}
			buf_puts(o, "]");
		} else {
			je_value(o, f, p, flags);
		}
	}
	buf_puts(o, "}");
}

#endif
