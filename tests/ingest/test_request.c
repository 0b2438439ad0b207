/* test_request.c - Pyroscope's POST /ingest in every format through a real
 * store: the labels and profile type IDs each agent's request gets (the
 * naming table of docs/ingest.md), exact totals read back, and the cases
 * where two kinds of data must never share a series. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "fixture.h"
#include "ingest/ingest.h"
#include "jfr_build.h"
#include "pprof_builder.h"
#include "push.pb-c.h"

/* Every series of tenant t1 as "labels... => total", one per line, sorted by id. */
struct listing {
	struct fx *f;
	char text[16384];
	size_t len;
	int n;
};

static int sum_cb(void *ctx, const struct store_profile_view *p)
{
	int64_t *t = ctx;

	for (size_t i = 0; i < p->n; i++)
		*t += p->values[i];
	return 0;
}

static int list_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct listing *s = ctx;
	int64_t total = 0;

	(void)part;
	assert_int_equal(store_profiles_each(s->f->st, "t1", id, 0, INT64_MAX, sum_cb, &total, NULL),
			 0);
	for (size_t i = 0; i < n; i++)
		s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len, "%s%s=%s",
					   i ? "," : "", l[i].name, l[i].value);
	s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len, " => %lld\n",
				   (long long)total);
	s->n++;
	return 0;
}

static void list(struct fx *f, struct listing *s)
{
	memset(s, 0, sizeof(*s));
	s->f = f;
	assert_int_equal(store_series_each(f->st, "t1", list_cb, s), 0);
}

/* Asserts that the listing has a line containing `want` (labels are sorted by name). */
static void has(const struct listing *s, const char *want)
{
	if (!strstr(s->text, want))
		fail_msg("want \"%s\" in\n%s", want, s->text);
}

static void hasnt(const struct listing *s, const char *what)
{
	if (strstr(s->text, what))
		fail_msg("did not want \"%s\" in\n%s", what, s->text);
}

static struct ingest_request req(const char *name, enum ingest_format f, const void *data,
				 size_t len)
{
	struct ingest_request r;

	memset(&r, 0, sizeof(r));
	r.name = name;
	r.format = f;
	r.sample_rate = 100;
	r.from_ns = 1700000000000000000LL;
	r.until_ns = 1700000010000000000LL;
	r.data = data;
	r.len = len;
	return r;
}

static int send(struct fx *f, const struct ingest_request *r, struct err_msg *msg)
{
	struct ingest_stats st;

	err_clear(msg);
	return ingest_pyroscope(f->st, &f->lim, "t1", r, &st, msg);
}

/* A Go contention profile: sample types contentions and delay. */
static uint8_t *go_lock_profile(size_t *len, int64_t n, int64_t delay)
{
	struct pb *b = pb_new(4, 4);
	uint64_t s[] = { 1 };
	int64_t v[] = { n, delay };
	uint8_t *bytes;

	pb_sample_type(b, "contentions", "count");
	pb_sample_type(b, "delay", "nanoseconds");
	pb_period(b, "contentions", "count", 1);
	pb_function(b, 1, "sync.(*Mutex).Unlock", "mutex.go");
	pb_location(b, 1, 0, 0, 1, 10);
	pb_sample(b, s, 1, v, 2);
	bytes = pb_pack(b, 1, len);
	pb_free(b);
	return bytes;
}

static void test_go_mutex_block_apart(void **state)
{
	static const char mutex_stc[] =
		"{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"mutex_count\"},"
		"\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"mutex_duration\"}}";
	static const char block_stc[] =
		"{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"block_count\"},"
		"\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"block_duration\"}}";
	static const char name[] = "app{__session_id__=1f2e3d4c5b6a7988,env=prod,"
				   "otel.scope.name=com.grafana.pyroscope/go}";
	struct fx *f = *state;
	struct err_msg msg;
	struct listing s;
	size_t lm, lb;
	uint8_t *pm = go_lock_profile(&lm, 3, 3000), *pbk = go_lock_profile(&lb, 5, 5000);
	struct ingest_request r;

	r = req(name, INGEST_FORMAT_PPROF, pm, lm);
	r.spy_name = "gospy";
	r.sample_type_config = mutex_stc;
	r.stc_len = strlen(mutex_stc);
	assert_int_equal(send(f, &r, &msg), 0);
	r = req(name, INGEST_FORMAT_PPROF, pbk, lb);
	r.spy_name = "gospy";
	r.sample_type_config = block_stc;
	r.stc_len = strlen(block_stc);
	assert_int_equal(send(f, &r, &msg), 0);
	list(f, &s);
	assert_int_equal(s.n, 4);
	has(&s, "__name__=mutex,__profile_type__=mutex:contentions:count:contentions:count,env=prod,"
		"otel.scope.name=com.grafana.pyroscope/go,pyroscope_spy=gospy,service_name=app => 3\n");
	has(&s, "__profile_type__=mutex:delay:nanoseconds:contentions:count,");
	has(&s, "__name__=block,__profile_type__=block:contentions:count:contentions:count,"
		"env=prod,otel.scope.name=com.grafana.pyroscope/go,pyroscope_spy=gospy,"
		"service_name=app => 5\n");
	has(&s, "__profile_type__=block:delay:nanoseconds:contentions:count,env=prod,"
		"otel.scope.name=com.grafana.pyroscope/go,pyroscope_spy=gospy,service_name=app => 5000\n");
	hasnt(&s, "__session_id__");
	free(pm);
	free(pbk);
}

static void test_pprof_names(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_new(4, 4);
	uint64_t loc[] = { 1 };
	int64_t v[] = { 25 };
	struct err_msg msg;
	struct listing s;
	struct ingest_request r;
	uint8_t *bytes;
	size_t len;

	pb_sample_type(b, "goroutine", "count");
	pb_period(b, "goroutine", "count", 1);
	pb_function(b, 1, "runtime.gopark", "proc.go");
	pb_location(b, 1, 0, 0, 1, 1);
	pb_sample(b, loc, 1, v, 1);
	b->p.time_nanos = 1700000000; /* microseconds, as old agents wrote: taken as absent */
	bytes = pb_pack(b, 0, &len);
	/* No sample_type_config: Pyroscope's defaults name goroutines. */
	r = req("svc", INGEST_FORMAT_PPROF, bytes, len);
	assert_int_equal(send(f, &r, &msg), 0);
	/* The kind suffix declares the name; the service loses it. */
	r = req("svc2.goroutines", INGEST_FORMAT_PPROF, bytes, len);
	assert_int_equal(send(f, &r, &msg), 0);
	list(f, &s);
	has(&s, "__name__=goroutines,__profile_type__=goroutines:goroutine:count:goroutine:count,"
		"service_name=svc => 25\n");
	has(&s, "service_name=svc2 => 25\n");
	free(bytes);
	pb_free(b);
}

/* An old .NET agent: every function id 0, types with '-', an empty period type. */
static void test_dotnet(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_new(4, 4);
	uint64_t s1[] = { 7, 8 };
	int64_t v[] = { 10000000, 4096 };
	struct err_msg msg;
	struct listing s;
	struct ingest_request r;
	uint8_t *bytes;
	size_t len;

	pb_sample_type(b, "cpu", "nanoseconds");
	pb_sample_type(b, "inuse-space", "bytes");
	pb_period(b, "", "nanoseconds", 1);
	pb_function(b, 0, "Program.Work", "");
	pb_function(b, 0, "Program.Main", "");
	pb_location(b, 7, 0, 0, 7, 0);
	pb_location(b, 8, 0, 0, 8, 0);
	pb_sample(b, s1, 2, v, 2);
	bytes = pb_pack(b, 1, &len);
	r = req("dotnet-app", INGEST_FORMAT_PPROF, bytes, len);
	/* Without saying it is .NET, function id 0 is refused. */
	assert_int_equal(send(f, &r, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "function 0: id is 0"));
	r.spy_name = "dotnetspy";
	assert_int_equal(send(f, &r, &msg), 0);
	list(f, &s);
	has(&s, "__profile_type__=process_cpu:cpu:nanoseconds::nanoseconds,"
		"pyroscope_spy=dotnetspy,service_name=dotnet-app => 10000000\n");
	has(&s, "__profile_type__=process_cpu:inuse_space:bytes::nanoseconds,");
	free(bytes);
	pb_free(b);
}

/* py-spy and rbspy: functions named "<file> <name>", py-spy's absolute files excepted. */
static void test_scripting(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_new(4, 4);
	uint64_t s1[] = { 1, 2 };
	int64_t v[] = { 1 };
	struct err_msg msg;
	struct ingest_request r;
	struct store_symbols *sym;
	struct store_function fn;
	uint8_t *bytes;
	size_t len;
	int saw_rel = 0, saw_abs = 0;

	pb_sample_type(b, "cpu", "nanoseconds");
	pb_period(b, "cpu", "nanoseconds", 10000000);
	pb_function(b, 1, "work", "app/jobs.py");
	pb_function(b, 2, "main", "/usr/lib/python3/site.py");
	pb_location(b, 1, 0, 0, 1, 3);
	pb_location(b, 2, 0, 0, 2, 9);
	pb_sample(b, s1, 2, v, 1);
	bytes = pb_pack(b, 0, &len);
	r = req("py-app", INGEST_FORMAT_PPROF, bytes, len);
	r.spy_name = "pyspy";
	assert_int_equal(send(f, &r, &msg), 0);
	assert_int_equal(store_symbols_get(f->st, "t1", 1, &sym, &msg), 0);
	for (uint32_t i = 1; store_symbols_function(sym, i, &fn) == 0; i++) {
		saw_rel |= strcmp(fn.name, "app/jobs.py work") == 0;
		saw_abs |= strcmp(fn.name, "main") == 0;
	}
	store_symbols_put(sym);
	assert_true(saw_rel && saw_abs);
	free(bytes);
	pb_free(b);
}

/* Alloy's godeltaprof names and its __delta__ label arrive on push.v1. */
static void test_godeltaprof(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_new(4, 4);
	uint64_t s1[] = { 1 };
	int64_t v[] = { 1, 64, 1, 64 };
	Push__V1__PushRequest rq = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries ser = PUSH__V1__RAW_PROFILE_SERIES__INIT, *serp = &ser;
	Push__V1__LabelPair l1 = PUSH__V1__LABEL_PAIR__INIT, l2 = PUSH__V1__LABEL_PAIR__INIT;
	Push__V1__LabelPair l3 = PUSH__V1__LABEL_PAIR__INIT;
	Push__V1__LabelPair *lp[] = { &l1, &l2, &l3 };
	Push__V1__RawSample smp = PUSH__V1__RAW_SAMPLE__INIT, *smpp = &smp;
	struct ingest_stats st;
	struct err_msg msg = { { 0 } };
	struct listing s;
	uint8_t *body;
	size_t len;

	pb_sample_type(b, "alloc_objects", "count");
	pb_sample_type(b, "alloc_space", "bytes");
	pb_sample_type(b, "inuse_objects", "count");
	pb_sample_type(b, "inuse_space", "bytes");
	pb_period(b, "space", "bytes", 524288);
	pb_function(b, 1, "main.alloc", "main.go");
	pb_location(b, 1, 0, 0, 1, 1);
	pb_sample(b, s1, 1, v, 4);
	smp.raw_profile.data = pb_pack(b, 1, &smp.raw_profile.len);
	l1.name = "__name__";
	l1.value = "godeltaprof_memory";
	l2.name = "service_name";
	l2.value = "alloy-scraped";
	/* Alloy sends __delta__="false"; Pyroscope drops it before storing. */
	l3.name = "__delta__";
	l3.value = "false";
	ser.labels = lp;
	ser.n_labels = 3;
	ser.samples = &smpp;
	ser.n_samples = 1;
	rq.series = &serp;
	rq.n_series = 1;
	len = push__v1__push_request__get_packed_size(&rq);
	body = malloc(len);
	push__v1__push_request__pack(&rq, body);
	assert_int_equal(ingest_push(f->st, &f->lim, "t1", body, len, 0, &st, &msg), 0);
	list(f, &s);
	has(&s, "__name__=memory,__profile_type__=memory:inuse_space:bytes:space:bytes,"
		"service_name=alloy-scraped => 64\n");
	hasnt(&s, "godeltaprof");
	hasnt(&s, "__delta__");
	free(body);
	free(smp.raw_profile.data);
	pb_free(b);
}

static void test_text_formats(void **state)
{
	static const char folded[] = "main;work 3\nmain;idle 1\n";
	struct fx *f = *state;
	struct err_msg msg;
	struct listing s;
	struct ingest_request r;

	/* No suffix: cpu, 100 Hz: each sample is 10 ms. */
	r = req("py{env=dev}", INGEST_FORMAT_FOLDED, folded, strlen(folded));
	r.spy_name = "pyroscope-rs";
	assert_int_equal(send(f, &r, &msg), 0);
	/* A memory kind has no period: the two parts stay empty. */
	r = req("rb.app.alloc_objects{service_name=rb}", INGEST_FORMAT_LINES, folded,
		strlen(folded));
	assert_int_equal(send(f, &r, &msg), 0);
	r = req("go.itimer", INGEST_FORMAT_FOLDED, folded, strlen(folded));
	r.sample_rate = 0; /* without a rate, samples stay counts */
	assert_int_equal(send(f, &r, &msg), 0);
	r = req("java.lock_duration", INGEST_FORMAT_FOLDED, folded, strlen(folded));
	assert_int_equal(send(f, &r, &msg), 0);
	/* A span profile (profile_id) is skipped, as Pyroscope skips it. */
	r = req("py{profile_id=abc}", INGEST_FORMAT_FOLDED, folded, strlen(folded));
	assert_int_equal(send(f, &r, &msg), 0);
	list(f, &s);
	assert_int_equal(s.n, 4);
	has(&s, "__name__=process_cpu,__profile_type__=process_cpu:cpu:nanoseconds:cpu:nanoseconds,"
		"env=dev,pyroscope_spy=pyroscope-rs,service_name=py => 40000000\n");
	has(&s, "__name__=memory,__profile_type__=memory:alloc_objects:count::,app_name=rb.app,"
		"service_name=rb => 2\n");
	has(&s, "__profile_type__=process_cpu:samples:count::,service_name=go => 4\n");
	has(&s, "__name__=block,__profile_type__=block:delay:nanoseconds::,service_name=java => 4\n");
	/* An unknown kind suffix. */
	r = req("my.app", INGEST_FORMAT_FOLDED, folded, strlen(folded));
	assert_int_equal(send(f, &r, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "unknown profile type \"app\""));
}

static void test_speedscope(void **state)
{
	static const char one[] =
		"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		"\"shared\":{\"frames\":[{\"name\":\"main\"},{\"name\":\"work\"}]},"
		"\"profiles\":[{\"type\":\"sampled\",\"name\":\"thread 1\",\"unit\":\"milliseconds\","
		"\"startValue\":0,\"endValue\":7,\"samples\":[[0,1],[0]],\"weights\":[5,2]}]}";
	static const char two[] =
		"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		"\"shared\":{\"frames\":[{\"name\":\"main\"},{\"name\":\"work\"}]},"
		"\"profiles\":[{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"nanoseconds\","
		"\"samples\":[[0,1]],\"weights\":[1500]},"
		"{\"type\":\"sampled\",\"name\":\"heap\",\"unit\":\"bytes\",\"startValue\":1,"
		"\"samples\":[[0,1]],\"weights\":[4096]}]}";
	struct fx *f = *state;
	struct err_msg msg;
	struct listing s;
	struct ingest_request r;

	r = req("ss", INGEST_FORMAT_SPEEDSCOPE, one, strlen(one));
	assert_int_equal(send(f, &r, &msg), 0);
	/* Several profiles: told apart by unit, in the application name. */
	r = req("multi", INGEST_FORMAT_SPEEDSCOPE, two, strlen(two));
	assert_int_equal(send(f, &r, &msg), 0);
	list(f, &s);
	has(&s, "__profile_type__=process_cpu:cpu:nanoseconds:cpu:nanoseconds,"
		"profile_name=thread 1,service_name=ss => 7000000\n");
	has(&s, "__profile_type__=wall:wall:nanoseconds:cpu:nanoseconds,profile_name=t,"
		"service_name=multi => 1500\n");
	has(&s, "__profile_type__=memory:samples:bytes::,profile_name=heap,service_name=multi => "
		"4096\n");
}

static void test_jfr(void **state)
{
	static const struct jb_event ev[] = {
		{ JB_SETTING, 0, 0, 0, 0, "event", "itimer" },
		{ JB_EXEC, 1, 1, 1, 0, NULL, NULL },
		{ JB_EXEC, 2, 1, 0, 0, NULL, NULL },
		{ JB_MON, 1, 0, 0, 500, NULL, NULL },
	};
	static const uint8_t snap[] = {
		0x0a, 0x0a, 0x08, 0x01, 0x12, 0x06, 0x0a, 0x04, 0x08, 0x0a, 0x10, 0x0b,
		0x12, 0x09, 0x08, 0x0a, 0x12, 0x05, 'r', 'o', 'u', 't', 'e',
		0x12, 0x08, 0x08, 0x0b, 0x12, 0x04, '/', 'a', 'p', 'i',
	};
	struct fx *f = *state;
	struct jb b = { 0 };
	struct buf gz, lgz;
	struct err_msg msg;
	struct listing s;
	struct ingest_request r;

	jb_chunk(&b, ev, 4, 1000000000ULL);
	buf_init(&gz, 1 << 24);
	buf_init(&lgz, 1 << 20);
	assert_int_equal(gzip_compress(b.p, b.n, 1, &gz), 0);
	assert_int_equal(gzip_compress(snap, sizeof(snap), 1, &lgz), 0);
	/* As pyroscope-java sends it: gzipped jfr and labels parts. */
	r = req("java.app{service_name=orders,env=prod}", INGEST_FORMAT_JFR, gz.data, gz.len);
	r.spy_name = "javaspy";
	r.jfr_labels = lgz.data;
	r.labels_len = lgz.len;
	assert_int_equal(send(f, &r, &msg), 0);
	list(f, &s);
	has(&s, "__name__=process_cpu,__profile_type__=process_cpu:cpu:nanoseconds:cpu:nanoseconds,"
		"app_name=java.app,env=prod,jfr_event=itimer,pyroscope_spy=javaspy,"
		"route=/api,service_name=orders => 10000000\n");
	has(&s, "app_name=java.app,env=prod,jfr_event=itimer,pyroscope_spy=javaspy,"
		"service_name=orders => 10000000\n");
	has(&s, "__name__=mutex,__profile_type__=mutex:delay:nanoseconds:mutex:count,");
	/* A raw body, no labels part; the whole application name is the service. */
	r = req("java.app", INGEST_FORMAT_JFR, b.p, b.n);
	assert_int_equal(send(f, &r, &msg), 0);
	list(f, &s);
	has(&s, "service_name=java.app => 20000000\n");
	/* Garbage. */
	r = req("java.app", INGEST_FORMAT_JFR, "FLR", 3);
	assert_int_equal(send(f, &r, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "jfr:"));
	buf_release(&gz);
	buf_release(&lgz);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(test_go_mutex_block_apart),
		FX_TEST(test_pprof_names),
		FX_TEST(test_dotnet),
		FX_TEST(test_scripting),
		FX_TEST(test_godeltaprof),
		FX_TEST(test_text_formats),
		FX_TEST(test_speedscope),
		FX_TEST(test_jfr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
