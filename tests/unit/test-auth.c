/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for auth: the proofs are HMAC-SHA256 over the texts that
 * auth.c names (checked against values computed apart, with Python's
 * hmac), nonces are fresh, a challenge is answered once, and neither a
 * wrong secret, another side's proof, nor a proof of another connection
 * passes.
 */
#include "auth.h"
#include "tap.h"

#include <errno.h>
#include <string.h>

#define SECRET "0123456789abcdef0123456789abcdef"
#define A32 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define B32 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

int
main(void)
{
	char p[WR_AUTH_PROOF_LEN + 1], q[WR_AUTH_PROOF_LEN + 1];
	char n1[WR_AUTH_NONCE_LEN + 1], n2[WR_AUTH_NONCE_LEN + 1];
	char ns[WR_AUTH_NONCE_LEN + 1];
	char sp[WR_AUTH_SHM_PREFIX_LEN + 1], sq[WR_AUTH_SHM_PREFIX_LEN + 1];
	struct wr_auth_pending pend = { 0 };

	plan(19);
	wr_auth_server_proof(SECRET, A32, B32, "registry", p);
	is_str(p, "8b8641a86adb47c7950d5537f074c7e37417d35efffcbf7503cfff0f8b4f56eb",
	       "the server's proof is HMAC-SHA256 of its text");
	wr_auth_client_proof(SECRET, B32, A32, 3, "rank", p);
	is_str(p, "ca948dd403b78fa86a9262d2e81a2c44db28ed4daedd6e5a3f88bf08b69a9ccf",
	       "the client's proof is HMAC-SHA256 of its text");
	wr_auth_server_proof(SECRET, A32, B32, "rank:3", q);
	ok(strcmp(p, q) != 0, "a server's proof never stands for a client's");
	wr_auth_server_proof(SECRET, A32, B32, "rank:4", p);
	ok(strcmp(p, q) != 0, "a proof names the rank that makes it");

	is_int(wr_auth_nonce(n1), 0, "a nonce");
	is_int(wr_auth_nonce(n2), 0, "another");
	ok(wr_auth_nonce_ok(n1) && strcmp(n1, n2) != 0, "32 hex digits, fresh each time");
	ok(!wr_auth_nonce_ok("xyz") && !wr_auth_nonce_ok(A32 "a") && !wr_auth_nonce_ok(NULL) &&
		   !wr_auth_nonce_ok("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
	   "nonces of another length, case or alphabet are refused");

	is_int(wr_auth_challenge(&pend, SECRET, "no nonce", 0, "tool", "registry", ns, p),
	       -EINVAL, "a challenge to a hello whose nonce is none is refused");
	is_int(wr_auth_challenge(&pend, SECRET, n1, 2, "tool", "registry", ns, p), 0,
	       "a challenge to a hello with a nonce");
	wr_auth_server_proof(SECRET, n1, ns, "registry", q);
	ok(strcmp(p, q) == 0 && wr_auth_nonce_ok(ns), "with its nonce and the server's proof");
	wr_auth_client_proof("ffffffffffffffffffffffffffffffff", ns, n1, 2, "tool", q);
	ok(!wr_auth_check(&pend, SECRET, q), "a proof made with another secret fails");
	wr_auth_client_proof(SECRET, ns, n1, 2, "tool", q);
	ok(!wr_auth_check(&pend, SECRET, q), "and the challenge is spent: the right proof fails after");
	wr_auth_challenge(&pend, SECRET, n1, 2, "tool", "registry", ns, p);
	ok(!wr_auth_check(&pend, SECRET, q), "a proof for an older challenge fails (a replay)");
	wr_auth_challenge(&pend, SECRET, n1, 2, "tool", "registry", ns, p);
	wr_auth_client_proof(SECRET, ns, n1, 2, "tool", q);
	ok(wr_auth_check(&pend, SECRET, q) && !wr_auth_same(q, NULL) && !wr_auth_same(q, ""),
	   "the right proof for this challenge passes; nothing else does");

	wr_auth_shm_prefix(SECRET, "0a1b2c3d4e5f", sp);
	is_str(sp, "wr-0a1b2c3d4e5f-bdae6479426bcefb",
	       "a job's /dev/shm prefix: its id and HMAC-SHA256 of it under the secret");
	wr_auth_shm_prefix(B32, "0a1b2c3d4e5f", sq);
	ok(strcmp(sp, sq) != 0 && strncmp(sq, "wr-0a1b2c3d4e5f-", 16) == 0,
	   "another secret, another prefix for the same id");
	is_int(wr_auth_shm_prefix("", "0a1b2c3d4e5f", sp), 0, "no secret: a prefix all the same");
	wr_auth_shm_prefix(NULL, "0a1b2c3d4e5f", sq);
	ok(strlen(sp) == 32 && strlen(sq) == 32 && strcmp(sp, sq) != 0,
	   "without a secret, a random part each time");
	return done_testing();
}
