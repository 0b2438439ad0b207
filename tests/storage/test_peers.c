/* test_peers.c - ingesters' heads for queriers (storage_int.h section 13):
 * real stores sharing a directory bucket as an ingester, a compactor and a
 * querier.  The querier's reader plus the ingester's answer to its id list
 * (added as an ephemeral block) count every profile exactly once, the same
 * as one store that ingested everything, whether the profiles are in the
 * ingester's head, in its blocks not indexed yet, indexed, or compacted; a
 * view older than the index by which the ingester dropped blocks is
 * refused (409) until the querier syncs; bad request bodies are refused;
 * asked for the series of one service, the ingester writes only those. */
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
#include "base/varint.h"
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

/* The size of the last answer fresh() got. */
static size_t answer_bytes;

/*
 * What a querier q answers with ingester in's head for the series that
 * carry every label eq[0..n_eq): q's reader, the request it sends, in's
 * answer added as an ephemeral block.  Returns the dump (owned), or NULL
 * with *rc set when the ingester refused.
 */
static char *fresh_eq(struct store *q, struct store *in, const struct store_label *eq,
		      size_t n_eq, int *rc, size_t *blocks)
{
	struct store_reader *r = NULL;
	struct err_msg msg = { { 0 } };
	uint8_t(*ids)[BLOCK_ID_BYTES] = NULL;
	size_t n = 0, warn = 1;
	struct buf ans, body;
	int format = 0;
	char *dump;

	assert_int_equal(store__reader_open(q, "t", FROM, UNTIL, NULL, 0, &r, &msg), 0);
	assert_int_equal(store__reader_ids(r, &ids, &n), 0);
	*blocks = n;
	buf_init(&body, (size_t)1 << 30);
	assert_int_equal(store__head_req_encode(ids, n, eq, n_eq, &body, &format), 0);
	assert_int_equal(format, n_eq ? 2 : 1);
	buf_init(&ans, (size_t)1 << 30);
	*rc = store_head_block(in, "t", FROM, UNTIL, store__reader_view_ns(r), format, body.data,
			       body.len, &ans, &msg);
	answer_bytes = ans.len;
	buf_release(&body);
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

static char *fresh(struct store *q, struct store *in, int *rc, size_t *blocks)
{
	return fresh_eq(q, in, NULL, 0, rc, blocks);
}

/* The lines of dump that hold `needle` (keep) or not (!keep), as an owned dump. */
static char *keep_lines(const char *dump, const char *needle, int keep)
{
	struct buf b;

	buf_init(&b, (size_t)1 << 30);
	for (const char *p = dump; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p + 1) : strlen(p);
		char *line = strndup(p, n);

		assert_non_null(line);
		if (!strstr(line, needle) == !keep)
			assert_int_equal(buf_append(&b, line, n), 0);
		free(line);
		p += n;
	}
	assert_int_equal(buf_putc(&b, '\0'), 0);
	return b.data;
}

/*
 * Asked for the series with label eq[0] (`needle` in a dump line), the
 * querier q reads those as `want` does and the others as without the
 * ingester (`plain`).
 */
static void same_service(struct store *q, struct store *in, const struct store_label *eq,
			 const char *want, const char *plain, const char *needle)
{
	size_t blocks;
	int rc = -1;
	char *got = fresh_eq(q, in, eq, 1, &rc, &blocks), *a, *b;

	assert_int_equal(rc, 0);
	a = keep_lines(got, needle, 1);
	b = keep_lines(want, needle, 1);
	assert_string_equal(a, b);
	free(a);
	free(b);
	a = keep_lines(got, needle, 0);
	b = keep_lines(plain, needle, 0);
	assert_string_equal(a, b);
	free(a);
	free(b);
	free(got);
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

	/* Two services in the head: asked for one, the ingester writes that
	 * one only; the querier reads all of it, its own blocks as before. */
	fill((struct store *[]){ in, ref }, 2, "api", T0 + 5 * RANGE, RANGE);
	free(want);
	want = gen_dump(ref, "t", FROM, UNTIL, NULL, NULL);
	same_fresh(q, in, want, &ids);
	{
		const struct store_label api[] = { { "service_name", "api" } };
		const struct store_label db[] = { { "service_name", "db" } };
		const struct store_label none[] = { { "service_name", "nobody" } };
		size_t all = answer_bytes, one;

		plain = gen_dump(q, "t", FROM, UNTIL, NULL, NULL);
		assert_non_null(plain);
		same_service(q, in, api, want, plain, "service_name=api,");
		one = answer_bytes;
		same_service(q, in, db, want, plain, "service_name=db,");
		assert_true(answer_bytes > 0 && one > 0);
		assert_true(answer_bytes < all && one < all);
		/* No series carries it: nothing to add (204). */
		same_service(q, in, none, want, plain, "service_name=nobody,");
		assert_int_equal(answer_bytes, 0);
		free(plain);
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
	assert_int_equal(store_head_block(st, "t", FROM, UNTIL, 0, 1, NULL, 0, &out, &msg),
			 ERR_TOO_LARGE);
	assert_non_null(strstr(msg.text, "4096"));
	buf_release(&out);
	store_close(st);
	tmpdir_free(d);
}

/* The body refused with `code` and a message holding `why`; *out untouched. */
static void refused(int format, const void *body, size_t len, int code, const char *why)
{
	struct head_req r;
	struct err_msg msg = { { 0 } };

	memset(&r, 0x5a, sizeof(r));
	assert_int_equal(store__head_req_parse(format, body, len, &r, &msg), code);
	if (!strstr(msg.text, why))
		fail_msg("\"%s\" does not say \"%s\"", msg.text, why);
	for (size_t i = 0; i < sizeof(r); i++)
		assert_int_equal(((uint8_t *)&r)[i], 0x5a);
}

/* A format 2 body of ids[0..n_ids) and the raw label part `tail`. */
static size_t body2(uint8_t *out, const uint8_t (*ids)[BLOCK_ID_BYTES], size_t n_ids,
		    const void *tail, size_t tail_len)
{
	size_t k = varint_put(out, n_ids);

	memcpy(out + k, ids, n_ids * BLOCK_ID_BYTES);
	k += n_ids * BLOCK_ID_BYTES;
	memcpy(out + k, tail, tail_len);
	return k + tail_len;
}

/* A format 2 body of ids[0..n_ids) and `tail`, refused with `code` and `why`. */
static void refused2(const uint8_t (*ids)[BLOCK_ID_BYTES], size_t n_ids, const void *tail,
		     size_t tail_len, int code, const char *why)
{
	uint8_t b[256];

	refused(2, b, body2(b, ids, n_ids, tail, tail_len), code, why);
}

/* The request body: what is read, what is refused and why. */
static void test_request(void **state)
{
	uint8_t ids[3][BLOCK_ID_BYTES], b[20000], big[STORE_MAX_LABEL_BYTES + 1];
	const struct store_label eq[] = { { "service_name", "db" }, { "", "x" },
					  { "__profile_type__", "cpu" }, { "service_name", "db" },
					  { "service_name", "api" }, { "pod", "" } };
	struct head_req r;
	struct buf e;
	size_t n;
	int format = 0;
	(void)state;

	for (int i = 0; i < 3; i++)
		memset(ids[i], i + 1, BLOCK_ID_BYTES);
	/* Format 1: whole ids, strictly ascending. */
	assert_int_equal(store__head_req_parse(1, ids, sizeof(ids), &r, NULL), 0);
	assert_int_equal(r.n_ids, 3);
	assert_ptr_equal(r.ids, ids);
	assert_int_equal(r.n_eq, 0);
	assert_null(r.eq);
	assert_int_equal(store__head_req_parse(1, NULL, 0, &r, NULL), 0);
	assert_int_equal(r.n_ids, 0);
	refused(0, ids, 16, ERR_INVALID, "the formats are 1 and 2");
	refused(3, ids, 16, ERR_INVALID, "the formats are 1 and 2");
	refused(1, ids, 17, ERR_INVALID, "not a list of 16-byte block ids");
	refused(1, ids, 15, ERR_INVALID, "not a list of 16-byte block ids");
	memcpy(b, ids[1], 16);
	memcpy(b + 16, ids[0], 16);
	refused(1, b, 32, ERR_INVALID, "not strictly ascending");
	memcpy(b + 16, ids[1], 16);
	refused(1, b, 32, ERR_INVALID, "not strictly ascending");

	/* Format 2: the ids, then the labels. */
	n = body2(b, ids, 3, "\002\014service_name\003api\014service_name\002db", 34);
	assert_int_equal(store__head_req_parse(2, b, n, &r, NULL), 0);
	assert_int_equal(r.n_ids, 3);
	assert_memory_equal(r.ids, ids, sizeof(ids));
	assert_int_equal(r.n_eq, 2);
	assert_string_equal(r.eq[0].name, "service_name");
	assert_string_equal(r.eq[0].value, "api");
	assert_string_equal(r.eq[1].value, "db");
	assert_int_equal(store__head_req_matches(&r, (struct store_label[]){
		{ "__profile_type__", "cpu" }, { "service_name", "api" } }, 2), 0);
	store__head_req_release(&r);
	assert_null(r.eq);
	/* Every byte short of the whole body is refused (truncation). */
	for (size_t k = 0; k < n; k++)
		refused(2, b, k, ERR_INVALID, "the body ends");
	refused(2, b, n + 1, ERR_INVALID, "1 bytes after the labels");
	/* Ids: too many, not ascending, repeated. */
	n = varint_put(b, STORE_MAX_HEAD_BLOCK_IDS + 1);
	refused(2, b, n, ERR_TOO_LARGE, "4194305 block ids, more than 4194304");
	n = varint_put(b, UINT64_MAX);
	refused(2, b, n, ERR_TOO_LARGE, "block ids, more than");
	{
		uint8_t rev[2][BLOCK_ID_BYTES];

		memcpy(rev[0], ids[2], 16);
		memcpy(rev[1], ids[1], 16);
		refused2(rev, 2, "\001\001a\001b", 5, ERR_INVALID, "ids are not strictly ascending");
		memcpy(rev[0], ids[1], 16);
		refused2(rev, 2, "\001\001a\001b", 5, ERR_INVALID, "ids are not strictly ascending");
	}
	/* Labels: none, too many, empty, NUL, out of order, repeated, too long. */
	static const struct {
		const char *tail;
		size_t len;
		int code;
		const char *why;
	} bad[] = {
		{ "\000", 1, ERR_INVALID, "format 2 without labels" },
		{ "\201\001", 2, ERR_TOO_LARGE, "129 labels, more than 128" },
		{ "\001\000\001b\000", 5, ERR_INVALID, "an empty label name" },
		{ "\001\001a\000\000", 5, ERR_INVALID, "an empty label value" },
		{ "\001\001a\002b\000", 6, ERR_INVALID, "a label value holds a NUL byte" },
		{ "\002\001b\001a\001a\001b", 9, ERR_INVALID, "labels are not strictly ascending" },
		{ "\002\001a\001b\001a\001a", 9, ERR_INVALID, "labels are not strictly ascending" },
		{ "\002\001a\001b\001a\001b", 9, ERR_INVALID, "labels are not strictly ascending" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused2(ids, 1, bad[i].tail, bad[i].len, bad[i].code, bad[i].why);
	memset(big, 'v', sizeof(big));
	n = body2(b, ids, 1, "\001\001a\201\040", 5);
	memcpy(b + n, big, sizeof(big));
	refused(2, b, n + sizeof(big), ERR_TOO_LARGE, "a label value of 4097 bytes, more than 4096");
	b[n - 2] = 0x80; /* 4096: the cap itself */
	n += STORE_MAX_LABEL_BYTES;
	assert_int_equal(store__head_req_parse(2, b, n, &r, NULL), 0);
	assert_int_equal(strlen(r.eq[0].value), STORE_MAX_LABEL_BYTES);
	store__head_req_release(&r);

	/* The encoder sorts, drops repeats and what the format cannot carry;
	 * without a label left it writes format 1 (what older ingesters read). */
	buf_init(&e, 1 << 20);
	assert_int_equal(store__head_req_encode(ids, 3, eq, 6, &e, &format), 0);
	assert_int_equal(format, 2);
	assert_int_equal(store__head_req_parse(2, e.data, e.len, &r, NULL), 0);
	assert_int_equal(r.n_ids, 3);
	assert_int_equal(r.n_eq, 3);
	assert_string_equal(r.eq[0].name, "__profile_type__");
	assert_string_equal(r.eq[1].value, "api");
	assert_string_equal(r.eq[2].value, "db");
	assert_int_equal(store__head_req_matches(&r, (struct store_label[]){
		{ "__profile_type__", "cpu" }, { "pod", "p" }, { "service_name", "api" } }, 3), 0);
	assert_int_equal(store__head_req_matches(&r, NULL, 0), 0);
	store__head_req_release(&r);
	e.len = 0;
	assert_int_equal(store__head_req_encode(ids, 3, eq + 1, 1, &e, &format), 0);
	assert_int_equal(format, 1);
	assert_int_equal(e.len, sizeof(ids));
	assert_memory_equal(e.data, ids, sizeof(ids));
	assert_int_equal(store__head_req_parse(1, e.data, e.len, &r, NULL), 0);
	assert_int_equal(store__head_req_matches(&r, NULL, 0), 1);
	e.len = 0;
	assert_int_equal(store__head_req_encode(ids, 2, eq + 2, 1, &e, &format), 0);
	assert_int_equal(store__head_req_parse(2, e.data, e.len, &r, NULL), 0);
	assert_int_equal(store__head_req_matches(&r, (struct store_label[]){
		{ "__profile_type__", "cpu" }, { "service_name", "api" } }, 2), 1);
	store__head_req_release(&r);
	buf_release(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_fresh),
		cmocka_unit_test(test_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
