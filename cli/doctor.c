/*
 * doctor.c - `unhex doctor`: "frames are hex: which stage is broken?",
 * answered by walking the checks a person would, and naming the stage to
 * fix and how (docs/symbolization.md, "Unwinding or symbolization").
 *
 *   unhex doctor FILE            a pprof file: its mappings, build IDs,
 *                                has_functions, stack depths and roots;
 *                                with --server, where each build ID's
 *                                debug info is (or is not) on the server
 *   unhex doctor --query Q       what the server says of a selection
 *                                (GET /api/v1/symbolization): per build ID
 *                                the symbolization status and reason, and
 *                                the unwinding signatures
 *
 * Exit status: 0 nothing wrong found, 3 a problem found (the verdict says
 * which stage), 1 the checks could not run, 2 usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/err.h"
#include "base/json.h"
#include "base/perfmap.h"
#include "cli.h"
#include "profile.pb-c.h"
#include "query/query.h"

#define DEFAULT_SERVER "http://127.0.0.1:4040"
#define MAX_FILE ((size_t)1 << 30)
#define MAX_RESPONSE ((size_t)64 << 20)
#define EXIT_PROBLEM 3
#define MAX_MAPS 4096

typedef Perftools__Profiles__Profile Profile;

static void doctor_help(FILE *f)
{
	fputs("usage: unhex doctor FILE [--server URL] [--tenant T]\n"
	      "       unhex doctor --query Q [--from T] [--until T] [--server URL] [--tenant T]\n"
	      "common: [--cacert FILE] [--timeout SECONDS]\n"
	      "\n"
	      "Walks the checks behind hex frames and says which stage is broken:\n"
	      "the unwinder (stacks cut short), the profile (no mappings, no build\n"
	      "IDs), or symbolization (debug info missing, upstream failing).\n"
	      "FILE is a pprof (gzipped or not); with --server its build IDs are\n"
	      "looked up on that server.  --query asks the server about a selection.\n"
	      "Exit status: 0 healthy, 3 a problem found, 1 error, 2 usage.\n",
	      f);
}

enum { O_SERVER = 256, O_CACERT, O_TENANT, O_QUERY, O_FROM, O_UNTIL, O_TIMEOUT, O_HELP };

static const struct option doctor_opts[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "query", required_argument, NULL, O_QUERY },
	{ "from", required_argument, NULL, O_FROM },
	{ "until", required_argument, NULL, O_UNTIL },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

struct doctor_args {
	const char *server, *cacert, *tenant, *query, *from, *until, *file;
	int server_given;
	uint64_t timeout_s;
};

struct doctor {
	const struct doctor_args *a;
	struct cli_http *http;
	int problems;
	const char *stage; /* of the first problem: "unwinding", "profile", "symbolization" */
};

static void problem(struct doctor *d, const char *stage)
{
	if (!d->problems++)
		d->stage = stage;
}

/* GET `path` into `body`: 0 with *status, or 1 after printing why. */
static int get(struct doctor *d, const char *path, int *status, struct buf *body)
{
	struct cli_request req = { .method = "GET", .path = path, .tenant = d->a->tenant,
				   .timeout_ms = (int)(d->a->timeout_s * 1000) };
	struct err_msg msg;

	err_clear(&msg);
	buf_reset(body);
	if (cli_http_request(d->http, &req, status, body, &msg)) {
		printf("  server: cannot ask %s: %s\n", d->a->server, msg.text);
		return 1;
	}
	return 0;
}

/* Why a status means hex frames, and what to do (docs/symbolization.md). */
static const char *status_fix(const char *status)
{
	static const struct {
		const char *status, *fix;
	} t[] = {
		{ "no_build_id", "link with -Wl,--build-id (Go: -ldflags=-B=0x...) and make the agent "
				 "report build IDs" },
		{ "not_found", "unhex upload the .debug file or the unstripped binary, or point "
			       "--debuginfod-urls at a server that has it" },
		{ "mismatch", "upload the debug file of the exact build that ran" },
		{ "invalid_elf", "check the uploaded file (readelf -h)" },
		{ "no_symbols", "upload the file from objcopy --only-keep-debug, not a stripped binary" },
		{ "upstream_error", "the debuginfod upstream failed, refused or timed out: check "
				    "--debuginfod-urls (or the tenant's debuginfod_urls), its "
				    "headers file and the upstream's health" },
		{ "pending", "a fetch or index build is running: ask again" },
		{ "disabled", "symbolization is off for this tenant: symbolization=on in its "
			      "limits file line (docs/limits.md)" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(status, t[i].status))
			return t[i].fix;
	return NULL;
}

/* The same for the kernel's mapping, named from the kernel's symbol map. */
static const char *kernel_fix(const char *status)
{
	if (!strcmp(status, "not_found"))
		return "unhex upload --kallsyms /proc/kallsyms --build-id <the kernel's build ID>, as "
		       "root on a machine running that kernel";
	if (!strcmp(status, "no_build_id"))
		return "make the agent report the running kernel's build ID (perf buildid-list -k)";
	return status_fix(status);
}

static const char *jstr(const struct json_value *o, const char *key)
{
	const struct json_value *v = json_get(o, key);

	return v && v->type == JSON_STRING ? v->str : "";
}

static double jnum(const struct json_value *o, const char *key)
{
	const struct json_value *v = json_get(o, key);
	double x = 0;

	if (v)
		json_double(v, &x, NULL);
	return x;
}

/* ---- --query: the server's verdict ------------------------------------- */

static int from_query(struct doctor *d)
{
	const struct doctor_args *a = d->a;
	const struct json_value *root, *ids, *unw;
	struct buf path, body;
	struct arena ar;
	int status = 0, rc = 1;

	buf_init(&path, 64 * 1024);
	buf_init(&body, MAX_RESPONSE);
	arena_init(&ar, json_mem_bound(MAX_RESPONSE));
	if (buf_puts(&path, "/api/v1/symbolization?query=") || cli_url_encode(&path, a->query) ||
	    buf_puts(&path, "&from=") || cli_url_encode(&path, a->from ? a->from : "now-1h") ||
	    buf_puts(&path, "&until=") || cli_url_encode(&path, a->until ? a->until : "now")) {
		fprintf(stderr, "unhex doctor: the selector is too long\n");
		goto out;
	}
	printf("checks of %s on %s\n", a->query, a->server);
	if (get(d, path.data, &status, &body))
		goto out;
	if (status != 200) {
		printf("  server: HTTP %d: %.*s\n", status, (int)(body.len > 300 ? 300 : body.len),
		       body.data ? body.data : "");
		goto out;
	}
	if (json_parse(body.data, body.len, &ar, (struct json_value **)&root, NULL) ||
	    root->type != JSON_OBJECT) {
		printf("  server: the answer is not a JSON object\n");
		goto out;
	}
	printf("  samples with an unnamed frame: %.1f%%%s\n", 100 * jnum(root, "unsymbolizedShare"),
	       json_get(root, "pending") && json_get(root, "pending")->boolean
		       ? " (symbolization still pending: ask again)" : "");
	unw = json_get(root, "unwinding");
	for (size_t i = 0; unw && unw->type == JSON_ARRAY && i < unw->n; i++) {
		const struct json_value *u = &unw->items[i];
		const char *verdict = jstr(u, "verdict");

		printf("  unwinding   %-24s %s: %.1f%% of its samples reach an entry point, "
		       "%.1f%% stop at a named non-entry function, %.1f%% at an unnamed one\n",
		       jstr(u, "binary"), verdict, 100 * jnum(u, "completeShare"),
		       100 * jnum(u, "truncatedShare"), 100 * jnum(u, "rootUnnamedShare"));
		if (strcmp(verdict, "ok")) {
			problem(d, "unwinding");
			printf("              fix: %s\n", jstr(u, "fix"));
		}
	}
	ids = json_get(root, "buildIds");
	for (size_t i = 0; ids && ids->type == JSON_ARRAY && i < ids->n; i++) {
		const struct json_value *g = &ids->items[i];
		const char *st = jstr(g, "status");
		const char *fix = !strncmp(jstr(g, "binary"), "[kernel", 7) ||
					  !strncmp(jstr(g, "binary"), "[vmlinux", 8)
				  ? kernel_fix(st)
				  : status_fix(st);

		printf("  symbols     %-24s build ID %s: %s, %.1f%% of samples unnamed there%s%s\n",
		       jstr(g, "binary"), jstr(g, "buildId")[0] ? jstr(g, "buildId") : "(none)", st,
		       100 * jnum(g, "samplesShare"), jstr(g, "reason")[0] ? ": " : "",
		       jstr(g, "reason"));
		if (fix) {
			problem(d, strcmp(st, "no_build_id") ? "symbolization" : "profile");
			printf("              fix: %s\n", fix);
		} else if (jnum(g, "samplesShare") > 0) {
			printf("              the debug info knows nothing at those addresses "
			       "(assembly without symbols, PLT stubs without the executable)\n");
		}
	}
	rc = 0;
out:
	arena_release(&ar);
	buf_release(&path);
	buf_release(&body);
	return rc;
}

/* ---- FILE: the profile itself ------------------------------------------ */

struct mapstat {
	const Perftools__Profiles__Mapping *m;
	uint64_t weight;       /* samples (first value) whose stack touches it */
	uint64_t root;         /* samples whose outermost frame is in it */
	uint64_t shallow;      /* of those, stacks of one or two frames */
	uint64_t truncated;    /* of those, a named root that is no entry point */
	uint64_t complete;     /* of those, an entry point on the stack */
	uint64_t unnamed_locs; /* locations without lines */
	size_t last;           /* 1 + the last sample counted in weight */
	int go;                /* a runtime.* frame was seen in it */
	uint64_t go_rooted;    /* stacks rooted here that reach goexit or mstart */
};

static const char *str_at(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "";
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int kernel_name(const char *f)
{
	return !strncmp(f, "[kernel", 7) || !strncmp(f, "[vmlinux", 8) || !strcmp(f, "[vdso]");
}

static const Perftools__Profiles__Location *loc_by_id(const Profile *p, uint64_t id)
{
	/* Producers number locations 1..n in order; fall back to a search. */
	if (id >= 1 && id <= p->n_location && p->location[id - 1]->id == id)
		return p->location[id - 1];
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	return NULL;
}

static size_t map_index(const Profile *p, uint64_t id)
{
	if (id >= 1 && id <= p->n_mapping && p->mapping[id - 1]->id == id)
		return (size_t)(id - 1);
	for (size_t i = 0; i < p->n_mapping; i++)
		if (p->mapping[i]->id == id)
			return i;
	return SIZE_MAX;
}

static const char *loc_function(const Profile *p, const Perftools__Profiles__Location *l)
{
	if (!l->n_line)
		return NULL;
	uint64_t fid = l->line[l->n_line - 1]->function_id;
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id == fid)
			return str_at(p, p->function[i]->name);
	return NULL;
}

static int load(const char *path, struct buf *raw)
{
	struct buf file;
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	buf_init(&file, MAX_FILE);
	rc = cli_read_file(path, &file, &msg);
	if (!rc)
		rc = is_gzip(file.data, file.len) ? gunzip_capped(file.data, file.len, MAX_FILE, raw, &msg)
						  : buf_append(raw, file.data, file.len);
	if (rc)
		fprintf(stderr, "unhex doctor: %s: %s\n", path, msg.text[0] ? msg.text : err_str(rc));
	buf_release(&file);
	return rc;
}

/* Walks every sample once: what each mapping's stacks look like. */
static void walk_samples(const Profile *p, struct mapstat *ms, uint64_t *no_mapping,
			 uint64_t *total)
{
	for (size_t i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		uint64_t w = s->n_value && s->value[0] > 0 ? (uint64_t)s->value[0] : 0;
		size_t root = SIZE_MAX, user = 0;
		const char *root_name = NULL;
		int entry = 0, junk = 0, go_rooted = 0, raw = 0;

		*total += w;
		for (size_t k = 0; k < s->n_location_id; k++) {
			const Perftools__Profiles__Location *l = loc_by_id(p, s->location_id[k]);
			size_t mi = l ? map_index(p, l->mapping_id) : SIZE_MAX;
			const char *name;

			if (mi != SIZE_MAX && kernel_name(str_at(p, p->mapping[mi]->filename)))
				continue;
			user++;
			junk = mi == SIZE_MAX;
			raw = !l || !l->n_line;
			if (mi == SIZE_MAX) {
				*no_mapping += w;
				continue;
			}
			if (ms[mi].last != i + 1) {
				ms[mi].weight += w;
				ms[mi].last = i + 1;
			}
			root = mi;
			root_name = name = l ? loc_function(p, l) : NULL;
			entry |= query_stack_entry(name);
			if (name && !strncmp(name, "runtime.", 8)) {
				ms[mi].go = 1;
				go_rooted |= !strncmp(name, "runtime.goexit", 14) ||
					     !strncmp(name, "runtime.mstart", 14);
			}
		}
		/* Roots that arrived named come from a runtime's own profiler,
		 * whose roots are its language's: only raw roots are judged. */
		if (root == SIZE_MAX || !raw)
			continue;
		ms[root].root += w;
		if (go_rooted)
			ms[root].go_rooted += w;
		if (user <= 2)
			ms[root].shallow += w;
		if (entry)
			ms[root].complete += w;
		else if (root_name || junk)
			ms[root].truncated += w;
	}
}

static void check_debuginfo(struct doctor *d, const char *bid, struct buf *body)
{
	struct arena ar;
	const struct json_value *v;
	char path[256];
	int status = 0;

	snprintf(path, sizeof(path), "/api/v1/debuginfo/%s", bid);
	if (get(d, path, &status, body)) {
		problem(d, "symbolization");
		return;
	}
	if (status == 404) {
		printf("    debug info: not on the server\n    fix: %s\n", status_fix("not_found"));
		problem(d, "symbolization");
		return;
	}
	if (status != 200) {
		printf("    debug info: HTTP %d from the server\n", status);
		problem(d, "symbolization");
		return;
	}
	arena_init(&ar, json_mem_bound(body->len));
	if (!json_parse(body->data, body->len, &ar, (struct json_value **)&v, NULL)) {
		const char *st = jstr(v, "status"), *fix = status_fix(st);

		printf("    debug info: %s (source %s)%s%s\n", st, jstr(v, "source"),
		       jstr(v, "reason")[0] ? ": " : "", jstr(v, "reason"));
		if (fix) {
			printf("    fix: %s\n", fix);
			problem(d, "symbolization");
		}
	}
	arena_release(&ar);
}

static int from_file(struct doctor *d)
{
	struct buf raw, body;
	struct mapstat *ms = NULL;
	uint64_t no_mapping = 0, total = 0;
	Profile *p = NULL;
	int rc = 1;

	buf_init(&raw, MAX_FILE);
	buf_init(&body, MAX_RESPONSE);
	if (load(d->a->file, &raw))
		goto out;
	p = perftools__profiles__profile__unpack(NULL, raw.len, (const uint8_t *)raw.data);
	if (!p) {
		fprintf(stderr, "unhex doctor: %s: not a pprof protobuf\n", d->a->file);
		goto out;
	}
	if (p->n_mapping > MAX_MAPS || !(ms = calloc(p->n_mapping + 1, sizeof(*ms)))) {
		fprintf(stderr, "unhex doctor: %s: too many mappings\n", d->a->file);
		goto out;
	}
	for (size_t i = 0; i < p->n_mapping; i++)
		ms[i].m = p->mapping[i];
	for (size_t i = 0; i < p->n_location; i++) {
		size_t mi = map_index(p, p->location[i]->mapping_id);

		if (mi != SIZE_MAX && !p->location[i]->n_line)
			ms[mi].unnamed_locs++;
	}
	walk_samples(p, ms, &no_mapping, &total);
	printf("checks of %s: %zu samples, %zu mappings, %zu locations\n", d->a->file, p->n_sample,
	       p->n_mapping, p->n_location);
	if (!p->n_mapping) {
		printf("  profile: no mappings: addresses cannot be tied to a binary\n"
		       "  fix: make the agent send mappings (perf, eBPF agents and Go do)\n");
		problem(d, "profile");
	}
	if (total && no_mapping * 10 >= total) {
		printf("  unwinding: %.1f%% of the samples have frames outside every mapping "
		       "(addresses read from junk)\n", 100.0 * (double)no_mapping / (double)total);
		problem(d, "unwinding");
	}
	for (size_t i = 0; i < p->n_mapping; i++) {
		const struct mapstat *m = &ms[i];
		const char *file = str_at(p, m->m->filename), *bid = str_at(p, m->m->build_id);
		const char *bin = file[0] ? base_name(file) : "[unknown]";
		int interp = query_interpreter_binary(bin);
		uint32_t pid;

		if (!m->weight || kernel_name(file))
			continue;
		printf("  %s: build ID %s, has_functions %s, %.1f%% of samples\n", bin,
		       bid[0] ? bid : "(none)", m->m->has_functions ? "true" : "false",
		       total ? 100.0 * (double)m->weight / (double)total : 0.0);
		/* Go's runtime/pprof leaves goexit out: a Go binary none of whose
		 * stacks reach goexit or mstart lost its roots to the producer. */
		uint64_t truncated = m->go && !m->go_rooted ? 0 : m->truncated;

		/* Binaries under 5% of the stacks' roots are not judged. */
		if (m->root && m->root * 20 >= total) {
			double r = (double)m->root;

			printf("    stacks rooted here: %.1f%% reach an entry point, %.1f%% stop at a "
			       "named function or junk, %.1f%% are one or two frames deep\n",
			       100 * (double)m->complete / r, 100 * (double)m->truncated / r,
			       100 * (double)m->shallow / r);
			if (interp && m->shallow * 2 >= m->root) {
				printf("    unwinding: an interpreter's frames alone: profile with the "
				       "runtime's profiler, or have it write a perf map\n");
				problem(d, "unwinding");
			} else if (truncated * 10 >= m->root) {
				printf("    unwinding: stacks stop before an entry point: rebuild with "
				       "-fno-omit-frame-pointer or unwind with .eh_frame (perf "
				       "--call-graph dwarf)\n");
				problem(d, "unwinding");
			} else if (!m->m->has_functions && m->shallow * 2 >= m->root) {
				printf("    unwinding: most stacks are one or two frames deep: the "
				       "unwinder may be failing (frame pointers, .eh_frame)\n");
				problem(d, "unwinding");
			}
		}
		if (!m->unnamed_locs)
			continue;
		if (perfmap_jit_mapping(file, bid, &pid)) {
			printf("    symbols: %llu locations of JIT code of process %u\n    fix: upload "
			       "its perf map: unhex upload --perf-map /tmp/perf-%u.map\n",
			       (unsigned long long)m->unnamed_locs, pid, pid);
			problem(d, "symbolization");
		} else if (!bid[0]) {
			printf("    symbols: %llu locations without names and no build ID\n    fix: %s\n",
			       (unsigned long long)m->unnamed_locs, status_fix("no_build_id"));
			problem(d, "profile");
		} else if (d->a->server_given) {
			check_debuginfo(d, bid, &body);
		} else {
			printf("    symbols: %llu locations without names: give --server to check "
			       "the debug info of %s\n", (unsigned long long)m->unnamed_locs, bid);
		}
	}
	rc = 0;
out:
	free(ms);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	buf_release(&raw);
	buf_release(&body);
	return rc;
}

int cli_doctor(int argc, char **argv)
{
	struct doctor_args a = { .server = DEFAULT_SERVER, .timeout_s = 60 };
	struct doctor d = { &a, NULL, 0, NULL };
	struct cli_server srv;
	struct err_msg msg;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", doctor_opts, NULL)) != -1) {
		switch (c) {
		case O_SERVER: a.server = optarg; a.server_given = 1; break;
		case O_CACERT: a.cacert = optarg; break;
		case O_TENANT: a.tenant = optarg; break;
		case O_QUERY: a.query = optarg; break;
		case O_FROM: a.from = optarg; break;
		case O_UNTIL: a.until = optarg; break;
		case O_TIMEOUT:
			if ((rc = cli_parse_timeout("doctor", optarg, &a.timeout_s)))
				return rc;
			break;
		case O_HELP: doctor_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("doctor", argv);
		}
	}
	if (optind < argc)
		a.file = argv[optind++];
	if (optind < argc)
		return cli_extra_argument("doctor", argv);
	if (!a.file == !a.query)
		return cli_usage_error("doctor", "give a pprof FILE or --query, one of them");
	err_clear(&msg);
	if (cli_server_parse(a.server, a.cacert, &srv, &msg))
		return cli_usage_error("doctor", "%s", msg.text);
	if ((a.query || a.server_given) && cli_http_open(&srv, &d.http, &msg)) {
		fprintf(stderr, "unhex doctor: %s\n", msg.text);
		return CLI_EXIT_FAIL;
	}
	rc = a.query ? from_query(&d) : from_file(&d);
	cli_http_close(d.http);
	if (rc)
		return CLI_EXIT_FAIL;
	if (!d.problems) {
		printf("verdict: nothing wrong found\n");
		return CLI_EXIT_OK;
	}
	printf("verdict: %s is broken (%d finding%s above; the first is the stage to fix first)\n",
	       d.stage, d.problems, d.problems == 1 ? "" : "s");
	return EXIT_PROBLEM;
}
