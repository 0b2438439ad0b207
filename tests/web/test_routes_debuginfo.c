/*
 * test_routes_debuginfo.c - what the debug-info routes write from the
 * service's typed data (routes_debuginfo.c): the JSON object of a build
 * ID (with whether it is shared and its SHA-256) and the Prometheus text
 * (with the outbound counters), byte for byte, escapes and all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "debuginfo/debuginfo.h"
#include "web/web_int.h"

static void check_json(const struct debuginfo_record *r, const char *want)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	assert_int_equal(web__debuginfo_record_json(&b, r), 0);
	assert_string_equal(b.data, want);
	buf_release(&b);
}

/* The record JSON of test_record_json's uploaded file, up to its "shared". */
#define UPLOADED_HEAD                                                                              \
	"{\"buildId\":\"00112233\",\"source\":\"upload\",\"size\":12345,"                          \
	"\"uploaded\":1700000000123,\"lastUsed\":1700000001999,\"status\":\"ok\","                 \
	"\"reason\":\"\",\"debuginfo\":true,\"executable\":true,\"kallsyms\":false,\"retryAt\":0,"

static void test_record_json(void **state)
{
	struct debuginfo_record r;

	(void)state;
	memset(&r, 0, sizeof(r));
	strcpy(r.build_id, "00112233");
	r.source = DEBUGINFO_SOURCE_UPLOAD;
	r.status = DEBUGINFO_STATUS_OK;
	r.kinds = 3;
	r.size = 12345;
	r.uploaded_ns = 1700000000123456789LL;
	r.last_used_ns = 1700000001999999999LL;
	r.last_profile_ns = 1700000002500000000LL;
	check_json(&r, UPLOADED_HEAD "\"shared\":false,\"lastProfile\":1700000002500}");
	r.shared = 1;
	r.has_sha256 = 1;
	for (int i = 0; i < 32; i++)
		r.sha256[i] = (uint8_t)(i * 8);
	check_json(&r, UPLOADED_HEAD "\"shared\":true,\"lastProfile\":1700000002500,"
		       "\"sha256\":\"00081018202830384048505860687078"
		       "80889098a0a8b0b8c0c8d0d8e0e8f0f8\"}");

	memset(&r, 0, sizeof(r));
	strcpy(r.build_id, "aabb");
	r.source = DEBUGINFO_SOURCE_DEBUGINFOD;
	r.status = DEBUGINFO_STATUS_UPSTREAM_ERROR;
	strcpy(r.reason, "debuginfod: \"quoted\"\ttab\\ and unicode \xc3\xa9 \x01");
	r.retry_at_ns = 1700000600000000000LL;
	check_json(&r, "{\"buildId\":\"aabb\",\"source\":\"debuginfod\",\"size\":0,\"uploaded\":0,"
		       "\"lastUsed\":0,\"status\":\"upstream_error\",\"reason\":\"debuginfod: "
		       "\\\"quoted\\\"\\ttab\\\\ and unicode \xc3\xa9 \\u0001\",\"debuginfo\":false,"
		       "\"executable\":false,\"kallsyms\":false,\"retryAt\":1700000600000,\"shared\":false,\"lastProfile\":0}");

	memset(&r, 0, sizeof(r));
	strcpy(r.build_id, "ccdd");
	r.source = DEBUGINFO_SOURCE_NONE;
	r.status = DEBUGINFO_STATUS_NOT_FOUND;
	r.kinds = 1;
	r.retry_at_ns = 1700000600000000000LL;
	check_json(&r, "{\"buildId\":\"ccdd\",\"source\":\"none\",\"size\":0,\"uploaded\":0,"
		       "\"lastUsed\":0,\"status\":\"not_found\",\"reason\":\"\",\"debuginfo\":true,"
		       "\"executable\":false,\"kallsyms\":false,\"retryAt\":1700000600000,\"shared\":false,\"lastProfile\":0}");
}

static const char want_metrics[] =
	"# HELP unhex_debuginfo_build_ids Build IDs the server knows, by status.\n"
	"# TYPE unhex_debuginfo_build_ids gauge\n"
	"unhex_debuginfo_build_ids{status=\"ok\"} 1\n"
	"unhex_debuginfo_build_ids{status=\"no_build_id\"} 0\n"
	"unhex_debuginfo_build_ids{status=\"not_found\"} 1\n"
	"unhex_debuginfo_build_ids{status=\"mismatch\"} 0\n"
	"unhex_debuginfo_build_ids{status=\"invalid_elf\"} 0\n"
	"unhex_debuginfo_build_ids{status=\"no_symbols\"} 0\n"
	"unhex_debuginfo_build_ids{status=\"upstream_error\"} 1\n"
	"# HELP unhex_symbolize_unresolved_locations_total Distinct locations that queries left "
	"without names, by why.\n"
	"# TYPE unhex_symbolize_unresolved_locations_total counter\n"
	"unhex_symbolize_unresolved_locations_total{status=\"ok\"} 0\n"
	"unhex_symbolize_unresolved_locations_total{status=\"no_build_id\"} 3\n"
	"unhex_symbolize_unresolved_locations_total{status=\"not_found\"} 6\n"
	"unhex_symbolize_unresolved_locations_total{status=\"mismatch\"} 9\n"
	"unhex_symbolize_unresolved_locations_total{status=\"invalid_elf\"} 12\n"
	"unhex_symbolize_unresolved_locations_total{status=\"no_symbols\"} 15\n"
	"unhex_symbolize_unresolved_locations_total{status=\"upstream_error\"} 18\n"
	"unhex_symbolize_unresolved_locations_total{status=\"pending\"} 21\n"
	"# TYPE unhex_debuginfo_uploads_total counter\n"
	"unhex_debuginfo_uploads_total{result=\"ok\"} 5\n"
	"unhex_debuginfo_uploads_total{result=\"refused\"} 6\n"
	"# TYPE unhex_debuginfod_fetches_total counter\n"
	"unhex_debuginfod_fetches_total{result=\"ok\"} 7\n"
	"unhex_debuginfod_fetches_total{result=\"not_found\"} 8\n"
	"unhex_debuginfod_fetches_total{result=\"error\"} 9\n"
	"unhex_debuginfod_fetches_total{result=\"rate_limited\"} 15\n"
	"unhex_debuginfod_fetches_total{result=\"deferred\"} 19\n"
	"# TYPE unhex_debuginfod_redirects_refused_total counter\n"
	"unhex_debuginfod_redirects_refused_total 16\n"
	"# TYPE unhex_debuginfo_failure_records_dropped_total counter\n"
	"unhex_debuginfo_failure_records_dropped_total 17\n"
	"# TYPE unhex_symbolize_index_builds_total counter\n"
	"unhex_symbolize_index_builds_total 10\n"
	"# TYPE unhex_symbolize_index_opens_total counter\n"
	"unhex_symbolize_index_opens_total 11\n"
	"# TYPE unhex_symbolize_cache_lookups_total counter\n"
	"unhex_symbolize_cache_lookups_total{result=\"hit\"} 12\n"
	"unhex_symbolize_cache_lookups_total{result=\"miss\"} 13\n"
	"# TYPE unhex_symbolize_open_indexes gauge\n"
	"unhex_symbolize_open_indexes 14\n";

static void test_metrics_text(void **state)
{
	struct debuginfo_stats st = {
		.index_builds = 10, .index_opens = 11, .cache_hits = 12, .cache_misses = 13,
		.fetches_ok = 7, .fetches_not_found = 8, .fetches_error = 9, .uploads_ok = 5,
		.uploads_refused = 6, .fetches_limited = 15, .fetches_deferred = 19,
		.redirects_refused = 16, .failures_dropped = 17, .open_indexes = 14,
	};
	uint64_t by[DEBUGINFO_STATUS_COUNT] = { 0 };
	struct buf b;

	(void)state;
	for (int i = 0; i < DEBUGINFO_STATUS_COUNT; i++)
		st.unresolved[i] = (uint64_t)i * 3;
	by[DEBUGINFO_STATUS_OK] = 1;
	by[DEBUGINFO_STATUS_NOT_FOUND] = 1;
	by[DEBUGINFO_STATUS_UPSTREAM_ERROR] = 1;
	by[DEBUGINFO_STATUS_PENDING] = 99; /* never a stored status: not shown */
	buf_init(&b, 1 << 20);
	assert_int_equal(web__debuginfo_metrics_text(&b, &st, by), 0);
	assert_string_equal(b.data, want_metrics);
	buf_release(&b);
	/* A response at its cap fails instead of growing. */
	buf_init(&b, 100);
	assert_int_equal(web__debuginfo_metrics_text(&b, &st, by), ERR_TOO_LARGE);
	buf_release(&b);
}

/* With a bucket, its counters come in their own families, each once. */
static void test_metrics_bucket(void **state)
{
	struct debuginfo_stats st = {
		.bucket = 1, .bucket_puts = 21, .bucket_index_puts = 22, .bucket_puts_found = 23,
		.bucket_put_conflicts = 24, .bucket_put_failures = 25, .bucket_pending = 26,
		.bucket_hits = 27, .bucket_misses = 28, .bucket_lookup_failures = 29,
		.bucket_downloads = 30, .bucket_index_downloads = 31, .bucket_index_invalid = 32,
		.bucket_download_failures = 33, .bucket_bytes_in = 34, .bucket_bytes_out = 35,
		.bucket_deleted = 36, .bucket_deleted_objects = 37, .bucket_delete_failures = 38,
		.bucket_delete_waiting = 39, .bucket_use_marks = 40,
	};
	static const char *const want[] = {
		"unhex_debuginfo_bucket_puts_total{object=\"file\",result=\"stored\"} 21\n",
		"unhex_debuginfo_bucket_puts_total{object=\"index\",result=\"stored\"} 22\n",
		"unhex_debuginfo_bucket_puts_total{object=\"any\",result=\"found\"} 23\n",
		"unhex_debuginfo_bucket_puts_total{object=\"file\",result=\"conflict\"} 24\n",
		"unhex_debuginfo_bucket_puts_total{object=\"any\",result=\"error\"} 25\n",
		"unhex_debuginfo_bucket_pending_build_ids 26\n",
		"unhex_debuginfo_bucket_lookups_total{result=\"hit\"} 27\n",
		"unhex_debuginfo_bucket_lookups_total{result=\"miss\"} 28\n",
		"unhex_debuginfo_bucket_lookups_total{result=\"error\"} 29\n",
		"unhex_debuginfo_bucket_downloads_total{object=\"file\",result=\"stored\"} 30\n",
		"unhex_debuginfo_bucket_downloads_total{object=\"index\",result=\"stored\"} 31\n",
		"unhex_debuginfo_bucket_downloads_total{object=\"index\",result=\"invalid\"} 32\n",
		"unhex_debuginfo_bucket_downloads_total{object=\"any\",result=\"error\"} 33\n",
		"unhex_debuginfo_bucket_bytes_total{direction=\"in\"} 34\n",
		"unhex_debuginfo_bucket_bytes_total{direction=\"out\"} 35\n",
		"unhex_debuginfo_bucket_deleted_total{object=\"build_id\"} 36\n",
		"unhex_debuginfo_bucket_deleted_total{object=\"object\"} 37\n",
		"unhex_debuginfo_bucket_delete_failures_total 38\n",
		"unhex_debuginfo_bucket_delete_waiting_build_ids 39\n",
		"unhex_debuginfo_bucket_use_marks_total 40\n",
	};
	uint64_t by[DEBUGINFO_STATUS_COUNT] = { 0 };
	struct buf b;

	(void)state;
	buf_init(&b, 1 << 20);
	assert_int_equal(web__debuginfo_metrics_text(&b, &st, by), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_non_null(strstr(b.data, want[i]));
	assert_non_null(strstr(b.data, "# TYPE unhex_debuginfo_bucket_puts_total counter\n"));
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_json),
		cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_metrics_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
