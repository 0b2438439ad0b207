/*
 * uuid.h - 16-byte profile ids as Pyroscope writes them: RFC 9562 UUIDs in
 * their 36-character text form (8-4-4-4-12 lowercase hex digits).
 *
 * The all-zero UUID (the "nil" UUID) means "no id" wherever unhex stores
 * one, so uuid_new_v4() never returns it (a v4 UUID has version and
 * variant bits set).
 */
#ifndef UNHEX_BASE_UUID_H
#define UNHEX_BASE_UUID_H

#include <stddef.h>
#include <stdint.h>

#define UUID_BYTES 16
#define UUID_TEXT 36 /* without the NUL */

/*
 * Parses the `len` bytes at `s` (borrowed) into out: the 36-character
 * form with dashes, or its 32 hex digits without them, either case (what
 * Go's uuid.Parse reads, without its urn and brace wrappings).  Returns 0,
 * or ERR_INVALID leaving out untouched.
 */
int uuid_parse(const char *s, size_t len, uint8_t out[UUID_BYTES]);

/* Writes the 36-character lowercase form of id and a NUL into out. */
void uuid_format(const uint8_t id[UUID_BYTES], char out[UUID_TEXT + 1]);

/*
 * A random version 4 UUID (122 random bits from the kernel's getrandom),
 * as Pyroscope's uuid.New().  Returns 0, or ERR_IO when the kernel has no
 * randomness to give.
 */
int uuid_new_v4(uint8_t out[UUID_BYTES]);

/* Whether id is the nil UUID (no id). */
int uuid_is_nil(const uint8_t id[UUID_BYTES]);

#endif
