/* SPDX-License-Identifier: MIT */
/*
 * barrier: barriers as entry counters per member, with the waits sorted by
 * generation, so back-to-back barriers and ranks that run ahead need no
 * reset and no round trip.
 */
#include "core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coreint.h"
#include "table.h"
#include "world_errors.h"

/*
 * A barrier is named by its name and its member set: the same name with
 * other members is another barrier, with its own counters, so no mix of
 * member sets under one name is ever an error. Members naming every rank
 * are the same barrier as members NULL. Counters live until destroy, and
 * a cancelled barrier wait still counts its entry.
 */

struct barrier {
	char *name;
	int *members;       /* sorted; NULL: every rank, member i is rank i */
	size_t n;
	uint64_t *count;    /* entries per member */
	uint64_t min;       /* the smallest count */
	size_t at_min;      /* members whose count is min */
	uint64_t cap;       /* the smallest count of a member not UP */
	int cap_rank;
	struct ring waits;  /* sorted by generation */
};

void
wr_reg_drop_barrier(void *p)
{
	struct barrier *b = p;

	free(b->name);
	free(b->members);
	free(b->count);
	free(b);
}

/* "<length>:<name>" then "*" for every rank, or the sorted members. */
static char *
barrier_key(const char *name, const int *members, size_t n)
{
	size_t len = strlen(name);
	size_t room = len + 24 + (members == NULL ? 2 : n * 12);
	char *key = malloc(room);
	size_t at;

	if (key == NULL) {
		return NULL;
	}
	at = (size_t)snprintf(key, room, "%zu:%s", len, name);
	if (members == NULL) {
		snprintf(key + at, room - at, "*");
	}
	for (size_t i = 0; members != NULL && i < n; i++) {
		at += (size_t)snprintf(key + at, room - at, "%s%d",
				       i > 0 ? "," : "", members[i]);
	}
	return key;
}

/* The barrier (@name, *@members), made if new: it then takes *@members. */
static int
barrier_find(struct wr_reg *reg, const char *name, int **members, size_t n,
	     struct barrier **out)
{
	char *key = barrier_key(name, *members, n);
	struct barrier *b;

	b = key == NULL ? NULL : wr_table_get(reg->barriers, key);
	if (key == NULL || b != NULL) {
		free(key);
		*out = b;
		return b == NULL ? -ENOMEM : 0;
	}
	b = calloc(1, sizeof(*b));
	if (b == NULL || (b->count = calloc(n, sizeof(*b->count))) == NULL ||
	    (b->name = strdup(name)) == NULL ||
	    wr_table_put(reg->barriers, key, b) < 0) {
		free(key);
		if (b != NULL) {
			free(b->count);
			free(b->name);
		}
		free(b);
		return -ENOMEM;
	}
	free(key);
	b->members = *members;
	*members = NULL;
	b->n = n;
	b->at_min = n;
	b->cap = UINT64_MAX;
	b->cap_rank = -1;
	ring_init(&b->waits);
	for (size_t i = 0; i < n && b->cap_rank < 0; i++) {
		int m = b->members == NULL ? (int)i : b->members[i];

		if (wr_reg_absent(reg, m, b->members == NULL ? name : "")) {
			b->cap = 0;
			b->cap_rank = m;
		}
	}
	*out = b;
	return 0;
}

/*
 * Count member @i's entry and return its generation. The minimum is
 * recomputed only when its last holder moves on: O(1) amortised.
 */
static uint64_t
count_entry(struct barrier *b, size_t i)
{
	uint64_t g = ++b->count[i];

	if (g - 1 == b->min && --b->at_min == 0) {
		b->min = UINT64_MAX;
		for (size_t j = 0; j < b->n; j++) {
			if (b->count[j] < b->min) {
				b->min = b->count[j];
				b->at_min = 0;
			}
			b->at_min += b->count[j] == b->min;
		}
	}
	return g;
}

/* Insert from the tail: a new wait usually has the highest generation. */
static void
barrier_insert(struct barrier *b, struct wr_reg_wait *w)
{
	struct ring *at = &b->waits;

	while (at->prev != &b->waits && WAIT_OF(at->prev, node)->gen > w->gen) {
		at = at->prev;
	}
	ring_insert(at, &w->node);
}

/* End the waits whose generation every member has reached. */
static void
barrier_release(struct barrier *b)
{
	struct ring done;

	ring_init(&done);
	while (!ring_empty(&b->waits) &&
	       WAIT_OF(b->waits.next, node)->gen <= b->min) {
		ring_move(&done, b->waits.next);
	}
	wr_reg_wait_end_all(&done, 0, -1);
}

/* Member @i (@rank) will enter no more: doom the waits that need it. */
static void
barrier_lose(struct barrier *b, size_t i, int rank, struct ring *doomed)
{
	uint64_t c = b->count[i];

	if (c < b->cap) {
		b->cap = c;
		b->cap_rank = rank;
	}
	while (!ring_empty(&b->waits) &&
	       WAIT_OF(b->waits.prev, node)->gen > c) {
		ring_move(doomed, b->waits.prev);
	}
}

void
wr_reg_barriers_lose(struct wr_reg *reg, int rank, const char *except,
		     struct ring *doomed)
{
	const char *key;
	size_t pos = 0;
	void *v;

	while (wr_table_next(reg->barriers, &pos, &key, &v)) {
		struct barrier *b = v;
		size_t i = wr_reg_member_index(b->members, b->n, rank);
		bool spared = except != NULL && b->members == NULL &&
			      strcmp(b->name, except) == 0;

		if (i != SIZE_MAX && !spared) {
			barrier_lose(b, i, rank, doomed);
		}
	}
}

/*
 * The entry is counted and the waits it completes end before this one is
 * judged, and only then is its wait armed: so a callback can never end a
 * wait whose handle this call is about to return.
 */
static int
barrier_enter(struct barrier *b, size_t i, uint64_t *gen,
	      struct wr_reg_wait *w, const struct req *rq)
{
	uint64_t g;

	if (w->reg->life[rq->rank] != WR_RANK_UP) {
		wr_reg_wait_free(w);
		if (gen != NULL) {
			*gen = b->count[i] + 1;
		}
		return wr_reg_end_now(rq, WORLD_EPEERDEAD, rq->rank);
	}
	g = count_entry(b, i);
	if (gen != NULL) {
		*gen = g;
	}
	barrier_release(b);
	if (g <= b->min || g > b->cap) {
		wr_reg_wait_free(w);
		if (g <= b->min) {
			return wr_reg_end_now(rq, 0, -1);
		}
		return wr_reg_end_now(rq, WORLD_EPEERDEAD, b->cap_rank);
	}
	w->gen = g;
	w->barrier = b;
	barrier_insert(b, w);
	return wr_reg_wait_arm(w, rq);
}

int
wr_reg_barrier(struct wr_reg *reg, const char *name, const int *members,
	       size_t n, int rank, uint64_t *gen, wr_reg_wait_cb *cb,
	       void *arg, struct wr_reg_wait **w)
{
	const struct req rq = {.kind = WR_REG_WAIT_BARRIER, .rank = rank, .cb = cb,
			       .arg = arg, .out = w};
	struct wr_reg_wait *wt;
	struct barrier *b;
	int *sorted = NULL;
	int rc;

	if (w != NULL) {
		*w = NULL;
	}
	/* Every rank's barrier is the job's first ranks': not a spawn's. */
	if (reg == NULL || name == NULL || cb == NULL || !rank_ok(reg, rank) ||
	    (members == NULL && rank >= reg->size)) {
		return -EINVAL;
	}
	if (reg->closing) {
		return -ECANCELED;
	}
	if (members != NULL) {
		rc = wr_reg_sorted_members(reg, members, n, rank, &sorted);
		if (rc < 0) {
			return rc;
		}
	}
	/* Every rank, listed or not, is one barrier. */
	if (members == NULL || (n == (size_t)reg->size && sorted[n - 1] == reg->size - 1)) {
		free(sorted);
		sorted = NULL;
		n = (size_t)reg->size;
	}
	wt = wr_reg_wait_new(reg, &rq);
	rc = wt == NULL ? -ENOMEM : barrier_find(reg, name, &sorted, n, &b);
	free(sorted);
	if (rc < 0) {
		wr_reg_wait_free(wt);
		return rc;
	}
	return barrier_enter(b, wr_reg_member_index(b->members, b->n, rank),
			     gen, wt, &rq);
}

int
wr_reg_barrier_missing(const struct wr_reg_wait *w, struct wr_reg_wait_info *out)
{
	const struct barrier *b = w->barrier;

	out->name = b->name;
	out->gen = w->gen;
	out->missing = malloc(b->n * sizeof(*out->missing));
	if (out->missing == NULL) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < b->n; i++) {
		if (b->count[i] < w->gen) {
			out->missing[out->nmissing++] = b->members == NULL
				? (int)i : b->members[i];
		}
	}
	return 0;
}
