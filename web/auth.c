/*
 * auth.c - the token table: loading the token file (docs/security.md),
 * looking a presented token up by its SHA-256 in constant time, and
 * replacing the table on reload while requests keep using the old one
 * until they are done with it.
 *
 * A table is immutable once built.  Readers take the read lock only to
 * copy the matching principal out; a reload parses the new file with no
 * lock held and swaps the pointer under the write lock (writers are
 * preferred, so a stream of requests cannot hold a reload off).  A file
 * that does not parse leaves the loaded table in place: a typo in an edit
 * never opens the server nor locks everyone out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/sha256.h"
#include "web/web_int.h"

#define TOKEN_FILE_MAX (1u << 20)
#define TOKENS_MAX 10000

struct token {
	uint8_t sha256[SHA256_LEN];
	struct web__principal who;
};

struct table {
	size_t n;
	struct token t[];
};

struct web_auth {
	char *path;                   /* owned */
	pthread_rwlock_t lock;
	struct table *cur;            /* owned; replaced under the write lock */
};

/* Refuses a file anyone may write: whoever can edit it can grant themselves access. */
static int check_mode(const char *path, struct err_msg *msg)
{
	struct stat sb;

	if (stat(path, &sb))
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return err_set(msg, ERR_INVALID, "%s: not a regular file", path);
	if (sb.st_mode & S_IWOTH)
		return err_set(msg, ERR_INVALID,
			       "%s: writable by every user, who could add tokens (chmod o-w)", path);
	return 0;
}

/* Parses the lines of `text` into an owned table. */
static int parse_table(const char *path, const char *text, size_t len, struct table **out,
		       struct err_msg *msg)
{
	struct table *t = malloc(sizeof(*t) + sizeof(struct token));
	size_t cap = 1, lineno = 0;
	const char *p = text, *end = text + len;

	if (!t)
		return err_set(msg, ERR_NOMEM, "out of memory");
	t->n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct web__token_line line;
		struct err_msg why;
		int rc;

		lineno++;
		err_clear(&why);
		rc = web__token_line_parse(p, n, &line, &why);
		p += n + (nl != NULL);
		if (rc < 0) {
			free(t);
			return err_set(msg, ERR_INVALID, "%s:%zu: %s", path, lineno, why.text);
		}
		if (rc == 0)
			continue;
		for (size_t i = 0; i < t->n; i++)
			if (sha256_equal(t->t[i].sha256, line.sha256)) {
				err_set(msg, ERR_INVALID,
					"%s:%zu: the same token as \"%s\" (each token once)", path,
					lineno, t->t[i].who.name);
				free(t);
				return ERR_INVALID;
			}
		if (t->n == TOKENS_MAX) {
			free(t);
			return err_set(msg, ERR_TOO_LARGE, "%s: more than %d tokens", path,
				       TOKENS_MAX);
		}
		if (t->n == cap) {
			struct table *g = realloc(t, sizeof(*t) + 2 * cap * sizeof(struct token));

			if (!g) {
				free(t);
				return err_set(msg, ERR_NOMEM, "out of memory");
			}
			t = g;
			cap *= 2;
		}
		memcpy(t->t[t->n].sha256, line.sha256, SHA256_LEN);
		snprintf(t->t[t->n].who.tenant, sizeof(t->t[t->n].who.tenant), "%s", line.tenant);
		t->t[t->n].who.scopes = line.scopes;
		if (line.name[0])
			snprintf(t->t[t->n].who.name, sizeof(t->t[t->n].who.name), "%s", line.name);
		else
			snprintf(t->t[t->n].who.name, sizeof(t->t[t->n].who.name), "line-%zu",
				 lineno);
		t->n++;
	}
	*out = t;
	return 0;
}

static int load(const char *path, struct table **out, struct err_msg *msg)
{
	struct buf b;
	int rc = check_mode(path, msg);

	if (rc)
		return rc;
	buf_init(&b, TOKEN_FILE_MAX);
	errno = 0;
	rc = buf_read_file(&b, path);
	if (rc == ERR_TOO_LARGE)
		err_set(msg, rc, "%s: larger than %u bytes", path, TOKEN_FILE_MAX);
	else if (rc)
		err_set(msg, rc, "%s: %s", path, errno ? strerror(errno) : "read error");
	else
		rc = parse_table(path, b.data ? b.data : "", b.len, out, msg);
	buf_release(&b);
	return rc;
}

int web__auth_new(const char *path, struct web_auth **out, struct err_msg *msg)
{
	struct web_auth *a = calloc(1, sizeof(*a));
	pthread_rwlockattr_t attr;
	int rc;

	if (!a || !(a->path = strdup(path))) {
		free(a);
		return err_set(msg, ERR_NOMEM, "out of memory");
	}
	rc = load(path, &a->cur, msg);
	if (rc) {
		free(a->path);
		free(a);
		return rc;
	}
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&a->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	*out = a;
	return 0;
}

int web__auth_reload(struct web_auth *a, struct err_msg *msg)
{
	struct table *t = NULL, *old;
	int rc = load(a->path, &t, msg);

	if (rc)
		return rc;
	pthread_rwlock_wrlock(&a->lock);
	old = a->cur;
	a->cur = t;
	pthread_rwlock_unlock(&a->lock);
	free(old);
	return 0;
}

size_t web__auth_count(struct web_auth *a)
{
	size_t n;

	pthread_rwlock_rdlock(&a->lock);
	n = a->cur->n;
	pthread_rwlock_unlock(&a->lock);
	return n;
}

const char *web__auth_path(const struct web_auth *a)
{
	return a->path;
}

void web__auth_free(struct web_auth *a)
{
	if (!a)
		return;
	pthread_rwlock_destroy(&a->lock);
	free(a->cur);
	free(a->path);
	free(a);
}

int web__auth_lookup(struct web_auth *a, const char *secret, size_t len,
		     struct web__principal *who)
{
	uint8_t d[SHA256_LEN];
	size_t found = SIZE_MAX;

	if (sha256_buf(secret, len, d))
		return ERR_NOMEM;
	pthread_rwlock_rdlock(&a->lock);
	/* Every entry is compared, each in constant time: where a token sits
	 * in the file, or how much of it matched, takes no time to learn. */
	for (size_t i = 0; i < a->cur->n; i++)
		if (sha256_equal(a->cur->t[i].sha256, d))
			found = i;
	if (found != SIZE_MAX)
		*who = a->cur->t[found].who;
	pthread_rwlock_unlock(&a->lock);
	return found == SIZE_MAX ? ERR_UNAUTHENTICATED : 0;
}
