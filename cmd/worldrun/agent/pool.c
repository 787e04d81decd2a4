/* SPDX-License-Identifier: MIT */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

struct wr_pool {
	pthread_mutex_t mu;
	pthread_cond_t work;  /* a loop was posted, or closing */
	pthread_cond_t done;  /* a thread finished its share */
	pthread_t *threads;
	int nthreads;
	int started;
	/* The current loop, guarded by mu except next. */
	wr_pool_fn *fn;
	void *arg;
	int n;
	int next;        /* taken with __atomic_fetch_add */
	unsigned round;  /* bumped per loop, so a thread joins each once */
	int busy;        /* threads still in the current loop */
	bool closing;
};

static void
take_turns(struct wr_pool *pool, wr_pool_fn *fn, void *arg, int n)
{
	for (;;) {
		int i = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED);

		if (i >= n) {
			return;
		}
		fn(arg, i);
	}
}

static void *
worker(void *arg)
{
	struct wr_pool *pool = arg;
	unsigned seen = 0;

	pthread_mutex_lock(&pool->mu);
	for (;;) {
		while (pool->round == seen && !pool->closing) {
			pthread_cond_wait(&pool->work, &pool->mu);
		}
		if (pool->closing) {
			break;
		}
		seen = pool->round;
		pthread_mutex_unlock(&pool->mu);
		take_turns(pool, pool->fn, pool->arg, pool->n);
		pthread_mutex_lock(&pool->mu);
		if (--pool->busy == 0) {
			pthread_cond_signal(&pool->done);
		}
	}
	pthread_mutex_unlock(&pool->mu);
	return NULL;
}

int
wr_pool_open(int nthreads, struct wr_pool **out)
{
	struct wr_pool *pool = calloc(1, sizeof(*pool));
	sigset_t all, old;
	int rc = 0;

	*out = NULL;
	if (pool == NULL) {
		return -ENOMEM;
	}
	pthread_mutex_init(&pool->mu, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->done, NULL);
	pool->threads = calloc((size_t)nthreads + 1, sizeof(*pool->threads));
	if (pool->threads == NULL) {
		wr_pool_close(pool);
		return -ENOMEM;
	}
	pool->nthreads = nthreads;
	/* Signals belong to the event loop's thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < nthreads && rc == 0; i++) {
		rc = -pthread_create(&pool->threads[i], NULL, worker, pool);
		pool->started += rc == 0;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		wr_pool_close(pool);
		return rc;
	}
	*out = pool;
	return 0;
}

void
wr_pool_for(struct wr_pool *pool, int n, wr_pool_fn *fn, void *arg)
{
	pthread_mutex_lock(&pool->mu);
	pool->fn = fn;
	pool->arg = arg;
	pool->n = n;
	pool->next = 0;
	pool->busy = pool->started;
	pool->round++;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->mu);

	take_turns(pool, fn, arg, n);

	pthread_mutex_lock(&pool->mu);
	while (pool->busy > 0) {
		pthread_cond_wait(&pool->done, &pool->mu);
	}
	pthread_mutex_unlock(&pool->mu);
}

void
wr_pool_close(struct wr_pool *pool)
{
	if (pool == NULL) {
		return;
	}
	pthread_mutex_lock(&pool->mu);
	pool->closing = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->mu);
	for (int i = 0; i < pool->started; i++) {
		pthread_join(pool->threads[i], NULL);
	}
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->mu);
	free(pool->threads);
	free(pool);
}
