/* SPDX-License-Identifier: MIT */
/*
 * prog-colldeath MODE: for tests/cli/world-colldeath.bats, on 4 ranks in
 * one collective group. Ranks 0-2 enter a collective that needs rank 3,
 * with a 60 s timeout, after setting "waiting.R"; rank 3, once the three
 * keys are set, does what MODE says: kill (SIGKILL itself instead of
 * entering an all_reduce), stop (world_stop with a 2 s timeout instead of
 * being the root of a broadcast: it leaves the job), or block (never
 * enters the all_reduce; the test kills worldrun). Ranks 0-2 print "rank
 * R: MODE: <error name> rank <lost rank>", then their next call on the
 * group, then how their stop went, and exit 0. It asserts no duration.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "progs.h"

#define T 60000

static void
rank3(struct world *w, const char *mode)
{
	const char *keys[] = { "waiting.0", "waiting.1", "waiting.2" };
	int rc = world_kv_wait(w, keys, 3, T);

	printf("rank 3: the others wait (%s)\n", world_err_name(rc));
	fflush(stdout);
	if (strcmp(mode, "kill") == 0) {
		die();
	}
	if (strcmp(mode, "stop") == 0) {
		rc = world_stop(w, 2000);
		printf("rank 3: stop: %s\n", world_err_name(rc));
		exit(0);
	}
	for (int i = 0; i < 600; i++) {
		pause_ms(100);
	}
	exit(0);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const int all[] = { 0, 1, 2, 3 };
	struct world_coll *c = NULL;
	struct world *w = NULL;
	float v[1024] = { 0 };
	char key[32];
	int rank, rc = world_open(&w);

	if (rc < 0 || world_size(w) != 4 ||
	    (strcmp(mode, "kill") != 0 && strcmp(mode, "stop") != 0 &&
	     strcmp(mode, "block") != 0)) {
		fprintf(stderr, "usage: worldrun -n 4 prog-colldeath kill|stop|block (%s)\n",
			world_strerror(rc));
		world_abort(w);
		return 2;
	}
	rank = world_rank(w);
	rc = world_coll_create(w, all, 4, T, &c);
	rc = rc == 0 ? world_coll_barrier(c, T) : rc;
	if (rc < 0) {
		fprintf(stderr, "rank %d: setting up: %s\n", rank, world_strerror(rc));
		world_abort(w);
		return 1;
	}
	if (rank == 3) {
		rank3(w, mode);
	}
	snprintf(key, sizeof(key), "waiting.%d", rank);
	world_kv_set(w, key, "1", 1);
	printf("rank %d: in the collective\n", rank);
	fflush(stdout);
	rc = strcmp(mode, "stop") == 0 ? world_coll_broadcast(c, v, 1024, WORLD_FLOAT32, 3, T)
		: world_coll_all_reduce(c, v, 1024, WORLD_FLOAT32, WORLD_SUM, T);
	printf("rank %d: %s: %s rank %d\n", rank, mode, world_err_name(rc),
	       rc < 0 ? world_last_failure()->rank : -1);
	rc = world_coll_barrier(c, T);
	printf("rank %d: then: %s rank %d\n", rank, world_err_name(rc),
	       rc < 0 ? world_last_failure()->rank : -1);
	fflush(stdout);
	world_coll_destroy(c);
	rc = world_stop(w, 5000);
	printf("rank %d: stop: %s\n", rank, world_err_name(rc));
	return 0;
}
