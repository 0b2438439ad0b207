/* pprof_writer.c - interning tables and protobuf-c encoding of a pprof. */
#include "pprof_writer.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "base/hash.h"
#include "profile.pb-c.h"

typedef int (*eq_fn)(const struct pw *w, uint32_t idx, const void *key);

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	if (need > PW_MAX_ENTRIES)
		return ERR_TOO_LARGE;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return ERR_NOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* Returns the slot of `key`: either holding it, or the empty one to fill. */
static uint32_t *table_find(const struct pw *w, const struct pw_table *t, uint64_t h,
			    const void *key, eq_fn eq)
{
	size_t mask = t->cap - 1;
	size_t i = h & mask;

	for (;;) {
		uint32_t *s = &t->slots[i];
		if (*s == 0 || eq(w, *s - 1, key))
			return s;
		i = (i + 1) & mask;
	}
}

/* Doubles the table when it is half full; `hash_of` rehashes an entry. */
static int table_grow(struct pw *w, struct pw_table *t, uint64_t (*hash_of)(const struct pw *, uint32_t))
{
	struct pw_table nt;
	size_t i;

	if (t->cap && (t->n + 1) * 2 <= t->cap)
		return 0;
	nt.cap = t->cap ? t->cap * 2 : 1024;
	nt.n = t->n;
	nt.slots = calloc(nt.cap, sizeof(*nt.slots));
	if (!nt.slots)
		return ERR_NOMEM;
	for (i = 0; i < t->cap; i++) {
		uint32_t v = t->slots[i];
		size_t j;
		if (!v)
			continue;
		j = hash_of(w, v - 1) & (nt.cap - 1);
		while (nt.slots[j])
			j = (j + 1) & (nt.cap - 1);
		nt.slots[j] = v;
	}
	free(t->slots);
	*t = nt;
	return 0;
}

/* ---- strings ------------------------------------------------------------ */

static uint64_t str_hash(const char *s)
{
	return hash_bytes(s, strlen(s), 1);
}

static uint64_t str_hash_of(const struct pw *w, uint32_t idx)
{
	return str_hash(w->strs[idx]);
}

static int str_eq(const struct pw *w, uint32_t idx, const void *key)
{
	return strcmp(w->strs[idx], key) == 0;
}

int pw_string(struct pw *w, const char *s, int64_t *idx)
{
	uint32_t *slot;
	uint64_t h;
	char *copy;
	int rc;

	if ((rc = table_grow(w, &w->str_tab, str_hash_of)))
		return rc;
	h = str_hash(s);
	slot = table_find(w, &w->str_tab, h, s, str_eq);
	if (*slot) {
		*idx = *slot - 1;
		return 0;
	}
	if ((rc = grow((void **)&w->strs, &w->cap_strs, w->n_strs + 1, sizeof(*w->strs))))
		return rc;
	copy = strdup(s);
	if (!copy)
		return ERR_NOMEM;
	w->strs[w->n_strs] = copy;
	*slot = (uint32_t)++w->n_strs;
	w->str_tab.n++;
	*idx = (int64_t)(w->n_strs - 1);
	return 0;
}

/* ---- mappings and locations ------------------------------------------- */

int pw_mapping(struct pw *w, uint64_t start, uint64_t limit, uint64_t offset,
	       const char *filename, const char *build_id, uint64_t *id)
{
	struct pw_mapping m = { .start = start, .limit = limit, .offset = offset };
	int rc;

	if ((rc = pw_string(w, filename ? filename : "", &m.filename)) ||
	    (rc = pw_string(w, build_id ? build_id : "", &m.build_id)))
		return rc;
	if ((rc = grow((void **)&w->maps, &w->cap_maps, w->n_maps + 1, sizeof(*w->maps))))
		return rc;
	w->maps[w->n_maps++] = m;
	*id = w->n_maps;
	return 0;
}

static uint64_t loc_hash(const struct pw_location *l)
{
	return hash_combine(hash_u64(l->mapping_id), l->address);
}

static uint64_t loc_hash_of(const struct pw *w, uint32_t idx)
{
	return loc_hash(&w->locs[idx]);
}

static int loc_eq(const struct pw *w, uint32_t idx, const void *key)
{
	const struct pw_location *k = key;
	return w->locs[idx].mapping_id == k->mapping_id && w->locs[idx].address == k->address;
}

int pw_location(struct pw *w, uint64_t mapping_id, uint64_t address, uint64_t *id)
{
	struct pw_location key = { mapping_id, address };
	uint32_t *slot;
	int rc;

	if (mapping_id > w->n_maps)
		return ERR_INVALID;
	if ((rc = table_grow(w, &w->loc_tab, loc_hash_of)))
		return rc;
	slot = table_find(w, &w->loc_tab, loc_hash(&key), &key, loc_eq);
	if (*slot) {
		*id = *slot;
		return 0;
	}
	if ((rc = grow((void **)&w->locs, &w->cap_locs, w->n_locs + 1, sizeof(*w->locs))))
		return rc;
	w->locs[w->n_locs++] = key;
	*slot = (uint32_t)w->n_locs;
	w->loc_tab.n++;
	*id = w->n_locs;
	return 0;
}

/* ---- samples ------------------------------------------------------------ */

struct sample_key {
	const uint64_t *locs;
	uint32_t n;
	int64_t label;
};

static uint64_t sample_hash(const uint64_t *locs, size_t n, int64_t label)
{
	return hash_bytes(locs, n * sizeof(*locs), (uint64_t)label + 7);
}

static uint64_t sample_hash_of(const struct pw *w, uint32_t idx)
{
	const struct pw_sample *s = &w->samples[idx];
	return sample_hash(w->locs_pool + s->loc_off, s->n_locs, s->label_str);
}

static int sample_eq(const struct pw *w, uint32_t idx, const void *key)
{
	const struct sample_key *k = key;
	const struct pw_sample *s = &w->samples[idx];
	return s->n_locs == k->n && s->label_str == k->label &&
	       memcmp(w->locs_pool + s->loc_off, k->locs, k->n * sizeof(*k->locs)) == 0;
}

int pw_label_key(struct pw *w, const char *key)
{
	return pw_string(w, key, &w->label_key);
}

int pw_sample(struct pw *w, const uint64_t *loc_ids, size_t n, const char *label,
	      const int64_t *values)
{
	struct sample_key key = { .locs = loc_ids, .n = (uint32_t)n };
	struct pw_sample *s;
	uint32_t *slot;
	size_t i;
	int rc;

	if (n > PW_MAX_ENTRIES || (label && !w->label_key))
		return ERR_INVALID;
	for (i = 0; i < n; i++)
		if (loc_ids[i] == 0 || loc_ids[i] > w->n_locs)
			return ERR_INVALID;
	if (label && (rc = pw_string(w, label, &key.label)))
		return rc;
	if ((rc = table_grow(w, &w->sample_tab, sample_hash_of)))
		return rc;
	slot = table_find(w, &w->sample_tab, sample_hash(loc_ids, n, key.label), &key, sample_eq);
	if (*slot) {
		s = &w->samples[*slot - 1];
		for (i = 0; i < w->n_values; i++)
			s->values[i] += values[i];
		return 0;
	}
	if ((rc = grow((void **)&w->locs_pool, &w->cap_pool, w->n_pool + n + 1, sizeof(*w->locs_pool))) ||
	    (rc = grow((void **)&w->samples, &w->cap_samples, w->n_samples + 1, sizeof(*w->samples))))
		return rc;
	s = &w->samples[w->n_samples];
	memset(s, 0, sizeof(*s));
	s->loc_off = w->n_pool;
	s->n_locs = (uint32_t)n;
	s->label_str = key.label;
	for (i = 0; i < w->n_values; i++)
		s->values[i] = values[i];
	if (n)
		memcpy(w->locs_pool + w->n_pool, loc_ids, n * sizeof(*loc_ids));
	w->n_pool += n;
	*slot = (uint32_t)++w->n_samples;
	w->sample_tab.n++;
	return 0;
}

/* ---- lifecycle and encoding -------------------------------------------- */

int pw_init(struct pw *w, size_t n_values)
{
	int64_t empty;

	memset(w, 0, sizeof(*w));
	if (n_values == 0 || n_values > PW_MAX_VALUES)
		return ERR_INVALID;
	w->n_values = n_values;
	return pw_string(w, "", &empty);
}

void pw_release(struct pw *w)
{
	size_t i;

	for (i = 0; i < w->n_strs; i++)
		free(w->strs[i]);
	free(w->strs);
	free(w->str_tab.slots);
	free(w->maps);
	free(w->locs);
	free(w->loc_tab.slots);
	free(w->locs_pool);
	free(w->samples);
	free(w->sample_tab.slots);
	memset(w, 0, sizeof(*w));
}

/* Every protobuf-c struct the encoder needs, allocated in one go. */
struct pw_msgs {
	Perftools__Profiles__ValueType *vt, **vtp, period_type;
	Perftools__Profiles__Mapping *maps, **mapp;
	Perftools__Profiles__Location *locs, **locp;
	Perftools__Profiles__Sample *samples, **samplep;
	Perftools__Profiles__Label *labels, **labelp;
	uint64_t *loc_ids;
};

static void msgs_free(struct pw_msgs *m)
{
	free(m->vt);
	free(m->vtp);
	free(m->maps);
	free(m->mapp);
	free(m->locs);
	free(m->locp);
	free(m->samples);
	free(m->samplep);
	free(m->labels);
	free(m->labelp);
	free(m->loc_ids);
}

static int fill_header(struct pw *w, const struct pw_meta *meta, struct pw_msgs *m,
		       Perftools__Profiles__Profile *p)
{
	size_t i;
	int rc;

	m->vt = calloc(w->n_values, sizeof(*m->vt));
	m->vtp = calloc(w->n_values, sizeof(*m->vtp));
	if (!m->vt || !m->vtp)
		return ERR_NOMEM;
	for (i = 0; i < w->n_values; i++) {
		perftools__profiles__value_type__init(&m->vt[i]);
		if ((rc = pw_string(w, meta->type_unit[2 * i], &m->vt[i].type)) ||
		    (rc = pw_string(w, meta->type_unit[2 * i + 1], &m->vt[i].unit)))
			return rc;
		m->vtp[i] = &m->vt[i];
	}
	perftools__profiles__value_type__init(&m->period_type);
	if ((rc = pw_string(w, meta->period_type, &m->period_type.type)) ||
	    (rc = pw_string(w, meta->period_unit, &m->period_type.unit)))
		return rc;
	p->n_sample_type = w->n_values;
	p->sample_type = m->vtp;
	p->period_type = &m->period_type;
	p->period = meta->period;
	p->time_nanos = meta->time_nanos;
	p->duration_nanos = meta->duration_nanos;
	return 0;
}

static int fill_symbols(struct pw *w, struct pw_msgs *m, Perftools__Profiles__Profile *p)
{
	size_t i;

	m->maps = calloc(w->n_maps + 1, sizeof(*m->maps));
	m->mapp = calloc(w->n_maps + 1, sizeof(*m->mapp));
	m->locs = calloc(w->n_locs + 1, sizeof(*m->locs));
	m->locp = calloc(w->n_locs + 1, sizeof(*m->locp));
	if (!m->maps || !m->mapp || !m->locs || !m->locp)
		return ERR_NOMEM;
	for (i = 0; i < w->n_maps; i++) {
		Perftools__Profiles__Mapping *pm = &m->maps[i];
		perftools__profiles__mapping__init(pm);
		pm->id = i + 1;
		pm->memory_start = w->maps[i].start;
		pm->memory_limit = w->maps[i].limit;
		pm->file_offset = w->maps[i].offset;
		pm->filename = w->maps[i].filename;
		pm->build_id = w->maps[i].build_id;
		m->mapp[i] = pm;
	}
	for (i = 0; i < w->n_locs; i++) {
		Perftools__Profiles__Location *pl = &m->locs[i];
		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->mapping_id = w->locs[i].mapping_id;
		pl->address = w->locs[i].address;
		m->locp[i] = pl;
	}
	p->n_mapping = w->n_maps;
	p->mapping = m->mapp;
	p->n_location = w->n_locs;
	p->location = m->locp;
	return 0;
}

static int fill_samples(struct pw *w, struct pw_msgs *m, Perftools__Profiles__Profile *p)
{
	size_t i;

	m->samples = calloc(w->n_samples + 1, sizeof(*m->samples));
	m->samplep = calloc(w->n_samples + 1, sizeof(*m->samplep));
	m->labels = calloc(w->n_samples + 1, sizeof(*m->labels));
	m->labelp = calloc(w->n_samples + 1, sizeof(*m->labelp));
	if (!m->samples || !m->samplep || !m->labels || !m->labelp)
		return ERR_NOMEM;
	for (i = 0; i < w->n_samples; i++) {
		struct pw_sample *s = &w->samples[i];
		Perftools__Profiles__Sample *ps = &m->samples[i];
		perftools__profiles__sample__init(ps);
		ps->n_location_id = s->n_locs;
		ps->location_id = w->locs_pool + s->loc_off;
		ps->n_value = w->n_values;
		ps->value = s->values;
		if (s->label_str) {
			perftools__profiles__label__init(&m->labels[i]);
			m->labels[i].key = w->label_key;
			m->labels[i].str = s->label_str;
			m->labelp[i] = &m->labels[i];
			ps->n_label = 1;
			ps->label = &m->labelp[i];
		}
		m->samplep[i] = ps;
	}
	p->n_sample = w->n_samples;
	p->sample = m->samplep;
	return 0;
}

int pw_write(struct pw *w, const struct pw_meta *meta, int gzip, struct buf *out)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct pw_msgs m;
	uint8_t *raw = NULL;
	size_t len;
	int rc;

	memset(&m, 0, sizeof(m));
	if ((rc = fill_header(w, meta, &m, &p)) || (rc = fill_symbols(w, &m, &p)) ||
	    (rc = fill_samples(w, &m, &p)))
		goto out;
	p.n_string_table = w->n_strs;
	p.string_table = w->strs;
	len = perftools__profiles__profile__get_packed_size(&p);
	raw = malloc(len ? len : 1);
	if (!raw) {
		rc = ERR_NOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&p, raw);
	rc = gzip ? gzip_compress(raw, len, 6, out) : buf_append(out, raw, len);
out:
	free(raw);
	msgs_free(&m);
	return rc;
}
