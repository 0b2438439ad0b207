/*
 * test_s3retry.c - the S3 backend's retries end to end: a loopback HTTP
 * server answers what a real S3 answers in the cases RGW cannot be made
 * to produce on demand (400 RequestTimeout after a slow upload, an
 * InternalError inside the 200 of CompleteMultipartUpload), and the
 * client must retry them, give up on what is final, and count each
 * attempt in objstore_stats().
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "objstore/objstore.h"

#define REQ_HEAD_MAX 16384

/*
 * The server's script: for each kind of request, how many attempts are
 * answered with `fail_status`/`fail_code` before the real answer.
 */
struct script {
	const char *fail_code;  /* S3 <Code> of the injected failures */
	long fail_status;
	int put_fails, complete_fails;
	/* What the server saw. */
	int puts, parts, completes, initiates, aborts;
	size_t body_bytes;
};

/* The scripted server and the S3 client pointed at it. */
struct server {
	int fd, port;
	pthread_t thread;
	struct script *sc;
	char url[64];
	struct objstore *os;
};

static int read_request(int c, char *head, size_t *body_len)
{
	size_t n = 0;
	char *end = NULL, *cl;

	while (!end) {
		ssize_t k;

		if (n + 1 >= REQ_HEAD_MAX)
			return -1;
		k = read(c, head + n, REQ_HEAD_MAX - 1 - n);
		if (k <= 0)
			return -1;
		n += (size_t)k;
		head[n] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	cl = strcasestr(head, "\r\ncontent-length:");
	*body_len = cl ? strtoull(cl + 17, NULL, 10) : 0;
	if (strcasestr(head, "\r\nexpect: 100-continue") &&
	    write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) != 25)
		return -1;
	/* What arrived past the headers is body already. */
	return (int)(n - (size_t)(end + 4 - head));
}

static void drain(int c, size_t left)
{
	char buf[65536];

	while (left) {
		ssize_t k = read(c, buf, left < sizeof(buf) ? left : sizeof(buf));

		if (k <= 0)
			return;
		left -= (size_t)k;
	}
}

static void answer(int c, long status, const char *extra, const char *body)
{
	char out[1024];
	int n = snprintf(out, sizeof(out),
			 "HTTP/1.1 %ld X\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n%s",
			 status, strlen(body), extra, body);

	if (write(c, out, (size_t)n) != n)
		fprintf(stderr, "test server: short write\n");
}

static void error_answer(int c, long status, const char *code)
{
	char body[256];

	snprintf(body, sizeof(body), "<?xml version=\"1.0\"?><Error><Code>%s</Code>"
		 "<Message>injected</Message></Error>", code);
	answer(c, status, "", body);
}

/* One connection, one request, one answer, by the script. */
static void serve_one(struct script *sc, int c)
{
	char head[REQ_HEAD_MAX];
	size_t body_len = 0;
	int early = read_request(c, head, &body_len);

	if (early < 0)
		return;
	drain(c, body_len - (size_t)early);
	sc->body_bytes += body_len;
	if (!strncmp(head, "PUT ", 4) && strstr(head, "partNumber=")) {
		sc->parts++;
		answer(c, 200, "ETag: \"p\"\r\n", "");
	} else if (!strncmp(head, "PUT ", 4)) {
		if (sc->puts++ < sc->put_fails)
			error_answer(c, sc->fail_status, sc->fail_code);
		else
			answer(c, 200, "ETag: \"e\"\r\n", "");
	} else if (!strncmp(head, "POST ", 5) && strstr(head, "uploads=")) {
		sc->initiates++;
		answer(c, 200, "", "<InitiateMultipartUploadResult><UploadId>u1</UploadId>"
				   "</InitiateMultipartUploadResult>");
	} else if (!strncmp(head, "POST ", 5)) {
		/* S3 may fail a completion after its 200: the <Error> is the body. */
		if (sc->completes++ < sc->complete_fails)
			error_answer(c, 200, sc->fail_code);
		else
			answer(c, 200, "", "<CompleteMultipartUploadResult><ETag>\"m-2\"</ETag>"
					   "</CompleteMultipartUploadResult>");
	} else if (!strncmp(head, "DELETE ", 7)) {
		sc->aborts++;
		answer(c, 204, "", "");
	} else {
		answer(c, 404, "", "");
	}
}

static void *serve(void *arg)
{
	struct server *sv = arg;
	int c;

	while ((c = accept(sv->fd, NULL, NULL)) >= 0) {
		serve_one(sv->sc, c);
		close(c);
	}
	return NULL;
}

/* Starts the server of the script `sc` and opens sv->os, a client of it. */
static struct objstore *server_start(struct server *sv, struct script *sc)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	struct objstore_s3_config c = {
		.bucket = "b", .path_style = 1, .access_key = "AK", .secret_key = "SK",
		.max_attempts = 3, .backoff_base_ms = 1, .backoff_max_ms = 2,
		.part_size = OBJSTORE_PART_MIN, .multipart_min = OBJSTORE_PART_MIN,
		.parallel = 1,
	};
	struct err_msg msg = {""};

	sv->sc = sc;
	sv->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(sv->fd >= 0);
	assert_int_equal(bind(sv->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(sv->fd, 16), 0);
	assert_int_equal(getsockname(sv->fd, (struct sockaddr *)&a, &len), 0);
	sv->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&sv->thread, NULL, serve, sv), 0);
	snprintf(sv->url, sizeof(sv->url), "http://127.0.0.1:%d", sv->port);
	c.endpoint = sv->url;
	sv->os = NULL;
	assert_int_equal(objstore_open_s3(&c, &sv->os, &msg), 0);
	return sv->os;
}

static void server_stop(struct server *sv)
{
	objstore_close(sv->os);
	shutdown(sv->fd, SHUT_RDWR);
	close(sv->fd);
	pthread_join(sv->thread, NULL);
}

/* 400 RequestTimeout (S3 closed a slow upload) is retried, body and all. */
static void request_timeout_retried(void **state)
{
	struct script sc = {.fail_code = "RequestTimeout", .fail_status = 400, .put_fails = 2};
	struct server sv;
	struct err_msg msg = {""};
	struct objstore_stats st;
	struct objstore *os = server_start(&sv, &sc);

	(void)state;
	assert_int_equal(objstore_put(os, "k", "0123456789", 10, 0, &msg), 0);
	objstore_stats(os, &st);
	assert_int_equal(sc.puts, 3);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_ERROR], 2);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_OK], 1);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].retries, 2);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].bytes_out, 30); /* each attempt sent it all */
	assert_int_equal(st.failures, 0);

	/* Past max_attempts it fails, naming the code. */
	sc.puts = 0;
	sc.put_fails = 3;
	err_clear(&msg);
	assert_int_equal(objstore_put(os, "k", "x", 1, 0, &msg), ERR_UNAVAILABLE);
	assert_non_null(strstr(msg.text, "HTTP 400 RequestTimeout"));
	assert_int_equal(sc.puts, 3);
	objstore_stats(os, &st);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_ERROR], 5);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].retries, 4);
	assert_int_equal(st.failures, 1);
	server_stop(&sv);
}

/* Any other 400 is final: one attempt. */
static void bad_request_final(void **state)
{
	struct script sc = {.fail_code = "BadDigest", .fail_status = 400, .put_fails = 5};
	struct server sv;
	struct err_msg msg = {""};
	struct objstore_stats st;
	struct objstore *os = server_start(&sv, &sc);

	(void)state;
	assert_int_equal(objstore_put(os, "k", "x", 1, 0, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "BadDigest"));
	assert_int_equal(sc.puts, 1);
	objstore_stats(os, &st);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_ERROR], 1);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].retries, 0);
	server_stop(&sv);
}

/* An InternalError inside CompleteMultipartUpload's 200 is retried. */
static void complete_error_retried(void **state)
{
	struct script sc = {.fail_code = "InternalError", .complete_fails = 1};
	struct server sv;
	struct err_msg msg = {""};
	struct objstore_stats st;
	size_t n = OBJSTORE_PART_MIN + 100;
	char *data = calloc(1, n);
	struct objstore *os = server_start(&sv, &sc);

	(void)state;
	assert_non_null(data);
	assert_int_equal(objstore_put(os, "big", data, n, 0, &msg), 0);
	assert_int_equal(sc.initiates, 1);
	assert_int_equal(sc.parts, 2);
	assert_int_equal(sc.completes, 2);
	assert_int_equal(sc.aborts, 0);
	objstore_stats(os, &st);
	assert_int_equal(st.op[OBJSTORE_OP_PART].requests[OBJSTORE_RES_OK], 2);
	assert_int_equal(st.op[OBJSTORE_OP_PART].bytes_out, n);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_OK], 2);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_ERROR], 1);
	assert_int_equal(st.op[OBJSTORE_OP_PUT].retries, 1);

	/* Failing every time: the upload is aborted and the code named. */
	sc.completes = 0;
	sc.complete_fails = 99;
	err_clear(&msg);
	assert_int_equal(objstore_put(os, "big", data, n, 0, &msg), ERR_UNAVAILABLE);
	assert_non_null(strstr(msg.text, "InternalError"));
	assert_int_equal(sc.completes, 3);
	assert_int_equal(sc.aborts, 1);
	server_stop(&sv);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_timeout_retried),
		cmocka_unit_test(bad_request_final),
		cmocka_unit_test(complete_error_retried),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
