/* SPDX-License-Identifier: MIT */
/*
 * pmireg: the PMI server's connection to the job's registry, on the
 * agent's event loop: connected once (bounded), it proves the job's
 * secret as a tool acting for one rank, and then carries requests
 * (regproto.h) whose answers come back to callbacks. Requests made
 * before the proof is through wait for it.
 */
#ifndef WR_PMIREG_H
#define WR_PMIREG_H

#include <stddef.h>

#include <event2/event.h>
#include <jansson.h>

struct wr_pmireg;

/* An answer: @rc 0 with @result (borrowed) and its blob, or a negative
 * code (WORLD_EREGISTRY once the connection is gone) and NULL. */
typedef void wr_pmireg_cb(void *arg, int rc, json_t *result, const void *blob,
			  size_t len);

struct wr_pmireg_cfg {
	struct event_base *base;
	const char *endpoints; /* WORLD_REGISTRY */
	const char *secret;
	int rank;              /* whom it acts for */
	int timeout_ms;        /* for the connect */
};

/* Connect and say hello. 0, or a negative code (nothing answers). */
int wr_pmireg_open(const struct wr_pmireg_cfg *cfg, struct wr_pmireg **out);

/* The connection in @*r, opened at the first call (lazily: jobs whose
 * ranks never ask pay nothing): 0, WORLD_EREGISTRY without an endpoint
 * or a secret, or what wr_pmireg_open() returns. */
int wr_pmireg_once(const struct wr_pmireg_cfg *cfg, struct wr_pmireg **r);

/* Send @req_new (stolen, even on failure) with a copy of @blob; @cb
 * answers once (with WORLD_EREGISTRY when the connection is lost or
 * closed first). 0 or -ENOMEM, WORLD_EREGISTRY (the connection is gone:
 * @cb is not called). */
int wr_pmireg_call(struct wr_pmireg *r, json_t *req_new, const void *blob, size_t len,
		   wr_pmireg_cb *cb, void *arg);

/* Close; the callbacks of requests under way are called with
 * WORLD_EREGISTRY, so that they free what they carry (and must not call
 * into @r). Accepts NULL. */
void wr_pmireg_close(struct wr_pmireg *r);

#endif
