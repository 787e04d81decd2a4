/* SPDX-License-Identifier: MIT */
/*
 * prog-reregister: for tests/cli/world-peerdead.bats, on 3 ranks. Rank 2
 * registers the service "who" (it answers with its owner's rank); rank 0
 * calls it, so that its lookup is cached, and rank 2 dies by SIGKILL.
 * Ranks 0 and 1 learn of the death (a barrier rank 2 never enters), rank
 * 1 registers "who" itself, and then rank 0 calls it twice more. Ranks 0 and 1 print each
 * step: "rank R: STEP: <error name> <result>".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "world.h"

#define T 60000

static int
who(void *ctx, const json_t *args, const void *blob, size_t len,
    struct world_reply *reply)
{
	return world_reply_result_new(reply, json_integer(*(int *)ctx));
}

static void
say(int rank, const char *step, int rc, json_int_t value)
{
	printf("rank %d: %s: %s %" JSON_INTEGER_FORMAT "\n", rank, step,
	       world_err_name(rc), value);
	fflush(stdout);
}

/* Call "who" and print what came back. */
static void
call_who(struct world_group *g, int rank, const char *step)
{
	json_t *res = NULL;
	int rc = world_call(g, "who", NULL, NULL, 0, T, &res, NULL, NULL);

	say(rank, step, rc, rc == 0 ? json_integer_value(res) : -1);
	json_decref(res);
}

/* The step of @rank, which is 0 or 1, once rank 2 is gone. */
static void
after_death(struct world *w, struct world_group *g, int *rank)
{
	void *val = NULL;
	size_t len = 0;
	int rc;

	/* It fails once rank 2 is dead; a wait begun later is not ended by it. */
	say(*rank, "death", world_barrier(w, "rank 2 never comes", T), -1);
	if (*rank == 1) {
		rc = world_register(g, "who", who, rank, 0);
		say(1, "register again", rc, -1);
		world_kv_set(w, "again", "1", 1);
		/* Serve rank 0's calls until it is done. */
		rc = world_kv_get(w, "called", &val, &len, T);
	} else {
		rc = world_kv_get(w, "again", &val, &len, T);
		call_who(g, 0, "after");
		call_who(g, 0, "and again");
		world_kv_set(w, "called", "1", 1);
	}
	free(val);
	if (rc < 0) {
		say(*rank, "waiting", rc, -1);
	}
}

int
main(void)
{
	const char *members[] = { "0", "1", "2" };
	struct world_group *g = NULL;
	struct world *w = NULL;
	int rank, rc = world_open(&w);

	if (rc < 0 || world_size(w) != 3) {
		fprintf(stderr, "usage: worldrun -n 3 prog-reregister (%s)\n",
			world_strerror(rc));
		world_abort(w);
		return 2;
	}
	rank = world_rank(w);
	rc = world_group_create(w, "all", members, 3, T, &g);
	if (rc == 0 && rank == 2) {
		rc = world_register(g, "who", who, &rank, 0);
	}
	if (rc == 0) {
		rc = world_group_barrier(g, T);
	}
	if (rc == 0 && rank == 0) {
		call_who(g, 0, "before");
	}
	if (rc == 0) {
		rc = world_barrier(w, "called", T);
	}
	if (rc < 0) {
		fprintf(stderr, "rank %d: setting up: %s\n", rank, world_strerror(rc));
		world_abort(w);
		return 1;
	}
	if (rank == 2) {
		raise(SIGKILL);
	}
	after_death(w, g, &rank);
	world_group_destroy(g);
	world_abort(w);
	return 0;
}
