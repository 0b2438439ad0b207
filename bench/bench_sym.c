/*
 * bench_sym.c - bench-sym: the C side of bench/bench_sym.sh, one engine per
 * process so each run's peak RSS is its own.
 *
 *   bench-sym dwarf ELF ADDRS          raw DWARF (sym_dwarf_open + resolve)
 *   bench-sym index-build ELF OUT      builds the compact index into OUT
 *   bench-sym index INDEX ADDRS [R]    sym_index_open + lookups, R rounds
 *   bench-sym name-pprof IN OUT DIR    names a raw-address pprof offline
 *
 * ADDRS is a text file of ELF virtual addresses, one hex number a line (the
 * same file llvm-symbolizer reads).  Addresses are resolved in file order,
 * as llvm-symbolizer does.  Each mode prints one line `key=value ...` on
 * stdout: seconds of the phases, addresses per second, frames returned (a
 * checksum of the work), and peak RSS from getrusage.
 *
 * name-pprof rewrites a gzipped pprof whose mappings have no functions into
 * one with Functions and Lines (inline frames as several Lines), from
 * DIR/<build-id>.debug through the same raw DWARF/symtab engine the server
 * uses: the "already named" variant of the same profiles for the query
 * latency comparison.  Non-leaf-only locations are looked up at vaddr - 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/hmap.h"
#include "profile.pb-c.h"
#include "symbolize/symbolize.h"

#define MAX_ADDRS (50u * 1000 * 1000)
#define MAX_FILE (1u << 30)
#define MAX_FUNCTIONS (16u << 20) /* named in one pprof */
#define MAX_STRINGS (64u << 20)   /* of one pprof's string table, old and new */
#define MAX_LINES (64u << 20)     /* of one pprof's locations, inline frames included */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double peak_rss_mb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

/* Reads hex addresses, one a line; malloc'd array in *out. */
static int read_addrs(const char *path, uint64_t **out, size_t *n)
{
	char line[128];
	size_t cap = 0, k = 0;
	uint64_t *v = NULL;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "bench-sym: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) && k < MAX_ADDRS) {
		char *end;
		uint64_t a = strtoull(line, &end, 16);
		if (end == line)
			continue;
		if (GROW(v, cap, k + 1, MAX_ADDRS, NULL)) {
			free(v);
			fclose(f);
			return -1;
		}
		v[k++] = a;
	}
	fclose(f);
	*out = v;
	*n = k;
	return k ? 0 : -1;
}

struct count {
	uint64_t frames, named;
};

static int count_frames(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	struct count *c = ctx;
	(void)i;
	(void)vaddr;
	c->frames += n;
	c->named += n && f[0].function;
	return 0;
}

static int run_dwarf(const char *elf, const char *addrs_path)
{
	struct err_msg msg = { "" };
	struct sym_dwarf *d = NULL;
	struct count c = { 0, 0 };
	uint64_t *a;
	size_t n;

	if (read_addrs(addrs_path, &a, &n))
		return 1;
	double t0 = now();
	if (sym_dwarf_open(elf, NULL, &d, &msg)) {
		fprintf(stderr, "bench-sym: %s: %s\n", elf, msg.text);
		free(a);
		return 1;
	}
	double t1 = now();
	int rc = sym_dwarf_resolve(d, a, n, count_frames, &c);
	double t2 = now();
	if (rc)
		fprintf(stderr, "bench-sym: resolve failed: %d\n", rc);
	printf("engine=dwarf addresses=%zu open_s=%.4f resolve_s=%.4f total_s=%.4f "
	       "addr_per_s=%.0f frames=%" PRIu64 " named=%" PRIu64 " peak_rss_mb=%.1f\n",
	       n, t1 - t0, t2 - t1, t2 - t0, (double)n / (t2 - t0), c.frames, c.named,
	       peak_rss_mb());
	sym_dwarf_close(d);
	free(a);
	return rc ? 1 : 0;
}

static int run_index_build(const char *elf, const char *out)
{
	struct err_msg msg = { "" };
	struct sym_index_stats st;
	double t0 = now();

	if (sym_index_build(elf, out, NULL, &st, &msg)) {
		fprintf(stderr, "bench-sym: index of %s: %s\n", elf, msg.text);
		return 1;
	}
	printf("engine=index-build build_s=%.3f ranges=%" PRIu64 " locations=%" PRIu64
	       " functions=%" PRIu64 " file_mb=%.1f peak_rss_mb=%.1f\n",
	       now() - t0, st.ranges, st.locations, st.functions, (double)st.file_bytes / 1e6,
	       peak_rss_mb());
	return 0;
}

static int run_index(const char *path, const char *addrs_path, int rounds)
{
	struct err_msg msg = { "" };
	struct sym_index *x = NULL;
	struct sym_frame f[SYM_MAX_FRAMES];
	uint64_t *a, frames = 0, named = 0;
	size_t n, k;
	double best = 1e9;

	if (read_addrs(addrs_path, &a, &n))
		return 1;
	double t0 = now();
	if (sym_index_open(path, NULL, 0, &x, &msg)) {
		fprintf(stderr, "bench-sym: %s: %s\n", path, msg.text);
		free(a);
		return 1;
	}
	double t_open = now() - t0, first = 0;
	for (int r = 0; r < rounds; r++) {
		double s = now();
		frames = named = 0;
		for (size_t i = 0; i < n; i++) {
			sym_index_lookup(x, a[i], f, SYM_MAX_FRAMES, &k);
			frames += k;
			named += k && f[0].function;
		}
		double t = now() - s;
		if (r == 0)
			first = t;
		if (t < best)
			best = t;
	}
	printf("engine=index addresses=%zu open_s=%.4f first_round_s=%.4f best_round_s=%.4f "
	       "total_s=%.4f addr_per_s=%.0f addr_per_s_first=%.0f frames=%" PRIu64
	       " named=%" PRIu64 " peak_rss_mb=%.1f\n",
	       n, t_open, first, best, t_open + first, (double)n / best,
	       (double)n / (t_open + first), frames, named, peak_rss_mb());
	sym_index_close(x);
	free(a);
	return 0;
}

/* ---- name-pprof ---- */

/* The interned (name, file) pointers of a function. */
struct fnkey {
	const char *name, *file;
};

struct namer {
	char **strings; /* the new string table: old entries borrowed, new owned */
	size_t n_strings, cap_strings, n_old;
	struct hmap fn_index; /* hash of (name, file) -> index in fns and keys */
	struct fnkey *keys;   /* keys[i]: what fns[i] was made from */
	size_t cap_keys;
	Perftools__Profiles__Function **fns;
	size_t n_fns, cap_fns;
};

static int64_t add_string(struct namer *nm, const char *s)
{
	if (!s)
		return 0;
	if (GROW(nm->strings, nm->cap_strings, nm->n_strings + 1, MAX_STRINGS, NULL))
		return -1;
	nm->strings[nm->n_strings] = strdup(s);
	if (!nm->strings[nm->n_strings])
		return -1;
	return (int64_t)nm->n_strings++;
}

static uint64_t function_id(struct namer *nm, const struct sym_frame *f)
{
	/* Names and files are interned by the engine: pointers identify them. */
	uint64_t h = hash_combine(hash_u64((uintptr_t)f->function), (uintptr_t)f->file);
	struct hmap_probe pr;

	for (uint32_t i = hmap_first(&nm->fn_index, h, &pr); i != HMAP_NONE;
	     i = hmap_next(&nm->fn_index, &pr))
		if (nm->keys[i].name == f->function && nm->keys[i].file == f->file)
			return nm->fns[i]->id;
	if (GROW(nm->fns, nm->cap_fns, nm->n_fns + 1, MAX_FUNCTIONS, NULL) ||
	    GROW(nm->keys, nm->cap_keys, nm->n_fns + 1, MAX_FUNCTIONS, NULL))
		return 0;
	Perftools__Profiles__Function *fn = malloc(sizeof(*fn));
	if (!fn)
		return 0;
	perftools__profiles__function__init(fn);
	fn->id = nm->n_fns + 1;
	fn->name = add_string(nm, f->function);
	fn->system_name = fn->name;
	fn->filename = add_string(nm, f->file);
	if (fn->name < 0 || fn->filename < 0) {
		free(fn);
		return 0;
	}
	if (hmap_put_probed(&nm->fn_index, &pr, (uint32_t)nm->n_fns)) {
		free(fn);
		return 0;
	}
	nm->keys[nm->n_fns].name = f->function;
	nm->keys[nm->n_fns].file = f->file;
	nm->fns[nm->n_fns++] = fn;
	return fn->id;
}

/* vaddr of a file offset; the .debug rule of docs/symbolization.md. */
static int to_vaddr(const struct sym_elf_info *info, uint64_t off, uint64_t file_offset,
		    int ret, uint64_t *va)
{
	if (!(info->flags & SYM_SEGMENTS_FROM_DEBUG))
		return sym_addr_to_vaddr(info, off, ret ? SYM_ADDR_RETURN : 0, va);
	for (size_t i = 0; i < info->n_segments; i++) {
		const struct sym_segment *s = &info->segments[i];
		uint64_t p_off = file_offset + s->vaddr % 4096;
		if ((s->flags & 1) && off >= p_off && off - p_off < s->memsz) {
			*va = off - p_off + s->vaddr - (ret ? 1 : 0);
			return 0;
		}
	}
	return ERR_NOT_FOUND;
}

static int run_name_pprof(const char *in, const char *out, const char *dir)
{
	struct err_msg msg = { "" };
	struct buf raw, pb, packed, gz;
	struct namer nm;
	Perftools__Profiles__Profile *p = NULL;
	struct sym_dwarf **dw = NULL;
	Perftools__Profiles__Line *lines = NULL, **line_ptrs = NULL;
	size_t *saved_n = NULL, *start = NULL;
	Perftools__Profiles__Line ***saved_line = NULL;
	unsigned char *leaf = NULL;
	size_t n_lines = 0, cap_lines = 0;
	int rc = 1, restore = 0;

	memset(&nm, 0, sizeof(nm));
	hmap_init(&nm.fn_index, MAX_FUNCTIONS, NULL);
	buf_init(&raw, MAX_FILE);
	buf_init(&pb, MAX_FILE);
	buf_init(&packed, MAX_FILE);
	buf_init(&gz, MAX_FILE);
	if (buf_read_file(&raw, in) || gunzip_capped(raw.data, raw.len, MAX_FILE, &pb, &msg)) {
		fprintf(stderr, "bench-sym: cannot read %s %s\n", in, msg.text);
		goto out;
	}
	p = perftools__profiles__profile__unpack(NULL, pb.len, (const uint8_t *)pb.data);
	if (!p) {
		fprintf(stderr, "bench-sym: %s is not a pprof\n", in);
		goto out;
	}
	dw = calloc(p->n_mapping + 1, sizeof(*dw));
	leaf = calloc(p->n_location + 1, 1);
	saved_n = calloc(p->n_location + 1, sizeof(*saved_n));
	saved_line = calloc(p->n_location + 1, sizeof(*saved_line));
	start = malloc((p->n_location + 1) * sizeof(*start));
	if (!dw || !leaf || !saved_n || !saved_line || !start)
		goto out;
	for (size_t l = 0; l < p->n_location; l++)
		start[l] = SIZE_MAX;
	for (size_t m = 0; m < p->n_mapping; m++) {
		const Perftools__Profiles__Mapping *mp = p->mapping[m];
		char path[4096];
		if (mp->build_id <= 0 || (size_t)mp->build_id >= p->n_string_table)
			continue;
		snprintf(path, sizeof(path), "%s/%s.debug", dir, p->string_table[mp->build_id]);
		if (sym_dwarf_open(path, NULL, &dw[m], &msg))
			dw[m] = NULL; /* not every mapping has a debug file */
	}
	/* Location ids are dense in our profiles; map id -> index otherwise. */
	for (size_t s = 0; s < p->n_sample; s++)
		if (p->sample[s]->n_location_id)
			for (size_t l = 0; l < p->n_location; l++)
				if (p->location[l]->id == p->sample[s]->location_id[0]) {
					leaf[l] = 1;
					break;
				}
	nm.n_old = p->n_string_table;
	nm.cap_strings = p->n_string_table + 1024;
	nm.strings = malloc(nm.cap_strings * sizeof(char *));
	if (!nm.strings)
		goto out;
	memcpy(nm.strings, p->string_table, p->n_string_table * sizeof(char *));
	nm.n_strings = p->n_string_table;
	for (size_t l = 0; l < p->n_location; l++) {
		saved_n[l] = p->location[l]->n_line;
		saved_line[l] = p->location[l]->line;
	}
	restore = 1;
	for (size_t l = 0; l < p->n_location; l++) {
		Perftools__Profiles__Location *loc = p->location[l];
		struct sym_frame f[SYM_MAX_FRAMES];
		size_t nf = 0, m;
		uint64_t va;

		for (m = 0; m < p->n_mapping; m++)
			if (p->mapping[m]->id == loc->mapping_id)
				break;
		if (m == p->n_mapping || !dw[m] || loc->n_line)
			continue;
		const Perftools__Profiles__Mapping *mp = p->mapping[m];
		uint64_t off = loc->address - mp->memory_start + mp->file_offset;
		if (to_vaddr(sym_dwarf_info(dw[m]), off, mp->file_offset, !leaf[l], &va) ||
		    sym_dwarf_lookup(dw[m], va, f, SYM_MAX_FRAMES, &nf) || !nf)
			continue;
		/* pointers into `lines` are taken after the loop */
		if (GROW(lines, cap_lines, n_lines + nf, MAX_LINES, NULL))
			goto out;
		loc->n_line = nf;
		start[l] = n_lines; /* loc->line is set once `lines` stops moving */
		for (size_t i = 0; i < nf; i++) {
			Perftools__Profiles__Line *ln = &lines[n_lines++];
			perftools__profiles__line__init(ln);
			ln->function_id = function_id(&nm, &f[i]);
			if (!ln->function_id)
				goto out;
			ln->line = f[i].line;
			ln->column = f[i].column;
		}
	}
	line_ptrs = malloc((n_lines + 1) * sizeof(*line_ptrs));
	if (!line_ptrs)
		goto out;
	for (size_t i = 0; i < n_lines; i++)
		line_ptrs[i] = &lines[i];
	for (size_t l = 0; l < p->n_location; l++)
		if (start[l] != SIZE_MAX)
			p->location[l]->line = line_ptrs + start[l];
	for (size_t m = 0; m < p->n_mapping; m++)
		if (dw[m]) {
			p->mapping[m]->has_functions = 1;
			p->mapping[m]->has_filenames = 1;
			p->mapping[m]->has_line_numbers = 1;
			p->mapping[m]->has_inline_frames = 1;
		}
	char **old_strings = p->string_table;
	size_t old_n_strings = p->n_string_table, old_n_fn = p->n_function;
	Perftools__Profiles__Function **old_fn = p->function;
	p->string_table = nm.strings;
	p->n_string_table = nm.n_strings;
	p->function = nm.fns;
	p->n_function = nm.n_fns;
	size_t len = perftools__profiles__profile__get_packed_size(p);
	if (!buf_reserve(&packed, len)) {
		perftools__profiles__profile__pack(p, (uint8_t *)packed.data);
		packed.len = len;
	}
	p->string_table = old_strings;
	p->n_string_table = old_n_strings;
	p->function = old_fn;
	p->n_function = old_n_fn;
	if (packed.len != len || gzip_compress(packed.data, packed.len, 1, &gz))
		goto out;
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(gz.data, 1, gz.len, f) != gz.len || fclose(f) != 0) {
		fprintf(stderr, "bench-sym: cannot write %s\n", out);
		goto out;
	}
	rc = 0;
out:
	for (size_t l = 0; restore && l < p->n_location; l++) {
		/* the message's own lines, before free_unpacked */
		p->location[l]->line = saved_line[l];
		p->location[l]->n_line = saved_n[l];
	}
	for (size_t i = nm.n_old; i < nm.n_strings; i++)
		free(nm.strings[i]);
	free(nm.strings);
	for (size_t i = 0; i < nm.n_fns; i++)
		free(nm.fns[i]);
	free(nm.fns);
	free(nm.keys);
	hmap_release(&nm.fn_index);
	free(lines);
	free(line_ptrs);
	for (size_t m = 0; dw && p && m < p->n_mapping; m++)
		sym_dwarf_close(dw[m]);
	free(dw);
	free(leaf);
	free(saved_n);
	free(saved_line);
	free(start);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	buf_release(&raw);
	buf_release(&pb);
	buf_release(&packed);
	buf_release(&gz);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "dwarf"))
		return run_dwarf(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "index-build"))
		return run_index_build(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "index"))
		return run_index(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 5);
	if (argc >= 5 && !strcmp(argv[1], "name-pprof"))
		return run_name_pprof(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: bench-sym dwarf ELF ADDRS | index-build ELF OUT |"
			" index INDEX ADDRS [ROUNDS] | name-pprof IN OUT DEBUG_DIR\n");
	return 2;
}
