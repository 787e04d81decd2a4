/* SPDX-License-Identifier: MIT */
/*
 * worldint: the world as libworld's modules see it (world.c opens it;
 * kv.c and the layers to come use it). Not installed.
 */
#ifndef WR_WORLDINT_H
#define WR_WORLDINT_H

#include <jansson.h>

#include "progress.h"
#include "world.h"

struct world {
	int rank;
	int size;
	char name[16];
	char jobid[16];
	int wait_ms;          /* WORLD_WAIT_TIMEOUT */
	struct wr_prog *prog; /* NULL in the singleton world */
};

/*
 * A registry request that may wait there @timeout_ms (as in world.h; the
 * request carries it as "timeout_ms"); the answer is awaited a little
 * longer, so that the registry's own verdict wins. Steals @req_new.
 * Returns as wr_prog_call(); -ENOTSUP in the singleton world, -EINVAL for
 * a timeout below WORLD_TIMEOUT_FOREVER.
 */
int wr_world_call(struct world *w, json_t *req_new, const void *blob,
		  size_t len, int timeout_ms, json_t **result, void **rblob,
		  size_t *rlen);

#endif
