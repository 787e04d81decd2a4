/* SPDX-License-Identifier: MIT */
/*
 * The caller's half of the progress thread: a user thread submits a call
 * (sent from its own thread when the link is up and nothing is queued,
 * else queued for the loop), waits for its answer (a short spin, then a
 * futex), and takes it or gives it up. The loop's half is progress.c.
 */
#include "progress.h"
#include "progint.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "spin.h"
#include "world_errors.h"

void
wr_result_finish(struct wr_result *r)
{
	json_decref(r->result);
	free(r->blob);
	r->result = NULL;
	r->blob = NULL;
}

void
wr_call_free(struct wr_call *c)
{
	if (c == NULL) {
		return;
	}
	json_decref(c->req);
	free(c->blob);
	wr_payload_release(&c->lent);
	free((void *)c->lent.iov);
	free(c->endpoints);
	wr_result_finish(&c->res);
	free(c);
}

/*
 * The blob of @c from @pl: lent pieces kept (a copy of their array) where
 * a peer may pull them, else gathered into a copy of ours. 0, -EMSGSIZE
 * or -ENOMEM; @pl is released in any case, or handed to @c.
 */
static int
take_payload(struct wr_prog *p, struct wr_call *c, struct wr_payload *pl)
{
	struct iovec *iov;
	int rc;

	c->len = wr_payload_len(pl);
	if (c->len > p->limits.blob_max) {
		/* The other side would refuse it and drop the connection. */
		c->len = 0;
		wr_payload_release(pl);
		return -EMSGSIZE;
	}
	if (pl->release != NULL && p->pull && c->dest >= 0 && c->len >= WR_PULL_MIN &&
	    pl->n <= WR_PULL_PIECES_MAX) {
		iov = malloc(pl->n * sizeof(*iov));
		if (iov == NULL) {
			wr_payload_release(pl);
			return -ENOMEM;
		}
		memcpy(iov, pl->iov, pl->n * sizeof(*iov));
		c->lent = *pl;
		c->lent.iov = iov;
		return 0;
	}
	rc = wr_payload_gather(pl, &c->blob, &c->len);
	wr_payload_release(pl);
	return rc;
}

struct wr_call *
wr_prog_submit(struct wr_prog *p, int dest, const char *endpoints,
	       json_t *req_new, struct wr_payload *pl)
{
	struct wr_call *c = calloc(1, sizeof(*c));
	struct wr_payload own = pl != NULL ? *pl : (struct wr_payload){ 0 };
	int rc;

	if (pl != NULL) {
		pl->release = NULL; /* ours now */
	}
	if (c == NULL) {
		wr_payload_release(&own);
		json_decref(req_new);
		return NULL;
	}
	c->dest = dest;
	rc = take_payload(p, c, &own);
	if (endpoints != NULL) {
		c->endpoints = strdup(endpoints);
	}
	if (req_new == NULL || rc == -ENOMEM ||
	    (endpoints != NULL && c->endpoints == NULL)) {
		json_decref(req_new);
		wr_call_free(c);
		return NULL;
	}
	c->req = req_new;
	c->res.dead_rank = -1;
	pthread_mutex_lock(&p->mu);
	if (rc < 0) {
		c->res.rc = rc;
		c->done = true;
	} else if ((p->broken && dest < 0) || p->stopping) {
		c->res.rc = WORLD_EREGISTRY;
		if (p->broken && p->gone != NULL) {
			snprintf(c->res.message, sizeof(c->res.message), "%s", p->gone);
		}
		c->done = true;
	} else if (p->queue == NULL && (dest < 0 || p->peers[dest] != NULL)) {
		/* The link is there and nothing is ahead: send from this thread. */
		wr_prog_route(p, c);
	} else {
		c->next = p->queue;
		p->queue = c;
		wr_prog_wake(p);
	}
	pthread_mutex_unlock(&p->mu);
	return c;
}

/*
 * Called with mu held: wait until a call is answered (any call: the
 * caller checks its own) or @deadline (CLOCK_MONOTONIC ms, -1: none).
 * The wait spins first (spin.h), without mu, then sleeps on the answers
 * word. A sleeper is counted with mu held, as answers are bumped, so a
 * waker either sees it or bumped the word before the sleeper looked; an
 * answer after that makes the futex wait return at once.
 */
static int
sleep_until(struct wr_prog *p, long long deadline)
{
	struct wr_spin_word a = {
		&p->answers, __atomic_load_n(&p->answers, __ATOMIC_ACQUIRE)
	};
	struct timespec ts, *at = NULL;
	int64_t start;

	if (deadline >= 0) {
		if (wr_clock_ms() >= deadline) {
			return -ETIMEDOUT;
		}
		ts.tv_sec = (time_t)(deadline / 1000);
		ts.tv_nsec = (long)(deadline % 1000) * 1000000;
		at = &ts;
	}
	pthread_mutex_unlock(&p->mu);
	wr_spin_wait(&p->spin, wr_spin_word_moved, &a, &start);
	pthread_mutex_lock(&p->mu);
	if (wr_spin_word_moved(&a)) {
		return 0;
	}
	__atomic_add_fetch(&p->sleepers, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&p->mu);
	syscall(SYS_futex, &p->answers, FUTEX_WAIT_BITSET_PRIVATE, a.seen, at,
		NULL, FUTEX_BITSET_MATCH_ANY);
	wr_spin_blocked(&p->spin, start);
	pthread_mutex_lock(&p->mu);
	__atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_ACQ_REL);
	return 0;
}

/* The deadline of the next sleep: @deadline, or sooner while an
 * interrupt check wants to be asked every WR_PROG_INTERRUPT_MS. */
static long long
slice_end(const struct wr_prog *p, long long deadline)
{
	long long next;

	if (p->interrupt == NULL) {
		return deadline;
	}
	next = wr_clock_ms() + WR_PROG_INTERRUPT_MS;
	return deadline < 0 || next < deadline ? next : deadline;
}

/* Ask the interrupt check, without mu (it may take an interpreter's lock
 * that a thread holding it waits for us to answer). */
static bool
interrupted(struct wr_prog *p)
{
	int (*check)(void *) = p->interrupt;
	bool yes;

	if (check == NULL) {
		return false;
	}
	pthread_mutex_unlock(&p->mu);
	yes = check(p->interrupt_arg) != 0;
	pthread_mutex_lock(&p->mu);
	return yes;
}

int
wr_prog_wait_any(struct wr_prog *p, struct wr_call *const *cs, size_t n,
		 int wait_ms, size_t *index)
{
	long long deadline = wait_ms < 0 ? -1 : wr_clock_ms() + wait_ms;
	int rc = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		for (size_t i = 0; i < n; i++) {
			if (cs[i] != NULL && cs[i]->done) {
				*index = i;
				pthread_mutex_unlock(&p->mu);
				return 0;
			}
		}
		if (rc < 0) {
			break;
		}
		rc = sleep_until(p, slice_end(p, deadline));
		/* A slice that ended before the deadline is not a timeout. */
		if (rc == -ETIMEDOUT && (deadline < 0 || wr_clock_ms() < deadline)) {
			rc = 0;
		}
		if (rc == 0 && interrupted(p)) {
			rc = -EINTR;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

int
wr_prog_wait(struct wr_prog *p, struct wr_call *c, int wait_ms)
{
	size_t i;

	return wr_prog_wait_any(p, &c, 1, wait_ms, &i);
}

void
wr_prog_set_interrupt(struct wr_prog *p, int (*check)(void *arg), void *arg)
{
	pthread_mutex_lock(&p->mu);
	/* The argument before the check: wr_prog_interrupted() reads both
	 * without the lock. */
	__atomic_store_n(&p->interrupt_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&p->interrupt, check, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->mu);
}

/*
 * When this thread may ask the interrupt check next. Per thread, not per
 * world: only the asking thread can be interrupted (Python runs signal
 * handlers on its main thread alone), so one thread's asking must not
 * stand in for another's. One world per process: no slot per world.
 */
static __thread long long next_ask;

int
wr_prog_interrupted(struct wr_prog *p)
{
	int (*check)(void *) = __atomic_load_n(&p->interrupt, __ATOMIC_ACQUIRE);
	long long now;

	if (check == NULL) {
		return 0;
	}
	now = wr_clock_ms();
	if (now < next_ask) {
		return 0;
	}
	next_ask = now + WR_PROG_INTERRUPT_MS;
	return check(__atomic_load_n(&p->interrupt_arg, __ATOMIC_RELAXED)) != 0 ? -EINTR : 0;
}

bool
wr_prog_answered(struct wr_prog *p, struct wr_call *c)
{
	bool done;

	pthread_mutex_lock(&p->mu);
	done = c->done;
	pthread_mutex_unlock(&p->mu);
	return done;
}

int
wr_prog_take(struct wr_prog *p, struct wr_call *c, struct wr_result *out)
{
	*out = c->res;
	c->res.result = NULL;
	c->res.blob = NULL;
	wr_call_free(c);
	return out->rc;
}

void
wr_prog_drop(struct wr_prog *p, struct wr_call *c)
{
	if (c == NULL) {
		return;
	}
	pthread_mutex_lock(&p->mu);
	if (c->done) {
		wr_call_free(c);
	} else {
		c->abandoned = true; /* the loop frees it when (if) it is answered */
	}
	pthread_mutex_unlock(&p->mu);
}

int
wr_prog_call(struct wr_prog *p, int dest, const char *endpoints, json_t *req_new,
	     const void *blob, size_t len, int wait_ms, struct wr_result *out)
{
	struct wr_payload pl = { &(struct iovec){ (void *)blob, len }, 1, NULL, NULL };
	struct wr_call *c = wr_prog_submit(p, dest, endpoints, req_new, &pl);
	int rc;

	*out = (struct wr_result){ .dead_rank = -1 };
	if (c == NULL) {
		out->rc = -ENOMEM;
		return -ENOMEM;
	}
	rc = wr_prog_wait(p, c, wait_ms);
	if (rc < 0) {
		/* -ETIMEDOUT, or -EINTR from world_set_interrupt()'s check. */
		wr_prog_drop(p, c);
		out->rc = rc;
		return rc;
	}
	return wr_prog_take(p, c, out);
}
