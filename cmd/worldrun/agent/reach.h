/* SPDX-License-Identifier: MIT */
/*
 * reach: an agent that srun started reaches its launcher. srun merges its
 * tasks' stdout, so the channel is a connection the agent makes, not its
 * stdin and stdout as over ssh. The job secret comes on stdin, one line
 * (srun gives each task a copy of what the launcher wrote there); the
 * launcher is at the address Slurm names (SLURM_LAUNCH_NODE_IPADDR), on
 * the port of the command line. The handshake is wire.h's (both sides
 * prove the secret), and the node is named as Slurm names it
 * (SLURMD_NODENAME, SLURM_NODEID), never by gethostname(). Every step is
 * bounded; it blocks, before any event loop runs.
 */
#ifndef WR_REACH_H
#define WR_REACH_H

#include <netinet/in.h>
#include <stddef.h>

/* The longest secret line read. */
#define WR_REACH_SECRET_MAX 128

struct wr_reach {
	int fd; /* the channel: non-blocking, close-on-exec; -1 */
	char secret[WR_REACH_SECRET_MAX + 1];
	char launcher[INET_ADDRSTRLEN]; /* the address dialed */
	char self[INET_ADDRSTRLEN];     /* this end's */
};

/*
 * Read the secret, connect to @port (decimal) and prove it, within
 * @timeout seconds in all. 0, or -1 with @why saying what failed.
 */
int wr_reach_open(struct wr_reach *d, const char *port, double timeout, char *why,
		 size_t size);

#endif
