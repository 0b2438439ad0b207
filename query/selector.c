/*
 * selector.c - label selectors (`type{name="v", env=~"a|b"}`), matching of
 * label sets, time strings, and series selection through the postings.
 */
#include "query_int.h"

#include "base/hex.h"
#include "base/err.h"
#include "storage/storage.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const char *s;
	size_t len, pos;
	struct err_msg *msg;
};

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static int fail(struct parser *p, const char *what)
{
	return err_set(p->msg, ERR_INVALID, "selector: at offset %zu: %s", p->pos, what);
}

static int is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9') || c == '.';
}


static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	o[0] = (char)(0xe0 | cp >> 12);
	o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[2] = (char)(0x80 | (cp & 0x3f));
	return 3;
}

/* Reads a quoted string ("..." or '...' with escapes, `...` raw); returns owned. */
static int parse_string(struct parser *p, char **out)
{
	char q, *o;
	size_t n = 0;

	if (p->pos >= p->len || (p->s[p->pos] != '"' && p->s[p->pos] != '\'' && p->s[p->pos] != '`'))
		return fail(p, "expected a quoted value");
	q = p->s[p->pos++];
	o = malloc(p->len - p->pos + 1);
	if (!o)
		return ERR_NOMEM;
	for (;;) {
		char c;

		if (p->pos >= p->len) {
			free(o);
			return fail(p, "unterminated quoted value");
		}
		c = p->s[p->pos++];
		if (c == q)
			break;
		if (c != '\\' || q == '`') {
			o[n++] = c;
			continue;
		}
		if (p->pos >= p->len) {
			free(o);
			return fail(p, "unterminated escape");
		}
		c = p->s[p->pos++];
		switch (c) {
		case '"': case '\'': case '\\': case '`': o[n++] = c; break;
		case 'n': o[n++] = '\n'; break;
		case 't': o[n++] = '\t'; break;
		case 'r': o[n++] = '\r'; break;
		case 'a': o[n++] = '\a'; break;
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'v': o[n++] = '\v'; break;
		case 'x': case 'u': {
			int digits = c == 'x' ? 2 : 4, h;
			unsigned cp = 0;

			for (int i = 0; i < digits; i++) {
				if (p->pos >= p->len || (h = hex_digit(p->s[p->pos])) < 0) {
					free(o);
					return fail(p, "bad hex digit in escape");
				}
				cp = cp << 4 | (unsigned)h;
				p->pos++;
			}
			if (cp == 0) {
				free(o);
				return fail(p, "NUL character in value");
			}
			/* \x is a byte; \u a code point (BMP; surrogates rejected). */
			if (c == 'x') {
				o[n++] = (char)cp;
			} else {
				if (cp >= 0xd800 && cp <= 0xdfff) {
					free(o);
					return fail(p, "surrogate in \\u escape");
				}
				n += put_utf8(o + n, cp);
			}
			break;
		}
		default:
			free(o);
			p->pos--;
			return fail(p, "unknown escape sequence");
		}
	}
	o[n] = '\0';
	*out = o;
	return 0;
}

static void matcher_free(struct query_matcher *m)
{
	free(m->name);
	free(m->value);
	if (m->re) {
		regfree(m->re);
		free(m->re);
	}
}

void query_selector_release(struct query_selector *sel)
{
	if (!sel)
		return;
	for (size_t i = 0; i < sel->n; i++)
		matcher_free(&sel->m[i]);
	free(sel->m);
	free(sel->profile_type);
	memset(sel, 0, sizeof(*sel));
}

static int compile_re(struct parser *p, struct query_matcher *m)
{
	size_t vl = strlen(m->value);
	char *pat = malloc(vl + 5);
	regex_t *re = malloc(sizeof(*re));
	int rc;

	if (!pat || !re) {
		free(pat);
		free(re);
		return ERR_NOMEM;
	}
	/* Fully anchored, as Prometheus: the whole value must match. */
	memcpy(pat, "^(", 2);
	memcpy(pat + 2, m->value, vl);
	memcpy(pat + 2 + vl, ")$", 3);
	rc = regcomp(re, pat, REG_EXTENDED | REG_NOSUB);
	free(pat);
	if (rc) {
		char e[128];

		regerror(rc, re, e, sizeof(e));
		free(re);
		return err_set(p->msg, ERR_INVALID, "selector: label %s: bad regex \"%s\": %s",
			       m->name, m->value, e);
	}
	m->re = re;
	return 0;
}

static int parse_matcher(struct parser *p, struct query_matcher *m)
{
	size_t start = p->pos;
	int rc;

	if (p->pos >= p->len || !is_name_start(p->s[p->pos]))
		return fail(p, "expected a label name");
	while (p->pos < p->len && is_name_char(p->s[p->pos]))
		p->pos++;
	m->name = strndup(p->s + start, p->pos - start);
	if (!m->name)
		return ERR_NOMEM;
	skip_ws(p);
	if (p->pos + 1 < p->len && p->s[p->pos] == '=' && p->s[p->pos + 1] == '~') {
		m->op = QUERY_RE;
		p->pos += 2;
	} else if (p->pos + 1 < p->len && p->s[p->pos] == '!' && p->s[p->pos + 1] == '~') {
		m->op = QUERY_NRE;
		p->pos += 2;
	} else if (p->pos + 1 < p->len && p->s[p->pos] == '!' && p->s[p->pos + 1] == '=') {
		m->op = QUERY_NEQ;
		p->pos += 2;
	} else if (p->pos < p->len && p->s[p->pos] == '=') {
		m->op = QUERY_EQ;
		p->pos += 1;
	} else {
		return fail(p, "expected '=', '!=', '=~' or '!~' after the label name");
	}
	skip_ws(p);
	rc = parse_string(p, &m->value);
	if (!rc && (m->op == QUERY_RE || m->op == QUERY_NRE))
		rc = compile_re(p, m);
	return rc;
}

static int check_profile_type(struct parser *p, const char *t)
{
	int colons = 0;

	for (const char *c = t; *c; c++)
		colons += *c == ':';
	if (colons != 4 || t[0] == ':' || strstr(t, "::") || t[strlen(t) - 1] == ':')
		return err_set(p->msg, ERR_INVALID,
			       "selector: profile type \"%s\" is not "
			       "name:sample_type:sample_unit:period_type:period_unit", t);
	return 0;
}

int query_selector_parse(const char *s, size_t len, struct query_selector *out,
			 struct err_msg *msg)
{
	struct parser p = { s, len, 0, msg };
	struct query_selector sel = { 0 };
	size_t start, cap = 0;
	int rc = 0;

	if (len > QUERY_MAX_SELECTOR_BYTES)
		return err_set(msg, ERR_TOO_LARGE, "selector: %zu bytes, the limit is %d", len,
			       QUERY_MAX_SELECTOR_BYTES);
	if (memchr(s, '\0', len))
		return err_set(msg, ERR_INVALID, "selector: NUL byte");
	skip_ws(&p);
	start = p.pos;
	while (p.pos < len && p.s[p.pos] != '{' && p.s[p.pos] != ' ' && p.s[p.pos] != '\t' &&
	       p.s[p.pos] != '\n' && p.s[p.pos] != '\r' && p.s[p.pos] != '}' && p.s[p.pos] != '"')
		p.pos++;
	if (p.pos > start) {
		sel.profile_type = strndup(s + start, p.pos - start);
		if (!sel.profile_type)
			return ERR_NOMEM;
		rc = check_profile_type(&p, sel.profile_type);
		if (rc)
			goto out;
	}
	skip_ws(&p);
	if (p.pos < len && s[p.pos] == '{') {
		p.pos++;
		for (;;) {
			skip_ws(&p);
			if (p.pos < len && s[p.pos] == '}')
				break;
			if (sel.n >= QUERY_MAX_MATCHERS) {
				rc = err_set(msg, ERR_TOO_LARGE, "selector: more than %d matchers",
					     QUERY_MAX_MATCHERS);
				goto out;
			}
			if (sel.n == cap) {
				struct query_matcher *nm;

				cap = cap ? cap * 2 : 4;
				nm = realloc(sel.m, cap * sizeof(*nm));
				if (!nm) {
					rc = ERR_NOMEM;
					goto out;
				}
				sel.m = nm;
			}
			memset(&sel.m[sel.n], 0, sizeof(sel.m[0]));
			sel.n++;
			rc = parse_matcher(&p, &sel.m[sel.n - 1]);
			if (rc)
				goto out;
			skip_ws(&p);
			if (p.pos < len && s[p.pos] == ',') {
				p.pos++;
				continue;
			}
			if (p.pos < len && s[p.pos] == '}')
				break;
			rc = fail(&p, "expected ',' or '}' after a matcher");
			goto out;
		}
		p.pos++;
	}
	skip_ws(&p);
	if (p.pos != len) {
		rc = fail(&p, "unexpected character");
		goto out;
	}
	*out = sel;
	return 0;
out:
	query_selector_release(&sel);
	return rc;
}

int query_selector_parse2(const char *profile_type, const char *label_selector,
			  struct query_selector *out, struct err_msg *msg)
{
	struct query_selector sel;
	struct parser p = { NULL, 0, 0, msg };
	const char *ls = label_selector ? label_selector : "";
	int rc;

	rc = query_selector_parse(ls, strlen(ls), &sel, msg);
	if (rc)
		return rc;
	if (profile_type && *profile_type) {
		rc = check_profile_type(&p, profile_type);
		if (!rc && sel.profile_type && strcmp(sel.profile_type, profile_type))
			rc = err_set(msg, ERR_INVALID,
				     "selector: profile type \"%s\" contradicts \"%s\"",
				     sel.profile_type, profile_type);
		if (!rc && !sel.profile_type && !(sel.profile_type = strdup(profile_type)))
			rc = ERR_NOMEM;
		if (rc) {
			query_selector_release(&sel);
			return rc;
		}
	}
	*out = sel;
	return 0;
}

static const char *label_value(const struct store_label *labels, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(labels[i].name, name))
			return labels[i].value;
	return "";
}

int query_selector_matches(const struct query_selector *sel, const struct store_label *labels,
			   size_t n)
{
	if (sel->profile_type &&
	    strcmp(label_value(labels, n, STORE_LABEL_PROFILE_TYPE), sel->profile_type))
		return 0;
	for (size_t i = 0; i < sel->n; i++) {
		const struct query_matcher *m = &sel->m[i];
		const char *v = label_value(labels, n, m->name);
		int hit;

		switch (m->op) {
		case QUERY_EQ: hit = !strcmp(v, m->value); break;
		case QUERY_NEQ: hit = !!strcmp(v, m->value); break;
		case QUERY_RE: hit = !regexec(m->re, v, 0, NULL, 0); break;
		default: hit = !!regexec(m->re, v, 0, NULL, 0); break;
		}
		if (!hit)
			return 0;
	}
	return 1;
}

/* ---- time ------------------------------------------------------------------ */

static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

int query_parse_time(const char *s, int64_t now_ns, int64_t *out_ns, struct err_msg *msg)
{
	size_t n = s ? strlen(s) : 0;
	uint64_t v, mult;

	if (!n || n > 32)
		return err_set(msg, ERR_INVALID, "time: \"%.32s\" is empty or too long", s ? s : "");
	if (n >= 3 && !memcmp(s, "now", 3)) {
		if (n == 3) {
			*out_ns = now_ns;
			return 0;
		}
		if (s[3] != '-' || n < 6)
			return err_set(msg, ERR_INVALID, "time: \"%s\": want now-<N><s|m|h|d|w>", s);
		switch (s[n - 1]) {
		case 's': mult = 1000000000ULL; break;
		case 'm': mult = 60ULL * 1000000000ULL; break;
		case 'h': mult = 3600ULL * 1000000000ULL; break;
		case 'd': mult = 86400ULL * 1000000000ULL; break;
		case 'w': mult = 7ULL * 86400ULL * 1000000000ULL; break;
		default:
			return err_set(msg, ERR_INVALID, "time: \"%s\": unit must be s, m, h, d or w", s);
		}
		if (parse_u64(s + 4, n - 5, &v) || v > (uint64_t)INT64_MAX / mult ||
		    (int64_t)(v * mult) > now_ns)
			return err_set(msg, ERR_INVALID, "time: \"%s\": bad or too large offset", s);
		*out_ns = now_ns - (int64_t)(v * mult);
		return 0;
	}
	if (parse_u64(s, n, &v))
		return err_set(msg, ERR_INVALID,
			       "time: \"%s\" is not now, now-<N><unit> or a Unix time", s);
	/* Seconds until 2286, then milliseconds, microseconds, nanoseconds. */
	if (v < 10000000000ULL)
		mult = 1000000000ULL;
	else if (v < 10000000000000ULL)
		mult = 1000000ULL;
	else if (v < 10000000000000000ULL)
		mult = 1000ULL;
	else
		mult = 1;
	if (v > (uint64_t)INT64_MAX / mult)
		return err_set(msg, ERR_INVALID, "time: \"%s\" is out of range", s);
	*out_ns = (int64_t)(v * mult);
	return 0;
}

/* ---- series selection ------------------------------------------------------ */

struct select_ctx {
	struct qctx *q;
	const struct query_selector *sel;
	qseries_cb cb;
	void *ctx;
	int rc;
};

static int select_one(void *ctx, uint64_t id, uint32_t part, const struct store_label *labels,
		      size_t n)
{
	struct select_ctx *c = ctx;
	int rc;

	if ((++c->q->tick & 255) == 0 && (rc = qctx_check(c->q))) {
		c->rc = rc;
		return 1;
	}
	if (!query_selector_matches(c->sel, labels, n))
		return 0;
	rc = c->cb(c->ctx, id, part, labels, n);
	if (rc) {
		c->rc = rc;
		return 1;
	}
	return 0;
}

int qselect_series(struct qctx *q, const struct query_selector *sel, qseries_cb cb, void *ctx)
{
	struct select_ctx c = { q, sel, cb, ctx, 0 };
	const struct query_matcher *eq = NULL;
	int rc;

	/* The most selective equality we know of: service_name, then any. */
	for (size_t i = 0; i < sel->n; i++) {
		if (sel->m[i].op != QUERY_EQ || !sel->m[i].value[0])
			continue;
		if (!eq || !strcmp(sel->m[i].name, STORE_LABEL_SERVICE))
			eq = &sel->m[i];
	}
	if (eq)
		rc = store_series_with(q->st, q->tenant, eq->name, eq->value, select_one, &c);
	else if (sel->profile_type)
		rc = store_series_with(q->st, q->tenant, STORE_LABEL_PROFILE_TYPE, sel->profile_type,
				       select_one, &c);
	else
		rc = store_series_each(q->st, q->tenant, select_one, &c);
	if (c.rc)
		return c.rc;
	if (rc < 0)
		return err_set(q->msg, rc, "reading series: %s", err_str(rc));
	return 0;
}
