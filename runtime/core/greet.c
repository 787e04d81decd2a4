/* SPDX-License-Identifier: MIT */
#include "greet.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "listen.h"
#include "regproto.h"
#include "world_errors.h"

void
wr_greet_rank_who(char buf[WR_GREET_WHO_MAX], int rank)
{
	snprintf(buf, WR_GREET_WHO_MAX, "rank:%d", rank);
}

json_t *
wr_greet_hello_new(struct wr_greet_client *g, json_int_t id)
{
	if (wr_auth_nonce(g->nonce) < 0) {
		return NULL;
	}
	return wr_regproto_id(json_pack("{s:s, s:s, s:I, s:s}", "op", WR_OP_HELLO,
					"nonce", g->nonce, "rank", (json_int_t)g->rank,
					"role", g->role), id);
}

int
wr_greet_prove(struct wr_greet_client *g, json_t *result, json_int_t id,
	       json_t **proof_new)
{
	json_t *v = json_object_get(result, "value");
	char want[WR_AUTH_PROOF_LEN + 1], proof[WR_AUTH_PROOF_LEN + 1];
	const char *ns = NULL, *got = NULL;

	*proof_new = NULL;
	if (json_unpack(json_is_object(v) ? v : result, "{s:s, s:s}", "challenge", &ns,
			"proof", &got) < 0) {
		return WORLD_EPROTO;
	}
	wr_auth_server_proof(g->secret, g->nonce, ns, g->server, want);
	if (!wr_auth_nonce_ok(ns) || !wr_auth_same(want, got)) {
		return WORLD_EAUTH;
	}
	wr_auth_client_proof(g->secret, ns, g->nonce, g->rank, g->role, proof);
	*proof_new = wr_regproto_id(json_pack("{s:s, s:s}", "op", WR_OP_PROOF, "proof",
					      proof), id);
	return *proof_new != NULL ? 0 : -ENOMEM;
}

void
wr_greet_init(struct wr_greet *g, const struct wr_greet_cfg *cfg, bool local)
{
	*g = (struct wr_greet){ .cfg = cfg, .local = local };
}

static void
refuse(struct wr_greet_step *out, int code, const char *why)
{
	out->code = code;
	out->why = why;
}

static void
admit(struct wr_greet_step *out, long long rank, const char *role)
{
	out->admitted = true;
	out->rank = rank;
	snprintf(out->role, sizeof(out->role), "%s", role);
}

static bool
takes_role(const struct wr_greet_cfg *cfg, const char *role)
{
	for (const char *const *r = cfg->roles; *r != NULL; r++) {
		if (strcmp(*r, role) == 0) {
			return true;
		}
	}
	return false;
}

/*
 * A hello: with a nonce, the challenge, its proof to follow; with the
 * secret itself, only from this machine, where nobody but root sees it
 * go by.
 */
static void
take_hello(struct wr_greet *g, json_t *msg, struct wr_greet_step *out)
{
	const struct wr_greet_cfg *cfg = g->cfg;
	const char *nonce = json_string_value(json_object_get(msg, "nonce"));
	const char *secret = json_string_value(json_object_get(msg, "secret"));
	char ns[WR_AUTH_NONCE_LEN + 1], proof[WR_AUTH_PROOF_LEN + 1];
	const char *role = NULL, *why;
	json_int_t rank = -1; /* 64 bits: "i" would cut 2^32 down to 0 */

	if (json_unpack(msg, "{s:I, s:s}", "rank", &rank, "role", &role) < 0 ||
	    !takes_role(cfg, role)) {
		refuse(out, WORLD_EPROTO, cfg->expected);
	} else if ((why = cfg->check != NULL ? cfg->check(cfg->arg, role, rank) : NULL) != NULL) {
		refuse(out, WORLD_EPROTO, why);
	} else if (nonce == NULL && (secret == NULL || !cfg->clear)) {
		refuse(out, WORLD_EPROTO, cfg->expected);
	} else if (nonce != NULL) {
		if (wr_auth_challenge(&g->auth, cfg->secret, nonce, rank, role, cfg->who,
				      ns, proof) < 0) {
			refuse(out, WORLD_EPROTO, "hello: a nonce is 32 hexadecimal digits");
			return;
		}
		out->answer_new = json_pack("{s:s, s:s}", "challenge", ns, "proof", proof);
		if (out->answer_new == NULL) {
			refuse(out, -ENOMEM, NULL);
		}
	} else if (!g->local) {
		refuse(out, WORLD_EAUTH, "the secret is taken in clear only from this "
		       "machine: prove it (a hello with a nonce)");
	} else if (!wr_secret_ok(cfg->secret, secret)) {
		refuse(out, WORLD_EAUTH, "wrong job secret");
	} else {
		admit(out, rank, role);
	}
}

/* The client's proof, for the challenge of its hello. */
static void
take_proof(struct wr_greet *g, json_t *msg, struct wr_greet_step *out)
{
	const char *proof = json_string_value(json_object_get(msg, "proof"));
	long long rank = g->auth.rank;
	char role[sizeof(g->auth.role)];

	memcpy(role, g->auth.role, sizeof(role));
	if (proof == NULL) {
		g->auth.open = false;
	}
	if (proof == NULL || !wr_auth_check(&g->auth, g->cfg->secret, proof)) {
		refuse(out, WORLD_EAUTH, "wrong proof of the job secret");
		return;
	}
	admit(out, rank, role);
}

void
wr_greet_take(struct wr_greet *g, json_t *msg, struct wr_greet_step *out)
{
	const char *op = json_string_value(json_object_get(msg, "op"));
	const char *want = g->auth.open ? WR_OP_PROOF : WR_OP_HELLO;

	*out = (struct wr_greet_step){ .rank = -1 };
	if (op != NULL && strcmp(op, want) == 0) {
		if (g->auth.open) {
			take_proof(g, msg, out);
		} else {
			take_hello(g, msg, out);
		}
	} else if (g->cfg->strict) {
		/* A port of one protocol: anything else is no client of it. */
		refuse(out, g->auth.open ? WORLD_EAUTH : WORLD_EPROTO,
		       g->auth.open ? "wrong proof of the job secret" : g->cfg->expected);
	} else {
		refuse(out, WORLD_EAUTH, g->auth.open
		       ? "a challenged hello is followed by its proof" : "say hello first");
	}
}
