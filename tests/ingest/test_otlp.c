/*
 * test_otlp.c - ingest_otlp() through a real RocksDB store in a fresh temp
 * directory: requests are built as protobuf-c structs and packed with the
 * generated encoder (an encoder independent of our decoding path) -- and,
 * for the tests registered with setup_json*, encoded as OTLP JSON by the
 * descriptor-driven encoder of otlp_json_enc.h -- then read back through
 * the store and through query/ (folded stacks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "ingest/ingest.h"
#include "query/query.h"
#include "storage/storage.h"

#include "fixture.h"
#include "otlp_test.h"
#include "ingest/otlp_types.h"
#include "otlp_json_enc.h"

#define PERIOD 50000000LL /* 20 Hz, as the eBPF profiler */
#define MAXN 64

/* ---- a request builder on protobuf-c structs (all storage inline) ------- */

struct rb {
	Req req;
	Dict dict;
	char *strs[MAXN];
	Mapping maps[MAXN];
	Mapping *mapp[MAXN];
	Location locs[MAXN];
	Location *locp[MAXN];
	Line lines[MAXN];
	Line *linep[MAXN];
	int32_t map_attrs[MAXN][2];
	Function funcs[MAXN];
	Function *funcp[MAXN];
	Link links[2];
	Link *linkp[2];
	KeyValueAndUnit attrs[MAXN];
	KeyValueAndUnit *attrp[MAXN];
	AnyValue attr_vals[MAXN];
	Stack stacks[MAXN];
	Stack *stackp[MAXN];
	int32_t stack_locs[MAXN][8];
	/* resources, scopes, profiles, samples */
	ResourceProfiles rps[4];
	ResourceProfiles *rpp[4];
	Resource res[4];
	KeyValue rkv[4][4];
	KeyValue *rkvp[4][4];
	AnyValue rval[4][4];
	ScopeProfiles sps[4][2];
	ScopeProfiles *spp[4][2];
	Scope scope[4][2];
	Profile profs[8];
	Profile *profp[4][2][4];
	ValueType vts[8][2];
	Sample samples[MAXN];
	Sample *samplep[8][MAXN];
	uint64_t ts[MAXN][4];
	int64_t vals[MAXN][2];
	size_t n_lines, n_profs, n_samples;
};

static int32_t s_idx(struct rb *b, const char *s)
{
	for (size_t i = 0; i < b->dict.n_string_table; i++)
		if (strcmp(b->strs[i], s) == 0)
			return (int32_t)i;
	b->strs[b->dict.n_string_table] = (char *)s;
	return (int32_t)b->dict.n_string_table++;
}

/* Every table starts with its zero element. */
static void rb_init(struct rb *b)
{
	Req r = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	Dict d = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	Mapping m = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__MAPPING__INIT;
	Location l = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LOCATION__INIT;
	Function f = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__FUNCTION__INIT;
	Link k = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;
	KeyValueAndUnit a = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__KEY_VALUE_AND_UNIT__INIT;
	Stack s = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__STACK__INIT;

	memset(b, 0, sizeof(*b));
	b->req = r;
	b->dict = d;
	b->req.dictionary = &b->dict;
	b->dict.string_table = b->strs;
	b->dict.mapping_table = b->mapp;
	b->dict.location_table = b->locp;
	b->dict.function_table = b->funcp;
	b->dict.link_table = b->linkp;
	b->dict.attribute_table = b->attrp;
	b->dict.stack_table = b->stackp;
	b->req.resource_profiles = b->rpp;
	s_idx(b, "");
	b->maps[0] = m, b->mapp[0] = &b->maps[0], b->dict.n_mapping_table = 1;
	b->locs[0] = l, b->locp[0] = &b->locs[0], b->dict.n_location_table = 1;
	b->funcs[0] = f, b->funcp[0] = &b->funcs[0], b->dict.n_function_table = 1;
	b->links[0] = k, b->linkp[0] = &b->links[0], b->dict.n_link_table = 1;
	b->attrs[0] = a, b->attrp[0] = &b->attrs[0], b->dict.n_attribute_table = 1;
	b->stacks[0] = s, b->stackp[0] = &b->stacks[0], b->dict.n_stack_table = 1;
}

static int32_t attr_str(struct rb *b, const char *key, const char *val)
{
	AnyValue v = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	KeyValueAndUnit a = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__KEY_VALUE_AND_UNIT__INIT;
	size_t i = b->dict.n_attribute_table++;

	b->attr_vals[i] = v;
	b->attr_vals[i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
	b->attr_vals[i].string_value = (char *)val;
	b->attrs[i] = a;
	b->attrs[i].key_strindex = s_idx(b, key);
	b->attrs[i].value = &b->attr_vals[i];
	b->attrp[i] = &b->attrs[i];
	return (int32_t)i;
}

static int32_t attr_bool(struct rb *b, const char *key, int val)
{
	int32_t i = attr_str(b, key, "");

	b->attr_vals[i].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
	b->attr_vals[i].bool_value = val;
	return i;
}

static int32_t mapping(struct rb *b, uint64_t start, uint64_t limit, uint64_t off,
		       const char *file, int32_t attr1, int32_t attr2)
{
	Mapping m = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__MAPPING__INIT;
	size_t i = b->dict.n_mapping_table++;

	b->maps[i] = m;
	b->maps[i].memory_start = start;
	b->maps[i].memory_limit = limit;
	b->maps[i].file_offset = off;
	b->maps[i].filename_strindex = s_idx(b, file);
	b->map_attrs[i][0] = attr1;
	b->map_attrs[i][1] = attr2;
	b->maps[i].attribute_indices = b->map_attrs[i];
	b->maps[i].n_attribute_indices = attr2 ? 2 : attr1 ? 1 : 0;
	b->mapp[i] = &b->maps[i];
	return (int32_t)i;
}

static int32_t function(struct rb *b, const char *name, const char *file)
{
	Function f = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__FUNCTION__INIT;
	size_t i = b->dict.n_function_table++;

	b->funcs[i] = f;
	b->funcs[i].name_strindex = s_idx(b, name);
	b->funcs[i].filename_strindex = s_idx(b, file);
	b->funcp[i] = &b->funcs[i];
	return (int32_t)i;
}

/* A location; with fn != 0 it carries one line of that function. */
static int32_t location(struct rb *b, int32_t map, uint64_t addr, int32_t fn, int64_t line)
{
	Location l = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LOCATION__INIT;
	Line ln = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINE__INIT;
	size_t i = b->dict.n_location_table++;

	b->locs[i] = l;
	b->locs[i].mapping_index = map;
	b->locs[i].address = addr;
	if (fn) {
		size_t k = b->n_lines++;

		b->lines[k] = ln;
		b->lines[k].function_index = fn;
		b->lines[k].line = line;
		b->linep[k] = &b->lines[k];
		b->locs[i].lines = &b->linep[k];
		b->locs[i].n_lines = 1;
	}
	b->locp[i] = &b->locs[i];
	return (int32_t)i;
}

/* A stack of n locations, leaf first. */
static int32_t stack(struct rb *b, size_t n, ...)
{
	Stack s = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__STACK__INIT;
	size_t i = b->dict.n_stack_table++;
	va_list ap;

	va_start(ap, n);
	for (size_t j = 0; j < n; j++)
		b->stack_locs[i][j] = va_arg(ap, int32_t);
	va_end(ap);
	b->stacks[i] = s;
	b->stacks[i].location_indices = b->stack_locs[i];
	b->stacks[i].n_location_indices = n;
	b->stackp[i] = &b->stacks[i];
	return (int32_t)i;
}

/* Resource r (created on first use) with up to 4 string attributes. */
static ResourceProfiles *resource(struct rb *b, size_t r, const char *k1, const char *v1,
				  const char *k2, const char *v2)
{
	ResourceProfiles rp = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__RESOURCE_PROFILES__INIT;
	Resource res = OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	const char *kv[2][2] = { { k1, v1 }, { k2, v2 } };

	b->rps[r] = rp;
	b->res[r] = res;
	b->rps[r].resource = &b->res[r];
	b->res[r].attributes = b->rkvp[r];
	for (size_t j = 0; j < 2; j++) {
		KeyValue k = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
		AnyValue v = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;

		if (!kv[j][0])
			continue;
		b->rkv[r][j] = k;
		b->rval[r][j] = v;
		b->rkv[r][j].key = (char *)kv[j][0];
		b->rval[r][j].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		b->rval[r][j].string_value = (char *)kv[j][1];
		b->rkv[r][j].value = &b->rval[r][j];
		b->rkvp[r][b->res[r].n_attributes++] = &b->rkv[r][j];
	}
	b->rps[r].scope_profiles = b->spp[r];
	b->rpp[r] = &b->rps[r];
	if (b->req.n_resource_profiles <= r)
		b->req.n_resource_profiles = r + 1;
	return &b->rps[r];
}

/* A profile in resource r, scope s (created on first use). */
static Profile *profile(struct rb *b, size_t r, size_t s, const char *type, const char *unit,
			const char *ptype, const char *punit, int64_t period, uint64_t time)
{
	Profile p = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILE__INIT;
	ValueType vt = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
	ScopeProfiles *sp = &b->sps[r][s];
	size_t i = b->n_profs++;

	if (!b->spp[r][s]) {
		ScopeProfiles z = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SCOPE_PROFILES__INIT;
		Scope sc = OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;

		*sp = z;
		b->scope[r][s] = sc;
		b->scope[r][s].name = (char *)"go.opentelemetry.io/ebpf-profiler";
		sp->scope = &b->scope[r][s];
		sp->profiles = b->profp[r][s];
		b->spp[r][s] = sp;
		b->rps[r].n_scope_profiles++;
	}
	b->profs[i] = p;
	b->vts[i][0] = vt;
	b->vts[i][0].type_strindex = s_idx(b, type);
	b->vts[i][0].unit_strindex = s_idx(b, unit);
	b->profs[i].sample_type = &b->vts[i][0];
	if (ptype) {
		b->vts[i][1] = vt;
		b->vts[i][1].type_strindex = s_idx(b, ptype);
		b->vts[i][1].unit_strindex = s_idx(b, punit);
		b->profs[i].period_type = &b->vts[i][1];
	}
	b->profs[i].period = period;
	b->profs[i].time_unix_nano = time;
	b->profs[i].duration_nano = 10 * SEC;
	b->profs[i].samples = b->samplep[i];
	sp->profiles[sp->n_profiles++] = &b->profs[i];
	return &b->profs[i];
}

/* A sample: `value` >= 0 sets one value; otherwise -value timestamps only. */
static Sample *sample(struct rb *b, Profile *p, int32_t stack_index, int64_t value)
{
	Sample s = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SAMPLE__INIT;
	size_t i = b->n_samples++;

	b->samples[i] = s;
	b->samples[i].stack_index = stack_index;
	if (value >= 0) {
		b->vals[i][0] = value;
		b->samples[i].values = b->vals[i];
		b->samples[i].n_values = 1;
	} else {
		for (int64_t k = 0; k < -value; k++)
			b->ts[i][k] = (uint64_t)(T0 + k);
		b->samples[i].timestamps_unix_nano = b->ts[i];
		b->samples[i].n_timestamps_unix_nano = (size_t)-value;
	}
	p->samples[p->n_samples++] = &b->samples[i];
	return &b->samples[i];
}

static uint8_t *pack(struct rb *b, size_t *len)
{
	size_t n = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&b->req);
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&b->req, p);
	assert_int_equal(*len, n);
	return p;
}

/*
 * The request most tests start from, shaped like the eBPF profiler's:
 * resource {service.name=api, host.name=h1, process.pid=4242}; one on-CPU
 * profile (samples/count, period cpu/nanoseconds 50 ms) whose samples
 * carry timestamps only; a native mapping with a GNU build ID (upper
 * case, ELF-VA bounds) and two bare addresses, and a Go frame with a line.
 *   stack 1: native 0x401136 <- go main.run      3+1 timestamps (merged)
 *   stack 2: native 0x401200 <- go main.run      2 timestamps
 */
static Profile *base_request(struct rb *b)
{
	int32_t bid, exe, gomap, fn, l1, l2, lgo, s1, s2;
	Profile *p;

	rb_init(b);
	bid = attr_str(b, "process.executable.build_id.gnu", "ABCDEF0123456789");
	exe = mapping(b, 0x400000, 0x402000, 0x0, "native_app", bid, 0);
	gomap = mapping(b, 0x800000, 0x900000, 0x0, "gosvc", 0, 0);
	fn = function(b, "main.run", "main.go");
	l1 = location(b, exe, 0x401136, 0, 0);
	l2 = location(b, exe, 0x401200, 0, 0);
	lgo = location(b, gomap, 0x812345, fn, 42);
	s1 = stack(b, 2, l1, lgo);
	s2 = stack(b, 2, l2, lgo);
	resource(b, 0, "service.name", "api", "host.name", "h1");
	{
		/* A third resource attribute that must not become a label. */
		KeyValue k = OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
		AnyValue v = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;

		b->rkv[0][2] = k;
		b->rval[0][2] = v;
		b->rkv[0][2].key = (char *)"process.pid";
		b->rval[0][2].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		b->rval[0][2].int_value = 4242;
		b->rkv[0][2].value = &b->rval[0][2];
		b->rkvp[0][b->res[0].n_attributes++] = &b->rkv[0][2];
	}
	p = profile(b, 0, 0, "samples", "count", "cpu", "nanoseconds", PERIOD, (uint64_t)T0);
	sample(b, p, s1, -3);
	sample(b, p, s2, -2);
	sample(b, p, s1, -1);
	return p;
}

/* ---- fixture ------------------------------------------------------------ */

/*
 * How run() sends requests: -1 binary protobuf; otherwise the OTLP JSON
 * encoding of otlp_json_enc.h with these JE_ flags.  The tests that go
 * through run() are registered once per encoding, so that both decoders
 * must give the same results and the same validation messages.
 */
static int g_json = -1;

static int setup(void **state)
{
	g_json = -1;
	return fx_setup(state, "/tmp/unhex-otlp-XXXXXX");
}

static int setup_json(void **state)
{
	g_json = 0;
	return fx_setup(state, "/tmp/unhex-otlp-XXXXXX");
}

static int setup_json_snake(void **state)
{
	g_json = JE_SNAKE | JE_NUM64;
	return fx_setup(state, "/tmp/unhex-otlp-XXXXXX");
}

static int run(struct fx *f, struct rb *b, struct ingest_stats *out, struct err_msg *msg)
{
	size_t len;
	uint8_t *p;
	struct buf j;
	int rc;

	err_clear(msg);
	if (g_json >= 0) {
		buf_init(&j, 1 << 30);
		je_message(&j, &b->req.base, g_json);
		rc = ingest_otlp(f->st, &f->lim, "t1", j.data, j.len, 1, T0 + 5 * SEC, out, msg);
		buf_release(&j);
		return rc;
	}
	p = pack(b, &len);
	rc = ingest_otlp(f->st, &f->lim, "t1", p, len, 0, T0 + 5 * SEC, out, msg);
	free(p);
	return rc;
}

/* The value of the folded line that ends with `leaf`, or -1. */
static long long folded_value(const struct buf *b, const char *leaf)
{
	const char *s = b->data ? b->data : "";
	size_t ll = strlen(leaf);

	while (*s) {
		const char *nl = strchr(s, '\n'), *sp = nl ? nl : s + strlen(s);

		while (sp > s && *sp != ' ')
			sp--;
		if ((size_t)(sp - s) >= ll && memcmp(sp - ll, leaf, ll) == 0)
			return atoll(sp + 1);
		s = nl ? nl + 1 : s + strlen(s);
	}
	return -1;
}

struct series_seen {
	char labels[8][512];
	uint32_t part[8];
	size_t n;
};

static int series_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct series_seen *s = ctx;
	size_t o = 0;

	(void)id;
	if (s->n == 8)
		return 0;
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(s->labels[s->n] + o, sizeof(s->labels[0]) - o, "%s=%s,",
				      l[i].name, l[i].value);
	s->part[s->n++] = part;
	return 0;
}

/* ---- tests -------------------------------------------------------------- */

/* eBPF-shaped request: labels, profile type, timestamps-only values x period, merge. */
static void test_roundtrip(void **state)
{
	struct fx *f = *state;
	struct rb *b = calloc(1, sizeof(*b));
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	struct series_seen seen = { .n = 0 };
	struct buf out;

	base_request(b);
	assert_int_equal(run(f, b, &st, &msg), 0);
	assert_int_equal(st.profiles, 1);
	assert_int_equal(st.pprof_samples, 3);
	assert_int_equal(st.samples, 2); /* two distinct stacks */
	assert_int_equal(store_series_each(f->st, "t1", series_cb, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_string_equal(seen.labels[0],
			    "__name__=process_cpu,__profile_type__=" CPU
			    ",host.name=h1,service_name=api,");
	buf_init(&out, 1 << 30);
	otlp_folded(f, "t1", CPU "{service_name=\"api\"}", &out);
	/* Timestamps only: 4 and 2 observations, each worth one period. */
	assert_int_equal(folded_value(&out, "native_app+0x401136"), 4 * PERIOD);
	assert_int_equal(folded_value(&out, "native_app+0x401200"), 2 * PERIOD);
	assert_non_null(strstr(out.data, "main.run;native_app+0x401136"));
	otlp_folded(f, "t1", CPU "{host.name=\"h1\"}", &out);
	assert_int_equal(folded_value(&out, "native_app+0x401200"), 2 * PERIOD);
	buf_release(&out);
	free(b);
}

/* The flame graph total of a SelectMergeSpanProfile JSON request body. */
static long long span_total(struct fx *f, const char *spans)
{
	char req[512];
	struct buf out;
	struct err_msg msg = { { 0 } };
	const char *t;
	long long v;

	snprintf(req, sizeof(req),
		 "{\"profileTypeID\":\"" CPU "\",\"labelSelector\":\"{}\",\"spanSelector\":[%s],"
		 "\"start\":%lld,\"end\":%lld}",
		 spans, (long long)(T0 / 1000000 - 1000), (long long)(T0 / 1000000 + 60000));
	buf_init(&out, 1 << 24);
	assert_int_equal(query_connect(f->st, "t1", "SelectMergeSpanProfile", req, strlen(req), NULL,
				       &out, &msg), 0);
	assert_int_equal(buf_putc(&out, 0), 0);
	t = strstr(out.data, "\"total\":\"");
	assert_non_null(t);
	v = atoll(t + 9);
	buf_release(&out);
	return v;
}

/*
 * A sample's link names its span: the span id is kept (samples of the same
 * stack in and out of a span stay apart) and selects the sample, its 8
 * bytes spelled in hex as Pyroscope's span_id label spells them.
 */
static void test_link_span(void **state)
{
	struct fx *f = *state;
	struct rb *b = calloc(1, sizeof(*b));
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	Link k = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;
	static uint8_t span[8] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08 };
	static uint8_t trace[16] = { 9 };
	Profile *p;

	p = base_request(b);
	b->links[1] = k;
	b->links[1].span_id.data = span;
	b->links[1].span_id.len = 8;
	b->links[1].trace_id.data = trace;
	b->links[1].trace_id.len = 16;
	b->linkp[1] = &b->links[1];
	b->dict.n_link_table = 2;
	p->samples[0]->link_index = 1; /* stack 1, 3 timestamps, in the span */
	assert_int_equal(run(f, b, &st, &msg), 0);
	assert_int_equal(st.samples, 3); /* (s1, span), (s2, none), (s1, none) */
	assert_int_equal(span_total(f, "\"0102030405060708\""), 3 * PERIOD);
	assert_int_equal(span_total(f, "\"0807060504030201\""), 0);
	assert_int_equal(span_total(f, ""), 6 * PERIOD);
	free(b);
}

static int mapping_of(struct fx *f, uint32_t part, const char *file, struct store_mapping *out)
{
	struct store_symbols *sym;
	struct err_msg msg = { { 0 } };
	int found = 0;

	assert_int_equal(store_symbols_get(f->st, "t1", part, &sym, &msg), 0);
	for (uint32_t id = 1;; id++) {
		struct store_mapping m;

		if (store_symbols_mapping(sym, id, &m))
			break;
		if (strcmp(m.filename, file) == 0) {
			*out = m;
			found = 1;
			break;
		}
	}
	/* The strings live in the view; the checks below use flags and a copy. */
	if (found) {
		static char bid[128];

		snprintf(bid, sizeof(bid), "%s", out->build_id);
		out->build_id = bid;
		out->filename = file;
	}
	store_symbols_put(sym);
	return found;
}

/* Build-ID attribute -> mapping; ELF-VA flag; has_functions from lines or attribute. */
static void test_build_id(void **state)
{
	struct fx *f = *state;
	struct rb *b = calloc(1, sizeof(*b));
	struct err_msg msg;
	struct series_seen seen = { .n = 0 };
	struct store_mapping m;
	int32_t hf, lib, l3, s3;
	Profile *p;

	p = base_request(b);
	/* A mapping whose bare locations the sender says are symbolized. */
	hf = attr_bool(b, "pprof.mapping.has_functions", 1);
	lib = mapping(b, 0x7000, 0x8000, 0x1000, "libsym.so", hf, 0);
	l3 = location(b, lib, 0x7123, 0, 0);
	s3 = stack(b, 1, l3);
	sample(b, p, s3, -1);
	assert_int_equal(run(f, b, NULL, &msg), 0);
	assert_int_equal(store_series_each(f->st, "t1", series_cb, &seen), 0);
	assert_int_equal(seen.n, 1);
	assert_true(mapping_of(f, seen.part[0], "native_app", &m));
	assert_string_equal(m.build_id, "abcdef0123456789");
	assert_int_equal(m.flags, STORE_MAP_ADDR_VADDR);
	assert_int_equal(m.memory_start, 0x400000);
	assert_int_equal(m.memory_limit, 0x402000);
	assert_true(mapping_of(f, seen.part[0], "gosvc", &m));
	assert_int_equal(m.flags, STORE_MAP_ADDR_VADDR | STORE_MAP_HAS_FUNCTIONS);
	assert_string_equal(m.build_id, "");
	assert_true(mapping_of(f, seen.part[0], "libsym.so", &m));
	assert_int_equal(m.flags, STORE_MAP_ADDR_VADDR | STORE_MAP_HAS_FUNCTIONS);
	free(b);
}

/* Several resources, scopes and profiles; service name fallbacks; other types. */
static void test_multi(void **state)
{
	struct fx *f = *state;
	struct rb *b = calloc(1, sizeof(*b));
	struct ingest_stats st = { 0 };
	struct err_msg msg;
	struct series_seen seen = { .n = 0 };
	struct buf out;
	Profile *p, *q;
	int found_exe = 0, found_unknown = 0, found_alloc = 0, found_scope2 = 0;

	p = base_request(b);
	(void)p;
	/* resource 1: no service.name -> process.executable.name */
	resource(b, 1, "process.executable.name", "myexe", "k8s.namespace.name", "prod");
	q = profile(b, 1, 0, "alloc_space", "bytes", NULL, NULL, 0, (uint64_t)T0 + SEC);
	sample(b, q, 1, 1000);
	sample(b, q, 2, 24);
	/* a second scope of resource 1, values and timestamps together */
	q = profile(b, 1, 1, "off_cpu", "nanoseconds", NULL, NULL, 0, (uint64_t)T0 + 2 * SEC);
	{
		Sample *s = sample(b, q, 1, 7);

		s->timestamps_unix_nano = b->ts[0];
		s->n_timestamps_unix_nano = 1;
	}
	/* resource 2: nothing -> unknown_service; time 0 -> the request time */
	resource(b, 2, NULL, NULL, NULL, NULL);
	q = profile(b, 2, 0, "samples", "count", "cpu", "nanoseconds", PERIOD, 0);
	sample(b, q, 2, -2);
	/* A profile whose samples are all zero is not stored. */
	q = profile(b, 2, 0, "events", "count", NULL, NULL, 0, (uint64_t)T0);
	sample(b, q, 1, 0);
	assert_int_equal(run(f, b, &st, &msg), 0);
	assert_int_equal(st.profiles, 4);
	assert_int_equal(st.pprof_samples, 3 + 2 + 1 + 1);
	assert_int_equal(store_series_each(f->st, "t1", series_cb, &seen), 0);
	assert_int_equal(seen.n, 4);
	for (size_t i = 0; i < seen.n; i++) {
		if (strstr(seen.labels[i], "service_name=myexe,") &&
		    strstr(seen.labels[i], "__profile_type__=alloc_space:alloc_space:bytes:alloc_space:bytes,") &&
		    strstr(seen.labels[i], "k8s.namespace.name=prod,") &&
		    strstr(seen.labels[i], "process.executable.name=myexe,"))
			found_exe = found_alloc = 1;
		if (strstr(seen.labels[i], "__profile_type__=off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds,"))
			found_scope2 = 1;
		if (strstr(seen.labels[i], "service_name=unknown_service,"))
			found_unknown = 1;
		assert_null(strstr(seen.labels[i], "process.pid"));
	}
	assert_true(found_exe && found_alloc && found_scope2 && found_unknown);
	buf_init(&out, 1 << 30);
	otlp_folded(f, "t1", "alloc_space:alloc_space:bytes:alloc_space:bytes{service_name=\"myexe\"}", &out);
	assert_int_equal(folded_value(&out, "native_app+0x401136"), 1000);
	assert_int_equal(folded_value(&out, "native_app+0x401200"), 24);
	otlp_folded(f, "t1", "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds{}", &out);
	assert_int_equal(folded_value(&out, "native_app+0x401136"), 7);
	/* time_unix_nano 0 takes the request time (T0 + 5 s) */
	otlp_folded(f, "t1", CPU "{service_name=\"unknown_service\"}", &out);
	assert_int_equal(folded_value(&out, "native_app+0x401200"), 2 * PERIOD);
	buf_release(&out);
	free(b);
}

/* ---- validation: each mutation of a valid request is refused, nothing written */

/* What a mutation may change: the request, its first profile, the limits. */
struct mut {
	struct rb *b;
	Profile *p;
	struct ingest_limits *lim;
};

struct bad {
	const char *name;
	void (*mutate)(const struct mut *m);
	int rc;
	const char *msg;
};

static void m_stack_index(const struct mut *m)
{
	m->p->samples[1]->stack_index = 99;
}

static void m_stack_neg(const struct mut *m)
{
	m->p->samples[0]->stack_index = -1;
}

static void m_mapping_index(const struct mut *m)
{
	m->b->locs[2].mapping_index = 17;
}

static void m_function_index(const struct mut *m)
{
	m->b->lines[0].function_index = 5;
}

static void m_stack_loc(const struct mut *m)
{
	m->b->stack_locs[2][1] = 40;
}

static void m_stack_loc0(const struct mut *m)
{
	m->b->stack_locs[1][0] = 0;
}

static void m_string0(const struct mut *m)
{
	m->b->strs[0] = (char *)"x";
}

static void m_no_strings(const struct mut *m)
{
	m->b->dict.n_string_table = 0;
}

static void m_mapping0(const struct mut *m)
{
	m->b->maps[0].memory_start = 1;
}

static void m_location0(const struct mut *m)
{
	m->b->locs[0].address = 5;
}

static void m_function0(const struct mut *m)
{
	m->b->funcs[0].name_strindex = 1;
}

static void m_stack0(const struct mut *m)
{
	m->b->stacks[0] = m->b->stacks[1];
}

static void m_attr0(const struct mut *m)
{
	m->b->attrs[0].key_strindex = 1;
}

static void m_link0(const struct mut *m)
{
	static uint8_t id[16] = { 1 };

	m->b->links[0].trace_id.data = id;
	m->b->links[0].trace_id.len = 16;
}

static void m_link_len(const struct mut *m)
{
	static uint8_t id[5] = { 1 };
	Link k = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;

	m->b->links[1] = k;
	m->b->links[1].trace_id.data = id;
	m->b->links[1].trace_id.len = 5;
	m->b->linkp[1] = &m->b->links[1];
	m->b->dict.n_link_table = 2;
}

static void m_link_index(const struct mut *m)
{
	m->p->samples[2]->link_index = 3;
}

static void m_sample_attr(const struct mut *m)
{
	static int32_t idx[] = { 1, 1000 };

	m->p->samples[0]->attribute_indices = idx;
	m->p->samples[0]->n_attribute_indices = 2;
}

static void m_profile_attr(const struct mut *m)
{
	static int32_t idx[] = { -3 };

	m->p->attribute_indices = idx;
	m->p->n_attribute_indices = 1;
}

static void m_mapping_attr(const struct mut *m)
{
	m->b->map_attrs[1][0] = 77;
}

static void m_attr_strindex(const struct mut *m)
{
	m->b->attr_vals[1].value_case =
		OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
	m->b->attr_vals[1].string_value_strindex = 500;
}

static void m_filename(const struct mut *m)
{
	m->b->maps[2].filename_strindex = 300;
}

static void m_no_sample_type(const struct mut *m)
{
	m->p->sample_type = NULL;
}

static void m_sample_type(const struct mut *m)
{
	m->p->sample_type->unit_strindex = 1000;
}

static void m_period(const struct mut *m)
{
	m->p->period = -5;
}

static void m_mismatch(const struct mut *m)
{
	m->p->samples[1]->values = m->b->vals[0];
	m->p->samples[1]->n_values = 1;
}

static void m_overflow(const struct mut *m)
{
	m->b->vals[0][0] = INT64_MAX / 2;
	m->p->samples[0]->values = m->b->vals[0];
	m->p->samples[0]->n_values = 1;
	m->p->samples[0]->n_timestamps_unix_nano = 0;
}

static void m_time(const struct mut *m)
{
	m->p->time_unix_nano = UINT64_MAX;
}

static void m_bad_name(const struct mut *m)
{
	m->p->sample_type->type_strindex = s_idx(m->b, "bad name!");
	m->p->period_type = NULL;
}

static void m_samples_limit(const struct mut *m)
{
	m->lim->max_samples = 2;
}

static void m_depth_limit(const struct mut *m)
{
	m->lim->max_stack_depth = 1;
}

static void m_profiles_limit(const struct mut *m)
{
	m->lim->max_profiles = 0;
}

static void m_label_bytes(const struct mut *m)
{
	m->lim->max_label_bytes = 1;
}

static void m_resource_key(const struct mut *m)
{
	m->b->rkv[0][1].key = (char *)"";
	m->b->rkv[0][1].key_strindex = 900;
}

/* A valid profile first, a broken one second: the first is not written either. */
static void m_second_profile(const struct mut *m)
{
	Profile *q;

	resource(m->b, 1, "service.name", "other", NULL, NULL);
	q = profile(m->b, 1, 0, "alloc_space", "bytes", NULL, NULL, 0, (uint64_t)T0);
	sample(m->b, q, 1, 10);
	sample(m->b, q, 55, 10);
}

static const struct bad bads[] = {
	{ "stack_index", m_stack_index, ERR_INVALID,
	  "resource 0: scope 0: profile 0: sample 1: stack_index 99 out of range (stack_table has 3)" },
	{ "negative stack_index", m_stack_neg, ERR_INVALID,
	  "sample 0: stack_index -1 out of range (stack_table has 3)" },
	{ "mapping_index", m_mapping_index, ERR_INVALID,
	  "dictionary: location 2: mapping_index 17 out of range (mapping_table has 3)" },
	{ "function_index", m_function_index, ERR_INVALID,
	  "dictionary: location 3: lines[0].function_index 5 out of range (function_table has 2)" },
	{ "stack location", m_stack_loc, ERR_INVALID,
	  "dictionary: stack 2: location_indices[1] 40 out of range (location_table has 4)" },
	{ "stack location 0", m_stack_loc0, ERR_INVALID,
	  "dictionary: stack 1: location_indices[0] is 0" },
	{ "string_table[0]", m_string0, ERR_INVALID, "string_table[0] must be \"\"" },
	{ "no strings", m_no_strings, ERR_INVALID, "string_table is empty" },
	{ "mapping_table[0]", m_mapping0, ERR_INVALID, "mapping_table[0] must be the zero value" },
	{ "location_table[0]", m_location0, ERR_INVALID, "location_table[0] must be the zero value" },
	{ "function_table[0]", m_function0, ERR_INVALID, "function_table[0] must be the zero value" },
	{ "stack_table[0]", m_stack0, ERR_INVALID, "stack_table[0] must be the zero value" },
	{ "attribute_table[0]", m_attr0, ERR_INVALID, "attribute_table[0] must be the zero value" },
	{ "link_table[0]", m_link0, ERR_INVALID, "link_table[0] must be the zero value" },
	{ "link length", m_link_len, ERR_INVALID, "dictionary: link 1: trace_id must have 16 bytes" },
	{ "link_index", m_link_index, ERR_INVALID,
	  "sample 2: link_index 3 out of range (link_table has 1)" },
	{ "sample attribute", m_sample_attr, ERR_INVALID,
	  "sample 0: attribute_indices[1] 1000 out of range (attribute_table has 2)" },
	{ "profile attribute", m_profile_attr, ERR_INVALID,
	  "resource 0: scope 0: profile 0: attribute_indices[0] -3 out of range" },
	{ "mapping attribute", m_mapping_attr, ERR_INVALID,
	  "dictionary: mapping 1: attribute_indices[0] 77 out of range" },
	{ "attribute strindex", m_attr_strindex, ERR_INVALID,
	  "dictionary: attribute 1: value.string_value_strindex 500 out of range" },
	{ "filename", m_filename, ERR_INVALID,
	  "dictionary: mapping 2: filename_strindex 300 out of range" },
	{ "no sample_type", m_no_sample_type, ERR_INVALID, "profile 0: no sample_type" },
	{ "sample_type", m_sample_type, ERR_INVALID,
	  "sample_type.unit_strindex 1000 out of range" },
	{ "period", m_period, ERR_INVALID, "period -5 is negative" },
	{ "values vs timestamps", m_mismatch, ERR_INVALID,
	  "sample 1: 1 values but 2 timestamps" },
	{ "overflow", m_overflow, ERR_INVALID, "sample 0: value overflows int64" },
	{ "time", m_time, ERR_INVALID, "time_unix_nano 18446744073709551615 is out of range" },
	{ "profile name", m_bad_name, ERR_INVALID, "is not a valid profile name" },
	{ "samples limit", m_samples_limit, ERR_TOO_LARGE, "3 samples, more than the limit of 2" },
	{ "depth limit", m_depth_limit, ERR_TOO_LARGE,
	  "dictionary: stack 1: depth 2 exceeds the limit of 1" },
	{ "profiles limit", m_profiles_limit, ERR_TOO_LARGE,
	  "1 profiles in one request, more than the limit of 0" },
	{ "label bytes", m_label_bytes, ERR_TOO_LARGE, "attribute host.name: value longer than 1 bytes" },
	{ "resource key", m_resource_key, ERR_INVALID,
	  "resource 0: attribute 1: key_strindex 900 out of range" },
	{ "second profile", m_second_profile, ERR_INVALID,
	  "resource 1: scope 0: profile 0: sample 1: stack_index 55 out of range" },
};

static void test_invalid(void **state)
{
	struct fx *f = *state;
	struct rb *b = calloc(1, sizeof(*b));

	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct err_msg msg;
		struct mut m = { b, base_request(b), &f->lim };
		int rc;

		ingest_limits_default(&f->lim);
		bads[i].mutate(&m);
		rc = run(f, b, NULL, &msg);
		if (rc != bads[i].rc || !strstr(msg.text, bads[i].msg))
			fail_msg("%s: got %d \"%s\", want %d \"%s\"", bads[i].name, rc, msg.text,
				 bads[i].rc, bads[i].msg);
	}
	ingest_limits_default(&f->lim);
	assert_int_equal(fx_tenant_stats(f).profiles, 0);
	assert_int_equal(fx_tenant_stats(f).series, 0);
	free(b);
}

/* Truncated, corrupted and oversized bytes. */
static void test_bytes(void **state)
{
	struct fx *f = *state;
	struct rb *b = calloc(1, sizeof(*b));
	struct err_msg msg;
	size_t len;
	uint8_t *p;
	int rc;

	base_request(b);
	p = pack(b, &len);
	/* Every truncation is either refused with a message or a valid prefix. */
	for (size_t cut = 1; cut < len; cut += 7) {
		err_clear(&msg);
		rc = ingest_otlp(f->st, &f->lim, "t1", p, cut, 0, T0, NULL, &msg);
		if (rc)
			assert_true(msg.text[0] != '\0');
	}
	err_clear(&msg);
	assert_int_equal(ingest_otlp(f->st, &f->lim, "t1", p, len - 1, 0, T0, NULL, &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "not a valid ExportProfilesServiceRequest protobuf"));
	/* A group wire type at the top level. */
	err_clear(&msg);
	assert_int_equal(ingest_otlp(f->st, &f->lim, "t1", "\x0b\x0c", 2, 0, T0, NULL, &msg),
			 ERR_INVALID);
	/* A length past the end. */
	err_clear(&msg);
	assert_int_equal(ingest_otlp(f->st, &f->lim, "t1", "\x12\x7f\x2a", 3, 0, T0, NULL, &msg),
			 ERR_INVALID);
	err_clear(&msg);
	f->lim.max_decompressed_bytes = len - 1;
	assert_int_equal(ingest_otlp(f->st, &f->lim, "t1", p, len, 0, T0, NULL, &msg),
			 ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "exceeds the limit"));
	ingest_limits_default(&f->lim);
	err_clear(&msg);
	/* The same bytes as JSON are not a JSON document. */
	assert_int_equal(ingest_otlp(f->st, &f->lim, "t1", p, len, 1, T0, NULL, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "json: "));
	free(p);
	/* An empty request is valid and writes nothing. */
	err_clear(&msg);
	assert_int_equal(ingest_otlp(f->st, &f->lim, "t1", "", 0, 0, T0, NULL, &msg), 0);
	free(b);
}

/* Many empty samples: the decode memory cap turns a bomb into ERR_TOO_LARGE. */
static void test_memory_cap(void **state)
{
	struct fx *f = *state;
	/* resource_profiles { scope_profiles { profiles { samples {} x n } } } */
	size_t n = 1000000, plen = 2 * n, slen, rlen, len;
	uint8_t *p = malloc(plen + 64), *q;
	struct err_msg msg;
	int rc;

	assert_non_null(p);
	q = p;
	rlen = plen + 4 + 4; /* profile = samples; scope = profiles(len 4 bytes) */
	slen = plen + 4;
	*q++ = 0x0a; /* resource_profiles */
	*q++ = (uint8_t)(0x80 | (rlen & 0x7f)), *q++ = (uint8_t)(0x80 | ((rlen >> 7) & 0x7f));
	*q++ = (uint8_t)((rlen >> 14) & 0x7f);
	*q++ = 0x12; /* scope_profiles */
	*q++ = (uint8_t)(0x80 | (slen & 0x7f)), *q++ = (uint8_t)(0x80 | ((slen >> 7) & 0x7f));
	*q++ = (uint8_t)((slen >> 14) & 0x7f);
	*q++ = 0x12; /* profiles */
	*q++ = (uint8_t)(0x80 | (plen & 0x7f)), *q++ = (uint8_t)(0x80 | ((plen >> 7) & 0x7f));
	*q++ = (uint8_t)((plen >> 14) & 0x7f);
	for (size_t i = 0; i < n; i++)
		*q++ = 0x12, *q++ = 0x00; /* an empty Sample */
	len = (size_t)(q - p);
	assert_true(rlen < (1u << 21));
	err_clear(&msg);
	rc = ingest_otlp(f->st, &f->lim, "t1", p, len, 0, T0, NULL, &msg);
	assert_int_equal(rc, ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "bytes of memory"));
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_build_id, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_multi, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_invalid, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_link_span, setup, fx_teardown),
		{ "test_link_span/json", test_link_span, setup_json, fx_teardown, NULL },
		{ "test_roundtrip/json", test_roundtrip, setup_json, fx_teardown, NULL },
		{ "test_build_id/json", test_build_id, setup_json, fx_teardown, NULL },
		{ "test_multi/json_snake", test_multi, setup_json_snake, fx_teardown, NULL },
		{ "test_invalid/json", test_invalid, setup_json, fx_teardown, NULL },
		{ "test_invalid/json_snake", test_invalid, setup_json_snake, fx_teardown, NULL },
		cmocka_unit_test_setup_teardown(test_bytes, setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_memory_cap, setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
