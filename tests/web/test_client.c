/*
 * test_client.c - URL parsing and encoding, and the HTTP client against a
 * loopback peer thread that answers with fixed bytes (Content-Length,
 * chunked, garbage, silence).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "web/web_int.h"

static void test_url_parse(void **state)
{
	struct web_url u;
	struct err_msg msg;
	(void)state;

	assert_int_equal(web_url_parse("http://127.0.0.1:4040", &u, NULL), 0);
	assert_string_equal(u.host, "127.0.0.1");
	assert_int_equal(u.port, 4040);
	assert_string_equal(u.prefix, "");
	assert_int_equal(web_url_parse("http://example.com/", &u, NULL), 0);
	assert_string_equal(u.host, "example.com");
	assert_int_equal(u.port, 80);
	assert_string_equal(u.prefix, "");
	assert_int_equal(web_url_parse("HTTP://h:1/base/path//", &u, NULL), 0);
	assert_string_equal(u.prefix, "/base/path");
	assert_int_equal(u.port, 1);
	assert_int_equal(web_url_parse("http://[::1]:4040/x", &u, NULL), 0);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 4040);
	assert_string_equal(u.prefix, "/x");
	assert_int_equal(web_url_parse("localhost:8080", &u, NULL), 0);
	assert_string_equal(u.host, "localhost");
	assert_int_equal(u.port, 8080);

	err_clear(&msg);
	assert_int_equal(web_url_parse("https://h:443", &u, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "https is not supported"));
	static const char *bad[] = {
		"ftp://h", "http://", "http://:80", "http://h:", "http://h:0", "http://h:65536",
		"http://h:80x", "http://h:99999999999999999999", "http://u:p@h", "http://h/?q=1",
		"http://h#f", "http://[::1", "http://h]x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		u.port = 7;
		if (web_url_parse(bad[i], &u, NULL) != ERR_INVALID)
			fail_msg("accepted %s", bad[i]);
		assert_int_equal(u.port, 7);
	}
}

static void test_url_encode(void **state)
{
	struct buf b;
	(void)state;

	buf_init(&b, 1 << 30);
	assert_int_equal(web_url_encode(&b, "app.cpu{env=prod,x=a b}&~_-"), 0);
	assert_string_equal(b.data, "app.cpu%7Benv%3Dprod%2Cx%3Da%20b%7D%26~_-");
	buf_release(&b);
	buf_init(&b, 4);
	assert_int_equal(web_url_encode(&b, "{{"), ERR_TOO_LARGE);
	buf_release(&b);
}

/* ---- a loopback peer ---- */

struct peer {
	int lfd;
	int port;
	const char *reply; /* NULL: say nothing until the client gives up */
	size_t reply_len;
	char request[4096];
	size_t request_len;
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	int fd = accept(p->lfd, NULL, NULL);
	ssize_t n;

	if (fd < 0)
		return NULL;
	/* Read the head (and a small body) before answering. */
	while (p->request_len < sizeof(p->request) - 1 &&
	       (n = recv(fd, p->request + p->request_len, sizeof(p->request) - 1 - p->request_len,
			 0)) > 0) {
		p->request_len += (size_t)n;
		p->request[p->request_len] = '\0';
		if (strstr(p->request, "\r\n\r\nBODY"))
			break;
	}
	if (p->reply) {
		if (send(fd, p->reply, p->reply_len, MSG_NOSIGNAL) < 0)
			p->reply_len = 0;
	} else {
		char c;

		while (recv(fd, &c, 1, 0) > 0)
			;
	}
	close(fd);
	return NULL;
}

static void peer_start(struct peer *p, pthread_t *t, const char *reply, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);

	memset(p, 0, sizeof(*p));
	p->reply = reply;
	p->reply_len = len;
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(p->lfd >= 0);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(p->lfd, 1), 0);
	assert_int_equal(getsockname(p->lfd, (struct sockaddr *)&a, &alen), 0);
	p->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(t, NULL, peer_main, p), 0);
}

static int ask(struct peer *p, const char *reply, size_t len, int timeout_ms, int *status,
	       struct buf *body, struct err_msg *msg)
{
	struct web_header h = { "X-Scope-OrgID", "team-a" };
	struct web_request req = { .method = "POST", .path = "/ingest?name=x", .headers = &h,
				   .n_headers = 1, .body = "BODY", .len = 4,
				   .timeout_ms = timeout_ms, .max_response_bytes = 1024 };
	struct web_url u;
	pthread_t t;
	char url[64];
	int rc;

	peer_start(p, &t, reply, len);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/pre", p->port);
	assert_int_equal(web_url_parse(url, &u, NULL), 0);
	rc = web_client_request(&u, &req, status, body, msg);
	if (!reply)
		shutdown(p->lfd, SHUT_RDWR);
	pthread_join(t, NULL);
	close(p->lfd);
	return rc;
}

#define REPLY(s) s, sizeof(s) - 1

static void test_request_content_length(void **state)
{
	struct peer p;
	struct buf body;
	int status = 0;
	(void)state;

	buf_init(&body, 1 << 30);
	assert_int_equal(ask(&p, REPLY("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
			     5000, &status, &body, NULL), 0);
	assert_int_equal(status, 200);
	assert_string_equal(body.data, "hello");
	assert_non_null(strstr(p.request, "POST /pre/ingest?name=x HTTP/1.1\r\n"));
	assert_non_null(strstr(p.request, "\r\nX-Scope-OrgID: team-a\r\n"));
	assert_non_null(strstr(p.request, "\r\nContent-Length: 4\r\n"));
	assert_non_null(strstr(p.request, "\r\n\r\nBODY"));
	buf_release(&body);
}

static void test_request_chunked_and_errors(void **state)
{
	struct peer p;
	struct buf body;
	struct err_msg msg;
	int status = 0;
	(void)state;

	buf_init(&body, 1 << 30);
	assert_int_equal(ask(&p, REPLY("HTTP/1.1 413 Payload Too Large\r\n"
				       "Transfer-Encoding: chunked\r\n\r\n"
				       "4\r\ntoo \r\n5\r\nlarge\r\n0\r\n\r\n"),
			     5000, &status, &body, NULL), 0);
	assert_int_equal(status, 413);
	assert_string_equal(body.data, "too large");
	buf_reset(&body);

	err_clear(&msg);
	assert_int_equal(ask(&p, REPLY("SSH-2.0-OpenSSH\r\n\r\n"), 5000, &status, &body, &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "HTTP"));
	err_clear(&msg);
	assert_int_equal(ask(&p, REPLY("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort"),
			     5000, &status, &body, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "truncated"));
	err_clear(&msg);
	assert_int_equal(ask(&p, REPLY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				       "ffff\r\nab"), 5000, &status, &body, &msg), ERR_INVALID);
	err_clear(&msg);
	assert_int_equal(ask(&p, REPLY(""), 5000, &status, &body, &msg), ERR_UNAVAILABLE);
	err_clear(&msg);
	assert_int_equal(ask(&p, NULL, 0, 300, &status, &body, &msg), ERR_TIMEOUT);
	assert_non_null(strstr(msg.text, "timed out"));
	buf_release(&body);
}

static void test_response_cap(void **state)
{
	static char big[4096];
	struct peer p;
	struct buf body;
	struct err_msg msg;
	int status = 0, n;
	(void)state;

	n = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n");
	memset(big + n, 'x', 3000);
	buf_init(&body, 1 << 30);
	err_clear(&msg);
	/* max_response_bytes is 1024 (plus head room); 3000 bytes must fail. */
	assert_int_equal(ask(&p, big, (size_t)n + 3000, 5000, &status, &body, &msg), ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "larger than 1024"));
	assert_int_equal(body.len, 0);
	buf_release(&body);
}

static void test_connect_refused(void **state)
{
	struct web_url u;
	struct web_request req = { .method = "GET", .path = "/", .timeout_ms = 2000 };
	struct buf body;
	struct err_msg msg;
	int status = 0, fd, port;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	char url[64];
	(void)state;

	/* A port that was just free: bind, read it, close. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	port = ntohs(a.sin_port);
	close(fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	assert_int_equal(web_url_parse(url, &u, NULL), 0);
	buf_init(&body, 1 << 30);
	err_clear(&msg);
	assert_int_equal(web_client_request(&u, &req, &status, &body, &msg), ERR_UNAVAILABLE);
	assert_non_null(strstr(msg.text, "cannot connect"));
	buf_release(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_parse),
		cmocka_unit_test(test_url_encode),
		cmocka_unit_test(test_request_content_length),
		cmocka_unit_test(test_request_chunked_and_errors),
		cmocka_unit_test(test_response_cap),
		cmocka_unit_test(test_connect_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
