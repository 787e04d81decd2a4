/* SPDX-License-Identifier: MIT */
/*
 * regserver: the registry's JSON front end (server.c, ops.c, kvops.c) as
 * a client sees it, one request at a time over its Unix socket, the
 * server on this thread's loop: requests that carry no blob where they
 * may (kv.set, kv.cas, kv.mset), and the cases the fuzz target found.
 */
#include "server.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "now.h"
#include "dial.h"
#include "world_errors.h"

#define SECRET "s3cret"

struct t {
	struct event_base *base;
	struct wr_reg *reg;
	struct wr_regsrv *srv;
	char dir[64];
	struct dial w;
};

static void
rank_lost(void *arg, int rank, const char *why)
{
	wr_reg_rank_dead(arg, rank);
}

/* What peer_dead said last: the rank whose wait failed, and for whom. */
static int dead_for = -1, dead_peer = -1;

static void
peer_dead(void *arg, int rank, int dead)
{
	dead_for = rank;
	dead_peer = dead;
}

static void
start(struct t *t, int size)
{
	struct wr_regsrv_cfg cfg = {
		.jobid = "test", .secret = SECRET, .dir = t->dir, .hello_timeout = 30,
		.wait_default = 30, .limits = { 4096, 1 << 16 }, .rank_lost = rank_lost,
		.peer_dead = peer_dead,
	};

	*t = (struct t){ .base = event_base_new(), .reg = wr_reg_create(size) };
	strcpy(t->dir, "/tmp/test-regserver-XXXXXX");
	cfg.base = t->base;
	cfg.reg = t->reg;
	cfg.arg = t->reg;
	if (mkdtemp(t->dir) != NULL) {
		wr_regsrv_open(&cfg, &t->srv);
	}
	dial_open(&t->w, t->base, t->srv != NULL ? wr_regsrv_socket(t->srv) : "");
}

static void
stop(struct t *t)
{
	dial_close(&t->w);
	wr_regsrv_close(t->srv);
	wr_reg_destroy(t->reg);
	event_base_free(t->base);
	rmdir(t->dir);
}

static void
test_empty_blobs(void)
{
	struct t t;

	start(&t, 1);
	ok(dial_ask_ok(&t.w, "{\"op\":\"hello\",\"id\":0,\"secret\":\"" SECRET "\","
		      "\"rank\":0,\"role\":\"tool\"}", NULL, 0),
	   "empty blobs: hello");
	ok(dial_ask_ok(&t.w, "{\"op\":\"kv.set\",\"id\":1,\"key\":\"s\"}", NULL, 0) &&
	   dial_ask_ok(&t.w, "{\"op\":\"kv.get\",\"id\":2,\"key\":\"s\"}", NULL, 0) &&
	   t.w.len == 0, "empty blobs: kv.set without a blob stores an empty value");
	ok(dial_ask_ok(&t.w, "{\"op\":\"kv.cas\",\"id\":3,\"key\":\"c\",\"expected_len\":0}",
		  NULL, 0) && t.w.len == 0 &&
	   dial_ask_ok(&t.w, "{\"op\":\"kv.get\",\"id\":4,\"key\":\"c\"}", NULL, 0),
	   "empty blobs: kv.cas without a blob stores an empty value");
	ok(dial_ask_ok(&t.w, "{\"op\":\"kv.mset\",\"id\":5,\"keys\":[\"m\"],\"lens\":[0]}",
		  NULL, 0) &&
	   dial_ask_ok(&t.w, "{\"op\":\"kv.get\",\"id\":6,\"key\":\"m\"}", NULL, 0) &&
	   t.w.len == 0, "empty blobs: kv.mset of an empty value without a blob");
	stop(&t);
}

static void
on_survey(void *arg, json_t *survey_new)
{
	json_t **got = arg;

	*got = survey_new != NULL ? survey_new : json_null();
}

/* A rank whose connection goes while a survey waits for its answer is
 * settled at once: the survey does not wait out its time for it. */
static void
test_survey_gone(void)
{
	struct t t;
	json_t *got = NULL, *r0;
	double t0, took;

	start(&t, 1);
	ok(dial_ask_ok(&t.w, "{\"op\":\"hello\",\"id\":0,\"secret\":\"" SECRET "\","
		      "\"rank\":0,\"role\":\"rank\"}", NULL, 0),
	   "survey: rank 0 says hello");
	ok(wr_regsrv_survey(t.srv, 20000, on_survey, &got) == 0, "survey: started, 20 s");
	event_base_loop(t.base, EVLOOP_NONBLOCK);
	close(t.w.fd);
	t.w.fd = -1;
	t0 = tests_now_s();
	while (got == NULL && tests_now_s() - t0 < 10) {
		event_base_loop(t.base, EVLOOP_ONCE);
	}
	took = tests_now_s() - t0;
	ok(got != NULL && took < 5, "survey: it ends when the rank's connection goes "
	   "(%.2f s), not after its 20 s", took);
	r0 = json_array_get(json_object_get(got, "ranks"), 0);
	is_str(json_string_value(json_object_get(r0, "libworld")), "gone",
	       "survey: the rank is gone, not silent");
	json_decref(got);
	stop(&t);
}

/* A rank's own wait that fails for a dead rank is told (the policy does
 * not blame a rank that such a death woke); a tool's is not. */
static void
test_peer_dead(void)
{
	struct t t;
	json_t *a;

	start(&t, 3);
	ok(dial_ask_ok(&t.w, "{\"op\":\"hello\",\"id\":0,\"secret\":\"" SECRET "\","
		      "\"rank\":0,\"role\":\"tool\"}", NULL, 0),
	   "peer dead: a tool for rank 0 says hello");
	wr_reg_rank_dead(t.reg, 1);
	a = dial_ask(&t.w, "{\"op\":\"barrier\",\"id\":1,\"name\":\"b\"}", NULL, 0);
	ok(a != NULL && json_object_get(a, "error") != NULL && dead_for == -1,
	   "peer dead: a tool's barrier fails for rank 1, and nobody is told");
	json_decref(a);
	dial_close(&t.w);
	dial_open(&t.w, t.base, wr_regsrv_socket(t.srv));
	ok(dial_ask_ok(&t.w, "{\"op\":\"hello\",\"id\":0,\"secret\":\"" SECRET "\","
		      "\"rank\":2,\"role\":\"rank\"}", NULL, 0),
	   "peer dead: rank 2 says hello on its own connection");
	a = dial_ask(&t.w, "{\"op\":\"barrier\",\"id\":1,\"name\":\"b\"}", NULL, 0);
	is_str(json_string_value(json_object_get(json_object_get(a, "error"), "name")),
	       "WORLD_EPEERDEAD", "peer dead: its barrier fails for rank 1");
	ok(dead_for == 2 && dead_peer == 1, "peer dead: told that rank 1's death failed "
	   "rank 2's wait (%d, %d)", dead_for, dead_peer);
	json_decref(a);
	stop(&t);
}

int
main(void)
{
	plan(13);
	test_empty_blobs();
	test_survey_gone();
	test_peer_dead();
	return done_testing();
}
