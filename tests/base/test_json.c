/*
 * test_json.c - the strict JSON reader of base/json.c: the tree of valid
 * documents, the exact message of each class of invalid input, every
 * truncated prefix of valid documents, UTF-8 edge cases, duplicate keys,
 * depth, the integer and double helpers, and memory linear in the input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/json.h"

/* The tree part of the reader's bound (json.h): 17 bytes per byte + 1024. */
static size_t tree_bound(size_t len)
{
	return 17 * len + 1024;
}

/* Parses `len` bytes into a fresh uncapped arena; the caller releases it. */
static int parse_n(const char *s, size_t len, struct arena *a, struct json_value **v,
		   struct err_msg *msg)
{
	arena_init(a, 1 << 30);
	err_clear(msg);
	return json_parse(s, len, a, v, msg);
}

static int parse(const char *s, struct arena *a, struct json_value **v, struct err_msg *msg)
{
	return parse_n(s, strlen(s), a, v, msg);
}

/* Asserts that `s` parses; returns the tree in `a`. */
static struct json_value *ok(const char *s, struct arena *a)
{
	struct err_msg msg;
	struct json_value *v = NULL;

	if (parse(s, a, &v, &msg))
		fail_msg("'%s' refused: %s", s, msg.text);
	return v;
}

/* Asserts that the `len` bytes at `s` fail with exactly `want` (code and message). */
static void bad_n(const char *s, size_t len, int code, const char *want)
{
	struct arena a;
	struct err_msg msg;
	struct json_value *v = (struct json_value *)&a;
	int rc = parse_n(s, len, &a, &v, &msg);

	if (rc != code || strcmp(msg.text, want))
		fail_msg("'%.*s': got %d \"%s\", want %d \"%s\"", (int)len, s, rc, msg.text, code,
			 want);
	assert_ptr_equal(v, (struct json_value *)&a); /* untouched */
	arena_release(&a);
}

static void bad(const char *s, const char *want)
{
	bad_n(s, strlen(s), ERR_INVALID, want);
}

/* ---- valid documents ------------------------------------------------------ */

static void test_scalars(void **state)
{
	struct arena a;
	struct json_value *v;
	static const char *numbers[] = { "0", "-0", "7", "-12", "1.5", "-0.25", "1e3", "1E+3",
					 "2e-3", "1.5E-300", "123456789012345678901234567890" };
	(void)state;

	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		v = ok(numbers[i], &a);
		assert_int_equal(v->type, JSON_NUMBER);
		assert_string_equal(v->str, numbers[i]);
		assert_int_equal(v->len, strlen(numbers[i]));
		arena_release(&a);
	}
	v = ok(" true ", &a);
	assert_int_equal(v->type, JSON_BOOL);
	assert_int_equal(v->boolean, 1);
	arena_release(&a);
	v = ok("false", &a);
	assert_int_equal(v->type, JSON_BOOL);
	assert_int_equal(v->boolean, 0);
	arena_release(&a);
	v = ok("\t\r\nnull\n", &a);
	assert_int_equal(v->type, JSON_NULL);
	arena_release(&a);
	v = ok("\"\"", &a);
	assert_int_equal(v->type, JSON_STRING);
	assert_int_equal(v->len, 0);
	assert_string_equal(v->str, "");
	arena_release(&a);
	/* Every escape, and raw UTF-8 kept as it is. */
	v = ok("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20AC\\ud83d\\ude00\\u001f caf\xc3\xa9\"", &a);
	assert_int_equal(v->type, JSON_STRING);
	assert_string_equal(v->str, "\"\\/\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x1f caf\xc3\xa9");
	assert_int_equal(v->len, strlen(v->str));
	arena_release(&a);
}

static void test_containers(void **state)
{
	struct arena a;
	struct json_value *v;
	const struct json_value *x;
	(void)state;

	v = ok(" {\"a\": [1, -2.5e+3, true, false, null, \"s\"], \"b\": {}, \"c\": [], "
	       "\"d\": {\"e\": [[], [{}]]}, \"\": 0} ", &a);
	assert_int_equal(v->type, JSON_OBJECT);
	assert_int_equal(v->n, 5);
	assert_string_equal(v->keys[0], "a");
	assert_string_equal(v->keys[1], "b");
	assert_string_equal(v->keys[2], "c");
	assert_string_equal(v->keys[3], "d");
	assert_string_equal(v->keys[4], "");
	x = json_get(v, "a");
	assert_ptr_equal(x, &v->items[0]);
	assert_int_equal(x->type, JSON_ARRAY);
	assert_int_equal(x->n, 6);
	assert_null(x->keys);
	assert_int_equal(x->items[0].type, JSON_NUMBER);
	assert_string_equal(x->items[0].str, "1");
	assert_string_equal(x->items[1].str, "-2.5e+3");
	assert_int_equal(x->items[2].type, JSON_BOOL);
	assert_int_equal(x->items[2].boolean, 1);
	assert_int_equal(x->items[3].boolean, 0);
	assert_int_equal(x->items[4].type, JSON_NULL);
	assert_int_equal(x->items[5].type, JSON_STRING);
	assert_string_equal(x->items[5].str, "s");
	x = json_get(v, "b");
	assert_int_equal(x->type, JSON_OBJECT);
	assert_int_equal(x->n, 0);
	x = json_get(v, "c");
	assert_int_equal(x->type, JSON_ARRAY);
	assert_int_equal(x->n, 0);
	x = json_get(json_get(v, "d"), "e");
	assert_int_equal(x->type, JSON_ARRAY);
	assert_int_equal(x->n, 2);
	assert_int_equal(x->items[0].n, 0);
	assert_int_equal(x->items[1].n, 1);
	assert_int_equal(x->items[1].items[0].type, JSON_OBJECT);
	assert_int_equal(x->items[1].items[0].n, 0);
	assert_string_equal(json_get(v, "")->str, "0");
	assert_null(json_get(v, "zz"));
	assert_null(json_get(x, "a"));  /* not an object */
	assert_null(json_get(NULL, "a"));
	arena_release(&a);
	/* A key with escapes is looked up by its unescaped text. */
	v = ok("{\"\\u0061\\n\":1}", &a);
	assert_non_null(json_get(v, "a\n"));
	arena_release(&a);
	/* Whitespace everywhere the grammar allows it. */
	v = ok("\n[\t1 ,\r{ \"k\" :\n[ ] } , \"x\" ]\n", &a);
	assert_int_equal(v->n, 3);
	assert_int_equal(v->items[1].items[0].type, JSON_ARRAY);
	arena_release(&a);
	assert_string_equal(json_type_name(JSON_NULL), "null");
	assert_string_equal(json_type_name(JSON_BOOL), "a boolean");
	assert_string_equal(json_type_name(JSON_NUMBER), "a number");
	assert_string_equal(json_type_name(JSON_STRING), "a string");
	assert_string_equal(json_type_name(JSON_ARRAY), "an array");
	assert_string_equal(json_type_name(JSON_OBJECT), "an object");
}

/* ---- invalid documents ---------------------------------------------------- */

static void test_invalid(void **state)
{
	static const struct {
		const char *doc, *msg;
	} cases[] = {
		/* structure */
		{ "}", "json: at byte 0: unexpected character '}'" },
		{ "[1,]", "json: at byte 3: unexpected character ']'" },
		{ "[,1]", "json: at byte 1: unexpected character ','" },
		{ "[1 2]", "json: at byte 3: expected ',' or ']'" },
		{ "[1}", "json: at byte 2: expected ',' or ']'" },
		{ "[}", "json: at byte 1: unexpected character '}'" },
		{ "{\"a\":1]", "json: at byte 6: expected ',' or '}'" },
		{ "{\"a\"}", "json: at byte 4: expected ':' after an object key" },
		{ "{\"a\" 1}", "json: at byte 5: expected ':' after an object key" },
		{ "{\"a\":}", "json: at byte 5: unexpected character '}'" },
		{ "{a:1}", "json: at byte 1: expected a string (an object key)" },
		{ "{1:1}", "json: at byte 1: expected a string (an object key)" },
		{ "{\"a\":1,}", "json: at byte 7: expected a string (an object key)" },
		{ "{,}", "json: at byte 1: expected a string (an object key)" },
		{ "[1] x", "json: at byte 4: unexpected data after the document" },
		{ "{\"a\":1}}", "json: at byte 7: unexpected data after the document" },
		{ "1 2", "json: at byte 2: unexpected data after the document" },
		{ "[1]]", "json: at byte 3: unexpected data after the document" },
		{ "\xef\xbb\xbf{}", "json: at byte 0: unexpected byte 0xef" },
		{ "/* c */ 1", "json: at byte 0: unexpected character '/'" },
		{ "'a'", "json: at byte 0: unexpected character '''" },
		{ "\x01", "json: at byte 0: unexpected byte 0x01" },
		{ "[\v]", "json: at byte 1: unexpected byte 0x0b" },
		/* literals */
		{ "tru", "json: at byte 3: unexpected end of input" },
		{ "trUe", "json: at byte 0: invalid literal (want true)" },
		{ "[nul]", "json: at byte 1: invalid literal (want null)" },
		{ "fals e", "json: at byte 0: invalid literal (want false)" },
		{ "True", "json: at byte 0: unexpected character 'T'" },
		{ "nan", "json: at byte 0: invalid literal (want null)" },
		{ "truex", "json: at byte 4: unexpected data after the document" },
		/* numbers */
		{ "01", "json: at byte 0: invalid number (leading zero)" },
		{ "-01", "json: at byte 1: invalid number (leading zero)" },
		{ "[00]", "json: at byte 1: invalid number (leading zero)" },
		{ "+1", "json: at byte 0: unexpected character '+'" },
		{ ".5", "json: at byte 0: unexpected character '.'" },
		{ "-", "json: at byte 1: unexpected end of input" },
		{ "-a", "json: at byte 1: invalid number (no digit after '-')" },
		{ "1.", "json: at byte 2: unexpected end of input" },
		{ "1.e5", "json: at byte 2: invalid number (no digit after '.')" },
		{ "[1.]", "json: at byte 3: invalid number (no digit after '.')" },
		{ "1e", "json: at byte 2: unexpected end of input" },
		{ "1e+", "json: at byte 3: unexpected end of input" },
		{ "[1e]", "json: at byte 3: invalid number (no digit in the exponent)" },
		{ "1e+-1", "json: at byte 3: invalid number (no digit in the exponent)" },
		{ "0x10", "json: at byte 1: unexpected data after the document" },
		{ "1.5.2", "json: at byte 3: unexpected data after the document" },
		{ "Infinity", "json: at byte 0: unexpected character 'I'" },
		{ "-Infinity", "json: at byte 1: invalid number (no digit after '-')" },
		/* strings */
		{ "\"abc", "json: at byte 4: unexpected end of input" },
		{ "\"a\tb\"", "json: at byte 2: control character 0x09 in a string" },
		{ "\"a\nb\"", "json: at byte 2: control character 0x0a in a string" },
		{ "\"\x1f\"", "json: at byte 1: control character 0x1f in a string" },
		{ "\"\\x\"", "json: at byte 1: invalid escape \\x" },
		{ "\"\\U0041\"", "json: at byte 1: invalid escape \\U" },
		{ "\"ab\\'\"", "json: at byte 3: invalid escape \\'" },
		{ "\"\\\x01\"", "json: at byte 1: invalid escape (byte 0x01 after \\)" },
		{ "\"\\u12g4\"", "json: at byte 1: invalid \\u escape (want 4 hex digits)" },
		{ "\"\\u12\"", "json: at byte 1: invalid \\u escape (want 4 hex digits)" },
		{ "\"\\u0000\"", "json: at byte 1: \\u0000 in a string (strings are C strings here)" },
		{ "\"a\\u0000b\"", "json: at byte 2: \\u0000 in a string (strings are C strings here)" },
		{ "\"'a'\" \"b\"", "json: at byte 6: unexpected data after the document" },
		{ "[\"a\" \"b\"]", "json: at byte 5: expected ',' or ']'" },
		/* depth (more in test_depth) */
		{ "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
		  "json: at byte 32: nesting deeper than 32" },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bad(cases[i].doc, cases[i].msg);
	/* Empty and blank input. */
	bad("", "json: at byte 0: unexpected end of input");
	bad(" \n\t\r", "json: at byte 4: unexpected end of input");
	/* A NUL byte is a byte like any other: not JSON outside strings, a control inside. */
	bad_n("[1]\0", 4, ERR_INVALID, "json: at byte 3: unexpected data after the document");
	bad_n("\"a\0\"", 4, ERR_INVALID, "json: at byte 2: control character 0x00 in a string");
}

/* ---- truncation ----------------------------------------------------------- */

/*
 * Every prefix of each document fails with "unexpected end of input" at its
 * own length, except the prefixes listed, which are complete documents
 * themselves: numbers that end early at the top level, and the document
 * without its trailing whitespace.
 */
static void test_truncated(void **state)
{
	static const struct {
		const char *doc;
		size_t valid[8]; /* prefix lengths that parse; 0 ends the list */
	} docs[] = {
		{ "{\"a\": [1, -2.5e+3, true, false, null, \"s\\u00e9\\ud83d\\ude00\\n\"], "
		  "\"b\": {}, \"c\": [], \"d\": {\"e\": \"\\\"\\\\\\/\"}} ", { 103 } },
		{ "-12.5e+10", { 2, 3, 5, 8 } },
		{ "0", { 0 } },
		{ "10.25", { 1, 2, 4 } },
		{ "\"caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac \xdf\xbf\"", { 0 } },
		{ "[[[]],{\"\":{}},[\"\\u0041\"]]", { 0 } },
		{ "true", { 0 } },
		{ "false", { 0 } },
		{ "null", { 0 } },
		{ "  [ 0 , 10 ]  \n", { 12, 13, 14 } },
		{ "{\"k\\u00e9y\":{\"x\":[1e5,2E-5,{\"y\":null}]}}", { 0 } },
	};
	(void)state;

	for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
		const char *doc = docs[d].doc;
		size_t len = strlen(doc);
		struct arena a;
		struct json_value *v;
		struct err_msg msg;

		assert_int_equal(parse(doc, &a, &v, &msg), 0);
		arena_release(&a);
		for (size_t cut = 0; cut < len; cut++) {
			int valid = 0;
			char want[64];

			for (size_t k = 0; k < 8 && docs[d].valid[k]; k++)
				valid |= docs[d].valid[k] == cut;
			if (valid) {
				if (parse_n(doc, cut, &a, &v, &msg))
					fail_msg("doc %zu cut %zu: refused: %s", d, cut, msg.text);
				arena_release(&a);
				continue;
			}
			snprintf(want, sizeof(want), "json: at byte %zu: unexpected end of input", cut);
			bad_n(doc, cut, ERR_INVALID, want);
		}
	}
}

/* ---- UTF-8 ------------------------------------------------------------------ */

static void test_utf8(void **state)
{
	/* The first and last code point of every length, and around the surrogates. */
	static const char *const good[] = {
		"\x7f", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80",
		"\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xf3\xbf\xbf\xbf",
	};
	static const struct {
		const char *bytes, *msg;
	} badseq[] = {
		{ "\x80", "invalid UTF-8: continuation byte 0x80 without a lead byte" },
		{ "\xbf", "invalid UTF-8: continuation byte 0xbf without a lead byte" },
		{ "\xc0\x80", "invalid UTF-8: overlong encoding" },
		{ "\xc1\xbf", "invalid UTF-8: overlong encoding" },
		{ "\xe0\x80\x80", "invalid UTF-8: overlong encoding" },
		{ "\xe0\x9f\xbf", "invalid UTF-8: overlong encoding" },
		{ "\xf0\x80\x80\x80", "invalid UTF-8: overlong encoding" },
		{ "\xf0\x8f\xbf\xbf", "invalid UTF-8: overlong encoding" },
		{ "\xed\xa0\x80", "invalid UTF-8: encoded surrogate" },
		{ "\xed\xbf\xbf", "invalid UTF-8: encoded surrogate" },
		{ "\xf4\x90\x80\x80", "invalid UTF-8: code point above U+10FFFF" },
		{ "\xf5\x80\x80\x80", "invalid UTF-8: code point above U+10FFFF" },
		{ "\xf7\xbf\xbf\xbf", "invalid UTF-8: code point above U+10FFFF" },
		{ "\xf8\x88\x80\x80\x80", "invalid UTF-8: byte 0xf8" },
		{ "\xfe", "invalid UTF-8: byte 0xfe" },
		{ "\xff", "invalid UTF-8: byte 0xff" },
		{ "\xc2\x41", "invalid UTF-8: truncated sequence" },
		{ "\xe1\x80\x41", "invalid UTF-8: truncated sequence" },
		{ "\xf1\x80\x80\xc0", "invalid UTF-8: truncated sequence" },
		{ "\xe1\x80", "invalid UTF-8: truncated sequence" }, /* then the closing quote */
	};
	static const struct {
		const char *esc, *utf8;
	} pairs[] = {
		{ "\\u007f", "\x7f" }, { "\\u0080", "\xc2\x80" }, { "\\u07FF", "\xdf\xbf" },
		{ "\\u0800", "\xe0\xa0\x80" }, { "\\ud7ff", "\xed\x9f\xbf" },
		{ "\\ue000", "\xee\x80\x80" }, { "\\uffff", "\xef\xbf\xbf" },
		{ "\\ud800\\udc00", "\xf0\x90\x80\x80" }, { "\\uDBFF\\uDFFF", "\xf4\x8f\xbf\xbf" },
	};
	static const struct {
		const char *doc, *msg;
	} lone[] = {
		{ "\"\\ud800\"", "json: at byte 1: unpaired surrogate \\ud800" },
		{ "\"\\udbff x\"", "json: at byte 1: unpaired surrogate \\udbff" },
		{ "\"\\udc00\"", "json: at byte 1: unpaired surrogate \\udc00" },
		{ "\"a\\udfff\\ud800\"", "json: at byte 2: unpaired surrogate \\udfff" },
		{ "\"\\ud800\\ud800\"", "json: at byte 1: unpaired surrogate \\ud800" },
		{ "\"\\ud800\\u0041\"", "json: at byte 1: unpaired surrogate \\ud800" },
		{ "\"\\ud800\\n\"", "json: at byte 1: unpaired surrogate \\ud800" },
		{ "\"\\ud800\\uzzzz\"", "json: at byte 7: invalid \\u escape (want 4 hex digits)" },
	};
	char doc[64], want[128];
	struct arena a;
	struct json_value *v;
	(void)state;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(doc, sizeof(doc), "\"x%s\"", good[i]);
		v = ok(doc, &a);
		assert_string_equal(v->str + 1, good[i]);
		arena_release(&a);
		assert_int_equal(json_utf8_valid(good[i], strlen(good[i])), 1);
	}
	for (size_t i = 0; i < sizeof(badseq) / sizeof(badseq[0]); i++) {
		snprintf(doc, sizeof(doc), "\"ab%s\"", badseq[i].bytes);
		snprintf(want, sizeof(want), "json: at byte 3: %s", badseq[i].msg);
		bad(doc, want);
		assert_int_equal(json_utf8_valid(badseq[i].bytes, strlen(badseq[i].bytes)), 0);
	}
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		snprintf(doc, sizeof(doc), "\"%s\"", pairs[i].esc);
		v = ok(doc, &a);
		assert_string_equal(v->str, pairs[i].utf8);
		arena_release(&a);
	}
	for (size_t i = 0; i < sizeof(lone) / sizeof(lone[0]); i++)
		bad(lone[i].doc, lone[i].msg);
	/* Outside strings a non-ASCII byte is just not JSON. */
	bad("[\xc3\xa9]", "json: at byte 1: unexpected byte 0xc3");
	/* Keys are checked like any string. */
	bad("{\"\xc3\x28\":1}", "json: at byte 2: invalid UTF-8: truncated sequence");
	assert_int_equal(json_utf8_valid("", 0), 1);
	assert_int_equal(json_utf8_valid("\xe2\x82", 2), 0);
	/* Cleaning keeps UTF-8 and replaces each byte that starts no sequence. */
	{
		static const struct {
			const char *in, *out;
		} cl[] = {
			{ "abc", "abc" },
			{ "\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9" },
			{ "a\xff" "b", "a\xef\xbf\xbd" "b" },
			{ "\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd" },
			{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* a surrogate */
			{ "\xf0\x9f\x98\x80!", "\xf0\x9f\x98\x80!" },
		};
		char out[64];

		for (size_t i = 0; i < sizeof(cl) / sizeof(cl[0]); i++) {
			size_t n = json_utf8_clean(cl[i].in, strlen(cl[i].in), out);

			out[n] = '\0';
			assert_string_equal(out, cl[i].out);
			assert_int_equal(json_utf8_valid(out, n), 1);
		}
	}
}

/* ---- duplicate keys ------------------------------------------------------- */

static void test_duplicates(void **state)
{
	struct arena a;
	struct buf_like {
		char s[4096];
		size_t n;
	} b;
	(void)state;

	bad("{\"a\":1,\"a\":2}", "json: at byte 7: duplicate key \"a\"");
	bad("{\"a\":1,\"b\":2,\"\\u0061\":3}", "json: at byte 13: duplicate key \"a\"");
	bad("{\"\":1,\"\":2}", "json: at byte 6: duplicate key \"\"");
	/* Commas, brackets and quotes inside earlier members do not confuse the position. */
	bad("{\"a\":\"x,]\\\"{\",\"b\":[1,{\"c\":2}],\"a\":3}",
	    "json: at byte 30: duplicate key \"a\"");
	/* Nested: the inner object is checked when it closes. */
	bad("[{\"x\":{\"k\":1,\"k\":2}}]", "json: at byte 13: duplicate key \"k\"");
	/* The first key that repeats an earlier one is reported. */
	bad("{\"a\":1,\"b\":2,\"b\":3,\"a\":4}", "json: at byte 13: duplicate key \"b\"");
	/* A long key is cut in the message. */
	bad("{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1,"
	    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":2}",
	    "json: at byte 56: duplicate key \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\"");
	/* Equal keys in different objects are fine, and so are keys equal but for case. */
	ok("[{\"a\":1},{\"a\":2,\"b\":{\"a\":3}},{\"A\":1,\"a\":2}]", &a);
	arena_release(&a);
	/* A big object goes through the hash table: distinct keys pass... */
	b.n = (size_t)sprintf(b.s, "{");
	for (int i = 0; i < 300; i++)
		b.n += (size_t)sprintf(b.s + b.n, "%s\"k%d\":%d", i ? "," : "", i, i);
	strcpy(b.s + b.n, "}");
	assert_non_null(json_get(ok(b.s, &a), "k299"));
	arena_release(&a);
	/* ...and the first repeat is found, here of a key far back. */
	strcpy(b.s + b.n, ",\"k7\":1,\"k3\":1}");
	{
		char want[64];

		snprintf(want, sizeof(want), "json: at byte %zu: duplicate key \"k7\"", b.n + 1);
		bad(b.s, want);
	}
}

/* ---- depth ---------------------------------------------------------------- */

static void test_depth(void **state)
{
	char doc[256];
	struct arena a;
	struct json_value *v;
	size_t n = 0;
	(void)state;

	/* JSON_MAX_DEPTH levels, objects and arrays mixed, are fine. */
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		n += (size_t)sprintf(doc + n, i % 2 ? "[" : "{\"k\":");
	doc[n++] = '1';
	for (int i = JSON_MAX_DEPTH - 1; i >= 0; i--)
		doc[n++] = i % 2 ? ']' : '}';
	doc[n] = '\0';
	v = ok(doc, &a);
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		v = &v->items[0];
	assert_int_equal(v->type, JSON_NUMBER);
	arena_release(&a);
	/* One more is refused where it opens, however long the rest. */
	memset(doc, '[', 200);
	doc[200] = '\0';
	bad(doc, "json: at byte 32: nesting deeper than 32");
	memcpy(doc, "{\"k\":", 5);
	bad(doc, "json: at byte 36: nesting deeper than 32");
}

/* ---- integers and doubles -------------------------------------------------- */

struct num_case {
	const char *doc;  /* one JSON value */
	int rc;
	const char *want; /* the value (printed) or the message */
};

static void check_numbers(const struct num_case *c, size_t n, int kind)
{
	for (size_t i = 0; i < n; i++) {
		struct arena a;
		struct err_msg msg = { { 0 } };
		struct json_value *v = ok(c[i].doc, &a);
		char got[128];
		int rc;

		if (kind == 's') {
			int64_t x = 42;

			rc = json_int64(v, &x, &msg);
			snprintf(got, sizeof(got), "%" PRId64, x);
		} else if (kind == 'u') {
			uint64_t x = 42;

			rc = json_uint64(v, &x, &msg);
			snprintf(got, sizeof(got), "%" PRIu64, x);
		} else {
			double x = 42;

			rc = json_double(v, &x, &msg);
			snprintf(got, sizeof(got), "%.17g", x);
		}
		if (rc != c[i].rc || strcmp(rc ? msg.text : got, c[i].want))
			fail_msg("%c %s: got %d \"%s\" / %s, want %d \"%s\"", kind, c[i].doc, rc, msg.text,
				 got, c[i].rc, c[i].want);
		if (rc)
			assert_string_equal(got, "42"); /* untouched */
		arena_release(&a);
	}
}

static void test_int64(void **state)
{
	static const struct num_case c[] = {
		{ "0", 0, "0" },
		{ "-0", 0, "0" },
		{ "\"-0\"", 0, "0" },
		{ "9223372036854775807", 0, "9223372036854775807" },
		{ "-9223372036854775808", 0, "-9223372036854775808" },
		{ "\"-9223372036854775808\"", 0, "-9223372036854775808" },
		{ "1e3", 0, "1000" },
		{ "1E+3", 0, "1000" },
		{ "\"1e3\"", 0, "1000" },
		{ "1.0", 0, "1" },
		{ "10.50e1", 0, "105" },
		{ "100e-2", 0, "1" },
		{ "0.0012e4", 0, "12" },
		{ "0e999999999999", 0, "0" },
		{ "9.223372036854775807e18", 0, "9223372036854775807" },
		{ "92233720368547758070e-1", 0, "9223372036854775807" },
		{ "9223372036854775808", ERR_INVALID, "9223372036854775808 is out of range for int64" },
		{ "-9223372036854775809", ERR_INVALID,
		  "-9223372036854775809 is out of range for int64" },
		{ "1e19", ERR_INVALID, "10000000000000000000 is out of range for int64" },
		{ "18446744073709551616", ERR_INVALID,
		  "18446744073709551616 is out of range for a 64-bit integer" },
		{ "1e20", ERR_INVALID, "1e20 is out of range for a 64-bit integer" },
		{ "1e999999999999", ERR_INVALID, "1e999999999999 is out of range for a 64-bit integer" },
		{ "1.5", ERR_INVALID, "not an integer: \"1.5\"" },
		{ "1e-1", ERR_INVALID, "not an integer: \"1e-1\"" },
		{ "1e-999999999999", ERR_INVALID, "not an integer: \"1e-999999999999\"" },
		{ "\"\"", ERR_INVALID, "not an integer: \"\"" },
		{ "\" 1\"", ERR_INVALID, "not an integer: \" 1\"" },
		{ "\"1 \"", ERR_INVALID, "not an integer: \"1 \"" },
		{ "\"+1\"", ERR_INVALID, "not an integer: \"+1\"" },
		{ "\"01\"", ERR_INVALID, "not an integer: \"01\"" },
		{ "\"0x10\"", ERR_INVALID, "not an integer: \"0x10\"" },
		{ "\"1e\"", ERR_INVALID, "not an integer: \"1e\"" },
		{ "\"abc\\n\"", ERR_INVALID, "not an integer: \"abc?\"" },
		{ "true", ERR_INVALID, "not an integer (want a number or a decimal string, got a boolean)" },
		{ "null", ERR_INVALID, "not an integer (want a number or a decimal string, got null)" },
		{ "[]", ERR_INVALID, "not an integer (want a number or a decimal string, got an array)" },
		{ "{}", ERR_INVALID, "not an integer (want a number or a decimal string, got an object)" },
	};
	(void)state;
	check_numbers(c, sizeof(c) / sizeof(c[0]), 's');
}

static void test_uint64(void **state)
{
	static const struct num_case c[] = {
		{ "0", 0, "0" },
		{ "-0", 0, "0" },
		{ "-0.0e5", 0, "0" },
		{ "18446744073709551615", 0, "18446744073709551615" },
		{ "\"18446744073709551615\"", 0, "18446744073709551615" },
		{ "1.8446744073709551615e19", 0, "18446744073709551615" },
		{ "18446744073709551616", ERR_INVALID,
		  "18446744073709551616 is out of range for a 64-bit integer" },
		{ "-1", ERR_INVALID, "-1 is negative (want an unsigned integer)" },
		{ "\"-5\"", ERR_INVALID, "-5 is negative (want an unsigned integer)" },
		{ "2.5", ERR_INVALID, "not an integer: \"2.5\"" },
		{ "\"x\"", ERR_INVALID, "not an integer: \"x\"" },
	};
	(void)state;
	check_numbers(c, sizeof(c) / sizeof(c[0]), 'u');
}

static void test_double(void **state)
{
	static const struct num_case c[] = {
		{ "0", 0, "0" },
		{ "0.1", 0, "0.10000000000000001" },
		{ "\"0.1\"", 0, "0.10000000000000001" },
		{ "-2.5e-3", 0, "-0.0025000000000000001" },
		{ "1.7976931348623157e308", 0, "1.7976931348623157e+308" },
		{ "4.9e-324", 0, "4.9406564584124654e-324" },
		{ "1e-400", 0, "0" },
		{ "123456789012345678901234567890", 0, "1.2345678901234568e+29" },
		{ "\"NaN\"", 0, "nan" },
		{ "\"Infinity\"", 0, "inf" },
		{ "\"-Infinity\"", 0, "-inf" },
		{ "1e309", ERR_INVALID, "1e309 is out of range for a double" },
		{ "\"-1e999\"", ERR_INVALID, "-1e999 is out of range for a double" },
		{ "\"nan\"", ERR_INVALID, "not a number: \"nan\"" },
		{ "\"inf\"", ERR_INVALID, "not a number: \"inf\"" },
		{ "\"0x1p3\"", ERR_INVALID, "not a number: \"0x1p3\"" },
		{ "\" 1\"", ERR_INVALID, "not a number: \" 1\"" },
		{ "\"\"", ERR_INVALID, "not a number: \"\"" },
		{ "false", ERR_INVALID, "not a number (want a number or a numeric string, got a boolean)" },
	};
	struct arena a;
	double x;
	(void)state;

	check_numbers(c, sizeof(c) / sizeof(c[0]), 'd');
	/* -0 keeps its sign. */
	assert_int_equal(json_double(ok("-0", &a), &x, NULL), 0);
	assert_true(x == 0 && signbit(x));
	arena_release(&a);
	assert_int_equal(json_double(ok("\"-0.0\"", &a), &x, NULL), 0);
	assert_true(x == 0 && signbit(x));
	arena_release(&a);
}

/* ---- memory --------------------------------------------------------------- */

/* A document of n values of one shape, in a malloc'd NUL-terminated string. */
static char *shape(int kind, size_t n, size_t *len)
{
	size_t cap = n * 48 + 64, w = 0;
	char *s = malloc(cap);

	assert_non_null(s);
	w += (size_t)sprintf(s, kind == 'x' ? "{\"x\":[" : kind == 'o' ? "{" : "[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			s[w++] = ',';
		switch (kind) {
		case 'n': /* the densest: one-digit numbers */
		case 'x': /* test_otlp_json.c's bomb: {"x":[0,0,...]} */
			s[w++] = '0';
			break;
		case 's': /* short strings */
			w += (size_t)sprintf(s + w, "\"ab\"");
			break;
		case 'a': /* arrays of one number */
			w += (size_t)sprintf(s + w, "[1]");
			break;
		case 'e': /* empty arrays: no tree, only the count table */
			w += (size_t)sprintf(s + w, "[]");
			break;
		case 'o': /* an object of n members: keys and the hash table */
			w += (size_t)sprintf(s + w, "\"%zx\":0", i);
			break;
		case 'm': /* what OTLP looks like */
			w += (size_t)sprintf(s + w, "{\"stackIndex\":%zu,\"values\":[\"3\",4]}", i % 1000);
			break;
		}
	}
	w += (size_t)sprintf(s + w, kind == 'x' ? "]}" : kind == 'o' ? "}" : "]");
	*len = w;
	return s;
}

/*
 * For every shape and growing n: the document parses under a cap of
 * json_mem_bound(len), and the tree takes at most 17 bytes per byte + 1024.
 * The ratios are printed (tree bytes per input byte).
 */
static void test_memory_linear(void **state)
{
	static const int kinds[] = { 'n', 's', 'a', 'e', 'o', 'm', 'x' };
	static const size_t sizes[] = { 1, 10, 1000, 100000, 1000000 };
	(void)state;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
			size_t n = kinds[k] == 'x' && z == 4 ? 3000000 : sizes[z], len;
			char *doc = shape(kinds[k], n, &len);
			struct arena a;
			struct err_msg msg = { { 0 } };
			struct json_value *v;
			int rc;

			arena_init(&a, json_mem_bound(len));
			rc = json_parse(doc, len, &a, &v, &msg);
			if (rc)
				fail_msg("%c n=%zu: %s", kinds[k], n, msg.text);
			assert_int_equal(kinds[k] == 'x' ? v->items[0].n : v->n, n);
			if (a.used > tree_bound(len) + 16 && a.used > 65536)
				fail_msg("%c n=%zu: %zu bytes of tree for %zu bytes", kinds[k], n, a.used, len);
			if (n >= 100000)
				print_message("json: shape %c, n=%zu: %zu bytes -> %zu tree bytes (%.2f per byte)\n",
					      kinds[k], n, len, a.used, (double)a.used / (double)len);
			arena_release(&a);
			free(doc);
		}
	}
}

/*
 * A cap below what the tree needs: ERR_TOO_LARGE, *out untouched.  The
 * tree of 100000 one-digit numbers is 32 * 100001 bytes of values and
 * 200002 of text; 256 bytes of the cap hold the count table.
 */
static void test_memory_cap(void **state)
{
	size_t len;
	char *doc = shape('n', 100000, &len);
	struct arena a;
	struct err_msg msg = { { 0 } };
	struct json_value *v = NULL;
	(void)state;

	arena_init(&a, 1 << 20);
	assert_int_equal(json_parse(doc, len, &a, &v, &msg), ERR_TOO_LARGE);
	assert_null(v);
	assert_string_equal(msg.text,
			    "json: 3400034 more bytes of memory needed, 1048320 left under the cap of 1048576");
	arena_release(&a);
	/* What is left of an arena counts, not its cap. */
	arena_init(&a, json_mem_bound(len));
	assert_non_null(arena_alloc(&a, json_mem_bound(len) - 1000));
	err_clear(&msg);
	assert_int_equal(json_parse(doc, len, &a, &v, &msg), ERR_TOO_LARGE);
	arena_release(&a);
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_int64),
		cmocka_unit_test(test_uint64),
		cmocka_unit_test(test_double),
		cmocka_unit_test(test_memory_linear),
		cmocka_unit_test(test_memory_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
