/* SPDX-License-Identifier: MIT */
/*
 * run: the launcher's one context, from the options to the exit status:
 * it sets the job up, opens the parts, runs the loop and writes the
 * report; one attempt of the job, when it restarts (restart.h). What happens while the job runs is the policy's (policy.h),
 * which owns the rank table and the exit status.
 */
#ifndef WR_RUN_H
#define WR_RUN_H

#include <stdbool.h>

#include <event2/event.h>

#include "guardian.h"
#include "job.h"
#include "jobfile.h"
#include "map.h"
#include "opts.h"
#include "policy.h"
#include "reghost.h"
#include "restart.h"
#include "signals.h"
#include "slurm.h"

struct wr_run {
	struct wr_opts opts;
	struct wr_job job;
	struct wr_map map;  /* where each rank runs */
	struct wr_slurm_env slurm; /* the allocation worldrun runs in, if any */
	struct event_base *base;
	struct wr_guardian guardian;
	struct wr_policy *policy;
	struct wr_signals signals;
	struct wr_output *out;
	struct wr_reghost registry;
	struct wr_nodes *nodes;
	struct wr_progress *progress; /* the start's live line on a terminal */
	struct wr_jobfile jobfile; /* the job's entry in the runtime directory */
	struct wr_restart *restart; /* what outlives this attempt, borrowed */
	char host[256];
	double t0;
	double t_epoch; /* when this attempt started, since the epoch */
	int setup_status;       /* the exit status setup failed with; 0: none */
	const char *setup_cause; /* and why, for --report */
	bool report_ranks;      /* every exit path from here writes --report */
};

/*
 * Set up everything before the first rank: options, job, guardian, event
 * loop, output. Returns 0, or the exit status to use (messages printed).
 * wr_run_close() must be called either way.
 */
int wr_run_open(struct wr_run *run, int argc, char **argv, struct wr_restart *restart);

/* Start the ranks and run the loop until the job is over. */
void wr_run_loop(struct wr_run *run);

/*
 * Write the report, release everything and return the exit status. If
 * worldrun was stopped by a signal, it ends by that signal instead.
 * *again: the job is to start again (restart.h), as a new run.
 */
int wr_run_close(struct wr_run *run, bool *again);

#endif
