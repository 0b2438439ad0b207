/*
 * kallsyms.c - kernel symbol maps (/proc/kallsyms, System.map): a strict
 * line parser, and the index of section 3 written from one, with
 * addresses made relative to `_text` so that KASLR does not matter.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hex.h"
#include "symbolize_int.h"

#define MAX_MODULE 64u

/* One parsed line; the strings point into the map (not terminated). */
struct line {
	uint64_t addr;
	char type;
	const char *name, *mod;
	size_t name_len, mod_len;
};

static int graph(char c)
{
	return c > ' ' && c < 0x7f;
}

/* Parses p[0..n) (one line without its "\n") into *l; ERR_INVALID naming line `no`. */
static int parse_line(const char *p, size_t n, size_t no, struct line *l, struct err_msg *msg)
{
	size_t i = 0, k;
	int v;

	memset(l, 0, sizeof(*l));
	for (; i < n && (v = hex_digit(p[i])) >= 0; i++) {
		if (i == 16)
			return err_set(msg, ERR_INVALID, "line %zu: address longer than 16 hex digits",
				       no);
		l->addr = l->addr << 4 | (uint64_t)v;
	}
	if (i == 0 || i == n || p[i] != ' ')
		return err_set(msg, ERR_INVALID,
			       "line %zu: expected \"ADDRESS TYPE NAME\" (hex address, then a space)",
			       no);
	i++;
	if (i + 1 >= n || p[i + 1] != ' ' ||
	    !((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || p[i] == '?'))
		return err_set(msg, ERR_INVALID,
			       "line %zu: the symbol type must be one letter followed by a space", no);
	l->type = p[i];
	i += 2;
	for (k = i; k < n && graph(p[k]); k++)
		;
	l->name = p + i;
	l->name_len = k - i;
	if (!l->name_len || l->name_len > SYM_KALLSYMS_MAX_NAME)
		return err_set(msg, ERR_INVALID, "line %zu: the symbol name must be 1 to %u printable "
			       "bytes", no, SYM_KALLSYMS_MAX_NAME);
	if (k == n)
		return 0;
	for (i = k; i < n && (p[i] == ' ' || p[i] == '\t'); i++)
		;
	if (i == k || i == n || p[i] != '[' || p[n - 1] != ']')
		return err_set(msg, ERR_INVALID,
			       "line %zu: after the name only \"[MODULE]\" may follow", no);
	l->mod = p + i + 1;
	l->mod_len = n - 1 - (i + 1);
	if (!l->mod_len || l->mod_len > MAX_MODULE)
		return err_set(msg, ERR_INVALID, "line %zu: the module name must be 1 to %u bytes",
			       no, MAX_MODULE);
	for (k = 0; k < l->mod_len; k++)
		if (!graph(l->mod[k]) || l->mod[k] == '[' || l->mod[k] == ']')
			return err_set(msg, ERR_INVALID,
				       "line %zu: the module name has a byte that is not printable", no);
	return 0;
}

static int is_func(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

typedef int (*line_fn)(void *ctx, const struct line *l);

/*
 * Parses every line of the map, calling fn for each; then checks what the
 * whole map must have.  *text is `_text`'s address.
 */
static int parse_map(const char *data, size_t len, line_fn fn, void *ctx, uint64_t *text,
		     size_t *n_funcs, struct err_msg *msg)
{
	size_t no = 0, funcs = 0, off = 0;
	int have_text = 0, rc;

	if (len > SYM_KALLSYMS_MAX_BYTES)
		return err_set(msg, ERR_TOO_LARGE, "the symbol map is over %u bytes",
			       SYM_KALLSYMS_MAX_BYTES);
	if (!len)
		return err_set(msg, ERR_INVALID, "the symbol map is empty");
	while (off < len) {
		const char *p = data + off, *nl = memchr(p, '\n', len - off);
		size_t n = nl ? (size_t)(nl - p) : len - off;
		struct line l;

		if (++no > SYM_KALLSYMS_MAX_LINES)
			return err_set(msg, ERR_TOO_LARGE, "the symbol map has over %u lines",
				       SYM_KALLSYMS_MAX_LINES);
		if ((rc = parse_line(p, n, no, &l, msg)))
			return rc;
		off += n + (nl != NULL);
		if (!l.mod && l.name_len == 5 && !memcmp(l.name, "_text", 5) && !have_text) {
			have_text = 1;
			*text = l.addr;
		}
		funcs += is_func(l.type);
		if (fn && (rc = fn(ctx, &l)))
			return rc;
	}
	if (!have_text)
		return err_set(msg, ERR_INVALID, "no _text symbol: not the kernel's /proc/kallsyms "
			       "or System.map");
	if (!*text)
		return err_set(msg, ERR_INVALID, "_text is at address 0: the map was read without "
			       "the right to see addresses (kptr_restrict); read /proc/kallsyms as "
			       "root");
	if (!funcs)
		return err_set(msg, ERR_INVALID, "the symbol map has no function symbol (type t, T, "
			       "w or W)");
	if (n_funcs)
		*n_funcs = funcs;
	return 0;
}

int sym_kallsyms_check(const void *data, size_t len, size_t *n_funcs, struct err_msg *msg)
{
	uint64_t text = 0;

	return parse_map(data, len, NULL, NULL, &text, n_funcs, msg);
}

/* A symbol kept for the index. */
struct ksym {
	uint64_t off;  /* from _text */
	size_t name;   /* 1 + offset of the name in collect.names; 0: not a function
			  (an offset: the names buffer moves as it grows) */
	uint32_t seq;  /* line order: the last function at an address wins */
};

struct collect {
	uint64_t text;
	struct ksym *v;
	size_t n, cap;
	char *names;    /* owned: NUL-terminated names, "name [mod]" for modules */
	size_t nlen, ncap;
};

static int collect_line(void *ctx, const struct line *l)
{
	struct collect *c = ctx;
	struct ksym *k;
	size_t need = l->name_len + (l->mod ? l->mod_len + 3 : 0) + 1;
	int rc;

	/* Symbols before _text or 4 GiB past it (per-CPU offsets, absolute
	 * values) are not code a profile can hold. */
	if (l->addr < c->text || l->addr - c->text > UINT32_MAX)
		return 0;
	if ((rc = GROW(c->v, c->cap, c->n + 1, SYM_KALLSYMS_MAX_LINES, NULL)))
		return rc;
	k = &c->v[c->n];
	k->off = l->addr - c->text;
	k->seq = (uint32_t)c->n++;
	k->name = 0;
	if (!is_func(l->type))
		return 0;
	if ((rc = GROW(c->names, c->ncap, c->nlen + need, SIZE_MAX, NULL)))
		return rc;
	memcpy(c->names + c->nlen, l->name, l->name_len);
	if (l->mod) {
		memcpy(c->names + c->nlen + l->name_len, " [", 2);
		memcpy(c->names + c->nlen + l->name_len + 2, l->mod, l->mod_len);
		c->names[c->nlen + need - 2] = ']';
	}
	c->names[c->nlen + need - 1] = '\0';
	k->name = c->nlen + 1;
	c->nlen += need;
	return 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (!x->name != !y->name)
		return x->name ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

int sym_kallsyms_index_buf(const void *data, size_t len, const uint8_t *bid, size_t blen,
			   struct buf *out, struct sym_index_stats *stats, struct err_msg *msg)
{
	struct collect c = { 0 };
	struct sym__named_start *e = NULL;
	size_t n = 0, funcs = 0, named = 0;
	size_t before = out->len;
	int rc;

	if (blen > SYM_BUILD_ID_MAX)
		return err_set(msg, ERR_INVALID, "build ID longer than %d bytes", SYM_BUILD_ID_MAX);
	if ((rc = parse_map(data, len, NULL, NULL, &c.text, &funcs, msg)))
		return rc;
	if ((rc = parse_map(data, len, collect_line, &c, &c.text, NULL, msg)))
		goto out;
	qsort(c.v, c.n, sizeof(*c.v), ksym_cmp);
	/* One entry per address (the best symbol there), and a last one that
	 * ends the last function a page after it starts. */
	e = malloc((c.n + 1) * sizeof(*e));
	if (!e) {
		rc = ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < c.n; i++) {
		if (n && e[n - 1].addr == c.v[i].off)
			continue;
		e[n].addr = c.v[i].off;
		e[n].name = c.v[i].name ? c.names + c.v[i].name - 1 : NULL;
		named += e[n].name != NULL;
		n++;
	}
	if (!named) {
		rc = err_set(msg, ERR_INVALID, "no function symbol lies within 4 GiB above _text");
		goto out;
	}
	if (e[n - 1].name) {
		e[n].addr = e[n - 1].addr + 4096 <= UINT32_MAX ? e[n - 1].addr + 4096 : UINT32_MAX;
		if (e[n].addr == e[n - 1].addr)
			e[n - 1].name = NULL; /* a function at the very end has no room */
		else
			e[n].name = NULL, n++;
	}
	rc = sym__index_write_symbols(e, n, 0, bid, blen, out, msg);
	if (!rc && stats)
		*stats = (struct sym_index_stats){ .ranges = n, .locations = named,
						   .file_bytes = out->len - before, .symbols = funcs };
out:
	free(e);
	grow_free(NULL, c.v, c.cap, sizeof(*c.v));
	grow_free(NULL, c.names, c.ncap, 1);
	return rc;
}

int sym_kallsyms_index_build(const char *map_path, const char *out_path, const uint8_t *bid,
			     size_t blen, struct sym_index_stats *stats, struct err_msg *msg)
{
	struct buf in, out;
	int rc;

	buf_init(&in, SYM_KALLSYMS_MAX_BYTES);
	buf_init(&out, (size_t)UINT32_MAX);
	rc = buf_read_file(&in, map_path);
	if (rc == ERR_TOO_LARGE)
		err_set(msg, rc, "the symbol map is over %u bytes", SYM_KALLSYMS_MAX_BYTES);
	else if (rc)
		err_set(msg, rc, "%s: cannot read it", map_path);
	if (!rc)
		rc = sym_kallsyms_index_buf(in.data, in.len, bid, blen, &out, stats, msg);
	if (!rc)
		rc = sym__write_atomic(out_path, out.data, out.len, msg);
	buf_release(&in);
	buf_release(&out);
	return rc;
}
