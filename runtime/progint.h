/* SPDX-License-Identifier: MIT */
/*
 * progint: the progress thread's state, shared by its three parts:
 * progress.c (the loop, its links to the registry and to peers),
 * reglink.c (the registry link's own traffic: lease, deaths, the
 * registry's questions) and progwait.c (what user threads do: submit a
 * call, wait for its answer, take it). Not installed.
 */
#ifndef WR_PROGINT_H
#define WR_PROGINT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <jansson.h>

#include "greet.h"
#include "payload.h"
#include "progress.h"
#include "ring.h"
#include "spin.h"

/* One request from a user thread, and later its answer. */
struct wr_call {
	struct wr_call *next;
	int dest;        /* -1: the registry */
	char *endpoints; /* how to reach dest, until sent */
	json_t *req;     /* until sent; while pulled, until answered */
	void *blob;      /* a copy, until sent; while pulled, until answered */
	size_t len;      /* the blob's, whether copied or lent */
	/* Pieces lent by the caller (lent.iov our copy of its array), until
	 * the blob is gathered or, once pulled, until the call is freed. */
	struct wr_payload lent;
	bool pulled;     /* its callee reads the blob from our memory */
	json_int_t id;
	bool done;
	bool abandoned;  /* its caller gave up: free it on the answer */
	struct wr_result res;
};

/* A connection the loop holds: to the registry, or to one peer. */
struct link {
	struct wr_prog *p;
	int rank; /* -1: the registry */
	struct wr_link *conn;
	struct wr_call *pending; /* sent, not answered; guarded by p->mu */
	/* A peer's link until its server proved who it is (auth.h): calls
	 * wait in held, in order, and go once our proof went. */
	bool proving;
	json_int_t hello_id;
	/* Calls on it offer their large blobs to be pulled (a Unix socket:
	 * the server is on this host); false after the server refused one. */
	bool pull;
	struct wr_greet_client greet; /* our half of its handshake (greet.h) */
	char who[WR_GREET_WHO_MAX];   /* the server meant */
	struct wr_call *held;
	struct wr_call **held_tail;
};

struct wr_prog {
	pthread_t thread;
	bool started;
	struct event_base *base;
	struct link registry;
	struct link **peers; /* [size], opened on first use */
	int size;
	int rank;
	char *secret;
	char *gone;   /* cfg->gone */
	struct wr_frame_limits limits;
	bool pull; /* offer pulls at all (WORLD_PULL) */
	struct wr_serve *serve;
	struct wr_waits *waits;
	int wake_fd;
	struct event *wake;
	struct event *answered_ev; /* wakes the callers once mu is free */
	struct event *lease;
	/* Guarded by mu, which the links' callbacks hold too. */
	json_int_t next_id;
	pthread_mutex_t mu;
	/*
	 * A futex word, bumped (with mu held) whenever a call is answered;
	 * callers sleep on it without mu. A condition variable would do, but
	 * glibc marks the mutex contended when a condvar wait takes it back,
	 * so every unlock after a wait would cost a system call.
	 */
	uint32_t answers;
	uint32_t sleepers; /* callers asleep on answers */
	struct wr_spin spin; /* how callers wait before they sleep */
	/* world_set_interrupt(): asked between slices of a wait; NULL: not. */
	int (*interrupt)(void *arg);
	void *interrupt_arg;
	struct wr_call *queue; /* not sent yet */
	bool broken;           /* the registry connection is gone */
	bool stopping;
	/* Losses, from a standing deaths.wait (see wr_prog_watch_deaths()). */
	json_int_t watch_id;   /* the watch's request, 0: none out */
	bool *dead;            /* [size] */
	bool *left;            /* [size]: said goodbye */
	json_t **stopped;      /* [size]: a stopping rank's "colls", or NULL */
	json_int_t losses;     /* the registry's losses heard, stops included */
	uint32_t deaths;       /* a futex word: the ranks lost so far */
	struct ring watchers;  /* struct wr_prog_watch: told of each loss */
};

/* Free @c and what it holds. Accepts NULL. */
void wr_call_free(struct wr_call *c);

/* Called with mu held: send @c on its link (opening it), or fail it. */
void wr_prog_route(struct wr_prog *p, struct wr_call *c);

/* Make the loop look at its queue (and at stopping). */
void wr_prog_wake(struct wr_prog *p);

/*
 * reglink.c: connect to the registry as the rank itself (its hello and
 * proof), before the loop runs: 0 and the registry link's *@fd, or what
 * wr_regclient_open() fails with.
 */
int wr_prog_connect(const struct wr_prog_cfg *cfg, int *fd);

/* reglink.c: ask the registry for the next losses. Called with mu held. */
void wr_prog_watch_deaths(struct wr_prog *p);

/*
 * reglink.c: take @msg, a frame on the registry link, if it is the link's
 * own business: a question from the registry (answered) or the deaths
 * watch's answer. False for anything else (an answer to a call). Called
 * with mu held.
 */
bool wr_prog_registry_frame(struct wr_prog *p, json_t *msg);

/* reglink.c: renew the lease every @interval seconds on the loop (0: never). */
int wr_prog_lease_start(struct wr_prog *p, double interval);

/* reglink.c: tell the registry this rank is leaving, not lost. */
void wr_prog_goodbye(struct wr_prog *p);

#endif
