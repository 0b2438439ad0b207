/*
 * fuzz_elf.c - libFuzzer target for ELF/DWARF uploads: the bytes go
 * through inspection, the DWARF resolver (a few lookups, as leaves and as
 * callers), PLT names, the index writer and the index reader, with memory
 * caps as the server would set them.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "symbolize/symbolize.h"

static void probe_index(struct sym_dwarf *d, const uint64_t *addrs, size_t n)
{
	struct buf b;
	struct sym_index *x = NULL;
	struct sym_frame f[SYM_MAX_FRAMES];
	size_t k;

	buf_init(&b, 16u << 20);
	if (sym_index_build_buf(d, &b, NULL, NULL) == 0 &&
	    sym_index_open_mem(b.data, b.len, NULL, 0, &x, NULL) == 0) {
		for (size_t i = 0; i < n; i++) {
			sym_index_lookup(x, addrs[i], f, SYM_MAX_FRAMES, &k);
			sym_index_lookup_caller(x, addrs[i], f, SYM_MAX_FRAMES, &k);
		}
		sym_index_close(x);
	}
	buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_elf_info info;
	struct sym_dwarf *d = NULL;
	struct sym_dwarf_opts opts = { .max_memory = 64u << 20 };
	struct sym_frame f[SYM_MAX_FRAMES];
	uint64_t addrs[64];
	size_t n = 0, k;

	if (sym_elf_inspect(data, size, &info, NULL) != 0)
		return 0;
	if (sym_dwarf_open_mem(data, size, &opts, &d, NULL) != 0)
		return 0;
	/* Probe the start, middle and end of every segment, and file offsets. */
	for (size_t i = 0; i < info.n_segments && n + 4 <= 64; i++) {
		const struct sym_segment *s = &info.segments[i];
		addrs[n++] = s->vaddr;
		addrs[n++] = s->vaddr + s->memsz / 2;
		addrs[n++] = s->vaddr + (s->memsz ? s->memsz - 1 : 0);
		uint64_t v;
		if (sym_addr_to_vaddr(&info, s->offset + s->filesz / 3, SYM_ADDR_RETURN, &v) == 0)
			addrs[n++] = v;
	}
	for (size_t i = 0; i < n; i++) {
		sym_dwarf_lookup(d, addrs[i], f, SYM_MAX_FRAMES, &k);
		sym_dwarf_lookup_caller(d, addrs[i], f, SYM_MAX_FRAMES, &k);
	}
	probe_index(d, addrs, n);
	sym_dwarf_close(d);
	return 0;
}
