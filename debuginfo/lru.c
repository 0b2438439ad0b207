/*
 * lru.c - the open indexes: at most max_open struct sym_index kept mapped,
 * least recently used first to go, each with the program headers that turn
 * the profile's file offsets into addresses.
 *
 * Entries live in a fixed array of max_open slots, allocated at open, and
 * never move: a query holds a pointer to its entry (and a reference) while
 * it looks addresses up without the lock.  A slot is free when its idx is
 * NULL.  An entry that must go while referenced (its debug info was
 * replaced) is marked stale: no lookup finds it again, and the last
 * reference closes it.  When every slot is referenced, a new index lives
 * in a heap entry that its only reference frees.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/log.h"
#include "debuginfo_int.h"

int debuginfo__lru_init(struct debuginfo *s)
{
	s->lru = calloc(s->max_open, sizeof(*s->lru));
	s->n_lru = 0;
	return s->lru ? 0 : ERR_NOMEM;
}

void debuginfo__lru_release(struct debuginfo *s)
{
	for (size_t i = 0; s->lru && i < s->max_open; i++) {
		assert(s->lru[i].refs == 0); /* no query holds an index at close */
		sym_index_close(s->lru[i].idx);
	}
	free(s->lru);
	s->lru = NULL;
	s->n_lru = 0;
}

/* Must hold s->mu. */
static void empty_slot(struct debuginfo *s, struct debuginfo__open_index *e)
{
	assert(e->idx && e->refs == 0 && !e->heap && s->n_lru > 0);
	sym_index_close(e->idx);
	memset(e, 0, sizeof(*e));
	s->n_lru--;
}

/* Must hold s->mu.  Returns a referenced entry or NULL. */
static struct debuginfo__open_index *find(struct debuginfo *s, const char *id)
{
	for (size_t i = 0; i < s->max_open; i++) {
		struct debuginfo__open_index *e = &s->lru[i];

		if (e->idx && !e->stale && strcmp(e->id, id) == 0) {
			e->refs++;
			e->used = ++s->tick;
			return e;
		}
	}
	return NULL;
}

void debuginfo__lru_unref(struct debuginfo *s, struct debuginfo__open_index *e)
{
	assert(e->refs > 0);
	if (e->heap) {
		assert(e->refs == 1); /* only its own query knows a heap entry */
		sym_index_close(e->idx);
		free(e);
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (--e->refs == 0 && e->stale)
		empty_slot(s, e);
	pthread_mutex_unlock(&s->mu);
}

void debuginfo__lru_drop(struct debuginfo *s, const char *id)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->max_open; i++) {
		struct debuginfo__open_index *e = &s->lru[i];

		if (!e->idx || e->stale || strcmp(e->id, id) != 0)
			continue;
		if (e->refs)
			e->stale = 1;
		else
			empty_slot(s, e);
	}
	pthread_mutex_unlock(&s->mu);
}

size_t debuginfo__lru_count(struct debuginfo *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->n_lru;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/*
 * Inserts an opened index (taking `idx`); returns the referenced entry, or
 * NULL without memory.  A full table first evicts its least recently used
 * unreferenced entry.
 */
static struct debuginfo__open_index *insert(struct debuginfo *s, const char *id,
					    struct sym_index *idx,
					    const struct sym_elf_info *layout, int kernel_map)
{
	struct debuginfo__open_index *e, *free_slot = NULL, *victim = NULL;

	pthread_mutex_lock(&s->mu);
	e = find(s, id);
	if (e) { /* another thread won the race */
		pthread_mutex_unlock(&s->mu);
		sym_index_close(idx);
		return e;
	}
	for (size_t i = 0; i < s->max_open && !free_slot; i++) {
		struct debuginfo__open_index *c = &s->lru[i];

		if (!c->idx)
			free_slot = c;
		else if (!c->refs && (!victim || c->used < victim->used))
			victim = c;
	}
	if (!free_slot && victim) {
		empty_slot(s, victim);
		free_slot = victim;
	}
	if (free_slot) {
		e = free_slot;
		s->n_lru++;
		assert(s->n_lru <= s->max_open);
	} else if ((e = calloc(1, sizeof(*e)))) {
		e->heap = 1;
	}
	if (e) {
		snprintf(e->id, sizeof(e->id), "%s", id);
		e->idx = idx;
		e->layout = *layout;
		e->kernel_map = kernel_map;
		e->refs = 1;
		e->used = ++s->tick;
	} else {
		sym_index_close(idx);
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}

/* The program headers used to turn file offsets into addresses. */
static int load_layout(struct debuginfo *s, const char *id, struct sym_elf_info *out)
{
	char path[DEBUGINFO__PATH_MAX];

	if (!debuginfo__path(s, id, "executable", path, sizeof(path)) &&
	    debuginfo__file_exists(path) && !sym_elf_inspect_file(path, out, NULL))
		return 0;
	if (!debuginfo__path(s, id, "debuginfo", path, sizeof(path)) &&
	    debuginfo__file_exists(path) && !sym_elf_inspect_file(path, out, NULL))
		return 0;
	return ERR_NOT_FOUND;
}

/* Opens the on-disk index of `id` into the LRU; ERR_NOT_FOUND if there is none. */
static int open_index(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen,
		      struct debuginfo__open_index **out)
{
	struct sym_elf_info layout;
	struct sym_index *idx;
	struct err_msg msg;
	char path[DEBUGINFO__PATH_MAX];
	int rc, kernel_map;

	if (debuginfo__path(s, id, "index", path, sizeof(path)) || !debuginfo__file_exists(path))
		return ERR_NOT_FOUND;
	err_clear(&msg);
	rc = sym_index_open(path, bid, blen, &idx, &msg);
	if (rc) {
		log_warn("debuginfo: dropping index %s: %s", path, msg.text);
		unlink(path);
		return ERR_NOT_FOUND;
	}
	memset(&layout, 0, sizeof(layout));
	kernel_map = !debuginfo__path(s, id, "kallsyms", path, sizeof(path)) &&
		     debuginfo__file_exists(path);
	if (!kernel_map && load_layout(s, id, &layout)) {
		sym_index_close(idx);
		return ERR_NOT_FOUND;
	}
	atomic_fetch_add(&s->index_opens, 1);
	*out = insert(s, id, idx, &layout, kernel_map);
	return *out ? 0 : ERR_NOMEM;
}

int debuginfo__lru_acquire(struct debuginfo *s, const char *id, const uint8_t *bid, size_t blen,
			   struct debuginfo__open_index **out)
{
	pthread_mutex_lock(&s->mu);
	*out = find(s, id);
	pthread_mutex_unlock(&s->mu);
	return *out ? 0 : open_index(s, id, bid, blen, out);
}
