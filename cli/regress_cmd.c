/*
 * regress_cmd.c - `unhex regress`: the regression report between two
 * releases of a service (GET /api/v1/regressions, docs/regressions.md),
 * printed as text, JSON or Markdown, with an exit status a CI job can gate
 * on: 0 no regression at or over --fail-on, 1 there is one, 2 usage, 3 the
 * report could not be made.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"
#include "cli.h"

#define DEFAULT_SERVER "http://127.0.0.1:4040"
#define MAX_RESPONSE ((size_t)256 << 20)

enum { REGRESS_EXIT_REGRESSED = 1, REGRESS_EXIT_ERROR = 3 };

static void regress_help(FILE *f)
{
	fputs("usage: unhex regress --service S --baseline A --candidate B [--fail-on P%]\n"
	      "                     [--format text|json|markdown] [-o FILE]\n"
	      "                     [--type PROFILE_TYPE] [--label NAME] [--from T] [--until T]\n"
	      "                     [--min-effect P%] [--noise-floor P%] [--alpha A]\n"
	      "                     [--normalize unchanged|total] [--limit N]\n"
	      "       unhex regress --baseline-query Q --candidate-query Q [...]\n"
	      "common: [--server URL] [--cacert FILE] [--tenant T] [--timeout SECONDS]\n"
	      "\n"
	      "Compares two releases of service S (as GET /api/v1/releases names them:\n"
	      "a release label's value or a build ID) function by function, with Welch's\n"
	      "t test over the profiles of each side (docs/regressions.md), or any two\n"
	      "selections with --baseline-query and --candidate-query.\n"
	      "--fail-on P%: exit 1 when a confident regression adds at least P% of the\n"
	      "baseline's total (self or total); without it the exit status is 0.\n"
	      "--format markdown prints a report fit for a pull-request comment.\n"
	      "Exit status: 0 pass, 1 regression at or over --fail-on, 2 usage error,\n"
	      "3 the report could not be made.\n",
	      f);
}

enum { O_SERVER = 256, O_CACERT, O_TENANT, O_SERVICE, O_BASE, O_CAND, O_BASEQ, O_CANDQ,
       O_FAILON, O_FORMAT, O_TYPE, O_LABEL, O_FROM, O_UNTIL, O_MINEFF, O_FLOOR, O_ALPHA,
       O_NORM, O_LIMIT, O_TIMEOUT, O_HELP };

static const struct option regress_opts[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "service", required_argument, NULL, O_SERVICE },
	{ "baseline", required_argument, NULL, O_BASE },
	{ "candidate", required_argument, NULL, O_CAND },
	{ "baseline-query", required_argument, NULL, O_BASEQ },
	{ "candidate-query", required_argument, NULL, O_CANDQ },
	{ "fail-on", required_argument, NULL, O_FAILON },
	{ "format", required_argument, NULL, O_FORMAT },
	{ "type", required_argument, NULL, O_TYPE },
	{ "label", required_argument, NULL, O_LABEL },
	{ "from", required_argument, NULL, O_FROM },
	{ "until", required_argument, NULL, O_UNTIL },
	{ "min-effect", required_argument, NULL, O_MINEFF },
	{ "noise-floor", required_argument, NULL, O_FLOOR },
	{ "alpha", required_argument, NULL, O_ALPHA },
	{ "normalize", required_argument, NULL, O_NORM },
	{ "limit", required_argument, NULL, O_LIMIT },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

struct regress_args {
	const char *server, *cacert, *tenant, *service, *base, *cand, *baseq, *candq;
	const char *fail_on, *format, *type, *label, *from, *until, *min_effect, *floor;
	const char *alpha, *norm, *limit, *out;
	uint64_t timeout_s;
};

static int build_path(const struct regress_args *a, struct buf *path)
{
	const char *kv[][2] = {
		{ "service", a->service }, { "baseline", a->base }, { "candidate", a->cand },
		{ "baselineQuery", a->baseq }, { "candidateQuery", a->candq },
		{ "type", a->type }, { "label", a->label },
		{ "from", a->from ? a->from : "now-24h" }, { "until", a->until ? a->until : "now" },
		{ "failOn", a->fail_on }, { "minEffect", a->min_effect }, { "noiseFloor", a->floor },
		{ "alpha", a->alpha }, { "normalize", a->norm }, { "limit", a->limit },
		{ "format", "json" },
		{ "report", strcmp(a->format, "json") ? a->format : NULL },
	};
	int rc = buf_puts(path, "/api/v1/regressions");

	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]) && !rc; i++)
		rc = cli_add_param(path, kv[i][0], kv[i][1]);
	return rc;
}

/* "5%", "5" (percent) or "0.5%": checked here so a typo is a usage error. */
static int check_percent(const char *opt, const char *v)
{
	char *end;
	double d;

	if (!v)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || (*end && strcmp(end, "%")) || !(d >= 0 && d <= 100))
		return cli_usage_error("regress", "--%s: \"%s\" is not a percentage from 0 to 100",
				       opt, v);
	return 0;
}

static int check_args(const struct regress_args *a)
{
	uint64_t n;
	int rc;

	if ((a->baseq || a->candq) && !(a->baseq && a->candq))
		return cli_usage_error("regress", "--baseline-query and --candidate-query go together");
	if (!a->baseq && (!a->service || !a->base || !a->cand))
		return cli_usage_error("regress", "needs --service, --baseline and --candidate "
					"(or --baseline-query and --candidate-query)");
	if (strcmp(a->format, "text") && strcmp(a->format, "json") && strcmp(a->format, "markdown"))
		return cli_usage_error("regress", "--format: \"%s\" is not text, json or markdown",
				       a->format);
	if (a->norm && strcmp(a->norm, "unchanged") && strcmp(a->norm, "total"))
		return cli_usage_error("regress", "--normalize: \"%s\" is not unchanged or total",
				       a->norm);
	if (a->limit && cli_parse_u64(a->limit, &n))
		return cli_usage_error("regress", "--limit: \"%s\" is not a number", a->limit);
	if ((rc = check_percent("fail-on", a->fail_on)) ||
	    (rc = check_percent("min-effect", a->min_effect)) ||
	    (rc = check_percent("noise-floor", a->floor)))
		return rc;
	return 0;
}

/* Prints the report the server made; the exit status from its verdict. */
static int report(const struct regress_args *a, const struct buf *body)
{
	struct arena ar;
	struct json_value *v;
	const struct json_value *verdict, *text;
	struct err_msg msg;
	int ret = REGRESS_EXIT_ERROR;

	err_clear(&msg);
	arena_init(&ar, json_mem_bound(body->len));
	if (json_parse(body->data, body->len, &ar, &v, &msg)) {
		fprintf(stderr, "unhex regress: the server's answer is not JSON: %s\n", msg.text);
		goto out;
	}
	verdict = json_get(v, "verdict");
	text = json_get(v, "report");
	if (!verdict || verdict->type != JSON_STRING ||
	    (strcmp(a->format, "json") && (!text || text->type != JSON_STRING))) {
		fprintf(stderr, "unhex regress: the server's answer has no verdict or report\n");
		goto out;
	}
	if (strcmp(a->format, "json") ? cli_write_out("regress", a->out, text->str, text->len)
				      : cli_write_out("regress", a->out, body->data, body->len))
		goto out;
	ret = strcmp(verdict->str, "fail") ? CLI_EXIT_OK : REGRESS_EXIT_REGRESSED;
out:
	arena_release(&ar);
	return ret;
}

static int run(const struct regress_args *a)
{
	struct cli_target t = { a->server, a->cacert, a->tenant, a->timeout_s };
	struct buf path, body;
	int ret = REGRESS_EXIT_ERROR, rc;

	buf_init(&path, 64 * 1024);
	buf_init(&body, MAX_RESPONSE);
	if (build_path(a, &path))
		fprintf(stderr, "unhex regress: the parameters are too long\n");
	else if ((rc = cli_get("regress", &t, path.data, &body)) == CLI_EXIT_USAGE)
		ret = rc;
	else if (rc == CLI_EXIT_OK)
		ret = report(a, &body);
	buf_release(&path);
	buf_release(&body);
	return ret;
}

int cli_regress(int argc, char **argv)
{
	struct regress_args a = { .server = DEFAULT_SERVER, .format = "text", .timeout_s = 300 };
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:", regress_opts, NULL)) != -1) {
		switch (c) {
		case O_SERVER: a.server = optarg; break;
		case O_CACERT: a.cacert = optarg; break;
		case O_TENANT: a.tenant = optarg; break;
		case O_SERVICE: a.service = optarg; break;
		case O_BASE: a.base = optarg; break;
		case O_CAND: a.cand = optarg; break;
		case O_BASEQ: a.baseq = optarg; break;
		case O_CANDQ: a.candq = optarg; break;
		case O_FAILON: a.fail_on = optarg; break;
		case O_FORMAT: a.format = optarg; break;
		case O_TYPE: a.type = optarg; break;
		case O_LABEL: a.label = optarg; break;
		case O_FROM: a.from = optarg; break;
		case O_UNTIL: a.until = optarg; break;
		case O_MINEFF: a.min_effect = optarg; break;
		case O_FLOOR: a.floor = optarg; break;
		case O_ALPHA: a.alpha = optarg; break;
		case O_NORM: a.norm = optarg; break;
		case O_LIMIT: a.limit = optarg; break;
		case 'o': a.out = optarg; break;
		case O_TIMEOUT:
			if ((rc = cli_parse_timeout("regress", optarg, &a.timeout_s)))
				return rc;
			break;
		case O_HELP: regress_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("regress", argv);
		}
	}
	if (optind < argc)
		return cli_extra_argument("regress", argv);
	rc = check_args(&a);
	return rc ? rc : run(&a);
}
