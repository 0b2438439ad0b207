/* test_text.c - the legacy text formats of /ingest: folded ("groups"),
 * lines, the first Go agent's transport trie and the serialized tree,
 * encoded as their writers encode them (a radix trie split at common
 * prefixes, a tree in preorder), read back into exact stacks and values;
 * truncated and corrupted bodies, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/varint.h"
#include "ingest/ingest_int.h"
#include "folded.h"

struct run {
	struct arena a;
	struct ingest_builder b;
	struct ingest_pprof p;
	struct ingest_limits lim;
	struct err_msg msg;
	int rc;
};

static int run(struct run *r, enum ingest_format f, const void *data, size_t n)
{
	memset(r, 0, sizeof(*r));
	ingest_limits_default(&r->lim);
	r->lim.max_stack_depth = 64;
	r->lim.max_samples = 1000;
	arena_init(&r->a, 64 << 20);
	ingest__b_init(&r->b, &r->a, 64 << 20, &r->lim, 1);
	r->rc = ingest__parse_text(f, data, n, &r->b, &r->msg);
	if (!r->rc)
		assert_int_equal(ingest__b_finish(&r->b, &r->p), 0);
	return r->rc;
}

static void done(struct run *r)
{
	ingest__b_release(&r->b);
	arena_release(&r->a);
}

/* Every proper prefix of the `len` bytes at `data` in format `f` is refused with a message. */
static void expect_prefixes_refused(enum ingest_format f, const char *data, size_t len)
{
	struct run r;

	for (size_t n = 0; n < len; n++) {
		if (!run(&r, f, data, n) || !r.msg.text[0])
			fail_msg("a prefix of %zu bytes of %zu: rc %d, message \"%s\"", n, len, r.rc,
				 r.msg.text);
		done(&r);
	}
}

static int64_t total(const struct ingest_pprof *p)
{
	int64_t t = 0;

	for (size_t i = 0; i < p->n_samples; i++)
		t += p->values[i];
	return t;
}

/* ---- folded and lines ------------------------------------------------------------ */

static void test_folded(void **state)
{
	static const char body[] = "main;foo;bar 3\r\n"
				   "main;foo 2\n"
				   "main;foo;bar 4\n"
				   "no-count-here\n"
				   "main;a b;c 5\n"   /* the count is after the last space */
				   "main;;x 1\n"      /* an empty middle frame */
				   "main;y; 7\n"      /* a trailing ';' adds no frame */
				   " 9\n"             /* an empty stack */
				   "main;z +6";       /* no final newline; Atoi's sign */
	struct run r;
	(void)state;

	assert_int_equal(run(&r, INGEST_FORMAT_FOLDED, body, strlen(body)), 0);
	EXPECT_FOLDED(&r.p, { "main;foo;bar", 7 }, { "main;foo", 2 }, { "main;a b;c", 5 },
		      { "main;;x", 1 }, { "main;y", 7 }, { "", 9 }, { "main;z", 6 });
	assert_int_equal(total(&r.p), 37);
	/* One function per distinct name. */
	assert_int_equal(r.p.n_functions, 9);
	done(&r);
}

static void test_folded_errors(void **state)
{
	static const struct {
		const char *body, *err;
	} bad[] = {
		{ "a;b x\n", "line 1: count 'x'" },
		{ "a 1\na;b -2\n", "line 2: count '-2'" },
		{ "a;b \n", "line 1: count ''" },
		{ "a 99999999999999999999\n", "count '99999999999999999999'" },
		{ "a 9223372036854775807\na 1\n", "overflow" },
	};
	char deep[64 * 2 + 16];
	struct run r;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(run(&r, INGEST_FORMAT_FOLDED, bad[i].body, strlen(bad[i].body)),
				 ERR_INVALID);
		if (!strstr(r.msg.text, bad[i].err))
			fail_msg("'%s': want '%s', got '%s'", bad[i].body, bad[i].err, r.msg.text);
		done(&r);
	}
	/* 65 frames, one more than the limit of the test. */
	memset(deep, 0, sizeof(deep));
	for (int i = 0; i < 65; i++)
		strcat(deep, i ? ";f" : "f");
	strcat(deep, " 1");
	assert_int_equal(run(&r, INGEST_FORMAT_FOLDED, deep, strlen(deep)), ERR_TOO_LARGE);
	assert_non_null(strstr(r.msg.text, "deeper than the limit of 64"));
	done(&r);
	/* A NUL inside a frame. */
	assert_int_equal(run(&r, INGEST_FORMAT_FOLDED, "a\0b 1", 5), ERR_INVALID);
	done(&r);
}

static void test_lines(void **state)
{
	static const char body[] = "main;foo\nmain;foo\r\n\nmain;bar\nmain;foo";
	struct run r;
	(void)state;

	assert_int_equal(run(&r, INGEST_FORMAT_LINES, body, strlen(body)), 0);
	EXPECT_FOLDED(&r.p, { "main;foo", 3 }, { "main;bar", 1 });
	assert_int_equal(r.p.n_samples, 2);
	done(&r);
}

static void test_max_samples(void **state)
{
	struct buf b;
	struct run r;
	(void)state;

	buf_init(&b, 1 << 20);
	for (int i = 0; i < 1001; i++)
		buf_printf(&b, "main;f%d 1\n", i);
	assert_int_equal(run(&r, INGEST_FORMAT_FOLDED, b.data, b.len), ERR_TOO_LARGE);
	assert_non_null(strstr(r.msg.text, "more than 1000 distinct stacks"));
	done(&r);
	buf_release(&b);
}

/* ---- trie ------------------------------------------------------------------------ */

/* The first Go agent's transport trie: a radix trie split at common byte prefixes. */
struct tnode {
	char *name;
	size_t len;
	uint64_t value;
	struct tnode *kids[32];
	int n;
};

static struct tnode *tnew(const char *name, size_t len)
{
	struct tnode *t = calloc(1, sizeof(*t));

	t->name = malloc(len + 1);
	memcpy(t->name, name, len);
	t->len = len;
	return t;
}

/* Inserts `key` with `value` as the agent's trie does (cases: new, exact, split, descend). */
static void tinsert(struct tnode *t, const char *key, size_t len, uint64_t value)
{
	while (len) {
		struct tnode *lead = NULL;
		int li = -1;
		size_t i;

		for (int k = 0; k < t->n; k++)
			if (t->kids[k]->name[0] == key[0])
				li = k;
		if (li < 0) {
			t->kids[t->n++] = tnew(key, len);
			t->kids[t->n - 1]->value += value;
			return;
		}
		lead = t->kids[li];
		for (i = 0; i < len && i < lead->len && lead->name[i] == key[i]; i++)
			;
		if (i == lead->len) {
			t = lead;
			key += i;
			len -= i;
			continue;
		}
		/* Split the edge at i: a new node holds the common prefix. */
		{
			struct tnode *mid = tnew(lead->name, i);

			memmove(lead->name, lead->name + i, lead->len - i);
			lead->len -= i;
			mid->kids[mid->n++] = lead;
			t->kids[li] = mid;
			t = mid;
			key += i;
			len -= i;
		}
	}
	t->value += value;
}

static void tserialize(const struct tnode *t, struct buf *out)
{
	buf_put_uvarint(out, t->len);
	buf_append(out, t->name, t->len);
	buf_put_uvarint(out, t->value);
	buf_put_uvarint(out, (uint64_t)t->n);
	for (int i = 0; i < t->n; i++)
		tserialize(t->kids[i], out);
}

static void tfree(struct tnode *t)
{
	for (int i = 0; i < t->n; i++)
		tfree(t->kids[i]);
	free(t->name);
	free(t);
}

static void test_trie(void **state)
{
	static const struct {
		const char *key;
		uint64_t v;
	} in[] = { { "main;foo;bar", 3 }, { "main;foo;baz", 4 }, { "main;foo", 2 },
		   { "main;fob", 1 },     { "other", 5 } };
	struct tnode *root = tnew("", 0);
	struct buf b;
	struct run r;
	(void)state;

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		tinsert(root, in[i].key, strlen(in[i].key), in[i].v);
	buf_init(&b, 1 << 20);
	tserialize(root, &b);
	assert_int_equal(run(&r, INGEST_FORMAT_TRIE, b.data, b.len), 0);
	EXPECT_FOLDED(&r.p, { "main;foo;bar", 3 }, { "main;foo;baz", 4 }, { "main;foo", 2 },
		      { "main;fob", 1 }, { "other", 5 });
	assert_int_equal(total(&r.p), 15);
	done(&r);
	/* Every prefix is refused (a trie ends at its root's last node). */
	expect_prefixes_refused(INGEST_FORMAT_TRIE, b.data, b.len);
	/* Bytes after it too. */
	buf_putc(&b, 0);
	assert_int_equal(run(&r, INGEST_FORMAT_TRIE, b.data, b.len), ERR_INVALID);
	assert_non_null(strstr(r.msg.text, "after the root"));
	done(&r);
	buf_release(&b);
	tfree(root);
}

/* ---- tree --------------------------------------------------------------------------- */

static void node(struct buf *b, const char *name, uint64_t self, uint64_t kids)
{
	buf_put_uvarint(b, strlen(name));
	buf_append(b, name, strlen(name));
	buf_put_uvarint(b, self);
	buf_put_uvarint(b, kids);
}

static void test_tree(void **state)
{
	struct buf b;
	struct run r;
	(void)state;

	buf_init(&b, 1 << 20);
	/* root -> main(1) -> {foo(2) -> bar(3), baz(4)}; other(5) */
	node(&b, "", 0, 2);
	node(&b, "main", 1, 2);
	node(&b, "foo", 2, 1);
	node(&b, "bar", 3, 0);
	node(&b, "baz", 4, 0);
	node(&b, "other", 5, 0);
	assert_int_equal(run(&r, INGEST_FORMAT_TREE, b.data, b.len), 0);
	EXPECT_FOLDED(&r.p, { "main", 1 }, { "main;foo", 2 }, { "main;foo;bar", 3 },
		      { "main;baz", 4 }, { "other", 5 });
	assert_int_equal(total(&r.p), 15);
	done(&r);
	expect_prefixes_refused(INGEST_FORMAT_TREE, b.data, b.len);
	buf_reset(&b);
	/* A child count the bytes cannot hold. */
	node(&b, "", 0, 1000000);
	node(&b, "x", 1, 0);
	assert_int_equal(run(&r, INGEST_FORMAT_TREE, b.data, b.len), ERR_INVALID);
	assert_non_null(strstr(r.msg.text, "children cannot fit"));
	done(&r);
	/* A chain deeper than the stack limit. */
	buf_reset(&b);
	for (int i = 0; i < 100; i++)
		node(&b, "f", 1, 1);
	node(&b, "f", 1, 0);
	assert_int_equal(run(&r, INGEST_FORMAT_TREE, b.data, b.len), ERR_TOO_LARGE);
	done(&r);
	buf_release(&b);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random bytes in every format: never a crash, a message on every failure. */
static void test_corrupted(void **state)
{
	uint8_t data[256];
	uint64_t seed = 42;
	struct run r;
	(void)state;

	for (int round = 0; round < 4000; round++) {
		size_t n = rnd(&seed) % sizeof(data);

		for (size_t i = 0; i < n; i++)
			data[i] = (uint8_t)(rnd(&seed) % (round % 2 ? 256 : 8));
		if (run(&r, (enum ingest_format)(INGEST_FORMAT_FOLDED + round % 4), data, n) &&
		    !r.msg.text[0])
			fail_msg("round %d: failed without a message", round);
		done(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_folded_errors),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_max_samples),
		cmocka_unit_test(test_trie),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_corrupted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
