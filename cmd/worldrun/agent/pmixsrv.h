/* SPDX-License-Identifier: MIT */
/*
 * pmixsrv: the PMIx server of one host's ranks, with OpenPMIx's server
 * library, as Open MPI's orted and Slurm's slurmstepd use it: the job is
 * one namespace, each rank a registered client that finds the server
 * through the environment PMIx sets up for it; a fence is an all-gather
 * of every host's data through the job's registry (pmireg.h), abort and
 * a client gone without finalize go to the agent, whose launcher
 * decides. PMIx calls us on its own thread: everything it asks is handed
 * to the agent's loop and answered from there. One per process (PMIx's
 * rule).
 */
#ifndef WR_PMIXSRV_H
#define WR_PMIXSRV_H

#include <stdbool.h>

#include <event2/event.h>

#include "wire.h"

struct wr_pmixsrv;

/* A rank's spawn, from its ask to its answer (wr_pmixsrv_spawn_answer). */
struct wr_pmixsrv_spawn {
	int rank;        /* who asked */
	struct wr_spawn_app *apps; /* copied from PMIx's */
	size_t napps;
	int count;       /* ranks of all apps, 1 or more */
	int first;       /* the job's index of the first, once added */
	char nspace[256]; /* their namespace, once added */
	void *answer_;   /* private: PMIx's callback and its argument */
	void *answer_arg_;
};

struct wr_pmixsrv_cfg {
	struct event_base *base;
	const char *jobid;
	int size;             /* ranks in the job */
	int nnodes;
	int node;             /* this host's node rank */
	int nlocal;           /* ranks on this host: each a client */
	const int *ranks;     /* their world ranks, rising, [nlocal]; copied */
	const char *mapping;  /* PMI_process_mapping's value (which node
			       * each rank is on), or NULL: unknown */
	char *const *node_name; /* [nnodes]: the nodes' names, or NULL:
				 * this host's own and "worldrun-node-N"
				 * for the others; read while opening */
	const char *dir;      /* the job's private directory on this host */
	const char *registry; /* WORLD_REGISTRY */
	const char *secret;   /* the job's: it names the namespace */
	bool ompi;            /* tell Open MPI 4 to take PMIx's word
			       * (OMPI_MCA_ess, OMPI_MCA_schizo) */
	/* A rank called abort with @code and @msg (may be ""). */
	void (*abort)(void *arg, int rank, int code, const char *msg);
	/* A rank that spoke PMIx is gone without finalize (@why "": it
	 * ended). */
	void (*left)(void *arg, int rank, const char *why);
	/* A rank asks to start @sp->count ranks more (MPI_Comm_spawn): the
	 * callee owns @sp from now on and answers it. NULL: refused. */
	void (*spawn)(void *arg, struct wr_pmixsrv_spawn *sp);
	void *arg;
};

/*
 * Start the server for @cfg (copied, ranks and strings too) and register the
 * job and its clients. 0, -EBUSY (this process has one already), -ENOMEM,
 * or WORLD_EPROTO with why in @why (PMIx refused; its words).
 */
int wr_pmixsrv_open(const struct wr_pmixsrv_cfg *cfg, struct wr_pmixsrv **out,
		    char *why, size_t size);

/* What rank @rank of this host needs in its environment to find the
 * server: "NAME=VALUE" strings, NULL-terminated, borrowed. Safe on any
 * thread while no spawn is added. NULL for a NULL @s or a rank that is
 * not a client. */
char *const *wr_pmixsrv_env(const struct wr_pmixsrv *s, int rank);

/*
 * Make @sp's ranks, the job's indices @first to @first + count - 1, on
 * the nodes of @place (count entries), a namespace of their own with a
 * client each for those of this host (their environments:
 * wr_pmixsrv_env()). 0, -EINVAL (not past every rank served here, or a
 * node that is none), -ENOMEM, or WORLD_EPROTO with why in @why (PMIx
 * refused).
 */
int wr_pmixsrv_spawn_add(struct wr_pmixsrv *s, struct wr_pmixsrv_spawn *sp, int first,
			 const int *place, char *why, size_t size);

/*
 * The job's indices @first to @first + @count - 1, a spawn's ranks on the
 * nodes of @place, asked for by a rank of @node (another host), joined
 * the job: serve their namespace here too, with a client for each placed
 * here, so that this host's ranks can connect to them and learn of them.
 * Returns as wr_pmixsrv_spawn_add() (-EINVAL for this host's node too);
 * a NULL @s: 0.
 */
int wr_pmixsrv_joined(struct wr_pmixsrv *s, int first, int count, int node, const int *place,
		      char *why, size_t size);

/* Answer @sp (0: its ranks started; else why not, a negative code) and
 * free it. Accepts NULL. */
void wr_pmixsrv_spawn_answer(struct wr_pmixsrv_spawn *sp, int rc);

/*
 * @rank was reaped: if it spoke PMIx and neither finalized nor aborted,
 * it has left (left() comes before the caller tells of its end). Returns
 * whether it ever connected. Accepts a NULL @s and a rank that is not a
 * client.
 */
bool wr_pmixsrv_reaped(struct wr_pmixsrv *s, int rank);

/*
 * A stop signal is about to kill @ranks (@n of them): PMIx forgets those
 * of them that have not finalized, so that their deaths are no lost
 * connections to it (OpenPMIx 4.2.2 mishandles several at once). Waits
 * 5 s at most, once. Accepts a NULL @s.
 */
void wr_pmixsrv_stopping(struct wr_pmixsrv *s, const int *ranks, int n);

/* Answer what is under way with an error, and stop the server. Accepts
 * NULL. */
void wr_pmixsrv_close(struct wr_pmixsrv *s);

#endif
