/* SPDX-License-Identifier: MIT */
/*
 * dialin: where agents that reach back to the launcher connect (srun's:
 * srun merges its tasks' stdout, so a channel cannot be an agent's stdin
 * and stdout as over ssh). A TCP port on every address; each connection
 * is a stranger in a gate (listen.h) until it proved the job's secret by
 * challenge-response, both ways, in the registry's own hello (auth.h,
 * regclient.h: the agent is a client with role "agent" that wants the
 * "launcher"), and then named its node in one more frame. What follows on
 * the socket is the caller's: SETUP, commands, events (wire.h).
 */
#ifndef WR_DIALIN_H
#define WR_DIALIN_H

#include <netinet/in.h>

#include <event2/event.h>

struct wr_dialin;

/* The node an agent names: Slurm's name for it, and its place in the step. */
struct wr_dialin_agent {
	const char *name;  /* SLURMD_NODENAME; "" if it has none */
	int nodeid;        /* SLURM_NODEID: the task's place in the step */
	char addr[INET_ADDRSTRLEN]; /* where it connected from */
};

struct wr_dialin_cfg {
	struct event_base *base;
	const char *secret;  /* borrowed */
	double timeout;      /* seconds from accept to the node's name */
	/* A proven agent: @fd (non-blocking, close-on-exec) is the callee's. */
	void (*agent)(void *arg, const struct wr_dialin_agent *a, int fd);
	void *arg;
};

/* Listen on a port of every address. 0, or -errno. */
int wr_dialin_open(const struct wr_dialin_cfg *cfg, struct wr_dialin **out);

/* The port agents connect to. */
int wr_dialin_port(const struct wr_dialin *d);

/* Stop listening and drop every connection not handed on. Accepts NULL. */
void wr_dialin_close(struct wr_dialin *d);

#endif
