/* SPDX-License-Identifier: MIT */
/*
 * status: "worldctl status [JOBID]", the hang report of a job (which ranks
 * wait for what, who is missing), as the registry's "status" request
 * answers it: its lines, or with --json the report itself. Of the
 * enclosing job inside a rank, of JOBID (or --job) from anywhere.
 * Returns worldctl's exit status (enum wr_ctl_status).
 */
#ifndef WR_STATUS_H
#define WR_STATUS_H

#include "args.h"
#include "ctl.h"

int wr_status_show(struct wr_ctl *ctl, const struct wr_args *a);

#endif
