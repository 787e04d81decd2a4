/* SPDX-License-Identifier: MIT */
#include "clock.h"

#include <time.h>

static double
read_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double
wr_clock_mono(void)
{
	return read_clock(CLOCK_MONOTONIC);
}

double
wr_clock_epoch(void)
{
	return read_clock(CLOCK_REALTIME);
}

long long
wr_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long
wr_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct timeval
wr_clock_tv(double s)
{
	struct timeval tv;

	if (s < 0) {
		s = 0;
	}
	tv.tv_sec = (time_t)s;
	tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
	return tv;
}
