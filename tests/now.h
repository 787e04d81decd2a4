/* SPDX-License-Identifier: MIT */
/*
 * now.h: the tests' clock, CLOCK_MONOTONIC, header only: for the deadlines
 * of bounded waits, and for a generous upper bound where lateness is the
 * bug, never to assert how long something took otherwise.
 */
#ifndef WR_TESTS_NOW_H
#define WR_TESTS_NOW_H

#include <time.h>

static inline long long
tests_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The same clock in seconds. */
static inline double
tests_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
