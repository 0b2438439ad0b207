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

static inline struct store *open_store(const char *dir, int read_only, int64_t window_ns)
{
	struct store_options o = { 0 };
	struct err_msg msg = { { 0 } };
	struct store *st = NULL;
	int rc;

	o.dir = dir;
	o.read_only = read_only;
	o.window_ns = window_ns;
	rc = store_open(&o, &st, &msg);
	if (rc) {
		fprintf(stderr, "store_open(%s): %s: %s\n", dir, err_str(rc), msg.text);
		return NULL;
	}
	return st;
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
