/* SPDX-License-Identifier: MIT */
/*
 * rank: a rank as the launcher knows it, from its start to its end: its
 * state, its process and how it ended. The policy (policy.c and
 * policy-ranks.c) keeps the table and alone writes it; the report and
 * the hang report read it.
 */
#ifndef WR_RANK_H
#define WR_RANK_H

#include <stdbool.h>
#include <sys/types.h>

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
	char *failing;     /* it said it failed (world_fail), and why: the
			    * job's failure, whatever order the ranks end in */
	char *exception;   /* what its error file said: one line; NULL: none */
	char *traceback;   /* and the end of its traceback (report) */
	int dead_peer;     /* the first rank whose death failed one of its
			    * registry waits (WORLD_EPEERDEAD); -1: none */
	char *no_lib;      /* the library the dynamic loader said on its
			    * stderr it could not find, or NULL */
	size_t err_seen;   /* bytes of its stderr so far */
};

#endif
