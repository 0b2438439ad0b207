/*
 * backup.c - `unhex backup` and `unhex restore`.  A running server makes
 * its own backup (POST /api/v1/admin/backup): only the process that holds
 * the store can take a RocksDB checkpoint while it writes, and only it can
 * hold maintenance off so blocks and their records agree.  A stopped
 * store is backed up by opening it here.  Restore copies a backup into a
 * new data directory and opens it once to prove it is a store.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"
#include "storage/storage.h"

static void backup_help(FILE *f)
{
	fputs("usage: unhex backup --to DIR [--server URL] [--cacert FILE]\n"
	      "       unhex backup --to DIR --data DATA_DIR\n"
	      "\n"
	      "Writes a consistent copy of a store into the new directory DIR: the head as\n"
	      "a RocksDB checkpoint, the block files and the debug files.  With --server\n"
	      "(default http://127.0.0.1:4040) the running server writes it, so DIR is a\n"
	      "path on the server's machine, writable by the server (needs the admin\n"
	      "scope); ingest goes on meanwhile.  With --data the store must not be in use.\n"
	      "DIR appears only when complete (DIR.partial until then).  Files are hard\n"
	      "links where DIR is on the store's file system: copy DIR elsewhere to survive\n"
	      "a disk failure.  docs/operations.md has more.\n",
	      f);
}

static void restore_help(FILE *f)
{
	fputs("usage: unhex restore --from BACKUP --data DIR\n"
	      "\n"
	      "Copies the backup BACKUP into the new data directory DIR (DIR.partial until\n"
	      "complete), then opens it once and prints what it holds.  Start the server\n"
	      "with --data DIR afterwards.\n",
	      f);
}

struct totals {
	uint64_t tenants, profiles, samples;
};

static int add_tenant(void *ctx, const struct store_tenant_stats *s)
{
	struct totals *t = ctx;

	t->tenants++;
	t->profiles += s->profiles;
	t->samples += s->samples;
	return 0;
}

static int backup_remote(const char *server, const char *cacert, const char *to)
{
	struct cli_server srv;
	struct cli_http *http = NULL;
	struct cli_request req = { .method = "POST", .timeout_ms = 3600 * 1000 };
	struct buf path, body;
	struct err_msg msg;
	int status = 0, rc;

	err_clear(&msg);
	if (cli_server_parse(server, cacert, &srv, &msg))
		return cli_usage_error("backup", "%s", msg.text);
	buf_init(&path, 8192);
	buf_init(&body, 1 << 20);
	rc = buf_puts(&path, "/api/v1/admin/backup?to=");
	if (!rc)
		rc = cli_url_encode(&path, to);
	req.path = path.data;
	if (!rc)
		rc = cli_http_open(&srv, &http, &msg);
	if (!rc)
		rc = cli_http_request(http, &req, &status, &body, &msg);
	cli_http_close(http);
	buf_release(&path);
	if (rc || status != 200) {
		if (rc)
			fprintf(stderr, "unhex backup: %s\n", msg.text[0] ? msg.text : err_str(rc));
		else
			fprintf(stderr, "unhex backup: HTTP %d: %s", status, body.data ? body.data : "\n");
		buf_release(&body);
		return CLI_EXIT_FAIL;
	}
	fputs(body.data, stdout);
	buf_release(&body);
	return CLI_EXIT_OK;
}

static int backup_local(const char *data, const char *to)
{
	struct store_options so = { 0 };
	struct store_backup_stats bs;
	struct store *st = NULL;
	struct err_msg msg;
	int rc;

	err_clear(&msg);
	so.dir = data;
	if (store_open(&so, &st, &msg)) {
		fprintf(stderr, "unhex backup: cannot open %s: %s (a running server backs up "
			"with --server)\n", data, msg.text);
		return CLI_EXIT_FAIL;
	}
	rc = store_backup(st, to, &bs, &msg);
	store_close(st);
	if (rc) {
		fprintf(stderr, "unhex backup: %s\n", msg.text[0] ? msg.text : err_str(rc));
		return CLI_EXIT_FAIL;
	}
	{
		struct buf out;

		buf_init(&out, 16384);
		buf_puts(&out, "{\"path\":");
		buf_put_json_str(&out, to, strlen(to));
		buf_printf(&out, ",\"files\":%llu,\"bytes\":%llu,\"linked\":%llu,\"ms\":%lld}\n",
			   (unsigned long long)bs.files, (unsigned long long)bs.bytes,
			   (unsigned long long)bs.linked, (long long)(bs.ns / 1000000));
		fputs(out.data ? out.data : "", stdout);
		buf_release(&out);
	}
	return CLI_EXIT_OK;
}

enum { O_TO = 256, O_FROM, O_DATA, O_SERVER, O_CACERT, O_HELP };

static const struct option opts[] = {
	{ "to", required_argument, NULL, O_TO },
	{ "from", required_argument, NULL, O_FROM },
	{ "data", required_argument, NULL, O_DATA },
	{ "server", required_argument, NULL, O_SERVER },
	{ "cacert", required_argument, NULL, O_CACERT },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

int cli_backup(int argc, char **argv)
{
	const char *to = NULL, *data = NULL, *server = NULL, *cacert = NULL;
	char abs_to[PATH_MAX];
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_TO: to = optarg; break;
		case O_DATA: data = optarg; break;
		case O_SERVER: server = optarg; break;
		case O_CACERT: cacert = optarg; break;
		case O_HELP: backup_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("backup", argv);
		}
	}
	if (optind < argc)
		return cli_extra_argument("backup", argv);
	if (!to)
		return cli_usage_error("backup", "--to DIR is required");
	if (data && server)
		return cli_usage_error("backup", "give --data or --server, not both");
	if (data) {
		/* The store writes it: an absolute path, relative to here. */
		if (to[0] != '/') {
			char cwd[PATH_MAX];
			if (!getcwd(cwd, sizeof(cwd)) ||
			    snprintf(abs_to, sizeof(abs_to), "%s/%s", cwd, to) >= (int)sizeof(abs_to))
				return cli_usage_error("backup", "--to: path too long");
			to = abs_to;
		}
		return backup_local(data, to);
	}
	if (to[0] != '/')
		return cli_usage_error("backup", "--to: the server writes the backup, so give an "
				       "absolute path on its machine");
	return backup_remote(server ? server : "http://127.0.0.1:4040", cacert, to);
}

int cli_restore(int argc, char **argv)
{
	const char *from = NULL, *data = NULL;
	struct store_options so = { 0 };
	struct store_backup_stats bs;
	struct totals t = { 0, 0, 0 };
	struct store *st = NULL;
	struct err_msg msg;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_FROM: from = optarg; break;
		case O_DATA: data = optarg; break;
		case O_HELP: restore_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("restore", argv);
		}
	}
	if (optind < argc)
		return cli_extra_argument("restore", argv);
	if (!from || !data)
		return cli_usage_error("restore", "--from BACKUP and --data DIR are required");
	err_clear(&msg);
	if (store_restore(from, data, &bs, &msg)) {
		fprintf(stderr, "unhex restore: %s\n", msg.text);
		return CLI_EXIT_FAIL;
	}
	so.dir = data;
	so.read_only = 1;
	rc = store_open(&so, &st, &msg);
	if (!rc)
		rc = store_stats(st, add_tenant, &t, &msg);
	store_close(st);
	if (rc) {
		fprintf(stderr, "unhex restore: %s was copied but does not open: %s\n", data,
			msg.text);
		return CLI_EXIT_FAIL;
	}
	printf("restored %s into %s: %llu files beside the head, %llu bytes; %llu tenants, %llu "
	       "profiles, %llu samples\n", from, data, (unsigned long long)bs.files,
	       (unsigned long long)bs.bytes, (unsigned long long)t.tenants,
	       (unsigned long long)t.profiles, (unsigned long long)t.samples);
	return CLI_EXIT_OK;
}
