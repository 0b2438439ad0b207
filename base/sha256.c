/*
 * sha256.c - SHA-256 through libcrypto's EVP interface (the one-shot and
 * the streaming forms), CRYPTO_memcmp for the constant-time comparison,
 * and the hex form.  OpenSSL is included here and nowhere else in base.
 */
#include "base/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/err.h"
#include "base/hex.h"

/* On the heap: callers run on web worker threads, whose stacks are small. */
#define FILE_CHUNK (64 * 1024)

int sha256_buf(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	unsigned n = 0;

	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) || n != SHA256_LEN)
		return ERR_NOMEM;
	return 0;
}

int sha256_file(const char *path, uint8_t out[SHA256_LEN], uint64_t *size)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char *chunk = malloc(FILE_CHUNK);
	uint8_t d[SHA256_LEN];
	uint64_t total = 0;
	unsigned n = 0;
	int fd = -1, rc = 0;

	if (!ctx || !chunk || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		rc = ERR_NOMEM;
		goto out;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = ERR_IO;
		goto out;
	}
	for (;;) {
		ssize_t k = read(fd, chunk, FILE_CHUNK);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			rc = ERR_IO;
			goto out;
		}
		if (k == 0)
			break;
		if (!EVP_DigestUpdate(ctx, chunk, (size_t)k)) {
			rc = ERR_NOMEM;
			goto out;
		}
		total += (uint64_t)k;
	}
	if (!EVP_DigestFinal_ex(ctx, d, &n) || n != SHA256_LEN) {
		rc = ERR_NOMEM;
		goto out;
	}
	memcpy(out, d, SHA256_LEN);
	if (size)
		*size = total;
out:
	if (fd >= 0) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	free(chunk);
	EVP_MD_CTX_free(ctx);
	return rc;
}

int sha256_equal(const uint8_t a[SHA256_LEN], const uint8_t b[SHA256_LEN])
{
	return CRYPTO_memcmp(a, b, SHA256_LEN) == 0;
}

void sha256_hex(const uint8_t d[SHA256_LEN], char out[SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < SHA256_LEN; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[SHA256_HEX_LEN] = '\0';
}

int sha256_parse_hex(const char *hex, size_t len, uint8_t out[SHA256_LEN])
{
	uint8_t d[SHA256_LEN];

	if (len != SHA256_HEX_LEN)
		return ERR_INVALID;
	for (size_t i = 0; i < SHA256_LEN; i++) {
		int h = hex_digit((unsigned char)hex[2 * i]), l = hex_digit((unsigned char)hex[2 * i + 1]);

		if (h < 0 || l < 0)
			return ERR_INVALID;
		d[i] = (uint8_t)(h << 4 | l);
	}
	memcpy(out, d, SHA256_LEN);
	return 0;
}
