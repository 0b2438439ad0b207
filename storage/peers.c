/*
 * peers.c - queriers see what ingesters hold (storage_int.h section 13):
 * the ingester's side writes its head and the local blocks a querier's
 * view lacks as one block; the querier's side asks every ingester at once
 * over libcurl's multi interface and adds the answers to its reader as
 * ephemeral blocks, retrying once after a sync when its view is too old.
 */
#include "storage_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/grow.h"
#include "base/log.h"
#include "base/varint.h"

#define ERR_TEXT_MAX 512
#define MAX_PEER_SERIES ((size_t)1 << 28)
/* The largest body store__head_req_encode writes. */
#define MAX_HEAD_REQ_BYTES                                                        \
	(2 * VARINT_MAX + STORE_MAX_HEAD_BLOCK_IDS * BLOCK_ID_BYTES +               \
	 2 * (size_t)STORE_MAX_LABELS * (VARINT_MAX + STORE_MAX_LABEL_BYTES))

struct store_peer {
	char *url;
	_Atomic uint64_t ok, stale, failed, timeout, too_large, bytes, ns_sum, ns_count;
};

/* ---- open and close ------------------------------------------------------------ */

/* Removes the files of dir (ephemeral blocks a crash left behind). */
static void empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

int store__peers_open(struct store *st, const struct store_options *opt, struct err_msg *msg)
{
	st->head_block_max = opt->head_block_max_bytes ? opt->head_block_max_bytes
						       : STORE_DEFAULT_HEAD_BLOCK_MAX;
	st->peer_timeout_ns = opt->peer_timeout_ns > 0 ? opt->peer_timeout_ns
						       : STORE_DEFAULT_PEER_TIMEOUT_NS;
	if (st->read_only)
		return 0;
	if (asprintf(&st->peers_dir, "%s/%s", st->dir, PEERS_DIR) < 0) {
		st->peers_dir = NULL;
		return ERR_NOMEM;
	}
	if (mkdir(st->peers_dir, 0755) != 0 && errno != EEXIST)
		return err_set(msg, ERR_IO, "store: create %s: %s", st->peers_dir, strerror(errno));
	empty_dir(st->peers_dir);
	if (opt->peer_token && !(st->peer_token = strdup(opt->peer_token)))
		return ERR_NOMEM;
	if (!opt->n_peers)
		return 0;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return err_set(msg, ERR_UNAVAILABLE, "store: libcurl does not start");
	st->peers_curl = 1;
	st->peers = calloc(opt->n_peers, sizeof(*st->peers));
	if (!st->peers)
		return ERR_NOMEM;
	for (size_t i = 0; i < opt->n_peers; i++) {
		size_t n = strlen(opt->peers[i]);

		while (n && opt->peers[i][n - 1] == '/')
			n--;
		st->peers[i].url = strndup(opt->peers[i], n);
		if (!st->peers[i].url)
			return ERR_NOMEM;
		st->n_peers = i + 1;
	}
	return 0;
}

void store__peers_close(struct store *st)
{
	for (size_t i = 0; i < st->n_peers; i++)
		free(st->peers[i].url);
	free(st->peers);
	st->peers = NULL;
	st->n_peers = 0;
	if (st->peers_curl)
		curl_global_cleanup();
	st->peers_curl = 0;
	if (st->peer_token) {
		memset(st->peer_token, 0, strlen(st->peer_token));
		free(st->peer_token);
	}
	free(st->peers_dir);
}

size_t store_peer_count(struct store *st)
{
	return st->n_peers;
}

void store_peer_stats(struct store *st, size_t i, struct store_peer_stats *out)
{
	struct store_peer *p;

	memset(out, 0, sizeof(*out));
	if (i >= st->n_peers)
		return;
	p = &st->peers[i];
	out->peer = p->url;
	out->ok = atomic_load(&p->ok);
	out->stale = atomic_load(&p->stale);
	out->failed = atomic_load(&p->failed);
	out->timeout = atomic_load(&p->timeout);
	out->too_large = atomic_load(&p->too_large);
	out->bytes = atomic_load(&p->bytes);
	out->ns_sum = atomic_load(&p->ns_sum);
	out->ns_count = atomic_load(&p->ns_count);
}

/* ---- the request body (section 13) ------------------------------------------------- */

static int eq_cmp(const struct store_label *a, const struct store_label *b)
{
	int c = strcmp(a->name, b->name);

	return c ? c : strcmp(a->value, b->value);
}

/* Reads one label string of the body at *p into *out (a NUL-terminated copy at *strs). */
static int take_str(const uint8_t **p, const uint8_t *end, char **strs, const char **out,
		    const char *what, struct err_msg *msg)
{
	uint64_t n;
	size_t k = varint_get(*p, end, &n);

	if (!k)
		return err_set(msg, ERR_INVALID, "the body ends inside a label %s's length", what);
	*p += k;
	if (n == 0)
		return err_set(msg, ERR_INVALID, "an empty label %s", what);
	if (n > STORE_MAX_LABEL_BYTES)
		return err_set(msg, ERR_TOO_LARGE, "a label %s of %" PRIu64 " bytes, more than %d",
			       what, n, STORE_MAX_LABEL_BYTES);
	if (n > (uint64_t)(end - *p))
		return err_set(msg, ERR_INVALID, "the body ends inside a label %s", what);
	if (memchr(*p, '\0', (size_t)n))
		return err_set(msg, ERR_INVALID, "a label %s holds a NUL byte", what);
	memcpy(*strs, *p, (size_t)n);
	(*strs)[n] = '\0';
	*out = *strs;
	*strs += n + 1;
	*p += n;
	return 0;
}

/* The labels of a format 2 body from p on (its last part) into *r. */
static int parse_eq(const uint8_t *p, const uint8_t *end, struct head_req *r,
		    struct err_msg *msg)
{
	uint64_t n;
	size_t k = varint_get(p, end, &n);
	char *strs;
	int rc = 0;

	if (!k)
		return err_set(msg, ERR_INVALID, "the body ends before its label count");
	p += k;
	if (n == 0)
		return err_set(msg, ERR_INVALID, "format 2 without labels (format 1 is that)");
	if (n > STORE_MAX_LABELS)
		return err_set(msg, ERR_TOO_LARGE, "%" PRIu64 " labels, more than %d", n,
			       STORE_MAX_LABELS);
	/* A string takes at least 2 bytes of the body (length, one byte) and
	 * its copy no more than it takes (a NUL for the length byte). */
	if (n * 4 > (uint64_t)(end - p))
		return err_set(msg, ERR_INVALID, "the body ends before its %" PRIu64 " labels", n);
	r->eq = malloc((size_t)n * sizeof(*r->eq) + (size_t)(end - p));
	if (!r->eq)
		return ERR_NOMEM;
	strs = (char *)(r->eq + n);
	for (size_t i = 0; !rc && i < n; i++) {
		rc = take_str(&p, end, &strs, &r->eq[i].name, "name", msg);
		if (!rc)
			rc = take_str(&p, end, &strs, &r->eq[i].value, "value", msg);
		if (!rc && i && eq_cmp(&r->eq[i - 1], &r->eq[i]) >= 0)
			rc = err_set(msg, ERR_INVALID, "the labels are not strictly ascending");
	}
	if (!rc && p != end)
		rc = err_set(msg, ERR_INVALID, "%zu bytes after the labels", (size_t)(end - p));
	if (rc) {
		free(r->eq);
		r->eq = NULL;
		return rc;
	}
	r->n_eq = (size_t)n;
	return 0;
}

int store__head_req_parse(int format, const void *body, size_t len, struct head_req *out,
			  struct err_msg *msg)
{
	static const uint8_t none[1];
	const uint8_t *p = len ? body : none, *end = p + len; /* an empty body may be NULL */
	struct head_req r = { 0 };
	uint64_t n = len / BLOCK_ID_BYTES;
	int rc;

	if (format != 1 && format != 2)
		return err_set(msg, ERR_INVALID, "format=%d: the formats are 1 and 2", format);
	if (format == 1 && len % BLOCK_ID_BYTES)
		return err_set(msg, ERR_INVALID, "the body is not a list of %d-byte block ids",
			       BLOCK_ID_BYTES);
	if (format == 2) {
		size_t k = varint_get(p, end, &n);

		if (!k)
			return err_set(msg, ERR_INVALID, "the body ends before its id count");
		p += k;
	}
	if (n > STORE_MAX_HEAD_BLOCK_IDS)
		return err_set(msg, ERR_TOO_LARGE, "%" PRIu64 " block ids, more than %zu", n,
			       STORE_MAX_HEAD_BLOCK_IDS);
	if (n * BLOCK_ID_BYTES > (uint64_t)(end - p))
		return err_set(msg, ERR_INVALID, "the body ends before its %" PRIu64 " block ids", n);
	r.ids = (const uint8_t(*)[BLOCK_ID_BYTES])p;
	r.n_ids = (size_t)n;
	for (size_t i = 1; i < r.n_ids; i++)
		if (memcmp(r.ids[i - 1], r.ids[i], BLOCK_ID_BYTES) >= 0)
			return err_set(msg, ERR_INVALID, "the block ids are not strictly ascending");
	p += r.n_ids * BLOCK_ID_BYTES;
	if (format == 2 && (rc = parse_eq(p, end, &r, msg)))
		return rc;
	*out = r;
	return 0;
}

void store__head_req_release(struct head_req *r)
{
	free(r->eq);
	r->eq = NULL;
	r->n_eq = 0;
}

int store__head_req_matches(const struct head_req *r, const struct store_label *l, size_t n)
{
	for (size_t i = 0; i < r->n_eq; i++) {
		size_t j = 0;

		while (j < n && eq_cmp(&r->eq[i], &l[j]) != 0)
			j++;
		if (j == n)
			return 0;
	}
	return 1;
}

static int eq_qsort_cmp(const void *a, const void *b)
{
	return eq_cmp(a, b);
}

/* A label the format carries: 1..STORE_MAX_LABEL_BYTES bytes each. */
static int eq_fits(const struct store_label *l)
{
	size_t a = strlen(l->name), b = strlen(l->value);

	return a && b && a <= STORE_MAX_LABEL_BYTES && b <= STORE_MAX_LABEL_BYTES;
}

int store__head_req_encode(const uint8_t (*ids)[BLOCK_ID_BYTES], size_t n_ids,
			   const struct store_label *eq, size_t n_eq, struct buf *out,
			   int *format)
{
	struct store_label *v = NULL;
	size_t n = 0, len0 = out->len;
	int rc = 0;

	if (n_eq && !(v = malloc(n_eq * sizeof(*v))))
		return ERR_NOMEM;
	for (size_t i = 0; i < n_eq; i++)
		if (eq_fits(&eq[i]))
			v[n++] = eq[i];
	if (n) {
		size_t k = 1;

		qsort(v, n, sizeof(*v), eq_qsort_cmp);
		for (size_t i = 1; i < n; i++)
			if (eq_cmp(&v[k - 1], &v[i]) != 0)
				v[k++] = v[i];
		n = k;
	}
	/* Past the cap, the first labels restrict enough. */
	if (n > STORE_MAX_LABELS)
		n = STORE_MAX_LABELS;
	if (n)
		rc = buf_put_uvarint(out, n_ids);
	if (!rc && n_ids)
		rc = buf_append(out, ids, n_ids * BLOCK_ID_BYTES);
	if (!rc && n)
		rc = buf_put_uvarint(out, n);
	for (size_t i = 0; !rc && i < n; i++) {
		rc = buf_put_lstr(out, v[i].name, strlen(v[i].name));
		if (!rc)
			rc = buf_put_lstr(out, v[i].value, strlen(v[i].value));
	}
	free(v);
	if (rc) {
		out->len = len0;
		return rc;
	}
	*format = n ? 2 : 1;
	return 0;
}

/* ---- the ingester's side ----------------------------------------------------------- */

struct hser {
	struct wser w;
	uint64_t id; /* reader series id */
};

struct hview {
	uint32_t part;
	struct store_symbols *v;
};

struct hwrite {
	struct store *st;
	struct store_reader *r;
	const struct head_req *req;
	const char *tenant;
	struct bw *w;
	struct hser *ser;
	size_t n_ser, cap_ser;
	struct buf kb;
	struct hview *views; /* of the service being written */
	size_t n_views, cap_views;
	const char *svc_open;  /* the service begun in w, NULL none */
	const struct hser *cur; /* the series being written */
	int cur_open;           /* its store__bw_series was called */
	uint64_t profiles;
	struct err_msg *msg;
};

static int collect_cb(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
		      size_t n)
{
	struct hwrite *h = ctx;
	struct hser *s;
	int rc;

	(void)part;
	if (!store__head_req_matches(h->req, l, n))
		return 0;
	rc = GROW(h->ser, h->cap_ser, h->n_ser + 1, MAX_PEER_SERIES, NULL);
	if (rc)
		return rc;
	s = &h->ser[h->n_ser];
	memset(s, 0, sizeof(*s));
	s->id = id;
	rc = store__wser_set(&s->w, l, n, &h->kb);
	if (rc) {
		store__wser_free(&s->w);
		return rc;
	}
	h->n_ser++;
	return 0;
}

static int hser_cmp(const void *a, const void *b)
{
	return store__wser_cmp(&((const struct hser *)a)->w, &((const struct hser *)b)->w);
}

static void views_put(struct hwrite *h)
{
	for (size_t i = 0; i < h->n_views; i++)
		store_symbols_put(h->views[i].v);
	h->n_views = 0;
}

/* The symbol view of partition `part`, kept until the service ends. */
static int view_of(struct hwrite *h, uint32_t part, const struct store_symbols **out)
{
	struct store_symbols *v;
	int rc;

	for (size_t i = 0; i < h->n_views; i++) {
		if (h->views[i].part == part) {
			*out = h->views[i].v;
			return 0;
		}
	}
	rc = GROW(h->views, h->cap_views, h->n_views + 1, (size_t)UINT32_MAX, NULL);
	if (!rc)
		rc = store_symbols_get(h->st, h->tenant, part, &v, h->msg);
	if (rc)
		return rc;
	h->views[h->n_views].part = part;
	h->views[h->n_views++].v = v;
	*out = v;
	return 0;
}

static int profile_cb(void *ctx, const struct store_profile_view *p)
{
	struct hwrite *h = ctx;
	const struct store_symbols *v;
	int rc = 0;

	if (!h->svc_open || strcmp(h->svc_open, h->cur->w.svc) != 0) {
		views_put(h);
		rc = store__bw_service(h->w, h->cur->w.svc, h->msg);
		h->svc_open = h->cur->w.svc;
	}
	if (!rc && !h->cur_open) {
		rc = store__bw_series(h->w, h->cur->w.labels, h->cur->w.n_labels, h->msg);
		h->cur_open = 1;
	}
	if (!rc)
		rc = view_of(h, p->part, &v);
	if (!rc)
		rc = store__bw_profile(h->w, v, &p->meta, p->stack_ids, p->values, p->span_ids, p->n,
				       h->msg);
	h->profiles++;
	return rc;
}

/* Appends the file at path (at most max bytes) to out. */
static int slurp(const char *path, uint64_t max, struct buf *out, struct err_msg *msg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	struct stat sb;

	if (fd < 0)
		return err_set(msg, ERR_IO, "open %s: %s", path, strerror(errno));
	if (fstat(fd, &sb) != 0)
		rc = err_set(msg, ERR_IO, "stat %s: %s", path, strerror(errno));
	else if ((uint64_t)sb.st_size > max)
		rc = err_set(msg, ERR_TOO_LARGE, "the head block is %lld bytes, past the cap of %llu "
			     "(--ingester.head-block-max-bytes)", (long long)sb.st_size,
			     (unsigned long long)max);
	if (!rc)
		rc = buf_reserve(out, (size_t)sb.st_size);
	if (!rc && store__pread_all(fd, out->data + out->len, (size_t)sb.st_size, 0) != 0)
		rc = err_set(msg, ERR_IO, "read %s: %s", path, strerror(errno));
	if (!rc)
		out->len += (size_t)sb.st_size;
	close(fd);
	return rc;
}

/* Writes what r reads as one block and appends it to out (nothing when empty). */
static int head_write(struct hwrite *h, int64_t from, int64_t until, struct buf *out)
{
	struct store *st = h->st;
	char *path = NULL;
	int rc;

	rc = store_reader_series_each(h->r, collect_cb, h);
	if (rc || !h->n_ser)
		return rc;
	qsort(h->ser, h->n_ser, sizeof(*h->ser), hser_cmp);
	rc = store__bw_open_in(st, st->peers_dir, h->tenant, 0, from, until, BLOCK_ZLEVEL_SEAL,
			       &h->w, h->msg);
	for (size_t i = 0; !rc && i < h->n_ser; i++) {
		h->cur = &h->ser[i];
		h->cur_open = 0;
		rc = store_reader_profiles_each(h->r, h->ser[i].id, from, until, profile_cb, h, h->msg);
		if (!rc && h->cur_open)
			rc = store__bw_page_end(h->w, h->msg);
		if (!rc && store__bw_bytes(h->w) > st->head_block_max)
			rc = err_set(h->msg, ERR_TOO_LARGE, "the head block passed %llu bytes, the cap "
				     "(--ingester.head-block-max-bytes)",
				     (unsigned long long)st->head_block_max);
	}
	if (!rc && h->profiles)
		rc = store__bw_finish(h->w, NULL, 0, NULL, 0, &path, h->msg);
	views_put(h);
	store__bw_abort(h->w);
	h->w = NULL;
	if (!rc && path)
		rc = slurp(path, st->head_block_max, out, h->msg);
	if (path)
		unlink(path);
	free(path);
	return rc;
}

int store_head_block(struct store *st, const char *tenant, int64_t from_ns, int64_t until_ns,
		     int64_t view_ns, int format, const void *body, size_t len,
		     struct buf *out, struct err_msg *msg)
{
	struct store_reader *r = NULL;
	struct head_req req;
	struct hwrite h;
	int64_t pruned;
	int rc;

	if (until_ns <= from_ns)
		return err_set(msg, ERR_INVALID, "empty time range");
	if (!st->peers_dir)
		return err_set(msg, ERR_UNAVAILABLE, "a read-only store answers no head blocks");
	rc = store__head_req_parse(format, body, len, &req, msg);
	if (rc)
		return rc;
	rc = store__reader_open(st, tenant, from_ns, until_ns, req.ids, req.n_ids, &r, msg);
	if (rc) {
		store__head_req_release(&req);
		return rc;
	}
	/* Checked after the reader took its blocks: a block dropped before
	 * that has raised it (bucket.c raises it before dropping). */
	pruned = atomic_load(&st->bucket_pruned_ns);
	if (view_ns < pruned) {
		store_reader_close(r);
		store__head_req_release(&req);
		return err_set(msg, ERR_CONFLICT, "the asker's bucket index view (%" PRId64 ") is "
			       "older than the index (%" PRId64 ") by which this ingester dropped "
			       "blocks: sync and ask again", view_ns, pruned);
	}
	memset(&h, 0, sizeof(h));
	h.st = st;
	h.r = r;
	h.req = &req;
	h.tenant = tenant;
	h.msg = msg;
	buf_init(&h.kb, STORE_MAX_LABEL_KEY);
	rc = head_write(&h, from_ns, until_ns, out);
	for (size_t i = 0; i < h.n_ser; i++)
		store__wser_free(&h.ser[i].w);
	free(h.ser);
	free(h.views);
	buf_release(&h.kb);
	store_reader_close(r);
	store__head_req_release(&req);
	return rc;
}

/* ---- the querier's side ------------------------------------------------------------ */

enum call_result { CALL_OK, CALL_EMPTY, CALL_STALE, CALL_FAILED, CALL_TIMEOUT, CALL_TOO_LARGE };

struct call {
	struct store_peer *p;
	CURL *e;
	struct curl_slist *hdr;
	char *path;       /* the answer's file */
	int fd;
	uint64_t got, max;
	int too_large;
	int io_error;
	int done;
	CURLcode cc;
	long status;
	int64_t t0;
	char errbuf[CURL_ERROR_SIZE];
	enum call_result res;
	char why[ERR_TEXT_MAX];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n, off = 0;

	if (c->got + len > c->max) {
		c->too_large = 1;
		return 0;
	}
	while (off < len) {
		ssize_t w = write(c->fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			c->io_error = 1;
			return 0;
		}
		off += (size_t)w;
	}
	c->got += len;
	return len;
}

static void call_release(struct call *c)
{
	if (c->e)
		curl_easy_cleanup(c->e);
	curl_slist_free_all(c->hdr);
	if (c->fd >= 0)
		close(c->fd);
	if (c->path)
		unlink(c->path);
	free(c->path);
}

static int call_setup(struct store *st, struct call *c, struct store_peer *p, const char *tenant,
		      int64_t from, int64_t until, int64_t view, int format, const struct buf *body,
		      long timeout_ms)
{
	char url[4096], line[1024];

	memset(c, 0, sizeof(*c));
	c->p = p;
	c->fd = -1;
	c->max = st->head_block_max;
	if (asprintf(&c->path, "%s/q%" PRIu64 ".part", st->peers_dir,
		     atomic_fetch_add(&st->peers_seq, 1)) < 0) {
		c->path = NULL;
		return ERR_NOMEM;
	}
	c->fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (c->fd < 0)
		return ERR_IO;
	/* Format 1 without the parameter: what ingesters before format 2 read. */
	if ((size_t)snprintf(url, sizeof(url), "%s%s?from_ns=%" PRId64 "&until_ns=%" PRId64
			     "&view_ns=%" PRId64 "%s", p->url, STORE_HEAD_BLOCK_PATH, from, until,
			     view, format == 2 ? "&format=2" : "") >= sizeof(url))
		return ERR_INVALID;
	c->e = curl_easy_init();
	if (!c->e)
		return ERR_NOMEM;
	snprintf(line, sizeof(line), "X-Scope-OrgID: %s", tenant);
	c->hdr = curl_slist_append(c->hdr, line);
	c->hdr = curl_slist_append(c->hdr, "Content-Type: application/octet-stream");
	c->hdr = curl_slist_append(c->hdr, "Expect:");
	if (st->peer_token) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", st->peer_token);
		c->hdr = curl_slist_append(c->hdr, line);
	}
	if (!c->hdr)
		return ERR_NOMEM;
	curl_easy_setopt(c->e, CURLOPT_URL, url);
	curl_easy_setopt(c->e, CURLOPT_HTTPHEADER, c->hdr);
	curl_easy_setopt(c->e, CURLOPT_POST, 1L);
	curl_easy_setopt(c->e, CURLOPT_POSTFIELDS, body->len ? body->data : "");
	curl_easy_setopt(c->e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	curl_easy_setopt(c->e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->e, CURLOPT_PRIVATE, c);
	curl_easy_setopt(c->e, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(c->e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c->e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c->e, CURLOPT_PROTOCOLS_STR, "http,https");
	c->t0 = clock_mono_ns();
	return 0;
}

/* The first line of an error answer's body, for the warning. */
static void error_text(struct call *c, char *out, size_t cap)
{
	ssize_t n = c->path ? 0 : -1;
	int fd = c->path ? open(c->path, O_RDONLY | O_CLOEXEC) : -1;

	out[0] = '\0';
	if (fd >= 0) {
		n = read(fd, out, cap - 1);
		close(fd);
	}
	out[n > 0 ? n : 0] = '\0';
	for (char *s = out; *s; s++) {
		if (*s == '\n' || *s == '\r') {
			*s = '\0';
			break;
		}
	}
}

/* Sorts out how call c ended, counts it. */
static void call_judge(struct call *c)
{
	struct store_peer *p = c->p;
	char text[256];

	curl_easy_getinfo(c->e, CURLINFO_RESPONSE_CODE, &c->status);
	if (c->too_large) {
		c->res = CALL_TOO_LARGE;
		snprintf(c->why, sizeof(c->why), "its answer passed %llu bytes, the cap "
			 "(--querier.head-block-max-bytes)", (unsigned long long)c->max);
	} else if (c->cc == CURLE_OPERATION_TIMEDOUT) {
		c->res = CALL_TIMEOUT;
		snprintf(c->why, sizeof(c->why), "no answer within the timeout (%s)", c->errbuf);
	} else if (c->cc != CURLE_OK || c->io_error) {
		c->res = CALL_FAILED;
		snprintf(c->why, sizeof(c->why), "%s", c->io_error ? "cannot write its answer"
			 : c->errbuf[0] ? c->errbuf : curl_easy_strerror(c->cc));
	} else if (c->status == 200) {
		c->res = CALL_OK;
	} else if (c->status == 204) {
		c->res = CALL_EMPTY;
	} else if (c->status == 409) {
		c->res = CALL_STALE;
		snprintf(c->why, sizeof(c->why), "it dropped blocks by a bucket index newer than "
			 "ours, even after a sync");
	} else {
		c->res = c->status == 413 ? CALL_TOO_LARGE : CALL_FAILED;
		error_text(c, text, sizeof(text));
		snprintf(c->why, sizeof(c->why), "HTTP %ld%s%s", c->status, text[0] ? ": " : "", text);
	}
	if (c->res != CALL_TIMEOUT && c->res != CALL_FAILED) {
		atomic_fetch_add(&p->ns_sum, (uint64_t)(clock_mono_ns() - c->t0));
		atomic_fetch_add(&p->ns_count, 1);
	}
	atomic_fetch_add(&p->bytes, c->got);
	switch (c->res) {
	case CALL_OK: case CALL_EMPTY: atomic_fetch_add(&p->ok, 1); break;
	case CALL_STALE: atomic_fetch_add(&p->stale, 1); break;
	case CALL_TIMEOUT: atomic_fetch_add(&p->timeout, 1); break;
	case CALL_TOO_LARGE: atomic_fetch_add(&p->too_large, 1); break;
	case CALL_FAILED: atomic_fetch_add(&p->failed, 1); break;
	}
}

/* Runs every call at once until each ended (each has its own timeout). */
static int run_calls(struct call *c, size_t n)
{
	CURLM *m = curl_multi_init();
	int running = 1;

	if (!m)
		return ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if (c[i].e && curl_multi_add_handle(m, c[i].e) != CURLM_OK) {
			c[i].cc = CURLE_OUT_OF_MEMORY;
			c[i].done = 1;
		}
	}
	while (running) {
		struct CURLMsg *cm;
		int left;

		if (curl_multi_perform(m, &running) != CURLM_OK)
			break;
		while ((cm = curl_multi_info_read(m, &left))) {
			struct call *q;

			if (cm->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(cm->easy_handle, CURLINFO_PRIVATE, (char **)&q);
			q->cc = cm->data.result;
			q->done = 1;
		}
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		if (c[i].e) {
			curl_multi_remove_handle(m, c[i].e);
			if (!c[i].done)
				c[i].cc = CURLE_OPERATION_TIMEDOUT;
		}
	}
	curl_multi_cleanup(m);
	return 0;
}

/* Registers call c's answer as a block of tenant and adds it to r. */
static int adopt(struct store *st, const char *tenant, struct store_reader *r, struct call *c,
		 struct err_msg *msg)
{
	char path[4096];
	struct tenant *t;
	struct block *b;
	int rc;

	if (close(c->fd) != 0) {
		c->fd = -1;
		return err_set(msg, ERR_IO, "cannot write its answer");
	}
	c->fd = -1;
	/* A name the blocks' scan never takes for one of the store's. */
	if ((size_t)snprintf(path, sizeof(path), "%s.blk", c->path) >= sizeof(path) ||
	    rename(c->path, path) != 0)
		return err_set(msg, ERR_IO, "cannot keep its answer");
	free(c->path);
	c->path = strdup(path);
	if (!c->path) {
		unlink(path);
		return ERR_NOMEM;
	}
	pthread_mutex_lock(&st->writer);
	rc = store__tenant_ensure(st, tenant, &t, msg);
	pthread_mutex_unlock(&st->writer);
	if (rc)
		return rc;
	rc = store__block_load_file(st, t, c->path, &b, msg);
	if (rc)
		return rc;
	b->doomed = 1; /* the file goes with the last reference */
	free(c->path);
	c->path = NULL;
	rc = store__reader_add(r, b);
	if (rc)
		store__block_put(st, b);
	return rc;
}

static int warn_peer(struct store_reader *r, const struct call *c, const char *why)
{
	char text[ERR_TEXT_MAX + 256];

	snprintf(text, sizeof(text), "ingester %s: %s; the profiles it holds that the bucket "
		 "does not are missing from this answer", c->p->url, why);
	log_warn("%s", text);
	return store__reader_warn(r, text);
}

/*
 * One round: asks every peer for what r lacks.  *stale is set when one
 * answered 409 and `retry` allows another round (nothing is added then).
 */
static int round_trip(struct store *st, const char *tenant, struct store_reader *r,
		      const struct store_label *eq, size_t n_eq, int retry, int *stale,
		      struct err_msg *msg)
{
	uint8_t(*ids)[BLOCK_ID_BYTES] = NULL;
	struct call *c = calloc(st->n_peers, sizeof(*c));
	long timeout_ms = (long)(st->peer_timeout_ns / 1000000);
	size_t n_ids = 0;
	int64_t from, until;
	struct buf body;
	int rc = c ? 0 : ERR_NOMEM, format = 1;

	*stale = 0;
	buf_init(&body, MAX_HEAD_REQ_BYTES);
	store__reader_range(r, &from, &until);
	if (!rc)
		rc = store__reader_ids(r, &ids, &n_ids);
	if (!rc)
		rc = store__head_req_encode(ids, n_ids, eq, n_eq, &body, &format);
	for (size_t i = 0; !rc && i < st->n_peers; i++) {
		int e = call_setup(st, &c[i], &st->peers[i], tenant, from, until,
				   store__reader_view_ns(r), format, &body,
				   timeout_ms > 0 ? timeout_ms : 1);
		if (e == ERR_NOMEM)
			rc = e;
		else if (e) {
			c[i].cc = CURLE_FAILED_INIT;
			c[i].done = 1;
			if (c[i].e) {
				curl_easy_cleanup(c[i].e);
				c[i].e = NULL;
			}
		}
	}
	if (!rc)
		rc = run_calls(c, st->n_peers);
	for (size_t i = 0; !rc && i < st->n_peers; i++) {
		if (!c[i].e) {
			snprintf(c[i].why, sizeof(c[i].why), "cannot set up the request");
			c[i].res = CALL_FAILED;
			atomic_fetch_add(&c[i].p->failed, 1);
		} else {
			call_judge(&c[i]);
		}
		if (c[i].res == CALL_STALE && retry)
			*stale = 1;
	}
	for (size_t i = 0; !rc && !*stale && i < st->n_peers; i++) {
		struct err_msg m;
		int e;

		if (c[i].res == CALL_EMPTY)
			continue;
		if (c[i].res != CALL_OK) {
			rc = warn_peer(r, &c[i], c[i].why);
			continue;
		}
		err_clear(&m);
		e = adopt(st, tenant, r, &c[i], &m);
		if (e == ERR_NOMEM)
			rc = e;
		else if (e)
			rc = warn_peer(r, &c[i], m.text[0] ? m.text : err_str(e));
	}
	for (size_t i = 0; c && i < st->n_peers; i++)
		call_release(&c[i]);
	free(c);
	free(ids);
	buf_release(&body);
	if (rc)
		err_set(msg, rc, "asking the ingesters: %s", err_str(rc));
	return rc;
}

int store__peers_read(struct store *st, const char *tenant, struct store_reader **r,
		      const struct store_label *eq, size_t n_eq, struct err_msg *msg)
{
	int64_t from, until;
	int stale = 0, rc;

	store__reader_range(*r, &from, &until);
	if (!st->peers_dir)
		return 0;
	rc = round_trip(st, tenant, *r, eq, n_eq, 1, &stale, msg);
	if (!rc && stale) {
		struct err_msg m;

		/* An ingester dropped blocks by an index newer than our view:
		 * learn that index, and ask again with a reader of it. */
		err_clear(&m);
		if (store_bucket_sync(st, &m))
			log_warn("querier: bucket index sync for a stale view: %s", m.text);
		store_reader_close(*r);
		*r = NULL;
		rc = store__reader_open(st, tenant, from, until, NULL, 0, r, msg);
		if (!rc)
			rc = round_trip(st, tenant, *r, eq, n_eq, 0, &stale, msg);
	}
	if (rc) {
		store_reader_close(*r);
		*r = NULL;
	}
	return rc;
}
