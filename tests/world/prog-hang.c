/* SPDX-License-Identifier: MIT */
/*
 * prog-hang MODE: for tests/cli/worldrun-hang.bats, a job that hangs in a
 * known way, one MODE per kind of wait, so that the hang report can be
 * checked. Rank 1 is the one the others wait for: it sleeps (or blocks
 * in a handler) for at most 60 s (8 s in mode late, long past the
 * others' timeout). Every other rank:
 *
 *   barrier  enters barrier "step"
 *   kv       waits for the key "never"
 *   group    creates group "g" of every rank (rank 1 never joins)
 *   call     calls rank 1's handler "slow" (which holds the call)
 *   future   waits for the future of that call
 *   stop     calls world_stop() (rank 1 never does)
 *   early    enters barrier "step" (rank 1 exits 0 at once instead)
 *   late     enters barrier "step" for 1 s only
 *   coll     enters an all_reduce of a collective group of every rank
 *
 * Each prints "rank R: ready, pid P" on stderr once it is about to block, so
 * that a test knows when to ask, and ends printing "rank R: CODE:
 * MESSAGE" (world_last_failure()'s) on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

#define T 60000

static int
other(struct world *w, const char *mode, struct world_group *g,
      struct world_coll *c)
{
	struct world_future *f = NULL;
	const char *never[] = { "never" };
	const char *one = "1";

	fprintf(stderr, "rank %d: ready, pid %d\n", world_rank(w), (int)getpid());
	if (strcmp(mode, "barrier") == 0 || strcmp(mode, "early") == 0) {
		return world_barrier(w, "step", T);
	}
	if (strcmp(mode, "late") == 0) {
		return world_barrier(w, "step", 1000);
	}
	if (strcmp(mode, "kv") == 0) {
		return world_kv_wait(w, never, 1, T);
	}
	if (strcmp(mode, "call") == 0) {
		return world_call_direct(g, one, "slow", NULL, NULL, 0, T, NULL, NULL, NULL);
	}
	if (strcmp(mode, "future") == 0) {
		int rc = world_call_direct_async(g, one, "slow", NULL, NULL, 0, T, &f);

		rc = rc < 0 ? rc : world_future_wait(f, T, NULL, NULL, NULL);
		world_future_free(f);
		return rc;
	}
	if (strcmp(mode, "stop") == 0) {
		return world_stop(w, T);
	}
	if (strcmp(mode, "coll") == 0) {
		float v = 1;

		return world_coll_all_reduce(c, &v, 1, WORLD_FLOAT32, WORLD_SUM, T);
	}
	return -EINVAL;
}

/* Every rank of the job, by name, for a group of all. */
static int
group_all(struct world *w, const char *name, struct world_group **g)
{
	char **names = calloc((size_t)world_size(w), sizeof(*names));
	int rc;

	for (int i = 0; i < world_size(w); i++) {
		if (asprintf(&names[i], "%d", i) < 0) {
			return -ENOMEM;
		}
	}
	rc = world_group_create(w, name, (const char *const *)names,
				(size_t)world_size(w), T, g);
	for (int i = 0; i < world_size(w); i++) {
		free(names[i]);
	}
	free(names);
	return rc;
}

/* A collective group of every rank. */
static int
coll_all(struct world *w, struct world_coll **c)
{
	int *ranks = calloc((size_t)world_size(w), sizeof(*ranks));
	int rc;

	if (ranks == NULL) {
		return -ENOMEM;
	}
	for (int i = 0; i < world_size(w); i++) {
		ranks[i] = i;
	}
	rc = world_coll_create(w, ranks, (size_t)world_size(w), T, c);
	free(ranks);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct world_group *g = NULL;
	struct world_coll *c = NULL;
	struct world *w = NULL;
	int calls = 0, rc = world_open(&w);
	bool calling = strcmp(mode, "call") == 0 || strcmp(mode, "future") == 0;

	if (rc < 0) {
		fprintf(stderr, "prog-hang: world_open: %s\n", world_strerror(rc));
		return 1;
	}
	if (calling && world_rank(w) == 1) {
		rc = world_export(w, "slow", hold_call, &calls, 0);
	}
	/* Those who call need a group first, and the callee in it. */
	if (rc == 0 && (calling || (strcmp(mode, "group") == 0 && world_rank(w) != 1))) {
		rc = group_all(w, "g", &g);
	}
	if (rc == 0 && strcmp(mode, "coll") == 0) {
		rc = coll_all(w, &c);
	}
	if (rc == 0 && world_rank(w) != 1) {
		rc = other(w, mode, g, c);
	} else if (rc == 0 && strcmp(mode, "early") != 0) {
		fprintf(stderr, "rank 1: ready, pid %d\n", (int)getpid());
		pause_ms(strcmp(mode, "late") == 0 ? 8000 : T);
	}
	printf("rank %d: %s: %s\n", world_rank(w), world_err_name(rc),
	       rc < 0 ? world_last_failure()->message : "");
	world_abort(w);
	return rc < 0;
}
