/*
 * index.c - the compact per-build-ID index: the writer flattens a whole
 * struct sym_dwarf into ranges -> location chains (format in
 * symbolize_int.h), the reader validates a file and answers lookups with
 * one binary search.
 *
 * The writer evaluates sym_dwarf_lookup() at every boundary of every table
 * the lookup consults (CU, function and inline ranges, symbols, line rows).
 * The lookup is constant between consecutive boundaries, so the index
 * answers exactly what the DWARF resolver answers, at every address.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "symbolize_int.h"

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)v);
	wr32(p + 4, (uint32_t)(v >> 32));
}

/* ==== writer ==== */

struct wloc {
	const char *func, *file;
	uint32_t line, col, parent, flags;
};

/* The writer's tables grow through `alloc`: the handle's budget for a DWARF build. */
struct writer {
	const struct grow_alloc *alloc; /* every table below grows through it */
	const uint8_t *bid;         /* borrowed */
	size_t blen;
	struct wloc *locs;
	size_t n_locs, lcap;
	struct hmap loc_index;      /* loc_hash -> index in locs */
	uint32_t *starts, *rlocs;
	size_t n_ranges, rcap, rcap2;
	struct sym__ptrmap stroff;  /* interned string -> offset + 1 */
	struct buf strtab;
};

static uint64_t loc_hash(const struct wloc *l)
{
	uint64_t h = hash_u64((uintptr_t)l->func);
	h = hash_combine(h, (uintptr_t)l->file);
	h = hash_combine(h, (uint64_t)l->line << 32 | l->col);
	return hash_combine(h, (uint64_t)l->parent << 32 | l->flags);
}

static int loc_eq(const struct wloc *a, const struct wloc *b)
{
	return a->func == b->func && a->file == b->file && a->line == b->line &&
	       a->col == b->col && a->parent == b->parent && a->flags == b->flags;
}

/* Sets *out to the index of location `l`, adding it if new. */
static int intern_loc(struct writer *w, const struct wloc *l, uint32_t *out)
{
	struct hmap_probe pr;
	uint32_t i;
	int rc;

	for (i = hmap_first(&w->loc_index, loc_hash(l), &pr); i != HMAP_NONE;
	     i = hmap_next(&w->loc_index, &pr)) {
		if (loc_eq(&w->locs[i], l)) {
			*out = i;
			return 0;
		}
	}
	if ((rc = GROW(w->locs, w->lcap, w->n_locs + 1, SYM__MAX_ITEMS, w->alloc)) ||
	    (rc = hmap_put_probed(&w->loc_index, &pr, (uint32_t)w->n_locs)))
		return rc;
	w->locs[w->n_locs] = *l;
	*out = (uint32_t)w->n_locs++;
	return 0;
}

/* Interns the chain outermost first, so parents get smaller indexes. */
static int intern_chain(struct writer *w, const struct sym_frame *f, size_t n, uint32_t *leaf)
{
	uint32_t parent = SYM_NONE;

	for (size_t i = n; i-- > 0;) {
		struct wloc l = { f[i].function, f[i].file, f[i].line, f[i].column,
				  parent, f[i].flags };
		int rc = intern_loc(w, &l, &parent);
		if (rc)
			return rc;
		/* The format's rule, which the reader checks: a parent comes first. */
		assert(l.parent == SYM_NONE || l.parent < parent);
	}
	*leaf = parent;
	return 0;
}

static int add_range(struct writer *w, uint32_t start, uint32_t loc)
{
	assert(w->n_ranges == 0 || w->starts[w->n_ranges - 1] < start);
	int rc = GROW(w->starts, w->rcap, w->n_ranges + 1, SYM__MAX_ITEMS, w->alloc);

	if (rc || (rc = GROW(w->rlocs, w->rcap2, w->n_ranges + 1, SYM__MAX_ITEMS, w->alloc)))
		return rc;
	w->starts[w->n_ranges] = start;
	w->rlocs[w->n_ranges++] = loc;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Evaluates the lookup at every boundary v[i] and writes a range where it changes. */
static int flatten(struct writer *w, sym__lookup_fn fn, void *ctx, const uint64_t *v, size_t n,
		   uint64_t base)
{
	struct sym_frame frames[SYM_MAX_FRAMES];
	uint32_t prev = SYM_NONE;
	int rc;

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		uint32_t leaf = SYM_NONE;
		assert(i == 0 || v[i - 1] <= v[i]);
		if (i > 0 && v[i] == v[i - 1])
			continue;
		if ((rc = fn(ctx, v[i], frames, SYM_MAX_FRAMES, &k)))
			return rc;
		if (k && (rc = intern_chain(w, frames, k, &leaf)))
			return rc;
		if (leaf == prev)
			continue;
		if ((rc = add_range(w, (uint32_t)(v[i] - base), leaf)))
			return rc;
		prev = leaf;
	}
	/* The last boundary is the end of every span, so nothing covers it. */
	if (prev != SYM_NONE)
		return ERR_CORRUPT;
	return 0;
}

static int str_off(struct writer *w, const char *s, uint32_t *out)
{
	if (!s) {
		*out = SYM_NONE;
		return 0;
	}
	uintptr_t o = (uintptr_t)sym__ptrmap_get(&w->stroff, s);
	if (o) {
		*out = (uint32_t)(o - 1);
		return 0;
	}
	size_t off = w->strtab.len;
	if (off >= SYM_NONE - 1)
		return ERR_TOO_LARGE;
	int rc = buf_append(&w->strtab, s, strlen(s) + 1);
	if (rc || (rc = sym__ptrmap_put(&w->stroff, s, (void *)(uintptr_t)(off + 1))))
		return rc;
	*out = (uint32_t)off;
	return 0;
}

static int serialize(struct writer *w, uint64_t base, struct buf *out)
{
	uint8_t hdr[SYM_INDEX_HEADER];
	uint8_t rec[SYM_INDEX_LOC_SIZE];
	struct buf locs;
	int rc;

	buf_init(&locs, (size_t)UINT32_MAX); /* the format's offsets are u32 */
	for (size_t i = 0; i < w->n_locs; i++) {
		uint32_t fo, fi;
		if ((rc = str_off(w, w->locs[i].func, &fo)) ||
		    (rc = str_off(w, w->locs[i].file, &fi)))
			goto out;
		wr32(rec, fo);
		wr32(rec + 4, fi);
		wr32(rec + 8, w->locs[i].line);
		wr32(rec + 12, w->locs[i].col);
		wr32(rec + 16, w->locs[i].parent);
		wr32(rec + 20, w->locs[i].flags);
		if ((rc = buf_append(&locs, rec, sizeof(rec))))
			goto out;
	}
	while (w->strtab.len % 4) /* keeps the file size a multiple of 4 */
		if ((rc = buf_putc(&w->strtab, '\0')))
			goto out;

	uint64_t r_off = SYM_INDEX_HEADER;
	uint64_t l_off = r_off + 8 * (uint64_t)w->n_ranges;
	uint64_t s_off = l_off + locs.len;
	uint64_t total = s_off + w->strtab.len;
	if (total > UINT32_MAX) {
		rc = ERR_TOO_LARGE;
		goto out;
	}
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, SYM_INDEX_MAGIC, 8);
	wr32(hdr + 8, SYM_INDEX_VERSION);
	wr32(hdr + 12, SYM_INDEX_HEADER);
	wr64(hdr + 16, base);
	wr32(hdr + 24, (uint32_t)w->n_ranges);
	wr32(hdr + 28, (uint32_t)w->n_locs);
	wr32(hdr + 32, (uint32_t)w->strtab.len);
	wr32(hdr + 36, (uint32_t)w->blen);
	memcpy(hdr + 40, w->bid, w->blen);
	wr32(hdr + 104, (uint32_t)r_off);
	wr32(hdr + 108, (uint32_t)(r_off + 4 * (uint64_t)w->n_ranges));
	wr32(hdr + 112, (uint32_t)l_off);
	wr32(hdr + 116, (uint32_t)s_off);
	wr32(hdr + 120, (uint32_t)total);

	size_t start = out->len;
	uint8_t le[4];
	if ((rc = buf_reserve(out, total)) || (rc = buf_append(out, hdr, sizeof(hdr))))
		goto out;
	for (size_t i = 0; i < w->n_ranges; i++) {
		wr32(le, w->starts[i]);
		buf_append(out, le, 4); /* reserved above: cannot fail */
	}
	for (size_t i = 0; i < w->n_ranges; i++) {
		wr32(le, w->rlocs[i]);
		buf_append(out, le, 4);
	}
	buf_append(out, locs.data, locs.len);
	buf_append(out, w->strtab.data, w->strtab.len);
	assert(out->len - start == total);
	uint8_t *f = (uint8_t *)out->data + start;
	uLong crc = crc32(0L, f, 124);
	crc = crc32(crc, f + SYM_INDEX_HEADER, (uInt)(total - SYM_INDEX_HEADER));
	wr32(f + 124, (uint32_t)crc);
out:
	buf_release(&locs);
	return rc;
}

static void writer_release(struct writer *w)
{
	grow_free(w->alloc, w->locs, w->lcap, sizeof(*w->locs));
	hmap_release(&w->loc_index);
	grow_free(w->alloc, w->starts, w->rcap, sizeof(*w->starts));
	grow_free(w->alloc, w->rlocs, w->rcap2, sizeof(*w->rlocs));
	sym__ptrmap_release(&w->stroff);
	buf_release(&w->strtab);
}

static int dwarf_lookup(void *ctx, uint64_t vaddr, struct sym_frame *frames, size_t max, size_t *n)
{
	return sym_dwarf_lookup(ctx, vaddr, frames, max, n);
}

int sym_index_build_buf(struct sym_dwarf *d, struct buf *out,
			struct sym_index_stats *stats, struct err_msg *msg)
{
	struct writer w;
	uint64_t *v = NULL, base = 0;
	size_t n = 0, cap = 0;
	int rc;

	memset(&w, 0, sizeof(w));
	w.alloc = &d->budget.alloc;
	w.bid = d->info.build_id;
	w.blen = d->info.build_id_len;
	/* At most HMAP_MAX locations: their indexes stay below SYM_NONE. */
	hmap_init(&w.loc_index, HMAP_MAX, &d->budget.alloc);
	sym__ptrmap_init(&w.stroff, &d->budget.alloc);
	buf_init(&w.strtab, (size_t)UINT32_MAX); /* string offsets are u32 */
	if ((rc = sym__dwarf_load_all(d))) {
		err_set(msg, rc, "loading DWARF tables: %s", err_str(rc));
		goto out;
	}
	if ((rc = sym__dwarf_boundaries(d, &v, &n, &cap))) {
		err_set(msg, rc, "collecting address boundaries: %s", err_str(rc));
		goto out;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), u64_cmp);
	if (n) {
		base = v[0];
		if (v[n - 1] - base > UINT32_MAX) {
			rc = err_set(msg, ERR_TOO_LARGE,
				     "code spans 0x%llx..0x%llx, more than 4 GiB",
				     (unsigned long long)base, (unsigned long long)v[n - 1]);
			goto out;
		}
	}
	if ((rc = flatten(&w, dwarf_lookup, d, v, n, base))) {
		err_set(msg, rc, "flattening address ranges: %s", err_str(rc));
		goto out;
	}
	size_t before = out->len;
	if ((rc = serialize(&w, base, out))) {
		err_set(msg, rc, "writing the index: %s", err_str(rc));
		goto out;
	}
	if (stats) {
		size_t nf = 0;
		for (size_t i = 0; i < d->n_cus; i++)
			nf += d->cus[i].n_funcs;
		*stats = (struct sym_index_stats){ .ranges = w.n_ranges, .locations = w.n_locs,
						   .string_bytes = w.strtab.len,
						   .file_bytes = out->len - before,
						   .functions = nf, .symbols = d->n_syms };
	}
out:
	SYM__FREE(d, v, cap);
	writer_release(&w);
	return rc;
}

int sym__index_write_symbols(const struct sym__named_start *e, size_t n, uint64_t base,
			     const uint8_t *bid, size_t blen, struct buf *out,
			     struct err_msg *msg)
{
	struct grow_budget budget;
	struct writer w;
	uint32_t prev = SYM_NONE;
	int rc = 0;

	assert(blen <= SYM_BUILD_ID_MAX && (n == 0 || !e[n - 1].name));
	grow_budget_init(&budget, SIZE_MAX);
	memset(&w, 0, sizeof(w));
	w.alloc = &budget.alloc;
	w.bid = bid;
	w.blen = blen;
	hmap_init(&w.loc_index, HMAP_MAX, w.alloc);
	sym__ptrmap_init(&w.stroff, w.alloc);
	buf_init(&w.strtab, (size_t)UINT32_MAX);
	for (size_t i = 0; i < n && !rc; i++) {
		struct sym_frame f = { e[i].name, NULL, 0, 0, SYM_FRAME_SYMTAB };
		uint32_t leaf = SYM_NONE;

		assert(e[i].addr >= base && e[i].addr - base <= UINT32_MAX &&
		       (i == 0 || e[i - 1].addr < e[i].addr));
		if (e[i].name && (rc = intern_chain(&w, &f, 1, &leaf)))
			break;
		if (leaf != prev && !(rc = add_range(&w, (uint32_t)(e[i].addr - base), leaf)))
			prev = leaf;
	}
	if (!rc)
		rc = serialize(&w, base, out);
	if (rc)
		err_set(msg, rc, "writing the index of a symbol map: %s", err_str(rc));
	writer_release(&w);
	return rc;
}

int sym__index_write_lookup(sym__lookup_fn fn, void *ctx, const uint64_t *v, size_t n,
			    const uint8_t *bid, size_t blen, const struct grow_alloc *alloc,
			    struct buf *out, struct sym_index_stats *stats, struct err_msg *msg)
{
	struct writer w;
	size_t before = out->len;
	int rc;

	assert(n > 0 && v[n - 1] - v[0] <= UINT32_MAX && blen <= SYM_BUILD_ID_MAX);
	memset(&w, 0, sizeof(w));
	w.alloc = alloc;
	w.bid = bid;
	w.blen = blen;
	hmap_init(&w.loc_index, HMAP_MAX, alloc);
	sym__ptrmap_init(&w.stroff, alloc);
	buf_init(&w.strtab, (size_t)UINT32_MAX);
	if ((rc = flatten(&w, fn, ctx, v, n, v[0])))
		err_set(msg, rc, "flattening address ranges: %s", err_str(rc));
	else if ((rc = serialize(&w, v[0], out)))
		err_set(msg, rc, "writing the index: %s", err_str(rc));
	if (!rc && stats)
		*stats = (struct sym_index_stats){ .ranges = w.n_ranges, .locations = w.n_locs,
						   .string_bytes = w.strtab.len,
						   .file_bytes = out->len - before };
	writer_release(&w);
	return rc;
}

int sym__write_atomic(const char *path, const void *data, size_t len, struct err_msg *msg)
{
	size_t pl = strlen(path);
	char *tmp = malloc(pl + 8);
	int rc = 0, fd;

	if (!tmp)
		return ERR_NOMEM;
	memcpy(tmp, path, pl);
	memcpy(tmp + pl, ".XXXXXX", 8);
	if ((fd = mkstemp(tmp)) < 0) {
		rc = err_set(msg, ERR_IO, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	const char *p = data;
	while (len > 0) {
		ssize_t k = write(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			rc = err_set(msg, ERR_IO, "%s: %s", tmp, strerror(errno));
			break;
		}
		p += k;
		len -= (size_t)k;
	}
	if (!rc && fsync(fd) != 0)
		rc = err_set(msg, ERR_IO, "%s: fsync: %s", tmp, strerror(errno));
	if (close(fd) != 0 && !rc)
		rc = err_set(msg, ERR_IO, "%s: close: %s", tmp, strerror(errno));
	if (!rc && rename(tmp, path) != 0)
		rc = err_set(msg, ERR_IO, "%s: rename: %s", path, strerror(errno));
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

/* Whether the file at `path` has Go's table and no DWARF. */
static int go_without_dwarf(const char *path)
{
	struct sym_elf_info info;

	return path && sym_elf_inspect_file(path, &info, NULL) == 0 &&
	       (info.flags & SYM_HAS_GOPCLNTAB) && !(info.flags & SYM_HAS_DEBUG_INFO);
}

/* The index of a Go executable without DWARF, from its .gopclntab. */
static int build_gopcln(const char *path, const char *out_path, const struct sym_dwarf_opts *opts,
			struct sym_index_stats *stats, struct err_msg *msg)
{
	struct sym_gopcln_opts go = { 0 };
	struct sym_index_stats st;
	struct sym_gopcln *g = NULL;
	struct buf b;
	int rc;

	buf_init(&b, (size_t)UINT32_MAX);
	if (opts) {
		go.build_id = opts->build_id;
		go.build_id_len = opts->build_id_len;
		go.max_memory = opts->max_memory;
	}
	if ((rc = sym_gopcln_open(path, &go, &g, msg)) ||
	    (rc = sym_gopcln_index_buf(g, &b, &st, msg)) ||
	    (rc = sym__write_atomic(out_path, b.data, b.len, msg)))
		goto out;
	st.from = SYM_FROM_GOPCLNTAB;
	st.layout = sym_gopcln_layout(g);
	if (stats)
		*stats = st;
out:
	sym_gopcln_close(g);
	buf_release(&b);
	return rc;
}

int sym_index_build(const char *debug_path, const char *out_path,
		    const struct sym_dwarf_opts *opts, struct sym_index_stats *stats,
		    struct err_msg *msg)
{
	struct sym_dwarf *d = NULL;
	struct buf b;
	int rc;

	/* DWARF when there is some; else Go's own table (of the file, or of
	 * the executable next to a .debug file without DWARF); else symbols. */
	if (go_without_dwarf(debug_path))
		return build_gopcln(debug_path, out_path, opts, stats, msg);
	if (opts && opts->plt_from && go_without_dwarf(opts->plt_from)) {
		struct sym_elf_info info;
		if (sym_elf_inspect_file(debug_path, &info, NULL) == 0 &&
		    !(info.flags & SYM_HAS_DEBUG_INFO))
			return build_gopcln(opts->plt_from, out_path, opts, stats, msg);
	}
	buf_init(&b, (size_t)UINT32_MAX);
	if ((rc = sym_dwarf_open(debug_path, opts, &d, msg)))
		goto out;
	if ((rc = sym_index_build_buf(d, &b, stats, msg)))
		goto out;
	rc = sym__write_atomic(out_path, b.data, b.len, msg);
out:
	sym_dwarf_close(d);
	buf_release(&b);
	return rc;
}

/* ==== reader ==== */

struct sym_index {
	const uint8_t *data;
	size_t len;
	int mapped;
	uint64_t base;
	uint32_t n_ranges, n_locs, str_size;
	const uint8_t *starts, *rlocs, *locs;
	const char *strtab;
	uint8_t build_id[SYM_BUILD_ID_MAX];
	size_t build_id_len;
	/*
	 * In-memory accelerator: page[p] is the first range whose start is at
	 * or past p << shift, so a lookup binary-searches only one page's ranges.
	 */
	uint32_t *page;
	size_t n_pages;
	unsigned shift;
};

static int build_pages(struct sym_index *x)
{
	if (x->n_ranges == 0)
		return 0;
	uint32_t last = rd32(x->starts + 4 * (size_t)(x->n_ranges - 1));
	size_t want = x->n_ranges > 1024 ? x->n_ranges : 1024;
	unsigned shift = 0;
	while (((size_t)last >> shift) + 2 > want)
		shift++;
	x->shift = shift;
	x->n_pages = ((size_t)last >> shift) + 2;
	x->page = malloc(x->n_pages * sizeof(*x->page));
	if (!x->page)
		return ERR_NOMEM;
	size_t r = 0;
	for (size_t p = 0; p < x->n_pages; p++) {
		while (r < x->n_ranges && (rd32(x->starts + 4 * r) >> shift) < p)
			r++;
		x->page[p] = (uint32_t)r;
	}
	return 0;
}

static int corrupt(struct err_msg *msg, const char *what)
{
	return err_set(msg, ERR_CORRUPT, "symbol index: %s", what);
}

static int check_header(struct sym_index *x, struct err_msg *msg)
{
	const uint8_t *h = x->data;

	if (x->len < SYM_INDEX_HEADER || memcmp(h, SYM_INDEX_MAGIC, 8) != 0)
		return corrupt(msg, "bad magic or short file");
	if (rd32(h + 8) != SYM_INDEX_VERSION || rd32(h + 12) != SYM_INDEX_HEADER)
		return corrupt(msg, "unsupported version");
	if (rd32(h + 120) != x->len)
		return corrupt(msg, "file size does not match the header");
	uLong crc = crc32(0L, h, 124);
	crc = crc32(crc, h + SYM_INDEX_HEADER, (uInt)(x->len - SYM_INDEX_HEADER));
	if ((uint32_t)crc != rd32(h + 124))
		return corrupt(msg, "checksum mismatch");
	x->base = rd64(h + 16);
	x->n_ranges = rd32(h + 24);
	x->n_locs = rd32(h + 28);
	x->str_size = rd32(h + 32);
	x->build_id_len = rd32(h + 36);
	if (x->build_id_len > SYM_BUILD_ID_MAX)
		return corrupt(msg, "build ID length");
	memcpy(x->build_id, h + 40, x->build_id_len);
	uint64_t r = SYM_INDEX_HEADER;
	uint64_t rl = r + 4 * (uint64_t)x->n_ranges;
	uint64_t l = rl + 4 * (uint64_t)x->n_ranges;
	uint64_t s = l + SYM_INDEX_LOC_SIZE * (uint64_t)x->n_locs;
	if (rd32(h + 104) != r || rd32(h + 108) != rl || rd32(h + 112) != l ||
	    rd32(h + 116) != s || s + x->str_size != x->len)
		return corrupt(msg, "section offsets");
	x->starts = h + r;
	x->rlocs = h + rl;
	x->locs = h + l;
	x->strtab = (const char *)h + s;
	return 0;
}

static int check_body(const struct sym_index *x, struct err_msg *msg)
{
	if (x->str_size && x->strtab[x->str_size - 1] != '\0')
		return corrupt(msg, "unterminated string table");
	for (uint32_t i = 0; i < x->n_ranges; i++) {
		if (i > 0 && rd32(x->starts + 4 * i) <= rd32(x->starts + 4 * (i - 1)))
			return corrupt(msg, "range starts not increasing");
		uint32_t loc = rd32(x->rlocs + 4 * i);
		if (loc != SYM_NONE && loc >= x->n_locs)
			return corrupt(msg, "range location out of bounds");
	}
	for (uint32_t i = 0; i < x->n_locs; i++) {
		const uint8_t *p = x->locs + (size_t)SYM_INDEX_LOC_SIZE * i;
		uint32_t fn = rd32(p), file = rd32(p + 4), parent = rd32(p + 16);
		if ((fn != SYM_NONE && fn >= x->str_size) ||
		    (file != SYM_NONE && file >= x->str_size))
			return corrupt(msg, "string offset out of bounds");
		if (parent != SYM_NONE && parent >= i)
			return corrupt(msg, "location parent does not precede it");
		if (rd32(p + 20) & ~(uint32_t)(SYM_FRAME_INLINED | SYM_FRAME_SYMTAB))
			return corrupt(msg, "unknown location flags");
	}
	return 0;
}

static int index_validate(struct sym_index *x, const uint8_t *want_id, size_t want_len,
			  struct err_msg *msg)
{
	int rc = check_header(x, msg);

	if (rc || (rc = check_body(x, msg)))
		return rc;
	if (want_id && (want_len != x->build_id_len ||
			memcmp(want_id, x->build_id, want_len) != 0))
		return err_set(msg, ERR_CONFLICT, "symbol index: built for another build ID");
	return 0;
}

int sym_index_open_mem(const void *data, size_t len, const uint8_t *want_id,
		       size_t want_len, struct sym_index **out, struct err_msg *msg)
{
	struct sym_index *x = calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return ERR_NOMEM;
	x->data = data;
	x->len = len;
	if ((rc = index_validate(x, want_id, want_len, msg)) || (rc = build_pages(x))) {
		free(x->page);
		free(x);
		return rc;
	}
	*out = x;
	return 0;
}

int sym_index_open(const char *path, const uint8_t *want_id, size_t want_len,
		   struct sym_index **out, struct err_msg *msg)
{
	struct stat st;
	struct sym_index *x;
	int rc, fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return err_set(msg, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO, "%s: %s",
			       path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	if (st.st_size < SYM_INDEX_HEADER || (uint64_t)st.st_size > UINT32_MAX) {
		close(fd);
		return corrupt(msg, "file size");
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return err_set(msg, ERR_IO, "%s: mmap: %s", path, strerror(errno));
	if ((rc = sym_index_open_mem(m, (size_t)st.st_size, want_id, want_len, &x, msg))) {
		munmap(m, (size_t)st.st_size);
		return rc;
	}
	x->mapped = 1;
	*out = x;
	return 0;
}

void sym_index_close(struct sym_index *x)
{
	if (!x)
		return;
	if (x->mapped)
		munmap((void *)x->data, x->len);
	free(x->page);
	free(x);
}

const uint8_t *sym_index_build_id(const struct sym_index *x, size_t *len)
{
	*len = x->build_id_len;
	return x->build_id;
}

int sym_index_lookup(const struct sym_index *x, uint64_t vaddr,
		     struct sym_frame *frames, size_t max, size_t *n)
{
	size_t k = 0;

	assert(x && n && (frames || max == 0));
	*n = 0;
	if (vaddr < x->base || vaddr - x->base > UINT32_MAX || x->n_ranges == 0)
		return 0;
	uint32_t a = (uint32_t)(vaddr - x->base);
	size_t p = (size_t)a >> x->shift;
	/* Ranges starting in pages before p start below a; from page p + 1 on, above. */
	size_t lo = p < x->n_pages ? x->page[p] : x->n_ranges;
	size_t hi = p + 1 < x->n_pages ? x->page[p + 1] : x->n_ranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rd32(x->starts + 4 * mid) <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	uint32_t loc = rd32(x->rlocs + 4 * (lo - 1));
	while (loc != SYM_NONE && k < max) {
		const uint8_t *p = x->locs + (size_t)SYM_INDEX_LOC_SIZE * loc;
		uint32_t fn = rd32(p), file = rd32(p + 4);
		frames[k].function = fn == SYM_NONE ? NULL : x->strtab + fn;
		frames[k].file = file == SYM_NONE ? NULL : x->strtab + file;
		frames[k].line = rd32(p + 8);
		frames[k].column = rd32(p + 12);
		frames[k].flags = rd32(p + 20);
		k++;
		loc = rd32(p + 16);
	}
	*n = k;
	return 0;
}

static int index_lookup(void *ctx, uint64_t vaddr, struct sym_frame *frames, size_t max,
			size_t *n)
{
	return sym_index_lookup(ctx, vaddr, frames, max, n);
}

int sym_index_lookup_caller(const struct sym_index *x, uint64_t ret,
			    struct sym_frame *frames, size_t max, size_t *n)
{
	/* sym_index_lookup only reads the index: the cast drops no promise. */
	return sym__lookup_caller(index_lookup, (void *)(uintptr_t)x, ret, frames, max, n);
}
