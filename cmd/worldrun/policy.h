/* SPDX-License-Identifier: MIT */
/*
 * policy: what worldrun decides while the job runs (rank states, the exit
 * status, stopping the job, the failure lines), driven by the events of
 * the agents, the registry and the output. run.c opens the parts and
 * wires this module's handlers into them.
 */
#ifndef WR_POLICY_H
#define WR_POLICY_H

#include "nodes.h"
#include "output.h"
#include "run.h"

/* Its timers, on run->base. 0 or -ENOMEM; wr_policy_close() either way. */
int wr_policy_open(struct wr_run *run);

/* Put its handlers (and @run as their argument) into the parts' configs. */
void wr_policy_wire(struct wr_run *run, struct wr_output_cfg *out,
		    struct wr_reghost_cfg *reg, struct wr_nodes_cfg *nodes);

/* A signal reached worldrun (from signals.c, on the loop). */
void wr_policy_signal(struct wr_run *run, int sig);

/* Free its timers. Accepts a run it was never opened for. */
void wr_policy_close(struct wr_run *run);

#endif
