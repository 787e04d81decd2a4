/* SPDX-License-Identifier: MIT */
/*
 * jobs: "worldctl jobs", this user's running jobs as the runtime
 * directory lists them (rundir.h), each with the state it is in: running
 * (its worldrun is alive and its registry answers), stopped (worldrun is
 * stopped, Ctrl-Z), unreachable (alive, but the registry does not
 * answer), stale (worldrun is gone; the entry is removed once listed).
 * Returns worldctl's exit status (enum wr_ctl_status).
 */
#ifndef WR_JOBS_H
#define WR_JOBS_H

#include "args.h"
#include "ctl.h"

int wr_jobs_list(struct wr_ctl *ctl, const struct wr_args *a);

#endif
