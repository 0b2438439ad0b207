/*
 * selector.c - the selector language (`type{name="v", env=~"a|b"}`): parsing
 * and matching of label sets.
 */
#include "query/query_int.h"

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

/*
 * Regexes are compiled by glibc's regcomp, whose cost some patterns blow up
 * (measured on glibc 2.36):
 *   - a repetition is built by copying the repeated subtree (a+ is a a*,
 *     a{2,5} five copies), so stacked repetitions multiply: "x" and 30 '+'
 *     take gigabytes;
 *   - the epsilon closures of nullable repetitions (a?, a*) are computed in
 *     time quadratic in how many follow each other: (a?){1000} four times
 *     takes 2 s;
 *   - copies of a repetition of a repetition, ((a*)*){20} or (a?)+++, take
 *     time exponential in the copies: 11 s for 20.
 * The values of selectors are untrusted, so before regcomp the pattern is
 * checked against rules close to those of RE2, the syntax of Prometheus
 * and Pyroscope selectors: no repetition directly after another (RE2: "bad
 * repetition operator"), repeat counts up to 1000, no repetition of a
 * repetition inside a '+' or a repeat count, at most 1000 repetitions and
 * 65536 nodes once the copies are made, groups nested at most 256 deep.
 * Back-references (\1..\9, a glibc extension of ERE, matched in exponential
 * time; RE2 has none) are refused too.
 */
enum {
	REGEX_MAX_NODES = 1 << 16,
	REGEX_MAX_REPS = 1000,
	REGEX_MAX_COUNT = 1000,
	REGEX_MAX_NESTING = 256,
};

/* What a piece of pattern costs once regcomp made its copies. */
struct re_cost {
	size_t nodes;   /* syntax tree nodes */
	size_t reps;    /* repetition nodes among them (nullable loops) */
	unsigned depth; /* repetitions nested in repetitions */
};

/* a * b, saturated just past every limit. */
static size_t re_mul(size_t a, size_t b)
{
	return a && b > (REGEX_MAX_NODES + 1) / a ? REGEX_MAX_NODES + 1 : a * b;
}

static void re_add(struct re_cost *sum, const struct re_cost *c)
{
	sum->nodes += c->nodes;
	sum->reps += c->reps;
	if (c->depth > sum->depth)
		sum->depth = c->depth;
}

/*
 * Reads an interval "{m}", "{m,}", "{m,n}" or "{,n}" at s[*i] into *lo, *hi
 * (SIZE_MAX: unbounded); 0, or -1 when it is not one (a plain '{').
 */
static int re_interval(const char *s, size_t n, size_t *i, size_t *lo, size_t *hi)
{
	size_t j = *i + 1, v[2] = { 0, 0 }, k = 0, digits[2] = { 0, 0 };

	for (; j < n && s[j] != '}'; j++) {
		if (s[j] == ',' && k == 0) {
			k = 1;
			continue;
		}
		if (s[j] < '0' || s[j] > '9')
			return -1;
		if (v[k] <= REGEX_MAX_COUNT)
			v[k] = v[k] * 10 + (size_t)(s[j] - '0');
		digits[k]++;
	}
	/* glibc reads "{,n}" as "{0,n}". */
	if (j == n || (!digits[0] && !k))
		return -1;
	*lo = v[0];
	*hi = !k ? v[0] : digits[1] ? v[1] : SIZE_MAX;
	*i = j;
	return 0;
}

/* Index of the ']' that closes the bracket expression opening at s[i]. */
static size_t re_bracket_end(const char *s, size_t n, size_t i)
{
	i++;
	if (i < n && s[i] == '^')
		i++;
	if (i < n && s[i] == ']') /* a ']' first is a member */
		i++;
	while (i < n && s[i] != ']') {
		/* [:alpha:], [.x.] and [=x=] may hold a ']' of their own. */
		if (s[i] == '[' && i + 1 < n && strchr(":.=", s[i + 1])) {
			size_t j = i + 2;

			while (j + 1 < n && !(s[j] == s[i + 1] && s[j + 1] == ']'))
				j++;
			i = j + 1;
		}
		i++;
	}
	return i;
}

/*
 * The cost of repeating `a` as s[i] says ('*', '+', '?', or an interval of
 * lo..hi) into *a; a refusal's reason in *why.
 */
static int re_repeat(struct re_cost *a, char op, size_t lo, size_t hi, const char **why)
{
	size_t copies = 1;
	int loop = 1;    /* adds a nullable repetition node */

	if (op == '+') {
		copies = 2;
	} else if (op == '{') {
		if (lo > REGEX_MAX_COUNT || (hi != SIZE_MAX && hi > REGEX_MAX_COUNT) ||
		    (hi != SIZE_MAX && hi < lo)) {
			*why = "a repeat count above 1000 or reversed";
			return ERR_INVALID;
		}
		copies = hi == SIZE_MAX ? lo + 1 : hi ? hi : 1;
		loop = hi != lo;
	}
	if (copies > 1 && a->depth >= 2) {
		/* copies of a loop in a loop: ((a*)*){20}, ((a?)+)+ */
		*why = "a repetition of a repetition repeated again";
		return ERR_INVALID;
	}
	a->nodes = re_mul(a->nodes, copies) + 1;
	a->reps = re_mul(a->reps, copies) + (size_t)loop;
	a->depth += (unsigned)loop;
	return 0;
}

/* Checks `s`, the pattern as compiled (the value inside its anchors). */
static int re_check(struct parser *p, const struct query_matcher *m, const char *s)
{
	struct re_cost sum[REGEX_MAX_NESTING + 1], last = { 0, 0, 0 };
	size_t depth = 0, n = strlen(s);
	const char *why = NULL;
	int quantified = 0; /* the last token was a repetition */

	memset(sum, 0, sizeof(sum));
	for (size_t i = 0; i < n && !why; i++) {
		struct re_cost atom = { 1, 0, 0 };
		size_t lo = 0, hi = 0;
		char op = s[i];
		int rc;

		switch (op) {
		case '(':
			if (depth == REGEX_MAX_NESTING)
				return err_set(p->msg, ERR_TOO_LARGE,
					       "selector: label %s: regex groups nested deeper than %d",
					       m->name, REGEX_MAX_NESTING);
			memset(&sum[++depth], 0, sizeof(sum[0]));
			last = (struct re_cost){ 0, 0, 0 };
			quantified = 0;
			continue;
		case ')':
			if (depth) {
				atom = sum[depth--];
				atom.nodes++;
			}
			break;
		case '|':
			last = (struct re_cost){ 0, 0, 0 };
			quantified = 0;
			continue;
		case '{':
			if (re_interval(s, n, &i, &lo, &hi))
				break; /* a plain '{' */
			/* fall through */
		case '*':
		case '+':
		case '?':
			if (quantified) {
				why = "a repetition directly after another (as a++ or a*{2})";
				break;
			}
			quantified = 1;
			if (!last.nodes)
				continue; /* nothing to repeat: regcomp judges it */
			sum[depth].nodes -= last.nodes;
			sum[depth].reps -= last.reps;
			rc = re_repeat(&last, op, lo, hi, &why);
			if (rc)
				return err_set(p->msg, rc, "selector: label %s: regex has %s",
					       m->name, why);
			re_add(&sum[depth], &last);
			goto check;
		case '\\':
			if (i + 1 < n && s[i + 1] >= '1' && s[i + 1] <= '9')
				return err_set(p->msg, ERR_INVALID,
					       "selector: label %s: back-references are not supported",
					       m->name);
			i++;
			break;
		case '[':
			i = re_bracket_end(s, n, i);
			break;
		default:
			break;
		}
		if (why)
			break;
		quantified = 0;
		last = atom;
		re_add(&sum[depth], &atom);
check:
		if (sum[depth].nodes > REGEX_MAX_NODES || sum[depth].reps > REGEX_MAX_REPS)
			return err_set(p->msg, ERR_TOO_LARGE,
				       "selector: label %s: regex too costly to compile (over %d nodes "
				       "or %d repetitions once repeat counts are expanded)",
				       m->name, REGEX_MAX_NODES, REGEX_MAX_REPS);
	}
	if (why)
		return err_set(p->msg, ERR_INVALID, "selector: label %s: regex has %s", m->name,
			       why);
	return 0;
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
	/* The value's own ')' may close the anchors' group: check what is compiled. */
	rc = re_check(p, m, pat);
	if (rc) {
		free(pat);
		free(re);
		return rc;
	}
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
