/*
 * pprof_out.c - the merged profile as a pprof: one sample per distinct
 * (partition, stack), locations by address so mappings and build IDs survive
 * for `go tool pprof` and later symbolization; Connect's SelectMergeProfile
 * answers with the same message.
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "base/perfmap.h"
#include "storage/storage.h"

#include "profile.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__ValueType ValueType;

/* Growable pointer arrays in the arena (old copies stay until release). */
struct pvec {
	void **v;
	size_t n, cap;
};

static int pvec_push(struct arena *a, struct pvec *pv, void *item)
{
	if (pv->n == pv->cap) {
		size_t nc = pv->cap ? pv->cap * 2 : 64;
		void **nv = arena_alloc(a, nc * sizeof(*nv));

		if (!nv)
			return arena_failed(a) ? arena_failed(a) : ERR_NOMEM;
		if (pv->n)
			memcpy(nv, pv->v, pv->n * sizeof(*nv));
		pv->v = nv;
		pv->cap = nc;
	}
	pv->v[pv->n++] = item;
	return 0;
}

struct pb {
	struct qctx *q;
	struct arena *a;
	struct intern strs;   /* pprof string index = id + 1; index 0 is "" */
	struct qmap locs, funcs, maps;
	struct pvec samples, locations, functions, mappings;
	struct qviews views;
	uint64_t *ids;        /* scratch: location ids of one stack */
	size_t ids_cap;
	/* Query-time symbolization: resolved frames become Lines and
	 * Functions; a leaf may resolve differently from the same location
	 * as a caller, so leaves get their own Location when resolved. */
	const struct qsym *sym;
	struct qmap leaf_locs;
	struct intern fkeys;  /* "name\x01file" of resolved functions */
	struct qmap rfuncs;   /* fkeys id -> index in functions */
};

static int str_idx(struct pb *b, const char *s, int64_t *out)
{
	uint32_t id;
	int rc;

	if (!s || !s[0]) {
		*out = 0;
		return 0;
	}
	rc = query__names_intern(b->q, &b->strs, s, strlen(s), &id);
	if (!rc)
		*out = (int64_t)id + 1;
	return rc;
}

static void *nalloc(struct pb *b, size_t n)
{
	void *p = arena_calloc(b->a, 1, n);

	if (!p)
		err_set(b->q->msg, arena_failed(b->a) == ERR_TOO_LARGE ? ERR_TOO_LARGE : ERR_NOMEM,
			"pprof: query memory budget exceeded");
	return p;
}

static int get_mapping(struct pb *b, uint32_t part, struct store_symbols *sym, uint32_t id,
		       uint64_t *out, struct store_mapping *mp)
{
	uint64_t key = (uint64_t)part << 32 | id;
	uint32_t at;
	Mapping *m;
	int rc;

	if (store_symbols_mapping(sym, id, mp))
		return err_set(b->q->msg, ERR_CORRUPT, "partition %u: mapping %u not found", part, id);
	if (query__map_get(&b->maps, key, &at)) {
		*out = at + 1;
		return 0;
	}
	m = nalloc(b, sizeof(*m));
	if (!m)
		return ERR_TOO_LARGE;
	perftools__profiles__mapping__init(m);
	m->id = b->mappings.n + 1;
	m->memory_start = mp->memory_start;
	m->memory_limit = mp->memory_limit;
	m->file_offset = mp->file_offset;
	m->has_functions = !!(mp->flags & STORE_MAP_HAS_FUNCTIONS);
	m->has_filenames = !!(mp->flags & STORE_MAP_HAS_FILENAMES);
	m->has_line_numbers = !!(mp->flags & STORE_MAP_HAS_LINE_NUMBERS);
	m->has_inline_frames = !!(mp->flags & STORE_MAP_HAS_INLINE_FRAMES);
	if ((rc = str_idx(b, mp->filename, &m->filename)) ||
	    (rc = str_idx(b, mp->build_id, &m->build_id)) ||
	    (rc = query__map_put(b->q, &b->maps, key, (uint32_t)b->mappings.n)) ||
	    (rc = pvec_push(b->a, &b->mappings, m)))
		return rc;
	*out = m->id;
	return 0;
}

static int get_function(struct pb *b, uint32_t part, struct store_symbols *sym, uint32_t id,
			uint64_t *out)
{
	uint64_t key = (uint64_t)part << 32 | id;
	struct store_function sf;
	uint32_t at;
	Function *f;
	int rc;

	if (query__map_get(&b->funcs, key, &at)) {
		*out = at + 1;
		return 0;
	}
	if (store_symbols_function(sym, id, &sf))
		return err_set(b->q->msg, ERR_CORRUPT, "partition %u: function %u not found", part, id);
	f = nalloc(b, sizeof(*f));
	if (!f)
		return ERR_TOO_LARGE;
	perftools__profiles__function__init(f);
	f->id = b->functions.n + 1;
	f->start_line = sf.start_line;
	if ((rc = str_idx(b, sf.name, &f->name)) ||
	    (rc = str_idx(b, sf.system_name && sf.system_name[0] ? sf.system_name : sf.name,
			  &f->system_name)) ||
	    (rc = str_idx(b, sf.filename, &f->filename)) ||
	    (rc = query__map_put(b->q, &b->funcs, key, (uint32_t)b->functions.n)) ||
	    (rc = pvec_push(b->a, &b->functions, f)))
		return rc;
	*out = f->id;
	return 0;
}

/* The Function of a resolved frame, by (name, file). */
static int get_rfunc(struct pb *b, const struct qsym_frame *f, uint64_t *out)
{
	char key[1024];
	uint32_t kid, at;
	Function *fn;
	int n, rc;

	n = snprintf(key, sizeof(key), "%.600s\x01%.400s", f->function, f->file ? f->file : "");
	rc = query__names_intern(b->q, &b->fkeys, key, (size_t)n, &kid);
	if (rc)
		return rc;
	if (query__map_get(&b->rfuncs, kid, &at)) {
		*out = at + 1;
		return 0;
	}
	fn = nalloc(b, sizeof(*fn));
	if (!fn)
		return ERR_TOO_LARGE;
	perftools__profiles__function__init(fn);
	fn->id = b->functions.n + 1;
	if ((rc = str_idx(b, f->function, &fn->name)) ||
	    (rc = str_idx(b, f->function, &fn->system_name)) ||
	    (rc = str_idx(b, f->file, &fn->filename)) ||
	    (rc = query__map_put(b->q, &b->rfuncs, kid, (uint32_t)b->functions.n)) ||
	    (rc = pvec_push(b->a, &b->functions, fn)))
		return rc;
	*out = fn->id;
	return 0;
}

/* Lines of a location from query-time symbolization, innermost first. */
static int resolved_lines(struct pb *b, Location *l, const struct qsym_frame *sf, size_t n)
{
	Mapping *m;
	int rc;

	l->line = nalloc(b, n * sizeof(*l->line));
	if (!l->line)
		return ERR_TOO_LARGE;
	for (size_t i = 0; i < n; i++) {
		Line *ln = nalloc(b, sizeof(*ln));

		if (!ln)
			return ERR_TOO_LARGE;
		perftools__profiles__line__init(ln);
		ln->line = sf[i].line;
		ln->column = sf[i].column;
		rc = get_rfunc(b, &sf[i], &ln->function_id);
		if (rc)
			return rc;
		l->line[l->n_line++] = ln;
	}
	if (l->mapping_id && l->mapping_id <= b->mappings.n) {
		m = b->mappings.v[l->mapping_id - 1];
		m->has_functions = m->has_filenames = m->has_line_numbers = 1;
		m->has_inline_frames = 1;
	}
	return 0;
}

static int get_location(struct pb *b, uint32_t part, struct store_symbols *sym, uint32_t id,
			int leaf, uint64_t *out)
{
	uint64_t key = (uint64_t)part << 32 | id;
	struct store_location_view lv;
	struct store_mapping mp;
	const struct qsym_frame *sf = NULL;
	size_t nsf = 0;
	struct qmap *memo = &b->locs;
	uint32_t at;
	Location *l;
	int rc;

	if (b->sym) {
		nsf = query__sym_frames(b->sym, part, id, leaf, &sf);
		if (leaf && nsf)
			memo = &b->leaf_locs;
	}
	if (query__map_get(memo, key, &at)) {
		*out = at + 1;
		return 0;
	}
	if (store_symbols_location(sym, id, &lv))
		return err_set(b->q->msg, ERR_CORRUPT, "partition %u: location %u not found", part, id);
	l = nalloc(b, sizeof(*l));
	if (!l)
		return ERR_TOO_LARGE;
	perftools__profiles__location__init(l);
	l->id = b->locations.n + 1;
	l->address = lv.address;
	if (lv.mapping_id) {
		uint32_t pid;

		rc = get_mapping(b, part, sym, lv.mapping_id, &l->mapping_id, &mp);
		if (rc)
			return rc;
		/* Stored addresses are file offsets: map them back into the
		 * mapping as first seen, so pprof finds them inside it.  JIT
		 * code (perf-PID.map) is stored at its runtime address. */
		if (!(mp.flags & STORE_MAP_ADDR_VADDR) && mp.memory_limit > mp.memory_start &&
		    !perfmap_jit_mapping(mp.filename, mp.build_id, &pid) &&
		    lv.address >= mp.file_offset &&
		    lv.address - mp.file_offset < mp.memory_limit - mp.memory_start)
			l->address = lv.address - mp.file_offset + mp.memory_start;
	}
	if (!lv.n_lines && nsf) {
		rc = resolved_lines(b, l, sf, nsf);
		if (rc)
			return rc;
	} else if (lv.n_lines) {
		l->line = nalloc(b, lv.n_lines * sizeof(*l->line));
		if (!l->line)
			return ERR_TOO_LARGE;
		for (size_t i = 0; i < lv.n_lines; i++) {
			Line *ln = nalloc(b, sizeof(*ln));

			if (!ln)
				return ERR_TOO_LARGE;
			perftools__profiles__line__init(ln);
			ln->line = lv.lines[i].line;
			ln->column = lv.lines[i].column;
			if (lv.lines[i].function_id) {
				rc = get_function(b, part, sym, lv.lines[i].function_id,
						  &ln->function_id);
				if (rc)
					return rc;
			}
			l->line[l->n_line++] = ln;
		}
	}
	if ((rc = query__map_put(b->q, memo, key, (uint32_t)b->locations.n)) ||
	    (rc = pvec_push(b->a, &b->locations, l)))
		return rc;
	*out = l->id;
	return 0;
}

static int add_sample(struct pb *b, const struct qstack *qs)
{
	struct store_symbols *sym;
	uint32_t s = qs->stack, parent, loc;
	size_t n = 0;
	Sample *smp;
	int rc, pc;

	if (!qs->value)
		return 0;
	rc = query__views_get(b->q, &b->views, qs->part, &sym);
	if (rc)
		return rc;
	/* The trie walk from a stack to the root is leaf first, as pprof wants.
	 * The stack's own location, and one root-ward of a kernel frame, are
	 * PCs (leaves); the others are return addresses. */
	pc = 1;
	while (s) {
		if (n >= 1 << 16)
			return err_set(b->q->msg, ERR_CORRUPT, "partition %u: stack %u too deep",
				       qs->part, qs->stack);
		if (store_symbols_stack_node(sym, s, &parent, &loc))
			return err_set(b->q->msg, ERR_CORRUPT, "partition %u: stack %u not found",
				       qs->part, s);
		rc = query__mem_grow(b->q, (void **)&b->ids, &b->ids_cap, sizeof(*b->ids), n + 1, "pprof");
		if (!rc)
			rc = get_location(b, qs->part, sym, loc, pc, &b->ids[n]);
		if (rc)
			return rc;
		pc = query__sym_kernel(b->sym, qs->part, loc);
		n++;
		s = parent;
	}
	smp = nalloc(b, sizeof(*smp));
	if (!smp)
		return ERR_TOO_LARGE;
	perftools__profiles__sample__init(smp);
	smp->value = nalloc(b, sizeof(*smp->value));
	smp->location_id = n ? nalloc(b, n * sizeof(*smp->location_id)) : NULL;
	if (!smp->value || (n && !smp->location_id))
		return ERR_TOO_LARGE;
	smp->n_value = 1;
	smp->value[0] = qs->value;
	if (n)
		memcpy(smp->location_id, b->ids, n * sizeof(*b->ids));
	smp->n_location_id = n;
	return pvec_push(b->a, &b->samples, smp);
}

static ValueType *value_type(struct pb *b, const char *type, const char *unit)
{
	ValueType *v = nalloc(b, sizeof(*v));

	if (!v)
		return NULL;
	perftools__profiles__value_type__init(v);
	if (str_idx(b, type, &v->type) || str_idx(b, unit, &v->unit))
		return NULL;
	return v;
}

/* The blocks the query skipped (corrupt or missing), as the profile's comments. */
static int add_warnings(struct pb *b, const struct qmerge *m, Profile *p)
{
	size_t n = m->rd ? store_reader_warning_count(m->rd) : 0;
	int rc = 0;

	if (!n)
		return 0;
	p->comment = nalloc(b, n * sizeof(*p->comment));
	if (!p->comment)
		return ERR_TOO_LARGE;
	for (size_t i = 0; i < n && !rc; i++)
		rc = str_idx(b, store_reader_warning(m->rd, i), &p->comment[i]);
	if (!rc)
		p->n_comment = n;
	return rc;
}

int query__pprof_build(struct qctx *q, const struct qmerge *m, const char *profile_type,
		       int64_t from_ns, int64_t until_ns, struct arena *a, Profile **out)
{
	char tmp[QUERY_MAX_SELECTOR_BYTES + 1];
	const char *parts[5];
	struct pb b;
	Profile *p;
	int rc = 0;

	if (query__profile_type_split(profile_type, tmp, sizeof(tmp), parts))
		return err_set(q->msg, ERR_INVALID, "pprof: bad profile type \"%s\"", profile_type);
	memset(&b, 0, sizeof(b));
	b.q = q;
	b.a = a;
	query__map_init(&b.locs);
	query__map_init(&b.funcs);
	query__map_init(&b.maps);
	query__map_init(&b.leaf_locs);
	query__map_init(&b.rfuncs);
	b.sym = m->sym;
	rc = query__names_init(q, &b.strs);
	if (rc)
		return rc;
	rc = query__names_init(q, &b.fkeys);
	if (rc) {
		query__names_release(&b.strs);
		return rc;
	}
	p = nalloc(&b, sizeof(*p));
	if (!p) {
		rc = ERR_TOO_LARGE;
		goto out;
	}
	perftools__profiles__profile__init(p);
	p->sample_type = nalloc(&b, sizeof(*p->sample_type));
	if (!p->sample_type || !(p->sample_type[0] = value_type(&b, parts[1], parts[2])) ||
	    !(p->period_type = value_type(&b, parts[3], parts[4]))) {
		rc = err_set(q->msg, ERR_TOO_LARGE, "pprof: query memory budget exceeded");
		goto out;
	}
	p->n_sample_type = 1;
	for (size_t i = 0; i < m->n && !rc; i++) {
		if ((i & 1023) == 1023 && (rc = query__ctx_check(q)))
			break;
		rc = add_sample(&b, &m->stacks[i]);
	}
	if (rc)
		goto out;
	rc = add_warnings(&b, m, p);
	if (rc)
		goto out;
	p->period = m->period;
	p->time_nanos = from_ns;
	p->duration_nanos = until_ns - from_ns;
	p->sample = (Sample **)b.samples.v;
	p->n_sample = b.samples.n;
	p->location = (Location **)b.locations.v;
	p->n_location = b.locations.n;
	p->function = (Function **)b.functions.v;
	p->n_function = b.functions.n;
	p->mapping = (Mapping **)b.mappings.v;
	p->n_mapping = b.mappings.n;
	p->string_table = arena_alloc(a, (intern_count(&b.strs) + 1) * sizeof(char *));
	if (!p->string_table) {
		rc = err_set(q->msg, ERR_TOO_LARGE, "pprof: query memory budget exceeded");
		goto out;
	}
	p->string_table[0] = "";
	for (size_t i = 0; i < intern_count(&b.strs); i++) {
		p->string_table[i + 1] = arena_strndup(a, intern_str(&b.strs, i), intern_len(&b.strs, i));
		if (!p->string_table[i + 1]) {
			rc = err_set(q->msg, ERR_TOO_LARGE, "pprof: query memory budget exceeded");
			goto out;
		}
	}
	p->n_string_table = intern_count(&b.strs) + 1;
	/* The profile stays in the arena until the caller packs it: it is
	 * part of the query's memory from here on. */
	if (a->used > q->mem.cap - q->mem.used) {
		rc = err_set(q->msg, ERR_TOO_LARGE, "pprof: query memory budget exceeded");
		goto out;
	}
	q->mem.used += a->used;
	*out = p;
out:
	if (rc && !arena_failed(a) && rc == ERR_TOO_LARGE)
		err_set(q->msg, rc, "pprof: query memory budget exceeded");
	query__names_release(&b.strs);
	query__map_release(q, &b.locs);
	query__map_release(q, &b.funcs);
	query__map_release(q, &b.maps);
	query__map_release(q, &b.leaf_locs);
	query__map_release(q, &b.rfuncs);
	query__names_release(&b.fkeys);
	query__views_release(&b.views);
	query__mem_free(q, b.ids, b.ids_cap, sizeof(*b.ids));
	return rc;
}

int query__pprof_write_gz(struct qctx *q, const Profile *prof, struct buf *out)
{
	size_t len = perftools__profiles__profile__get_packed_size(prof), cap = 0;
	uint8_t *packed = NULL;
	int rc;

	if (len > q->mem.cap - q->mem.used)
		return err_set(q->msg, ERR_TOO_LARGE, "pprof: %zu bytes exceed the query budget", len);
	rc = query__mem_grow(q, (void **)&packed, &cap, 1, len ? len : 1, "pprof");
	if (rc)
		return rc;
	perftools__profiles__profile__pack(prof, packed);
	rc = gzip_compress(packed, len, 0, out);
	if (rc)
		rc = err_set(q->msg, rc, "pprof: compressing %zu bytes: %s", len, err_str(rc));
	query__mem_free(q, packed, cap, 1);
	return rc;
}
