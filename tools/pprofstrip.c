/*
 * pprofstrip.c - removes the names from a pprof: every Location's Lines,
 * every Function, and the mappings' has_functions/has_filenames/
 * has_line_numbers/has_inline_frames, keeping the addresses.  What a
 * producer that does not symbolize sends (an eBPF agent, a stripped
 * binary's runtime), made from a real profile that had names, so tests
 * can check that the server names the same frames from debug info.
 *
 *   pprofstrip IN OUT        (IN gzipped or raw; OUT is written gzipped)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "profile.pb-c.h"

#define MAX_BYTES (1024u * 1024 * 1024)

typedef Perftools__Profiles__Profile Profile;

static void strip(Profile *p)
{
	for (size_t i = 0; i < p->n_location; i++)
		p->location[i]->n_line = 0;
	p->n_function = 0;
	for (size_t i = 0; i < p->n_mapping; i++) {
		p->mapping[i]->has_functions = 0;
		p->mapping[i]->has_filenames = 0;
		p->mapping[i]->has_line_numbers = 0;
		p->mapping[i]->has_inline_frames = 0;
	}
}

int main(int argc, char **argv)
{
	struct err_msg msg = { "" };
	struct buf file, raw, out;
	Profile *p = NULL;
	FILE *f = NULL;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: pprofstrip IN OUT\n");
		return 2;
	}
	buf_init(&file, MAX_BYTES);
	buf_init(&raw, MAX_BYTES);
	buf_init(&out, MAX_BYTES);
	if ((rc = buf_read_file(&file, argv[1]))) {
		err_set(&msg, rc, "%s: cannot read", argv[1]);
		goto out;
	}
	rc = is_gzip(file.data, file.len) ? gunzip_capped(file.data, file.len, MAX_BYTES, &raw, &msg)
					  : buf_append(&raw, file.data, file.len);
	if (rc)
		goto out;
	p = perftools__profiles__profile__unpack(NULL, raw.len, (const uint8_t *)raw.data);
	if (!p) {
		rc = err_set(&msg, ERR_INVALID, "%s: not a pprof protobuf", argv[1]);
		goto out;
	}
	/* The Functions and Lines stay allocated by unpack: the counts hide
	 * them from pack, and free_unpacked frees by the allocator's list. */
	{
		size_t nf = p->n_function, *nl = calloc(p->n_location + 1, sizeof(*nl));

		if (!nl) {
			rc = err_set(&msg, ERR_NOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < p->n_location; i++)
			nl[i] = p->location[i]->n_line;
		strip(p);
		buf_reset(&raw);
		rc = buf_reserve(&raw, perftools__profiles__profile__get_packed_size(p));
		if (!rc) {
			raw.len = perftools__profiles__profile__pack(p, (uint8_t *)raw.data);
			rc = gzip_compress(raw.data, raw.len, 6, &out);
		}
		p->n_function = nf;
		for (size_t i = 0; i < p->n_location; i++)
			p->location[i]->n_line = nl[i];
		free(nl);
	}
	if (rc) {
		err_set(&msg, rc, "encoding the profile");
		goto out;
	}
	if (!(f = fopen(argv[2], "wb")) || fwrite(out.data, 1, out.len, f) != out.len) {
		rc = err_set(&msg, ERR_IO, "%s: cannot write", argv[2]);
		goto out;
	}
out:
	if (f && fclose(f) && !rc)
		rc = err_set(&msg, ERR_IO, "%s: cannot write", argv[2]);
	if (rc)
		fprintf(stderr, "pprofstrip: %s: %s\n", err_str(rc), msg.text);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	buf_release(&file);
	buf_release(&raw);
	buf_release(&out);
	return rc ? 1 : 0;
}
