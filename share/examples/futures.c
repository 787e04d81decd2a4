/* SPDX-License-Identifier: MIT */
/*
 * futures: rank 0 fans work out to every rank without waiting for each
 * call. Every rank registers a service "square.RANK"; rank 0 calls them
 * all asynchronously, collects the answers as they come
 * (world_future_wait_any), then a second round all at once
 * (world_future_wait_all), and finally leaves a result on the last rank
 * and fetches it twice (a remote result). Run it with:
 *
 *     worldrun -n 4 ./futures
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <world.h>

#define TIMEOUT_MS 30000

static int
fail(const char *what, int rc)
{
	fprintf(stderr, "futures: %s: %s\n", what, world_strerror(rc));
	return rc;
}

/* {"x": N} -> {"y": N*N}, after a pause that makes low ranks answer last. */
static int
square(void *ctx, const json_t *args, const void *blob, size_t len,
       struct world_reply *reply)
{
	const int *pause_ms = ctx;
	struct timespec ts = { 0, (long)*pause_ms * 1000000L };
	json_int_t x = json_integer_value(json_object_get(args, "x"));

	nanosleep(&ts, NULL);
	return world_reply_result_new(reply, json_pack("{s:I}", "y", x * x));
}

/* Call "square.I" with x = I + @base for every member I: n futures. */
static int
fan_out(struct world_group *g, int base, struct world_future **fs, size_t n)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		char key[32];
		json_t *args = json_pack("{s:i}", "x", (int)i + base);

		snprintf(key, sizeof(key), "square.%s", world_group_member(g, i));
		/* A call to this very process has run by the time this returns. */
		rc = world_call_async(g, key, args, NULL, 0, TIMEOUT_MS, &fs[i]);
		json_decref(args);
	}
	return rc;
}

/* The answer of a finished future: its "y", added to *sum. */
static int
collect(struct world_future *f, long long *sum)
{
	json_t *res = NULL;
	int rc = world_future_wait(f, 0, &res, NULL, NULL);

	if (rc == 0) {
		*sum += json_integer_value(json_object_get(res, "y"));
	}
	json_decref(res);
	world_future_free(f);
	return rc;
}

/* Round one: take the answers in the order they arrive. */
static int
as_they_come(struct world_group *g, size_t n)
{
	struct world_future **fs = calloc(n, sizeof(*fs));
	long long sum = 0;
	size_t left = n, i = 0;
	int rc = fs == NULL ? -ENOMEM : fan_out(g, 1, fs, n);

	while (rc == 0 && left > 0) {
		rc = world_future_wait_any(fs, left, TIMEOUT_MS, &i);
		if (rc == 0) {
			rc = collect(fs[i], &sum);
			/* Done with it: the last pending one takes its place. */
			fs[i] = fs[--left];
			fs[left] = NULL;
		}
	}
	for (i = 0; fs != NULL && i < n; i++) {
		world_future_free(fs[i]);
	}
	free(fs);
	if (rc < 0) {
		return fail("round one", rc);
	}
	printf("rank 0: round one: the squares of 1..%zu add up to %lld\n", n, sum);
	return 0;
}

/* Round two: wait for every answer, then read each. */
static int
all_at_once(struct world_group *g, size_t n)
{
	struct world_future **fs = calloc(n, sizeof(*fs));
	long long sum = 0;
	int rc = fs == NULL ? -ENOMEM : fan_out(g, 101, fs, n);

	if (rc == 0) {
		rc = world_future_wait_all(fs, n, TIMEOUT_MS);
	}
	for (size_t i = 0; fs != NULL && i < n; i++) {
		/* collect() frees each future; after a failure it only frees. */
		if (fs[i] != NULL && rc == 0) {
			rc = collect(fs[i], &sum);
		} else {
			world_future_free(fs[i]);
		}
	}
	free(fs);
	if (rc < 0) {
		return fail("round two", rc);
	}
	printf("rank 0: round two: the squares of 101..%zu add up to %lld\n", 100 + n,
	       sum);
	return 0;
}

/* A remote result: it stays on the callee until fetched and released. */
static int
remote(struct world_group *g)
{
	const char *last = world_group_member(g, world_group_size(g) - 1);
	json_t *args = json_pack("{s:i}", "x", 12), *a = NULL, *b = NULL;
	struct world_rref *ref = NULL;
	char key[32];
	int rc;

	snprintf(key, sizeof(key), "square.%s", last);
	rc = world_call_remote(g, key, args, NULL, 0, TIMEOUT_MS, &ref);
	json_decref(args);
	if (rc == 0) {
		rc = world_rref_fetch(ref, &a, NULL, NULL, TIMEOUT_MS);
	}
	if (rc == 0) {
		rc = world_rref_fetch(ref, &b, NULL, NULL, TIMEOUT_MS);
	}
	if (rc == 0) {
		printf("rank 0: rank %s kept 12 squared: fetched %lld, then %lld\n", last,
		       (long long)json_integer_value(json_object_get(a, "y")),
		       (long long)json_integer_value(json_object_get(b, "y")));
	}
	json_decref(a);
	json_decref(b);
	/* Drops the result on the callee. */
	world_rref_release(ref);
	return rc < 0 ? fail("remote result", rc) : 0;
}

static int
run(struct world *w)
{
	int rank = world_rank(w), size = world_size(w);
	int pause_ms = 10 * (size - rank);
	const char **members = calloc((size_t)size, sizeof(*members));
	char *names = calloc((size_t)size, 16);
	struct world_group *g = NULL;
	char key[32];
	int rc = members == NULL || names == NULL ? -ENOMEM : 0;

	for (int i = 0; rc == 0 && i < size; i++) {
		snprintf(names + 16 * i, 16, "%d", i);
		members[i] = names + 16 * i;
	}
	if (rc == 0) {
		rc = world_group_create(w, "squares", members, (size_t)size, TIMEOUT_MS, &g);
	}
	snprintf(key, sizeof(key), "square.%d", rank);
	if (rc == 0) {
		rc = world_register(g, key, square, &pause_ms, 0);
	}
	/* Past this barrier every service is registered. */
	if (rc == 0) {
		rc = world_group_barrier(g, TIMEOUT_MS);
	}
	if (rc < 0) {
		fail("setting up", rc);
	}
	if (rc == 0 && rank == 0) {
		rc = as_they_come(g, (size_t)size);
		rc = rc < 0 ? rc : all_at_once(g, (size_t)size);
		rc = rc < 0 ? rc : remote(g);
	}
	/* The others keep their services until rank 0 is done with them. */
	if (rc == 0) {
		rc = world_group_barrier(g, TIMEOUT_MS);
		rc = rc < 0 ? fail("the last barrier", rc) : 0;
	}
	world_group_destroy(g);
	free(members);
	free(names);
	return rc;
}

int
main(void)
{
	struct world *w = NULL;
	int rc = world_open(&w);

	if (rc < 0) {
		fail("world_open", rc);
		return 1;
	}
	if (run(w) < 0) {
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
