/*
 * tenants.c - per-tenant settings of the debug-info service
 * (debuginfo.h, "per-tenant settings"): which tenants symbolize, and the
 * upstream lists with their headers that replace the server's for some
 * tenants; the headers files; and the failed lookups through a tenant's
 * list, which are the tenant's business and so never go to the build ID's
 * record (whose status every tenant's queries read).
 *
 * The table is built whole and published with one atomic store: readers
 * (queries, workers, the ingest check) load it without a lock and never
 * see it change; a table replaced by a later call is kept until close,
 * as a reader may still hold it.  Failures live in a fixed table of slots chosen by a
 * hash of (list, build ID): bounded whatever the tenants send, and a slot
 * taken over by another build ID only means that one is looked up again
 * (the fetch budgets still apply).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/log.h"
#include "debuginfo_int.h"

#define HEADERS_FILE_MAX (64u << 10)

/* ---- headers files ---------------------------------------------------------- */

/* RFC 9110 token characters, what a header name is made of. */
static int tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void free_headers(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* One "Name: value" line of [p, e) into an owned string; ERR_INVALID. */
static int header_line(const char *p, const char *e, char **out)
{
	const char *colon = memchr(p, ':', (size_t)(e - p)), *v;
	char *h;

	if (!colon || colon == p)
		return ERR_INVALID;
	for (const char *q = p; q < colon; q++)
		if (!tchar((unsigned char)*q))
			return ERR_INVALID;
	for (v = colon + 1; v < e && (*v == ' ' || *v == '\t'); v++)
		;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (v == e)
		return ERR_INVALID;
	for (const char *q = v; q < e; q++)
		if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f)
			return ERR_INVALID;
	h = malloc((size_t)(colon - p) + 2 + (size_t)(e - v) + 1);
	if (!h)
		return ERR_NOMEM;
	sprintf(h, "%.*s: %.*s", (int)(colon - p), p, (int)(e - v), v);
	*out = h;
	return 0;
}

int debuginfo_headers_load(const char *path, char ***out, size_t *n, struct err_msg *msg)
{
	struct buf b;
	char **v = NULL;
	size_t k = 0, line = 0;
	const char *p, *e;
	struct stat st;
	int rc;

	buf_init(&b, HEADERS_FILE_MAX);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		return err_set(msg, rc, "debuginfod headers file %s: %s", path,
			       rc == ERR_TOO_LARGE ? "larger than 64 KiB" : strerror(errno));
	}
	p = b.data ? b.data : "";
	e = p + b.len;
	if (memchr(p, '\0', b.len))
		rc = err_set(msg, ERR_INVALID, "debuginfod headers file %s: NUL byte", path);
	while (!rc && p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p)), *le = nl ? nl : e;
		char *h = NULL;

		line++;
		if (le > p && le[-1] == '\r')
			le--;
		while (p < le && (*p == ' ' || *p == '\t'))
			p++;
		if (p < le && *p != '#') {
			if (k == DEBUGINFO_MAX_HEADERS) {
				rc = err_set(msg, ERR_TOO_LARGE,
					     "debuginfod headers file %s, line %zu: more than %d "
					     "headers", path, line, DEBUGINFO_MAX_HEADERS);
				break;
			}
			rc = header_line(p, le, &h);
			if (rc) {
				/* The line may hold a secret: say where, not what. */
				rc = err_set(msg, rc,
					     rc == ERR_NOMEM ? "debuginfod headers file %s, line %zu: out "
							       "of memory"
							     : "debuginfod headers file %s, line %zu: not "
							       "\"Name: value\" (a token, a colon, a "
							       "printable value)",
					     path, line);
				break;
			}
			if (!k)
				v = calloc(DEBUGINFO_MAX_HEADERS, sizeof(*v));
			if (!v) {
				free(h);
				rc = err_set(msg, ERR_NOMEM, "out of memory");
				break;
			}
			v[k++] = h;
		}
		p = nl ? nl + 1 : e;
	}
	/* The bytes held credentials: leave no copy in freed memory. */
	if (b.data)
		memset(b.data, 0, b.len);
	buf_release(&b);
	if (rc) {
		free_headers(v, k);
		return rc;
	}
	if (k && !stat(path, &st) && (st.st_mode & S_IROTH))
		log_warn("debuginfod headers file %s is readable by every user of this machine; "
			 "it holds credentials (chmod o-r)", path);
	*out = v;
	*n = k;
	return 0;
}

/* ---- upstream lists --------------------------------------------------------- */

int debuginfo__uset_init(struct debuginfo__uset *u, const char *owner, const char *urls,
			 const char *headers_file, struct err_msg *msg)
{
	char *copy = NULL;
	int rc;

	snprintf(u->owner, sizeof(u->owner), "%s", owner);
	/* A limits file lists URLs with commas (its words are blank-separated). */
	if (urls && strchr(urls, ',')) {
		copy = strdup(urls);
		if (!copy)
			return err_set(msg, ERR_NOMEM, "out of memory");
		for (char *c = copy; *c; c++)
			if (*c == ',')
				*c = ' ';
		urls = copy;
	}
	rc = debuginfo__upstreams_parse(urls, &u->ups, &u->n, msg);
	free(copy);
	if (rc)
		return rc;
	if (headers_file && headers_file[0]) {
		rc = debuginfo_headers_load(headers_file, &u->headers, &u->n_headers, msg);
		if (rc) {
			debuginfo__uset_release(u);
			return rc;
		}
	}
	return 0;
}

void debuginfo__uset_release(struct debuginfo__uset *u)
{
	for (size_t i = 0; i < u->n_headers; i++) {
		memset(u->headers[i], 0, strlen(u->headers[i]));
		free(u->headers[i]);
	}
	free(u->headers);
	free(u->ups);
	u->headers = NULL;
	u->n_headers = 0;
	u->ups = NULL;
	u->n = 0;
}

/* ---- the table -------------------------------------------------------------- */

static int cmp_tenant(const void *a, const void *b)
{
	return strcmp(((const struct debuginfo__tenant *)a)->name,
		      ((const struct debuginfo__tenant *)b)->name);
}

/* Frees `t` and the tables it replaced. */
static void tenants_free(struct debuginfo__tenants *t)
{
	while (t) {
		struct debuginfo__tenants *next = t->retired;

		for (size_t i = 0; i < t->n_sets; i++)
			debuginfo__uset_release(&t->sets[i]);
		free(t->sets);
		free(t->v);
		free(t);
		t = next;
	}
}

int debuginfo_tenants_set(struct debuginfo *s, int default_symbolize,
			  const struct debuginfo_tenant_conf *v, size_t n, struct err_msg *msg)
{
	struct debuginfo__tenants *t, *old;
	int rc = 0;

	t = calloc(1, sizeof(*t));
	if (!t || (n && !(t->v = calloc(n, sizeof(*t->v)))) ||
	    (n && !(t->sets = calloc(n, sizeof(*t->sets))))) {
		tenants_free(t);
		return err_set(msg, ERR_NOMEM, "out of memory");
	}
	t->dflt_symbolize = default_symbolize;
	for (size_t i = 0; i < n && !rc; i++) {
		struct debuginfo__tenant *e = &t->v[t->n];

		if (!v[i].tenant || !v[i].tenant[0] || strlen(v[i].tenant) >= sizeof(e->name)) {
			rc = err_set(msg, ERR_INVALID, "debuginfo: a tenant id of 1 to %zu bytes",
				     sizeof(e->name) - 1);
			break;
		}
		snprintf(e->name, sizeof(e->name), "%s", v[i].tenant);
		e->symbolize = v[i].symbolize;
		if (v[i].own_upstreams) {
			struct debuginfo__uset *u = &t->sets[t->n_sets];
			struct err_msg um;

			err_clear(&um);
			rc = debuginfo__uset_init(u, e->name, v[i].urls, v[i].headers_file, &um);
			if (rc) {
				err_set(msg, rc, "tenant %s: %s", e->name, um.text);
				break;
			}
			t->n_sets++;
			e->set = (unsigned)t->n_sets;
			if (u->n && (rc = debuginfo__curl_ready(s, msg)))
				break;
		}
		t->n++;
	}
	if (!rc && t->n) {
		qsort(t->v, t->n, sizeof(*t->v), cmp_tenant);
		for (size_t i = 1; i < t->n && !rc; i++)
			if (!strcmp(t->v[i - 1].name, t->v[i].name))
				rc = err_set(msg, ERR_INVALID, "debuginfo: tenant %s given twice",
					     t->v[i].name);
	}
	/* List numbers of the new table name other lists: forget their failures. */
	pthread_mutex_lock(&s->tfail_mu);
	if (!rc && s->tfail)
		memset(s->tfail, 0, DEBUGINFO_TENANT_FAILURES * sizeof(*s->tfail));
	pthread_mutex_unlock(&s->tfail_mu);
	if (rc) {
		tenants_free(t);
		return rc;
	}
	/* A table readers may still hold is kept until close. */
	old = atomic_exchange(&s->tenants, t);
	t->retired = old;
	return 0;
}

/* The entry of `tenant`, or NULL (also without a table). */
static const struct debuginfo__tenant *find(struct debuginfo *s, const char *tenant,
					    const struct debuginfo__tenants **tp)
{
	const struct debuginfo__tenants *t = atomic_load_explicit(&s->tenants,
								 memory_order_acquire);
	struct debuginfo__tenant key;

	*tp = t;
	if (!t || !tenant || !t->n || strlen(tenant) >= sizeof(key.name))
		return NULL;
	memcpy(key.name, tenant, strlen(tenant) + 1);
	return bsearch(&key, t->v, t->n, sizeof(*t->v), cmp_tenant);
}

int debuginfo_tenant_symbolizes(struct debuginfo *s, const char *tenant)
{
	const struct debuginfo__tenants *t;
	const struct debuginfo__tenant *e;

	if (!s || !tenant)
		return 1;
	e = find(s, tenant, &t);
	if (e)
		return e->symbolize;
	return t ? t->dflt_symbolize : 1;
}

unsigned debuginfo__tenant_set(struct debuginfo *s, const char *tenant)
{
	const struct debuginfo__tenants *t;
	const struct debuginfo__tenant *e = find(s, tenant, &t);

	return e ? e->set : 0;
}

const struct debuginfo__uset *debuginfo__uset_get(struct debuginfo *s, unsigned set)
{
	const struct debuginfo__tenants *t;

	if (!set || set == DEBUGINFO__SET_SERVER)
		return &s->server;
	t = atomic_load_explicit(&s->tenants, memory_order_acquire);
	return t && set <= t->n_sets ? &t->sets[set - 1] : NULL;
}

void debuginfo__tenants_release(struct debuginfo *s)
{
	tenants_free(atomic_exchange(&s->tenants, NULL));
	free(s->tfail);
	s->tfail = NULL;
}

/* ---- failed lookups through a tenant's list ----------------------------------- */

static size_t slot_of(unsigned set, const char *id)
{
	return (size_t)(hash_bytes(id, strlen(id), set) % DEBUGINFO_TENANT_FAILURES);
}

void debuginfo__tfail_put(struct debuginfo *s, unsigned set, const char *id,
			  enum debuginfo_status st, int64_t retry_at, const char *reason)
{
	struct debuginfo__tfail *f;

	if (!set)
		return;
	pthread_mutex_lock(&s->tfail_mu);
	if (!s->tfail && !(s->tfail = calloc(DEBUGINFO_TENANT_FAILURES, sizeof(*s->tfail)))) {
		pthread_mutex_unlock(&s->tfail_mu);
		return; /* not remembered: the budgets still bound the lookups */
	}
	f = &s->tfail[slot_of(set, id)];
	f->set = set;
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->status = st;
	f->retry_at = retry_at;
	debuginfo__copy_reason(f->reason, sizeof(f->reason), reason);
	pthread_mutex_unlock(&s->tfail_mu);
}

int debuginfo__tfail_get(struct debuginfo *s, unsigned set, const char *id,
			 struct debuginfo__tfail *out)
{
	const struct debuginfo__tfail *f;
	int found;

	if (!set)
		return 0;
	pthread_mutex_lock(&s->tfail_mu);
	f = s->tfail ? &s->tfail[slot_of(set, id)] : NULL;
	found = f && f->set == set && !strcmp(f->id, id);
	if (found)
		*out = *f;
	pthread_mutex_unlock(&s->tfail_mu);
	return found;
}

void debuginfo__tfail_clear(struct debuginfo *s, unsigned set, const char *id)
{
	struct debuginfo__tfail *f;

	if (!set)
		return;
	pthread_mutex_lock(&s->tfail_mu);
	f = s->tfail ? &s->tfail[slot_of(set, id)] : NULL;
	if (f && f->set == set && !strcmp(f->id, id))
		f->set = 0;
	pthread_mutex_unlock(&s->tfail_mu);
}
