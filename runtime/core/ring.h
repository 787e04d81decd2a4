/* SPDX-License-Identifier: MIT */
/*
 * ring: an intrusive doubly linked ring, header only. A head is a ring
 * of its own; a node is on at most one ring, and a node that is cut is a
 * ring of one, so cutting it again does nothing. What holds a node finds
 * its owner with offsetof.
 */
#ifndef WR_RING_H
#define WR_RING_H

#include <stdbool.h>

struct ring {
	struct ring *prev, *next;
};

static inline void
ring_init(struct ring *r)
{
	r->prev = r;
	r->next = r;
}

static inline bool
ring_empty(const struct ring *r)
{
	return r->next == r;
}

/* Put @n before @at (at the tail when @at is a ring's head). */
static inline void
ring_insert(struct ring *at, struct ring *n)
{
	n->prev = at->prev;
	n->next = at;
	at->prev->next = n;
	at->prev = n;
}

static inline void
ring_cut(struct ring *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	ring_init(n);
}

static inline void
ring_move(struct ring *to, struct ring *n)
{
	ring_cut(n);
	ring_insert(to, n);
}

#endif
