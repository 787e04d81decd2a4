/* SPDX-License-Identifier: MIT */
/*
 * hang: the hang report. Given the registry's survey (what each rank's
 * libworld blocks in and who the registry's waits miss) and what worldrun
 * knows of each process, it groups the ranks by what they wait for and
 * names who is missing, in lines for a terminal and in JSON. Ranks in no
 * libworld wait are described by their process state and CPU time from
 * /proc; with stacks, one rank of each group gets its stack. It asks
 * nobody anything itself and prints nothing.
 */
#ifndef WR_HANG_H
#define WR_HANG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

/* What worldrun knows of one rank. */
struct wr_hang_rank {
	pid_t pid;     /* 0: never started */
	bool ended;    /* reaped */
	int wstatus;   /* once ended */
	double ran_s;  /* seconds since it started, or how long it ran */
	const char *host; /* another host's name (its pid is there), or NULL */
};

/* A stack another host's agent took (or could not). */
struct wr_hang_stack {
	int rank;
	bool answered;     /* false: no answer in time */
	int err;           /* 0, or why there is none (an errno) */
	const char *tool;  /* "eu-stack", "gdb", "" */
	const char *text;  /* the tool's output, or NULL */
};

struct wr_hang_job {
	const char *jobid;
	const char *host;
	double elapsed;                  /* seconds since the job started */
	const struct wr_hang_rank *ranks;
	int nranks;
	bool stacks;                     /* add a stack per group */
	int stack_timeout_ms;            /* for each stack taken here */
	const struct wr_hang_stack *far; /* the stacks of other hosts' ranks
					  * that were asked for */
	int nfar;
	double far_wait;                 /* how long their answers had */
};

/* Groups past this many are summed up in one line (the JSON has all). */
#define WR_HANG_LINES_MAX 32
/* Stacks a report takes at most. */
#define WR_HANG_STACKS_MAX 8

/*
 * The report: a new {"report": {...}, "lines": ["job ... after 30.0 s:
 * ...", "  ranks 0,2-7 in barrier \"step\" ...", ...]} (lines without
 * the "worldrun: " a printer puts first), from @survey (borrowed;
 * wr_regsrv_survey()'s, or NULL when there is none). NULL on ENOMEM.
 */
json_t *wr_hang_build(const struct wr_hang_job *job, const json_t *survey);

/*
 * The ranks whose stacks wr_hang_build() would show with job->stacks
 * (one per group, at most WR_HANG_STACKS_MAX), into @ranks: how many, or
 * -ENOMEM. Takes no stack. The status asks other hosts' agents for theirs
 * first (job->far).
 */
int wr_hang_stack_ranks(const struct wr_hang_job *job, const json_t *survey,
			int ranks[WR_HANG_STACKS_MAX]);

#endif
