/* SPDX-License-Identifier: MIT */
/*
 * pmixint: what the PMIx server's parts share: pmixsrv.c (the server,
 * its clients, the hand-over from PMIx's thread to the agent's loop),
 * pmixfence.c (fences through the registry) and pmixname.c (publish,
 * lookup and unpublish on the registry). Nothing else includes it.
 */
#ifndef WR_PMIXINT_H
#define WR_PMIXINT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <pmix_server.h>

#include "pmixsrv.h"

/* What PMIx asked on its thread, for the loop to carry out. */
enum ask_kind {
	ASK_CONNECTED, ASK_FINALIZED, ASK_ABORT, ASK_FENCE, ASK_CONNECT, ASK_DISCONNECT,
	ASK_PUBLISH, ASK_LOOKUP, ASK_UNPUBLISH, ASK_DMX_PUT, ASK_DMX_GET, ASK_SPAWN,
};

struct ask {
	struct ask *next;
	enum ask_kind kind;
	int rank;                 /* the client's index in the job (its
				   * world rank, or a spawned rank's) */
	int status;               /* abort's */
	char *msg;                /* abort's, or NULL */
	int *members;             /* a fence's ranks, rising; NULL: all */
	size_t nmembers;
	bool collect;             /* a fence collects the data */
	long long timeout_ms;     /* a fence's, a lookup's or a direct modex's;
				   * -1: the job's */
	char *data;               /* a fence's contribution of this host, or
				   * a rank's committed data */
	size_t ndata;
	char **keys;              /* the name service's, [nkeys] */
	char **values;            /* publish's, [nkeys]: a type byte, the bytes */
	size_t *lens;             /* of values */
	size_t nkeys;
	int wait;                 /* lookup: wait for the names (PMIX_WAIT) */
	pmix_op_cbfunc_t op_cb;   /* connected, finalized, abort, publish,
				   * unpublish */
	pmix_modex_cbfunc_t mdx_cb; /* fence, direct modex */
	pmix_lookup_cbfunc_t lookup_cb;
	struct wr_pmixsrv_spawn *spawn; /* spawn's apps and answer */
	void *cbdata;
};

/* A namespace served here: the job's (the first), or one a spawn made,
 * whose ranks are the job's indices base to base + size - 1. */
struct ns {
	pmix_nspace_t name;
	int base;
	int size;
};

struct client {
	int rank;
	bool spoke;
	bool finalized;
	bool aborted;
	bool left;
	bool forgotten;           /* deregistered before a stop signal */
	bool lost;                /* ended unfinalized, not forgotten */
	char **env;               /* from PMIx_server_setup_fork */
};

/* The fences of one set of ranks so far: they are numbered in order. */
struct fence_seq {
	struct fence_seq *next;
	uint64_t sig;
	unsigned long next_seq;
};

struct wr_pmixsrv {
	struct wr_pmixsrv_cfg cfg;
	pmix_nspace_t nspace;
	struct client *clients;   /* [nclients], rising by rank: the job's
				   * cfg.nlocal, then those spawns added */
	int nclients;
	struct ns *ns;            /* [nns], rising by base; PMIx's thread
				   * reads it under lock */
	int nns;
	char **names;             /* [cfg.nnodes]: the nodes' names, as every
				   * host has them, or NULL: none given */
	struct wr_pmireg *reg;
	struct fence_seq *seqs;
	/* From PMIx's thread to the loop's. */
	pthread_mutex_t lock;
	struct ask *head, **tail;
	int wake[2];
	struct event *wake_ev;
	bool inited;
	bool registered;
	bool stuck;               /* PMIx did not answer within STOP_S */
	int lost;                 /* clients with .lost */
	char vader[PATH_MAX + 64]; /* OMPI_MCA_btl_vader_backing_directory= */
	bool oversub;             /* more ranks here than CPUs */
};

/* The server PMIx calls into (one per process), or NULL. */
struct wr_pmixsrv *wr_pmixsrv_current(void);

/* Whether @proc is of a namespace served here. */
bool wr_pmixsrv_ours(const pmix_proc_t *proc);

/* The job's index of @proc (any thread), or -1: not of a namespace
 * served here, or beyond its size. PMIX_RANK_WILDCARD gives -1, and its
 * namespace's first index and size in @base and @size (both -1 where
 * the namespace is not served here). */
int wr_pmixsrv_index(const pmix_proc_t *proc, int *base, int *size);

/* The client whose index is @rank, or NULL. */
struct client *wr_pmixsrv_client(struct wr_pmixsrv *s, int rank);

/* On the loop: the namespace @rank (the job's index) is of, or NULL. */
const struct ns *wr_pmixsrv_ns_of(const struct wr_pmixsrv *s, int rank);

/* Register namespace @ns with @info (@n entries, which PMIx frees) and
 * the clients @from to @to - 1 in it, then make their environments. 0,
 * or a negative code with why in @why. */
int wr_pmixsrv_register(struct wr_pmixsrv *s, const struct ns *ns, pmix_info_t *info,
			size_t n, int from, int to, char *why, size_t size);

/* PMIx's spawn (on its thread); spawn's ask carried out on the loop,
 * where the host's agent is asked (cfg.spawn). */
pmix_status_t wr_pmixspawn_request(const pmix_proc_t *proc, const pmix_info_t job_info[],
				   size_t ninfo, const pmix_app_t apps[], size_t napps,
				   pmix_spawn_cbfunc_t cbfunc, void *cbdata);
void wr_pmixspawn_start(struct wr_pmixsrv *s, struct ask *a);

/* On PMIx's thread: a new ask of @kind from @proc (NULL: none), or
 * NULL; hand it to the loop (which owns it from then on, even on
 * failure). */
struct ask *wr_pmixsrv_ask_new(enum ask_kind kind, const pmix_proc_t *proc);
pmix_status_t wr_pmixsrv_hand_over(struct ask *a);
void wr_pmixsrv_ask_free(struct ask *a);

/* The registry, connected at the first need. 0 or a negative code. */
int wr_pmixsrv_registry(struct wr_pmixsrv *s);

/* PMIx's fence_nb (on its thread), and the fence on the loop, which
 * answers and frees @a. */
pmix_status_t wr_pmixfence_nb(const pmix_proc_t procs[], size_t nprocs,
			      const pmix_info_t info[], size_t ninfo, char *data, size_t ndata,
			      pmix_modex_cbfunc_t cbfunc, void *cbdata);
void wr_pmixfence_start(struct wr_pmixsrv *s, struct ask *a);

/* PMIx's connect and disconnect (on its thread): barriers of ranks of
 * the job, which wr_pmixfence_start() carries out. */
pmix_status_t wr_pmixfence_connect(const pmix_proc_t procs[], size_t nprocs,
				   const pmix_info_t info[], size_t ninfo,
				   pmix_op_cbfunc_t cbfunc, void *cbdata);
pmix_status_t wr_pmixfence_disconnect(const pmix_proc_t procs[], size_t nprocs,
				      const pmix_info_t info[], size_t ninfo,
				      pmix_op_cbfunc_t cbfunc, void *cbdata);

/* PMIx's publish, lookup and unpublish (on its thread), and the name
 * service on the loop, which answers and frees @a. */
pmix_status_t wr_pmixname_publish(const pmix_proc_t *proc, const pmix_info_t info[],
				  size_t ninfo, pmix_op_cbfunc_t cbfunc, void *cbdata);
pmix_status_t wr_pmixname_lookup(const pmix_proc_t *proc, char **keys,
				 const pmix_info_t info[], size_t ninfo,
				 pmix_lookup_cbfunc_t cbfunc, void *cbdata);
pmix_status_t wr_pmixname_unpublish(const pmix_proc_t *proc, char **keys,
				    const pmix_info_t info[], size_t ninfo,
				    pmix_op_cbfunc_t cbfunc, void *cbdata);
void wr_pmixname_start(struct wr_pmixsrv *s, struct ask *a);

/* PMIx's direct_modex (on its thread); on the loop, watch for local
 * @rank's first commit (a job of several hosts), and put or get a rank's
 * data through the registry, which answers and frees @a. */
pmix_status_t wr_pmixdmx_request(const pmix_proc_t *proc, const pmix_info_t info[],
				 size_t ninfo, pmix_modex_cbfunc_t cbfunc, void *cbdata);
void wr_pmixdmx_watch(struct wr_pmixsrv *s, int rank);
void wr_pmixdmx_start(struct wr_pmixsrv *s, struct ask *a);

#endif
