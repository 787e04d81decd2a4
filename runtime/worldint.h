/* SPDX-License-Identifier: MIT */
/*
 * worldint: the world as libworld's modules see it (world.c opens it;
 * regcall.c, kv.c, group.c, call.c and future.c use it). Not installed.
 */
#ifndef WR_WORLDINT_H
#define WR_WORLDINT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "auth.h"
#include "handlers.h"
#include "names.h"
#include "progress.h"
#include "waits.h"
#include "workers.h"
#include "world.h"

struct wr_fab;
struct world_coll;

/* How many destroyed collective groups world_stop() still tells of. */
#define WR_COLL_ENDED_MAX 64

struct world {
	int rank;
	int size;
	char name[WR_NAME_MAX];
	char **names;         /* [size]: every rank's name, once fetched (names.c) */
	char jobid[16];
	int wait_ms;          /* WORLD_WAIT_TIMEOUT */
	struct wr_prog *prog; /* NULL in the singleton world */
	struct wr_embed *host; /* rank 0 of a world without worldrun: its registry */
	struct wr_embed_addr *addr; /* that world's address, while it has a secret file */
	char secret[128];     /* the job's secret (a world without worldrun:
			       * its own; the peer server borrows it) */
	bool alone;           /* a world without worldrun (world_open_with()) */
	char *own_dir;        /* there, the directory of this rank's socket */
	char advertise[16];   /* there, where other hosts reach this rank; "": loopback */
	/* world_stop() has begun: the registry takes this rank to enter no
	 * other barrier and join no group, so none may start any more. */
	_Atomic bool stopping;
	struct wr_handlers *handlers;
	struct wr_workers *workers;
	struct wr_waits waits; /* what this process's threads block in */
	pthread_mutex_t mu;   /* guards what follows */
	char **peer_ep;       /* [size]: where each rank answers, once known */
	struct world_group *groups; /* this process's groups */
	struct wr_table *cache;     /* "t\\ngroup\\nkey" -> owner rank + 1 */
	struct world_coll *colls;   /* this process's collective groups */
	struct wr_table *coll_names; /* member list -> groups of it made here */
	/* The last groups of several destroyed, as (id << 32 | operations
	 * started), a ring: world_stop() tells the others of them too. */
	uint64_t coll_ended[WR_COLL_ENDED_MAX];
	unsigned nended;
	/* The fabric endpoint (coll/endpoint.c), opened at the first group. */
	pthread_mutex_t fab_mu;
	/* What the job's /dev/shm names begin with (auth.h), set with fab. */
	char shm_prefix[WR_AUTH_SHM_PREFIX_LEN + 1];
	struct wr_fab *fab;
	int fab_rc;                 /* why it could not open: no retry */
};

/* @timeout_ms (world.h) in milliseconds: -1 forever, -EINVAL if bad. */
int wr_world_timeout(const struct world *w, int timeout_ms);

/*
 * For the layers that block elsewhere (collectives on a futex or a
 * completion queue), how a peer's death reaches them: see
 * wr_prog_deaths_word(). NULL, and never dead, in the singleton world.
 */
const uint32_t *wr_world_deaths_word(struct world *w);
bool wr_world_is_dead(struct world *w, int rank);

/* coll/cgroup.c, for world_stop(): destroy the collective groups still
 * held, then close the fabric endpoint (before the progress thread). */
void wr_coll_world_finish(struct world *w);
/* coll/cgroup.c, for world_stop(): {"<id>": operations started, ...} of
 * each collective group of several still held (wr_regproto_stop()). */
json_t *wr_coll_world_progress(struct world *w);

/* call.c, for future.c: an answer's {"value": X} becomes X. */
void wr_result_unwrap(struct wr_result *r);

/* Forget (@t, @group, @key) in the lookup cache; with @owner >= 0, also
 * everything @owner held. */
void wr_group_cache_drop(struct world *w, char t, const char *group,
			 const char *key, int owner);

/* The owner of service or value @key ('s' or 'v'): cache, else registry. */
int wr_group_owner(struct world_group *g, char t, const char *key);

/* One call to a peer: of whom, what, with what, for how long. */
struct wr_ask {
	const char *group; /* "" for calls outside any group (RRefs) */
	int rank;
	const char *kind;  /* "service", "remote", "direct", "value", "fetch", ... */
	const char *key;
	const json_t *args; /* borrowed; copied before it is sent */
	int64_t rref;       /* for "fetch" and "release"; else 0 */
	const void *blob;
	size_t len;
	/* Instead of blob and len: pieces, perhaps lent. Whoever sends or
	 * runs the call takes over its release (clearing it here). */
	struct wr_payload *pl;
	int timeout_ms;     /* as in world.h */
};

/* Send @a (its group: @g's) without waiting for it. */
int wr_group_submit(struct world_group *g, const struct wr_ask *a,
		    struct wr_call **out);

/* The same with @a's blob, for a call of this process to itself. */
int wr_group_run_ask(struct world *w, enum wr_hkind kind, const char *group,
		     const struct wr_ask *a, struct wr_result *out);

/* Run a handler of this process in the calling thread. */
int wr_group_run_here(struct world *w, enum wr_hkind kind, const char *group,
		      const char *key, const json_t *args, const void *blob,
		      size_t len, struct wr_result *out);

/* group.c: the rank of member @name in @g, or -1 if it is none. */
int wr_group_member_rank(const struct world_group *g, const char *name);

const char *wr_group_name(const struct world_group *g);
struct world *wr_group_world(const struct world_group *g);

/* For world_stop: the next group this process created, and freeing one
 * without leaving it (the goodbye that follows releases its entries). */
struct world_group *wr_group_next(const struct world_group *g);
void wr_group_free(struct world_group *g);

#endif
