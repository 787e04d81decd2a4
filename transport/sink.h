/* SPDX-License-Identifier: MIT */
/*
 * sink: where the bytes past a receive's buffer go on shm, so that a
 * message longer than its receive cannot hang us. libfabric 1.17's shm
 * copies a message above its inject size with process_vm_readv in a loop
 * until the sender's whole length has arrived (smr_cma_loop, no
 * truncation check): once the receive's buffer is full the loop spins
 * for ever. Each receive gets a second iovec, the sink: a scratch page
 * (where an overflowing inline or inject copy lands harmlessly), then a
 * guard page the CMA copy faults on, which ends the loop with an error.
 * Only for CMA: without it (FI_SHM_DISABLE_CMA, ptrace forbidden) the
 * SAR copy would fault on the guard, so there is no sink, and a
 * truncation goes unreported (see wr_fab_irecv).
 */
#ifndef WR_SINK_H
#define WR_SINK_H

#include <stdbool.h>
#include <sys/uio.h>

struct wr_sink;

/* A sink, or *@out NULL when CMA looks unusable (not an error). 0 or
 * -errno. */
int wr_sink_create(struct wr_sink **out);

/* Accepts NULL. */
void wr_sink_destroy(struct wr_sink *s);

/* The iovec to post after a receive's own buffer. */
struct iovec wr_sink_iov(const struct wr_sink *s);

#endif
