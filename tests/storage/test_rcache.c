/* test_rcache.c - blocks read from a bucket (the directory backend of
 * objstore/) after their files were removed: a reader fetches only the
 * index, the symbols of the services it selects and the pages in its
 * range, answers byte for byte as the local files did, reads nothing
 * again when warm, keeps what it pinned readable when the bucket goes
 * away, and a bucket that fails makes the readers skip the block with a
 * warning and the calls without a reader leave it out, never fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockgen.h"
#include "helpers.h"
#include "objstore/objstore.h"
#include "storage/storage_int.h"

static int64_t fake_now;

static struct store *open_with(const char *dir, struct objstore *os, uint64_t cap,
			       size_t sym_cache)
{
	struct store_options o = gen_options(dir, &fake_now);

	o.objstore = os;
	o.objstore_cache_bytes = cap;
	o.symbol_cache_bytes = sym_cache;
	return open_options(&o);
}

/* The dump of tenant "t" over [from, until) is `want`, without a warning. */
static void expect_dump(struct store *st, int64_t from, int64_t until, const char *want)
{
	size_t warn = 1;
	char *got = gen_dump(st, "t", from, until, NULL, &warn);

	assert_non_null(got);
	assert_int_equal(warn, 0);
	assert_string_equal(got, want);
	free(got);
}

/* Profiles of 4 services x 3 pods every 30 s over [t0, t0 + span). */
static void fill(struct store *st, int64_t t0, int64_t span)
{
	static const char *svcs[4] = { "api", "db", "queue", "web" }, *pods[3] = { "p0", "p1", "p2" };

	for (int64_t t = t0; t < t0 + span; t += 30 * SEC)
		for (int s = 0; s < 4; s++)
			for (int p = 0; p < 3; p++)
				assert_int_equal(gen_profile(st, "t", svcs[s], pods[p], t + p * SEC, 1 + s % 2,
							     (uint64_t)(t / SEC) + (uint64_t)s * 7 + (uint64_t)p),
						 0);
}

/* Bytes of the block files of tenant t in dir. */
static uint64_t block_bytes(const char *dir, int remove_them)
{
	char path[4096];
	struct dirent *de;
	struct stat sb;
	uint64_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/blocks/t", dir);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d))) {
		char f[8192];
		if (!strstr(de->d_name, ".blk"))
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
		assert_int_equal(stat(f, &sb), 0);
		n += (uint64_t)sb.st_size;
		if (remove_them)
			assert_int_equal(unlink(f), 0);
	}
	closedir(d);
	return n;
}

static uint64_t fetched(const struct store_bucket_reads *r, int kind)
{
	return r->kind[kind].bytes;
}

static uint64_t fetched_all(const struct store_bucket_reads *r)
{
	uint64_t n = 0;

	for (int k = 0; k < RKIND_N; k++)
		n += r->kind[k].bytes;
	return n;
}

/* One service's profiles through the calls without a reader, dumped. */
static char *dump_plain(struct store *st, const char *svc, int64_t from, int64_t until)
{
	struct gen_series s;
	struct gen_dump d;

	memset(&s, 0, sizeof(s));
	memset(&d, 0, sizeof(d));
	d.st = st;
	d.tenant = "t";
	assert_int_equal(store_series_with(st, "t", "service_name", svc, gen_series_cb, &s), 0);
	for (size_t i = 0; i < s.n; i++) {
		d.labels = s.labels[i];
		assert_int_equal(store_profiles_each(st, "t", s.id[i], from, until, gen_profile_cb, &d,
						     NULL),
				 0);
		free(s.labels[i]);
	}
	gen_views_release(&d.gv);
	assert_int_equal(d.rc, 0);
	return gen_dump_join(&d);
}

struct fixture {
	char *dir, *bucket;
	struct objstore *os;
	char *all, *part, *plain, *dbpart; /* answers from the local files */
	uint64_t bytes;           /* of the block files */
};

#define FROM (T0 - RANGE)
#define UNTIL (T0 + 10 * RANGE)
#define PFROM (T0 + RANGE + 90 * SEC)
#define PUNTIL (T0 + 2 * RANGE)

/* Seals and compacts 6 ranges into blocks, uploads them, notes the local answers, removes the files. */
static void setup(struct fixture *f)
{
	struct store_maint_stats ms;
	struct store *st;
	size_t series = 0, warn = 1;

	memset(f, 0, sizeof(*f));
	f->dir = tmpdir_new();
	f->bucket = tmpdir_new();
	assert_int_equal(objstore_open_dir(f->bucket, &f->os, NULL), 0);
	fake_now = T0 + 100 * RANGE;
	st = open_with(f->dir, f->os, 0, 0);
	assert_non_null(st);
	fill(st, T0, 6 * RANGE);
	memset(&ms, 0, sizeof(ms));
	assert_int_equal(store_maintain(st, STORE_MAINT_SEAL_ALL, &ms, NULL), 0);
	assert_int_equal(store_maintain(st, STORE_MAINT_COMPACT_ALL, &ms, NULL), 0);
	assert_int_equal(store_maintain(st, 0, &ms, NULL), 0);
	assert_true(ms.uploaded_blocks >= 1);
	assert_int_equal(ms.upload_failures, 0);
	f->all = gen_dump(st, "t", FROM, UNTIL, &series, &warn);
	assert_non_null(f->all);
	assert_int_equal(series, 12);
	assert_int_equal(warn, 0);
	f->part = gen_dump(st, "t", PFROM, PUNTIL, NULL, NULL);
	assert_true(f->part && strlen(f->part) > 0 && strlen(f->part) < strlen(f->all));
	f->plain = dump_plain(st, "db", FROM, UNTIL);
	assert_true(strlen(f->plain) > 0);
	f->dbpart = dump_plain(st, "db", PFROM, PUNTIL);
	assert_true(strlen(f->dbpart) > 0 && strlen(f->dbpart) < strlen(f->plain));
	store_close(st);
	f->bytes = block_bytes(f->dir, 1);
	assert_true(f->bytes > 0);
}

static void teardown(struct fixture *f)
{
	objstore_close(f->os);
	tmpdir_free(f->dir);
	tmpdir_free(f->bucket);
	free(f->all);
	free(f->part);
	free(f->plain);
	free(f->dbpart);
}

static int verify_cb(void *ctx, const struct store_block_info *b)
{
	(void)ctx;
	return b->error ? 1 : 0;
}

/* A part of the range, then all of it, then again: same answers, only what is needed fetched. */
static void test_sections_from_the_bucket(void **state)
{
	struct store_bucket_reads r0, r1, r2, r3;
	struct fixture f;
	struct store *st;
	char *got;
	(void)state;

	setup(&f);
	st = open_with(f.dir, f.os, 0, 0);
	assert_non_null(st);
	store_bucket_reads(st, &r0);
	assert_true(fetched(&r0, RKIND_FOOTER) > 0);
	assert_int_equal(fetched_all(&r0), fetched(&r0, RKIND_FOOTER));

	/* One service over part of the block's range: its index, that
	 * service's symbols and the pages in range, not the rest. */
	got = dump_plain(st, "db", PFROM, PUNTIL);
	assert_string_equal(got, f.dbpart);
	free(got);
	store_bucket_reads(st, &r1);
	for (int k = 0; k < RKIND_N; k++)
		fprintf(stderr, "db, part of the range: %s: %llu GETs, %llu bytes (%llu asked for), "
			"blocks %llu bytes\n", r1.kind[k].name, (unsigned long long)r1.kind[k].gets,
			(unsigned long long)r1.kind[k].bytes, (unsigned long long)r1.kind[k].needed_bytes,
			(unsigned long long)f.bytes);
	assert_true(fetched(&r1, RKIND_INDEX) > 0);
	assert_int_equal(r1.kind[RKIND_SYMBOLS].gets, 1);
	assert_true(fetched(&r1, RKIND_PAGES) > 0);
	assert_int_equal(fetched(&r1, RKIND_WHOLE), 0);
	assert_true(fetched_all(&r1) - fetched(&r1, RKIND_FOOTER) < f.bytes / 2);
	for (int k = RKIND_INDEX; k <= RKIND_PAGES; k++) /* the target: < 2x what is needed */
		assert_true(r1.kind[k].bytes <= 2 * r1.kind[k].needed_bytes);

	/* Every service, part of the range, through a reader. */
	expect_dump(st, PFROM, PUNTIL, f.part);
	store_bucket_reads(st, &r1);
	assert_true(r1.kind[RKIND_SYMBOLS].gets >= 2 && r1.kind[RKIND_SYMBOLS].needed_bytes > 36000 * 3);
	for (int k = RKIND_INDEX; k <= RKIND_PAGES; k++)
		assert_true(r1.kind[k].bytes <= 2 * r1.kind[k].needed_bytes);

	/* All of it: byte for byte the local answer. */
	expect_dump(st, FROM, UNTIL, f.all);
	store_bucket_reads(st, &r2);
	assert_int_equal(fetched(&r2, RKIND_WHOLE), 0);
	assert_true(fetched(&r2, RKIND_PAGES) > fetched(&r1, RKIND_PAGES));
	assert_true(r2.cached_bytes > 0 && r2.cached_bytes <= r2.cap_bytes);

	/* Warm: nothing more from the bucket. */
	expect_dump(st, FROM, UNTIL, f.all);
	got = dump_plain(st, "db", FROM, UNTIL);
	assert_string_equal(got, f.plain);
	free(got);
	store_bucket_reads(st, &r3);
	assert_int_equal(fetched_all(&r3), fetched_all(&r2));
	assert_true(r3.hits > r2.hits);
	assert_int_equal(r3.failures, 0);

	/* verify reads everything: the whole object, once. */
	assert_int_equal(store_verify(st, verify_cb, NULL, NULL), 0);
	store_bucket_reads(st, &r3);
	assert_int_equal(fetched(&r3, RKIND_WHOLE), f.bytes);
	assert_int_equal(store_verify(st, verify_cb, NULL, NULL), 0);
	store_bucket_reads(st, &r2);
	assert_int_equal(fetched(&r2, RKIND_WHOLE), f.bytes);
	store_close(st);
	teardown(&f);
}

/* A cache of half the blocks' total: entries are evicted, answers stay exact. */
static void test_small_cache(void **state)
{
	struct store_bucket_reads r;
	struct fixture f;
	struct store *st;
	char *got;
	(void)state;

	setup(&f);
	st = open_with(f.dir, f.os, f.bytes / 2, 1);
	assert_non_null(st);
	for (int i = 0; i < 2; i++) {
		static const char *svcs[4] = { "api", "db", "queue", "web" };
		for (int k = 0; k < 4; k++)
			free(dump_plain(st, svcs[k], FROM, UNTIL));
		got = dump_plain(st, "db", FROM, UNTIL);
		assert_string_equal(got, f.plain);
		free(got);
	}
	store_bucket_reads(st, &r);
	assert_true(r.cached_bytes <= f.bytes / 2);
	assert_true(r.evictions > 0);
	store_close(st);
	teardown(&f);
}

struct parts {
	uint32_t v[64];
	size_t n;
};

static int note_part(void *ctx, const struct store_profile_view *p)
{
	struct parts *ps = ctx;

	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i] == p->part)
			return 0;
	if (ps->n < 64)
		ps->v[ps->n++] = p->part;
	return 0;
}

static int first_series(void *ctx, uint64_t id, uint32_t part, const struct store_label *l,
			size_t n)
{
	(void)part, (void)l, (void)n;
	*(uint64_t *)ctx = id;
	return 1;
}

/* The bucket gone: what a reader pinned stays readable; the rest is skipped with warnings. */
static void test_bucket_fails(void **state)
{
	struct store_reader *rd = NULL;
	struct store_symbols *sym = NULL;
	struct store_bucket_reads r;
	struct parts ps = { { 0 }, 0 };
	struct fixture f;
	struct store *st;
	uint64_t sid = 0;
	char moved[4200];
	char *got;
	size_t warn = 0;
	(void)state;

	setup(&f);
	snprintf(moved, sizeof(moved), "%s.away", f.bucket);
	/* A memory cache of one byte: decoded symbols leave it at once. */
	st = open_with(f.dir, f.os, 0, 1);
	assert_non_null(st);
	assert_int_equal(store_reader_open(st, "t", FROM, UNTIL, &rd, NULL), 0);
	assert_int_equal(store_reader_series_with(rd, "service_name", "api", first_series, &sid), 1);
	assert_true(sid > 0);
	assert_int_equal(store_reader_profiles_each(rd, sid, FROM, UNTIL, note_part, &ps, NULL), 0);
	assert_true(ps.n > 0);
	assert_int_equal(rename(f.bucket, moved), 0);
	/* The symbols are read again from the pieces the reader pinned. */
	for (size_t i = 0; i < ps.n; i++) {
		assert_int_equal(store_symbols_get(st, "t", ps.v[i], &sym, NULL), 0);
		assert_true(store_symbols_stack_count(sym) > 0);
		store_symbols_put(sym);
	}
	assert_int_equal(store_reader_warning_count(rd), 0);
	store_reader_close(rd);

	/* Everything else is skipped: warnings, never an error. */
	got = gen_dump(st, "t", FROM, UNTIL, NULL, &warn);
	assert_non_null(got);
	assert_true(warn > 0);
	assert_true(strlen(got) < strlen(f.all));
	free(got);
	got = dump_plain(st, "web", FROM, UNTIL);
	free(got);
	store_bucket_reads(st, &r);
	assert_true(r.failures > 0);
	assert_int_equal(rename(moved, f.bucket), 0);
	/* Back: the next query reads everything again. */
	expect_dump(st, FROM, UNTIL, f.all);
	store_close(st);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sections_from_the_bucket),
		cmocka_unit_test(test_small_cache),
		cmocka_unit_test(test_bucket_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
