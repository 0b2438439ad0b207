/*
 * test_elf.c - ELF inspection of real and damaged files: build IDs,
 * segments, split debug files, DWZ alt links, status reasons, the
 * file-offset to virtual-address mapping of profiles, and the structure
 * checks that refuse what readers could read two ways (reserved or
 * needless extended header indexes, tables and sections outside the file
 * or overlapping, notes past their end, two build IDs, bad symbol tables),
 * while every ELF file of the system still inspects.
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


/* ---- structure validation ------------------------------------------------ */

static uint8_t *g_img;
static size_t g_len;

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void wr(uint8_t *p, int n, uint64_t v)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* The section header of section `name` in image `img` (a 64-bit LSB file). */
static uint8_t *shdr_of(uint8_t *img, const char *name)
{
	uint64_t shoff = rd(img + 0x28, 8), n = rd(img + 0x3c, 2), strndx = rd(img + 0x3e, 2);
	uint64_t stroff = rd(img + shoff + 64 * strndx + 24, 8);

	for (uint64_t i = 0; i < n; i++) {
		uint8_t *sh = img + shoff + 64 * i;

		if (strcmp((const char *)img + stroff + rd(sh, 4), name) == 0)
			return sh;
	}
	fail_msg("no section %s", name);
	return NULL;
}

static void load_full(void)
{
	FILE *f;

	build();
	if (g_img)
		return;
	f = fopen(t_path("p.full"), "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	g_len = (size_t)ftell(f);
	rewind(f);
	g_img = malloc(g_len);
	assert_int_equal(fread(g_img, 1, g_len, f), g_len);
	fclose(f);
	assert_int_equal(g_img[EI_CLASS], ELFCLASS64);
	assert_int_equal(g_img[EI_DATA], ELFDATA2LSB);
}

typedef void (*patch_fn)(uint8_t *img);

/* A copy of p.full patched by `fn` is refused, the message naming `why`. */
static void refused(patch_fn fn, const char *why)
{
	uint8_t *c = malloc(g_len);
	struct sym_elf_info i;
	struct err_msg msg = { "" };

	memcpy(c, g_img, g_len);
	fn(c);
	assert_int_equal(sym_elf_inspect(c, g_len, &i, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "invalid_elf"));
	if (!strstr(msg.text, why))
		fail_msg("\"%s\" does not say \"%s\"", msg.text, why);
	free(c);
}

static void shstrndx_reserved(uint8_t *img) { wr(img + 0x3e, 2, 0xfffe); }
static void shstrndx_past(uint8_t *img) { wr(img + 0x3e, 2, rd(img + 0x3c, 2) + 3); }
static void phnum_extended(uint8_t *img) { wr(img + 0x38, 2, 0xffff); }
static void ehsize(uint8_t *img) { wr(img + 0x34, 2, 40); }
static void phentsize(uint8_t *img) { wr(img + 0x36, 2, 32); }
static void null_section(uint8_t *img) { wr(img + rd(img + 0x28, 8) + 4, 4, SHT_PROGBITS); }

static void section_outside(uint8_t *img)
{
	wr(shdr_of(img, ".text") + 24, 8, g_len - 16);
}

static void sections_overlap(uint8_t *img)
{
	uint8_t *text = shdr_of(img, ".text"), *ro = shdr_of(img, ".rodata");

	wr(ro + 24, 8, rd(text + 24, 8) + 8);
}

static void section_over_headers(uint8_t *img)
{
	wr(shdr_of(img, ".comment") + 24, 8, rd(img + 0x28, 8));
}

static void section_over_ehdr(uint8_t *img)
{
	wr(shdr_of(img, ".comment") + 24, 8, 16);
}

static void note_past_end(uint8_t *img)
{
	uint8_t *sh = shdr_of(img, ".note.gnu.build-id");

	wr(img + rd(sh + 24, 8) + 4, 4, 0x1000); /* n_descsz */
}

static void name_past_table(uint8_t *img)
{
	wr(shdr_of(img, ".comment"), 4, 0x7fffffff);
}

static void symtab_entsize(uint8_t *img)
{
	wr(shdr_of(img, ".symtab") + 56, 8, 16);
}

static void link_past_table(uint8_t *img)
{
	wr(shdr_of(img, ".comment") + 40, 4, 60000);
}

/* The first program header of `type` with contents. */
static uint8_t *phdr_of(uint8_t *img, uint32_t type)
{
	uint64_t phoff = rd(img + 0x20, 8), n = rd(img + 0x38, 2);

	for (uint64_t i = 0; i < n; i++) {
		uint8_t *ph = img + phoff + 56 * i;

		if (rd(ph, 4) == type && rd(ph + 32, 8)) /* p_filesz */
			return ph;
	}
	fail_msg("no segment of type %u with contents", type);
	return NULL;
}

/* Without sections, notes come from program headers: they are checked then. */
static void no_sections(uint8_t *img)
{
	wr(img + 0x28, 8, 0);
	wr(img + 0x3c, 2, 0);
	wr(img + 0x3e, 2, 0);
}

static void note_segment_outside(uint8_t *img)
{
	no_sections(img);
	wr(phdr_of(img, PT_NOTE) + 8, 8, g_len);
}

static void note_segment_past_end(uint8_t *img)
{
	uint8_t *ph;

	no_sections(img);
	ph = phdr_of(img, PT_NOTE);
	wr(img + rd(ph + 8, 8) + 4, 4, 0x10000); /* its first note's n_descsz */
}
static void load_filesz(uint8_t *img)
{
	uint8_t *ph = phdr_of(img, PT_LOAD);

	wr(ph + 32, 8, rd(ph + 40, 8) + 1); /* p_filesz past p_memsz */
}

/* A load past the end, as eu-strip -f leaves them in debug files: fine. */
static void load_past_end(uint8_t *img) { wr(phdr_of(img, PT_LOAD) + 8, 8, g_len); }

static void test_validation(void **state)
{
	struct sym_elf_info i;

	(void)state;
	load_full();
	assert_int_equal(sym_elf_inspect(g_img, g_len, &i, NULL), 0);
	refused(shstrndx_reserved, "e_shstrndx 0xfffe is a reserved index");
	refused(shstrndx_past, "section name table index");
	refused(phnum_extended, "e_phnum");
	refused(ehsize, "e_ehsize 40");
	refused(phentsize, "e_phentsize 32");
	refused(null_section, "section 0 is not the null section");
	refused(section_outside, "outside the file");
	refused(sections_overlap, "overlaps");
	refused(section_over_headers, "overlaps the section header table");
	refused(section_over_ehdr, "overlaps the ELF header");
	refused(note_past_end, "runs past its end");
	refused(name_past_table, "past the name table");
	refused(symtab_entsize, "symbol table entries of 16 bytes");
	refused(link_past_table, "sh_link 60000");
	refused(note_segment_outside, "note segment");
	refused(note_segment_past_end, "runs past its end");
	refused(load_filesz, "more bytes in the file than in memory");
	{
		uint8_t *c = malloc(g_len);

		memcpy(c, g_img, g_len);
		load_past_end(c);
		assert_int_equal(sym_elf_inspect(c, g_len, &i, NULL), 0);
		memcpy(c, g_img, g_len);
		no_sections(c);
		assert_int_equal(sym_elf_inspect(c, g_len, &i, NULL), 0);
		assert_int_equal(i.build_id_len, 20);
		free(c);
	}
	/* A debug file from eu-strip keeps the executable's program headers. */
	assert_int_equal(t_run("cd '%s' && cp p.full p.eu && eu-strip -f p.eu.debug p.eu", t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("p.eu.debug"), &i, NULL), 0);
	assert_int_equal(i.build_id_len, 20);
}

/* A second build-ID note that disagrees: which one a reader takes would decide. */
static void test_two_build_ids(void **state)
{
	uint8_t note[] = {
		4, 0, 0, 0, 20, 0, 0, 0, NT_GNU_BUILD_ID, 0, 0, 0, 'G', 'N', 'U', 0,
		0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	};
	struct sym_elf_info i;
	struct err_msg msg = { "" };
	FILE *f;

	(void)state;
	build();
	f = fopen(t_path("note.bin"), "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(note, 1, sizeof(note), f), sizeof(note));
	fclose(f);
	assert_int_equal(t_run("cd '%s' && objcopy --add-section .note.extra=note.bin "
			       "--set-section-flags .note.extra=readonly p.full p.twoids && "
			       "readelf -SW p.twoids | grep -q 'note.extra *NOTE'", t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("p.twoids"), &i, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "two different GNU build-ID notes"));
	/* The same ID twice is no ambiguity. */
	memcpy(note + 16, "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc"
	       "\xdd\xee\xff\x00\x11\x22\x33", 20);
	f = fopen(t_path("note.bin"), "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(note, 1, sizeof(note), f), sizeof(note));
	fclose(f);
	assert_int_equal(t_run("cd '%s' && objcopy --add-section .note.extra=note.bin "
			       "--set-section-flags .note.extra=readonly p.full p.sameids",
			       t_dir), 0);
	assert_int_equal(sym_elf_inspect_file(t_path("p.sameids"), &i, &msg), 0);
}

/* Messages never carry the path of the file: they reach clients. */
static void test_no_paths(void **state)
{
	struct sym_elf_info i;
	struct err_msg msg = { "" };

	(void)state;
	build();
	assert_int_equal(sym_elf_inspect_file("/nonexistent/secret/dir/x", &i, &msg), ERR_NOT_FOUND);
	assert_null(strstr(msg.text, "secret"));
	err_clear(&msg);
	assert_int_equal(sym_elf_inspect_file(t_path("prog.c"), &i, &msg), ERR_INVALID);
	assert_null(strstr(msg.text, t_dir));
}

/* Every ELF file of the system's usual places inspects: the checks refuse
 * only what no linker writes. */
static void test_system_files(void **state)
{
	FILE *p;
	char line[4096];
	size_t n = 0;

	(void)state;
	p = popen("find /usr/bin /usr/lib/x86_64-linux-gnu /usr/lib/gcc -maxdepth 3 -type f "
		  "-size +1k 2>/dev/null | head -4000", "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		struct sym_elf_info i;
		struct err_msg msg = { "" };
		unsigned char magic[4] = { 0 };
		FILE *f;

		line[strcspn(line, "\n")] = '\0';
		f = fopen(line, "rb");
		if (!f)
			continue;
		if (fread(magic, 1, 4, f) != 4 || memcmp(magic, ELFMAG, SELFMAG) != 0) {
			fclose(f);
			continue;
		}
		fclose(f);
		if (sym_elf_inspect_file(line, &i, &msg) != 0)
			fail_msg("%s is refused: %s", line, msg.text);
		n++;
	}
	pclose(p);
	assert_true(n > 20);
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
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_two_build_ids),
		cmocka_unit_test(test_no_paths),
		cmocka_unit_test(test_system_files),
	};
	t_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	t_rmdir();
	return rc;
}
