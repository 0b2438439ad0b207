/*
 * pprof_builder.h - builds pprof profiles for the ingest tests with
 * protobuf-c, so the tests feed the decoder real encoded bytes.
 *
 * The builder owns everything it allocates; pb_pack() returns a malloc'd
 * buffer the caller frees.  Capacities are fixed at pb_new() and exceeding
 * them is a bug in the test (abort).
 */
#ifndef UNHEX_TESTS_INGEST_PPROF_BUILDER_H
#define UNHEX_TESTS_INGEST_PPROF_BUILDER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/compress.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;

struct pb {
	Perftools__Profiles__Profile p;
	size_t cap_samples, cap_depth;
	char *strings[1024];
	size_t n_strings; /* owned strings (tests may shrink n_string_table) */
	PbValueType st[8], *stp[8], period_type;
	PbMapping maps[128], *mapp[128];
	PbFunction fns[512], *fnp[512];
	PbLocation locs[512], *locp[512];
	PbLine lines[512], *linep[512];
	size_t n_lines;
	PbSample *smp, **smpp;
	uint64_t *locids;  /* cap_samples x cap_depth */
	int64_t *values;   /* cap_samples x 8 */
	PbLabel labels[256], *labelp[256];
	size_t n_labels;
};

static inline void *pb_check(void *p)
{
	if (!p)
		abort();
	return p;
}

static inline struct pb *pb_new(size_t cap_samples, size_t cap_depth)
{
	struct pb *b = pb_check(calloc(1, sizeof(*b)));

	perftools__profiles__profile__init(&b->p);
	b->cap_samples = cap_samples;
	b->cap_depth = cap_depth;
	b->smp = pb_check(calloc(cap_samples, sizeof(*b->smp)));
	b->smpp = pb_check(calloc(cap_samples, sizeof(*b->smpp)));
	b->locids = pb_check(calloc(cap_samples * cap_depth, sizeof(*b->locids)));
	b->values = pb_check(calloc(cap_samples * 8, sizeof(*b->values)));
	b->strings[0] = pb_check(strdup(""));
	b->p.string_table = b->strings;
	b->p.n_string_table = b->n_strings = 1;
	b->p.sample_type = b->stp;
	b->p.mapping = b->mapp;
	b->p.function = b->fnp;
	b->p.location = b->locp;
	b->p.sample = b->smpp;
	return b;
}

static inline void pb_free(struct pb *b)
{
	for (size_t i = 0; i < b->n_strings; i++)
		free(b->strings[i]);
	free(b->smp);
	free(b->smpp);
	free(b->locids);
	free(b->values);
	free(b);
}

/* The string table index of `s`, added when new. */
static inline int64_t pb_str(struct pb *b, const char *s)
{
	for (size_t i = 0; i < b->p.n_string_table; i++)
		if (strcmp(b->strings[i], s) == 0)
			return (int64_t)i;
	if (b->p.n_string_table == 1024)
		abort();
	b->strings[b->p.n_string_table] = pb_check(strdup(s));
	b->n_strings = b->p.n_string_table + 1;
	return (int64_t)b->p.n_string_table++;
}

static inline void pb_sample_type(struct pb *b, const char *type, const char *unit)
{
	PbValueType *v = &b->st[b->p.n_sample_type];

	perftools__profiles__value_type__init(v);
	v->type = pb_str(b, type);
	v->unit = pb_str(b, unit);
	b->stp[b->p.n_sample_type++] = v;
}

static inline void pb_period(struct pb *b, const char *type, const char *unit, int64_t period)
{
	perftools__profiles__value_type__init(&b->period_type);
	b->period_type.type = pb_str(b, type);
	b->period_type.unit = pb_str(b, unit);
	b->p.period_type = &b->period_type;
	b->p.period = period;
}

static inline PbMapping *pb_mapping(struct pb *b, uint64_t id, uint64_t start, uint64_t limit,
				    uint64_t offset, const char *file, const char *build_id)
{
	PbMapping *m = &b->maps[b->p.n_mapping];

	perftools__profiles__mapping__init(m);
	m->id = id;
	m->memory_start = start;
	m->memory_limit = limit;
	m->file_offset = offset;
	m->filename = pb_str(b, file);
	m->build_id = pb_str(b, build_id);
	b->mapp[b->p.n_mapping++] = m;
	return m;
}

static inline PbFunction *pb_function(struct pb *b, uint64_t id, const char *name,
				      const char *file)
{
	PbFunction *f = &b->fns[b->p.n_function];

	perftools__profiles__function__init(f);
	f->id = id;
	f->name = pb_str(b, name);
	f->system_name = f->name;
	f->filename = pb_str(b, file);
	b->fnp[b->p.n_function++] = f;
	return f;
}

/* A location; `function_id` != 0 adds one line. */
static inline PbLocation *pb_location(struct pb *b, uint64_t id, uint64_t mapping_id,
				      uint64_t address, uint64_t function_id, int64_t line)
{
	PbLocation *l = &b->locs[b->p.n_location];

	perftools__profiles__location__init(l);
	l->id = id;
	l->mapping_id = mapping_id;
	l->address = address;
	if (function_id) {
		PbLine *ln = &b->lines[b->n_lines];

		perftools__profiles__line__init(ln);
		ln->function_id = function_id;
		ln->line = line;
		b->linep[b->n_lines] = ln;
		l->line = &b->linep[b->n_lines++];
		l->n_line = 1;
	}
	b->locp[b->p.n_location++] = l;
	return l;
}

static inline PbSample *pb_sample(struct pb *b, const uint64_t *locs, size_t n,
				  const int64_t *vals, size_t nv)
{
	size_t i = b->p.n_sample;
	PbSample *s = &b->smp[i];

	if (i == b->cap_samples || n > b->cap_depth || nv > 8)
		abort();
	perftools__profiles__sample__init(s);
	s->location_id = b->locids + i * b->cap_depth;
	memcpy(s->location_id, locs, n * sizeof(*locs));
	s->n_location_id = n;
	s->value = b->values + i * 8;
	memcpy(s->value, vals, nv * sizeof(*vals));
	s->n_value = nv;
	b->smpp[b->p.n_sample++] = s;
	return s;
}

/* Adds a label to sample `s`; str == NULL makes a numeric label.  Labels of
 * one sample must be added consecutively. */
static inline PbLabel *pb_label(struct pb *b, PbSample *s, const char *key, const char *str,
				int64_t num)
{
	PbLabel *l = &b->labels[b->n_labels];

	perftools__profiles__label__init(l);
	l->key = pb_str(b, key);
	l->str = str ? pb_str(b, str) : 0;
	l->num = num;
	b->labelp[b->n_labels] = l;
	if (!s->n_label)
		s->label = &b->labelp[b->n_labels];
	s->n_label++;
	b->n_labels++;
	return l;
}

/* Encodes the profile; gzipped when `gz`.  Returns a malloc'd buffer. */
static inline uint8_t *pb_pack(struct pb *b, int gz, size_t *len)
{
	size_t n = perftools__profiles__profile__get_packed_size(&b->p);
	uint8_t *raw = pb_check(malloc(n ? n : 1));
	struct buf out;

	perftools__profiles__profile__pack(&b->p, raw);
	if (!gz) {
		*len = n;
		return raw;
	}
	buf_init(&out, 1 << 30);
	if (gzip_compress(raw, n, 1, &out))
		abort();
	free(raw);
	return (uint8_t *)buf_detach(&out, len);
}

/* A native CPU profile: two mappings of one binary at different load
 * addresses, three locations, two sample types. */
static inline struct pb *pb_native_profile(void)
{
	struct pb *b = pb_new(16, 8);
	uint64_t s1[] = { 1, 3 }, s2[] = { 2, 3 }, s3[] = { 3 };
	int64_t v1[] = { 2, 20000000 }, v2[] = { 1, 10000000 }, v3[] = { 0, 0 };

	pb_sample_type(b, "samples", "count");
	pb_sample_type(b, "cpu", "nanoseconds");
	pb_period(b, "cpu", "nanoseconds", 10000000);
	pb_mapping(b, 1, 0x400000, 0x500000, 0x1000, "/usr/bin/app", "ABCDEF0123");
	pb_mapping(b, 2, 0x7f0000000000, 0x7f0000100000, 0x1000, "/usr/bin/app", "abcdef0123");
	pb_location(b, 1, 1, 0x400100, 0, 0);
	pb_location(b, 2, 2, 0x7f0000000100, 0, 0);
	pb_location(b, 3, 1, 0x400200, 0, 0);
	pb_sample(b, s1, 2, v1, 2);
	pb_sample(b, s2, 2, v2, 2);
	pb_sample(b, s3, 1, v3, 2);
	b->p.time_nanos = 1700000000000000000;
	b->p.duration_nanos = 10000000000;
	return b;
}

#endif
