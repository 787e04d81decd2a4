/* SPDX-License-Identifier: MIT */
#include "auth.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <sodium.h>

static void
hex(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

int
wr_auth_nonce(char out[WR_AUTH_NONCE_LEN + 1])
{
	unsigned char b[WR_AUTH_NONCE_LEN / 2];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		return errno != 0 ? -errno : -EIO;
	}
	hex(b, sizeof(b), out);
	return 0;
}

bool
wr_auth_nonce_ok(const char *s)
{
	return s != NULL && strlen(s) == WR_AUTH_NONCE_LEN &&
	       strspn(s, "0123456789abcdef") == WR_AUTH_NONCE_LEN;
}

/*
 * HMAC-SHA256 of @msg under the secret, in hexadecimal. libsodium, not
 * OpenSSL 3: the first HMAC of an OpenSSL 3 process costs about 3 ms of
 * CPU (its provider set-up), and every rank, agent and tool that proves
 * the secret makes one; 64 agents paid it on 2 cores. The functions used
 * here need no sodium_init().
 */
static void
mac(const char *secret, const char *msg, char out[WR_AUTH_PROOF_LEN + 1])
{
	unsigned char md[crypto_auth_hmacsha256_BYTES];
	crypto_auth_hmacsha256_state st;

	if (crypto_auth_hmacsha256_init(&st, (const unsigned char *)secret,
					strlen(secret)) != 0 ||
	    crypto_auth_hmacsha256_update(&st, (const unsigned char *)msg, strlen(msg)) != 0 ||
	    crypto_auth_hmacsha256_final(&st, md) != 0) {
		/* No proof at all: it matches none that a peer sends. */
		memset(out, 0, WR_AUTH_PROOF_LEN + 1);
		return;
	}
	sodium_memzero(&st, sizeof(st));
	hex(md, sizeof(md), out);
}

int
wr_auth_shm_prefix(const char *secret, const char *jobid,
		   char out[WR_AUTH_SHM_PREFIX_LEN + 1])
{
	char tag[WR_AUTH_PROOF_LEN + 1], msg[64];
	int rc = 0;

	if (secret == NULL || secret[0] == '\0') {
		rc = wr_auth_nonce(tag);
	} else {
		snprintf(msg, sizeof(msg), "worldrun shm 1\n%.16s", jobid);
		mac(secret, msg, tag);
	}
	snprintf(out, WR_AUTH_SHM_PREFIX_LEN + 1, "wr-%.16s-%.16s", jobid, tag);
	return rc;
}

int
wr_auth_private_name(const char *secret, const char *jobid, const char *use,
		     char out[WR_AUTH_NAME_LEN + 1])
{
	char tag[WR_AUTH_PROOF_LEN + 1], msg[128];

	if (secret == NULL || secret[0] == '\0') {
		return -EINVAL;
	}
	snprintf(msg, sizeof(msg), "worldrun name 1\n%.16s\n%.64s", jobid, use);
	mac(secret, msg, tag);
	snprintf(out, WR_AUTH_NAME_LEN + 1, "worldrun.%.16s.%.16s", jobid, tag);
	return 0;
}

/*
 * The two directions carry different labels, so that a proof one side
 * makes can never serve the other; the fields are nonces, a number and
 * names without '\n', so the text is read one way only.
 */
void
wr_auth_server_proof(const char *secret, const char *nc, const char *ns,
		     const char *who, char out[WR_AUTH_PROOF_LEN + 1])
{
	char msg[256];

	snprintf(msg, sizeof(msg), "worldrun server 1\n%s\n%s\n%s", nc, ns, who);
	mac(secret, msg, out);
}

void
wr_auth_client_proof(const char *secret, const char *ns, const char *nc,
		     long long rank, const char *role, char out[WR_AUTH_PROOF_LEN + 1])
{
	char msg[256];

	snprintf(msg, sizeof(msg), "worldrun client 1\n%s\n%s\n%lld\n%s", ns, nc,
		 rank, role);
	mac(secret, msg, out);
}

bool
wr_auth_same(const char *want, const char *got)
{
	return got != NULL && want[0] != '\0' && strlen(got) == strlen(want) &&
	       sodium_memcmp(want, got, strlen(want)) == 0;
}

int
wr_auth_challenge(struct wr_auth_pending *p, const char *secret, const char *nc,
		  long long rank, const char *role, const char *who,
		  char ns[WR_AUTH_NONCE_LEN + 1], char proof[WR_AUTH_PROOF_LEN + 1])
{
	int rc;

	if (!wr_auth_nonce_ok(nc) || strlen(role) >= sizeof(p->role)) {
		return -EINVAL;
	}
	rc = wr_auth_nonce(p->ns);
	if (rc < 0) {
		return rc;
	}
	memcpy(p->nc, nc, sizeof(p->nc));
	memcpy(ns, p->ns, sizeof(p->ns));
	snprintf(p->role, sizeof(p->role), "%s", role);
	p->rank = rank;
	p->open = true;
	wr_auth_server_proof(secret, nc, p->ns, who, proof);
	return 0;
}

bool
wr_auth_check(struct wr_auth_pending *p, const char *secret, const char *proof)
{
	char want[WR_AUTH_PROOF_LEN + 1];
	bool open = p->open;

	p->open = false;
	if (!open) {
		return false;
	}
	wr_auth_client_proof(secret, p->ns, p->nc, p->rank, p->role, want);
	return wr_auth_same(want, proof);
}
