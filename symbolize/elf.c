/*
 * elf.c - inspection of ELF files from untrusted sources (uploads,
 * debuginfod): validation of their structure, build ID, segments, which
 * symbol and debug sections exist, and the file-offset to virtual-address
 * mapping of profiles.
 *
 * libelf does the parsing, and bounds-checks some tables against the file
 * size; it also accepts files other tools read differently (an e_shstrndx
 * in the reserved range, an extended e_phnum that is not needed, sections
 * that overlap the headers or each other, notes that run past their
 * section, two different build-ID notes).  A file that two readers could
 * disagree about is a way to show one build ID to the check and other
 * code or names to the user, so validate() refuses all of that before
 * anything is read from it, with the reason in the message.
 */
#include <assert.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hex.h"
#include "base/err.h"
#include "symbolize_int.h"

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static void elf_init_once(void)
{
	elf_version(EV_CURRENT);
}

void sym__elf_init(void)
{
	pthread_once(&elf_once, elf_init_once);
}

static int invalid(struct err_msg *msg, const char *what)
{
	return err_set(msg, ERR_INVALID, "invalid_elf: %s: %s", what,
		       elf_errmsg(-1) ? elf_errmsg(-1) : "malformed");
}

/* True when the symbol table section has at least one defined FUNC symbol. */
static int has_func_symbols(Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || sh->sh_entsize == 0)
		return 0;
	size_t n = data->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			return 0;
		int type = GELF_ST_TYPE(sym.st_info);
		if ((type == STT_FUNC || type == STT_GNU_IFUNC) &&
		    sym.st_shndx != SHN_UNDEF && sym.st_value != 0)
			return 1;
		if (i > (1u << 24))
			return 0;
	}
	return 0;
}

/* .gnu_debugaltlink: a NUL-terminated file name, then the build ID bytes. */
static void read_altlink(Elf_Scn *scn, struct sym_elf_info *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || data->d_size == 0)
		return;
	const char *p = data->d_buf;
	const char *nul = memchr(p, '\0', data->d_size);
	if (!nul)
		return;
	size_t name_len = (size_t)(nul - p);
	size_t id_len = data->d_size - name_len - 1;
	if (name_len >= sizeof(out->alt_name) || id_len == 0 ||
	    id_len > SYM_BUILD_ID_MAX)
		return;
	memcpy(out->alt_name, p, name_len + 1);
	memcpy(out->alt_build_id, nul + 1, id_len);
	out->alt_build_id_len = id_len;
	out->flags |= SYM_HAS_ALTLINK;
}

static void classify_section(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			     const char *name, struct sym_elf_info *out)
{
	(void)elf;
	if (sh->sh_type == SHT_SYMTAB && has_func_symbols(scn, sh))
		out->flags |= SYM_HAS_SYMTAB;
	if (sh->sh_type == SHT_DYNSYM && has_func_symbols(scn, sh))
		out->flags |= SYM_HAS_DYNSYM;
	if (!name)
		return;
	if ((!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) &&
	    sh->sh_type != SHT_NOBITS && sh->sh_size > 0) {
		out->flags |= SYM_HAS_DEBUG_INFO;
		if (name[1] == 'z' || (sh->sh_flags & SHF_COMPRESSED))
			out->flags |= SYM_DEBUG_COMPRESSED;
	}
	if (!strcmp(name, ".text") && sh->sh_type == SHT_PROGBITS && sh->sh_size > 0)
		out->flags |= SYM_HAS_TEXT;
	if (!strcmp(name, ".gnu_debuglink"))
		out->flags |= SYM_HAS_DEBUGLINK;
	/* Go's function table; PIE and externally linked builds put it in relro. */
	if ((!strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab")) &&
	    sh->sh_type == SHT_PROGBITS && sh->sh_size > 0)
		out->flags |= SYM_HAS_GOPCLNTAB;
	if (!strcmp(name, ".gnu_debugaltlink") && sh->sh_type != SHT_NOBITS)
		read_altlink(scn, out);
}

/* Whether a table of n entries of `ent` bytes at `off` ends past `size`. */
static int past_end(uint64_t off, uint64_t n, uint64_t ent, size_t size)
{
	return n && (off > size || n * ent > size - off);
}

/*
 * libelf reads a section or program header table that lies past the end
 * of the image as an empty one, so a truncated upload would inspect as a
 * file without a build ID, segments or symbols, and be refused for that.
 * It is refused as what it is.
 */
static int check_extent(Elf *elf, const GElf_Ehdr *eh, struct err_msg *msg)
{
	size_t size = 0, nph = eh->e_phnum;

	if (!elf_rawfile(elf, &size))
		return invalid(msg, "file image");
	if (eh->e_phnum == PN_XNUM && elf_getphdrnum(elf, &nph) != 0)
		return invalid(msg, "program headers");
	if (past_end(eh->e_phoff, nph, eh->e_phentsize, size) ||
	    past_end(eh->e_shoff, eh->e_shnum ? eh->e_shnum : eh->e_shoff != 0, eh->e_shentsize,
		     size))
		return err_set(msg, ERR_INVALID, "invalid_elf: truncated: its header tables end "
			       "past its %zu bytes", size);
	return 0;
}

/* ---- validation ------------------------------------------------------------- */

#define SECTIONS_MAX 1000000

/* A byte range of the file that a header, table or section occupies. */
struct extent {
	uint64_t off, len;
	const char *what;
	size_t index;
};

/* [off, off + len) inside a file of `size` bytes, without overflow. */
static int inside(uint64_t off, uint64_t len, size_t size)
{
	return off <= size && len <= size - off;
}

static const char *extent_name(const struct extent *e, char *buf, size_t len)
{
	if (!e->index)
		return e->what;
	snprintf(buf, len, "%s %zu", e->what, e->index);
	return buf;
}

static int by_offset(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static int bad(struct err_msg *msg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct err_msg *msg, const char *fmt, ...)
{
	char text[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return err_set(msg, ERR_INVALID, "invalid_elf: %s", text);
}

/* The build-ID note seen so far, to refuse a second one that differs. */
struct id_note {
	const uint8_t *id;
	size_t len;
};

/*
 * Walks the notes of `data` (one note section or PT_NOTE segment): each
 * must fit, the walk must end exactly at the end, a GNU build-ID note
 * must have 1..SYM_BUILD_ID_MAX bytes and agree with any other.
 */
static int check_notes(Elf_Data *data, const char *where, size_t index, struct id_note *seen,
		       struct err_msg *msg)
{
	size_t off = 0;

	while (off < data->d_size) {
		GElf_Nhdr nh;
		size_t name_off, desc_off, next = gelf_getnote(data, off, &nh, &name_off, &desc_off);

		if (next == 0 || next <= off || next > data->d_size)
			return bad(msg, "%s %zu: a note at offset %zu runs past its end", where, index,
				   off);
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0) {
			const uint8_t *id = (const uint8_t *)data->d_buf + desc_off;

			if (nh.n_descsz == 0 || nh.n_descsz > SYM_BUILD_ID_MAX)
				return bad(msg, "%s %zu: a build-ID note of %u bytes", where, index,
					   (unsigned)nh.n_descsz);
			if (seen->id && (seen->len != nh.n_descsz || memcmp(seen->id, id, seen->len)))
				return bad(msg, "two different GNU build-ID notes");
			seen->id = id;
			seen->len = nh.n_descsz;
		}
		off = next;
	}
	return 0;
}

/* The ELF header's own fields, and where the two header tables are. */
static int check_header(Elf *elf, const GElf_Ehdr *eh, size_t size, size_t *nph, size_t *nsh,
			size_t *shstrndx, struct err_msg *msg)
{
	int is64 = eh->e_ident[EI_CLASS] == ELFCLASS64;
	size_t ehsize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t phent = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t shent = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);

	if ((eh->e_ident[EI_CLASS] != ELFCLASS32 && !is64) ||
	    (eh->e_ident[EI_DATA] != ELFDATA2LSB && eh->e_ident[EI_DATA] != ELFDATA2MSB) ||
	    eh->e_ident[EI_VERSION] != EV_CURRENT || eh->e_version != EV_CURRENT)
		return bad(msg, "unknown class, byte order or version in the ELF header");
	if (eh->e_ehsize != ehsize)
		return bad(msg, "e_ehsize %u, not %zu", (unsigned)eh->e_ehsize, ehsize);
	if (elf_getphdrnum(elf, nph) != 0 || elf_getshdrnum(elf, nsh) != 0)
		return bad(msg, "header table counts: %s", elf_errmsg(-1) ? elf_errmsg(-1) : "?");
	/* The extended numbering is for counts that do not fit: anything else
	 * is a second place to read a count from. */
	if (eh->e_phnum == PN_XNUM && *nph < PN_XNUM)
		return bad(msg, "e_phnum 0x%x (extended) for %zu program headers",
			   (unsigned)eh->e_phnum, *nph);
	if (eh->e_shoff == 0 && (eh->e_shnum != 0 || eh->e_shstrndx != SHN_UNDEF))
		return bad(msg, "section counts without a section header table");
	if (*nph && eh->e_phentsize != phent)
		return bad(msg, "e_phentsize %u, not %zu", (unsigned)eh->e_phentsize, phent);
	if (*nsh && eh->e_shentsize != shent)
		return bad(msg, "e_shentsize %u, not %zu", (unsigned)eh->e_shentsize, shent);
	if (*nph && (*nph > size / phent || !inside(eh->e_phoff, (uint64_t)*nph * phent, size)))
		return bad(msg, "the program header table lies outside the file");
	if (*nsh && (*nsh > size / shent || !inside(eh->e_shoff, (uint64_t)*nsh * shent, size)))
		return bad(msg, "the section header table lies outside the file");
	if (*nsh > SECTIONS_MAX)
		return bad(msg, "%zu sections (at most %d)", *nsh, SECTIONS_MAX);
	if (eh->e_shstrndx >= SHN_LORESERVE && eh->e_shstrndx != SHN_XINDEX)
		return bad(msg, "e_shstrndx 0x%x is a reserved index", (unsigned)eh->e_shstrndx);
	if (*nsh && eh->e_shstrndx == SHN_XINDEX && eh->e_shnum != 0 && *nsh < SHN_LORESERVE)
		return bad(msg, "e_shstrndx extended (0x%x) for %zu sections", (unsigned)SHN_XINDEX,
			   *nsh);
	if (elf_getshdrstrndx(elf, shstrndx) != 0)
		return bad(msg, "section name table index: %s", elf_errmsg(-1) ? elf_errmsg(-1) : "?");
	if (*nsh > 1 && (*shstrndx == SHN_UNDEF || *shstrndx >= *nsh))
		return bad(msg, "section name table index %zu of %zu sections", *shstrndx, *nsh);
	return 0;
}

/*
 * Sections: a null section 0, names inside the name table, links inside the
 * table, symbol tables with their entry size and string table, contents
 * inside the file and overlapping nothing; notes well-formed.  `ext` has
 * room for nsh + 3 extents and holds the header's and tables' already.
 */
static int check_sections(Elf *elf, size_t size, size_t nsh, size_t shstrndx, int is64,
			  struct extent *ext, size_t *n_ext, struct id_note *seen, struct err_msg *msg)
{
	size_t symsize = is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
	size_t chdr = is64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
	GElf_Shdr strsh;
	Elf_Scn *strscn = nsh > 1 ? elf_getscn(elf, shstrndx) : NULL;
	int rc;

	if (nsh > 1 && (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB))
		return bad(msg, "section %zu, the section name table, is no string table", shstrndx);
	for (size_t i = 0; i < nsh; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return bad(msg, "section header %zu unreadable", i);
		if (i == 0) {
			if (sh.sh_type != SHT_NULL || sh.sh_flags || sh.sh_addr || sh.sh_offset)
				return bad(msg, "section 0 is not the null section");
			continue;
		}
		if (sh.sh_name >= strsh.sh_size)
			return bad(msg, "section %zu: name offset %u past the name table", i,
				   (unsigned)sh.sh_name);
		if (sh.sh_link >= nsh)
			return bad(msg, "section %zu: sh_link %u of %zu sections", i,
				   (unsigned)sh.sh_link, nsh);
		if (sh.sh_type != SHT_NOBITS && sh.sh_size) {
			if (!inside(sh.sh_offset, sh.sh_size, size))
				return bad(msg, "section %zu lies outside the file", i);
			if ((sh.sh_flags & SHF_COMPRESSED) && sh.sh_size < chdr)
				return bad(msg, "section %zu: compressed, without room for its header", i);
			ext[(*n_ext)++] = (struct extent){ sh.sh_offset, sh.sh_size, "section", i };
		}
		if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) && sh.sh_size) {
			GElf_Shdr lsh;
			Elf_Scn *lscn = elf_getscn(elf, sh.sh_link);

			if (sh.sh_entsize != symsize || sh.sh_size % symsize)
				return bad(msg, "section %zu: symbol table entries of %llu bytes", i,
					   (unsigned long long)sh.sh_entsize);
			if (!lscn || !gelf_getshdr(lscn, &lsh) || lsh.sh_type != SHT_STRTAB)
				return bad(msg, "section %zu: symbol names not in a string table", i);
		}
		if (sh.sh_type == SHT_NOTE && sh.sh_size && !(sh.sh_flags & SHF_COMPRESSED)) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (!d)
				return bad(msg, "section %zu: notes unreadable", i);
			if ((rc = check_notes(d, "section", i, seen, msg)))
				return rc;
		}
	}
	return 0;
}

/*
 * Program headers: loads no larger on disk than in memory; in a file
 * without sections, where they are what a reader takes the build ID from
 * (libdwelf looks at program headers only then), notes inside the file and
 * well-formed.  Otherwise segment contents are never read and may be
 * anything: a debug file split off by eu-strip -f keeps the executable's
 * program headers over sections it emptied or moved.
 */
static int check_segments(Elf *elf, size_t size, size_t nph, size_t nsh, struct id_note *seen,
			  struct err_msg *msg)
{
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		int rc;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return bad(msg, "program header %zu unreadable", i);
		if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
			return bad(msg, "segment %zu: more bytes in the file than in memory", i);
		if (ph.p_type != PT_NOTE || !ph.p_filesz || nsh)
			continue;
		if (!inside(ph.p_offset, ph.p_filesz, size))
			return bad(msg, "note segment %zu lies outside the file", i);
		Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						   ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);

		if (!d)
			return bad(msg, "segment %zu: notes unreadable", i);
		if ((rc = check_notes(d, "segment", i, seen, msg)))
			return rc;
	}
	return 0;
}

/* The structure of the whole file; 0 or ERR_INVALID ("invalid_elf: ..."). */
static int validate(Elf *elf, const GElf_Ehdr *eh, struct err_msg *msg)
{
	int is64 = eh->e_ident[EI_CLASS] == ELFCLASS64;
	size_t size = 0, nph = 0, nsh = 0, shstrndx = 0, n_ext = 0;
	struct id_note seen = { NULL, 0 };
	struct extent *ext;
	int rc;

	if (!elf_rawfile(elf, &size))
		return invalid(msg, "file image");
	if ((rc = check_header(elf, eh, size, &nph, &nsh, &shstrndx, msg)))
		return rc;
	ext = malloc((nsh + 3) * sizeof(*ext));
	if (!ext)
		return ERR_NOMEM;
	ext[n_ext++] = (struct extent){ 0, eh->e_ehsize, "the ELF header", 0 };
	if (nph)
		ext[n_ext++] = (struct extent){ eh->e_phoff, (uint64_t)nph * eh->e_phentsize,
						"the program header table", 0 };
	if (nsh)
		ext[n_ext++] = (struct extent){ eh->e_shoff, (uint64_t)nsh * eh->e_shentsize,
						"the section header table", 0 };
	rc = check_sections(elf, size, nsh, shstrndx, is64, ext, &n_ext, &seen, msg);
	if (!rc) {
		qsort(ext, n_ext, sizeof(*ext), by_offset);
		for (size_t i = 1; i < n_ext && !rc; i++)
			if (ext[i].off < ext[i - 1].off + ext[i - 1].len) {
				char a[48], b[48];

				rc = bad(msg, "%s overlaps %s", extent_name(&ext[i], a, sizeof(a)),
					 extent_name(&ext[i - 1], b, sizeof(b)));
			}
	}
	free(ext);
	return rc ? rc : check_segments(elf, size, nph, nsh, &seen, msg);
}

int sym__elf_info(Elf *elf, struct sym_elf_info *out, struct err_msg *msg)
{
	struct sym_elf_info info;
	GElf_Ehdr eh;
	size_t nph = 0, shstrndx = 0;
	int rc;

	memset(&info, 0, sizeof(info));
	if (elf_kind(elf) != ELF_K_ELF)
		return err_set(msg, ERR_INVALID, "invalid_elf: not an ELF file");
	if (!gelf_getehdr(elf, &eh))
		return invalid(msg, "ELF header");
	if ((rc = check_extent(elf, &eh, msg)) || (rc = validate(elf, &eh, msg)))
		return rc;
	info.elf_class = gelf_getclass(elf) == ELFCLASS32 ? 32 : 64;
	info.elf_type = eh.e_type;
	info.machine = eh.e_machine;

	if (elf_getphdrnum(elf, &nph) != 0)
		return invalid(msg, "program headers");
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			return invalid(msg, "program header");
		if (ph.p_type != PT_LOAD)
			continue;
		if (info.n_segments == SYM_MAX_SEGMENTS)
			return err_set(msg, ERR_INVALID,
				       "invalid_elf: more than %d PT_LOAD segments",
				       SYM_MAX_SEGMENTS);
		struct sym_segment *s = &info.segments[info.n_segments++];
		s->offset = ph.p_offset;
		s->vaddr = ph.p_vaddr;
		s->filesz = ph.p_filesz;
		s->memsz = ph.p_memsz;
		s->flags = ph.p_flags;
		/* objcopy --only-keep-debug empties the file image of segments. */
		if ((ph.p_flags & PF_X) && ph.p_filesz == 0 && ph.p_memsz > 0)
			info.flags |= SYM_SEGMENTS_FROM_DEBUG;
	}

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return invalid(msg, "section name table");
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return invalid(msg, "section header");
		classify_section(elf, scn, &sh, elf_strptr(elf, shstrndx, sh.sh_name),
				 &info);
	}
	if (!(info.flags & SYM_HAS_TEXT) && !(info.flags & SYM_SEGMENTS_FROM_DEBUG) &&
	    (info.flags & SYM_HAS_DEBUG_INFO)) {
		/* A .debug file whose segments carry no PF_X: still not the executable's. */
		for (size_t i = 0; i < info.n_segments; i++)
			if (info.segments[i].filesz == 0 && info.segments[i].memsz > 0)
				info.flags |= SYM_SEGMENTS_FROM_DEBUG;
	}

	const void *id = NULL;
	ssize_t id_len = dwelf_elf_gnu_build_id(elf, &id);
	if (id_len > 0 && id) {
		if (id_len > SYM_BUILD_ID_MAX)
			return err_set(msg, ERR_INVALID,
				       "invalid_elf: build ID of %zd bytes", id_len);
		memcpy(info.build_id, id, (size_t)id_len);
		info.build_id_len = (size_t)id_len;
	}
	*out = info;
	return 0;
}

/* Inspects elf (NULL: libelf refused to open the bytes) and ends it. */
static int inspect(Elf *elf, struct sym_elf_info *out, struct err_msg *msg)
{
	int rc;

	if (!elf)
		return invalid(msg, "open");
	rc = sym__elf_info(elf, out, msg);
	elf_end(elf);
	return rc;
}

int sym_elf_inspect(const void *data, size_t len, struct sym_elf_info *out,
		    struct err_msg *msg)
{
	int rc;

	if (len < EI_NIDENT || memcmp(data, ELFMAG, SELFMAG) != 0)
		return err_set(msg, ERR_INVALID, "invalid_elf: no ELF magic");
	sym__elf_init();
	/* elf_memory may convert in place: give it a private copy. */
	char *copy = malloc(len);
	if (!copy)
		return ERR_NOMEM;
	memcpy(copy, data, len);
	rc = inspect(elf_memory(copy, len), out, msg);
	free(copy);
	return rc;
}

int sym_elf_inspect_file(const char *path, struct sym_elf_info *out,
			 struct err_msg *msg)
{
	int rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	/* Messages name no path: they reach clients that must not learn the
	 * server's directories. */
	if (fd < 0)
		return err_set(msg, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO,
			       "cannot open the file: %s", strerror(errno));
	sym__elf_init();
	rc = inspect(elf_begin(fd, ELF_C_READ_MMAP, NULL), out, msg);
	close(fd);
	return rc;
}

const char *sym_reason_str(enum sym_reason r)
{
	switch (r) {
	case SYM_REASON_OK: return "ok";
	case SYM_REASON_INVALID_ELF: return "invalid_elf";
	case SYM_REASON_NO_SYMBOLS: return "no_symbols";
	case SYM_REASON_NO_DEBUG_INFO: return "no_debug_info";
	case SYM_REASON_BUILD_ID_MISMATCH: return "build_id_mismatch";
	case SYM_REASON_NO_BUILD_ID: return "no_build_id";
	}
	return "unknown";
}

int sym_elf_check(const struct sym_elf_info *info, const uint8_t *want_id,
		  size_t want_len, int need_dwarf, enum sym_reason *reason,
		  struct err_msg *msg)
{
	char have[2 * SYM_BUILD_ID_MAX + 1], want[2 * SYM_BUILD_ID_MAX + 1];

	assert(info && reason);
	if (want_id) {
		if (info->build_id_len == 0) {
			*reason = SYM_REASON_NO_BUILD_ID;
			return err_set(msg, ERR_INVALID,
				       "no_build_id: the file has no GNU build ID note");
		}
		if (want_len > SYM_BUILD_ID_MAX || info->build_id_len != want_len ||
		    memcmp(info->build_id, want_id, want_len) != 0) {
			sym_build_id_hex(info->build_id, info->build_id_len, have);
			sym_build_id_hex(want_id, want_len > SYM_BUILD_ID_MAX ?
					 SYM_BUILD_ID_MAX : want_len, want);
			*reason = SYM_REASON_BUILD_ID_MISMATCH;
			return err_set(msg, ERR_INVALID,
				       "build_id_mismatch: file has %s, expected %s",
				       have, want);
		}
	}
	if (need_dwarf && !(info->flags & SYM_HAS_DEBUG_INFO)) {
		*reason = (info->flags & (SYM_HAS_SYMTAB | SYM_HAS_DYNSYM)) ?
			  SYM_REASON_NO_DEBUG_INFO : SYM_REASON_NO_SYMBOLS;
		return err_set(msg, ERR_INVALID, "%s: the file has no .debug_info",
			       sym_reason_str(*reason));
	}
	if (!(info->flags &
	      (SYM_HAS_DEBUG_INFO | SYM_HAS_SYMTAB | SYM_HAS_DYNSYM | SYM_HAS_GOPCLNTAB))) {
		*reason = SYM_REASON_NO_SYMBOLS;
		return err_set(msg, ERR_INVALID,
			       "no_symbols: no .debug_info, .symtab or .dynsym functions, "
			       "no .gopclntab");
	}
	*reason = SYM_REASON_OK;
	return 0;
}

void sym_build_id_hex(const uint8_t *id, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";

	assert(len <= SYM_BUILD_ID_MAX && (id || len == 0) && out);
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * len] = '\0';
}


int sym_build_id_parse(const char *hex, uint8_t *out, size_t *len)
{
	size_t n = strlen(hex);
	uint8_t tmp[SYM_BUILD_ID_MAX];

	if (n == 0 || n % 2 || n / 2 > SYM_BUILD_ID_MAX)
		return ERR_INVALID;
	for (size_t i = 0; i < n / 2; i++) {
		int h = hex_digit(hex[2 * i]), l = hex_digit(hex[2 * i + 1]);
		if (h < 0 || l < 0)
			return ERR_INVALID;
		tmp[i] = (uint8_t)(h << 4 | l);
	}
	memcpy(out, tmp, n / 2);
	*len = n / 2;
	return 0;
}

int sym_addr_to_vaddr(const struct sym_elf_info *info, uint64_t file_offset,
		      unsigned flags, uint64_t *vaddr)
{
	const struct sym_segment *best = NULL;

	assert(info && vaddr && info->n_segments <= SYM_MAX_SEGMENTS);
	if (info->flags & SYM_SEGMENTS_FROM_DEBUG)
		return ERR_INVALID;
	for (size_t i = 0; i < info->n_segments && i < SYM_MAX_SEGMENTS; i++) {
		const struct sym_segment *s = &info->segments[i];
		if (file_offset < s->offset || file_offset - s->offset >= s->filesz)
			continue;
		/* Segments may share a page: prefer the executable one. */
		if (!best || ((s->flags & PF_X) && !(best->flags & PF_X)))
			best = s;
	}
	if (!best)
		return ERR_NOT_FOUND;
	uint64_t v = file_offset - best->offset + best->vaddr;
	if ((flags & SYM_ADDR_RETURN) && v > 0)
		v--;
	*vaddr = v;
	return 0;
}
