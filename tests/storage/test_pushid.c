/* test_pushid.c - idempotent pushes: a claimed ID is seen again within the
 * window, per tenant, across a restart; an aborted txn forgets its claims;
 * the window ends; the cap per window is honest about what it forgets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "helpers.h"

#define SEC 1000000000LL

static int64_t fake_now;

static struct store *open_clocked(const char *dir, uint32_t max)
{
	struct store_options o = { 0 };

	o.dir = dir;
	o.clock_ns = clock_at;
	o.clock_ctx = &fake_now;
	o.push_id_window_ns = 10 * SEC;
	o.push_id_max = max;
	return open_options(&o);
}

/* Claims id for tenant in its own txn; returns seen; commits or aborts. */
static int claim(struct store *st, const char *tenant, const char *id, int commit_it)
{
	struct store_txn *tx = begin(st, tenant);
	int seen = -1;

	assert_int_equal(store_txn_claim_id(tx, id, strlen(id), &seen), 0);
	if (commit_it)
		assert_int_equal(commit(tx), 0);
	else
		store_txn_abort(tx);
	return seen;
}

static void test_claims(void **state)
{
	struct store_push_id_stats ps;
	char *dir = tmpdir_new();
	struct store *st;
	struct store_txn *tx;
	char big[STORE_PUSH_ID_MAX + 1];
	int seen;

	(void)state;
	fake_now = 1700000000LL * SEC;
	st = open_clocked(dir, 100);
	assert_non_null(st);

	tx = begin(st, "t1");
	assert_int_equal(store_txn_claim_id(tx, "a", 1, &seen), 0);
	assert_int_equal(seen, 0);
	assert_int_equal(store_txn_claim_id(tx, "b", 1, &seen), 0);
	assert_int_equal(seen, 0);
	/* The same ID twice in one request is stored once. */
	assert_int_equal(store_txn_claim_id(tx, "a", 1, &seen), 0);
	assert_int_equal(seen, 1);
	memset(big, 'x', sizeof(big));
	assert_int_equal(store_txn_claim_id(tx, big, sizeof(big), &seen), ERR_INVALID);
	assert_int_equal(store_txn_claim_id(tx, "", 0, &seen), ERR_INVALID);
	assert_int_equal(commit(tx), 0);

	assert_int_equal(claim(st, "t1", "a", 1), 1);
	/* Tenants are apart; an aborted claim is forgotten. */
	assert_int_equal(claim(st, "t2", "a", 0), 0);
	assert_int_equal(claim(st, "t2", "a", 1), 0);
	assert_int_equal(claim(st, "t2", "a", 1), 1);
	store_push_id_stats(st, &ps);
	assert_int_equal(ps.remembered, 3);
	assert_int_equal(ps.duplicates, 3);

	/* A restart remembers what was committed. */
	store_close(st);
	fake_now += 5 * SEC;
	st = open_clocked(dir, 100);
	assert_non_null(st);
	assert_int_equal(claim(st, "t1", "b", 1), 1);
	assert_int_equal(claim(st, "t2", "a", 1), 1);

	/* The window ends: 10 s after the claim the ID is new again. */
	fake_now += 6 * SEC;
	assert_int_equal(claim(st, "t1", "a", 1), 0);
	assert_int_equal(claim(st, "t1", "a", 1), 1);

	/* Long after, a restart drops every old record. */
	store_close(st);
	fake_now += 100 * SEC;
	st = open_clocked(dir, 100);
	assert_non_null(st);
	store_push_id_stats(st, &ps);
	assert_int_equal(ps.remembered, 0);
	assert_int_equal(claim(st, "t1", "a", 1), 0);
	store_close(st);
	tmpdir_free(dir);
}

static void test_cap(void **state)
{
	struct store_push_id_stats ps;
	char *dir = tmpdir_new(), id[16];
	struct store *st;

	(void)state;
	fake_now = 1700000000LL * SEC;
	st = open_clocked(dir, 4);
	assert_non_null(st);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "id-%d", i);
		assert_int_equal(claim(st, "t", id, 1), 0);
	}
	/* The fifth was stored but not remembered, and that is counted. */
	assert_int_equal(claim(st, "t", "id-0", 1), 1);
	assert_int_equal(claim(st, "t", "id-4", 1), 0);
	store_push_id_stats(st, &ps);
	assert_int_equal(ps.remembered, 4);
	assert_int_equal(ps.overflow, 2);
	/* The next window has room again. */
	fake_now += 10 * SEC;
	assert_int_equal(claim(st, "t", "id-4", 1), 0);
	assert_int_equal(claim(st, "t", "id-4", 1), 1);
	store_close(st);
	tmpdir_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claims),
		cmocka_unit_test(test_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
