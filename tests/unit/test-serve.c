/* SPDX-License-Identifier: MIT */
/*
 * serve: the side of a rank that peers call, as a peer sees it, over its
 * Unix socket with the server on this thread's loop: a call before hello
 * is refused and the connection closed (the end of that shutdown once
 * freed the connection while the server still walked its list), a wrong
 * secret likewise, and after hello a value and an echoing service answer.
 */
#include "serve.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handlers.h"
#include "tap.h"
#include "dial.h"
#include "workers.h"
#include "world.h"

#define SECRET "s3cret"
#define HELLO "{\"op\":\"hello\",\"id\":0,\"rank\":1,\"role\":\"peer\",\"secret\":"

struct t {
	struct event_base *base;
	struct wr_handlers *h;
	struct wr_workers *workers;
	struct wr_serve *s;
	char dir[64];
	char path[128];
};

static int
echo(void *ctx, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	world_reply_result_new(reply, json_deep_copy(args));
	return world_reply_blob(reply, blob, len);
}

static void
start(struct t *t)
{
	struct wr_serve_cfg cfg = { .secret = SECRET, .rank = 0, .size = 2,
				    .dir = t->dir, .limits = { 4096, 1 << 16 } };
	json_t *v = json_pack("{s:i}", "x", 1);

	*t = (struct t){ .base = event_base_new(), .h = wr_handlers_create() };
	strcpy(t->dir, "/tmp/test-serve-XXXXXX");
	wr_handlers_add(t->h, WR_H_SERVICE, "g", "echo", echo, NULL, 0);
	wr_handlers_pair(t->h, "g", "v", v, "val", 3);
	json_decref(v);
	wr_workers_open(2, &t->workers);
	cfg.base = t->base;
	cfg.handlers = t->h;
	cfg.workers = t->workers;
	if (mkdtemp(t->dir) != NULL) {
		wr_serve_open(&cfg, &t->s);
	}
	snprintf(t->path, sizeof(t->path), "%s/rank.0", t->dir);
}

static void
stop(struct t *t)
{
	wr_workers_close(t->workers);
	wr_serve_close(t->s);
	wr_handlers_destroy(t->h);
	event_base_free(t->base);
	rmdir(t->dir);
}

/* Whether @a is an error with @code; takes @a. */
static bool
is_error(json_t *a, int code)
{
	json_int_t got = 0;
	bool yes = a != NULL &&
		   json_unpack(a, "{s:{s:I}}", "error", "code", &got) == 0 &&
		   got == code;

	json_decref(a);
	return yes;
}

static void
test_refused(void)
{
	struct dial w[3];
	struct t t;

	start(&t);
	ok(t.s != NULL, "refused: the server listens");
	/* Two at once: the second is still in the list the first left. */
	dial_open(&w[0], t.base, t.path);
	dial_open(&w[1], t.base, t.path);
	dial_open(&w[2], t.base, t.path);
	ok(is_error(dial_ask(&w[1], "{\"op\":\"call\",\"id\":1,\"kind\":\"value\","
				    "\"group\":\"g\",\"key\":\"v\"}", NULL, 0),
		    WORLD_EAUTH), "refused: a call before hello");
	ok(dial_answer(&w[1]) == NULL && w[1].eof, "refused: then end of file");
	ok(is_error(dial_ask(&w[2], HELLO "\"wrong\"}", NULL, 0), WORLD_EAUTH) &&
	   dial_answer(&w[2]) == NULL && w[2].eof,
	   "refused: a wrong secret, then end of file");
	ok(dial_ask_ok(&w[0], HELLO "\"" SECRET "\"}", NULL, 0),
	   "refused: the first peer, still connected, says hello");
	ok(dial_ask_ok(&w[0], "{\"op\":\"call\",\"id\":2,\"kind\":\"value\","
			      "\"group\":\"g\",\"key\":\"v\"}", NULL, 0) &&
	   w[0].len == 3 && memcmp(w[0].blob, "val", 3) == 0,
	   "refused: and gets a value");
	ok(dial_ask_ok(&w[0], "{\"op\":\"call\",\"id\":3,\"kind\":\"service\","
			      "\"group\":\"g\",\"key\":\"echo\",\"args\":[1]}", "ab", 2) &&
	   w[0].len == 2, "refused: and a service's answer");
	for (int i = 0; i < 3; i++) {
		dial_close(&w[i]);
	}
	stop(&t);
}

int
main(void)
{
	plan(7);
	test_refused();
	return done_testing();
}
