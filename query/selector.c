/*
 * selector.c - the selector language (`type{name="v", env=~"a|b"}`): parsing
 * and matching of label sets.
 */
#include "query_int.h"

#include "base/hex.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/json.h"
#include "storage/storage.h"

#include <assert.h>
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
	query__regex_free(m->re);
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

/*
 * What parsing checks of a regex: its length and its UTF-8, both free to
 * check.  Compiling waits for a series to match (query_selector_compile).
 */
static int check_re(struct parser *p, const struct query_matcher *m)
{
	size_t vl = strlen(m->value);

	if (vl > QUERY_MAX_REGEX_BYTES)
		return err_set(p->msg, ERR_TOO_LARGE,
			       "selector: label %s: regex of %zu bytes, the limit is %d", m->name, vl,
			       QUERY_MAX_REGEX_BYTES);
	if (!json_utf8_valid(m->value, vl))
		return err_set(p->msg, ERR_INVALID, "selector: label %s: regex is not UTF-8",
			       m->name);
	return 0;
}

int query_selector_compile(struct query_selector *sel, struct err_msg *msg)
{
	if (sel->compiled)
		return 0;
	for (size_t i = 0; i < sel->n; i++) {
		struct query_matcher *m = &sel->m[i];
		int rc;

		if ((m->op != QUERY_RE && m->op != QUERY_NRE) || m->re)
			continue;
		rc = query__regex_compile(m->value, strlen(m->value), m->name, &m->re, msg);
		if (rc)
			return rc;
	}
	sel->compiled = 1;
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
		rc = check_re(p, m);
	return rc;
}

/*
 * A profile type ID is five parts joined by ':'.  Parts may be empty, as
 * Pyroscope allows: a pprof without a period type is stored as
 * `memory:inuse_space:bytes::`, older .NET agents' types as
 * `process_cpu:<type>:<unit>::nanoseconds` (docs/ingest.md).
 */
static int check_profile_type(struct parser *p, const char *t)
{
	int colons = 0;

	for (const char *c = t; *c; c++)
		colons += *c == ':';
	if (colons != 4)
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
			if ((rc = GROW(sel.m, cap, sel.n + 1, QUERY_MAX_MATCHERS, NULL)))
				goto out;
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
			   size_t n, struct err_msg *msg)
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
		default:
			assert(m->re); /* query_selector_compile ran */
			hit = query__regex_match(m->re, v, strlen(v), m->name, msg);
			if (hit < 0)
				return hit;
			if (m->op == QUERY_NRE)
				hit = !hit;
			break;
		}
		if (!hit)
			return 0;
	}
	return 1;
}

int query__profile_type_split(const char *id, char *tmp, size_t tmpsz, const char *parts[5])
{
	size_t n = strlen(id);
	int k = 0;

	if (n + 1 > tmpsz)
		return ERR_INVALID;
	memcpy(tmp, id, n + 1);
	parts[k++] = tmp;
	for (char *c = tmp; *c; c++) {
		if (*c != ':')
			continue;
		if (k == 5)
			return ERR_INVALID;
		*c = '\0';
		parts[k++] = c + 1;
	}
	return k == 5 ? 0 : ERR_INVALID;
}
