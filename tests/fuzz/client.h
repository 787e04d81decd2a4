/* SPDX-License-Identifier: MIT */
/*
 * client: what the targets that drive a server (fuzz-registry,
 * fuzz-serve) share: a client on the harness's event loop that connects
 * to the server's Unix socket, sends its bytes, ends its side, and reads
 * every answer, each one a frame within the limits that @check judges and
 * that answers a request it sent, once at most, until the server closes
 * (no half frame may be left then).
 */
#ifndef WR_FUZZ_CLIENT_H
#define WR_FUZZ_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <jansson.h>

#include "frame.h"

struct fuzz_client {
	struct event_base *base;
	int fd;
	struct event *ev;
	struct evbuffer *out, *in;
	struct wr_frame_reader reader;
	void (*check)(json_t *answer);
	/*
	 * The ids of the requests sent (-1 for one without an integer id,
	 * and one -1 more: a bad frame's answer), each struck off by the
	 * answer that names it: no request is answered twice, and no answer
	 * names a request never sent.
	 */
	json_int_t *ids;
	size_t nids;
	size_t requests, answers;
	/* End our side once all is sent and (with wait_all) every request is
	 * answered, so that a server that answers later is heard; else at once. */
	bool wait_all;
	bool sending, ended;
	int *open; /* clients not yet closed by the server */
};

/* Ready @c to send, with nothing queued yet (c->out takes the bytes). */
void fuzz_client_init(struct fuzz_client *c, struct event_base *base,
		      const struct wr_frame_limits *lim, void (*check)(json_t *));

/* Connect to @path and start sending what c->out holds; ++*@open until
 * the server closes. */
void fuzz_client_start(struct fuzz_client *c, const char *path, int *open);

void fuzz_client_finish(struct fuzz_client *c);

/*
 * How an input is shared by its clients: byte 0 holds settings, its bit 4
 * asks for a second client, and then two bytes (big-endian) tell how many
 * of the rest go to the first. Returns the number of clients (1 or 2);
 * the first's bytes are [*begin, *mid), the second's [*mid, @size).
 */
size_t fuzz_split(const uint8_t *data, size_t size, size_t *begin, size_t *mid);

/* An answer is {id, result} or {id, error: {code < 0, name, message}}. */
void fuzz_check_answer(json_t *msg);

/* Queue a hello frame {op: hello, id: 0, secret, rank, role} on @out. */
void fuzz_hello(struct evbuffer *out, const char *secret, int rank,
		const char *role);

/*
 * The loop the server and its clients share, and a directory for its
 * socket (removed at exit), both made at the first call: libFuzzer gives
 * a target no context, and making them per input would cost more than
 * the input.
 */
struct event_base *fuzz_loop(void);
const char *fuzz_dir(void);

#endif
