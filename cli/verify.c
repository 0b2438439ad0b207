/*
 * verify.c - `unhex verify --data DIR`: checks every block of a store (every
 * checksum, every section and page decoded, every reference followed) and
 * reports the corrupt and missing ones.  The store is opened read-only, so
 * it can run next to a server using the directory.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "cli.h"
#include "storage/storage.h"

static void verify_help(FILE *f)
{
	fputs("usage: unhex verify --data DIR [--quiet]\n"
	      "\n"
	      "Checks every block of the store in DIR: the checksum of every byte, the\n"
	      "decoding of every section and page, and every reference (the stack ids of\n"
	      "the samples into their service's symbols, ids within the symbols).  Prints\n"
	      "one line per block (--quiet: only the bad ones) and exits 1 when a block is\n"
	      "corrupt or missing.  Queries skip such blocks and say so; the rest of the\n"
	      "store stays readable and writable.\n",
	      f);
}

struct vctx {
	int quiet;
	size_t ok, bad;
};

static int on_block(void *ctx, const struct store_block_info *b)
{
	struct vctx *v = ctx;

	if (b->error)
		v->bad++;
	else
		v->ok++;
	if (b->error || !v->quiet) {
		printf("%s %s/%s level %u", b->error ? "BAD" : "ok ", b->tenant, b->id, b->level);
		if (b->range_end != INT64_MAX)
			printf(" [%lld, %lld) %llu profiles %llu bytes", (long long)b->range_start,
			       (long long)b->range_end, (unsigned long long)b->profiles,
			       (unsigned long long)b->bytes);
		if (b->error)
			printf(": %s", b->error);
		putchar('\n');
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
	struct vctx v = { 0, 0, 0 };
	struct err_msg msg;
	const char *data = NULL;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", verify_opts, NULL)) != -1) {
		switch (c) {
		case O_DATA: data = optarg; break;
		case O_QUIET: v.quiet = 1; break;
		case O_HELP: verify_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_usage_error("verify", "unknown or incomplete option \"%s\"",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("verify", "unexpected argument \"%s\"", argv[optind]);
	if (!data)
		return cli_usage_error("verify", "--data DIR is required");
	err_clear(&msg);
	so.dir = data;
	so.read_only = 1;
	if (store_open(&so, &st, &msg)) {
		fprintf(stderr, "unhex verify: cannot open %s: %s\n", data, msg.text);
		return CLI_EXIT_FAIL;
	}
	rc = store_verify(st, on_block, &v, &msg);
	store_close(st);
	if (rc && rc != ERR_CORRUPT) {
		fprintf(stderr, "unhex verify: %s\n", msg.text[0] ? msg.text : err_str(rc));
		return CLI_EXIT_FAIL;
	}
	printf("%zu blocks: %zu ok, %zu corrupt or missing\n", v.ok + v.bad, v.ok, v.bad);
	return v.bad ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
