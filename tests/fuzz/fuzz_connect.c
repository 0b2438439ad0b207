/*
 * fuzz_connect.c - libFuzzer target: Connect requests of
 * querier.v1.QuerierService.  The first byte picks the method, the rest is
 * the request: packed protobuf (fuzz_connect), or proto3 JSON decoded by the
 * descriptor mapper (fuzz_connect_json, the same file built with
 * FUZZ_CONNECT_JSON).  The whole call (decoding, the shared method, the
 * response in the same codec) runs against an empty real store opened once
 * in a temp dir.  Any failure must come with a message.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "query/query.h"
#include "storage/storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef FUZZ_CONNECT_JSON
#define FUZZ_CALL query_connect
#else
#define FUZZ_CALL query_connect_proto
#endif

static const char *const methods[] = {
	"ProfileTypes", "LabelNames", "LabelValues", "Series", "SelectMergeStacktraces",
	"SelectMergeProfile", "SelectSeries", "Diff", "SelectHeatmap", "GetProfileStats",
	"SelectMergeSpanProfile", "AnalyzeQuery",
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *method;
	struct query_limits lim = { 0 };
	struct err_msg msg = { { 0 } };
	struct buf out;
	int rc;

	if (size < 1)
		return 0;
	method = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
	lim.timeout_ns = 2000000000LL;
	lim.max_bytes = 64 << 20;
	buf_init(&out, 16 << 20);
	rc = FUZZ_CALL(store_once(), "t", method, data + 1, size - 1, &lim, &out, &msg);
	if (rc && !msg.text[0])
		abort();
	buf_release(&out);
	return 0;
}
