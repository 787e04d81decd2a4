/* SPDX-License-Identifier: MIT */
/*
 * progress: the live line of a start that takes more than a second, on a
 * terminal ("worldrun: connecting hosts 2/3, ranks started 296/300"):
 * from the counts its source gives, rewritten four times a second until
 * the start is over or a rank writes (output.c keeps it off the screen
 * then, and never shows it in a pipe or a file).
 */
#ifndef WR_PROGRESS_H
#define WR_PROGRESS_H

#include <stdbool.h>

#include <event2/event.h>

#include "output.h"

struct wr_progress_counts {
	int hosts, hosts_ready; /* nodes, and those whose agent is ready */
	int ranks, started;
	bool done;              /* every agent has said how its start went */
};

struct wr_progress_src {
	void (*count)(void *arg, struct wr_progress_counts *c);
	void *arg;
};

struct wr_progress;

/* Watch the start from now: 0 or -ENOMEM. @out and @src are borrowed. */
int wr_progress_start(struct event_base *base, struct wr_output *out,
		      const struct wr_progress_src *src, struct wr_progress **out_p);

/* "connecting hosts 2/3, ranks started 296/300", or "ranks started 5/8"
 * with one host, into @buf. */
void wr_progress_text(const struct wr_progress_counts *c, char *buf, size_t len);

/* Accepts NULL. */
void wr_progress_stop(struct wr_progress *p);

#endif
