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

/*
 * Add the nodes of @a->nodelist to @h (zeroed, or already holding hosts),
 * in order, with the slots of @a->counts (one count per node of the list,
 * in all). Returns 0, or -EINVAL with @err saying what is wrong
 * ("SLURM_JOB_NODELIST=n[3-1]: a range that runs backwards"), -ENOMEM.
 */
int wr_slurm_hosts(struct wr_hosts *h, const struct wr_slurm_alloc *a,
		   char err[WR_HOSTS_ERR_MAX]);

#endif
