/* SPDX-License-Identifier: MIT */
/*
 * reghost: the registry as worldrun hosts it for one job, and the
 * launcher's one door to it: the core, the JSON server, the job's private
 * directory and secret, and the settings read from worldrun's
 * environment (WORLD_LEASE_INTERVAL, WORLD_LEASE_TIMEOUT,
 * WORLD_WAIT_TIMEOUT in seconds, the message limits, WORLD_CONN_MAX,
 * WORLD_KV_MAX, WORLD_SPIN_US, WORLD_PULL). It hands the ranks what they
 * need to reach it through the environment, never through argv. The rest
 * of the launcher reaches the registry through the calls below only.
 */
#ifndef WR_REGHOST_H
#define WR_REGHOST_H

#include <stdbool.h>

#include <event2/event.h>

#include "core.h"
#include "env.h"
#include "guardian.h"
#include "jobdir.h"
#include "server.h"

struct wr_reghost {
	struct wr_reg *reg;
	struct wr_regsrv *srv;
	struct wr_jobdir dir; /* the job's private directory */
	char secret[33];
	double lease_interval;
	double lease_timeout;
	double wait_timeout;
	struct wr_frame_limits limits; /* WORLD_MSG_MAX, WORLD_BLOB_MAX */
	int spin_us;                   /* WORLD_SPIN_US, for the ranks */
	bool pull;                     /* WORLD_PULL, for the ranks */
	long conn_max;                 /* WORLD_CONN_MAX: tool connections */
	size_t kv_max;                 /* WORLD_KV_MAX: the key/value space */
};

/* Tool connections (worldctl) the registry holds at once, by default. */
#define WR_REG_CONN_MAX 1024
/* Seconds a new connection has to prove it holds the job secret. */
#define WR_REG_HELLO_TIMEOUT 5.0

struct wr_reghost_cfg {
	struct event_base *base;
	const char *jobid;
	int size;
	char *const *environ; /* worldrun's own */
	void (*rank_lost)(void *arg, int rank, const char *why);
	void (*rank_failed)(void *arg, int rank, int status, const char *why);
	void (*peer_dead)(void *arg, int rank, int dead); /* the same */
	void (*full)(void *arg, int err); /* see struct wr_regsrv_cfg */
	json_t *(*status)(void *arg, json_t *survey); /* the same */
	void (*fate)(void *arg, int rank, char *buf, size_t room); /* the same */
	bool far;             /* other hosts' ranks reach it too (over TCP) */
	void *arg;
};

/* Open it. Returns 0, or 125 after printing why. */
int wr_reghost_open(struct wr_reghost *h, const struct wr_reghost_cfg *cfg);

/*
 * Close it and remove its directory with all it holds. Accepts a
 * half-opened host.
 */
void wr_reghost_close(struct wr_reghost *h);

/* Have @g remove the job's directory should worldrun die. */
void wr_reghost_guard(const struct wr_reghost *h, struct wr_guardian *g);

/* Set WORLD_REGISTRY, WORLD_SECRET, WORLD_LEASE_INTERVAL, WORLD_WAIT_TIMEOUT. */
int wr_reghost_export(const struct wr_reghost *h, struct wr_env *env);

/*
 * What the launcher tells the registry of a rank's end (core.h): @rank
 * died (reaped after a failure, lost, or its host lost), or it exited
 * well. Accept NULL and a host that is not open: nothing to tell.
 */
void wr_reghost_rank_dead(struct wr_reghost *h, int rank);

/* The job has @nranks ranks now, a spawn's included (wr_reg_grow). 0,
 * -ENOMEM; NULL or a host that is not open: 0, nothing to tell. */
int wr_reghost_grow(struct wr_reghost *h, int nranks);

/* The name rank @rank gave itself (libworld's world_options), into
 * @buf; "" if none, or none fit to print. */
void wr_reghost_rank_name(const struct wr_reghost *h, int rank, char *buf, size_t room);
void wr_reghost_rank_done(struct wr_reghost *h, int rank);

/* Whether @rank said goodbye to the registry before it ended. */
bool wr_reghost_rank_left(const struct wr_reghost *h, int rank);
/* Whether @rank is in world_stop() (it enters no barrier any more). */
bool wr_reghost_rank_stopping(const struct wr_reghost *h, int rank);

/* While the job is stopped (Ctrl-Z), no lease lapses (server.h).
 * Accepts NULL, as the survey does. */
void wr_reghost_pause_leases(struct wr_reghost *h, bool paused);

/* A survey of what each rank waits for (server.h): 0, or -ENOTCONN (NULL
 * or not open), -EBUSY or -ENOMEM, and @fn is not called then. */
int wr_reghost_survey(struct wr_reghost *h, int timeout_ms,
		      wr_regsrv_survey_fn *fn, void *arg);

/* Where ranks reach it, "unix:PATH,tcp:127.0.0.1:PORT", and the port
 * other hosts reach it on (0: none), once open. */
const char *wr_reghost_endpoints(const struct wr_reghost *h);
int wr_reghost_far_port(const struct wr_reghost *h);

#endif
