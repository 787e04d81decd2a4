/* SPDX-License-Identifier: MIT */
#include "wait.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

/* The longest sleep on a doorbell, and while a large op is outstanding:
 * the shm SAR protocol (no CMA) moves a 32 KiB chunk per look of both
 * sides, so a sleeping peer stalls it (fabric.md, section 3). */
#define BELL_NS 2000000
#define BELL_LARGE_NS 100000
/* The longest fi_cq_sread: a contender kicks the reader out sooner. */
#define SREAD_NS 50000000
/* How often a wait calls its check at the least. */
#define CHECK_NS 100000000
/* While spinning, the clock is read once per this many polls: in a VM's
 * vDSO it costs more than a poll, and a message that lands while we read
 * it waits for the read to end. */
#define SPIN_POLLS 8

struct wr_wait {
	struct wr_wait_cfg cfg;
	pthread_mutex_t lock;
	/* Atomics, read without a lock. */
	int intr_gen;   /* bumped by wr_wait_interrupt() */
	int large;      /* large ops outstanding */
	int contenders; /* threads waiting for the lock in wr_wait_lock() */
	int reading;    /* a thread is in fi_cq_sread, holding the lock */
	/* The reader's seat: one thread at a time sleeps in fi_cq_sread,
	 * the others on @wq_cond until it gets up (wq_gen changes). */
	pthread_mutex_t wq_lock;
	pthread_cond_t wq_cond;
	bool reader_busy;
	unsigned wq_gen;
};

/* One call of wr_wait_until(). */
struct waiter {
	struct wr_wait *w;
	bool (*ready)(void *);
	void *rarg;
	int (*check)(void *);
	void *carg;
	long long deadline_ms;
	int64_t start, next_check;
	int gen;
	bool woke;
};

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int
wr_wait_create(const struct wr_wait_cfg *cfg, struct wr_wait **out)
{
	struct wr_wait *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;

	*out = NULL;
	if (w == NULL) {
		return -ENOMEM;
	}
	w->cfg = *cfg;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->wq_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wq_cond, &ca);
	pthread_condattr_destroy(&ca);
	*out = w;
	return 0;
}

void
wr_wait_destroy(struct wr_wait *w)
{
	if (w == NULL) {
		return;
	}
	pthread_cond_destroy(&w->wq_cond);
	pthread_mutex_destroy(&w->wq_lock);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* A thread asleep in fi_cq_sread with the lock is kicked out with
 * fi_cq_signal, so that no one waits a whole sread for the lock. The
 * reader checks the contenders after announcing itself, and we check
 * for a reader after announcing ourselves: one of us sees the other. */
void
wr_wait_lock(struct wr_wait *w)
{
	if (pthread_mutex_trylock(&w->lock) == 0) {
		return;
	}
	__atomic_fetch_add(&w->contenders, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->reading, __ATOMIC_SEQ_CST)) {
		fi_cq_signal(w->cfg.cq);
	}
	pthread_mutex_lock(&w->lock);
	__atomic_fetch_sub(&w->contenders, 1, __ATOMIC_SEQ_CST);
}

void
wr_wait_unlock(struct wr_wait *w)
{
	pthread_mutex_unlock(&w->lock);
}

void
wr_wait_large(struct wr_wait *w, int delta)
{
	__atomic_fetch_add(&w->large, delta, __ATOMIC_RELAXED);
}

/* Poll unless another thread is at it: that one progresses for us. */
static void
poll_once(struct wr_wait *w)
{
	if (pthread_mutex_trylock(&w->lock) == 0) {
		w->cfg.drain(w->cfg.arg);
		pthread_mutex_unlock(&w->lock);
	}
}

static bool
interrupted(const struct waiter *q)
{
	return __atomic_load_n(&q->w->intr_gen, __ATOMIC_SEQ_CST) != q->gen;
}

static bool
stay_asleep(const struct waiter *q)
{
	return !q->ready(q->rarg) && !interrupted(q);
}

/* After a sleep, an interrupt, or CHECK_NS: ask the caller's check. */
static int
checkpoint(struct waiter *q, int64_t t)
{
	int gen = __atomic_load_n(&q->w->intr_gen, __ATOMIC_SEQ_CST);

	if (!q->woke && gen == q->gen && t < q->next_check) {
		return 0;
	}
	q->woke = false;
	q->gen = gen;
	q->next_check = t + CHECK_NS;
	return q->check ? q->check(q->carg) : 0;
}

static void
sleep_bell(struct waiter *q, int64_t limit)
{
	struct wr_wait *w = q->w;
	int64_t t = __atomic_load_n(&w->large, __ATOMIC_RELAXED) > 0 ?
		BELL_LARGE_NS : BELL_NS;
	uint32_t seq = wr_bell_enter(w->cfg.bell);

	poll_once(w);
	if (stay_asleep(q)) {
		wr_bell_sleep(w->cfg.bell, seq, t < limit ? t : limit);
	}
	wr_bell_leave(w->cfg.bell);
}

/* Someone else is the reader: sleep until it gets up. */
static void
sit_out(struct waiter *q, int64_t limit)
{
	struct wr_wait *w = q->w;
	int64_t end = now_ns() + limit;
	struct timespec ts = {
		.tv_sec = (time_t)(end / 1000000000),
		.tv_nsec = (long)(end % 1000000000),
	};
	unsigned gen = w->wq_gen;

	while (gen == w->wq_gen && stay_asleep(q)) {
		if (pthread_cond_timedwait(&w->wq_cond, &w->wq_lock, &ts) != 0) {
			break;
		}
	}
}

static void
read_blocking(struct waiter *q, int64_t limit)
{
	struct wr_wait *w = q->w;
	struct fi_cq_tagged_entry e;
	int ms = (int)((limit + 999999) / 1000000);
	ssize_t ret;

	pthread_mutex_lock(&w->lock);
	__atomic_store_n(&w->reading, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->contenders, __ATOMIC_SEQ_CST) == 0 &&
	    stay_asleep(q)) {
		ret = fi_cq_sread(w->cfg.cq, &e, 1, NULL, ms > 0 ? ms : 1);
		w->cfg.sread_done(w->cfg.arg, ret, &e);
	}
	__atomic_store_n(&w->reading, 0, __ATOMIC_SEQ_CST);
	w->cfg.drain(w->cfg.arg);
	pthread_mutex_unlock(&w->lock);
}

static void
sleep_cq(struct waiter *q, int64_t limit)
{
	struct wr_wait *w = q->w;

	if (limit > SREAD_NS) {
		limit = SREAD_NS;
	}
	pthread_mutex_lock(&w->wq_lock);
	if (w->reader_busy) {
		sit_out(q, limit);
		pthread_mutex_unlock(&w->wq_lock);
		return;
	}
	w->reader_busy = true;
	pthread_mutex_unlock(&w->wq_lock);
	read_blocking(q, limit);
	pthread_mutex_lock(&w->wq_lock);
	w->reader_busy = false;
	w->wq_gen++;
	pthread_cond_broadcast(&w->wq_cond);
	pthread_mutex_unlock(&w->wq_lock);
}

/* How long the next sleep may be: up to the next check or the deadline. */
static int64_t
sleep_limit(const struct waiter *q, int64_t t)
{
	int64_t limit = q->next_check - t;

	if (q->deadline_ms >= 0 && q->deadline_ms * 1000000 - t < limit) {
		limit = q->deadline_ms * 1000000 - t;
	}
	return limit;
}

int
wr_wait_until(struct wr_wait *w, bool (*ready)(void *), void *rarg,
	      long long deadline_ms, int (*check)(void *), void *carg)
{
	struct waiter q = {
		.w = w, .ready = ready, .rarg = rarg, .check = check,
		.carg = carg, .deadline_ms = deadline_ms,
		.gen = __atomic_load_n(&w->intr_gen, __ATOMIC_SEQ_CST),
	};
	int64_t t, spent;
	int rc = check ? check(carg) : 0;
	unsigned skip = 0;

	while (rc == 0) {
		poll_once(w);
		if (ready(rarg)) {
			return 0;
		}
		if (skip > 0 && !interrupted(&q)) {
			skip--;
			continue;
		}
		t = now_ns();
		if (q.start == 0) {
			/* The wait starts at its first look at the clock,
			 * which one that is over at once never takes. */
			q.start = t;
			q.next_check = t + CHECK_NS;
		}
		rc = checkpoint(&q, t);
		if (rc == 0 && deadline_ms >= 0 && t >= deadline_ms * 1000000) {
			rc = -ETIMEDOUT;
		}
		spent = t - q.start;
		if (rc != 0 || spent < w->cfg.spin_ns) {
			skip = SPIN_POLLS - 1;
			continue;
		}
		if (spent < w->cfg.spin_ns + w->cfg.yield_ns) {
			sched_yield();
			continue;
		}
		if (w->cfg.bell) {
			sleep_bell(&q, sleep_limit(&q, t));
		} else {
			sleep_cq(&q, sleep_limit(&q, t));
		}
		q.woke = true;
	}
	return rc;
}

void
wr_wait_interrupt(struct wr_wait *w)
{
	__atomic_fetch_add(&w->intr_gen, 1, __ATOMIC_SEQ_CST);
	if (w->cfg.bell) {
		wr_bell_ring(w->cfg.bell);
	} else if (w->cfg.cq) {
		fi_cq_signal(w->cfg.cq);
	}
	pthread_mutex_lock(&w->wq_lock);
	w->wq_gen++;
	pthread_cond_broadcast(&w->wq_cond);
	pthread_mutex_unlock(&w->wq_lock);
}
