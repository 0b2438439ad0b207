/*
 * meta.c - the metadata record of a build ID (STORE_AUX_DEBUGINFO, format
 * in debuginfo_int.h): its codec, reading and writing it, recording a
 * failure, and the status names.
 */
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/log.h"
#include "base/varint.h"
#include "debuginfo/debuginfo_int.h"
#include "storage/storage.h"

#define META_VERSION 1

static const char *const status_names[DEBUGINFO_STATUS_COUNT] = {
	"ok", "no_build_id", "not_found", "mismatch", "invalid_elf", "no_symbols",
	"upstream_error", "pending",
};

const char *debuginfo_status_str(enum debuginfo_status s)
{
	return (unsigned)s < DEBUGINFO_STATUS_COUNT ? status_names[s] : "unknown";
}

enum debuginfo_status debuginfo__status_of_reason(enum sym_reason r)
{
	switch (r) {
	case SYM_REASON_OK: return DEBUGINFO_STATUS_OK;
	case SYM_REASON_INVALID_ELF: return DEBUGINFO_STATUS_INVALID_ELF;
	case SYM_REASON_BUILD_ID_MISMATCH: return DEBUGINFO_STATUS_MISMATCH;
	case SYM_REASON_NO_BUILD_ID: return DEBUGINFO_STATUS_NO_BUILD_ID;
	case SYM_REASON_NO_SYMBOLS:
	case SYM_REASON_NO_DEBUG_INFO: break;
	}
	return DEBUGINFO_STATUS_NO_SYMBOLS;
}

void debuginfo__copy_reason(char *out, size_t len, const char *s)
{
	if (len)
		snprintf(out, len, "%s", s ? s : "");
}

int debuginfo__meta_encode(const struct debuginfo__meta *m, struct buf *out)
{
	size_t rl = strnlen(m->reason, sizeof(m->reason));
	int rc = buf_putc(out, META_VERSION);

	if (!rc) rc = buf_put_uvarint(out, m->source);
	if (!rc) rc = buf_put_uvarint(out, m->status);
	if (!rc) rc = buf_put_uvarint(out, m->kinds);
	if (!rc) rc = buf_put_uvarint(out, m->size);
	if (!rc) rc = buf_put_uvarint(out, m->hash);
	if (!rc) rc = buf_put_svarint(out, m->uploaded);
	if (!rc) rc = buf_put_svarint(out, m->last_used);
	if (!rc) rc = buf_put_svarint(out, m->retry_at);
	if (!rc) rc = buf_put_uvarint(out, rl);
	if (!rc) rc = buf_append(out, m->reason, rl);
	return rc;
}

int debuginfo__meta_decode(const void *val, size_t len, struct debuginfo__meta *m)
{
	const uint8_t *p = val, *end = p + len;
	uint64_t v[9];
	size_t k;

	memset(m, 0, sizeof(*m));
	if (len < 1 || p[0] != META_VERSION)
		return ERR_CORRUPT;
	p++;
	for (int i = 0; i < 9; i++) {
		k = varint_get(p, end, &v[i]);
		if (!k)
			return ERR_CORRUPT;
		p += k;
	}
	if (v[1] >= DEBUGINFO_STATUS_COUNT || v[8] > (uint64_t)(end - p))
		return ERR_CORRUPT;
	m->source = (unsigned)v[0];
	m->status = (unsigned)v[1];
	m->kinds = (unsigned)v[2] & 3;
	m->size = v[3];
	m->hash = v[4];
	m->uploaded = zigzag_decode(v[5]);
	m->last_used = zigzag_decode(v[6]);
	m->retry_at = zigzag_decode(v[7]);
	k = v[8] < sizeof(m->reason) - 1 ? (size_t)v[8] : sizeof(m->reason) - 1;
	memcpy(m->reason, p, k);
	m->reason[k] = '\0';
	return 0;
}

int debuginfo__meta_get(struct debuginfo *s, const char *id, struct debuginfo__meta *m)
{
	struct buf b;
	int rc;

	buf_init(&b, 1 << 20);
	rc = store_aux_get(s->st, STORE_AUX_DEBUGINFO, id, strlen(id), &b, NULL);
	if (!rc && debuginfo__meta_decode(b.data, b.len, m))
		rc = ERR_CORRUPT;
	buf_release(&b);
	return rc;
}

int debuginfo__meta_put(struct debuginfo *s, const char *id, const struct debuginfo__meta *m)
{
	struct store_kv kv;
	struct buf b;
	int rc;

	buf_init(&b, 1 << 20);
	rc = debuginfo__meta_encode(m, &b);
	if (!rc) {
		kv.key = id;
		kv.klen = strlen(id);
		kv.val = b.data;
		kv.vlen = b.len;
		rc = store_aux_write(s->st, STORE_AUX_DEBUGINFO, &kv, 1, NULL);
	}
	buf_release(&b);
	return rc;
}

void debuginfo__meta_fail(struct debuginfo *s, const char *id, unsigned source,
			  enum debuginfo_status st, int64_t retry_at, const char *reason)
{
	struct debuginfo__meta m;

	if (debuginfo__meta_get(s, id, &m))
		memset(&m, 0, sizeof(m));
	if (!m.source)
		m.source = source;
	m.status = st;
	m.retry_at = retry_at;
	debuginfo__copy_reason(m.reason, sizeof(m.reason), reason);
	if (debuginfo__meta_put(s, id, &m))
		log_warn("debuginfo: cannot record the status of %s", id);
}
