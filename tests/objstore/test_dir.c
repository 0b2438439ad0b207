/* test_dir.c - the directory backend through objstore.h, and the key rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "objstore/objstore.h"

static char root[64];

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/unhex-objstore.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static void keys(void **state)
{
	static const char *bad[] = {"", "/a", "a/", "a//b", "./a", "a/../b", "a/..", "a b", "a\nb",
				    "\xc3\xa9"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(objstore_check_key(bad[i], NULL), ERR_INVALID);
	assert_int_equal(objstore_check_key("blocks/t1/01ab.blk", NULL), 0);
	assert_int_equal(objstore_check_key("a/.../b..c/.x", NULL), 0);
}

struct seen {
	size_t n;
	char keys[8][64];
};

static int collect(void *arg, const struct objstore_entry *e)
{
	struct seen *s = arg;

	if (s->n < 8)
		snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s:%llu", e->key,
			 (unsigned long long)e->size);
	s->n++;
	return 0;
}

/* Every file operation of ops() counted once by kind and outcome. */
static void check_counts(struct objstore *os)
{
	struct objstore_stats st;
	struct objstore_op_stats all;
	const struct objstore_op_stats *o = st.op;

	objstore_stats(os, &st);
	assert_int_equal(o[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_OK], 5);
	assert_int_equal(o[OBJSTORE_OP_PUT].requests[OBJSTORE_RES_CONFLICT], 1);
	assert_int_equal(o[OBJSTORE_OP_PUT].bytes_out, 11 + 11 + 0 + 1 + 2);
	assert_int_equal(o[OBJSTORE_OP_GET].requests[OBJSTORE_RES_OK], 1);
	assert_int_equal(o[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_FOUND], 1);
	assert_int_equal(o[OBJSTORE_OP_GET].requests[OBJSTORE_RES_ERROR], 1); /* over the cap */
	assert_int_equal(o[OBJSTORE_OP_GET].bytes_in, 11);
	assert_int_equal(o[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_OK], 4);
	assert_int_equal(o[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_NOT_FOUND], 1);
	assert_int_equal(o[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_ERROR], 1); /* past the end */
	assert_int_equal(o[OBJSTORE_OP_RANGE].bytes_in, 4 + 3 + 11 + 1);
	assert_int_equal(o[OBJSTORE_OP_HEAD].requests[OBJSTORE_RES_OK], 1);
	assert_int_equal(o[OBJSTORE_OP_HEAD].requests[OBJSTORE_RES_NOT_FOUND], 1);
	assert_int_equal(o[OBJSTORE_OP_DELETE].requests[OBJSTORE_RES_OK], 2);
	assert_int_equal(o[OBJSTORE_OP_LIST].requests[OBJSTORE_RES_OK], 3);
	assert_int_equal(o[OBJSTORE_OP_PART].requests[OBJSTORE_RES_OK], 0);
	/* Refused keys and empty ranges never reach the backend, but fail. */
	assert_int_equal(st.failures, 7);
	objstore_stats_total(&st, &all);
	assert_int_equal(all.requests[OBJSTORE_RES_OK], 5 + 1 + 4 + 1 + 2 + 3);
	assert_int_equal(all.retries, 0);
	assert_int_equal(all.bytes_in, 11 + 19);
	assert_int_equal(all.bytes_out, 25);
	assert_string_equal(objstore_op_name(OBJSTORE_OP_RANGE), "range_get");
	assert_string_equal(objstore_result_name(OBJSTORE_RES_NOT_FOUND), "not_found");
}

static void ops(void **state)
{
	struct objstore *os;
	struct err_msg msg = {""};
	struct objstore_stat st;
	struct seen s = {0};
	uint64_t size;
	struct buf b;

	(void)state;
	assert_int_equal(objstore_open_dir(root, &os, &msg), 0);
	assert_string_equal(objstore_kind(os), "dir");
	buf_init(&b, 1024);
	assert_int_equal(objstore_put(os, "b/x/1", "hello world", 11, OBJSTORE_CREATE_ONCE, &msg), 0);
	assert_int_equal(objstore_put(os, "b/x/1", "other", 5, OBJSTORE_CREATE_ONCE, &msg),
			 ERR_CONFLICT);
	assert_int_equal(objstore_get(os, "b/x/1", &b, &msg), 0);
	assert_string_equal(b.data, "hello world");
	assert_int_equal(objstore_put(os, "b/x/1", "replaced!!!", 11, 0, &msg), 0);
	buf_reset(&b);
	assert_int_equal(objstore_get_range(os, "b/x/1", 3, 4, &b, &size, &msg), 0);
	assert_string_equal(b.data, "lace");
	assert_int_equal(size, 11);
	buf_reset(&b);
	assert_int_equal(objstore_get_suffix(os, "b/x/1", 3, &b, &size, &msg), 0);
	assert_string_equal(b.data, "!!!");
	buf_reset(&b);
	assert_int_equal(objstore_get_suffix(os, "b/x/1", 100, &b, NULL, &msg), 0);
	assert_string_equal(b.data, "replaced!!!");
	buf_reset(&b);
	assert_int_equal(objstore_get_range(os, "b/x/1", 11, 1, &b, NULL, &msg), ERR_INVALID);
	assert_int_equal(objstore_get_range(os, "b/x/1", 0, 0, &b, NULL, &msg), ERR_INVALID);
	assert_int_equal(objstore_get(os, "b/none", &b, &msg), ERR_NOT_FOUND);
	assert_int_equal(objstore_head(os, "b/x/1", &st, &msg), 0);
	assert_int_equal(st.size, 11);
	{
		struct buf small;

		buf_init(&small, 4);
		assert_int_equal(objstore_get(os, "b/x/1", &small, &msg), ERR_TOO_LARGE);
		assert_int_equal(small.len, 0);
		buf_release(&small);
	}
	assert_int_equal(objstore_put(os, "b/y", "", 0, 0, &msg), 0);
	assert_int_equal(objstore_put(os, "a", "1", 1, 0, &msg), 0);
	assert_int_equal(objstore_put(os, "b/x/0", "22", 2, 0, &msg), 0);
	assert_int_equal(objstore_list(os, "b/", collect, &s, &msg), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.keys[0], "b/x/0:2");
	assert_string_equal(s.keys[1], "b/x/1:11");
	assert_string_equal(s.keys[2], "b/y:0");
	memset(&s, 0, sizeof(s));
	assert_int_equal(objstore_list(os, "", collect, &s, &msg), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.keys[0], "a:1");
	memset(&s, 0, sizeof(s));
	assert_int_equal(objstore_list(os, "b/x/1", collect, &s, &msg), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(objstore_delete(os, "b/x/1", &msg), 0);
	assert_int_equal(objstore_delete(os, "b/x/1", &msg), 0);
	assert_int_equal(objstore_head(os, "b/x/1", &st, &msg), ERR_NOT_FOUND);
	assert_int_equal(objstore_put(os, "../escape", "x", 1, 0, &msg), ERR_INVALID);
	{
		struct buf o1, o2;
		struct objstore_range r[2] = {{"b/x/0", 1, 1, &o1, 0}, {"b/none", 0, 1, &o2, 0}};

		buf_init(&o1, 16);
		buf_init(&o2, 16);
		assert_int_equal(objstore_get_ranges(os, r, 2, &msg), ERR_NOT_FOUND);
		assert_int_equal(r[0].rc, 0);
		assert_string_equal(o1.data, "2");
		assert_int_equal(r[1].rc, ERR_NOT_FOUND);
		buf_release(&o1);
		buf_release(&o2);
	}
	check_counts(os);
	buf_release(&b);
	objstore_close(os);
}

static void put_file(void **state)
{
	struct objstore *os;
	struct err_msg msg = {""};
	char path[128];
	struct buf b;
	FILE *f;

	(void)state;
	assert_int_equal(objstore_open_dir(root, &os, &msg), 0);
	snprintf(path, sizeof(path), "%s.src", root);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("file body", f);
	fclose(f);
	assert_int_equal(objstore_put_file(os, "f/1", path, 0, &msg), 0);
	buf_init(&b, 64);
	assert_int_equal(objstore_get(os, "f/1", &b, &msg), 0);
	assert_string_equal(b.data, "file body");
	assert_int_equal(objstore_put_file(os, "f/2", "/nonexistent/x", 0, &msg), ERR_IO);
	unlink(path);
	buf_release(&b);
	objstore_close(os);
}

/*
 * A conditional GET: read with the tag the last read gave, an unchanged
 * object is "not modified" (nothing appended, counted as such); a put
 * links a new file in, whose tag differs, so it is read again.
 */
static void get_if_changed(void **state)
{
	char tag[OBJSTORE_ETAG_MAX], tag2[OBJSTORE_ETAG_MAX] = "untouched";
	struct err_msg msg = {""};
	struct objstore_stats st;
	struct objstore_stat hs;
	struct objstore *os;
	int changed = -1;
	struct buf b;

	(void)state;
	assert_int_equal(objstore_open_dir(root, &os, &msg), 0);
	buf_init(&b, 1024);
	assert_int_equal(objstore_get_if_changed(os, "idx", NULL, &b, tag, &changed, &msg),
			 ERR_NOT_FOUND);
	assert_int_equal(changed, -1);
	assert_int_equal(objstore_put(os, "idx", "first", 5, 0, &msg), 0);
	assert_int_equal(objstore_get_if_changed(os, "idx", NULL, &b, tag, &changed, &msg), 0);
	assert_int_equal(changed, 1);
	assert_string_equal(b.data, "first");
	assert_true(tag[0]);
	/* The tag is the one HEAD reports. */
	assert_int_equal(objstore_head(os, "idx", &hs, &msg), 0);
	assert_string_equal(hs.etag, tag);
	buf_reset(&b);
	assert_int_equal(objstore_get_if_changed(os, "idx", tag, &b, tag2, &changed, &msg), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(b.len, 0);
	assert_string_equal(tag2, "untouched");
	/* "" reads whatever the tag. */
	assert_int_equal(objstore_get_if_changed(os, "idx", "", &b, tag2, &changed, &msg), 0);
	assert_int_equal(changed, 1);
	assert_string_equal(tag2, tag);
	buf_reset(&b);
	assert_int_equal(objstore_put(os, "idx", "second", 6, 0, &msg), 0);
	assert_int_equal(objstore_get_if_changed(os, "idx", tag, &b, tag2, &changed, &msg), 0);
	assert_int_equal(changed, 1);
	assert_string_equal(b.data, "second");
	assert_string_not_equal(tag2, tag);
	/* A tag that cannot go into a header is refused before any request. */
	assert_int_equal(objstore_get_if_changed(os, "idx", "a\"b", &b, tag2, &changed, &msg),
			 ERR_INVALID);
	assert_int_equal(objstore_get_if_changed(os, "idx", "a\r\nX: y", &b, tag2, &changed,
						 &msg),
			 ERR_INVALID);
	objstore_stats(os, &st);
	assert_int_equal(st.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_OK], 3);
	assert_int_equal(st.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_MODIFIED], 1);
	assert_int_equal(st.op[OBJSTORE_OP_GET].requests[OBJSTORE_RES_NOT_FOUND], 1);
	assert_int_equal(st.op[OBJSTORE_OP_GET].bytes_in, 5 + 5 + 6);
	assert_string_equal(objstore_result_name(OBJSTORE_RES_NOT_MODIFIED), "not_modified");
	buf_release(&b);
	objstore_close(os);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keys),
		cmocka_unit_test_setup_teardown(ops, setup, teardown),
		cmocka_unit_test_setup_teardown(put_file, setup, teardown),
		cmocka_unit_test_setup_teardown(get_if_changed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
