/*
 * test_elf.c - ELF inspection of real and damaged files: build IDs,
 * segments, split debug files, DWZ alt links, status reasons, and the
 * file-offset to virtual-address mapping of profiles.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <elf.h>

#include "base/err.h"
#include "fixtures.h"
#include "symbolize/symbolize.h"
#include "symtest.h"

#define ID_HEX "00112233445566778899aabbccddeeff00112233"

static void build(void)
{
	static int done;
	if (done)
		return;
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	assert_int_equal(t_run("cd '%s' && gcc -g -O2 -Wl,--build-id=0x" ID_HEX " -o p prog.c && "
			       "cp p p.full && objcopy --only-keep-debug p p.debug && "
			       "strip --strip-all p && objcopy --add-gnu-debuglink=p.debug p && "
			       "gcc -O2 -Wl,--build-id=none -o noid prog.c", t_dir), 0);
	done = 1;
}

static uint64_t cmd_hex(const char *fmt, const char *arg)
{
	char cmd[1024], line[256];
	snprintf(cmd, sizeof(cmd), fmt, arg);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(line, sizeof(line), p));
	pclose(p);
	return strtoull(line, NULL, 16);
}

static void test_full_binary(void **state)
{
	struct sym_elf_info i;
	struct err_msg msg = { "" };
	uint8_t want[SYM_BUILD_ID_MAX];
	size_t want_len;
	enum sym_reason r;
	char hex[2 * SYM_BUILD_ID_MAX + 1];
	(void)state;

	build();
	assert_int_equal(sym_elf_inspect_file(t_path("p.full"), &i, &msg), 0);
	assert_int_equal(sym_build_id_parse(ID_HEX, want, &want_len), 0);
	assert_int_equal(i.build_id_len, 20);
	assert_memory_equal(i.build_id, want, 20);
	sym_build_id_hex(i.build_id, i.build_id_len, hex);
	assert_string_equal(hex, ID_HEX);
	assert_int_equal(i.elf_class, 64);
	assert_int_equal(i.elf_type, ET_DYN);
	assert_true(i.flags & SYM_HAS_DEBUG_INFO);
	assert_true(i.flags & SYM_HAS_SYMTAB);
	assert_true(i.flags & SYM_HAS_TEXT);
	assert_false(i.flags & SYM_SEGMENTS_FROM_DEBUG);
	uint64_t loads = cmd_hex("readelf -lW '%s' | grep -c ' LOAD '", t_path("p.full"));
	assert_int_equal(i.n_segments, loads);
	assert_int_equal(sym_elf_check(&i, want, want_len, 1, &r, &msg), 0);
	assert_int_equal(r, SYM_REASON_OK);
	want[19] ^= 1;
	assert_int_equal(sym_elf_check(&i, want, want_len, 1, &r, &msg), ERR_INVALID);
	assert_int_equal(r, SYM_REASON_BUILD_ID_MISMATCH);
	assert_string_equal(sym_reason_str(r), "build_id_mismatch");
	assert_non_null(strstr(msg.text, "build_id_mismatch"));

	/* Same bytes through the in-memory path. */
	FILE *f = fopen(t_path("p.full"), "rb");
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	char *data = malloc((size_t)len);
	assert_int_equal(fread(data, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	struct sym_elf_info j;
	assert_int_equal(sym_elf_inspect(data, (size_t)len, &j, &msg), 0);
	assert_memory_equal(&i, &j, sizeof(i));
	free(data);
}

static void test_split_files(void **state)
{
	struct sym_elf_info d, s;
	struct err_msg msg = { "" };
	enum sym_reason r;
	uint64_t v;
	(void)state;

	build();
	assert_int_equal(sym_elf_inspect_file(t_path("p.debug"), &d, &msg), 0);
	assert_true(d.flags & SYM_HAS_DEBUG_INFO);
	assert_false(d.flags & SYM_HAS_TEXT);
	assert_true(d.flags & SYM_SEGMENTS_FROM_DEBUG);
	assert_int_equal(sym_addr_to_vaddr(&d, 0x1100, 0, &v), ERR_INVALID);

	assert_int_equal(sym_elf_inspect_file(t_path("p"), &s, &msg), 0);
	assert_memory_equal(s.build_id, d.build_id, 20);
	assert_false(s.flags & SYM_HAS_DEBUG_INFO);
	assert_false(s.flags & SYM_HAS_SYMTAB);
	assert_true(s.flags & SYM_HAS_DEBUGLINK);
	/* The stripped executable served as "debuginfo" must be refused. */
	assert_int_equal(sym_elf_check(&s, s.build_id, s.build_id_len, 1, &r, &msg), ERR_INVALID);
	assert_int_equal(r, SYM_REASON_NO_SYMBOLS);
	assert_non_null(strstr(msg.text, "no_symbols"));

	struct sym_elf_info n;
	memset(&msg, 0, sizeof(msg));
	assert_int_equal(sym_elf_inspect_file(t_path("noid"), &n, &msg), 0);
	assert_int_equal(n.build_id_len, 0);
	assert_int_equal(sym_elf_check(&n, s.build_id, 20, 0, &r, &msg), ERR_INVALID);
	assert_int_equal(r, SYM_REASON_NO_BUILD_ID);
	memset(&msg, 0, sizeof(msg));
	assert_int_equal(sym_elf_check(&n, NULL, 0, 1, &r, &msg), ERR_INVALID);
	assert_int_equal(r, SYM_REASON_NO_DEBUG_INFO);
}

static void test_file_offset_mapping(void **state)
{
	struct sym_elf_info i;
	struct err_msg msg = { "" };
	uint64_t v;
	(void)state;

	build();
	assert_int_equal(sym_elf_inspect_file(t_path("p"), &i, &msg), 0);
	uint64_t work = cmd_hex("nm '%s' | awk '$3==\"work\"{print $1}'", t_path("p.full"));
	uint64_t sh_addr = cmd_hex("readelf -SW '%s' | awk '{for(i=1;i<NF;i++) "
				   "if($i==\".text\") print $(i+2)}'", t_path("p"));
	uint64_t sh_off = cmd_hex("readelf -SW '%s' | awk '{for(i=1;i<NF;i++) "
				  "if($i==\".text\") print $(i+3)}'", t_path("p"));
	uint64_t off = work - sh_addr + sh_off;
	assert_int_equal(sym_addr_to_vaddr(&i, off, 0, &v), 0);
	assert_int_equal(v, work);
	assert_int_equal(sym_addr_to_vaddr(&i, off + 5, SYM_ADDR_RETURN, &v), 0);
	assert_int_equal(v, work + 4);
	assert_int_equal(sym_addr_to_vaddr(&i, 1ull << 40, 0, &v), ERR_NOT_FOUND);

	/* A non-PIE executable: vaddr = offset + 0x400000. */
	assert_int_equal(t_run("cd '%s' && gcc -O1 -no-pie -o nopie prog.c", t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("nopie"), &i, &msg), 0);
	assert_int_equal(i.elf_type, ET_EXEC);
	work = cmd_hex("nm '%s' | awk '$3==\"work\"{print $1}'", t_path("nopie"));
	assert_int_equal(sym_addr_to_vaddr(&i, work - 0x400000, 0, &v), 0);
	assert_int_equal(v, work);
}

static void test_altlink(void **state)
{
	struct sym_elf_info i;
	struct err_msg msg = { "" };
	uint8_t id[20];
	(void)state;

	build();
	FILE *f = fopen(t_path("alt.bin"), "wb");
	fwrite("../dwz/common.debug", 1, 20, f); /* with its NUL */
	for (int k = 0; k < 20; k++)
		id[k] = (uint8_t)(0xa0 + k);
	fwrite(id, 1, 20, f);
	fclose(f);
	assert_int_equal(t_run("cd '%s' && objcopy --add-section .gnu_debugaltlink=alt.bin "
			       "p.debug p.alt", t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("p.alt"), &i, &msg), 0);
	assert_true(i.flags & SYM_HAS_ALTLINK);
	assert_string_equal(i.alt_name, "../dwz/common.debug");
	assert_int_equal(i.alt_build_id_len, 20);
	assert_memory_equal(i.alt_build_id, id, 20);
	/* The alt file does not exist: resolution still opens, without it. */
	struct sym_dwarf *d = NULL;
	assert_int_equal(sym_dwarf_open(t_path("p.alt"), NULL, &d, &msg), 0);
	sym_dwarf_close(d);
}

static void test_untrusted_bytes(void **state)
{
	struct sym_elf_info i;
	struct err_msg msg = { "" };
	(void)state;

	build();
	assert_int_equal(sym_elf_inspect("hello", 5, &i, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "invalid_elf"));
	assert_int_equal(sym_elf_inspect("", 0, &i, NULL), ERR_INVALID);

	FILE *f = fopen(t_path("p.full"), "rb");
	fseek(f, 0, SEEK_END);
	size_t len = (size_t)ftell(f);
	rewind(f);
	uint8_t *data = malloc(len), *c = malloc(len);
	assert_int_equal(fread(data, 1, len, f), len);
	fclose(f);
	/*
	 * No proper prefix inspects: the section header table ends the file,
	 * so every cut leaves a header table past the end.  Which check says
	 * so depends on how much is left: the magic, libelf's open (a partial
	 * ELF header), then the extents of the tables.
	 */
	for (size_t n = 0; n < len; n += (n < 512 ? 1 : 97)) {
		struct err_msg m = { "" };

		assert_int_equal(sym_elf_inspect(data, n, &i, &m), ERR_INVALID);
		if (n < EI_NIDENT)
			assert_non_null(strstr(m.text, "no ELF magic"));
		else if (n < sizeof(Elf64_Ehdr))
			assert_non_null(strstr(m.text, "invalid_elf: open"));
		else
			assert_non_null(strstr(m.text, "invalid_elf: truncated"));
	}
	assert_int_equal(sym_elf_inspect(data, len, &i, NULL), 0);
	/* Corrupt bytes in the headers and tables. */
	srand(7);
	for (int round = 0; round < 400; round++) {
		memcpy(c, data, len);
		for (int k = 0; k < 4; k++) {
			size_t pos = round % 2 ? (size_t)rand() % 128 : (size_t)rand() % len;
			c[pos] = (uint8_t)rand();
		}
		int rc = sym_elf_inspect(c, len, &i, NULL);
		assert_true(rc == 0 || rc == ERR_INVALID);
		struct sym_dwarf *d = NULL;
		if (sym_dwarf_open_mem(c, len, NULL, &d, NULL) == 0) {
			struct sym_frame fr[8];
			size_t k;
			for (uint64_t a = 0x1000; a < 0x1400; a += 3)
				sym_dwarf_lookup(d, a, fr, 8, &k);
			sym_dwarf_close(d);
		}
	}
	free(c);
	free(data);
}

/* The build ID of real files, against readelf's reading of their notes. */
static void test_build_id_against_readelf(void **state)
{
	const char *files[3];
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	(void)state;

	build();
	assert_true(n > 0);
	exe[n] = '\0';
	files[0] = t_path("p.full");
	files[1] = t_path("noid");
	files[2] = exe;
	for (size_t f = 0; f < 3; f++) {
		char cmd[4300], want[256] = "", have[2 * SYM_BUILD_ID_MAX + 1];
		struct sym_elf_info i;
		FILE *p;

		snprintf(cmd, sizeof(cmd), "readelf -n '%s' | awk '/Build ID/ {print $3}'", files[f]);
		p = popen(cmd, "r");
		assert_non_null(p);
		if (!fgets(want, sizeof(want), p))
			want[0] = '\0';
		pclose(p);
		want[strcspn(want, "\n")] = '\0';
		assert_int_equal(sym_elf_inspect_file(files[f], &i, NULL), 0);
		sym_build_id_hex(i.build_id, i.build_id_len, have);
		assert_string_equal(have, want);
	}
}

static void test_build_id_parse(void **state)
{
	uint8_t id[SYM_BUILD_ID_MAX];
	size_t n;
	(void)state;

	assert_int_equal(sym_build_id_parse("", id, &n), ERR_INVALID);
	assert_int_equal(sym_build_id_parse("abc", id, &n), ERR_INVALID);
	assert_int_equal(sym_build_id_parse("zz", id, &n), ERR_INVALID);
	char big[2 * SYM_BUILD_ID_MAX + 3];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(sym_build_id_parse(big, id, &n), ERR_INVALID);
	assert_int_equal(sym_build_id_parse("0aFF", id, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(id[0], 0x0a);
	assert_int_equal(id[1], 0xff);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_binary),
		cmocka_unit_test(test_split_files),
		cmocka_unit_test(test_file_offset_mapping),
		cmocka_unit_test(test_altlink),
		cmocka_unit_test(test_untrusted_bytes),
		cmocka_unit_test(test_build_id_against_readelf),
		cmocka_unit_test(test_build_id_parse),
	};
	t_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	t_rmdir();
	return rc;
}
