/* SPDX-License-Identifier: MIT */
/*
 * clock: the two clocks worldrun reads. Durations come from the monotonic
 * clock; the report's start and end times are epoch seconds.
 */
#ifndef WR_CLOCK_H
#define WR_CLOCK_H

#include <sys/time.h>

/* Seconds on CLOCK_MONOTONIC. */
double wr_clock_mono(void);

/* Seconds since the epoch, from CLOCK_REALTIME. */
double wr_clock_epoch(void);

/* Milliseconds on CLOCK_MONOTONIC, for deadlines. */
long long wr_clock_ms(void);

/* Nanoseconds on CLOCK_MONOTONIC. */
long long wr_clock_ns(void);

/* @s seconds as a struct timeval, for libevent timers. */
struct timeval wr_clock_tv(double s);

#endif
