/*
 * test_resolve.c - resolution (resolve.c) through a real service:
 * addresses resolved through the index against raw DWARF on the
 * unstripped binary (leaf and return addresses, .debug-only and executable
 * layouts), the persisted cache and index across a reopen, statuses and
 * the budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "svctest.h"

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

/* Resolves every instruction of .text (leaf and return) and checks it against raw DWARF
 * (returns through the caller rule). */
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
		uint64_t va = req[i].addr - seg.offset + seg.vaddr;

		/* A return address goes through the caller rule (symbolize.h). */
		if (req[i].leaf)
			assert_int_equal(sym_dwarf_lookup(d, va, f, SYM_MAX_FRAMES, &nf), 0);
		else
			assert_int_equal(sym_dwarf_lookup_caller(d, va, f, SYM_MAX_FRAMES, &nf), 0);
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
	struct debuginfo_upload_result res;
	struct debuginfo_stats s0, s1;
	struct err_msg msg;
	size_t k;

	(void)state;
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog.debug"), g_id, DEBUGINFO_FILE_DEBUGINFO, &res, &msg),
			 0);
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
	assert_int_equal(debuginfo_file_path(g_svc, g_id, DEBUGINFO_FILE_EXECUTABLE, path,
					     sizeof(path)), 0);
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
	/* Settled: answered the same without the addresses. */
	{
		enum debuginfo_status st2 = DEBUGINFO_STATUS_OK;
		char reason2[256] = "";

		assert_int_equal(debuginfo_resolve_settled(g_svc, NULL, g_id2, 5, &st2, reason2,
							   sizeof(reason2)),
				 1);
		assert_int_equal(st2, st);
		assert_string_equal(reason2, reason);
		assert_int_equal(debuginfo_resolve_settled(g_svc, NULL, "not-hex", 5, &st2, reason2,
							   sizeof(reason2)),
				 1);
		assert_int_equal(st2, DEBUGINFO_STATUS_NO_BUILD_ID);
	}
	/* ... and listed, so users see which build IDs queries need. */
	{
		struct debuginfo_record rec;
		uint64_t by[DEBUGINFO_STATUS_COUNT];

		err_clear(&msg);
		assert_int_equal(debuginfo_get(g_svc, g_id2, &rec, &msg), 0);
		assert_int_equal(rec.status, DEBUGINFO_STATUS_NOT_FOUND);
		assert_int_equal(rec.source, DEBUGINFO_SOURCE_NONE);
		assert_non_null(strstr(rec.reason, "no debuginfod upstream"));
		assert_int_equal(debuginfo_count_by_status(g_svc, by, &msg), 0);
		assert_int_equal(by[DEBUGINFO_STATUS_NOT_FOUND], 1);
	}

	/* Uploaded, but the budget is already spent: pending, then ok. */
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("prog2.debug"), g_id2, DEBUGINFO_FILE_DEBUGINFO, &res,
				     &msg), 0);
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
	/* With its file there, the addresses must be looked at. */
	assert_int_equal(debuginfo_resolve_settled(g_svc, NULL, g_id2, 1, &st, reason,
						   sizeof(reason)),
			 0);

	/* A mapping without a hex build ID. */
	assert_int_equal(debuginfo_resolve(g_svc, "not-hex", &map, &req, 1, clock_mono_ns(),
					     on_frames, &g, &st, reason, sizeof(reason)),
			 0);
	assert_int_equal(st, DEBUGINFO_STATUS_NO_BUILD_ID);
}

/*
 * A kernel symbol map (type=kallsyms): refused when corrupt and for a
 * program's build ID; stored for a kernel's; frames of a profile taken at
 * another KASLR offset than the map's are named by their offset from
 * _text, the mapping's start, leaf and return addresses alike.
 */
static void test_kernel_map(void **state)
{
	static const char kid[] = "4a5a9b0affb66c437abcd455d2738af879985fa9";
	static const char map_text[] = "ffffffff81000000 T _text\n"
				       "ffffffff81000100 T vfs_write\n"
				       "ffffffff81000100 t __alias_first\n"
				       "ffffffff81000100 T __x64_vfs_write_last\n"
				       "ffffffff81000200 T do_syscall_64\n"
				       "ffffffff81000400 D data\n";
	/* The profile's boot: _text at ...9a000000. */
	struct debuginfo_mapping_ref map = { 0xffffffff9a000000ull, 0xffffffff9b000000ull,
					     0xffffffff9a000000ull, 0 };
	struct debuginfo_addr_req req[] = {
		{ 0xffffffff9a000150ull, 1 }, /* leaf in the aliased function */
		{ 0xffffffff9a000200ull, 0 }, /* a return address at do_syscall_64's start: caller rule */
		{ 0xffffffff9a000201ull, 0 },
		{ 0xffffffff9a000450ull, 1 }, /* past the text */
	};
	struct debuginfo_upload_result res;
	enum debuginfo_status st;
	struct err_msg msg;
	static struct got g;
	char reason[256];
	(void)state;

	t_write("kallsyms", map_text);
	t_write("bad.map", "ffffffff81000000 T _text\nnot a line\n");
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("bad.map"), kid, DEBUGINFO_FILE_KALLSYMS, &res, &msg),
			 ERR_INVALID);
	assert_non_null(strstr(msg.text, "line 2"));
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("kallsyms"), g_id, DEBUGINFO_FILE_KALLSYMS, &res, &msg),
			 ERR_CONFLICT);
	/* Before the map: not found, nothing resolved. */
	memset(&g, 0, sizeof(g));
	assert_int_equal(debuginfo_resolve(g_svc, kid, &map, req, 4, clock_mono_ns() + 1000000000,
					   on_frames, &g, &st, reason, sizeof(reason)),
			 0);
	assert_int_equal(st, DEBUGINFO_STATUS_NOT_FOUND);
	assert_int_equal(g.n_called, 0);
	err_clear(&msg);
	assert_int_equal(upload_file(t_path("kallsyms"), kid, DEBUGINFO_FILE_KALLSYMS, &res, &msg), 0);
	assert_int_equal(res.kinds, 1u << DEBUGINFO_FILE_KALLSYMS);
	memset(&g, 0, sizeof(g));
	assert_int_equal(debuginfo_resolve(g_svc, kid, &map, req, 4,
					   clock_mono_ns() + 60LL * 1000000000, on_frames, &g, &st,
					   reason, sizeof(reason)),
			 0);
	assert_int_equal(st, DEBUGINFO_STATUS_OK);
	assert_int_equal(g.n_called, 4);
	assert_string_equal(g.names[0], "__x64_vfs_write_last");
	assert_string_equal(g.names[1], "__x64_vfs_write_last");
	assert_string_equal(g.names[2], "do_syscall_64");
	assert_string_equal(g.names[3], "");
	assert_int_equal(g.lines[0], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_and_persist),
		cmocka_unit_test(test_executable_layout),
		cmocka_unit_test(test_statuses_and_budget),
		cmocka_unit_test(test_kernel_map),
	};

	return cmocka_run_group_tests(tests, svc_setup, svc_teardown);
}
