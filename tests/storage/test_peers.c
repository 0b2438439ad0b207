/* test_peers.c - ingesters' heads for queriers (storage_int.h section 13):
 * real stores sharing a directory bucket as an ingester, a compactor and a
 * querier.  The querier's reader plus the ingester's answer to its id list
 * (added as an ephemeral block) count every profile exactly once, the same
 * as one store that ingested everything, whether the profiles are in the
 * ingester's head, in its blocks not indexed yet, indexed, or compacted; a
 * view older than the index by which the ingester dropped blocks is
 * refused (409) until the querier syncs; bad id lists are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockgen.h"
#include "helpers.h"
#include "objstore/objstore.h"
#include "storage/storage_int.h"

#define FROM (T0 - RANGE)
#define UNTIL (T0 + 10 * RANGE)

static int64_t fake_now;

static void fill(struct store **sts, size_t n_sts, const char *svc, int64_t t0, int64_t span)
{
	size_t n;

	assert_int_equal(gen_fill(sts, n_sts, svc, t0, span, &n), 0);
	assert_true(n > 0);
}

/*
 * What a querier q answers with ingester in's head: q's reader, the id
 * list it sends, in's answer added as an ephemeral block.  Returns the
 * dump (owned), or NULL with *rc set when the ingester refused.
 */
static char *fresh(struct store *q, struct store *in, int *rc, size_t *blocks)
{
	struct store_reader *r = NULL;
	struct err_msg msg = { { 0 } };
	uint8_t(*ids)[BLOCK_ID_BYTES] = NULL;
	size_t n = 0, warn = 1;
	struct buf ans;
	char *dump;

	assert_int_equal(store__reader_open(q, "t", FROM, UNTIL, NULL, 0, &r, &msg), 0);
	assert_int_equal(store__reader_ids(r, &ids, &n), 0);
	*blocks = n;
	buf_init(&ans, (size_t)1 << 30);
	*rc = store_head_block(in, "t", FROM, UNTIL, store__reader_view_ns(r), ids,
			       n * BLOCK_ID_BYTES, &ans, &msg);
	free(ids);
	if (*rc)
		fprintf(stderr, "head block: %s\n", msg.text);
	if (*rc) {
		store_reader_close(r);
		buf_release(&ans);
		return NULL;
	}
	if (ans.len) {
		char path[1024];
		struct tenant *t;
		struct block *b;
		int fd;

		snprintf(path, sizeof(path), "%s/answer.blk", q->peers_dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, ans.data, ans.len), (ssize_t)ans.len);
		close(fd);
		assert_int_equal(store__tenant_ensure(q, "t", &t, &msg), 0);
		assert_int_equal(store__block_load_file(q, t, path, &b, &msg), 0);
		b->doomed = 1;
		assert_int_equal(store__reader_add(r, b), 0);
	}
	buf_release(&ans);
	dump = gen_dump_reader(q, "t", r, FROM, UNTIL, NULL, &warn);
	assert_non_null(dump);
	assert_int_equal(warn, 0);
	return dump;
}

static void same_fresh(struct store *q, struct store *in, const char *want, size_t *blocks)
{
	int rc = -1;
	char *got = fresh(q, in, &rc, blocks);

	assert_int_equal(rc, 0);
	assert_string_equal(got, want);
	free(got);
}

static void test_fresh(void **state)
{
	struct gen_deploy d;
	struct store *in, *c, *q, *ref;
	struct store_maint_stats ms;
	struct err_msg msg = { { 0 } };
	size_t ids = 0;
	char *want, *plain;
	int rc;
	(void)state;

	fake_now = T0 + 100 * RANGE;
	assert_int_equal(gen_deploy_open(&d, &fake_now), 0);
	in = gen_deploy_role(&d, STORE_BUCKET_PRUNE | STORE_NO_COMPACT);
	c = gen_deploy_role(&d, STORE_BUCKET_INDEX | STORE_BUCKET_DISCOVER);
	q = gen_deploy_role(&d, STORE_BUCKET_DISCOVER | STORE_NO_COMPACT);
	ref = gen_deploy_ref(&d);
	assert_true(in && c && q && ref);

	fill((struct store *[]){ in, ref }, 2, "api", T0, 3 * RANGE);
	want = gen_dump(ref, "t", FROM, UNTIL, NULL, NULL);
	assert_non_null(want);

	/* In the ingester's head only: the querier alone sees nothing, with
	 * the ingester's answer everything. */
	plain = gen_dump(q, "t", FROM, UNTIL, NULL, NULL);
	assert_string_equal(plain, "");
	free(plain);
	same_fresh(q, in, want, &ids);
	assert_int_equal(ids, 0);

	/* Sealed and uploaded, no index yet: from the ingester's blocks. */
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(in, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
	assert_int_equal(ms.sealed_blocks, 3);
	assert_int_equal(ms.uploaded_blocks, 3);
	same_fresh(q, in, want, &ids);

	/* Indexed, the querier not synced: still the ingester's.  Synced: the
	 * querier's own, the ingester's answer leaves them out. */
	fake_now += SEC;
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	same_fresh(q, in, want, &ids);
	assert_int_equal(ids, 0);
	assert_int_equal(store_bucket_sync(q, &msg), 0);
	same_fresh(q, in, want, &ids);
	assert_int_equal(ids, 3);

	/* Compacted: the querier, not synced, still reads the three; the
	 * ingester, not synced, still leaves them out. */
	fake_now += SEC;
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(c, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(ms.compactions, 1);
	same_fresh(q, in, want, &ids);
	/* The querier syncs first: the output and its covers. */
	assert_int_equal(store_bucket_sync(q, &msg), 0);
	same_fresh(q, in, want, &ids);
	assert_int_equal(ids, 4);

	/* New profiles in the head, and a querier whose view is older than
	 * the index by which the ingester dropped its blocks: refused until
	 * it syncs. */
	fill((struct store *[]){ in, ref }, 2, "db", T0 + 4 * RANGE, RANGE);
	free(want);
	want = gen_dump(ref, "t", FROM, UNTIL, NULL, NULL);
	{
		struct store *q2;

		fake_now += SEC;
		assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
		/* q2 opens with that index; the compactor then writes a newer
		 * one before the ingester drops by it. */
		q2 = gen_deploy_role(&d, STORE_BUCKET_DISCOVER | STORE_NO_COMPACT);
		assert_non_null(q2);
		fake_now += SEC;
		assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
		assert_int_equal(store_bucket_sync(in, &msg), 0);
		assert_true(atomic_load(&in->bucket_pruned_ns) > atomic_load(&q2->bucket_view_ns));
		assert_null(fresh(q2, in, &rc, &ids));
		assert_int_equal(rc, ERR_CONFLICT);
		assert_int_equal(store_bucket_sync(q2, &msg), 0);
		same_fresh(q2, in, want, &ids);
		gen_deploy_drop(&d, q2);
	}
	assert_null(fresh(q, in, &rc, &ids));
	assert_int_equal(rc, ERR_CONFLICT);
	assert_int_equal(store_bucket_sync(q, &msg), 0);
	same_fresh(q, in, want, &ids);
	assert_int_equal(ids, 4);

	/* Bad lists: not whole ids, not ascending; an empty range. */
	{
		uint8_t two[2][BLOCK_ID_BYTES];
		struct buf out;

		memset(two, 7, sizeof(two));
		buf_init(&out, 1 << 20);
		assert_int_equal(store_head_block(in, "t", FROM, UNTIL, INT64_MAX, two, 17, &out, NULL),
				 ERR_INVALID);
		assert_int_equal(store_head_block(in, "t", FROM, UNTIL, INT64_MAX, two, 32, &out, NULL),
				 ERR_INVALID);
		assert_int_equal(store_head_block(in, "t", UNTIL, FROM, INT64_MAX, NULL, 0, &out, NULL),
				 ERR_INVALID);
		/* An unknown tenant, or nothing in range: an empty answer. */
		assert_int_equal(store_head_block(in, "nobody", FROM, UNTIL, INT64_MAX, NULL, 0, &out,
						  NULL), 0);
		assert_int_equal(store_head_block(in, "t", FROM - RANGE, FROM, INT64_MAX, NULL, 0, &out,
						  NULL), 0);
		assert_int_equal(out.len, 0);
		buf_release(&out);
	}

	gen_deploy_close(&d);
	free(want);
}

/* A head block past the cap is refused with a message naming it. */
static void test_cap(void **state)
{
	char *d = tmpdir_new();
	struct store_options o;
	struct err_msg msg = { { 0 } };
	struct store *st = NULL;
	struct buf out;
	(void)state;

	o = gen_options(d, &fake_now);
	o.head_block_max_bytes = 4096;
	fake_now = T0 + 100 * RANGE;
	st = open_options(&o);
	assert_non_null(st);
	fill(&st, 1, "api", T0, 3 * RANGE);
	buf_init(&out, 1 << 20);
	assert_int_equal(store_head_block(st, "t", FROM, UNTIL, 0, NULL, 0, &out, &msg),
			 ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "4096"));
	buf_release(&out);
	store_close(st);
	tmpdir_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh),
		cmocka_unit_test(test_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
