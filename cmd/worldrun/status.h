/* SPDX-License-Identifier: MIT */
/*
 * status: the hang report of a running job, as worldrun makes it: it asks
 * the registry for a survey of the ranks, adds what it knows of each
 * process (hang.c does the words), and prints the report on --timeout
 * and SIGQUIT or answers a "status" request with it (worldctl status).
 * It keeps the newest report for --report. The policy owns it and says
 * when; it decides nothing.
 */
#ifndef WR_STATUS_H
#define WR_STATUS_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>
#include <jansson.h>

#include "map.h"
#include "output.h"
#include "rank.h"
#include "reghost.h"

/* How long the ranks get to say what they wait for. */
#define WR_STATUS_ASK_MS 1000

struct wr_status_cfg {
	const char *jobid;           /* borrowed, as the rest */
	const char *host;            /* this machine's name */
	double t0;                   /* when worldrun started (wr_clock_mono()) */
	const struct wr_map *map;
	const struct wr_rank *ranks; /* map->nranks, the policy's table */
	struct event_base *base;
	/* Ask the agent of rank @rank's host for its stack (a STACK
	 * command): its answer comes to wr_status_stack(). NULL: only this
	 * host's ranks get stacks. */
	void (*ask_stack)(void *arg, int rank);
	void *ask_arg;
};

/* Embedded in its owner (the policy); the fields are its own. */
struct wr_status {
	struct wr_status_cfg cfg;
	struct wr_output *out;       /* where it prints; NULL until bound */
	struct wr_reghost *registry; /* whom it asks; NULL until bound */
	bool quiet;                  /* worldrun closes: print nothing more */
	json_t *last;                /* the newest report, or NULL */
	struct pending_print *asking; /* the report waiting for other
				       * hosts' stacks, or NULL */
};

void wr_status_init(struct wr_status *st, const struct wr_status_cfg *cfg);

/* The output it prints to and the registry it asks, once open (borrowed). */
void wr_status_bind(struct wr_status *st, struct wr_output *out,
		    struct wr_reghost *registry);

/* What comes after the report is printed: NULL for nothing. */
typedef void wr_status_then_fn(void *arg);

/*
 * Print the hang report (and keep it), with a stack per group if
 * @stacks, then call @then(@arg), or call it at once when no survey can
 * be made. Returns nothing: every failure is said. Once quiet, a survey
 * that comes back prints nothing and calls nothing.
 */
void wr_status_print(struct wr_status *st, bool stacks, wr_status_then_fn *then,
		     void *arg);

/* The answer to the registry's "status" request: the report for @survey
 * (borrowed), without stacks: taking them stops the loop for seconds. */
json_t *wr_status_answer(struct wr_status *st, json_t *survey);

/* An agent's STACK event: the stack of @rank (@err 0) or why there is
 * none (an errno), @tool "" when its host has none. */
void wr_status_stack(struct wr_status *st, int rank, int err, const char *tool,
		     const char *text, size_t len);

/* The newest report printed, borrowed; NULL: none. */
json_t *wr_status_last(const struct wr_status *st);

/* Free the kept report. Accepts NULL and a status never initialised
 * (zeroed). */
void wr_status_finish(struct wr_status *st);

#endif
