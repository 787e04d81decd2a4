/* SPDX-License-Identifier: MIT */
/*
 * machin: the scenarios of reference/machin.md section (b) that test-rpc
 * leaves out, on 3 ranks: W1 identity, G5/X8 destroy deregisters and the
 * name can be created again, P9/B4 a non-member's handle, P11 an accessor
 * value naming services, R10/C6 handler errors through
 * world_last_failure(), R11 concurrent and serial services, C5/X7 a call
 * that times out, the lookup cache and the one-request waiting get
 * (counted with world_stats), and W4 last: ranks 0 and 1 stop right away
 * and still answer rank 2, which calls them a second later.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "wtap.h"

#define T 60000
#define ATTEMPTS 5
#define MEETERS 2

struct ctx {
	struct world *w;
	struct world_group *all; /* "0", "1", "2" */
	int rank;
	pthread_mutex_t mu;      /* guards store */
	json_t *store;           /* the P11 server's state, on rank 0 */
	int inside, most;        /* R11: calls of "one" inside now, at most */
	int met, together;       /* R11: calls of "meet" in, and that met */
};

static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static const char *
text(const json_t *j)
{
	return json_is_string(j) ? json_string_value(j) : "";
}

/* ---- handlers ---- */

/* Answers this rank's number. */
static int
whoami(void *arg, const json_t *args, const void *blob, size_t len,
       struct world_reply *reply)
{
	struct ctx *c = arg;

	return world_reply_result_new(reply, json_integer(c->rank));
}

static int
says_no(void *arg, const json_t *args, const void *blob, size_t len,
	struct world_reply *reply)
{
	return world_reply_error(reply, -EDOM, "the service says no");
}

/* Fails without a message. */
static int
plain_fail(void *arg, const json_t *args, const void *blob, size_t len,
	   struct world_reply *reply)
{
	return -EIO;
}

/* P11's server: push [k, v] stores, pull k answers v or null. */
static int
push(void *arg, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	struct ctx *c = arg;
	const char *k = json_string_value(json_array_get(args, 0));

	if (k == NULL) {
		return world_reply_error(reply, -EINVAL, "push wants [key, value]");
	}
	pthread_mutex_lock(&c->mu);
	json_object_set(c->store, k, json_array_get(args, 1));
	pthread_mutex_unlock(&c->mu);
	return world_reply_result_new(reply, json_true());
}

static int
pull(void *arg, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	struct ctx *c = arg;
	json_t *v;

	pthread_mutex_lock(&c->mu);
	v = json_incref(json_object_get(c->store, text(args)));
	pthread_mutex_unlock(&c->mu);
	return world_reply_result_new(reply, v != NULL ? v : json_null());
}

/* R11: true once MEETERS calls are inside at once (waits at most 20 s). */
static int
meet(void *arg, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	struct ctx *c = arg;
	bool met;
	int i = 0;

	__atomic_add_fetch(&c->met, 1, __ATOMIC_SEQ_CST);
	while (!(met = __atomic_load_n(&c->met, __ATOMIC_SEQ_CST) >= MEETERS) &&
	       i++ < 20000) {
		pause_ms(1);
	}
	if (met) {
		__atomic_add_fetch(&c->together, 1, __ATOMIC_SEQ_CST);
	}
	return world_reply_result_new(reply, json_boolean(met));
}

/* R11, WORLD_SERIAL: counts how many are inside at once. */
static int
one_at_a_time(void *arg, const json_t *args, const void *blob, size_t len,
	      struct world_reply *reply)
{
	struct ctx *c = arg;
	int now = __atomic_add_fetch(&c->inside, 1, __ATOMIC_SEQ_CST);
	int most = __atomic_load_n(&c->most, __ATOMIC_SEQ_CST);

	while (now > most && !__atomic_compare_exchange_n(&c->most, &most, now, false,
							  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
	}
	pause_ms(1);
	__atomic_sub_fetch(&c->inside, 1, __ATOMIC_SEQ_CST);
	return world_reply_result_new(reply, json_true());
}

/* Answers once the KV key named in args exists (at most 60 s). */
static int
gate(void *arg, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	struct ctx *c = arg;
	void *val = NULL;
	int rc = world_kv_get(c->w, text(args), &val, NULL, T);

	free(val);
	return rc < 0 ? world_reply_error(reply, rc, "gate: never opened")
		: world_reply_result_new(reply, json_true());
}

/* ---- W1 ---- */

static void
test_identity(struct ctx *c)
{
	char want[16];

	snprintf(want, sizeof(want), "%d", c->rank);
	check(world_size(c->w) == 3 && c->rank >= 0 && c->rank < 3,
	      "W1: 3 ranks, this one among 0..2");
	check(strcmp(world_name(c->w), want) == 0, "W1: this rank's name is \"%s\"", want);
	check(world_group_size(c->all) == 3 &&
		      strcmp(world_group_member(c->all, 0), "0") == 0 &&
		      strcmp(world_group_member(c->all, 1), "1") == 0 &&
		      strcmp(world_group_member(c->all, 2), "2") == 0 &&
		      world_group_member(c->all, 3) == NULL,
	      "W1: the members of the world are \"0\", \"1\", \"2\"");
}

/* ---- the lookup cache and the waiting get, counted by the registry ---- */

/* This rank's request count, or -1. */
static int64_t
requests(struct ctx *c)
{
	int64_t n = -1, entries = 0;

	return world_stats(c->w, &n, &entries) == 0 ? n : -1;
}

/*
 * The registry also counts this rank's leases (one every
 * WORLD_LEASE_INTERVAL seconds), so a window that happens to hold one
 * is tried again: a cache that does not work adds a request every time.
 */
static void
test_cache(struct ctx *c)
{
	int next = (c->rank + 1) % 3;
	char key[32], name[16];
	struct world_future *f = NULL;
	int64_t a, b, extra = -1;
	json_t *res = NULL;
	bool right = true;

	snprintf(key, sizeof(key), "who.%d", next);
	snprintf(name, sizeof(name), "%d", next);
	check(world_call(c->all, key, NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
		      json_integer_value(res) == next, "cache: a first call to %s", key);
	json_decref(res);
	for (int i = 0; i < ATTEMPTS && extra != 0; i++) {
		a = requests(c);
		res = NULL;
		right = right && world_call(c->all, key, NULL, NULL, 0, T, &res, NULL,
					    NULL) == 0 && json_integer_value(res) == next;
		json_decref(res);
		res = NULL;
		right = right && world_call_async(c->all, key, NULL, NULL, 0, T, &f) == 0 &&
			world_future_wait(f, T, &res, NULL, NULL) == 0 &&
			json_integer_value(res) == next;
		world_future_free(f);
		json_decref(res);
		res = NULL;
		right = right && world_call_direct(c->all, name, "whoami", NULL, NULL, 0, T,
						   &res, NULL, NULL) == 0 &&
			json_integer_value(res) == next;
		json_decref(res);
		b = requests(c);
		extra = a < 0 || b < 0 ? -1 : b - a - 1;
	}
	check(right, "cache: the cached calls are answered right");
	check(extra == 0, "cache: a call, an async call and a direct call to a known "
	      "owner send no registry request (%lld extra)", (long long)extra);
}

/* Rank 2 sets late.I half a second after the last; rank 0 waits for each. */
static void
test_waiting_get(struct ctx *c)
{
	int64_t a, b, extra = -1;
	char key[32];
	void *val = NULL;

	world_barrier(c->w, "late", T);
	for (int i = 0; i < ATTEMPTS; i++) {
		snprintf(key, sizeof(key), "late.%d", i);
		if (c->rank == 2) {
			pause_ms(500);
			world_kv_set(c->w, key, "x", 1);
		} else if (c->rank == 0 && extra != 0) {
			a = requests(c);
			if (world_kv_get(c->w, key, &val, NULL, T) < 0) {
				a = -1;
			}
			free(val);
			val = NULL;
			b = requests(c);
			extra = a < 0 || b < 0 ? -1 : b - a - 2;
		}
	}
	if (c->rank == 0) {
		check(extra == 0, "cache: a get that waits for a key sends one request "
		      "(%lld extra)", (long long)extra);
	}
	world_barrier(c->w, "late.done", T);
}

/* ---- P11 ---- */

/* Fetch the accessor, push through it, pull back what was pushed. */
static bool
use_accessor(struct ctx *c)
{
	json_t *acc = NULL, *res = NULL, *args;
	char k[16], v[16];
	bool right;
	int rc;

	snprintf(k, sizeof(k), "k%d", c->rank);
	snprintf(v, sizeof(v), "v%d", c->rank);
	rc = world_wait_paired(c->all, "server", T);
	if (rc == 0) {
		rc = world_get_paired(c->all, "server", &acc, NULL, NULL, T);
	}
	args = json_pack("[s, s]", k, v);
	right = rc == 0 &&
		world_call(c->all, text(json_object_get(acc, "push")), args, NULL, 0, T,
			   &res, NULL, NULL) == 0 && json_is_true(res);
	json_decref(res);
	res = NULL;
	json_decref(args);
	args = json_string(k);
	right = right &&
		world_call(c->all, text(json_object_get(acc, "pull")), args, NULL, 0, T,
			   &res, NULL, NULL) == 0 && strcmp(text(res), v) == 0;
	json_decref(res);
	json_decref(args);
	json_decref(acc);
	return right;
}

static void
test_accessor(struct ctx *c)
{
	json_t *acc = json_pack("{s:s, s:s, s:s}", "group", "all", "push", "server.push",
				"pull", "server.pull");

	if (c->rank == 0) {
		c->store = json_object();
		check(world_register(c->all, "server.push", push, c, 0) == 0 &&
			      world_register(c->all, "server.pull", pull, c, 0) == 0 &&
			      world_pair(c->all, "server", acc, NULL, 0) == 0,
		      "P11: the server registers its services and pairs an accessor");
	}
	check(use_accessor(c), "P11: a rank fetches the accessor and calls the "
	      "services it names");
	world_group_barrier(c->all, T);
	if (c->rank == 0) {
		pthread_mutex_lock(&c->mu);
		check(json_object_size(c->store) == 3 &&
			      strcmp(text(json_object_get(c->store, "k2")), "v2") == 0,
		      "P11: the calls changed the server's state on its owner");
		pthread_mutex_unlock(&c->mu);
	}
	json_decref(acc);
}

/* ---- R10/C6 ---- */

static bool
failed_as(int rc, int remote, const char *msg)
{
	const struct world_failure *why = world_last_failure();

	return rc == WORLD_EREMOTE && why->code == WORLD_EREMOTE &&
	       why->remote_code == remote && why->rank == -1 &&
	       (msg == NULL || strcmp(why->message, msg) == 0);
}

static void *
fail_elsewhere(void *arg)
{
	struct ctx *c = arg;
	bool *ok_here = calloc(1, sizeof(*ok_here));
	int rc = world_call(c->all, "no.such.service", NULL, NULL, 0, T, NULL, NULL, NULL);

	if (ok_here != NULL) {
		*ok_here = rc == -ENOENT && world_last_failure()->code == -ENOENT;
	}
	return ok_here;
}

static void
test_errors(struct ctx *c)
{
	struct world_future *f = NULL;
	struct world_rref *ref = NULL;
	const char *msg = "the service says no";
	pthread_t t;
	bool *there = NULL;
	int rc;

	/* Rank 1 owns them; rank 1's calls run in its own thread. */
	if (c->rank == 1) {
		world_register(c->all, "says.no", says_no, c, 0);
		world_register(c->all, "plain.fail", plain_fail, c, 0);
	}
	world_group_barrier(c->all, T);
	check(failed_as(world_call(c->all, "says.no", NULL, NULL, 0, T, NULL, NULL, NULL),
			-EDOM, msg),
	      "R10: a service's error: WORLD_EREMOTE, its code and message in "
	      "world_last_failure()");
	check(world_call_async(c->all, "says.no", NULL, NULL, 0, T, &f) == 0 &&
		      failed_as(world_future_wait(f, T, NULL, NULL, NULL), -EDOM, msg) &&
		      world_future_remote_code(f) == -EDOM,
	      "R10: the same through a future, and world_future_remote_code()");
	world_future_free(f);
	rc = world_call_remote(c->all, "says.no", NULL, NULL, 0, T, &ref);
	if (rc == 0) {
		rc = world_rref_fetch(ref, NULL, NULL, NULL, T);
	}
	check(failed_as(rc, -EDOM, msg), "R10: the same for a remote call (%s)",
	      world_err_name(rc));
	world_rref_release(ref);
	check(failed_as(world_call(c->all, "plain.fail", NULL, NULL, 0, T, NULL, NULL,
				   NULL), -EIO, NULL),
	      "R10: a handler that returns -EIO without a message: remote code -EIO");
	check(strcmp(world_err_name(WORLD_EREMOTE), "WORLD_EREMOTE") == 0 &&
		      strcmp(world_err_name(-EIO), "EIO") == 0,
	      "R10: the codes have names");
	/* world_last_failure() belongs to the thread that failed. */
	world_call(c->all, "says.no", NULL, NULL, 0, T, NULL, NULL, NULL);
	if (pthread_create(&t, NULL, fail_elsewhere, c) == 0) {
		pthread_join(t, (void **)&there);
	}
	check(there != NULL && *there && failed_as(WORLD_EREMOTE, -EDOM, msg),
	      "R10: another thread's failure leaves this thread's last failure alone");
	free(there);
	world_group_barrier(c->all, T);
}

/* ---- R11 and C5/X7 ---- */

/*
 * Rank 1 sends MEETERS calls of "meet" at once; all must get in together.
 * This runs before anyone else has called rank 0, after one call that
 * leaves rank 0 one idle worker: the pool must still grow for the rest.
 */
static bool
meet_all(struct ctx *c)
{
	struct world_future *fs[MEETERS] = { NULL };
	json_t *res = NULL;
	int made = 0, met = 0;

	world_call(c->all, "who.0", NULL, NULL, 0, T, NULL, NULL, NULL);
	for (int i = 0; i < MEETERS; i++) {
		made += world_call_async(c->all, "meet", NULL, NULL, 0, T, &fs[i]) == 0;
	}
	for (int i = 0; i < made; i++) {
		met += world_future_wait(fs[i], T, &res, NULL, NULL) == 0 && json_is_true(res);
		json_decref(res);
		res = NULL;
		world_future_free(fs[i]);
	}
	if (met != MEETERS) {
		fprintf(stderr, "rank %d: R11: %d of %d calls of meet met\n", c->rank, met,
			MEETERS);
	}
	return met == MEETERS;
}

static void
test_concurrency(struct ctx *c)
{
	bool right = true;

	if (c->rank == 0) {
		world_register(c->all, "meet", meet, c, 0);
		world_register(c->all, "one", one_at_a_time, c, WORLD_SERIAL);
	}
	world_group_barrier(c->all, T);
	if (c->rank == 1) {
		right = meet_all(c);
	}
	/* Every rank, rank 0 in its own thread, calls the serial one. */
	for (int i = 0; i < 50; i++) {
		right = world_call(c->all, "one", NULL, NULL, 0, T, NULL, NULL, NULL) == 0 &&
			right;
	}
	world_group_barrier(c->all, T);
	check(right, "R11: calls were answered (rank 1's calls met inside a plain service)");
	if (c->rank == 0) {
		check(c->met == MEETERS && c->together == MEETERS,
		      "R11: %d calls of a plain service sent at once run at once (%d met)",
		      MEETERS, c->together);
		check(c->most == 1, "R11: a WORLD_SERIAL service never did (%d at once)",
		      c->most);
	}
}

/*
 * A call's own timeout ends it, whether its caller waits or not: the
 * gates open only after the caller has waited well past it, so an answer
 * then is too late, however the threads are scheduled.
 */
static void
test_timeout(struct ctx *c)
{
	json_t *sync_key = json_string("gate.sync"), *async_key = json_string("gate.async");
	struct world_future *f = NULL;
	int rc = 0;

	world_export(c->w, "gate", gate, c, 0);
	world_group_barrier(c->all, T);
	if (c->rank == 0) {
		rc = world_call_direct(c->all, "1", "gate", sync_key, NULL, 0, 200, NULL,
				       NULL, NULL);
		check(rc == -ETIMEDOUT && world_last_failure()->code == -ETIMEDOUT,
		      "C5/X7: a call that is not answered in time is -ETIMEDOUT (%s)",
		      world_err_name(rc));
		world_kv_set(c->w, "gate.sync", "1", 1);
		rc = world_call_direct_async(c->all, "1", "gate", async_key, NULL, 0, 200, &f);
		if (rc == 0) {
			rc = world_future_wait(f, 1000, NULL, NULL, NULL);
		}
		check(rc == -ETIMEDOUT, "C5/X7: an async call with a 200 ms timeout, "
		      "waited on for 1 s: -ETIMEDOUT (%s)", world_err_name(rc));
		world_kv_set(c->w, "gate.async", "1", 1);
		rc = f == NULL ? -ENOMEM : world_future_wait(f, T, NULL, NULL, NULL);
		check(rc == -ETIMEDOUT, "C5/X7: its answer, sent after that, comes too "
		      "late: -ETIMEDOUT (%s)", world_err_name(rc));
		world_future_free(f);
		rc = world_call_direct(c->all, "1", "gate", async_key, NULL, 0, T, NULL, NULL,
				       NULL);
		check(rc == 0, "C5/X7: the same handler answers once it can");
	}
	json_decref(sync_key);
	json_decref(async_key);
	world_group_barrier(c->all, T);
}

/* ---- P9/B4: group "duo" of ranks 1 and 2; rank 0 is outside ---- */

static void
duo_members(struct ctx *c, struct world_group **duo)
{
	const char *members[] = { "2", "1" };
	json_t *v = json_pack("{s:i}", "v", 7);

	world_group_create(c->w, "duo", members, 2, T, duo);
	if (c->rank == 1 && *duo != NULL) {
		world_register(*duo, "duo.who", whoami, c, 0);
		world_pair(*duo, "duo.val", v, "xyz", 3);
	}
	json_decref(v);
}

static void
duo_outsider_reads(struct world_group *h)
{
	json_t *v = NULL, *res = NULL;
	struct world_future *f = NULL;
	struct world_rref *ref = NULL;
	void *blob = NULL;
	size_t len = 0;
	bool yes = false, reg = false;

	check(world_is_paired(h, "duo.val", &yes) == 0 && yes &&
		      world_is_registered(h, "duo.who", &reg) == 0 && reg &&
		      world_wait_paired(h, "duo.val", T) == 0,
	      "P9: a non-member sees what is paired and registered");
	check(world_get_paired(h, "duo.val", &v, &blob, &len, T) == 0 &&
		      json_integer_value(json_object_get(v, "v")) == 7 && len == 3 &&
		      memcmp(blob, "xyz", 3) == 0,
	      "P9: a non-member gets a paired value and its blob");
	json_decref(v);
	free(blob);
	check(world_call(h, "duo.who", NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
		      json_integer_value(res) == 1, "P9: a non-member calls a service");
	json_decref(res);
	res = NULL;
	check(world_call_async(h, "duo.who", NULL, NULL, 0, T, &f) == 0 &&
		      world_future_wait(f, T, &res, NULL, NULL) == 0 &&
		      json_integer_value(res) == 1, "P9: and asynchronously");
	world_future_free(f);
	json_decref(res);
	res = NULL;
	check(world_call_remote(h, "duo.who", NULL, NULL, 0, T, &ref) == 0 &&
		      world_rref_fetch(ref, &res, NULL, NULL, T) == 0 &&
		      json_integer_value(res) == 1, "P9: and remotely");
	world_rref_release(ref);
	json_decref(res);
	res = NULL;
	check(world_call_direct(h, "2", "whoami", NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
		      json_integer_value(res) == 2,
	      "P9: a non-member calls a member's direct handler");
	json_decref(res);
	check(world_call_direct(h, "0", "whoami", NULL, NULL, 0, T, NULL, NULL, NULL) ==
		      WORLD_ENOTMEMBER, "C4: but not one outside the group, itself included");
}

static void
duo_outsider(struct ctx *c)
{
	struct world_group *h = NULL;
	json_t *v = json_true();

	check(world_group_open(c->w, "no.such.group", &h) == -ENOENT && h == NULL,
	      "P9: opening a group that does not exist is -ENOENT");
	check(world_group_open(c->w, "duo", &h) == 0, "P9: a non-member opens a handle");
	if (h == NULL) {
		return;
	}
	check(world_group_size(h) == 2 && strcmp(world_group_member(h, 0), "1") == 0 &&
		      strcmp(world_group_member(h, 1), "2") == 0 &&
		      !world_group_is_member(h, NULL) && world_group_is_member(h, "2") &&
		      strcmp(world_group_name(h), "duo") == 0,
	      "P9: the handle knows the group's name and sorted members, not this rank");
	check(world_pair(h, "x", v, NULL, 0) == WORLD_ENOTMEMBER &&
		      world_unpair(h, "duo.val") == WORLD_ENOTMEMBER,
	      "P9: pair and unpair are WORLD_ENOTMEMBER");
	check(world_register(h, "x", whoami, c, 0) == WORLD_ENOTMEMBER &&
		      world_deregister(h, "duo.who") == WORLD_ENOTMEMBER,
	      "P9: register and deregister are WORLD_ENOTMEMBER");
	check(world_group_barrier(h, T) == WORLD_ENOTMEMBER,
	      "B4: a non-member's barrier is WORLD_ENOTMEMBER");
	duo_outsider_reads(h);
	check(world_group_destroy(h) == 0, "P9: a non-member's handle is closed");
	json_decref(v);
}

static void
test_outsider(struct ctx *c)
{
	struct world_group *duo = NULL;
	json_t *res = NULL;
	bool right = true;

	if (c->rank > 0) {
		duo_members(c, &duo);
	}
	world_barrier(c->w, "duo.ready", T);
	if (c->rank == 0) {
		duo_outsider(c);
	}
	world_barrier(c->w, "duo.read", T);
	if (duo != NULL) {
		/* The outsider's close took nothing away from the members. */
		right = world_call(duo, "duo.who", NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
			json_integer_value(res) == 1;
		json_decref(res);
		world_group_barrier(duo, T);
		world_group_destroy(duo);
	}
	check(right, "P9: the members' services outlive the outsider's handle");
	world_barrier(c->w, "duo.done", T);
}

/* ---- G5/X8: group "g5" of ranks 0 and 1; rank 1 owns, then leaves ---- */

static int64_t
entries(struct ctx *c)
{
	int64_t n = 0, e = -1;

	return world_stats(c->w, &n, &e) == 0 ? e : -1;
}

static void
g5_owner(struct ctx *c, struct world_group *g)
{
	json_t *v = json_integer(5);
	int64_t before, after;

	world_register(g, "g5.who", whoami, c, 0);
	world_pair(g, "g5.val", v, NULL, 0);
	json_decref(v);
	world_group_barrier(g, T);
	/* Rank 0 called and fetched: its cache knows rank 1 owns them. */
	world_group_barrier(g, T);
	before = entries(c);
	check(world_group_destroy(g) == 0, "G5: the owner destroys the group");
	after = entries(c);
	check(before >= 2 && after == before - 2,
	      "G5: which releases its 2 entries (%lld before, %lld after)",
	      (long long)before, (long long)after);
	world_barrier(c->w, "g5.left", T);
}

static void
g5_caller(struct ctx *c, struct world_group *g)
{
	json_t *res = NULL;
	bool yes = true;

	world_group_barrier(g, T);
	check(world_call(g, "g5.who", NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
		      json_integer_value(res) == 1,
	      "G5: a member calls the owner's service");
	json_decref(res);
	res = NULL;
	check(world_get_paired(g, "g5.val", &res, NULL, NULL, T) == 0 &&
		      json_integer_value(res) == 5, "G5: and gets its value");
	json_decref(res);
	res = NULL;
	world_group_barrier(g, T);
	world_barrier(c->w, "g5.left", T);
	check(world_is_registered(g, "g5.who", &yes) == 0 && !yes &&
		      world_is_paired(g, "g5.val", &yes) == 0 && !yes,
	      "G5: after the owner destroys, its service and value are gone");
	check(world_call(g, "g5.who", NULL, NULL, 0, T, NULL, NULL, NULL) == -ENOENT &&
		      world_get_paired(g, "g5.val", &res, NULL, NULL, T) == -ENOENT,
	      "G5: calling and fetching them is -ENOENT, cached or not");
	check(world_group_destroy(g) == 0, "G5: the other member destroys too");
}

static void
test_destroy(struct ctx *c)
{
	const char *two[] = { "0", "1" };
	struct world_group *g = NULL;
	json_t *res = NULL;
	bool right = false;

	if (c->rank < 2) {
		check(world_group_create(c->w, "g5", two, 2, T, &g) == 0, "G5: create g5");
		if (c->rank == 1) {
			g5_owner(c, g);
		} else {
			g5_caller(c, g);
		}
		g = NULL;
	} else {
		world_barrier(c->w, "g5.left", T);
	}
	check(world_group_destroy(NULL) == 0, "G5: destroying NULL does nothing");
	world_barrier(c->w, "g5.gone", T);
	if (c->rank < 2) {
		/* X8: created again; now rank 0 takes the key rank 1 had. */
		check(world_group_create(c->w, "g5", two, 2, T, &g) == 0,
		      "X8: the same name is created again");
		if (c->rank == 0) {
			check(world_register(g, "g5.who", whoami, c, 0) == 0,
			      "X8: the key the old owner had is free again");
		}
		world_group_barrier(g, T);
		right = world_call(g, "g5.who", NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
			json_integer_value(res) == 0;
		json_decref(res);
		world_group_barrier(g, T);
		world_group_destroy(g);
	}
	if (c->rank < 2) {
		check(right, "X8: calls reach the new owner, not the old one");
	}
	world_barrier(c->w, "g5.done", T);
}

/* ---- W4: ranks 0 and 1 stop at once; rank 2 calls them a second later ---- */

static int
test_stop(struct ctx *c)
{
	json_t *res = NULL;
	char key[32];
	int rc;

	snprintf(key, sizeof(key), "w4.%d", c->rank);
	if (c->rank < 2) {
		world_register(c->all, key, whoami, c, 0);
	}
	world_group_barrier(c->all, T);
	if (c->rank < 2) {
		/*
		 * The group stays: its services must answer until everyone
		 * stops. So its handle is never freed (destroying it would
		 * deregister them; after world_stop() it cannot be destroyed):
		 * LeakSanitizer reports it until world_stop() frees the groups
		 * it still has.
		 */
		rc = world_stop(c->w, T);
		check(rc == 0, "W4: ranks 0 and 1 stop at once and answer rank 2 until "
		      "it stops too (rank 2's checks fail the job)");
		return rc;
	}
	pause_ms(1000);
	for (int r = 0; r < 2; r++) {
		snprintf(key, sizeof(key), "w4.%d", r);
		check(world_call(c->all, key, NULL, NULL, 0, T, &res, NULL, NULL) == 0 &&
			      json_integer_value(res) == r,
		      "W4: rank %d answers after its program stopped", r);
		json_decref(res);
		res = NULL;
	}
	check(world_call_direct(c->all, "1", "whoami", NULL, NULL, 0, T, &res, NULL,
				NULL) == 0 && json_integer_value(res) == 1,
	      "W4: so do its direct handlers");
	json_decref(res);
	world_group_destroy(c->all);
	return world_stop(c->w, T);
}

int
main(void)
{
	const char *three[] = { "2", "0", "1" };
	struct ctx c = { .mu = PTHREAD_MUTEX_INITIALIZER };
	char key[32];
	int rc = world_open(&c.w);

	if (rc < 0) {
		fprintf(stderr, "world_open: %s\n", world_strerror(rc));
		return 1;
	}
	c.rank = world_rank(c.w);
	/* Rank 0's checks: 1 + 3 + 3 + 4 + 3 + 6 + 4 + 15 + 10 + 1 = 50. */
	wtap_start(c.rank, 50);
	rc = world_group_create(c.w, "all", three, 3, T, &c.all);
	check(rc == 0, "all three create the world's group");
	if (rc < 0) {
		world_abort(c.w);
		return 1;
	}
	snprintf(key, sizeof(key), "who.%d", c.rank);
	world_register(c.all, key, whoami, &c, 0);
	world_export(c.w, "whoami", whoami, &c, 0);
	world_group_barrier(c.all, T);
	test_identity(&c);
	test_concurrency(&c);
	test_cache(&c);
	test_waiting_get(&c);
	test_accessor(&c);
	test_errors(&c);
	test_timeout(&c);
	test_outsider(&c);
	test_destroy(&c);
	test_stop(&c);
	json_decref(c.store);
	return wtap_done();
}
