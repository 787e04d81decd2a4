/* SPDX-License-Identifier: MIT */
/*
 * serve: the side of this process that peers call, on the progress
 * thread's loop. It listens (a Unix socket in the job's directory, and
 * TCP on loopback), checks each peer's hello against the job secret, and
 * answers calls: values and kept remote results at once, services and
 * direct handlers on the workers, which write their answers on the
 * peer's connection themselves (a shared link, see link.h). A worker
 * pulls a large blob of a caller on this host from its memory first
 * (payload.h).
 */
#ifndef WR_SERVE_H
#define WR_SERVE_H

#include <stdbool.h>

#include <event2/event.h>

#include "frame.h"

struct wr_serve;
struct wr_handlers;
struct wr_waits;
struct wr_workers;

struct wr_serve_cfg {
	struct event_base *base;
	const char *secret;
	int rank;
	int size;
	const char *dir; /* for the Unix socket; NULL: TCP only */
	const char *tcp_addr; /* the TCP listener's IPv4 address; NULL: loopback */
	struct wr_handlers *handlers;
	struct wr_workers *workers;
	struct wr_frame_limits limits;
	struct wr_waits *waits; /* where a running handler is recorded */
	bool no_pull; /* refuse to pull callers' blobs (WORLD_PULL=0) */
};

int wr_serve_open(const struct wr_serve_cfg *cfg, struct wr_serve **out);

/* From now on calls are refused (the world is stopping). Any thread. */
void wr_serve_refuse(struct wr_serve *s);

/*
 * Close every connection and listener. On the loop's thread, or once it
 * has ended, and after the workers are closed. Accepts NULL.
 */
void wr_serve_close(struct wr_serve *s);

/* "unix:PATH,tcp:127.0.0.1:PORT", borrowed. */
const char *wr_serve_endpoints(const struct wr_serve *s);

#endif
