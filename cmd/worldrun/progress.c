/* SPDX-License-Identifier: MIT */
/*
 * progress: the start's live line, driven by a timer. See progress.h.
 */
#include "progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* A start this long is worth a word; then the line is rewritten this often. */
#define FIRST_S 1.0
#define EVERY_S 0.25

struct wr_progress {
	struct event *tick;
	struct wr_output *out;
	struct wr_progress_src src;
	char said[128]; /* what the line says now: rewritten only to change */
};

void
wr_progress_text(const struct wr_progress_counts *c, char *buf, size_t len)
{
	if (c->hosts > 1) {
		snprintf(buf, len, "connecting hosts %d/%d, ranks started %d/%d", c->hosts_ready,
			 c->hosts, c->started, c->ranks);
	} else {
		snprintf(buf, len, "ranks started %d/%d", c->started, c->ranks);
	}
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct wr_progress *p = arg;
	struct wr_progress_counts c = { 0 };
	struct timeval tv = wr_clock_tv(EVERY_S);
	char text[128];

	p->src.count(p->src.arg, &c);
	if (c.done) {
		wr_output_live(p->out, NULL);
		return;
	}
	wr_progress_text(&c, text, sizeof(text));
	if (strcmp(text, p->said) != 0) {
		wr_output_live(p->out, text);
		memcpy(p->said, text, sizeof(p->said));
	}
	evtimer_add(p->tick, &tv);
}

int
wr_progress_start(struct event_base *base, struct wr_output *out,
		  const struct wr_progress_src *src, struct wr_progress **out_p)
{
	struct wr_progress *p = calloc(1, sizeof(*p));
	struct timeval tv = wr_clock_tv(FIRST_S);

	*out_p = NULL;
	if (p == NULL) {
		return -ENOMEM;
	}
	*p = (struct wr_progress){ .out = out, .src = *src };
	p->tick = evtimer_new(base, on_tick, p);
	if (p->tick == NULL || evtimer_add(p->tick, &tv) < 0) {
		wr_progress_stop(p);
		return -ENOMEM;
	}
	*out_p = p;
	return 0;
}

void
wr_progress_stop(struct wr_progress *p)
{
	if (p == NULL) {
		return;
	}
	if (p->tick != NULL) {
		event_free(p->tick);
	}
	free(p);
}
