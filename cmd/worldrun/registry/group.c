/* SPDX-License-Identifier: MIT */
/*
 * group: group rendezvous, which ends when every member has joined, and the
 * group's member list, which anyone may read while some member is in it.
 */
#include "core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coreint.h"
#include "table.h"
#include "world_errors.h"

/*
 * A join that does not end done (cancelled, failed, left) un-joins its
 * rank, so a join retried after a timeout works. A group exists while
 * some member is in it.
 */

enum join_state {
	JOIN_NONE,
	JOIN_IN,
	JOIN_LEFT,
};

struct group {
	char *name;
	int *members;      /* sorted */
	size_t n;
	unsigned char *state; /* enum join_state per member */
	size_t in;         /* members JOIN_IN */
	bool complete;     /* everyone joined: no more waits */
	bool coll;         /* a collective group: see coll_conflict() */
	uint32_t id;       /* given when it completes; 0 before */
	struct ring waits; /* until complete, one per member JOIN_IN */
};

void
wr_reg_drop_group(void *p)
{
	struct group *g = p;

	free(g->name);
	free(g->members);
	free(g->state);
	free(g);
}

/* A new group @name of sorted *@members, which it takes. */
static struct group *
group_new(struct wr_reg *reg, const char *name, int **members, size_t n)
{
	struct group *g = calloc(1, sizeof(*g));

	if (g == NULL) {
		return NULL;
	}
	g->name = strdup(name);
	g->state = calloc(n, sizeof(*g->state));
	if (g->name == NULL || g->state == NULL ||
	    wr_table_put(reg->groups, name, g) < 0) {
		wr_reg_drop_group(g);
		return NULL;
	}
	g->members = *members;
	*members = NULL;
	g->n = n;
	ring_init(&g->waits);
	return g;
}

/* A pending join of @rank ended otherwise than done: it is out again. */
void
wr_reg_unjoin(struct wr_reg *reg, struct group *g, int rank)
{
	g->state[wr_reg_member_index(g->members, g->n, rank)] = JOIN_NONE;
	if (--g->in == 0) {
		wr_table_del(reg->groups, g->name);
	}
}

/*
 * Move the pending joins of @g to @to, forgetting @g in them; a group not
 * complete has no member in but those, so @g goes away.
 */
static void
group_drain(struct wr_reg *reg, struct group *g, struct ring *to)
{
	while (!ring_empty(&g->waits)) {
		struct wr_reg_wait *w = WAIT_OF(g->waits.next, node);
		size_t i = wr_reg_member_index(g->members, g->n, w->rank);

		w->group = NULL;
		ring_move(to, &w->node);
		if (!g->complete) {
			g->state[i] = JOIN_NONE;
			g->in--;
		}
	}
	if (!g->complete && g->in == 0) {
		wr_table_del(reg->groups, g->name);
	}
}

/* Group @name for a join by its member @i; if new, it takes *@sorted. */
static int
group_find(struct wr_reg *reg, const char *name, int **sorted, size_t n,
	   size_t i, struct group **out)
{
	struct group *g = wr_table_get(reg->groups, name);

	if (g != NULL && (g->n != n || g->state[i] != JOIN_NONE ||
			  memcmp(g->members, *sorted, n * sizeof(int)) != 0)) {
		return -EEXIST;
	}
	if (g == NULL && (g = group_new(reg, name, sorted, n)) == NULL) {
		return -ENOMEM;
	}
	*out = g;
	return 0;
}

/* The first member of @g not UP that has not joined, or -1. */
static int
group_lost(const struct wr_reg *reg, const struct group *g)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->state[i] == JOIN_NONE && wr_reg_absent(reg, g->members[i], NULL)) {
			return g->members[i];
		}
	}
	return -1;
}

/* @rank (member @i) joins @g, which exists and waits for it. */
static int
group_enter(struct wr_reg *reg, struct group *g, size_t i,
	    const struct req *rq)
{
	struct wr_reg_wait *w;
	struct ring done;

	if (g->in + 1 < g->n) {
		w = wr_reg_wait_new(reg, rq);
		if (w == NULL) {
			if (g->in == 0) {
				wr_table_del(reg->groups, g->name);
			}
			return -ENOMEM;
		}
		g->state[i] = JOIN_IN;
		g->in++;
		w->group = g;
		ring_insert(&g->waits, &w->node);
		return wr_reg_wait_arm(w, rq);
	}
	g->state[i] = JOIN_IN;
	g->in++;
	g->complete = true;
	g->id = ++reg->last_group_id;
	ring_init(&done);
	group_drain(reg, g, &done);
	wr_reg_wait_end_all(&done, 0, -1);
	return wr_reg_end_now(rq, 0, -1);
}

/* Is @rank in the sorted @members? */
static bool
has_member(const int *members, size_t n, int rank)
{
	return wr_reg_member_index(members, n, rank) != SIZE_MAX;
}

/*
 * Collective groups have no names of their own: members create them in
 * the same order, and a pending collective group that @rank belongs to,
 * which a member of @rank's own list (@sorted) has joined already, is the
 * same group seen otherwise by the two. Both lists are wrong; the group
 * that waits is ended WORLD_EPROTO, and so is this join.
 */
static struct group *
coll_conflict(struct wr_reg *reg, const char *name, const int *sorted,
	      size_t n, int rank)
{
	const char *key;
	size_t pos = 0;
	void *v;

	while (wr_table_next(reg->groups, &pos, &key, &v)) {
		struct group *g = v;

		if (!g->coll || g->complete || strcmp(g->name, name) == 0 ||
		    !has_member(g->members, g->n, rank)) {
			continue;
		}
		for (size_t i = 0; i < g->n; i++) {
			if (g->state[i] == JOIN_IN && has_member(sorted, n, g->members[i])) {
				return g;
			}
		}
	}
	return NULL;
}

static int
join(struct wr_reg *reg, const char *group, const int *members, size_t n,
     bool coll, const struct req *rq)
{
	struct group *g;
	struct ring doomed;
	int *sorted;
	int rc, lost;
	size_t i;

	if (reg->closing) {
		return -ECANCELED;
	}
	rc = wr_reg_sorted_members(reg, members, n, rq->rank, &sorted);
	if (rc < 0) {
		return rc;
	}
	g = coll ? coll_conflict(reg, group, sorted, n, rq->rank) : NULL;
	if (g != NULL) {
		free(sorted);
		ring_init(&doomed);
		group_drain(reg, g, &doomed);
		wr_reg_wait_end_all(&doomed, WORLD_EPROTO, -1);
		return wr_reg_end_now(rq, WORLD_EPROTO, -1);
	}
	i = wr_reg_member_index(sorted, n, rq->rank);
	rc = group_find(reg, group, &sorted, n, i, &g);
	free(sorted);
	if (rc < 0) {
		return coll && rc == -EEXIST ? WORLD_EPROTO : rc;
	}
	g->coll = coll;
	/* Nobody is in a group that just got made: it must not linger. */
	lost = group_lost(reg, g);
	if (lost >= 0) {
		if (g->in == 0) {
			wr_table_del(reg->groups, group);
		}
		return wr_reg_end_now(rq, WORLD_EPEERDEAD, lost);
	}
	return group_enter(reg, g, i, rq);
}

int
wr_reg_group_join(struct wr_reg *reg, const char *group,
		  const int *members, size_t n, int rank, bool coll,
		  wr_reg_wait_cb *cb, void *arg, struct wr_reg_wait **w)
{
	const struct req rq = {.kind = WR_REG_WAIT_JOIN, .rank = rank, .cb = cb,
			       .arg = arg, .out = w};

	if (w != NULL) {
		*w = NULL;
	}
	if (reg == NULL || group == NULL || cb == NULL || !rank_ok(reg, rank)) {
		return -EINVAL;
	}
	return join(reg, group, members, n, coll, &rq);
}

int
wr_reg_group_id(const struct wr_reg *reg, const char *group, uint32_t *id)
{
	const struct group *g = reg != NULL && group != NULL
		? wr_table_get(reg->groups, group) : NULL;

	if (g == NULL || !g->complete) {
		return -ENOENT;
	}
	*id = g->id;
	return 0;
}

int
wr_reg_group_leave(struct wr_reg *reg, const char *group, int rank)
{
	struct group *g;
	size_t i;

	if (reg == NULL || group == NULL || !rank_ok(reg, rank)) {
		return -EINVAL;
	}
	g = wr_table_get(reg->groups, group);
	if (g == NULL) {
		return -ENOENT;
	}
	i = wr_reg_member_index(g->members, g->n, rank);
	if (i == SIZE_MAX || g->state[i] != JOIN_IN) {
		return -EPERM;
	}
	wr_reg_lut_drop(reg, group, rank);
	if (!g->complete) {
		/* Leaving before the rendezvous: its join ends, un-joined. */
		struct ring *r = g->waits.next;

		while (r != &g->waits && WAIT_OF(r, node)->rank != rank) {
			r = r->next;
		}
		if (r != &g->waits) {
			wr_reg_wait_end(WAIT_OF(r, node), -ECANCELED, -1);
		}
		return 0;
	}
	g->state[i] = JOIN_LEFT;
	if (--g->in == 0) {
		wr_table_del(reg->groups, group);
	}
	return 0;
}

int
wr_reg_group_members(const struct wr_reg *reg, const char *group,
		     const int **members, size_t *n)
{
	const struct group *g;

	if (reg == NULL || group == NULL || members == NULL || n == NULL) {
		return -EINVAL;
	}
	g = wr_table_get(reg->groups, group);
	if (g == NULL) {
		return -ENOENT;
	}
	*members = g->members;
	*n = g->n;
	return 0;
}

/*
 * @rank is gone (@dead) or said goodbye: a rendezvous it can no longer
 * reach fails; in a complete group, the dead count as having left.
 */
void
wr_reg_groups_lose(struct wr_reg *reg, int rank, bool dead,
		   struct ring *doomed)
{
	const char *name;
	size_t pos = 0;
	void *v;

	while (wr_table_next(reg->groups, &pos, &name, &v)) {
		struct group *g = v;
		size_t i = wr_reg_member_index(g->members, g->n, rank);

		if (i == SIZE_MAX) {
			continue;
		}
		if (!g->complete && (dead || g->state[i] == JOIN_NONE)) {
			group_drain(reg, g, doomed);
		} else if (g->complete && dead && g->state[i] == JOIN_IN) {
			g->state[i] = JOIN_LEFT;
			if (--g->in == 0) {
				wr_table_del(reg->groups, name);
			}
		}
	}
}

int
wr_reg_join_missing(const struct wr_reg_wait *w, struct wr_reg_wait_info *out)
{
	const struct group *g = w->group;

	if (g == NULL) {
		return 0;
	}
	out->name = g->name;
	out->missing = malloc(g->n * sizeof(*out->missing));
	if (out->missing == NULL) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < g->n; i++) {
		if (g->state[i] != JOIN_IN) {
			out->missing[out->nmissing++] = g->members[i];
		}
	}
	return 0;
}
