/*
 * labels.c - series label checks and Pyroscope's legacy `name` parameter.
 *
 * Label names follow Prometheus plus the dots Pyroscope accepts:
 * [a-zA-Z_][a-zA-Z0-9_.]*.  The legacy name is `app.name.kind{k=v,k2="v 2"}`:
 * the last dot-segment may be a kind suffix (naming.c says which, per
 * format); values may be bare (spaces around them trimmed) or quoted with
 * \" and \\ escapes; labels named __*__ are dropped, as Pyroscope drops
 * them.
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/err.h"

#include <string.h>

int ingest__label_name_ok(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;

	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
		return 0;
	for (p++; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '.'))
			return 0;
	}
	return 1;
}

const char *ingest__label_get(const struct store_label *labels, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(labels[i].name, name) == 0)
			return labels[i].value;
	return NULL;
}

int ingest__check_labels(const struct ingest_limits *lim, const struct store_label *labels,
			 size_t n, struct err_msg *msg)
{
	const char *svc;

	if (n > lim->max_labels)
		return err_set(msg, ERR_TOO_LARGE, "%zu labels, more than the limit of %zu", n,
			       lim->max_labels);
	for (size_t i = 0; i < n; i++) {
		const char *name = labels[i].name, *value = labels[i].value;

		if (!name || !value)
			return err_set(msg, ERR_INVALID, "label %zu: missing name or value", i);
		if (strlen(name) > lim->max_label_bytes || strlen(value) > lim->max_label_bytes)
			return err_set(msg, ERR_TOO_LARGE, "label '%.64s': longer than %zu bytes",
				       name, lim->max_label_bytes);
		if (!ingest__label_name_ok(name))
			return err_set(msg, ERR_INVALID,
				       "label name '%.64s' is invalid (want [a-zA-Z_][a-zA-Z0-9_.]*)",
				       name);
		if (strcmp(name, STORE_LABEL_PROFILE_TYPE) == 0)
			return err_set(msg, ERR_INVALID, "label '%s' is set by the server",
				       STORE_LABEL_PROFILE_TYPE);
		for (size_t j = 0; j < i; j++)
			if (strcmp(labels[j].name, name) == 0)
				return err_set(msg, ERR_INVALID, "label '%s' given twice", name);
	}
	svc = ingest__label_get(labels, n, STORE_LABEL_SERVICE);
	if (!svc || !*svc)
		return err_set(msg, ERR_INVALID, "label '%s' is required", STORE_LABEL_SERVICE);
	if (ingest__label_get(labels, n, STORE_LABEL_NAME) &&
	    !*ingest__label_get(labels, n, STORE_LABEL_NAME))
		return err_set(msg, ERR_INVALID, "label '%s' is empty", STORE_LABEL_NAME);
	return 0;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

/* Copies [s, e) into the arena; a quoted value loses its quotes and escapes. */
static int copy_value(struct arena *a, const char *s, const char *e, const char **out,
		      struct err_msg *msg)
{
	char *p, *r, *w;

	if (s < e && *s == '"') {
		if (e - s < 2 || e[-1] != '"')
			return err_set(msg, ERR_INVALID, "name: unterminated quoted value");
		s++;
		e--;
	}
	p = arena_strndup(a, s, (size_t)(e - s));
	if (!p)
		return arena_failed(a);
	for (r = w = p; *r; r++) {
		if (*r == '\\' && (r[1] == '"' || r[1] == '\\'))
			r++;
		*w++ = *r;
	}
	*w = '\0';
	*out = p;
	return 0;
}

/* Finds the end of one `k=v` item: the next comma outside quotes. */
static const char *item_end(const char *s, const char *e)
{
	int quoted = 0;

	for (; s < e; s++) {
		if (quoted && *s == '\\' && s + 1 < e)
			s++;
		else if (*s == '"')
			quoted = !quoted;
		else if (!quoted && *s == ',')
			return s;
	}
	return e;
}

static int parse_braces(struct arena *a, const char *s, const char *e,
			struct store_label *out, size_t *n, size_t cap, struct err_msg *msg)
{
	trim(&s, &e);
	while (s < e) {
		const char *ie = item_end(s, e), *ks = s, *ke, *vs, *ve = ie;
		char *name;
		int rc;

		ke = memchr(s, '=', (size_t)(ie - s));
		if (!ke)
			return err_set(msg, ERR_INVALID, "name: label '%.*s' has no '='",
				       (int)(ie - s > 64 ? 64 : ie - s), s);
		vs = ke + 1;
		trim(&ks, &ke);
		trim(&vs, &ve);
		if (*n == cap)
			return err_set(msg, ERR_TOO_LARGE, "name: more than %zu labels", cap);
		name = arena_strndup(a, ks, (size_t)(ke - ks));
		if (!name)
			return arena_failed(a);
		if (!ingest__label_name_ok(name))
			return err_set(msg, ERR_INVALID, "name: label name '%.64s' is invalid", name);
		for (size_t i = 0; i < *n; i++)
			if (strcmp(out[i].name, name) == 0)
				return err_set(msg, ERR_INVALID, "name: label '%.64s' given twice",
					       name);
		out[*n].name = name;
		rc = copy_value(a, vs, ve, &out[*n].value, msg);
		if (rc)
			return rc;
		(*n)++;
		if (ie == e)
			break;
		s = ie + 1;
		trim(&s, &e);
		if (s == e)
			return err_set(msg, ERR_INVALID, "name: empty label after ','");
	}
	return 0;
}

int ingest__parse_name(struct arena *a, const char *name, struct ingest_name *out,
		       struct err_msg *msg)
{
	size_t len = strlen(name), cap, nb = 0, no = 0;
	const char *s = name, *e = name + len, *brace, *app_e, *dot = NULL;
	struct store_label *braces, *kept;
	char *app;
	int rc;

	if (len > INGEST_MAX_NAME_BYTES)
		return err_set(msg, ERR_TOO_LARGE, "name: longer than %d bytes",
			       INGEST_MAX_NAME_BYTES);
	trim(&s, &e);
	brace = memchr(s, '{', (size_t)(e - s));
	app_e = brace ? brace : e;
	trim(&s, &app_e);
	if (s == app_e)
		return err_set(msg, ERR_INVALID, "name: empty application name");
	for (const char *p = s; p < app_e; p++)
		if (*p == '}' || *p == '=' || *p == ',' || *p == '"' || *p == '\\' ||
		    (unsigned char)*p < 0x20)
			return err_set(msg, ERR_INVALID,
				       "name: invalid character '%c' in application name",
				       (unsigned char)*p < 0x20 ? '?' : *p);
	if (brace && e[-1] != '}')
		return err_set(msg, ERR_INVALID, "name: labels must end with '}'");
	/* Every item has an '=', so len/2 bounds the label count. */
	cap = len / 2 + 2;
	braces = arena_calloc(a, cap, sizeof(*braces));
	kept = arena_calloc(a, cap, sizeof(*kept));
	app = arena_strndup(a, s, (size_t)(app_e - s));
	if (!braces || !kept || !app)
		return arena_failed(a);
	if (brace) {
		rc = parse_braces(a, brace + 1, e - 1, braces, &nb, cap, msg);
		if (rc)
			return rc;
	}
	/* Labels named __*__ are the server's: agents send some of them
	 * (pyroscope-go's __session_id__), Pyroscope drops them, so do we. */
	for (size_t i = 0; i < nb; i++)
		if (!(braces[i].name[0] == '_' && braces[i].name[1] == '_'))
			kept[no++] = braces[i];
	for (const char *p = s; p < app_e; p++)
		if (*p == '.')
			dot = p;
	memset(out, 0, sizeof(*out));
	out->app = app;
	out->base_len = dot ? (size_t)(dot - s) : (size_t)(app_e - s);
	out->kind = dot ? app + (dot - s) + 1 : NULL;
	out->labels = kept;
	out->n_labels = no;
	return 0;
}

int ingest_legacy_labels(struct arena *a, const char *name, struct store_label **labels,
			 size_t *n, struct err_msg *msg)
{
	struct ingest_name nm;
	struct store_label *lab;
	const char *kind = NULL, *svc, *app;
	size_t no = 0;
	int rc;

	rc = ingest__parse_name(a, name, &nm, msg);
	if (rc)
		return rc;
	app = nm.app;
	if (nm.kind && (kind = ingest__kind_name(nm.kind, strlen(nm.kind)))) {
		if (nm.base_len == 0)
			return err_set(msg, ERR_INVALID, "name: empty application name");
		app = arena_strndup(a, nm.app, nm.base_len);
		if (!app)
			return arena_failed(a);
	}
	lab = arena_calloc(a, nm.n_labels + 2, sizeof(*lab));
	if (!lab)
		return arena_failed(a);
	svc = ingest__label_get(nm.labels, nm.n_labels, STORE_LABEL_SERVICE);
	lab[no].name = STORE_LABEL_SERVICE;
	lab[no++].value = svc ? svc : app;
	if (kind) {
		lab[no].name = STORE_LABEL_NAME;
		lab[no++].value = kind;
	}
	for (size_t i = 0; i < nm.n_labels; i++)
		if (strcmp(nm.labels[i].name, STORE_LABEL_SERVICE) != 0)
			lab[no++] = nm.labels[i];
	*labels = lab;
	*n = no;
	return 0;
}

char *ingest__profile_type_id(struct arena *a, const char *const parts[5])
{
	size_t n = 5, o = 0;
	char *r;

	for (int i = 0; i < 5; i++)
		n += strlen(parts[i]);
	r = arena_alloc(a, n);
	if (!r)
		return NULL;
	for (int i = 0; i < 5; i++) {
		size_t l = strlen(parts[i]);

		memcpy(r + o, parts[i], l);
		o += l;
		r[o++] = i < 4 ? ':' : '\0';
	}
	return r;
}
