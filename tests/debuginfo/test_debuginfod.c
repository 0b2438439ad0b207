/*
 * test_debuginfod.c - the debuginfod client (debuginfod.c) against fake
 * upstreams on loopback: upstream URLs (http and https only), a file
 * found, not found, the size cap, a transfer stopped by the deadline or by
 * the service's cancel flag, and where a fetch may connect: public
 * addresses and the upstreams' own, so a redirect to another loopback
 * port is refused before any request reaches it, while one to the
 * upstream itself is followed; headers sent, a 401 said so, and no
 * redirect followed for a list with headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <sys/stat.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "debuginfo/debuginfo_int.h"
#include "tests/symbolize/symtest.h"
#include "upstream.h"

static struct fake_upstream g_up, g_other;
static struct debuginfo g_s; /* just what a fetch reads */
static char g_dir[300];

static int setup(void **state)
{
	struct err_msg msg;
	char urls[64];

	(void)state;
	t_mkdtemp();
	snprintf(g_dir, sizeof(g_dir), "%s", t_path("debuginfo"));
	if (t_run("mkdir -p '%s/tmp'", g_dir) || fake_listen(&g_up) || fake_listen(&g_other))
		return -1;
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%d/", g_up.port);
	g_s.dir = g_dir;
	g_s.max_upload = 1 << 20;
	err_clear(&msg);
	if (debuginfo__upstreams_open(&g_s, urls, NULL, &msg)) {
		fprintf(stderr, "%s\n", msg.text);
		return -1;
	}
	return fake_start(&g_up) || fake_start(&g_other);
}

static int teardown(void **state)
{
	(void)state;
	fake_stop(&g_up);
	fake_stop(&g_other);
	debuginfo__upstreams_close(&g_s);
	t_rmdir();
	return 0;
}

static void test_urls(void **state)
{
	static const char *const refused[] = {
		"file:///usr/lib/debug", "ftp://example.org", "http://", "gopher://x:70",
		"http://ok.example https://fine.example file:///etc",
	};
	struct debuginfo__upstream *u = NULL;
	struct err_msg msg;
	size_t n = 9;

	(void)state;
	err_clear(&msg);
	assert_int_equal(debuginfo__upstreams_parse(" http://a.example/x/  https://[::1]:8002 ", &u,
						    &n, &msg), 0);
	assert_int_equal(n, 2);
	assert_string_equal(u[0].url, "http://a.example/x");
	assert_string_equal(u[0].host, "a.example");
	assert_int_equal(u[0].port, 80);
	assert_string_equal(u[1].host, "::1");
	assert_int_equal(u[1].port, 8002);
	free(u);
	assert_int_equal(debuginfo__upstreams_parse("", &u, &n, &msg), 0);
	assert_int_equal(n, 0);
	assert_int_equal(debuginfo__upstreams_parse(NULL, &u, &n, &msg), 0);
	assert_int_equal(n, 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		err_clear(&msg);
		assert_int_equal(debuginfo__upstreams_parse(refused[i], &u, &n, &msg), ERR_INVALID);
		assert_non_null(strstr(msg.text, "debuginfod URL"));
	}
}

static void v4(struct sockaddr_in *a, const char *ip, int port)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
}

static void v6(struct sockaddr_in6 *a, const char *ip, int port)
{
	memset(a, 0, sizeof(*a));
	a->sin6_family = AF_INET6;
	a->sin6_port = htons((uint16_t)port);
	assert_int_equal(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
}

static void test_addresses(void **state)
{
	static const char *const private4[] = {
		"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255",
		"192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
		"255.255.255.255", "198.18.0.1",
	};
	static const char *const public4[] = { "8.8.8.8", "172.32.0.1", "100.128.0.1", "1.1.1.1" };
	static const char *const private6[] = {
		"::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1",
		"::ffff:10.0.0.1", "fec0::1",
	};
	struct debuginfo__allowed allow = { AF_INET, { 127, 0, 0, 1 }, 8002 };
	struct sockaddr_in a4;
	struct sockaddr_in6 a6;

	(void)state;
	for (size_t i = 0; i < sizeof(private4) / sizeof(private4[0]); i++) {
		v4(&a4, private4[i], 80);
		assert_false(debuginfo__address_allowed((struct sockaddr *)&a4, &allow, 1));
	}
	for (size_t i = 0; i < sizeof(public4) / sizeof(public4[0]); i++) {
		v4(&a4, public4[i], 80);
		assert_true(debuginfo__address_allowed((struct sockaddr *)&a4, NULL, 0));
	}
	for (size_t i = 0; i < sizeof(private6) / sizeof(private6[0]); i++) {
		v6(&a6, private6[i], 80);
		assert_false(debuginfo__address_allowed((struct sockaddr *)&a6, &allow, 1));
	}
	v6(&a6, "2a00:1450:4001::1", 443);
	assert_true(debuginfo__address_allowed((struct sockaddr *)&a6, NULL, 0));
	/* A configured upstream's address and port, and only that port. */
	v4(&a4, "127.0.0.1", 8002);
	assert_true(debuginfo__address_allowed((struct sockaddr *)&a4, &allow, 1));
	v4(&a4, "127.0.0.1", 8003);
	assert_false(debuginfo__address_allowed((struct sockaddr *)&a4, &allow, 1));
}

static void test_found(void **state)
{
	struct err_msg msg;
	char *path = NULL;

	(void)state;
	t_write("served", "the bytes upstream");
	snprintf(g_up.file, sizeof(g_up.file), "%s", t_path("served"));
	atomic_store(&g_up.mode, FAKE_FILE);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "a1b2", 0,
						     clock_mono_ns() + 10000000000LL, &path, &msg), 0);
	assert_non_null(path);
	assert_int_equal(strncmp(path, g_dir, strlen(g_dir)), 0);
	assert_int_equal(t_run("cmp -s '%s' '%s'", path, t_path("served")), 0);
	unlink(path);
	free(path);
	/* Past the size cap: refused, nothing left behind. */
	g_s.max_upload = 5;
	err_clear(&msg);
	path = NULL;
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "a1b2", 0,
						     clock_mono_ns() + 10000000000LL, &path, &msg),
			 ERR_UNAVAILABLE);
	assert_null(path);
	assert_non_null(strstr(msg.text, "larger than 5 bytes"));
	g_s.max_upload = 1 << 20;
	assert_int_equal(t_run("test -z \"$(ls '%s/tmp')\"", g_dir), 0);
}

static void test_not_found(void **state)
{
	struct err_msg msg;
	char *path = NULL;

	(void)state;
	atomic_store(&g_up.mode, FAKE_404);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "c3d4", 0,
						     clock_mono_ns() + 10000000000LL, &path, &msg),
			 ERR_NOT_FOUND);
	assert_null(path);
	assert_non_null(strstr(msg.text, "debug info for c3d4"));
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "c3d5", 1,
						     clock_mono_ns() + 10000000000LL, &path, &msg),
			 ERR_NOT_FOUND);
	assert_non_null(strstr(msg.text, "an executable for c3d5"));
}

static void test_redirects(void **state)
{
	struct err_msg msg;
	char *path = NULL;
	uint64_t refused = atomic_load(&g_s.redirects_refused);

	(void)state;
	t_write("served", "moved bytes");
	snprintf(g_up.file, sizeof(g_up.file), "%s", t_path("served"));
	snprintf(g_other.file, sizeof(g_other.file), "%s", t_path("served"));
	atomic_store(&g_other.mode, FAKE_FILE);
	atomic_store(&g_up.mode, FAKE_REDIRECT);
	/* To another port on loopback: no upstream there, so never connected. */
	snprintf(g_up.location, sizeof(g_up.location), "http://127.0.0.1:%d/moved/internal",
		 g_other.port);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "e1e2", 0,
						     clock_mono_ns() + 10000000000LL, &path, &msg),
			 ERR_UNAVAILABLE);
	assert_null(path);
	assert_non_null(strstr(msg.text, "private address"));
	assert_int_equal(atomic_load(&g_other.requests), 0);
	assert_int_equal(atomic_load(&g_s.redirects_refused), refused + 1);
	/* file:// is no protocol to follow. */
	snprintf(g_up.location, sizeof(g_up.location), "file:///etc/passwd");
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "e1e2", 0,
						     clock_mono_ns() + 10000000000LL, &path, &msg),
			 ERR_UNAVAILABLE);
	assert_null(path);
	/* To the upstream itself: followed. */
	snprintf(g_up.location, sizeof(g_up.location), "http://127.0.0.1:%d/moved/here", g_up.port);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "e1e2", 0,
						     clock_mono_ns() + 10000000000LL, &path, &msg), 0);
	assert_int_equal(t_run("cmp -s '%s' '%s'", path, t_path("served")), 0);
	unlink(path);
	free(path);
	assert_int_equal(atomic_load(&g_other.requests), 0);
}

/*
 * A list with headers (credentials) sends them on every request, and
 * follows no redirect, even to itself: libcurl would carry them to
 * another host.
 */
static void test_headers(void **state)
{
	struct debuginfo__uset u;
	struct err_msg msg;
	char *path = NULL;
	char hdr[] = "X-Unhex-Test: hello";
	char *hv[1] = { hdr };

	(void)state;
	u = g_s.server;
	u.headers = hv;
	u.n_headers = 1;
	t_write("served", "header bytes");
	snprintf(g_up.file, sizeof(g_up.file), "%s", t_path("served"));
	snprintf(g_up.require, sizeof(g_up.require), "%s", hdr);
	atomic_store(&g_up.mode, FAKE_FILE);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch_from(&g_s, &u, "e1e2", 0,
							  clock_mono_ns() + 10000000000LL, &path,
							  &msg), 0);
	assert_int_equal(t_run("cmp -s '%s' '%s'", path, t_path("served")), 0);
	unlink(path);
	free(path);
	path = NULL;
	/* Without them: the refusal, said so. */
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "e1e2", 0,
						     clock_mono_ns() + 10000000000LL, &path, &msg),
			 ERR_UNAVAILABLE);
	assert_non_null(strstr(msg.text, "refused the request (HTTP 401)"));
	/* A redirect to the upstream itself is not followed with them. */
	atomic_store(&g_up.mode, FAKE_REDIRECT);
	snprintf(g_up.location, sizeof(g_up.location), "http://127.0.0.1:%d/moved/here", g_up.port);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch_from(&g_s, &u, "e1e2", 0,
							  clock_mono_ns() + 10000000000LL, &path,
							  &msg), ERR_UNAVAILABLE);
	assert_null(path);
	assert_non_null(strstr(msg.text, "redirects are not followed"));
	g_up.require[0] = '\0';
}

static void test_deadline(void **state)
{
	struct err_msg msg;
	char *path = NULL;
	int64_t t0 = clock_mono_ns();

	(void)state;
	atomic_store(&g_up.mode, FAKE_HANG);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "e5f6", 0, t0 + 300000000LL, &path,
						     &msg), ERR_TIMEOUT);
	assert_non_null(strstr(msg.text, "timed out"));
	assert_true(clock_mono_ns() - t0 < 4000000000LL);
}

static void *cancel_soon(void *arg)
{
	struct timespec ts = { 0, 200000000 };

	nanosleep(&ts, NULL);
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

static void test_cancel(void **state)
{
	struct err_msg msg;
	pthread_t t;
	char *path = NULL;
	int64_t t0 = clock_mono_ns();

	(void)state;
	atomic_store(&g_up.mode, FAKE_HANG);
	assert_int_equal(pthread_create(&t, NULL, cancel_soon, &g_s.cancel), 0);
	err_clear(&msg);
	assert_int_equal(debuginfo__debuginfod_fetch(&g_s, "a7b8", 0, t0 + 60000000000LL, &path,
						     &msg), ERR_TIMEOUT);
	pthread_join(t, NULL);
	assert_true(clock_mono_ns() - t0 < 4000000000LL);
	atomic_store(&g_s.cancel, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_found),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_redirects),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_cancel),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
