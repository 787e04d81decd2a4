/* SPDX-License-Identifier: MIT */
/*
 * wirespawn: what wire.c reads of SPAWN and JOINED, in wire-spawn.c
 * beside the apps they carry. Private to the wire.
 */
#ifndef WR_WIRESPAWN_H
#define WR_WIRESPAWN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "wire.h"

/* Whether @apps, with their strings in @blob, are the apps of @ranks. */
bool wr_wire_apps_ok(json_t *apps, const void *blob, size_t len, int ranks);

/*
 * SPAWN's answer (@joined false: its id, and ranks of the job with their
 * apps and places, or none and nothing: refused) or JOINED (its ranks,
 * the asker's node, their apps and places) from @msg and @blob into @c:
 * whether they are all there, in range and agree.
 */
bool wr_wire_spawn_fields(json_t *msg, bool joined, const void *blob, size_t len,
			  struct wr_cmd *c);

#endif
