/*
 * recover.c - `unhex recover --data DIR`: opens a store whose write-ahead
 * log is damaged, keeping the writes before the damage.  The server refuses
 * such a store (storage.h, wal_recover) rather than drop what follows the
 * damage silently; this command is the operator's explicit decision.  It
 * says what it drops, keeps a copy of the logs beside the store, and leaves
 * a store that opens normally.  The server must be stopped.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "cli.h"
#include "storage/storage.h"

static void recover_help(FILE *f)
{
	fputs("usage: unhex recover --data DIR [--dry-run]\n"
	      "\n"
	      "Opens the store in DIR whose write-ahead log is damaged (the server refuses\n"
	      "it and names the file), keeping every write before the damage and dropping\n"
	      "the rest.  Prints where the damage is and what is dropped; copies the logs\n"
	      "to DIR/wal-damaged-<UTC time>/ first, so nothing is deleted.  --dry-run only\n"
	      "prints.  Stop the server first.  docs/operations.md has more.\n",
	      f);
}

static void print_report(const char *dir, const struct store_wal_report *r)
{
	printf("write-ahead logs of %s: %llu files, %llu bytes, %llu intact writes\n", dir,
	       (unsigned long long)r->files, (unsigned long long)r->bytes,
	       (unsigned long long)r->batches);
	if (!r->file[0]) {
		printf("no damage found%s\n",
		       r->torn_tail ? " (the newest log ends in a write cut short by a crash, "
				      "which RocksDB ignores)" : "");
		return;
	}
	printf("damage: %s/%s at byte %llu: %s\n", dir, r->file, (unsigned long long)r->offset,
	       r->why);
	printf("kept: the writes up to sequence number %llu\n", (unsigned long long)r->last_seq);
	if (r->batches_after)
		printf("dropped: %llu intact writes after the damage (%llu entries, %llu bytes, "
		       "sequence numbers %llu..%llu; %llu of the later logs hold some), and the "
		       "damaged write\n",
		       (unsigned long long)r->batches_after, (unsigned long long)r->entries_after,
		       (unsigned long long)r->bytes_after,
		       (unsigned long long)r->first_seq_after,
		       (unsigned long long)r->last_seq_after, (unsigned long long)r->files_after);
	else
		printf("dropped: the damaged write only (no intact write follows it)\n");
}

/* Copies every *.log of `dir` into a new directory `keep`. */
static int keep_logs(const char *dir, const char *keep, struct err_msg *msg)
{
	char from[4096], to[4096];
	struct dirent *e;
	DIR *d;
	int rc = 0, fd;

	if (mkdir(keep, 0700))
		return err_set(msg, ERR_IO, "%s: %s", keep, strerror(errno));
	d = opendir(dir);
	if (!d)
		return err_set(msg, ERR_IO, "%s: %s", dir, strerror(errno));
	while (!rc && (e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".log") != 0 || e->d_name[0] < '0' ||
		    e->d_name[0] > '9')
			continue;
		if ((size_t)snprintf(from, sizeof(from), "%s/%s", dir, e->d_name) >= sizeof(from) ||
		    (size_t)snprintf(to, sizeof(to), "%s/%s", keep, e->d_name) >= sizeof(to)) {
			rc = err_set(msg, ERR_TOO_LARGE, "%s/%s: path too long", keep, e->d_name);
			break;
		}
		rc = store_copy_file(from, to, 0600, NULL, msg);
		if (rc == ERR_NOT_FOUND)
			rc = err_set(msg, ERR_IO, "%s: vanished while being kept", from);
	}
	closedir(d);
	fd = open(keep, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		if (!rc && fsync(fd))
			rc = err_set(msg, ERR_IO, "%s: %s", keep, strerror(errno));
		close(fd);
	}
	return rc;
}

struct totals {
	uint64_t profiles, samples;
};

static int add_tenant(void *ctx, const struct store_tenant_stats *s)
{
	struct totals *t = ctx;

	t->profiles += s->profiles;
	t->samples += s->samples;
	return 0;
}

enum { O_DATA = 256, O_DRY, O_HELP };

static const struct option recover_opts[] = {
	{ "data", required_argument, NULL, O_DATA },
	{ "dry-run", no_argument, NULL, O_DRY },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

int cli_recover(int argc, char **argv)
{
	struct store_options so = { 0 };
	struct store_wal_report r;
	struct store *st = NULL;
	struct totals tot = { 0, 0 };
	struct err_msg msg;
	const char *data = NULL;
	char keep[4096], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int c, dry = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", recover_opts, NULL)) != -1) {
		switch (c) {
		case O_DATA: data = optarg; break;
		case O_DRY: dry = 1; break;
		case O_HELP: recover_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("recover", argv);
		}
	}
	if (optind < argc)
		return cli_extra_argument("recover", argv);
	if (!data)
		return cli_usage_error("recover", "--data DIR is required");
	err_clear(&msg);
	if (store_wal_check(data, &r, &msg)) {
		fprintf(stderr, "unhex recover: %s\n", msg.text);
		return CLI_EXIT_FAIL;
	}
	print_report(data, &r);
	if (dry)
		return CLI_EXIT_OK;
	if (r.file[0]) {
		gmtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
		snprintf(keep, sizeof(keep), "%s/wal-damaged-%s", data, stamp);
		if (keep_logs(data, keep, &msg)) {
			fprintf(stderr, "unhex recover: cannot keep a copy of the logs: %s\n",
				msg.text);
			return CLI_EXIT_FAIL;
		}
		printf("copied the logs to %s\n", keep);
	}
	so.dir = data;
	so.wal_recover = r.file[0] != 0;
	if (store_open(&so, &st, &msg)) {
		fprintf(stderr, "unhex recover: cannot open %s: %s\n", data, msg.text);
		return CLI_EXIT_FAIL;
	}
	if (store_stats(st, add_tenant, &tot, &msg)) {
		fprintf(stderr, "unhex recover: %s\n", msg.text);
		store_close(st);
		return CLI_EXIT_FAIL;
	}
	store_close(st);
	printf("%s: the store opens%s; it holds %llu profiles, %llu samples\n", data,
	       r.file[0] ? " again with the writes before the damage" : " as it is",
	       (unsigned long long)tot.profiles, (unsigned long long)tot.samples);
	return CLI_EXIT_OK;
}
