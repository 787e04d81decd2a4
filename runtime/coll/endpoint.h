/* SPDX-License-Identifier: MIT */
/*
 * endpoint: the world's one fabric endpoint, opened at its first
 * collective group of several, with its address published in the job's
 * key/value space for the members to find. It neither knows groups
 * (cgroup.c) nor moves their bytes (backend.c). Not installed.
 */
#ifndef WR_ENDPOINT_H
#define WR_ENDPOINT_H

#include <stdbool.h>

#include "fabric.h"
#include "worldint.h"

/* Where each rank's fabric address is, in the job's key/value space. */
#define WR_ENDPOINT_ADDR_KEY "world.fab.%d"

/* More ranks on this node than CPUs: waiting must not spin. */
bool wr_endpoint_oversubscribed(void);

/* The world's fabric endpoint, opened (and its address published) on
 * first use: 0, or why it cannot be. */
int wr_endpoint_get(struct world *w, struct wr_fab **out);

/* Close the world's endpoint, if it was opened: for world_stop(), after
 * its groups and before the progress thread. */
void wr_endpoint_close(struct world *w);

#endif
