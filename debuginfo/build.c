/*
 * build.c - building the address index of a stored build ID: one pass over
 * its debug file (symbolize/ sym_index_build), the DWZ alt file found by
 * build ID, PLT names from the executable when one is stored, and a
 * failure recorded with its reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "debuginfo_int.h"

struct alt_ctx {
	struct debuginfo *s;
};

/*
 * The DWZ alt file of a debug file, by its build ID only: the store first,
 * then the upstreams (the name in .gnu_debugaltlink is another machine's
 * path and is never opened).
 */
static int find_alt(void *ctx, const uint8_t *id, size_t id_len, const char *name, char **path)
{
	struct alt_ctx *a = ctx;
	char hex[DEBUGINFO_HEX_MAX], p[DEBUGINFO__PATH_MAX];

	(void)name;
	if (id_len == 0 || id_len > SYM_BUILD_ID_MAX)
		return ERR_NOT_FOUND;
	sym_build_id_hex(id, id_len, hex);
	if (debuginfo__path(a->s, hex, "debuginfo", p, sizeof(p)))
		return ERR_NOT_FOUND;
	/* Fetched into the store under its own build ID, like any debug file:
	 * from the bucket, else the upstreams. */
	if (!debuginfo__file_exists(p) && debuginfo__bucket_due(a->s, hex))
		debuginfo__bucket_fetch(a->s, hex);
	if (!debuginfo__file_exists(p) && a->s->upstream)
		debuginfo__fetch(a->s, hex, id, id_len);
	if (debuginfo__file_exists(p)) {
		*path = strdup(p);
		return *path ? 0 : ERR_NOMEM;
	}
	return ERR_NOT_FOUND;
}

/*
 * A kernel symbol map wins over an ELF file of the same build ID: profiles
 * give kernel frames as runtime addresses, which only the map's rule
 * (offsets from _text) turns into what the index holds.
 */
static int build_kallsyms(struct debuginfo *s, const char *id, const char *src, const char *dst,
			  const uint8_t *bid, size_t blen)
{
	struct sym_index_stats stats;
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	rc = sym_kallsyms_index_build(src, dst, bid, blen, &stats, &msg);
	if (rc) {
		log_warn("debuginfo: index of the kernel symbol map %s: %s", id, msg.text);
		debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_NONE, DEBUGINFO_STATUS_INVALID_ELF,
				     clock_wall_ns() + s->retry_ns, msg.text);
		return rc;
	}
	atomic_fetch_add(&s->index_builds, 1);
	debuginfo__bucket_wake(s);
	log_info("debuginfo: built the index of the kernel symbol map %s (%llu functions)", id,
		 (unsigned long long)stats.locations);
	return 0;
}

/*
 * Says in the build ID's record when its frames are named from Go's
 * .gopclntab (no DWARF anywhere for it), and forgets that once an index
 * is built from DWARF.  The status stays ok: every Go frame is named.
 */
static void note_engine(struct debuginfo *s, const char *id, const struct sym_index_stats *st)
{
	struct debuginfo__meta m;
	char text[sizeof(m.reason)];
	int go = st->from == SYM_FROM_GOPCLNTAB;

	if (go)
		snprintf(text, sizeof(text),
			 DEBUGINFO__GOPCLNTAB " (%s layout): functions, files, lines and inlined "
			 "calls from the executable, no DWARF for this build ID",
			 st->layout ? st->layout : "Go");
	pthread_mutex_lock(&s->upload_mu);
	if (!debuginfo__meta_get(s, id, &m) && m.status == DEBUGINFO_STATUS_OK &&
	    (go || !strncmp(m.reason, DEBUGINFO__GOPCLNTAB, strlen(DEBUGINFO__GOPCLNTAB)))) {
		debuginfo__copy_reason(m.reason, sizeof(m.reason), go ? text : "");
		if (debuginfo__meta_put(s, id, &m))
			log_warn("debuginfo: cannot record how %s is named", id);
	}
	pthread_mutex_unlock(&s->upload_mu);
}

int debuginfo__build_index(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen)
{
	struct sym_dwarf_opts opts = { 0 };
	struct sym_index_stats stats;
	struct alt_ctx actx = { s };
	struct err_msg msg;
	char src[DEBUGINFO__PATH_MAX], dst[DEBUGINFO__PATH_MAX], exe[DEBUGINFO__PATH_MAX];
	int64_t t0 = clock_mono_ns();
	int rc;

	if (debuginfo__path(s, id, "index", dst, sizeof(dst)) ||
	    debuginfo__path(s, id, "debuginfo", src, sizeof(src)))
		return ERR_TOO_LARGE;
	if (debuginfo__file_exists(dst))
		return 0;
	/* Another server built it from the same files: its copy is checked
	 * as untrusted bytes, and built here when it does not check out. */
	if (s->os && !debuginfo__bucket_get_index(s, id, bid, blen, dst))
		return 0;
	if (!debuginfo__path(s, id, "kallsyms", exe, sizeof(exe)) && debuginfo__file_exists(exe))
		return build_kallsyms(s, id, exe, dst, bid, blen);
	if (!debuginfo__file_exists(src) &&
	    (debuginfo__path(s, id, "executable", src, sizeof(src)) ||
	     !debuginfo__file_exists(src)))
		return ERR_NOT_FOUND;
	opts.build_id = bid;
	opts.build_id_len = blen;
	opts.find_alt = find_alt;
	opts.ctx = &actx;
	/* A .debug file cannot name PLT stubs; the executable, when stored, can. */
	if (!debuginfo__path(s, id, "executable", exe, sizeof(exe)) && strcmp(exe, src) &&
	    debuginfo__file_exists(exe))
		opts.plt_from = exe;
	err_clear(&msg);
	rc = sym_index_build(src, dst, &opts, &stats, &msg);
	if (rc) {
		struct sym_elf_info info;
		enum sym_reason reason = SYM_REASON_INVALID_ELF;

		if (!sym_elf_inspect_file(src, &info, NULL))
			sym_elf_check(&info, bid, blen, 0, &reason, NULL);
		log_warn("debuginfo: index of %s: %s", id, msg.text);
		/* ERR_NOT_FOUND from a good file: a DWZ alt file is missing. */
		debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_NONE,
				     reason != SYM_REASON_OK ? debuginfo__status_of_reason(reason) :
				     rc == ERR_NOT_FOUND     ? DEBUGINFO_STATUS_NOT_FOUND :
							       DEBUGINFO_STATUS_INVALID_ELF,
				     clock_wall_ns() + s->retry_ns, msg.text);
		return rc;
	}
	atomic_fetch_add(&s->index_builds, 1);
	note_engine(s, id, &stats);
	debuginfo__bucket_wake(s);
	log_info("debuginfo: built the index of %s in %.2f s (%llu ranges, %llu functions%s)", id,
		 (double)(clock_mono_ns() - t0) / 1e9, (unsigned long long)stats.ranges,
		 (unsigned long long)stats.functions,
		 stats.from == SYM_FROM_GOPCLNTAB ? ", from .gopclntab" : "");
	return 0;
}
