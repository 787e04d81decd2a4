/* SPDX-License-Identifier: MIT */
#include "workers.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spin.h"

struct job {
	struct job *next;
	wr_job_fn *fn;
	void *arg;
};

struct wr_workers {
	pthread_mutex_t mu;
	/*
	 * A futex word bumped (with mu held) for each job and at close; idle
	 * threads sleep on it without mu. Not a condition variable: glibc
	 * marks the mutex contended when a condvar wait takes it back, so
	 * every job would cost one more system call.
	 */
	uint32_t posted;
	struct job *head, *tail;
	pthread_t *threads;
	int nthreads;
	int max;
	int idle;   /* threads waiting for work */
	int queued; /* jobs not taken yet */
	bool closing;
	struct wr_spin spin; /* how idle threads wait before they sleep */
};

/*
 * Called with mu held, and returns with it: wait for a job or the close,
 * spinning first without mu. A thread that spins counts as idle, so a
 * poster wakes it with FUTEX_WAKE in vain at worst; one that then sleeps
 * on a word already bumped returns at once.
 */
static void
wait_for_work(struct wr_workers *w)
{
	struct wr_spin_word p = { &w->posted, __atomic_load_n(&w->posted, __ATOMIC_ACQUIRE) };
	int64_t start;

	w->idle++;
	pthread_mutex_unlock(&w->mu);
	if (!wr_spin_wait(&w->spin, wr_spin_word_moved, &p, &start)) {
		syscall(SYS_futex, &w->posted, FUTEX_WAIT_PRIVATE, p.seen, NULL, NULL, 0);
		wr_spin_blocked(&w->spin, start);
	}
	pthread_mutex_lock(&w->mu);
	w->idle--;
}

static void *
worker(void *arg)
{
	struct wr_workers *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct job *j;

		while (w->head == NULL && !w->closing) {
			wait_for_work(w);
		}
		if (w->head == NULL) {
			break;
		}
		j = w->head;
		w->head = j->next;
		w->queued--;
		if (w->head == NULL) {
			w->tail = NULL;
		}
		pthread_mutex_unlock(&w->mu);
		j->fn(j->arg);
		free(j);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int
wr_workers_open(int max, int spin_us, struct wr_workers **out)
{
	struct wr_workers *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (w == NULL) {
		return -ENOMEM;
	}
	w->threads = calloc((size_t)max, sizeof(*w->threads));
	if (w->threads == NULL) {
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->mu, NULL);
	w->max = max;
	wr_spin_init(&w->spin, spin_us);
	*out = w;
	return 0;
}

/*
 * Called with mu held. A thread woken but not yet running still counts
 * as idle: compare jobs waiting with threads waiting, or two calls that
 * come together would run one after the other.
 */
static void
grow(struct wr_workers *w)
{
	sigset_t all, old;

	if (w->queued <= w->idle || w->nthreads >= w->max) {
		return;
	}
	/* Handlers run with every signal blocked: signals are the program's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&w->threads[w->nthreads], NULL, worker, w) == 0) {
		w->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int
wr_workers_run(struct wr_workers *w, wr_job_fn *fn, void *arg)
{
	struct job *j = calloc(1, sizeof(*j));
	bool idle;

	if (j == NULL) {
		return -ENOMEM;
	}
	j->fn = fn;
	j->arg = arg;
	pthread_mutex_lock(&w->mu);
	if (w->tail != NULL) {
		w->tail->next = j;
	} else {
		w->head = j;
	}
	w->tail = j;
	w->queued++;
	grow(w);
	__atomic_add_fetch(&w->posted, 1, __ATOMIC_RELEASE);
	idle = w->idle > 0;
	pthread_mutex_unlock(&w->mu);
	/* After the unlock: the thread woken finds mu free. */
	if (idle) {
		syscall(SYS_futex, &w->posted, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return 0;
}

void
wr_workers_close(struct wr_workers *w)
{
	if (w == NULL) {
		return;
	}
	pthread_mutex_lock(&w->mu);
	w->closing = true;
	__atomic_add_fetch(&w->posted, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&w->mu);
	syscall(SYS_futex, &w->posted, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	for (int i = 0; i < w->nthreads; i++) {
		pthread_join(w->threads[i], NULL);
	}
	/* No thread was ever started: run what is queued here. */
	while (w->head != NULL) {
		struct job *j = w->head;

		w->head = j->next;
		j->fn(j->arg);
		free(j);
	}
	pthread_mutex_destroy(&w->mu);
	free(w->threads);
	free(w);
}
