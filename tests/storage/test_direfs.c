/* test_direfs.c - the debug info references of the bucket (storage_int.h
 * section 13): the object round-trips and refuses truncated and corrupt
 * input; the index writer hands its hook the build IDs of the blocks the
 * index counts with their newest profile, reads each block's footer once,
 * keeps what the hook saw, drops what it forgot, rebuilds a corrupt
 * object from the footers, and says so when a footer cannot be read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "blockgen.h"
#include "helpers.h"
#include "objstore/objstore.h"
#include "storage/storage_int.h"

/* ---- the format ---- */

static void sample(struct store_direfs *r)
{
	static const char *ids[3] = { "00aa", "0bbb", "cc" };

	store__direfs_init(r, 1 << 20);
	r->written_ns = T0;
	r->n_ids = 3;
	r->ids = arena_calloc(&r->mem, 3, sizeof(*r->ids));
	for (int i = 0; i < 3; i++) {
		r->ids[i].id = ids[i];
		r->ids[i].last_ns = T0 - i * SEC;
	}
	r->n_tenants = 1;
	r->tenants = arena_calloc(&r->mem, 1, sizeof(*r->tenants));
	r->tenants[0].name = "t";
	r->tenants[0].n_blocks = 2;
	r->tenants[0].blocks = arena_calloc(&r->mem, 2, sizeof(struct direfs_block));
	r->tenants[0].blocks[0].id[0] = 1;
	r->tenants[0].blocks[1].id[0] = 2;
	r->tenants[0].blocks[1].n_refs = 2;
	r->tenants[0].blocks[1].refs = arena_calloc(&r->mem, 2, sizeof(uint32_t));
	r->tenants[0].blocks[1].refs[0] = 0;
	r->tenants[0].blocks[1].refs[1] = 2;
}

static void test_format(void **state)
{
	struct store_direfs r, d;
	struct buf a, b;
	struct err_msg msg = { { 0 } };

	(void)state;
	sample(&r);
	buf_init(&a, 1 << 20);
	buf_init(&b, 1 << 20);
	assert_int_equal(store__direfs_encode(&r, &a), 0);
	assert_int_equal(store__direfs_decode((const uint8_t *)a.data, a.len, &d, &msg), 0);
	assert_int_equal(d.written_ns, T0);
	assert_int_equal(d.n_ids, 3);
	assert_string_equal(d.ids[1].id, "0bbb");
	assert_int_equal(d.ids[2].last_ns, T0 - 2 * SEC);
	assert_int_equal(d.tenants[0].n_blocks, 2);
	assert_int_equal(d.tenants[0].blocks[0].n_refs, 0);
	assert_int_equal(d.tenants[0].blocks[1].n_refs, 2);
	assert_int_equal(d.tenants[0].blocks[1].refs[1], 2);
	assert_int_equal(store__direfs_encode(&d, &b), 0);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.data, b.data, a.len);
	store__direfs_release(&d);

	/* A forgotten id goes, and the refs after it are renumbered. */
	r.ids[1].forget = 1;
	buf_reset(&b);
	assert_int_equal(store__direfs_encode(&r, &b), 0);
	assert_int_equal(store__direfs_decode((const uint8_t *)b.data, b.len, &d, &msg), 0);
	assert_int_equal(d.n_ids, 2);
	assert_string_equal(d.ids[1].id, "cc");
	assert_int_equal(d.tenants[0].blocks[1].refs[1], 1);
	store__direfs_release(&d);

	/* Cut short anywhere, or any byte changed (checksum fixed): refused. */
	for (size_t n = 0; n < a.len; n++) {
		err_clear(&msg);
		assert_int_not_equal(store__direfs_decode((const uint8_t *)a.data, n, &d, &msg), 0);
	}
	for (size_t i = 0; i < a.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			buf_reset(&b);
			assert_int_equal(buf_append(&b, a.data, a.len), 0);
			((uint8_t *)b.data)[i] ^= (uint8_t)(1u << bit);
			if (i >= DIREFS_HEADER_BYTES)
				store__objhead_seal(&b, 0); /* the CRC of the edited body */
			err_clear(&msg);
			if (store__direfs_decode((const uint8_t *)b.data, b.len, &d, &msg) == 0) {
				/* Some flips still decode (a time, a name's byte): in order. */
				for (size_t k = 1; k < d.n_ids; k++)
					assert_true(strcmp(d.ids[k - 1].id, d.ids[k].id) < 0);
				store__direfs_release(&d);
			} else {
				assert_true(msg.text[0] != '\0');
			}
		}
	/* Without a fixed checksum, a flipped body byte is a mismatch. */
	buf_reset(&b);
	assert_int_equal(buf_append(&b, a.data, a.len), 0);
	((uint8_t *)b.data)[a.len - 1] ^= 1;
	err_clear(&msg);
	assert_int_equal(store__direfs_decode((const uint8_t *)b.data, b.len, &d, &msg), ERR_CORRUPT);
	assert_non_null(strstr(msg.text, "checksum"));
	/* A body that checks but does not decode: the field and its offset are named. */
	buf_reset(&b);
	assert_int_equal(buf_append(&b, a.data, DIREFS_HEADER_BYTES + 1), 0);
	store__objhead_seal(&b, 0);
	err_clear(&msg);
	assert_int_equal(store__direfs_decode((const uint8_t *)b.data, b.len, &d, &msg), ERR_CORRUPT);
	assert_string_equal(msg.text, "debuginfo-refs: write time truncated at byte 16");
	buf_reset(&b);
	assert_int_equal(buf_append(&b, a.data, DIREFS_HEADER_BYTES), 0);
	assert_int_equal(buf_put_svarint(&b, 0), 0);
	assert_int_equal(buf_put_uvarint(&b, (uint64_t)DIREFS_MAX_IDS + 1), 0);
	store__objhead_seal(&b, 0);
	err_clear(&msg);
	assert_int_equal(store__direfs_decode((const uint8_t *)b.data, b.len, &d, &msg), ERR_CORRUPT);
	assert_string_equal(msg.text, "debuginfo-refs: id count 2097153 (at most 2097152) at byte 17");
	buf_release(&a);
	buf_release(&b);
	store__direfs_release(&r);
}

/* ---- the writer's step ---- */

static int64_t fake_now;

#define ID_A "aa000000000000000000000000000000000000a1"
#define ID_B "bb000000000000000000000000000000000000b2"

struct seen_by_hook {
	int calls, complete;
	int64_t delay;
	size_t n;
	char id[8][DIREFS_ID_MAX + 1];
	int64_t last[8];
	int referenced[8];
	const char *forget; /* the entry to forget, or NULL */
	const char *see;    /* a build ID to record as seen, or NULL */
};

static int hook(void *ctx, struct store_direfs *r, const struct store_direfs_pass *p)
{
	struct seen_by_hook *h = ctx;

	h->calls++;
	h->complete = p->complete;
	h->delay = p->delay_ns;
	h->n = store_direfs_count(r);
	assert_true(h->n <= 8);
	for (size_t i = 0; i < h->n; i++) {
		struct store_direfs_entry e;

		store_direfs_at(r, i, &e);
		snprintf(h->id[i], sizeof(h->id[i]), "%s", e.build_id);
		h->last[i] = e.last_ns;
		h->referenced[i] = e.referenced;
		if (h->forget && !strcmp(e.build_id, h->forget))
			store_direfs_forget(r, i);
	}
	if (h->see)
		assert_int_equal(store_direfs_seen(r, h->see, p->now_ns), 0);
	return 0;
}

struct objstore_entry_copy {
	char key[256];
	uint64_t size;
};

/* Copies the key listed last, and its size, into arg. */
static int last_key(void *arg, const struct objstore_entry *e)
{
	struct objstore_entry_copy *k = arg;

	snprintf(k->key, sizeof(k->key), "%s", e->key);
	k->size = e->size;
	return 0;
}

static void test_writer(void **state)
{
	struct gen_deploy dep;
	struct err_msg msg = { { 0 } };
	struct objstore *os;
	struct store *in, *c;
	struct seen_by_hook h;
	struct store_direfs_hook hk = { hook, &h };
	struct objstore_stats before, after;
	struct store_direfs d;
	struct buf b;

	(void)state;
	memset(&h, 0, sizeof(h));
	fake_now = T0 + 100 * RANGE;
	assert_int_equal(gen_deploy_open(&dep, &fake_now), 0);
	os = dep.os;
	in = gen_deploy_role(&dep, STORE_BUCKET_PRUNE | STORE_NO_COMPACT);
	c = gen_deploy_role(&dep, STORE_BUCKET_INDEX | STORE_NO_COMPACT);
	assert_true(in && c);
	/* A in two blocks (the newest profile counts), B in one. */
	assert_int_equal(gen_ref_profile(in, "t", ID_A, T0 + SEC), 0);
	assert_int_equal(gen_ref_profile(in, "t", ID_A, T0 + RANGE + 5 * SEC), 0);
	assert_int_equal(gen_ref_profile(in, "u", ID_B, T0 + 2 * SEC), 0);
	assert_int_equal(store_maintain(in, STORE_MAINT_SEAL_ALL, NULL, NULL), 0);

	/* Without a hook, nothing is kept. */
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	buf_init(&b, DIREFS_MAX_BYTES);
	assert_int_equal(objstore_get(os, DIREFS_KEY, &b, &msg), ERR_NOT_FOUND);

	store_direfs_hook_set(c, &hk);
	h.see = "cc00";
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	assert_int_equal(h.calls, 1);
	assert_true(h.complete);
	assert_int_equal(h.delay, 30 * SEC + RANGE + 60 * SEC);
	assert_int_equal(h.n, 2);
	assert_string_equal(h.id[0], ID_A);
	assert_int_equal(h.last[0], T0 + RANGE + 5 * SEC);
	assert_true(h.referenced[0]);
	assert_string_equal(h.id[1], ID_B);
	assert_int_equal(h.last[1], T0 + 2 * SEC);

	/* The object holds the three blocks' refs and what the hook saw. */
	assert_int_equal(objstore_get(os, DIREFS_KEY, &b, &msg), 0);
	assert_int_equal(store__direfs_decode((const uint8_t *)b.data, b.len, &d, &msg), 0);
	assert_int_equal(d.n_ids, 3);
	assert_string_equal(d.ids[2].id, "cc00");
	assert_int_equal(d.ids[2].last_ns, fake_now);
	assert_int_equal(d.n_tenants, 2);
	assert_int_equal(d.tenants[0].n_blocks, 2);
	assert_int_equal(d.tenants[1].n_blocks, 1);
	assert_int_equal(d.tenants[1].blocks[0].n_refs, 1);
	assert_int_equal(d.tenants[1].blocks[0].refs[0], 1);
	store__direfs_release(&d);

	/* The next pass reads no footer: the object had every block. */
	h.see = NULL;
	objstore_stats(os, &before);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	objstore_stats(os, &after);
	assert_int_equal(after.op[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_OK],
			 before.op[OBJSTORE_OP_RANGE].requests[OBJSTORE_RES_OK]);
	assert_int_equal(h.n, 3);
	assert_false(h.referenced[2]);

	/* Forgotten, "cc00" goes; a referenced entry cannot be forgotten. */
	h.forget = "cc00";
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	h.forget = ID_A;
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	assert_int_equal(h.n, 2);
	assert_string_equal(h.id[0], ID_A);
	h.forget = NULL;

	/* A corrupt object is rebuilt from the footers. */
	assert_int_equal(objstore_put(os, DIREFS_KEY, "UNHXDIRFjunk", 12, 0, &msg), 0);
	assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
	assert_int_equal(h.n, 2);
	assert_int_equal(h.last[0], T0 + RANGE + 5 * SEC);

	/* A counted block whose footer cannot be read (the same size, other
	 * bytes) makes the pass incomplete: nothing may be deleted by it. */
	{
		struct objstore_entry_copy k = { "", 0 };
		char *junk;

		assert_int_equal(objstore_list(os, "blocks/", last_key, &k, &msg), 0);
		assert_true(k.key[0] && k.size > 0);
		junk = calloc(1, (size_t)k.size);
		assert_non_null(junk);
		assert_int_equal(objstore_put(os, k.key, junk, (size_t)k.size, 0, &msg), 0);
		free(junk);
		assert_int_equal(objstore_delete(os, DIREFS_KEY, &msg), 0);
		assert_int_equal(store_maintain(c, 0, NULL, NULL), 0);
		assert_false(h.complete);
	}

	store_direfs_hook_set(c, NULL);
	buf_release(&b);
	gen_deploy_close(&dep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
