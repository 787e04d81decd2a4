/* SPDX-License-Identifier: MIT */
/*
 * job: everything decided before the first rank starts: the job id, the
 * resolved program, the base environment, the working directory and the
 * policies an agent needs to start and watch ranks. It is built once
 * from the options and then only read, by the launcher and its agents.
 */
#ifndef WR_JOB_H
#define WR_JOB_H

#include <stdbool.h>
#include <sys/resource.h>

#include "env.h"
#include "opts.h"

struct wr_job {
	char jobid[13];
	int size;
	int nnodes;
	char *path;      /* the resolved program, absolute */
	char **argv;     /* as given; borrowed from the command line */
	char **sh_argv;  /* "/bin/sh", path, args: for scripts without #! */
	struct wr_env env;
	char *wdir;      /* absolute; NULL: worldrun's own */
	char *far_wdir;  /* for the other hosts' ranks: --wdir or our own */
	bool far_wdir_soft; /* ours: where it does not exist, the agent's */
	bool pty;
	enum wr_stdin_mode stdin_mode;
	int stdin_rank;
	int stdin_fd;    /* what the stdin rank reads in local mode */
	double kill_grace;
	const char *master_addr;
	int master_port;
	struct rlimit nofile; /* the limit ranks get back */
	/* PMI-1 for MPICH's ranks (pmisrv.h), all borrowed: */
	bool pmi;
	bool pmi_port;           /* on a loopback port, not an inherited fd */
	const char *pmi_mapping; /* PMI_process_mapping; NULL: too long */
};

/*
 * Build @job of @nnodes nodes from @o and @envp, all but the host's part
 * (wr_job_locate()). On failure prints one line and returns
 * the exit status to use: 125 (bad input or a system error), 126 (the
 * program cannot be executed) or 127 (not found). Returns 0 on success.
 */
int wr_job_init(struct wr_job *job, const struct wr_opts *o,
		char *const *envp, const struct rlimit *nofile, int nnodes);

/* The longest reason wr_job_locate() gives. */
#define WR_JOB_WHY_MAX 1024

/*
 * The host's part of the job: @wdir (NULL: ours) made absolute in
 * job->wdir, job->argv[0] found as a rank there would find it, in
 * job->path, and job->sh_argv. Returns 0, or the exit status it calls
 * for (125, 126 for a program that cannot be executed, 127 for one not
 * found) with why in @why, without "worldrun: ".
 */
int wr_job_locate(struct wr_job *job, const char *wdir, char *why, size_t size);

void wr_job_finish(struct wr_job *job);

#endif
