/*
 * pprofinfo.c - prints what a pprof holds, and what the server must store
 * for it, so integration tests can compare the two.
 *
 *   pprofinfo [--json] FILE        (gzipped or raw pprof)
 *   pprofinfo --json FILE...       one JSON object per line per file
 *   pprofinfo --label KEY FILE     one line "VALUE TYPE SUM" per sample with
 *                                  string label KEY and per sample type:
 *                                  the raw values, for references per
 *                                  label value (span ids)
 *
 * Counting rule (the server's): within one stored profile - one sample type
 * of the pprof, for one set of string sample labels (they split series) -
 * samples with the same stack are summed and zero sums are dropped; the
 * stored sample count is the number of remaining (stack, value) pairs, over
 * every sample type.  Stacks are compared after address normalization: each
 * location becomes (mapping build ID or file name, address - memory_start +
 * file_offset, lines by function content).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "base/hash.h"
#include "profile.pb-c.h"

#define MAX_FILE (1024u * 1024 * 1024)
#define MAX_DECOMPRESSED (1024u * 1024 * 1024)
#define MAX_KEYS (64u * 1024 * 1024)
#define MAX_TYPES 64

typedef Perftools__Profiles__Profile Profile;

/* ---- an interning table of byte strings -------------------------------- */

struct ktab {
	uint32_t *slots; /* id + 1 */
	size_t cap;
	char **keys;
	size_t *lens;
	size_t n, cap_keys;
};

static void ktab_release(struct ktab *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->keys[i]);
	free(t->keys);
	free(t->lens);
	free(t->slots);
}

static int ktab_rehash(struct ktab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024, i, j;
	uint32_t *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return ERR_NOMEM;
	for (i = 0; i < t->n; i++) {
		j = hash_bytes(t->keys[i], t->lens[i], 0) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

/* Returns the id of `key` in *id, adding it if new (*added = 1). */
static int ktab_intern(struct ktab *t, const void *key, size_t len, uint32_t *id, int *added)
{
	size_t j;
	int rc;

	if ((t->n + 1) * 2 > t->cap && (rc = ktab_rehash(t)))
		return rc;
	j = hash_bytes(key, len, 0) & (t->cap - 1);
	while (t->slots[j]) {
		uint32_t k = t->slots[j] - 1;
		if (t->lens[k] == len && memcmp(t->keys[k], key, len) == 0) {
			*id = k;
			*added = 0;
			return 0;
		}
		j = (j + 1) & (t->cap - 1);
	}
	if (t->n >= MAX_KEYS)
		return ERR_TOO_LARGE;
	if (t->n == t->cap_keys) {
		size_t nc = t->cap_keys ? t->cap_keys * 2 : 1024;
		char **nk = realloc(t->keys, nc * sizeof(*nk));
		size_t *nl;
		if (!nk)
			return ERR_NOMEM;
		t->keys = nk;
		nl = realloc(t->lens, nc * sizeof(*nl));
		if (!nl)
			return ERR_NOMEM;
		t->lens = nl;
		t->cap_keys = nc;
	}
	t->keys[t->n] = malloc(len ? len : 1);
	if (!t->keys[t->n])
		return ERR_NOMEM;
	memcpy(t->keys[t->n], key, len);
	t->lens[t->n] = len;
	t->slots[j] = (uint32_t)t->n + 1;
	*id = (uint32_t)t->n++;
	*added = 1;
	return 0;
}

/* ---- validation helpers ------------------------------------------------- */

static int str_at(const Profile *p, int64_t i, const char **out)
{
	if (i < 0 || (uint64_t)i >= p->n_string_table)
		return ERR_INVALID;
	*out = p->string_table[i];
	return 0;
}

/* Index of the element with pprof id `id` in a table sorted by id map. */
struct idmap {
	struct ktab t;
	uint32_t *index; /* ktab id -> array index */
};

static int idmap_build(struct idmap *m, size_t n, uint64_t (*id_at)(const Profile *, size_t),
		       const Profile *p, const char *what, struct err_msg *msg)
{
	size_t i;
	int rc, added;

	memset(m, 0, sizeof(*m));
	m->index = calloc(n + 1, sizeof(*m->index));
	if (!m->index)
		return ERR_NOMEM;
	for (i = 0; i < n; i++) {
		uint64_t id = id_at(p, i);
		uint32_t k;
		if (id == 0)
			return err_set(msg, ERR_INVALID, "%s %zu: id 0", what, i);
		if ((rc = ktab_intern(&m->t, &id, sizeof(id), &k, &added)))
			return rc;
		if (!added)
			return err_set(msg, ERR_INVALID, "%s %zu: duplicate id %" PRIu64, what, i, id);
		m->index[k] = (uint32_t)i;
	}
	return 0;
}

/* Returns the array index of pprof id `id`, or -1. */
static long idmap_find(const struct idmap *m, uint64_t id)
{
	size_t j;

	if (!m->t.cap)
		return -1;
	j = hash_bytes(&id, sizeof(id), 0) & (m->t.cap - 1);
	while (m->t.slots[j]) {
		uint32_t k = m->t.slots[j] - 1;
		if (memcmp(m->t.keys[k], &id, sizeof(id)) == 0)
			return m->index[k];
		j = (j + 1) & (m->t.cap - 1);
	}
	return -1;
}

static void idmap_release(struct idmap *m)
{
	ktab_release(&m->t);
	free(m->index);
}

static uint64_t map_id_at(const Profile *p, size_t i) { return p->mapping[i]->id; }
static uint64_t loc_id_at(const Profile *p, size_t i) { return p->location[i]->id; }
static uint64_t fn_id_at(const Profile *p, size_t i) { return p->function[i]->id; }

/* ---- analysis ----------------------------------------------------------- */

struct info {
	size_t n_types;
	uint64_t nonzero[MAX_TYPES];
	int64_t sum[MAX_TYPES];
	uint64_t stored;
	uint64_t distinct_stacks;
};

struct ctx {
	const Profile *p;
	struct idmap maps, locs, fns;
	struct ktab norm_locs; /* normalized location -> id */
	uint32_t *loc_norm;    /* location index -> normalized id */
	struct ktab stacks;    /* normalized stack */
	struct ktab keys;      /* (labels, normalized stack) */
	int64_t *sums;         /* keys.n x n_types */
	size_t cap_sums;
	struct buf kb;
	struct err_msg *msg;
};

static int put_str(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s) + 1);
}

static int function_key(struct ctx *c, uint64_t fid, struct buf *b, size_t li, size_t i)
{
	const Perftools__Profiles__Function *f;
	const char *name, *sys, *file;
	long k = idmap_find(&c->fns, fid);
	int rc;

	if (fid == 0)
		return put_str(b, "");
	if (k < 0)
		return err_set(c->msg, ERR_INVALID, "location %zu: line %zu: function_id %" PRIu64 " not found",
			       i, li, fid);
	f = c->p->function[k];
	if (str_at(c->p, f->name, &name) || str_at(c->p, f->system_name, &sys) ||
	    str_at(c->p, f->filename, &file))
		return err_set(c->msg, ERR_INVALID, "function %ld: string index out of range", k);
	if ((rc = put_str(b, name)) || (rc = put_str(b, sys)) || (rc = put_str(b, file)))
		return rc;
	return buf_append(b, &f->start_line, sizeof(f->start_line));
}

static int normalize_locations(struct ctx *c)
{
	const Profile *p = c->p;
	size_t i, li;
	int rc, added;

	c->loc_norm = calloc(p->n_location + 1, sizeof(*c->loc_norm));
	if (!c->loc_norm)
		return ERR_NOMEM;
	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];
		uint64_t addr = l->address;
		const char *ident = "";

		buf_reset(&c->kb);
		if (l->mapping_id) {
			long k = idmap_find(&c->maps, l->mapping_id);
			const Perftools__Profiles__Mapping *m;
			const char *bid, *fn;
			if (k < 0)
				return err_set(c->msg, ERR_INVALID, "location %zu: mapping_id %" PRIu64 " not found",
					       i, l->mapping_id);
			m = p->mapping[k];
			if (str_at(p, m->build_id, &bid) || str_at(p, m->filename, &fn))
				return err_set(c->msg, ERR_INVALID, "mapping %ld: string index out of range", k);
			ident = bid[0] ? bid : fn;
			addr = addr - m->memory_start + m->file_offset;
			if ((rc = buf_putc(&c->kb, bid[0] ? 'b' : 'f')))
				return rc;
		}
		if ((rc = put_str(&c->kb, ident)) || (rc = buf_append(&c->kb, &addr, sizeof(addr))))
			return rc;
		for (li = 0; li < l->n_line; li++) {
			const Perftools__Profiles__Line *ln = l->line[li];
			if ((rc = function_key(c, ln->function_id, &c->kb, li, i)) ||
			    (rc = buf_append(&c->kb, &ln->line, sizeof(ln->line))) ||
			    (rc = buf_append(&c->kb, &ln->column, sizeof(ln->column))))
				return rc;
		}
		if ((rc = ktab_intern(&c->norm_locs, c->kb.data, c->kb.len, &c->loc_norm[i], &added)))
			return rc;
	}
	return 0;
}

/* Appends the sample's string labels, sorted by key, to kb. */
static int labels_key(struct ctx *c, const Perftools__Profiles__Sample *s, size_t si)
{
	const char *kv[2 * 64];
	size_t n = 0, i, j;
	int rc;

	for (i = 0; i < s->n_label; i++) {
		const Perftools__Profiles__Label *l = s->label[i];
		const char *k, *v;
		if (str_at(c->p, l->key, &k) || str_at(c->p, l->str, &v))
			return err_set(c->msg, ERR_INVALID, "sample %zu: label %zu: string index out of range",
				       si, i);
		if (l->str == 0)
			continue; /* numeric label: does not split series */
		if (n == 64)
			return err_set(c->msg, ERR_TOO_LARGE, "sample %zu: more than 64 string labels", si);
		for (j = n; j > 0 && strcmp(kv[2 * (j - 1)], k) > 0; j--) {
			kv[2 * j] = kv[2 * (j - 1)];
			kv[2 * j + 1] = kv[2 * (j - 1) + 1];
		}
		kv[2 * j] = k;
		kv[2 * j + 1] = v;
		n++;
	}
	for (i = 0; i < 2 * n; i++)
		if ((rc = put_str(&c->kb, kv[i])))
			return rc;
	return buf_putc(&c->kb, '\xff');
}

static int stack_key(struct ctx *c, const Perftools__Profiles__Sample *s, size_t si, struct buf *b)
{
	size_t i;
	int rc;

	for (i = 0; i < s->n_location_id; i++) {
		long k = idmap_find(&c->locs, s->location_id[i]);
		if (k < 0)
			return err_set(c->msg, ERR_INVALID, "sample %zu: location_id %" PRIu64 " not found",
				       si, s->location_id[i]);
		if ((rc = buf_append(b, &c->loc_norm[k], sizeof(c->loc_norm[k]))))
			return rc;
	}
	return 0;
}

static int aggregate(struct ctx *c, struct info *in)
{
	const Profile *p = c->p;
	size_t i, t, nt = p->n_sample_type;
	struct buf sk;
	uint32_t id;
	int rc = 0, added;

	buf_init(&sk, MAX_KEYS);
	for (i = 0; i < p->n_sample && rc == 0; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		if (s->n_value != nt) {
			rc = err_set(c->msg, ERR_INVALID, "sample %zu: %zu values for %zu sample types", i,
				     s->n_value, nt);
			break;
		}
		buf_reset(&sk);
		buf_reset(&c->kb);
		if ((rc = stack_key(c, s, i, &sk)) || (rc = labels_key(c, s, i)) ||
		    (rc = buf_append(&c->kb, sk.data, sk.len)))
			break;
		if ((rc = ktab_intern(&c->stacks, sk.data, sk.len, &id, &added)))
			break;
		if ((rc = ktab_intern(&c->keys, c->kb.data, c->kb.len, &id, &added)))
			break;
		if (c->keys.n * nt > c->cap_sums) {
			size_t nc = c->cap_sums ? c->cap_sums * 2 : 1024 * nt;
			int64_t *ns = realloc(c->sums, nc * sizeof(*ns));
			if (!ns) {
				rc = ERR_NOMEM;
				break;
			}
			c->sums = ns;
			c->cap_sums = nc;
		}
		for (t = 0; t < nt; t++) {
			if (added)
				c->sums[(size_t)id * nt + t] = 0;
			c->sums[(size_t)id * nt + t] += s->value[t];
			in->sum[t] += s->value[t];
		}
	}
	buf_release(&sk);
	if (rc)
		return rc;
	for (i = 0; i < c->keys.n; i++)
		for (t = 0; t < nt; t++)
			if (c->sums[i * nt + t] != 0) {
				in->nonzero[t]++;
				in->stored++;
			}
	in->distinct_stacks = c->stacks.n;
	return 0;
}

static int analyze(const Profile *p, struct info *in, struct err_msg *msg)
{
	struct ctx c;
	size_t i;
	int rc;

	memset(&c, 0, sizeof(c));
	memset(in, 0, sizeof(*in));
	c.p = p;
	c.msg = msg;
	buf_init(&c.kb, MAX_KEYS);
	if (p->n_string_table == 0 || p->string_table[0][0] != '\0') {
		rc = err_set(msg, ERR_INVALID, "string_table[0] must be \"\"");
		goto out;
	}
	if (p->n_sample_type > MAX_TYPES) {
		rc = err_set(msg, ERR_TOO_LARGE, "%zu sample types", p->n_sample_type);
		goto out;
	}
	for (i = 0; i < p->n_sample_type; i++) {
		const char *s;
		if (str_at(p, p->sample_type[i]->type, &s) || str_at(p, p->sample_type[i]->unit, &s)) {
			rc = err_set(msg, ERR_INVALID, "sample_type %zu: string index out of range", i);
			goto out;
		}
	}
	in->n_types = p->n_sample_type;
	if ((rc = idmap_build(&c.maps, p->n_mapping, map_id_at, p, "mapping", msg)) ||
	    (rc = idmap_build(&c.locs, p->n_location, loc_id_at, p, "location", msg)) ||
	    (rc = idmap_build(&c.fns, p->n_function, fn_id_at, p, "function", msg)) ||
	    (rc = normalize_locations(&c)) || (rc = aggregate(&c, in)))
		goto out;
out:
	idmap_release(&c.maps);
	idmap_release(&c.locs);
	idmap_release(&c.fns);
	ktab_release(&c.norm_locs);
	ktab_release(&c.stacks);
	ktab_release(&c.keys);
	free(c.loc_norm);
	free(c.sums);
	buf_release(&c.kb);
	return rc;
}

/* ---- output ------------------------------------------------------------- */

static const char *s_at(const Profile *p, int64_t i)
{
	const char *s;
	return str_at(p, i, &s) ? "?" : s;
}

static void print_json_str(const char *s)
{
	struct buf b;

	buf_init(&b, 6 * strlen(s) + 2); /* every byte escaped, and the quotes */
	if (buf_put_json_str(&b, s, strlen(s)) == 0)
		fputs(b.data, stdout);
	else
		fputs("\"\"", stdout);
	buf_release(&b);
}

static void print_json(const Profile *p, const struct info *in)
{
	size_t t;

	printf("{\"sample_types\":[");
	for (t = 0; t < in->n_types; t++) {
		printf("%s{\"type\":", t ? "," : "");
		print_json_str(s_at(p, p->sample_type[t]->type));
		printf(",\"unit\":");
		print_json_str(s_at(p, p->sample_type[t]->unit));
		printf(",\"nonzero_samples\":%" PRIu64 ",\"sum\":%" PRId64 "}", in->nonzero[t], in->sum[t]);
	}
	printf("],\"samples\":%zu,\"stored_samples\":%" PRIu64, p->n_sample, in->stored);
	printf(",\"mappings\":%zu,\"locations\":%zu,\"functions\":%zu", p->n_mapping, p->n_location,
	       p->n_function);
	printf(",\"distinct_stacks\":%" PRIu64 ",\"time_nanos\":%" PRId64 ",\"duration_nanos\":%" PRId64
	       ",\"period\":%" PRId64 "}\n",
	       in->distinct_stacks, p->time_nanos, p->duration_nanos, p->period);
}

static void print_text(const Profile *p, const struct info *in)
{
	size_t t;

	printf("sample types:");
	for (t = 0; t < in->n_types; t++)
		printf(" %s/%s", s_at(p, p->sample_type[t]->type), s_at(p, p->sample_type[t]->unit));
	printf("\nsamples: %zu\n", p->n_sample);
	for (t = 0; t < in->n_types; t++)
		printf("  %s/%s: %" PRIu64 " non-zero after aggregation, sum %" PRId64 "\n",
		       s_at(p, p->sample_type[t]->type), s_at(p, p->sample_type[t]->unit),
		       in->nonzero[t], in->sum[t]);
	printf("stored samples: %" PRIu64 "\n", in->stored);
	printf("mappings: %zu\nlocations: %zu\nfunctions: %zu\n", p->n_mapping, p->n_location,
	       p->n_function);
	printf("distinct stacks: %" PRIu64 "\ntime_nanos: %" PRId64 "\nduration_nanos: %" PRId64
	       "\nperiod: %" PRId64 "\n",
	       in->distinct_stacks, p->time_nanos, p->duration_nanos, p->period);
}

static int load(const char *path, struct buf *raw, struct err_msg *msg)
{
	struct buf file;
	struct stat sb;
	FILE *f = fopen(path, "rb");
	int rc = 0;

	if (!f)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	buf_init(&file, MAX_FILE);
	if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
		rc = err_set(msg, ERR_INVALID, "%s: not a regular file", path);
	else if ((uint64_t)sb.st_size > MAX_FILE)
		rc = err_set(msg, ERR_TOO_LARGE, "%s: larger than 1 GiB", path);
	else if ((rc = buf_reserve(&file, (size_t)sb.st_size + 1)) == 0) {
		file.len = fread(file.data, 1, (size_t)sb.st_size, f);
		if (file.len != (size_t)sb.st_size)
			rc = err_set(msg, ERR_IO, "%s: short read", path);
	}
	fclose(f);
	if (rc == 0) {
		if (is_gzip(file.data, file.len))
			rc = gunzip_capped(file.data, file.len, MAX_DECOMPRESSED, raw, msg);
		else
			rc = buf_append(raw, file.data, file.len);
	}
	buf_release(&file);
	return rc;
}

/* --label KEY: the raw values of the samples that carry string label KEY. */
static int print_label(const Profile *p, const char *key, struct err_msg *msg)
{
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		for (size_t j = 0; j < s->n_label; j++) {
			const Perftools__Profiles__Label *l = s->label[j];

			if (l->key < 0 || (size_t)l->key >= p->n_string_table || l->str <= 0 ||
			    (size_t)l->str >= p->n_string_table || s->n_value != p->n_sample_type)
				return err_set(msg, ERR_INVALID, "sample %zu: bad label or values", i);
			if (strcmp(p->string_table[l->key], key) != 0)
				continue;
			for (size_t t = 0; t < s->n_value; t++)
				printf("%s %s %" PRId64 "\n", p->string_table[l->str],
				       s_at(p, p->sample_type[t]->type), s->value[t]);
			break;
		}
	}
	return 0;
}

/* Prints what the file at `path` holds, in the output form asked for. */
static int one(const char *path, int json, const char *label, struct err_msg *msg)
{
	Profile *p = NULL;
	struct info in;
	struct buf raw;
	int rc;

	buf_init(&raw, MAX_DECOMPRESSED);
	if ((rc = load(path, &raw, msg)))
		goto out;
	p = perftools__profiles__profile__unpack(NULL, raw.len, (const uint8_t *)raw.data);
	if (!p) {
		rc = err_set(msg, ERR_INVALID, "%s: not a pprof protobuf", path);
		goto out;
	}
	if (label) {
		rc = print_label(p, label, msg);
		goto out;
	}
	if ((rc = analyze(p, &in, msg)))
		goto out;
	if (json)
		print_json(p, &in);
	else
		print_text(p, &in);
out:
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	buf_release(&raw);
	return rc;
}

int main(int argc, char **argv)
{
	struct err_msg msg = { "" };
	const char *label = NULL;
	int json = 0, rc = 0, i, first = 0;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc)
			label = argv[++i];
		else
			break;
	}
	first = i;
	if (first >= argc || argv[first][0] == '-' || (first + 1 < argc && !json && !label)) {
		fprintf(stderr, "usage: pprofinfo [--json | --label KEY] FILE...\n"
				"       (several files with --json or --label only)\n");
		return 2;
	}
	for (i = first; i < argc && !rc; i++)
		rc = one(argv[i], json, label, &msg);
	if (rc)
		fprintf(stderr, "pprofinfo: %s: %s\n", err_str(rc), msg.text);
	return rc ? 1 : 0;
}
