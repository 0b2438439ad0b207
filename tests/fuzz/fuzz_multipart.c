/*
 * fuzz_multipart.c - libFuzzer target: multipart/form-data request bodies
 * (web/multipart.c), as POST /ingest reads them.  The input's first line is
 * the Content-Type header value (so the boundary parser is fuzzed too), the
 * rest the body, copied into a buffer of exactly its size so any read past
 * it is caught.  On success every part must lie inside the body, in order;
 * any failure must come with a message.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "web/web_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A non-empty [p, p+n) lies inside [lo, hi); an empty one may sit at hi. */
static int inside(const char *p, size_t n, const char *lo, const char *hi)
{
	return p >= lo && p <= hi && n <= (size_t)(hi - p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t ct_len = nl ? (size_t)(nl - data) : size;
	size_t body_len = nl ? size - ct_len - 1 : 0, n = 0;
	struct web__part parts[WEB_MULTIPART_MAX_PARTS];
	char boundary[WEB_BOUNDARY_MAX + 1];
	struct err_msg msg;
	char *ct, *body;
	int rc;

	if (ct_len > 1024)
		return 0;
	ct = malloc(ct_len + 1);
	body = malloc(body_len ? body_len : 1);
	if (!ct || !body)
		abort();
	memcpy(ct, data, ct_len);
	ct[ct_len] = '\0';
	if (body_len)
		memcpy(body, nl + 1, body_len);

	err_clear(&msg);
	rc = web__multipart_boundary(ct, boundary, sizeof(boundary), &msg);
	if (rc) {
		assert(rc == ERR_INVALID && msg.text[0]);
		goto out;
	}
	assert(strlen(boundary) >= 1 && strlen(boundary) <= WEB_BOUNDARY_MAX);
	err_clear(&msg);
	rc = web__multipart_parse(body, body_len, boundary, parts, WEB_MULTIPART_MAX_PARTS, &n,
				  &msg);
	if (rc) {
		assert(rc == ERR_INVALID && msg.text[0]);
		goto out;
	}
	assert(n >= 1 && n <= WEB_MULTIPART_MAX_PARTS);
	for (size_t i = 0; i < n; i++) {
		const char *end = body + body_len;

		assert(inside(parts[i].name, parts[i].name_len, body, end));
		assert(!parts[i].filename ||
		       inside(parts[i].filename, parts[i].filename_len, body, end));
		assert(inside(parts[i].data, parts[i].len, body, end));
		assert(i == 0 || parts[i].data > parts[i - 1].data + parts[i - 1].len);
	}
	/* The lookup POST /ingest makes, over the parts just returned. */
	(void)web__multipart_find(parts, n, "profile");
out:
	free(ct);
	free(body);
	return 0;
}
