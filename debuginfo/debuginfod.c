/*
 * debuginfod.c - the client side of the debuginfod protocol: GET
 * <upstream>/buildid/<hex>/debuginfo (or /executable) from each upstream
 * in turn, over libcurl, into a temporary file under <dir>/tmp, with the
 * outbound rules of debuginfo.h.
 *
 * Why not libdebuginfod.  Until now the fetch went through libdebuginfod,
 * which runs libcurl itself and sets CURLOPT_FOLLOWLOCATION with http,
 * https and file:// allowed, on handles the caller never sees: its API
 * (elfutils 0.188, and still today) has a progress callback, user data,
 * extra request headers and a verbose fd, and its environment has URLs,
 * cache, timeouts and sizes, but nothing decides where a redirect may
 * go.  Its progress callback learns the effective URL only once bytes
 * arrive (debuginfod_get_url), after the redirected request was sent:
 * too late, the request itself is the harm (a 302 from an upstream to
 * http://127.0.0.1:.../internal or a cloud metadata address makes the
 * server fetch it).  Checking names before the fetch is no better: the
 * redirect target is chosen by the upstream while the fetch runs, and a
 * name can resolve differently a moment later.  So the check is made
 * where a connection is opened: libcurl's CURLOPT_OPENSOCKETFUNCTION
 * hands over the exact address it is about to connect to, for the first
 * request and for every redirect hop, and a refused one never gets a
 * socket.  An address is refused when it is loopback, link-local,
 * private, shared (CGNAT), multicast or otherwise not routable on the
 * internet, unless it is the address and port of a configured upstream
 * (an operator's own debuginfod on loopback keeps working; a redirect to
 * another port there does not).  Redirects are followed over http and
 * https only (never file://, also refused as an upstream), at most 5,
 * and environment proxies are not used, since a proxy would connect on
 * our behalf where no check can see it.
 *
 * Headers (credentials of an authenticated upstream, tenants.c) are
 * added to every request of a list that has them, and such a list's
 * redirects are not followed: libcurl keeps custom headers other than
 * Authorization on a redirect to another host.  They are never logged
 * nor put in a message.
 *
 * Nothing here touches the environment, so the service can open with
 * threads running.  Each fetch uses its own easy handle: thread-safe.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "debuginfo_int.h"

#ifndef UNHEX_VERSION
#define UNHEX_VERSION "unknown"
#endif

#define MAX_REDIRS 5L
#define CONNECT_TIMEOUT_MS 10000L
#define MAX_ALLOWED 64 /* addresses of the upstreams */

/* ---- upstream URLs ---------------------------------------------------------- */

/* One upstream URL: scheme, host and port checked, no trailing '/'. */
static int parse_one(const char *url, size_t n, int index, struct debuginfo__upstream *out,
		     struct err_msg *msg)
{
	char full[DEBUGINFO__URL_MAX], *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
	CURLU *u;
	int rc = 0;

	if (n >= sizeof(full))
		return err_set(msg, ERR_INVALID, "debuginfod URL longer than %d bytes",
			       DEBUGINFO__URL_MAX - 1);
	memcpy(full, url, n);
	full[n] = '\0';
	while (n > 0 && full[n - 1] == '/')
		full[--n] = '\0';
	u = curl_url();
	if (!u)
		return err_set(msg, ERR_NOMEM, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, full, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
		rc = err_set(msg, ERR_INVALID,
			     "debuginfod URL \"%.200s\": only http:// and https:// upstreams are "
			     "allowed", full);
		goto out;
	}
	/* A password in a URL would show in every reason naming the URL. */
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		rc = err_set(msg, ERR_INVALID,
			     "debuginfod URL %d: credentials belong in a headers file "
			     "(--debuginfod-headers-file, debuginfod_headers_file), not in the URL",
			     index + 1);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0] ||
	    strlen(host) >= sizeof(out->host) ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		rc = err_set(msg, ERR_INVALID, "debuginfod URL \"%.200s\": no usable host", full);
		goto out;
	}
	memcpy(out->url, full, n + 1);
	/* Brackets of an IPv6 literal are URL syntax, not the address. */
	if (host[0] == '[') {
		size_t hl = strlen(host);

		snprintf(out->host, sizeof(out->host), "%.*s", (int)(hl - 2), host + 1);
	} else {
		snprintf(out->host, sizeof(out->host), "%s", host);
	}
	out->port = atoi(port);
out:
	curl_free(scheme);
	curl_free(user);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

int debuginfo__upstreams_parse(const char *urls, struct debuginfo__upstream **out, size_t *n,
			       struct err_msg *msg)
{
	struct debuginfo__upstream *v = NULL;
	size_t k = 0;
	const char *p = urls ? urls : "";

	for (;;) {
		size_t len;
		struct debuginfo__upstream *g;
		int rc;

		p += strspn(p, " \t\n");
		len = strcspn(p, " \t\n");
		if (!len)
			break;
		if (k == DEBUGINFO__MAX_UPSTREAMS) {
			free(v);
			return err_set(msg, ERR_INVALID, "more than %d debuginfod URLs",
				       DEBUGINFO__MAX_UPSTREAMS);
		}
		g = realloc(v, (k + 1) * sizeof(*v));
		if (!g) {
			free(v);
			return err_set(msg, ERR_NOMEM, "out of memory");
		}
		v = g;
		rc = parse_one(p, len, (int)k, &v[k], msg);
		if (rc) {
			free(v);
			return rc;
		}
		k++;
		p += len;
	}
	*out = v;
	*n = k;
	return 0;
}

int debuginfo__curl_ready(struct debuginfo *s, struct err_msg *msg)
{
	if (s->curl_ready)
		return 0;
	/* libcurl 7.84 and later initialize thread-safely; close drops the reference. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return err_set(msg, ERR_UNAVAILABLE, "debuginfo: libcurl failed to initialize");
	s->curl_ready = 1;
	return 0;
}

int debuginfo__upstreams_open(struct debuginfo *s, const char *urls, const char *headers_file,
			      struct err_msg *msg)
{
	int rc = debuginfo__uset_init(&s->server, "*", urls, headers_file, msg);

	if (!rc && s->server.n && (rc = debuginfo__curl_ready(s, msg)))
		debuginfo__uset_release(&s->server);
	s->upstream = s->server.n > 0;
	return rc;
}

void debuginfo__upstreams_close(struct debuginfo *s)
{
	if (s->curl_ready)
		curl_global_cleanup();
	s->curl_ready = 0;
	debuginfo__uset_release(&s->server);
}

/* ---- which addresses a fetch may connect to --------------------------------- */

/* An IPv4 address (host order) that is not routable on the public internet. */
static int private_v4(uint32_t a)
{
	static const struct {
		uint32_t net, mask;
	} nets[] = {
		{ 0x00000000, 0xff000000 }, /* 0.0.0.0/8 "this network" */
		{ 0x0a000000, 0xff000000 }, /* 10/8 */
		{ 0x64400000, 0xffc00000 }, /* 100.64/10 shared (CGNAT) */
		{ 0x7f000000, 0xff000000 }, /* 127/8 loopback */
		{ 0xa9fe0000, 0xffff0000 }, /* 169.254/16 link-local, cloud metadata */
		{ 0xac100000, 0xfff00000 }, /* 172.16/12 */
		{ 0xc0000000, 0xffffff00 }, /* 192.0.0/24 protocol assignments */
		{ 0xc0a80000, 0xffff0000 }, /* 192.168/16 */
		{ 0xc6120000, 0xfffe0000 }, /* 198.18/15 benchmarking */
		{ 0xe0000000, 0xe0000000 }, /* 224/3 multicast, reserved, broadcast */
	};

	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++)
		if ((a & nets[i].mask) == nets[i].net)
			return 1;
	return 0;
}

static int private_v6(const struct in6_addr *a)
{
	const uint8_t *b = a->s6_addr;

	if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
		uint32_t v4 = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 |
			      b[15];
		return private_v4(v4);
	}
	return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a) ||
	       IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_SITELOCAL(a) || IN6_IS_ADDR_MULTICAST(a) ||
	       (b[0] & 0xfe) == 0xfc; /* fc00::/7 unique local */
}

struct fetch {
	struct debuginfo *s;
	const struct debuginfo__uset *u; /* the upstreams and headers of this fetch */
	int64_t deadline_ns;
	int fd;
	uint64_t size, max;
	int timed_out, too_large, write_failed;
	struct debuginfo__allowed allow[MAX_ALLOWED];
	size_t n_allow;
	char refused[INET6_ADDRSTRLEN + 8]; /* the address a connection was refused to */
};

/* Every address the upstreams' host names resolve to now, with their ports. */
static void resolve_upstreams(struct fetch *f)
{
	for (size_t i = 0; i < f->u->n; i++) {
		const struct debuginfo__upstream *up = &f->u->ups[i];
		struct addrinfo hints, *res = NULL;

		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		if (getaddrinfo(up->host, NULL, &hints, &res))
			continue;
		for (struct addrinfo *r = res; r && f->n_allow < MAX_ALLOWED; r = r->ai_next) {
			struct debuginfo__allowed *a = &f->allow[f->n_allow];

			memset(a, 0, sizeof(*a));
			a->family = r->ai_family;
			a->port = up->port;
			if (r->ai_family == AF_INET)
				memcpy(a->addr, &((struct sockaddr_in *)r->ai_addr)->sin_addr, 4);
			else if (r->ai_family == AF_INET6)
				memcpy(a->addr, &((struct sockaddr_in6 *)r->ai_addr)->sin6_addr, 16);
			else
				continue;
			f->n_allow++;
		}
		freeaddrinfo(res);
	}
}

int debuginfo__address_allowed(const struct sockaddr *sa, const struct debuginfo__allowed *al,
			       size_t n_allow)
{
	const uint8_t *addr;
	int port, priv;
	size_t alen;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		priv = private_v4(ntohl(in->sin_addr.s_addr));
		addr = (const uint8_t *)&in->sin_addr;
		alen = 4;
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		priv = private_v6(&in6->sin6_addr);
		addr = (const uint8_t *)&in6->sin6_addr;
		alen = 16;
		port = ntohs(in6->sin6_port);
	} else {
		return 0;
	}
	if (!priv)
		return 1;
	for (size_t i = 0; i < n_allow; i++)
		if (al[i].family == sa->sa_family && al[i].port == port &&
		    memcmp(al[i].addr, addr, alen) == 0)
			return 1;
	return 0;
}

static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct fetch *f = arg;
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (purpose == CURLSOCKTYPE_IPCXN &&
	    debuginfo__address_allowed(&a->addr, f->allow, f->n_allow))
		return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	if (a->family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&a->addr;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (a->family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->addr;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(f->refused, sizeof(f->refused), "%s:%d", host, port);
	return CURL_SOCKET_BAD;
}

/* ---- one transfer ----------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;
	size_t len = size * n, done = 0;

	if (len > f->max - f->size) {
		f->too_large = 1;
		return 0;
	}
	while (done < len) {
		ssize_t k = write(f->fd, p + done, len - done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			f->write_failed = 1;
			return 0;
		}
		done += (size_t)k;
	}
	f->size += len;
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct fetch *f = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	/* The flag is set by debuginfo_close on another thread; it orders
	 * nothing else, so a relaxed load is enough. */
	if (atomic_load_explicit(&f->s->cancel, memory_order_relaxed) ||
	    clock_mono_ns() > f->deadline_ns) {
		f->timed_out = 1;
		return 1; /* aborts the transfer */
	}
	return 0;
}

/* The outcome of one upstream: 200, 404, or an error in msg. */
enum { GOT_FILE, GOT_NOT_FOUND, GOT_ERROR };

/* The list's headers as libcurl takes them (owned; NULL when none or out of memory). */
static struct curl_slist *header_list(const struct debuginfo__uset *u, int *failed)
{
	struct curl_slist *l = NULL;

	*failed = 0;
	for (size_t i = 0; i < u->n_headers; i++) {
		struct curl_slist *t = curl_slist_append(l, u->headers[i]);

		if (!t) {
			curl_slist_free_all(l);
			*failed = 1;
			return NULL;
		}
		l = t;
	}
	return l;
}

static int get_one(struct fetch *f, const char *url, struct err_msg *msg)
{
	CURL *c = curl_easy_init();
	int64_t left = f->deadline_ns - clock_mono_ns();
	char errbuf[CURL_ERROR_SIZE] = "";
	long code = 0;
	CURLcode cc;
	int bad = 0;
	/* Headers carry credentials: never followed to another host. */
	long follow = f->u->n_headers ? 0L : 1L;
	struct curl_slist *hdrs = header_list(f->u, &bad);

	if (!c || bad) {
		curl_easy_cleanup(c);
		curl_slist_free_all(hdrs);
		err_set(msg, ERR_NOMEM, "debuginfod: out of memory");
		return GOT_ERROR;
	}
	if (left < 1000000)
		left = 1000000;
	bad |= curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, follow) != CURLE_OK;
	if (hdrs)
		bad |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_MAXREDIRS, MAX_REDIRS) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_PROXY, "") != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, f) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_WRITEDATA, f) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_XFERINFODATA, f) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(left / 1000000)) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)f->max) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_USERAGENT, "unhex/" UNHEX_VERSION) != CURLE_OK;
	bad |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK;
	if (bad) {
		curl_easy_cleanup(c);
		curl_slist_free_all(hdrs);
		err_set(msg, ERR_UNAVAILABLE, "debuginfod: libcurl refused an option (%s)",
			curl_version());
		return GOT_ERROR;
	}
	f->refused[0] = '\0';
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	if (cc == CURLE_OK && code == 200)
		return GOT_FILE;
	if (cc == CURLE_OK && code == 404)
		return GOT_NOT_FOUND;
	if (cc == CURLE_OPERATION_TIMEDOUT)
		f->timed_out = 1;
	if (f->refused[0]) {
		atomic_fetch_add(&f->s->redirects_refused, 1);
		err_set(msg, ERR_UNAVAILABLE,
			"debuginfod: %s: refused to connect to %s, a private address that is no "
			"configured upstream", url, f->refused);
	} else if (f->timed_out) {
		err_set(msg, ERR_TIMEOUT, "debuginfod: fetch from %s timed out", url);
	} else if (f->too_large || cc == CURLE_FILESIZE_EXCEEDED) {
		err_set(msg, ERR_TOO_LARGE, "debuginfod: %s: larger than %llu bytes", url,
			(unsigned long long)f->max);
	} else if (cc == CURLE_OK && (code == 401 || code == 403)) {
		err_set(msg, ERR_UNAVAILABLE,
			"debuginfod: %s refused the request (HTTP %ld): %s", url, code,
			f->u->n_headers ? "check the credentials of the headers file"
					: "it wants credentials: give a headers file");
	} else if (cc == CURLE_OK && code >= 300 && code < 400 && !follow) {
		err_set(msg, ERR_UNAVAILABLE,
			"debuginfod: %s answered HTTP %ld: redirects are not followed for "
			"upstreams with headers (they would go to another host)", url, code);
	} else if (cc == CURLE_OK) {
		err_set(msg, ERR_UNAVAILABLE, "debuginfod: %s answered HTTP %ld", url, code);
	} else {
		err_set(msg, ERR_UNAVAILABLE, "debuginfod: %s: %s", url,
			errbuf[0] ? errbuf : curl_easy_strerror(cc));
	}
	return GOT_ERROR;
}

int debuginfo__debuginfod_fetch(struct debuginfo *s, const char *build_id_hex, int executable,
				int64_t deadline_ns, char **path, struct err_msg *msg)
{
	return debuginfo__debuginfod_fetch_from(s, &s->server, build_id_hex, executable, deadline_ns,
					       path, msg);
}

int debuginfo__debuginfod_fetch_from(struct debuginfo *s, const struct debuginfo__uset *u,
				     const char *build_id_hex, int executable, int64_t deadline_ns,
				     char **path, struct err_msg *msg)
{
	struct fetch *f = calloc(1, sizeof(*f)); /* off the workers' small stacks */
	char tmp[DEBUGINFO__PATH_MAX], url[DEBUGINFO__URL_MAX + 200];
	struct err_msg first;
	int rc = ERR_NOT_FOUND, errors = 0;

	assert(s && build_id_hex && path);
	if (!f)
		return err_set(msg, ERR_NOMEM, "debuginfod: out of memory");
	err_clear(&first);
	f->s = s;
	f->u = u;
	f->deadline_ns = deadline_ns;
	f->max = s->max_upload;
	snprintf(tmp, sizeof(tmp), "%s/tmp/fetch.%d.%llu", s->dir, (int)getpid(),
		 (unsigned long long)atomic_fetch_add(&s->tmp_seq, 1));
	resolve_upstreams(f);
	for (size_t i = 0; i < u->n; i++) {
		int got;

		f->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (f->fd < 0) {
			log_error("debuginfod: cannot create %s: %s", tmp, strerror(errno));
			rc = err_set(msg, ERR_IO, "debuginfod: cannot store a fetched file");
			break;
		}
		f->size = 0;
		f->timed_out = f->too_large = f->write_failed = 0;
		snprintf(url, sizeof(url), "%s/buildid/%s/%s", u->ups[i].url, build_id_hex,
			 executable ? "executable" : "debuginfo");
		got = get_one(f, url, &first);
		if (got == GOT_FILE && fsync(f->fd) != 0) {
			err_set(&first, ERR_IO, "debuginfod: cannot store a fetched file");
			got = GOT_ERROR;
		}
		close(f->fd);
		if (got == GOT_FILE) {
			rc = 0;
			break;
		}
		if (got == GOT_ERROR)
			errors++;
		if (f->timed_out)
			break;
	}
	if (!rc) {
		*path = strdup(tmp);
		if (*path) {
			free(f);
			return 0;
		}
		rc = err_set(msg, ERR_NOMEM, "debuginfod: out of memory");
	}
	unlink(tmp);
	if (rc && rc != ERR_IO && rc != ERR_NOMEM) {
		if (f->timed_out)
			rc = err_set(msg, ERR_TIMEOUT, "debuginfod: fetch of %s timed out",
				     build_id_hex);
		else if (errors)
			rc = err_set(msg, ERR_UNAVAILABLE, "%s", first.text);
		else
			rc = err_set(msg, ERR_NOT_FOUND, "debuginfod: no upstream server has %s %s",
				     executable ? "an executable for" : "debug info for",
				     build_id_hex);
	}
	free(f);
	return rc;
}
