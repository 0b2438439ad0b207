/*
 * gopclntab.c - naming Go frames from the executable alone: Go's own
 * function table, .gopclntab, which the Go linker writes into every
 * binary (the runtime needs it for tracebacks) and which `strip` and
 * `-ldflags=-s -w` leave in place.  Functions, files, lines and inlined
 * calls, without DWARF.  symbolize_int.h documents the layouts read here
 * (Go 1.18 and 1.19, and 1.20 onwards); every read is checked against the
 * end of the bytes it reads, since the file is an upload.
 *
 * A lookup finds the function (a binary search of the function table),
 * decodes its pc-value tables once (file, line, inline-tree index; the
 * last function decoded is kept), and walks the inline tree the way Go's
 * runtime does: the frame at pc is the inlined callee the tree names at
 * pc (or the function itself), with the file and line the tables give at
 * pc; its caller's frame is found at the entry + parentPc of that tree
 * entry, an instruction whose position is the call site.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "symbolize_int.h"

#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u
#define MAGIC_116 0xfffffffau
#define MAGIC_12 0xfffffffbu

/* Bytes of a moduledata we read: up to gofunc, word 38 (1.18) or 40 (1.20+). */
#define MD_WORDS_118 39
#define MD_WORDS_120 41

static const char *const tab_names[] = { ".gopclntab", ".data.rel.ro.gopclntab" };

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le_word(const uint8_t *p, unsigned ptrsize)
{
	return ptrsize == 4 ? le32(p) : (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int corrupt(struct err_msg *msg, const char *what)
{
	return err_set(msg, ERR_INVALID, "invalid .gopclntab: %s", what);
}

/* The u32 at byte `off` of the table, or 0 with *ok cleared past its end. */
static uint32_t tab32(const struct sym_gopcln *g, uint64_t off, int *ok)
{
	if (off > g->tab_len || g->tab_len - off < 4) {
		*ok = 0;
		return 0;
	}
	return le32(g->tab + off);
}

/* The NUL-terminated string at byte `off` of the table, interned; NULL if none. */
static const char *tab_str(struct sym_gopcln *g, uint64_t off)
{
	size_t room;
	const uint8_t *nul;

	if (off >= g->tab_len)
		return NULL;
	room = g->tab_len - (size_t)off;
	if (room > SYM__MAX_NAME)
		room = SYM__MAX_NAME;
	nul = memchr(g->tab + off, '\0', room);
	if (!nul || nul == g->tab + off)
		return NULL;
	return sym__intern(&g->strings, (const char *)g->tab + off, (size_t)(nul - g->tab - off));
}

/* ---- the header and the function table ---- */

static int parse_header(struct sym_gopcln *g, struct err_msg *msg)
{
	uint32_t magic;
	unsigned p;
	uint64_t nfunc, off[5], text;

	if (g->tab_len < 8)
		return corrupt(msg, "shorter than its header");
	magic = le32(g->tab);
	if (magic == MAGIC_116 || magic == MAGIC_12)
		return err_set(msg, ERR_INVALID,
			       "unsupported .gopclntab: the layout of Go %s (magic 0x%08x); "
			       "Go 1.18 and newer are supported",
			       magic == MAGIC_116 ? "1.16 and 1.17" : "1.2 to 1.15", magic);
	if (magic != MAGIC_118 && magic != MAGIC_120)
		return corrupt(msg, "unknown magic");
	g->version = magic == MAGIC_118 ? 118 : 120;
	p = g->tab[7];
	g->quantum = g->tab[6];
	if (g->tab[4] || g->tab[5] || (p != 4 && p != 8) ||
	    (g->quantum != 1 && g->quantum != 2 && g->quantum != 4))
		return corrupt(msg, "bad header fields");
	g->ptrsize = p;
	if (g->tab_len < 8 + 8 * (size_t)p)
		return corrupt(msg, "shorter than its header");
	nfunc = le_word(g->tab + 8, p);
	text = le_word(g->tab + 8 + 2 * p, p);
	for (int i = 0; i < 5; i++) {
		off[i] = le_word(g->tab + 8 + (3 + (unsigned)i) * p, p);
		if (off[i] > g->tab_len)
			return corrupt(msg, "a table starts past the section's end");
	}
	if (nfunc == 0 || nfunc > SYM_GOPCLN_MAX_FUNCS)
		return err_set(msg, nfunc ? ERR_TOO_LARGE : ERR_INVALID,
			       "invalid .gopclntab: %llu functions (1..%u)",
			       (unsigned long long)nfunc, SYM_GOPCLN_MAX_FUNCS);
	g->nfunc = (uint32_t)nfunc;
	if (text)
		g->text = text;
	/* Entries are u32 offsets from text: keep text + 4 GiB from wrapping. */
	if (g->text > UINT64_MAX - UINT32_MAX)
		return corrupt(msg, "the text address is out of range");
	g->funcname_off = off[0];
	g->cu_off = off[1];
	g->file_off = off[2];
	g->pc_off = off[3];
	g->ln_off = off[4];
	/* The function table: nfunc + 1 (entry offset, record offset) pairs. */
	if ((g->tab_len - g->ln_off) / 8 < (uint64_t)g->nfunc + 1)
		return corrupt(msg, "the function table runs past the section's end");
	for (uint32_t i = 0; i < g->nfunc; i++)
		if (le32(g->tab + g->ln_off + 8 * (uint64_t)i) >
		    le32(g->tab + g->ln_off + 8 * ((uint64_t)i + 1)))
			return corrupt(msg, "the function table is not sorted");
	return 0;
}

static uint32_t ftab_entry(const struct sym_gopcln *g, uint32_t i)
{
	return le32(g->tab + g->ln_off + 8 * (uint64_t)i);
}

/* ---- pc-value tables ---- */

/* Reads a varint of at most 5 bytes at *p (below end); 0, or -1 past end. */
static int varint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t r = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

/*
 * Decodes the pc-value table at pctab + `off` of a function at [entry,
 * end) into *t: rows (end of the pc range, value), ranges increasing.
 * Table offset 0 means no table (no rows: every value is -1).  Rows past
 * the function's end are not kept.
 */
static int pct_decode(struct sym_gopcln *g, uint32_t off, uint64_t entry, uint64_t end,
		      struct sym__pctab *t)
{
	const uint8_t *p, *lim = g->tab + g->tab_len;
	uint64_t pc = entry;
	int32_t val = -1;
	unsigned empty = 0;
	int rc;

	t->n = 0;
	if (off == 0)
		return 0;
	if ((uint64_t)off >= g->tab_len - g->pc_off)
		return ERR_INVALID;
	p = g->tab + g->pc_off + off;
	while (pc < end) {
		uint32_t uv, pd;

		if (varint(&p, lim, &uv))
			return ERR_INVALID;
		if (uv == 0 && pc != entry)
			break;
		/* Zig-zag delta, wrapping in 32 bits as Go's int32 does. */
		val = (int32_t)((uint32_t)val + (-(uv & 1) ^ (uv >> 1)));
		if (varint(&p, lim, &pd))
			return ERR_INVALID;
		/* Go's linker never writes a pair that covers no code: a table of
		 * them would cost rows (and time, per function) for nothing. */
		if (pd == 0 && ++empty > SYM_GOPCLN_MAX_EMPTY)
			return ERR_INVALID;
		pc += (uint64_t)pd * g->quantum;
		if (t->n >= SYM_GOPCLN_MAX_ROWS)
			return ERR_TOO_LARGE;
		if ((rc = GROW(t->rows, t->cap, t->n + 1, SYM_GOPCLN_MAX_ROWS, &g->budget.alloc)))
			return rc;
		t->rows[t->n].end = pc < end ? pc : end;
		t->rows[t->n++].val = val;
	}
	return 0;
}

/* The value of a decoded table at pc (in its function), -1 if none. */
static int32_t pct_value(const struct sym__pctab *t, uint64_t pc)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->rows[mid].end > pc)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < t->n ? t->rows[lo].val : -1;
}

/* ---- functions ---- */

/* The function index whose [entry, next entry) holds pc; -1 if none. */
static int64_t find_func(const struct sym_gopcln *g, uint64_t pc)
{
	uint64_t off;
	uint32_t lo = 0, hi = g->nfunc;

	if (pc < g->text || pc - g->text >= ftab_entry(g, g->nfunc))
		return -1;
	off = pc - g->text;
	while (hi - lo > 1) { /* ftab_entry(lo) <= off < ftab_entry(hi) */
		uint32_t mid = lo + (hi - lo) / 2;
		if (ftab_entry(g, mid) <= off)
			lo = mid;
		else
			hi = mid;
	}
	return ftab_entry(g, lo) <= off ? (int64_t)lo : -1;
}

/* Decodes function i into g->fn (kept until another one is loaded). */
static int load_func(struct sym_gopcln *g, uint32_t i)
{
	struct sym__gofunc *f = &g->fn;
	uint64_t rec, fsz = g->version == 118 ? 40 : 44;
	uint32_t pcfile, pcln, npcdata, nfuncdata, pcinl = 0, inloff = SYM_NONE;
	int ok = 1, rc;

	if (f->idx == i)
		return f->bad ? ERR_INVALID : 0;
	f->idx = i;
	f->bad = 1;
	f->file.n = f->line.n = f->inl.n = 0;
	f->inltree = NULL;
	f->entry = g->text + ftab_entry(g, i);
	f->end = g->text + ftab_entry(g, i + 1);
	rec = g->ln_off + (uint64_t)tab32(g, g->ln_off + 8 * (uint64_t)i + 4, &ok);
	f->nameoff = tab32(g, rec + 4, &ok);
	pcfile = tab32(g, rec + 20, &ok);
	pcln = tab32(g, rec + 24, &ok);
	npcdata = tab32(g, rec + 28, &ok);
	f->cuoff = tab32(g, rec + 32, &ok);
	nfuncdata = tab32(g, rec + fsz - 4, &ok) >> 24;
	if (!ok || npcdata > SYM_GOPCLN_MAX_PCDATA)
		return ERR_INVALID;
	if (npcdata > 2)
		pcinl = tab32(g, rec + fsz + 4 * 2, &ok);
	if (nfuncdata > 3)
		inloff = tab32(g, rec + fsz + 4 * (uint64_t)npcdata + 4 * 3, &ok);
	if (!ok)
		return ERR_INVALID;
	if ((rc = pct_decode(g, pcln, f->entry, f->end, &f->line)))
		return rc;
	/* The line table ends where the code ends: what follows up to the
	 * next function is alignment padding, where nothing is known. */
	if (f->line.n && f->line.rows[f->line.n - 1].end < f->end)
		f->end = f->line.rows[f->line.n - 1].end;
	if ((rc = pct_decode(g, pcfile, f->entry, f->end, &f->file)))
		return rc;
	if (g->gofunc && inloff != SYM_NONE && inloff < g->gofunc_len) {
		if ((rc = pct_decode(g, pcinl, f->entry, f->end, &f->inl)))
			return rc;
		f->inltree = g->gofunc + inloff;
		f->inltree_len = g->gofunc_len - inloff;
	}
	f->bad = 0;
	return 0;
}

/* The file of the function's compile unit numbered `fileno`, or NULL. */
static const char *file_name(struct sym_gopcln *g, int32_t fileno)
{
	uint64_t at;
	uint32_t off;
	int ok = 1;

	if (fileno < 0)
		return NULL;
	at = g->cu_off + 4 * ((uint64_t)g->fn.cuoff + (uint32_t)fileno);
	off = tab32(g, at, &ok);
	if (!ok || off == SYM_NONE)
		return NULL;
	return tab_str(g, g->file_off + off);
}

/* Tree entry ix of the current function: its name offset and parentPc, or -1. */
static int inl_entry(const struct sym_gopcln *g, int32_t ix, uint32_t *nameoff, uint32_t *ppc)
{
	size_t sz = g->version == 118 ? 20 : 16, at;
	const struct sym__gofunc *f = &g->fn;

	if (ix < 0 || !f->inltree || (size_t)ix >= f->inltree_len / sz)
		return -1;
	at = (size_t)ix * sz;
	*nameoff = le32(f->inltree + at + (g->version == 118 ? 12 : 4));
	*ppc = le32(f->inltree + at + (g->version == 118 ? 16 : 8));
	return 0;
}

int sym_gopcln_lookup(struct sym_gopcln *g, uint64_t vaddr, struct sym_frame *frames,
		      size_t max, size_t *n)
{
	int64_t i = find_func(g, vaddr);
	uint64_t pc = vaddr;
	size_t k = 0;
	int rc;

	*n = 0;
	if (i < 0 || max == 0)
		return 0;
	if ((rc = load_func(g, (uint32_t)i)))
		return rc == ERR_INVALID ? 0 : rc; /* a damaged record names nothing */
	if (vaddr >= g->fn.end)
		return 0;
	for (;;) {
		int32_t fileno = pct_value(&g->fn.file, pc), line = pct_value(&g->fn.line, pc);
		uint32_t nameoff = g->fn.nameoff, ppc = 0;
		int inl = k + 1 < max &&
			  inl_entry(g, pct_value(&g->fn.inl, pc), &nameoff, &ppc) == 0 &&
			  ppc < g->fn.end - g->fn.entry;
		struct sym_frame *f = &frames[k++];

		if (!inl)
			nameoff = g->fn.nameoff;
		f->function = tab_str(g, g->funcname_off + nameoff);
		f->file = file_name(g, fileno);
		f->line = line > 0 ? (uint32_t)line : 0;
		f->column = 0;
		f->flags = inl ? SYM_FRAME_INLINED : 0;
		if (!inl)
			break;
		pc = g->fn.entry + ppc;
	}
	*n = k;
	return 0;
}

static int lookup_fn(void *ctx, uint64_t vaddr, struct sym_frame *frames, size_t max, size_t *n)
{
	return sym_gopcln_lookup(ctx, vaddr, frames, max, n);
}

int sym_gopcln_lookup_caller(struct sym_gopcln *g, uint64_t ret, struct sym_frame *frames,
			     size_t max, size_t *n)
{
	return sym__lookup_caller(lookup_fn, g, ret, frames, max, n);
}

/* ---- opening ---- */

static void init_handle(struct sym_gopcln *g, size_t max_memory)
{
	memset(g, 0, sizeof(*g));
	g->fd = -1;
	g->fn.idx = SYM_NONE;
	grow_budget_init(&g->budget, max_memory ? max_memory : SYM_GOPCLN_DEFAULT_MEM);
	intern_init(&g->strings, HMAP_MAX, g->budget.cap, &g->budget.alloc);
}

int sym__gopcln_open_tables(const uint8_t *tab, size_t tab_len, uint64_t text,
			    const uint8_t *gofunc, size_t gofunc_len, size_t max_memory,
			    struct sym_gopcln **out, struct err_msg *msg)
{
	struct sym_gopcln *g = malloc(sizeof(*g));
	int rc;

	if (!g)
		return ERR_NOMEM;
	init_handle(g, max_memory);
	g->tab = tab;
	g->tab_len = tab_len;
	g->text = text;
	g->gofunc = gofunc;
	g->gofunc_len = gofunc ? gofunc_len : 0;
	if ((rc = parse_header(g, msg))) {
		sym_gopcln_close(g);
		return rc;
	}
	*out = g;
	return 0;
}

/* The bytes of a section (PROGBITS only), or NULL. */
static const uint8_t *scn_bytes(Elf_Scn *scn, const GElf_Shdr *sh, size_t *len)
{
	Elf_Data *d;

	if (sh->sh_type != SHT_PROGBITS || (sh->sh_flags & SHF_COMPRESSED))
		return NULL;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size != sh->sh_size)
		return NULL;
	*len = d->d_size;
	return d->d_buf;
}

struct elf_tabs {
	const uint8_t *tab;
	size_t tab_len;
	uint64_t tab_addr, text;
};

static int find_tables(Elf *elf, struct elf_tabs *t, struct err_msg *msg)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	memset(t, 0, sizeof(*t));
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return err_set(msg, ERR_INVALID, "invalid_elf: no section names");
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		size_t len = 0;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".text") && sh.sh_type == SHT_PROGBITS)
			t->text = sh.sh_addr;
		for (size_t i = 0; i < sizeof(tab_names) / sizeof(tab_names[0]); i++) {
			const uint8_t *b;
			if (!t->tab && !strcmp(name, tab_names[i]) && (b = scn_bytes(scn, &sh, &len))) {
				t->tab = b;
				t->tab_len = len;
				t->tab_addr = sh.sh_addr;
			}
		}
	}
	if (!t->tab)
		return err_set(msg, ERR_NOT_FOUND, "no .gopclntab: not a Go executable");
	return 0;
}

/* A RELATIVE relocation of a PIE: the loader writes base + addend at off. */
struct rel {
	uint64_t off, addend;
};

static int rel_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct rel *)a)->off, y = ((const struct rel *)b)->off;
	return x < y ? -1 : x > y;
}

static int is_relative(int machine, uint64_t type)
{
	return (machine == EM_X86_64 && type == R_X86_64_RELATIVE) ||
	       (machine == EM_AARCH64 && type == R_AARCH64_RELATIVE) ||
	       (machine == EM_RISCV && type == R_RISCV_RELATIVE) ||
	       (machine == EM_PPC64 && type == R_PPC64_RELATIVE);
}

/* Every RELATIVE relocation with an addend (RELA sections), sorted by offset. */
static int load_relative(struct sym_gopcln *g, Elf *elf, struct rel **v, size_t *n, size_t *cap)
{
	Elf_Scn *scn = NULL;
	int rc;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;

			if (!gelf_getrela(d, (int)i, &r))
				break;
			if (!is_relative(g->info.machine, GELF_R_TYPE(r.r_info)))
				continue;
			if ((rc = GROW(*v, *cap, *n + 1, SYM_GOPCLN_MAX_RELOCS, &g->budget.alloc)))
				return rc;
			(*v)[(*n)++] = (struct rel){ r.r_offset, (uint64_t)r.r_addend };
		}
	}
	if (*n > 1)
		qsort(*v, *n, sizeof(**v), rel_cmp);
	return 0;
}

/* The word at `addr` as loaded: a relocation's value, else the file's bytes. */
static int word_at(Elf *elf, const struct rel *v, size_t n, uint64_t addr, unsigned p,
		   uint64_t *out)
{
	struct rel key = { addr, 0 };
	const struct rel *r = n ? bsearch(&key, v, n, sizeof(*v), rel_cmp) : NULL;
	Elf_Scn *scn = NULL;

	if (r) {
		*out = r->addend;
		return 0;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const uint8_t *b;
		size_t len = 0;

		if (!gelf_getshdr(scn, &sh) || addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size ||
		    !(b = scn_bytes(scn, &sh, &len)) || len - (addr - sh.sh_addr) < p)
			continue;
		*out = le_word(b + (addr - sh.sh_addr), p);
		return 0;
	}
	return -1;
}

/* Whether w, words 0, 1, 4 and 22 of a moduledata, are this table's. */
static int is_moduledata(const struct sym_gopcln *g, const uint64_t w[4], uint64_t tab_addr)
{
	return w[0] == tab_addr && w[1] == tab_addr + g->funcname_off &&
	       w[2] == tab_addr + g->cu_off && w[3] == g->text;
}

/* moduledata.gofunc of a PIE, whose pointers are relocations. */
static uint64_t pie_gofunc(Elf *elf, struct sym_gopcln *g, uint64_t tab_addr)
{
	unsigned p = g->ptrsize, words = g->version == 118 ? MD_WORDS_118 : MD_WORDS_120;
	struct rel *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t gofunc = 0;

	if (!load_relative(g, elf, &v, &n, &cap)) {
		for (size_t i = 0; i < n && !gofunc; i++) {
			uint64_t m = v[i].off, w[4], f;

			if (v[i].addend != tab_addr || word_at(elf, v, n, m, p, &w[0]) ||
			    word_at(elf, v, n, m + p, p, &w[1]) ||
			    word_at(elf, v, n, m + 4 * p, p, &w[2]) ||
			    word_at(elf, v, n, m + 22 * p, p, &w[3]) || !is_moduledata(g, w, tab_addr) ||
			    word_at(elf, v, n, m + ((uint64_t)words - 1) * p, p, &f))
				continue;
			gofunc = f;
		}
	}
	grow_free(&g->budget.alloc, v, cap, sizeof(*v));
	return gofunc;
}

/*
 * Where the inline trees are: moduledata.gofunc, the base of every
 * function's FUNCDATA offsets.  moduledata is in the writable data (found
 * as the word that points at the table and is followed by the table's own
 * offsets; in a PIE those words are relocations); gofunc points into a
 * read-only section.  Without it (a layout not known), frames carry no
 * inlined calls.
 */
static void find_gofunc(Elf *elf, struct sym_gopcln *g, uint64_t tab_addr)
{
	unsigned p = g->ptrsize, words = g->version == 118 ? MD_WORDS_118 : MD_WORDS_120;
	uint64_t gofunc = 0;
	Elf_Scn *scn = NULL;

	while (!gofunc && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const uint8_t *b;
		size_t len = 0;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_WRITE) ||
		    !(b = scn_bytes(scn, &sh, &len)) || len < (size_t)words * p)
			continue;
		for (size_t at = 0; at + (size_t)words * p <= len; at += p) {
			const uint8_t *m = b + at;
			uint64_t w[4] = { le_word(m, p), le_word(m + p, p), le_word(m + 4 * p, p),
					  le_word(m + 22 * p, p) };
			if (!is_moduledata(g, w, tab_addr))
				continue;
			gofunc = le_word(m + ((size_t)words - 1) * p, p);
			break;
		}
	}
	if (!gofunc)
		gofunc = pie_gofunc(elf, g, tab_addr);
	scn = NULL;
	while (gofunc && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const uint8_t *b;
		size_t len = 0;

		if (!gelf_getshdr(scn, &sh) || gofunc < sh.sh_addr ||
		    gofunc - sh.sh_addr >= sh.sh_size || !(b = scn_bytes(scn, &sh, &len)))
			continue;
		g->gofunc = b + (gofunc - sh.sh_addr);
		g->gofunc_len = len - (size_t)(gofunc - sh.sh_addr);
		return;
	}
}

static int open_elf(struct sym_gopcln *g, const struct sym_gopcln_opts *o, struct err_msg *msg)
{
	struct elf_tabs t;
	int rc;

	if (!g->elf)
		return err_set(msg, ERR_INVALID, "invalid_elf: %s", elf_errmsg(-1));
	if ((rc = sym__elf_info(g->elf, &g->info, msg)))
		return rc;
	if (o && o->build_id &&
	    (o->build_id_len != g->info.build_id_len ||
	     memcmp(o->build_id, g->info.build_id, o->build_id_len)))
		return err_set(msg, ERR_INVALID, "build_id_mismatch: the file has another build ID");
	if (elf_getident(g->elf, NULL)[EI_DATA] != ELFDATA2LSB)
		return err_set(msg, ERR_INVALID, "unsupported .gopclntab: a big-endian file");
	if ((rc = find_tables(g->elf, &t, msg)))
		return rc;
	g->tab = t.tab;
	g->tab_len = t.tab_len;
	g->text = t.text;
	if ((rc = parse_header(g, msg)))
		return rc;
	find_gofunc(g->elf, g, t.tab_addr);
	return 0;
}

/* A handle over `fd` (taken; -1: none) or else the `len` bytes at `data`. */
static int open_handle(int fd, const void *data, size_t len, const struct sym_gopcln_opts *opts,
		       struct sym_gopcln **out, struct err_msg *msg)
{
	struct sym_gopcln *g = malloc(sizeof(*g));
	int rc;

	if (!g) {
		if (fd >= 0)
			close(fd);
		return ERR_NOMEM;
	}
	init_handle(g, opts ? opts->max_memory : 0);
	sym__elf_init();
	g->fd = fd;
	g->elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : elf_memory((char *)data, len);
	if ((rc = open_elf(g, opts, msg))) {
		sym_gopcln_close(g);
		return rc;
	}
	*out = g;
	return 0;
}

int sym_gopcln_open(const char *path, const struct sym_gopcln_opts *opts,
		    struct sym_gopcln **out, struct err_msg *msg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	return open_handle(fd, NULL, 0, opts, out, msg);
}

int sym_gopcln_open_mem(const void *data, size_t len, const struct sym_gopcln_opts *opts,
			struct sym_gopcln **out, struct err_msg *msg)
{
	return open_handle(-1, data, len, opts, out, msg);
}

void sym_gopcln_close(struct sym_gopcln *g)
{
	if (!g)
		return;
	grow_free(&g->budget.alloc, g->fn.file.rows, g->fn.file.cap, sizeof(*g->fn.file.rows));
	grow_free(&g->budget.alloc, g->fn.line.rows, g->fn.line.cap, sizeof(*g->fn.line.rows));
	grow_free(&g->budget.alloc, g->fn.inl.rows, g->fn.inl.cap, sizeof(*g->fn.inl.rows));
	intern_release(&g->strings);
	if (g->elf)
		elf_end(g->elf);
	if (g->fd >= 0)
		close(g->fd);
	free(g);
}

const struct sym_elf_info *sym_gopcln_info(const struct sym_gopcln *g)
{
	return &g->info;
}

const char *sym_gopcln_layout(const struct sym_gopcln *g)
{
	return g->version == 118 ? "Go 1.18-1.19" : "Go 1.20+";
}

/* ---- the index ---- */

static int push(struct sym_gopcln *g, uint64_t **v, size_t *n, size_t *cap, uint64_t a)
{
	int rc = GROW(*v, *cap, *n + 1, SYM__MAX_ITEMS, &g->budget.alloc);

	if (!rc)
		(*v)[(*n)++] = a;
	return rc;
}

/* Every address where a lookup's answer may change, in increasing order. */
static int boundaries(struct sym_gopcln *g, uint64_t **v, size_t *n, size_t *cap)
{
	int rc = 0;

	for (uint32_t i = 0; i < g->nfunc && !rc; i++) {
		const struct sym__pctab *t[3] = { &g->fn.file, &g->fn.line, &g->fn.inl };

		if (ftab_entry(g, i) == ftab_entry(g, i + 1))
			continue;
		if ((rc = load_func(g, i))) {
			if (rc != ERR_INVALID)
				return rc;
			rc = 0; /* a damaged record: its range names nothing */
		}
		rc = push(g, v, n, cap, g->text + ftab_entry(g, i));
		for (int k = 0; k < 3 && !rc && !g->fn.bad; k++)
			for (size_t r = 0; r < t[k]->n && !rc; r++)
				if (t[k]->rows[r].end < g->fn.end)
					rc = push(g, v, n, cap, t[k]->rows[r].end);
		if (!rc && !g->fn.bad)
			rc = push(g, v, n, cap, g->fn.end);
	}
	if (!rc)
		rc = push(g, v, n, cap, g->text + ftab_entry(g, g->nfunc));
	return rc;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int sym_gopcln_index_buf(struct sym_gopcln *g, struct buf *out, struct sym_index_stats *stats,
			 struct err_msg *msg)
{
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;

	if ((rc = boundaries(g, &v, &n, &cap))) {
		err_set(msg, rc, "decoding .gopclntab: %s", err_str(rc));
		goto out;
	}
	qsort(v, n, sizeof(*v), u64_cmp);
	if (v[n - 1] - v[0] > UINT32_MAX) {
		rc = err_set(msg, ERR_TOO_LARGE, "Go code spans more than 4 GiB");
		goto out;
	}
	rc = sym__index_write_lookup(lookup_fn, g, v, n, g->info.build_id, g->info.build_id_len,
				     &g->budget.alloc, out, stats, msg);
	if (!rc && stats)
		stats->functions = g->nfunc;
out:
	grow_free(&g->budget.alloc, v, cap, sizeof(*v));
	return rc;
}
