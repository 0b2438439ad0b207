/*
 * test_touch.c - the last use of a build ID (touch.c) through a real
 * service: the first use is written, the next ones within the minute are
 * not, a replaced file is written again at its next use, an upload in
 * progress makes a use be skipped and retried, and build IDs without good
 * debug info or that are not hex are left alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <ctype.h>
#include <stddef.h>
#include <cmocka.h>

#include "debuginfo/debuginfo_int.h"
#include "svctest.h"

static int64_t last_used(const char *id)
{
	struct debuginfo__meta m;

	assert_int_equal(debuginfo__meta_get(g_svc, id, &m), 0);
	return m.last_used;
}

static void set_last_used(const char *id, int64_t v)
{
	struct debuginfo__meta m;

	assert_int_equal(debuginfo__meta_get(g_svc, id, &m), 0);
	m.last_used = v;
	assert_int_equal(debuginfo__meta_put(g_svc, id, &m), 0);
}

static void test_once_a_minute(void **state)
{
	struct debuginfo_upload_result res;
	struct err_msg msg;
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t blen;
	char id[DEBUGINFO_HEX_MAX];

	(void)state;
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res,
				     &msg), 0);
	set_last_used(g_id, 1);
	debuginfo_touch(g_svc, g_id);
	assert_true(last_used(g_id) > 1);
	/* Within the minute: not written again. */
	set_last_used(g_id, 1);
	debuginfo_touch(g_svc, g_id);
	assert_true(last_used(g_id) == 1);
	/* Upper-case hex names the same build ID. */
	for (size_t i = 0; i < strlen(g_id); i++)
		id[i] = (char)toupper((unsigned char)g_id[i]);
	id[strlen(g_id)] = '\0';
	debuginfo_touch(g_svc, id);
	assert_true(last_used(g_id) == 1);
	/* Its file changed: the next use is written. */
	assert_int_equal(sym_build_id_parse(g_id, bid, &blen), 0);
	debuginfo__touch_forget(g_svc, bid, blen);
	debuginfo_touch(g_svc, g_id);
	assert_true(last_used(g_id) > 1);
}

static void test_skipped_during_upload(void **state)
{
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t blen;

	(void)state;
	assert_int_equal(sym_build_id_parse(g_id, bid, &blen), 0);
	debuginfo__touch_forget(g_svc, bid, blen);
	set_last_used(g_id, 1);
	pthread_mutex_lock(&g_svc->upload_mu);
	debuginfo_touch(g_svc, g_id); /* skipped, not waited for */
	pthread_mutex_unlock(&g_svc->upload_mu);
	assert_true(last_used(g_id) == 1);
	debuginfo_touch(g_svc, g_id); /* and forgotten, so this one writes */
	assert_true(last_used(g_id) > 1);
}

static void test_left_alone(void **state)
{
	struct debuginfo__meta m;

	(void)state;
	/* Not hex, or never heard of: nothing is written. */
	debuginfo_touch(g_svc, "not-hex");
	debuginfo_touch(g_svc, g_id2);
	assert_int_equal(debuginfo__meta_get(g_svc, g_id2, &m), ERR_NOT_FOUND);
	/* Known but without good debug info: left as it is. */
	debuginfo__meta_fail(g_svc, g_id2, DEBUGINFO_SOURCE_NONE, DEBUGINFO_STATUS_NOT_FOUND, 0,
			     "missing");
	debuginfo_touch(g_svc, g_id2);
	assert_true(last_used(g_id2) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once_a_minute),
		cmocka_unit_test(test_skipped_during_upload),
		cmocka_unit_test(test_left_alone),
	};

	return cmocka_run_group_tests(tests, svc_setup, svc_teardown);
}
