/* SPDX-License-Identifier: MIT */
/*
 * conn: what the request handlers (ops.c, kvops.c) may do with the
 * connection a request came on (server.c): answer it, at once or when a
 * wait ends.
 * Internal to the registry's JSON front end.
 */
#ifndef WR_REG_CONN_H
#define WR_REG_CONN_H

#include <stdint.h>

#include <jansson.h>

#include "core.h"

struct wr_regconn;

enum wr_regrole {
	WR_ROLE_NONE, /* no hello yet */
	WR_ROLE_RANK, /* a rank's own libworld connection */
	WR_ROLE_TOOL, /* worldctl or anything else acting for a rank */
	WR_ROLE_OBSERVER, /* a tool acting for no rank: it only reads */
};

/* One request being handled. */
struct wr_regreq {
	struct wr_regconn *conn;
	struct wr_reg *reg;
	json_int_t id;
	json_t *msg;      /* borrowed for the call */
	const void *blob; /* borrowed for the call; never NULL, even empty */
	size_t blob_len;
	int rank;         /* whom the connection acts for; -1: an observer */
	enum wr_regrole role;
};

/*
 * Answer @rq: @result_new (stolen, even on failure; NULL for {}) and a
 * blob (copied). An answer over the limits is an -EMSGSIZE error instead.
 */
void wr_regconn_reply(struct wr_regconn *c, json_int_t id, json_t *result_new,
		      const void *blob, size_t len);

/*
 * Answer {} with a value's bytes that @hold holds (wr_reg_kv_hold()):
 * sent without a copy, and released once written or on failure.
 */
void wr_regconn_reply_held(struct wr_regconn *c, json_int_t id, const void *blob,
			   size_t len, void *hold);

/* The largest blob and JSON part an answer may carry (WORLD_BLOB_MAX,
 * WORLD_MSG_MAX). */
size_t wr_regconn_blob_max(const struct wr_regconn *c);
size_t wr_regconn_msg_max(const struct wr_regconn *c);

/*
 * Answer with an error: @code (world.h), @dead_rank for WORLD_EPEERDEAD
 * (else -1), @why (NULL: world_strerror(@code)).
 */
void wr_regconn_fail(struct wr_regconn *c, json_int_t id, int code,
		     int dead_rank, const char *why);

/*
 * When a wait ends with 0, this builds the answer: call wr_regconn_reply
 * (or wr_regconn_fail) for @id. @data is what wr_regconn_wait() was given.
 */
typedef void wr_regconn_done_fn(struct wr_regconn *c, json_int_t id,
				void *data);

/* Waits a connection may hold at once, and the bytes they may cost. */
#define WR_REGCONN_WAITS_MAX 1024
#define WR_REGCONN_WAIT_BYTES_MAX (16u << 20)

/*
 * A pending answer to request @id, which waits at most @timeout_ms
 * (WORLD_TIMEOUT_DEFAULT, WORLD_TIMEOUT_FOREVER, or > 0) and costs about
 * @cost bytes while it waits. Returns 0 and in *@pending the argument to
 * give the core with wr_regconn_wait_end() as its callback; once the
 * core's wait ends the request is answered (@done for success, an error
 * otherwise) and @data is freed with free(). Or -ENOBUFS (the connection
 * holds as many waits as it may) or -ENOMEM, with @data freed; the caller
 * answers.
 */
int wr_regconn_wait(struct wr_regconn *c, json_int_t id, int64_t timeout_ms,
		    wr_regconn_done_fn *done, void *data, size_t cost,
		    void **pending);

/* Keep the request @msg of @pending, for the words of its failure. */
void wr_regconn_wait_about(void *pending, json_t *msg);

/* The core's callback for every pending answer. */
void wr_regconn_wait_end(void *pending, int err, int dead_rank);

/* The core accepted the wait: @w ends it on timeout or disconnect. */
void wr_regconn_waiting(void *pending, struct wr_reg_wait *w);

/*
 * The peer broke the protocol: close the connection once the answers
 * already queued (the error among them) are out.
 */
void wr_regconn_abort(struct wr_regconn *c);

/* A rank's own connection says goodbye: its closing is no loss. */
void wr_regconn_goodbye(struct wr_regconn *c);

/* Statistics for the "stats" request (a new reference). */
json_t *wr_regconn_stats_new(struct wr_regconn *c);

/* The "status" request (survey.c): answered once the ranks have been asked. */
void wr_regsurvey_status(struct wr_regreq *rq);

/* The request handlers (ops.c, kvops.c): answer @rq, now or later. */
void wr_regops_dispatch(struct wr_regreq *rq, const char *op);

#endif
