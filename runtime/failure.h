/* SPDX-License-Identifier: MIT */
/*
 * failure: how the calling thread's last call failed, as
 * world_last_failure() gives it. Every part of libworld that ends a call
 * (registry requests, calls to peers, futures, collectives) notes its
 * failure here; it keeps no other record. Not installed.
 */
#ifndef WR_FAILURE_H
#define WR_FAILURE_H

#include "progress.h"

/* Record how a call failed, for world_last_failure() in this thread. */
void wr_failure_note(const struct wr_result *r);

#endif
