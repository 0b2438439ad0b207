/* test_ingest.c - ingest_profiles / ingest_legacy / ingest_push through a
 * real RocksDB store in a fresh temp directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "ingest/ingest.h"
#include "fixture.h"
#include "pprof_builder.h"
#include "push_builder.h"
#include "storage/storage.h"

static const struct store_label app_labels[] = {
	{ "service_name", "app" },
	{ "__name__", "process_cpu" },
	{ "env", "prod" },
};

struct seen {
	int n;
	char types[4][128];
	uint64_t ids[4];
	uint32_t part;
};

static int series_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l, size_t n)
{
	struct seen *s = ctx;
	const char *pt = NULL;

	for (size_t i = 0; i < n; i++)
		if (strcmp(l[i].name, "__profile_type__") == 0)
			pt = l[i].value;
	if (s->n < 4 && pt) {
		snprintf(s->types[s->n], sizeof(s->types[0]), "%s", pt);
		s->ids[s->n++] = id;
		s->part = part;
	}
	return 0;
}

struct sum {
	int profiles;
	size_t pairs;
	int64_t total;
	int64_t time_ns;
	int64_t duration_ns;
};

static int profile_cb(void *ctx, const struct store_profile_view *p)
{
	struct sum *s = ctx;

	s->profiles++;
	s->pairs += p->n;
	s->time_ns = p->meta.time_ns;
	s->duration_ns = p->meta.duration_ns;
	for (size_t i = 0; i < p->n; i++)
		s->total += p->values[i];
	return 0;
}

static struct sum read_series(struct fx *f, uint64_t id)
{
	struct sum s = { 0 };
	struct err_msg msg = { { 0 } };

	assert_int_equal(store_profiles_each(f->st, "t1", id, 0, INT64_MAX, profile_cb, &s, &msg), 0);
	return s;
}

static void test_native(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_native_profile();
	size_t len;
	uint8_t *bytes = pb_pack(b, 1, &len);
	struct ingest_series in = { app_labels, 3, bytes, len, NULL, NULL };
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct store_tenant_stats ts;
	struct seen seen = { 0 };
	struct sum sum;

	assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", &in, 1, 1, &stats, &msg), 0);
	/* Locations 1 and 2 are one instruction: stacks s1 and s2 merge; s3 is 0. */
	assert_int_equal(stats.profiles, 2);
	assert_int_equal(stats.samples, 2);
	ts = fx_tenant_stats(f);
	assert_int_equal(ts.series, 2);
	assert_int_equal(ts.profiles, 2);
	assert_int_equal(ts.samples, 2);
	assert_int_equal(ts.mappings, 1);
	assert_int_equal(ts.locations, 2);
	assert_int_equal(store_series_each(f->st, "t1", series_cb, &seen), 0);
	assert_int_equal(seen.n, 2);
	for (int i = 0; i < 2; i++) {
		sum = read_series(f, seen.ids[i]);
		assert_int_equal(sum.profiles, 1);
		assert_int_equal(sum.pairs, 1);
		assert_int_equal(sum.time_ns, 1700000000000000000);
		if (strcmp(seen.types[i], "process_cpu:samples:count:cpu:nanoseconds") == 0)
			assert_int_equal(sum.total, 3);
		else if (strcmp(seen.types[i], "process_cpu:cpu:nanoseconds:cpu:nanoseconds") == 0)
			assert_int_equal(sum.total, 30000000);
		else
			fail_msg("unexpected profile type %s", seen.types[i]);
	}
	/* The stored location is the file offset, for both load addresses. */
	{
		struct store_symbols *sym;
		struct store_location_view lv;
		struct store_mapping m;

		assert_int_equal(store_symbols_get(f->st, "t1", seen.part, &sym, &msg), 0);
		assert_int_equal(store_symbols_location_count(sym), 2);
		assert_int_equal(store_symbols_location(sym, 1, &lv), 0);
		assert_int_equal(lv.address, 0x1100);
		assert_int_equal(store_symbols_mapping(sym, lv.mapping_id, &m), 0);
		assert_string_equal(m.build_id, "abcdef0123");
		store_symbols_put(sym);
	}
	free(bytes);
	pb_free(b);
}


/* What struct ingest_hooks was told about one request. */
struct raw_seen {
	int classified[8];               /* raw_class calls per mapping (1-based by file) */
	int totals;
	int total_cls;
	uint64_t total_profiles, total_samples;
	int binaries;
	char bin_file[4][32];
	int bin_cls[4];
	uint64_t bin_profiles[4], bin_samples[4];
};

static int mapping_no(const char *filename)
{
	static const char *const files[] = { "", "/usr/bin/app", "/lib/libc.so.6", "[vdso]",
					     "/usr/bin/named" };

	for (int i = 1; i < 5; i++)
		if (!strcmp(filename, files[i]))
			return i;
	fail_msg("unexpected binary %s", filename);
	return 0;
}

static int raw_class(void *ctx, const char *tenant, const char *service, const char *build_id,
		     const char *filename)
{
	struct raw_seen *r = ctx;
	int m = mapping_no(filename);

	assert_string_equal(tenant, "t1");
	assert_string_equal(service, "app");
	r->classified[m]++;
	if (m == 3) {
		assert_string_equal(build_id, "");
		return -2; /* left out */
	}
	return 2; /* app and libc share a class */
}

static void raw_class_total(void *ctx, const char *tenant, const char *service, int cls,
			    uint64_t profiles, uint64_t samples)
{
	struct raw_seen *r = ctx;

	(void)tenant, (void)service;
	r->totals++;
	r->total_cls = cls;
	r->total_profiles = profiles;
	r->total_samples = samples;
}

static void raw_binary(void *ctx, const char *tenant, const char *service, const char *build_id,
		       const char *filename, int cls, uint64_t profiles, uint64_t samples)
{
	struct raw_seen *r = ctx;
	int i = r->binaries++;

	(void)tenant, (void)service, (void)build_id;
	assert_true(i < 4);
	snprintf(r->bin_file[i], sizeof(r->bin_file[i]), "%s", filename);
	r->bin_cls[i] = cls;
	r->bin_profiles[i] = profiles;
	r->bin_samples[i] = samples;
}

/*
 * After a commit, ingest tells its hooks which binaries arrived without
 * names: each classified once, a class's samples counted once per sample
 * whatever the binaries of that class in its stack, each binary's own
 * weight (in the count-typed sample type), named frames and left-out
 * binaries not reported, nothing for a rejected request.
 */
static void test_raw_frames_hooks(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_new(16, 8);
	uint64_t s1[] = { 1, 2 }, s2[] = { 1 }, s3[] = { 4 }, s4[] = { 3, 2 };
	int64_t v1[] = { 30, 3 }, v2[] = { 20, 2 }, v3[] = { 50, 5 }, v4[] = { 10, 1 };
	struct raw_seen r;
	struct ingest_hooks h = { raw_class, raw_class_total, raw_binary, &r };
	struct ingest_limits lim = f->lim;
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct ingest_series in;
	uint8_t *bytes;
	size_t len;

	memset(&r, 0, sizeof(r));
	lim.hooks = &h;
	pb_sample_type(b, "cpu", "nanoseconds");
	pb_sample_type(b, "samples", "count");
	pb_mapping(b, 1, 0x400000, 0x500000, 0, "/usr/bin/app", "aa11");
	pb_mapping(b, 2, 0x7f0000000000, 0x7f0000100000, 0, "/lib/libc.so.6", "bb22");
	pb_mapping(b, 3, 0x7fff00000000, 0x7fff00002000, 0, "[vdso]", "");
	pb_mapping(b, 4, 0x600000, 0x700000, 0, "/usr/bin/named", "cc33");
	pb_function(b, 1, "main", "main.c");
	pb_location(b, 1, 1, 0x400100, 0, 0);
	pb_location(b, 2, 2, 0x7f0000000100, 0, 0);
	pb_location(b, 3, 3, 0x7fff00000100, 0, 0);
	pb_location(b, 4, 4, 0x600100, 1, 7);
	pb_sample(b, s1, 2, v1, 2);
	pb_sample(b, s2, 1, v2, 2);
	pb_sample(b, s3, 1, v3, 2);
	pb_sample(b, s4, 2, v4, 2);
	b->p.time_nanos = 1700000000000000000;
	bytes = pb_pack(b, 1, &len);
	in = (struct ingest_series){ app_labels, 3, bytes, len, NULL, NULL };
	assert_int_equal(ingest_profiles(f->st, &lim, "t1", &in, 1, 1, &stats, &msg), 0);
	assert_int_equal(stats.profiles, 2);
	assert_int_equal(r.classified[1], 1);
	assert_int_equal(r.classified[2], 1);
	assert_int_equal(r.classified[3], 1);
	assert_int_equal(r.classified[4], 0);
	assert_int_equal(r.totals, 1);
	assert_int_equal(r.total_cls, 2);
	assert_int_equal(r.total_profiles, 2);
	assert_int_equal(r.total_samples, 3 + 2 + 1); /* s1 once, s2, s4 */
	assert_int_equal(r.binaries, 2);
	for (int i = 0; i < 2; i++) {
		int app = !strcmp(r.bin_file[i], "/usr/bin/app");

		assert_true(app || !strcmp(r.bin_file[i], "/lib/libc.so.6"));
		assert_int_equal(r.bin_cls[i], 2);
		assert_int_equal(r.bin_profiles[i], 2);
		assert_int_equal(r.bin_samples[i], app ? 3 + 2 : 3 + 1);
	}

	/* A rejected request tells nothing. */
	memset(&r, 0, sizeof(r));
	lim.max_series = 1; /* the tenant has two series already */
	{
		static const struct store_label other[] = {
			{ "service_name", "app" }, { "__name__", "process_cpu" }, { "env", "dev" },
		};

		in.labels = other;
		assert_int_not_equal(ingest_profiles(f->st, &lim, "t1", &in, 1, 1, &stats, &msg), 0);
	}
	assert_int_equal(r.totals + r.binaries + r.classified[1], 0);
	free(bytes);
	pb_free(b);
}

/* Every binary in one class, and what was reported per binary. */
struct wide_seen {
	int totals;
	uint64_t total_samples;
	int binaries;
	uint64_t samples_of[128]; /* by the N of /lib/libN.so */
};

static int wide_class(void *ctx, const char *tenant, const char *service, const char *build_id,
		      const char *filename)
{
	(void)ctx, (void)tenant, (void)service, (void)build_id, (void)filename;
	return 5;
}

static void wide_total(void *ctx, const char *tenant, const char *service, int cls,
		       uint64_t profiles, uint64_t samples)
{
	struct wide_seen *r = ctx;

	(void)tenant, (void)service;
	assert_int_equal(cls, 5);
	assert_int_equal(profiles, 1);
	r->totals++;
	r->total_samples = samples;
}

static void wide_binary(void *ctx, const char *tenant, const char *service, const char *build_id,
			const char *filename, int cls, uint64_t profiles, uint64_t samples)
{
	struct wide_seen *r = ctx;
	int n = 0;

	(void)tenant, (void)service, (void)build_id;
	assert_int_equal(cls, 5);
	assert_int_equal(profiles, 1);
	assert_int_equal(sscanf(filename, "/lib/lib%d.so", &n), 1);
	assert_true(n > 0 && n < 128);
	r->binaries++;
	r->samples_of[n] = samples;
}

/*
 * A pprof with frames without names in its 70th binary: past the bit set
 * noted while writing, the report reads the frames, with the same counts.
 */
static void test_raw_frames_hooks_wide(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_new(8, 4);
	uint64_t s1[] = { 1, 2 }, s2[] = { 2 }, s3[] = { 3, 1 };
	int64_t v1[] = { 3 }, v2[] = { 2 }, v3[] = { 1 };
	struct wide_seen r;
	struct ingest_hooks h = { wide_class, wide_total, wide_binary, &r };
	struct ingest_limits lim = f->lim;
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct ingest_series in;
	static const struct store_label labels[] = {
		{ "service_name", "wide" }, { "__name__", "process_cpu" },
	};
	uint8_t *bytes;
	size_t len;

	memset(&r, 0, sizeof(r));
	lim.hooks = &h;
	pb_sample_type(b, "samples", "count");
	for (int m = 1; m <= 70; m++) {
		char file[32], bid[16];

		snprintf(file, sizeof(file), "/lib/lib%d.so", m);
		snprintf(bid, sizeof(bid), "ab%04d", m);
		pb_mapping(b, (uint64_t)m, (uint64_t)m << 24, ((uint64_t)m << 24) + 0x100000, 0, file,
			   bid);
	}
	pb_location(b, 1, 1, (1u << 24) + 0x100, 0, 0);
	pb_location(b, 2, 70, ((uint64_t)70 << 24) + 0x100, 0, 0);
	pb_location(b, 3, 2, (2u << 24) + 0x100, 0, 0);
	pb_sample(b, s1, 2, v1, 1);
	pb_sample(b, s2, 1, v2, 1);
	pb_sample(b, s3, 2, v3, 1);
	b->p.time_nanos = 1700000000000000000;
	bytes = pb_pack(b, 1, &len);
	in = (struct ingest_series){ labels, 2, bytes, len, NULL, NULL };
	assert_int_equal(ingest_profiles(f->st, &lim, "t1", &in, 1, 1, &stats, &msg), 0);
	assert_int_equal(r.totals, 1);
	assert_int_equal(r.total_samples, 3 + 2 + 1);
	assert_int_equal(r.binaries, 3);
	assert_int_equal(r.samples_of[1], 3 + 1);
	assert_int_equal(r.samples_of[70], 3 + 2);
	assert_int_equal(r.samples_of[2], 1);
	free(bytes);
	pb_free(b);
}

static void test_go_labels(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_new(8, 4);
	static const struct store_label labels[] = { { "service_name", "goapp" } };
	uint64_t s1[] = { 1, 2 }, s2[] = { 2 };
	int64_t v[] = { 10 };
	size_t len;
	uint8_t *bytes;
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct store_tenant_stats before, after;
	PbSample *s;

	pb_sample_type(b, "cpu", "nanoseconds");
	pb_period(b, "cpu", "nanoseconds", 10000000);
	pb_mapping(b, 1, 0x400000, 0x800000, 0, "/app", "")->has_functions = 1;
	pb_function(b, 1, "main.work", "/src/main.go");
	pb_function(b, 2, "main.main", "/src/main.go");
	pb_location(b, 1, 1, 0x401000, 1, 12);
	pb_location(b, 2, 1, 0x402000, 2, 30);
	pb_sample(b, s1, 2, v, 1);
	s = pb_sample(b, s1, 2, v, 1);
	pb_label(b, s, "endpoint", "/api", 0);
	s = pb_sample(b, s2, 1, v, 1);
	pb_label(b, s, "endpoint", "/api", 0);
	bytes = pb_pack(b, 0, &len);
	before = fx_tenant_stats(f);
	struct ingest_series in = { labels, 1, bytes, len, NULL, NULL };
	assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", &in, 1, 5000, &stats, &msg), 0);
	/* Two label sets -> two series, two stored profiles; 3 pairs in all. */
	assert_int_equal(stats.profiles, 2);
	assert_int_equal(stats.samples, 3);
	after = fx_tenant_stats(f);
	assert_int_equal(after.series - before.series, 2);
	assert_int_equal(after.functions - before.functions, 2);
	assert_int_equal(after.samples - before.samples, 3);
	free(bytes);
	pb_free(b);
}

static void test_rejected_request_writes_nothing(void **state)
{
	struct fx *f = *state;
	struct pb *good = pb_native_profile(), *bad = pb_native_profile();
	size_t l1, l2;
	uint8_t *b1, *b2;
	struct ingest_stats stats = { 77, 77, 77, 77 };
	struct err_msg msg = { { 0 } };
	struct store_tenant_stats before, after;

	good->maps[0].build_id = pb_str(good, "feedface");
	bad->smp[1].location_id[0] = 99;
	b1 = pb_pack(good, 1, &l1);
	b2 = pb_pack(bad, 0, &l2);
	struct ingest_series in[] = { { app_labels, 3, b1, l1, NULL, NULL }, { app_labels, 3, b2, l2, NULL, NULL } };
	before = fx_tenant_stats(f);
	assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", in, 2, 1, &stats, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "profile 1: sample 1: location_id 99 not found"));
	assert_int_equal(stats.profiles, 77);
	after = fx_tenant_stats(f);
	assert_int_equal(after.series, before.series);
	assert_int_equal(after.profiles, before.profiles);
	assert_int_equal(after.samples, before.samples);
	assert_int_equal(after.mappings, before.mappings);
	assert_int_equal(after.locations, before.locations);
	/* Too many profiles. */
	f->lim.max_profiles = 1;
	err_clear(&msg);
	assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", in, 2, 1, &stats, &msg), ERR_TOO_LARGE);
	ingest_limits_default(&f->lim);
	free(b1);
	free(b2);
	pb_free(good);
	pb_free(bad);
}

/*
 * max_request_decoded_bytes: the pprofs of one request inflate to at most
 * that many bytes together, gzipped or raw; the one that would pass it is
 * refused before it is decoded, and nothing is written.
 */
static void test_decoded_budget(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_native_profile();
	size_t glen, rlen;
	uint8_t *gz = pb_pack(b, 1, &glen), *raw = pb_pack(b, 0, &rlen);
	struct ingest_series in[4];
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct store_tenant_stats before;

	for (size_t i = 0; i < 4; i++)
		in[i] = (struct ingest_series){ app_labels, 3, i == 2 ? raw : gz,
						i == 2 ? rlen : glen, NULL, NULL };
	/* Each decodes to rlen bytes. */
	f->lim.max_request_decoded_bytes = 3 * rlen + rlen / 2;
	before = fx_tenant_stats(f);
	assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", in, 4, 1, &stats, &msg),
			 ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "profile 3: the request's profiles decode to more than"));
	assert_non_null(strstr(msg.text, "max_request_decoded_bytes"));
	assert_int_equal(fx_tenant_stats(f).profiles, before.profiles);
	/* The raw one counts too. */
	f->lim.max_request_decoded_bytes = 2 * rlen + rlen / 2;
	err_clear(&msg);
	assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", in, 4, 1, &stats, &msg),
			 ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "profile 2: the request's profiles decode to more than"));
	/* Exactly enough: all four. */
	f->lim.max_request_decoded_bytes = 4 * rlen;
	assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", in, 4, 1, &stats, &msg), 0);
	assert_int_equal(stats.profiles, 4 * 2);
	ingest_limits_default(&f->lim);
	free(gz);
	free(raw);
	pb_free(b);
}

static void test_legacy(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_native_profile();
	size_t len;
	uint8_t *bytes;
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct seen seen = { 0 };

	b->p.time_nanos = 0;
	bytes = pb_pack(b, 1, &len);
	assert_int_equal(ingest_legacy(f->st, &f->lim, "t2", "legacy.app.cpu{region=eu}",
				       2000000000, 12000000000, bytes, len, &stats, &msg), 0);
	assert_int_equal(stats.profiles, 2);
	assert_int_equal(store_series_with(f->st, "t2", "service_name", "legacy.app", series_cb,
					   &seen), 0);
	assert_int_equal(seen.n, 2);
	{
		struct sum s = { 0 };
		assert_int_equal(store_profiles_each(f->st, "t2", seen.ids[0], 0, INT64_MAX,
						     profile_cb, &s, &msg), 0);
		assert_int_equal(s.time_ns, 2000000000);
		assert_int_equal(s.duration_ns, 10000000000);
	}
	seen.n = 0;
	assert_int_equal(store_series_with(f->st, "t2", "region", "eu", series_cb, &seen), 0);
	assert_int_equal(seen.n, 2);
	err_clear(&msg);
	assert_int_equal(ingest_legacy(f->st, &f->lim, "t2", "bad{", 0, 0, bytes, len, &stats, &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "name:"));
	free(bytes);
	pb_free(b);
}

static void test_push(void **state)
{
	struct fx *f = *state;
	struct pb *b = pb_native_profile();
	size_t plen, len;
	uint8_t *pprof = pb_pack(b, 1, &plen), *body;
	struct pushb pr;
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct seen seen = { 0 };
	static const char *json = "{\"series\":[{\"labels\":[{\"name\":\"__name__\",\"value\":"
				  "\"process_cpu\"},{\"name\":\"service_name\",\"value\":\"pj\"}],"
				  "\"samples\":[{\"rawProfile\":\"%s\"}]}]}";

	pushb_init(&pr, "pushed", pprof, plen, 1);
	body = pushb_pack(&pr, &len);
	assert_int_equal(ingest_push(f->st, &f->lim, "t3", body, len, 0, &stats, &msg), 0);
	assert_int_equal(stats.profiles, 2);
	assert_int_equal(store_series_with(f->st, "t3", "service_name", "pushed", series_cb, &seen), 0);
	assert_int_equal(seen.n, 2);

	/* JSON with base64. */
	{
		struct buf b64, doc;

		buf_init(&b64, 1 << 30);
		buf_init(&doc, 1 << 30);
		assert_int_equal(base64_encode(&b64, pprof, plen), 0);
		assert_int_equal(buf_printf(&doc, json, b64.data), 0);
		assert_int_equal(ingest_push(f->st, &f->lim, "t3", doc.data, doc.len, 1, &stats, &msg), 0);
		assert_int_equal(stats.profiles, 2);
		seen.n = 0;
		assert_int_equal(store_series_with(f->st, "t3", "service_name", "pj", series_cb, &seen), 0);
		assert_int_equal(seen.n, 2);
		/* A broken body writes nothing and says why. */
		err_clear(&msg);
		assert_int_equal(ingest_push(f->st, &f->lim, "t3", doc.data, doc.len - 3, 1, &stats,
					     &msg), ERR_INVALID);
		assert_non_null(strstr(msg.text, "json"));
		buf_release(&b64);
		buf_release(&doc);
	}
	free(body);
	free(pprof);
	pb_free(b);
}

/*
 * End-to-end speed: decode + validate + store on one core, for 10-second CPU
 * profiles drawn from a fixed pool of 2000 tree-shaped stacks of depth 30
 * (what a running service sends: the same code paths again and again, at
 * a new load address per process).  Printed, never asserted.
 */
static void test_speed(void **state)
{
	struct fx *f = *state;
	enum { POOL = 2000, DEPTH = 30, SAMPLES = 3000, ROUNDS = 40, LOCS = 480 };
	static uint64_t pool[POOL][DEPTH];
	uint64_t x = 88172645463325252ULL;
	int64_t t_total = 0, t_first = 0;
	uint64_t samples = 0;
	static const struct store_label labels[] = { { "service_name", "bench" },
						      { "__name__", "process_cpu" } };

#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	for (size_t k = 0; k < POOL; k++) {
		size_t keep = k ? NEXT() % DEPTH : 0, from = k ? NEXT() % k : 0;
		for (size_t j = 0; j < DEPTH; j++)
			pool[k][j] = j < keep ? pool[from][j] : 1 + j * 16 + NEXT() % 16;
	}
	for (int r = 0; r < ROUNDS; r++) {
		struct pb *b = pb_new(SAMPLES, DEPTH);
		uint64_t base = 0x555500000000 + (uint64_t)r * 0x1000000, stack[DEPTH];
		int64_t v[2];
		size_t len;
		uint8_t *bytes;
		struct ingest_stats stats;
		struct err_msg msg = { { 0 } };

		pb_sample_type(b, "samples", "count");
		pb_sample_type(b, "cpu", "nanoseconds");
		pb_period(b, "cpu", "nanoseconds", 10000000);
		pb_mapping(b, 1, base, base + 0x1000000, 0, "/usr/bin/server",
			   "0123456789abcdef0123456789abcdef01234567");
		for (size_t i = 1; i <= LOCS; i++)
			pb_location(b, i, 1, base + 0x1000 + i * 16, 0, 0);
		for (size_t i = 0; i < SAMPLES; i++) {
			const uint64_t *p = pool[NEXT() % POOL];
			for (size_t j = 0; j < DEPTH; j++)
				stack[j] = p[DEPTH - 1 - j]; /* leaf first */
			v[0] = 1 + (int64_t)(NEXT() % 3);
			v[1] = v[0] * 10000000;
			pb_sample(b, stack, DEPTH, v, 2);
		}
		b->p.time_nanos = 1700000000000000000 + (int64_t)r * 10000000000;
		bytes = pb_pack(b, 1, &len);
		int64_t t0 = clock_mono_ns();
		struct ingest_series in = { labels, 2, bytes, len, NULL, NULL };
		assert_int_equal(ingest_profiles(f->st, &f->lim, "bench", &in, 1, 1, &stats, &msg), 0);
		if (r == 0)
			t_first = clock_mono_ns() - t0;
		else
			t_total += clock_mono_ns() - t0;
		if (r)
			samples += SAMPLES;
		free(bytes);
		pb_free(b);
	}
#undef NEXT
	printf("ingest: end to end (decode+validate+store): first profile %.1f ms, then %.0f "
	       "pprof samples/s (%d profiles of %d samples, depth %d, %d distinct stacks)\n",
	       (double)t_first / 1e6, (double)samples / ((double)t_total / 1e9), ROUNDS - 1,
	       SAMPLES, DEPTH, POOL);
}

/* A pprof of one function `fn` with one sample of `type`/`unit` valued `v`. */
static uint8_t *one_fn(const char *fn, const char *type, const char *unit, int64_t v,
		       const char *label_value, size_t *len)
{
	struct pb *b = pb_new(4, 4);
	uint64_t s1[] = { 1 };
	int64_t v1[] = { v };
	uint8_t *out;

	pb_sample_type(b, type, unit);
	pb_function(b, 1, fn, "f\xc3\xa9.c");
	pb_location(b, 1, 0, 0, 1, 3);
	if (label_value)
		pb_label(b, pb_sample(b, s1, 1, v1, 1), "pod", label_value, 0);
	else
		pb_sample(b, s1, 1, v1, 1);
	b->p.time_nanos = 1700000000000000000;
	out = pb_pack(b, 0, len);
	pb_free(b);
	return out;
}

/*
 * Clean inputs (docs/ingest.md): invalid UTF-8 in labels and sample types is
 * refused, in frame names replaced by U+FFFD; negative values are refused
 * for units that cannot be negative and kept for others; nothing of a
 * refused request is written.
 */
static void test_clean_inputs(void **state)
{
	struct fx *f = *state;
	static const struct store_label clean_labels[] = { { "service_name", "clean" } };
	static const struct store_label bad_labels[] = { { "service_name", "cl\xff" } };
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct store_tenant_stats before;
	struct seen seen = { 0 };
	size_t len;
	uint8_t *p;
	struct {
		const char *fn, *type, *unit, *label;
		int64_t v;
		const struct store_label *labels;
		const char *why;
	} bad[] = {
		{ "f", "cpu", "nanoseconds", NULL, -990, clean_labels, "negative value -990" },
		{ "f", "alloc_space", "bytes", NULL, -1, clean_labels, "negative value -1" },
		{ "f", "samples", "count", NULL, -1, clean_labels, "negative value -1" },
		{ "f", "cpu", "nanoseconds", "p\xc0\xaf", 1, clean_labels, "label 'pod': its value is not UTF-8" },
		{ "f", "cpu\xed\xa0\x80", "nanoseconds", NULL, 1, clean_labels, "not UTF-8" },
		{ "f", "cpu", "nanoseconds", NULL, 1, bad_labels, "label 'service_name': its value is not UTF-8" },
	};

	(void)state;
	before = fx_tenant_stats(f);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = one_fn(bad[i].fn, bad[i].type, bad[i].unit, bad[i].v, bad[i].label, &len);
		struct ingest_series in = { bad[i].labels, 1, p, len, NULL, NULL };

		err_clear(&msg);
		assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", &in, 1, 1, &stats, &msg),
				 ERR_INVALID);
		if (!strstr(msg.text, bad[i].why))
			fail_msg("case %zu: %s", i, msg.text);
		free(p);
	}
	assert_int_equal(fx_tenant_stats(f).profiles, before.profiles);

	/* A custom unit keeps its negative value. */
	p = one_fn("g", "temperature", "celsius", -3, NULL, &len);
	{
		struct ingest_series in = { clean_labels, 1, p, len, NULL, NULL };

		assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", &in, 1, 1, &stats, &msg), 0);
	}
	free(p);
	/* A frame name with invalid UTF-8 is stored with U+FFFD. */
	p = one_fn("bad\xff" "fn\xe2\x82", "cpu", "nanoseconds", 5, NULL, &len);
	{
		struct ingest_series in = { clean_labels, 1, p, len, NULL, NULL };

		assert_int_equal(ingest_profiles(f->st, &f->lim, "t1", &in, 1, 1, &stats, &msg), 0);
	}
	free(p);
	assert_int_equal(store_series_with(f->st, "t1", "service_name", "clean", series_cb, &seen), 0);
	assert_int_equal(seen.n, 2);
	for (int i = 0; i < seen.n; i++) {
		struct sum sum = read_series(f, seen.ids[i]);

		if (strstr(seen.types[i], ":temperature:celsius:"))
			assert_int_equal(sum.total, -3);
		else
			assert_int_equal(sum.total, 5);
	}
	{
		struct store_symbols *sym;
		struct store_function fn;
		int found = 0;

		assert_int_equal(store_symbols_get(f->st, "t1", seen.part, &sym, &msg), 0);
		for (uint32_t id = 1; store_symbols_function(sym, id, &fn) == 0; id++) {
			assert_true(json_utf8_valid(fn.name, strlen(fn.name)));
			found |= !strcmp(fn.name, "bad\xef\xbf\xbd" "fn\xef\xbf\xbd\xef\xbf\xbd");
			assert_string_equal(fn.filename, "f\xc3\xa9.c");
		}
		assert_true(found);
		store_symbols_put(sym);
	}
}

struct idseen {
	int n;
	uint8_t id[8][16];
};

static int id_cb(void *ctx, const struct store_profile_view *p)
{
	struct idseen *s = ctx;

	assert_true(s->n < 8);
	memcpy(s->id[s->n++], p->meta.id, 16);
	return 0;
}

/*
 * Every stored profile has an id: the push ID when it is a UUID, else a
 * random v4 UUID per pprof, shared by the profiles of its sample types.
 */
static void test_profile_ids(void **state)
{
	static const uint8_t want[16] = { 0x7c, 0x9e, 0x66, 0x79, 0x74, 0x25, 0x40, 0xde,
					  0x94, 0x4b, 0xe0, 0x7f, 0xc1, 0xf9, 0x0a, 0xe7 };
	struct fx *f = *state;
	struct pb *b = pb_native_profile();
	size_t len;
	uint8_t *bytes = pb_pack(b, 1, &len);
	struct ingest_series in[2] = {
		{ app_labels, 3, bytes, len, NULL, "7c9e6679-7425-40de-944b-e07fc1f90ae7" },
		{ app_labels, 3, bytes, len, NULL, "retry-key-1" },
	};
	struct ingest_stats stats;
	struct err_msg msg = { { 0 } };
	struct seen seen = { 0 };
	struct idseen ids = { 0 };
	int pushed = 0, other = 0;

	assert_int_equal(ingest_profiles(f->st, &f->lim, "ids", in, 2, 1, &stats, &msg), 0);
	assert_int_equal(stats.profiles, 4);
	assert_int_equal(store_series_each(f->st, "ids", series_cb, &seen), 0);
	assert_int_equal(seen.n, 2);
	for (int i = 0; i < 2; i++)
		assert_int_equal(store_profiles_each(f->st, "ids", seen.ids[i], 0, INT64_MAX, id_cb,
						     &ids, &msg), 0);
	assert_int_equal(ids.n, 4);
	for (int i = 0; i < 4; i++) {
		if (!memcmp(ids.id[i], want, 16)) {
			pushed++;
			continue;
		}
		/* A version 4 UUID, the same for both sample types of the pprof. */
		assert_int_equal(ids.id[i][6] >> 4, 4);
		assert_int_equal(ids.id[i][8] >> 6, 2);
		for (int j = 0; j < 4; j++)
			if (memcmp(ids.id[j], want, 16))
				assert_memory_equal(ids.id[i], ids.id[j], 16);
		other++;
	}
	assert_int_equal(pushed, 2);
	assert_int_equal(other, 2);
	free(bytes);
	pb_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native),
		cmocka_unit_test(test_raw_frames_hooks),
		cmocka_unit_test(test_raw_frames_hooks_wide),
		cmocka_unit_test(test_go_labels),
		cmocka_unit_test(test_rejected_request_writes_nothing),
		cmocka_unit_test(test_decoded_budget),
		cmocka_unit_test(test_legacy),
		cmocka_unit_test(test_push),
		cmocka_unit_test(test_clean_inputs),
		cmocka_unit_test(test_speed),
		cmocka_unit_test(test_profile_ids),
	};
	return cmocka_run_group_tests(tests, fx_setup_ingest, fx_teardown);
}
