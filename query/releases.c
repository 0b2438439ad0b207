/*
 * releases.c - a service's releases, from its release labels and, where a
 * series has none, from the build ID of each profile's main executable;
 * GET /api/v1/releases (see regress.h and docs/regressions.md).
 */
#include "query/regress.h"

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/intern.h"
#include "debuginfo/debuginfo.h"
#include "storage/storage.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- label configuration ---------------------------------------------------- */

static int label_char(char c, int first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
	       (!first && ((c >= '0' && c <= '9') || c == '.'));
}

int release_labels_parse(const char *csv, struct release_labels *out, struct err_msg *msg)
{
	struct release_labels rl;
	size_t len;
	char *p;

	if (!csv || !csv[0])
		csv = RELEASE_DEFAULT_LABELS;
	len = strlen(csv);
	if (len >= sizeof(rl.buf))
		return err_set(msg, ERR_INVALID, "release labels: longer than %zu bytes",
			       sizeof(rl.buf) - 1);
	memcpy(rl.buf, csv, len + 1);
	rl.n = 0;
	for (p = rl.buf; p;) {
		char *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		if (!p[0] || !label_char(p[0], 1))
			return err_set(msg, ERR_INVALID, "release labels: '%s' is not a label name", p);
		for (const char *c = p + 1; *c; c++)
			if (!label_char(*c, 0))
				return err_set(msg, ERR_INVALID,
					       "release labels: '%s' is not a label name", p);
		if (rl.n == RELEASE_MAX_LABELS)
			return err_set(msg, ERR_INVALID, "release labels: more than %d",
				       RELEASE_MAX_LABELS);
		rl.name[rl.n++] = p;
		p = comma ? comma + 1 : NULL;
	}
	*out = rl;
	/* The names point into the copy's buffer, not the local one. */
	for (size_t i = 0; i < out->n; i++)
		out->name[i] = out->buf + (rl.name[i] - rl.buf);
	return 0;
}

int release_label_of(const struct release_labels *rl, const struct store_label *l, size_t n,
		     const char **value)
{
	for (size_t k = 0; k < rl->n; k++)
		for (size_t i = 0; i < n; i++)
			if (l[i].value[0] && !strcmp(l[i].name, rl->name[k])) {
				*value = l[i].value;
				return (int)k;
			}
	return -1;
}

/* ---- the main executable of a profile ------------------------------------------ */

void release_main_init(struct release_main *m, struct store *st, const char *tenant,
		       size_t max_bytes)
{
	assert(max_bytes > 0);
	memset(m, 0, sizeof(*m));
	m->st = st;
	m->tenant = tenant;
	m->max_bytes = max_bytes;
}

void release_main_release(struct release_main *m)
{
	if (m->sym)
		store_symbols_put(m->sym);
	free(m->leaf_map);
	free(m->acc);
	m->sym = NULL;
	m->leaf_map = NULL;
	m->acc = NULL;
	m->leaf_cap = m->acc_cap = m->nacc = 0;
}

/* Shared libraries, the kernel and the vDSO are not a program's executable. */
static int is_executable(const char *file)
{
	const char *b = strrchr(file, '/'), *so;

	b = b ? b + 1 : file;
	if (!b[0] || b[0] == '[')
		return 0;
	so = strstr(b, ".so");
	return !(so && (so[3] == '\0' || so[3] == '.'));
}

static int switch_part(struct release_main *m, uint32_t part, struct err_msg *msg)
{
	int rc;

	if (m->sym && m->part == part)
		return 0;
	if (m->sym)
		store_symbols_put(m->sym);
	m->sym = NULL;
	rc = store_symbols_get(m->st, m->tenant, part, &m->sym, msg);
	if (rc)
		return rc;
	m->part = part;
	if (m->leaf_cap)
		memset(m->leaf_map, 0, m->leaf_cap * sizeof(*m->leaf_map));
	return 0;
}

static int leaf_mapping(struct release_main *m, uint32_t stack, uint32_t *map, struct err_msg *msg)
{
	struct store_location_view lv;
	uint32_t parent, loc;
	int rc;

	if (stack >= m->leaf_cap) {
		size_t old = m->leaf_cap, need = (size_t)stack + 1;

		if (need * sizeof(*m->leaf_map) > m->max_bytes)
			return err_set(msg, ERR_TOO_LARGE, "releases: stack ids past the memory limit");
		rc = GROW(m->leaf_map, m->leaf_cap, need, m->max_bytes / sizeof(*m->leaf_map), NULL);
		if (rc)
			return err_set(msg, rc, "releases: out of memory (stack memo)");
		memset(m->leaf_map + old, 0, (m->leaf_cap - old) * sizeof(*m->leaf_map));
	}
	if (m->leaf_map[stack]) {
		*map = m->leaf_map[stack] - 1;
		return 0;
	}
	if (store_symbols_stack_node(m->sym, stack, &parent, &loc) ||
	    store_symbols_location(m->sym, loc, &lv))
		return err_set(msg, ERR_CORRUPT, "partition %u: stack %u not found", m->part, stack);
	*map = lv.mapping_id;
	m->leaf_map[stack] = lv.mapping_id + 1;
	return 0;
}

int release_main_of(struct release_main *m, uint32_t part, const uint32_t *stack_ids,
		    const int64_t *values, size_t n, const char **build_id, const char **file,
		    struct err_msg *msg)
{
	int64_t best[2] = { -1, -1 }; /* executables, then any mapping with a build ID */
	const char *bid[2] = { "", "" }, *bfile[2] = { "", "" };
	int rc;

	if ((rc = switch_part(m, part, msg)))
		return rc;
	m->nacc = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t map = 0;
		size_t j;

		if (!stack_ids[i])
			continue;
		if ((rc = leaf_mapping(m, stack_ids[i], &map, msg)))
			return rc;
		if (!map)
			continue;
		for (j = 0; j < m->nacc && m->acc[j].map != map; j++)
			;
		if (j == m->nacc) {
			if ((rc = GROW(m->acc, m->acc_cap, m->nacc + 1, 1u << 20, NULL)))
				return err_set(msg, rc, "releases: too many mappings in one profile");
			m->acc[m->nacc].map = map;
			m->acc[m->nacc++].value = 0;
		}
		m->acc[j].value += values[i];
	}
	for (size_t j = 0; j < m->nacc; j++) {
		struct store_mapping mp;

		if (store_symbols_mapping(m->sym, m->acc[j].map, &mp) || !mp.build_id ||
		    !mp.build_id[0])
			continue;
		for (int k = is_executable(mp.filename ? mp.filename : "") ? 0 : 1; k < 2; k++)
			if (m->acc[j].value > best[k]) {
				best[k] = m->acc[j].value;
				bid[k] = mp.build_id;
				bfile[k] = mp.filename ? mp.filename : "";
			}
	}
	*build_id = best[0] >= 0 ? bid[0] : bid[1];
	*file = best[0] >= 0 ? bfile[0] : bfile[1];
	return 0;
}

/* ---- the release list ------------------------------------------------------------ */

struct rel {
	int label;            /* index in the configuration; -1 for a build ID */
	uint32_t key;         /* in r->keys: label index byte + value */
	int64_t first_ns, last_ns;
	uint64_t profiles, series;
	uint64_t last_series; /* + 1, to count series once */
};

/* A (release, profile type) or (release, build ID) sum. */
struct relsum {
	uint32_t rel;
	uint32_t key;         /* in r->keys */
	uint32_t file;        /* build IDs: the file, in r->keys */
	int64_t value;
};

struct releases {
	struct store *st;
	const char *tenant;
	const struct release_query *rq;
	struct err_msg *msg;
	int64_t deadline;
	struct grow_budget budget;
	struct intern keys;
	struct rel *rel;
	size_t nrel, relcap;
	struct intern sumkeys;   /* "T" or "B", release index, key id */
	struct relsum *sum;
	size_t nsum, sumcap;
	struct release_main main;
	/* The series being read. */
	uint64_t series;
	int label;
	const char *value;
	const char *ptype;
	int rc;
};

static int put_key(struct releases *r, int tag, const char *s, uint32_t *id)
{
	size_t n = strlen(s);
	char buf[1024];

	if (n + 1 > sizeof(buf))
		n = sizeof(buf) - 1;
	buf[0] = (char)tag;
	memcpy(buf + 1, s, n);
	return intern_put(&r->keys, buf, n + 1, id);
}

static int release_of(struct releases *r, int label, const char *value, uint32_t *out)
{
	uint32_t key;
	/* Tags 0x10.. keep release keys apart from the letters of the other keys. */
	int rc = put_key(r, 0x10 + (label < 0 ? RELEASE_MAX_LABELS : label), value, &key);

	if (rc)
		return rc;
	for (size_t i = 0; i < r->nrel; i++)
		if (r->rel[i].key == key) {
			*out = (uint32_t)i;
			return 0;
		}
	rc = GROW(r->rel, r->relcap, r->nrel + 1, RELEASE_MAX_RELEASES, &r->budget.alloc);
	if (rc)
		return rc;
	r->rel[r->nrel] = (struct rel){ label, key, INT64_MAX, INT64_MIN, 0, 0, 0 };
	*out = (uint32_t)r->nrel++;
	return 0;
}

static int add_sum(struct releases *r, int tag, uint32_t rel, const char *key, const char *file,
		   int64_t value)
{
	uint32_t k, f = 0, id;
	char buf[64];
	int rc = put_key(r, tag, key, &k);

	if (!rc && file)
		rc = put_key(r, 'F', file, &f);
	if (rc)
		return rc;
	snprintf(buf, sizeof(buf), "%c%u:%u", tag, rel, k);
	if ((rc = intern_put(&r->sumkeys, buf, strlen(buf), &id)))
		return rc;
	if (id == r->nsum) {
		rc = GROW(r->sum, r->sumcap, r->nsum + 1, RELEASE_MAX_RELEASES * 64u, &r->budget.alloc);
		if (rc)
			return rc;
		r->sum[r->nsum++] = (struct relsum){ rel, k, f, 0 };
	}
	r->sum[id].value += value;
	return 0;
}

static int on_profile(void *ctx, const struct store_profile_view *p)
{
	struct releases *r = ctx;
	const char *bid = "", *file = "";
	uint32_t rel;
	int64_t total = 0;
	int rc;

	if (clock_mono_ns() > r->deadline) {
		r->rc = err_set(r->msg, ERR_TIMEOUT, "releases: deadline exceeded");
		return 1;
	}
	rc = release_main_of(&r->main, p->part, p->stack_ids, p->values, p->n, &bid, &file, r->msg);
	if (!rc)
		rc = r->label >= 0 ? release_of(r, r->label, r->value, &rel)
				   : release_of(r, -1, bid[0] ? bid : "unknown", &rel);
	for (size_t i = 0; i < p->n; i++)
		total += p->values[i];
	if (!rc)
		rc = add_sum(r, 'T', rel, r->ptype, NULL, total);
	/* Every sampled mapping with a build ID, by its samples at the leaf. */
	for (size_t j = 0; j < r->main.nacc && !rc; j++) {
		struct store_mapping mp;

		if (store_symbols_mapping(r->main.sym, r->main.acc[j].map, &mp) || !mp.build_id ||
		    !mp.build_id[0])
			continue;
		rc = add_sum(r, 'B', rel, mp.build_id, mp.filename ? mp.filename : "",
			     r->main.acc[j].value);
	}
	if (rc) {
		r->rc = err_set(r->msg, rc, "releases: %s", err_str(rc));
		return 1;
	}
	{
		struct rel *x = &r->rel[rel];
		int64_t end = p->meta.time_ns + (p->meta.duration_ns > 0 ? p->meta.duration_ns : 0);

		x->profiles++;
		if (p->meta.time_ns < x->first_ns)
			x->first_ns = p->meta.time_ns;
		if (end > x->last_ns)
			x->last_ns = end;
		if (x->last_series != r->series + 1) {
			x->last_series = r->series + 1;
			x->series++;
		}
	}
	return 0;
}

/* A selected series, with its release label and profile type kept as keys. */
struct sel_series {
	uint64_t id;
	int label;
	uint32_t value;  /* in r->keys, tag 'V' */
	uint32_t ptype;  /* in r->keys, tag 'P' */
};

struct series_list {
	struct releases *r;
	struct sel_series *v;
	size_t n, cap;
};

static int on_series(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct series_list *s = ctx;
	struct releases *r = s->r;
	const char *ptype = "", *value = "";
	int rc, label;

	(void)part;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].name, STORE_LABEL_PROFILE_TYPE))
			ptype = l[i].value;
	if (r->rq->profile_type && strcmp(ptype, r->rq->profile_type))
		return 0;
	label = release_label_of(r->rq->labels, l, n, &value);
	rc = GROW(s->v, s->cap, s->n + 1, 1u << 24, &r->budget.alloc);
	if (!rc)
		rc = put_key(r, 'V', value, &s->v[s->n].value);
	if (!rc)
		rc = put_key(r, 'P', ptype, &s->v[s->n].ptype);
	if (rc) {
		r->rc = rc;
		return 1;
	}
	s->v[s->n].id = id;
	s->v[s->n++].label = label;
	return 0;
}

static int cmp_rel(const void *a, const void *b)
{
	const struct rel *x = a, *y = b;

	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return (x->key > y->key) - (x->key < y->key);
}

static int write_json(struct releases *r, struct buf *out)
{
	const struct release_query *rq = r->rq;
	int rc;

	rc = buf_puts(out, "{\"service\":");
	rc = rc ? rc : buf_put_json_str(out, rq->service, strlen(rq->service));
	rc = rc ? rc : buf_puts(out, ",\"labels\":[");
	for (size_t i = 0; i < rq->labels->n && !rc; i++) {
		rc = i ? buf_putc(out, ',') : 0;
		rc = rc ? rc : buf_put_json_str(out, rq->labels->name[i], strlen(rq->labels->name[i]));
	}
	rc = rc ? rc : buf_puts(out, "],\"releases\":[");
	for (size_t i = 0; i < r->nrel && !rc; i++) {
		const struct rel *x = &r->rel[i];
		const char *kv = intern_str(&r->keys, x->key);
		int64_t all = 0;
		int first = 1;

		for (size_t j = 0; j < r->nsum; j++)
			if (r->sum[j].rel == i && intern_str(&r->keys, r->sum[j].key)[0] == 'T')
				all += r->sum[j].value;
		rc = buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
		rc = rc ? rc : buf_put_json_str(out, kv + 1, strlen(kv + 1));
		rc = rc ? rc : buf_puts(out, ",\"label\":");
		if (x->label >= 0)
			rc = rc ? rc : buf_put_json_str(out, rq->labels->name[x->label],
							strlen(rq->labels->name[x->label]));
		else
			rc = rc ? rc : buf_puts(out, "\"" RELEASE_BY_BUILD_ID "\"");
		rc = rc ? rc : buf_printf(out, ",\"from\":%lld,\"until\":%lld,\"profiles\":%llu,"
					       "\"series\":%llu,\"values\":{",
					  (long long)(x->first_ns / 1000000),
					  (long long)((x->last_ns + 999999) / 1000000),
					  (unsigned long long)x->profiles,
					  (unsigned long long)x->series);
		for (size_t j = 0; j < r->nsum && !rc; j++) {
			const char *k = intern_str(&r->keys, r->sum[j].key);
			if (r->sum[j].rel != i || k[0] != 'T')
				continue;
			rc = first ? 0 : buf_putc(out, ',');
			first = 0;
			rc = rc ? rc : buf_put_json_str(out, k + 1, strlen(k + 1));
			rc = rc ? rc : buf_printf(out, ":%lld", (long long)r->sum[j].value);
		}
		rc = rc ? rc : buf_puts(out, "},\"buildIDs\":[");
		first = 1;
		for (size_t j = 0; j < r->nsum && !rc; j++) {
			const char *k = intern_str(&r->keys, r->sum[j].key);
			const char *f = intern_str(&r->keys, r->sum[j].file) + 1;
			const char *status = "unknown", *reason = "";
			struct debuginfo_record rec;

			if (r->sum[j].rel != i || k[0] != 'B')
				continue;
			if (rq->debuginfo && !debuginfo_get(rq->debuginfo, k + 1, &rec, NULL)) {
				status = debuginfo_status_str(rec.status);
				reason = rec.status == DEBUGINFO_STATUS_OK ? "" : rec.reason;
			}
			rc = first ? 0 : buf_putc(out, ',');
			first = 0;
			rc = rc ? rc : buf_puts(out, "{\"buildID\":");
			rc = rc ? rc : buf_put_json_str(out, k + 1, strlen(k + 1));
			rc = rc ? rc : buf_puts(out, ",\"file\":");
			rc = rc ? rc : buf_put_json_str(out, f, strlen(f));
			rc = rc ? rc : buf_printf(out, ",\"share\":%.6g,\"status\":\"%s\",\"reason\":",
						  all > 0 ? (double)r->sum[j].value / (double)all : 0.0,
						  status);
			rc = rc ? rc : buf_put_json_str(out, reason, strlen(reason));
			rc = rc ? rc : buf_putc(out, '}');
		}
		rc = rc ? rc : buf_puts(out, "]}");
	}
	rc = rc ? rc : buf_puts(out, "]}\n");
	return rc;
}

int query_releases(struct store *st, const char *tenant, const struct release_query *rq,
		   struct buf *out, struct err_msg *msg)
{
	struct releases r;
	struct series_list sl;
	int rc;

	assert(rq->labels && rq->timeout_ns > 0 && rq->max_bytes > 0);
	if (!rq->service || !rq->service[0])
		return err_set(msg, ERR_INVALID, "service: required");
	if (rq->until_ns <= rq->from_ns)
		return err_set(msg, ERR_INVALID, "time range: until must be after from");
	memset(&r, 0, sizeof(r));
	r.st = st;
	r.tenant = tenant;
	r.rq = rq;
	r.msg = msg;
	r.deadline = clock_mono_ns() + rq->timeout_ns;
	grow_budget_init(&r.budget, rq->max_bytes);
	intern_init(&r.keys, 1u << 24, rq->max_bytes, &r.budget.alloc);
	intern_init(&r.sumkeys, 1u << 24, rq->max_bytes, &r.budget.alloc);
	release_main_init(&r.main, st, tenant, rq->max_bytes);
	sl = (struct series_list){ &r, NULL, 0, 0 };
	rc = store_series_with(st, tenant, STORE_LABEL_SERVICE, rq->service, on_series, &sl);
	if (r.rc)
		rc = err_set(msg, r.rc, "releases: %s", err_str(r.rc));
	else if (rc < 0)
		rc = err_set(msg, rc, "releases: reading series: %s", err_str(rc));
	for (size_t i = 0; i < sl.n && !rc; i++) {
		r.series = sl.v[i].id;
		r.label = sl.v[i].label;
		r.value = intern_str(&r.keys, sl.v[i].value) + 1;
		r.ptype = intern_str(&r.keys, sl.v[i].ptype) + 1;
		rc = store_profiles_each(st, tenant, sl.v[i].id, rq->from_ns, rq->until_ns, on_profile,
					 &r, msg);
		if (r.rc)
			rc = r.rc;
		else if (rc > 0)
			rc = 0;
	}
	if (!rc) {
		/* Oldest first; sums refer to releases by index, so renumber them. */
		uint32_t *to = NULL;
		size_t tocap = 0;

		rc = GROW(to, tocap, r.nrel ? r.nrel : 1, RELEASE_MAX_RELEASES, NULL);
		if (!rc) {
			for (size_t i = 0; i < r.nrel; i++)
				r.rel[i].last_series = i; /* the old index */
			if (r.nrel)
				qsort(r.rel, r.nrel, sizeof(*r.rel), cmp_rel);
			for (size_t i = 0; i < r.nrel; i++)
				to[r.rel[i].last_series] = (uint32_t)i;
			for (size_t j = 0; j < r.nsum; j++)
				r.sum[j].rel = to[r.sum[j].rel];
			free(to);
			rc = write_json(&r, out);
		}
	}
	release_main_release(&r.main);
	grow_free(&r.budget.alloc, sl.v, sl.cap, sizeof(*sl.v));
	grow_free(&r.budget.alloc, r.rel, r.relcap, sizeof(*r.rel));
	grow_free(&r.budget.alloc, r.sum, r.sumcap, sizeof(*r.sum));
	intern_release(&r.keys);
	intern_release(&r.sumkeys);
	return rc;
}

/* ---- resolving a release name ---------------------------------------------------- */

struct resolve {
	const char *name, *label;
	const struct release_labels *rl;
	const char *want_type;
	char label_found[128];
	char type[256];        /* the chosen profile type */
	int matched;
};

static int better_type(const char *cand, const char *cur)
{
	int c = strstr(cand, ":cpu:nanoseconds") != NULL, u = strstr(cur, ":cpu:nanoseconds") != NULL;

	if (!cur[0])
		return 1;
	return c != u ? c > u : strcmp(cand, cur) < 0;
}

static int on_resolve(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct resolve *r = ctx;
	const char *ptype = "", *value = NULL, *lname = NULL;

	(void)id;
	(void)part;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].name, STORE_LABEL_PROFILE_TYPE))
			ptype = l[i].value;
	if (r->want_type && strcmp(ptype, r->want_type))
		return 0;
	if (r->label) {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(l[i].name, r->label))
				value = l[i].value, lname = r->label;
	} else {
		int k = release_label_of(r->rl, l, n, &value);
		lname = k >= 0 ? r->rl->name[k] : NULL;
	}
	if (value && lname && !strcmp(value, r->name)) {
		if (!r->matched || better_type(ptype, r->type))
			snprintf(r->type, sizeof(r->type), "%s", ptype);
		if (!r->matched)
			snprintf(r->label_found, sizeof(r->label_found), "%s", lname);
		r->matched = 1;
	} else if (!r->matched && better_type(ptype, r->type)) {
		snprintf(r->type, sizeof(r->type), "%s", ptype);
	}
	return 0;
}

/* Appends `s` to a selector value between double quotes, escaped. */
static int sel_quote(struct buf *b, const char *s)
{
	int rc = buf_putc(b, '"');

	for (; *s && !rc; s++)
		rc = (*s == '"' || *s == '\\') ? buf_printf(b, "\\%c", *s) : buf_putc(b, *s);
	return rc ? rc : buf_putc(b, '"');
}

static int hex_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 8 || n > 128)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

int release_resolve(struct store *st, const char *tenant, const char *service, const char *name,
		    const char *label, const struct release_labels *rl, const char *profile_type,
		    struct release_sel *out, struct err_msg *msg)
{
	struct resolve r = { name, label && label[0] ? label : NULL, rl, profile_type, "", "", 0 };
	struct buf b;
	int rc;

	if (!service || !service[0])
		return err_set(msg, ERR_INVALID, "service: required");
	if (!name || !name[0])
		return err_set(msg, ERR_INVALID, "release: an empty name");
	rc = store_series_with(st, tenant, STORE_LABEL_SERVICE, service, on_resolve, &r);
	if (rc < 0)
		return err_set(msg, rc, "reading series: %s", err_str(rc));
	if (!r.type[0])
		return err_set(msg, ERR_NOT_FOUND, "service \"%s\" has no profiles%s%s", service,
			       profile_type ? " of type " : "", profile_type ? profile_type : "");
	if (!r.matched && !hex_id(name))
		return err_set(msg, ERR_NOT_FOUND,
			       "service \"%s\" has no release \"%s\" (GET /api/v1/releases lists them)",
			       service, name);
	buf_init(&b, sizeof(out->query) - 1);
	rc = buf_printf(&b, "%s{%s=", r.type, STORE_LABEL_SERVICE);
	rc = rc ? rc : sel_quote(&b, service);
	if (r.matched) {
		rc = rc ? rc : buf_printf(&b, ",%s=", r.label_found);
		rc = rc ? rc : sel_quote(&b, name);
	}
	rc = rc ? rc : buf_putc(&b, '}');
	if (rc) {
		buf_release(&b);
		return err_set(msg, ERR_INVALID, "release \"%s\": the selector is too long", name);
	}
	memcpy(out->query, b.data, b.len + 1);
	buf_release(&b);
	snprintf(out->label, sizeof(out->label), "%s", r.matched ? r.label_found : RELEASE_BY_BUILD_ID);
	snprintf(out->build_id, sizeof(out->build_id), "%s", r.matched ? "" : name);
	return 0;
}
