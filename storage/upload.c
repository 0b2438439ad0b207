/*
 * upload.c - puts a tenant's sealed and compacted blocks into the bucket
 * of store_options.objstore, once each, from the maintenance pass.
 *
 * A block file never changes after its rename (storage_int.h section 9),
 * and its id is random, so its key ("blocks/<tenant>/<id>.blk", its path
 * under the data directory) names one content forever: the put is
 * create-once, and a key found there already (an upload this process made
 * before a restart, or one whose answer was lost) is the same block when
 * its size matches.  Which blocks are uploaded is kept in memory only: a
 * restarted process puts each live block once more and is told it exists.
 * A failed upload ends the pass's uploads, of every tenant (the bucket is
 * likely down; the next pass retries), so an outage costs one request's
 * retries per pass, never ingest.
 */
#include "storage_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "objstore/objstore.h"

/* 0 uploaded (or there already), else the put's error (logged). */
static int upload_block(struct store *st, struct block *b, struct store_maint_stats *ms)
{
	size_t dl = strlen(st->dir);
	struct objstore_stat os;
	struct err_msg msg;
	const char *key;
	int rc;

	if (strncmp(b->path, st->dir, dl) || b->path[dl] != '/')
		return ERR_INVALID; /* not under the data directory: never the case */
	key = b->path + dl + 1;
	err_clear(&msg);
	rc = objstore_put_file(st->objstore, key, b->path, OBJSTORE_CREATE_ONCE, &msg);
	if (rc == ERR_CONFLICT) {
		err_clear(&msg);
		rc = objstore_head(st->objstore, key, &os, &msg);
		if (!rc && os.size != b->file_size) {
			log_error("upload of block %s: the bucket holds %s with %llu bytes, the file has "
				  "%llu; left as it is", b->id_hex, key, (unsigned long long)os.size,
				  (unsigned long long)b->file_size);
			rc = ERR_CONFLICT;
		}
		if (!rc) {
			atomic_store(&b->uploaded, 1);
			ms->upload_found++;
			return 0;
		}
	}
	if (rc) {
		ms->upload_failures++;
		if (rc != ERR_CONFLICT)
			log_warn("upload of block %s: %s; retried at the next maintenance pass",
				 b->id_hex, msg.text[0] ? msg.text : err_str(rc));
		return rc;
	}
	atomic_store(&b->uploaded, 1);
	ms->uploaded_blocks++;
	ms->uploaded_bytes += b->file_size;
	return 0;
}

int store__upload_tenant(struct store *st, struct tenant *t, struct store_maint_stats *ms)
{
	struct block **bs;
	size_t n = 0;
	int rc = 0;

	if (!st->objstore)
		return 0;
	pthread_mutex_lock(&t->mu);
	bs = malloc((t->n_blocks + 1) * sizeof(*bs));
	for (size_t i = 0; bs && i < t->n_blocks; i++) {
		struct block *b = t->blocks[i];

		if (!atomic_load(&b->uploaded) && !atomic_load(&b->bad) && b->have_meta && b->path) {
			store__block_ref(b);
			bs[n++] = b;
		}
	}
	pthread_mutex_unlock(&t->mu);
	if (!bs) {
		ms->upload_failures++;
		return ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (!rc)
			rc = upload_block(st, bs[i], ms);
		store__block_put(st, bs[i]);
	}
	free(bs);
	return rc;
}
