/* SPDX-License-Identifier: MIT */
/*
 * A rank that stops (world_stop) while the others still wait for it in a
 * barrier, a group's creation, a group barrier or a collective it never
 * started: those waits fail at once with WORLD_EPEERDEAD naming it and
 * saying it is stopping, rather than run into their timeout (60 s here;
 * no duration is asserted). A collective it did start before it stopped
 * completes. Rank 2 stops first; ranks 0 and 1 wait on it, then stop too,
 * and every stop ends well. Three ranks; rank 2 makes no TAP line of its
 * own.
 */
#include <stdio.h>
#include <string.h>

#include "wtap.h"

#define T 60000

static void
waits_fail(struct world *w, int rc, const char *how, const char *what)
{
	char want[160];

	snprintf(want, sizeof(want), "rank 2 is stopping (world_stop); it will not %s", how);
	check(rc == WORLD_EPEERDEAD && world_last_failure()->rank == 2 &&
	      strstr(world_last_failure()->message, want) != NULL,
	      "%s waiting for a stopping rank fails at once, naming it (%s: %s)", what,
	      world_err_name(rc), world_last_failure()->message);
}

/* Collectives of @tidy (destroyed before the stop) and @kept (still held
 * at it) that rank 2 never starts. */
static void
collectives(struct world *w, struct world_coll *tidy, struct world_coll *kept)
{
	struct world_coll_req *r = NULL;
	int x = 1, y = 1, rc;

	waits_fail(w, world_coll_all_reduce(tidy, &x, 1, WORLD_INT32, WORLD_SUM, T),
		   "join all_reduce (operation 2 of coll",
		   "a collective of a group it destroyed");
	rc = world_coll_iall_reduce(kept, &y, 1, WORLD_INT32, WORLD_SUM, &r);
	waits_fail(w, rc < 0 ? rc : world_coll_wait(r, T, NULL),
		   "join all_reduce (operation 2 of coll", "a started collective of a group it kept");
	world_coll_req_free(r);
}

int
main(void)
{
	const char *all[] = { "0", "1", "2" };
	const int ranks[] = { 0, 1, 2 };
	struct world_group *g = NULL, *late = NULL, *pair = NULL;
	struct world_coll *tidy = NULL, *kept = NULL;
	struct world *w = NULL;
	int rc = world_open(&w), x = 1, y = 1;

	if (rc < 0 || world_size(w) != 3) {
		fprintf(stderr, "needs worldrun -n 3 (%s)\n", world_strerror(rc));
		return 2;
	}
	wtap_start(world_rank(w), 7);
	rc = world_group_create(w, "all", all, 3, T, &g);
	if (world_coll_create(w, ranks, 3, T, &tidy) < 0 ||
	    world_coll_create(w, ranks, 3, T, &kept) < 0) {
		return 2;
	}
	/* One each that every member starts. */
	rc = world_coll_all_reduce(tidy, &x, 1, WORLD_INT32, WORLD_SUM, T);
	world_coll_all_reduce(kept, &y, 1, WORLD_INT32, WORLD_SUM, T);
	if (world_rank(w) < 2) {
		check(rc == 0 && x == 3, "a collective the stopping rank started completes (%s, %d)",
		      world_err_name(rc), x);
		rc = world_group_create(w, "pair", all, 2, T, &pair);
	}
	if (world_rank(w) == 2) {
		world_coll_destroy(tidy);
		world_group_destroy(g);
		rc = world_stop(w, T);
		return rc == 0 ? 0 : 1;
	}
	waits_fail(w, world_barrier(w, "g", T), "enter barrier \"g\"", "a barrier");
	waits_fail(w, world_group_create(w, "late", all, 3, T, &late), "join group \"late\"",
		   "a group's creation");
	waits_fail(w, world_group_barrier(g, T), "enter barrier \"group.all\"",
		   "a group barrier");
	world_group_destroy(g);
	collectives(w, tidy, kept);
	world_coll_destroy(tidy);
	world_coll_destroy(kept);
	/* Neither stops while the other still waits on rank 2 alone. */
	world_group_barrier(pair, T);
	world_group_destroy(pair);
	check(world_stop(w, T) == 0, "the stops end well");
	return wtap_done();
}
