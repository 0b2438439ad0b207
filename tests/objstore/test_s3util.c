/* test_s3util.c - SigV4 encoding, URLs, the retry policy and the credentials file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "objstore/objstore_int.h"

static void encode(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 4096);
	assert_int_equal(objstore__uri_encode(&b, "blocks/t 1/a+b%=~._-Z9", 1), 0);
	assert_string_equal(b.data, "blocks/t%201/a%2Bb%25%3D~._-Z9");
	buf_reset(&b);
	assert_int_equal(objstore__uri_encode(&b, "a/b\xc3\xa9", 0), 0);
	assert_string_equal(b.data, "a%2Fb%C3%A9");
	buf_release(&b);
	/* The cap holds: three bytes per input byte at most. */
	buf_init(&b, 5);
	assert_int_equal(objstore__uri_encode(&b, "  ", 0), ERR_TOO_LARGE);
	buf_release(&b);
}

static void query(void **state)
{
	struct objstore__param p[] = {{"prefix", "a/b c"}, {"list-type", "2"},
				      {"continuation-token", "1/x+="}, {"max-keys", "1000"},
				      {"uploads", NULL}};
	struct buf b;

	(void)state;
	buf_init(&b, 4096);
	assert_int_equal(objstore__query(&b, p, 5), 0);
	assert_string_equal(b.data, "continuation-token=1%2Fx%2B%3D&list-type=2&max-keys=1000"
				    "&prefix=a%2Fb%20c&uploads=");
	buf_release(&b);
}

static void url(void **state)
{
	struct buf b;
	struct err_msg msg = {""};

	(void)state;
	buf_init(&b, 4096);
	assert_int_equal(objstore__url(&b, "http://127.0.0.1:7480", "bkt", 1, "a b/c", "x=1", &msg), 0);
	assert_string_equal(b.data, "http://127.0.0.1:7480/bkt/a%20b/c?x=1");
	buf_reset(&b);
	assert_int_equal(objstore__url(&b, "https://s3.eu-west-1.amazonaws.com/", "bkt", 0, "k", "", &msg), 0);
	assert_string_equal(b.data, "https://bkt.s3.eu-west-1.amazonaws.com/k");
	buf_reset(&b);
	assert_int_equal(objstore__url(&b, "http://h:1/base/", "bkt", 1, "", "list-type=2", &msg), 0);
	assert_string_equal(b.data, "http://h:1/base/bkt?list-type=2");
	buf_reset(&b);
	assert_int_equal(objstore__url(&b, "127.0.0.1:7480", "bkt", 1, "k", "", &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "no scheme"));
	assert_int_equal(objstore__url(&b, "http://", "bkt", 1, "k", "", NULL), ERR_INVALID);
	buf_release(&b);
}

static void retry_policy(void **state)
{
	struct objstore__retry p = {.max_attempts = 5, .base_ms = 100, .max_ms = 1000};

	(void)state;
	assert_true(objstore__retryable(CURLE_OK, 500, ""));
	assert_true(objstore__retryable(CURLE_OK, 503, "SlowDown"));
	assert_true(objstore__retryable(CURLE_OK, 429, NULL));
	assert_true(objstore__retryable(CURLE_COULDNT_CONNECT, 0, ""));
	assert_true(objstore__retryable(CURLE_OPERATION_TIMEDOUT, 0, ""));
	assert_true(objstore__retryable(CURLE_RECV_ERROR, 0, ""));
	assert_false(objstore__retryable(CURLE_OK, 200, ""));
	assert_false(objstore__retryable(CURLE_OK, 403, "AccessDenied"));
	assert_false(objstore__retryable(CURLE_OK, 404, "NoSuchKey"));
	assert_false(objstore__retryable(CURLE_OK, 412, "PreconditionFailed"));
	assert_false(objstore__retryable(CURLE_WRITE_ERROR, 200, ""));
	/* S3's transient codes, whatever their status. */
	assert_true(objstore__retryable(CURLE_OK, 400, "RequestTimeout"));
	assert_true(objstore__retryable(CURLE_OK, 200, "InternalError"));
	assert_true(objstore__retryable(CURLE_OK, 409, "ConditionalRequestConflict"));
	assert_false(objstore__retryable(CURLE_OK, 400, "BadDigest"));
	assert_false(objstore__retryable(CURLE_OK, 400, "requesttimeout"));
	assert_false(objstore__retryable(CURLE_OK, 403, "RequestTimeTooSkewed"));
	assert_false(objstore__retryable(CURLE_OK, 400, NULL));

	/* An attempt's outcome: try again while attempts are left, then fail. */
	assert_int_equal(objstore__outcome(CURLE_OK, 400, "RequestTimeout", 1, 3), 1);
	assert_int_equal(objstore__outcome(CURLE_OK, 400, "RequestTimeout", 2, 3), 1);
	assert_int_equal(objstore__outcome(CURLE_OK, 400, "RequestTimeout", 3, 3), ERR_UNAVAILABLE);
	assert_int_equal(objstore__outcome(CURLE_OK, 500, "InternalError", 1, 1), ERR_UNAVAILABLE);
	assert_int_equal(objstore__outcome(CURLE_OPERATION_TIMEDOUT, 0, "", 5, 5), ERR_TIMEOUT);
	assert_int_equal(objstore__outcome(CURLE_COULDNT_CONNECT, 0, "", 5, 5), ERR_UNAVAILABLE);
	/* CompleteMultipartUpload's 200 with an <Error>: transient or final. */
	assert_int_equal(objstore__outcome(CURLE_OK, 200, "InternalError", 1, 5), 1);
	assert_int_equal(objstore__outcome(CURLE_OK, 200, "InternalError", 5, 5), ERR_UNAVAILABLE);
	assert_int_equal(objstore__outcome(CURLE_OK, 200, "EntityTooSmall", 1, 5), ERR_UNAVAILABLE);
	/* Final answers by status. */
	assert_int_equal(objstore__outcome(CURLE_OK, 200, "", 1, 5), 0);
	assert_int_equal(objstore__outcome(CURLE_OK, 206, "", 2, 5), 0);
	assert_int_equal(objstore__outcome(CURLE_OK, 204, "", 1, 5), 0);
	assert_int_equal(objstore__outcome(CURLE_OK, 400, "BadDigest", 1, 5), ERR_INVALID);
	assert_int_equal(objstore__outcome(CURLE_OK, 401, "", 1, 5), ERR_UNAUTHENTICATED);
	assert_int_equal(objstore__outcome(CURLE_OK, 403, "SignatureDoesNotMatch", 1, 5),
			 ERR_PERMISSION);
	assert_int_equal(objstore__outcome(CURLE_OK, 404, "NoSuchKey", 1, 5), ERR_NOT_FOUND);
	assert_int_equal(objstore__outcome(CURLE_OK, 412, "PreconditionFailed", 1, 5), ERR_CONFLICT);
	assert_int_equal(objstore__outcome(CURLE_OK, 416, "InvalidRange", 1, 5), ERR_INVALID);
	assert_int_equal(objstore__outcome(CURLE_WRITE_ERROR, 200, "", 1, 5), ERR_UNAVAILABLE);
	/* Exponential, half fixed and half jitter, capped. */
	for (uint32_t rnd = 0; rnd < 1000; rnd += 37) {
		long d1 = objstore__backoff_ms(&p, 1, rnd), d2 = objstore__backoff_ms(&p, 2, rnd);
		long d4 = objstore__backoff_ms(&p, 4, rnd), d30 = objstore__backoff_ms(&p, 30, rnd);

		assert_true(d1 >= 50 && d1 <= 100);
		assert_true(d2 >= 100 && d2 <= 200);
		assert_true(d4 >= 400 && d4 <= 800);
		assert_true(d30 >= 500 && d30 <= 1000);
	}
	assert_int_not_equal(objstore__backoff_ms(&p, 3, 0), objstore__backoff_ms(&p, 3, 77));
}

static void credentials(void **state)
{
	const char *text = "# comment\n[default]\naws_access_key_id = AK1\naws_secret_access_key=SK1\n"
			   "\n[ prod ]\r\n; c\r\naws_access_key_id=AK2\r\naws_secret_access_key = SK2 \r\n"
			   "aws_session_token=TOK\r\n[empty]\naws_access_key_id=only\n";
	struct objstore__creds c;
	struct err_msg msg = {""};
	char big[600];

	(void)state;
	assert_int_equal(objstore__parse_credentials(text, strlen(text), "default", &c, &msg), 0);
	assert_string_equal(c.access_key, "AK1");
	assert_string_equal(c.secret_key, "SK1");
	assert_string_equal(c.session_token, "");
	assert_int_equal(objstore__parse_credentials(text, strlen(text), "prod", &c, &msg), 0);
	assert_string_equal(c.access_key, "AK2");
	assert_string_equal(c.secret_key, "SK2");
	assert_string_equal(c.session_token, "TOK");
	assert_int_equal(objstore__parse_credentials(text, strlen(text), "empty", &c, &msg),
			 ERR_NOT_FOUND);
	assert_int_equal(objstore__parse_credentials(text, strlen(text), "nope", &c, &msg),
			 ERR_NOT_FOUND);
	snprintf(big, sizeof(big), "[default]\naws_access_key_id=%0400d\n", 1);
	assert_int_equal(objstore__parse_credentials(big, strlen(big), "default", &c, &msg),
			 ERR_INVALID);
	assert_int_equal(objstore__parse_credentials("[default", 8, "default", &c, &msg), ERR_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(encode),       cmocka_unit_test(query),
		cmocka_unit_test(url),          cmocka_unit_test(retry_policy),
		cmocka_unit_test(credentials),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
