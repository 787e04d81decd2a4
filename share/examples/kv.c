/* SPDX-License-Identifier: MIT */
/*
 * kv: ranks share values through the job's key/value space and meet at
 * barriers. Every rank publishes its square and reads its left
 * neighbour's (a get that waits), adds to a shared total, takes part in
 * an election by compare-and-set, and signs a roll by appending; past a
 * barrier every rank reads the same results, and past another one rank 0
 * deletes the roll. Run it with:
 *
 *     worldrun -n 4 ./kv
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <world.h>

#define TIMEOUT_MS 30000

/* Say which call failed and why, and hand back its code. */
static int
fail(const char *what, int rc)
{
	fprintf(stderr, "kv: %s: %s (%s)\n", what, world_strerror(rc),
		world_err_name(rc));
	return rc;
}

/* Publish this rank's square; read the left neighbour's once it is there. */
static int
exchange(struct world *w, int rank, int size)
{
	int left = (rank + size - 1) % size;
	char key[32], val[32];
	void *got = NULL;
	size_t len = 0;
	int rc;

	snprintf(key, sizeof(key), "square.%d", rank);
	snprintf(val, sizeof(val), "%d", rank * rank);
	rc = world_kv_set(w, key, val, strlen(val));
	if (rc < 0) {
		return fail("kv_set", rc);
	}
	/* The neighbour may not have set it yet: wait for it, bounded. */
	snprintf(key, sizeof(key), "square.%d", left);
	rc = world_kv_get(w, key, &got, &len, TIMEOUT_MS);
	if (rc < 0) {
		return fail("kv_get", rc);
	}
	/* Values are bytes, with a NUL added after them: text reads as is. */
	printf("rank %d: rank %d's square is %s\n", rank, left, (char *)got);
	free(got);
	return 0;
}

/* Add to a total, run for leader, and sign the roll. */
static int
contribute(struct world *w, int rank)
{
	const char *name = world_name(w);
	void *leader = NULL;
	int rc;

	rc = world_kv_add(w, "total", rank + 1, NULL);
	if (rc < 0) {
		return fail("kv_add", rc);
	}
	/*
	 * Store our name if "leader" is missing (expected ""): the first rank
	 * wins, and the value handed back names the winner.
	 */
	rc = world_kv_cas(w, "leader", "", 0, name, strlen(name), &leader, NULL);
	if (rc < 0) {
		return fail("kv_cas", rc);
	}
	if (strcmp(leader, name) == 0) {
		printf("rank %d: elected leader\n", rank);
	}
	free(leader);
	rc = world_kv_append(w, "roll", "x", 1);
	return rc < 0 ? fail("kv_append", rc) : 0;
}

/* Past the barrier, everyone's contributions are in: read them. */
static int
report(struct world *w, int rank, int size)
{
	void *leader = NULL, *roll = NULL;
	size_t roll_len = 0;
	int64_t total = 0;
	int rc;

	rc = world_kv_add(w, "total", 0, &total);
	if (rc == 0) {
		rc = world_kv_get(w, "leader", &leader, NULL, 0);
	}
	if (rc == 0) {
		rc = world_kv_get(w, "roll", &roll, &roll_len, 0);
	}
	if (rc < 0) {
		free(leader);
		return fail("reading the results", rc);
	}
	printf("rank %d: leader %s, total %" PRId64 ", %zu of %d signed\n", rank,
	       (char *)leader, total, roll_len, size);
	free(leader);
	free(roll);
	return 0;
}

/* Wait until every rank has entered barrier @name. */
static int
meet(struct world *w, const char *name)
{
	/* Every rank enters once; back-to-back barriers are safe. */
	int rc = world_barrier(w, name, TIMEOUT_MS);

	return rc < 0 ? fail(name, rc) : 0;
}

int
main(void)
{
	struct world *w = NULL;
	int rank, size, rc;

	rc = world_open(&w);
	if (rc < 0) {
		fail("world_open", rc);
		return 1;
	}
	rank = world_rank(w);
	size = world_size(w);
	rc = exchange(w, rank, size);
	if (rc == 0) {
		rc = contribute(w, rank);
	}
	if (rc == 0) {
		rc = meet(w, "contributed");
	}
	if (rc == 0) {
		rc = report(w, rank, size);
	}
	/* Only once everyone has read it may the roll go. */
	if (rc == 0) {
		rc = meet(w, "reported");
	}
	if (rc == 0 && rank == 0) {
		rc = world_kv_del(w, "roll");
		rc = rc < 0 ? fail("kv_del", rc) : 0;
	}
	if (rc < 0) {
		/* Leave at once: worldrun reports the failure and stops the job. */
		world_abort(w);
		return 1;
	}
	rc = world_stop(w, TIMEOUT_MS);
	if (rc < 0) {
		fail("world_stop", rc);
		return 1;
	}
	return 0;
}
