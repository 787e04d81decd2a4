/* SPDX-License-Identifier: MIT */
/*
 * greet: the one handshake every connection to a server of the job
 * begins with, written once for the three servers (the registry, a
 * rank's peer server, the launcher's port for srun's agents) and their
 * clients. The client's hello names whom it acts for (a rank and a role)
 * with its nonce; the server answers with its challenge and its proof of
 * being who the client meant; the client checks that and sends its proof
 * (auth.h). Where a server allows it, a client on this machine may send
 * the secret itself instead. It checks and builds the messages, in the
 * words each side has always used; it does no I/O: each side sends what
 * it is given.
 */
#ifndef WR_GREET_H
#define WR_GREET_H

#include <stdbool.h>

#include <jansson.h>

#include "auth.h"

/* What a rank's peer server proves it is, and a client of it means:
 * "rank:N" into @buf; room for any rank. */
#define WR_GREET_WHO_MAX 24
void wr_greet_rank_who(char buf[WR_GREET_WHO_MAX], int rank);

/* ---- the client's half ---- */

struct wr_greet_client {
	const char *secret;  /* borrowed, as the rest */
	const char *server;  /* whom it means: "registry", "rank:3", ... */
	long long rank;      /* whom it acts for */
	const char *role;
	char nonce[WR_AUTH_NONCE_LEN + 1]; /* its own, made by the hello */
};

/*
 * The hello, {op: hello, nonce, rank, role} with a fresh nonce, and "id"
 * @id unless @id is negative (a link that adds ids itself). A new
 * reference; NULL without memory or randomness.
 */
json_t *wr_greet_hello_new(struct wr_greet_client *g, json_int_t id);

/*
 * The server's answer to the hello (@result, borrowed; a rank's server
 * wraps it in "value"): its proof checked, then our proof, {op: proof,
 * proof} with "id" @id unless negative, in *@proof_new. Returns 0,
 * WORLD_EPROTO (the answer has no challenge), WORLD_EAUTH (the proof is
 * not the one of the server meant, with this secret) or -ENOMEM.
 */
int wr_greet_prove(struct wr_greet_client *g, json_t *result, json_int_t id,
		   json_t **proof_new);

/* ---- the server's half ---- */

struct wr_greet_cfg {
	const char *secret;      /* borrowed, as the rest */
	const char *who;         /* what the server proves it is */
	const char *const *roles; /* the roles it takes, NULL-terminated */
	const char *expected;    /* its words for a hello it does not take */
	/* The secret itself is taken, from a client on this machine. */
	bool clear;
	/* Nothing but the handshake is taken: any other frame is answered
	 * as a hello not taken, or as a wrong proof after the challenge. */
	bool strict;
	/* Why @rank may not act in @role here (an EPROTO), or NULL. */
	const char *(*check)(void *arg, const char *role, long long rank);
	void *arg;
};

/* One connection's handshake, until it is admitted. */
struct wr_greet {
	const struct wr_greet_cfg *cfg;
	bool local;                  /* the client is on this machine */
	struct wr_auth_pending auth; /* between the challenge and the proof */
};

/* What the server does with one frame of a connection not yet admitted. */
struct wr_greet_step {
	int code;           /* 0, or the error to answer with and close */
	const char *why;    /* its words */
	json_t *answer_new; /* code 0, not admitted: the challenge to answer */
	bool admitted;      /* it proved the secret: from now on it acts... */
	long long rank;     /* ...for this rank... */
	char role[16];      /* ...in this role */
};

void wr_greet_init(struct wr_greet *g, const struct wr_greet_cfg *cfg, bool local);

/* Take @msg (borrowed), a request {op, id, ...} the server has checked
 * that far, and say in @out what comes of it. */
void wr_greet_take(struct wr_greet *g, json_t *msg, struct wr_greet_step *out);

#endif
