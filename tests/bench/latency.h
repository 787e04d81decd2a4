/* SPDX-License-Identifier: MIT */
/*
 * latency.h: the clock and the summary that regbench and rpcbench share:
 * sort a run's per-call times and print them as name=value pairs
 * (microseconds). Header-only, for benchmark programs only.
 */
#ifndef WR_BENCH_LATENCY_H
#define WR_BENCH_LATENCY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int
latency_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The nearest-rank @pct percentile of sorted @v, in microseconds. */
static inline double
latency_pct_us(const int64_t *v, long n, double pct)
{
	long i = (long)(pct / 100.0 * (double)n + 0.999999) - 1;

	return (double)v[i < 0 ? 0 : i] / 1e3;
}

/* Sorts the @n times of @lat (ns) and prints " mean_us=... p50_us=...
 * p99_us=... min_us=..." (no newline). */
static inline void
latency_print(int64_t *lat, long n)
{
	int64_t sum = 0;

	for (long i = 0; i < n; i++) {
		sum += lat[i];
	}
	qsort(lat, (size_t)n, sizeof(*lat), latency_cmp);
	printf(" mean_us=%.2f p50_us=%.2f p99_us=%.2f min_us=%.2f",
	       (double)sum / (double)n / 1e3, latency_pct_us(lat, n, 50),
	       latency_pct_us(lat, n, 99), latency_pct_us(lat, n, 0));
}

#endif
