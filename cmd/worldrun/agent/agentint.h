/* SPDX-License-Identifier: MIT */
/*
 * agentint: what agent.c (the ranks once started: their output, their
 * ends, signals, pauses) and agent-start.c (starting them: pipes, stdin,
 * PMI, spawn in parallel) share: the agent's state and the few steps
 * both take. Nothing outside the two includes it.
 */
#ifndef WR_AGENTINT_H
#define WR_AGENTINT_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "agent.h"
#include "pmixsrv.h"
#include "stream.h"

struct proc;
struct spawn_wait;

struct ostream {
	struct proc *p;
	int id; /* enum wr_stream_id */
	struct wr_stream st;
	struct event *ev;
	bool paused;
};

struct proc {
	struct wr_agent *a;
	int rank;
	pid_t pid;
	bool started;
	bool reaped;
	bool finished;
	bool group_killed;
	int dying_looks; /* drain looks since the group was killed */
	int fail_err;
	int fail_stage;
	struct ostream io[2];
	struct event *drain;
	double start_mono;
	int start_err;
	int in_wr; /* our end of its stdin pipe, until the fanout has it */
	int pmi;   /* our end of its PMI connection, until the server has it */
};

struct wr_agent {
	struct event_base *base;
	struct wr_hostjob *job;
	int stdin_fd;     /* what the stdin rank reads; -1: chunks */
	wr_agent_ev_cb *cb;
	void *arg;
	const int *ranks; /* NULL: 0 to nranks-1 */
	int nranks;       /* the host's ranks */
	int node;
	struct proc *procs;
	int first;        /* the local ranks started: first to first+count-1 */
	int count;
	struct event *sigchld;
	int fail_rd;
	int fail_wr;
	int devnull;
	struct wr_spawn_slots *slots; /* NULL: plain vfork */
	char *scratch;
	sigset_t nondefault;
	bool paused_all;
	bool held;      /* wr_agent_hold(): the channel is full */
	void (*other_child)(void *arg, pid_t pid, int wstatus);
	struct wr_fanout *fanout; /* for the ranks that read chunks */
	struct wr_pool *pool;     /* starts ranks in parallel */
	bool start_failed;
	int nstarted; /* ranks announced with WR_EV_STARTED */
	pid_t *guard_slots;
	pid_t *spare_slots;       /* the host's: slots for spawns' ranks */
	int nspare;               /* how many of them are left */
	struct wr_pmisrv *pmisrv; /* with job->pmi: the ranks' PMI-1 server */
	struct wr_pmixsrv *pmixsrv; /* and their PMIx server, where it started */
	int mpilib_known; /* 0: not read yet; 1: the program links mpilib; -1: not */
	char mpilib[64];
	struct wr_agent_stacks *stacks; /* STACK commands being answered */
	/* Spawns (agent-spawn.c): the ranks a spawn started here, each app
	 * an agent of its own that the host's agent reaps and commands; the
	 * spawns waiting for the launcher to number their ranks. */
	struct wr_agent *parent;   /* a spawn's: the host's agent */
	struct wr_agent *kids;     /* the host's: its spawns' agents */
	struct wr_agent *next_kid;
	struct wr_hostjob kid_job; /* a spawn's: its app as a job */
	char **kid_argv;
	int *kid_ranks;
	struct spawn_wait *spawns;
	int spawn_ids;
};

/* The agents of a host: @a, then its spawns' (for x = a; x; x = next). */
struct wr_agent *wr_agent_next(const struct wr_agent *a, const struct wr_agent *x);

/* The PMIx server that serves @a's ranks, or NULL. */
struct wr_pmixsrv *wr_agent_pmix(const struct wr_agent *a);

/* wr_agent_open(), of a spawn's agent under the host's @parent (NULL:
 * the host's own). */
int wr_agent_open_in(const struct wr_agent_cfg *cfg, struct wr_agent *parent,
		     struct wr_agent **out);

/* Hand @ev to the agent's owner (cfg->cb). */
void wr_agent_emit(struct wr_agent *a, const struct wr_ev *ev);

/* The started rank whose world rank is @rank, or NULL. */
struct proc *wr_agent_find_rank(struct wr_agent *a, int rank);

/* Watch stream @id of @p, read from @fd (which it owns from now on). */
int wr_agent_open_stream(struct ostream *o, struct proc *p, int id, int fd);

/* Close the @n fds of @fds that are open, and mark them closed. */
void wr_agent_close_fds(int *fds, int n);

/* Ranks whose exec failed said why on the failure pipe: note it. */
void wr_agent_read_failures(struct wr_agent *a);

/* START: local ranks @first to @first+@count-1. 0 or -errno. */
int wr_agent_start(struct wr_agent *a, int first, int count);

/* STACK: the stack of rank @rank, sent as a STACK event when taken (at
 * once when it cannot be: not running here, no tool). 0. */
int wr_agent_stack(struct wr_agent *a, int rank);

/* PMIx's spawn (pmixsrv.h's cfg.spawn): the launcher is asked to number
 * the ranks (WR_EV_SPAWN). */
void wr_agent_spawn_ask(void *arg, struct wr_pmixsrv_spawn *sp);

/* A START_FAILED of a spawn's rank names its program in @ev's data. */
void wr_agent_spawned_prog(const struct wr_agent *a, struct wr_ev *ev);

/* SPAWN: start the ranks the launcher numbered, or refuse the spawn. */
int wr_agent_spawn_cmd(struct wr_agent *a, const struct wr_cmd *cmd);

/* JOINED: serve another host's spawned ranks here, then say so. */
int wr_agent_spawn_joined(struct wr_agent *a, const struct wr_cmd *cmd);

/* Answer the spawns still waiting, and close the spawns' agents. */
void wr_agent_spawns_close(struct wr_agent *a);

/* Wait for the stacks being taken (each within its tool's time), drop
 * them and free what STACK needed. */
void wr_agent_stacks_close(struct wr_agent *a);

#endif
