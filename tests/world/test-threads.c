/* SPDX-License-Identifier: MIT */
/*
 * threads: libworld called from 8 user threads per rank on 4 ranks at
 * once. The threads call services and direct handlers on every rank,
 * their own process included, while handlers themselves call into their
 * own process and back into the caller's (nested calls must not
 * deadlock). A WORLD_SERIAL service never runs two calls at once; two
 * calls of a plain service do. Then futures: wait_all over many async
 * calls, wait_any and test against a call that cannot finish yet.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "wtap.h"

#define T 60000
#define NRANKS 4
#define NTHREADS 8
#define ITERS 40
#define NFUTURES 64

/* What every handler of this process sees, and what they count. */
struct ctx {
	struct world *w;
	struct world_group *g;
	int rank;
	int serial_inside; /* calls of serial.R running now */
	int serial_max;    /* the most ever seen at once */
	int serial_calls;
	int met;           /* calls of meet.R that have arrived */
	int together;      /* and of those, how many met the other */
	int failed;        /* wrong answers seen by this rank's threads */
};

struct worker {
	struct ctx *c;
	int tid;
	pthread_t thread;
};

static void
pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static json_int_t
arg_x(const json_t *args)
{
	return json_integer_value(json_object_get(args, "x"));
}

static char *
key_of(char *buf, size_t size, const char *svc, int rank)
{
	snprintf(buf, size, "%s.%d", svc, rank);
	return buf;
}

static char *
name_of(char *buf, size_t size, int rank)
{
	snprintf(buf, size, "%d", rank);
	return buf;
}

/* echo.R: [x, R]. */
static int
echo(void *arg, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	struct ctx *c = arg;

	return world_reply_result_new(reply, json_pack("[I, i]", arg_x(args), c->rank));
}

/* serial.R (WORLD_SERIAL): 3x, counting how many run at once. */
static int
serial(void *arg, const json_t *args, const void *blob, size_t len,
       struct world_reply *reply)
{
	struct ctx *c = arg;
	int now = __atomic_add_fetch(&c->serial_inside, 1, __ATOMIC_SEQ_CST);
	int max = __atomic_load_n(&c->serial_max, __ATOMIC_SEQ_CST);

	while (now > max && !__atomic_compare_exchange_n(&c->serial_max, &max, now, false,
							 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
	}
	/* Stay inside a while, so that an overlap would show. */
	pause_us(200);
	__atomic_add_fetch(&c->serial_calls, 1, __ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&c->serial_inside, 1, __ATOMIC_SEQ_CST);
	return world_reply_result_new(reply, json_integer(3 * arg_x(args)));
}

/* The direct handler "twice": 2x. */
static int
twice(void *arg, const json_t *args, const void *blob, size_t len,
      struct world_reply *reply)
{
	return world_reply_result_new(reply, json_integer(2 * arg_x(args)));
}

/* nest.R: echo.R in this very process plus "twice" back on the caller:
 * x + 2x. */
static int
nest(void *arg, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	struct ctx *c = arg;
	json_t *a = NULL, *b = NULL;
	char key[32], from[16];
	json_int_t sum;
	int rc;

	name_of(from, sizeof(from),
		(int)json_integer_value(json_object_get(args, "from")));
	rc = world_call(c->g, key_of(key, sizeof(key), "echo", c->rank), args, NULL, 0,
			T, &a, NULL, NULL);
	if (rc == 0) {
		rc = world_call_direct(c->g, from, "twice", args, NULL, 0, T, &b, NULL,
				       NULL);
	}
	if (rc < 0) {
		json_decref(a);
		return world_reply_error(reply, rc, "nest: an inner call failed");
	}
	sum = json_integer_value(json_array_get(a, 0)) + json_integer_value(b);
	json_decref(a);
	json_decref(b);
	return world_reply_result_new(reply, json_integer(sum));
}

/* The direct handler "nestd": "twice" in this very process plus serial
 * on the rank two along: 2x + 3x. */
static int
nestd(void *arg, const json_t *args, const void *blob, size_t len,
      struct world_reply *reply)
{
	struct ctx *c = arg;
	json_t *a = NULL, *b = NULL;
	char me[16], key[32];
	json_int_t sum;
	int rc;

	rc = world_call_direct(c->g, name_of(me, sizeof(me), c->rank), "twice", args,
			       NULL, 0, T, &a, NULL, NULL);
	if (rc == 0) {
		rc = world_call(c->g, key_of(key, sizeof(key), "serial",
					     (c->rank + 2) % NRANKS),
				args, NULL, 0, T, &b, NULL, NULL);
	}
	if (rc < 0) {
		json_decref(a);
		return world_reply_error(reply, rc, "nestd: an inner call failed");
	}
	sum = json_integer_value(a) + json_integer_value(b);
	json_decref(a);
	json_decref(b);
	return world_reply_result_new(reply, json_integer(sum));
}

/* meet.R: true once two calls are inside at the same time (at most 20 s). */
static int
meet(void *arg, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	struct ctx *c = arg;
	bool met;
	int i = 0;

	__atomic_add_fetch(&c->met, 1, __ATOMIC_SEQ_CST);
	while (!(met = __atomic_load_n(&c->met, __ATOMIC_SEQ_CST) >= 2) && i++ < 20000) {
		pause_us(1000);
	}
	if (met) {
		__atomic_add_fetch(&c->together, 1, __ATOMIC_SEQ_CST);
	}
	return world_reply_result_new(reply, json_boolean(met));
}

/* gate.R: answers "opened" once the key named in args exists. */
static int
gate(void *arg, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	struct ctx *c = arg;
	const char *key = json_string_value(json_object_get(args, "key"));
	void *val = NULL;
	size_t n = 0;
	int rc = world_kv_get(c->w, key != NULL ? key : "", &val, &n, T);

	free(val);
	if (rc < 0) {
		return world_reply_error(reply, rc, "gate: the key never came");
	}
	return world_reply_result_new(reply, json_string("opened"));
}

static int
set_up(struct ctx *c)
{
	static const struct {
		const char *svc;
		world_handler_fn *fn;
		unsigned flags;
	} svcs[] = {
		{ "echo", echo, 0 }, { "serial", serial, WORLD_SERIAL },
		{ "nest", nest, 0 }, { "meet", meet, 0 }, { "gate", gate, 0 },
	};
	char key[32];
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof(svcs) / sizeof(svcs[0]); i++) {
		rc = world_register(c->g, key_of(key, sizeof(key), svcs[i].svc, c->rank),
				    svcs[i].fn, c, svcs[i].flags);
	}
	if (rc == 0) {
		rc = world_export(c->w, "twice", twice, c, 0);
	}
	if (rc == 0) {
		rc = world_export(c->w, "nestd", nestd, c, 0);
	}
	return rc;
}

/* One call of kind @kind to rank @t with @x; 0 if the answer is right. */
static int
one_call(struct ctx *c, int kind, int t, json_int_t x)
{
	json_t *args = json_pack("{s:I, s:i}", "x", x, "from", c->rank), *res = NULL;
	char key[32], name[16];
	json_int_t want = 0;
	bool right = false;
	int rc;

	name_of(name, sizeof(name), t);
	switch (kind) {
	case 0:
		rc = world_call(c->g, key_of(key, sizeof(key), "echo", t), args, NULL, 0,
				T, &res, NULL, NULL);
		right = rc == 0 && json_integer_value(json_array_get(res, 0)) == x &&
			json_integer_value(json_array_get(res, 1)) == t;
		break;
	case 1:
		rc = world_call_direct(c->g, name, "twice", args, NULL, 0, T, &res, NULL,
				       NULL);
		want = 2 * x;
		break;
	case 2:
		rc = world_call(c->g, key_of(key, sizeof(key), "nest", t), args, NULL, 0,
				T, &res, NULL, NULL);
		want = 3 * x;
		break;
	case 3:
		rc = world_call_direct(c->g, name, "nestd", args, NULL, 0, T, &res, NULL,
				       NULL);
		want = 5 * x;
		break;
	default:
		rc = world_call(c->g, key_of(key, sizeof(key), "serial", t), args, NULL,
				0, T, &res, NULL, NULL);
		want = 3 * x;
		break;
	}
	if (kind != 0) {
		right = rc == 0 && json_integer_value(res) == want;
	}
	if (!right) {
		fprintf(stderr, "rank %d: call kind %d to rank %d with x=%lld: %s\n",
			c->rank, kind, t, (long long)x, world_err_name(rc));
	}
	json_decref(args);
	json_decref(res);
	return right ? 0 : -1;
}

static void *
run_thread(void *arg)
{
	struct worker *wk = arg;
	struct ctx *c = wk->c;

	for (int i = 0; i < ITERS; i++) {
		int t = (c->rank + wk->tid + i) % NRANKS;
		json_int_t x = (json_int_t)c->rank * 100000 + wk->tid * 1000 + i;

		if (one_call(c, (i + wk->tid) % 5, t, x) < 0) {
			__atomic_add_fetch(&c->failed, 1, __ATOMIC_SEQ_CST);
		}
	}
	return NULL;
}

/* Two threads call meet on the next rank at once; both must be let in. */
static void *
run_meet(void *arg)
{
	struct worker *wk = arg;
	struct ctx *c = wk->c;
	json_t *res = NULL;
	char key[32];
	int rc = world_call(c->g, key_of(key, sizeof(key), "meet", (c->rank + 1) % NRANKS),
			    NULL, NULL, 0, T, &res, NULL, NULL);

	if (rc < 0 || !json_is_true(res)) {
		fprintf(stderr, "rank %d: meet: %s, %s\n", c->rank, world_err_name(rc),
			json_is_true(res) ? "met" : "alone");
		__atomic_add_fetch(&c->failed, 1, __ATOMIC_SEQ_CST);
	}
	json_decref(res);
	return NULL;
}

static int
run_threads(struct ctx *c, int n, void *(*fn)(void *))
{
	struct worker wk[NTHREADS];
	int started = 0;

	for (int i = 0; i < n; i++) {
		wk[i] = (struct worker){ .c = c, .tid = i };
		if (pthread_create(&wk[i].thread, NULL, fn, &wk[i]) != 0) {
			break;
		}
		started++;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(wk[i].thread, NULL);
	}
	return started;
}

static void
test_threads(struct ctx *c)
{
	int started;

	c->failed = 0;
	started = run_threads(c, NTHREADS, run_thread);
	check(started == NTHREADS && c->failed == 0,
	      "threads: %d threads x %d nested and plain calls to every rank, "
	      "all right (%d wrong)", NTHREADS, ITERS, c->failed);
	/* Every rank is done calling; only then is the count final. */
	world_group_barrier(c->g, T);
	check(c->serial_max == 1 && c->serial_calls > 0,
	      "threads: the serial service never ran two calls at once "
	      "(%d calls, at most %d at once)", c->serial_calls, c->serial_max);
	c->failed = 0;
	started = run_threads(c, 2, run_meet);
	check(started == 2 && c->failed == 0,
	      "threads: two calls of a plain service run at the same time");
	world_group_barrier(c->g, T);
	check(c->met == 2 && c->together == 2,
	      "threads: both calls this rank got met inside (%d of %d)", c->together,
	      c->met);
}

static int
fire(struct ctx *c, int k, struct world_future **out)
{
	json_t *args = json_pack("{s:i}", "x", k);
	char key[32], name[16];
	int t = k % NRANKS, rc;

	if (k % 2 == 0) {
		rc = world_call_async(c->g, key_of(key, sizeof(key), "echo", t), args, NULL,
				      0, T, out);
	} else {
		rc = world_call_direct_async(c->g, name_of(name, sizeof(name), t), "twice",
					     args, NULL, 0, T, out);
	}
	json_decref(args);
	return rc;
}

static bool
fired_right(struct world_future *f, int k)
{
	json_t *res = NULL;
	bool right = world_future_wait(f, 0, &res, NULL, NULL) == 0 &&
		(k % 2 == 0 ? json_integer_value(json_array_get(res, 0)) == k &&
			      json_integer_value(json_array_get(res, 1)) == k % NRANKS
			    : json_integer_value(res) == 2 * k);

	json_decref(res);
	return right;
}

static void
test_wait_all(struct ctx *c)
{
	struct world_future *fs[NFUTURES] = { NULL };
	int made = 0, right = 0, tested = 0;

	for (int k = 0; k < NFUTURES; k++) {
		made += fire(c, k, &fs[k]) == 0;
	}
	check(made == NFUTURES && world_future_wait_all(fs, NFUTURES, T) == 0,
	      "futures: wait_all over %d async calls to every rank", NFUTURES);
	for (int k = 0; k < made; k++) {
		tested += world_future_test(fs[k]) == 1;
		right += fired_right(fs[k], k);
	}
	check(tested == NFUTURES, "futures: after wait_all every one tests done");
	check(right == NFUTURES, "futures: every result is right (%d of %d)", right,
	      NFUTURES);
	for (int k = 0; k < made; k++) {
		world_future_free(fs[k]);
	}
}

static void
test_wait_any(struct ctx *c)
{
	struct world_future *fs[2] = { NULL, NULL };
	char key[32], open[32], name[16];
	json_t *args, *res = NULL;
	size_t idx = 9;

	/* The gate cannot answer before this rank sets its key. */
	snprintf(open, sizeof(open), "gate.open.%d", c->rank);
	args = json_pack("{s:s}", "key", open);
	world_call_async(c->g, key_of(key, sizeof(key), "gate", (c->rank + 1) % NRANKS),
			 args, NULL, 0, T, &fs[0]);
	json_decref(args);
	args = json_pack("{s:i}", "x", 21);
	world_call_direct_async(c->g, name_of(name, sizeof(name), (c->rank + 2) % NRANKS),
				"twice", args, NULL, 0, T, &fs[1]);
	json_decref(args);
	check(fs[0] != NULL && fs[1] != NULL, "futures: two async calls made");
	if (fs[0] == NULL || fs[1] == NULL) {
		goto out;
	}
	check(world_future_test(fs[0]) == 0, "futures: test says a gated call is not done");
	check(world_future_wait_any(fs, 2, T, &idx) == 0 && idx == 1,
	      "futures: wait_any gives the one that can finish");
	check(world_future_wait(fs[1], 0, &res, NULL, NULL) == 0 &&
		      json_integer_value(res) == 42, "futures: and its result");
	json_decref(res);
	res = NULL;
	check(world_future_wait_any(fs, 1, 100, &idx) == -ETIMEDOUT,
	      "futures: wait_any on the gated call alone times out");
	check(world_future_wait_all(fs, 2, 100) == -ETIMEDOUT,
	      "futures: so does wait_all");
	check(world_future_test(fs[0]) == 0, "futures: still not done");
	world_kv_set(c->w, open, "1", 1);
	check(world_future_wait(fs[0], T, &res, NULL, NULL) == 0 &&
		      json_is_string(res) && strcmp(json_string_value(res), "opened") == 0,
	      "futures: once the gate opens the call finishes");
	check(world_future_test(fs[0]) == 1 && world_future_wait_all(fs, 2, 0) == 0,
	      "futures: then test and wait_all say done");
	json_decref(res);
out:
	world_future_free(fs[0]);
	world_future_free(fs[1]);
}

int
main(void)
{
	const char *all[] = { "3", "1", "2", "0" };
	struct ctx c = { 0 };
	int rc = world_open(&c.w);

	if (rc < 0) {
		fprintf(stderr, "world_open: %s\n", world_strerror(rc));
		return 1;
	}
	c.rank = world_rank(c.w);
	wtap_start(c.rank, 20);
	check(world_size(c.w) == NRANKS, "world: %d ranks", NRANKS);
	rc = world_group_create(c.w, "all", all, NRANKS, T, &c.g);
	check(rc == 0, "group: every rank creates the group");
	if (rc < 0) {
		world_abort(c.w);
		return 1;
	}
	check(set_up(&c) == 0, "services and direct handlers registered");
	world_group_barrier(c.g, T);
	test_threads(&c);
	test_wait_all(&c);
	test_wait_any(&c);
	/* Others may still be calling us: leave together. */
	world_group_barrier(c.g, T);
	world_group_destroy(c.g);
	check(world_stop(c.w, T) == 0, "world: graceful stop");
	return wtap_done();
}
