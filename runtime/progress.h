/* SPDX-License-Identifier: MIT */
/*
 * progress: the one thread of each process that talks to the registry.
 * It owns an event_base and the rank's own registry connection (role
 * "rank"), renews the lease, and carries requests that user threads queue
 * with wr_prog_call(): any thread may call, and each waits for its own
 * answer with a timeout. Later layers (RPC peers, collectives) live on
 * the same loop. It does not know what the requests mean.
 */
#ifndef WR_PROGRESS_H
#define WR_PROGRESS_H

#include <stddef.h>

#include <event2/event.h>
#include <jansson.h>

struct wr_prog;

struct wr_prog_cfg {
	const char *endpoints; /* WORLD_REGISTRY */
	const char *secret;    /* WORLD_SECRET */
	int rank;
	double lease_interval; /* seconds; 0: no leases */
	int connect_timeout_ms;
};

/*
 * Connect (hello as the rank itself) and start the thread. Returns 0, or
 * what wr_regclient_open() would: WORLD_EREGISTRY, WORLD_EAUTH, ...
 */
int wr_prog_open(const struct wr_prog_cfg *cfg, struct wr_prog **out);

/*
 * Stop the thread and close the connection. With @goodbye, say goodbye
 * first, so that the registry does not count the rank as lost. Accepts
 * NULL.
 */
void wr_prog_close(struct wr_prog *p, int goodbye);

/*
 * Send @req_new (stolen: {"op": ..., ...}) with a copy of @blob, and wait
 * at most @wait_ms (< 0: forever) for the answer. Returns as
 * wr_regclient_call() does: 0 with *result (a new reference, if @result
 * is not NULL) and the answer's blob in *rblob (malloc'd, if @rblob is
 * not NULL) with its length in *rlen, or a
 * negative code; -ETIMEDOUT if no answer came in time (a late one is
 * dropped), WORLD_EREGISTRY if the connection is gone. *dead_rank (if not
 * NULL) names the rank of a WORLD_EPEERDEAD answer.
 */
int wr_prog_call(struct wr_prog *p, json_t *req_new, const void *blob,
		 size_t len, int wait_ms, json_t **result, void **rblob,
		 size_t *rlen, int *dead_rank);

#endif
