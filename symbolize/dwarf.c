/*
 * dwarf.c - resolution of ELF virtual addresses from raw DWARF with libdw,
 * through lazily built CU, function and inline-tree tables (see
 * symbolize_int.h), with the ELF symbol tables as the fallback.
 *
 * We never call dwarf_getscopes*, dwarf_addrdie or libdwfl's address
 * lookups: they rescan DIE trees or symbol tables per address, miss CUs
 * without .debug_aranges, and fail on cross-CU abstract origins.
 *
 * First touch of a CU or function dominates cold resolution, so the DIE
 * walks that build the tables scan the unit's bytes linearly (see "linear
 * scan" below) and use libdw only for the DIEs they keep; the plain libdw
 * walks remain as the fallback for anything the scanner does not know.
 */
#include <assert.h>
#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "symbolize_int.h"

#define DEFAULT_MEM_CAP ((size_t)4 << 30)

/* Address 0 and all-ones are the tombstones linkers leave for dropped code. */
static int good_range(uint64_t lo, uint64_t hi)
{
	return lo != 0 && hi > lo && hi < UINT64_MAX - 1;
}

/* ---- names and paths ---- */

static const char *die_name(struct sym_dwarf *d, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *raw = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		raw = dwarf_formstring(&a);
	if (!raw)
		raw = dwarf_diename(die);
	if (!raw)
		return NULL;
	const char *dm = sym__ptrmap_get(&d->names, raw);
	if (dm)
		return dm;
	dm = sym__demangle(&d->strings, raw);
	if (dm && sym__ptrmap_put(&d->names, raw, (void *)dm))
		return NULL;
	return dm;
}

/*
 * die_name of a DW_TAG_inlined_subroutine.  One that has no name attributes
 * of its own and only a DW_AT_abstract_origin resolves its name through that
 * origin alone, so the answer is cached per origin DIE: a function inlined
 * in many places is looked up (and its chain followed) once.
 */
static const char *inlined_name(struct sym_dwarf *d, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Die origin;

	if (dwarf_hasattr(die, DW_AT_linkage_name) || dwarf_hasattr(die, DW_AT_MIPS_linkage_name) ||
	    dwarf_hasattr(die, DW_AT_name) || dwarf_hasattr(die, DW_AT_specification) ||
	    !dwarf_attr(die, DW_AT_abstract_origin, &a) || !dwarf_formref_die(&a, &origin) ||
	    !origin.addr)
		return die_name(d, die);
	const char *n = sym__ptrmap_get(&d->origins, origin.addr);
	if (n)
		return n;
	n = die_name(d, die);
	/* Unnamed (or failed) answers are not cached: they are recomputed. */
	if (n && sym__ptrmap_put(&d->origins, origin.addr, (void *)n))
		return NULL;
	return n;
}

/* Interned absolute path of a libdw file name of `cu`. */
static const char *abs_path(struct sym_dwarf *d, struct sym__cu *cu, const char *raw)
{
	const char *p = sym__ptrmap_get(&d->paths, raw);
	if (p)
		return p;
	if (raw[0] == '/' || !cu->comp_dir) {
		p = sym__intern(&d->strings, raw, strlen(raw));
	} else {
		size_t a = strlen(cu->comp_dir), b = strlen(raw);
		char *tmp = malloc(a + b + 2);
		if (!tmp)
			return NULL;
		memcpy(tmp, cu->comp_dir, a);
		tmp[a] = '/';
		memcpy(tmp + a + 1, raw, b + 1);
		p = sym__intern(&d->strings, tmp, a + b + 1);
		free(tmp);
	}
	if (p && sym__ptrmap_put(&d->paths, raw, (void *)p))
		return NULL;
	return p;
}

static const char *call_file(struct sym_dwarf *d, struct sym__cu *cu, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;

	if (!dwarf_attr(die, DW_AT_call_file, &a) || dwarf_formudata(&a, &idx) != 0)
		return NULL;
	if (!cu->have_files) {
		cu->have_files = 1;
		if (dwarf_getsrcfiles(&cu->die, &cu->files, &cu->n_files) != 0) {
			cu->files = NULL;
			cu->n_files = 0;
		}
	}
	if (!cu->files || idx >= cu->n_files)
		return NULL;
	const char *raw = dwarf_filesrc(cu->files, idx, NULL, NULL);
	return raw ? abs_path(d, cu, raw) : NULL;
}

static uint32_t udata_attr(Dwarf_Die *die, unsigned name)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (!dwarf_attr(die, name, &a) || dwarf_formudata(&a, &v) != 0 || v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

/* sym__spans_sort, without the qsort when the spans are in order already
 * (DIE order mostly is address order): the same result either way. */
static void spans_sort(struct sym__span *s, size_t n)
{
	uint64_t m = 0;

	for (size_t i = 1; i < n; i++) {
		const struct sym__span *x = &s[i - 1], *y = &s[i];
		if (x->lo > y->lo || (x->lo == y->lo && (x->hi > y->hi ||
		    (x->hi == y->hi && x->idx > y->idx)))) {
			sym__spans_sort(s, n);
			return;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i].hi > m)
			m = s[i].hi;
		s[i].maxhi = m;
	}
}

/* ---- per-CU function table ---- */

/* Appends the code ranges of `die` to a span table, each mapping to `idx`. */
static int add_spans(struct sym_dwarf *d, Dwarf_Die *die, uint32_t idx, struct sym__span **spans,
		     size_t *n, size_t *cap)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int rc;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (!good_range(lo, hi))
			continue;
		rc = SYM__GROW(d, *spans, *cap, *n + 1);
		if (rc)
			return rc;
		(*spans)[(*n)++] = (struct sym__span){ lo, hi, 0, idx };
	}
	return 0;
}

static int add_func(struct sym_dwarf *d, struct sym__cu *cu, Dwarf_Die *die)
{
	uint32_t fi = (uint32_t)cu->n_funcs;
	size_t first = cu->n_spans;
	int rc = add_spans(d, die, fi, &cu->spans, &cu->n_spans, &cu->spans_cap);

	if (rc)
		return rc;
	if (cu->n_spans == first)
		return 0;
	rc = SYM__GROW(d, cu->funcs, cu->funcs_cap, cu->n_funcs + 1);
	if (rc)
		return rc;
	memset(&cu->funcs[fi], 0, sizeof(cu->funcs[fi]));
	cu->funcs[fi].die = *die;
	cu->n_funcs++;
	return 0;
}

/* Tags whose children cannot hold a function with code. */
static int no_functions_below(int tag)
{
	switch (tag) {
	case DW_TAG_enumeration_type:
	case DW_TAG_array_type:
	case DW_TAG_subroutine_type:
	case DW_TAG_formal_parameter:
	case DW_TAG_variable:
	case DW_TAG_member:
	case DW_TAG_call_site:
	case DW_TAG_GNU_call_site:
	case DW_TAG_imported_unit:
		return 1;
	}
	return 0;
}

static int collect_funcs(struct sym_dwarf *d, struct sym__cu *cu, Dwarf_Die *parent,
			 int depth)
{
	Dwarf_Die child;
	int rc;

	if (depth > SYM__MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram && (rc = add_func(d, cu, &child)))
			return rc;
		if (dwarf_haschildren(&child) > 0 && !no_functions_below(tag) &&
		    (rc = collect_funcs(d, cu, &child, depth + 1)))
			return rc;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/*
 * ---- linear scan of a unit's DIEs ----
 *
 * The libdw DFS above costs an abbreviation lookup (a locked hash) per DIE,
 * and dwarf_siblingof re-parses each subtree that has no DW_AT_sibling.  The
 * scans below visit the same DIEs in the same (pre)order in one pass over
 * the bytes, with the tag and attribute forms of each abbreviation code
 * learnt once per unit (from libdw) and kept in cu->scan.  They give up
 * (SCAN_FALLBACK) on anything they do not fully understand, and the caller
 * then runs the libdw walk instead, so both always agree.
 */

#define SCAN_FALLBACK 1
#define SCAN_MAX_CODE 65536     /* abbreviation codes cached; larger fall back */
#define SCAN_MAX_ATTRS 4096     /* attributes of one abbreviation */
#define SCAN_MAX_OPS (1u << 20) /* skip steps of all abbreviations of a unit */
#define SCAN_MAX_LEVEL (1 << 24) /* DIE nesting counted (not followed) */

struct scan_abbrev {
	int known;
	int tag;
	int has_kids;
	int has_pc;              /* DW_AT_low_pc, high_pc or ranges */
	uint32_t ops, n_ops;     /* slice of sym__cu_scan.ops */
};

/* Per unit; an op > 0 skips that many bytes, an op < 0 a value of form -op. */
struct sym__cu_scan {
	const unsigned char *start, *end; /* the unit's bytes */
	Dwarf_Off start_off;              /* section offset of start */
	unsigned version, addr_size, off_size;
	struct scan_abbrev *ab;           /* indexed by code */
	size_t ab_cap;
	int32_t *ops;
	size_t n_ops, ops_cap;
};

static int scan_uleb(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
	uint64_t r = 0;

	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return SCAN_FALLBACK;
}

/* Size of a value of `form` if fixed, else -1. */
static int scan_fixed(unsigned form, const struct sym__cu_scan *sc)
{
	switch (form) {
	case DW_FORM_flag_present:
	case DW_FORM_implicit_const:
		return 0;
	case DW_FORM_data1: case DW_FORM_ref1: case DW_FORM_flag:
	case DW_FORM_strx1: case DW_FORM_addrx1:
		return 1;
	case DW_FORM_data2: case DW_FORM_ref2: case DW_FORM_strx2: case DW_FORM_addrx2:
		return 2;
	case DW_FORM_strx3: case DW_FORM_addrx3:
		return 3;
	case DW_FORM_data4: case DW_FORM_ref4: case DW_FORM_strx4: case DW_FORM_addrx4:
	case DW_FORM_ref_sup4:
		return 4;
	case DW_FORM_data8: case DW_FORM_ref8: case DW_FORM_ref_sig8: case DW_FORM_ref_sup8:
		return 8;
	case DW_FORM_data16:
		return 16;
	case DW_FORM_addr:
		return (int)sc->addr_size;
	case DW_FORM_ref_addr:
		return (int)(sc->version < 3 ? sc->addr_size : sc->off_size);
	case DW_FORM_strp: case DW_FORM_line_strp: case DW_FORM_sec_offset:
	case DW_FORM_strp_sup: case DW_FORM_GNU_ref_alt: case DW_FORM_GNU_strp_alt:
		return (int)sc->off_size;
	}
	return -1;
}

/* Skips one value of a variable-size `form` at *p. */
static int scan_skip_var(const struct sym__cu_scan *sc, unsigned form, const unsigned char **p)
{
	uint64_t len;
	int n;

	switch (form) {
	case DW_FORM_udata: case DW_FORM_sdata: case DW_FORM_ref_udata:
	case DW_FORM_strx: case DW_FORM_addrx: case DW_FORM_loclistx:
	case DW_FORM_rnglistx: case DW_FORM_GNU_addr_index: case DW_FORM_GNU_str_index:
		return scan_uleb(p, sc->end, &len);
	case DW_FORM_string: {
		const unsigned char *z = memchr(*p, 0, (size_t)(sc->end - *p));
		if (!z)
			return SCAN_FALLBACK;
		*p = z + 1;
		return 0;
	}
	case DW_FORM_block1: case DW_FORM_block2: case DW_FORM_block4:
		n = form == DW_FORM_block1 ? 1 : form == DW_FORM_block2 ? 2 : 4;
		if (sc->end - *p < n)
			return SCAN_FALLBACK;
		len = 0;
		for (int i = n - 1; i >= 0; i--) /* little-endian (checked on setup) */
			len = len << 8 | (*p)[i];
		*p += n;
		break;
	case DW_FORM_block: case DW_FORM_exprloc:
		if (scan_uleb(p, sc->end, &len))
			return SCAN_FALLBACK;
		break;
	default:
		return SCAN_FALLBACK; /* DW_FORM_indirect and anything unknown */
	}
	if (len > (uint64_t)(sc->end - *p))
		return SCAN_FALLBACK;
	*p += len;
	return 0;
}

static int scan_op(struct sym_dwarf *d, struct sym__cu_scan *sc, struct scan_abbrev *a,
		   int32_t op)
{
	if (op > 0 && a->n_ops && sc->ops[sc->n_ops - 1] > 0 &&
	    sc->ops[sc->n_ops - 1] < INT32_MAX - 64) {
		sc->ops[sc->n_ops - 1] += op; /* merge runs of fixed sizes */
		return 0;
	}
	if (sc->n_ops >= SCAN_MAX_OPS)
		return SCAN_FALLBACK;
	int rc = SYM__GROW(d, sc->ops, sc->ops_cap, sc->n_ops + 1);
	if (rc)
		return rc;
	sc->ops[sc->n_ops++] = op;
	a->n_ops++;
	return 0;
}

/* Fills sc->ab[code] from libdw, through the DIE at `die_ptr`. */
static int scan_learn(struct sym_dwarf *d, struct sym__cu_scan *sc, uint64_t code,
		      const unsigned char *die_ptr)
{
	Dwarf_Die die;
	int rc;

	if (code >= SCAN_MAX_CODE)
		return SCAN_FALLBACK;
	if (code >= sc->ab_cap) {
		size_t old = sc->ab_cap;
		if ((rc = SYM__GROW(d, sc->ab, sc->ab_cap, code + 1)))
			return rc;
		memset(sc->ab + old, 0, (sc->ab_cap - old) * sizeof(*sc->ab));
	}
	if (!dwarf_offdie(d->dw, sc->start_off + (Dwarf_Off)(die_ptr - sc->start), &die))
		return SCAN_FALLBACK;
	int tag = dwarf_tag(&die);
	int kids = dwarf_haschildren(&die);
	if (tag < 0 || kids < 0 || !die.abbrev)
		return SCAN_FALLBACK;
	struct scan_abbrev *a = &sc->ab[code];
	size_t first = sc->n_ops;
	a->tag = tag;
	a->has_kids = kids > 0;
	a->has_pc = 0;
	a->ops = (uint32_t)sc->n_ops;
	a->n_ops = 0;
	/* Not dwarf_getattrcnt: libdw 0.188 miscounts with implicit_const. */
	for (size_t i = 0;; i++) {
		unsigned int name, form;
		Dwarf_Sword data;
		Dwarf_Off off;
		if (i == SCAN_MAX_ATTRS)
			goto fail;
		if (dwarf_getabbrevattr_data(die.abbrev, i, &name, &form, &data, &off) != 0)
			break;
		if (name == DW_AT_low_pc || name == DW_AT_high_pc || name == DW_AT_ranges)
			a->has_pc = 1;
		int fx = scan_fixed(form, sc);
		if (fx == 0)
			continue;
		if (form > INT32_MAX / 2)
			goto fail;
		if ((rc = scan_op(d, sc, a, fx > 0 ? fx : -(int32_t)form)))
			goto out;
	}
	a->known = 1;
	return 0;
fail:
	rc = SCAN_FALLBACK;
out:
	sc->n_ops = first;
	a->n_ops = 0;
	return rc;
}

/* Reads the entry at *p: *a = its abbreviation, NULL for a null entry. */
static int scan_entry(struct sym_dwarf *d, struct sym__cu_scan *sc, const unsigned char **p,
		      const struct scan_abbrev **a)
{
	const unsigned char *die = *p;
	uint64_t code;
	int rc;

	if (scan_uleb(p, sc->end, &code))
		return SCAN_FALLBACK;
	if (code == 0) {
		*a = NULL;
		return 0;
	}
	if ((code >= sc->ab_cap || !sc->ab[code].known) && (rc = scan_learn(d, sc, code, die)))
		return rc;
	const struct scan_abbrev *ab = &sc->ab[code];
	const int32_t *op = sc->ops + ab->ops;
	for (uint32_t i = 0; i < ab->n_ops; i++) {
		if (op[i] > 0) {
			if (sc->end - *p < op[i])
				return SCAN_FALLBACK;
			*p += op[i];
		} else if ((rc = scan_skip_var(sc, (unsigned)-op[i], p))) {
			return rc;
		}
	}
	*a = ab;
	return 0;
}

static int scan_die(struct sym_dwarf *d, const struct sym__cu_scan *sc,
		    const unsigned char *die_ptr, Dwarf_Die *die)
{
	return dwarf_offdie(d->dw, sc->start_off + (Dwarf_Off)(die_ptr - sc->start), die) ?
		       0 : SCAN_FALLBACK;
}

/* End of the (decompressed) .debug_info data holding `p`, or NULL. */
static const unsigned char *info_end(struct sym_dwarf *d, const unsigned char *p)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(d->elf, &shstrndx) != 0)
		return NULL;
	for (Elf_Scn *scn = elf_nextscn(d->elf, NULL); scn; scn = elf_nextscn(d->elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *name = elf_strptr(d->elf, shstrndx, sh.sh_name);
		if (!name || (strcmp(name, ".debug_info") && strcmp(name, ".zdebug_info")))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (data && data->d_buf && p >= (const unsigned char *)data->d_buf &&
		    (size_t)(p - (const unsigned char *)data->d_buf) < data->d_size)
			return (const unsigned char *)data->d_buf + data->d_size;
	}
	return NULL;
}

/* The unit's scan state, made on first use; NULL when it cannot be scanned. */
static struct sym__cu_scan *scan_get(struct sym_dwarf *d, struct sym__cu *cu)
{
	Dwarf_Off start, next, abbrev_off;
	size_t hsize;
	Dwarf_Half version;
	uint8_t addr_size, off_size;
	struct sym__cu_scan *sc;
	int rc;

	if (cu->scan || cu->scan_failed)
		return cu->scan;
	cu->scan_failed = 1;
	if (d->flags & SYM_DWARF_LIBDW_WALK)
		return NULL;
	/* Big-endian files and exotic sizes take the libdw path. */
	const char *ident = elf_getident(d->elf, NULL);
	if (!ident || ident[EI_DATA] != ELFDATA2LSB || !cu->die.addr ||
	    dwarf_dieoffset(&cu->die) < dwarf_cuoffset(&cu->die))
		return NULL;
	start = dwarf_dieoffset(&cu->die) - dwarf_cuoffset(&cu->die);
	if (dwarf_next_unit(d->dw, start, &next, &hsize, &version, &abbrev_off, &addr_size,
			    &off_size, NULL, NULL) != 0 || next <= start)
		return NULL;
	if ((addr_size != 4 && addr_size != 8) || (off_size != 4 && off_size != 8) ||
	    version < 2 || version > 5 ||
	    !(sc = grow_resize(&d->budget.alloc, NULL, 0, sizeof(*sc), &rc)))
		return NULL;
	memset(sc, 0, sizeof(*sc));
	sc->start = (const unsigned char *)cu->die.addr - dwarf_cuoffset(&cu->die);
	/* dwarf_next_unit does not clamp a unit's length to its section. */
	const unsigned char *sec_end = info_end(d, sc->start);
	if (!sec_end || next - start > (Dwarf_Off)(sec_end - sc->start)) {
		grow_free(&d->budget.alloc, sc, 1, sizeof(*sc));
		return NULL;
	}
	sc->end = sc->start + (next - start);
	sc->start_off = start;
	sc->version = version;
	sc->addr_size = addr_size;
	sc->off_size = off_size;
	cu->scan = sc;
	cu->scan_failed = 0;
	return sc;
}

static void scan_free(struct sym_dwarf *d, struct sym__cu_scan *sc)
{
	if (!sc)
		return;
	SYM__FREE(d, sc->ab, sc->ab_cap);
	SYM__FREE(d, sc->ops, sc->ops_cap);
	grow_free(&d->budget.alloc, sc, 1, sizeof(*sc));
}

/* collect_funcs over the whole unit, by scanning. */
static int scan_funcs(struct sym_dwarf *d, struct sym__cu *cu)
{
	struct sym__cu_scan *sc = scan_get(d, cu);
	const unsigned char *p = cu->die.addr;
	const struct scan_abbrev *a;
	int level = 0, prune = 0, rc;

	if (!sc)
		return SCAN_FALLBACK;
	while (p < sc->end) {
		const unsigned char *die_ptr = p;
		if ((rc = scan_entry(d, sc, &p, &a)))
			return rc;
		if (!a) {
			if (level == 0 || --level == 0)
				break; /* the unit DIE's children ended */
			if (prune && level <= prune)
				prune = 0;
			continue;
		}
		/* As the DFS: DIEs at levels 1..MAX_DIE_DEPTH+1, not below pruned tags. */
		if (level >= 1 && !prune) {
			/* Without these attributes dwarf_ranges finds nothing (add_func). */
			if (a->tag == DW_TAG_subprogram && a->has_pc) {
				Dwarf_Die die;
				if ((rc = scan_die(d, sc, die_ptr, &die)) ||
				    (rc = add_func(d, cu, &die)))
					return rc;
			}
			if (a->has_kids && (no_functions_below(a->tag) || level > SYM__MAX_DIE_DEPTH))
				prune = level;
		}
		if (a->has_kids && ++level > SCAN_MAX_LEVEL)
			return SCAN_FALLBACK;
		if (level == 0)
			break; /* a unit DIE without children */
	}
	return 0;
}

static int load_cu(struct sym_dwarf *d, struct sym__cu *cu)
{
	if (cu->loaded)
		return 0;
	int rc = scan_funcs(d, cu);
	if (rc == SCAN_FALLBACK) {
		/* Start over the libdw way (what scan_funcs added is discarded). */
		cu->n_funcs = 0;
		cu->n_spans = 0;
		rc = collect_funcs(d, cu, &cu->die, 0);
		d->walks.cus_walked++;
	} else {
		d->walks.cus_scanned++;
	}
	if (rc) {
		cu->loaded = -1;
		return rc;
	}
	spans_sort(cu->spans, cu->n_spans);
	cu->loaded = 1;
	return 0;
}

/* ---- per-function inline tree ---- */

struct tree_span {
	uint32_t parent;
	struct sym__span s;
};

struct tree_build {
	struct sym__cu *cu;
	struct sym__func *fn;
	struct tree_span *ts; /* through d->budget, freed when the tree is built */
	size_t n_ts, tcap;
};

/*
 * Adds the node of the inlined subroutine `die` (child of node `pnode`) if
 * it has code; *node = its index, or SYM_NONE when it has none (then its
 * children are not walked either).
 */
static int add_inlined(struct sym_dwarf *d, struct tree_build *b, Dwarf_Die *die,
		       uint32_t pnode, uint32_t *node)
{
	struct sym__func *fn = b->fn;
	uint32_t k = (uint32_t)fn->n_nodes;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	size_t first = b->n_ts;
	int rc;

	*node = SYM_NONE;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (!good_range(lo, hi))
			continue;
		rc = SYM__GROW(d, b->ts, b->tcap, b->n_ts + 1);
		if (rc)
			return rc;
		b->ts[b->n_ts++] = (struct tree_span){ pnode, { lo, hi, 0, k } };
	}
	if (b->n_ts == first)
		return 0;
	rc = SYM__GROW(d, fn->nodes, fn->nodes_cap, fn->n_nodes + 1);
	if (rc)
		return rc;
	struct sym__node *n = &fn->nodes[fn->n_nodes++];
	memset(n, 0, sizeof(*n));
	n->name = inlined_name(d, die);
	n->call_file = call_file(d, b->cu, die);
	n->call_line = udata_attr(die, DW_AT_call_line);
	n->call_col = udata_attr(die, DW_AT_call_column);
	*node = k;
	return 0;
}

static int is_block(int tag)
{
	return tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block;
}

static int tree_walk(struct sym_dwarf *d, struct tree_build *b, Dwarf_Die *parent,
		     uint32_t pnode, int depth)
{
	Dwarf_Die child;
	uint32_t node;
	int rc;

	if (depth > SYM__MAX_DIE_DEPTH || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		if (is_block(tag)) {
			if ((rc = tree_walk(d, b, &child, pnode, depth + 1)))
				return rc;
			continue;
		}
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if ((rc = add_inlined(d, b, &child, pnode, &node)))
			return rc;
		if (node != SYM_NONE && (rc = tree_walk(d, b, &child, node, depth + 1)))
			return rc;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* tree_walk over the function's DIE, by scanning. */
static int scan_tree(struct sym_dwarf *d, struct tree_build *b, struct sym__cu_scan *sc)
{
	uint32_t pn[SYM__MAX_DIE_DEPTH + 3]; /* parent node of the DIEs at a level */
	const unsigned char *p = b->fn->die.addr;
	const struct scan_abbrev *a;
	int level = 0, prune = 0, rc;

	if (p < sc->start || p >= sc->end)
		return SCAN_FALLBACK;
	pn[1] = 0;
	while (p < sc->end) {
		const unsigned char *die_ptr = p;
		if ((rc = scan_entry(d, sc, &p, &a)))
			return rc;
		if (!a) {
			if (level == 0 || --level == 0)
				break; /* the function's children ended */
			if (prune && level <= prune)
				prune = 0;
			continue;
		}
		if (level >= 1 && !prune) {
			uint32_t node = SYM_NONE;
			if (is_block(a->tag)) {
				node = pn[level];
			} else if (a->tag == DW_TAG_inlined_subroutine && a->has_pc) {
				Dwarf_Die die;
				if ((rc = scan_die(d, sc, die_ptr, &die)) ||
				    (rc = add_inlined(d, b, &die, pn[level], &node)))
					return rc;
			}
			/* As tree_walk: into blocks and inlined code, to MAX_DIE_DEPTH. */
			if (a->has_kids) {
				if (node == SYM_NONE || level > SYM__MAX_DIE_DEPTH)
					prune = level;
				else {
					/* Deeper levels were pruned just above. */
					assert((size_t)level + 1 < sizeof(pn) / sizeof(pn[0]));
					pn[level + 1] = node;
				}
			}
		}
		if (a->has_kids && ++level > SCAN_MAX_LEVEL)
			return SCAN_FALLBACK;
		if (level == 0)
			break; /* a function without children */
	}
	return 0;
}

static int load_func(struct sym_dwarf *d, struct sym__cu *cu, struct sym__func *fn)
{
	struct tree_build b = { cu, fn, NULL, 0, 0 };
	int rc;

	if (fn->loaded)
		return 0;
	rc = SYM__GROW(d, fn->nodes, fn->nodes_cap, 1);
	if (rc)
		goto out;
	memset(&fn->nodes[0], 0, sizeof(fn->nodes[0]));
	fn->nodes[0].name = die_name(d, &fn->die);
	fn->n_nodes = 1;
	struct sym__cu_scan *sc = scan_get(d, cu);
	rc = sc ? scan_tree(d, &b, sc) : SCAN_FALLBACK;
	if (rc == SCAN_FALLBACK) {
		/* Start over the libdw way; the names learnt stay cached. */
		fn->n_nodes = 1;
		b.n_ts = 0;
		rc = tree_walk(d, &b, &fn->die, 0, 0);
		d->walks.funcs_walked++;
	} else {
		d->walks.funcs_scanned++;
	}
	if (rc)
		goto out;
	if (b.n_ts) {
		if ((rc = SYM__GROW(d, fn->spans, fn->spans_cap, b.n_ts)))
			goto out;
		/* Group the spans by parent (a counting sort; each group is
		 * sorted below, so the order inside a group does not matter). */
		for (size_t i = 0; i < b.n_ts; i++)
			fn->nodes[b.ts[i].parent].n_kids++;
		uint32_t pos = 0;
		for (size_t i = 0; i < fn->n_nodes; i++) {
			pos += fn->nodes[i].n_kids;
			fn->nodes[i].kids = pos; /* the group's end, counted down below */
		}
		assert(pos == b.n_ts);
		for (size_t i = b.n_ts; i-- > 0;)
			fn->spans[--fn->nodes[b.ts[i].parent].kids] = b.ts[i].s;
		/* Each group was counted down to its start: the first begins at 0. */
		assert(fn->nodes[0].n_kids == 0 || fn->nodes[0].kids == 0);
		for (size_t i = 0; i < fn->n_nodes; i++)
			if (fn->nodes[i].n_kids == 0)
				fn->nodes[i].kids = 0;
		fn->n_spans = b.n_ts;
		for (size_t i = 0; i < fn->n_nodes; i++)
			spans_sort(fn->spans + fn->nodes[i].kids, fn->nodes[i].n_kids);
	}
	fn->loaded = 1;
out:
	SYM__FREE(d, b.ts, b.tcap);
	if (rc)
		fn->loaded = -1;
	return rc;
}

/* ---- open ---- */

static int build_cu_table(struct sym_dwarf *d)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	int rc;

	while (dwarf_get_units(d->dw, cu, &next, &version, &unit_type, &cudie, &subdie) == 0) {
		cu = next;
		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue;
		uint32_t ci = (uint32_t)d->n_cus;
		size_t first = d->n_cu_spans;

		rc = add_spans(d, &cudie, ci, &d->cu_spans, &d->n_cu_spans, &d->cu_spans_cap);
		if (rc)
			return rc;
		if (d->n_cu_spans == first)
			continue;
		if ((rc = SYM__GROW(d, d->cus, d->cus_cap, d->n_cus + 1)))
			return rc;
		struct sym__cu *c = &d->cus[d->n_cus++];
		memset(c, 0, sizeof(*c));
		c->die = cudie;
		Dwarf_Attribute a;
		const char *dir = dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &a));
		if (dir && dir[0])
			c->comp_dir = sym__intern(&d->strings, dir, strlen(dir));
	}
	sym__spans_sort(d->cu_spans, d->n_cu_spans);
	return 0;
}

struct raw_sym {
	uint64_t lo, hi;       /* hi == lo: size 0, ends at the next symbol */
	uint64_t sec_end;      /* end of the symbol's section */
	const char *name;
	int rank; /* higher wins among symbols at one address */
	int final; /* name is interned and demangled already (PLT entries) */
};

static int raw_sym_cmp(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return y->rank - x->rank;
}

static int collect_syms(struct sym_dwarf *d, struct raw_sym **v, size_t *n, size_t *cap)
{
	for (Elf_Scn *scn = elf_nextscn(d->elf, NULL); scn; scn = elf_nextscn(d->elf, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		size_t count = data->d_size / sh.sh_entsize;
		for (size_t i = 0; i < count && i < INT32_MAX; i++) {
			GElf_Sym s;
			if (!gelf_getsym(data, (int)i, &s))
				break;
			int type = GELF_ST_TYPE(s.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE ||
			    !good_range(s.st_value, s.st_value + s.st_size + !s.st_size))
				continue;
			GElf_Shdr ss;
			Elf_Scn *sec = elf_getscn(d->elf, s.st_shndx);
			if (!sec || !gelf_getshdr(sec, &ss) || ss.sh_addr + ss.sh_size < ss.sh_addr)
				continue;
			const char *name = elf_strptr(d->elf, sh.sh_link, s.st_name);
			if (!name || !name[0])
				continue;
			int rc = SYM__GROW(d, *v, *cap, *n + 1);
			if (rc)
				return rc;
			int bind = GELF_ST_BIND(s.st_info);
			int rank = (bind == STB_GLOBAL ? 4 : bind == STB_WEAK ? 2 : 0) +
				   (sh.sh_type == SHT_SYMTAB);
			(*v)[(*n)++] = (struct raw_sym){ s.st_value, s.st_value + s.st_size,
							 ss.sh_addr + ss.sh_size, name, rank, 0 };
		}
	}
	return 0;
}

struct plt_collect {
	struct sym_dwarf *d;
	struct raw_sym **v;
	size_t *n, *cap;
};

/* A PLT entry as a symbol "name@plt" (demangled first, as perf does). */
static int on_plt(void *ctx, uint64_t lo, uint64_t hi, const char *raw)
{
	struct plt_collect *c = ctx;
	const char *base = sym__demangle(&c->d->strings, raw), *name;
	size_t len;
	char *tmp;
	int rc;

	if (!base)
		return ERR_TOO_LARGE;
	len = strlen(base);
	if (!good_range(lo, hi) || len > SYM__MAX_NAME)
		return 0;
	if (!(tmp = malloc(len + sizeof("@plt"))))
		return ERR_NOMEM;
	memcpy(tmp, base, len);
	memcpy(tmp + len, "@plt", sizeof("@plt"));
	name = sym__intern(&c->d->strings, tmp, len + 4);
	free(tmp);
	if (!name)
		return ERR_TOO_LARGE;
	if ((rc = SYM__GROW(c->d, *c->v, *c->cap, *c->n + 1)))
		return rc;
	(*c->v)[(*c->n)++] = (struct raw_sym){ lo, hi, hi, name, 8, 1 };
	return 0;
}

/*
 * The PLT entries of the open file, else of `exe` (an executable of the
 * same build ID, opened here and closed again).
 */
static int collect_plt(struct sym_dwarf *d, const char *exe, struct plt_collect *c)
{
	struct sym_elf_info info;
	size_t before = *c->n;
	struct stat st;
	Elf *elf;
	int fd, rc;

	if ((rc = sym__plt_each(d->elf, on_plt, c)) || *c->n > before || !exe)
		return rc;
	if ((fd = open(exe, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return 0;
	}
	if (!sym__elf_info(elf, &info, NULL) && info.build_id_len &&
	    info.build_id_len == d->info.build_id_len &&
	    !memcmp(info.build_id, d->info.build_id, info.build_id_len))
		rc = sym__plt_each(elf, on_plt, c);
	elf_end(elf);
	close(fd);
	return rc;
}

static int build_symtab(struct sym_dwarf *d, const char *plt_from)
{
	struct raw_sym *v = NULL;
	size_t n = 0, cap = 0;
	struct plt_collect pc = { d, &v, &n, &cap };
	int rc = collect_syms(d, &v, &n, &cap);

	if (!rc)
		rc = collect_plt(d, plt_from, &pc);
	if (rc)
		goto out;
	if (n > 1)
		qsort(v, n, sizeof(*v), raw_sym_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && v[i].lo == v[i - 1].lo)
			continue; /* an alias: the best-ranked one came first */
		if (v[i].hi == v[i].lo) {
			/* Size 0 (crtstuff, asm): up to the next symbol in its section. */
			uint64_t end = v[i].sec_end;
			for (size_t j = i + 1; j < n; j++)
				if (v[j].lo > v[i].lo) {
					if (v[j].lo < end)
						end = v[j].lo;
					break;
				}
			if (end <= v[i].lo)
				continue;
			v[i].hi = end;
		}
		const char *name = v[i].final ? v[i].name : sym__demangle(&d->strings, v[i].name);
		if (!name) {
			rc = ERR_TOO_LARGE;
			goto out;
		}
		uint32_t k = (uint32_t)d->n_syms;
		if ((rc = SYM__GROW(d, d->syms, d->syms_cap, k + 1)) ||
		    (rc = SYM__GROW(d, d->sym_names, d->sym_names_cap, k + 1)))
			goto out;
		d->syms[k] = (struct sym__span){ v[i].lo, v[i].hi, 0, k };
		d->sym_names[k] = name;
		d->n_syms++;
	}
	sym__spans_sort(d->syms, d->n_syms);
out:
	SYM__FREE(d, v, cap);
	return rc;
}

/*
 * Opens `path` as the DWZ alt file of d: a regular file (never a FIFO or a
 * device named by an untrusted link) whose build ID is the one the link
 * names.
 */
static int open_alt_file(struct sym_dwarf *d, const char *path)
{
	struct sym_elf_info ai;
	struct stat st;

	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return ERR_NOT_FOUND;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ERR_NOT_FOUND;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Dwarf *alt = NULL;
	if (!elf || sym__elf_info(elf, &ai, NULL) != 0 ||
	    ai.build_id_len != d->info.alt_build_id_len ||
	    memcmp(ai.build_id, d->info.alt_build_id, ai.build_id_len) != 0 ||
	    !(alt = dwarf_begin_elf(elf, DWARF_C_READ, NULL))) {
		if (elf)
			elf_end(elf);
		close(fd);
		return ERR_NOT_FOUND;
	}
	dwarf_setalt(d->dw, alt);
	d->alt = alt;
	d->alt_elf = elf;
	d->alt_fd = fd;
	return 0;
}

/*
 * DWZ: DIEs and strings moved to the shared alt file (DW_FORM_GNU_ref_alt,
 * DW_FORM_GNU_strp_alt and the DWARF 5 _sup forms) resolve only once it is
 * set.  With a find_alt callback (the server: the store, then debuginfod, by
 * build ID) the callback is the only source, and without the alt file the
 * open fails: an index built without it would lack most names and inline
 * frames for good.  Without a callback (local tools) the name in the link
 * is tried, relative to the debug file's directory, and the file opens
 * without the alt DIEs when that fails.
 */
static int setup_alt(struct sym_dwarf *d, const char *path, const struct sym_dwarf_opts *o,
		     struct err_msg *msg)
{
	char *found = NULL;

	if (!(d->info.flags & SYM_HAS_ALTLINK))
		return 0;
	if (o && o->find_alt) {
		char hex[2 * SYM_BUILD_ID_MAX + 1];
		int rc = o->find_alt(o->ctx, d->info.alt_build_id, d->info.alt_build_id_len,
				     d->info.alt_name, &found);
		if (rc == 0 && found) {
			rc = open_alt_file(d, found);
			free(found);
			if (rc == 0)
				return 0;
		}
		sym_build_id_hex(d->info.alt_build_id, d->info.alt_build_id_len, hex);
		return err_set(msg, ERR_NOT_FOUND,
			       "alt_not_found: the DWZ alt file %s (build ID %s) this debug file "
			       "refers to is neither uploaded nor upstream", d->info.alt_name, hex);
	}
	if (d->info.alt_name[0] == '/') {
		open_alt_file(d, d->info.alt_name);
	} else if (path) {
		const char *slash = strrchr(path, '/');
		int dirlen = slash ? (int)(slash - path) : 1;
		char buf[4096];
		int w = snprintf(buf, sizeof(buf), "%.*s/%s", dirlen, slash ? path : ".",
				 d->info.alt_name);
		if (w > 0 && (size_t)w < sizeof(buf))
			open_alt_file(d, buf);
	}
	return 0;
}

static int setup(struct sym_dwarf *d, const char *path, const struct sym_dwarf_opts *o,
		 struct err_msg *msg)
{
	enum sym_reason reason;
	int rc = sym__elf_info(d->elf, &d->info, msg);

	if (rc)
		return rc;
	if ((rc = sym_elf_check(&d->info, o ? o->build_id : NULL,
				o ? o->build_id_len : 0, 0, &reason, msg)))
		return rc;
	if (d->info.flags & SYM_HAS_DEBUG_INFO) {
		d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
		if (!d->dw && !(d->info.flags & (SYM_HAS_SYMTAB | SYM_HAS_DYNSYM)))
			return err_set(msg, ERR_INVALID, "invalid_elf: DWARF: %s",
				       dwarf_errmsg(-1));
	}
	if (d->dw) {
		if ((rc = setup_alt(d, path, o, msg)))
			return rc;
		if ((rc = build_cu_table(d)))
			return err_set(msg, rc, "DWARF CU table: %s", err_str(rc));
	}
	if ((rc = build_symtab(d, o ? o->plt_from : NULL)))
		return err_set(msg, rc, "symbol table: %s", err_str(rc));
	return 0;
}

static struct sym_dwarf *dwarf_new(const struct sym_dwarf_opts *o)
{
	struct sym_dwarf *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->fd = d->alt_fd = -1;
	grow_budget_init(&d->budget, o && o->max_memory ? o->max_memory : DEFAULT_MEM_CAP);
	d->flags = o ? o->flags : 0;
	intern_init(&d->strings, HMAP_MAX, d->budget.cap, &d->budget.alloc);
	sym__ptrmap_init(&d->names, &d->budget.alloc);
	sym__ptrmap_init(&d->paths, &d->budget.alloc);
	sym__ptrmap_init(&d->origins, &d->budget.alloc);
	return d;
}

/* The end of an open: hands d out, or closes it when rc is a failure. */
static int opened(struct sym_dwarf *d, int rc, struct sym_dwarf **out)
{
	if (rc) {
		sym_dwarf_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

int sym_dwarf_open(const char *path, const struct sym_dwarf_opts *opts,
		   struct sym_dwarf **out, struct err_msg *msg)
{
	int rc;
	struct sym_dwarf *d = dwarf_new(opts);

	if (!d)
		return ERR_NOMEM;
	sym__elf_init();
	d->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0)
		rc = err_set(msg, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO, "%s: %s",
			     path, strerror(errno));
	else if (!(d->elf = elf_begin(d->fd, ELF_C_READ_MMAP, NULL)))
		rc = err_set(msg, ERR_INVALID, "invalid_elf: %s: %s", path, elf_errmsg(-1));
	else
		rc = setup(d, path, opts, msg);
	return opened(d, rc, out);
}

int sym_dwarf_open_mem(const void *data, size_t len, const struct sym_dwarf_opts *opts,
		       struct sym_dwarf **out, struct err_msg *msg)
{
	int rc;
	struct sym_dwarf *d;

	if (len < EI_NIDENT || memcmp(data, ELFMAG, SELFMAG) != 0)
		return err_set(msg, ERR_INVALID, "invalid_elf: no ELF magic");
	if (!(d = dwarf_new(opts)))
		return ERR_NOMEM;
	sym__elf_init();
	/* libelf may convert a memory image in place: it gets a private copy. */
	if (!(d->mem = malloc(len)))
		return opened(d, ERR_NOMEM, out);
	memcpy(d->mem, data, len);
	if (!(d->elf = elf_memory(d->mem, len)))
		rc = err_set(msg, ERR_INVALID, "invalid_elf: %s", elf_errmsg(-1));
	else
		rc = setup(d, NULL, opts, msg);
	return opened(d, rc, out);
}

void sym_dwarf_close(struct sym_dwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_cus; i++) {
		struct sym__cu *cu = &d->cus[i];
		for (size_t j = 0; j < cu->n_funcs; j++) {
			SYM__FREE(d, cu->funcs[j].nodes, cu->funcs[j].nodes_cap);
			SYM__FREE(d, cu->funcs[j].spans, cu->funcs[j].spans_cap);
		}
		SYM__FREE(d, cu->funcs, cu->funcs_cap);
		SYM__FREE(d, cu->spans, cu->spans_cap);
		scan_free(d, cu->scan);
	}
	SYM__FREE(d, d->cus, d->cus_cap);
	SYM__FREE(d, d->cu_spans, d->cu_spans_cap);
	SYM__FREE(d, d->syms, d->syms_cap);
	SYM__FREE(d, d->sym_names, d->sym_names_cap);
	sym__ptrmap_release(&d->names);
	sym__ptrmap_release(&d->paths);
	sym__ptrmap_release(&d->origins);
	intern_release(&d->strings);
	if (d->dw)
		dwarf_end(d->dw);
	if (d->alt)
		dwarf_end(d->alt);
	if (d->alt_elf)
		elf_end(d->alt_elf);
	if (d->alt_fd >= 0)
		close(d->alt_fd);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	free(d->mem);
	free(d);
}

const struct sym_elf_info *sym_dwarf_info(const struct sym_dwarf *d)
{
	return &d->info;
}

/* ---- lookup ---- */

struct line_loc {
	const char *file;
	uint32_t line, col;
};

static void line_at(struct sym_dwarf *d, struct sym__cu *cu, uint64_t pc, struct line_loc *l)
{
	Dwarf_Line *row = dwarf_getsrc_die(&cu->die, pc);
	int v;
	const char *raw;

	if (!row)
		return;
	raw = dwarf_linesrc(row, NULL, NULL);
	if (raw)
		l->file = abs_path(d, cu, raw);
	if (dwarf_lineno(row, &v) == 0 && v > 0)
		l->line = (uint32_t)v;
	if (dwarf_linecol(row, &v) == 0 && v > 0)
		l->col = (uint32_t)v;
}

int sym_dwarf_lookup(struct sym_dwarf *d, uint64_t pc, struct sym_frame *frames,
		     size_t max, size_t *n)
{
	const struct sym__span *s = sym__span_find(d->cu_spans, d->n_cu_spans, pc);
	struct sym__cu *cu = s ? &d->cus[s->idx] : NULL;
	struct sym__func *fn = NULL;
	struct line_loc loc = { NULL, 0, 0 };
	uint32_t chain[SYM_MAX_FRAMES];
	size_t depth = 0, k = 0;
	int rc;

	assert(n && (frames || max == 0));
	if (cu) {
		if ((rc = load_cu(d, cu)))
			return rc;
		/* A CU whose table failed to build half-way is not trusted. */
		s = cu->loaded > 0 ? sym__span_find(cu->spans, cu->n_spans, pc) : NULL;
		if (s) {
			fn = &cu->funcs[s->idx];
			if ((rc = load_func(d, cu, fn)))
				return rc;
			if (fn->loaded < 0)
				fn = NULL;
		}
		line_at(d, cu, pc, &loc);
	}
	if (fn) {
		uint32_t cur = 0;
		chain[depth++] = 0;
		while (depth < SYM_MAX_FRAMES) {
			const struct sym__node *nd = &fn->nodes[cur];
			s = sym__span_find(fn->spans + nd->kids, nd->n_kids, pc);
			if (!s)
				break;
			cur = s->idx;
			chain[depth++] = cur;
		}
	}
	const struct sym__span *sym = sym__span_find(d->syms, d->n_syms, pc);
	const char *sym_name = sym ? d->sym_names[sym->idx] : NULL;

	if (depth == 0) {
		if ((sym_name || loc.file) && max > 0) {
			frames[0] = (struct sym_frame){ sym_name, loc.file, loc.line,
							loc.col, sym_name ? SYM_FRAME_SYMTAB : 0 };
			k = 1;
		}
		*n = k;
		return 0;
	}
	for (k = 0; k < depth && k < max; k++) {
		const struct sym__node *nd = &fn->nodes[chain[depth - 1 - k]];
		struct sym_frame *f = &frames[k];
		f->function = nd->name;
		f->flags = k + 1 < depth ? SYM_FRAME_INLINED : 0;
		if (k == 0) {
			f->file = loc.file;
			f->line = loc.line;
			f->column = loc.col;
		} else {
			const struct sym__node *in = &fn->nodes[chain[depth - k]];
			f->file = in->call_file;
			f->line = in->call_line;
			f->column = in->call_col;
		}
		if (!f->function && k + 1 == depth && sym_name) {
			f->function = sym_name;
			f->flags |= SYM_FRAME_SYMTAB;
		}
	}
	*n = k;
	return 0;
}

static int dwarf_lookup(void *ctx, uint64_t vaddr, struct sym_frame *frames, size_t max,
			size_t *n)
{
	return sym_dwarf_lookup(ctx, vaddr, frames, max, n);
}

int sym_dwarf_lookup_caller(struct sym_dwarf *d, uint64_t ret, struct sym_frame *frames,
			    size_t max, size_t *n)
{
	return sym__lookup_caller(dwarf_lookup, d, ret, frames, max, n);
}

int sym_dwarf_resolve(struct sym_dwarf *d, const uint64_t *vaddrs, size_t n,
		      sym_frames_fn fn, void *ctx)
{
	struct sym_frame frames[SYM_MAX_FRAMES];

	assert(fn && (vaddrs || n == 0));
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		int rc = sym_dwarf_lookup(d, vaddrs[i], frames, SYM_MAX_FRAMES, &k);
		if (rc)
			return rc;
		if ((rc = fn(ctx, i, vaddrs[i], frames, k)))
			return rc;
	}
	return 0;
}

/* ---- whole-file passes for the index writer ---- */

int sym__dwarf_load_all(struct sym_dwarf *d)
{
	for (size_t i = 0; i < d->n_cus; i++) {
		struct sym__cu *cu = &d->cus[i];
		int rc = load_cu(d, cu);
		if (rc)
			return rc;
		for (size_t j = 0; j < cu->n_funcs; j++)
			if ((rc = load_func(d, cu, &cu->funcs[j])))
				return rc;
	}
	return 0;
}

static int push(struct sym_dwarf *d, uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	int rc = SYM__GROW(d, *v, *cap, *n + 1);
	if (rc)
		return rc;
	(*v)[(*n)++] = x;
	return 0;
}

static int push_spans(struct sym_dwarf *d, const struct sym__span *s, size_t ns,
		      uint64_t **v, size_t *n, size_t *cap)
{
	for (size_t i = 0; i < ns; i++) {
		int rc = push(d, v, n, cap, s[i].lo);
		if (rc || (rc = push(d, v, n, cap, s[i].hi)))
			return rc;
	}
	return 0;
}

int sym__dwarf_boundaries(struct sym_dwarf *d, uint64_t **v, size_t *n, size_t *cap)
{
	int rc = push_spans(d, d->cu_spans, d->n_cu_spans, v, n, cap);
	/* Line rows outside every CU (tombstoned sequences at 0) change nothing. */
	uint64_t lo_all = d->n_cu_spans ? d->cu_spans[0].lo : 0;
	uint64_t hi_all = d->n_cu_spans ? d->cu_spans[d->n_cu_spans - 1].maxhi : 0;

	if (rc || (rc = push_spans(d, d->syms, d->n_syms, v, n, cap)))
		return rc;
	for (size_t i = 0; i < d->n_cus; i++) {
		struct sym__cu *cu = &d->cus[i];
		if ((rc = push_spans(d, cu->spans, cu->n_spans, v, n, cap)))
			return rc;
		for (size_t j = 0; j < cu->n_funcs; j++)
			if ((rc = push_spans(d, cu->funcs[j].spans, cu->funcs[j].n_spans,
					     v, n, cap)))
				return rc;
		Dwarf_Lines *lines;
		size_t nl;
		if (dwarf_getsrclines(&cu->die, &lines, &nl) != 0)
			continue;
		for (size_t j = 0; j < nl; j++) {
			Dwarf_Addr a;
			if (dwarf_lineaddr(dwarf_onesrcline(lines, j), &a) == 0 &&
			    a >= lo_all && a <= hi_all && (rc = push(d, v, n, cap, a)))
				return rc;
		}
	}
	return 0;
}
