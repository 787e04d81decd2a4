/* SPDX-License-Identifier: MIT */
/*
 * nodes: the launcher's one handle on every node's agent. The first node
 * on this machine runs its agent in-process; every other node gets an
 * agent of its own through a starter (starter.h, remote.h), on its host,
 * or in a Slurm allocation from one srun step for all (nodestep.c).
 * It sends each node its SETUP, starts the ranks only once every agent
 * said it is ready, routes commands to the node of their rank (or to
 * all), and hands events on as if from one agent: one START_DONE for the
 * whole job, one STDIN_TAKEN per chunk. The in-process agent gets its
 * SETUP too, made into its job by the same code as a remote agent's
 * (hostjob.h). What the events mean is the policy's (policy.h).
 */
#ifndef WR_NODES_H
#define WR_NODES_H

#include <stdbool.h>

#include <event2/event.h>

#include "agent.h"
#include "guardian.h"
#include "job.h"
#include "map.h"
#include "restart.h"

struct wr_nodes;

struct wr_nodes_cfg {
	struct event_base *base;
	const struct wr_job *job;   /* borrowed, as the rest */
	const struct wr_map *map;
	struct wr_guardian *guardian; /* nranks + nnodes slots */
	const char *rsh;            /* NULL: ssh */
	bool slurm;                 /* one srun starts the remote agents */
	double connect_timeout;
	double host_timeout;        /* remote.h's */
	wr_agent_ev_cb *event;
	/* Node @node cannot go on: its agent refused the setup (@status 125,
	 * 126, 127) or its channel is lost (125). Once per node. */
	void (*lost)(void *arg, int node, int status, const char *why);
	/* A line a node's remote shell or agent wrote on stderr. */
	void (*said)(void *arg, int node, const char *line);
	int registry_port;          /* the registry's port for other hosts */
	struct wr_restart *restart; /* agents an earlier attempt kept, or NULL */
	void *arg;
};

/* The node number under which Slurm's step is kept (restart.h). */
#define WR_NODES_STEP (-1)

/*
 * The job restarts: every agent that can be (ready and still there) is
 * kept for the next attempt, into @r (restart.h), waiting at most
 * @seconds for all of them: a remote shell of its own with its channel,
 * or, where every agent of Slurm's step started anew, srun (they dial
 * the next attempt). Before wr_nodes_close, which leaves the kept ones be.
 */
void wr_nodes_keep(struct wr_nodes *n, struct wr_restart *r, double seconds);

/*
 * Open the in-process agent and start the agents of the other nodes.
 * Returns 0, or -errno (a starter could not run at all), after which
 * wr_nodes_close() is still called.
 */
int wr_nodes_open(const struct wr_nodes_cfg *cfg, struct wr_nodes **out);

/* START every node's ranks once all agents are ready (maybe at once). */
void wr_nodes_start(struct wr_nodes *n);

/* Start nothing after all (the job stops before its agents were ready):
 * START_DONE follows with no rank. No-op once started. */
void wr_nodes_cancel(struct wr_nodes *n);

/* Write what is queued for every remote agent now, outside the loop, for
 * at most a second in all: worldrun is about to stop itself (Ctrl-Z). */
void wr_nodes_flush(struct wr_nodes *n);

/* Send @cmd to the node of cmd->rank, or to every node for rank -1;
 * stdin to the nodes whose ranks read it; JOINED to every live node but
 * cmd->node, each of which answers once (a lost one never does: the
 * job stops then).
 * START is wr_nodes_start(). Returns how many nodes were sent JOINED or
 * a command for one rank (0 for the others). */
int wr_nodes_send(struct wr_nodes *n, const struct wr_cmd *cmd);

/* The node whose agent runs in-process: the first on this machine, or -1. */
int wr_nodes_inprocess(const struct wr_map *m);

/*
 * Give up on the remote nodes that still have ranks running (SIGKILL was
 * sent long ago): each is lost with @why, its channel closed.
 */
void wr_nodes_give_up(struct wr_nodes *n, const char *why);

/* Room for ranks up to @nranks - 1 (a spawn's, which the map has
 * already). 0 or -ENOMEM. */
int wr_nodes_grow(struct wr_nodes *n, int nranks);

/* Whether any node is lost. */
bool wr_nodes_any_lost(const struct wr_nodes *n);

/* How many nodes' agents are ready (the in-process one is at once). */
int wr_nodes_ready(const struct wr_nodes *n);

/* Close every channel (remote agents then stop what runs there) and the
 * in-process agent. Accepts NULL. */
void wr_nodes_close(struct wr_nodes *n);

#endif
