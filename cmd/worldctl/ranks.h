/* SPDX-License-Identifier: MIT */
/*
 * ranks: worldctl's commands about the job's ranks: who this rank is, how
 * many there are, which are alive, and the barrier where they all meet.
 * Each returns worldctl's exit status (enum wr_ctl_status).
 */
#ifndef WR_RANKS_H
#define WR_RANKS_H

#include "args.h"
#include "ctl.h"

/* The barrier "worldctl barrier" enters when given no NAME. */
#define WR_RANKS_BARRIER "worldctl"

int wr_ranks_rank(struct wr_ctl *ctl, const struct wr_args *a);
int wr_ranks_size(struct wr_ctl *ctl, const struct wr_args *a);
int wr_ranks_states(struct wr_ctl *ctl, const struct wr_args *a);
int wr_ranks_barrier(struct wr_ctl *ctl, const struct wr_args *a);

#endif
