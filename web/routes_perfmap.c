/*
 * routes_perfmap.c - perf maps of JIT runtimes over HTTP:
 *
 *   POST /api/v1/perfmap/<pid>   the text of /tmp/perf-<pid>.map
 *
 * The body is read whole (at most PERFMAP_MAX_BYTES: a longer declared
 * length is refused before reading) and handed to the debug-info service,
 * which checks every line and stores the map for the request's tenant and
 * that process, replacing the one before (docs/symbolization.md, "JIT
 * runtimes").  server.c has checked the upload scope; the bytes count
 * against the tenant's debuginfo_bytes_per_hour (limits.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/perfmap.h"
#include "debuginfo/debuginfo.h"
#include "web_int.h"

#define CHUNK (64 * 1024)
#define PREFIX "/api/v1/perfmap/"

/* A decimal process id 1..INT32_MAX, the whole of `s`. */
static int take_pid(const char *s, uint32_t *pid)
{
	uint64_t v = 0;
	size_t n = 0;

	for (; s[n] >= '0' && s[n] <= '9'; n++) {
		if (n >= 10)
			return ERR_INVALID;
		v = v * 10 + (uint64_t)(s[n] - '0');
	}
	if (n == 0 || s[n] || s[0] == '0' || v > INT32_MAX)
		return ERR_INVALID;
	*pid = (uint32_t)v;
	return 0;
}

void web__handle_perfmap(struct web__req *rq, struct debuginfo *svc, struct web__resp *rs)
{
	long long declared = web__req_content_length(rq);
	struct err_msg msg;
	struct buf text;
	size_t entries = 0;
	uint32_t pid = 0;
	char *chunk;
	int rc = 0;

	err_clear(&msg);
	rq->body_state = WEB_BODY_UNREAD;
	if (strcmp(rq->method, "POST") != 0) {
		web__resp_text_error(rs, ERR_INVALID, "use POST");
		return;
	}
	if (take_pid(rq->path + strlen(PREFIX), &pid)) {
		web__resp_text_error(rs, ERR_INVALID,
				     "expected " PREFIX "<process id>, a decimal 1..2147483647");
		return;
	}
	if (declared > (long long)PERFMAP_MAX_BYTES) {
		err_set(&msg, ERR_TOO_LARGE, "perf map of %lld bytes, at most %u", declared,
			PERFMAP_MAX_BYTES);
		web__resp_text_error(rs, ERR_TOO_LARGE, msg.text);
		return;
	}
	/* Maps count as debug-info bytes of the tenant, charged like uploads. */
	if (web__debuginfo_bytes_admit(rq, rs, declared))
		return;
	buf_init(&text, PERFMAP_MAX_BYTES);
	chunk = malloc(CHUNK);
	if (!chunk)
		rc = err_set(&msg, ERR_NOMEM, "out of memory");
	while (!rc) {
		int n = web__req_read(rq, chunk, CHUNK);

		if (n == 0)
			break;
		if (n < 0)
			rc = err_set(&msg, ERR_INVALID, "perf map: read failed or timed out");
		else if ((rc = buf_append(&text, chunk, (size_t)n)) == ERR_TOO_LARGE)
			err_set(&msg, rc, "perf map longer than %u bytes", PERFMAP_MAX_BYTES);
		else if (rc)
			err_set(&msg, rc, "perf map: %s", err_str(rc));
	}
	free(chunk);
	if (declared < 0)
		web__limits_debuginfo_charge(rq->srv->limits, rq->tenant, text.len);
	if (!rc) {
		rq->body_state = WEB_BODY_CONSUMED;
		rc = debuginfo_perfmap_put(svc, rq->tenant, pid, text.data ? text.data : "",
					   text.len,
					   web__limits_max_perfmaps(rq->srv->limits, rq->tenant),
					   &entries, &msg);
	}
	buf_release(&text);
	if (rc) {
		web__resp_text_error(rs, rc, msg.text);
		return;
	}
	rs->status = 201;
	rs->content_type = "application/json";
	buf_printf(&rs->body, "{\"pid\":%u,\"entries\":%zu}\n", pid, entries);
}
