/*
 * json.c - a small, strict JSON parser for request bodies (Connect JSON),
 * and base64.
 *
 * RFC 8259 grammar, UTF-8 checked, \u escapes (with surrogate pairs)
 * decoded.  Recursion is bounded by JSON_MAX_DEPTH and every byte of the
 * tree comes from a caller's capped arena, so hostile input ends in
 * ERR_INVALID or ERR_TOO_LARGE, never in a crash or unbounded memory.
 * Object keys are kept in order; json_get() returns the first match.
 */
#include "ingest/ingest_int.h"

#include "base/arena.h"
#include "base/err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	struct arena *a;
	const char *p;
	const char *end;
	const char *start;
	struct err_msg *msg;
	size_t scratch;   /* bytes of the containers being filled (heap) */
};

static int fail(struct parser *ps, const char *what)
{
	return err_set(ps->msg, ERR_INVALID, "json: %s at byte %zu", what,
		       (size_t)(ps->p - ps->start));
}

static int oom(struct parser *ps)
{
	int rc = arena_failed(ps->a) ? arena_failed(ps->a) : ERR_NOMEM;

	return err_set(ps->msg, rc, "json: document needs more memory than allowed");
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail(ps, "unexpected character");
	ps->p += n;
	return 0;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int number(struct parser *ps, struct json_value *v)
{
	const char *s = ps->p;

	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p >= ps->end || !is_digit(*ps->p))
		return fail(ps, "bad number");
	if (*ps->p == '0')
		ps->p++;
	else
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (ps->p >= ps->end || !is_digit(*ps->p))
			return fail(ps, "bad number");
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || !is_digit(*ps->p))
			return fail(ps, "bad number");
		while (ps->p < ps->end && is_digit(*ps->p))
			ps->p++;
	}
	v->type = JSON_NUMBER;
	v->len = (size_t)(ps->p - s);
	v->str = arena_strndup(ps->a, s, v->len);
	return v->str ? 0 : oom(ps);
}

static int hex4(struct parser *ps, uint32_t *out)
{
	uint32_t v = 0;

	if (ps->end - ps->p < 4)
		return fail(ps, "truncated \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = *ps->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return fail(ps, "bad \\u escape");
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *w, uint32_t cp)
{
	if (cp < 0x80) {
		w[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		w[0] = (char)(0xc0 | cp >> 6);
		w[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		w[0] = (char)(0xe0 | cp >> 12);
		w[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		w[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	w[0] = (char)(0xf0 | cp >> 18);
	w[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	w[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	w[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Length of the valid UTF-8 sequence at p (RFC 3629), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	size_t n;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

static int string(struct parser *ps, const char **out, size_t *out_len)
{
	const char *s = ++ps->p; /* past the opening quote */
	char *buf, *w;
	int rc;

	/* Unescaped text is never longer than its source. */
	while (ps->p < ps->end && *ps->p != '"') {
		if (*ps->p == '\\' && ps->p + 1 < ps->end)
			ps->p++;
		ps->p++;
	}
	if (ps->p >= ps->end)
		return fail(ps, "unterminated string");
	buf = arena_alloc(ps->a, (size_t)(ps->p - s) + 1);
	if (!buf)
		return oom(ps);
	ps->p = s;
	w = buf;
	while (*ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p;

		if (c < 0x20)
			return fail(ps, "control character in string");
		if (c != '\\') {
			size_t n = utf8_len((const unsigned char *)ps->p,
					    (const unsigned char *)ps->end);
			if (!n)
				return fail(ps, "invalid UTF-8 in string");
			memcpy(w, ps->p, n);
			w += n;
			ps->p += n;
			continue;
		}
		ps->p++;
		switch (*ps->p++) {
		case '"': *w++ = '"'; break;
		case '\\': *w++ = '\\'; break;
		case '/': *w++ = '/'; break;
		case 'b': *w++ = '\b'; break;
		case 'f': *w++ = '\f'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case 't': *w++ = '\t'; break;
		case 'u': {
			uint32_t cp, lo;

			rc = hex4(ps, &cp);
			if (rc)
				return rc;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(ps, "lone low surrogate");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
					return fail(ps, "lone high surrogate");
				ps->p += 2;
				rc = hex4(ps, &lo);
				if (rc)
					return rc;
				if (lo < 0xdc00 || lo > 0xdfff)
					return fail(ps, "bad surrogate pair");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			/* \u0000 would cut the C string short: refuse it. */
			if (cp == 0)
				return fail(ps, "NUL in string");
			w += put_utf8(w, cp);
			break;
		}
		default:
			ps->p--;
			return fail(ps, "bad escape");
		}
	}
	ps->p++;
	*w = '\0';
	*out = buf;
	*out_len = (size_t)(w - buf);
	return 0;
}

static int value(struct parser *ps, struct json_value *v, int depth);

/*
 * The items (and keys) of a container are collected in heap scratch arrays,
 * then copied into the arena at their exact size when it closes, so the
 * arena never holds the outgrown copies of a doubling array.  Scratch is
 * counted against what the arena may still hold, so arena plus scratch
 * stays within the arena's cap.
 */
struct fill {
	struct json_value *items;
	const char **keys;
	size_t cap;
};

/* What the arena may still hold. */
static size_t arena_room(const struct parser *ps)
{
	size_t cap = ps->a->cap ? ps->a->cap : SIZE_MAX;

	return cap > ps->a->used ? cap - ps->a->used : 0;
}

static int grow(struct parser *ps, struct fill *f, int with_keys)
{
	size_t per = sizeof(*f->items) + (with_keys ? sizeof(*f->keys) : 0);
	size_t nc = f->cap ? f->cap * 2 : 4, more = (nc - f->cap) * per, room = arena_room(ps);
	struct json_value *ni;

	if (more > room || ps->scratch > room - more)
		return err_set(ps->msg, ERR_TOO_LARGE, "json: document needs more memory than allowed");
	ni = realloc(f->items, nc * sizeof(*ni));
	if (!ni)
		return oom(ps);
	f->items = ni;
	if (with_keys) {
		const char **nk = realloc(f->keys, nc * sizeof(*nk));

		if (!nk)
			return oom(ps);
		f->keys = nk;
	}
	ps->scratch += more;
	f->cap = nc;
	return 0;
}

/* Moves the filled items into the arena at their exact size. */
static int settle(struct parser *ps, struct json_value *v, const struct fill *f, int with_keys)
{
	if (!v->n)
		return 0;
	v->items = arena_alloc(ps->a, v->n * sizeof(*v->items));
	if (!v->items)
		return oom(ps);
	memcpy(v->items, f->items, v->n * sizeof(*v->items));
	if (with_keys) {
		v->keys = arena_alloc(ps->a, v->n * sizeof(*v->keys));
		if (!v->keys)
			return oom(ps);
		memcpy(v->keys, f->keys, v->n * sizeof(*v->keys));
	}
	return 0;
}

static int container_fill(struct parser *ps, struct json_value *v, int depth, int is_obj,
			  struct fill *f)
{
	char close = is_obj ? '}' : ']';
	int rc;

	for (;;) {
		const char *key = NULL;
		size_t klen;

		skip_ws(ps);
		if (is_obj) {
			if (ps->p >= ps->end || *ps->p != '"')
				return fail(ps, "expected object key");
			rc = string(ps, &key, &klen);
			if (rc)
				return rc;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':')
				return fail(ps, "expected ':'");
			ps->p++;
		}
		if (v->n == f->cap && (rc = grow(ps, f, is_obj)))
			return rc;
		memset(&f->items[v->n], 0, sizeof(f->items[v->n]));
		if (is_obj)
			f->keys[v->n] = key;
		rc = value(ps, &f->items[v->n], depth + 1);
		if (rc)
			return rc;
		v->n++;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return fail(ps, is_obj ? "unterminated object" : "unterminated array");
		if (*ps->p == close) {
			ps->p++;
			return settle(ps, v, f, is_obj);
		}
		if (*ps->p != ',')
			return fail(ps, "expected ','");
		ps->p++;
	}
}

static int container(struct parser *ps, struct json_value *v, int depth, int is_obj)
{
	char close = is_obj ? '}' : ']';
	struct fill f = { NULL, NULL, 0 };
	size_t per = sizeof(*f.items) + (is_obj ? sizeof(*f.keys) : 0);
	int rc;

	if (depth >= JSON_MAX_DEPTH)
		return fail(ps, "nesting too deep");
	v->type = is_obj ? JSON_OBJECT : JSON_ARRAY;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	rc = container_fill(ps, v, depth, is_obj, &f);
	free(f.items);
	free(f.keys);
	ps->scratch -= f.cap * per;
	return rc;
}

static int value(struct parser *ps, struct json_value *v, int depth)
{
	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, "unexpected end");
	switch (*ps->p) {
	case '{':
		return container(ps, v, depth, 1);
	case '[':
		return container(ps, v, depth, 0);
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
	default:
		return number(ps, v);
	}
}

int json_parse(struct arena *a, const char *p, size_t len, struct json_value **out,
	       struct err_msg *msg)
{
	struct parser ps = { a, p, p + len, p, msg, 0 };
	struct json_value *v = arena_calloc(a, 1, sizeof(*v));
	int rc;

	if (!v)
		return oom(&ps);
	rc = value(&ps, v, 0);
	if (rc)
		return rc;
	skip_ws(&ps);
	if (ps.p != ps.end)
		return fail(&ps, "trailing bytes after the document");
	*out = v;
	return 0;
}

const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (strcmp(obj->keys[i], key) == 0)
			return &obj->items[i];
	return NULL;
}

static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int base64_decode(struct arena *a, const char *s, size_t len, uint8_t **out, size_t *out_len)
{
	uint8_t *buf, *w;
	uint32_t acc = 0;
	int bits = 0;
	size_t pad = 0;

	while (len && s[len - 1] == '=' && pad < 2) {
		len--;
		pad++;
	}
	if (len % 4 == 1 || (pad && (len + pad) % 4 != 0))
		return ERR_INVALID;
	buf = arena_alloc(a, len / 4 * 3 + 3);
	if (!buf)
		return arena_failed(a);
	w = buf;
	for (size_t i = 0; i < len; i++) {
		int v = b64_val((unsigned char)s[i]);

		if (v < 0)
			return ERR_INVALID;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*w++ = (uint8_t)(acc >> bits);
		}
	}
	*out = buf;
	*out_len = (size_t)(w - buf);
	return 0;
}
