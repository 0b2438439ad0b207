/*
 * query_cmd.c - `unhex query top|folded|pprof|dot|diff`: asks a running
 * server (docs/api.md) and prints its answer.  The logic lives in the
 * server's query routes (GET /api/v1/top, /api/v1/folded, /api/v1/pprof,
 * /pyroscope/render?format=dot, /api/v1/diff-top), so the CLI and HTTP
 * clients see the same numbers.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"

#define DEFAULT_SERVER "http://127.0.0.1:4040"
#define MAX_RESPONSE ((size_t)1 << 30)

static void query_help(FILE *f)
{
	fputs("usage: unhex query top    --query Q [--from T] [--until T] [--limit N] [--sort self|total]\n"
	      "       unhex query folded --query Q [--from T] [--until T]\n"
	      "       unhex query pprof  --query Q [--from T] [--until T] -o FILE\n"
	      "       unhex query dot    --query Q [--from T] [--until T] [--limit N]\n"
	      "       unhex query diff   --left Q --right Q [--left-from T] [--left-until T]\n"
	      "                          [--right-from T] [--right-until T] [--mode relative|absolute]\n"
	      "                          [--limit N]\n"
	      "common: [--server URL] [--cacert FILE] [--tenant T] [--timeout SECONDS] [-o FILE]\n"
	      "\n"
	      "Q is a selector: process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"api\"}.\n"
	      "T is now, now-<N><s|m|h|d|w> or a Unix time (s, ms, us or ns); default\n"
	      "--from now-1h --until now (the diff sides default to --from/--until).\n"
	      "top prints self and total per function with their shares of the total;\n"
	      "folded prints `frame;frame;frame value` lines; pprof writes the gzipped\n"
	      "merged profile; dot prints the Graphviz call graph of at most N functions\n"
	      "(default 100; `| dot -Tsvg`); diff prints the functions whose self changed the most\n"
	      "(relative: each side in % of its own total; absolute: raw values).\n"
	      "--server defaults to " DEFAULT_SERVER "; for an https:// server, --cacert\n"
	      "names PEM CA certificates to trust instead of the system's.\n",
	      f);
}

enum { O_SERVER = 256, O_CACERT, O_TENANT, O_QUERY, O_FROM, O_UNTIL, O_LIMIT, O_SORT, O_LEFT, O_RIGHT,
       O_LFROM, O_LUNTIL, O_RFROM, O_RUNTIL, O_MODE, O_TIMEOUT, O_HELP };

static const struct option query_opts[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "query", required_argument, NULL, O_QUERY },
	{ "from", required_argument, NULL, O_FROM },
	{ "until", required_argument, NULL, O_UNTIL },
	{ "limit", required_argument, NULL, O_LIMIT },
	{ "sort", required_argument, NULL, O_SORT },
	{ "left", required_argument, NULL, O_LEFT },
	{ "right", required_argument, NULL, O_RIGHT },
	{ "left-from", required_argument, NULL, O_LFROM },
	{ "left-until", required_argument, NULL, O_LUNTIL },
	{ "right-from", required_argument, NULL, O_RFROM },
	{ "right-until", required_argument, NULL, O_RUNTIL },
	{ "mode", required_argument, NULL, O_MODE },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

struct query_args {
	const char *sub;
	const char *server, *cacert, *tenant, *query, *from, *until, *limit, *sort;
	const char *left, *right, *lfrom, *luntil, *rfrom, *runtil, *mode, *out;
	uint64_t timeout_s;
};

static int build_path(const struct query_args *a, struct buf *path)
{
	const char *from = a->from ? a->from : "now-1h", *until = a->until ? a->until : "now";
	int rc;

	if (strcmp(a->sub, "diff") == 0) {
		rc = buf_puts(path, "/api/v1/diff-top");
		if (!rc)
			rc = cli_add_param(path, "leftQuery", a->left);
		if (!rc)
			rc = cli_add_param(path, "leftFrom", a->lfrom ? a->lfrom : from);
		if (!rc)
			rc = cli_add_param(path, "leftUntil", a->luntil ? a->luntil : until);
		if (!rc)
			rc = cli_add_param(path, "rightQuery", a->right);
		if (!rc)
			rc = cli_add_param(path, "rightFrom", a->rfrom ? a->rfrom : from);
		if (!rc)
			rc = cli_add_param(path, "rightUntil", a->runtil ? a->runtil : until);
		if (!rc)
			rc = cli_add_param(path, "mode", a->mode);
		if (!rc)
			rc = cli_add_param(path, "limit", a->limit ? a->limit : "20");
		return rc;
	}
	if (strcmp(a->sub, "dot") == 0)
		rc = buf_puts(path, "/pyroscope/render?format=dot");
	else
		rc = buf_printf(path, "/api/v1/%s", a->sub);
	if (!rc)
		rc = cli_add_param(path, "query", a->query);
	if (!rc)
		rc = cli_add_param(path, "from", from);
	if (!rc)
		rc = cli_add_param(path, "until", until);
	if (!rc && strcmp(a->sub, "dot") == 0)
		rc = cli_add_param(path, "max-nodes", a->limit);
	if (!rc && strcmp(a->sub, "top") == 0) {
		rc = cli_add_param(path, "limit", a->limit ? a->limit : "20");
		if (!rc)
			rc = cli_add_param(path, "sort", a->sort);
	}
	return rc;
}

static int check_args(struct query_args *a)
{
	int diff = strcmp(a->sub, "diff") == 0;
	uint64_t n;

	if (strcmp(a->sub, "top") && strcmp(a->sub, "folded") && strcmp(a->sub, "pprof") &&
	    strcmp(a->sub, "dot") && !diff)
		return cli_usage_error("query",
				       "unknown subcommand \"%s\" (top, folded, pprof, dot, diff)",
				       a->sub);
	if (diff && (!a->left || !a->right))
		return cli_usage_error("query", "diff needs --left and --right selectors");
	if (!diff && !a->query)
		return cli_usage_error("query", "%s needs --query", a->sub);
	if (!diff && (a->left || a->right || a->lfrom || a->luntil || a->rfrom || a->runtil || a->mode))
		return cli_usage_error("query", "--left, --right, --left-*, --right-* and --mode "
					"go with diff");
	if (a->sort && strcmp(a->sort, "self") && strcmp(a->sort, "total"))
		return cli_usage_error("query", "--sort: \"%s\" is not self or total", a->sort);
	if (a->mode && strcmp(a->mode, "relative") && strcmp(a->mode, "absolute"))
		return cli_usage_error("query", "--mode: \"%s\" is not relative or absolute", a->mode);
	if (a->limit && cli_parse_u64(a->limit, &n))
		return cli_usage_error("query", "--limit: \"%s\" is not a number", a->limit);
	if (strcmp(a->sub, "pprof") == 0 && !a->out)
		return cli_usage_error("query", "pprof needs -o FILE");
	return 0;
}

static int run(const struct query_args *a)
{
	struct cli_target t = { a->server, a->cacert, a->tenant, a->timeout_s };
	struct buf path, body;
	int ret = CLI_EXIT_FAIL;

	buf_init(&path, 64 * 1024);
	buf_init(&body, MAX_RESPONSE);
	if (build_path(a, &path))
		fprintf(stderr, "unhex query: the selectors are too long\n");
	else if ((ret = cli_get("query", &t, path.data, &body)) == CLI_EXIT_OK)
		ret = cli_write_out("query", a->out, body.data, body.len);
	buf_release(&path);
	buf_release(&body);
	return ret;
}

int cli_query(int argc, char **argv)
{
	struct query_args a = { .server = DEFAULT_SERVER, .timeout_s = 120 };
	int c, rc;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		query_help(stdout);
		return CLI_EXIT_OK;
	}
	if (argc < 2 || argv[1][0] == '-')
		return cli_usage_error("query", "missing subcommand (top, folded, pprof, dot, diff)");
	a.sub = argv[1];
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:", query_opts, NULL)) != -1) {
		switch (c) {
		case O_SERVER: a.server = optarg; break;
		case O_CACERT: a.cacert = optarg; break;
		case O_TENANT: a.tenant = optarg; break;
		case O_QUERY: a.query = optarg; break;
		case O_FROM: a.from = optarg; break;
		case O_UNTIL: a.until = optarg; break;
		case O_LIMIT: a.limit = optarg; break;
		case O_SORT: a.sort = optarg; break;
		case O_LEFT: a.left = optarg; break;
		case O_RIGHT: a.right = optarg; break;
		case O_LFROM: a.lfrom = optarg; break;
		case O_LUNTIL: a.luntil = optarg; break;
		case O_RFROM: a.rfrom = optarg; break;
		case O_RUNTIL: a.runtil = optarg; break;
		case O_MODE: a.mode = optarg; break;
		case 'o': a.out = optarg; break;
		case O_TIMEOUT:
			if ((rc = cli_parse_timeout("query", optarg, &a.timeout_s)))
				return rc;
			break;
		case O_HELP: query_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("query", argv);
		}
	}
	if (optind < argc)
		return cli_extra_argument("query", argv);
	rc = check_args(&a);
	return rc ? rc : run(&a);
}
