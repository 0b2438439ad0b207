/*
 * symbols.c - symbol partitions: interned strings, mappings, functions,
 * locations and the stack trie, deduplicated in memory and read through
 * lock-free snapshots.  Layouts and the concurrency design: storage_int.h,
 * sections 5 and 7.
 */
#include "storage_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/varint.h"

static const size_t elem_size[SYM_NKINDS] = {
	[SYM_STRING] = sizeof(struct sym_string),
	[SYM_MAPPING] = sizeof(struct sym_mapping),
	[SYM_FUNCTION] = sizeof(struct sym_function),
	[SYM_LOCATION] = sizeof(struct sym_location),
	[SYM_STACK] = sizeof(struct sym_stack),
};

static const char *const kind_name[SYM_NKINDS] = {
	"?", "string", "mapping", "function", "location", "stack",
};

/* Bytes of key, table and value per whole stack, besides its location ids. */
#define STACK_CACHE_OVERHEAD 48

static inline const void *entry(const struct part *p, enum sym_kind k, uint32_t id)
{
	return segarr_get(&p->tab[k].arr, id - 1);
}

/* ---- lifecycle ---------------------------------------------------------- */

static struct part *part_new(uint32_t id)
{
	struct part *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->id = id;
	p->refs = 1;
	for (int k = 1; k < SYM_NKINDS; k++) {
		store__segarr_init(&p->tab[k].arr, elem_size[k]);
		hmap_init(&p->tab[k].dedup, STORE_MAX_SYMBOLS, NULL);
	}
	store__pool_init(&p->pool);
	store__bmap_init(&p->stack_cache, STORE_MAX_STACK_CACHE / STACK_CACHE_OVERHEAD,
			 STORE_MAX_STACK_CACHE);
	return p;
}

static void part_clear(struct part *p)
{
	for (int k = 1; k < SYM_NKINDS; k++) {
		store__segarr_release(&p->tab[k].arr);
		hmap_release(&p->tab[k].dedup);
		p->tab[k].len = 0;
		atomic_store(&p->tab[k].committed, 0);
	}
	store__pool_release(&p->pool);
	p->committed_mark = store__pool_mark(&p->pool);
	store__bmap_release(&p->stack_cache);
}

void store__part_free(struct part *p)
{
	if (!p)
		return;
	part_clear(p);
	free(p->broken);
	free(p);
}

void store__part_close_writer(struct part *p)
{
	/* The epoch is over: nothing adds to this partition again, so the
	 * writer's dedup tables and stack cache are dead weight. */
	for (int k = 1; k < SYM_NKINDS; k++)
		hmap_release(&p->tab[k].dedup);
	store__bmap_release(&p->stack_cache);
}

void store__part_publish(struct part *p)
{
	/* In dependency order: a kind's entries refer only to lower kinds
	 * (store_symbols_get reads the counts the other way round). */
	for (int k = 1; k < SYM_NKINDS; k++)
		atomic_store_explicit(&p->tab[k].committed, p->tab[k].len, memory_order_release);
	p->committed_mark = store__pool_mark(&p->pool);
}

void store__part_rollback(struct part *p)
{
	for (int k = 1; k < SYM_NKINDS; k++) {
		struct symtab *t = &p->tab[k];
		uint32_t keep = atomic_load_explicit(&t->committed, memory_order_relaxed);

		if (t->len == keep)
			continue;
		if (k == SYM_STACK)
			store__bmap_clear(&p->stack_cache);
		t->len = keep;
		hmap_truncate(&t->dedup, keep + 1); /* the index of an entry is its id */
	}
	store__pool_rollback(&p->pool, p->committed_mark);
}

/* ---- adding entries ------------------------------------------------------ */

/* Appends `e` as entry len+1 of kind k and indexes it under `hash`. */
static int append(struct part *p, enum sym_kind k, const void *e, uint64_t hash, uint32_t *id)
{
	struct symtab *t = &p->tab[k];
	void *slot;
	int rc;

	if (t->len >= STORE_MAX_SYMBOLS)
		return ERR_TOO_LARGE;
	slot = store__segarr_at(&t->arr, t->len, 1);
	if (!slot)
		return ERR_NOMEM;
	memcpy(slot, e, elem_size[k]);
	rc = hmap_put(&t->dedup, hash, t->len + 1);
	if (rc)
		return rc;
	*id = ++t->len;
	return 0;
}

/* Marks the txn unusable after a failure that may have left partial state. */
static int txn_fail(struct store_txn *tx, int rc)
{
	if (rc != ERR_INVALID && rc != ERR_TOO_LARGE)
		tx->failed = 1;
	return rc;
}

/* Puts kind k's pending run of new symbols into the batch. */
static void put_run(struct store_txn *tx, enum sym_kind k)
{
	struct sym_run *r = &tx->run[k];
	uint8_t key[14];

	if (!r->n)
		return;
	assert(tx->run_part);
	be32_put(key, tx->t->id);
	be32_put(key + 4, tx->run_part->id);
	key[8] = (uint8_t)k;
	be32_put(key + 9, r->first);
	key[13] = SYM_RUN_TAG;
	store__txn_put(tx, CFI_SYMBOLS, key, sizeof(key), r->b.data, r->b.len);
	buf_reset(&r->b);
	r->n = 0;
}

void store__txn_put_runs(struct store_txn *tx)
{
	for (int k = 1; k < SYM_NKINDS; k++)
		put_run(tx, (enum sym_kind)k);
}

/*
 * Adds new symbol `id` of kind k (the record's value v[0..vlen)) to the
 * txn's run of p's new symbols of that kind.  Ids of a kind grow by one
 * within a partition, so a run is its first id and the values in order.
 */
static int put_record(struct store_txn *tx, struct part *p, enum sym_kind k, uint32_t id,
		      const void *v, size_t vlen)
{
	struct sym_run *r = &tx->run[k];
	int rc;

	if (tx->run_part != p) {
		store__txn_put_runs(tx);
		tx->run_part = p;
	}
	if (!r->n)
		r->first = id;
	assert(id == r->first + r->n);
	rc = buf_put_lstr(&r->b, v, vlen);
	if (rc) {
		tx->failed = 1; /* the symbol is in memory, not in the batch */
		return rc;
	}
	r->n++;
	if (r->b.len >= STORE_SYM_RUN_BYTES)
		put_run(tx, k);
	return 0;
}

/* ---- strings ------------------------------------------------------------ */

static uint64_t str_hash(const char *s, size_t len)
{
	return hash_bytes(s, len, 0x57);
}

/* Id of an interned string, 0 for "" or when absent (*found says which). */
static uint32_t str_find(const struct part *p, const char *s, size_t len, int *found)
{
	const struct hmap *m = &p->tab[SYM_STRING].dedup;
	struct hmap_probe pr;
	uint32_t id;

	*found = 1;
	if (len == 0)
		return 0;
	for (id = hmap_first(m, str_hash(s, len), &pr); id != HMAP_NONE; id = hmap_next(m, &pr)) {
		const struct sym_string *e = entry(p, SYM_STRING, id);

		if (e->len == len && memcmp(e->s, s, len) == 0)
			return id;
	}
	*found = 0;
	return 0;
}

/* Adds a string read from disk or given by the txn (not yet present). */
static int str_add(struct part *p, const char *s, size_t len, uint32_t *id)
{
	struct sym_string e;
	char *copy = store__pool_alloc(&p->pool, len + 1, 1);

	if (!copy)
		return p->pool.total + len + 1 > STORE_MAX_POOL_BYTES ? ERR_TOO_LARGE : ERR_NOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	e.s = copy;
	e.len = (uint32_t)len;
	return append(p, SYM_STRING, &e, str_hash(s, len), id);
}

static int txn_string(struct store_txn *tx, struct part *p, const char *s, uint32_t *id)
{
	size_t len = s ? strlen(s) : 0;
	int found, rc;

	if (len > STORE_MAX_STRING)
		return ERR_TOO_LARGE;
	*id = str_find(p, s, len, &found);
	if (found)
		return 0;
	rc = str_add(p, s, len, id);
	if (rc)
		return rc;
	return put_record(tx, p, SYM_STRING, *id, s, len);
}

/* ---- partitions for the txn ---------------------------------------------- */

static int txn_part(struct store_txn *tx, uint32_t part, struct part **out)
{
	struct part *p;
	int rc;

	if (part == 0 || part >= tx->t->next_part || part < store__epoch_part_lo(tx->t))
		return ERR_INVALID;
	if (tx->last_part && tx->last_part_id == part) {
		*out = tx->last_part;
		return 0;
	}
	rc = store__part_get(tx->st, tx->t, part, 1, &p, NULL);
	if (!rc && p->broken)
		rc = ERR_CORRUPT;
	if (!rc)
		rc = store__txn_touch(tx, p);
	if (!rc) {
		tx->last_part_id = part;
		tx->last_part = p;
		*out = p;
	}
	return rc;
}

/* ---- mappings ------------------------------------------------------------ */

/*
 * A mapping is one binary (its build ID, else its file name) in one
 * address space: locations of file offsets (pprof) and of ELF virtual
 * addresses (OTLP) of the same binary need different mappings, since the
 * flag says how to read their addresses.
 */
struct map_key {
	uint32_t filename, build_id, vaddr;
};

static int map_eq(const struct part *p, uint32_t id, const struct map_key *k)
{
	const struct sym_mapping *e = entry(p, SYM_MAPPING, id);

	if (!!(e->flags & STORE_MAP_ADDR_VADDR) != k->vaddr)
		return 0;
	if (k->build_id)
		return e->build_id == k->build_id;
	return e->build_id == 0 && e->filename == k->filename;
}

/* The id of the mapping equal to k, or 0. */
static uint32_t map_find(const struct part *p, const struct map_key *k, uint64_t hash)
{
	const struct hmap *m = &p->tab[SYM_MAPPING].dedup;
	struct hmap_probe pr;

	for (uint32_t id = hmap_first(m, hash, &pr); id != HMAP_NONE; id = hmap_next(m, &pr))
		if (map_eq(p, id, k))
			return id;
	return 0;
}

static int encode_mapping(struct buf *b, const struct sym_mapping *m)
{
	int rc;

	buf_reset(b);
	rc = buf_put_uvarint(b, m->start);
	if (!rc)
		rc = buf_put_uvarint(b, m->limit);
	if (!rc)
		rc = buf_put_uvarint(b, m->offset);
	if (!rc)
		rc = buf_put_uvarint(b, m->filename);
	if (!rc)
		rc = buf_put_uvarint(b, m->build_id);
	if (!rc)
		rc = buf_put_uvarint(b, m->flags);
	return rc;
}

int store_txn_mapping(struct store_txn *tx, uint32_t part, const struct store_mapping *m,
		      uint32_t *id)
{
	const char *fn = m->filename ? m->filename : "", *bid = m->build_id ? m->build_id : "";
	struct sym_mapping e;
	struct map_key k;
	struct part *p;
	int found, rc;

	if (strlen(fn) > STORE_MAX_STRING || strlen(bid) > STORE_MAX_STRING)
		return ERR_TOO_LARGE;
	rc = txn_part(tx, part, &p);
	if (rc)
		return txn_fail(tx, rc);
	k.vaddr = !!(m->flags & STORE_MAP_ADDR_VADDR);
	k.build_id = str_find(p, bid, strlen(bid), &found);
	k.filename = 0;
	if (found && !k.build_id)
		k.filename = str_find(p, fn, strlen(fn), &found);
	if (found) {
		uint32_t hit = map_find(p, &k, store__map_hash(k.filename, k.build_id, m->flags));
		if (hit) {
			*id = hit;
			return 0;
		}
	}
	memset(&e, 0, sizeof(e));
	e.start = m->memory_start;
	e.limit = m->memory_limit;
	e.offset = m->file_offset;
	e.flags = m->flags;
	rc = txn_string(tx, p, fn, &e.filename);
	if (!rc)
		rc = txn_string(tx, p, bid, &e.build_id);
	if (!rc)
		rc = append(p, SYM_MAPPING, &e, store__map_hash(e.filename, e.build_id, e.flags), id);
	if (!rc)
		rc = encode_mapping(&tx->val, &e);
	if (rc)
		return txn_fail(tx, rc);
	rc = put_record(tx, p, SYM_MAPPING, *id, tx->val.data, tx->val.len);
	if (!rc)
		tx->ctr[CTR_MAPPINGS]++;
	return rc;
}

/* ---- functions ----------------------------------------------------------- */

/* The id of the function equal to f, or 0. */
static uint32_t fn_find(const struct part *p, const struct sym_function *f)
{
	const struct hmap *m = &p->tab[SYM_FUNCTION].dedup;
	struct hmap_probe pr;

	for (uint32_t id = hmap_first(m, store__fn_hash(f), &pr); id != HMAP_NONE; id = hmap_next(m, &pr)) {
		const struct sym_function *e = entry(p, SYM_FUNCTION, id);

		if (e->name == f->name && e->system_name == f->system_name &&
		    e->filename == f->filename && e->start_line == f->start_line)
			return id;
	}
	return 0;
}

static int encode_function(struct buf *b, const struct sym_function *f)
{
	int rc;

	buf_reset(b);
	rc = buf_put_uvarint(b, f->name);
	if (!rc)
		rc = buf_put_uvarint(b, f->system_name);
	if (!rc)
		rc = buf_put_uvarint(b, f->filename);
	if (!rc)
		rc = buf_put_svarint(b, f->start_line);
	return rc;
}

int store_txn_function(struct store_txn *tx, uint32_t part, const struct store_function *f,
		       uint32_t *id)
{
	const char *s[3] = { f->name ? f->name : "", f->system_name ? f->system_name : "",
			     f->filename ? f->filename : "" };
	uint32_t sid[3];
	struct sym_function e;
	struct part *p;
	int all_found = 1, rc;

	for (int i = 0; i < 3; i++)
		if (strlen(s[i]) > STORE_MAX_STRING)
			return ERR_TOO_LARGE;
	rc = txn_part(tx, part, &p);
	if (rc)
		return txn_fail(tx, rc);
	for (int i = 0; i < 3; i++) {
		int found;
		sid[i] = str_find(p, s[i], strlen(s[i]), &found);
		all_found &= found;
	}
	memset(&e, 0, sizeof(e));
	e.start_line = f->start_line;
	if (all_found) {
		uint32_t hit;
		e.name = sid[0];
		e.system_name = sid[1];
		e.filename = sid[2];
		hit = fn_find(p, &e);
		if (hit) {
			*id = hit;
			return 0;
		}
	}
	rc = txn_string(tx, p, s[0], &e.name);
	if (!rc)
		rc = txn_string(tx, p, s[1], &e.system_name);
	if (!rc)
		rc = txn_string(tx, p, s[2], &e.filename);
	if (!rc)
		rc = append(p, SYM_FUNCTION, &e, store__fn_hash(&e), id);
	if (!rc)
		rc = encode_function(&tx->val, &e);
	if (rc)
		return txn_fail(tx, rc);
	rc = put_record(tx, p, SYM_FUNCTION, *id, tx->val.data, tx->val.len);
	if (!rc)
		tx->ctr[CTR_FUNCTIONS]++;
	return rc;
}

/* ---- locations ----------------------------------------------------------- */

static int loc_eq(const struct part *p, uint32_t id, const struct store_location *l)
{
	const struct sym_location *e = entry(p, SYM_LOCATION, id);

	if (e->mapping_id != l->mapping_id || e->address != l->address ||
	    e->n_lines != l->n_lines)
		return 0;
	return store__lines_eq(e->lines, l->lines, l->n_lines);
}

static int encode_location(struct buf *b, const struct sym_location *l)
{
	int rc;

	buf_reset(b);
	rc = buf_put_uvarint(b, l->mapping_id);
	if (!rc)
		rc = buf_put_uvarint(b, l->address);
	if (!rc)
		rc = buf_put_uvarint(b, l->n_lines);
	for (uint32_t i = 0; i < l->n_lines && !rc; i++) {
		rc = buf_put_uvarint(b, l->lines[i].function_id);
		if (!rc)
			rc = buf_put_svarint(b, l->lines[i].line);
		if (!rc)
			rc = buf_put_svarint(b, l->lines[i].column);
	}
	return rc;
}

/* Copies lines into the pool and appends the location. */
static int loc_add(struct part *p, uint32_t mapping_id, uint64_t address,
		   const struct store_line *lines, size_t n, uint64_t hash, uint32_t *id)
{
	struct sym_location e;
	struct store_line *copy = NULL;

	if (n) {
		copy = store__pool_alloc(&p->pool, n * sizeof(*copy), _Alignof(struct store_line));
		if (!copy)
			return ERR_NOMEM;
		memcpy(copy, lines, n * sizeof(*copy));
	}
	e.mapping_id = mapping_id;
	e.address = address;
	e.lines = copy;
	e.n_lines = (uint32_t)n;
	return append(p, SYM_LOCATION, &e, hash, id);
}

int store_txn_location(struct store_txn *tx, uint32_t part, const struct store_location *l,
		       uint32_t *id)
{
	struct hmap_probe pr;
	struct part *p;
	uint64_t hash;
	uint32_t hit;
	int rc;

	if (l->n_lines > STORE_MAX_LINES)
		return ERR_TOO_LARGE;
	if (l->n_lines && !l->lines)
		return ERR_INVALID;
	rc = txn_part(tx, part, &p);
	if (rc)
		return txn_fail(tx, rc);
	if (l->mapping_id > p->tab[SYM_MAPPING].len)
		return ERR_INVALID;
	for (size_t i = 0; i < l->n_lines; i++)
		if (l->lines[i].function_id > p->tab[SYM_FUNCTION].len)
			return ERR_INVALID;
	hash = store__loc_hash(l->mapping_id, l->address, l->lines, l->n_lines);
	for (hit = hmap_first(&p->tab[SYM_LOCATION].dedup, hash, &pr); hit != HMAP_NONE;
	     hit = hmap_next(&p->tab[SYM_LOCATION].dedup, &pr)) {
		if (loc_eq(p, hit, l)) {
			*id = hit;
			return 0;
		}
	}
	rc = loc_add(p, l->mapping_id, l->address, l->lines, l->n_lines, hash, id);
	if (!rc)
		rc = encode_location(&tx->val, entry(p, SYM_LOCATION, *id));
	if (rc)
		return txn_fail(tx, rc);
	rc = put_record(tx, p, SYM_LOCATION, *id, tx->val.data, tx->val.len);
	if (!rc)
		tx->ctr[CTR_LOCATIONS]++;
	return rc;
}

/* ---- stacks -------------------------------------------------------------- */

static uint64_t stack_hash(uint32_t parent, uint32_t location)
{
	return hash_u64((uint64_t)parent << 32 | location);
}

/* The id of the trie node (parent, location), or 0. */
static uint32_t stack_find(const struct part *p, uint32_t parent, uint32_t location,
			   uint64_t hash)
{
	const struct hmap *m = &p->tab[SYM_STACK].dedup;
	struct hmap_probe pr;

	for (uint32_t id = hmap_first(m, hash, &pr); id != HMAP_NONE; id = hmap_next(m, &pr)) {
		const struct sym_stack *e = entry(p, SYM_STACK, id);

		if (e->parent == parent && e->location == location)
			return id;
	}
	return 0;
}

/*
 * The trie path of the stack of location ids `leaf_first` (n > 0), added
 * where missing; *stack_id is its leaf node.
 */
static int stack_insert(struct store_txn *tx, struct part *p, const uint32_t *leaf_first,
			size_t n, uint32_t *stack_id)
{
	uint32_t n_loc = p->tab[SYM_LOCATION].len, parent = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		if (leaf_first[i] == 0 || leaf_first[i] > n_loc)
			return ERR_INVALID;
	for (size_t i = n; i-- > 0;) {
		uint64_t hash = stack_hash(parent, leaf_first[i]);
		uint32_t id = stack_find(p, parent, leaf_first[i], hash);

		if (!id) {
			struct sym_stack e = { parent, leaf_first[i] };
			uint8_t v[2 * VARINT_MAX];
			size_t vlen;

			rc = append(p, SYM_STACK, &e, hash, &id);
			if (rc)
				return txn_fail(tx, rc);
			vlen = varint_put(v, e.parent);
			vlen += varint_put(v + vlen, e.location);
			rc = put_record(tx, p, SYM_STACK, id, v, vlen);
			if (rc)
				return rc;
			tx->ctr[CTR_STACKS]++;
		}
		parent = id;
	}
	*stack_id = parent;
	return 0;
}

/* Adds key -> stack id to the stack cache while it has room; failing to
 * add is not an error, the cache is an optimization. */
static void cache_stack(struct part *p, const void *key, size_t len, uint32_t stack_id)
{
	if (store__bmap_bytes(&p->stack_cache) + len <= STORE_MAX_STACK_CACHE)
		(void)store__bmap_put(&p->stack_cache, key, len, stack_id);
}

/*
 * What the two stack calls check first: the empty stack is id 0 (returns
 * 1), a stack deeper than STORE_MAX_STACK_DEPTH is refused; else 0 with
 * the partition in *p.
 */
static int stack_begin(struct store_txn *tx, uint32_t part, size_t n, struct part **p,
		       uint32_t *stack_id)
{
	int rc;

	if (n == 0) {
		*stack_id = 0;
		return 1;
	}
	if (n > STORE_MAX_STACK_DEPTH)
		return ERR_TOO_LARGE;
	rc = txn_part(tx, part, p);
	return rc ? txn_fail(tx, rc) : 0;
}

int store_txn_stack(struct store_txn *tx, uint32_t part, const uint32_t *leaf_first,
		    size_t n, uint32_t *stack_id)
{
	struct part *p;
	uint64_t hit;
	int rc;

	rc = stack_begin(tx, part, n, &p, stack_id);
	if (rc)
		return rc > 0 ? 0 : rc;
	if (store__bmap_get(&p->stack_cache, leaf_first, n * sizeof(*leaf_first), &hit) == 0) {
		*stack_id = (uint32_t)hit;
		return 0;
	}
	rc = stack_insert(tx, p, leaf_first, n, stack_id);
	if (!rc)
		cache_stack(p, leaf_first, n * sizeof(*leaf_first), *stack_id);
	return rc;
}

/* ---- stacks by the contents of their frames -------------------------------- */

/*
 * The stack cache holds two kinds of keys: the location ids of a stack
 * (store_txn_stack: four bytes per frame, each id >= 1) and the contents
 * of its locations (store_txn_stack_of), which start with FRAME_KEY_TAG
 * zero bytes, so that no key of one kind is a key of the other.
 *
 * A content key holds, per frame leaf first, one word of 8 bytes in host
 * order: mapping_id << 48 | address for a frame without lines whose
 * mapping id is below FRAME_KEY_ESC and whose address is below 2^48 (the
 * frames of a raw-address profile), stored with one write.  Any other
 * frame is the word FRAME_KEY_ESC << 48, then uv mapping_id, uv address,
 * uv n_lines, and per line uv function_id, sv line, sv column.  No plain
 * word is the escape word, and what follows the escape delimits itself,
 * so equal keys are equal frames.  The keys live in memory only.
 *
 * Why words: varints cost about 35 instructions per frame of the bench
 * workload (6 % of ingest's, bench/RESULTS.md); a word costs a few, for
 * about the same bytes.
 */
#define FRAME_KEY_TAG 4
#define FRAME_KEY_ESC 0xffffu

/*
 * The content key of the frames into b; ERR_INVALID or ERR_TOO_LARGE for
 * frames store_txn_location() refuses (lines missing, too many) or a key
 * longer than b may hold: those go the uncached way, which says why.
 */
static int frames_key(struct buf *b, const struct store_location *const *f, size_t n)
{
	/* Room for a word per frame; a frame that escapes asks for more. */
	size_t room = FRAME_KEY_TAG + 8 * n;
	uint8_t *o;
	int rc;

	buf_reset(b);
	rc = buf_reserve(b, room);
	if (rc)
		return rc;
	o = (uint8_t *)b->data;
	memset(o, 0, FRAME_KEY_TAG);
	o += FRAME_KEY_TAG;
	for (size_t i = 0; i < n; i++) {
		const struct store_location *l = f[i];
		uint64_t w;
		size_t at;

		if (l->n_lines == 0 && l->mapping_id < FRAME_KEY_ESC && l->address >> 48 == 0) {
			w = (uint64_t)l->mapping_id << 48 | l->address;
			memcpy(o, &w, 8);
			o += 8;
			continue;
		}
		if (l->n_lines > STORE_MAX_LINES)
			return ERR_TOO_LARGE;
		if (l->n_lines && !l->lines)
			return ERR_INVALID;
		at = (size_t)(o - (uint8_t *)b->data);
		room += 3 * VARINT_MAX * (1 + l->n_lines);
		rc = buf_reserve(b, room);
		if (rc)
			return rc;
		o = (uint8_t *)b->data + at;
		w = (uint64_t)FRAME_KEY_ESC << 48;
		memcpy(o, &w, 8);
		o += 8;
		o += varint_put(o, l->mapping_id);
		o += varint_put(o, l->address);
		o += varint_put(o, l->n_lines);
		for (size_t j = 0; j < l->n_lines; j++) {
			o += varint_put(o, l->lines[j].function_id);
			o += varint_put(o, zigzag_encode(l->lines[j].line));
			o += varint_put(o, zigzag_encode(l->lines[j].column));
		}
	}
	assert((size_t)(o - (uint8_t *)b->data) <= room);
	b->len = (size_t)(o - (uint8_t *)b->data);
	b->data[b->len] = '\0'; /* as every struct buf keeps it */
	return 0;
}

int store_txn_stack_of(struct store_txn *tx, uint32_t part,
		       const struct store_location *const *leaf_first, size_t n, uint32_t *stack_id)
{
	struct part *p;
	uint32_t *ids;
	uint64_t hit;
	int keyed, rc;

	rc = stack_begin(tx, part, n, &p, stack_id);
	if (rc)
		return rc > 0 ? 0 : rc;
	keyed = frames_key(&tx->key, leaf_first, n) == 0;
	if (keyed && store__bmap_get(&p->stack_cache, tx->key.data, tx->key.len, &hit) == 0) {
		*stack_id = (uint32_t)hit;
		return 0;
	}
	/* First sight of these frames: as store_txn_location() for each, then
	 * store_txn_stack() (which would cache the ids too: one key is enough). */
	ids = malloc(n * sizeof(*ids));
	if (!ids)
		return ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		rc = store_txn_location(tx, part, leaf_first[i], &ids[i]);
		if (rc)
			goto out;
	}
	rc = stack_insert(tx, p, ids, n, stack_id);
	if (!rc && keyed)
		cache_stack(p, tx->key.data, tx->key.len, *stack_id);
out:
	free(ids);
	return rc;
}

/* ---- loading a partition from disk ---------------------------------------- */

static int get_uv(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	size_t n = varint_get(*p, end, v);

	if (!n)
		*v = 0;
	*p += n;
	return n ? 0 : ERR_CORRUPT;
}

static int get_sv(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	uint64_t u = 0;
	int rc = get_uv(p, end, &u);
	*v = zigzag_decode(u);
	return rc;
}

static int load_record(struct part *p, enum sym_kind kind, uint32_t id, const uint8_t *v,
		       size_t vlen, struct buf *lines)
{
	const uint8_t *q = v, *end = v + vlen;
	uint32_t n_str = p->tab[SYM_STRING].len;
	uint32_t got;
	uint64_t a[6];
	int rc = 0;

	if (id != p->tab[kind].len + 1)
		return ERR_CORRUPT;
	switch (kind) {
	case SYM_STRING:
		if (vlen == 0 || vlen > STORE_MAX_STRING)
			return ERR_CORRUPT;
		rc = str_add(p, (const char *)v, vlen, &got);
		break;
	case SYM_MAPPING: {
		struct sym_mapping e;
		for (int i = 0; i < 6 && !rc; i++)
			rc = get_uv(&q, end, &a[i]);
		if (rc || q != end || a[3] > n_str || a[4] > n_str || a[5] > UINT32_MAX)
			return ERR_CORRUPT;
		e.start = a[0];
		e.limit = a[1];
		e.offset = a[2];
		e.filename = (uint32_t)a[3];
		e.build_id = (uint32_t)a[4];
		e.flags = (uint32_t)a[5];
		rc = append(p, kind, &e, store__map_hash(e.filename, e.build_id, e.flags), &got);
		break;
	}
	case SYM_FUNCTION: {
		struct sym_function e;
		for (int i = 0; i < 3 && !rc; i++)
			rc = get_uv(&q, end, &a[i]);
		if (!rc)
			rc = get_sv(&q, end, &e.start_line);
		if (rc || q != end || a[0] > n_str || a[1] > n_str || a[2] > n_str)
			return ERR_CORRUPT;
		e.name = (uint32_t)a[0];
		e.system_name = (uint32_t)a[1];
		e.filename = (uint32_t)a[2];
		rc = append(p, kind, &e, store__fn_hash(&e), &got);
		break;
	}
	case SYM_LOCATION: {
		struct store_line *l;
		for (int i = 0; i < 3 && !rc; i++)
			rc = get_uv(&q, end, &a[i]);
		if (rc || a[0] > p->tab[SYM_MAPPING].len || a[2] > STORE_MAX_LINES ||
		    a[2] > (uint64_t)(end - q))
			return ERR_CORRUPT;
		buf_reset(lines);
		rc = buf_reserve(lines, a[2] * sizeof(*l) + 1);
		if (rc)
			return rc;
		l = (struct store_line *)(void *)lines->data;
		for (uint64_t i = 0; i < a[2]; i++) {
			uint64_t fid;
			rc = get_uv(&q, end, &fid);
			if (!rc)
				rc = get_sv(&q, end, &l[i].line);
			if (!rc)
				rc = get_sv(&q, end, &l[i].column);
			if (rc || fid > p->tab[SYM_FUNCTION].len)
				return ERR_CORRUPT;
			l[i].function_id = (uint32_t)fid;
		}
		if (q != end)
			return ERR_CORRUPT;
		rc = loc_add(p, (uint32_t)a[0], a[1], l, (size_t)a[2],
			     store__loc_hash((uint32_t)a[0], a[1], l, (size_t)a[2]), &got);
		break;
	}
	case SYM_STACK: {
		struct sym_stack e;
		rc = get_uv(&q, end, &a[0]);
		if (!rc)
			rc = get_uv(&q, end, &a[1]);
		if (rc || q != end || a[0] >= id || a[1] == 0 ||
		    a[1] > p->tab[SYM_LOCATION].len)
			return ERR_CORRUPT;
		e.parent = (uint32_t)a[0];
		e.location = (uint32_t)a[1];
		rc = append(p, kind, &e, stack_hash(e.parent, e.location), &got);
		break;
	}
	default:
		return ERR_CORRUPT;
	}
	return rc;
}

/* Loads the run v[0..vlen) of kind `kind` from id *id on; on failure *id
 * is the id of the symbol that failed. */
static int load_run(struct part *p, enum sym_kind kind, uint32_t *id, const uint8_t *v,
		    size_t vlen, struct buf *lines)
{
	const uint8_t *q = v, *end = v + vlen;

	if (vlen == 0 || vlen > SYM_RUN_MAX_VALUE)
		return ERR_CORRUPT;
	while (q < end) {
		uint64_t n;
		int rc = get_uv(&q, end, &n);

		if (!rc && n > (uint64_t)(end - q))
			rc = ERR_CORRUPT;
		if (!rc)
			rc = load_record(p, kind, *id, q, (size_t)n, lines);
		if (rc)
			return rc;
		q += n;
		if (q < end && *id == UINT32_MAX)
			return ERR_CORRUPT;
		if (q < end)
			++*id;
	}
	return 0;
}

static int part_load(struct store *st, struct tenant *t, struct part *p, struct err_msg *msg)
{
	uint8_t lo[8], hi[8];
	struct buf lines;
	struct scan s;
	int rc;

	be32_put(lo, t->id);
	be32_put(lo + 4, p->id);
	be32_put(hi, t->id);
	be32_put(hi + 4, p->id + 1);
	buf_init(&lines, STORE_MAX_LINES * sizeof(struct store_line) + 16);
	rc = store__scan_open(st, CFI_SYMBOLS, &s, lo, 8, hi, 8);
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(s.it, &vlen);

		uint32_t id;

		if ((klen != 13 && (klen != 14 || k[13] != SYM_RUN_TAG)) || k[8] == 0 ||
		    k[8] >= SYM_NKINDS) {
			rc = err_set(msg, ERR_CORRUPT, "symbols: bad key in partition %u of %s",
				     p->id, t->name);
			break;
		}
		id = be32_get(k + 9);
		if (klen == 13)
			rc = load_record(p, (enum sym_kind)k[8], id, v, vlen, &lines);
		else
			rc = load_run(p, (enum sym_kind)k[8], &id, v, vlen, &lines);
		if (rc) {
			err_set(msg, rc, "symbols: bad %s %u in partition %u of %s",
				kind_name[k[8]], id, p->id, t->name);
			break;
		}
	}
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, msg);
	buf_release(&lines);
	if (rc) {
		part_clear(p);
		return rc;
	}
	store__part_publish(p);
	return 0;
}

size_t store__part_lower(struct part *const *v, size_t n, uint32_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index in t->parts of the first partition whose id is >= id (t->mu held). */
static size_t part_lower(const struct tenant *t, uint32_t id)
{
	return store__part_lower(t->parts, t->n_parts, id);
}

struct part *store__part_find(struct tenant *t, uint32_t id)
{
	size_t i = part_lower(t, id);

	return i < t->n_parts && t->parts[i]->id == id ? t->parts[i] : NULL;
}

/* Lists a new, empty partition (t->mu held). */
static int part_insert(struct tenant *t, uint32_t id, struct part **out)
{
	size_t i = part_lower(t, id);
	struct part *p;
	int rc = GROW(t->parts, t->cap_parts, t->n_parts + 1, STORE_MAX_PARTS, NULL);

	if (rc)
		return rc;
	p = part_new(id);
	if (!p)
		return ERR_NOMEM;
	memmove(t->parts + i + 1, t->parts + i, (t->n_parts - i) * sizeof(*t->parts));
	t->parts[i] = p;
	t->n_parts++;
	*out = p;
	return 0;
}

int store__part_get(struct store *st, struct tenant *t, uint32_t id, int create,
		    struct part **out, struct err_msg *msg)
{
	struct part *p;
	int rc = 0;

	(void)st;
	pthread_mutex_lock(&t->mu);
	p = store__part_find(t, id);
	if (p && p->retired)
		p = NULL;
	if (!p && create)
		rc = part_insert(t, id, &p);
	else if (!p)
		rc = err_set(msg, ERR_NOT_FOUND, "tenant %s has no partition %u", t->name, id);
	pthread_mutex_unlock(&t->mu);
	if (!rc)
		*out = p;
	return rc;
}

int store__parts_load(struct store *st, struct tenant *t, uint32_t from_id,
		      struct err_msg *msg)
{
	uint8_t lo[8], hi[8];
	uint32_t id = from_id;
	int rc = 0;

	be32_put(hi, t->id + 1);
	memset(hi + 4, 0, 4);
	/* Every partition with symbols, found by seeking past the previous one. */
	for (;;) {
		rocksdb_iterator_t *it;
		struct part *p;
		size_t klen;
		const uint8_t *k;

		be32_put(lo, t->id);
		be32_put(lo + 4, id);
		it = rocksdb_create_iterator_cf(st->db, st->ropt, st->cf[CFI_SYMBOLS]);
		rocksdb_iter_seek(it, (const char *)lo, 8);
		if (!rocksdb_iter_valid(it)) {
			char *err = NULL;
			rocksdb_iter_get_error(it, &err);
			rocksdb_iter_destroy(it);
			if (err)
				rc = store__rocks_err(msg, ERR_IO, "symbols scan", err);
			break;
		}
		k = (const uint8_t *)rocksdb_iter_key(it, &klen);
		if (klen < 8 || memcmp(k, hi, 8) >= 0 || be32_get(k) != t->id) {
			rocksdb_iter_destroy(it);
			break;
		}
		id = be32_get(k + 4);
		rocksdb_iter_destroy(it);
		pthread_mutex_lock(&t->mu);
		p = store__part_find(t, id);
		rc = p ? 0 : part_insert(t, id, &p);
		pthread_mutex_unlock(&t->mu);
		if (!rc) {
			struct err_msg why;
			err_clear(&why);
			rc = part_load(st, t, p, &why);
			if (rc == ERR_CORRUPT) {
				/* One bad partition must not keep the store from opening:
				 * it stays empty, and reads and writes of it fail. */
				log_error("%s", why.text);
				p->broken = strdup(why.text[0] ? why.text : "corrupt");
				rc = p->broken ? 0 : ERR_NOMEM;
			} else if (rc) {
				err_set(msg, rc, "%s", why.text);
			}
		}
		if (rc || id == UINT32_MAX)
			break;
		id++;
	}
	return rc;
}

void store__part_put(struct tenant *t, struct part *p)
{
	size_t i;

	if (!p)
		return;
	pthread_mutex_lock(&t->mu);
	if (atomic_fetch_sub(&p->refs, 1) != 1) {
		pthread_mutex_unlock(&t->mu);
		return;
	}
	i = part_lower(t, p->id);
	if (i < t->n_parts && t->parts[i] == p) {
		memmove(t->parts + i, t->parts + i + 1, (t->n_parts - i - 1) * sizeof(*t->parts));
		t->n_parts--;
	}
	pthread_mutex_unlock(&t->mu);
	store__part_free(p);
}

/* ---- reading ------------------------------------------------------------- */

/* A view of service `part - part_base` of a block (t->mu not held). */
static int block_view(struct store *st, struct tenant *t, uint32_t part,
		      struct store_symbols **out, struct err_msg *msg)
{
	struct store_symbols *v;
	struct bsymtab *s = NULL;
	struct block *b;
	int rc;

	pthread_mutex_lock(&t->mu);
	b = store__block_by_part(t, part);
	if (b)
		store__block_ref(b);
	pthread_mutex_unlock(&t->mu);
	if (!b)
		return err_set(msg, ERR_NOT_FOUND, "tenant %s has no partition %u", t->name, part);
	if (!b->have_meta)
		rc = err_set(msg, ERR_CORRUPT, "block %s is unreadable", b->id_hex);
	else
		rc = store__block_syms(st, b, part - b->part_base, &s, msg);
	store__block_put(st, b);
	if (rc)
		return rc;
	v = calloc(1, sizeof(*v));
	if (!v) {
		store__bsymtab_put(s);
		return ERR_NOMEM;
	}
	v->b = s;
	memcpy(v->count, s->s.n, sizeof(v->count));
	*out = v;
	return 0;
}

int store_symbols_get(struct store *st, const char *tenant, uint32_t part,
		      struct store_symbols **out, struct err_msg *msg)
{
	struct tenant *t = store__tenant_find(st, tenant);
	struct store_symbols *v;
	struct part *p;

	if (!t)
		return err_set(msg, ERR_NOT_FOUND, "unknown tenant %s", tenant);
	if (part >= STORE_BLOCK_PART_MIN)
		return block_view(st, t, part, out, msg);
	if (part == 0 || part > atomic_load_explicit(&t->committed_parts, memory_order_acquire))
		return err_set(msg, ERR_NOT_FOUND, "tenant %s has no partition %u", tenant, part);
	v = calloc(1, sizeof(*v));
	if (!v)
		return ERR_NOMEM;
	pthread_mutex_lock(&t->mu);
	p = store__part_find(t, part);
	if (p)
		atomic_fetch_add(&p->refs, 1);
	pthread_mutex_unlock(&t->mu);
	if (!p) {
		free(v);
		return err_set(msg, ERR_NOT_FOUND, "tenant %s has no partition %u", tenant, part);
	}
	if (p->broken) {
		int rc = err_set(msg, ERR_CORRUPT, "%s", p->broken);
		store__part_put(t, p);
		free(v);
		return rc;
	}
	v->p = p;
	v->t = t;
	/* Commits publish kinds in dependency order (strings first, stacks
	 * last, see store__part_publish); reading them in the reverse order
	 * means every entry a counted stack, location, function or mapping
	 * refers to is counted too, even while a commit is publishing. */
	for (int k = SYM_NKINDS - 1; k >= 1; k--)
		v->count[k] = atomic_load_explicit(&p->tab[k].committed, memory_order_acquire);
	*out = v;
	return 0;
}

void store_symbols_put(struct store_symbols *sym)
{
	if (!sym)
		return;
	if (sym->b)
		store__bsymtab_put(sym->b);
	else
		store__part_put(sym->t, sym->p);
	free(sym);
}

uint32_t store_symbols_stack_count(const struct store_symbols *sym)
{
	return sym->count[SYM_STACK];
}

uint32_t store_symbols_location_count(const struct store_symbols *sym)
{
	return sym->count[SYM_LOCATION];
}

static const char *view_str(const struct store_symbols *sym, uint32_t id)
{
	if (id == 0 || id > sym->count[SYM_STRING])
		return "";
	return sv_str(sym, id)->s;
}

int store_symbols_stack_node(const struct store_symbols *sym, uint32_t stack_id,
			     uint32_t *parent, uint32_t *location_id)
{
	const struct sym_stack *e;

	if (stack_id == 0 || stack_id > sym->count[SYM_STACK])
		return ERR_NOT_FOUND;
	e = sv_stack(sym, stack_id);
	*parent = e->parent;
	*location_id = e->location;
	return 0;
}

int store_symbols_location(const struct store_symbols *sym, uint32_t id,
			   struct store_location_view *out)
{
	const struct sym_location *e;

	if (id == 0 || id > sym->count[SYM_LOCATION])
		return ERR_NOT_FOUND;
	e = sv_loc(sym, id);
	out->mapping_id = e->mapping_id;
	out->address = e->address;
	out->lines = e->lines;
	out->n_lines = e->n_lines;
	return 0;
}

int store_symbols_function(const struct store_symbols *sym, uint32_t id,
			   struct store_function *out)
{
	const struct sym_function *e;

	if (id == 0 || id > sym->count[SYM_FUNCTION])
		return ERR_NOT_FOUND;
	e = sv_fn(sym, id);
	out->name = view_str(sym, e->name);
	out->system_name = view_str(sym, e->system_name);
	out->filename = view_str(sym, e->filename);
	out->start_line = e->start_line;
	return 0;
}

int store_symbols_mapping(const struct store_symbols *sym, uint32_t id,
			  struct store_mapping *out)
{
	const struct sym_mapping *e;

	if (id == 0 || id > sym->count[SYM_MAPPING])
		return ERR_NOT_FOUND;
	e = sv_map(sym, id);
	out->memory_start = e->start;
	out->memory_limit = e->limit;
	out->file_offset = e->offset;
	out->filename = view_str(sym, e->filename);
	out->build_id = view_str(sym, e->build_id);
	out->flags = e->flags;
	return 0;
}
