/* SPDX-License-Identifier: MIT */
/*
 * cgroup: a collective group as libworld's collective files see it
 * (cgroup.c makes it; backend.c moves its bytes over the world's fabric
 * endpoint; pt2pt.c and collops.c are its calls). Not installed.
 */
#ifndef WR_CGROUP_H
#define WR_CGROUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "algos.h"
#include "fabric.h"
#include "progress.h"
#include "waits.h"
#include "worldint.h"

/*
 * Tags, 64 bits: [63:60] kind, [59:40] the group's id (20 bits of the
 * registry's), [39:20] the sender's world rank (the transport's), [19:0]
 * the user's tag, or a collective's sequence number (12 bits) and step
 * (8 bits). A receive never ignores kind or group bits, so collectives
 * never match user messages, nor one group another's.
 */
enum wr_tag_kind { WR_TAG_USER = 0, WR_TAG_COLL = 1 };

static inline uint64_t
wr_coll_tag(enum wr_tag_kind kind, uint32_t gid, uint32_t low)
{
	return (uint64_t)kind << 60 | (uint64_t)(gid & 0xFFFFF) << 40 | (low & 0xFFFFF);
}

struct world_coll {
	struct world *w;
	struct world_coll *next; /* the world's list, under w->mu */
	char *name;              /* the registry's name of the group */
	uint32_t id;
	int rank, size;
	int *world;              /* [size]: each member's world rank */
	struct wr_fab *fab;      /* the world's; NULL in a group of one */
	bool oversubscribed;
	enum wr_algo forced[WR_COLL_NKINDS];
	char label[24];          /* "coll N", for hang reports */
	/* Turns: operations run one at a time, in the order started. */
	pthread_mutex_t mu;
	pthread_cond_t turn;
	uint64_t next_ticket, serving;
	uint32_t seq;            /* the next collective's sequence number */
	int poison;              /* 0, or what every later call returns */
	int poison_rank;         /* its rank, for WORLD_EPEERDEAD */
	int lost;                /* atomic: a member lost (world rank), or -1 */
	/* atomic: the member that began to stop having started the fewest
	 * operations, as (operations << 32 | world rank), or UINT64_MAX */
	uint64_t stopped;
	struct wr_prog_watch watch;
	struct wr_cworker *worker; /* runs started collectives, once needed */
	int started_ms;          /* their timeout (world_coll_set_timeout) */
	int nstarted;            /* their requests not freed yet, under mu */
	/* Sends the fabric could not take yet, in the order posted, under
	 * mu; ndeferred atomic (pt2pt.c). */
	struct world_coll_req *deferred;
	int ndeferred;
	struct wr_shm *shm;      /* the members' shared area, or NULL (shmseg.h) */
	void *scratch;           /* the algorithms' reusable buffer */
	size_t scratch_len;
};

/* The most started collectives of a group whose requests are not freed:
 * past it, starting one more is -EAGAIN (the worker's queue is bounded). */
#define WR_COLL_STARTED_MAX 1024

/* Wait for the turn of ticket @t; called with c->mu held. */
void wr_coll_await_turn(struct world_coll *c, uint64_t t);
/* The turn is over; called with c->mu held. */
void wr_coll_next_turn(struct world_coll *c);

/* Poison @c with @rc (for WORLD_EPEERDEAD, @rank): its first error stays. */
void wr_coll_poison(struct world_coll *c, int rc, int rank);

/* @rc, noted for world_last_failure() when it is an error (for
 * WORLD_EPEERDEAD, lost @rank). */
int wr_coll_note(int rc, int rank);

/* A send its peer cannot take yet is tried again after a while: the
 * first try after WR_COLL_RETRY_MS, each next after twice as long, at most
 * 50 ms. wr_coll_backoff() sleeps the current while (if @sleep: a caller
 * that waited it out otherwise does not) and doubles it. */
#define WR_COLL_RETRY_MS 1
void wr_coll_backoff(int *retry_ms, bool sleep);

/* What a poisoned group answers, noted for world_last_failure(). */
int wr_coll_poisoned(struct world_coll *c);

/* The world rank of a member that began to stop before it started
 * operation @seq, which it will never join; or -1. */
int wr_coll_stopper(const struct world_coll *c, uint32_t seq);

/* WORLD_EPEERDEAD for operation @seq (@op) that member @rank, stopping,
 * will never join, noted for world_last_failure() (and copied to @why
 * if not NULL). */
int wr_coll_note_stopper(const struct world_coll *c, const char *op, uint32_t seq,
			 int rank, char why[256]);

/*
 * Run one collective's algorithm over the fabric (backend.c): @fn with
 * @arg, sequence number @seq, deadline @deadline_ms (< 0: none), recorded
 * as a wait named @op. Called on the operation's turn.
 */
typedef int wr_coll_fn(struct wr_coll_ctx *ctx, void *arg);
int wr_coll_run(struct world_coll *c, const char *op, uint32_t seq,
		long long deadline_ms, wr_coll_fn *fn, void *arg);

/* collops.c: the algorithm collective @k of @bytes (as wr_algo_pick
 * counts them) runs with in @c: forced by WORLD_COLL_ALGO, or by size. */
enum wr_algo wr_coll_pick(const struct world_coll *c, enum wr_coll_kind k,
			  size_t bytes);

/* collops.c: stop the thread that runs started collectives, if any. */
void wr_cworker_stop(struct world_coll *c);

#endif
