/* SPDX-License-Identifier: MIT */
/*
 * rpc: RPC groups on 3 ranks, after Machin's tests (reference/machin.md):
 * G1/G4 creation by members only and sorted members, P1-P8 and P10
 * values, R1-R10 services with sync, async and remote calls, C1-C6
 * direct handlers called by every rank on rank 1, handler errors, calls
 * into this very process, and a group destroyed and created again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "wtap.h"

#define T 30000

static int counter = 20;

static int
count(void *ctx, const json_t *args, const void *blob, size_t len,
      struct world_reply *reply)
{
	int *c = ctx;

	return world_reply_result_new(reply, json_integer(__atomic_add_fetch(c, 1,
					      __ATOMIC_SEQ_CST)));
}

static int
get_count(void *ctx, const json_t *args, const void *blob, size_t len,
	  struct world_reply *reply)
{
	return world_reply_result_new(reply, json_integer(*(int *)ctx));
}

static int
add(void *ctx, const json_t *args, const void *blob, size_t len,
    struct world_reply *reply)
{
	json_int_t a = 0, b = 0;

	if (json_unpack((json_t *)args, "[I, I]", &a, &b) < 0) {
		return world_reply_error(reply, -EINVAL, "add wants [a, b]");
	}
	return world_reply_result_new(reply, json_integer(a + b));
}

static int
fail(void *ctx, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	return world_reply_error(reply, -EDOM, "this handler always fails");
}

static json_int_t
as_int(json_t *j)
{
	json_int_t v = json_integer_value(j);

	json_decref(j);
	return v;
}

static void
test_groups(struct world *w, struct world_group **pair_g, struct world_group **all)
{
	const char *two[] = { "0", "1" }, *three[] = { "2", "0", "1" };
	int r = world_rank(w);

	if (r < 2) {
		check(world_group_create(w, "group", two, 2, T, pair_g) == 0,
		      "G1: members create a group that rank 2 never enters");
	}
	check(world_group_create(w, "all", three, 3, T, all) == 0,
	      "G4: every member creates a 3-member group");
	check(world_group_size(*all) == 3 && strcmp(world_group_member(*all, 0), "0") == 0 &&
		      strcmp(world_group_member(*all, 2), "2") == 0,
	      "G4: members come back sorted");
	check(world_group_is_member(*all, "0") && world_group_is_member(*all, NULL),
	      "G4: is_member by name and for this process");
	check(world_group_create(w, "all", three, 3, T, &(struct world_group *){ NULL }) == -EEXIST,
	      "G3: the same group twice in one process is -EEXIST");
	check(world_group_create(w, "solo", (const char *[]){ r == 0 ? "1" : "0" }, 1, T,
				 &(struct world_group *){ NULL }) == -EINVAL,
	      "G2: a creator not in the group gets -EINVAL");
}

/* P1-P8 in group ["0", "1"]; rank 2 only keeps the check count even. */
static void
test_values(struct world *w, struct world_group *g)
{
	int r = world_rank(w);
	json_t *v = NULL, *obj = json_pack("{s:i}", "counter", 20);
	bool paired = false;

	if (r == 0) {
		check(world_pair(g, "service", obj, "bytes", 5) == 0, "P1: pair");
		check(world_pair(g, "service", obj, NULL, 0) == -EEXIST,
		      "P2: pair again is -EEXIST");
	}
	if (g != NULL) {
		world_group_barrier(g, T);
	}
	if (r == 1) {
		void *blob = NULL;
		size_t len = 0;

		check(world_is_paired(g, "service", &paired) == 0 && paired,
		      "P3: another member sees it paired");
		check(world_pair(g, "service", obj, NULL, 0) == -EEXIST,
		      "P4: another member cannot pair the same key");
		check(world_unpair(g, "service") == -EPERM,
		      "P5: only the owner unpairs");
		check(world_get_paired(g, "service2", &v, NULL, NULL, T) == -ENOENT,
		      "P6: get_paired of a missing key is -ENOENT");
		check(world_get_paired(g, "service", &v, &blob, &len, T) == 0 &&
			      json_integer_value(json_object_get(v, "counter")) == 20 &&
			      len == 5 && memcmp(blob, "bytes", 5) == 0,
		      "P7: get_paired fetches a copy with its blob from the owner");
		json_decref(v);
		free(blob);
	}
	if (g != NULL) {
		world_group_barrier(g, T);
	}
	if (r == 0) {
		check(world_unpair(g, "service") == 0, "P8: the owner unpairs");
	}
	if (g != NULL) {
		world_group_barrier(g, T);
	}
	if (r == 1) {
		check(world_is_paired(g, "service", &paired) == 0 && !paired,
		      "P8: then nobody sees it paired");
	}
	json_decref(obj);
}

/* P10: all three race to pair one flag; exactly one wins. */
static void
test_race(struct world *w, struct world_group *all)
{
	int64_t wins = 0;
	bool paired = false;
	int rc = world_pair(all, "solved", json_true(), NULL, 0);

	check(rc == 0 || rc == -EEXIST, "P10: pairing the flag wins or is -EEXIST");
	world_kv_add(w, "wins", rc == 0, NULL);
	world_group_barrier(all, T);
	check(world_kv_add(w, "wins", 0, &wins) == 0 && wins == 1,
	      "P10: exactly one rank won");
	check(world_is_paired(all, "solved", &paired) == 0 && paired,
	      "P10: after the barrier every rank sees the flag");
}

/* R1-R9 in group ["0", "1"]. */
static void
test_services(struct world *w, struct world_group *g)
{
	int r = world_rank(w);
	struct world_future *f = NULL;
	struct world_rref *ref = NULL;
	json_t *res = NULL, *again = NULL;
	bool reg = false;

	if (r == 0) {
		check(world_register(g, "count", count, &counter, 0) == 0 &&
			      world_register(g, "get_count", get_count, &counter, 0) == 0,
		      "R1: register two services");
		check(world_register(g, "count", count, &counter, 0) == -EEXIST,
		      "R2: register again is -EEXIST");
	}
	world_group_barrier(g, T);
	if (r == 1) {
		check(world_is_registered(g, "count", &reg) == 0 && reg, "R3: registered");
		check(world_register(g, "count", count, NULL, 0) == -EEXIST,
		      "R4: another member cannot register the key");
		check(world_deregister(g, "count") == -EPERM, "R5: only the owner deregisters");
		check(world_call(g, "service2", NULL, NULL, 0, T, &res, NULL, NULL) == -ENOENT,
		      "R6: calling a missing service is -ENOENT");
		check(world_call(g, "count", NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
			      as_int(res) == 21, "R7: sync call runs on the owner: 21");
		check(world_call_async(g, "count", NULL, NULL, 0, T, &f) == 0 &&
			      world_future_wait(f, T, &res, NULL, NULL) == 0 && as_int(res) == 22,
		      "R7: async call: 22");
		world_future_free(f);
		check(world_call_remote(g, "count", NULL, NULL, 0, T, &ref) == 0 &&
			      world_rref_fetch(ref, &res, NULL, NULL, T) == 0 &&
			      world_rref_fetch(ref, &again, NULL, NULL, T) == 0 &&
			      json_integer_value(res) == 23 && json_integer_value(again) == 23,
		      "R7: remote call: 23, the same on a second fetch");
		json_decref(res);
		json_decref(again);
		world_rref_release(ref);
	}
	world_group_barrier(g, T);
	if (r == 0) {
		check(world_call(g, "get_count", NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
			      as_int(res) == 23, "R8: the owner's state is 23 (a call to itself)");
		check(world_deregister(g, "count") == 0 && world_deregister(g, "get_count") == 0,
		      "R8: the owner deregisters both");
	}
	world_group_barrier(g, T);
	if (r == 1) {
		check(world_is_registered(g, "count", &reg) == 0 && !reg &&
			      world_call(g, "count", NULL, NULL, 0, T, &res, NULL, NULL) == -ENOENT,
		      "R9: gone, also for a caller that had it cached");
	}
}

/* C1-C4, C6 in the 3-member group: everyone calls rank 1, itself included. */
static void
test_direct(struct world *w, struct world_group *all)
{
	json_t *args = json_pack("[i, i]", 1, 2), *res = NULL, *again = NULL;
	struct world_future *f = NULL;
	struct world_rref *ref = NULL;
	const struct world_failure *why;

	world_export(w, "add", add, NULL, 0);
	world_export(w, "fail", fail, NULL, WORLD_SERIAL);
	world_group_barrier(all, T);
	check(world_call_direct(all, "1", "add", args, NULL, 0, T, &res, NULL, NULL) == 0 &&
		      as_int(res) == 3, "C1: add(1, 2) on rank 1 is 3");
	check(world_call_direct_async(all, "1", "add", args, NULL, 0, T, &f) == 0 &&
		      world_future_wait(f, T, &res, NULL, NULL) == 0 && as_int(res) == 3,
	      "C2: the same, async");
	world_future_free(f);
	check(world_call_direct_remote(all, "1", "add", args, NULL, 0, T, &ref) == 0 &&
		      world_rref_fetch(ref, &res, NULL, NULL, T) == 0 && as_int(res) == 3 &&
		      world_rref_fetch(ref, &again, NULL, NULL, T) == 0 &&
		      as_int(again) == 3,
	      "C3: the same, remote: fetched twice, the same value");
	world_rref_release(ref);
	check(world_call_direct_remote(all, "7", "add", args, NULL, 0, T, &ref) ==
		      WORLD_ENOTMEMBER && ref == NULL, "C4: also for a remote call");
	check(world_call_direct(all, "7", "add", args, NULL, 0, T, NULL, NULL, NULL) ==
		      WORLD_ENOTMEMBER, "C4: a target outside the group");
	check(world_call_direct(all, "1", "fail", NULL, NULL, 0, T, NULL, NULL, NULL) ==
		      WORLD_EREMOTE, "C6: a handler's error reaches the caller");
	why = world_last_failure();
	check(why->remote_code == -EDOM &&
		      strcmp(why->message, "this handler always fails") == 0,
	      "C6: with the handler's code and message");
	json_decref(args);
}

int
main(void)
{
	struct world_group *g = NULL, *all = NULL, *again = NULL;
	struct world *w = NULL;
	const char *two[] = { "0", "1" };
	int rc = world_open(&w);

	if (rc < 0) {
		fprintf(stderr, "world_open: %s\n", world_strerror(rc));
		return 1;
	}
	/* Rank 0's checks: 6 + 3 + 3 + 4 + 1 + 7 + 1 = 25. */
	wtap_start(world_rank(w), 25);
	test_groups(w, &g, &all);
	test_values(w, g);
	test_race(w, all);
	if (world_rank(w) < 2) {
		test_services(w, g);
		world_group_destroy(g);
	}
	/* Both members have left before either creates it again. */
	world_group_barrier(all, T);
	if (world_rank(w) < 2) {
		check(world_group_create(w, "group", two, 2, T, &again) == 0,
		      "X8: a destroyed group can be created again");
		world_group_destroy(again);
	}
	test_direct(w, all);
	world_group_barrier(all, T);
	world_group_destroy(all);
	check(world_stop(w, 60000) == 0, "W4: graceful stop");
	return wtap_done();
}
