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
 * A request answered later, when a wait of the core (core.h) ends: its
 * handler makes one (wr_regops_wait_create()), says how the core's wait
 * starts and how the answer is built when it ends well, and hands it to
 * wr_regconn_wait(), which does the rest in one place: the connection's
 * budget of waits, the timeout, the start, the answer or the error (in
 * words that name who is missing), and freeing it.
 */
struct wr_regwait;

/* Start the core's wait for @w, with the server's @cb and @arg. The core
 * may end it at once; then *@cw stays NULL. 0 or a negative code. */
typedef int wr_regwait_start_fn(struct wr_regwait *w, wr_reg_wait_cb *cb, void *arg,
				struct wr_reg_wait **cw);

/* The wait ended well: answer @id on @c (wr_regconn_reply or _fail). */
typedef void wr_regwait_done_fn(struct wr_regwait *w, struct wr_regconn *c,
				json_int_t id);

/* One allocation, freed with free(). */
struct wr_regwait {
	wr_regwait_start_fn *start;
	wr_regwait_done_fn *done; /* NULL: answer {} */
	int64_t timeout_ms;  /* as in world.h */
	struct wr_reg *reg;
	int rank;            /* whom it waits for (the request's) */
	size_t bytes;        /* its own size */
	uint64_t gen;        /* a barrier's generation; deaths seen */
	enum wr_reg_table table;
	const int *members;  /* for the start of a barrier or join only */
	size_t nmembers;
	size_t n;
	const char *str[];   /* n strings, stored after the array */
};

/* Waits a connection may hold at once, and the bytes they may cost. */
#define WR_REGCONN_WAITS_MAX 1024
#define WR_REGCONN_WAIT_BYTES_MAX (16u << 20)

/*
 * Answer @rq when @w ends; @w is the server's from now on, even on
 * failure (it frees it). A timeout that is none of world.h's is a bad
 * request; a connection that holds WR_REGCONN_WAITS_MAX waits, or waits
 * that cost WR_REGCONN_WAIT_BYTES_MAX, gets -ENOBUFS. @rq is answered in
 * every case, maybe before this returns.
 */
void wr_regconn_wait(struct wr_regreq *rq, struct wr_regwait *w);

/*
 * The peer broke the protocol: close the connection once the answers
 * already queued (the error among them) are out.
 */
void wr_regconn_abort(struct wr_regconn *c);

/* A rank's own connection says goodbye: its closing is no loss. */
void wr_regconn_goodbye(struct wr_regconn *c);

/* The connection's rank said it failed (world_fail): its host is told
 * (rank_failed), and the connection's end is no second loss. */
void wr_regconn_failed(struct wr_regconn *c, int status, const char *why);

/* Statistics for the "stats" request (a new reference). */
json_t *wr_regconn_stats_new(struct wr_regconn *c);

/* The "status" request (survey.c): answered once the ranks have been asked. */
void wr_regsurvey_status(struct wr_regreq *rq);

/* The request handlers (ops.c, kvops.c): answer @rq, now or later. */
void wr_regops_dispatch(struct wr_regreq *rq, const char *op);

#endif
