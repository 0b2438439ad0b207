/*
 * test_limits.c - per-tenant limits (web/limits.c): the limits file (keys,
 * suffixes, a tenant line over the default, refusals naming the line; the
 * symbolization keys and their caps), and
 * the state: the tenant cap and allow-list, the ingest buckets with their
 * Retry-After, per-tenant query slots that leave other tenants theirs, and
 * the refusals counted by tenant and reason for /metrics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "debuginfo/debuginfo.h"
#include "web/web_int.h"

static int parse(const char *text, struct web__limits_conf *c, struct err_msg *msg)
{
	err_clear(msg);
	return web__limits_parse(text, strlen(text), NULL, c, msg);
}

/* A limits file that must be refused, and what the message must say. */
struct bad_file {
	const char *text;
	const char *why;
};

/* Each of the `n` files is ERR_INVALID with its reason in the message. */
static void expect_refused(const struct bad_file *bad, size_t n)
{
	struct web__limits_conf c;
	struct err_msg msg;

	for (size_t i = 0; i < n; i++) {
		int rc = parse(bad[i].text, &c, &msg);

		if (rc != ERR_INVALID || !strstr(msg.text, bad[i].why))
			fail_msg("%s: rc %d \"%s\", want \"%s\"", bad[i].text, rc, msg.text, bad[i].why);
	}
}

static void test_parse(void **state)
{
	struct web__limits_conf c;
	struct err_msg msg;
	const char *text = "# limits\n"
			   "global max_tenants=3 tenants=any\r\n"
			   "tenant big   ingest_bytes_per_s=1GiB max_series=2000000\n"
			   "\n"
			   "default ingest_bytes_per_s=2M ingest_profiles_per_s=50 burst_s=2 "
			   "max_series=10 max_queries=2 max_labels=8 max_label_bytes=100 "
			   "debuginfo_bytes_per_hour=1.5K max_label_names=40 "
			   "max_label_values=7\n"
			   "tenant scan max_query_bytes=64MiB max_perfmaps=20\n";

	(void)state;
	assert_int_equal(parse(text, &c, &msg), 0);
	assert_int_equal(c.max_tenants, 3);
	assert_false(c.listed_only);
	assert_true(c.dflt.ingest_bytes_per_s == 2.0 * 1048576);
	assert_true(c.dflt.ingest_profiles_per_s == 50);
	assert_true(c.dflt.debuginfo_bytes_per_hour == 1536);
	assert_int_equal(c.dflt.max_series, 10);
	assert_int_equal(c.dflt.max_queries, 2);
	assert_int_equal(c.dflt.max_labels, 8);
	assert_int_equal(c.dflt.max_label_bytes, 100);
	assert_int_equal(c.dflt.max_label_names, 40);
	assert_int_equal(c.dflt.max_label_values, 7);
	assert_true(c.dflt.max_query_bytes == 4.0 * 1073741824); /* the built-in default */
	assert_int_equal(c.n_tenants, 2);
	assert_string_equal(c.tenants[1].name, "scan");
	assert_true(c.tenants[1].lim.max_query_bytes == 64.0 * 1048576);
	assert_int_equal(c.tenants[1].lim.max_perfmaps, 20);
	assert_int_equal(c.tenants[0].lim.max_perfmaps, 1000); /* the built-in default */
	assert_int_equal(c.tenants[1].lim.max_label_values, 7);
	assert_int_equal(c.tenants[1].lim.max_series, 10);
	assert_string_equal(c.tenants[0].name, "big");
	assert_int_equal(c.tenants[0].lim.max_label_names, 40);
	/* Its own keys, the default's for the rest, wherever the default line is. */
	assert_true(c.tenants[0].lim.ingest_bytes_per_s == 1073741824.0);
	assert_int_equal(c.tenants[0].lim.max_series, 2000000);
	assert_int_equal(c.tenants[0].lim.max_queries, 2);
	assert_true(c.tenants[0].lim.ingest_profiles_per_s == 50);
	web__limits_conf_release(&c);

	assert_int_equal(parse("global tenants=listed\ntenant a\n", &c, &msg), 0);
	assert_true(c.listed_only);
	assert_int_equal(c.n_tenants, 1);
	assert_int_equal(c.tenants[0].lim.max_queries, 8); /* the built-in default */
	web__limits_conf_release(&c);
	assert_int_equal(parse("", &c, &msg), 0);
	assert_int_equal(c.max_tenants, 1000);
	web__limits_conf_release(&c);
}

static void test_parse_errors(void **state)
{
	static const struct bad_file bad[] = {
		{ "default max_series=0\n", "line 1: max_series wants a whole number from 1" },
		{ "\ndefault max_series=-5\n", "line 2: max_series" },
		{ "default max_queries=1.5\n", "max_queries wants a whole number" },
		{ "default max_queries=5000\n", "from 1 to 1024" },
		{ "default ingest_bytes_per_s=5T\n", "ingest_bytes_per_s wants a number" },
		{ "default speed=3\n", "unknown key \"speed\"" },
		{ "default max_series=3 max_series=4\n", "given twice" },
		{ "default max_label_names=0\n", "max_label_names wants a whole number from 1 to 1000000" },
		{ "default max_label_names=2000000\n", "max_label_names" },
		{ "default max_label_values=1.5\n", "max_label_values wants a whole number" },
		{ "default max_query_bytes=0\n", "max_query_bytes wants a whole number from 1" },
		{ "tenant a max_query_bytes=1K max_query_bytes=2K\n", "given twice" },
		{ "tenant a\ntenant a\n", "line 2: tenant a given twice" },
		{ "tenant a/b\n", "invalid character" },
		{ "tenant\n", "tenant wants a tenant id" },
		{ "global max_tenants=0\n", "max_tenants wants a whole number" },
		{ "global max_tenants=1000001\n", "max_tenants" },
		{ "global tenants=some\n", "unknown global setting" },
		{ "limits a=b\n", "starts with global, default, tenant" },
	};
	struct web__limits_conf c;
	struct err_msg msg;

	(void)state;
	expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
	assert_int_equal(web__limits_parse("default\0", 8, NULL, &c, &msg), ERR_INVALID);
}

/* The symbolization keys: on/off on both lines, upstreams on tenant lines only. */
static void test_parse_symbolization(void **state)
{
	struct web__limits_conf c;
	struct err_msg msg;
	const char *text =
		"default symbolization=off max_queries=3\n"
		"tenant on symbolization=on\n"
		"tenant inherit max_series=5\n"
		"tenant own debuginfod_urls=http://127.0.0.1:8002,https://d.example/x/ "
		"debuginfod_headers_file=/etc/unhex/own.headers\n"
		"tenant none debuginfod_urls=none symbolization=on\n";

	(void)state;
	assert_int_equal(parse(text, &c, &msg), 0);
	assert_int_equal(c.n_tenants, 4);
	assert_true(c.dflt.symbolization_off);
	assert_false(c.tenants[0].lim.symbolization_off);
	assert_int_equal(c.tenants[0].lim.max_queries, 3); /* the rest is the default's */
	assert_false(c.tenants[0].own_upstreams);
	assert_null(c.tenants[0].debuginfod_urls);
	assert_true(c.tenants[1].lim.symbolization_off); /* inherited */
	assert_int_equal(c.tenants[1].lim.max_series, 5);
	assert_true(c.tenants[2].own_upstreams);
	assert_int_equal(c.tenants[2].line, 4);
	assert_string_equal(c.tenants[2].debuginfod_urls,
			    "http://127.0.0.1:8002 https://d.example/x/");
	assert_string_equal(c.tenants[2].debuginfod_headers_file, "/etc/unhex/own.headers");
	assert_true(c.tenants[3].own_upstreams);
	assert_string_equal(c.tenants[3].debuginfod_urls, "");
	assert_null(c.tenants[3].debuginfod_headers_file);
	assert_false(c.tenants[3].lim.symbolization_off);
	web__limits_conf_release(&c);

	/* Sixteen URLs are the most a line may give. */
	{
		char line[2048] = "tenant many debuginfod_urls=";

		for (int i = 0; i < DEBUGINFO_MAX_UPSTREAMS; i++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%shttp://u%d",
				 i ? "," : "", i);
		assert_int_equal(parse(line, &c, &msg), 0);
		web__limits_conf_release(&c);
		strcat(line, ",http://one-more");
		assert_int_equal(parse(line, &c, &msg), ERR_INVALID);
		assert_non_null(strstr(msg.text, "line 1: debuginfod_urls lists more than 16 URLs"));
	}
}

static void test_parse_symbolization_errors(void **state)
{
	static const struct bad_file bad[] = {
		{ "default symbolization=maybe\n", "line 1: symbolization wants on or off" },
		{ "tenant a symbolization\n", "symbolization wants on or off" },
		{ "tenant a symbolization=off symbolization=on\n", "symbolization given twice" },
		{ "default debuginfod_urls=http://x\n", "line 1: debuginfod_urls belongs on tenant lines" },
		{ "default debuginfod_headers_file=/h\n", "debuginfod_headers_file belongs on tenant" },
		{ "\ntenant a debuginfod_urls=ftp://x\n", "line 2: debuginfod_urls wants \"none\" or" },
		{ "tenant a debuginfod_urls=file:///srv\n", "(URL 1 is not)" },
		{ "tenant a debuginfod_urls=http://x,,http://y\n", "(URL 2 is not)" },
		{ "tenant a debuginfod_urls=http://x,\n", "(URL 2 is not)" },
		{ "tenant a debuginfod_urls=\n", "debuginfod_urls wants" },
		{ "tenant a debuginfod_urls\n", "debuginfod_urls wants" },
		{ "tenant a debuginfod_urls=none debuginfod_urls=http://x\n",
		  "debuginfod_urls given twice" },
		{ "tenant a debuginfod_headers_file=/h\n",
		  "line 1: debuginfod_headers_file needs debuginfod_urls on the same line" },
		{ "tenant a debuginfod_urls=http://x debuginfod_headers_file=\n",
		  "debuginfod_headers_file wants a file name" },
	};
	struct web__limits_conf c;
	struct err_msg msg;

	(void)state;
	expect_refused(bad, sizeof(bad) / sizeof(bad[0]));
	{
		/* One URL past WEB_LIMITS_URL_MAX bytes. */
		char *line = malloc(WEB_LIMITS_URL_MAX + 64);

		assert_non_null(line);
		strcpy(line, "tenant a debuginfod_urls=http://");
		memset(line + strlen(line), 'a', WEB_LIMITS_URL_MAX);
		line[32 + WEB_LIMITS_URL_MAX - 7] = '\0';
		assert_int_equal(parse(line, &c, &msg), 0); /* exactly the cap */
		web__limits_conf_release(&c);
		line[32 + WEB_LIMITS_URL_MAX - 7] = 'a';
		line[32 + WEB_LIMITS_URL_MAX - 6] = '\0';
		assert_int_equal(parse(line, &c, &msg), ERR_INVALID);
		free(line);
	}
}

static struct web_limits *state_of(const char *text)
{
	struct web__limits_conf c;
	struct web_limits *L;
	struct err_msg msg;

	assert_int_equal(parse(text, &c, &msg), 0);
	assert_int_equal(web__limits_new(&c, NULL, &L, &msg), 0);
	return L;
}

static void test_tenant_cap(void **state)
{
	struct web_limits *L = state_of("global max_tenants=2\ntenant vip max_queries=3\n");
	struct web__tenant_state *ts;
	struct err_msg msg;
	int retry;
	struct buf b;

	(void)state;
	assert_int_equal(web__limits_ingest_admit(L, "a", 10, &ts, &retry, &msg), 0);
	assert_int_equal(web__limits_ingest_admit(L, "b", 10, &ts, &retry, &msg), 0);
	assert_int_equal(web__limits_ingest_admit(L, "a", 10, &ts, &retry, &msg), 0);
	err_clear(&msg);
	assert_int_equal(web__limits_ingest_admit(L, "c", 10, &ts, &retry, &msg), ERR_PERMISSION);
	assert_non_null(strstr(msg.text, "tenant \"c\" is new and this server already serves its "
					 "maximum of 2 tenants"));
	/* A listed tenant always has room. */
	assert_int_equal(web__limits_ingest_admit(L, "vip", 10, &ts, &retry, &msg), 0);
	buf_init(&b, 1 << 16);
	assert_int_equal(web__limits_metrics(L, &b), 0);
	assert_non_null(strstr(b.data, "unhex_tenant_refusals_total{tenant=\"\",reason=\"tenant_cap\"} 1\n"));
	assert_non_null(strstr(b.data, "unhex_tenants 3\n"));
	buf_release(&b);
	web__limits_free(L);

	L = state_of("global tenants=listed\ntenant a\n");
	assert_int_equal(web__limits_ingest_admit(L, "a", 10, &ts, &retry, &msg), 0);
	err_clear(&msg);
	assert_int_equal(web__limits_ingest_admit(L, "b", 10, &ts, &retry, &msg), ERR_PERMISSION);
	assert_non_null(strstr(msg.text, "not in the limits file"));
	web__limits_free(L);
}

static void test_ingest_rates(void **state)
{
	struct web_limits *L = state_of("default ingest_bytes_per_s=1000 ingest_profiles_per_s=10 "
					"burst_s=1\n");
	struct web__tenant_state *ts, *other;
	struct ingest_limits base, lim;
	struct err_msg msg;
	int retry;
	struct buf b;

	(void)state;
	/* The bucket holds one second: a request past it is admitted once, as a debt. */
	assert_int_equal(web__limits_ingest_admit(L, "a", 100000, &ts, &retry, &msg), 0);
	err_clear(&msg);
	assert_int_equal(web__limits_ingest_admit(L, "a", 1, &ts, &retry, &msg), ERR_RATE_LIMITED);
	assert_non_null(strstr(msg.text, "more than its 1000 bytes/s"));
	/* 99,000 bytes of debt at 1000/s: about 99 s (a little refilled since). */
	assert_true(retry >= 98 && retry <= 99);
	/* Another tenant is not affected. */
	assert_int_equal(web__limits_ingest_admit(L, "b", 10, &other, &retry, &msg), 0);
	web__limits_ingest_done(L, other, 50, 0, "");
	err_clear(&msg);
	assert_int_equal(web__limits_ingest_admit(L, "b", 10, &other, &retry, &msg), ERR_RATE_LIMITED);
	assert_non_null(strstr(msg.text, "profiles/s"));
	assert_true(retry >= 1 && retry <= 4);
	/* The series and label limits become the tenant's ingest limits. */
	ingest_limits_default(&base);
	web__limits_ingest_limits(other, &base, &lim);
	assert_int_equal(lim.max_series, 100000);
	assert_int_equal(lim.max_decompressed_bytes, base.max_decompressed_bytes);
	web__limits_ingest_done(L, other, 0, ERR_TOO_LARGE, "profile 0: series limit of 5 reached");
	assert_int_equal(lim.max_label_names, 1000);
	assert_int_equal(lim.max_label_values, 50000);
	web__limits_ingest_done(L, other, 0, ERR_TOO_LARGE,
				"profile 0: label k has 3 values, its limit (limits file: "
				"max_label_values); no new value is accepted (\"v\")");
	web__limits_ingest_done(L, other, 0, ERR_TOO_LARGE,
				"profile 1: label name limit of 9 reached for this tenant (limits "
				"file: max_label_names); no new label name is accepted (\"n\")");
	buf_init(&b, 1 << 16);
	assert_int_equal(web__limits_metrics(L, &b), 0);
	assert_non_null(strstr(b.data, "{tenant=\"a\",reason=\"ingest_bytes\"} 1\n"));
	assert_non_null(strstr(b.data, "{tenant=\"b\",reason=\"ingest_profiles\"} 1\n"));
	assert_non_null(strstr(b.data, "{tenant=\"b\",reason=\"series\"} 1\n"));
	assert_non_null(strstr(b.data, "{tenant=\"b\",reason=\"label_values\"} 1\n"));
	assert_non_null(strstr(b.data, "{tenant=\"b\",reason=\"label_names\"} 1\n"));
	buf_release(&b);
	web__limits_free(L);
}

static void test_query_slots(void **state)
{
	struct web_limits *L = state_of("default max_queries=2\n"
					"tenant big max_queries=3 max_query_bytes=1M\n");
	struct web__tenant_state *a[4], *b, *u[3];
	struct err_msg msg;

	(void)state;
	/* Tenants are known once they sent data; "big" is listed. */
	assert_int_equal(web__limits_ingest_admit(L, "a", 1, &a[0], &(int){ 0 }, &msg), 0);
	assert_int_equal(web__limits_query_admit(L, "a", &a[0], &msg), 0);
	assert_int_equal(web__limits_query_admit(L, "a", &a[1], &msg), 0);
	err_clear(&msg);
	assert_int_equal(web__limits_query_admit(L, "a", &a[2], &msg), ERR_RATE_LIMITED);
	assert_non_null(strstr(msg.text, "already runs 2 queries"));
	/* Tenant b still gets its own slots. */
	assert_int_equal(web__limits_ingest_admit(L, "b", 1, &b, &(int){ 0 }, &msg), 0);
	assert_int_equal(web__limits_query_admit(L, "b", &b, &msg), 0);
	web__limits_query_done(b);
	web__limits_query_done(a[1]);
	assert_int_equal(web__limits_query_admit(L, "a", &a[1], &msg), 0);
	web__limits_query_done(a[0]);
	web__limits_query_done(a[1]);
	/* The tenant's max_query_bytes, and its refusals counted by reason. */
	{
		assert_int_equal(web__limits_ingest_admit(L, "big", 1, &u[0], &(int){ 0 }, &msg), 0);
		assert_int_equal(web__limits_query_admit(L, "big", &u[0], &msg), 0);
		assert_true(web__limits_query_bytes(u[0]) == 1048576);
		web__limits_query_finished(u[0], 0);
		web__limits_query_finished(u[0], 1);
		web__limits_query_done(u[0]);
	}
	assert_int_equal(web__limits_query_admit(L, "a", &a[0], &msg), 0);
	assert_true(web__limits_query_bytes(a[0]) == 4.0 * 1073741824);
	web__limits_query_done(a[0]);
	{
		struct buf b;

		buf_init(&b, 1 << 16);
		assert_int_equal(web__limits_metrics(L, &b), 0);
		assert_non_null(strstr(b.data, "{tenant=\"big\",reason=\"query_bytes\"} 1\n"));
		buf_release(&b);
	}
	/* Tenants without data share one entry, under the default. */
	assert_int_equal(web__limits_query_admit(L, "x1", &u[0], &msg), 0);
	assert_int_equal(web__limits_query_admit(L, "x2", &u[1], &msg), 0);
	assert_int_equal(web__limits_query_admit(L, "x3", &u[2], &msg), ERR_RATE_LIMITED);
	web__limits_query_done(u[0]);
	web__limits_query_done(u[1]);
	web__limits_free(L);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_symbolization),
		cmocka_unit_test(test_parse_symbolization_errors),
		cmocka_unit_test(test_tenant_cap),
		cmocka_unit_test(test_ingest_rates),
		cmocka_unit_test(test_query_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
