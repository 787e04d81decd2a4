/* SPDX-License-Identifier: MIT */
/*
 * waits: what this process's threads are blocked in, while they are. A
 * blocking call of libworld links a record that lives on its own stack
 * into one list for as long as it blocks; the progress thread describes
 * the list when the registry asks (a hang report), without waking
 * anyone. It does not know how to wait. Adding a kind of wait is one enum
 * value and one row of the table in waits.c.
 */
#ifndef WR_WAITS_H
#define WR_WAITS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "ring.h"

enum wr_wait_kind {
	WR_WAIT_BARRIER,       /* world_barrier(NAME) */
	WR_WAIT_KV_GET,        /* world_kv_get(KEY) with a wait */
	WR_WAIT_KV_WAIT,       /* world_kv_wait(KEYS) */
	WR_WAIT_GROUP_CREATE,  /* world_group_create(GROUP) */
	WR_WAIT_GROUP_BARRIER, /* world_group_barrier(GROUP) */
	WR_WAIT_PAIRED,        /* world_wait_paired(GROUP, KEY) */
	WR_WAIT_CALL,          /* a call to PEER: DETAIL NAME of GROUP */
	WR_WAIT_FUTURE,        /* world_future_wait*() on a call to PEER */
	WR_WAIT_STOP,          /* world_stop() */
	WR_WAIT_HANDLER,       /* not a wait: a handler NAME runs for PEER */
	WR_WAIT_COLL,          /* collective NAME (seq SEQ) of GROUP, or its
				  send/recv, waiting for PEER */
};

/*
 * One blocked call. The caller fills what it knows (the strings are
 * borrowed for as long as it waits; NULL, -1 or 0 where they do not
 * apply); enter() sets the rest.
 */
struct wr_wait {
	enum wr_wait_kind kind;
	const char *group;
	const char *name;        /* barrier name, key, service or handler */
	const char *detail;      /* CALL: "service", "direct", "value", ... */
	const char *const *keys; /* KV_WAIT: the keys */
	size_t nkeys;
	int peer;                /* the rank it waits on; -1: none or the registry
				    (COLL: updated while it waits, atomically) */
	uint64_t seq;            /* the operation's sequence number; 0: none */
	/* set by wr_waits_enter() */
	int64_t since_ms;
	pid_t tid;
	struct ring node; /* in the list, oldest first */
};

struct wr_waits {
	pthread_mutex_t mu;
	struct ring all;
};

void wr_waits_init(struct wr_waits *ws);
/* Every record has left by now (the threads that waited returned). */
void wr_waits_finish(struct wr_waits *ws);

/* @w is blocked from now until wr_waits_leave(). Accepts a NULL @ws. */
void wr_waits_enter(struct wr_waits *ws, struct wr_wait *w);
void wr_waits_leave(struct wr_waits *ws, struct wr_wait *w);

/*
 * What blocks now, oldest first, as a new JSON array of
 * {kind, what, for_ms, tid, group?, name?, keys?, peer?, seq?}: "what"
 * says it in words ("barrier \"step\""). NULL on ENOMEM.
 */
json_t *wr_waits_json(struct wr_waits *ws);

#endif
