/* SPDX-License-Identifier: MIT */
/*
 * restart: --max-restarts, torchrun's restarts of the whole job. What
 * outlives an attempt lives here: the job's id, the attempts so far (for
 * --report), and the decision to start another, with its backoff. Each
 * attempt is a new worldrun process (the same program and arguments,
 * exec'd in place: nothing of one attempt's libraries, ranks, registry
 * or files is left to the next), which gets this record through an
 * inherited memfd named in WORLD_RESTART_FD. The other hosts' agents are
 * the exception: their remote shells and channels are kept, the agents
 * started anew on them (remote.h), so that a restart costs no ssh.
 */
#ifndef WR_RESTART_H
#define WR_RESTART_H

#include <jansson.h>
#include <stdbool.h>

#include "remote.h"

/* The backoff before a restart is at most this, in seconds. */
#define WR_RESTART_BACKOFF_MAX 30.0

struct wr_restart {
	int count;         /* restarts so far: the running attempt's number */
	int max;           /* --max-restarts; 0 until the first attempt parsed it */
	double interval;   /* the first backoff (--monitor-interval), seconds */
	char jobid[13];    /* the job's id, every attempt's; "" before the first */
	double started;    /* when the running attempt started (monotonic) */
	json_t *attempts;  /* each ended attempt: {restart, status, cause,
			    * failed_rank, start, end, exception} */
	struct wr_restart_agent *agents; /* kept for the next attempt */
	int nagents;
};

/* A node's agent kept from one attempt for the next. */
struct wr_restart_agent {
	int node;
	char *host;
	struct wr_remote_kept kept;
};

/* How an attempt ended, as the run knows it. */
struct wr_restart_end {
	int status;
	const char *cause;       /* the report's cause */
	int failed_rank;         /* -1: none */
	const char *exception;   /* the failed rank's error file line, or NULL */
	double start_epoch;
	double end_epoch;
};

/*
 * A record for the first attempt, or the one an earlier attempt of this
 * job passed on (WORLD_RESTART_FD, which it then unsets and closes).
 * Returns 0, or -EINVAL after one line on stderr for a WORLD_RESTART_FD
 * that is not one (the caller exits 125).
 */
int wr_restart_init(struct wr_restart *r);

void wr_restart_finish(struct wr_restart *r);

/*
 * Record the attempt that ended as @end says. True when another is to
 * start: a rank failed (not a timeout, a signal, a usage or setup error)
 * and fewer than r->max restarts were made; then r->count is the next
 * attempt's.
 */
bool wr_restart_record(struct wr_restart *r, const struct wr_restart_end *end);

/*
 * Keep @k, node @node's (on @host) for the next attempt: @k's fds are
 * the record's from now on, even on failure. 0 or -ENOMEM.
 */
int wr_restart_attach_agent(struct wr_restart *r, int node, const char *host,
		    const struct wr_remote_kept *k);

/*
 * The agent the last attempt kept for node @node on @host, into @k (the
 * caller's from now on): true, or false when there is none.
 */
bool wr_restart_take(struct wr_restart *r, int node, const char *host,
		     struct wr_remote_kept *k);

/*
 * Wait before the next attempt: r->interval doubled for each restart
 * (at most WR_RESTART_BACKOFF_MAX), less the time the last attempt ran,
 * so that a rank that fails at once every time does not spin. With the
 * signals worldrun forwards held; SIGINT, SIGTERM or SIGHUP ends the wait
 * and is returned (worldrun then dies of it); 0 otherwise.
 */
int wr_restart_wait(const struct wr_restart *r);

/*
 * Start the next attempt: exec this worldrun with @argv, the record
 * passed on. Returns only on failure: the exit status to use, after one
 * line on stderr.
 */
int wr_restart_exec(struct wr_restart *r, char **argv);

#endif
