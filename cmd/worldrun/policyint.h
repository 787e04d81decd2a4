/* SPDX-License-Identifier: MIT */
/*
 * policyint: what policy.c (the job: its status, its stop, signals, the
 * output and the nodes) and policy-ranks.c (each rank's events and the
 * lines that tell them) share: the policy's state and the few steps both
 * take. Nothing outside the two includes it.
 */
#ifndef WR_POLICYINT_H
#define WR_POLICYINT_H

#include "feed.h"
#include "policy.h"
#include "status.h"

struct wr_policy_spawn;

struct wr_policy {
	struct wr_policy_cfg cfg;
	struct wr_output *out;       /* bound once open */
	struct wr_reghost *registry; /* bound once open */
	struct wr_feed *feed;        /* our stdin, once the ranks take it */
	struct wr_status hang;       /* the hang report */
	struct wr_rank *ranks;
	int nranks;
	int nstarted;
	int nfinished;
	bool start_done;  /* the agents said their START is over */
	int status;       /* -1 until something decides it */
	const char *cause;
	int failed_rank;
	/* The first rank that failed while a rank the registry had lost was
	 * still on its way out (-1: none): not blamed, unless that rank
	 * ends well. Its status and cause, for that case. */
	int excused;
	int excused_status;
	const char *excused_cause;
	int stopper;          /* the rank in world_stop() that failed its wait
			       * (-1: none), whose end decides instead */
	bool stopper_expired; /* and it took too long */
	int file_rank;    /* the rank whose --output-dir file failed; -1: none */
	int file_stream;
	int file_err;
	int self_signal;  /* the signal that stopped worldrun, raised at exit */
	bool interrupted; /* and any of INT, TERM, HUP, then or later */
	bool stopping;
	bool killed;      /* SIGKILL was sent */
	int nstopped;
	bool abandon;     /* output still queued at the end is dropped */
	bool closing;     /* wr_policy_end() was called: say nothing more */
	bool alone_said;  /* a rank that ran alone was named (once a job) */
	bool spawn_said;  /* a refused spawn was named (once a job) */
	struct wr_policy_spawn *spawns; /* numbered, not yet started: the
					 * first under way (policy-spawn.c) */
	struct event *stop_ev;
	struct event *grace_ev;
	struct event *give_up_ev; /* remote ranks that outlive their SIGKILL */
	struct event *timeout_ev;
	struct event *drain_ev; /* how long a signalled worldrun waits for its reader */
	struct event *lost_ev;  /* kills ranks the registry lost */
	struct event *stopper_ev; /* ends the wait for a stopping rank's end */
};

/* How long an excused failure waits for the end of the stopping rank
 * that failed its wait, in seconds. */
#define WR_POLICY_STOPPER_S 2.0
/* The longest library name a failure line says (the loader's line). */
#define WR_NO_LIB_MAX 200
/* How many bytes of a rank's stderr are looked at for the loader's line
 * (it comes first, before the program runs at all). */
#define WR_LOADER_LOOK 4096

/* The first cause decides the exit status; later ones change nothing.
 * Whether this one did. */
bool wr_policy_decide(struct wr_policy *p, int status, const char *cause, int rank);

/* Decide, and stop the job at the end of the current callback. */
void wr_policy_fail(struct wr_policy *p, int status, const char *cause, int rank);

/* Decide, and stop the job now (a failure that no reaping pass told). */
void wr_policy_fail_now(struct wr_policy *p, int status, const char *cause, int rank);

/* Ask the agents to carry out @kind for @rank (-1: all) with @sig. */
void wr_policy_send(struct wr_policy *p, enum wr_cmd_kind kind, int rank, int sig);

/* End the loop once every started rank finished and the output is out. */
void wr_policy_check_done(struct wr_policy *p);

/* Rank @rank's failure line (DESIGN's words), once its output is out. */
void wr_policy_say_failure(struct wr_policy *p, int rank);

/* "SIGTERM" for 15. */
const char *wr_policy_signame(int sig);

/* "s" unless @n is 1. */
const char *wr_policy_plural(int n);

/* A rank asks for ranks more (WR_EV_SPAWN), and a host serves them
 * (WR_EV_JOINED): policy-spawn.c. */
void wr_policy_spawn(struct wr_policy *p, const struct wr_ev *ev);
void wr_policy_spawn_joined(struct wr_policy *p, const struct wr_ev *ev);

/* Forget the spawns not yet started. */
void wr_policy_spawns_free(struct wr_policy *p);

/* The handlers of the agents' events and of the registry's losses. */
void wr_policy_on_agent_event(void *arg, const struct wr_ev *ev);
void wr_policy_on_rank_lost(void *arg, int rank, const char *why);
/* An excused failure stands once no rank whose end could decide the job
 * instead still runs (policy-ranks.c). */
void wr_policy_settle_excused(struct wr_policy *p);
/* The registry failed a wait of @rank's because rank @dead died. */
void wr_policy_on_peer_dead(void *arg, int rank, int dead);
void wr_policy_on_rank_failed(void *arg, int rank, int status, const char *why);
void wr_policy_on_lost_check(evutil_socket_t fd, short what, void *arg);

#endif
