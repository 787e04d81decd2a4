/* SPDX-License-Identifier: MIT */
/*
 * job: everything the launcher decides before the first rank starts: the
 * job id, the resolved program, the base environment, the working
 * directory and the policies an agent needs to start and watch ranks.
 * It is built once from the options and then only read; every agent,
 * the in-process one too, gets its part as a SETUP (nodes.h, hostjob.h).
 */
#ifndef WR_JOB_H
#define WR_JOB_H

#include <stdbool.h>
#include <sys/resource.h>

#include "env.h"
#include "opts.h"
#include "restart.h"

struct wr_job {
	char jobid[13];
	int size;
	int nnodes;
	char *path;      /* the program as found here (resolve.h), absolute */
	char **argv;     /* as given; borrowed from the command line */
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
	bool master_given; /* --master-addr: the same on every host */
	int master_port;
	struct rlimit nofile; /* the limit ranks get back */
	/* PMI-1 for MPICH's ranks (pmisrv.h), all borrowed: */
	bool pmi;
	bool pmi_port;           /* on a loopback port, not an inherited fd */
	bool pmix;               /* and PMIx for Open MPI's (pmixsrv.h) */
	const char *pmi_mapping; /* PMI_process_mapping; NULL: too long */
	const char *const *node_name; /* [nnodes]: the nodes' names (PMIx) */
	int bind;                /* enum wr_bind_level: --bind-to */
	int cpus_per_rank;       /* --cpus-per-rank */
	bool report_bindings;
};

/*
 * Build @job of @nnodes nodes from @o and @envp, for @restart's attempt
 * (the first makes the job's id, the others take it), all but what is found
 * on this host (path and wdir: wr_resolve_locate()). On failure prints
 * one line and returns the exit status to use: 125 (bad input or a
 * system error). Returns 0 on success.
 */
int wr_job_init(struct wr_job *job, const struct wr_opts *o,
		char *const *envp, const struct rlimit *nofile, int nnodes,
		struct wr_restart *restart);

void wr_job_finish(struct wr_job *job);

#endif
