/* SPDX-License-Identifier: MIT */
/*
 * regserver: the registry's JSON front end (server.c, ops.c, kvops.c) as
 * a client sees it, one request at a time over its Unix socket, the
 * server on this thread's loop: requests that carry no blob where they
 * may (kv.set, kv.cas, kv.mset), and the cases the fuzz target found.
 */
#include "server.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tap.h"
#include "world.h"

#define SECRET "s3cret"

struct t {
	struct event_base *base;
	struct wr_reg *reg;
	struct wr_regsrv *srv;
	char dir[64];
	int fd;
	struct evbuffer *in;
	struct wr_frame_reader r;
	void *blob; /* the last answer's */
	size_t len;
};

static void
rank_lost(void *arg, int rank, const char *why)
{
	wr_reg_rank_dead(arg, rank);
}

static void
start(struct t *t, int size)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct wr_regsrv_cfg cfg = {
		.jobid = "test", .secret = SECRET, .dir = t->dir, .hello_timeout = 30,
		.wait_default = 30, .limits = { 4096, 1 << 16 }, .rank_lost = rank_lost,
	};

	*t = (struct t){ .fd = -1 };
	strcpy(t->dir, "/tmp/test-regserver-XXXXXX");
	t->base = event_base_new();
	t->reg = wr_reg_create(size);
	t->in = evbuffer_new();
	cfg.base = t->base;
	cfg.reg = t->reg;
	cfg.arg = t->reg;
	wr_frame_reader_init(&t->r, &cfg.limits);
	if (mkdtemp(t->dir) == NULL || wr_regsrv_open(&cfg, &t->srv) < 0) {
		return;
	}
	strcpy(sun.sun_path, wr_regsrv_socket(t->srv));
	t->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(t->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(t->fd);
		t->fd = -1;
	}
}

static void
stop(struct t *t)
{
	if (t->fd >= 0) {
		close(t->fd);
	}
	wr_regsrv_close(t->srv);
	wr_reg_destroy(t->reg);
	wr_frame_reader_finish(&t->r);
	evbuffer_free(t->in);
	free(t->blob);
	event_base_free(t->base);
	rmdir(t->dir);
}

/* The next answer (a new reference), or NULL when none came in 5 s. */
static json_t *
answer(struct t *t)
{
	for (int turns = 0; turns < 5000; turns++) {
		struct pollfd p = { .fd = t->fd, .events = POLLIN };
		json_t *msg = NULL;

		free(t->blob);
		t->blob = NULL;
		if (wr_frame_read(&t->r, t->in, &msg, &t->blob, &t->len) == 1) {
			return msg;
		}
		event_base_loop(t->base, EVLOOP_NONBLOCK);
		if (poll(&p, 1, 1) == 1 && wr_frame_recv(&t->r, t->in, t->fd) <= 0) {
			return NULL;
		}
	}
	return NULL;
}

/* Send @json (with @len bytes of @blob) and return the answer, or NULL. */
static json_t *
ask(struct t *t, const char *json, const void *blob, size_t len)
{
	struct evbuffer *out = evbuffer_new();
	json_t *msg = json_loads(json, 0, NULL);
	int rc = msg != NULL ? wr_frame_write(out, NULL, msg, blob, len) : -EINVAL;

	while (rc == 0 && evbuffer_get_length(out) > 0) {
		rc = wr_frame_send(out, t->fd) < 0 ? -EIO : 0;
	}
	json_decref(msg);
	evbuffer_free(out);
	return rc == 0 ? answer(t) : NULL;
}

/* The answer to @json has a result (and *t's blob), not an error. */
static bool
ask_ok(struct t *t, const char *json, const void *blob, size_t len)
{
	json_t *a = ask(t, json, blob, len);
	bool good = a != NULL && json_object_get(a, "result") != NULL;

	json_decref(a);
	return good;
}

static void
test_empty_blobs(void)
{
	struct t t;

	start(&t, 1);
	ok(ask_ok(&t, "{\"op\":\"hello\",\"id\":0,\"secret\":\"" SECRET "\","
		      "\"rank\":0,\"role\":\"tool\"}", NULL, 0),
	   "empty blobs: hello");
	ok(ask_ok(&t, "{\"op\":\"kv.set\",\"id\":1,\"key\":\"s\"}", NULL, 0) &&
	   ask_ok(&t, "{\"op\":\"kv.get\",\"id\":2,\"key\":\"s\"}", NULL, 0) &&
	   t.len == 0, "empty blobs: kv.set without a blob stores an empty value");
	ok(ask_ok(&t, "{\"op\":\"kv.cas\",\"id\":3,\"key\":\"c\",\"expected_len\":0}",
		  NULL, 0) && t.len == 0 &&
	   ask_ok(&t, "{\"op\":\"kv.get\",\"id\":4,\"key\":\"c\"}", NULL, 0),
	   "empty blobs: kv.cas without a blob stores an empty value");
	ok(ask_ok(&t, "{\"op\":\"kv.mset\",\"id\":5,\"keys\":[\"m\"],\"lens\":[0]}",
		  NULL, 0) &&
	   ask_ok(&t, "{\"op\":\"kv.get\",\"id\":6,\"key\":\"m\"}", NULL, 0) &&
	   t.len == 0, "empty blobs: kv.mset of an empty value without a blob");
	stop(&t);
}

int
main(void)
{
	plan(4);
	test_empty_blobs();
	return done_testing();
}
