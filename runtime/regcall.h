/* SPDX-License-Identifier: MIT */
/*
 * regcall: the requests that libworld's modules (world, kv, group, the
 * collective groups) make to the job's registry through the progress
 * thread, and where each peer answers, asked there once. It builds no
 * request (regproto.h does) and keeps no state but the world's. Not
 * installed.
 */
#ifndef WR_REGCALL_H
#define WR_REGCALL_H

#include <stddef.h>

#include <jansson.h>

#include "worldint.h"

/*
 * A registry request that may wait there @timeout_ms (as in world.h; the
 * request carries it as "timeout_ms"); the answer is awaited a little
 * longer, so that the registry's own verdict wins. Steals @req_new.
 * Returns as wr_prog_call(); -ENOTSUP in the singleton world, -EINVAL for
 * a timeout below WORLD_TIMEOUT_FOREVER.
 */
int wr_regcall_run(struct world *w, json_t *req_new, const void *blob,
		   size_t len, int timeout_ms, json_t **result, void **rblob,
		   size_t *rlen);

/* The same, with the whole answer (remote codes, dead rank) in @out. */
int wr_regcall_ask(struct world *w, json_t *req_new, const void *blob,
		   size_t len, int timeout_ms, struct wr_result *out);

/*
 * A registry request as wr_regcall_run() makes it, recorded in @w->waits
 * as @rec while it waits (@rec NULL: a request that does not block).
 */
int wr_regcall_run_as(struct world *w, struct wr_wait *rec, json_t *req_new,
		      int timeout_ms, json_t **result, void **rblob, size_t *rlen);

/* Where rank @rank answers (borrowed until the world closes), from the
 * registry on first use: NULL if it cannot be known. */
const char *wr_regcall_peer(struct world *w, int rank);

#endif
