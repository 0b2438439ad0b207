/*
 * json_in.c - a small strict JSON reader for Connect request bodies.
 *
 * The whole document becomes a tree in a caller's arena (whose cap bounds
 * memory); nesting is capped at 32 levels, and any syntax error is
 * ERR_INVALID with the byte offset.  Strings are unescaped (\uXXXX with
 * surrogate pairs to UTF-8); numbers are kept as their text.
 */
#include "query_int.h"

#include "base/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 32 };

struct jp {
	const char *s;
	size_t len, pos;
	struct arena *a;
	struct err_msg *msg;
};

static int jfail(struct jp *p, const char *what)
{
	return err_set(p->msg, ERR_INVALID, "JSON: at offset %zu: %s", p->pos, what);
}

static int jnomem(struct jp *p)
{
	int rc = arena_failed(p->a);

	return err_set(p->msg, rc ? rc : ERR_NOMEM, "JSON: request body too large to decode");
}

static void jws(struct jp *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static int hex4(struct jp *p, unsigned *out)
{
	unsigned v = 0;

	if (p->len - p->pos < 4)
		return jfail(p, "truncated \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = p->s[p->pos++];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return jfail(p, "bad hex digit in \\u escape");
	}
	*out = v;
	return 0;
}

static int jstring(struct jp *p, const char **out, size_t *olen)
{
	char *o;
	size_t n = 0;
	int rc;

	p->pos++; /* opening quote */
	o = arena_alloc(p->a, p->len - p->pos + 1);
	if (!o)
		return jnomem(p);
	for (;;) {
		unsigned char c;

		if (p->pos >= p->len)
			return jfail(p, "unterminated string");
		c = (unsigned char)p->s[p->pos++];
		if (c == '"')
			break;
		if (c < 0x20)
			return jfail(p, "control character in string");
		if (c != '\\') {
			o[n++] = (char)c;
			continue;
		}
		if (p->pos >= p->len)
			return jfail(p, "unterminated escape");
		c = (unsigned char)p->s[p->pos++];
		switch (c) {
		case '"': case '\\': case '/': o[n++] = (char)c; break;
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'n': o[n++] = '\n'; break;
		case 'r': o[n++] = '\r'; break;
		case 't': o[n++] = '\t'; break;
		case 'u': {
			unsigned cp, lo;

			if ((rc = hex4(p, &cp)))
				return rc;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return jfail(p, "lone low surrogate");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
					return jfail(p, "lone high surrogate");
				p->pos += 2;
				if ((rc = hex4(p, &lo)))
					return rc;
				if (lo < 0xdc00 || lo > 0xdfff)
					return jfail(p, "bad low surrogate");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (!cp)
				return jfail(p, "NUL in string");
			/* A 6-byte escape never expands past 4 bytes of UTF-8. */
			if (cp < 0x80) {
				o[n++] = (char)cp;
			} else if (cp < 0x800) {
				o[n++] = (char)(0xc0 | cp >> 6);
				o[n++] = (char)(0x80 | (cp & 0x3f));
			} else if (cp < 0x10000) {
				o[n++] = (char)(0xe0 | cp >> 12);
				o[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
				o[n++] = (char)(0x80 | (cp & 0x3f));
			} else {
				o[n++] = (char)(0xf0 | cp >> 18);
				o[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
				o[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
				o[n++] = (char)(0x80 | (cp & 0x3f));
			}
			break;
		}
		default:
			return jfail(p, "unknown escape");
		}
	}
	o[n] = '\0';
	*out = o;
	*olen = n;
	return 0;
}

static int jvalue(struct jp *p, struct qjson *v, int depth);

/* Items are collected in a doubling arena array, then left in place. */
static int jgrow(struct jp *p, struct qjson **kids, const char ***keys, size_t n, size_t *cap)
{
	size_t nc;
	struct qjson *nk;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 8;
	nk = arena_alloc(p->a, nc * sizeof(*nk));
	if (!nk)
		return jnomem(p);
	if (n)
		memcpy(nk, *kids, n * sizeof(*nk));
	*kids = nk;
	if (keys) {
		const char **nkeys = arena_alloc(p->a, nc * sizeof(*nkeys));

		if (!nkeys)
			return jnomem(p);
		if (n)
			memcpy(nkeys, *keys, n * sizeof(*nkeys));
		*keys = nkeys;
	}
	*cap = nc;
	return 0;
}

static int jcontainer(struct jp *p, struct qjson *v, int depth, int obj)
{
	size_t cap = 0;
	int rc;

	if (depth >= MAX_DEPTH)
		return jfail(p, "nested too deeply");
	v->type = obj ? QJ_OBJ : QJ_ARR;
	p->pos++;
	jws(p);
	if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) {
		p->pos++;
		return 0;
	}
	for (;;) {
		rc = jgrow(p, &v->kids, obj ? &v->keys : NULL, v->n, &cap);
		if (rc)
			return rc;
		jws(p);
		if (obj) {
			size_t kl;

			if (p->pos >= p->len || p->s[p->pos] != '"')
				return jfail(p, "expected a key string");
			if ((rc = jstring(p, &v->keys[v->n], &kl)))
				return rc;
			jws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return jfail(p, "expected ':'");
			p->pos++;
		}
		rc = jvalue(p, &v->kids[v->n], depth + 1);
		if (rc)
			return rc;
		v->n++;
		jws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) {
			p->pos++;
			return 0;
		}
		return jfail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int jnumber(struct jp *p, struct qjson *v)
{
	size_t start = p->pos;
	char *t;

	if (p->pos < p->len && p->s[p->pos] == '-')
		p->pos++;
	if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
		return jfail(p, "bad number");
	if (p->s[p->pos] == '0')
		p->pos++;
	else
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
			p->pos++;
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
			return jfail(p, "bad fraction");
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
			return jfail(p, "bad exponent");
		while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
			p->pos++;
	}
	t = arena_strndup(p->a, p->s + start, p->pos - start);
	if (!t)
		return jnomem(p);
	v->type = QJ_NUM;
	v->s = t;
	v->len = p->pos - start;
	return 0;
}

static int jword(struct jp *p, const char *w)
{
	size_t n = strlen(w);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n))
		return jfail(p, "unexpected token");
	p->pos += n;
	return 0;
}

static int jvalue(struct jp *p, struct qjson *v, int depth)
{
	memset(v, 0, sizeof(*v));
	jws(p);
	if (p->pos >= p->len)
		return jfail(p, "unexpected end");
	switch (p->s[p->pos]) {
	case '{': return jcontainer(p, v, depth, 1);
	case '[': return jcontainer(p, v, depth, 0);
	case '"': v->type = QJ_STR; return jstring(p, &v->s, &v->len);
	case 't': v->type = QJ_BOOL; v->b = 1; return jword(p, "true");
	case 'f': v->type = QJ_BOOL; return jword(p, "false");
	case 'n': v->type = QJ_NULL; return jword(p, "null");
	default: return jnumber(p, v);
	}
}

int qjson_parse(const char *s, size_t len, struct arena *a, struct qjson **out,
		struct err_msg *msg)
{
	struct jp p = { s, len, 0, a, msg };
	struct qjson *v = arena_alloc(a, sizeof(*v));
	int rc;

	if (!v)
		return jnomem(&p);
	rc = jvalue(&p, v, 0);
	if (rc)
		return rc;
	jws(&p);
	if (p.pos != len)
		return jfail(&p, "trailing bytes after the document");
	*out = v;
	return 0;
}

const struct qjson *qjson_get(const struct qjson *obj, const char *key)
{
	if (!obj || obj->type != QJ_OBJ)
		return NULL;
	for (size_t i = obj->n; i-- > 0;)
		if (!strcmp(obj->keys[i], key))
			return &obj->kids[i];
	return NULL;
}

int qjson_int(const struct qjson *obj, const char *key, int64_t dflt, int64_t *out,
	      struct err_msg *msg)
{
	const struct qjson *v = qjson_get(obj, key);
	char *end;
	long long x;

	if (!v || v->type == QJ_NULL) {
		*out = dflt;
		return 0;
	}
	if ((v->type != QJ_NUM && v->type != QJ_STR) || !v->len)
		return err_set(msg, ERR_INVALID, "field %s: want an integer", key);
	errno = 0;
	x = strtoll(v->s, &end, 10);
	if (errno || *end)
		return err_set(msg, ERR_INVALID, "field %s: \"%.40s\" is not an int64", key, v->s);
	*out = x;
	return 0;
}

int qjson_double(const struct qjson *obj, const char *key, double *out, struct err_msg *msg)
{
	const struct qjson *v = qjson_get(obj, key);
	char *end;

	if (!v || v->type == QJ_NULL) {
		*out = 0;
		return 0;
	}
	if ((v->type != QJ_NUM && v->type != QJ_STR) || !v->len)
		return err_set(msg, ERR_INVALID, "field %s: want a number", key);
	errno = 0;
	*out = strtod(v->s, &end);
	if (errno || *end)
		return err_set(msg, ERR_INVALID, "field %s: \"%.40s\" is not a number", key, v->s);
	return 0;
}

int qjson_str(const struct qjson *obj, const char *key, const char **out, struct err_msg *msg)
{
	const struct qjson *v = qjson_get(obj, key);

	if (!v || v->type == QJ_NULL) {
		*out = "";
		return 0;
	}
	if (v->type != QJ_STR)
		return err_set(msg, ERR_INVALID, "field %s: want a string", key);
	*out = v->s;
	return 0;
}
