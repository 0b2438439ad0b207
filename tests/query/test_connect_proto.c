/*
 * test_connect_proto.c - Connect's binary protobuf codec of
 * querier.v1.QuerierService over a real store: for every method the packed
 * request gives the same answer as the equivalent JSON request (the packed
 * response is unpacked with protobuf-c and compared field by field with the
 * parsed JSON response), and malformed, truncated or oversized requests are
 * rejected with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include "base/arena.h"
#include "base/json.h"
#include "base/buf.h"
#include "base/varint.h"
#include "query/query.h"
#include "query/query_int.h"

#include "profile.pb-c.h"
#include "querier.pb-c.h"
#include "types.pb-c.h"

#define FROM_MS (FX_T0 / 1000000)
#define TO_MS (FROM_MS + 3600000)

/* One method called in both codecs, with both responses kept. */
struct both {
	struct buf pb, js;
	struct arena a;
	struct json_value *j;   /* the parsed JSON response */
	ProtobufCMessage *r;    /* the protobuf response, unpacked */
};

/* Calls `method` with `req` packed and with `json`; returns the protobuf
 * response unpacked as a `resp` (owned by b: both_release frees it). */
static void *call_both(struct store *st, const char *method, const ProtobufCMessage *req,
		       const ProtobufCMessageDescriptor *resp, const char *json, struct both *b)
{
	struct err_msg msg = { { 0 } };
	size_t n = protobuf_c_message_get_packed_size(req);
	uint8_t *raw = malloc(n + 1);
	int rc;

	protobuf_c_message_pack(req, raw);
	buf_init(&b->pb, 1 << 30);
	buf_init(&b->js, 1 << 30);
	arena_init(&b->a, 64 << 20);
	rc = query_connect_proto(st, "t1", method, raw, n, NULL, &b->pb, &msg);
	if (rc)
		fail_msg("%s proto: %s", method, msg.text);
	err_clear(&msg);
	rc = query_connect(st, "t1", method, json, strlen(json), NULL, &b->js, &msg);
	if (rc)
		fail_msg("%s json: %s", method, msg.text);
	assert_int_equal(json_parse(b->js.data, b->js.len, &b->a, &b->j, &msg), 0);
	free(raw);
	b->r = protobuf_c_message_unpack(resp, NULL, b->pb.len, (const uint8_t *)b->pb.data);
	if (!b->r)
		fail_msg("%s proto: the response does not unpack", method);
	return b->r;
}

static void both_release(struct both *b)
{
	protobuf_c_message_free_unpacked(b->r, NULL);
	buf_release(&b->pb);
	buf_release(&b->js);
	arena_release(&b->a);
}

static const struct json_value *jget(const struct json_value *o, const char *key)
{
	const struct json_value *v = json_get(o, key);

	if (!v)
		fail_msg("JSON response lacks \"%s\"", key);
	return v;
}

static long long jint(const struct json_value *o, const char *key)
{
	const struct json_value *v = jget(o, key);

	return strtoll(v->str, NULL, 10);
}

static void same_strings(char **pb, size_t n, const struct json_value *arr)
{
	assert_int_equal(arr->type, JSON_ARRAY);
	assert_int_equal(n, arr->n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(pb[i], arr->items[i].str);
}

static void same_labels(Types__V1__LabelPair **l, size_t n, const struct json_value *arr)
{
	assert_int_equal(n, arr->n);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(l[i]->name, jget(&arr->items[i], "name")->str);
		assert_string_equal(l[i]->value, jget(&arr->items[i], "value")->str);
	}
}

static void same_levels(Querier__V1__Level **lv, size_t n, const struct json_value *arr)
{
	assert_int_equal(n, arr->n);
	for (size_t i = 0; i < n; i++) {
		const struct json_value *vals = jget(&arr->items[i], "values");

		assert_int_equal(lv[i]->n_values, vals->n);
		for (size_t k = 0; k < vals->n; k++)
			assert_int_equal(lv[i]->values[k], strtoll(vals->items[k].str, NULL, 10));
	}
}

static void test_metadata(void **state)
{
	struct fx f;
	struct both b;
	char json[1024];
	char *m_p2[] = { "{pod=\"p2\"}" }, *m_all[] = { "{}" }, *names[] = { "pod" };

	(void)state;
	fx_open(&f);
	fx_fill_small(&f, 1);

	{
		Querier__V1__ProfileTypesRequest rq = QUERIER__V1__PROFILE_TYPES_REQUEST__INIT;
		Querier__V1__ProfileTypesResponse *r;
		const struct json_value *a;

		char pj[128];

		rq.start = FROM_MS;
		rq.end = TO_MS;
		snprintf(pj, sizeof(pj), "{\"start\":%lld,\"end\":%lld}", (long long)FROM_MS,
			 (long long)TO_MS);
		r = call_both(f.st, "ProfileTypes", &rq.base,
			      &querier__v1__profile_types_response__descriptor, pj, &b);
		a = jget(b.j, "profileTypes");
		assert_int_equal(r->n_profile_types, 2);
		assert_int_equal(r->n_profile_types, a->n);
		for (size_t i = 0; i < a->n; i++) {
			const Types__V1__ProfileType *t = r->profile_types[i];

			assert_string_equal(t->id, jget(&a->items[i], "ID")->str);
			assert_string_equal(t->name, jget(&a->items[i], "name")->str);
			assert_string_equal(t->sample_type, jget(&a->items[i], "sampleType")->str);
			assert_string_equal(t->sample_unit, jget(&a->items[i], "sampleUnit")->str);
			assert_string_equal(t->period_type, jget(&a->items[i], "periodType")->str);
			assert_string_equal(t->period_unit, jget(&a->items[i], "periodUnit")->str);
		}
		assert_string_equal(r->profile_types[1]->id, FX_CPU);
		both_release(&b);
	}
	{
		Types__V1__LabelNamesRequest rq = TYPES__V1__LABEL_NAMES_REQUEST__INIT;
		Types__V1__LabelNamesResponse *r;

		r = call_both(f.st, "LabelNames", &rq.base,
			      &types__v1__label_names_response__descriptor, "{}", &b);
		assert_int_equal(r->n_names, 3);
		same_strings(r->names, r->n_names, jget(b.j, "names"));
		both_release(&b);
	}
	{
		Types__V1__LabelValuesRequest rq = TYPES__V1__LABEL_VALUES_REQUEST__INIT;
		Types__V1__LabelValuesResponse *r;

		rq.name = "pod";
		rq.n_matchers = 1;
		rq.matchers = m_p2;
		rq.start = FROM_MS;
		rq.end = TO_MS;
		snprintf(json, sizeof(json), "{\"name\":\"pod\",\"matchers\":[\"{pod=\\\"p2\\\"}\"],"
			 "\"start\":\"%lld\",\"end\":%lld}", (long long)FROM_MS, (long long)TO_MS);
		r = call_both(f.st, "LabelValues", &rq.base,
			      &types__v1__label_values_response__descriptor, json, &b);
		assert_int_equal(r->n_names, 1);
		assert_string_equal(r->names[0], "p2");
		same_strings(r->names, r->n_names, jget(b.j, "names"));
		both_release(&b);
	}
	{
		Querier__V1__SeriesRequest rq = QUERIER__V1__SERIES_REQUEST__INIT;
		Querier__V1__SeriesResponse *r;
		const struct json_value *a;

		rq.n_matchers = 1;
		rq.matchers = m_all;
		rq.n_label_names = 1;
		rq.label_names = names;
		rq.start = FROM_MS;
		rq.end = TO_MS;
		snprintf(json, sizeof(json), "{\"matchers\":[\"{}\"],\"labelNames\":[\"pod\"],"
			 "\"start\":%lld,\"end\":%lld}", (long long)FROM_MS, (long long)TO_MS);
		r = call_both(f.st, "Series", &rq.base,
			      &querier__v1__series_response__descriptor, json, &b);
		a = jget(b.j, "labelsSet");
		assert_int_equal(r->n_labels_set, 3);
		assert_int_equal(r->n_labels_set, a->n);
		for (size_t i = 0; i < a->n; i++)
			same_labels(r->labels_set[i]->labels, r->labels_set[i]->n_labels,
				    jget(&a->items[i], "labels"));
		both_release(&b);
	}
	fx_close(&f);
}

static void test_flamegraphs(void **state)
{
	struct fx f;
	struct both b;
	char json[1024];

	(void)state;
	fx_open(&f);
	fx_fill_small(&f, 1);
	{
		Querier__V1__SelectMergeStacktracesRequest rq =
			QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
		Querier__V1__SelectMergeStacktracesResponse *r;
		const struct json_value *fg;

		rq.profile_typeid = FX_CPU;
		rq.label_selector = "{service_name=\"api\"}";
		rq.start = FROM_MS;
		rq.end = TO_MS;
		rq.max_nodes = 3;
		snprintf(json, sizeof(json), "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":"
			 "\"{service_name=\\\"api\\\"}\",\"start\":%lld,\"end\":%lld,\"maxNodes\":3}",
			 (long long)FROM_MS, (long long)TO_MS);
		r = call_both(f.st, "SelectMergeStacktraces", &rq.base,
			      &querier__v1__select_merge_stacktraces_response__descriptor, json, &b);
		assert_non_null(r->flamegraph);
		fg = jget(b.j, "flamegraph");
		assert_int_equal(r->flamegraph->total, 510);
		assert_int_equal(r->flamegraph->total, jint(fg, "total"));
		assert_int_equal(r->flamegraph->max_self, jint(fg, "maxSelf"));
		same_strings(r->flamegraph->names, r->flamegraph->n_names, jget(fg, "names"));
		assert_true(r->flamegraph->n_levels >= 3);
		same_levels(r->flamegraph->levels, r->flamegraph->n_levels, jget(fg, "levels"));
		/* maxNodes reached the engine: "other" folds the rest */
		assert_true(r->flamegraph->n_names <= 5);
		both_release(&b);
	}
	{
		Querier__V1__SelectMergeStacktracesRequest l =
			QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT, rr = l;
		Querier__V1__DiffRequest rq = QUERIER__V1__DIFF_REQUEST__INIT;
		Querier__V1__DiffResponse *r;
		const struct json_value *fg;

		l.profile_typeid = rr.profile_typeid = FX_CPU;
		l.start = rr.start = FROM_MS;
		l.end = rr.end = TO_MS;
		rr.label_selector = "{pod=\"p1\"}";
		rq.left = &l;
		rq.right = &rr;
		snprintf(json, sizeof(json), "{\"left\":{\"profileTypeID\":\"" FX_CPU "\",\"start\":"
			 "%lld,\"end\":%lld},\"right\":{\"profileTypeID\":\"" FX_CPU "\","
			 "\"labelSelector\":\"{pod=\\\"p1\\\"}\",\"start\":%lld,\"end\":%lld}}",
			 (long long)FROM_MS, (long long)TO_MS, (long long)FROM_MS, (long long)TO_MS);
		r = call_both(f.st, "Diff", &rq.base,
			      &querier__v1__diff_response__descriptor, json, &b);
		assert_non_null(r->flamegraph);
		fg = jget(b.j, "flamegraph");
		assert_int_equal(r->flamegraph->leftticks, 510);
		assert_int_equal(r->flamegraph->rightticks, 180);
		assert_int_equal(r->flamegraph->leftticks, jint(fg, "leftTicks"));
		assert_int_equal(r->flamegraph->rightticks, jint(fg, "rightTicks"));
		assert_int_equal(r->flamegraph->total, jint(fg, "total"));
		assert_int_equal(r->flamegraph->max_self, jint(fg, "maxSelf"));
		same_strings(r->flamegraph->names, r->flamegraph->n_names, jget(fg, "names"));
		same_levels(r->flamegraph->levels, r->flamegraph->n_levels, jget(fg, "levels"));
		assert_int_equal(r->flamegraph->levels[0]->n_values, 7);
		both_release(&b);
	}
	fx_close(&f);
}

static void test_profile_and_series(void **state)
{
	struct fx f;
	struct both b;
	char json[1024];
	char *group[] = { "pod" };

	(void)state;
	fx_open(&f);
	fx_fill_small(&f, 1);
	{
		Querier__V1__SelectMergeProfileRequest rq = QUERIER__V1__SELECT_MERGE_PROFILE_REQUEST__INIT;
		Perftools__Profiles__Profile *r;
		const struct json_value *st, *smp;
		long long sum = 0;

		rq.profile_typeid = FX_CPU;
		rq.label_selector = "{service_name=\"api\"}";
		rq.start = FROM_MS;
		rq.end = TO_MS;
		snprintf(json, sizeof(json), "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":"
			 "\"{service_name=\\\"api\\\"}\",\"start\":%lld,\"end\":%lld}",
			 (long long)FROM_MS, (long long)TO_MS);
		r = call_both(f.st, "SelectMergeProfile", &rq.base,
			      &perftools__profiles__profile__descriptor, json, &b);
		st = jget(b.j, "stringTable");
		same_strings(r->string_table, r->n_string_table, st);
		smp = jget(b.j, "sample");
		assert_int_equal(r->n_sample, smp->n);
		for (size_t i = 0; i < r->n_sample; i++) {
			const struct json_value *v = jget(&smp->items[i], "value");

			assert_int_equal(r->sample[i]->n_value, v->n);
			for (size_t k = 0; k < v->n; k++)
				assert_int_equal(r->sample[i]->value[k], strtoll(v->items[k].str, NULL, 10));
			sum += r->sample[i]->value[0];
		}
		assert_int_equal(sum, 510);
		assert_int_equal(r->n_location, jget(b.j, "location")->n);
		assert_int_equal(r->time_nanos, jint(b.j, "timeNanos"));
		both_release(&b);
	}
	{
		Querier__V1__SelectSeriesRequest rq = QUERIER__V1__SELECT_SERIES_REQUEST__INIT;
		Querier__V1__SelectSeriesResponse *r;
		const struct json_value *a;

		rq.profile_typeid = FX_CPU;
		rq.label_selector = "{}";
		rq.start = FROM_MS;
		rq.end = TO_MS;
		rq.step = 10;
		rq.n_group_by = 1;
		rq.group_by = group;
		snprintf(json, sizeof(json), "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":"
			 "\"{}\",\"start\":%lld,\"end\":%lld,\"step\":10,\"groupBy\":[\"pod\"]}",
			 (long long)FROM_MS, (long long)TO_MS);
		r = call_both(f.st, "SelectSeries", &rq.base,
			      &querier__v1__select_series_response__descriptor, json, &b);
		a = jget(b.j, "series");
		assert_int_equal(r->n_series, 2);
		assert_int_equal(r->n_series, a->n);
		for (size_t i = 0; i < a->n; i++) {
			const struct json_value *pts = jget(&a->items[i], "points");

			same_labels(r->series[i]->labels, r->series[i]->n_labels,
				    jget(&a->items[i], "labels"));
			assert_int_equal(r->series[i]->n_points, pts->n);
			for (size_t k = 0; k < pts->n; k++) {
				assert_true(r->series[i]->points[k]->value ==
					    strtod(jget(&pts->items[k], "value")->str, NULL));
				assert_int_equal(r->series[i]->points[k]->timestamp,
						 jint(&pts->items[k], "timestamp"));
			}
		}
		/* p2 (330) before p1 (180); its profiles at T0+20 s and T0+30 s end their steps. */
		assert_true(r->series[0]->points[1]->value == 150.0);
		assert_int_equal(r->series[0]->points[1]->timestamp, 1700000030000LL);
		both_release(&b);

		/* limit (field 9): the largest group only, in both encodings. */
		rq.limit = 1;
		snprintf(json, sizeof(json), "{\"profileTypeID\":\"" FX_CPU "\",\"labelSelector\":"
			 "\"{}\",\"start\":%lld,\"end\":%lld,\"step\":10,\"groupBy\":[\"pod\"],"
			 "\"limit\":1}", (long long)FROM_MS, (long long)TO_MS);
		r = call_both(f.st, "SelectSeries", &rq.base,
			      &querier__v1__select_series_response__descriptor, json, &b);
		assert_int_equal(r->n_series, 1);
		assert_int_equal(jget(b.j, "series")->n, 1);
		assert_string_equal(r->series[0]->labels[0]->value, "p2");
		both_release(&b);
	}
	fx_close(&f);
}

static int call_pb(struct store *st, const char *method, const void *body, size_t len,
		   const struct query_limits *lim, struct buf *out, struct err_msg *msg)
{
	buf_reset(out);
	err_clear(msg);
	return query_connect_proto(st, "t1", method, body, len, lim, out, msg);
}

/* call_pb of SelectMergeStacktraces with `rq` packed. */
static int call_stacks(struct store *st, const Querier__V1__SelectMergeStacktracesRequest *rq,
		       const struct query_limits *lim, struct buf *out, struct err_msg *msg)
{
	uint8_t raw[4096];

	assert_true(querier__v1__select_merge_stacktraces_request__get_packed_size(rq) <=
		    sizeof(raw));
	return call_pb(st, "SelectMergeStacktraces", raw,
		       querier__v1__select_merge_stacktraces_request__pack(rq, raw), lim, out, msg);
}

/* The SelectMergeStacktraces answer in `out`, unpacked (owned), of a
 * format other than the flame graph's. */
static Querier__V1__SelectMergeStacktracesResponse *unpack_stacks(const struct buf *out)
{
	Querier__V1__SelectMergeStacktracesResponse *r =
		querier__v1__select_merge_stacktraces_response__unpack(NULL, out->len,
								       (const uint8_t *)out->data);

	assert_non_null(r);
	assert_null(r->flamegraph);
	return r;
}

/*
 * Pyroscope's tree bytes read back the way its UnmarshalTree reads them:
 * a stack of parents, each node (name length, name, self, child count)
 * popping its parent; every node with a self becomes a folded line.
 */
struct tnode {
	char path[256];
	uint64_t kids;
};

static void read_tree(const uint8_t *p, size_t len, char *folded, size_t cap)
{
	struct tnode st[64];
	size_t n = 0, off = 0;
	int first = 1;

	folded[0] = '\0';
	while (off < len) {
		uint64_t nl = 0, self = 0, kids = 0;
		char path[256];
		size_t k;

		k = varint_get(p + off, p + len, &nl);
		assert_true(k > 0 && off + k + nl <= len);
		off += k;
		if (first) {
			path[0] = '\0';
			assert_int_equal(nl, 0);
		} else {
			assert_true(n > 0);
			size_t pl = strlen(st[n - 1].path);

			assert_true(pl + 1 + nl < sizeof(path));
			memcpy(path, st[n - 1].path, pl);
			if (pl)
				path[pl++] = ';';
			memcpy(path + pl, p + off, nl);
			path[pl + nl] = '\0';
			if (--st[n - 1].kids == 0)
				n--;
		}
		off += nl;
		k = varint_get(p + off, p + len, &self);
		assert_true(k > 0);
		off += k;
		k = varint_get(p + off, p + len, &kids);
		assert_true(k > 0);
		off += k;
		if (self)
			snprintf(folded + strlen(folded), cap - strlen(folded), "%s %llu\n", path,
				 (unsigned long long)self);
		if (kids) {
			assert_true(n < 64);
			memcpy(st[n].path, path, sizeof(path));
			st[n++].kids = kids;
		}
		first = 0;
	}
	assert_int_equal(n, 0);
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* format TREE (profilecli): the tree bytes hold p1's four stacks, nothing else. */
static void test_tree_format(void **state)
{
	Querier__V1__SelectMergeStacktracesRequest rq =
		QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	Querier__V1__SelectMergeStacktracesResponse *r;
	struct err_msg msg = { { 0 } };
	char folded[4096], *lines[16], *save = NULL;
	struct buf out;
	struct fx f;
	size_t n = 0;

	(void)state;
	fx_open(&f);
	fx_fill_small(&f, 1);
	buf_init(&out, 1 << 30);
	rq.profile_typeid = FX_CPU;
	rq.label_selector = "{pod=\"p1\"}";
	rq.start = FROM_MS;
	rq.end = TO_MS;
	rq.format = QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_TREE;
	assert_int_equal(call_stacks(f.st, &rq, NULL, &out, &msg), 0);
	r = unpack_stacks(&out);
	read_tree(r->tree.data, r->tree.len, folded, sizeof(folded));
	for (char *l = strtok_r(folded, "\n", &save); l && n < 16; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof(*lines), cmp_line);
	assert_int_equal(n, 4);
	assert_string_equal(lines[0], "main 5");
	assert_string_equal(lines[1], "main;gc 25");
	assert_string_equal(lines[2], "main;serve;handle 100");
	assert_string_equal(lines[3], "main;serve;parse 50");
	querier__v1__select_merge_stacktraces_response__free_unpacked(r, NULL);
	/* DOT: Graphviz's call graph in `dot`, trimmed to maxNodes functions. */
	rq.format = QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_DOT;
	rq.max_nodes = 2;
	buf_reset(&out);
	assert_int_equal(call_stacks(f.st, &rq, NULL, &out, &msg), 0);
	r = unpack_stacks(&out);
	assert_non_null(strstr(r->dot, "digraph \"unhex\" {"));
	assert_non_null(strstr(r->dot, "tooltip=\"main (flat 5, cum 180 "));
	assert_non_null(strstr(r->dot, "tooltip=\"serve (flat 0, cum 150 "));
	assert_null(strstr(r->dot, "N3 ["));
	assert_non_null(strstr(r->dot, "N1 -> N2 "));
	querier__v1__select_merge_stacktraces_response__free_unpacked(r, NULL);
	/* pprof is SelectMergeProfile's: a 400 that says so. */
	rq.format = QUERIER__V1__PROFILE_FORMAT__PROFILE_FORMAT_PPROF;
	buf_reset(&out);
	assert_int_equal(call_stacks(f.st, &rq, NULL, &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "format"));
	buf_release(&out);
	fx_close(&f);
}

static void test_rejects(void **state)
{
	struct fx f;
	struct buf out, small;
	struct err_msg msg = { { 0 } };
	Querier__V1__SelectMergeStacktracesRequest rq =
		QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST__INIT;
	Querier__V1__SeriesRequest sr = QUERIER__V1__SERIES_REQUEST__INIT;
	char *many[QUERY_MAX_MATCHERS + 1];
	uint8_t raw[4096];
	size_t n;
	/* field 1 (a string) sent as a varint; a length past the end; a bad tag */
	static const uint8_t wrong_type[] = { 0x08, 0x01 };
	static const uint8_t too_long[] = { 0x0a, 0x40, 'a', 'b' };
	static const uint8_t bad_tag[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					   0x01 };

	(void)state;
	fx_open(&f);
	fx_fill_small(&f, 1);
	buf_init(&out, 1 << 30);

	assert_int_equal(call_pb(f.st, "SelectMergeStacktraces", wrong_type, sizeof(wrong_type),
				 NULL, &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "SelectMergeStacktracesRequest"));
	assert_non_null(strstr(msg.text, "not a valid protobuf"));
	assert_int_equal(call_pb(f.st, "SelectMergeStacktraces", too_long, sizeof(too_long), NULL,
				 &out, &msg), ERR_INVALID);
	assert_int_equal(call_pb(f.st, "LabelNames", bad_tag, sizeof(bad_tag), NULL, &out, &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "LabelNamesRequest"));

	/* every truncation of a valid request is rejected or decodes cleanly */
	rq.profile_typeid = FX_CPU;
	rq.label_selector = "{service_name=\"api\"}";
	rq.start = FROM_MS;
	rq.end = TO_MS;
	n = querier__v1__select_merge_stacktraces_request__pack(&rq, raw);
	assert_int_equal(call_pb(f.st, "SelectMergeStacktraces", raw, n, NULL, &out, &msg), 0);
	assert_int_equal(call_pb(f.st, "SelectMergeStacktraces", raw, n - 1, NULL, &out, &msg),
			 ERR_INVALID);
	for (size_t k = 0; k < n; k++) {
		int rc = call_pb(f.st, "SelectMergeStacktraces", raw, k, NULL, &out, &msg);

		assert_true(rc == 0 || rc == ERR_INVALID);
		assert_true(rc == 0 || msg.text[0]);
	}

	/* the same checks as JSON: semantics errors come from the shared code */
	assert_int_equal(call_pb(f.st, "Diff", "", 0, NULL, &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "field left is required") ? msg.text : NULL);
	assert_int_equal(call_pb(f.st, "LabelValues", "", 0, NULL, &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "label name"));
	assert_int_equal(call_pb(f.st, "Nope", "", 0, NULL, &out, &msg), ERR_NOT_FOUND);
	rq.start = TO_MS;
	rq.end = FROM_MS;
	assert_int_equal(call_stacks(f.st, &rq, NULL, &out, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "end must be after start"));
	rq.start = -5;
	assert_int_equal(call_stacks(f.st, &rq, NULL, &out, &msg), ERR_INVALID);

	/* limits: matcher count, response size, memory budget */
	for (size_t i = 0; i < QUERY_MAX_MATCHERS + 1; i++)
		many[i] = "{}";
	sr.n_matchers = QUERY_MAX_MATCHERS + 1;
	sr.matchers = many;
	n = querier__v1__series_request__pack(&sr, raw);
	assert_int_equal(call_pb(f.st, "Series", raw, n, NULL, &out, &msg), ERR_TOO_LARGE);
	if (!strstr(msg.text, "matchers"))
		fail_msg("message: %s", msg.text);
	rq.start = FROM_MS;
	rq.end = TO_MS;
	buf_init(&small, 32);
	assert_int_equal(call_stacks(f.st, &rq, NULL, &small, &msg), ERR_TOO_LARGE);
	assert_true(msg.text[0]);
	buf_release(&small);
	{
		struct query_limits lim = { 0 };

		lim.max_bytes = 1024;
		assert_int_equal(call_stacks(f.st, &rq, &lim, &out, &msg), ERR_TOO_LARGE);
		assert_true(msg.text[0]);
	}
	buf_release(&out);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_flamegraphs),
		cmocka_unit_test(test_profile_and_series),
		cmocka_unit_test(test_tree_format),
		cmocka_unit_test(test_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
