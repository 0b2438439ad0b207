/*
 * err.h - the one error vocabulary of unhex.
 *
 * Every fallible function returns an int: 0 on success, one of the negative
 * ERR_* codes below on failure.  A failed call leaves its outputs untouched
 * and its object valid.  Human-readable detail for a request travels in a
 * struct err_msg owned by the caller (like SQLite's zErrMsg), never in hidden
 * global state.
 *
 * Protocols
 *   One table in err.c says, per code, what each protocol we speak calls it:
 *   the HTTP status and its reason phrase, the Connect error code and the
 *   gRPC status code (google.rpc.Code, used by OTLP).  Connect codes are the
 *   snake_case names of the gRPC codes, so the two can never disagree; every
 *   mapping in the tree is a call to the accessors below, never a switch of
 *   its own.  Codes the table does not know map like an internal error.
 */
#ifndef UNHEX_BASE_ERR_H
#define UNHEX_BASE_ERR_H

#include <stdarg.h>
#include <stddef.h>

enum {
	ERR_OK = 0,
	ERR_NOMEM = -1,       /* allocation failed */
	ERR_IO = -2,          /* the OS or the store failed to read or write */
	ERR_CORRUPT = -3,     /* bytes on disk are not what we wrote */
	ERR_INVALID = -4,     /* bytes or parameters from a client are malformed */
	ERR_TOO_LARGE = -5,   /* a configured limit was exceeded */
	ERR_NOT_FOUND = -6,   /* the named thing does not exist */
	ERR_UNAVAILABLE = -7, /* a dependency is down or we are shutting down */
	ERR_TIMEOUT = -8,     /* a deadline passed */
	ERR_CONFLICT = -9,    /* the request contradicts stored state */
	ERR_UNAUTHENTICATED = -10, /* no credentials, or ones the server does not know */
	ERR_PERMISSION = -11, /* known credentials that do not allow this request */
	ERR_RATE_LIMITED = -12, /* a rate or concurrency limit: retry later */
};

/* Returns a static, lower-case name for an error code ("invalid", ...). */
const char *err_str(int code);

/* The HTTP status of a code: 200 for 0, 400 for ERR_INVALID, 500 when unknown. */
int err_http_status(int code);

/* The static Connect error code of a code ("invalid_argument"; "internal" when unknown). */
const char *err_connect_code(int code);

/* The gRPC status code (google.rpc.Code) of a code: 3 for ERR_INVALID, 13 when unknown. */
int err_grpc_code(int code);

/*
 * The static reason phrase (RFC 9110 §15) of an HTTP status that unhex
 * sends, those of the table and the few a route sets itself (201, 405, 415,
 * 422); "" for any other status, which HTTP/1.1 allows.
 */
const char *err_http_reason(int status);

/*
 * A per-request message buffer.  Functions that can explain a failure take a
 * `struct err_msg *` (may be NULL) and fill it on the failing path only.
 */
struct err_msg {
	char text[512];
};

/*
 * Formats a message into `msg` (if not NULL) and returns `code`, so a failing
 * path reads `return err_set(msg, ERR_INVALID, "sample %zu: ...", i);`.
 * The first message set wins: later calls do not overwrite the root cause.
 */
int err_set(struct err_msg *msg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like err_set but always overwrites. */
int err_reset(struct err_msg *msg, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Clears the message so a new failure can be recorded. */
static inline void err_clear(struct err_msg *msg)
{
	if (msg)
		msg->text[0] = '\0';
}

#endif
