/*
 * test_kallsyms.c - kernel symbol maps (symbolize/kallsyms.c): the strict
 * line parser on good, truncated and corrupt maps, and the index written
 * from a map, looked up at offsets from _text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "symbolize/symbolize.h"

/* A /proc/kallsyms excerpt as root reads it, with KASLR's slide. */
static const char MAP[] =
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffff9a000000 T _stext\n"
	"ffffffff9a000000 T _text\n"
	"ffffffff9a000000 t __pfx_startup_64\n"
	"ffffffff9a000010 T startup_64\n"
	"ffffffff9a000100 W weak_fn\n"
	"ffffffff9a000100 t __local_alias\n"
	"ffffffff9a000200 T do_syscall_64\n"
	"ffffffff9a000300 T _etext\n"
	"ffffffff9a000300 D some_data\n"
	"ffffffff9a001000 d more_data\n"
	"ffffffffc0100000 t ext4_find_entry\t[ext4]\n"
	"ffffffffc0100080 t ext4_lookup\t[ext4]";

static const uint8_t BID[20] = { 0x4a, 0x5a, 0x9b, 0x0a };

static const char *check_msg(const char *map, int want)
{
	static struct err_msg msg;

	err_clear(&msg);
	assert_int_equal(sym_kallsyms_check(map, strlen(map), NULL, &msg), want);
	return msg.text;
}

static void test_check(void **state)
{
	size_t n = 0;
	struct err_msg msg;
	(void)state;

	err_clear(&msg);
	assert_int_equal(sym_kallsyms_check(MAP, strlen(MAP), &n, &msg), 0);
	assert_int_equal(n, 10);
	/* A System.map has no module column and ends with a newline. */
	check_msg("ffffffff81000000 T _text\nffffffff81000040 T f\n", 0);
	assert_non_null(strstr(check_msg("", ERR_INVALID), "empty"));
	assert_non_null(strstr(check_msg("ffffffff81000040 T f\n", ERR_INVALID), "no _text"));
	assert_non_null(strstr(check_msg("0000000000000000 T _text\n0000000000000000 T f\n",
					 ERR_INVALID), "kptr_restrict"));
	assert_non_null(strstr(check_msg("ffffffff81000000 D _text\n", ERR_INVALID),
			       "no function symbol"));
}

static void test_corrupt(void **state)
{
	static const char *const bad[] = {
		"ffffffff81000000 T _text\n\n",                 /* empty line */
		"ffffffff81000000 T _text\nffffffff8100004",    /* cut in the address */
		"ffffffff81000000 T _text\nffffffff81000040 T", /* cut after the type */
		"ffffffff81000000 T _text\nffffffff81000040 T ",
		"ffffffff81000000 T _text\nffffffff81000040 T f\t[ext4", /* module cut */
		"ffffffff81000000 T _text\nffffffff81000040 T f\t[]",
		"ffffffff81000000 T _text\nffffffff81000040 T f extra",
		"ffffffff81000000 T _text\nffffffff81000040 TT f",
		"ffffffff81000000 T _text\nffffffff81000040 1 f",
		"ffffffff81000000 T _text\nxfffffff81000040 T f",
		"ffffffff81000000 T _text\n11ffffffff81000040 T f", /* 18 digits */
		"ffffffff81000000 T _text\nffffffff81000040 T f\x01g",
		"ffffffff81000000 T _text\nffffffff81000040 T f\t[a]b]",
	};
	char big[SYM_KALLSYMS_MAX_NAME + 64];
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *m = check_msg(bad[i], ERR_INVALID);

		assert_non_null(strstr(m, "line 2"));
	}
	assert_non_null(strstr(check_msg("ffffffff81000000 T _text\r\n", ERR_INVALID), "line 1"));
	assert_non_null(strstr(check_msg("ffffffff81000000 T _text\nfoo\n", ERR_INVALID),
			       "line 2"));
	snprintf(big, sizeof(big), "ffffffff81000000 T _text\nffffffff81000040 T ");
	memset(big + strlen(big), 'a', SYM_KALLSYMS_MAX_NAME + 1);
	big[sizeof(big) - 1] = 0;
	assert_non_null(strstr(check_msg(big, ERR_INVALID), "1 to 512"));
	/* Every proper prefix of the map either parses or names its last line. */
	for (size_t len = 0; len < strlen(MAP); len++) {
		struct err_msg msg;
		int rc;

		err_clear(&msg);
		rc = sym_kallsyms_check(MAP, len, NULL, &msg);
		assert_true(rc == 0 || rc == ERR_INVALID);
		if (rc)
			assert_true(msg.text[0] != 0);
	}
}

static const char *name_at(const struct sym_index *x, uint64_t off)
{
	struct sym_frame f[4];
	size_t n = 0;

	assert_int_equal(sym_index_lookup(x, off, f, 4, &n), 0);
	if (!n)
		return NULL;
	assert_int_equal(n, 1);
	assert_int_equal(f[0].flags, SYM_FRAME_SYMTAB);
	return f[0].function;
}

static void test_index(void **state)
{
	struct sym_index_stats st;
	struct sym_index *x = NULL;
	struct err_msg msg;
	struct buf b;
	const uint8_t *id;
	size_t idlen;
	(void)state;

	buf_init(&b, 1u << 20);
	err_clear(&msg);
	assert_int_equal(sym_kallsyms_index_buf(MAP, strlen(MAP), BID, sizeof(BID), &b, &st, &msg),
			 0);
	assert_int_equal(sym_index_open_mem(b.data, b.len, BID, sizeof(BID), &x, &msg), 0);
	id = sym_index_build_id(x, &idlen);
	assert_int_equal(idlen, sizeof(BID));
	assert_memory_equal(id, BID, sizeof(BID));
	/* Offsets from _text; at a shared address the last function listed wins. */
	assert_string_equal(name_at(x, 0x0), "__pfx_startup_64");
	assert_string_equal(name_at(x, 0xf), "__pfx_startup_64");
	assert_string_equal(name_at(x, 0x10), "startup_64");
	assert_string_equal(name_at(x, 0x100), "__local_alias");
	assert_string_equal(name_at(x, 0x1ff), "__local_alias");
	assert_string_equal(name_at(x, 0x234), "do_syscall_64");
	assert_string_equal(name_at(x, 0x300), "_etext");
	assert_null(name_at(x, 0x1000)); /* data ends the text before it */
	assert_null(name_at(x, 0x2000));
	assert_string_equal(name_at(x, 0x26100010), "ext4_find_entry [ext4]");
	assert_string_equal(name_at(x, 0x26100090), "ext4_lookup [ext4]");
	assert_null(name_at(x, 0x26100080 + 4096)); /* the last function ends */
	assert_null(name_at(x, UINT64_C(0xffffffff00000000)));
	sym_index_close(x);
	buf_release(&b);
}

static void test_ranking(void **state)
{
	static const char map[] = "ffffffff81000000 T _text\n"
				  "ffffffff81000100 t __x\n"
				  "ffffffff81000100 W x_weak_global\n"
				  "ffffffff81000100 T _longer\n"
				  "ffffffff81000100 T _y\n"
				  "ffffffff81000200 t a\n"
				  "ffffffff81000200 t bb\n"
				  "ffffffff81000200 d data_after\n";
	struct sym_index *x = NULL;
	struct err_msg msg;
	struct buf b;
	(void)state;

	buf_init(&b, 1u << 20);
	err_clear(&msg);
	assert_int_equal(sym_kallsyms_index_buf(map, strlen(map), BID, 20, &b, NULL, &msg), 0);
	assert_int_equal(sym_index_open_mem(b.data, b.len, BID, 20, &x, &msg), 0);
	assert_string_equal(name_at(x, 0x100), "_y");
	assert_string_equal(name_at(x, 0x200), "bb");
	sym_index_close(x);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_ranking),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
