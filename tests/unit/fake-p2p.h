/* SPDX-License-Identifier: MIT */
/*
 * fake-p2p.h: a p2p backend (runtime/coll/p2p.h) for threads of one
 * process, header only, for test-collalgo. Requests match per (source,
 * destination, step) in posting order, and a send completes only once a
 * receive has matched it, as a rendezvous transport's large sends do; so a
 * wait that could never end times out (-ETIMEDOUT) instead, and poisons
 * the engine, as does a mismatched length (-EMSGSIZE) or the injected
 * failure of the fail_at-th post (-EIO). Shared-area waits (shmcoll.h)
 * look under the engine's lock, woken by every wake, and time out as
 * waitall does. The engine's condition variable runs on CLOCK_MONOTONIC
 * (fake_engine_init).
 */
#ifndef WR_FAKE_P2P_H
#define WR_FAKE_P2P_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/p2p.h"

/* A posted send or receive, kept in the algorithm's wr_coll_xfer. */
struct req {
	struct req *next; /* in the engine's list of unmatched ones */
	int src, dst;
	unsigned step;
	const void *sbuf;
	void *rbuf;
	size_t len;
	bool done;
	int err;
};
_Static_assert(sizeof(struct req) <= sizeof(struct wr_coll_xfer),
	       "a request fits in a wr_coll_xfer");

struct engine {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct req *sends, *recvs; /* unmatched, in posting order */
	int poison;
	int timeout_ms;
	long posts, fail_at; /* the fail_at-th post fails with -EIO */
};

struct fake {
	struct engine *e;
	int rank;
	int missing; /* what the last failed shared-area wait said was missing */
	unsigned char *scratch;
	size_t scratch_len;
	unsigned calls;
};

static struct req *
req_of(struct wr_coll_xfer *x)
{
	return (struct req *)(void *)x->space;
}

/* Unlink and return the first request of @list for (src, dst, step). */
static struct req *
take(struct req **list, int src, int dst, unsigned step)
{
	for (struct req **pp = list; *pp != NULL; pp = &(*pp)->next) {
		struct req *r = *pp;

		if (r->src == src && r->dst == dst && r->step == step) {
			*pp = r->next;
			return r;
		}
	}
	return NULL;
}

static void
append(struct req **list, struct req *r)
{
	while (*list != NULL) {
		list = &(*list)->next;
	}
	r->next = NULL;
	*list = r;
}

static void
unlink_req(struct req **list, struct req *r)
{
	for (; *list != NULL; list = &(*list)->next) {
		if (*list == r) {
			*list = r->next;
			return;
		}
	}
}

static void
match(struct engine *e, struct req *s, struct req *r)
{
	if (s->len != r->len) {
		s->err = r->err = -EMSGSIZE;
		e->poison = -EMSGSIZE;
	} else {
		memcpy(r->rbuf, s->sbuf, s->len);
	}
	s->done = r->done = true;
	pthread_cond_broadcast(&e->cv);
}

static int
post(struct fake *f, bool send, int peer, unsigned step, const void *sbuf,
     void *rbuf, size_t len, struct wr_coll_xfer *x)
{
	struct engine *e = f->e;
	struct req *r = req_of(x), *m;
	int rc = 0;

	pthread_mutex_lock(&e->mu);
	if (e->poison == 0 && e->fail_at > 0 && ++e->posts == e->fail_at) {
		e->poison = -EIO;
		pthread_cond_broadcast(&e->cv);
	}
	if (e->poison != 0 || len == 0 || step > 255) {
		rc = e->poison != 0 ? e->poison : -EINVAL;
		pthread_mutex_unlock(&e->mu);
		return rc;
	}
	*r = (struct req){.src = send ? f->rank : peer,
			  .dst = send ? peer : f->rank,
			  .step = step, .sbuf = sbuf, .rbuf = rbuf, .len = len};
	m = take(send ? &e->recvs : &e->sends, r->src, r->dst, step);
	if (m != NULL) {
		match(e, send ? r : m, send ? m : r);
	} else {
		append(send ? &e->sends : &e->recvs, r);
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

static int
fake_isend(void *impl, int peer, unsigned step, const void *buf, size_t len,
	   struct wr_coll_xfer *x)
{
	return post(impl, true, peer, step, buf, NULL, len, x);
}

static int
fake_irecv(void *impl, int peer, unsigned step, void *buf, size_t len,
	   struct wr_coll_xfer *x)
{
	return post(impl, false, peer, step, NULL, buf, len, x);
}

static struct timespec
fake_deadline(int ms)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	return dl;
}

/* 0 once all are done (or the first error); the poison, after taking
 * back what is still posted, if the group failed or the time ran out. */
static int
fake_waitall(void *impl, struct wr_coll_xfer *xs, size_t n)
{
	struct fake *f = impl;
	struct engine *e = f->e;
	struct timespec dl = fake_deadline(e->timeout_ms);
	int rc;

	pthread_mutex_lock(&e->mu);
	for (;;) {
		size_t done = 0;

		rc = 0;
		for (size_t i = 0; i < n; i++) {
			struct req *r = req_of(&xs[i]);

			done += r->done;
			rc = rc == 0 ? r->err : rc;
		}
		if (done == n) {
			pthread_mutex_unlock(&e->mu);
			return rc;
		}
		if (e->poison != 0) {
			break;
		}
		if (pthread_cond_timedwait(&e->cv, &e->mu, &dl) == ETIMEDOUT &&
		    e->poison == 0) {
			e->poison = -ETIMEDOUT;
			pthread_cond_broadcast(&e->cv);
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct req *r = req_of(&xs[i]);

		if (!r->done) {
			unlink_req(r->src == f->rank ? &e->sends : &e->recvs, r);
		}
	}
	rc = e->poison;
	pthread_mutex_unlock(&e->mu);
	return rc;
}

/* Now and then it has nothing to give, so the malloc fallback runs too. */
static void *
fake_scratch(void *impl, size_t len)
{
	struct fake *f = impl;

	if (++f->calls % 5 == 0) {
		return NULL;
	}
	if (len > f->scratch_len) {
		free(f->scratch);
		f->scratch = malloc(len);
		f->scratch_len = f->scratch != NULL ? len : 0;
	}
	return f->scratch;
}

static int
fake_wait(void *impl, const struct wr_coll_cond *cond)
{
	struct fake *f = impl;
	struct engine *e = f->e;
	struct timespec dl = fake_deadline(e->timeout_ms);
	int rc = 0;

	pthread_mutex_lock(&e->mu);
	while (!cond->ready(cond->arg)) {
		if (e->poison != 0) {
			rc = e->poison;
			f->missing = cond->missing(cond->arg);
			break;
		}
		if (pthread_cond_timedwait(&e->cv, &e->mu, &dl) == ETIMEDOUT &&
		    !cond->ready(cond->arg) && e->poison == 0) {
			e->poison = -ETIMEDOUT;
			pthread_cond_broadcast(&e->cv);
		}
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

static void
fake_wake(void *impl, int rank)
{
	(void)rank;
	struct engine *e = ((struct fake *)impl)->e;

	pthread_mutex_lock(&e->mu);
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

static const struct wr_coll_backend fake_be = {
	.isend = fake_isend, .irecv = fake_irecv, .waitall = fake_waitall,
	.wait = fake_wait, .wake = fake_wake,
};

static void
fake_engine_init(struct engine *e, int timeout_ms, long fail_at)
{
	pthread_condattr_t ca;

	*e = (struct engine){.timeout_ms = timeout_ms, .fail_at = fail_at};
	pthread_mutex_init(&e->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv, &ca);
	pthread_condattr_destroy(&ca);
}

static void
fake_engine_finish(struct engine *e)
{
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
}

#endif
