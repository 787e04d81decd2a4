/* SPDX-License-Identifier: MIT */
/*
 * policy: what worldrun decides while the job runs (rank states, the exit
 * status, stopping the job, the failure lines), driven by the events of
 * the agents, the registry and the output, and by signals. It owns that
 * state and the rank table; the rest of the launcher reads them through
 * the calls below. It never touches a process itself: it asks the agents
 * (struct wr_policy_agents). run.c opens the parts and wires this
 * module's handlers into them.
 */
#ifndef WR_POLICY_H
#define WR_POLICY_H

#include <stdbool.h>

#include <event2/event.h>
#include <jansson.h>

#include "map.h"
#include "nodes.h"
#include "output.h"
#include "rank.h"
#include "reghost.h"
#include "wire.h"

struct wr_policy;

/* What the policy asks of the agents: nodes.h's calls in worldrun. */
struct wr_policy_agents {
	/* Returns how many agents a command for one rank, or JOINED, went
	 * to (wr_nodes_send()). */
	int (*send)(void *arg, const struct wr_cmd *cmd);
	/* Start nothing after all (wr_nodes_cancel()). */
	void (*cancel)(void *arg);
	/* Give up on the remote nodes still running (wr_nodes_give_up()). */
	void (*give_up)(void *arg, const char *why);
	/* Write what is queued for the agents now (wr_nodes_flush()). */
	void (*flush)(void *arg);
	void *arg;
};

/* What it reads of the job; borrowed, all of it, for its whole life. */
struct wr_policy_cfg {
	struct event_base *base;
	const struct wr_map *map;
	const char *jobid;
	const char *host;     /* this machine's name */
	const char *program;  /* the resolved program, for messages */
	const char *wdir;     /* where ranks here run; NULL: ours */
	const char *far_wdir; /* where the other hosts' ranks run; NULL: ours */
	double t0;            /* when worldrun started (wr_clock_mono()) */
	double kill_grace;    /* the options it acts on */
	double timeout;       /* 0: none */
	int verbose;
	bool keep_going;
	bool forward_quit;
	bool timeout_stacks;
	bool feed;            /* our stdin goes to the ranks as data */
	struct wr_policy_agents agents;
	/* Make room in the rest of the launcher for @count ranks more, on
	 * @node[i] each (a spawn's, after the others): 0 or -ENOMEM. */
	int (*grow)(void *arg, const int *node, int count);
	void *grow_arg;
};

/* Returns 0 or -ENOMEM; wr_policy_destroy() either way. */
int wr_policy_create(const struct wr_policy_cfg *cfg, struct wr_policy **out);

/* Put its handlers (and @p as their argument) into the parts' configs. */
void wr_policy_wire(struct wr_policy *p, struct wr_output_cfg *out,
		    struct wr_reghost_cfg *reg, struct wr_nodes_cfg *nodes);

/* The output it speaks through and the registry it tells of the ranks'
 * ends, once open and before the nodes open (borrowed). */
void wr_policy_bind(struct wr_policy *p, struct wr_output *out,
		    struct wr_reghost *registry);

/* The job starts: --timeout counts from now. */
void wr_policy_begin(struct wr_policy *p);

/* A signal reached worldrun (through signals.h, on the loop). */
void wr_policy_signal(struct wr_policy *p, int sig);

/* worldrun is closing the parts: what they still call back with says
 * nothing more (no line, no hang report). */
void wr_policy_end(struct wr_policy *p);

/* How the job ended, for the report and worldrun's exit. */
struct wr_policy_outcome {
	int status;          /* the exit status; -1: nothing decided it */
	const char *cause;   /* what decided it ("rank-exited"); NULL: none */
	int failed_rank;     /* the rank whose failure decided it, or -1 */
	int file_rank;       /* the --output-dir file that failed, or -1 */
	int file_stream;     /* its stream (WR_OUT, WR_ERR) */
	int file_err;        /* and its errno */
	int self_signal;     /* the signal worldrun ends by; 0: none */
	bool interrupted;    /* SIGINT, SIGTERM or SIGHUP came, even while
			      * a failure stopped the job: no restart */
	bool abandon;        /* output still queued is dropped */
	json_t *hang;        /* the newest hang report (borrowed); NULL: none */
};

void wr_policy_outcome(const struct wr_policy *p, struct wr_policy_outcome *o);

/* How rank @rank ended, in words ("exited (status 3)", "was killed by
 * signal 9 (SIGKILL)", "failed (why)"), in @buf; "" if it has not. Takes
 * the policy as void *: the registry calls it too. */
void wr_policy_rank_fate(void *arg, int rank, char *buf, size_t room);

/* The rank table, map->nranks entries (borrowed until a spawn adds
 * ranks). */
const struct wr_rank *wr_policy_ranks(const struct wr_policy *p);

/* How many ranks have started; *@done once every agent has said how its
 * start went. */
int wr_policy_started(const struct wr_policy *p, bool *done);

/* Free its timers and the stdin feed. Accepts NULL. */
void wr_policy_destroy(struct wr_policy *p);

#endif
