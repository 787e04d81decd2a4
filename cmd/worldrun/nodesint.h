/* SPDX-License-Identifier: MIT */
/*
 * nodesint: what nodes.c and nodestep.c share: the handle on every node,
 * and the few steps of nodes.c that a Slurm step's agents (nodestep.c)
 * go through too. Nothing outside the two includes it.
 */
#ifndef WR_NODESINT_H
#define WR_NODESINT_H

#include <arpa/inet.h>
#include <stdbool.h>

#include "nodes.h"
#include "remote.h"
#include "starter.h"

struct wr_dialin;
struct wr_srun;

/* A remote rank's life as its agent told it, in the only order it has. */
enum seen {
	SEEN_NONE,
	SEEN_STARTED,
	SEEN_EXITED,
	SEEN_FINISHED,
};

struct node {
	struct wr_nodes *n;
	int index;
	int *ranks;  /* its world ranks, rising */
	int nranks;
	struct wr_remote *remote; /* NULL: the in-process node */
	struct wr_starter starter;
	bool ready;
	bool lost;
	bool start_sent;
	bool start_done;
	bool reads_stdin;
	bool stdin_pending; /* has not taken the last chunk */
	bool connecting;    /* its shell started, its agent not ready yet */
	bool kept;          /* its shell is the one the last attempt kept */
	int early_fd;       /* srun's: its channel, until rank 0's is there too */
	int joined;         /* the first rank of the JOINED it has not
			     * answered, or -1 */
};

struct wr_nodes {
	struct wr_nodes_cfg cfg;
	struct node *nodes;
	int nnodes;
	int inproc;             /* the in-process node, or -1 */
	struct wr_hostjob here; /* its job, from its SETUP as any agent's */
	struct wr_agent *agent; /* always there: it reaps every child */
	int *rank_store;
	bool want_start;
	bool started;           /* START went out (or never will) */
	bool done_told;         /* the one START_DONE went out */
	int start_count;
	int start_err;
	int stdin_waiting;      /* nodes that have not taken the last chunk */
	unsigned char *seen;    /* [nseen]: what a remote agent said of each */
	int nseen;
	char launcher[INET_ADDRSTRLEN]; /* our address as agents saw it */
	char **far_env;         /* the other hosts' environment, borrowed strings */
	int far_envc;
	int next_open;          /* the next node whose shell is to start */
	int connecting;         /* shells started whose agents are not ready */
	bool opening;           /* open_more() runs: it goes on by itself */
	/* In a Slurm allocation: one srun for every remote node, whose agents
	 * dial in; the node of each of the step's tasks (Slurm's order, learnt
	 * as they dial in); rank 0's node's address, once it dialed in. */
	struct wr_dialin *dialin;
	struct wr_srun *srun;
	struct wr_starter step;
	int *step_node;
	int nstep;
	char master[INET_ADDRSTRLEN];
};

/* Node @d's SETUP; its strings are borrowed from the job. */
void wr_nodes_fill_setup(struct wr_nodes *n, struct node *d, struct wr_setup *s);

/* What node @d's remote needs; with @guarded, its shell's guardian slot. */
struct wr_remote_cfg wr_nodes_remote_cfg(struct wr_nodes *n, struct node *d,
					 bool guarded);

/* Node @d cannot go on: said once, with the exit status it calls for. */
void wr_nodes_lose(struct node *d, int status, const char *why);

/*
 * In a Slurm allocation: every remote node waits for its agent, and one
 * srun starts them all (nodestep.c). 0, or -ENOMEM; a step that cannot
 * start loses its nodes.
 */
int wr_nodes_open_step(struct wr_nodes *n);

/* srun was reaped: the nodes whose agents never came are lost with it. */
void wr_nodes_step_ended(struct wr_nodes *n, int wstatus);

#endif
