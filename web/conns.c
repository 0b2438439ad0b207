/*
 * conns.c - the server's table of open connections: how many each client
 * address holds (the per-address cap), and the deadline of each body being
 * read, enforced by a watchdog thread.
 *
 * civetweb 1.15 runs one connection per worker thread and never hands out
 * the socket; a blocked mg_read() only returns when the client stops
 * sending for request_timeout_ms, so a client trickling a byte every few
 * seconds holds its worker for as long as it likes.  The watchdog finds
 * such a connection's socket among the process's descriptors by its
 * addresses (only then: it is rare) and shuts its reading side down, which
 * wakes the blocked read with an end of file.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/thread.h"
#include "web_int.h"

#define WATCH_PERIOD_MS 200

/* The remote address of `a` (sockaddr) as 16 bytes; IPv4 as ::ffff:a.b.c.d. */
static int addr16(const struct sockaddr_storage *a, unsigned char out[16], int *port)
{
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)a;

		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &v4->sin_addr, 4);
		*port = ntohs(v4->sin_port);
		return 0;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)a;

		memcpy(out, &v6->sin6_addr, 16);
		*port = ntohs(v6->sin6_port);
		return 0;
	}
	return -1;
}

/* A textual address ("127.0.0.1", "::1", "::ffff:10.0.0.1") as 16 bytes. */
static int text16(const char *s, unsigned char out[16])
{
	struct in_addr v4;

	if (inet_pton(AF_INET, s, &v4) == 1) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &v4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, s, out) == 1 ? 0 : -1;
}

/*
 * The descriptor of the TCP connection from `remote`:`rport` to local port
 * `lport`, or -1.  Scans /proc/self/fd; a descriptor closed and reused
 * meanwhile cannot match, since the connection asked for is still open.
 */
static int find_socket(const char *remote, int rport, int lport)
{
	unsigned char want[16], got[16];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;

	if (!d || text16(remote, want)) {
		if (d)
			closedir(d);
		return -1;
	}
	while (found < 0 && (de = readdir(d))) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		int port;

		if (*end || end == de->d_name || fd == dirfd(d))
			continue;
		if (getsockname((int)fd, (struct sockaddr *)&sa, &len) || addr16(&sa, got, &port) ||
		    port != lport)
			continue;
		len = sizeof(sa);
		if (getpeername((int)fd, (struct sockaddr *)&sa, &len) || addr16(&sa, got, &port) ||
		    port != rport || memcmp(got, want, 16) != 0)
			continue;
		found = (int)fd;
	}
	closedir(d);
	return found;
}

static int shut(const struct web__conn *c, int how)
{
	int fd = find_socket(c->addr, c->remote_port, c->local_port);

	if (fd < 0) {
		log_warn("http: no socket found for %s:%d", c->addr, c->remote_port);
		return -1;
	}
	return shutdown(fd, how);
}

static void *watch(void *arg)
{
	struct web__conns *t = arg;

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		struct timespec ts;
		int64_t now = clock_mono_ns();

		for (size_t i = 0; i < t->n; i++) {
			struct web__conn *c = &t->slots[i];

			if (c->used && c->deadline_ns && now > c->deadline_ns && !c->expired) {
				c->expired = 1;
				log_info("http: %s:%d: body not received by its deadline; closing",
					 c->addr, c->remote_port);
				shut(c, SHUT_RD);
			}
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += WATCH_PERIOD_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&t->wake, &t->lock, &ts);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int web__conns_init(struct web__conns *t, size_t n, unsigned per_addr)
{
	assert(n > 0 && per_addr > 0);
	memset(t, 0, sizeof(*t));
	t->slots = calloc(n, sizeof(*t->slots));
	if (!t->slots)
		return ERR_NOMEM;
	t->n = n;
	t->per_addr = per_addr;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->wake, NULL);
	if (pthread_create(&t->thread, NULL, watch, t)) {
		pthread_cond_destroy(&t->wake);
		pthread_mutex_destroy(&t->lock);
		free(t->slots);
		t->slots = NULL; /* web__conns_release() has nothing to do */
		return ERR_NOMEM;
	}
	return 0;
}

void web__conns_release(struct web__conns *t)
{
	if (!t->slots)
		return;
	thread_stop(t->thread, &t->lock, &t->wake, &t->stop);
	pthread_cond_destroy(&t->wake);
	pthread_mutex_destroy(&t->lock);
	free(t->slots);
	t->slots = NULL;
}

struct web__conn *web__conns_open(struct web__conns *t, const char *addr, int rport, int lport,
				  int *refused)
{
	struct web__conn *slot = NULL;
	unsigned same = 0;

	*refused = 0;
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++) {
		struct web__conn *c = &t->slots[i];

		if (!c->used) {
			if (!slot)
				slot = c;
		} else if (!c->refused && strcmp(c->addr, addr) == 0) {
			same++;
		}
	}
	if (slot) {
		memset(slot, 0, sizeof(*slot));
		slot->used = 1;
		snprintf(slot->addr, sizeof(slot->addr), "%s", addr);
		slot->remote_port = rport;
		slot->local_port = lport;
		if (same >= t->per_addr) {
			slot->refused = 1;
			*refused = 1;
			t->refused++;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return slot;
}

void web__conns_close(struct web__conns *t, struct web__conn *c)
{
	pthread_mutex_lock(&t->lock);
	assert(c->used);
	c->used = 0;
	pthread_mutex_unlock(&t->lock);
}

void web__conns_deadline(struct web__conns *t, struct web__conn *c, int64_t deadline_ns)
{
	pthread_mutex_lock(&t->lock);
	c->deadline_ns = deadline_ns;
	if (!deadline_ns)
		c->expired = 0;
	pthread_mutex_unlock(&t->lock);
}

int web__conns_expired(struct web__conns *t, struct web__conn *c)
{
	int e;

	pthread_mutex_lock(&t->lock);
	e = c->expired;
	pthread_mutex_unlock(&t->lock);
	return e;
}

uint64_t web__conns_refused(struct web__conns *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = t->refused;
	pthread_mutex_unlock(&t->lock);
	return n;
}
