/*
 * pprof_out.c - the merged profile as a pprof: one sample per distinct
 * (partition, stack), locations by address so mappings and build IDs survive
 * for `go tool pprof` and later symbolization.  Also its proto3 JSON form
 * (google.v1.Profile) for Connect's SelectMergeProfile.
 */
#include "query_int.h"

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
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
	struct qnames strs;   /* pprof string index = id + 1; index 0 is "" */
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
	struct qnames fkeys;  /* "name\x01file" of resolved functions */
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
	rc = qnames_intern(b->q, &b->strs, s, strlen(s), &id);
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
	if (qmap_get(&b->maps, key, &at)) {
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
	    (rc = qmap_put(b->q, &b->maps, key, (uint32_t)b->mappings.n)) ||
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

	if (qmap_get(&b->funcs, key, &at)) {
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
	    (rc = qmap_put(b->q, &b->funcs, key, (uint32_t)b->functions.n)) ||
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
	rc = qnames_intern(b->q, &b->fkeys, key, (size_t)n, &kid);
	if (rc)
		return rc;
	if (qmap_get(&b->rfuncs, kid, &at)) {
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
	    (rc = qmap_put(b->q, &b->rfuncs, kid, (uint32_t)b->functions.n)) ||
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
		nsf = qsym_frames(b->sym, part, id, leaf, &sf);
		if (leaf && nsf)
			memo = &b->leaf_locs;
	}
	if (qmap_get(memo, key, &at)) {
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
		rc = get_mapping(b, part, sym, lv.mapping_id, &l->mapping_id, &mp);
		if (rc)
			return rc;
		/* Stored addresses are file offsets: map them back into the
		 * mapping as first seen, so pprof finds them inside it. */
		if (!(mp.flags & STORE_MAP_ADDR_VADDR) && mp.memory_limit > mp.memory_start &&
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
	if ((rc = qmap_put(b->q, memo, key, (uint32_t)b->locations.n)) ||
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
	rc = qviews_get(b->q, &b->views, qs->part, &sym);
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
		rc = qmem_grow(b->q, (void **)&b->ids, &b->ids_cap, sizeof(*b->ids), n + 1, "pprof");
		if (!rc)
			rc = get_location(b, qs->part, sym, loc, pc, &b->ids[n]);
		if (rc)
			return rc;
		pc = qsym_kernel(b->sym, qs->part, loc);
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

int qpprof_build(struct qctx *q, const struct qmerge *m, const char *profile_type,
		 int64_t from_ns, int64_t until_ns, struct arena *a, Profile **out)
{
	char tmp[QUERY_MAX_SELECTOR_BYTES + 1];
	const char *parts[5];
	struct pb b;
	Profile *p;
	int rc = 0;

	if (qprofile_type_split(profile_type, tmp, sizeof(tmp), parts))
		return err_set(q->msg, ERR_INVALID, "pprof: bad profile type \"%s\"", profile_type);
	memset(&b, 0, sizeof(b));
	b.q = q;
	b.a = a;
	qmap_init(&b.locs);
	qmap_init(&b.funcs);
	qmap_init(&b.maps);
	qmap_init(&b.leaf_locs);
	qmap_init(&b.rfuncs);
	b.sym = m->sym;
	rc = qnames_init(q, &b.strs);
	if (rc)
		return rc;
	rc = qnames_init(q, &b.fkeys);
	if (rc) {
		qnames_release(q, &b.strs);
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
		if ((i & 1023) == 1023 && (rc = qctx_check(q)))
			break;
		rc = add_sample(&b, &m->stacks[i]);
	}
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
	p->string_table = arena_alloc(a, (b.strs.n + 1) * sizeof(char *));
	if (!p->string_table) {
		rc = err_set(q->msg, ERR_TOO_LARGE, "pprof: query memory budget exceeded");
		goto out;
	}
	p->string_table[0] = "";
	for (size_t i = 0; i < b.strs.n; i++) {
		p->string_table[i + 1] = arena_strndup(a, b.strs.s[i], b.strs.len[i]);
		if (!p->string_table[i + 1]) {
			rc = err_set(q->msg, ERR_TOO_LARGE, "pprof: query memory budget exceeded");
			goto out;
		}
	}
	p->n_string_table = b.strs.n + 1;
	*out = p;
out:
	if (rc && !arena_failed(a) && rc == ERR_TOO_LARGE)
		err_set(q->msg, rc, "pprof: query memory budget exceeded");
	qnames_release(q, &b.strs);
	qmap_release(q, &b.locs);
	qmap_release(q, &b.funcs);
	qmap_release(q, &b.maps);
	qmap_release(q, &b.leaf_locs);
	qmap_release(q, &b.rfuncs);
	qnames_release(q, &b.fkeys);
	qviews_release(&b.views);
	qmem_free(q, b.ids, b.ids_cap, sizeof(*b.ids));
	return rc;
}

int query_pprof(struct store *st, const char *tenant, const struct query_params *p,
		struct buf *out, struct err_msg *msg)
{
	struct qctx q;
	struct qmerge m;
	struct query_selector sel;
	struct arena a;
	Profile *prof = NULL;
	uint8_t *packed = NULL;
	size_t len;
	int rc;

	qctx_init(&q, st, tenant, &p->limits, msg);
	qmerge_init(&m);
	arena_init(&a, (q.mem.cap + 1) / 2);
	rc = qparams_selector(p, &sel, msg);
	if (rc)
		goto out_m;
	rc = qmerge_collect(&q, &sel, p->from_ns, p->until_ns, &m);
	if (!rc)
		rc = qpprof_build(&q, &m, sel.profile_type, p->from_ns, p->until_ns, &a, &prof);
	query_selector_release(&sel);
	if (rc)
		goto out_m;
	len = perftools__profiles__profile__get_packed_size(prof);
	if (len > q.mem.cap - q.mem.used) {
		rc = err_set(msg, ERR_TOO_LARGE, "pprof: %zu bytes exceed the query budget", len);
		goto out_m;
	}
	packed = malloc(len ? len : 1);
	if (!packed) {
		rc = err_set(msg, ERR_NOMEM, "pprof: out of memory");
		goto out_m;
	}
	perftools__profiles__profile__pack(prof, packed);
	rc = gzip_compress(packed, len, 0, out);
	if (rc)
		rc = err_set(msg, rc, "pprof: compressing %zu bytes: %s", len, err_str(rc));
out_m:
	free(packed);
	arena_release(&a);
	qmerge_release(&q, &m);
	return rc;
}

/* ---- proto3 JSON (google.v1.Profile) ----------------------------------- */

static int j_i64(struct buf *o, const char *key, int64_t v, int *first)
{
	int rc;

	if (!v)
		return 0;
	rc = buf_printf(o, "%s\"%s\":\"%lld\"", *first ? "" : ",", key, (long long)v);
	*first = 0;
	return rc;
}

static int j_u64(struct buf *o, const char *key, uint64_t v, int *first)
{
	int rc;

	if (!v)
		return 0;
	rc = buf_printf(o, "%s\"%s\":\"%llu\"", *first ? "" : ",", key, (unsigned long long)v);
	*first = 0;
	return rc;
}

static int j_bool(struct buf *o, const char *key, int v, int *first)
{
	int rc;

	if (!v)
		return 0;
	rc = buf_printf(o, "%s\"%s\":true", *first ? "" : ",", key);
	*first = 0;
	return rc;
}

static int j_vt(struct buf *o, const ValueType *v)
{
	int first = 1, rc = buf_putc(o, '{');

	if (!rc)
		rc = j_i64(o, "type", v->type, &first);
	if (!rc)
		rc = j_i64(o, "unit", v->unit, &first);
	if (!rc)
		rc = buf_putc(o, '}');
	return rc;
}

static int j_sample(struct buf *o, const Sample *s)
{
	int rc = buf_puts(o, "{\"locationId\":[");

	for (size_t i = 0; i < s->n_location_id && !rc; i++)
		rc = buf_printf(o, "%s\"%llu\"", i ? "," : "", (unsigned long long)s->location_id[i]);
	if (!rc)
		rc = buf_puts(o, "],\"value\":[");
	for (size_t i = 0; i < s->n_value && !rc; i++)
		rc = buf_printf(o, "%s\"%lld\"", i ? "," : "", (long long)s->value[i]);
	if (!rc)
		rc = buf_puts(o, "]}");
	return rc;
}

static int j_mapping(struct buf *o, const Mapping *m)
{
	int first = 1, rc = buf_putc(o, '{');

	if (!rc) rc = j_u64(o, "id", m->id, &first);
	if (!rc) rc = j_u64(o, "memoryStart", m->memory_start, &first);
	if (!rc) rc = j_u64(o, "memoryLimit", m->memory_limit, &first);
	if (!rc) rc = j_u64(o, "fileOffset", m->file_offset, &first);
	if (!rc) rc = j_i64(o, "filename", m->filename, &first);
	if (!rc) rc = j_i64(o, "buildId", m->build_id, &first);
	if (!rc) rc = j_bool(o, "hasFunctions", m->has_functions, &first);
	if (!rc) rc = j_bool(o, "hasFilenames", m->has_filenames, &first);
	if (!rc) rc = j_bool(o, "hasLineNumbers", m->has_line_numbers, &first);
	if (!rc) rc = j_bool(o, "hasInlineFrames", m->has_inline_frames, &first);
	if (!rc) rc = buf_putc(o, '}');
	return rc;
}

static int j_location(struct buf *o, const Location *l)
{
	int first = 1, rc = buf_putc(o, '{');

	if (!rc) rc = j_u64(o, "id", l->id, &first);
	if (!rc) rc = j_u64(o, "mappingId", l->mapping_id, &first);
	if (!rc) rc = j_u64(o, "address", l->address, &first);
	if (!rc && l->n_line) {
		rc = buf_printf(o, "%s\"line\":[", first ? "" : ",");
		first = 0;
		for (size_t i = 0; i < l->n_line && !rc; i++) {
			int f2 = 1;

			rc = buf_puts(o, i ? ",{" : "{");
			if (!rc) rc = j_u64(o, "functionId", l->line[i]->function_id, &f2);
			if (!rc) rc = j_i64(o, "line", l->line[i]->line, &f2);
			if (!rc) rc = j_i64(o, "column", l->line[i]->column, &f2);
			if (!rc) rc = buf_putc(o, '}');
		}
		if (!rc)
			rc = buf_putc(o, ']');
	}
	if (!rc) rc = buf_putc(o, '}');
	return rc;
}

static int j_function(struct buf *o, const Function *f)
{
	int first = 1, rc = buf_putc(o, '{');

	if (!rc) rc = j_u64(o, "id", f->id, &first);
	if (!rc) rc = j_i64(o, "name", f->name, &first);
	if (!rc) rc = j_i64(o, "systemName", f->system_name, &first);
	if (!rc) rc = j_i64(o, "filename", f->filename, &first);
	if (!rc) rc = j_i64(o, "startLine", f->start_line, &first);
	if (!rc) rc = buf_putc(o, '}');
	return rc;
}

int qpprof_json(const Profile *p, struct buf *o)
{
	int first = 0, rc = buf_puts(o, "{\"sampleType\":[");

	for (size_t i = 0; i < p->n_sample_type && !rc; i++) {
		rc = i ? buf_putc(o, ',') : 0;
		if (!rc)
			rc = j_vt(o, p->sample_type[i]);
	}
	if (!rc)
		rc = buf_puts(o, "],\"sample\":[");
	for (size_t i = 0; i < p->n_sample && !rc; i++) {
		rc = i ? buf_putc(o, ',') : 0;
		if (!rc)
			rc = j_sample(o, p->sample[i]);
	}
	if (!rc)
		rc = buf_puts(o, "],\"mapping\":[");
	for (size_t i = 0; i < p->n_mapping && !rc; i++) {
		rc = i ? buf_putc(o, ',') : 0;
		if (!rc)
			rc = j_mapping(o, p->mapping[i]);
	}
	if (!rc)
		rc = buf_puts(o, "],\"location\":[");
	for (size_t i = 0; i < p->n_location && !rc; i++) {
		rc = i ? buf_putc(o, ',') : 0;
		if (!rc)
			rc = j_location(o, p->location[i]);
	}
	if (!rc)
		rc = buf_puts(o, "],\"function\":[");
	for (size_t i = 0; i < p->n_function && !rc; i++) {
		rc = i ? buf_putc(o, ',') : 0;
		if (!rc)
			rc = j_function(o, p->function[i]);
	}
	if (!rc)
		rc = buf_puts(o, "],\"stringTable\":[");
	for (size_t i = 0; i < p->n_string_table && !rc; i++) {
		if (i)
			rc = buf_putc(o, ',');
		if (!rc)
			rc = buf_put_json_str(o, p->string_table[i], strlen(p->string_table[i]));
	}
	if (!rc)
		rc = buf_putc(o, ']');
	if (!rc)
		rc = j_i64(o, "timeNanos", p->time_nanos, &first);
	if (!rc)
		rc = j_i64(o, "durationNanos", p->duration_nanos, &first);
	if (!rc && p->period_type) {
		rc = buf_puts(o, ",\"periodType\":");
		if (!rc)
			rc = j_vt(o, p->period_type);
	}
	if (!rc)
		rc = j_i64(o, "period", p->period, &first);
	if (!rc)
		rc = buf_putc(o, '}');
	return rc;
}
