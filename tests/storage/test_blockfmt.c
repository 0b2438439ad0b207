/* test_blockfmt.c - the block codecs on their own: CRC-32C test vectors,
 * round trips of the footer, index and symbol sections, and every
 * truncation and a few thousand byte flips of each, which must give
 * ERR_CORRUPT or a decode whose every reference is in range, never a crash
 * (tests/fuzz/fuzz_block.c explores further). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "storage/storage_int.h"

static void test_crc32c(void **state)
{
	uint8_t z[32], f[32], r[1000];
	uint64_t s = 7;
	(void)state;

	memset(z, 0, sizeof(z));
	memset(f, 0xff, sizeof(f));
	/* RFC 3720, B.4. */
	assert_int_equal(store__crc32c(0, z, 32), 0x8A9136AA);
	assert_int_equal(store__crc32c(0, f, 32), 0x62A8AB43);
	assert_int_equal(store__crc32c(0, "123456789", 9), 0xE3069283);
	for (size_t i = 0; i < sizeof(r); i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		r[i] = (uint8_t)(s >> 56);
	}
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n + off <= sizeof(r); n += 37)
			assert_int_equal(store__crc32c(0, r + off, n), store__crc32c_soft(0, r + off, n));
	/* Continuation equals the whole. */
	assert_int_equal(store__crc32c(store__crc32c(0, r, 300), r + 300, 700),
			 store__crc32c(0, r, 1000));
}

/* ---- symbols ---------------------------------------------------------------------- */

static const char *strs[] = { "/lib/libc.so.6", "/usr/bin/app", "_ZN2ns1fEv", "abc123",
			      "main", "ns::f()", "src/main.c" };

static void sample_syms(struct bsyms *s, struct sym_string *str, struct sym_mapping *map,
			struct sym_function *fn, struct sym_location *loc,
			struct store_line *lines, struct sym_stack *stk)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 7; i++) {
		str[i].s = strs[i];
		str[i].len = (uint32_t)strlen(strs[i]);
	}
	map[0] = (struct sym_mapping){ 0x400000, 0x500000, 0x1000, 2, 4, 0 };
	map[1] = (struct sym_mapping){ 0x7f00, 0x7fff, 0, 1, 0, STORE_MAP_HAS_FUNCTIONS };
	fn[0] = (struct sym_function){ 5, 0, 7, 1 };
	fn[1] = (struct sym_function){ 6, 3, 7, -4 };
	lines[0] = (struct store_line){ 1, 10, 2 };
	lines[1] = (struct store_line){ 2, 20, 0 };
	lines[2] = (struct store_line){ 2, -3, 9 };
	loc[0] = (struct sym_location){ 0x1000, NULL, 1, 0 };
	loc[1] = (struct sym_location){ 0x1010, lines, 1, 2 };
	loc[2] = (struct sym_location){ 0x20, lines + 2, 2, 1 };
	loc[3] = (struct sym_location){ 0x5, NULL, 0, 0 };
	stk[0] = (struct sym_stack){ 0, 1 };
	stk[1] = (struct sym_stack){ 1, 2 };
	stk[2] = (struct sym_stack){ 2, 3 };
	stk[3] = (struct sym_stack){ 1, 4 };
	stk[4] = (struct sym_stack){ 0, 3 };
	s->str = str;
	s->map = map;
	s->fn = fn;
	s->loc = loc;
	s->stk = stk;
	s->n[SYM_STRING] = 7;
	s->n[SYM_MAPPING] = 2;
	s->n[SYM_FUNCTION] = 2;
	s->n[SYM_LOCATION] = 4;
	s->n[SYM_STACK] = 5;
}

/* Every reference of a decoded symbol table is in range. */
static void check_syms(const struct bsyms *s)
{
	for (uint32_t i = 0; i < s->n[SYM_MAPPING]; i++) {
		assert_true(s->map[i].filename <= s->n[SYM_STRING]);
		assert_true(s->map[i].build_id <= s->n[SYM_STRING]);
	}
	for (uint32_t i = 0; i < s->n[SYM_FUNCTION]; i++)
		assert_true(s->fn[i].name <= s->n[SYM_STRING]);
	for (uint32_t i = 0; i < s->n[SYM_LOCATION]; i++) {
		assert_true(s->loc[i].mapping_id <= s->n[SYM_MAPPING]);
		for (uint32_t j = 0; j < s->loc[i].n_lines; j++)
			assert_true(s->loc[i].lines[j].function_id <= s->n[SYM_FUNCTION]);
	}
	for (uint32_t i = 0; i < s->n[SYM_STACK]; i++) {
		assert_true(s->stk[i].parent <= i);
		assert_true(s->stk[i].location >= 1 && s->stk[i].location <= s->n[SYM_LOCATION]);
	}
}

static void test_syms_round_trip(void **state)
{
	struct sym_string str[7];
	struct sym_mapping map[2];
	struct sym_function fn[2];
	struct sym_location loc[4];
	struct store_line lines[3];
	struct sym_stack stk[5];
	struct bsyms in, out;
	struct buf b;
	(void)state;

	sample_syms(&in, str, map, fn, loc, lines, stk);
	buf_init(&b, 1 << 20);
	assert_int_equal(store__bsyms_encode(&in, &b), 0);
	assert_int_equal(store__bsyms_decode((const uint8_t *)b.data, b.len, &out, NULL), 0);
	for (int k = 1; k < SYM_NKINDS; k++)
		assert_int_equal(out.n[k], in.n[k]);
	for (int i = 0; i < 7; i++)
		assert_string_equal(out.str[i].s, strs[i]);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(out.map[i].start, map[i].start);
		assert_int_equal(out.map[i].limit, map[i].limit);
		assert_int_equal(out.map[i].offset, map[i].offset);
		assert_int_equal(out.map[i].filename, map[i].filename);
		assert_int_equal(out.map[i].build_id, map[i].build_id);
		assert_int_equal(out.map[i].flags, map[i].flags);
		assert_int_equal(out.fn[i].name, fn[i].name);
		assert_int_equal(out.fn[i].system_name, fn[i].system_name);
		assert_int_equal(out.fn[i].filename, fn[i].filename);
		assert_int_equal(out.fn[i].start_line, fn[i].start_line);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(out.loc[i].address, loc[i].address);
		assert_int_equal(out.loc[i].mapping_id, loc[i].mapping_id);
		assert_int_equal(out.loc[i].n_lines, loc[i].n_lines);
		for (uint32_t j = 0; j < loc[i].n_lines; j++) {
			assert_int_equal(out.loc[i].lines[j].function_id, loc[i].lines[j].function_id);
			assert_int_equal(out.loc[i].lines[j].line, loc[i].lines[j].line);
			assert_int_equal(out.loc[i].lines[j].column, loc[i].lines[j].column);
		}
	}
	assert_memory_equal(out.stk, stk, sizeof(stk));
	check_syms(&out);
	store__bsyms_release(&out);

	/* Every truncation fails cleanly. */
	for (size_t n = 0; n < b.len; n++) {
		struct err_msg msg = { { 0 } };
		assert_int_equal(store__bsyms_decode((const uint8_t *)b.data, n, &out, &msg), ERR_CORRUPT);
		assert_true(msg.text[0] != 0);
	}
	/* Flips: corrupt, or in range. */
	for (size_t i = 0; i < b.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			b.data[i] ^= (char)(1 << bit);
			if (store__bsyms_decode((const uint8_t *)b.data, b.len, &out, NULL) == 0) {
				check_syms(&out);
				store__bsyms_release(&out);
			}
			b.data[i] ^= (char)(1 << bit);
		}
	/* A stack whose parent is not before it, and a location of no mapping. */
	stk[2].parent = 3;
	buf_reset(&b);
	assert_int_equal(store__bsyms_encode(&in, &b), 0);
	assert_int_equal(store__bsyms_decode((const uint8_t *)b.data, b.len, &out, NULL), ERR_CORRUPT);
	stk[2].parent = 2;
	loc[3].mapping_id = 3;
	buf_reset(&b);
	assert_int_equal(store__bsyms_encode(&in, &b), 0);
	assert_int_equal(store__bsyms_decode((const uint8_t *)b.data, b.len, &out, NULL), ERR_CORRUPT);
	buf_release(&b);
}

/* ---- footer and index ---------------------------------------------------------------- */

struct sample_block {
	struct bmeta m;
	struct bsection sec[3];
	struct bservice svc[1];
	const char *bids[2];
	struct borigin orig[1];
	uint8_t src[1][BLOCK_ID_BYTES];
};

static void sample_meta(struct sample_block *sb)
{
	struct bmeta *m = &sb->m;

	memset(sb, 0, sizeof(*sb));
	memset(m->id, 0xab, BLOCK_ID_BYTES);
	m->tenant = "anonymous";
	m->level = 1;
	m->range_start = 3600000000000LL;
	m->range_end = 2 * 3600000000000LL;
	m->min_time = m->range_start + 5;
	m->max_time = m->range_end - 7;
	m->created_ns = 123;
	m->series = 2;
	m->profiles = 3;
	m->samples = 5;
	memset(sb->orig[0].store_id, 1, 16);
	sb->orig[0].window_ns = 600000000000LL;
	sb->orig[0].first = 6;
	sb->orig[0].last = 11;
	sb->orig[0].max_epoch = 4;
	m->origins = sb->orig;
	m->n_origins = 1;
	memset(sb->src[0], 2, BLOCK_ID_BYTES);
	m->sources = sb->src;
	m->n_sources = 1;
	sb->bids[0] = "00aa";
	sb->bids[1] = "ffee";
	m->build_ids = sb->bids;
	m->n_build_ids = 2;
	sb->svc[0].name = "api";
	sb->svc[0].section = 1;
	sb->svc[0].count[SYM_STACK] = 9;
	m->svc = sb->svc;
	m->n_svc = 1;
	sb->sec[0] = (struct bsection){ BSEC_SAMPLES, BCODEC_RAW, 16, 30, 30, 0x1234 };
	sb->sec[1] = (struct bsection){ BSEC_SYMBOLS, BCODEC_ZSTD, 46, 10, 99, 5 };
	sb->sec[2] = (struct bsection){ BSEC_INDEX, BCODEC_ZSTD, 56, 20, 80, 6 };
	m->sec = sb->sec;
	m->n_sec = 3;
}

#define FILE_SIZE 1000

static void test_footer(void **state)
{
	struct sample_block sb;
	struct bmeta out;
	struct buf b;
	uint8_t tail[BLOCK_TRAILER_BYTES];
	uint32_t len, crc;
	(void)state;

	sample_meta(&sb);
	buf_init(&b, 1 << 20);
	assert_int_equal(store__bmeta_encode(&sb.m, &b), 0);
	assert_int_equal(store__bmeta_decode((const uint8_t *)b.data, b.len, FILE_SIZE, &out, NULL), 0);
	assert_memory_equal(out.id, sb.m.id, BLOCK_ID_BYTES);
	assert_string_equal(out.tenant, "anonymous");
	assert_int_equal(out.level, 1);
	assert_int_equal(out.range_start, sb.m.range_start);
	assert_int_equal(out.range_end, sb.m.range_end);
	assert_int_equal(out.min_time, sb.m.min_time);
	assert_int_equal(out.max_time, sb.m.max_time);
	assert_int_equal(out.samples, 5);
	assert_int_equal(out.n_origins, 1);
	assert_int_equal(out.origins[0].last, 11);
	assert_int_equal(out.origins[0].max_epoch, 4);
	assert_int_equal(out.n_sources, 1);
	assert_int_equal(out.n_build_ids, 2);
	assert_string_equal(out.build_ids[1], "ffee");
	assert_string_equal(out.svc[0].name, "api");
	assert_int_equal(out.svc[0].count[SYM_STACK], 9);
	assert_int_equal(out.index_sec, 2);
	assert_int_equal(out.samples_sec, 0);
	assert_int_equal(out.sec[1].raw_len, 99);
	assert_int_equal(out.sec[0].crc, 0x1234);
	store__bmeta_release(&out);

	for (size_t n = 0; n < b.len; n++)
		assert_int_equal(store__bmeta_decode((const uint8_t *)b.data, n, FILE_SIZE, &out, NULL),
				 ERR_CORRUPT);
	for (size_t i = 0; i < b.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			b.data[i] ^= (char)(1 << bit);
			if (!store__bmeta_decode((const uint8_t *)b.data, b.len, FILE_SIZE, &out, NULL)) {
				assert_true(out.index_sec < out.n_sec && out.samples_sec < out.n_sec);
				for (size_t k = 0; k < out.n_sec; k++)
					assert_true(out.sec[k].off + out.sec[k].len <= FILE_SIZE);
				store__bmeta_release(&out);
			}
			b.data[i] ^= (char)(1 << bit);
		}
	/* Sections past the end of the file, overlapping, or two indexes. */
	assert_int_equal(store__bmeta_decode((const uint8_t *)b.data, b.len, 70, &out, NULL),
			 ERR_CORRUPT);
	sb.sec[1].off = 40;
	buf_reset(&b);
	assert_int_equal(store__bmeta_encode(&sb.m, &b), 0);
	assert_int_equal(store__bmeta_decode((const uint8_t *)b.data, b.len, FILE_SIZE, &out, NULL),
			 ERR_CORRUPT);
	sb.sec[1].off = 46;
	sb.sec[1].kind = BSEC_INDEX;
	buf_reset(&b);
	assert_int_equal(store__bmeta_encode(&sb.m, &b), 0);
	assert_int_equal(store__bmeta_decode((const uint8_t *)b.data, b.len, FILE_SIZE, &out, NULL),
			 ERR_CORRUPT);
	buf_release(&b);

	/* The trailer. */
	store__btrailer_put(tail, 100, 0xdeadbeef);
	assert_int_equal(store__btrailer_parse(tail, FILE_SIZE, &len, &crc, NULL), 0);
	assert_int_equal(len, 100);
	assert_int_equal(crc, 0xdeadbeef);
	assert_int_equal(store__btrailer_parse(tail, 100, &len, &crc, NULL), ERR_CORRUPT);
	assert_int_equal(store__btrailer_parse(tail, 20, &len, &crc, NULL), ERR_CORRUPT);
	tail[9] ^= 1;
	assert_int_equal(store__btrailer_parse(tail, FILE_SIZE, &len, &crc, NULL), ERR_CORRUPT);
	store__btrailer_put(tail, 0, 0);
	assert_int_equal(store__btrailer_parse(tail, FILE_SIZE, &len, &crc, NULL), ERR_CORRUPT);
}

static void test_index(void **state)
{
	static const char *s[] = { "__profile_type__", "api", "cpu", "pod", "service_name", "x", "y" };
	uint32_t lens[7];
	struct bser ser[2] = { { 0, 0, 3, 0, 2 }, { 0, 3, 3, 2, 1 } };
	/* labels: type=cpu, pod=x|y, service_name=api */
	uint32_t labels[12] = { 0, 2, 3, 5, 4, 1, 0, 2, 3, 6, 4, 1 };
	struct bpage pages[3] = {
		{ 3600000000005LL, 3600000000010LL, 0, 10, 1, 1, 2 },
		{ 3600000000100LL, 3600000000100LL, 10, 10, 2, 1, 2 },
		{ 3600000000020LL, 2 * 3600000000000LL - 7, 20, 10, 3, 1, 1 },
	};
	struct bpost_name pn[3] = { { 0, 0, 1 }, { 3, 1, 2 }, { 4, 3, 1 } };
	struct bpost_val pv[4] = { { 2, 0, 2 }, { 5, 2, 1 }, { 6, 3, 1 }, { 1, 4, 2 } };
	uint32_t plist[6] = { 0, 1, 0, 1, 0, 1 };
	struct sample_block sb;
	struct bindex x, out;
	struct buf b;
	(void)state;

	sample_meta(&sb);
	for (int i = 0; i < 7; i++)
		lens[i] = (uint32_t)strlen(s[i]);
	memset(&x, 0, sizeof(x));
	x.n_str = 7;
	x.str = s;
	x.str_len = lens;
	x.n_series = 2;
	x.series = ser;
	x.labels = labels;
	x.n_pages = 3;
	x.pages = pages;
	x.n_pnames = 3;
	x.pnames = pn;
	x.pvals = pv;
	x.plist = plist;
	buf_init(&b, 1 << 20);
	assert_int_equal(store__bindex_encode(&x, sb.m.range_start, &b), 0);
	assert_int_equal(store__bindex_decode((const uint8_t *)b.data, b.len, &sb.m, &out, NULL), 0);
	assert_int_equal(out.n_series, 2);
	assert_int_equal(out.series[1].page0, 2);
	assert_int_equal(out.pages[1].off, 10);
	assert_int_equal(out.pages[2].min_time, pages[2].min_time);
	assert_int_equal(out.pages[2].crc, 3);
	assert_string_equal(out.str[out.labels[3]], "x");
	assert_int_equal(out.pvals[1].value, 5);
	assert_int_equal(out.plist[out.pvals[3].list0 + 1], 1);
	store__bindex_release(&out);
	for (size_t n = 0; n < b.len; n++)
		assert_int_equal(store__bindex_decode((const uint8_t *)b.data, n, &sb.m, &out, NULL),
				 ERR_CORRUPT);
	for (size_t i = 0; i < b.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			b.data[i] ^= (char)(1 << bit);
			if (!store__bindex_decode((const uint8_t *)b.data, b.len, &sb.m, &out, NULL)) {
				for (uint32_t k = 0; k < out.n_series; k++) {
					assert_true(out.series[k].svc < sb.m.n_svc);
					assert_true(out.series[k].page0 + out.series[k].n_pages <= out.n_pages);
				}
				for (uint32_t k = 0; k < out.n_pages; k++)
					assert_true(out.pages[k].off + out.pages[k].len <= 30);
				store__bindex_release(&out);
			}
			b.data[i] ^= (char)(1 << bit);
		}
	/* Counts that disagree with the footer. */
	sb.m.samples = 6;
	assert_int_equal(store__bindex_decode((const uint8_t *)b.data, b.len, &sb.m, &out, NULL),
			 ERR_CORRUPT);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_syms_round_trip),
		cmocka_unit_test(test_footer),
		cmocka_unit_test(test_index),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
