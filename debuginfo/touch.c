/*
 * touch.c - the last use of a build ID's debug info ("lastUsed" of GET
 * /api/v1/debuginfo): written at most once a minute per build ID, which a
 * small direct-mapped table of hashes remembers (a collision only costs an
 * extra write), and never while an upload is installing a file.
 */
#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "debuginfo/debuginfo_int.h"

#define TOUCH_EVERY_NS (60LL * 1000000000)

void debuginfo__touch_forget(struct debuginfo *s, const uint8_t *bid, size_t blen)
{
	uint64_t h = hash_bytes(bid, blen, 0);
	struct debuginfo__touch_slot *t = &s->touched[h % DEBUGINFO__TOUCH_SLOTS];

	pthread_mutex_lock(&s->touch_mu);
	if (t->hash == h)
		t->written = 0;
	pthread_mutex_unlock(&s->touch_mu);
}

void debuginfo_touch(struct debuginfo *s, const char *build_id_hex)
{
	uint8_t bid[SYM_BUILD_ID_MAX];
	char id[DEBUGINFO_HEX_MAX];
	int64_t now = clock_wall_ns();
	struct debuginfo__touch_slot *t;
	struct debuginfo__meta m;
	uint64_t h;
	size_t blen;

	if (debuginfo__canon_id(build_id_hex, id, bid, &blen))
		return;
	h = hash_bytes(bid, blen, 0);
	t = &s->touched[h % DEBUGINFO__TOUCH_SLOTS];
	pthread_mutex_lock(&s->touch_mu);
	if (t->hash == h && now - t->written < TOUCH_EVERY_NS) {
		pthread_mutex_unlock(&s->touch_mu);
		return;
	}
	t->hash = h;
	t->written = now;
	pthread_mutex_unlock(&s->touch_mu);
	/* upload_mu orders this read-modify-write against uploads; when an
	 * upload holds it, this minute's touch is skipped, not waited for. */
	if (pthread_mutex_trylock(&s->upload_mu)) {
		debuginfo__touch_forget(s, bid, blen);
		return;
	}
	if (!debuginfo__meta_get(s, id, &m) && m.status == DEBUGINFO_STATUS_OK) {
		m.last_used = now;
		if (debuginfo__meta_put(s, id, &m))
			log_warn("debuginfo: cannot record the last use of %s", id);
	}
	pthread_mutex_unlock(&s->upload_mu);
}
