/*
 * routes_settings.c - Pyroscope's settings.v1.SettingsService over Connect
 * (JSON or binary protobuf): Get, Set and Delete of a tenant's named
 * settings, which Grafana Profiles Drilldown reads on every load and writes
 * when a user changes a preference.
 *
 * Semantics are Pyroscope's (pkg/settings): Set stores the setting with its
 * modifiedAt (now when not given) unless the stored one is newer, which is
 * ERR_CONFLICT ("newer update already written"); Delete removes it unless
 * it was modified after now; Get lists the tenant's settings, by name.
 *
 * Storage: the auxiliary namespace STORE_AUX_SETTINGS, one pair per
 * setting:
 *
 *   key    tenant id bytes, 0x00, setting name bytes
 *   value  the settings.v1.Setting message, packed (protobuf)
 *
 * A tenant id never holds a NUL (web__tenant_check), so one tenant's
 * settings are exactly the keys with its prefix.  Read-modify-write is
 * serialized by the server's settings_lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/clock.h"
#include "proto/pbjson.h"
#include "storage/storage.h"
#include "web_int.h"

#include "settings.pb-c.h"

enum {
	MAX_NAME = 256,           /* bytes of a setting name */
	MAX_VALUE = 64 << 10,     /* bytes of a setting value */
	MAX_SETTINGS = 1024,      /* per tenant */
	ARENA_BYTES = 128 << 20,  /* requests and responses of one call */
};

struct listing {
	Settings__V1__Setting **v;
	size_t n;
	struct arena *a;          /* NULL: only count */
	ProtobufCAllocator al;
};

static int list_cb(void *ctx, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct listing *l = ctx;
	Settings__V1__Setting *s;

	(void)key;
	(void)klen;
	if (l->n >= MAX_SETTINGS)
		return l->a ? ERR_CORRUPT : 1; /* counting stops at the cap */
	if (l->a) {
		s = settings__v1__setting__unpack(&l->al, vlen, val);
		if (!s)
			return arena_failed(l->a) ? ERR_TOO_LARGE : ERR_CORRUPT;
		l->v[l->n] = s;
	}
	l->n++;
	return 0;
}

static int setting_key(const char *tenant, const char *name, char *key, size_t *klen,
		       struct err_msg *msg)
{
	size_t t = strlen(tenant), n = strlen(name);

	if (!n)
		return err_set(msg, ERR_INVALID, "settings.v1: a setting name is required");
	if (n > MAX_NAME)
		return err_set(msg, ERR_TOO_LARGE, "settings.v1: a name has at most %d bytes",
			       MAX_NAME);
	memcpy(key, tenant, t);
	key[t] = '\0';
	memcpy(key + t + 1, name, n);
	*klen = t + 1 + n;
	return 0;
}

/* The stored setting `key` unpacked in `a` into *out, or NULL when absent. */
static int stored(struct web__req *rq, const char *key, size_t klen, struct arena *a,
		  Settings__V1__Setting **out, struct err_msg *msg)
{
	ProtobufCAllocator al;
	struct buf b;
	int rc;

	*out = NULL;
	buf_init(&b, MAX_VALUE + MAX_NAME + 64);
	rc = store_aux_get(rq->srv->store, STORE_AUX_SETTINGS, key, klen, &b, msg);
	if (rc == ERR_NOT_FOUND) {
		rc = 0;
	} else if (!rc) {
		pbjson_arena_allocator(a, &al);
		*out = settings__v1__setting__unpack(&al, b.len, (const uint8_t *)b.data);
		if (!*out)
			rc = err_set(msg, ERR_CORRUPT, "settings.v1: a stored setting is unreadable");
	}
	buf_release(&b);
	return rc;
}

static int get(struct web__req *rq, struct arena *a, ProtobufCMessage **out, struct err_msg *msg)
{
	Settings__V1__GetSettingsResponse *r = arena_calloc(a, 1, sizeof(*r));
	struct listing l = { NULL, 0, a, { 0 } };
	size_t plen = strlen(rq->tenant) + 1;
	int rc;

	l.v = arena_calloc(a, MAX_SETTINGS, sizeof(*l.v));
	if (!r || !l.v)
		return err_set(msg, ERR_NOMEM, "out of memory");
	settings__v1__get_settings_response__init(r);
	pbjson_arena_allocator(a, &l.al);
	rc = store_aux_scan(rq->srv->store, STORE_AUX_SETTINGS, rq->tenant, plen, list_cb, &l, msg);
	if (rc)
		return msg->text[0] ? rc : err_set(msg, rc, "settings.v1: reading: %s", err_str(rc));
	r->settings = l.v;
	r->n_settings = l.n;
	*out = &r->base;
	return 0;
}

static int set(struct web__req *rq, const Settings__V1__SetSettingsRequest *req, struct arena *a,
	       ProtobufCMessage **out, struct err_msg *msg)
{
	Settings__V1__SetSettingsResponse *r = arena_calloc(a, 1, sizeof(*r));
	Settings__V1__Setting *s = req->setting, *old;
	char key[WEB_TENANT_MAX + MAX_NAME + 2];
	struct listing count = { NULL, 0, NULL, { 0 } };
	struct store_kv kv;
	uint8_t *packed;
	size_t klen = 0;
	int rc;

	if (!r)
		return err_set(msg, ERR_NOMEM, "out of memory");
	if (!s)
		return err_set(msg, ERR_INVALID, "settings.v1: no setting values provided");
	if ((rc = setting_key(rq->tenant, s->name, key, &klen, msg)))
		return rc;
	if (strlen(s->value) > MAX_VALUE)
		return err_set(msg, ERR_TOO_LARGE, "settings.v1: a value has at most %d bytes",
			       MAX_VALUE);
	if (s->modifiedat <= 0)
		s->modifiedat = clock_wall_ns() / 1000000;
	rc = stored(rq, key, klen, a, &old, msg);
	if (!rc && old && old->modifiedat > s->modifiedat)
		rc = err_set(msg, ERR_CONFLICT,
			     "failed to update %s: newer update already written", s->name);
	if (!rc && !old) {
		rc = store_aux_scan(rq->srv->store, STORE_AUX_SETTINGS, rq->tenant,
				    strlen(rq->tenant) + 1, list_cb, &count, msg);
		if (rc > 0)
			rc = 0;
		if (!rc && count.n >= MAX_SETTINGS)
			rc = err_set(msg, ERR_TOO_LARGE, "settings.v1: at most %d settings per tenant",
				     MAX_SETTINGS);
	}
	if (rc)
		return rc;
	packed = arena_calloc(a, 1, settings__v1__setting__get_packed_size(s) + 1);
	if (!packed)
		return err_set(msg, ERR_NOMEM, "out of memory");
	kv.key = key;
	kv.klen = klen;
	kv.val = packed;
	kv.vlen = settings__v1__setting__pack(s, packed);
	rc = store_aux_write(rq->srv->store, STORE_AUX_SETTINGS, &kv, 1, msg);
	if (rc)
		return rc;
	settings__v1__set_settings_response__init(r);
	r->setting = s;
	*out = &r->base;
	return 0;
}

static int del(struct web__req *rq, const Settings__V1__DeleteSettingsRequest *req,
	       struct arena *a, ProtobufCMessage **out, struct err_msg *msg)
{
	Settings__V1__DeleteSettingsResponse *r = arena_calloc(a, 1, sizeof(*r));
	char key[WEB_TENANT_MAX + MAX_NAME + 2];
	Settings__V1__Setting *old;
	struct store_kv kv;
	size_t klen = 0;
	int rc;

	if (!r)
		return err_set(msg, ERR_NOMEM, "out of memory");
	if ((rc = setting_key(rq->tenant, req->name, key, &klen, msg)) ||
	    (rc = stored(rq, key, klen, a, &old, msg)))
		return rc;
	if (old && old->modifiedat > clock_wall_ns() / 1000000)
		return err_set(msg, ERR_CONFLICT,
			       "failed to delete %s: newer update already written", req->name);
	if (old) {
		kv.key = key;
		kv.klen = klen;
		kv.val = NULL;
		kv.vlen = 0;
		rc = store_aux_write(rq->srv->store, STORE_AUX_SETTINGS, &kv, 1, msg);
		if (rc)
			return rc;
	}
	settings__v1__delete_settings_response__init(r);
	*out = &r->base;
	return 0;
}

static const struct web__connect_method methods[] = {
	{ "Get", &settings__v1__get_settings_request__descriptor },
	{ "Set", &settings__v1__set_settings_request__descriptor },
	{ "Delete", &settings__v1__delete_settings_request__descriptor },
};

static int call(struct web__req *rq, void *ctx, size_t m, const ProtobufCMessage *req,
		struct arena *a, ProtobufCMessage **resp, struct err_msg *msg)
{
	int rc;

	(void)ctx;
	pthread_mutex_lock(&rq->srv->settings_lock);
	if (m == 0)
		rc = get(rq, a, resp, msg);
	else if (m == 1)
		rc = set(rq, (const void *)req, a, resp, msg);
	else
		rc = del(rq, (const void *)req, a, resp, msg);
	pthread_mutex_unlock(&rq->srv->settings_lock);
	return rc;
}

static const struct web__connect_service service = {
	"settings.v1.SettingsService", "settings.v1", methods,
	sizeof(methods) / sizeof(methods[0]), ARENA_BYTES, NULL, call,
};

void web__handle_settings(struct web__req *rq, const char *method, struct web__resp *rs)
{
	web__connect_serve(rq, &service, NULL, method, rs);
}
