/*
 * test_http.c - the CLI's HTTP client (cli/http.c): server URL parsing and
 * encoding, and requests against a loopback peer thread that reads what the
 * client sent and answers with fixed bytes (Content-Length, chunked,
 * garbage, a truncated body, silence, nothing).  https is tested end to end
 * by tests/cli/https.sh.
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
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli/cli.h"

static void test_server_parse(void **state)
{
	struct cli_server s;
	struct err_msg msg;
	(void)state;

	assert_int_equal(cli_server_parse("http://127.0.0.1:4040", NULL, &s, NULL), 0);
	assert_string_equal(s.url, "http://127.0.0.1:4040");
	assert_null(s.cacert);
	assert_int_equal(cli_server_parse("http://example.com/", NULL, &s, NULL), 0);
	assert_string_equal(s.url, "http://example.com");
	assert_int_equal(cli_server_parse("HTTP://h:1/base/path//", NULL, &s, NULL), 0);
	assert_string_equal(s.url, "http://h:1/base/path");
	assert_int_equal(cli_server_parse("http://[::1]:4040/x", NULL, &s, NULL), 0);
	assert_string_equal(s.url, "http://[::1]:4040/x");
	assert_int_equal(cli_server_parse("localhost:8080", NULL, &s, NULL), 0);
	assert_string_equal(s.url, "http://localhost:8080");
	assert_int_equal(cli_server_parse("https://unhex.example.org", NULL, &s, NULL), 0);
	assert_string_equal(s.url, "https://unhex.example.org");
	assert_int_equal(cli_server_parse("HTTPS://h:8443/p/", "/dev/null", &s, NULL), 0);
	assert_string_equal(s.url, "https://h:8443/p");
	assert_string_equal(s.cacert, "/dev/null");

	err_clear(&msg);
	assert_int_equal(cli_server_parse("https://h", "/no/such/ca.pem", &s, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "--cacert /no/such/ca.pem"));
	err_clear(&msg);
	assert_int_equal(cli_server_parse("ftp://h", NULL, &s, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "only http:// and https://"));

	static const char *bad[] = {
		"ftp://h", "http://", "http://:80", "http://h:", "http://h:0", "http://h:65536",
		"http://h:80x", "http://h:99999999999999999999", "http://u:p@h", "http://u@h",
		"http://h/?q=1", "http://h#f", "http://[::1", "http://h]x", "file:///etc/passwd",
		"https://h/p?", "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(s.url, "untouched");
		if (cli_server_parse(bad[i], NULL, &s, NULL) != ERR_INVALID)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_string_equal(s.url, "untouched");
	}
}

static void test_url_encode(void **state)
{
	struct buf b;
	(void)state;

	buf_init(&b, 1024);
	assert_int_equal(cli_url_encode(&b, "app.cpu{env=prod,x=a b}&~_-"), 0);
	assert_string_equal(b.data, "app.cpu%7Benv%3Dprod%2Cx%3Da%20b%7D%26~_-");
	buf_release(&b);
	buf_init(&b, 4);
	assert_int_equal(cli_url_encode(&b, "{{"), ERR_TOO_LARGE);
	buf_release(&b);
}

/* ---- a loopback peer ---- */

#define REQUEST_MAX (1 << 20)

struct peer {
	int lfd;
	int port;
	const char *reply; /* NULL: say nothing until the client gives up */
	size_t reply_len;
	char *request;     /* what the client sent: head and body */
	size_t request_len;
};

/* Reads the head, then Content-Length body bytes (answering Expect: 100-continue). */
static void read_request(struct peer *p, int fd)
{
	const char *head_end = NULL, *cl;
	size_t want = 0;
	ssize_t n;

	while (p->request_len < REQUEST_MAX - 1) {
		if (head_end && p->request_len >= (size_t)(head_end - p->request) + 4 + want)
			return;
		n = recv(fd, p->request + p->request_len, REQUEST_MAX - 1 - p->request_len, 0);
		if (n <= 0)
			return;
		p->request_len += (size_t)n;
		p->request[p->request_len] = '\0';
		if (!head_end && (head_end = strstr(p->request, "\r\n\r\n"))) {
			cl = strstr(p->request, "Content-Length: ");
			want = cl && cl < head_end ? strtoul(cl + 16, NULL, 10) : 0;
			if (strstr(p->request, "Expect: 100-continue") &&
			    send(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL) < 0)
				return;
		}
	}
}

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	int fd = accept(p->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	read_request(p, fd);
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
	p->request = calloc(1, REQUEST_MAX);
	assert_non_null(p->request);
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(p->lfd >= 0);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(p->lfd, 1), 0);
	assert_int_equal(getsockname(p->lfd, (struct sockaddr *)&a, &alen), 0);
	p->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(t, NULL, peer_main, p), 0);
}

static void peer_free(struct peer *p)
{
	free(p->request);
	p->request = NULL;
}

/* Sends `req` (POST "BODY" by default) to a fresh peer answering `reply`. */
static int ask_req(struct peer *p, const struct cli_request *req, const char *reply, size_t len,
		   int *status, struct buf *body, struct err_msg *msg)
{
	struct cli_server s;
	struct cli_http *h;
	pthread_t t;
	char url[64];
	int rc;

	peer_start(p, &t, reply, len);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/pre", p->port);
	assert_int_equal(cli_server_parse(url, NULL, &s, NULL), 0);
	assert_int_equal(cli_http_open(&s, &h, NULL), 0);
	rc = cli_http_request(h, req, status, body, msg);
	cli_http_close(h);
	if (!reply)
		shutdown(p->lfd, SHUT_RDWR);
	pthread_join(t, NULL);
	close(p->lfd);
	return rc;
}

static int ask(struct peer *p, const char *reply, size_t len, int timeout_ms, int *status,
	       struct buf *body, struct err_msg *msg)
{
	struct cli_request req = { .method = "POST", .path = "/ingest?name=x", .tenant = "team-a",
				   .body = "BODY", .len = 4, .timeout_ms = timeout_ms };

	return ask_req(p, &req, reply, len, status, body, msg);
}

#define REPLY(s) s, sizeof(s) - 1

static void test_request_content_length(void **state)
{
	struct peer p;
	struct buf body;
	int status = 0;
	(void)state;

	buf_init(&body, 1024);
	assert_int_equal(ask(&p, REPLY("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
			     5000, &status, &body, NULL), 0);
	assert_int_equal(status, 200);
	assert_string_equal(body.data, "hello");
	assert_non_null(strstr(p.request, "POST /pre/ingest?name=x HTTP/1.1\r\n"));
	assert_non_null(strstr(p.request, "\r\nX-Scope-OrgID: team-a\r\n"));
	assert_non_null(strstr(p.request, "\r\nContent-Length: 4\r\n"));
	assert_non_null(strstr(p.request, "\r\nContent-Type: application/octet-stream\r\n"));
	assert_non_null(strstr(p.request, "\r\nUser-Agent: unhex/"));
	assert_null(strstr(p.request, "Authorization"));
	assert_non_null(strstr(p.request, "\r\n\r\nBODY"));
	peer_free(&p);
	buf_release(&body);
}

static void test_get_with_token(void **state)
{
	struct cli_request req = { .method = "GET", .path = "/api/v1/stats", .token = "s3cret",
				   .timeout_ms = 5000 };
	struct peer p;
	struct buf body;
	int status = 0;
	(void)state;

	buf_init(&body, 1024);
	assert_int_equal(ask_req(&p, &req, REPLY("HTTP/1.1 404 Not Found\r\n"
						 "Content-Length: 3\r\n\r\nno\n"),
				 &status, &body, NULL), 0);
	assert_int_equal(status, 404);
	assert_string_equal(body.data, "no\n");
	assert_non_null(strstr(p.request, "GET /pre/api/v1/stats HTTP/1.1\r\n"));
	assert_non_null(strstr(p.request, "\r\nAuthorization: Bearer s3cret\r\n"));
	assert_null(strstr(p.request, "X-Scope-OrgID"));
	assert_null(strstr(p.request, "Content-Type"));
	peer_free(&p);
	buf_release(&body);
}

static void on_progress(void *arg, uint64_t sent, uint64_t total)
{
	uint64_t *last = arg;

	assert_true(sent >= last[0]);
	assert_int_equal(total, last[1]);
	last[0] = sent;
}

/* A body streamed from a file, from its current position, with progress. */
static void test_body_from_file(void **state)
{
	enum { SKIP = 7, LEN = 300000 };
	uint64_t progress[2] = { 0, LEN };
	struct cli_request req = { .method = "POST", .path = "/api/v1/debuginfo/ab",
				   .content_type = "application/x-elf", .len = LEN,
				   .timeout_ms = 10000, .progress = on_progress,
				   .progress_arg = progress };
	FILE *f = tmpfile();
	struct peer p;
	struct buf body;
	const char *got;
	int status = 0;
	(void)state;

	assert_non_null(f);
	for (int i = 0; i < SKIP + LEN + 100; i++)
		fputc('a' + i % 26, f);
	assert_int_equal(fseek(f, SKIP, SEEK_SET), 0);
	req.body_file = f;
	buf_init(&body, 1024);
	assert_int_equal(ask_req(&p, &req, REPLY("HTTP/1.1 201 Created\r\n"
						 "Content-Length: 3\r\n\r\nok\n"),
				 &status, &body, NULL), 0);
	assert_int_equal(status, 201);
	assert_non_null(strstr(p.request, "\r\nContent-Length: 300000\r\n"));
	assert_non_null(strstr(p.request, "\r\nContent-Type: application/x-elf\r\n"));
	got = strstr(p.request, "\r\n\r\n") + 4;
	assert_int_equal(p.request_len - (size_t)(got - p.request), LEN);
	for (int i = 0; i < LEN; i++)
		if (got[i] != 'a' + (SKIP + i) % 26)
			fail_msg("body byte %d differs", i);
	assert_int_equal(progress[0], LEN);
	peer_free(&p);
	buf_release(&body);
	fclose(f);
}

static void test_request_chunked_and_errors(void **state)
{
	struct peer p;
	struct buf body;
	struct err_msg msg;
	int status = 0;
	(void)state;

	buf_init(&body, 1024);
	assert_int_equal(ask(&p, REPLY("HTTP/1.1 413 Payload Too Large\r\n"
				       "Transfer-Encoding: chunked\r\n\r\n"
				       "4\r\ntoo \r\n5\r\nlarge\r\n0\r\n\r\n"),
			     5000, &status, &body, NULL), 0);
	peer_free(&p);
	assert_int_equal(status, 413);
	assert_string_equal(body.data, "too large");
	buf_reset(&body);

	err_clear(&msg);
	assert_int_equal(ask(&p, REPLY("SSH-2.0-OpenSSH\r\n\r\n"), 5000, &status, &body, &msg),
			 ERR_INVALID);
	peer_free(&p);
	assert_non_null(strstr(msg.text, "HTTP"));
	err_clear(&msg);
	assert_int_equal(ask(&p, REPLY("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort"),
			     5000, &status, &body, &msg), ERR_INVALID);
	peer_free(&p);
	assert_non_null(strstr(msg.text, "truncated"));
	assert_int_equal(body.len, 0);
	err_clear(&msg);
	assert_int_equal(ask(&p, REPLY("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				       "ffff\r\nab"), 5000, &status, &body, &msg), ERR_INVALID);
	peer_free(&p);
	err_clear(&msg);
	assert_int_equal(ask(&p, REPLY(""), 5000, &status, &body, &msg), ERR_UNAVAILABLE);
	peer_free(&p);
	assert_non_null(strstr(msg.text, "without a response"));
	err_clear(&msg);
	assert_int_equal(ask(&p, NULL, 0, 300, &status, &body, &msg), ERR_TIMEOUT);
	peer_free(&p);
	assert_non_null(strstr(msg.text, "timed out"));
	assert_int_equal(body.len, 0);
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

	/* Declared past the cap: refused before the body is read. */
	n = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n");
	memset(big + n, 'x', 3000);
	buf_init(&body, 1024);
	err_clear(&msg);
	assert_int_equal(ask(&p, big, (size_t)n + 3000, 5000, &status, &body, &msg), ERR_TOO_LARGE);
	peer_free(&p);
	assert_non_null(strstr(msg.text, "larger than 1024"));
	assert_int_equal(body.len, 0);

	/* Chunked, so only the bytes tell: refused at the cap, body as it was. */
	n = snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		     "bb8\r\n");
	memset(big + n, 'y', 3000);
	memcpy(big + n + 3000, "\r\n0\r\n\r\n", 7);
	assert_int_equal(buf_puts(&body, "kept"), 0);
	err_clear(&msg);
	assert_int_equal(ask(&p, big, (size_t)n + 3007, 5000, &status, &body, &msg), ERR_TOO_LARGE);
	peer_free(&p);
	assert_non_null(strstr(msg.text, "larger than 1020"));
	assert_string_equal(body.data, "kept");
	buf_release(&body);
}

static void test_bad_header_value(void **state)
{
	struct cli_server s;
	struct cli_http *h;
	struct cli_request req = { .method = "GET", .path = "/", .tenant = "a\r\nX-Evil: 1",
				   .timeout_ms = 1000 };
	struct buf body;
	struct err_msg msg;
	int status = 0;
	(void)state;

	/* Refused before any connection: port 9 on loopback is never contacted. */
	assert_int_equal(cli_server_parse("http://127.0.0.1:9", NULL, &s, NULL), 0);
	assert_int_equal(cli_http_open(&s, &h, NULL), 0);
	buf_init(&body, 1024);
	err_clear(&msg);
	assert_int_equal(cli_http_request(h, &req, &status, &body, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "X-Scope-OrgID: must not contain line breaks"));
	cli_http_close(h);
	buf_release(&body);
}

static void test_connect_refused(void **state)
{
	struct cli_server s;
	struct cli_http *h;
	struct cli_request req = { .method = "GET", .path = "/", .timeout_ms = 2000 };
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
	assert_int_equal(cli_server_parse(url, NULL, &s, NULL), 0);
	assert_int_equal(cli_http_open(&s, &h, NULL), 0);
	buf_init(&body, 1024);
	err_clear(&msg);
	assert_int_equal(cli_http_request(h, &req, &status, &body, &msg), ERR_UNAVAILABLE);
	assert_non_null(strstr(msg.text, "cannot connect"));
	cli_http_close(h);
	buf_release(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_parse),
		cmocka_unit_test(test_url_encode),
		cmocka_unit_test(test_request_content_length),
		cmocka_unit_test(test_get_with_token),
		cmocka_unit_test(test_body_from_file),
		cmocka_unit_test(test_request_chunked_and_errors),
		cmocka_unit_test(test_response_cap),
		cmocka_unit_test(test_bad_header_value),
		cmocka_unit_test(test_connect_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
