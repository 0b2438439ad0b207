/*
 * debuginfod.c - the client side of debuginfod: fetches a debuginfo or
 * executable file by build ID from the upstream servers, through
 * libdebuginfod (the only file that includes it).  A debuginfod_client is
 * not thread-safe, so every fetch begins and ends its own.  The progress
 * callback cancels a transfer past the caller's deadline or when the
 * service shuts down.
 *
 * The environment.  libdebuginfod 0.188 takes the upstream URLs, its cache
 * directory and its timeout from DEBUGINFOD_URLS, DEBUGINFOD_CACHE_PATH
 * and DEBUGINFOD_TIMEOUT only: elfutils/debuginfod.h has no setter for
 * them (only user data, a progress callback, a verbose fd and extra HTTP
 * headers), and it getenv()s them during every fetch.  setenv() is not
 * safe while another thread may read the environment: glibc can replace
 * `environ` under a concurrent getenv(), and the threads of RocksDB and
 * civetweb call libc functions that read it.  So the variables are set by
 * debuginfo_setenv(), which the process calls from its main thread before
 * it starts any thread (cli/serve.c, before opening the store), and
 * debuginfo_open() only checks them.  Running debuginfod-find in a child
 * with its own environment would avoid the process-wide setting, at the
 * cost of a process per fetch and of libdebuginfod's in-process cache
 * handling; the environment is what the library was designed around.
 */
#include <assert.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
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

	assert(build_id_hex && path);
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

/* The values libdebuginfod must find for `opt`; ERR_TOO_LARGE. */
static int wanted(const struct debuginfo_options *opt, char cache[DEBUGINFO__PATH_MAX],
		  char timeout[32])
{
	int n;

	if (opt->cache_dir)
		n = snprintf(cache, DEBUGINFO__PATH_MAX, "%s", opt->cache_dir);
	else
		n = snprintf(cache, DEBUGINFO__PATH_MAX, "%s/debuginfod-cache", opt->data_dir);
	snprintf(timeout, 32, "%d", opt->fetch_timeout_s > 0 ? opt->fetch_timeout_s : 30);
	return n < 0 || n >= DEBUGINFO__PATH_MAX ? ERR_TOO_LARGE : 0;
}

static int has_upstream(const struct debuginfo_options *opt)
{
	return opt && opt->debuginfod_urls && opt->debuginfod_urls[0];
}

static int set_one(const char *name, const char *value, struct err_msg *msg)
{
	const char *now = getenv(name);

	/* Equal already (DEBUGINFOD_URLS often comes from the environment):
	 * left alone, so a caller's pointer into it stays valid. */
	if (now && strcmp(now, value) == 0)
		return 0;
	if (setenv(name, value, 1))
		return err_set(msg, ERR_NOMEM, "debuginfo: cannot set %s: %s", name,
			       strerror(errno));
	return 0;
}

int debuginfo_setenv(const struct debuginfo_options *opt, struct err_msg *msg)
{
	char cache[DEBUGINFO__PATH_MAX], timeout[32];
	int rc;

	if (!has_upstream(opt))
		return 0;
	if (!opt->data_dir || !opt->data_dir[0])
		return err_set(msg, ERR_INVALID, "debuginfo: a data directory is required");
	if (wanted(opt, cache, timeout))
		return err_set(msg, ERR_TOO_LARGE, "debuginfo: the cache path is too long");
	if (debuginfo__mkdir_p(cache))
		return err_set(msg, ERR_IO, "debuginfo: cannot create %s: %s", cache,
			       strerror(errno));
	if ((rc = set_one(DEBUGINFOD_URLS_ENV_VAR, opt->debuginfod_urls, msg)) ||
	    (rc = set_one(DEBUGINFOD_CACHE_PATH_ENV_VAR, cache, msg)) ||
	    (rc = set_one(DEBUGINFOD_TIMEOUT_ENV_VAR, timeout, msg)))
		return rc;
	return 0;
}

int debuginfo__debuginfod_env_check(const struct debuginfo_options *opt, struct err_msg *msg)
{
	static const char *const names[3] = {
		DEBUGINFOD_URLS_ENV_VAR, DEBUGINFOD_CACHE_PATH_ENV_VAR, DEBUGINFOD_TIMEOUT_ENV_VAR,
	};
	char cache[DEBUGINFO__PATH_MAX], timeout[32];
	const char *want[3] = { opt->debuginfod_urls, cache, timeout };

	if (wanted(opt, cache, timeout))
		return err_set(msg, ERR_TOO_LARGE, "debuginfo: the cache path is too long");
	for (int i = 0; i < 3; i++) {
		const char *now = getenv(names[i]);

		if (!now || strcmp(now, want[i]) != 0)
			return err_set(msg, ERR_INVALID,
				       "debuginfo: %s is not \"%s\": debuginfo_setenv() must run "
				       "before any thread starts", names[i], want[i]);
	}
	return 0;
}
