/* SPDX-License-Identifier: MIT */
/*
 * singleton: a program started without worldrun gets the singleton world:
 * rank 0 of 1, named "0", barriers that return at once, no key/value
 * space (-ENOTSUP), and a working collective group of one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "world.h"

/* The group of rank 0 alone: its collectives copy, no fabric is opened. */
static void
singleton_coll(struct world *w)
{
	const int me[] = { 0 }, two[] = { 0, 1 };
	struct world_coll *c = NULL, *none = NULL;
	int v[3] = { 4, 5, 6 }, out[3] = { 0 };

	is_int(world_coll_create(w, me, 1, 1000, &c), 0, "singleton: a group of one");
	ok(world_coll_rank(c) == 0 && world_coll_size(c) == 1 &&
	   world_coll_world_rank(c, 0) == 0, "singleton: its rank 0 is world rank 0");
	ok(world_coll_all_reduce(c, v, 3, WORLD_INT32, WORLD_SUM, 1000) == 0 &&
	   v[0] == 4 && v[2] == 6, "singleton: all_reduce of one leaves the values");
	ok(world_coll_all_gather(c, v, out, 3, WORLD_INT32, 1000) == 0 && out[1] == 5 &&
	   world_coll_barrier(c, 1000) == 0, "singleton: all_gather copies, barrier returns");
	is_int(world_coll_create(w, two, 2, 1000, &none), -EINVAL,
	       "singleton: a group with a rank beyond the world is -EINVAL");
	world_coll_destroy(c);
}

int
main(void)
{
	struct world *w = NULL;
	void *val = NULL;
	size_t len;

	/* Whatever the test runner had: this process is no rank of a job. */
	unsetenv("WORLD_REGISTRY");
	plan(11);
	is_int(world_open(&w), 0, "singleton: opens without worldrun");
	ok(world_rank(w) == 0 && world_size(w) == 1, "singleton: rank 0 of 1");
	is_str(world_name(w), "0", "singleton: named \"0\"");
	is_int(world_barrier(w, "b", 1000), 0, "singleton: a barrier returns at once");
	is_int(world_kv_get(w, "k", &val, &len, 0), -ENOTSUP,
	       "singleton: no key/value space");
	singleton_coll(w);
	is_int(world_stop(w, 1000), 0, "singleton: stops");
	return done_testing();
}
