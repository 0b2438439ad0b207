/*
 * request.c - Pyroscope's POST /ingest in every format it accepts:
 * labels, names and units per format, then one transaction.
 *
 * Series labels per format, as Pyroscope makes them:
 *   pprof       the name's labels; service_name = the application name
 *               (without a known kind suffix, which declares __name__),
 *               or the labels' service_name; __name__ from the suffix or
 *               from the profile and its sample_type_config (naming.c).
 *   jfr         the name's labels; __name__ per event kind (jfr.c);
 *               jfr_event = the recording's "event" setting;
 *               service_name = the whole application name, or, when the
 *               labels give service_name, app_name = the application name.
 *   text, speedscope
 *               __name__ and the sample type from the kind suffix
 *               (ingest__text_kind; no suffix means cpu); service_name or
 *               app_name as for jfr, from the name without its suffix.
 * Every format: pyroscope_spy = spyName when the request gives one, and
 * labels named __*__ are dropped.
 */
#include "ingest/ingest.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "base/json.h"
#include "ingest_int.h"
#include "storage/storage.h"

#include <stdio.h>
#include <string.h>

#define LABEL_SPY "pyroscope_spy"
#define LABEL_APP "app_name"
#define LABEL_JFR_EVENT "jfr_event"
#define LABEL_PROFILE_NAME "profile_name"
#define NS_PER_S 1000000000LL

/* The request arena: every converted profile of the request at once. */
static size_t request_cap(const struct ingest_limits *lim)
{
	const size_t fixed = (size_t)1 << 20;

	if (lim->max_decompressed_bytes > (SIZE_MAX - fixed) / 8)
		return SIZE_MAX;
	return 8 * lim->max_decompressed_bytes + fixed;
}

/* Temporaries of one builder: tables and growing arrays, about 40x what they index. */
static size_t builder_cap(size_t len)
{
	const size_t fixed = (size_t)4 << 20;

	if (len > (SIZE_MAX - fixed) / 48)
		return SIZE_MAX;
	return 48 * len + fixed;
}

/* Appends one label to `l` (capacity checked by the caller's sizing). */
static void put(struct store_label *l, size_t *n, const char *name, const char *value)
{
	l[*n].name = name;
	l[(*n)++].value = value;
}

/*
 * Labels of the non-pprof formats: the name's labels, pyroscope_spy,
 * then service_name = `app`, or app_name = `app` when the labels already
 * have a service_name.  `extra` slots are left for the caller.
 */
static int base_labels(struct arena *a, const struct ingest_name *nm, const char *app,
		       const char *spy, size_t extra, struct store_label **out, size_t *n)
{
	struct store_label *l = arena_calloc(a, nm->n_labels + 3 + extra, sizeof(*l));
	int has_svc = ingest__label_get(nm->labels, nm->n_labels, STORE_LABEL_SERVICE) != NULL;

	if (!l)
		return arena_failed(a);
	*n = 0;
	for (size_t i = 0; i < nm->n_labels; i++)
		put(l, n, nm->labels[i].name, nm->labels[i].value);
	if (spy && *spy && !ingest__label_get(l, *n, LABEL_SPY))
		put(l, n, LABEL_SPY, spy);
	if (!has_svc)
		put(l, n, STORE_LABEL_SERVICE, app);
	else if (!ingest__label_get(l, *n, LABEL_APP))
		put(l, n, LABEL_APP, app);
	*out = l;
	return 0;
}

/* Sets or adds label `name`. */
static void set_label(struct store_label *l, size_t *n, const char *name, const char *value)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(l[i].name, name) == 0) {
			l[i].value = value;
			return;
		}
	put(l, n, name, value);
}

/* Fills the labels, types and times of a built profile and checks them. */
static int finish_profile(struct arena *a, const struct ingest_limits *lim,
			  struct store_label *labels, size_t n_labels, const char *const *types,
			  size_t n_types, const struct ingest_request *req, int64_t period,
			  struct ingest_pprof *out, struct err_msg *msg)
{
	const char **ids = arena_calloc(a, n_types, sizeof(*ids));
	int rc;

	if (!ids)
		return arena_failed(a);
	rc = ingest__check_labels(lim, labels, n_labels, msg);
	if (rc)
		return rc;
	if (n_labels + 1 > lim->max_labels)
		return err_set(msg, ERR_TOO_LARGE, "%zu series labels, more than the limit of %zu",
			       n_labels + 1, lim->max_labels);
	for (size_t t = 0; t < n_types; t++) {
		ids[t] = types[t];
		if (strlen(ids[t]) > lim->max_label_bytes)
			return err_set(msg, ERR_TOO_LARGE, "profile type longer than %zu bytes",
				       lim->max_label_bytes);
	}
	out->labels = labels;
	out->n_labels = n_labels;
	out->service = ingest__label_get(labels, n_labels, STORE_LABEL_SERVICE);
	out->profile_types = ids;
	out->n_types = n_types;
	out->time_ns = req->from_ns;
	out->duration_ns = req->until_ns > req->from_ns ? req->until_ns - req->from_ns : 0;
	out->period = period;
	return 0;
}

/* Checks the groups' label counts against max_labels once the base labels are known. */
static int check_groups(const struct ingest_limits *lim, const struct ingest_pprof *p,
			struct err_msg *msg)
{
	for (size_t g = 1; g < p->n_groups; g++) {
		size_t n = p->n_labels + 1;

		for (size_t i = 0; i < p->groups[g].n_labels; i++)
			if (!ingest__label_get(p->labels, p->n_labels, p->groups[g].labels[i].name))
				n++;
		if (n > lim->max_labels)
			return err_set(msg, ERR_TOO_LARGE,
				       "%zu series labels, more than the limit of %zu", n,
				       lim->max_labels);
	}
	return 0;
}

/* Inflates `data` when gzipped into `scratch`; the bytes to read are *p, *n. */
static int maybe_gunzip(const void *data, size_t len, const struct ingest_limits *lim,
			struct buf *scratch, const char *what, const void **p, size_t *n,
			struct err_msg *msg)
{
	int rc;

	*p = data;
	*n = len;
	if (!is_gzip(data, len)) {
		if (len > lim->max_decompressed_bytes)
			return err_set(msg, ERR_TOO_LARGE, "%s of %zu bytes exceeds the limit of %zu",
				       what, len, lim->max_decompressed_bytes);
		return 0;
	}
	rc = gunzip_capped(data, len, lim->max_decompressed_bytes, scratch, msg);
	if (rc)
		return ingest__msg_prefix(msg, rc, what);
	*p = scratch->data;
	*n = scratch->len;
	return 0;
}

/* ---- pprof ----------------------------------------------------------------- */

static int pprof_request(struct store *st, const struct ingest_limits *lim, const char *tenant,
			 const struct ingest_request *req, struct ingest_stats *out,
			 struct err_msg *msg)
{
	struct ingest_stc stc;
	struct ingest_hints hints = { NULL, 0 };
	struct ingest_series s;
	struct store_label *labels, *l;
	struct arena a;
	size_t n;
	int rc;

	arena_init(&a, (size_t)4 << 20);
	rc = ingest_legacy_labels(&a, req->name, &labels, &n, msg);
	if (rc == ERR_NOMEM)
		err_set(msg, rc, "name: %s", err_str(rc));
	if (!rc && req->sample_type_config) {
		rc = ingest__stc_parse(&a, req->sample_type_config, req->stc_len, &stc, msg);
		if (!rc)
			hints.stc = &stc;
	}
	if (rc)
		goto out;
	hints.fixes = ingest__spy_fixes(req->spy_name, hints.stc);
	l = arena_calloc(&a, n + 1, sizeof(*l));
	if (!l) {
		rc = err_set(msg, ERR_NOMEM, "out of memory");
		goto out;
	}
	memcpy(l, labels, n * sizeof(*l));
	if (req->spy_name && *req->spy_name && !ingest__label_get(l, n, LABEL_SPY))
		put(l, &n, LABEL_SPY, req->spy_name);
	s.labels = l;
	s.n_labels = n;
	s.data = req->data;
	s.len = req->len;
	s.hints = &hints;
	s.id = NULL;
	rc = ingest__run(st, lim, tenant, &s, 1, req->from_ns,
			 req->until_ns > req->from_ns ? req->until_ns - req->from_ns : 0, out, msg);
out:
	arena_release(&a);
	return rc;
}

/* ---- text formats and speedscope ----------------------------------------- */

/*
 * Scales, finishes and names one built text profile of kind `tk`.  A
 * time-based kind with a sample rate counts samples of 1/rate s: its
 * values become nanoseconds (value * 1e9 / rate) with a cpu/nanoseconds
 * period.
 */
static int text_finish(struct arena *a, const struct ingest_limits *lim,
		       const struct ingest_text_kind *tk, uint64_t rate, struct ingest_builder *b,
		       struct store_label *labels, size_t n_labels, const struct ingest_request *req,
		       struct ingest_pprof *p, struct err_msg *msg)
{
	const char *parts[5] = { tk->name, tk->type, tk->unit, "", "" };
	const char *id;
	int64_t period = 0;
	int rc;

	if (tk->timed_type && rate) {
		parts[1] = tk->timed_type;
		parts[2] = "nanoseconds";
		parts[3] = "cpu";
		parts[4] = "nanoseconds";
		period = (int64_t)((uint64_t)NS_PER_S / rate);
		if (rate > INT64_MAX || ingest__b_scale(b, NS_PER_S, (int64_t)rate))
			return err_set(msg, ERR_INVALID, "a stack's value overflows as nanoseconds");
	}
	memset(p, 0, sizeof(*p));
	rc = ingest__b_finish(b, p);
	if (rc)
		return rc;
	set_label(labels, &n_labels, STORE_LABEL_NAME, tk->name);
	id = ingest__profile_type_id(a, parts);
	if (!id)
		return arena_failed(a);
	return finish_profile(a, lim, labels, n_labels, &id, 1, req, period, p, msg);
}

/* The kind of a text profile from its application name: the last dot segment, or cpu. */
static int text_kind(const char *app, const struct ingest_text_kind **tk, size_t *base_len,
		     struct err_msg *msg)
{
	const char *dot = strrchr(app, '.');

	*base_len = dot ? (size_t)(dot - app) : strlen(app);
	*tk = ingest__text_kind(dot ? dot + 1 : "cpu");
	if (!*tk)
		return err_set(msg, ERR_INVALID,
			       "name: unknown profile type \"%.64s\" (the suffix after the last '.'; "
			       "cpu, wall, alloc_objects, ... or none for cpu)",
			       dot + 1);
	if (*base_len == 0)
		return err_set(msg, ERR_INVALID, "name: empty application name");
	return 0;
}

static int text_request(struct store *st, const struct ingest_limits *lim, const char *tenant,
			const struct ingest_request *req, struct ingest_stats *out,
			struct err_msg *msg)
{
	const struct ingest_text_kind *tk;
	struct ingest_builder b;
	struct ingest_pprof p;
	struct ingest_name nm;
	struct store_label *labels;
	struct arena a;
	size_t n, base_len;
	char *app;
	int rc;

	if (req->len > lim->max_decompressed_bytes)
		return err_set(msg, ERR_TOO_LARGE, "profile of %zu bytes exceeds the limit of %zu",
			       req->len, lim->max_decompressed_bytes);
	ingest__arena_init(&a, request_cap(lim), lim);
	ingest__b_init(&b, &a, builder_cap(req->len), lim, 1);
	rc = ingest__parse_name(&a, req->name, &nm, msg);
	if (!rc)
		rc = text_kind(nm.app, &tk, &base_len, msg);
	if (rc)
		goto out;
	/* Pyroscope skips a legacy profile that names a span profile. */
	if (ingest__label_get(nm.labels, nm.n_labels, "profile_id")) {
		if (out)
			memset(out, 0, sizeof(*out));
		goto out;
	}
	app = arena_strndup(&a, nm.app, base_len);
	rc = app ? base_labels(&a, &nm, app, req->spy_name, 1, &labels, &n) : arena_failed(&a);
	if (!rc)
		rc = ingest__parse_text(req->format, req->data, req->len, &b, msg);
	if (rc == ERR_TOO_LARGE && !(msg && msg->text[0]))
		err_set(msg, rc, "the profile needs more memory than allowed");
	if (!rc)
		rc = text_finish(&a, lim, tk, req->sample_rate, &b, labels, n, req, &p, msg);
	if (!rc)
		rc = ingest__write(st, lim, tenant, &p, p.n_samples ? 1 : 0, out, msg);
out:
	ingest__b_release(&b);
	arena_release(&a);
	return rc;
}

/*
 * The sample rate of a speedscope profile: the request's, except that
 * Pyroscope takes the default 100 as "not given" and uses the unit's own,
 * one that makes value * 100 (the unit's multiplier) * 1e9 / rate the
 * nanoseconds of the value: 100 per second, ...  Pyroscope computes the
 * nanoseconds' in a 32-bit integer, which wraps and zeroes every value;
 * here it is exact.
 */
static uint64_t speedscope_rate(uint32_t rate, const char *unit)
{
	if (rate != 100)
		return rate;
	if (strcmp(unit, "nanoseconds") == 0)
		return 100ULL * NS_PER_S;
	if (strcmp(unit, "microseconds") == 0)
		return 100ULL * 1000000;
	if (strcmp(unit, "milliseconds") == 0)
		return 100ULL * 1000;
	if (strcmp(unit, "seconds") == 0)
		return 100;
	if (strcmp(unit, "none") == 0)
		return 100ULL * 100;
	return 0; /* bytes */
}

static int speedscope_request(struct store *st, const struct ingest_limits *lim,
			      const char *tenant, const struct ingest_request *req,
			      struct ingest_stats *out, struct err_msg *msg)
{
	struct ingest_ss_profile *ps = NULL;
	struct ingest_pprof *pp = NULL;
	struct ingest_name nm;
	struct arena a, tree;
	size_t n = 0, k = 0;
	int rc;

	if (req->len > lim->max_decompressed_bytes)
		return err_set(msg, ERR_TOO_LARGE, "profile of %zu bytes exceeds the limit of %zu",
			       req->len, lim->max_decompressed_bytes);
	ingest__arena_init(&a, request_cap(lim), lim);
	ingest__arena_init(&tree, json_mem_bound(req->len) + builder_cap(0), lim);
	rc = ingest__parse_name(&a, req->name, &nm, msg);
	if (!rc)
		rc = ingest__parse_speedscope(&a, &tree, req->data, req->len, lim,
					      builder_cap(req->len), &ps, &n, msg);
	if (rc)
		goto out;
	pp = arena_calloc(&a, n ? n : 1, sizeof(*pp));
	if (!pp) {
		rc = err_set(msg, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		const struct ingest_text_kind *tk;
		struct store_label *labels;
		size_t nl, base_len;
		const char *app = nm.app;
		char *both;

		/* Several profiles in one file are told apart by their unit. */
		if (n > 1) {
			both = arena_alloc(&a, strlen(nm.app) + strlen(ps[i].unit) + 2);
			if (!both) {
				rc = arena_failed(&a);
				break;
			}
			sprintf(both, "%s.%s", nm.app, ps[i].unit);
			app = both;
		}
		rc = text_kind(app, &tk, &base_len, msg);
		if (rc)
			break;
		both = arena_strndup(&a, app, base_len);
		rc = both ? base_labels(&a, &nm, both, req->spy_name, 2, &labels, &nl)
			  : arena_failed(&a);
		if (!rc && *ps[i].name)
			set_label(labels, &nl, LABEL_PROFILE_NAME, ps[i].name);
		if (!rc)
			rc = text_finish(&a, lim, tk, speedscope_rate(req->sample_rate, ps[i].unit),
					 &ps[i].b, labels, nl, req, &pp[k], msg);
		if (!rc && pp[k].n_samples)
			k++;
	}
	if (!rc)
		rc = ingest__write(st, lim, tenant, pp, k, out, msg);
out:
	for (size_t i = 0; i < n; i++)
		ingest__b_release(&ps[i].b);
	arena_release(&tree);
	arena_release(&a);
	return rc;
}

/* ---- jfr ------------------------------------------------------------------- */

static int jfr_request(struct store *st, const struct ingest_limits *lim, const char *tenant,
		       const struct ingest_request *req, struct ingest_stats *out,
		       struct err_msg *msg)
{
	struct ingest_jfr jfr;
	struct ingest_pprof *pp = NULL;
	struct ingest_name nm;
	struct store_label *base;
	struct buf jbuf, lbuf;
	struct arena a;
	const void *jp, *lp = NULL;
	size_t jn, ln = 0, nb, k = 0;
	int rc;

	memset(&jfr, 0, sizeof(jfr));
	buf_init(&jbuf, lim->max_decompressed_bytes);
	buf_init(&lbuf, lim->max_decompressed_bytes);
	ingest__arena_init(&a, request_cap(lim), lim);
	rc = ingest__parse_name(&a, req->name, &nm, msg);
	if (!rc)
		rc = base_labels(&a, &nm, nm.app, req->spy_name, 0, &base, &nb);
	if (!rc)
		rc = maybe_gunzip(req->data, req->len, lim, &jbuf, "jfr", &jp, &jn, msg);
	if (!rc && req->jfr_labels)
		rc = maybe_gunzip(req->jfr_labels, req->labels_len, lim, &lbuf, "labels", &lp, &ln,
				  msg);
	if (!rc)
		rc = ingest__parse_jfr(&a, jp, jn, lp, ln, lim, req->sample_rate, base, nb, &jfr, msg);
	if (rc)
		goto out;
	pp = arena_calloc(&a, jfr.n ? jfr.n : 1, sizeof(*pp));
	if (!pp) {
		rc = err_set(msg, ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < jfr.n && !rc; i++) {
		struct ingest_jfr_profile *jp1 = &jfr.p[i];
		const char *ids[INGEST_BUILDER_MAX_TYPES];
		struct store_label *l = arena_calloc(&a, nb + 2, sizeof(*l));
		size_t nl = nb;

		if (!l) {
			rc = arena_failed(&a);
			break;
		}
		memcpy(l, base, nb * sizeof(*l));
		if (*jfr.event)
			set_label(l, &nl, LABEL_JFR_EVENT, jfr.event);
		set_label(l, &nl, STORE_LABEL_NAME, jp1->kind->metric);
		for (size_t t = 0; t < jp1->kind->n_types; t++) {
			const char *parts[5] = { jp1->kind->metric, jp1->kind->types[t],
						 jp1->kind->units[t], jp1->kind->period_type,
						 jp1->kind->period_unit };

			ids[t] = ingest__profile_type_id(&a, parts);
			if (!ids[t])
				rc = arena_failed(&a);
		}
		if (!rc)
			rc = ingest__b_finish(&jp1->b, &pp[k]);
		if (!rc)
			rc = finish_profile(&a, lim, l, nl, ids, jp1->kind->n_types, req,
					    jp1->kind->timed ? jfr.period : 0, &pp[k], msg);
		if (!rc)
			rc = check_groups(lim, &pp[k], msg);
		if (!rc && pp[k].n_samples)
			k++;
	}
	if (!rc)
		rc = ingest__write(st, lim, tenant, pp, k, out, msg);
	if (!rc && out)
		out->pprof_samples = jfr.events;
out:
	ingest__jfr_release(&jfr);
	buf_release(&jbuf);
	buf_release(&lbuf);
	arena_release(&a);
	return rc;
}

/* ---- entry ----------------------------------------------------------------- */

int ingest_pyroscope(struct store *st, const struct ingest_limits *lim, const char *tenant,
		     const struct ingest_request *req, struct ingest_stats *out,
		     struct err_msg *msg)
{
	if (!req->name)
		return err_set(msg, ERR_INVALID, "name: missing");
	switch (req->format) {
	case INGEST_FORMAT_PPROF:
		return pprof_request(st, lim, tenant, req, out, msg);
	case INGEST_FORMAT_JFR:
		return jfr_request(st, lim, tenant, req, out, msg);
	case INGEST_FORMAT_SPEEDSCOPE:
		return speedscope_request(st, lim, tenant, req, out, msg);
	case INGEST_FORMAT_FOLDED:
	case INGEST_FORMAT_LINES:
	case INGEST_FORMAT_TRIE:
	case INGEST_FORMAT_TREE:
		return text_request(st, lim, tenant, req, out, msg);
	}
	return err_set(msg, ERR_INVALID, "unknown format");
}
