/*
 * test_elfsym.c - the workload's symbol files (tools/elfsym.c) as unhex's
 * symbolize engine sees them: inspection, checks, symtab lookups through
 * libdw/libelf, the compact index, the file-offset mapping of profiles,
 * and the generated names (valid manglings, unique, stable).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <elf.h>

#include "base/buf.h"
#include "base/err.h"
#include "tools/elfsym.h"
#include "symbolize/symbolize.h"

#define TEXT_OFF 0x4000u
#define TEXT_SIZE 0x20000u

static const uint8_t id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
				7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static const struct {
	const char *raw, *demangled;
	uint64_t off, size;
} funcs[] = {
	{ "main", "main", TEXT_OFF + 0x40, 0x100 },
	{ "_ZN8checkout12PriceService9calculateERKNS_4CartE",
	  "checkout::PriceService::calculate(checkout::Cart const&)", TEXT_OFF + 0x140, 0x230 },
	{ "memcpy", "memcpy", TEXT_OFF + 0x370, 0x50 },
	{ "_ZNK8checkout4http6Router8dispatchEPNS_7RequestE",
	  "checkout::http::Router::dispatch(checkout::Request*) const", TEXT_OFF + 0x3c0, 0x80 },
	/* a gap of 0x1000 bytes without a symbol, then the last one */
	{ "SSL_read", "SSL_read", TEXT_OFF + 0x1440, 0x60 },
};
#define N_FUNCS (sizeof(funcs) / sizeof(funcs[0]))

static char dir[64], path[128];

static int setup(void **state)
{
	struct elfsym w;
	size_t i;
	(void)state;

	snprintf(dir, sizeof(dir), "/tmp/unhex-elfsym-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/f.debug", dir);
	if (elfsym_init(&w, id, sizeof(id), TEXT_OFF, TEXT_SIZE))
		return -1;
	for (i = 0; i < N_FUNCS; i++)
		if (elfsym_add(&w, funcs[i].raw, funcs[i].off, funcs[i].size))
			return -1;
	if (elfsym_write_file(&w, path, NULL))
		return -1;
	elfsym_release(&w);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return rmdir(dir);
}

static void test_inspect_and_check(void **state)
{
	struct sym_elf_info info;
	struct err_msg msg = { "" };
	enum sym_reason reason;
	uint8_t other[20];
	(void)state;

	assert_int_equal(sym_elf_inspect_file(path, &info, &msg), 0);
	assert_int_equal(info.elf_class, 64);
	assert_int_equal(info.elf_type, ET_DYN);
	assert_int_equal(info.machine, EM_X86_64);
	assert_int_equal(info.build_id_len, 20);
	assert_memory_equal(info.build_id, id, 20);
	assert_true(info.flags & SYM_HAS_SYMTAB);
	assert_false(info.flags & (SYM_HAS_DEBUG_INFO | SYM_HAS_TEXT | SYM_SEGMENTS_FROM_DEBUG));
	assert_int_equal(info.n_segments, 2);
	assert_int_equal(info.segments[1].offset, TEXT_OFF);
	assert_int_equal(info.segments[1].vaddr, TEXT_OFF);
	assert_int_equal(info.segments[1].filesz, TEXT_SIZE);
	assert_int_equal(info.segments[1].flags, PF_R | PF_X);

	assert_int_equal(sym_elf_check(&info, id, sizeof(id), 0, &reason, &msg), 0);
	assert_int_equal(reason, SYM_REASON_OK);
	/* Symbols only: refused where DWARF is demanded, for the right reason. */
	assert_int_equal(sym_elf_check(&info, id, sizeof(id), 1, &reason, &msg), ERR_INVALID);
	assert_int_equal(reason, SYM_REASON_NO_DEBUG_INFO);
	memcpy(other, id, sizeof(other));
	other[19] ^= 1;
	assert_int_equal(sym_elf_check(&info, other, sizeof(other), 0, &reason, &msg), ERR_INVALID);
	assert_int_equal(reason, SYM_REASON_BUILD_ID_MISMATCH);
}

static void lookup_one(struct sym_dwarf *d, uint64_t vaddr, const char *want)
{
	struct sym_frame fr[SYM_MAX_FRAMES];
	size_t n = 99;

	assert_int_equal(sym_dwarf_lookup(d, vaddr, fr, SYM_MAX_FRAMES, &n), 0);
	if (!want) {
		assert_int_equal(n, 0);
		return;
	}
	assert_int_equal(n, 1);
	assert_non_null(fr[0].function);
	assert_string_equal(fr[0].function, want);
	assert_true(fr[0].flags & SYM_FRAME_SYMTAB);
}

static void test_dwarf_lookup(void **state)
{
	struct sym_dwarf_opts opts = { .build_id = id, .build_id_len = sizeof(id) };
	struct err_msg msg = { "" };
	struct sym_dwarf *d = NULL;
	size_t i;
	(void)state;

	assert_int_equal(sym_dwarf_open(path, &opts, &d, &msg), 0);
	for (i = 0; i < N_FUNCS; i++) {
		lookup_one(d, funcs[i].off, funcs[i].demangled);
		lookup_one(d, funcs[i].off + funcs[i].size / 2, funcs[i].demangled);
		lookup_one(d, funcs[i].off + funcs[i].size - 1, funcs[i].demangled);
	}
	lookup_one(d, TEXT_OFF + 0x3c0 + 0x80, NULL); /* the gap */
	lookup_one(d, TEXT_OFF + 0x1440 + 0x60, NULL); /* past the last symbol */
	sym_dwarf_close(d);
}

/* A profile stores file offsets: one inside each function maps back to it. */
static void test_profile_offsets(void **state)
{
	struct sym_elf_info info;
	struct err_msg msg = { "" };
	struct sym_dwarf *d = NULL;
	uint64_t vaddr;
	size_t i;
	(void)state;

	assert_int_equal(sym_elf_inspect_file(path, &info, &msg), 0);
	assert_int_equal(sym_dwarf_open(path, NULL, &d, &msg), 0);
	for (i = 0; i < N_FUNCS; i++) {
		/* a leaf PC, then a return address just past a call at the end */
		assert_int_equal(sym_addr_to_vaddr(&info, funcs[i].off + 4, 0, &vaddr), 0);
		assert_int_equal(vaddr, funcs[i].off + 4);
		lookup_one(d, vaddr, funcs[i].demangled);
		assert_int_equal(sym_addr_to_vaddr(&info, funcs[i].off + funcs[i].size, SYM_ADDR_RETURN,
						   &vaddr), 0);
		lookup_one(d, vaddr, funcs[i].demangled);
	}
	/* Outside the text segment nothing is mapped. */
	assert_int_equal(sym_addr_to_vaddr(&info, TEXT_OFF + TEXT_SIZE, 0, &vaddr), ERR_NOT_FOUND);
	assert_int_equal(sym_addr_to_vaddr(&info, 0x800, 0, &vaddr), ERR_NOT_FOUND);
	sym_dwarf_close(d);
}

/* The compact index unhex builds per build ID answers the same. */
static void test_index(void **state)
{
	struct err_msg msg = { "" };
	struct sym_dwarf *d = NULL;
	struct sym_index *x = NULL;
	struct sym_index_stats st;
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct buf b;
	size_t i, n;
	(void)state;

	buf_init(&b, 1u << 24);
	assert_int_equal(sym_dwarf_open(path, NULL, &d, &msg), 0);
	assert_int_equal(sym_index_build_buf(d, &b, &st, &msg), 0);
	assert_int_equal(st.symbols, N_FUNCS);
	assert_int_equal(sym_index_open_mem(b.data, b.len, id, sizeof(id), &x, &msg), 0);
	for (i = 0; i < N_FUNCS; i++) {
		assert_int_equal(sym_index_lookup(x, funcs[i].off + 8, fr, SYM_MAX_FRAMES, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(fr[0].function, funcs[i].demangled);
	}
	sym_index_close(x);
	sym_dwarf_close(d);
	buf_release(&b);
}

/* In-memory image: the same bytes as the file, and damaged copies are refused. */
static void test_buffer_and_damage(void **state)
{
	struct sym_elf_info info;
	struct err_msg msg = { "" };
	struct elfsym w;
	struct buf b;
	size_t cut;
	(void)state;

	buf_init(&b, 1u << 20);
	assert_int_equal(elfsym_init(&w, id, sizeof(id), TEXT_OFF, TEXT_SIZE), 0);
	assert_int_equal(elfsym_add(&w, "f", TEXT_OFF + 0x40, 16), 0);
	assert_int_equal(elfsym_write_buf(&w, &b), 0);
	assert_int_equal(sym_elf_inspect(b.data, b.len, &info, &msg), 0);
	assert_true(info.flags & SYM_HAS_SYMTAB);
	for (cut = 0; cut < b.len; cut += 7) {
		int rc = sym_elf_inspect(b.data, cut, &info, &msg);
		assert_true(rc == 0 || rc == ERR_INVALID);
		if (cut < sizeof(Elf64_Ehdr))
			assert_int_equal(rc, ERR_INVALID);
	}
	elfsym_release(&w);
	buf_release(&b);
}

static void test_bad_parameters(void **state)
{
	struct elfsym w;
	struct buf small;
	char name[ELFSYM_NAME_MAX];
	(void)state;

	assert_int_equal(elfsym_init(&w, id, 0, TEXT_OFF, TEXT_SIZE), ERR_INVALID);
	elfsym_release(&w);
	assert_int_equal(elfsym_init(&w, id, sizeof(id), TEXT_OFF + 1, TEXT_SIZE), ERR_INVALID);
	elfsym_release(&w);
	assert_int_equal(elfsym_init(&w, id, sizeof(id), 0, TEXT_SIZE), ERR_INVALID);
	elfsym_release(&w);
	assert_int_equal(elfsym_init(&w, id, sizeof(id), TEXT_OFF, TEXT_SIZE), 0);
	assert_int_equal(elfsym_add(&w, "x", TEXT_OFF - 16, 16), ERR_INVALID);
	assert_int_equal(elfsym_add(&w, "x", TEXT_OFF + TEXT_SIZE - 8, 16), ERR_INVALID);
	assert_int_equal(elfsym_add(&w, "x", UINT64_MAX - 4, 16), ERR_INVALID);
	assert_int_equal(elfsym_add(&w, "", TEXT_OFF, 16), ERR_INVALID);
	assert_int_equal(elfsym_add(&w, "x", TEXT_OFF + TEXT_SIZE - 16, 16), 0);
	/* A capped output buffer fails cleanly and keeps its contents. */
	buf_init(&small, 100);
	assert_int_equal(elfsym_write_buf(&w, &small), ERR_TOO_LARGE);
	assert_int_equal(small.len, 0);
	buf_release(&small);
	elfsym_release(&w);
	assert_int_equal(elfsym_name(ELFSYM_LIBC, NULL, 0, name, 16), ERR_INVALID);
	assert_int_equal(elfsym_name((enum elfsym_flavor)42, NULL, 0, name, sizeof(name)), ERR_INVALID);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Names of 4000 functions per flavour (past every combinatorial space of
 * the small vocabularies, so the rounds are exercised): deterministic,
 * unique, and every _Z name demangles through the engine's libiberty.
 */
static void check_flavor(enum elfsym_flavor fl, const char *scope, const char *want_prefix)
{
	enum { N = 4000 };
	char **names = calloc(N, sizeof(*names)), again[ELFSYM_NAME_MAX], file[160];
	struct sym_frame fr[SYM_MAX_FRAMES];
	struct err_msg msg = { "" };
	struct sym_dwarf *d = NULL;
	struct elfsym w;
	size_t i, n;

	assert_non_null(names);
	assert_int_equal(elfsym_init(&w, id, sizeof(id), TEXT_OFF, (uint64_t)N * 16 + 0x40), 0);
	for (i = 0; i < N; i++) {
		names[i] = malloc(ELFSYM_NAME_MAX);
		assert_non_null(names[i]);
		assert_int_equal(elfsym_name(fl, scope, i, names[i], ELFSYM_NAME_MAX), 0);
		assert_int_equal(elfsym_name(fl, scope, i, again, sizeof(again)), 0);
		assert_string_equal(names[i], again);
		assert_int_equal(elfsym_add(&w, names[i], TEXT_OFF + 0x40 + 16 * i, 16), 0);
	}
	snprintf(file, sizeof(file), "%s/names-%d.debug", dir, (int)fl);
	assert_int_equal(elfsym_write_file(&w, file, &msg), 0);
	elfsym_release(&w);
	assert_int_equal(sym_dwarf_open(file, NULL, &d, &msg), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(sym_dwarf_lookup(d, TEXT_OFF + 0x40 + 16 * i + 3, fr, SYM_MAX_FRAMES, &n), 0);
		assert_int_equal(n, 1);
		if (strncmp(names[i], "_Z", 2) == 0) {
			if (strncmp(fr[0].function, "_Z", 2) == 0)
				fail_msg("%s does not demangle", names[i]);
			if (want_prefix && strncmp(fr[0].function, want_prefix, strlen(want_prefix)))
				fail_msg("%s -> %s lacks %s", names[i], fr[0].function, want_prefix);
		} else {
			assert_string_equal(fr[0].function, names[i]);
		}
	}
	sym_dwarf_close(d);
	unlink(file);
	qsort(names, N, sizeof(*names), cmp_str);
	for (i = 1; i < N; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			fail_msg("duplicate name %s", names[i]);
	for (i = 0; i < N; i++)
		free(names[i]);
	free(names);
}

static void test_names(void **state)
{
	char name[ELFSYM_NAME_MAX];
	(void)state;

	assert_int_equal(elfsym_name(ELFSYM_MAIN, "shop-api", 0, name, sizeof(name)), 0);
	assert_string_equal(name, "main");
	assert_int_equal(elfsym_name(ELFSYM_LIBC, NULL, 0, name, sizeof(name)), 0);
	assert_string_equal(name, "memcpy");
	assert_int_equal(elfsym_name(ELFSYM_LIBSSL, NULL, 0, name, sizeof(name)), 0);
	assert_string_equal(name, "SSL_read");
	check_flavor(ELFSYM_MAIN, "shop-api", NULL);
	check_flavor(ELFSYM_SERVICE_LIB, "shop-api", "shop_api::");
	check_flavor(ELFSYM_SERVICE_LIB, "9lives", "s9lives::");
	check_flavor(ELFSYM_LIBSTDCXX, NULL, NULL);
	check_flavor(ELFSYM_LIBC, NULL, NULL);
	check_flavor(ELFSYM_LIBSSL, NULL, NULL);
	/* A very long scope is cut, never overflowing the name. */
	assert_int_equal(elfsym_name(ELFSYM_SERVICE_LIB,
				     "a-very-long-service-name-that-goes-on-and-on-and-on-and-on-forever",
				     123456, name, sizeof(name)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inspect_and_check),
		cmocka_unit_test(test_dwarf_lookup),
		cmocka_unit_test(test_profile_offsets),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_buffer_and_damage),
		cmocka_unit_test(test_bad_parameters),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
