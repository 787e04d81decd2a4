/* SPDX-License-Identifier: MIT */
/*
 * pool: a parallel for-loop on threads that live as long as the pool.
 * Ranks are started on these threads, and PR_SET_PDEATHSIG fires when the
 * thread that forked a rank exits, not the process: so the threads must
 * outlive every rank they started, and only wr_pool_close() ends them.
 * The calling thread takes part in every loop.
 */
#ifndef WR_POOL_H
#define WR_POOL_H

struct wr_pool;

typedef void wr_pool_fn(void *arg, int i);

/*
 * A pool of @nthreads threads besides the caller (0 is allowed: then
 * every loop runs on the caller alone). Returns 0 or -errno.
 */
int wr_pool_open(int nthreads, struct wr_pool **out);

/* Ends the threads. Accepts NULL. */
void wr_pool_close(struct wr_pool *pool);

/*
 * Call @fn(@arg, i) for every i in [0, @n), spread over the threads in
 * about increasing order, and return when all calls have returned.
 */
void wr_pool_for(struct wr_pool *pool, int n, wr_pool_fn *fn, void *arg);

#endif
