/* log.c - leveled logging to stderr with timestamps. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static enum log_level max_level = LOG_INFO;

void log_set_level(enum log_level level)
{
	max_level = level;
}

int log_enabled(enum log_level level)
{
	return level <= max_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	char line[2048];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n, m;

	if (level > max_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
