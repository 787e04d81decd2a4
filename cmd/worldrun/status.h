/* SPDX-License-Identifier: MIT */
/*
 * status: the hang report of a running job, as worldrun makes it: it asks
 * the registry for a survey of the ranks, adds what it knows of each
 * process (hang.c does the words), and prints the report on --timeout
 * and SIGQUIT or answers a "status" request with it (worldctl status).
 */
#ifndef WR_STATUS_H
#define WR_STATUS_H

#include <stdbool.h>

#include <jansson.h>

struct wr_run;

/* How long the ranks get to say what they wait for. */
#define WR_STATUS_ASK_MS 1000

/* What comes after the report is printed: NULL for nothing. */
typedef void wr_status_then_fn(struct wr_run *run);

/*
 * Print the hang report (and keep it for --report), with a stack per
 * group if @stacks, then call @then, or call @then at once when no
 * survey can be made. Returns nothing: every failure is said.
 */
void wr_status_print(struct wr_run *run, bool stacks, wr_status_then_fn *then);

/* The registry's status callback: the report for @survey (borrowed),
 * without stacks: taking them stops the loop for seconds. */
json_t *wr_status_answer(void *run, json_t *survey);

#endif
