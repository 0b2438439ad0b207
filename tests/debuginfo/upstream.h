/*
 * upstream.h - a fake debuginfod server on 127.0.0.1 for the client tests:
 * every request is answered as `mode` says at that moment (404, the bytes
 * of a file with 200, nothing at all until the server stops, or a 302 to
 * `location` for any path without "/moved", whose requests get the
 * file).  With `require` set, a request without that header line is
 * answered 401 first.  The socket is bound before the test's first
 * thread; one thread serves it.  Header-only: each test is one program.
 */
#ifndef UNHEX_TESTS_DEBUGINFO_UPSTREAM_H
#define UNHEX_TESTS_DEBUGINFO_UPSTREAM_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* FAKE_EXECUTABLE: the file for /executable, 404 for anything else. */
enum fake_mode { FAKE_404, FAKE_FILE, FAKE_HANG, FAKE_REDIRECT, FAKE_EXECUTABLE };

struct fake_upstream {
	int fd, port;
	pthread_t thread;
	atomic_int mode;
	atomic_int requests;
	char file[512];       /* served with FAKE_FILE */
	char location[512];   /* FAKE_REDIRECT's Location */
	char require[256];    /* "Name: value" a request must carry; "" none */
	atomic_int refused;   /* requests answered 401 */
	int held[64];         /* connections left hanging */
	int n_held;
	atomic_int hung;      /* connections held so far (a test waits for one) */
};

/* Binds and listens on 127.0.0.1, port 0; 0 or -1. */
static inline int fake_listen(struct fake_upstream *u)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	u->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (u->fd < 0 || bind(u->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(u->fd, 16) || getsockname(u->fd, (struct sockaddr *)&a, &len))
		return -1;
	u->port = ntohs(a.sin_port);
	return 0;
}

static inline void fake_send_all(int c, const void *p, size_t n)
{
	while (n) {
		ssize_t k = write(c, p, n);

		if (k <= 0)
			return;
		p = (const char *)p + k;
		n -= (size_t)k;
	}
}

static inline void fake_answer(struct fake_upstream *u, int c)
{
	char req[4096], head[128];
	FILE *f;
	long size;
	char *body;
	ssize_t got = read(c, req, sizeof(req) - 1); /* one read holds a client's GET */

	if (got <= 0)
		return;
	req[got] = '\0';
	atomic_fetch_add(&u->requests, 1);
	if (u->require[0] && !strstr(req, u->require)) {
		static const char no[] = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n"
					 "Connection: close\r\n\r\n";
		atomic_fetch_add(&u->refused, 1);
		fake_send_all(c, no, sizeof(no) - 1);
		return;
	}
	if (atomic_load(&u->mode) == FAKE_REDIRECT && !strstr(req, "/moved")) {
		char r[700];

		snprintf(r, sizeof(r), "HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n"
			 "Connection: close\r\n\r\n", u->location);
		fake_send_all(c, r, strlen(r));
		return;
	}
	if (atomic_load(&u->mode) == FAKE_404 ||
	    (atomic_load(&u->mode) == FAKE_EXECUTABLE && !strstr(req, "/executable "))) {
		static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
					 "Connection: close\r\n\r\n";
		fake_send_all(c, nf, sizeof(nf) - 1);
		return;
	}
	f = fopen(u->file, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(body = malloc((size_t)size + 1))) {
		if (f)
			fclose(f);
		return;
	}
	if (fread(body, 1, (size_t)size, f) == (size_t)size) {
		snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Length: %ld\r\n"
			 "Connection: close\r\n\r\n", size);
		fake_send_all(c, head, strlen(head));
		fake_send_all(c, body, (size_t)size);
	}
	free(body);
	fclose(f);
}

static inline void *fake_serve(void *arg)
{
	struct fake_upstream *u = arg;

	for (;;) {
		int c = accept(u->fd, NULL, NULL);

		if (c < 0)
			return NULL; /* the listening socket was shut down */
		if (atomic_load(&u->mode) == FAKE_HANG && u->n_held < 64) {
			u->held[u->n_held++] = c;
			atomic_fetch_add(&u->hung, 1);
			continue;
		}
		fake_answer(u, c);
		close(c);
	}
}

static inline int fake_start(struct fake_upstream *u)
{
	return pthread_create(&u->thread, NULL, fake_serve, u) ? -1 : 0;
}

static inline void fake_stop(struct fake_upstream *u)
{
	shutdown(u->fd, SHUT_RDWR);
	pthread_join(u->thread, NULL);
	close(u->fd);
	for (int i = 0; i < u->n_held; i++)
		close(u->held[i]);
}

#endif
