/*
 * fetch.c - fetching the debug info of a build ID nobody uploaded from the
 * debuginfod upstreams (debuginfod.c) into the store, checked like an
 * upload, with the outcome recorded in its metadata (a not-found or an
 * upstream error is retried after retry_ns).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"

int debuginfo__fetch(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen)
{
	int64_t now = clock_wall_ns();
	struct sym_elf_info info;
	enum sym_reason reason;
	struct err_msg msg;
	char *got = NULL, dst[DEBUGINFO__PATH_MAX];
	struct debuginfo__meta m;
	int rc;

	err_clear(&msg);
	rc = debuginfo__debuginfod_fetch(id, 0, clock_mono_ns() + s->fetch_timeout_ns, &s->cancel,
					 &got, &msg);
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
	/* Some servers hand out a stripped binary as "debuginfo": insist on DWARF. */
	rc = sym_elf_inspect_file(got, &info, &msg);
	if (rc)
		reason = SYM_REASON_INVALID_ELF;
	else
		rc = sym_elf_check(&info, bid, blen, 1, &reason, &msg);
	if (rc) {
		char text[600];

		snprintf(text, sizeof(text), "debuginfod served an unusable file: %s", msg.text);
		debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_DEBUGINFOD,
				     debuginfo__status_of_reason(reason), now + s->retry_ns, text);
		free(got);
		return ERR_INVALID;
	}
	rc = debuginfo__path(s, id, "debuginfo", dst, sizeof(dst));
	if (!rc) {
		char dir[DEBUGINFO__PATH_MAX];

		debuginfo__path(s, id, NULL, dir, sizeof(dir));
		rc = debuginfo__mkdir_p(dir);
	}
	if (!rc)
		rc = debuginfo__install_copy(got, dst, &msg);
	free(got);
	if (rc) {
		debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_DEBUGINFOD,
				     DEBUGINFO_STATUS_UPSTREAM_ERROR, now + s->retry_ns,
				     "cannot store the fetched file");
		return rc;
	}
	memset(&m, 0, sizeof(m));
	m.source = DEBUGINFO_SOURCE_DEBUGINFOD;
	m.status = DEBUGINFO_STATUS_OK;
	m.kinds = 1u << DEBUGINFO_FILE_DEBUGINFO;
	debuginfo__file_hash(dst, &m.size, &m.hash);
	m.uploaded = now;
	m.last_used = now;
	return debuginfo__meta_put(s, id, &m);
}
