/*
 * dlist.h - an intrusive doubly linked list, for LRU orders: the entry
 * embeds a struct dlist_node, the owner a struct dlist, and dlist_entry()
 * goes from a node back to its entry.  No allocation; the caller locks.
 */
#ifndef UNHEX_BASE_DLIST_H
#define UNHEX_BASE_DLIST_H

#include <assert.h>
#include <stddef.h>

struct dlist_node {
	struct dlist_node *prev, *next;
};

struct dlist {
	struct dlist_node *head, *tail; /* both NULL when empty */
};

/* The entry of type `type` whose member `member` is the node n (not NULL). */
#define dlist_entry(n, type, member) ((type *)(void *)((char *)(n) - offsetof(type, member)))

/* Takes n out of l; n must be on l. */
static inline void dlist_unlink(struct dlist *l, struct dlist_node *n)
{
	assert(n->prev ? n->prev->next == n : l->head == n);
	assert(n->next ? n->next->prev == n : l->tail == n);
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	n->prev = n->next = NULL;
}

/* Puts n, on no list, first on l. */
static inline void dlist_push_front(struct dlist *l, struct dlist_node *n)
{
	n->prev = NULL;
	n->next = l->head;
	if (l->head)
		l->head->prev = n;
	l->head = n;
	if (!l->tail)
		l->tail = n;
}

/* Moves n, on l, to its front. */
static inline void dlist_move_front(struct dlist *l, struct dlist_node *n)
{
	dlist_unlink(l, n);
	dlist_push_front(l, n);
}

#endif
