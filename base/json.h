/*
 * json.h - the one JSON reader of unhex: strict RFC 8259, into a tree in an
 * arena.
 *
 * json_parse() accepts exactly one JSON text (RFC 8259 section 2) and
 * nothing else: no comments, no trailing commas, no byte order mark, no
 * leading '+' or leading zeros, no bytes after the value but whitespace.
 * On top of the grammar it refuses
 *   - any byte sequence that is not UTF-8 (RFC 3629): overlong forms,
 *     encoded surrogates, code points above U+10FFFF, stray continuation
 *     bytes, and \u escapes of a lone surrogate (a pair must be high+low);
 *   - \u0000: every string of the tree is a C string as well;
 *   - control characters (below U+0020) inside strings, escaped or not as
 *     the RFC says;
 *   - two members of one object with the same key (RFC 8259 leaves their
 *     meaning to the reader; we have none to give them);
 *   - nesting deeper than JSON_MAX_DEPTH arrays and objects.
 * Every failure is ERR_INVALID with a message "json: at byte N: what",
 * N counting from 0.  A document cut anywhere before its end always fails
 * with "json: at byte <its length>: unexpected end of input", unless the
 * prefix is a complete document itself (a top-level number such as "12"
 * of "123", or the document without its trailing whitespace).
 *
 * Memory.  The tree lives in the caller's arena, allocated as one piece
 * whose size a first, non-allocating pass over the document computes: 32
 * bytes per value, 8 more per object member, and len + 1 bytes for the
 * text of strings and numbers.  A value takes at least two bytes of input
 * (a digit and a comma), so for any document of `len` bytes the tree takes
 * at most 17 * len + 1024 bytes of the arena.  While it runs the reader
 * also holds, on the heap, 4 bytes per array and object (8 at worst, as
 * that table grows by doubling) and, while it checks the keys of an object
 * of more than 8 members, a hash table of at most 16 bytes per member.
 * All of it counts against the arena's cap: past it the call fails with
 * ERR_TOO_LARGE.  A cap of json_mem_bound(len) = 24 * len + 2048 bytes is
 * always enough for the document; less refuses some documents of that
 * length.  Time is linear in the input.
 *
 * Threading: none; a parse uses only its arguments.
 */
#ifndef UNHEX_BASE_JSON_H
#define UNHEX_BASE_JSON_H

#include <stddef.h>
#include <stdint.h>

struct arena;
struct err_msg;

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

/* Arrays and objects nested deeper than this are refused. */
#define JSON_MAX_DEPTH 32

/*
 * One value.  Read only the members of its type: `len` and `n`, and `str`
 * and `items`, share their storage.  Everything a value points to lives in
 * the arena the tree was parsed into; a caller may edit a tree in place
 * (say, drop a member's value to JSON_NULL) before handing it on.
 */
struct json_value {
	enum json_type type;
	int boolean;                      /* BOOL: 0 or 1 */
	union {
		size_t len;               /* STRING, NUMBER: bytes of str */
		size_t n;                 /* ARRAY: items; OBJECT: members */
	};
	union {
		const char *str;          /* STRING: unescaped UTF-8; NUMBER: its text
		                           * as written; NUL-terminated either way */
		struct json_value *items; /* ARRAY: items; OBJECT: member values */
	};
	const char **keys;                /* OBJECT: member names (unescaped, NUL-
	                                   * terminated), in document order */
};

/*
 * An arena cap under which json_parse() never fails with ERR_TOO_LARGE for a
 * document of `len` bytes (on an empty arena): 24 * len + 2048, or SIZE_MAX
 * when that overflows.
 */
size_t json_mem_bound(size_t len);

/*
 * Parses the `len` bytes at `p` (borrowed; need not be NUL-terminated) into
 * a tree allocated in `a`, and sets *out to its root (owned by the arena).
 * Returns 0, ERR_INVALID (not one JSON text, see above), ERR_TOO_LARGE (the
 * tree does not fit under the arena's cap) or ERR_NOMEM, with the reason in
 * `msg` (may be NULL).  *out is untouched on failure.
 */
int json_parse(const char *p, size_t len, struct arena *a, struct json_value **out,
	       struct err_msg *msg);

/*
 * The value of member `key` (borrowed) of `obj` (borrowed; may be NULL):
 * a pointer into obj's tree, or NULL when absent or `obj` is not an object.
 * Linear in the members: a caller looking up many keys of one big object
 * walks `keys` instead.
 */
const struct json_value *json_get(const struct json_value *obj, const char *key);

/* For messages: "null", "a boolean", "a number", "a string", "an array", "an object". */
const char *json_type_name(enum json_type type);

/*
 * Reads an integer exactly (no detour through double).  `v` may be a
 * NUMBER, or a STRING holding a JSON number (proto3 JSON writes 64-bit
 * integers as strings); either may have a fraction or an exponent if its
 * value is integral ("1.0", "1e3", "-0").  Returns 0, or ERR_INVALID with
 * the reason in `msg` (may be NULL): "not an integer ...", "X is out of
 * range for int64", "-X is negative (want an unsigned integer)", or "X is
 * out of range for a 64-bit integer".  `v` is borrowed; *out is untouched
 * on failure.
 */
int json_int64(const struct json_value *v, int64_t *out, struct err_msg *msg);
int json_uint64(const struct json_value *v, uint64_t *out, struct err_msg *msg);

/*
 * Reads a double, correctly rounded: a NUMBER, or a STRING holding a JSON
 * number or one of "NaN", "Infinity", "-Infinity" (proto3 JSON's spelling
 * of what JSON numbers cannot say).  A finite number too large for a
 * double is ERR_INVALID ("X is out of range for a double"); one too small
 * becomes 0 or a subnormal.  `v` is borrowed; *out is untouched on
 * failure.  Reads with strtod(), so the process must keep the C locale's
 * decimal point (unhex never calls setlocale()).
 */
int json_double(const struct json_value *v, double *out, struct err_msg *msg);

/* 1 when the `len` bytes at `s` are UTF-8 (RFC 3629, no surrogates), else 0. */
int json_utf8_valid(const char *s, size_t len);

/*
 * Copies the `len` bytes at `s` to `out` (room for 3 * len bytes; no NUL is
 * added), every byte that starts no valid UTF-8 sequence replaced by U+FFFD;
 * returns the bytes written.  What unhex does with names that must be shown
 * but are not UTF-8 (docs/ingest.md, "Clean inputs").
 */
size_t json_utf8_clean(const char *s, size_t len, char *out);

/*
 * The path of the value being looked at ("resourceProfiles[0].scopeProfiles"),
 * for error messages of decoders that walk a parsed document.  A path longer
 * than the buffer is cut, never overflows.
 */
struct json_path {
	char s[256];
	size_t len;
};

/* Appends a printf-formatted segment; returns the length json_path_pop()
 * goes back to. */
size_t json_path_push(struct json_path *jp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void json_path_pop(struct json_path *jp, size_t old);

#endif
