/* SPDX-License-Identifier: MIT */
/*
 * ctl: worldctl's one context. It holds the job as the environment
 * describes it and the registry connection, and it turns the outcome of
 * a request into one line on stderr and an exit status. From outside a
 * job it finds one by its id in the runtime directory (rundir.h). It
 * knows no command; the commands (kv.c, ranks.c, jobs.c, status.c) know
 * no environment variable.
 */
#ifndef WR_CTL_H
#define WR_CTL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "regclient.h"
#include "rundir.h"

/* worldctl's exit statuses: documented in --help and worldctl(1). */
enum wr_ctl_status {
	WR_CTL_OK = 0,
	WR_CTL_MISSING = 1,   /* no such key (a get or wait that did not wait, a del) */
	WR_CTL_USAGE = 2,
	WR_CTL_PEERDEAD = 3,
	WR_CTL_TIMEOUT = 124,
	WR_CTL_FAILED = 125,  /* not in a job, registry unreachable or refusing */
};

/* A request that does not wait in the registry. */
#define WR_CTL_NOWAIT 0

struct wr_ctl {
	const char *job;           /* --job JOBID: observe that job from outside */
	const char *endpoints;     /* WORLD_REGISTRY */
	int rank;                  /* WORLD_RANK; -1 until identified */
	int size;                  /* WORLD_SIZE */
	double wait_default;       /* WORLD_WAIT_TIMEOUT, seconds */
	struct wr_regclient *client;
	double waited;             /* seconds the last request could wait */
	char what[200];            /* what the command does, for messages */
};

/* Start with nothing read and nothing connected. */
void wr_ctl_init(struct wr_ctl *ctl);

/*
 * Read this rank and the job from the environment, once. Returns 0, or
 * -EINVAL after saying which variable is missing or wrong (the caller
 * exits with 125).
 */
int wr_ctl_identify(struct wr_ctl *ctl);

/* Close the connection, if any. Accepts NULL. */
void wr_ctl_finish(struct wr_ctl *ctl);

/*
 * Identify, then connect as a tool acting for this rank; with --job
 * (@ctl->job), connect to that job as an observer instead. Returns 0, or
 * a negative code after saying why (the caller exits with 125).
 */
int wr_ctl_connect(struct wr_ctl *ctl);

/*
 * Connect as an observer (acting for no rank: the registry lets it only
 * read) to the job of this user that @jobid, a unique start of its id,
 * names in the runtime directory (rundir.h), with the secret its entry
 * holds. Returns 0, or a negative code after one line saying why: no such
 * job, several, an unusable directory, a registry that does not answer
 * (the caller exits with 125).
 */
int wr_ctl_connect_job(struct wr_ctl *ctl, const char *jobid);

/*
 * Connect as an observer to the job of entry @e within @timeout_ms,
 * printing nothing: 0, or a negative code with the registry's reason (if
 * it gave one) in @why.
 */
int wr_ctl_open_entry(struct wr_ctl *ctl, const struct wr_rundir_entry *e,
		      int timeout_ms, char *why, size_t why_len);

/* Name what the command is doing, for the messages that follow. */
void wr_ctl_doing(struct wr_ctl *ctl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "worldctl: WHAT: " and the formatted reason, as one line. */
void wr_ctl_say(const struct wr_ctl *ctl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Send @req_new (stolen, even on failure; NULL counts as -ENOMEM) with
 * an optional blob, as wr_regclient_call() does. @wait_ms is how long the
 * registry may make it wait (WORLD_TIMEOUT_DEFAULT or >= 0): worldctl
 * gives the registry that long and a grace period to answer. Returns 0
 * or a negative code, -ETIME if the registry did not answer in time
 * (-ETIMEDOUT is the registry's own answer: the wait timed out). Prints
 * nothing.
 */
int wr_ctl_call(struct wr_ctl *ctl, json_t *req_new, const void *blob,
		size_t len, int64_t wait_ms, json_t **result, void **rblob,
		size_t *rlen);

/*
 * Say why @rc failed (nothing for a missing key, which is an answer and
 * not an error) and return the exit status it stands for.
 */
int wr_ctl_fail(const struct wr_ctl *ctl, int rc);

#endif
