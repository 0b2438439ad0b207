/* limits.c - the default limits of struct ingest_limits (docs/ingest.md). */
#include "ingest/ingest.h"

void ingest_limits_default(struct ingest_limits *lim)
{
	lim->max_request_bytes = (size_t)32 << 20;
	lim->max_decompressed_bytes = (size_t)64 << 20;
	/* 16 times the largest request: what web allows a push body (web_int.h,
	 * WEB_CONTAINER_INFLATE). */
	lim->max_request_decoded_bytes = (size_t)512 << 20;
	lim->max_profiles = 1024;
	lim->max_samples = 500000;
	lim->max_stack_depth = 1024;
	lim->max_labels = 32;
	lim->max_label_bytes = 1024;
	lim->max_series = 100000;
	lim->max_label_names = 1000;
	lim->max_label_values = 50000;
	lim->hooks = NULL;
	lim->pool = NULL;
}
