/*
 * elf.c - inspection of ELF files from untrusted sources (uploads,
 * debuginfod): build ID, segments, which symbol and debug sections exist,
 * and the file-offset to virtual-address mapping of profiles.
 *
 * libelf does the parsing and bounds-checks section and segment tables
 * against the file size; we check every count and string it hands back.
 */
#include <assert.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hex.h"
#include "base/err.h"
#include "symbolize/symbolize_int.h"

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
	if ((rc = check_extent(elf, &eh, msg)))
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
	Elf *elf = elf_memory(copy, len);
	if (!elf) {
		rc = invalid(msg, "open");
		goto out;
	}
	rc = sym__elf_info(elf, out, msg);
	elf_end(elf);
out:
	free(copy);
	return rc;
}

int sym_elf_inspect_file(const char *path, struct sym_elf_info *out,
			 struct err_msg *msg)
{
	int rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return err_set(msg, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO,
			       "%s: %s", path, strerror(errno));
	sym__elf_init();
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		rc = invalid(msg, path);
		goto out;
	}
	rc = sym__elf_info(elf, out, msg);
	elf_end(elf);
out:
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
	if (!(info->flags & (SYM_HAS_DEBUG_INFO | SYM_HAS_SYMTAB | SYM_HAS_DYNSYM))) {
		*reason = SYM_REASON_NO_SYMBOLS;
		return err_set(msg, ERR_INVALID,
			       "no_symbols: no .debug_info, .symtab or .dynsym functions");
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
