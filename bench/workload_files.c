/* workload_files.c - see workload_files.h. */
#include "workload_files.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/grow.h"

#define MAX_FILE (256u * 1024 * 1024)
#define MAX_ENTRIES (10u * 1000 * 1000)

/* One manifest line (NUL-terminated, no newline) into w. */
static int load_line(const char *dir, char *line, size_t lineno, struct bench_workload *w,
		     struct err_msg *msg)
{
	char path[4096], *tab1 = strchr(line, '\t'), *tab2, *end;
	struct bench_entry e = { 0 };
	struct buf b;
	int rc;

	tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
	if (!tab2)
		return err_set(msg, ERR_INVALID, "manifest line %zu: want 3 tab-separated fields",
			       lineno);
	*tab1 = *tab2 = '\0';
	errno = 0;
	e.unix_s = strtoll(tab2 + 1, &end, 10);
	if (errno || *end || end == tab2 + 1)
		return err_set(msg, ERR_INVALID, "manifest line %zu: bad time", lineno);
	if ((rc = GROW(w->e, w->cap, w->n + 1, MAX_ENTRIES, NULL)))
		return err_set(msg, rc, "manifest: %s",
			       rc == ERR_TOO_LARGE ? "too many entries" : "out of memory");
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, line) >= sizeof(path))
		return err_set(msg, ERR_INVALID, "manifest line %zu: path too long", lineno);
	buf_init(&b, MAX_FILE);
	if ((rc = buf_read_file(&b, path))) {
		buf_release(&b);
		return err_set(msg, rc, "%s: cannot read", path);
	}
	e.data = buf_detach(&b, &e.len);
	e.name = strdup(tab1 + 1);
	if (!e.name) {
		free(e.data);
		return err_set(msg, ERR_NOMEM, "manifest: out of memory");
	}
	w->e[w->n++] = e;
	w->bytes += e.len;
	return 0;
}

int bench_workload_load(const char *dir, struct bench_workload *w, struct err_msg *msg)
{
	char path[4096], *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/manifest.tsv", dir);
	f = fopen(path, "r");
	if (!f)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	while (!rc && (n = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (n && line[0] != '#')
			rc = load_line(dir, line, lineno, w, msg);
	}
	free(line);
	fclose(f);
	if (!rc && !w->n)
		rc = err_set(msg, ERR_INVALID, "%s/manifest.tsv: empty", dir);
	return rc;
}

void bench_workload_release(struct bench_workload *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->e[i].name);
		free(w->e[i].data);
	}
	free(w->e);
	memset(w, 0, sizeof(*w));
}

static uint64_t du_total;

static int du_cb(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)path, (void)ftw;
	if (type == FTW_F)
		du_total += (uint64_t)sb->st_size;
	return 0;
}

uint64_t bench_dir_bytes(const char *dir)
{
	du_total = 0;
	nftw(dir, du_cb, 16, FTW_PHYS);
	return du_total;
}

long bench_rss_kib(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, len) == 0)
			v = strtol(line + len, NULL, 10);
	fclose(f);
	return v;
}
