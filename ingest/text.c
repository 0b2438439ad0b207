/*
 * text.c - the legacy /ingest formats of Pyroscope's first agents, read
 * into a builder: one value per stack, frames named by strings.
 *
 *   folded ("groups", the default)  one stack per line, "a;b;c 12": the
 *          count follows the last space; lines without a space are
 *          skipped; a line may end in CRLF.
 *   lines  one stack per line, "a;b;c", each line one sample; empty lines
 *          are skipped.
 *   trie   the transport trie of the first Go agent: nodes in preorder,
 *          each uvarint name length, name bytes, uvarint value, uvarint
 *          child count; a stack is the concatenation of the names from
 *          the root, and a node with a value is one.  Names are byte runs
 *          of the stacks, so an edge may end in the middle of a frame.
 *   tree   a serialized flame tree: nodes in preorder, each uvarint name
 *          length, name bytes, uvarint self value, uvarint child count;
 *          the first node is the root, whose own name and value are not
 *          part of any stack.
 *
 * In every format a stack is a string of frames, root first, separated by
 * ';', split as Pyroscope splits it: "a;;b" has an empty middle frame and
 * a trailing ';' adds none.  Values are counts, never negative.
 *
 * Bounds: the nodes of a trie or tree are read with an explicit stack of
 * at most max_stack_depth + 2 entries, and a stack string is at most the
 * input plus the separators of its path (bounded by the depth).
 */
#include "ingest/ingest_int.h"

#include "base/arena.h"
#include "base/err.h"
#include "base/varint.h"

#include <string.h>

int ingest__b_stack_string(struct ingest_builder *b, const char *s, size_t len, int64_t value,
			   uint32_t *scratch, struct err_msg *msg)
{
	size_t n = 0, start = 0, depth = 0;
	int rc;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != ';')
			continue;
		if (i == len && start == len)
			break;
		if (depth == b->lim->max_stack_depth)
			return err_set(msg, ERR_TOO_LARGE,
				       "stack deeper than the limit of %zu frames",
				       b->lim->max_stack_depth);
		if (memchr(s + start, '\0', i - start))
			return err_set(msg, ERR_INVALID, "frame name holds a NUL byte");
		if (i - start > INGEST_MAX_FRAME_BYTES)
			return err_set(msg, ERR_TOO_LARGE, "frame name longer than %d bytes",
				       INGEST_MAX_FRAME_BYTES);
		rc = ingest__b_function(b, s + start, i - start, &scratch[depth]);
		if (!rc)
			rc = ingest__b_location(b, scratch[depth], 0, &scratch[depth]);
		if (rc)
			return rc;
		depth++;
		start = i + 1;
	}
	/* Root first in the text, leaf first in a sample. */
	for (n = 0; n < depth / 2; n++) {
		uint32_t t = scratch[n];

		scratch[n] = scratch[depth - 1 - n];
		scratch[depth - 1 - n] = t;
	}
	rc = ingest__b_sample(b, scratch, depth, 0, &value, NULL);
	if (rc == ERR_INVALID)
		return err_set(msg, rc, "the values of one stack overflow");
	if (rc == ERR_TOO_LARGE && b->n_samples >= b->lim->max_samples)
		return err_set(msg, rc, "more than %zu distinct stacks", b->lim->max_samples);
	return rc;
}

/* Scratch for one stack's location indices: max_stack_depth entries. */
static uint32_t *scratch_new(struct ingest_builder *b)
{
	return arena_alloc(&b->t, (b->lim->max_stack_depth + 1) * sizeof(uint32_t));
}

/* A decimal count as strconv.Atoi reads it (optional sign), not negative. */
static int parse_count(const char *s, size_t n, int64_t *out)
{
	int64_t v = 0;
	size_t i = 0;

	if (i < n && s[i] == '+')
		i++;
	if (i == n)
		return ERR_INVALID;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return ERR_INVALID;
		if (v > (INT64_MAX - (s[i] - '0')) / 10)
			return ERR_INVALID;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Calls one line at a time, as Go's bufio.ScanLines cuts them. */
static int each_line(const char *p, size_t n, int folded, struct ingest_builder *b,
		     uint32_t *scratch, struct err_msg *msg)
{
	size_t line = 0, i = 0;
	int rc;

	while (i < n) {
		const char *s = p + i, *nl = memchr(s, '\n', n - i);
		size_t len = nl ? (size_t)(nl - s) : n - i;
		int64_t v = 1;

		i += len + (nl ? 1 : 0);
		line++;
		if (len && s[len - 1] == '\r')
			len--;
		if (folded) {
			const char *sp = NULL;

			for (size_t k = len; k > 0; k--)
				if (s[k - 1] == ' ') {
					sp = s + k - 1;
					break;
				}
			if (!sp)
				continue;
			if (parse_count(sp + 1, len - (size_t)(sp + 1 - s), &v))
				return err_set(msg, ERR_INVALID,
					       "folded: line %zu: count '%.*s' is not a non-negative integer",
					       line, (int)(len - (size_t)(sp + 1 - s) > 32 ? 32 : len - (size_t)(sp + 1 - s)),
					       sp + 1);
			len = (size_t)(sp - s);
		} else if (len == 0) {
			continue;
		}
		rc = ingest__b_stack_string(b, s, len, v, scratch, msg);
		if (rc)
			return err_set(msg, rc, "%s: line %zu: %s", folded ? "folded" : "lines",
				       line, err_str(rc));
	}
	return 0;
}

/* ---- trie and tree -------------------------------------------------------- */

struct node {
	uint64_t left;   /* children not read yet */
	size_t path_len; /* bytes of the path up to and including this node */
};

struct reader {
	const uint8_t *start, *p, *end;
	const char *what;
	struct err_msg *msg;
};

static int read_uv(struct reader *r, uint64_t *v)
{
	size_t n = varint_get(r->p, r->end, v);

	if (!n)
		return err_set(r->msg, ERR_INVALID, "%s: truncated or overlong varint at byte %zu",
			       r->what, (size_t)(r->p - r->start));
	r->p += n;
	return 0;
}

/*
 * Reads both preorder formats.  The path is the stack string so far: for
 * a trie the names concatenated, for a tree ";" + name per node (the
 * root's included), of which Pyroscope drops the first two bytes.
 */
static int read_nodes(const uint8_t *p, size_t n, int tree, struct ingest_builder *b,
		      uint32_t *scratch, struct err_msg *msg)
{
	struct reader r = { p, p, p + n, tree ? "tree" : "trie", msg };
	size_t max = b->lim->max_stack_depth + 2, top = 0;
	struct node *st;
	char *path;
	size_t path_len = 0;
	int rc;

	st = arena_alloc(&b->t, max * sizeof(*st));
	/* A path holds names read from the input plus one ';' per level. */
	path = arena_alloc(&b->t, n + max + 1);
	if (!st || !path)
		return arena_failed(&b->t);
	for (;;) {
		uint64_t name_len = 0, value = 0, children = 0;

		if ((rc = read_uv(&r, &name_len)))
			return rc;
		if (name_len > (uint64_t)(r.end - r.p))
			return err_set(msg, ERR_INVALID, "%s: a name of %llu bytes, past the end",
				       r.what, (unsigned long long)name_len);
		if (name_len > INGEST_MAX_FRAME_BYTES)
			return err_set(msg, ERR_TOO_LARGE, "%s: a name longer than %d bytes", r.what,
				       INGEST_MAX_FRAME_BYTES);
		if (tree)
			path[path_len++] = ';';
		memcpy(path + path_len, r.p, name_len);
		path_len += name_len;
		r.p += name_len;
		if ((rc = read_uv(&r, &value)) || (rc = read_uv(&r, &children)))
			return rc;
		if (value > INT64_MAX)
			return err_set(msg, ERR_INVALID, "%s: value %llu out of range", r.what,
				       (unsigned long long)value);
		if (children > (uint64_t)(r.end - r.p) / 3)
			return err_set(msg, ERR_INVALID, "%s: %llu children cannot fit in %zu bytes",
				       r.what, (unsigned long long)children,
				       (size_t)(r.end - r.p));
		if (value && (!tree || path_len > 2)) {
			rc = tree ? ingest__b_stack_string(b, path + 2, path_len - 2, (int64_t)value,
							   scratch, msg)
				  : ingest__b_stack_string(b, path, path_len, (int64_t)value, scratch,
							   msg);
			if (rc)
				return rc;
		}
		if (children) {
			if (top == max)
				return err_set(msg, ERR_TOO_LARGE, "%s: nested deeper than %zu", r.what,
					       max);
			st[top].left = children;
			st[top++].path_len = path_len;
		}
		/* Next: the first unread child of the nearest unfinished node. */
		while (top > 0 && st[top - 1].left == 0)
			top--;
		if (top == 0)
			break;
		st[top - 1].left--;
		path_len = st[top - 1].path_len;
	}
	if (r.p != r.end && !tree)
		return err_set(msg, ERR_INVALID, "%s: %zu bytes after the root's last node", r.what,
			       (size_t)(r.end - r.p));
	return 0;
}

int ingest__parse_text(enum ingest_format f, const void *data, size_t n,
		       struct ingest_builder *b, struct err_msg *msg)
{
	uint32_t *scratch = scratch_new(b);

	if (!scratch)
		return arena_failed(&b->t);
	switch (f) {
	case INGEST_FORMAT_FOLDED:
		return each_line(data, n, 1, b, scratch, msg);
	case INGEST_FORMAT_LINES:
		return each_line(data, n, 0, b, scratch, msg);
	case INGEST_FORMAT_TRIE:
		return read_nodes(data, n, 0, b, scratch, msg);
	case INGEST_FORMAT_TREE:
		return read_nodes(data, n, 1, b, scratch, msg);
	default:
		return err_set(msg, ERR_INVALID, "not a text format");
	}
}
