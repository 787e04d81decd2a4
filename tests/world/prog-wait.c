/* SPDX-License-Identifier: MIT */
/*
 * prog-wait: for tests/cli/world-*.bats, a libworld rank that does
 * nothing but wait, at most 60 s, in a get of the key "done" (so that
 * only its lease and its peer listener are busy meanwhile), then says
 * goodbye. The other ranks need not be libworld's: it does not wait for
 * them (world_abort, not world_stop). It prints "rank R: done: <error
 * name>" and exits 0 if the get succeeded, 1 if not.
 */
#include <stdio.h>
#include <stdlib.h>

#include "world.h"

#define T 60000

int
main(void)
{
	struct world *w = NULL;
	void *val = NULL;
	size_t len = 0;
	int rank, got, rc = world_open(&w);

	if (rc < 0) {
		fprintf(stderr, "prog-wait: world_open: %s\n", world_strerror(rc));
		return 1;
	}
	rank = world_rank(w);
	got = world_kv_get(w, "done", &val, &len, T);
	free(val);
	world_abort(w);
	printf("rank %d: done: %s\n", rank, world_err_name(got));
	return got < 0;
}
