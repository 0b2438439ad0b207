/*
 * blocks.c - the block registry: finding block files and their 'B' records
 * at open (and recovering from a crash in the middle of sealing or
 * compaction), registering new blocks, references and deferred deletion,
 * partition ids, and reading a block's footer, index, symbols and pages
 * through a byte-bounded cache of decoded objects.  Layouts: storage_int.h,
 * sections 9 and 10.
 */
#include "storage_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/compress.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/varint.h"
#include "objstore/objstore.h"

#define BREC_VERSION 1
#define MAX_BLOCKS_PER_TENANT ((size_t)1 << 24)

/* ---- names ------------------------------------------------------------------ */

/*
 * A tenant's directory name: bytes [A-Za-z0-9_.-] as they are (a leading
 * '.' excepted), every other byte as %XX, so that the mapping is one to one
 * and no name is "." or "..".
 */
static int escape_tenant(const char *t, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; t[i]; i++) {
		unsigned char c = (unsigned char)t[i];
		int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   c == '_' || c == '-' || (c == '.' && i > 0);
		if (n + 4 > cap)
			return ERR_TOO_LARGE;
		if (keep) {
			out[n++] = (char)c;
		} else {
			snprintf(out + n, 4, "%%%02X", c);
			n += 3;
		}
	}
	out[n] = '\0';
	return n ? 0 : ERR_INVALID;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int unescape_tenant(const char *d, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; d[i]; i++) {
		int c = (unsigned char)d[i];
		if (c == '%') {
			int h = hexval(d[i + 1]), l = h < 0 ? -1 : hexval(d[i + 2]);
			if (l < 0)
				return ERR_INVALID;
			c = h << 4 | l;
			i += 2;
		}
		if (c == 0 || n + 1 >= cap)
			return ERR_INVALID;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return n ? 0 : ERR_INVALID;
}

static int mkdir_one(const char *d)
{
	return mkdir(d, 0755) == 0 || errno == EEXIST ? 0 : ERR_IO;
}

int store__tenant_dir(struct store *st, const char *tenant, int create, char **out,
		      struct err_msg *msg)
{
	char esc[3 * STORE_MAX_TENANT_NAME + 1], *top = NULL, *d = NULL;
	struct stat sb;
	int rc;

	rc = escape_tenant(tenant, esc, sizeof(esc));
	if (rc)
		return err_set(msg, ERR_INVALID, "tenant name \"%s\" cannot name a directory", tenant);
	if (asprintf(&top, "%s/%s", st->dir, BLOCKS_DIR) < 0)
		return ERR_NOMEM;
	if (asprintf(&d, "%s/%s", top, esc) < 0) {
		free(top);
		return ERR_NOMEM;
	}
	if (create && stat(d, &sb) != 0) {
		rc = mkdir_one(top);
		if (!rc)
			rc = mkdir_one(d);
		/* The new directory entries must survive a crash before a block
		 * inside them is counted on. */
		if (!rc)
			rc = store__fsync_dir(top);
		if (!rc)
			rc = store__fsync_dir(st->dir);
		if (rc) {
			err_set(msg, rc, "blocks: create %s: %s", d, strerror(errno));
			free(top);
			free(d);
			return rc;
		}
	}
	free(top);
	*out = d;
	return 0;
}

/* ---- 'B' records -------------------------------------------------------------- */

void store__brec_key(uint8_t k[5 + BLOCK_ID_BYTES], uint32_t tenant,
		     const uint8_t id[BLOCK_ID_BYTES])
{
	key_tenant_tag(k, tenant, TAG_BLOCK);
	memcpy(k + 5, id, BLOCK_ID_BYTES);
}

int store__brec_encode(const struct brec *r, struct buf *out)
{
	int rc = buf_putc(out, BREC_VERSION);

	if (!rc)
		rc = buf_put_uvarint(out, r->level);
	if (!rc)
		rc = buf_put_svarint(out, r->range_start);
	if (!rc)
		rc = buf_put_svarint(out, r->range_end);
	if (!rc)
		rc = buf_put_svarint(out, r->min_time);
	if (!rc)
		rc = buf_put_svarint(out, r->max_time);
	if (!rc)
		rc = buf_put_uvarint(out, r->bytes);
	if (!rc)
		rc = buf_put_uvarint(out, r->series);
	if (!rc)
		rc = buf_put_uvarint(out, r->profiles);
	if (!rc)
		rc = buf_put_uvarint(out, r->samples);
	return rc;
}

int store__brec_decode(const uint8_t *v, size_t len, struct brec *out)
{
	const uint8_t *p = v + 1, *end = v + len;
	uint64_t u[10];

	if (len < 2 || v[0] != BREC_VERSION)
		return ERR_CORRUPT;
	for (int i = 0; i < 9; i++) {
		size_t n = varint_get(p, end, &u[i]);
		if (!n)
			return ERR_CORRUPT;
		p += n;
	}
	if (p != end || u[0] > UINT32_MAX)
		return ERR_CORRUPT;
	out->level = (uint32_t)u[0];
	out->range_start = zigzag_decode(u[1]);
	out->range_end = zigzag_decode(u[2]);
	out->min_time = zigzag_decode(u[3]);
	out->max_time = zigzag_decode(u[4]);
	out->bytes = u[5];
	out->series = u[6];
	out->profiles = u[7];
	out->samples = u[8];
	if (out->range_end <= out->range_start)
		return ERR_CORRUPT;
	return 0;
}

void store__brec_of(const struct bmeta *m, uint64_t bytes, struct brec *out)
{
	out->level = m->level;
	out->range_start = m->range_start;
	out->range_end = m->range_end;
	out->min_time = m->min_time;
	out->max_time = m->max_time;
	out->bytes = bytes;
	out->series = m->series;
	out->profiles = m->profiles;
	out->samples = m->samples;
}

/* ---- the cache ---------------------------------------------------------------- */

struct bcache_ent {
	struct dlist_node lru;
	struct block *b;
	uint32_t svc; /* UINT32_MAX: the index */
	size_t bytes;
};

void store__bidx_put(struct bidx *x)
{
	if (x && atomic_fetch_sub(&x->refs, 1) == 1) {
		store__bindex_release(&x->x);
		free(x);
	}
}

void store__bsymtab_put(struct bsymtab *s)
{
	if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
		store__bsyms_release(&s->s);
		free(s);
	}
}

/* Drops entry e from the cache (c->mu held); the object loses the cache's reference. */
static void drop_entry(struct bcache *c, struct bcache_ent *e)
{
	struct block *b = e->b;

	dlist_unlink(&c->lru, &e->lru);
	c->bytes -= e->bytes;
	if (e->svc == UINT32_MAX) {
		struct bidx *x = b->index;
		b->index = NULL;
		x->ent = NULL;
		store__bidx_put(x);
	} else {
		struct bsymtab *s = b->syms[e->svc];
		b->syms[e->svc] = NULL;
		s->ent = NULL;
		store__bsymtab_put(s);
	}
	free(e);
}

static void evict(struct bcache *c)
{
	while (c->bytes > c->cap && c->lru.tail) {
		drop_entry(c, dlist_entry(c->lru.tail, struct bcache_ent, lru));
		c->evictions++;
	}
}

/* Adds a cache entry for the object just stored in b (c->mu held). */
static struct bcache_ent *add_entry(struct bcache *c, struct block *b, uint32_t svc,
				    size_t bytes)
{
	struct bcache_ent *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->b = b;
	e->svc = svc;
	e->bytes = bytes;
	dlist_push_front(&c->lru, &e->lru);
	c->bytes += bytes;
	return e;
}

/* Forgets every cached object of b (its last reference is going). */
static void cache_forget(struct bcache *c, struct block *b)
{
	pthread_mutex_lock(&c->mu);
	if (b->index && b->index->ent)
		drop_entry(c, b->index->ent);
	for (size_t i = 0; b->syms && i < b->m.n_svc; i++)
		if (b->syms[i] && b->syms[i]->ent)
			drop_entry(c, b->syms[i]->ent);
	pthread_mutex_unlock(&c->mu);
}

void store__block_uncache(struct store *st, struct block *b)
{
	cache_forget(&st->cache, b);
	store__pcache_forget(b->pages, b);
}

/* ---- references --------------------------------------------------------------- */

void store__block_ref(struct block *b)
{
	atomic_fetch_add(&b->refs, 1);
}

static void block_free(struct store *st, struct block *b)
{
	cache_forget(&st->cache, b);
	store__pcache_forget(b->pages, b);
	store__rcache_forget(b->remote, b);
	if (b->doomed && b->path) {
		if (unlink(b->path) != 0 && errno != ENOENT)
			log_warn("blocks: cannot delete %s: %s", b->path, strerror(errno));
	}
	store__bmeta_release(&b->m);
	free(b->syms);
	free(b->covers);
	free(b->path);
	free(b);
}

/* Removes b from t->known (t->mu held). */
static void unknow(struct tenant *t, struct block *b)
{
	for (size_t i = 0; i < t->n_known; i++) {
		if (t->known[i] == b) {
			memmove(t->known + i, t->known + i + 1, (t->n_known - i - 1) * sizeof(*t->known));
			t->n_known--;
			return;
		}
	}
}

void store__block_put(struct store *st, struct block *b)
{
	struct tenant *t;

	if (!b)
		return;
	t = b->t;
	pthread_mutex_lock(&t->mu);
	if (atomic_fetch_sub(&b->refs, 1) != 1) {
		pthread_mutex_unlock(&t->mu);
		return;
	}
	unknow(t, b);
	pthread_mutex_unlock(&t->mu);
	block_free(st, b);
}

int store__blocks_snapshot(struct tenant *t, struct block ***out, size_t *n)
{
	struct block **v;

	pthread_mutex_lock(&t->mu);
	v = calloc(t->n_blocks + 1, sizeof(*v));
	if (v) {
		for (size_t i = 0; i < t->n_blocks; i++) {
			store__block_ref(t->blocks[i]);
			v[i] = t->blocks[i];
		}
		*n = t->n_blocks;
	}
	pthread_mutex_unlock(&t->mu);
	*out = v;
	return v ? 0 : ERR_NOMEM;
}

void store__blocks_release(struct store *st, struct block **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store__block_put(st, v[i]);
	free(v);
}

void store__block_bad(struct block *b, const char *fmt, ...)
{
	int expect = 0;
	va_list ap;

	if (!atomic_compare_exchange_strong(&b->bad, &expect, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(b->why, sizeof(b->why), fmt, ap);
	va_end(ap);
	atomic_store_explicit(&b->bad, 2, memory_order_release);
	/* After the mark: store__pcache_add checks it under the cache's lock. */
	store__pcache_forget(b->pages, b);
	log_warn("block %s of tenant %s: %s; its profiles are skipped", b->id_hex, b->t->name,
		 b->why);
}

struct block *store__block_by_part(struct tenant *t, uint32_t part)
{
	size_t lo = 0, hi = t->n_known;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct block *b = t->known[mid];
		if (part < b->part_base)
			hi = mid;
		else if (part >= b->part_base + b->n_parts)
			lo = mid + 1;
		else
			return b;
	}
	return NULL;
}

struct block *store__block_by_ref(struct tenant *t, uint32_t ref)
{
	size_t lo = 0, hi = t->n_known;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct block *b = t->known[mid];
		if (ref < b->ref)
			hi = mid;
		else if (ref > b->ref)
			lo = mid + 1;
		else
			return b;
	}
	return NULL;
}

static int block_cmp_time(const struct block *a, const struct block *b)
{
	if (a->rec.range_start != b->rec.range_start)
		return a->rec.range_start < b->rec.range_start ? -1 : 1;
	return memcmp(a->id, b->id, BLOCK_ID_BYTES);
}

int store__block_list(struct tenant *t, struct block *b)
{
	size_t i;
	int rc = GROW(t->blocks, t->cap_blocks, t->n_blocks + 1, MAX_BLOCKS_PER_TENANT, NULL);

	if (rc)
		return rc;
	for (i = t->n_blocks; i > 0 && block_cmp_time(t->blocks[i - 1], b) > 0; i--)
		t->blocks[i] = t->blocks[i - 1];
	t->blocks[i] = b;
	t->n_blocks++;
	b->live = 1;
	atomic_fetch_add(&b->refs, 1);
	return 0;
}

void store__block_unlist(struct tenant *t, struct block *b)
{
	for (size_t i = 0; i < t->n_blocks; i++) {
		if (t->blocks[i] == b) {
			memmove(t->blocks + i, t->blocks + i + 1,
				(t->n_blocks - i - 1) * sizeof(*t->blocks));
			t->n_blocks--;
			b->live = 0;
			return;
		}
	}
}

int store__block_bury(struct tenant *t, struct block *b)
{
	int rc = GROW(t->grave, t->cap_grave, t->n_grave + 1, MAX_BLOCKS_PER_TENANT, NULL);

	if (rc)
		return rc;
	store__block_unlist(t, b);
	b->retired_ns = store__mono();
	t->grave[t->n_grave++] = b;
	return 0;
}

/*
 * Gives b its process-local ref and partition ids and lists it in t->known
 * (t->mu held).  Refs and partition ids only grow, so known stays sorted.
 */
static int block_know(struct store *st, struct tenant *t, struct block *b)
{
	uint32_t n = b->have_meta ? (uint32_t)b->m.n_svc : 1;
	uint32_t base = atomic_fetch_add(&st->next_bpart, n);
	int rc;

	if ((uint64_t)base + n > UINT32_MAX)
		return ERR_TOO_LARGE; /* 2^31 block partitions in one process */
	rc = GROW(t->known, t->cap_known, t->n_known + 1, MAX_BLOCKS_PER_TENANT, NULL);
	if (rc)
		return rc;
	b->ref = atomic_fetch_add(&st->next_bref, 1);
	b->part_base = base;
	b->n_parts = n;
	t->known[t->n_known++] = b;
	return 0;
}

/* Knows b in t and lists it, or neither (t->mu taken here). */
static int block_know_and_list(struct store *st, struct tenant *t, struct block *b)
{
	int rc;

	pthread_mutex_lock(&t->mu);
	rc = block_know(st, t, b);
	if (!rc) {
		rc = store__block_list(t, b);
		if (rc)
			unknow(t, b);
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

/* ---- reading files ------------------------------------------------------------- */

int store__pread_all(int fd, void *p, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t k = pread(fd, (char *)p + done, n - done, (off_t)(off + done));
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ERR_IO;
		}
		if (k == 0)
			return ERR_CORRUPT; /* shorter than the footer says */
		done += (size_t)k;
	}
	return 0;
}

int store__block_open_fd(struct block *b, struct err_msg *msg)
{
	int fd;

	if (!b->path)
		return err_set(msg, ERR_NOT_FOUND, "block %s is missing", b->id_hex);
	if (b->remote)
		return store__rcache_fd(b->remote, b, msg);
	fd = open(b->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) {
			store__block_bad(b, "its file is missing");
			return err_set(msg, ERR_NOT_FOUND, "block %s is missing", b->id_hex);
		}
		return err_set(msg, ERR_IO, "block %s: open: %s", b->id_hex, strerror(errno));
	}
	return fd;
}

/*
 * Where a footer is read from: an open file (fd >= 0), or a block's
 * object in the bucket of which the last bytes were fetched already.
 */
struct bsrc {
	int fd;
	struct objstore *os;
	struct rcache *c;       /* counts the GETs */
	const char *key;
	const uint8_t *tail;
	uint64_t tail_off;
	size_t tail_len;
};

static int src_read(const struct bsrc *s, void *p, size_t n, uint64_t off)
{
	struct buf got;
	struct err_msg m;
	int rc;

	if (s->fd >= 0)
		return store__pread_all(s->fd, p, n, off);
	if (off >= s->tail_off && off + n <= s->tail_off + s->tail_len) {
		memcpy(p, s->tail + (off - s->tail_off), n);
		return 0;
	}
	buf_init(&got, n);
	err_clear(&m);
	rc = objstore_get_range(s->os, s->key, off, n, &got, NULL, &m);
	store__rcache_count(s->c, RKIND_FOOTER, 1, got.len);
	if (!rc && got.len != n)
		rc = ERR_CORRUPT;
	if (!rc)
		memcpy(p, got.data, n);
	buf_release(&got);
	return rc;
}

/* Reads and decodes the footer of the block of `size` bytes at s. */
static int read_footer(const struct bsrc *s, uint64_t size, struct bmeta *m, struct err_msg *msg)
{
	size_t tail = size < BLOCK_SUFFIX_READ ? (size_t)size : BLOCK_SUFFIX_READ;
	uint8_t *buf = NULL;
	uint32_t flen, fcrc;
	const uint8_t *foot;
	uint8_t head[BLOCK_HEADER_BYTES];
	int rc;

	if (size < BLOCK_HEADER_BYTES + BLOCK_TRAILER_BYTES)
		return err_set(msg, ERR_CORRUPT, "%llu bytes, too short for a block",
			       (unsigned long long)size);
	rc = src_read(s, head, sizeof(head), 0);
	if (rc)
		return err_set(msg, rc, "cannot read its header");
	if (memcmp(head, BLOCK_MAGIC, 8) != 0 || head[8] != BLOCK_FORMAT_VERSION)
		return err_set(msg, ERR_CORRUPT, "not a block file of format %d", BLOCK_FORMAT_VERSION);
	/* One read from the end usually holds the trailer and the whole footer
	 * (what a range GET of the last 64 KiB fetches from object storage). */
	buf = malloc(tail);
	if (!buf)
		return ERR_NOMEM;
	rc = src_read(s, buf, tail, size - tail);
	if (!rc)
		rc = store__btrailer_parse(buf + tail - BLOCK_TRAILER_BYTES, size, &flen, &fcrc, msg);
	if (rc)
		goto out;
	if ((size_t)flen + BLOCK_TRAILER_BYTES <= tail) {
		foot = buf + tail - BLOCK_TRAILER_BYTES - flen;
	} else {
		uint8_t *nb = realloc(buf, flen);
		if (!nb) {
			rc = ERR_NOMEM;
			goto out;
		}
		buf = nb;
		rc = src_read(s, buf, flen, size - BLOCK_TRAILER_BYTES - flen);
		if (rc)
			goto out;
		foot = buf;
	}
	if (store__crc32c(0, foot, flen) != fcrc) {
		rc = err_set(msg, ERR_CORRUPT, "footer checksum mismatch");
		goto out;
	}
	rc = store__bmeta_decode(foot, flen, size, m, msg);
out:
	free(buf);
	return rc;
}

/* Checks the stored bytes of sec (taken) and decompresses them into out. */
static int section_decode(struct block *b, const struct bsection *sec, struct buf *stored,
			  struct buf *out, struct err_msg *msg)
{
	int rc;

	if (store__crc32c(0, stored->data, stored->len) != sec->crc) {
		buf_release(stored);
		return err_set(msg, ERR_CORRUPT, "block %s: section checksum mismatch", b->id_hex);
	}
	if (sec->codec == BCODEC_RAW) {
		buf_release(out);
		*out = *stored;
		out->max = BLOCK_MAX_SECTION_RAW;
		return 0;
	}
	rc = zstd_decompress_capped(stored->data, stored->len, sec->raw_len, out, msg);
	buf_release(stored);
	if (rc || out->len != sec->raw_len)
		return err_set(msg, ERR_CORRUPT, "block %s: a section does not decompress", b->id_hex);
	return 0;
}

int store__block_section(struct block *b, int fd, const struct bsection *sec, struct buf *out,
			 struct err_msg *msg)
{
	struct buf stored;
	int rc;

	buf_init(&stored, sec->len + 1);
	rc = buf_reserve(&stored, sec->len);
	if (!rc)
		rc = store__pread_all(fd, stored.data, sec->len, sec->off);
	if (rc) {
		buf_release(&stored);
		return err_set(msg, rc, "block %s: cannot read a section", b->id_hex);
	}
	stored.len = sec->len;
	return section_decode(b, sec, &stored, out, msg);
}

void store__section_piece(const struct bsection *sec, int kind, struct rpiece *out)
{
	*out = (struct rpiece){ sec->off, sec->len, sec->crc, 1, kind };
}

void store__page_piece(const struct block *b, const struct bpage *pg, struct rpiece *out)
{
	*out = (struct rpiece){ b->m.sec[b->m.samples_sec].off + pg->off, pg->len, pg->crc, 1,
				RKIND_PAGES };
}

int store__bread_section(struct bread *h, const struct bsection *sec, int kind, struct buf *out,
			 struct err_msg *msg)
{
	struct rpiece p;
	struct buf stored;
	int rc;

	store__section_piece(sec, kind, &p);
	buf_init(&stored, sec->len + 1);
	rc = buf_reserve(&stored, sec->len);
	if (!rc)
		rc = store__bread_read(h, &p, stored.data, msg);
	if (rc) {
		buf_release(&stored);
		return rc;
	}
	stored.len = sec->len;
	return section_decode(h->b, sec, &stored, out, msg);
}

int store__block_page(struct block *b, int fd, const struct bpage *pg, struct buf *out,
		      struct err_msg *msg)
{
	const struct bsection *ss = &b->m.sec[b->m.samples_sec];
	int rc;

	buf_reset(out);
	rc = buf_reserve(out, pg->len);
	if (!rc)
		rc = store__pread_all(fd, out->data, pg->len, ss->off + pg->off);
	if (rc)
		return err_set(msg, rc, "block %s: cannot read a page", b->id_hex);
	out->len = pg->len;
	if (store__crc32c(0, out->data, out->len) != pg->crc)
		return err_set(msg, ERR_CORRUPT, "block %s: page checksum mismatch", b->id_hex);
	return 0;
}

int store__bread_page(struct bread *h, const struct bpage *pg, struct buf *out,
		      struct err_msg *msg)
{
	struct rpiece p;
	int rc;

	store__page_piece(h->b, pg, &p);
	buf_reset(out);
	rc = buf_reserve(out, pg->len);
	if (!rc)
		rc = store__bread_read(h, &p, out->data, msg);
	if (rc)
		return rc;
	out->len = pg->len;
	if (store__crc32c(0, out->data, out->len) != pg->crc)
		return err_set(msg, ERR_CORRUPT, "block %s: page checksum mismatch", h->b->id_hex);
	return 0;
}

int store__bread_chunk(struct bread *h, uint32_t svc, const struct bpage *pg, struct buf *pb,
		       struct chunk *c, struct page_view *out, struct pcache_ent **pin,
		       struct err_msg *msg)
{
	struct block *b = h->b;
	int rc;

	*pin = store__pcache_get(b->pages, b, pg, out);
	if (*pin)
		return 0;
	rc = store__bread_page(h, pg, pb, msg);
	if (!rc)
		rc = store__chunk_decode(c, pb->data, pb->len, msg);
	if (!rc && (c->part != svc + 1 || c->n != pg->profiles))
		rc = err_set(msg, ERR_CORRUPT, "block %s: a page disagrees with its index",
			     b->id_hex);
	if (rc)
		return rc;
	*pin = store__pcache_add(b->pages, b, pg, c, out);
	if (!*pin) {
		out->part = c->part;
		out->n = c->n;
		out->profs = c->profs;
	}
	return 0;
}

/* ---- cached objects ---------------------------------------------------------- */

int store__block_index(struct store *st, struct block *b, struct bidx **out,
		       struct err_msg *msg)
{
	struct bcache *c = &st->cache;
	struct bidx *x;
	struct bread h;
	struct buf raw;
	int rc;

	if (!b->have_meta)
		return err_set(msg, ERR_CORRUPT, "block %s is unreadable", b->id_hex);
	pthread_mutex_lock(&c->mu);
	if ((x = b->index)) {
		atomic_fetch_add(&x->refs, 1);
		dlist_move_front(&c->lru, &x->ent->lru);
		c->hits++;
		pthread_mutex_unlock(&c->mu);
		*out = x;
		return 0;
	}
	c->misses++;
	pthread_mutex_unlock(&c->mu);

	x = calloc(1, sizeof(*x));
	if (!x)
		return ERR_NOMEM;
	buf_init(&raw, BLOCK_MAX_SECTION_RAW);
	store__bread_init(&h, b);
	rc = store__bread_section(&h, &b->m.sec[b->m.index_sec], RKIND_INDEX, &raw, msg);
	store__bread_release(&h);
	if (!rc)
		rc = store__bindex_decode((const uint8_t *)raw.data, raw.len, &b->m, &x->x, msg);
	buf_release(&raw);
	if (rc) {
		free(x);
		if (rc == ERR_CORRUPT)
			store__block_bad(b, "its index is corrupt");
		return rc;
	}
	x->refs = 1;
	x->bytes = x->x.bytes + sizeof(*x);
	pthread_mutex_lock(&c->mu);
	if (b->index) { /* another reader was faster */
		struct bidx *won = b->index;
		atomic_fetch_add(&won->refs, 1);
		pthread_mutex_unlock(&c->mu);
		store__bidx_put(x);
		*out = won;
		return 0;
	}
	x->ent = add_entry(c, b, UINT32_MAX, x->bytes);
	if (x->ent) {
		atomic_fetch_add(&x->refs, 1);
		b->index = x;
		evict(c);
	}
	pthread_mutex_unlock(&c->mu);
	*out = x;
	return 0;
}

int store__block_syms(struct store *st, struct block *b, uint32_t svc, struct bsymtab **out,
		      struct err_msg *msg)
{
	struct bcache *c = &st->cache;
	struct bsymtab *s;
	struct bread h;
	struct buf raw;
	int rc;

	if (!b->have_meta || svc >= b->m.n_svc)
		return err_set(msg, ERR_CORRUPT, "block %s has no service %u", b->id_hex, svc);
	pthread_mutex_lock(&c->mu);
	if (!b->syms) {
		b->syms = calloc(b->m.n_svc, sizeof(*b->syms));
		if (!b->syms) {
			pthread_mutex_unlock(&c->mu);
			return ERR_NOMEM;
		}
	}
	if ((s = b->syms[svc])) {
		atomic_fetch_add(&s->refs, 1);
		dlist_move_front(&c->lru, &s->ent->lru);
		c->hits++;
		pthread_mutex_unlock(&c->mu);
		*out = s;
		return 0;
	}
	c->misses++;
	pthread_mutex_unlock(&c->mu);

	s = calloc(1, sizeof(*s));
	if (!s)
		return ERR_NOMEM;
	buf_init(&raw, BLOCK_MAX_SECTION_RAW);
	store__bread_init(&h, b);
	rc = store__bread_section(&h, &b->m.sec[b->m.svc[svc].section], RKIND_SYMBOLS, &raw, msg);
	store__bread_release(&h);
	if (!rc)
		rc = store__bsyms_decode((const uint8_t *)raw.data, raw.len, &s->s, msg);
	buf_release(&raw);
	if (!rc)
		for (int k = 1; k < SYM_NKINDS && !rc; k++)
			if (s->s.n[k] != b->m.svc[svc].count[k]) {
				store__bsyms_release(&s->s);
				rc = err_set(msg, ERR_CORRUPT, "block %s: symbol counts disagree",
					     b->id_hex);
			}
	if (rc) {
		free(s);
		if (rc == ERR_CORRUPT)
			store__block_bad(b, "the symbols of service %s are corrupt",
					 b->m.svc[svc].name);
		return rc;
	}
	s->refs = 1;
	s->bytes = s->s.bytes + sizeof(*s);
	pthread_mutex_lock(&c->mu);
	if (b->syms[svc]) {
		struct bsymtab *won = b->syms[svc];
		atomic_fetch_add(&won->refs, 1);
		pthread_mutex_unlock(&c->mu);
		store__bsymtab_put(s);
		*out = won;
		return 0;
	}
	s->ent = add_entry(c, b, svc, s->bytes);
	if (s->ent) {
		atomic_fetch_add(&s->refs, 1);
		b->syms[svc] = s;
		evict(c);
	}
	pthread_mutex_unlock(&c->mu);
	*out = s;
	return 0;
}

/* ---- registering --------------------------------------------------------------- */

static struct block *block_new(struct store *st, struct tenant *t,
			       const uint8_t id[BLOCK_ID_BYTES])
{
	struct block *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->t = t;
	b->pages = &st->pages;
	b->refs = 1;
	memcpy(b->id, id, BLOCK_ID_BYTES);
	store__block_id_hex(id, b->id_hex);
	return b;
}

static int block_check_meta(struct block *b, struct err_msg *msg);

/* Opens the file of b, reads its footer; on failure b is marked bad. */
static int block_load(struct block *b, struct err_msg *msg)
{
	struct stat sb;
	int fd = open(b->path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return err_set(msg, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO, "open: %s",
			       strerror(errno));
	if (fstat(fd, &sb) != 0) {
		close(fd);
		return err_set(msg, ERR_IO, "stat: %s", strerror(errno));
	}
	b->file_size = (uint64_t)sb.st_size;
	rc = read_footer(&(struct bsrc){ .fd = fd }, b->file_size, &b->m, msg);
	close(fd);
	if (rc)
		return rc;
	return block_check_meta(b, msg);
}

static int is_block_name(const char *n, size_t suffix_len, const char *suffix);

int store__block_remote_footer(struct store *st, const char *key, struct bmeta *m,
			       uint64_t *size, struct err_msg *msg)
{
	struct bsrc src = { .fd = -1, .os = st->objstore, .key = key,
			    .c = &st->rcache };
	struct buf tail;
	int rc;

	buf_init(&tail, BLOCK_SUFFIX_READ);
	rc = objstore_get_suffix(st->objstore, key, BLOCK_SUFFIX_READ, &tail, size, msg);
	store__rcache_count(&st->rcache, RKIND_FOOTER, 1, tail.len);
	if (!rc) {
		src.tail = (const uint8_t *)tail.data;
		src.tail_len = tail.len;
		src.tail_off = *size - tail.len;
		rc = read_footer(&src, *size, m, msg);
	}
	buf_release(&tail);
	return rc;
}

int store__block_key(const char *tenant, const uint8_t id[BLOCK_ID_BYTES], struct buf *out)
{
	char esc[3 * STORE_MAX_TENANT_NAME + 1], hex[2 * BLOCK_ID_BYTES + 1];
	int rc = escape_tenant(tenant, esc, sizeof(esc));

	if (rc)
		return rc;
	store__block_id_hex(id, hex);
	return buf_printf(out, "%s/%s/%s%s", BLOCKS_DIR, esc, hex, BLOCK_SUFFIX);
}

int store__block_key_parse(const char *key, char *tenant, size_t cap,
			   uint8_t id[BLOCK_ID_BYTES])
{
	size_t tl = strlen(BLOCKS_DIR);
	const char *d, *base;
	char dir[3 * STORE_MAX_TENANT_NAME + 1];

	if (strncmp(key, BLOCKS_DIR, tl) || key[tl] != '/')
		return ERR_INVALID;
	d = key + tl + 1;
	base = strchr(d, '/');
	if (!base || (size_t)(base - d) >= sizeof(dir) || strchr(base + 1, '/') ||
	    !is_block_name(base + 1, strlen(BLOCK_SUFFIX), BLOCK_SUFFIX))
		return ERR_INVALID;
	memcpy(dir, d, (size_t)(base - d));
	dir[base - d] = '\0';
	if (unescape_tenant(dir, tenant, cap))
		return ERR_INVALID;
	for (int i = 0; i < BLOCK_ID_BYTES; i++)
		id[i] = (uint8_t)(hexval(base[1 + 2 * i]) << 4 | hexval(base[2 + 2 * i]));
	return 0;
}

/*
 * Reads the footer of b (a record without a file, or a block the bucket
 * index names) from the bucket.  Then b is read through st->rcache.
 */
static int block_load_remote(struct store *st, struct block *b, struct err_msg *msg)
{
	size_t dl = strlen(st->dir);
	uint64_t size = 0;
	char *tdir = NULL;
	int rc;

	if (!st->rcache.ready || b->path)
		return err_set(msg, ERR_NOT_FOUND, "not in a bucket");
	/* The path its file had: its key in the bucket (upload.c). */
	rc = store__tenant_dir(st, b->t->name, 0, &tdir, msg);
	if (rc)
		return rc;
	if (asprintf(&b->path, "%s/%s.blk", tdir, b->id_hex) < 0)
		b->path = NULL;
	free(tdir);
	if (!b->path)
		return ERR_NOMEM;
	rc = store__block_remote_footer(st, b->path + dl + 1, &b->m, &size, msg);
	if (!rc && b->rec.bytes && size != b->rec.bytes) {
		store__bmeta_release(&b->m);
		rc = err_set(msg, ERR_CORRUPT, "the bucket holds %llu bytes, its record says %llu",
			     (unsigned long long)size, (unsigned long long)b->rec.bytes);
	}
	b->file_size = size;
	if (!rc)
		rc = block_check_meta(b, msg);
	if (rc) {
		free(b->path);
		b->path = NULL;
		return rc;
	}
	b->remote = &st->rcache;
	atomic_store(&b->uploaded, 1);
	return 0;
}

/* After a footer was read: it names b, and gives b's record. */
static int block_check_meta(struct block *b, struct err_msg *msg)
{
	if (memcmp(b->m.id, b->id, BLOCK_ID_BYTES) != 0 || strcmp(b->m.tenant, b->t->name) != 0) {
		store__bmeta_release(&b->m);
		return err_set(msg, ERR_CORRUPT, "its footer names another block or tenant");
	}
	b->have_meta = 1;
	store__brec_of(&b->m, b->file_size, &b->rec);
	return 0;
}

int store__block_load_unlisted(struct store *st, struct tenant *t, const char *path,
			       struct block **out, struct err_msg *msg)
{
	const char *base = strrchr(path, '/');
	uint8_t id[BLOCK_ID_BYTES];
	struct block *b;
	int rc;

	base = base ? base + 1 : path;
	for (int i = 0; i < BLOCK_ID_BYTES; i++) {
		int h = hexval(base[2 * i]), l = h < 0 ? -1 : hexval(base[2 * i + 1]);
		if (l < 0)
			return err_set(msg, ERR_INVALID, "%s is not a block file name", path);
		id[i] = (uint8_t)(h << 4 | l);
	}
	b = block_new(st, t, id);
	if (!b || !(b->path = strdup(path))) {
		free(b);
		return ERR_NOMEM;
	}
	rc = block_load(b, msg);
	if (rc) {
		free(b->path);
		free(b);
		return rc;
	}
	pthread_mutex_lock(&t->mu);
	rc = block_know(st, t, b);
	pthread_mutex_unlock(&t->mu);
	if (rc) {
		store__bmeta_release(&b->m);
		free(b->path);
		free(b);
		return rc;
	}
	*out = b;
	return 0;
}

/*
 * After b's footer was read (rc 0): gives it its ref and partition ids in
 * t, unlisted, into *out.  On any failure (rc, or now) frees b.
 */
static int know_or_free(struct store *st, struct tenant *t, struct block *b, int rc,
			struct block **out)
{
	if (!rc) {
		pthread_mutex_lock(&t->mu);
		rc = block_know(st, t, b);
		pthread_mutex_unlock(&t->mu);
		if (rc)
			store__bmeta_release(&b->m);
	}
	if (rc) {
		free(b->covers);
		free(b->path);
		free(b);
		return rc;
	}
	*out = b;
	return 0;
}

int store__block_load_file(struct store *st, struct tenant *t, const char *path,
			   struct block **out, struct err_msg *msg)
{
	struct bmeta m;
	struct block *b;
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return err_set(msg, ERR_IO, "open %s: %s", path, strerror(errno));
	if (fstat(fd, &sb) != 0) {
		rc = err_set(msg, ERR_IO, "stat %s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	memset(&m, 0, sizeof(m));
	rc = read_footer(&(struct bsrc){ .fd = fd }, (uint64_t)sb.st_size, &m, msg);
	close(fd);
	if (rc)
		return rc;
	b = block_new(st, t, m.id);
	if (!b || !(b->path = strdup(path))) {
		free(b);
		store__bmeta_release(&m);
		return ERR_NOMEM;
	}
	b->m = m;
	b->file_size = (uint64_t)sb.st_size;
	rc = block_check_meta(b, msg);
	return know_or_free(st, t, b, rc, out);
}

int store__block_remote_new(struct store *st, struct tenant *t, const uint8_t id[BLOCK_ID_BYTES],
			    const struct brec *rec, const uint8_t (*covers)[BLOCK_ID_BYTES],
			    uint32_t n_covers, struct block **out, struct err_msg *msg)
{
	struct block *b = block_new(st, t, id);
	int rc;

	if (!b)
		return ERR_NOMEM;
	b->rec = *rec;
	if (n_covers) {
		b->covers = malloc((size_t)n_covers * BLOCK_ID_BYTES);
		if (!b->covers) {
			free(b);
			return ERR_NOMEM;
		}
		memcpy(b->covers, covers, (size_t)n_covers * BLOCK_ID_BYTES);
		b->n_covers = n_covers;
	}
	rc = block_load_remote(st, b, msg);
	return know_or_free(st, t, b, rc, out);
}

/* ---- open: files, records, recovery --------------------------------------------- */

/* What open found for one block id. */
struct found {
	struct block *b;
	int have_file, have_rec, covered;
};

struct found_set {
	struct found *v;
	size_t n, cap;
};

static struct found *found_get(struct store *st, struct found_set *s, struct tenant *t,
			       const uint8_t id[BLOCK_ID_BYTES])
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].b->t == t && memcmp(s->v[i].b->id, id, BLOCK_ID_BYTES) == 0)
			return &s->v[i];
	if (GROW(s->v, s->cap, s->n + 1, MAX_BLOCKS_PER_TENANT, NULL))
		return NULL;
	memset(&s->v[s->n], 0, sizeof(s->v[s->n]));
	s->v[s->n].b = block_new(st, t, id);
	if (!s->v[s->n].b)
		return NULL;
	return &s->v[s->n++];
}

static int is_block_name(const char *n, size_t suffix_len, const char *suffix)
{
	size_t len = strlen(n);

	if (len != 2 * BLOCK_ID_BYTES + suffix_len || strcmp(n + 2 * BLOCK_ID_BYTES, suffix))
		return 0;
	for (int i = 0; i < 2 * BLOCK_ID_BYTES; i++)
		if (hexval(n[i]) < 0 || (n[i] >= 'A' && n[i] <= 'F'))
			return 0;
	return 1;
}

static int scan_tenant_dir(struct store *st, const char *dir, struct tenant *t,
			   struct found_set *fs, struct err_msg *msg)
{
	size_t slen = strlen(BLOCK_SUFFIX);
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d)
		return err_set(msg, ERR_IO, "blocks: open %s: %s", dir, strerror(errno));
	while (!rc && (de = readdir(d))) {
		char *path;
		uint8_t id[BLOCK_ID_BYTES];
		struct found *f;

		if (de->d_name[0] == '.')
			continue;
		if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
			rc = ERR_NOMEM;
			break;
		}
		if (is_block_name(de->d_name, slen + strlen(BLOCK_TMP_SUFFIX),
				  BLOCK_SUFFIX BLOCK_TMP_SUFFIX)) {
			/* A block whose writer did not finish: never counted on. */
			if (!st->read_only && unlink(path) != 0)
				log_warn("blocks: cannot delete %s: %s", path, strerror(errno));
			free(path);
			continue;
		}
		if (!is_block_name(de->d_name, slen, BLOCK_SUFFIX)) {
			free(path);
			continue;
		}
		for (int i = 0; i < BLOCK_ID_BYTES; i++)
			id[i] = (uint8_t)(hexval(de->d_name[2 * i]) << 4 | hexval(de->d_name[2 * i + 1]));
		f = found_get(st, fs, t, id);
		if (!f) {
			free(path);
			rc = ERR_NOMEM;
			break;
		}
		f->have_file = 1;
		f->b->path = path;
	}
	closedir(d);
	return rc;
}

static int scan_records(struct store *st, struct tenant *t, struct found_set *fs,
			struct err_msg *msg)
{
	struct scan s;
	int rc;

	rc = store__scan_tag(st, CFI_META, NULL, t->id, TAG_BLOCK, &s);
	for (; !rc && rocksdb_iter_valid(s.it); rocksdb_iter_next(s.it)) {
		size_t klen, vlen;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(s.it, &klen);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(s.it, &vlen);
		struct found *f;
		struct brec r;

		if (klen != 5 + BLOCK_ID_BYTES || store__brec_decode(v, vlen, &r)) {
			rc = err_set(msg, ERR_CORRUPT, "meta: bad block record of tenant %s", t->name);
			break;
		}
		f = found_get(st, fs, t, k + 5);
		if (!f) {
			rc = ERR_NOMEM;
			break;
		}
		f->have_rec = 1;
		f->b->rec = r;
	}
	if (rc)
		store__scan_close(&s, NULL);
	else
		rc = store__scan_close(&s, msg);
	return rc;
}

static int write_rec(struct store *st, struct tenant *t, struct block *b, int del)
{
	uint8_t k[5 + BLOCK_ID_BYTES];
	struct buf v;
	char *err = NULL;
	int rc = 0;

	store__brec_key(k, t->id, b->id);
	buf_init(&v, 256);
	if (del) {
		rocksdb_delete_cf(st->db, st->wopt_sync, st->cf[CFI_META], (const char *)k, sizeof(k),
				  &err);
	} else {
		rc = store__brec_encode(&b->rec, &v);
		if (!rc)
			rocksdb_put_cf(st->db, st->wopt_sync, st->cf[CFI_META], (const char *)k,
				       sizeof(k), v.data, v.len, &err);
	}
	buf_release(&v);
	if (err)
		rc = store__rocks_err(NULL, ERR_IO, "block record", err);
	return rc;
}

/* Sorts out one block found at open; keeps it (a reference in the tenant) or drops it. */
static int settle(struct store *st, struct found *f, struct err_msg *msg)
{
	struct block *b = f->b;
	struct tenant *t = b->t;
	int rc = 0;

	if (f->covered) {
		/* A compaction wrote its output and stopped before deleting its
		 * sources: the output has these profiles, so the source goes. */
		if (!st->read_only) {
			if (f->have_rec)
				rc = write_rec(st, t, b, 1);
			if (!rc && f->have_file && unlink(b->path) != 0 && errno != ENOENT)
				log_warn("blocks: cannot delete %s: %s", b->path, strerror(errno));
			log_info("blocks: removed %s of tenant %s, replaced by a compacted block",
				 b->id_hex, t->name);
		}
		store__bmeta_release(&b->m);
		free(b->path);
		free(b);
		f->b = NULL;
		return rc;
	}
	if (f->have_file && b->have_meta && !f->have_rec && !st->read_only) {
		/* Sealed or compacted just before a crash: adopt it. */
		rc = write_rec(st, t, b, 0);
		if (rc) {
			err_set(msg, rc, "blocks: cannot record block %s", b->id_hex);
			return rc;
		}
	}
	if (!f->have_file && !b->remote)
		store__block_bad(b, "its file is missing");
	rc = block_know_and_list(st, t, b);
	if (rc) {
		store__bmeta_release(&b->m);
		free(b->path);
		free(b);
		f->b = NULL;
		return rc;
	}
	if (b->have_meta && b->m.max_time > atomic_load(&st->newest_ns))
		atomic_store(&st->newest_ns, b->m.max_time);
	f->b = NULL;
	store__block_put(st, b); /* the list holds it */
	return 0;
}

int store__blocks_open(struct store *st, struct err_msg *msg)
{
	struct found_set fs = { NULL, 0, 0 };
	char *top = NULL;
	DIR *d = NULL;
	struct dirent *de;
	int rc = 0;

	if (st->objstore && !st->read_only) {
		rc = store__rcache_init(st, &st->rcache, st->objstore_cache_bytes, msg);
		if (rc)
			return rc;
	}
	if (asprintf(&top, "%s/%s", st->dir, BLOCKS_DIR) < 0)
		return ERR_NOMEM;
	d = opendir(top);
	while (d && !rc && (de = readdir(d))) {
		char name[STORE_MAX_TENANT_NAME + 1], *sub;
		struct tenant *t;

		if (de->d_name[0] == '.')
			continue;
		if (unescape_tenant(de->d_name, name, sizeof(name))) {
			log_warn("blocks: %s/%s names no tenant; ignored", top, de->d_name);
			continue;
		}
		rc = store__tenant_ensure(st, name, &t, msg);
		if (rc)
			break;
		if (asprintf(&sub, "%s/%s", top, de->d_name) < 0) {
			rc = ERR_NOMEM;
			break;
		}
		rc = scan_tenant_dir(st, sub, t, &fs, msg);
		free(sub);
	}
	if (d)
		closedir(d);
	else if (errno != ENOENT)
		rc = err_set(msg, ERR_IO, "blocks: open %s: %s", top, strerror(errno));
	free(top);
	/* Records of every tenant, also those without a directory. */
	for (size_t i = 0; !rc && i < st->n_tenants; i++)
		rc = scan_records(st, st->tenants[i], &fs, msg);
	/* Footers. */
	for (size_t i = 0; !rc && i < fs.n; i++) {
		struct found *f = &fs.v[i];
		struct err_msg why;

		err_clear(&why);
		if (!f->have_file) {
			/* A record without a file: in the bucket, maybe. */
			if (!st->rcache.ready)
				continue;
			rc = block_load_remote(st, f->b, &why);
			if (rc == ERR_NOMEM)
				break;
			if (rc)
				store__block_bad(f->b, "its file is missing, and the bucket: %s",
						 why.text[0] ? why.text : err_str(rc));
			else
				log_info("blocks: %s of tenant %s has no file; read from the bucket",
					 f->b->id_hex, f->b->t->name);
			rc = 0;
			continue;
		}
		rc = block_load(f->b, &why);
		if (rc == ERR_NOMEM)
			break;
		if (rc) {
			store__block_bad(f->b, "%s", why.text[0] ? why.text : err_str(rc));
			if (!f->have_rec) { /* nothing known of its range */
				f->b->rec.range_start = INT64_MIN;
				f->b->rec.range_end = INT64_MAX;
			}
		}
		rc = 0;
	}
	/* Sources of every readable block are covered by it. */
	for (size_t i = 0; !rc && i < fs.n; i++) {
		const struct block *b = fs.v[i].b;
		for (size_t j = 0; b->have_meta && j < b->m.n_sources; j++)
			for (size_t k = 0; k < fs.n; k++)
				if (k != i && fs.v[k].b->t == b->t &&
				    !memcmp(fs.v[k].b->id, b->m.sources[j], BLOCK_ID_BYTES))
					fs.v[k].covered = 1;
	}
	for (size_t i = 0; !rc && i < fs.n; i++)
		rc = settle(st, &fs.v[i], msg);
	for (size_t i = 0; i < fs.n; i++) {
		if (fs.v[i].b) {
			store__bmeta_release(&fs.v[i].b->m);
			free(fs.v[i].b->path);
			free(fs.v[i].b);
		}
	}
	free(fs.v);
	return rc;
}

void store__blocks_close(struct store *st)
{
	for (size_t i = 0; i < st->n_tenants; i++) {
		struct tenant *t = st->tenants[i];

		store__reclaim(st, t, 1);
		/* Every reader and view is gone: the list's references are the last. */
		while (t->n_blocks) {
			struct block *b = t->blocks[t->n_blocks - 1];
			pthread_mutex_lock(&t->mu);
			store__block_unlist(t, b);
			pthread_mutex_unlock(&t->mu);
			store__block_put(st, b);
		}
	}
	pthread_mutex_lock(&st->cache.mu);
	while (st->cache.lru.tail)
		drop_entry(&st->cache, dlist_entry(st->cache.lru.tail, struct bcache_ent, lru));
	pthread_mutex_unlock(&st->cache.mu);
	store__rcache_release(&st->rcache);
}
