/* SPDX-License-Identifier: MIT */
/*
 * run: the launcher's one context, from the options to the exit status:
 * it sets the job up, runs the loop and writes the report. policy.h
 * decides what happens while the job runs.
 */
#ifndef WR_RUN_H
#define WR_RUN_H

#include <stdbool.h>
#include <sys/types.h>

#include <event2/event.h>

#include "guardian.h"
#include "reghost.h"
#include "job.h"
#include "jobfile.h"
#include "map.h"
#include "opts.h"
#include "slurm.h"

#define WR_NSIGNALS 8

enum wr_rank_state {
	WR_RANK_PENDING,
	WR_RANK_RUNNING,
	WR_RANK_EXITED,   /* reaped; its streams may still be open */
	WR_RANK_FINISHED, /* reaped and its streams closed */
};

struct wr_rank {
	enum wr_rank_state state;
	pid_t pid;        /* on its host */
	bool far;         /* its host is not this process's: an agent's */
	double start_mono; /* its host's clock, as end_mono */
	double seen_mono;  /* ours, when STARTED came */
	double end_mono;
	double start_epoch;
	double end_epoch;
	int wstatus;
	long maxrss_kib;
	bool signaled;     /* worldrun sent it a stop signal before its end */
	const char *lost;  /* why the registry lost it while it still ran */
	bool lost_killed;  /* and worldrun killed it for that */
	bool failed;       /* ended badly on its own */
	bool start_failed; /* could not be started or could not exec */
	bool host_lost;    /* it ran when its host was lost: no status */
	bool pmi_left;     /* it left PMI without finalize: a failure */
	bool aborted;      /* it called PMI abort: its line is said */
};

struct wr_run {
	struct wr_opts opts;
	struct wr_job job;
	struct event_base *base;
	struct wr_nodes *nodes;
	struct wr_output *out;
	struct wr_feed *feed;
	struct wr_guardian guardian;
	struct wr_reghost registry;
	struct wr_jobfile jobfile; /* the job's entry in the runtime directory */
	struct event *lost_ev; /* kills ranks the registry lost */
	struct wr_map map;  /* where each rank runs */
	struct wr_slurm_env slurm; /* the allocation worldrun runs in, if any */
	struct wr_rank *ranks;
	int nranks;
	int nstarted;
	int nfinished;
	bool start_done; /* the agent said its START is over */
	char host[256];
	double t0;
	/* The policy. */
	int status;       /* -1 until something decides it */
	const char *cause;
	int failed_rank;
	int file_rank;    /* the rank whose --output-dir file failed; -1: none */
	int file_stream;
	int file_err;
	int self_signal;  /* the signal that stopped worldrun, raised at exit */
	bool stopping;
	bool killed;      /* SIGKILL was sent */
	int nstopped;
	struct event *stop_ev;
	struct event *grace_ev;
	struct event *give_up_ev; /* remote ranks that outlive their SIGKILL */
	struct event *timeout_ev;
	struct event *drain_ev; /* how long a signalled worldrun waits for its reader */
	bool abandon;           /* output still queued at the end is dropped */
	struct json_t *hang;    /* the last hang report, for --report */
	bool closing;           /* wr_run_close() has begun: say nothing more */
	struct event *signal_ev[WR_NSIGNALS];
};

/*
 * Set up everything before the first rank: options, job, guardian, event
 * loop, output. Returns 0, or the exit status to use (messages printed).
 * wr_run_close() must be called either way.
 */
int wr_run_open(struct wr_run *run, int argc, char **argv);

/* Start the ranks and run the loop until the job is over. */
void wr_run_loop(struct wr_run *run);

/*
 * Write the report, release everything and return the exit status. If
 * worldrun was stopped by a signal, it ends by that signal instead.
 */
int wr_run_close(struct wr_run *run);

#endif
