/* SPDX-License-Identifier: MIT */
/*
 * wtap.h: TAP for tests that run as every rank of a job under worldrun.
 * Rank 0 prints the TAP stream; every other rank prints a failed check
 * as a line on stderr and ends with status 1, which fails the job and so
 * the test. Built on tap.h.
 */
#ifndef WR_WTAP_H
#define WR_WTAP_H

#include <stdlib.h>

#include "tap.h"
#include "world.h"

/* The one other static: whether this rank prints TAP (rank 0) or not. */
static int wtap_rank;

static inline void
wtap_start(int rank, int nchecks)
{
	wtap_rank = rank;
	if (rank == 0) {
		plan(nchecks);
	}
}

/* A check every rank makes; on rank 0 it is a TAP line. */
static inline bool __attribute__((format(printf, 2, 3)))
check(bool cond, const char *fmt, ...)
{
	va_list ap;

	if (wtap_rank == 0) {
		char text[256];

		va_start(ap, fmt);
		vsnprintf(text, sizeof(text), fmt, ap);
		va_end(ap);
		return ok(cond, "%s", text);
	}
	tap.run++;
	if (!cond) {
		tap.failed++;
		fprintf(stderr, "rank %d: not ok: ", wtap_rank);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	return cond;
}

static inline int
wtap_done(void)
{
	if (wtap_rank == 0) {
		return done_testing();
	}
	return tap.failed > 0;
}

#endif
