/*
 * fuzz_headreq.c - libFuzzer target for the body of a head-block request
 * (POST /internal/v1/head-block, storage_int.h section 13), which an
 * ingester reads from any client holding a token of the query scope.  The
 * first byte is the format (1 and 2 exist, other values are refused); the
 * rest is the body.  What parses has ids strictly ascending and labels
 * strictly ascending, non-empty, NUL-free and within the caps; encoding
 * it again parses to the same request and encodes to the same bytes (the
 * very input for format 1).  The labels match a label set made of
 * themselves, and a set lacking the first of them does not.
 * Seeds: corpus/fuzz_headreq.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "storage/storage_int.h"

static void check(const struct head_req *r)
{
	if (r->n_ids > STORE_MAX_HEAD_BLOCK_IDS || r->n_eq > STORE_MAX_LABELS ||
	    (r->n_eq && !r->eq) || (!r->n_eq && r->eq))
		abort();
	for (size_t i = 1; i < r->n_ids; i++)
		if (memcmp(r->ids[i - 1], r->ids[i], BLOCK_ID_BYTES) >= 0)
			abort();
	for (size_t i = 0; i < r->n_eq; i++) {
		const struct store_label *l = &r->eq[i];
		size_t a = strlen(l->name), b = strlen(l->value);
		int c = i ? strcmp(r->eq[i - 1].name, l->name) : -1;

		if (!a || !b || a > STORE_MAX_LABEL_BYTES || b > STORE_MAX_LABEL_BYTES)
			abort();
		if (c > 0 || (c == 0 && strcmp(r->eq[i - 1].value, l->value) >= 0))
			abort();
	}
	if (!store__head_req_matches(r, r->eq, r->n_eq))
		abort();
	if (r->n_eq && store__head_req_matches(r, r->eq + 1, r->n_eq - 1))
		abort();
}

static int same(const struct head_req *a, const struct head_req *b)
{
	if (a->n_ids != b->n_ids || a->n_eq != b->n_eq ||
	    (a->n_ids && memcmp(a->ids, b->ids, a->n_ids * BLOCK_ID_BYTES)))
		return 0;
	for (size_t i = 0; i < a->n_eq; i++)
		if (strcmp(a->eq[i].name, b->eq[i].name) || strcmp(a->eq[i].value, b->eq[i].value))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct head_req r, s;
	struct buf e, again;
	int format, f2;

	if (size < 1 || size > ((size_t)1 << 20))
		return 0;
	format = data[0];
	if (store__head_req_parse(format, data + 1, size - 1, &r, NULL))
		return 0;
	check(&r);
	buf_init(&e, (size_t)1 << 21);
	if (store__head_req_encode(r.ids, r.n_ids, r.eq, r.n_eq, &e, &f2) ||
	    f2 != (r.n_eq ? 2 : 1) || store__head_req_parse(f2, e.data, e.len, &s, NULL))
		abort();
	if (!same(&r, &s))
		abort();
	if (format == 1 && (e.len != size - 1 || (e.len && memcmp(e.data, data + 1, e.len))))
		abort();
	buf_init(&again, (size_t)1 << 21);
	if (store__head_req_encode(s.ids, s.n_ids, s.eq, s.n_eq, &again, &f2) ||
	    again.len != e.len || (e.len && memcmp(again.data, e.data, e.len)))
		abort();
	buf_release(&again);
	store__head_req_release(&s);
	store__head_req_release(&r);
	buf_release(&e);
	return 0;
}
