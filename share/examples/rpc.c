/* SPDX-License-Identifier: MIT */
/*
 * rpc: an RPC group of every rank. Rank 0 registers a counter service
 * and pairs a value (JSON plus a binary blob); the other ranks fetch the
 * value, call the counter synchronously and through a future, and see
 * how a handler's error reaches them. Every rank exports a direct
 * handler, "whoami", and calls its right neighbour's. Run it with:
 *
 *     worldrun -n 4 ./rpc
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <world.h>

#define TIMEOUT_MS 30000

static int
fail(const char *what, int rc)
{
	const struct world_failure *f = world_last_failure();

	if (rc == WORLD_EREMOTE) {
		fprintf(stderr, "rpc: %s: %s: %s\n", what, world_strerror(rc), f->message);
	} else {
		fprintf(stderr, "rpc: %s: %s\n", what, world_strerror(rc));
	}
	return rc;
}

/*
 * The counter service: {"add": N} adds N and answers {"count": total}.
 * It is registered with WORLD_SERIAL, so calls run one at a time and the
 * plain integer needs no lock.
 */
static int
count(void *ctx, const json_t *args, const void *blob, size_t len,
      struct world_reply *reply)
{
	json_int_t *total = ctx;
	const json_t *add = json_object_get(args, "add");

	if (!json_is_integer(add)) {
		/* The caller gets WORLD_EREMOTE, this code and this message. */
		return world_reply_error(reply, -EINVAL, "counter wants {\"add\": N}");
	}
	*total += json_integer_value(add);
	return world_reply_result_new(reply, json_pack("{s:I}", "count", *total));
}

/* The direct handler every rank exports: it answers with its own name. */
static int
whoami(void *ctx, const json_t *args, const void *blob, size_t len,
       struct world_reply *reply)
{
	struct world *w = ctx;

	return world_reply_result_new(reply, json_pack("{s:s}", "name", world_name(w)));
}

/* Rank 0: offer the service, then the value that says it is ready. */
static int
serve(struct world_group *g, json_int_t *total)
{
	json_t *config = json_pack("{s:s}", "greeting", "hello");
	int rc = world_register(g, "counter", count, total, WORLD_SERIAL);

	if (rc < 0) {
		json_decref(config);
		return fail("register counter", rc);
	}
	/* world_pair copies @config and the blob: both are still ours. */
	rc = world_pair(g, "config", config, "\x01\x02\x03", 3);
	json_decref(config);
	return rc < 0 ? fail("pair config", rc) : 0;
}

/* The other ranks: wait for the value, then fetch a copy from rank 0. */
static int
fetch_config(struct world_group *g, int rank)
{
	json_t *value = NULL;
	void *blob = NULL;
	size_t len = 0;
	/* Rank 0 pairs "config" after registering the counter: wait for it. */
	int rc = world_wait_paired(g, "config", TIMEOUT_MS);

	if (rc < 0) {
		return fail("waiting for config", rc);
	}
	/* A copy from its owner: a new reference and a malloc'd blob. */
	rc = world_get_paired(g, "config", &value, &blob, &len, TIMEOUT_MS);
	if (rc < 0) {
		return fail("get_paired config", rc);
	}
	printf("rank %d: config says %s, with a %zu-byte blob\n", rank,
	       json_string_value(json_object_get(value, "greeting")), len);
	json_decref(value);
	free(blob);
	return 0;
}

/* The other ranks: call the counter synchronously, then through a future. */
static int
call_counter(struct world_group *g)
{
	json_t *args = json_pack("{s:i}", "add", 1);
	struct world_future *f = NULL;
	/* Adds 1; the result is not wanted here. */
	int rc = world_call(g, "counter", args, NULL, 0, TIMEOUT_MS, NULL, NULL, NULL);

	if (rc < 0) {
		json_decref(args);
		return fail("call counter", rc);
	}
	/* Adds 10 more without waiting; world_call_async copied @args. */
	json_object_set_new(args, "add", json_integer(10));
	rc = world_call_async(g, "counter", args, NULL, 0, TIMEOUT_MS, &f);
	json_decref(args);
	if (rc == 0) {
		rc = world_future_wait(f, TIMEOUT_MS, NULL, NULL, NULL);
	}
	world_future_free(f);
	return rc < 0 ? fail("call counter async", rc) : 0;
}

/* The other ranks: a handler's error comes back as WORLD_EREMOTE. */
static int
call_badly(struct world_group *g, int rank)
{
	json_t *bad = json_pack("{s:s}", "add", "one");
	int rc = world_call(g, "counter", bad, NULL, 0, TIMEOUT_MS, NULL, NULL, NULL);
	const struct world_failure *f = world_last_failure();

	json_decref(bad);
	if (rc != WORLD_EREMOTE) {
		return fail("a bad call to counter", rc < 0 ? rc : WORLD_EPROTO);
	}
	printf("rank %d: counter refused: %s (%s)\n", rank, f->message,
	       world_err_name(f->remote_code));
	return 0;
}

static int
use(struct world_group *g, int rank)
{
	int rc = fetch_config(g, rank);

	if (rc == 0) {
		rc = call_counter(g);
	}
	return rc == 0 ? call_badly(g, rank) : rc;
}

/* Every rank: call "whoami" on the next member of the group. */
static int
ask_neighbour(struct world_group *g, int rank)
{
	const char *next = world_group_member(g, (size_t)(rank + 1) % world_group_size(g));
	json_t *res = NULL;
	int rc = world_call_direct(g, next, "whoami", NULL, NULL, 0, TIMEOUT_MS, &res,
				   NULL, NULL);

	if (rc < 0) {
		return fail("call whoami", rc);
	}
	printf("rank %d: member %s says it is %s\n", rank, next,
	       json_string_value(json_object_get(res, "name")));
	json_decref(res);
	return 0;
}

/* Rank 0, once everyone is done: a call to itself runs right here. */
static int
tally(struct world_group *g, int size)
{
	json_t *args = json_pack("{s:i}", "add", 0), *res = NULL;
	int rc = world_call(g, "counter", args, NULL, 0, TIMEOUT_MS, &res, NULL, NULL);

	json_decref(args);
	if (rc < 0) {
		return fail("tally", rc);
	}
	printf("rank 0: the counter reached %lld (11 from each of %d ranks)\n",
	       (long long)json_integer_value(json_object_get(res, "count")), size - 1);
	json_decref(res);
	return 0;
}

static int
run(struct world *w, json_int_t *total)
{
	int rank = world_rank(w), size = world_size(w);
	/* The members by name: a rank's name is its decimal rank. */
	char *names = calloc((size_t)size, 16);
	const char **members = calloc((size_t)size, sizeof(*members));
	struct world_group *g = NULL;
	int rc = names == NULL || members == NULL ? -ENOMEM : 0;

	for (int i = 0; rc == 0 && i < size; i++) {
		members[i] = names + 16 * i;
		snprintf(names + 16 * i, 16, "%d", i);
	}
	/* Exported before the group exists, so no member can call too early. */
	if (rc == 0) {
		rc = world_export(w, "whoami", whoami, w, 0);
	}
	/* Returns on every member once all of them have created it. */
	if (rc == 0) {
		rc = world_group_create(w, "demo", members, (size_t)size, TIMEOUT_MS, &g);
	}
	if (rc < 0) {
		fail("creating the group", rc);
	}
	if (rc == 0) {
		rc = rank == 0 ? serve(g, total) : use(g, rank);
	}
	if (rc == 0) {
		rc = ask_neighbour(g, rank);
	}
	/* The service must outlive every call to it. */
	if (rc == 0) {
		rc = world_group_barrier(g, TIMEOUT_MS);
		rc = rc < 0 ? fail("group barrier", rc) : 0;
	}
	if (rc == 0 && rank == 0) {
		rc = tally(g, size);
	}
	/* Deregisters rank 0's service and value. */
	world_group_destroy(g);
	free(members);
	free(names);
	return rc;
}

int
main(void)
{
	struct world *w = NULL;
	json_int_t total = 0;
	int rc = world_open(&w);

	if (rc < 0) {
		fail("world_open", rc);
		return 1;
	}
	if (run(w, &total) < 0) {
		world_abort(w);
		return 1;
	}
	/* Keeps answering peers until every rank has called it. */
	rc = world_stop(w, TIMEOUT_MS);
	if (rc < 0) {
		fail("world_stop", rc);
		return 1;
	}
	return 0;
}
