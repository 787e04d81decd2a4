/* SPDX-License-Identifier: MIT */
/*
 * serve: the side of a rank that peers call, as a peer sees it, over its
 * Unix socket with the server on this thread's loop: a call before hello
 * is refused and the connection closed (the end of that shutdown once
 * freed the connection while the server still walked its list), a wrong
 * secret likewise, and after hello a value and an echoing service answer.
 * A call's blob pulled from the caller's memory (this very process): read
 * in pieces, bad descriptors refused, unreadable memory and a server that
 * does not pull answered with the refusal that makes a caller send bytes.
 */
#include "serve.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* A service that holds its call (and so its pulled blob) until let go. */
static int hold_state; /* atomic: 1 while held, 2 to let go */

static int
hold(void *ctx, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	__atomic_store_n(&hold_state, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 10000 && __atomic_load_n(&hold_state, __ATOMIC_SEQ_CST) != 2; i++) {
		usleep(1000);
	}
	world_reply_result_new(reply, json_null());
	return 0;
}

static void
start(struct t *t, bool no_pull)
{
	struct wr_serve_cfg cfg = { .secret = SECRET, .rank = 0, .size = 2,
				    .limits = { 1 << 16, 1 << 16 }, .no_pull = no_pull };
	json_t *v = json_pack("{s:i}", "x", 1);

	*t = (struct t){ .base = event_base_new(), .h = wr_handlers_create() };
	strcpy(t->dir, "/tmp/test-serve-XXXXXX");
	wr_handlers_add(t->h, WR_H_SERVICE, "g", "echo", echo, NULL, 0);
	wr_handlers_add(t->h, WR_H_SERVICE, "g", "hold", hold, NULL, 0);
	wr_handlers_pair(t->h, "g", "v", v, "val", 3);
	json_decref(v);
	wr_workers_open(2, 0, &t->workers);
	cfg.base = t->base;
	cfg.dir = t->dir;
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
	struct dial w[4];
	struct t t;

	start(&t, false);
	ok(t.s != NULL, "refused: the server listens");
	/* Two at once: the second is still in the list the first left. */
	dial_open(&w[0], t.base, t.path);
	dial_open(&w[1], t.base, t.path);
	dial_open(&w[2], t.base, t.path);
	dial_open(&w[3], t.base, t.path);
	ok(is_error(dial_ask(&w[1], "{\"op\":\"call\",\"id\":1,\"kind\":\"value\","
				    "\"group\":\"g\",\"key\":\"v\"}", NULL, 0),
		    WORLD_EAUTH), "refused: a call before hello");
	ok(dial_answer(&w[1]) == NULL && w[1].eof, "refused: then end of file");
	ok(is_error(dial_ask(&w[2], HELLO "\"wrong\"}", NULL, 0), WORLD_EAUTH) &&
	   dial_answer(&w[2]) == NULL && w[2].eof,
	   "refused: a wrong secret, then end of file");
	ok(is_error(dial_ask(&w[3], "{\"op\":\"hello\",\"id\":0,\"rank\":2,\"role\":"
				    "\"peer\",\"secret\":\"" SECRET "\"}", NULL, 0),
		    WORLD_EPROTO) && dial_answer(&w[3]) == NULL && w[3].eof,
	   "refused: a hello for a rank the job does not have, then end of file");
	ok(dial_ask_ok(&w[0], HELLO "\"" SECRET "\"}", NULL, 0),
	   "refused: the first peer, still connected, says hello");
	ok(dial_ask_ok(&w[0], "{\"op\":\"call\",\"id\":2,\"kind\":\"value\","
			      "\"group\":\"g\",\"key\":\"v\"}", NULL, 0) &&
	   w[0].len == 3 && memcmp(w[0].blob, "val", 3) == 0,
	   "refused: and gets a value");
	ok(dial_ask_ok(&w[0], "{\"op\":\"call\",\"id\":3,\"kind\":\"service\","
			      "\"group\":\"g\",\"key\":\"echo\",\"args\":[1]}", "ab", 2) &&
	   w[0].len == 2, "refused: and a service's answer");
	for (int i = 0; i < 4; i++) {
		dial_close(&w[i]);
	}
	stop(&t);
}

static json_t *
piece(const void *at, size_t len)
{
	return json_pack("[I, I]", (json_int_t)(uintptr_t)at, (json_int_t)len);
}

/* Call echo with its blob to pull at @desc_new (stolen), and @len bytes
 * of @blob in the frame; the answer. */
static json_t *
ask_pull(struct dial *w, json_t *desc_new, const void *blob, size_t len)
{
	json_t *req = json_pack("{s:s, s:i, s:s, s:s, s:s, s:o}", "op", "call", "id", 7,
				"kind", "service", "group", "g", "key", "echo", "pull",
				desc_new);
	char *text = req != NULL ? json_dumps(req, 0) : NULL;
	json_t *a = text != NULL ? dial_ask(w, text, blob, len) : NULL;

	free(text);
	json_decref(req);
	return a;
}

/* Whether @a refuses the pull with @code (the caller then sends bytes);
 * takes @a. */
static bool
is_refusal(json_t *a, int code)
{
	json_t *err = json_object_get(a, "error");
	bool yes = json_is_true(json_object_get(err, "pull")) &&
		   json_integer_value(json_object_get(err, "code")) == code;

	json_decref(a);
	return yes;
}

/*
 * While one call holds a pulled blob of 40 KiB, another pull of 40 KiB
 * would make this rank hold more than the blob limit (64 KiB): refused,
 * so that its bytes come instead; once the first is done, it is taken.
 */
static void
pulls_at_once(struct t *t)
{
	static char big[40 << 10];
	char text[256];
	struct evbuffer *out = evbuffer_new();
	json_t *msg;
	struct dial a, b;

	dial_open(&a, t->base, t->path);
	dial_open(&b, t->base, t->path);
	dial_ask_ok(&a, HELLO "\"" SECRET "\"}", NULL, 0);
	dial_ask_ok(&b, HELLO "\"" SECRET "\"}", NULL, 0);
	snprintf(text, sizeof(text), "{\"op\":\"call\",\"id\":9,\"kind\":\"service\","
		 "\"group\":\"g\",\"key\":\"hold\",\"pull\":[[%llu,%d]]}",
		 (unsigned long long)(uintptr_t)big, (int)sizeof(big));
	msg = json_loads(text, 0, NULL);
	wr_frame_write(out, NULL, msg, NULL, 0);
	wr_frame_send(out, a.fd);
	for (int i = 0; i < 5000 && __atomic_load_n(&hold_state, __ATOMIC_SEQ_CST) != 1; i++) {
		event_base_loop(t->base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	ok(is_refusal(ask_pull(&b, json_pack("[o]", piece(big, sizeof(big))), NULL, 0), -EBUSY),
	   "pull: refused while pulls would hold more than the blob limit, so that bytes come");
	__atomic_store_n(&hold_state, 2, __ATOMIC_SEQ_CST);
	json_decref(dial_answer(&a));
	json_decref(ask_pull(&b, json_pack("[o]", piece(big, sizeof(big))), NULL, 0));
	ok(b.len == sizeof(big), "pull: taken again once the other is done");
	json_decref(msg);
	evbuffer_free(out);
	dial_close(&a);
	dial_close(&b);
}

static void
test_pull(void)
{
	static const char hello[] = "hello, ", world[] = "world";
	json_t *many = json_array();
	struct dial w;
	struct t t;
	char *gone;

	start(&t, false);
	dial_open(&w, t.base, t.path);
	ok(dial_ask_ok(&w, HELLO "\"" SECRET "\"}", NULL, 0), "pull: hello");
	json_decref(ask_pull(&w, json_pack("[o, o]", piece(hello, 7), piece(world, 5)),
			     NULL, 0));
	ok(w.len == 12 && memcmp(w.blob, "hello, world", 12) == 0,
	   "pull: a blob in two pieces is read from the caller's memory");
	ok(is_error(ask_pull(&w, json_pack("[o]", piece(hello, 7)), "x", 1), WORLD_EPROTO),
	   "pull: refused with a blob in the frame too");
	ok(is_error(ask_pull(&w, json_string("x"), NULL, 0), WORLD_EPROTO),
	   "pull: refused if not a list of pieces");
	ok(is_error(ask_pull(&w, json_pack("[[i, i]]", 0, 5), NULL, 0), WORLD_EPROTO),
	   "pull: refused at address 0");
	ok(is_error(ask_pull(&w, json_pack("[o]", piece(hello, 0)), NULL, 0), WORLD_EPROTO),
	   "pull: refused for a piece of no bytes");
	for (int i = 0; i < 1025; i++) {
		json_array_append_new(many, piece(hello, 1));
	}
	ok(is_error(ask_pull(&w, many, NULL, 0), WORLD_EPROTO),
	   "pull: refused in 1025 pieces");
	ok(is_error(ask_pull(&w, json_pack("[o, o]", piece(hello, 1 << 15),
					   piece(world, (1 << 15) + 1)), NULL, 0), -EMSGSIZE),
	   "pull: refused over the blob limit, before it is read");
	pulls_at_once(&t);
	gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 4096);
	ok(is_refusal(ask_pull(&w, json_pack("[o, o]", piece(hello, 7), piece(gone, 100)),
				NULL, 0), -EFAULT),
	   "pull: memory that cannot be read is refused so that bytes come instead");
	ok(dial_ask_ok(&w, "{\"op\":\"call\",\"id\":8,\"kind\":\"service\","
			   "\"group\":\"g\",\"key\":\"echo\"}", "ab", 2) && w.len == 2,
	   "pull: and the connection goes on");
	dial_close(&w);
	stop(&t);

	start(&t, true);
	dial_open(&w, t.base, t.path);
	dial_ask_ok(&w, HELLO "\"" SECRET "\"}", NULL, 0);
	ok(is_refusal(ask_pull(&w, json_pack("[o]", piece(hello, 7)), NULL, 0), -EPERM),
	   "pull: a server that does not pull (WORLD_PULL=0) refuses so that bytes come");
	dial_close(&w);
	stop(&t);
}

int
main(void)
{
	plan(21);
	test_refused();
	test_pull();
	return done_testing();
}
