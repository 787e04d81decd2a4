/* SPDX-License-Identifier: MIT */
/*
 * slurm: the host list of a Slurm allocation, as its environment gives
 * it: SLURM_JOB_NODELIST in Slurm's compressed form ("n[1-3,7]",
 * "rack[1-2]-n[01-04]", several groups a cartesian product; Open MPI's
 * "n[2:1-3]" gives the digits' width before a colon), and the slots per
 * node in Slurm's count form ("4,1(x2)"). It reads what it is given and
 * nothing else: no name is resolved, no Slurm command is run.
 */
#ifndef WR_SLURM_H
#define WR_SLURM_H

#include "hosts.h"

/* The longest node list and count list read. */
#define WR_SLURM_LIST_MAX 65536

/* An allocation's two lists, and the names of the variables they came
 * from (for messages). */
struct wr_slurm_alloc {
	const char *nodelist, *nodelist_var;
	const char *counts, *counts_var;
};

/* What worldrun reads of the Slurm allocation it runs in (NULL: unset). */
struct wr_slurm_env {
	const char *job_id;   /* SLURM_JOB_ID: inside an allocation */
	const char *step_id;  /* SLURM_STEP_ID: inside a step (an srun task) */
	const char *nodename; /* SLURMD_NODENAME: this machine, as Slurm names it */
	const char *ntasks;   /* SLURM_NTASKS outside a step: the job's tasks */
	struct wr_slurm_alloc alloc;
};

/*
 * The allocation from the environment. The slots of each node are the
 * tasks Slurm planned for it (SLURM_TASKS_PER_NODE), except inside a step,
 * which overwrites that variable with its own: there, the CPUs the job
 * has on it (SLURM_JOB_CPUS_PER_NODE). The job's task count is
 * SLURM_NTASKS, outside a step only, for the same reason.
 */
void wr_slurm_env_read(struct wr_slurm_env *e);

/*
 * Add the nodes of @a->nodelist to @h (zeroed, or already holding hosts),
 * in order, with the slots of @a->counts (one count per node of the list,
 * in all). Returns 0, or -EINVAL with @err saying what is wrong
 * ("SLURM_JOB_NODELIST=n[3-1]: a range that runs backwards"), -ENOMEM.
 */
int wr_slurm_hosts(struct wr_hosts *h, const struct wr_slurm_alloc *a,
		   char err[WR_HOSTS_ERR_MAX]);

#endif
