/* test_selector.c - selector parsing and label matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/err.h"
#include "query/query.h"
#include "query/query_int.h"
#include "storage/storage.h"

static int parse(const char *s, struct query_selector *sel, struct err_msg *msg)
{
	err_clear(msg);
	return query_selector_parse(s, strlen(s), sel, msg);
}

static void test_valid(void **state)
{
	struct query_selector sel;
	struct err_msg msg;
	const char *s = "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"api\", "
			"env=~\"prod|staging\", version!=\"1.2\", x!~'a.*', q=\"a\\\"b\\\\c\\u00e9\",}";

	(void)state;
	assert_int_equal(parse(s, &sel, &msg), 0);
	assert_int_equal(query_selector_compile(&sel, &msg), 0);
	assert_string_equal(sel.profile_type, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	assert_int_equal(sel.n, 5);
	assert_string_equal(sel.m[0].name, "service_name");
	assert_int_equal(sel.m[0].op, QUERY_EQ);
	assert_int_equal(sel.m[1].op, QUERY_RE);
	assert_int_equal(sel.m[2].op, QUERY_NEQ);
	assert_int_equal(sel.m[3].op, QUERY_NRE);
	assert_string_equal(sel.m[4].value, "a\"b\\c\xc3\xa9");
	{
		struct store_label l[] = { { "__profile_type__", "process_cpu:cpu:nanoseconds:cpu:nanoseconds" },
					   { "env", "staging" }, { "q", "a\"b\\c\xc3\xa9" },
					   { "service_name", "api" }, { "version", "1.3" }, { "x", "b" } };
		assert_true(query_selector_matches(&sel, l, 6, &msg));
		l[1].value = "prod2"; /* anchored: prod2 is not prod */
		assert_false(query_selector_matches(&sel, l, 6, &msg));
		l[1].value = "prod";
		l[4].value = "1.2";
		assert_false(query_selector_matches(&sel, l, 6, &msg));
		l[4].value = "1.3";
		l[5].value = "abc";
		assert_false(query_selector_matches(&sel, l, 6, &msg));
		l[5].value = "b";
		l[0].value = "memory:a:b:c:d";
		assert_false(query_selector_matches(&sel, l, 6, &msg));
	}
	query_selector_release(&sel);

	assert_int_equal(parse("  {}  ", &sel, &msg), 0);
	assert_null(sel.profile_type);
	assert_int_equal(sel.n, 0);
	query_selector_release(&sel);
	assert_int_equal(parse("a:b:c:d:e", &sel, &msg), 0);
	assert_int_equal(sel.n, 0);
	query_selector_release(&sel);
	assert_int_equal(query_selector_parse2("a:b:c:d:e", "{x=`raw\\n`}", &sel, &msg), 0);
	assert_string_equal(sel.profile_type, "a:b:c:d:e");
	assert_string_equal(sel.m[0].value, "raw\\n");
	query_selector_release(&sel);
	assert_int_equal(query_selector_parse2("a:b:c:d:e", "f:g:h:i:j{}", &sel, &msg), ERR_INVALID);
	/* Empty parts, as stored for pprofs without a period type (Pyroscope's IDs). */
	assert_int_equal(parse("memory:inuse_space:bytes::{a=\"b\"}", &sel, &msg), 0);
	assert_string_equal(sel.profile_type, "memory:inuse_space:bytes::");
	assert_int_equal(sel.n, 1);
	query_selector_release(&sel);
	assert_int_equal(query_selector_parse2("process_cpu:cpu:nanoseconds::nanoseconds", "{}", &sel,
						&msg), 0);
	assert_string_equal(sel.profile_type, "process_cpu:cpu:nanoseconds::nanoseconds");
	query_selector_release(&sel);
}

static void expect_invalid(const char *s, const char *needle)
{
	struct query_selector sel;
	struct err_msg msg;
	int rc = parse(s, &sel, &msg);

	if (rc != ERR_INVALID || !strstr(msg.text, needle))
		fail_msg("%s: rc %d msg \"%s\", want \"%s\"", s, rc, msg.text, needle);
}

static void test_invalid(void **state)
{
	char big[QUERY_MAX_SELECTOR_BYTES + 10];
	struct query_selector sel;
	struct err_msg msg;

	(void)state;
	expect_invalid("{a=\"x\"", "expected ',' or '}'");
	expect_invalid("{a=x}", "expected a quoted value");
	expect_invalid("{a==\"x\"}", "expected a quoted value");
	expect_invalid("{a<\"x\"}", "expected '='");
	expect_invalid("{1a=\"x\"}", "expected a label name");
	expect_invalid("{a=\"x}", "unterminated");
	expect_invalid("{a=\"\\q\"}", "unknown escape");
	expect_invalid("cpu{}", "profile type");
	expect_invalid("a:b:c:d{}", "profile type");
	expect_invalid("a:b:c:d:e:f{}", "profile type");
	expect_invalid("a:b:c::d:{}", "profile type");
	expect_invalid("{a=\"x\"} junk", "unexpected character");
	expect_invalid("{a=\"x\" b=\"y\"}", "offset 7");
	expect_invalid("{a=\"\\u0000\"}", "NUL");
	memset(big, ' ', sizeof(big));
	assert_int_equal(query_selector_parse(big, sizeof(big), &sel, &msg), ERR_TOO_LARGE);
	{
		char many[4000];
		size_t n = 0;

		n += (size_t)snprintf(many + n, sizeof(many) - n, "{");
		for (int i = 0; i < QUERY_MAX_MATCHERS + 1; i++)
			n += (size_t)snprintf(many + n, sizeof(many) - n, "a%d=\"\",", i);
		snprintf(many + n, sizeof(many) - n, "}");
		assert_int_equal(parse(many, &sel, &msg), ERR_TOO_LARGE);
	}
}

/* Parses and compiles `s`; the code of the first failure. */
static int compile(const char *s, struct query_selector *sel, struct err_msg *msg)
{
	int rc = parse(s, sel, msg);

	if (rc)
		return rc;
	rc = query_selector_compile(sel, msg);
	if (rc)
		query_selector_release(sel);
	return rc;
}

/*
 * Regexes are PCRE2 with every resource bounded: bad ones, those whose
 * compiled code would be too large (a repeat count copies its group),
 * back-references and patterns past QUERY_MAX_REGEX_BYTES are refused with
 * a message naming the label; ordinary ones compile.  Parsing alone does
 * not compile.
 */
static void test_regex_limits(void **state)
{
	static const char *const ok[] = {
		"{a=~\"prod|staging\"}", "{a=~\"[a-z]+\"}", "{a=~\"(foo|bar)+x?\"}",
		"{a=~\"x{1000}\"}", "{a=~\"(ab{10}){100}\"}", "{a=~\"[]a]+\"}",
		"{a=~\"[[:alpha:]]+\"}", "{a=~\".*.*.*\"}", "{a=~\"\\\\d+\"}", "{a=~\"(a+)+\"}",
		"{a=~\"([0-9]+\\\\.){3}[0-9]+\"}", "{a=~\"((a*)*)*\"}", "{a=~\"(a*){1000}\"}",
		"{a=~\"a{2,}b{0,3}\"}", "{a=~\"[+*?{]\"}", "{a=~\"\\\\+\\\\+\"}", "{a=~\"x++\"}",
		"{a=~\"\xc3\xa9t\xc3\xa9\"}",
	};
	static const struct {
		const char *sel;
		int rc;
		const char *why;
	} bad[] = {
		{ "{a=~\"(\"}", ERR_INVALID, "bad regex at offset 1" },
		{ "{a=~\"x{2,1}\"}", ERR_INVALID, "bad regex" },
		{ "{a=~\"(((a{0,32767}){0,32767}){0,32767})\"}", ERR_INVALID, "too large" },
		{ "{a=~\"((a{1000}){1000}){1000}\"}", ERR_INVALID, "too large" },
		{ "{a=~\"(a)\\\\1\"}", ERR_INVALID, "non-existent" },
		{ "{a=~\"(a*)*\\\\2\\\\2\\\\2b\"}", ERR_INVALID, "non-existent" },
		{ "{a=~\"(?<x>a)\\\\k<x>\"}", ERR_INVALID, "back-references" },
		{ "{a=~\"(?P<x>a)(?P=x)\"}", ERR_INVALID, "back-references" },
		/* The value stays inside the anchors: no ')' escapes them. */
		{ "{a=~\"a)|(b\"}", ERR_INVALID, "bad regex" },
	};
	struct query_selector sel;
	struct err_msg msg;
	char deep[600], big[QUERY_MAX_REGEX_BYTES + 16];

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (compile(ok[i], &sel, &msg))
			fail_msg("%s: %s", ok[i], msg.text);
		query_selector_release(&sel);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* Parsed without compiling: the compile is what fails. */
		assert_int_equal(parse(bad[i].sel, &sel, &msg), 0);
		assert_false(sel.compiled);
		query_selector_release(&sel);
		int rc = compile(bad[i].sel, &sel, &msg);

		if (rc != bad[i].rc || !strstr(msg.text, bad[i].why))
			fail_msg("%s: %d %s", bad[i].sel, rc, msg.text);
		assert_non_null(strstr(msg.text, "label a: "));
	}
	memset(deep, '(', sizeof(deep));
	memcpy(deep, "{a=~\"", 5);
	memcpy(deep + sizeof(deep) - 3, "\"}", 3);
	assert_int_equal(compile(deep, &sel, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "parentheses"));
	memset(big, 'a', sizeof(big));
	memcpy(big, "{a=~\"", 5);
	memcpy(big + sizeof(big) - 3, "\"}", 3);
	assert_int_equal(parse(big, &sel, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "regex of"));
	assert_int_equal(parse("{a=~\"\\xff\"}", &sel, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "not UTF-8"));
	/* An equality matcher is not a regex: no limit applies. */
	assert_int_equal(compile("{a=\"x++{9999}\\\\1(\"}", &sel, &msg), 0);
	query_selector_release(&sel);
}

/*
 * Matching is anchored at both ends and bounded: a value that would need
 * exponential backtracking fails the match with a message, never hangs and
 * never silently does not match.
 */
static void test_regex_match(void **state)
{
	struct query_selector sel;
	struct err_msg msg;
	char a200[201], a30[64];
	struct store_label l[] = { { "a", "" } };

	(void)state;
	assert_int_equal(compile("{a=~\"b|c.*\"}", &sel, &msg), 0);
	l[0].value = "b";
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 1);
	l[0].value = "cx\ny"; /* '.' matches a newline, as Prometheus's (?s) */
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 1);
	l[0].value = "ab";
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 0);
	l[0].value = "bb";
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 0);
	l[0].value = "b\xff"; /* invalid UTF-8 in a stored value: no match, no error */
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 0);
	l[0].value = "\xff";
	query_selector_release(&sel);
	assert_int_equal(compile("{a!~\"b\"}", &sel, &msg), 0);
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 1);
	query_selector_release(&sel);

	assert_int_equal(compile("{a!~\"x.*\"}", &sel, &msg), 0);
	l[0].value = "xyz";
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 0);
	l[0].value = "yxz";
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 1);
	query_selector_release(&sel);

	memset(a200, 'a', 200);
	a200[200] = '\0';
	memset(a30, 'a', 30);
	a30[30] = '\0';
	assert_int_equal(compile("{a=~\"(?:a|aa)*[bc]\"}", &sel, &msg), 0);
	l[0].value = a200;
	err_clear(&msg);
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "label a: regex needs more than"));
	l[0].value = "aab";
	assert_int_equal(query_selector_matches(&sel, l, 1, &msg), 1);
	query_selector_release(&sel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_regex_limits),
		cmocka_unit_test(test_regex_match),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
