/* SPDX-License-Identifier: MIT */
/*
 * prog-peerdead MODE: for tests/cli/world-peerdead.bats, on 3 ranks.
 * Ranks 0 and 1 wait on rank 2 (MODE barrier: in a barrier; waitkey: in
 * a get of a key nobody sets; call: in a call of a service on rank 2
 * whose handler does not answer), each with a 60 s timeout, and rank 2
 * kills itself with SIGKILL once they wait: once the registry holds
 * their waits (its stats), or in MODE call once the handler has both
 * calls. Ranks 0 and 1 print "rank R: MODE: <error name> rank <dead
 * rank>", then how their stop went, and exit 0. It asserts no duration.
 * It asks the registry for its stats as libworld does inside
 * (progs.h), so it links libworld's code whole.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "clock.h"
#include "progs.h"

#define T 60000

/* Calls of "slow" that have come in (hold_call counts them). */
static int arrived;

/*
 * Rank 2. A rank sets waiting.R right before it waits; the wait itself
 * reaches the registry a moment later: the registry then holds it beside
 * the deaths watch that every rank's libworld keeps there. In MODE call
 * the handler itself says the calls are in. Each wait is bounded by T.
 */
static void
rank2(struct world *w, const char *mode)
{
	const char *keys[] = { "waiting.0", "waiting.1" };
	int64_t deadline = wr_clock_ms() + T;

	if (strcmp(mode, "call") == 0) {
		while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < 2 &&
		       wr_clock_ms() < deadline) {
			pause_ms(10);
		}
	} else if (world_kv_wait(w, keys, 2, T) == 0) {
		while (pending(w) < world_size(w) + 2 && wr_clock_ms() < deadline) {
			pause_ms(10);
		}
	}
	die();
}

/* Ranks 0 and 1: wait on rank 2 the way MODE says; the code it gave. */
static int
wait_on_2(struct world *w, struct world_group *g, const char *mode)
{
	char key[32];
	void *val = NULL;
	size_t len = 0;
	int rc;

	snprintf(key, sizeof(key), "waiting.%d", world_rank(w));
	world_kv_set(w, key, "1", 1);
	if (strcmp(mode, "barrier") == 0) {
		rc = world_barrier(w, "never.complete", T);
	} else if (strcmp(mode, "waitkey") == 0) {
		rc = world_kv_get(w, "nobody.sets.this", &val, &len, T);
		free(val);
	} else {
		rc = world_call(g, "slow", NULL, NULL, 0, T, NULL, NULL, NULL);
	}
	return rc;
}

int
main(int argc, char **argv)
{
	const char *members[] = { "0", "1", "2" };
	const char *mode = argc > 1 ? argv[1] : "";
	struct world_group *g = NULL;
	struct world *w = NULL;
	int rank, rc = world_open(&w);

	if (rc < 0 || world_size(w) != 3 ||
	    (strcmp(mode, "barrier") != 0 && strcmp(mode, "waitkey") != 0 &&
	     strcmp(mode, "call") != 0)) {
		fprintf(stderr, "usage: worldrun -n 3 prog-peerdead barrier|waitkey|call "
			"(%s)\n", world_strerror(rc));
		world_abort(w);
		return 2;
	}
	rc = world_group_create(w, "all", members, 3, T, &g);
	if (rc == 0 && world_rank(w) == 2) {
		rc = world_register(g, "slow", hold_call, &arrived, 0);
	}
	if (rc == 0) {
		rc = world_group_barrier(g, T);
	}
	if (rc < 0) {
		fprintf(stderr, "rank %d: setting up: %s\n", world_rank(w), world_strerror(rc));
		world_abort(w);
		return 1;
	}
	if (world_rank(w) == 2) {
		rank2(w, mode);
	}
	rank = world_rank(w);
	rc = wait_on_2(w, g, mode);
	printf("rank %d: %s: %s rank %d\n", rank, mode, world_err_name(rc),
	       rc < 0 ? world_last_failure()->rank : -1);
	fflush(stdout);
	world_group_destroy(g);
	rc = world_stop(w, T);
	printf("rank %d: stop: %s\n", rank, world_err_name(rc));
	return 0;
}
