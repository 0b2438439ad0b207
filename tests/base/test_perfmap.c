/* test_perfmap.c - the perf map reader, its stored form and the
 * perf-PID.map name (base/perfmap.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/perfmap.h"

static const char node_map[] =
	"7f8a3a7c5b80 2b0 JS:*hotJit [eval]:1:16\n"
	"24fc2ddce30e 23 JS:~hotJit [eval]:1:16\n"
	"7f8a3a7c5900 11c JS:^hotJit [eval]:1:16\n"
	"7f8a3a7c5b80 40 JS:*newer at the same start\n"
	"18c4000 300 Builtin:DeoptimizationEntry_Eager\n";

static const char *name_at(const struct perfmap *m, uint64_t addr)
{
	const struct perfmap_entry *e = perfmap_find(m, addr);

	return e ? perfmap_name(m, e) : NULL;
}

static void check_lookups(const struct perfmap *m)
{
	assert_int_equal(m->n, 4);
	assert_string_equal(name_at(m, 0x18c4000), "Builtin:DeoptimizationEntry_Eager");
	assert_string_equal(name_at(m, 0x18c42ff), "Builtin:DeoptimizationEntry_Eager");
	assert_null(name_at(m, 0x18c4300));
	assert_null(name_at(m, 0x18c3fff));
	assert_null(name_at(m, 0));
	assert_string_equal(name_at(m, 0x24fc2ddce30e + 0x22), "JS:~hotJit [eval]:1:16");
	assert_string_equal(name_at(m, 0x7f8a3a7c5900), "JS:^hotJit [eval]:1:16");
	/* The later line of one start wins, with its own size. */
	assert_string_equal(name_at(m, 0x7f8a3a7c5b80 + 0x3f), "JS:*newer at the same start");
	assert_null(name_at(m, 0x7f8a3a7c5b80 + 0x40));
	assert_null(name_at(m, UINT64_MAX));
}

static void test_parse_and_find(void **state)
{
	struct perfmap m;
	struct err_msg msg = { 0 };
	(void)state;

	assert_int_equal(perfmap_parse(node_map, strlen(node_map), &m, &msg), 0);
	check_lookups(&m);
	perfmap_release(&m);
	/* Upper-case hex and a 16-digit address reaching the top are fine. */
	assert_int_equal(perfmap_parse("FFFFFFFFFFFFFFE0 10 top\n", 24, &m, &msg), 0);
	assert_string_equal(name_at(&m, UINT64_MAX - 0x10), "top");
	assert_null(name_at(&m, UINT64_MAX - 0xf));
	perfmap_release(&m);
}

static void test_refused(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "", "empty perf map" },
		{ "10 20 f\n30 40 g", "line 2: cut short" },
		{ "10 20 f\n30 4", "line 2: cut short" },
		{ "10 20\n", "line 1: not \"START SIZE name\"" },
		{ "10 20 \n", "line 1: no name" },
		{ "0x10 20 f\n", "line 1: not \"START SIZE name\"" },
		{ "10  20 f\n", "line 1: not \"START SIZE name\"" },
		{ " 10 20 f\n", "line 1: not \"START SIZE name\"" },
		{ "\n", "line 1: not \"START SIZE name\"" },
		{ "g0 20 f\n", "line 1: not \"START SIZE name\"" },
		{ "10000000000000000 1 f\n", "line 1: not \"START SIZE name\"" },
		{ "ffffffffffffffff 2 f\n", "line 1: START + SIZE overflows" },
		{ "10 20 a\tb\n", "line 1: control character" },
		{ "10 20 ab\r\n", "line 1: control character" },
		{ "1 1 a\n2 1 b\n3 1 c\x01\n", "line 3: control character" },
	};
	struct perfmap m;
	struct err_msg msg;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&msg, 0, sizeof(msg));
		assert_int_equal(perfmap_parse(bad[i].text, strlen(bad[i].text), &m, &msg),
				 ERR_INVALID);
		if (!strstr(msg.text, bad[i].why))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, msg.text, bad[i].why);
	}
	/* A NUL inside a name is a control character too. */
	assert_int_equal(perfmap_parse("10 20 a\0b\n", 10, &m, &msg), ERR_INVALID);
}

static void test_caps(void **state)
{
	size_t n = PERFMAP_MAX_ENTRIES + 1, len = 2 * n;
	char *text = malloc(PERFMAP_MAX_BYTES + 1), name[PERFMAP_MAX_NAME + 32];
	struct perfmap m;
	struct err_msg msg = { 0 };
	(void)state;

	assert_non_null(text);
	for (size_t i = 0; i < n; i++)
		memcpy(text + 2 * i, "x\n", 2);
	assert_int_equal(perfmap_parse(text, len, &m, &msg), ERR_TOO_LARGE);
	memset(text, 'a', PERFMAP_MAX_BYTES + 1);
	assert_int_equal(perfmap_parse(text, PERFMAP_MAX_BYTES + 1, &m, &msg), ERR_TOO_LARGE);
	free(text);
	memcpy(name, "1 1 ", 4);
	memset(name + 4, 'n', PERFMAP_MAX_NAME);
	name[4 + PERFMAP_MAX_NAME] = '\n';
	assert_int_equal(perfmap_parse(name, 5 + PERFMAP_MAX_NAME, &m, &msg), 0);
	perfmap_release(&m);
	memset(name + 4, 'n', PERFMAP_MAX_NAME + 1);
	name[5 + PERFMAP_MAX_NAME] = '\n';
	memset(&msg, 0, sizeof(msg));
	assert_int_equal(perfmap_parse(name, 6 + PERFMAP_MAX_NAME, &m, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "longer than"));
}

static void test_encode_decode(void **state)
{
	struct perfmap m, d;
	struct err_msg msg = { 0 };
	struct buf b;
	int64_t ns = 0;
	(void)state;

	buf_init(&b, 1 << 20);
	assert_int_equal(perfmap_parse(node_map, strlen(node_map), &m, &msg), 0);
	assert_int_equal(perfmap_encode(&m, 1234567, &b), 0);
	assert_int_equal(perfmap_decode(b.data, b.len, &d, &ns, &msg), 0);
	assert_int_equal(ns, 1234567);
	check_lookups(&d);
	perfmap_release(&d);
	/* Every cut of the record is refused, never read past. */
	for (size_t cut = 0; cut < b.len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);

		memcpy(copy, b.data, cut);
		assert_int_equal(perfmap_decode(copy, cut, &d, &ns, &msg), ERR_CORRUPT);
		free(copy);
	}
	/* Out of order entries are refused. */
	perfmap_release(&m);
	assert_int_equal(perfmap_parse("2 1 b\n1 1 a\n", 12, &m, &msg), 0);
	m.e[0].start = 5;
	buf_reset(&b);
	assert_int_equal(perfmap_encode(&m, 0, &b), 0);
	assert_int_equal(perfmap_decode(b.data, b.len, &d, &ns, &msg), ERR_CORRUPT);
	perfmap_release(&m);
	buf_release(&b);
}

static void test_pid_of(void **state)
{
	uint32_t pid = 0;
	(void)state;

	assert_true(perfmap_pid_of("/tmp/perf-25668.map", &pid));
	assert_int_equal(pid, 25668);
	assert_true(perfmap_pid_of("perf-1.map", &pid));
	assert_int_equal(pid, 1);
	assert_true(perfmap_pid_of("/x/perf-2147483647.map", &pid));
	assert_int_equal(pid, 2147483647);
	assert_false(perfmap_pid_of("/x/perf-2147483648.map", &pid));
	assert_false(perfmap_pid_of("/x/perf-12345678901.map", &pid));
	assert_false(perfmap_pid_of("/tmp/perf-0.map", &pid));
	assert_false(perfmap_pid_of("/tmp/perf-012.map", &pid));
	assert_false(perfmap_pid_of("/tmp/perf-.map", &pid));
	assert_false(perfmap_pid_of("/tmp/perf-12.map.bak", &pid));
	assert_false(perfmap_pid_of("/tmp/perf-12x.map", &pid));
	assert_false(perfmap_pid_of("//anon", &pid));
	assert_false(perfmap_pid_of("", &pid));
	assert_false(perfmap_pid_of(NULL, &pid));
	assert_true(perfmap_jit_mapping("/tmp/perf-7.map", "", &pid));
	assert_int_equal(pid, 7);
	assert_true(perfmap_jit_mapping("/tmp/perf-8.map", NULL, &pid));
	assert_false(perfmap_jit_mapping("/tmp/perf-9.map", "ab12", &pid));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_find), cmocka_unit_test(test_refused),
		cmocka_unit_test(test_caps),           cmocka_unit_test(test_encode_decode),
		cmocka_unit_test(test_pid_of),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
