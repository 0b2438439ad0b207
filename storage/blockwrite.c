/*
 * blockwrite.c - writing one block file: the symbols each service's samples
 * reference, rebuilt from the sources' views (head partitions or other
 * blocks), the series and their pages streamed to a temporary file, then the
 * symbol sections, the index, the footer and the trailer; fsync, rename,
 * fsync of the directory.  Layout: storage_int.h, section 9.
 *
 * Memory: the symbols of the service being written, its source memos, the
 * compressed symbol sections of the services done, the series index and one
 * page; never the samples of the block.
 */
#include "storage_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/compress.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/intern.h"
#include "base/varint.h"

#define WBUF_BYTES ((size_t)256 << 10)
#define MAX_REMAP_DEPTH (1u << 20)

/* ---- the symbols of one service being written ------------------------------ */

struct oloc {
	uint64_t address;
	uint32_t mapping, line0, n_lines;
};

struct sbuild {
	struct intern str; /* id 0 is "" */
	struct sym_mapping *map;
	size_t n_map, cap_map;
	struct hmap map_ix;
	struct sym_function *fn;
	size_t n_fn, cap_fn;
	struct hmap fn_ix;
	struct oloc *loc;
	size_t n_loc, cap_loc;
	struct hmap loc_ix;
	struct store_line *lines;
	size_t n_lines, cap_lines;
	struct sym_stack *stk;
	size_t n_stk, cap_stk;
	struct hmap stk_ix;
};

/* What the ids of one source view became in the service being written. */
struct srcmemo {
	const struct store_symbols *v;
	uint32_t *id[SYM_NKINDS]; /* [kind][source id] -> output id, 0 unknown */
};

static void sbuild_init(struct sbuild *b)
{
	memset(b, 0, sizeof(*b));
	intern_init(&b->str, STORE_MAX_SYMBOLS, STORE_MAX_POOL_BYTES, NULL);
	hmap_init(&b->map_ix, STORE_MAX_SYMBOLS, NULL);
	hmap_init(&b->fn_ix, STORE_MAX_SYMBOLS, NULL);
	hmap_init(&b->loc_ix, STORE_MAX_SYMBOLS, NULL);
	hmap_init(&b->stk_ix, STORE_MAX_SYMBOLS, NULL);
}

static void sbuild_release(struct sbuild *b)
{
	intern_release(&b->str);
	free(b->map);
	free(b->fn);
	free(b->loc);
	free(b->lines);
	free(b->stk);
	hmap_release(&b->map_ix);
	hmap_release(&b->fn_ix);
	hmap_release(&b->loc_ix);
	hmap_release(&b->stk_ix);
	memset(b, 0, sizeof(*b));
}

static int out_str(struct sbuild *b, const struct store_symbols *v, uint32_t id,
		   uint32_t *memo, uint32_t *out)
{
	const struct sym_string *e;
	int rc;

	if (id == 0) {
		*out = 0;
		return 0;
	}
	if (id > v->count[SYM_STRING])
		return ERR_CORRUPT;
	if (memo[id]) {
		*out = memo[id];
		return 0;
	}
	e = sv_str(v, id);
	rc = intern_put(&b->str, e->s, e->len, out);
	if (!rc)
		memo[id] = *out;
	return rc;
}

static int map_same(const struct sym_mapping *a, const struct sym_mapping *b)
{
	if (!!(a->flags & STORE_MAP_ADDR_VADDR) != !!(b->flags & STORE_MAP_ADDR_VADDR))
		return 0;
	if (a->build_id || b->build_id)
		return a->build_id == b->build_id;
	return a->filename == b->filename;
}

static int out_mapping(struct sbuild *b, struct srcmemo *m, uint32_t id, uint32_t *out)
{
	const struct store_symbols *v = m->v;
	struct sym_mapping e;
	struct hmap_probe pr;
	uint64_t h;
	uint32_t i;
	int rc;

	if (id == 0) {
		*out = 0;
		return 0;
	}
	if (id > v->count[SYM_MAPPING])
		return ERR_CORRUPT;
	if (m->id[SYM_MAPPING][id]) {
		*out = m->id[SYM_MAPPING][id];
		return 0;
	}
	e = *sv_map(v, id);
	rc = out_str(b, v, e.filename, m->id[SYM_STRING], &e.filename);
	if (!rc)
		rc = out_str(b, v, e.build_id, m->id[SYM_STRING], &e.build_id);
	if (rc)
		return rc;
	h = store__map_hash(e.filename, e.build_id, e.flags);
	for (i = hmap_first(&b->map_ix, h, &pr); i != HMAP_NONE; i = hmap_next(&b->map_ix, &pr))
		if (map_same(&b->map[i], &e))
			break;
	if (i == HMAP_NONE) {
		rc = GROW(b->map, b->cap_map, b->n_map + 1, STORE_MAX_SYMBOLS, NULL);
		if (!rc)
			rc = hmap_put_probed(&b->map_ix, &pr, (uint32_t)b->n_map);
		if (rc)
			return rc;
		b->map[b->n_map] = e;
		i = (uint32_t)b->n_map++;
	}
	*out = m->id[SYM_MAPPING][id] = i + 1;
	return 0;
}

static int out_function(struct sbuild *b, struct srcmemo *m, uint32_t id, uint32_t *out)
{
	const struct store_symbols *v = m->v;
	struct sym_function e;
	struct hmap_probe pr;
	uint32_t i;
	int rc;

	if (id == 0) {
		*out = 0;
		return 0;
	}
	if (id > v->count[SYM_FUNCTION])
		return ERR_CORRUPT;
	if (m->id[SYM_FUNCTION][id]) {
		*out = m->id[SYM_FUNCTION][id];
		return 0;
	}
	e = *sv_fn(v, id);
	rc = out_str(b, v, e.name, m->id[SYM_STRING], &e.name);
	if (!rc)
		rc = out_str(b, v, e.system_name, m->id[SYM_STRING], &e.system_name);
	if (!rc)
		rc = out_str(b, v, e.filename, m->id[SYM_STRING], &e.filename);
	if (rc)
		return rc;
	for (i = hmap_first(&b->fn_ix, store__fn_hash(&e), &pr); i != HMAP_NONE;
	     i = hmap_next(&b->fn_ix, &pr)) {
		const struct sym_function *o = &b->fn[i];
		if (o->name == e.name && o->system_name == e.system_name &&
		    o->filename == e.filename && o->start_line == e.start_line)
			break;
	}
	if (i == HMAP_NONE) {
		rc = GROW(b->fn, b->cap_fn, b->n_fn + 1, STORE_MAX_SYMBOLS, NULL);
		if (!rc)
			rc = hmap_put_probed(&b->fn_ix, &pr, (uint32_t)b->n_fn);
		if (rc)
			return rc;
		b->fn[b->n_fn] = e;
		i = (uint32_t)b->n_fn++;
	}
	*out = m->id[SYM_FUNCTION][id] = i + 1;
	return 0;
}

static int out_location(struct sbuild *b, struct srcmemo *m, uint32_t id, uint32_t *out)
{
	const struct store_symbols *v = m->v;
	const struct sym_location *e;
	struct hmap_probe pr;
	uint32_t mapping, i;
	size_t line0 = b->n_lines;
	uint64_t h;
	int rc;

	if (id == 0 || id > v->count[SYM_LOCATION])
		return ERR_CORRUPT;
	if (m->id[SYM_LOCATION][id]) {
		*out = m->id[SYM_LOCATION][id];
		return 0;
	}
	e = sv_loc(v, id);
	rc = out_mapping(b, m, e->mapping_id, &mapping);
	if (!rc)
		rc = GROW(b->lines, b->cap_lines, b->n_lines + e->n_lines, (size_t)UINT32_MAX, NULL);
	if (rc)
		return rc;
	/* The lines go where they would be kept, and are dropped again on a hit. */
	for (uint32_t j = 0; j < e->n_lines; j++) {
		struct store_line *l = &b->lines[line0 + j];
		*l = e->lines[j];
		rc = out_function(b, m, e->lines[j].function_id, &l->function_id);
		if (rc)
			return rc;
	}
	h = store__loc_hash(mapping, e->address, b->lines + line0, e->n_lines);
	for (i = hmap_first(&b->loc_ix, h, &pr); i != HMAP_NONE; i = hmap_next(&b->loc_ix, &pr)) {
		const struct oloc *o = &b->loc[i];
		if (o->mapping == mapping && o->address == e->address && o->n_lines == e->n_lines &&
		    store__lines_eq(b->lines + o->line0, b->lines + line0, e->n_lines))
			break;
	}
	if (i == HMAP_NONE) {
		rc = GROW(b->loc, b->cap_loc, b->n_loc + 1, STORE_MAX_SYMBOLS, NULL);
		if (!rc)
			rc = hmap_put_probed(&b->loc_ix, &pr, (uint32_t)b->n_loc);
		if (rc)
			return rc;
		b->loc[b->n_loc].address = e->address;
		b->loc[b->n_loc].mapping = mapping;
		b->loc[b->n_loc].line0 = (uint32_t)line0;
		b->loc[b->n_loc].n_lines = e->n_lines;
		b->n_lines += e->n_lines;
		i = (uint32_t)b->n_loc++;
	}
	*out = m->id[SYM_LOCATION][id] = i + 1;
	return 0;
}

static int out_node(struct sbuild *b, uint32_t parent, uint32_t location, uint32_t *out)
{
	uint64_t h = hash_u64((uint64_t)parent << 32 | location);
	struct hmap_probe pr;
	uint32_t i;
	int rc;

	for (i = hmap_first(&b->stk_ix, h, &pr); i != HMAP_NONE; i = hmap_next(&b->stk_ix, &pr))
		if (b->stk[i].parent == parent && b->stk[i].location == location)
			break;
	if (i == HMAP_NONE) {
		rc = GROW(b->stk, b->cap_stk, b->n_stk + 1, STORE_MAX_SYMBOLS, NULL);
		if (!rc)
			rc = hmap_put_probed(&b->stk_ix, &pr, (uint32_t)b->n_stk);
		if (rc)
			return rc;
		b->stk[b->n_stk].parent = parent;
		b->stk[b->n_stk].location = location;
		i = (uint32_t)b->n_stk++;
	}
	*out = i + 1;
	return 0;
}

/* ---- the writer ------------------------------------------------------------------ */

struct wprof {
	struct store_profile_meta meta;
	uint64_t seq;
	size_t off, n;
};

struct wseries {
	uint32_t svc, label0, n_labels, page0, n_pages;
};

struct bw {
	struct store *st;
	char *tmp_path, *path, *dir;
	int fd;
	uint64_t off;      /* file offset after what was written */
	struct buf wbuf;   /* written at off - wbuf.len */
	int zlevel;
	struct bmeta m;    /* filled as the block is written; arrays owned here */
	char *tenant;

	/* services: names and compressed symbol sections */
	char **svc_name;
	struct buf *svc_sec;
	uint32_t (*svc_count)[SYM_NKINDS];
	uint64_t *svc_raw;
	size_t n_svc, cap_svc;
	int in_service;
	struct sbuild sb;
	struct srcmemo *memo;
	size_t n_memo, cap_memo;
	uint32_t *path_scratch;
	size_t cap_path;

	/* the index */
	struct intern lstr;     /* label names and values */
	struct wseries *series;
	size_t n_series, cap_series;
	uint32_t *labels;       /* pairs of lstr ids */
	size_t n_labels, cap_labels;
	struct bpage *pages;
	size_t n_pages, cap_pages;
	struct intern bids;     /* build IDs */

	/* the page being filled */
	struct wprof *pp;
	size_t n_pp, cap_pp;
	uint32_t *ids;
	int64_t *vals;
	size_t n_ids, cap_ids, cap_vals;
	uint64_t *spans;        /* span id per pair; NULL until a profile has one */
	size_t cap_spans;
	struct chunk_profile *cp;
	size_t cap_cp;
	struct buf page;
	uint64_t seq;
	int64_t series_max; /* max time of the current series' previous pages */
	int have_series_max;

	uint64_t profiles, samples, samples_off;
	uint32_t samples_crc;
	int64_t min_time, max_time;
};

static int wflush(struct bw *w)
{
	size_t done = 0;

	while (done < w->wbuf.len) {
		ssize_t n = write(w->fd, w->wbuf.data + done, w->wbuf.len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return ERR_IO;
		}
		done += (size_t)n;
	}
	buf_reset(&w->wbuf);
	return 0;
}

static int wwrite(struct bw *w, const void *p, size_t n)
{
	int rc = 0;

	if (w->wbuf.len + n > WBUF_BYTES)
		rc = wflush(w);
	if (!rc && n > WBUF_BYTES) {
		size_t done = 0;
		while (!rc && done < n) {
			ssize_t k = write(w->fd, (const char *)p + done, n - done);
			if (k < 0 && errno != EINTR)
				rc = ERR_IO;
			else if (k > 0)
				done += (size_t)k;
		}
	} else if (!rc) {
		rc = buf_append(&w->wbuf, p, n);
	}
	if (!rc)
		w->off += n;
	return rc;
}

int store__block_id_new(uint8_t id[BLOCK_ID_BYTES])
{
	uint64_t ms = (uint64_t)(clock_wall_ns() / 1000000);
	size_t got = 0;

	for (int i = 0; i < 6; i++)
		id[i] = (uint8_t)(ms >> (40 - 8 * i));
	while (got < BLOCK_ID_BYTES - 6) {
		ssize_t n = getrandom(id + 6 + got, BLOCK_ID_BYTES - 6 - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return ERR_IO;
		}
		got += (size_t)n;
	}
	return 0;
}

void store__block_id_hex(const uint8_t id[BLOCK_ID_BYTES], char out[2 * BLOCK_ID_BYTES + 1])
{
	static const char hx[] = "0123456789abcdef";

	for (int i = 0; i < BLOCK_ID_BYTES; i++) {
		out[2 * i] = hx[id[i] >> 4];
		out[2 * i + 1] = hx[id[i] & 15];
	}
	out[2 * BLOCK_ID_BYTES] = '\0';
}

void store__bw_abort(struct bw *w)
{
	if (!w)
		return;
	if (w->fd >= 0) {
		close(w->fd);
		unlink(w->tmp_path);
	}
	for (size_t i = 0; i < w->n_svc; i++) {
		free(w->svc_name[i]);
		buf_release(&w->svc_sec[i]);
	}
	free(w->svc_name);
	free(w->svc_sec);
	free(w->svc_count);
	free(w->svc_raw);
	sbuild_release(&w->sb);
	for (size_t i = 0; i < w->n_memo; i++)
		for (int k = 1; k < SYM_NKINDS; k++)
			free(w->memo[i].id[k]);
	free(w->memo);
	free(w->path_scratch);
	intern_release(&w->lstr);
	intern_release(&w->bids);
	free(w->series);
	free(w->labels);
	free(w->pages);
	free(w->pp);
	free(w->ids);
	free(w->vals);
	free(w->spans);
	free(w->cp);
	buf_release(&w->page);
	buf_release(&w->wbuf);
	free(w->tmp_path);
	free(w->path);
	free(w->dir);
	free(w->tenant);
	free(w);
}

int store__bw_open(struct store *st, const char *tenant, uint32_t level, int64_t range_start,
		   int64_t range_end, int zlevel, struct bw **out, struct err_msg *msg)
{
	return store__bw_open_in(st, NULL, tenant, level, range_start, range_end, zlevel, out, msg);
}

uint64_t store__bw_bytes(const struct bw *w)
{
	return w->off;
}

int store__bw_open_in(struct store *st, const char *dir, const char *tenant, uint32_t level,
		      int64_t range_start, int64_t range_end, int zlevel, struct bw **out,
		      struct err_msg *msg)
{
	char hex[2 * BLOCK_ID_BYTES + 1];
	uint8_t head[BLOCK_HEADER_BYTES];
	struct bw *w;
	int rc;

	if (range_end <= range_start)
		return err_set(msg, ERR_INVALID, "block: empty time range");
	w = calloc(1, sizeof(*w));
	if (!w)
		return ERR_NOMEM;
	w->fd = -1;
	w->st = st;
	w->zlevel = zlevel;
	w->min_time = INT64_MAX;
	w->max_time = INT64_MIN;
	buf_init(&w->wbuf, 2 * WBUF_BYTES);
	buf_init(&w->page, STORE_MAX_CHUNK_BLOCK);
	intern_init(&w->lstr, STORE_MAX_SYMBOLS, STORE_MAX_POOL_BYTES, NULL);
	intern_init(&w->bids, BLOCK_MAX_BUILD_IDS, (size_t)BLOCK_MAX_BUILD_IDS * 64, NULL);
	sbuild_init(&w->sb);
	w->tenant = strdup(tenant);
	rc = w->tenant ? store__block_id_new(w->m.id) : ERR_NOMEM;
	if (!rc && dir && !(w->dir = strdup(dir)))
		rc = ERR_NOMEM;
	else if (!rc && !dir)
		rc = store__tenant_dir(st, tenant, 1, &w->dir, msg);
	if (rc)
		goto fail;
	store__block_id_hex(w->m.id, hex);
	if (asprintf(&w->path, "%s/%s%s", w->dir, hex, BLOCK_SUFFIX) < 0 ||
	    asprintf(&w->tmp_path, "%s/%s%s%s", w->dir, hex, BLOCK_SUFFIX, BLOCK_TMP_SUFFIX) < 0) {
		w->path = w->tmp_path = NULL;
		rc = ERR_NOMEM;
		goto fail;
	}
	w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		rc = err_set(msg, ERR_IO, "block: create %s: %s", w->tmp_path, strerror(errno));
		goto fail;
	}
	w->m.tenant = w->tenant;
	w->m.level = level;
	w->m.range_start = range_start;
	w->m.range_end = range_end;
	memcpy(head, BLOCK_MAGIC, 8);
	memset(head + 8, 0, 8);
	head[8] = BLOCK_FORMAT_VERSION;
	rc = wwrite(w, head, sizeof(head));
	if (rc)
		goto fail;
	w->samples_off = w->off;
	*out = w;
	return 0;
fail:
	store__bw_abort(w);
	return rc;
}

/* ---- pages --------------------------------------------------------------------- */

static int wprof_cmp(const void *a, const void *b)
{
	const struct wprof *x = a, *y = b;

	if (x->meta.time_ns != y->meta.time_ns)
		return x->meta.time_ns < y->meta.time_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int store__bw_page_end(struct bw *w, struct err_msg *msg)
{
	struct bpage pg;
	uint64_t samples = 0;
	int rc;

	if (!w->n_pp)
		return 0;
	qsort(w->pp, w->n_pp, sizeof(*w->pp), wprof_cmp);
	rc = GROW(w->cp, w->cap_cp, w->n_pp, STORE_MAX_CHUNK_PROFILES, NULL);
	if (rc)
		return rc;
	for (size_t i = 0; i < w->n_pp; i++) {
		w->cp[i].meta = w->pp[i].meta;
		w->cp[i].n = w->pp[i].n;
		w->cp[i].ids = w->ids + w->pp[i].off;
		w->cp[i].vals = w->vals + w->pp[i].off;
		w->cp[i].spans = w->spans ? w->spans + w->pp[i].off : NULL;
		samples += w->pp[i].n;
	}
	pg.min_time = w->pp[0].meta.time_ns;
	pg.max_time = w->pp[w->n_pp - 1].meta.time_ns;
	if (w->have_series_max && pg.min_time <= w->series_max)
		return err_set(msg, ERR_INVALID, "block: pages of a series overlap in time");
	buf_reset(&w->page);
	rc = store__chunk_encode(w->series[w->n_series - 1].svc + 1, w->cp, w->n_pp, w->zlevel,
				 &w->page);
	if (!rc && w->page.len > BLOCK_MAX_PAGE_BYTES)
		rc = err_set(msg, ERR_TOO_LARGE, "block: a page of %zu bytes", w->page.len);
	if (!rc)
		rc = GROW(w->pages, w->cap_pages, w->n_pages + 1, BLOCK_MAX_PAGES, NULL);
	if (rc)
		return rc;
	pg.off = w->off - w->samples_off;
	pg.len = (uint32_t)w->page.len;
	pg.crc = store__crc32c(0, w->page.data, w->page.len);
	w->samples_crc = store__crc32c(w->samples_crc, w->page.data, w->page.len);
	pg.profiles = (uint32_t)w->n_pp;
	pg.samples = samples;
	rc = wwrite(w, w->page.data, w->page.len);
	if (rc)
		return err_set(msg, rc, "block: write %s: %s", w->tmp_path, strerror(errno));
	w->pages[w->n_pages++] = pg;
	w->series[w->n_series - 1].n_pages++;
	w->series_max = pg.max_time;
	w->have_series_max = 1;
	w->profiles += w->n_pp;
	w->samples += samples;
	if (pg.min_time < w->min_time)
		w->min_time = pg.min_time;
	if (pg.max_time > w->max_time)
		w->max_time = pg.max_time;
	w->n_pp = 0;
	w->n_ids = 0;
	return 0;
}

static struct srcmemo *memo_of(struct bw *w, const struct store_symbols *v)
{
	struct srcmemo *m;

	for (size_t i = 0; i < w->n_memo; i++)
		if (w->memo[i].v == v)
			return &w->memo[i];
	if (GROW(w->memo, w->cap_memo, w->n_memo + 1, STORE_MAX_PARTS, NULL))
		return NULL;
	m = &w->memo[w->n_memo];
	memset(m, 0, sizeof(*m));
	m->v = v;
	for (int k = 1; k < SYM_NKINDS; k++) {
		m->id[k] = calloc((size_t)v->count[k] + 1, sizeof(uint32_t));
		if (!m->id[k]) {
			for (int j = 1; j < k; j++)
				free(m->id[j]);
			return NULL;
		}
	}
	w->n_memo++;
	return m;
}

/* The output stack id of stack `s` of the memo's view. */
static int out_stack(struct bw *w, struct srcmemo *m, uint32_t s, uint32_t *out)
{
	uint32_t *memo = m->id[SYM_STACK], x = s, parent = 0;
	size_t n = 0;
	int rc;

	if (s == 0) {
		*out = 0;
		return 0;
	}
	if (s > m->v->count[SYM_STACK])
		return ERR_CORRUPT;
	if (memo[s]) {
		*out = memo[s];
		return 0;
	}
	while (x && !memo[x]) {
		if (n >= MAX_REMAP_DEPTH)
			return ERR_CORRUPT;
		rc = GROW(w->path_scratch, w->cap_path, n + 1, MAX_REMAP_DEPTH, NULL);
		if (rc)
			return rc;
		w->path_scratch[n++] = x;
		x = sv_stack(m->v, x)->parent;
	}
	if (x)
		parent = memo[x];
	while (n--) {
		uint32_t node = w->path_scratch[n], loc;
		rc = out_location(&w->sb, m, sv_stack(m->v, node)->location, &loc);
		if (!rc)
			rc = out_node(&w->sb, parent, loc, &parent);
		if (rc)
			return rc;
		memo[node] = parent;
	}
	*out = parent;
	return 0;
}

/* Sorts the pairs [off, off + n) by id and sums repeats; returns the count kept. */
static size_t sort_pairs(uint32_t *ids, int64_t *vals, size_t n)
{
	size_t k = 0;

	for (size_t i = 1; i < n; i++) { /* insertion sort: pairs come nearly sorted */
		uint32_t id = ids[i];
		int64_t v = vals[i];
		size_t j = i;
		while (j > 0 && ids[j - 1] > id) {
			ids[j] = ids[j - 1];
			vals[j] = vals[j - 1];
			j--;
		}
		ids[j] = id;
		vals[j] = v;
	}
	for (size_t i = 0; i < n; i++) {
		if (k && ids[k - 1] == ids[i]) {
			vals[k - 1] = (int64_t)((uint64_t)vals[k - 1] + (uint64_t)vals[i]);
			continue;
		}
		ids[k] = ids[i];
		vals[k] = vals[i];
		k++;
	}
	return k;
}

static int sort_pairs_big(uint32_t *ids, int64_t *vals, size_t n, size_t *kept);

/* Sorts n pairs with span ids by (id, span) and sums repeats (section 6, "Span ids"). */
static int sort_span_pairs(uint32_t *ids, int64_t *vals, uint64_t *spans, size_t n,
			   size_t *kept)
{
	struct store__span_pair *t = malloc((n ? n : 1) * sizeof(*t));

	if (!t)
		return ERR_NOMEM;
	*kept = store__sort_span_pairs(ids, vals, spans, ids, vals, spans, n, t);
	free(t);
	return 0;
}

/* Room for the span ids of pairs [n_ids, n_ids + n), set to 0. */
static int reserve_spans(struct bw *w, size_t n)
{
	size_t have = w->spans ? w->n_ids : 0;
	int rc;

	if (!w->spans)
		w->cap_spans = 0;
	rc = GROW(w->spans, w->cap_spans, w->n_ids + n ? w->n_ids + n : 1,
		  STORE_MAX_CHUNK_SAMPLES, NULL);
	if (!rc)
		memset(w->spans + have, 0, (w->n_ids + n - have) * sizeof(*w->spans));
	return rc;
}

int store__bw_profile(struct bw *w, const struct store_symbols *src,
		      const struct store_profile_meta *meta, const uint32_t *stack_ids,
		      const int64_t *values, const uint64_t *spans, size_t n,
		      struct err_msg *msg)
{
	struct srcmemo *m;
	struct wprof *p;
	size_t kept;
	int rc, with_spans = 0;

	if (!w->in_service || !w->n_series)
		return err_set(msg, ERR_INVALID, "block: a profile outside a series");
	if (meta->time_ns < w->m.range_start || meta->time_ns >= w->m.range_end)
		return err_set(msg, ERR_INVALID, "block: profile time %lld outside the block",
			       (long long)meta->time_ns);
	m = memo_of(w, src);
	if (!m)
		return ERR_NOMEM;
	rc = GROW(w->pp, w->cap_pp, w->n_pp + 1, STORE_MAX_CHUNK_PROFILES, NULL);
	if (!rc) {
		size_t ci = w->cap_ids, cv = w->cap_ids;
		rc = GROW(w->ids, ci, w->n_ids + n, STORE_MAX_CHUNK_SAMPLES, NULL);
		if (!rc)
			rc = GROW(w->vals, cv, w->n_ids + n, STORE_MAX_CHUNK_SAMPLES, NULL);
		if (!rc)
			w->cap_ids = ci < cv ? ci : cv;
	}
	for (size_t i = 0; !rc && spans && i < n && !with_spans; i++)
		with_spans = spans[i] != 0;
	if (!rc && (with_spans || w->spans))
		rc = reserve_spans(w, n);
	if (rc)
		return rc;
	if (with_spans)
		memcpy(w->spans + w->n_ids, spans, n * sizeof(*spans));
	for (size_t i = 0; i < n; i++) {
		rc = out_stack(w, m, stack_ids[i], &w->ids[w->n_ids + i]);
		if (rc)
			return err_set(msg, rc, "block: stack %u of a source: %s", stack_ids[i],
				       err_str(rc));
		w->vals[w->n_ids + i] = values[i];
	}
	if (with_spans) {
		rc = sort_span_pairs(w->ids + w->n_ids, w->vals + w->n_ids, w->spans + w->n_ids, n,
				     &kept);
		if (rc)
			return rc;
	} else if (n < 64)
		kept = sort_pairs(w->ids + w->n_ids, w->vals + w->n_ids, n);
	else if ((rc = sort_pairs_big(w->ids + w->n_ids, w->vals + w->n_ids, n, &kept)))
		return rc;
	p = &w->pp[w->n_pp++];
	p->meta = *meta;
	p->seq = w->seq++;
	p->off = w->n_ids;
	p->n = kept;
	w->n_ids += kept;
	return 0;
}

static int sort_pairs_big(uint32_t *ids, int64_t *vals, size_t n, size_t *kept)
{
	struct store__pair *t = malloc(2 * n * sizeof(*t));

	if (!t)
		return ERR_NOMEM;
	*kept = store__sort_pairs(ids, vals, ids, vals, n, t);
	free(t);
	return 0;
}

/* ---- series ------------------------------------------------------------------- */

int store__bw_series(struct bw *w, const struct store_label *labels, size_t n,
		     struct err_msg *msg)
{
	struct wseries *s;
	int rc;

	if (!w->in_service)
		return err_set(msg, ERR_INVALID, "block: a series outside a service");
	if (n == 0 || n > STORE_MAX_LABELS)
		return err_set(msg, ERR_INVALID, "block: a series of %zu labels", n);
	rc = store__bw_page_end(w, msg);
	if (!rc && w->n_series && w->series[w->n_series - 1].n_pages == 0)
		rc = err_set(msg, ERR_INVALID, "block: a series without profiles");
	if (!rc)
		rc = GROW(w->series, w->cap_series, w->n_series + 1, BLOCK_MAX_SERIES, NULL);
	if (!rc)
		rc = GROW(w->labels, w->cap_labels, w->n_labels + 2 * n, (size_t)UINT32_MAX, NULL);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = intern_put(&w->lstr, labels[i].name, strlen(labels[i].name),
				&w->labels[w->n_labels + 2 * i]);
		if (!rc)
			rc = intern_put(&w->lstr, labels[i].value, strlen(labels[i].value),
					&w->labels[w->n_labels + 2 * i + 1]);
		if (rc)
			return rc;
	}
	s = &w->series[w->n_series++];
	s->svc = (uint32_t)(w->n_svc - 1);
	s->label0 = (uint32_t)(w->n_labels / 2);
	s->n_labels = (uint32_t)n;
	s->page0 = (uint32_t)w->n_pages;
	s->n_pages = 0;
	w->n_labels += 2 * n;
	w->have_series_max = 0;
	return 0;
}

/* ---- services ------------------------------------------------------------------ */

struct sort_ctx {
	const struct sbuild *b;
	const uint32_t *str_new, *fn_new;
};
static __thread const struct sort_ctx *tls_sort;

static int str_cmp(const void *a, const void *b)
{
	const struct intern *t = &tls_sort->b->str;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	size_t lx = intern_len(t, x), ly = intern_len(t, y);
	int c = memcmp(intern_str(t, x), intern_str(t, y), lx < ly ? lx : ly);

	return c ? c : (lx > ly) - (lx < ly);
}

static int fn_cmp(const void *a, const void *b)
{
	const struct sort_ctx *c = tls_sort;
	const struct sym_function *x = &c->b->fn[*(const uint32_t *)a];
	const struct sym_function *y = &c->b->fn[*(const uint32_t *)b];

	if (c->str_new[x->name] != c->str_new[y->name])
		return c->str_new[x->name] < c->str_new[y->name] ? -1 : 1;
	if (c->str_new[x->filename] != c->str_new[y->filename])
		return c->str_new[x->filename] < c->str_new[y->filename] ? -1 : 1;
	if (c->str_new[x->system_name] != c->str_new[y->system_name])
		return c->str_new[x->system_name] < c->str_new[y->system_name] ? -1 : 1;
	return (x->start_line > y->start_line) - (x->start_line < y->start_line);
}

static int loc_cmp(const void *a, const void *b)
{
	const struct sort_ctx *c = tls_sort;
	const struct oloc *x = &c->b->loc[*(const uint32_t *)a];
	const struct oloc *y = &c->b->loc[*(const uint32_t *)b];

	if (x->mapping != y->mapping)
		return x->mapping < y->mapping ? -1 : 1;
	if (x->address != y->address)
		return x->address < y->address ? -1 : 1;
	if (x->n_lines != y->n_lines)
		return x->n_lines < y->n_lines ? -1 : 1;
	for (uint32_t i = 0; i < x->n_lines; i++) {
		const struct store_line *lx = &c->b->lines[x->line0 + i];
		const struct store_line *ly = &c->b->lines[y->line0 + i];
		uint32_t fx = lx->function_id ? c->fn_new[lx->function_id] : 0;
		uint32_t fy = ly->function_id ? c->fn_new[ly->function_id] : 0;
		if (fx != fy)
			return fx < fy ? -1 : 1;
		if (lx->line != ly->line)
			return lx->line < ly->line ? -1 : 1;
		if (lx->column != ly->column)
			return lx->column < ly->column ? -1 : 1;
	}
	return 0;
}

/* An identity order of n ids starting at `first`, or NULL. */
static uint32_t *iota(size_t n, uint32_t first)
{
	uint32_t *v = malloc((n ? n : 1) * sizeof(*v));

	for (size_t i = 0; v && i < n; i++)
		v[i] = first + (uint32_t)i;
	return v;
}

/*
 * Renumbers the service's symbols into the order of the section (strings
 * bytewise, functions by name, locations by mapping and address; stacks keep
 * their ids, which the pages already use) and encodes them.
 */
static int encode_service(struct bw *w, struct buf *raw)
{
	struct sbuild *b = &w->sb;
	uint32_t n_str = intern_count(&b->str) - 1; /* without "" */
	uint32_t *s_ord = iota(n_str, 1), *f_ord = iota(b->n_fn, 0), *l_ord = iota(b->n_loc, 0);
	uint32_t *str_new = calloc((size_t)n_str + 2, sizeof(uint32_t));
	uint32_t *fn_new = calloc(b->n_fn + 2, sizeof(uint32_t));
	uint32_t *loc_new = calloc(b->n_loc + 2, sizeof(uint32_t));
	struct sort_ctx sc = { b, str_new, fn_new };
	struct bsyms s;
	struct store_line *lines = NULL;
	int rc = ERR_NOMEM;

	memset(&s, 0, sizeof(s));
	s.str = calloc((size_t)n_str + 1, sizeof(*s.str));
	s.map = calloc(b->n_map + 1, sizeof(*s.map));
	s.fn = calloc(b->n_fn + 1, sizeof(*s.fn));
	s.loc = calloc(b->n_loc + 1, sizeof(*s.loc));
	lines = calloc(b->n_lines + 1, sizeof(*lines));
	s.stk = calloc(b->n_stk + 1, sizeof(*s.stk));
	if (!s_ord || !f_ord || !l_ord || !str_new || !fn_new || !loc_new || !s.str || !s.map ||
	    !s.fn || !s.loc || !lines || !s.stk)
		goto out;
	tls_sort = &sc;
	qsort(s_ord, n_str, sizeof(*s_ord), str_cmp);
	for (uint32_t i = 0; i < n_str; i++) {
		str_new[s_ord[i]] = i + 1;
		s.str[i].s = intern_str(&b->str, s_ord[i]);
		s.str[i].len = (uint32_t)intern_len(&b->str, s_ord[i]);
	}
	for (size_t i = 0; i < b->n_map; i++) {
		s.map[i] = b->map[i];
		s.map[i].filename = str_new[b->map[i].filename];
		s.map[i].build_id = str_new[b->map[i].build_id];
	}
	qsort(f_ord, b->n_fn, sizeof(*f_ord), fn_cmp);
	for (size_t i = 0; i < b->n_fn; i++) {
		const struct sym_function *f = &b->fn[f_ord[i]];
		fn_new[f_ord[i] + 1] = (uint32_t)i + 1;
		s.fn[i].name = str_new[f->name];
		s.fn[i].system_name = str_new[f->system_name];
		s.fn[i].filename = str_new[f->filename];
		s.fn[i].start_line = f->start_line;
	}
	qsort(l_ord, b->n_loc, sizeof(*l_ord), loc_cmp);
	{
		size_t nl = 0;
		for (size_t i = 0; i < b->n_loc; i++) {
			const struct oloc *l = &b->loc[l_ord[i]];
			loc_new[l_ord[i] + 1] = (uint32_t)i + 1;
			s.loc[i].mapping_id = l->mapping;
			s.loc[i].address = l->address;
			s.loc[i].n_lines = l->n_lines;
			s.loc[i].lines = lines + nl;
			for (uint32_t j = 0; j < l->n_lines; j++) {
				lines[nl] = b->lines[l->line0 + j];
				if (lines[nl].function_id)
					lines[nl].function_id = fn_new[lines[nl].function_id];
				nl++;
			}
		}
	}
	for (size_t i = 0; i < b->n_stk; i++) {
		s.stk[i].parent = b->stk[i].parent;
		s.stk[i].location = loc_new[b->stk[i].location];
	}
	tls_sort = NULL;
	s.n[SYM_STRING] = n_str;
	s.n[SYM_MAPPING] = (uint32_t)b->n_map;
	s.n[SYM_FUNCTION] = (uint32_t)b->n_fn;
	s.n[SYM_LOCATION] = (uint32_t)b->n_loc;
	s.n[SYM_STACK] = (uint32_t)b->n_stk;
	rc = store__bsyms_encode(&s, raw);
	for (size_t i = 0; !rc && i < b->n_map; i++) {
		uint32_t bid = b->map[i].build_id, id;
		if (bid)
			rc = intern_put(&w->bids, intern_str(&b->str, bid), intern_len(&b->str, bid), &id);
	}
out:
	tls_sort = NULL;
	free(s_ord);
	free(f_ord);
	free(l_ord);
	free(str_new);
	free(fn_new);
	free(loc_new);
	free(s.str);
	free(s.map);
	free(s.fn);
	free(s.loc);
	free(lines);
	free(s.stk);
	return rc;
}

static int service_end(struct bw *w, struct err_msg *msg)
{
	size_t i = w->n_svc - 1;
	struct buf raw;
	int rc;

	rc = store__bw_page_end(w, msg);
	if (rc)
		return rc;
	if (w->n_series == 0 || w->series[w->n_series - 1].svc != i ||
	    w->series[w->n_series - 1].n_pages == 0)
		return err_set(msg, ERR_INVALID, "block: a service or series without profiles");
	buf_init(&raw, BLOCK_MAX_SECTION_RAW);
	rc = encode_service(w, &raw);
	if (!rc) {
		w->svc_raw[i] = raw.len;
		w->svc_count[i][SYM_STRING] = intern_count(&w->sb.str) - 1;
		w->svc_count[i][SYM_MAPPING] = (uint32_t)w->sb.n_map;
		w->svc_count[i][SYM_FUNCTION] = (uint32_t)w->sb.n_fn;
		w->svc_count[i][SYM_LOCATION] = (uint32_t)w->sb.n_loc;
		w->svc_count[i][SYM_STACK] = (uint32_t)w->sb.n_stk;
		rc = zstd_compress_buf(raw.data, raw.len, w->zlevel, &w->svc_sec[i]);
	}
	buf_release(&raw);
	for (size_t k = 0; k < w->n_memo; k++)
		for (int j = 1; j < SYM_NKINDS; j++)
			free(w->memo[k].id[j]);
	w->n_memo = 0;
	sbuild_release(&w->sb);
	sbuild_init(&w->sb);
	w->in_service = 0;
	return rc;
}

int store__bw_service(struct bw *w, const char *name, struct err_msg *msg)
{
	size_t n = w->n_svc, cap;
	uint32_t id;
	int rc = 0;

	if (w->in_service)
		rc = service_end(w, msg);
	if (rc)
		return rc;
	if (n && strcmp(w->svc_name[n - 1], name) >= 0)
		return err_set(msg, ERR_INVALID, "block: services out of order");
	if (n >= BLOCK_MAX_SERVICES)
		return err_set(msg, ERR_TOO_LARGE, "block: more than %u services", BLOCK_MAX_SERVICES);
	cap = w->cap_svc;
	rc = GROW(w->svc_name, cap, n + 1, BLOCK_MAX_SERVICES, NULL);
	if (!rc) {
		size_t c2 = w->cap_svc, c3 = w->cap_svc, c4 = w->cap_svc;
		rc = GROW(w->svc_sec, c2, n + 1, BLOCK_MAX_SERVICES, NULL);
		if (!rc)
			rc = GROW(w->svc_count, c3, n + 1, BLOCK_MAX_SERVICES, NULL);
		if (!rc)
			rc = GROW(w->svc_raw, c4, n + 1, BLOCK_MAX_SERVICES, NULL);
		if (!rc)
			w->cap_svc = cap;
	}
	if (rc)
		return rc;
	w->svc_name[n] = strdup(name);
	if (!w->svc_name[n])
		return ERR_NOMEM;
	buf_init(&w->svc_sec[n], BLOCK_MAX_SECTION_RAW);
	memset(w->svc_count[n], 0, sizeof(w->svc_count[n]));
	w->n_svc++;
	w->in_service = 1;
	return intern_put(&w->sb.str, "", 0, &id); /* string id 0 is the empty string */
}

/* ---- finishing ---------------------------------------------------------------- */

struct post {
	uint32_t name, value, series;
};

static int post_cmp(const void *a, const void *b)
{
	const struct post *x = a, *y = b;

	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->series < y->series ? -1 : x->series > y->series;
}

static const struct intern *tls_lstr;

static int lstr_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	size_t lx = intern_len(tls_lstr, x), ly = intern_len(tls_lstr, y);
	int c = memcmp(intern_str(tls_lstr, x), intern_str(tls_lstr, y), lx < ly ? lx : ly);

	return c ? c : (lx > ly) - (lx < ly);
}

/* Encodes the index: label strings sorted, series as written, postings. */
static int encode_index(struct bw *w, struct buf *raw)
{
	uint32_t n_str = intern_count(&w->lstr);
	uint32_t *ord = iota(n_str, 0), *rank = calloc((size_t)n_str + 1, sizeof(uint32_t));
	const char **strs = calloc((size_t)n_str + 1, sizeof(*strs));
	uint32_t *lens = calloc((size_t)n_str + 1, sizeof(uint32_t));
	size_t n_post = w->n_labels / 2;
	struct post *post = calloc(n_post + 1, sizeof(*post));
	uint32_t *labels = calloc(w->n_labels + 1, sizeof(uint32_t));
	struct bpost_name *pn = calloc(n_post + 1, sizeof(*pn));
	struct bpost_val *pv = calloc(n_post + 1, sizeof(*pv));
	uint32_t *plist = calloc(n_post + 1, sizeof(uint32_t));
	struct bser *ser = calloc(w->n_series + 1, sizeof(*ser));
	struct bindex x;
	int rc = ERR_NOMEM;

	if (!ord || !rank || !strs || !lens || !post || !labels || !pn || !pv || !plist || !ser)
		goto out;
	tls_lstr = &w->lstr;
	qsort(ord, n_str, sizeof(*ord), lstr_cmp);
	tls_lstr = NULL;
	for (uint32_t i = 0; i < n_str; i++) {
		rank[ord[i]] = i;
		strs[i] = intern_str(&w->lstr, ord[i]);
		lens[i] = (uint32_t)intern_len(&w->lstr, ord[i]);
	}
	for (size_t i = 0; i < w->n_labels; i++)
		labels[i] = rank[w->labels[i]];
	n_post = 0;
	for (size_t i = 0; i < w->n_series; i++) {
		const struct wseries *s = &w->series[i];
		ser[i].svc = s->svc;
		ser[i].label0 = s->label0;
		ser[i].n_labels = s->n_labels;
		ser[i].page0 = s->page0;
		ser[i].n_pages = s->n_pages;
		for (uint32_t j = 0; j < s->n_labels; j++) {
			post[n_post].name = labels[2 * ((size_t)s->label0 + j)];
			post[n_post].value = labels[2 * ((size_t)s->label0 + j) + 1];
			post[n_post++].series = (uint32_t)i;
		}
	}
	qsort(post, n_post, sizeof(*post), post_cmp);
	memset(&x, 0, sizeof(x));
	{
		size_t n_vals = 0;
		for (size_t i = 0; i < n_post; i++) {
			const struct post *p = &post[i];
			struct bpost_name *cn;

			if (!x.n_pnames || pn[x.n_pnames - 1].name != p->name) {
				cn = &pn[x.n_pnames++];
				cn->name = p->name;
				cn->val0 = (uint32_t)n_vals;
				cn->n_vals = 0;
			}
			cn = &pn[x.n_pnames - 1];
			if (!cn->n_vals || pv[n_vals - 1].value != p->value) {
				pv[n_vals].value = p->value;
				pv[n_vals].list0 = (uint32_t)i;
				pv[n_vals].n = 0;
				n_vals++;
				cn->n_vals++;
			}
			pv[n_vals - 1].n++;
			plist[i] = p->series;
		}
	}
	x.n_str = n_str;
	x.str = strs;
	x.str_len = lens;
	x.n_series = (uint32_t)w->n_series;
	x.series = ser;
	x.labels = labels;
	x.n_pages = (uint32_t)w->n_pages;
	x.pages = w->pages;
	x.pnames = pn;
	x.pvals = pv;
	x.plist = plist;
	rc = store__bindex_encode(&x, w->m.range_start, raw);
out:
	free(ord);
	free(rank);
	free(strs);
	free(lens);
	free(post);
	free(labels);
	free(pn);
	free(pv);
	free(plist);
	free(ser);
	return rc;
}

static int add_section(struct bw *w, struct bsection *sec, size_t *n, uint32_t kind,
		       uint32_t codec, const void *p, uint64_t len, uint64_t raw_len)
{
	struct bsection *s = &sec[(*n)++];
	int rc;

	s->kind = kind;
	s->codec = codec;
	s->off = w->off;
	s->len = len;
	s->raw_len = raw_len;
	s->crc = store__crc32c(0, p, len);
	rc = wwrite(w, p, len);
	return rc;
}

int store__fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return ERR_IO;
	if (fsync(fd) != 0)
		rc = ERR_IO;
	close(fd);
	return rc;
}

int store__bw_finish(struct bw *w, const struct borigin *origins, size_t n_origins,
		     const uint8_t (*sources)[BLOCK_ID_BYTES], size_t n_sources,
		     char **path_out, struct err_msg *msg)
{
	struct bsection *sec = NULL;
	struct bservice *svc = NULL;
	const char **bids = NULL;
	struct buf raw, z, foot;
	uint8_t tail[BLOCK_TRAILER_BYTES];
	size_t n_sec = 0;
	uint32_t n_bids;
	int rc = 0;

	buf_init(&raw, BLOCK_MAX_SECTION_RAW);
	buf_init(&z, BLOCK_MAX_SECTION_RAW);
	buf_init(&foot, BLOCK_MAX_FOOTER);
	if (w->in_service)
		rc = service_end(w, msg);
	if (!rc && (w->n_series == 0 || w->profiles == 0))
		rc = err_set(msg, ERR_INVALID, "block: nothing to write");
	if (rc)
		goto out;
	sec = calloc(w->n_svc + 2, sizeof(*sec));
	svc = calloc(w->n_svc + 1, sizeof(*svc));
	n_bids = intern_count(&w->bids);
	bids = calloc((size_t)n_bids + 1, sizeof(*bids));
	if (!sec || !svc || !bids) {
		rc = ERR_NOMEM;
		goto out;
	}
	/* The pages are the samples section, already written. */
	sec[n_sec].kind = BSEC_SAMPLES;
	sec[n_sec].codec = BCODEC_RAW;
	sec[n_sec].off = w->samples_off;
	sec[n_sec].len = sec[n_sec].raw_len = w->off - w->samples_off;
	sec[n_sec].crc = w->samples_crc;
	n_sec++;
	for (size_t i = 0; i < w->n_svc && !rc; i++) {
		svc[i].name = w->svc_name[i];
		svc[i].section = (uint32_t)n_sec;
		memcpy(svc[i].count, w->svc_count[i], sizeof(svc[i].count));
		rc = add_section(w, sec, &n_sec, BSEC_SYMBOLS, BCODEC_ZSTD, w->svc_sec[i].data,
				 w->svc_sec[i].len, w->svc_raw[i]);
	}
	if (!rc)
		rc = encode_index(w, &raw);
	if (!rc)
		rc = zstd_compress_buf(raw.data, raw.len, w->zlevel, &z);
	if (!rc)
		rc = add_section(w, sec, &n_sec, BSEC_INDEX, BCODEC_ZSTD, z.data, z.len, raw.len);
	if (rc)
		goto out;
	for (uint32_t i = 0; i < n_bids; i++)
		bids[i] = intern_str(&w->bids, i);
	qsort(bids, n_bids, sizeof(*bids), store__cmp_str);
	w->m.min_time = w->min_time;
	w->m.max_time = w->max_time;
	w->m.created_ns = clock_wall_ns();
	w->m.series = w->n_series;
	w->m.profiles = w->profiles;
	w->m.samples = w->samples;
	w->m.origins = (struct borigin *)origins;
	w->m.n_origins = n_origins;
	w->m.sources = (uint8_t(*)[BLOCK_ID_BYTES])sources;
	w->m.n_sources = n_sources;
	w->m.build_ids = bids;
	w->m.n_build_ids = n_bids;
	w->m.svc = svc;
	w->m.n_svc = w->n_svc;
	w->m.sec = sec;
	w->m.n_sec = n_sec;
	rc = store__bmeta_encode(&w->m, &foot);
	if (!rc)
		rc = wwrite(w, foot.data, foot.len);
	store__btrailer_put(tail, (uint32_t)foot.len, store__crc32c(0, foot.data, foot.len));
	if (!rc)
		rc = wwrite(w, tail, sizeof(tail));
	if (!rc)
		rc = wflush(w);
	if (rc) {
		rc = err_set(msg, rc, "block: write %s: %s", w->tmp_path, strerror(errno));
		goto out;
	}
	if (fsync(w->fd) != 0 || close(w->fd) != 0) {
		w->fd = -1;
		unlink(w->tmp_path);
		rc = err_set(msg, ERR_IO, "block: fsync %s: %s", w->tmp_path, strerror(errno));
		goto out;
	}
	w->fd = -1;
	store__crashpoint(w->st, "block-synced");
	if (rename(w->tmp_path, w->path) != 0) {
		unlink(w->tmp_path);
		rc = err_set(msg, ERR_IO, "block: rename %s: %s", w->tmp_path, strerror(errno));
		goto out;
	}
	if (store__fsync_dir(w->dir) != 0) {
		rc = err_set(msg, ERR_IO, "block: fsync %s: %s", w->dir, strerror(errno));
		goto out;
	}
	*path_out = w->path;
	w->path = NULL;
out:
	w->m.origins = NULL;
	w->m.sources = NULL;
	w->m.build_ids = NULL;
	w->m.svc = NULL;
	w->m.sec = NULL;
	free(sec);
	free(svc);
	free(bids);
	buf_release(&raw);
	buf_release(&z);
	buf_release(&foot);
	return rc;
}
