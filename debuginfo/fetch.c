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
 * brought it.  Files fetched through the server's upstreams are every
 * tenant's; through a tenant's own list (debuginfo__fetch_set), that
 * tenant's, and a tenant whose list serves the bytes already stored joins
 * their owners.  The budget of fetch_per_minute is the same for both.
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

/* A fetched file as sym_elf_inspect_file saw it, once. */
struct fetched {
	struct sym_elf_info info;
	int rc;               /* of sym_elf_inspect_file */
	struct err_msg msg;   /* why it is not an ELF file */
};

static void inspect(const char *path, struct fetched *f)
{
	err_clear(&f->msg);
	f->rc = sym_elf_inspect_file(path, &f->info, &f->msg);
}

/*
 * Whether the fetched file is a Go executable without DWARF: its
 * .gopclntab names its frames when no debug info can be had.
 */
static int go_without_dwarf(const struct fetched *f)
{
	return !f->rc && (f->info.flags & SYM_HAS_GOPCLNTAB) && !(f->info.flags & SYM_HAS_DEBUG_INFO);
}

/*
 * Checks the fetched file `f` (a debug file, or with `exe` an executable):
 * 0, or ERR_INVALID with *st and text.
 */
static int check_fetched(const uint8_t *bid, size_t blen, struct fetched *f, int exe,
			 enum debuginfo_status *st, char *text, size_t tlen)
{
	enum sym_reason reason = SYM_REASON_INVALID_ELF;
	struct err_msg *msg = &f->msg;
	int rc = f->rc;

	/* Some servers hand out a stripped binary as "debuginfo": insist on
	 * DWARF.  An executable is only worth keeping for its .gopclntab. */
	if (!rc)
		rc = sym_elf_check(&f->info, bid, blen, !exe, &reason, msg);
	if (!rc && exe &&
	    (!(f->info.flags & SYM_HAS_TEXT) || (f->info.flags & SYM_SEGMENTS_FROM_DEBUG) ||
	     !f->info.n_segments)) {
		reason = SYM_REASON_INVALID_ELF;
		rc = err_set(msg, ERR_INVALID, "invalid_elf: not an executable (no code or no PT_LOAD)");
	}
	if (!rc)
		return 0;
	snprintf(text, tlen, "debuginfod served an unusable file: %s", msg->text);
	*st = debuginfo__status_of_reason(reason);
	return ERR_INVALID;
}

/*
 * Moves the checked file (with `exe` an executable) to the store, seen by
 * `owners` ("*": every tenant), unless a file arrived meanwhile.
 * upload_mu held.
 */
static int install_fetched(struct debuginfo *s, const char *id, const char *got, int exe,
			   int64_t now, const char *owners)
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
	snprintf(m.owners, sizeof(m.owners), "%s", owners);
	m.uploaded = now;
	m.last_used = now;
	return debuginfo__meta_put(s, id, &m);
}

/* ---- through a tenant's own upstreams ---- */

/*
 * The fetched, checked file `got` becomes visible to `owner` ("*": every
 * tenant): stored as its own when the build ID has no file, else `owner`
 * joins the stored file's owners if its bytes are the fetched ones.
 * upload_mu held.  0, or ERR_CONFLICT with `text` saying why.
 */
static int adopt_fetched(struct debuginfo *s, const char *owner, const char *id, const char *got,
			 int exe, int64_t now, char *text, size_t tlen)
{
	char dst[DEBUGINFO__PATH_MAX];
	struct debuginfo__meta m;
	struct err_msg msg;
	int same = 0, rc;

	if (!debuginfo__has_file(s, id))
		return install_fetched(s, id, got, exe, now, owner);
	rc = debuginfo__meta_get(s, id, &m);
	if (rc)
		return rc;
	if (debuginfo__visible(&m, owner))
		return 0;
	if (debuginfo__path(s, id, "debuginfo", dst, sizeof(dst)) || !debuginfo__file_exists(dst))
		rc = debuginfo__path(s, id, "executable", dst, sizeof(dst));
	if (!rc)
		rc = debuginfo__same_content(got, dst, &same);
	if (rc)
		return rc;
	if (!same) {
		snprintf(text, tlen,
			 "not uploaded (unhex upload): the debuginfod upstream's file for this "
			 "build ID is not the one stored");
		return ERR_CONFLICT;
	}
	err_clear(&msg);
	rc = debuginfo__owner_add(&m, strcmp(owner, "*") ? owner : NULL, id, &msg);
	if (rc) {
		snprintf(text, tlen, "%s", msg.text);
		return rc;
	}
	m.bucket &= ~7u; /* put again under the new owner's keys */
	return debuginfo__meta_put(s, id, &m);
}

/*
 * Where the outcome of a lookup through list `set` goes: the build ID's
 * record for the server's list (0), which every tenant reads; the list's
 * failure table otherwise.
 */
static void record_failure(struct debuginfo *s, unsigned set, const char *id,
			   enum debuginfo_status st, int64_t retry_at, const char *text)
{
	if (set)
		debuginfo__tfail_put(s, set, id, st, retry_at, text);
	else
		debuginfo__meta_fail_lookup(s, id, DEBUGINFO_SOURCE_DEBUGINFOD, st, retry_at, text);
}

/*
 * One lookup of `id` through list `set`, under the outbound budget: the
 * file checked, then stored (the server's list, unless a file arrived
 * meanwhile) or made visible to the list's owner (adopt_fetched); every
 * failure recorded by record_failure.  0 when a usable file was stored.
 */
static int fetch_through(struct debuginfo *s, unsigned set, const struct debuginfo__uset *u,
			 const char *id, const uint8_t *bid, size_t blen)
{
	int64_t now = clock_wall_ns(), retry = 0;
	enum debuginfo_status st = DEBUGINFO_STATUS_UPSTREAM_ERROR;
	struct err_msg msg;
	struct fetched f;
	char *got = NULL, text[600];
	int tenant = set && set != DEBUGINFO__SET_SERVER, exe = 0, rc;

	err_clear(&msg);
	if (debuginfo__fetch_admit(s, &retry)) {
		atomic_fetch_add(&s->fetches_limited, 1);
		snprintf(text, sizeof(text), DEBUGINFO__LIMITED " to %lld a minute; retried later",
			 (long long)(60000000000LL / s->fetch_interval_ns));
		record_failure(s, set, id, DEBUGINFO_STATUS_UPSTREAM_ERROR, retry, text);
		return ERR_UNAVAILABLE;
	}
	rc = debuginfo__debuginfod_fetch_from(s, u, id, 0, clock_mono_ns() + s->fetch_timeout_ns,
					      &got, &msg);
	/* No debug info anywhere: a Go executable names its frames itself
	 * (.gopclntab), so ask for the executable; other executables are not
	 * taken (not found, as before).  A Go executable without DWARF served
	 * as "debuginfo" is kept as the executable it is. */
	if (rc == ERR_NOT_FOUND) {
		exe = 1;
		rc = debuginfo__debuginfod_fetch_from(s, u, id, 1,
						      clock_mono_ns() + s->fetch_timeout_ns, &got,
						      &msg);
		if (!rc)
			inspect(got, &f);
		if (!rc && !go_without_dwarf(&f)) {
			unlink(got);
			free(got);
			got = NULL;
			rc = ERR_NOT_FOUND;
		}
	} else if (!rc) {
		inspect(got, &f);
		exe = go_without_dwarf(&f);
	}
	if (rc == ERR_NOT_FOUND) {
		atomic_fetch_add(&s->fetches_not_found, 1);
		record_failure(s, set, id, DEBUGINFO_STATUS_NOT_FOUND, now + s->retry_ns,
			       tenant ? "not uploaded, and none of this tenant's debuginfod "
					"upstreams has it"
				      : "not uploaded, and no debuginfod upstream has it");
		return rc;
	}
	if (rc) {
		atomic_fetch_add(&s->fetches_error, 1);
		record_failure(s, set, id, DEBUGINFO_STATUS_UPSTREAM_ERROR, now + s->retry_ns,
			       msg.text);
		return rc;
	}
	atomic_fetch_add(&s->fetches_ok, 1);
	rc = check_fetched(bid, blen, &f, exe, &st, text, sizeof(text));
	if (!rc) {
		pthread_mutex_lock(&s->upload_mu);
		rc = set ? adopt_fetched(s, u->owner, id, got, exe, now, text, sizeof(text))
			 : install_fetched(s, id, got, exe, now, "*");
		pthread_mutex_unlock(&s->upload_mu);
		if (!rc)
			debuginfo__bucket_wake(s);
		st = DEBUGINFO_STATUS_UPSTREAM_ERROR;
		if (rc && rc != ERR_CONFLICT)
			snprintf(text, sizeof(text), "cannot store the fetched file");
	}
	if (rc)
		record_failure(s, set, id, st, now + s->retry_ns, text);
	else if (set)
		debuginfo__tfail_clear(s, set, id);
	unlink(got); /* gone already when installed */
	free(got);
	return rc;
}

int debuginfo__fetch(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen)
{
	return fetch_through(s, 0, &s->server, id, bid, blen);
}

int debuginfo__fetch_set(struct debuginfo *s, unsigned set, const char *id, const uint8_t *bid,
			 size_t blen)
{
	const struct debuginfo__uset *u = debuginfo__uset_get(s, set);
	struct debuginfo__meta m;

	if (!u || !set)
		return ERR_INVALID;
	if (!debuginfo__meta_get(s, id, &m) && debuginfo__visible(&m, u->owner)) {
		debuginfo__tfail_clear(s, set, id);
		return 0;
	}
	if (!u->n) {
		debuginfo__tfail_put(s, set, id, DEBUGINFO_STATUS_NOT_FOUND, 0,
				     "not uploaded (unhex upload), and this tenant has no debuginfod "
				     "upstream (limits file: debuginfod_urls)");
		return ERR_NOT_FOUND;
	}
	return fetch_through(s, set, u, id, bid, blen);
}
