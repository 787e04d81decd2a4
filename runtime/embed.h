/* SPDX-License-Identifier: MIT */
/*
 * embed: a world without worldrun. Machin's programs start their own
 * processes and give each its rank, the world's size and an address:
 * rank 0's process hosts the job's registry there (the registry library
 * that worldrun hosts, on a thread of its own), and every rank joins it
 * as it would join worldrun's. The secret is WORLD_SECRET when set, else
 * rank 0 makes one and keeps it in a 0600 file of the per-user runtime
 * directory (rundir.h) named after the address, where only this user's
 * processes on this host find it. No policy but the registry's own: a
 * rank that drops its connection is dead to its peers.
 */
#ifndef WR_EMBED_H
#define WR_EMBED_H

#include <netinet/in.h>
#include <stddef.h>

/* An address as "tcp://HOST:PORT" (Machin's init methods) or "HOST:PORT". */
struct wr_embed_addr {
	char ip[INET_ADDRSTRLEN]; /* HOST resolved to IPv4 */
	int port;                 /* 1 to 65535 */
};

/* 0, or -EINVAL (not such an address) or -EHOSTUNREACH (HOST has no
 * IPv4 address). */
int wr_embed_parse(const char *address, struct wr_embed_addr *out);

/*
 * The address of this host that reaches @a (the interface a connection
 * to it leaves by) into @ip: where this rank's peers of other hosts
 * reach it. 0, 1 when that is loopback (one host: no other host to be
 * reached from), or -errno.
 */
int wr_embed_local_ip(const struct wr_embed_addr *a, char ip[INET_ADDRSTRLEN]);

struct wr_embed;

/*
 * Host a registry for @size ranks at @a, behind @secret (copied), and
 * serve it on a thread of its own. Returns 0, -EADDRINUSE (another
 * process listens there), -EADDRNOTAVAIL (not an address of this host)
 * or another -errno.
 */
int wr_embed_host_open(const struct wr_embed_addr *a, int size, const char *secret,
		       struct wr_embed **out);

/*
 * Stop serving once every rank has said goodbye or died, or after
 * @linger_ms (0: at once), so that the last answers reach the ranks
 * that stop with this one; then free @e. Accepts NULL.
 */
void wr_embed_host_close(struct wr_embed *e, int linger_ms);

/* The secret file of @a: written (0600, atomically, with rank 0's pid,
 * and the files of rank 0s that are gone removed) by rank 0, removed at
 * its stop, read by the others: 0, -ENOENT (none yet) or -errno. */
int wr_embed_secret_write(const struct wr_embed_addr *a, const char *secret);
void wr_embed_secret_remove(const struct wr_embed_addr *a);
int wr_embed_secret_read(const struct wr_embed_addr *a, char *secret, size_t room);

/*
 * A directory of this process's own (0700) in the user's runtime
 * directory, "rank-PID-XXXXXX", for the rank's Unix socket: its peers on
 * this host (the same user's processes) reach it there, and may pull
 * from its memory. The directories of processes that are gone are
 * removed first. A malloc'd path, or NULL (TCP only then).
 */
char *wr_embed_rank_dir(void);
/* Remove @path and what is in it. Accepts NULL. */
void wr_embed_rank_dir_remove(const char *path);

#endif
