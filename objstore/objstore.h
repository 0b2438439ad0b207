/*
 * objstore.h - named, immutable-by-convention objects in a flat key space:
 * a local directory or an S3-compatible bucket (AWS S3, Ceph RGW, MinIO),
 * behind one interface, so storage/ can put a sealed block and read back
 * its footer and sections by range without knowing where they live.
 *
 * Design
 *   A `struct objstore` is a backend (ops table, objstore_int.h) plus its
 *   configuration.  Keys are 1..OBJSTORE_KEY_MAX bytes of printable ASCII
 *   without "." or ".." components, empty components or a leading "/"
 *   (both backends enforce the same rule, so a key valid for one is valid
 *   for the other).  Objects are written whole: a put is atomic (the
 *   directory backend writes a temporary file and links it in; S3 makes
 *   an object visible only once its upload completed).  With
 *   OBJSTORE_CREATE_ONCE a put fails with ERR_CONFLICT when the key
 *   exists (S3: `If-None-Match: *`, HTTP 412), which is how two writers
 *   of the same block never replace each other's bytes.
 *
 *   S3 requests are signed by libcurl (CURLOPT_AWS_SIGV4) and driven by a
 *   curl multi handle, so a batch of range reads or the parts of a
 *   multipart upload run in parallel.  Every request is retried with
 *   exponential backoff and jitter on 5xx (503 SlowDown included), 429,
 *   connection failures, timeouts and the error codes S3 documents as
 *   transient (400 RequestTimeout, an InternalError inside the 200 of a
 *   CompleteMultipartUpload), at most `max_attempts` times; a
 *   request that makes no progress for `stall_ms` is a timeout, so no call
 *   waits forever on a server that stopped answering.
 *
 * Errors
 *   ERR_NOT_FOUND   no such key (404)
 *   ERR_CONFLICT    OBJSTORE_CREATE_ONCE and the key exists (412)
 *   ERR_PERMISSION  the server refused the credentials or the request
 *                   (403; the message names S3's code, e.g.
 *                   SignatureDoesNotMatch)
 *   ERR_INVALID     a bad key, range (416) or configuration
 *   ERR_TOO_LARGE   a response past the caller's buffer cap
 *   ERR_TIMEOUT     the last attempt timed out
 *   ERR_UNAVAILABLE the last attempt could not connect or got a 5xx
 *   ERR_CORRUPT     a response that is not what S3 promises
 *   ERR_IO          the directory backend's file system failed
 *   Every failure fills the caller's err_msg with the key and the cause.
 *
 * Threading
 *   A handle may be used by several threads at once; each call uses a
 *   connection pool of its own for its duration.  objstore_stats() reads
 *   atomic counters.
 */
#ifndef UNHEX_OBJSTORE_OBJSTORE_H
#define UNHEX_OBJSTORE_OBJSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"

#define OBJSTORE_KEY_MAX 1024

/* S3's smallest part but the last of a multipart upload. */
#define OBJSTORE_PART_MIN (5u << 20)

struct objstore;

struct objstore_s3_config {
	const char *endpoint; /* "http://127.0.0.1:7480", "https://s3.eu-west-1.amazonaws.com" */
	const char *bucket;
	const char *region;   /* NULL: "us-east-1" */
	int path_style;       /* 1: endpoint/bucket/key; 0: bucket.endpoint-host/key */
	/*
	 * Credentials: when access_key is NULL they come from the environment
	 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), else
	 * from the shared credentials file (credentials_file, else
	 * $AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials) and its
	 * section `profile` (else $AWS_PROFILE, else "default").
	 */
	const char *access_key, *secret_key, *session_token;
	const char *credentials_file, *profile;
	/* 0 picks the default in brackets. */
	long connect_timeout_ms; /* [5000] */
	long stall_ms;           /* [15000] no byte moved for this long: a timeout */
	long request_timeout_ms; /* [300000] one attempt, whole */
	int max_attempts;        /* [5] per request, first one included */
	long backoff_base_ms;    /* [100] */
	long backoff_max_ms;     /* [5000] */
	size_t part_size;        /* [8 MiB] multipart part size, >= OBJSTORE_PART_MIN */
	size_t multipart_min;    /* [16 MiB] objects of this size or more go in parts */
	int parallel;            /* [4] requests in flight in one call */
	int list_page;           /* [1000] keys per ListObjectsV2 page, 1..1000 */
};

/* Opens the directory `root` (created if missing) as a store. */
int objstore_open_dir(const char *root, struct objstore **out, struct err_msg *msg);

/*
 * Opens a bucket; checks the configuration and finds the credentials, but
 * sends nothing (the first request is the first contact).  cfg's strings
 * are copied.
 */
int objstore_open_s3(const struct objstore_s3_config *cfg, struct objstore **out,
		     struct err_msg *msg);

/* Closes a store (NULL is fine); no call may be running on it. */
void objstore_close(struct objstore *os);

/* "dir" or "s3". */
const char *objstore_kind(const struct objstore *os);

/* Flags of objstore_put(). */
#define OBJSTORE_CREATE_ONCE 1u

/*
 * Writes `len` bytes at `data` (borrowed) as `key`, replacing an object of
 * that name unless OBJSTORE_CREATE_ONCE.  S3: one PUT, or a multipart
 * upload (parts in parallel, aborted on failure) from cfg.multipart_min.
 */
int objstore_put(struct objstore *os, const char *key, const void *data, size_t len,
		 unsigned flags, struct err_msg *msg);

/* objstore_put() of the whole file at `path` (mapped, not copied). */
int objstore_put_file(struct objstore *os, const char *key, const char *path, unsigned flags,
		      struct err_msg *msg);

/* The whole object, appended to `out` (its cap bounds what is read). */
int objstore_get(struct objstore *os, const char *key, struct buf *out, struct err_msg *msg);

/*
 * Bytes [off, off + len) of the object appended to `out`; fewer when the
 * object ends first.  len > 0; an `off` at or past the end is ERR_INVALID.
 * *size (may be NULL) gets the object's size.
 */
int objstore_get_range(struct objstore *os, const char *key, uint64_t off, uint64_t len,
		       struct buf *out, uint64_t *size, struct err_msg *msg);

/*
 * The last `n` (> 0) bytes of the object (all of it when it is shorter)
 * appended to `out`, and the object's size into *size (may be NULL): one
 * request reads a block's footer.
 */
int objstore_get_suffix(struct objstore *os, const char *key, uint64_t n, struct buf *out,
			uint64_t *size, struct err_msg *msg);

/* One range of objstore_get_ranges(): in key, off, len, out; out rc. */
struct objstore_range {
	const char *key;  /* borrowed */
	uint64_t off, len;
	struct buf *out;  /* borrowed; bytes appended */
	int rc;           /* 0 or this range's error */
};

/*
 * Reads `n` ranges, in parallel on S3.  Returns 0 when every range was
 * read, else the first failing range's code (each range has its own rc;
 * msg tells the first failure).
 */
int objstore_get_ranges(struct objstore *os, struct objstore_range *r, size_t n,
			struct err_msg *msg);

/* An entity tag's bytes with the NUL, quotes stripped. */
#define OBJSTORE_ETAG_MAX 80

/*
 * objstore_get() unless the object's entity tag is still `etag` (NULL or
 * "": read it in any case): then *changed is 0 and nothing is appended
 * (S3: `If-None-Match`, answered 304; counted as result "not_modified").
 * Else the object is appended to out, *changed is 1 and its tag ("" when
 * the server sent none) is copied into etag_out (OBJSTORE_ETAG_MAX
 * bytes).  The directory backend's tag is the file's inode and
 * modification time: a put links in a new file, so a tag names one
 * content.  A tag with a quote, a space or a control byte is ERR_INVALID.
 */
int objstore_get_if_changed(struct objstore *os, const char *key, const char *etag,
			    struct buf *out, char *etag_out, int *changed, struct err_msg *msg);

struct objstore_stat {
	uint64_t size;
	char etag[OBJSTORE_ETAG_MAX]; /* as the server sent it, quotes stripped; "" if none */
};

int objstore_head(struct objstore *os, const char *key, struct objstore_stat *st,
		  struct err_msg *msg);

/* Deletes `key`; deleting a missing key succeeds (as S3 does). */
int objstore_delete(struct objstore *os, const char *key, struct err_msg *msg);

struct objstore_entry {
	const char *key; /* valid during the callback */
	uint64_t size;
};

/*
 * Calls `fn` for every key that starts with `prefix` ("" for all), in
 * byte order, each once.  fn returns 0 to go on, anything else to stop:
 * objstore_list then returns that value.  S3: ListObjectsV2 pages of up
 * to 1000 keys followed by their continuation tokens.
 */
int objstore_list(struct objstore *os, const char *prefix,
		  int (*fn)(void *arg, const struct objstore_entry *e), void *arg,
		  struct err_msg *msg);

/*
 * What the store did since open, by operation: one count per request
 * sent (each attempt of a retried S3 request is one; the directory
 * backend counts each file operation as one request, never retried).
 */
enum objstore_op {
	OBJSTORE_OP_PUT,    /* a whole object's PUT; a multipart upload's initiate,
			     * complete and abort */
	OBJSTORE_OP_PART,   /* one part of a multipart upload */
	OBJSTORE_OP_GET,    /* a whole object */
	OBJSTORE_OP_RANGE,  /* a range or a suffix of an object */
	OBJSTORE_OP_HEAD,
	OBJSTORE_OP_DELETE,
	OBJSTORE_OP_LIST,   /* one ListObjectsV2 page; the directory: one walk */
	OBJSTORE_OP_COUNT
};

/* How a request ended. */
enum objstore_result {
	OBJSTORE_RES_OK,
	OBJSTORE_RES_NOT_FOUND, /* 404 (a HEAD or GET of a missing key) */
	OBJSTORE_RES_CONFLICT,  /* 409/412 (create-once of an existing key) */
	OBJSTORE_RES_ERROR,     /* anything else: no answer, timeout, 403, 5xx...,
				 * an attempt that is then retried included */
	OBJSTORE_RES_NOT_MODIFIED, /* 304 (a conditional GET of an unchanged object) */
	OBJSTORE_RES_COUNT
};

/* "put", "part", "get", "range_get", "head", "delete", "list". */
const char *objstore_op_name(enum objstore_op op);
/* "ok", "not_found", "conflict", "error", "not_modified". */
const char *objstore_result_name(enum objstore_result r);

struct objstore_op_stats {
	uint64_t requests[OBJSTORE_RES_COUNT]; /* finished requests by outcome */
	uint64_t retries;  /* requests followed by another attempt (of those) */
	uint64_t bytes_in; /* body bytes received, retried attempts' included */
	uint64_t bytes_out; /* body bytes sent, retried attempts' included */
};

struct objstore_stats {
	struct objstore_op_stats op[OBJSTORE_OP_COUNT];
	uint64_t failures; /* calls that failed after their retries (a HEAD's
			    * "not found" is an answer, not a failure) */
};

/* A snapshot of the counters (each read atomically; thread-safe). */
void objstore_stats(const struct objstore *os, struct objstore_stats *out);

/* The sum of every operation's counters into *out. */
void objstore_stats_total(const struct objstore_stats *st, struct objstore_op_stats *out);

/* 0 when `key` is a valid key (see Design), else ERR_INVALID with a message. */
int objstore_check_key(const char *key, struct err_msg *msg);

#endif
