/*
 * otlp_test.h - what the OTLP ingest tests share: their clock and profile
 * type, and the folded stacks a selector reads back through query/.
 */
#ifndef UNHEX_TESTS_INGEST_OTLP_TEST_H
#define UNHEX_TESTS_INGEST_OTLP_TEST_H

#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "query/query.h"

#include "fixture.h"

#define T0 1700000000000000000LL
#define SEC 1000000000LL
#define CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

/* Folded stacks of `q` in `tenant` over [T0 - 1h, T0 + 1h). */
static inline void otlp_folded(struct fx *f, const char *tenant, const char *q, struct buf *out)
{
	struct query_params p;
	struct err_msg msg = { { 0 } };

	memset(&p, 0, sizeof(p));
	p.query = q;
	p.from_ns = T0 - 3600 * SEC;
	p.until_ns = T0 + 3600 * SEC;
	buf_reset(out);
	if (query_folded(f->st, tenant, &p, out, &msg))
		fail_msg("query_folded(%s, %s): %s", tenant, q, msg.text);
}

#endif
