/*
 * s3xml.c - reads the few elements unhex needs from S3's XML answers
 * (ListObjectsV2 pages, InitiateMultipartUpload's UploadId, an error's
 * Code and Message) with a bounded scanner; see objstore_int.h.
 *
 * Why a scanner is enough: in XML a '<' in text is always escaped, so a
 * raw '<' starts markup, and the elements read here are leaves whose
 * names occur at one depth of S3's documented schemas only.
 */
#include <stdlib.h>
#include <string.h>

#include "objstore_int.h"

static int name_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == ':' || c == '-' || c == '.';
}

/*
 * Finds the next element `name` from *pos: its text is [*b, *e), *pos
 * moves past its end tag.  1 found, 0 none, -1 malformed.
 */
static int find_elem(const char *x, size_t len, size_t *pos, const char *name, size_t *b,
		     size_t *e)
{
	size_t nl = strlen(name), p = *pos;

	while (p < len) {
		const char *lt = memchr(x + p, '<', len - p);
		size_t s, q;

		if (!lt)
			return 0;
		s = (size_t)(lt - x) + 1;
		if (s < len && (x[s] == '/' || x[s] == '?' || x[s] == '!')) {
			const char *gt = memchr(x + s, '>', len - s);

			if (!gt)
				return -1;
			p = (size_t)(gt - x) + 1;
			continue;
		}
		q = s;
		while (q < len && name_char(x[q]))
			q++;
		if (q == s || q >= len)
			return -1;
		if (q - s == nl && !memcmp(x + s, name, nl)) {
			const char *gt = memchr(x + q, '>', len - q);
			size_t t;

			if (!gt)
				return -1;
			t = (size_t)(gt - x);
			if (t > q && x[t - 1] == '/') { /* <Name/> */
				*b = *e = t + 1;
				*pos = t + 1;
				return 1;
			}
			*b = t + 1;
			for (t = *b; t + 2 + nl < len; t++) {
				if (x[t] == '<' && x[t + 1] == '/' && !memcmp(x + t + 2, name, nl) &&
				    (x[t + 2 + nl] == '>' || x[t + 2 + nl] == ' ')) {
					const char *end = memchr(x + t, '>', len - t);

					if (!end)
						return -1;
					*e = t;
					*pos = (size_t)(end - x) + 1;
					return 1;
				}
			}
			return -1;
		}
		p = q;
	}
	return 0;
}

static int put_utf8(char *out, size_t cap, size_t *n, unsigned long cp)
{
	char u[4];
	size_t k;

	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	if (cp < 0x80) {
		u[0] = (char)cp, k = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), k = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F)), k = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), k = 4;
	}
	if (*n + k >= cap)
		return -1;
	memcpy(out + *n, u, k);
	*n += k;
	return 0;
}

/* Decodes text [b, e) of x into out (cap bytes with the NUL).  0 or -1. */
static int decode(const char *x, size_t b, size_t e, char *out, size_t cap)
{
	static const struct {
		const char *name;
		char c;
	} ents[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
	size_t n = 0, i = b;

	while (i < e) {
		char c = x[i];

		if (c == '<')
			return -1;
		if (c != '&') {
			if (n + 1 >= cap)
				return -1;
			out[n++] = c;
			i++;
			continue;
		}
		i++;
		if (i < e && x[i] == '#') {
			unsigned long cp = 0;
			int hexa = 0, digits = 0;

			i++;
			if (i < e && x[i] == 'x')
				hexa = 1, i++;
			for (; i < e && x[i] != ';' && digits < 8; i++, digits++) {
				char d = x[i];
				int v = d >= '0' && d <= '9'                ? d - '0'
					: hexa && d >= 'a' && d <= 'f' ? d - 'a' + 10
					: hexa && d >= 'A' && d <= 'F' ? d - 'A' + 10
								       : -1;

				if (v < 0)
					return -1;
				cp = cp * (hexa ? 16 : 10) + (unsigned long)v;
			}
			if (!digits || i >= e || x[i] != ';' || put_utf8(out, cap, &n, cp))
				return -1;
			i++;
			continue;
		}
		size_t k = 0;

		for (; k < sizeof(ents) / sizeof(ents[0]); k++) {
			size_t l = strlen(ents[k].name);

			if (e - i >= l && !memcmp(x + i, ents[k].name, l)) {
				if (n + 1 >= cap)
					return -1;
				out[n++] = ents[k].c;
				i += l;
				break;
			}
		}
		if (k == sizeof(ents) / sizeof(ents[0]))
			return -1;
	}
	out[n] = '\0';
	return 0;
}

static int elem_text(const char *x, size_t len, const char *name, char *out, size_t cap)
{
	size_t pos = 0, b, e;
	int f = find_elem(x, len, &pos, name, &b, &e);

	if (f < 0)
		return ERR_CORRUPT;
	if (!f)
		return ERR_NOT_FOUND;
	return decode(x, b, e, out, cap) ? ERR_CORRUPT : 0;
}

int objstore__xml_text(const char *xml, size_t len, const char *name, char *out, size_t cap)
{
	return elem_text(xml, len, name, out, cap);
}

static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

void objstore__list_page_release(struct objstore__list_page *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->entries[i].key);
	free(p->entries);
	p->entries = NULL;
	p->n = 0;
}

static int parse_contents(const char *x, size_t b, size_t e, struct objstore__list_entry *ent,
			  struct err_msg *msg)
{
	char key[OBJSTORE_KEY_MAX + 1], size[32];
	int rc = elem_text(x + b, e - b, "Key", key, sizeof(key));

	if (!rc)
		rc = elem_text(x + b, e - b, "Size", size, sizeof(size));
	if (rc || parse_u64(size, &ent->size))
		return err_set(msg, ERR_CORRUPT,
			       "S3 list: a <Contents> without a valid <Key> and <Size> at byte %zu", b);
	if (!key[0])
		return err_set(msg, ERR_CORRUPT, "S3 list: an empty <Key> at byte %zu", b);
	ent->key = strdup(key);
	return ent->key ? 0 : err_set(msg, ERR_NOMEM, "S3 list: out of memory");
}

int objstore__parse_list(const char *xml, size_t len, struct objstore__list_page *out,
			 struct err_msg *msg)
{
	struct objstore__list_page p = {0};
	char flag[16];
	size_t pos = 0, b, e;
	int rc = 0, f;

	if (len > OBJSTORE__XML_MAX)
		return err_set(msg, ERR_TOO_LARGE, "S3 list: a page of %zu bytes", len);
	f = find_elem(xml, len, &pos, "ListBucketResult", &b, &e);
	if (f <= 0)
		return err_set(msg, ERR_CORRUPT, "S3 list: no <ListBucketResult>");
	pos = b;
	while (!rc) {
		size_t cb, ce;

		f = find_elem(xml, e, &pos, "Contents", &cb, &ce);
		if (f < 0)
			rc = err_set(msg, ERR_CORRUPT, "S3 list: malformed XML after byte %zu", pos);
		if (f <= 0)
			break;
		if (p.n == OBJSTORE__LIST_MAX_KEYS) {
			rc = err_set(msg, ERR_TOO_LARGE, "S3 list: more than %d keys in one page",
				     OBJSTORE__LIST_MAX_KEYS);
			break;
		}
		if (!p.entries) {
			p.entries = calloc(OBJSTORE__LIST_MAX_KEYS, sizeof(*p.entries));
			if (!p.entries) {
				rc = err_set(msg, ERR_NOMEM, "S3 list: out of memory");
				break;
			}
		}
		rc = parse_contents(xml, cb, ce, &p.entries[p.n], msg);
		if (!rc)
			p.n++;
	}
	if (!rc) {
		rc = elem_text(xml + b, e - b, "IsTruncated", flag, sizeof(flag));
		if (rc == ERR_NOT_FOUND)
			rc = 0, strcpy(flag, "false");
		if (rc || (strcmp(flag, "true") && strcmp(flag, "false")))
			rc = err_set(msg, ERR_CORRUPT, "S3 list: <IsTruncated> is not true or false");
	}
	if (!rc) {
		p.truncated = !strcmp(flag, "true");
		rc = elem_text(xml + b, e - b, "NextContinuationToken", p.next_token,
			       sizeof(p.next_token));
		if (rc == ERR_NOT_FOUND)
			rc = 0, p.next_token[0] = '\0';
		if (rc)
			rc = err_set(msg, ERR_CORRUPT,
				     "S3 list: <NextContinuationToken> malformed or over %d bytes",
				     OBJSTORE__TOKEN_MAX);
		else if (p.truncated && !p.next_token[0])
			rc = err_set(msg, ERR_CORRUPT,
				     "S3 list: truncated page without <NextContinuationToken>");
	}
	if (rc) {
		objstore__list_page_release(&p);
		return rc;
	}
	*out = p;
	return 0;
}
