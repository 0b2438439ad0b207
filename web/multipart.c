/*
 * multipart.c - a bounded multipart/form-data parser (RFC 7578 over the
 * RFC 2046 §5.1 syntax), enough for Pyroscope clients that send the pprof
 * in a `profile` field.  Works in place over the received body: parts are
 * pointers into it, nothing is copied or allocated.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "web_int.h"

/* Characters RFC 2046 allows in a boundary ("bchars"). */
static int is_bchar(int c)
{
	return isalnum(c) || strchr("'()+_,-./:=? ", c) != NULL;
}

int web__multipart_boundary(const char *content_type, char *out, size_t out_len,
			    struct err_msg *msg)
{
	const char *p;
	size_t n = 0;

	if (!web__media_type_is(content_type, "multipart/form-data"))
		return err_set(msg, ERR_INVALID, "Content-Type is not multipart/form-data");
	p = strchr(content_type, ';');
	while (p) {
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "boundary=", 9) == 0)
			break;
		p = strchr(p, ';');
	}
	if (!p)
		return err_set(msg, ERR_INVALID, "multipart/form-data without a boundary");
	p += 9;
	if (*p == '"') {
		const char *q = strchr(++p, '"');

		if (!q)
			return err_set(msg, ERR_INVALID, "multipart boundary: unterminated quote");
		n = (size_t)(q - p);
	} else {
		while (p[n] && p[n] != ';' && p[n] != ' ' && p[n] != '\t')
			n++;
	}
	if (n == 0 || n > WEB_BOUNDARY_MAX || n >= out_len)
		return err_set(msg, ERR_INVALID, "multipart boundary: length %zu not in 1..%d", n,
			       WEB_BOUNDARY_MAX);
	for (size_t i = 0; i < n; i++)
		if (!is_bchar((unsigned char)p[i]))
			return err_set(msg, ERR_INVALID, "multipart boundary: invalid character");
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

/* Reads one Content-Disposition parameter value at p (token or quoted). */
static const char *param_value(const char *p, const char *end, size_t *len)
{
	const char *q;

	if (p < end && *p == '"') {
		p++;
		for (q = p; q < end && *q != '"'; q++)
			if (*q == '\\' && q + 1 < end)
				q++;
		if (q >= end)
			return NULL;
		*len = (size_t)(q - p);
		return p;
	}
	for (q = p; q < end && *q != ';' && *q != ' ' && *q != '\t'; q++)
		;
	*len = (size_t)(q - p);
	return p;
}

/* Parses `form-data; name="x"; filename="y"` in [p, end) into part. */
static int parse_disposition(const char *p, const char *end, struct web__part *part,
			     struct err_msg *msg)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(end - p) < 9 || strncasecmp(p, "form-data", 9) != 0)
		return err_set(msg, ERR_INVALID, "multipart: Content-Disposition is not form-data");
	p += 9;
	while (p < end) {
		const char *eq, *val;
		size_t klen, vlen = 0;

		if (*p == ';' || *p == ' ' || *p == '\t') {
			p++;
			continue;
		}
		eq = memchr(p, '=', (size_t)(end - p));
		if (!eq)
			return err_set(msg, ERR_INVALID, "multipart: malformed Content-Disposition");
		klen = (size_t)(eq - p);
		val = param_value(eq + 1, end, &vlen);
		if (!val)
			return err_set(msg, ERR_INVALID,
				       "multipart: unterminated quote in Content-Disposition");
		if (klen == 4 && strncasecmp(p, "name", 4) == 0) {
			part->name = val;
			part->name_len = vlen;
		} else if (klen == 8 && strncasecmp(p, "filename", 8) == 0) {
			part->filename = val;
			part->filename_len = vlen;
		}
		p = val + vlen + (eq[1] == '"' ? 1 : 0);
	}
	if (!part->name)
		return err_set(msg, ERR_INVALID, "multipart: part without a name");
	return 0;
}

/*
 * Parses the header block of a part starting at p; on success *data points
 * past the empty line that ends it.
 */
static int parse_part_headers(const char *p, const char *end, struct web__part *part,
			      const char **data, struct err_msg *msg)
{
	const char *limit = end - p > WEB_MULTIPART_MAX_HEADER ? p + WEB_MULTIPART_MAX_HEADER : end;

	for (;;) {
		const char *nl = memchr(p, '\n', (size_t)(limit - p));
		const char *eol, *colon;

		if (!nl)
			return err_set(msg, ERR_INVALID,
				       limit < end ? "multipart: part headers longer than %d bytes"
						   : "multipart: truncated part headers",
				       WEB_MULTIPART_MAX_HEADER);
		eol = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
		if (eol == p) {
			*data = nl + 1;
			break;
		}
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon)
			return err_set(msg, ERR_INVALID, "multipart: malformed part header");
		if (colon - p == 19 && strncasecmp(p, "Content-Disposition", 19) == 0) {
			int rc = parse_disposition(colon + 1, eol, part, msg);

			if (rc)
				return rc;
		}
		p = nl + 1;
	}
	if (!part->name)
		return err_set(msg, ERR_INVALID, "multipart: part without Content-Disposition");
	return 0;
}

int web__multipart_parse(const char *body, size_t len, const char *boundary,
			 struct web__part *parts, size_t max_parts, size_t *n_parts,
			 struct err_msg *msg)
{
	char delim[WEB_BOUNDARY_MAX + 4];
	size_t dlen, n = 0;
	const char *end = body + len, *p;

	dlen = (size_t)snprintf(delim, sizeof(delim), "\n--%s", boundary);
	if (dlen >= sizeof(delim) || dlen <= 3)
		return err_set(msg, ERR_INVALID, "multipart: bad boundary");
	/* The first delimiter may open the body or follow a preamble line. */
	if (len >= dlen - 1 && memcmp(body, delim + 1, dlen - 1) == 0) {
		p = body + dlen - 1;
	} else {
		const char *d = memmem(body, len, delim, dlen);

		if (!d)
			return err_set(msg, ERR_INVALID, "multipart: boundary \"%s\" not found",
				       boundary);
		p = d + dlen;
	}
	for (;;) {
		struct web__part part = { 0 };
		const char *data = NULL, *d;

		/* p is just past a delimiter: "--" closes, else CRLF opens a part. */
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			break;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end && *p == '\r')
			p++;
		if (p >= end || *p != '\n')
			return err_set(msg, ERR_INVALID,
				       p >= end ? "multipart: missing closing boundary"
						: "multipart: garbage after boundary");
		p++;
		if (n == max_parts)
			return err_set(msg, ERR_INVALID, "multipart: more than %zu parts", max_parts);
		int rc = parse_part_headers(p, end, &part, &data, msg);
		if (rc)
			return rc;
		d = memmem(data, (size_t)(end - data), delim, dlen);
		if (!d)
			return err_set(msg, ERR_INVALID, "multipart: missing closing boundary");
		part.data = data;
		part.len = (size_t)(d - data);
		if (part.len > 0 && data[part.len - 1] == '\r')
			part.len--;
		parts[n++] = part;
		p = d + dlen;
	}
	if (n == 0)
		return err_set(msg, ERR_INVALID, "multipart: no parts");
	*n_parts = n;
	return 0;
}

const struct web__part *web__multipart_find(const struct web__part *parts, size_t n,
					    const char *name)
{
	size_t nlen = strlen(name);

	for (size_t i = 0; i < n; i++)
		if (parts[i].name_len == nlen && memcmp(parts[i].name, name, nlen) == 0)
			return &parts[i];
	return NULL;
}
