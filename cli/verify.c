/*
 * verify.c - `unhex verify --data DIR`: checks every file of a store: the
 * write-ahead log (opening refuses a damaged one), every block of every SST
 * file of the head against its checksum, every block file (every checksum,
 * every section and page decoded, every reference followed) and every debug
 * file against its SHA-256, and reports what is corrupt or missing.  The
 * store is opened read-only, so it can run next to a server using the
 * directory.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "cli.h"
#include "debuginfo/debuginfo.h"
#include "storage/storage.h"

static void verify_help(FILE *f)
{
	fputs("usage: unhex verify --data DIR [--quiet]\n"
	      "\n"
	      "Checks every file of the store in DIR: the write-ahead log (a damaged one\n"
	      "is named, see `unhex recover`), every block of every SST file of the head\n"
	      "against its checksum, every block file (the checksum of every byte, the\n"
	      "decoding of every section and page, every reference from samples into\n"
	      "symbols) and every debug file against its SHA-256.  Prints one line per\n"
	      "column family, block and debug file (--quiet: only the bad ones) and exits\n"
	      "1 when anything is corrupt or missing.\n",
	      f);
}

struct vctx {
	int quiet;
	size_t ok, bad;            /* blocks */
	size_t head_ok, head_bad;  /* column families */
	size_t files_ok, files_bad; /* debug files */
};

/*
 * Counts one checked item, good or bad as `error` says (NULL: good);
 * returns whether its line is printed (a bad one, or without --quiet)
 * after the "ok " or "BAD" that starts it.
 */
static int tally(const struct vctx *v, const char *error, size_t *ok, size_t *bad)
{
	++*(error ? bad : ok);
	if (error || !v->quiet) {
		fputs(error ? "BAD" : "ok ", stdout);
		return 1;
	}
	return 0;
}

/* Ends a line tally() started, with its error. */
static void end_line(const char *error)
{
	if (error)
		printf(": %s", error);
	putchar('\n');
}

static int on_family(void *ctx, const struct store_head_check *c)
{
	struct vctx *v = ctx;

	if (tally(v, c->error, &v->head_ok, &v->head_bad)) {
		printf(" head/%s: %llu SST files, %llu bytes, %llu keys", c->family,
		       (unsigned long long)c->files, (unsigned long long)c->bytes,
		       (unsigned long long)c->keys);
		end_line(c->error);
	}
	return 0;
}

static int on_debug_file(void *ctx, const struct debuginfo_file_check *c)
{
	struct vctx *v = ctx;

	if (tally(v, c->error, &v->files_ok, &v->files_bad)) {
		printf(" debuginfo/%s: %s, %llu bytes%s", c->build_id, c->path,
		       (unsigned long long)c->size, c->checked ? "" : " (no SHA-256 recorded)");
		end_line(c->error);
	}
	return 0;
}

static int on_block(void *ctx, const struct store_block_info *b)
{
	struct vctx *v = ctx;

	if (tally(v, b->error, &v->ok, &v->bad)) {
		printf(" %s/%s level %u", b->tenant, b->id, b->level);
		if (b->range_end != INT64_MAX)
			printf(" [%lld, %lld) %llu profiles %llu bytes", (long long)b->range_start,
			       (long long)b->range_end, (unsigned long long)b->profiles,
			       (unsigned long long)b->bytes);
		end_line(b->error);
	}
	return 0;
}

enum { O_DATA = 256, O_QUIET, O_HELP };

static const struct option verify_opts[] = {
	{ "data", required_argument, NULL, O_DATA },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

int cli_verify(int argc, char **argv)
{
	struct store_options so = { 0 };
	struct store *st = NULL;
	struct vctx v;
	struct err_msg msg;
	const char *data = NULL;
	int c, rc;

	memset(&v, 0, sizeof(v));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", verify_opts, NULL)) != -1) {
		switch (c) {
		case O_DATA: data = optarg; break;
		case O_QUIET: v.quiet = 1; break;
		case O_HELP: verify_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("verify", argv);
		}
	}
	if (optind < argc)
		return cli_extra_argument("verify", argv);
	if (!data)
		return cli_usage_error("verify", "--data DIR is required");
	err_clear(&msg);
	so.dir = data;
	so.read_only = 1;
	if (store_open(&so, &st, &msg)) {
		fprintf(stderr, "unhex verify: cannot open %s: %s\n", data, msg.text);
		return CLI_EXIT_FAIL;
	}
	rc = store_verify_head(st, on_family, &v, &msg);
	if (!rc || rc == ERR_CORRUPT) {
		err_clear(&msg);
		rc = store_verify(st, on_block, &v, &msg);
	}
	if (!rc || rc == ERR_CORRUPT) {
		err_clear(&msg);
		rc = debuginfo_verify_files(st, data, on_debug_file, &v, &msg);
	}
	store_close(st);
	if (rc && rc != ERR_CORRUPT) {
		fprintf(stderr, "unhex verify: %s\n", msg.text[0] ? msg.text : err_str(rc));
		return CLI_EXIT_FAIL;
	}
	printf("head: %zu column families ok, %zu corrupt; %zu blocks: %zu ok, %zu corrupt or "
	       "missing; %zu debug files: %zu ok, %zu damaged or missing\n",
	       v.head_ok, v.head_bad, v.ok + v.bad, v.ok, v.bad, v.files_ok + v.files_bad,
	       v.files_ok, v.files_bad);
	return v.bad || v.head_bad || v.files_bad ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
