/* SPDX-License-Identifier: MIT */
/*
 * auth: proving that one holds the job's secret without sending it, by
 * challenge-response with HMAC-SHA256 (libsodium), both ways.
 * The client's hello carries its nonce; the server answers with its own
 * nonce and its proof, which names who it is ("registry", "rank:N"); the
 * client checks that, then sends its proof, which names its rank and
 * role. Every proof covers both fresh nonces, so none can be replayed on
 * another connection. It knows nothing of frames or sockets.
 */
#ifndef WR_AUTH_H
#define WR_AUTH_H

#include <stdbool.h>

#define WR_AUTH_NONCE_LEN 32 /* hexadecimal digits */
#define WR_AUTH_PROOF_LEN 64 /* hexadecimal digits of an HMAC-SHA256 */

/* "wr-" JOBID (at most 16 bytes) "-" and 16 hexadecimal digits
 * (wr_auth_shm_prefix()). */
#define WR_AUTH_SHM_PREFIX_LEN 40

/*
 * What the names a job gives its shared memory (/dev/shm) begin with:
 * "wr-@jobid-" and a part that only holders of @secret can work out.
 * Another user knows the job id, so names made of it alone could be
 * taken first, and every collective group of the job would fail. An
 * empty @secret (a world of one process) gets a random part. 0 or
 * -errno (no random bytes).
 */
int wr_auth_shm_prefix(const char *secret, const char *jobid,
		       char out[WR_AUTH_SHM_PREFIX_LEN + 1]);

/*
 * "worldrun." @jobid "." and 16 hexadecimal digits that only holders of
 * @secret can work out, for @use: a name the job's processes share and
 * no one else may guess (an agent's PMIx namespace, which is all a
 * process of another user would need to pass for a rank). Unlike the
 * shared-memory prefix it is never put where others can read it. 0, or
 * -EINVAL for an empty @secret.
 */
#define WR_AUTH_NAME_LEN 42
int wr_auth_private_name(const char *secret, const char *jobid, const char *use,
			 char out[WR_AUTH_NAME_LEN + 1]);

/* A fresh nonce from the kernel's random source. 0 or -errno. */
int wr_auth_nonce(char out[WR_AUTH_NONCE_LEN + 1]);

/* Whether @s is a nonce (and so safe to put into a proof). */
bool wr_auth_nonce_ok(const char *s);

/* The server's proof, for the client's nonce @nc and the server's @ns. */
void wr_auth_server_proof(const char *secret, const char *nc, const char *ns,
			  const char *who, char out[WR_AUTH_PROOF_LEN + 1]);

/* The client's proof, for acting as @rank in @role. */
void wr_auth_client_proof(const char *secret, const char *ns, const char *nc,
			  long long rank, const char *role,
			  char out[WR_AUTH_PROOF_LEN + 1]);

/* A server's half of one handshake: what the hello named, until its proof. */
struct wr_auth_pending {
	bool open;
	char nc[WR_AUTH_NONCE_LEN + 1];
	char ns[WR_AUTH_NONCE_LEN + 1];
	long long rank;
	char role[16];
};

/*
 * The server's answer to a hello with the client's nonce @nc, acting as
 * @rank in @role: @p is filled and the reply's challenge and proof (of
 * being @who) are written. 0, -EINVAL (@nc is no nonce, @role too long)
 * or -errno.
 */
int wr_auth_challenge(struct wr_auth_pending *p, const char *secret,
		      const char *nc, long long rank, const char *role,
		      const char *who, char ns[WR_AUTH_NONCE_LEN + 1],
		      char proof[WR_AUTH_PROOF_LEN + 1]);

/* Whether @proof answers @p's challenge; closes @p either way. */
bool wr_auth_check(struct wr_auth_pending *p, const char *secret, const char *proof);

/* Whether @got is the proof @want; time depends on the length only. */
bool wr_auth_same(const char *want, const char *got);

#endif
