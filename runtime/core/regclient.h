/* SPDX-License-Identifier: MIT */
/*
 * regclient: a blocking client of worldrun's registry, one connection,
 * one request at a time, every wait bounded by a timeout. It finds the
 * registry and the job secret in the environment (WORLD_REGISTRY,
 * WORLD_SECRET) and says hello for a rank, as the rank itself or as a
 * tool acting for it. worldctl uses it; it prints nothing.
 */
#ifndef WR_REGCLIENT_H
#define WR_REGCLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "frame.h"

struct wr_regclient;

struct wr_regclient_cfg {
	const char *endpoints; /* "unix:PATH,tcp:HOST:PORT": tried in order */
	const char *secret;
	int rank;
	const char *role;      /* "rank", "tool", "observer" or "peer" */
	const char *server;    /* who must answer: "registry" (NULL) or
				* "rank:N", which the server proves */
	int timeout_ms;        /* for connecting and for the hello */
	const struct wr_frame_limits *limits; /* NULL: the defaults */
	int spin_us;           /* how long to look for an answer before a
				  read blocks (WORLD_SPIN_US); 0: never */
	char *why;             /* if not NULL, why the hello was refused */
	size_t why_len;
};

/*
 * Connect and say hello, proving the secret without sending it (auth.h)
 * and checking that the server proves it too, as cfg->server. Returns 0
 * and the client in *out, or a negative code: WORLD_EREGISTRY (nothing
 * answers), WORLD_EAUTH (a wrong secret, either side), WORLD_EPROTO,
 * -ETIMEDOUT, -EINVAL (bad endpoints), -ENOMEM.
 */
int wr_regclient_open(const struct wr_regclient_cfg *cfg,
		      struct wr_regclient **out);

/* Accepts NULL. */
void wr_regclient_close(struct wr_regclient *c);

/*
 * Connect to the first of @endpoints that answers, within @timeout_ms:
 * a non-blocking, close-on-exec socket, or WORLD_EREGISTRY (nothing
 * answers), -EINVAL (bad endpoints). Says nothing on it.
 */
int wr_regclient_connect(const char *endpoints, int timeout_ms);

/*
 * Free @c but keep its connection: returns the socket (blocking mode off,
 * close-on-exec), for a caller that goes on with it in an event loop,
 * or -errno if blocking mode could not be turned off (@c is freed
 * either way). Only between calls, when no answer is pending.
 */
int wr_regclient_release(struct wr_regclient *c);

/*
 * Send @req_new (stolen, even on failure: {"op": ..., ...}; the id is
 * added) with an optional blob, and wait at most @timeout_ms (< 0:
 * forever) for its answer. Returns 0 with the result object (a new
 * reference) in *result, if @result is not NULL, and the answer's blob
 * (malloc'd; NULL if none) in *blob and *blob_len, if @blob is not NULL. Or
 * the error the registry answered (its code, with the message and, for
 * WORLD_EPEERDEAD, the rank kept for wr_regclient_error()), -ETIMEDOUT,
 * or WORLD_EREGISTRY when the connection is lost.
 */
int wr_regclient_call(struct wr_regclient *c, json_t *req_new,
		      const void *req_blob, size_t req_len, int timeout_ms,
		      json_t **result, void **blob, size_t *blob_len);

/* The message of the last error the registry answered, or "". */
const char *wr_regclient_error(const struct wr_regclient *c);

/* The rank the last WORLD_EPEERDEAD answer named, or -1. */
int wr_regclient_dead_rank(const struct wr_regclient *c);

#endif
