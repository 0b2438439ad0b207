/*
 * test_fetch.c - fetches from upstream into the store (fetch.c) through a
 * real service and a fake debuginfod on loopback: not found, an upstream
 * that hangs, files that cannot serve as debug info (not an ELF, a stripped
 * binary), a good .debug file stored (every tenant's) and then resolved
 * from, a Go executable fetched when no debug info is served, the budget of fetches per minute, the budgets of one query and one
 * tenant, a tenant's query that may not use another's file, and a fetch
 * that finds an upload already stored, and a query waiting on a fetch
 * while an upload of the same build ID lands.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "fetchtest.h"

static struct fake_upstream g_up;
static struct debuginfo_options g_opt;
static char g_urls[64], g_data[300];
static struct store *g_st;
static struct debuginfo *g_s;
static char g_id[DEBUGINFO_HEX_MAX];
static uint8_t g_bid[SYM_BUILD_ID_MAX];
static size_t g_blen;

static int setup(void **state)
{
	struct sym_elf_info info;

	(void)state;
	if (ft_build_prog("cp prog prog.stripped && strip --strip-all prog.stripped", &info, g_id))
		return -1;
	memcpy(g_bid, info.build_id, info.build_id_len);
	g_blen = info.build_id_len;
	return ft_open(&g_up, &g_opt, &g_st, &g_s);
}

static int teardown(void **state)
{
	(void)state;
	ft_close(&g_up, g_st, g_s);
	return 0;
}

static void serve(enum fake_mode mode, const char *file)
{
	atomic_store(&g_up.mode, mode);
	if (file)
		snprintf(g_up.file, sizeof(g_up.file), "%s", t_path(file));
}

static struct debuginfo__meta meta_of(const char *id)
{
	struct debuginfo__meta m;

	assert_int_equal(debuginfo__meta_get(g_s, id, &m), 0);
	return m;
}

static void test_not_found_and_errors(void **state)
{
	struct debuginfo__meta m;
	int64_t now = clock_wall_ns();

	(void)state;
	serve(FAKE_404, NULL);
	assert_int_equal(debuginfo__fetch(g_s, "0a0b", (const uint8_t *)"\x0a\x0b", 2),
			 ERR_NOT_FOUND);
	m = meta_of("0a0b");
	assert_int_equal(m.status, DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(m.source, DEBUGINFO_SOURCE_DEBUGINFOD);
	assert_true(m.retry_at > now);
	assert_int_equal(atomic_load(&g_s->fetches_not_found), 1);

	/* An upstream that never answers: an upstream error past the fetch timeout. */
	serve(FAKE_HANG, NULL);
	assert_int_equal(debuginfo__fetch(g_s, "0c0d", (const uint8_t *)"\x0c\x0d", 2),
			 ERR_TIMEOUT);
	m = meta_of("0c0d");
	assert_int_equal(m.status, DEBUGINFO_STATUS_UPSTREAM_ERROR);
	assert_non_null(strstr(m.reason, "timed out"));
	assert_int_equal(atomic_load(&g_s->fetches_error), 1);
}

static void test_unusable_files(void **state)
{
	struct debuginfo__meta m;
	char dst[DEBUGINFO__PATH_MAX];

	(void)state;
	serve(FAKE_FILE, "prog.c");
	assert_int_equal(debuginfo__fetch(g_s, g_id, g_bid, g_blen), ERR_INVALID);
	m = meta_of(g_id);
	assert_int_equal(m.status, DEBUGINFO_STATUS_INVALID_ELF);
	assert_non_null(strstr(m.reason, "debuginfod served an unusable file"));
	assert_int_equal(debuginfo__path(g_s, g_id, "debuginfo", dst, sizeof(dst)), 0);
	assert_false(debuginfo__file_exists(dst));
	assert_int_equal(atomic_load(&g_s->fetches_ok), 1);
}

/* A stripped binary served as "debuginfo": refused, it has no DWARF. */
static void test_stripped_binary(void **state)
{
	struct sym_elf_info info;
	char id[DEBUGINFO_HEX_MAX];
	struct debuginfo__meta m;

	(void)state;
	assert_int_equal(t_run("cd '%s' && gcc -O2 -Wl,--build-id -o other prog.c && "
			       "strip other", t_dir), 0);
	assert_int_equal(ft_build_id("other", &info, id), 0);
	serve(FAKE_FILE, "other");
	assert_int_equal(debuginfo__fetch(g_s, id, info.build_id, info.build_id_len), ERR_INVALID);
	m = meta_of(id);
	assert_int_equal(m.status, DEBUGINFO_STATUS_NO_SYMBOLS);
	assert_non_null(strstr(m.reason, "no .debug_info"));
}

static int count(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	(void)i;
	(void)vaddr;
	(void)f;
	*(size_t *)ctx += n;
	return 0;
}

/* Nobody uploaded prog: a query fetches its .debug, and names its frames. */
static void test_fetched_and_resolved(void **state)
{
	struct debuginfo_mapping_ref map = { 0, 0, 0, 1 };
	struct debuginfo_addr_req req;
	enum debuginfo_status st;
	struct sym_elf_info info;
	char reason[256], id[DEBUGINFO_HEX_MAX];
	size_t frames = 0;
	uint64_t *a;
	size_t n;

	(void)state;
	assert_int_equal(t_run("cd '%s' && gcc -g -O1 -Wl,--build-id -o third prog.c && "
			       "objcopy --only-keep-debug third third.debug", t_dir), 0);
	assert_int_equal(ft_build_id("third", &info, id), 0);
	serve(FAKE_FILE, "third.debug");
	n = t_func_addresses(t_path("third"), &a);
	assert_true(n > 0);
	req.addr = a[0];
	req.leaf = 1;
	assert_int_equal(debuginfo_resolve(g_s, id, &map, &req, 1,
					   clock_mono_ns() + 60000000000LL, count, &frames, &st,
					   reason, sizeof(reason)), 0);
	assert_int_equal(st, DEBUGINFO_STATUS_OK);
	assert_true(frames > 0);
	assert_int_equal(meta_of(id).source, DEBUGINFO_SOURCE_DEBUGINFOD);
	assert_int_equal(meta_of(id).kinds, 1u << DEBUGINFO_FILE_DEBUGINFO);
	assert_string_equal(meta_of(id).owners, "*");
	assert_true(meta_of(id).has_sha256);
	assert_true(debuginfo_visible(g_s, "any-tenant", id));
	free(a);
}

static int outermost(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	(void)i;
	(void)vaddr;
	if (n && f[n - 1].function)
		snprintf(ctx, 128, "%s", f[n - 1].function);
	return 0;
}

/*
 * A stripped Go program whose upstream has no debug info but serves the
 * executable: it is fetched as the executable, and its frames are named
 * from its .gopclntab, which its record says.
 */
static void test_go_executable(void **state)
{
	struct debuginfo_mapping_ref map = { 0, 0, 0, 1 };
	struct debuginfo_addr_req req = { 0, 1 };
	struct sym_elf_info info;
	enum debuginfo_status st;
	char reason[256], id[DEBUGINFO_HEX_MAX], name[128] = "", line[64] = "", cmd[700];
	char exe[DEBUGINFO__PATH_MAX];
	unsigned long long work = 0;
	FILE *p;

	(void)state;
	if (!t_have_go())
		skip();
	t_write("main.go", FIX_GO);
	assert_int_equal(t_go_build("-ldflags='-B 0x60c0ffee' -o gofull main.go"), 0);
	assert_int_equal(t_run("cd '%s' && strip --strip-all -o gostripped gofull", t_dir), 0);
	assert_int_equal(ft_build_id("gostripped", &info, id), 0);
	assert_false(info.flags & (SYM_HAS_DEBUG_INFO | SYM_HAS_SYMTAB));
	snprintf(cmd, sizeof(cmd), "readelf -sW '%s' | awk '$8==\"main.work\" {print $2}'",
		 t_path("gofull"));
	assert_non_null(p = popen(cmd, "r"));
	assert_non_null(fgets(line, sizeof(line), p));
	pclose(p);
	work = strtoull(line, NULL, 16);
	assert_true(work > 0);
	serve(FAKE_EXECUTABLE, "gostripped");
	req.addr = work + 4;
	assert_int_equal(debuginfo_resolve(g_s, id, &map, &req, 1,
					   clock_mono_ns() + 60000000000LL, outermost, name, &st,
					   reason, sizeof(reason)), 0);
	assert_int_equal(st, DEBUGINFO_STATUS_OK);
	assert_string_equal(name, "main.work");
	assert_int_equal(meta_of(id).kinds, 1u << DEBUGINFO_FILE_EXECUTABLE);
	assert_non_null(strstr(meta_of(id).reason, "named from .gopclntab (Go 1.18-1.19 layout)"));
	assert_int_equal(debuginfo__path(g_s, id, "executable", exe, sizeof(exe)), 0);
	assert_true(debuginfo__file_exists(exe));
}

/* At most fetch_per_minute fetches start; the rest are recorded, not sent. */
static void test_budget(void **state)
{
	struct debuginfo_options o = g_opt;
	struct debuginfo *s;
	struct debuginfo__meta m;
	struct err_msg msg;
	char id[8];
	int before;

	(void)state;
	o.data_dir = t_path("data-budget");
	o.fetch_per_minute = 2;
	err_clear(&msg);
	assert_int_equal(debuginfo_open(g_st, &o, &s, &msg), 0);
	serve(FAKE_404, NULL);
	before = atomic_load(&g_up.requests);
	for (int i = 0; i < 5; i++) {
		uint8_t b[2] = { 0xb0, (uint8_t)i };

		snprintf(id, sizeof(id), "b0%02x", i);
		assert_int_equal(debuginfo__fetch(s, id, b, 2), i < 2 ? ERR_NOT_FOUND : ERR_UNAVAILABLE);
	}
	/* Two lookups, each asking for the debug info, then for a Go executable. */
	assert_int_equal(atomic_load(&g_up.requests) - before, 4);
	assert_int_equal(atomic_load(&s->fetches_limited), 3);
	assert_int_equal(debuginfo__meta_get(s, "b004", &m), 0);
	assert_int_equal(m.status, DEBUGINFO_STATUS_UPSTREAM_ERROR);
	assert_non_null(strstr(m.reason, "limited to 2 a minute"));
	assert_true(m.retry_at > clock_wall_ns());
	debuginfo_close(s);
}

/* Resolves one address of an unknown build ID b1<i> as asker `a`; its status. */
static enum debuginfo_status ask(struct debuginfo *s, struct debuginfo_asker *a, int i,
				 char *reason, size_t rlen)
{
	struct debuginfo_mapping_ref map = { 0, 0, 0, 1 };
	struct debuginfo_addr_req req = { 0x1000, 1 };
	enum debuginfo_status st;
	size_t frames = 0;
	char id[8];

	snprintf(id, sizeof(id), "b1%02x", i);
	assert_int_equal(debuginfo_resolve_as(s, a, id, &map, &req, 1,
					      clock_mono_ns() + 30000000000LL, count, &frames,
					      &st, reason, rlen),
			 0);
	assert_int_equal(frames, 0);
	return st;
}

/*
 * One query starts at most DEBUGINFO_QUERY_FETCHES lookups and one
 * tenant's queries fetch_per_tenant_minute a minute; what they do not
 * start is pending, not recorded, and costs no other tenant anything.
 */
static void test_query_and_tenant_budgets(void **state)
{
	struct debuginfo_options o = g_opt;
	struct debuginfo_asker a1 = { "team-a", DEBUGINFO_QUERY_FETCHES };
	struct debuginfo_asker a2 = { "team-a", DEBUGINFO_QUERY_FETCHES };
	struct debuginfo_asker b = { "team-b", 2 };
	struct debuginfo *s;
	struct debuginfo__meta m;
	struct err_msg msg;
	char reason[256];
	int i, before;

	(void)state;
	o.data_dir = t_path("data-asker");
	o.fetch_per_minute = 60;
	o.fetch_per_tenant_minute = 10;
	err_clear(&msg);
	assert_int_equal(debuginfo_open(g_st, &o, &s, &msg), 0);
	serve(FAKE_404, NULL);
	before = atomic_load(&g_up.requests);
	/* One query of team-a: DEBUGINFO_QUERY_FETCHES lookups, then pending. */
	for (i = 0; i < 12; i++) {
		enum debuginfo_status st = ask(s, &a1, i, reason, sizeof(reason));

		if (i < (int)DEBUGINFO_QUERY_FETCHES) {
			assert_int_equal(st, DEBUGINFO_STATUS_NOT_FOUND);
			continue;
		}
		assert_int_equal(st, DEBUGINFO_STATUS_PENDING);
		assert_non_null(strstr(reason, "one query starts at most 8 upstream lookups"));
	}
	assert_int_equal(a1.fetches_left, 0);
	assert_int_equal(atomic_load(&s->fetches_not_found), DEBUGINFO_QUERY_FETCHES);
	/* Deferred build IDs have no record: a later query asks afresh. */
	assert_int_equal(debuginfo__meta_get(s, "b10b", &m), ERR_NOT_FOUND);
	/* A second query of team-a: two more, then the tenant's 10 a minute are spent. */
	for (i = 12; i < 16; i++) {
		enum debuginfo_status st = ask(s, &a2, i, reason, sizeof(reason));

		if (i < 14) {
			assert_int_equal(st, DEBUGINFO_STATUS_NOT_FOUND);
			continue;
		}
		assert_int_equal(st, DEBUGINFO_STATUS_PENDING);
		assert_non_null(strstr(reason, "this tenant's queries start at most 10"));
	}
	/* A build ID already looked up costs nothing: its record answers. */
	assert_int_equal(ask(s, &a2, 0, reason, sizeof(reason)), DEBUGINFO_STATUS_NOT_FOUND);
	/* team-b has its own budget, bounded by its query's allowance. */
	assert_int_equal(ask(s, &b, 20, reason, sizeof(reason)), DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(ask(s, &b, 21, reason, sizeof(reason)), DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(ask(s, &b, 22, reason, sizeof(reason)), DEBUGINFO_STATUS_PENDING);
	assert_int_equal(atomic_load(&s->fetches_not_found), 12);
	assert_int_equal(atomic_load(&s->fetches_deferred), 4 + 2 + 1);
	assert_true(atomic_load(&g_up.requests) - before >= 12);
	debuginfo_close(s);
}

/*
 * A file uploaded for one tenant names frames of that tenant's queries
 * only: another tenant's query that sends the build ID gets not_found,
 * also once the frames are in the cache.
 */
static void test_private_file_not_resolved_for_others(void **state)
{
	struct debuginfo_options o = g_opt;
	struct debuginfo_upload_by by = { "team-a", 0, "a-upload", NULL };
	struct debuginfo_mapping_ref map = { 0, 0, 0, 1 };
	struct debuginfo_asker a = { "team-a", DEBUGINFO_QUERY_FETCHES };
	struct debuginfo_asker b = { "team-b", DEBUGINFO_QUERY_FETCHES };
	struct debuginfo_upload_result res;
	struct debuginfo_upload *u;
	struct debuginfo_addr_req req;
	enum debuginfo_status st;
	struct debuginfo *s;
	struct err_msg msg;
	char reason[256];
	size_t frames, n;
	uint64_t *addr;
	struct buf f;
	int before;

	(void)state;
	o.data_dir = t_path("data-private");
	err_clear(&msg);
	assert_int_equal(debuginfo_open(g_st, &o, &s, &msg), 0);
	buf_init(&f, 1 << 30);
	assert_int_equal(buf_read_file(&f, t_path("prog")), 0);
	assert_int_equal(debuginfo_upload_begin(s, &u, &msg), 0);
	assert_int_equal(debuginfo_upload_write(u, f.data, f.len, &msg), 0);
	assert_int_equal(debuginfo_upload_commit_as(u, g_id, DEBUGINFO_FILE_DEBUGINFO, &by, &res,
						    &msg), 0);
	buf_release(&f);
	n = t_func_addresses(t_path("prog"), &addr);
	assert_true(n > 0);
	req.addr = addr[0];
	req.leaf = 1;
	serve(FAKE_404, NULL);
	before = atomic_load(&g_up.requests);
	for (int round = 0; round < 2; round++) {
		frames = 0;
		assert_int_equal(debuginfo_resolve_as(s, &a, g_id, &map, &req, 1,
						      clock_mono_ns() + 60000000000LL, count,
						      &frames, &st, reason, sizeof(reason)), 0);
		assert_int_equal(st, DEBUGINFO_STATUS_OK);
		assert_true(frames > 0);
		/* The second round's frames for team-a came from the cache. */
		frames = 0;
		assert_int_equal(debuginfo_resolve_as(s, &b, g_id, &map, &req, 1,
						      clock_mono_ns() + 60000000000LL, count,
						      &frames, &st, reason, sizeof(reason)), 0);
		assert_int_equal(st, DEBUGINFO_STATUS_NOT_FOUND);
		assert_string_equal(reason, "not uploaded (unhex upload)");
		assert_int_equal(frames, 0);
	}
	/* Nor did team-b's queries go upstream for it. */
	assert_int_equal(atomic_load(&g_up.requests) - before, 0);
	/* The every-tenant view (tools, debuginfo_resolve) still resolves. */
	frames = 0;
	assert_int_equal(debuginfo_resolve(s, g_id, &map, &req, 1, clock_mono_ns() + 60000000000LL,
					   count, &frames, &st, reason, sizeof(reason)), 0);
	assert_true(frames > 0);
	free(addr);
	debuginfo_close(s);
}

/* Uploads the file at `path` as the debug info of build ID `id`. */
static void upload(const char *path, const char *id)
{
	struct debuginfo_upload_result res;
	struct debuginfo_upload *u;
	struct err_msg msg;
	struct buf b;

	buf_init(&b, 1 << 30);
	assert_int_equal(buf_read_file(&b, path), 0);
	err_clear(&msg);
	assert_int_equal(debuginfo_upload_begin(g_s, &u, &msg), 0);
	assert_int_equal(debuginfo_upload_write(u, b.data, b.len, &msg), 0);
	assert_int_equal(debuginfo_upload_commit(u, id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	buf_release(&b);
}

/* A file uploaded before a fetch ends stays: the first file wins. */
static void test_upload_first(void **state)
{
	char dst[DEBUGINFO__PATH_MAX];

	(void)state;
	upload(t_path("prog"), g_id);
	serve(FAKE_FILE, "prog.debug");
	assert_int_equal(debuginfo__fetch(g_s, g_id, g_bid, g_blen), 0);
	assert_int_equal(debuginfo__path(g_s, g_id, "debuginfo", dst, sizeof(dst)), 0);
	assert_int_equal(t_run("cmp -s '%s' '%s'", dst, t_path("prog")), 0);
	assert_int_equal(meta_of(g_id).source, DEBUGINFO_SOURCE_UPLOAD);
}

struct resolve_call {
	const char *id;
	uint64_t addr;
	enum debuginfo_status st;
	char reason[256];
	size_t frames;
	int rc;
};

static void *resolve_thread(void *arg)
{
	struct resolve_call *c = arg;
	struct debuginfo_mapping_ref map = { 0, 0, 0, 1 };
	struct debuginfo_addr_req req = { c->addr, 1 };

	c->rc = debuginfo_resolve(g_s, c->id, &map, &req, 1, clock_mono_ns() + 60000000000LL,
				  count, &c->frames, &c->st, c->reason, sizeof(c->reason));
	return NULL;
}

/*
 * A query waits for a fetch that finds nothing (the upstream hangs past
 * the fetch timeout) while CI uploads the same build ID: the query builds
 * the index of the uploaded file and names the frame, instead of saying
 * the index could not be built, which no one tried.
 */
static void test_upload_during_fetch(void **state)
{
	struct resolve_call c = { 0 };
	struct sym_elf_info info;
	char id[DEBUGINFO_HEX_MAX];
	pthread_t th;
	uint64_t *a;
	size_t n;
	int hung;

	(void)state;
	assert_int_equal(t_run("cd '%s' && gcc -g -Os -Wl,--build-id -o fifth prog.c && "
			       "objcopy --only-keep-debug fifth fifth.debug", t_dir), 0);
	assert_int_equal(ft_build_id("fifth", &info, id), 0);
	n = t_func_addresses(t_path("fifth"), &a);
	assert_true(n > 0);
	serve(FAKE_HANG, NULL);
	hung = atomic_load(&g_up.hung);
	c.id = id;
	c.addr = a[0];
	assert_int_equal(pthread_create(&th, NULL, resolve_thread, &c), 0);
	/* The fetch is under way once the upstream holds its connection. */
	for (int i = 0; i < 1000 && atomic_load(&g_up.hung) == hung; i++)
		usleep(10000);
	assert_true(atomic_load(&g_up.hung) > hung);
	upload(t_path("fifth.debug"), id);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (c.rc != 0 || c.st != DEBUGINFO_STATUS_OK)
		fail_msg("rc %d, status %d: %s", c.rc, (int)c.st, c.reason);
	assert_true(c.frames > 0);
	assert_int_equal(meta_of(id).source, DEBUGINFO_SOURCE_UPLOAD);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_found_and_errors),
		cmocka_unit_test(test_unusable_files),
		cmocka_unit_test(test_stripped_binary),
		cmocka_unit_test(test_fetched_and_resolved),
		cmocka_unit_test(test_go_executable),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_query_and_tenant_budgets),
		cmocka_unit_test(test_private_file_not_resolved_for_others),
		cmocka_unit_test(test_upload_first),
		cmocka_unit_test(test_upload_during_fetch),
	};
	int rc;

	t_mkdtemp();
	if (fake_listen(&g_up))
		return 1;
	snprintf(g_urls, sizeof(g_urls), "http://127.0.0.1:%d", g_up.port);
	snprintf(g_data, sizeof(g_data), "%s", t_path("data"));
	g_opt.data_dir = g_data;
	g_opt.debuginfod_urls = g_urls;
	g_opt.fetch_timeout_s = 1;
	g_opt.workers = 1;
	rc = cmocka_run_group_tests(tests, setup, teardown);
	t_rmdir();
	return rc;
}
