/*
 * sha256.h - SHA-256 (FIPS 180-4) for what must resist a chosen input:
 * hashed API tokens and the identity of uploaded debug files.  The digest
 * comes from OpenSSL's libcrypto (the only file of unhex that includes
 * it is sha256.c); hash.h stays the fast, non-cryptographic hash of
 * in-memory tables.
 *
 * Contracts
 *   Every function is thread-safe and keeps no state between calls.
 *   Digests are SHA256_LEN raw bytes; sha256_hex() writes the lower-case
 *   hex form (SHA256_HEX_LEN characters and a NUL).  sha256_equal()
 *   compares in time that depends only on the length, never on where the
 *   digests differ, so comparing a client's token digest leaks nothing.
 */
#ifndef UNHEX_BASE_SHA256_H
#define UNHEX_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_HEX_LEN 64

/* The digest of `len` bytes at `data` (borrowed) into out.  0 or ERR_NOMEM. */
int sha256_buf(const void *data, size_t len, uint8_t out[SHA256_LEN]);

/*
 * The digest of the whole file at `path` into out, and its size into *size
 * (may be NULL).  0, ERR_IO (errno says why) or ERR_NOMEM; out is untouched
 * on failure.
 */
int sha256_file(const char *path, uint8_t out[SHA256_LEN], uint64_t *size);

/* 1 when the digests are equal, else 0, in constant time. */
int sha256_equal(const uint8_t a[SHA256_LEN], const uint8_t b[SHA256_LEN]);

/* Lower-case hex of a digest into out (SHA256_HEX_LEN + 1 bytes). */
void sha256_hex(const uint8_t d[SHA256_LEN], char out[SHA256_HEX_LEN + 1]);

/*
 * Parses exactly SHA256_HEX_LEN hex digits (either case) at `hex` (`len`
 * bytes, need not be NUL-terminated) into out.  0 or ERR_INVALID, out
 * untouched then.
 */
int sha256_parse_hex(const char *hex, size_t len, uint8_t out[SHA256_LEN]);

#endif
