/*
 * test_server.c - the server's response cap: a flame graph larger than
 * web_options.max_response_bytes is answered 413 with the encoder's
 * message, the same query under the default cap is 200, and small routes
 * are unaffected; the object store's counters on /metrics and
 * /api/v1/stats; glibc's heap gauges on /metrics follow an allocation.  A real server on 127.0.0.1, port 0, over a store in a
 * temp dir; requests over a plain socket.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "objstore/objstore.h"
#include "storage/storage.h"
#include "web/web.h"

#define PTYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
#define T0_S 1700000000LL
#define N_FUNCS 3000 /* names of ~40 bytes: a flame graph of well over 64 KiB */

static char g_dir[64];
static struct store *g_st;

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

/* One profile of service "svc": N_FUNCS stacks main;<long name i>. */
static void fill(struct store *st)
{
	struct store_txn *tx;
	struct err_msg msg = { { 0 } };
	struct store_label labels[] = { { STORE_LABEL_SERVICE, "svc" },
					{ STORE_LABEL_PROFILE_TYPE, PTYPE } };
	struct store_mapping m = { 0x400000, 0x800000, 0, "/bin/svc", "0123",
				   STORE_MAP_HAS_FUNCTIONS };
	struct store_profile_meta meta = { T0_S * 1000000000LL, 10000000000LL, 10000000, { 0 } };
	uint32_t part, map, main_loc, *stacks = calloc(N_FUNCS, sizeof(uint32_t));
	int64_t *values = calloc(N_FUNCS, sizeof(int64_t));
	uint64_t series;

	assert_non_null(stacks);
	assert_non_null(values);
	assert_int_equal(store_txn_begin(st, "t1", &tx, &msg), 0);
	assert_int_equal(store_txn_partition(tx, "svc", &part), 0);
	assert_int_equal(store_txn_mapping(tx, part, &m, &map), 0);
	assert_int_equal(store_txn_series(tx, labels, 2, &series, &msg), 0);
	for (int i = -1; i < N_FUNCS; i++) {
		char name[64];
		struct store_function fn = { name, "", "src.c", 1 };
		struct store_line ln = { 0, 10, 0 };
		struct store_location loc = { map, 0x401000 + 16 * (uint64_t)(i + 1), &ln, 1 };
		uint32_t leaf_first[2];

		if (i < 0)
			snprintf(name, sizeof(name), "main");
		else
			snprintf(name, sizeof(name), "namespace::Component::handler_number_%05d", i);
		assert_int_equal(store_txn_function(tx, part, &fn, &ln.function_id), 0);
		assert_int_equal(store_txn_location(tx, part, &loc, i < 0 ? &main_loc : &leaf_first[0]),
				 0);
		if (i < 0)
			continue;
		leaf_first[1] = main_loc;
		assert_int_equal(store_txn_stack(tx, part, leaf_first, 2, &stacks[i]), 0);
		values[i] = 1 + i;
	}
	assert_int_equal(store_txn_profile(tx, series, part, &meta, stacks, values, N_FUNCS), 0);
	assert_int_equal(store_txn_commit(tx, &msg), 0);
	free(stacks);
	free(values);
}

static int setup(void **state)
{
	struct store_options o = { 0 };
	struct err_msg msg = { { 0 } };

	(void)state;
	strcpy(g_dir, "/tmp/unhex-web-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	o.dir = g_dir;
	if (store_open(&o, &g_st, &msg))
		return -1;
	fill(g_st);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	store_close(g_st);
	nftw(g_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static struct web_server *start_with(size_t max_response, const struct objstore *os,
				     const char *tokens)
{
	struct web_options opt;
	struct web_server *srv = NULL;
	struct err_msg msg = { { 0 } };

	web_options_default(&opt);
	opt.listen = "127.0.0.1:0";
	opt.threads = 4;
	opt.max_response_bytes = max_response;
	opt.objstore = os;
	opt.auth_tokens = tokens;
	if (web_server_start(g_st, &opt, &srv, &msg))
		fail_msg("web_server_start: %s", msg.text);
	return srv;
}

static struct web_server *start(size_t max_response)
{
	return start_with(max_response, NULL, NULL);
}

/*
 * GETs `path` as tenant t1 with the bearer `token` (NULL: none); the
 * status in *status, the body (after the head) into out.
 */
static void get_as(int port, const char *path, const char *token, int *status, struct buf *out)
{
	struct sockaddr_in sa = { 0 };
	char req[1024], chunk[65536];
	struct buf all;
	const char *body;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	n = snprintf(req, sizeof(req),
		     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Scope-OrgID: t1\r\n"
		     "%s%s%sConnection: close\r\n\r\n", path, token ? "Authorization: Bearer " : "",
		     token ? token : "", token ? "\r\n" : "");
	assert_int_equal(write(fd, req, (size_t)n), n);
	buf_init(&all, 64u << 20);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		assert_int_equal(buf_append(&all, chunk, (size_t)n), 0);
	close(fd);
	assert_int_equal(sscanf(all.data, "HTTP/1.1 %d", status), 1);
	body = strstr(all.data, "\r\n\r\n");
	assert_non_null(body);
	buf_reset(out);
	assert_int_equal(buf_puts(out, body + 4), 0);
	buf_release(&all);
}

static void get(int port, const char *path, int *status, struct buf *out)
{
	get_as(port, path, NULL, status, out);
}

#define RENDER_PATH                                                                           \
	"/pyroscope/render?query=" PTYPE "%7Bservice_name%3D%22svc%22%7D&from=1699999000" \
	"&until=1700001000&maxNodes=100000"

/* A server with the response cap `max_response`, and its answer to RENDER_PATH. */
static struct web_server *render(size_t max_response, int *status, struct buf *body)
{
	struct web_server *srv = start(max_response);

	buf_init(body, 64u << 20);
	get(web_server_port(srv), RENDER_PATH, status, body);
	return srv;
}

static void test_flame_graph_over_the_cap_is_413(void **state)
{
	struct buf body;
	int status = 0;
	struct web_server *srv = render(64 << 10, &status, &body);
	(void)state;

	assert_int_equal(status, 413);
	assert_non_null(strstr(body.data, "output limit"));
	get(web_server_port(srv), "/ready", &status, &body);
	assert_int_equal(status, 200);
	assert_string_equal(body.data, "ready\n");
	web_server_stop(srv);
	buf_release(&body);
}

static void test_flame_graph_under_the_default_cap(void **state)
{
	struct buf body;
	int status = 0;
	struct web_server *srv = render(0, &status, &body);
	(void)state;

	assert_int_equal(status, 200);
	assert_true(body.len > 64 << 10);
	assert_non_null(strstr(body.data, "handler_number_02999"));
	web_server_stop(srv);
	buf_release(&body);
}

static void test_tiny_cap_is_raised_to_the_minimum(void **state)
{
	struct buf body;
	int status = 0;
	struct web_server *srv = render(10, &status, &body);
	(void)state;

	/* The 413 message itself still fits. */
	assert_int_equal(status, 413);
	assert_non_null(strstr(body.data, "output limit"));
	web_server_stop(srv);
	buf_release(&body);
}

/* A bucket's counters (the directory backend's: same interface) are served. */
static void test_objstore_counters(void **state)
{
	char root[96];
	struct objstore *os;
	struct objstore_stat st;
	struct err_msg msg = { { 0 } };
	struct web_server *srv;
	struct buf body;
	int status = 0;
	static const char *const series[] = {
		"\nunhex_objstore_requests_total{op=\"put\",result=\"ok\"} 1\n",
		"\nunhex_objstore_requests_total{op=\"put\",result=\"conflict\"} 1\n",
		"\nunhex_objstore_requests_total{op=\"head\",result=\"not_found\"} 1\n",
		"\nunhex_objstore_requests_total{op=\"range_get\",result=\"error\"} 0\n",
		"\nunhex_objstore_bytes_total{op=\"put\",direction=\"out\"} 5\n",
		"\nunhex_objstore_retries_total{op=\"part\"} 0\n",
		"\nunhex_objstore_failures_total 1\n",
	};
	(void)state;

	snprintf(root, sizeof(root), "%s/bucket", g_dir);
	assert_int_equal(objstore_open_dir(root, &os, &msg), 0);
	assert_int_equal(objstore_put(os, "a/1", "12345", 5, OBJSTORE_CREATE_ONCE, &msg), 0);
	assert_int_equal(objstore_put(os, "a/1", "12345", 5, OBJSTORE_CREATE_ONCE, &msg),
			 ERR_CONFLICT);
	assert_int_equal(objstore_head(os, "a/2", &st, &msg), ERR_NOT_FOUND);
	srv = start_with(0, os, NULL);
	buf_init(&body, 64u << 20);
	get(web_server_port(srv), "/metrics", &status, &body);
	assert_int_equal(status, 200);
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++)
		if (!strstr(body.data, series[i]))
			fail_msg("/metrics has no line %s", series[i]);
	/* An open server: the caller has every scope, so the stats carry them too. */
	get(web_server_port(srv), "/api/v1/stats", &status, &body);
	assert_int_equal(status, 200);
	assert_non_null(strstr(body.data, ",\"objstore\":{\"backend\":\"dir\",\"failures\":1,\"ops\":{"
					  "\"put\":{\"ok\":1,\"not_found\":0,\"conflict\":1,\"error\":0,"
					  "\"not_modified\":0,\"retries\":0,\"bytes_in\":0,"
					  "\"bytes_out\":5},"));
	assert_non_null(strstr(body.data, "\"list\":{\"ok\":0,"));
	assert_string_equal(body.data + body.len - 3, "}}\n");
	web_server_stop(srv);
	/* With tokens: server-wide counters only for the admin scope. */
	{
		char path[128];
		struct buf lines;
		FILE *f;

		snprintf(path, sizeof(path), "%s/tokens", g_dir);
		buf_init(&lines, 4096);
		assert_int_equal(web_token_line("reader-token-0001", 17, "t1", "query", NULL, &lines,
						&msg), 0);
		assert_int_equal(web_token_line("admin-token-00001", 17, "*", "query,admin", NULL,
						&lines, &msg), 0);
		f = fopen(path, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(lines.data, 1, lines.len, f), lines.len);
		fclose(f);
		assert_int_equal(chmod(path, 0600), 0);
		buf_release(&lines);
		srv = start_with(0, os, path);
		get_as(web_server_port(srv), "/api/v1/stats", "reader-token-0001", &status, &body);
		assert_int_equal(status, 200);
		assert_non_null(strstr(body.data, "\"tenant\":\"t1\""));
		assert_null(strstr(body.data, "objstore"));
		get_as(web_server_port(srv), "/api/v1/stats", "admin-token-00001", &status, &body);
		assert_int_equal(status, 200);
		assert_non_null(strstr(body.data, ",\"objstore\":{\"backend\":\"dir\""));
		web_server_stop(srv);
	}
	/* Without a bucket: no objstore series, no objstore member. */
	srv = start(0);
	get(web_server_port(srv), "/metrics", &status, &body);
	assert_null(strstr(body.data, "unhex_objstore_"));
	get(web_server_port(srv), "/api/v1/stats", &status, &body);
	assert_null(strstr(body.data, "objstore"));
	web_server_stop(srv);
	objstore_close(os);
	buf_release(&body);
}

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED_MALLOC 1
#endif
#endif

/* The value of the unlabelled series `name` in a /metrics body. */
static unsigned long long gauge(const struct buf *body, const char *name)
{
	char key[96];
	const char *p;

	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(body->data, key);
	if (!p)
		fail_msg("/metrics has no series %s", name);
	return strtoull(p + strlen(key), NULL, 10);
}

/* What glibc has handed out: in its arenas and mapped one by one. */
static unsigned long long heap_in_use(int port, struct buf *body)
{
	int status = 0;

	get(port, "/metrics", &status, body);
	assert_int_equal(status, 200);
	return gauge(body, "unhex_malloc_in_use_bytes") + gauge(body, "unhex_malloc_mmapped_bytes");
}

/* 16 MiB malloc'ed and written show in the heap gauges, and leave them when
 * freed (mapped back, or free in an arena). */
static void test_malloc_gauges(void **state)
{
	const size_t big = 16u << 20;
	struct web_server *srv = start(0);
	int port = web_server_port(srv);
	unsigned long long before, held, after;
	struct buf body;
	char *p;
	(void)state;

	buf_init(&body, 64u << 20);
	before = heap_in_use(port, &body);
	(void)gauge(&body, "unhex_malloc_free_bytes");
	(void)gauge(&body, "unhex_malloc_top_bytes");
	p = malloc(big);
	assert_non_null(p);
	memset(p, 1, big);
	held = heap_in_use(port, &body);
	free(p);
	after = heap_in_use(port, &body);
#ifndef SANITIZED_MALLOC
	/* A sanitizer's allocator is not glibc's: its blocks are not counted.
	 * The server's own allocations for the requests move the rest by far
	 * less than the 1 MiB allowed. */
	if (held + (1u << 20) < before + big || after + big > held + (1u << 20))
		fail_msg("heap in use %llu, then %llu with 16 MiB held, %llu after its free", before,
			 held, after);
#else
	(void)before, (void)held, (void)after;
#endif
	web_server_stop(srv);
	buf_release(&body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flame_graph_over_the_cap_is_413),
		cmocka_unit_test(test_flame_graph_under_the_default_cap),
		cmocka_unit_test(test_tiny_cap_is_raised_to_the_minimum),
		cmocka_unit_test(test_objstore_counters),
		cmocka_unit_test(test_malloc_gauges),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
