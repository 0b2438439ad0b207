/*
 * test_releases.c - a service's releases over a real store: from release
 * labels (the configured order, OTLP's service.version, a git sha), from
 * the build ID of each profile's main executable when a series has no
 * release label (shared libraries are not the executable), their counts,
 * time ranges and build IDs with their status from a real debuginfo
 * service; the label configuration's checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "debuginfo/debuginfo.h"
#include "query/regress.h"

static const char *const stacks[] = { "main;work;hot", "main;work;cold", "main;idle" };
static const int64_t values[] = { 60, 30, 10 };

/*
 * A profile of db build db02 whose samples are mostly in libc: the
 * executable, not the busiest mapping, names the release.
 */
static void add_mixed(struct fx *f, int64_t t)
{
	struct store_mapping exe = { 0x400000, 0x500000, 0, "/usr/sbin/db", "db02", 0 };
	struct store_mapping libc = { 0x7f0000, 0x7f8000, 0, "/lib/x86_64-linux-gnu/libc.so.6",
				      "11bc", 0 };
	struct store_profile_meta meta = { t, 10 * FX_SEC, 10000000, { 0 } };
	struct store_label l[] = { { STORE_LABEL_SERVICE, "db" },
				   { STORE_LABEL_PROFILE_TYPE, FX_CPU } };
	struct store_location le = { 0, 0x1234, NULL, 0 }, ll = { 0, 0x5678, NULL, 0 };
	struct err_msg msg = { { 0 } };
	struct store_txn *tx;
	uint32_t part, me, ml, loc[2], stack[2];
	const int64_t v[2] = { 10, 900 };
	uint64_t series;

	assert_int_equal(store_txn_begin(f->st, "t1", &tx, &msg), 0);
	assert_int_equal(store_txn_partition(tx, "db", &part), 0);
	assert_int_equal(store_txn_mapping(tx, part, &exe, &me), 0);
	assert_int_equal(store_txn_mapping(tx, part, &libc, &ml), 0);
	le.mapping_id = me;
	ll.mapping_id = ml;
	assert_int_equal(store_txn_location(tx, part, &le, &loc[0]), 0);
	assert_int_equal(store_txn_location(tx, part, &ll, &loc[1]), 0);
	assert_int_equal(store_txn_stack(tx, part, &loc[0], 1, &stack[0]), 0);
	/* libc's memcpy called from the executable: leaf first. */
	assert_int_equal(store_txn_stack(tx, part, loc + 1, 1, &stack[1]), 0);
	assert_int_equal(store_txn_series(tx, l, 2, &series, &msg), 0);
	assert_int_equal(store_txn_profile(tx, series, part, &meta, stack, v, 2), 0);
	assert_int_equal(store_txn_commit(tx, &msg), 0);
}

static void test_labels_parse(void **state)
{
	struct release_labels rl;
	struct err_msg msg;
	const char *v = NULL;

	(void)state;
	assert_int_equal(query_release_labels_parse(NULL, &rl, &msg), 0);
	assert_string_equal(rl.name[0], "version");
	assert_string_equal(rl.name[3], "service.version");
	assert_int_equal(query_release_labels_parse("git_sha,version", &rl, &msg), 0);
	assert_int_equal(rl.n, 2);
	{
		/* The configured order decides, not the label set's. */
		struct store_label l[] = { { "git_sha", "abc123" }, { "version", "1.5" } };
		assert_int_equal(query_release_label_of(&rl, l, 2, &v), 0);
		assert_string_equal(v, "abc123");
		l[0].value = "";
		assert_int_equal(query_release_label_of(&rl, l, 2, &v), 1);
		assert_string_equal(v, "1.5");
		l[1].name = "pod";
		assert_int_equal(query_release_label_of(&rl, l, 2, &v), -1);
	}
	assert_int_equal(query_release_labels_parse("version,,x", &rl, &msg), ERR_INVALID);
	assert_int_equal(query_release_labels_parse("9lives", &rl, &msg), ERR_INVALID);
	err_clear(&msg);
	assert_int_equal(query_release_labels_parse("a b", &rl, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "not a label name"));
	assert_int_equal(query_release_labels_parse("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", &rl, &msg),
			 ERR_INVALID);
}

static const struct json_value *release(const struct json_value *rels, const char *name)
{
	for (size_t i = 0; i < rels->n; i++)
		if (!strcmp(json_get(&rels->items[i], "name")->str, name))
			return &rels->items[i];
	fail_msg("no release %s", name);
	return NULL;
}

static void test_releases(void **state)
{
	struct debuginfo_options o = { 0 };
	struct release_labels rl;
	struct release_query rq;
	struct debuginfo *svc;
	struct err_msg msg = { { 0 } };
	struct arena a;
	struct json_value *v;
	const struct json_value *rels, *r;
	struct buf out;
	struct fx f;
	const char *v14[] = { "version", "1.4", NULL }, *v15[] = { "version", "1.5", "pod", "b", NULL };
	const char *v15b[] = { "version", "1.5", NULL };
	const char *otel[] = { "service.version", "2.0.0", NULL };

	(void)state;
	fx_open(&f);
	o.data_dir = f.dir;
	o.debuginfod_urls = "";
	o.workers = 1;
	assert_int_equal(debuginfo_open(f.st, &o, &svc, &msg), 0);
	/* api: two labelled releases, three profiles of 1.4 and two of 1.5 (two series). */
	for (int i = 0; i < 3; i++)
		fx_add(&f, "t1", "api", FX_CPU, v14, FX_T0 + i * 10 * FX_SEC, stacks, values, 3,
		       "/usr/bin/api", "aa14", 0x1000, 0);
	fx_add(&f, "t1", "api", FX_CPU, v15, FX_T0 + 100 * FX_SEC, stacks, values, 3, "/usr/bin/api",
	       "aa15", 0x1000, 0);
	fx_add(&f, "t1", "api", FX_CPU, v15b, FX_T0 + 110 * FX_SEC, stacks, values, 2,
	       "/usr/bin/api", "aa15", 0x1000, 0);
	/* OTLP's service.version. */
	fx_add(&f, "t1", "otel", FX_CPU, otel, FX_T0, stacks, values, 3, "/srv/otel", "0e01", 0x1000, 0);
	/* db: no label; two builds, told apart by build ID; libc is not the executable. */
	fx_add(&f, "t1", "db", FX_CPU, NULL, FX_T0, stacks, values, 3, "/usr/sbin/db", "db01", 0x1000, 0);
	fx_add(&f, "t1", "db", FX_CPU, NULL, FX_T0 + 50 * FX_SEC, stacks, values, 3, "/usr/sbin/db",
	       "db02", 0x1000, 0);
	add_mixed(&f, FX_T0 + 60 * FX_SEC);

	assert_int_equal(query_release_labels_parse(NULL, &rl, &msg), 0);
	memset(&rq, 0, sizeof(rq));
	rq.service = "api";
	rq.from_ns = FX_T0 - FX_SEC;
	rq.until_ns = FX_T0 + 1000 * FX_SEC;
	rq.labels = &rl;
	rq.debuginfo = svc;
	rq.timeout_ns = 10 * FX_SEC;
	rq.max_bytes = 64 << 20;
	buf_init(&out, 1 << 20);
	assert_int_equal(query_releases(f.st, "t1", &rq, &out, &msg), 0);
	arena_init(&a, json_mem_bound(out.len));
	assert_int_equal(json_parse(out.data, out.len, &a, &v, &msg), 0);
	rels = json_get(v, "releases");
	assert_int_equal(rels->n, 2);
	/* Oldest first. */
	assert_string_equal(json_get(&rels->items[0], "name")->str, "1.4");
	r = release(rels, "1.4");
	assert_string_equal(json_get(r, "label")->str, "version");
	assert_string_equal(json_get(r, "profiles")->str, "3");
	assert_string_equal(json_get(r, "series")->str, "1");
	assert_string_equal(json_get(r, "from")->str, "1700000000000");
	assert_string_equal(json_get(r, "until")->str, "1700000030000");
	assert_string_equal(json_get(json_get(r, "values"), FX_CPU)->str, "300");
	{
		const struct json_value *b = json_get(r, "buildIDs");
		assert_int_equal(b->n, 1);
		assert_string_equal(json_get(&b->items[0], "buildID")->str, "aa14");
		assert_string_equal(json_get(&b->items[0], "file")->str, "/usr/bin/api");
		assert_string_equal(json_get(&b->items[0], "share")->str, "1");
		/* Never uploaded, never looked up. */
		assert_string_equal(json_get(&b->items[0], "status")->str, "unknown");
	}
	r = release(rels, "1.5");
	assert_string_equal(json_get(r, "profiles")->str, "2");
	assert_string_equal(json_get(r, "series")->str, "2");
	assert_string_equal(json_get(json_get(r, "values"), FX_CPU)->str, "190");
	arena_release(&a);

	buf_reset(&out);
	rq.service = "otel";
	assert_int_equal(query_releases(f.st, "t1", &rq, &out, &msg), 0);
	assert_non_null(strstr(out.data, "\"name\":\"2.0.0\",\"label\":\"service.version\""));

	buf_reset(&out);
	rq.service = "db";
	assert_int_equal(query_releases(f.st, "t1", &rq, &out, &msg), 0);
	arena_init(&a, json_mem_bound(out.len));
	assert_int_equal(json_parse(out.data, out.len, &a, &v, &msg), 0);
	rels = json_get(v, "releases");
	assert_int_equal(rels->n, 2);
	r = release(rels, "db01");
	assert_string_equal(json_get(r, "label")->str, RELEASE_BY_BUILD_ID);
	assert_string_equal(json_get(r, "profiles")->str, "1");
	r = release(rels, "db02");
	assert_string_equal(json_get(r, "profiles")->str, "2");
	{
		/* Both of db02's mappings are listed, by their share of its samples. */
		const struct json_value *b = json_get(r, "buildIDs");
		assert_int_equal(b->n, 2);
	}
	arena_release(&a);

	/* A profile type filter; errors. */
	buf_reset(&out);
	rq.service = "api";
	rq.profile_type = "memory:alloc_space:bytes:space:bytes";
	assert_int_equal(query_releases(f.st, "t1", &rq, &out, &msg), 0);
	assert_non_null(strstr(out.data, "\"releases\":[]"));
	rq.service = "";
	assert_int_equal(query_releases(f.st, "t1", &rq, &out, &msg), ERR_INVALID);
	rq.service = "api";
	rq.until_ns = rq.from_ns;
	assert_int_equal(query_releases(f.st, "t1", &rq, &out, &msg), ERR_INVALID);
	rq.until_ns = FX_T0 + 1000 * FX_SEC;
	rq.profile_type = NULL;
	rq.max_bytes = 1;
	buf_reset(&out);
	assert_int_equal(query_releases(f.st, "t1", &rq, &out, &msg), ERR_TOO_LARGE);
	buf_release(&out);
	debuginfo_close(svc);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels_parse),
		cmocka_unit_test(test_releases),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
