/*
 * fuzz_perfmap.c - libFuzzer target for perf map files (base/perfmap.c):
 * uploaded text, and the stored record read back.  A map that parses must
 * be sorted with distinct starts, find each entry at its start, and
 * survive encode -> decode unchanged; the bytes as a stored record must
 * decode or be refused without reading past them, and its header
 * (perfmap_uploaded_ns) agree with the whole.  Seeds: corpus/fuzz_perfmap.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m, d;
	struct err_msg msg;
	struct buf b;
	int64_t ns;

	memset(&msg, 0, sizeof(msg));
	if (perfmap_decode(data, size, &d, &ns, &msg) == 0) {
		int64_t hns;

		/* The header alone reads what the whole record says. */
		if (perfmap_uploaded_ns(data, size, &hns) || hns != ns)
			abort();
		perfmap_release(&d);
	} else {
		int64_t hns;

		(void)perfmap_uploaded_ns(data, size, &hns); /* never reads past size */
	}
	if (perfmap_parse((const char *)data, size, &m, &msg) != 0)
		return 0;
	buf_init(&b, (size_t)64 << 20);
	for (size_t i = 0; i < m.n; i++) {
		if (i && m.e[i].start <= m.e[i - 1].start)
			abort();
		if (m.e[i].size && perfmap_find(&m, m.e[i].start) != &m.e[i])
			abort();
		if (strlen(perfmap_name(&m, &m.e[i])) != m.e[i].name_len)
			abort();
	}
	if (perfmap_encode(&m, 42, &b) || perfmap_decode(b.data, b.len, &d, &ns, &msg) ||
	    d.n != m.n || ns != 42 || perfmap_uploaded_ns(b.data, b.len, &ns) || ns != 42)
		abort();
	for (size_t i = 0; i < m.n; i++)
		if (d.e[i].start != m.e[i].start || d.e[i].size != m.e[i].size ||
		    strcmp(perfmap_name(&d, &d.e[i]), perfmap_name(&m, &m.e[i])) != 0)
			abort();
	perfmap_release(&d);
	perfmap_release(&m);
	buf_release(&b);
	return 0;
}
