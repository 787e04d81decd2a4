/* SPDX-License-Identifier: MIT */
/*
 * now.h: the tests' clock, CLOCK_MONOTONIC in milliseconds, header only:
 * for the deadlines of bounded waits, never to assert how long something
 * took.
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

#endif
