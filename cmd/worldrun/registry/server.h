/* SPDX-License-Identifier: MIT */
/*
 * server: the registry's JSON front end on worldrun's event loop. It
 * listens on a Unix socket in the job's private directory and on a TCP
 * port on loopback (both ephemeral, both behind the job secret), reads
 * frames (frame.h), checks each request against its schema, and turns it
 * into calls of the core (core.h), arming a timer for every request that
 * waits. It applies no job policy: a rank whose connection drops without
 * a goodbye, or whose lease lapses, is reported through rank_lost. A
 * lease measures the rank's silence, not time during which worldrun did
 * not run (SIGSTOP, a frozen job): a tick tells the two apart.
 */
#ifndef WR_REG_SERVER_H
#define WR_REG_SERVER_H

#include <stdbool.h>

#include <event2/event.h>

#include <jansson.h>

#include "core.h"
#include "frame.h"

struct wr_regsrv;

struct wr_regsrv_cfg {
	struct event_base *base;
	struct wr_reg *reg;    /* borrowed */
	const char *jobid;
	const char *secret;    /* compared in constant time */
	const char *dir;       /* a 0700 directory for the socket; NULL: none */
	const char *tcp_addr;  /* where it listens on TCP; NULL: 127.0.0.1 */
	int tcp_port;          /* and on which port; 0: one the kernel picks */
	double hello_timeout;  /* seconds a new connection has to say hello */
	int tools_max;         /* connections of tools (worldctl) at once; 0: any */
	double lease_timeout;  /* seconds a rank may stay silent; 0: forever */
	double wait_default;   /* seconds for waits that give no timeout */
	struct wr_frame_limits limits;
	bool far;              /* also listen on every address, for other hosts */
	/* A rank's own connection closed without a goodbye, or its lease
	 * lapsed: @why says which. */
	void (*rank_lost)(void *arg, int rank, const char *why);
	/* A rank said it failed (world_fail) and ends with @status, for
	 * the reason @why (borrowed): the job's failure, and the rank dead
	 * to its peers. NULL: reported as rank_lost. */
	void (*rank_failed)(void *arg, int rank, int status, const char *why);
	/* A request on rank @rank's own connection failed because rank
	 * @dead is dead (WORLD_EPEERDEAD). NULL: nothing. */
	void (*peer_dead)(void *arg, int rank, int dead);
	/* accept() failed with @err (out of fds): said once, new
	 * connections wait while the ones open are served. NULL: quiet. */
	void (*full)(void *arg, int err);
	/* The answer to a "status" request, given a survey (borrowed):
	 * a new reference, or NULL to refuse it. NULL: refused. */
	json_t *(*status)(void *arg, json_t *survey);
	/* How rank @rank ended, in words ("exited with status 0"), into
	 * @buf; NULL: "died". */
	void (*fate)(void *arg, int rank, char *buf, size_t room);
	void *arg;
};

/*
 * A survey of what each rank waits for, as a new reference (NULL on
 * ENOMEM): {"ranks": [{rank, life: up|done|dead, libworld: connected|
 * none|gone, answered, waits: [what its libworld blocks in, waits.h],
 * registry: [{kind, what, for_ms, via: rank|tool, name?, keys?,
 * missing?}]}]}. Ranks are asked on their own connections and given
 * @timeout_ms to answer (a stopped rank does not).
 */
typedef void wr_regsrv_survey_fn(void *arg, json_t *survey_new);

/* Returns 0, -EBUSY (8 surveys are under way) or -ENOMEM; @fn is not
 * called then. */
int wr_regsrv_survey(struct wr_regsrv *s, int timeout_ms,
		     wr_regsrv_survey_fn *fn, void *arg);

/* Returns 0 or -errno (nothing listens then). */
int wr_regsrv_open(const struct wr_regsrv_cfg *cfg, struct wr_regsrv **out);

/* Closes every connection and listener. Accepts NULL. */
void wr_regsrv_close(struct wr_regsrv *s);

/*
 * While the job is stopped (Ctrl-Z), silence is no sign of death: no
 * lease lapses until wr_regsrv_pause_leases(@s, false) renews them all.
 */
void wr_regsrv_pause_leases(struct wr_regsrv *s, bool paused);

/* The Unix socket's path, borrowed from @s. */
const char *wr_regsrv_socket(const struct wr_regsrv *s);

/* "unix:PATH,tcp:127.0.0.1:PORT", borrowed from @s. */
const char *wr_regsrv_endpoints(const struct wr_regsrv *s);

/* The port that other hosts reach it on (cfg->far), or 0. */
int wr_regsrv_far_port(const struct wr_regsrv *s);

#endif
