/* SPDX-License-Identifier: MIT */
/*
 * reach: an agent that srun started reaches its launcher. srun merges its
 * tasks' stdout, so the channel is a connection the agent makes, not its
 * stdin and stdout as over ssh. The job secret and the port come on stdin,
 * one line "SECRET PORT" (srun gives each task a copy of what the
 * launcher wrote there): never on a command line, which every user can
 * read. The launcher is at the address Slurm names
 * (SLURM_LAUNCH_NODE_IPADDR). The handshake is wire.h's (both sides
 * prove the secret), and the node is named as Slurm names it
 * (SLURMD_NODENAME, SLURM_NODEID), never by gethostname(). Every step is
 * bounded; it blocks, before any event loop runs.
 */
#ifndef WR_REACH_H
#define WR_REACH_H

#include <netinet/in.h>
#include <stddef.h>

/* The longest line read: the secret, a blank and the port. */
#define WR_REACH_SECRET_MAX 128

struct wr_reach {
	int fd; /* the channel: non-blocking, close-on-exec; -1 */
	char secret[WR_REACH_SECRET_MAX + 1];
	char launcher[INET_ADDRSTRLEN]; /* the address dialed */
	char self[INET_ADDRSTRLEN];     /* this end's */
};

/*
 * Read the secret and the port, connect and prove the secret, within
 * @timeout seconds in all. 0, or -1 with @why saying what failed.
 */
int wr_reach_open(struct wr_reach *d, double timeout, char *why, size_t size);

#endif
