/* SPDX-License-Identifier: MIT */
/*
 * wtap.h: TAP for tests that run as every rank of a job under worldrun.
 * Rank 0 prints the TAP stream, plan and numbered lines. Every other rank
 * prints each check it fails as a TAP line of its own, "not ok - rank R:
 * ...", without a number (it cannot know rank 0's), into the same stream
 * (worldrun keeps lines whole), and ends with status 1. So each failed
 * check of any rank is one "not ok" that the harness counts; the line
 * also breaks rank 0's plan and numbering, which fails the test whatever
 * the harness makes of it. Built on tap.h.
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
		printf("not ok - rank %d: ", wtap_rank);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		putchar('\n');
		fflush(stdout);
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
