/*
 * client.c - a minimal blocking HTTP/1.1 client for the command line:
 * URL parsing, one request per connection ("Connection: close"), a deadline
 * over connect, send and receive, and a cap on the response size.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "web/web_int.h"

#ifndef UNHEX_VERSION
#define UNHEX_VERSION "unknown"
#endif

int web_url_parse(const char *url, struct web_url *out, struct err_msg *msg)
{
	struct web_url u;
	const char *p = url, *h, *hend, *path;
	size_t n;

	memset(&u, 0, sizeof(u));
	if (strncasecmp(p, "https://", 8) == 0)
		return err_set(msg, ERR_INVALID,
			       "%s: https is not supported; use http:// (put TLS in a proxy)", url);
	if (strncasecmp(p, "http://", 7) == 0)
		p += 7;
	else if (strstr(p, "://"))
		return err_set(msg, ERR_INVALID, "%s: only http:// URLs are supported", url);
	if (strpbrk(p, "?#"))
		return err_set(msg, ERR_INVALID, "%s: a server URL has no query or fragment", url);
	path = strchr(p, '/');
	if (!path)
		path = p + strlen(p);
	if (memchr(p, '@', (size_t)(path - p)))
		return err_set(msg, ERR_INVALID, "%s: credentials in URLs are not supported", url);
	if (*p == '[') {
		h = p + 1;
		hend = memchr(h, ']', (size_t)(path - h));
		if (!hend)
			return err_set(msg, ERR_INVALID, "%s: unterminated [IPv6] address", url);
		p = hend + 1;
	} else {
		h = p;
		for (hend = h; hend < path && *hend != ':'; hend++)
			;
		p = hend;
	}
	n = (size_t)(hend - h);
	if (n == 0 || n >= sizeof(u.host))
		return err_set(msg, ERR_INVALID, "%s: missing or too long host", url);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)h[i];

		if (!isalnum(c) && !strchr(".-_:%", c))
			return err_set(msg, ERR_INVALID, "%s: invalid character in host", url);
	}
	memcpy(u.host, h, n);
	u.port = 80;
	if (p < path && *p == ':') {
		long port = 0;

		if (++p == path)
			return err_set(msg, ERR_INVALID, "%s: empty port", url);
		for (; p < path; p++) {
			if (*p < '0' || *p > '9' || port > 65535)
				return err_set(msg, ERR_INVALID, "%s: bad port", url);
			port = port * 10 + (*p - '0');
		}
		if (port < 1 || port > 65535)
			return err_set(msg, ERR_INVALID, "%s: port out of range", url);
		u.port = (int)port;
	} else if (p != path) {
		return err_set(msg, ERR_INVALID, "%s: malformed host", url);
	}
	n = strlen(path);
	while (n > 0 && path[n - 1] == '/')
		n--;
	if (n >= sizeof(u.prefix))
		return err_set(msg, ERR_INVALID, "%s: path prefix too long", url);
	memcpy(u.prefix, path, n);
	*out = u;
	return 0;
}

int web_url_encode(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int rc;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			rc = buf_putc(out, (char)c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			rc = buf_append(out, e, 3);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int remaining_ms(int64_t deadline)
{
	int64_t left = (deadline - clock_mono_ns()) / 1000000;

	return left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* Waits for `events` on fd until the deadline; 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int ms = remaining_ms(deadline);
		int n;

		if (ms == 0)
			return 0;
		n = poll(&pfd, 1, ms);
		if (n > 0)
			return 1;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

static int connect_one(const struct addrinfo *ai, int64_t deadline)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			ai->ai_protocol);
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int open_conn(const struct web_url *u, int64_t deadline, int *fd_out,
		     struct err_msg *msg)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	char port[16];
	int gai, fd = -1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(port, sizeof(port), "%d", u->port);
	gai = getaddrinfo(u->host, port, &hints, &res);
	if (gai)
		return err_set(msg, ERR_UNAVAILABLE, "%s: %s", u->host, gai_strerror(gai));
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = connect_one(ai, deadline);
	freeaddrinfo(res);
	if (fd < 0)
		return err_set(msg, remaining_ms(deadline) ? ERR_UNAVAILABLE : ERR_TIMEOUT,
			       "cannot connect to %s:%d", u->host, u->port);
	*fd_out = fd;
	return 0;
}

/* Sends all of [p, p+n); returns 0, ERR_TIMEOUT or ERR_IO (peer closed). */
static int send_all(int fd, const char *p, size_t n, int64_t deadline)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int r = wait_fd(fd, POLLOUT, deadline);

			if (r == 0)
				return ERR_TIMEOUT;
			if (r < 0)
				return ERR_IO;
			continue;
		}
		return ERR_IO;
	}
	return 0;
}

/* Reads until EOF into raw (capped); ERR_TIMEOUT, ERR_TOO_LARGE or ERR_IO. */
static int recv_all(int fd, struct buf *raw, int64_t deadline)
{
	for (;;) {
		size_t room = raw->max - raw->len;
		ssize_t r;

		if (room == 0)
			return ERR_TOO_LARGE;
		if (room > 16384)
			room = 16384;
		if (buf_reserve(raw, room))
			return ERR_NOMEM;
		r = recv(fd, raw->data + raw->len, room, 0);
		if (r > 0) {
			raw->len += (size_t)r;
			raw->data[raw->len] = '\0';
			continue;
		}
		if (r == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int w = wait_fd(fd, POLLIN, deadline);

			if (w == 0)
				return ERR_TIMEOUT;
			if (w < 0)
				return ERR_IO;
			continue;
		}
		return raw->len ? 0 : ERR_IO;
	}
}

/* Finds header `name` in the header block [h, end); value and its length. */
static const char *find_header(const char *h, const char *end, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name);

	while (h < end) {
		const char *eol = memmem(h, (size_t)(end - h), "\r\n", 2);

		if (!eol)
			eol = end;
		if ((size_t)(eol - h) > nlen && strncasecmp(h, name, nlen) == 0 && h[nlen] == ':') {
			const char *v = h + nlen + 1;

			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			*vlen = (size_t)(eol - v);
			return v;
		}
		h = eol + 2;
	}
	return NULL;
}

/* Decodes a chunked body [p, end) into out. */
static int dechunk(const char *p, const char *end, struct buf *out)
{
	for (;;) {
		char *stop;
		unsigned long long n;
		const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);

		if (!eol)
			return ERR_INVALID;
		n = strtoull(p, &stop, 16);
		if (stop == p)
			return ERR_INVALID;
		p = eol + 2;
		if (n == 0)
			return 0;
		if (n > (unsigned long long)(end - p))
			return ERR_INVALID;
		if (buf_append(out, p, (size_t)n))
			return ERR_TOO_LARGE;
		p += n;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			return ERR_INVALID;
		p += 2;
	}
}

static int parse_response(const struct buf *raw, size_t max, int *status, struct buf *body,
			  struct err_msg *msg)
{
	size_t before = body->len;

	const char *hend, *v, *b;
	size_t vlen = 0, blen;

	if (raw->len < 12 || strncmp(raw->data, "HTTP/1.", 7) != 0 || raw->data[8] != ' ')
		return err_set(msg, ERR_INVALID, "the server did not answer with HTTP/1.x");
	hend = memmem(raw->data, raw->len, "\r\n\r\n", 4);
	if (!hend)
		return err_set(msg, ERR_INVALID, "truncated HTTP response headers");
	if (raw->data[9] < '1' || raw->data[9] > '5' || raw->data[10] < '0' ||
	    raw->data[10] > '9' || raw->data[11] < '0' || raw->data[11] > '9')
		return err_set(msg, ERR_INVALID, "malformed HTTP status line");
	b = hend + 4;
	blen = (size_t)(raw->data + raw->len - b);
	v = find_header(raw->data, hend + 2, "Transfer-Encoding", &vlen);
	if (v && vlen >= 7 && strncasecmp(v, "chunked", 7) == 0) {
		if (dechunk(b, b + blen, body))
			return err_set(msg, ERR_INVALID, "malformed chunked response");
	} else {
		v = find_header(raw->data, hend + 2, "Content-Length", &vlen);
		if (v) {
			unsigned long long cl = strtoull(v, NULL, 10);

			if (cl > blen)
				return err_set(msg, ERR_INVALID, "response truncated: %zu of %llu bytes",
					       blen, cl);
			blen = (size_t)cl;
		}
		if (blen > max || buf_append(body, b, blen))
			return err_set(msg, ERR_TOO_LARGE, "response larger than %zu bytes", max);
	}
	if (body->len - before > max) {
		body->len = before;
		if (body->data)
			body->data[before] = '\0';
		return err_set(msg, ERR_TOO_LARGE, "response larger than %zu bytes", max);
	}
	*status = (raw->data[9] - '0') * 100 + (raw->data[10] - '0') * 10 + (raw->data[11] - '0');
	return 0;
}

static int build_head(const struct web_url *u, const struct web_request *req, struct buf *h)
{
	int v6 = strchr(u->host, ':') != NULL;
	int rc = buf_printf(h,
			    "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%d\r\nUser-Agent: unhex/%s\r\n"
			    "Connection: close\r\nContent-Length: %zu\r\n",
			    req->method, u->prefix, req->path, v6 ? "[" : "", u->host,
			    v6 ? "]" : "", u->port, UNHEX_VERSION, req->body ? req->len : 0);

	for (size_t i = 0; !rc && i < req->n_headers; i++)
		rc = buf_printf(h, "%s: %s\r\n", req->headers[i].name, req->headers[i].value);
	if (!rc)
		rc = buf_puts(h, "\r\n");
	return rc;
}

int web_client_request(const struct web_url *url, const struct web_request *req,
		       int *status, struct buf *body, struct err_msg *msg)
{
	int timeout = req->timeout_ms > 0 ? req->timeout_ms : 60000;
	size_t max = req->max_response_bytes ? req->max_response_bytes : 64u << 20;
	int64_t deadline = clock_mono_ns() + (int64_t)timeout * 1000000;
	struct buf head, raw;
	int fd = -1, rc, send_rc;

	buf_init(&head, 1 << 20);
	buf_init(&raw, max + 16384);
	rc = build_head(url, req, &head);
	if (rc) {
		rc = err_set(msg, rc, "request headers too large");
		goto out;
	}
	rc = open_conn(url, deadline, &fd, msg);
	if (rc)
		goto out;
	send_rc = send_all(fd, head.data, head.len, deadline);
	if (!send_rc && req->body && req->len)
		send_rc = send_all(fd, req->body, req->len, deadline);
	if (send_rc == ERR_TIMEOUT) {
		rc = err_set(msg, ERR_TIMEOUT, "timed out after %d ms sending the request", timeout);
		goto out;
	}
	/* A server may answer early (413) and close: read what it said anyway. */
	rc = recv_all(fd, &raw, deadline);
	if (rc == ERR_TIMEOUT) {
		rc = err_set(msg, rc, "timed out after %d ms waiting for the response", timeout);
		goto out;
	}
	if (rc == ERR_TOO_LARGE) {
		rc = err_set(msg, rc, "response larger than %zu bytes", max);
		goto out;
	}
	if (raw.len == 0) {
		rc = err_set(msg, ERR_UNAVAILABLE, "connection closed by %s:%d without a response",
			     url->host, url->port);
		goto out;
	}
	rc = parse_response(&raw, max, status, body, msg);
out:
	if (fd >= 0)
		close(fd);
	buf_release(&head);
	buf_release(&raw);
	return rc;
}
