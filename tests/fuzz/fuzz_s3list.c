/*
 * fuzz_s3list.c - libFuzzer target for the S3 answers objstore/s3xml.c
 * reads from a server: ListObjectsV2 pages and the text of an element
 * (UploadId, an error's Code and Message).  A page that parses holds at
 * most a page's keys, each valid for objstore (as S3 keys go: non-empty,
 * at most OBJSTORE_KEY_MAX bytes), and a truncated page has a token.
 * Seeds: corpus/fuzz_s3list.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/objstore_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objstore__list_page p;
	struct err_msg msg;
	char text[OBJSTORE__TOKEN_MAX + 1];

	memset(&msg, 0, sizeof(msg));
	if (objstore__xml_text((const char *)data, size, "Code", text, sizeof(text)) == 0 &&
	    strlen(text) > OBJSTORE__TOKEN_MAX)
		abort();
	if (objstore__parse_list((const char *)data, size, &p, &msg) != 0)
		return 0;
	if (p.n > OBJSTORE__LIST_MAX_KEYS || (p.truncated && !p.next_token[0]))
		abort();
	for (size_t i = 0; i < p.n; i++) {
		size_t n = strlen(p.entries[i].key);

		if (!n || n > OBJSTORE_KEY_MAX)
			abort();
	}
	objstore__list_page_release(&p);
	return 0;
}
