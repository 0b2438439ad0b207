/*
 * debuginfod.c - the client side of debuginfod: fetches a debuginfo or
 * executable file by build ID from the upstream servers, through
 * libdebuginfod.  A debuginfod_client is not thread-safe, so every fetch
 * begins and ends its own; the URLs, cache path and timeout come from the
 * environment, set once by debuginfo_open() before any thread starts.
 * The progress callback cancels a transfer past the caller's deadline or
 * when the service shuts down.
 */
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"

struct fetch_ctx {
	int64_t deadline_ns;
	const atomic_int *cancel;
	int timed_out;
};

static int progress(debuginfod_client *c, long done, long total)
{
	struct fetch_ctx *f = debuginfod_get_user_data(c);

	(void)done;
	(void)total;
	/* The flag is set by debuginfo_close on another thread; it orders
	 * nothing else, so a relaxed load is enough. */
	if ((f->cancel && atomic_load_explicit(f->cancel, memory_order_relaxed)) ||
	    clock_mono_ns() > f->deadline_ns) {
		f->timed_out = 1;
		return 1; /* non-zero aborts the transfer */
	}
	return 0;
}

int debuginfo__debuginfod_fetch(const char *build_id_hex, int executable, int64_t deadline_ns,
				const atomic_int *cancel, char **path, struct err_msg *msg)
{
	struct fetch_ctx f = { deadline_ns, cancel, 0 };
	debuginfod_client *c;
	char *found = NULL;
	int fd;

	c = debuginfod_begin();
	if (!c)
		return err_set(msg, ERR_UNAVAILABLE, "debuginfod: cannot start a client");
	debuginfod_set_user_data(c, &f);
	debuginfod_set_progressfn(c, progress);
	/* A hex string is accepted with length 0 (libdebuginfod's convention). */
	if (executable)
		fd = debuginfod_find_executable(c, (const unsigned char *)build_id_hex, 0, &found);
	else
		fd = debuginfod_find_debuginfo(c, (const unsigned char *)build_id_hex, 0, &found);
	debuginfod_end(c);
	if (fd >= 0) {
		close(fd);
		if (!found)
			return err_set(msg, ERR_UNAVAILABLE, "debuginfod: no path for a fetched file");
		*path = found;
		return 0;
	}
	free(found);
	if (f.timed_out || fd == -ETIME || fd == -ETIMEDOUT)
		return err_set(msg, ERR_TIMEOUT, "debuginfod: fetch of %s timed out",
			       build_id_hex);
	if (fd == -ENOENT)
		return err_set(msg, ERR_NOT_FOUND, "debuginfod: no upstream server has %s %s",
			       executable ? "an executable for" : "debug info for", build_id_hex);
	return err_set(msg, ERR_UNAVAILABLE, "debuginfod: fetch of %s failed: %s", build_id_hex,
		       strerror(-fd));
}
