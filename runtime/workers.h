/* SPDX-License-Identifier: MIT */
/*
 * workers: the threads that run handlers for peers' calls. The pool grows
 * when every thread is busy (up to a cap), because a handler may itself
 * call another process whose handler calls back here: a fixed pool could
 * then wait on itself forever. Jobs run in the order they came. An idle
 * thread looks for the next job for a while before it sleeps (spin.h):
 * calls come back to back, and a sleeping thread costs each one a wake.
 */
#ifndef WR_WORKERS_H
#define WR_WORKERS_H

struct wr_workers;

typedef void wr_job_fn(void *arg);

/* Up to @max threads, started as needed, that look for work for up to
 * @spin_us microseconds before they sleep. Returns 0 or -errno. */
int wr_workers_open(int max, int spin_us, struct wr_workers **out);

/* Run every job still queued, then end the threads. Accepts NULL. */
void wr_workers_close(struct wr_workers *w);

/* Queue @fn(@arg). Returns 0 or -ENOMEM (then @fn will not run). */
int wr_workers_run(struct wr_workers *w, wr_job_fn *fn, void *arg);

#endif
