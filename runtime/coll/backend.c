/* SPDX-License-Identifier: MIT */
/*
 * backend: the algorithms' point-to-point messages (p2p.h) over the
 * world's fabric endpoint, for one collective at a time: tags of the
 * group, the operation's sequence number and step; waits with the
 * operation's deadline that a member's loss ends; and the operation's
 * record in the hang report, naming the peer it waits for.
 */
#include "cgroup.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

/* A lost member's messages still in our queues are taken for at most
 * this long before the operation counts as failed. */
#define DRAIN_MS 50


/* One message of the operation; the algorithm's storage holds it. */
struct xfer {
	struct wr_fab_req req;
	int peer; /* world rank */
	bool posted;
	/* A send the peer could not take yet (-EAGAIN), posted in waitall. */
	bool deferred;
	const void *buf;
	size_t len;
	uint64_t tag;
};

static_assert(sizeof(struct xfer) <= sizeof(struct wr_coll_xfer),
	      "a backend request fits the algorithms' storage");

/* Our request in the algorithms' slot @x: slots are struct wr_coll_xfer
 * apart, not struct xfer. */
static struct xfer *
xfer_of(struct wr_coll_xfer *x)
{
	return (struct xfer *)(void *)x;
}

/* The operation under way. */
struct run {
	struct world_coll *c;
	uint32_t seq;
	long long deadline;
	struct wr_wait rec;
	/* This batch's deferred sends: a later send to the same peer waits
	 * behind them, so that a pair's messages keep their order. */
	size_t ndeferred;
	bool *deferred_to; /* [group size], once needed */
};

static uint64_t
tag_of(const struct run *r, unsigned step)
{
	return wr_coll_tag(WR_TAG_COLL, r->c->id, (r->seq & 0xFFF) << 8 | (step & 0xFF));
}

static int
be_isend(void *impl, int peer, unsigned step, const void *buf, size_t len,
	 struct wr_coll_xfer *x)
{
	struct run *r = impl;
	struct xfer *t = xfer_of(x);
	bool behind = r->ndeferred > 0 && r->deferred_to != NULL && r->deferred_to[peer];
	int rc = behind ? -EAGAIN : 0;

	memset(t, 0, sizeof(*t));
	t->peer = r->c->world[peer];
	t->tag = tag_of(r, step);
	if (rc == 0) {
		rc = wr_fab_isend(r->c->fab, t->peer, t->tag, buf, len, &t->req);
	}
	if (rc == -EAGAIN && r->deferred_to == NULL) {
		r->deferred_to = calloc((size_t)r->c->size, sizeof(*r->deferred_to));
	}
	if (rc == -EAGAIN && r->deferred_to != NULL) {
		r->deferred_to[peer] = true;
		r->ndeferred++;
		*t = (struct xfer){ .peer = t->peer, .tag = t->tag, .deferred = true,
				    .buf = buf, .len = len };
		return 0;
	}
	t->posted = rc == 0;
	return rc;
}

static int
be_irecv(void *impl, int peer, unsigned step, void *buf, size_t len,
	 struct wr_coll_xfer *x)
{
	struct run *r = impl;
	struct xfer *t = xfer_of(x);
	int rc;

	memset(t, 0, sizeof(*t));
	t->peer = r->c->world[peer];
	rc = wr_fab_irecv(r->c->fab, t->peer, tag_of(r, step), 0, buf, len, &t->req);
	t->posted = rc == 0;
	return rc;
}

/* WORLD_EPEERDEAD once a member is lost, or stopping without having
 * started this operation: the fabric's check. */
static int
check_lost(void *arg)
{
	struct run *r = arg;
	struct world_coll *c = r->c;

	if (__atomic_load_n(&c->lost, __ATOMIC_ACQUIRE) >= 0 ||
	    wr_coll_stopper(c, r->seq) >= 0) {
		return WORLD_EPEERDEAD;
	}
	return wr_prog_interrupted(c->w->prog);
}

/* Whether every posted transfer of @xs has ended. */
static bool
all_done(struct wr_coll_xfer *xs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (xfer_of(&xs[i])->posted && !wr_fab_done(&xfer_of(&xs[i])->req)) {
			return false;
		}
	}
	return true;
}

/*
 * A member is lost, but what it did before it went (a message in our
 * queues, its part in the shared area) may be all the operation needs of
 * it: one that said goodbye after its last part is no failure. Progress
 * a little and see whether @done(@arg).
 */
static bool
drained(struct run *r, bool (*done)(void *), void *arg)
{
	long long until = wr_clock_ms() + DRAIN_MS;

	do {
		wr_fab_progress(r->c->fab);
		if (done(arg)) {
			return true;
		}
	} while (wr_clock_ms() < until);
	return false;
}

/* The batch of be_waitall(), for drained(). */
struct batch {
	struct wr_coll_xfer *xs;
	size_t n;
};

static bool
batch_done(void *arg)
{
	struct batch *b = arg;

	return all_done(b->xs, b->n);
}

/* The first error among the ended transfers, or 0. */
static int
first_error(struct wr_coll_xfer *xs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct xfer *t = xfer_of(&xs[i]);

		if (t->posted && t->req.err < 0) {
			return t->req.err;
		}
	}
	return 0;
}

/* Whether a send to @peer before slot @i still waits: @i waits behind it. */
static bool
behind_another(struct wr_coll_xfer *xs, size_t i, int peer)
{
	for (size_t j = 0; j < i; j++) {
		if (xfer_of(&xs[j])->deferred && xfer_of(&xs[j])->peer == peer) {
			return true;
		}
	}
	return false;
}

/* Post the deferred sends, in order, while their peers take them: 0, or
 * the first error other than -EAGAIN. */
static int
post_deferred(struct run *r, struct wr_coll_xfer *xs, size_t n)
{
	for (size_t i = 0; i < n && r->ndeferred > 0; i++) {
		struct xfer *t = xfer_of(&xs[i]);
		int rc;

		if (!t->deferred || behind_another(xs, i, t->peer)) {
			continue;
		}
		rc = wr_fab_isend(r->c->fab, t->peer, t->tag, t->buf, t->len, &t->req);
		if (rc == -EAGAIN) {
			/* Its peer's later sends stay behind it. */
			continue;
		}
		t->deferred = false;
		r->ndeferred--;
		if (rc < 0) {
			return rc;
		}
		t->posted = true;
	}
	return 0;
}

/*
 * While some send waits for its peer to take it, the rest is waited for
 * a while at a time (1 ms, doubling to 50 ms), the sends tried again in
 * between: a peer that computes for long before it enters costs us
 * sleeps, not a spin.
 */
static int
wait_posting(struct run *r, struct wr_coll_xfer *xs, size_t n,
	     struct wr_fab_req **all)
{
	int rc = 0, retry = WR_COLL_RETRY_MS;

	while (r->ndeferred > 0 && rc == 0) {
		long long now = wr_clock_ms(), until = now + retry;

		if (r->deadline >= 0 && now >= r->deadline) {
			return -ETIMEDOUT;
		}
		for (size_t i = 0; i < n; i++) {
			struct xfer *t = xfer_of(&xs[i]);

			all[i] = t->posted ? &t->req : NULL;
			if (t->deferred) {
				__atomic_store_n(&r->rec.peer, t->peer, __ATOMIC_RELAXED);
			}
		}
		rc = wr_fab_wait(r->c->fab, all, n, r->deadline >= 0 && r->deadline < until
				 ? r->deadline : until, check_lost, r);
		if (rc == 0 || rc == -ETIMEDOUT) {
			/* All posted are done (sleep the while rather than
			 * spin), or the while passed: post again. */
			wr_coll_backoff(&retry, rc == 0);
			rc = post_deferred(r, xs, n);
		}
	}
	return rc;
}

static int
be_waitall(void *impl, struct wr_coll_xfer *xs, size_t n)
{
	struct run *r = impl;
	struct wr_fab_req *reqs[64], **all = n <= 64 ? reqs : calloc(n, sizeof(*all));
	int rc = 0;

	if (all == NULL) {
		return -ENOMEM;
	}
	if (r->ndeferred > 0) {
		rc = wait_posting(r, xs, n, all);
	}
	for (size_t i = 0; i < n; i++) {
		struct xfer *t = xfer_of(&xs[i]);

		all[i] = t->posted ? &t->req : NULL;
		/* The hang report names the peer of the first one still out. */
		if (t->posted && !wr_fab_done(&t->req) && r->rec.peer < 0) {
			__atomic_store_n(&r->rec.peer, t->peer, __ATOMIC_RELAXED);
		}
	}
	if (rc == 0) {
		rc = wr_fab_wait(r->c->fab, all, n, r->deadline, check_lost, r);
	}
	if (rc == WORLD_EPEERDEAD && r->ndeferred == 0 &&
	    drained(r, batch_done, &(struct batch){.xs = xs, .n = n})) {
		rc = 0;
	}
	if (rc == 0) {
		rc = first_error(xs, n);
	}
	for (size_t i = 0; rc < 0 && i < n; i++) {
		if (xfer_of(&xs[i])->posted) {
			wr_fab_cancel(r->c->fab, &xfer_of(&xs[i])->req);
		}
	}
	/* The batch is over: nothing of it waits to be posted any more. */
	r->ndeferred = 0;
	if (r->deferred_to != NULL) {
		memset(r->deferred_to, 0, (size_t)r->c->size * sizeof(*r->deferred_to));
	}
	__atomic_store_n(&r->rec.peer, -1, __ATOMIC_RELAXED);
	if (all != reqs) {
		free(all);
	}
	return rc;
}

/* A wait on the shared area: the hang report names the member missing. */
struct shm_wait {
	struct run *r;
	const struct wr_coll_cond *cond;
};

static int
check_shm(void *arg)
{
	struct shm_wait *s = arg;
	int q = s->cond->missing(s->cond->arg);

	__atomic_store_n(&s->r->rec.peer, q >= 0 ? s->r->c->world[q] : -1, __ATOMIC_RELAXED);
	return check_lost(s->r);
}

static int
be_wait(void *impl, const struct wr_coll_cond *cond)
{
	struct run *r = impl;
	struct shm_wait s = {.r = r, .cond = cond};
	int rc = wr_fab_wait_shared(r->c->fab, cond->ready, cond->arg, r->deadline,
				    check_shm, &s);

	if (rc == WORLD_EPEERDEAD && drained(r, cond->ready, cond->arg)) {
		rc = 0;
	}
	__atomic_store_n(&r->rec.peer, -1, __ATOMIC_RELAXED);
	return rc;
}

static void
be_wake(void *impl, int rank)
{
	struct run *r = impl;
	const int *who = rank >= 0 ? &r->c->world[rank] : r->c->world;

	wr_fab_ring(r->c->fab, who, rank >= 0 ? 1 : (size_t)r->c->size);
}

static const struct wr_coll_backend fabric_backend = {
	.isend = be_isend, .irecv = be_irecv, .waitall = be_waitall,
	.wait = be_wait, .wake = be_wake,
};

static void *
scratch(void *impl, size_t len)
{
	struct world_coll *c = ((struct run *)impl)->c;

	if (len > c->scratch_len) {
		void *p = realloc(c->scratch, len);

		if (p == NULL) {
			return NULL;
		}
		c->scratch = p;
		c->scratch_len = len;
	}
	return c->scratch;
}

int
wr_coll_run(struct world_coll *c, const char *op, uint32_t seq,
	    long long deadline_ms, wr_coll_fn *fn, void *arg)
{
	struct run r = {
		.c = c, .seq = seq, .deadline = deadline_ms,
		.rec = { .kind = WR_WAIT_COLL, .group = c->label, .name = op,
			 .peer = -1, .seq = seq },
	};
	struct wr_coll_ctx ctx = {
		.rank = c->rank, .size = c->size, .be = &fabric_backend, .impl = &r,
		.oversubscribed = c->oversubscribed, .scratch = scratch,
		.eager = wr_fab_eager_len(c->fab), .shm = c->shm,
	};
	int rc;

	wr_waits_enter(&c->w->waits, &r.rec);
	rc = fn(&ctx, arg);
	wr_waits_leave(&c->w->waits, &r.rec);
	free(r.deferred_to);
	return rc;
}
