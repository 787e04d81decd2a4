/* SPDX-License-Identifier: MIT */
/*
 * creq: the request a started operation of a collective group returns:
 * a message (pt2pt.c) or a collective that the group's worker runs in
 * its turn (collops.c). Not installed.
 */
#ifndef WR_CREQ_H
#define WR_CREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algos.h"
#include "fabric.h"
#include "world.h"

enum wr_creq_kind { WR_CREQ_MESSAGE, WR_CREQ_COLLECTIVE };

/* One collective's arguments, as every call of it takes them. */
struct wr_cop {
	enum wr_coll_kind kind;
	const void *in;
	void *out;        /* in place (broadcast, reduce, all_reduce): the buffer */
	size_t count;
	enum world_dtype dtype;
	enum world_op op;
	int root;
	enum wr_algo algo; /* set when it runs: forced, or by size */
};

struct world_coll_req {
	struct world_coll *c;
	enum wr_creq_kind kind;
	int rc;
	/* a message */
	bool send, posted, done;
	bool deferred;    /* a send the peer could not take yet: posted later,
			   * by any wait on the group (atomic; on c->deferred) */
	int post_err;     /* why a deferred send could not be posted, or 0 */
	struct world_coll_req *dnext; /* c->deferred */
	const void *sbuf;
	size_t slen;
	uint64_t tag;
	int peer;         /* group rank, or WORLD_ANY_SOURCE */
	int source;
	struct wr_fab_req fr;
	/* a collective */
	struct wr_cop cop;
	uint64_t ticket;
	long long started_ns; /* when it was started (wr_clock_ns) */
	bool finished;    /* under c->mu */
	char why[256];    /* the message of its failure, on the worker, or "" */
	struct world_coll_req *next; /* the worker's queue */
};

/* collops.c: a started collective's wait, test and free. */
int wr_creq_wait(struct world_coll_req *r, int timeout_ms);
int wr_creq_test(struct world_coll_req *r);
void wr_creq_free(struct world_coll_req *r);

#endif
