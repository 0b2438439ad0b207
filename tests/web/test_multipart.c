/* test_multipart.c - the multipart/form-data parser: well-formed, truncated, hostile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web/web_int.h"

#define PROFILE_DATA "\x1f\x8b\r\n--not-the-boundary\r\n\0bytes"
#define CURL_BODY                                                                   \
	"--------------------------d74496d66958873e\r\n"                               \
	"Content-Disposition: form-data; name=\"profile\"; filename=\"cpu.pb.gz\"\r\n" \
	"Content-Type: application/octet-stream\r\n"                                    \
	"\r\n"                                                                          \
	PROFILE_DATA "\r\n"                                                           \
	"--------------------------d74496d66958873e\r\n"                               \
	"Content-Disposition: form-data; name=\"sample_type_config\"\r\n"              \
	"\r\n"                                                                          \
	"{}\r\n"                                                                        \
	"--------------------------d74496d66958873e--\r\n"

static const char boundary[] = "------------------------d74496d66958873e";

static void test_boundary(void **state)
{
	char b[WEB_BOUNDARY_MAX + 1];
	struct err_msg msg;
	(void)state;

	assert_int_equal(web__multipart_boundary(
				 "multipart/form-data; boundary=------------------------d74496d66958873e",
				 b, sizeof(b), NULL), 0);
	assert_string_equal(b, boundary);
	assert_int_equal(web__multipart_boundary("multipart/form-data; charset=x; boundary=\"a b\"",
						 b, sizeof(b), NULL), 0);
	assert_string_equal(b, "a b");
	assert_int_equal(web__multipart_boundary("Multipart/Form-Data;boundary=xyz;foo=1", b,
						 sizeof(b), NULL), 0);
	assert_string_equal(b, "xyz");

	err_clear(&msg);
	assert_int_equal(web__multipart_boundary("multipart/form-data", b, sizeof(b), &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "boundary"));
	assert_int_equal(web__multipart_boundary("application/json; boundary=x", b, sizeof(b), NULL),
			 ERR_INVALID);
	assert_int_equal(web__multipart_boundary("multipart/form-data; boundary=", b, sizeof(b), NULL),
			 ERR_INVALID);
	assert_int_equal(web__multipart_boundary("multipart/form-data; boundary=\"abc", b, sizeof(b),
						 NULL), ERR_INVALID);
	assert_int_equal(web__multipart_boundary("multipart/form-data; boundary=a\x01" "b", b,
						 sizeof(b), NULL), ERR_INVALID);
	/* 71 characters: one past RFC 2046's maximum. */
	assert_int_equal(web__multipart_boundary(
				 "multipart/form-data; boundary="
				 "12345678901234567890123456789012345678901234567890123456789012345678901",
				 b, sizeof(b), NULL), ERR_INVALID);
}

static void test_curl_body(void **state)
{
	static const char body[] = CURL_BODY;
	struct web__part parts[4];
	const struct web__part *p;
	size_t n = 0;
	(void)state;

	assert_int_equal(web__multipart_parse(body, sizeof(body) - 1, boundary, parts, 4, &n, NULL), 0);
	assert_int_equal(n, 2);
	p = web__multipart_find(parts, n, "profile");
	assert_non_null(p);
	assert_int_equal(p->len, sizeof(PROFILE_DATA) - 1);
	assert_memory_equal(p->data, PROFILE_DATA, sizeof(PROFILE_DATA) - 1);
	assert_int_equal(p->filename_len, 9);
	assert_memory_equal(p->filename, "cpu.pb.gz", 9);
	p = web__multipart_find(parts, n, "sample_type_config");
	assert_non_null(p);
	assert_int_equal(p->len, 2);
	assert_null(p->filename);
	assert_null(web__multipart_find(parts, n, "jfr"));
}

static void test_preamble_lf_and_empty_part(void **state)
{
	static const char body[] =
		"this is a preamble\n"
		"--B\n"
		"content-disposition: form-data; name=empty\n"
		"\n"
		"\n"
		"--B\n"
		"Content-Disposition: form-data; name=\"profile\"\n"
		"\n"
		"xyz\n"
		"--B--";
	struct web__part parts[4];
	size_t n = 0;
	(void)state;

	assert_int_equal(web__multipart_parse(body, sizeof(body) - 1, "B", parts, 4, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_int_equal(parts[0].name_len, 5);
	assert_int_equal(parts[0].len, 0);
	assert_int_equal(parts[1].len, 3);
	assert_memory_equal(parts[1].data, "xyz", 3);
}

static void expect_invalid(const char *body, const char *boundary_, size_t max_parts,
			   const char *needle)
{
	struct web__part parts[4];
	struct err_msg msg;
	size_t n = 99;

	err_clear(&msg);
	assert_int_equal(web__multipart_parse(body, strlen(body), boundary_, parts, max_parts, &n,
					      &msg), ERR_INVALID);
	assert_int_equal(n, 99);
	if (!strstr(msg.text, needle))
		fail_msg("message \"%s\" lacks \"%s\"", msg.text, needle);
}

static void test_malformed(void **state)
{
	(void)state;
	expect_invalid("", "B", 4, "not found");
	expect_invalid("no delimiter here", "B", 4, "not found");
	expect_invalid("--B--\r\n", "B", 4, "no parts");
	expect_invalid("--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\ndata", "B", 4,
		       "missing closing boundary");
	expect_invalid("--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\ndata\r\n--B", "B", 4,
		       "missing closing boundary");
	expect_invalid("--B\r\nContent-Disposition: form-data; name=\"a\"", "B", 4, "truncated");
	expect_invalid("--B\r\nContent-Type: text/plain\r\n\r\nx\r\n--B--", "B", 4,
		       "without Content-Disposition");
	expect_invalid("--B\r\nContent-Disposition: attachment; name=a\r\n\r\nx\r\n--B--", "B", 4,
		       "not form-data");
	expect_invalid("--B\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--B--", "B", 4,
		       "unterminated quote");
	expect_invalid("--B\r\nContent-Disposition: form-data; filename=x\r\n\r\nx\r\n--B--", "B", 4,
		       "without a name");
	expect_invalid("--B\r\nno colon here\r\n\r\nx\r\n--B--", "B", 4, "malformed part header");
	expect_invalid("--Bjunk\r\n", "B", 4, "garbage after boundary");
	expect_invalid("--B\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n"
		       "--B\r\nContent-Disposition: form-data; name=b\r\n\r\n2\r\n--B--",
		       "B", 1, "more than 1 parts");
}

static void test_header_cap(void **state)
{
	size_t len = WEB_MULTIPART_MAX_HEADER + 200;
	char *body = malloc(len + 64);
	(void)state;

	assert_non_null(body);
	strcpy(body, "--B\r\nX-Long: ");
	memset(body + strlen(body), 'a', len);
	strcpy(body + len, "\r\n\r\nx\r\n--B--");
	expect_invalid(body, "B", 4, "longer than");
	free(body);
}

/* Every prefix of a valid body fails cleanly (or parses, for the full body). */
static void test_every_truncation(void **state)
{
	static const char body[] = CURL_BODY;
	size_t total = sizeof(body) - 1;
	(void)state;

	for (size_t cut = 0; cut < total; cut++) {
		struct web__part parts[4];
		char *copy = malloc(cut ? cut : 1);
		size_t n = 0;
		int rc;

		assert_non_null(copy);
		memcpy(copy, body, cut);
		rc = web__multipart_parse(copy, cut, boundary, parts, 4, &n, NULL);
		/* The close delimiter is complete once "--" follows the boundary. */
		if (cut < total - 2)
			assert_int_equal(rc, ERR_INVALID);
		free(copy);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boundary),
		cmocka_unit_test(test_curl_body),
		cmocka_unit_test(test_preamble_lf_and_empty_part),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_header_cap),
		cmocka_unit_test(test_every_truncation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
