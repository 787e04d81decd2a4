/* SPDX-License-Identifier: MIT */
/*
 * collwork.h: the straggler's computation, shared by collmpi, collbench
 * and (through collwork.c, a shared object) collgloo.py, so that every
 * implementation does exactly the same work for the same count. Each step
 * depends on the one before, so it can be neither vectorized nor removed
 * while its result is used. Header-only, for benchmark programs only.
 */
#ifndef WR_BENCH_COLLWORK_H
#define WR_BENCH_COLLWORK_H

static inline double
coll_work(long steps)
{
	double x = 1.0;

	for (long i = 0; i < steps; i++) {
		x = x * 0.9999999 + 0.5e-7;
	}
	return x;
}

#endif
