/* test_series.c - the series index: find-or-create, label rules, postings,
 * label names and values, persistence, aborts and corrupt records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/varint.h"
#include "helpers.h"
#include "storage/storage_int.h"

struct seen {
	int n;
	uint64_t ids[64];
	uint32_t parts[64];
	char text[4096];
};

static int series_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
		     size_t n)
{
	struct seen *s = ctx;
	size_t len = strlen(s->text);

	s->ids[s->n] = id;
	s->parts[s->n++] = part;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s->text + len, sizeof(s->text) - len, "%s=%s,", l[i].name,
					l[i].value);
	snprintf(s->text + len, sizeof(s->text) - len, ";");
	return 0;
}

static int str_cb(void *ctx, const char *v)
{
	struct seen *s = ctx;
	size_t len = strlen(s->text);
	snprintf(s->text + len, sizeof(s->text) - len, "%s|", v);
	s->n++;
	return 0;
}

static void test_find_or_create(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct store_label l[3] = {
		{ "pod", "p1" },
		{ STORE_LABEL_SERVICE, "api" },
		{ STORE_LABEL_PROFILE_TYPE, "cpu" },
	};
	struct store_label r[3] = { l[2], l[0], l[1] }; /* same set, other order */
	uint64_t a, b, c;
	struct seen s = { 0 };

	assert_int_equal(store_txn_series(tx, l, 3, &a, NULL), 0);
	assert_int_equal(store_txn_series(tx, r, 3, &b, NULL), 0);
	assert_int_equal(a, b);
	assert_true(a != 0);
	l[0].value = "p2";
	assert_int_equal(store_txn_series(tx, l, 3, &c, NULL), 0);
	assert_int_not_equal(a, c);
	assert_int_equal(commit(tx), 0);
	assert_int_equal(store_series_each(st, "t", series_cb, &s), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.text, "__profile_type__=cpu,pod=p1,service_name=api,;"
				    "__profile_type__=cpu,pod=p2,service_name=api,;");
	assert_int_equal(s.parts[0], s.parts[1]);

	/* After reopen the same labels give the same id; new ones continue. */
	st = sfx_reopen(state, 0);
	tx = begin(st, "t");
	assert_int_equal(store_txn_series(tx, r, 3, &b, NULL), 0);
	assert_int_equal(a, b);
	l[0].value = "p3";
	assert_int_equal(store_txn_series(tx, l, 3, &b, NULL), 0);
	assert_int_equal(b, c + 1);
	assert_int_equal(commit(tx), 0);
}

static void test_label_rules(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct err_msg msg = { { 0 } };
	struct store_label l[3] = {
		{ STORE_LABEL_SERVICE, "api" },
		{ STORE_LABEL_PROFILE_TYPE, "cpu" },
		{ STORE_LABEL_SERVICE, "dup" },
	};
	char big[STORE_MAX_LABEL_BYTES + 2];
	uint64_t id = 12345;

	assert_int_equal(store_txn_series(tx, l, 3, &id, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "twice"));
	err_clear(&msg);
	assert_int_equal(store_txn_series(tx, l + 1, 1, &id, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "service_name"));
	err_clear(&msg);
	assert_int_equal(store_txn_series(tx, l, 1, &id, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "__profile_type__"));
	assert_int_equal(store_txn_series(tx, l, 0, &id, NULL), ERR_INVALID);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	l[2].name = "big";
	l[2].value = big;
	assert_int_equal(store_txn_series(tx, l, 3, &id, NULL), ERR_TOO_LARGE);
	l[2].name = "";
	assert_int_equal(store_txn_series(tx, l, 3, &id, NULL), ERR_INVALID);
	assert_int_equal(id, 12345); /* outputs untouched on failure */
	assert_int_equal(commit(tx), 0);
}

static void test_postings_and_labels(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct seen s = { 0 };
	uint64_t ids[4];

	assert_int_equal(add_series(tx, "api", "a", &ids[0]), 0);
	assert_int_equal(add_series(tx, "api", "b", &ids[1]), 0);
	assert_int_equal(add_series(tx, "db", "a", &ids[2]), 0);
	assert_int_equal(add_series(tx, "db", NULL, &ids[3]), 0);
	assert_int_equal(commit(tx), 0);
	/* Another tenant with overlapping labels. */
	tx = begin(st, "u");
	assert_int_equal(add_series(tx, "api", "zzz", &ids[0]), 0);
	assert_int_equal(commit(tx), 0);

	assert_int_equal(store_series_with(st, "t", "pod", "a", series_cb, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ids[0], 1);
	assert_int_equal(s.ids[1], 3);
	assert_int_not_equal(s.parts[0], s.parts[1]);
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_series_with(st, "t", STORE_LABEL_SERVICE, "db", series_cb, &s), 0);
	assert_int_equal(s.n, 2);
	memset(&s, 0, sizeof(s));
	/* "ap" is a prefix of "api": exact match only. */
	assert_int_equal(store_series_with(st, "t", STORE_LABEL_SERVICE, "ap", series_cb, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(store_label_names(st, "t", str_cb, &s), 0);
	assert_string_equal(s.text, "__profile_type__|pod|service_name|");
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_label_values(st, "t", "pod", str_cb, &s), 0);
	assert_string_equal(s.text, "a|b|");
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_label_values(st, "u", "pod", str_cb, &s), 0);
	assert_string_equal(s.text, "zzz|");
	memset(&s, 0, sizeof(s));
	assert_int_equal(store_label_values(st, "t", "po", str_cb, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(store_series_each(st, "nobody", series_cb, &s), 0);
	assert_int_equal(store_label_names(st, "nobody", str_cb, &s), 0);
	assert_int_equal(s.n, 0);
}

static void test_abort_forgets_series(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx;
	struct seen s = { 0 };
	uint64_t a, b;

	tx = begin(st, "t");
	assert_int_equal(add_series(tx, "api", "a", &a), 0);
	assert_int_equal(commit(tx), 0);
	tx = begin(st, "t");
	assert_int_equal(add_series(tx, "api", "b", &b), 0);
	assert_int_equal(b, 2);
	store_txn_abort(tx);
	assert_int_equal(store_series_each(st, "t", series_cb, &s), 0);
	assert_int_equal(s.n, 1);
	tx = begin(st, "t");
	assert_int_equal(add_series(tx, "other", "c", &b), 0);
	assert_int_equal(b, 2); /* the aborted id is reused */
	assert_int_equal(add_series(tx, "api", "a", &b), 0);
	assert_int_equal(b, a);
	assert_int_equal(commit(tx), 0);
}

/*
 * store_txn_set_max_series: past the cap no new series, existing ones still
 * found; the count is the tenant's (after a reopen too), not the txn's.
 */
static void test_max_series(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx;
	struct err_msg msg = { { 0 } };
	uint64_t a, b;

	tx = begin(st, "t");
	store_txn_set_max_series(tx, 2);
	assert_int_equal(add_series(tx, "api", "a", &a), 0);
	assert_int_equal(add_series(tx, "api", "b", &b), 0);
	assert_int_equal(commit(tx), 0);
	st = sfx_reopen(state, 0);
	tx = begin(st, "t");
	store_txn_set_max_series(tx, 2);
	assert_int_equal(add_series(tx, "api", "a", &b), 0);
	assert_int_equal(b, a);
	{
		struct store_label l[3] = { { "pod", "c" }, { STORE_LABEL_SERVICE, "api" },
					    { STORE_LABEL_PROFILE_TYPE, "cpu" } };

		assert_int_equal(store_txn_series(tx, l, 3, &b, &msg), ERR_TOO_LARGE);
		assert_non_null(strstr(msg.text, "series limit of 2 reached"));
	}
	store_txn_set_max_series(tx, 3);
	assert_int_equal(add_series(tx, "api", "c", &b), 0);
	assert_int_equal(commit(tx), 0);
	/* Another tenant has its own count. */
	tx = begin(st, "u");
	store_txn_set_max_series(tx, 1);
	assert_int_equal(add_series(tx, "api", "a", &b), 0);
	assert_int_equal(add_series(tx, "api", "b", &b), ERR_TOO_LARGE);
	store_txn_abort(tx);
}

/* A series of service "api" with one extra label name=value. */
static int add_named(struct store_txn *tx, const char *name, const char *value, uint64_t *id,
		     struct err_msg *msg)
{
	struct store_label l[3] = { { name, value }, { STORE_LABEL_SERVICE, "api" },
				    { STORE_LABEL_PROFILE_TYPE, "cpu" } };

	err_clear(msg);
	return store_txn_series(tx, l, 3, id, msg);
}

/*
 * store_txn_set_max_labels: a series that would add a label name or a value
 * of a name past the caps is refused, existing series still found; the
 * counts are the tenant's series' (rebuilt after a reopen), an aborted
 * series adds nothing, and a txn without caps creates anything.
 */
static void test_max_labels(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx;
	struct err_msg msg = { { 0 } };
	uint64_t a, b;

	/* Names: service_name, __profile_type__, pod, then one more of 4. */
	tx = begin(st, "t");
	store_txn_set_max_labels(tx, 4, 2);
	assert_int_equal(add_named(tx, "pod", "a", &a, &msg), 0);
	assert_int_equal(add_named(tx, "pod", "b", &b, &msg), 0);
	assert_int_equal(add_named(tx, "pod", "c", &b, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "label pod has 2 values, its limit (limits file: "
					 "max_label_values)"));
	assert_int_equal(add_named(tx, "pod", "a", &b, &msg), 0);
	assert_int_equal(b, a);
	assert_int_equal(add_named(tx, "zone", "z", &b, &msg), 0);
	assert_int_equal(add_named(tx, "rack", "r", &b, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "label name limit of 4 reached"));
	assert_non_null(strstr(msg.text, "\"rack\""));
	assert_int_equal(commit(tx), 0);
	/* An aborted series' name and value are forgotten. */
	tx = begin(st, "t");
	assert_int_equal(add_named(tx, "rack", "r", &b, &msg), 0);
	store_txn_abort(tx);

	st = sfx_reopen(state, 0);
	tx = begin(st, "t");
	store_txn_set_max_labels(tx, 4, 2);
	assert_int_equal(add_named(tx, "pod", "c", &b, &msg), ERR_TOO_LARGE);
	assert_int_equal(add_named(tx, "rack", "r", &b, &msg), ERR_TOO_LARGE);
	assert_int_equal(add_named(tx, "zone", "z", &b, &msg), 0);
	/* Values are counted per name: zone has one. */
	assert_int_equal(add_named(tx, "zone", "y", &b, &msg), 0);
	assert_int_equal(add_named(tx, "zone", "x", &b, &msg), ERR_TOO_LARGE);
	store_txn_set_max_labels(tx, 5, 3);
	assert_int_equal(add_named(tx, "rack", "r", &b, &msg), 0);
	assert_int_equal(add_named(tx, "pod", "c", &b, &msg), 0);
	assert_int_equal(commit(tx), 0);
	/* Another tenant has its own counts. */
	tx = begin(st, "u");
	store_txn_set_max_labels(tx, 3, 1);
	assert_int_equal(add_named(tx, "pod", "c", &b, &msg), 0);
	assert_int_equal(add_named(tx, "pod", "d", &b, &msg), ERR_TOO_LARGE);
	store_txn_abort(tx);
}

static void test_corrupt_series(void **state)
{
	struct store *st = sfx_store(state);
	struct store_txn *tx = begin(st, "t");
	struct seen s = { 0 };
	uint8_t k[13];
	uint64_t a;

	assert_int_equal(add_series(tx, "api", "a", &a), 0);
	assert_int_equal(commit(tx), 0);
	key_tenant_tag(k, 1, TAG_SERIES);
	be64_put(k + 5, a);
	/* Label count says 2, one label present. */
	assert_int_equal(store__raw_put(st, CFI_SERIES, k, 13, "\x01\x01\x02\x01x\x01y", 7), 0);
	assert_int_equal(store_series_each(st, "t", series_cb, &s), ERR_CORRUPT);
	assert_int_equal(store_series_with(st, "t", "pod", "a", series_cb, &s), ERR_CORRUPT);
	/* Label length past the end. */
	assert_int_equal(store__raw_put(st, CFI_SERIES, k, 13, "\x01\x01\x01\x7fx", 5), 0);
	assert_int_equal(store_series_each(st, "t", series_cb, &s), ERR_CORRUPT);
	/* A writer's index load fails cleanly too. */
	st = sfx_reopen(state, 0);
	{
		struct store_txn *t2 = NULL;
		assert_int_equal(store__raw_put(st, CFI_SERIES, k, 13, "\x07", 1), 0);
		assert_int_equal(store_txn_begin(st, "t", &t2, NULL), ERR_CORRUPT);
		assert_null(t2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		SFX_TEST(test_find_or_create),
		SFX_TEST(test_label_rules),
		SFX_TEST(test_postings_and_labels),
		SFX_TEST(test_abort_forgets_series),
		SFX_TEST(test_max_series),
		SFX_TEST(test_max_labels),
		SFX_TEST(test_corrupt_series),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
