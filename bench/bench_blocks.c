/*
 * bench_blocks.c - bench-blocks: what blocks cost and save on a workload
 * directory written by unhex-workload.
 *
 *   bench-blocks --manifest DIR [--data DIR] [--tenant T] [--block-range SECONDS]
 *
 * Ingests every file in process on one thread into a fresh store, then
 * measures, in order:
 *   1. the head alone, flushed and fully compacted by RocksDB: today's
 *      layout (one key per symbol record), the baseline;
 *   2. sealing everything into level-0 blocks (store_maintain SEAL_ALL);
 *   3. compacting them (COMPACT_ALL);
 * after each: bytes on disk (RocksDB directory + block files) against the
 * gzipped input, and for the blocks the bytes of each kind of section and
 * the bytes per stack trie node and per location: each service's symbols
 * re-encoded with only their stack columns, and only their location (and
 * line) columns, compressed at the block's level.  The peak RSS is that of
 * the whole run (the workload is held in memory).  Last, one `key=value`
 * line per result for scripts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/compress.h"
#include "base/err.h"
#include "ingest/ingest.h"
#include "storage/storage_int.h"
#include "workload_files.h"

/* ---- what the blocks hold ------------------------------------------------------ */

struct sizes {
	uint64_t blocks, bytes, index, symbols, samples, footers;
	uint64_t stacks, locations, functions, strings;
	uint64_t stack_bytes, location_bytes; /* re-encoded alone, compressed */
};

/* The stack columns alone, then the location columns alone, compressed. */
static void split_bytes(const struct bsyms *s, int level, struct sizes *z)
{
	struct bsyms part;
	struct buf raw, c;

	buf_init(&raw, BLOCK_MAX_SECTION_RAW);
	buf_init(&c, BLOCK_MAX_SECTION_RAW);
	memset(&part, 0, sizeof(part));
	part.stk = s->stk;
	part.n[SYM_STACK] = s->n[SYM_STACK];
	if (!store__bsyms_encode(&part, &raw) && !zstd_compress_buf(raw.data, raw.len, level, &c))
		z->stack_bytes += c.len;
	memset(&part, 0, sizeof(part));
	part.loc = s->loc;
	part.n[SYM_LOCATION] = s->n[SYM_LOCATION];
	buf_reset(&raw);
	buf_reset(&c);
	if (!store__bsyms_encode(&part, &raw) && !zstd_compress_buf(raw.data, raw.len, level, &c))
		z->location_bytes += c.len;
	buf_release(&raw);
	buf_release(&c);
}

static int measure(struct store *st, const char *tenant, struct sizes *z)
{
	struct tenant *t = store__tenant_find(st, tenant);
	struct buf raw;
	int rc = 0;

	memset(z, 0, sizeof(*z));
	if (!t)
		return 0;
	buf_init(&raw, BLOCK_MAX_SECTION_RAW);
	for (size_t i = 0; !rc && i < t->n_blocks; i++) {
		struct block *b = t->blocks[i];
		int level = b->m.level ? BLOCK_ZLEVEL_COMPACT : BLOCK_ZLEVEL_SEAL;
		int fd;

		z->blocks++;
		z->bytes += b->file_size;
		z->footers += b->file_size;
		for (size_t k = 0; k < b->m.n_sec; k++) {
			const struct bsection *s = &b->m.sec[k];
			z->footers -= s->len;
			if (s->kind == BSEC_INDEX)
				z->index += s->len;
			else if (s->kind == BSEC_SYMBOLS)
				z->symbols += s->len;
			else
				z->samples += s->len;
		}
		fd = store__block_open_fd(b, NULL);
		if (fd < 0)
			return fd;
		for (size_t k = 0; !rc && k < b->m.n_svc; k++) {
			struct bsyms s;
			buf_reset(&raw);
			rc = store__block_section(b, fd, &b->m.sec[b->m.svc[k].section], &raw, NULL);
			if (!rc)
				rc = store__bsyms_decode((const uint8_t *)raw.data, raw.len, &s, NULL);
			if (rc)
				break;
			z->stacks += s.n[SYM_STACK];
			z->locations += s.n[SYM_LOCATION];
			z->functions += s.n[SYM_FUNCTION];
			z->strings += s.n[SYM_STRING];
			split_bytes(&s, level, z);
			store__bsyms_release(&s);
		}
		close(fd);
	}
	buf_release(&raw);
	return rc;
}

static void print_sizes(const char *what, const struct sizes *z, uint64_t head, uint64_t gz)
{
	printf("%s: %" PRIu64 " blocks, %" PRIu64 " bytes (index %" PRIu64 ", symbols %" PRIu64
	       ", samples %" PRIu64 ", footers %" PRIu64 "); head %" PRIu64 " bytes; total %.2f %% of gz\n",
	       what, z->blocks, z->bytes, z->index, z->symbols, z->samples, z->footers, head,
	       100.0 * (double)(z->bytes + head) / (double)gz);
	printf("  %" PRIu64 " stack nodes at %.2f B, %" PRIu64 " locations at %.2f B, %" PRIu64
	       " functions, %" PRIu64 " strings\n",
	       z->stacks, z->stacks ? (double)z->stack_bytes / (double)z->stacks : 0, z->locations,
	       z->locations ? (double)z->location_bytes / (double)z->locations : 0, z->functions,
	       z->strings);
}

static void kv_sizes(const char *p, const struct sizes *z, uint64_t head)
{
	printf("%s_blocks=%" PRIu64 " %s_block_bytes=%" PRIu64 " %s_head_bytes=%" PRIu64
	       " %s_symbol_bytes=%" PRIu64 " %s_sample_bytes=%" PRIu64 " %s_index_bytes=%" PRIu64
	       " %s_stacks=%" PRIu64 " %s_stack_bytes=%" PRIu64 " %s_locations=%" PRIu64
	       " %s_location_bytes=%" PRIu64,
	       p, z->blocks, p, z->bytes, p, head, p, z->symbols, p, z->samples, p, z->index, p,
	       z->stacks, p, z->stack_bytes, p, z->locations, p, z->location_bytes);
}

int main(int argc, char **argv)
{
	const char *manifest = NULL, *data = NULL, *tenant = "anonymous";
	char tmpl[] = "/tmp/unhex-bench-blocks.XXXXXX", rocks[4096];
	struct bench_workload w = { 0 };
	struct store_options so = { 0 };
	struct ingest_limits lim;
	struct store *st = NULL;
	struct err_msg msg = { "" };
	struct sizes l0, l1;
	uint64_t head0, head1, head2, pprof_samples = 0;
	double ingest_s, seal_s, compact_s;
	int64_t t0, range = 3600;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--manifest") && i + 1 < argc)
			manifest = argv[++i];
		else if (!strcmp(argv[i], "--data") && i + 1 < argc)
			data = argv[++i];
		else if (!strcmp(argv[i], "--tenant") && i + 1 < argc)
			tenant = argv[++i];
		else if (!strcmp(argv[i], "--block-range") && i + 1 < argc)
			range = strtoll(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: bench-blocks --manifest DIR [--data DIR] [--tenant T] "
					"[--block-range SECONDS]\n");
			return 2;
		}
	}
	if (!manifest || range <= 0)
		return 2;
	if (!data) {
		data = mkdtemp(tmpl);
		if (!data)
			return 1;
	}
	if ((rc = bench_workload_load(manifest, &w, &msg))) {
		fprintf(stderr, "bench-blocks: %s\n", msg.text);
		bench_workload_release(&w);
		return 1;
	}
	so.dir = data;
	so.block_range_ns = range * 1000000000LL;
	ingest_limits_default(&lim);
	if ((rc = store_open(&so, &st, &msg))) {
		fprintf(stderr, "bench-blocks: %s\n", msg.text);
		return 1;
	}
	t0 = clock_mono_ns();
	for (size_t i = 0; i < w.n && !rc; i++) {
		struct ingest_stats is = { 0 };
		int64_t from = w.e[i].unix_s * 1000000000;
		rc = ingest_legacy(st, &lim, tenant, w.e[i].name, from, from + 10000000000LL,
				   w.e[i].data, w.e[i].len, &is, &msg);
		pprof_samples += is.pprof_samples;
	}
	ingest_s = (double)(clock_mono_ns() - t0) / 1e9;
	if (!rc)
		rc = store_compact(st, &msg);
	snprintf(rocks, sizeof(rocks), "%s", data);
	head0 = bench_dir_bytes(rocks);
	printf("input: %zu files, %" PRIu64 " gzipped bytes, %" PRIu64 " pprof samples; ingest %.2f s\n",
	       w.n, w.bytes, pprof_samples, ingest_s);
	printf("head only, RocksDB compacted (today's layout): %" PRIu64 " bytes = %.2f %% of gz\n",
	       head0, 100.0 * (double)head0 / (double)w.bytes);
	t0 = clock_mono_ns();
	if (!rc)
		rc = store_maintain(st, STORE_MAINT_SEAL_ALL, NULL, &msg);
	seal_s = (double)(clock_mono_ns() - t0) / 1e9;
	if (!rc)
		rc = store_compact(st, &msg);
	if (!rc)
		rc = measure(st, tenant, &l0);
	head1 = bench_dir_bytes(data) - l0.bytes;
	if (!rc)
		print_sizes("sealed (level 0)", &l0, head1, w.bytes);
	t0 = clock_mono_ns();
	if (!rc)
		rc = store_maintain(st, STORE_MAINT_COMPACT_ALL, NULL, &msg);
	compact_s = (double)(clock_mono_ns() - t0) / 1e9;
	if (!rc)
		rc = measure(st, tenant, &l1);
	head2 = bench_dir_bytes(data) - l1.bytes;
	if (!rc)
		print_sizes("compacted", &l1, head2, w.bytes);
	if (rc) {
		fprintf(stderr, "bench-blocks: %s\n", msg.text[0] ? msg.text : err_str(rc));
		store_close(st);
		return 1;
	}
	printf("seal %.2f s, compaction %.2f s, peak RSS %ld KiB\n", seal_s, compact_s,
	       bench_rss_kib("VmHWM:"));
	printf("RESULT gz_bytes=%" PRIu64 " pprof_samples=%" PRIu64 " head_only_bytes=%" PRIu64 " ",
	       w.bytes, pprof_samples, head0);
	kv_sizes("l0", &l0, head1);
	putchar(' ');
	kv_sizes("l1", &l1, head2);
	printf(" seal_s=%.3f compact_s=%.3f ingest_s=%.3f\n", seal_s, compact_s, ingest_s);
	store_close(st);
	bench_workload_release(&w);
	return 0;
}
