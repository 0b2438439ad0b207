/*
 * rgw_check.c - the S3 backend against a real S3 server (the Ceph RGW of
 * tests/integration/objstore_rgw.sh): every operation of objstore.h.
 *
 *   rgw_check ops    every operation must work (RGW up)
 *   rgw_check down   RGW paused or stopped: a request fails with
 *                    ERR_TIMEOUT or ERR_UNAVAILABLE after its retries
 *
 * Environment: S3_ENDPOINT, S3_BUCKET, AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY (the RGW user), S3_VHOST_ENDPOINT (optional: the
 * same server by a name under which bucket.name resolves to it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "objstore/objstore.h"

static struct objstore_s3_config config(void)
{
	struct objstore_s3_config c = {
		.endpoint = getenv("S3_ENDPOINT"),
		.bucket = getenv("S3_BUCKET"),
		.region = "us-east-1",
		.path_style = 1,
		.part_size = OBJSTORE_PART_MIN,
		.multipart_min = 6u << 20,
		.max_attempts = 3,
		.backoff_base_ms = 50,
		.backoff_max_ms = 400,
		.stall_ms = 2000,
		.connect_timeout_ms = 2000,
	};
	return c;
}

static struct objstore *open_s3(const struct objstore_s3_config *c)
{
	struct objstore *os = NULL;
	struct err_msg msg = {""};
	int rc = objstore_open_s3(c, &os, &msg);

	if (rc)
		fail_msg("open: %s", msg.text);
	return os;
}

static void fill(char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		p[i] = (char)(x >> 24);
	}
}

/* Final failures of an operation: its failed requests that were not retried. */
static uint64_t failed_calls(const struct objstore_op_stats *o)
{
	return o->requests[OBJSTORE_RES_ERROR] - o->retries;
}

/* What put_get_head_delete did, request by request (a fresh handle). */
static void check_counts(struct objstore *os, size_t put_bytes)
{
	struct objstore_stats st;
	const struct objstore_op_stats *o = st.op;

	objstore_stats(os, &st);
	assert_int_equal(o[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_OK], 1);
	assert_int_equal(failed_calls(&o[OBJSTORE_OP_PUT]), 0);
	assert_true(o[OBJSTORE_OP_PUT].bytes_out >= put_bytes);
	if (!o[OBJSTORE_OP_PUT].retries)
		assert_int_equal(o[OBJSTORE_OP_PUT].bytes_out, put_bytes);
	/* Whole GETs: one read, one over the cap, one of the deleted key. */
	assert_int_equal(o[OBJSTORE_OP_GET].requests[OBJSTORE_RES_OK], 1);
	assert_int_equal(o[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_FOUND], 1);
	assert_int_equal(failed_calls(&o[OBJSTORE_OP_GET]), 1);
	assert_true(o[OBJSTORE_OP_GET].bytes_in >= put_bytes);
	/* Four ranges read, one past the end (416). */
	assert_int_equal(o[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_OK], 4);
	assert_int_equal(failed_calls(&o[OBJSTORE_OP_RANGE]), 1);
	assert_true(o[OBJSTORE_OP_RANGE].bytes_in >= 50 + 10 + 16 + put_bytes);
	assert_int_equal(o[OBJSTORE_OP_HEAD].requests[OBJSTORE_RES_OK], 1);
	assert_int_equal(o[OBJSTORE_OP_HEAD].requests[OBJSTORE_RES_NOT_FOUND], 1);
	/* RGW answers 204 to the DELETE of a missing key, as S3 does. */
	assert_int_equal(o[OBJSTORE_OP_DELETE].requests[OBJSTORE_RES_OK], 2);
	assert_int_equal(o[OBJSTORE_OP_LIST].requests[OBJSTORE_RES_OK], 0);
	assert_int_equal(o[OBJSTORE_OP_PART].requests[OBJSTORE_RES_OK], 0);
	assert_int_equal(st.failures, 3);
}

static void put_get_head_delete(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os = open_s3(&c);
	/* A key that needs encoding in the path: '+', '%', '=', ',', '(', '&'. */
	const char *key = "t/put-get/a+b%c=d~e,(x)&y.blk";
	char data[3000];
	struct buf b;
	struct objstore_stat st;
	struct err_msg msg = {""};
	uint64_t size = 0;

	(void)state;
	fill(data, sizeof(data), 1);
	buf_init(&b, 1 << 20);
	assert_int_equal(objstore_put(os, key, data, sizeof(data), 0, &msg), 0);
	assert_int_equal(objstore_get(os, key, &b, &msg), 0);
	assert_int_equal(b.len, sizeof(data));
	assert_memory_equal(b.data, data, sizeof(data));
	assert_int_equal(objstore_head(os, key, &st, &msg), 0);
	assert_int_equal(st.size, sizeof(data));
	assert_true(strlen(st.etag) > 0);

	/* Ranges: a-b, to the end, suffix, suffix longer than the object. */
	buf_reset(&b);
	assert_int_equal(objstore_get_range(os, key, 100, 50, &b, &size, &msg), 0);
	assert_int_equal(b.len, 50);
	assert_memory_equal(b.data, data + 100, 50);
	assert_int_equal(size, sizeof(data));
	buf_reset(&b);
	assert_int_equal(objstore_get_range(os, key, 2990, 100, &b, NULL, &msg), 0);
	assert_int_equal(b.len, 10);
	assert_memory_equal(b.data, data + 2990, 10);
	buf_reset(&b);
	size = 0;
	assert_int_equal(objstore_get_suffix(os, key, 16, &b, &size, &msg), 0);
	assert_int_equal(b.len, 16);
	assert_memory_equal(b.data, data + sizeof(data) - 16, 16);
	assert_int_equal(size, sizeof(data));
	buf_reset(&b);
	assert_int_equal(objstore_get_suffix(os, key, 1 << 20, &b, &size, &msg), 0);
	assert_int_equal(b.len, sizeof(data));
	assert_memory_equal(b.data, data, sizeof(data));
	buf_reset(&b);
	assert_int_equal(objstore_get_range(os, key, 5000, 10, &b, NULL, &msg), ERR_INVALID);
	assert_int_equal(b.len, 0);

	/* A cap smaller than the answer. */
	{
		struct buf small;

		buf_init(&small, 100);
		err_clear(&msg);
		assert_int_equal(objstore_get(os, key, &small, &msg), ERR_TOO_LARGE);
		assert_int_equal(small.len, 0);
		buf_release(&small);
	}

	assert_int_equal(objstore_delete(os, key, &msg), 0);
	err_clear(&msg);
	assert_int_equal(objstore_head(os, key, &st, &msg), ERR_NOT_FOUND);
	assert_int_equal(objstore_get(os, key, &b, &msg), ERR_NOT_FOUND);
	assert_int_equal(objstore_delete(os, key, &msg), 0);
	check_counts(os, sizeof(data));
	buf_release(&b);
	objstore_close(os);
}

static void create_once(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os = open_s3(&c);
	struct err_msg msg = {""};
	struct buf b;

	(void)state;
	buf_init(&b, 1024);
	objstore_delete(os, "t/once", &msg);
	assert_int_equal(objstore_put(os, "t/once", "first", 5, OBJSTORE_CREATE_ONCE, &msg), 0);
	assert_int_equal(objstore_put(os, "t/once", "second", 6, OBJSTORE_CREATE_ONCE, &msg),
			 ERR_CONFLICT);
	printf("create-once twice: %s\n", msg.text);
	assert_non_null(strstr(msg.text, "412"));
	assert_int_equal(objstore_get(os, "t/once", &b, &msg), 0);
	assert_int_equal(b.len, 5);
	assert_memory_equal(b.data, "first", 5);
	/* Without the flag a put replaces. */
	assert_int_equal(objstore_put(os, "t/once", "third", 5, 0, &msg), 0);
	buf_release(&b);
	objstore_close(os);
}

/*
 * A conditional GET (If-None-Match with the last ETag): 304 while the
 * object is unchanged, counted as "not_modified"; the whole object again
 * once it was replaced, with its new tag.
 */
static void get_if_changed(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os = open_s3(&c);
	char tag[OBJSTORE_ETAG_MAX], tag2[OBJSTORE_ETAG_MAX] = "untouched";
	struct objstore_stats before, after;
	struct err_msg msg = {""};
	struct objstore_stat hs;
	int changed = -1;
	struct buf b;

	(void)state;
	buf_init(&b, 1 << 20);
	assert_int_equal(objstore_put(os, "t/cond", "first", 5, 0, &msg), 0);
	objstore_stats(os, &before);
	assert_int_equal(objstore_get_if_changed(os, "t/cond", NULL, &b, tag, &changed, &msg), 0);
	assert_int_equal(changed, 1);
	assert_string_equal(b.data, "first");
	assert_int_equal(objstore_head(os, "t/cond", &hs, &msg), 0);
	assert_string_equal(hs.etag, tag);
	buf_reset(&b);
	assert_int_equal(objstore_get_if_changed(os, "t/cond", tag, &b, tag2, &changed, &msg), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(b.len, 0);
	assert_string_equal(tag2, "untouched");
	assert_int_equal(objstore_put(os, "t/cond", "second", 6, 0, &msg), 0);
	assert_int_equal(objstore_get_if_changed(os, "t/cond", tag, &b, tag2, &changed, &msg), 0);
	assert_int_equal(changed, 1);
	assert_string_equal(b.data, "second");
	assert_string_not_equal(tag2, tag);
	assert_int_equal(objstore_get_if_changed(os, "t/none", tag, &b, tag2, &changed, &msg),
			 ERR_NOT_FOUND);
	objstore_stats(os, &after);
	assert_int_equal(after.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_OK] -
				 before.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_OK], 2);
	assert_int_equal(after.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_MODIFIED] -
				 before.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_MODIFIED], 1);
	assert_int_equal(after.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_FOUND] -
				 before.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_FOUND], 1);
	assert_int_equal(after.op[OBJSTORE_OP_GET].retries, before.op[OBJSTORE_OP_GET].retries);
	assert_int_equal(after.failures - before.failures, 1);
	assert_int_equal(objstore_delete(os, "t/cond", &msg), 0);
	buf_release(&b);
	objstore_close(os);
}

static void multipart(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os = open_s3(&c);
	size_t n = 12u * 1024 * 1024 + 12345;
	char *data = malloc(n);
	struct err_msg msg = {""};
	struct objstore_stats before, after;
	struct objstore_stat st;
	struct buf b;

	(void)state;
	assert_non_null(data);
	fill(data, n, 7);
	buf_init(&b, 16u << 20);
	objstore_delete(os, "t/big", &msg);
	objstore_stats(os, &before);
	assert_int_equal(objstore_put(os, "t/big", data, n, OBJSTORE_CREATE_ONCE, &msg), 0);
	objstore_stats(os, &after);
	/* A HEAD for create-once, then initiate, 3 parts, complete. */
	assert_int_equal(after.op[OBJSTORE_OP_HEAD].requests[OBJSTORE_RES_NOT_FOUND] -
				 before.op[OBJSTORE_OP_HEAD].requests[OBJSTORE_RES_NOT_FOUND], 1);
	assert_int_equal(after.op[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_OK] -
				 before.op[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_OK], 2);
	assert_int_equal(after.op[OBJSTORE_OP_PART].requests[OBJSTORE_RES_OK] -
				 before.op[OBJSTORE_OP_PART].requests[OBJSTORE_RES_OK], 3);
	assert_true(after.op[OBJSTORE_OP_PART].bytes_out - before.op[OBJSTORE_OP_PART].bytes_out >= n);
	assert_int_equal(objstore_head(os, "t/big", &st, &msg), 0);
	assert_int_equal(st.size, n);
	assert_non_null(strchr(st.etag, '-')); /* a multipart ETag: md5-of-md5s "-3" */
	assert_int_equal(objstore_get(os, "t/big", &b, &msg), 0);
	assert_int_equal(b.len, n);
	assert_memory_equal(b.data, data, n);
	/* The same key, create-once, in parts: the completion answers 412. */
	err_clear(&msg);
	assert_int_equal(objstore_put(os, "t/big", data, n, OBJSTORE_CREATE_ONCE, &msg),
			 ERR_CONFLICT);
	printf("multipart create-once twice: %s\n", msg.text);
	/* Parallel range reads across part boundaries. */
	{
		struct buf out[3];
		struct objstore_range r[3] = {
			{"t/big", 5u * 1024 * 1024 - 10, 20, &out[0], 0},
			{"t/big", 0, 1, &out[1], 0},
			{"t/big", n - 100, 100, &out[2], 0},
		};

		for (int i = 0; i < 3; i++)
			buf_init(&out[i], 1024);
		assert_int_equal(objstore_get_ranges(os, r, 3, &msg), 0);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(r[i].rc, 0);
			assert_int_equal(out[i].len, r[i].len);
			assert_memory_equal(out[i].data, data + r[i].off, r[i].len);
			buf_release(&out[i]);
		}
	}
	assert_int_equal(objstore_delete(os, "t/big", &msg), 0);
	buf_release(&b);
	free(data);
	objstore_close(os);
}

struct seen {
	size_t n;
	char last[OBJSTORE_KEY_MAX + 1];
	int ordered;
	uint64_t bytes;
};

static int count(void *arg, const struct objstore_entry *e)
{
	struct seen *s = arg;

	if (s->n && strcmp(e->key, s->last) <= 0)
		s->ordered = 0;
	snprintf(s->last, sizeof(s->last), "%s", e->key);
	s->n++;
	s->bytes += e->size;
	return 0;
}

static int stop_at_3(void *arg, const struct objstore_entry *e)
{
	struct seen *s = arg;

	(void)e;
	s->n = 0;
	return ++s->bytes == 3 ? 42 : 0;
}

static void list_paged(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os = open_s3(&c);
	struct err_msg msg = {""};
	struct seen s = {.ordered = 1};
	char key[64];

	(void)state;
	/* 250 keys in pages of 100: three pages of ListObjectsV2. */
	c.list_page = 100;
	objstore_close(os);
	os = open_s3(&c);
	for (int i = 0; i < 250; i++) {
		snprintf(key, sizeof(key), "l/k%05d", i);
		assert_int_equal(objstore_put(os, key, key, strlen(key), 0, &msg), 0);
	}
	assert_int_equal(objstore_put(os, "lx/other", "x", 1, 0, &msg), 0);
	assert_int_equal(objstore_list(os, "l/", count, &s, &msg), 0);
	{
		struct objstore_stats st;

		objstore_stats(os, &st);
		assert_int_equal(st.op[OBJSTORE_OP_LIST].requests[OBJSTORE_RES_OK], 3);
	}
	assert_int_equal(s.n, 250);
	assert_true(s.ordered);
	assert_int_equal(s.bytes, 250 * strlen("l/k00000"));
	assert_string_equal(s.last, "l/k00249");
	memset(&s, 0, sizeof(s));
	s.ordered = 1;
	assert_int_equal(objstore_list(os, "l/k0019", count, &s, &msg), 0);
	assert_int_equal(s.n, 10);
	/* A callback's non-zero stops the listing and is returned. */
	memset(&s, 0, sizeof(s));
	assert_int_equal(objstore_list(os, "l/", stop_at_3, &s, &msg), 42);
	objstore_close(os);
}

static void wrong_secret(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os;
	struct err_msg msg = {""};
	struct buf b;

	(void)state;
	c.access_key = getenv("AWS_ACCESS_KEY_ID");
	c.secret_key = "not-the-secret";
	os = open_s3(&c);
	buf_init(&b, 1024);
	assert_int_equal(objstore_put(os, "t/denied", "x", 1, 0, &msg), ERR_PERMISSION);
	printf("wrong secret: %s\n", msg.text);
	assert_non_null(strstr(msg.text, "403"));
	assert_non_null(strstr(msg.text, "SignatureDoesNotMatch"));
	err_clear(&msg);
	assert_int_equal(objstore_get(os, "t/denied", &b, &msg), ERR_PERMISSION);
	buf_release(&b);
	objstore_close(os);
}

static void no_bucket(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os;
	struct err_msg msg = {""};

	(void)state;
	c.bucket = "unhex-no-such-bucket";
	os = open_s3(&c);
	assert_int_equal(objstore_put(os, "t/x", "x", 1, 0, &msg), ERR_NOT_FOUND);
	printf("missing bucket: %s\n", msg.text);
	assert_non_null(strstr(msg.text, "404 NoSuchBucket"));
	objstore_close(os);
}

/* Credentials from a shared credentials file, not the environment. */
static void credentials_file(void **state)
{
	struct objstore_s3_config c = config();
	char path[] = "/tmp/unhex-creds.XXXXXX", *ak = strdup(getenv("AWS_ACCESS_KEY_ID")),
	     *sk = strdup(getenv("AWS_SECRET_ACCESS_KEY"));
	struct objstore *os = NULL;
	struct err_msg msg = {""};
	struct buf b;
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	(void)state;
	assert_non_null(f);
	fprintf(f, "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n"
		   "\n[unhex]\naws_access_key_id = %s\naws_secret_access_key = %s\n", ak, sk);
	fclose(f);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	c.credentials_file = path;
	c.profile = "unhex";
	os = open_s3(&c);
	buf_init(&b, 64);
	assert_int_equal(objstore_put(os, "t/creds", "file", 4, 0, &msg), 0);
	assert_int_equal(objstore_get(os, "t/creds", &b, &msg), 0);
	assert_int_equal(b.len, 4);
	objstore_close(os);
	/* The default section holds keys RGW does not know. */
	c.profile = NULL;
	os = open_s3(&c);
	err_clear(&msg);
	assert_int_equal(objstore_put(os, "t/creds", "file", 4, 0, &msg), ERR_PERMISSION);
	printf("unknown access key: %s\n", msg.text);
	objstore_close(os);
	/* No such file, no environment: a clear error at open. */
	c.credentials_file = "/nonexistent/credentials";
	err_clear(&msg);
	assert_int_equal(objstore_open_s3(&c, &os, &msg), ERR_INVALID);
	assert_non_null(strstr(msg.text, "/nonexistent/credentials"));
	setenv("AWS_ACCESS_KEY_ID", ak, 1);
	setenv("AWS_SECRET_ACCESS_KEY", sk, 1);
	unlink(path);
	buf_release(&b);
	free(ak);
	free(sk);
}

static void vhost(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os;
	struct err_msg msg = {""};
	struct buf b;

	(void)state;
	if (!getenv("S3_VHOST_ENDPOINT"))
		skip();
	c.endpoint = getenv("S3_VHOST_ENDPOINT");
	c.path_style = 0;
	os = open_s3(&c);
	buf_init(&b, 1024);
	assert_int_equal(objstore_put(os, "t/vhost+key", "vh", 2, 0, &msg), 0);
	assert_int_equal(objstore_get(os, "t/vhost+key", &b, &msg), 0);
	assert_int_equal(b.len, 2);
	assert_memory_equal(b.data, "vh", 2);
	buf_release(&b);
	objstore_close(os);
}

static void down(void **state)
{
	struct objstore_s3_config c = config();
	struct objstore *os = open_s3(&c);
	struct err_msg msg = {""};
	struct objstore_stats st;
	struct buf b;
	int rc;

	(void)state;
	buf_init(&b, 1024);
	rc = objstore_get(os, "t/anything", &b, &msg);
	printf("server down: %s (%s)\n", msg.text, err_str(rc));
	assert_true(rc == ERR_TIMEOUT || rc == ERR_UNAVAILABLE);
	assert_non_null(strstr(msg.text, "after 3 attempts"));
	objstore_stats(os, &st);
	assert_int_equal(st.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_ERROR], 3);
	assert_int_equal(st.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_OK], 0);
	assert_int_equal(st.op[OBJSTORE_OP_GET].retries, 2);
	assert_int_equal(st.failures, 1);
	buf_release(&b);
	objstore_close(os);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest ops[] = {
		cmocka_unit_test(put_get_head_delete),
		cmocka_unit_test(create_once),
		cmocka_unit_test(get_if_changed),
		cmocka_unit_test(multipart),
		cmocka_unit_test(list_paged),
		cmocka_unit_test(wrong_secret),
		cmocka_unit_test(no_bucket),
		cmocka_unit_test(credentials_file),
		cmocka_unit_test(vhost),
	};
	const struct CMUnitTest outage[] = {cmocka_unit_test(down)};

	if (!getenv("S3_ENDPOINT") || !getenv("S3_BUCKET")) {
		fprintf(stderr, "rgw_check: S3_ENDPOINT and S3_BUCKET must be set\n");
		return 2;
	}
	if (argc == 2 && !strcmp(argv[1], "ops"))
		return cmocka_run_group_tests(ops, NULL, NULL);
	if (argc == 2 && !strcmp(argv[1], "down"))
		return cmocka_run_group_tests(outage, NULL, NULL);
	fprintf(stderr, "usage: rgw_check ops|down\n");
	return 2;
}
