/*
 * fuzz_dot.c - libFuzzer target: the Graphviz encoder of `format=dot`
 * (query/dot.c) on call trees whose frame names are untrusted bytes.  The
 * input's first byte picks maxNodes (1..64) and the unit; the rest is lines
 * of `;`-separated frame names (any bytes but `;` and newline), each line a
 * stack root first with a value of its length; a frame name starting with
 * `+` is marked inlined.  The output must be valid UTF-8, hold no control
 * byte but the newlines that end its lines, and every quoted string must
 * close on its line, so no name can break out of its DOT string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "query/query_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const types[] = {
	"process_cpu:cpu:nanoseconds:cpu:nanoseconds",
	"memory:inuse_space:bytes:space:bytes",
	"process_cpu:samples:count:cpu:nanoseconds",
	"t:s\"x:u\\y&amp;:p:u",
};

static void check(const struct buf *b)
{
	int open = 0;

	if (!json_utf8_valid(b->data, b->len))
		abort();
	for (size_t i = 0; i < b->len; i++) {
		unsigned char c = (unsigned char)b->data[i];

		if (c == '\n') {
			if (open)
				abort();
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			abort();
		if (open && c == '\\') {
			if (i + 1 >= b->len || b->data[i + 1] == '\n')
				abort();
			i++;
		} else if (c == '"') {
			open = !open;
		}
	}
	if (open || (b->len && b->data[b->len - 1] != '\n'))
		abort();
}

/* Adds the stack of line [p, end) to `t`; 0 or an error. */
static int add_line(struct qctx *q, struct qtree *t, const uint8_t *p, const uint8_t *end)
{
	uint32_t node = 0, name;
	int64_t v = end - p + 1;
	int rc = 0;

	while (p < end && !rc) {
		const uint8_t *semi = memchr(p, ';', (size_t)(end - p));
		size_t n = semi ? (size_t)(semi - p) : (size_t)(end - p);
		int inl = n && p[0] == '+';

		rc = query__names_intern(q, &t->names, (const char *)p, n, &name);
		if (!rc)
			rc = query__tree_child(q, t, node, name, &node);
		if (!rc && inl)
			t->nodes[node].inlined = 1;
		p += n + (semi != NULL);
	}
	if (!rc)
		t->nodes[node].self[0] += v;
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct query_limits lim = { 0 };
	struct err_msg msg;
	struct qctx q;
	struct qtree t;
	struct buf b;
	const uint8_t *p, *end = data + size;
	int rc;

	if (size < 1 || size > 1 << 16)
		return 0;
	lim.max_bytes = 64 << 20;
	err_clear(&msg);
	query__ctx_init(&q, NULL, "t", &lim, &msg);
	if (query__tree_init(&q, &t))
		return 0;
	rc = 0;
	for (p = data + 1; p < end && !rc;) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		const uint8_t *le = nl ? nl : end;

		rc = add_line(&q, &t, p, le);
		p = le + 1;
	}
	if (!rc) {
		query__tree_totals(&t);
		buf_init(&b, 64 << 20);
		rc = query__dot_write(&q, &t, types[(data[0] >> 6) & 3], 1 + (data[0] & 63), &b);
		if (!rc)
			check(&b);
		buf_release(&b);
	}
	query__tree_release(&q, &t);
	if (q.mem.used)
		abort();
	return 0;
}
