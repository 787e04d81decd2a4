/* SPDX-License-Identifier: MIT */
/*
 * fuzz-serve: the side of a libworld rank that peers call (runtime/
 * serve.c) with its handler tables and workers, on bytes from one or two
 * peers. Each input gets a fresh server (rank 0 of 3) with a service that
 * echoes, one that fails, a direct handler and a paired value; the peers
 * connect to its Unix socket, send their bytes, and end their side once
 * every whole frame they sent is answered (or the server closes). Every
 * answer must be {id, result} or {id, error} and answer a request sent,
 * once at most; a request that is never answered is a hang (libFuzzer's
 * -timeout), and everything must be freed.
 *
 * Input: one byte of settings (bits 0-1 and 2-3: what the harness says
 * first on peer 0 and 1: nothing, hello, or hello with a wrong secret;
 * bit 4: a second peer; bit 5: the rank is stopping, it refuses calls),
 * then with a second peer two bytes (big-endian) of how many of the rest
 * go to peer 0, then the peers' bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "client.h"
#include "frame.h"
#include "fuzz.h"
#include "handlers.h"
#include "serve.h"
#include "workers.h"
#include "world.h"

#define NPEERS 2
#define SECRET "fuzz-secret" /* seeds.py writes it into the seeds */

static const struct wr_frame_limits limits = { .json_max = 4096,
					       .blob_max = 64 << 10 };

static int
echo(void *ctx, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	world_reply_result_new(reply, json_deep_copy(args));
	return world_reply_blob(reply, blob, len);
}

static int
fail(void *ctx, const json_t *args, const void *blob, size_t len,
     struct world_reply *reply)
{
	return world_reply_error(reply, -EIO, "it failed on purpose");
}

static struct wr_handlers *
handlers_create(void)
{
	struct wr_handlers *h = wr_handlers_create();
	json_t *v = json_pack("{s:i}", "x", 1);

	FUZZ_CHECK(h != NULL && v != NULL);
	FUZZ_CHECK(wr_handlers_add(h, WR_H_SERVICE, "g", "echo", echo, NULL, 0) == 0);
	FUZZ_CHECK(wr_handlers_add(h, WR_H_SERVICE, "g", "fail", fail, NULL,
				   WORLD_SERIAL) == 0);
	FUZZ_CHECK(wr_handlers_add(h, WR_H_DIRECT, NULL, "d", echo, NULL, 0) == 0);
	FUZZ_CHECK(wr_handlers_pair(h, "g", "v", v, "val", 3) == 0);
	json_decref(v);
	return h;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_client c[NPEERS];
	struct wr_serve_cfg cfg = {
		.base = fuzz_loop(), .secret = SECRET, .rank = 0, .size = 3,
		.dir = fuzz_dir(), .limits = limits,
	};
	struct wr_serve *s = NULL;
	size_t at, split, npeers;
	char path[128];
	int open = 0;

	if (size == 0) {
		return 0;
	}
	npeers = fuzz_split(data, size, &at, &split);
	cfg.handlers = handlers_create();
	FUZZ_CHECK(wr_workers_open(2, 0, &cfg.workers) == 0);
	FUZZ_CHECK(wr_serve_open(&cfg, &s) == 0);
	snprintf(path, sizeof(path), "%s/rank.0", fuzz_dir());
	if (data[0] & 32) {
		wr_serve_refuse(s);
	}
	for (size_t i = 0; i < npeers; i++) {
		size_t from = i == 0 ? at : split, to = i == 0 ? split : size;
		int how = (data[0] >> (2 * i)) & 3;

		fuzz_client_init(&c[i], fuzz_loop(), &limits, fuzz_check_answer);
		if (how != 0) {
			fuzz_hello(c[i].out, how == 1 ? SECRET : "wrong", (int)i + 1,
				   "peer");
		}
		evbuffer_add(c[i].out, data + from, to - from);
		c[i].wait_all = true;
		fuzz_client_start(&c[i], path, &open);
	}
	while (open > 0) {
		event_base_loop(fuzz_loop(), EVLOOP_ONCE);
	}
	wr_workers_close(cfg.workers); /* before the server, as world.c does */
	wr_serve_close(s);
	wr_handlers_destroy(cfg.handlers);
	for (size_t i = 0; i < npeers; i++) {
		fuzz_client_finish(&c[i]);
	}
	return 0;
}
