/*
 * test_util.c - the small containers of symbolize/util.c: span tables, the
 * pointer map on base/hmap, interning into base/intern with the NUL cut,
 * demangling, and all of them against a budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"
#include "base/intern.h"
#include "symbolize/symbolize_int.h"

static void test_spans(void **state)
{
	/* An outer span with two inner ones, and one that starts inside it. */
	struct sym__span s[] = {
		{ 0x200, 0x240, 0, 3 }, { 0x100, 0x300, 0, 1 }, { 0x120, 0x140, 0, 2 },
		{ 0x400, 0x410, 0, 4 },
	};
	(void)state;

	sym__spans_sort(s, 4);
	assert_int_equal(s[0].idx, 1);
	assert_int_equal(s[1].idx, 2);
	assert_int_equal(s[2].idx, 3);
	assert_int_equal(s[3].idx, 4);
	assert_int_equal(s[3].maxhi, 0x410);
	assert_int_equal(sym__span_find(s, 4, 0x130)->idx, 2);
	assert_int_equal(sym__span_find(s, 4, 0x150)->idx, 1); /* back over a closed span */
	assert_int_equal(sym__span_find(s, 4, 0x23f)->idx, 3);
	assert_int_equal(sym__span_find(s, 4, 0x2ff)->idx, 1);
	assert_null(sym__span_find(s, 4, 0x300));
	assert_null(sym__span_find(s, 4, 0xff));
	assert_null(sym__span_find(s, 4, 0x410));
	assert_null(sym__span_find(s, 0, 0x130));
}

static void test_ptrmap(void **state)
{
	static char keys[5000];
	struct sym__ptrmap m;
	int one, two;
	(void)state;

	sym__ptrmap_init(&m, NULL);
	assert_null(sym__ptrmap_get(&m, &one));
	assert_int_equal(sym__ptrmap_put(&m, &one, &two), 0);
	assert_ptr_equal(sym__ptrmap_get(&m, &one), &two);
	assert_int_equal(sym__ptrmap_put(&m, &one, &one), 0); /* a second put replaces */
	assert_ptr_equal(sym__ptrmap_get(&m, &one), &one);
	assert_int_equal(m.n, 1);
	assert_null(sym__ptrmap_get(&m, &two));
	/* Neighbouring addresses, as strings of one section are: many growths. */
	for (size_t i = 0; i < sizeof(keys); i++)
		assert_int_equal(sym__ptrmap_put(&m, &keys[i], &keys[sizeof(keys) - 1 - i]), 0);
	for (size_t i = 0; i < sizeof(keys); i++)
		assert_ptr_equal(sym__ptrmap_get(&m, &keys[i]), &keys[sizeof(keys) - 1 - i]);
	assert_ptr_equal(sym__ptrmap_get(&m, &one), &one);
	assert_int_equal(m.n, sizeof(keys) + 1);
	sym__ptrmap_release(&m);
	assert_null(sym__ptrmap_get(&m, &one));
	sym__ptrmap_release(&m);
}

static void test_ptrmap_budget(void **state)
{
	static char keys[1000];
	struct grow_budget b;
	struct sym__ptrmap m;
	size_t i;
	int rc = 0;
	(void)state;

	grow_budget_init(&b, 4096);
	sym__ptrmap_init(&m, &b.alloc);
	for (i = 0; i < sizeof(keys) && !(rc = sym__ptrmap_put(&m, &keys[i], &keys[i])); i++)
		;
	assert_int_equal(rc, ERR_TOO_LARGE);
	assert_true(b.used <= b.cap);
	/* The refused put changed nothing; everything before it is there. */
	assert_int_equal(m.n, i);
	assert_null(sym__ptrmap_get(&m, &keys[i]));
	for (size_t j = 0; j < i; j++)
		assert_ptr_equal(sym__ptrmap_get(&m, &keys[j]), &keys[j]);
	sym__ptrmap_release(&m);
	assert_int_equal(b.used, 0);
}

static void test_intern(void **state)
{
	struct intern t;
	const char *a, *b, *c;
	char buf[16];
	(void)state;

	intern_init(&t, 100, 1 << 20, NULL);
	a = sym__intern(&t, "main", 4);
	memcpy(buf, "main", 5);
	b = sym__intern(&t, buf, 4);
	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_ptr_not_equal(b, buf);
	/* Interned strings are C strings: an embedded NUL ends the content. */
	c = sym__intern(&t, "main\0tail", 9);
	assert_ptr_equal(c, a);
	assert_string_equal(sym__intern(&t, "", 0), "");
	assert_ptr_equal(sym__intern(&t, "\0x", 2), sym__intern(&t, "", 0));
	assert_int_equal(intern_count(&t), 2);
	intern_release(&t);
}

static void test_intern_budget(void **state)
{
	struct grow_budget bud;
	struct intern t;
	char s[32];
	const char *first = NULL, *p = NULL;
	int i;
	(void)state;

	grow_budget_init(&bud, 100000);
	intern_init(&t, HMAP_MAX, bud.cap, &bud.alloc);
	for (i = 0; i < 100000; i++) {
		int n = snprintf(s, sizeof(s), "function_%d", i);
		if (!(p = sym__intern(&t, s, (size_t)n)))
			break;
		if (!first)
			first = p;
	}
	assert_null(p);
	assert_true(i > 100);
	assert_true(bud.used <= bud.cap);
	assert_ptr_equal(sym__intern(&t, "function_0", 10), first);
	intern_release(&t);
	assert_int_equal(bud.used, 0);
}

static void test_demangle(void **state)
{
	struct intern t;
	const char *d;
	(void)state;

	intern_init(&t, 100, 1 << 20, NULL);
	d = sym__demangle(&t, "_ZN3foo3barEi");
	assert_string_equal(d, "foo::bar(int)");
	assert_ptr_equal(sym__intern(&t, "foo::bar(int)", 13), d);
	assert_string_equal(sym__demangle(&t, "main"), "main");
	assert_string_equal(sym__demangle(&t, "_Znot_mangled"), "_Znot_mangled");
	assert_int_equal(intern_count(&t), 3);
	intern_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_ptrmap),
		cmocka_unit_test(test_ptrmap_budget),
		cmocka_unit_test(test_intern),
		cmocka_unit_test(test_intern_budget),
		cmocka_unit_test(test_demangle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
