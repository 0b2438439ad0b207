/* helpers.h - fixtures shared by the storage tests: a real RocksDB store in a
 * fresh mkdtemp directory, removed afterwards, and small builders. */
#ifndef UNHEX_TESTS_STORAGE_HELPERS_H
#define UNHEX_TESTS_STORAGE_HELPERS_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "storage/storage.h"

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

/* Returns an owned, newly created directory name. */
static inline char *tmpdir_new(void)
{
	char *d = strdup("/tmp/unhex-storage-XXXXXX");
	if (!d || !mkdtemp(d)) {
		perror("mkdtemp");
		abort();
	}
	return d;
}

static inline void tmpdir_free(char *d)
{
	if (d)
		nftw(d, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

/* Opens a store with `o`; NULL, with the reason on stderr, on failure. */
static inline struct store *open_options(const struct store_options *o)
{
	struct err_msg msg = { { 0 } };
	struct store *st = NULL;
	int rc = store_open(o, &st, &msg);

	if (rc) {
		fprintf(stderr, "store_open(%s): %s: %s\n", o->dir, err_str(rc), msg.text);
		return NULL;
	}
	return st;
}

static inline struct store *open_store(const char *dir, int read_only, int64_t window_ns)
{
	struct store_options o = { 0 };

	o.dir = dir;
	o.read_only = read_only;
	o.window_ns = window_ns;
	return open_options(&o);
}

/* A store clock (store_options.clock_ns) that reads the int64_t at `ctx`,
 * for the tests that move time themselves. */
static inline int64_t clock_at(void *ctx)
{
	return *(const int64_t *)ctx;
}

/*
 * The cmocka fixture of the tests on one store: sfx_setup opens a store
 * (open_store(dir, 0, 0)) in a fresh directory, sfx_teardown closes it and
 * removes the directory, whatever the test left open or failed on.
 */
struct sfx {
	char *dir;
	struct store *st;
};

static inline int sfx_setup(void **state)
{
	struct sfx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->dir = tmpdir_new();
	f->st = open_store(f->dir, 0, 0);
	if (!f->st) {
		tmpdir_free(f->dir);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static inline int sfx_teardown(void **state)
{
	struct sfx *f = *state;

	store_close(f->st);
	tmpdir_free(f->dir);
	free(f);
	return 0;
}

/* A cmocka test that runs on the fixture. */
#define SFX_TEST(f) cmocka_unit_test_setup_teardown(f, sfx_setup, sfx_teardown)

/* The fixture's store (borrowed: the fixture closes it). */
static inline struct store *sfx_store(void **state)
{
	return ((struct sfx *)*state)->st;
}

/* The fixture's directory (borrowed). */
static inline const char *sfx_dir(void **state)
{
	return ((struct sfx *)*state)->dir;
}

/* Closes the fixture's store and opens it again, read-only if asked, as
 * after a restart; returns it (borrowed), NULL if it did not open. */
static inline struct store *sfx_reopen(void **state, int read_only)
{
	struct sfx *f = *state;

	store_close(f->st);
	f->st = open_store(f->dir, read_only, 0);
	return f->st;
}

/* Begins a txn or aborts the test program. */
static inline struct store_txn *begin(struct store *st, const char *tenant)
{
	struct err_msg msg = { { 0 } };
	struct store_txn *tx = NULL;
	int rc = store_txn_begin(st, tenant, &tx, &msg);
	if (rc) {
		fprintf(stderr, "store_txn_begin: %s: %s\n", err_str(rc), msg.text);
		abort();
	}
	return tx;
}

static inline int commit(struct store_txn *tx)
{
	struct err_msg msg = { { 0 } };
	int rc = store_txn_commit(tx, &msg);
	if (rc)
		fprintf(stderr, "store_txn_commit: %s: %s\n", err_str(rc), msg.text);
	return rc;
}

/* A series {service_name=svc, __profile_type__=cpu, extra=val}. */
static inline int add_series(struct store_txn *tx, const char *svc, const char *val,
			     uint64_t *id)
{
	struct store_label l[3] = {
		{ STORE_LABEL_PROFILE_TYPE, "process_cpu:cpu:nanoseconds:cpu:nanoseconds" },
		{ STORE_LABEL_SERVICE, svc },
		{ "pod", val },
	};
	struct err_msg msg = { { 0 } };
	int rc = store_txn_series(tx, l, val ? 3 : 2, id, &msg);
	if (rc)
		fprintf(stderr, "store_txn_series: %s: %s\n", err_str(rc), msg.text);
	return rc;
}

#endif
