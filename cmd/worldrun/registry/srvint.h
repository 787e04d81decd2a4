/* SPDX-License-Identifier: MIT */
/*
 * srvint: the JSON front end's connections and pending answers, shared by
 * server.c (which owns them) and survey.c (which asks the ranks' own
 * connections what they block in). Private to the front end.
 */
#ifndef WR_REG_SRVINT_H
#define WR_REG_SRVINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <jansson.h>

#include "conn.h"
#include "greet.h"
#include "listen.h"
#include "ring.h"
#include "server.h"

struct wr_regsurvey;

struct pending {
	struct wr_regconn *c; /* NULL once the connection is gone */
	struct pending *prev, *next;
	json_int_t id;
	struct event *timer;
	struct wr_reg_wait *w;
	double since;         /* when the request came */
	json_t *msg;          /* the request, for the words of its failure */
	char *why;            /* why it timed out, once it did */
	struct wr_regwait *what; /* how it starts and is answered (conn.h) */
	size_t cost;
};

struct wr_regconn {
	struct wr_regsrv *s;
	struct wr_regconn *prev, *next;
	struct wr_link *link;
	enum wr_regrole role;
	int rank;
	bool goodbye;
	struct wr_gate_entry gate; /* until its hello */
	struct wr_greet greet;     /* until it is admitted */
	struct event *timer;       /* a rank's lease */
	double heard;              /* when it last spoke, less the stalls since */
	struct pending *pending;
	int nwaits;
	size_t wait_bytes;
	uint64_t requests;
};

struct wr_regsrv {
	struct wr_regsrv_cfg cfg;
	struct wr_greet_cfg greet; /* what a hello may name here */
	struct wr_listeners listen;
	struct wr_gate gate;
	struct wr_regconn *conns;
	int ntools;
	struct wr_regconn **rank_conn;
	int size;
	bool leases_paused;
	struct event *tick;
	double last_tick;
	struct ring surveys;          /* asking the ranks now */
	json_int_t survey_id;         /* the last one's */
	int nsurveys;
};

/* ---- later.c, for server.c ---- */

/* Connection @c is closing: its waits end unanswered, nobody is left to
 * hear. */
void wr_regconn_drop_waits(struct wr_regconn *c);

/* The pending answer a wait of the core stands for, when a request of
 * this server started it (else NULL: another client of the core). */
const struct pending *wr_regconn_pending_of(const struct wr_reg_wait_info *in);

/* ---- survey.c, for server.c ---- */

/* A frame from rank @rank's own connection that is no request: an answer. */
void wr_regsurvey_answer(struct wr_regsrv *s, int rank, json_t *msg);

/* Rank @rank's own connection is gone: no answer will come from it. */
void wr_regsurvey_gone(struct wr_regsrv *s, int rank);

/* wr_regsrv_close(): the surveys still asking end now. */
void wr_regsurvey_close_all(struct wr_regsrv *s);

/* Connection @c is closing: the status answers it waits for go nowhere. */
void wr_regsurvey_forget(struct wr_regsrv *s, struct wr_regconn *c);

/*
 * The words of a failed wait's answer, from its request @msg: why
 * pending wait @w timed out ("rank 1 did not arrive at barrier \"b\""),
 * or what @rank's end (cfg.fate) did to it ("rank 1 exited with status
 * 0 before entering barrier \"b\""). A new string, or NULL.
 */
char *wr_regsurvey_timeout_why(const struct wr_reg_wait *w, const json_t *msg);
char *wr_regsurvey_dead_why(struct wr_regsrv *s, const json_t *msg, int rank);

#endif
