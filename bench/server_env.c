/* server_env.c - see server_env.h. */
#include "server_env.h"

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "debuginfo/debuginfo.h"
#include "query/query.h"
#include "storage/storage.h"

int bench_server_open(const char *data, int no_sym, int no_memo, struct bench_server *s,
		      struct err_msg *msg)
{
	struct store_options so = { 0 };
	struct debuginfo_options sy = { 0 };
	int rc;

	memset(s, 0, sizeof(*s));
	so.dir = data;
	if ((rc = store_open(&so, &s->st, msg)))
		return rc;
	if (!no_sym) {
		sy.data_dir = data;
		sy.debuginfod_urls = "";
		if ((rc = debuginfo_open(s->st, &sy, &s->sym, msg)))
			goto fail;
		if (!no_memo && (rc = query_symmemo_new(s->sym, 0, &s->memo))) {
			err_set(msg, rc, "symbolization memo");
			goto fail;
		}
	}
	return 0;
fail:
	bench_server_close(s);
	return rc;
}

void bench_server_close(struct bench_server *s)
{
	query_symmemo_free(s->memo);
	debuginfo_close(s->sym);
	store_close(s->st);
	memset(s, 0, sizeof(*s));
}

int bench_write_file(const char *path, const struct buf *b, struct err_msg *msg)
{
	FILE *f = fopen(path, "wb");

	if (!f || (b->len && fwrite(b->data, 1, b->len, f) != b->len)) {
		if (f)
			fclose(f);
		return err_set(msg, ERR_IO, "cannot write %s", path);
	}
	if (fclose(f))
		return err_set(msg, ERR_IO, "cannot write %s", path);
	return 0;
}
