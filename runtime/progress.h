/* SPDX-License-Identifier: MIT */
/*
 * progress: the one thread of each process that talks to the registry
 * and to peers. It owns an event_base, the rank's own registry connection
 * (role "rank", with its lease), one connection per peer this process
 * calls (opened on first use), and the server peers call (serve.c). User
 * threads submit requests and wait for their answers with timeouts; any
 * thread may. It does not know what their requests mean: the only ones
 * it makes itself are the registry link's upkeep (reglink.c) and a peer
 * link's hello and proof.
 */
#ifndef WR_PROGRESS_H
#define WR_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "frame.h"
#include "payload.h"
#include "ring.h"

struct wr_prog;
struct wr_call;
struct wr_handlers;
struct wr_workers;
struct wr_waits;

struct wr_prog_cfg {
	const char *endpoints; /* WORLD_REGISTRY */
	const char *secret;    /* WORLD_SECRET */
	int rank;
	int size;
	double lease_interval; /* seconds; 0: no leases */
	int connect_timeout_ms;
	const char *dir;       /* where to put our socket for peers, or NULL */
	const char *advertise; /* the IPv4 address peers of other hosts reach
				* us at (WORLD_ADVERTISE); NULL: loopback */
	struct wr_handlers *handlers; /* what we answer peers with */
	struct wr_workers *workers;   /* who runs the handlers */
	struct wr_waits *waits;       /* what we tell the registry we block in */
	struct wr_frame_limits limits;
	int spin_us; /* how long a caller looks for its answer before it
			sleeps (WORLD_SPIN_US); 0: never */
	bool no_pull; /* WORLD_PULL=0: large blobs go through sockets, both
			 ways (payload.h) */
	const char *gone; /* the message of WORLD_EREGISTRY once the registry
			   * is gone (copied); NULL: none */
};

/*
 * Connect (hello as the rank itself), open the server for peers and start
 * the thread. Returns 0, or what wr_regclient_open() would:
 * WORLD_EREGISTRY, WORLD_EAUTH, -ETIMEDOUT, ...
 */
int wr_prog_open(const struct wr_prog_cfg *cfg, struct wr_prog **out);

/*
 * Stop the thread and close every connection. With @goodbye, say goodbye
 * first, so that the registry does not count the rank as lost. Close the
 * workers first: they write their answers on the loop's connections.
 * Accepts NULL.
 */
void wr_prog_close(struct wr_prog *p, bool goodbye);

/* From now on peers' calls are refused: the world is stopping. */
void wr_prog_refuse(struct wr_prog *p);

/*
 * Losses, for the layers that block where no registry answer reaches them
 * (a futex, a completion queue): a rank is lost when it dies or says
 * goodbye (world_stop), since a collective needs the peer either way. The
 * thread keeps one standing deaths.wait at the registry. The word counts
 * the ranks lost and only grows; each loss bumps it and FUTEX_WAKEs every
 * waiter on it, so a thread that sleeps with FUTEX_WAIT on the value it
 * read wakes at a loss.
 */
const uint32_t *wr_prog_deaths_word(struct wr_prog *p);
bool wr_prog_is_dead(struct wr_prog *p, int rank);
/* Dead, or said goodbye. */
bool wr_prog_is_gone(struct wr_prog *p, int rank);
/* How many operations @rank started in collective group @id before it
 * began to stop, or -1 (not stopping, or it did not say). */
long long wr_prog_stopped_at(struct wr_prog *p, int rank, uint32_t id);

/*
 * A watcher: @fn(@arg, rank, left) on the progress thread, with its lock
 * held, for each rank lost from now on (@left: it said goodbye; else it
 * died), and @stop(@arg, rank, colls), if set, for each rank that begins
 * to stop from now on, with what it said of its collective groups
 * (wr_regproto_stop(); NULL if nothing: a reference of the caller's).
 * Keep them short and call nothing of libworld's but what wakes a
 * thread. The struct is the caller's, on the process's list from add to
 * remove; any number of them.
 */
typedef void wr_prog_death_fn(void *arg, int rank, bool left);
typedef void wr_prog_stop_fn(void *arg, int rank, json_t *colls);
struct wr_prog_watch {
	struct ring node; /* private */
	wr_prog_death_fn *fn;
	wr_prog_stop_fn *stop;
	void *arg;
};
void wr_prog_watch_add(struct wr_prog *p, struct wr_prog_watch *w);
/* Accepts a watcher never added, or removed already. */
void wr_prog_watch_remove(struct wr_prog *p, struct wr_prog_watch *w);

/* Where peers reach this process: "unix:PATH,tcp:127.0.0.1:PORT". */
const char *wr_prog_endpoints(const struct wr_prog *p);

/* How a call ended. */
struct wr_result {
	int rc;            /* 0, or the answer's error code */
	json_t *result;    /* new reference, or NULL */
	void *blob;        /* malloc'd, or NULL */
	size_t len;
	int dead_rank;     /* for WORLD_EPEERDEAD, else -1 */
	int remote_code;   /* for WORLD_EREMOTE, else 0 */
	char message[256];
};

void wr_result_finish(struct wr_result *r);

/*
 * Send @req_new (stolen: {"op": ..., ...}) with the blob of @pl (NULL:
 * none) to the registry (@dest -1) or to rank @dest, reached at
 * @endpoints (copied; used when no connection to it is open). The call
 * copies @pl's pieces, or keeps lent ones, and takes over @pl's release
 * in any case, even on failure (clearing it in *@pl): a large blob to a peer on this host is pulled by it
 * from our memory, and stays until the call is answered or its link
 * closed. Returns the call, or NULL on ENOMEM.
 */
struct wr_call *wr_prog_submit(struct wr_prog *p, int dest,
			       const char *endpoints, json_t *req_new,
			       struct wr_payload *pl);

/* Wait until @c is answered: 0, or -ETIMEDOUT after @wait_ms (< 0: never). */
int wr_prog_wait(struct wr_prog *p, struct wr_call *c, int wait_ms);

/* How often a wait asks world_set_interrupt()'s check, at most. */
#define WR_PROG_INTERRUPT_MS 100

/* Set (or clear, with NULL) what waits ask between slices (world.h). */
void wr_prog_set_interrupt(struct wr_prog *p, int (*check)(void *arg), void *arg);

/* For waits outside this module (the fabric's), called without the
 * lock: -EINTR if the interrupt check says stop, else 0. It asks the
 * check at most every WR_PROG_INTERRUPT_MS in each thread, so that a
 * wait may call this at every turn. */
int wr_prog_interrupted(struct wr_prog *p);

/* Wait until one of @n calls is answered: 0 and *index, or -ETIMEDOUT. */
int wr_prog_wait_any(struct wr_prog *p, struct wr_call *const *cs, size_t n,
		     int wait_ms, size_t *index);

bool wr_prog_answered(struct wr_prog *p, struct wr_call *c);

/* Take the answer of an answered @c, freeing @c; returns out->rc. */
int wr_prog_take(struct wr_prog *p, struct wr_call *c, struct wr_result *out);

/* Give @c up: it is freed now, or when its answer comes. Accepts NULL. */
void wr_prog_drop(struct wr_prog *p, struct wr_call *c);

/*
 * Submit, wait at most @wait_ms and take: the blocking form. On
 * -ETIMEDOUT the call is dropped.
 */
int wr_prog_call(struct wr_prog *p, int dest, const char *endpoints,
		 json_t *req_new, const void *blob, size_t len, int wait_ms,
		 struct wr_result *out);

#endif
