/*
 * fetch.c - fetching the debug info of a build ID nobody uploaded from the
 * debuginfod upstreams (debuginfod.c) into the store, checked like an
 * upload, with the outcome recorded in its metadata (a not-found or an
 * upstream error is retried after retry_ns), under the outbound budget.
 *
 * The budget.  Each build ID has at most one fetch at a time (jobs.c) and
 * a failure is not retried before its retry time, so a lookup is never
 * repeated; but a profile can name many build IDs nobody has.  So at most
 * fetch_per_minute fetches start per minute, in bursts of up to that many
 * (a generic cell rate: one timestamp, moved by compare-and-swap).  A
 * fetch past the budget is not sent; its build ID is recorded as an
 * upstream error to be retried once the budget allows, so the queries
 * that need it do not queue it again meanwhile.  Before that, resolve.c
 * lets one query queue at most DEBUGINFO_QUERY_FETCHES new lookups and one
 * tenant's queries fetch_per_tenant_minute a minute (the same cell rate
 * per hashed tenant), so one tenant's profiles full of unknown build IDs
 * cannot spend the whole budget.
 *
 * A fetched file is installed under upload_mu, and only if no upload
 * stored a file meanwhile: the first file of a build ID wins, whoever
 * brought it.  Fetched files are every tenant's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/sha256.h"
#include "debuginfo_int.h"

/*
 * One cell of a rate of 60 s / interval a minute, in bursts of up to that
 * many: 0, or ERR_UNAVAILABLE with *wait_ns until the next cell.
 */
static int gcra_take(atomic_int_fast64_t *tat_p, int64_t interval, int64_t *wait_ns)
{
	int64_t now = clock_mono_ns(), burst = 60000000000LL - interval;
	int64_t tat = atomic_load(tat_p);

	for (;;) {
		int64_t start = tat > now ? tat : now;

		if (start - now > burst) {
			*wait_ns = start - now - burst;
			return ERR_UNAVAILABLE;
		}
		if (atomic_compare_exchange_weak(tat_p, &tat, start + interval))
			return 0;
	}
}

int debuginfo__fetch_admit(struct debuginfo *s, int64_t *retry_ns)
{
	int64_t wait = 0;

	if (gcra_take(&s->fetch_tat, s->fetch_interval_ns, &wait)) {
		*retry_ns = clock_wall_ns() + wait;
		return ERR_UNAVAILABLE;
	}
	return 0;
}

int debuginfo__tenant_admit(struct debuginfo *s, const char *tenant)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	int64_t wait = 0;

	for (const unsigned char *p = (const unsigned char *)tenant; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return gcra_take(&s->tenant_tat[h % DEBUGINFO__TENANT_SLOTS], s->tenant_interval_ns, &wait);
}

/*
 * Whether the file at `path` is a Go executable without DWARF: its
 * .gopclntab names its frames when no debug info can be had.
 */
static int go_without_dwarf(const char *path)
{
	struct sym_elf_info info;

	return !sym_elf_inspect_file(path, &info, NULL) && (info.flags & SYM_HAS_GOPCLNTAB) &&
	       !(info.flags & SYM_HAS_DEBUG_INFO);
}

/*
 * Checks the fetched file at `got` (a debug file, or with `exe` an
 * executable); 0, or the failure recorded.
 */
static int check_fetched(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen,
			 const char *got, int exe, int64_t now)
{
	struct sym_elf_info info;
	enum sym_reason reason;
	struct err_msg msg;
	char text[600];
	int rc;

	err_clear(&msg);
	/* Some servers hand out a stripped binary as "debuginfo": insist on
	 * DWARF.  An executable is only worth keeping for its .gopclntab. */
	rc = sym_elf_inspect_file(got, &info, &msg);
	if (rc)
		reason = SYM_REASON_INVALID_ELF;
	else
		rc = sym_elf_check(&info, bid, blen, !exe, &reason, &msg);
	if (!rc && exe && (!(info.flags & SYM_HAS_TEXT) || (info.flags & SYM_SEGMENTS_FROM_DEBUG) ||
			   !info.n_segments)) {
		reason = SYM_REASON_INVALID_ELF;
		rc = err_set(&msg, ERR_INVALID, "invalid_elf: not an executable (no code or no PT_LOAD)");
	}
	if (!rc)
		return 0;
	snprintf(text, sizeof(text), "debuginfod served an unusable file: %s", msg.text);
	debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_DEBUGINFOD, debuginfo__status_of_reason(reason),
			     now + s->retry_ns, text);
	return ERR_INVALID;
}

/* Moves the checked file to the store unless a file arrived meanwhile.  upload_mu held. */
static int install_fetched(struct debuginfo *s, const char *id, const char *got, int exe,
			   int64_t now)
{
	char dst[DEBUGINFO__PATH_MAX], exe_path[DEBUGINFO__PATH_MAX], dir[DEBUGINFO__PATH_MAX];
	struct debuginfo__meta m;
	uint8_t d[SHA256_LEN];
	uint64_t size = 0;
	int rc;

	if (debuginfo__path(s, id, "debuginfo", dst, sizeof(dst)) ||
	    debuginfo__path(s, id, "executable", exe_path, sizeof(exe_path)) ||
	    debuginfo__path(s, id, NULL, dir, sizeof(dir)))
		return ERR_TOO_LARGE;
	if (debuginfo__file_exists(dst) || debuginfo__file_exists(exe_path))
		return 0;
	rc = sha256_file(got, d, &size);
	if (!rc)
		rc = debuginfo__mkdir_p(dir);
	if (!rc && rename(got, exe ? exe_path : dst)) {
		log_error("debuginfo: cannot rename %s to %s: %s", got, exe ? exe_path : dst,
			  strerror(errno));
		rc = ERR_IO;
	}
	if (rc)
		return rc;
	debuginfo__fsync_dir(exe ? exe_path : dst);
	memset(&m, 0, sizeof(m));
	m.source = DEBUGINFO_SOURCE_DEBUGINFOD;
	m.status = DEBUGINFO_STATUS_OK;
	m.kinds = 1u << (exe ? DEBUGINFO_FILE_EXECUTABLE : DEBUGINFO_FILE_DEBUGINFO);
	m.size = size;
	for (int i = 0; i < 8; i++)
		m.hash = m.hash << 8 | d[i];
	memcpy(m.sha256, d, SHA256_LEN);
	m.has_sha256 = 1;
	snprintf(m.owners, sizeof(m.owners), "*");
	m.uploaded = now;
	m.last_used = now;
	return debuginfo__meta_put(s, id, &m);
}

int debuginfo__fetch(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen)
{
	int64_t now = clock_wall_ns(), retry = 0;
	struct err_msg msg;
	char *got = NULL, text[300];
	int rc, exe = 0;

	err_clear(&msg);
	if (debuginfo__fetch_admit(s, &retry)) {
		atomic_fetch_add(&s->fetches_limited, 1);
		snprintf(text, sizeof(text),
			 DEBUGINFO__LIMITED " to %lld a minute; retried later",
			 (long long)(60000000000LL / s->fetch_interval_ns));
		debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_DEBUGINFOD,
				     DEBUGINFO_STATUS_UPSTREAM_ERROR, retry, text);
		return ERR_UNAVAILABLE;
	}
	rc = debuginfo__debuginfod_fetch(s, id, 0, clock_mono_ns() + s->fetch_timeout_ns, &got,
					 &msg);
	/* No debug info anywhere: a Go executable names its frames itself
	 * (.gopclntab), so ask for the executable; other executables are not
	 * taken (not found, as before).  A Go executable without DWARF served
	 * as "debuginfo" is kept as the executable it is. */
	if (rc == ERR_NOT_FOUND) {
		exe = 1;
		rc = debuginfo__debuginfod_fetch(s, id, 1, clock_mono_ns() + s->fetch_timeout_ns,
						 &got, &msg);
		if (!rc && !go_without_dwarf(got)) {
			unlink(got);
			free(got);
			got = NULL;
			rc = ERR_NOT_FOUND;
		}
	} else if (!rc && go_without_dwarf(got)) {
		exe = 1;
	}
	if (rc == ERR_NOT_FOUND) {
		atomic_fetch_add(&s->fetches_not_found, 1);
		debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_DEBUGINFOD, DEBUGINFO_STATUS_NOT_FOUND,
				     now + s->retry_ns,
				     "not uploaded, and no debuginfod upstream has it");
		return rc;
	}
	if (rc) {
		atomic_fetch_add(&s->fetches_error, 1);
		debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_DEBUGINFOD,
				     DEBUGINFO_STATUS_UPSTREAM_ERROR, now + s->retry_ns, msg.text);
		return rc;
	}
	atomic_fetch_add(&s->fetches_ok, 1);
	rc = check_fetched(s, id, bid, blen, got, exe, now);
	if (!rc) {
		pthread_mutex_lock(&s->upload_mu);
		rc = install_fetched(s, id, got, exe, now);
		pthread_mutex_unlock(&s->upload_mu);
		if (rc)
			debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_DEBUGINFOD,
					     DEBUGINFO_STATUS_UPSTREAM_ERROR, now + s->retry_ns,
					     "cannot store the fetched file");
	}
	unlink(got); /* gone already when installed */
	free(got);
	return rc;
}
