/* SPDX-License-Identifier: MIT */
/*
 * kv: worldctl's "kv" commands on the job's key/value space. Each takes
 * the connected context and its parsed words, and returns worldctl's
 * exit status (enum wr_ctl_status) after saying what went wrong.
 */
#ifndef WR_KV_H
#define WR_KV_H

#include "args.h"
#include "ctl.h"

/* Values read from standard input ("kv set KEY -") stop here. */
#define WR_KV_STDIN_MAX ((size_t)64 << 20)

int wr_kv_set(struct wr_ctl *ctl, const struct wr_args *a);
int wr_kv_get(struct wr_ctl *ctl, const struct wr_args *a);
int wr_kv_add(struct wr_ctl *ctl, const struct wr_args *a);
int wr_kv_wait(struct wr_ctl *ctl, const struct wr_args *a);
int wr_kv_mget(struct wr_ctl *ctl, const struct wr_args *a);
int wr_kv_del(struct wr_ctl *ctl, const struct wr_args *a);

#endif
