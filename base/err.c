/*
 * err.c - error names, the one table from error codes to protocol codes
 * (HTTP, Connect, gRPC), and per-request messages.
 */
#include "base/err.h"

#include <stdio.h>

/*
 * Every code and what each protocol calls it.  Connect's code names are the
 * gRPC codes' (google.rpc.Code) in snake case, and the HTTP statuses follow
 * the HTTP mapping documented with google.rpc.Code except one: a limit is
 * 413 (google.rpc.Code says 429, a rate limit), because unhex's limits are
 * on the size of a request or an answer, and Pyroscope clients expect 413;
 * a rate or concurrency limit of a tenant (ERR_RATE_LIMITED) is that 429.
 * Failures of our own (memory, disk, corrupt bytes) are all "internal": the
 * client can do nothing different about them.
 */
static const struct err_row {
	int code;
	const char *name;    /* err_str */
	int http;
	const char *reason;  /* RFC 9110 reason phrase of `http` */
	const char *connect;
	int grpc;            /* google.rpc.Code */
} err_rows[] = {
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

/* What a code outside the table maps to. */
static const struct err_row unknown_row = {
	0, "unknown error", 500, "Internal Server Error", "internal", 13,
};

/* Statuses that routes set without an error code (uploads, methods). */
static const struct {
	int http;
	const char *reason;
} other_statuses[] = {
	{ 201, "Created" },
	{ 405, "Method Not Allowed" },
	{ 415, "Unsupported Media Type" },
	{ 422, "Unprocessable Content" },
};

static const struct err_row *row_of(int code)
{
	for (size_t i = 0; i < sizeof(err_rows) / sizeof(err_rows[0]); i++)
		if (err_rows[i].code == code)
			return &err_rows[i];
	return &unknown_row;
}

const char *err_str(int code)
{
	return row_of(code)->name;
}

int err_http_status(int code)
{
	return row_of(code)->http;
}

const char *err_connect_code(int code)
{
	return row_of(code)->connect;
}

int err_grpc_code(int code)
{
	return row_of(code)->grpc;
}

const char *err_http_reason(int status)
{
	for (size_t i = 0; i < sizeof(err_rows) / sizeof(err_rows[0]); i++)
		if (err_rows[i].http == status)
			return err_rows[i].reason;
	for (size_t i = 0; i < sizeof(other_statuses) / sizeof(other_statuses[0]); i++)
		if (other_statuses[i].http == status)
			return other_statuses[i].reason;
	return "";
}

static int vset(struct err_msg *msg, int code, const char *fmt, va_list ap)
{
	if (msg)
		vsnprintf(msg->text, sizeof(msg->text), fmt, ap);
	return code;
}

int err_set(struct err_msg *msg, int code, const char *fmt, ...)
{
	va_list ap;

	if (msg && msg->text[0])
		return code;
	va_start(ap, fmt);
	vset(msg, code, fmt, ap);
	va_end(ap);
	return code;
}

int err_reset(struct err_msg *msg, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(msg, code, fmt, ap);
	va_end(ap);
	return code;
}
