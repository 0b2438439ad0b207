/*
 * symmemo.c - the symbolization memo: the frames each (tenant, partition,
 * location, leafness) resolved to, kept across queries.
 *
 * Symbol ids never change once committed, and a location's answer depends
 * only on its mapping's build ID and address, so a location resolved once
 * keeps its frames until the service reports that some debug info was
 * replaced (debuginfo_generation moved).  A repeated query then finds its
 * frames by two array indexes instead of hashing, looking up and decoding
 * every address again.
 *
 * Layout: one *generation* holds everything: per tenant, per partition
 * (found by a hash of its id: the ids of the head's partitions are small,
 * those of blocks start at STORE_BLOCK_PART_MIN, 2^31, and a query of a
 * long store reads dozens of blocks),
 * two arrays indexed by location id (return-address and leaf answers) of
 * {frames, count, set}; the frames live in the generation's arena and
 * their strings in its base/intern.h interner (a function has many
 * addresses).  A generation is never
 * modified in place except by appending, and is replaced whole when the
 * debug info changed or it reached its byte cap; queries hold a reference
 * to the generation they read, so frames they point at stay valid until
 * they finish.  One rwlock guards the arrays (which grow by realloc).
 */
#include "query_int.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "base/intern.h"
#include "debuginfo/debuginfo.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct memo_ent {
	const struct qsym_frame *f;
	uint32_t n;
	uint32_t set;
};

struct qmemo_part {
	struct memo_ent *ent[2]; /* [leaf] by location id */
	uint32_t cap[2];
};

struct qmemo_tenant {
	char *name;
	struct qmemo_part *parts; /* dense, in the order first stored */
	uint32_t *ids;           /* partition id of parts[i] */
	uint32_t n_parts, cap_parts;
	struct hmap ix;          /* hash_u64(partition id) -> i */
};

struct qmemo_gen {
	atomic_int refs;
	uint64_t svc_gen;
	struct arena a;            /* frames; capped */
	size_t array_bytes;        /* entry, partition and tenant arrays */
	struct qmemo_tenant *tenants;
	size_t n_tenants;
	struct intern strs;        /* function and file names, each stored once */
	size_t max_bytes;
	int full;                  /* a store failed: the next writer starts over */
};

struct query_symmemo {
	pthread_rwlock_t lock;
	struct debuginfo *svc;
	struct qmemo_gen *cur;
	size_t max_bytes;
	atomic_uint_fast64_t hits, stored, resets;
};

static struct qmemo_gen *gen_new(uint64_t svc_gen, size_t max_bytes)
{
	struct qmemo_gen *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	atomic_init(&g->refs, 1);
	g->svc_gen = svc_gen;
	g->max_bytes = max_bytes;
	arena_init(&g->a, max_bytes);
	intern_init(&g->strs, HMAP_MAX, max_bytes, NULL);
	return g;
}

static void gen_unref(struct qmemo_gen *g)
{
	if (!g || atomic_fetch_sub(&g->refs, 1) != 1)
		return;
	for (size_t i = 0; i < g->n_tenants; i++) {
		struct qmemo_tenant *t = &g->tenants[i];

		for (uint32_t p = 0; p < t->n_parts; p++) {
			free(t->parts[p].ent[0]);
			free(t->parts[p].ent[1]);
		}
		free(t->parts);
		free(t->ids);
		hmap_release(&t->ix);
		free(t->name);
	}
	free(g->tenants);
	intern_release(&g->strs);
	arena_release(&g->a);
	free(g);
}

static size_t gen_bytes(const struct qmemo_gen *g)
{
	return g->a.used + g->array_bytes + intern_bytes(&g->strs);
}

int query_symmemo_new(struct debuginfo *svc, size_t max_bytes, struct query_symmemo **out)
{
	struct query_symmemo *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return ERR_NOMEM;
	m->svc = svc;
	m->max_bytes = max_bytes ? max_bytes : QUERY_DEFAULT_SYMMEMO_BYTES;
	m->cur = gen_new(debuginfo_generation(svc), m->max_bytes);
	if (!m->cur || pthread_rwlock_init(&m->lock, NULL)) {
		gen_unref(m->cur);
		free(m);
		return ERR_NOMEM;
	}
	*out = m;
	return 0;
}

void query_symmemo_free(struct query_symmemo *m)
{
	if (!m)
		return;
	gen_unref(m->cur);
	pthread_rwlock_destroy(&m->lock);
	free(m);
}

int query_symmemo_metrics(struct query_symmemo *m, struct buf *out)
{
	size_t bytes;

	pthread_rwlock_rdlock(&m->lock);
	bytes = gen_bytes(m->cur);
	pthread_rwlock_unlock(&m->lock);
	return buf_printf(out,
			  "# HELP unhex_symbolize_memo_lookups_total Query locations answered by "
			  "the symbolization memo.\n"
			  "# TYPE unhex_symbolize_memo_lookups_total counter\n"
			  "unhex_symbolize_memo_lookups_total{result=\"hit\"} %llu\n"
			  "unhex_symbolize_memo_lookups_total{result=\"stored\"} %llu\n"
			  "# HELP unhex_symbolize_memo_resets_total Times the memo was emptied "
			  "(debug info replaced, or full).\n"
			  "# TYPE unhex_symbolize_memo_resets_total counter\n"
			  "unhex_symbolize_memo_resets_total %llu\n"
			  "# HELP unhex_symbolize_memo_bytes Memory held by the symbolization memo.\n"
			  "# TYPE unhex_symbolize_memo_bytes gauge\n"
			  "unhex_symbolize_memo_bytes %zu\n",
			  (unsigned long long)atomic_load(&m->hits),
			  (unsigned long long)atomic_load(&m->stored),
			  (unsigned long long)atomic_load(&m->resets), bytes);
}

/* Replaces the current generation (write lock held). */
static int reset_locked(struct query_symmemo *m, uint64_t svc_gen)
{
	struct qmemo_gen *g = gen_new(svc_gen, m->max_bytes);

	if (!g)
		return ERR_NOMEM;
	gen_unref(m->cur);
	m->cur = g;
	atomic_fetch_add(&m->resets, 1);
	return 0;
}

static const struct qmemo_tenant *find_tenant(const struct qmemo_gen *g, const char *tenant)
{
	for (size_t i = 0; i < g->n_tenants; i++)
		if (strcmp(g->tenants[i].name, tenant) == 0)
			return &g->tenants[i];
	return NULL;
}

void query__memo_begin(struct query_symmemo *m, const char *tenant, struct qmemo_view *v)
{
	uint64_t now;

	memset(v, 0, sizeof(v[0]));
	if (!m)
		return;
	v->m = m;
	now = debuginfo_generation(m->svc);
	v->svc_gen = now;
	pthread_rwlock_rdlock(&m->lock);
	if (m->cur->svc_gen != now) {
		pthread_rwlock_unlock(&m->lock);
		pthread_rwlock_wrlock(&m->lock);
		if (m->cur->svc_gen != now && reset_locked(m, now)) {
			pthread_rwlock_unlock(&m->lock);
			v->m = NULL; /* out of memory: this query goes without */
			return;
		}
		pthread_rwlock_unlock(&m->lock);
		pthread_rwlock_rdlock(&m->lock);
	}
	v->g = m->cur;
	atomic_fetch_add(&v->g->refs, 1);
	v->t = v->g->svc_gen == now ? find_tenant(v->g, tenant) : NULL;
	v->locked = 1;
}

/* The memo of partition `part`, or NULL (the lock held). */
static struct qmemo_part *find_part(const struct qmemo_tenant *t, uint32_t part)
{
	struct hmap_probe pr;

	for (uint32_t i = hmap_first(&t->ix, hash_u64(part), &pr); i != HMAP_NONE;
	     i = hmap_next(&t->ix, &pr))
		if (t->ids[i] == part)
			return &t->parts[i];
	return NULL;
}

int query__memo_get(struct qmemo_view *v, uint32_t part, uint32_t loc, int leaf,
	      const struct qsym_frame **f, uint32_t *n)
{
	const struct qmemo_part *p;
	const struct memo_ent *e;

	if (!v->t)
		return 0;
	/* Locations come grouped by partition: one lookup per group. */
	if (!v->last || v->last_part != part) {
		v->last = find_part(v->t, part);
		v->last_part = part;
	}
	if (!(p = v->last))
		return 0;
	if (loc >= p->cap[!!leaf] || !(e = &p->ent[!!leaf][loc])->set)
		return 0;
	*f = e->f;
	*n = e->n;
	v->hits++;
	return 1;
}

void query__memo_unlock(struct qmemo_view *v)
{
	if (!v->locked)
		return;
	v->t = NULL;
	v->last = NULL;
	v->locked = 0;
	pthread_rwlock_unlock(&v->m->lock);
	if (v->hits)
		atomic_fetch_add(&v->m->hits, v->hits);
	v->hits = 0;
}

void query__memo_end(struct qmemo_view *v)
{
	query__memo_unlock(v);
	gen_unref(v->g);
	memset(v, 0, sizeof(v[0]));
}

/* ---- storing ---------------------------------------------------------------- */

/*
 * Grows an array of `elem`-byte items to hold index `need`, zero-filled,
 * within the generation's byte cap.
 */
static int grow_zero(struct qmemo_gen *g, void **p, uint32_t *cap, size_t elem, uint32_t need)
{
	size_t ncap = *cap ? *cap : 64;
	void *np;

	while (ncap <= need)
		ncap *= 2;
	if (ncap > UINT32_MAX)
		ncap = (size_t)UINT32_MAX;
	if (ncap <= need || gen_bytes(g) + (ncap - *cap) * elem > g->max_bytes)
		return ERR_TOO_LARGE;
	np = realloc(*p, ncap * elem);
	if (!np)
		return ERR_NOMEM;
	memset((char *)np + (size_t)*cap * elem, 0, (ncap - *cap) * elem);
	g->array_bytes += (ncap - *cap) * elem;
	*p = np;
	*cap = (uint32_t)ncap;
	return 0;
}

/* The stored copy of a name (NUL-terminated), or NULL past a cap. */
static const char *intern(struct qmemo_gen *g, const char *s, size_t len)
{
	uint32_t id;

	if (intern_put(&g->strs, s, len, &id))
		return NULL;
	return intern_str(&g->strs, id);
}

static struct qmemo_tenant *tenant_for_put(struct qmemo_gen *g, const char *tenant)
{
	struct qmemo_tenant *t = (struct qmemo_tenant *)find_tenant(g, tenant), *nt;

	if (t)
		return t;
	nt = realloc(g->tenants, (g->n_tenants + 1) * sizeof(*nt));
	if (!nt)
		return NULL;
	g->tenants = nt;
	t = &nt[g->n_tenants];
	memset(t, 0, sizeof(*t));
	hmap_init(&t->ix, HMAP_MAX, NULL);
	if (!(t->name = strdup(tenant)))
		return NULL;
	g->array_bytes += sizeof(*t) + strlen(tenant) + 1;
	g->n_tenants++;
	return t;
}

void query__memo_put_begin(struct qmemo_view *v, const char *tenant)
{
	struct query_symmemo *m = v->m;

	v->put = NULL;
	if (!m)
		return;
	pthread_rwlock_wrlock(&m->lock);
	v->locked = 1;
	/* Frames resolved before a replacement must not outlive it. */
	if (debuginfo_generation(m->svc) != v->svc_gen || m->cur->svc_gen != v->svc_gen)
		return;
	if ((m->cur->full || gen_bytes(m->cur) >= m->max_bytes) && reset_locked(m, v->svc_gen))
		return;
	v->put = tenant_for_put(m->cur, tenant);
}

/* A new, empty memo for partition `part` of t, or NULL past the cap. */
static struct qmemo_part *add_part(struct qmemo_gen *g, struct qmemo_tenant *t, uint32_t part)
{
	struct hmap_probe pr;
	size_t ix_before = hmap_bytes(&t->ix);

	if (t->n_parts == t->cap_parts) {
		uint32_t cap = t->cap_parts, icap = t->cap_parts;

		if (grow_zero(g, (void **)&t->parts, &cap, sizeof(*t->parts), t->n_parts) ||
		    grow_zero(g, (void **)&t->ids, &icap, sizeof(*t->ids), t->n_parts))
			return NULL;
		t->cap_parts = cap < icap ? cap : icap;
	}
	/* find_part ended its probe where the id is missing: probe again to insert. */
	for (uint32_t i = hmap_first(&t->ix, hash_u64(part), &pr); i != HMAP_NONE;
	     i = hmap_next(&t->ix, &pr))
		;
	if (hmap_put_probed(&t->ix, &pr, t->n_parts))
		return NULL;
	g->array_bytes += hmap_bytes(&t->ix) - ix_before;
	t->ids[t->n_parts] = part;
	return &t->parts[t->n_parts++];
}

void query__memo_put(struct qmemo_view *v, uint32_t part, uint32_t loc, int leaf,
	       const struct qsym_frame *f, uint32_t n)
{
	struct qmemo_gen *g;
	struct qmemo_tenant *t = v->put;
	struct qsym_frame *copy = NULL;
	struct qmemo_part *p;
	struct memo_ent *e;

	if (!t)
		return;
	g = v->m->cur;
	if (gen_bytes(g) >= g->max_bytes)
		goto fail;
	if (!(p = find_part(t, part)) && !(p = add_part(g, t, part)))
		goto fail;
	if (loc >= p->cap[!!leaf] &&
	    grow_zero(g, (void **)&p->ent[!!leaf], &p->cap[!!leaf], sizeof(*p->ent[0]), loc))
		goto fail;
	e = &p->ent[!!leaf][loc];
	if (e->set)
		return;
	if (n) {
		if (!(copy = arena_alloc(&g->a, n * sizeof(*copy))))
			goto fail;
		for (uint32_t i = 0; i < n; i++) {
			copy[i] = f[i];
			copy[i].function = intern(g, f[i].function, f[i].function_len);
			if (!copy[i].function)
				goto fail;
			if (f[i].file && !(copy[i].file = intern(g, f[i].file, strlen(f[i].file))))
				goto fail;
		}
	}
	e->f = copy;
	e->n = n;
	e->set = 1;
	v->stored++;
	return;
fail:
	/* Out of memory or over the cap: stop storing; the next writer
	 * starts a new generation. */
	g->full = 1;
	v->put = NULL;
}

void query__memo_put_end(struct qmemo_view *v)
{
	v->put = NULL;
	if (v->locked) {
		v->locked = 0;
		pthread_rwlock_unlock(&v->m->lock);
	}
	if (v->m && v->stored) {
		atomic_fetch_add(&v->m->stored, v->stored);
		v->stored = 0;
	}
}
