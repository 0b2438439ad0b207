/* test_labels.c - label checks and Pyroscope's legacy name parameter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "ingest/ingest_int.h"

static void test_label_names(void **state)
{
	(void)state;
	assert_true(ingest__label_name_ok("service_name"));
	assert_true(ingest__label_name_ok("_x.y9"));
	assert_true(ingest__label_name_ok("__name__"));
	assert_false(ingest__label_name_ok(""));
	assert_false(ingest__label_name_ok("9a"));
	assert_false(ingest__label_name_ok("a-b"));
	assert_false(ingest__label_name_ok(".a"));
	assert_false(ingest__label_name_ok("a b"));
}

static void test_check_labels(void **state)
{
	struct ingest_limits lim;
	struct err_msg msg = { { 0 } };
	struct store_label ok[] = { { "service_name", "a" }, { "env", "" } };
	(void)state;

	ingest_limits_default(&lim);
	assert_int_equal(ingest__check_labels(&lim, ok, 2, &msg), 0);
	lim.max_labels = 1;
	assert_int_equal(ingest__check_labels(&lim, ok, 2, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "2 labels, more than the limit of 1"));
	ingest_limits_default(&lim);
	lim.max_label_bytes = 5;
	err_clear(&msg);
	assert_int_equal(ingest__check_labels(&lim, ok, 2, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "longer than 5 bytes"));
}

struct name_case {
	const char *name;
	const char *want; /* "k=v,k=v" of the result, in order, or NULL on error */
	const char *err;  /* message substring on error */
};

static void test_legacy_names(void **state)
{
	static const struct name_case cases[] = {
		{ "myapp.cpu", "service_name=myapp,__name__=process_cpu", NULL },
		{ "my.app.alloc_space{env=prod}",
		  "service_name=my.app,__name__=memory,env=prod", NULL },
		{ "app.itimer", "service_name=app,__name__=process_cpu", NULL },
		{ "app.wall", "service_name=app,__name__=wall", NULL },
		{ "app.inuse_objects", "service_name=app,__name__=memory", NULL },
		{ "app.goroutines", "service_name=app,__name__=goroutines", NULL },
		{ "app.mutex_duration", "service_name=app,__name__=mutex", NULL },
		{ "app.block_count", "service_name=app,__name__=block", NULL },
		{ "app.unknown", "service_name=app.unknown", NULL },
		{ "app", "service_name=app", NULL },
		{ "  app.cpu { region = eu-west ,  az=\"a, b\" }  ",
		  "service_name=app,__name__=process_cpu,region=eu-west,az=a, b", NULL },
		{ "app.cpu{}", "service_name=app,__name__=process_cpu", NULL },
		{ "app.cpu{k=\"q\\\"x\"}", "service_name=app,__name__=process_cpu,k=q\"x", NULL },
		{ "app.cpu{service_name=svc}", "service_name=svc,__name__=process_cpu", NULL },
		{ "", NULL, "empty application name" },
		{ ".cpu", NULL, "empty application name" },
		{ "{a=b}", NULL, "empty application name" },
		{ "app.cpu{a=b", NULL, "must end with '}'" },
		{ "app.cpu{a}", NULL, "label 'a' has no '='" },
		{ "app.cpu{a=b,}", NULL, "empty label after ','" },
		{ "app.cpu{9a=b}", NULL, "label name '9a' is invalid" },
		{ "app.cpu{a=1,a=2}", NULL, "label 'a' given twice" },
		/* Pyroscope drops labels named __*__ (pyroscope-go sends __session_id__). */
		{ "app.cpu{__name__=x}", "service_name=app,__name__=process_cpu", NULL },
		{ "app{__session_id__=1f2e,env=prod}", "service_name=app,env=prod", NULL },
		{ "app.cpu{a=\"x}", NULL, "unterminated quoted value" },
		{ "ap=p.cpu", NULL, "invalid character '='" },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arena a;
		struct err_msg msg = { { 0 } };
		struct store_label *l;
		size_t n;
		char got[512] = "";
		int rc;

		arena_init(&a, 1 << 30);
		rc = ingest_legacy_labels(&a, cases[i].name, &l, &n, &msg);
		if (!cases[i].want) {
			if (rc != ERR_INVALID || !strstr(msg.text, cases[i].err))
				fail_msg("'%s': want error '%s', got %d '%s'", cases[i].name,
					 cases[i].err, rc, msg.text);
		} else {
			if (rc)
				fail_msg("'%s': %s", cases[i].name, msg.text);
			for (size_t j = 0; j < n; j++) {
				if (j)
					strcat(got, ",");
				strcat(got, l[j].name);
				strcat(got, "=");
				strcat(got, l[j].value);
			}
			if (strcmp(got, cases[i].want) != 0)
				fail_msg("'%s': want '%s', got '%s'", cases[i].name, cases[i].want, got);
		}
		arena_release(&a);
	}
}

static void test_long_name(void **state)
{
	char *name = malloc(INGEST_MAX_NAME_BYTES + 10);
	struct arena a;
	struct err_msg msg = { { 0 } };
	struct store_label *l;
	size_t n;
	(void)state;

	memset(name, 'a', INGEST_MAX_NAME_BYTES + 9);
	name[INGEST_MAX_NAME_BYTES + 9] = '\0';
	arena_init(&a, 1 << 30);
	assert_int_equal(ingest_legacy_labels(&a, name, &l, &n, &msg), ERR_TOO_LARGE);
	arena_release(&a);
	free(name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_names),
		cmocka_unit_test(test_check_labels),
		cmocka_unit_test(test_legacy_names),
		cmocka_unit_test(test_long_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
