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

static const struct {
	int code;
	const char *name;
	int http;
	const char *reason;
	const char *connect;
	int grpc;
} want[] = {
	{ ERR_OK, "ok", 200, "OK", "ok", 0 },
	{ ERR_NOMEM, "out of memory", 500, "Internal Server Error", "internal", 13 },
	{ ERR_IO, "i/o error", 500, "Internal Server Error", "internal", 13 },
	{ ERR_CORRUPT, "corrupt data", 500, "Internal Server Error", "internal", 13 },
	{ ERR_INVALID, "invalid input", 400, "Bad Request", "invalid_argument", 3 },
	{ ERR_TOO_LARGE, "too large", 413, "Content Too Large", "resource_exhausted", 8 },
	{ ERR_NOT_FOUND, "not found", 404, "Not Found", "not_found", 5 },
	{ ERR_UNAVAILABLE, "unavailable", 503, "Service Unavailable", "unavailable", 14 },
	{ ERR_TIMEOUT, "timed out", 504, "Gateway Timeout", "deadline_exceeded", 4 },
	{ ERR_CONFLICT, "conflict", 409, "Conflict", "aborted", 10 },
	{ ERR_UNAUTHENTICATED, "unauthenticated", 401, "Unauthorized", "unauthenticated", 16 },
	{ ERR_PERMISSION, "permission denied", 403, "Forbidden", "permission_denied", 7 },
	{ ERR_RATE_LIMITED, "rate limited", 429, "Too Many Requests", "resource_exhausted", 8 },
};

/* google.rpc.Code names, by number: Connect's codes are these in snake case. */
static const char *const grpc_names[] = {
	"ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found",
	"already_exists", "permission_denied", "resource_exhausted", "failed_precondition",
	"aborted", "out_of_range", "unimplemented", "internal", "unavailable", "data_loss",
	"unauthenticated",
};

static void test_every_row(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_string_equal(err_str(want[i].code), want[i].name);
		assert_int_equal(err_http_status(want[i].code), want[i].http);
		assert_string_equal(err_http_reason(want[i].http), want[i].reason);
		assert_string_equal(err_connect_code(want[i].code), want[i].connect);
		assert_int_equal(err_grpc_code(want[i].code), want[i].grpc);
		assert_string_equal(grpc_names[err_grpc_code(want[i].code)],
				    err_connect_code(want[i].code));
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

static void test_other_reasons(void **state)
{
	(void)state;
	assert_string_equal(err_http_reason(201), "Created");
	assert_string_equal(err_http_reason(401), "Unauthorized");
	assert_string_equal(err_http_reason(405), "Method Not Allowed");
	assert_string_equal(err_http_reason(415), "Unsupported Media Type");
	assert_string_equal(err_http_reason(422), "Unprocessable Content");
	assert_string_equal(err_http_reason(418), "");
	assert_string_equal(err_http_reason(0), "");
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
		cmocka_unit_test(test_other_reasons),
		cmocka_unit_test(test_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
