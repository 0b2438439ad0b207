/*
 * fuzz_connect.c - libFuzzer target: Connect binary protobuf requests of
 * querier.v1.QuerierService.  The first byte picks the method, the rest is
 * the packed request.  The decoder's JSON request tree is checked for shape,
 * then the whole call (decoding, the shared method, the protobuf response)
 * runs against an empty real store opened once in a temp dir.  Any failure
 * must come with a message.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "query/query.h"
#include "query/query_int.h"
#include "storage/storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const methods[] = {
	"ProfileTypes", "LabelNames", "LabelValues", "Series", "SelectMergeStacktraces",
	"SelectMergeProfile", "SelectSeries", "Diff",
};

static char dir[64];
static struct store *st;

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void close_store(void)
{
	store_close(st);
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static struct store *store_once(void)
{
	struct store_options o = { 0 };
	struct err_msg msg = { { 0 } };

	if (st)
		return st;
	strcpy(dir, "/tmp/unhex-fuzz-connect-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	o.dir = dir;
	if (store_open(&o, &st, &msg))
		abort();
	atexit(close_store);
	return st;
}

/* Every node of the tree is a well-formed value with NUL-terminated text. */
static void check_tree(const struct qjson *v, int depth)
{
	if (depth > 8)
		abort();
	switch (v->type) {
	case QJ_STR:
	case QJ_NUM:
		if (!v->s || strlen(v->s) != v->len)
			abort();
		break;
	case QJ_OBJ:
		for (size_t i = 0; i < v->n; i++) {
			if (!v->keys[i] || !v->keys[i][0])
				abort();
			check_tree(&v->kids[i], depth + 1);
		}
		break;
	case QJ_ARR:
		for (size_t i = 0; i < v->n; i++)
			check_tree(&v->kids[i], depth + 1);
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *method;
	struct query_limits lim = { 0 };
	struct err_msg msg = { { 0 } };
	struct qjson *r;
	struct arena a;
	struct buf out;
	int rc;

	if (size < 1)
		return 0;
	method = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
	arena_init(&a, 1 << 20);
	rc = query__connect_pb_request(method, data + 1, size - 1, &a, &r, &msg);
	if (rc && !msg.text[0])
		abort();
	if (!rc) {
		if (r->type != QJ_OBJ)
			abort();
		check_tree(r, 0);
	}
	arena_release(&a);

	lim.timeout_ns = 2000000000LL;
	lim.max_bytes = 64 << 20;
	buf_init(&out, 16 << 20);
	err_clear(&msg);
	rc = query_connect_proto(store_once(), "t", method, data + 1, size - 1, &lim, &out, &msg);
	if (rc && !msg.text[0])
		abort();
	buf_release(&out);
	return 0;
}
