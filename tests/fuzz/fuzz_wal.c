/*
 * fuzz_wal.c - libFuzzer target: store_wal_check() over one write-ahead log
 * of arbitrary bytes (a store directory on disk is what it reads).  When
 * the first byte is odd, the checksum of every record header that fits is
 * made right first, so the fuzzer reaches the batch assembly and not only
 * the checksum test.  What it reports must be self-consistent.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "storage/storage_int.h"

#define BLOCK 32768

static char dir[64];

/* The directory holds one file: both go when the fuzzer exits. */
static void cleanup(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/000007.log", dir);
	unlink(path);
	rmdir(dir);
}

/* Writes the masked CRC-32C of type + payload into every header of p. */
static void fix_checksums(uint8_t *p, size_t n)
{
	for (size_t blk = 0; blk < n; blk += BLOCK) {
		size_t end = blk + BLOCK < n ? blk + BLOCK : n, pos = blk;

		while (pos + 7 <= end) {
			size_t len = (size_t)p[pos + 4] | (size_t)p[pos + 5] << 8;
			uint32_t c;

			if (pos + 7 + len > end)
				break;
			c = store__crc32c(0, p + pos + 6, 1);
			c = store__crc32c(c, p + pos + 7, len);
			c = ((c >> 15) | (c << 17)) + 0xa282ead8u;
			p[pos] = (uint8_t)c;
			p[pos + 1] = (uint8_t)(c >> 8);
			p[pos + 2] = (uint8_t)(c >> 16);
			p[pos + 3] = (uint8_t)(c >> 24);
			pos += 7 + len;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_wal_report r;
	struct err_msg msg;
	char path[128];
	uint8_t *copy;
	int fd;

	if (!size || size > ((size_t)4 << 20))
		return 0;
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/unhex-fuzz-wal-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	if (data[0] & 1)
		fix_checksums(copy, size - 1);
	snprintf(path, sizeof(path), "%s/000007.log", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, copy, size - 1) != (ssize_t)(size - 1))
		abort();
	close(fd);
	free(copy);
	err_clear(&msg);
	if (store_wal_check(dir, &r, &msg))
		abort(); /* the file is readable: only damage, never an error */
	if (r.files != 1 || r.bytes != size - 1)
		abort();
	if (!r.file[0] && (r.batches_after || r.entries_after || r.bytes_after))
		abort();
	if (r.batches_after > r.batches || (r.file[0] && r.offset >= size - 1))
		abort();
	return 0;
}
