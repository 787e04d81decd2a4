/* SPDX-License-Identifier: MIT */
/*
 * singleton: a program started without worldrun gets the singleton world:
 * rank 0 of 1, named "0", barriers that return at once, no key/value
 * space (-ENOTSUP).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "world.h"

int
main(void)
{
	struct world *w = NULL;
	void *val = NULL;
	size_t len;

	/* Whatever the test runner had: this process is no rank of a job. */
	unsetenv("WORLD_REGISTRY");
	plan(6);
	is_int(world_open(&w), 0, "singleton: opens without worldrun");
	ok(world_rank(w) == 0 && world_size(w) == 1, "singleton: rank 0 of 1");
	is_str(world_name(w), "0", "singleton: named \"0\"");
	is_int(world_barrier(w, "b", 1000), 0, "singleton: a barrier returns at once");
	is_int(world_kv_get(w, "k", &val, &len, 0), -ENOTSUP,
	       "singleton: no key/value space");
	is_int(world_stop(w, 1000), 0, "singleton: stops");
	return done_testing();
}
