/*
 * s3.c - the S3 backend: requests signed by libcurl (CURLOPT_AWS_SIGV4),
 * run in batches on a curl multi handle with bounded retries, multipart
 * uploads, range reads and ListObjectsV2.  objstore.h says what each
 * operation promises; objstore_int.h has the pure helpers.
 *
 * libcurl 7.88's SigV4 signs what it is given, so (docs/object-storage.md):
 * every request carries x-amz-content-sha256 computed here, query strings
 * are built canonical (objstore__query), keys are encoded in the path
 * (objstore__uri_encode), and no header-removal entry ("Expect:") is ever
 * added, since it would be signed but never sent.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/sha256.h"
#include "objstore_int.h"

#define ERR_BODY_MAX (64u << 10)   /* an error's XML: kept for the message */
#define SMALL_BODY_MAX (1u << 20)  /* multipart initiate/complete answers */
#define CRED_FILE_MAX (64u << 10)
#define POOL_MAX 8                 /* idle multi handles kept for reuse */
#define PARTS_MAX 10000            /* S3's limit per multipart upload */
#define LIST_PAGES_MAX (1u << 20)

/* SHA-256 of the empty body. */
static const char EMPTY_SHA[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct s3 {
	struct objstore os;
	char *endpoint, *bucket, *region;
	int path_style;
	struct objstore__creds creds;
	char sigv4[160];
	long connect_timeout_ms, stall_ms, request_timeout_ms;
	struct objstore__retry retry;
	size_t part_size, multipart_min;
	int parallel;
	char list_page[8];
	pthread_mutex_t lock;
	CURLM *pool[POOL_MAX]; /* idle; each keeps its connections alive */
	int npool;
};

/* One S3 request and its retries. */
struct req {
	enum objstore_op op; /* what objstore_stats() counts it as */
	const char *method; /* "GET", "HEAD", "PUT", "POST", "DELETE" */
	const char *key;    /* for messages */
	struct buf url;
	char range[64];     /* "bytes=..." or "" */
	int create_once;
	char if_none_match[OBJSTORE_ETAG_MAX + 2]; /* a quoted tag, or "" */
	int not_modified;   /* the answer was 304 to if_none_match */
	const char *body;   /* PUT/POST body (borrowed) */
	size_t body_len, body_pos;
	char sha[SHA256_HEX_LEN + 1];
	struct buf *out;    /* a 2xx body is appended here; NULL: not read */
	size_t out_start;
	struct buf err;     /* a non-2xx body, capped */
	int too_large;      /* out's cap stopped the transfer */
	int error_in_2xx;   /* a 2xx body may be an <Error> (CompleteMultipartUpload) */
	char code[128];     /* the last attempt's S3 error <Code>, "" if none */
	long status;
	int curl_code;
	int attempts;
	int64_t not_before_ns;
	int in_flight, done, rc;
	CURL *easy;
	struct curl_slist *hdrs;
	char errbuf[CURL_ERROR_SIZE];
	char etag[80];       /* response's ETag, quotes kept */
	char content_range[96];
	curl_off_t length;   /* Content-Length of the answer, -1 unknown */
	struct s3 *s;
};

static int64_t now_ns(void)
{
	return clock_mono_ns();
}

static void req_init(struct req *r, struct s3 *s, enum objstore_op op, const char *method,
		     const char *key)
{
	memset(r, 0, sizeof(*r));
	r->s = s;
	r->op = op;
	r->method = method;
	r->key = key;
	buf_init(&r->url, OBJSTORE_KEY_MAX * 3 + 4096);
	buf_init(&r->err, ERR_BODY_MAX);
	memcpy(r->sha, EMPTY_SHA, sizeof(EMPTY_SHA));
	r->length = -1;
}

static void req_release(struct req *r)
{
	buf_release(&r->url);
	buf_release(&r->err);
	curl_slist_free_all(r->hdrs);
	r->hdrs = NULL;
}

static int req_url(struct req *r, const char *key, const char *query, struct err_msg *msg)
{
	return objstore__url(&r->url, r->s->endpoint, r->s->bucket, r->s->path_style, key, query,
			     msg);
}

static int req_body(struct req *r, const void *body, size_t len)
{
	uint8_t d[SHA256_LEN];
	int rc = sha256_buf(body, len, d);

	if (!rc) {
		r->body = body;
		r->body_len = len;
		sha256_hex(d, r->sha);
	}
	return rc;
}

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	long status = 0;

	n *= size;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status / 100 != 2) {
		/* Keep what fits of an error body: it only feeds the message. */
		size_t room = r->err.max - r->err.len;

		buf_append(&r->err, p, n < room ? n : room);
		return n;
	}
	if (!r->out)
		return n;
	if (buf_append(r->out, p, n)) {
		r->too_large = 1;
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	}
	return n;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
	struct req *r = arg;
	size_t k = r->body_len - r->body_pos;

	n *= size;
	if (k > n)
		k = n;
	memcpy(p, r->body + r->body_pos, k);
	r->body_pos += k;
	return k;
}

static int add_header(struct req *r, const char *fmt, const char *v)
{
	char line[4200];
	struct curl_slist *l;

	snprintf(line, sizeof(line), fmt, v);
	l = curl_slist_append(r->hdrs, line);
	if (!l)
		return ERR_NOMEM;
	r->hdrs = l;
	return 0;
}

/* A fresh easy handle for the next attempt of r. */
static int req_start(struct req *r, CURLM *m)
{
	struct s3 *s = r->s;
	CURL *e = curl_easy_init();
	long stall_s = (s->stall_ms + 999) / 1000;
	int rc = 0;

	if (!e)
		return ERR_NOMEM;
	curl_slist_free_all(r->hdrs);
	r->hdrs = NULL;
	rc = add_header(r, "x-amz-content-sha256: %s", r->sha);
	if (!rc && r->range[0])
		rc = add_header(r, "Range: %s", r->range);
	if (!rc && r->create_once)
		rc = add_header(r, "If-None-Match: %s", "*");
	else if (!rc && r->if_none_match[0])
		rc = add_header(r, "If-None-Match: %s", r->if_none_match);
	if (!rc && s->creds.session_token[0])
		rc = add_header(r, "x-amz-security-token: %s", s->creds.session_token);
	if (!rc && !strcmp(r->method, "POST"))
		rc = add_header(r, "Content-Type: %s", "application/xml");
	if (rc) {
		curl_easy_cleanup(e);
		return rc;
	}
	r->easy = e;
	r->body_pos = 0;
	if (r->out)
		r->out->len = r->out_start;
	buf_reset(&r->err);
	r->too_large = 0;
	r->etag[0] = r->content_range[0] = '\0';
	r->length = -1;
	curl_easy_setopt(e, CURLOPT_URL, r->url.data);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(e, CURLOPT_USERNAME, s->creds.access_key);
	curl_easy_setopt(e, CURLOPT_PASSWORD, s->creds.secret_key);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, s->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, s->request_timeout_ms);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, stall_s > 0 ? stall_s : 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	r->errbuf[0] = '\0';
	if (!strcmp(r->method, "HEAD")) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(r->method, "PUT")) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(e, CURLOPT_READDATA, r);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
	} else if (!strcmp(r->method, "POST")) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (!strcmp(r->method, "DELETE")) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	r->attempts++;
	r->in_flight = 1;
	if (curl_multi_add_handle(m, e) != CURLM_OK) {
		r->in_flight = 0;
		r->easy = NULL;
		curl_easy_cleanup(e);
		return ERR_NOMEM;
	}
	return 0;
}

static void copy_header(CURL *e, const char *name, char *out, size_t cap)
{
	struct curl_header *h;

	out[0] = '\0';
	if (curl_easy_header(e, name, 0, CURLH_HEADER, -1, &h) == CURLHE_OK)
		snprintf(out, cap, "%s", h->value);
}

/* The S3 error code of a finished attempt's answer into r->code. */
static void answer_code(struct req *r)
{
	const char *body = r->err.data ? r->err.data : "";
	size_t len = r->err.len;

	r->code[0] = '\0';
	if (r->curl_code)
		return;
	if (r->status / 100 == 2) {
		/* CompleteMultipartUpload can fail after its 200: an <Error> body. */
		if (!r->error_in_2xx || !r->out || r->out->len == r->out_start)
			return;
		body = r->out->data + r->out_start;
		len = r->out->len - r->out_start;
		if (!strstr(body, "<Error>"))
			return;
	}
	if (objstore__xml_text(body, len, "Code", r->code, sizeof(r->code)))
		snprintf(r->code, sizeof(r->code), "%s", r->status / 100 == 2 ? "Error" : "");
}

static void req_finish(struct req *r, CURLM *m, CURLcode cc)
{
	curl_off_t sent = 0, got = 0;
	int o;

	r->curl_code = (int)cc;
	r->status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(r->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->length);
	curl_easy_getinfo(r->easy, CURLINFO_SIZE_UPLOAD_T, &sent);
	curl_easy_getinfo(r->easy, CURLINFO_SIZE_DOWNLOAD_T, &got);
	if (cc == CURLE_OK) {
		copy_header(r->easy, "ETag", r->etag, sizeof(r->etag));
		copy_header(r->easy, "Content-Range", r->content_range, sizeof(r->content_range));
	}
	curl_multi_remove_handle(m, r->easy);
	curl_easy_cleanup(r->easy);
	r->easy = NULL;
	r->in_flight = 0;
	answer_code(r);
	o = r->too_large ? ERR_TOO_LARGE
			 : objstore__outcome(r->curl_code, r->status, r->code, r->attempts,
					     r->s->retry.max_attempts);
	/* RFC 9110 15.4.5: the tag we sent still names the object. */
	if (o == ERR_INVALID && r->status == 304 && r->if_none_match[0])
		o = OBJSTORE__NOT_MODIFIED;
	objstore__count(&r->s->os, r->op, o == 1 ? ERR_UNAVAILABLE : o, o == 1,
			got > 0 ? (uint64_t)got : 0, sent > 0 ? (uint64_t)sent : 0);
	if (o == 1) {
		uint32_t rnd = (uint32_t)((uint64_t)now_ns() * 2654435761u >> 7) ^
			       (uint32_t)(uintptr_t)r;

		r->not_before_ns = now_ns() +
				   objstore__backoff_ms(&r->s->retry, r->attempts, rnd) * 1000000;
		return;
	}
	r->not_modified = o == OBJSTORE__NOT_MODIFIED;
	r->rc = r->not_modified ? 0 : o;
	r->done = 1;
}

/* The message of a request's final failure. */
static int req_error(struct req *r, struct err_msg *msg)
{
	char text[256] = "";

	if (r->rc == ERR_TOO_LARGE)
		return err_set(msg, r->rc, "S3 %s %s: the answer is over the reader's cap of %zu bytes",
			       r->method, r->key, r->out ? r->out->max : 0);
	if (r->curl_code)
		return err_set(msg, r->rc, "S3 %s %s: %s after %d attempts: %s", r->method, r->key,
			       r->rc == ERR_TIMEOUT ? "timed out" : "cannot reach the server",
			       r->attempts, r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->curl_code));
	if (r->status / 100 == 2 && r->code[0])
		return err_set(msg, r->rc, "S3 %s %s: an <Error> inside the HTTP %ld answer: %s%s",
			       r->method, r->key, r->status, r->code,
			       r->attempts > 1 ? " after retries" : "");
	objstore__xml_text(r->err.data ? r->err.data : "", r->err.len, "Message", text,
			   sizeof(text));
	return err_set(msg, r->rc, "S3 %s %s: HTTP %ld%s%s%s%s%s%s", r->method, r->key, r->status,
		       r->code[0] ? " " : "", r->code, text[0] ? " (" : "", text, text[0] ? ")" : "",
		       r->attempts > 1 ? " after retries" : "");
}

static CURLM *pool_get(struct s3 *s)
{
	CURLM *m = NULL;

	pthread_mutex_lock(&s->lock);
	if (s->npool)
		m = s->pool[--s->npool];
	pthread_mutex_unlock(&s->lock);
	return m ? m : curl_multi_init();
}

static void pool_put(struct s3 *s, CURLM *m)
{
	pthread_mutex_lock(&s->lock);
	if (s->npool < POOL_MAX) {
		s->pool[s->npool++] = m;
		m = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (m)
		curl_multi_cleanup(m);
}

/*
 * Runs `n` requests, at most cfg.parallel at once, each to its final
 * outcome (r[i].rc).  Returns 0, or ERR_NOMEM when libcurl could not
 * start one (its rc says so too).
 */
static int run(struct s3 *s, struct req *r, size_t n)
{
	CURLM *m = pool_get(s);
	int rc = 0;

	if (!m)
		return ERR_NOMEM;
	for (;;) {
		int64_t t = now_ns(), wake = INT64_MAX;
		int flying = 0, pending = 0, finished = 0, running;
		struct CURLMsg *cm;
		int left;

		for (size_t i = 0; i < n; i++)
			flying += r[i].in_flight;
		for (size_t i = 0; i < n; i++) {
			if (r[i].done || r[i].in_flight)
				continue;
			pending++;
			if (r[i].not_before_ns > t) {
				if (r[i].not_before_ns < wake)
					wake = r[i].not_before_ns;
				continue;
			}
			if (flying >= s->parallel)
				continue;
			if (req_start(&r[i], m)) {
				r[i].rc = rc = ERR_NOMEM;
				r[i].done = 1;
				continue;
			}
			flying++;
		}
		if (!flying && !pending)
			break;
		curl_multi_perform(m, &running);
		while ((cm = curl_multi_info_read(m, &left))) {
			struct req *q;

			if (cm->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(cm->easy_handle, CURLINFO_PRIVATE, (char **)&q);
			req_finish(q, m, cm->data.result);
			finished++;
		}
		/* A slot freed: start what waits at once, not after a poll's timeout. */
		if (!finished) {
			int64_t wait_ms = 100;

			if (wake != INT64_MAX && (wake - now_ns()) / 1000000 < wait_ms)
				wait_ms = (wake - now_ns()) / 1000000;
			if (wait_ms > 0)
				curl_multi_poll(m, NULL, 0, (int)wait_ms, NULL);
		}
	}
	pool_put(s, m);
	return rc;
}

/* Runs one request; its final failure goes into msg. */
static int run_one(struct s3 *s, struct req *r, struct err_msg *msg)
{
	int rc = run(s, r, 1);

	if (rc)
		return err_set(msg, rc, "S3 %s %s: out of memory", r->method, r->key);
	return r->rc ? req_error(r, msg) : 0;
}

/* --- put --- */

static int s3_head(struct objstore *os, const char *key, struct objstore_stat *st,
		   struct err_msg *msg);

static int put_single(struct s3 *s, const char *key, const void *data, size_t len,
		      unsigned flags, struct err_msg *msg)
{
	struct req r;
	int rc;

	req_init(&r, s, OBJSTORE_OP_PUT, "PUT", key);
	r.create_once = !!(flags & OBJSTORE_CREATE_ONCE);
	rc = req_url(&r, key, "", msg);
	if (!rc && req_body(&r, data, len))
		rc = err_set(msg, ERR_NOMEM, "S3 PUT %s: cannot hash the body", key);
	if (!rc)
		rc = run_one(s, &r, msg);
	req_release(&r);
	return rc;
}

/* The URL of `key` with ?uploadId=ID (and partNumber when part > 0). */
static int upload_url(struct req *r, const char *key, const char *upload_id, int part,
		      struct err_msg *msg)
{
	struct objstore__param p[2] = {{"uploadId", upload_id}, {"partNumber", NULL}};
	char num[16];
	struct buf q;
	int rc;

	buf_init(&q, 4096);
	snprintf(num, sizeof(num), "%d", part);
	p[1].value = num;
	rc = objstore__query(&q, p, part > 0 ? 2 : 1);
	if (rc)
		rc = err_set(msg, rc, "S3 %s: upload id too long", key);
	else
		rc = req_url(r, key, q.data, msg);
	buf_release(&q);
	return rc;
}

static void abort_upload(struct s3 *s, const char *key, const char *upload_id)
{
	struct req r;

	req_init(&r, s, OBJSTORE_OP_PUT, "DELETE", key);
	if (!upload_url(&r, key, upload_id, 0, NULL))
		run(s, &r, 1);
	req_release(&r);
}

static int complete_body(struct buf *b, struct req *parts, size_t n)
{
	int rc = buf_puts(b, "<CompleteMultipartUpload>");

	for (size_t i = 0; i < n && !rc; i++)
		rc = buf_printf(b, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", i + 1,
				parts[i].etag);
	if (!rc)
		rc = buf_puts(b, "</CompleteMultipartUpload>");
	return rc;
}

static int put_multipart(struct s3 *s, const char *key, const char *data, size_t len,
			 unsigned flags, struct err_msg *msg)
{
	size_t nparts = (len + s->part_size - 1) / s->part_size;
	char upload_id[OBJSTORE__TOKEN_MAX + 1];
	struct req init, done, *parts = NULL;
	struct buf ans, body;
	int rc, started = 0;

	if (nparts > PARTS_MAX)
		return err_set(msg, ERR_TOO_LARGE, "S3 PUT %s: %zu bytes need more than %d parts",
			       key, len, PARTS_MAX);
	/*
	 * Create-once in parts: `If-None-Match: *` on the completion is what
	 * AWS S3 checks, but Ceph RGW 16 ignores it there, so look first.
	 * Between this HEAD and the completion another writer can still win;
	 * callers that need create-once write objects whose content is fixed
	 * by their key (a block id), so the loser's bytes are the same.
	 */
	if (flags & OBJSTORE_CREATE_ONCE) {
		struct objstore_stat st;
		struct err_msg ignored = {""};

		rc = s3_head(&s->os, key, &st, &ignored);
		if (!rc)
			return err_set(msg, ERR_CONFLICT, "S3 PUT %s: exists (HEAD before a multipart upload)",
				       key);
		if (rc != ERR_NOT_FOUND)
			return err_set(msg, rc, "S3 PUT %s: %s", key, ignored.text);
	}
	buf_init(&ans, SMALL_BODY_MAX);
	buf_init(&body, 128 + nparts * 160);
	req_init(&init, s, OBJSTORE_OP_PUT, "POST", key);
	req_init(&done, s, OBJSTORE_OP_PUT, "POST", key);
	init.out = &ans;
	rc = req_url(&init, key, "uploads=", msg);
	if (!rc)
		rc = run_one(s, &init, msg);
	if (!rc && objstore__xml_text(ans.data, ans.len, "UploadId", upload_id, sizeof(upload_id)))
		rc = err_set(msg, ERR_CORRUPT, "S3 POST %s?uploads: no valid <UploadId> in the answer",
			     key);
	if (rc)
		goto out;
	started = 1;
	parts = calloc(nparts, sizeof(*parts));
	if (!parts) {
		rc = err_set(msg, ERR_NOMEM, "S3 PUT %s: out of memory", key);
		goto out;
	}
	for (size_t i = 0; i < nparts && !rc; i++) {
		size_t off = i * s->part_size, n = len - off < s->part_size ? len - off : s->part_size;

		req_init(&parts[i], s, OBJSTORE_OP_PART, "PUT", key);
		rc = upload_url(&parts[i], key, upload_id, (int)i + 1, msg);
		if (!rc && req_body(&parts[i], data + off, n))
			rc = err_set(msg, ERR_NOMEM, "S3 PUT %s: cannot hash part %zu", key, i + 1);
	}
	if (!rc && run(s, parts, nparts))
		rc = err_set(msg, ERR_NOMEM, "S3 PUT %s: out of memory", key);
	for (size_t i = 0; i < nparts && !rc; i++) {
		if (parts[i].rc)
			rc = req_error(&parts[i], msg);
		else if (!parts[i].etag[0])
			rc = err_set(msg, ERR_CORRUPT, "S3 PUT %s part %zu: no ETag in the answer", key,
				     i + 1);
	}
	if (!rc && complete_body(&body, parts, nparts))
		rc = err_set(msg, ERR_NOMEM, "S3 PUT %s: out of memory", key);
	if (rc)
		goto out;
	/* The upload becomes the object only now: create-once is checked here. */
	buf_reset(&ans);
	done.out = &ans;
	done.error_in_2xx = 1;
	done.create_once = !!(flags & OBJSTORE_CREATE_ONCE);
	rc = upload_url(&done, key, upload_id, 0, msg);
	if (!rc && req_body(&done, body.data, body.len))
		rc = err_set(msg, ERR_NOMEM, "S3 PUT %s: cannot hash the body", key);
	if (!rc)
		rc = run_one(s, &done, msg);
	if (!rc)
		started = 0;
out:
	if (started)
		abort_upload(s, key, upload_id);
	for (size_t i = 0; parts && i < nparts; i++)
		req_release(&parts[i]);
	free(parts);
	req_release(&init);
	req_release(&done);
	buf_release(&ans);
	buf_release(&body);
	return rc;
}

static int s3_put(struct objstore *os, const char *key, const void *data, size_t len,
		  unsigned flags, struct err_msg *msg)
{
	struct s3 *s = (struct s3 *)os;

	if (len >= s->multipart_min)
		return put_multipart(s, key, data, len, flags, msg);
	return put_single(s, key, data, len, flags, msg);
}

/* --- reads --- */

/* "bytes A-B/T" into a, b, total; 0 or -1. */
static int parse_content_range(const char *s, uint64_t *a, uint64_t *b, uint64_t *total)
{
	unsigned long long x, y, t;
	int used = 0;

	if (sscanf(s, "bytes %llu-%llu/%llu%n", &x, &y, &t, &used) != 3 || s[used] || x > y ||
	    y >= t)
		return -1;
	*a = x, *b = y, *total = t;
	return 0;
}

/* Checks a finished range read and sets *size.  0 or ERR_CORRUPT. */
static int check_range(struct req *r, const struct objstore_range *g, uint64_t *size,
		       struct err_msg *msg)
{
	size_t got = r->out->len - r->out_start;
	uint64_t a, b, total;

	if (!r->range[0] || r->status == 200) {
		/* The whole object: a plain GET, or a server that ignored Range. */
		if (r->range[0] && g->off != 0 && g->off != OBJSTORE__SUFFIX)
			return err_set(msg, ERR_CORRUPT, "S3 GET %s: the server ignored Range %s",
				       r->key, r->range);
		*size = got;
		if (g->off == OBJSTORE__SUFFIX && got > g->len) {
			memmove(r->out->data + r->out_start, r->out->data + r->out_start + got - g->len,
				(size_t)g->len);
			r->out->len = r->out_start + (size_t)g->len;
		} else if (r->range[0] && got > g->len) {
			r->out->len = r->out_start + (size_t)g->len;
		}
		r->out->data[r->out->len] = '\0';
		return 0;
	}
	if (parse_content_range(r->content_range, &a, &b, &total) || b - a + 1 != got ||
	    (g->off != OBJSTORE__SUFFIX && a != g->off))
		return err_set(msg, ERR_CORRUPT,
			       "S3 GET %s: Content-Range \"%s\" does not match the %zu bytes sent for %s",
			       r->key, r->content_range, got, r->range);
	*size = total;
	return 0;
}

static int s3_get_ranges(struct objstore *os, struct objstore_range *g, size_t n,
			 uint64_t *sizes, struct err_msg *msg)
{
	struct s3 *s = (struct s3 *)os;
	struct req *r = calloc(n ? n : 1, sizeof(*r));
	int rc = 0, first = 0;

	if (!r)
		return err_set(msg, ERR_NOMEM, "S3 GET: out of memory");
	for (size_t i = 0; i < n; i++) {
		req_init(&r[i], s,
			 g[i].off == 0 && g[i].len == UINT64_MAX ? OBJSTORE_OP_GET : OBJSTORE_OP_RANGE,
			 "GET", g[i].key);
		r[i].out = g[i].out;
		r[i].out_start = g[i].out->len;
		if (g[i].off == OBJSTORE__SUFFIX)
			snprintf(r[i].range, sizeof(r[i].range), "bytes=-%llu",
				 (unsigned long long)g[i].len);
		else if (g[i].len == UINT64_MAX && g[i].off)
			snprintf(r[i].range, sizeof(r[i].range), "bytes=%llu-",
				 (unsigned long long)g[i].off);
		else if (g[i].len != UINT64_MAX)
			snprintf(r[i].range, sizeof(r[i].range), "bytes=%llu-%llu",
				 (unsigned long long)g[i].off,
				 (unsigned long long)(g[i].off + g[i].len - 1 < g[i].off
							      ? UINT64_MAX - 1
							      : g[i].off + g[i].len - 1));
		if (!rc)
			rc = req_url(&r[i], g[i].key, "", msg);
	}
	if (!rc && run(s, r, n))
		rc = err_set(msg, ERR_NOMEM, "S3 GET: out of memory");
	for (size_t i = 0; i < n && !rc; i++) {
		uint64_t size = 0;

		if (r[i].rc) {
			if (r[i].status == 416)
				g[i].rc = err_set(msg, ERR_INVALID, "S3 GET %s: range %s is past the end",
						  g[i].key, r[i].range);
			else
				g[i].rc = req_error(&r[i], msg);
			r[i].out->len = r[i].out_start;
		} else {
			g[i].rc = check_range(&r[i], &g[i], &size, msg);
		}
		if (g[i].rc) {
			g[i].out->len = r[i].out_start;
			if (g[i].out->data)
				g[i].out->data[g[i].out->len] = '\0';
			if (!first)
				first = g[i].rc;
		} else if (sizes && n == 1) {
			*sizes = size;
		}
	}
	for (size_t i = 0; i < n; i++)
		req_release(&r[i]);
	free(r);
	return rc ? rc : first;
}

/* r's ETag without its quotes into out (OBJSTORE_ETAG_MAX bytes). */
static void etag_unquoted(const struct req *r, char *out)
{
	size_t n = strlen(r->etag);
	const char *e = r->etag;

	if (n >= 2 && e[0] == '"' && e[n - 1] == '"')
		e++, n -= 2;
	snprintf(out, OBJSTORE_ETAG_MAX, "%.*s", (int)n, e);
}

static int s3_get_if(struct objstore *os, const char *key, const char *etag, struct buf *out,
		     char *etag_out, int *changed, struct err_msg *msg)
{
	struct req r;
	int rc;

	req_init(&r, (struct s3 *)os, OBJSTORE_OP_GET, "GET", key);
	r.out = out;
	r.out_start = out->len;
	if (etag)
		snprintf(r.if_none_match, sizeof(r.if_none_match), "\"%s\"", etag);
	rc = req_url(&r, key, "", msg);
	if (!rc)
		rc = run_one((struct s3 *)os, &r, msg);
	if (rc || r.not_modified) {
		out->len = r.out_start;
		if (out->data)
			out->data[out->len] = '\0';
	}
	if (!rc && r.not_modified) {
		*changed = 0;
	} else if (!rc) {
		etag_unquoted(&r, etag_out);
		*changed = 1;
	}
	req_release(&r);
	return rc;
}

/*
 * One request on `key` without a body either way (HEAD, DELETE), run to
 * its final outcome.  *r is initialized here and released by the caller
 * (its answer's headers are read after).
 */
static int bodiless(struct s3 *s, struct req *r, enum objstore_op op, const char *method,
		    const char *key, struct err_msg *msg)
{
	int rc;

	req_init(r, s, op, method, key);
	rc = req_url(r, key, "", msg);
	return rc ? rc : run_one(s, r, msg);
}

static int s3_head(struct objstore *os, const char *key, struct objstore_stat *st,
		   struct err_msg *msg)
{
	struct req r;
	int rc = bodiless((struct s3 *)os, &r, OBJSTORE_OP_HEAD, "HEAD", key, msg);

	if (!rc && r.length < 0)
		rc = err_set(msg, ERR_CORRUPT, "S3 HEAD %s: no Content-Length", key);
	if (!rc) {
		st->size = (uint64_t)r.length;
		etag_unquoted(&r, st->etag);
	}
	req_release(&r);
	return rc;
}

static int s3_del(struct objstore *os, const char *key, struct err_msg *msg)
{
	struct req r;
	int rc = bodiless((struct s3 *)os, &r, OBJSTORE_OP_DELETE, "DELETE", key, msg);

	req_release(&r);
	return rc == ERR_NOT_FOUND ? 0 : rc;
}

static int list_page(struct s3 *s, const char *prefix, const char *token, struct buf *xml,
		     struct objstore__list_page *page, struct err_msg *msg)
{
	struct objstore__param p[4] = {{"list-type", "2"}, {"max-keys", s->list_page},
				       {"prefix", prefix}, {"continuation-token", token}};
	struct buf q;
	struct req r;
	int rc;

	buf_init(&q, 8192);
	req_init(&r, s, OBJSTORE_OP_LIST, "GET", prefix[0] ? prefix : "(list)");
	r.out = xml;
	buf_reset(xml);
	rc = objstore__query(&q, p, token[0] ? 4 : 3);
	if (rc)
		rc = err_set(msg, rc, "S3 list %s: query too long", prefix);
	if (!rc)
		rc = req_url(&r, "", q.data, msg);
	if (!rc)
		rc = run_one(s, &r, msg);
	if (!rc)
		rc = objstore__parse_list(xml->data ? xml->data : "", xml->len, page, msg);
	req_release(&r);
	buf_release(&q);
	return rc;
}

static int s3_list(struct objstore *os, const char *prefix,
		   int (*fn)(void *arg, const struct objstore_entry *e), void *arg,
		   struct err_msg *msg)
{
	struct s3 *s = (struct s3 *)os;
	char token[OBJSTORE__TOKEN_MAX + 1] = "", last[OBJSTORE_KEY_MAX + 1] = "";
	struct buf xml;
	int rc = 0;

	buf_init(&xml, OBJSTORE__XML_MAX);
	for (unsigned pages = 0; !rc; pages++) {
		struct objstore__list_page page;

		if (pages == LIST_PAGES_MAX) {
			rc = err_set(msg, ERR_TOO_LARGE, "S3 list %s: more than %u pages", prefix,
				     LIST_PAGES_MAX);
			break;
		}
		rc = list_page(s, prefix, token, &xml, &page, msg);
		if (rc)
			break;
		for (size_t i = 0; i < page.n && !rc; i++) {
			struct objstore_entry e = {page.entries[i].key, page.entries[i].size};

			/* Byte order, each key once: also what ends a looping server. */
			if (strncmp(e.key, prefix, strlen(prefix)) || (last[0] && strcmp(e.key, last) <= 0))
				rc = err_set(msg, ERR_CORRUPT,
					     "S3 list %s: key %.64s out of order or outside the prefix",
					     prefix, e.key);
			else
				rc = fn(arg, &e);
			if (!rc)
				snprintf(last, sizeof(last), "%s", e.key);
		}
		if (!rc && page.truncated && !strcmp(page.next_token, token))
			rc = err_set(msg, ERR_CORRUPT, "S3 list %s: the same continuation token twice",
				     prefix);
		if (!rc)
			snprintf(token, sizeof(token), "%s", page.next_token);
		int more = page.truncated;

		objstore__list_page_release(&page);
		if (!more)
			break;
	}
	buf_release(&xml);
	return rc;
}

static void s3_close(struct objstore *os)
{
	struct s3 *s = (struct s3 *)os;

	for (int i = 0; i < s->npool; i++)
		curl_multi_cleanup(s->pool[i]);
	pthread_mutex_destroy(&s->lock);
	free(s->endpoint);
	free(s->bucket);
	free(s->region);
	memset(&s->creds, 0, sizeof(s->creds));
	free(s);
}

static const struct objstore_ops s3_ops = {
	.kind = "s3",
	.put = s3_put,
	.get_ranges = s3_get_ranges,
	.get_if = s3_get_if,
	.head = s3_head,
	.del = s3_del,
	.list = s3_list,
	.close = s3_close,
};

static int copy_cred(char *dst, size_t cap, const char *v, const char *what, struct err_msg *msg)
{
	if (!v || !v[0])
		return err_set(msg, ERR_INVALID, "S3: no %s", what);
	if (strlen(v) >= cap)
		return err_set(msg, ERR_INVALID, "S3: %s longer than %zu bytes", what, cap - 1);
	snprintf(dst, cap, "%s", v);
	return 0;
}

/* Credentials: the configuration's, else the environment's, else the file's. */
static int find_creds(const struct objstore_s3_config *cfg, struct objstore__creds *c,
		      struct err_msg *msg)
{
	const char *ak = cfg->access_key, *sk = cfg->secret_key, *tok = cfg->session_token;
	const char *file = cfg->credentials_file, *profile = cfg->profile;
	char path[4096];
	struct buf text;
	int rc;

	if (!ak && getenv("AWS_ACCESS_KEY_ID") && getenv("AWS_ACCESS_KEY_ID")[0]) {
		ak = getenv("AWS_ACCESS_KEY_ID");
		sk = getenv("AWS_SECRET_ACCESS_KEY");
		tok = getenv("AWS_SESSION_TOKEN");
	}
	if (ak) {
		rc = copy_cred(c->access_key, sizeof(c->access_key), ak, "access key", msg);
		if (!rc)
			rc = copy_cred(c->secret_key, sizeof(c->secret_key), sk, "secret key", msg);
		if (!rc && tok && tok[0])
			rc = copy_cred(c->session_token, sizeof(c->session_token), tok,
				       "session token", msg);
		return rc;
	}
	if (!file)
		file = getenv("AWS_SHARED_CREDENTIALS_FILE");
	if (!file || !file[0]) {
		const char *home = getenv("HOME");

		if (!home || !home[0])
			return err_set(msg, ERR_INVALID,
				       "S3: no credentials (AWS_ACCESS_KEY_ID, or a credentials file)");
		snprintf(path, sizeof(path), "%s/.aws/credentials", home);
		file = path;
	}
	if (!profile)
		profile = getenv("AWS_PROFILE");
	if (!profile || !profile[0])
		profile = "default";
	buf_init(&text, CRED_FILE_MAX);
	rc = buf_read_file(&text, file);
	if (rc)
		rc = err_set(msg, ERR_INVALID,
			     "S3: no credentials: AWS_ACCESS_KEY_ID is not set and %s cannot be read%s",
			     file, rc == ERR_TOO_LARGE ? " (over 64 KiB)" : "");
	else
		rc = objstore__parse_credentials(text.data ? text.data : "", text.len, profile, c, msg);
	buf_release(&text);
	return rc;
}

int objstore__open_s3(const struct objstore_s3_config *cfg, struct objstore **out,
		      struct err_msg *msg)
{
	struct s3 *s;
	struct buf probe;
	int rc;

	if (!cfg->endpoint || !cfg->endpoint[0] || !cfg->bucket || !cfg->bucket[0])
		return err_set(msg, ERR_INVALID, "S3: an endpoint and a bucket are required");
	if (strlen(cfg->bucket) > 63 || strspn(cfg->bucket, "abcdefghijklmnopqrstuvwxyz0123456789.-") !=
						strlen(cfg->bucket))
		return err_set(msg, ERR_INVALID,
			       "S3 bucket %.70s: 3..63 of a-z 0-9 . - (S3's bucket naming rules)",
			       cfg->bucket);
	if (cfg->part_size && cfg->part_size < OBJSTORE_PART_MIN)
		return err_set(msg, ERR_INVALID, "S3: part size %zu under S3's minimum of %u",
			       cfg->part_size, OBJSTORE_PART_MIN);
	buf_init(&probe, 8192);
	rc = objstore__url(&probe, cfg->endpoint, cfg->bucket, cfg->path_style, "", "", msg);
	buf_release(&probe);
	if (rc)
		return rc;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return err_set(msg, ERR_UNAVAILABLE, "S3: libcurl failed to initialize");
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(msg, ERR_NOMEM, "S3: out of memory");
	rc = find_creds(cfg, &s->creds, msg);
	if (rc) {
		free(s);
		return rc;
	}
	s->os.ops = &s3_ops;
	s->endpoint = strdup(cfg->endpoint);
	s->bucket = strdup(cfg->bucket);
	s->region = strdup(cfg->region && cfg->region[0] ? cfg->region : "us-east-1");
	s->path_style = cfg->path_style;
	s->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 5000;
	s->stall_ms = cfg->stall_ms > 0 ? cfg->stall_ms : 15000;
	s->request_timeout_ms = cfg->request_timeout_ms > 0 ? cfg->request_timeout_ms : 300000;
	s->retry.max_attempts = cfg->max_attempts > 0 ? cfg->max_attempts : 5;
	s->retry.base_ms = cfg->backoff_base_ms > 0 ? cfg->backoff_base_ms : 100;
	s->retry.max_ms = cfg->backoff_max_ms > 0 ? cfg->backoff_max_ms : 5000;
	s->part_size = cfg->part_size ? cfg->part_size : 8u << 20;
	s->multipart_min = cfg->multipart_min ? cfg->multipart_min : 16u << 20;
	if (s->multipart_min < s->part_size)
		s->multipart_min = s->part_size;
	s->parallel = cfg->parallel > 0 ? cfg->parallel : 4;
	snprintf(s->list_page, sizeof(s->list_page), "%d",
		 cfg->list_page > 0 && cfg->list_page <= OBJSTORE__LIST_MAX_KEYS ? cfg->list_page
										 : OBJSTORE__LIST_MAX_KEYS);
	pthread_mutex_init(&s->lock, NULL);
	if (!s->endpoint || !s->bucket || !s->region ||
	    (size_t)snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", s->region) >=
		    sizeof(s->sigv4)) {
		s3_close(&s->os);
		return err_set(msg, ERR_INVALID, "S3: region too long, or out of memory");
	}
	*out = &s->os;
	return 0;
}
