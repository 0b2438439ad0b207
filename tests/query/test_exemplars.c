/*
 * test_exemplars.c - query/exemplars.c: label sets without the groupBy
 * labels, their intersection, and Pyroscope's one exemplar per cell (parts
 * of one profile summed, the largest kept, ties to the smallest id, labels
 * of all parts intersected); and a budget too small fails cleanly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "treefx.h"

#include "storage/storage.h"

static const char *pairs(const struct qexemplars *x, uint32_t id, char *out, size_t cap)
{
	const char *p = intern_str(&x->lsets, id), *end = p + intern_len(&x->lsets, id);
	size_t n = 0;

	out[0] = '\0';
	while (p < end) {
		n += (size_t)snprintf(out + n, cap - n, "%s=", p);
		p += strlen(p) + 1;
		n += (size_t)snprintf(out + n, cap - n, "%s;", p);
		p += strlen(p) + 1;
	}
	return out;
}

static void test_lsets(void **state)
{
	const struct store_label a[] = { { "service_name", "api" }, { "pod", "p1" },
					 { "__name__", "cpu" }, { "zone", "z" } };
	const struct store_label b[] = { { "zone", "z" }, { "pod", "p2" }, { "service_name", "api" } };
	const char *by[] = { "zone" };
	struct err_msg msg;
	struct qctx q;
	struct qexemplars x;
	uint32_t la, lb, li, li2;
	char text[256];
	(void)state;

	tfx_ctx(&q, &msg, 0);
	assert_int_equal(query__ex_init(&q, &x), 0);
	assert_int_equal(query__ex_lset(&x, a, 4, by, 1, &la), 0);
	assert_string_equal(pairs(&x, la, text, sizeof(text)), "__name__=cpu;pod=p1;service_name=api;");
	assert_int_equal(query__ex_lset(&x, b, 3, NULL, 0, &lb), 0);
	assert_string_equal(pairs(&x, lb, text, sizeof(text)), "pod=p2;service_name=api;zone=z;");
	assert_int_equal(query__ex_intersect(&x, la, lb, &li), 0);
	assert_string_equal(pairs(&x, li, text, sizeof(text)), "service_name=api;");
	assert_int_equal(query__ex_intersect(&x, lb, la, &li2), 0);
	assert_int_equal(li, li2);
	assert_int_equal(query__ex_intersect(&x, la, la, &li2), 0);
	assert_int_equal(li2, la);
	query__ex_release(&x);
	query__ex_release(&x); /* twice is fine */
}

static void id_of(uint8_t id[16], int k)
{
	memset(id, 0, 16);
	id[15] = (uint8_t)k;
}

static void test_pick(void **state)
{
	const struct store_label l1[] = { { "pod", "p1" }, { "svc", "a" } };
	const struct store_label l2[] = { { "pod", "p2" }, { "svc", "a" } };
	struct err_msg msg;
	struct qctx q;
	struct qexemplars x;
	uint32_t s1, s2;
	uint8_t id[16];
	const struct qex *e;
	char text[256];
	(void)state;

	tfx_ctx(&q, &msg, 0);
	assert_int_equal(query__ex_init(&q, &x), 0);
	assert_int_equal(query__ex_lset(&x, l1, 2, NULL, 0, &s1), 0);
	assert_int_equal(query__ex_lset(&x, l2, 2, NULL, 0, &s2), 0);
	/* Cell 7: profile 3 split in two series (60 + 50) beats profile 2 (100). */
	id_of(id, 2);
	assert_int_equal(query__ex_add(&x, 7, id, 1000, 100, s1), 0);
	id_of(id, 3);
	assert_int_equal(query__ex_add(&x, 7, id, 2000, 60, s1), 0);
	assert_int_equal(query__ex_add(&x, 7, id, 2000, 50, s2), 0);
	/* Cell 2: a tie between profiles 9 and 5: the smaller id wins. */
	id_of(id, 9);
	assert_int_equal(query__ex_add(&x, 2, id, 500, 40, s2), 0);
	id_of(id, 5);
	assert_int_equal(query__ex_add(&x, 2, id, 600, 40, s1), 0);
	/* Cell 4: one id at two times: the larger kept, labels of both intersected. */
	id_of(id, 6);
	assert_int_equal(query__ex_add(&x, 4, id, 100, 10, s1), 0);
	assert_int_equal(query__ex_add(&x, 4, id, 200, 30, s2), 0);
	assert_int_equal(query__ex_pick(&x), 0);
	assert_int_equal(x.n, 3);
	assert_null(query__ex_find(&x, 3));
	e = query__ex_find(&x, 7);
	assert_non_null(e);
	assert_int_equal(e->id[15], 3);
	assert_int_equal(e->value, 110);
	assert_int_equal(e->time_ms, 2000);
	assert_string_equal(pairs(&x, e->lset, text, sizeof(text)), "svc=a;");
	e = query__ex_find(&x, 2);
	assert_int_equal(e->id[15], 5);
	assert_int_equal(e->time_ms, 600);
	assert_string_equal(pairs(&x, e->lset, text, sizeof(text)), "pod=p1;svc=a;");
	e = query__ex_find(&x, 4);
	assert_int_equal(e->value, 30);
	assert_int_equal(e->time_ms, 200);
	assert_string_equal(pairs(&x, e->lset, text, sizeof(text)), "svc=a;");
	query__ex_release(&x);
}

/* A budget that cannot hold the candidates fails with ERR_TOO_LARGE, nothing leaks. */
static void test_budget(void **state)
{
	const struct store_label l[] = { { "svc", "a" } };
	struct err_msg msg;
	struct qctx q;
	struct qexemplars x;
	uint32_t s;
	uint8_t id[16];
	int rc = 0;
	(void)state;

	tfx_ctx(&q, &msg, (size_t)1 << 20);
	assert_int_equal(query__ex_init(&q, &x), 0);
	assert_int_equal(query__ex_lset(&x, l, 1, NULL, 0, &s), 0);
	id_of(id, 1);
	for (int i = 0; i < 100000 && !rc; i++)
		rc = query__ex_add(&x, (uint64_t)i, id, i, i, s);
	assert_int_equal(rc, ERR_TOO_LARGE);
	query__ex_release(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lsets),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
