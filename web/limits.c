/*
 * limits.c - per-tenant limits (docs/limits.md): the limits file, and the
 * state that enforces it: token buckets for ingest bytes and profiles and
 * for debug-info bytes, concurrent queries, and the set of tenants the
 * server serves.
 *
 * State.  One entry per known tenant in an array allocated once at start
 * (max_tenants entries, or more when the store already holds more tenants),
 * so an entry never moves and its atomics can be read by /metrics without a
 * lock; the buckets and the index (base/hmap.h over the names) are guarded
 * by one mutex, held for a few hundred nanoseconds per request.  Queries of
 * a tenant the server does not know (no data yet) share one entry,
 * `unknown`, so no client-chosen name adds state.
 */
#include "web_int.h"

#include "base/clock.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "base/log.h"
#include "debuginfo/debuginfo.h"
#include "ingest/ingest.h"
#include "query/query.h"
#include "storage/storage.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const web__limit_reason_names[WEB_LIM_COUNT] = {
	"ingest_bytes", "ingest_profiles", "series", "labels", "queries", "debuginfo_bytes",
	"tenant_cap", "tenant_not_listed", "label_names", "label_values", "query_bytes",
};

/* ---- the file ------------------------------------------------------------ */

void web__tenant_limits_default(struct web__tenant_limits *l)
{
	struct ingest_limits in;

	/* The series and label caps default to ingest's own (docs/ingest.md). */
	ingest_limits_default(&in);
	l->ingest_bytes_per_s = 64.0 * 1024 * 1024;
	l->ingest_profiles_per_s = 10000;
	l->burst_s = 5;
	l->max_series = in.max_series;
	l->max_queries = 8;
	l->max_labels = (uint32_t)in.max_labels;
	l->max_label_bytes = (uint32_t)in.max_label_bytes;
	l->max_label_names = (uint32_t)in.max_label_names;
	l->max_label_values = (uint32_t)in.max_label_values;
	l->debuginfo_bytes_per_hour = 16.0 * 1024 * 1024 * 1024;
	l->max_query_bytes = (double)QUERY_DEFAULT_MAX_SCAN_BYTES;
	l->max_perfmaps = 1000;
	l->symbolization_off = 0;
}

void web__limits_conf_default(struct web__limits_conf *c, const struct web__tenant_limits *base)
{
	memset(c, 0, sizeof(*c));
	c->max_tenants = 1000;
	c->listed_only = 0;
	if (base)
		c->dflt = *base;
	else
		web__tenant_limits_default(&c->dflt);
}

void web__limits_conf_release(struct web__limits_conf *c)
{
	for (size_t i = 0; i < c->n_tenants; i++) {
		free(c->tenants[i].debuginfod_urls);
		free(c->tenants[i].debuginfod_headers_file);
	}
	free(c->tenants);
	c->tenants = NULL;
	c->n_tenants = 0;
}

/* A number with an optional binary suffix (K, KiB, M, MiB, G, GiB; k = 1024). */
static int parse_num(const char *v, size_t len, double max, double *out)
{
	char tmp[64], *end;
	double x, mul = 1;

	if (!len || len >= sizeof(tmp))
		return ERR_INVALID;
	memcpy(tmp, v, len);
	tmp[len] = '\0';
	if (tmp[0] < '0' || tmp[0] > '9')
		return ERR_INVALID;
	errno = 0;
	x = strtod(tmp, &end);
	if (errno || end == tmp)
		return ERR_INVALID;
	if (*end) {
		static const struct {
			const char *s;
			double m;
		} suf[] = { { "K", 1024.0 }, { "KiB", 1024.0 }, { "M", 1048576.0 },
			    { "MiB", 1048576.0 }, { "G", 1073741824.0 }, { "GiB", 1073741824.0 } };
		size_t i;

		for (i = 0; i < sizeof(suf) / sizeof(suf[0]); i++)
			if (!strcmp(end, suf[i].s))
				break;
		if (i == sizeof(suf) / sizeof(suf[0]))
			return ERR_INVALID;
		mul = suf[i].m;
	}
	x *= mul;
	if (!isfinite(x) || x <= 0 || x > max)
		return ERR_INVALID;
	*out = x;
	return 0;
}

/* Keys of tenant and default lines: name, where, integer or not, largest. */
static const struct key {
	const char *name;
	size_t off;
	int integer;
	double max;
} keys[] = {
	{ "ingest_bytes_per_s", offsetof(struct web__tenant_limits, ingest_bytes_per_s), 0, 1e15 },
	{ "ingest_profiles_per_s", offsetof(struct web__tenant_limits, ingest_profiles_per_s), 0, 1e9 },
	{ "burst_s", offsetof(struct web__tenant_limits, burst_s), 0, 3600 },
	{ "max_series", offsetof(struct web__tenant_limits, max_series), 1, 1e9 },
	{ "max_queries", offsetof(struct web__tenant_limits, max_queries), 1, 1024 },
	{ "max_labels", offsetof(struct web__tenant_limits, max_labels), 1, 256 },
	{ "max_label_bytes", offsetof(struct web__tenant_limits, max_label_bytes), 1, 65536 },
	{ "debuginfo_bytes_per_hour", offsetof(struct web__tenant_limits, debuginfo_bytes_per_hour),
	  0, 1e15 },
	{ "max_label_names", offsetof(struct web__tenant_limits, max_label_names), 1, 1e6 },
	{ "max_label_values", offsetof(struct web__tenant_limits, max_label_values), 1, 1e9 },
	{ "max_query_bytes", offsetof(struct web__tenant_limits, max_query_bytes), 1, 1e15 },
	{ "max_perfmaps", offsetof(struct web__tenant_limits, max_perfmaps), 1, 1048576 },
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

/* Bytes of key k's field: a double, max_series' uint64_t, or a uint32_t. */
static size_t key_size(size_t k)
{
	if (keys[k].off == offsetof(struct web__tenant_limits, max_series))
		return sizeof(uint64_t);
	if (!keys[k].integer || keys[k].off == offsetof(struct web__tenant_limits, max_query_bytes))
		return sizeof(double);
	return sizeof(uint32_t);
}

static void put_key(struct web__tenant_limits *l, size_t k, double v)
{
	char *p = (char *)l + keys[k].off;

	if (keys[k].off == offsetof(struct web__tenant_limits, max_series))
		*(uint64_t *)(void *)p = (uint64_t)v;
	else if (key_size(k) == sizeof(double))
		memcpy(p, &v, sizeof(double));
	else
		*(uint32_t *)(void *)p = (uint32_t)v;
}

/* Bits of a line's keys past the numeric ones: the symbolization keys. */
#define SET_SYMBOLIZATION (1u << N_KEYS)
#define SET_URLS (1u << (N_KEYS + 1))
#define SET_HEADERS (1u << (N_KEYS + 2))

/* A copy of [p, p + n) as a string (owned), commas turned to blanks when `urls`. */
static char *dup_value(const char *p, size_t n, int urls)
{
	char *v = malloc(n + 1);

	if (!v)
		return NULL;
	memcpy(v, p, n);
	v[n] = '\0';
	for (char *c = v; urls && *c; c++)
		if (*c == ',')
			*c = ' ';
	return v;
}

/* "none" or 1..DEBUGINFO_MAX_UPSTREAMS comma-separated http(s) URLs. */
static int check_urls(const char *v, size_t n, size_t line, struct err_msg *msg)
{
	size_t k = 0;

	if (n == 4 && !memcmp(v, "none", 4))
		return 0;
	for (const char *p = v, *e = v + n; p <= e; k++) {
		const char *c = memchr(p, ',', (size_t)(e - p));
		size_t ul = c ? (size_t)(c - p) : (size_t)(e - p);

		if (k == DEBUGINFO_MAX_UPSTREAMS)
			return err_set(msg, ERR_INVALID,
				       "limits file, line %zu: debuginfod_urls lists more than %d URLs",
				       line, DEBUGINFO_MAX_UPSTREAMS);
		if (ul > WEB_LIMITS_URL_MAX ||
		    !((ul > 7 && !memcmp(p, "http://", 7)) || (ul > 8 && !memcmp(p, "https://", 8))))
			return err_set(msg, ERR_INVALID,
				       "limits file, line %zu: debuginfod_urls wants \"none\" or "
				       "http:// or https:// URLs of at most %d bytes, separated by "
				       "commas (URL %zu is not)",
				       line, WEB_LIMITS_URL_MAX, k + 1);
		p += ul + 1;
	}
	return 0;
}

/*
 * The symbolization keys (docs/limits.md, "Symbolization"): 0 when `kv`
 * was one, 1 when it is none of them, or an error naming the line.  `t` is
 * the tenant line's override, NULL on the default line.
 */
static int sym_kv(const char *kv, size_t len, struct web__tenant_override *t,
		  struct web__tenant_limits *l, unsigned *set, size_t line, struct err_msg *msg)
{
	const char *eq = memchr(kv, '=', len), *v = eq ? eq + 1 : kv + len;
	size_t nl = eq ? (size_t)(eq - kv) : len, vl = len - nl - (eq != NULL);
	unsigned bit;
	int rc;

	if (nl == 13 && !memcmp(kv, "symbolization", 13))
		bit = SET_SYMBOLIZATION;
	else if (nl == 15 && !memcmp(kv, "debuginfod_urls", 15))
		bit = SET_URLS;
	else if (nl == 23 && !memcmp(kv, "debuginfod_headers_file", 23))
		bit = SET_HEADERS;
	else
		return 1;
	if (*set & bit)
		return err_set(msg, ERR_INVALID, "limits file, line %zu: %.*s given twice", line,
			       (int)nl, kv);
	*set |= bit;
	if (bit == SET_SYMBOLIZATION) {
		if (eq && vl == 2 && !memcmp(v, "on", 2))
			l->symbolization_off = 0;
		else if (eq && vl == 3 && !memcmp(v, "off", 3))
			l->symbolization_off = 1;
		else
			return err_set(msg, ERR_INVALID,
				       "limits file, line %zu: symbolization wants on or off", line);
		return 0;
	}
	if (!t)
		return err_set(msg, ERR_INVALID,
			       "limits file, line %zu: %.*s belongs on tenant lines; the server's "
			       "upstreams are --debuginfod-urls and --debuginfod-headers-file",
			       line, (int)nl, kv);
	if (bit == SET_URLS) {
		if (!eq)
			return err_set(msg, ERR_INVALID,
				       "limits file, line %zu: debuginfod_urls wants \"none\" or URLs",
				       line);
		rc = check_urls(v, vl, line, msg);
		if (rc)
			return rc;
		t->own_upstreams = 1;
		t->debuginfod_urls = (vl == 4 && !memcmp(v, "none", 4)) ? dup_value("", 0, 0)
									 : dup_value(v, vl, 1);
		if (!t->debuginfod_urls)
			return err_set(msg, ERR_NOMEM, "out of memory (limits file)");
		return 0;
	}
	if (!eq || !vl || vl > WEB_LIMITS_PATH_MAX)
		return err_set(msg, ERR_INVALID,
			       "limits file, line %zu: debuginfod_headers_file wants a file name of "
			       "1 to %d bytes", line, WEB_LIMITS_PATH_MAX);
	t->debuginfod_headers_file = dup_value(v, vl, 0);
	if (!t->debuginfod_headers_file)
		return err_set(msg, ERR_NOMEM, "out of memory (limits file)");
	return 0;
}

/* One "key=value" of a default or tenant line into *l (and *t, on a tenant line); bit k of *set. */
static int tenant_kv(const char *kv, size_t len, struct web__tenant_override *t,
		     struct web__tenant_limits *l, unsigned *set, size_t line, struct err_msg *msg)
{
	const char *eq = memchr(kv, '=', len);
	size_t nl = eq ? (size_t)(eq - kv) : len;
	double v;
	int rc = sym_kv(kv, len, t, l, set, line, msg);

	if (rc <= 0)
		return rc;

	for (size_t k = 0; k < N_KEYS; k++) {
		if (strlen(keys[k].name) != nl || memcmp(keys[k].name, kv, nl))
			continue;
		if (!eq || parse_num(eq + 1, len - nl - 1, keys[k].max, &v) ||
		    (keys[k].integer && v != floor(v)))
			return err_set(msg, ERR_INVALID,
				       "limits file, line %zu: %s wants a %s from 1 to %.0f", line,
				       keys[k].name, keys[k].integer ? "whole number" : "number",
				       keys[k].max);
		if (*set & 1u << k)
			return err_set(msg, ERR_INVALID, "limits file, line %zu: %s given twice",
				       line, keys[k].name);
		*set |= 1u << k;
		put_key(l, k, v);
		return 0;
	}
	return err_set(msg, ERR_INVALID, "limits file, line %zu: unknown key \"%.*s\" (docs/limits.md)",
		       line, (int)(nl > 64 ? 64 : nl), kv);
}

/* The next blank-separated word of [*p, e): its start and length; 0 at the end. */
static size_t word(const char **p, const char *e, const char **w)
{
	while (*p < e && (**p == ' ' || **p == '\t'))
		(*p)++;
	*w = *p;
	while (*p < e && **p != ' ' && **p != '\t')
		(*p)++;
	return (size_t)(*p - *w);
}

static int global_kv(const char *kv, size_t len, struct web__limits_conf *c, size_t line,
		     struct err_msg *msg)
{
	double v;

	if (len > 12 && !memcmp(kv, "max_tenants=", 12)) {
		if (parse_num(kv + 12, len - 12, WEB_LIMITS_MAX_TENANTS, &v) || v != floor(v))
			return err_set(msg, ERR_INVALID,
				       "limits file, line %zu: max_tenants wants a whole number from 1 to %d",
				       line, WEB_LIMITS_MAX_TENANTS);
		c->max_tenants = (uint32_t)v;
		return 0;
	}
	if (len == 11 && !memcmp(kv, "tenants=any", 11)) {
		c->listed_only = 0;
		return 0;
	}
	if (len == 14 && !memcmp(kv, "tenants=listed", 14)) {
		c->listed_only = 1;
		return 0;
	}
	return err_set(msg, ERR_INVALID,
		       "limits file, line %zu: unknown global setting \"%.*s\" (max_tenants=N, "
		       "tenants=any or tenants=listed)",
		       line, (int)(len > 64 ? 64 : len), kv);
}

int web__limits_parse(const char *text, size_t len, const struct web__tenant_limits *base,
		      struct web__limits_conf *out, struct err_msg *msg)
{
	struct web__limits_conf c;
	unsigned *sets = NULL, dflt_set = 0;
	size_t line = 0, cap = 0;
	const char *p = text, *e = text + len;
	int rc = 0;

	web__limits_conf_default(&c, base);
	if (memchr(text, '\0', len))
		return err_set(msg, ERR_INVALID, "limits file: NUL byte");
	while (p < e && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(e - p)), *le = nl ? nl : e, *w;
		size_t wl;

		line++;
		if (le > p && le[-1] == '\r')
			le--;
		wl = word(&p, le, &w);
		if (!wl || *w == '#') {
			p = nl ? nl + 1 : e;
			continue;
		}
		if (wl == 6 && !memcmp(w, "global", 6)) {
			while (!rc && (wl = word(&p, le, &w)))
				rc = global_kv(w, wl, &c, line, msg);
		} else if (wl == 7 && !memcmp(w, "default", 7)) {
			while (!rc && (wl = word(&p, le, &w)))
				rc = tenant_kv(w, wl, NULL, &c.dflt, &dflt_set, line, msg);
		} else if (wl == 6 && !memcmp(w, "tenant", 6)) {
			struct web__tenant_override *t;
			char name[WEB_TENANT_MAX + 1];
			struct err_msg tm;

			wl = word(&p, le, &w);
			if (!wl || wl > WEB_TENANT_MAX) {
				rc = err_set(msg, ERR_INVALID, "limits file, line %zu: tenant wants a tenant id",
					     line);
				break;
			}
			memcpy(name, w, wl);
			name[wl] = '\0';
			err_clear(&tm);
			if (web__tenant_check(name, &tm)) {
				rc = err_set(msg, ERR_INVALID, "limits file, line %zu: %s", line, tm.text);
				break;
			}
			for (size_t i = 0; i < c.n_tenants; i++)
				if (!strcmp(c.tenants[i].name, name))
					rc = err_set(msg, ERR_INVALID,
						     "limits file, line %zu: tenant %s given twice", line, name);
			if (rc)
				break;
			if (c.n_tenants == WEB_LIMITS_MAX_LINES) {
				rc = err_set(msg, ERR_TOO_LARGE, "limits file: more than %d tenant lines",
					     WEB_LIMITS_MAX_LINES);
				break;
			}
			if (c.n_tenants == cap) {
				size_t nc = cap ? cap * 2 : 16;
				void *a = realloc(c.tenants, nc * sizeof(*c.tenants));
				void *b = a ? realloc(sets, nc * sizeof(*sets)) : NULL;

				if (a)
					c.tenants = a;
				if (!a || !b) {
					rc = err_set(msg, ERR_NOMEM, "out of memory (limits file)");
					break;
				}
				sets = b;
				cap = nc;
			}
			t = &c.tenants[c.n_tenants];
			memset(t, 0, sizeof(*t));
			memcpy(t->name, name, wl + 1);
			t->line = line;
			sets[c.n_tenants] = 0;
			c.n_tenants++;
			while (!rc && (wl = word(&p, le, &w)))
				rc = tenant_kv(w, wl, t, &t->lim, &sets[c.n_tenants - 1], line, msg);
			if (!rc && (sets[c.n_tenants - 1] & SET_HEADERS) &&
			    !(sets[c.n_tenants - 1] & SET_URLS))
				rc = err_set(msg, ERR_INVALID,
					     "limits file, line %zu: debuginfod_headers_file needs "
					     "debuginfod_urls on the same line (the headers go to those "
					     "upstreams)", line);
		} else {
			rc = err_set(msg, ERR_INVALID,
				     "limits file, line %zu: a line starts with global, default, "
				     "tenant or #, not \"%.*s\"",
				     line, (int)(wl > 32 ? 32 : wl), w);
		}
		p = nl ? nl + 1 : e;
	}
	/* A tenant line overrides only the keys it gives: the rest is the default's. */
	for (size_t i = 0; i < c.n_tenants && !rc; i++) {
		struct web__tenant_limits l = c.dflt;

		for (size_t k = 0; k < N_KEYS; k++)
			if (sets[i] & 1u << k)
				memcpy((char *)&l + keys[k].off, (char *)&c.tenants[i].lim + keys[k].off,
				       key_size(k));
		if (sets[i] & SET_SYMBOLIZATION)
			l.symbolization_off = c.tenants[i].lim.symbolization_off;
		c.tenants[i].lim = l;
	}
	free(sets);
	if (rc) {
		web__limits_conf_release(&c);
		return rc;
	}
	*out = c;
	return 0;
}

int web__limits_load(const char *path, const struct web__tenant_limits *base,
		     struct web__limits_conf *out, struct err_msg *msg)
{
	struct buf b;
	int rc;

	buf_init(&b, WEB_LIMITS_MAX_FILE);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		return err_set(msg, rc, "limits file %s: %s", path,
			       rc == ERR_TOO_LARGE ? "larger than 1 MiB" : strerror(errno));
	}
	rc = web__limits_parse(b.data ? b.data : "", b.len, base, out, msg);
	buf_release(&b);
	return rc;
}

int web__limits_debuginfo(const struct web__limits_conf *c, struct debuginfo *svc,
			  struct err_msg *msg)
{
	struct debuginfo_tenant_conf *v = NULL;
	struct err_msg dm;
	int rc;

	if (c->n_tenants && !(v = calloc(c->n_tenants, sizeof(*v))))
		return err_set(msg, ERR_NOMEM, "out of memory (limits file)");
	for (size_t i = 0; i < c->n_tenants; i++) {
		const struct web__tenant_override *t = &c->tenants[i];

		v[i].tenant = t->name;
		v[i].symbolize = !t->lim.symbolization_off;
		v[i].own_upstreams = t->own_upstreams;
		v[i].urls = t->debuginfod_urls;
		v[i].headers_file = t->debuginfod_headers_file;
	}
	err_clear(&dm);
	rc = debuginfo_tenants_set(svc, !c->dflt.symbolization_off, v, c->n_tenants, &dm);
	free(v);
	if (rc)
		return err_set(msg, rc, "limits file: %s", dm.text);
	return 0;
}

/* ---- state ---------------------------------------------------------------- */

struct web__tenant_state {
	char name[WEB_TENANT_MAX + 1];
	const struct web__tenant_limits *lim; /* into the conf */
	/* Token buckets (under the mutex): tokens may go negative, a debt the
	 * refill pays back before the next request is admitted. */
	double bytes, profiles, dbg;
	int64_t last_ns;
	atomic_int queries;
	atomic_uint_fast64_t refused[WEB_LIM_COUNT];
};

struct web_limits {
	struct web__limits_conf conf;
	pthread_mutex_t mu;
	struct web__tenant_state *t; /* cap entries, never moved */
	size_t n, cap;
	struct hmap idx;
	struct web__tenant_state unknown; /* queries of tenants not kept; name "" */
};

static const struct web__tenant_limits *limits_of(const struct web_limits *L, const char *tenant)
{
	for (size_t i = 0; i < L->conf.n_tenants; i++)
		if (!strcmp(L->conf.tenants[i].name, tenant))
			return &L->conf.tenants[i].lim;
	return &L->conf.dflt;
}

static void state_init(struct web_limits *L, struct web__tenant_state *s, const char *name,
		       int64_t now)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->lim = limits_of(L, name);
	s->bytes = s->lim->ingest_bytes_per_s * s->lim->burst_s;
	s->profiles = s->lim->ingest_profiles_per_s * s->lim->burst_s;
	s->dbg = s->lim->debuginfo_bytes_per_hour;
	s->last_ns = now;
	atomic_init(&s->queries, 0);
	for (int r = 0; r < WEB_LIM_COUNT; r++)
		atomic_init(&s->refused[r], 0);
}

/* The entry of `tenant` (under the mutex), or NULL. */
static struct web__tenant_state *find(struct web_limits *L, const char *tenant,
				      struct hmap_probe *pr)
{
	uint64_t h = hash_bytes(tenant, strlen(tenant), 0);

	for (uint32_t i = hmap_first(&L->idx, h, pr); i != HMAP_NONE; i = hmap_next(&L->idx, pr))
		if (!strcmp(L->t[i].name, tenant))
			return &L->t[i];
	return NULL;
}

/* Adds `tenant` (under the mutex, room checked by the caller). */
static struct web__tenant_state *add(struct web_limits *L, const char *tenant,
				     struct hmap_probe *pr, int64_t now)
{
	struct web__tenant_state *s = &L->t[L->n];

	assert(L->n < L->cap);
	if (hmap_put_probed(&L->idx, pr, (uint32_t)L->n))
		return NULL;
	state_init(L, s, tenant, now);
	L->n++;
	return s;
}

static int add_existing(void *ctx, const char *tenant)
{
	struct web_limits *L = ctx;
	struct hmap_probe pr;

	if (L->n == L->cap || find(L, tenant, &pr))
		return 0;
	return add(L, tenant, &pr, clock_mono_ns()) ? 0 : ERR_NOMEM;
}

static int count_tenant(void *ctx, const char *tenant)
{
	(void)tenant;
	(*(size_t *)ctx)++;
	return 0;
}

int web__limits_new(const struct web__limits_conf *conf, struct store *st,
		    struct web_limits **out, struct err_msg *msg)
{
	struct web_limits *L = calloc(1, sizeof(*L));
	size_t existing = 0;
	int rc;

	if (!L)
		return err_set(msg, ERR_NOMEM, "out of memory (limits)");
	L->conf = *conf; /* takes conf's tenant array */
	if (st && (rc = store_tenants(st, count_tenant, &existing)) < 0) {
		free(L);
		return err_set(msg, rc, "limits: listing the store's tenants: %s", err_str(rc));
	}
	/* Tenants already in the store are always served, cap or not. */
	L->cap = (existing > conf->max_tenants ? existing : conf->max_tenants) + conf->n_tenants;
	L->t = calloc(L->cap, sizeof(*L->t));
	if (!L->t) {
		free(L);
		return err_set(msg, ERR_NOMEM, "out of memory (limits: %zu tenants)", existing);
	}
	hmap_init(&L->idx, (uint32_t)L->cap, NULL);
	pthread_mutex_init(&L->mu, NULL);
	state_init(L, &L->unknown, "", clock_mono_ns());
	if (st && (rc = store_tenants(st, add_existing, L)) < 0) {
		web__limits_free(L);
		return err_set(msg, rc, "limits: listing the store's tenants: %s", err_str(rc));
	}
	*out = L;
	return 0;
}

void web__limits_free(struct web_limits *L)
{
	if (!L)
		return;
	hmap_release(&L->idx);
	pthread_mutex_destroy(&L->mu);
	free(L->t);
	web__limits_conf_release(&L->conf);
	free(L);
}

/* Refills the buckets of `s` to `now` (under the mutex). */
static void refill(struct web__tenant_state *s, int64_t now)
{
	double dt = (double)(now - s->last_ns) / 1e9, cap;
	const struct web__tenant_limits *l = s->lim;

	if (dt <= 0)
		return;
	s->last_ns = now;
	cap = l->ingest_bytes_per_s * l->burst_s;
	s->bytes = fmin(cap, s->bytes + dt * l->ingest_bytes_per_s);
	cap = l->ingest_profiles_per_s * l->burst_s;
	s->profiles = fmin(cap, s->profiles + dt * l->ingest_profiles_per_s);
	s->dbg = fmin(l->debuginfo_bytes_per_hour,
		      s->dbg + dt * l->debuginfo_bytes_per_hour / 3600.0);
}

/* Seconds until a bucket of `tokens` (< 0) refilling at `rate`/s is positive. */
static int retry_after(double tokens, double rate)
{
	double s = ceil(-tokens / rate);

	return s < 1 ? 1 : s > 3600 ? 3600 : (int)s;
}

static int refuse(struct web__tenant_state *s, enum web__limit_reason r, int code,
		  struct err_msg *msg, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int refuse(struct web__tenant_state *s, enum web__limit_reason r, int code,
		  struct err_msg *msg, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add_explicit(&s->refused[r], 1, memory_order_relaxed);
	if (msg && !msg->text[0]) {
		va_start(ap, fmt);
		vsnprintf(msg->text, sizeof(msg->text), fmt, ap);
		va_end(ap);
	}
	return code;
}

/* What the message of an empty rate bucket says, by reason. */
static const struct {
	const char *verb, *unit, *key;
} rate_text[WEB_LIM_COUNT] = {
	[WEB_LIM_INGEST_BYTES] = { "sends", "bytes/s", "ingest_bytes_per_s" },
	[WEB_LIM_INGEST_PROFILES] = { "sends", "profiles/s", "ingest_profiles_per_s" },
	[WEB_LIM_DEBUGINFO_BYTES] = { "uploaded", "debug-info bytes per hour",
				      "debuginfo_bytes_per_hour" },
};

/*
 * Refuses for the rate limit `r` whose bucket holds `tokens` (<= 0) and
 * refills at per_s: *retry_s says when it has room again, the message
 * names the tenant, the limit as the limits file gives it and its key.
 */
static int rate_refuse(struct web__tenant_state *s, enum web__limit_reason r, const char *tenant,
		       double tokens, double limit, double per_s, int *retry_s, struct err_msg *msg)
{
	*retry_s = retry_after(tokens, per_s);
	return refuse(s, r, ERR_RATE_LIMITED, msg,
		      "tenant \"%s\" %s more than its %.0f %s (limits file: %s); retry in %d s",
		      tenant, rate_text[r].verb, limit, rate_text[r].unit, rate_text[r].key, *retry_s);
}

/*
 * The entry of a tenant that sends data (under the mutex): found, or added
 * when the allow-list and the cap let it in.
 */
static int admit_tenant(struct web_limits *L, const char *tenant, int64_t now,
			struct web__tenant_state **out, struct err_msg *msg)
{
	struct hmap_probe pr;
	struct web__tenant_state *s = find(L, tenant, &pr);
	int listed = limits_of(L, tenant) != &L->conf.dflt;

	if (s) {
		*out = s;
		return 0;
	}
	/* A listed tenant always has room: cap counts every tenant line. */
	if (L->conf.listed_only && !listed)
		return refuse(&L->unknown, WEB_LIM_NOT_LISTED, ERR_PERMISSION, msg,
			      "tenant \"%s\" is not in the limits file, and this server serves "
			      "only the tenants listed there (tenants=listed)", tenant);
	if (L->n >= L->cap || (!listed && L->n >= L->conf.max_tenants))
		return refuse(&L->unknown, WEB_LIM_TENANT_CAP, ERR_PERMISSION, msg,
			      "tenant \"%s\" is new and this server already serves its maximum "
			      "of %u tenants (limits file: global max_tenants)", tenant,
			      L->conf.max_tenants);
	s = add(L, tenant, &pr, now);
	if (!s)
		return err_set(msg, ERR_NOMEM, "out of memory (limits)");
	*out = s;
	return 0;
}

/* Takes an ingest request's bytes from its tenant's buckets (under the mutex). */
static int charge_ingest(struct web__tenant_state *s, const char *tenant, size_t bytes,
			 int *retry_s, struct err_msg *msg)
{
	if (s->bytes <= 0)
		return rate_refuse(s, WEB_LIM_INGEST_BYTES, tenant, s->bytes,
				   s->lim->ingest_bytes_per_s, s->lim->ingest_bytes_per_s, retry_s,
				   msg);
	if (s->profiles <= 0)
		return rate_refuse(s, WEB_LIM_INGEST_PROFILES, tenant, s->profiles,
				   s->lim->ingest_profiles_per_s, s->lim->ingest_profiles_per_s,
				   retry_s, msg);
	s->bytes -= (double)bytes;
	return 0;
}

/* Takes an upload's bytes from its tenant's hourly debug info bucket (under the mutex). */
static int charge_debuginfo(struct web__tenant_state *s, const char *tenant, size_t bytes,
			    int *retry_s, struct err_msg *msg)
{
	if (s->dbg <= 0)
		return rate_refuse(s, WEB_LIM_DEBUGINFO_BYTES, tenant, s->dbg,
				   s->lim->debuginfo_bytes_per_hour,
				   s->lim->debuginfo_bytes_per_hour / 3600.0, retry_s, msg);
	s->dbg -= (double)bytes;
	return 0;
}

/* Admits a tenant that sends data, refills its buckets and charges them. */
static int admit_charged(struct web_limits *L, const char *tenant, size_t bytes,
			 int (*charge)(struct web__tenant_state *, const char *, size_t, int *,
				       struct err_msg *),
			 struct web__tenant_state **out, int *retry_s, struct err_msg *msg)
{
	struct web__tenant_state *s = NULL;
	int64_t now = clock_mono_ns();
	int rc;

	*retry_s = 0;
	pthread_mutex_lock(&L->mu);
	rc = admit_tenant(L, tenant, now, &s, msg);
	if (!rc) {
		refill(s, now);
		rc = charge(s, tenant, bytes, retry_s, msg);
	}
	pthread_mutex_unlock(&L->mu);
	if (!rc)
		*out = s;
	return rc;
}

int web__limits_ingest_admit(struct web_limits *L, const char *tenant, size_t bytes,
			     struct web__tenant_state **out, int *retry_s, struct err_msg *msg)
{
	return admit_charged(L, tenant, bytes, charge_ingest, out, retry_s, msg);
}

void web__limits_ingest_done(struct web_limits *L, struct web__tenant_state *s, uint64_t profiles,
			     int rc, const char *message)
{
	if (profiles) {
		pthread_mutex_lock(&L->mu);
		s->profiles -= (double)profiles;
		pthread_mutex_unlock(&L->mu);
	}
	if (rc == ERR_TOO_LARGE && message && strstr(message, "series limit of "))
		atomic_fetch_add_explicit(&s->refused[WEB_LIM_SERIES], 1, memory_order_relaxed);
	else if (rc == ERR_TOO_LARGE && message && strstr(message, "(limits file: max_label_names)"))
		atomic_fetch_add_explicit(&s->refused[WEB_LIM_LABEL_NAMES], 1, memory_order_relaxed);
	else if (rc == ERR_TOO_LARGE && message && strstr(message, "(limits file: max_label_values)"))
		atomic_fetch_add_explicit(&s->refused[WEB_LIM_LABEL_VALUES], 1, memory_order_relaxed);
	else if (rc == ERR_TOO_LARGE && message &&
		 (strstr(message, "labels, more than the limit") || strstr(message, "longer than")))
		atomic_fetch_add_explicit(&s->refused[WEB_LIM_LABELS], 1, memory_order_relaxed);
}

void web__limits_ingest_limits(const struct web__tenant_state *s, const struct ingest_limits *base,
			       struct ingest_limits *out)
{
	*out = *base;
	out->max_series = s->lim->max_series;
	out->max_labels = s->lim->max_labels;
	out->max_label_bytes = s->lim->max_label_bytes;
	out->max_label_names = s->lim->max_label_names;
	out->max_label_values = s->lim->max_label_values;
}

int web__limits_query_admit(struct web_limits *L, const char *tenant,
			    struct web__tenant_state **out, struct err_msg *msg)
{
	struct web__tenant_state *s;
	struct hmap_probe pr;
	int n;

	pthread_mutex_lock(&L->mu);
	s = find(L, tenant, &pr);
	pthread_mutex_unlock(&L->mu);
	if (!s)
		s = &L->unknown;
	n = atomic_fetch_add_explicit(&s->queries, 1, memory_order_relaxed);
	if (n < (int)s->lim->max_queries) {
		*out = s;
		return 0;
	}
	atomic_fetch_sub_explicit(&s->queries, 1, memory_order_relaxed);
	return refuse(s, WEB_LIM_QUERIES, ERR_RATE_LIMITED, msg,
		      "tenant \"%s\" already runs %d queries, its limit (limits file: "
		      "max_queries); retry shortly", tenant, n);
}

void web__limits_query_done(struct web__tenant_state *s)
{
	atomic_fetch_sub_explicit(&s->queries, 1, memory_order_relaxed);
}

uint64_t web__limits_query_bytes(const struct web__tenant_state *s)
{
	return (uint64_t)s->lim->max_query_bytes;
}

void web__limits_query_finished(struct web__tenant_state *s, int scan_refused)
{
	if (scan_refused)
		atomic_fetch_add_explicit(&s->refused[WEB_LIM_QUERY_BYTES], 1, memory_order_relaxed);
}

int web__limits_debuginfo_admit(struct web_limits *L, const char *tenant, size_t bytes,
				int *retry_s, struct err_msg *msg)
{
	struct web__tenant_state *s;

	return admit_charged(L, tenant, bytes, charge_debuginfo, &s, retry_s, msg);
}

uint32_t web__limits_max_perfmaps(const struct web_limits *L, const char *tenant)
{
	/* The conf is read-only once the server runs: no lock. */
	return limits_of(L, tenant)->max_perfmaps;
}

void web__limits_debuginfo_charge(struct web_limits *L, const char *tenant, size_t bytes)
{
	struct web__tenant_state *s;
	struct hmap_probe pr;

	pthread_mutex_lock(&L->mu);
	s = find(L, tenant, &pr);
	if (s)
		s->dbg -= (double)bytes;
	pthread_mutex_unlock(&L->mu);
}

int web__limits_metrics(struct web_limits *L, struct buf *b)
{
	size_t n;
	int rc;

	pthread_mutex_lock(&L->mu);
	n = L->n;
	pthread_mutex_unlock(&L->mu);
	rc = buf_puts(b, "# HELP unhex_tenant_refusals_total Requests refused by a per-tenant "
			 "limit, by tenant and reason (docs/limits.md); tenant=\"\" for tenants "
			 "the server keeps no state for.\n"
			 "# TYPE unhex_tenant_refusals_total counter\n");
	for (size_t i = 0; i <= n && !rc; i++) {
		struct web__tenant_state *s = i < n ? &L->t[i] : &L->unknown;

		for (int r = 0; r < WEB_LIM_COUNT && !rc; r++) {
			unsigned long long v = atomic_load_explicit(&s->refused[r],
								     memory_order_relaxed);

			if (!v)
				continue;
			/* Tenant ids hold no '"', '\\' or newline (web__tenant_check). */
			rc = buf_printf(b, "unhex_tenant_refusals_total{tenant=\"%s\",reason=\"%s\"} %llu\n",
					s->name, web__limit_reason_names[r], v);
		}
	}
	if (!rc)
		rc = buf_printf(b, "# HELP unhex_tenants Tenants the server serves, and its cap.\n"
				   "# TYPE unhex_tenants gauge\nunhex_tenants %zu\n"
				   "# HELP unhex_tenants_max The limits file's max_tenants.\n"
				   "# TYPE unhex_tenants_max gauge\nunhex_tenants_max %u\n",
				n, L->conf.max_tenants);
	return rc;
}
