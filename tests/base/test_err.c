/*
 * test_err.c - the error table: every code's name, HTTP status, reason
 * phrase, Connect code and gRPC code pinned row by row, unknown codes, and
 * the messages' first-wins rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/err.h"

/* Each code's name, HTTP status and gRPC code; its Connect code is the
 * gRPC code's name (grpc_names), its reason phrase the status's (reasons). */
static const struct {
	int code;
	const char *name;
	int http;
	int grpc;
} want[] = {
	{ ERR_OK, "ok", 200, 0 }, { ERR_NOMEM, "out of memory", 500, 13 },
	{ ERR_IO, "i/o error", 500, 13 }, { ERR_CORRUPT, "corrupt data", 500, 13 },
	{ ERR_INVALID, "invalid input", 400, 3 }, { ERR_TOO_LARGE, "too large", 413, 8 },
	{ ERR_NOT_FOUND, "not found", 404, 5 }, { ERR_UNAVAILABLE, "unavailable", 503, 14 },
	{ ERR_TIMEOUT, "timed out", 504, 4 }, { ERR_CONFLICT, "conflict", 409, 10 },
	{ ERR_UNAUTHENTICATED, "unauthenticated", 401, 16 },
	{ ERR_PERMISSION, "permission denied", 403, 7 }, { ERR_RATE_LIMITED, "rate limited", 429, 8 },
};

/* google.rpc.Code names, by number: Connect's codes are these in snake case. */
static const char *const grpc_names[] = {
	"ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found",
	"already_exists", "permission_denied", "resource_exhausted", "failed_precondition",
	"aborted", "out_of_range", "unimplemented", "internal", "unavailable", "data_loss",
	"unauthenticated",
};

/* RFC 9110 reason phrases: the statuses of the table, those routes set
 * themselves, and "" for one unhex never sends. */
static const struct {
	int status;
	const char *reason;
} reasons[] = {
	{ 200, "OK" }, { 201, "Created" }, { 400, "Bad Request" }, { 401, "Unauthorized" },
	{ 403, "Forbidden" }, { 404, "Not Found" }, { 405, "Method Not Allowed" },
	{ 409, "Conflict" }, { 413, "Content Too Large" }, { 415, "Unsupported Media Type" },
	{ 422, "Unprocessable Content" }, { 429, "Too Many Requests" },
	{ 500, "Internal Server Error" }, { 503, "Service Unavailable" },
	{ 504, "Gateway Timeout" }, { 418, "" }, { 0, "" },
};

static void test_every_row(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		print_message("%s\n", want[i].name);
		assert_string_equal(err_str(want[i].code), want[i].name);
		assert_int_equal(err_http_status(want[i].code), want[i].http);
		assert_int_equal(err_grpc_code(want[i].code), want[i].grpc);
		assert_string_equal(err_connect_code(want[i].code), grpc_names[want[i].grpc]);
	}
}

static void test_reasons(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		print_message("%d\n", reasons[i].status);
		assert_string_equal(err_http_reason(reasons[i].status), reasons[i].reason);
	}
}

static void test_unknown_codes(void **state)
{
	static const int unknown[] = { -13, -1000, 1, 42 };
	(void)state;

	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		assert_string_equal(err_str(unknown[i]), "unknown error");
		assert_int_equal(err_http_status(unknown[i]), 500);
		assert_string_equal(err_connect_code(unknown[i]), "internal");
		assert_int_equal(err_grpc_code(unknown[i]), 13);
	}
}

static void test_messages(void **state)
{
	struct err_msg msg;
	(void)state;

	err_clear(&msg);
	assert_int_equal(err_set(&msg, ERR_INVALID, "first %d", 1), ERR_INVALID);
	assert_int_equal(err_set(&msg, ERR_IO, "second"), ERR_IO);
	assert_string_equal(msg.text, "first 1");
	assert_int_equal(err_reset(&msg, ERR_IO, "third"), ERR_IO);
	assert_string_equal(msg.text, "third");
	assert_int_equal(err_set(NULL, ERR_NOMEM, "ignored"), ERR_NOMEM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_row),
		cmocka_unit_test(test_unknown_codes),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
