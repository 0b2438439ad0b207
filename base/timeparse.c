/* timeparse.c - "now", "now-<N><unit>" and Unix times of any unit (timeparse.h). */
#include "base/timeparse.h"

#include "base/err.h"

#include <string.h>

#define NS_PER_S 1000000000LL

enum { NOT_DIGITS = -1, TOO_BIG = -2 };

/* Reads the n > 0 decimal digits at s: 0, NOT_DIGITS, or TOO_BIG past INT64_MAX. */
static int digits(const char *s, size_t n, int64_t *out)
{
	int64_t v = 0;

	if (!n)
		return NOT_DIGITS;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return NOT_DIGITS;
	for (size_t i = 0; i < n; i++) {
		if (v > (INT64_MAX - (s[i] - '0')) / 10)
			return TOO_BIG;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static int64_t unit_ns(char c)
{
	switch (c) {
	case 's': return NS_PER_S;
	case 'm': return 60 * NS_PER_S;
	case 'h': return 3600 * NS_PER_S;
	case 'd': return 86400 * NS_PER_S;
	case 'w': return 7 * 86400 * NS_PER_S;
	default: return 0;
	}
}

static int relative(const char *s, size_t n, int64_t now_ns, int64_t *out_ns,
		    struct err_msg *msg)
{
	int64_t v, unit, delta;

	/* s is "now-" + digits + one unit letter. */
	if (n < 6 || s[3] != '-')
		return err_set(msg, ERR_INVALID, "time: \"%s\": want now-<N><s|m|h|d|w>", s);
	unit = unit_ns(s[n - 1]);
	if (!unit)
		return err_set(msg, ERR_INVALID, "time: \"%s\": unit must be s, m, h, d or w", s);
	if (digits(s + 4, n - 5, &v) || __builtin_mul_overflow(v, unit, &delta) ||
	    delta > now_ns)
		return err_set(msg, ERR_INVALID, "time: \"%s\": bad or too large offset", s);
	*out_ns = now_ns - delta;
	return 0;
}

int time_parse(const char *s, int64_t now_ns, int64_t *out_ns, struct err_msg *msg)
{
	size_t n = s ? strnlen(s, TIME_MAX_LEN + 1) : 0;
	int64_t v, scale, ns;

	if (!n || n > TIME_MAX_LEN)
		return err_set(msg, ERR_INVALID, "time: \"%.32s\" is empty or too long",
			       s ? s : "");
	if (!strncmp(s, "now", 3)) {
		if (n == 3) {
			*out_ns = now_ns;
			return 0;
		}
		return relative(s, n, now_ns, out_ns, msg);
	}
	switch (digits(s, n, &v)) {
	case 0:
		break;
	case TOO_BIG:
		return err_set(msg, ERR_INVALID, "time: \"%s\" is out of range", s);
	default:
		return err_set(msg, ERR_INVALID,
			       "time: \"%s\" is not now, now-<N><unit> or a Unix time", s);
	}
	if (v < 10000000000LL)
		scale = NS_PER_S;
	else if (v < 10000000000000LL)
		scale = 1000000;
	else if (v < 10000000000000000LL)
		scale = 1000;
	else
		scale = 1;
	if (__builtin_mul_overflow(v, scale, &ns))
		return err_set(msg, ERR_INVALID, "time: \"%s\" is out of range", s);
	*out_ns = ns;
	return 0;
}
