/* SPDX-License-Identifier: MIT */
#include "failure.h"

#include <stdio.h>

#include "world.h"

/*
 * Thread-local, like errno: a call's details stay with the thread that
 * made it.
 */
static _Thread_local struct world_failure last_error = { .rank = -1 };

void
wr_failure_note(const struct wr_result *r)
{
	if (r->rc == 0) {
		return;
	}
	last_error.code = r->rc;
	last_error.remote_code = r->remote_code;
	last_error.rank = r->rc == WORLD_EPEERDEAD ? r->dead_rank : -1;
	snprintf(last_error.message, sizeof(last_error.message), "%s", r->message);
}

const struct world_failure *
world_last_failure(void)
{
	return &last_error;
}
