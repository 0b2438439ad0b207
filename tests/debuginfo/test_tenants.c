/*
 * test_tenants.c - per-tenant settings (tenants.c) against a fake upstream
 * on loopback that answers 401 without its header: headers files (what is
 * accepted, errors that name the line but never the value, the cap), the
 * settings (bad URLs and files name the tenant), and resolution per
 * tenant: the tenant with the header gets names from a file that stays
 * its own, the one without gets the upstream's refusal (remembered, not
 * asked again), one without upstreams and one on the server's (none) get
 * not_found, one with the same list and header joins the file's owners,
 * and one with symbolization off gets status disabled and sends nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "fetchtest.h"

#define SECRET "t0ps3cret-9f2c"

static struct fake_upstream g_up;
static char g_url[64], g_id[DEBUGINFO_HEX_MAX];
static struct store *g_st;
static struct debuginfo *g_s;

static int setup(void **state)
{
	struct debuginfo_options o = { 0 };
	struct sym_elf_info info;

	(void)state;
	if (ft_build_prog("", &info, g_id))
		return -1;
	o.data_dir = t_path("data");
	o.fetch_timeout_s = 5;
	o.workers = 1; /* the server itself has no upstream */
	return ft_open(&g_up, &o, &g_st, &g_s);
}

static int teardown(void **state)
{
	(void)state;
	ft_close(&g_up, g_st, g_s);
	return 0;
}

static void test_headers_file(void **state)
{
	struct err_msg msg;
	char **h = NULL, line[64];
	size_t n = 0;
	FILE *f;

	(void)state;
	t_write("good", "# credentials\r\n\r\n  Authorization:  Bearer a b\t \r\nX-Org:1\n");
	err_clear(&msg);
	assert_int_equal(debuginfo_headers_load(t_path("good"), &h, &n, &msg), 0);
	assert_int_equal(n, 2);
	assert_string_equal(h[0], "Authorization: Bearer a b");
	assert_string_equal(h[1], "X-Org: 1");
	for (size_t i = 0; i < n; i++)
		free(h[i]);
	free(h);

	t_write("empty", "# nothing\n");
	err_clear(&msg);
	assert_int_equal(debuginfo_headers_load(t_path("empty"), &h, &n, &msg), 0);
	assert_int_equal(n, 0);
	assert_null(h);

	/* A bad line is named, its value never repeated. */
	t_write("bad", "X-Ok: 1\nAuthorization Bearer " SECRET "\n");
	err_clear(&msg);
	assert_int_equal(debuginfo_headers_load(t_path("bad"), &h, &n, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "line 2: not \"Name: value\""));
	assert_null(strstr(msg.text, SECRET));
	t_write("badname", "Bad Name: " SECRET "\n");
	err_clear(&msg);
	assert_int_equal(debuginfo_headers_load(t_path("badname"), &h, &n, &msg), ERR_INVALID);
	assert_null(strstr(msg.text, SECRET));
	t_write("novalue", "X-Empty:   \n");
	err_clear(&msg);
	assert_int_equal(debuginfo_headers_load(t_path("novalue"), &h, &n, &msg), ERR_INVALID);
	t_write("ctl", "X-Ctl: a\x01" "b\n");
	err_clear(&msg);
	assert_int_equal(debuginfo_headers_load(t_path("ctl"), &h, &n, &msg), ERR_INVALID);

	/* DEBUGINFO_MAX_HEADERS, and one more. */
	f = fopen(t_path("many"), "w");
	assert_non_null(f);
	for (int i = 0; i <= DEBUGINFO_MAX_HEADERS; i++)
		fprintf(f, "X-H%d: %d\n", i, i);
	fclose(f);
	err_clear(&msg);
	assert_int_equal(debuginfo_headers_load(t_path("many"), &h, &n, &msg), ERR_TOO_LARGE);
	snprintf(line, sizeof(line), "line %d: more than %d headers", DEBUGINFO_MAX_HEADERS + 1,
		 DEBUGINFO_MAX_HEADERS);
	assert_non_null(strstr(msg.text, line));
	err_clear(&msg);
	assert_int_not_equal(debuginfo_headers_load(t_path("missing"), &h, &n, &msg), 0);
	assert_non_null(strstr(msg.text, "missing"));
}

static void test_settings_errors(void **state)
{
	struct debuginfo_tenant_conf bad_url = { "acme", 1, 1, "gopher://x", NULL };
	struct debuginfo_tenant_conf bad_file = { "acme", 1, 1, g_url, "/nonexistent/h" };
	struct debuginfo_tenant_conf with_user = { "acme", 1, 1,
						   "http://127.0.0.1:1 https://u:" SECRET "@d.example",
						   NULL };
	struct debuginfo_tenant_conf twice[2] = { { "a", 1, 0, NULL, NULL },
						  { "a", 0, 0, NULL, NULL } };
	struct err_msg msg;

	(void)state;
	err_clear(&msg);
	assert_int_equal(debuginfo_tenants_set(g_s, 1, &bad_url, 1, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "tenant acme: debuginfod URL \"gopher://x\""));
	err_clear(&msg);
	assert_int_not_equal(debuginfo_tenants_set(g_s, 1, &bad_file, 1, &msg), 0);
	assert_non_null(strstr(msg.text, "tenant acme: debuginfod headers file /nonexistent/h"));
	err_clear(&msg);
	assert_int_equal(debuginfo_tenants_set(g_s, 1, &with_user, 1, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "tenant acme: debuginfod URL 2: credentials belong in a "
					 "headers file"));
	assert_null(strstr(msg.text, SECRET));
	err_clear(&msg);
	assert_int_equal(debuginfo_tenants_set(g_s, 1, twice, 2, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "tenant a given twice"));
	/* Nothing was installed: every tenant symbolizes. */
	assert_true(debuginfo_tenant_symbolizes(g_s, "a"));
	assert_int_equal(debuginfo__tenant_set(g_s, "acme"), 0);
}

static int count(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	(void)i;
	(void)vaddr;
	(void)f;
	*(size_t *)ctx += n;
	return 0;
}

/* Resolves the first function of prog for `tenant`: its status, frames into *frames. */
static enum debuginfo_status ask(const char *tenant, size_t *frames, char *reason, size_t rlen)
{
	struct debuginfo_mapping_ref map = { 0, 0, 0, 1 };
	struct debuginfo_asker a = { tenant, DEBUGINFO_QUERY_FETCHES };
	struct debuginfo_addr_req req;
	enum debuginfo_status st;
	uint64_t *addr;
	size_t n = t_func_addresses(t_path("prog"), &addr);

	assert_true(n > 0);
	req.addr = addr[0];
	req.leaf = 1;
	*frames = 0;
	assert_int_equal(debuginfo_resolve_as(g_s, &a, g_id, &map, &req, 1,
					      clock_mono_ns() + 60000000000LL, count, frames, &st,
					      reason, rlen), 0);
	free(addr);
	return st;
}

static void test_per_tenant(void **state)
{
	struct debuginfo_tenant_conf v[] = {
		{ "own", 1, 1, g_url, NULL },
		{ "own-too", 1, 1, g_url, NULL },
		{ "nohdr", 1, 1, g_url, NULL },
		{ "none", 1, 1, "", NULL },
		{ "off", 0, 1, g_url, NULL },
	};
	struct debuginfo_record rec;
	struct err_msg msg;
	char reason[256];
	size_t frames;
	int before;

	(void)state;
	t_write("hdr", "Authorization: Bearer " SECRET "\n");
	v[0].headers_file = v[1].headers_file = v[4].headers_file = t_path("hdr");
	snprintf(g_up.require, sizeof(g_up.require), "Authorization: Bearer " SECRET);
	snprintf(g_up.file, sizeof(g_up.file), "%s", t_path("prog.debug"));
	atomic_store(&g_up.mode, FAKE_FILE);
	err_clear(&msg);
	assert_int_equal(debuginfo_tenants_set(g_s, 1, v, sizeof(v) / sizeof(v[0]), &msg), 0);
	assert_false(debuginfo_tenant_symbolizes(g_s, "off"));
	assert_true(debuginfo_tenant_symbolizes(g_s, "plain"));

	/* The tenant with the header: names, from a file that is its own. */
	before = atomic_load(&g_up.requests);
	assert_int_equal(ask("own", &frames, reason, sizeof(reason)), DEBUGINFO_STATUS_OK);
	assert_true(frames > 0);
	assert_int_equal(atomic_load(&g_up.requests) - before, 1);
	assert_int_equal(debuginfo_get_as(g_s, "own", g_id, &rec, &msg), 0);
	assert_int_equal(rec.source, DEBUGINFO_SOURCE_DEBUGINFOD);
	assert_false(rec.shared);
	assert_int_equal(debuginfo_get_as(g_s, "plain", g_id, &rec, &msg), ERR_NOT_FOUND);

	/* The same list without the header: the upstream's refusal, asked once. */
	before = atomic_load(&g_up.refused);
	assert_int_equal(ask("nohdr", &frames, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_UPSTREAM_ERROR);
	assert_int_equal(frames, 0);
	assert_non_null(strstr(reason, "refused the request (HTTP 401)"));
	assert_null(strstr(reason, SECRET));
	assert_int_equal(atomic_load(&g_up.refused) - before, 1);
	before = atomic_load(&g_up.requests);
	assert_int_equal(ask("nohdr", &frames, reason, sizeof(reason)),
			 DEBUGINFO_STATUS_UPSTREAM_ERROR);
	assert_int_equal(frames, 0); /* not even from the symbol cache */
	assert_int_equal(atomic_load(&g_up.requests), before);

	/* No upstream of its own, or the server's (none): not found, nothing sent. */
	assert_int_equal(ask("none", &frames, reason, sizeof(reason)), DEBUGINFO_STATUS_NOT_FOUND);
	assert_non_null(strstr(reason, "this tenant has no debuginfod upstream"));
	assert_int_equal(frames, 0);
	assert_int_equal(ask("plain", &frames, reason, sizeof(reason)), DEBUGINFO_STATUS_NOT_FOUND);
	assert_string_equal(reason, "not uploaded (unhex upload)");
	assert_int_equal(frames, 0);

	/* Symbolization off: disabled, nothing sent, nothing tracked at ingest. */
	assert_int_equal(ask("off", &frames, reason, sizeof(reason)), DEBUGINFO_STATUS_DISABLED);
	assert_string_equal(reason, DEBUGINFO_DISABLED_REASON);
	assert_int_equal(frames, 0);
	assert_int_equal(atomic_load(&g_up.requests), before);
	assert_int_equal(debuginfo_unsym_class(g_s, "off", "svc", g_id, "prog"),
			 DEBUGINFO_UNSYM_SKIP);

	/* The same list with the header serves the same bytes: own-too joins. */
	assert_int_equal(ask("own-too", &frames, reason, sizeof(reason)), DEBUGINFO_STATUS_OK);
	assert_true(frames > 0);
	assert_int_equal(atomic_load(&g_up.requests) - before, 1);
	assert_int_equal(debuginfo_get_as(g_s, "own-too", g_id, &rec, &msg), 0);
	assert_int_equal(debuginfo_get_as(g_s, "nohdr", g_id, &rec, &msg), ERR_NOT_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers_file),
		cmocka_unit_test(test_settings_errors),
		cmocka_unit_test(test_per_tenant),
	};
	int rc;

	t_mkdtemp();
	if (fake_listen(&g_up))
		return 1;
	snprintf(g_url, sizeof(g_url), "http://127.0.0.1:%d", g_up.port);
	rc = cmocka_run_group_tests(tests, setup, teardown);
	t_rmdir();
	return rc;
}
