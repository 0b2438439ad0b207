/*
 * wal.c - store_wal_check(): reads RocksDB's write-ahead logs of a store
 * directory record by record, to say *where* a log is corrupt and what a
 * point-in-time recovery would drop.  RocksDB itself only answers
 * "Corruption: checksum mismatch"; an operator needs the file, the offset
 * and how many acknowledged writes follow the damage.
 *
 * The log format (RocksDB's db/log_format.h, "legacy" records): the file is
 * a sequence of 32 KiB blocks; a block holds physical records
 *
 *   | masked crc32c (4, LE) | length (2, LE) | type (1) | payload (length) |
 *
 * and is padded with zeros when fewer than 7 bytes remain.  The crc covers
 * the type byte and the payload and is masked as ((c >> 15 | c << 17) +
 * 0xa282ead8).  A logical record (one write batch) is one FULL record or a
 * FIRST, MIDDLE..., LAST sequence.  A write batch begins with its sequence
 * number (8, LE) and its entry count (4, LE).  Recyclable records (types
 * 5..8, a log number in the header) are not used by the store (it never
 * sets recycle_log_file_num) and count as damage.
 */
#include "storage_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"

#define WAL_BLOCK 32768
#define WAL_HEADER 7
#define WAL_MASK_DELTA 0xa282ead8u
/* Files listed at most: the store keeps a few (max_total_wal_size). */
#define WAL_MAX_FILES 4096

enum { T_ZERO = 0, T_FULL = 1, T_FIRST = 2, T_MIDDLE = 3, T_LAST = 4, T_SETCOMP = 9 };

struct walscan {
	struct store_wal_report *r;
	int bad;             /* the first damage was seen */
	int in_batch;        /* between FIRST and LAST */
	uint8_t head[12];    /* the first 12 bytes of the batch being assembled */
	size_t head_len;
	uint64_t batch_bytes;
};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void damage(struct walscan *w, const char *file, uint64_t off, const char *why)
{
	if (!w->bad) {
		w->bad = 1;
		snprintf(w->r->file, sizeof(w->r->file), "%s", file);
		w->r->offset = off;
		w->r->why = why;
	}
	w->in_batch = 0;
}

static void batch_done(struct walscan *w)
{
	struct store_wal_report *r = w->r;
	uint64_t seq = 0, count = 0;

	if (w->head_len == 12) {
		seq = le64(w->head);
		count = le32(w->head + 8);
	}
	r->batches++;
	r->entries += count;
	if (w->bad) {
		r->batches_after++;
		r->entries_after += count;
		r->bytes_after += w->batch_bytes;
		if (seq && (!r->first_seq_after || seq < r->first_seq_after))
			r->first_seq_after = seq;
		if (seq + (count ? count - 1 : 0) > r->last_seq_after)
			r->last_seq_after = seq + (count ? count - 1 : 0);
	} else if (seq) {
		r->last_seq = seq + (count ? count - 1 : 0);
	}
	w->in_batch = 0;
}

static void batch_add(struct walscan *w, const uint8_t *p, size_t n)
{
	size_t take = n < 12 - w->head_len ? n : 12 - w->head_len;

	memcpy(w->head + w->head_len, p, take);
	w->head_len += take;
	w->batch_bytes += n;
}

/* One physical record whose checksum holds. */
static void record(struct walscan *w, const char *file, uint64_t off, int type,
		   const uint8_t *p, size_t n)
{
	switch (type) {
	case T_FULL:
	case T_FIRST:
		if (w->in_batch)
			damage(w, file, off, "a batch begins inside another one");
		w->head_len = 0;
		w->batch_bytes = 0;
		batch_add(w, p, n);
		w->in_batch = 1;
		if (type == T_FULL)
			batch_done(w);
		break;
	case T_MIDDLE:
	case T_LAST:
		if (!w->in_batch) {
			/* The rest of a batch whose start was damaged. */
			if (!w->bad)
				damage(w, file, off, "a batch continues with no beginning");
			break;
		}
		batch_add(w, p, n);
		if (type == T_LAST)
			batch_done(w);
		break;
	case T_SETCOMP:
		break;
	default:
		damage(w, file, off, "a record of an unknown type");
	}
}

/* Reads one log file; `last` says it is the newest (its tail may be cut). */
static int scan_file(struct walscan *w, const char *dir, const char *name, int last,
		     struct err_msg *msg)
{
	char path[4096];
	uint8_t *blk;
	uint64_t off = 0;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	blk = malloc(WAL_BLOCK);
	if (!blk) {
		close(fd);
		return ERR_NOMEM;
	}
	w->r->files++;
	for (;;) {
		size_t got = 0, pos = 0;
		ssize_t k;

		while (got < WAL_BLOCK && (k = read(fd, blk + got, WAL_BLOCK - got)) > 0)
			got += (size_t)k;
		if (got < WAL_BLOCK && k < 0) {
			rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
			break;
		}
		if (!got)
			break;
		w->r->bytes += got;
		while (pos + WAL_HEADER <= got) {
			const uint8_t *h = blk + pos;
			size_t len = (size_t)h[4] | (size_t)h[5] << 8;
			int type = h[6];
			uint32_t want, crc;

			if (type == T_ZERO && len == 0 && le32(h) == 0)
				break; /* padding or preallocated space: the block ends */
			if (pos + WAL_HEADER + len > got) {
				if (got < WAL_BLOCK && last) {
					/* A write cut short by a crash: RocksDB ignores it. */
					w->r->torn_tail = 1;
				} else {
					damage(w, name, off + pos, "a record runs past its block");
				}
				break;
			}
			want = le32(h) - WAL_MASK_DELTA;
			want = want >> 17 | want << 15;
			crc = store__crc32c(0, h + 6, 1);
			crc = store__crc32c(crc, h + WAL_HEADER, len);
			if (crc != want)
				damage(w, name, off + pos, "checksum mismatch");
			else
				record(w, name, off + pos, type, h + WAL_HEADER, len);
			pos += WAL_HEADER + len;
		}
		off += got;
		if (got < WAL_BLOCK)
			break;
	}
	if (!rc && w->in_batch && !last)
		damage(w, name, off, "the log ends inside a batch");
	free(blk);
	close(fd);
	return rc;
}

static int is_log(const char *name, uint64_t *num)
{
	const char *p = name;
	uint64_t v = 0;

	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9') {
		if (v > UINT64_MAX / 10 - 9)
			return 0;
		v = v * 10 + (uint64_t)(*p++ - '0');
	}
	if (strcmp(p, ".log") != 0)
		return 0;
	*num = v;
	return 1;
}

struct logname {
	uint64_t num;
	char name[64];
};

static int logname_cmp(const void *a, const void *b)
{
	const struct logname *x = a, *y = b;
	return x->num < y->num ? -1 : x->num > y->num;
}

int store_wal_check(const char *dir, struct store_wal_report *out, struct err_msg *msg)
{
	struct store_wal_report r;
	struct walscan w;
	struct logname *v = NULL;
	size_t n = 0;
	struct dirent *e;
	DIR *d;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	memset(&w, 0, sizeof(w));
	w.r = &r;
	d = opendir(dir);
	if (!d)
		return err_set(msg, errno == ENOENT ? ERR_NOT_FOUND : ERR_IO, "%s: %s", dir,
			       strerror(errno));
	v = calloc(WAL_MAX_FILES, sizeof(*v));
	if (!v) {
		closedir(d);
		return ERR_NOMEM;
	}
	while ((e = readdir(d)) != NULL) {
		uint64_t num;
		if (!is_log(e->d_name, &num) || strlen(e->d_name) >= sizeof(v[0].name))
			continue;
		if (n == WAL_MAX_FILES) {
			rc = err_set(msg, ERR_TOO_LARGE, "%s: more than %d log files", dir,
				     WAL_MAX_FILES);
			break;
		}
		v[n].num = num;
		strcpy(v[n].name, e->d_name);
		n++;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), logname_cmp);
	for (size_t i = 0; !rc && i < n; i++) {
		uint64_t before = r.batches_after;
		int was_bad = w.bad;

		w.in_batch = 0;
		rc = scan_file(&w, dir, v[i].name, i + 1 == n, msg);
		if (was_bad && r.batches_after > before)
			r.files_after++;
	}
	free(v);
	if (!rc)
		*out = r;
	return rc;
}
