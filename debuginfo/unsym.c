/*
 * unsym.c - binaries that arrive without names, judged at ingest, so hex
 * frames raise an alert before anyone opens a flame graph
 * (docs/symbolization.md, "Alerting before anyone looks").
 *
 * Ingest reports each (tenant, service, binary) of a stored pprof whose
 * frames came as raw addresses (debuginfo_unsym_class, then
 * debuginfo_note_ingested_class and debuginfo_note_ingested): one lock
 * and one probe of a bounded table per call.  A thread checks the build IDs of the table in
 * the background, with what a query would find (a stored file, its
 * record's status, else an upstream lookup through the fetch jobs), and
 * moves what arrived before the first answer into the counters of that
 * answer.  The checks read the store and start jobs outside the table's
 * lock, so ingest never waits for them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/perfmap.h"
#include "base/thread.h"
#include "debuginfo_int.h"

#define DEFAULT_ENTRIES 4096
#define MAX_ENTRIES (1u << 20) /* rows are allocated whole: ~0.5 KiB each */
#define DEFAULT_INTERVAL_NS (10LL * 1000000000LL)

/* Copies `s` (NULL: "") into out[len], cut at a UTF-8 character boundary. */
static void copy_cut(char *out, size_t len, const char *s)
{
	size_t n = s ? strnlen(s, len - 1) : 0;

	while (n && s[n] && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	if (n)
		memcpy(out, s, n);
	out[n] = '\0';
}

/* The base name of a mapping's file: what a person recognizes. */
static const char *base_name(const char *path)
{
	const char *slash;

	if (!path)
		return "";
	slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

static uint64_t key_hash(const char *tenant, const char *service, const char *bid,
			 const char *binary)
{
	uint64_t h = hash_bytes(tenant, strlen(tenant), 1);

	h = hash_combine(h, hash_bytes(service, strlen(service), 2));
	h = hash_combine(h, hash_bytes(bid, strlen(bid), 3));
	if (!bid[0])
		h = hash_combine(h, hash_bytes(binary, strlen(binary), 4));
	return h | 1; /* never 0: 0 marks an entry not filled yet */
}

int debuginfo__unsym_init(struct debuginfo *s, size_t max_entries, int64_t interval_ns)
{
	struct debuginfo__unsym *u = &s->unsym;

	memset(u, 0, sizeof(*u));
	u->max = max_entries ? max_entries : DEFAULT_ENTRIES;
	if (u->max > MAX_ENTRIES)
		u->max = MAX_ENTRIES;
	u->max_rows = u->max;
	u->interval_ns = interval_ns > 0 ? interval_ns : DEFAULT_INTERVAL_NS;
	u->idle_ns = DEBUGINFO__UNSYM_IDLE_NS;
	/* Half the upstream budget: queries keep the rest. */
	u->lookup_interval_ns = 2 * s->fetch_interval_ns;
	u->rows = calloc(u->max_rows + 1, sizeof(*u->rows));
	if (!u->rows)
		return ERR_NOMEM;
	hmap_init(&u->index, (uint32_t)u->max, NULL);
	hmap_init(&u->row_index, (uint32_t)u->max_rows, NULL);
	pthread_mutex_init(&u->mu, NULL);
	pthread_mutex_init(&u->pass_mu, NULL);
	thread_cond_init_mono(&u->cv);
	return 0;
}

void debuginfo__unsym_release(struct debuginfo *s)
{
	struct debuginfo__unsym *u = &s->unsym;

	if (!u->rows)
		return;
	hmap_release(&u->index);
	hmap_release(&u->row_index);
	free(u->e);
	free(u->rows);
	pthread_mutex_destroy(&u->mu);
	pthread_mutex_destroy(&u->pass_mu);
	pthread_cond_destroy(&u->cv);
	memset(u, 0, sizeof(*u));
}

/* Must hold u->mu.  The row of (tenant, service), made when missing; the
 * overflow row once max_rows are taken. */
static uint32_t row_of(struct debuginfo__unsym *u, const char *tenant, const char *service)
{
	uint64_t h = hash_combine(hash_bytes(tenant, strlen(tenant), 1),
				  hash_bytes(service, strlen(service), 2));
	struct hmap_probe pr;
	struct debuginfo__unsym_row *r;

	for (uint32_t i = hmap_first(&u->row_index, h, &pr); i != HMAP_NONE;
	     i = hmap_next(&u->row_index, &pr))
		if (u->rows[i].hash == h && !strcmp(u->rows[i].tenant, tenant) &&
		    !strcmp(u->rows[i].service, service))
			return i;
	if (u->n_rows >= u->max_rows || hmap_put_probed(&u->row_index, &pr, (uint32_t)u->n_rows)) {
		u->overflow_row = 1;
		return (uint32_t)u->max_rows;
	}
	r = &u->rows[u->n_rows];
	copy_cut(r->tenant, sizeof(r->tenant), tenant);
	copy_cut(r->service, sizeof(r->service), service);
	r->hash = h;
	return (uint32_t)u->n_rows++;
}

/* Must hold u->mu.  Counts what an entry's answer makes unsymbolizable. */
static void count(struct debuginfo__unsym *u, struct debuginfo__unsym_entry *e,
		  uint64_t profiles, uint64_t samples)
{
	struct debuginfo__unsym_row *r = &u->rows[e->row];

	if (e->status == DEBUGINFO_STATUS_OK)
		return;
	if (e->status == DEBUGINFO_STATUS_PENDING) {
		e->pending_profiles += profiles;
		e->pending_samples += samples;
		return;
	}
	r->profiles[e->status] += profiles;
	r->samples[e->status] += samples;
	e->profiles += profiles;
	e->samples += samples;
}

/* Must hold u->mu.  A new entry at index u->n, or NULL when the table is full. */
static struct debuginfo__unsym_entry *entry_add(struct debuginfo__unsym *u,
						const struct hmap_probe *pr)
{
	if (u->n >= u->max)
		return NULL;
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 64;
		struct debuginfo__unsym_entry *v;

		if (cap > u->max)
			cap = u->max;
		v = realloc(u->e, cap * sizeof(*v));
		if (!v)
			return NULL;
		u->e = v;
		u->cap = cap;
	}
	if (hmap_put_probed(&u->index, pr, (uint32_t)u->n))
		return NULL;
	memset(&u->e[u->n], 0, sizeof(u->e[u->n]));
	return &u->e[u->n++];
}

/* The key of a binary, cut to the table's sizes. */
struct key {
	char t[DEBUGINFO__UNSYM_TENANT_MAX], sv[DEBUGINFO__UNSYM_SERVICE_MAX];
	char bid[DEBUGINFO_HEX_MAX], bin[DEBUGINFO__UNSYM_BINARY_MAX];
	uint64_t h;
};

/*
 * Fills *k; 0 when the binary is not counted: "[...]" without a build ID,
 * and JIT code (perf-PID.map), named by its process's perf map, not by
 * debug info.
 */
static int key_make(struct key *k, const char *tenant, const char *service,
		    const char *build_id_hex, const char *filename)
{
	uint32_t pid;

	if (filename && perfmap_jit_mapping(filename, build_id_hex, &pid))
		return 0;
	k->bid[0] = '\0';
	copy_cut(k->bin, sizeof(k->bin), base_name(filename));
	if (build_id_hex && build_id_hex[0]) {
		if (debuginfo__canon_id(build_id_hex, k->bid, NULL, NULL))
			k->bid[0] = '\0'; /* ingest stores hex; anything else has no usable ID */
	} else if (filename && filename[0] == '[') {
		return 0; /* the kernel, [vdso]...: no upload can name them */
	}
	copy_cut(k->t, sizeof(k->t), tenant);
	copy_cut(k->sv, sizeof(k->sv), service);
	k->h = key_hash(k->t, k->sv, k->bid, k->bin);
	return 1;
}

/* Must hold u->mu.  The entry of `k`, or NULL with *pr where to add it. */
static struct debuginfo__unsym_entry *entry_find(struct debuginfo__unsym *u, const struct key *k,
						 struct hmap_probe *pr)
{
	for (uint32_t i = hmap_first(&u->index, k->h, pr); i != HMAP_NONE;
	     i = hmap_next(&u->index, pr)) {
		struct debuginfo__unsym_entry *c = &u->e[i];

		if (c->hash == k->h && !strcmp(c->build_id, k->bid) && !strcmp(c->tenant, k->t) &&
		    !strcmp(c->service, k->sv) && (k->bid[0] || !strcmp(c->binary, k->bin)))
			return c;
	}
	return NULL;
}

int debuginfo_unsym_class(struct debuginfo *s, const char *tenant, const char *service,
			  const char *build_id_hex, const char *filename)
{
	struct debuginfo__unsym *u = &s->unsym;
	struct debuginfo__unsym_entry *e;
	struct hmap_probe pr;
	struct key k;
	int cls = DEBUGINFO_UNSYM_OWN;

	/* A tenant without symbolization asked for hex frames: nothing to alert on. */
	if (!debuginfo_tenant_symbolizes(s, tenant) ||
	    !key_make(&k, tenant, service, build_id_hex, filename))
		return DEBUGINFO_UNSYM_SKIP;
	if (!k.bid[0])
		return DEBUGINFO_STATUS_NO_BUILD_ID;
	pthread_mutex_lock(&u->mu);
	e = entry_find(u, &k, &pr);
	if (e && e->status != DEBUGINFO_STATUS_OK && e->status != DEBUGINFO_STATUS_PENDING)
		cls = (int)e->status;
	pthread_mutex_unlock(&u->mu);
	return cls;
}

void debuginfo_note_ingested(struct debuginfo *s, const char *tenant, const char *service,
			     const char *build_id_hex, const char *filename, int cls,
			     uint64_t profiles, uint64_t samples)
{
	struct debuginfo__unsym *u = &s->unsym;
	struct debuginfo__unsym_entry *e;
	struct hmap_probe pr;
	int64_t now = clock_wall_ns();
	struct key k;

	if (!key_make(&k, tenant, service, build_id_hex, filename))
		return;
	pthread_mutex_lock(&u->mu);
	e = entry_find(u, &k, &pr);
	if (!e && !(e = entry_add(u, &pr))) {
		if (cls < 0) /* a class was counted in the row already */
			u->untracked += profiles;
		pthread_mutex_unlock(&u->mu);
		return;
	}
	if (!e->hash) {
		memcpy(e->tenant, k.t, sizeof(k.t));
		memcpy(e->service, k.sv, sizeof(k.sv));
		memcpy(e->build_id, k.bid, sizeof(k.bid));
		memcpy(e->binary, k.bin, sizeof(k.bin));
		e->hash = k.h;
		e->row = row_of(u, k.t, k.sv);
		e->first_seen = now;
		if (k.bid[0]) {
			e->status = DEBUGINFO_STATUS_PENDING;
			u->wake = 1;
			pthread_cond_signal(&u->cv);
		} else {
			e->status = DEBUGINFO_STATUS_NO_BUILD_ID;
			copy_cut(e->reason, sizeof(e->reason),
				 "the profile's mapping has no build ID; rebuild with -Wl,--build-id "
				 "or send build IDs from the agent");
		}
	}
	e->last_seen = now;
	if (cls >= 0 && e->status == (enum debuginfo_status)cls) {
		/* The row counted the profile once for its class. */
		e->profiles += profiles;
		e->samples += samples;
	} else {
		count(u, e, profiles, samples);
	}
	pthread_mutex_unlock(&u->mu);
}

void debuginfo_note_ingested_class(struct debuginfo *s, const char *tenant, const char *service,
				   int cls, uint64_t profiles, uint64_t samples)
{
	struct debuginfo__unsym *u = &s->unsym;
	char t[DEBUGINFO__UNSYM_TENANT_MAX], sv[DEBUGINFO__UNSYM_SERVICE_MAX];
	uint32_t r;

	if (cls < 0 || cls >= DEBUGINFO_STATUS_COUNT || cls == DEBUGINFO_STATUS_OK ||
	    cls == DEBUGINFO_STATUS_PENDING)
		return;
	copy_cut(t, sizeof(t), tenant);
	copy_cut(sv, sizeof(sv), service);
	pthread_mutex_lock(&u->mu);
	r = row_of(u, t, sv);
	u->rows[r].profiles[cls] += profiles;
	u->rows[r].samples[cls] += samples;
	pthread_mutex_unlock(&u->mu);
}

/* ---- checks ---- */

/* What is known of one build ID, as a query would find it. */
struct answer {
	char id[DEBUGINFO_HEX_MAX];
	unsigned set;     /* the upstream list of the entries' tenants (tenants.c) */
	enum debuginfo_status status;
	char reason[192];
	int fresh;        /* an entry still waits for its first answer */
	int counted;      /* in the gauge already */
};

/* Must hold u->mu.  Takes one lookup from the checks' share of the budget. */
static int lookup_admit(struct debuginfo__unsym *u)
{
	int64_t now = clock_mono_ns();

	if (now < u->next_lookup)
		return 0;
	u->next_lookup = now + u->lookup_interval_ns;
	u->lookups++;
	return 1;
}

/*
 * The answer of a build ID that must be looked up through list `a->set`:
 * pending, with its lookup queued (not awaited: the job records its
 * outcome, in the build ID's record or the list's failure table, which a
 * later check reads) while *lookups and the checks' share of the budget
 * last, and not before `not_before` (wall clock).
 */
static void queue_lookup(struct debuginfo *s, struct answer *a, unsigned *lookups,
			 int64_t not_before, const char *fetching)
{
	int admitted;

	a->status = DEBUGINFO_STATUS_PENDING;
	copy_cut(a->reason, sizeof(a->reason), fetching);
	if (debuginfo__job_exists_set(s, a->id, a->set))
		return;
	pthread_mutex_lock(&s->unsym.mu);
	admitted = *lookups && not_before <= clock_wall_ns() && lookup_admit(&s->unsym);
	pthread_mutex_unlock(&s->unsym.mu);
	if (!admitted) {
		copy_cut(a->reason, sizeof(a->reason), "waiting for its turn to be looked up");
		return;
	}
	--*lookups;
	debuginfo__job_await_set(s, a->id, a->set, 0);
}

/*
 * check_one for a tenant's own upstream list: a file the tenant may see is
 * judged by its record, a failure through its list holds until its retry
 * time, no upstream means not found, else the list's lookup is queued.
 */
static void check_one_tenant(struct debuginfo *s, struct answer *a, unsigned *lookups)
{
	const struct debuginfo__uset *u = debuginfo__uset_get(s, a->set);
	struct debuginfo__meta m;
	struct debuginfo__tfail f;
	int failed, limited;

	a->reason[0] = '\0';
	if (!u) {
		a->status = DEBUGINFO_STATUS_PENDING;
		return;
	}
	if (!debuginfo__meta_get(s, a->id, &m) && debuginfo__visible(&m, u->owner)) {
		a->status = m.status == DEBUGINFO_STATUS_PENDING ? DEBUGINFO_STATUS_OK : m.status;
		if (a->status != DEBUGINFO_STATUS_OK)
			copy_cut(a->reason, sizeof(a->reason), m.reason);
		return;
	}
	if (!u->n) {
		a->status = DEBUGINFO_STATUS_NOT_FOUND;
		copy_cut(a->reason, sizeof(a->reason),
			 "not uploaded (unhex upload), and this tenant has no debuginfod upstream "
			 "(limits file: debuginfod_urls)");
		return;
	}
	failed = debuginfo__tfail_get(s, a->set, a->id, &f);
	limited = failed && !strncmp(f.reason, DEBUGINFO__LIMITED, strlen(DEBUGINFO__LIMITED));
	if (failed && !limited && f.retry_at > clock_wall_ns()) {
		a->status = f.status;
		copy_cut(a->reason, sizeof(a->reason), f.reason);
		return;
	}
	queue_lookup(s, a, lookups, limited ? f.retry_at : 0,
		     "fetching from this tenant's debuginfod upstreams");
}

/*
 * Decides where the debug info of `a->id` stands: a stored file (a
 * kernel's symbol map too) is ok
 * unless its record says it is unusable; without one, a recorded failure
 * holds until its retry time (the not-found cache), no upstream means not
 * found, and otherwise an upstream lookup is queued (while *lookups and
 * the checks' share of fetch_per_minute last) and the answer is pending
 * until the job recorded its outcome.  A fetch the budget refused is no
 * answer: the build ID was not looked up.  A tenant with upstreams of
 * its own is judged through them (check_one_tenant).
 */
static void check_one(struct debuginfo *s, struct answer *a, unsigned *lookups)
{
	struct debuginfo__meta m;
	int have_meta, limited, failed, have_file, bucket;

	if (a->set) {
		check_one_tenant(s, a, lookups);
		return;
	}
	have_meta = debuginfo__meta_get(s, a->id, &m) == 0;
	limited = have_meta && !strncmp(m.reason, DEBUGINFO__LIMITED, strlen(DEBUGINFO__LIMITED));
	failed = have_meta && !limited && m.status != DEBUGINFO_STATUS_OK &&
		 m.status != DEBUGINFO_STATUS_PENDING && m.status < DEBUGINFO_STATUS_COUNT;
	have_file = debuginfo__has_file(s, a->id);
	/* Another server may have stored it since the bucket last missed. */
	bucket = !have_file && debuginfo__bucket_due(s, a->id);
	a->reason[0] = '\0';
	if (failed && (have_file || !s->upstream || m.retry_at > clock_wall_ns()) && !bucket) {
		a->status = m.status;
		copy_cut(a->reason, sizeof(a->reason), m.reason);
		return;
	}
	if (have_file) {
		a->status = DEBUGINFO_STATUS_OK;
		return;
	}
	if (!s->upstream && !bucket) {
		a->status = DEBUGINFO_STATUS_NOT_FOUND;
		copy_cut(a->reason, sizeof(a->reason),
			 s->os ? DEBUGINFO__NOT_IN_BUCKET
			       : "not uploaded (unhex upload), and no debuginfod upstream is configured");
		return;
	}
	queue_lookup(s, a, lookups, limited ? m.retry_at : 0,
		     s->upstream ? "fetching from debuginfod" : "looking in the bucket");
}

static int cmp_answer(const void *a, const void *b)
{
	const struct answer *x = a, *y = b;

	if (x->set != y->set)
		return x->set < y->set ? -1 : 1;
	return strcmp(x->id, y->id);
}

static struct answer *find_answer(struct answer *v, size_t n, const char *id, unsigned set)
{
	struct answer key;

	memcpy(key.id, id, sizeof(key.id));
	key.set = set;
	return bsearch(&key, v, n, sizeof(*v), cmp_answer);
}

/* Must hold u->mu.  Drops entries idle for a day and rebuilds the index. */
static void forget_idle(struct debuginfo__unsym *u, int64_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < u->n; i++)
		if (now - u->e[i].last_seen < u->idle_ns)
			u->e[k++] = u->e[i];
	if (k == u->n)
		return;
	u->n = k;
	hmap_clear(&u->index);
	for (size_t i = 0; i < u->n; i++)
		hmap_put(&u->index, u->e[i].hash, (uint32_t)i); /* fits: n only shrank */
}

/* Must hold u->mu.  Gives the entries their answers, and counts what waited. */
static void apply_answers(struct debuginfo *s, struct answer *v, size_t k)
{
	struct debuginfo__unsym *u = &s->unsym;

	for (size_t i = 0; i < u->n; i++) {
		struct debuginfo__unsym_entry *e = &u->e[i];
		struct answer *a = e->build_id[0] ? find_answer(v, k, e->build_id,
								debuginfo__tenant_set(s, e->tenant))
						  : NULL;

		/* No answer: new since the copy, or a lookup under way, during
		 * which a known status stands. */
		if (!a || a->status == DEBUGINFO_STATUS_PENDING)
			continue;
		e->status = a->status;
		copy_cut(e->reason, sizeof(e->reason), a->reason);
		count(u, e, e->pending_profiles, e->pending_samples);
		e->pending_profiles = e->pending_samples = 0;
	}
}

/* Must hold u->mu.  The gauge: each binary once, as its entries stand now. */
static void gauge(struct debuginfo *s, struct answer *v, size_t k)
{
	struct debuginfo__unsym *u = &s->unsym;

	memset(u->gauge, 0, sizeof(u->gauge));
	for (size_t i = 0; i < u->n; i++) {
		struct debuginfo__unsym_entry *e = &u->e[i];
		struct answer *a = e->build_id[0] ? find_answer(v, k, e->build_id,
								debuginfo__tenant_set(s, e->tenant))
						  : NULL;

		if (e->status == DEBUGINFO_STATUS_PENDING || (a && a->counted))
			continue;
		if (a)
			a->counted = 1;
		u->gauge[e->status]++;
	}
	u->gauge[DEBUGINFO_STATUS_OK] = 0;
}

/* One check; returns how many build IDs still wait for an answer. */
static size_t check(struct debuginfo *s)
{
	struct debuginfo__unsym *u = &s->unsym;
	struct answer *v = NULL;
	unsigned lookups = DEBUGINFO_UNSYM_LOOKUPS;
	size_t n = 0, k = 0, waiting = 0;

	pthread_mutex_lock(&u->pass_mu);
	pthread_mutex_lock(&u->mu);
	forget_idle(u, clock_wall_ns());
	if (u->n)
		v = malloc(u->n * sizeof(*v));
	for (size_t i = 0; v && i < u->n; i++)
		if (u->e[i].build_id[0]) {
			memcpy(v[n].id, u->e[i].build_id, DEBUGINFO_HEX_MAX);
			v[n].set = debuginfo__tenant_set(s, u->e[i].tenant);
			v[n].counted = 0;
			v[n++].fresh = u->e[i].status == DEBUGINFO_STATUS_PENDING;
		}
	pthread_mutex_unlock(&u->mu);
	if (n) {
		qsort(v, n, sizeof(*v), cmp_answer);
		for (size_t i = 0; i < n; i++) {
			if (k && !cmp_answer(&v[k - 1], &v[i]))
				v[k - 1].fresh |= v[i].fresh;
			else
				v[k++] = v[i];
		}
	}
	/* Build IDs waiting for their first answer get the lookups first. */
	for (int fresh = 1; fresh >= 0; fresh--)
		for (size_t i = 0; i < k; i++)
			if (v[i].fresh == fresh)
				check_one(s, &v[i], &lookups);
	pthread_mutex_lock(&u->mu);
	apply_answers(s, v, k);
	gauge(s, v, k);
	for (size_t i = 0; i < k; i++)
		waiting += v[i].status == DEBUGINFO_STATUS_PENDING;
	u->checks++;
	pthread_mutex_unlock(&u->mu);
	pthread_mutex_unlock(&u->pass_mu);
	free(v);
	return waiting;
}

void debuginfo_unsym_check(struct debuginfo *s)
{
	check(s);
}

/* ---- the thread, and what it counted ---- */

static void wait_until(struct debuginfo__unsym *u, int64_t at_mono, int for_wake)
{
	while (!u->stop && !(for_wake && u->wake) && clock_mono_ns() < at_mono)
		thread_wait_until(&u->cv, &u->mu, at_mono);
}

static void *unsym_main(void *arg)
{
	struct debuginfo *s = arg;
	struct debuginfo__unsym *u = &s->unsym;
	int64_t next = u->interval_ns;

	pthread_mutex_lock(&u->mu);
	while (!u->stop) {
		size_t waiting;

		wait_until(u, clock_mono_ns() + next, 1);
		if (u->stop)
			break;
		u->wake = 0;
		pthread_mutex_unlock(&u->mu);
		waiting = check(s);
		pthread_mutex_lock(&u->mu);
		/* Answers still to come (a fetch, a lookup's turn) are read again
		 * soon, not a whole interval later. */
		next = waiting && u->interval_ns > DEBUGINFO__UNSYM_SOON_NS ? DEBUGINFO__UNSYM_SOON_NS
									    : u->interval_ns;
		/* A burst of new binaries is checked together, not one by one. */
		wait_until(u, clock_mono_ns() + DEBUGINFO__UNSYM_GAP_NS, 0);
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

int debuginfo__unsym_start(struct debuginfo *s)
{
	if (pthread_create(&s->unsym.thread, NULL, unsym_main, s) != 0)
		return ERR_UNAVAILABLE;
	s->unsym.started = 1;
	return 0;
}

void debuginfo__unsym_stop(struct debuginfo *s)
{
	struct debuginfo__unsym *u = &s->unsym;

	if (!u->started)
		return;
	thread_stop(u->thread, &u->mu, &u->cv, &u->stop);
	u->started = 0;
}

void debuginfo__unsym_wake(struct debuginfo *s)
{
	struct debuginfo__unsym *u = &s->unsym;

	pthread_mutex_lock(&u->mu);
	u->wake = 1;
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->mu);
}

static int each_row(struct debuginfo__unsym *u, size_t i, debuginfo_unsym_row_fn fn, void *ctx)
{
	struct debuginfo__unsym_row *r = &u->rows[i];
	struct debuginfo_unsym_row out;

	out.tenant = r->tenant;
	out.service = r->service;
	memcpy(out.profiles, r->profiles, sizeof(out.profiles));
	memcpy(out.samples, r->samples, sizeof(out.samples));
	return fn(ctx, &out);
}

int debuginfo_unsym_each(struct debuginfo *s, const char *tenant, debuginfo_unsym_row_fn row_fn,
			 debuginfo_unsym_entry_fn entry_fn, void *ctx)
{
	struct debuginfo__unsym *u = &s->unsym;
	int rc = 0;

	pthread_mutex_lock(&u->mu);
	for (size_t i = 0; row_fn && i < u->n_rows && !rc; i++)
		if (!tenant || !strcmp(u->rows[i].tenant, tenant))
			rc = each_row(u, i, row_fn, ctx);
	if (row_fn && !rc && u->overflow_row && !tenant)
		rc = each_row(u, u->max_rows, row_fn, ctx);
	for (size_t i = 0; entry_fn && i < u->n && !rc; i++) {
		const struct debuginfo__unsym_entry *e = &u->e[i];
		struct debuginfo_unsym_entry out;

		if (tenant && strcmp(e->tenant, tenant))
			continue;
		out.tenant = e->tenant;
		out.service = e->service;
		out.build_id = e->build_id;
		out.binary = e->binary;
		out.status = e->status;
		out.reason = e->reason;
		out.profiles = e->profiles;
		out.samples = e->samples;
		out.first_seen_ns = e->first_seen;
		out.last_seen_ns = e->last_seen;
		rc = entry_fn(ctx, &out);
	}
	pthread_mutex_unlock(&u->mu);
	return rc;
}

void debuginfo_unsym_stats(struct debuginfo *s, struct debuginfo_unsym_stats *out)
{
	struct debuginfo__unsym *u = &s->unsym;

	pthread_mutex_lock(&u->mu);
	memcpy(out->build_ids, u->gauge, sizeof(out->build_ids));
	out->entries = u->n;
	out->max_entries = u->max;
	out->untracked_profiles = u->untracked;
	out->lookups = u->lookups;
	out->checks = u->checks;
	pthread_mutex_unlock(&u->mu);
}
