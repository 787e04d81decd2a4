/* SPDX-License-Identifier: MIT */
/*
 * coreint: what the registry core's files (core.c, kv.c, lut.c, barrier.c,
 * group.c) share: the registry and its waits, rings, and the calls that
 * start and end a wait. Private to the core: front ends use core.h only.
 */
#ifndef WR_REG_COREINT_H
#define WR_REG_COREINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "ring.h"

struct wr_table;
struct barrier;
struct group;
struct watch_link;


struct wr_reg_wait {
	struct wr_reg *reg;
	enum wr_reg_wait_kind kind;
	int rank;
	wr_reg_wait_cb *cb;
	void *arg;
	bool ended;
	struct ring node;          /* reg->keywaits, a barrier's or group's
				    * waits, or a local ring of doomed */
	struct ring all;           /* reg->all */
	struct watch_link *links;  /* kv and lut waits: one per missing key */
	size_t nlinks, missing;
	uint64_t gen;              /* barrier waits, */
	struct barrier *barrier;   /* in this barrier */
	struct group *group;       /* join waits, while pending in it */
};

struct wr_reg {
	int size;              /* the job's ranks: "every rank" */
	int nranks;            /* and those spawns added: every array's */
	enum wr_rank_life *life;
	bool *gone;            /* rank_dead seen, even for a DONE rank */
	bool *stopping;        /* waits in the stop barrier (stop_name) */
	char **stop_note;      /* [rank]: what it said as it stopped, or NULL */
	char *stop_name;
	size_t *owned;         /* LUT entries per rank */
	struct wr_table *kv;   /* key -> struct kv_val */
	size_t kv_bytes;       /* what the keys and values cost, */
	size_t kv_max;         /* at most this */
	size_t value_max;      /* the largest value */
	struct wr_table *kv_watch;
	struct wr_table *lut[2];       /* group -> table of key -> int owner */
	struct wr_table *lut_watch[2]; /* lut_key() -> struct watch */
	struct wr_table *barriers;     /* barrier_key() -> struct barrier */
	struct wr_table *groups;       /* name -> struct group */
	uint32_t last_group_id; /* the id the last complete group got */
	struct ring all;       /* every pending wait */
	struct ring keywaits;  /* kv and lut waits: any death ends them */
	struct ring deathwaits; /* deaths.wait: the next loss answers them */
	/* The ranks that died, said goodbye or began to stop, in order: each
	 * rank at most once stopping and once gone (a DONE rank never dies),
	 * so [2 * nranks]. */
	int *lost_order;
	enum wr_loss *lost_kind;
	int nlost;
	size_t pending;
	bool closing;
};

/* Who waits, and how to tell them: the tail every wait call shares. */
struct req {
	enum wr_reg_wait_kind kind;
	int rank;
	wr_reg_wait_cb *cb;
	void *arg;
	struct wr_reg_wait **out;
};

#define WAIT_OF(r, field) \
	((struct wr_reg_wait *)(void *)((char *)(r) - \
					offsetof(struct wr_reg_wait, field)))

static inline bool
rank_ok(const struct wr_reg *reg, int rank)
{
	return rank >= 0 && rank < reg->nranks;
}

/* ---- members (core.c) ---- */

/* The index of @rank in sorted @members (NULL: every rank), or SIZE_MAX. */
size_t wr_reg_member_index(const int *members, size_t n, int rank);

/* A sorted copy of @members, checked: in range, no twice, @rank in it. */
int wr_reg_sorted_members(const struct wr_reg *reg, const int *members,
			  size_t n, int rank, int **out);

/* ---- waits (core.c) ---- */

/* A wait for @rq, on no ring yet; NULL on ENOMEM. */
struct wr_reg_wait *wr_reg_wait_new(struct wr_reg *reg, const struct req *rq);

/* Frees a wait that was never armed. Accepts NULL. */
void wr_reg_wait_free(struct wr_reg_wait *w);

/* The wait is on its ring already: make it pending. Returns 0. */
int wr_reg_wait_arm(struct wr_reg_wait *w, const struct req *rq);

/* A request that ends in the call that made it: no handle. Returns 0. */
int wr_reg_end_now(const struct req *rq, int err, int dead);

/* Take @w off everything, then tell its owner: after this, it is gone. */
void wr_reg_wait_end(struct wr_reg_wait *w, int err, int dead);

/* End every wait on @r; callbacks may end or add others meanwhile. */
void wr_reg_wait_end_all(struct ring *r, int err, int dead);

/* @key now exists in the space @tab watches: wake its waits. */
void wr_reg_watch_fire(struct wr_table *tab, const char *key);

/*
 * Wait for @keys, those of them not in @have (NULL: all of them) being
 * watched in @watch. The wait sits on reg->keywaits, so deaths end it.
 */
int wr_reg_keys_wait(struct wr_reg *reg, struct wr_table *watch,
		     const struct wr_table *have, const char *const *keys,
		     size_t n, const struct req *rq);

/* ---- what the other files give core.c ---- */

/* kv.c: the destructor of the values in reg->kv. */
void wr_reg_drop_kv(void *p);

/* lut.c: release @rank's entries in @group (NULL: in every group). */
void wr_reg_lut_drop(struct wr_reg *reg, const char *group, int rank);

/* barrier.c: the destructor of the barriers in reg->barriers. */
void wr_reg_drop_barrier(void *p);

/* barrier.c: @rank will enter no more: move the waits needing it to @doomed. */
/* @rank enters no more of the barriers it is a member of, but barrier
 * @except of every rank (NULL: none): doom the waits that need it. */
void wr_reg_barriers_lose(struct wr_reg *reg, int rank, const char *except,
			  struct ring *doomed);

/* Whether @rank will never arrive: not UP, or stopping, and @barrier
 * (NULL: a group) is not the barrier it stops in. */
bool wr_reg_absent(const struct wr_reg *reg, int rank, const char *barrier);

/* barrier.c: the members that have not entered @w's generation. */
int wr_reg_barrier_missing(const struct wr_reg_wait *w,
			   struct wr_reg_wait_info *out);

/* group.c: the group @w joins and its members not joined yet. */
int wr_reg_join_missing(const struct wr_reg_wait *w,
			struct wr_reg_wait_info *out);

/* group.c: the destructor of the groups in reg->groups. */
void wr_reg_drop_group(void *p);

/* group.c: a pending join of @rank ended otherwise than done: it is out. */
void wr_reg_unjoin(struct wr_reg *reg, struct group *g, int rank);

/*
 * group.c: @rank is gone (@dead) or said goodbye: joins it fails move to
 * @doomed; in a complete group, the dead count as having left.
 */
void wr_reg_groups_lose(struct wr_reg *reg, int rank, bool dead,
			struct ring *doomed);

#endif
