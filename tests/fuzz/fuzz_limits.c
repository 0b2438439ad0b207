/*
 * fuzz_limits.c - libFuzzer target: the limits file (web/limits.c,
 * docs/limits.md).  An accepted file must give every tenant limits of at
 * least 1 and valid, distinct tenant ids; its state must then admit and
 * refuse without fault (ingest, queries, debug info, the tenant cap),
 * hand ingest and queries caps of at least 1 (labels, query bytes) and
 * write its metrics.  A refused file must say why.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "debuginfo/debuginfo.h"
#include "web/web_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_limits(const struct web__tenant_limits *l)
{
	if (!(l->ingest_bytes_per_s > 0) || !(l->ingest_profiles_per_s > 0) || !(l->burst_s > 0) ||
	    !l->max_series || !l->max_queries || !l->max_labels || !l->max_label_bytes ||
	    !l->max_label_names || !l->max_label_values || !(l->max_query_bytes >= 1) ||
	    !(l->debuginfo_bytes_per_hour > 0) ||
	    (l->symbolization_off != 0 && l->symbolization_off != 1))
		abort();
}

/* A tenant's upstreams: blank-separated http(s) URLs within the caps, headers only with them. */
static void check_upstreams(const struct web__tenant_override *t)
{
	size_t n = 0;

	if (!t->own_upstreams) {
		if (t->debuginfod_urls || t->debuginfod_headers_file)
			abort();
		return;
	}
	if (!t->debuginfod_urls || strchr(t->debuginfod_urls, ','))
		abort();
	for (const char *p = t->debuginfod_urls; *p;) {
		size_t k = strcspn(p, " ");

		if (k > WEB_LIMITS_URL_MAX || (strncmp(p, "http://", 7) && strncmp(p, "https://", 8)))
			abort();
		n++;
		p += k + (p[k] == ' ');
	}
	if (n > DEBUGINFO_MAX_UPSTREAMS ||
	    (t->debuginfod_headers_file && (!t->debuginfod_headers_file[0] ||
					    strlen(t->debuginfod_headers_file) > WEB_LIMITS_PATH_MAX)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct web__limits_conf c;
	struct web_limits *L;
	struct web__tenant_state *ts, *qs;
	struct err_msg msg = { { 0 } };
	struct buf b;
	int retry;

	if (web__limits_parse((const char *)data, size, NULL, &c, &msg)) {
		if (!msg.text[0])
			abort();
		return 0;
	}
	if (!c.max_tenants || c.n_tenants > WEB_LIMITS_MAX_LINES)
		abort();
	check_limits(&c.dflt);
	for (size_t i = 0; i < c.n_tenants; i++) {
		check_limits(&c.tenants[i].lim);
		check_upstreams(&c.tenants[i]);
		if (web__tenant_check(c.tenants[i].name, &msg))
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c.tenants[i].name, c.tenants[j].name))
				abort();
	}
	if (web__limits_new(&c, NULL, &L, &msg)) {
		web__limits_conf_release(&c);
		return 0;
	}
	/* A few tenants: listed ones first, then new ones past any cap. */
	for (int k = 0; k < 8; k++) {
		char name[16];

		snprintf(name, sizeof(name), "t%d", k);
		err_clear(&msg);
		if (!web__limits_ingest_admit(L, name, 1000, &ts, &retry, &msg)) {
			struct ingest_limits base, lim;

			web__limits_ingest_done(L, ts, 3, ERR_TOO_LARGE, "series limit of 1 reached");
			web__limits_ingest_done(L, ts, 0, ERR_TOO_LARGE,
						"label k has 1 values, its limit (limits file: "
						"max_label_values)");
			ingest_limits_default(&base);
			web__limits_ingest_limits(ts, &base, &lim);
			/* The store asserts caps of at least 1. */
			if (!lim.max_label_names || !lim.max_label_values || !lim.max_series)
				abort();
		} else if (!msg.text[0]) {
			abort();
		}
		err_clear(&msg);
		if (!web__limits_query_admit(L, name, &qs, &msg)) {
			if (web__limits_query_bytes(qs) < 1)
				abort();
			web__limits_query_finished(qs, 1);
			web__limits_query_done(qs);
		}
		err_clear(&msg);
		(void)web__limits_debuginfo_admit(L, name, 1 << 20, &retry, &msg);
	}
	buf_init(&b, 1 << 20);
	if (web__limits_metrics(L, &b))
		abort();
	buf_release(&b);
	web__limits_free(L);
	return 0;
}
