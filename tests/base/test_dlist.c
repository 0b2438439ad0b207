/* test_dlist.c - the intrusive list of LRU caches: order after pushes,
 * moves and unlinks from the head, the middle and the tail, and entries
 * found back from their nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/dlist.h"

struct ent {
	int key;
	struct dlist_node lru; /* not first: dlist_entry must subtract */
};

/* The keys head to tail into out; their count.  Checks the back links. */
static size_t order(const struct dlist *l, int *out)
{
	const struct dlist_node *prev = NULL;
	size_t n = 0;

	for (const struct dlist_node *x = l->head; x; x = x->next) {
		assert_ptr_equal(x->prev, prev);
		out[n++] = dlist_entry(x, struct ent, lru)->key;
		prev = x;
	}
	assert_ptr_equal(l->tail, prev);
	return n;
}

static void test_order(void **state)
{
	struct ent e[4] = { { .key = 0 }, { .key = 1 }, { .key = 2 }, { .key = 3 } };
	struct dlist l = { NULL, NULL };
	int k[4];

	(void)state;
	assert_int_equal(order(&l, k), 0);
	for (int i = 0; i < 4; i++)
		dlist_push_front(&l, &e[i].lru);
	assert_int_equal(order(&l, k), 4);
	assert_int_equal(k[0], 3);
	assert_int_equal(k[3], 0);
	dlist_move_front(&l, &e[1].lru); /* from the middle */
	assert_int_equal(order(&l, k), 4);
	assert_true(k[0] == 1 && k[1] == 3 && k[2] == 2 && k[3] == 0);
	dlist_move_front(&l, &e[0].lru); /* from the tail */
	assert_int_equal(order(&l, k), 4);
	assert_true(k[0] == 0 && k[1] == 1 && k[2] == 3 && k[3] == 2);
	dlist_move_front(&l, &e[0].lru); /* the head stays */
	assert_int_equal(order(&l, k), 4);
	assert_int_equal(k[0], 0);
	dlist_unlink(&l, l.tail); /* 2 */
	dlist_unlink(&l, &e[0].lru); /* the head */
	dlist_unlink(&l, &e[1].lru);
	assert_int_equal(order(&l, k), 1);
	assert_int_equal(k[0], 3);
	assert_ptr_equal(e[1].lru.next, NULL);
	dlist_unlink(&l, &e[3].lru);
	assert_null(l.head);
	assert_null(l.tail);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
