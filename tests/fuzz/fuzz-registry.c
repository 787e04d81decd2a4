/* SPDX-License-Identifier: MIT */
/*
 * fuzz-registry: the registry's JSON front end (server.c, ops.c, kvops.c)
 * and its core, as worldrun serves them, on bytes from one or two clients.
 * Each input gets a fresh registry of 3 ranks and a server listening in a
 * private directory; the clients connect to its Unix socket, send their
 * bytes, end their side and read every answer until the server closes.
 * Every answer must be a frame within the limits, {id, result} or {id,
 * error: {code, name, message}}, and answer a request sent, once at most;
 * the server must close each connection (a hang is a finding), and
 * everything must be freed.
 *
 * Input: one byte of settings (bits 0-1 and 2-3: what the harness says
 * first on client 0 and 1: nothing, hello as the client's own rank, hello
 * as a tool for it, or hello with a wrong secret; bit 4: a second
 * client; bit 5: limits so small that values and answers outgrow them),
 * then with a second client two bytes (big-endian) of how many of the
 * rest go to client 0, then the clients' bytes.
 */
#include <event2/event.h>

#include "client.h"
#include "core.h"
#include "frame.h"
#include "fuzz.h"
#include "server.h"
#include "world.h"

#define NRANKS 3
#define NCLIENTS 2
#define SECRET "fuzz-secret" /* seeds.py writes it into the seeds */

static const struct wr_frame_limits limits[2] = {
	{ .json_max = 4096, .blob_max = 64 << 10 },
	{ .json_max = 160, .blob_max = 16 },
};

/* What the harness says first: @how 1 hello as @rank, 2 as a tool, 3 with a
 * wrong secret. */
static void
prelude(struct evbuffer *out, int how, int rank)
{
	if (how != 0) {
		fuzz_hello(out, how == 3 ? "wrong" : SECRET, rank,
			   how == 2 ? "tool" : "rank");
	}
}

static void
rank_lost(void *arg, int rank, const char *why)
{
	wr_reg_rank_dead(arg, rank); /* as worldrun does */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_client c[NCLIENTS];
	struct wr_reg *reg = wr_reg_create(NRANKS);
	struct wr_regsrv_cfg cfg = {
		.base = fuzz_loop(), .reg = reg, .jobid = "fuzz", .secret = SECRET,
		.dir = fuzz_dir(), .hello_timeout = 60, .lease_timeout = 0,
		.wait_default = 60, .rank_lost = rank_lost,
		.arg = reg,
	};
	struct wr_regsrv *srv = NULL;
	size_t at, split, nclients;
	int open = 0;

	if (size == 0) {
		wr_reg_destroy(reg);
		return 0;
	}
	nclients = fuzz_split(data, size, &at, &split);
	cfg.limits = limits[(data[0] >> 5) & 1];
	FUZZ_CHECK(reg != NULL && wr_regsrv_open(&cfg, &srv) == 0);
	for (size_t i = 0; i < nclients; i++) {
		size_t from = i == 0 ? at : split, to = i == 0 ? split : size;

		fuzz_client_init(&c[i], fuzz_loop(), &cfg.limits, fuzz_check_answer);
		prelude(c[i].out, (data[0] >> (2 * i)) & 3, (int)i);
		evbuffer_add(c[i].out, data + from, to - from);
		fuzz_client_start(&c[i], wr_regsrv_socket(srv), &open);
	}
	while (open > 0) {
		event_base_loop(fuzz_loop(), EVLOOP_ONCE);
	}
	wr_regsrv_close(srv);
	wr_reg_destroy(reg);
	for (size_t i = 0; i < nclients; i++) {
		fuzz_client_finish(&c[i]);
	}
	return 0;
}
