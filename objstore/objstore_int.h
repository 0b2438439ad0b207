/*
 * objstore_int.h - the backends' ops table and the pure parts of the S3
 * backend (key and query encoding, retry policy, credentials file and
 * XML parsing), for objstore/'s own files and tests/objstore.
 */
#ifndef UNHEX_OBJSTORE_INT_H
#define UNHEX_OBJSTORE_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "objstore.h"

/*
 * A backend.  Keys reaching an op are valid (objstore.c checks them);
 * outputs are untouched on failure.  get_range's len is UINT64_MAX for
 * "to the end"; suffix reads are get_range with off = UINT64_MAX and len
 * the suffix's length.
 */
struct objstore_ops {
	const char *kind;
	int (*put)(struct objstore *os, const char *key, const void *data, size_t len,
		   unsigned flags, struct err_msg *msg);
	int (*get_ranges)(struct objstore *os, struct objstore_range *r, size_t n,
			  uint64_t *sizes, struct err_msg *msg);
	int (*get_if)(struct objstore *os, const char *key, const char *etag, struct buf *out,
		      char *etag_out, int *changed, struct err_msg *msg);
	int (*head)(struct objstore *os, const char *key, struct objstore_stat *st,
		    struct err_msg *msg);
	int (*del)(struct objstore *os, const char *key, struct err_msg *msg);
	int (*list)(struct objstore *os, const char *prefix,
		    int (*fn)(void *arg, const struct objstore_entry *e), void *arg,
		    struct err_msg *msg);
	void (*close)(struct objstore *os);
};

/* The counters of one operation (objstore_op_stats, atomic). */
struct objstore__counters {
	_Atomic uint64_t requests[OBJSTORE_RES_COUNT], retries, bytes_in, bytes_out;
};

/* The head of every backend's handle. */
struct objstore {
	const struct objstore_ops *ops;
	struct objstore__counters op[OBJSTORE_OP_COUNT];
	_Atomic uint64_t failures;
};

/* A conditional GET answered "not modified" (304), for objstore__count. */
#define OBJSTORE__NOT_MODIFIED 304

/*
 * Counts one finished request of kind `op` that ended with `rc` (0,
 * OBJSTORE__NOT_MODIFIED, ERR_NOT_FOUND, ERR_CONFLICT, or any other
 * failure), `retried` when
 * another attempt follows it, and the body bytes it moved.  Relaxed
 * atomics: many threads count at once.
 */
void objstore__count(struct objstore *os, enum objstore_op op, int rc, int retried,
		     uint64_t bytes_in, uint64_t bytes_out);

/* Suffix read marker of get_ranges (see objstore_ops). */
#define OBJSTORE__SUFFIX UINT64_MAX

int objstore__open_dir(const char *root, struct objstore **out, struct err_msg *msg);
int objstore__open_s3(const struct objstore_s3_config *cfg, struct objstore **out,
		      struct err_msg *msg);

/* --- encoding (s3util.c) --- */

/*
 * Appends `s` percent-encoded as SigV4 wants (RFC 3986: A-Z a-z 0-9 - . _ ~
 * stay, every other byte is %XX in upper case); '/' stays when keep_slash
 * (an object key in a path), else it is %2F (a query value).
 */
int objstore__uri_encode(struct buf *out, const char *s, int keep_slash);

struct objstore__param {
	const char *name, *value; /* borrowed, not encoded; value NULL: "name=" */
};

/*
 * Appends the canonical query string of `n` parameters: sorted by name,
 * names and values encoded, joined by '&' (SigV4's CanonicalQueryString,
 * which libcurl 7.88 signs as given).  Sorts `p` in place.
 */
int objstore__query(struct buf *out, struct objstore__param *p, size_t n);

/*
 * The URL of `key` ("" for the bucket itself) in `bucket` at `endpoint`
 * (scheme://host[:port][/path]), path style or virtual-host style, with
 * the canonical `query` (may be "") appended after '?'.
 */
int objstore__url(struct buf *out, const char *endpoint, const char *bucket, int path_style,
		  const char *key, const char *query, struct err_msg *msg);

/* --- retry policy (s3util.c) --- */

struct objstore__retry {
	int max_attempts;
	long base_ms, max_ms;
};

/*
 * Whether an attempt that ended with libcurl's `curl_code` (0 when the
 * transfer completed), HTTP `status` and S3 error `code` (the <Code> of
 * an error answer, "" when none) is worth another: connection failures,
 * timeouts, 5xx, 429, 408, and the codes S3 documents as transient
 * whatever their status (400 RequestTimeout: the server closed a slow
 * upload; InternalError and SlowDown, also inside the 200 answer of a
 * CompleteMultipartUpload; 409 ConditionalRequestConflict: a concurrent
 * conditional write).  1 or 0.
 */
int objstore__retryable(int curl_code, long status, const char *code);

/*
 * What an attempt's end means: 0 (success), 1 (try again: retryable and
 * `attempts` < `max_attempts`), or the final error: ERR_TIMEOUT or
 * ERR_UNAVAILABLE once the retries are spent (or on an error inside a
 * 2xx answer, `code` non-empty), else by status: 401
 * ERR_UNAUTHENTICATED, 403 ERR_PERMISSION, 404 ERR_NOT_FOUND, 409/412
 * ERR_CONFLICT, any other 4xx ERR_INVALID.
 */
int objstore__outcome(int curl_code, long status, const char *code, int attempts,
		      int max_attempts);

/*
 * The wait before attempt `attempt` + 1 (attempt >= 1 just failed):
 * exponential (base * 2^(attempt-1), at most max), half of it fixed and
 * half drawn from `rnd` ("equal jitter"), so a crowd of clients retrying
 * after one outage spreads out instead of arriving together.
 */
long objstore__backoff_ms(const struct objstore__retry *p, int attempt, uint32_t rnd);

/* --- credentials (s3util.c) --- */

#define OBJSTORE__CRED_MAX 256

struct objstore__creds {
	char access_key[OBJSTORE__CRED_MAX], secret_key[OBJSTORE__CRED_MAX];
	char session_token[4096];
};

/*
 * Reads section [profile] of an AWS shared credentials file (INI; keys
 * aws_access_key_id, aws_secret_access_key, aws_session_token; '#' and
 * ';' comments) from `text` (`len` bytes).  0, ERR_NOT_FOUND (no such
 * section or no keys in it) or ERR_INVALID (a value too long).
 */
int objstore__parse_credentials(const char *text, size_t len, const char *profile,
				struct objstore__creds *out, struct err_msg *msg);

/* --- S3 XML (s3xml.c) --- */

/*
 * The XML of S3 answers is read by a scanner of elements, not a DOM:
 * each function below looks only for the elements it needs, decodes the
 * five predefined entities and numeric character references, and bounds
 * everything by the caps here.  Bytes are untrusted: malformed input is
 * ERR_CORRUPT, never a crash.
 */
#define OBJSTORE__LIST_MAX_KEYS 1000   /* per page, as S3's own maximum */
#define OBJSTORE__TOKEN_MAX 1024       /* continuation tokens, upload ids */
#define OBJSTORE__XML_MAX (4u << 20)   /* a list page's body */

struct objstore__list_page {
	size_t n;
	struct objstore__list_entry {
		char *key; /* owned, NUL-terminated, decoded */
		uint64_t size;
	} *entries;    /* owned */
	int truncated;
	char next_token[OBJSTORE__TOKEN_MAX + 1]; /* "" when none */
};

/* Parses a ListObjectsV2 result.  0, ERR_CORRUPT, ERR_TOO_LARGE or ERR_NOMEM. */
int objstore__parse_list(const char *xml, size_t len, struct objstore__list_page *out,
			 struct err_msg *msg);
void objstore__list_page_release(struct objstore__list_page *p);

/*
 * The decoded text of the first element `name` in `xml` into out
 * (`cap` bytes with the NUL).  0, ERR_NOT_FOUND or ERR_CORRUPT (too long,
 * malformed).  Reads <UploadId> and an error's <Code> and <Message>.
 */
int objstore__xml_text(const char *xml, size_t len, const char *name, char *out, size_t cap);

#endif
