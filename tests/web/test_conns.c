/*
 * test_conns.c - the connection table: the per-address cap counts open
 * connections of one address and frees them on close, and the watchdog
 * shuts the reading side of a real loopback connection whose body
 * deadline passed (found among the process's descriptors by address).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "web/web_int.h"

static void cap_per_address(void **state)
{
	struct web__conns t;
	struct web__conn *c[5];
	int refused;

	(void)state;
	assert_int_equal(web__conns_init(&t, 5, 2), 0);
	c[0] = web__conns_open(&t, "10.0.0.1", 1000, 4040, &refused);
	assert_non_null(c[0]);
	assert_int_equal(refused, 0);
	c[1] = web__conns_open(&t, "10.0.0.1", 1001, 4040, &refused);
	assert_int_equal(refused, 0);
	c[2] = web__conns_open(&t, "10.0.0.1", 1002, 4040, &refused);
	assert_non_null(c[2]);
	assert_int_equal(refused, 1); /* a third from the same address */
	c[3] = web__conns_open(&t, "10.0.0.2", 1000, 4040, &refused);
	assert_int_equal(refused, 0); /* another address has its own count */
	assert_int_equal(web__conns_refused(&t), 1);
	c[4] = web__conns_open(&t, "10.0.0.3", 1000, 4040, &refused);
	assert_non_null(c[4]);
	/* All five slots are taken: a sixth is not counted. */
	assert_null(web__conns_open(&t, "10.0.0.4", 1000, 4040, &refused));
	web__conns_close(&t, c[2]);
	web__conns_close(&t, c[0]);
	c[0] = web__conns_open(&t, "10.0.0.1", 1003, 4040, &refused);
	assert_non_null(c[0]);
	assert_int_equal(refused, 0); /* a closed one no longer counts */
	for (int i = 0; i < 5; i++)
		if (i != 2)
			web__conns_close(&t, c[i]);
	web__conns_release(&t);
}

static void deadline_shuts_reading_side(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_in peer;
	socklen_t len = sizeof(a);
	struct web__conns t;
	struct web__conn *c;
	int lfd, cfd, sfd, refused;
	struct pollfd pfd;
	char addr[INET_ADDRSTRLEN], byte;

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof(a)), 0);
	len = sizeof(peer);
	sfd = accept(lfd, (struct sockaddr *)&peer, &len);
	assert_true(sfd >= 0);
	inet_ntop(AF_INET, &peer.sin_addr, addr, sizeof(addr));

	assert_int_equal(web__conns_init(&t, 4, 4), 0);
	c = web__conns_open(&t, addr, ntohs(peer.sin_port), ntohs(a.sin_port), &refused);
	assert_non_null(c);
	assert_int_equal(web__conns_expired(&t, c), 0);
	web__conns_deadline(&t, c, clock_mono_ns() - 1);
	/* The server side reads as a worker would: the client sends nothing,
	 * so only the watchdog's shutdown can end the wait with end of file. */
	pfd.fd = sfd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 60000), 1);
	assert_int_equal(recv(sfd, &byte, 1, 0), 0);
	assert_int_equal(web__conns_expired(&t, c), 1);
	web__conns_deadline(&t, c, 0);
	assert_int_equal(web__conns_expired(&t, c), 0);
	web__conns_close(&t, c);
	web__conns_release(&t);
	close(sfd);
	close(cfd);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cap_per_address),
		cmocka_unit_test(deadline_shuts_reading_side),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
