/*
 * elf_buildid.h - reads the GNU build ID of an ELF file from its
 * .note.gnu.build-id (any SHT_NOTE section, else any PT_NOTE segment),
 * parsing the headers with <elf.h> and bounds checks on every offset.
 */
#ifndef UNHEX_TESTS_TOOLS_ELF_BUILDID_H
#define UNHEX_TESTS_TOOLS_ELF_BUILDID_H

#include <stddef.h>

/*
 * Writes the build ID of `path` as lower-case hex into hex (at least 129
 * bytes).  Returns 0, ERR_NOT_FOUND (no note), ERR_INVALID (not a native
 * ELF file or malformed headers) or ERR_IO.
 */
int elf_build_id(const char *path, char *hex, size_t hex_size);

#endif
