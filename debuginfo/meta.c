/*
 * meta.c - the metadata record of a build ID (STORE_AUX_DEBUGINFO, format
 * in debuginfo_int.h): its codec, reading and writing it, recording a
 * failure, the status and source names, who may see a build ID's files,
 * and the typed records the service hands out (debuginfo_get, _list,
 * _count_by_status, and their views for one tenant).
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "base/varint.h"
#include "debuginfo_int.h"
#include "storage/storage.h"

#define META_VERSION 1

static const char *const status_names[DEBUGINFO_STATUS_COUNT] = {
	"ok", "no_build_id", "not_found", "mismatch", "invalid_elf", "no_symbols",
	"upstream_error", "pending", "disabled",
};

static const char *const source_names[DEBUGINFO_SOURCE_COUNT] = {
	"none", "upload", "debuginfod",
};

const char *debuginfo_status_str(enum debuginfo_status s)
{
	return (unsigned)s < DEBUGINFO_STATUS_COUNT ? status_names[s] : "unknown";
}

const char *debuginfo_source_str(enum debuginfo_source s)
{
	return source_names[(unsigned)s < DEBUGINFO_SOURCE_COUNT ? s : DEBUGINFO_SOURCE_NONE];
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
	size_t ol = strnlen(m->owners, sizeof(m->owners) - 1);
	int rc;

	/* A status the decoder would refuse would lose the record. */
	assert(m->status < DEBUGINFO_STATUS_COUNT);
	rc = buf_putc(out, META_VERSION);
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
	if (!rc) rc = buf_put_uvarint(out, ol);
	if (!rc) rc = buf_append(out, m->owners, ol);
	if (!rc) rc = buf_put_uvarint(out, m->has_sha256 ? sizeof(m->sha256) : 0);
	if (!rc && m->has_sha256) rc = buf_append(out, m->sha256, sizeof(m->sha256));
	if (!rc) rc = buf_put_svarint(out, m->failed);
	if (!rc) rc = buf_put_svarint(out, m->last_profile);
	if (!rc) rc = buf_put_uvarint(out, m->bucket);
	return rc;
}

/*
 * The fields appended after the reason: owners, sha256, failed, last_profile,
 * bucket (format in debuginfo_int.h).  Each may be absent in an older record.
 */
static int decode_tail(const uint8_t *p, const uint8_t *end, struct debuginfo__meta *m)
{
	uint64_t n;
	size_t k;

	if (p == end) {
		/* Written before owners existed: files were every tenant's. */
		snprintf(m->owners, sizeof(m->owners), "%s", m->kinds ? "*" : "");
		return 0;
	}
	k = varint_get(p, end, &n);
	if (!k || n > (uint64_t)(end - p - (ptrdiff_t)k) || n >= sizeof(m->owners) ||
	    memchr(p + k, '\0', (size_t)n))
		return ERR_CORRUPT;
	memcpy(m->owners, p + k, (size_t)n);
	m->owners[n] = '\0';
	p += k + (size_t)n;
	if (p == end)
		return 0;
	k = varint_get(p, end, &n);
	if (!k || (n != 0 && n != sizeof(m->sha256)) || n > (uint64_t)(end - p - (ptrdiff_t)k))
		return ERR_CORRUPT;
	if (n) {
		memcpy(m->sha256, p + k, sizeof(m->sha256));
		m->has_sha256 = 1;
	}
	p += k + (size_t)n;
	/* failed, last_profile, bucket: varints, each absent in older records. */
	for (int field = 0; field < 3 && p != end; field++) {
		k = varint_get(p, end, &n);
		if (!k)
			return ERR_CORRUPT;
		p += k;
		if (field == 0)
			m->failed = zigzag_decode(n);
		else if (field == 1)
			m->last_profile = zigzag_decode(n);
		else
			m->bucket = (unsigned)n & DEBUGINFO__BUCKET_ALL;
	}
	return 0;
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
	m->kinds = (unsigned)v[2] & 7;
	m->size = v[3];
	m->hash = v[4];
	m->uploaded = zigzag_decode(v[5]);
	m->last_used = zigzag_decode(v[6]);
	m->retry_at = zigzag_decode(v[7]);
	k = v[8] < sizeof(m->reason) - 1 ? (size_t)v[8] : sizeof(m->reason) - 1;
	memcpy(m->reason, p, k);
	m->reason[k] = '\0';
	if (decode_tail(p + v[8], end, m)) {
		memset(m, 0, sizeof(*m));
		return ERR_CORRUPT;
	}
	return 0;
}

int debuginfo__owner_has(const char *owners, const char *tenant)
{
	size_t n = strlen(tenant);

	for (const char *p = owners; *p;) {
		size_t k = strcspn(p, ",");

		if (k == n && memcmp(p, tenant, n) == 0)
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

int debuginfo__visible(const struct debuginfo__meta *m, const char *tenant)
{
	if (!tenant)
		return 1;
	if (!m->kinds)
		return 0;
	return strcmp(m->owners, "*") == 0 || debuginfo__owner_has(m->owners, tenant);
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

/* A record of a build ID without a file whose time is up. */
static int expired(const struct debuginfo__meta *m, int64_t now, int64_t ttl)
{
	return !m->kinds && m->retry_at <= now && m->failed <= now - ttl;
}

struct sweep {
	int64_t now, ttl;
	struct buf ids;       /* NUL-terminated build IDs to forget */
	int64_t kept;         /* file-less records that stay */
};

static int sweep_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct sweep *w = ctx;
	struct debuginfo__meta m;
	int rc;

	if (klen >= DEBUGINFO_HEX_MAX || debuginfo__meta_decode(val, vlen, &m) || m.kinds)
		return 0;
	if (!expired(&m, w->now, w->ttl)) {
		w->kept++;
		return 0;
	}
	rc = buf_append(&w->ids, key, klen);
	return rc ? rc : buf_putc(&w->ids, '\0');
}

void debuginfo__meta_sweep(struct debuginfo *s)
{
	struct sweep w = { clock_wall_ns(), s->failure_ttl_ns, { 0 }, 0 };
	size_t forgotten = 0;

	if (atomic_flag_test_and_set(&s->sweeping))
		return;
	buf_init(&w.ids, 64u << 20);
	/* Under upload_mu: an upload or a fetch that stores a file for one of
	 * these IDs meanwhile must not lose its record to the delete. */
	pthread_mutex_lock(&s->upload_mu);
	if (!store_aux_scan(s->st, STORE_AUX_DEBUGINFO, "", 0, sweep_one, &w, NULL)) {
		for (size_t at = 0; at < w.ids.len; at += strlen(w.ids.data + at) + 1) {
			const char *id = w.ids.data + at;
			struct store_kv kv = { id, strlen(id), NULL, 0 };
			struct debuginfo__meta m;

			if (debuginfo__meta_get(s, id, &m) || !expired(&m, w.now, w.ttl))
				continue;
			if (!store_aux_write(s->st, STORE_AUX_DEBUGINFO, &kv, 1, NULL))
				forgotten++;
		}
		atomic_store(&s->failures, w.kept);
	}
	pthread_mutex_unlock(&s->upload_mu);
	atomic_store(&s->last_sweep, w.now);
	buf_release(&w.ids);
	atomic_flag_clear(&s->sweeping);
	if (forgotten)
		log_info("debuginfo: forgot %zu records of failed lookups older than %lld s", forgotten,
			 (long long)(s->failure_ttl_ns / 1000000000LL));
}

/* Room for one more record of a build ID without a file: sweeps when due or full. */
static int failure_room(struct debuginfo *s, int64_t now)
{
	if (atomic_load(&s->failures) < 0 || now - atomic_load(&s->last_sweep) > s->failure_ttl_ns / 24 ||
	    (uint64_t)atomic_load(&s->failures) >= s->max_failures)
		debuginfo__meta_sweep(s);
	return atomic_load(&s->failures) >= 0 &&
	       (uint64_t)atomic_load(&s->failures) < s->max_failures;
}

/* debuginfo__meta_fail, and with `lookup` debuginfo__meta_fail_lookup. */
static void record_fail(struct debuginfo *s, const char *id, unsigned source,
			enum debuginfo_status st, int64_t retry_at, const char *reason, int lookup)
{
	struct debuginfo__meta m;
	int64_t now = clock_wall_ns();
	int fresh = debuginfo__meta_get(s, id, &m) != 0;

	/* Room before upload_mu: a sweep takes it. */
	if (fresh && !failure_room(s, now)) {
		atomic_fetch_add(&s->failures_dropped, 1);
		log_debug("debuginfo: %s: not recorded, %llu records of failed lookups exist", id,
			  (unsigned long long)s->max_failures);
		return;
	}
	if (lookup) {
		pthread_mutex_lock(&s->upload_mu);
		/* An upload (or another lookup) stored a file while this one
		 * ran: its record stands, the failure is moot. */
		if (debuginfo__has_file(s, id)) {
			pthread_mutex_unlock(&s->upload_mu);
			log_debug("debuginfo: %s: a file arrived during the failed lookup", id);
			return;
		}
		fresh = debuginfo__meta_get(s, id, &m) != 0;
	}
	if (fresh)
		memset(&m, 0, sizeof(m));
	if (!m.source)
		m.source = source;
	m.status = st;
	m.retry_at = retry_at;
	m.failed = now;
	debuginfo__copy_reason(m.reason, sizeof(m.reason), reason);
	if (debuginfo__meta_put(s, id, &m))
		log_warn("debuginfo: cannot record the status of %s", id);
	else if (fresh)
		atomic_fetch_add(&s->failures, 1);
	if (lookup)
		pthread_mutex_unlock(&s->upload_mu);
}

void debuginfo__meta_fail(struct debuginfo *s, const char *id, unsigned source,
			  enum debuginfo_status st, int64_t retry_at, const char *reason)
{
	record_fail(s, id, source, st, retry_at, reason, 0);
}

void debuginfo__meta_fail_lookup(struct debuginfo *s, const char *id, unsigned source,
				 enum debuginfo_status st, int64_t retry_at, const char *reason)
{
	record_fail(s, id, source, st, retry_at, reason, 1);
}

/* ---- typed records ---- */

static void to_record(const char *id, size_t idlen, const struct debuginfo__meta *m,
		      struct debuginfo_record *r)
{
	memcpy(r->build_id, id, idlen);
	r->build_id[idlen] = '\0';
	/* An unknown source (a later version's) shows as none. */
	r->source = m->source < DEBUGINFO_SOURCE_COUNT ? (enum debuginfo_source)m->source
						       : DEBUGINFO_SOURCE_NONE;
	r->status = (enum debuginfo_status)m->status;
	snprintf(r->reason, sizeof(r->reason), "%s", m->reason);
	r->kinds = m->kinds;
	r->size = m->size;
	r->uploaded_ns = m->uploaded;
	r->last_used_ns = m->last_used;
	r->retry_at_ns = m->retry_at;
	r->shared = strcmp(m->owners, "*") == 0;
	r->has_sha256 = m->has_sha256;
	memcpy(r->sha256, m->sha256, sizeof(r->sha256));
	r->last_profile_ns = m->last_profile;
}

int debuginfo_get_as(struct debuginfo *s, const char *tenant, const char *build_id_hex,
		     struct debuginfo_record *out, struct err_msg *msg)
{
	char id[DEBUGINFO_HEX_MAX];
	struct debuginfo__meta m;
	int rc;

	if (debuginfo__canon_id(build_id_hex, id, NULL, NULL))
		return err_set(msg, ERR_INVALID, "\"%.100s\" is not a hex build ID",
			       build_id_hex ? build_id_hex : "");
	rc = debuginfo__meta_get(s, id, &m);
	/* What a tenant may not see is not there, in the same words. */
	if (rc == ERR_NOT_FOUND || (!rc && !debuginfo__visible(&m, tenant)))
		return err_set(msg, ERR_NOT_FOUND, "build ID %s is not known", id);
	if (rc)
		return err_set(msg, rc, "reading the metadata of %s: %s", id, err_str(rc));
	to_record(id, strlen(id), &m, out);
	return 0;
}

int debuginfo_get(struct debuginfo *s, const char *build_id_hex, struct debuginfo_record *out,
		  struct err_msg *msg)
{
	return debuginfo_get_as(s, NULL, build_id_hex, out, msg);
}

int debuginfo_visible(struct debuginfo *s, const char *tenant, const char *build_id_hex)
{
	char id[DEBUGINFO_HEX_MAX];
	struct debuginfo__meta m;

	return !debuginfo__canon_id(build_id_hex, id, NULL, NULL) &&
	       !debuginfo__meta_get(s, id, &m) && m.kinds && debuginfo__visible(&m, tenant);
}

struct list_ctx {
	debuginfo_record_fn fn;
	void *ctx;
	const char *tenant;
	struct debuginfo_record r;
};

static int list_one(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct list_ctx *l = ctx;
	struct debuginfo__meta m;

	/* Keys are canonical IDs (debuginfo__canon_id), so they fit. */
	if (klen >= DEBUGINFO_HEX_MAX || debuginfo__meta_decode(val, vlen, &m) ||
	    !debuginfo__visible(&m, l->tenant))
		return 0;
	to_record(key, klen, &m, &l->r);
	return l->fn(l->ctx, &l->r);
}

int debuginfo_list_as(struct debuginfo *s, const char *tenant, debuginfo_record_fn fn, void *ctx,
		      struct err_msg *msg)
{
	struct list_ctx l;

	memset(&l, 0, sizeof(l));
	l.fn = fn;
	l.ctx = ctx;
	l.tenant = tenant;
	return store_aux_scan(s->st, STORE_AUX_DEBUGINFO, "", 0, list_one, &l, msg);
}

int debuginfo_list(struct debuginfo *s, debuginfo_record_fn fn, void *ctx, struct err_msg *msg)
{
	return debuginfo_list_as(s, NULL, fn, ctx, msg);
}

static int count_status(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	uint64_t *by = ctx;
	struct debuginfo__meta m;

	(void)key;
	(void)klen;
	if (!debuginfo__meta_decode(val, vlen, &m) && m.status < DEBUGINFO_STATUS_COUNT)
		by[m.status]++;
	return 0;
}

int debuginfo_count_by_status(struct debuginfo *s, uint64_t by[DEBUGINFO_STATUS_COUNT],
			      struct err_msg *msg)
{
	memset(by, 0, DEBUGINFO_STATUS_COUNT * sizeof(*by));
	return store_aux_scan(s->st, STORE_AUX_DEBUGINFO, "", 0, count_status, by, msg);
}
