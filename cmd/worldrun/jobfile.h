/* SPDX-License-Identifier: MIT */
/*
 * jobfile: the job's entry in the per-user runtime directory (rundir.h),
 * so that `worldctl jobs` and `worldctl status JOBID` find it from any
 * shell of the same user. Written once the registry listens and before
 * any rank starts, removed when the job ends, and by the guardian however
 * worldrun ends. A directory that is not safe to use (see rundir.h) costs
 * one warning line, never the job.
 */
#ifndef WR_JOBFILE_H
#define WR_JOBFILE_H

#include <stdbool.h>

#include "guardian.h"
#include "reghost.h"
#include "rundir.h"

struct wr_jobfile {
	struct wr_rundir dir; /* path "" until written */
	char jobid[WR_RUNDIR_ID_LEN + 1];
};

/* What the entry says of the job; borrowed, all of it. */
struct wr_jobfile_job {
	const char *jobid;
	int ranks;
	const char *host;
	const char *program;
	int argc;         /* worldrun's own arguments, for the command line */
	char **argv;
	const struct wr_reghost *registry; /* open: where tools reach the job */
	struct wr_guardian *guardian;      /* removes the entry should we die */
};

/*
 * Have the job's guardian remove the entry, then write it. Returns 0, or
 * a negative code after one line on stderr (the job goes on without an
 * entry).
 */
int wr_jobfile_write(struct wr_jobfile *f, const struct wr_jobfile_job *job);

/* Remove the entry. Accepts NULL and an entry never written. */
void wr_jobfile_remove(struct wr_jobfile *f);

#endif
