/*
 * pbjson.c - proto3 JSON for protobuf-c messages (see pbjson.h).
 *
 * Both directions walk the message descriptor: the decoder looks every
 * member of a JSON object up among the fields of the message, converts
 * its value by the field's type and stores it at the field's offset (with
 * the count of a repeated field, the case of a oneof); the encoder visits
 * the fields in order and writes those that are present.
 *
 * protobuf-c's in-memory forms, which this file must match: a singular
 * field lives at `offset`; a repeated field is a pointer to its items at
 * `offset` and a size_t count at `quantifier_offset`; a oneof member
 * shares its storage with the others and has the uint32 case (the field
 * number of the member set) at `quantifier_offset`; a proto2 `optional`
 * scalar has a protobuf_c_boolean has_ flag there.  Strings are char *,
 * bytes ProtobufCBinaryData, messages ProtobufCMessage *.
 */
#include "proto/pbjson.h"

#include "base/arena.h"
#include "base/base64.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "base/json.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages nested deeper than this are refused (ours nest at most 6 deep). */
enum { MAX_DEPTH = 64 };

/* ---- names ------------------------------------------------------------- */

/*
 * 1 when `key` is the JSON name of field name `name`: protoc's rule, an
 * underscore dropped and the letter after it upper-cased.
 */
static int is_json_name(const char *name, const char *key)
{
	int up = 0;

	for (; *name; name++) {
		char c = *name;

		if (c == '_') {
			up = 1;
			continue;
		}
		if (up && c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		up = 0;
		if (*key++ != c)
			return 0;
	}
	return *key == '\0';
}

static const ProtobufCFieldDescriptor *field_by_key(const ProtobufCMessageDescriptor *d,
						    const char *key)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);

	if (f)
		return f;
	for (unsigned i = 0; i < d->n_fields; i++)
		if (is_json_name(d->fields[i].name, key))
			return &d->fields[i];
	return NULL;
}

static const ProtobufCFieldDescriptor *field_by_id(const ProtobufCMessageDescriptor *d,
						   uint32_t id)
{
	return protobuf_c_message_descriptor_get_field(d, (unsigned)id);
}

/* The JSON name of a field into dst (cap bytes, cut if longer). */
static const char *json_name(const char *name, char *dst, size_t cap)
{
	size_t w = 0;
	int up = 0;

	for (; *name && w + 1 < cap; name++) {
		char c = *name;

		if (c == '_') {
			up = 1;
			continue;
		}
		dst[w++] = up && c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
		up = 0;
	}
	dst[w] = '\0';
	return dst;
}

/* Bytes of one item of a field of this type in memory. */
static size_t item_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return 8;
	case PROTOBUF_C_TYPE_FLOAT:
		return sizeof(float);
	case PROTOBUF_C_TYPE_DOUBLE:
		return sizeof(double);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	}
	return 0;
}

const ProtobufCFieldDescriptor *pbjson_field(const ProtobufCMessageDescriptor *d, const char *key)
{
	return field_by_key(d, key);
}

const char *pbjson_json_name(const ProtobufCFieldDescriptor *f, char *dst, size_t cap)
{
	return json_name(f->name, dst, cap);
}

static int is_hex(const struct pbjson_hooks *h, const ProtobufCMessageDescriptor *d,
		  const ProtobufCFieldDescriptor *f)
{
	return h && h->bytes_as_hex && h->bytes_as_hex(d, f, h->ctx);
}

/* ---- base64 and hex ------------------------------------------------------ */

/* ---- decoding ------------------------------------------------------------ */

struct dec {
	const struct pbjson_hooks *hooks;
	unsigned flags;
	struct arena *a;
	struct err_msg *msg;
	const char *root;   /* the top message's name, for errors at the top */
	struct json_path path; /* of the value being decoded */
};

static size_t push_field(struct dec *dc, const ProtobufCFieldDescriptor *f)
{
	char name[128];

	return json_path_push(&dc->path, "%s%s", dc->path.len ? "." : "",
			      json_name(f->name, name, sizeof(name)));
}

static int fail(struct dec *dc, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct dec *dc, int code, const char *fmt, ...)
{
	char what[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(dc->msg, code, "%s: %s", dc->path.len ? dc->path.s : dc->root, what);
}

static int oom(struct dec *dc)
{
	int rc = arena_failed(dc->a) ? arena_failed(dc->a) : ERR_NOMEM;

	if (rc == ERR_NOMEM)
		return fail(dc, rc, "out of memory");
	return fail(dc, rc, "the message needs more than the %zu bytes of memory allowed",
		    dc->a->cap);
}

/*
 * At most 40 bytes of `s` for a message, cut before a UTF-8 sequence that
 * would not fit (the strings of a tree are UTF-8).
 */
static const char *cut(const char *s, char *dst)
{
	size_t n = strlen(s), w = 0;

	while (w < n && w < 40) {
		unsigned char c = (unsigned char)s[w];
		size_t k = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

		if (w + k > 40 || w + k > n)
			break;
		memcpy(dst + w, s + w, k);
		w += k;
	}
	dst[w] = '\0';
	return dst;
}

static int want(struct dec *dc, const struct json_value *v, const char *what)
{
	return fail(dc, ERR_INVALID, "not %s (got %s)", what, json_type_name(v->type));
}

/* Relays the reason of a json.h number helper, located. */
static int num_fail(struct dec *dc, const struct err_msg *why)
{
	return fail(dc, ERR_INVALID, "%s", why->text);
}

static int dec_message(struct dec *dc, const ProtobufCMessageDescriptor *d,
		       const struct json_value *v, int depth, ProtobufCMessage **out);

static int dec_int(struct dec *dc, const ProtobufCFieldDescriptor *f, const struct json_value *v,
		   void *p)
{
	struct err_msg why = { { 0 } };
	int64_t s;
	uint64_t u;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if (json_int64(v, &s, &why))
			return num_fail(dc, &why);
		if (s < INT32_MIN || s > INT32_MAX)
			return fail(dc, ERR_INVALID, "%" PRId64 " is out of range for int32", s);
		*(int32_t *)p = (int32_t)s;
		return 0;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if (json_uint64(v, &u, &why))
			return num_fail(dc, &why);
		if (u > UINT32_MAX)
			return fail(dc, ERR_INVALID, "%" PRIu64 " is out of range for uint32", u);
		*(uint32_t *)p = (uint32_t)u;
		return 0;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if (json_int64(v, &s, &why))
			return num_fail(dc, &why);
		*(int64_t *)p = s;
		return 0;
	default:
		if (json_uint64(v, &u, &why))
			return num_fail(dc, &why);
		*(uint64_t *)p = u;
		return 0;
	}
}

static int dec_float(struct dec *dc, const ProtobufCFieldDescriptor *f,
		     const struct json_value *v, void *p)
{
	struct err_msg why = { { 0 } };
	double x;
	float y;

	if (json_double(v, &x, &why))
		return num_fail(dc, &why);
	if (f->type == PROTOBUF_C_TYPE_DOUBLE) {
		*(double *)p = x;
		return 0;
	}
	/* Read the text again as a float: rounding twice, through double,
	 * could miss the nearest float. */
	y = isfinite(x) ? strtof(v->str, NULL) : (float)x;
	if (isfinite(x) && isinf(y))
		return fail(dc, ERR_INVALID, "%s is out of range for float", cut(v->str, (char[48]){ 0 }));
	*(float *)p = y;
	return 0;
}

static int dec_bytes(struct dec *dc, const ProtobufCMessageDescriptor *d,
		     const ProtobufCFieldDescriptor *f, const struct json_value *v,
		     ProtobufCBinaryData *out)
{
	int hex = is_hex(dc->hooks, d, f);
	uint8_t *b;
	size_t n = 0;

	if (v->type != JSON_STRING)
		return want(dc, v, hex ? "a hex string" : "a base64 string");
	if (!v->len) {
		out->data = NULL;
		out->len = 0;
		return 0;
	}
	b = arena_alloc(dc->a, hex ? v->len / 2 + 1 : base64_decoded_max(v->len));
	if (!b)
		return oom(dc);
	if (hex) {
		if (v->len % 2)
			return fail(dc, ERR_INVALID, "odd number of hex digits");
		for (size_t i = 0; i < v->len; i += 2) {
			int hi = hex_digit((unsigned char)v->str[i]);
			int lo = hex_digit((unsigned char)v->str[i + 1]);

			if (hi < 0 || lo < 0)
				return fail(dc, ERR_INVALID, "not hex: \"%s\"", cut(v->str, (char[48]){ 0 }));
			b[n++] = (uint8_t)(hi << 4 | lo);
		}
	} else if (base64_decode(v->str, v->len, BASE64_URL, b, base64_decoded_max(v->len), &n)) {
		return fail(dc, ERR_INVALID, "not base64");
	}
	out->data = b;
	out->len = n;
	return 0;
}

/* An enum value by name or number; 1 (skip it) for an unknown name when allowed. */
static int dec_enum(struct dec *dc, const ProtobufCFieldDescriptor *f, const struct json_value *v,
		    int32_t *out)
{
	const ProtobufCEnumDescriptor *e = f->descriptor;
	const ProtobufCEnumValue *ev;

	if (v->type == JSON_NUMBER)
		return dec_int(dc, &(ProtobufCFieldDescriptor){ .type = PROTOBUF_C_TYPE_INT32 }, v, out);
	if (v->type != JSON_STRING)
		return want(dc, v, "an enum name or number");
	ev = protobuf_c_enum_descriptor_get_value_by_name(e, v->str);
	if (ev) {
		*out = ev->value;
		return 0;
	}
	if (dc->flags & PBJSON_IGNORE_UNKNOWN)
		return 1;
	return fail(dc, ERR_INVALID, "\"%s\" is not a value of %s", cut(v->str, (char[48]){ 0 }),
		    e->name);
}

/* One value of field f (of message d) into the item at p; 1 when an enum was skipped. */
static int dec_value(struct dec *dc, const ProtobufCMessageDescriptor *d,
		     const ProtobufCFieldDescriptor *f, const struct json_value *v, int depth, void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		if (v->type != JSON_BOOL)
			return want(dc, v, "a boolean");
		*(protobuf_c_boolean *)p = v->boolean;
		return 0;
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		return dec_float(dc, f, v, p);
	case PROTOBUF_C_TYPE_ENUM:
		return dec_enum(dc, f, v, p);
	case PROTOBUF_C_TYPE_STRING:
		if (v->type != JSON_STRING)
			return want(dc, v, "a string");
		*(char **)p = arena_strndup(dc->a, v->str, v->len);
		return *(char **)p ? 0 : oom(dc);
	case PROTOBUF_C_TYPE_BYTES:
		return dec_bytes(dc, d, f, v, p);
	case PROTOBUF_C_TYPE_MESSAGE:
		return dec_message(dc, f->descriptor, v, depth + 1, p);
	default:
		return dec_int(dc, f, v, p);
	}
}

static int dec_repeated(struct dec *dc, const ProtobufCMessageDescriptor *d,
			const ProtobufCFieldDescriptor *f, const struct json_value *v, int depth,
			ProtobufCMessage *m)
{
	size_t size = item_size(f->type), n = 0;
	char *items;
	int rc;

	if (v->type != JSON_ARRAY)
		return want(dc, v, "an array");
	if (!v->n)
		return 0;
	if (v->n > SIZE_MAX / size || !(items = arena_alloc(dc->a, v->n * size)))
		return oom(dc);
	for (size_t i = 0; i < v->n; i++) {
		size_t old = json_path_push(&dc->path, "[%zu]", i);

		if (v->items[i].type == JSON_NULL)
			rc = fail(dc, ERR_INVALID, "null in a repeated field");
		else
			rc = dec_value(dc, d, f, &v->items[i], depth, items + n * size);
		json_path_pop(&dc->path, old);
		if (rc < 0)
			return rc;
		n += !rc;
	}
	*(void **)((char *)m + f->offset) = n ? items : NULL;
	*(size_t *)((char *)m + f->quantifier_offset) = n;
	return 0;
}

/* Member i of object v into m: looks up its field and stores its value. */
static int dec_member(struct dec *dc, const ProtobufCMessageDescriptor *d,
		      const struct json_value *v, size_t i, int depth, ProtobufCMessage *m,
		      const char **seen)
{
	const ProtobufCFieldDescriptor *f = field_by_key(d, v->keys[i]);
	const struct json_value *x = &v->items[i];
	char *at;
	size_t fi;
	int rc;

	if (!f) {
		size_t old;

		if (dc->flags & PBJSON_IGNORE_UNKNOWN)
			return 0;
		old = json_path_push(&dc->path, "%s%s", dc->path.len ? "." : "",
				     cut(v->keys[i], (char[48]){ 0 }));
		rc = fail(dc, ERR_INVALID, "no such field in %s", d->short_name);
		json_path_pop(&dc->path, old);
		return rc;
	}
	fi = (size_t)(f - d->fields);
	if (seen[fi]) {
		char name[128];

		return fail(dc, ERR_INVALID, "field %s given twice (as \"%s\" and \"%s\")",
			    json_name(f->name, name, sizeof(name)), seen[fi], v->keys[i]);
	}
	seen[fi] = v->keys[i];
	if (x->type == JSON_NULL && f->label == PROTOBUF_C_LABEL_REQUIRED) {
		char name[128];

		return fail(dc, ERR_INVALID, "required field %s is null",
			    json_name(f->name, name, sizeof(name)));
	}
	if (x->type == JSON_NULL)
		return 0;
	at = (char *)m + f->offset;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
		uint32_t *which = (uint32_t *)(void *)((char *)m + f->quantifier_offset);

		if (*which) {
			char a[128], b[128];

			return fail(dc, ERR_INVALID, "both %s and %s set (a oneof)",
				    json_name(field_by_id(d, *which)->name, a, sizeof(a)),
				    json_name(f->name, b, sizeof(b)));
		}
	}
	{
		size_t old = push_field(dc, f);

		if (f->label == PROTOBUF_C_LABEL_REPEATED)
			rc = dec_repeated(dc, d, f, x, depth, m);
		else
			rc = dec_value(dc, d, f, x, depth, at);
		json_path_pop(&dc->path, old);
	}
	if (rc)
		return rc < 0 ? rc : 0;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)(void *)((char *)m + f->quantifier_offset) = f->id;
	else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
		 f->type != PROTOBUF_C_TYPE_MESSAGE)
		*(protobuf_c_boolean *)(void *)((char *)m + f->quantifier_offset) = 1;
	return 0;
}

static int dec_message(struct dec *dc, const ProtobufCMessageDescriptor *d,
		       const struct json_value *v, int depth, ProtobufCMessage **out)
{
	const char *small[64], **seen = small;
	ProtobufCMessage *m;
	int rc = 0;

	if (v->type != JSON_OBJECT)
		return want(dc, v, "an object");
	if (depth > MAX_DEPTH)
		return fail(dc, ERR_INVALID, "messages nested deeper than %d", MAX_DEPTH);
	if (!(m = arena_alloc(dc->a, d->sizeof_message)))
		return oom(dc);
	protobuf_c_message_init(d, m);
	if (d->n_fields > sizeof(small) / sizeof(small[0])) {
		if (!(seen = arena_calloc(dc->a, d->n_fields, sizeof(*seen))))
			return oom(dc);
	} else {
		memset(small, 0, sizeof(small));
	}
	for (size_t i = 0; i < v->n && !rc; i++)
		rc = dec_member(dc, d, v, i, depth, m, seen);
	for (unsigned i = 0; i < d->n_fields && !rc; i++) {
		char name[128];

		if (d->fields[i].label == PROTOBUF_C_LABEL_REQUIRED && !seen[i])
			rc = fail(dc, ERR_INVALID, "required field %s is missing",
				  json_name(d->fields[i].name, name, sizeof(name)));
	}
	if (!rc)
		*out = m;
	return rc;
}

int pbjson_decode_value(const ProtobufCMessageDescriptor *d, const struct json_value *v,
			const struct pbjson_hooks *hooks, unsigned flags, struct arena *a,
			ProtobufCMessage **out, struct err_msg *msg)
{
	struct dec dc = { .hooks = hooks, .flags = flags, .a = a, .msg = msg, .root = d->short_name };

	return dec_message(&dc, d, v, 0, out);
}

int pbjson_decode(const ProtobufCMessageDescriptor *d, const void *json, size_t len,
		  const struct pbjson_hooks *hooks, unsigned flags, struct arena *a,
		  ProtobufCMessage **out, struct err_msg *msg)
{
	size_t cap = json_mem_bound(len), room = a->cap > a->used ? a->cap - a->used : 0;
	struct json_value *root;
	struct arena t;
	int rc;

	if (room < cap)
		cap = room;
	if (!cap)
		return err_set(msg, ERR_TOO_LARGE, "%s: no memory left to decode into", d->short_name);
	arena_init(&t, cap);
	rc = json_parse(len ? json : "", len, &t, &root, msg);
	if (!rc)
		rc = pbjson_decode_value(d, root, hooks, flags, a, out, msg);
	arena_release(&t);
	return rc;
}

/* ---- encoding ------------------------------------------------------------ */

struct enc {
	const struct pbjson_hooks *hooks;
	unsigned flags;
	struct buf *out;
};

/* The shortest %g text of x that reads back as x (as a float when `single`). */
static int put_real(struct buf *b, double x, int single)
{
	char t[320]; /* what %g may write, as the compiler counts */
	int prec = single ? FLT_DIG : DBL_DIG;

	if (isnan(x))
		return buf_puts(b, "\"NaN\"");
	if (isinf(x))
		return buf_puts(b, x < 0 ? "\"-Infinity\"" : "\"Infinity\"");
	/*
	 * A normal number whose shortest text has at most FLT_DIG / DBL_DIG
	 * digits is within half a unit of that text's last digit, so rounding
	 * it to that many digits gives the text back: the first precision
	 * from there that reads back is the shortest.  Subnormals have fewer
	 * bits, and start from one digit.
	 */
	if (fabs(x) < (single ? FLT_MIN : DBL_MIN))
		prec = 1;
	for (; prec < (single ? 9 : 17); prec++) {
		snprintf(t, sizeof(t), "%.*g", prec, x);
		if (single ? strtof(t, NULL) == (float)x : strtod(t, NULL) == x)
			return buf_puts(b, t);
	}
	snprintf(t, sizeof(t), "%.*g", prec, x);
	return buf_puts(b, t);
}

static int enc_message(struct enc *e, const ProtobufCMessage *m, int depth);

static int enc_value(struct enc *e, const ProtobufCMessageDescriptor *d,
		     const ProtobufCFieldDescriptor *f, const void *p, int depth)
{
	struct buf *b = e->out;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return buf_printf(b, "%" PRId32, *(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return buf_printf(b, "%" PRIu32, *(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return buf_printf(b, "\"%" PRId64 "\"", *(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return buf_printf(b, "\"%" PRIu64 "\"", *(const uint64_t *)p);
	case PROTOBUF_C_TYPE_FLOAT:
		return put_real(b, *(const float *)p, 1);
	case PROTOBUF_C_TYPE_DOUBLE:
		return put_real(b, *(const double *)p, 0);
	case PROTOBUF_C_TYPE_BOOL:
		return buf_puts(b, *(const protobuf_c_boolean *)p ? "true" : "false");
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int32_t *)p);

		if (ev)
			return buf_printf(b, "\"%s\"", ev->name);
		return buf_printf(b, "%" PRId32, *(const int32_t *)p);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		return s ? buf_put_json_str(b, s, strlen(s)) : buf_puts(b, "\"\"");
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *bd = p;
		int rc = buf_putc(b, '"');

		if (is_hex(e->hooks, d, f))
			for (size_t i = 0; i < bd->len && !rc; i++)
				rc = buf_printf(b, "%02x", bd->data[i]);
		else if (!rc)
			rc = base64_encode(b, bd->data, bd->len);
		return rc ? rc : buf_putc(b, '"');
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;

		if (!sub)
			return buf_puts(b, "{}");
		return enc_message(e, sub, depth + 1);
	}
	}
	return 0;
}

/* 1 when every byte of the n bytes at p is zero (protobuf-c's test for a default). */
static int all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return 0;
	return 1;
}

/*
 * Whether field f of m is written: 1 yes, 0 no, 2 as null (an unset
 * message under PBJSON_EMIT_DEFAULTS).
 */
static int present(const struct enc *e, const ProtobufCMessage *m,
		   const ProtobufCFieldDescriptor *f)
{
	const char *at = (const char *)m + f->offset;
	const void *q = (const char *)m + f->quantifier_offset;
	int defaults = (e->flags & PBJSON_EMIT_DEFAULTS) != 0;

	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return *(const size_t *)q || defaults;
	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)q == f->id;
	if (f->type == PROTOBUF_C_TYPE_MESSAGE)
		return *(void *const *)at ? 1 : defaults && f->label == PROTOBUF_C_LABEL_NONE ? 2 : 0;
	if (f->label == PROTOBUF_C_LABEL_REQUIRED)
		return 1;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL) {
		if (f->type == PROTOBUF_C_TYPE_STRING)
			return *(char *const *)at && *(char *const *)at != f->default_value;
		return *(const protobuf_c_boolean *)q;
	}
	if (defaults)
		return 1;
	if (f->type == PROTOBUF_C_TYPE_STRING)
		return *(char *const *)at && **(char *const *)at;
	if (f->type == PROTOBUF_C_TYPE_BYTES)
		return ((const ProtobufCBinaryData *)(const void *)at)->len != 0;
	return !all_zero(at, item_size(f->type));
}

static int enc_field(struct enc *e, const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
		     int how, int depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *at = (const char *)m + f->offset;
	struct buf *b = e->out;
	int rc = buf_putc(b, '"');

	for (const char *c = f->name; *c && !rc; c++) {
		if (*c != '_')
			rc = buf_putc(b, c > f->name && c[-1] == '_' && *c >= 'a' && *c <= 'z'
						 ? (char)(*c - 'a' + 'A') : *c);
	}
	if (!rc)
		rc = buf_puts(b, "\":");
	if (rc)
		return rc;
	if (how == 2)
		return buf_puts(b, "null");
	if (f->label == PROTOBUF_C_LABEL_REPEATED) {
		size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
		const char *items = *(const char *const *)at;
		size_t size = item_size(f->type);

		rc = buf_putc(b, '[');
		for (size_t i = 0; i < n && !rc; i++) {
			if (i)
				rc = buf_putc(b, ',');
			if (!rc)
				rc = enc_value(e, d, f, items + i * size, depth);
		}
		return rc ? rc : buf_putc(b, ']');
	}
	return enc_value(e, d, f, at, depth);
}

static int enc_message(struct enc *e, const ProtobufCMessage *m, int depth)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	int rc, first = 1;

	if (depth > MAX_DEPTH)
		return ERR_TOO_LARGE;
	rc = buf_putc(e->out, '{');
	for (unsigned i = 0; i < d->n_fields && !rc; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		int how = present(e, m, f);

		if (!how)
			continue;
		if (!first)
			rc = buf_putc(e->out, ',');
		first = 0;
		if (!rc)
			rc = enc_field(e, m, f, how, depth);
	}
	return rc ? rc : buf_putc(e->out, '}');
}

int pbjson_encode(const ProtobufCMessage *m, const struct pbjson_hooks *hooks, unsigned flags,
		  struct buf *out)
{
	struct enc e = { hooks, flags, out };
	size_t len = out->len;
	int rc = enc_message(&e, m, 0);

	if (rc) {
		out->len = len;
		if (out->data)
			out->data[len] = '\0';
	}
	return rc;
}

/* ---- allocator ------------------------------------------------------------- */

static void *arena_alloc_cb(void *data, size_t size)
{
	return arena_alloc(data, size ? size : 1);
}

static void arena_free_cb(void *data, void *ptr)
{
	(void)data;
	(void)ptr;
}

void pbjson_arena_allocator(struct arena *a, ProtobufCAllocator *out)
{
	out->alloc = arena_alloc_cb;
	out->free = arena_free_cb;
	out->allocator_data = a;
}

int pbjson_read_message(const ProtobufCMessageDescriptor *d, int proto, const void *body,
			size_t len, struct arena *a, ProtobufCMessage **out, struct err_msg *msg)
{
	ProtobufCAllocator al;
	ProtobufCMessage *m;

	if (!proto)
		return pbjson_decode(d, len ? body : "{}", len ? len : 2, NULL,
				     PBJSON_IGNORE_UNKNOWN, a, out, msg);
	pbjson_arena_allocator(a, &al);
	m = protobuf_c_message_unpack(d, &al, len, len ? body : (const void *)"");
	if (!m)
		return err_set(msg, arena_failed(a) ? ERR_TOO_LARGE : ERR_INVALID,
			       "%s: not a valid protobuf message", d->name);
	*out = m;
	return 0;
}

int pbjson_write_message(const ProtobufCMessage *m, int proto, unsigned flags, struct buf *out)
{
	int rc;

	if (!proto)
		return pbjson_encode(m, NULL, flags, out);
	rc = buf_reserve(out, protobuf_c_message_get_packed_size(m));
	if (!rc)
		out->len += protobuf_c_message_pack(m, (uint8_t *)out->data + out->len);
	return rc;
}
