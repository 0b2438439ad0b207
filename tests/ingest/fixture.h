/*
 * fixture.h - the store fixture of the ingest tests that write: a real
 * RocksDB store in a fresh mkdtemp directory, default limits, and the
 * stored counts of tenant "t1".  Include after <cmocka.h>.
 */
#ifndef UNHEX_TESTS_INGEST_FIXTURE_H
#define UNHEX_TESTS_INGEST_FIXTURE_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "ingest/ingest.h"
#include "storage/storage.h"

struct fx {
	char dir[64];
	struct store *st;
	struct ingest_limits lim;
};

static inline int fx_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

/*
 * Opens a store in a new directory made from `tmpl` (a mkdtemp template,
 * "/tmp/...-XXXXXX") and sets *state to the fixture; -1 on failure.
 */
static inline int fx_setup(void **state, const char *tmpl)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct store_options o = { 0 };
	struct err_msg msg = { { 0 } };

	if (!f || strlen(tmpl) >= sizeof(f->dir)) {
		free(f);
		return -1;
	}
	strcpy(f->dir, tmpl);
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	o.dir = f->dir;
	if (store_open(&o, &f->st, &msg)) {
		fprintf(stderr, "store_open: %s\n", msg.text);
		free(f);
		return -1;
	}
	ingest_limits_default(&f->lim);
	*state = f;
	return 0;
}

/* fx_setup() in a directory named for the ingest tests. */
static inline int fx_setup_ingest(void **state)
{
	return fx_setup(state, "/tmp/unhex-ingest-XXXXXX");
}

/* A cmocka test that runs on the fixture. */
#define FX_TEST(t) cmocka_unit_test_setup_teardown(t, fx_setup_ingest, fx_teardown)

/* Closes the store and removes its directory. */
static inline int fx_teardown(void **state)
{
	struct fx *f = *state;

	store_close(f->st);
	nftw(f->dir, fx_rm, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static inline int fx_stats_cb(void *ctx, const struct store_tenant_stats *s)
{
	if (strcmp(s->tenant, "t1") == 0)
		*(struct store_tenant_stats *)ctx = *s;
	return 0;
}

/* The stored counts of tenant "t1" (all zero before its first write). */
static inline struct store_tenant_stats fx_tenant_stats(struct fx *f)
{
	struct store_tenant_stats s;
	struct err_msg msg = { { 0 } };

	memset(&s, 0, sizeof(s));
	assert_int_equal(store_stats(f->st, fx_stats_cb, &s, &msg), 0);
	return s;
}

#endif
