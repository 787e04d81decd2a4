/* SPDX-License-Identifier: MIT */
/*
 * wait: how threads wait for one endpoint's completions, and the lock
 * that serializes the endpoint (FI_THREAD_DOMAIN). A waiter polls for a
 * while, then polls and yields, then sleeps: on its own doorbell on shm
 * (which cannot block), in a bounded fi_cq_sread elsewhere, one thread at
 * a time, the others on a condition variable until that reader gets up.
 * It does not read completions itself: its owner's callbacks do.
 */
#ifndef WR_WAIT_H
#define WR_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "bell.h"

struct wr_wait;

struct wr_wait_cfg {
	int64_t spin_ns;   /* tight polling before yielding; 0: none */
	int64_t yield_ns;  /* polling with sched_yield before sleeping */
	struct wr_bell *bell;   /* own doorbell: sleep on it (shm); borrowed */
	struct fid_cq *cq;      /* else a CQ with a wait object; borrowed */
	/* With the lock held: read the CQ empty; 0 or a negative code. */
	int (*drain)(void *arg);
	/* With the lock held: what fi_cq_sread returned (@e valid for 1). */
	void (*sread_done)(void *arg, ssize_t ret, const struct fi_cq_tagged_entry *e);
	void *arg;
};

/* 0 or -errno. */
int wr_wait_create(const struct wr_wait_cfg *cfg, struct wr_wait **out);

/* Accepts NULL. No thread may be waiting. */
void wr_wait_destroy(struct wr_wait *w);

/* Take the endpoint's lock, kicking a thread out of fi_cq_sread to get
 * it; release it. */
void wr_wait_lock(struct wr_wait *w);
void wr_wait_unlock(struct wr_wait *w);

/* A large operation (whose protocol may need both sides awake) starts
 * (+1) or ends (-1): sleeps are kept short while any is outstanding. */
void wr_wait_large(struct wr_wait *w, int delta);

/*
 * Wait until @ready(@rarg) (called without the lock, so it must read
 * atomically). 0, -ETIMEDOUT at @deadline_ms (CLOCK_MONOTONIC ms; < 0:
 * none), or the nonzero code of @check(@carg), which is called at start,
 * after every sleep or interrupt and at least every 100 ms (@check may
 * be NULL).
 */
int wr_wait_until(struct wr_wait *w, bool (*ready)(void *), void *rarg,
		  long long deadline_ms, int (*check)(void *), void *carg);

/* Wake every waiter now, so that it calls its check; any thread. */
void wr_wait_interrupt(struct wr_wait *w);

#endif
