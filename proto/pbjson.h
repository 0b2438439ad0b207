/*
 * pbjson.h - the proto3 JSON mapping for protobuf-c messages, driven by
 * their descriptors: one decoder and one encoder for every message type.
 *
 * The mapping is protobuf's ("ProtoJSON", protobuf.dev/programming-guides/
 * proto3 "JSON Mapping"), as far as our .proto files need it:
 *   - members are named by the field's JSON name, lowerCamelCase of the
 *     field name ("profile_typeID" -> "profileTypeID"); the decoder also
 *     accepts the field name itself.  Custom json_name options are not
 *     seen (protobuf-c does not keep them; none of our protos has one).
 *   - int32/uint32/sint32/fixed32/sfixed32 are JSON numbers; their 64-bit
 *     kinds are decimal strings.  The decoder takes either form for any
 *     integer, and any integral spelling ("1e3", "5.0"), exactly.
 *   - float and double are numbers, or "NaN", "Infinity", "-Infinity";
 *     -0 keeps its sign.  The encoder writes the shortest text that reads
 *     back to the same value.
 *   - bool is true or false; enums are written by name and read by name or
 *     number; bytes are base64 (written standard and padded, read standard
 *     or URL-safe, padded or not), or lower-case hex where the hook says
 *     so (OTLP/JSON's trace and span ids).
 *   - a message is an object; a repeated field an array (packed or not is
 *     a wire matter only); a oneof is whichever one of its members is set.
 *   - null means "absent" for every field (the field keeps its default);
 *     it is refused inside a repeated field.
 * Map fields and the well-known types (Any, Timestamp, wrappers, Struct)
 * are not mapped: none of our protos has them, and they would decode as the
 * plain messages they are.
 *
 * Decoding is strict: a member naming no field (unless
 * PBJSON_IGNORE_UNKNOWN), a field given twice (under both names), two
 * members of one oneof, a value of the wrong JSON type, an integer out of
 * its field's range or with a fraction, a float out of range, bad base64
 * or hex, an unknown enum name (unless PBJSON_IGNORE_UNKNOWN, which then
 * leaves the field at its default, or drops the item of a repeated field),
 * a proto2 required field missing or null, messages nested deeper than 64
 * are ERR_INVALID with the JSON path of the value: "samples[3].stackIndex:
 * 4294967296 is out of range for int32" (members by their JSON names,
 * "<MessageName>: ..." for the top level).  Strings are UTF-8, as the
 * JSON reader (base/json.h) checks every string.
 *
 * Ownership: a decoded message and everything it points to live in the
 * caller's arena, including copies of its strings; the parse tree is
 * never referenced.  Encoding appends to the caller's buffer.  Threading:
 * none; calls share nothing.  Reals go through strtod() and "%g", so the
 * process keeps the C locale's decimal point (unhex never calls
 * setlocale()).
 */
#ifndef UNHEX_PROTO_PBJSON_H
#define UNHEX_PROTO_PBJSON_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

struct arena;
struct buf;
struct err_msg;
struct json_value;

enum {
	/* decode: skip members that name no field, and unknown enum names */
	PBJSON_IGNORE_UNKNOWN = 1 << 0,
	/* encode: also write fields at their default (scalars, empty repeated
	 * fields as [], unset singular messages as null); oneof members and
	 * fields with explicit presence still only when set */
	PBJSON_EMIT_DEFAULTS = 1 << 1,
};

struct pbjson_hooks {
	/* May be NULL.  Returns 1 when bytes field `f` of message `d` is written as
	 * lower-case hex instead of base64 (OTLP/JSON's trace and span ids). */
	int (*bytes_as_hex)(const ProtobufCMessageDescriptor *d,
			    const ProtobufCFieldDescriptor *f, void *ctx);
	void *ctx;
};

/*
 * JSON text -> a message of type `d` allocated in `a` (which bounds memory;
 * ERR_TOO_LARGE past its cap).  Accepts the proto3 JSON name (lowerCamel)
 * and the original field name of every field; 64-bit integers as numbers
 * or decimal strings; enums by name or number; bytes as standard or
 * URL-safe base64 (hex where the hook says so); null as the default;
 * unknown fields ERR_INVALID unless flags has PBJSON_IGNORE_UNKNOWN.
 * ERR_INVALID with a located message (field path) on anything else.
 *
 * `json` (len bytes) is borrowed; `hooks` may be NULL.  The parse tree
 * lives in a temporary arena for the call, capped at json_mem_bound(len)
 * and at what `a` may still hold.  *out is set only on success.
 */
int pbjson_decode(const ProtobufCMessageDescriptor *d, const void *json, size_t len,
		  const struct pbjson_hooks *hooks, unsigned flags, struct arena *a,
		  ProtobufCMessage **out, struct err_msg *msg);

/*
 * The same from an already parsed tree (for callers that must look at the
 * document first).  `v` is borrowed (a tree from json_parse(); nothing of
 * it is referenced by the result).
 */
int pbjson_decode_value(const ProtobufCMessageDescriptor *d, const struct json_value *v,
			const struct pbjson_hooks *hooks, unsigned flags, struct arena *a,
			ProtobufCMessage **out, struct err_msg *msg);

/*
 * A message -> proto3 JSON appended to `out` (lowerCamel names; 64-bit
 * integers as strings; default-valued scalars and empty repeated fields
 * omitted unless flags has PBJSON_EMIT_DEFAULTS; enums by name).  ERR_TOO_LARGE
 * past the buffer's cap (or messages nested deeper than 64), ERR_NOMEM; on
 * failure `out` is as it was.  Fields are written in field-number order.
 * A string that is not UTF-8 (protobuf-c does not check the wire) has each
 * bad byte written as U+FFFD.  `m` is borrowed.
 */
int pbjson_encode(const ProtobufCMessage *m, const struct pbjson_hooks *hooks,
		  unsigned flags, struct buf *out);

/*
 * For callers that look at a document before decoding it: the field of `d`
 * that JSON member `key` names (by its JSON name or its field name), or
 * NULL; and the JSON name of `f` in dst (cap bytes, cut if longer).
 */
const ProtobufCFieldDescriptor *pbjson_field(const ProtobufCMessageDescriptor *d, const char *key);
const char *pbjson_json_name(const ProtobufCFieldDescriptor *f, char *dst, size_t cap);

/* A protobuf-c allocator that allocates from `a` (frees are no-ops); `a` is borrowed. */
void pbjson_arena_allocator(struct arena *a, ProtobufCAllocator *out);

/*
 * A Connect unary request body in either codec: binary protobuf (proto
 * != 0) unpacked into `a`, or proto3 JSON decoded with unknown fields
 * ignored; an empty body is the empty message.  ERR_INVALID (not a valid
 * message, with its type named), ERR_TOO_LARGE (past the arena's cap).
 */
int pbjson_read_message(const ProtobufCMessageDescriptor *d, int proto, const void *body,
			size_t len, struct arena *a, ProtobufCMessage **out, struct err_msg *msg);

/* `m` appended to out as packed protobuf (proto != 0) or as JSON with `flags`. */
int pbjson_write_message(const ProtobufCMessage *m, int proto, unsigned flags, struct buf *out);

#endif
