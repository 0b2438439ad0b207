/*
 * normalize.c - mapping identity and address normalization.
 *
 * pprof locations carry runtime addresses: where the instruction was in one
 * process.  The same binary loaded at another address (ASLR, PIE, shared
 * libraries) gives other numbers for the same instruction.  Storing
 *
 *     stored = address - memory_start + file_offset
 *
 * (the instruction's offset in the mapped file) makes one location of the
 * instruction across every process, and is what the symbolizer turns into
 * an ELF virtual address with the file's PT_LOAD headers (google/pprof
 * elfexec.GetBase does the same arithmetic).
 *
 * A "fake" mapping that covers the whole address space (start 0, limit 0
 * or ~0, as Go emits for unknown code and some agents for kernels) says the
 * addresses are already final: they are kept.  Address 0 means "none"
 * (symbolized Java/Python frames) and is kept too.
 */
#include "ingest_int.h"

#include "base/arena.h"
#include "base/err.h"

#include <string.h>

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return 0;
	}
	return 1;
}

int ingest__build_id(struct arena *a, const char *bid, const char **out)
{
	size_t n = strlen(bid);
	char *p;

	if (n > INGEST_MAX_BUILD_ID)
		return ERR_INVALID;
	p = arena_strndup(a, bid, n);
	if (!p)
		return arena_failed(a);
	if (is_hex(p, n)) {
		for (size_t i = 0; i < n; i++)
			if (p[i] >= 'A' && p[i] <= 'F')
				p[i] = (char)(p[i] - 'A' + 'a');
	}
	*out = p;
	return 0;
}

int ingest__mapping_is_fake(uint64_t memory_start, uint64_t memory_limit,
			    uint64_t file_offset)
{
	return memory_start == 0 && file_offset == 0 &&
	       (memory_limit == 0 || memory_limit == UINT64_MAX);
}

int ingest__normalize_address(uint64_t addr, uint64_t memory_start, uint64_t memory_limit,
			      uint64_t file_offset, uint64_t *out)
{
	uint64_t off;

	if (addr == 0 || ingest__mapping_is_fake(memory_start, memory_limit, file_offset)) {
		*out = addr;
		return 0;
	}
	if (addr < memory_start)
		return ERR_INVALID;
	off = addr - memory_start;
	if (off > UINT64_MAX - file_offset)
		return ERR_INVALID;
	*out = off + file_offset;
	return 0;
}
