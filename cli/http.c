/*
 * http.c - the CLI's requests to a server, over libcurl: http:// and
 * https:// server URLs, one easy handle per command so its connection is
 * kept alive between requests, bodies from memory or streamed from a file,
 * capped responses, and the token every request carries (from
 * $UNHEX_TOKEN_FILE or $UNHEX_TOKEN, never needed on a command line).
 * The CLI's libcurl (debuginfo/debuginfod.c has the server's own).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"

#ifndef UNHEX_VERSION
#define UNHEX_VERSION "unknown"
#endif

#define HEADER_MAX 8192

#define TOKEN_MAX 512

struct cli_http {
	CURL *curl;                   /* owned */
	struct cli_server srv;        /* copy */
	char errbuf[CURL_ERROR_SIZE]; /* libcurl's detail of the last failure */
	char token[TOKEN_MAX + 1];    /* from the environment; "" when none */
};

/*
 * The token of the environment: the first line of $UNHEX_TOKEN_FILE, else
 * $UNHEX_TOKEN.  ERR_INVALID with a message when the file cannot be read
 * or the token is empty or too long.
 */
static int env_token(char out[TOKEN_MAX + 1], struct err_msg *msg)
{
	const char *file = getenv("UNHEX_TOKEN_FILE"), *tok = getenv("UNHEX_TOKEN");
	char line[TOKEN_MAX + 2];
	size_t n;

	out[0] = '\0';
	if (file && file[0]) {
		FILE *f = fopen(file, "re");

		if (!f)
			return err_set(msg, ERR_INVALID, "UNHEX_TOKEN_FILE %s: %s", file, strerror(errno));
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
		tok = line;
	}
	if (!tok || !tok[0])
		return 0;
	n = strcspn(tok, "\r\n");
	if (n == 0 || n > TOKEN_MAX)
		return err_set(msg, ERR_INVALID, "the token of %s is empty or longer than %d bytes",
			       file && file[0] ? "UNHEX_TOKEN_FILE" : "UNHEX_TOKEN", TOKEN_MAX);
	memcpy(out, tok, n);
	out[n] = '\0';
	explicit_bzero(line, sizeof(line));
	return 0;
}

/* ---- server URLs ---------------------------------------------------------- */

/* Reads one part of a parsed URL into out; 0, or ERR_INVALID when absent. */
static int url_part(CURLU *u, CURLUPart what, char *out, size_t len)
{
	char *v = NULL;
	int rc = ERR_INVALID;

	if (curl_url_get(u, what, &v, 0) == CURLUE_OK && v && strlen(v) < len) {
		memcpy(out, v, strlen(v) + 1);
		rc = 0;
	}
	curl_free(v);
	return rc;
}

/* True when URL part `what` is present (user, query, fragment, ...). */
static int url_has(CURLU *u, CURLUPart what)
{
	char *v = NULL;
	int has = curl_url_get(u, what, &v, 0) == CURLUE_OK;

	curl_free(v);
	return has;
}

/* The checks libcurl's parser leaves to us: what a server URL may not have. */
static int check_parts(const char *url, CURLU *u, const char *authority, struct err_msg *msg)
{
	size_t alen = strcspn(authority, "/");

	if (url_has(u, CURLUPART_USER) || url_has(u, CURLUPART_PASSWORD))
		return err_set(msg, ERR_INVALID, "%s: credentials in URLs are not supported", url);
	if (url_has(u, CURLUPART_QUERY) || url_has(u, CURLUPART_FRAGMENT) ||
	    strpbrk(url, "?#"))
		return err_set(msg, ERR_INVALID, "%s: a server URL has no query or fragment", url);
	if (alen == 0 || authority[0] == ':')
		return err_set(msg, ERR_INVALID, "%s: missing host", url);
	/* libcurl reads "h:" as the default port; a user who typed ':' meant one. */
	if (authority[alen - 1] == ':')
		return err_set(msg, ERR_INVALID, "%s: empty port", url);
	return 0;
}

int cli_server_parse(const char *url, const char *cacert, struct cli_server *out,
		     struct err_msg *msg)
{
	struct cli_server s;
	char full[CLI_URL_MAX], scheme[16], host[300], port[16] = "", path[CLI_URL_MAX];
	const char *sep = strstr(url, "://");
	CURLU *u;
	CURLUcode uc;
	size_t n;
	int rc;

	memset(&s, 0, sizeof(s));
	if ((size_t)snprintf(full, sizeof(full), "%s%s", sep ? "" : "http://", url) >= sizeof(full))
		return err_set(msg, ERR_INVALID, "%.64s...: URL too long", url);
	if (sep && !((sep - url == 4 && strncasecmp(url, "http", 4) == 0) ||
		     (sep - url == 5 && strncasecmp(url, "https", 5) == 0)))
		return err_set(msg, ERR_INVALID, "%s: only http:// and https:// URLs are supported",
			       url);
	u = curl_url();
	if (!u)
		return err_set(msg, ERR_NOMEM, "out of memory");
	uc = curl_url_set(u, CURLUPART_URL, full, 0);
	if (uc != CURLUE_OK) {
		rc = err_set(msg, ERR_INVALID, "%s: %s", url, curl_url_strerror(uc));
		goto out;
	}
	rc = check_parts(url, u, strstr(full, "://") + 3, msg);
	if (rc)
		goto out;
	if (url_part(u, CURLUPART_SCHEME, scheme, sizeof(scheme)) ||
	    url_part(u, CURLUPART_HOST, host, sizeof(host)) ||
	    url_part(u, CURLUPART_PATH, path, sizeof(path))) {
		rc = err_set(msg, ERR_INVALID, "%s: missing or too long host or path", url);
		goto out;
	}
	url_part(u, CURLUPART_PORT, port, sizeof(port));
	if (strcmp(port, "0") == 0) {
		rc = err_set(msg, ERR_INVALID, "%s: port out of range", url);
		goto out;
	}
	n = strlen(path);
	while (n > 0 && path[n - 1] == '/')
		n--;
	if ((size_t)snprintf(s.url, sizeof(s.url), "%s://%s%s%s%.*s", scheme, host,
			     port[0] ? ":" : "", port, (int)n, path) >= sizeof(s.url)) {
		rc = err_set(msg, ERR_INVALID, "%.64s...: URL too long", url);
		goto out;
	}
	if (cacert && access(cacert, R_OK) != 0) {
		rc = err_set(msg, ERR_INVALID, "--cacert %s: %s", cacert, strerror(errno));
		goto out;
	}
	s.cacert = cacert;
	*out = s;
out:
	curl_url_cleanup(u);
	return rc;
}

int cli_url_encode(struct buf *out, const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	int rc;

	if (!e)
		return ERR_NOMEM;
	rc = buf_puts(out, e);
	curl_free(e);
	return rc;
}

int cli_add_param(struct buf *path, const char *key, const char *value)
{
	int rc;

	if (!value)
		return 0;
	rc = buf_printf(path, "%c%s=", path->data && strchr(path->data, '?') ? '&' : '?', key);
	return rc ? rc : cli_url_encode(path, value);
}

/* ---- connections ---------------------------------------------------------- */

int cli_http_open(const struct cli_server *srv, struct cli_http **out, struct err_msg *msg)
{
	struct cli_http *h;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return err_set(msg, ERR_UNAVAILABLE, "libcurl failed to initialize");
	h = calloc(1, sizeof(*h));
	if (h)
		h->curl = curl_easy_init();
	if (!h || !h->curl) {
		free(h);
		curl_global_cleanup();
		return err_set(msg, ERR_NOMEM, "out of memory for an HTTP client");
	}
	if (env_token(h->token, msg)) {
		curl_easy_cleanup(h->curl);
		free(h);
		curl_global_cleanup();
		return ERR_INVALID;
	}
	h->srv = *srv;
	*out = h;
	return 0;
}

void cli_http_close(struct cli_http *h)
{
	if (!h)
		return;
	curl_easy_cleanup(h->curl);
	explicit_bzero(h->token, sizeof(h->token));
	free(h);
	curl_global_cleanup();
}

/* ---- one request ---------------------------------------------------------- */

/* Where the response body goes: appended to `out` under its cap. */
struct sink {
	struct buf *out;
	int rc; /* why on_write refused bytes: ERR_TOO_LARGE or ERR_NOMEM */
};

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	int rc = buf_append(s->out, p, size * n);

	if (rc) {
		s->rc = rc;
		return 0;
	}
	return size * n;
}

/* A request body streamed from a file, from where it stood when the request began. */
struct source {
	FILE *f;
	off_t start;
	uint64_t len;
	uint64_t done;
};

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
	struct source *s = arg;
	size_t want = size * n, got;

	if (want > s->len - s->done)
		want = (size_t)(s->len - s->done);
	if (want == 0)
		return 0;
	got = fread(p, 1, want, s->f);
	if (got == 0)
		return CURL_READFUNC_ABORT; /* the file shrank or failed: never send short */
	s->done += got;
	return got;
}

/* libcurl rewinds the body when it must resend it on a fresh connection. */
static int on_seek(void *arg, curl_off_t offset, int origin)
{
	struct source *s = arg;

	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > s->len ||
	    fseeko(s->f, s->start + (off_t)offset, SEEK_SET) != 0)
		return CURL_SEEKFUNC_CANTSEEK;
	s->done = (uint64_t)offset;
	return CURL_SEEKFUNC_OK;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	const struct cli_request *req = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	req->progress(req->progress_arg, (uint64_t)ulnow, req->len);
	return 0;
}

/* Appends "Name: value" to the header list; a value with a line break is refused. */
static int add_header(struct curl_slist **list, const char *name, const char *value,
		      struct err_msg *msg)
{
	char line[HEADER_MAX];
	struct curl_slist *l;

	if (strpbrk(value, "\r\n"))
		return err_set(msg, ERR_INVALID, "%s: must not contain line breaks", name);
	if ((size_t)snprintf(line, sizeof(line), "%s: %s", name, value) >= sizeof(line))
		return err_set(msg, ERR_INVALID, "%s: longer than %d bytes", name, HEADER_MAX);
	l = curl_slist_append(*list, line);
	if (!l)
		return err_set(msg, ERR_NOMEM, "out of memory");
	*list = l;
	return 0;
}

static int build_headers(const struct cli_http *h, const struct cli_request *req,
			 struct curl_slist **list, struct err_msg *msg)
{
	const char *token = req->token ? req->token : h->token[0] ? h->token : NULL;
	int rc = 0;

	if (req->tenant)
		rc = add_header(list, "X-Scope-OrgID", req->tenant, msg);
	if (!rc && token) {
		char bearer[HEADER_MAX];

		snprintf(bearer, sizeof(bearer), "Bearer %s", token);
		rc = add_header(list, "Authorization", bearer, msg);
		explicit_bzero(bearer, sizeof(bearer));
	}
	/* Without a type of its own, a POST would be labelled a form by libcurl. */
	if (!rc && strcmp(req->method, "POST") == 0)
		rc = add_header(list, "Content-Type",
				req->content_type ? req->content_type : "application/octet-stream",
				msg);
	/*
	 * libcurl asks a large POST to wait for "100 Continue", which civetweb
	 * never sends: every upload would stall a second.  Without it, a server
	 * that refuses early (401, 413) still answers, and libcurl stops sending.
	 */
	if (!rc && strcmp(req->method, "POST") == 0) {
		struct curl_slist *l = curl_slist_append(*list, "Expect:");

		if (!l)
			return err_set(msg, ERR_NOMEM, "out of memory");
		*list = l;
	}
	return rc;
}

/* Turns a libcurl failure into an ERR_* code and a message for the user. */
static int failure(struct cli_http *h, CURLcode cc, const struct cli_request *req,
		   const struct sink *sink, size_t room, struct err_msg *msg)
{
	const char *why = h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc);
	const char *url = h->srv.url;

	switch (cc) {
	case CURLE_WRITE_ERROR:
		if (sink->rc == ERR_NOMEM)
			return err_set(msg, ERR_NOMEM, "out of memory for the response");
		/* fall through */
	case CURLE_FILESIZE_EXCEEDED:
		return err_set(msg, ERR_TOO_LARGE, "response larger than %zu bytes", room);
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
		return err_set(msg, ERR_UNAVAILABLE, "cannot connect to %s: %s", url, why);
	case CURLE_OPERATION_TIMEDOUT:
		return err_set(msg, ERR_TIMEOUT, "timed out after %d ms: %s", req->timeout_ms, why);
	case CURLE_GOT_NOTHING:
		return err_set(msg, ERR_UNAVAILABLE, "connection closed by %s without a response",
			       url);
	case CURLE_PARTIAL_FILE:
		return err_set(msg, ERR_INVALID, "response truncated: %s", why);
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_BAD_CONTENT_ENCODING:
		return err_set(msg, ERR_INVALID, "%s did not answer with HTTP: %s", url, why);
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_ISSUER_ERROR:
		return err_set(msg, ERR_UNAVAILABLE, "TLS with %s failed: %s", url, why);
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		return err_set(msg, ERR_UNAVAILABLE, "connection to %s failed: %s", url, why);
	case CURLE_ABORTED_BY_CALLBACK:
	case CURLE_READ_ERROR:
		return err_set(msg, ERR_IO, "reading the request body failed");
	case CURLE_OUT_OF_MEMORY:
		return err_set(msg, ERR_NOMEM, "out of memory");
	default:
		return err_set(msg, ERR_IO, "request to %s failed: %s", url, why);
	}
}

/* Sets the options of one request on the (reset) handle. */
static int setup(struct cli_http *h, const struct cli_request *req, const char *url,
		 struct curl_slist *headers, struct sink *sink, struct source *src)
{
	CURL *c = h->curl;
	curl_off_t room = (curl_off_t)(sink->out->max - sink->out->len);
	int bad = 0;

	bad |= curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_USERAGENT, "unhex/" UNHEX_VERSION) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_WRITEDATA, sink) != CURLE_OK;
	/* Fails before reading a body whose declared length is past the cap. */
	bad |= curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, room) != CURLE_OK;
	if (h->srv.cacert)
		bad |= curl_easy_setopt(c, CURLOPT_CAINFO, h->srv.cacert) != CURLE_OK;
	if (strcmp(req->method, "GET") == 0) {
		bad |= curl_easy_setopt(c, CURLOPT_HTTPGET, 1L) != CURLE_OK;
	} else {
		bad |= curl_easy_setopt(c, CURLOPT_POST, 1L) != CURLE_OK;
		bad |= curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len) !=
		       CURLE_OK;
		if (req->body_file) {
			bad |= curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read) != CURLE_OK;
			bad |= curl_easy_setopt(c, CURLOPT_READDATA, src) != CURLE_OK;
			bad |= curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek) != CURLE_OK;
			bad |= curl_easy_setopt(c, CURLOPT_SEEKDATA, src) != CURLE_OK;
		} else {
			bad |= curl_easy_setopt(c, CURLOPT_POSTFIELDS,
						req->body ? req->body : "") != CURLE_OK;
		}
	}
	if (req->progress) {
		bad |= curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L) != CURLE_OK;
		bad |= curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress) != CURLE_OK;
		bad |= curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)req) != CURLE_OK;
	}
	return bad ? ERR_IO : 0;
}

int cli_http_request(struct cli_http *h, const struct cli_request *req, int *status,
		     struct buf *resp, struct err_msg *msg)
{
	struct curl_slist *headers = NULL;
	struct sink sink = { resp, 0 };
	struct source src = { req->body_file, 0, req->len, 0 };
	size_t before = resp->len, room;
	struct buf url;
	CURLcode cc;
	long code = 0;
	int rc;

	assert(strcmp(req->method, "GET") == 0 || strcmp(req->method, "POST") == 0);
	assert(req->path && req->path[0] == '/');
	assert(req->timeout_ms > 0);
	assert(resp->max > resp->len);
	assert(!(req->body && req->body_file));
	room = resp->max - resp->len;
	buf_init(&url, CLI_URL_MAX + 64 * 1024);
	rc = buf_puts(&url, h->srv.url);
	if (!rc)
		rc = buf_puts(&url, req->path);
	if (rc) {
		rc = err_set(msg, ERR_INVALID, "request path too long");
		goto out;
	}
	rc = build_headers(h, req, &headers, msg);
	if (rc)
		goto out;
	if (req->body_file)
		src.start = ftello(req->body_file);
	curl_easy_reset(h->curl);
	h->errbuf[0] = '\0';
	if (setup(h, req, url.data, headers, &sink, &src)) {
		rc = err_set(msg, ERR_IO, "libcurl refused an option (%s)", curl_version());
		goto out;
	}
	cc = curl_easy_perform(h->curl);
	if (cc != CURLE_OK) {
		rc = failure(h, cc, req, &sink, room, msg);
		goto out;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
	*status = (int)code;
out:
	if (rc) {
		resp->len = before;
		if (resp->data)
			resp->data[before] = '\0';
	}
	curl_slist_free_all(headers);
	buf_release(&url);
	return rc;
}
