/* elf_buildid.c - GNU build-ID notes of ELF32/ELF64 files, native byte order. */
#include "tests/tools/elf_buildid.h"

#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"

#define MAX_NOTE_BYTES (1u << 20)
#define MAX_HEADERS 65535u

/* A section or segment that may hold notes, in a class-independent form. */
struct region {
	uint64_t off, size;
};

static int read_at(int fd, uint64_t size, uint64_t off, uint64_t len, void *dst)
{
	ssize_t n;

	if (off > size || len > size - off)
		return ERR_INVALID;
	n = pread(fd, dst, len, (off_t)off);
	return n == (ssize_t)len ? 0 : ERR_IO;
}

/* Scans the notes in `p[0..n)` for NT_GNU_BUILD_ID with owner "GNU". */
static int scan_notes(const unsigned char *p, size_t n, char *hex, size_t hex_size)
{
	size_t pos = 0;

	while (n - pos >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_pad, desc_pad;

		memcpy(&namesz, p + pos, 4);
		memcpy(&descsz, p + pos + 4, 4);
		memcpy(&type, p + pos + 8, 4);
		pos += 12;
		name_pad = ((size_t)namesz + 3) & ~(size_t)3;
		desc_pad = ((size_t)descsz + 3) & ~(size_t)3;
		if (name_pad > n - pos || desc_pad > n - pos - name_pad)
			return ERR_INVALID;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(p + pos, "GNU", 4) == 0) {
			const unsigned char *d = p + pos + name_pad;
			size_t i;
			if (descsz == 0 || (size_t)descsz * 2 + 1 > hex_size)
				return ERR_INVALID;
			for (i = 0; i < descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", d[i]);
			return 0;
		}
		pos += name_pad + desc_pad;
	}
	return ERR_NOT_FOUND;
}

static int scan_region(int fd, uint64_t size, struct region r, char *hex, size_t hex_size)
{
	unsigned char *p;
	int rc;

	if (r.size == 0 || r.size > MAX_NOTE_BYTES)
		return ERR_NOT_FOUND;
	p = malloc(r.size);
	if (!p)
		return ERR_NOMEM;
	rc = read_at(fd, size, r.off, r.size, p);
	if (rc == 0)
		rc = scan_notes(p, r.size, hex, hex_size);
	free(p);
	return rc;
}

/* Collects the note regions of the file: sections first, then segments. */
static int note_regions(int fd, uint64_t size, const unsigned char *ident,
			struct region **out, size_t *n_out)
{
	int is64 = ident[EI_CLASS] == ELFCLASS64;
	uint64_t shoff, phoff;
	unsigned shnum, phnum, shentsize, phentsize, i;
	struct region *r;
	size_t n = 0;
	int rc = 0;

	if (is64) {
		Elf64_Ehdr eh;
		if ((rc = read_at(fd, size, 0, sizeof(eh), &eh)))
			return rc;
		shoff = eh.e_shoff, shnum = eh.e_shnum, shentsize = eh.e_shentsize;
		phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
		if ((shnum && shentsize != sizeof(Elf64_Shdr)) || (phnum && phentsize != sizeof(Elf64_Phdr)))
			return ERR_INVALID;
	} else {
		Elf32_Ehdr eh;
		if ((rc = read_at(fd, size, 0, sizeof(eh), &eh)))
			return rc;
		shoff = eh.e_shoff, shnum = eh.e_shnum, shentsize = eh.e_shentsize;
		phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
		if ((shnum && shentsize != sizeof(Elf32_Shdr)) || (phnum && phentsize != sizeof(Elf32_Phdr)))
			return ERR_INVALID;
	}
	if (shnum > MAX_HEADERS || phnum > MAX_HEADERS)
		return ERR_INVALID;
	r = calloc((size_t)shnum + phnum + 1, sizeof(*r));
	if (!r)
		return ERR_NOMEM;
	for (i = 0; i < shnum && rc == 0; i++) {
		uint64_t off = shoff + (uint64_t)i * shentsize;
		if (is64) {
			Elf64_Shdr sh;
			if (!(rc = read_at(fd, size, off, sizeof(sh), &sh)) && sh.sh_type == SHT_NOTE)
				r[n++] = (struct region){ sh.sh_offset, sh.sh_size };
		} else {
			Elf32_Shdr sh;
			if (!(rc = read_at(fd, size, off, sizeof(sh), &sh)) && sh.sh_type == SHT_NOTE)
				r[n++] = (struct region){ sh.sh_offset, sh.sh_size };
		}
	}
	for (i = 0; i < phnum && rc == 0; i++) {
		uint64_t off = phoff + (uint64_t)i * phentsize;
		if (is64) {
			Elf64_Phdr ph;
			if (!(rc = read_at(fd, size, off, sizeof(ph), &ph)) && ph.p_type == PT_NOTE)
				r[n++] = (struct region){ ph.p_offset, ph.p_filesz };
		} else {
			Elf32_Phdr ph;
			if (!(rc = read_at(fd, size, off, sizeof(ph), &ph)) && ph.p_type == PT_NOTE)
				r[n++] = (struct region){ ph.p_offset, ph.p_filesz };
		}
	}
	if (rc) {
		free(r);
		return rc;
	}
	*out = r;
	*n_out = n;
	return 0;
}

int elf_build_id(const char *path, char *hex, size_t hex_size)
{
	unsigned char ident[EI_NIDENT];
	struct region *r = NULL;
	size_t n = 0, i;
	struct stat sb;
	uint64_t size;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ERR_IO;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		rc = ERR_INVALID;
		goto out;
	}
	size = (uint64_t)sb.st_size;
	if ((rc = read_at(fd, size, 0, sizeof(ident), ident)))
		goto out;
	if (memcmp(ident, ELFMAG, SELFMAG) != 0 ||
	    (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64) ||
	    ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB)) {
		rc = ERR_INVALID;
		goto out;
	}
	if ((rc = note_regions(fd, size, ident, &r, &n)))
		goto out;
	rc = ERR_NOT_FOUND;
	for (i = 0; i < n && rc == ERR_NOT_FOUND; i++) {
		rc = scan_region(fd, size, r[i], hex, hex_size);
		if (rc == ERR_INVALID)
			rc = ERR_NOT_FOUND; /* a bad note section; try the others */
	}
out:
	free(r);
	close(fd);
	return rc;
}
