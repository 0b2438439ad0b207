/*
 * perfmap.c - perf maps of JIT runtimes (/tmp/perf-PID.map), uploaded per
 * tenant and process and used to name the frames of that process's
 * anonymous executable memory (docs/symbolization.md, "JIT runtimes").
 *
 * Storage: STORE_AUX_PERFMAP, key = tenant ("" for no tenant) NUL be32(pid),
 * value = the parsed map in perfmap_encode's form (base/perfmap.h), sorted
 * by address.  One map per (tenant, pid): a new upload replaces the old
 * one, and moves debuginfo_generation so no query memo keeps frames named
 * from the map it replaced.
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/perfmap.h"
#include "base/varint.h"
#include "debuginfo_int.h"
#include "storage/storage.h"

#define KEY_MAX 600
/* A stored map: perfmap_encode of at most PERFMAP_MAX_BYTES of text. */
#define VAL_MAX ((size_t)PERFMAP_MAX_BYTES + 64)

static int make_key(const char *tenant, uint32_t pid, uint8_t *key, size_t *klen,
		    struct err_msg *msg)
{
	size_t tl = tenant ? strlen(tenant) : 0;

	if (tl + 5 > KEY_MAX)
		return err_set(msg, ERR_INVALID, "tenant name too long for a perf map");
	memcpy(key, tenant ? tenant : "", tl);
	key[tl] = '\0';
	be32_put(key + tl + 1, pid);
	*klen = tl + 5;
	return 0;
}

int debuginfo_perfmap_put(struct debuginfo *d, const char *tenant, uint32_t pid,
			  const char *text, size_t len, size_t *entries, struct err_msg *msg)
{
	struct perfmap m;
	struct buf val;
	struct store_kv kv;
	uint8_t key[KEY_MAX];
	int rc;

	if (pid == 0 || pid > INT32_MAX)
		return err_set(msg, ERR_INVALID, "process id must be 1..%d", INT32_MAX);
	if ((rc = make_key(tenant, pid, key, &kv.klen, msg)) ||
	    (rc = perfmap_parse(text, len, &m, msg)))
		return rc;
	/* The stored form is never longer than the text plus its header. */
	buf_init(&val, VAL_MAX);
	rc = perfmap_encode(&m, clock_wall_ns(), &val);
	if (rc)
		err_set(msg, rc, "perf map: cannot encode");
	kv.key = key;
	kv.val = val.data ? val.data : "";
	kv.vlen = val.len;
	if (!rc && !(rc = store_aux_write(d->st, STORE_AUX_PERFMAP, &kv, 1, msg))) {
		atomic_fetch_add(&d->generation, 1);
		*entries = m.n;
	}
	buf_release(&val);
	perfmap_release(&m);
	return rc;
}

int debuginfo_perfmap_resolve(struct debuginfo *d, const char *tenant, uint32_t pid,
			      const struct debuginfo_addr_req *reqs, size_t n, sym_frames_fn fn,
			      void *ctx, enum debuginfo_status *status, char *reason,
			      size_t reason_len)
{
	struct perfmap m;
	struct err_msg msg;
	struct buf val;
	uint8_t key[KEY_MAX];
	size_t klen = 0;
	int64_t ns;
	int rc;

	err_clear(&msg);
	if ((rc = make_key(tenant, pid, key, &klen, &msg)))
		return rc;
	buf_init(&val, VAL_MAX);
	rc = store_aux_get(d->st, STORE_AUX_PERFMAP, key, klen, &val, &msg);
	if (rc == ERR_NOT_FOUND) {
		buf_release(&val);
		*status = DEBUGINFO_STATUS_NOT_FOUND;
		snprintf(reason, reason_len,
			 "no perf map for process %u: upload /tmp/perf-%u.map (unhex upload "
			 "--perf-map FILE --pid %u) from the host the process ran on",
			 pid, pid, pid);
		return 0;
	}
	if (!rc)
		rc = perfmap_decode(val.data, val.len, &m, &ns, &msg);
	buf_release(&val);
	if (rc) {
		*status = DEBUGINFO_STATUS_NOT_FOUND;
		snprintf(reason, reason_len,
			 "the perf map of process %u cannot be read (%s): upload it again", pid,
			 msg.text);
		return rc == ERR_CORRUPT ? 0 : rc;
	}
	*status = DEBUGINFO_STATUS_OK;
	reason[0] = '\0';
	for (size_t i = 0; i < n && !rc; i++) {
		/* A caller is a return address: the call is the byte before it. */
		uint64_t a = reqs[i].leaf || !reqs[i].addr ? reqs[i].addr : reqs[i].addr - 1;
		const struct perfmap_entry *e = perfmap_find(&m, a);
		struct sym_frame f = { 0 };

		if (e)
			f.function = perfmap_name(&m, e);
		rc = fn(ctx, i, a, &f, e ? 1 : 0);
	}
	perfmap_release(&m);
	return rc;
}
