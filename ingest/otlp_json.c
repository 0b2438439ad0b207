/*
 * otlp_json.c - the OTLP/HTTP JSON encoding of an
 * ExportProfilesServiceRequest, decoded into the same protoc-c structs as
 * the binary protobuf (otlp_types.h), so that one validator and converter
 * (otlp_convert.c) serves both encodings.
 *
 * The rules are the proto3 JSON mapping as OTLP specifies it
 * (opentelemetry-proto docs/specification.md, "JSON Protobuf Encoding"):
 * lowerCamelCase member names, the original snake_case names accepted too;
 * 64-bit integers as decimal strings or numbers, 32-bit ones as numbers or
 * strings; `bytes` as base64, except trace, span and profile IDs, which
 * are hex; null means "absent"; unknown members are ignored.  A known
 * member of the wrong JSON type, a number that is not an integer or out of
 * range, or two members of one oneof are ERR_INVALID, with the JSON path
 * of the offending value in the message.
 *
 * The JSON tree (base/json.c) lives in a temporary arena of its own, freed
 * before returning: only the structs and copies of the strings stay in the
 * caller's arena.  AnyValue's arrayValue and kvlistValue are recognized
 * but not kept (the .proto declares them as opaque bytes; neither is ever
 * a label), and neither is originalPayload (unhex does not read it).
 */
#include "ingest/ingest_int.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/hex.h"

#include "ingest/otlp_types.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jdec {
	struct arena *a;        /* the caller's arena: structs and strings */
	struct err_msg *msg;
	char path[256];         /* JSON path of the value being decoded */
	size_t plen;
};

typedef int (*dec_fn)(struct jdec *d, const struct json_value *obj, void *out);

/* ---- paths and errors --------------------------------------------------- */

static size_t push(struct jdec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends a path segment; returns the length to pop() back to. */
static size_t push(struct jdec *d, const char *fmt, ...)
{
	size_t old = d->plen, room = sizeof(d->path) - old;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(d->path + old, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		d->path[old] = '\0';
	else
		d->plen = (size_t)n < room ? old + (size_t)n : sizeof(d->path) - 1;
	return old;
}

static void pop(struct jdec *d, size_t old)
{
	d->plen = old;
	d->path[old] = '\0';
}

static size_t push_key(struct jdec *d, const char *key)
{
	return push(d, "%s%s", d->plen ? "." : "", key);
}

static int fail(struct jdec *d, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct jdec *d, int code, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(d->msg, code, "%s: %s", d->plen ? d->path : "request", what);
}

static int oom(struct jdec *d)
{
	int rc = arena_failed(d->a) ? arena_failed(d->a) : ERR_NOMEM;

	return fail(d, rc, "decoding the request needs more than %zu bytes of memory", d->a->cap);
}

/* ---- members ------------------------------------------------------------ */

/* The member `camel` (or `snake`) of obj; NULL when absent or null. */
static const struct json_value *member(const struct json_value *obj, const char *camel,
				       const char *snake)
{
	const struct json_value *v = json_get(obj, camel);

	if (!v && snake)
		v = json_get(obj, snake);
	return v && v->type != JSON_NULL ? v : NULL;
}

/*
 * Parses an integer from a JSON number or string: optional '-' and decimal
 * digits (a number may also be written as an integral value with a zero
 * fraction or an exponent, e.g. 1.0 or 1e3, as proto3 JSON allows).
 * *neg and *mag give sign and magnitude; 0 on success, -2 when the
 * magnitude does not fit 64 bits, -1 for anything else.
 */
static int parse_int(const char *s, size_t len, int *neg, uint64_t *mag)
{
	const char *end = s + len;
	uint64_t m = 0;
	int64_t exp = 0;
	int digits = 0;

	*neg = 0;
	if (s < end && *s == '-')
		*neg = 1, s++;
	for (; s < end && *s >= '0' && *s <= '9'; s++, digits++)
		if (__builtin_mul_overflow(m, 10, &m) ||
		    __builtin_add_overflow(m, (uint64_t)(*s - '0'), &m))
			return -2;
	if (s < end && *s == '.') {
		/* Fraction digits join the mantissa; the exponent undoes them. */
		for (s++; s < end && *s >= '0' && *s <= '9'; s++, exp--)
			if (__builtin_mul_overflow(m, 10, &m) ||
			    __builtin_add_overflow(m, (uint64_t)(*s - '0'), &m))
				return -2;
	}
	if (!digits)
		return -1;
	if (s < end && (*s == 'e' || *s == 'E')) {
		int eneg = 0;
		int64_t e = 0;

		s++;
		if (s < end && (*s == '+' || *s == '-'))
			eneg = *s++ == '-';
		if (s >= end || *s < '0' || *s > '9')
			return -1;
		for (; s < end && *s >= '0' && *s <= '9'; s++)
			if (e < 100000)
				e = e * 10 + (*s - '0');
		exp += eneg ? -e : e;
	}
	if (s != end)
		return -1;
	for (; exp < 0; exp++) {
		if (m % 10)
			return -1;
		m /= 10;
	}
	for (; exp > 0 && m; exp--)
		if (__builtin_mul_overflow(m, 10, &m))
			return -2;
	*mag = m;
	return 0;
}

/* A number or a string holding one, as sign and magnitude. */
static int get_int(struct jdec *d, const struct json_value *v, int *neg, uint64_t *mag)
{
	int rc;

	if (v->type != JSON_NUMBER && v->type != JSON_STRING)
		return fail(d, ERR_INVALID, "not an integer (want a number or a decimal string)");
	rc = parse_int(v->str, v->len, neg, mag);
	if (rc == -2)
		return fail(d, ERR_INVALID, "%.40s is out of range for a 64-bit integer", v->str);
	if (rc)
		return fail(d, ERR_INVALID, "not an integer: \"%.40s\"", v->str);
	return 0;
}

static int val_i64(struct jdec *d, const struct json_value *v, int64_t *out)
{
	uint64_t m = 0;
	int neg, rc;

	if ((rc = get_int(d, v, &neg, &m)))
		return rc;
	if (m > (uint64_t)INT64_MAX + neg)
		return fail(d, ERR_INVALID, "%s%" PRIu64 " is out of range for int64", neg ? "-" : "",
			    m);
	*out = neg ? (int64_t)(0 - m) : (int64_t)m;
	return 0;
}

static int val_u64(struct jdec *d, const struct json_value *v, uint64_t *out)
{
	uint64_t m = 0;
	int neg, rc;

	if ((rc = get_int(d, v, &neg, &m)))
		return rc;
	if (neg && m)
		return fail(d, ERR_INVALID, "-%" PRIu64 " is negative (want an unsigned integer)", m);
	*out = m;
	return 0;
}

static int val_i32(struct jdec *d, const struct json_value *v, int32_t *out)
{
	int64_t x = 0;
	int rc;

	if ((rc = val_i64(d, v, &x)))
		return rc;
	if (x < INT32_MIN || x > INT32_MAX)
		return fail(d, ERR_INVALID, "%" PRId64 " is out of range for int32", x);
	*out = (int32_t)x;
	return 0;
}

/* The named member as an integer; untouched when absent. */
#define GET_NUM(kind, type)                                                                    \
	static int get_##kind(struct jdec *d, const struct json_value *obj, const char *camel,  \
			      const char *snake, type *out)                                     \
	{                                                                                       \
		const struct json_value *v = member(obj, camel, snake);                         \
		size_t old;                                                                     \
		int rc;                                                                         \
                                                                                                \
		if (!v)                                                                         \
			return 0;                                                               \
		old = push_key(d, camel);                                                       \
		rc = val_##kind(d, v, out);                                                     \
		pop(d, old);                                                                    \
		return rc;                                                                      \
	}
GET_NUM(i64, int64_t)
GET_NUM(u64, uint64_t)
GET_NUM(i32, int32_t)

static int get_u32(struct jdec *d, const struct json_value *obj, const char *camel,
		   const char *snake, uint32_t *out)
{
	uint64_t x = 0;
	int rc = get_u64(d, obj, camel, snake, &x);

	if (!rc && x > UINT32_MAX) {
		size_t old = push_key(d, camel);

		rc = fail(d, ERR_INVALID, "%" PRIu64 " is out of range for uint32", x);
		pop(d, old);
	}
	if (!rc)
		*out = (uint32_t)x;
	return rc;
}

/* A string value copied into the output arena. */
static int val_str(struct jdec *d, const struct json_value *v, char **out)
{
	if (v->type != JSON_STRING)
		return fail(d, ERR_INVALID, "not a string");
	if (v->len > INGEST_OTLP_JSON_MAX_STRING)
		return fail(d, ERR_TOO_LARGE, "string of %zu bytes, more than the limit of %d", v->len,
			    INGEST_OTLP_JSON_MAX_STRING);
	*out = arena_strndup(d->a, v->str, v->len);
	return *out ? 0 : oom(d);
}

static int get_str(struct jdec *d, const struct json_value *obj, const char *camel,
		   const char *snake, char **out)
{
	const struct json_value *v = member(obj, camel, snake);
	size_t old;
	int rc;

	if (!v)
		return 0;
	old = push_key(d, camel);
	rc = val_str(d, v, out);
	pop(d, old);
	return rc;
}

/* A bytes member: hex (trace, span and profile IDs) or base64. */
static int get_bytes(struct jdec *d, const struct json_value *obj, const char *camel,
		     const char *snake, int hex, ProtobufCBinaryData *out)
{
	const struct json_value *v = member(obj, camel, snake);
	size_t old;
	uint8_t *b = NULL;
	size_t n = 0;
	int rc = 0;

	if (!v)
		return 0;
	old = push_key(d, camel);
	if (v->type != JSON_STRING) {
		rc = fail(d, ERR_INVALID, "not a string (want %s)", hex ? "hex" : "base64");
	} else if (v->len > INGEST_OTLP_JSON_MAX_STRING) {
		rc = fail(d, ERR_TOO_LARGE, "string of %zu bytes, more than the limit of %d", v->len,
			  INGEST_OTLP_JSON_MAX_STRING);
	} else if (hex) {
		if (v->len % 2)
			rc = fail(d, ERR_INVALID, "odd number of hex digits");
		else if (!(b = arena_alloc(d->a, v->len / 2 + 1)))
			rc = oom(d);
		for (size_t i = 0; !rc && i < v->len; i += 2) {
			int hi = hex_digit(v->str[i]), lo = hex_digit(v->str[i + 1]);

			if (hi < 0 || lo < 0)
				rc = fail(d, ERR_INVALID, "not hex: \"%.40s\"", v->str);
			else
				b[n++] = (uint8_t)(hi << 4 | lo);
		}
	} else {
		rc = base64_decode(d->a, v->str, v->len, &b, &n);
		if (rc == ERR_INVALID)
			rc = fail(d, rc, "not base64");
		else if (rc)
			rc = oom(d);
	}
	pop(d, old);
	if (!rc) {
		out->data = n ? b : NULL;
		out->len = n;
	}
	return rc;
}

static int get_bool(struct jdec *d, const struct json_value *obj, const char *camel,
		    const char *snake, protobuf_c_boolean *out)
{
	const struct json_value *v = member(obj, camel, snake);
	size_t old;
	int rc = 0;

	if (!v)
		return 0;
	old = push_key(d, camel);
	if (v->type != JSON_BOOL)
		rc = fail(d, ERR_INVALID, "not a boolean");
	else
		*out = v->boolean;
	pop(d, old);
	return rc;
}

/* A double: a number, or "NaN", "Infinity", "-Infinity" or a numeric string. */
static int get_double(struct jdec *d, const struct json_value *obj, const char *camel,
		      const char *snake, double *out)
{
	const struct json_value *v = member(obj, camel, snake);
	char *end = NULL;
	size_t old;
	int rc = 0;

	if (!v)
		return 0;
	old = push_key(d, camel);
	if (v->type != JSON_NUMBER && v->type != JSON_STRING)
		rc = fail(d, ERR_INVALID, "not a number");
	else if (v->type == JSON_STRING && strcmp(v->str, "NaN") == 0)
		*out = __builtin_nan("");
	else if (v->type == JSON_STRING && strcmp(v->str, "Infinity") == 0)
		*out = __builtin_inf();
	else if (v->type == JSON_STRING && strcmp(v->str, "-Infinity") == 0)
		*out = -__builtin_inf();
	else if (!v->len || (*out = strtod(v->str, &end), end != v->str + v->len))
		rc = fail(d, ERR_INVALID, "not a number: \"%.40s\"", v->str);
	pop(d, old);
	return rc;
}

/* An array member: *arr NULL when absent; its length checked. */
static int get_arr(struct jdec *d, const struct json_value *obj, const char *camel,
		   const char *snake, const struct json_value **arr)
{
	const struct json_value *v = member(obj, camel, snake);
	size_t old;
	int rc = 0;

	*arr = NULL;
	if (!v)
		return 0;
	old = push_key(d, camel);
	if (v->type != JSON_ARRAY)
		rc = fail(d, ERR_INVALID, "not an array");
	else if (v->n > INGEST_OTLP_JSON_MAX_ARRAY)
		rc = fail(d, ERR_TOO_LARGE, "%zu elements, more than the limit of %d", v->n,
			  INGEST_OTLP_JSON_MAX_ARRAY);
	else
		*arr = v;
	pop(d, old);
	return rc;
}

/* A repeated int32 / int64 / fixed64 member. */
#define GET_REPEATED(kind, type)                                                               \
	static int get_##kind##s(struct jdec *d, const struct json_value *obj, const char *camel, \
				 const char *snake, type **out, size_t *n)                      \
	{                                                                                       \
		const struct json_value *arr;                                                   \
		type *x;                                                                        \
		size_t old;                                                                     \
		int rc;                                                                         \
                                                                                                \
		if ((rc = get_arr(d, obj, camel, snake, &arr)) || !arr || !arr->n)              \
			return rc;                                                              \
		if (!(x = arena_alloc(d->a, arr->n * sizeof(*x))))                              \
			return oom(d);                                                          \
		for (size_t i = 0; i < arr->n; i++) {                                           \
			old = push(d, "%s%s[%zu]", d->plen ? "." : "", camel, i);               \
			rc = val_##kind(d, &arr->items[i], &x[i]);                              \
			pop(d, old);                                                            \
			if (rc)                                                                 \
				return rc;                                                      \
		}                                                                               \
		*out = x;                                                                       \
		*n = arr->n;                                                                    \
		return 0;                                                                       \
	}
GET_REPEATED(i32, int32_t)
GET_REPEATED(i64, int64_t)
GET_REPEATED(u64, uint64_t)

/* A message value: a new struct of `desc` in the arena, filled by `fn`. */
static int val_msg(struct jdec *d, const struct json_value *v,
		   const ProtobufCMessageDescriptor *desc, dec_fn fn, void **out)
{
	void *m;

	if (v->type != JSON_OBJECT)
		return fail(d, ERR_INVALID, "not an object");
	if (!(m = arena_alloc(d->a, desc->sizeof_message)))
		return oom(d);
	protobuf_c_message_init(desc, m);
	*out = m;
	return fn(d, v, m);
}

static int get_msg(struct jdec *d, const struct json_value *obj, const char *camel,
		   const char *snake, const ProtobufCMessageDescriptor *desc, dec_fn fn, void *out)
{
	const struct json_value *v = member(obj, camel, snake);
	size_t old;
	int rc;

	if (!v)
		return 0;
	old = push_key(d, camel);
	rc = val_msg(d, v, desc, fn, out);
	pop(d, old);
	return rc;
}

static int get_msgs(struct jdec *d, const struct json_value *obj, const char *camel,
		    const char *snake, const ProtobufCMessageDescriptor *desc, dec_fn fn,
		    void *out, size_t *n)
{
	const struct json_value *arr;
	void **x;
	size_t old;
	int rc;

	if ((rc = get_arr(d, obj, camel, snake, &arr)) || !arr || !arr->n)
		return rc;
	if (!(x = arena_alloc(d->a, arr->n * sizeof(*x))))
		return oom(d);
	for (size_t i = 0; i < arr->n; i++) {
		old = push(d, "%s%s[%zu]", d->plen ? "." : "", camel, i);
		rc = val_msg(d, &arr->items[i], desc, fn, &x[i]);
		pop(d, old);
		if (rc)
			return rc;
	}
	memcpy(out, &x, sizeof(x));
	*n = arr->n;
	return 0;
}

/* ---- messages ----------------------------------------------------------- */

#define PROF(x) opentelemetry__proto__profiles__v1development__##x##__descriptor
#define COMMON(x) opentelemetry__proto__common__v1__##x##__descriptor

static int dec_any(struct jdec *d, const struct json_value *o, void *out)
{
	static const struct {
		const char *camel, *snake;
		int which;
	} kinds[] = {
		{ "stringValue", "string_value", ANY(STRING_VALUE) },
		{ "boolValue", "bool_value", ANY(BOOL_VALUE) },
		{ "intValue", "int_value", ANY(INT_VALUE) },
		{ "doubleValue", "double_value", ANY(DOUBLE_VALUE) },
		{ "arrayValue", "array_value", ANY(ARRAY_VALUE) },
		{ "kvlistValue", "kvlist_value", ANY(KVLIST_VALUE) },
		{ "bytesValue", "bytes_value", ANY(BYTES_VALUE) },
		{ "stringValueStrindex", "string_value_strindex", ANY(STRING_VALUE_STRINDEX) },
	};
	AnyValue *v = out;
	const char *first = NULL;
	size_t old;
	int rc = 0;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		const struct json_value *m = member(o, kinds[k].camel, kinds[k].snake);

		if (!m)
			continue;
		if (first)
			return fail(d, ERR_INVALID, "both %s and %s set (value is a oneof)", first,
				    kinds[k].camel);
		first = kinds[k].camel;
		switch (kinds[k].which) {
		case ANY(STRING_VALUE):
			rc = get_str(d, o, kinds[k].camel, kinds[k].snake, &v->string_value);
			break;
		case ANY(BOOL_VALUE):
			rc = get_bool(d, o, kinds[k].camel, kinds[k].snake, &v->bool_value);
			break;
		case ANY(INT_VALUE):
			rc = get_i64(d, o, kinds[k].camel, kinds[k].snake, &v->int_value);
			break;
		case ANY(DOUBLE_VALUE):
			rc = get_double(d, o, kinds[k].camel, kinds[k].snake, &v->double_value);
			break;
		case ANY(BYTES_VALUE):
			rc = get_bytes(d, o, kinds[k].camel, kinds[k].snake, 0, &v->bytes_value);
			break;
		case ANY(STRING_VALUE_STRINDEX):
			rc = get_i32(d, o, kinds[k].camel, kinds[k].snake,
				     &v->string_value_strindex);
			break;
		default:
			/* arrayValue / kvlistValue: recognized, not kept. */
			old = push_key(d, kinds[k].camel);
			if (m->type != JSON_OBJECT)
				rc = fail(d, ERR_INVALID, "not an object");
			pop(d, old);
			v->array_value.len = 0;
			v->array_value.data = NULL;
			break;
		}
		if (rc)
			return rc;
		v->value_case = kinds[k].which;
	}
	return 0;
}

static int dec_kv(struct jdec *d, const struct json_value *o, void *out)
{
	KeyValue *kv = out;
	int rc;

	if ((rc = get_str(d, o, "key", NULL, &kv->key)) ||
	    (rc = get_i32(d, o, "keyStrindex", "key_strindex", &kv->key_strindex)))
		return rc;
	return get_msg(d, o, "value", NULL, &COMMON(any_value), dec_any, &kv->value);
}

static int dec_resource(struct jdec *d, const struct json_value *o, void *out)
{
	Resource *r = out;
	int rc;

	if ((rc = get_u32(d, o, "droppedAttributesCount", "dropped_attributes_count",
			  &r->dropped_attributes_count)))
		return rc;
	return get_msgs(d, o, "attributes", NULL, &COMMON(key_value), dec_kv, &r->attributes,
			&r->n_attributes);
}

static int dec_scope(struct jdec *d, const struct json_value *o, void *out)
{
	Scope *s = out;
	int rc;

	if ((rc = get_str(d, o, "name", NULL, &s->name)) ||
	    (rc = get_str(d, o, "version", NULL, &s->version)) ||
	    (rc = get_u32(d, o, "droppedAttributesCount", "dropped_attributes_count",
			  &s->dropped_attributes_count)))
		return rc;
	return get_msgs(d, o, "attributes", NULL, &COMMON(key_value), dec_kv, &s->attributes,
			&s->n_attributes);
}

static int dec_value_type(struct jdec *d, const struct json_value *o, void *out)
{
	ValueType *t = out;
	int rc;

	if ((rc = get_i32(d, o, "typeStrindex", "type_strindex", &t->type_strindex)))
		return rc;
	return get_i32(d, o, "unitStrindex", "unit_strindex", &t->unit_strindex);
}

static int dec_sample(struct jdec *d, const struct json_value *o, void *out)
{
	Sample *s = out;
	int rc;

	if ((rc = get_i32(d, o, "stackIndex", "stack_index", &s->stack_index)) ||
	    (rc = get_i32s(d, o, "attributeIndices", "attribute_indices", &s->attribute_indices,
			   &s->n_attribute_indices)) ||
	    (rc = get_i32(d, o, "linkIndex", "link_index", &s->link_index)) ||
	    (rc = get_i64s(d, o, "values", NULL, &s->values, &s->n_values)))
		return rc;
	return get_u64s(d, o, "timestampsUnixNano", "timestamps_unix_nano",
			&s->timestamps_unix_nano, &s->n_timestamps_unix_nano);
}

static int dec_profile(struct jdec *d, const struct json_value *o, void *out)
{
	Profile *p = out;
	int rc;

	if ((rc = get_msg(d, o, "sampleType", "sample_type", &PROF(value_type), dec_value_type,
			  &p->sample_type)) ||
	    (rc = get_msgs(d, o, "samples", NULL, &PROF(sample), dec_sample, &p->samples,
			   &p->n_samples)) ||
	    (rc = get_u64(d, o, "timeUnixNano", "time_unix_nano", &p->time_unix_nano)) ||
	    (rc = get_u64(d, o, "durationNano", "duration_nano", &p->duration_nano)) ||
	    (rc = get_msg(d, o, "periodType", "period_type", &PROF(value_type), dec_value_type,
			  &p->period_type)) ||
	    (rc = get_i64(d, o, "period", NULL, &p->period)) ||
	    (rc = get_bytes(d, o, "profileId", "profile_id", 1, &p->profile_id)) ||
	    (rc = get_u32(d, o, "droppedAttributesCount", "dropped_attributes_count",
			  &p->dropped_attributes_count)) ||
	    (rc = get_str(d, o, "originalPayloadFormat", "original_payload_format",
			  &p->original_payload_format)))
		return rc;
	return get_i32s(d, o, "attributeIndices", "attribute_indices", &p->attribute_indices,
			&p->n_attribute_indices);
}

static int dec_scope_profiles(struct jdec *d, const struct json_value *o, void *out)
{
	ScopeProfiles *s = out;
	int rc;

	if ((rc = get_msg(d, o, "scope", NULL, &COMMON(instrumentation_scope), dec_scope,
			  &s->scope)) ||
	    (rc = get_str(d, o, "schemaUrl", "schema_url", &s->schema_url)))
		return rc;
	return get_msgs(d, o, "profiles", NULL, &PROF(profile), dec_profile, &s->profiles,
			&s->n_profiles);
}

static int dec_resource_profiles(struct jdec *d, const struct json_value *o, void *out)
{
	ResourceProfiles *r = out;
	int rc;

	if ((rc = get_msg(d, o, "resource", NULL,
			  &opentelemetry__proto__resource__v1__resource__descriptor, dec_resource,
			  &r->resource)) ||
	    (rc = get_str(d, o, "schemaUrl", "schema_url", &r->schema_url)))
		return rc;
	return get_msgs(d, o, "scopeProfiles", "scope_profiles", &PROF(scope_profiles),
			dec_scope_profiles, &r->scope_profiles, &r->n_scope_profiles);
}

static int dec_mapping(struct jdec *d, const struct json_value *o, void *out)
{
	Mapping *m = out;
	int rc;

	if ((rc = get_u64(d, o, "memoryStart", "memory_start", &m->memory_start)) ||
	    (rc = get_u64(d, o, "memoryLimit", "memory_limit", &m->memory_limit)) ||
	    (rc = get_u64(d, o, "fileOffset", "file_offset", &m->file_offset)) ||
	    (rc = get_i32(d, o, "filenameStrindex", "filename_strindex", &m->filename_strindex)))
		return rc;
	return get_i32s(d, o, "attributeIndices", "attribute_indices", &m->attribute_indices,
			&m->n_attribute_indices);
}

static int dec_line(struct jdec *d, const struct json_value *o, void *out)
{
	Line *l = out;
	int rc;

	if ((rc = get_i32(d, o, "functionIndex", "function_index", &l->function_index)) ||
	    (rc = get_i64(d, o, "line", NULL, &l->line)))
		return rc;
	return get_i64(d, o, "column", NULL, &l->column);
}

static int dec_location(struct jdec *d, const struct json_value *o, void *out)
{
	Location *l = out;
	int rc;

	if ((rc = get_i32(d, o, "mappingIndex", "mapping_index", &l->mapping_index)) ||
	    (rc = get_u64(d, o, "address", NULL, &l->address)) ||
	    (rc = get_msgs(d, o, "lines", NULL, &PROF(line), dec_line, &l->lines, &l->n_lines)))
		return rc;
	return get_i32s(d, o, "attributeIndices", "attribute_indices", &l->attribute_indices,
			&l->n_attribute_indices);
}

static int dec_function(struct jdec *d, const struct json_value *o, void *out)
{
	Function *f = out;
	int rc;

	if ((rc = get_i32(d, o, "nameStrindex", "name_strindex", &f->name_strindex)) ||
	    (rc = get_i32(d, o, "systemNameStrindex", "system_name_strindex",
			  &f->system_name_strindex)) ||
	    (rc = get_i32(d, o, "filenameStrindex", "filename_strindex", &f->filename_strindex)))
		return rc;
	return get_i64(d, o, "startLine", "start_line", &f->start_line);
}

static int dec_link(struct jdec *d, const struct json_value *o, void *out)
{
	Link *l = out;
	int rc;

	if ((rc = get_bytes(d, o, "traceId", "trace_id", 1, &l->trace_id)))
		return rc;
	return get_bytes(d, o, "spanId", "span_id", 1, &l->span_id);
}

static int dec_kvu(struct jdec *d, const struct json_value *o, void *out)
{
	KeyValueAndUnit *kv = out;
	int rc;

	if ((rc = get_i32(d, o, "keyStrindex", "key_strindex", &kv->key_strindex)) ||
	    (rc = get_msg(d, o, "value", NULL, &COMMON(any_value), dec_any, &kv->value)))
		return rc;
	return get_i32(d, o, "unitStrindex", "unit_strindex", &kv->unit_strindex);
}

static int dec_stack(struct jdec *d, const struct json_value *o, void *out)
{
	Stack *s = out;

	return get_i32s(d, o, "locationIndices", "location_indices", &s->location_indices,
			&s->n_location_indices);
}

static int dec_strings(struct jdec *d, const struct json_value *o, Dict *t)
{
	const struct json_value *arr;
	char **x;
	size_t old;
	int rc;

	if ((rc = get_arr(d, o, "stringTable", "string_table", &arr)) || !arr || !arr->n)
		return rc;
	if (!(x = arena_alloc(d->a, arr->n * sizeof(*x))))
		return oom(d);
	for (size_t i = 0; i < arr->n; i++) {
		old = push(d, "%sstringTable[%zu]", d->plen ? "." : "", i);
		rc = val_str(d, &arr->items[i], &x[i]);
		pop(d, old);
		if (rc)
			return rc;
	}
	t->string_table = x;
	t->n_string_table = arr->n;
	return 0;
}

static int dec_dict(struct jdec *d, const struct json_value *o, void *out)
{
	Dict *t = out;
	int rc;

	if ((rc = get_msgs(d, o, "mappingTable", "mapping_table", &PROF(mapping), dec_mapping,
			   &t->mapping_table, &t->n_mapping_table)) ||
	    (rc = get_msgs(d, o, "locationTable", "location_table", &PROF(location), dec_location,
			   &t->location_table, &t->n_location_table)) ||
	    (rc = get_msgs(d, o, "functionTable", "function_table", &PROF(function), dec_function,
			   &t->function_table, &t->n_function_table)) ||
	    (rc = get_msgs(d, o, "linkTable", "link_table", &PROF(link), dec_link, &t->link_table,
			   &t->n_link_table)) ||
	    (rc = dec_strings(d, o, t)) ||
	    (rc = get_msgs(d, o, "attributeTable", "attribute_table", &PROF(key_value_and_unit),
			   dec_kvu, &t->attribute_table, &t->n_attribute_table)))
		return rc;
	return get_msgs(d, o, "stackTable", "stack_table", &PROF(stack), dec_stack,
			&t->stack_table, &t->n_stack_table);
}

static int dec_req(struct jdec *d, const struct json_value *o, Req *r)
{
	int rc;

	if (o->type != JSON_OBJECT)
		return fail(d, ERR_INVALID, "not a JSON object (want an ExportProfilesServiceRequest)");
	if ((rc = get_msgs(d, o, "resourceProfiles", "resource_profiles",
			   &PROF(resource_profiles), dec_resource_profiles, &r->resource_profiles,
			   &r->n_resource_profiles)))
		return rc;
	return get_msg(d, o, "dictionary", NULL, &PROF(profiles_dictionary), dec_dict,
		       &r->dictionary);
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
	struct jdec d = { .a = a, .msg = msg };
	struct json_value *root;
	struct arena ta;
	Req *r;
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
	if (!(r = arena_alloc(a, sizeof(*r)))) {
		rc = oom(&d);
		goto out;
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(r);
	if (!(rc = dec_req(&d, root, r)))
		*out = r;
out:
	arena_release(&ta);
	return rc;
}
