/*
 * s3util.c - the pure parts of the S3 backend: SigV4's URI encoding and
 * canonical query string, URLs in path and virtual-host style, the retry
 * policy and the AWS shared credentials file.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "objstore_int.h"

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

int objstore__uri_encode(struct buf *out, const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;

	for (; *s && !rc; s++) {
		unsigned char c = (unsigned char)*s;

		if (unreserved(c) || (c == '/' && keep_slash)) {
			rc = buf_putc(out, (char)c);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};

			rc = buf_append(out, e, 3);
		}
	}
	return rc;
}

static int param_cmp(const void *a, const void *b)
{
	const struct objstore__param *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value ? x->value : "", y->value ? y->value : "");
}

int objstore__query(struct buf *out, struct objstore__param *p, size_t n)
{
	int rc = 0;

	qsort(p, n, sizeof(*p), param_cmp);
	for (size_t i = 0; i < n && !rc; i++) {
		if (i)
			rc = buf_putc(out, '&');
		if (!rc)
			rc = objstore__uri_encode(out, p[i].name, 0);
		if (!rc)
			rc = buf_putc(out, '=');
		if (!rc && p[i].value)
			rc = objstore__uri_encode(out, p[i].value, 0);
	}
	return rc;
}

int objstore__url(struct buf *out, const char *endpoint, const char *bucket, int path_style,
		  const char *key, const char *query, struct err_msg *msg)
{
	const char *host = strstr(endpoint, "://");
	size_t scheme_len, host_len;
	const char *path;
	int rc;

	if (!host || host == endpoint)
		return err_set(msg, ERR_INVALID, "S3 endpoint %s: no scheme (http:// or https://)",
			       endpoint);
	scheme_len = (size_t)(host - endpoint) + 3;
	host += 3;
	path = strchr(host, '/');
	host_len = path ? (size_t)(path - host) : strlen(host);
	if (!host_len)
		return err_set(msg, ERR_INVALID, "S3 endpoint %s: no host", endpoint);
	if (!path)
		path = "";
	rc = buf_append(out, endpoint, scheme_len);
	if (!rc && !path_style) {
		rc = buf_puts(out, bucket);
		if (!rc)
			rc = buf_putc(out, '.');
	}
	if (!rc)
		rc = buf_append(out, host, host_len);
	/* The endpoint's own path, without a trailing '/'. */
	if (!rc) {
		size_t pl = strlen(path);

		while (pl && path[pl - 1] == '/')
			pl--;
		rc = buf_append(out, path, pl);
	}
	if (!rc)
		rc = buf_putc(out, '/');
	if (!rc && path_style) {
		rc = objstore__uri_encode(out, bucket, 0);
		if (!rc && key[0])
			rc = buf_putc(out, '/');
	}
	if (!rc)
		rc = objstore__uri_encode(out, key, 1);
	if (!rc && query && query[0]) {
		rc = buf_putc(out, '?');
		if (!rc)
			rc = buf_puts(out, query);
	}
	return rc ? err_set(msg, rc, "S3 URL of %s: too long", key) : 0;
}

/* S3's error codes that mean "try again", whatever the HTTP status. */
static const char *const transient_codes[] = {
	"RequestTimeout", "InternalError", "SlowDown", "ServiceUnavailable",
	"ConditionalRequestConflict", "OperationAborted", "Throttling", "ThrottlingException",
	"RequestThrottled",
};

int objstore__retryable(int curl_code, long status, const char *code)
{
	switch (curl_code) {
	case CURLE_OK:
		if (status >= 500 || status == 429 || status == 408)
			return 1;
		for (size_t i = 0; code && i < sizeof(transient_codes) / sizeof(transient_codes[0]); i++)
			if (!strcmp(code, transient_codes[i]))
				return 1;
		return 0;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

int objstore__outcome(int curl_code, long status, const char *code, int attempts,
		      int max_attempts)
{
	int error_in_2xx = !curl_code && status / 100 == 2 && code && code[0];

	if (objstore__retryable(curl_code, status, code))
		return attempts < max_attempts ? 1
		       : curl_code == CURLE_OPERATION_TIMEDOUT ? ERR_TIMEOUT
							       : ERR_UNAVAILABLE;
	if (curl_code || error_in_2xx)
		return ERR_UNAVAILABLE;
	switch (status) {
	case 401:
		return ERR_UNAUTHENTICATED;
	case 403:
		return ERR_PERMISSION;
	case 404:
		return ERR_NOT_FOUND;
	case 409: case 412:
		return ERR_CONFLICT;
	default:
		return status / 100 == 2 ? 0 : ERR_INVALID;
	}
}

long objstore__backoff_ms(const struct objstore__retry *p, int attempt, uint32_t rnd)
{
	long d = p->base_ms;

	for (int i = 1; i < attempt && d < p->max_ms; i++)
		d *= 2;
	if (d > p->max_ms)
		d = p->max_ms;
	if (d < 2)
		return d;
	return d / 2 + (long)(rnd % (uint32_t)(d / 2 + 1));
}

static const char *trim(char *s, char **end)
{
	while (*s == ' ' || *s == '\t')
		s++;
	while (*end > s && ((*end)[-1] == ' ' || (*end)[-1] == '\t' || (*end)[-1] == '\r'))
		(*end)--;
	**end = '\0';
	return s;
}

static int set_cred(char *dst, size_t cap, const char *v, const char *name,
		    struct err_msg *msg)
{
	size_t n = strlen(v);

	if (n >= cap)
		return err_set(msg, ERR_INVALID, "credentials file: %s is longer than %zu bytes",
			       name, cap - 1);
	memcpy(dst, v, n + 1);
	return 0;
}

int objstore__parse_credentials(const char *text, size_t len, const char *profile,
				struct objstore__creds *out, struct err_msg *msg)
{
	struct objstore__creds c = {0};
	char line[8192];
	int in = 0, found = 0, rc = 0;
	size_t pos = 0;

	while (pos < len && !rc) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		char *s, *end, *eq;
		const char *k, *v;

		if (n >= sizeof(line))
			return err_set(msg, ERR_INVALID, "credentials file: a line of %zu bytes", n);
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + 1;
		end = line + n;
		s = (char *)trim(line, &end);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *close = strchr(s, ']');

			if (!close)
				return err_set(msg, ERR_INVALID, "credentials file: unterminated [section");
			*close = '\0';
			end = close;
			in = !strcmp(trim(s + 1, &end), profile);
			continue;
		}
		if (!in || !(eq = strchr(s, '=')))
			continue;
		*eq = '\0';
		v = trim(eq + 1, &end);
		end = eq;
		k = trim(s, &end);
		if (!strcmp(k, "aws_access_key_id"))
			rc = set_cred(c.access_key, sizeof(c.access_key), v, k, msg), found |= 1;
		else if (!strcmp(k, "aws_secret_access_key"))
			rc = set_cred(c.secret_key, sizeof(c.secret_key), v, k, msg), found |= 2;
		else if (!strcmp(k, "aws_session_token"))
			rc = set_cred(c.session_token, sizeof(c.session_token), v, k, msg);
	}
	if (rc)
		return rc;
	if (found != 3)
		return err_set(msg, ERR_NOT_FOUND,
			       "credentials file: no aws_access_key_id and aws_secret_access_key in [%s]",
			       profile);
	*out = c;
	return 0;
}
