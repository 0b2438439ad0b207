/*
 * test_service.c - the debug-info service over a real store in a temp
 * dir and real programs compiled here: uploads (stored, identical, wrong
 * build, not an ELF, stripped), resolution through the index against raw
 * DWARF on the unstripped binary (leaf and return addresses, .debug-only
 * and executable layouts), the persisted cache and index across a reopen,
 * statuses and the budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "debuginfo/debuginfo.h"
#include "storage/storage.h"
#include "symbolize/symbolize.h"
#include "tests/symbolize/fixtures.h"
#include "tests/symbolize/symtest.h"

static struct store *g_st;
static struct debuginfo *g_svc;
static char g_id[2 * SYM_BUILD_ID_MAX + 1];    /* prog */
static char g_id2[2 * SYM_BUILD_ID_MAX + 1];   /* prog2, never uploaded at first */

static void open_all(void)
{
	struct store_options so = { 0 };
	struct debuginfo_options o = { 0 };
	struct err_msg msg;

	err_clear(&msg);
	so.dir = t_path("data");
	assert_int_equal(store_open(&so, &g_st, &msg), 0);
	o.data_dir = t_path("data");
	o.workers = 1;
	assert_int_equal(debuginfo_open(g_st, &o, &g_svc, &msg), 0);
}

static void close_all(void)
{
	debuginfo_close(g_svc);
	store_close(g_st);
	g_svc = NULL;
	g_st = NULL;
}

static void id_of(const char *path, char *out)
{
	struct sym_elf_info info;

	assert_int_equal(sym_elf_inspect_file(path, &info, NULL), 0);
	assert_true(info.build_id_len > 0);
	sym_build_id_hex(info.build_id, info.build_id_len, out);
}

static int setup(void **state)
{
	(void)state;
	t_mkdtemp();
	t_write("inl.h", FIX_C_HEADER);
	t_write("prog.c", FIX_C);
	t_write("prog2.c", FIX_C);
	if (t_run("cd %s && gcc -g -O2 -fPIE -pie -Wl,--build-id -o prog prog.c && "
		  "gcc -g -O2 -fPIE -pie -Wl,--build-id -DVARIANT=2 -o prog2 prog2.c -Dwork=work2 && "
		  "objcopy --only-keep-debug prog prog.debug && cp prog prog.stripped && "
		  "strip --strip-all prog.stripped && objcopy --only-keep-debug prog2 prog2.debug",
		  t_dir))
		return -1;
	id_of(t_path("prog"), g_id);
	id_of(t_path("prog2"), g_id2);
	if (strcmp(g_id, g_id2) == 0)
		return -1;
	open_all();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close_all();
	t_rmdir();
	return 0;
}

static int upload_file(const char *path, const char *id, enum debuginfo_file_kind kind,
		       struct debuginfo_upload_result *res, struct err_msg *msg)
{
	struct debuginfo_upload *u;
	struct buf b;
	int rc;

	buf_init(&b, 1 << 30);
	if (buf_read_file(&b, path))
		fail();
	assert_int_equal(debuginfo_upload_begin(g_svc, &u, msg), 0);
	/* In pieces, as the web layer streams it. */
	for (size_t off = 0; off < b.len; off += 4000) {
		size_t n = b.len - off < 4000 ? b.len - off : 4000;

		assert_int_equal(debuginfo_upload_write(u, b.data + off, n, msg), 0);
	}
	rc = debuginfo_upload_commit(u, id, kind, res, msg);
	buf_release(&b);
	return rc;
}

static void test_uploads(void **state)
{
	struct debuginfo_upload_result res;
	struct err_msg msg;
	struct buf out;
	char path[4096];

	(void)state;
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	assert_false(res.unchanged);
	assert_int_equal(res.kinds, 1u << DEBUGINFO_FILE_DEBUGINFO);
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	assert_true(res.unchanged);

	/* The wrong build under our ID: refused, and named. */
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog2.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 ERR_CONFLICT);
	assert_int_equal(res.reason, SYM_REASON_BUILD_ID_MISMATCH);
	assert_non_null(strstr(msg.text, "build ID mismatch"));
	assert_non_null(strstr(msg.text, g_id2));

	/* Not an ELF file. */
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.c"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 ERR_INVALID);
	assert_int_equal(res.reason, SYM_REASON_INVALID_ELF);

	/* A stripped executable is no debug info; it is a fine executable. */
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.stripped"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 ERR_INVALID);
	assert_int_equal(res.reason, SYM_REASON_NO_SYMBOLS);
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_EXECUTABLE, &res, &msg),
			 ERR_INVALID);

	/* The good file is still there and still ok, refusals notwithstanding. */
	buf_init(&out, 0);
	assert_int_equal(debuginfo_info_json(g_svc, g_id, &out, &msg), 0);
	assert_non_null(strstr(out.data, "\"status\":\"ok\""));
	assert_non_null(strstr(out.data, "\"debuginfo\":true"));
	assert_non_null(strstr(out.data, "\"executable\":false"));
	buf_reset(&out);
	assert_int_equal(debuginfo_info_json(g_svc, NULL, &out, &msg), 0);
	assert_non_null(strstr(out.data, g_id));
	buf_release(&out);
	assert_int_equal(debuginfo_file_path(g_svc, g_id, DEBUGINFO_FILE_DEBUGINFO, path, sizeof(path)), 0);
	assert_int_equal(t_run("cmp -s '%s' '%s'", path, t_path("prog.debug")), 0);
	assert_int_equal(debuginfo_file_path(g_svc, g_id, DEBUGINFO_FILE_EXECUTABLE, path, sizeof(path)),
			 ERR_NOT_FOUND);
	assert_int_equal(debuginfo_file_path(g_svc, "zz", DEBUGINFO_FILE_DEBUGINFO, path, sizeof(path)),
			 ERR_NOT_FOUND);
}

/* The profile mapping of the executable segment, as the kernel maps it. */
static void exec_mapping(const char *bin, struct debuginfo_mapping_ref *m, struct sym_segment *seg)
{
	struct sym_elf_info info;
	const uint64_t base = 0x555555554000ull;

	assert_int_equal(sym_elf_inspect_file(bin, &info, NULL), 0);
	for (size_t i = 0; i < info.n_segments; i++)
		if (info.segments[i].flags & 1) {
			*seg = info.segments[i];
			memset(m, 0, sizeof(*m));
			m->memory_start = base + (seg->vaddr & ~0xfffull);
			m->memory_limit = base + ((seg->vaddr + seg->memsz + 0xfff) & ~0xfffull);
			m->file_offset = seg->offset & ~0xfffull;
			return;
		}
	fail();
}

struct got {
	size_t n_called;
	char names[4096][128];
	unsigned lines[4096];
	size_t depth[4096];
};

static int on_frames(void *ctx, size_t i, uint64_t vaddr, const struct sym_frame *f, size_t n)
{
	struct got *g = ctx;

	(void)vaddr;
	if (i >= 4096)
		return ERR_INVALID;
	g->n_called++;
	snprintf(g->names[i], sizeof(g->names[i]), "%s", n && f[0].function ? f[0].function : "");
	g->lines[i] = n ? f[0].line : 0;
	g->depth[i] = n;
	return 0;
}

/* Resolves every instruction of .text (leaf and return) and checks it against raw DWARF. */
static void check_all(const char *expect_status_bin, int64_t budget, size_t *count)
{
	struct debuginfo_mapping_ref map;
	struct sym_segment seg;
	struct debuginfo_addr_req req[4096];
	struct sym_dwarf *d;
	uint64_t *v;
	size_t n = t_addresses(t_path("prog"), &v), k = 0;
	static struct got g;
	enum debuginfo_status st;
	char reason[256];

	(void)expect_status_bin;
	exec_mapping(t_path("prog"), &map, &seg);
	for (size_t i = 0; i < n && k + 2 <= 4096; i++) {
		if (v[i] < seg.vaddr + 1 || v[i] >= seg.vaddr + seg.memsz)
			continue;
		req[k].addr = v[i] - seg.vaddr + seg.offset;
		req[k++].leaf = 1;
		req[k].addr = v[i] - seg.vaddr + seg.offset;
		req[k++].leaf = 0;
	}
	memset(&g, 0, sizeof(g));
	assert_int_equal(debuginfo_resolve(g_svc, g_id, &map, req, k,
					     clock_mono_ns() + budget, on_frames, &g, &st, reason,
					     sizeof(reason)),
			 0);
	assert_int_equal(st, DEBUGINFO_STATUS_OK);
	assert_int_equal(g.n_called, k);
	assert_int_equal(sym_dwarf_open(t_path("prog"), NULL, &d, NULL), 0);
	for (size_t i = 0; i < k; i++) {
		struct sym_frame f[SYM_MAX_FRAMES];
		size_t nf = 0;
		uint64_t va = req[i].addr - seg.offset + seg.vaddr - (req[i].leaf ? 0 : 1);

		assert_int_equal(sym_dwarf_lookup(d, va, f, SYM_MAX_FRAMES, &nf), 0);
		assert_int_equal(g.depth[i], nf);
		if (nf) {
			assert_string_equal(g.names[i], f[0].function ? f[0].function : "");
			assert_int_equal(g.lines[i], f[0].line);
		}
	}
	sym_dwarf_close(d);
	free(v);
	*count = k;
}

static void test_resolve_and_persist(void **state)
{
	struct debuginfo_stats s0, s1;
	size_t k;

	(void)state;
	debuginfo_stats(g_svc, &s0);
	check_all("prog", 60LL * 1000000000, &k);
	debuginfo_stats(g_svc, &s1);
	assert_int_equal(s1.index_builds - s0.index_builds, 1);
	assert_int_equal(s1.cache_misses - s0.cache_misses, k);
	/* The second time everything comes from the persisted cache. */
	check_all("prog", 60LL * 1000000000, &k);
	debuginfo_stats(g_svc, &s0);
	assert_int_equal(s0.cache_hits - s1.cache_hits, k);
	assert_int_equal(s0.index_builds, s1.index_builds);

	/* Across a restart: the cache answers, and a miss opens the saved index. */
	close_all();
	open_all();
	check_all("prog", 60LL * 1000000000, &k);
	debuginfo_stats(g_svc, &s0);
	assert_int_equal(s0.index_builds, 0);
	assert_int_equal(s0.cache_hits, k);
}

/* The unstripped binary (an exact executable layout) names the same frames. */
static void test_executable_layout(void **state)
{
	struct debuginfo_upload_result res;
	struct err_msg msg;
	struct debuginfo_stats s0;
	char path[4096];
	size_t k;

	(void)state;
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	assert_false(res.unchanged);
	assert_int_equal(res.kinds, 3u);
	assert_int_equal(debuginfo_file_path(g_svc, g_id, DEBUGINFO_FILE_EXECUTABLE, path, sizeof(path)), 0);
	debuginfo_stats(g_svc, &s0);
	check_all("prog", 60LL * 1000000000, &k);
	/* The replacement dropped the cache: everything was resolved again. */
	{
		struct debuginfo_stats s1;

		debuginfo_stats(g_svc, &s1);
		assert_int_equal(s1.cache_misses - s0.cache_misses, k);
		assert_int_equal(s1.index_builds - s0.index_builds, 1);
	}
}

static void test_statuses_and_budget(void **state)
{
	struct debuginfo_mapping_ref map = { 0x1000, 0x2000, 0, 0 };
	struct debuginfo_addr_req req = { 0x1100, 1 };
	struct debuginfo_upload_result res;
	struct err_msg msg;
	static struct got g;
	enum debuginfo_status st;
	char reason[256];

	(void)state;
	/* Never uploaded, no upstream. */
	memset(&g, 0, sizeof(g));
	assert_int_equal(debuginfo_resolve(g_svc, g_id2, &map, &req, 1,
					     clock_mono_ns() + 1000000000, on_frames, &g, &st,
					     reason, sizeof(reason)),
			 0);
	assert_int_equal(st, DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(g.n_called, 0);
	assert_string_equal(debuginfo_status_str(st), "not_found");
	/* ... and listed, so users see which build IDs queries need. */
	{
		struct buf b;

		buf_init(&b, 0);
		err_clear(&msg);
		assert_int_equal(debuginfo_info_json(g_svc, g_id2, &b, &msg), 0);
		assert_int_equal(buf_putc(&b, '\0'), 0);
		assert_non_null(strstr(b.data, "\"status\":\"not_found\""));
		assert_non_null(strstr(b.data, "no debuginfod upstream"));
		buf_reset(&b);
		assert_int_equal(debuginfo_metrics(g_svc, &b), 0);
		assert_int_equal(buf_putc(&b, '\0'), 0);
		assert_non_null(strstr(b.data, "unhex_debuginfo_build_ids{status=\"not_found\"} 1\n"));
		buf_release(&b);
	}

	/* Uploaded, but the budget is already spent: pending, then ok. */
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog2.debug"), g_id2, DEBUGINFO_FILE_DEBUGINFO, &res, &msg), 0);
	exec_mapping(t_path("prog2"), &map, &(struct sym_segment){ 0 });
	req.addr = map.file_offset + 0x10;
	assert_int_equal(debuginfo_resolve(g_svc, g_id2, &map, &req, 1, clock_mono_ns() - 1,
					     on_frames, &g, &st, reason, sizeof(reason)),
			 0);
	assert_true(st == DEBUGINFO_STATUS_PENDING || st == DEBUGINFO_STATUS_OK);
	if (st == DEBUGINFO_STATUS_PENDING)
		assert_int_equal(g.n_called, 0);
	assert_int_equal(debuginfo_resolve(g_svc, g_id2, &map, &req, 1,
					     clock_mono_ns() + 60LL * 1000000000, on_frames, &g,
					     &st, reason, sizeof(reason)),
			 0);
	assert_int_equal(st, DEBUGINFO_STATUS_OK);
	assert_true(g.n_called >= 1);

	/* A mapping without a hex build ID. */
	assert_int_equal(debuginfo_resolve(g_svc, "not-hex", &map, &req, 1, clock_mono_ns(),
					     on_frames, &g, &st, reason, sizeof(reason)),
			 0);
	assert_int_equal(st, DEBUGINFO_STATUS_NO_BUILD_ID);
}

static void test_upload_cap(void **state)
{
	struct debuginfo_options o = { 0 };
	struct debuginfo *small;
	struct debuginfo_upload *u;
	struct err_msg msg;
	char block[1024] = { 0 };

	(void)state;
	o.data_dir = t_path("data-small");
	o.max_upload_bytes = 4096;
	err_clear(&msg);
	assert_int_equal(debuginfo_open(g_st, &o, &small, &msg), 0);
	assert_int_equal(debuginfo_upload_begin(small, &u, &msg), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(debuginfo_upload_write(u, block, sizeof(block), &msg), 0);
	assert_int_equal(debuginfo_upload_write(u, block, 1, &msg), ERR_TOO_LARGE);
	debuginfo_upload_abort(u);
	debuginfo_close(small);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uploads),
		cmocka_unit_test(test_resolve_and_persist),
		cmocka_unit_test(test_executable_layout),
		cmocka_unit_test(test_statuses_and_budget),
		cmocka_unit_test(test_upload_cap),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
