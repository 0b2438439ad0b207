/*
 * perf2pprof.c - converts a perf.data file (through `perf script`) or a
 * gperftools CPU profile into a raw-address pprof, the way a stripped
 * production agent would send it.
 *
 *   perf2pprof -i perf.data -o out.pb.gz [--raw] [--perf PATH] [--callers-in-call]
 *   perf2pprof --gperftools CPUPROFILE_FILE -o out.pb.gz [--raw]
 *
 * `perf script` prints callchain addresses relative to their DSO
 * (ip - map start + pgoff); they are turned back into runtime addresses with
 * the process's MMAP/MMAP2 events, so the pprof mappings and locations look
 * exactly like a live process's.
 */
#include "perf2pprof.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "symbolize/symbolize.h"
#include "pprof_writer.h"

#define MAX_LINE (1u << 20)
#define MAX_FRAMES 4096
#define MAX_OUT (1024u * 1024 * 1024)

/* ---- build-ID cache --------------------------------------------------- */

int bid_put(struct bid_cache *c, const char *path, const char *hex)
{
	struct bid_entry *e;

	for (e = c->head; e; e = e->next)
		if (strcmp(e->path, path) == 0)
			return 0;
	e = calloc(1, sizeof(*e));
	if (!e)
		return ERR_NOMEM;
	e->path = strdup(path);
	e->hex = strdup(hex);
	if (!e->path || !e->hex) {
		free(e->path);
		free(e->hex);
		free(e);
		return ERR_NOMEM;
	}
	e->next = c->head;
	c->head = e;
	return 0;
}

/*
 * The GNU build ID of the file at `path` in hex, or "" (not a regular file,
 * not an ELF, no build ID), read by the symbolizer's own inspection so the
 * tools and the server agree on it.
 */
static void build_id_of(const char *path, char hex[2 * SYM_BUILD_ID_MAX + 1])
{
	struct sym_elf_info info;
	struct stat sb;

	hex[0] = '\0';
	/* Never opened: FIFOs and devices (a mapping may name anything). */
	if (path[0] != '/' || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
		return;
	if (sym_elf_inspect_file(path, &info, NULL) == 0 && info.build_id_len)
		sym_build_id_hex(info.build_id, info.build_id_len, hex);
}

const char *bid_get(struct bid_cache *c, const char *path)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1];
	struct bid_entry *e;

	for (e = c->head; e; e = e->next)
		if (strcmp(e->path, path) == 0)
			return e->hex;
	build_id_of(path, hex);
	if (bid_put(c, path, hex) != 0)
		return "";
	return c->head->hex;
}

void bid_release(struct bid_cache *c)
{
	while (c->head) {
		struct bid_entry *e = c->head;
		c->head = e->next;
		free(e->path);
		free(e->hex);
		free(e);
	}
}

/* ---- running perf ------------------------------------------------------ */

typedef int (*line_cb)(void *ctx, char *line, size_t len);

/* Runs argv with stdout piped to cb line by line; stderr is discarded. */
static int run_lines(char *const argv[], line_cb cb, void *ctx, struct err_msg *msg)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int fds[2], status, rc = 0;
	FILE *f;
	pid_t pid;

	if (pipe(fds) != 0)
		return err_set(msg, ERR_IO, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return err_set(msg, ERR_IO, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(fds[1], 1);
		if (null >= 0 && !getenv("PERF2PPROF_VERBOSE"))
			dup2(null, 2);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	if (!f) {
		close(fds[0]);
		rc = err_set(msg, ERR_NOMEM, "fdopen failed");
	}
	while (f && (n = getline(&line, &cap, f)) >= 0) {
		if ((size_t)n > MAX_LINE) {
			rc = err_set(msg, ERR_TOO_LARGE, "%s printed a line of %zd bytes", argv[0], n);
			break;
		}
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if ((rc = cb(ctx, line, (size_t)n)))
			break;
	}
	free(line);
	if (f)
		fclose(f);
	if (waitpid(pid, &status, 0) < 0)
		return rc ? rc : err_set(msg, ERR_IO, "waitpid: %s", strerror(errno));
	if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		rc = err_set(msg, ERR_IO, "`%s %s` failed (exit status %d)", argv[0], argv[1],
			     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return rc;
}

static int buildid_line(void *ctx, char *line, size_t len)
{
	char *sp = memchr(line, ' ', len);

	if (!sp || sp == line)
		return 0;
	*sp = '\0';
	return bid_put(ctx, sp + 1, line);
}

/* ---- process address spaces --------------------------------------------- */

struct mm {
	uint64_t start, len, pgoff;
	int exec;
	char *path;      /* owned, as perf printed it */
	uint64_t map_id; /* pprof mapping id, 0 until a sample uses it */
};

struct proc {
	long pid; /* -1 for the kernel */
	struct mm *mm;
	size_t n, cap;
};

struct perf_state {
	struct pw *w;
	struct bid_cache *bids;
	struct err_msg *msg;
	struct proc *procs;
	size_t n_procs, cap_procs;
	size_t last_proc;
	/* the sample being read */
	int in_sample;
	char comm[256];
	long pid;
	int64_t period;
	uint64_t frames[MAX_FRAMES];
	size_t n_frames;
	int prev_kernel;    /* the frame before (leaf-ward) is the kernel's */
	unsigned flags;     /* enum p2p_flags */
	/* totals */
	int64_t first_ns, last_ns;
	int64_t period_sum;
	uint64_t events;
	char event[128];
	int warned_event;
};

static struct proc *proc_get(struct perf_state *s, long pid, int create)
{
	struct proc *p;
	size_t i;

	if (s->last_proc < s->n_procs && s->procs[s->last_proc].pid == pid)
		return &s->procs[s->last_proc];
	for (i = 0; i < s->n_procs; i++) {
		if (s->procs[i].pid == pid) {
			s->last_proc = i;
			return &s->procs[i];
		}
	}
	if (!create)
		return NULL;
	if (s->n_procs == s->cap_procs) {
		size_t ncap = s->cap_procs ? s->cap_procs * 2 : 16;
		p = realloc(s->procs, ncap * sizeof(*p));
		if (!p)
			return NULL;
		s->procs = p;
		s->cap_procs = ncap;
	}
	p = &s->procs[s->n_procs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	s->last_proc = s->n_procs++;
	return p;
}

static int proc_add(struct proc *p, const struct mm *m)
{
	struct mm *nm;

	if (p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 32;
		if (ncap > PW_MAX_ENTRIES)
			return ERR_TOO_LARGE;
		nm = realloc(p->mm, ncap * sizeof(*nm));
		if (!nm)
			return ERR_NOMEM;
		p->mm = nm;
		p->cap = ncap;
	}
	p->mm[p->n] = *m;
	p->mm[p->n].path = strdup(m->path);
	if (!p->mm[p->n].path)
		return ERR_NOMEM;
	p->n++;
	return 0;
}

static void proc_clear(struct proc *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->mm[i].path);
	p->n = 0;
}

static void state_release(struct perf_state *s)
{
	size_t i;

	for (i = 0; i < s->n_procs; i++) {
		proc_clear(&s->procs[i]);
		free(s->procs[i].mm);
	}
	free(s->procs);
}

/* ---- events ------------------------------------------------------------- */

/* "PERF_RECORD_MMAP2 5708/5708: [0x55..(0x5000) @ 0x1000 fe:00 ...]: r-xp /path" */
static int on_mmap(struct perf_state *s, const char *rec)
{
	struct mm m = { 0 };
	const char *p = strchr(rec, ' ');
	char *end;
	struct proc *pr;
	long pid;

	if (!p)
		return 0;
	pid = strtol(p + 1, &end, 10);
	p = strchr(end, '[');
	if (!p)
		return 0;
	m.start = strtoull(p + 1, &end, 16);
	if (*end != '(')
		return 0;
	m.len = strtoull(end + 1, &end, 16);
	if (strncmp(end, ") @ ", 4) != 0)
		return 0;
	m.pgoff = strtoull(end + 4, &end, 16);
	p = strstr(end, "]: ");
	if (!p)
		return 0;
	p += 3;
	end = strchr(p, ' ');
	if (!end)
		return 0;
	m.exec = memchr(p, 'x', (size_t)(end - p)) != NULL;
	m.path = end + 1;
	if (!m.exec || m.len == 0)
		return 0; /* samples only land in executable mappings */
	pr = proc_get(s, pid, 1);
	if (!pr)
		return ERR_NOMEM;
	return proc_add(pr, &m);
}

/* "PERF_RECORD_FORK(child:ctid):(parent:ptid)": a new process inherits maps. */
static int on_fork(struct perf_state *s, const char *rec)
{
	long child, parent;
	struct proc *pp, *cp;
	size_t i;
	int rc;

	if (sscanf(rec, "PERF_RECORD_FORK(%ld:%*d):(%ld:%*d)", &child, &parent) != 2 ||
	    child == parent)
		return 0;
	pp = proc_get(s, parent, 0);
	if (!pp || proc_get(s, child, 0))
		return 0;
	cp = proc_get(s, child, 1);
	if (!cp)
		return ERR_NOMEM;
	pp = proc_get(s, parent, 0); /* proc_get may have moved the array */
	for (i = 0; i < pp->n; i++)
		if ((rc = proc_add(cp, &pp->mm[i])))
			return rc;
	return 0;
}

/* Anonymous memory, where JIT runtimes put generated code (perf's rule). */
static int anon_path(const char *fn)
{
	return !strncmp(fn, "//anon", 6) || !strncmp(fn, "/dev/zero", 9) ||
	       !strncmp(fn, "/anon_hugepage", 14);
}

/*
 * The pprof mapping of `m` in process `pid`.  Executable anonymous memory
 * is named /tmp/perf-PID.map, as perf names it: the file where a JIT
 * runtime writes the names of its code, and how unhex finds the map.
 */
static int mapping_of(struct perf_state *s, struct mm *m, long pid, uint64_t *id)
{
	char name[4096];
	const char *fn = m->path;
	size_t kl = strlen("[kernel.kallsyms]");

	if (m->map_id) {
		*id = m->map_id;
		return 0;
	}
	if (strncmp(fn, "[kernel.kallsyms]", kl) == 0) {
		snprintf(name, sizeof(name), "[kernel.kallsyms]");
		fn = name;
	} else if (anon_path(fn) && pid > 0) {
		snprintf(name, sizeof(name), "/tmp/perf-%ld.map", pid);
		fn = name;
	}
	int rc = pw_mapping(s->w, m->start, m->start + m->len, m->pgoff, fn,
			    bid_get(s->bids, fn), &m->map_id);
	*id = m->map_id;
	return rc;
}

/*
 * Finds the runtime address of a frame printed as `v (dso)`: v is normally
 * DSO-relative (pgoff-based); an absolute address inside the mapping is
 * accepted as well.
 */
static int resolve(struct perf_state *s, uint64_t v, const char *dso, uint64_t *loc)
{
	int kernel = v >= (1ULL << 63);
	struct proc *p = proc_get(s, kernel ? -1 : s->pid, 0);
	uint64_t map_id = 0, addr = v;
	size_t i;
	int rc, pass;

	for (pass = 0; p && pass < 2 && !map_id; pass++) {
		for (i = p->n; i-- > 0;) {
			struct mm *m = &p->mm[i];
			int same = strcmp(m->path, dso) == 0;
			if (pass == 0 && same && v >= m->pgoff && v - m->pgoff < m->len) {
				addr = m->start + (v - m->pgoff);
			} else if (v >= m->start && v - m->start < m->len && (pass == 1 || same || kernel)) {
				addr = v;
			} else {
				continue;
			}
			if ((rc = mapping_of(s, m, p->pid, &map_id)))
				return rc;
			break;
		}
	}
	return pw_location(s->w, map_id, addr, loc);
}

static int flush_sample(struct perf_state *s)
{
	int64_t values[2] = { 1, s->period };
	int rc;

	if (!s->in_sample)
		return 0;
	s->in_sample = 0;
	rc = pw_sample(s->w, s->frames, s->n_frames, s->comm, values);
	if (rc)
		return err_set(s->msg, rc, "cannot add sample %llu", (unsigned long long)s->events);
	return 0;
}

static int parse_time(const char *t, int64_t *ns)
{
	char *end;
	long long sec = strtoll(t, &end, 10);
	int64_t frac = 0;
	int digits = 0;

	if (end == t || *end != '.')
		return -1;
	for (end++; *end >= '0' && *end <= '9'; end++, digits++)
		if (digits < 9)
			frac = frac * 10 + (*end - '0');
	for (; digits < 9; digits++)
		frac *= 10;
	*ns = (int64_t)sec * 1000000000 + frac;
	return *end == ':' ? 0 : -1;
}

static int add_frame(struct perf_state *s, const char *text)
{
	const char *open, *close;
	char dso[4096];
	uint64_t v, loc;
	char *end;
	int rc;

	while (*text == ' ' || *text == '\t')
		text++;
	v = strtoull(text, &end, 16);
	if (end == text)
		return 0;
	open = strchr(end, '(');
	close = strrchr(end, ')');
	if (!open || !close || close < open || (size_t)(close - open) >= sizeof(dso))
		snprintf(dso, sizeof(dso), "[unknown]");
	else
		snprintf(dso, sizeof(dso), "%.*s", (int)(close - open - 1), open + 1);
	if (s->n_frames == MAX_FRAMES)
		return 0; /* deeper frames than any unwinder gives; keep the leaf side */
	if ((s->flags & P2P_CALLERS_IN_CALL) && s->n_frames && !s->prev_kernel && v > 0)
		v--;
	s->prev_kernel = v >= (1ULL << 63);
	if ((rc = resolve(s, v, dso, &loc)))
		return err_set(s->msg, rc, "frame %s: cannot add location", text);
	s->frames[s->n_frames++] = loc;
	return 0;
}

/* "comm with spaces  PID/TID  SEC.USEC:  PERIOD  EVENT: [ip (dso)]" */
static int on_sample_header(struct perf_state *s, char *line)
{
	char *tok[64], *save = NULL, *t;
	size_t n = 0, k, i;
	int64_t ns = 0;
	char *slash;

	for (t = strtok_r(line, " \t", &save); t && n < 64; t = strtok_r(NULL, " \t", &save))
		tok[n++] = t;
	for (k = 1; k + 3 < n; k++) {
		slash = strchr(tok[k], '/');
		if (slash && slash != tok[k] && parse_time(tok[k + 1], &ns) == 0)
			break;
	}
	if (k + 3 >= n)
		return 0; /* not a sample line */
	s->comm[0] = '\0';
	for (i = 0; i < k; i++) {
		size_t l = strlen(s->comm);
		snprintf(s->comm + l, sizeof(s->comm) - l, "%s%s", i ? " " : "", tok[i]);
	}
	s->pid = strtol(tok[k], NULL, 10);
	s->period = strtoll(tok[k + 2], NULL, 10);
	if (!s->event[0])
		snprintf(s->event, sizeof(s->event), "%s", tok[k + 3]);
	else if (strcmp(s->event, tok[k + 3]) != 0 && !s->warned_event++)
		fprintf(stderr, "perf2pprof: several events (%s, %s); all are summed\n", s->event,
			tok[k + 3]);
	if (s->events == 0 || ns < s->first_ns)
		s->first_ns = ns;
	if (ns > s->last_ns)
		s->last_ns = ns;
	s->events++;
	s->period_sum += s->period;
	s->in_sample = 1;
	s->n_frames = 0;
	if (k + 5 < n) { /* no callchain: "ip (dso)" on the same line */
		char frame[4200];
		snprintf(frame, sizeof(frame), "%s %s", tok[k + 4], tok[k + 5]);
		return add_frame(s, frame);
	}
	return 0;
}

static int script_line(void *ctx, char *line, size_t len)
{
	struct perf_state *s = ctx;
	const char *rec;
	int rc;

	if (len == 0)
		return flush_sample(s);
	if (line[0] == ' ' || line[0] == '\t')
		return s->in_sample ? add_frame(s, line) : 0;
	if ((rc = flush_sample(s)))
		return rc;
	rec = strstr(line, "PERF_RECORD_");
	if (rec) {
		if (strncmp(rec, "PERF_RECORD_MMAP", 16) == 0)
			return on_mmap(s, rec);
		if (strncmp(rec, "PERF_RECORD_FORK", 16) == 0)
			return on_fork(s, rec);
		if (strncmp(rec, "PERF_RECORD_COMM exec:", 22) == 0) {
			char *sl = strchr(line, '/');
			struct proc *p;
			if (!sl)
				return 0;
			while (sl > line && sl[-1] >= '0' && sl[-1] <= '9')
				sl--;
			p = proc_get(s, strtol(sl, NULL, 10), 0);
			if (p)
				proc_clear(p); /* the new image's MMAP2 events follow */
		}
		return 0;
	}
	return on_sample_header(s, line);
}

static int64_t file_mtime_ns(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) != 0)
		return 0;
	return (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
}

int p2p_read_perf(const char *perf_bin, const char *path, unsigned flags,
		  struct bid_cache *bids, struct pw *w, struct p2p_result *res,
		  struct err_msg *msg)
{
	char *bid_argv[] = { (char *)perf_bin, "buildid-list", "-i", (char *)path, NULL };
	char *script_argv[] = { (char *)perf_bin, "script", "-i", (char *)path, "--no-inline",
				"--show-mmap-events", "--show-task-events", "-F",
				"comm,pid,tid,time,period,event,ip,dso", NULL };
	struct perf_state *s;
	int rc;

	if (access(path, R_OK) != 0)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	s = calloc(1, sizeof(*s));
	if (!s)
		return ERR_NOMEM;
	s->w = w;
	s->bids = bids;
	s->msg = msg;
	s->flags = flags;
	if ((rc = run_lines(bid_argv, buildid_line, bids, msg)) ||
	    (rc = run_lines(script_argv, script_line, s, msg)) || (rc = flush_sample(s)))
		goto out;
	if (s->events == 0) {
		rc = err_set(msg, ERR_INVALID, "%s: no samples", path);
		goto out;
	}
	if (strncmp(s->event, "cpu-clock", 9) != 0 && strncmp(s->event, "task-clock", 10) != 0)
		fprintf(stderr, "perf2pprof: event %s is not a clock; cpu values are its periods\n",
			s->event);
	res->events = s->events;
	res->period = (s->period_sum + (int64_t)s->events / 2) / (int64_t)s->events;
	res->duration_nanos = s->last_ns - s->first_ns + res->period;
	res->time_nanos = file_mtime_ns(path) - res->duration_nanos;
out:
	state_release(s);
	free(s);
	return rc;
}

/* ---- main --------------------------------------------------------------- */

static int write_file(const char *path, const struct buf *b, struct err_msg *msg)
{
	FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "wb");
	int ok;

	if (!f)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	ok = fwrite(b->data, 1, b->len, f) == b->len;
	if (f != stdout)
		ok = (fclose(f) == 0) && ok;
	else
		ok = (fflush(f) == 0) && ok;
	return ok ? 0 : err_set(msg, ERR_IO, "%s: write failed", path);
}

static void usage(void)
{
	fprintf(stderr, "usage: perf2pprof -i perf.data -o out.pb.gz [--raw] [--perf PATH] [--quiet]\n"
			"                  [--callers-in-call]\n"
			"       perf2pprof --gperftools CPUPROFILE_FILE -o out.pb.gz [--raw] [--quiet]\n");
}

int main(int argc, char **argv)
{
	static const char *const types[] = { "samples", "count", "cpu", "nanoseconds" };
	const char *in = NULL, *gperf = NULL, *out = NULL, *perf_bin = "perf";
	struct bid_cache bids = { 0 };
	struct p2p_result res = { 0 };
	struct err_msg msg = { "" };
	struct pw_meta meta;
	int raw = 0, quiet = 0, rc, i;
	unsigned flags = 0;
	struct buf b;
	struct pw w;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-i") == 0 && i + 1 < argc)
			in = argv[++i];
		else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--gperftools") == 0 && i + 1 < argc)
			gperf = argv[++i];
		else if (strcmp(argv[i], "--perf") == 0 && i + 1 < argc)
			perf_bin = argv[++i];
		else if (strcmp(argv[i], "--raw") == 0)
			raw = 1;
		else if (strcmp(argv[i], "--quiet") == 0)
			quiet = 1;
		else if (strcmp(argv[i], "--callers-in-call") == 0)
			flags |= P2P_CALLERS_IN_CALL;
		else {
			usage();
			return 2;
		}
	}
	if (!out || (!in == !gperf)) {
		usage();
		return 2;
	}
	buf_init(&b, MAX_OUT);
	if ((rc = pw_init(&w, 2)) || (rc = pw_label_key(&w, "thread")))
		goto out;
	rc = gperf ? p2p_read_gperftools(gperf, &bids, &w, &res, &msg)
		   : p2p_read_perf(perf_bin, in, flags, &bids, &w, &res, &msg);
	if (rc)
		goto out;
	meta = (struct pw_meta){ .type_unit = types, .period_type = "cpu",
				 .period_unit = "nanoseconds", .period = res.period,
				 .time_nanos = res.time_nanos, .duration_nanos = res.duration_nanos };
	if ((rc = pw_write(&w, &meta, !raw, &b)) || (rc = write_file(out, &b, &msg)))
		goto out;
	if (!quiet)
		fprintf(stderr, "perf2pprof: %llu samples -> %zu stacks, %zu locations, %zu mappings, %zu bytes\n",
			(unsigned long long)res.events, w.n_samples, w.n_locs, w.n_maps, b.len);
out:
	if (rc)
		fprintf(stderr, "perf2pprof: %s%s%s\n", err_str(rc), msg.text[0] ? ": " : "", msg.text);
	pw_release(&w);
	bid_release(&bids);
	buf_release(&b);
	return rc ? 1 : 0;
}
