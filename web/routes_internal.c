/*
 * routes_internal.c - routes one unhex process serves another: POST
 * STORE_HEAD_BLOCK_PATH, where a querier asks an ingester for the profiles
 * its bucket view lacks (storage_int.h section 13, docs/object-storage.md
 * "Freshness").  The tenant comes from the request's credentials and
 * X-Scope-OrgID as on every route; the body is the querier's id list and,
 * with format=2, the labels of the series its query reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "storage/storage.h"
#include "web_int.h"

/* A required integer parameter `key` (ns since the epoch) into *out. */
static int param_ns(struct web__req *rq, const char *key, int64_t *out, struct err_msg *msg)
{
	char v[32], *end;
	long long x;
	int rc = web__param(rq, key, v, sizeof(v), msg);

	if (rc == ERR_NOT_FOUND)
		return err_set(msg, ERR_INVALID, "the parameter %s= is required", key);
	if (rc)
		return rc;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || end == v || *end)
		return err_set(msg, ERR_INVALID, "%s=%s is not an integer of nanoseconds", key, v);
	*out = x;
	return 0;
}

/* The body's format= (storage_int.h section 13): 1 when absent, as older queriers send. */
static int param_format(struct web__req *rq, int *out, struct err_msg *msg)
{
	char v[8];
	int rc = web__param(rq, "format", v, sizeof(v), msg);

	if (rc == ERR_NOT_FOUND) {
		*out = 1;
		return 0;
	}
	if (rc)
		return rc;
	if (strcmp(v, "1") && strcmp(v, "2"))
		return err_set(msg, ERR_INVALID, "format=%s: the formats are 1 and 2", v);
	*out = v[0] - '0';
	return 0;
}

void web__handle_head_block(struct web__req *rq, struct web__resp *rs)
{
	int64_t from = 0, until = 0, view = 0;
	struct err_msg msg;
	int rc, format = 1;

	err_clear(&msg);
	rc = param_ns(rq, "from_ns", &from, &msg);
	if (!rc)
		rc = param_ns(rq, "until_ns", &until, &msg);
	if (!rc)
		rc = param_ns(rq, "view_ns", &view, &msg);
	if (!rc)
		rc = param_format(rq, &format, &msg);
	if (!rc)
		rc = store_head_block(rq->srv->store, rq->tenant, from, until, view, format,
				      rq->body.data, rq->body.len, &rs->body, &msg);
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	rs->status = rs->body.len ? 200 : 204;
	rs->content_type = "application/octet-stream";
}
