/*
 * gperftools.c - reads a gperftools (libprofiler) legacy CPU profile.
 *
 * Layout, in native-endian machine words (4 or 8 bytes):
 *   header   0, 3, 0, sampling period in microseconds, 0
 *   records  count, depth, pc[depth]      (pc[0] is the sampled PC)
 *   trailer  0, 1, 0
 * followed by the text of /proc/self/maps at the time the profile stopped.
 * The word size is found from the header (its second word is 3).
 */
#include "perf2pprof.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "pprof_writer.h"

#define MAX_FILE (1024u * 1024 * 1024)
#define MAX_DEPTH 4096
#define MAX_MAPS 65536

struct gmap {
	uint64_t start, limit, offset;
	char *path; /* owned */
	uint64_t map_id;
};

struct gprof {
	const unsigned char *p;
	size_t n;
	size_t word;
	struct gmap *maps;
	size_t n_maps;
};

static uint64_t word_at(const struct gprof *g, size_t i)
{
	if (g->word == 8) {
		uint64_t v;
		memcpy(&v, g->p + i * 8, 8);
		return v;
	} else {
		uint32_t v;
		memcpy(&v, g->p + i * 4, 4);
		return v;
	}
}

static int read_file(const char *path, unsigned char **out, size_t *len, struct err_msg *msg)
{
	struct stat sb;
	unsigned char *p;
	FILE *f = fopen(path, "rb");

	if (!f)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &sb) != 0 || sb.st_size < 0 || (uint64_t)sb.st_size > MAX_FILE) {
		fclose(f);
		return err_set(msg, ERR_TOO_LARGE, "%s: not a regular file under 1 GiB", path);
	}
	p = malloc((size_t)sb.st_size + 1);
	if (!p) {
		fclose(f);
		return ERR_NOMEM;
	}
	if (fread(p, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) {
		free(p);
		fclose(f);
		return err_set(msg, ERR_IO, "%s: short read", path);
	}
	fclose(f);
	p[sb.st_size] = '\0';
	*out = p;
	*len = (size_t)sb.st_size;
	return 0;
}

/* Parses the executable lines of the maps text into g->maps. */
static int parse_maps(struct gprof *g, const char *text, size_t len)
{
	const char *line = text, *end = text + len;

	g->maps = calloc(MAX_MAPS, sizeof(*g->maps));
	if (!g->maps)
		return ERR_NOMEM;
	while (line < end && g->n_maps < MAX_MAPS) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t l = nl ? (size_t)(nl - line) : (size_t)(end - line);
		unsigned long long s, e, off;
		char perms[8], row[4096];
		int path_at = 0;

		if (l < sizeof(row)) {
			memcpy(row, line, l);
			row[l] = '\0';
			if (sscanf(row, "%llx-%llx %7s %llx %*s %*s %n", &s, &e, perms, &off, &path_at) == 4 &&
			    path_at > 0 && strchr(perms, 'x') && e > s && row[path_at]) {
				struct gmap *m = &g->maps[g->n_maps];
				m->start = s, m->limit = e, m->offset = off;
				m->path = strdup(row + path_at);
				if (!m->path)
					return ERR_NOMEM;
				g->n_maps++;
			}
		}
		line += l + 1;
	}
	return 0;
}

static int location_of(struct gprof *g, struct pw *w, struct bid_cache *bids, uint64_t pc,
		       uint64_t *loc)
{
	uint64_t map_id = 0;
	size_t i;
	int rc;

	for (i = 0; i < g->n_maps; i++) {
		struct gmap *m = &g->maps[i];
		if (pc < m->start || pc >= m->limit)
			continue;
		if (!m->map_id &&
		    (rc = pw_mapping(w, m->start, m->limit, m->offset, m->path, bid_get(bids, m->path),
				     &m->map_id)))
			return rc;
		map_id = m->map_id;
		break;
	}
	return pw_location(w, map_id, pc, loc);
}

/* The `thread` label: the executable's name, cut like a kernel comm. */
static void comm_of(const struct gprof *g, char *comm, size_t size)
{
	const char *base;

	if (g->n_maps == 0) {
		snprintf(comm, size, "unknown");
		return;
	}
	base = strrchr(g->maps[0].path, '/');
	base = base ? base + 1 : g->maps[0].path;
	snprintf(comm, size < 16 ? size : 16, "%s", base);
}

/* Walks the records from word `i` into w (only checks them when w is NULL);
 * returns the word after the trailer. */
static int read_records(struct gprof *g, struct pw *w, struct bid_cache *bids, size_t i,
			int64_t period_ns, struct p2p_result *res, size_t *after,
			struct err_msg *msg)
{
	size_t words = g->n / g->word;
	uint64_t locs[MAX_DEPTH];
	char comm[16];
	int rc;

	comm_of(g, comm, sizeof(comm));
	for (;;) {
		uint64_t count, depth, d;
		int64_t values[2];

		if (words - i < 2)
			return err_set(msg, ERR_INVALID, "record at word %zu: truncated", i);
		count = word_at(g, i);
		depth = word_at(g, i + 1);
		if (depth > MAX_DEPTH || depth > words - i - 2)
			return err_set(msg, ERR_INVALID, "record at word %zu: depth %llu", i,
				       (unsigned long long)depth);
		if (count == 0 && depth == 1 && word_at(g, i + 2) == 0) {
			*after = i + 3;
			return 0;
		}
		if (!w) {
			i += 2 + depth;
			continue;
		}
		for (d = 0; d < depth; d++)
			if ((rc = location_of(g, w, bids, word_at(g, i + 2 + d), &locs[d])))
				return err_set(msg, rc, "record at word %zu: cannot add location", i);
		values[0] = (int64_t)count;
		values[1] = (int64_t)count * period_ns;
		if ((rc = pw_sample(w, locs, depth, comm, values)))
			return err_set(msg, rc, "record at word %zu: cannot add sample", i);
		res->events += count;
		i += 2 + depth;
	}
}

/* Finds the word size from the header: 0, 3, 0, period, 0. */
static int find_word_size(struct gprof *g)
{
	static const size_t sizes[] = { 8, 4 };
	size_t k;

	for (k = 0; k < 2; k++) {
		g->word = sizes[k];
		if (g->n >= 5 * g->word && word_at(g, 0) == 0 && word_at(g, 1) == 3 &&
		    word_at(g, 2) == 0 && word_at(g, 3) != 0)
			return 0;
	}
	return ERR_INVALID;
}

int p2p_read_gperftools(const char *path, struct bid_cache *bids, struct pw *w,
			struct p2p_result *res, struct err_msg *msg)
{
	struct gprof g = { 0 };
	unsigned char *data = NULL;
	struct stat sb;
	int64_t period_ns;
	size_t after = 0, i;
	int rc;

	if ((rc = read_file(path, &data, &g.n, msg)))
		return rc;
	g.p = data;
	if (find_word_size(&g)) {
		rc = err_set(msg, ERR_INVALID, "%s: not a gperftools CPU profile (bad header)", path);
		goto out;
	}
	if (word_at(&g, 3) > 60ULL * 1000000) {
		rc = err_set(msg, ERR_INVALID, "%s: sampling period %llu us", path,
			     (unsigned long long)word_at(&g, 3));
		goto out;
	}
	period_ns = (int64_t)word_at(&g, 3) * 1000;
	/* The maps text follows the trailer; find it first so PCs resolve. */
	if ((rc = read_records(&g, NULL, bids, 2 + word_at(&g, 1), period_ns, res, &after, msg)))
		goto out;
	if ((rc = parse_maps(&g, (const char *)data + after * g.word, g.n - after * g.word)))
		goto out;
	if ((rc = read_records(&g, w, bids, 2 + word_at(&g, 1), period_ns, res, &after, msg)))
		goto out;
	res->period = period_ns;
	res->duration_nanos = (int64_t)res->events * period_ns;
	res->time_nanos = stat(path, &sb) == 0
				  ? (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec -
					    res->duration_nanos
				  : 0;
out:
	for (i = 0; i < g.n_maps; i++)
		free(g.maps[i].path);
	free(g.maps);
	free(data);
	return rc;
}
