/*
 * json.c - the strict JSON reader (see json.h for the contract).
 *
 * Two passes over the document.  The first (count) allocates nothing in
 * the arena: it follows strings and brackets only, and records for every
 * array and object, in document order, how many items start in it (a
 * value after '[' or ',', a key after '{' or ',').  From those counts it
 * knows the exact size of the tree, which is then allocated as one region.
 * The second pass (parse) checks the grammar, UTF-8 and escapes, and fills
 * the region: each container's items at their final place, strings and
 * numbers into a text area of len + 1 bytes at its end.
 *
 * The two passes agree on the structure of every valid prefix, because
 * both see a string from an unescaped '"' to the next one and match
 * brackets the same way; the second pass stops at the first byte the
 * grammar refuses, so it never makes more items than the first pass
 * counted.  That is asserted, and also checked, so a disagreement could
 * only ever cost an error, never memory.
 *
 * Why the bounds of json.h hold.  Every counted item has a first byte
 * that starts a value and, unless its container is still open where the
 * count pass stops (at most JSON_MAX_DEPTH are), a ',' or closing bracket
 * after it; no byte is both, and none serves two items, so the 32 bytes of
 * an item come with two bytes of input (an object member costs 40 bytes
 * but comes with at least its key's two quotes too).  The unescaped text
 * of a string plus its NUL is never longer than the string as written
 * with its quotes, and a number's text plus its NUL fits in its digits and
 * the byte after them, or the one extra byte of the text area.  The heap
 * tables are at most 8 bytes per container (two input bytes each) and 16
 * per member of one object (five input bytes each, as the object closed).
 */
#include "base/json.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/hex.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct json_value) == 32, "json.h's bound assumes 32-byte values");

/* Objects with more members than this have their keys checked through a hash table. */
enum { SMALL_OBJECT = 8 };

struct parser {
	const char *p;        /* the document (borrowed) */
	size_t len;
	size_t pos;           /* next byte to read */
	struct arena *a;
	struct err_msg *msg;
	uint32_t *counts;     /* items per container in document order (heap) */
	size_t ncounts, counts_cap;
	size_t items, members; /* totals over all containers */
	size_t ordinal;       /* containers opened so far by the parse pass */
	char *node_w, *node_end; /* the region's values and keys */
	char *text_w, *text_end; /* the region's text area */
	size_t heap;          /* heap bytes held now (counted against the cap) */
};

/* ---- errors -------------------------------------------------------------- */

static int fail_at(struct parser *ps, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(struct parser *ps, size_t at, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(ps->msg, ERR_INVALID, "json: at byte %zu: %s", at, what);
}

static int eof(struct parser *ps)
{
	return fail_at(ps, ps->len, "unexpected end of input");
}

/* What the arena may still hold, less the heap bytes we hold. */
static size_t room(const struct parser *ps)
{
	size_t cap = ps->a->cap, used = ps->a->used + ps->heap;

	return cap > used ? cap - used : 0;
}

static int too_large(struct parser *ps, size_t need)
{
	return err_set(ps->msg, ERR_TOO_LARGE,
		       "json: %zu more bytes of memory needed, %zu left under the cap of %zu", need,
		       room(ps), ps->a->cap);
}

static int nomem(struct parser *ps)
{
	return err_set(ps->msg, ERR_NOMEM, "json: out of memory");
}

/*
 * Copies at most 40 bytes of `s` for a message, whole UTF-8 sequences
 * only, control characters as '?'.
 */
static const char *excerpt(const char *s, size_t len, char *dst, size_t cap)
{
	size_t w = 0, i = 0;

	while (i < len && w + 4 < cap && i < 40) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

		if (i + n > len || i + n > 40)
			break;
		if (c < 0x20 || c == 0x7f) {
			dst[w++] = '?';
			i++;
			continue;
		}
		memcpy(dst + w, s + i, n);
		w += n;
		i += n;
	}
	if (i < len && w + 3 < cap) {
		memcpy(dst + w, "...", 3);
		w += 3;
	}
	dst[w] = '\0';
	return dst;
}

/* ---- bytes --------------------------------------------------------------- */

static int is_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static void skip_ws(struct parser *ps)
{
	while (ps->pos < ps->len && is_ws(ps->p[ps->pos]))
		ps->pos++;
}

enum utf8_err { U8_OK, U8_EOF, U8_STRAY, U8_OVERLONG, U8_SURROGATE, U8_BIG, U8_BYTE, U8_TRUNC };

static int utf8_fail(struct parser *ps, enum utf8_err e, unsigned char c)
{
	switch (e) {
	case U8_STRAY:
		return fail_at(ps, ps->pos, "invalid UTF-8: continuation byte 0x%02x without a lead byte", c);
	case U8_OVERLONG:
		return fail_at(ps, ps->pos, "invalid UTF-8: overlong encoding");
	case U8_SURROGATE:
		return fail_at(ps, ps->pos, "invalid UTF-8: encoded surrogate");
	case U8_BIG:
		return fail_at(ps, ps->pos, "invalid UTF-8: code point above U+10FFFF");
	case U8_BYTE:
		return fail_at(ps, ps->pos, "invalid UTF-8: byte 0x%02x", c);
	default:
		return fail_at(ps, ps->pos, "invalid UTF-8: truncated sequence");
	}
}

/*
 * Checks the multi-byte sequence at s[0] (>= 0x80) against RFC 3629's
 * table; sets *n to its length.  U8_EOF when the input ends inside a
 * sequence that was valid so far.
 */
static enum utf8_err utf8_seq(const unsigned char *s, size_t avail, size_t *n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;

	if (c < 0xc0)
		return U8_STRAY;
	if (c < 0xc2)
		return U8_OVERLONG;
	if (c < 0xe0) {
		*n = 2;
	} else if (c < 0xf0) {
		*n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c < 0xf5) {
		*n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return c < 0xf8 ? U8_BIG : U8_BYTE;
	}
	for (size_t i = 1; i < *n; i++) {
		if (i >= avail)
			return U8_EOF;
		if (s[i] < 0x80 || s[i] > 0xbf)
			return U8_TRUNC;
		if (i == 1 && s[1] < lo)
			return c == 0xe0 || c == 0xf0 ? U8_OVERLONG : U8_TRUNC;
		if (i == 1 && s[1] > hi)
			return c == 0xed ? U8_SURROGATE : U8_BIG;
	}
	return U8_OK;
}

int json_utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		if (utf8_seq(u + i, len - i, &n) != U8_OK)
			return 0;
		i += n;
	}
	return 1;
}

size_t json_utf8_clean(const char *s, size_t len, char *out)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k = 0, n;

	while (i < len) {
		if (u[i] < 0x80) {
			out[k++] = s[i++];
			continue;
		}
		if (utf8_seq(u + i, len - i, &n) == U8_OK) {
			memcpy(out + k, s + i, n);
			k += n;
			i += n;
			continue;
		}
		memcpy(out + k, "\xef\xbf\xbd", 3);
		k += 3;
		i++;
	}
	return k;
}

/* ---- pass 1: count ------------------------------------------------------- */

struct count_frame {
	size_t idx;   /* into counts */
	int obj;
	int want;     /* an item may start at the next significant byte */
};

static int count_push(struct parser *ps, struct count_frame *f, int obj)
{
	if (ps->ncounts == ps->counts_cap) {
		size_t nc = ps->counts_cap ? ps->counts_cap * 2 : 64;
		size_t more = (nc - ps->counts_cap) * sizeof(*ps->counts);
		uint32_t *c;

		if (more > room(ps))
			return too_large(ps, more);
		c = realloc(ps->counts, nc * sizeof(*c));
		if (!c)
			return nomem(ps);
		ps->counts = c;
		ps->counts_cap = nc;
		ps->heap += more;
	}
	ps->counts[ps->ncounts] = 0;
	f->idx = ps->ncounts++;
	f->obj = obj;
	f->want = 1;
	return 0;
}

/* Byte `c` is significant inside the innermost container `f`. */
static int count_item(struct parser *ps, struct count_frame *f, unsigned char c)
{
	int starts = f->obj ? c == '"'
			    : c == '"' || c == '[' || c == '{' || c == '-' || (c >= '0' && c <= '9') ||
				      c == 't' || c == 'f' || c == 'n';

	if (!f->want)
		return 0;
	f->want = 0;
	if (!starts)
		return 0;
	if (ps->counts[f->idx] == UINT32_MAX)
		return err_set(ps->msg, ERR_TOO_LARGE, "json: more than %" PRIu32
			       " items in one array or object", UINT32_MAX);
	ps->counts[f->idx]++;
	ps->items++;
	if (f->obj)
		ps->members++;
	return 0;
}

/*
 * Stops early, with the counts so far, where the parse pass is bound to
 * stop too: past the nesting limit or at a bracket closing nothing.
 */
static int count_pass(struct parser *ps)
{
	struct count_frame st[JSON_MAX_DEPTH];
	size_t depth = 0;
	const char *p = ps->p;
	int rc;

	for (size_t i = 0; i < ps->len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (is_ws((char)c))
			continue;
		if (depth && c != ',' && c != ']' && c != '}' && (rc = count_item(ps, &st[depth - 1], c)))
			return rc;
		switch (c) {
		case '"':
			for (i++; i < ps->len && p[i] != '"'; i++)
				if (p[i] == '\\')
					i++;
			break;
		case '[':
		case '{':
			if (depth == JSON_MAX_DEPTH)
				return 0;
			if ((rc = count_push(ps, &st[depth], c == '{')))
				return rc;
			depth++;
			break;
		case ']':
		case '}':
			if (!depth)
				return 0;
			depth--;
			break;
		case ',':
			if (depth)
				st[depth - 1].want = 1;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* ---- pass 2: parse ------------------------------------------------------- */

static int hex4(struct parser *ps, size_t at, uint32_t *out)
{
	uint32_t v = 0;

	for (size_t i = 0; i < 4; i++) {
		int d;

		if (ps->pos + i >= ps->len)
			return eof(ps);
		d = hex_digit((unsigned char)ps->p[ps->pos + i]);
		if (d < 0)
			return fail_at(ps, at, "invalid \\u escape (want 4 hex digits)");
		v = v << 4 | (uint32_t)d;
	}
	ps->pos += 4;
	*out = v;
	return 0;
}

static char *put_utf8(char *w, uint32_t cp)
{
	if (cp < 0x80) {
		*w++ = (char)cp;
	} else if (cp < 0x800) {
		*w++ = (char)(0xc0 | cp >> 6);
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*w++ = (char)(0xe0 | cp >> 12);
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*w++ = (char)(0xf0 | cp >> 18);
		*w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*w++ = (char)(0x80 | (cp & 0x3f));
	}
	return w;
}

/* The escape after a backslash at `at` (ps->pos is past the 'u'). */
static int escape_u(struct parser *ps, size_t at, char **w)
{
	uint32_t cp, lo;
	int rc;

	if ((rc = hex4(ps, at, &cp)))
		return rc;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail_at(ps, at, "unpaired surrogate \\u%04" PRIx32, cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		size_t at2 = ps->pos;

		if (ps->pos >= ps->len || (ps->p[ps->pos] == '\\' && ps->pos + 1 >= ps->len))
			return eof(ps);
		if (ps->p[ps->pos] != '\\' || ps->p[ps->pos + 1] != 'u')
			return fail_at(ps, at, "unpaired surrogate \\u%04" PRIx32, cp);
		ps->pos += 2;
		if ((rc = hex4(ps, at2, &lo)))
			return rc;
		if (lo < 0xdc00 || lo > 0xdfff)
			return fail_at(ps, at, "unpaired surrogate \\u%04" PRIx32, cp);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (!cp)
		return fail_at(ps, at, "\\u0000 in a string (strings are C strings here)");
	*w = put_utf8(*w, cp);
	return 0;
}

static int escape(struct parser *ps, char **w)
{
	size_t at = ps->pos++;
	char c;

	if (ps->pos >= ps->len)
		return eof(ps);
	c = ps->p[ps->pos++];
	switch (c) {
	case '"': *(*w)++ = '"'; return 0;
	case '\\': *(*w)++ = '\\'; return 0;
	case '/': *(*w)++ = '/'; return 0;
	case 'b': *(*w)++ = '\b'; return 0;
	case 'f': *(*w)++ = '\f'; return 0;
	case 'n': *(*w)++ = '\n'; return 0;
	case 'r': *(*w)++ = '\r'; return 0;
	case 't': *(*w)++ = '\t'; return 0;
	case 'u': return escape_u(ps, at, w);
	}
	if ((unsigned char)c > 0x20 && (unsigned char)c < 0x7f)
		return fail_at(ps, at, "invalid escape \\%c", c);
	return fail_at(ps, at, "invalid escape (byte 0x%02x after \\)", (unsigned char)c);
}

/* The string at ps->pos (its opening quote), unescaped into the text area. */
static int string(struct parser *ps, const char **out, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)ps->p;
	char *start = ps->text_w, *w = start;
	int rc;

	ps->pos++;
	for (;;) {
		unsigned char c;
		size_t n;
		enum utf8_err e;

		/* Plain ASCII runs are most of any document. */
		while (ps->pos < ps->len && (c = p[ps->pos]) >= 0x20 && c < 0x80 && c != '"' &&
		       c != '\\') {
			*w++ = (char)c;
			ps->pos++;
		}
		if (ps->pos >= ps->len)
			return eof(ps);
		c = p[ps->pos];
		if (c == '"')
			break;
		if (c == '\\') {
			if ((rc = escape(ps, &w)))
				return rc;
			continue;
		}
		if (c < 0x20)
			return fail_at(ps, ps->pos, "control character 0x%02x in a string", c);
		e = utf8_seq(p + ps->pos, ps->len - ps->pos, &n);
		if (e == U8_EOF)
			return eof(ps);
		if (e != U8_OK)
			return utf8_fail(ps, e, c);
		memcpy(w, p + ps->pos, n);
		w += n;
		ps->pos += n;
	}
	ps->pos++;
	assert(w < ps->text_end);
	*w++ = '\0';
	ps->text_w = w;
	*out = start;
	*out_len = (size_t)(w - start) - 1;
	return 0;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits at ps->pos; at least one, else the error `what`. */
static int digits(struct parser *ps, const char *what)
{
	if (ps->pos >= ps->len)
		return eof(ps);
	if (!is_digit(ps->p[ps->pos]))
		return fail_at(ps, ps->pos, "invalid number (%s)", what);
	while (ps->pos < ps->len && is_digit(ps->p[ps->pos]))
		ps->pos++;
	return 0;
}

static int number(struct parser *ps, struct json_value *v)
{
	size_t start = ps->pos;
	int rc;

	if (ps->p[ps->pos] == '-')
		ps->pos++;
	if (ps->pos < ps->len && ps->p[ps->pos] == '0') {
		ps->pos++;
		if (ps->pos < ps->len && is_digit(ps->p[ps->pos]))
			return fail_at(ps, ps->pos - 1, "invalid number (leading zero)");
	} else if ((rc = digits(ps, "no digit after '-'"))) {
		return rc;
	}
	if (ps->pos < ps->len && ps->p[ps->pos] == '.') {
		ps->pos++;
		if ((rc = digits(ps, "no digit after '.'")))
			return rc;
	}
	if (ps->pos < ps->len && (ps->p[ps->pos] == 'e' || ps->p[ps->pos] == 'E')) {
		ps->pos++;
		if (ps->pos < ps->len && (ps->p[ps->pos] == '+' || ps->p[ps->pos] == '-'))
			ps->pos++;
		if ((rc = digits(ps, "no digit in the exponent")))
			return rc;
	}
	v->type = JSON_NUMBER;
	v->len = ps->pos - start;
	assert((size_t)(ps->text_end - ps->text_w) > v->len);
	memcpy(ps->text_w, ps->p + start, v->len);
	ps->text_w[v->len] = '\0';
	v->str = ps->text_w;
	ps->text_w += v->len + 1;
	return 0;
}

static int literal(struct parser *ps, const char *word)
{
	size_t at = ps->pos, n = strlen(word);

	for (size_t i = 0; i < n; i++) {
		if (at + i >= ps->len)
			return eof(ps);
		if (ps->p[at + i] != word[i])
			return fail_at(ps, at, "invalid literal (want %s)", word);
	}
	ps->pos += n;
	return 0;
}

static int unexpected(struct parser *ps)
{
	unsigned char c = (unsigned char)ps->p[ps->pos];

	if (c > 0x20 && c < 0x7f)
		return fail_at(ps, ps->pos, "unexpected character '%c'", c);
	return fail_at(ps, ps->pos, "unexpected byte 0x%02x", c);
}

/* ---- duplicate keys -------------------------------------------------------- */

/* Offset of the key of member `j` of the object opening at `open`. */
static size_t member_offset(const struct parser *ps, size_t open, size_t j)
{
	size_t depth = 0, commas = 0;

	for (size_t i = open + 1; i < ps->len; i++) {
		char c = ps->p[i];

		if (c == '"') {
			if (!depth && commas == j)
				return i;
			for (i++; i < ps->len && ps->p[i] != '"'; i++)
				if (ps->p[i] == '\\')
					i++;
		} else if (c == '[' || c == '{') {
			depth++;
		} else if (c == ']' || c == '}') {
			depth--;
		} else if (c == ',' && !depth) {
			commas++;
		}
	}
	return open;
}

/* Index of the first member whose key an earlier member has, or 0. */
static int first_duplicate(struct parser *ps, const struct json_value *o, size_t *dup)
{
	uint32_t *tab;
	size_t size = 16, mask, bytes;
	uint64_t seed = (uint64_t)(uintptr_t)o->keys;

	*dup = 0;
	if (o->n <= SMALL_OBJECT) {
		for (size_t j = 1; j < o->n; j++)
			for (size_t i = 0; i < j; i++)
				if (!strcmp(o->keys[i], o->keys[j])) {
					*dup = j;
					return 0;
				}
		return 0;
	}
	while (size < o->n * 2)
		size *= 2;
	bytes = size * sizeof(*tab);
	if (bytes > room(ps))
		return too_large(ps, bytes);
	tab = calloc(size, sizeof(*tab));
	if (!tab)
		return nomem(ps);
	mask = size - 1;
	/* A seed from an address: a client cannot aim keys at one bucket. */
	for (size_t j = 0; j < o->n && !*dup; j++) {
		size_t h = (size_t)hash_bytes(o->keys[j], strlen(o->keys[j]), seed) & mask;

		while (tab[h] && strcmp(o->keys[tab[h] - 1], o->keys[j]))
			h = (h + 1) & mask;
		if (tab[h])
			*dup = j;
		else
			tab[h] = (uint32_t)j + 1;
	}
	free(tab);
	return 0;
}

static int check_keys(struct parser *ps, const struct json_value *o, size_t open)
{
	size_t j;
	char ex[64];
	int rc = first_duplicate(ps, o, &j);

	if (rc || !j)
		return rc;
	return fail_at(ps, member_offset(ps, open, j), "duplicate key \"%s\"",
		       excerpt(o->keys[j], strlen(o->keys[j]), ex, sizeof(ex)));
}

/* ---- the tree -------------------------------------------------------------- */

struct frame {
	struct json_value *v;
	size_t cap;   /* items the count pass found */
	size_t open;  /* offset of the '[' or '{' */
};

/* Opens the container at ps->pos into v; *empty when it closes at once. */
static int open_container(struct parser *ps, struct json_value *v, struct frame *f, int *empty)
{
	int obj = ps->p[ps->pos] == '{';
	size_t cnt = 0, need;

	assert(ps->ordinal < ps->ncounts);
	if (ps->ordinal < ps->ncounts)
		cnt = ps->counts[ps->ordinal];
	ps->ordinal++;
	v->type = obj ? JSON_OBJECT : JSON_ARRAY;
	v->n = 0;
	v->items = NULL;
	v->keys = NULL;
	f->v = v;
	f->cap = cnt;
	f->open = ps->pos++;
	skip_ws(ps);
	if (ps->pos >= ps->len)
		return eof(ps);
	*empty = ps->p[ps->pos] == (obj ? '}' : ']');
	if (*empty) {
		ps->pos++;
		return 0;
	}
	need = cnt * (sizeof(struct json_value) + (obj ? sizeof(char *) : 0));
	assert((size_t)(ps->node_end - ps->node_w) >= need);
	if ((size_t)(ps->node_end - ps->node_w) < need)
		f->cap = 0;
	v->items = (struct json_value *)(void *)ps->node_w;
	ps->node_w += f->cap * sizeof(struct json_value);
	if (obj) {
		v->keys = (const char **)(void *)ps->node_w;
		ps->node_w += f->cap * sizeof(char *);
	}
	return 0;
}

/*
 * Makes room for item n of `f`, whose first byte the parse pass has just
 * seen.  The count pass saw that byte too, so there is room; were the two
 * to disagree, the item is refused rather than written out of bounds.
 */
static int reserve_item(struct parser *ps, struct frame *f)
{
	assert(f->v->n < f->cap);
	if (f->v->n >= f->cap)
		return unexpected(ps);
	return 0;
}

/* An object key, then its ':'. */
static int key(struct parser *ps, struct frame *f)
{
	size_t klen;
	int rc;

	skip_ws(ps);
	if (ps->pos >= ps->len)
		return eof(ps);
	if (ps->p[ps->pos] != '"')
		return fail_at(ps, ps->pos, "expected a string (an object key)");
	if ((rc = reserve_item(ps, f)) || (rc = string(ps, &f->v->keys[f->v->n], &klen)))
		return rc;
	skip_ws(ps);
	if (ps->pos >= ps->len)
		return eof(ps);
	if (ps->p[ps->pos] != ':')
		return fail_at(ps, ps->pos, "expected ':' after an object key");
	ps->pos++;
	return 0;
}

static int starts_value(char c)
{
	return c == '"' || c == '[' || c == '{' || c == '-' || is_digit(c) || c == 't' ||
	       c == 'f' || c == 'n';
}

/* A scalar value at ps->pos into v. */
static int scalar(struct parser *ps, struct json_value *v)
{
	v->keys = NULL;
	v->boolean = 0;
	v->len = 0;
	v->str = NULL;
	switch (ps->p[ps->pos]) {
	case '"':
		v->type = JSON_STRING;
		return string(ps, &v->str, &v->len);
	case 't':
		v->type = JSON_BOOL;
		v->boolean = 1;
		return literal(ps, "true");
	case 'f':
		v->type = JSON_BOOL;
		return literal(ps, "false");
	case 'n':
		v->type = JSON_NULL;
		return literal(ps, "null");
	}
	return number(ps, v);
}

/* After a value: closes containers until one goes on (*more) or the document ends. */
static int after_value(struct parser *ps, struct frame *st, size_t *depth, int *more)
{
	int rc;

	*more = 0;
	while (*depth) {
		struct frame *f = &st[*depth - 1];
		int obj = f->v->type == JSON_OBJECT;
		char close = obj ? '}' : ']';

		f->v->n++;
		skip_ws(ps);
		if (ps->pos >= ps->len)
			return eof(ps);
		if (ps->p[ps->pos] == ',') {
			ps->pos++;
			*more = 1;
			return obj ? key(ps, f) : 0;
		}
		if (ps->p[ps->pos] != close)
			return fail_at(ps, ps->pos, "expected ',' or '%c'", close);
		ps->pos++;
		if (obj && f->v->n > 1 && (rc = check_keys(ps, f->v, f->open)))
			return rc;
		(*depth)--;
	}
	skip_ws(ps);
	if (ps->pos < ps->len)
		return fail_at(ps, ps->pos, "unexpected data after the document");
	return 0;
}

static int parse_pass(struct parser *ps, struct json_value *root)
{
	struct frame st[JSON_MAX_DEPTH];
	size_t depth = 0;
	int rc, more = 1, empty = 0;

	while (more) {
		struct json_value *slot = root;

		skip_ws(ps);
		if (ps->pos >= ps->len)
			return eof(ps);
		if (!starts_value(ps->p[ps->pos]))
			return unexpected(ps);
		if (depth) {
			struct frame *f = &st[depth - 1];

			if ((rc = reserve_item(ps, f)))
				return rc;
			slot = &f->v->items[f->v->n];
		}
		if (ps->p[ps->pos] == '[' || ps->p[ps->pos] == '{') {
			if (depth == JSON_MAX_DEPTH)
				return fail_at(ps, ps->pos, "nesting deeper than %d", JSON_MAX_DEPTH);
			slot->boolean = 0;
			if ((rc = open_container(ps, slot, &st[depth], &empty)))
				return rc;
			if (!empty) {
				depth++;
				if (slot->type == JSON_OBJECT && (rc = key(ps, &st[depth - 1])))
					return rc;
				continue;
			}
		} else if ((rc = scalar(ps, slot))) {
			return rc;
		}
		if ((rc = after_value(ps, st, &depth, &more)))
			return rc;
	}
	return 0;
}

size_t json_mem_bound(size_t len)
{
	if (len > (SIZE_MAX - 2048) / 24)
		return SIZE_MAX;
	return 24 * len + 2048;
}

/* Allocates the region for what the count pass found. */
static int region(struct parser *ps)
{
	size_t nodes = (ps->items + 1) * sizeof(struct json_value) + ps->members * sizeof(char *);
	size_t need = nodes + ps->len + 1;
	char *r;

	if (need > room(ps))
		return too_large(ps, need);
	r = arena_alloc(ps->a, need);
	if (!r)
		return arena_failed(ps->a) == ERR_NOMEM ? nomem(ps) : too_large(ps, need);
	ps->node_w = r;
	ps->node_end = r + nodes;
	ps->text_w = ps->node_end;
	ps->text_end = r + need;
	return 0;
}

int json_parse(const char *p, size_t len, struct arena *a, struct json_value **out,
	       struct err_msg *msg)
{
	struct parser ps = { .p = p, .len = len, .a = a, .msg = msg };
	struct json_value *root;
	int rc;

	if (json_mem_bound(len) == SIZE_MAX)
		return err_set(msg, ERR_TOO_LARGE, "json: a document of %zu bytes is too large", len);
	if ((rc = count_pass(&ps)) || (rc = region(&ps)))
		goto out;
	root = (struct json_value *)(void *)ps.node_w;
	ps.node_w += sizeof(*root);
	rc = parse_pass(&ps, root);
	if (!rc)
		*out = root;
out:
	free(ps.counts);
	return rc;
}

/* ---- access -------------------------------------------------------------- */

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

const char *json_type_name(enum json_type type)
{
	switch (type) {
	case JSON_NULL: return "null";
	case JSON_BOOL: return "a boolean";
	case JSON_NUMBER: return "a number";
	case JSON_STRING: return "a string";
	case JSON_ARRAY: return "an array";
	case JSON_OBJECT: return "an object";
	}
	return "?";
}

/* ---- numbers ------------------------------------------------------------- */

/* 1 when s[0..len) is exactly one JSON number (RFC 8259 section 6). */
static int is_number(const char *s, size_t len)
{
	size_t i = 0;

	if (i < len && s[i] == '-')
		i++;
	if (i < len && s[i] == '0')
		i++;
	else if (i < len && is_digit(s[i]))
		while (i < len && is_digit(s[i]))
			i++;
	else
		return 0;
	if (i < len && s[i] == '.') {
		if (++i >= len || !is_digit(s[i]))
			return 0;
		while (i < len && is_digit(s[i]))
			i++;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= len || !is_digit(s[i]))
			return 0;
		while (i < len && is_digit(s[i]))
			i++;
	}
	return i == len;
}

enum { INT_OK = 0, INT_NOT = -1, INT_RANGE = -2 };

/*
 * The integer a JSON number `s` denotes, as sign and magnitude; INT_NOT
 * when it has a fractional part, INT_RANGE when the magnitude needs more
 * than 64 bits.  Works on the decimal digits, so "1e3", "1000.0" and
 * "10000e-1" are all 1000, exactly.
 */
static int int_value(const char *s, size_t len, int *neg, uint64_t *mag)
{
	const char *end = s + len, *d0, *dot = NULL, *dend;
	int64_t exp = 0, fdigits = 0;
	size_t nd = 0;
	uint64_t m = 0;

	*neg = *s == '-';
	if (*neg)
		s++;
	d0 = s;
	while (s < end && (is_digit(*s) || *s == '.')) {
		if (*s == '.')
			dot = s;
		else if (dot)
			fdigits++;
		s++;
	}
	dend = s;
	if (s < end) {
		int eneg;

		s++;
		eneg = *s == '-';
		if (*s == '+' || *s == '-')
			s++;
		for (; s < end; s++)
			if (exp < 1000000000)
				exp = exp * 10 + (*s - '0');
		if (eneg)
			exp = -exp;
	}
	exp -= fdigits;
	/* Leading zeros do not count; trailing ones move into the exponent. */
	while (d0 < dend && (*d0 == '0' || *d0 == '.'))
		d0++;
	while (dend > d0 && (dend[-1] == '0' || dend[-1] == '.')) {
		if (dend[-1] == '0')
			exp++;
		dend--;
	}
	if (d0 == dend) {
		*mag = 0;
		return INT_OK;
	}
	if (exp < 0)
		return INT_NOT;
	for (const char *c = d0; c < dend; c++)
		nd += *c != '.';
	if ((int64_t)nd + exp > 20)
		return INT_RANGE;
	for (const char *c = d0; c < dend; c++)
		if (*c != '.' && (__builtin_mul_overflow(m, 10, &m) ||
				  __builtin_add_overflow(m, (uint64_t)(*c - '0'), &m)))
			return INT_RANGE;
	for (; exp > 0; exp--)
		if (__builtin_mul_overflow(m, 10, &m))
			return INT_RANGE;
	*mag = m;
	return INT_OK;
}

static int get_int(const struct json_value *v, int *neg, uint64_t *mag, struct err_msg *msg)
{
	char ex[64];
	int rc;

	if (v->type != JSON_NUMBER && v->type != JSON_STRING)
		return err_set(msg, ERR_INVALID, "not an integer (want a number or a decimal string, got %s)",
			       json_type_name(v->type));
	if (v->type == JSON_STRING && !is_number(v->str, v->len))
		return err_set(msg, ERR_INVALID, "not an integer: \"%s\"",
			       excerpt(v->str, v->len, ex, sizeof(ex)));
	rc = int_value(v->str, v->len, neg, mag);
	if (rc == INT_NOT)
		return err_set(msg, ERR_INVALID, "not an integer: \"%s\"",
			       excerpt(v->str, v->len, ex, sizeof(ex)));
	if (rc == INT_RANGE)
		return err_set(msg, ERR_INVALID, "%s is out of range for a 64-bit integer",
			       excerpt(v->str, v->len, ex, sizeof(ex)));
	return 0;
}

int json_int64(const struct json_value *v, int64_t *out, struct err_msg *msg)
{
	uint64_t m;
	int neg, rc = get_int(v, &neg, &m, msg);

	if (rc)
		return rc;
	if (m > (uint64_t)INT64_MAX + (uint64_t)neg)
		return err_set(msg, ERR_INVALID, "%s%" PRIu64 " is out of range for int64",
			       neg ? "-" : "", m);
	*out = neg ? (int64_t)(0 - m) : (int64_t)m;
	return 0;
}

int json_uint64(const struct json_value *v, uint64_t *out, struct err_msg *msg)
{
	uint64_t m;
	int neg, rc = get_int(v, &neg, &m, msg);

	if (rc)
		return rc;
	if (neg && m)
		return err_set(msg, ERR_INVALID, "-%" PRIu64 " is negative (want an unsigned integer)",
			       m);
	*out = m;
	return 0;
}

int json_double(const struct json_value *v, double *out, struct err_msg *msg)
{
	char ex[64];
	double d;

	if (v->type != JSON_NUMBER && v->type != JSON_STRING)
		return err_set(msg, ERR_INVALID, "not a number (want a number or a numeric string, got %s)",
			       json_type_name(v->type));
	if (v->type == JSON_STRING) {
		if (!strcmp(v->str, "NaN")) {
			*out = NAN;
			return 0;
		}
		if (!strcmp(v->str, "Infinity") || !strcmp(v->str, "-Infinity")) {
			*out = v->str[0] == '-' ? -INFINITY : INFINITY;
			return 0;
		}
		if (!is_number(v->str, v->len))
			return err_set(msg, ERR_INVALID, "not a number: \"%s\"",
				       excerpt(v->str, v->len, ex, sizeof(ex)));
	}
	/* The text is a JSON number, which strtod reads whole in the C locale. */
	d = strtod(v->str, NULL);
	if (isinf(d))
		return err_set(msg, ERR_INVALID, "%s is out of range for a double",
			       excerpt(v->str, v->len, ex, sizeof(ex)));
	*out = d;
	return 0;
}

size_t json_path_push(struct json_path *jp, const char *fmt, ...)
{
	size_t old = jp->len, room = sizeof(jp->s) - old;
	va_list ap;
	int n;

	assert(old < sizeof(jp->s));
	va_start(ap, fmt);
	n = vsnprintf(jp->s + old, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		jp->s[old] = '\0';
	else
		jp->len = (size_t)n < room ? old + (size_t)n : sizeof(jp->s) - 1;
	return old;
}

void json_path_pop(struct json_path *jp, size_t old)
{
	assert(old <= jp->len);
	jp->len = old;
	jp->s[old] = '\0';
}
