/*
 * otlp.c - ingest_otlp(): an OTLP/HTTP ExportProfilesServiceRequest
 * (binary protobuf, or JSON decoded by otlp_json.c), converted whole by
 * otlp_convert.c, then written in one store transaction by
 * ingest__write().
 */
#include "ingest/ingest.h"

#include "base/arena.h"
#include "base/err.h"
#include "ingest_int.h"

int ingest_otlp(struct store *st, const struct ingest_limits *lim, const char *tenant,
		const void *body, size_t len, int json, int64_t now_ns, struct ingest_stats *out,
		struct err_msg *msg)
{
	struct ingest_otlp_req req;
	struct ingest_stats stats;
	struct arena a;
	int rc;

	if (len > lim->max_decompressed_bytes)
		return err_set(msg, ERR_TOO_LARGE, "request of %zu bytes exceeds the limit of %zu",
			       len, lim->max_decompressed_bytes);
	ingest__arena_init(&a, ingest__otlp_arena_cap(len), lim);
	rc = ingest__otlp_convert(&a, lim, body, len, json, now_ns, &req, msg);
	if (!rc)
		rc = ingest__write(st, lim, tenant, req.profiles, req.n, &stats, msg);
	if (!rc && out) {
		stats.pprof_samples = req.otlp_samples;
		*out = stats;
	}
	arena_release(&a);
	return rc;
}
