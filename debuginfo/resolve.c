/*
 * resolve.c - resolution for the query path: the persisted cache first,
 * then the open index of the build ID, queuing its fetch or build and
 * waiting for it until the query's deadline, and caching what was
 * resolved.  Also the address rule that turns a profile's file offsets
 * into ELF virtual addresses.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"
#include "debuginfo_int.h"

#define PAGE 4096u /* the kernel maps segments page-aligned */

/*
 * The ELF virtual address of a file offset (docs/symbolization.md, "The
 * address rule"), as the profile gives it: a caller's is its return
 * address, which sym_index_lookup_caller resolves.  With the executable's
 * program headers: the PT_LOAD that holds the offset.  With only a .debug
 * file, whose p_offset values objcopy rewrote: the kernel maps segments
 * page-aligned, so the segment the profile mapping maps had p_offset =
 * mapping.file_offset + p_vaddr % page; the executable segment that holds
 * the offset under that rule wins.
 */
static int to_vaddr(const struct debuginfo__open_index *e,
		    const struct debuginfo_mapping_ref *map, const struct debuginfo_addr_req *r,
		    uint64_t *vaddr)
{
	const struct sym_elf_info *l = &e->layout;
	uint64_t span = 0;
	size_t best = SIZE_MAX;

	/* A kernel symbol map's index holds offsets from _text, where the
	 * kernel's mapping starts (perf: [kernel.kallsyms]_text): the stored
	 * address minus the mapping's file offset is that offset, whatever
	 * KASLR slid the kernel by. */
	if (e->kernel_map) {
		if (r->addr < map->file_offset)
			return ERR_NOT_FOUND;
		*vaddr = r->addr - map->file_offset;
		return 0;
	}
	if (map->addr_is_vaddr) {
		*vaddr = r->addr;
		return 0;
	}
	if (!(l->flags & SYM_SEGMENTS_FROM_DEBUG))
		return sym_addr_to_vaddr(l, r->addr, 0, vaddr);
	if (map->memory_limit > map->memory_start)
		span = map->memory_limit - map->memory_start;
	for (int pass = 0; pass < 2 && best == SIZE_MAX; pass++)
		for (size_t i = 0; i < l->n_segments; i++) {
			const struct sym_segment *g = &l->segments[i];
			uint64_t off = map->file_offset + g->vaddr % PAGE;

			if (pass == 0 && !(g->flags & 1))
				continue;
			if (r->addr < off || r->addr - off >= g->memsz)
				continue;
			if (best == SIZE_MAX ||
			    (span && ((g->memsz + g->vaddr % PAGE + PAGE - 1) / PAGE * PAGE) == span))
				best = i;
		}
	if (best == SIZE_MAX)
		return ERR_NOT_FOUND;
	*vaddr = r->addr - (map->file_offset + l->segments[best].vaddr % PAGE) +
		 l->segments[best].vaddr;
	return 0;
}

/*
 * The frames of one request.  A leaf PC is looked up as it is; so is every
 * address of an OTLP mapping (ELF vaddrs), whose sender (the OpenTelemetry
 * eBPF profiler) already moved each return address into its call
 * instruction.  Other callers go through the caller rule
 * (sym_index_lookup_caller): ret - 1, or ret itself at the first byte of a
 * function that ret - 1 cannot have called from.
 */
static void lookup(const struct sym_index *idx, const struct debuginfo_mapping_ref *map,
		   const struct debuginfo_addr_req *r, uint64_t vaddr, struct sym_frame *f,
		   size_t *nf)
{
	if (r->leaf || map->addr_is_vaddr)
		sym_index_lookup(idx, vaddr, f, SYM_MAX_FRAMES, nf);
	else
		sym_index_lookup_caller(idx, vaddr, f, SYM_MAX_FRAMES, nf);
}

/* Resolves the cache misses of a batch through the index and caches them. */
static int resolve_misses(struct debuginfo *s, struct debuginfo__open_index *e,
			  const uint8_t *bid, size_t blen, const struct debuginfo_mapping_ref *map,
			  const struct debuginfo_addr_req *reqs, size_t n, const uint8_t *missing,
			  sym_frames_fn fn, void *ctx)
{
	struct debuginfo__symcache_writer w;
	int rc = debuginfo__symcache_writer_init(&w, s, bid, blen);

	for (size_t i = 0; i < n && !rc; i++) {
		struct sym_frame f[SYM_MAX_FRAMES];
		size_t nf = 0;
		uint64_t vaddr = 0;

		if (!missing[i])
			continue;
		if (!to_vaddr(e, map, &reqs[i], &vaddr))
			lookup(e->idx, map, &reqs[i], vaddr, f, &nf);
		rc = fn(ctx, i, vaddr, f, nf);
		if (!rc)
			rc = debuginfo__symcache_add(&w, &reqs[i], f, nf);
	}
	if (!rc)
		rc = debuginfo__symcache_flush(&w);
	debuginfo__symcache_writer_release(&w);
	return rc;
}

/*
 * Whether asker `a` (NULL: no budget) may start the upstream lookup of
 * `id`: 1, taking it from the query's and the tenant's budgets, when no
 * job for `id` exists (joining one costs nothing); else 0 with why.
 */
static int may_look_up(struct debuginfo *s, struct debuginfo_asker *a, const char *id,
		       unsigned set, enum debuginfo_status *status, char *reason, size_t rlen)
{
	char text[160];

	if (!a || debuginfo__job_exists_set(s, id, set))
		return 1;
	if (!a->fetches_left)
		snprintf(text, sizeof(text),
			 "not looked up yet: one query starts at most %u upstream lookups; "
			 "the next query asks",
			 DEBUGINFO_QUERY_FETCHES);
	else if (a->tenant && debuginfo__tenant_admit(s, a->tenant))
		snprintf(text, sizeof(text),
			 "not looked up yet: this tenant's queries start at most %lld upstream "
			 "lookups a minute; a later query asks",
			 (long long)(60000000000LL / s->tenant_interval_ns));
	else {
		a->fetches_left--;
		return 1;
	}
	atomic_fetch_add(&s->fetches_deferred, 1);
	*status = DEBUGINFO_STATUS_PENDING;
	debuginfo__copy_reason(reason, rlen, text);
	return 0;
}

/*
 * 1 when looking `id` up would fail without trying anything: a failure
 * recorded stands until its retry time, or there is no file and nowhere to
 * get one.  *status and reason then say why.  `attempt` > 0 after a fetch
 * or build was awaited.
 */
static int settled_miss(struct debuginfo *s, const char *id, int attempt,
			enum debuginfo_status *status, char *reason, size_t rlen)
{
	struct debuginfo__meta m;
	int have_meta = debuginfo__meta_get(s, id, &m) == 0;
	int have_file = debuginfo__has_file(s, id);

	/* A build ID without a file is looked for in the bucket again once
	 * its last miss there is miss_ttl old: another server may have it. */
	if (have_meta && m.status != DEBUGINFO_STATUS_OK && m.status != DEBUGINFO_STATUS_PENDING &&
	    (m.retry_at > clock_wall_ns() || (!have_file && !s->upstream) || attempt) &&
	    (attempt || have_file || !debuginfo__bucket_due(s, id))) {
		*status = m.status;
		debuginfo__copy_reason(reason, rlen, m.reason);
		return 1;
	}
	if (!have_file && !s->upstream && !s->os) {
		*status = DEBUGINFO_STATUS_NOT_FOUND;
		debuginfo__copy_reason(reason, rlen,
				       "not uploaded (unhex upload), and no debuginfod "
				       "upstream is configured");
		/* Recorded once, so GET /api/v1/debuginfo and the build-ID gauge
		 * list what queries need; no retry time, so a restart with an
		 * upstream fetches it at once. */
		if (!have_meta)
			debuginfo__meta_fail(s, id, DEBUGINFO_SOURCE_NONE, DEBUGINFO_STATUS_NOT_FOUND,
					     0, reason);
		return 1;
	}
	return 0;
}

/*
 * Gets the open index of `id`, queuing a fetch or build and waiting for it
 * until the deadline; a fetch only as asker `a` may (may_look_up).  On
 * failure *status/reason say why.
 */
static int acquire_index(struct debuginfo *s, struct debuginfo_asker *a, const char *id,
			 const uint8_t *bid, size_t blen, int64_t deadline,
			 struct debuginfo__open_index **out, enum debuginfo_status *status,
			 char *reason, size_t rlen)
{
	int had_file = 1;

	for (int attempt = 0; attempt < 2; attempt++) {
		int have_file, waited;

		if (!debuginfo__lru_acquire(s, id, bid, blen, out))
			return 0;
		if (settled_miss(s, id, attempt, status, reason, rlen))
			return ERR_NOT_FOUND;
		have_file = debuginfo__has_file(s, id);
		/* The file arrived (an upload) while a fetch was awaited: no
		 * one has tried to build its index yet, so this round waits
		 * for a build as a first one would.  Once: had_file is now 1. */
		if (attempt && have_file && !had_file)
			attempt = 0;
		had_file = have_file;
		if (attempt) {
			*status = have_file ? DEBUGINFO_STATUS_INVALID_ELF : DEBUGINFO_STATUS_NOT_FOUND;
			debuginfo__copy_reason(reason, rlen, have_file ? "the index could not be built"
							     : "the fetch found nothing");
			return ERR_NOT_FOUND;
		}
		if (!have_file && s->upstream && !may_look_up(s, a, id, 0, status, reason, rlen))
			return ERR_TIMEOUT;
		waited = debuginfo__job_await(s, id, deadline);
		if (waited == ERR_NOMEM)
			return ERR_NOMEM;
		if (waited) {
			*status = DEBUGINFO_STATUS_PENDING;
			debuginfo__copy_reason(reason, rlen, have_file ? "building the address index"
							     : s->upstream ? "fetching from debuginfod"
							     : "fetching from the bucket");
			return ERR_TIMEOUT;
		}
	}
	return ERR_NOT_FOUND;
}

/*
 * For a tenant with its own upstream list `set` (or DEBUGINFO__SET_SERVER,
 * a file of another tenant's on the server's list): 0 when the tenant may
 * see a file of `id`, else a lookup through its list is queued (as the
 * query's budgets allow) and awaited until the deadline; past it, or when
 * the list's lookup failed and is not due again, *status and reason say
 * why (ERR_TIMEOUT pending, ERR_NOT_FOUND, ERR_NOMEM).
 */
static int obtain_for_set(struct debuginfo *s, struct debuginfo_asker *a, unsigned set,
			  const char *id, int64_t deadline, enum debuginfo_status *status,
			  char *reason, size_t rlen)
{
	const struct debuginfo__uset *u = debuginfo__uset_get(s, set);
	struct debuginfo__meta m;
	struct debuginfo__tfail f;

	for (int attempt = 0; attempt < 2; attempt++) {
		int waited;

		if (!debuginfo__meta_get(s, id, &m) && debuginfo__visible(&m, a->tenant))
			return 0;
		if (!u || !u->n) {
			*status = DEBUGINFO_STATUS_NOT_FOUND;
			debuginfo__copy_reason(reason, rlen,
					       "not uploaded (unhex upload), and this tenant has no "
					       "debuginfod upstream (limits file: debuginfod_urls)");
			return ERR_NOT_FOUND;
		}
		if (debuginfo__tfail_get(s, set, id, &f) &&
		    (f.retry_at > clock_wall_ns() || attempt)) {
			*status = f.status;
			debuginfo__copy_reason(reason, rlen, f.reason);
			return ERR_NOT_FOUND;
		}
		if (attempt) {
			*status = DEBUGINFO_STATUS_NOT_FOUND;
			debuginfo__copy_reason(reason, rlen, "the fetch found nothing");
			return ERR_NOT_FOUND;
		}
		if (!may_look_up(s, a, id, set, status, reason, rlen))
			return ERR_TIMEOUT;
		waited = debuginfo__job_await_set(s, id, set, deadline);
		if (waited == ERR_NOMEM)
			return ERR_NOMEM;
		if (waited) {
			*status = DEBUGINFO_STATUS_PENDING;
			debuginfo__copy_reason(reason, rlen,
					       set == DEBUGINFO__SET_SERVER
						       ? "fetching from debuginfod"
						       : "fetching from this tenant's debuginfod "
							 "upstreams");
			return ERR_TIMEOUT;
		}
	}
	return ERR_NOT_FOUND;
}

int debuginfo_resolve(struct debuginfo *s, const char *build_id_hex,
		      const struct debuginfo_mapping_ref *map,
		      const struct debuginfo_addr_req *reqs, size_t n, int64_t deadline_ns,
		      sym_frames_fn fn, void *ctx, enum debuginfo_status *status, char *reason,
		      size_t reason_len)
{
	return debuginfo_resolve_as(s, NULL, build_id_hex, map, reqs, n, deadline_ns, fn, ctx,
				    status, reason, reason_len);
}

/*
 * 1 when `tenant` may not use the file of `id`: it has one, another's;
 * *fetched says whether that file came from a tenant's own upstreams.
 */
static int hidden_from(struct debuginfo *s, const char *tenant, const char *id, int *fetched)
{
	struct debuginfo__meta m;

	if (!tenant || debuginfo__meta_get(s, id, &m) || !m.kinds ||
	    debuginfo__visible(&m, tenant))
		return 0;
	*fetched = m.source == DEBUGINFO_SOURCE_DEBUGINFOD;
	return 1;
}

/*
 * What debuginfo_resolve_as answers before it looks at any address: a
 * build ID that is not hex, no address asked, a tenant whose symbolization
 * is off.  Returns 1 when answered (*status, reason set), else 0 with the
 * canonical id in id/bid/blen.
 */
static int answered_first(struct debuginfo *s, struct debuginfo_asker *a, const char *build_id_hex,
			  size_t n, char id[DEBUGINFO_HEX_MAX], uint8_t bid[SYM_BUILD_ID_MAX],
			  size_t *blen, enum debuginfo_status *status, char *reason,
			  size_t reason_len)
{
	*status = DEBUGINFO_STATUS_OK;
	debuginfo__copy_reason(reason, reason_len, "");
	if (debuginfo__canon_id(build_id_hex, id, bid, blen)) {
		*status = DEBUGINFO_STATUS_NO_BUILD_ID;
		debuginfo__copy_reason(reason, reason_len, "the mapping's build ID is not hex");
		return 1;
	}
	if (!n)
		return 1;
	if (a && !debuginfo_tenant_symbolizes(s, a->tenant)) {
		*status = DEBUGINFO_STATUS_DISABLED;
		debuginfo__copy_reason(reason, reason_len, DEBUGINFO_DISABLED_REASON);
		return 1;
	}
	return 0;
}

/* A settled miss answers n addresses at once, each a cache miss. */
static int settled_for(struct debuginfo *s, const char *id, size_t n,
		       enum debuginfo_status *status, char *reason, size_t reason_len)
{
	if (!settled_miss(s, id, 0, status, reason, reason_len))
		return 0;
	atomic_fetch_add(&s->cache_misses, n);
	return 1;
}

int debuginfo_resolve_settled(struct debuginfo *s, struct debuginfo_asker *a,
			      const char *build_id_hex, size_t n, enum debuginfo_status *status,
			      char *reason, size_t reason_len)
{
	uint8_t bid[SYM_BUILD_ID_MAX];
	char id[DEBUGINFO_HEX_MAX];
	size_t blen;
	int fetched = 0;

	assert(s && status && (reason || reason_len == 0));
	if (answered_first(s, a, build_id_hex, n, id, bid, &blen, status, reason, reason_len))
		return 1;
	/* A tenant's own upstreams, or a file it may not see: the whole way. */
	if (a && (debuginfo__tenant_set(s, a->tenant) || hidden_from(s, a->tenant, id, &fetched)))
		return 0;
	return settled_for(s, id, n, status, reason, reason_len);
}

int debuginfo_resolve_as(struct debuginfo *s, struct debuginfo_asker *a,
			 const char *build_id_hex, const struct debuginfo_mapping_ref *map,
			 const struct debuginfo_addr_req *reqs, size_t n, int64_t deadline_ns,
			 sym_frames_fn fn, void *ctx, enum debuginfo_status *status,
			 char *reason, size_t reason_len)
{
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t blen, n_missing = 0;
	char id[DEBUGINFO_HEX_MAX];
	struct debuginfo__open_index *e = NULL;
	uint8_t *missing;
	unsigned set;
	int fetched = 0, rc;

	assert(s && map && (reqs || n == 0) && fn && status && (reason || reason_len == 0));
	if (answered_first(s, a, build_id_hex, n, id, bid, &blen, status, reason, reason_len))
		return 0;
	set = a ? debuginfo__tenant_set(s, a->tenant) : 0;
	/* Before the cache: frames cached from A's file are A's too.  A
	 * tenant with upstreams of its own asks them for what it may not see. */
	if (set) {
		rc = obtain_for_set(s, a, set, id, deadline_ns, status, reason, reason_len);
		if (rc)
			return rc == ERR_NOMEM ? rc : 0;
	} else if (a && hidden_from(s, a->tenant, id, &fetched)) {
		/* Another tenant's upload is never looked up for others.  What
		 * another tenant's upstreams served, the server's may serve
		 * too: as for a build ID nobody has, they are asked, and the
		 * same bytes then are everyone's. */
		if (!s->upstream || !fetched) {
			*status = DEBUGINFO_STATUS_NOT_FOUND;
			debuginfo__copy_reason(reason, reason_len, "not uploaded (unhex upload)");
			return 0;
		}
		rc = obtain_for_set(s, a, DEBUGINFO__SET_SERVER, id, deadline_ns, status, reason,
				    reason_len);
		if (rc)
			return rc == ERR_NOMEM ? rc : 0;
	}
	/* The cache holds only what a file resolved, and is dropped with the
	 * file: a build ID that settled as missing has nothing there, and its
	 * addresses are not looked up one by one (each render of a stripped
	 * binary without debug info asked the cache for all of them). */
	if (settled_for(s, id, n, status, reason, reason_len))
		return 0;
	missing = calloc(n, 1);
	if (!missing)
		return ERR_NOMEM;
	rc = debuginfo__symcache_lookup(s, bid, blen, reqs, n, fn, ctx, missing, &n_missing);
	if (rc)
		goto out;
	atomic_fetch_add(&s->cache_hits, n - n_missing);
	atomic_fetch_add(&s->cache_misses, n_missing);
	if (!n_missing)
		goto out;
	rc = acquire_index(s, a, id, bid, blen, deadline_ns, &e, status, reason, reason_len);
	if (rc) {
		rc = rc == ERR_NOMEM ? rc : 0;
		goto out;
	}
	/* The job may have brought another tenant's own file from the
	 * bucket (bucket.c): it answers only its owners. */
	if (a && hidden_from(s, a->tenant, id, &fetched)) {
		debuginfo__lru_unref(s, e);
		*status = DEBUGINFO_STATUS_NOT_FOUND;
		debuginfo__copy_reason(reason, reason_len, "not uploaded (unhex upload)");
		goto out;
	}
	rc = resolve_misses(s, e, bid, blen, map, reqs, n, missing, fn, ctx);
	debuginfo__lru_unref(s, e);
out:
	free(missing);
	return rc;
}

void debuginfo_note_unresolved(struct debuginfo *s, enum debuginfo_status status, uint64_t n)
{
	if ((unsigned)status < DEBUGINFO_STATUS_COUNT && n)
		atomic_fetch_add(&s->unresolved[status], n);
}
