/* err.c - error names and per-request messages. */
#include "base/err.h"

#include <stdio.h>

const char *err_str(int code)
{
	switch (code) {
	case ERR_OK: return "ok";
	case ERR_NOMEM: return "out of memory";
	case ERR_IO: return "i/o error";
	case ERR_CORRUPT: return "corrupt data";
	case ERR_INVALID: return "invalid input";
	case ERR_TOO_LARGE: return "too large";
	case ERR_NOT_FOUND: return "not found";
	case ERR_UNAVAILABLE: return "unavailable";
	case ERR_TIMEOUT: return "timed out";
	case ERR_CONFLICT: return "conflict";
	}
	return "unknown error";
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
